/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/printers: columns and cells the way kube-apiserver prints
 * them for `kubectl get` (pods in several states, deployments, services,
 * events, the default convertor, CRD additionalPrinterColumns).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/model/printers.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static const struct proxy_resource pod_res = {.group = "", .version = "v1", .kind = "Pod"};
static const struct proxy_resource deploy_res = {
    .group = "apps", .version = "v1", .kind = "Deployment"};
static const struct proxy_resource svc_res = {.group = "", .version = "v1", .kind = "Service"};
static const struct proxy_resource ev_res = {.group = "", .version = "v1", .kind = "Event"};
static const struct proxy_resource crd_res = {
    .group = "apiextensions.k8s.io", .version = "v1", .kind = "CustomResourceDefinition"};

/* 2026-01-01T00:00:00Z */
#define T0 "2026-01-01T00:00:00Z"

static time_t t0(void)
{
	time_t t;
	ck_assert_int_eq(kb_time_parse(T0, &t), 0);
	return t;
}

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s", e.text);
	return j;
}

static json_t *cells(const struct proxy_resource *r, const char *obj, time_t now)
{
	json_t *o = J(obj);
	json_t *c = printers_cells(r, o, now);
	json_decref(o);
	ck_assert_ptr_nonnull(c);
	return c;
}

static const char *cell_s(const json_t *c, size_t i)
{
	const char *s = json_string_value(json_array_get(c, i));
	ck_assert_msg(s != NULL, "cell %zu is not a string", i);
	return s;
}

START_TEST(pod_columns)
{
	json_t *c = printers_columns(&pod_res);
	static const char *const names[] = {
	    "Name", "Ready", "Status",         "Restarts",       "Age",
	    "IP",   "Node",  "Nominated Node", "Readiness Gates"};
	ck_assert_int_eq(json_array_size(c), 9);
	for (size_t i = 0; i < 9; i++) {
		json_t *col = json_array_get(c, i);
		ck_assert_str_eq(json_string_value(json_object_get(col, "name")), names[i]);
		ck_assert_int_eq(json_integer_value(json_object_get(col, "priority")), i >= 5);
		ck_assert_ptr_nonnull(json_object_get(col, "description"));
	}
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 0), "format")),
			 "name");
	json_decref(c);
}
END_TEST

START_TEST(pod_pending)
{
	json_t *c = cells(&pod_res,
			  "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"" T0 "\"},"
			  "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
			  t0());
	ck_assert_int_eq(json_array_size(c), 9);
	ck_assert_str_eq(cell_s(c, 0), "p");
	ck_assert_str_eq(cell_s(c, 1), "0/1");
	ck_assert_str_eq(cell_s(c, 2), "Pending");
	ck_assert_str_eq(cell_s(c, 3), "0");
	ck_assert_str_eq(cell_s(c, 4), "0s");
	ck_assert_str_eq(cell_s(c, 5), "<none>");
	ck_assert_str_eq(cell_s(c, 6), "<none>");
	ck_assert_str_eq(cell_s(c, 7), "<none>");
	ck_assert_str_eq(cell_s(c, 8), "<none>");
	json_decref(c);
}
END_TEST

START_TEST(pod_running_restarts)
{
	json_t *c = cells(
	    &pod_res,
	    "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"" T0 "\"},"
	    "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},"
	    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.5\",\"podIPs\":[{\"ip\":\"10.0.0."
	    "5\"}],"
	    "\"containerStatuses\":["
	    "{\"name\":\"a\",\"ready\":true,\"restartCount\":2,\"state\":{\"running\":{}},"
	    "\"lastState\":{\"terminated\":{\"exitCode\":1,\"finishedAt\":\"2026-01-01T00:55:00Z\"}"
	    "}},"
	    "{\"name\":\"b\",\"ready\":true,\"restartCount\":1,\"state\":{\"running\":{}}}]}}",
	    t0() + 3600);
	ck_assert_str_eq(cell_s(c, 1), "2/2");
	ck_assert_str_eq(cell_s(c, 2), "Running");
	ck_assert_str_eq(cell_s(c, 3), "3 (5m ago)");
	ck_assert_str_eq(cell_s(c, 4), "60m");
	ck_assert_str_eq(cell_s(c, 5), "10.0.0.5");
	ck_assert_str_eq(cell_s(c, 6), "n1");
	json_decref(c);
}
END_TEST

