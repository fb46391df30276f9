/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/json: the compact serializer must write exactly what
 * jansson's json_dumps(JSON_COMPACT) writes (the store keeps that text and
 * answers GETs with it), escapes per RFC 8259, refuses strings that are not
 * UTF-8 as jansson does; the deep copy must be equal and independent; the
 * parser must give jansson's tree for what it takes and jansson's error for
 * the rest (RFC 8259 grammar, UTF-8, surrogate pairs, duplicates).
 */
#include <check.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"

static int by_int_desc(const void *a, const void *b)
{
	json_int_t x = json_integer_value(*(json_t *const *)a);
	json_int_t y = json_integer_value(*(json_t *const *)b);
	return x < y ? 1 : x > y ? -1 : 0;
}

START_TEST(array_sort)
{
	json_t *a = json_pack("[i,i,i,i]", 2, 9, 4, 9);
	kb_json_array_sort(a, by_int_desc);
	char *s = json_dumps(a, JSON_COMPACT);
	ck_assert_str_eq(s, "[9,9,4,2]");
	free(s);
	json_decref(a);
	json_t *e = json_array();
	kb_json_array_sort(e, by_int_desc); /* nothing to do */
	ck_assert_int_eq(json_array_size(e), 0);
	json_decref(e);
}
END_TEST

static Suite *suite(void);
#include "tests/unit/check_main.h"

static void same_as_jansson(const json_t *v)
{
	struct kb_buf b = {0};
	char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	ck_assert_ptr_nonnull(want);
	ck_assert_int_eq(kb_json_dump(v, &b), 0);
	ck_assert_msg(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0,
		      "\n got:  %s\n want: %s", b.data, want);
	ck_assert_int_eq(b.data[b.len], '\0');
	free(want);
	kb_buf_free(&b);
}

static const char *const docs[] = {
    "{}",
    "[]",
    "{\"a\":{},\"b\":[],\"c\":[{}],\"d\":[[]]}",
    "{\"z\":1,\"a\":2,\"m\":{\"y\":true,\"b\":false,\"n\":null}}",
    "[0,-1,1,9223372036854775807,-9223372036854775808,123456789]",
    "[1.5,0.1,-2.0,1e300,1e-7,123456789.125,3.0e10]",
    "[\"\",\"plain\",\"q\\\"uote\",\"back\\\\slash\",\"/slash\",\"\\b\\f\\n\\r\\t\"]",
    "[\"\\u0001\\u001f\\u007f\",\"\\u00e9t\\u00e9\",\"\\u2028\\u2029\",\"\\ud83d\\ude00\"]",
    "{\"key\":\"v\\u0000al\",\"\\u00fc\":\"\\t\"}",
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\"},"
    "\"managedFields\":[{\"fieldsV1\":{\"f:spec\":{\"k:{\\\"name\\\":\\\"x\\\"}\":{}}}}]},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"ports\":[{\"containerPort\":80}]}]}}",
};

START_TEST(same_counts_two_missing_values_equal)
{
	json_t *a = json_pack("{s:i}", "x", 1), *b = json_pack("{s:i}", "x", 1);
	json_t *c = json_pack("{s:i}", "x", 2);
	ck_assert(kb_json_same(NULL, NULL));
	ck_assert(kb_json_same(a, b));
	ck_assert(!kb_json_same(a, c));
	ck_assert(!kb_json_same(a, NULL));
	ck_assert(!kb_json_same(NULL, a));
	json_decref(a);
	json_decref(b);
	json_decref(c);
}
END_TEST

START_TEST(dump_matches_jansson)
{
	for (size_t i = 0; i < sizeof(docs) / sizeof(*docs); i++) {
		json_error_t e;
		json_t *v = json_loads(docs[i], JSON_ALLOW_NUL, &e);
		ck_assert_msg(v != NULL, "doc %zu: %s", i, e.text);
		same_as_jansson(v);
		json_decref(v);
	}
	json_t *scalars[] = {json_string("x"), json_integer(-42), json_real(0.25),
			     json_true(),      json_false(),      json_null()};
	for (size_t i = 0; i < sizeof(scalars) / sizeof(*scalars); i++) {
		same_as_jansson(scalars[i]);
		json_decref(scalars[i]);
	}
}
END_TEST

