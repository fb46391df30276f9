/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strict field checks of JSON objects against the generated message tables
 * (see schema.h). One walker serves both checks: it follows the object and
 * the message side by side, keeping the field path as it goes, and either
 * reports fields the message lacks or values whose JSON type the Go field
 * would refuse.
 */
#include "proxy/model/schema.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/util.h"
#include "proxy/model/types.h"

#define SCHEMA_MAX_DEPTH 64

/* The path of the value being walked, as parts; written out as text only
 * when a value is reported (most walks report nothing). */
struct path_part {
	const char *s; /* field name or map key; NULL: a list index */
	long idx;
	bool field;
};

/* two parts at most per message level (a field, then an element) */
#define SCHEMA_PATH_PARTS (2 * (SCHEMA_MAX_DEPTH + 2))

struct path {
	struct path_part part[SCHEMA_PATH_PARTS];
	size_t n;
	char buf[1024]; /* the text, made by path_text */
	size_t len;
};

struct walk {
	json_t *errors;  /* borrowed array of type errors, or NULL: not looked for */
	json_t *unknown; /* borrowed array of unknown field paths, or NULL */
	int count;
};

/* Appends s (truncated to what fits; the buffer stays terminated). */
static void path_put(struct path *p, const char *s, size_t n)
{
	size_t room = sizeof(p->buf) - 1 - p->len;

	if (n > room)
		n = room;
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
}

/* Adds a part and returns the old count, for path_pop. */
static size_t path_push(struct path *p, const char *s, long idx, bool field)
{
	size_t old = p->n;

	if (p->n < SCHEMA_PATH_PARTS) /* always, below SCHEMA_MAX_DEPTH */
		p->part[p->n++] = (struct path_part){s, idx, field};
	return old;
}

static size_t path_field(struct path *p, const char *name)
{
	return path_push(p, name, 0, true);
}

static void path_pop(struct path *p, size_t old)
{
	p->n = old;
}

/* The path as text: "spec.containers[0].env[2]", "metadata.labels[app]". */
static const char *path_text(struct path *p)
{
	p->len = 0;
	p->buf[0] = '\0';
	for (size_t i = 0; i < p->n; i++) {
		const struct path_part *q = &p->part[i];
		const char *s = q->s;
		char num[24];

		if (q->field) {
			if (p->len)
				path_put(p, ".", 1);
			path_put(p, s, strlen(s));
			continue;
		}
		if (!s) { /* an index */
			char *e = num + sizeof(num) - 1;
			unsigned long u =
			    q->idx < 0 ? 0UL - (unsigned long)q->idx : (unsigned long)q->idx;
			*e = '\0';
			do
				*--e = (char)('0' + u % 10);
			while ((u /= 10) != 0);
			if (q->idx < 0)
				*--e = '-';
			s = e;
		}
		path_put(p, "[", 1);
		path_put(p, s, strlen(s));
		path_put(p, "]", 1);
	}
	return p->buf;
}

/* ---- messages for type errors ---- */

static const char *json_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER:
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	default: return "null";
	}
}

static const char *scalar_go_type(uint8_t kind)
{
	static const char *const names[] = {
	    [KT_STRING] = "string", [KT_BYTES] = "[]uint8",  [KT_BOOL] = "bool",
	    [KT_INT32] = "int32",   [KT_INT64] = "int64",    [KT_UINT32] = "uint32",
	    [KT_UINT64] = "uint64", [KT_DOUBLE] = "float64", [KT_FLOAT] = "float32",
	};
	return kind < KB_ARRAY_SIZE(names) && names[kind] ? names[kind] : "?";
}

/* "k8s.io.api.core.v1.Container" → "v1.Container" (Go's package.Type). */
static void msg_go_type(const struct kt_message *m, char *buf, size_t len)
{
	const char *last = strrchr(m->name, '.');
	const char *prev = last;

	while (prev && prev > m->name && prev[-1] != '.')
		prev--;
	snprintf(buf, len, "%s", prev ? prev : m->name);
}

static void go_type(const struct kt_field *f, bool element, char *buf, size_t len)
{
	char base[160];

	if (f->kind == KT_MESSAGE)
		msg_go_type(f->msg, base, sizeof(base));
	else
		snprintf(base, sizeof(base), "%s", scalar_go_type(f->kind));
	if (element)
		snprintf(buf, len, "%s", base);
	else if (f->label == KT_REPEATED)
		snprintf(buf, len, "[]%s", base);
	else if (f->label == KT_MAP)
		snprintf(buf, len, "map[%s]%s", scalar_go_type(f->key_kind), base);
	else
		snprintf(buf, len, "%s", base);
}

