/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by store.c (SQLite, objects, transactions, compaction)
 * and store_watch.c (watch registry, event queue, fan-out, replay).
 *
 * DESIGN
 * Events: every write builds at most one `struct store_evnode` (only when a
 * transaction is open or some watcher could match), holding the new object
 * and the previous one either as json_t or as JSON text parsed lazily at
 * fan-out time, once, and shared by every watcher. Nodes wait in the
 * transaction queue until the outermost commit moves them to the pending
 * queue; a rollback frees them. The pending queue is drained in order by
 * store__dispatch(), never re-entered: while callbacks run (`busy` > 0), new
 * events only queue, which keeps each watcher's events in revision order even
 * when callbacks write to the store.
 *
 * Watchers: per-resource buckets in a small hash table, plus one list for
 * watches on every resource. Each watch remembers the last revision it was
 * given, so replay and live delivery never overlap. store_unwatch inside a
 * callback only marks the watch dead; dead watches are unlinked and freed
 * when the outermost callback run ends.
 */
#ifndef KB_STORE_IMPL_H
#define KB_STORE_IMPL_H

#include <sqlite3.h>
#include <sys/types.h>

#include "store/store.h"

enum store_stmt {
	SQ_GET,
	SQ_REV,
	SQ_INS_OBJ,
	SQ_UPD_OBJ,
	SQ_DEL_OBJ,
	SQ_INS_EV,
	SQ_DEL_EV,
	SQ_LIST_ALL,
	SQ_LIST_NS,
	SQ_REMAIN_ALL,
	SQ_REMAIN_NS,
	SQ_COUNT_EACH,
	SQ_REPLAY,
	SQ_COMPACT,
	SQ_META_GET,
	SQ_META_SET,
	SQ_BEGIN,
	SQ_COMMIT,
	SQ_ROLLBACK,
	SQ_SAVEPOINT,
	SQ_RELEASE,
	SQ_ROLLBACK_TO,
	SQ__COUNT
};

/* One change waiting for delivery. Strings live in `keys` (res\0ns\0name\0). */
struct store_evnode {
	struct store_evnode *next;
	enum store_event_type type;
	int64_t rev;
	json_t *obj, *prev;         /* owned references, or NULL until parsed */
	char *obj_text, *prev_text; /* malloc'ed JSON text, or NULL */
	const char *res, *ns, *name;
	char keys[];
};

struct store_evqueue {
	struct store_evnode *head, *tail;
};

#define STORE_WBUCKETS 64
#define STORE_TXN_MAX  32

struct store_wbucket;

struct store_txn_level {
	int64_t rev, compacted_rev;
	struct store_evnode *mark; /* tail of the txn queue at begin */
};

/* A file as the store opened it (health checks compare these). */
struct store_fileid {
	dev_t dev;
	ino_t ino;
	bool known;
};

enum store_fault {
	STORE_FAULT_NONE,
	STORE_FAULT_WAL_LOST,    /* the WAL was unlinked or replaced */
	STORE_FAULT_DB_LOST,     /* the database file was unlinked or replaced */
	STORE_FAULT_WAL_GROWING, /* past opts.wal_max_pages */
	STORE_FAULT_REV_LOST,    /* a rebuilt WAL came back at an older revision */
	STORE_FAULT_NOSPACE,     /* SQLITE_FULL, until the disk has room again */
};

struct store_commit_waiter {
	struct store_commit_waiter *next;
	store_commit_cb cb;
	void *arg;
};

struct store {
	uv_loop_t *loop;
	sqlite3 *db;
	sqlite3_stmt *stmt[SQ__COUNT];
	struct store_counts *counts; /* store_count.c; NULL until asked for */
	struct store_opts opts;
	int64_t rev; /* latest revision, including an open txn */
	int64_t compacted_rev;
	uv_timer_t *timer; /* malloc'ed; freed by its close callback */

	/* group commit: one transaction per loop iteration (depth 1) */
	bool group_open;
	bool hold_publish;    /* group commit: publish after the waiters */
	uv_check_t *gc_check; /* malloc'ed; commits after the I/O phase */
	uv_idle_t *gc_idle;   /* keeps poll from blocking while open */
	struct store_commit_waiter *waiters;

	int txn_depth;
	bool txn_failed; /* an -EIO inside the txn: commit rolls back */
	struct store_txn_level txn[STORE_TXN_MAX];
	struct store_evqueue txn_q;  /* events of the open transaction */
	struct store_evqueue pend_q; /* committed, not yet delivered */