/* Every control character, and insertion order kept after deletes. */
START_TEST(dump_controls_and_order)
{
	char s[40];
	json_t *o = json_object();

	for (int c = 1; c < 0x20; c++)
		s[c - 1] = (char)c;
	s[0x1f] = '\0';
	json_object_set_new(o, "ctl", json_string(s));
	for (int i = 0; i < 40; i++) {
		char k[8];
		snprintf(k, sizeof(k), "k%d", (i * 7) % 40);
		json_object_set_new(o, k, json_integer(i));
	}
	json_object_del(o, "k7");
	json_object_set_new(o, "k7", json_string("last"));
	same_as_jansson(o);
	json_decref(o);
}
END_TEST

/* Text appended after what the buffer holds; invalid UTF-8 is refused
 * (jansson's dump fails too) and leaves the buffer as it was. */
START_TEST(dump_appends_and_refuses_bad_utf8)
{
	struct kb_buf b = {0};
	const char *bad[] = {"\xc3",         "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
			     "\xe0\x80\xaf", "a\xff"};

	ck_assert_int_eq(kb_buf_puts(&b, "x="), 0);
	json_t *v = json_pack("{s:[i,s]}", "a", 1, "b");
	ck_assert_int_eq(kb_json_dump(v, &b), 0);
	ck_assert_str_eq(b.data, "x={\"a\":[1,\"b\"]}");
	json_decref(v);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		json_t *s = json_stringn_nocheck(bad[i], strlen(bad[i]));
		json_t *a = json_pack("[s,O]", "ok", s);
		ck_assert_ptr_null(json_dumps(a, JSON_COMPACT));
		ck_assert_int_eq(kb_json_dump(a, &b), -EINVAL);
		ck_assert_str_eq(b.data, "x={\"a\":[1,\"b\"]}");
		json_decref(a);
		json_decref(s);
	}
	ck_assert_int_eq(kb_json_dump(NULL, &b), -EINVAL);
	kb_buf_free(&b);
}
END_TEST

START_TEST(copy_is_deep_and_equal)
{
	for (size_t i = 0; i < sizeof(docs) / sizeof(*docs); i++) {
		json_t *v = json_loads(docs[i], JSON_ALLOW_NUL, NULL);
		json_t *c = kb_json_copy(v);
		ck_assert(json_equal(v, c));
		char *a = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		char *d = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
		ck_assert_str_eq(a, d); /* same key order */
		free(a);
		free(d);
		if (json_is_object(c)) {
			json_object_set_new(c, "added", json_true());
			ck_assert_ptr_null(json_object_get(v, "added"));
		}
		json_decref(v);
		json_decref(c);
	}
	json_t *v = json_pack("{s:{s:[s]}}", "a", "b", "c");
	json_t *c = kb_json_copy(v);
	json_array_append_new(json_object_get(json_object_get(c, "a"), "b"), json_integer(1));
	ck_assert_int_eq(json_array_size(json_object_get(json_object_get(v, "a"), "b")), 1);
	json_decref(v);
	json_decref(c);
	ck_assert_ptr_null(kb_json_copy(NULL));
}
END_TEST

/* The dump of v (kb_json_dump), malloc'ed. */
static char *dump(const json_t *v)
{
	struct kb_buf b = {0};
	ck_assert_int_eq(kb_json_dump(v, &b), 0);
	return b.data;
}

/* A raw value is written as its text, copies (kb_json_copy and jansson's
 * json_deep_copy) stay raw, and jansson sees [text, null]. */
