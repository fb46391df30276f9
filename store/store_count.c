/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Object counts per resource and namespace, kept in memory beside the
 * objects table: remainingItemCount on a list's first page, store_count,
 * apiserver_storage_objects (store_count_each). kube reads
 * remainingItemCount from the range count etcd returns with a limited
 * range (apiserver pkg/storage/etcd3/store.go GetList: the range's Count
 * less the items returned); this is that count without walking the range.
 *
 * DESIGN: the counts are read from objects' b-tree (one scan, grouped by
 * resource and namespace) when first asked for, then moved by the store's
 * creates and deletes as they write their rows (an update keeps res and
 * ns). Anything that undoes written rows (a rollback, whole or to a
 * savepoint; a failed commit) forgets them, as it empties the object
 * cache, and the next question reads them again: they are always what
 * this connection's objects table holds, an open transaction's writes
 * included. Schema 1 kept them in a table with triggers on objects: every
 * create ran the trigger's sub-program (11k instructions) and wrote one
 * more page per commit (9k in the commit). Entries are sorted by (res, ns),
 * one per pair with objects; a store has a few hundred at most.
 *
 * Threading: the store's thread (the loop).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "store/store_impl.h"

struct count_entry {
	int64_t n;      /* > 0 */
	const char *ns; /* inside res's block */
	char res[];     /* res \0 ns \0 */
};

struct store_counts {
	struct count_entry **v;
	size_t n, cap;
};

static int entry_cmp(const struct count_entry *e, const char *res, const char *ns)
{
	int c = strcmp(e->res, res);
	return c ? c : strcmp(e->ns, ns);
}

/* The first entry not before (res, ns); *found when it is that pair. */
static size_t lower_bound(const struct store_counts *c, const char *res, const char *ns,
			  bool *found)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (entry_cmp(c->v[mid], res, ns) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < c->n && entry_cmp(c->v[lo], res, ns) == 0;
	return lo;
}

/* Inserts a pair with n objects at i. 0 or -ENOMEM. */
static int entry_insert(struct store_counts *c, size_t i, const char *res, size_t res_len,
			const char *ns, size_t ns_len, int64_t n)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 32;
		struct count_entry **v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->v = v;
		c->cap = cap;
	}
	struct count_entry *e = malloc(sizeof(*e) + res_len + ns_len + 2);
	if (!e)
		return -ENOMEM;
	memcpy(e->res, res, res_len);
	e->res[res_len] = '\0';
	memcpy(e->res + res_len + 1, ns, ns_len);
	e->res[res_len + 1 + ns_len] = '\0';
	e->ns = e->res + res_len + 1;
	e->n = n;
	memmove(c->v + i + 1, c->v + i, (c->n - i) * sizeof(*c->v));
	c->v[i] = e;
	c->n++;
	return 0;
}

void store__counts_drop(store_t *st)
{
	struct store_counts *c = st->counts;
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i]);
	free(c->v);
	free(c);
	st->counts = NULL;
}

/* Reads the counts from objects. 0, -ENOMEM or -EIO. */
static int counts_load(store_t *st)
{
	if (st->counts)
		return 0;
	struct store_counts *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	st->counts = c;
	sqlite3_stmt *q = st->stmt[SQ_COUNT_EACH];
	int rc, err = 0;
	while (!err && (rc = sqlite3_step(q)) == SQLITE_ROW)
		err = entry_insert(c, c->n, (const char *)sqlite3_column_text(q, 0),
				   (size_t)sqlite3_column_bytes(q, 0),
				   (const char *)sqlite3_column_text(q, 1),
				   (size_t)sqlite3_column_bytes(q, 1), sqlite3_column_int64(q, 2));
	sqlite3_reset(q);
	if (!err && rc != SQLITE_DONE)
		err = store__sql_err(st, rc, "count");
	if (err)
		store__counts_drop(st);
	return err;
}

void store__counts_move(store_t *st, const char *res, const char *ns, int delta)
{
	struct store_counts *c = st->counts;
	if (!c) /* read again when asked */
		return;
	bool found;
	size_t i = lower_bound(c, res, ns, &found);
	if (!found) {
		if (delta < 0 || entry_insert(c, i, res, strlen(res), ns, strlen(ns), delta) < 0)
			store__counts_drop(st); /* cannot tell: read again */
		return;
	}
	c->v[i]->n += delta;
	if (c->v[i]->n > 0)
		return;
	free(c->v[i]);
	memmove(c->v + i, c->v + i + 1, (c->n - i - 1) * sizeof(*c->v));
	c->n--;
}

int store_count(store_t *st, const char *res, const char *ns, size_t *count)
{
	KB_CHECK(st && res && count, -EINVAL);
	int err = counts_load(st);
	if (err)
		return err;
	const struct store_counts *c = st->counts;
	bool found;
	size_t i = lower_bound(c, res, ns ? ns : "", &found);
	int64_t n = 0;
	if (ns)
		n = found ? c->v[i]->n : 0;
	else
		for (; i < c->n && strcmp(c->v[i]->res, res) == 0; i++)
			n += c->v[i]->n;
	*count = (size_t)n;
	return 0;
}

int store_count_each(store_t *st, void (*cb)(const char *res, int64_t count, void *arg), void *arg)
{
	KB_CHECK(st && cb, -EINVAL);
	int err = counts_load(st);
	if (err)
		return err;
	const struct store_counts *c = st->counts;
	for (size_t i = 0; i < c->n;) {
		size_t j = i;
		int64_t n = 0;
		for (; j < c->n && strcmp(c->v[j]->res, c->v[i]->res) == 0; j++)
			n += c->v[j]->n;
		cb(c->v[i]->res, n, arg);
		i = j;
	}
	return 0;
}
