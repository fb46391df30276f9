/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Server-side apply (application/apply-patch+yaml) and field ownership
 * tracking in metadata.managedFields, after Kubernetes' structured-merge-diff.
 *
 * DESIGN. A field set is kept as a JSON tree in the FieldsV1 shape: keys are
 * path elements ("f:<field>", "k:<json of the list-map keys>", "v:<json of a
 * set element>", "i:<index>") and "." marks the path itself as a member.
 * Internally every member carries "." (a leaf is {".":{}}); the wire form
 * drops the "." of leaves ({}), as kube does. Ownership is one set per
 * (manager, operation) entry.
 *  - Apply: the applier's set becomes exactly the field set of its applied
 *    configuration; the configuration is merged into the live object (maps
 *    and structs granular, list-maps by their keys, sets by value, atomic
 *    lists and scalars replaced); fields in the applier's previous set that
 *    are no longer applied and owned by nobody else are removed; fields the
 *    merge added or changed that another manager owns are conflicts (-EBUSY)
 *    unless forced, in which case the other manager loses them.
 *  - Update: the fields that differ between the old and new object go to the
 *    writer, are taken from every other manager; removed fields are dropped
 *    from every set; empty entries disappear.
 * Server-managed paths (apiVersion, kind, metadata itself and its name,
 * namespace, uid, resourceVersion, generation, creationTimestamp, selfLink,
 * managedFields) are never owned, as kube's stripMeta does.
 * A create's entry keeps its fieldsV1 as text (a raw value, lib/json.h
 * kb_json_raw; patch_track_create with `raw`): the store writes it, the
 * answers and watch events are that text, and nobody reads the tree of a
 * new object but an ownership read here, which parses the text
 * (ssa_mgrs_load).
 * List semantics come from proxy/model/types.h (list_type/map_keys, else patch
 * strategy and merge key); unknown types have granular maps, atomic lists.
 */
#include "proxy/patch/patch.h"
#include "proxy/model/types.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"

enum ssa_kind { SK_NONE = 0, SK_SCALAR, SK_OBJECT, SK_ATOMIC, SK_SET, SK_MAP };

/* What the schema says about a value at some path. */
struct ssa_field {
	const struct kt_message *msg; /* struct type, or map value type */
	bool is_map;                  /* a map: every key has type msg */
	bool atomic;                  /* special message: a scalar */
	uint8_t list;                 /* SK_ATOMIC/SK_SET/SK_MAP for lists */
	const char *const *keys;      /* list-map keys */
	const char *key1[2];          /* storage for a single merge key */
};

struct ssa_mgr {
	json_t *entry; /* the managedFields entry (owned), fieldsV1 ignored */
	json_t *set;   /* internal form (owned) */
};

struct ssa_mgrs {
	struct ssa_mgr *v;
	size_t n;
};

/* --- schema --------------------------------------------------------- */

static bool ssa_special(const struct kt_message *m)
{
	return m && m->special != KT_PLAIN;
}

static void ssa_list_kind(struct ssa_field *f, const struct kt_field *kf)
{
	bool merge = kf->patch_strategy && strstr(kf->patch_strategy, "merge");

	f->list = SK_ATOMIC;
	if (kf->list_type && !strcmp(kf->list_type, "map") && kf->map_keys) {
		f->list = SK_MAP;
		f->keys = kf->map_keys;
	} else if (kf->list_type && !strcmp(kf->list_type, "set")) {
		f->list = SK_SET;
	} else if (!kf->list_type && merge && kf->merge_key) {
		f->list = SK_MAP;
		f->key1[0] = kf->merge_key;
		f->keys = f->key1;
	} else if (!kf->list_type && merge) {
		f->list = SK_SET;
	}
}

/* The schema of key `key` inside an object described by parent. */
static struct ssa_field ssa_child(const struct ssa_field *parent, const char *key)
{
	struct ssa_field f = {0};
	const struct kt_field *kf;

	f.list = SK_ATOMIC;
	if (parent->is_map) {
		f.msg = ssa_special(parent->msg) ? NULL : parent->msg;
		f.atomic = ssa_special(parent->msg);
		return f;
	}
	if (!parent->msg || !(kf = kt_field(parent->msg, key)))
		return f;
	f.atomic = ssa_special(kf->msg);
	f.msg = f.atomic ? NULL : kf->msg;
	f.is_map = kf->label == KT_MAP;
	if (kf->label == KT_REPEATED)
		ssa_list_kind(&f, kf);
	return f;
}

/* The schema of an element of list field f. */
static struct ssa_field ssa_elem(const struct ssa_field *f)
{
	struct ssa_field e = {0};

	e.msg = f->msg;
	e.list = SK_ATOMIC;
	return e;
}

static enum ssa_kind ssa_kind(const struct ssa_field *f, const json_t *v)
{
	if (!v)
		return SK_NONE;
	if (json_is_array(v))
		return f->list ? f->list : SK_ATOMIC;
	if (json_is_object(v) && !f->atomic)
		return SK_OBJECT;
	return SK_SCALAR;
}

/* --- path elements -------------------------------------------------- */

/* "k:{...}" with the present keys' values as json_dumps(JSON_SORT_KEYS)
 * writes them (nested objects sorted too); NULL when every key is missing. */
static char *ssa_item_pe_sorted(const struct ssa_field *f, const json_t *item)
{
	struct kb_buf b = {0};
	json_t *k = json_object();
	bool any = false;
	char *s;

	for (size_t i = 0; k && f->keys[i]; i++) {
		json_t *v = json_object_get(item, f->keys[i]);
		if (v) {
			json_object_set(k, f->keys[i], v);
			any = true;
		}
	}
	s = any ? json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(k);
	if (s && kb_buf_printf(&b, "k:%s", s) == 0) {
		free(s);
		return b.data;
	}
	free(s);
	kb_buf_free(&b);
	return NULL;
}

static int sn_strcmp(const void *a, const void *b);

/* Appends "k:{...}" / "v:..." for a list item to b: 0, or -1 when a map
 * key is missing (or on a failure; b's length is then as it was). Runs
 * for every list item of every tracked write: the usual scalar keys are
 * written in sorted order with kb_json_dump, without json_dumps, each
 * looked up once. */
static int ssa_item_pe_put(const struct ssa_field *f, const json_t *item, struct kb_buf *b)
{
	const char *names[8];
	const json_t *vals[8];
	size_t n = 0, start = b->len;

	if (f->list == SK_SET) {
		if (kb_buf_append(b, "v:", 2) == 0 && kb_json_dump(item, b) == 0)
			return 0;
		b->len = start;
		return -1;
	}
	for (size_t i = 0; f->keys[i]; i++) {
		const json_t *v = json_object_get(item, f->keys[i]);
		if (!v)
			continue;
		if (n == KB_ARRAY_SIZE(names) || json_is_object(v) || json_is_array(v)) {
			char *s = ssa_item_pe_sorted(f, item);
			int rc = s ? kb_buf_puts(b, s) : -1;

			free(s);
			return rc ? -1 : 0;
		}
		names[n] = f->keys[i];
		vals[n++] = v;
	}
	if (!n)
		return -1;
	/* sorted by insertion: one key or two, most often */
	for (size_t i = 1; i < n; i++) {
		const char *k = names[i];
		const json_t *kv = vals[i];
		size_t j = i;

		for (; j > 0 && strcmp(names[j - 1], k) > 0; j--) {
			names[j] = names[j - 1];
			vals[j] = vals[j - 1];
		}
		names[j] = k;
		vals[j] = kv;
	}
	/* {"key":value,...} as kb_json_dump writes it (the keys are the
	 * schema's merge keys: plain ASCII names) */
	int rc = kb_buf_append(b, "k:{", 3);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t len = strlen(names[i]);

		rc = kb_buf_reserve(b, len + 4);
		if (rc)
			break;
		char *o = b->data + b->len;
		if (i)
			*o++ = ',';
		*o++ = '"';
		memcpy(o, names[i], len);
		o += len;
		*o++ = '"';
		*o++ = ':';
		b->len = (size_t)(o - b->data);
		/* a string as kb_json_dump writes it, without its dispatch */
		if (json_is_string(vals[i]))
			rc = kb_json_put_key(b, NULL, 0, json_string_value(vals[i]),
					     json_string_length(vals[i]));
		else
			rc = kb_json_dump(vals[i], b);
	}
	if (rc == 0)
		rc = kb_buf_append(b, "}", 1);
	if (rc == 0)
		return 0;
	b->len = start;
	if (b->data)
		b->data[start] = '\0';
	return -1;
}

/* "k:{...}" / "v:..." for a list item (malloc'ed); NULL when a map key is
 * missing. */
