/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/validate: name syntaxes, causes and their kube messages,
 * metadata rules, per-kind checks (Pod, Service, Secret, Deployment, Job,
 * CronJob), update immutability, quantities and cron schedules.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/validation/validate.h"
#include "proxy/model/object.h"

/* val_path writes what snprintf would (its own %s/%zu), without the
 * leading dot of an empty base, and truncates within the buffer. */
START_TEST(paths)
{
	char f[VAL_PATHLEN], want[VAL_PATHLEN], big[700];

	ck_assert_str_eq(
	    val_path(f, "%s.containers[%zu].ports[%zu].name", "spec", (size_t)0, (size_t)12345),
	    "spec.containers[0].ports[12345].name");
	ck_assert_str_eq(val_path(f, "%s.template.spec", ""), "template.spec");
	ck_assert_str_eq(val_path(f, "%s[%s]", "metadata.labels", "a/b"), "metadata.labels[a/b]");
	ck_assert_str_eq(val_path(f, "%s", ""), "");
	ck_assert_str_eq(val_path(f, "%s.x %d", "a", 7), "a.x 7"); /* through vsnprintf */
	memset(big, 'p', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(want, big, VAL_PATHLEN - 1); /* truncated before ".name" */
	want[VAL_PATHLEN - 1] = '\0';
	ck_assert_str_eq(val_path(f, "%s.name", big), want);
	ck_assert_uint_eq(strlen(f), VAL_PATHLEN - 1);
}
END_TEST

static Suite *suite(void);
#include "tests/unit/check_main.h"

static const struct proxy_resource pod_res = {
    .group = "",
    .version = "v1",
    .kind = "Pod",
    .plural = "pods",
    .namespaced = true,
};
static const struct proxy_resource ns_res = {
    .group = "",
    .version = "v1",
    .kind = "Namespace",
    .plural = "namespaces",
};
static const struct proxy_resource pv_res = {
    .group = "",
    .version = "v1",
    .kind = "PersistentVolume",
    .plural = "persistentvolumes",
};
static const struct proxy_resource svc_res = {
    .group = "",
    .version = "v1",
    .kind = "Service",
    .plural = "services",
    .namespaced = true,
};
static const struct proxy_resource secret_res = {
    .group = "",
    .version = "v1",
    .kind = "Secret",
    .plural = "secrets",
    .namespaced = true,
};
static const struct proxy_resource cm_res = {
    .group = "",
    .version = "v1",
    .kind = "ConfigMap",
    .plural = "configmaps",
    .namespaced = true,
};
static const struct proxy_resource deploy_res = {
    .group = "apps",
    .version = "v1",
    .kind = "Deployment",
    .plural = "deployments",
    .namespaced = true,
};
static const struct proxy_resource job_res = {
    .group = "batch",
    .version = "v1",
    .kind = "Job",
    .plural = "jobs",
    .namespaced = true,
};
static const struct proxy_resource cj_res = {
    .group = "batch",
    .version = "v1",
    .kind = "CronJob",
    .plural = "cronjobs",
    .namespaced = true,
};
static const struct proxy_resource role_res = {
    .group = "rbac.authorization.k8s.io",
    .version = "v1",
    .kind = "ClusterRole",
    .plural = "clusterroles",
};

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s (%s)", e.text, s);
	return j;
}

/* The cause with `field`, or NULL. */
static json_t *cause(const json_t *causes, const char *field)
{
	size_t i;
	json_t *c;
	json_array_foreach (causes, i, c) {
		const char *f = json_string_value(json_object_get(c, "field"));
		if (f && strcmp(f, field) == 0)
			return c;
	}
	return NULL;
}

static void want(const json_t *causes, const char *field, const char *reason, const char *msg)
{
	json_t *c = cause(causes, field);
	char *d = json_dumps(causes, 0);
	ck_assert_msg(c != NULL, "no cause for %s in %s", field, d);
	ck_assert_str_eq(json_string_value(json_object_get(c, "reason")), reason);
	if (msg)
		ck_assert_msg(strstr(json_string_value(json_object_get(c, "message")), msg),
			      "%s: message %s lacks '%s'", field,
			      json_string_value(json_object_get(c, "message")), msg);
	free(d);
}

/* Runs meta + kind validation, returns the causes (new reference). */
static json_t *run(const struct proxy_resource *r, const char *obj, const char *old)
{
	json_t *o = J(obj), *oo = old ? J(old) : NULL, *c = json_array();
	ck_assert_int_ge(val_object_meta(r, o, oo, c), 0);
	ck_assert_int_ge(val_object(r, o, oo, c), 0);
	json_decref(o);
	json_decref(oo);
	return c;
}

