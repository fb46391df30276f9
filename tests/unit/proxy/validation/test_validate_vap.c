/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/validation/validate_vap.c and the admission policy defaults of
 * proxy/model/objects.c: kube's admissionregistration/v1 defaults (failurePolicy,
 * match resources, rule scope; none in a binding's paramRef), the status a
 * new policy starts with, and kube's causes (field paths, reasons,
 * messages) for a policy's failure policy, param kind, match constraints,
 * match conditions, variables, validations, audit annotations and status,
 * and a binding's policy name, param reference, match resources and
 * validation actions; the update that leaves the match conditions alone;
 * the two rows of proxy/model/resources.c.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "proxy/api/api.h"
#include "proxy/model/resource.h"
#include "proxy/model/types.h"
#include "proxy/validation/validate.h"
#include "proxy/validation/vap_typecheck.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static const struct proxy_resource vap_res = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "ValidatingAdmissionPolicy",
    .plural = "validatingadmissionpolicies",
    .has_status = true,
};
static const struct proxy_resource vapb_res = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "ValidatingAdmissionPolicyBinding",
    .plural = "validatingadmissionpolicybindings",
    .has_status = true,
};

static json_t *J(const char *json)
{
	json_error_t e;
	json_t *j = json_loads(json, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s (%s)", e.text, json);
	return j;
}

#define RULES                                                                              \
	"\"resourceRules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"example.com\"]," \
	"\"apiVersions\":[\"v1\"],\"resources\":[\"widgets\"]}]"
/* A policy named p with one rule; `extra` is more of its spec, `top` more
 * of the object (",\"status\":{...}"). */
#define POLICY_TOP(extra, top)                                                                    \
	"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"matchConstraints\":{" RULES "}" extra "}" top \
	"}"
#define POLICY(extra) POLICY_TOP(extra, "")
#define CHECK         ",\"validations\":[{\"expression\":\"true\"}]"
/* A binding named b of policy p; `extra` is more of its spec. */
#define BINDING(extra)                                                   \
	"{\"metadata\":{\"name\":\"b\"},\"spec\":{\"policyName\":\"p\"," \
	"\"validationActions\":[\"Deny\"]" extra "}}"

static bool empty_object(const json_t *v)
{
	return json_is_object(v) && json_object_size(v) == 0;
}

/* Causes of validating `obj` (after kube's defaults) as `r`, old or NULL. */
static json_t *run(const struct proxy_resource *r, const char *obj, const char *old)
{
	json_t *o = J(obj), *oo = old ? J(old) : NULL, *c = json_array();
	obj_defaults(r, o);
	if (oo)
		obj_defaults(r, oo);
	ck_assert_int_ge(val_object_meta(r, o, oo, c), 0);
	ck_assert_int_ge(val_object(r, o, oo, c), 0);
	json_decref(o);
	json_decref(oo);
	return c;
}

/* The "field: message" of every cause, joined with " | ". */
static char *lines(const json_t *c)
{
	struct kb_buf b = {0};
	kb_buf_puts(&b, "");
	for (size_t i = 0; i < json_array_size(c); i++) {
		const json_t *x = json_array_get(c, i);
		kb_buf_printf(&b, "%s%s: %s", i ? " | " : "",
			      json_string_value(json_object_get(x, "field")),
			      json_string_value(json_object_get(x, "message")));
	}
	return b.data;
}

static void expect(const struct proxy_resource *r, const char *obj, const char *old,
		   const char *want)
{
	json_t *c = run(r, obj, old);
	char *got = lines(c);
	ck_assert_msg(strcmp(got, want) == 0, "\nwant: %s\ngot:  %s", want, got);
	free(got);
	json_decref(c);
}

/* The reason of cause i. */
static void expect_reason(const struct proxy_resource *r, const char *obj, size_t i,
			  const char *reason)
{
	json_t *c = run(r, obj, NULL);
	ck_assert_uint_gt(json_array_size(c), i);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, i), "reason")),
			 reason);
	json_decref(c);
}

/* the rows of proxy/model/resources.c: cluster-scoped, api-extensions, every verb,
 * the policy's status subresource, the protobuf messages, the store keys */
START_TEST(resource_rows)
{
	static const char *const plurals[] = {"validatingadmissionpolicies",
					      "validatingadmissionpolicybindings"};
	static const char *const kinds[] = {"ValidatingAdmissionPolicy",
					    "ValidatingAdmissionPolicyBinding"};
	for (size_t i = 0; i < 2; i++) {
		const struct proxy_resource *r =
		    resource_find("admissionregistration.k8s.io", "v1", plurals[i]);
		char want[128];
		ck_assert_ptr_nonnull(r);
		ck_assert_str_eq(r->kind, kinds[i]);
		ck_assert(!r->namespaced);
		ck_assert(r->stored);
		ck_assert(r->has_status);
		ck_assert(r->conditional_update); /* kube's AllowUnconditionalUpdate false */
		ck_assert_uint_eq(r->verbs, VERBS_ALL);
		ck_assert_ptr_null(r->short_names);
		ck_assert_str_eq(r->categories[0], "api-extensions");
		ck_assert_ptr_null(r->categories[1]);
		snprintf(want, sizeof(want), "k8s.io.api.admissionregistration.v1.%s", kinds[i]);
		ck_assert_str_eq(r->proto, want);
		ck_assert_ptr_nonnull(kt_find(r->proto));
		snprintf(want, sizeof(want), "admissionregistration.k8s.io/%s", plurals[i]);
		ck_assert_str_eq(r->store_key, want);
		ck_assert_ptr_eq(resource_find_kind("admissionregistration.k8s.io", kinds[i]), r);
		/* v1 only, as kube 1.33 serves by default */
		ck_assert_ptr_null(
		    resource_find("admissionregistration.k8s.io", "v1beta1", plurals[i]));
	}
	const struct proxy_resource *p =
	    resource_find("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies");
	const struct proxy_subresource *st = resource_sub(p, "status");
	ck_assert_ptr_nonnull(st);
	ck_assert_str_eq(st->kind, "ValidatingAdmissionPolicy");
	ck_assert_uint_eq(st->verbs, VERB_GET | VERB_PATCH | VERB_UPDATE);
	ck_assert_ptr_null(resource_sub(resource_find("admissionregistration.k8s.io", "v1",
						      "validatingadmissionpolicybindings"),
					"status"));
}
END_TEST

