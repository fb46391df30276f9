/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Structural openAPIV3Schema checks of custom objects (see proxy/validation/crd_validate.h):
 * pruning of unknown fields, defaulting and validation with kube's field
 * paths and messages, plus the structural check of a CRD's schema and
 * kube's version priority order.
 */
#include "proxy/validation/crd_validate.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/cel/cel.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/validation/validate.h"

#define PATHLEN 512

static bool flag(const json_t *s, const char *key)
{
	return json_is_true(json_object_get(s, key));
}

static const char *stype(const json_t *s)
{
	const char *t = json_string_value(json_object_get(s, "type"));
	return t ? t : "";
}

/* "spec" + "x" → "spec.x"; "" + "x" → "x". */
static void child(char *out, const char *path, const char *key)
{
	snprintf(out, PATHLEN, "%s%s%s", path, *path ? "." : "", key);
}

static void elem(char *out, const char *path, size_t i)
{
	snprintf(out, PATHLEN, "%s[%zu]", path, i);
}

static void mapkey(char *out, const char *path, const char *key)
{
	snprintf(out, PATHLEN, "%s[%s]", path, key);
}

/* ---- pruning ----------------------------------------------------------------- */

static int prune_node(const json_t *s, json_t *v, const char *path, json_t *paths, bool keep_meta);

static int prune_object(const json_t *s, json_t *v, const char *path, json_t *paths, bool keep_meta)
{
	const json_t *props = json_object_get(s, "properties");
	const json_t *addl = json_object_get(s, "additionalProperties");
	bool preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
	bool embedded = flag(s, "x-kubernetes-embedded-resource");
	const char *k;
	json_t *x;
	void *tmp;
	int n = 0;
	char p[PATHLEN];

	json_object_foreach_safe (v, tmp, k, x) {
		const json_t *ps = json_object_get(props, k);
		if ((keep_meta || embedded) &&
		    (strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0 ||
		     strcmp(k, "metadata") == 0))
			continue;
		if (ps) {
			child(p, path, k);
			n += prune_node(ps, x, p, paths, false);
		} else if (json_is_object(addl)) {
			mapkey(p, path, k);
			n += prune_node(addl, x, p, paths, false);
		} else if (!preserve && !json_is_true(addl)) {
			if (paths) {
				child(p, path, k);
				json_array_append_new(paths, json_string(p));
			}
			json_object_del(v, k);
			n++;
		}
	}
	return n;
}

static int prune_node(const json_t *s, json_t *v, const char *path, json_t *paths, bool keep_meta)
{
	if (!json_is_object(s))
		return 0;
	if (json_is_object(v) && !flag(s, "x-kubernetes-int-or-string"))
		return prune_object(s, v, path, paths, keep_meta);
	if (json_is_array(v) && json_is_object(json_object_get(s, "items"))) {
		int n = 0;
		size_t i;
		json_t *x;
		char p[PATHLEN];
		json_array_foreach (v, i, x) {
			elem(p, path, i);
			n += prune_node(json_object_get(s, "items"), x, p, paths, false);
		}
		return n;
	}
	return 0;
}

int crd_schema_prune(const json_t *schema, json_t *obj, json_t *paths)
{
	if (!json_is_object(schema) || !json_is_object(obj))
		return 0;
	return prune_node(schema, obj, "", paths, true);
}

/* ---- defaulting ------------------------------------------------------------- */

static void default_node(const json_t *s, json_t *v);

static void default_fields(const json_t *s, json_t *v)
{
	const json_t *props = json_object_get(s, "properties");
	const char *k;
	json_t *ps, *x;
	void *tmp;

	json_object_foreach ((json_t *)props, k, ps) {
		x = json_object_get(v, k);
		if (json_is_null(x) && !flag(ps, "nullable")) {
			json_object_del(v, k);
			x = NULL;
		}
		if (!x && json_object_get(ps, "default"))
			json_object_set_new(v, k, json_deep_copy(json_object_get(ps, "default")));
	}
	const json_t *addl = json_object_get(s, "additionalProperties");
	json_object_foreach_safe (v, tmp, k, x) {
		ps = json_object_get(props, k);
		if (!ps && json_is_object(addl))
			ps = (json_t *)addl;
		if (ps)
			default_node(ps, x);
	}
}

static void default_node(const json_t *s, json_t *v)
{
	if (!json_is_object(s))
		return;
	if (json_is_object(v)) {
		default_fields(s, v);
	} else if (json_is_array(v)) {
		const json_t *items = json_object_get(s, "items");
		size_t i;
		json_t *x;
		if (json_is_object(items))
			json_array_foreach (v, i, x)
				default_node(items, x);
	}
}

void crd_schema_default(const json_t *schema, json_t *obj)
{
	default_node(schema, obj);
}

/* ---- validation -------------------------------------------------------------- */

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

/* The value as Go's %#v shows it in "Invalid value: ..." (strings quoted). */
static char *show(const json_t *v)
{
	if (json_is_object(v) || json_is_array(v))
		return strdup(json_is_object(v) ? "\"object\"" : "\"array\"");
	return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

static bool is_integral(const json_t *v)
{
	if (json_is_integer(v))
		return true;
	if (!json_is_real(v))
		return false;
	double d = json_real_value(v);
	return isfinite(d) && d == floor(d);
}

static bool type_ok(const char *t, const json_t *v)
{
	if (!*t)
		return true;
	if (strcmp(t, "object") == 0)
		return json_is_object(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "integer") == 0)
		return is_integral(v);
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	return true;
}

static void add_type_error(json_t *causes, const char *path, const char *want, const json_t *v)
{
	const char *got = json_type_name(v);
	val_add(causes, "FieldValueInvalid", path, "\"%s\": %s in body must be of type %s: \"%s\"",
		got, path, want, got);
	/* kube's TypeInvalid: "Invalid value" text, its own reason */
	json_object_set_new(json_array_get(causes, json_array_size(causes) - 1), "reason",
			    json_string("FieldValueTypeInvalid"));
}

