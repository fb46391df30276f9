/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for controllers/disruption: the pure arithmetic of kube's
 * disruption controller (expected and desired pods for minAvailable and
 * maxUnavailable, integers and percentages), healthy pods, the
 * disruptedPods map with its two-minute timeout, disruptionsAllowed and
 * the status with its DisruptionAllowed condition, failSafe, and when an
 * eviction's DisruptionTarget condition goes stale.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "proxy/controllers/controllers.h"
#include "lib/util.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

#define NOW 1800000000

static json_t *pod(const char *name, bool ready, bool deleting)
{
	json_t *p = json_pack("{s:{s:s},s:{s:s,s:[{s:s,s:s}]}}", "metadata", "name", name, "status",
			      "phase", "Running", "conditions", "type", "Ready", "status",
			      ready ? "True" : "False");
	if (deleting)
		json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp",
				    json_string("2027-01-15T08:00:00Z"));
	return p;
}

static json_t *at(time_t t)
{
	char b[40];
	kb_time_rfc3339(t, b, sizeof(b));
	return json_string(b);
}

START_TEST(needs_scale)
{
	json_t *s = json_pack("{s:i}", "minAvailable", 2);
	ck_assert(!ctrl_pdb_needs_scale(s));
	json_decref(s);
	s = json_pack("{s:s}", "minAvailable", "50%");
	ck_assert(ctrl_pdb_needs_scale(s));
	json_decref(s);
	s = json_pack("{s:i}", "maxUnavailable", 0);
	ck_assert(ctrl_pdb_needs_scale(s));
	json_decref(s);
	s = json_pack("{s:n}", "maxUnavailable");
	ck_assert(!ctrl_pdb_needs_scale(s));
	json_decref(s);
}
END_TEST