START_TEST(defaults_policy)
{
	json_t *o = J(POLICY(",\"matchConstraints\":{\"excludeResourceRules\":[{}]," RULES "}"));
	obj_defaults(&vap_res, o);
	ck_assert_str_eq(json_string_value(obj_get(o, "spec.failurePolicy")), "Fail");
	ck_assert_str_eq(json_string_value(obj_get(o, "spec.matchConstraints.matchPolicy")),
			 "Equivalent");
	ck_assert(empty_object(obj_get(o, "spec.matchConstraints.namespaceSelector")));
	ck_assert(empty_object(obj_get(o, "spec.matchConstraints.objectSelector")));
	const json_t *rule = json_array_get(obj_get(o, "spec.matchConstraints.resourceRules"), 0);
	const json_t *ex =
	    json_array_get(obj_get(o, "spec.matchConstraints.excludeResourceRules"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(rule, "scope")), "*");
	ck_assert_str_eq(json_string_value(json_object_get(ex, "scope")), "*");
	json_decref(o);

	/* given values are kept; null is kube's nil pointer */
	o = J("{\"spec\":{\"failurePolicy\":\"Ignore\",\"matchConstraints\":{\"matchPolicy\":"
	      "\"Exact\",\"objectSelector\":null,\"namespaceSelector\":{\"matchLabels\":{\"a\":"
	      "\"b\"}},\"resourceRules\":[{\"scope\":\"Namespaced\"}]}}}");
	obj_defaults(&vap_res, o);
	ck_assert_str_eq(json_string_value(obj_get(o, "spec.failurePolicy")), "Ignore");
	ck_assert_str_eq(json_string_value(obj_get(o, "spec.matchConstraints.matchPolicy")),
			 "Exact");
	ck_assert(empty_object(obj_get(o, "spec.matchConstraints.objectSelector")));
	ck_assert_str_eq(
	    json_string_value(obj_get(o, "spec.matchConstraints.namespaceSelector.matchLabels.a")),
	    "b");
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_array_get(obj_get(o, "spec.matchConstraints.resourceRules"), 0), "scope")),
	    "Namespaced");
	json_decref(o);

	/* kube's spec is no pointer: an object without one gets failurePolicy */
	o = J("{\"metadata\":{\"name\":\"p\"}}");
	obj_defaults(&vap_res, o);
	ck_assert_str_eq(json_string_value(obj_get(o, "spec.failurePolicy")), "Fail");
	ck_assert_ptr_null(obj_get(o, "spec.matchConstraints"));
	json_decref(o);
}
END_TEST

START_TEST(defaults_binding)
{
	json_t *o = J(BINDING(",\"paramRef\":{\"name\":\"x\"},\"matchResources\":{"
			      "\"resourceRules\":[{}]}"));
	obj_defaults(&vapb_res, o);
	ck_assert_str_eq(json_string_value(obj_get(o, "spec.matchResources.matchPolicy")),
			 "Equivalent");
	ck_assert(empty_object(obj_get(o, "spec.matchResources.objectSelector")));
	ck_assert(empty_object(obj_get(o, "spec.matchResources.namespaceSelector")));
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_array_get(obj_get(o, "spec.matchResources.resourceRules"), 0), "scope")),
	    "*");
	/* v1 defaults no parameterNotFoundAction (v1alpha1 did) and no failurePolicy */
	ck_assert_ptr_null(obj_get(o, "spec.paramRef.parameterNotFoundAction"));
	ck_assert_ptr_null(obj_get(o, "spec.failurePolicy"));
	json_decref(o);
	o = J(BINDING(""));
	obj_defaults(&vapb_res, o);
	ck_assert_ptr_null(obj_get(o, "spec.matchResources"));
	json_decref(o);
}
END_TEST

/* kube's PrepareForCreate: a new policy's status is empty, generation 1 */
START_TEST(create_clears_status)
{
	json_t *o =
	    J("{\"metadata\":{\"name\":\"p\"},\"spec\":{},\"status\":{\"observedGeneration\":7}}");
	obj_init_create(&vap_res, o, 0);
	ck_assert(empty_object(json_object_get(o, "status")));
	ck_assert_int_eq(json_integer_value(obj_get(o, "metadata.generation")), 1);
	json_decref(o);
	o = J("{\"metadata\":{\"name\":\"b\"},\"spec\":{}}");
	obj_init_create(&vapb_res, o, 0);
	ck_assert_ptr_null(json_object_get(o, "status"));
	ck_assert_int_eq(json_integer_value(obj_get(o, "metadata.generation")), 1);
	json_decref(o);
}
END_TEST

