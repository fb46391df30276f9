/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of proxy/validation/crd_rules.c: CRD validation rules (x-kubernetes-validations)
 * checked when a CRD is written and run on custom objects, with kube's
 * causes: messages, messageExpression, reason, fieldPath, transition rules,
 * optionalOldSelf, map-list correlation, ratcheting, evaluation errors.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/validation/crd_validate.h"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j != NULL, "bad JSON in test: %s: %s", e.text, s);
	return j;
}

/* "field: message" of each cause, joined with " | ". */
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

#define SCHEMA                                                                                     \
	"{\"type\":\"object\",\"x-kubernetes-validations\":[{\"rule\":\"self.metadata.name != "    \
	"'bad'\",\"message\":\"bad name\"}],\"properties\":{\"spec\":{\"type\":\"object\","        \
	"\"x-kubernetes-validations\":[{\"rule\":\"self.min <= self.max\",\"fieldPath\":\".min\"," \
	"\"message\":\"min above max\"},{\"rule\":\"self.max < 100\",\"messageExpression\":"       \
	"\"'max ' + string(self.max) + ' too big'\",\"reason\":\"FieldValueForbidden\"},"          \
	"{\"rule\":\"self.mode == oldSelf.mode\",\"message\":\"mode is immutable\"},"              \
	"{\"rule\":\"self.max / self.min > 0\"}],"                                                 \
	"\"properties\":{\"min\":{\"type\":\"integer\"},\"max\":{\"type\":\"integer\"},"           \
	"\"mode\":{\"type\":\"string\",\"x-kubernetes-validations\":[{\"rule\":\"self.size() < "   \
	"4\"}]},\"items\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\","                 \
	"\"x-kubernetes-list-map-keys\":[\"k\"],\"items\":{\"type\":\"object\",\"properties\":{"   \
	"\"k\":{\"type\":\"string\"},\"v\":{\"type\":\"integer\"}},\"x-kubernetes-validations\":"  \
	"[{\"rule\":\"self.v == oldSelf.v\",\"message\":\"v is fixed\"}]}}}}}}"

#define OBJ(name, min, max, mode, items)                                                   \
	"{\"apiVersion\":\"t.io/v1\",\"kind\":\"T\",\"metadata\":{\"name\":\"" name "\"}," \
	"\"spec\":{\"min\":" min ",\"max\":" max ",\"mode\":\"" mode "\",\"items\":" items "}}"

static void expect_eval(const char *obj, const char *old, const char *want, const char *warn)
{
	json_t *s = J(SCHEMA), *o = J(obj), *oo = old ? J(old) : NULL, *c = json_array();
	json_t *w = NULL;
	struct crd_rules *cr = crd_rules_compile(s);
	ck_assert_ptr_nonnull(cr);
	crd_rules_eval(cr, o, oo, c, &w);
	char *got = lines(c);
	ck_assert_msg(strcmp(got, want) == 0, "\nwant: %s\ngot:  %s", want, got);
	const char *w0 = json_string_value(json_array_get(w, 0));
	ck_assert_str_eq(w0 ? w0 : "", warn ? warn : "");
	free(got);
	crd_rules_free(cr);
	json_decref(w);
	json_decref(c);
	json_decref(o);
	json_decref(oo);
	json_decref(s);
}

START_TEST(eval_messages)
{
	expect_eval(OBJ("ok", "1", "2", "a", "[]"), NULL, "", NULL);
	expect_eval(OBJ("bad", "300", "200", "long", "[]"), NULL,
		    "<nil>: Invalid value: \"object\": bad name | "
		    "spec.min: Invalid value: \"object\": min above max | "
		    "spec: Forbidden: max 200 too big | "
		    "spec: Invalid value: \"object\": failed rule: self.max / self.min > 0 | "
		    "spec.mode: Invalid value: \"string\": failed rule: self.size() < 4",
		    NULL);
	expect_eval(OBJ("ok", "0", "2", "a", "[]"), NULL,
		    "spec: Invalid value: \"object\": division by zero evaluating rule: self.max "
		    "/ self.min > 0",
		    NULL);
}
END_TEST

