/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/crd_schema: structural openAPIV3Schema handling of custom
 * objects as kube-apiserver does it (pruning, defaulting, validation with
 * kube's field paths and texts), the structural check of CRD schemas and
 * kube's version priority.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/validation/crd_validate.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s (%s)", e.text, s);
	return j;
}

static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"spec\":{\"type\":\"object\",\"required\":[\"color\"],\"properties\":{"
    "\"replicas\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":10,\"default\":1},"
    "\"ratio\":{\"type\":\"number\",\"exclusiveMinimum\":true,\"minimum\":0},"
    "\"color\":{\"type\":\"string\",\"enum\":[\"red\",\"blue\"]},"
    "\"name\":{\"type\":\"string\",\"pattern\":\"^[a-z]\\\\d*$\",\"minLength\":1,\"maxLength\":4},"
    "\"tags\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":2,\"uniqueItems\":true,"
    "\"items\":{\"type\":\"string\"}},"
    "\"port\":{\"x-kubernetes-int-or-string\":true},"
    "\"qty\":{\"x-kubernetes-int-or-string\":true,\"anyOf\":[{\"type\":\"integer\"},"
    "{\"type\":\"string\"}],\"pattern\":\"^[0-9]+[KMG]?$\",\"minimum\":0},"
    "\"note\":{\"type\":\"string\",\"nullable\":true},"
    "\"mode\":{\"type\":\"string\",\"default\":\"fast\"},"
    "\"extra\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true},"
    "\"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"object\","
    "\"properties\":{\"v\":{\"type\":\"string\",\"default\":\"d\"}}}},"
    "\"items\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"n\":{\"type\":\"integer\"}}}},"
    "\"template\":{\"type\":\"object\",\"x-kubernetes-embedded-resource\":true,"
    "\"x-kubernetes-preserve-unknown-fields\":true}"
    "}}}}";

/* The causes' "field: message" lines joined with " | ". */
static char *validate_with(const char *schema, const char *obj_json)
{
	json_t *s = J(schema), *o = J(obj_json), *causes = json_array();
	crd_schema_validate(s, o, causes);
	size_t i;
	json_t *c;
	size_t cap = 4096;
	char *out = calloc(1, cap);
	json_array_foreach (causes, i, c) {
		size_t n = strlen(out);
		snprintf(out + n, cap - n, "%s%s: %s", i ? " | " : "",
			 json_string_value(json_object_get(c, "field")),
			 json_string_value(json_object_get(c, "message")));
	}
	json_decref(s);
	json_decref(o);
	json_decref(causes);
	return out;
}

static char *validate(const char *obj_json)
{
	return validate_with(SCHEMA, obj_json);
}

#define EXPECT_VALID(obj)                                           \
	do {                                                        \
		char *m_ = validate(obj);                           \
		ck_assert_msg(m_[0] == '\0', "unexpected: %s", m_); \
		free(m_);                                           \
	} while (0)
#define EXPECT_CAUSE(obj, want)                                                           \
	do {                                                                              \
		char *m_ = validate(obj);                                                 \
		ck_assert_msg(strstr(m_, want) != NULL, "wanted <%s> in <%s>", want, m_); \
		free(m_);                                                                 \
	} while (0)

START_TEST(valid_object)
{
	EXPECT_VALID("{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\","
		     "\"metadata\":{\"name\":\"w\"},\"spec\":{\"color\":\"red\",\"replicas\":3,"
		     "\"ratio\":0.5,\"name\":\"a12\",\"tags\":[\"x\",\"y\"],\"port\":8080,"
		     "\"note\":null,\"extra\":{\"anything\":[1,2]}}}");
	EXPECT_VALID("{\"spec\":{\"color\":\"blue\",\"port\":\"http\",\"replicas\":2.0}}");
}
END_TEST

START_TEST(type_errors)
{
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"replicas\":\"three\"}}",
		     "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of "
		     "type integer: \"string\"");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"replicas\":1.5}}",
		     "spec.replicas in body must be of type integer: \"number\"");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"port\":true}}",
		     "spec.port: Invalid value: \"boolean\"");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"mode\":null}}",
		     "spec.mode in body must be of type string: \"null\"");
	EXPECT_CAUSE("{\"spec\":[]}", "spec in body must be of type object: \"array\"");
}
END_TEST

START_TEST(required_and_enum)
{
	EXPECT_CAUSE("{\"spec\":{}}", "spec.color: Required value");
	EXPECT_CAUSE(
	    "{\"spec\":{\"color\":\"pink\"}}",
	    "spec.color: Unsupported value: \"pink\": supported values: \"red\", \"blue\"");
}
END_TEST

START_TEST(numbers)
{
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"replicas\":11}}",
		     "spec.replicas: Invalid value: 11: spec.replicas in body should be less than "
		     "or equal to 10");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"replicas\":-1}}",
		     "spec.replicas in body should be greater than or equal to 0");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"ratio\":0}}",
		     "spec.ratio in body should be greater than 0");
	EXPECT_VALID("{\"spec\":{\"color\":\"red\",\"replicas\":10}}");
	EXPECT_VALID("{\"spec\":{\"color\":\"red\",\"replicas\":0}}");
}
END_TEST

START_TEST(strings)
{
	EXPECT_CAUSE(
	    "{\"spec\":{\"color\":\"red\",\"name\":\"A1\"}}",
	    "spec.name: Invalid value: \"A1\": spec.name in body should match '^[a-z]\\d*$'");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"name\":\"\"}}",
		     "spec.name in body should be at least 1 chars long");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"name\":\"a1234\"}}",
		     "spec.name: Too long: may not be more than 4 bytes");
	EXPECT_VALID("{\"spec\":{\"color\":\"red\",\"name\":\"b\"}}");
}
END_TEST