START_TEST(raw_is_written_as_its_text)
{
	static const char text[] = "{\"f:a\":{\".\":{},\"k:{\\\"n\\\":\\\"x\\\"}\":{}}}";
	json_t *raw = kb_json_raw(text, strlen(text));
	json_t *obj =
	    json_pack("{s:[{s:s,s:O}]}", "managedFields", "manager", "m", "fieldsV1", raw);
	size_t len = 0;

	ck_assert_ptr_eq(kb_json_raw_text(raw, &len), json_string_value(json_array_get(raw, 0)));
	ck_assert_uint_eq(len, strlen(text));
	char *d = dump(obj), *want = NULL;
	ck_assert_int_gt(
	    asprintf(&want, "{\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":%s}]}", text), 0);
	ck_assert_str_eq(d, want);
	/* the text is what parsing it and writing it again give */
	json_t *tree = json_loads(text, 0, NULL);
	char *again = dump(tree);
	ck_assert_str_eq(again, text);
	free(again);
	json_decref(tree);

	json_t *copies[] = {kb_json_copy(obj), json_deep_copy(obj)};
	for (size_t i = 0; i < 2; i++) {
		const json_t *v1 = json_object_get(
		    json_array_get(json_object_get(copies[i], "managedFields"), 0), "fieldsV1");
		ck_assert_ptr_nonnull(kb_json_raw_text(v1, &len));
		ck_assert(json_equal(copies[i], obj));
		char *c = dump(copies[i]);
		ck_assert_str_eq(c, d);
		free(c);
		json_decref(copies[i]);
	}
	/* what a reader that does not know raw values sees */
	char *j = json_dumps(raw, JSON_COMPACT);
	json_t *seen = json_loads(j, 0, NULL);
	ck_assert(json_is_string(json_array_get(seen, 0)));
	ck_assert_str_eq(json_string_value(json_array_get(seen, 0)), text);
	ck_assert(json_is_null(json_array_get(seen, 1)));
	json_decref(seen);
	free(j);
	free(d);
	free(want);
	json_decref(obj);
	json_decref(raw);
}
END_TEST

/*
 * No input is a raw value: whatever a tenant sends (here the very shape a
 * raw value has, [text, null], with text closing the string and object it
 * sits in), the parsers give jansson's null, never the mark, so its text is
 * written escaped as a string. The mark cannot be made from a parsed null
 * either.
 */
START_TEST(input_is_never_raw)
{
	static const char *const inputs[] = {
	    "{\"fieldsV1\":[\"{\\\"f:a\\\":{}}\",null]}",
	    "{\"a\":[\"\\\"},\\\"evil\\\":{\\\"x\\\":1},\\\"b\\\":{\\\"\",null]}",
	    "[\"x\",null]",
	};
	size_t len;

	for (size_t i = 0; i < sizeof(inputs) / sizeof(*inputs); i++) {
		json_t *parsed[] = {kb_json_loadb(inputs[i], strlen(inputs[i]), 0, NULL),
				    json_loads(inputs[i], 0, NULL),
				    kb_yaml_load(inputs[i], strlen(inputs[i]), NULL, 0)};
		for (size_t k = 0; k < 3; k++) {
			json_t *v = parsed[k], *a = json_is_array(v) ? v : NULL;
			ck_assert_ptr_nonnull(v);
			if (!a)
				a = json_object_get(v, json_object_iter_key(json_object_iter(v)));
			ck_assert(json_is_array(a));
			ck_assert_ptr_null(kb_json_raw_text(a, &len));
			char *d = dump(v), *j = json_dumps(v, JSON_COMPACT);
			/* yaml makes every scalar a string: null is "null" there */
			if (k < 2)
				ck_assert_str_eq(d, inputs[i]);
			ck_assert_str_eq(d, j);
			free(d);
			free(j);
			/* a copy of it, and one with jansson's null put back, are not raw */
			json_t *c = kb_json_copy(a);
			json_array_set_new(c, 1, json_null());
			ck_assert_ptr_null(kb_json_raw_text(c, &len));
			json_decref(c);
			json_decref(v);
		}
	}
}
END_TEST

/* A key written by kb_json_put_key is jansson's text of the string pfx+str
 * (plain keys take a byte loop, the rest the general writer from where the
 * plain run stops); invalid UTF-8 is refused with the buffer as it was. */
START_TEST(put_key_as_jansson_writes_it)
{
	static const char *const keys[] = {"",
					   "name",
					   "app.kubernetes.io/name",
					   "{\"name\":\"c\"}",
					   "a\\b",
					   "tab\there",
					   "\x01",
					   "\xc3\xa9t\xc3\xa9",
					   "x\xe2\x82\xac\"y\"",
					   "\x7f",
					   "q\"\\\x01\"",
					   "k:{\"name\":\"Q\\\"\\\\x\"}",
					   "long plain key that runs on"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
		struct kb_buf b = {0};
		char whole[64];
		snprintf(whole, sizeof(whole), "f:%s", keys[i]);
		json_t *str = json_string(whole);
		char *want = json_dumps(str, JSON_ENCODE_ANY);
		ck_assert_int_eq(kb_buf_append(&b, "x", 1), 0);
		ck_assert_int_eq(kb_json_put_key(&b, "f:", 2, keys[i], strlen(keys[i])), 0);
		ck_assert_uint_eq(b.len, 1 + strlen(want));
		ck_assert_mem_eq(b.data + 1, want, b.len - 1);
		free(want);
		json_decref(str);
		kb_buf_free(&b);
	}
	struct kb_buf b = {0};
	ck_assert_int_eq(kb_buf_append(&b, "x", 1), 0);
	ck_assert_int_eq(kb_json_put_key(&b, "f:", 2, "ok\xc3", 3), -EINVAL);
	ck_assert_uint_eq(b.len, 1);
	kb_buf_free(&b);
}
END_TEST

