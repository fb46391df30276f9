/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes strategic merge patch (application/strategic-merge-patch+json):
 * what kubectl sends for `patch` (default type), the second client-side
 * `apply`, `set image`, `rollout restart` and `diff`.
 *
 * The semantics follow apimachinery's strategicpatch package (MergeParallelList
 * and IgnoreUnmatchedNulls on, as the API server uses it):
 *  - maps merge recursively, null deletes a key, scalars replace;
 *  - lists whose field has patch strategy "merge" merge element by element on
 *    the field's merge key (lists of scalars merge as sets); other lists are
 *    replaced; fields with strategy "replace" are replaced whole;
 *  - "$patch": "replace" / "delete" in a map replaces it / empties it;
 *    "$patch": "delete" in a list element removes the elements with the same
 *    merge key, "$patch": "replace" in a list element replaces the list;
 *  - "$retainKeys": [...] drops the original's keys not in the list;
 *  - "$deleteFromPrimitiveList/<f>": [...] removes those values from list f;
 *  - "$setElementOrder/<f>": [...] orders list f; otherwise the patch's order
 *    wins for patched items and server-only items keep their live position
 *    as far as possible (the "preserve order" proposal).
 * Type facts (strategies, merge keys, nested types) come from proxy/model/types.h;
 * fields the type does not know merge like a JSON merge patch.
 */
#include "proxy/patch/patch.h"
#include "proxy/model/types.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMP_DIRECTIVE     "$patch"
#define SMP_RETAIN        "$retainKeys"
#define SMP_ORDER_PREFIX  "$setElementOrder/"
#define SMP_DELETE_PREFIX "$deleteFromPrimitiveList/"

/* A position in the type tree: a message, or a map of a message (or of
 * scalars when msg is NULL). msg NULL and !is_map means "untyped". */
struct smp_type {
	const struct kt_message *msg;
	bool is_map;
};

/* What the type says about one key of a map. */
struct smp_field {
	struct smp_type type;  /* of the value (list: of the elements) */
	bool merge_list;       /* patch strategy contains "merge" */
	bool replace;          /* patch strategy "replace" */
	const char *merge_key; /* NULL if none */
	bool known;            /* the type has this field */
};

struct smp_ctx {
	char *err;
	size_t errlen;
};

static int smp_map(const json_t *orig, const json_t *patch, struct smp_type t, struct smp_ctx *c,
		   json_t **out);

static int smp_fail(struct smp_ctx *c, int ret, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int smp_fail(struct smp_ctx *c, int ret, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* Compact JSON text of v for messages (static buffer per call site). */
static const char *smp_show(const json_t *v, char *buf, size_t len)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	snprintf(buf, len, "%s", s ? s : "?");
	free(s);
	return buf;
}

static bool smp_scalar_message(const struct kt_message *m)
{
	return m && m->special != KT_PLAIN;
}

static struct smp_field smp_lookup(struct smp_type t, const char *key)
{
	struct smp_field f = {0};
	const struct kt_field *kf;

	if (t.is_map) {
		f.type.msg = smp_scalar_message(t.msg) ? NULL : t.msg;
		f.known = true;
		return f;
	}
	if (!t.msg || !(kf = kt_field(t.msg, key)))
		return f;
	f.known = true;
	f.type.msg = smp_scalar_message(kf->msg) ? NULL : kf->msg;
	f.type.is_map = kf->label == KT_MAP;
	if (kf->patch_strategy) {
		f.merge_list = strstr(kf->patch_strategy, "merge") != NULL;
		f.replace = strcmp(kf->patch_strategy, "replace") == 0;
	}
	f.merge_key = kf->merge_key;
	return f;
}

/* --- list helpers ---------------------------------------------------- */

/* Index in list of the element matching item (by merge key or by value). */
static long smp_index(const json_t *list, const json_t *item, const char *key)
{
	const json_t *want = key ? json_object_get(item, key) : item;

	if (!want)
		return -1;
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *e = json_array_get(list, i);
		const json_t *have = key ? json_object_get(e, key) : e;
		if (have && json_equal(have, want))
			return (long)i;
	}
	return -1;
}