	char *wbuf; /* serialization buffer */
	size_t wbuf_cap;
	char *rbuf; /* store_get_raw's text */
	size_t rbuf_cap;
	struct store_ocache *ocache; /* store_cache.c: recently read objects' text */

	/* watches (store_watch.c) */
	struct store_wbucket *wbuckets[STORE_WBUCKETS];
	struct store_watch *wall; /* watches on every resource */
	struct store_watch *dead; /* unwatched during callbacks, to free */
	size_t nwatch;
	int busy; /* callbacks running (dispatch or replay) */

	sqlite3_stmt *snap_stmt[2]; /* store_snap.c, prepared on first use */
	struct store_ckpt *ckpt;    /* store_ckpt.c; NULL without a loop */
	struct store_stats stats;   /* commit latency (store_stats) */

	/* storage health (store.c, "health"; see store.h) */
	char *path; /* the database file */
	struct store_fileid db_id, wal_id;
	enum store_fault fault;
	int wal_pages;            /* WAL size at the last commit (wal hook) */
	bool commit_unsafe;       /* the last commit is not durable: -EROFS */
	uint64_t recover_at;      /* uv_hrtime() of the next recovery attempt */
	uv_timer_t *health_timer; /* malloc'ed; freed by its close callback */
	int64_t mark_saved;       /* the revision in DIR/kubicle.db-rev */
	bool exclusive;           /* no room for -shm at open: exclusive locking */
	struct store_warm *warm;  /* the WAL being started at open (store.c) */
};

/* Logs a SQLite failure and returns -EIO (the one place errors map). */
int store__sql_err(store_t *st, int rc, const char *what);
/* Steps a statement expecting SQLITE_DONE and resets it. 0 or -EIO. */
int store__exec(store_t *st, enum store_stmt s, const char *what);

/* store_cache.c: recently read objects' text (see there for the rules). */
int store__oc_get(store_t *st, const char *res, const char *ns, const char *name, const char **text,
		  size_t *len, int64_t *rev);
void store__oc_put(store_t *st, const char *res, const char *ns, const char *name, const char *text,
		   size_t len, int64_t rev);
void store__oc_drop(store_t *st, const char *res, const char *ns, const char *name);
void store__oc_clear(store_t *st);
void store__oc_free(store_t *st);
/* The newest committed revision (excludes an open transaction's writes). */
int64_t store__committed_rev(const store_t *st);

/* A continue key for (ns, name): malloc'ed base64url of "ns\0name". */
char *store__encode_key(const char *ns, size_t ns_len, const char *name, size_t name_len);
/* Decodes one into *buf ("ns\0name\0", malloc'ed; the namespace is *buf)
 * and *name (inside it). 0 or -EINVAL. */
int store__decode_key(const char *key, unsigned char **buf, const char **name);

/* store_snap.c: store_list for req->at < the current revision. */
int store__list_at(store_t *st, const struct store_list_req *req, struct store_list_result *out);

/* Health (store.c): called by the WAL hook with the WAL's size. */
void store__wal_size(store_t *st, int pages);

/* store_ckpt.c: background WAL checkpoints (a no-op without a loop). */
/* store_count.c: the objects per (res, ns), in memory. A create (+1) or
 * delete (-1) of a row moves its count; anything that undoes rows drops
 * them all (read again from objects when next asked for). */
void store__counts_move(store_t *st, const char *res, const char *ns, int delta);
void store__counts_drop(store_t *st);

/* Writes of the store's connection made outside store.c (the GPU ledger's)
 * pass the same health checks: store__write_check() first (0, or -EROFS
 * while a fault stands: tried to recover now and then), SQLite errors
 * through store__sql_err (a full disk becomes the NOSPACE fault), and
 * store__wrote() after an autocommit write (a removed WAL or database
 * file is detected as after a commit). Loop thread. */
int store__write_check(store_t *st);
void store__wrote(store_t *st);

int store__ckpt_start(store_t *st, const char *path);

/* store_vfs.c: the name of the VFS that gathers a WAL's writes into one per
 * transaction (registered at the first call), NULL when it could not be:
 * the default VFS is used then. */
