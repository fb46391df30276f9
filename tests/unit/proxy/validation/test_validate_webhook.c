/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/validation/validate_webhook.c and the webhook configuration defaults
 * of proxy/model/objects.c: kube's admissionregistration/v1 defaults, and kube's
 * causes (field paths, reasons, messages) for names, rules, policies, side
 * effects, timeouts, selectors, URL and service client configs, review
 * versions and duplicates; the update relaxations; matchConditions checked and compiled;
 * and the two rows of proxy/model/resources.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "proxy/api/api.h"
#include "proxy/model/resource.h"
#include "proxy/model/types.h"
#include "proxy/validation/validate.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static const struct proxy_resource vwc_res = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "ValidatingWebhookConfiguration",
    .plural = "validatingwebhookconfigurations",
};
static const struct proxy_resource mwc_res = {
    .group = "admissionregistration.k8s.io",
    .version = "v1",
    .kind = "MutatingWebhookConfiguration",
    .plural = "mutatingwebhookconfigurations",
};

static json_t *J(const char *json)
{
	json_error_t e;
	json_t *j = json_loads(json, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s (%s)", e.text, json);
	return j;
}

/* A configuration of one webhook: `hook` is the JSON object's inner text
 * after the valid name, sideEffects and admissionReviewVersions. */
#define HOOK(extra)                                                                   \
	"{\"metadata\":{\"name\":\"cfg\"},\"webhooks\":[{\"name\":\"a.example.com\"," \
	"\"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v1\"]," extra "}]}"
#define URL_CC "\"clientConfig\":{\"url\":\"https://hook.example.com/x\"}"

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
	size_t len = 1;
	for (size_t i = 0; i < json_array_size(c); i++)
		len += strlen(json_string_value(json_object_get(json_array_get(c, i), "field"))) +
		       strlen(json_string_value(json_object_get(json_array_get(c, i), "message"))) +
		       5;
	char *s = calloc(1, len);
	for (size_t i = 0; i < json_array_size(c); i++) {
		const json_t *x = json_array_get(c, i);
		if (i)
			strcat(s, " | ");
		strcat(s, json_string_value(json_object_get(x, "field")));
		strcat(s, ": ");
		strcat(s, json_string_value(json_object_get(x, "message")));
	}
	return s;
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

static void expect_reason(const char *obj, size_t i, const char *reason)
{
	json_t *c = run(&vwc_res, obj, NULL);
	ck_assert_uint_gt(json_array_size(c), i);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, i), "reason")),
			 reason);
	json_decref(c);
}

/* the rows of proxy/model/resources.c: cluster-scoped, api-extensions, every verb,
 * no short names, a protobuf message the type tables know, the store key */
START_TEST(resource_rows)
{
	static const char *const plurals[] = {"validatingwebhookconfigurations",
					      "mutatingwebhookconfigurations"};
	static const char *const kinds[] = {"ValidatingWebhookConfiguration",
					    "MutatingWebhookConfiguration"};
	for (size_t i = 0; i < 2; i++) {
		const struct proxy_resource *r =
		    resource_find("admissionregistration.k8s.io", "v1", plurals[i]);
		char want[128];
		ck_assert_ptr_nonnull(r);
		ck_assert_str_eq(r->kind, kinds[i]);
		ck_assert(!r->namespaced);
		ck_assert(r->stored);
		ck_assert_uint_eq(r->verbs, VERBS_ALL);
		ck_assert_ptr_null(r->short_names);
		ck_assert_str_eq(r->categories[0], "api-extensions");
		ck_assert_ptr_null(r->categories[1]);
		ck_assert_ptr_null(r->subresources);
		snprintf(want, sizeof(want), "k8s.io.api.admissionregistration.v1.%s", kinds[i]);
		ck_assert_str_eq(r->proto, want);
		ck_assert_ptr_nonnull(kt_find(r->proto));
		snprintf(want, sizeof(want), "admissionregistration.k8s.io/%s", plurals[i]);
		ck_assert_str_eq(r->store_key, want);
		ck_assert_ptr_eq(resource_find_kind("admissionregistration.k8s.io", kinds[i]), r);
	}
}
END_TEST

START_TEST(defaults_validating)
{
	json_t *o = J(HOOK("\"clientConfig\":{\"service\":{\"namespace\":\"n\",\"name\":\"s\"}},"
			   "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],"
			   "\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"]}]"));
	obj_defaults(&vwc_res, o);
	json_t *h = json_array_get(json_object_get(o, "webhooks"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(h, "failurePolicy")), "Fail");
	ck_assert_str_eq(json_string_value(json_object_get(h, "matchPolicy")), "Equivalent");
	ck_assert(json_is_object(json_object_get(h, "namespaceSelector")));
	ck_assert_int_eq(json_object_size(json_object_get(h, "namespaceSelector")), 0);
	ck_assert(json_is_object(json_object_get(h, "objectSelector")));
	ck_assert_int_eq(json_object_size(json_object_get(h, "objectSelector")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(h, "timeoutSeconds")), 10);
	ck_assert_ptr_null(json_object_get(h, "reinvocationPolicy"));
	ck_assert_int_eq(json_integer_value(obj_get(h, "clientConfig.service.port")), 443);
	json_t *rule = json_array_get(json_object_get(h, "rules"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(rule, "scope")), "*");
	json_decref(o);
}
END_TEST

