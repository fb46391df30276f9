/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watches on the object store: the registry of watchers (indexed by
 * resource), the queues of events waiting for a commit or for delivery, the
 * fan-out of one event to every matching watcher, and the replay of history
 * from the event table when a watch starts. See store_impl.h for the DESIGN.
 */
#include "store/store_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"

#define REPLAY_CHUNK 64

struct store_watch {
	struct store_watch *next, **pprev; /* bucket (or wall) list */
	struct store_watch *dead_next;     /* store->dead, while deferred */
	store_t *st;
	store_watch_cb cb;
	void (*warm)(void *arg); /* store_watch_set_warm, or NULL */
	void *arg;
	int64_t last_rev; /* newest revision given to cb */
	bool dead;
	bool has_ns;
	char ns[]; /* the namespace filter when has_ns */
};

struct store_wbucket {
	struct store_wbucket *next; /* hash chain */
	struct store_watch *head;
	char res[];
};

/* ---- event nodes and queues -------------------------------------------- */

struct store_evnode *store__evnode_new(const char *res, const char *ns, const char *name)
{
	size_t lr = strlen(res) + 1, ln = strlen(ns) + 1, lm = strlen(name) + 1;
	struct store_evnode *n = calloc(1, sizeof(*n) + lr + ln + lm);
	if (!n)
		return NULL;
	memcpy(n->keys, res, lr);
	memcpy(n->keys + lr, ns, ln);
	memcpy(n->keys + lr + ln, name, lm);
	n->res = n->keys;
	n->ns = n->keys + lr;
	n->name = n->keys + lr + ln;
	return n;
}

void store__evnode_free(struct store_evnode *n)
{
	if (!n)
		return;
	json_decref(n->obj);
	json_decref(n->prev);
	free(n->obj_text);
	free(n->prev_text);
	free(n);
}

static void queue_push(struct store_evqueue *q, struct store_evnode *n)
{
	n->next = NULL;
	if (q->tail)
		q->tail->next = n;
	else
		q->head = n;
	q->tail = n;
}

static void queue_free(struct store_evnode *n)
{
	while (n) {
		struct store_evnode *next = n->next;
		store__evnode_free(n);
		n = next;
	}
}

void store__emit(store_t *st, struct store_evnode *n)
{
	if (st->txn_depth > 0) {
		queue_push(&st->txn_q, n);
		return;
	}
	queue_push(&st->pend_q, n);
	store__dispatch(st);
}

void store__txn_drop(store_t *st, struct store_evnode *mark)
{
	struct store_evqueue *q = &st->txn_q;
	if (!mark) {
		queue_free(q->head);
		q->head = q->tail = NULL;
		return;
	}
	queue_free(mark->next);
	mark->next = NULL;
	q->tail = mark;
}

void store__txn_publish(store_t *st)
{
	struct store_evqueue *t = &st->txn_q;
	if (t->head) {
		if (st->pend_q.tail)
			st->pend_q.tail->next = t->head;
		else
			st->pend_q.head = t->head;
		st->pend_q.tail = t->tail;
		t->head = t->tail = NULL;
	}
	store__dispatch(st);
}

/* ---- the registry ------------------------------------------------------ */

static unsigned hash_res(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % STORE_WBUCKETS;
}

static struct store_wbucket *bucket_find(const store_t *st, const char *res)
{
	struct store_wbucket *b = st->wbuckets[hash_res(res)];
	while (b && strcmp(b->res, res) != 0)
		b = b->next;
	return b;
}

static struct store_watch **list_for(store_t *st, const char *res)
{
	if (!res)
		return &st->wall;
	struct store_wbucket *b = bucket_find(st, res);
	if (!b) {
		size_t n = strlen(res) + 1;
		b = calloc(1, sizeof(*b) + n);
		if (!b)
			return NULL;
		memcpy(b->res, res, n);
		unsigned h = hash_res(res);
		b->next = st->wbuckets[h];
		st->wbuckets[h] = b;
	}
	return &b->head;
}

bool store__watched(const store_t *st, const char *res)
{
	if (st->wall)
		return true;
	const struct store_wbucket *b = bucket_find(st, res);
	return b && b->head;
}

static void watch_unlink_free(struct store_watch *w)
{
	*w->pprev = w->next;
	if (w->next)
		w->next->pprev = w->pprev;
	free(w);
}

/* Frees watches unwatched while callbacks ran. */
static void sweep(store_t *st)
{
	while (st->dead && st->busy == 0) {
		struct store_watch *w = st->dead;
		st->dead = w->dead_next;
		watch_unlink_free(w);
	}
}