/* An int-or-string's pattern (Kueue's quantities) and bounds apply by the
 * value's kind, as kube's [integer, string] type. */
START_TEST(int_or_string_values)
{
	EXPECT_CAUSE(
	    "{\"spec\":{\"color\":\"red\",\"qty\":\"1x\"}}",
	    "spec.qty: Invalid value: \"1x\": spec.qty in body should match '^[0-9]+[KMG]?$'");
	EXPECT_CAUSE(
	    "{\"spec\":{\"color\":\"red\",\"qty\":-2}}",
	    "spec.qty: Invalid value: -2: spec.qty in body should be greater than or equal "
	    "to 0");
	EXPECT_VALID("{\"spec\":{\"color\":\"red\",\"qty\":\"36G\"}}");
	EXPECT_VALID("{\"spec\":{\"color\":\"red\",\"qty\":9}}");
}
END_TEST

START_TEST(arrays)
{
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"tags\":[]}}",
		     "spec.tags in body should have at least 1 items");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"tags\":[\"a\",\"b\",\"c\"]}}",
		     "spec.tags: Too many: 3: must have at most 2 items");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"tags\":[\"a\",\"a\"]}}",
		     "spec.tags[1]: Duplicate value: \"a\"");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"tags\":[\"a\",3]}}",
		     "spec.tags[1]: Invalid value: \"integer\": spec.tags[1] in body must be of "
		     "type string");
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"items\":[{\"n\":1},{\"n\":\"x\"}]}}",
		     "spec.items[1].n in body must be of type integer");
}
END_TEST

#define EXPECT_WITH(schema, obj, want)                                            \
	do {                                                                      \
		char *m_ = validate_with(schema, obj);                            \
		ck_assert_msg(want[0] ? strstr(m_, want) != NULL : m_[0] == '\0', \
			      "wanted <%s> in <%s>", want, m_);                   \
		free(m_);                                                         \
	} while (0)

/* String formats of kube's registry (Gateway API's ipv4/ipv6, status
 * date-times, caBundle bytes); unknown formats are ignored. */
START_TEST(formats)
{
	const char *sc = "{\"type\":\"object\",\"properties\":{"
			 "\"a\":{\"type\":\"string\",\"format\":\"ipv4\"},"
			 "\"b\":{\"type\":\"string\",\"format\":\"ipv6\"},"
			 "\"t\":{\"type\":\"string\",\"format\":\"date-time\"},"
			 "\"d\":{\"type\":\"string\",\"format\":\"date\"},"
			 "\"c\":{\"type\":\"string\",\"format\":\"cidr\"},"
			 "\"y\":{\"type\":\"string\",\"format\":\"byte\"},"
			 "\"u\":{\"type\":\"string\",\"format\":\"uri\"},"
			 "\"i\":{\"type\":\"string\",\"format\":\"uuid\"},"
			 "\"m\":{\"type\":\"string\",\"format\":\"mac\"},"
			 "\"x\":{\"type\":\"string\",\"format\":\"no-such-format\"}}}";
	EXPECT_WITH(sc,
		    "{\"a\":\"10.0.0.1\",\"b\":\"fe80::1\",\"t\":\"1970-01-01T00:00:00Z\","
		    "\"d\":\"2024-02-29\",\"c\":\"10.0.0.0/8\",\"y\":\"aGk=\","
		    "\"u\":\"https://acme.example/dir\",\"m\":\"00:1a:2b:3c:4d:5e\","
		    "\"i\":\"123e4567-e89b-12d3-a456-426614174000\",\"x\":\"anything\"}",
		    "");
	EXPECT_WITH(sc, "{\"t\":\"2024-01-01T10:00:00.5+02:00\"}", "");
	EXPECT_WITH(sc, "{\"a\":\"10.0.0.300\"}",
		    "a: Invalid value: \"10.0.0.300\": a in body must be of type ipv4: "
		    "\"10.0.0.300\"");
	EXPECT_WITH(sc, "{\"a\":\"fe80::1\"}", "a in body must be of type ipv4");
	EXPECT_WITH(sc, "{\"b\":\"10.0.0.1\"}", "b in body must be of type ipv6");
	EXPECT_WITH(sc, "{\"t\":\"2024-01-01 10:00:00\"}", "t in body must be of type date-time");
	EXPECT_WITH(sc, "{\"t\":\"2024-01-01T24:00:00Z\"}", "t in body must be of type date-time");
	EXPECT_WITH(sc, "{\"d\":\"2023-02-29\"}", "d in body must be of type date");
	EXPECT_WITH(sc, "{\"c\":\"10.0.0.0/33\"}", "c in body must be of type cidr");
	EXPECT_WITH(sc, "{\"y\":\"aGk\"}", "y in body must be of type byte");
	EXPECT_WITH(sc, "{\"u\":\"relative/path\"}", "u in body must be of type uri");
	EXPECT_WITH(sc, "{\"i\":\"123\"}", "i in body must be of type uuid");
	EXPECT_WITH(sc, "{\"m\":\"00:1a:2b\"}", "m in body must be of type mac");
}
END_TEST

/* crd_format_valid case by case against kube-openapi's strfmt registry
 * (default.go, duration.go, bson.go, govalidator) and Go's net/mail and
 * time.ParseDuration; the expected values are what those functions return. */
