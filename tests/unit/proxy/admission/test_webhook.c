/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/webhook: the rules of an admission webhook against
 * requests, as kube's rule matcher reads them (operations, groups,
 * versions, resources with subresources and wildcards, scope).
 */
#include <check.h>
#include <stdlib.h>

#include "proxy/admission/webhook.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *rule(const char *json)
{
	json_error_t e;
	json_t *j = json_loads(json, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s", e.text);
	return j;
}

START_TEST(rule_table)
{
	static const struct {
		const char *rule, *op, *group, *version, *plural, *sub, *ns;
		bool is_ns, want;
	} t[] = {
	    /* operations */
	    {"{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
	     "\"resources\":[\"pods\"]}",
	     "CREATE", "", "v1", "pods", NULL, "a", false, true},
	    {"{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
	     "\"resources\":[\"pods\"]}",
	     "UPDATE", "", "v1", "pods", NULL, "a", false, false},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*\"]}",
	     "DELETE", "apps", "v1", "deployments", NULL, "a", false, true},
	    /* groups and versions */
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"],"
	     "\"resources\":[\"pods\"]}",
	     "CREATE", "", "v1", "pods", NULL, "a", false, false},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v2\"],"
	     "\"resources\":[\"pods\"]}",
	     "CREATE", "", "v1", "pods", NULL, "a", false, false},
	    /* resources: a star alone is the main resources only; star-slash-star everything */
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*\"]}",
	     "UPDATE", "", "v1", "pods", "status", "a", false, false},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*/*\"]}",
	     "UPDATE", "", "v1", "pods", "status", "a", false, true},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"pods\"]}",
	     "UPDATE", "", "v1", "pods", "status", "a", false, false},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"pods/status\"]}",
	     "UPDATE", "", "v1", "pods", "status", "a", false, true},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"pods/status\"]}",
	     "UPDATE", "", "v1", "pods", NULL, "a", false, false},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"pods/*\"]}",
	     "UPDATE", "", "v1", "pods", "ephemeralcontainers", "a", false, true},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"pods/*\"]}",
	     "UPDATE", "", "v1", "pods", NULL, "a", false, false},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*/status\"]}",
	     "UPDATE", "apps", "v1", "deployments", "status", "a", false, true},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*/status\"]}",
	     "UPDATE", "apps", "v1", "deployments", "scale", "a", false, false},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"pod\"]}",
	     "CREATE", "", "v1", "pods", NULL, "a", false, false},
	    /* scope */
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*\"],\"scope\":\"Namespaced\"}",
	     "CREATE", "", "v1", "pods", NULL, "a", false, true},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*\"],\"scope\":\"Namespaced\"}",
	     "CREATE", "", "v1", "nodes", NULL, NULL, false, false},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*\"],\"scope\":\"Cluster\"}",
	     "CREATE", "", "v1", "nodes", NULL, NULL, false, true},
	    /* a Namespace is cluster-scoped though its request names it */
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*\"],\"scope\":\"Cluster\"}",
	     "DELETE", "", "v1", "namespaces", NULL, "team", true, true},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*\"],\"scope\":\"Namespaced\"}",
	     "DELETE", "", "v1", "namespaces", NULL, "team", true, false},
	    {"{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*\"],\"scope\":\"*\"}",
	     "DELETE", "", "v1", "namespaces", NULL, "team", true, true},
	    /* empty lists match nothing */
	    {"{\"operations\":[],\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
	     "\"resources\":[\"*\"]}",
	     "CREATE", "", "v1", "pods", NULL, "a", false, false},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		json_t *r = rule(t[i].rule);
		bool got = webhook_rule_matches(r, t[i].op, t[i].group, t[i].version, t[i].plural,
						t[i].sub, t[i].ns, t[i].is_ns);
		ck_assert_msg(got == t[i].want, "case %zu: %s %s/%s %s/%s: got %d", i, t[i].op,
			      t[i].group, t[i].version, t[i].plural, t[i].sub ? t[i].sub : "", got);
		json_decref(r);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("webhook");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, rule_table);
	suite_add_tcase(s, tc);
	return s;
}
