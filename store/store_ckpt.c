/* SPDX-License-Identifier: Apache-2.0 */
/*
 * WAL checkpoints off the loop thread. SQLite's automatic checkpoint runs
 * inside the commit that crosses 1,000 WAL pages, on the thread that
 * commits: here the loop thread, which then waits for two fdatasyncs (WAL,
 * then database file; 10-20 ms on our disks) while every request waits.
 *
 * DESIGN: the loop's connection has no automatic checkpoint; its WAL hook
 * (called after each commit with the WAL's size) queues a PASSIVE checkpoint
 * on the libuv thread pool once the WAL holds STORE_CKPT_PAGES pages. The
 * checkpoint runs on a second connection that only the worker uses (one
 * checkpoint at a time), opened by the first checkpoint: an idle tenant
 * never pays for it. PASSIVE never blocks the loop's reads and writes:
 * it copies what no reader still needs and the writer starts the WAL over
 * when it is all copied. Durability is SQLite's: committed frames stay in
 * the WAL until the database file is synced. store_close waits for a
 * running checkpoint (or cancels a queued one) before closing.
 * Without a loop (tools, some tests) SQLite's automatic checkpoint stays.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/log.h"
#include "store/store_impl.h"

/* The worker's nice while it checkpoints (see ckpt_work). */
#define CKPT_NICE 10

struct store_ckpt {
	uv_work_t req;
	store_t *st;
	sqlite3 *db; /* the checkpointer's connection, opened by the worker */
	char *path;
	bool sync_full;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool queued;    /* req is with the thread pool */
	bool running;   /* the worker is inside the checkpoint */
	bool closed;    /* store_close detached it: after_work frees it */
	int next_at;    /* WAL size (frames) that queues the next checkpoint */
	int last_pages; /* WAL size at the last commit */
	int rc;
	int log, copied; /* the last checkpoint's WAL frames, and copied */
	bool all_copied; /* it copied the whole WAL as of the last commit */
	bool caught_up;  /* the last one copied every frame it saw */
	size_t done;
	/* the WAL's starts over (wal_hook), and whether the next one keeps
	 * the file's size (journal_size_limit: STORE_WAL_KEEP_BYTES) */
	uint64_t restarts, last_restart_ms;
	bool keep;
};

/* The checkpoint connection, with the loop connection's durability. */
static int open_checkpointer(struct store_ckpt *c)
{
	int rc =
	    sqlite3_open_v2(c->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(c->db, 5000);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db,
				  c->sync_full ? "PRAGMA synchronous = FULL"
					       : "PRAGMA synchronous = NORMAL",
				  NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_close(c->db);
		c->db = NULL;
	}
	return rc;
}

static void ckpt_work(uv_work_t *req)
{
	struct store_ckpt *c = req->data;
	pthread_mutex_lock(&c->mu);
	if (c->closed) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	c->running = true;
	pthread_mutex_unlock(&c->mu);
	/* Where the worker and the loop share a core (a tenant pinned to one,
	 * many tenants on few cores), the copy yields to the requests: nice 10
	 * weighs a tenth of the loop's share (the pool's threads run nothing
	 * else; raising one's own nice needs no privilege). Alternated with
	 * the worker at nice 0, server on one core, 2,000 creates/s offered:
	 * the open-loop references' p99 12.1 ms against 14.0 (bench/README.md,
	 * "The loop's checkpoints"). */
	id_t tid = (id_t)gettid();
	errno = 0;
	int nice_now = getpriority(PRIO_PROCESS, tid);
	if (errno == 0 && nice_now < CKPT_NICE) /* never back down from more */
		setpriority(PRIO_PROCESS, tid, CKPT_NICE);
	int rc = c->db ? SQLITE_OK : open_checkpointer(c);
	int log = -1, copied = -1;
	if (rc == SQLITE_OK)
		rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log,
					       &copied);
	pthread_mutex_lock(&c->mu);
	c->rc = rc;
	c->log = log;
	c->copied = copied;
	c->running = false;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

static void ckpt_free(struct store_ckpt *c)
{
	sqlite3_close(c->db);
	free(c->path);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}

/* Before a commit that may start the WAL over: keep the file's size when
 * the last start over was recent (a write stream: cutting the file and
 * growing it again costs the loop an ftruncate as long as a sync), else
 * let SQLite cut it to STORE_JOURNAL_LIMIT (store_impl.h). Loop thread,
 * between statements or in the WAL hook (as a checkpoint there). */
static void set_keep(struct store_ckpt *c)
{
	store_t *st = c->st;
	bool keep = st->opts.wal_keep_ms > 0 && c->restarts &&
		    uv_now(st->loop) - c->last_restart_ms < (uint64_t)st->opts.wal_keep_ms;
	char sql[64];
	if (keep == c->keep)
		return;
	snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %d",
		 keep ? STORE_WAL_KEEP_BYTES : STORE_JOURNAL_LIMIT);
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		c->keep = keep;
	else
		kb_warn("store", "journal_size_limit: %s", sqlite3_errstr(rc));
}

