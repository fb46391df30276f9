/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/validation/validate_apiservice.c and what proxy/model/objects.c,
 * proxy/model/printers.c and proxy/model/resources.c hold for APIService: kube-
 * aggregator's causes (name `<version>.<group>`, group and version syntax,
 * priority ranges, local APIServices without caBundle or
 * insecureSkipTLSVerify, service fields, condition statuses), the service
 * port default, the create strategy (status dropped, Local condition for a
 * local APIService), the NAME SERVICE AVAILABLE AGE table and the row.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/model/printers.h"
#include "proxy/api/api.h"
#include "proxy/model/resource.h"
#include "proxy/model/types.h"
#include "proxy/validation/validate.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static const struct proxy_resource *res(void)
{
	const struct proxy_resource *r =
	    resource_find("apiregistration.k8s.io", "v1", "apiservices");
	ck_assert_ptr_nonnull(r);
	return r;
}

static json_t *J(const char *json)
{
	json_error_t e;
	json_t *j = json_loads(json, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s (%s)", e.text, json);
	return j;
}

/* The "field: message" of every cause of obj (after defaults), " | ". */
static char *causes_of(const char *obj)
{
	json_t *o = J(obj), *c = json_array();
	obj_defaults(res(), o);
	ck_assert_int_ge(val_object_meta(res(), o, NULL, c), 0);
	ck_assert_int_ge(val_object(res(), o, NULL, c), 0);
	struct kb_buf b = {0};
	size_t i;
	json_t *x;
	kb_buf_puts(&b, "");
	json_array_foreach (c, i, x)
		kb_buf_printf(&b, "%s%s: %s", i ? " | " : "",
			      json_string_value(json_object_get(x, "field")),
			      json_string_value(json_object_get(x, "message")));
	json_decref(o);
	json_decref(c);
	return b.data;
}

static void expect(const char *obj, const char *want)
{
	char *got = causes_of(obj);
	ck_assert_msg(strcmp(got, want) == 0, "\nwant: %s\ngot:  %s", want, got);
	free(got);
}

#define SPEC(name, spec) "{\"metadata\":{\"name\":\"" name "\"},\"spec\":{" spec "}}"
#define PRIO             "\"groupPriorityMinimum\":100,\"versionPriority\":10"
#define SVC              "\"service\":{\"namespace\":\"ns\",\"name\":\"api\"}"

START_TEST(resource_row)
{
	const struct proxy_resource *r = res();
	ck_assert_str_eq(r->kind, "APIService");
	ck_assert_str_eq(r->list_kind, "APIServiceList");
	ck_assert(!r->namespaced);
	ck_assert(r->stored);
	ck_assert_uint_eq(r->verbs, VERBS_ALL);
	ck_assert_str_eq(r->categories[0], "api-extensions");
	ck_assert_ptr_nonnull(resource_sub(r, "status"));
	ck_assert(r->conditional_update);
	ck_assert(!obj_has_generation(r));
	ck_assert_ptr_nonnull(kt_find(r->proto));
	ck_assert_ptr_nonnull(kt_field(kt_find(r->proto), "spec"));
	ck_assert_str_eq(r->store_key, "apiregistration.k8s.io/apiservices");
}
END_TEST

START_TEST(valid)
{
	expect(SPEC("v1alpha1.wardle.example.com", "\"group\":\"wardle.example.com\","
						   "\"version\":\"v1alpha1\"," PRIO "," SVC),
	       "");
	expect(SPEC("v1.", "\"version\":\"v1\"," PRIO), "");
	expect(SPEC("v1.apps", "\"group\":\"apps\",\"version\":\"v1\","
			       "\"groupPriorityMinimum\":20000,\"versionPriority\":1000"),
	       "");
	expect(SPEC("v1.x.io", "\"group\":\"x.io\",\"version\":\"v1\"," PRIO ","
			       "\"caBundle\":\"aGVsbG8=\"," SVC),
	       "");
}
END_TEST

START_TEST(names)
{
	expect(SPEC("v1.other", "\"group\":\"x.io\",\"version\":\"v1\"," PRIO),
	       "metadata.name: Invalid value: \"v1.other\": must be "
	       "`spec.version+\".\"+spec.group`: \"v1.x.io\"");
	/* a name that is no path segment gets that message only */
	expect(SPEC("a/b", "\"group\":\"x.io\",\"version\":\"v1\"," PRIO),
	       "metadata.name: Invalid value: \"a/b\": may not contain '/'");
	expect(SPEC("v2.", "\"version\":\"v2\"," PRIO),
	       "spec.group: Required value: only v1 may have an empty group and it better be "
	       "legacy kube");
	expect(SPEC("V1.X_y", "\"group\":\"X_y\",\"version\":\"V1\"," PRIO),
	       "spec.group: Invalid value: \"X_y\": a lowercase RFC 1123 subdomain must consist "
	       "of lower case alphanumeric characters, '-' or '.', and must start and end with "
	       "an alphanumeric character (e.g. 'example.com', regex used for validation is "
	       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | "
	       "spec.version: Invalid value: \"V1\": a DNS-1035 label must consist of lower case "
	       "alphanumeric characters or '-', start with an alphabetic character, and end "
	       "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
	       "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
}
END_TEST

START_TEST(priorities)
{
	expect(SPEC("v1.x.io", "\"group\":\"x.io\",\"version\":\"v1\""),
	       "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than "
	       "20000 | spec.versionPriority: Invalid value: 0: must be positive and less than "
	       "1000");
	expect(SPEC("v1.x.io", "\"group\":\"x.io\",\"version\":\"v1\","
			       "\"groupPriorityMinimum\":20001,\"versionPriority\":-1"),
	       "spec.groupPriorityMinimum: Invalid value: 20001: must be positive and less than "
	       "20000 | spec.versionPriority: Invalid value: -1: must be positive and less than "
	       "1000");
}
END_TEST

START_TEST(service_rules)
{
	expect(SPEC("v1.x.io", "\"group\":\"x.io\",\"version\":\"v1\"," PRIO ","
			       "\"caBundle\":\"aGVsbG8=\",\"insecureSkipTLSVerify\":true"),
	       "spec.caBundle: Invalid value: \"5 bytes\": local APIServices may not have a "
	       "caBundle | spec.insecureSkipTLSVerify: Invalid value: true: local APIServices "
	       "may not have insecureSkipTLSVerify");
	expect(SPEC("v1.x.io", "\"group\":\"x.io\",\"version\":\"v1\"," PRIO ","
			       "\"service\":{}"),
	       "spec.service.namespace: Required value | spec.service.name: Required value");
	expect(SPEC("v1.x.io",
		    "\"group\":\"x.io\",\"version\":\"v1\"," PRIO ","
		    "\"service\":{\"namespace\":\"ns\",\"name\":\"api\",\"port\":70000}"),
	       "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and "
	       "65535, inclusive");
	expect(SPEC("v1.x.io", "\"group\":\"x.io\",\"version\":\"v1\"," PRIO ","
			       "\"caBundle\":\"aGVsbG8=\",\"insecureSkipTLSVerify\":true," SVC),
	       "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is "
	       "present");
}
END_TEST

START_TEST(status_conditions)
{
	expect("{\"metadata\":{\"name\":\"v1.\"},\"spec\":{\"version\":\"v1\"," PRIO "},"
	       "\"status\":{\"conditions\":[{\"type\":\"Available\",\"status\":\"Maybe\"}]}}",
	       "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: "
	       "\"True\", \"False\", \"Unknown\"");
}
END_TEST

START_TEST(defaults_and_create)
{
	json_t *o = J(SPEC("v1.x.io", "\"group\":\"x.io\",\"version\":\"v1\"," PRIO "," SVC));
	json_object_set_new(o, "status", J("{\"conditions\":[{\"type\":\"Available\"}]}"));
	obj_init_create(res(), o, 0);
	obj_defaults(res(), o);
	ck_assert_int_eq(json_integer_value(obj_get(o, "spec.service.port")), 443);
	ck_assert_int_eq(json_object_size(json_object_get(o, "status")), 0);
	ck_assert_ptr_null(obj_get(o, "metadata.generation"));
	json_decref(o);

	o = J(SPEC("v1.", "\"version\":\"v1\",\"service\":null," PRIO));
	obj_init_create(res(), o, 0);
	obj_defaults(res(), o);
	ck_assert_ptr_null(obj_get(o, "spec.service"));
	json_t *c = json_array_get(obj_get(o, "status.conditions"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c, "type")), "Available");
	ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "True");
	ck_assert_str_eq(json_string_value(json_object_get(c, "reason")), "Local");
	ck_assert_str_eq(json_string_value(json_object_get(c, "message")),
			 "Local APIServices are always available");
	ck_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")),
			 "1970-01-01T00:00:00Z");
	json_decref(o);
}
END_TEST