START_TEST(valid_objects)
{
	expect(&vap_res, POLICY(CHECK), NULL, "");
	expect(&vap_res,
	       POLICY(",\"paramKind\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"},"
		      "\"failurePolicy\":\"Ignore\",\"matchConditions\":[{\"name\":\"a\","
		      "\"expression\":\"true\"},{\"name\":\"example.com/b\",\"expression\":"
		      "\"false\"}],\"variables\":[{\"name\":\"_x1\",\"expression\":\"1\"}],"
		      "\"auditAnnotations\":[{\"key\":\"k\",\"valueExpression\":\"'v'\"}]"),
	       NULL, "");
	expect(&vapb_res, BINDING(""), NULL, "");
	expect(&vapb_res,
	       BINDING(",\"paramRef\":{\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
		       "\"parameterNotFoundAction\":\"Allow\"},\"matchResources\":{}"),
	       NULL, "");
	expect(&vapb_res,
	       "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"policyName\":\"p\","
	       "\"validationActions\":[\"Warn\",\"Audit\"]}}",
	       NULL, "");
}
END_TEST

START_TEST(policy_required)
{
	expect(&vap_res, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"failurePolicy\":null}}", NULL,
	       "spec.matchConstraints: Required value | "
	       "spec.validations: Required value: validations or auditAnnotations must contain "
	       "at least one item | "
	       "spec.auditAnnotations: Required value: validations or auditAnnotations must "
	       "contain at least one item");
	expect(&vap_res,
	       "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"matchConstraints\":{}" CHECK "}}", NULL,
	       "spec.matchConstraints.resourceRules: Required value");
	expect(&vap_res, POLICY(",\"failurePolicy\":\"Sometimes\"" CHECK), NULL,
	       "spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: "
	       "\"Fail\", \"Ignore\"");
	expect_reason(&vap_res, POLICY(""), 0, "FieldValueRequired");
}
END_TEST

START_TEST(param_kind)
{
	expect(&vap_res, POLICY(",\"paramKind\":{}" CHECK), NULL,
	       "spec.paramKind.apiVersion: Required value | spec.paramKind.kind: Required value");
	expect(&vap_res, POLICY(",\"paramKind\":{\"apiVersion\":\"a/b/c\",\"kind\":\"K\"}" CHECK),
	       NULL,
	       "spec.paramKind.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion "
	       "string: a/b/c");
	expect(&vap_res,
	       POLICY(",\"paramKind\":{\"apiVersion\":\"example.com/\",\"kind\":\"K\"}" CHECK),
	       NULL,
	       "spec.paramKind.apiVersion: Invalid value: \"example.com/\": version must be "
	       "specified");
	expect(&vap_res, POLICY(",\"paramKind\":{\"apiVersion\":\"/\",\"kind\":\"K\"}" CHECK), NULL,
	       "spec.paramKind.apiVersion: Invalid value: \"/\": version must be specified");
	expect(
	    &vap_res,
	    POLICY(",\"paramKind\":{\"apiVersion\":\"Example.com/1v\",\"kind\":\"Wid_get\"}" CHECK),
	    NULL,
	    "spec.paramKind.apiVersion: Invalid value: \"Example.com\": a lowercase RFC 1123 "
	    "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
	    "start and end with an alphanumeric character (e.g. 'example.com', regex used for "
	    "validation is "
	    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | "
	    "spec.paramKind.apiVersion: Invalid value: \"1v\": a DNS-1035 label must consist of "
	    "lower case alphanumeric characters or '-', start with an alphabetic character, and "
	    "end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
	    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?') | "
	    "spec.paramKind.kind: Invalid value: \"Wid_get\": may have mixed case, but should "
	    "otherwise match: a DNS-1035 label must consist of lower case alphanumeric "
	    "characters or '-', start with an alphabetic character, and end with an "
	    "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation "
	    "is '[a-z]([-a-z0-9]*[a-z0-9])?')");
}
END_TEST