START_TEST(eval_transitions)
{
	/* oldSelf: a changed mode; a map-list item matched by key */
	expect_eval(OBJ("ok", "1", "2", "b", "[{\"k\":\"x\",\"v\":2}]"),
		    OBJ("ok", "1", "2", "a", "[{\"k\":\"x\",\"v\":1}]"),
		    "spec: Invalid value: \"object\": mode is immutable | "
		    "spec.items[0]: Invalid value: \"object\": v is fixed",
		    NULL);
	/* a new key has no old item: its transition rule does not run */
	expect_eval(OBJ("ok", "1", "2", "a", "[{\"k\":\"y\",\"v\":2}]"),
		    OBJ("ok", "1", "2", "a", "[{\"k\":\"x\",\"v\":1}]"), "", NULL);
	/* ratcheting: an unchanged failing value is a warning */
	expect_eval(OBJ("ok", "1", "2", "long", "[]"), OBJ("ok", "1", "2", "long", "[]"), "",
		    "spec.mode: Invalid value: \"string\": failed rule: self.size() < 4");
}
END_TEST

START_TEST(check_crd)
{
	/* the rules' fields first; with errors there, nothing is compiled (kube) */
	json_t *c = json_array();
	json_t *s = J("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\","
		      "\"x-kubernetes-validations\":[{\"rule\":\"\"},"
		      "{\"rule\":\"self >\",\"reason\":\"Nope\",\"fieldPath\":\".x\"}]}}}");
	ck_assert_int_eq(crd_rules_check(s, "p", c), 3);
	char *got = lines(c);
	ck_assert_str_eq(got,
			 "p.properties[a].x-kubernetes-validations[0].rule: Required value: "
			 "rule is not specified | "
			 "p.properties[a].x-kubernetes-validations[1].reason: Unsupported value: "
			 "\"Nope\": supported values: \"FieldValueDuplicate\", "
			 "\"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\" | "
			 "p.properties[a].x-kubernetes-validations[1].fieldPath: Invalid value: "
			 "\".x\": fieldPath must be a valid path");
	free(got);
	json_decref(s);
	json_decref(c);
	/* then the compile */
	c = json_array();
	s = J("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\","
	      "\"x-kubernetes-validations\":[{\"rule\":\"self >\"},"
	      "{\"rule\":\"self > 1\",\"optionalOldSelf\":true},{\"rule\":\"nope > 1\"}]}}}");
	ck_assert_int_eq(crd_rules_check(s, "p", c), 3);
	got = lines(c);
	ck_assert_msg(strstr(got,
			     "p.properties[a].x-kubernetes-validations[0].rule: Invalid value: "
			     "apiextensions.ValidationRule{Rule:\"self >\", Message:\"\"") &&
			  strstr(got, "compilation failed: ERROR: <input>:1:7: Syntax error:"),
		      "%s", got);
	ck_assert_msg(strstr(got, "x-kubernetes-validations[1].optionalOldSelf: Invalid value: "
				  "true: may not be set if oldSelf is not used in rule"),
		      "%s", got);
	ck_assert_msg(strstr(got, "x-kubernetes-validations[2].rule: Invalid value: "
				  "apiextensions.ValidationRule{Rule:\"nope > 1\"") &&
			  strstr(got, "undeclared reference to 'nope'"),
		      "%s", got);
	free(got);
	json_decref(s);
	json_decref(c);
	/* no rules: nothing compiled */
	s = J("{\"type\":\"object\"}");
	ck_assert_ptr_null(crd_rules_compile(s));
	json_decref(s);
}
END_TEST

/* The rules' types, as kube's compileRule checks them: a bool rule (not
 * dyn), a string messageExpression, checked only when the rule is good. */
