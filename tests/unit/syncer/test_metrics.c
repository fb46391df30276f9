/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for syncer/metrics.c's translation: host PodMetrics and NodeMetrics
 * back to the tenant's names, namespaces and labels, only for the tenant's
 * own objects; the host discovery check.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "syncer/syncer_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *text)
{
	json_error_t err;
	json_t *o = json_loads(text, 0, &err);
	ck_assert_msg(o != NULL, "%s", err.text);
	return o;
}

static const char *S(const json_t *o, const char *path)
{
	char buf[256], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", path);
	const json_t *v = o;
	for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
		v = json_is_array(v) ? json_array_get(v, strtoul(k, NULL, 10))
				     : json_object_get(v, k);
	return json_string_value(v);
}

/* host PodMetrics: t1's a in default (two containers), t1's c in other,
 * t2's a in default, a host pod without the tenant label named like t1's b */
static json_t *host_pods(void)
{
	return J(
	    "["
	    "{\"metadata\":{\"name\":\"a-x-default-x-t1\",\"namespace\":\"tenants\","
	    "\"creationTimestamp\":\"2026-11-30T10:00:00Z\",\"labels\":{"
	    "\"kubicle.dev/tenant\":\"t1\",\"kubicle.dev/namespace\":\"default\","
	    "\"app\":\"host-side\"}},"
	    "\"timestamp\":\"2026-11-30T09:59:50Z\",\"window\":\"15s\",\"containers\":["
	    "{\"name\":\"main\",\"usage\":{\"cpu\":\"100m\",\"memory\":\"65536Ki\"}},"
	    "{\"name\":\"side\",\"usage\":{\"cpu\":\"2m\",\"memory\":\"1Ki\"}}]},"
	    "{\"metadata\":{\"name\":\"c-x-other-x-t1\",\"labels\":{"
	    "\"kubicle.dev/tenant\":\"t1\"}},\"timestamp\":\"T\",\"window\":\"15s\","
	    "\"containers\":[{\"name\":\"c\",\"usage\":{\"cpu\":\"20m\",\"memory\":\"8Mi\"}}]},"
	    "{\"metadata\":{\"name\":\"a-x-default-x-t2\",\"labels\":{"
	    "\"kubicle.dev/tenant\":\"t2\"}},\"containers\":[{\"name\":\"main\","
	    "\"usage\":{\"cpu\":\"700m\",\"memory\":\"1Mi\"}}]},"
	    "{\"metadata\":{\"name\":\"b-x-default-x-t1\",\"labels\":{}},"
	    "\"containers\":[{\"name\":\"web\",\"usage\":{\"cpu\":\"9m\",\"memory\":\"1Mi\"}}]}"
	    "]");
}

static json_t *tenant_pods(void)
{
	return J("["
		 "{\"metadata\":{\"name\":\"a\",\"namespace\":\"default\",\"labels\":{\"app\":"
		 "\"train\"}}},"
		 "{\"metadata\":{\"name\":\"b\",\"namespace\":\"default\"}},"
		 "{\"metadata\":{\"name\":\"c\",\"namespace\":\"other\"}},"
		 "{\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}}"
		 "]");
}

START_TEST(pod_metrics_tenant_names)
{
	json_t *host = host_pods(), *pods = tenant_pods();
	json_t *out = syncer_pod_metrics(host, pods, "t1");
	/* a and c: b's host item lacks t1's label, p has none */
	ck_assert_uint_eq(json_array_size(out), 2);
	ck_assert_str_eq(S(out, "0.metadata.name"), "a");
	ck_assert_str_eq(S(out, "0.metadata.namespace"), "default");
	ck_assert_str_eq(S(out, "0.metadata.creationTimestamp"), "2026-11-30T10:00:00Z");
	/* the tenant pod's labels, not the host's */
	ck_assert_str_eq(S(out, "0.metadata.labels.app"), "train");
	ck_assert_uint_eq(json_object_size(json_object_get(
			      json_object_get(json_array_get(out, 0), "metadata"), "labels")),
			  1);
	ck_assert_str_eq(S(out, "0.timestamp"), "2026-11-30T09:59:50Z");
	ck_assert_str_eq(S(out, "0.window"), "15s");
	ck_assert_str_eq(S(out, "0.containers.0.name"), "main");
	ck_assert_str_eq(S(out, "0.containers.0.usage.cpu"), "100m");
	ck_assert_str_eq(S(out, "0.containers.1.usage.memory"), "1Ki");
	ck_assert_ptr_null(S(out, "0.kind"));
	ck_assert_str_eq(S(out, "1.metadata.name"), "c");
	ck_assert_str_eq(S(out, "1.metadata.namespace"), "other");
	/* no labels: none written */
	ck_assert_ptr_null(
	    json_object_get(json_object_get(json_array_get(out, 1), "metadata"), "labels"));
	json_decref(out);
	/* the other tenant sees its own a only */
	out = syncer_pod_metrics(host, pods, "t2");
	ck_assert_uint_eq(json_array_size(out), 1);
	ck_assert_str_eq(S(out, "0.metadata.name"), "a");
	ck_assert_str_eq(S(out, "0.containers.0.usage.cpu"), "700m");
	json_decref(out);
	json_decref(host);
	json_decref(pods);
}
END_TEST

/* A pod adopted under the name an older Kubicle gave it: its item of that
 * name, when its labels say its tenant and namespace. */