START_TEST(names)
{
	ck_assert_ptr_null(names_dns1123_subdomain("example.com"));
	ck_assert_ptr_null(names_dns1123_subdomain("a"));
	ck_assert_ptr_nonnull(names_dns1123_subdomain("Foo"));
	ck_assert_ptr_nonnull(names_dns1123_subdomain("a..b"));
	ck_assert_ptr_nonnull(names_dns1123_subdomain("-a"));
	ck_assert_ptr_nonnull(names_dns1123_subdomain(""));
	ck_assert_str_eq(names_dns1123_subdomain("Foo"),
			 "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
			 "characters, '-' or '.', and must start and end with an alphanumeric "
			 "character (e.g. 'example.com', regex used for validation is "
			 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
	char long_name[300];
	memset(long_name, 'a', 254);
	long_name[254] = '\0';
	ck_assert_str_eq(names_dns1123_subdomain(long_name), "must be no more than 253 characters");
	ck_assert_ptr_null(names_dns1123_label("my-name"));
	ck_assert_str_eq(names_dns1123_label("a.b"), "must not contain dots"); /* kube 1.30+ */
	ck_assert_str_eq(names_dns1123_label("a_b"),
			 "a lowercase RFC 1123 label must consist of lower case alphanumeric "
			 "characters or '-', and must start and end with an alphanumeric character "
			 "(e.g. 'my-name',  or '123-abc', regex used for validation is "
			 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
	long_name[64] = '\0';
	ck_assert_str_eq(names_dns1123_label(long_name), "must be no more than 63 characters");
	ck_assert_ptr_nonnull(names_dns1035_label("1abc"));
	ck_assert_ptr_null(names_dns1035_label("abc-1"));
	/* qualified names */
	ck_assert_ptr_null(names_qualified_name("app"));
	ck_assert_ptr_null(names_qualified_name("example.com/My_Name.x"));
	ck_assert_str_eq(names_qualified_name("/a"), "prefix part must be non-empty");
	ck_assert_ptr_nonnull(names_qualified_name("a/b/c"));
	ck_assert_ptr_nonnull(names_qualified_name("Example.com/a"));
	ck_assert_ptr_nonnull(names_qualified_name("a/"));
	ck_assert_ptr_nonnull(names_qualified_name("-a"));
	/* label values */
	ck_assert_ptr_null(names_label_value(""));
	ck_assert_ptr_null(names_label_value("My_Value-1.2"));
	ck_assert_ptr_nonnull(names_label_value("a b"));
	ck_assert_ptr_nonnull(names_label_value("_a"));
	/* path segments and config keys */
	ck_assert_ptr_null(names_path_segment("system:controller:x"));
	ck_assert_str_eq(names_path_segment(".."), "may not be '..'");
	ck_assert_str_eq(names_path_segment("a/b"), "may not contain '/'");
	ck_assert_ptr_null(names_config_key("KEY_name.1-x"));
	ck_assert_ptr_nonnull(names_config_key("a/b"));
	ck_assert_str_eq(names_config_key("..a"), "must not start with '..'");
}
END_TEST

START_TEST(causes_and_message)
{
	json_t *c = json_array();
	val_add(c, "FieldValueRequired", "spec.x", NULL);
	val_add(c, "FieldValueInvalid", "metadata.name", "\"%s\": %s", "Foo", "bad");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 0), "message")),
			 "Required value");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 1), "message")),
			 "Invalid value: \"Foo\": bad");
	char *m = val_status_message(&deploy_res, "web", c);
	ck_assert_str_eq(m, "Deployment.apps \"web\" is invalid: [spec.x: Required value, "
			    "metadata.name: Invalid value: \"Foo\": bad]");
	free(m);
	json_array_remove(c, 1);
	m = val_status_message(&pod_res, "p", c);
	ck_assert_str_eq(m, "Pod \"p\" is invalid: spec.x: Required value");
	free(m);
	json_decref(c);
}
END_TEST

START_TEST(meta_rules)
{
	json_t *c =
	    run(&pod_res,
		"{\"metadata\":{\"name\":\"Foo\",\"namespace\":\"default\","
		"\"labels\":{\"-bad\":\"ok\",\"good\":\"bad value\"},"
		"\"finalizers\":[\"example.com/ok\",\"a/b/c\"],"
		"\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"X\",\"name\":\"x\"}]},"
		"\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
		NULL);
	want(c, "metadata.name", "FieldValueInvalid",
	     "Invalid value: \"Foo\": a lowercase RFC 1123 subdomain");
	want(c, "metadata.labels", "FieldValueInvalid", NULL);
	want(c, "metadata.finalizers", "FieldValueInvalid", "\"a/b/c\"");
	want(c, "metadata.ownerReferences.uid", "FieldValueInvalid", "uid must not be empty");
	json_decref(c);

	c = run(&pod_res,
		"{\"metadata\":{},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
		NULL);
	want(c, "metadata.name", "FieldValueRequired",
	     "Required value: name or generateName is required");
	want(c, "metadata.namespace", "FieldValueRequired", NULL);
	json_decref(c);

	/* namespace names are DNS labels; cluster-scoped kinds refuse a namespace */
	c = run(&ns_res, "{\"metadata\":{\"name\":\"a.b\",\"namespace\":\"x\"}}", NULL);
	want(c, "metadata.name", "FieldValueInvalid", "must not contain dots");
	want(c, "metadata.namespace", "FieldValueForbidden", "not allowed on this type");
	json_decref(c);

	/* RBAC names are path segments */
	c = run(&role_res, "{\"metadata\":{\"name\":\"system:aggregate-to-view\"}}", NULL);
	ck_assert_int_eq(json_array_size(c), 0);
	json_decref(c);

	/* update: immutable name/uid */
	c = run(&ns_res, "{\"metadata\":{\"name\":\"a\",\"uid\":\"2\"}}",
		"{\"metadata\":{\"name\":\"a\",\"uid\":\"1\"}}");
	want(c, "metadata.uid", "FieldValueInvalid", "Invalid value: \"2\": field is immutable");
	json_decref(c);
}
END_TEST