/* Stable insertion sort of the array by each item's index in `order`;
 * items missing from `order` go last. */
static void smp_sort_by(json_t *arr, const json_t *order, const char *key)
{
	size_t n = json_array_size(arr);

	for (size_t i = 1; i < n; i++) {
		json_t *v = json_incref(json_array_get(arr, i));
		long vi = smp_index(order, v, key);
		size_t j = i;

		if (vi < 0) {
			json_decref(v);
			continue;
		}
		while (j > 0) {
			long pj = smp_index(order, json_array_get(arr, j - 1), key);
			if (pj >= 0 && pj <= vi)
				break;
			j--;
		}
		if (j != i) {
			json_array_remove(arr, i);
			json_array_insert(arr, j, v);
		}
		json_decref(v);
	}
}

/*
 * Orders merged items: items present in patch_order follow it, server-only
 * items keep their order in server_order and are interleaved with the patch
 * items by their live positions. Returns a new array (NULL on ENOMEM).
 */
static json_t *smp_normalize(const json_t *merged, const json_t *patch_order,
			     const json_t *server_order, const char *key)
{
	json_t *pitems = json_array(), *sonly = json_array(), *res = json_array();
	size_t i = 0, j = 0;

	if (!pitems || !sonly || !res)
		goto fail;
	for (size_t k = 0; k < json_array_size(merged); k++) {
		json_t *e = json_array_get(merged, k);
		json_array_append(smp_index(patch_order, e, key) >= 0 ? pitems : sonly, e);
	}
	smp_sort_by(pitems, patch_order, key);
	smp_sort_by(sonly, server_order, key);
	while (i < json_array_size(sonly) || j < json_array_size(pitems)) {
		json_t *l = json_array_get(sonly, i), *r = json_array_get(pitems, j);
		bool take_left = !r;

		if (l && r) {
			long li = smp_index(server_order, l, key);
			long ri = smp_index(server_order, r, key);
			take_left = li >= 0 && ri >= 0 && li < ri;
		}
		if (json_array_append(res, take_left ? l : r))
			goto fail;
		take_left ? i++ : j++;
	}
	json_decref(pitems);
	json_decref(sonly);
	return res;
fail:
	json_decref(pitems);
	json_decref(sonly);
	json_decref(res);
	return NULL;
}

/* Checks that list elements share one JSON type and are not lists. */
static int smp_check_elements(const json_t *a, const json_t *b, int *type, struct smp_ctx *c)
{
	const json_t *lists[2] = {a, b};

	*type = -1;
	for (int l = 0; l < 2; l++) {
		for (size_t i = 0; i < json_array_size(lists[l]); i++) {
			const json_t *e = json_array_get(lists[l], i);
			int t = json_is_number(e) ? JSON_REAL : (int)json_typeof(e);

			if (json_is_boolean(e))
				t = JSON_TRUE;
			if (json_is_array(e))
				return smp_fail(c, -EINVAL, "lists of lists are not supported");
			if (*type >= 0 && *type != t)
				return smp_fail(c, -EINVAL, "list element types are not identical");
			*type = t;
		}
	}
	return 0;
}

/* Merges two lists of scalars as a set (original order, new ones after). */
static json_t *smp_scalar_union(const json_t *orig, const json_t *patch)
{
	json_t *res = json_array();

	for (int l = 0; res && l < 2; l++) {
		const json_t *src = l ? patch : orig;
		for (size_t i = 0; i < json_array_size(src); i++) {
			json_t *e = json_array_get(src, i);
			if (smp_index(res, e, NULL) < 0 && json_array_append(res, e)) {
				json_decref(res);
				return NULL;
			}
		}
	}
	return res;
}

/* Removes every element of list whose merge key equals val's. */
static void smp_delete_matching(json_t *list, const char *key, const json_t *val)
{
	for (size_t i = json_array_size(list); i-- > 0;) {
		const json_t *have = json_object_get(json_array_get(list, i), key);
		if (have && json_equal(have, val))
			json_array_remove(list, i);
	}
}

/*
 * Applies the "$patch" elements of a list of maps: deletions edit `work`
 * (a copy of the original), *replace is set for "$patch: replace", and the
 * other elements are collected into *plain (new array).
 */
