/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL's evaluator: walks a compiled program's nodes in an evaluation
 * context, with cel-go's semantics: errors are values that && and || absorb
 * when the other side decides (commutatively), heterogeneous equality and
 * cross-type numeric comparisons, overflow-checked arithmetic, and the
 * macros' comprehensions charged to the cost counter per step.
 *
 * Lists and maps are either materialized (arena arrays) or backed by JSON
 * (cel_json): a JSON-backed one converts an item when it is read, typed by
 * the OpenAPI schema as kube's structural-schema conversion does (integer ->
 * int, number -> double, format date-time -> timestamp, int-or-string, list
 * types set and map compared ignoring order, escaped property names).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/ast.h"
#include "proxy/cel/ctx.h"
#include "lib/log.h"

#define COST_MSG "operation cancelled: actual cost limit exceeded"

enum { LT_LIST, LT_SET, LT_MAP };
enum { MK_PLAIN, MK_OBJECT, MK_ADDL, MK_DYN };

struct cel_list {
	size_t n;
	cel_value_t *items; /* materialized, or the conversions made so far */
	bool *have;         /* JSON-backed: items[i] converted */
	const json_t *json;
	const json_t *items_schema;
	int ltype;
	const json_t *map_keys;
};

struct cel_map {
	size_t n;
	cel_value_t *keys, *vals; /* materialized */
	const json_t *json;
	const json_t *schema;
	int mkind;
	const char **jkeys; /* JSON-backed: keys in order, made on first use */
};

/* cel-go's error for an operator applied to operands it does not take. */
static cel_value_t no_overload(cel_ctx_t *c)
{
	return cel_errorf(c, "no such overload");
}

/* ---- lists ---- */

cel_value_t cel_list_new(cel_ctx_t *c, const cel_value_t *items, size_t n)
{
	struct cel_list *l = cel_alloc(c, sizeof(*l));
	l->items = cel_alloc(c, n * sizeof(*items) + 1);
	if (n)
		memcpy(l->items, items, n * sizeof(*items));
	l->n = n;
	return (cel_value_t){.kind = CEL_LIST, .l = l};
}

size_t cel_list_size(const struct cel_list *l)
{
	return l->n;
}

cel_value_t cel_list_at(cel_ctx_t *c, const struct cel_list *l, size_t i)
{
	KB_REQUIRE(i < l->n);
	if (!l->json)
		return l->items[i];
	struct cel_list *w = (struct cel_list *)l; /* the conversion cache */
	if (!w->have[i]) {
		w->items[i] = cel_json(c, json_array_get(l->json, i), l->items_schema);
		w->have[i] = true;
	}
	return w->items[i];
}

/* ---- maps ---- */

static bool key_kind_ok(cel_value_t k)
{
	return k.kind == CEL_BOOL || k.kind == CEL_INT || k.kind == CEL_UINT ||
	       k.kind == CEL_STRING;
}

cel_value_t cel_map_new(cel_ctx_t *c, const cel_value_t *keys, const cel_value_t *vals, size_t n)
{
	struct cel_map *m = cel_alloc(c, sizeof(*m));
	m->keys = cel_alloc(c, n * sizeof(*keys) + 1);
	m->vals = cel_alloc(c, n * sizeof(*vals) + 1);
	for (size_t i = 0; i < n; i++) {
		if (!key_kind_ok(keys[i]))
			return cel_errorf(c, "unsupported key type: %s", cel_type_name(keys[i]));
		cel_value_t old;
		if (cel_map_get(c, m, keys[i], &old))
			return cel_errorf(c, "Failed with repeated key");
		m->keys[i] = keys[i];
		m->vals[i] = vals[i];
		m->n = i + 1;
	}
	return (cel_value_t){.kind = CEL_MAP, .m = m};
}

size_t cel_map_size(const struct cel_map *m)
{
	return m->n;
}

bool cel_map_get(cel_ctx_t *c, const struct cel_map *m, cel_value_t key, cel_value_t *out)
{
	if (m->json) {
		if (key.kind != CEL_STRING)
			return false;
		const json_t *v = json_object_getn(m->json, key.s.p, key.s.len);
		if (!v)
			return false;
		const json_t *schema = NULL;
		if (m->mkind == MK_OBJECT) {
			const json_t *props = json_object_get(m->schema, "properties");
			schema = json_object_getn(props, key.s.p, key.s.len);
		} else if (m->mkind == MK_ADDL) {
			schema = json_object_get(m->schema, "additionalProperties");
		}
		*out = cel_json(c, v, schema);
		return true;
	}
	for (size_t i = 0; i < m->n; i++)
		if (cel_values_equal(c, m->keys[i], key)) {
			*out = m->vals[i];
			return true;
		}
	return false;
}

cel_value_t cel_map_key_at(cel_ctx_t *c, const struct cel_map *m, size_t i)
{
	KB_REQUIRE(i < m->n);
	if (!m->json)
		return m->keys[i];
	struct cel_map *w = (struct cel_map *)m;
	if (!w->jkeys) {
		w->jkeys = cel_alloc(c, m->n * sizeof(*w->jkeys) + 1);
		const char *k;
		json_t *v;
		size_t j = 0;
		json_object_foreach ((json_t *)m->json, k, v)
			if (j < m->n)
				w->jkeys[j++] = k;
	}
	return cel_string(w->jkeys[i]);
}

/* ---- JSON values typed by a schema ---- */

static cel_value_t json_list(cel_ctx_t *c, const json_t *v, const json_t *schema)
{
	struct cel_list *l = cel_alloc(c, sizeof(*l));
	l->n = json_array_size(v);
	l->json = v;
	l->items = cel_alloc(c, l->n * sizeof(*l->items) + 1);
	l->have = cel_alloc(c, l->n + 1);
	if (schema) {
		l->items_schema = json_object_get(schema, "items");
		const char *lt =
		    json_string_value(json_object_get(schema, "x-kubernetes-list-type"));
		if (lt && !strcmp(lt, "set"))
			l->ltype = LT_SET;
		if (lt && !strcmp(lt, "map")) {
			l->ltype = LT_MAP;
			l->map_keys = json_object_get(schema, "x-kubernetes-list-map-keys");
		}
	}
	return (cel_value_t){.kind = CEL_LIST, .l = l};
}

static cel_value_t json_map(cel_ctx_t *c, const json_t *v, const json_t *schema)
{
	struct cel_map *m = cel_alloc(c, sizeof(*m));
	m->n = json_object_size(v);
	m->json = v;
	m->schema = schema;
	m->mkind = MK_DYN;
	if (schema) {
		if (json_is_object(json_object_get(schema, "additionalProperties")))
			m->mkind = MK_ADDL;
		else if (json_object_get(schema, "properties") ||
			 json_is_true(json_object_get(schema, "x-kubernetes-embedded-resource")))
			m->mkind = MK_OBJECT;
	}
	return (cel_value_t){.kind = CEL_MAP, .m = m};
}