START_TEST(pod_crashloop_and_terminating)
{
	json_t *c = cells(&pod_res,
			  "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"" T0 "\"},"
			  "\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
			  "\"status\":{\"phase\":\"Running\",\"containerStatuses\":["
			  "{\"name\":\"a\",\"ready\":false,\"restartCount\":4,"
			  "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}}}]}}",
			  t0() + 10);
	ck_assert_str_eq(cell_s(c, 1), "0/1");
	ck_assert_str_eq(cell_s(c, 2), "CrashLoopBackOff");
	ck_assert_str_eq(cell_s(c, 3), "4");
	json_decref(c);

	c = cells(&pod_res,
		  "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"" T0 "\","
		  "\"deletionTimestamp\":\"" T0 "\"},"
		  "\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
		  "\"status\":{\"phase\":\"Running\",\"containerStatuses\":["
		  "{\"name\":\"a\",\"ready\":true,\"state\":{\"running\":{}}}]}}",
		  t0() + 10);
	ck_assert_str_eq(cell_s(c, 1), "1/1");
	ck_assert_str_eq(cell_s(c, 2), "Terminating");
	json_decref(c);

	/* init containers: waiting on the second of two */
	c = cells(&pod_res,
		  "{\"metadata\":{\"name\":\"p\"},"
		  "\"spec\":{\"initContainers\":[{\"name\":\"i1\"},{\"name\":\"i2\"}],"
		  "\"containers\":[{\"name\":\"a\"}]},"
		  "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":["
		  "{\"name\":\"i1\",\"state\":{\"terminated\":{\"exitCode\":0}}},"
		  "{\"name\":\"i2\",\"state\":{\"running\":{}}}]}}",
		  t0());
	ck_assert_str_eq(cell_s(c, 2), "Init:1/2");
	ck_assert_str_eq(cell_s(c, 4), "<unknown>");
	json_decref(c);

	/* a terminated container without reason */
	c = cells(&pod_res,
		  "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"a\"}]},"
		  "\"status\":{\"phase\":\"Failed\",\"containerStatuses\":["
		  "{\"name\":\"a\",\"state\":{\"terminated\":{\"exitCode\":3}}}]}}",
		  t0());
	ck_assert_str_eq(cell_s(c, 2), "ExitCode:3");
	json_decref(c);
}
END_TEST

START_TEST(deployment_cells)
{
	json_t *cols = printers_columns(&deploy_res);
	ck_assert_int_eq(json_array_size(cols), 8);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cols, 2), "name")),
			 "Up-to-date");
	json_decref(cols);
	json_t *c =
	    cells(&deploy_res,
		  "{\"metadata\":{\"name\":\"web\",\"creationTimestamp\":\"" T0 "\"},"
		  "\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"web\"}},"
		  "\"template\":{\"spec\":{\"containers\":[{\"name\":\"n\",\"image\":\"nginx\"},"
		  "{\"name\":\"s\",\"image\":\"busybox\"}]}}},"
		  "\"status\":{\"readyReplicas\":2,\"updatedReplicas\":3,\"availableReplicas\":2}}",
		  t0() + 3 * 86400);
	ck_assert_str_eq(cell_s(c, 1), "2/3");
	ck_assert_int_eq(json_integer_value(json_array_get(c, 2)), 3);
	ck_assert_int_eq(json_integer_value(json_array_get(c, 3)), 2);
	ck_assert_str_eq(cell_s(c, 4), "3d");
	ck_assert_str_eq(cell_s(c, 5), "n,s");
	ck_assert_str_eq(cell_s(c, 6), "nginx,busybox");
	ck_assert_str_eq(cell_s(c, 7), "app=web");
	json_decref(c);
	/* no status, default replicas 1 */
	c = cells(&deploy_res, "{\"metadata\":{\"name\":\"x\"},\"spec\":{}}", t0());
	ck_assert_str_eq(cell_s(c, 1), "0/1");
	json_decref(c);
}
END_TEST