START_TEST(match_constraints)
{
	/* the webhook rules' checks, at kube's paths, and resourceNames */
	expect(
	    &vap_res,
	    "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"matchConstraints\":{\"matchPolicy\":"
	    "\"Roughly\",\"namespaceSelector\":{\"matchLabels\":{\"a\":\"-\"}},"
	    "\"resourceRules\":[{\"operations\":[\"*\",\"CREATE\"],\"apiGroups\":[],"
	    "\"apiVersions\":[\"v1\"],\"resources\":[\"widgets\"],\"resourceNames\":[\"a/b\","
	    "\"..\",\"x\",\"x\"]}],\"excludeResourceRules\":[{\"operations\":[\"PATCH\"],"
	    "\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],\"resources\":[\"*/*\",\"x\"],"
	    "\"scope\":\"Everywhere\"}]}" CHECK "}}",
	    NULL,
	    "spec.matchConstraints.matchPolicy: Unsupported value: \"Roughly\": supported "
	    "values: \"Equivalent\", \"Exact\" | "
	    "spec.matchConstraints.namespaceSelector.matchLabels: Invalid value: \"-\": a valid "
	    "label must be an empty string or consist of alphanumeric characters, '-', '_' or "
	    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
	    "'my_value',  or '12345', regex used for validation is "
	    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?') | "
	    "spec.matchConstraints.resourceRules[0].resourceNames[0]: Invalid value: \"a/b\": "
	    "may not contain '/' | "
	    "spec.matchConstraints.resourceRules[0].resourceNames[1]: Invalid value: \"..\": "
	    "may not be '..' | "
	    "spec.matchConstraints.resourceRules[0].resourceNames[3]: Duplicate value: \"x\" | "
	    "spec.matchConstraints.resourceRules[0].operations: Invalid value: "
	    "[]admissionregistration.OperationType{\"*\", \"CREATE\"}: if '*' is present, must "
	    "not specify other operations | "
	    "spec.matchConstraints.resourceRules[0].apiGroups: Required value | "
	    "spec.matchConstraints.excludeResourceRules[0].operations[0]: Unsupported value: "
	    "\"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\" | "
	    "spec.matchConstraints.excludeResourceRules[0].resources: Invalid value: "
	    "[]string{\"*/*\", \"x\"}: if '*/*' is present, must not specify other resources | "
	    "spec.matchConstraints.excludeResourceRules[0].scope: Unsupported value: "
	    "\"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"");
	/* explicit nulls after defaulting: kube's nil pointers are required */
	json_t *o = J(POLICY(CHECK)), *c = json_array();
	obj_defaults(&vap_res, o);
	json_t *mc = obj_get(o, "spec.matchConstraints");
	json_object_set_new(mc, "matchPolicy", json_null());
	json_object_del(mc, "namespaceSelector");
	json_object_set_new(mc, "objectSelector", json_null());
	val_object(&vap_res, o, NULL, c);
	char *got = lines(c);
	ck_assert_str_eq(got, "spec.matchConstraints.matchPolicy: Required value | "
			      "spec.matchConstraints.namespaceSelector: Required value | "
			      "spec.matchConstraints.objectSelector: Required value");
	free(got);
	json_decref(c);
	json_decref(o);
}
END_TEST

START_TEST(match_conditions)
{
	expect(
	    &vap_res,
	    POLICY(",\"matchConditions\":[{\"name\":\"\",\"expression\":\" \\n\"},{\"name\":"
		   "\"bad name\",\"expression\":\"true\"},{\"name\":\"a\",\"expression\":\"true\"},"
		   "{\"name\":\"a\",\"expression\":\"false\"}]" CHECK),
	    NULL,
	    "spec.matchConditions[0].expression: Required value | "
	    "spec.matchConditions[0].name: Required value | "
	    "spec.matchConditions[1].name: Invalid value: \"bad name\": name part must consist "
	    "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
	    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
	    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') | "
	    "spec.matchConditions[3].name: Duplicate value: \"a\"");
	/* more than 64 */
	struct kb_buf b = {0};
	kb_buf_puts(&b, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"matchConstraints\":{" RULES
			"}" CHECK ",\"matchConditions\":[");
	for (int i = 0; i < 65; i++)
		kb_buf_printf(&b, "%s{\"name\":\"c%d\",\"expression\":\"true\"}", i ? "," : "", i);
	kb_buf_puts(&b, "]}}");
	expect(&vap_res, b.data, NULL,
	       "spec.matchConditions: Too many: 65: must have at most 64 items");
	kb_buf_free(&b);
}
END_TEST

/* kube checks match conditions again on update only when they or paramKind
 * changed (a stored policy stays writable) */
START_TEST(update_match_conditions)
{
	const char *bad = POLICY(",\"matchConditions\":[{\"name\":\"bad name\",\"expression\":"
				 "\"true\"}]" CHECK);
	const char *bad_pk = POLICY(",\"paramKind\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"},"
				    "\"matchConditions\":[{\"name\":\"bad name\",\"expression\":"
				    "\"true\"}]" CHECK);
	expect(&vap_res, bad, bad, "");
	json_t *c = run(&vap_res, bad, NULL);
	ck_assert_uint_eq(json_array_size(c), 1);
	json_decref(c);
	c = run(&vap_res, bad_pk, bad);
	ck_assert_uint_eq(json_array_size(c), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 0), "field")),
			 "spec.matchConditions[0].name");
	json_decref(c);
	c = run(&vap_res, bad, POLICY(CHECK));
	ck_assert_uint_eq(json_array_size(c), 1);
	json_decref(c);
}
END_TEST

START_TEST(variables)
{
	expect(
	    &vap_res,
	    POLICY(",\"variables\":[{\"name\":\" \",\"expression\":\"1\"},{\"name\":\"in\","
		   "\"expression\":\"\"},{\"name\":\"9a\",\"expression\":\"1\"},{\"name\":"
		   "\"a-b\",\"expression\":\"1\"},{\"name\":\"_ok\"}]" CHECK),
	    NULL,
	    "spec.variables[0].name: Required value: name is not specified | "
	    "spec.variables[1].name: Invalid value: \"in\": name is not a valid CEL identifier | "
	    "spec.variables[1].expression: Required value: expression is not specified | "
	    "spec.variables[2].name: Invalid value: \"9a\": name is not a valid CEL identifier | "
	    "spec.variables[3].name: Invalid value: \"a-b\": name is not a valid CEL identifier | "
	    "spec.variables[4].expression: Required value: expression is not specified");
}
END_TEST