static void ckpt_after(uv_work_t *req, int status)
{
	struct store_ckpt *c = req->data;
	c->queued = false;
	if (c->closed) {
		ckpt_free(c);
		return;
	}
	if (status == 0 && c->rc != SQLITE_OK && c->rc != SQLITE_BUSY)
		kb_warn("store", "background checkpoint: %s", sqlite3_errstr(c->rc));
	else if (status == 0)
		c->done++;
	/* no commit since it started (last_pages is the WAL it saw, or less) */
	c->caught_up = status == 0 && c->rc == SQLITE_OK && c->log >= 0 && c->copied == c->log;
	c->all_copied = c->caught_up && c->log >= c->last_pages;
	if (c->all_copied) /* the next commit starts the WAL over */
		set_keep(c);
}

/* A checkpoint on the loop's connection, between two transactions; BUSY
 * (the worker is inside one) is tried again at the next commit. */
static void loop_checkpoint(sqlite3 *db, const char *name)
{
	int rc = sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	if (rc != SQLITE_OK && rc != SQLITE_BUSY)
		kb_warn("store", "checkpoint: %s", sqlite3_errstr(rc));
}

enum store_ckpt_step store__ckpt_step(int pages, int next_at, bool queued, bool caught_up, int seen)
{
	if (pages >= STORE_CKPT_LIMIT ||
	    (pages >= STORE_CKPT_RESTART && caught_up && pages - seen <= STORE_CKPT_CATCHUP))
		return STORE_CKPT_ON_LOOP;
	/* Below STORE_CKPT_RESTART, a checkpoint that could not let the WAL
	 * start over (a transaction was open) is not repeated on every
	 * commit: the next one waits for STORE_CKPT_PAGES more frames; past
	 * it, they run back to back, each copying what came during the last,
	 * until one leaves few enough for the loop. */
	if (queued || (pages < next_at && pages < STORE_CKPT_RESTART))
		return STORE_CKPT_NONE;
	return STORE_CKPT_ON_WORKER;
}

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	store_t *st = arg;
	struct store_ckpt *c = st->ckpt;
	store__wal_size(st, pages);
	c->all_copied = false;       /* frames added since */
	if (pages < c->last_pages) { /* the WAL started over */
		c->next_at = STORE_CKPT_PAGES;
		c->caught_up = false;
		c->restarts++;
		c->last_restart_ms = uv_now(st->loop);
	}
	c->last_pages = pages;
	switch (store__ckpt_step(pages, c->next_at, c->queued, c->caught_up, c->log)) {
	case STORE_CKPT_ON_LOOP:
		c->caught_up = false;
		set_keep(c); /* the next commit starts the WAL over */
		loop_checkpoint(db, name);
		break;
	case STORE_CKPT_ON_WORKER:
		c->req.data = c;
		if (uv_queue_work(st->loop, &c->req, ckpt_work, ckpt_after) == 0) {
			c->queued = true;
			c->next_at = pages + STORE_CKPT_PAGES;
		}
		break;
	case STORE_CKPT_NONE: break;
	}
	return SQLITE_OK;
}

int store__ckpt_start(store_t *st, const char *path)
{
	if (!st->loop || st->exclusive) /* a second connection cannot open it */
		return 0;
	struct store_ckpt *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	c->st = st;
	c->path = strdup(path);
	c->sync_full = st->opts.sync_full;
	c->next_at = STORE_CKPT_PAGES;
	if (!c->path) {
		ckpt_free(c);
		return -ENOMEM;
	}
	st->ckpt = c;
	sqlite3_wal_hook(st->db, wal_hook, st); /* replaces the automatic checkpoint */
	return 0;
}

void store__ckpt_stop(store_t *st)
{
	struct store_ckpt *c = st->ckpt;
	if (!c)
		return;
	st->ckpt = NULL;
	sqlite3_wal_hook(st->db, NULL, NULL);
	if (c->queued && uv_cancel((uv_req_t *)&c->req) == 0) {
		c->closed = true; /* after_work comes with UV_ECANCELED and frees it */
		return;
	}
	pthread_mutex_lock(&c->mu);
	c->closed = true;
	while (c->running)
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	if (!c->queued)
		ckpt_free(c); /* else after_work frees it */
}

bool store__ckpt_drained(store_t *st)
{
	struct store_ckpt *c = st->ckpt;
	if (c->all_copied) {
		c->all_copied = false;
		return true;
	}
	c->req.data = c;
	if (!c->queued && uv_queue_work(st->loop, &c->req, ckpt_work, ckpt_after) == 0)
		c->queued = true;
	return false;
}

bool store_checkpoint_pending(const store_t *st)
{
	return st->ckpt && st->ckpt->queued;
}

void store__ckpt_stats(const store_t *st, struct store_stats *out)
{
	out->wal_restarts = st->ckpt ? st->ckpt->restarts : 0;
	out->wal_kept = st->ckpt && st->ckpt->keep;
}

size_t store_checkpoints(const store_t *st)
{
	return st->ckpt ? st->ckpt->done : 0;
}