START_TEST(format_table)
{
	static const struct {
		const char *format, *value;
		bool ok;
	} cases[] = {
	    /* HostnamePattern: one dash only right after a lone label's first
	     * character; a last label of two or more letters */
	    {"hostname", "example.com", true},
	    {"hostname", "a", true},
	    {"hostname", "a-b", true},
	    {"hostname", "my-host", false},
	    {"hostname", "web-1.svc.cluster.local", true},
	    {"hostname", "m\xc3\xbcnchen.de", true},
	    {"hostname", "-bad.com", false},
	    {"hostname", "bad..com", false},
	    {"hostname", "host.c", false},
	    {"hostname", "10.0.0.1", false},
	    {"hostname", "host_1.com", false},
	    {"hostname", "host.com.", false},
	    {"hostname", "", false},
	    {"hostname", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.com",
	     true},
	    {"hostname", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.com",
	     false},
	    /* net/mail ParseAddress */
	    {"email", "user@example.com", true},
	    {"email", "a@b", true},
	    {"email", "Alice <alice@example.com>", true},
	    {"email", "\"Alice B\" <alice@example.com>", true},
	    {"email", "alice@example.com (Alice)", true},
	    {"email", "<a@b>", true},
	    {"email", "\"a b\"@example.com", true},
	    {"email", "a@[10.0.0.1]", true},
	    {"email", "g: a@b;", true},
	    {"email", "not-an-email", false},
	    {"email", "a@", false},
	    {"email", "@b", false},
	    {"email", "a..b@c", false},
	    {"email", ".a@c", false},
	    {"email", "a b@c", false},
	    {"email", "\"\"@c", false},
	    {"email", "a@[999.0.0.1]", false},
	    {"email", "a@b, c@d", false},
	    {"email", "a@b extra", false},
	    {"email", "g: ;", false},
	    {"email", "Alice <alice@example.com", false},
	    {"email", "", false},
	    /* time.ParseDuration, then strfmt's "<n> <unit>" words */
	    {"duration", "1h30m", true},
	    {"duration", "300ms", true},
	    {"duration", "-1.5h", true},
	    {"duration", "2\xc2\xb5s", true},
	    {"duration", "0", true},
	    {"duration", "5 minutes", true},
	    {"duration", "2 days", true},
	    {"duration", "1w", true},
	    {"duration", "3 secs", true},
	    {"duration", "1 hour and 10 parsecs", true},
	    {"duration", "1", false},
	    {"duration", "forever", false},
	    {"duration", "10 parsecs", false},
	    {"duration", "h", false},
	    {"duration", "99999999999999999999 h", false},
	    {"duration", "", false},
	    /* govalidator */
	    {"isbn10", "0321751043", true},
	    {"isbn10", "0-8044-2957-X", true},
	    {"isbn10", "3-598-21508-9", false},
	    {"isbn13", "978-0321751041", true},
	    {"isbn13", "978-0321751042", false},
	    {"isbn", "3 598 21508 8", true},
	    {"isbn", "978-0321751041", true},
	    {"isbn", "12345", false},
	    {"creditcard", "4111 1111 1111 1111", true},
	    {"creditcard", "4111111111111112", false},
	    {"creditcard", "1234", false},
	    {"ssn", "123-45-6789", true},
	    {"ssn", "123 45 6789", true},
	    {"ssn", "123456789", false},
	    {"ssn", "123-45-678a", false},
	    {"rgbcolor", "rgb(255, 0, 10)", true},
	    {"rgbcolor", "rgb(256,0,0)", false},
	    {"rgbcolor", "#fff", false},
	    {"bsonobjectid", "507f1f77bcf86cd799439011", true},
	    {"bsonobjectid", "507f1f77bcf86cd79943901", false},
	    {"bsonobjectid", "507f1f77bcf86cd79943901g", false},
	    /* kube 1.33's isIPv4 and isCIDR parse sloppily: leading zeros */
	    {"ipv4", "010.000.0.1", true},
	    {"ipv4", "10.0.0.256", false},
	    {"ipv4", "10.0.0", false},
	    {"cidr", "010.0.0.0/08", true},
	    {"cidr", "10.0.0.0/33", false},
	    {"byte", "", false},
	    {"byte", "aGk=", true},
	    {"password", "", true},
	    {"date-time", "2024-01-01T10:00:00Z", true},
	    {"no-such-format", "anything", true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(crd_format_valid(cases[i].format, cases[i].value) == cases[i].ok,
			      "%s %s: wanted %s", cases[i].format, cases[i].value,
			      cases[i].ok ? "valid" : "invalid");
}
END_TEST

/* Value validations in oneOf/anyOf/allOf/not, as the Gateway API's
 * addresses use them: go-openapi's texts at <nil>, then the best branch's. */
START_TEST(composites)
{
	const char *sc =
	    "{\"type\":\"object\",\"properties\":{\"addr\":{\"type\":\"object\","
	    "\"properties\":{\"type\":{\"type\":\"string\"},\"value\":{\"type\":\"string\"}},"
	    "\"oneOf\":[{\"properties\":{\"type\":{\"enum\":[\"IPAddress\"]},\"value\":{"
	    "\"anyOf\":[{\"format\":\"ipv4\"},{\"format\":\"ipv6\"}]}}},"
	    "{\"properties\":{\"type\":{\"not\":{\"enum\":[\"IPAddress\"]}}}}]},"
	    "\"n\":{\"type\":\"integer\",\"allOf\":[{\"minimum\":1},{\"maximum\":5}]},"
	    "\"s\":{\"type\":\"string\",\"not\":{\"enum\":[\"x\"]}}}}";
	EXPECT_WITH(sc, "{\"addr\":{\"type\":\"IPAddress\",\"value\":\"fe80::1\"}}", "");
	EXPECT_WITH(sc, "{\"addr\":{\"type\":\"Hostname\",\"value\":\"a.b\"}}", "");
	EXPECT_WITH(sc, "{\"addr\":{\"type\":\"IPAddress\",\"value\":\"a.b\"}}",
		    "<nil>: Invalid value: \"\": \"addr\" must validate one and only one schema "
		    "(oneOf). Found none valid | <nil>: Invalid value: \"\": \"addr.value\" must "
		    "validate at least one schema (anyOf) | addr.value: Invalid value: \"a.b\": "
		    "addr.value in body must be of type ipv4: \"a.b\"");
	EXPECT_WITH(sc, "{\"n\":3}", "");
	EXPECT_WITH(sc, "{\"n\":9}",
		    "<nil>: Invalid value: \"\": \"n\" must validate all the schemas (allOf) | n: "
		    "Invalid value: 9: n in body should be less than or equal to 5");
	EXPECT_WITH(sc, "{\"s\":\"x\"}",
		    "<nil>: Invalid value: \"\": \"s\" must not validate the schema (not)");
	EXPECT_WITH(sc, "{\"s\":\"y\"}", "");
}
END_TEST

/* kube's ratcheting on updates: a value equal to the one it correlates
 * with (properties, map keys, map-list keys) keeps its errors to itself; a
 * changed one, or an item of an atomic list, is held to the schema. */
START_TEST(ratcheting)
{
	const char *sc =
	    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"format\":"
	    "\"ipv4\"},\"b\":{\"type\":\"string\"},\"m\":{\"type\":\"array\","
	    "\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"k\"],"
	    "\"items\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\"},"
	    "\"v\":{\"type\":\"integer\",\"maximum\":5}}}},\"l\":{\"type\":\"array\","
	    "\"items\":{\"type\":\"integer\",\"maximum\":5}}}}";
	json_t *s = J(sc), *c = json_array();
	json_t *old = J("{\"a\":\"x\",\"b\":\"1\",\"m\":[{\"k\":\"p\",\"v\":9},"
			"{\"k\":\"q\",\"v\":9}],\"l\":[9]}");
	/* b changed, the rest kept (the map list reordered): nothing */
	json_t *upd = J("{\"a\":\"x\",\"b\":\"2\",\"m\":[{\"k\":\"q\",\"v\":9},"
			"{\"k\":\"p\",\"v\":9}],\"l\":[9]}");
	ck_assert_int_eq(crd_schema_validate_update(s, upd, old, c), 0);
	ck_assert_int_eq(crd_schema_validate(s, upd, c), 4);
	json_decref(upd);
	json_array_clear(c);
	/* a changed, q's v changed, the atomic list changed: each is checked */
	upd = J("{\"a\":\"y\",\"m\":[{\"k\":\"p\",\"v\":9},{\"k\":\"q\",\"v\":8}],"
		"\"l\":[9,1]}");
	ck_assert_int_eq(crd_schema_validate_update(s, upd, old, c), 3);
	char *got = NULL;
	size_t i;
	json_t *x;
	struct kb_buf b = {0};
	json_array_foreach (c, i, x)
		kb_buf_printf(&b, "%s;", json_string_value(json_object_get(x, "field")));
	got = b.data;
	ck_assert_str_eq(got, "a;m[1].v;l[0];");
	kb_buf_free(&b);
	json_decref(upd);
	json_decref(old);
	json_decref(s);
	json_decref(c);
}
END_TEST

/* kube's ValidateListSetsAndMaps: the second appearance of a set's element
 * or of a map list's key, once per value, with Go's %#v of it. */
START_TEST(list_types)
{
	json_t *s =
	    J("{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
	      "\"properties\":{\"set\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\","
	      "\"items\":{\"type\":\"string\"}},\"one\":{\"type\":\"array\","
	      "\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"name\"],"
	      "\"items\":{\"type\":\"object\"}},\"two\":{\"type\":\"array\","
	      "\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"port\","
	      "\"protocol\"],\"items\":{\"type\":\"object\"}},\"m\":{\"type\":\"object\","
	      "\"additionalProperties\":{\"type\":\"array\",\"x-kubernetes-list-type\":"
	      "\"set\",\"items\":{\"type\":\"integer\"}}}}}}}");
	json_t *o =
	    J("{\"spec\":{\"set\":[\"a\",\"b\",\"a\",\"a\"],\"one\":[{\"name\":\"x\",\"v\":1},"
	      "{\"name\":\"x\",\"v\":2},{\"v\":3},{\"v\":4}],\"two\":[{\"port\":80,"
	      "\"protocol\":\"TCP\"},{\"protocol\":\"TCP\",\"port\":80}],\"m\":{\"k\":[1,1]}}}");
	json_t *c = json_array();
	ck_assert_int_eq(crd_schema_list_types(s, o, c), 5);
	struct kb_buf b = {0};
	size_t i;
	json_t *x;
	json_array_foreach (c, i, x)
		kb_buf_printf(&b, "%s: %s|", json_string_value(json_object_get(x, "field")),
			      json_string_value(json_object_get(x, "message")));
	const char *want[] = {
	    "spec.set[2]: Duplicate value: \"a\"|",
	    "spec.one[1]: Duplicate value: map[string]interface {}{\"name\":\"x\"}|",
	    "spec.one[3]: Duplicate value: map[string]interface {}{}|",
	    "spec.two[1]: Duplicate value: map[string]interface {}{\"port\":80, "
	    "\"protocol\":\"TCP\"}|",
	    "spec.m[k][1]: Duplicate value: 1|"};
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(strstr(b.data, want[i]), "wanted <%s> in <%s>", want[i], b.data);
	free(b.data);
	json_decref(c);
	json_decref(o);
	json_decref(s);
}
END_TEST

START_TEST(embedded_resource)
{
	EXPECT_CAUSE("{\"spec\":{\"color\":\"red\",\"template\":{\"kind\":\"Pod\"}}}",
		     "spec.template.apiVersion: Required value");
	EXPECT_VALID("{\"spec\":{\"color\":\"red\",\"template\":{\"apiVersion\":\"v1\","
		     "\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},\"spec\":{}}}}");
}
END_TEST

START_TEST(pruning)
{
	json_t *s = J(SCHEMA), *paths = json_array();
	json_t *o = J(
	    "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},"
	    "\"top\":1,\"spec\":{\"color\":\"red\",\"bogus\":true,\"extra\":{\"kept\":1},"
	    "\"items\":[{\"n\":1,\"z\":2}],\"labels\":{\"k\":{\"v\":\"x\",\"w\":1}},"
	    "\"template\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"anything\":1}}}");
	ck_assert_int_eq(crd_schema_prune(s, o, paths), 4);
	ck_assert_ptr_null(json_object_get(o, "top"));
	ck_assert_ptr_null(json_object_get(json_object_get(o, "spec"), "bogus"));
	ck_assert_ptr_nonnull(json_object_get(o, "metadata"));
	ck_assert_ptr_nonnull(json_object_get(o, "apiVersion"));
	json_t *spec = json_object_get(o, "spec");
	ck_assert_ptr_nonnull(json_object_get(json_object_get(spec, "extra"), "kept"));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(spec, "template"), "anything"));
	char *d = json_dumps(paths, JSON_COMPACT);
	ck_assert_msg(strstr(d, "\"top\"") && strstr(d, "\"spec.bogus\"") &&
			  strstr(d, "\"spec.items[0].z\"") && strstr(d, "\"spec.labels[k].w\""),
		      "paths: %s", d);
	free(d);
	json_decref(s);
	json_decref(o);
	json_decref(paths);
}
END_TEST