START_TEST(validations)
{
	expect(&vap_res,
	       POLICY(",\"validations\":[{\"expression\":\"  \",\"message\":\"a\\nb\","
		      "\"messageExpression\":\" \",\"reason\":\"Unauthorized\"},{\"expression\":"
		      "\"true\",\"message\":\" \"},{\"expression\":\"true\",\"message\":\"ok\\n\","
		      "\"messageExpression\":\"'m'\",\"reason\":\"RequestEntityTooLarge\"}]"),
	       NULL,
	       "spec.validations[0].expression: Required value: expression is not specified | "
	       "spec.validations[0].messageExpression: Invalid value: \" \": must be non-empty if "
	       "specified | "
	       "spec.validations[0].message: Invalid value: \"a\\nb\": message must not contain "
	       "line breaks | "
	       "spec.validations[0].reason: Unsupported value: \"Unauthorized\": supported values: "
	       "\"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\" | "
	       "spec.validations[1].message: Invalid value: \" \": message must be non-empty if "
	       "specified");
}
END_TEST

START_TEST(audit_annotations)
{
	char *big = malloc(5 * 1024 + 2);
	memset(big, 'x', 5 * 1024 + 1);
	big[5 * 1024 + 1] = '\0';
	/* at the limit and a valid expression: a string literal of 5120 bytes */
	char *ok = malloc(5 * 1024 + 1);
	memset(ok, 'x', 5 * 1024);
	ok[0] = ok[5 * 1024 - 1] = '\'';
	ok[5 * 1024] = '\0';
	struct kb_buf b = {0};
	kb_buf_printf(
	    &b,
	    POLICY(",\"auditAnnotations\":[{\"key\":\"Bad Key\",\"valueExpression\":\"\"},"
		   "{\"key\":\"Bad Key\",\"valueExpression\":\"%s\"},{\"key\":\"ok\","
		   "\"valueExpression\":\"  %s  \"}]"),
	    big, ok);
	expect(&vap_res, b.data, NULL,
	       "spec.auditAnnotations[0].key: Invalid value: \"p/Bad Key\": name part must "
	       "consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
	       "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
	       "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') | "
	       "spec.auditAnnotations[0].valueExpression: Required value: valueExpression is not "
	       "specified | "
	       "spec.auditAnnotations[1].key: Invalid value: \"p/Bad Key\": name part must "
	       "consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
	       "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
	       "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') | "
	       "spec.auditAnnotations[1].valueExpression: Required value: must not exceed 5120 "
	       "bytes in length | "
	       "spec.auditAnnotations[1].key: Duplicate value: \"Bad Key\"");
	kb_buf_free(&b);
	free(big);
	free(ok);
	/* no metadata.name (generateName): the key cannot be checked */
	expect(&vap_res,
	       "{\"metadata\":{\"generateName\":\"p-\"},\"spec\":{\"matchConstraints\":{" RULES
	       "},\"auditAnnotations\":[{\"key\":\"k\",\"valueExpression\":\"'v'\"}]}}",
	       NULL,
	       "metadata.name: Required value: name or generateName is required | "
	       "spec.auditAnnotations[0].key: Invalid value: \"k\": requires metadata.name be "
	       "non-empty");
	/* more than 20 */
	kb_buf_puts(&b, "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"matchConstraints\":{" RULES
			"},\"auditAnnotations\":[");
	for (int i = 0; i < 21; i++)
		kb_buf_printf(&b, "%s{\"key\":\"k%d\",\"valueExpression\":\"'v'\"}", i ? "," : "",
			      i);
	kb_buf_puts(&b, "]}}");
	json_t *c = run(&vap_res, b.data, NULL);
	kb_buf_free(&b);
	ck_assert_uint_eq(json_array_size(c), 1);
	const char *m = json_string_value(json_object_get(json_array_get(c, 0), "message"));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 0), "field")),
			 "spec.auditAnnotations");
	ck_assert_msg(strncmp(m,
			      "Invalid value: []admissionregistration.AuditAnnotation{"
			      "admissionregistration.AuditAnnotation{Key:\"k0\", "
			      "ValueExpression:\"'v'\"}, ",
			      100) == 0,
		      "%s", m);
	ck_assert_ptr_nonnull(strstr(m, "}}: must not have more than 20 auditAnnotations"));
	json_decref(c);
}
END_TEST

START_TEST(policy_status)
{
	expect(
	    &vap_res,
	    POLICY_TOP(CHECK,
		       ",\"status\":{\"typeChecking\":{\"expressionWarnings\":[{\"fieldRef\":"
		       "\" \"},{\"fieldRef\":\"spec.validations[0].expression\",\"warning\":"
		       "\"w\"}]},\"conditions\":[{\"type\":\"Ready\",\"status\":\"Maybe\","
		       "\"observedGeneration\":-1,\"reason\":\"1x\"},{\"type\":\"Ready\","
		       "\"status\":\"True\",\"reason\":\"Ok:\",\"lastTransitionTime\":"
		       "\"2024-01-01T00:00:00Z\"}]}"),
	    NULL,
	    "status.typeChecking.expressionWarnings[0].warning: Required value | "
	    "status.typeChecking.expressionWarnings[0].fieldRef: Required value | "
	    "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: "
	    "\"False\", \"True\", \"Unknown\" | "
	    "status.conditions[0].observedGeneration: Invalid value: -1: must be greater than or "
	    "equal to zero | "
	    "status.conditions[0].lastTransitionTime: Required value: must be set | "
	    "status.conditions[0].reason: Invalid value: \"1x\": a condition reason must start "
	    "with alphabetic character, optionally followed by a string of alphanumeric "
	    "characters or '_,:', and must end with an alphanumeric character or '_' | "
	    "status.conditions[1].reason: Invalid value: \"Ok:\": a condition reason must start "
	    "with alphabetic character, optionally followed by a string of alphanumeric "
	    "characters or '_,:', and must end with an alphanumeric character or '_' | "
	    "status.conditions[1].type: Duplicate value: \"Ready\"");
	expect(&vap_res,
	       POLICY_TOP(CHECK, ",\"status\":{\"observedGeneration\":1,\"conditions\":[{\"type\":"
				 "\"Ready\",\"status\":\"True\",\"reason\":\"A_b,c:d\","
				 "\"lastTransitionTime\":\"2024-01-01T00:00:00Z\"}]}"),
	       NULL, "");
}
END_TEST

