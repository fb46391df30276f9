/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for syncer/netpol.c: CIDR arithmetic, the translation of a tenant
 * NetworkPolicy (selectors scoped to the tenant and namespace, namespace
 * selectors mapped to the tenant's namespaces, ipBlocks clipped to what the
 * platform allows, rules without peers, rules whose peers all go), the
 * update patch and the platform's allowed blocks.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "syncer/syncer.h"
#include "syncer/syncer_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *text)
{
	json_error_t err;
	json_t *o = json_loads(text, 0, &err);
	ck_assert_msg(o != NULL, "%s: %s", err.text, text);
	return o;
}

static void assert_json(const json_t *got, const char *want)
{
	json_t *w = J(want);
	char *g = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);
	char *ws = json_dumps(w, JSON_SORT_KEYS | JSON_COMPACT);
	ck_assert_msg(json_equal(got, w), "got %s\nwant %s", g, ws);
	free(g);
	free(ws);
	json_decref(w);
}

static json_t *nss;
static json_t *allowed;

static struct syncer_xlate xl(void)
{
	if (!nss)
		nss = J("[{\"metadata\":{\"name\":\"default\",\"labels\":{"
			"\"kubernetes.io/metadata.name\":\"default\"}}},"
			"{\"metadata\":{\"name\":\"ml\",\"labels\":{"
			"\"kubernetes.io/metadata.name\":\"ml\",\"project\":\"myproject\"}}},"
			"{\"metadata\":{\"name\":\"web\",\"labels\":{"
			"\"kubernetes.io/metadata.name\":\"web\",\"project\":\"other\"}}}]");
	if (!allowed)
		allowed = J("[{\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\","
			    "\"192.168.0.0/16\"]}]");
	return (struct syncer_xlate){.tenant = "t1",
				     .host_ns = "kubicle-t1",
				     .queue = "q",
				     .profile = syncer_profile_find("kai"),
				     .namespaces = nss,
				     .egress_allowed = allowed};
}

static json_t *policy(const char *spec)
{
	char buf[4096];
	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
		 "\"metadata\":{\"name\":\"np\",\"namespace\":\"default\",\"uid\":\"u1\","
		 "\"labels\":{\"a\":\"b\",\"kubicle.dev/tenant\":\"evil\"}},\"spec\":%s}",
		 spec);
	return J(buf);
}

static json_t *spec_of(const char *spec)
{
	struct syncer_xlate x = xl();
	json_t *np = policy(spec);
	json_t *h = syncer_translate_netpol(&x, np);
	ck_assert_ptr_nonnull(h);
	json_t *s = json_incref(json_object_get(h, "spec"));
	json_decref(h);
	json_decref(np);
	return s;
}

START_TEST(cidrs)
{
	ck_assert(syncer_cidr_valid("10.0.0.0/8"));
	ck_assert(syncer_cidr_valid("0.0.0.0/0"));
	ck_assert(syncer_cidr_valid("fd00::/8"));
	ck_assert(!syncer_cidr_valid("10.0.0.1/8"));
	ck_assert(!syncer_cidr_valid("10.0.0.0/33"));
	ck_assert(!syncer_cidr_valid("10.0.0.0"));
	ck_assert(!syncer_cidr_valid("10.0.0.0/"));
	ck_assert(!syncer_cidr_valid("x/8"));
	ck_assert(syncer_cidr_within("10.1.0.0/16", "10.0.0.0/8", true));
	ck_assert(syncer_cidr_within("10.0.0.0/8", "10.0.0.0/8", false));
	ck_assert(!syncer_cidr_within("10.0.0.0/8", "10.0.0.0/8", true));
	ck_assert(!syncer_cidr_within("11.0.0.0/16", "10.0.0.0/8", false));
	ck_assert(!syncer_cidr_within("fd00::/16", "0.0.0.0/0", false));
}
END_TEST

