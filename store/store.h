/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The object store: one SQLite database per tenant holding every object as
 * JSON, ordered by a single revision counter, with a watch event log.
 *
 * DESIGN
 * Threading: SQLite runs on the loop thread, synchronously. A tenant is one
 * process with one loop; its statements are prepared once, short, and hit a
 * database that fits in the page cache, so a write costs tens of
 * microseconds (a WAL append), less than handing it to another thread and
 * back. Every function here must be called from the loop thread that opened
 * the store. Nothing here waits on the network. The one exception is the
 * WAL checkpoint (two fdatasyncs): with a loop it runs on a libuv worker
 * thread with a connection of its own (store_ckpt.c).
 *
 * Durability: WAL mode. Each write (or each store_txn_begin/commit batch) is
 * one SQLite transaction, committed before the function returns, so an
 * acknowledged write survives kill -9 of the server. With opts.group_commit,
 * the writes made during one loop iteration share one transaction instead,
 * committed in a check handle after that iteration's I/O callbacks (an idle
 * handle keeps the loop from blocking meanwhile); store_pending() tells that
 * writes wait for that commit and store_on_commit() calls back once they are
 * durable (or lost), so that a caller acknowledges a write only after it. With synchronous=NORMAL
 * (the default) a power loss may drop the last transactions but never
 * corrupts the database; opts.sync_full makes each commit fsync.
 *
 * Revisions: one counter per store. Every create, update and delete takes
 * the next revision, which becomes the object's metadata.resourceVersion
 * (the store writes it into the object) and the event's revision.
 *
 * Watch history: each change is a row of the event table, which holds the
 * object's data (written once: an object's key points at the event of its
 * current state). A watch asks for the changes after revision R; if R is
 * older than the compacted revision the watch is refused with -ERANGE
 * (HTTP 410 Gone). A timer compacts the history on a schedule, keeping
 * opts.history_keep revisions (and every object's current state). History
 * survives restarts.
 *
 * Keys: (resource, namespace, name). `resource` is "<group>/<plural>"
 * ("/pods", "apps/deployments"); `namespace` is "" for cluster-scoped objects.
 *
 * Errors: 0 or a negative errno: -ENOENT (no such object), -EEXIST (exists),
 * -ESTALE (resourceVersion precondition failed), -ERANGE (revision
 * compacted), -EINVAL (bad argument), -EIO (SQLite failed; logged),
 * -ENOSPC (the disk is full), -EROFS (the store refuses writes: see Health).
 *
 * Health: a write is acknowledged only when it is in the database file or
 * in a WAL that the file system still links to the database (durable
 * against a crash of the process; against a power loss as far as
 * opts.sync_full allows). After each
 * commit, and every second, the store checks that the database file and
 * its WAL are still the files it opened. When the WAL was removed (an
 * operator's `rm`, a cleaner), the commits since then live only in the
 * unlinked WAL this process still has open, and a crash would lose them:
 * the store copies them into the database file (a TRUNCATE checkpoint from
 * the live connection, which reads the unlinked WAL, then fsyncs the
 * file), leaves WAL mode and enters it again, which creates a new, linked
 * WAL. If that succeeds before the commit's writers are told, the commit
 * is acknowledged as usual; if it fails, they get -EROFS and so does every
 * write until a later attempt (at most every 250 ms, on a write or on the
 * timer) succeeds. The window left: a WAL removed and the process killed
 * before the next check (the next commit, or a second later) loses the
 * acknowledged commits not yet checkpointed, as removing the WAL of a
 * stopped server would.
 * The same refusal holds while the WAL is past
 * opts.wal_max_pages (checkpoints keep failing), after the disk filled up
 * (SQLITE_FULL: until the file system has 1 MiB free; a store opened on a
 * full disk, with no room for the WAL index, runs with SQLite's exclusive
 * locking and the index in memory until there is room), and when the database file
 * itself was removed or replaced (not recoverable in place: the revision
 * could go backwards at the next start). store_health() tells which.
 * Revisions never go backwards: DIR/<db>-rev marks the newest one committed
 * (every second and at close, by a store with a loop), and a store opened
 * below its mark moves past it with its history compacted (store.c,
 * mark_check), so that watchers relist.
 *
 * Ownership: json_t pointers passed in are borrowed (the store may set
 * metadata.resourceVersion in them); json_t pointers handed out through
 * `**_out` are new references the caller must json_decref.
 */
#ifndef KB_STORE_H
#define KB_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct store store_t;
typedef struct store_watch store_watch_t;

struct store_opts {
	bool sync_full;               /* PRAGMA synchronous=FULL instead of NORMAL */
	int64_t history_keep;         /* revisions of watch history kept; 0: 10000 */
	unsigned compact_interval_ms; /* 0: 60000 */
	int cache_kib;                /* SQLite page cache; 0: 2048 */
	bool group_commit;            /* batch the writes of one loop iteration */
	int wal_max_pages;            /* WAL size (pages) past which writes are refused
			      because checkpoints do not keep up; 0: 32000 */
	int wal_keep_ms;              /* the WAL file keeps its size when it starts over within
			    this long of its last start (a write stream; see
			    store_ckpt.c); 0: 10000, negative: never kept */
};

/* Opens (creating if needed) the database at `path`. */
int store_open(uv_loop_t *loop, const char *path, const struct store_opts *opts, store_t **out);
/* Closes the database; cancels every watch without calling it back. */
void store_close(store_t *st);

/* The latest revision (0 for an empty store). */
int64_t store_rev(const store_t *st);
/* The oldest revision a watch may start from (events after it are kept). */
int64_t store_compacted_rev(const store_t *st);

/* Reads one object. *obj_out gets a new reference. */
int store_get(store_t *st, const char *res, const char *ns, const char *name, json_t **obj_out);
/* Reads one object as its stored JSON text; *text is borrowed and valid
 * until the next store call. */
int store_get_raw(store_t *st, const char *res, const char *ns, const char *name, const char **text,
		  size_t *len, int64_t *rev_out);

/* Creates; -EEXIST if the key exists. Sets metadata.resourceVersion in obj.
 * *rev_out (may be NULL) gets the new revision. */
int store_create(store_t *st, const char *res, const char *ns, const char *name, json_t *obj,
		 int64_t *rev_out);
/* store_create for a caller that will not change obj again (it may still
 * read it and drop its reference): watchers are given obj itself rather
 * than a copy made for them. */
int store_create_final(store_t *st, const char *res, const char *ns, const char *name, json_t *obj,
		       int64_t *rev_out);
/* Replaces; -ENOENT if absent; -ESTALE if expected_rev != 0 and differs from
 * the stored revision. Sets metadata.resourceVersion in obj. */
int store_update(store_t *st, const char *res, const char *ns, const char *name, json_t *obj,
		 int64_t expected_rev, int64_t *rev_out);
/* Removes; -ENOENT, -ESTALE as above. *last_out (may be NULL) gets the object
 * as deleted, its metadata.resourceVersion set to the deletion revision. */
int store_delete(store_t *st, const char *res, const char *ns, const char *name,
		 int64_t expected_rev, json_t **last_out, int64_t *rev_out);

typedef bool (*store_filter_fn)(const json_t *obj, void *arg);

struct store_list_req {
	const char *res;
	const char *ns;         /* NULL: every namespace */
	const char *after;      /* continue key from a previous page or NULL */
	size_t limit;           /* 0: no limit */
	store_filter_fn filter; /* NULL: all objects */
	void *filter_arg;
	int64_t at;          /* 0: now; else as of this earlier revision (a continue
		       token's): -ERANGE when what it needs was compacted */
	bool want_remaining; /* count the objects after the page (no filter
				should then drop any: kube counts only without
				a selector) */
};

struct store_list_result {
	json_t *items;     /* new reference: array of objects, in key order */
	char *next;        /* malloc'ed continue key, NULL on the last page */
	int64_t rev;       /* store revision at the time of the list */
	int64_t remaining; /* want_remaining and `next` set: the objects after
			      the page; else -1 (also for a list `at` an
			      earlier revision) */
};

/* Lists objects ordered by (namespace, name). With `limit`, stops after that
 * many matching objects and sets `next` when more may follow. With `at`, the
 * objects are those of revision `at` (store_snap.c). */
int store_list(store_t *st, const struct store_list_req *req, struct store_list_result *out);
/* The whole list (req->limit, after and at unused) as the objects' stored
 * JSON texts, for a caller that writes them out rather than build a tree:
 * cb(text, len, arg) per object in key order (text borrowed for the call;
 * req->filter, if any, sees each object parsed). *rev gets the store
 * revision. 0, a negative errno, or the first non-zero return of cb. */
int store_list_text(store_t *st, const struct store_list_req *req,
		    int (*cb)(const char *text, size_t len, void *arg), void *arg, int64_t *rev);
/* One page of store_list as stored texts given to cb (as store_list_text
 * does): req->limit, after and want_remaining as store_list takes them;
 * out gets next, remaining and rev (items stays NULL). -EAGAIN when req->at
 * is an earlier revision than now (store_list merges what changed since). */
int store_list_text_page(store_t *st, const struct store_list_req *req,
			 int (*cb)(const char *text, size_t len, void *arg), void *arg,
			 struct store_list_result *out);
/* Number of objects of a resource (in `ns`, or everywhere when NULL). */
int store_count(store_t *st, const char *res, const char *ns, size_t *count);
/* Number of objects of every resource that has some (kept in memory;
 * read from the objects' index on first use: store_count.c):
 * cb(res, count, arg) once per resource key, in key order (res borrowed
 * for the call; cb must not write to the store). 0, -ENOMEM or -EIO. */
int store_count_each(store_t *st, void (*cb)(const char *res, int64_t count, void *arg), void *arg);

/* Commit latency (each SQLite COMMIT of a write, a transaction or a group
 * commit), as histogram buckets: commits[i] counts those of at most
 * STORE_COMMIT_BOUNDS[i] seconds (above the previous bound), commits[N]
 * the slower ones. */
#define STORE_COMMIT_NBOUNDS 12
extern const double STORE_COMMIT_BOUNDS[STORE_COMMIT_NBOUNDS];
/* The faults store_health() reports, by the names of the metrics' reason
 * label ([0]: "other", no fault standing any more). */
#define STORE_NFAULTS 6
extern const char *const STORE_FAULT_REASONS[STORE_NFAULTS];
struct store_stats {
	uint64_t commits[STORE_COMMIT_NBOUNDS + 1];
	double commit_seconds; /* sum */
	/* writes answered -EROFS, by the fault standing (index of
	 * STORE_FAULT_REASONS); removed WALs rebuilt; the fault now (0: none) */
	uint64_t refused[STORE_NFAULTS];
	uint64_t wal_rebuilds;
	int fault;
	int wal_frames;        /* frames in the WAL at the last commit */
	uint64_t wal_restarts; /* times the WAL started over */
	bool wal_kept;         /* the next start over keeps the file's size */
};
void store_stats(const store_t *st, struct store_stats *out);

/* The WAL writes the store's VFS gathered, and the writes it made of them,
 * in this process (store_vfs.c). */
struct store_vfs_stats {
	uint64_t gathered, writes;
};
void store_vfs_stats(struct store_vfs_stats *out);

/* Batches several writes into one transaction. Nested calls count; events
 * reach watchers after the outermost commit. On rollback, nothing written
 * since begin is kept and no event is sent. */
int store_txn_begin(store_t *st);
int store_txn_commit(store_t *st);
void store_txn_rollback(store_t *st);

enum store_event_type { STORE_ADDED = 1, STORE_MODIFIED, STORE_DELETED };

struct store_event {
	enum store_event_type type;
	int64_t rev;
	const char *res, *ns, *name;
	json_t *obj;  /* borrowed for the callback: the new object (DELETED: last) */
	json_t *prev; /* borrowed: the object before the change, NULL for ADDED
			  and for events replayed from history */
};

typedef void (*store_watch_cb)(const struct store_event *ev, void *arg);

/*
 * Watches `res` (in `ns`, or everywhere when NULL; res NULL: every resource)
 * for changes after revision `since`. Changes already in the history are
 * replayed synchronously, in order, before store_watch returns (*out is set
 * before the first callback). Later changes are delivered after their
 * transaction commits. The callback may call store_unwatch on its own watch.
 * -ERANGE if `since` is older than the compacted revision.
 */
int store_watch(store_t *st, const char *res, const char *ns, int64_t since, store_watch_cb cb,
		void *arg, store_watch_t **out);
/*
 * Gives the watch a warm-up: during a fan-out, `warm(arg)` is called a step
 * before the callback of this watch, so that it can prefetch the memory the
 * callback will touch (a fan-out to many watches waits on cache misses). It
 * must do nothing else: the watch may still be dropped before its callback.
 */
void store_watch_set_warm(store_watch_t *w, void (*warm)(void *arg));
/* Stops a watch; no callback follows. Safe inside a callback. */
void store_unwatch(store_watch_t *w);
/* Number of live watches. */
size_t store_watch_count(const store_t *st);

/* True while writes wait for a group commit (opts.group_commit). */
bool store_pending(const store_t *st);
typedef void (*store_commit_cb)(int status, void *arg);
/* Calls cb once the pending group commit is done: status 0, or -EIO when it
 * failed and its writes were lost. -EALREADY when nothing is pending (cb is
 * not called). */
int store_on_commit(store_t *st, store_commit_cb cb, void *arg);

/* Commits the pending group now (callbacks run before it returns). */
void store_flush(store_t *st);

/* 0 when writes are accepted, else -EROFS with a one-line reason in `why`
 * (may be NULL). Loop thread. */
int store_health(const store_t *st, char *why, size_t len);

/* Background WAL checkpoints completed so far (0 without a loop). */
size_t store_checkpoints(const store_t *st);
/* A background checkpoint is queued or running (its end not yet seen by
 * the loop). */
bool store_checkpoint_pending(const store_t *st);

/* Drops history up to `rev` (inclusive) right now; the objects' current
 * states stay. */
int store_compact(store_t *st, int64_t rev);

/* Small settings kept beside the objects (cluster uid, keys...). *out is a
 * malloc'ed string. -ENOENT when absent. */
int store_kv_get(store_t *st, const char *key, char **out);
int store_kv_set(store_t *st, const char *key, const char *value);

/* ---- the GPU allocation ledger (store_ledger.c) ----------------------------
 * Two tables beside the objects, written by the syncer (syncer/ledger.c)
 * and read by `kubicle usage` (cmd/usage.c), also from other processes
 * while the tenant runs (a read-only connection: a WAL reader). Times are
 * Unix seconds from the host's timestamps; `end` 0 means "still open".
 * Rows are keyed by (uid, start), so writing the same host fact twice (a
 * restart, a relist) changes nothing. */
struct store_alloc {
	const char *host_uid;             /* the host pod's uid */
	int64_t start, end;               /* bound ... released (0: still held) */
	const char *end_kind;             /* "finished" "deleted" "gone"; NULL open */
	const char *ns, *pod, *pod_uid;   /* the tenant pod */
	const char *queue, *node, *model; /* model: nvidia.com/gpu.product, "" unknown */
	const char *sharing;              /* "whole" "mig" "fraction" "hami" "timeslice" */
	double gpus;                      /* the share of GPUs held */
	const char *detail;               /* what the host pod asked, e.g. "mig-1g.10gb x1" */
};
struct store_node_cap {
	const char *node_uid, *node, *model;
	int64_t start, end; /* end 0: still there */
	const char *end_kind;
	double gpus; /* physical GPUs */
};
typedef struct store_ledger store_ledger_t;
/* The ledger of st (tables made when missing). Loop thread, like st;
 * close before store_close. 0 or -EIO / -ENOMEM. */
int store_ledger_open(store_t *st, store_ledger_t **out);
void store_ledger_close(store_ledger_t *l);
/* Opens the ledger of the store file `path` read-only (any thread, no loop;
 * the tenant may run). -ENOENT when the file is missing. */
int store_ledger_open_ro(const char *path, store_ledger_t **out);
/* Upserts; an open row (end 0) never reopens a closed one. A host pod is
 * bound once: store_ledger_put drops its rows under another start. 0 or
 * -EIO. */
int store_ledger_put(store_ledger_t *l, const struct store_alloc *a);
int store_ledger_put_node(store_ledger_t *l, const struct store_node_cap *c);
/*
 * GPU-seconds of the rows overlapping [since, until) (both required), each
 * clipped to it, an open row lasting until open_end, to cb; strings
 * borrowed for the call. By kind:
 * - STORE_LEDGER_ROWS: one call per row (a scan of the table; every field
 *   of the sum set);
 * - STORE_LEDGER_TOTALS: the same with model and node only (ns, pod and
 *   queue NULL), read from a covering index: a quicker scan;
 * - STORE_LEDGER_PODS: one call per pod, model and node, summed in SQL,
 *   ordered by namespace, pod, model and node and read in the order of that
 *   index (no sort, memory that does not grow with the pods; queue NULL).
 * 0 or -EIO.
 */
enum store_ledger_sums { STORE_LEDGER_ROWS, STORE_LEDGER_TOTALS, STORE_LEDGER_PODS };
struct store_alloc_sum {
	const char *ns, *pod, *queue, *node, *model;
	double gpu_seconds;
};
int store_ledger_sums(store_ledger_t *l, enum store_ledger_sums kind, int64_t since, int64_t until,
		      int64_t open_end, void (*cb)(const struct store_alloc_sum *s, void *arg),
		      void *arg);
/* The rows still open or ended after `since`, to cb, read by the index on
 * their end (not a scan of the ledger: /metrics at each scrape). 0 or
 * -EIO. */
int store_ledger_each_recent(store_ledger_t *l, int64_t since,
			     void (*cb)(const struct store_alloc *a, void *arg), void *arg);
/* Every row overlapping [since, until) (until 0: no end), to cb (strings
 * borrowed for the call). 0 or -EIO. */
int store_ledger_each(store_ledger_t *l, int64_t since, int64_t until,
		      void (*cb)(const struct store_alloc *a, void *arg), void *arg);
int store_ledger_each_node(store_ledger_t *l, int64_t since, int64_t until,
			   void (*cb)(const struct store_node_cap *c, void *arg), void *arg);
/* Closes the open rows whose uid is not in `keep` (a borrowed JSON object
 * whose keys are uids) at `end` with end_kind "gone"; nodes when `nodes`. */
int store_ledger_close_missing(store_ledger_t *l, bool nodes, const json_t *keep, int64_t end);
/* Deletes every row (a store restored as another tenant: its history is
 * the other's). */
int store_ledger_clear(store_ledger_t *l);
/* Deletes rows that ended before `before` (retention). */
int store_ledger_prune(store_ledger_t *l, int64_t before);
/* "seen": until when the writer had a live view of the host (open rows are
 * true at least until then). 0 when never set. */
int store_ledger_set_seen(store_ledger_t *l, int64_t t);
int64_t store_ledger_seen(store_ledger_t *l);

#endif