START_TEST(defaults)
{
	json_t *s = J(SCHEMA);
	json_t *o = J("{\"spec\":{\"color\":\"red\",\"mode\":null,\"labels\":{\"a\":{}}}}");
	crd_schema_default(s, o);
	json_t *spec = json_object_get(o, "spec");
	ck_assert_int_eq(json_integer_value(json_object_get(spec, "replicas")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(spec, "mode")), "fast");
	ck_assert_str_eq(json_string_value(json_object_get(
			     json_object_get(json_object_get(spec, "labels"), "a"), "v")),
			 "d");
	/* present values are kept; absent spec gets no defaults inside */
	json_t *o2 = J("{\"spec\":{\"color\":\"red\",\"replicas\":4}}");
	crd_schema_default(s, o2);
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_object_get(o2, "spec"), "replicas")), 4);
	json_t *o3 = J("{}");
	crd_schema_default(s, o3);
	ck_assert_int_eq(json_object_size(o3), 0);
	json_decref(s);
	json_decref(o);
	json_decref(o2);
	json_decref(o3);
}
END_TEST

static int structural(const char *schema, const char *want)
{
	json_t *s = J(schema), *causes = json_array();
	int n = crd_schema_structural(s, "spec.versions[0].schema.openAPIV3Schema", causes);
	char *d = json_dumps(causes, JSON_COMPACT);
	if (want)
		ck_assert_msg(strstr(d, want) != NULL, "wanted <%s> in %s", want, d);
	free(d);
	json_decref(s);
	json_decref(causes);
	return n;
}