START_TEST(metadata_and_pod_selector)
{
	struct syncer_xlate x = xl();
	json_t *np = policy("{\"podSelector\":{\"matchLabels\":{\"role\":\"db\","
			    "\"kubicle.dev/namespace\":\"other\"}},\"policyTypes\":[\"Ingress\"]}");
	json_t *h = syncer_translate_netpol(&x, np);
	const json_t *m = json_object_get(h, "metadata");
	ck_assert_str_eq(jstr(m, "name"), "np-x-default-x-t1");
	ck_assert_str_eq(jstr(m, "namespace"), "kubicle-t1");
	ck_assert_str_eq(jstr(json_object_get(m, "labels"), "kubicle.dev/tenant"), "t1");
	ck_assert_str_eq(jstr(json_object_get(m, "annotations"), "kubicle.dev/kind"),
			 "NetworkPolicy");
	/* kubicle.dev/ terms are the host's: the tenant's is replaced */
	assert_json(
	    json_object_get(h, "spec"),
	    "{\"podSelector\":{\"matchLabels\":{\"role\":\"db\",\"kubicle.dev/tenant\":\"t1\","
	    "\"kubicle.dev/namespace\":\"default\"}},\"policyTypes\":[\"Ingress\"]}");
	json_decref(h);
	json_decref(np);
}
END_TEST

/* The documentation's test-network-policy example. */
START_TEST(docs_example)
{
	json_t *s = spec_of("{\"podSelector\":{\"matchLabels\":{\"role\":\"db\"}},"
			    "\"policyTypes\":[\"Ingress\",\"Egress\"],"
			    "\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"172.17.0.0/16\","
			    "\"except\":[\"172.17.1.0/24\"]}},"
			    "{\"namespaceSelector\":{\"matchLabels\":{\"project\":\"myproject\"}}},"
			    "{\"podSelector\":{\"matchLabels\":{\"role\":\"frontend\"}}}],"
			    "\"ports\":[{\"protocol\":\"TCP\",\"port\":6379}]}],"
			    "\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/24\"}}],"
			    "\"ports\":[{\"protocol\":\"TCP\",\"port\":5978}]}]}");
	assert_json(
	    s, "{\"podSelector\":{\"matchLabels\":{\"role\":\"db\",\"kubicle.dev/tenant\":\"t1\","
	       "\"kubicle.dev/namespace\":\"default\"}},"
	       "\"policyTypes\":[\"Ingress\",\"Egress\"],"
	       "\"ingress\":[{\"from\":["
	       "{\"ipBlock\":{\"cidr\":\"172.17.0.0/16\",\"except\":[\"172.17.1.0/24\"]}},"
	       "{\"podSelector\":{\"matchLabels\":{\"kubicle.dev/tenant\":\"t1\"},"
	       "\"matchExpressions\":[{\"key\":\"kubicle.dev/namespace\",\"operator\":\"In\","
	       "\"values\":[\"ml\"]}]}},"
	       "{\"podSelector\":{\"matchLabels\":{\"role\":\"frontend\","
	       "\"kubicle.dev/tenant\":\"t1\",\"kubicle.dev/namespace\":\"default\"}}}],"
	       "\"ports\":[{\"protocol\":\"TCP\",\"port\":6379}]}],"
	       /* 10.0.0.0/24 lies in the platform's except 10.0.0.0/8: gone, and
		* the rule with it (an empty peer list would allow all) */
	       "\"egress\":[]}");
	json_decref(s);
}
END_TEST

START_TEST(all_peers_are_own_pods_and_allowed_blocks)
{
	json_t *s = spec_of("{\"podSelector\":{},\"ingress\":[{}],\"egress\":[{\"to\":[]}],"
			    "\"policyTypes\":[\"Ingress\",\"Egress\"]}");
	const char *peers = "[{\"podSelector\":{\"matchLabels\":{\"kubicle.dev/tenant\":\"t1\"}}},"
			    "{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\","
			    "\"192.168.0.0/16\"]}}]";
	char want[1024];
	snprintf(want, sizeof(want), "{\"from\":%s}", peers);
	assert_json(json_array_get(json_object_get(s, "ingress"), 0), want);
	snprintf(want, sizeof(want), "{\"to\":%s}", peers);
	assert_json(json_array_get(json_object_get(s, "egress"), 0), want);
	json_decref(s);
}
END_TEST

