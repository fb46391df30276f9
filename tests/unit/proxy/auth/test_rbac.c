/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/rbac: rule matching against a table of cases written from
 * the Kubernetes RBAC documentation (apiGroups, resources, subresources,
 * resourceNames, verbs, nonResourceURLs, wildcards), subject matching of
 * bindings (User, Group, ServiceAccount), namespace scoping of RoleBindings,
 * role changes seen by the next decision, and escalation coverage.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/auth/rbac.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j != NULL, "bad json: %s: %s", s, e.text);
	return j;
}

struct rcase {
	const char *rule;
	const char *verb, *group, *res, *sub, *name, *path; /* path set: non-resource */
	bool want;
};

static const struct rcase cases[] = {
    /* verbs and resources */
    {"{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\",\"list\"]}", "get", "",
     "pods", NULL, NULL, NULL, true},
    {"{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\",\"list\"]}", "delete", "",
     "pods", NULL, NULL, NULL, false},
    {"{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]}", "get", "", "services",
     NULL, NULL, NULL, false},
    /* the API group must match: pods are core, deployments are apps */
    {"{\"apiGroups\":[\"\"],\"resources\":[\"deployments\"],\"verbs\":[\"get\"]}", "get", "apps",
     "deployments", NULL, NULL, NULL, false},
    {"{\"apiGroups\":[\"apps\"],\"resources\":[\"deployments\"],\"verbs\":[\"get\"]}", "get",
     "apps", "deployments", NULL, NULL, NULL, true},
    /* wildcards */
    {"{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]}", "deletecollection", "batch",
     "jobs", NULL, NULL, NULL, true},
    {"{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]}", "get", "", "pods", "log",
     NULL, NULL, true},
    /* subresources: "pods" does not grant "pods/log" */
    {"{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]}", "get", "", "pods",
     "log", NULL, NULL, false},
    {"{\"apiGroups\":[\"\"],\"resources\":[\"pods/log\"],\"verbs\":[\"get\"]}", "get", "", "pods",
     "log", NULL, NULL, true},
    {"{\"apiGroups\":[\"\"],\"resources\":[\"pods/log\"],\"verbs\":[\"get\"]}", "get", "", "pods",
     NULL, NULL, NULL, false},
    {"{\"apiGroups\":[\"\"],\"resources\":[\"*/log\"],\"verbs\":[\"get\"]}", "get", "", "pods",
     "log", NULL, NULL, true},
    {"{\"apiGroups\":[\"\"],\"resources\":[\"*/log\"],\"verbs\":[\"get\"]}", "get", "", "pods",
     "status", NULL, NULL, false},
    {"{\"apiGroups\":[\"apps\"],\"resources\":[\"deployments/scale\"],\"verbs\":[\"update\"]}",
     "update", "apps", "deployments", "scale", "web", NULL, true},
    /* resourceNames restrict to named objects; a list has no name */
    {"{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\"],\"resourceNames\":[\"my-configmap\"],"
     "\"verbs\":[\"update\",\"get\"]}",
     "get", "", "configmaps", NULL, "my-configmap", NULL, true},
    {"{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\"],\"resourceNames\":[\"my-configmap\"],"
     "\"verbs\":[\"update\",\"get\"]}",
     "get", "", "configmaps", NULL, "other", NULL, false},
    {"{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\"],\"resourceNames\":[\"my-configmap\"],"
     "\"verbs\":[\"list\"]}",
     "list", "", "configmaps", NULL, NULL, NULL, false},
    {"{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\"],\"resourceNames\":[\"my-configmap\"],"
     "\"verbs\":[\"create\"]}",
     "create", "", "configmaps", NULL, NULL, NULL, false},
    /* non-resource URLs: exact, trailing-star prefix, and never for resource rules */
    {"{\"nonResourceURLs\":[\"/healthz\",\"/healthz/*\"],\"verbs\":[\"get\",\"post\"]}", "get",
     NULL, NULL, NULL, NULL, "/healthz", true},
    {"{\"nonResourceURLs\":[\"/healthz\",\"/healthz/*\"],\"verbs\":[\"get\",\"post\"]}", "post",
     NULL, NULL, NULL, NULL, "/healthz/etcd", true},
    {"{\"nonResourceURLs\":[\"/healthz\",\"/healthz/*\"],\"verbs\":[\"get\",\"post\"]}", "get",
     NULL, NULL, NULL, NULL, "/healthzx", false},
    {"{\"nonResourceURLs\":[\"/healthz\"],\"verbs\":[\"get\"]}", "put", NULL, NULL, NULL, NULL,
     "/healthz", false},
    {"{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}", "get", NULL, NULL, NULL, NULL, "/metrics",
     true},
    {"{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]}", "get", NULL, NULL, NULL,
     NULL, "/metrics", false},
    {"{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}", "get", "", "pods", NULL, NULL, NULL, false},
};