START_TEST(expected)
{
	char err[256] = "";
	int e = -1, d = -1;
	/* minAvailable int: the matching pods, whatever the scale */
	json_t *s = json_pack("{s:i}", "minAvailable", 2);
	ck_assert_int_eq(ctrl_pdb_expected(s, 3, 10, &e, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(e, 3);
	ck_assert_int_eq(d, 2);
	json_decref(s);
	/* minAvailable percentage: of the scale, rounded up */
	s = json_pack("{s:s}", "minAvailable", "75%");
	ck_assert_int_eq(ctrl_pdb_expected(s, 3, 5, &e, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(e, 5);
	ck_assert_int_eq(d, 4); /* 3.75 -> 4 */
	json_decref(s);
	/* maxUnavailable percentage: desired = scale - ceil(pct) */
	s = json_pack("{s:s}", "maxUnavailable", "50%");
	ck_assert_int_eq(ctrl_pdb_expected(s, 3, 3, &e, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(e, 3);
	ck_assert_int_eq(d, 1);
	json_decref(s);
	/* maxUnavailable above the scale: desired never negative */
	s = json_pack("{s:i}", "maxUnavailable", 5);
	ck_assert_int_eq(ctrl_pdb_expected(s, 2, 2, &e, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(e, 2);
	ck_assert_int_eq(d, 0);
	json_decref(s);
	/* maxUnavailable wins over minAvailable */
	s = json_pack("{s:i,s:i}", "maxUnavailable", 1, "minAvailable", 9);
	ck_assert_int_eq(ctrl_pdb_expected(s, 4, 4, &e, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(d, 3);
	json_decref(s);
	/* neither: nothing expected */
	s = json_object();
	ck_assert_int_eq(ctrl_pdb_expected(s, 4, 4, &e, &d, err, sizeof(err)), 0);
	ck_assert_int_eq(e, 0);
	ck_assert_int_eq(d, 0);
	json_decref(s);
	/* a string that is not a percentage: kube's error */
	s = json_pack("{s:s}", "maxUnavailable", "3");
	ck_assert_int_eq(ctrl_pdb_expected(s, 4, 4, &e, &d, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "invalid type: string is not a percentage");
	json_decref(s);
}
END_TEST

START_TEST(healthy)
{
	json_t *pods = json_pack("[o,o,o,o]", pod("a", true, false), pod("b", false, false),
				 pod("c", true, true), pod("d", true, false));
	ck_assert_int_eq(ctrl_pdb_healthy(pods, NULL, NOW), 2);
	/* d was just evicted: not counted for two minutes */
	json_t *dp = json_pack("{s:o}", "d", at(NOW - 30));
	ck_assert_int_eq(ctrl_pdb_healthy(pods, dp, NOW), 1);
	json_decref(dp);
	dp = json_pack("{s:o}", "d", at(NOW - 121));
	ck_assert_int_eq(ctrl_pdb_healthy(pods, dp, NOW), 2);
	json_decref(dp);
	json_decref(pods);
}
END_TEST

START_TEST(disrupted)
{
	json_t *pods = json_pack("[o,o,o]", pod("a", true, false), pod("b", true, true),
				 pod("c", true, false));
	time_t recheck = 1;
	json_t *none = ctrl_pdb_disrupted(pods, NULL, NOW, &recheck);
	ck_assert_int_eq(json_object_size(none), 0);
	ck_assert_int_eq(recheck, 0);
	json_decref(none);
	/* a: kept (30 s old); b: being deleted, dropped; c: older than 2 min,
	 * dropped; gone: no such pod, dropped */
	json_t *old = json_pack("{s:o,s:o,s:o,s:o}", "a", at(NOW - 30), "b", at(NOW - 10), "c",
				at(NOW - 200), "gone", at(NOW - 5));
	json_t *kept = ctrl_pdb_disrupted(pods, old, NOW, &recheck);
	ck_assert_int_eq(json_object_size(kept), 1);
	ck_assert_ptr_nonnull(json_object_get(kept, "a"));
	ck_assert_int_eq(recheck, NOW + 90);
	json_decref(kept);
	json_decref(old);
	json_decref(pods);
}
END_TEST

START_TEST(allowed)
{
	ck_assert_int_eq(ctrl_pdb_allowed(3, 2, 3), 1);
	ck_assert_int_eq(ctrl_pdb_allowed(2, 2, 3), 0);
	ck_assert_int_eq(ctrl_pdb_allowed(1, 2, 3), 0);
	ck_assert_int_eq(ctrl_pdb_allowed(3, 0, 0), 0); /* nothing expected yet */
}
END_TEST

START_TEST(status)
{
	json_t *dp = json_pack("{s:s}", "a", "2027-01-15T08:00:00Z");
	json_t *st = ctrl_pdb_status(NULL, 3, 3, 1, 3, dp, NOW);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "disruptionsAllowed")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "currentHealthy")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "desiredHealthy")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "expectedPods")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "observedGeneration")), 3);
	ck_assert(json_equal(json_object_get(st, "disruptedPods"), dp));
	json_t *c = json_array_get(json_object_get(st, "conditions"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c, "type")), "DisruptionAllowed");
	ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "True");
	ck_assert_str_eq(json_string_value(json_object_get(c, "reason")), "SufficientPods");
	ck_assert_str_eq(json_string_value(json_object_get(c, "message")), "");
	ck_assert_int_eq(json_integer_value(json_object_get(c, "observedGeneration")), 3);
	char t0[40];
	snprintf(t0, sizeof(t0), "%s", json_string_value(json_object_get(c, "lastTransitionTime")));
	/* same status later: the transition time stays; no disruptedPods key */
	json_t *st2 = ctrl_pdb_status(st, 3, 3, 1, 3, NULL, NOW + 60);
	c = json_array_get(json_object_get(st2, "conditions"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")), t0);
	ck_assert_ptr_null(json_object_get(st2, "disruptedPods"));
	/* a flip to InsufficientPods moves it */
	json_t *st3 = ctrl_pdb_status(st2, 4, 1, 1, 3, NULL, NOW + 120);
	ck_assert_int_eq(json_array_size(json_object_get(st3, "conditions")), 1);
	c = json_array_get(json_object_get(st3, "conditions"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "False");
	ck_assert_str_eq(json_string_value(json_object_get(c, "reason")), "InsufficientPods");
	ck_assert_str_ne(json_string_value(json_object_get(c, "lastTransitionTime")), t0);
	ck_assert_int_eq(json_integer_value(json_object_get(c, "observedGeneration")), 4);
	/* failSafe: 0 allowed, SyncFailed with the error, figures kept */
	json_t *fs = ctrl_pdb_fail_status(st, "found no controllers for pod \"x\"", NOW);
	ck_assert_int_eq(json_integer_value(json_object_get(fs, "disruptionsAllowed")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(fs, "currentHealthy")), 3);
	c = json_array_get(json_object_get(fs, "conditions"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c, "reason")), "SyncFailed");
	ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "False");
	ck_assert_str_eq(json_string_value(json_object_get(c, "message")),
			 "found no controllers for pod \"x\"");
	json_t *fs0 = ctrl_pdb_fail_status(NULL, "boom", NOW);
	ck_assert_int_eq(json_integer_value(json_object_get(fs0, "expectedPods")), 0);
	json_decref(fs0);
	json_decref(fs);
	json_decref(st3);
	json_decref(st2);
	json_decref(st);
	json_decref(dp);
}
END_TEST

START_TEST(stale)
{
	json_t *p = pod("a", true, false);
	ck_assert(ctrl_pdb_stale_in(p, NOW) < 0); /* no condition */
	json_t *conds = json_object_get(json_object_get(p, "status"), "conditions");
	json_t *c =
	    json_pack("{s:s,s:s,s:s,s:o}", "type", "DisruptionTarget", "status", "True", "reason",
		      "EvictionByEvictionAPI", "lastTransitionTime", at(NOW - 30));
	json_array_append_new(conds, c);
	ck_assert(ctrl_pdb_stale_in(p, NOW) == 90);
	ck_assert(ctrl_pdb_stale_in(p, NOW + 200) == 0);
	json_object_set_new(c, "reason", json_string("TerminationByKubelet"));
	ck_assert(ctrl_pdb_stale_in(p, NOW + 200) < 0); /* the kubelet's never is */
	json_object_set_new(c, "reason", json_string("EvictionByEvictionAPI"));
	json_object_set_new(json_object_get(p, "status"), "phase", json_string("Failed"));
	ck_assert(ctrl_pdb_stale_in(p, NOW + 200) < 0); /* terminal */
	json_decref(p);
	p = pod("b", true, true);
	conds = json_object_get(json_object_get(p, "status"), "conditions");
	json_array_append_new(conds,
			      json_pack("{s:s,s:s}", "type", "DisruptionTarget", "status", "True"));
	ck_assert(ctrl_pdb_stale_in(p, NOW) < 0); /* being deleted */
	json_decref(p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("controllers/disruption");
	TCase *tc = tcase_create("arithmetic");
	tcase_add_test(tc, needs_scale);
	tcase_add_test(tc, expected);
	tcase_add_test(tc, healthy);
	tcase_add_test(tc, disrupted);
	tcase_add_test(tc, allowed);
	tcase_add_test(tc, status);
	tcase_add_test(tc, stale);
	suite_add_tcase(s, tc);
	return s;
}