START_TEST(namespace_selectors)
{
	/* {} is every tenant namespace: the tenant's pods; one that matches
	 * nothing drops its peer; podSelector and namespaceSelector together */
	json_t *s = spec_of(
	    "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"namespaceSelector\":{}},"
	    "{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":"
	    "\"kube-system\"}}},"
	    "{\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"project\","
	    "\"operator\":\"Exists\"}]},\"podSelector\":{\"matchLabels\":{\"app\":\"x\"}}}]},"
	    "{\"from\":[{\"namespaceSelector\":{\"matchLabels\":{\"nope\":\"1\"}}}]}]}");
	assert_json(s, "{\"podSelector\":{\"matchLabels\":{\"kubicle.dev/tenant\":\"t1\","
		       "\"kubicle.dev/namespace\":\"default\"}},\"policyTypes\":[\"Ingress\"],"
		       "\"ingress\":[{\"from\":["
		       "{\"podSelector\":{\"matchLabels\":{\"kubicle.dev/tenant\":\"t1\"}}},"
		       "{\"podSelector\":{\"matchLabels\":{\"app\":\"x\",\"kubicle.dev/tenant\":"
		       "\"t1\"},\"matchExpressions\":[{\"key\":\"kubicle.dev/namespace\","
		       "\"operator\":\"In\",\"values\":[\"ml\",\"web\"]}]}}]}]}");
	json_decref(s);
}
END_TEST

