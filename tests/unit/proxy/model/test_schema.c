/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of proxy/schema: unknown fields (kube's strict decoding) and JSON
 * type errors, checked against the Kubernetes 1.33 message tables.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "proxy/model/schema.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	ck_assert_msg(v != NULL, "bad test JSON: %s", e.text);
	return v;
}

/* Unknown paths of obj as one sorted, comma-joined string. */
static void unknown_eq(const char *msg, const char *obj_text, const char *want)
{
	json_t *obj = J(obj_text), *paths = json_array();
	char got[1024] = "";
	size_t i;
	json_t *p;

	int n = schema_unknown_fields(msg, obj, paths);
	ck_assert_int_eq(n, (int)json_array_size(paths));
	json_array_foreach (paths, i, p) {
		if (i)
			strcat(got, ",");
		strcat(got, json_string_value(p));
	}
	ck_assert_str_eq(got, want);
	json_decref(obj);
	json_decref(paths);
}

/* A path longer than 1023 bytes is cut there; the paths after it, back
 * at a shorter prefix, are whole again. */
START_TEST(unknown_long_path)
{
	char key[1100], text[1300], want[1024];
	json_t *paths = json_array(), *obj;

	memset(key, 'x', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	snprintf(text, sizeof(text),
		 "{\"spec\":{\"containers\":[{\"%s\":{\"deeper\":1}}],\"b\":1}}", key);
	obj = J(text);
	ck_assert_int_eq(schema_unknown_fields("k8s.io.api.core.v1.Pod", obj, paths), 2);
	strcpy(want, "spec.containers[0].");
	memcpy(want + strlen(want), key, sizeof(want) - 1 - strlen(want));
	want[sizeof(want) - 1] = '\0';
	ck_assert_str_eq(json_string_value(json_array_get(paths, 0)), want);
	ck_assert_str_eq(json_string_value(json_array_get(paths, 1)), "spec.b");
	json_decref(obj);
	json_decref(paths);
}
END_TEST

START_TEST(unknown_pod)
{
	const char *pod = "k8s.io.api.core.v1.Pod";
	unknown_eq(pod,
		   "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
		   "\"labels\":{\"any-key\":\"v\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
		   "\"image\":\"i\"}]}}",
		   "");
	unknown_eq(pod, "{\"spec\":{\"foo\":1,\"containers\":[]}}", "spec.foo");
	unknown_eq(pod,
		   "{\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\",\"bar\":true,"
		   "\"ports\":[{\"containerPort\":80,\"hostprt\":1}]}]}}",
		   "spec.containers[1].bar,spec.containers[1].ports[0].hostprt");
	unknown_eq(pod, "{\"metadata\":{\"nme\":\"x\"},\"extra\":{}}", "metadata.nme,extra");
	/* apiVersion/kind are only allowed at the top */
	unknown_eq(pod, "{\"spec\":{\"kind\":\"x\"}}", "spec.kind");
	/* map of Quantity: keys are free, values are not descended */
	unknown_eq(pod,
		   "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
		   "{\"cpu\":\"1\",\"example.com/gpu\":2},\"requests\":{\"memory\":\"1Gi\"}}}]}}",
		   "");
	/* IntOrString, Time, FieldsV1 are leaves */
	unknown_eq(
	    pod,
	    "{\"metadata\":{\"creationTimestamp\":\"2025-01-01T00:00:00Z\","
	    "\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{\"f:spec\":{\"f:x\":{}}}}]},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"livenessProbe\":{\"httpGet\":"
	    "{\"port\":\"http\",\"pth\":\"/\"}}}]}}",
	    "spec.containers[0].livenessProbe.httpGet.pth");
	/* inline structs: VolumeSource in Volume, LocalObjectReference in
	 * ConfigMapVolumeSource, ProbeHandler in Probe */
	unknown_eq(pod,
		   "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"cm\","
		   "\"items\":[]}},{\"name\":\"w\",\"volumeSource\":{}}],\"containers\":[{"
		   "\"name\":\"c\",\"readinessProbe\":{\"exec\":{\"command\":[\"true\"]}}}]}}",
		   "spec.volumes[1].volumeSource");
	/* a wrong shape is a type error, not an unknown field */
	unknown_eq(pod, "{\"spec\":{\"containers\":{\"name\":\"c\",\"zz\":1}}}", "");
}
END_TEST

START_TEST(unknown_other)
{
	/* RawExtension content is not descended */
	unknown_eq("k8s.io.api.apps.v1.ControllerRevision",
		   "{\"data\":{\"anything\":{\"goes\":[1]}},\"revision\":1,\"rev\":2}", "rev");
	/* a map whose values are messages */
	unknown_eq("k8s.io.api.resource.v1beta1.CounterSet",
		   "{\"name\":\"n\",\"counters\":{\"gpu\":{\"value\":\"1\",\"bogus\":1}}}",
		   "counters[gpu].bogus");
	/* JSON names that differ from proto names */
	unknown_eq("k8s.io.api.admissionregistration.v1.ValidatingWebhookConfiguration",
		   "{\"webhooks\":[{\"name\":\"w\"}],\"Webhooks\":[]}", "Webhooks");
	json_t *a = json_array(), *o = json_object();
	ck_assert_int_eq(schema_unknown_fields("no.such.Kind", o, a), -ENOENT);
	ck_assert_int_eq(schema_unknown_fields("k8s.io.api.core.v1.Pod", a, a), -EINVAL);
	ck_assert_int_eq(schema_unknown_fields("k8s.io.api.core.v1.Pod", o, o), -EINVAL);
	json_decref(a);
	json_decref(o);
}
END_TEST

/* Checks that obj has exactly the type errors at `fields` (comma-joined),
 * and that the first message mentions `type`. */
static void types_eq(const char *msg, const char *obj_text, const char *fields, const char *type)
{
	json_t *obj = J(obj_text), *errs = json_array();
	char got[1024] = "";
	size_t i;
	json_t *e;

	int n = schema_check_types(msg, obj, errs);
	ck_assert_int_eq(n, (int)json_array_size(errs));
	json_array_foreach (errs, i, e) {
		if (i)
			strcat(got, ",");
		strcat(got, json_string_value(json_object_get(e, "field")));
	}
	ck_assert_str_eq(got, fields);
	if (type) {
		const char *m =
		    json_string_value(json_object_get(json_array_get(errs, 0), "message"));
		ck_assert_msg(strstr(m, type) != NULL, "'%s' lacks '%s'", m, type);
		ck_assert_ptr_nonnull(strstr(m, "cannot unmarshal"));
	}
	json_decref(obj);
	json_decref(errs);
}

START_TEST(types_deployment)
{
	const char *d = "k8s.io.api.apps.v1.Deployment";
	types_eq(
	    d,
	    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","
	    "\"generation\":3,\"labels\":{\"a\":\"b\"}},\"spec\":{\"replicas\":2,\"paused\":false,"
	    "\"selector\":null,\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"resources\":{\"limits\":{\"cpu\":0.5,\"memory\":\"1Gi\"}}}]}}}}",
	    "", NULL);
	types_eq(d, "{\"spec\":{\"replicas\":\"3\"}}", "spec.replicas",
		 "Go struct field DeploymentSpec.spec.replicas of type int32");
	/* Go refuses non-integral numbers, 3.0 included, and out-of-range ones */
	types_eq(d, "{\"spec\":{\"replicas\":1.5}}", "spec.replicas", "number");
	types_eq(d, "{\"spec\":{\"replicas\":3.0}}", "spec.replicas", "int32");
	types_eq(d, "{\"spec\":{\"replicas\":3000000000}}", "spec.replicas", "int32");
	types_eq(d, "{\"spec\":{\"paused\":\"yes\"}}", "spec.paused", "of type bool");
	types_eq(d, "{\"spec\":{\"template\":{\"spec\":{\"containers\":{\"name\":\"c\"}}}}}",
		 "spec.template.spec.containers", "of type []v1.Container");
	types_eq(d, "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":7}]}}}}",
		 "spec.template.spec.containers[0].name", "unmarshal number");
	types_eq(d, "{\"metadata\":{\"labels\":{\"a\":1}}}", "metadata.labels[a]", "string");
	types_eq(d, "{\"metadata\":{\"labels\":[\"a\"]}}", "metadata.labels", "map[string]string");
	types_eq(d, "{\"spec\":\"x\"}", "spec", "of type v1.DeploymentSpec");
	types_eq(d, "{\"kind\":5}", "kind", "string");
	types_eq(d, "{\"metadata\":{\"creationTimestamp\":\"yesterday\"}}",
		 "metadata.creationTimestamp", "v1.Time");
	types_eq(d,
		 "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
		 "\"resources\":{\"limits\":{\"cpu\":true}}}]}}}}",
		 "spec.template.spec.containers[0].resources.limits[cpu]", "resource.Quantity");
}
END_TEST