static int smp_list_specials(json_t *work, const json_t *patch, const char *key, bool *replace,
			     json_t **plain, struct smp_ctx *c)
{
	char buf[256];

	*replace = false;
	*plain = json_array();
	if (!*plain)
		return -ENOMEM;
	for (size_t i = 0; i < json_array_size(patch); i++) {
		json_t *e = json_array_get(patch, i);
		const char *d = json_string_value(json_object_get(e, SMP_DIRECTIVE));
		json_t *kv = json_object_get(e, key);

		if (!json_object_get(e, SMP_DIRECTIVE)) {
			json_array_append(*plain, e);
		} else if (d && !strcmp(d, "delete")) {
			if (!kv)
				return smp_fail(c, -EINVAL,
						"map: %s does not contain declared merge key: %s",
						smp_show(e, buf, sizeof(buf)), key);
			smp_delete_matching(work, key, kv);
		} else if (d && !strcmp(d, "replace")) {
			*replace = true;
		} else if (d && !strcmp(d, "merge")) {
			return smp_fail(c, -EINVAL,
					"merging lists cannot yet be specified in the patch");
		} else {
			return smp_fail(c, -EINVAL, "unknown patch type: %s in map: %s",
					d ? d : "?", smp_show(e, buf, sizeof(buf)));
		}
	}
	return 0;
}

/* Merges the plain (directive-free) patch elements into work by merge key. */
static int smp_list_merge_maps(json_t *work, const json_t *plain, const char *key,
			       struct smp_type et, struct smp_ctx *c)
{
	char buf[256];

	for (size_t i = 0; i < json_array_size(plain); i++) {
		const json_t *e = json_array_get(plain, i);
		long at;
		json_t *m;
		int r;

		if (!json_object_get(e, key))
			return smp_fail(c, -EINVAL,
					"map: %s does not contain declared merge key: %s",
					smp_show(e, buf, sizeof(buf)), key);
		at = smp_index(work, e, key);
		r = smp_map(at >= 0 ? json_array_get(work, (size_t)at) : NULL, e, et, c, &m);
		if (r)
			return r;
		r = at >= 0 ? json_array_set_new(work, (size_t)at, m)
			    : json_array_append_new(work, m);
		if (r)
			return -ENOMEM;
	}
	return 0;
}

/* Merges a list of maps by key; *out is a new array in patch order. */
static int smp_list_maps(const json_t *orig, const json_t *patch, const char *key,
			 struct smp_type et, struct smp_ctx *c, json_t **out)
{
	json_t *work = json_deep_copy(orig), *plain = NULL, *server = NULL;
	bool replace;
	int r;

	if (!work)
		return -ENOMEM;
	r = smp_list_specials(work, patch, key, &replace, &plain, c);
	if (r)
		goto out;
	if (replace) {
		json_decref(work);
		work = json_array();
		if (!work) {
			r = -ENOMEM;
			goto out;
		}
	}
	server = json_deep_copy(work);
	r = server ? smp_list_merge_maps(work, plain, key, et, c) : -ENOMEM;
	if (r)
		goto out;
	*out = replace ? json_incref(work) : smp_normalize(work, plain, server, key);
	r = *out ? 0 : -ENOMEM;
out:
	json_decref(server);
	json_decref(plain);
	json_decref(work);
	return r;
}

/* Merges a list field with patch strategy "merge" (orig may be NULL). */
static int smp_list(const json_t *orig, const json_t *patch, const struct smp_field *f,
		    struct smp_ctx *c, json_t **out)
{
	json_t *empty = NULL, *merged;
	int type, r;

	if (json_array_size(patch) == 0) {
		*out = json_deep_copy(orig ? orig : patch);
		return *out ? 0 : -ENOMEM;
	}
	if (!orig && !(orig = empty = json_array()))
		return -ENOMEM;
	r = smp_check_elements(orig, patch, &type, c);
	if (r)
		goto out;
	if (type != JSON_OBJECT) {
		merged = smp_scalar_union(orig, patch);
		*out = merged ? smp_normalize(merged, patch, orig, NULL) : NULL;
		json_decref(merged);
		r = *out ? 0 : -ENOMEM;
	} else if (!f->merge_key) {
		r = smp_fail(c, -EINVAL, "cannot merge lists without merge key");
	} else {
		r = smp_list_maps(orig, patch, f->merge_key, f->type, c, out);
	}
out:
	json_decref(empty);
	return r;
}