START_TEST(ip_blocks_clipped)
{
	/* wider than allowed: the allowed block with both excepts; within: kept
	 * with the platform's excepts inside it; disjoint from what is allowed:
	 * gone; an except of the tenant's that covers the block: gone */
	json_t *a = J("[{\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\"]},"
		      "{\"cidr\":\"10.1.0.0/16\",\"except\":[\"10.1.2.0/24\"]}]");
	struct syncer_xlate x = xl();
	x.egress_allowed = a;
	json_t *np = policy("{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":["
			    "{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\",\"except\":[\"8.8.8.0/24\"]}},"
			    "{\"ipBlock\":{\"cidr\":\"10.0.0.0/12\"}},"
			    "{\"ipBlock\":{\"cidr\":\"fd00::/8\"}}]}]}");
	json_t *h = syncer_translate_netpol(&x, np);
	assert_json(
	    json_object_get(
		json_array_get(json_object_get(json_object_get(h, "spec"), "egress"), 0), "to"),
	    "[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\",\"except\":[\"8.8.8.0/24\","
	    "\"10.0.0.0/8\"]}},"
	    "{\"ipBlock\":{\"cidr\":\"10.1.0.0/16\",\"except\":[\"10.1.2.0/24\"]}},"
	    "{\"ipBlock\":{\"cidr\":\"10.1.0.0/16\",\"except\":[\"10.1.2.0/24\"]}}]");
	json_decref(h);
	json_decref(np);
	json_decref(a);
}
END_TEST

START_TEST(no_platform_policy_no_blocks)
{
	struct syncer_xlate x = xl();
	json_t *none = json_array();
	x.egress_allowed = none;
	json_t *np = policy("{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{}]}");
	json_t *h = syncer_translate_netpol(&x, np);
	assert_json(json_object_get(h, "spec"),
		    "{\"podSelector\":{\"matchLabels\":{\"kubicle.dev/tenant\":\"t1\","
		    "\"kubicle.dev/namespace\":\"default\"}},\"policyTypes\":[\"Egress\"],"
		    "\"egress\":[{\"to\":[{\"podSelector\":{\"matchLabels\":"
		    "{\"kubicle.dev/tenant\":\"t1\"}}}]}]}");
	json_decref(h);
	json_decref(np);
	json_decref(none);
}
END_TEST

START_TEST(default_policy_types)
{
	json_t *s = spec_of("{\"podSelector\":{},\"egress\":[{}]}");
	assert_json(json_object_get(s, "policyTypes"), "[\"Ingress\",\"Egress\"]");
	json_decref(s);
	s = spec_of("{\"podSelector\":{}}");
	assert_json(json_object_get(s, "policyTypes"), "[\"Ingress\"]");
	json_decref(s);
}
END_TEST

START_TEST(update_patch)
{
	json_t *have = J("{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"spec\":{\"podSelector\":{"
			 "\"matchLabels\":{\"x\":\"1\",\"y\":\"2\"}},\"ingress\":[{}]}}");
	json_t *want = J("{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"spec\":{\"podSelector\":{"
			 "\"matchLabels\":{\"x\":\"1\"}},\"egress\":[]}}");
	json_t *p = syncer_netpol_update_patch(want, have, NULL);
	assert_json(p, "{\"spec\":{\"podSelector\":{\"matchLabels\":{\"y\":null}},"
		       "\"ingress\":null,\"egress\":[]}}");
	json_decref(p);
	ck_assert_ptr_null(syncer_netpol_update_patch(have, have, NULL));
	json_decref(have);
	json_decref(want);
}
END_TEST

START_TEST(allowed_from_platform_policy)
{
	json_t *pol =
	    J("{\"metadata\":{\"labels\":{\"kubicle.dev/tenant\":\"t1\"}},\"spec\":{"
	      "\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"0.0.0.0/0\",\"except\":["
	      "\"10.0.0.0/8\"]}},{\"ipBlock\":{\"cidr\":\"bad\"}},{\"podSelector\":{}}]}]}}");
	json_t *a = syncer_netpol_allowed(pol, "t1");
	assert_json(a, "[{\"cidr\":\"0.0.0.0/0\",\"except\":[\"10.0.0.0/8\"]}]");
	json_decref(a);
	a = syncer_netpol_allowed(pol, "t2"); /* another tenant's: nothing */
	ck_assert_int_eq(json_array_size(a), 0);
	json_decref(a);
	a = syncer_netpol_allowed(NULL, "t1");
	ck_assert_int_eq(json_array_size(a), 0);
	json_decref(a);
	json_decref(pol);
}
END_TEST

START_TEST(isolation_of_pods)
{
	json_t *pols = J("[{\"metadata\":{\"namespace\":\"ml\"},\"spec\":{\"podSelector\":{"
			 "\"matchLabels\":{\"role\":\"db\"}}}},"
			 "{\"metadata\":{\"namespace\":\"ml\"},\"spec\":{\"podSelector\":{"
			 "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\"}]},"
			 "\"policyTypes\":[\"Egress\"]}},"
			 "{\"metadata\":{\"namespace\":\"web\"},\"spec\":{\"podSelector\":{},"
			 "\"egress\":[{}]}}]");
	json_t *db = J("{\"metadata\":{\"namespace\":\"ml\",\"labels\":{\"role\":\"db\"}}}");
	json_t *tier = J("{\"metadata\":{\"namespace\":\"ml\",\"labels\":{\"tier\":\"x\"}}}");
	json_t *other = J("{\"metadata\":{\"namespace\":\"ml\",\"labels\":{\"role\":\"web\"}}}");
	json_t *web = J("{\"metadata\":{\"namespace\":\"web\"}}");
	bool in, eg;
	syncer_netpol_isolation(pols, db, &in, &eg); /* policyTypes defaulted: Ingress */
	ck_assert(in && !eg);
	syncer_netpol_isolation(pols, tier, &in, &eg);
	ck_assert(!in && eg);
	syncer_netpol_isolation(pols, other, &in, &eg);
	ck_assert(!in && !eg);
	syncer_netpol_isolation(pols, web, &in, &eg); /* egress rules: Ingress and Egress */
	ck_assert(in && eg);
	syncer_netpol_isolation(NULL, web, &in, &eg);
	ck_assert(!in && !eg);
	json_decref(pols);
	json_decref(db);
	json_decref(tier);
	json_decref(other);
	json_decref(web);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("netpol");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, cidrs);
	tcase_add_test(tc, metadata_and_pod_selector);
	tcase_add_test(tc, docs_example);
	tcase_add_test(tc, all_peers_are_own_pods_and_allowed_blocks);
	tcase_add_test(tc, namespace_selectors);
	tcase_add_test(tc, ip_blocks_clipped);
	tcase_add_test(tc, no_platform_policy_no_blocks);
	tcase_add_test(tc, default_policy_types);
	tcase_add_test(tc, update_patch);
	tcase_add_test(tc, allowed_from_platform_policy);
	tcase_add_test(tc, isolation_of_pods);
	suite_add_tcase(s, tc);
	return s;
}