START_TEST(service_cells)
{
	json_t *c = cells(&svc_res,
			  "{\"metadata\":{\"name\":\"s\",\"creationTimestamp\":\"" T0 "\"},"
			  "\"spec\":{\"type\":\"ClusterIP\",\"clusterIP\":\"10.96.0.10\","
			  "\"clusterIPs\":[\"10.96.0.10\"],\"selector\":{\"b\":\"2\",\"a\":\"1\"},"
			  "\"ports\":[{\"port\":80,\"protocol\":\"TCP\"},{\"port\":443}]}}",
			  t0() + 5);
	ck_assert_str_eq(cell_s(c, 0), "s");
	ck_assert_str_eq(cell_s(c, 1), "ClusterIP");
	ck_assert_str_eq(cell_s(c, 2), "10.96.0.10");
	ck_assert_str_eq(cell_s(c, 3), "<none>");
	ck_assert_str_eq(cell_s(c, 4), "80/TCP,443/TCP");
	ck_assert_str_eq(cell_s(c, 5), "5s");
	ck_assert_str_eq(cell_s(c, 6), "a=1,b=2");
	json_decref(c);
	c = cells(&svc_res,
		  "{\"metadata\":{\"name\":\"lb\"},\"spec\":{\"type\":\"LoadBalancer\","
		  "\"ports\":[{\"port\":80,\"nodePort\":30080,\"protocol\":\"TCP\"}]}}",
		  t0());
	ck_assert_str_eq(cell_s(c, 2), "<none>");
	ck_assert_str_eq(cell_s(c, 3), "<pending>");
	ck_assert_str_eq(cell_s(c, 4), "80:30080/TCP");
	ck_assert_str_eq(cell_s(c, 6), "<none>");
	json_decref(c);
	/* selector keys with dots are keys, not paths */
	c = cells(&svc_res,
		  "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"type\":\"ClusterIP\","
		  "\"selector\":{\"app.kubernetes.io/name\":\"web\"}}}",
		  t0());
	ck_assert_str_eq(cell_s(c, 6), "app.kubernetes.io/name=web");
	json_decref(c);
}
END_TEST

START_TEST(event_cells)
{
	json_t *cols = printers_columns(&ev_res);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cols, 0), "name")),
			 "Last Seen");
	ck_assert_int_eq(json_array_size(cols), 10);
	json_decref(cols);
	json_t *c =
	    cells(&ev_res,
		  "{\"metadata\":{\"name\":\"p.1\"},\"type\":\"Normal\",\"reason\":\"Scheduled\","
		  "\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p\",\"fieldPath\":\"spec\"},"
		  "\"source\":{\"component\":\"scheduler\"},\"message\":\" hello \","
		  "\"firstTimestamp\":\"" T0 "\",\"lastTimestamp\":\"" T0 "\"}",
		  t0() + 90);
	ck_assert_str_eq(cell_s(c, 0), "90s");
	ck_assert_str_eq(cell_s(c, 1), "Normal");
	ck_assert_str_eq(cell_s(c, 2), "Scheduled");
	ck_assert_str_eq(cell_s(c, 3), "pod/p");
	ck_assert_str_eq(cell_s(c, 4), "spec");
	ck_assert_str_eq(cell_s(c, 5), "scheduler");
	ck_assert_str_eq(cell_s(c, 6), "hello");
	ck_assert_str_eq(cell_s(c, 7), "90s");
	ck_assert_int_eq(json_integer_value(json_array_get(c, 8)), 1);
	ck_assert_str_eq(cell_s(c, 9), "p.1");
	json_decref(c);
}
END_TEST

START_TEST(default_columns)
{
	static const struct proxy_resource unknown = {
	    .group = "example.com", .version = "v1", .kind = "Widget"};
	const struct proxy_resource *rs[] = {&unknown, &crd_res, NULL};
	for (size_t i = 0; i < 3; i++) {
		json_t *cols = printers_columns(rs[i]);
		ck_assert_int_eq(json_array_size(cols), 2);
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_array_get(cols, 0), "name")), "Name");
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_array_get(cols, 1), "name")),
		    "Created At");
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_array_get(cols, 1), "type")), "date");
		json_decref(cols);
		json_t *c =
		    cells(rs[i], "{\"metadata\":{\"name\":\"w\",\"creationTimestamp\":\"" T0 "\"}}",
			  t0());
		ck_assert_str_eq(cell_s(c, 0), "w");
		ck_assert_str_eq(cell_s(c, 1), T0);
		json_decref(c);
	}
}
END_TEST