#define POD_META "\"metadata\":{\"name\":\"p\",\"namespace\":\"default\"}"

START_TEST(pod_rules)
{
	json_t *c =
	    run(&pod_res, "{" POD_META ",\"spec\":{\"containers\":[{\"name\":\"c\"}]}}", NULL);
	want(c, "spec.containers[0].image", "FieldValueRequired", "Required value");
	json_decref(c);

	c = run(
	    &pod_res,
	    "{" POD_META ",\"spec\":{\"initContainers\":[{\"name\":\"c\",\"image\":\"i\"}],"
	    "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"ports\":[{\"containerPort\":70000},"
	    "{\"containerPort\":80,\"protocol\":\"HTTP\"}],"
	    "\"env\":[{\"value\":\"x\"},{\"name\":\"A=B\"}],"
	    "\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"1Gi\"},"
	    "\"limits\":{\"cpu\":\"1500m\",\"memory\":\"1024Mi\"}}}],"
	    "\"restartPolicy\":\"Sometimes\"}}",
	    NULL);
	want(c, "spec.containers[0].name", "FieldValueDuplicate", "Duplicate value: \"c\"");
	want(c, "spec.containers[0].ports[0].containerPort", "FieldValueInvalid",
	     "Invalid value: 70000: must be between 1 and 65535, inclusive");
	want(c, "spec.containers[0].ports[1].protocol", "FieldValueNotSupported",
	     "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"");
	want(c, "spec.containers[0].env[0].name", "FieldValueRequired", NULL);
	want(c, "spec.containers[0].env[1].name", "FieldValueInvalid", "other than '='");
	want(c, "spec.containers[0].resources.requests", "FieldValueInvalid",
	     "Invalid value: \"2\": must be less than or equal to cpu limit of 1500m");
	ck_assert_ptr_null(cause(c, "spec.containers[0].resources.requests[memory]"));
	want(c, "spec.restartPolicy", "FieldValueNotSupported",
	     "supported values: \"Always\", \"OnFailure\", \"Never\"");
	json_decref(c);

	c = run(&pod_res, "{" POD_META ",\"spec\":{}}", NULL);
	want(c, "spec.containers", "FieldValueRequired", NULL);
	json_decref(c);
}
END_TEST

/* Every cause of a pod spec names its field under the spec's path, whatever
 * the path (an empty one leaves no leading dot; a long one is cut where
 * val_path cuts it): validation writes a field's path only once it has a
 * cause, from the container's place and the field. The causes are those
 * kube-apiserver gives for this spec in a PodTemplate (template.spec). */
static const char pod_spec_bad[] =
    "{\"initContainers\":[{\"name\":\"\",\"image\":\" i\",\"env\":[{\"value\":\"x\"},{\"n"
    "ame\":\"A=B\"},{\"name\":\"F\",\"valueFrom\":{}},{\"name\":\"G\",\"valueFrom\":{\"fi"
    "eldRef\":{\"apiVersion\":\"v2\",\"fieldPath\":\"metadata.name\"}}},{\"name\":\"H\","
    "\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"spec.x['a']\"}}},"
    "{\"name\":\"I\",\"value\":\"v\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\","
    "\"fieldPath\":\"metadata.foo\"}}},{\"name\":\"J\",\"valueFrom\":{\"fieldRef\":{\"api"
    "Version\":\"v1\",\"fieldPath\":\"metadata.labels\"},\"secretKeyRef\":{\"name\":\"s\""
    ",\"key\":\"k\"}}},{\"name\":\"K\",\"value\":\"v\",\"valueFrom\":{\"fieldRef\":{\"api"
    "Version\":\"v1\",\"fieldPath\":\"metadata.name\"}}},{\"name\":\"L\",\"valueFrom\":{"
    "\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.uid\"},\"configMapKeyRe"
    "f\":{\"name\":\"c\",\"key\":\"k\"}}},{\"name\":\"M\",\"valueFrom\":{\"fieldRef\":{\""
    "apiVersion\":\"v1\",\"fieldPath\":\"spec.nodeName\"}}}],\"ports\":[{\"name\":\"Bad_N"
    "\",\"containerPort\":0,\"hostPort\":70000,\"protocol\":\"X\"},{\"name\":\"Bad_N\",\""
    "containerPort\":1}],\"resources\":{\"limits\":{\"cpu\":\"x\",\"nvidia.com/gpu\":\"1"
    "\"},\"requests\":{\"memory\":\"-1\",\"cpu\":\"1\",\"example.com/a\":\"1\",\"nvidia.c"
    "om/gpu\":\"2\"}}}],\"containers\":[{\"name\":\"Up\",\"image\":\"\"},{\"name\":\"c\","
    "\"image\":\"i\"},{\"name\":\"c\",\"image\":\"i \",\"resources\":{\"requests\":{\"cpu"
    "\":\"2\"},\"limits\":{\"cpu\":\"1\"}}}],\"ephemeralContainers\":[{\"name\":\"c\",\"i"
    "mage\":\"i\"}],\"overhead\":{\"cpu\":\"y\"},\"volumes\":[{\"name\":\"v\",\"downwardA"
    "PI\":{\"items\":[{\"path\":\"p\",\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":"
    "\"status.podIP\"}}]}},{\"name\":\"w\",\"projected\":{\"sources\":[{\"downwardAPI\":{"
    "\"items\":[{\"path\":\"p\",\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"spec."
    "nodeName\"}}]}}]}}],\"restartPolicy\":\"Sometimes\",\"activeDeadlineSeconds\":0}";

START_TEST(pod_spec_cause_paths)
{
	static const struct {
		const char *field, *reason;
	} want_causes[] = {
	    {".initContainers[0].name", "FieldValueRequired"},
	    {".initContainers[0].image", "FieldValueInvalid"},
	    {".initContainers[0].env[0].name", "FieldValueRequired"},
	    {".initContainers[0].env[1].name", "FieldValueInvalid"},
	    {".initContainers[0].env[2].valueFrom", "FieldValueInvalid"},
	    {".initContainers[0].env[3].valueFrom.fieldRef.fieldPath", "FieldValueInvalid"},
	    {".initContainers[0].env[4].valueFrom.fieldRef.fieldPath", "FieldValueInvalid"},
	    {".initContainers[0].env[5].valueFrom.fieldRef.fieldPath", "FieldValueInvalid"},
	    {".initContainers[0].env[5].valueFrom", "FieldValueInvalid"},
	    {".initContainers[0].env[6].valueFrom.fieldRef.fieldPath", "FieldValueNotSupported"},
	    {".initContainers[0].env[6].valueFrom", "FieldValueInvalid"},
	    {".initContainers[0].env[7].valueFrom", "FieldValueInvalid"},
	    {".initContainers[0].env[8].valueFrom", "FieldValueInvalid"},
	    {".initContainers[0].ports[0].name", "FieldValueInvalid"},
	    {".initContainers[0].ports[0].containerPort", "FieldValueRequired"},
	    {".initContainers[0].ports[0].hostPort", "FieldValueInvalid"},
	    {".initContainers[0].ports[0].protocol", "FieldValueNotSupported"},
	    {".initContainers[0].ports[1].name", "FieldValueInvalid"},
	    {".initContainers[0].ports[1].name", "FieldValueDuplicate"},
	    {".initContainers[0].resources.limits[cpu]", "FieldValueInvalid"},
	    {".initContainers[0].resources.requests[memory]", "FieldValueInvalid"},
	    {".initContainers[0].resources.limits", "FieldValueRequired"},
	    {".initContainers[0].resources.requests", "FieldValueInvalid"},
	    {".containers[0].name", "FieldValueInvalid"},
	    {".containers[0].image", "FieldValueRequired"},
	    {".containers[2].name", "FieldValueDuplicate"},
	    {".containers[2].image", "FieldValueInvalid"},
	    {".containers[2].resources.requests", "FieldValueInvalid"},
	    {".ephemeralContainers[0].name", "FieldValueDuplicate"},
	    {".overhead[cpu]", "FieldValueInvalid"},
	    {".volumes[0].downwardAPI.items[0].fieldRef.fieldPath", "FieldValueNotSupported"},
	    {".volumes[1].projected.sources[0].downwardAPI.items[0].fieldRef.fieldPath",
	     "FieldValueNotSupported"},
	    {".restartPolicy", "FieldValueNotSupported"},
	    {".activeDeadlineSeconds", "FieldValueInvalid"},
	};
	char big[VAL_PATHLEN + 20], f[VAL_PATHLEN];
	memset(big, 's', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	const char *bases[] = {"", "template.spec", "spec.template.spec", big + 20, big};
	json_t *spec = J(pod_spec_bad), *first = NULL;
	for (size_t p = 0; p < sizeof(bases) / sizeof(bases[0]); p++) {
		json_t *c = json_array();
		size_t n = sizeof(want_causes) / sizeof(want_causes[0]);
		ck_assert_int_eq(val_pod_spec(spec, bases[p], c), (int)n);
		for (size_t i = 0; i < n; i++) {
			const json_t *got = json_array_get(c, i);
			val_path(f, "%s%s", bases[p], want_causes[i].field);
			ck_assert_str_eq(json_string_value(json_object_get(got, "field")), f);
			ck_assert_str_eq(json_string_value(json_object_get(got, "reason")),
					 want_causes[i].reason);
			if (first) /* the messages do not depend on the path */
				ck_assert_str_eq(json_string_value(json_object_get(got, "message")),
						 json_string_value(json_object_get(
						     json_array_get(first, i), "message")));
		}
		if (first)
			json_decref(c);
		else
			first = c;
	}
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(first, 0), "field")),
			 "initContainers[0].name");
	json_decref(first);
	json_decref(spec);
}
END_TEST