/* One cause, whole: "<field>: <message>" of the only cause (or NULL for none). */
static void structural_one(const char *schema, unsigned relax, const char *want)
{
	json_t *s = J(schema), *causes = json_array();
	crd_schema_structural_relaxed(s, "spec.versions[0].schema.openAPIV3Schema", relax, causes);
	char *d = json_dumps(causes, JSON_COMPACT);
	if (!want) {
		ck_assert_msg(json_array_size(causes) == 0, "wanted none, got %s", d);
	} else {
		ck_assert_msg(json_array_size(causes) == 1, "wanted one <%s>, got %s", want, d);
		const json_t *c = json_array_get(causes, 0);
		char got[1024];
		snprintf(got, sizeof(got), "%s: %s", json_string_value(json_object_get(c, "field")),
			 json_string_value(json_object_get(c, "message")));
		ck_assert_msg(strcmp(got, want) == 0, "wanted <%s>, got <%s>", want, got);
	}
	free(d);
	json_decref(s);
	json_decref(causes);
}

#define ROOT "spec.versions[0].schema.openAPIV3Schema"
#define LIST(keyschema, required)                                                       \
	"{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\","               \
	"\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"name\"]," \
	"\"items\":{\"type\":\"object\"" required ",\"properties\":{\"name\":" keyschema "}}}}}"

/* kube's list-type rules at CRD write (validation.go
 * ValidateCustomResourceDefinitionOpenAPISchema, validateMapListKeysMapSet)
 * and the root's completeness (complete.go), message by message. */