static void add_type_error(struct walk *w, const struct kt_message *parent,
			   const struct kt_field *f, bool element, const json_t *v, struct path *p)
{
	char type[200], msg[1600], owner[160];
	const char *at = path_text(p);
	const char *dot = strrchr(parent->name, '.');

	snprintf(owner, sizeof(owner), "%s", dot ? dot + 1 : parent->name);
	go_type(f, element, type, sizeof(type));
	snprintf(msg, sizeof(msg),
		 "json: cannot unmarshal %s into Go struct field %s.%s of type %s", json_kind(v),
		 owner, at, type);
	json_t *e = json_pack("{s:s, s:s}", "field", at, "message", msg);
	if (e && json_array_append_new(w->errors, e) == 0)
		w->count++;
}

/* ---- type predicates ---- */

static bool int_fits(uint8_t kind, const json_t *v)
{
	if (!json_is_integer(v))
		return false;
	json_int_t x = json_integer_value(v);
	switch (kind) {
	case KT_INT32: return x >= INT32_MIN && x <= INT32_MAX;
	case KT_UINT32: return x >= 0 && x <= (json_int_t)UINT32_MAX;
	case KT_UINT64: return x >= 0;
	default: return true;
	}
}

static bool base64_ok(const json_t *v)
{
	unsigned char *out = NULL;
	size_t n;

	if (!json_is_string(v))
		return false;
	int rc = kb_base64_decode(json_string_value(v), json_string_length(v), &out, &n);
	free(out);
	return rc == 0;
}

static bool time_ok(const json_t *v)
{
	time_t t;

	return json_is_string(v) && kb_time_parse(json_string_value(v), &t) == 0;
}

/* Whether a value of a special message has an acceptable shape. */
static bool special_ok(const struct kt_message *m, const json_t *v)
{
	switch (m->special) {
	case KT_TIME:
	case KT_MICROTIME: return time_ok(v);
	case KT_DURATION: return json_is_string(v);
	case KT_QUANTITY: return json_is_string(v) || json_is_number(v);
	case KT_INTORSTRING: return json_is_string(v) || int_fits(KT_INT32, v);
	default: /* RawExtension, FieldsV1, JSON */ return true;
	}
}

static bool scalar_ok(uint8_t kind, const json_t *v)
{
	switch (kind) {
	case KT_STRING: return json_is_string(v);
	case KT_BYTES: return base64_ok(v);
	case KT_BOOL: return json_is_boolean(v);
	case KT_DOUBLE:
	case KT_FLOAT: return json_is_number(v);
	default: return int_fits(kind, v);
	}
}

/* ---- the walker ---- */

static void walk_message(struct walk *w, const struct kt_message *m, const json_t *obj,
			 struct path *p, int depth, bool top);

/* Whether walk_value would leave v (a value of f) as it is: null, or a
 * right scalar or special value (nothing to report, nothing to walk into).
 * Most values are: they are checked in place, without the call or their
 * place on the path. */
static bool value_done(const struct kt_field *f, const json_t *v)
{
	if (json_is_null(v))
		return true;
	if (f->kind != KT_MESSAGE)
		return scalar_ok(f->kind, v);
	return f->msg->special != KT_PLAIN && special_ok(f->msg, v);
}

/* One value of field f (a list element, a map value or the field itself). */
static void walk_value(struct walk *w, const struct kt_message *parent, const struct kt_field *f,
		       const json_t *v, struct path *p, int depth, bool element)
{
	bool ok;

	if (json_is_null(v))
		return;
	if (f->kind != KT_MESSAGE)
		ok = scalar_ok(f->kind, v);
	else if (f->msg->special != KT_PLAIN)
		ok = special_ok(f->msg, v);
	else
		ok = json_is_object(v);
	if (!ok) {
		if (w->errors)
			add_type_error(w, parent, f, element, v, p);
		return;
	}
	if (f->kind == KT_MESSAGE && f->msg->special == KT_PLAIN)
		walk_message(w, f->msg, v, p, depth + 1, false);
}