START_TEST(defaults_mutating_keep_given)
{
	json_t *o = J(HOOK(URL_CC ",\"failurePolicy\":\"Ignore\",\"matchPolicy\":\"Exact\","
				  "\"timeoutSeconds\":3,\"reinvocationPolicy\":\"IfNeeded\","
				  "\"objectSelector\":{\"matchLabels\":{\"a\":\"b\"}},"
				  "\"rules\":[{\"scope\":\"Namespaced\"}]"));
	obj_defaults(&mwc_res, o);
	json_t *h = json_array_get(json_object_get(o, "webhooks"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(h, "failurePolicy")), "Ignore");
	ck_assert_str_eq(json_string_value(json_object_get(h, "matchPolicy")), "Exact");
	ck_assert_int_eq(json_integer_value(json_object_get(h, "timeoutSeconds")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(h, "reinvocationPolicy")), "IfNeeded");
	ck_assert_str_eq(json_string_value(obj_get(h, "objectSelector.matchLabels.a")), "b");
	ck_assert(json_is_object(json_object_get(h, "namespaceSelector")));
	ck_assert_str_eq(json_string_value(json_object_get(
			     json_array_get(json_object_get(h, "rules"), 0), "scope")),
			 "Namespaced");
	ck_assert_ptr_null(obj_get(h, "clientConfig.service"));
	json_decref(o);

	/* a mutating webhook with nothing set gets reinvocationPolicy Never */
	o = J(HOOK(URL_CC));
	obj_defaults(&mwc_res, o);
	h = json_array_get(json_object_get(o, "webhooks"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(h, "reinvocationPolicy")), "Never");
	json_decref(o);
}
END_TEST

START_TEST(valid_objects)
{
	expect(&vwc_res, HOOK(URL_CC), NULL, "");
	expect(&vwc_res, "{\"metadata\":{\"name\":\"empty\"}}", NULL, "");
	expect(&mwc_res,
	       HOOK("\"clientConfig\":{\"service\":{\"namespace\":\"n\",\"name\":\"s\","
		    "\"path\":\"/mutate/v1\",\"port\":8443}},\"reinvocationPolicy\":\"IfNeeded\","
		    "\"rules\":[{\"operations\":[\"CREATE\",\"UPDATE\"],\"apiGroups\":[\"apps\"],"
		    "\"apiVersions\":[\"*\"],\"resources\":[\"deployments\",\"deployments/scale\","
		    "\"*/status\"],\"scope\":\"Namespaced\"}],"
		    "\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"env\","
		    "\"operator\":\"In\",\"values\":[\"prod\"]}]}"),
	       NULL, "");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"HTTPS://[::1]:8443/v\"}"), NULL, "");
}
END_TEST