START_TEST(structural_lists)
{
	structural_one(LIST("{\"type\":\"string\"}", ",\"required\":[\"name\"]"), 0, NULL);
	structural_one(LIST("{\"type\":\"string\",\"default\":\"x\"}", ""), 0, NULL);
	structural_one(LIST("{\"type\":\"string\"}", ""), 0,
		       ROOT
		       ".properties[l].items.properties[name].default: Required value: this "
		       "property is in x-kubernetes-list-map-keys, so it must have a default or "
		       "be a required property");
	/* an update whose old CRD had it already */
	structural_one(LIST("{\"type\":\"string\"}", ""), CRD_LAX_MAP_KEYS, NULL);
	json_t *lax = J(LIST("{\"type\":\"string\"}", ""));
	ck_assert_uint_eq(crd_schema_lax(lax), CRD_LAX_MAP_KEYS);
	json_decref(lax);
	structural_one(LIST("{\"type\":\"string\",\"nullable\":true}", ",\"required\":[\"name\"]"),
		       0,
		       ROOT ".properties[l].items.properties[name].nullable: Forbidden: this "
			    "property is in x-kubernetes-list-map-keys, so it cannot be nullable");
	structural_one(LIST("{\"type\":\"object\"}", ",\"required\":[\"name\"]"), 0,
		       ROOT ".properties[l].items.properties[name].type: Invalid value: "
			    "\"object\": must be a scalar type if parent array's "
			    "x-kubernetes-list-type is map");
	structural_one("{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\","
		       "\"x-kubernetes-list-type\":\"map\",\"x-kubernetes-list-map-keys\":[\"id\"],"
		       "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
		       "\"string\"}}}}}}",
		       0,
		       ROOT ".properties[l].x-kubernetes-list-map-keys: Invalid value: "
			    "[]string{\"id\"}: entries must all be names of item properties");
	structural_one("{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\","
		       "\"x-kubernetes-list-map-keys\":[\"a\"],\"items\":{\"type\":\"object\","
		       "\"required\":[\"a\"],\"properties\":{\"a\":{\"type\":\"string\"}}}}}}",
		       0,
		       ROOT ".properties[l].x-kubernetes-list-type: Required value: must be map if "
			    "x-kubernetes-list-map-keys is non-empty");
	structural_one("{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\","
		       "\"x-kubernetes-list-type\":\"bag\",\"items\":{\"type\":\"string\"}}}}",
		       0,
		       ROOT ".properties[l].x-kubernetes-list-type: Unsupported value: \"bag\": "
			    "supported values: \"atomic\", \"set\", \"map\"");
	structural_one("{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"string\","
		       "\"x-kubernetes-map-type\":\"atomic\"}}}",
		       0,
		       ROOT ".properties[m].type: Invalid value: \"string\": must be object if "
			    "x-kubernetes-map-type is specified");
	structural_one("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"array\","
		       "\"x-kubernetes-list-type\":\"set\",\"items\":{\"type\":\"object\"}}}}",
		       0,
		       ROOT ".properties[s].items.x-kubernetes-map-type: Invalid value: null: "
			    "must be atomic as item of a list with x-kubernetes-list-type=set");
	structural_one("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"array\","
		       "\"x-kubernetes-list-type\":\"set\",\"items\":{\"type\":\"object\"}}}}",
		       CRD_LAX_ATOMIC_SET, NULL);
	structural_one("{\"type\":\"object\",\"properties\":{\"s\":{\"type\":\"array\","
		       "\"x-kubernetes-list-type\":\"set\",\"items\":{\"type\":\"string\","
		       "\"nullable\":true}}}}",
		       0,
		       ROOT ".properties[s].items.nullable: Forbidden: cannot be nullable when "
			    "x-kubernetes-list-type is set");
	structural_one("{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":false}", 0,
		       ROOT ".x-kubernetes-preserve-unknown-fields: Invalid value: false: must be "
			    "true or undefined");
	/* completeness: what the root's oneOf names exists in the schema */
	structural_one("{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
		       "\"properties\":{\"a\":{\"type\":\"string\"}}}},\"oneOf\":[{\"properties\":"
		       "{\"spec\":{\"required\":[\"a\"]}}},{\"properties\":{\"spec\":{"
		       "\"properties\":{\"b\":{\"minLength\":1}}}}}]}",
		       0,
		       ROOT
		       ".properties[spec].properties[b]: Required value: because it is defined "
		       "in " ROOT ".oneOf[1].properties[spec].properties[b]");
	structural_one("{\"type\":\"object\",\"anyOf\":[{\"properties\":{\"x\":{\"items\":{"
		       "\"minLength\":1}}}}],\"properties\":{\"x\":{\"type\":\"string\"}}}",
		       0,
		       ROOT ".properties[x].items: Required value: because it is defined in " ROOT
			    ".anyOf[0].properties[x].items");
	/* kube follows only the root's: a nested oneOf is not checked */
	structural_one("{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
		       "\"oneOf\":[{\"properties\":{\"b\":{\"minLength\":1}}}]}}}",
		       0, NULL);
}
END_TEST

static void defaults_one(const char *schema, const char *want)
{
	json_t *s = J(schema), *causes = json_array();
	crd_schema_check_defaults(s, ROOT, 0, causes);
	char *d = json_dumps(causes, JSON_COMPACT);
	if (!want) {
		ck_assert_msg(json_array_size(causes) == 0, "wanted none, got %s", d);
	} else {
		ck_assert_msg(json_array_size(causes) >= 1, "wanted <%s>, got none", want);
		const json_t *c = json_array_get(causes, 0);
		char got[1024];
		snprintf(got, sizeof(got), "%s: %s", json_string_value(json_object_get(c, "field")),
			 json_string_value(json_object_get(c, "message")));
		ck_assert_msg(strcmp(got, want) == 0, "wanted <%s>, got <%s>", want, got);
	}
	free(d);
	json_decref(s);
	json_decref(causes);
}