static void add_invalid(json_t *causes, const char *path, const json_t *v, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_invalid(json_t *causes, const char *path, const json_t *v, const char *fmt, ...)
{
	char detail[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	char *sv = show(v);
	val_add(causes, "FieldValueInvalid", path, "%s: %s", sv ? sv : "null", detail);
	free(sv);
}

static void check_enum(const json_t *s, const json_t *v, const char *path, json_t *causes)
{
	const json_t *en = json_object_get(s, "enum");
	size_t i;
	json_t *e;
	if (!json_is_array(en))
		return;
	json_array_foreach (en, i, e)
		if (json_equal(e, v) || (json_is_number(e) && json_is_number(v) &&
					 json_number_value(e) == json_number_value(v)))
			return;
	struct kb_buf b = {0};
	json_array_foreach (en, i, e) {
		char *d = json_dumps(e, JSON_ENCODE_ANY | JSON_COMPACT);
		kb_buf_printf(&b, "%s%s", i ? ", " : "", d ? d : "");
		free(d);
	}
	char *sv = show(v);
	val_add(causes, "FieldValueNotSupported", path, "%s: supported values: %s", sv ? sv : "",
		b.data ? b.data : "");
	free(sv);
	kb_buf_free(&b);
}

static void fmt_num(char *buf, size_t len, const json_t *n)
{
	if (json_is_integer(n))
		snprintf(buf, len, "%lld", (long long)json_integer_value(n));
	else
		snprintf(buf, len, "%g", json_number_value(n));
}

static void check_number(const json_t *s, const json_t *v, const char *path, json_t *causes)
{
	double d = json_number_value(v);
	const json_t *min = json_object_get(s, "minimum"), *max = json_object_get(s, "maximum");
	const json_t *mul = json_object_get(s, "multipleOf");
	char b[64];
	if (json_is_number(min)) {
		bool ex = flag(s, "exclusiveMinimum");
		fmt_num(b, sizeof(b), min);
		if (ex ? d <= json_number_value(min) : d < json_number_value(min))
			add_invalid(causes, path, v, "%s in body should be greater than %s%s", path,
				    ex ? "" : "or equal to ", b);
	}
	if (json_is_number(max)) {
		bool ex = flag(s, "exclusiveMaximum");
		fmt_num(b, sizeof(b), max);
		if (ex ? d >= json_number_value(max) : d > json_number_value(max))
			add_invalid(causes, path, v, "%s in body should be less than %s%s", path,
				    ex ? "" : "or equal to ", b);
	}
	if (json_is_number(mul) && json_number_value(mul) > 0) {
		double q = d / json_number_value(mul);
		fmt_num(b, sizeof(b), mul);
		if (fabs(q - round(q)) > 1e-9)
			add_invalid(causes, path, v, "%s in body should be a multiple of %s", path,
				    b);
	}
}

static size_t utf8_len(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

bool crd_schema_pattern_match(const char *pattern, const char *str)
{
	char *err = NULL;
	int rc = cel_regex_search(pattern, str, &err);
	free(err);
	return rc != 0; /* a pattern that cannot run is not held against the value */
}

static void check_string(const json_t *s, const json_t *v, const char *path, json_t *causes)
{
	const char *str = json_string_value(v);
	size_t n = utf8_len(str);
	const json_t *minl = json_object_get(s, "minLength"),
		     *maxl = json_object_get(s, "maxLength");
	const char *pat = json_string_value(json_object_get(s, "pattern"));
	if (json_is_integer(minl) && (json_int_t)n < json_integer_value(minl))
		add_invalid(causes, path, v, "%s in body should be at least %lld chars long", path,
			    (long long)json_integer_value(minl));
	if (json_is_integer(maxl) && (json_int_t)n > json_integer_value(maxl))
		val_add(causes, "FieldValueTooLong", path, "may not be more than %lld bytes",
			(long long)json_integer_value(maxl));
	if (pat && !crd_schema_pattern_match(pat, str))
		add_invalid(causes, path, v, "%s in body should match '%s'", path, pat);
	const char *fmt = json_string_value(json_object_get(s, "format"));
	const char *t = stype(s);
	if (fmt && (!*t || strcmp(t, "string") == 0) && !crd_format_valid(fmt, str)) {
		char *sv = show(v);
		add_invalid(causes, path, v, "%s in body must be of type %s: %s", path, fmt,
			    sv ? sv : "");
		free(sv);
		json_object_set_new(json_array_get(causes, json_array_size(causes) - 1), "reason",
				    json_string("FieldValueTypeInvalid"));
	}
}

static void validate_node(const json_t *s, const json_t *v, const json_t *old, const char *path,
			  json_t *causes, bool root);

static json_t *map_key(const json_t *keys, const json_t *x);

/* The old item that v's item x correlates with (kube's ratcheting): by its
 * keys in a map list, by its value in a set; none in an atomic list. */
static const json_t *old_item(const json_t *s, const json_t *old, const json_t *x)
{
	const char *lt = json_string_value(json_object_get(s, "x-kubernetes-list-type"));
	const json_t *keys = json_object_get(s, "x-kubernetes-list-map-keys");
	size_t i;
	json_t *o;
	if (!json_is_array(old) || !lt || !strcmp(lt, "atomic"))
		return NULL;
	if (!strcmp(lt, "set")) {
		json_array_foreach (old, i, o)
			if (json_equal(o, x))
				return o;
		return NULL;
	}
	if (strcmp(lt, "map") != 0 || !json_is_object(x))
		return NULL;
	json_t *want = map_key(keys, x), *got;
	const json_t *found = NULL;
	json_array_foreach (old, i, o) {
		got = map_key(keys, o);
		if (json_is_object(o) && json_equal(got, want))
			found = o;
		json_decref(got);
		if (found)
			break;
	}
	json_decref(want);
	return found;
}

static void check_array(const json_t *s, const json_t *v, const json_t *old, const char *path,
			json_t *causes)
{
	size_t n = json_array_size(v), i, k;
	const json_t *mi = json_object_get(s, "minItems"), *ma = json_object_get(s, "maxItems");
	json_t *x;
	char p[PATHLEN];
	if (json_is_integer(mi) && (json_int_t)n < json_integer_value(mi)) {
		json_t *cnt = json_integer((json_int_t)n);
		add_invalid(causes, path, cnt, "%s in body should have at least %lld items", path,
			    (long long)json_integer_value(mi));
		json_decref(cnt);
	}
	if (json_is_integer(ma) && (json_int_t)n > json_integer_value(ma))
		val_add(causes, "FieldValueTooMany", path, "%zu: must have at most %lld items", n,
			(long long)json_integer_value(ma));
	if (flag(s, "uniqueItems")) {
		for (i = 0; i < n; i++)
			for (k = i + 1; k < n; k++)
				if (json_equal(json_array_get(v, i), json_array_get(v, k))) {
					elem(p, path, k);
					char *sv = json_dumps(json_array_get(v, k),
							      JSON_ENCODE_ANY | JSON_COMPACT);
					val_add(causes, "FieldValueDuplicate", p, "%s",
						sv ? sv : "");
					free(sv);
					i = k = n;
				}
	}
	json_array_foreach (v, i, x) {
		elem(p, path, i);
		validate_node(json_object_get(s, "items"), x, old_item(s, old, x), p, causes,
			      false);
	}
}

static void check_embedded(const json_t *v, const char *path, json_t *causes)
{
	char p[PATHLEN];
	const char *req[] = {"apiVersion", "kind"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(req); i++) {
		const char *s = json_string_value(json_object_get(v, req[i]));
		if (!s || !*s) {
			child(p, path, req[i]);
			val_add(causes, "FieldValueRequired", p, "must not be empty");
		}
	}
	const json_t *m = json_object_get(v, "metadata");
	const char *name = json_string_value(json_object_get(m, "name"));
	if (name && *name && names_dns1123_subdomain(name)) {
		child(p, path, "metadata.name");
		val_add(causes, "FieldValueInvalid", p, "\"%s\": %s", name,
			names_dns1123_subdomain(name));
	}
}

static void check_object(const json_t *s, const json_t *v, const json_t *old, const char *path,
			 json_t *causes, bool root)
{
	const json_t *props = json_object_get(s, "properties");
	const json_t *addl = json_object_get(s, "additionalProperties");
	const json_t *req = json_object_get(s, "required");
	const json_t *mi = json_object_get(s, "minProperties");
	const json_t *ma = json_object_get(s, "maxProperties");
	char p[PATHLEN];
	size_t i;
	const char *k;
	json_t *x;

	json_array_foreach (req, i, x) {
		const char *name = json_string_value(x);
		if (name && !json_object_get(v, name) && !(root && strcmp(name, "metadata") == 0)) {
			child(p, path, name);
			val_add(causes, "FieldValueRequired", p, NULL);
		}
	}
	if (json_is_integer(mi) && (json_int_t)json_object_size(v) < json_integer_value(mi))
		val_add(causes, "FieldValueInvalid", path,
			"%s in body should have at least %lld properties", path,
			(long long)json_integer_value(mi));
	if (json_is_integer(ma) && (json_int_t)json_object_size(v) > json_integer_value(ma))
		val_add(causes, "FieldValueTooMany", path, "%zu: must have at most %lld items",
			json_object_size(v), (long long)json_integer_value(ma));
	if (flag(s, "x-kubernetes-embedded-resource"))
		check_embedded(v, path, causes);
	json_object_foreach ((json_t *)v, k, x) {
		if (root && (strcmp(k, "metadata") == 0 || strcmp(k, "apiVersion") == 0 ||
			     strcmp(k, "kind") == 0))
			continue;
		const json_t *ps = json_object_get(props, k);
		if (ps) {
			child(p, path, k);
			validate_node(ps, x, json_object_get(old, k), p, causes, false);
		} else if (json_is_object(addl)) {
			/* kube-openapi's objectValidator names a map's value
			 * path + "." + key ("spec.nodes.Master"), unlike the
			 * field paths of built-in kinds ("[Master]") */
			child(p, path, k);
			validate_node(addl, x, json_object_get(old, k), p, causes, false);
		}
	}
}

/* A composite failure: kube passes these on without a field of their own,
 * so the cause is at <nil>, with the node's path quoted in the text. */
static void add_composite(json_t *causes, const char *path, const char *what)
{
	val_add(causes, "FieldValueInvalid", "<nil>", "\"\": \"%s\" %s", path, what);
}

/* The causes v has against branch schema b (a new array, owned). */
static json_t *branch_causes(const json_t *b, const json_t *v, const char *path)
{
	json_t *tmp = json_array();
	validate_node(b, v, NULL, path, tmp, false);
	return tmp;
}

static void extend(json_t *causes, json_t *more)
{
	if (more)
		json_array_extend(causes, more);
}

/* oneOf and anyOf: how many branches v validates, the causes of the first
 * that it does not (kube's go-openapi keeps those of its best failure). */
static size_t count_valid(const json_t *list, const json_t *v, const char *path, json_t **first)
{
	size_t i, ok = 0;
	json_t *b;
	*first = NULL;
	json_array_foreach (list, i, b) {
		json_t *c = branch_causes(b, v, path);
		if (!json_array_size(c)) {
			ok++;
			json_decref(c);
		} else if (!*first) {
			*first = c;
		} else {
			json_decref(c);
		}
	}
	return ok;
}

/* allOf, oneOf, anyOf and not: value validations in branches (a structural
 * schema keeps its types outside them), with go-openapi's texts. */
static void check_composites(const json_t *s, const json_t *v, const char *path, json_t *causes)
{
	const json_t *all = json_object_get(s, "allOf"), *one = json_object_get(s, "oneOf");
	const json_t *any = json_object_get(s, "anyOf"), *not = json_object_get(s, "not");
	json_t *first, *b;
	size_t i, n;
	if (json_array_size(all)) {
		json_t *errs = json_array();
		n = 0;
		json_array_foreach (all, i, b) {
			json_t *c = branch_causes(b, v, path);
			n += json_array_size(c) == 0;
			extend(errs, c);
			json_decref(c);
		}
		if (n != json_array_size(all))
			add_composite(causes, path,
				      n ? "must validate all the schemas (allOf)"
					: "must validate all the schemas (allOf). None validated");
		extend(causes, errs);
		json_decref(errs);
	}
	if (json_array_size(one)) {
		n = count_valid(one, v, path, &first);
		if (n != 1) {
			char m[128];
			if (n)
				snprintf(m, sizeof(m),
					 "must validate one and only one schema (oneOf). Found %zu "
					 "valid alternatives",
					 n);
			else
				snprintf(m, sizeof(m),
					 "must validate one and only one schema "
					 "(oneOf). Found none valid");
			add_composite(causes, path, m);
			if (!n)
				extend(causes, first);
		}
		json_decref(first);
	}
	if (json_array_size(any)) {
		n = count_valid(any, v, path, &first);
		if (!n) {
			add_composite(causes, path, "must validate at least one schema (anyOf)");
			extend(causes, first);
		}
		json_decref(first);
	}
	if (json_is_object(not )) {
		json_t *c = branch_causes(not, v, path);
		if (!json_array_size(c))
			add_composite(causes, path, "must not validate the schema (not)");
		json_decref(c);
	}
}

static void validate_node(const json_t *s, const json_t *v, const json_t *old, const char *path,
			  json_t *causes, bool root)
{
	if (!json_is_object(s))
		return;
	/* kube's ratcheting (CRDValidationRatcheting): a value equal to the
	 * one it correlates with in the old object keeps its errors to itself */
	if (old && json_equal(old, v))
		return;
	if (json_is_null(v)) {
		if (!flag(s, "nullable") && *stype(s))
			add_type_error(causes, path, stype(s), v);
		return;
	}
	if (flag(s, "x-kubernetes-int-or-string")) {
		/* kube types it [integer, string]; the value validations of the
		 * schema apply by the value's kind (a quantity's pattern) */
		if (!is_integral(v) && !json_is_string(v)) {
			add_type_error(causes, path, "integer,string", v);
			return;
		}
		check_enum(s, v, path, causes);
		if (json_is_string(v))
			check_string(s, v, path, causes);
		else
			check_number(s, v, path, causes);
		return;
	}
	if (!type_ok(stype(s), v)) {
		add_type_error(causes, path, stype(s), v);
		return;
	}
	check_composites(s, v, path, causes);
	check_enum(s, v, path, causes);
	if (json_is_number(v))
		check_number(s, v, path, causes);
	else if (json_is_string(v))
		check_string(s, v, path, causes);
	else if (json_is_array(v))
		check_array(s, v, old, path, causes);
	else if (json_is_object(v))
		check_object(s, v, old, path, causes, root);
}

/* ---- list-type set and map uniqueness ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* v as Go's %#v prints the unstructured value (field.Duplicate's body). */
static void go_value(struct kb_buf *b, const json_t *v)
{
	size_t i;
	const char *k;
	json_t *x;
	if (json_is_string(v)) {
		char *q = json_dumps(v, JSON_ENCODE_ANY);
		kb_buf_puts(b, q ? q : "\"\"");
		free(q);
	} else if (json_is_array(v)) {
		kb_buf_puts(b, "[]interface {}{");
		json_array_foreach (v, i, x) {
			kb_buf_puts(b, i ? ", " : "");
			go_value(b, x);
		}
		kb_buf_puts(b, "}");
	} else if (json_is_object(v)) {
		/* Go prints a map's keys sorted */
		json_t *keys = json_array();
		json_object_foreach ((json_t *)v, k, x)
			json_array_append_new(keys, json_string(k));
		size_t n = json_array_size(keys);
		const char **ks = calloc(n ? n : 1, sizeof(*ks));
		KB_REQUIRE(ks);
		for (i = 0; i < n; i++)
			ks[i] = json_string_value(json_array_get(keys, i));
		qsort(ks, n, sizeof(*ks), cmp_str);
		kb_buf_puts(b, "map[string]interface {}{");
		for (i = 0; i < n; i++) {
			kb_buf_printf(b, "%s\"%s\":", i ? ", " : "", ks[i]);
			go_value(b, json_object_get(v, ks[i]));
		}
		kb_buf_puts(b, "}");
		free(ks);
		json_decref(keys);
	} else if (json_is_null(v)) {
		kb_buf_puts(b, "interface {}(nil)");
	} else {
		char *t = json_dumps(v, JSON_ENCODE_ANY);
		kb_buf_puts(b, t ? t : "");
		free(t);
	}
}

static void duplicate(json_t *causes, const char *path, size_t i, const json_t *v)
{
	char p[PATHLEN];
	struct kb_buf b = {0};
	elem(p, path, i);
	if (json_is_string(v) || json_is_number(v) || json_is_boolean(v)) {
		/* a scalar is printed plainly (a string %q) */
		char *t = json_dumps(v, JSON_ENCODE_ANY);
		kb_buf_puts(&b, t ? t : "");
		free(t);
	} else {
		go_value(&b, v);
	}
	val_add(causes, "FieldValueDuplicate", p, "%s", b.data ? b.data : "");
	free(b.data);
}

/* The key of map-list item x: its key fields (all that are set). New
 * reference. */
static json_t *map_key(const json_t *keys, const json_t *x)
{
	json_t *k = json_object();
	size_t i;
	json_t *f;
	json_array_foreach (keys, i, f) {
		json_t *v = json_object_get(x, json_string_value(f));
		if (v)
			json_object_set(k, json_string_value(f), v);
	}
	return k;
}

/* kube's validateListSet and validateListMap: the second appearance of an
 * element (a set) or of a key (a map) is a Duplicate, once per value. */
static void unique_items(const json_t *s, const json_t *v, const char *path, json_t *causes)
{
	const char *lt = json_string_value(json_object_get(s, "x-kubernetes-list-type"));
	const json_t *keys = json_object_get(s, "x-kubernetes-list-map-keys");
	bool map = lt && !strcmp(lt, "map");
	size_t n = json_array_size(v);
	if (!lt || (strcmp(lt, "set") && !map) || n < 2)
		return;
	json_t *ks = json_array();
	for (size_t i = 0; i < n; i++) {
		const json_t *x = json_array_get(v, i);
		if (map && !json_is_object(x) && !json_is_null(x)) {
			json_decref(ks);
			return; /* refused as not an object already */
		}
		json_array_append_new(ks, map ? map_key(keys, x) : json_incref((json_t *)x));
	}
	for (size_t i = 1; i < n; i++) {
		size_t seen = 0;
		for (size_t j = 0; j < i; j++)
			seen += json_equal(json_array_get(ks, i), json_array_get(ks, j));
		if (seen != 1)
			continue;
		duplicate(causes, path, i, json_array_get(ks, i)); /* a map's {key: value} */
	}
	json_decref(ks);
}

static void list_types(const json_t *s, const json_t *v, const char *path, json_t *causes,
		       int depth)
{
	char p[PATHLEN];
	size_t i;
	const char *k;
	json_t *x;
	if (!json_is_object(s) || depth > 64)
		return;
	if (json_is_array(v)) {
		unique_items(s, v, path, causes);
		json_array_foreach (v, i, x) {
			elem(p, path, i);
			list_types(json_object_get(s, "items"), x, p, causes, depth + 1);
		}
	} else if (json_is_object(v)) {
		const json_t *props = json_object_get(s, "properties");
		const json_t *addl = json_object_get(s, "additionalProperties");
		json_object_foreach ((json_t *)v, k, x) {
			if (json_is_object(json_object_get(props, k))) {
				child(p, path, k);
				list_types(json_object_get(props, k), x, p, causes, depth + 1);
			} else if (json_is_object(addl)) {
				snprintf(p, sizeof(p), "%s[%s]", path, k);
				list_types(addl, x, p, causes, depth + 1);
			}
		}
	}
}

int crd_schema_validate(const json_t *schema, const json_t *obj, json_t *causes)
{
	return crd_schema_validate_update(schema, obj, NULL, causes);
}

int crd_schema_validate_update(const json_t *schema, const json_t *obj, const json_t *old,
			       json_t *causes)
{
	size_t before = json_array_size(causes);
	validate_node(schema, obj, old, "", causes, true);
	return (int)(json_array_size(causes) - before);
}

int crd_schema_list_types(const json_t *schema, const json_t *obj, json_t *causes)
{
	size_t before = json_array_size(causes);
	list_types(schema, obj, "", causes, 0);
	return (int)(json_array_size(causes) - before);
}

/* ---- defaults at CRD write ---------------------------------------------------------- */

/* The causes of checking a default (fields relative to it) under path. */
static void rebase(json_t *from, const char *path, json_t *causes)
{
	size_t i;
	json_t *c;
	char p[PATHLEN];
	json_array_foreach (from, i, c) {
		const char *f = json_string_value(json_object_get(c, "field"));
		if (snprintf(p, sizeof(p), "%s%s%s", path, f && *f && *f != '[' ? "." : "",
			     f ? f : "") >= (int)sizeof(p))
			p[sizeof(p) - 1] = '\0';
		json_object_set_new(c, "field", json_string(p));
		json_array_append(causes, c);
	}
}

/* kube's ValidateDefaults and its validate step (apiextensions-apiserver
 * pkg/apiserver/schema/defaulting/validation.go): every default, pruned
 * by its own schema, must equal itself ("must not have unknown fields"),
 * and must pass the schema's value validation, at <path>.default (the
 * messages name the place inside the default), then its CEL rules
 * (crd_rules_check_default). Follows properties and
 * items, not additionalProperties (defaults are forbidden there); the
 * apiVersion, kind and metadata of a resource root are metadata, checked
 * by kube's object-meta rules, not here. */
static void defaults_node(const json_t *s, const char *path, bool resource, unsigned relax,
			  json_t *causes, int depth)
{
	char p[PATHLEN];
	const char *k;
	json_t *x;
	if (!json_is_object(s) || depth > 64)
		return;
	bool embedded = resource || flag(s, "x-kubernetes-embedded-resource");
	const json_t *def = json_object_get(s, "default");
	if (def) {
		child(p, path, "default");
		json_t *pruned = json_deep_copy(def), *scratch = json_array();
		if (prune_node(s, pruned, "", NULL, embedded) > 0 && !(relax & CRD_LAX_PRUNED)) {
			struct kb_buf b = {0};
			go_value(&b, def);
			val_add(causes, "FieldValueInvalid", p, "%s: must not have unknown fields",
				b.data ? b.data : "");
			kb_buf_free(&b);
		}
		validate_node(s, def, NULL, "", scratch, embedded);
		if (json_array_size(scratch) == 0)
			crd_rules_check_default(s, def, embedded, p, causes);
		rebase(scratch, p, causes);
		json_decref(scratch);
		json_decref(pruned);
	}
	child(p, path, "items");
	defaults_node(json_object_get(s, "items"), p, false, relax, causes, depth + 1);
	json_object_foreach ((json_t *)json_object_get(s, "properties"), k, x) {
		if (embedded &&
		    (!strcmp(k, "apiVersion") || !strcmp(k, "kind") || !strcmp(k, "metadata")))
			continue;
		snprintf(p, sizeof(p), "%s.properties[%s]", path, k);
		defaults_node(x, p, false, relax, causes, depth + 1);
	}
}

int crd_schema_check_defaults(const json_t *schema, const char *path, unsigned relax,
			      json_t *causes)
{
	size_t before = json_array_size(causes);
	defaults_node(schema, path, true, relax, causes, 0);
	return (int)(json_array_size(causes) - before);
}

/* Whether a default of s is not pruned to itself (kube's
 * requirePrunedDefaults is off for an update of such a CRD). */
static bool unpruned_default(const json_t *s, bool resource, int depth)
{
	const char *k;
	json_t *x;
	if (!json_is_object(s) || depth > 64)
		return false;
	bool embedded = resource || flag(s, "x-kubernetes-embedded-resource");
	const json_t *def = json_object_get(s, "default");
	if (def) {
		json_t *pruned = json_deep_copy(def);
		int n = prune_node(s, pruned, "", NULL, embedded);
		json_decref(pruned);
		if (n > 0)
			return true;
	}
	if (unpruned_default(json_object_get(s, "items"), false, depth + 1))
		return true;
	json_object_foreach ((json_t *)json_object_get(s, "properties"), k, x)
		if (unpruned_default(x, false, depth + 1))
			return true;
	return false;
}

/* ---- structural schemas -------------------------------------------------------- */

static const char *const types[] = {"array", "boolean", "integer", "number", "object", "string"};

static void structural_node(const json_t *s, const char *path, json_t *causes, int depth);

static void structural_children(const json_t *s, const char *path, json_t *causes, int depth)
{
	const json_t *props = json_object_get(s, "properties");
	const json_t *addl = json_object_get(s, "additionalProperties");
	const json_t *items = json_object_get(s, "items");
	const char *k;
	json_t *x;
	char p[PATHLEN];

	json_object_foreach ((json_t *)props, k, x) {
		snprintf(p, sizeof(p), "%s.properties[%s]", path, k);
		structural_node(x, p, causes, depth + 1);
	}
	if (json_object_size(props) && addl && !json_is_false(addl)) {
		child(p, path, "additionalProperties");
		val_add(causes, "FieldValueForbidden", p,
			"additionalProperties and properties are mutual exclusive");
	}
	if (json_is_object(addl)) {
		child(p, path, "additionalProperties");
		structural_node(addl, p, causes, depth + 1);
	}
	if (json_is_object(items)) {
		child(p, path, "items");
		structural_node(items, p, causes, depth + 1);
	} else if (strcmp(stype(s), "array") == 0) {
		child(p, path, "items");
		val_add(causes, "FieldValueRequired", p, "must be specified");
	}
}

/* int-or-string's own anyOf ([{type: integer}, {type: string}]), bare or in
 * an allOf, which kube lets a structural schema keep. */
static bool int_or_string_anyof(const json_t *any)
{
	return json_array_size(any) == 2 && !strcmp(stype(json_array_get(any, 0)), "integer") &&
	       !strcmp(stype(json_array_get(any, 1)), "string");
}

static void value_validation(const json_t *s, const char *path, json_t *causes, int depth,
			     bool ios);

/* kube's validateNestedValueValidation: inside allOf, anyOf, oneOf and not
 * only value validations; generic and x-kubernetes-* keys are refused. */
static void nested_value_validation(const json_t *s, const char *path, json_t *causes, int depth)
{
	static const struct {
		const char *key, *msg;
	} forbidden[] = {
	    {"type", "must be empty to be structural"},
	    {"additionalProperties", "must be undefined to be structural"},
	    {"default", "must be undefined to be structural"},
	    {"title", "must be empty to be structural"},
	    {"description", "must be empty to be structural"},
	    {"nullable", "must be false to be structural"},
	    {"x-kubernetes-preserve-unknown-fields", "must be undefined to be structural"},
	    {"x-kubernetes-embedded-resource", "must be false to be structural"},
	    {"x-kubernetes-int-or-string", "must be false to be structural"},
	    {"x-kubernetes-list-map-keys", "must be empty to be structural"},
	    {"x-kubernetes-list-type", "must be undefined to be structural"},
	    {"x-kubernetes-map-type", "must be undefined to be structural"},
	    {"x-kubernetes-validations", "must be empty to be structural"},
	};
	char p[PATHLEN];
	const char *k;
	json_t *x;
	if (!json_is_object(s) || depth > 64)
		return;
	value_validation(s, path, causes, depth, false);
	if (json_is_object(json_object_get(s, "items"))) {
		child(p, path, "items");
		nested_value_validation(json_object_get(s, "items"), p, causes, depth + 1);
	}
	json_object_foreach ((json_t *)json_object_get(s, "properties"), k, x) {
		snprintf(p, sizeof(p), "%s.properties[%s]", path, k);
		nested_value_validation(x, p, causes, depth + 1);
	}
	for (size_t i = 0; i < KB_ARRAY_SIZE(forbidden); i++) {
		const json_t *v = json_object_get(s, forbidden[i].key);
		if (!v || json_is_false(v) || (json_is_string(v) && !*json_string_value(v)))
			continue;
		child(p, path, forbidden[i].key);
		val_add(causes, "FieldValueForbidden", p, "%s", forbidden[i].msg);
	}
}

/* The allOf/anyOf/oneOf/not of node s (ios: an int-or-string node). */
static void value_validation(const json_t *s, const char *path, json_t *causes, int depth, bool ios)
{
	static const char *const lists[] = {"allOf", "anyOf", "oneOf"};
	char p[PATHLEN];
	size_t i;
	json_t *b;
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		const json_t *list = json_object_get(s, lists[l]);
		if (ios && !strcmp(lists[l], "anyOf") && int_or_string_anyof(list))
			continue;
		json_array_foreach (list, i, b) {
			if (ios && !strcmp(lists[l], "allOf") &&
			    int_or_string_anyof(json_object_get(b, "anyOf")) &&
			    json_object_size(b) == 1)
				continue;
			snprintf(p, sizeof(p), "%s.%s[%zu]", path, lists[l], i);
			nested_value_validation(b, p, causes, depth + 1);
		}
	}
	if (json_is_object(json_object_get(s, "not"))) {
		child(p, path, "not");
		nested_value_validation(json_object_get(s, "not"), p, causes, depth + 1);
	}
}

static void structural_node(const json_t *s, const char *path, json_t *causes, int depth)
{
	char p[PATHLEN];
	if (!json_is_object(s) || depth > 64) {
		val_add(causes, "FieldValueInvalid", path, "must be an object");
		return;
	}
	if (json_object_get(s, "$ref")) {
		child(p, path, "$ref");
		val_add(causes, "FieldValueForbidden", p, "$ref is not supported");
	}
	const char *t = stype(s);
	bool untyped_ok = flag(s, "x-kubernetes-preserve-unknown-fields") ||
			  flag(s, "x-kubernetes-int-or-string");
	child(p, path, "type");
	if (!*t && !untyped_ok) {
		val_add(causes, "FieldValueRequired", p,
			"must not be empty for specified %s fields",
			json_object_get(s, "items") ? "array" : "object");
	} else if (*t) {
		bool known = false;
		for (size_t i = 0; i < KB_ARRAY_SIZE(types); i++)
			known |= strcmp(t, types[i]) == 0;
		if (!known)
			val_add(causes, "FieldValueNotSupported", p,
				"\"%s\": supported values: \"array\", \"boolean\", \"integer\", "
				"\"number\", \"object\", \"string\"",
				t);
	}
	if (flag(s, "x-kubernetes-embedded-resource") && strcmp(t, "object") != 0) {
		val_add(causes, "FieldValueInvalid", p,
			"\"%s\": must be object if x-kubernetes-embedded-resource is true", t);
	}
	const char *pat = json_string_value(json_object_get(s, "pattern"));
	char *err = NULL;
	if (pat && *pat && cel_regex_search(pat, "", &err) == -EINVAL) {
		char q[1200];
		child(p, path, "pattern");
		val_add(causes, "FieldValueInvalid", p,
			"%s: must be a valid regular expression, but isn't: %s",
			val_quote(pat, q, sizeof(q)), err ? err : "");
	}
	free(err);
	value_validation(s, path, causes, depth, flag(s, "x-kubernetes-int-or-string"));
	structural_children(s, path, causes, depth);
}

static void structural_metadata(const json_t *meta, const char *path, json_t *causes)
{
	const char *k;
	json_t *x;
	char p[PATHLEN];
	json_object_foreach ((json_t *)meta, k, x) {
		if (strcmp(k, "type") == 0 || strcmp(k, "description") == 0 ||
		    strcmp(k, "properties") == 0)
			continue;
		snprintf(p, sizeof(p), "%s.properties[metadata]", path);
		val_add(causes, "FieldValueForbidden", p,
			"must not specify anything other than name and generateName, but metadata "
			"is implicitly specified");
		return;
	}
	json_object_foreach (json_object_get(meta, "properties"), k, x) {
		if (strcmp(k, "name") != 0 && strcmp(k, "generateName") != 0) {
			snprintf(p, sizeof(p), "%s.properties[metadata]", path);
			val_add(causes, "FieldValueForbidden", p,
				"must not specify anything other than name and generateName, but "
				"metadata is implicitly specified");
			return;
		}
	}
}

/* ---- list and map types, list-map keys ------------------------------------------- */

/* Go's %#v of a []string (kube prints x-kubernetes-list-map-keys so). */
static const char *go_strings(const json_t *a, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, "[]string{");
	size_t i;
	json_t *x;
	json_array_foreach (a, i, x)
		if (n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s\"%s\"", i ? ", " : "",
					      json_string_value(x) ? json_string_value(x) : "");
	if (n < size)
		snprintf(buf + n, size - n, "}");
	return buf;
}

static bool in_strings(const json_t *a, const char *k)
{
	size_t i;
	json_t *x;
	json_array_foreach (a, i, x)
		if (json_is_string(x) && strcmp(json_string_value(x), k) == 0)
			return true;
	return false;
}

/* kube's validateMapListKeysMapSet: items of a set or map list are not
 * nullable; each map key is required or defaulted, and not nullable. */
static unsigned map_keys_set(const json_t *s, const char *path, json_t *causes)
{
	const char *lt = json_string_value(json_object_get(s, "x-kubernetes-list-type"));
	const json_t *items = json_object_get(s, "items");
	char p[PATHLEN];
	size_t before = json_array_size(causes), i;
	json_t *k;
	if (!json_is_object(items) || !lt || (strcmp(lt, "set") && strcmp(lt, "map")))
		return 0;
	if (flag(items, "nullable")) {
		snprintf(p, sizeof(p), "%s.items.nullable", path);
		val_add(causes, "FieldValueForbidden", p,
			"cannot be nullable when x-kubernetes-list-type is %s", lt);
	}
	json_array_foreach (
	    strcmp(lt, "map") ? NULL : json_object_get(s, "x-kubernetes-list-map-keys"), i, k) {
		const char *key = json_string_value(k);
		const json_t *ks =
		    key ? json_object_get(json_object_get(items, "properties"), key) : NULL;
		if (!json_is_object(ks))
			continue; /* refused as no item property already */
		if (!in_strings(json_object_get(items, "required"), key) &&
		    !json_object_get(ks, "default")) {
			snprintf(p, sizeof(p), "%s.items.properties[%s].default", path, key);
			val_add(causes, "FieldValueRequired", p,
				"this property is in x-kubernetes-list-map-keys, so it must have a "
				"default or be a required property");
		}
		if (flag(ks, "nullable")) {
			snprintf(p, sizeof(p), "%s.items.properties[%s].nullable", path, key);
			val_add(causes, "FieldValueForbidden", p,
				"this property is in x-kubernetes-list-map-keys, so it cannot be "
				"nullable");
		}
	}
	return json_array_size(causes) > before ? CRD_LAX_MAP_KEYS : 0;
}

/* The items of a set list are atomic (kube's requireAtomicSetType). */
static unsigned atomic_set(const json_t *s, const char *path, json_t *causes)
{
	const json_t *items = json_object_get(s, "items");
	const char *it = stype(items),
		   *lt = json_string_value(json_object_get(items, "x-kubernetes-list-type"));
	const char *mt = json_string_value(json_object_get(items, "x-kubernetes-map-type"));
	char p[PATHLEN];
	if (strcmp(it, "array") == 0 && lt && strcmp(lt, "atomic") != 0) {
		snprintf(p, sizeof(p), "%s.items.x-kubernetes-list-type", path);
		val_add(causes, "FieldValueInvalid", p,
			"\"%s\": must be atomic as item of a list with x-kubernetes-list-type=set",
			lt);
		return CRD_LAX_ATOMIC_SET;
	}
	if (strcmp(it, "object") == 0 && (!mt || strcmp(mt, "atomic") != 0)) {
		/* kube prints the items' list type here, null when unset */
		snprintf(p, sizeof(p), "%s.items.x-kubernetes-map-type", path);
		if (lt)
			val_add(causes, "FieldValueInvalid", p,
				"\"%s\": must be atomic as item of a list with "
				"x-kubernetes-list-type=set",
				lt);
		else
			val_add(causes, "FieldValueInvalid", p,
				"null: must be atomic as item of a list with "
				"x-kubernetes-list-type=set");
		return CRD_LAX_ATOMIC_SET;
	}
	return 0;
}

/* A map list's keys: names of scalar item properties, each once. */
static void map_list(const json_t *s, const char *path, json_t *causes)
{
	const json_t *keys = json_object_get(s, "x-kubernetes-list-map-keys");
	const json_t *items = json_object_get(s, "items");
	char p[PATHLEN], v[1024];
	if (json_array_size(keys) == 0) {
		child(p, path, "x-kubernetes-list-map-keys");
		val_add(causes, "FieldValueRequired", p,
			"must not be empty if x-kubernetes-list-type is map");
	}
	if (!items) {
		child(p, path, "items");
		val_add(causes, "FieldValueRequired", p,
			"must have a schema if x-kubernetes-list-type is map");
		return;
	}
	if (strcmp(stype(items), "object") != 0) {
		snprintf(p, sizeof(p), "%s.items.type", path);
		val_add(causes, "FieldValueInvalid", p,
			"\"%s\": must be object if parent array's x-kubernetes-list-type is map",
			stype(items));
		return;
	}
	size_t i;
	json_t *k;
	json_array_foreach (keys, i, k) {
		const char *key = json_string_value(k) ? json_string_value(k) : "";
		const json_t *ks = json_object_get(json_object_get(items, "properties"), key);
		if (ks) {
			const char *kt = stype(ks);
			if (!strcmp(kt, "array") || !strcmp(kt, "object")) {
				snprintf(p, sizeof(p), "%s.items.properties[%s].type", path, key);
				val_add(causes, "FieldValueInvalid", p,
					"\"object\": must be a scalar type if parent array's "
					"x-kubernetes-list-type is map");
			}
		} else {
			child(p, path, "x-kubernetes-list-map-keys");
			val_add(causes, "FieldValueInvalid", p,
				"%s: entries must all be names of item properties",
				go_strings(keys, v, sizeof(v)));
		}
		for (size_t j = 0; j < i; j++)
			if (json_equal(json_array_get(keys, j), k)) {
				child(p, path, "x-kubernetes-list-map-keys");
				val_add(causes, "FieldValueInvalid", p,
					"%s: must not contain duplicate entries",
					go_strings(keys, v, sizeof(v)));
				break;
			}
	}
}

/* One node's x-kubernetes-preserve-unknown-fields, -map-type, -list-type
 * and -list-map-keys, in the order of kube's
 * ValidateCustomResourceDefinitionOpenAPISchema (apiextensions-apiserver
 * pkg/apis/apiextensions/validation/validation.go). relax: the CRD_LAX_*
 * rules its old CRD already broke, not required of an update (kube's
 * requireAtomicSetType, requireMapListKeysMapSetValidation). Returns the
 * CRD_LAX_* rules this node breaks. */
static unsigned list_schema(const json_t *s, const char *path, json_t *causes, unsigned relax)
{
	const char *t = stype(s);
	const json_t *pu = json_object_get(s, "x-kubernetes-preserve-unknown-fields");
	const json_t *mtj = json_object_get(s, "x-kubernetes-map-type");
	const json_t *ltj = json_object_get(s, "x-kubernetes-list-type");
	const char *mt = json_string_value(mtj), *lt = json_string_value(ltj);
	char p[PATHLEN];
	unsigned broke = 0;
	if (json_is_false(pu)) {
		child(p, path, "x-kubernetes-preserve-unknown-fields");
		val_add(causes, "FieldValueInvalid", p, "false: must be true or undefined");
	}
	child(p, path, "type");
	if (mt && strcmp(t, "object") != 0)
		val_add(causes, *t ? "FieldValueInvalid" : "FieldValueRequired", p,
			*t ? "\"%s\": must be object if x-kubernetes-map-type is specified"
			   : "must be object if x-kubernetes-map-type is specified",
			t);
	if (mt && strcmp(mt, "atomic") && strcmp(mt, "granular")) {
		child(p, path, "x-kubernetes-map-type");
		val_add(causes, "FieldValueNotSupported", p,
			"\"%s\": supported values: \"atomic\", \"granular\"", mt);
	}
	child(p, path, "type");
	if (lt && strcmp(t, "array") != 0) {
		val_add(causes, *t ? "FieldValueInvalid" : "FieldValueRequired", p,
			*t ? "\"%s\": must be array if x-kubernetes-list-type is specified"
			   : "must be array if x-kubernetes-list-type is specified",
			t);
	} else if (lt && !strcmp(lt, "set") && json_is_object(json_object_get(s, "items"))) {
		json_t *scratch = json_array();
		broke |= atomic_set(s, path, (relax & CRD_LAX_ATOMIC_SET) ? scratch : causes);
		json_decref(scratch);
	}
	if (lt && strcmp(lt, "atomic") && strcmp(lt, "set") && strcmp(lt, "map")) {
		child(p, path, "x-kubernetes-list-type");
		val_add(causes, "FieldValueNotSupported", p,
			"\"%s\": supported values: \"atomic\", \"set\", \"map\"", lt);
	}
	if (json_array_size(json_object_get(s, "x-kubernetes-list-map-keys")) && !lt) {
		child(p, path, "x-kubernetes-list-type");
		val_add(causes, "FieldValueRequired", p,
			"must be map if x-kubernetes-list-map-keys is non-empty");
	} else if (json_array_size(json_object_get(s, "x-kubernetes-list-map-keys")) &&
		   strcmp(lt, "map") != 0) {
		child(p, path, "x-kubernetes-list-type");
		val_add(causes, "FieldValueInvalid", p,
			"\"%s\": must be map if x-kubernetes-list-map-keys is non-empty", lt);
	}
	if (lt && !strcmp(lt, "map"))
		map_list(s, path, causes);
	json_t *scratch = json_array();
	broke |= map_keys_set(s, path, (relax & CRD_LAX_MAP_KEYS) ? scratch : causes);
	json_decref(scratch);
	return broke;
}

/* list_schema over the structural nodes of s (properties, items,
 * additionalProperties); the rules broken anywhere. */
static unsigned list_walk(const json_t *s, const char *path, json_t *causes, unsigned relax,
			  int depth)
{
	char p[PATHLEN];
	const char *k;
	json_t *x;
	if (!json_is_object(s) || depth > 64)
		return 0;
	unsigned broke = list_schema(s, path, causes, relax);
	json_object_foreach ((json_t *)json_object_get(s, "properties"), k, x) {
		snprintf(p, sizeof(p), "%s.properties[%s]", path, k);
		broke |= list_walk(x, p, causes, relax, depth + 1);
	}
	child(p, path, "items");
	broke |= list_walk(json_object_get(s, "items"), p, causes, relax, depth + 1);
	child(p, path, "additionalProperties");
	broke |= list_walk(json_object_get(s, "additionalProperties"), p, causes, relax, depth + 1);
	return broke;
}

unsigned crd_schema_lax(const json_t *schema)
{
	json_t *scratch = json_array();
	unsigned broke = list_walk(schema, "", scratch, 0, 0);
	json_decref(scratch);
	return broke | (unpruned_default(schema, true, 0) ? CRD_LAX_PRUNED : 0);
}

/* ---- completeness ----------------------------------------------------------------- */

static void complete_nested(const json_t *v, const json_t *s, const char *spath, const char *vpath,
			    json_t *causes, int depth);

/* kube's validateValueValidationCompleteness (apiextensions-apiserver
 * pkg/apiserver/schema/complete.go): what the not/allOf/anyOf/oneOf of v
 * name must exist in the structural schema s. */
static void complete_value(const json_t *v, const json_t *s, const char *spath, const char *vpath,
			   json_t *causes, int depth)
{
	static const char *const lists[] = {"allOf", "anyOf", "oneOf"};
	char p[PATHLEN];
	size_t i;
	json_t *b;
	if (!json_is_object(v) || depth > 64)
		return;
	if (!json_is_object(s)) {
		val_add(causes, "FieldValueRequired", spath, "because it is defined in %s", vpath);
		return;
	}
	child(p, vpath, "not");
	complete_nested(json_object_get(v, "not"), s, spath, p, causes, depth + 1);
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++)
		json_array_foreach (json_object_get(v, lists[l]), i, b) {
			snprintf(p, sizeof(p), "%s.%s[%zu]", vpath, lists[l], i);
			complete_nested(b, s, spath, p, causes, depth + 1);
		}
}