static char *ssa_item_pe(const struct ssa_field *f, const json_t *item)
{
	struct kb_buf b = {0};

	if (ssa_item_pe_put(f, item, &b) == 0)
		return b.data;
	kb_buf_free(&b);
	return NULL;
}

static char *ssa_field_pe(const char *key)
{
	struct kb_buf b = {0};

	if (kb_buf_printf(&b, "f:%s", key)) {
		kb_buf_free(&b);
		return NULL;
	}
	return b.data;
}

/* Index of the item of list whose path element is pe, or -1. */
static long ssa_find_item(const struct ssa_field *f, const json_t *list, const char *pe)
{
	for (size_t i = 0; i < json_array_size(list); i++) {
		char *q = ssa_item_pe(f, json_array_get(list, i));
		bool same = q && !strcmp(q, pe);

		free(q);
		if (same)
			return (long)i;
	}
	return -1;
}

/* --- field sets (internal form) -------------------------------------- */

/* A child node, created when missing; NULL for a NULL node (a set that
 * cannot gain members on this path, see ssa_cmp_child). */
static json_t *sn_child(json_t *node, const char *pe)
{
	if (!node)
		return NULL;
	json_t *c = json_object_get(node, pe);

	if (!c) {
		c = json_object();
		json_object_set_new(node, pe, c);
	}
	return c;
}

/* Internal member mark: the shared `true` (no allocation); the wire form
 * writes {} (sn_to_v1). */
static void sn_mark(json_t *node)
{
	if (node)
		json_object_set_new(node, ".", json_true());
}

static bool sn_member(const json_t *node)
{
	return json_object_get(node, ".") != NULL;
}

/* Drops child nodes without members; true when node has none left. */
static bool sn_prune(json_t *node)
{
	const char *k;
	json_t *v, *tmp;

	json_object_foreach_safe (node, tmp, k, v) {
		if (strcmp(k, ".") != 0 && sn_prune(v))
			json_object_del(node, k);
	}
	return json_object_size(node) == 0;
}

static json_t *sn_from_v1(const json_t *v1)
{
	json_t *res = json_object();
	const char *k;
	json_t *v;

	if (!res)
		return NULL;
	if (json_object_size(v1) == 0)
		sn_mark(res);
	json_object_foreach ((json_t *)v1, k, v) {
		if (!strcmp(k, "."))
			sn_mark(res);
		else if (json_is_object(v))
			json_object_set_new(res, k, sn_from_v1(v));
	}
	return res;
}

static int sn_strcmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The wire form: leaves are {}, "." only beside children, keys sorted
 * ("." first) as kube serializes FieldsV1. */
static json_t *sn_to_v1(const json_t *node)
{
	size_t n = json_object_size(node), i = 0;
	const char **keys = calloc(n + 1, sizeof(*keys));
	json_t *res = json_object();
	const char *k;
	json_t *v;

	if (!res || !keys) {
		free(keys);
		json_decref(res);
		return NULL;
	}
	json_object_foreach ((json_t *)node, k, v)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), sn_strcmp);
	for (i = 0; i < n; i++) {
		if (strcmp(keys[i], ".") != 0)
			json_object_set_new(res, keys[i], sn_to_v1(json_object_get(node, keys[i])));
		else if (n > 1)
			json_object_set_new(res, ".", json_object());
	}
	free(keys);
	return res;
}

static void sn_union_into(json_t *dst, const json_t *src)
{
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)src, k, v) {
		if (!strcmp(k, "."))
			sn_mark(dst);
		else
			sn_union_into(sn_child(dst, k), v);
	}
}

static json_t *sn_union(const json_t *a, const json_t *b)
{
	json_t *res = json_object();

	if (res) {
		sn_union_into(res, a);
		sn_union_into(res, b);
	}
	return res;
}

/* Members of a that are not members of b (b may be NULL). */
static json_t *sn_diff(const json_t *a, const json_t *b)
{
	json_t *res = json_object();
	const char *k;
	json_t *v;

	if (!res)
		return NULL;
	if (sn_member(a) && !sn_member(b))
		sn_mark(res);
	json_object_foreach ((json_t *)a, k, v) {
		if (!strcmp(k, "."))
			continue;
		json_t *d = sn_diff(v, json_object_get(b, k));
		if (d && json_object_size(d))
			json_object_set_new(res, k, d);
		else
			json_decref(d);
	}
	return res;
}

static json_t *sn_inter(const json_t *a, const json_t *b)
{
	json_t *res = json_object();
	const char *k;
	json_t *v;

	if (!res)
		return NULL;
	if (sn_member(a) && sn_member(b))
		sn_mark(res);
	json_object_foreach ((json_t *)a, k, v) {
		json_t *w = json_object_get(b, k);
		if (!strcmp(k, ".") || !w)
			continue;
		json_t *d = sn_inter(v, w);
		if (d && json_object_size(d))
			json_object_set_new(res, k, d);
		else
			json_decref(d);
	}
	return res;
}

/* Removes the membership of the paths the server manages. */
static void sn_strip(json_t *set)
{
	static const char *const meta[] = {
	    "f:name",        "f:namespace",  "f:creationTimestamp", "f:selfLink",        "f:uid",
	    "f:clusterName", "f:generation", "f:managedFields",     "f:resourceVersion",
	};
	json_t *m = json_object_get(set, "f:metadata");

	json_object_del(json_object_get(set, "f:apiVersion"), ".");
	json_object_del(json_object_get(set, "f:kind"), ".");
	json_object_del(m, ".");
	for (size_t i = 0; i < KB_ARRAY_SIZE(meta); i++)
		json_object_del(json_object_get(m, meta[i]), ".");
	sn_prune(set);
}

/* Human path of a path element: ".x", "[name=\"a\"]", "[=\"v\"]", "[3]". */
static int sn_pe_text(struct kb_buf *b, const char *pe)
{
	if (!strncmp(pe, "f:", 2))
		return kb_buf_printf(b, ".%s", pe + 2);
	if (!strncmp(pe, "v:", 2))
		return kb_buf_printf(b, "[=%s]", pe + 2);
	if (!strncmp(pe, "i:", 2))
		return kb_buf_printf(b, "[%s]", pe + 2);
	json_t *o = json_loads(pe + 2, 0, NULL);
	const char *k;
	json_t *v;
	bool first = true;
	int r = kb_buf_puts(b, "[");

	json_object_foreach (o, k, v) {
		char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		r |= kb_buf_printf(b, "%s%s=%s", first ? "" : ",", k, s ? s : "?");
		free(s);
		first = false;
	}
	json_decref(o);
	return r | kb_buf_puts(b, "]");
}

/* Appends every member path of set (as text) to the array out. */
static void sn_paths(const json_t *node, const char *prefix, json_t *out)
{
	const char *k;
	json_t *v;

	if (sn_member(node))
		json_array_append_new(out, json_string(*prefix ? prefix : "."));
	json_object_foreach ((json_t *)node, k, v) {
		struct kb_buf b = {0};

		if (!strcmp(k, "."))
			continue;
		if (kb_buf_puts(&b, prefix) == 0 && sn_pe_text(&b, k) == 0)
			sn_paths(v, b.data, out);
		kb_buf_free(&b);
	}
}

/* --- walking objects ------------------------------------------------- */

/* The field set of v (an applied configuration) into node. */
static int ssa_to_set(const json_t *v, const struct ssa_field *f, json_t *node, char *err,
		      size_t errlen);

static int ssa_object_to_set(const json_t *v, const struct ssa_field *f, json_t *node, char *err,
			     size_t errlen)
{
	const char *k;
	json_t *cv;

	json_object_foreach ((json_t *)v, k, cv) {
		struct ssa_field cf = ssa_child(f, k);
		char *pe = ssa_field_pe(k);
		int r;

		if (json_is_null(cv)) {
			free(pe);
			continue;
		}
		r = pe ? ssa_to_set(cv, &cf, sn_child(node, pe), err, errlen) : -ENOMEM;
		free(pe);
		if (r)
			return r;
	}
	return 0;
}

static int ssa_to_set(const json_t *v, const struct ssa_field *f, json_t *node, char *err,
		      size_t errlen)
{
	enum ssa_kind kind = ssa_kind(f, v);

	if ((kind == SK_OBJECT && json_object_size(v) == 0) ||
	    ((kind == SK_SET || kind == SK_MAP) && json_array_size(v) == 0) || kind == SK_SCALAR ||
	    kind == SK_ATOMIC) {
		sn_mark(node);
		return 0;
	}
	if (kind == SK_OBJECT)
		return ssa_object_to_set(v, f, node, err, errlen);
	for (size_t i = 0; i < json_array_size(v); i++) {
		const json_t *item = json_array_get(v, i);
		char *pe = ssa_item_pe(f, item);
		struct ssa_field ef = ssa_elem(f);
		json_t *in;
		int r = 0;

		if (!pe)
			return kb_errf(
			    err, errlen, -EINVAL,
			    "associative list with keys has an element that omits key field \"%s\"",
			    f->keys ? f->keys[0] : "?");
		in = sn_child(node, pe);
		free(pe);
		sn_mark(in);
		if (kind == SK_MAP && json_is_object(item))
			r = ssa_object_to_set(item, &ef, in, err, errlen);
		if (r)
			return r;
	}
	return 0;
}