START_TEST(test_rule_table)
{
	const struct rcase *c = &cases[_i];
	json_t *rule = J(c->rule);
	struct rbac_attrs a = {.user = "alice",
			       .verb = c->verb,
			       .resource_request = !c->path,
			       .api_group = c->group,
			       .resource = c->res,
			       .subresource = c->sub,
			       .ns = "team-a",
			       .name = c->name,
			       .path = c->path};
	ck_assert_msg(rbac_rule_allows(rule, &a) == c->want, "case %d: %s %s/%s %s", _i, c->verb,
		      c->res ? c->res : c->path, c->sub ? c->sub : "", c->rule);
	json_decref(rule);
}
END_TEST

static rbac_index_t *fixture(void)
{
	rbac_index_t *ix = rbac_index_new();
	json_t *o;
	o = J("{\"metadata\":{\"name\":\"pod-reader\",\"namespace\":\"team-a\"},"
	      "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\","
	      "\"list\",\"watch\"]}]}");
	ck_assert_int_eq(rbac_index_put(ix, RBAC_ROLE, o), 0);
	json_decref(o);
	o = J("{\"metadata\":{\"name\":\"secret-reader\"},"
	      "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"get\","
	      "\"list\"]}]}");
	ck_assert_int_eq(rbac_index_put(ix, RBAC_CLUSTERROLE, o), 0);
	json_decref(o);
	o = J("{\"metadata\":{\"name\":\"read-pods\",\"namespace\":\"team-a\"},"
	      "\"subjects\":[{\"kind\":\"User\",\"name\":\"jane\"},{\"kind\":\"ServiceAccount\","
	      "\"name\":\"robot\"}],"
	      "\"roleRef\":{\"kind\":\"Role\",\"name\":\"pod-reader\",\"apiGroup\":\"rbac."
	      "authorization.k8s.io\"}}");
	ck_assert_int_eq(rbac_index_put(ix, RBAC_ROLEBINDING, o), 0);
	json_decref(o);
	/* a RoleBinding of a ClusterRole grants it only in its namespace */
	o = J("{\"metadata\":{\"name\":\"read-secrets\",\"namespace\":\"development\"},"
	      "\"subjects\":[{\"kind\":\"User\",\"name\":\"dave\"}],"
	      "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"secret-reader\"}}");
	ck_assert_int_eq(rbac_index_put(ix, RBAC_ROLEBINDING, o), 0);
	json_decref(o);
	o = J("{\"metadata\":{\"name\":\"read-secrets-global\"},"
	      "\"subjects\":[{\"kind\":\"Group\",\"name\":\"manager\"}],"
	      "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"secret-reader\"}}");
	ck_assert_int_eq(rbac_index_put(ix, RBAC_CLUSTERROLEBINDING, o), 0);
	json_decref(o);
	return ix;
}

static bool can(rbac_index_t *ix, const char *user, const char *group, const char *verb,
		const char *res, const char *ns)
{
	const char *groups[] = {group ? group : "system:authenticated"};
	struct rbac_attrs a = {.user = user,
			       .groups = groups,
			       .ngroups = 1,
			       .verb = verb,
			       .resource_request = true,
			       .api_group = "",
			       .resource = res,
			       .ns = ns};
	return rbac_allowed(ix, &a, NULL, 0);
}

START_TEST(test_bindings)
{
	rbac_index_t *ix = fixture();
	ck_assert(can(ix, "jane", NULL, "list", "pods", "team-a"));
	ck_assert(!can(ix, "jane", NULL, "list", "pods", "team-b"));
	ck_assert(!can(ix, "jane", NULL, "list", "pods", NULL));
	ck_assert(!can(ix, "jane", NULL, "delete", "pods", "team-a"));
	/* a ServiceAccount subject without namespace is the binding's */
	ck_assert(can(ix, "system:serviceaccount:team-a:robot", NULL, "get", "pods", "team-a"));
	ck_assert(!can(ix, "system:serviceaccount:team-b:robot", NULL, "get", "pods", "team-a"));
	ck_assert(can(ix, "dave", NULL, "get", "secrets", "development"));
	ck_assert(!can(ix, "dave", NULL, "get", "secrets", "team-a"));
	ck_assert(can(ix, "anyone", "manager", "list", "secrets", "team-a"));
	ck_assert(can(ix, "anyone", "manager", "list", "secrets", NULL));
	ck_assert(!can(ix, "anyone", "managers", "list", "secrets", NULL));
	ck_assert_uint_eq(rbac_index_count(ix, RBAC_ROLEBINDING), 2);
	rbac_index_free(ix);
}
END_TEST