/* Parses with both and wants the same tree (same text, same key order) or
 * the same error. */
static void loads_like_jansson(const char *text, size_t len, size_t flags)
{
	json_error_t ej, ek;
	json_t *j = json_loadb(text, len, flags, &ej);
	json_t *k = kb_json_loadb(text, len, flags, &ek);

	if (!j) {
		ck_assert_msg(k == NULL, "accepted what jansson refuses: %.*s", (int)len, text);
		ck_assert_str_eq(ek.text, ej.text);
		ck_assert_int_eq(ek.line, ej.line);
		ck_assert_int_eq(ek.column, ej.column);
		return;
	}
	ck_assert_msg(k != NULL, "refused what jansson takes: %.*s (%s)", (int)len, text, ek.text);
	char *a = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	char *b = json_dumps(k, JSON_COMPACT | JSON_ENCODE_ANY);
	ck_assert_str_eq(b, a);
	ck_assert(json_equal(j, k));
	free(a);
	free(b);
	json_decref(j);
	json_decref(k);
}

/* The n bytes of str raw inside a document's string, ["..."], read as
 * jansson reads them (n at most 60). */
static void string_loads_like_jansson(const char *str, size_t n)
{
	char text[64];
	ck_assert_uint_le(n + 4, sizeof(text));
	text[0] = '[';
	text[1] = '"';
	memcpy(text + 2, str, n);
	memcpy(text + 2 + n, "\"]", 2);
	loads_like_jansson(text, n + 4, 0);
}

static const char *const parse_cases[] = {
    "{}",
    " [ ] ",
    "\t\r\n{\"a\" : 1 , \"b\":[true,false,null,\"x\"]}\n",
    "{\"b\":1,\"a\":2,\"b\":3}", /* duplicate: last value, first position */
    "[0,-0,-1,123456789012345678,1234567890123456789,-9223372036854775808,"
    "9223372036854775808,1.5,-2.0e3,1E2,0.1]",
    "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\"\\u00e9\\u20ac\\ud83d\\ude00\",\"h\\u0041llo\"]",
    "[\"\\u0000\"]",
    "[\"\\ud800\"]",
    "[\"\\udc00x\"]",
    "[\"\\ud800\\u0041\"]",
    "{\"\\u00fc\\n\":\"\\u00e9t\\u00e9\"}",
    "[\"\xc3\xa9t\xc3\xa9\",\"\xe2\x82\xac\"]",
    "[\"\xc3\"]",
    "[\"\xed\xa0\x80\"]",
    "[\"a\tb\"]",
    "[01]",
    "[1.]",
    "[.5]",
    "[-]",
    "[1,]",
    "{\"a\":1,}",
    "{\"a\"}",
    "{\"a\":}",
    "{a:1}",
    "[1 2]",
    "[1]x",
    "[1] [2]",
    "\"top\"",
    "1",
    "true",
    "",
    "   ",
    "[tru]",
    "[nul]",
    "[truex]",
    "[1x]",
    "\xef\xbb\xbf{}",
    "{\"a\":{\"b\":{\"c\":[[[{}]]]}}}",
    "[\"\\x\"]",
    "[\"\\u12\"]",
    "[\"unterminated]",
    "{\"k\":\"v\"",
    "[1e400]",
    "[-1e400]",
    "[1e-400]",
    /* integers around the 18 digits the fast path takes (longer: jansson's;
     * the fuzzer found an overflow here, seen under UBSan) */
    "[999999999999999999]",
    "[-999999999999999999]",
    "[12345678901234567890]",
    "[-9223372036854775808]",
    "[99999999999999999999999]",
    /* keys: used where they are in the input, or copied out of the scratch
     * when decoded from escapes (the value after them reuses it) */
    "{\"plain\":\"v\",\"k\\u00e9\\n\":\"w\\t\\u00fc\",\"k\\\"\":{\"\\u0041\":\"\\/\"}}",
    "{\"a\\u0000b\":1}",
    "{\"\\u0041\":1,\"A\":2}",
    "{\"\xc3\xa9\":\"\xe2\x82\xac\\n\",\"x\xc3\":1}",
    "{\"\x7f\\u007f\":\"\x7f\"}",
    "{\"k\\",
    "{\"k",
    "[\"plain then \xc3\xa9 then \\u00e9\\\" end\"]",
};