/* Differences between l and r, as sets of paths. */
struct ssa_cmp {
	json_t *added, *modified, *removed;
};

static void ssa_compare(const json_t *l, const json_t *r, const struct ssa_field *f,
			struct ssa_cmp *c);

/* The child sets of path element pe. Where the left (old) value is absent
 * nothing below can be modified or removed, and where the right (new) one
 * is absent nothing can be added or modified: those sets stay NULL instead
 * of growing empty trees that are pruned afterwards. */
static struct ssa_cmp ssa_cmp_child(struct ssa_cmp *c, const char *pe, bool has_l, bool has_r)
{
	struct ssa_cmp d = {has_r ? sn_child(c->added, pe) : NULL,
			    has_l && has_r ? sn_child(c->modified, pe) : NULL,
			    has_l ? sn_child(c->removed, pe) : NULL};
	return d;
}

static void ssa_compare_objects(const json_t *l, const json_t *r, const struct ssa_field *f,
				struct ssa_cmp *c)
{
	const json_t *sides[2] = {r, l};
	const char *k;
	json_t *v;

	if (f->is_map && !l)
		sn_mark(c->added);
	if (f->is_map && !r)
		sn_mark(c->removed);
	for (int s = 0; s < 2; s++) {
		json_object_foreach ((json_t *)sides[s], k, v) {
			struct ssa_field cf;
			struct ssa_cmp d;
			char *pe;

			if (s == 1 && json_object_get(r, k))
				continue; /* already compared from r */
			cf = ssa_child(f, k);
			pe = ssa_field_pe(k);
			if (!pe)
				continue;
			d = ssa_cmp_child(c, pe, json_object_get(l, k) != NULL,
					  json_object_get(r, k) != NULL);
			free(pe);
			ssa_compare(json_object_get(l, k), json_object_get(r, k), &cf, &d);
		}
	}
}

static void ssa_compare_items(const json_t *l, const json_t *r, const struct ssa_field *f,
			      struct ssa_cmp *c)
{
	struct ssa_field ef = ssa_elem(f);

	for (size_t i = 0; i < json_array_size(r); i++) {
		const json_t *ri = json_array_get(r, i);
		char *pe = ssa_item_pe(f, ri);
		long at = pe ? ssa_find_item(f, l, pe) : -1;
		const json_t *li = at >= 0 ? json_array_get(l, (size_t)at) : NULL;
		struct ssa_cmp d;

		if (!pe)
			continue;
		d = ssa_cmp_child(c, pe, li != NULL, true);
		free(pe);
		if (!li)
			sn_mark(d.added);
		if (f->list == SK_MAP)
			ssa_compare_objects(li, ri, &ef, &d);
	}
	for (size_t i = 0; i < json_array_size(l); i++) {
		const json_t *li = json_array_get(l, i);
		char *pe = ssa_item_pe(f, li);
		struct ssa_cmp d;

		if (!pe || ssa_find_item(f, r, pe) >= 0) {
			free(pe);
			continue;
		}
		d = ssa_cmp_child(c, pe, true, false);
		free(pe);
		sn_mark(d.removed);
		if (f->list == SK_MAP)
			ssa_compare_objects(li, NULL, &ef, &d);
	}
}

static bool ssa_empty_container(const json_t *v)
{
	return !v || (json_is_object(v) && json_object_size(v) == 0) ||
	       (json_is_array(v) && json_array_size(v) == 0);
}

static void ssa_compare(const json_t *l, const json_t *r, const struct ssa_field *f,
			struct ssa_cmp *c)
{
	enum ssa_kind kl = ssa_kind(f, l), kr = ssa_kind(f, r);
	enum ssa_kind k = kl ? kl : kr;
	bool same = !kl || !kr || kl == kr;

	if (!kl && !kr)
		return;
	if (same && (k == SK_OBJECT || k == SK_SET || k == SK_MAP) &&
	    !(ssa_empty_container(l) && ssa_empty_container(r))) {
		if (k == SK_OBJECT)
			ssa_compare_objects(l, r, f, c);
		else
			ssa_compare_items(l, r, f, c);
		return;
	}
	if (!l)
		sn_mark(c->added);
	else if (!r)
		sn_mark(c->removed);
	else if (!json_equal(l, r))
		sn_mark(c->modified);
}

/* Merges an applied configuration into live (new value, NULL on ENOMEM). */
static json_t *ssa_merge(const json_t *live, const json_t *cfg, const struct ssa_field *f);

static json_t *ssa_merge_objects(const json_t *live, const json_t *cfg, const struct ssa_field *f)
{
	json_t *res = json_deep_copy(live);
	const char *k;
	json_t *cv;

	json_object_foreach ((json_t *)cfg, k, cv) {
		struct ssa_field cf = ssa_child(f, k);

		if (!res)
			return NULL;
		if (json_is_null(cv)) {
			json_object_del(res, k);
			continue;
		}
		json_object_set_new(res, k, ssa_merge(json_object_get(res, k), cv, &cf));
	}
	return res;
}

static json_t *ssa_merge_items(const json_t *live, const json_t *cfg, const struct ssa_field *f)
{
	json_t *res = json_deep_copy(live);
	struct ssa_field ef = ssa_elem(f);

	for (size_t i = 0; res && i < json_array_size(cfg); i++) {
		json_t *ci = json_array_get(cfg, i);
		char *pe = ssa_item_pe(f, ci);
		long at = pe ? ssa_find_item(f, res, pe) : -1;

		free(pe);
		if (at < 0)
			json_array_append_new(res, json_deep_copy(ci));
		else if (f->list == SK_MAP)
			json_array_set_new(res, (size_t)at,
					   ssa_merge(json_array_get(res, (size_t)at), ci, &ef));
	}
	return res;
}

static json_t *ssa_merge(const json_t *live, const json_t *cfg, const struct ssa_field *f)
{
	enum ssa_kind kl = ssa_kind(f, live), kc = ssa_kind(f, cfg);

	if (kl == kc && kc == SK_OBJECT)
		return ssa_merge_objects(live, cfg, f);
	if (kl == kc && (kc == SK_SET || kc == SK_MAP))
		return ssa_merge_items(live, cfg, f);
	return json_deep_copy(cfg);
}

/*
 * Removes from val the members of rm that nobody keeps (keep: union of the
 * final sets of every manager). Containers emptied by the removal go too.
 */
static void ssa_prune(json_t *val, const json_t *rm, const json_t *keep, const struct ssa_field *f)
{
	const char *pe;
	json_t *rn;

	json_object_foreach ((json_t *)rm, pe, rn) {
		const json_t *kn = json_object_get(keep, pe);
		struct ssa_field cf;
		json_t *cv;
		long at = -1;

		if (!strcmp(pe, "."))
			continue;
		if (json_is_object(val) && !strncmp(pe, "f:", 2)) {
			cf = ssa_child(f, pe + 2);
			cv = json_object_get(val, pe + 2);
		} else if (json_is_array(val) && (f->list == SK_MAP || f->list == SK_SET)) {
			cf = ssa_elem(f);
			at = ssa_find_item(f, val, pe);
			cv = at >= 0 ? json_array_get(val, (size_t)at) : NULL;
		} else {
			continue;
		}
		if (!cv)
			continue;
		if (sn_member(rn) && !kn) {
			if (at >= 0)
				json_array_remove(val, (size_t)at);
			else
				json_object_del(val, pe + 2);
			continue;
		}
		if (ssa_empty_container(cv))
			continue;
		ssa_prune(cv, rn, kn, &cf);
		if (ssa_empty_container(cv) && !kn) {
			if (at >= 0)
				json_array_remove(val, (size_t)at);
			else
				json_object_del(val, pe + 2);
		}
	}
}

/* --- managers ------------------------------------------------------- */

static void ssa_mgrs_free(struct ssa_mgrs *ms)
{
	for (size_t i = 0; i < ms->n; i++) {
		json_decref(ms->v[i].entry);
		json_decref(ms->v[i].set);
	}
	free(ms->v);
	ms->v = NULL;
	ms->n = 0;
}