START_TEST(webhook_names)
{
	expect(&vwc_res,
	       "{\"metadata\":{\"name\":\"c\"},\"webhooks\":[{\"sideEffects\":\"None\","
	       "\"admissionReviewVersions\":[\"v1\"]," URL_CC "}]}",
	       NULL, "webhooks[0].name: Required value");
	expect(&vwc_res,
	       "{\"metadata\":{\"name\":\"c\"},\"webhooks\":[{\"name\":\"example.com\","
	       "\"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v1\"]," URL_CC "}]}",
	       NULL,
	       "webhooks[0].name: Invalid value: \"example.com\": should be a domain with at least "
	       "three segments separated by dots");
	expect(&vwc_res,
	       "{\"metadata\":{\"name\":\"c\"},\"webhooks\":[{\"name\":\"Bad.Example.com\","
	       "\"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v1\"]," URL_CC "}]}",
	       NULL,
	       "webhooks[0].name: Invalid value: \"Bad.Example.com\": a lowercase RFC 1123 "
	       "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
	       "start and end with an alphanumeric character (e.g. 'example.com', regex used for "
	       "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
	/* the same name twice: Duplicate value on the second; checked against old on update */
	const char *dup = "{\"metadata\":{\"name\":\"c\"},\"webhooks\":["
			  "{\"name\":\"a.b.c\",\"sideEffects\":\"None\","
			  "\"admissionReviewVersions\":[\"v1\"]," URL_CC "},"
			  "{\"name\":\"a.b.c\",\"sideEffects\":\"None\","
			  "\"admissionReviewVersions\":[\"v1\"]," URL_CC "}]}";
	expect(&vwc_res, dup, NULL, "webhooks[1].name: Duplicate value: \"a.b.c\"");
	expect_reason(dup, 0, "FieldValueDuplicate");
	expect(&vwc_res, dup, dup, ""); /* already duplicated: kube lets an update through */
}
END_TEST

START_TEST(policies)
{
	expect(&mwc_res,
	       HOOK(URL_CC ",\"failurePolicy\":\"Maybe\",\"matchPolicy\":\"Loose\","
			   "\"reinvocationPolicy\":\"Always\",\"timeoutSeconds\":0"),
	       NULL,
	       "webhooks[0].failurePolicy: Unsupported value: \"Maybe\": supported values: "
	       "\"Fail\", \"Ignore\" | "
	       "webhooks[0].matchPolicy: Unsupported value: \"Loose\": supported values: "
	       "\"Equivalent\", \"Exact\" | "
	       "webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 "
	       "and 30 seconds | "
	       "webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: "
	       "\"IfNeeded\", \"Never\"");
	/* the validating kind has no reinvocationPolicy to check */
	expect(&vwc_res, HOOK(URL_CC ",\"reinvocationPolicy\":\"Always\",\"timeoutSeconds\":30"),
	       NULL, "");
	expect(&vwc_res, HOOK(URL_CC ",\"timeoutSeconds\":31"), NULL,
	       "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between "
	       "1 and 30 seconds");
}
END_TEST

START_TEST(side_effects)
{
	const char *none = "{\"metadata\":{\"name\":\"c\"},\"webhooks\":[{\"name\":\"a.b.c\","
			   "\"admissionReviewVersions\":[\"v1\"]," URL_CC "}]}";
	const char *some =
	    "{\"metadata\":{\"name\":\"c\"},\"webhooks\":[{\"name\":\"a.b.c\","
	    "\"sideEffects\":\"Some\",\"admissionReviewVersions\":[\"v1\"]," URL_CC "}]}";
	expect(&vwc_res, none, NULL,
	       "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun");
	expect(&vwc_res, some, NULL,
	       "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", "
	       "\"NoneOnDryRun\"");
	/* an old object stored with Some (v1beta1 days) may keep it */
	expect(&vwc_res, some, some, "");
	expect(&vwc_res, none, some,
	       "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun, "
	       "Some, Unknown");
}
END_TEST

START_TEST(review_versions)
{
	expect(&vwc_res,
	       "{\"metadata\":{\"name\":\"c\"},\"webhooks\":[{\"name\":\"a.b.c\","
	       "\"sideEffects\":\"None\"," URL_CC "}]}",
	       NULL,
	       "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, "
	       "v1beta1");
	expect(&vwc_res,
	       "{\"metadata\":{\"name\":\"c\"},\"webhooks\":[{\"name\":\"a.b.c\","
	       "\"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v2\",\"v2\",\"V3\"]," URL_CC
	       "}]}",
	       NULL,
	       "webhooks[0].admissionReviewVersions[1]: Invalid value: \"v2\": duplicate version | "
	       "webhooks[0].admissionReviewVersions[2]: Invalid value: \"V3\": a DNS-1035 label "
	       "must consist of lower case alphanumeric characters or '-', start with an "
	       "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
	       "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?') | "
	       "webhooks[0].admissionReviewVersions: Invalid value: []string{\"v2\", \"v2\", "
	       "\"V3\"}: must include at least one of v1, v1beta1");
	expect(&vwc_res,
	       "{\"metadata\":{\"name\":\"c\"},\"webhooks\":[{\"name\":\"a.b.c\","
	       "\"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v2\",\"v1beta1\"]," URL_CC
	       "}]}",
	       NULL, "");
}
END_TEST

START_TEST(rules)
{
	expect(&vwc_res, HOOK(URL_CC ",\"rules\":[{}]"), NULL,
	       "webhooks[0].rules[0].operations: Required value | "
	       "webhooks[0].rules[0].apiGroups: Required value | "
	       "webhooks[0].rules[0].apiVersions: Required value | "
	       "webhooks[0].rules[0].resources: Required value");
	expect(
	    &vwc_res,
	    HOOK(URL_CC ",\"rules\":[{\"operations\":[\"*\",\"PATCH\"],\"apiGroups\":[\"*\","
			"\"apps\"],\"apiVersions\":[\"v1\",\"*\",\"\"],\"resources\":[\"*/*\","
			"\"pods\"],\"scope\":\"Global\"}]"),
	    NULL,
	    "webhooks[0].rules[0].operations: Invalid value: "
	    "[]admissionregistration.OperationType{\"*\", \"PATCH\"}: if '*' is present, must "
	    "not specify other operations | "
	    "webhooks[0].rules[0].operations[1]: Unsupported value: \"PATCH\": supported "
	    "values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\" | "
	    "webhooks[0].rules[0].apiGroups: Invalid value: []string{\"*\", \"apps\"}: if '*' "
	    "is present, must not specify other API groups | "
	    "webhooks[0].rules[0].apiVersions: Invalid value: []string{\"v1\", \"*\", \"\"}: if "
	    "'*' is present, must not specify other API versions | "
	    "webhooks[0].rules[0].apiVersions[2]: Required value | "
	    "webhooks[0].rules[0].resources: Invalid value: []string{\"*/*\", \"pods\"}: if "
	    "'*/*' is present, must not specify other resources | "
	    "webhooks[0].rules[0].scope: Unsupported value: \"Global\": supported values: \"*\", "
	    "\"Cluster\", \"Namespaced\"");
}
END_TEST

#define RES_RULE(list)                                                          \
	HOOK(URL_CC ",\"rules\":[{\"operations\":[\"*\"],\"apiGroups\":[\"\"]," \
		    "\"apiVersions\":[\"v1\"],\"resources\":" list "}]")

START_TEST(rule_resources)
{
	expect(&vwc_res, RES_RULE("[\"pods/*\",\"pods/log\"]"), NULL,
	       "webhooks[0].rules[0].resources[1]: Invalid value: \"pods/log\": if 'pods/*' is "
	       "present, must not specify pods/log");
	expect(&vwc_res, RES_RULE("[\"*/status\",\"pods/status\"]"), NULL,
	       "webhooks[0].rules[0].resources[1]: Invalid value: \"pods/status\": if '*/status' "
	       "is present, must not specify pods/status");
	expect(
	    &vwc_res, RES_RULE("[\"*\",\"pods\"]"), NULL,
	    "webhooks[0].rules[0].resources: Invalid value: []string{\"*\", \"pods\"}: if '*' is "
	    "present, must not specify other resources without subresources");
	/* kube only looks at the last plain item: "*" last hides "pods" */
	expect(&vwc_res, RES_RULE("[\"pods\",\"*\"]"), NULL, "");
	expect(&vwc_res, RES_RULE("[\"*\",\"pods/log\",\"*/*\"]"), NULL,
	       "webhooks[0].rules[0].resources: Invalid value: []string{\"*\", \"pods/log\", "
	       "\"*/*\"}: if '*/*' is present, must not specify other resources");
	expect(&vwc_res, RES_RULE("[\"\"]"), NULL,
	       "webhooks[0].rules[0].resources[0]: Required value");
}
END_TEST

START_TEST(client_url)
{
	expect(&vwc_res, HOOK("\"clientConfig\":{}"), NULL,
	       "webhooks[0].clientConfig: Required value: exactly one of url or service is "
	       "required");
	expect(&vwc_res,
	       HOOK("\"clientConfig\":{\"url\":\"https://a.b/\",\"service\":{\"namespace\":\"n\","
		    "\"name\":\"s\"}}"),
	       NULL,
	       "webhooks[0].clientConfig: Required value: exactly one of url or service is "
	       "required");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"http://u:p@/p?q=1#f\"}"), NULL,
	       "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed "
	       "URL scheme; desired format: https://host[/path] | "
	       "webhooks[0].clientConfig.url: Invalid value: \"\": host must be provided; desired "
	       "format: https://host[/path] | "
	       "webhooks[0].clientConfig.url: Invalid value: \"u:p\": user information is not "
	       "permitted in the URL | "
	       "webhooks[0].clientConfig.url: Invalid value: \"f\": fragments are not permitted in "
	       "the URL | "
	       "webhooks[0].clientConfig.url: Invalid value: \"q=1\": query parameters are not "
	       "permitted in the URL");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\":nothing\"}"), NULL,
	       "webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse "
	       "\":nothing\": missing protocol scheme; desired format: https://host[/path]");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"https://h:x/\"}"), NULL,
	       "webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse "
	       "\"https://h:x/\": invalid port \":x\" after host; desired format: "
	       "https://host[/path]");
	/* Go's parse errors name the URL without its fragment, but all of it for
	 * a bad escape in the fragment */
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"https://a b/x#f\"}"), NULL,
	       "webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse "
	       "\"https://a b/x\": invalid character \" \" in host name; desired format: "
	       "https://host[/path]");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"https://h/a%zz\"}"), NULL,
	       "webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse "
	       "\"https://h/a%zz\": invalid URL escape \"%zz\"; desired format: "
	       "https://host[/path]");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"https://h/#x%4\"}"), NULL,
	       "webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse "
	       "\"https://h/#x%4\": invalid URL escape \"%4\"; desired format: "
	       "https://host[/path]");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"https://a^b@h/\"}"), NULL,
	       "webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse "
	       "\"https://a^b@h/\": net/url: invalid userinfo; desired format: "
	       "https://host[/path]");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"https://[::1/\"}"), NULL,
	       "webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse "
	       "\"https://[::1/\": missing ']' in host; desired format: https://host[/path]");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"1a:b\"}"), NULL,
	       "webhooks[0].clientConfig.url: Required value: url must be a valid URL: parse "
	       "\"1a:b\": first path segment in URL cannot contain colon; desired format: "
	       "https://host[/path]");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"https://@h/\"}"), NULL,
	       "webhooks[0].clientConfig.url: Invalid value: \"\": user information is not "
	       "permitted in the URL");
	expect(&vwc_res, HOOK("\"clientConfig\":{\"url\":\"hook.example.com/x\"}"), NULL,
	       "webhooks[0].clientConfig.url: Invalid value: \"\": 'https' is the only allowed URL "
	       "scheme; desired format: https://host[/path] | "
	       "webhooks[0].clientConfig.url: Invalid value: \"\": host must be provided; desired "
	       "format: https://host[/path]");
}
END_TEST