/* The plain-run scans (the writer's, kb_json_put_key's byte loop, the
 * loader's): every byte value at every place of a 17-byte string, and a
 * two-byte UTF-8 sequence at every place, written and read as jansson
 * writes and reads them. */
START_TEST(plain_runs_every_byte_everywhere)
{
	for (int c = 1; c < 256; c++) {
		for (size_t at = 0; at < 17; at++) {
			char str[17];
			memset(str, 'a', sizeof(str));
			str[at] = (char)c;
			struct kb_buf b = {0};
			int rc = kb_json_put_key(&b, NULL, 0, str, sizeof(str));
			if (c < 0x80) {
				json_t *j = json_stringn(str, sizeof(str));
				json_t *arr = json_pack("[o]", json_incref(j));
				char *want = json_dumps(j, JSON_ENCODE_ANY);
				char *want_arr = json_dumps(arr, JSON_COMPACT);
				ck_assert_int_eq(rc, 0);
				ck_assert_uint_eq(b.len, strlen(want));
				ck_assert_mem_eq(b.data, want, b.len);
				b.len = 0;
				ck_assert_int_eq(kb_json_dump(arr, &b), 0);
				ck_assert_str_eq(b.data, want_arr);
				free(want);
				free(want_arr);
				json_decref(arr);
				json_decref(j);
			} else {
				ck_assert_int_eq(rc, -EINVAL);
			}
			kb_buf_free(&b);
			/* the same bytes raw inside a document's string */
			string_loads_like_jansson(str, sizeof(str));
		}
	}
	for (size_t at = 0; at < 16; at++) {
		char str[17];
		memset(str, 'b', sizeof(str));
		memcpy(str + at, "\xc3\xa9", 2);
		struct kb_buf b = {0};
		json_t *j = json_stringn(str, sizeof(str));
		char *want = json_dumps(j, JSON_ENCODE_ANY);
		ck_assert_int_eq(kb_json_put_key(&b, NULL, 0, str, sizeof(str)), 0);
		ck_assert_uint_eq(b.len, strlen(want));
		ck_assert_mem_eq(b.data, want, b.len);
		free(want);
		json_decref(j);
		kb_buf_free(&b);
		string_loads_like_jansson(str, sizeof(str));
	}
}
END_TEST

START_TEST(load_matches_jansson)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(*parse_cases); i++) {
		loads_like_jansson(parse_cases[i], strlen(parse_cases[i]), 0);
		loads_like_jansson(parse_cases[i], strlen(parse_cases[i]), JSON_REJECT_DUPLICATES);
	}
	/* a NUL byte inside the buffer, a length shorter than the text */
	loads_like_jansson("{\"a\":1}\0{}", 10, 0);
	loads_like_jansson("[\"a\0b\"]", 7, 0);
	loads_like_jansson("{\"a\":1}", 5, 0);
	/* keys of 255, 256 and 300 bytes, plain and escaped, each before an
	 * escaped value (a key of 256 or more is copied to the heap) */
	static const size_t key_lens[] = {255, 256, 300};
	for (size_t i = 0; i < sizeof(key_lens) / sizeof(*key_lens); i++) {
		for (int esc = 0; esc < 2; esc++) {
			char doc[800];
			size_t n = 0, kl = key_lens[i];
			doc[n++] = '{';
			doc[n++] = '"';
			memset(doc + n, 'k', kl);
			n += kl;
			if (esc) /* the last key byte as an escape: \u006b is 'k' */
				memcpy(doc + n - 1, "\\u006b", 6), n += 5;
			n += (size_t)snprintf(doc + n, sizeof(doc) - n, "\":\"v\\n\",\"z\":1}");
			loads_like_jansson(doc, n, 0);
			loads_like_jansson(doc, n, JSON_REJECT_DUPLICATES);
		}
	}
	/* flags the fast path does not handle go to jansson */
	loads_like_jansson("\"any\"", 5, JSON_DECODE_ANY);
	/* every document the serializer tests use */
	for (size_t i = 0; i < sizeof(docs) / sizeof(*docs); i++)
		loads_like_jansson(docs[i], strlen(docs[i]), 0);
}
END_TEST