static int ssa_mgrs_add(struct ssa_mgrs *ms, json_t *entry /* stolen */, json_t *set /* stolen */)
{
	struct ssa_mgr *v = realloc(ms->v, (ms->n + 1) * sizeof(*v));

	if (!v || !entry || !set) {
		json_decref(entry);
		json_decref(set);
		if (v)
			ms->v = v;
		return -ENOMEM;
	}
	ms->v = v;
	ms->v[ms->n].entry = entry;
	ms->v[ms->n].set = set;
	ms->n++;
	return 0;
}

static int ssa_mgrs_load(const json_t *obj, struct ssa_mgrs *ms)
{
	const json_t *mf = json_object_get(json_object_get(obj, "metadata"), "managedFields");
	json_t *e;
	size_t i;

	json_array_foreach (mf, i, e) {
		json_t *copy, *set, *v1 = json_object_get(e, "fieldsV1");
		size_t len;
		const char *text = kb_json_raw_text(v1, &len);

		if (!json_is_object(e) || !json_string_value(json_object_get(e, "manager")))
			continue;
		/* a create's fieldsV1 is kept as its text (ssa_track_create) */
		v1 = text ? kb_json_loadb(text, len, 0, NULL) : json_incref(v1);
		if (text && !v1)
			return -ENOMEM;
		copy = json_deep_copy(e);
		/* no fieldsV1, or {}: the empty set (kube's EmptyFields) */
		set = json_object_size(v1) ? sn_from_v1(v1) : json_object();
		json_decref(v1);
		if (copy) {
			json_object_del(copy, "fieldsV1");
			if (set)
				sn_prune(set);
		}
		if (ssa_mgrs_add(ms, copy, set))
			return -ENOMEM;
	}
	return 0;
}

static const char *ssa_str(const json_t *e, const char *k)
{
	const char *s = json_string_value(json_object_get(e, k));
	return s ? s : "";
}

static long ssa_mgrs_find(const struct ssa_mgrs *ms, const char *manager, const char *op,
			  const char *sub)
{
	for (size_t i = 0; i < ms->n; i++) {
		const json_t *e = ms->v[i].entry;
		if (!strcmp(ssa_str(e, "manager"), manager) &&
		    !strcmp(ssa_str(e, "operation"), op) &&
		    !strcmp(ssa_str(e, "subresource"), sub ? sub : ""))
			return (long)i;
	}
	return -1;
}

/* {"manager":manager,"operation":op,"apiVersion":api_version or ""}, as
 * json_pack("{s:s, s:s, s:s}") made it without parsing its format on every
 * write: NULL on ENOMEM or a value that is not UTF-8. */
static json_t *ssa_entry(const char *manager, const char *op, const char *api_version)
{
	json_t *e = json_object(), *m = json_string(manager), *o = json_string(op);
	json_t *a = json_string(api_version ? api_version : "");

	if (!e || !m || !o || !a) {
		json_decref(e);
		json_decref(m);
		json_decref(o);
		json_decref(a);
		return NULL;
	}
	if (json_object_set_new_nocheck(e, "manager", m) ||
	    json_object_set_new_nocheck(e, "operation", o) ||
	    json_object_set_new_nocheck(e, "apiVersion", a)) {
		json_decref(e);
		return NULL;
	}
	return e;
}

/* The entry of (manager, op, subresource: NULL or "" for the object
 * itself), created empty when missing; -1 on ENOMEM. kube keeps a
 * manager's writes through /status or /scale in entries of their own. */
static long ssa_mgrs_get(struct ssa_mgrs *ms, const char *manager, const char *op,
			 const char *api_version, const char *sub)
{
	long at = ssa_mgrs_find(ms, manager, op, sub);
	json_t *e;

	if (at >= 0)
		return at;
	e = ssa_entry(manager, op, api_version);
	if (e && sub && *sub)
		json_object_set_new(e, "subresource", json_string(sub));
	if (ssa_mgrs_add(ms, e, json_object()))
		return -1;
	return (long)ms->n - 1;
}

static int ssa_entry_cmp(const void *a, const void *b)
{
	const json_t *p = *(json_t *const *)a, *q = *(json_t *const *)b;
	static const char *const keys[] = {"operation", "time", "manager", "apiVersion",
					   "subresource"};

	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		int c = strcmp(ssa_str(p, keys[i]), ssa_str(q, keys[i]));
		if (c)
			return c;
	}
	return 0;
}

/* Writes the managers into obj's metadata.managedFields, kube's order. */
static int ssa_mgrs_store(const struct ssa_mgrs *ms, json_t *obj)
{
	json_t *meta = json_object_get(obj, "metadata"), *arr = json_array();
	json_t **tmp = calloc(ms->n + 1, sizeof(*tmp));
	size_t n = 0;

	if (!arr || !tmp || !json_is_object(meta)) {
		json_decref(arr);
		free(tmp);
		return json_is_object(meta) ? -ENOMEM : 0;
	}
	for (size_t i = 0; i < ms->n; i++) {
		json_t *e;

		if (sn_prune(ms->v[i].set))
			continue;
		e = json_deep_copy(ms->v[i].entry);
		json_object_set_new(e, "fieldsType", json_string("FieldsV1"));
		json_object_set_new(e, "fieldsV1", sn_to_v1(ms->v[i].set));
		tmp[n++] = e;
	}
	qsort(tmp, n, sizeof(*tmp), ssa_entry_cmp);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, tmp[i]);
	free(tmp);
	if (n)
		json_object_set_new(meta, "managedFields", arr);
	else {
		json_object_del(meta, "managedFields");
		json_decref(arr);
	}
	return 0;
}

static void ssa_touch(struct ssa_mgr *m, const char *now, const char *api_version)
{
	if (now)
		json_object_set_new(m->entry, "time", json_string(now));
	if (api_version)
		json_object_set_new(m->entry, "apiVersion", json_string(api_version));
}

/* --- apply ---------------------------------------------------------- */

/* A copy of obj without the metadata the server manages. */
static json_t *ssa_bare(const json_t *obj, bool all_server_fields)
{
	static const char *const drop[] = {"managedFields",     "resourceVersion", "uid",
					   "creationTimestamp", "generation",      "selfLink"};
	json_t *c = obj ? json_deep_copy(obj) : json_object();
	json_t *meta = json_object_get(c, "metadata");

	for (size_t i = 0; i < (all_server_fields ? KB_ARRAY_SIZE(drop) : 1); i++)
		json_object_del(meta, drop[i]);
	return c;
}

static struct ssa_field ssa_root(const char *msg_name)
{
	struct ssa_field f = {0};

	f.msg = msg_name ? kt_find(msg_name) : NULL;
	f.list = SK_ATOMIC;
	return f;
}

/* "\"name\"" or "\"name\" using apps/v1" for an Update manager. */
static char *ssa_mgr_text(const json_t *e)
{
	struct kb_buf b = {0};

	kb_buf_printf(&b, "\"%s\"", ssa_str(e, "manager"));
	if (*ssa_str(e, "subresource"))
		kb_buf_printf(&b, " with subresource \"%s\"", ssa_str(e, "subresource"));
	if (!strcmp(ssa_str(e, "operation"), "Update"))
		kb_buf_printf(&b, " using %s", ssa_str(e, "apiVersion"));
	return b.data;
}

/* Builds the conflict list and kube's message from per-manager sets. */
static int ssa_conflicts(const struct ssa_mgrs *ms, json_t *const *sets, json_t **out, char *err,
			 size_t errlen)
{
	json_t *list = json_array();
	struct kb_buf msg = {0};
	size_t total = 0;

	for (size_t i = 0; i < ms->n; i++) {
		json_t *paths = json_array();
		char *who = ssa_mgr_text(ms->v[i].entry);
		size_t j;
		json_t *p;

		if (sets[i])
			sn_paths(sets[i], "", paths);
		if (json_array_size(paths))
			kb_buf_printf(&msg, "%sconflicts with %s:", msg.len ? "\n" : "",
				      who ? who : "");
		json_array_foreach (paths, j, p) {
			char m[512];

			snprintf(m, sizeof(m), "conflict with %s", who ? who : "");
			json_array_append_new(
			    list, json_pack("{s:O, s:s, s:s}", "field", p, "manager",
					    ssa_str(ms->v[i].entry, "manager"), "message", m));
			kb_buf_printf(&msg, "\n- %s", json_string_value(p));
			total++;
		}
		free(who);
		json_decref(paths);
	}
	if (total == 1) {
		json_t *c = json_array_get(list, 0);
		kb_errf(err, errlen, -EBUSY, "Apply failed with 1 conflict: %s: %s",
			ssa_str(c, "message"), ssa_str(c, "field"));
	} else {
		kb_errf(err, errlen, -EBUSY, "Apply failed with %zu conflicts: %s", total,
			msg.data ? msg.data : "");
	}
	kb_buf_free(&msg);
	if (out)
		*out = list;
	else
		json_decref(list);
	return -EBUSY;
}