START_TEST(binding_spec)
{
	expect(&vapb_res, "{\"metadata\":{\"name\":\"b\"},\"spec\":{}}", NULL,
	       "spec.policyName: Required value | "
	       "spec.validationActions: Required value: at least one validation action is "
	       "required");
	expect(&vapb_res,
	       "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"policyName\":\"P_1\","
	       "\"validationActions\":[\"Deny\",\"Warn\",\"Deny\",\"Block\"]}}",
	       NULL,
	       "spec.policyName: Invalid value: \"P_1\": a lowercase RFC 1123 subdomain must "
	       "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
	       "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
	       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*') | "
	       "spec.validationActions[2]: Duplicate value: \"Deny\" | "
	       "spec.validationActions[3]: Unsupported value: \"Block\": supported values: "
	       "\"Audit\", \"Deny\", \"Warn\" | "
	       "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{"
	       "\"Deny\", \"Warn\", \"Deny\", \"Block\"}: must not contain both Deny and Warn "
	       "(repeating the same validation failure information in the API response and "
	       "headers serves no purpose)");
	/* kube's field path is spelled spec.matchResouces */
	expect(&vapb_res,
	       BINDING(",\"matchResources\":{\"matchPolicy\":\"Roughly\",\"resourceRules\":[{"
		       "\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
		       "\"resources\":[]}]}"),
	       NULL,
	       "spec.matchResouces.matchPolicy: Unsupported value: \"Roughly\": supported values: "
	       "\"Equivalent\", \"Exact\" | "
	       "spec.matchResouces.resourceRules[0].resources: Required value");
	expect_reason(&vapb_res, BINDING(",\"matchResources\":{\"matchPolicy\":\"x\"}"), 0,
		      "FieldValueNotSupported");
}
END_TEST

START_TEST(binding_param_ref)
{
	expect(&vapb_res, BINDING(",\"paramRef\":{}"), NULL,
	       "spec.paramRef: Required value: one of name or selector must be specified | "
	       "spec.paramRef.parameterNotFoundAction: Required value");
	expect(
	    &vapb_res,
	    BINDING(",\"paramRef\":{\"name\":\"a%b\",\"selector\":{\"matchExpressions\":[{"
		    "\"key\":\"k\",\"operator\":\"In\"}]},\"parameterNotFoundAction\":\"Maybe\"}"),
	    NULL,
	    "spec.paramRef.name: Invalid value: \"a%b\": may not contain '%' | "
	    "spec.paramRef.name: Forbidden: name and selector are mutually exclusive | "
	    "spec.paramRef.selector.matchExpressions[0].values: Required value: must be "
	    "specified when `operator` is 'In' or 'NotIn' | "
	    "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive | "
	    "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Maybe\": supported "
	    "values: \"Deny\", \"Allow\"");
	expect(&vapb_res,
	       BINDING(",\"paramRef\":{\"name\":\"x\",\"namespace\":\"n\","
		       "\"parameterNotFoundAction\":\"\"}"),
	       NULL, "spec.paramRef.parameterNotFoundAction: Required value");
}
END_TEST

/* the 422 message kubectl prints */
START_TEST(status_message)
{
	json_t *c = run(&vapb_res, "{\"metadata\":{\"name\":\"b\"},\"spec\":{}}", NULL);
	const struct proxy_resource *r = resource_find("admissionregistration.k8s.io", "v1",
						       "validatingadmissionpolicybindings");
	char *m = val_status_message(r, "b", c);
	ck_assert_str_eq(m,
			 "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is "
			 "invalid: [spec.policyName: Required value, spec.validationActions: "
			 "Required value: at least one validation action is required]");
	free(m);
	json_decref(c);
}
END_TEST

/* Expressions are compiled as kube compiles them: a syntax error, a
 * variable the policy does not declare, an undeclared name. */
START_TEST(compile_errors)
{
	expect(&vap_res,
	       POLICY(",\"validations\":[{\"expression\":\"object.spec.replicas <\"},"
		      "{\"expression\":\"variables.limit > 1\"},"
		      "{\"expression\":\"true\",\"messageExpression\":\"nope\"}]"),
	       NULL,
	       "spec.validations[0].expression: Invalid value: \"object.spec.replicas <\": "
	       "compilation failed: ERROR: <input>:1:23: Syntax error: mismatched input "
	       "'<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
	       "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n"
	       " | object.spec.replicas <\n"
	       " | ......................^ | "
	       "spec.validations[1].expression: Invalid value: \"variables.limit > 1\": "
	       "compilation failed: ERROR: <input>:1:1: undeclared reference to 'variables' (in "
	       "container '')\n"
	       " | variables.limit > 1\n"
	       " | ^ | "
	       "spec.validations[2].messageExpression: Invalid value: \"nope\": compilation "
	       "failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n"
	       " | nope\n"
	       " | ^");
	/* with variables declared, variables.<name> compiles */
	expect(&vap_res,
	       POLICY(",\"variables\":[{\"name\":\"limit\",\"expression\":\"5\"}],"
		      "\"validations\":[{\"expression\":\"object.spec.replicas <= "
		      "variables.limit\"}]"),
	       NULL, "");
}
END_TEST