/* kube's validateNestedValueValidationCompleteness: a branch's properties
 * and items, each against the same place of s. */
static void complete_nested(const json_t *v, const json_t *s, const char *spath, const char *vpath,
			    json_t *causes, int depth)
{
	char sp[PATHLEN], vp[PATHLEN];
	const char *k;
	json_t *x;
	if (!json_is_object(v) || depth > 64)
		return;
	if (!json_is_object(s)) {
		val_add(causes, "FieldValueRequired", spath, "because it is defined in %s", vpath);
		return;
	}
	complete_value(v, s, spath, vpath, causes, depth);
	child(sp, spath, "items");
	child(vp, vpath, "items");
	complete_nested(json_object_get(v, "items"), json_object_get(s, "items"), sp, vp, causes,
			depth + 1);
	json_object_foreach ((json_t *)json_object_get(v, "properties"), k, x) {
		snprintf(sp, sizeof(sp), "%s.properties[%s]", spath, k);
		snprintf(vp, sizeof(vp), "%s.properties[%s]", vpath, k);
		const json_t *sf = json_object_get(json_object_get(s, "properties"), k);
		if (!sf)
			val_add(causes, "FieldValueRequired", sp, "because it is defined in %s",
				vp);
		else
			complete_nested(x, sf, sp, vp, causes, depth + 1);
	}
}