/* kube's validateResourceRequirements and validatePodResourceName: an
 * extended resource (GPUs included) or hugepages may not be overcommitted,
 * extended resources are whole, a pod's own spec.resources takes no GPU. */
START_TEST(pod_extended_resources)
{
	json_t *c = run(
	    &pod_res,
	    "{" POD_META ",\"spec\":{\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"1\","
	    "\"cpu\":\"1\"}},\"overhead\":{\"amd.com/gpu\":\"0.5\"},"
	    "\"initContainers\":[{\"name\":\"i\",\"image\":\"i\",\"restartPolicy\":\"Always\","
	    "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"4\"}}}],"
	    "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{"
	    "\"requests\":{\"nvidia.com/gpu\":\"2\",\"cpu\":\"100m\"},"
	    "\"limits\":{\"nvidia.com/gpu\":\"4\",\"cpu\":\"1\"}}},"
	    "{\"name\":\"d\",\"image\":\"i\",\"resources\":{\"limits\":{\"habana.ai/gaudi\":"
	    "\"500m\"}}},"
	    "{\"name\":\"e\",\"image\":\"i\",\"resources\":{\"requests\":{\"hugepages-2Mi\":"
	    "\"2Mi\",\"nvidia.com/gpu\":\"1\"},\"limits\":{\"hugepages-2Mi\":\"4Mi\",\"nvidia.com/"
	    "gpu\":\"1.0\"}}}]}}",
	    NULL);
	want(c, "spec.containers[0].resources.requests", "FieldValueInvalid",
	     "Invalid value: \"2\": must be equal to nvidia.com/gpu limit of 4");
	want(c, "spec.initContainers[0].resources.limits", "FieldValueRequired",
	     "Required value: Limit must be set for non overcommitable resources");
	want(c, "spec.containers[1].resources.limits[habana.ai/gaudi]", "FieldValueInvalid",
	     "Invalid value: \"500m\": must be an integer");
	want(c, "spec.containers[2].resources.requests", "FieldValueInvalid",
	     "Invalid value: \"2Mi\": must be equal to hugepages-2Mi limit of 4Mi");
	want(c, "spec.resources.requests[nvidia.com/gpu]", "FieldValueNotSupported",
	     "Unsupported value: \"nvidia.com/gpu\": supported values: \"cpu\", \"hugepages-\", "
	     "\"memory\"");
	want(c, "spec.overhead[amd.com/gpu]", "FieldValueInvalid", "must be an integer");
	ck_assert_ptr_null(cause(c, "spec.resources.requests[cpu]"));
	/* equal amounts, written differently, pass; cpu may be overcommitted */
	ck_assert_uint_eq(json_array_size(c), 6);
	json_decref(c);
}
END_TEST