/* Merges one patch value pv into ov (NULL: absent) under field f. */
static int smp_value(const json_t *ov, const json_t *pv, const struct smp_field *f,
		     struct smp_ctx *c, json_t **out)
{
	if (json_is_object(pv)) {
		if (f->replace || !json_is_object(ov))
			ov = NULL;
		return smp_map(ov, pv, f->type, c, out);
	}
	if (json_is_array(pv) && f->merge_list)
		return smp_list(json_is_array(ov) ? ov : NULL, pv, f, c, out);
	*out = json_deep_copy(pv);
	return *out ? 0 : -ENOMEM;
}

/* --- directives in maps --------------------------------------------- */

static int smp_retain_keys(json_t *res, const json_t *patch, struct smp_ctx *c)
{
	const json_t *keep = json_object_get(patch, SMP_RETAIN);
	const char *k;
	json_t *v, *tmp;

	if (!keep)
		return 0;
	if (!json_is_array(keep))
		return smp_fail(c, -EINVAL, "invalid patch format of retainKeys");
	json_object_foreach ((json_t *)patch, k, v) {
		json_t *ks = json_string(k);
		bool listed = ks && smp_index(keep, ks, NULL) >= 0;

		json_decref(ks);
		if (json_is_null(v) || k[0] == '$' || listed)
			continue;
		return smp_fail(c, -EINVAL, "invalid patch format of retainKeys");
	}
	json_object_foreach_safe (res, tmp, k, v) {
		json_t *ks = json_string(k);
		if (ks && smp_index(keep, ks, NULL) < 0)
			json_object_del(res, k);
		json_decref(ks);
	}
	return 0;
}

static int smp_delete_from_lists(json_t *res, const json_t *patch, struct smp_ctx *c)
{
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)patch, k, v) {
		json_t *list;

		if (strncmp(k, SMP_DELETE_PREFIX, strlen(SMP_DELETE_PREFIX)) != 0)
			continue;
		if (!json_is_array(v))
			return smp_fail(c, -EINVAL, "invalid patch format of primitive list");
		list = json_object_get(res, k + strlen(SMP_DELETE_PREFIX));
		for (size_t i = json_array_size(list); i-- > 0;)
			if (smp_index(v, json_array_get(list, i), NULL) >= 0)
				json_array_remove(list, i);
	}
	return 0;
}

/* Merges list `name` and orders it by the $setElementOrder list `order`. */
static int smp_ordered_list(json_t *res, const json_t *patch, const char *name, const json_t *order,
			    struct smp_type t, struct smp_ctx *c)
{
	struct smp_field f = smp_lookup(t, name);
	const json_t *ov = json_object_get(res, name), *pv = json_object_get(patch, name);
	json_t *merged = NULL, *sorted;
	int r;

	if (!json_is_array(order))
		return smp_fail(c, -EINVAL, "invalid patch format of setElementOrder list");
	if (pv && !json_is_array(pv))
		return 0; /* not a list after all: the plain merge handles it */
	if (!ov && !pv)
		return 0;
	if (pv)
		r = smp_value(json_is_array(ov) ? ov : NULL, pv, &f, c, &merged);
	else
		r = (merged = json_deep_copy(ov)) ? 0 : -ENOMEM;
	if (r)
		return r;
	sorted = json_is_array(merged)
		     ? smp_normalize(merged, order, json_is_array(ov) ? ov : merged,
				     f.merge_list ? f.merge_key : NULL)
		     : json_incref(merged);
	json_decref(merged);
	if (!sorted || json_object_set_new(res, name, sorted))
		return -ENOMEM;
	return 0;
}