static cel_value_t json_dyn(cel_ctx_t *c, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return json_map(c, v, NULL);
	case JSON_ARRAY: return json_list(c, v, NULL);
	case JSON_STRING: return cel_string_n(json_string_value(v), json_string_length(v));
	case JSON_INTEGER: return cel_int(json_integer_value(v));
	case JSON_REAL: return cel_double(json_real_value(v));
	case JSON_TRUE: return cel_bool(true);
	case JSON_FALSE: return cel_bool(false);
	default: return cel_null();
	}
}

/* The other date-time forms kube's OpenAPI validation (go-openapi strfmt)
 * admits, rewritten as RFC 3339: 't'/'z' in lower case, a space for the
 * 'T', no seconds ("15:04Z"), no zone (UTC), offsets without a colon. */
static int lenient_date_time(const char *s, size_t n, int64_t *t)
{
	char b[80];
	if (n < 16 || n > 60 || (s[10] != 'T' && s[10] != 't' && s[10] != ' '))
		return -EINVAL;
	memcpy(b, s, n);
	b[n] = 0;
	b[10] = 'T';
	size_t len = n;
	if (b[len - 1] == 'z')
		b[len - 1] = 'Z';
	if (len == 16 || (len == 17 && b[16] == 'Z')) { /* no seconds */
		memmove(b + 19, b + 16, len - 16 + 1);
		memcpy(b + 16, ":00", 3);
		len += 3;
	}
	size_t tz = 19;
	while (tz < len && (b[tz] == '.' || (b[tz] >= '0' && b[tz] <= '9')))
		tz++;
	if (tz == len) {
		b[len++] = 'Z';
		b[len] = 0;
	} else if ((b[tz] == '+' || b[tz] == '-') && len - tz == 5) { /* +0100 */
		memmove(b + tz + 4, b + tz + 3, 3);
		b[tz + 3] = ':';
		len++;
		b[len] = 0;
	}
	return cel_parse_timestamp(b, len, t);
}

static cel_value_t json_string_typed(cel_ctx_t *c, const json_t *v, const char *format)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	int64_t t;
	if (!format)
		return cel_string_n(s, n);
	if (!strcmp(format, "byte")) {
		char *out = cel_alloc(c, n + 1);
		long len = cel_base64_decode(s, n, out);
		if (len < 0)
			return cel_errorf(c, "illegal base64 data");
		return cel_bytes(out, (size_t)len);
	}
	if (!strcmp(format, "duration")) {
		if (cel_parse_duration(s, n, &t) < 0)
			return cel_errorf(c, "invalid duration: %s", s);
		return (cel_value_t){.kind = CEL_DURATION, .i = t};
	}
	if (!strcmp(format, "date-time") || !strcmp(format, "date")) {
		char buf[80];
		if (!strcmp(format, "date") && n == 10) {
			snprintf(buf, sizeof(buf), "%sT00:00:00Z", s);
			s = buf;
			n = strlen(buf);
		}
		if (cel_parse_timestamp(s, n, &t) < 0 && lenient_date_time(s, n, &t) < 0)
			return cel_errorf(c, "invalid %s: %s", format, json_string_value(v));
		return (cel_value_t){.kind = CEL_TIMESTAMP, .i = t};
	}
	return cel_string_n(s, n);
}

cel_value_t cel_json(cel_ctx_t *c, const json_t *v, const json_t *schema)
{
	if (!v || json_is_null(v))
		return cel_null();
	if (!schema)
		return json_dyn(c, v);
	if (json_is_true(json_object_get(schema, "x-kubernetes-int-or-string")))
		return json_dyn(c, v);
	const char *type = json_string_value(json_object_get(schema, "type"));
	if (!type)
		type = "";
	if (!strcmp(type, "integer") && json_is_integer(v))
		return cel_int(json_integer_value(v));
	if (!strcmp(type, "integer") && json_is_real(v)) {
		double d = json_real_value(v);
		if (!(d > -9223372036854775808.0 && d < 9223372036854775808.0))
			return cel_errorf(c, "integer overflow");
		return cel_int((int64_t)d);
	}
	if (!strcmp(type, "number") && json_is_number(v))
		return cel_double(json_number_value(v));
	if (!strcmp(type, "string") && json_is_string(v))
		return json_string_typed(c, v,
					 json_string_value(json_object_get(schema, "format")));
	if (json_is_array(v))
		return json_list(c, v, schema);
	if (json_is_object(v))
		return json_map(c, v, schema);
	return json_dyn(c, v);
}

/* ---- equality and ordering ---- */

static bool is_num(cel_value_t v)
{
	return v.kind == CEL_INT || v.kind == CEL_UINT || v.kind == CEL_DOUBLE;
}

static int cmp3(long double a, long double b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

static int compare_num(cel_value_t a, cel_value_t b, int *cmp)
{
	if (a.kind == CEL_DOUBLE || b.kind == CEL_DOUBLE) {
		long double x = a.kind == CEL_DOUBLE ? (long double)a.d
				: a.kind == CEL_INT  ? (long double)a.i
						     : (long double)a.u;
		long double y = b.kind == CEL_DOUBLE ? (long double)b.d
				: b.kind == CEL_INT  ? (long double)b.i
						     : (long double)b.u;
		if (isnan(x) || isnan(y))
			return -EINVAL;
		*cmp = cmp3(x, y);
		return 0;
	}
	if (a.kind == CEL_INT && b.kind == CEL_INT)
		*cmp = a.i < b.i ? -1 : a.i > b.i;
	else if (a.kind == CEL_UINT && b.kind == CEL_UINT)
		*cmp = a.u < b.u ? -1 : a.u > b.u;
	else if (a.kind == CEL_INT)
		*cmp = a.i < 0 ? -1 : (uint64_t)a.i < b.u ? -1 : (uint64_t)a.i > b.u;
	else
		*cmp = b.i < 0 ? 1 : a.u < (uint64_t)b.i ? -1 : a.u > (uint64_t)b.i;
	return 0;
}

static int compare_bytes(struct cel_str a, struct cel_str b)
{
	size_t n = a.len < b.len ? a.len : b.len;
	int r = n ? memcmp(a.p, b.p, n) : 0;
	if (r)
		return r < 0 ? -1 : 1;
	return a.len < b.len ? -1 : a.len > b.len;
}

int cel_compare(cel_value_t a, cel_value_t b, int *cmp)
{
	if (is_num(a) && is_num(b))
		return compare_num(a, b, cmp);
	if (a.kind != b.kind)
		return -EINVAL;
	switch (a.kind) {
	case CEL_BOOL: *cmp = (int)a.b - (int)b.b; return 0;
	case CEL_STRING:
	case CEL_BYTES: *cmp = compare_bytes(a.s, b.s); return 0;
	case CEL_DURATION:
	case CEL_TIMESTAMP: *cmp = a.i < b.i ? -1 : a.i > b.i; return 0;
	default: return -EINVAL;
	}
}

static bool list_contains(cel_ctx_t *c, const struct cel_list *l, cel_value_t v, bool *used)
{
	for (size_t i = 0; i < l->n; i++)
		if ((!used || !used[i]) && cel_values_equal(c, cel_list_at(c, l, i), v)) {
			if (used)
				used[i] = true;
			return true;
		}
	return false;
}

/* Lists kube types as sets or maps compare ignoring order. */
static bool lists_equal(cel_ctx_t *c, const struct cel_list *a, const struct cel_list *b)
{
	if (a->n != b->n)
		return false;
	if (a->ltype == LT_LIST && b->ltype == LT_LIST) {
		for (size_t i = 0; i < a->n; i++)
			if (!cel_values_equal(c, cel_list_at(c, a, i), cel_list_at(c, b, i)))
				return false;
		return true;
	}
	bool *used = cel_alloc(c, b->n + 1);
	for (size_t i = 0; i < a->n; i++)
		if (!list_contains(c, b, cel_list_at(c, a, i), used))
			return false;
	return true;
}

static bool maps_equal(cel_ctx_t *c, const struct cel_map *a, const struct cel_map *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++) {
		cel_value_t k = cel_map_key_at(c, a, i), va, vb;
		if (!cel_map_get(c, b, k, &vb) || !cel_map_get(c, a, k, &va) ||
		    !cel_values_equal(c, va, vb))
			return false;
	}
	return true;
}