START_TEST(types_other)
{
	const char *svc = "k8s.io.api.core.v1.Service";
	types_eq(svc,
		 "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":\"http\"},"
		 "{\"port\":81,\"targetPort\":8081}]}}",
		 "", NULL);
	types_eq(svc, "{\"spec\":{\"ports\":[{\"port\":80,\"targetPort\":true}]}}",
		 "spec.ports[0].targetPort", "intstr.IntOrString");
	const char *sec = "k8s.io.api.core.v1.Secret";
	types_eq(sec, "{\"data\":{\"a\":\"YWRtaW4=\"},\"stringData\":{\"b\":\"plain\"}}", "", NULL);
	types_eq(sec, "{\"data\":{\"a\":\"not base64!\"}}", "data[a]", "[]uint8");
	/* int64 accepts large integers; RawExtension accepts anything */
	types_eq("k8s.io.api.apps.v1.ControllerRevision",
		 "{\"revision\":9007199254740993,\"data\":[1,\"x\"]}", "", NULL);
	json_t *a = json_array(), *o = json_object();
	ck_assert_int_eq(schema_check_types("no.such.Kind", o, a), -ENOENT);
	ck_assert_int_eq(schema_check_types("k8s.io.api.core.v1.Pod", a, a), -EINVAL);
	json_decref(a);
	json_decref(o);
}
END_TEST