int crd_schema_structural(const json_t *schema, const char *path, json_t *causes)
{
	return crd_schema_structural_relaxed(schema, path, 0, causes);
}

int crd_schema_structural_relaxed(const json_t *schema, const char *path, unsigned relax,
				  json_t *causes)
{
	size_t before = json_array_size(causes);
	char p[PATHLEN];
	if (!json_is_object(schema)) {
		val_add(causes, "FieldValueRequired", path, "schemas are required");
		return (int)(json_array_size(causes) - before);
	}
	structural_node(schema, path, causes, 0);
	const char *t = stype(schema);
	if (*t && strcmp(t, "object") != 0) {
		child(p, path, "type");
		val_add(causes, "FieldValueNotSupported", p, "\"%s\": supported values: \"object\"",
			t);
	}
	const json_t *meta = json_object_get(json_object_get(schema, "properties"), "metadata");
	if (meta)
		structural_metadata(meta, path, causes);
	/* kube's ValidateStructural checks completeness from the root only:
	 * the root's own allOf/anyOf/oneOf/not, followed through their
	 * properties and items (complete.go validateStructuralCompleteness) */
	complete_value(schema, schema, path, path, causes, 0);
	list_walk(schema, path, causes, relax, 0);
	return (int)(json_array_size(causes) - before);
}