#define STORE_VFS_NAME "kubicle-gather"
const char *store__vfs(void);
/* With st->ckpt: true once a background checkpoint has copied the whole
 * WAL with no commit since; else queues one (off the loop) and is false. */
bool store__ckpt_drained(store_t *st);
void store__ckpt_stop(store_t *st);
/* The WAL's restarts and whether the next keeps the file (store_stats). */
void store__ckpt_stats(const store_t *st, struct store_stats *out);

/* Background checkpoints (store_ckpt.c): one is queued every
 * STORE_CKPT_PAGES frames of WAL. */
#define STORE_CKPT_PAGES 1000
/*
 * Under a steady stream of writes a checkpoint beside them never lets the
 * WAL start over: the writer starts it over only when every frame is in
 * the database file (and synced), and frames keep coming while the worker
 * copies. Past STORE_CKPT_RESTART frames, the first commit after a worker's
 * checkpoint that copied all it saw runs one more on the loop, between two
 * transactions: it copies and syncs only the frames written meanwhile
 * (at most STORE_CKPT_CATCHUP; else the worker's run back to back until
 * one leaves so few), and the next transaction starts the WAL over. Past STORE_CKPT_LIMIT (a worker that cannot keep
 * up), one runs on the loop whatever it has to copy, as SQLite's own would.
 * Measured on a create stream (bench/README.md, "The loop's checkpoints"):
 * the loop's checkpoints at the limit alone waited 7 ms on average for
 * their two fdatasyncs, up to 18 ms, some 5 times a second.
 */
#define STORE_CKPT_RESTART (8 * STORE_CKPT_PAGES)
#define STORE_CKPT_CATCHUP 256
#define STORE_CKPT_LIMIT   (16 * STORE_CKPT_PAGES)
/*
 * journal_size_limit: the size SQLite cuts the WAL file to with the first
 * commit after the WAL started over. On a create stream that ftruncate took
 * 11-14 ms on the loop at every start over (as long as the database file's
 * sync; ext4 journals the size change, and waits for the journal's commit
 * that the checkpoint's syncs started), whatever it cut, and the file's
 * blocks were then allocated again (strace and perf, bench/README.md "The
 * WAL's size under a write stream"). So while the WAL starts over within
 * store_opts.wal_keep_ms of its last start (a stream), the limit is
 * STORE_WAL_KEEP_BYTES, the most the WAL holds before the loop copies it
 * all (STORE_CKPT_LIMIT frames and a catch-up; frames of 24 bytes and a
 * 4 KiB page after a 32-byte header): the file is written over in place,
 * never cut. A start over after a quieter spell cuts it to
 * STORE_JOURNAL_LIMIT again.
 */
#define STORE_JOURNAL_LIMIT  (4 * 1024 * 1024)
#define STORE_WAL_KEEP_BYTES ((STORE_CKPT_LIMIT + STORE_CKPT_CATCHUP) * (24 + 4096) + 32)
/* What a commit that left the WAL at `pages` frames starts: nothing, a
 * checkpoint on the worker, or one on the loop (after its commit, before
 * the next transaction). next_at: the size that queues the next worker's;
 * queued: one is queued or running; caught_up: the last one copied every
 * frame it saw, `seen` frames. */
enum store_ckpt_step { STORE_CKPT_NONE, STORE_CKPT_ON_WORKER, STORE_CKPT_ON_LOOP };
enum store_ckpt_step store__ckpt_step(int pages, int next_at, bool queued, bool caught_up,
				      int seen);

/* store_watch.c */
/* True when a watch might want events of `res`. */
bool store__watched(const store_t *st, const char *res);
/* A node for (res, ns, name), zeroed otherwise; NULL on ENOMEM. */
struct store_evnode *store__evnode_new(const char *res, const char *ns, const char *name);
void store__evnode_free(struct store_evnode *n);
/* Queues an event (node owned by the queue) on the txn queue or, outside a
 * transaction, on the pending queue followed by store__dispatch(). */
void store__emit(store_t *st, struct store_evnode *n);
/* Frees the txn queue after `mark` (NULL: all of it). */
void store__txn_drop(store_t *st, struct store_evnode *mark);
/* Moves the txn queue to the pending queue and delivers it. */
void store__txn_publish(store_t *st);
/* Delivers pending events unless callbacks are already running. */
void store__dispatch(store_t *st);
/* Frees every watch and queued event without callbacks (store_close). */
void store__watch_fini(store_t *st);

#endif
