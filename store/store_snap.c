/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lists as of an earlier revision (store_list with req->at): the pages after
 * the first of a paginated list show the collection as it was when the first
 * page was read, as kube-apiserver does with etcd's snapshot reads.
 *
 * DESIGN: the current rows are listed as usual, except the keys changed
 * since `at`; those come from the watch history instead. A key's state at
 * `at` is the latest event at or before `at` (absent when that event is a
 * DELETED); a key whose first change after `at` is an ADDED did not exist.
 * When that earlier state was compacted away (the key had not changed
 * within the retained history before `at`), the key is listed as it is now:
 * the page is then as consistent as the history allows, never an error
 * (etcd keeps every key's last version at compaction; our history keeps
 * revisions, not keys). A token older than the compaction itself gets
 * -ERANGE (410 Expired). The cost is one scan of the events after `at`, and one
 * backwards scan of the history when a key's earlier state is needed; a
 * list with no change since `at` costs nothing extra.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "store/store_impl.h"

static const char *const after_sql =
    "SELECT type, ns, name FROM events WHERE rev > ?1 AND res = ?2 ORDER BY rev";
static const char *const before_sql =
    "SELECT type, ns, name, data FROM events WHERE rev <= ?1 AND rev > ?2 AND res = ?3"
    " ORDER BY rev DESC";

/* A key changed since `at` and its state then. */
struct changed {
	char *ns, *name;
	json_t *obj;   /* state at `at`; NULL when absent */
	bool resolved; /* obj (or its absence) is known */
	size_t seq;    /* order of the change, while collecting */
};

struct snap {
	struct changed *v;
	size_t n, cap;
};

static int key_cmp(const char *ans, const char *aname, const char *bns, const char *bname)
{
	int c = strcmp(ans, bns);
	return c ? c : strcmp(aname, bname);
}

static int changed_cmp(const void *a, const void *b)
{
	const struct changed *x = a, *y = b;
	return key_cmp(x->ns, x->name, y->ns, y->name);
}

/* Key order, then change order: the first change of a key sorts first. */
static int changed_seq_cmp(const void *a, const void *b)
{
	const struct changed *x = a, *y = b;
	int c = changed_cmp(a, b);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sorts by key and keeps each key's first change. */
static void snap_unique(struct snap *s)
{
	if (s->n < 2)
		return;
	qsort(s->v, s->n, sizeof(*s->v), changed_seq_cmp);
	size_t k = 1;
	for (size_t i = 1; i < s->n; i++) {
		if (changed_cmp(&s->v[i], &s->v[k - 1]) == 0) {
			free(s->v[i].ns);
			free(s->v[i].name);
			continue;
		}
		s->v[k++] = s->v[i];
	}
	s->n = k;
}

static struct changed *snap_find(const struct snap *s, const char *ns, const char *name)
{
	struct changed key = {.ns = (char *)ns, .name = (char *)name};
	return s->n ? bsearch(&key, s->v, s->n, sizeof(*s->v), changed_cmp) : NULL;
}

static void snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].ns);
		free(s->v[i].name);
		json_decref(s->v[i].obj);
	}
	free(s->v);
}

static int snap_add(struct snap *s, const char *ns, const char *name, bool absent)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct changed *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	struct changed *c = &s->v[s->n];
	c->ns = strdup(ns);
	c->name = strdup(name);
	c->obj = NULL;
	c->resolved = absent;
	c->seq = s->n;
	if (!c->ns || !c->name) {
		free(c->ns);
		free(c->name);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

static sqlite3_stmt *snap_stmt(store_t *st, int i)
{
	if (!st->snap_stmt[i] &&
	    sqlite3_prepare_v3(st->db, i ? before_sql : after_sql, -1, SQLITE_PREPARE_PERSISTENT,
			       &st->snap_stmt[i], NULL) != SQLITE_OK) {
		store__sql_err(st, sqlite3_errcode(st->db), "prepare snapshot list");
		return NULL;
	}
	return st->snap_stmt[i];
}

static const char *col_text(sqlite3_stmt *q, int i)
{
	const char *s = (const char *)sqlite3_column_text(q, i);
	return s ? s : "";
}

/* The keys of `res` (in `ns`) changed after `at`, in key order; those first
 * changed by an ADDED are resolved as absent. */
static int collect_changed(store_t *st, const struct store_list_req *req, int64_t at,
			   struct snap *s)
{
	sqlite3_stmt *q = snap_stmt(st, 0);
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, at);
	sqlite3_bind_text(q, 2, req->res, -1, SQLITE_STATIC);
	int rc, err = 0;
	while (!err && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *ns = col_text(q, 1), *name = col_text(q, 2);
		if (req->ns && strcmp(ns, req->ns) != 0)
			continue;
		err = snap_add(s, ns, name, sqlite3_column_int(q, 0) == STORE_ADDED);
	}
	if (!err && rc != SQLITE_DONE)
		err = store__sql_err(st, rc, "snapshot list");
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if (!err)
		snap_unique(s);
	return err;
}

/* Forgets the keys whose state at `at` is unknown. */
static void drop_unresolved(struct snap *s)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].resolved) {
			s->v[k++] = s->v[i];
		} else {
			free(s->v[i].ns);
			free(s->v[i].name);
			json_decref(s->v[i].obj);
		}
	}
	s->n = k;
}

