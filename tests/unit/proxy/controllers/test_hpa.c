/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the HorizontalPodAutoscaler controller's pure pieces: kube's
 * replica calculator (utilization and average value, tolerance, unready and
 * missing pods, the cpu readiness rules), and the normalization of a
 * proposal (min/max, the legacy scale-up limit and stabilization, behavior
 * windows, rate policies and selectPolicy). */
#include <check.h>
#include <jansson.h>
#include <string.h>

#include "proxy/controllers/controllers.h"
#include "lib/util.h"

#define READY(req, use)                     \
	{                                   \
		HPA_POD_READY, (req), (use) \
	}
#define UNREADY(req)                      \
	{                                 \
		HPA_POD_UNREADY, (req), 0 \
	}
#define MISSING(req)                      \
	{                                 \
		HPA_POD_MISSING, (req), 0 \
	}
#define IGNORED(req)                      \
	{                                 \
		HPA_POD_IGNORED, (req), 0 \
	}
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct ctrl_hpa_result util(const struct ctrl_hpa_pod *p, size_t n, int cur, int target)
{
	struct ctrl_hpa_result r = {0};
	char err[256] = "";
	ck_assert_int_eq(ctrl_hpa_utilization_replicas(p, n, cur, target, &r, err, sizeof(err)), 0);
	return r;
}

START_TEST(utilization_scale_up)
{
	/* 3 pods at 90% of 1 cpu, target 30%: ratio 3, 9 pods */
	struct ctrl_hpa_pod p[] = {READY(1000, 900), READY(1000, 900), READY(1000, 900)};
	struct ctrl_hpa_result r = util(p, N(p), 3, 30);
	ck_assert_int_eq(r.replicas, 9);
	ck_assert_int_eq(r.utilization, 90);
	ck_assert_int_eq(r.raw, 900);
}
END_TEST

START_TEST(utilization_tolerance)
{
	/* 54% of 50%: ratio 1.08, within the 0.1 tolerance (55% is not: 1.1
	 * is a hair above in binary floating point, in Go as here) */
	struct ctrl_hpa_pod p[] = {READY(100, 54), READY(100, 54)};
	ck_assert_int_eq(util(p, N(p), 2, 50).replicas, 2);
	/* 56%: ratio 1.12, outside: ceil(1.12 * 2) = 3 */
	struct ctrl_hpa_pod q[] = {READY(100, 56), READY(100, 56)};
	ck_assert_int_eq(util(q, N(q), 2, 50).replicas, 3);
}
END_TEST

START_TEST(utilization_scale_down)
{
	/* 4 pods at 10% of 50%: ceil(0.2 * 4) = 1 */
	struct ctrl_hpa_pod p[] = {READY(100, 10), READY(100, 10), READY(100, 10), READY(100, 10)};
	ck_assert_int_eq(util(p, N(p), 4, 50).replicas, 1);
}
END_TEST

START_TEST(utilization_unready_on_scale_up)
{
	/* 1 ready at 100% of 50%, 1 unready: the unready pod counts as 0, so
	 * the new ratio (50/50) is 1 and nothing changes */
	struct ctrl_hpa_pod p[] = {READY(100, 100), UNREADY(100)};
	ck_assert_int_eq(util(p, N(p), 2, 50).replicas, 2);
	/* 2 ready at 200%, 1 unready: (200+200+0)/300 = 133% of 50: ceil(2.66*3) = 8 */
	struct ctrl_hpa_pod q[] = {READY(100, 200), READY(100, 200), UNREADY(100)};
	struct ctrl_hpa_result r = util(q, N(q), 3, 50);
	ck_assert_int_eq(r.replicas, 8);
	ck_assert_int_eq(r.utilization, 200); /* the status shows the ready pods' */
}
END_TEST