/* Result types as kube's compiler checks them: a validation and a match
 * condition give a bool, a messageExpression a string, an audit value a
 * string or null; a variable anything; dyn passes. */
START_TEST(result_types)
{
	expect(
	    &vap_res,
	    POLICY(",\"matchConditions\":[{\"name\":\"m\",\"expression\":\"'yes'\"}],"
		   "\"variables\":[{\"name\":\"v\",\"expression\":\"[1, 2]\"}],"
		   "\"validations\":[{\"expression\":\"size(object.spec.x)\"},"
		   "{\"expression\":\"object.spec.x\",\"messageExpression\":\"1 + 1\"},"
		   "{\"expression\":\"1 + 'a' == 'b'\"}],"
		   "\"auditAnnotations\":[{\"key\":\"a\",\"valueExpression\":\"true\"},"
		   "{\"key\":\"b\",\"valueExpression\":\"null\"},"
		   "{\"key\":\"c\",\"valueExpression\":\"'x' + object.kind\"},"
		   "{\"key\":\"d\",\"valueExpression\":\"object.spec.replicas > 50 ? "
		   "'replicas set to ' + string(object.spec.replicas) : null\"}]"),
	    NULL,
	    "spec.matchConditions[0].expression: Invalid value: \"'yes'\": must evaluate to bool | "
	    "spec.validations[0].expression: Invalid value: \"size(object.spec.x)\": must "
	    "evaluate to bool | "
	    "spec.validations[1].messageExpression: Invalid value: \"1 + 1\": must evaluate to "
	    "string | "
	    "spec.validations[2].expression: Invalid value: \"1 + 'a' == 'b'\": compilation "
	    "failed: ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, "
	    "string)'\n"
	    " | 1 + 'a' == 'b'\n"
	    " | ..^ | "
	    "spec.auditAnnotations[0].valueExpression: Invalid value: \"true\": must evaluate to "
	    "one of [string null_type]");
}
END_TEST

/* kube's policy status controller's type checking: each validation
 * against the schema of every kind the rules name. */
START_TEST(type_checking)
{
	json_t *p = json_loads(
	    "{\"metadata\":{\"name\":\"p\",\"generation\":3},\"spec\":{\"matchConstraints\":{"
	    "\"resourceRules\":[{\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"],"
	    "\"operations\":[\"CREATE\"],\"resources\":[\"deployments\",\"replicasets\"]},"
	    "{\"apiGroups\":[\"*\"],\"apiVersions\":[\"v1\"],\"operations\":[\"CREATE\"],"
	    "\"resources\":[\"pods\"]}]},"
	    "\"validations\":[{\"expression\":\"object.spec.replicas <= 5\"},"
	    "{\"expression\":\"object.spec.replicas > 'a'\","
	    "\"messageExpression\":\"object.metadata.name + object.spec.nope\"}]}}",
	    0, NULL);
	ck_assert_ptr_nonnull(p);
	json_t *st = vap_type_check(p);
	ck_assert_int_eq(json_integer_value(json_object_get(st, "observedGeneration")), 3);
	const json_t *ws =
	    json_object_get(json_object_get(st, "typeChecking"), "expressionWarnings");
	ck_assert_int_eq(json_array_size(ws), 2);
	const json_t *w = json_array_get(ws, 0);
	ck_assert_str_eq(json_string_value(json_object_get(w, "fieldRef")),
			 "spec.validations[1].expression");
	ck_assert_str_eq(
	    json_string_value(json_object_get(w, "warning")),
	    "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload "
	    "for '_>_' applied to '(int, string)'\n"
	    " | object.spec.replicas > 'a'\n"
	    " | .....................^\n"
	    "\n"
	    "apps/v1, Kind=ReplicaSet: ERROR: <input>:1:22: found no matching overload "
	    "for '_>_' applied to '(int, string)'\n"
	    " | object.spec.replicas > 'a'\n"
	    " | .....................^\n");
	w = json_array_get(ws, 1);
	ck_assert_str_eq(json_string_value(json_object_get(w, "fieldRef")),
			 "spec.validations[1].messageExpression");
	ck_assert_msg(
	    strstr(json_string_value(json_object_get(w, "warning")), "undefined field 'nope'"),
	    "%s", json_string_value(json_object_get(w, "warning")));
	json_decref(st);
	/* no kind to check (a wildcard): no warnings, typeChecking empty */
	json_object_set_new(json_object_get(json_object_get(p, "spec"), "matchConstraints"),
			    "resourceRules",
			    json_loads("[{\"apiGroups\":[\"*\"],\"apiVersions\":[\"*\"],"
				       "\"resources\":[\"*\"]}]",
				       0, NULL));
	st = vap_type_check(p);
	ck_assert_int_eq(json_object_size(json_object_get(st, "typeChecking")), 0);
	json_decref(st);
	json_decref(p);
}
END_TEST

/* variables.<name> typed by the variable's expression, as kube's
 * composition types them */