void store_watch_set_warm(store_watch_t *w, void (*warm)(void *arg))
{
	w->warm = warm;
}

void store_unwatch(store_watch_t *w)
{
	if (!w || w->dead)
		return;
	store_t *st = w->st;
	w->dead = true;
	st->nwatch--;
	if (st->busy > 0) {
		w->dead_next = st->dead;
		st->dead = w;
	} else {
		watch_unlink_free(w);
	}
}

size_t store_watch_count(const store_t *st)
{
	return st->nwatch;
}

static void free_list(struct store_watch *w)
{
	while (w) {
		struct store_watch *next = w->next;
		free(w);
		w = next;
	}
}

void store__watch_fini(store_t *st)
{
	for (unsigned i = 0; i < STORE_WBUCKETS; i++) {
		struct store_wbucket *b = st->wbuckets[i];
		while (b) {
			struct store_wbucket *next = b->next;
			free_list(b->head);
			free(b);
			b = next;
		}
		st->wbuckets[i] = NULL;
	}
	free_list(st->wall);
	st->wall = NULL;
	st->dead = NULL;
	st->nwatch = 0;
	queue_free(st->txn_q.head);
	queue_free(st->pend_q.head);
	st->txn_q.head = st->txn_q.tail = NULL;
	st->pend_q.head = st->pend_q.tail = NULL;
}

/* ---- fan-out ----------------------------------------------------------- */

static bool watch_wants(const struct store_watch *w, const struct store_evnode *n)
{
	return !w->dead && n->rev > w->last_rev && (!w->has_ns || strcmp(w->ns, n->ns) == 0);
}

/* Parses the node's texts, once, when a first watcher wants it. */
static int materialize(store_t *st, struct store_evnode *n)
{
	if (!n->obj && n->obj_text)
		n->obj = json_loads(n->obj_text, 0, NULL);
	if (!n->prev && n->prev_text)
		n->prev = json_loads(n->prev_text, 0, NULL);
	if (!n->obj || (n->prev_text && !n->prev)) {
		kb_err("store", "event %" PRId64 ": cannot parse object", n->rev);
		return -EIO;
	}
	return 0;
}

static void event_of(const struct store_evnode *n, struct store_event *ev)
{
	ev->type = n->type;
	ev->rev = n->rev;
	ev->res = n->res;
	ev->ns = n->ns;
	ev->name = n->name;
	ev->obj = n->obj;
	ev->prev = n->prev;
}

/* A fan-out to many watches waits on cache misses: each watch's node, its
 * callback's state, the connection behind it. While one watch is served,
 * the ones after it are loaded in stages: the node three ahead, the state
 * two ahead, and what the state points to (the warm-up) one ahead, each
 * from memory the stage before brought in. */
static void prefetch_ahead(const struct store_watch *w)
{
	const struct store_watch *a = w->next, *b = a ? a->next : NULL;
	if (!a)
		return;
	if (b) {
		__builtin_prefetch(b->next);
		__builtin_prefetch(b->arg);
	}
	if (a->warm && !a->dead)
		a->warm(a->arg);
}

/* Gives n to every wanting watch of one list. w->next is read after the
 * callback: watches are never freed while busy, new ones go to the head. */
static void fan_out(store_t *st, struct store_watch *w, struct store_evnode *n, bool *ready)
{
	struct store_event ev;
	for (; w; w = w->next) {
		prefetch_ahead(w);
		if (!watch_wants(w, n))
			continue;
		if (!*ready) {
			if (materialize(st, n))
				return;
			*ready = true;
		}
		event_of(n, &ev);
		w->last_rev = n->rev;
		w->cb(&ev, w->arg);
	}
}

static void deliver(store_t *st, struct store_evnode *n)
{
	bool ready = false;
	struct store_wbucket *b = bucket_find(st, n->res);
	if (b)
		fan_out(st, b->head, n, &ready);
	fan_out(st, st->wall, n, &ready);
}

void store__dispatch(store_t *st)
{
	if (st->busy > 0)
		return;
	st->busy++;
	struct store_evnode *n;
	while ((n = st->pend_q.head)) {
		st->pend_q.head = n->next;
		if (!st->pend_q.head)
			st->pend_q.tail = NULL;
		deliver(st, n);
		store__evnode_free(n);
	}
	st->busy--;
	sweep(st);
}

/* ---- replay ------------------------------------------------------------ */