bool cel_values_equal(cel_ctx_t *c, cel_value_t a, cel_value_t b)
{
	int cmp;
	if (is_num(a) && is_num(b))
		return compare_num(a, b, &cmp) == 0 && cmp == 0;
	if (a.kind != b.kind)
		return false;
	switch (a.kind) {
	case CEL_NULL: return true;
	case CEL_BOOL: return a.b == b.b;
	case CEL_STRING:
	case CEL_BYTES:
	case CEL_TYPE: return a.s.len == b.s.len && !compare_bytes(a.s, b.s);
	case CEL_DURATION:
	case CEL_TIMESTAMP: return a.i == b.i;
	case CEL_LIST: return lists_equal(c, a.l, b.l);
	case CEL_MAP: return maps_equal(c, a.m, b.m);
	case CEL_OPTIONAL:
		if (!a.opt || !b.opt)
			return !a.opt && !b.opt;
		return cel_values_equal(c, *a.opt, *b.opt);
	case CEL_OPAQUE:
		if (a.o.type != b.o.type)
			return false;
		if (a.o.data == b.o.data)
			return true;
		return a.o.type->equal && a.o.type->equal(a.o.data, b.o.data);
	default: return false;
	}
}

cel_value_t cel_equal(cel_ctx_t *c, cel_value_t a, cel_value_t b)
{
	if (cel_is_error(a))
		return a;
	if (cel_is_error(b))
		return b;
	return cel_bool(cel_values_equal(c, a, b));
}

const char *cel_type_name(cel_value_t v)
{
	static const char *const names[] = {
	    [CEL_NULL] = "null_type",
	    [CEL_BOOL] = "bool",
	    [CEL_INT] = "int",
	    [CEL_UINT] = "uint",
	    [CEL_DOUBLE] = "double",
	    [CEL_STRING] = "string",
	    [CEL_BYTES] = "bytes",
	    [CEL_LIST] = "list",
	    [CEL_MAP] = "map",
	    [CEL_DURATION] = "google.protobuf.Duration",
	    [CEL_TIMESTAMP] = "google.protobuf.Timestamp",
	    [CEL_TYPE] = "type",
	    [CEL_OPTIONAL] = "optional_type",
	    [CEL_OPAQUE] = "opaque",
	    [CEL_ERROR] = "error",
	};
	if (v.kind == CEL_OPAQUE && v.o.type && v.o.type->name)
		return v.o.type->name;
	return names[v.kind];
}

/* ---- kube's property-name escaping ---- */

static bool is_ident_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '_';
}

static const char *const cel_keywords[] = {
    "true",      "false",  "null",     "in",   "as",     "break", "const", "continue",
    "else",      "for",    "function", "if",   "import", "let",   "loop",  "package",
    "namespace", "return", "var",      "void", "while",  NULL};

static bool is_keyword(const char *s, size_t n)
{
	for (int k = 0; cel_keywords[k]; k++)
		if (strlen(cel_keywords[k]) == n && !strncmp(cel_keywords[k], s, n))
			return true;
	return false;
}

struct sbuf {
	char *p;
	size_t len, cap;
	bool ok;
};

static void sput(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n >= b->cap) {
		b->ok = false;
		return;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

/* kube's Escape (apiserver/pkg/cel/escaping.go): the CEL field name of a
 * property, or false when the property cannot be reached from CEL. */
static bool escape_field(const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);
	struct sbuf b = {out, 0, cap, true};
	if (n == 0 || (name[0] >= '0' && name[0] <= '9'))
		return false;
	if (is_keyword(name, n)) {
		sput(&b, "__", 2);
		sput(&b, name, n);
		sput(&b, "__", 2);
		return b.ok;
	}
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];
		if (ch == '_' && i + 1 < n && name[i + 1] == '_') {
			sput(&b, "__underscores__", 15);
			i++;
		} else if (ch == '.' || ch == '-' || ch == '/') {
			const char *e = ch == '.'   ? "__dot__"
					: ch == '-' ? "__dash__"
						    : "__slash__";
			sput(&b, e, strlen(e));
		} else if (is_ident_char(ch)) {
			sput(&b, &ch, 1);
		} else {
			return false;
		}
	}
	return b.ok;
}

/* kube's Unescape: each "__x__" with x free of '_' replaced. */
static bool unescape(const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);
	struct sbuf b = {out, 0, cap, true};
	out[0] = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i + 2;
		if (name[i] == '_' && i + 1 < n && name[i + 1] == '_') {
			while (j < n && name[j] != '_')
				j++;
		}
		if (j > i + 2 && j + 1 < n && name[j] == '_' && name[j + 1] == '_') {
			const char *x = name + i + 2;
			size_t xl = j - i - 2;
			static const char *const seqs[][2] = {
			    {"underscores", "__"}, {"dot", "."}, {"dash", "-"}, {"slash", "/"}};
			size_t k;
			for (k = 0; k < 4; k++)
				if (strlen(seqs[k][0]) == xl && !strncmp(x, seqs[k][0], xl))
					break;
			if (k < 4)
				sput(&b, seqs[k][1], strlen(seqs[k][1]));
			else if (is_keyword(x, xl) && i == 0 && j + 2 == n)
				sput(&b, x, xl);
			else
				return false;
			i = j + 2;
			continue;
		}
		sput(&b, name + i, 1);
		i++;
	}
	return b.ok;
}