/* Nesting: deep documents parse as jansson parses them (its own limit). */
START_TEST(load_deep_nesting)
{
	size_t depths[] = {10, 511, 513, 600, 2100};
	for (size_t i = 0; i < sizeof(depths) / sizeof(*depths); i++) {
		size_t d = depths[i];
		char *s = malloc(2 * d + 1);
		memset(s, '[', d);
		memset(s + d, ']', d);
		s[2 * d] = '\0';
		loads_like_jansson(s, 2 * d, 0);
		free(s);
	}
}
END_TEST

/* Go's encoding/json syntax errors, as json.Unmarshal words them (checked
 * against Go's scanner messages for the same inputs). */
START_TEST(go_syntax_errors)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"xyz", "invalid character 'x' looking for beginning of value"},
	    {"", "unexpected end of JSON input"},
	    {"{\"a\":1", "unexpected end of JSON input"},
	    {"{\"a\":1,}", "invalid character '}' looking for beginning of object key string"},
	    {"{\"a\" 1}", "invalid character '1' after object key"},
	    {"{\"a\":1 \"b\":2}", "invalid character '\"' after object key:value pair"},
	    {"[1 2]", "invalid character '2' after array element"},
	    {"{\"a\":tru}", "invalid character '}' in literal true (expecting 'e')"},
	    {"{\"a\":nul}", "invalid character '}' in literal null (expecting 'l')"},
	    {"01", "invalid character '1' after top-level value"},
	    {"-x", "invalid character 'x' in numeric literal"},
	    {"1.x", "invalid character 'x' after decimal point in numeric literal"},
	    {"1ex", "invalid character 'x' in exponent of numeric literal"},
	    {"\"a\\qb\"", "invalid character 'q' in string escape code"},
	    {"\"\\u12x4\"", "invalid character 'x' in \\u hexadecimal character escape"},
	    {"\"a\nb\"", "invalid character '\\n' in string literal"},
	    {"{} x", "invalid character 'x' after top-level value"},
	    {"{'a':1}", "invalid character '\\'' looking for beginning of object key string"},
	};
	char out[256];
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		out[0] = '\0';
		ck_assert_int_eq(
		    kb_json_go_syntax_error(cases[i].in, strlen(cases[i].in), out, sizeof(out)), 1);
		ck_assert_str_eq(out, cases[i].want);
	}
	static const char *const ok[] = {"{}", " [1, -0.5e+3, true, null, \"\\u00e9\"] ", "42",
					 "\"s\"", "{\"a\":{\"b\":[[]]}}"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++)
		ck_assert_int_eq(kb_json_go_syntax_error(ok[i], strlen(ok[i]), out, sizeof(out)),
				 0);
}
END_TEST

/* The allocation cache (lib/json_alloc.c): a block it hands out is large
 * enough for what was asked, a freed small block comes back for a request
 * of its size, blocks freed by a thread that then exits are given back, and
 * trees built through it are what they would be without it. */
struct freer {
	void **blocks;
	size_t n;
	json_free_t free_fn;
};

static void *free_in_thread(void *arg)
{
	struct freer *f = arg;
	for (size_t i = 0; i < f->n; i++)
		f->free_fn(f->blocks[i]);
	return NULL;
}

/* kb_json_text_member: a member's span found in text, strings and nested
 * values skipped whole; malformed or cut text is never a match. */