START_TEST(typed_variables)
{
	expect(
	    &vap_res,
	    POLICY(",\"variables\":[{\"name\":\"big\",\"expression\":\"object.spec.replicas > 5\"},"
		   "{\"name\":\"n\",\"expression\":\"size(object.spec.items)\"},"
		   "{\"name\":\"names\",\"expression\":\"object.spec.items.map(i, string(i))\"},"
		   "{\"name\":\"when\",\"expression\":\"timestamp('2024-01-01T00:00:00Z')\"}],"
		   "\"validations\":[{\"expression\":\"variables.big\"},"
		   "{\"expression\":\"variables.n\"},"
		   "{\"expression\":\"variables.names.all(x, x.size() < 5) && "
		   "variables.when < timestamp('2025-01-01T00:00:00Z')\"},"
		   "{\"expression\":\"variables.nope\"},"
		   "{\"expression\":\"variables.n + 'a' == 'b'\"}]"),
	    NULL,
	    "spec.validations[1].expression: Invalid value: \"variables.n\": must evaluate to bool "
	    "| "
	    "spec.validations[3].expression: Invalid value: \"variables.nope\": compilation "
	    "failed: "
	    "ERROR: <input>:1:10: undefined field 'nope'\n"
	    " | variables.nope\n"
	    " | .........^ | "
	    "spec.validations[4].expression: Invalid value: \"variables.n + 'a' == 'b'\": "
	    "compilation failed: ERROR: <input>:1:13: found no matching overload for '_+_' "
	    "applied to '(int, string)'\n"
	    " | variables.n + 'a' == 'b'\n"
	    " | ............^");
}
END_TEST

/* request and namespaceObject typed as kube types them; a field named by
 * a CEL keyword is selected as written */
START_TEST(typed_request)
{
	expect(
	    &vap_res,
	    POLICY(",\"validations\":[{\"expression\":\"request.namespace == 'x' && "
		   "request.userInfo.groups.exists(g, g == 'a') && request.dryRun && "
		   "request.kind.kind == 'Pod' && size(request.userInfo.extra['k']) > 0\"},"
		   "{\"expression\":\"namespaceObject.metadata.labels['x'] == 'y' && "
		   "namespaceObject.status.phase == 'Active'\"},"
		   "{\"expression\":\"request.operation == 1\"},"
		   "{\"expression\":\"request.nope == 'x'\"},"
		   "{\"expression\":\"request.dryRun\",\"messageExpression\":\"request.name\"}]"),
	    NULL,
	    "spec.validations[2].expression: Invalid value: \"request.operation == 1\": "
	    "compilation failed: ERROR: <input>:1:19: found no matching overload for '_==_' "
	    "applied to '(string, int)'\n"
	    " | request.operation == 1\n"
	    " | ..................^ | "
	    "spec.validations[3].expression: Invalid value: \"request.nope == 'x'\": compilation "
	    "failed: ERROR: <input>:1:8: undefined field 'nope'\n"
	    " | request.nope == 'x'\n"
	    " | .......^");
	/* the status controller: object.metadata.namespace as written */
	json_t *p = json_loads(
	    "{\"metadata\":{\"name\":\"p\",\"generation\":1},\"spec\":{\"matchConstraints\":{"
	    "\"resourceRules\":[{\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"],"
	    "\"operations\":[\"CREATE\"],\"resources\":[\"deployments\"]}]},"
	    "\"validations\":[{\"expression\":\"object.metadata.namespace == request.namespace && "
	    "object.metadata.labels['a'] == 'b'\"}]}}",
	    0, NULL);
	json_t *st = vap_type_check(p);
	ck_assert_int_eq(json_object_size(json_object_get(st, "typeChecking")), 0);
	json_decref(st);
	json_decref(p);
	/* a variable has the type of its expression for each kind */
	p = json_loads(
	    "{\"metadata\":{\"name\":\"p\",\"generation\":1},\"spec\":{\"matchConstraints\":{"
	    "\"resourceRules\":[{\"apiGroups\":[\"apps\"],\"apiVersions\":[\"v1\"],"
	    "\"operations\":[\"CREATE\"],\"resources\":[\"deployments\"]}]},"
	    "\"variables\":[{\"name\":\"spec\",\"expression\":\"object.spec\"}],"
	    "\"validations\":[{\"expression\":\"variables.spec.replicas > 'a'\"}]}}",
	    0, NULL);
	st = vap_type_check(p);
	const json_t *w = json_array_get(
	    json_object_get(json_object_get(st, "typeChecking"), "expressionWarnings"), 0);
	ck_assert_msg(w &&
			  strstr(json_string_value(json_object_get(w, "warning")),
				 "found no matching overload for '_>_' applied to '(int, string)'"),
		      "%s", w ? json_string_value(json_object_get(w, "warning")) : "none");
	json_decref(st);
	json_decref(p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("validate_vap");
	TCase *t = tcase_create("core");
	tcase_add_test(t, resource_rows);
	tcase_add_test(t, compile_errors);
	tcase_add_test(t, result_types);
	tcase_add_test(t, type_checking);
	tcase_add_test(t, typed_variables);
	tcase_add_test(t, typed_request);
	tcase_add_test(t, defaults_policy);
	tcase_add_test(t, defaults_binding);
	tcase_add_test(t, create_clears_status);
	tcase_add_test(t, valid_objects);
	tcase_add_test(t, policy_required);
	tcase_add_test(t, param_kind);
	tcase_add_test(t, match_constraints);
	tcase_add_test(t, match_conditions);
	tcase_add_test(t, update_match_conditions);
	tcase_add_test(t, variables);
	tcase_add_test(t, validations);
	tcase_add_test(t, audit_annotations);
	tcase_add_test(t, policy_status);
	tcase_add_test(t, binding_spec);
	tcase_add_test(t, binding_param_ref);
	tcase_add_test(t, status_message);
	suite_add_tcase(s, t);
	return s;
}