int cel_unescape_field(const char *name, char *out, size_t cap)
{
	char check[512];
	if (!unescape(name, out, cap) || !escape_field(out, check, sizeof(check)) ||
	    strcmp(check, name) != 0)
		return -EINVAL;
	return 0;
}

/* ---- the evaluator ---- */

struct frame {
	const struct frame *up;
	const char *name;
	cel_value_t v;
};

struct ev {
	cel_ctx_t *c;
	const struct frame *fr;
};

static cel_value_t ev(struct ev *e, const struct cel_node *n);

static const char *const type_names[] = {"int",
					 "uint",
					 "double",
					 "bool",
					 "string",
					 "bytes",
					 "list",
					 "map",
					 "null_type",
					 "type",
					 "google.protobuf.Duration",
					 "google.protobuf.Timestamp",
					 "optional_type",
					 NULL};

static cel_value_t ev_ident(struct ev *e, const struct cel_node *n)
{
	for (const struct frame *f = e->fr; f; f = f->up)
		if (!strcmp(f->name, n->name))
			return f->v;
	cel_value_t v;
	if (cel_lookup(e->c, n->name, &v))
		return v;
	for (int k = 0; type_names[k]; k++)
		if (!strcmp(type_names[k], n->name))
			return (cel_value_t){.kind = CEL_TYPE,
					     .s = {type_names[k], strlen(type_names[k])}};
	if (!strcmp(n->name, "dyn"))
		return (cel_value_t){.kind = CEL_TYPE, .s = {"dyn", 3}};
	return cel_errorf(e->c, "no such attribute(s): %s", n->name);
}

/* Field name of a select on a JSON object typed by properties. */
static bool select_field(cel_ctx_t *c, const struct cel_map *m, const char *name, cel_value_t *out)
{
	char buf[512];
	if (m->json && m->mkind == MK_OBJECT) {
		/* a keyword as written (`x.namespace`) is the property itself,
		 * where the checker let it through (kube's keyword fields) */
		if (cel_unescape_field(name, buf, sizeof(buf)) < 0 &&
		    !is_keyword(name, strlen(name)))
			return false;
		if (!is_keyword(name, strlen(name)))
			name = buf;
	}
	return cel_map_get(c, m, cel_string(name), out);
}

static cel_value_t ev_select(struct ev *e, const struct cel_node *n)
{
	cel_value_t v = ev(e, n->a), out;
	if (cel_is_error(v))
		return v;
	bool wrap = n->opt;
	if (v.kind == CEL_OPTIONAL) {
		if (!v.opt)
			return n->op ? cel_bool(false) : v;
		v = *v.opt;
		wrap = true;
	}
	if (v.kind == CEL_OPAQUE && v.o.type && v.o.type->select && !n->op && !wrap)
		return v.o.type->select(e->c, v.o.data, n->name);
	if (v.kind != CEL_MAP) /* cel-go's words, has() or not (null included) */
		return cel_errorf(e->c, "invalid type for field selection.");
	bool found = select_field(e->c, v.m, n->name, &out);
	if (n->op)
		return cel_bool(found);
	if (wrap)
		return cel_optional(e->c, found ? &out : NULL);
	if (!found)
		return cel_errorf(e->c, "no such key: %s", n->name);
	return out;
}

/* An integral index for a list: int, uint, or a double with no fraction. */
static bool list_index(cel_value_t k, int64_t *i)
{
	if (k.kind == CEL_INT)
		*i = k.i;
	else if (k.kind == CEL_UINT)
		*i = k.u > INT64_MAX ? -1 : (int64_t)k.u;
	else if (k.kind == CEL_DOUBLE && k.d == floor(k.d) && fabs(k.d) < 9.2e18)
		*i = (int64_t)k.d;
	else
		return false;
	return true;
}

static cel_value_t key_error(cel_ctx_t *c, cel_value_t k)
{
	size_t len;
	const char *s = cel_scalar_string(c, k, &len);
	return cel_errorf(c, "no such key: %.*s", s ? (int)len : 1, s ? s : "?");
}

static cel_value_t index_value(cel_ctx_t *c, cel_value_t v, cel_value_t k, bool opt)
{
	cel_value_t out;
	if (v.kind == CEL_LIST) {
		int64_t i;
		if (k.kind == CEL_DOUBLE && !list_index(k, &i)) {
			size_t len;
			const char *d = cel_scalar_string(c, k, &len);
			return cel_errorf(c, "unsupported index value %s in list", d);
		}
		if (!list_index(k, &i))
			return cel_errorf(c, "unsupported index type '%s' in list",
					  cel_type_name(k));
		bool in = i >= 0 && (uint64_t)i < v.l->n;
		if (opt) {
			if (!in)
				return cel_optional(c, NULL);
			out = cel_list_at(c, v.l, (size_t)i);
			return cel_optional(c, &out);
		}
		if (!in)
			return cel_errorf(c, "index '%lld' out of range in list size '%zu'",
					  (long long)i, v.l->n);
		return cel_list_at(c, v.l, (size_t)i);
	}
	if (v.kind == CEL_MAP) {
		bool found = cel_map_get(c, v.m, k, &out);
		if (!found && k.kind == CEL_DOUBLE && k.d == floor(k.d) && fabs(k.d) < 9.2e18)
			found = cel_map_get(c, v.m, cel_int((int64_t)k.d), &out);
		if (opt)
			return cel_optional(c, found ? &out : NULL);
		return found ? out : key_error(c, k);
	}
	return no_overload(c);
}

static cel_value_t ev_index(struct ev *e, const struct cel_node *n)
{
	cel_value_t v = ev(e, n->a);
	if (cel_is_error(v))
		return v;
	cel_value_t k = ev(e, n->b);
	if (cel_is_error(k))
		return k;
	if (v.kind == CEL_OPTIONAL) {
		if (!v.opt)
			return v;
		return index_value(e->c, *v.opt, k, true);
	}
	return index_value(e->c, v, k, n->opt);
}

static cel_value_t ev_list(struct ev *e, const struct cel_node *n)
{
	cel_value_t *items = cel_alloc(e->c, (n->nargs + 1) * sizeof(*items));
	size_t k = 0;
	for (size_t i = 0; i < n->nargs; i++) {
		cel_value_t v = ev(e, n->args[i]);
		if (cel_is_error(v))
			return v;
		if (n->optf[i]) {
			if (v.kind != CEL_OPTIONAL)
				return cel_errorf(e->c,
						  "no such overload: optional list element "
						  "of type %s",
						  cel_type_name(v));
			if (!v.opt)
				continue;
			v = *v.opt;
		}
		items[k++] = v;
	}
	return cel_list_new(e->c, items, k);
}