/* A request above its limit is found however many resources a container
 * lists (the values read for the lists' checks are kept for 16 of them, the
 * rest read again). */
START_TEST(pod_many_resources)
{
	char lim[1024] = "", req[1024] = "", obj[2600];
	for (int i = 0; i < 12; i++) {
		char one[80];
		snprintf(one, sizeof(one), "%s\"example.com/r%d\":\"%d\"", i ? "," : "", i, i + 1);
		strcat(lim, one);
		snprintf(one, sizeof(one), "%s\"example.com/r%d\":\"%d\"", i ? "," : "", i,
			 i == 1 || i == 11 ? i + 2 : i + 1);
		strcat(req, one);
	}
	snprintf(obj, sizeof(obj),
		 "{" POD_META ",\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\","
		 "\"resources\":{\"limits\":{%s},\"requests\":{%s}}}]}}",
		 lim, req);
	json_t *c = run(&pod_res, obj, NULL);
	ck_assert_uint_eq(json_array_size(c), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 0), "message")),
			 "Invalid value: \"3\": must be equal to example.com/r1 limit of 2");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 1), "message")),
			 "Invalid value: \"13\": must be equal to example.com/r11 limit of 12");
	want(c, "spec.containers[0].resources.requests", "FieldValueInvalid", NULL);
	json_decref(c);
}
END_TEST

/* kube's podStrategy.PrepareForCreate: a new pod's status is the
 * server's, whatever the client sent (a pod created "Succeeded" would count
 * for nothing in a quota while the host runs it). */
START_TEST(pod_create_status)
{
	json_t *o = J("{" POD_META ",\"spec\":{\"containers\":[{\"name\":\"c\"}]},"
		      "\"status\":{\"phase\":\"Succeeded\",\"reason\":\"x\"}}");
	obj_init_create(&pod_res, o, 0);
	ck_assert_int_eq(json_object_size(json_object_get(o, "status")), 0);
	json_decref(o);
}
END_TEST