START_TEST(client_service)
{
	expect(&vwc_res, HOOK("\"clientConfig\":{\"service\":{\"port\":70000}}"), NULL,
	       "webhooks[0].clientConfig.service.name: Required value: service name is required | "
	       "webhooks[0].clientConfig.service.namespace: Required value: service namespace is "
	       "required | "
	       "webhooks[0].clientConfig.service.port: Invalid value: 70000: port is not valid: "
	       "must be between 1 and 65535, inclusive");
	expect(&vwc_res,
	       HOOK("\"clientConfig\":{\"service\":{\"namespace\":\"n\",\"name\":\"s\","
		    "\"path\":\"//\"}}"),
	       NULL,
	       "webhooks[0].clientConfig.service.path: Invalid value: \"//\": segment[0] may "
	       "not be empty");
	expect(&vwc_res,
	       HOOK("\"clientConfig\":{\"service\":{\"namespace\":\"n\",\"name\":\"s\","
		    "\"path\":\"a//b/\"}}"),
	       NULL, /* less its first byte and last slash: "//b", segments "", "", "b" */
	       "webhooks[0].clientConfig.service.path: Invalid value: \"a//b/\": must start with a "
	       "'/' | "
	       "webhooks[0].clientConfig.service.path: Invalid value: \"a//b/\": segment[0] may "
	       "not be empty | "
	       "webhooks[0].clientConfig.service.path: Invalid value: \"a//b/\": segment[1] may "
	       "not be empty");
	expect(&vwc_res,
	       HOOK("\"clientConfig\":{\"service\":{\"namespace\":\"n\",\"name\":\"s\","
		    "\"path\":\"/ok/Not_OK/\"}}"),
	       NULL,
	       "webhooks[0].clientConfig.service.path: Invalid value: \"/ok/Not_OK/\": segment[1]: "
	       "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
	       "'-' or '.', and must start and end with an alphanumeric character (e.g. "
	       "'example.com', regex used for validation is "
	       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
	expect(&vwc_res,
	       HOOK("\"clientConfig\":{\"service\":{\"namespace\":\"n\",\"name\":\"s\","
		    "\"path\":\"/\"}}"),
	       NULL, "");
}
END_TEST

START_TEST(selectors)
{
	expect(
	    &vwc_res,
	    HOOK(URL_CC ",\"namespaceSelector\":{\"matchLabels\":{\"b\":\"x y\",\"a/b/c\":\"v\"}},"
			"\"objectSelector\":{\"matchExpressions\":[{\"key\":\"k\","
			"\"operator\":\"In\"},{\"key\":\"k\",\"operator\":\"Exists\","
			"\"values\":[\"v\"]},{\"key\":\"k\",\"operator\":\"Near\"}]}"),
	    NULL,
	    "webhooks[0].namespaceSelector.matchLabels: Invalid value: \"a/b/c\": a qualified "
	    "name must consist of alphanumeric characters, '-', '_' or '.', and must start and "
	    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
	    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
	    "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName') | "
	    "webhooks[0].namespaceSelector.matchLabels: Invalid value: \"x y\": a valid label "
	    "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
	    "must start and end with an alphanumeric character (e.g. 'MyValue',  or "
	    "'my_value',  or '12345', regex used for validation is "
	    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?') | "
	    "webhooks[0].objectSelector.matchExpressions[0].values: Required value: must be "
	    "specified when `operator` is 'In' or 'NotIn' | "
	    "webhooks[0].objectSelector.matchExpressions[1].values: Forbidden: may not be "
	    "specified when `operator` is 'Exists' or 'DoesNotExist' | "
	    "webhooks[0].objectSelector.matchExpressions[2].operator: Invalid value: \"Near\": "
	    "not a valid selector operator");
	/* a stored bad label value in a selector may stay on update (kube's relaxation) */
	const char *bad = HOOK(URL_CC ",\"objectSelector\":{\"matchExpressions\":[{\"key\":\"k\","
				      "\"operator\":\"In\",\"values\":[\"x y\"]}]}");
	json_t *c = run(&vwc_res, bad, NULL);
	ck_assert_int_eq(json_array_size(c), 1);
	json_decref(c);
	expect(&vwc_res, bad, bad, "");
}
END_TEST

START_TEST(match_conditions_checked)
{
	const char *ok = HOOK(URL_CC ",\"matchConditions\":[{\"name\":\"x\","
				     "\"expression\":\"request.namespace != 'kube-system'\"}]");
	expect(&vwc_res, ok, NULL, "");
	expect(&mwc_res, ok, NULL, "");
	const char *bad = HOOK(URL_CC ",\"matchConditions\":[{\"name\":\"x\","
				      "\"expression\":\"nope\"},{\"name\":\"x\",\"expression\":"
				      "\"true\"},{\"name\":\"\",\"expression\":\"\"}]");
	expect(&vwc_res, bad, NULL,
	       "webhooks[0].matchConditions[0].expression: Invalid value: \"nope\": compilation "
	       "failed: ERROR: <input>:1:1: undeclared reference to 'nope' (in container '')\n"
	       " | nope\n"
	       " | ^ | "
	       "webhooks[0].matchConditions[1].name: Duplicate value: \"x\" | "
	       "webhooks[0].matchConditions[2].expression: Required value | "
	       "webhooks[0].matchConditions[2].name: Required value");
	expect(&vwc_res, HOOK(URL_CC ",\"matchConditions\":[]"), NULL, "");
}
END_TEST

START_TEST(meta_and_message)
{
	json_t *c = run(&vwc_res,
			"{\"metadata\":{\"name\":\"Bad_Name\"},\"webhooks\":[{\"name\":\"a.b.c\","
			"\"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v1\"]," URL_CC
			",\"timeoutSeconds\":99}]}",
			NULL);
	ck_assert_int_eq(json_array_size(c), 2);
	char *m = val_status_message(&vwc_res, "Bad_Name", c);
	ck_assert_ptr_nonnull(strstr(m,
				     "ValidatingWebhookConfiguration.admissionregistration.k8s.io "
				     "\"Bad_Name\" is invalid: [metadata.name: Invalid value: "
				     "\"Bad_Name\": a lowercase RFC 1123 subdomain"));
	free(m);
	json_decref(c);
}
END_TEST

/* ---- a CRD's spec.conversion (val_crd_conversion) ---------------------------------- */

/* The causes of val_crd_conversion on a CRD whose spec is `spec`. */
static void expect_conv(const char *spec, bool need_known, const char *want)
{
	char doc[2048];
	snprintf(doc, sizeof(doc), "{\"spec\":%s}", spec);
	json_t *crd = J(doc), *c = json_array();
	val_crd_conversion_defaults(crd);
	val_crd_conversion(c, crd, need_known, false);
	char *got = lines(c);
	ck_assert_msg(strcmp(got, want) == 0, "\nwant: %s\ngot:  %s", want, got);
	free(got);
	json_decref(c);
	json_decref(crd);
}

#define CONV(strategy, webhook) "{\"conversion\":{\"strategy\":\"" strategy "\"" webhook "}}"
#define SVC_WH(versions)                                                                   \
	",\"webhook\":{\"clientConfig\":{\"service\":{\"name\":\"s\",\"namespace\":\"n\"," \
	"\"path\":\"/convert\"}},\"conversionReviewVersions\":" versions "}"

/* kube's validateCustomResourceConversion, case by case */
START_TEST(crd_conversion)
{
	expect_conv(CONV("None", ""), true, "");
	expect_conv(CONV("Webhook", SVC_WH("[\"v1\"]")), true, "");
	expect_conv(CONV("Webhook", SVC_WH("[\"v1beta1\",\"v1\"]")), true, "");
	expect_conv(CONV("", ""), true, "spec.conversion.strategy: Required value");
	expect_conv(CONV("Magic", ""), true,
		    "spec.conversion.strategy: Unsupported value: \"Magic\": supported values: "
		    "\"None\", \"Webhook\"");
	expect_conv(CONV("Webhook", ""), true,
		    "spec.conversion.webhookClientConfig: Required value: required when strategy "
		    "is set to Webhook | spec.conversion.conversionReviewVersions: Required value");
	expect_conv(CONV("Webhook", ",\"webhook\":{\"clientConfig\":{},"
				    "\"conversionReviewVersions\":[\"v1\"]}"),
		    true,
		    "spec.conversion.webhookClientConfig: Required value: exactly one of url or "
		    "service is required");
	expect_conv(CONV("Webhook", ",\"webhook\":{\"clientConfig\":{\"url\":\"http://x/c\"},"
				    "\"conversionReviewVersions\":[\"v1\"]}"),
		    true,
		    "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is "
		    "the only allowed URL scheme; desired format: https://host[/path]");
	expect_conv(CONV("Webhook", ",\"webhook\":{\"clientConfig\":{\"service\":{\"name\":\"s\","
				    "\"namespace\":\"n\",\"port\":0}},"
				    "\"conversionReviewVersions\":[\"v1\"]}"),
		    true,
		    "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is "
		    "not valid: must be between 1 and 65535, inclusive");
	expect_conv(CONV("Webhook", SVC_WH("[\"v3\"]")), true,
		    "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v3\"}: "
		    "must include at least one of v1, v1beta1");
	/* an update whose old CRD knew none: not required (ValidateCustomResourceDefinitionUpdate) */
	expect_conv(CONV("Webhook", SVC_WH("[\"v3\"]")), false, "");
	expect_conv(CONV("Webhook", SVC_WH("[\"v1\",\"v1\"]")), true,
		    "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v1\": duplicate "
		    "version");
	expect_conv(CONV("None", SVC_WH("[\"v1\"]")), true,
		    "spec.conversion.webhookClientConfig: Forbidden: should not be set when "
		    "strategy is not set to Webhook | spec.conversion.conversionReviewVersions: "
		    "Forbidden: should not be set when strategy is not set to Webhook");
	expect_conv("{\"preserveUnknownFields\":true,"
		    "\"conversion\":{\"strategy\":\"Webhook\"" SVC_WH("[\"v1\"]") "}}",
		    true,
		    "spec.conversion.strategy: Invalid value: \"Webhook\": must be None if "
		    "spec.preserveUnknownFields is true");
}
END_TEST

/* A self-signed CA certificate (EC P-256, valid for a century), base64 as
 * JSON carries a caBundle. */
#define GOOD_CA                                                                    \
	"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJjVENDQVJlZ0F3SUJBZ0lVWTdOWUlh" \
	"dWdMNEZaY001eHJ5MnoyQ0ZOclhRd0NnWUlLb1pJemowRUF3SXcKRFRFTE1Ba0dBMVVFQXd3" \
	"Q1kyRXdJQmNOTWpZeE1qQXpNREV5TVRFMFdoZ1BNakV5TmpFeE1Ea3dNVEl4TVRSYQpNQTB4" \
	"Q3pBSkJnTlZCQU1NQW1OaE1Ga3dFd1lIS29aSXpqMENBUVlJS29aSXpqMERBUWNEUWdBRVhT" \
	"MHpZWDF3ClVKN3paUDdhamtmUGg0eDRnSG9YekdOcmtzbW80SW5LVlFtNUU0R1BkSCtXcE5i" \
	"QnQwc1ozQm1RTzZiT2xsdWcKNms1YXdJRVIrOUI3ZGFOVE1GRXdIUVlEVlIwT0JCWUVGRXY0" \
	"cTQvdTNuZ1RnaHJjWEsyYW95UGozeW5RTUI4RwpBMVVkSXdRWU1CYUFGRXY0cTQvdTNuZ1Rn" \
	"aHJjWEsyYW95UGozeW5RTUE4R0ExVWRFd0VCL3dRRk1BTUJBZjh3CkNnWUlLb1pJemowRUF3" \
	"SURTQUF3UlFJZ1BvVHlkTUJXZmZZY0ZITXBlQmdzMk1NSEZOcm5WYXV6S3Q3V09nRzQKMXNj" \
	"Q0lRRGVub0k3YUZlejhibGdCaTJXRDVJa3lqWkE0ZnFheUZOVWJUdHgwRGdTV0E9PQotLS0t" \
	"LUVORCBDRVJUSUZJQ0FURS0tLS0tCg=="

/* The causes of val_crd_conversion for a url webhook with caBundle ca64. */
static void expect_ca(const char *ca64, bool allow_invalid, const char *want)
{
	char doc[4096];
	snprintf(doc, sizeof(doc),
		 "{\"spec\":{\"conversion\":{\"strategy\":\"Webhook\",\"webhook\":{"
		 "\"clientConfig\":{\"url\":\"https://x/c\",\"caBundle\":\"%s\"},"
		 "\"conversionReviewVersions\":[\"v1\"]}}}}",
		 ca64);
	json_t *crd = J(doc), *c = json_array();
	val_crd_conversion(c, crd, true, allow_invalid);
	char *got = lines(c);
	ck_assert_msg(strcmp(got, want) == 0, "\nwant: %s\ngot:  %s", want, got);
	/* what the establishing controller asks: the bundle alone */
	ck_assert(val_crd_ca_bundle_ok(crd) == (strcmp(ca64, GOOD_CA) == 0));
	free(got);
	json_decref(c);
	json_decref(crd);
}

/* webhook.ValidateCABundle through client-go's rootCertPool, with kube's
 * words; allowInvalidCABundle (create, not Established, old one invalid)
 * lets it through */
START_TEST(crd_conversion_ca_bundle)
{
	expect_ca(GOOD_CA, false, "");
	expect_ca("aGVsbG8=", false, /* "hello" */
		  "spec.conversion.webhookClientConfig.caBundle: Invalid value: []byte{0x68, 0x65, "
		  "0x6c, 0x6c, 0x6f}: unable to load root certificates: unable to parse bytes as "
		  "PEM block");
	expect_ca("aGVsbG8=", true, "");
	/* "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" */
	expect_ca(
	    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkFBQUEKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=",
	    false,
	    "spec.conversion.webhookClientConfig.caBundle: Invalid value: []byte{0x2d, 0x2d, "
	    "0x2d, 0x2d, 0x2d, 0x42, 0x45, 0x47, 0x49, 0x4e, 0x20, 0x43, 0x45, 0x52, 0x54, "
	    "0x49, 0x46, 0x49, 0x43, 0x41, 0x54, 0x45, 0x2d, 0x2d, 0x2d, 0x2d, 0x2d, 0xa, "
	    "0x41, 0x41, 0x41, 0x41, 0xa, 0x2d, 0x2d, 0x2d, 0x2d, 0x2d, 0x45, 0x4e, 0x44, "
	    "0x20, 0x43, 0x45, 0x52, 0x54, 0x49, 0x46, 0x49, 0x43, 0x41, 0x54, 0x45, 0x2d, "
	    "0x2d, 0x2d, 0x2d, 0x2d, 0xa}: unable to load root certificates: failed to parse "
	    "certificate: x509: malformed certificate");
	/* "-----BEGIN X-----\nAAAA\n-----END X-----\n": PEM, no certificate */
	expect_ca(
	    "LS0tLS1CRUdJTiBYLS0tLS0KQUFBQQotLS0tLUVORCBYLS0tLS0K", false,
	    "spec.conversion.webhookClientConfig.caBundle: Invalid value: []byte{0x2d, 0x2d, "
	    "0x2d, 0x2d, 0x2d, 0x42, 0x45, 0x47, 0x49, 0x4e, 0x20, 0x58, 0x2d, 0x2d, 0x2d, "
	    "0x2d, 0x2d, 0xa, 0x41, 0x41, 0x41, 0x41, 0xa, 0x2d, 0x2d, 0x2d, 0x2d, 0x2d, "
	    "0x45, 0x4e, 0x44, 0x20, 0x58, 0x2d, 0x2d, 0x2d, 0x2d, 0x2d, 0xa}: unable to load "
	    "root certificates: no valid certificate authority data seen");
}
END_TEST

/* v1 SetDefaults_ServiceReference: port 443; a given port stays */
START_TEST(crd_conversion_defaults)
{
	json_t *crd = J("{\"spec\":" CONV("Webhook", SVC_WH("[\"v1\"]")) "}");
	val_crd_conversion_defaults(crd);
	ck_assert_int_eq(
	    json_integer_value(obj_get(crd, "spec.conversion.webhook.clientConfig.service.port")),
	    443);
	json_decref(crd);
	crd = J("{\"spec\":{\"conversion\":{\"strategy\":\"Webhook\",\"webhook\":{\"clientConfig\":"
		"{\"service\":{\"name\":\"s\",\"namespace\":\"n\",\"port\":9443}}}}}}");
	val_crd_conversion_defaults(crd);
	ck_assert_int_eq(
	    json_integer_value(obj_get(crd, "spec.conversion.webhook.clientConfig.service.port")),
	    9443);
	json_decref(crd);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("validate_webhook");
	TCase *t = tcase_create("core");
	tcase_add_test(t, resource_rows);
	tcase_add_test(t, defaults_validating);
	tcase_add_test(t, defaults_mutating_keep_given);
	tcase_add_test(t, valid_objects);
	tcase_add_test(t, webhook_names);
	tcase_add_test(t, policies);
	tcase_add_test(t, side_effects);
	tcase_add_test(t, review_versions);
	tcase_add_test(t, rules);
	tcase_add_test(t, rule_resources);
	tcase_add_test(t, client_url);
	tcase_add_test(t, client_service);
	tcase_add_test(t, selectors);
	tcase_add_test(t, match_conditions_checked);
	tcase_add_test(t, meta_and_message);
	tcase_add_test(t, crd_conversion);
	tcase_add_test(t, crd_conversion_ca_bundle);
	tcase_add_test(t, crd_conversion_defaults);
	suite_add_tcase(s, t);
	return s;
}