static cel_value_t ev_map(struct ev *e, const struct cel_node *n)
{
	cel_value_t *keys = cel_alloc(e->c, (n->nargs + 1) * sizeof(*keys));
	cel_value_t *vals = cel_alloc(e->c, (n->nargs + 1) * sizeof(*vals));
	size_t k = 0;
	for (size_t i = 0; i < n->nargs; i++) {
		cel_value_t kv = ev(e, n->args[i]);
		if (cel_is_error(kv))
			return kv;
		cel_value_t v = ev(e, n->args2[i]);
		if (cel_is_error(v))
			return v;
		if (n->optf[i]) {
			if (v.kind != CEL_OPTIONAL)
				return cel_errorf(e->c,
						  "no such overload: optional map entry of "
						  "type %s",
						  cel_type_name(v));
			if (!v.opt)
				continue;
			v = *v.opt;
		}
		keys[k] = kv;
		vals[k++] = v;
	}
	return cel_map_new(e->c, keys, vals, k);
}

/* && and ||: the deciding value wins over an error on either side. */
static cel_value_t ev_logic(struct ev *e, const struct cel_node *n, bool isor)
{
	cel_value_t a = ev(e, n->a);
	if (a.kind == CEL_BOOL && a.b == isor)
		return a;
	if (e->c->over)
		return a;
	cel_value_t b = ev(e, n->b);
	if (b.kind == CEL_BOOL && b.b == isor)
		return b;
	if (cel_is_error(a))
		return a;
	if (cel_is_error(b))
		return b;
	if (a.kind != CEL_BOOL || b.kind != CEL_BOOL)
		return no_overload(e->c);
	return cel_bool(!isor);
}

static cel_value_t ev_cond(struct ev *e, const struct cel_node *n)
{
	cel_value_t a = ev(e, n->a);
	if (cel_is_error(a))
		return a;
	if (a.kind != CEL_BOOL)
		return no_overload(e->c);
	return ev(e, a.b ? n->b : n->c);
}

static cel_value_t ev_unary(struct ev *e, const struct cel_node *n)
{
	cel_value_t a = ev(e, n->a);
	if (cel_is_error(a))
		return a;
	if (n->kind == N_NOT)
		return a.kind == CEL_BOOL ? cel_bool(!a.b) : no_overload(e->c);
	switch (a.kind) {
	case CEL_INT:
		if (a.i == INT64_MIN)
			return cel_errorf(e->c, "integer overflow");
		return cel_int(-a.i);
	case CEL_DOUBLE: return cel_double(-a.d);
	case CEL_DURATION:
		if (a.i == INT64_MIN)
			return cel_errorf(e->c, "duration overflow");
		return (cel_value_t){.kind = CEL_DURATION, .i = -a.i};
	default: return no_overload(e->c);
	}
}

/* ---- arithmetic ---- */

static cel_value_t int_op(cel_ctx_t *c, int op, int64_t a, int64_t b)
{
	int64_t r;
	bool ovf = false;
	switch (op) {
	case B_ADD: ovf = __builtin_add_overflow(a, b, &r); break;
	case B_SUB: ovf = __builtin_sub_overflow(a, b, &r); break;
	case B_MUL: ovf = __builtin_mul_overflow(a, b, &r); break;
	case B_DIV:
		if (b == 0)
			return cel_errorf(c, "division by zero");
		ovf = a == INT64_MIN && b == -1;
		r = ovf ? 0 : a / b;
		break;
	default:
		if (b == 0)
			return cel_errorf(c, "modulus by zero");
		ovf = a == INT64_MIN && b == -1;
		r = ovf ? 0 : a % b;
	}
	return ovf ? cel_errorf(c, "integer overflow") : cel_int(r);
}

static cel_value_t uint_op(cel_ctx_t *c, int op, uint64_t a, uint64_t b)
{
	uint64_t r;
	bool ovf = false;
	switch (op) {
	case B_ADD: ovf = __builtin_add_overflow(a, b, &r); break;
	case B_SUB: ovf = __builtin_sub_overflow(a, b, &r); break;
	case B_MUL: ovf = __builtin_mul_overflow(a, b, &r); break;
	case B_DIV:
		if (b == 0)
			return cel_errorf(c, "division by zero");
		r = a / b;
		break;
	default:
		if (b == 0)
			return cel_errorf(c, "modulus by zero");
		r = a % b;
	}
	return ovf ? cel_errorf(c, "unsigned integer overflow") : cel_uint(r);
}

static cel_value_t double_op(cel_ctx_t *c, int op, double a, double b)
{
	switch (op) {
	case B_ADD: return cel_double(a + b);
	case B_SUB: return cel_double(a - b);
	case B_MUL: return cel_double(a * b);
	case B_DIV: return cel_double(a / b);
	default: return no_overload(c);
	}
}

#define MAX_TS 253402300799999999999.0L /* 9999-12-31T23:59:59.999999999Z in ns */

static cel_value_t time_value(cel_ctx_t *c, enum cel_kind k, int64_t a, int64_t b, bool sub)
{
	int64_t r;
	bool ovf = sub ? __builtin_sub_overflow(a, b, &r) : __builtin_add_overflow(a, b, &r);
	if (ovf)
		return cel_errorf(c,
				  k == CEL_DURATION ? "duration overflow" : "timestamp overflow");
	return (cel_value_t){.kind = k, .i = r};
}

/* The values of a map-list element's keys are equal in x and y. */
static bool same_map_keys(cel_ctx_t *c, const json_t *keys, cel_value_t x, cel_value_t y)
{
	if (x.kind != CEL_MAP || y.kind != CEL_MAP)
		return cel_values_equal(c, x, y);
	size_t i;
	json_t *k;
	json_array_foreach (keys, i, k) {
		cel_value_t name = cel_string(json_string_value(k) ? json_string_value(k) : "");
		cel_value_t vx, vy;
		bool hx = cel_map_get(c, x.m, name, &vx), hy = cel_map_get(c, y.m, name, &vy);
		if (hx != hy || (hx && !cel_values_equal(c, vx, vy)))
			return false;
	}
	return true;
}

/* kube's + on lists typed as sets (union) and maps (b's elements replace
 * a's with the same keys, new ones appended); the result keeps a's type. */
static cel_value_t concat_typed(cel_ctx_t *c, const struct cel_list *a, const struct cel_list *b)
{
	size_t n = a->n;
	cel_value_t *items = cel_alloc(c, (a->n + b->n + 1) * sizeof(*items));
	for (size_t i = 0; i < a->n; i++)
		items[i] = cel_list_at(c, a, i);
	for (size_t j = 0; j < b->n; j++) {
		cel_value_t v = cel_list_at(c, b, j);
		size_t i = 0;
		while (i < n && !(a->ltype == LT_SET ? cel_values_equal(c, items[i], v)
						     : same_map_keys(c, a->map_keys, items[i], v)))
			i++;
		if (i == n)
			items[n++] = v;
		else if (a->ltype == LT_MAP)
			items[i] = v;
	}
	cel_value_t r = cel_list_new(c, items, n);
	struct cel_list *l = (struct cel_list *)r.l;
	l->ltype = a->ltype;
	l->map_keys = a->map_keys;
	return r;
}