START_TEST(check_types)
{
	json_t *c = json_array();
	json_t *s =
	    J("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
	      "\"n\":{\"type\":\"integer\"}},\"x-kubernetes-validations\":["
	      "{\"rule\":\"self.name\"},"
	      "{\"rule\":\"dyn(true)\"},"
	      "{\"rule\":\"self.n > 1\",\"messageExpression\":\"self.n\"},"
	      "{\"rule\":\"self.n > 1\",\"messageExpression\":\"'n is ' + string(self.n)\"},"
	      "{\"rule\":\"self.name\",\"messageExpression\":\"self.n\"},"
	      "{\"rule\":\"self.n + 'a' == 'b'\"},"
	      "{\"rule\":\"self.name.size() > 1\",\"messageExpression\":\"nope\"}]}");
	ck_assert_int_eq(crd_rules_check(s, "p", c), 6);
	char *got = lines(c);
	const char *want[] = {
	    "p.x-kubernetes-validations[0].rule: Invalid value: "
	    "apiextensions.ValidationRule{Rule:\"self.name\", Message:\"\", "
	    "MessageExpression:\"\", "
	    "Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", "
	    "OptionalOldSelf:(*bool)(nil)}: cel expression must evaluate to a bool",
	    "p.x-kubernetes-validations[1].rule: Invalid value: "
	    "apiextensions.ValidationRule{Rule:\"dyn(true)\"",
	    "p.x-kubernetes-validations[2].messageExpression: Invalid value: "
	    "apiextensions.ValidationRule{Rule:\"self.n > 1\", Message:\"\", "
	    "MessageExpression:\"self.n\", Reason:(*apiextensions.FieldValueErrorReason)(nil), "
	    "FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: messageExpression must evaluate to a "
	    "string",
	    "p.x-kubernetes-validations[4].rule: Invalid value: "
	    "apiextensions.ValidationRule{Rule:\"self.name\", Message:\"\", "
	    "MessageExpression:\"self.n\"",
	    "p.x-kubernetes-validations[5].rule: Invalid value: "
	    "apiextensions.ValidationRule{Rule:\"self.n + 'a' == 'b'\"",
	    "compilation failed: ERROR: <input>:1:8: found no matching overload for '_+_' "
	    "applied to '(int, string)'\n | self.n + 'a' == 'b'\n | .......^",
	    "p.x-kubernetes-validations[6].messageExpression: Invalid value: "
	    "apiextensions.ValidationRule{Rule:\"self.name.size() > 1\"",
	    "messageExpression compilation failed: ERROR: <input>:1:1: undeclared reference to "
	    "'nope' (in container '')",
	};
	for (size_t i = 0; i < KB_ARRAY_SIZE(want); i++)
		ck_assert_msg(strstr(got, want[i]), "missing %s in\n%s", want[i], got);
	ck_assert_msg(!strstr(got, "validations[3]"), "%s", got);
	ck_assert_msg(!strstr(got, "validations[4].messageExpression"), "%s", got);
	free(got);
	json_decref(s);
	json_decref(c);
}
END_TEST

#define TRY_MORE                                                                              \
	" (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where " \
	"arrays, "                                                                            \
	"maps, and strings are declared)"

/* kube's refusal of rules whose estimated cost is too high, per rule and
 * for the whole schema; the bounds a schema declares make them cheap. */