START_TEST(pod_update)
{
	const char *old =
	    "{" POD_META ",\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i:1\","
	    "\"command\":[\"sleep\"]}],\"tolerations\":[{\"key\":\"a\"}]}}";
	/* image change and toleration addition are allowed */
	json_t *c = run(&pod_res,
			"{" POD_META ",\"spec\":{\"containers\":[{\"name\":\"c\","
			"\"image\":\"i:2\",\"command\":[\"sleep\"]}],"
			"\"tolerations\":[{\"key\":\"a\"},{\"key\":\"b\"}]}}",
			old);
	ck_assert_int_eq(json_array_size(c), 0);
	json_decref(c);
	/* command change is forbidden */
	c = run(&pod_res,
		"{" POD_META ",\"spec\":{\"containers\":[{\"name\":\"c\","
		"\"image\":\"i:1\",\"command\":[\"true\"]}],\"tolerations\":[{\"key\":\"a\"}]}}",
		old);
	want(c, "spec", "FieldValueForbidden",
	     "Forbidden: pod updates may not change fields "
	     "other than `spec.containers[*].image`");
	json_decref(c);
	/* removing a toleration is forbidden */
	c = run(&pod_res,
		"{" POD_META ",\"spec\":{\"containers\":[{\"name\":\"c\","
		"\"image\":\"i:1\",\"command\":[\"sleep\"]}]}}",
		old);
	want(c, "spec", "FieldValueForbidden", NULL);
	json_decref(c);
}
END_TEST

#define SVC_META "\"metadata\":{\"name\":\"s\",\"namespace\":\"default\"}"

START_TEST(service_rules)
{
	json_t *c =
	    run(&svc_res,
		"{" SVC_META ",\"spec\":{\"type\":\"Weird\",\"ports\":["
		"{\"name\":\"a\",\"port\":0},{\"port\":70000},{\"name\":\"a\",\"port\":80}]}}",
		NULL);
	want(c, "spec.type", "FieldValueNotSupported",
	     "supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"");
	want(c, "spec.ports[0].port", "FieldValueInvalid",
	     "Invalid value: 0: must be between 1 and 65535, inclusive");
	want(c, "spec.ports[1].port", "FieldValueInvalid", "70000");
	want(c, "spec.ports[1].name", "FieldValueRequired", NULL);
	want(c, "spec.ports[2].name", "FieldValueDuplicate", NULL);
	json_decref(c);
	c = run(&svc_res, "{" SVC_META ",\"spec\":{\"ports\":[{\"port\":80}]}}", NULL);
	ck_assert_int_eq(json_array_size(c), 0);
	json_decref(c);
	/* service names are DNS-1035 labels */
	c = run(&svc_res,
		"{\"metadata\":{\"name\":\"1svc\",\"namespace\":\"d\"},"
		"\"spec\":{\"ports\":[{\"port\":80}]}}",
		NULL);
	want(c, "metadata.name", "FieldValueInvalid", "DNS-1035");
	json_decref(c);
	c = run(&svc_res,
		"{" SVC_META ",\"spec\":{\"clusterIP\":\"10.0.0.2\",\"clusterIPs\":[\"10.0.0.1\"],"
		"\"ports\":[{\"port\":80}]}}",
		"{" SVC_META ",\"spec\":{\"clusterIP\":\"10.0.0.1\",\"clusterIPs\":[\"10.0.0.1\"],"
		"\"ports\":[{\"port\":80}]}}");
	/* kube's NormalizeClusterIPs then validateUpgradeDowngradeClusterIPs */
	want(c, "spec.clusterIPs[0]", "FieldValueInvalid",
	     "Invalid value: []string{\"10.0.0.2\"}: may not change once set");
	json_decref(c);
}
END_TEST

START_TEST(secret_configmap_rules)
{
	json_t *c = run(&secret_res,
			"{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"},"
			"\"data\":{\"ok\":\"aGVsbG8=\",\"bad\":\"!!!notbase64\",\"a/b\":\"eA==\"}}",
			NULL);
	want(c, "data[bad]", "FieldValueInvalid", NULL);
	want(c, "data[a/b]", "FieldValueInvalid", "a valid config key");
	ck_assert_ptr_null(cause(c, "data[ok]"));
	json_decref(c);
	c = run(&secret_res,
		"{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"},"
		"\"type\":\"kubernetes.io/tls\",\"data\":{\"tls.crt\":\"eA==\"}}",
		NULL);
	want(c, "data[tls.key]", "FieldValueRequired", NULL);
	json_decref(c);
	c = run(&secret_res, "{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"},\"type\":\"b\"}",
		"{\"metadata\":{\"name\":\"s\",\"namespace\":\"d\"},\"type\":\"a\"}");
	want(c, "type", "FieldValueInvalid", "field is immutable");
	json_decref(c);
	c = run(&cm_res,
		"{\"metadata\":{\"name\":\"c\",\"namespace\":\"d\"},\"immutable\":true,"
		"\"data\":{\"k\":\"2\"}}",
		"{\"metadata\":{\"name\":\"c\",\"namespace\":\"d\"},\"immutable\":true,"
		"\"data\":{\"k\":\"1\"}}");
	want(c, "data", "FieldValueForbidden", "field is immutable when `immutable` is set");
	json_decref(c);
}
END_TEST