static cel_value_t concat(cel_ctx_t *c, cel_value_t a, cel_value_t b)
{
	if (a.kind == CEL_LIST && a.l->ltype != LT_LIST)
		return concat_typed(c, a.l, b.l);
	if (a.kind == CEL_LIST) {
		size_t n = a.l->n + b.l->n;
		cel_value_t *items = cel_alloc(c, (n + 1) * sizeof(*items));
		for (size_t i = 0; i < a.l->n; i++)
			items[i] = cel_list_at(c, a.l, i);
		for (size_t i = 0; i < b.l->n; i++)
			items[a.l->n + i] = cel_list_at(c, b.l, i);
		return cel_list_new(c, items, n);
	}
	cel_cost(c, (a.s.len + b.s.len) / 10);
	char *p = cel_alloc(c, a.s.len + b.s.len + 1);
	if (a.s.len)
		memcpy(p, a.s.p, a.s.len);
	if (b.s.len)
		memcpy(p + a.s.len, b.s.p, b.s.len);
	cel_value_t r = a;
	r.s.p = p;
	r.s.len = a.s.len + b.s.len;
	return r;
}

static cel_value_t add_sub(cel_ctx_t *c, int op, cel_value_t a, cel_value_t b)
{
	bool sub = op == B_SUB;
	if (a.kind == CEL_DURATION && b.kind == CEL_DURATION)
		return time_value(c, CEL_DURATION, a.i, b.i, sub);
	if (a.kind == CEL_TIMESTAMP && b.kind == CEL_DURATION)
		return time_value(c, CEL_TIMESTAMP, a.i, b.i, sub);
	if (!sub && a.kind == CEL_DURATION && b.kind == CEL_TIMESTAMP)
		return time_value(c, CEL_TIMESTAMP, b.i, a.i, false);
	if (sub && a.kind == CEL_TIMESTAMP && b.kind == CEL_TIMESTAMP)
		return time_value(c, CEL_DURATION, a.i, b.i, true);
	if (!sub && a.kind == b.kind &&
	    (a.kind == CEL_STRING || a.kind == CEL_BYTES || a.kind == CEL_LIST))
		return concat(c, a, b);
	return no_overload(c);
}

static cel_value_t arith(cel_ctx_t *c, int op, cel_value_t a, cel_value_t b)
{
	if (a.kind == b.kind && a.kind == CEL_INT)
		return int_op(c, op, a.i, b.i);
	if (a.kind == b.kind && a.kind == CEL_UINT)
		return uint_op(c, op, a.u, b.u);
	if (a.kind == b.kind && a.kind == CEL_DOUBLE)
		return double_op(c, op, a.d, b.d);
	if (op == B_ADD || op == B_SUB)
		return add_sub(c, op, a, b);
	return no_overload(c);
}

static cel_value_t in_op(cel_ctx_t *c, cel_value_t a, cel_value_t b)
{
	cel_value_t out;
	if (b.kind == CEL_LIST)
		return cel_bool(list_contains(c, b.l, a, NULL));
	if (b.kind == CEL_MAP) {
		if (cel_map_get(c, b.m, a, &out))
			return cel_bool(true);
		if (a.kind == CEL_DOUBLE && a.d == floor(a.d) && fabs(a.d) < 9.2e18)
			return cel_bool(cel_map_get(c, b.m, cel_int((int64_t)a.d), &out));
		return cel_bool(false);
	}
	return no_overload(c);
}

static cel_value_t relation(cel_ctx_t *c, int op, cel_value_t a, cel_value_t b)
{
	int cmp;
	if (cel_compare(a, b, &cmp) < 0) {
		bool nan =
		    (a.kind == CEL_DOUBLE && isnan(a.d)) || (b.kind == CEL_DOUBLE && isnan(b.d));
		if (nan && is_num(a) && is_num(b))
			return cel_bool(false);
		return no_overload(c);
	}
	switch (op) {
	case B_LT: return cel_bool(cmp < 0);
	case B_LE: return cel_bool(cmp <= 0);
	case B_GT: return cel_bool(cmp > 0);
	default: return cel_bool(cmp >= 0);
	}
}

static cel_value_t ev_bin(struct ev *e, const struct cel_node *n)
{
	cel_value_t a = ev(e, n->a);
	if (cel_is_error(a))
		return a;
	cel_value_t b = ev(e, n->b);
	if (cel_is_error(b))
		return b;
	switch (n->op) {
	case B_EQ: return cel_bool(cel_values_equal(e->c, a, b));
	case B_NE: return cel_bool(!cel_values_equal(e->c, a, b));
	case B_IN: return in_op(e->c, a, b);
	case B_LT:
	case B_LE:
	case B_GT:
	case B_GE: return relation(e->c, n->op, a, b);
	default: return arith(e->c, n->op, a, b);
	}
}

/* ---- calls ---- */

static bool is_no_overload(cel_value_t v)
{
	return v.kind == CEL_ERROR && v.s.len >= 16 && !memcmp(v.s.p, "no such overload", 16);
}

/* optional's or/orValue: the argument is evaluated only when needed. */
static bool lazy_optional(struct ev *e, const struct cel_node *n, cel_value_t *out)
{
	if (!n->a || n->nargs != 1 || (strcmp(n->name, "or") && strcmp(n->name, "orValue")))
		return false;
	cel_value_t t = ev(e, n->a);
	if (t.kind != CEL_OPTIONAL) {
		*out = cel_is_error(t) ? t : cel_no_overload(e->c, n->name);
		return true;
	}
	if (t.opt) {
		*out = n->name[2] ? *t.opt : t;
		return true;
	}
	*out = ev(e, n->args[0]);
	if (!n->name[2] && !cel_is_error(*out) && out->kind != CEL_OPTIONAL)
		*out = cel_no_overload(e->c, "or");
	return true;
}

/* kube's sum() of an empty list is the zero of the list's element type,
 * known here from the list's static type (int when unknown). */
static cel_value_t typed_zero(const struct cel_node *n, cel_value_t recv, cel_value_t r)
{
	if (strcmp(n->name, "sum") || !n->type || recv.kind != CEL_LIST ||
	    cel_list_size(recv.l) != 0)
		return r;
	if (!strcmp(n->type, "double"))
		return cel_double(0);
	if (!strcmp(n->type, "uint"))
		return cel_uint(0);
	if (!strcmp(n->type, "google.protobuf.Duration"))
		return (cel_value_t){.kind = CEL_DURATION, .i = 0};
	return r;
}