START_TEST(check_cost)
{
	const char *rule = "self.all(x, x.matches('^[a-z]+$'))";
	char schema[1024];
	snprintf(
	    schema, sizeof(schema),
	    "{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\",%s"
	    "\"items\":{\"type\":\"string\"%s},\"x-kubernetes-validations\":[{\"rule\":\"%s\"}]}}}",
	    "", "", rule);
	json_t *c = json_array(), *s = J(schema);
	ck_assert_int_eq(crd_rules_check(s, "p", c), 3);
	char *got = lines(c);
	ck_assert_str_eq(got,
			 "p.properties[l].x-kubernetes-validations[0].rule: Forbidden: estimated "
			 "rule cost exceeds budget by factor of more than 100x" TRY_MORE
			 " | p.properties[l].x-kubernetes-validations[0].rule: Forbidden: "
			 "contributed to estimated rule cost total exceeding cost limit for "
			 "entire OpenAPIv3 schema | p: Forbidden: x-kubernetes-validations "
			 "estimated rule cost total for entire OpenAPIv3 schema exceeds budget "
			 "by factor of more than 100x" TRY_MORE);
	free(got);
	json_decref(c);
	/* an update that keeps the schema: no per-expression limit (the total
	 * still holds) */
	c = json_array();
	json_t *same = json_deep_copy(s);
	ck_assert_int_eq(crd_rules_check_update(s, same, "p", c), 2);
	got = lines(c);
	ck_assert_msg(!strstr(got, "estimated rule cost exceeds"), "%s", got);
	free(got);
	json_decref(same);
	json_decref(s);
	json_decref(c);
	/* bounded: accepted */
	snprintf(
	    schema, sizeof(schema),
	    "{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\",%s"
	    "\"items\":{\"type\":\"string\"%s},\"x-kubernetes-validations\":[{\"rule\":\"%s\"}]}}}",
	    "\"maxItems\":10,", ",\"maxLength\":64", rule);
	c = json_array();
	s = J(schema);
	ck_assert_int_eq(crd_rules_check(s, "p", c), 0);
	json_decref(s);
	json_decref(c);
	/* a rule on the items of an unbounded list runs once per item; a
	 * factor under 1.5 is written with six decimals: cel-go's 3 + 2 + 2 +
	 * 2 + 2 = 11, 1048576 times (a 3 MiB request's strings) */
	c = json_array();
	s = J("{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\",\"items\":{"
	      "\"type\":\"string\",\"x-kubernetes-validations\":[{\"rule\":\"self.size() < 10 && "
	      "self.startsWith('a') && self.endsWith('b') && self != 'c' && self != 'd'\"}]}}}}");
	ck_assert_int_eq(crd_rules_check(s, "p", c), 1);
	got = lines(c);
	ck_assert_str_eq(got, "p.properties[l].items.x-kubernetes-validations[0].rule: Forbidden: "
			      "estimated rule cost exceeds budget by factor of 1.153434x" TRY_MORE);
	free(got);
	json_decref(s);
	json_decref(c);
	/* between 1.5 and 100: one decimal; cel-go's 1 + 1048575 * (2 + 1 +
	 * 15) + 1 */
	c = json_array();
	s = J("{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\",\"items\":{"
	      "\"type\":\"string\"},\"x-kubernetes-validations\":[{\"rule\":\"self.all(x, "
	      "x.size() < 10 && x.startsWith('a') && x.endsWith('b') && x != 'c' && x != 'd' && "
	      "x != 'e' && x != 'f')\"}]}}}");
	ck_assert_int_eq(crd_rules_check(s, "p", c), 1);
	got = lines(c);
	ck_assert_str_eq(got, "p.properties[l].x-kubernetes-validations[0].rule: Forbidden: "
			      "estimated rule cost exceeds budget by factor of 1.9x" TRY_MORE);
	free(got);
	json_decref(s);
	json_decref(c);
	/* a messageExpression is not multiplied */
	c = json_array();
	s = J("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"string\","
	      "\"x-kubernetes-validations\":[{\"rule\":\"self.size() < 10\",\"messageExpression\":"
	      "\"self.matches('^[a-z]+$') ? 'a' : self + self + self + self + self\"}]}}}");
	ck_assert_int_eq(crd_rules_check(s, "p", c), 0);
	json_decref(s);
	json_decref(c);
}
END_TEST

static void expect_accepted(const char *schema)
{
	json_t *c = json_array(), *s = J(schema);
	int n = crd_rules_check(s, "p", c);
	char *got = lines(c);
	ck_assert_msg(n == 0, "%s", got);
	free(got);
	json_decref(s);
	json_decref(c);
}

/* Sizes as kube's estimator takes them, which real CRDs (Gateway API's,
 * Kueue's) rely on to install. */