/* The manager "before-first-apply" owning everything of an untracked live. */
static int ssa_before_first_apply(struct ssa_mgrs *ms, const json_t *live_bare,
				  const struct ssa_field *root, const char *api_version)
{
	long at;
	int r;

	if (ms->n)
		return 0;
	at = ssa_mgrs_get(ms, "before-first-apply", "Update", api_version, NULL);
	if (at < 0)
		return -ENOMEM;
	r = ssa_to_set(live_bare, root, ms->v[at].set, NULL, 0);
	sn_strip(ms->v[at].set);
	return r == -EINVAL ? 0 : r;
}

/* Whether any conflict of c (one set per manager) is not in `allowed`
 * (NULL: none is); the allowed ones are taken out of c when some remain,
 * as kube's conflictsDifference reports only those. */
static bool ssa_conflicts_left(const struct ssa_mgrs *ms, long me, json_t **c,
			       const json_t *allowed)
{
	bool left = false;

	for (size_t i = 0; i < ms->n; i++) {
		json_t *d;

		if ((long)i == me || !c[i])
			continue;
		d = allowed ? sn_diff(c[i], allowed) : json_incref(c[i]);
		if (d && !sn_prune(d))
			left = true;
		json_decref(c[i]);
		c[i] = d;
	}
	return left;
}

/* Conflict detection and ownership transfer after the merge. Conflicts on
 * paths of `allowed` (NULL: none; kubectl's last-applied configuration, see
 * ssa_last_applied_allowed) are taken over as if forced, when they are the
 * only ones. */
static int ssa_settle(struct ssa_mgrs *ms, long me, const struct ssa_cmp *cmp, bool force,
		      const json_t *allowed, json_t **conflicts, char *err, size_t errlen)
{
	json_t *changed = sn_union(cmp->added, cmp->modified);
	json_t **c = calloc(ms->n, sizeof(*c));
	bool any = false;
	int r = 0;

	if (!changed || !c) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ms->n; i++) {
		if ((long)i == me)
			continue;
		c[i] = sn_inter(ms->v[i].set, changed);
		if (c[i] && !sn_prune(c[i]))
			any = true;
	}
	if (any && !force) {
		json_t **all = calloc(ms->n, sizeof(*all));

		if (!all) {
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < ms->n; i++)
			all[i] = json_incref(c[i]);
		if (ssa_conflicts_left(ms, me, all, allowed))
			r = ssa_conflicts(ms, all, conflicts, err, errlen);
		for (size_t i = 0; i < ms->n; i++)
			json_decref(all[i]);
		free(all);
		if (r)
			goto out;
	}
	for (size_t i = 0; i < ms->n; i++) {
		json_t *a, *b;

		if ((long)i == me)
			continue;
		a = sn_diff(ms->v[i].set, c[i]);
		b = a ? sn_diff(a, cmp->removed) : NULL;
		json_decref(a);
		if (!b) {
			r = -ENOMEM;
			goto out;
		}
		json_decref(ms->v[i].set);
		ms->v[i].set = b;
	}
out:
	for (size_t i = 0; c && i < ms->n; i++)
		json_decref(c[i]);
	free(c);
	json_decref(changed);
	return r;
}

static void ssa_cmp_free(struct ssa_cmp *c)
{
	json_decref(c->added);
	json_decref(c->modified);
	json_decref(c->removed);
}

static int ssa_cmp_run(const json_t *l, const json_t *r, const struct ssa_field *root,
		       struct ssa_cmp *c)
{
	c->added = json_object();
	c->modified = json_object();
	c->removed = json_object();
	if (!c->added || !c->modified || !c->removed)
		return -ENOMEM;
	ssa_compare(l, r, root, c);
	sn_strip(c->added);
	sn_strip(c->modified);
	sn_strip(c->removed);
	return 0;
}

/* Removes what the applier dropped since its last apply, unless kept. */
static int ssa_prune_dropped(json_t *merged, const struct ssa_mgrs *ms, const json_t *last,
			     const json_t *now_set, const struct ssa_field *root)
{
	json_t *rm = sn_diff(last, now_set), *keep = json_object();

	if (!rm || !keep) {
		json_decref(rm);
		json_decref(keep);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ms->n; i++)
		sn_union_into(keep, ms->v[i].set);
	ssa_prune(merged, rm, keep, root);
	json_decref(rm);
	json_decref(keep);
	return 0;
}

/* --- kubectl's client-side apply ----------------------------------- */

#define SSA_LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"
/* kube's TotalAnnotationSizeLimitB (apimachinery ValidateAnnotationsSize). */
#define SSA_ANNOTATIONS_MAX (256 * 1024)

/*
 * The fields the manager "kubectl" may take over without force from an
 * object last written by `kubectl apply` (client-side): those of the
 * last-applied configuration annotation whose value live still has (kube's
 * lastAppliedManager.allowedConflictsFromLastApplied, apimachinery
 * pkg/util/managedfields/internal/lastappliedmanager.go: the annotation's
 * field set less what its comparison with live finds modified, added or
 * removed). NULL when there is no such annotation, it is not JSON, or it
 * is of another apiVersion. New reference.
 */
static json_t *ssa_last_applied_allowed(const json_t *live, const char *api_version,
					const struct ssa_field *root)
{
	const char *text = json_string_value(json_object_get(
	    json_object_get(json_object_get(live, "metadata"), "annotations"), SSA_LAST_APPLIED));
	json_t *la = text && *text ? json_loads(text, 0, NULL) : NULL;
	json_t *bare = NULL, *lv = NULL, *set = NULL, *res = NULL;
	struct ssa_cmp c = {0};

	if (!json_is_object(la) || !api_version ||
	    strcmp(ssa_str(la, "apiVersion"), api_version) != 0)
		goto out;
	bare = ssa_bare(la, true);
	lv = ssa_bare(live, false);
	set = json_object();
	if (!bare || !lv || !set || ssa_to_set(bare, root, set, NULL, 0) ||
	    ssa_cmp_run(bare, lv, root, &c))
		goto out;
	json_t *a = sn_diff(set, c.modified), *b = a ? sn_diff(a, c.added) : NULL;
	res = b ? sn_diff(b, c.removed) : NULL;
	json_decref(a);
	json_decref(b);
out:
	ssa_cmp_free(&c);
	json_decref(set);
	json_decref(lv);
	json_decref(bare);
	json_decref(la);
	return res;
}

/* The annotations' total size as kube's ValidateAnnotationsSize counts it. */
static size_t ssa_annotations_size(const json_t *ann)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	json_object_foreach ((json_t *)ann, k, v)
		n += strlen(k) + strlen(json_string_value(v) ? json_string_value(v) : "");
	return n;
}

/* text as Go's json.Encoder writes it (SetEscapeHTML's default): '<',
 * '>', '&', U+2028 and U+2029 as \u escapes. They only occur inside JSON
 * strings, where the escapes mean the same characters. */
static int ssa_go_json_escape(struct kb_buf *b, const char *text)
{
	int r = 0;

	for (const char *p = text; *p && !r; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '<' || c == '>' || c == '&')
			r = kb_buf_printf(b, "\\u%04x", c);
		else if (c == 0xe2 && (unsigned char)p[1] == 0x80 &&
			 ((unsigned char)p[2] == 0xa8 || (unsigned char)p[2] == 0xa9)) {
			r = kb_buf_printf(b, "\\u%04x",
					  (unsigned char)p[2] == 0xa8 ? 0x2028 : 0x2029);
			p += 2;
		} else {
			r = kb_buf_append(b, p, 1);
		}
	}
	return r;
}

/*
 * After an apply by "kubectl" to an object that keeps a last-applied
 * configuration annotation: the annotation becomes the applied
 * configuration (without that annotation), so that a later client-side
 * apply computes its patch from it (kube's lastAppliedUpdater.Apply and
 * buildLastApplied: the object encoded as JSON, keys sorted, with the
 * encoder's final newline). Dropped when the annotations would outgrow
 * kube's limit (SetLastApplied). Returns 0 or -ENOMEM.
 */
