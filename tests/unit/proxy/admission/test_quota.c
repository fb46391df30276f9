/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/admission/quota.c and proxy/admission/limitrange.c: quantities as kube prints
 * them, what pods, services, PVCs and other objects take from a
 * ResourceQuota (init containers, sidecars, terminal pods, extended
 * resources), scopes, kube's refusal texts ("exceeded quota", "must
 * specify"), LimitRange defaulting, container defaults with the
 * limit-ranger annotation, and min/max/ratio refusals; plus the Pod
 * Security levels of policies/pss.c used by the namespace labels.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "policies/policies.h"
#include "proxy/admission/admission.h"
#include "proxy/admission/limitrange.h"
#include "proxy/admission/quota.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *json)
{
	json_error_t e;
	json_t *j = json_loads(json, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s (%s)", e.text, json);
	return j;
}

static const struct proxy_resource *row(const char *group, const char *version, const char *plural)
{
	const struct proxy_resource *r = resource_find(group, version, plural);
	ck_assert_ptr_nonnull(r);
	return r;
}

static int64_t used_of(const json_t *u, const char *k)
{
	json_t *v = json_object_get(u, k);
	return v ? json_integer_value(v) : -1;
}

START_TEST(quantities)
{
	static const struct {
		const char *in;
		int64_t milli;
		const char *out;
	} t[] = {{"500m", 500, "500m"},
		 {"1", 1000, "1"},
		 {"1.5", 1500, "1500m"},
		 {"2000", 2000000, "2k"},
		 {"1Gi", 1073741824000LL, "1Gi"},
		 {"1536Mi", 1610612736000LL, "1536Mi"},
		 {"1024Mi", 1073741824000LL, "1Gi"},
		 {"0", 0, "0"}};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		json_t *v = json_string(t[i].in);
		int64_t m = -1;
		char buf[64];
		ck_assert_int_eq(qty_parse(v, &m), 0);
		ck_assert_int_eq(m, t[i].milli);
		qty_format(m, qty_binary(v), buf, sizeof(buf));
		ck_assert_str_eq(buf, t[i].out);
		json_decref(v);
	}
	json_t *bad = json_string("12abc");
	int64_t m;
	ck_assert_int_eq(qty_parse(bad, &m), -EINVAL);
	json_decref(bad);
}
END_TEST