/* kube's ValidateDefaults at CRD write: a default must be pruned and valid
 * by its own schema; the message names the place inside the default. */
START_TEST(structural_defaults)
{
	defaults_one("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
		     "\"default\":3,\"maximum\":5}}}",
		     NULL);
	defaults_one("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
		     "\"default\":\"three\"}}}",
		     ROOT ".properties[n].default: Invalid value: \"string\":  in body must be of "
			  "type integer: \"string\"");
	defaults_one("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
		     "\"default\":7,\"maximum\":5}}}",
		     ROOT ".properties[n].default: Invalid value: 7:  in body should be less than "
			  "or equal to 5");
	defaults_one("{\"type\":\"object\",\"properties\":{\"o\":{\"type\":\"object\","
		     "\"default\":{\"a\":\"x\"},\"properties\":{\"a\":{\"type\":\"string\","
		     "\"enum\":[\"y\"]}}}}}",
		     ROOT ".properties[o].default.a: Unsupported value: \"x\": supported values: "
			  "\"y\"");
	defaults_one("{\"type\":\"object\",\"properties\":{\"o\":{\"type\":\"object\","
		     "\"default\":{\"a\":\"x\",\"zz\":1},\"properties\":{\"a\":{\"type\":"
		     "\"string\"}}}}}",
		     ROOT ".properties[o].default: Invalid value: map[string]interface {}{\"a\":"
			  "\"x\", \"zz\":1}: must not have unknown fields");
	/* an update of a CRD that had such a default already: not required
	 * (kube's requirePrunedDefaults) */
	const char *unpruned = "{\"type\":\"object\",\"properties\":{\"o\":{\"type\":\"object\","
			       "\"default\":{\"a\":\"x\",\"zz\":1},\"properties\":{\"a\":{"
			       "\"type\":\"string\"}}}}}";
	json_t *us = J(unpruned), *uc = json_array();
	ck_assert_uint_eq(crd_schema_lax(us) & CRD_LAX_PRUNED, CRD_LAX_PRUNED);
	ck_assert_int_eq(crd_schema_check_defaults(us, ROOT, CRD_LAX_PRUNED, uc), 0);
	json_decref(us);
	json_decref(uc);
	defaults_one("{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\","
		     "\"items\":{\"type\":\"object\",\"properties\":{\"p\":{\"type\":\"string\","
		     "\"format\":\"hostname\",\"default\":\"not_a_host\"}}}}}}",
		     ROOT ".properties[l].items.properties[p].default: Invalid value: "
			  "\"not_a_host\":  in body must be of type hostname: \"not_a_host\"");
}
END_TEST

/* ... and a default that passes its schema meets its node's CEL rules and
 * those below it (cel.NewValidator on the node): oldSelf the default, then
 * as a create (optionalOldSelf); inside an array's items too. */
START_TEST(structural_defaults_rules)
{
	defaults_one("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
		     "\"default\":7,\"x-kubernetes-validations\":[{\"rule\":\"self < 5\"}]}}}",
		     ROOT
		     ".properties[n].default: Invalid value: \"integer\": failed rule: self < 5");
	defaults_one("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
		     "\"default\":3,\"x-kubernetes-validations\":[{\"rule\":\"self < 5\"},"
		     "{\"rule\":\"self == oldSelf\"}]}}}",
		     NULL);
	defaults_one("{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\","
		     "\"items\":{\"type\":\"object\",\"default\":{\"m\":\"x\"},\"properties\":{"
		     "\"m\":{\"type\":\"string\",\"x-kubernetes-validations\":[{\"rule\":"
		     "\"self.size() > 3\",\"message\":\"too short\"}]}}}}}}",
		     ROOT ".properties[l].items.default.m: Invalid value: \"string\": too short");
	defaults_one("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
		     "\"default\":9,\"x-kubernetes-validations\":[{\"rule\":\"oldSelf.hasValue() "
		     "|| self < 5\",\"optionalOldSelf\":true,\"message\":\"small on create\"}]}}}",
		     ROOT ".properties[n].default: Invalid value: \"integer\": small on create");
	/* a default its schema refuses: its rules are not run (one cause) */
	json_t *s = J("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\","
		      "\"default\":7,\"maximum\":5,\"x-kubernetes-validations\":[{\"rule\":"
		      "\"self < 5\"}]}}}"),
	       *causes = json_array();
	ck_assert_int_eq(crd_schema_check_defaults(s, ROOT, 0, causes), 1);
	json_decref(s);
	json_decref(causes);
}
END_TEST