#define DEP_META "\"metadata\":{\"name\":\"web\",\"namespace\":\"default\"}"
#define DEP_TMPL                                                     \
	"\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}}," \
	"\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}"

START_TEST(deployment_rules)
{
	json_t *c = run(&deploy_res,
			"{" DEP_META ",\"spec\":{\"replicas\":-1,"
			"\"selector\":{\"matchLabels\":{\"app\":\"api\"}}," DEP_TMPL "}}",
			NULL);
	want(c, "spec.template.metadata.labels", "FieldValueInvalid",
	     "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match "
	     "template `labels`");
	want(c, "spec.replicas", "FieldValueInvalid", "-1: must be greater than or equal to 0");
	json_decref(c);
	c = run(&deploy_res, "{" DEP_META ",\"spec\":{" DEP_TMPL "}}", NULL);
	want(c, "spec.selector", "FieldValueRequired", NULL);
	json_decref(c);
	c = run(&deploy_res, "{" DEP_META ",\"spec\":{\"selector\":{}," DEP_TMPL "}}", NULL);
	want(c, "spec.selector", "FieldValueInvalid", "empty selector is invalid for deployment");
	json_decref(c);
	const char *ok =
	    "{" DEP_META ",\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"web\"}}," DEP_TMPL
	    "}}";
	c = run(&deploy_res, ok, NULL);
	ck_assert_int_eq(json_array_size(c), 0);
	json_decref(c);
	c = run(
	    &deploy_res,
	    "{" DEP_META ",\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"web\","
	    "\"x\":\"y\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\",\"x\":\"y\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}}}",
	    ok);
	want(c, "spec.selector", "FieldValueInvalid", "field is immutable");
	json_decref(c);
	/* template restartPolicy must be Always */
	c = run(
	    &deploy_res,
	    "{" DEP_META ",\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
	    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"restartPolicy\":"
	    "\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}}}",
	    NULL);
	want(c, "spec.template.spec.restartPolicy", "FieldValueNotSupported",
	     "Unsupported value: \"Never\": supported values: \"Always\"");
	json_decref(c);
}
END_TEST

START_TEST(job_cronjob_rules)
{
	json_t *c =
	    run(&job_res,
		"{\"metadata\":{\"name\":\"j\",\"namespace\":\"d\"},\"spec\":{"
		"\"parallelism\":-1,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
		"\"image\":\"i\"}]}}}}",
		NULL);
	want(c, "spec.template.spec.restartPolicy", "FieldValueRequired",
	     "Required value: valid values: \"OnFailure\", \"Never\"");
	want(c, "spec.parallelism", "FieldValueInvalid", NULL);
	json_decref(c);
	const char *jt = "\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{\"restartPolicy\":"
			 "\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}";
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"cj\",\"namespace\":\"d\"},"
		 "\"spec\":{\"schedule\":\"*/5 * * * *\",%s}}",
		 jt);
	c = run(&cj_res, buf, NULL);
	ck_assert_int_eq(json_array_size(c), 0);
	json_decref(c);
	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"cj\",\"namespace\":\"d\"},"
		 "\"spec\":{\"schedule\":\"61 * * * *\",%s}}",
		 jt);
	c = run(&cj_res, buf, NULL);
	want(c, "spec.schedule", "FieldValueInvalid", "end of range (61) above maximum (59): 61");
	json_decref(c);
	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"cj\",\"namespace\":\"d\"},"
		 "\"spec\":{\"schedule\":\"TZ=UTC 0 * * * *\",%s}}",
		 jt);
	c = run(&cj_res, buf, NULL);
	want(c, "spec.schedule", "FieldValueInvalid", "cannot use TZ or CRON_TZ in schedule");
	json_decref(c);
	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"cj\",\"namespace\":\"d\"},"
		 "\"spec\":{%s}}",
		 jt);
	c = run(&cj_res, buf, NULL);
	want(c, "spec.schedule", "FieldValueRequired", NULL);
	json_decref(c);
}
END_TEST

START_TEST(cron)
{
	char b[256];
	ck_assert_ptr_null(val_cron_schedule("0 0 * * *", b, sizeof(b)));
	ck_assert_ptr_null(val_cron_schedule("*/15 1-5 1,15 jan-mar MON-FRI", b, sizeof(b)));
	ck_assert_ptr_null(val_cron_schedule("@hourly", b, sizeof(b)));
	ck_assert_ptr_null(val_cron_schedule("@every 1h30m", b, sizeof(b)));
	ck_assert_str_eq(val_cron_schedule("* * *", b, sizeof(b)),
			 "expected exactly 5 fields, found 3: [* * *]");
	ck_assert_str_eq(val_cron_schedule("@often", b, sizeof(b)),
			 "unrecognized descriptor: @often");
	ck_assert_ptr_nonnull(val_cron_schedule("0 24 * * *", b, sizeof(b)));
	ck_assert_ptr_nonnull(val_cron_schedule("0 0 0 * *", b, sizeof(b)));
	ck_assert_ptr_nonnull(val_cron_schedule("x * * * *", b, sizeof(b)));
	ck_assert_ptr_nonnull(val_cron_schedule("5-1 * * * *", b, sizeof(b)));
}
END_TEST