START_TEST(check_cost_sizes)
{
	/* a map's keys have no size (kube's key type is its unsized string
	 * type, the path "@keys"): a regex on each key of an open map is cheap */
	expect_accepted(
	    "{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"object\","
	    "\"maxProperties\":16,\"additionalProperties\":{\"type\":\"string\","
	    "\"maxLength\":4096},\"x-kubernetes-validations\":[{\"rule\":\"self.all(k, "
	    "k.matches(r'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*"
	    "[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$'))\"},{\"rule\":"
	    "\"self.all(k, k.split('/')[0].size() < 253)\"}]}}}");
	/* an item's least size counts its required properties (kube's
	 * MinSerializedSize): an unbounded list of conditions holds fewer items */
	expect_accepted(
	    "{\"type\":\"object\",\"x-kubernetes-validations\":[{\"rule\":\"has(self.status) && "
	    "has(self.status.conditions) && self.status.conditions.exists(c, c.type == 'Ready' && "
	    "c.status == 'True') && has(oldSelf.status) && has(oldSelf.status.conditions) && "
	    "oldSelf.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True') ? "
	    "self.spec.q == oldSelf.spec.q : true\"}],\"properties\":{\"spec\":{\"type\":"
	    "\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"maxLength\":253}}},"
	    "\"status\":{\"type\":\"object\",\"properties\":{\"conditions\":{\"type\":\"array\","
	    "\"items\":{\"type\":\"object\",\"required\":[\"lastTransitionTime\",\"message\","
	    "\"reason\",\"status\",\"type\"],\"properties\":{\"lastTransitionTime\":{\"type\":"
	    "\"string\",\"format\":\"date-time\"},\"message\":{\"type\":\"string\",\"maxLength\":"
	    "32768},\"reason\":{\"type\":\"string\",\"maxLength\":1024},\"status\":{\"type\":"
	    "\"string\"},\"type\":{\"type\":\"string\",\"maxLength\":316}}}}}}}}");
	/* an enum string without maxLength is as long as its longest value
	 * (kube 1.29 on): a regex on it, however many times, is cheap */
	expect_accepted("{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\","
			"\"items\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":"
			"[\"low\",\"medium\",\"high\"],\"x-kubernetes-validations\":[{\"rule\":"
			"\"self.matches('^[a-z]+$')\"}]}}}}}");
	/* matches: the string at 0.1 a character (cel-go), here 4 bytes each
	 * of a maxLength of 1024 (kube), 1024 times */
	expect_accepted(
	    "{\"type\":\"object\",\"properties\":{\"r\":{\"type\":\"array\",\"maxItems\":16,"
	    "\"items\":{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"array\","
	    "\"maxItems\":64,\"items\":{\"type\":\"object\",\"properties\":{\"t\":{\"type\":"
	    "\"string\"},\"v\":{\"type\":\"string\",\"maxLength\":1024}},"
	    "\"x-kubernetes-validations\":[{\"rule\":\"(self.t in ['Exact','PathPrefix']) ? "
	    "self.v.matches(r'^(?:[-A-Za-z0-9/._~!$&()*+,;=:@]|[%][0-9a-fA-F]{2})+$') : "
	    "true\"}]}}}}}}}");
	/* and the other way: 3000 strings of up to 1000 characters, each
	 * matched against 43 characters, cost 3000 * (1 + 401 * 11) for kube */
	json_t *c = json_array(),
	       *s = J("{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\","
		      "\"maxItems\":3000,\"items\":{\"type\":\"string\",\"maxLength\":1000,"
		      "\"x-kubernetes-validations\":[{\"rule\":\"self.matches("
		      "'^[a-z]+[a-z]+[a-z]+[a-z]+[a-z]+[a-z]+[a-z]$')\"}]}}}}");
	ck_assert_int_eq(crd_rules_check(s, "p", c), 1);
	char *got = lines(c);
	ck_assert_msg(strstr(got, "estimated rule cost exceeds budget by factor of 1.323600x"),
		      "%s", got);
	free(got);
	json_decref(s);
	json_decref(c);
}
END_TEST

/* kube 1.33 compiles a new rule in its 1.32 environment (no semver, no
 * encoders at all) and a rule the stored CRD already has in its 1.33 one. */