/* Scalars are checked where they stand (the walk neither calls nor puts them
 * on the path unless reported): every wrong one is reported at its own path,
 * among right ones, nulls and other messages' fields, in the object's order. */
START_TEST(types_scalars)
{
	const char *pod = "k8s.io.api.core.v1.Pod";
	types_eq(pod,
		 "{\"metadata\":{\"name\":\"p\",\"generation\":2,\"finalizers\":[\"a\",null]},"
		 "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":null,\"args\":[\"a\",1,null,"
		 "\"b\",false],\"command\":[],\"ports\":[{\"containerPort\":80,\"hostPort\":"
		 "\"81\",\"name\":\"http\"}],\"tty\":\"yes\",\"workingDir\":\"/\"}],"
		 "\"terminationGracePeriodSeconds\":null,\"hostNetwork\":1,\"nodeName\":\"n\"}}",
		 "spec.containers[0].args[1],spec.containers[0].args[4],"
		 "spec.containers[0].ports[0].hostPort,spec.containers[0].tty,spec.hostNetwork",
		 "Go struct field Container.spec.containers[0].args[1] of type string");
	types_eq(
	    pod,
	    "{\"metadata\":{\"labels\":{\"a\":\"b\",\"c\":null,\"d\":2,\"e\":\"f\"}},"
	    "\"spec\":{\"nodeSelector\":{\"x\":true},\"overhead\":{\"cpu\":\"1\",\"memory\":[],"
	    "\"pods\":2},\"containers\":[{\"resources\":{\"limits\":{\"cpu\":{}}}}]}}",
	    "metadata.labels[d],spec.nodeSelector[x],spec.overhead[memory],"
	    "spec.containers[0].resources.limits[cpu]",
	    "Go struct field ObjectMeta.metadata.labels[d] of type string");
	types_eq(pod, "{\"metadata\":{\"finalizers\":[\"a\",{}]},\"spec\":{\"nodeName\":[]}}",
		 "metadata.finalizers[1],spec.nodeName", "of type string");
	types_eq(pod,
		 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"args\":[\"x\"]}],"
		 "\"activeDeadlineSeconds\":9007199254740993,\"priority\":3000000000}}",
		 "spec.priority", "of type int32");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/schema");
	TCase *tc = tcase_create("schema");
	tcase_add_test(tc, unknown_pod);
	tcase_add_test(tc, unknown_long_path);
	tcase_add_test(tc, unknown_other);
	tcase_add_test(tc, types_deployment);
	tcase_add_test(tc, types_other);
	tcase_add_test(tc, types_scalars);
	suite_add_tcase(s, tc);
	return s;
}