START_TEST(quantities)
{
	int64_t m;
	ck_assert_int_eq(val_quantity_milli("250m", &m), 0);
	ck_assert_int_eq(m, 250);
	ck_assert_int_eq(val_quantity_milli("1", &m), 0);
	ck_assert_int_eq(m, 1000);
}
END_TEST

/* kube's ValidatePersistentVolume: one volume source, modes, capacity */
START_TEST(pv_rules)
{
	json_t *c = run(&pv_res,
			"{\"metadata\":{\"name\":\"v1\"},\"spec\":{\"capacity\":{\"storage\":"
			"\"1Gi\"},\"accessModes\":[\"ReadWriteOnce\"],\"hostPath\":{\"path\":"
			"\"/d\"}}}",
			NULL);
	ck_assert_int_eq(json_array_size(c), 0);
	json_decref(c);
	c = run(&pv_res, "{\"metadata\":{\"name\":\"v1\"},\"spec\":{}}", NULL);
	want(c, "spec.accessModes", "FieldValueRequired", NULL);
	want(c, "spec.capacity", "FieldValueRequired", NULL);
	want(c, "spec", "FieldValueRequired", "must specify a volume type");
	json_decref(c);
	c = run(&pv_res,
		"{\"metadata\":{\"name\":\"v1\"},\"spec\":{\"capacity\":{\"storage\":0},"
		"\"accessModes\":[\"ReadWriteOncePod\",\"ReadWriteOnce\"],\"csi\":{},\"nfs\":"
		"{\"server\":\"s\",\"path\":\"/x\"},\"persistentVolumeReclaimPolicy\":\"Keep\"}}",
		NULL);
	want(c, "spec.capacity[storage]", "FieldValueInvalid", "must be greater than zero");
	want(c, "spec.accessModes", "FieldValueForbidden", "ReadWriteOncePod with other");
	/* kube reads nfs before csi: the second one is the Forbidden one */
	want(c, "spec.csi", "FieldValueForbidden", "may not specify more than 1 volume type");
	want(c, "spec.persistentVolumeReclaimPolicy", "FieldValueNotSupported",
	     "supported values: \"Delete\", \"Recycle\", \"Retain\"");
	json_decref(c);
	c = run(&pv_res,
		"{\"metadata\":{\"name\":\"v1\"},\"spec\":{\"capacity\":{\"storage\":\"1\"},"
		"\"accessModes\":[\"ReadWriteOnce\"],\"csi\":{}}}",
		NULL);
	want(c, "spec.csi.driver", "FieldValueRequired", NULL);
	want(c, "spec.csi.volumeHandle", "FieldValueRequired", NULL);
	json_decref(c);
	c = run(&pv_res,
		"{\"metadata\":{\"name\":\"v1\"},\"spec\":{\"capacity\":{\"storage\":\"1Gi\"},"
		"\"accessModes\":[\"ReadWriteOnce\"],\"hostPath\":{\"path\":\"/e\"},"
		"\"volumeMode\":\"Block\"}}",
		"{\"metadata\":{\"name\":\"v1\"},\"spec\":{\"capacity\":{\"storage\":\"1Gi\"},"
		"\"accessModes\":[\"ReadWriteOnce\"],\"hostPath\":{\"path\":\"/d\"},"
		"\"volumeMode\":\"Filesystem\"}}");
	want(c, "spec.persistentvolumesource", "FieldValueForbidden", "immutable after creation");
	want(c, "volumeMode", "FieldValueInvalid", "field is immutable");
	json_decref(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/validate");
	TCase *tc = tcase_create("names");
	tcase_add_test(tc, names);
	tcase_add_test(tc, causes_and_message);
	tcase_add_test(tc, quantities);
	tcase_add_test(tc, paths);
	tcase_add_test(tc, cron);
	suite_add_tcase(s, tc);
	tc = tcase_create("objects");
	tcase_add_test(tc, meta_rules);
	tcase_add_test(tc, pod_rules);
	tcase_add_test(tc, pod_update);
	tcase_add_test(tc, pod_extended_resources);
	tcase_add_test(tc, pod_spec_cause_paths);
	tcase_add_test(tc, pod_many_resources);
	tcase_add_test(tc, pod_create_status);
	tcase_add_test(tc, service_rules);
	tcase_add_test(tc, pv_rules);
	tcase_add_test(tc, secret_configmap_rules);
	tcase_add_test(tc, deployment_rules);
	tcase_add_test(tc, job_cronjob_rules);
	suite_add_tcase(s, tc);
	return s;
}