static cel_value_t ev_call(struct ev *e, const struct cel_node *n)
{
	cel_value_t r;
	if (lazy_optional(e, n, &r))
		return r;
	size_t na = n->nargs + (n->a ? 1 : 0);
	cel_value_t *args = cel_alloc(e->c, (na + 1) * sizeof(*args));
	size_t k = 0;
	if (n->a)
		args[k++] = ev(e, n->a);
	for (size_t i = 0; i < n->nargs; i++)
		args[k++] = ev(e, n->args[i]);
	for (size_t i = 0; i < na; i++)
		if (cel_is_error(args[i]))
			return args[i];
	r = cel_no_overload(e->c, n->name);
	for (const struct cel_func **f = n->funcs; f && *f; f++) {
		if ((*f)->nargs >= 0 && (size_t)(*f)->nargs != na)
			continue;
		r = (*f)->fn(e->c, args, na);
		if (!is_no_overload(r))
			return typed_zero(n, args[0], r);
	}
	return r;
}

/* ---- comprehensions ---- */

struct acc {
	cel_value_t *items, *keys;
	size_t n, cap;
	cel_value_t err;
	int64_t count;
	bool done;
	bool result;
};

static void push(cel_ctx_t *c, struct acc *a, cel_value_t k, cel_value_t v)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 8;
		cel_value_t *items = cel_alloc(c, cap * sizeof(*items));
		cel_value_t *keys = cel_alloc(c, cap * sizeof(*keys));
		if (a->n) {
			memcpy(items, a->items, a->n * sizeof(*items));
			memcpy(keys, a->keys, a->n * sizeof(*keys));
		}
		a->items = items;
		a->keys = keys;
		a->cap = cap;
	}
	a->keys[a->n] = k;
	a->items[a->n++] = v;
}

/* A predicate's value: 1 true, 0 false, -1 error (kept in a->err). */
static int predicate(struct ev *e, const struct cel_node *p, struct acc *a)
{
	cel_value_t v = ev(e, p);
	if (v.kind == CEL_BOOL)
		return v.b;
	if (!cel_is_error(v))
		v = no_overload(e->c);
	if (!cel_is_error(a->err))
		a->err = v;
	return -1;
}

static void step_entry(struct ev *e, const struct cel_node *n, struct acc *a, cel_value_t v1)
{
	cel_value_t m = ev(e, n->b);
	if (cel_is_error(m) || m.kind != CEL_MAP) {
		a->err = cel_is_error(m) ? m : cel_no_overload(e->c, "transformMapEntry");
		a->done = true;
		return;
	}
	(void)v1;
	for (size_t i = 0; i < m.m->n; i++) {
		cel_value_t k = cel_map_key_at(e->c, m.m, i), v;
		cel_map_get(e->c, m.m, k, &v);
		for (size_t j = 0; j < a->n; j++)
			if (cel_values_equal(e->c, a->keys[j], k)) {
				a->err = cel_errorf(e->c, "insert failed: key %s already exists",
						    cel_debug_string(e->c, k));
				a->done = true;
				return;
			}
		push(e->c, a, k, v);
	}
}

static void step(struct ev *e, const struct cel_node *n, struct acc *a, cel_value_t v1,
		 cel_value_t v2)
{
	int p;
	switch (n->op) {
	case M_ALL:
	case M_EXISTS:
		p = predicate(e, n->b, a);
		if (p == (n->op == M_EXISTS)) {
			a->result = p;
			a->done = true;
		}
		return;
	case M_EXISTS_ONE:
		p = predicate(e, n->b, a);
		a->count += p == 1;
		a->done = p < 0;
		return;
	default: break;
	}
	if (n->c || n->op == M_FILTER) {
		p = predicate(e, n->op == M_FILTER ? n->b : n->c, a);
		a->done = p < 0;
		if (p != 1)
			return;
	}
	if (n->op == M_FILTER) {
		push(e->c, a, v1, n->two ? v2 : v1);
		return;
	}
	if (n->op == M_TMAP_ENTRY) {
		step_entry(e, n, a, v1);
		return;
	}
	cel_value_t v = ev(e, n->b);
	if (cel_is_error(v)) {
		a->err = v;
		a->done = true;
		return;
	}
	push(e->c, a, v1, v);
}

static cel_value_t compr_result(struct ev *e, const struct cel_node *n, struct acc *a)
{
	switch (n->op) {
	case M_ALL:
	case M_EXISTS:
		if (a->done)
			return cel_bool(a->result);
		return cel_is_error(a->err) ? a->err : cel_bool(n->op == M_ALL);
	case M_EXISTS_ONE: return cel_is_error(a->err) ? a->err : cel_bool(a->count == 1);
	default: break;
	}
	if (cel_is_error(a->err))
		return a->err;
	if (n->op == M_TMAP || n->op == M_TMAP_ENTRY)
		return cel_map_new(e->c, a->keys, a->items, a->n);
	return cel_list_new(e->c, a->items, a->n);
}

/* optMap and optFlatMap: the transform of an optional's value. */
static cel_value_t ev_opt_map(struct ev *e, const struct cel_node *n, cel_value_t r)
{
	if (r.kind != CEL_OPTIONAL)
		return no_overload(e->c);
	if (!r.opt)
		return r;
	const struct frame *saved = e->fr;
	struct frame f = {saved, n->name, *r.opt};
	e->fr = &f;
	cel_value_t v = ev(e, n->b);
	e->fr = saved;
	if (cel_is_error(v) || n->op == M_OPT_FLAT_MAP)
		return v.kind == CEL_OPTIONAL || cel_is_error(v) ? v : no_overload(e->c);
	return cel_optional(e->c, &v);
}

static cel_value_t ev_compr(struct ev *e, const struct cel_node *n)
{
	cel_value_t r = ev(e, n->a);
	if (cel_is_error(r))
		return r;
	if (n->op == M_OPT_MAP || n->op == M_OPT_FLAT_MAP)
		return ev_opt_map(e, n, r);
	if (r.kind != CEL_LIST && r.kind != CEL_MAP)
		return cel_errorf(e->c, "no such overload: %s is not iterable", cel_type_name(r));
	size_t size = r.kind == CEL_LIST ? r.l->n : r.m->n;
	struct acc a = {.err = cel_null()};
	const struct frame *saved = e->fr;
	for (size_t i = 0; i < size && !a.done; i++) {
		if (!cel_cost(e->c, 1))
			break;
		cel_value_t v1, v2 = cel_null();
		if (r.kind == CEL_LIST) {
			v2 = cel_list_at(e->c, r.l, i);
			v1 = n->two ? cel_int((int64_t)i) : v2;
		} else {
			v1 = cel_map_key_at(e->c, r.m, i);
			if (n->two || n->op == M_TMAP || n->op == M_TMAP_ENTRY)
				cel_map_get(e->c, r.m, v1, &v2);
		}
		struct frame f1 = {saved, n->name, v1}, f2 = {&f1, n->name2, v2};
		e->fr = n->two ? &f2 : &f1;
		step(e, n, &a, v1, v2);
		e->fr = saved;
	}
	if (e->c->over)
		return cel_errorf(e->c, COST_MSG);
	return compr_result(e, n, &a);
}

