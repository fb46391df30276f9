/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 6902 JSON patch (application/json-patch+json, `kubectl patch --type
 * json`) with RFC 6901 pointers. All operations run on a deep copy of the
 * document, so an operation that fails leaves the caller's object untouched.
 * Error texts follow the wording kube-apiserver's json-patch library uses.
 */
#include "proxy/patch/patch.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

/* Where a pointer leads: the container holding the target and its key. */
struct jp_loc {
	json_t *parent; /* NULL: the pointer is "" (the whole document) */
	char *token;    /* unescaped last reference token (malloc'ed) */
};

/* Unescapes one reference token of n bytes; NULL on a bad "~" escape. */
static char *jp_unescape(const char *s, size_t n)
{
	char *t = malloc(n + 1), *w = t;

	if (!t)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '~') {
			*w++ = s[i];
			continue;
		}
		if (i + 1 >= n || (s[i + 1] != '0' && s[i + 1] != '1')) {
			free(t);
			return NULL;
		}
		*w++ = s[i + 1] == '0' ? '~' : '/';
		i++;
	}
	*w = '\0';
	return t;
}

/* Array index per RFC 6901: "0" or digits without a leading zero. */
static int jp_index(const char *tok, size_t *idx)
{
	size_t v = 0;

	if (!*tok || (tok[0] == '0' && tok[1]))
		return -EINVAL;
	for (const char *p = tok; *p; p++) {
		if (*p < '0' || *p > '9' || v > (SIZE_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (size_t)(*p - '0');
	}
	*idx = v;
	return 0;
}

/* The child of container c named by tok, or NULL. */
static json_t *jp_child(json_t *c, const char *tok)
{
	size_t idx;

	if (json_is_object(c))
		return json_object_get(c, tok);
	if (json_is_array(c) && jp_index(tok, &idx) == 0)
		return json_array_get(c, idx);
	return NULL;
}

/*
 * Resolves `path` in root to the parent of its target. -EINVAL: not a
 * pointer; -EDOM: an intermediate step is missing; -ENOMEM.
 */
static int jp_locate(json_t *root, const char *path, struct jp_loc *loc)
{
	json_t *cur = root;
	const char *p = path;

	loc->parent = NULL;
	loc->token = NULL;
	if (!*path)
		return 0;
	if (*path != '/')
		return -EINVAL;
	for (;;) {
		const char *s = p + 1, *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		char *tok = jp_unescape(s, n);

		if (!tok)
			return -EINVAL;
		if (!e) {
			loc->parent = cur;
			loc->token = tok;
			return 0;
		}
		cur = jp_child(cur, tok);
		free(tok);
		if (!cur)
			return -EDOM;
		p = e;
	}
}

static json_t *jp_get(json_t *root, const struct jp_loc *loc)
{
	return loc->parent ? jp_child(loc->parent, loc->token) : root;
}

/* Inserts v (stolen) at loc; *root is replaced for the "" pointer. */
static int jp_add_at(json_t **root, struct jp_loc *loc, json_t *v)
{
	size_t idx;

	if (!loc->parent) {
		json_decref(*root);
		*root = v;
		return 0;
	}
	if (json_is_object(loc->parent))
		return json_object_set_new(loc->parent, loc->token, v) ? -ENOMEM : 0;
	if (json_is_array(loc->parent)) {
		if (strcmp(loc->token, "-") == 0)
			return json_array_append_new(loc->parent, v) ? -ENOMEM : 0;
		if (jp_index(loc->token, &idx) == 0 && idx <= json_array_size(loc->parent))
			return json_array_insert_new(loc->parent, idx, v) ? -ENOMEM : 0;
	}
	json_decref(v);
	return -EDOM;
}

/* Removes the target of loc (which must exist); "" is refused. */
static int jp_remove_at(struct jp_loc *loc)
{
	size_t idx;

	if (!loc->parent)
		return -EDOM;
	if (json_is_object(loc->parent))
		return json_object_del(loc->parent, loc->token) ? -EDOM : 0;
	if (json_is_array(loc->parent) && jp_index(loc->token, &idx) == 0)
		return json_array_remove(loc->parent, idx) ? -EDOM : 0;
	return -EDOM;
}

/* RFC 6902 §4.6 equality: numbers compare by value, objects ignore order. */
static bool jp_equal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!jp_equal(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *v;

		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach ((json_t *)a, k, v) {
			json_t *w = json_object_get(b, k);
			if (!w || !jp_equal(v, w))
				return false;
		}
		return true;
	}
	return json_equal(a, b);
}

struct jp_op {
	const char *op, *path, *from;
	json_t *value; /* borrowed from the patch */
};

static int jp_parse_op(const json_t *o, size_t i, struct jp_op *op, char *err, size_t errlen)
{
	const json_t *p;

	if (!json_is_object(o))
		return kb_errf(err, errlen, -EINVAL, "operation %zu is not an object", i);
	op->op = json_string_value(json_object_get(o, "op"));
	if (!op->op)
		return kb_errf(err, errlen, -EINVAL, "operation %zu: missing \"op\"", i);
	p = json_object_get(o, "path");
	op->path = json_string_value(p);
	if (!op->path)
		return kb_errf(err, errlen, -EINVAL, "operation %zu: %s operation missing path", i,
			       op->op);
	op->from = json_string_value(json_object_get(o, "from"));
	op->value = json_object_get(o, "value");
	if (!strcmp(op->op, "add") || !strcmp(op->op, "replace") || !strcmp(op->op, "test")) {
		if (!op->value)
			return kb_errf(err, errlen, -EINVAL, "%s operation has no value", op->op);
	} else if (!strcmp(op->op, "move") || !strcmp(op->op, "copy")) {
		if (!op->from)
			return kb_errf(err, errlen, -EINVAL, "%s operation missing from", op->op);
	} else if (strcmp(op->op, "remove") != 0) {
		return kb_errf(err, errlen, -EINVAL, "Unexpected kind: %s", op->op);
	}
	return 0;
}

static int jp_locate_err(json_t *root, const char *path, struct jp_loc *loc, const char *what,
			 char *err, size_t errlen)
{
	int r = jp_locate(root, path, loc);

	if (r == -EINVAL)
		return kb_errf(err, errlen, -EINVAL, "%s: invalid JSON pointer %s", what, path);
	if (r == -EDOM)
		return kb_errf(
		    err, errlen, -EDOM,
		    "%s operation does not apply: doc is missing path: \"%s\": missing value", what,
		    path);
	return r;
}

static int jp_do_add(json_t **root, const char *path, json_t *v /* stolen */, const char *what,
		     char *err, size_t errlen)
{
	struct jp_loc loc;
	int r = jp_locate_err(*root, path, &loc, what, err, errlen);

	if (r == 0) {
		r = jp_add_at(root, &loc, v);
		v = NULL;
		if (r == -EDOM)
			kb_errf(err, errlen, r,
				"%s operation does not apply: doc is missing path: \"%s\": missing "
				"value",
				what, path);
	}
	json_decref(v);
	free(loc.token);
	return r;
}

static int jp_do_remove(json_t *root, const char *path, char *err, size_t errlen)
{
	struct jp_loc loc;
	int r = jp_locate_err(root, path, &loc, "remove", err, errlen);

	if (r == 0 && (!loc.parent || !jp_get(root, &loc)))
		r = kb_errf(
		    err, errlen, -EDOM,
		    "remove operation does not apply: doc is missing path: \"%s\": missing value",
		    path);
	if (r == 0)
		r = jp_remove_at(&loc);
	free(loc.token);
	return r;
}

static int jp_do_replace(json_t **root, const struct jp_op *op, char *err, size_t errlen)
{
	struct jp_loc loc;
	int r = jp_locate_err(*root, op->path, &loc, "replace", err, errlen);
	json_t *v;

	if (r == 0 && !jp_get(*root, &loc))
		r = kb_errf(
		    err, errlen, -EDOM,
		    "replace operation does not apply: doc is missing key: %s: missing value",
		    op->path);
	if (r == 0 && !(v = json_deep_copy(op->value)))
		r = -ENOMEM;
	if (r == 0) {
		if (!loc.parent) {
			json_decref(*root);
			*root = v;
		} else if (json_is_object(loc.parent)) {
			r = json_object_set_new(loc.parent, loc.token, v) ? -ENOMEM : 0;
		} else {
			size_t idx = 0;
			jp_index(loc.token, &idx);
			r = json_array_set_new(loc.parent, idx, v) ? -ENOMEM : 0;
		}
	}
	free(loc.token);
	return r;
}

/* The value at path (borrowed), or NULL with an error set. */
static json_t *jp_value_at(json_t *root, const char *path, const char *what, int *ret, char *err,
			   size_t errlen)
{
	struct jp_loc loc;
	json_t *v = NULL;

	*ret = jp_locate(root, path, &loc);
	if (*ret == 0)
		v = jp_get(root, &loc);
	free(loc.token);
	if (*ret == -EINVAL)
		kb_errf(err, errlen, -EINVAL, "%s: invalid JSON pointer %s", what, path);
	else if (*ret == 0 && !v)
		*ret = -EDOM;
	if (*ret == -EDOM)
		kb_errf(err, errlen, -EDOM,
			"%s operation does not apply: doc is missing from path: %s: missing value",
			what, path);
	return v;
}

static bool jp_is_proper_prefix(const char *from, const char *path)
{
	size_t n = strlen(from);

	return strncmp(from, path, n) == 0 && path[n] == '/';
}

static int jp_do_move_copy(json_t **root, const struct jp_op *op, bool move, char *err,
			   size_t errlen)
{
	const char *what = move ? "move" : "copy";
	int r;
	json_t *v = jp_value_at(*root, op->from, what, &r, err, errlen);

	if (!v)
		return r;
	if (move && jp_is_proper_prefix(op->from, op->path))
		return kb_errf(err, errlen, -EDOM,
			       "move operation does not apply: %s is a child of %s", op->path,
			       op->from);
	if (move && strcmp(op->from, op->path) == 0)
		return 0;
	v = move ? json_incref(v) : json_deep_copy(v);
	if (!v)
		return -ENOMEM;
	if (move && (r = jp_do_remove(*root, op->from, err, errlen)) != 0) {
		json_decref(v);
		return r;
	}
	return jp_do_add(root, op->path, v, what, err, errlen);
}

static int jp_do_test(json_t *root, const struct jp_op *op, char *err, size_t errlen)
{
	int r;
	json_t *v = jp_value_at(root, op->path, "test", &r, err, errlen);

	if (r == -EINVAL)
		return r;
	if (v ? jp_equal(v, op->value) : json_is_null(op->value))
		return 0;
	return kb_errf(err, errlen, -EDOM, "testing value %s failed: test failed", op->path);
}

static int jp_apply_one(json_t **root, const struct jp_op *op, char *err, size_t errlen)
{
	json_t *v;

	if (!strcmp(op->op, "add")) {
		if (!(v = json_deep_copy(op->value)))
			return -ENOMEM;
		return jp_do_add(root, op->path, v, "add", err, errlen);
	}
	if (!strcmp(op->op, "remove"))
		return jp_do_remove(*root, op->path, err, errlen);
	if (!strcmp(op->op, "replace"))
		return jp_do_replace(root, op, err, errlen);
	if (!strcmp(op->op, "move"))
		return jp_do_move_copy(root, op, true, err, errlen);
	if (!strcmp(op->op, "copy"))
		return jp_do_move_copy(root, op, false, err, errlen);
	return jp_do_test(*root, op, err, errlen);
}

int patch_json(const json_t *doc, const json_t *ops, json_t **out, char *err, size_t errlen)
{
	json_t *root;
	struct jp_op op;
	int r = 0;

	if (!json_is_array(ops))
		return kb_errf(err, errlen, -EINVAL,
			       "json patch must be a JSON array of operations");
	root = doc ? json_deep_copy(doc) : json_null();
	if (!root)
		return -ENOMEM;
	for (size_t i = 0; i < json_array_size(ops) && r == 0; i++) {
		r = jp_parse_op(json_array_get(ops, i), i, &op, err, errlen);
		if (r == 0)
			r = jp_apply_one(&root, &op, err, errlen);
	}
	if (r != 0) {
		json_decref(root);
		return r;
	}
	*out = root;
	return 0;
}