START_TEST(pod_usage)
{
	/* two containers (one with only limits: its request is the limit), an
	 * init container larger than the sum of cpu, an extended resource */
	json_t *pod = J("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":["
			"{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"250m\",\"memory\":"
			"\"64Mi\"},\"limits\":{\"memory\":\"128Mi\"}}},"
			"{\"name\":\"b\",\"resources\":{\"limits\":{\"cpu\":\"500m\",\"nvidia.com/"
			"gpu\":\"1\"}}}],"
			"\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{\"cpu\":"
			"\"2\"}}}]},\"status\":{\"phase\":\"Running\"}}");
	json_t *u = quota_object_usage(row("", "v1", "pods"), pod);
	ck_assert_int_eq(used_of(u, "pods"), 1000);
	ck_assert_int_eq(used_of(u, "count/pods"), 1000);
	ck_assert_int_eq(used_of(u, "requests.cpu"), 2000); /* init container max */
	ck_assert_int_eq(used_of(u, "cpu"), 2000);
	ck_assert_int_eq(used_of(u, "requests.memory"), 64LL * 1048576 * 1000);
	ck_assert_int_eq(used_of(u, "limits.memory"), 128LL * 1048576 * 1000);
	ck_assert_int_eq(used_of(u, "limits.cpu"), 500); /* only b sets one */
	ck_assert_int_eq(used_of(u, "requests.nvidia.com/gpu"), 1000);
	ck_assert_int_eq(used_of(u, "limits.nvidia.com/gpu"), -1);
	json_decref(u);
	/* a pod that has terminated only counts as an object */
	json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Succeeded"));
	u = quota_object_usage(row("", "v1", "pods"), pod);
	ck_assert_int_eq(used_of(u, "count/pods"), 1000);
	ck_assert_int_eq(used_of(u, "pods"), -1);
	ck_assert_int_eq(used_of(u, "requests.cpu"), -1);
	json_decref(u);
	/* a deleted pod counts until its grace period has passed */
	json_object_set_new(json_object_get(pod, "status"), "phase", json_string("Running"));
	json_t *m = json_object_get(pod, "metadata");
	json_object_set_new(m, "deletionGracePeriodSeconds", json_integer(30));
	json_object_set_new(m, "deletionTimestamp", json_string("2999-01-01T00:00:00Z"));
	u = quota_object_usage(row("", "v1", "pods"), pod);
	ck_assert_int_eq(used_of(u, "pods"), 1000);
	json_decref(u);
	json_object_set_new(m, "deletionTimestamp", json_string("2001-01-01T00:00:00Z"));
	u = quota_object_usage(row("", "v1", "pods"), pod);
	ck_assert_int_eq(used_of(u, "pods"), -1);
	json_decref(u);
	json_decref(pod);
}
END_TEST

START_TEST(sidecar_usage)
{
	/* a restartable init container (sidecar) adds to the containers */
	json_t *pod = J("{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
			"{\"cpu\":\"1\"}}}],\"initContainers\":[{\"name\":\"s\",\"restartPolicy\":"
			"\"Always\",\"resources\":{\"requests\":{\"cpu\":\"500m\"}}}]}}");
	json_t *u = quota_object_usage(row("", "v1", "pods"), pod);
	ck_assert_int_eq(used_of(u, "requests.cpu"), 1500);
	json_decref(u);
	json_decref(pod);
}
END_TEST

START_TEST(object_usage)
{
	json_t *svc = J("{\"spec\":{\"type\":\"LoadBalancer\",\"ports\":[{\"port\":80},{\"port\":"
			"443}]}}");
	json_t *u = quota_object_usage(row("", "v1", "services"), svc);
	ck_assert_int_eq(used_of(u, "services"), 1000);
	ck_assert_int_eq(used_of(u, "count/services"), 1000);
	ck_assert_int_eq(used_of(u, "services.loadbalancers"), 1000);
	ck_assert_int_eq(used_of(u, "services.nodeports"), 2000);
	json_decref(u);
	json_decref(svc);
	json_t *pvc = J("{\"spec\":{\"storageClassName\":\"fast\",\"resources\":{\"requests\":{"
			"\"storage\":\"10Gi\"}}}}");
	u = quota_object_usage(row("", "v1", "persistentvolumeclaims"), pvc);
	ck_assert_int_eq(used_of(u, "persistentvolumeclaims"), 1000);
	ck_assert_int_eq(used_of(u, "requests.storage"), 10LL * 1073741824 * 1000);
	ck_assert_int_eq(used_of(u, "fast.storageclass.storage.k8s.io/requests.storage"),
			 10LL * 1073741824 * 1000);
	json_decref(u);
	json_decref(pvc);
	json_t *dep = J("{\"spec\":{}}");
	u = quota_object_usage(row("apps", "v1", "deployments"), dep);
	ck_assert_int_eq(used_of(u, "count/deployments.apps"), 1000);
	ck_assert_int_eq(json_object_size(u), 1);
	json_decref(u);
	json_decref(dep);
}
END_TEST

START_TEST(matching_and_scopes)
{
	const struct proxy_resource *pods = row("", "v1", "pods");
	const struct proxy_resource *cms = row("", "v1", "configmaps");
	json_t *q = J("{\"spec\":{\"hard\":{\"pods\":\"2\"}}}");
	json_t *pod = J("{\"spec\":{\"containers\":[{\"name\":\"a\"}]}}");
	json_t *cm = J("{\"data\":{}}");
	ck_assert(quota_matches(q, pods, pod));
	ck_assert(!quota_matches(q, cms, cm)); /* does not track configmaps */
	json_decref(q);
	q = J("{\"spec\":{\"hard\":{\"count/configmaps\":\"2\"}}}");
	ck_assert(quota_matches(q, cms, cm));
	ck_assert(!quota_matches(q, pods, pod));
	json_decref(q);
	/* BestEffort: a pod without requests or limits */
	q = J("{\"spec\":{\"hard\":{\"pods\":\"2\"},\"scopes\":[\"BestEffort\"]}}");
	ck_assert(quota_matches(q, pods, pod));
	json_t *burst = J("{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
			  "{\"cpu\":\"1\"}}}]}}");
	ck_assert(!quota_matches(q, pods, burst));
	json_decref(q);
	q = J("{\"spec\":{\"hard\":{\"pods\":\"2\"},\"scopes\":[\"Terminating\"]}}");
	ck_assert(!quota_matches(q, pods, pod));
	json_object_set_new(json_object_get(pod, "spec"), "activeDeadlineSeconds",
			    json_integer(60));
	ck_assert(quota_matches(q, pods, pod));
	json_decref(q);
	q = J("{\"spec\":{\"hard\":{\"pods\":\"2\"},\"scopeSelector\":{\"matchExpressions\":[{"
	      "\"scopeName\":\"PriorityClass\",\"operator\":\"In\",\"values\":[\"high\"]}]}}}");
	ck_assert(!quota_matches(q, pods, pod));
	json_object_set_new(json_object_get(pod, "spec"), "priorityClassName", json_string("high"));
	ck_assert(quota_matches(q, pods, pod));
	json_decref(q);
	json_decref(burst);
	json_decref(pod);
	json_decref(cm);
}
END_TEST

START_TEST(refusal_texts)
{
	char msg[1024] = "";
	json_t *hard = J("{\"pods\":\"2\",\"requests.cpu\":\"1\",\"limits.memory\":\"1Gi\"}");
	json_t *used = J("{\"pods\":2000,\"requests.cpu\":500}");
	json_t *req = J("{\"pods\":1000,\"requests.cpu\":250}");
	ck_assert_int_eq(quota_check("q1", hard, used, req, msg, sizeof(msg)), -EACCES);
	ck_assert_str_eq(msg,
			 "exceeded quota: q1, requested: pods=1, used: pods=2, limited: pods=2");
	json_object_set_new(used, "pods", json_integer(1000));
	ck_assert_int_eq(quota_check("q1", hard, used, req, msg, sizeof(msg)), 0);
	json_t *pod = J("{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{"
			"\"cpu\":\"100m\"}}},{\"name\":\"b\"}]}}");
	ck_assert_int_eq(quota_pod_constraints(hard, pod, msg, sizeof(msg)), -EACCES);
	ck_assert_str_eq(msg, "must specify limits.memory for: b,c; requests.cpu for: b");
	json_t *s = quota_used_strings(hard, used);
	ck_assert_str_eq(json_string_value(json_object_get(s, "pods")), "1");
	ck_assert_str_eq(json_string_value(json_object_get(s, "requests.cpu")), "500m");
	ck_assert_str_eq(json_string_value(json_object_get(s, "limits.memory")), "0");
	json_decref(s);
	json_decref(pod);
	json_decref(hard);
	json_decref(used);
	json_decref(req);
}
END_TEST

START_TEST(limitrange_defaulting)
{
	json_t *lr =
	    J("{\"spec\":{\"limits\":[{\"type\":\"Container\",\"max\":{\"cpu\":\"2\"},"
	      "\"min\":{\"memory\":\"32Mi\"}},{\"type\":\"Pod\",\"max\":{\"cpu\":\"4\"}}]}}");
	obj_limitrange_defaults(lr);
	json_t *c = json_array_get(obj_get(lr, "spec.limits"), 0);
	ck_assert_str_eq(json_string_value(kb_json_path(c, "default.cpu")), "2");
	ck_assert_str_eq(json_string_value(kb_json_path(c, "defaultRequest.cpu")), "2");
	ck_assert_str_eq(json_string_value(kb_json_path(c, "defaultRequest.memory")), "32Mi");
	ck_assert_ptr_null(
	    json_object_get(json_array_get(obj_get(lr, "spec.limits"), 1), "default"));
	json_decref(lr);
}
END_TEST

START_TEST(limitrange_mutation)
{
	json_t *lr = J("{\"spec\":{\"limits\":[{\"type\":\"Container\",\"default\":{\"cpu\":"
		       "\"500m\",\"memory\":\"128Mi\"},\"defaultRequest\":{\"cpu\":\"100m\","
		       "\"memory\":\"64Mi\"}}]}}");
	json_t *pod = J("{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"a\"},"
			"{\"name\":\"b\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]}}");
	limitrange_mutate_pod(lr, pod);
	json_t *a = json_array_get(obj_get(pod, "spec.containers"), 0);
	json_t *b = json_array_get(obj_get(pod, "spec.containers"), 1);
	ck_assert_str_eq(json_string_value(kb_json_path(a, "resources.limits.cpu")), "500m");
	ck_assert_str_eq(json_string_value(kb_json_path(a, "resources.requests.memory")), "64Mi");
	/* b's own limit stays and its request is that limit, not defaultRequest */
	ck_assert_str_eq(json_string_value(kb_json_path(b, "resources.limits.cpu")), "1");
	ck_assert_str_eq(json_string_value(kb_json_path(b, "resources.requests.cpu")), "1");
	ck_assert_str_eq(json_string_value(json_object_get(obj_get(pod, "metadata.annotations"),
							   "kubernetes.io/limit-ranger")),
			 "LimitRanger plugin set: cpu, memory request for container a; cpu, "
			 "memory limit for container a; memory request for container b; memory "
			 "limit for container b");
	json_decref(pod);
	json_decref(lr);
}
END_TEST

static const char *lr_refusal(const char *lr_json, const char *plural, const char *obj_json)
{
	static char msg[1024];
	json_t *lr = J(lr_json), *obj = J(obj_json);
	msg[0] = '\0';
	int rc = limitrange_validate(lr, row("", "v1", plural), obj, msg, sizeof(msg));
	ck_assert_int_eq(rc, msg[0] ? -EACCES : 0);
	json_decref(lr);
	json_decref(obj);
	return msg;
}

START_TEST(limitrange_refusals)
{
	const char *ctr_max = "{\"spec\":{\"limits\":[{\"type\":\"Container\",\"max\":{\"cpu\":"
			      "\"1\"},\"min\":{\"cpu\":\"100m\"}}]}}";
	ck_assert_str_eq(lr_refusal(ctr_max, "pods",
				    "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"
				    "\"limits\":{\"cpu\":\"2\"},\"requests\":{\"cpu\":\"2\"}}}]}}"),
			 "maximum cpu usage per Container is 1, but limit is 2");
	ck_assert_str_eq(
	    lr_refusal(ctr_max, "pods",
		       "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"
		       "\"limits\":{\"cpu\":\"500m\"},\"requests\":{\"cpu\":\"50m\"}}}]}}"),
	    "minimum cpu usage per Container is 100m, but request is 50m");
	ck_assert_str_eq(
	    lr_refusal(ctr_max, "pods", "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}"),
	    "[minimum cpu usage per Container is 100m.  No request is specified, "
	    "maximum cpu usage per Container is 1.  No limit is specified]");
	ck_assert_str_eq(lr_refusal(ctr_max, "pods",
				    "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"
				    "\"limits\":{\"cpu\":\"1\"},\"requests\":{\"cpu\":\"1\"}}}]}}"),
			 "");
	const char *ratio = "{\"spec\":{\"limits\":[{\"type\":\"Container\","
			    "\"maxLimitRequestRatio\":{\"memory\":\"2\"}}]}}";
	ck_assert_str_eq(lr_refusal(ratio, "pods",
				    "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{"
				    "\"limits\":{\"memory\":\"1Gi\"},\"requests\":{\"memory\":"
				    "\"256Mi\"}}}]}}"),
			 "memory max limit to request ratio per Container is 2, but provided ratio "
			 "is 4.000000");
	const char *podmax = "{\"spec\":{\"limits\":[{\"type\":\"Pod\",\"max\":{\"memory\":"
			     "\"1Gi\"}}]}}";
	ck_assert_str_eq(lr_refusal(podmax, "pods",
				    "{\"spec\":{\"containers\":[{\"name\":\"a\",\"resources\":{"
				    "\"limits\":{\"memory\":\"768Mi\"}}},{\"name\":\"b\","
				    "\"resources\":{\"limits\":{\"memory\":\"512Mi\"}}}]}}"),
			 "maximum memory usage per Pod is 1Gi, but limit is 1280Mi");
	const char *pvc = "{\"spec\":{\"limits\":[{\"type\":\"PersistentVolumeClaim\",\"max\":{"
			  "\"storage\":\"2Gi\"},\"min\":{\"storage\":\"1Gi\"}}]}}";
	ck_assert_str_eq(
	    lr_refusal(pvc, "persistentvolumeclaims",
		       "{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"5Gi\"}}}}"),
	    "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is "
	    "5Gi");
	ck_assert_str_eq(
	    lr_refusal(pvc, "persistentvolumeclaims",
		       "{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"500Mi\"}}}}"),
	    "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is "
	    "500Mi");
	/* a Container LimitRange says nothing about PVCs */
	ck_assert_str_eq(
	    lr_refusal(ctr_max, "persistentvolumeclaims",
		       "{\"spec\":{\"resources\":{\"requests\":{\"storage\":\"5Gi\"}}}}"),
	    "");
}
END_TEST

START_TEST(pss_levels)
{
	ck_assert_int_eq(policy_pss_parse("privileged"), 0);
	ck_assert_int_eq(policy_pss_parse("baseline"), 1);
	ck_assert_int_eq(policy_pss_parse("restricted"), 2);
	ck_assert_int_eq(policy_pss_parse("strict"), -EINVAL);
	ck_assert_int_eq(policy_pss_parse(NULL), -EINVAL);
	ck_assert_str_eq(policy_pss_name(2), "restricted");
	json_t *spec = J("{\"containers\":[{\"name\":\"c\",\"securityContext\":{\"privileged\":"
			 "true}}]}");
	char msg[2048] = "";
	ck_assert_int_eq(policy_pss_violations(0, NULL, spec, msg, sizeof(msg)), 0);
	ck_assert_int_eq(policy_pss_violations(1, NULL, spec, msg, sizeof(msg)), 1);
	ck_assert_str_eq(msg, "privileged (container \"c\" must not set "
			      "securityContext.privileged=true)");
	json_decref(spec);
	/* a plain pod passes baseline but not restricted */
	spec = J("{\"containers\":[{\"name\":\"c\"}]}");
	msg[0] = '\0';
	ck_assert_int_eq(policy_pss_violations(1, NULL, spec, msg, sizeof(msg)), 0);
	ck_assert_int_eq(policy_pss_violations(2, NULL, spec, msg, sizeof(msg)), 4);
	/* kube's words and order for restricted */
	ck_assert_str_eq(msg,
			 "allowPrivilegeEscalation != false (container \"c\" must set "
			 "securityContext.allowPrivilegeEscalation=false), unrestricted "
			 "capabilities (container \"c\" must set "
			 "securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true "
			 "(pod or container \"c\" must set securityContext.runAsNonRoot=true), "
			 "seccompProfile (pod or container \"c\" must set "
			 "securityContext.seccompProfile.type to \"RuntimeDefault\" or "
			 "\"Localhost\")");
	json_decref(spec);
}
END_TEST

/* kube's IsOvercommitAllowed: native resources only, hugepages excluded. */
START_TEST(overcommit_allowed)
{
	ck_assert(qty_overcommit_allowed("cpu"));
	ck_assert(qty_overcommit_allowed("memory"));
	ck_assert(qty_overcommit_allowed("ephemeral-storage"));
	ck_assert(qty_overcommit_allowed("example.kubernetes.io/thing"));
	ck_assert(!qty_overcommit_allowed("nvidia.com/gpu"));
	ck_assert(!qty_overcommit_allowed("hugepages-2Mi"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("quota");
	TCase *tc = tcase_create("quota");
	tcase_add_test(tc, quantities);
	tcase_add_test(tc, pod_usage);
	tcase_add_test(tc, sidecar_usage);
	tcase_add_test(tc, object_usage);
	tcase_add_test(tc, matching_and_scopes);
	tcase_add_test(tc, refusal_texts);
	tcase_add_test(tc, limitrange_defaulting);
	tcase_add_test(tc, limitrange_mutation);
	tcase_add_test(tc, limitrange_refusals);
	tcase_add_test(tc, pss_levels);
	tcase_add_test(tc, overcommit_allowed);
	suite_add_tcase(s, tc);
	return s;
}