static int smp_ordered_lists(json_t *res, const json_t *patch, struct smp_type t, struct smp_ctx *c)
{
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)patch, k, v) {
		int r;

		if (strncmp(k, SMP_ORDER_PREFIX, strlen(SMP_ORDER_PREFIX)) != 0)
			continue;
		r = smp_ordered_list(res, patch, k + strlen(SMP_ORDER_PREFIX), v, t, c);
		if (r)
			return r;
	}
	return 0;
}

static bool smp_is_directive(const char *k)
{
	return !strcmp(k, SMP_DIRECTIVE) || !strcmp(k, SMP_RETAIN) ||
	       !strncmp(k, SMP_ORDER_PREFIX, strlen(SMP_ORDER_PREFIX)) ||
	       !strncmp(k, SMP_DELETE_PREFIX, strlen(SMP_DELETE_PREFIX));
}

/* True when patch key k was already merged by a $setElementOrder list. */
static bool smp_key_ordered(const json_t *patch, const char *k)
{
	char name[512];

	if (strlen(k) + strlen(SMP_ORDER_PREFIX) >= sizeof(name))
		return false;
	snprintf(name, sizeof(name), "%s%s", SMP_ORDER_PREFIX, k);
	return json_object_get(patch, name) != NULL && json_is_array(json_object_get(patch, k));
}

static int smp_keys(json_t *res, const json_t *patch, struct smp_type t, struct smp_ctx *c)
{
	const char *k;
	json_t *pv;

	json_object_foreach ((json_t *)patch, k, pv) {
		struct smp_field f = smp_lookup(t, k);
		json_t *nv;
		int r;

		if (smp_is_directive(k) || (k[0] == '$' && t.msg && !t.is_map && !f.known))
			continue;
		if (smp_key_ordered(patch, k))
			continue;
		if (json_is_null(pv)) {
			json_object_del(res, k);
			continue;
		}
		r = smp_value(json_object_get(res, k), pv, &f, c, &nv);
		if (r)
			return r;
		if (json_object_set_new(res, k, nv))
			return -ENOMEM;
	}
	return 0;
}

/* Handles "$patch" in a map; returns 1 when *out is final. */
static int smp_map_directive(const json_t *patch, struct smp_type t, struct smp_ctx *c,
			     json_t **out)
{
	const json_t *d = json_object_get(patch, SMP_DIRECTIVE);
	const char *s = json_string_value(d);
	char buf[256];

	if (!d || (s && !strcmp(s, "merge")))
		return 0;
	if (s && !strcmp(s, "delete")) {
		*out = json_object();
		return *out ? 1 : -ENOMEM;
	}
	if (s && !strcmp(s, "replace")) {
		json_t *p = json_deep_copy(patch);
		int r;

		if (!p)
			return -ENOMEM;
		json_object_del(p, SMP_DIRECTIVE);
		r = smp_map(NULL, p, t, c, out);
		json_decref(p);
		return r ? r : 1;
	}
	return smp_fail(c, -EINVAL, "unknown patch type: %s in map: %s", s ? s : "?",
			smp_show(patch, buf, sizeof(buf)));
}

static int smp_map(const json_t *orig, const json_t *patch, struct smp_type t, struct smp_ctx *c,
		   json_t **out)
{
	json_t *res;
	int r = smp_map_directive(patch, t, c, out);

	if (r)
		return r < 0 ? r : 0;
	res = json_is_object(orig) ? json_deep_copy(orig) : json_object();
	if (!res)
		return -ENOMEM;
	r = smp_retain_keys(res, patch, c);
	if (!r)
		r = smp_delete_from_lists(res, patch, c);
	if (!r)
		r = smp_ordered_lists(res, patch, t, c);
	if (!r)
		r = smp_keys(res, patch, t, c);
	if (r) {
		json_decref(res);
		return r;
	}
	*out = res;
	return 0;
}

int patch_strategic(const json_t *doc, const json_t *patch, const char *msg_name, json_t **out,
		    char *err, size_t errlen)
{
	struct smp_ctx c = {err, errlen};
	struct smp_type t = {msg_name ? kt_find(msg_name) : NULL, false};

	if (!json_is_object(patch))
		return smp_fail(&c, -EINVAL, "strategic merge patch must be a JSON object");
	return smp_map(doc, patch, t, &c, out);
}