static int ssa_last_applied_update(json_t *merged, const json_t *applied)
{
	json_t *ann = json_object_get(json_object_get(merged, "metadata"), "annotations");
	const char *cur = json_string_value(json_object_get(ann, SSA_LAST_APPLIED));
	json_t *copy, *cann;
	char *text;
	struct kb_buf b = {0};

	if (!cur || !*cur)
		return 0;
	copy = json_deep_copy(applied);
	if (!copy)
		return -ENOMEM;
	cann = json_object_get(json_object_get(copy, "metadata"), "annotations");
	json_object_del(cann, SSA_LAST_APPLIED);
	if (json_is_object(cann) && !json_object_size(cann))
		json_object_del(json_object_get(copy, "metadata"), "annotations");
	text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(copy);
	if (!text || ssa_go_json_escape(&b, text) || kb_buf_puts(&b, "\n")) {
		free(text);
		kb_buf_free(&b);
		return -ENOMEM;
	}
	free(text);
	json_object_set_new(ann, SSA_LAST_APPLIED, json_string(b.data));
	kb_buf_free(&b);
	if (ssa_annotations_size(ann) > SSA_ANNOTATIONS_MAX)
		json_object_del(ann, SSA_LAST_APPLIED);
	return 0;
}

struct ssa_apply {
	json_t *live, *cfg, *merged, *set, *last;
	struct ssa_mgrs ms;
	struct ssa_cmp cmp;
};

static void ssa_apply_free(struct ssa_apply *a)
{
	json_decref(a->live);
	json_decref(a->cfg);
	json_decref(a->merged);
	json_decref(a->set);
	json_decref(a->last);
	ssa_mgrs_free(&a->ms);
	ssa_cmp_free(&a->cmp);
}

static int ssa_apply_prepare(struct ssa_apply *a, const json_t *live, const json_t *applied,
			     const struct ssa_field *root, const char *api_version, char *err,
			     size_t errlen)
{
	int r;

	a->live = ssa_bare(live, false);
	a->cfg = ssa_bare(applied, true);
	a->set = json_object();
	if (!a->live || !a->cfg || !a->set)
		return -ENOMEM;
	r = ssa_to_set(a->cfg, root, a->set, err, errlen);
	if (r)
		return r;
	sn_strip(a->set);
	r = ssa_mgrs_load(live, &a->ms);
	if (!r && live)
		r = ssa_before_first_apply(&a->ms, a->live, root, api_version);
	if (r)
		return r;
	a->merged = ssa_merge(a->live, a->cfg, root);
	return a->merged ? 0 : -ENOMEM;
}

int patch_apply(const json_t *live, const json_t *applied, const char *msg_name,
		const char *manager, bool force, const char *now_rfc3339, json_t **out,
		json_t **conflicts, char *err, size_t errlen)
{
	return patch_apply_sub(live, applied, msg_name, manager, NULL, force, now_rfc3339, out,
			       conflicts, err, errlen);
}

int patch_apply_sub(const json_t *live, const json_t *applied, const char *msg_name,
		    const char *manager, const char *subresource, bool force,
		    const char *now_rfc3339, json_t **out, json_t **conflicts, char *err,
		    size_t errlen)
{
	struct ssa_apply a = {0};
	struct ssa_field root = ssa_root(msg_name);
	json_t *allowed = NULL;
	const char *api_version = json_string_value(json_object_get(applied, "apiVersion"));
	long me;
	int r;

	if (!json_is_object(applied))
		return kb_errf(err, errlen, -EINVAL, "apply patch must be a JSON or YAML object");
	if (!api_version || !json_string_value(json_object_get(applied, "kind")))
		return kb_errf(err, errlen, -EINVAL, "apply patch must set apiVersion and kind");
	if (!manager || !*manager)
		return kb_errf(err, errlen, -EINVAL, "PATCH with apply requires a fieldManager");
	r = ssa_apply_prepare(&a, live, applied, &root, api_version, err, errlen);
	if (r)
		goto out;
	me = ssa_mgrs_get(&a.ms, manager, "Apply", api_version, subresource);
	if (me < 0) {
		r = -ENOMEM;
		goto out;
	}
	a.last = a.ms.v[me].set;
	a.ms.v[me].set = json_incref(a.set);
	r = ssa_prune_dropped(a.merged, &a.ms, a.last, a.set, &root);
	if (!r)
		r = ssa_cmp_run(a.live, a.merged, &root, &a.cmp);
	/* kubectl taking a client-side applied object over (kube's
	 * lastAppliedManager/lastAppliedUpdater, for the manager "kubectl"
	 * only, as there) */
	if (!r && live && !force && !(subresource && *subresource) && !strcmp(manager, "kubectl"))
		allowed = ssa_last_applied_allowed(live, api_version, &root);
	if (!r)
		r = ssa_settle(&a.ms, me, &a.cmp, force, allowed, conflicts, err, errlen);
	if (!r && !(subresource && *subresource) && !strcmp(manager, "kubectl"))
		r = ssa_last_applied_update(a.merged, applied);
	if (r)
		goto out;
	if (!json_equal(a.live, a.merged) || !json_equal(a.last, a.set) ||
	    !json_object_get(a.ms.v[me].entry, "time"))
		ssa_touch(&a.ms.v[me], now_rfc3339, api_version);
	r = ssa_mgrs_store(&a.ms, a.merged);
	if (!r) {
		*out = a.merged;
		a.merged = NULL;
	}
out:
	json_decref(allowed);
	ssa_apply_free(&a);
	return r;
}

/* --- create: one walk ------------------------------------------------ */

/*
 * A create's field set is every field of the new object (its comparison
 * with nothing): it is built here in one walk of the object into plain
 * nodes and written once in the FieldsV1 wire form, instead of copying the
 * object, comparing it with {} and combining intermediate JSON trees. The
 * walk mirrors ssa_compare(NULL, obj) for the added side, then sn_strip.
 */
struct fs_node {
	char kind; /* path element type: 'f', 'k', 'v' or 'i' */
	bool member;
	bool shared;      /* a repeated list item's: its fields may repeat */
	uint32_t len;     /* of name */
	const char *name; /* after "<kind>:": an object key (borrowed) or own + 2 */
	char *own;        /* the path element of a list item (in the arena), or NULL */
	struct fs_node *kids;
	size_t n, cap;
};

/*
 * Where a create's field set lives: its nodes' children and list items'
 * path elements are carved from chunks freed at once (a pod's set has some
 * hundred nodes; freeing them one by one cost more than making them). The
 * first chunk is the caller's (on its stack); a child array that grows is
 * copied, the old one left in its chunk.
 */
struct fs_arena {
	char *p;       /* free space of the current chunk */
	size_t left;   /* its bytes */
	void **chunks; /* malloc'ed chunks, each starting with the previous' address */
};

#define FS_CHUNK 16384

/* size bytes (8-aligned) from the arena, or NULL on ENOMEM. */
static void *fs_alloc(struct fs_arena *a, size_t size)
{
	size = (size + 7) & ~(size_t)7;
	if (size > a->left) {
		size_t want = size + sizeof(void *) > FS_CHUNK ? size + sizeof(void *) : FS_CHUNK;
		void **c = malloc(want);

		if (!c)
			return NULL;
		c[0] = a->chunks;
		a->chunks = c;
		a->p = (char *)(c + 1);
		a->left = want - sizeof(void *);
	}
	void *r = a->p;

	a->p += size;
	a->left -= size;
	return r;
}

static void fs_arena_free(struct fs_arena *a)
{
	while (a->chunks) {
		void **next = a->chunks[0];
		free(a->chunks);
		a->chunks = next;
	}
}

/* Room for `more` children at once (the keys of an object, the items of a
 * list), or for one more (doubling); 0 or -ENOMEM. */
static int fs_reserve(struct fs_arena *a, struct fs_node *node, size_t more)
{
	if (node->n + more <= node->cap)
		return 0;

	size_t cap = node->n + more;

	if (more == 1 && cap < 2 * node->cap)
		cap = 2 * node->cap;
	if (cap < 4)
		cap = 4;

	struct fs_node *k = fs_alloc(a, cap * sizeof(*k));

	if (!k)
		return -ENOMEM;
	if (node->n)
		memcpy(k, node->kids, node->n * sizeof(*k));
	node->kids = k;
	node->cap = cap;
	return 0;
}

/* The child (kind, name); list items (own != NULL) may repeat and then
 * share their node. NULL on ENOMEM. */
static struct fs_node *fs_kid(struct fs_arena *a, struct fs_node *node, char kind, const char *name,
			      size_t len, char *own)
{
	for (size_t i = 0; own && i < node->n; i++) {
		struct fs_node *k = &node->kids[i];

		if (k->kind == kind && k->len == len && !memcmp(k->name, name, len)) {
			k->shared = true;
			return k;
		}
	}
	if (fs_reserve(a, node, 1))
		return NULL;

	struct fs_node *c = &node->kids[node->n++];

	*c = (struct fs_node){.kind = kind, .name = name, .len = (uint32_t)len, .own = own};
	return c;
}

static struct fs_node *fs_find(struct fs_node *node, const char *field)
{
	for (size_t i = 0; node && i < node->n; i++)
		if (node->kids[i].kind == 'f' && !strcmp(node->kids[i].name, field))
			return &node->kids[i];
	return NULL;
}

