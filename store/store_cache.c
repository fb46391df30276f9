/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Recently read objects' stored text, so that a GET of a hot object (and
 * the namespace and account lookups of every write) does not run SQLite's
 * read transaction each time: a direct-mapped table of OC_SLOTS entries
 * keyed by (resource, namespace, name), each holding its own copy of the
 * text and revision, at most OC_ENTRY_MAX bytes each and OC_BYTES_MAX in
 * all.
 *
 * Correctness rests on two rules, both kept in store.c: every write of an
 * object row (put_object) replaces or drops its entry, and anything that
 * undoes written rows (a rollback, to a savepoint or whole; a failed
 * commit) empties the cache. Entries filled inside an open transaction are
 * what that transaction reads, as SQLite itself would answer. Only this
 * process writes a running tenant's objects (the CLI's writers work on
 * stopped tenants), so no other writer can make an entry stale.
 *
 * Threading: the store's thread (the loop).
 */
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "store/store_impl.h"

#define OC_SLOTS     256
#define OC_ENTRY_MAX (16 * 1024)
#define OC_BYTES_MAX (1024 * 1024)

struct oc_entry {
	size_t klen, len;
	int64_t rev;
	char *text;
	char key[]; /* res \0 ns \0 name \0 */
};

struct store_ocache {
	struct oc_entry *slot[OC_SLOTS];
	size_t bytes;
	uint64_t hits, misses;
};

static size_t make_key(char *buf, size_t cap, const char *res, const char *ns, const char *name)
{
	size_t a = strlen(res) + 1, b = strlen(ns) + 1, c = strlen(name) + 1;
	if (a + b + c > cap)
		return 0;
	memcpy(buf, res, a);
	memcpy(buf + a, ns, b);
	memcpy(buf + a + b, name, c);
	return a + b + c;
}

static size_t slot_of(const char *key, size_t klen)
{
	return (size_t)(kb_fnv1a(KB_FNV1A_INIT, key, klen) % OC_SLOTS);
}

static void entry_drop(struct store_ocache *c, size_t i)
{
	struct oc_entry *e = c->slot[i];
	if (!e)
		return;
	c->bytes -= e->len;
	free(e->text);
	free(e);
	c->slot[i] = NULL;
}

void store__oc_clear(store_t *st)
{
	struct store_ocache *c = st->ocache;
	for (size_t i = 0; c && i < OC_SLOTS; i++)
		entry_drop(c, i);
}

void store__oc_free(store_t *st)
{
	store__oc_clear(st);
	free(st->ocache);
	st->ocache = NULL;
}

int store__oc_get(store_t *st, const char *res, const char *ns, const char *name, const char **text,
		  size_t *len, int64_t *rev)
{
	struct store_ocache *c = st->ocache;
	char key[800];
	size_t kl = c ? make_key(key, sizeof(key), res, ns, name) : 0;
	if (!kl)
		return -ENOENT;
	struct oc_entry *e = c->slot[slot_of(key, kl)];
	if (!e || e->klen != kl || memcmp(e->key, key, kl) != 0) {
		c->misses++;
		return -ENOENT;
	}
	c->hits++;
	*text = e->text;
	*len = e->len;
	*rev = e->rev;
	return 0;
}

void store__oc_put(store_t *st, const char *res, const char *ns, const char *name, const char *text,
		   size_t len, int64_t rev)
{
	if (!st->ocache && !(st->ocache = calloc(1, sizeof(*st->ocache))))
		return;
	struct store_ocache *c = st->ocache;
	char key[800];
	size_t kl = make_key(key, sizeof(key), res, ns, name);
	if (!kl)
		return;
	size_t i = slot_of(key, kl);
	entry_drop(c, i);
	if (!text || len > OC_ENTRY_MAX || c->bytes + len > OC_BYTES_MAX)
		return;
	struct oc_entry *e = malloc(sizeof(*e) + kl);
	char *t = malloc(len + 1);
	if (!e || !t) {
		free(e);
		free(t);
		return;
	}
	memcpy(t, text, len);
	t[len] = '\0';
	memcpy(e->key, key, kl);
	e->klen = kl;
	e->len = len;
	e->rev = rev;
	e->text = t;
	c->slot[i] = e;
	c->bytes += len;
}

void store__oc_drop(store_t *st, const char *res, const char *ns, const char *name)
{
	store__oc_put(st, res, ns, name, NULL, 0, 0);
}