static void walk_list(struct walk *w, const struct kt_message *parent, const struct kt_field *f,
		      const json_t *v, struct path *p, int depth)
{
	size_t i, n = json_array_size(v);

	for (i = 0; i < n; i++) {
		const json_t *e = json_array_get(v, i);
		if (value_done(f, e)) /* args, command, finalizers */
			continue;
		size_t old = path_push(p, NULL, (long)i, false);
		walk_value(w, parent, f, e, p, depth, true);
		path_pop(p, old);
	}
}

static void walk_map(struct walk *w, const struct kt_message *parent, const struct kt_field *f,
		     const json_t *v, struct path *p, int depth)
{
	for (void *it = json_object_iter((json_t *)v); it;
	     it = json_object_iter_next((json_t *)v, it)) {
		const char *k = json_object_iter_key(it);
		const json_t *e = json_object_iter_value(it);
		if (value_done(f, e)) /* labels, annotations, quantities */
			continue;
		size_t old = path_push(p, k, 0, false);
		walk_value(w, parent, f, e, p, depth, true);
		path_pop(p, old);
	}
}

static void walk_field(struct walk *w, const struct kt_message *m, const struct kt_field *f,
		       const json_t *v, struct path *p, int depth)
{
	bool container_ok;

	if (json_is_null(v))
		return;
	if (f->label == KT_OPTIONAL) {
		walk_value(w, m, f, v, p, depth, false);
		return;
	}
	container_ok = f->label == KT_MAP ? json_is_object(v) : json_is_array(v);
	if (!container_ok) {
		if (w->errors)
			add_type_error(w, m, f, false, v, p);
		return;
	}
	if (f->label == KT_MAP)
		walk_map(w, m, f, v, p, depth);
	else
		walk_list(w, m, f, v, p, depth);
}

static void add_unknown(struct walk *w, struct path *p)
{
	if (json_array_append_new(w->unknown, json_string(path_text(p))) == 0)
		w->count++;
}

static void walk_message(struct walk *w, const struct kt_message *m, const json_t *obj,
			 struct path *p, int depth, bool top)
{
	if (depth > SCHEMA_MAX_DEPTH)
		return;
	/* the iterator itself, not json_object_foreach (which finds each key's
	 * iterator again, twice, from the key) */
	for (void *it = json_object_iter((json_t *)obj); it;
	     it = json_object_iter_next((json_t *)obj, it)) {
		const char *k = json_object_iter_key(it);
		const json_t *v = json_object_iter_value(it);
		const struct kt_field *f = kt_field(m, k);

		if (f && f->label == KT_OPTIONAL && value_done(f, v))
			continue;
		size_t old = path_field(p, k);
		if (f)
			walk_field(w, m, f, v, p, depth);
		else if (top && (strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0)) {
			if (w->errors && !json_is_string(v) && !json_is_null(v)) {
				static const struct kt_field tm = {"", "", 0, KT_STRING};
				add_type_error(w, m, &tm, false, v, p);
			}
		} else if (w->unknown) {
			add_unknown(w, p);
		}
		path_pop(p, old);
	}
}

static int walk_root(const char *msg_name, const json_t *obj, json_t *errors, json_t *unknown)
{
	const struct kt_message *m = kt_find(msg_name);
	struct walk w = {errors, unknown, 0};
	struct path p = {.n = 0};

	if (!m)
		return -ENOENT;
	if (!json_is_object(obj) || (errors && !json_is_array(errors)) ||
	    (unknown && !json_is_array(unknown)))
		return -EINVAL;
	if (m->special != KT_PLAIN)
		return 0;
	walk_message(&w, m, obj, &p, 0, true);
	return w.count;
}

int schema_unknown_fields(const char *msg_name, const json_t *obj, json_t *paths)
{
	if (!json_is_array(paths))
		return kt_find(msg_name) ? -EINVAL : -ENOENT;
	return walk_root(msg_name, obj, NULL, paths);
}

int schema_check(const char *msg_name, const json_t *obj, json_t *errors, json_t *paths)
{
	if (!json_is_array(errors) || !json_is_array(paths))
		return kt_find(msg_name) ? -EINVAL : -ENOENT;
	return walk_root(msg_name, obj, errors, paths);
}

int schema_check_types(const char *msg_name, const json_t *obj, json_t *errors)
{
	if (!json_is_array(errors))
		return kt_find(msg_name) ? -EINVAL : -ENOENT;
	return walk_root(msg_name, obj, errors, NULL);
}