START_TEST(utilization_missing_pods)
{
	/* scale down: a missing pod counts as using its whole request, which
	 * turns the direction: stay */
	struct ctrl_hpa_pod p[] = {READY(100, 40), MISSING(100)};
	ck_assert_int_eq(util(p, N(p), 2, 50).replicas, 2);
	/* scale down with 3 low pods and 1 missing: (10*3 + 100)/400 = 32% of
	 * 50: ceil(0.64 * 4) = 3 */
	struct ctrl_hpa_pod q[] = {READY(100, 10), READY(100, 10), READY(100, 10), MISSING(100)};
	ck_assert_int_eq(util(q, N(q), 4, 50).replicas, 3);
	/* scale up: a missing pod counts as 0: (200 + 0)/200 = 100% of 50 = 4 */
	struct ctrl_hpa_pod u[] = {READY(100, 200), MISSING(100)};
	ck_assert_int_eq(util(u, N(u), 2, 50).replicas, 4);
	/* ignored pods (deleted, finished) are not counted at all */
	struct ctrl_hpa_pod i[] = {READY(100, 100), IGNORED(100), IGNORED(100)};
	ck_assert_int_eq(util(i, N(i), 3, 50).replicas, 2);
}
END_TEST

START_TEST(utilization_errors)
{
	struct ctrl_hpa_result r;
	char err[256];
	struct ctrl_hpa_pod p[] = {UNREADY(100), MISSING(100)};
	ck_assert_int_lt(ctrl_hpa_utilization_replicas(p, N(p), 2, 50, &r, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "did not receive metrics for targeted pods (pods might be unready)");
	ck_assert_int_lt(ctrl_hpa_utilization_replicas(NULL, 0, 2, 50, &r, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "no pods returned by selector while calculating replica count");
	struct ctrl_hpa_pod z[] = {READY(0, 10)};
	ck_assert_int_lt(ctrl_hpa_utilization_replicas(z, N(z), 1, 50, &r, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "no metrics returned matched known pods");
}
END_TEST

START_TEST(average_value)
{
	struct ctrl_hpa_result r = {0};
	char err[256];
	/* 64Mi each against 40Mi: ratio 1.6, ceil(1.6 * 2) = 4 */
	int64_t mi = 1048576000;
	struct ctrl_hpa_pod p[] = {READY(0, 64 * mi), READY(0, 64 * mi)};
	ck_assert_int_eq(ctrl_hpa_value_replicas(p, N(p), 2, 40 * mi, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.replicas, 4);
	ck_assert_int_eq(r.raw, 64 * mi);
	/* a missing pod on a scale down uses the target */
	struct ctrl_hpa_pod q[] = {READY(0, 10), READY(0, 10), MISSING(0)};
	ck_assert_int_eq(ctrl_hpa_value_replicas(q, N(q), 3, 100, &r, err, sizeof(err)), 0);
	ck_assert_int_eq(r.replicas, 2); /* (10+10+100)/3 = 40 of 100: ceil(0.4*3) */
}
END_TEST

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	ck_assert_msg(v != NULL, "bad JSON: %s", e.text);
	return v;
}

START_TEST(group_pods)
{
	time_t now = 1700000000;
	char buf[1024], start[40], moved[40];
	kb_time_rfc3339(now - 60, start, sizeof(start));
	kb_time_rfc3339(now - 50, moved, sizeof(moved));
	snprintf(buf, sizeof(buf),
		 "{\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\",\"conditions\":"
		 "[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"%s\"}]}}",
		 start, moved);
	json_t *pod = J(buf);
	/* within the cpu initialization period: measured a whole window after
	 * becoming ready, or not counted */
	ck_assert_int_eq(ctrl_hpa_group_pod(pod, true, now - 40, 15, true, now), HPA_POD_UNREADY);
	ck_assert_int_eq(ctrl_hpa_group_pod(pod, true, now - 30, 15, true, now), HPA_POD_READY);
	/* memory has no such rule */
	ck_assert_int_eq(ctrl_hpa_group_pod(pod, true, now - 40, 15, false, now), HPA_POD_READY);
	ck_assert_int_eq(ctrl_hpa_group_pod(pod, false, 0, 0, true, now), HPA_POD_MISSING);
	json_decref(pod);
	json_t *pending = J("{\"status\":{\"phase\":\"Pending\"}}");
	ck_assert_int_eq(ctrl_hpa_group_pod(pending, true, now, 15, true, now), HPA_POD_UNREADY);
	json_decref(pending);
	json_t *gone = J("{\"metadata\":{\"deletionTimestamp\":\"2024-01-01T00:00:00Z\"},"
			 "\"status\":{\"phase\":\"Running\"}}");
	ck_assert_int_eq(ctrl_hpa_group_pod(gone, true, now, 15, true, now), HPA_POD_IGNORED);
	json_decref(gone);
	json_t *failed = J("{\"status\":{\"phase\":\"Failed\"}}");
	ck_assert_int_eq(ctrl_hpa_group_pod(failed, true, now, 15, true, now), HPA_POD_IGNORED);
	json_decref(failed);
	/* past the initialization period: unready only if never ready */
	kb_time_rfc3339(now - 1000, start, sizeof(start));
	kb_time_rfc3339(now - 990, moved, sizeof(moved));
	snprintf(buf, sizeof(buf),
		 "{\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\",\"conditions\":"
		 "[{\"type\":\"Ready\",\"status\":\"False\",\"lastTransitionTime\":\"%s\"}]}}",
		 start, moved);
	pod = J(buf);
	ck_assert_int_eq(ctrl_hpa_group_pod(pod, true, now, 15, true, now), HPA_POD_UNREADY);
	json_decref(pod);
	kb_time_rfc3339(now - 900, moved, sizeof(moved)); /* was ready, then went unready */
	snprintf(buf, sizeof(buf),
		 "{\"status\":{\"phase\":\"Running\",\"startTime\":\"%s\",\"conditions\":"
		 "[{\"type\":\"Ready\",\"status\":\"False\",\"lastTransitionTime\":\"%s\"}]}}",
		 start, moved);
	pod = J(buf);
	ck_assert_int_eq(ctrl_hpa_group_pod(pod, true, now, 15, true, now), HPA_POD_READY);
	json_decref(pod);
}
END_TEST

/* ---- normalization ---------------------------------------------------------------- */

static struct ctrl_hpa_input legacy(int cur, int desired, int min, int max)
{
	struct ctrl_hpa_input in = {.current = cur, .desired = desired, .min = min, .max = max};
	return in;
}

START_TEST(legacy_limits)
{
	struct ctrl_hpa_history h = {0};
	struct ctrl_hpa_verdict v;
	struct ctrl_hpa_input in = legacy(1, 10, 1, 20);
	ctrl_hpa_normalize(&h, &in, 1000, &v);
	ck_assert_int_eq(v.replicas, 4); /* max(2 * 1, 4) */
	ck_assert(v.limited);
	ck_assert_str_eq(v.limit_reason, "ScaleUpLimit");
	in = legacy(4, 10, 1, 5);
	ctrl_hpa_normalize(&h, &in, 2000, &v);
	ck_assert_int_eq(v.replicas, 5);
	ck_assert_str_eq(v.limit_reason, "TooManyReplicas");
	ck_assert_str_eq(v.limit_message,
			 "the desired replica count is more than the maximum replica count");
	in = legacy(4, 4, 1, 5);
	ctrl_hpa_normalize(&h, &in, 3000, &v);
	ck_assert_int_eq(v.replicas, 5); /* stabilized: the recent 10 */
	ck_assert_str_eq(v.able_reason, "ScaleDownStabilized");
	ctrl_hpa_history_free(&h);
}
END_TEST

START_TEST(legacy_stabilization)
{
	struct ctrl_hpa_history h = {0};
	struct ctrl_hpa_verdict v;
	ctrl_hpa_record_initial(&h, 5, 0);
	struct ctrl_hpa_input in = legacy(5, 2, 2, 10);
	ctrl_hpa_normalize(&h, &in, 1000, &v);
	ck_assert_int_eq(v.replicas, 5); /* the initial 5 is within 300 s */
	ck_assert_str_eq(v.able_reason, "ScaleDownStabilized");
	ck_assert(!v.limited);
	ck_assert_str_eq(v.limit_reason, "DesiredWithinRange");
	/* 300.5 s later the 5 is out of the window; the 2 of t=1 s is not */
	in = legacy(5, 1, 2, 10);
	ctrl_hpa_normalize(&h, &in, 300500, &v);
	ck_assert_int_eq(v.replicas, 2);
	ck_assert_str_eq(v.able_reason, "ScaleDownStabilized");
	ck_assert(!v.limited);
	in = legacy(2, 1, 2, 10);
	ctrl_hpa_normalize(&h, &in, 700000, &v);
	ck_assert_int_eq(v.replicas, 2);
	ck_assert_str_eq(v.able_reason, "ReadyForNewScale");
	ck_assert(v.limited);
	ck_assert_str_eq(v.limit_reason, "TooFewReplicas");
	ctrl_hpa_history_free(&h);
}
END_TEST

static struct ctrl_hpa_input with_behavior(const char *behavior, int cur, int desired, int min,
					   int max)
{
	struct ctrl_hpa_input in = legacy(cur, desired, min, max);
	json_t *b = J(behavior);
	in.behavior = true;
	ctrl_hpa_rules_parse(json_object_get(b, "scaleUp"), true, &in.up);
	ctrl_hpa_rules_parse(json_object_get(b, "scaleDown"), false, &in.down);
	json_decref(b);
	return in;
}

#define DEFAULT_UP                                                                               \
	"\"scaleUp\":{\"stabilizationWindowSeconds\":0,\"selectPolicy\":\"Max\",\"policies\":"   \
	"[{\"type\":\"Pods\",\"value\":4,\"periodSeconds\":15},{\"type\":\"Percent\",\"value\":" \
	"100,\"periodSeconds\":15}]}"

START_TEST(behavior_default_rates)
{
	struct ctrl_hpa_history h = {0};
	struct ctrl_hpa_verdict v;
	const char *b = "{" DEFAULT_UP ",\"scaleDown\":{\"selectPolicy\":\"Max\",\"policies\":"
			"[{\"type\":\"Percent\",\"value\":100,\"periodSeconds\":15}]}}";
	struct ctrl_hpa_input in = with_behavior(b, 2, 20, 1, 30);
	ck_assert_int_eq(in.down.window, 300);
	ctrl_hpa_normalize(&h, &in, 0, &v);
	ck_assert_int_eq(v.replicas, 6); /* max(2 + 4, 2 * 2) */
	ck_assert_str_eq(v.limit_reason, "ScaleUpLimit");
	ctrl_hpa_record_scale(&h, &in, 2, 6, 0);
	/* 5 s later, same period: the period started at 2 */
	in = with_behavior(b, 6, 20, 1, 30);
	ctrl_hpa_normalize(&h, &in, 5000, &v);
	ck_assert_int_eq(v.replicas, 6);
	ck_assert_str_eq(v.limit_reason, "ScaleUpLimit");
	/* 16 s later: a new period from 6: max(10, 12) */
	ctrl_hpa_normalize(&h, &in, 16000, &v);
	ck_assert_int_eq(v.replicas, 12);
	ctrl_hpa_history_free(&h);
}
END_TEST

START_TEST(behavior_select_policy)
{
	const char *b =
	    "{\"scaleUp\":{\"selectPolicy\":\"Min\",\"policies\":"
	    "[{\"type\":\"Pods\",\"value\":4,\"periodSeconds\":60},{\"type\":\"Percent\","
	    "\"value\":100,\"periodSeconds\":60}]},"
	    "\"scaleDown\":{\"stabilizationWindowSeconds\":0,"
	    "\"selectPolicy\":\"Disabled\"}}";
	struct ctrl_hpa_input in = with_behavior(b, 10, 50, 1, 100);
	struct ctrl_hpa_history h = {0};
	struct ctrl_hpa_verdict v;
	ctrl_hpa_normalize(&h, &in, 0, &v);
	ck_assert_int_eq(v.replicas, 14); /* min(10 + 4, 10 * 2) */
	in = with_behavior(b, 10, 1, 1, 100);
	ctrl_hpa_normalize(&h, &in, 1000, &v);
	ck_assert_int_eq(v.replicas, 10); /* scale down disabled */
	ck_assert_str_eq(v.limit_reason, "ScaleDownLimit");
	ctrl_hpa_history_free(&h);
	/* percent scale-down limits */
	struct ctrl_hpa_rules down = {0};
	json_t *r = J("{\"policies\":[{\"type\":\"Percent\",\"value\":50,\"periodSeconds\":60},"
		      "{\"type\":\"Pods\",\"value\":2,\"periodSeconds\":60}]}");
	ctrl_hpa_rules_parse(r, false, &down);
	json_decref(r);
	struct ctrl_hpa_history none = {0};
	/* Max: the most change */
	ck_assert_int_eq(ctrl_hpa_scale_down_limit(10, &none, &down, 0), 5);
	struct ctrl_hpa_event ev[] = {{3, 0}};
	/* 3 removed 10 s ago: the period started at 13: min(6, 11) */
	struct ctrl_hpa_history removed = {.down = ev, .ndown = 1};
	ck_assert_int_eq(ctrl_hpa_scale_down_limit(10, &removed, &down, 10000), 6);
	/* 2 added 10 s ago as well: the period started at 11: min(5, 9) */
	struct ctrl_hpa_event added[] = {{2, 0}};
	struct ctrl_hpa_history both = {.up = added, .down = ev, .nup = 1, .ndown = 1};
	ck_assert_int_eq(ctrl_hpa_scale_down_limit(10, &both, &down, 10000), 5);
	/* and up, Pods 4 a minute: from 11 */
	struct ctrl_hpa_rules up = {0};
	r = J("{\"policies\":[{\"type\":\"Pods\",\"value\":4,\"periodSeconds\":60}]}");
	ctrl_hpa_rules_parse(r, true, &up);
	json_decref(r);
	ck_assert_int_eq(ctrl_hpa_scale_up_limit(10, &both, &up, 10000), 15);
}
END_TEST

START_TEST(behavior_windows)
{
	const char *b = "{\"scaleUp\":{\"stabilizationWindowSeconds\":60,\"policies\":"
			"[{\"type\":\"Pods\",\"value\":100,\"periodSeconds\":15}]},"
			"\"scaleDown\":{\"stabilizationWindowSeconds\":30,\"policies\":"
			"[{\"type\":\"Pods\",\"value\":100,\"periodSeconds\":15}]}}";
	struct ctrl_hpa_history h = {0};
	struct ctrl_hpa_verdict v;
	ctrl_hpa_record_initial(&h, 3, 0);
	/* going up: the lowest recommendation of the last 60 s (3) */
	struct ctrl_hpa_input in = with_behavior(b, 3, 8, 1, 10);
	ctrl_hpa_normalize(&h, &in, 10000, &v);
	ck_assert_int_eq(v.replicas, 3);
	ck_assert_str_eq(v.able_reason, "ScaleUpStabilized");
	ck_assert_str_eq(v.able_message, "recent recommendations were lower than current one, "
					 "applying the lowest recent recommendation");
	/* 61 s on, the 3 is old: 8 (the lowest of the window) */
	ctrl_hpa_normalize(&h, &in, 71000, &v);
	ck_assert_int_eq(v.replicas, 8);
	ck_assert_str_eq(v.able_reason, "ReadyForNewScale");
	/* going down from 8: the highest of the last 30 s (8) */
	in = with_behavior(b, 8, 2, 1, 10);
	ctrl_hpa_normalize(&h, &in, 80000, &v);
	ck_assert_int_eq(v.replicas, 8);
	ck_assert_str_eq(v.able_reason, "ScaleDownStabilized");
	ctrl_hpa_normalize(&h, &in, 115000, &v);
	ck_assert_int_eq(v.replicas, 2);
	ctrl_hpa_history_free(&h);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hpa");
	TCase *tc = tcase_create("calc");
	tcase_add_test(tc, utilization_scale_up);
	tcase_add_test(tc, utilization_tolerance);
	tcase_add_test(tc, utilization_scale_down);
	tcase_add_test(tc, utilization_unready_on_scale_up);
	tcase_add_test(tc, utilization_missing_pods);
	tcase_add_test(tc, utilization_errors);
	tcase_add_test(tc, average_value);
	tcase_add_test(tc, group_pods);
	suite_add_tcase(s, tc);
	tc = tcase_create("normalize");
	tcase_add_test(tc, legacy_limits);
	tcase_add_test(tc, legacy_stabilization);
	tcase_add_test(tc, behavior_default_rates);
	tcase_add_test(tc, behavior_select_policy);
	tcase_add_test(tc, behavior_windows);
	suite_add_tcase(s, tc);
	return s;
}

#include "tests/unit/check_main.h"