static struct store_evnode *replay_row(sqlite3_stmt *q)
{
	const char *res = (const char *)sqlite3_column_text(q, 2);
	const char *ns = (const char *)sqlite3_column_text(q, 3);
	const char *name = (const char *)sqlite3_column_text(q, 4);
	struct store_evnode *n = store__evnode_new(res ? res : "", ns ? ns : "", name ? name : "");
	if (!n)
		return NULL;
	n->rev = sqlite3_column_int64(q, 0);
	n->type = (enum store_event_type)sqlite3_column_int(q, 1);
	n->obj =
	    kb_json_loadb(sqlite3_column_blob(q, 5), (size_t)sqlite3_column_bytes(q, 5), 0, NULL);
	if (!n->obj) {
		store__evnode_free(n);
		return NULL;
	}
	return n;
}

/*
 * Reads up to REPLAY_CHUNK events of `w` in (pos, upto] into *out (a list);
 * *count gets how many. The statement is reset before any callback runs.
 */
static int replay_fetch(store_t *st, const char *res, struct store_watch *w, int64_t pos,
			int64_t upto, struct store_evqueue *out, int *count)
{
	sqlite3_stmt *q = st->stmt[SQ_REPLAY];
	int rc, err = 0;
	sqlite3_bind_int64(q, 1, pos);
	sqlite3_bind_int64(q, 2, upto);
	sqlite3_bind_text(q, 3, res, -1, SQLITE_STATIC); /* NULL binds NULL */
	sqlite3_bind_text(q, 4, w->has_ns ? w->ns : NULL, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 5, REPLAY_CHUNK);
	*count = 0;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_evnode *n = replay_row(q);
		if (!n) {
			err = store__sql_err(st, SQLITE_CORRUPT, "replay: bad event row");
			break;
		}
		queue_push(out, n);
		(*count)++;
	}
	if (!err && rc != SQLITE_DONE)
		err = store__sql_err(st, rc, "replay");
	sqlite3_reset(q);
	return err;
}

/* Delivers a fetched chunk to w, freeing it. */
static void replay_deliver(struct store_watch *w, struct store_evnode *n)
{
	struct store_event ev;
	while (n) {
		struct store_evnode *next = n->next;
		if (!w->dead && n->rev > w->last_rev) {
			event_of(n, &ev);
			w->last_rev = n->rev;
			w->cb(&ev, w->arg);
		}
		store__evnode_free(n);
		n = next;
	}
}

/* Replays history to w until it has seen every committed revision. Callbacks
 * may write (their events are then read here too) or unwatch. */
static int replay(store_t *st, const char *res, struct store_watch *w)
{
	int64_t pos = w->last_rev;
	int err = 0;
	st->busy++;
	while (!w->dead) {
		int64_t upto = store__committed_rev(st);
		struct store_evqueue chunk = {NULL, NULL};
		int count = 0;
		if (pos >= upto)
			break;
		err = replay_fetch(st, res, w, pos, upto, &chunk, &count);
		if (err) {
			queue_free(chunk.head);
			break;
		}
		pos = count == REPLAY_CHUNK ? chunk.tail->rev : upto;
		replay_deliver(w, chunk.head);
	}
	if (pos > w->last_rev)
		w->last_rev = pos;
	st->busy--;
	return err;
}

static struct store_watch *watch_new(store_t *st, const char *ns, int64_t since, store_watch_cb cb,
				     void *arg)
{
	size_t ln = ns ? strlen(ns) + 1 : 0;
	struct store_watch *w = calloc(1, sizeof(*w) + ln);
	if (!w)
		return NULL;
	w->st = st;
	w->cb = cb;
	w->arg = arg;
	w->last_rev = since;
	w->has_ns = ns != NULL;
	if (ns)
		memcpy(w->ns, ns, ln);
	return w;
}

static void watch_link(struct store_watch **head, struct store_watch *w)
{
	w->next = *head;
	if (*head)
		(*head)->pprev = &w->next;
	*head = w;
	w->pprev = head;
}

int store_watch(store_t *st, const char *res, const char *ns, int64_t since, store_watch_cb cb,
		void *arg, store_watch_t **out)
{
	KB_CHECK(st && cb && out && since >= 0, -EINVAL);
	if (since < st->compacted_rev)
		return -ERANGE;
	struct store_watch **head = list_for(st, res);
	struct store_watch *w = head ? watch_new(st, ns, since, cb, arg) : NULL;
	if (!w)
		return -ENOMEM;
	watch_link(head, w);
	st->nwatch++;
	*out = w;
	int err = replay(st, res, w);
	if (err) {
		store_unwatch(w);
		*out = NULL;
	}
	store__dispatch(st);
	return err;
}