/* Finds the state at `at` of every changed key not yet resolved. */
static int resolve_changed(store_t *st, const struct store_list_req *req, int64_t at,
			   struct snap *s)
{
	size_t left = 0;
	for (size_t i = 0; i < s->n; i++)
		left += !s->v[i].resolved;
	if (!left)
		return 0;
	sqlite3_stmt *q = snap_stmt(st, 1);
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, at);
	sqlite3_bind_int64(q, 2, st->compacted_rev);
	sqlite3_bind_text(q, 3, req->res, -1, SQLITE_STATIC);
	int rc, err = 0;
	while (!err && left && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct changed *c = snap_find(s, col_text(q, 1), col_text(q, 2));
		if (!c || c->resolved)
			continue;
		c->resolved = true;
		left--;
		if (sqlite3_column_int(q, 0) == STORE_DELETED)
			continue;
		c->obj = kb_json_loadb(sqlite3_column_blob(q, 3),
				       (size_t)sqlite3_column_bytes(q, 3), 0, NULL);
		if (!c->obj)
			err = store__sql_err(st, SQLITE_CORRUPT, "stored event is not JSON");
	}
	if (!err && left && rc != SQLITE_ROW && rc != SQLITE_DONE)
		err = store__sql_err(st, rc, "snapshot list");
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if (!err && left)
		drop_unresolved(s); /* compacted away: listed as they are now */
	return err;
}

/* The current rows list skips the changed keys (their state comes from s). */
struct skip_arg {
	const struct snap *s;
	const struct store_list_req *req;
};

static void obj_key(const json_t *obj, const char **ns, const char **name)
{
	const json_t *md = json_object_get(obj, "metadata");
	*ns = json_string_value(json_object_get(md, "namespace"));
	*name = json_string_value(json_object_get(md, "name"));
	if (!*ns)
		*ns = "";
	if (!*name)
		*name = "";
}

static bool skip_changed(const json_t *obj, void *arg)
{
	const struct skip_arg *a = arg;
	const char *ns, *name;
	obj_key(obj, &ns, &name);
	if (snap_find(a->s, ns, name))
		return false;
	return !a->req->filter || a->req->filter(obj, a->req->filter_arg);
}

/* Merges the states at `at` of changed keys in (after, upto] (upto NULL:
 * no upper bound) into the current items, in key order. */
static int merge(const struct store_list_req *req, const struct snap *s, const char *after_ns,
		 const char *after_name, const json_t *upto, json_t *items, json_t **out)
{
	const char *uns = NULL, *uname = NULL;
	if (upto)
		obj_key(upto, &uns, &uname);
	json_t *m = json_array();
	if (!m)
		return -ENOMEM;
	size_t i = 0, j = 0, n = json_array_size(items);
	while (i < n || j < s->n) {
		const struct changed *c = j < s->n ? &s->v[j] : NULL;
		if (c && (!c->obj || key_cmp(c->ns, c->name, after_ns, after_name) <= 0 ||
			  (uns && key_cmp(c->ns, c->name, uns, uname) > 0) ||
			  (req->filter && !req->filter(c->obj, req->filter_arg)))) {
			j++;
			continue;
		}
		json_t *cur = i < n ? json_array_get(items, i) : NULL;
		const char *ns = NULL, *name = NULL;
		if (cur)
			obj_key(cur, &ns, &name);
		if (c && (!cur || key_cmp(c->ns, c->name, ns, name) < 0)) {
			json_array_append(m, c->obj);
			j++;
		} else {
			json_array_append(m, cur);
			i++;
		}
	}
	*out = m;
	return 0;
}

/* The continue key after obj, as store_list encodes it. */
static char *key_after(const json_t *obj)
{
	const char *ns, *name;
	obj_key(obj, &ns, &name);
	return store__encode_key(ns, strlen(ns), name, strlen(name));
}

int store__list_at(store_t *st, const struct store_list_req *req, struct store_list_result *out)
{
	int64_t at = req->at;
	if (at < st->compacted_rev)
		return -ERANGE;
	struct snap s = {0};
	const char *after_ns = "", *after_name = "";
	unsigned char *kbuf = NULL;
	int err = 0;
	if (req->after) {
		err = store__decode_key(req->after, &kbuf, &after_name);
		after_ns = kbuf ? (const char *)kbuf : "";
	}
	if (!err)
		err = collect_changed(st, req, at, &s);
	if (!err)
		err = resolve_changed(st, req, at, &s);
	struct store_list_result cur = {0};
	if (!err) {
		struct skip_arg a = {.s = &s, .req = req};
		struct store_list_req r2 = *req;
		r2.at = 0;
		r2.filter = skip_changed;
		r2.filter_arg = &a;
		err = store_list(st, &r2, &cur);
	}
	json_t *m = NULL;
	if (!err) {
		size_t n = json_array_size(cur.items);
		err = merge(req, &s, after_ns, after_name,
			    cur.next && n ? json_array_get(cur.items, n - 1) : NULL, cur.items, &m);
	}
	if (!err && req->limit && json_array_size(m) > req->limit) {
		/* the merged states made the page too long: cut it */
		while (json_array_size(m) > req->limit)
			json_array_remove(m, json_array_size(m) - 1);
		free(cur.next);
		cur.next = key_after(json_array_get(m, req->limit - 1));
		if (!cur.next)
			err = -ENOMEM;
	}
	json_decref(cur.items);
	free(kbuf);
	snap_free(&s);
	if (err) {
		json_decref(m);
		free(cur.next);
		return err;
	}
	out->items = m;
	out->next = cur.next;
	out->rev = at;
	out->remaining = -1; /* not counted at an earlier revision */
	return 0;
}