START_TEST(text_member_spans)
{
	const char *t = " {\"a\": \"x}\\\",\" , \"b\":[1,{\"metadata\":2}],"
			"\"metadata\" : {\"name\":\"n\"} ,\"n\":12}";
	size_t n = strlen(t), k = 0, v = 0, e = 0;
	ck_assert(kb_json_text_member(t, n, 0, "metadata", &k, &v, &e));
	ck_assert_int_eq(t[k], '"');
	ck_assert_int_eq(strncmp(t + k, "\"metadata\" :", 12), 0);
	ck_assert_uint_eq(e - v, 12);
	ck_assert_int_eq(strncmp(t + v, "{\"name\":\"n\"}", 12), 0);
	/* a scalar ends at the bracket that closes its object */
	ck_assert(kb_json_text_member(t, n, 0, "n", NULL, &v, &e));
	ck_assert_uint_eq(e - v, 2);
	ck_assert_int_eq(t[e], '}');
	/* without val_end the value is not looked at: inside it next */
	ck_assert(kb_json_text_member(t, n, 0, "metadata", NULL, &v, NULL));
	ck_assert(kb_json_text_member(t, n, v, "name", NULL, &v, &e));
	ck_assert_uint_eq(e - v, 3);
	/* the quote inside "a"'s string and the nested "metadata" do not count */
	ck_assert(!kb_json_text_member(t, n, 0, "x", NULL, &v, &e));
	ck_assert(!kb_json_text_member(t, n, 0, "c", NULL, &v, &e));
	ck_assert(!kb_json_text_member("[1]", 3, 0, "a", NULL, &v, &e));
	for (size_t cut = 0; cut < n - 20; cut++) /* cut before the member ends */
		ck_assert(!kb_json_text_member(t, cut, 0, "metadata", NULL, &v, &e));
}
END_TEST

START_TEST(alloc_cache_reuses_fitting_blocks)
{
	json_malloc_t m0, m;
	json_free_t f0, f;

	json_get_alloc_funcs(&m0, &f0);
	kb_json_alloc_install();
	kb_json_alloc_enable();
	json_get_alloc_funcs(&m, &f);
#ifdef __GLIBC__
	/* where the cache is on, glibc's chunk headers class the blocks */
	ck_assert(m == m0 || kb_json_alloc_reads_headers());
#endif
	for (size_t n = 1; n <= 700; n++) {
		char *p = m(n);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_ge(malloc_usable_size(p), n);
		memset(p, 0xa5, n);
		f(p);
		char *q = m(n);
		ck_assert_uint_ge(malloc_usable_size(q), n);
		memset(q, 0x5a, n);
		if (m != m0 && n <= 504)
			ck_assert_ptr_eq(q, p); /* the cached block itself */
		f(q);
	}
	/* a freed block serves the largest request of its class (the class read
	 * from the chunk's header, or malloc_usable_size where that is not glibc's) */
	for (size_t n = 1; n <= 504; n++) {
		size_t k = (n + 23) >> 4, top = (k < 2 ? 2 : k) * 16 - 8;
		char *p = m(n);
		f(p);
		char *q = m(top);
		ck_assert_uint_ge(malloc_usable_size(q), top);
		memset(q, 0x3c, top);
		if (m != m0)
			ck_assert_ptr_eq(q, p);
		f(q);
	}
	json_t *a = json_pack("{s:[i,s,{s:b}],s:o}", "x", 1, "two", "y", 1, "z", json_object());
	char *sa = json_dumps(a, JSON_COMPACT);
	ck_assert_str_eq(sa, "{\"x\":[1,\"two\",{\"y\":true}],\"z\":{}}");
	json_decref(a);
	free(sa);

	struct freer fr = {.blocks = calloc(2000, sizeof(void *)), .n = 2000, .free_fn = f};
	for (size_t i = 0; i < fr.n; i++)
		fr.blocks[i] = m(16 + i % 400);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, free_in_thread, &fr), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	free(fr.blocks);
	kb_json_alloc_flush();
	json_set_alloc_funcs(m0, f0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lib/json");
	TCase *tc = tcase_create("json");
	tcase_add_test(tc, dump_matches_jansson);
	tcase_add_test(tc, dump_controls_and_order);
	tcase_add_test(tc, dump_appends_and_refuses_bad_utf8);
	tcase_add_test(tc, copy_is_deep_and_equal);
	tcase_add_test(tc, put_key_as_jansson_writes_it);
	tcase_add_test(tc, load_matches_jansson);
	tcase_add_test(tc, plain_runs_every_byte_everywhere);
	tcase_add_test(tc, load_deep_nesting);
	tcase_add_test(tc, same_counts_two_missing_values_equal);
	tcase_add_test(tc, array_sort);
	tcase_add_test(tc, go_syntax_errors);
	tcase_add_test(tc, alloc_cache_reuses_fitting_blocks);
	tcase_add_test(tc, text_member_spans);
	tcase_add_test(tc, raw_is_written_as_its_text);
	tcase_add_test(tc, input_is_never_raw);
	suite_add_tcase(s, tc);
	return s;
}