START_TEST(check_environments)
{
	const char *semver = "{\"type\":\"object\",\"properties\":{\"v\":{\"type\":"
			     "\"string\",\"maxLength\":64,\"x-kubernetes-validations\":[{"
			     "\"rule\":\"isSemver(self)\"}]}}}";
	json_t *c = json_array(), *s = J(semver);
	ck_assert_int_eq(crd_rules_check(s, "p", c), 1);
	char *got = lines(c);
	ck_assert_msg(strstr(got, "compilation failed: ERROR: <input>:1:9: undeclared reference to "
				  "'isSemver' (in container '')"),
		      "%s", got);
	free(got);
	json_decref(c);
	/* the same rule, stored: kept (a new sibling rule beside it too) */
	c = json_array();
	json_t *upd = J("{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"string\","
			"\"maxLength\":64,\"x-kubernetes-validations\":[{\"rule\":"
			"\"isSemver(self)\"},{\"rule\":\"self != 'x'\"}]}}}");
	ck_assert_int_eq(crd_rules_check_update(upd, s, "p", c), 0);
	json_decref(upd);
	json_decref(s);
	json_decref(c);
	/* base64 is no kube library */
	c = json_array();
	s = J("{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"string\","
	      "\"maxLength\":64,\"x-kubernetes-validations\":[{\"rule\":\"base64.decode(self) "
	      "!= b''\"}]}}}");
	ck_assert_int_eq(crd_rules_check(s, "p", c), 1);
	got = lines(c);
	ck_assert_msg(strstr(got, "undeclared reference to 'base64"), "%s", got);
	free(got);
	json_decref(s);
	json_decref(c);
}
END_TEST

/* kube 1.32+: a property named by a CEL keyword is selected as written, as
 * JobSet's volumeClaimPolicies rule does (`t.metadata.namespace`), or escaped. */
START_TEST(keyword_fields)
{
	const char *sc =
	    "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
	    "\"properties\":{\"templates\":{\"type\":\"array\",\"maxItems\":50,"
	    "\"items\":{\"type\":\"object\",\"properties\":{\"metadata\":{\"type\":"
	    "\"object\",\"properties\":{\"namespace\":{\"type\":\"string\","
	    "\"maxLength\":63}}}}}}},\"x-kubernetes-validations\":[{\"rule\":"
	    "\"self.templates.all(t, !has(t.metadata.namespace) || "
	    "size(t.metadata.namespace) == 0)\",\"message\":\"no namespace\"},"
	    "{\"rule\":\"self.templates.all(t, !has(t.metadata.__namespace__) || "
	    "t.metadata.__namespace__ != 'kube-system')\",\"message\":\"not there\"}]}}}";
	json_t *c = json_array(), *s = J(sc);
	ck_assert_int_eq(crd_rules_check(s, "p", c), 0);
	struct crd_rules *cr = crd_rules_compile(s);
	ck_assert_ptr_nonnull(cr);
	json_t *o = J("{\"spec\":{\"templates\":[{\"metadata\":{}},{\"metadata\":{"
		      "\"namespace\":\"kube-system\"}}]}}");
	json_t *w = NULL;
	crd_rules_eval(cr, o, NULL, c, &w);
	char *got = lines(c);
	ck_assert_str_eq(got,
			 "spec: Invalid value: \"object\": no namespace | spec: Invalid value: "
			 "\"object\": not there");
	free(got);
	crd_rules_free(cr);
	json_decref(w);
	json_decref(o);
	json_decref(s);
	json_decref(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("crd_rules");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, eval_messages);
	tcase_add_test(tc, eval_transitions);
	tcase_add_test(tc, check_crd);
	tcase_add_test(tc, check_types);
	tcase_add_test(tc, check_cost);
	tcase_add_test(tc, check_cost_sizes);
	tcase_add_test(tc, check_environments);
	tcase_add_test(tc, keyword_fields);
	suite_add_tcase(s, tc);
	return s;
}

#include "tests/unit/check_main.h"