/* both webhook configuration kinds: Name, Webhooks (a count), Age */
START_TEST(webhookcfg_cells)
{
	static const struct proxy_resource kinds[] = {
	    {.group = "admissionregistration.k8s.io",
	     .version = "v1",
	     .kind = "ValidatingWebhookConfiguration"},
	    {.group = "admissionregistration.k8s.io",
	     .version = "v1",
	     .kind = "MutatingWebhookConfiguration"},
	};
	for (size_t k = 0; k < 2; k++) {
		json_t *cols = printers_columns(&kinds[k]);
		ck_assert_int_eq(json_array_size(cols), 3);
		json_t *w = json_array_get(cols, 1);
		ck_assert_str_eq(json_string_value(json_object_get(w, "name")), "Webhooks");
		ck_assert_str_eq(json_string_value(json_object_get(w, "type")), "integer");
		ck_assert_str_eq(json_string_value(json_object_get(w, "description")),
				 "Webhooks indicates the number of webhooks registered in this "
				 "configuration");
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_array_get(cols, 2), "name")), "Age");
		json_decref(cols);
		json_t *c = cells(&kinds[k],
				  "{\"metadata\":{\"name\":\"w\",\"creationTimestamp\":\"" T0 "\"},"
				  "\"webhooks\":[{\"name\":\"a.b.c\"},{\"name\":\"d.e.f\"}]}",
				  t0() + 300);
		ck_assert_str_eq(cell_s(c, 0), "w");
		ck_assert_int_eq(json_integer_value(json_array_get(c, 1)), 2);
		ck_assert_str_eq(cell_s(c, 2), "5m");
		json_decref(c);
		c = cells(&kinds[k], "{\"metadata\":{\"name\":\"e\"}}", t0());
		ck_assert_int_eq(json_integer_value(json_array_get(c, 1)), 0);
		json_decref(c);
	}
}
END_TEST

/* ValidatingAdmissionPolicy: Name, Validations (a count), ParamKind
 * ("<apiVersion>/<kind>" or "<unset>"), Age */
START_TEST(vap_cells)
{
	static const struct proxy_resource vap = {.group = "admissionregistration.k8s.io",
						  .version = "v1",
						  .kind = "ValidatingAdmissionPolicy"};
	json_t *cols = printers_columns(&vap);
	const char *names[] = {"Name", "Validations", "ParamKind", "Age"};
	ck_assert_int_eq(json_array_size(cols), 4);
	for (size_t i = 0; i < 4; i++)
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_array_get(cols, i), "name")), names[i]);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cols, 1), "type")),
			 "integer");
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_array_get(cols, 2), "description")),
	    "ParamKind specifies the kind of resources used to parameterize this policy");
	json_decref(cols);
	json_t *c =
	    cells(&vap,
		  "{\"metadata\":{\"name\":\"p\",\"creationTimestamp\":\"" T0 "\"},"
		  "\"spec\":{\"paramKind\":{\"apiVersion\":\"example.com/v1\",\"kind\":"
		  "\"Limit\"},\"validations\":[{\"expression\":\"a\"},{\"expression\":\"b\"}]}}",
		  t0() + 120);
	ck_assert_str_eq(cell_s(c, 0), "p");
	ck_assert_int_eq(json_integer_value(json_array_get(c, 1)), 2);
	ck_assert_str_eq(cell_s(c, 2), "example.com/v1/Limit");
	ck_assert_str_eq(cell_s(c, 3), "2m");
	json_decref(c);
	c = cells(&vap, "{\"metadata\":{\"name\":\"q\"},\"spec\":{}}", t0());
	ck_assert_int_eq(json_integer_value(json_array_get(c, 1)), 0);
	ck_assert_str_eq(cell_s(c, 2), "<unset>");
	json_decref(c);
}
END_TEST

/* ValidatingAdmissionPolicyBinding: Name, PolicyName, ParamRef (namespace/
 * name, "*" for no namespace, the selector's Go String(), "<unset>"), Age */