/* ---- version priority ----------------------------------------------------------- */

/* Parses "v<major>[alpha|beta<minor>]"; false for other names. */
static bool parse_kube_version(const char *v, long *major, int *level, long *minor)
{
	char *end;
	if (v[0] != 'v' || !isdigit((unsigned char)v[1]))
		return false;
	*major = strtol(v + 1, &end, 10);
	*minor = 0;
	if (*end == '\0') {
		*level = 2;
		return true;
	}
	if (strncmp(end, "alpha", 5) == 0) {
		*level = 0;
		end += 5;
	} else if (strncmp(end, "beta", 4) == 0) {
		*level = 1;
		end += 4;
	} else {
		return false;
	}
	if (!isdigit((unsigned char)*end))
		return false;
	*minor = strtol(end, &end, 10);
	return *end == '\0';
}

int crd_version_cmp(const char *a, const char *b)
{
	long ma, mb, na, nb;
	int la, lb;
	bool ka = parse_kube_version(a, &ma, &la, &na);
	bool kb = parse_kube_version(b, &mb, &lb, &nb);
	if (ka != kb)
		return ka ? -1 : 1;
	if (!ka)
		return strcmp(a, b);
	if (la != lb)
		return lb - la;
	if (ma != mb)
		return ma > mb ? -1 : 1;
	if (na != nb)
		return na > nb ? -1 : 1;
	return 0;
}