START_TEST(pod_metrics_legacy_name)
{
	json_t *host = json_loads(
	    "[{\"metadata\":{\"name\":\"a-x-x-b-x-t1\",\"labels\":{\"kubicle.dev/tenant\":\"t1\","
	    "\"kubicle.dev/namespace\":\"b\"}},\"containers\":[]}]",
	    0, NULL);
	json_t *pods = json_loads("[{\"metadata\":{\"name\":\"a-x\",\"namespace\":\"b\"}},"
				  "{\"metadata\":{\"name\":\"a\",\"namespace\":\"x-b\"}}]",
				  0, NULL);
	json_t *out = syncer_pod_metrics(host, pods, "t1");
	/* b/a-x's; not x-b/a's, whose old name was the same */
	ck_assert_uint_eq(json_array_size(out), 1);
	ck_assert_str_eq(S(out, "0.metadata.name"), "a-x");
	ck_assert_str_eq(S(out, "0.metadata.namespace"), "b");
	json_decref(out);
	json_decref(host);
	json_decref(pods);
}
END_TEST

START_TEST(pod_metrics_hashed_and_empty)
{
	/* a name too long for the plain form: matched by its hashed host name */
	char hn[SYNCER_NAME_MAX + 1];
	const char *longname = "a-very-long-pod-name-that-does-not-fit-in-the-host-name";
	ck_assert_int_eq(syncer_host_name("default", longname, "t1", hn, sizeof(hn)), 0);
	json_t *host =
	    json_pack("[{s:{s:s,s:{s:s}},s:[{s:s,s:{s:s}}]}]", "metadata", "name", hn, "labels",
		      "kubicle.dev/tenant", "t1", "containers", "name", "m", "usage", "cpu", "5m");
	json_t *pods =
	    json_pack("[{s:{s:s,s:s}}]", "metadata", "name", longname, "namespace", "default");
	json_t *out = syncer_pod_metrics(host, pods, "t1");
	ck_assert_uint_eq(json_array_size(out), 1);
	ck_assert_str_eq(S(out, "0.metadata.name"), longname);
	json_decref(out);
	/* nothing from the host, or not an array: nothing */
	out = syncer_pod_metrics(NULL, pods, "t1");
	ck_assert_uint_eq(json_array_size(out), 0);
	json_decref(out);
	json_t *empty = json_array();
	out = syncer_pod_metrics(host, empty, "t1");
	ck_assert_uint_eq(json_array_size(out), 0);
	json_decref(out);
	json_decref(empty);
	json_decref(host);
	json_decref(pods);
}
END_TEST

START_TEST(node_metrics_tenant_nodes)
{
	json_t *host = J("["
			 "{\"metadata\":{\"name\":\"n1\",\"creationTimestamp\":\"C\","
			 "\"labels\":{\"host\":\"x\"}},\"timestamp\":\"T\",\"window\":\"20s\","
			 "\"usage\":{\"cpu\":\"1500m\",\"memory\":\"2Gi\"}},"
			 "{\"metadata\":{\"name\":\"n2\"},\"usage\":{\"cpu\":\"1\"}},"
			 "{\"metadata\":{\"name\":\"n3\"}}"
			 "]");
	json_t *nodes = J("["
			  "{\"metadata\":{\"name\":\"n3\"}},"
			  "{\"metadata\":{\"name\":\"n1\",\"labels\":{\"gpu\":\"h100\"}}},"
			  "{\"metadata\":{\"name\":\"n9\"}}"
			  "]");
	json_t *out = syncer_node_metrics(host, nodes);
	/* n3 has no usage, n9 no host metrics, n2 is not the tenant's */
	ck_assert_uint_eq(json_array_size(out), 1);
	ck_assert_str_eq(S(out, "0.metadata.name"), "n1");
	ck_assert_str_eq(S(out, "0.metadata.labels.gpu"), "h100");
	ck_assert_ptr_null(S(out, "0.metadata.labels.host"));
	ck_assert_ptr_null(
	    json_object_get(json_object_get(json_array_get(out, 0), "metadata"), "namespace"));
	ck_assert_str_eq(S(out, "0.metadata.creationTimestamp"), "C");
	ck_assert_str_eq(S(out, "0.window"), "20s");
	ck_assert_str_eq(S(out, "0.usage.cpu"), "1500m");
	ck_assert_str_eq(S(out, "0.usage.memory"), "2Gi");
	json_decref(out);
	json_decref(host);
	json_decref(nodes);
}
END_TEST

START_TEST(discovery_check)
{
	json_t *both = J("{\"kind\":\"APIResourceList\",\"groupVersion\":\"metrics.k8s.io/"
			 "v1beta1\",\"resources\":[{\"name\":\"nodes\",\"kind\":\"NodeMetrics\"},"
			 "{\"name\":\"pods\",\"kind\":\"PodMetrics\"}]}");
	json_t *pods = J("{\"resources\":[{\"name\":\"pods\"}]}");
	json_t *none = J("{\"resources\":[]}");
	ck_assert(syncer_metrics_discovered(both));
	ck_assert(!syncer_metrics_discovered(pods));
	ck_assert(!syncer_metrics_discovered(none));
	ck_assert(!syncer_metrics_discovered(NULL));
	json_decref(both);
	json_decref(pods);
	json_decref(none);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("syncer_metrics");
	TCase *tc = tcase_create("metrics");
	tcase_add_test(tc, pod_metrics_tenant_names);
	tcase_add_test(tc, pod_metrics_legacy_name);
	tcase_add_test(tc, pod_metrics_hashed_and_empty);
	tcase_add_test(tc, node_metrics_tenant_nodes);
	tcase_add_test(tc, discovery_check);
	suite_add_tcase(s, tc);
	return s;
}