/* A create's walk: the arena of its field set, and scratch for list
 * items' path elements. */
struct fs_walk {
	struct fs_arena a;
	struct kb_buf pe;
};

static int fs_value(const json_t *v, const struct ssa_field *f, struct fs_node *node,
		    struct fs_walk *w);

/* Drops node's last child when it holds no member (sn_prune as the walk
 * goes: a child is complete once its value was walked). */
static void fs_drop_empty_last(struct fs_node *node)
{
	const struct fs_node *c = &node->kids[node->n - 1];

	if (!c->member && !c->n)
		node->n--;
}

/* ssa_compare_objects(NULL, v): every key is added. `skip` is a key the
 * walk leaves out (metadata.managedFields at the root). */
static int fs_object(const json_t *v, const struct ssa_field *f, struct fs_node *node,
		     const char *skip, struct fs_walk *w)
{
	const char *k;
	json_t *cv;

	if (f->is_map)
		node->member = true;
	if (fs_reserve(&w->a, node, json_object_size(v)))
		return -ENOMEM;
	json_object_foreach ((json_t *)v, k, cv) {
		if (skip && !strcmp(k, skip))
			continue;
		struct ssa_field cf = ssa_child(f, k);
		struct fs_node *c = fs_kid(&w->a, node, 'f', k, strlen(k), NULL);
		if (!c || fs_value(cv, &cf, c, w))
			return -ENOMEM;
		fs_drop_empty_last(node);
	}
	return 0;
}

/* ssa_compare_items(NULL, v): every item is added. */
static int fs_items(const json_t *v, const struct ssa_field *f, struct fs_node *node,
		    struct fs_walk *w)
{
	struct ssa_field ef = ssa_elem(f);
	size_t n = json_array_size(v);

	if (fs_reserve(&w->a, node, n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const json_t *item = json_array_get(v, i);
		struct fs_node *c;
		char *own;

		w->pe.len = 0;
		if (ssa_item_pe_put(f, item, &w->pe))
			continue;
		own = fs_alloc(&w->a, w->pe.len + 1);
		if (!own)
			return -ENOMEM;
		memcpy(own, w->pe.data, w->pe.len + 1);
		c = fs_kid(&w->a, node, own[0], own + 2, w->pe.len - 2, own);
		if (!c)
			return -ENOMEM;
		c->member = true;
		if (f->list == SK_MAP && fs_object(item, &ef, c, NULL, w))
			return -ENOMEM;
	}
	return 0;
}

/* ssa_compare(NULL, v): containers with content are walked, anything else
 * is a member. */
static int fs_value(const json_t *v, const struct ssa_field *f, struct fs_node *node,
		    struct fs_walk *w)
{
	enum ssa_kind k = ssa_kind(f, v);

	if ((k == SK_OBJECT || k == SK_SET || k == SK_MAP) && !ssa_empty_container(v))
		return k == SK_OBJECT ? fs_object(v, f, node, NULL, w) : fs_items(v, f, node, w);
	node->member = true;
	return 0;
}

/* Drops node's children without members or children of their own (the
 * walk dropped every other empty node already). */
static void fs_drop_empty(struct fs_node *node)
{
	size_t keep = 0;

	for (size_t i = 0; node && i < node->n; i++)
		if (node->kids[i].member || node->kids[i].n)
			node->kids[keep++] = node->kids[i];
	if (node)
		node->n = keep;
}

/* sn_strip, then sn_prune: the paths the server manages are nobody's; as
 * only the root's and metadata's children change, only they are pruned
 * again. True when nothing is left. */
static bool fs_strip(struct fs_node *root)
{
	static const char *const meta[] = {
	    "name",        "namespace",  "creationTimestamp", "selfLink",        "uid",
	    "clusterName", "generation", "managedFields",     "resourceVersion",
	};
	static const char *const top[] = {"apiVersion", "kind", "metadata"};
	struct fs_node *n, *m = fs_find(root, "metadata");

	for (size_t i = 0; i < KB_ARRAY_SIZE(top); i++)
		if ((n = fs_find(root, top[i])))
			n->member = false;
	for (size_t i = 0; i < KB_ARRAY_SIZE(meta); i++)
		if ((n = fs_find(m, meta[i])))
			n->member = false;
	fs_drop_empty(m);
	fs_drop_empty(root);
	return !root->member && !root->n;
}

/* strcmp's order of (kind, name); the first bytes compared here, as most
 * siblings differ there (a call to strcmp cost more than the rest). */
static inline int fs_cmp(const struct fs_node *p, const struct fs_node *q)
{
	unsigned char a = (unsigned char)p->name[0], b = (unsigned char)q->name[0];

	if (p->kind != q->kind)
		return (unsigned char)p->kind - (unsigned char)q->kind;
	if (a != b || !a)
		return a - b;
	return strcmp(p->name + 1, q->name + 1);
}

/* Sorts a node's children by fs_cmp: an insertion sort, as most nodes
 * have a handful (qsort's indirect calls cost more than the sort). */
static void fs_sort(struct fs_node *kids, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct fs_node k = kids[i];
		size_t j = i;

		for (; j > 0 && fs_cmp(&kids[j - 1], &k) > 0; j--)
			kids[j] = kids[j - 1];
		kids[j] = k;
	}
}

/* What one walk of a pruned field set makes: the tree (fs_to_v1), or its
 * text (fs_text; t NULL from the first failure on). */
struct fs_emit {
	struct kb_buf key; /* a child's "k:name" */
	json_t *leaf;
	struct kb_buf *t;
};

/* Appends n bytes to e->t (NUL after them); on failure stops the text. */
static inline void fs_put(struct fs_emit *e, const char *s, size_t n)
{
	struct kb_buf *t = e->t;

	if (!t)
		return;
	if (t->data && t->len + n < t->cap) {
		memcpy(t->data + t->len, s, n);
		t->len += n;
		t->data[t->len] = '\0';
	} else if (kb_buf_append(t, s, n) < 0) {
		e->t = NULL;
	}
}

/* Whether sorted child i of node is left out: a repeated item's fields
 * repeat (fs_kid), the last of equal keys is kept, at the place of the
 * first (they are adjacent). */
static bool fs_repeat(const struct fs_node *node, size_t i)
{
	return node->shared && i + 1 < node->n && fs_cmp(&node->kids[i], &node->kids[i + 1]) == 0;
}

/*
 * The wire form of a pruned node as a tree, as sn_to_v1 writes it. Every
 * empty object in the tree (a leaf, the "." of a member with children) is
 * one shared `leaf`: nothing writes into a fieldsV1 tree after it is made
 * (updates read the stored text and make new trees). The form is kube's
 * (structured-merge-diff fieldpath/serialize.go, Set.emitContentsV1: "."
 * first for a member that has children, then the path elements in order,
 * each leaf {}).
 */
static json_t *fs_to_v1(struct fs_node *node, struct fs_emit *e)
{
	if (!node->n)
		return json_incref(e->leaf);

	json_t *res = json_object();

	if (!res)
		return NULL;
	if (node->member)
		json_object_set(res, ".", e->leaf);
	fs_sort(node->kids, node->n);
	for (size_t i = 0; i < node->n; i++) {
		struct fs_node *k = &node->kids[i];
		size_t n = k->len;
		const char *key = k->own;

		if (fs_repeat(node, i))
			continue;

		json_t *c = fs_to_v1(k, e);

		/* a list item's path element is its key; a field's is made */
		if (c && !key && !kb_buf_reserve(&e->key, n + 2)) {
			e->key.data[0] = k->kind;
			e->key.data[1] = ':';
			memcpy(e->key.data + 2, k->name, n);
			e->key.data[n + 2] = '\0';
			key = e->key.data;
		}
		if (!c || !key || json_object_setn_new_nocheck(res, key, n + 2, c)) {
			json_decref(c);
			json_decref(res);
			return NULL;
		}
	}
	return res;
}

/* The text kb_json_dump writes of fs_to_v1's tree of node, appended to
 * e->t, without the tree (a create's: kb_json_raw). */
static void fs_text(struct fs_node *node, struct fs_emit *e)
{
	if (!node->n) {
		fs_put(e, "{}", 2);
		return;
	}
	fs_put(e, node->member ? "{\".\":{}" : "{", node->member ? 7 : 1);

	bool first = !node->member;

	fs_sort(node->kids, node->n);
	for (size_t i = 0; i < node->n && e->t; i++) {
		struct fs_node *k = &node->kids[i];
		char pfx[2] = {k->kind, ':'};

		if (fs_repeat(node, i))
			continue;
		if (!first)
			fs_put(e, ",", 1);
		first = false;
		if (e->t && kb_json_put_key(e->t, pfx, 2, k->name, k->len))
			e->t = NULL;
		fs_put(e, ":", 1);
		fs_text(k, e);
	}
	fs_put(e, "}", 1);
}

