/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for the pure parts of proxy/aggregation/aggregator.c and proxy/aggregation/apiservice.c:
 * a backend's APIResourceList turned into aggregated discovery resources
 * (response kinds, scope, verbs, short names, categories, subresources with
 * their own kinds and groups), the request headers a proxied request leaves
 * behind, and kube-apiserver's priorities of the local APIServices.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/aggregation/aggregation.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *json)
{
	json_error_t e;
	json_t *j = json_loads(json, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s (%s)", e.text, json);
	return j;
}

START_TEST(discovery_resources)
{
	json_t *list =
	    J("[{\"name\":\"flunders\",\"singularName\":\"flunder\",\"namespaced\":true,"
	      "\"kind\":\"Flunder\",\"verbs\":[\"get\",\"list\"],\"shortNames\":[\"fl\"],"
	      "\"categories\":[\"all\"]},"
	      "{\"name\":\"flunders/status\",\"namespaced\":true,\"kind\":\"Flunder\","
	      "\"verbs\":[\"get\"]},"
	      "{\"name\":\"flunders/scale\",\"namespaced\":true,\"group\":\"autoscaling\","
	      "\"version\":\"v1\",\"kind\":\"Scale\",\"verbs\":[\"get\",\"update\"]},"
	      "{\"name\":\"fischers\",\"singularName\":\"fischer\",\"namespaced\":false,"
	      "\"kind\":\"Fischer\"}]");
	json_t *got = aggregator_agg_resources("wardle.example.com", "v1alpha1", list);
	json_t *want =
	    J("[{\"resource\":\"flunders\",\"responseKind\":{\"group\":\"wardle.example.com\","
	      "\"version\":\"v1alpha1\",\"kind\":\"Flunder\"},\"scope\":\"Namespaced\","
	      "\"singularResource\":\"flunder\",\"verbs\":[\"get\",\"list\"],"
	      "\"shortNames\":[\"fl\"],\"categories\":[\"all\"],\"subresources\":["
	      "{\"subresource\":\"status\",\"responseKind\":{\"group\":\"wardle.example.com\","
	      "\"version\":\"v1alpha1\",\"kind\":\"Flunder\"},\"verbs\":[\"get\"]},"
	      "{\"subresource\":\"scale\",\"responseKind\":{\"group\":\"autoscaling\","
	      "\"version\":\"v1\",\"kind\":\"Scale\"},\"verbs\":[\"get\",\"update\"]}]},"
	      "{\"resource\":\"fischers\",\"responseKind\":{\"group\":\"wardle.example.com\","
	      "\"version\":\"v1alpha1\",\"kind\":\"Fischer\"},\"scope\":\"Cluster\","
	      "\"singularResource\":\"fischer\",\"verbs\":[]}]");
	char *g = json_dumps(got, JSON_SORT_KEYS), *w = json_dumps(want, JSON_SORT_KEYS);
	ck_assert_msg(json_equal(got, want), "\nwant %s\ngot  %s", w, g);
	free(g);
	free(w);
	json_decref(got);
	json_decref(want);
	json_decref(list);
	got = aggregator_agg_resources("g", "v", NULL);
	ck_assert_uint_eq(json_array_size(got), 0);
	json_decref(got);
}
END_TEST

START_TEST(headers_left_behind)
{
	static const char *const dropped[] = {"authorization",     "impersonate-user",
					      "impersonate-group", "impersonate-extra-scopes",
					      "x-remote-user",     "x-remote-group",
					      "x-remote-extra-a",  "connection",
					      "upgrade",           "host",
					      "content-length",    "transfer-encoding"};
	static const char *const kept[] = {"accept", "user-agent", "kubectl-command", "audit-id",
					   "accept-encoding"};
	for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
		ck_assert_msg(aggregator_header_dropped(dropped[i]), "%s kept", dropped[i]);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		ck_assert_msg(!aggregator_header_dropped(kept[i]), "%s dropped", kept[i]);
}
END_TEST

START_TEST(local_priorities)
{
	static const struct {
		const char *group, *version;
		bool have;
		int gp, vp;
	} t[] = {
	    {"", "v1", true, 18000, 1},
	    {"apps", "v1", true, 17800, 15},
	    {"autoscaling", "v2", true, 17500, 30},
	    {"autoscaling", "v1", true, 17500, 15},
	    {"authentication.k8s.io", "v1beta1", true, 17700, 9},
	    {"admissionregistration.k8s.io", "v1", true, 16700, 15},
	    {"scheduling.run.ai", "v2", false, 0, 0},
	    {"metrics.k8s.io", "v1beta1", false, 0, 0},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int gp = -1, vp = -1;
		ck_assert_int_eq(apiservice_local_priority(t[i].group, t[i].version, &gp, &vp),
				 t[i].have);
		ck_assert_int_eq(gp, t[i].gp);
		ck_assert_int_eq(vp, t[i].vp);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("aggregator");
	TCase *t = tcase_create("core");
	tcase_add_test(t, discovery_resources);
	tcase_add_test(t, headers_left_behind);
	tcase_add_test(t, local_priorities);
	suite_add_tcase(s, t);
	return s;
}