START_TEST(vapb_cells)
{
	static const struct proxy_resource vapb = {.group = "admissionregistration.k8s.io",
						   .version = "v1",
						   .kind = "ValidatingAdmissionPolicyBinding"};
	json_t *cols = printers_columns(&vapb);
	const char *names[] = {"Name", "PolicyName", "ParamRef", "Age"};
	ck_assert_int_eq(json_array_size(cols), 4);
	for (size_t i = 0; i < 4; i++)
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_array_get(cols, i), "name")), names[i]);
	json_decref(cols);
	static const char *const refs[][2] = {
	    {"", "<unset>"},
	    {",\"paramRef\":{\"name\":\"lim\",\"namespace\":\"ns\"}", "ns/lim"},
	    {",\"paramRef\":{\"name\":\"lim\"}", "*/lim"},
	    {",\"paramRef\":{\"selector\":{\"matchLabels\":{\"b\":\"2\",\"a.io/x\":\"1\"},"
	     "\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\",\"values\":[\"u\",\"v\"]},"
	     "{\"key\":\"e\",\"operator\":\"Exists\"}]}}",
	     "&LabelSelector{MatchLabels:map[string]string{a.io/x: 1,b: 2,},MatchExpressions:[]"
	     "LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[u v],},"
	     "LabelSelectorRequirement{Key:e,Operator:Exists,Values:[],},},}"},
	    {",\"paramRef\":{\"selector\":{}}",
	     "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]"
	     "LabelSelectorRequirement{},}"},
	    {",\"paramRef\":{\"parameterNotFoundAction\":\"Deny\"}", "<unset>"},
	};
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		char obj[1024];
		snprintf(obj, sizeof(obj),
			 "{\"metadata\":{\"name\":\"b\",\"creationTimestamp\":\"" T0 "\"},"
			 "\"spec\":{\"policyName\":\"p\"%s}}",
			 refs[i][0]);
		json_t *c = cells(&vapb, obj, t0() + 3);
		ck_assert_str_eq(cell_s(c, 0), "b");
		ck_assert_str_eq(cell_s(c, 1), "p");
		ck_assert_str_eq(cell_s(c, 2), refs[i][1]);
		ck_assert_str_eq(cell_s(c, 3), "3s");
		json_decref(c);
	}
}
END_TEST

START_TEST(crd_printer_columns)
{
	struct proxy_resource cr = {.group = "example.com", .version = "v1", .kind = "Widget"};
	cr.crd = J("{\"spec\":{\"versions\":[{\"name\":\"v1\",\"additionalPrinterColumns\":["
		   "{\"name\":\"Size\",\"type\":\"integer\",\"jsonPath\":\".spec.size\"},"
		   "{\"name\":\"Color\",\"type\":\"string\",\"jsonPath\":\".spec.colors[1]\","
		   "\"priority\":1}]}]}}");
	json_t *cols = printers_columns(&cr);
	ck_assert_int_eq(json_array_size(cols), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cols, 1), "name")),
			 "Size");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(cols, 2), "priority")),
			 1);
	json_decref(cols);
	json_t *c = cells(&cr,
			  "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"size\":3,"
			  "\"colors\":[\"red\",\"blue\"]}}",
			  t0());
	ck_assert_int_eq(json_integer_value(json_array_get(c, 1)), 3);
	ck_assert_str_eq(cell_s(c, 2), "blue");
	json_decref(c);
	json_decref(cr.crd);
	/* a CRD version without columns: Name, Age */
	cr.crd = J("{\"spec\":{\"versions\":[{\"name\":\"v1\"}]}}");
	cols = printers_columns(&cr);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cols, 1), "name")),
			 "Age");
	json_decref(cols);
	json_decref(cr.crd);
}
END_TEST

/* ResourceQuota: "requests.cpu" is a map key, not a path. */
START_TEST(quota_dotted_keys)
{
	static const struct proxy_resource rq = {
	    .group = "", .version = "v1", .kind = "ResourceQuota"};
	json_t *c = cells(&rq,
			  "{\"metadata\":{\"name\":\"q\",\"creationTimestamp\":\"" T0 "\"},"
			  "\"status\":{\"hard\":{\"requests.cpu\":\"2\",\"limits.memory\":\"1Gi\","
			  "\"pods\":\"10\"},\"used\":{\"requests.cpu\":\"500m\",\"pods\":\"3\"}}}",
			  t0() + 60);
	ck_assert_str_eq(cell_s(c, 0), "q");
	ck_assert_str_eq(cell_s(c, 2), "pods: 3/10, requests.cpu: 500m/2");
	ck_assert_str_eq(cell_s(c, 3), "limits.memory: 0/1Gi");
	json_decref(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/printers");
	TCase *tc = tcase_create("printers");
	tcase_add_test(tc, pod_columns);
	tcase_add_test(tc, quota_dotted_keys);
	tcase_add_test(tc, pod_pending);
	tcase_add_test(tc, pod_running_restarts);
	tcase_add_test(tc, pod_crashloop_and_terminating);
	tcase_add_test(tc, deployment_cells);
	tcase_add_test(tc, service_cells);
	tcase_add_test(tc, event_cells);
	tcase_add_test(tc, default_columns);
	tcase_add_test(tc, crd_printer_columns);
	tcase_add_test(tc, webhookcfg_cells);
	tcase_add_test(tc, vap_cells);
	tcase_add_test(tc, vapb_cells);
	suite_add_tcase(s, tc);
	return s;
}