START_TEST(test_changes_take_effect)
{
	rbac_index_t *ix = fixture();
	json_t *o =
	    J("{\"metadata\":{\"name\":\"pod-reader\",\"namespace\":\"team-a\"},"
	      "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"*\"]}]}");
	ck_assert(!can(ix, "jane", NULL, "delete", "pods", "team-a"));
	rbac_index_put(ix, RBAC_ROLE, o);
	json_decref(o);
	ck_assert(can(ix, "jane", NULL, "delete", "pods", "team-a"));
	rbac_index_del(ix, RBAC_ROLE, "team-a", "pod-reader");
	ck_assert(!can(ix, "jane", NULL, "get", "pods", "team-a"));
	rbac_index_del(ix, RBAC_CLUSTERROLEBINDING, "", "read-secrets-global");
	ck_assert(!can(ix, "anyone", "manager", "list", "secrets", NULL));
	rbac_index_free(ix);
}
END_TEST

START_TEST(test_rules_for)
{
	rbac_index_t *ix = fixture();
	const char *g[] = {"manager"};
	json_t *r = rbac_rules_for(ix, "jane", g, 1, "team-a");
	ck_assert_uint_eq(json_array_size(r), 2);
	json_decref(r);
	r = rbac_rules_for(ix, "jane", NULL, 0, "");
	ck_assert_uint_eq(json_array_size(r), 0);
	json_decref(r);
	rbac_index_free(ix);
}
END_TEST

START_TEST(test_covers)
{
	json_t *owner = J("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\",\"configmaps\"],"
			  "\"verbs\":[\"get\",\"list\"]},"
			  "{\"apiGroups\":[\"apps\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]},"
			  "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":["
			  "\"one\"],\"verbs\":[\"get\"]},"
			  "{\"nonResourceURLs\":[\"/logs/*\"],\"verbs\":[\"get\"]}]");
	json_t *ok = J("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]},"
		       "{\"apiGroups\":[\"apps\"],\"resources\":[\"deployments/"
		       "scale\"],\"verbs\":[\"update\"]},"
		       "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":["
		       "\"one\"],\"verbs\":[\"get\"]},"
		       "{\"nonResourceURLs\":[\"/logs/kube\"],\"verbs\":[\"get\"]}]");
	ck_assert(rbac_covers(owner, ok, NULL));
	json_t *missing = NULL;
	json_t *bad = J("[{\"apiGroups\":[\"\"],\"resources\":[\"pods\",\"nodes\"],\"verbs\":["
			"\"get\",\"delete\"]}]");
	ck_assert(!rbac_covers(owner, bad, &missing));
	ck_assert_uint_eq(json_array_size(missing), 3); /* pods delete, nodes get, nodes delete */
	json_decref(missing);
	json_decref(bad);
	/* a named grant does not cover every name */
	bad = J("[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"get\"]}]");
	ck_assert(!rbac_covers(owner, bad, NULL));
	json_decref(bad);
	json_decref(ok);
	json_decref(owner);
}
END_TEST

START_TEST(test_defaults)
{
	json_t *d = rbac_defaults();
	ck_assert(json_array_size(d) >= 12);
	size_t i;
	json_t *o;
	bool masters = false;
	json_array_foreach (d, i, o) {
		const char *name =
		    json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
		if (strcmp(name, "cluster-admin") == 0 &&
		    strcmp(json_string_value(json_object_get(o, "kind")), "ClusterRoleBinding") ==
			0)
			masters =
			    strcmp(json_string_value(json_object_get(
				       json_array_get(json_object_get(o, "subjects"), 0), "name")),
				   "system:masters") == 0;
	}
	ck_assert(masters);
	json_decref(d);
}
END_TEST

/* The table of names is rbac_defaults()'s kinds and names, in its order. */
START_TEST(test_default_names)
{
	json_t *d = rbac_defaults();
	size_t n = 0, i;
	const struct rbac_default_name *t = rbac_default_names(&n);
	json_t *o;
	ck_assert_uint_eq(json_array_size(d), n);
	json_array_foreach (d, i, o) {
		const char *kind = json_string_value(json_object_get(o, "kind"));
		ck_assert_str_eq(kind, t[i].kind == RBAC_CLUSTERROLE ? "ClusterRole"
								     : "ClusterRoleBinding");
		ck_assert(t[i].kind == RBAC_CLUSTERROLE || t[i].kind == RBAC_CLUSTERROLEBINDING);
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_object_get(o, "metadata"), "name")),
		    t[i].name);
	}
	json_decref(d);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("rbac");
	TCase *tc = tcase_create("rbac");
	tcase_add_loop_test(tc, test_rule_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_bindings);
	tcase_add_test(tc, test_changes_take_effect);
	tcase_add_test(tc, test_rules_for);
	tcase_add_test(tc, test_covers);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_default_names);
	suite_add_tcase(s, tc);
	return s;
}