static cel_value_t ev(struct ev *e, const struct cel_node *n)
{
	/* cel-go's costs, roughly: 1 a step, constants free, aggregates more */
	uint64_t cost = n->kind == N_CONST ? 0 : n->kind == N_LIST ? 10 : n->kind == N_MAP ? 30 : 1;
	if (e->c->over || !cel_cost(e->c, cost))
		return cel_errorf(e->c, COST_MSG);
	switch (n->kind) {
	case N_CONST: return n->val;
	case N_IDENT: return ev_ident(e, n);
	case N_SELECT: return ev_select(e, n);
	case N_INDEX: return ev_index(e, n);
	case N_CALL: return ev_call(e, n);
	case N_LIST: return ev_list(e, n);
	case N_MAP: return ev_map(e, n);
	case N_AND: return ev_logic(e, n, false);
	case N_OR: return ev_logic(e, n, true);
	case N_COND: return ev_cond(e, n);
	case N_NOT:
	case N_NEG: return ev_unary(e, n);
	case N_BIN: return ev_bin(e, n);
	case N_COMPR: return ev_compr(e, n);
	}
	return cel_errorf(e->c, "unknown expression");
}

enum cel_outcome cel_eval(const cel_program_t *p, cel_ctx_t *c, cel_value_t *out, const char **msg,
			  uint64_t *cost)
{
	uint64_t before = c->cost;
	struct cel_re_scope saved;
	cel_re_enter(p->regexes, &saved);
	struct ev e = {.c = c};
	cel_value_t v = ev(&e, p->root);
	cel_re_leave(&saved);
	if (cost)
		*cost = c->cost - before;
	*out = v;
	*msg = NULL;
	if (c->over) {
		*msg = COST_MSG;
		return CEL_COST;
	}
	if (cel_is_error(v)) {
		*msg = cel_strndup(c, v.s.p, v.s.len);
		return CEL_EVAL_ERROR;
	}
	return CEL_OK;
}

static int eval_kind(const cel_program_t *p, cel_ctx_t *c, enum cel_kind k, cel_value_t *v,
		     const char **msg)
{
	if (cel_eval(p, c, v, msg, NULL) != CEL_OK)
		return -EIO;
	if (v->kind != k) {
		char buf[128];
		snprintf(buf, sizeof(buf), "expected %s, got %s", k == CEL_BOOL ? "bool" : "string",
			 cel_type_name(*v));
		*msg = cel_strndup(c, buf, strlen(buf));
		return -EINVAL;
	}
	return 0;
}

int cel_eval_bool(const cel_program_t *p, cel_ctx_t *c, bool *out, const char **msg)
{
	cel_value_t v;
	int rc = eval_kind(p, c, CEL_BOOL, &v, msg);
	if (rc == 0)
		*out = v.b;
	return rc;
}

int cel_eval_string(const cel_program_t *p, cel_ctx_t *c, const char **out, const char **msg)
{
	cel_value_t v;
	int rc = eval_kind(p, c, CEL_STRING, &v, msg);
	if (rc == 0)
		*out = cel_strndup(c, v.s.p, v.s.len);
	return rc;
}

/* ---- conversions out ---- */

static json_t *list_to_json(cel_value_t v)
{
	if (v.l->json)
		return json_deep_copy(v.l->json);
	json_t *a = json_array();
	for (size_t i = 0; i < v.l->n; i++) {
		json_t *item = cel_to_json(v.l->items[i]);
		if (!item) {
			json_decref(a);
			return NULL;
		}
		json_array_append_new(a, item);
	}
	return a;
}

static json_t *map_to_json(cel_value_t v)
{
	if (v.m->json)
		return json_deep_copy(v.m->json);
	json_t *o = json_object();
	for (size_t i = 0; i < v.m->n; i++) {
		cel_value_t k = v.m->keys[i];
		char buf[32];
		const char *key = buf;
		size_t klen;
		if (k.kind == CEL_STRING) {
			key = k.s.p;
			klen = k.s.len;
		} else if (k.kind == CEL_INT) {
			klen = (size_t)snprintf(buf, sizeof(buf), "%lld", (long long)k.i);
		} else if (k.kind == CEL_UINT) {
			klen = (size_t)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)k.u);
		} else {
			klen = (size_t)snprintf(buf, sizeof(buf), "%s", k.b ? "true" : "false");
		}
		json_t *val = cel_to_json(v.m->vals[i]);
		if (!val) {
			json_decref(o);
			return NULL;
		}
		json_object_setn_new(o, key, klen, val);
	}
	return o;
}

json_t *cel_to_json(cel_value_t v)
{
	char *b64;
	json_t *j;
	cel_ctx_t *tmp;
	switch (v.kind) {
	case CEL_NULL: return json_null();
	case CEL_BOOL: return json_boolean(v.b);
	case CEL_INT: return json_integer(v.i);
	case CEL_UINT:
		return v.u <= INT64_MAX ? json_integer((json_int_t)v.u) : json_real((double)v.u);
	case CEL_DOUBLE: return json_real(v.d);
	case CEL_STRING: return json_stringn(v.s.p, v.s.len);
	case CEL_BYTES:
		b64 = malloc(v.s.len / 3 * 4 + 8);
		KB_REQUIRE(b64 != NULL);
		j = json_stringn(b64, cel_base64_encode(v.s.p, v.s.len, b64));
		free(b64);
		return j;
	case CEL_LIST: return list_to_json(v);
	case CEL_MAP: return map_to_json(v);
	case CEL_DURATION:
	case CEL_TIMESTAMP:
		tmp = cel_ctx_new(0);
		j = json_string(v.kind == CEL_DURATION ? cel_format_duration(tmp, v.i)
						       : cel_format_timestamp(tmp, v.i));
		cel_ctx_free(tmp);
		return j;
	case CEL_OPTIONAL: return v.opt ? cel_to_json(*v.opt) : json_null();
	default: return NULL;
	}
}

const char *cel_debug_string(cel_ctx_t *c, cel_value_t v)
{
	size_t len;
	const char *s = cel_scalar_string(c, v, &len);
	if (s)
		return s;
	if (v.kind == CEL_ERROR)
		return cel_strndup(c, v.s.p, v.s.len);
	if (v.kind == CEL_NULL)
		return "null";
	json_t *j = cel_to_json(v);
	if (!j)
		return cel_type_name(v);
	char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(j);
	const char *out = text ? cel_strndup(c, text, strlen(text)) : cel_type_name(v);
	free(text);
	return out;
}