static const char *cell(const json_t *cells, size_t i)
{
	return json_string_value(json_array_get(cells, i));
}

START_TEST(table)
{
	json_t *cols = printers_columns(res());
	ck_assert_int_eq(json_array_size(cols), 4);
	static const char *const heads[] = {"Name", "Service", "Available", "Age"};
	for (size_t i = 0; i < 4; i++)
		ck_assert_str_eq(
		    json_string_value(json_object_get(json_array_get(cols, i), "name")), heads[i]);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(cols, 1), "description")),
			 "The reference to the service that hosts this API endpoint.");
	json_decref(cols);
	static const struct {
		const char *obj, *service, *available;
	} rows[] = {
	    {"{\"metadata\":{\"name\":\"v1.\"},\"status\":{\"conditions\":[{\"type\":"
	     "\"Available\",\"status\":\"True\",\"reason\":\"Local\"}]}}",
	     "Local", "True"},
	    {"{\"metadata\":{\"name\":\"v1.x\"}," SVC ",\"spec\":{" SVC "},\"status\":{}}",
	     "ns/api", "Unknown"},
	    {"{\"metadata\":{\"name\":\"v1.x\"},\"spec\":{" SVC "},\"status\":{\"conditions\":["
	     "{\"type\":\"Available\",\"status\":\"False\",\"reason\":\"MissingEndpoints\"}]}}",
	     "ns/api", "False (MissingEndpoints)"},
	    {"{\"metadata\":{\"name\":\"v1.x\"},\"spec\":{" SVC "},\"status\":{\"conditions\":["
	     "{\"type\":\"Available\",\"status\":\"False\"}]}}",
	     "ns/api", "False"},
	};
	for (size_t i = 0; i < KB_ARRAY_SIZE(rows); i++) {
		json_t *o = J(rows[i].obj);
		json_t *c = printers_cells(res(), o, 0);
		ck_assert_str_eq(cell(c, 1), rows[i].service);
		ck_assert_str_eq(cell(c, 2), rows[i].available);
		json_decref(c);
		json_decref(o);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("validate_apiservice");
	TCase *t = tcase_create("core");
	tcase_add_test(t, resource_row);
	tcase_add_test(t, valid);
	tcase_add_test(t, names);
	tcase_add_test(t, priorities);
	tcase_add_test(t, service_rules);
	tcase_add_test(t, status_conditions);
	tcase_add_test(t, defaults_and_create);
	tcase_add_test(t, table);
	suite_add_tcase(s, t);
	return s;
}