/* The fieldsV1 of a pruned field set: with `raw`, its text as a raw value
 * (kb_json_raw: a create's, written as it is by the store and the
 * answers), else the tree. New reference, or NULL on ENOMEM. */
static json_t *fs_v1(struct fs_node *top, bool raw)
{
	struct fs_emit em = {0};
	struct kb_buf text = {0};
	json_t *v1 = NULL;

	if (raw) {
		em.t = &text;
		fs_text(top, &em);
		v1 = em.t ? kb_json_raw(text.data, text.len) : NULL;
	} else if ((em.leaf = json_object())) {
		v1 = fs_to_v1(top, &em);
		json_decref(em.leaf);
	}
	kb_buf_free(&text);
	kb_buf_free(&em.key);
	return v1;
}

/* patch_track_update(NULL, obj, ...) when obj has a metadata object; with
 * `raw`, the fieldsV1 made is a raw value (fs_v1). */
static int ssa_track_create(json_t *obj, json_t *meta, const struct ssa_field *root,
			    const char *manager, const char *operation, const char *now,
			    const char *api_version, bool raw)
{
	/* a pod's field set fits in the first chunk */
	_Alignas(16) char chunk[8192];
	struct fs_walk w = {.a = {.p = chunk, .left = sizeof(chunk)}};
	struct fs_node top = {0};
	const char *k;
	json_t *v, *e = NULL, *arr = NULL, *v1;
	int ret = -ENOMEM;

	json_object_foreach (obj, k, v) {
		struct ssa_field cf = ssa_child(root, k);
		struct fs_node *c = fs_kid(&w.a, &top, 'f', k, strlen(k), NULL);

		if (!c)
			goto out;
		if (v == meta ? fs_object(v, &cf, c, "managedFields", &w) : fs_value(v, &cf, c, &w))
			goto out;
		fs_drop_empty_last(&top);
	}
	if (fs_strip(&top)) {
		json_object_del(meta, "managedFields");
		ret = 0;
		goto out;
	}
	e = ssa_entry(manager, operation, api_version);
	arr = json_array();
	v1 = fs_v1(&top, raw);
	if (!e || !arr || !v1) {
		json_decref(v1);
		goto out;
	}
	if (now)
		json_object_set_new(e, "time", json_string(now));
	json_object_set_new_nocheck(e, "fieldsType", json_string_nocheck("FieldsV1"));
	json_object_set_new_nocheck(e, "fieldsV1", v1);
	if (json_array_append(arr, e) == 0 && json_object_set(meta, "managedFields", arr) == 0)
		ret = 0;
out:
	json_decref(e);
	json_decref(arr);
	kb_buf_free(&w.pe);
	fs_arena_free(&w.a);
	return ret;
}

/* --- update --------------------------------------------------------- */

/* Whether a writer's managedFields decode as kube's DecodeManagedFields
 * takes them (apimachinery util/managedfields/internal/managedfields.go):
 * objects with operation Apply or Update, an apiVersion, fieldsType
 * FieldsV1 and, when present, an object fieldsV1 and a string manager.
 * Anything else keeps the stored ones. */
static bool ssa_mf_decodes(const json_t *mf)
{
	size_t i;
	json_t *e;

	json_array_foreach (mf, i, e) {
		const char *op = ssa_str(e, "operation");
		json_t *v1 = json_object_get(e, "fieldsV1");
		const json_t *m = json_object_get(e, "manager");
		size_t len;

		/* a raw fieldsV1 is a create's object, kept as its text */
		if (!json_is_object(e) || (strcmp(op, "Apply") != 0 && strcmp(op, "Update") != 0) ||
		    !*ssa_str(e, "apiVersion") ||
		    strcmp(ssa_str(e, "fieldsType"), "FieldsV1") != 0 ||
		    (v1 && !json_is_object(v1) && !kb_json_raw_text(v1, &len)) ||
		    (m && !json_is_string(m)))
			return false;
	}
	return true;
}

/* kube's isResetManagedFields: [] or [{}] (one entry of zero values)
 * starts the ownership over. */
static bool ssa_mf_reset(const json_t *mf)
{
	const json_t *e = json_array_get(mf, 0);
	const char *k;
	json_t *v;

	if (json_array_size(mf) == 0)
		return true;
	if (json_array_size(mf) != 1 || !json_is_object(e))
		return false;
	json_object_foreach ((json_t *)e, k, v)
		if (!json_is_null(v) && !(json_is_string(v) && !*json_string_value(v)))
			return false;
	return true;
}

static int ssa_take(struct ssa_mgrs *ms, long me, const struct ssa_cmp *c)
{
	json_t *changed = sn_union(c->added, c->modified);

	if (!changed)
		return -ENOMEM;
	for (size_t i = 0; i < ms->n; i++) {
		json_t *a, *b;

		a = (long)i == me ? sn_union(ms->v[i].set, changed)
				  : sn_diff(ms->v[i].set, changed);
		b = a ? sn_diff(a, c->removed) : NULL;
		json_decref(a);
		if (!b) {
			json_decref(changed);
			return -ENOMEM;
		}
		json_decref(ms->v[i].set);
		ms->v[i].set = b;
	}
	json_decref(changed);
	return 0;
}

int patch_track_update(const json_t *old, json_t *obj, const char *msg_name, const char *manager,
		       const char *operation, const char *now_rfc3339)
{
	return patch_track_update_sub(old, obj, msg_name, manager, operation, NULL, now_rfc3339);
}

static int ssa_track(const json_t *old, json_t *obj, const char *msg_name, const char *manager,
		     const char *operation, const char *subresource, const char *now_rfc3339,
		     bool raw);

int patch_track_update_sub(const json_t *old, json_t *obj, const char *msg_name,
			   const char *manager, const char *operation, const char *subresource,
			   const char *now_rfc3339)
{
	return ssa_track(old, obj, msg_name, manager, operation, subresource, now_rfc3339, false);
}

int patch_track_create(json_t *obj, const char *msg_name, const char *manager,
		       const char *now_rfc3339, bool raw)
{
	return ssa_track(NULL, obj, msg_name, manager, "Update", NULL, now_rfc3339, raw);
}

static int ssa_track(const json_t *old, json_t *obj, const char *msg_name, const char *manager,
		     const char *operation, const char *subresource, const char *now_rfc3339,
		     bool raw)
{
	struct ssa_field root = ssa_root(msg_name);
	struct ssa_mgrs ms = {0};
	struct ssa_cmp c = {0};
	const char *api_version = json_string_value(json_object_get(obj, "apiVersion"));
	json_t *meta = json_object_get(obj, "metadata");

	/* managedFields the writer sent replace the stored ones (kube's
	 * FieldManager.Update and decodeLiveOrNew: unless the write is through
	 * a subresource, [] and [{}] reset them, entries that decode replace
	 * them, anything else keeps the stored ones) */
	const json_t *mf = json_object_get(meta, "managedFields");
	bool writer = json_is_array(mf) && !(subresource && *subresource);
	bool reset = writer && ssa_mf_reset(mf);
	bool own = writer && !reset && ssa_mf_decodes(mf);
	const json_t *from = reset ? NULL : own ? obj : old;

	if (!old && !own && !reset && json_is_object(obj) && json_is_object(meta))
		return ssa_track_create(obj, meta, &root, manager && *manager ? manager : "unknown",
					operation && *operation ? operation : "Update", now_rfc3339,
					api_version, raw);

	json_t *l = ssa_bare(old, false), *r = ssa_bare(obj, false);
	long me;
	int ret = -ENOMEM;

	if (!l || !r || !json_is_object(obj))
		goto out;
	if (!json_is_object(json_object_get(obj, "metadata")))
		json_object_set_new(obj, "metadata", json_object());
	if (ssa_mgrs_load(from, &ms) || ssa_cmp_run(l, r, &root, &c))
		goto out;
	me = ssa_mgrs_get(&ms, manager && *manager ? manager : "unknown",
			  operation && *operation ? operation : "Update", api_version, subresource);
	if (me < 0 || ssa_take(&ms, me, &c))
		goto out;
	if (!sn_prune(c.added) || !sn_prune(c.modified) || !sn_prune(c.removed))
		ssa_touch(&ms.v[me], now_rfc3339, api_version);
	ret = ssa_mgrs_store(&ms, obj);
out:
	ssa_cmp_free(&c);
	ssa_mgrs_free(&ms);
	json_decref(l);
	json_decref(r);
	return ret;
}