START_TEST(structural_schemas)
{
	ck_assert_int_eq(structural(SCHEMA, NULL), 0);
	ck_assert_int_gt(
	    structural("{\"type\":\"object\",\"properties\":{\"spec\":{\"properties\":{}}}}",
		       "spec.versions[0].schema.openAPIV3Schema.properties[spec].type"),
	    0);
	ck_assert_int_gt(structural("{\"type\":\"string\"}", "supported values: \\\"object\\\""),
			 0);
	ck_assert_int_gt(
	    structural("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\"}}}",
		       "properties[a].items"),
	    0);
	ck_assert_int_gt(
	    structural("{\"type\":\"object\",\"properties\":{\"metadata\":{\"type\":\"object\","
		       "\"properties\":{\"labels\":{\"type\":\"object\"}}}}}",
		       "properties[metadata]"),
	    0);
	ck_assert_int_eq(
	    structural("{\"type\":\"object\",\"properties\":{\"metadata\":{\"type\":\"object\","
		       "\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":10}}}}}",
		       NULL),
	    0);
	ck_assert_int_gt(
	    structural("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"bogus\"}}}",
		       "Unsupported value"),
	    0);
	/* value validations only in allOf/anyOf/oneOf/not: the Gateway API's
	 * address branches pass, a type or an extension there does not; an
	 * int-or-string keeps its own anyOf */
	ck_assert_int_eq(
	    structural("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\","
		       "\"properties\":{\"t\":{\"type\":\"string\"},\"v\":{\"type\":\"string\"}},"
		       "\"oneOf\":[{\"properties\":{\"t\":{\"enum\":[\"IP\"]},\"v\":{\"anyOf\":"
		       "[{\"format\":\"ipv4\"},{\"format\":\"ipv6\"}]}}},{\"properties\":{\"t\":"
		       "{\"not\":{\"enum\":[\"IP\"]}}}}]},\"q\":{\"x-kubernetes-int-or-string\":"
		       "true,\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\"}]}}}",
		       NULL),
	    0);
	ck_assert_int_eq(
	    structural("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
		       "\"oneOf\":[{\"type\":\"string\",\"minLength\":1},{\"not\":{"
		       "\"x-kubernetes-list-type\":\"set\"}}]}}}",
		       "openAPIV3Schema.properties[a].oneOf[0].type\""),
	    2);
	ck_assert_int_eq(
	    structural(
		"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
		"\"oneOf\":[{\"not\":{\"x-kubernetes-list-type\":\"set\"}}]}}}",
		"Forbidden: must be undefined to be structural\",\"field\":\"spec.versions[0]."
		"schema.openAPIV3Schema.properties[a].oneOf[0].not.x-kubernetes-list-type\""),
	    1);
	/* kube compiles patterns with Go's regexp when the CRD is written */
	ck_assert_int_eq(
	    structural(
		"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
		"\"pattern\":\"+\"}}}",
		"Invalid value: \\\"+\\\": must be a valid regular "
		"expression, but isn't: error parsing regexp: missing argument to repetition "
		"operator: `+`"),
	    1);
	ck_assert_int_eq(
	    structural("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
		       "\"pattern\":\"(?<=a)b\"}}}",
		       "error parsing regexp: invalid or unsupported Perl syntax: `(?<`"),
	    1);
}
END_TEST

START_TEST(patterns)
{
	ck_assert(crd_schema_pattern_match("^\\d+$", "123"));
	ck_assert(!crd_schema_pattern_match("^\\d+$", "12a"));
	ck_assert(crd_schema_pattern_match("\\w+@\\w+", "x a@b y"));
	ck_assert(!crd_schema_pattern_match("^\\S+$", "a b"));
	/* RE2's syntax, as kube's Go regexp: classes, repetition counts, UTF-8 */
	ck_assert(crd_schema_pattern_match("^[a-z]{2,3}(-[0-9]+)?$", "ab-12"));
	ck_assert(!crd_schema_pattern_match("^[a-z]{2,3}$", "abcd"));
	ck_assert(crd_schema_pattern_match("^\\p{L}+$", "h\u00e9llo"));
	/* what RE2 refuses runs as no constraint (the CRD itself is refused) */
	ck_assert(crd_schema_pattern_match("(?=x)y", "z"));
}
END_TEST

START_TEST(version_priority)
{
	const char *order[] = {"v2",      "v1",       "v11alpha2", "v10beta3", "v2beta1",
			       "v1beta1", "v1alpha1", "foo1",      "zzz"};
	/* kube's documented example order: v10, v2, v1, v11beta2, v10beta3, v3beta1,
	 * v12alpha1, v11alpha2, foo1, foo10 */
	ck_assert_int_lt(crd_version_cmp("v10", "v2"), 0);
	ck_assert_int_lt(crd_version_cmp("v1", "v11beta2"), 0);
	ck_assert_int_lt(crd_version_cmp("v11beta2", "v10beta3"), 0);
	ck_assert_int_lt(crd_version_cmp("v3beta1", "v12alpha1"), 0);
	ck_assert_int_lt(crd_version_cmp("v12alpha1", "v11alpha2"), 0);
	ck_assert_int_lt(crd_version_cmp("v11alpha2", "foo1"), 0);
	ck_assert_int_lt(crd_version_cmp("foo1", "foo10"), 0);
	ck_assert_int_gt(crd_version_cmp(order[6], order[5]), 0);
	ck_assert_int_eq(crd_version_cmp("v1", "v1"), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("crd_schema");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, valid_object);
	tcase_add_test(tc, type_errors);
	tcase_add_test(tc, required_and_enum);
	tcase_add_test(tc, numbers);
	tcase_add_test(tc, strings);
	tcase_add_test(tc, int_or_string_values);
	tcase_add_test(tc, formats);
	tcase_add_test(tc, format_table);
	tcase_add_test(tc, composites);
	tcase_add_test(tc, ratcheting);
	tcase_add_test(tc, arrays);
	tcase_add_test(tc, list_types);
	tcase_add_test(tc, embedded_resource);
	tcase_add_test(tc, pruning);
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, structural_schemas);
	tcase_add_test(tc, structural_lists);
	tcase_add_test(tc, structural_defaults);
	tcase_add_test(tc, structural_defaults_rules);
	tcase_add_test(tc, patterns);
	tcase_add_test(tc, version_priority);
	suite_add_tcase(s, tc);
	return s;
}
