/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The object store on SQLite: opening and schema, the revision counter,
 * create/get/update/delete with their event rows, list and count,
 * transactions, compaction and the small key/value table. Watches and event
 * delivery live in store_watch.c; contracts are in store.h.
 *
 * DESIGN
 * Every statement is prepared once in store_open and reset right after use,
 * so no read snapshot outlives a call. A write outside store_txn_begin is
 * one BEGIN IMMEDIATE ... COMMIT; inside, nested levels are SAVEPOINTs.
 * Each write checks its preconditions (-EEXIST, -ENOENT, -ESTALE) before it
 * changes anything (a create's -EEXIST is its object insert refused by the
 * primary key, which SQLite undoes alone), so only an SQLite failure can
 * leave a half-done write; that poisons the open transaction, whose commit
 * then rolls back (-EIO).
 *
 * The current revision is not written on every change: it is the largest
 * event revision, or the compacted revision when compaction emptied the
 * history (meta "rev" is also written at compaction and close). Meta keys of
 * store_kv_* are prefixed with "kv/" so they never collide with ours.
 */
#include "store/store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/prom.h"
#include "lib/util.h"

#define STORE_SCHEMA_VERSION  2
#define STORE_BUSY_TIMEOUT_MS 5000
#define STORE_LOOKASIDE_SZ    256
#define STORE_LOOKASIDE_CNT   64
#define STORE_MMAP_SIZE       (256LL * 1024 * 1024)
/* The timer deletes at most this many events per run (a short pause of the
 * loop); when more are due it runs again right away. */
#define STORE_COMPACT_BATCH 1000
/* Past this many WAL pages (128 MiB of 4 KiB pages; a checkpoint normally
 * restarts the WAL at 1,000: store_ckpt.c) checkpoints are failing: writes
 * are refused until one succeeds. */
#define STORE_WAL_MAX_PAGES 32000
/* Health checks of the files (store.h, Health): every second, and a failed
 * recovery is tried again at most this often. */
#define STORE_HEALTH_MS       1000
#define STORE_RECOVER_NS      (250ULL * 1000 * 1000)
#define STORE_REBUILD_BUSY_MS 100
/* A store found older than the revisions it served goes on this far past
 * them (more than the writes of the second the mark may lag). */
#define STORE_REV_BUMP 1000000
/* After SQLITE_FULL, writes are refused until the file system has this
 * much room again. */
#define STORE_FREE_BYTES (1024ULL * 1024)

/*
 * An object's data is written once, in its event row; objects is the key
 * index that points at the event holding the current state, as etcd's key
 * index points at a revision. Each create then writes its ~4.5 KiB object
 * (an overflow page of 4 KiB) once instead of twice. objects, with no data,
 * is a WITHOUT ROWID table: one b-tree keyed by (res, ns, name) instead of a
 * rowid table plus its primary key's index. A get is the key's rev, then
 * the event row by its rowid (rev); a list is one scan of objects' b-tree
 * and a rowid lookup per row (CROSS JOIN keeps objects the outer loop).
 *
 * Compaction deletes the event rows at or below its revision that no key
 * points at: the rows at or below the compacted revision are exactly the
 * current states of the keys whose last write is that old. A write that
 * replaces or deletes such a state deletes its row (drop_kept), so that
 * each compaction only looks at the revisions it compacts. Every reader of
 * the history (replay, the snapshot lists' scans) starts above the
 * compacted revision and never sees the kept rows.
 *
 * Version 1 stores (the data in both tables) are migrated at open
 * (migrate_v1).
 */
/* objects' columns, in schema_sql and migrate_v1_sql */
#define OBJECTS_COLS                                                                      \
	"(res TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL, rev INTEGER NOT NULL," \
	" PRIMARY KEY(res, ns, name)) WITHOUT ROWID;"

/* clang-format off */
static const char *const schema_sql =
    "CREATE TABLE IF NOT EXISTS objects" OBJECTS_COLS
    "CREATE TABLE IF NOT EXISTS events("
    " rev INTEGER PRIMARY KEY, type INTEGER NOT NULL, res TEXT NOT NULL,"
    " ns TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS meta("
    " key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "PRAGMA user_version = 2;";

/*
 * Version 1 to 2, in one transaction: every object whose event row was
 * compacted away gets one at its revision carrying its data (as an ADDED:
 * it is at or below the compacted revision, never replayed), then objects
 * is made again without its data. Its count triggers go with the old
 * table, and obj_counts is dropped: the counts are kept in memory now
 * (store_count.c).
 */
static const char *const migrate_v1_sql =
    "INSERT INTO events(rev, type, res, ns, name, data)"
    " SELECT o.rev, 1, o.res, o.ns, o.name, o.data FROM objects o"
    " WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.rev = o.rev);"
    "CREATE TABLE objects_v2" OBJECTS_COLS
    "INSERT INTO objects_v2(res, ns, name, rev) SELECT res, ns, name, rev FROM objects;"
    "DROP TABLE objects;"
    "DROP TABLE IF EXISTS obj_counts;"
    "ALTER TABLE objects_v2 RENAME TO objects;"
    "PRAGMA user_version = 2;";
/* clang-format on */

static const char *const stmt_sql[SQ__COUNT] = {
    [SQ_GET] = "SELECT o.rev, e.data FROM objects o CROSS JOIN events e ON e.rev = o.rev"
	       " WHERE o.res = ?1 AND o.ns = ?2 AND o.name = ?3",
    [SQ_REV] = "SELECT rev FROM objects WHERE res = ?1 AND ns = ?2 AND name = ?3",
    [SQ_INS_OBJ] = "INSERT INTO objects(res, ns, name, rev) VALUES(?1, ?2, ?3, ?4)",
    [SQ_UPD_OBJ] = "UPDATE objects SET rev = ?4 WHERE res = ?1 AND ns = ?2 AND name = ?3",
    [SQ_DEL_OBJ] = "DELETE FROM objects WHERE res = ?1 AND ns = ?2 AND name = ?3",
    [SQ_INS_EV] =
	"INSERT INTO events(rev, type, res, ns, name, data) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [SQ_DEL_EV] = "DELETE FROM events WHERE rev = ?1",
    [SQ_LIST_ALL] = "SELECT o.ns, o.name, e.data FROM objects o CROSS JOIN events e"
		    " ON e.rev = o.rev WHERE o.res = ?1 AND (o.ns, o.name) > (?2, ?3)"
		    " ORDER BY o.ns, o.name",
    [SQ_LIST_NS] = "SELECT o.ns, o.name, e.data FROM objects o CROSS JOIN events e"
		   " ON e.rev = o.rev WHERE o.res = ?1 AND o.ns = ?2 AND o.name > ?3"
		   " ORDER BY o.name",
    /* remainingItemCount: the keys after a page's last, from the index */
    [SQ_REMAIN_ALL] = "SELECT count(*) FROM objects WHERE res = ?1 AND (ns, name) > (?2, ?3)",
    [SQ_REMAIN_NS] = "SELECT count(*) FROM objects WHERE res = ?1 AND ns = ?2 AND name > ?3",
    [SQ_COUNT_EACH] = "SELECT res, ns, count(*) FROM objects GROUP BY res, ns",
    [SQ_REPLAY] = "SELECT rev, type, res, ns, name, data FROM events"
		  " WHERE rev > ?1 AND rev <= ?2 AND (?3 IS NULL OR res = ?3)"
		  " AND (?4 IS NULL OR ns = ?4) ORDER BY rev LIMIT ?5",
    /* the revisions (?2, ?1] but for the current states (see above) */
    [SQ_COMPACT] = "DELETE FROM events WHERE rev > ?2 AND rev <= ?1 AND NOT EXISTS"
		   " (SELECT 1 FROM objects o WHERE o.res = events.res AND o.ns = events.ns"
		   " AND o.name = events.name AND o.rev = events.rev)",
    [SQ_META_GET] = "SELECT value FROM meta WHERE key = ?1",
    [SQ_META_SET] = "INSERT INTO meta(key, value) VALUES(?1, ?2)"
		    " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    [SQ_BEGIN] = "BEGIN IMMEDIATE",
    [SQ_COMMIT] = "COMMIT",
    [SQ_ROLLBACK] = "ROLLBACK",
    [SQ_SAVEPOINT] = "SAVEPOINT kb_txn",
    [SQ_RELEASE] = "RELEASE kb_txn",
    [SQ_ROLLBACK_TO] = "ROLLBACK TO kb_txn",
};

/* ---- SQLite helpers ---------------------------------------------------- */

static void disk_full(store_t *st);

int store__sql_err(store_t *st, int rc, const char *what)
{
	kb_err("store", "%s: %s (sqlite %d)", what, st->db ? sqlite3_errmsg(st->db) : "", rc);
	if ((rc & 0xff) != SQLITE_FULL)
		return -EIO;
	disk_full(st);
	return -ENOSPC;
}

static void warm_join(store_t *st);

int store__exec(store_t *st, enum store_stmt s, const char *what)
{
	if (s == SQ_BEGIN)
		warm_join(st);
	sqlite3_stmt *q = st->stmt[s];
	int rc = sqlite3_step(q);
	sqlite3_reset(q);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return store__sql_err(st, rc, what);
	return 0;
}

static void group_fini(store_t *st);
static int group_init(store_t *st);
static int health_init(store_t *st);
static bool room_again(const store_t *st);
static void mark_save(store_t *st);

int64_t store__committed_rev(const store_t *st)
{
	return st->txn_depth > 0 ? st->txn[0].rev : st->rev;
}

static void bind_key(sqlite3_stmt *q, const char *res, const char *ns, const char *name)
{
	sqlite3_bind_text(q, 1, res, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, name, -1, SQLITE_STATIC);
}

static bool key_ok(const char *res, const char *ns, const char *name)
{
	return res && *res && ns && name && *name;
}

/* Runs a statement whose bindings are set; 0 on success, -EIO otherwise. */
static int step_done(store_t *st, sqlite3_stmt *q, const char *what)
{
	int rc = sqlite3_step(q);
	sqlite3_reset(q);
	return rc == SQLITE_DONE ? 0 : store__sql_err(st, rc, what);
}

static int meta_set_int(store_t *st, const char *key, int64_t v)
{
	sqlite3_stmt *q = st->stmt[SQ_META_SET];
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, v);
	return step_done(st, q, "meta set");
}

/* 0 and *v set, -ENOENT, or -EIO. */
static int meta_get_int(store_t *st, const char *key, int64_t *v)
{
	sqlite3_stmt *q = st->stmt[SQ_META_GET];
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(q, 0);
	sqlite3_reset(q);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -ENOENT : store__sql_err(st, rc, "meta get");
}

/* ---- open and close ---------------------------------------------------- */

static int exec_sql(store_t *st, const char *sql, const char *what)
{
	warm_join(st);
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
	return rc == SQLITE_OK ? 0 : store__sql_err(st, rc, what);
}

static int pragma_int(store_t *st, const char *sql, int64_t *out)
{
	sqlite3_stmt *q;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &q, NULL);
	if (rc != SQLITE_OK)
		return store__sql_err(st, rc, sql);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW && out)
		*out = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store__sql_err(st, rc, sql);
	return 0;
}

static int set_journal(store_t *st)
{
	sqlite3_stmt *q;
	int rc = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &q, NULL);
	if (rc != SQLITE_OK)
		return store__sql_err(st, rc, "journal_mode");
	rc = sqlite3_step(q);
	bool wal = rc == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(q, 0), "wal") == 0;
	sqlite3_finalize(q);
	if (!wal) {
		kb_err("store", "cannot switch to WAL mode");
		return -EIO;
	}
	return 0;
}

static int configure(store_t *st)
{
	char sql[128];
	sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
	int err = 0;
	if (st->exclusive)
		err = exec_sql(st, "PRAGMA locking_mode = EXCLUSIVE", "locking_mode");
	if (!err)
		err = set_journal(st);
	if (err)
		return err;
	err = exec_sql(
	    st, st->opts.sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
	    "synchronous");
	if (err)
		return err;
	snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit = %d", STORE_JOURNAL_LIMIT);
	err = exec_sql(st, sql, "journal_size_limit");
	if (err)
		return err;
	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%d", st->opts.cache_kib);
	err = exec_sql(st, sql, "cache_size");
	if (err)
		return err;
	/* Reads of the main file through the mapping skip a pread per page
	 * missed in the (small) page cache; the mapping only costs resident
	 * memory for pages actually read, and the kernel may drop those. */
	snprintf(sql, sizeof(sql), "PRAGMA mmap_size = %lld", (long long)STORE_MMAP_SIZE);
	return exec_sql(st, sql, "mmap_size");
}

/* Runs `sql` in one write transaction. */
static int exec_txn(store_t *st, const char *sql, const char *what)
{
	int err = exec_sql(st, "BEGIN IMMEDIATE", what);
	if (!err)
		err = exec_sql(st, sql, what);
	if (!err)
		return exec_sql(st, "COMMIT", what);
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return err;
}

static int init_schema(store_t *st)
{
	int64_t version = 0;
	int err = pragma_int(st, "PRAGMA user_version", &version);
	if (err)
		return err;
	if (version == STORE_SCHEMA_VERSION)
		return 0;
	if (version == 1) {
		kb_info("store", "%s: moving the objects' data into their event rows (schema 2)",
			st->path ? st->path : "the store");
		return exec_txn(st, migrate_v1_sql, "schema 1 to 2");
	}
	if (version != 0) {
		kb_err("store", "unknown schema version %" PRId64, version);
		return -EIO;
	}
	return exec_txn(st, schema_sql, "schema");
}

static int prepare_all(store_t *st)
{
	for (int i = 0; i < SQ__COUNT; i++) {
		int rc = sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					    &st->stmt[i], NULL);
		if (rc != SQLITE_OK)
			return store__sql_err(st, rc, stmt_sql[i]);
	}
	return 0;
}

/* The revisions as the database holds them: see DESIGN above. */
static int stored_revs(store_t *st, int64_t *rev, int64_t *compacted)
{
	int64_t max_ev = 0, meta_rev = 0;
	*compacted = 0;
	int err = meta_get_int(st, "compacted", compacted);
	if (err && err != -ENOENT)
		return err;
	err = meta_get_int(st, "rev", &meta_rev);
	if (err && err != -ENOENT)
		return err;
	err = pragma_int(st, "SELECT coalesce(max(rev), 0) FROM events", &max_ev);
	if (err)
		return err;
	*rev = *compacted;
	if (meta_rev > *rev)
		*rev = meta_rev;
	if (max_ev > *rev)
		*rev = max_ev;
	return 0;
}

static int load_revs(store_t *st)
{
	return stored_revs(st, &st->rev, &st->compacted_rev);
}

static void compact_timer_cb(uv_timer_t *t)
{
	store_t *st = t->data;
	if (st->txn_depth > 0)
		return;
	int64_t target = st->rev - st->opts.history_keep;
	if (target <= st->compacted_rev)
		return;
	bool more = target - st->compacted_rev > STORE_COMPACT_BATCH;
	if (more)
		target = st->compacted_rev + STORE_COMPACT_BATCH;
	if (store_compact(st, target) == 0 && more) /* failures are logged */
		uv_timer_start(t, compact_timer_cb, 1, st->opts.compact_interval_ms);
}

static int start_timer(store_t *st)
{
	if (!st->loop)
		return 0;
	st->timer = malloc(sizeof(*st->timer));
	if (!st->timer)
		return -ENOMEM;
	int rc = uv_timer_init(st->loop, st->timer);
	if (rc) {
		free(st->timer);
		st->timer = NULL;
		return rc;
	}
	st->timer->data = st;
	uv_unref((uv_handle_t *)st->timer);
	return uv_timer_start(st->timer, compact_timer_cb, st->opts.compact_interval_ms,
			      st->opts.compact_interval_ms);
}

static void set_opts(store_t *st, const struct store_opts *opts)
{
	if (opts)
		st->opts = *opts;
	if (st->opts.history_keep <= 0)
		st->opts.history_keep = 10000;
	if (st->opts.compact_interval_ms == 0)
		st->opts.compact_interval_ms = 60000;
	if (st->opts.cache_kib <= 0)
		st->opts.cache_kib = 2048;
	if (st->opts.wal_max_pages <= 0)
		st->opts.wal_max_pages = STORE_WAL_MAX_PAGES;
	if (st->opts.wal_keep_ms == 0)
		st->opts.wal_keep_ms = 10000;
}

static int open_db(store_t *st, const char *path)
{
	int rc = sqlite3_open_v2(path, &st->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				 store__vfs());
	if (rc != SQLITE_OK) {
		kb_err("store", "open %s: %s", path,
		       st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
		return -EIO;
	}
	/* A small lookaside keeps an idle tenant's footprint low. */
	sqlite3_db_config(st->db, SQLITE_DBCONFIG_LOOKASIDE, NULL, STORE_LOOKASIDE_SZ,
			  STORE_LOOKASIDE_CNT);
	sqlite3_extended_result_codes(st->db, 1);
	return 0;
}

static int fsync_path(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/*
 * A new database is made whole under a temporary name (per process) and
 * linked into place (never over a store another process made meanwhile): the schema and the WAL mode written with no journal and no sync,
 * then one fsync of the file, so that the name never points at a torn one.
 * Made in place, SQLite switches the empty file to WAL through a rollback
 * journal (a journal file created and removed, four fdatasyncs) before the
 * schema's transaction; on a tenant's first start that was 1.5-10 ms. Any
 * failure leaves nothing behind and store_open makes the file in place as
 * before (a full disk is handled there). The file then opens as an
 * existing one at its schema version: init_schema writes nothing.
 *
 * The folder is not synced here: the link is made durable by the store's
 * first commit, which writes a new WAL and syncs it and then its folder
 * (SQLite syncs the folder of a WAL it created at the WAL's first sync, and
 * the first frames' header is always synced). Until that commit the store
 * holds nothing a crash could lose: a power loss may leave no kubicle.db,
 * and the next open makes the empty one again. On a first start that
 * folder fsync was the second of two on the serving thread's path.
 */
static void create_fresh(const char *path)
{
	char tmp[4096], side[4200];
	struct stat sb;
	if (stat(path, &sb) == 0 || errno != ENOENT ||
	    snprintf(tmp, sizeof(tmp), "%s.new.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return;
	unlink(tmp);
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;", NULL,
				  NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, schema_sql, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
	if (sqlite3_close(db) != SQLITE_OK)
		rc = SQLITE_ERROR;
	for (const char *ext = "-wal"; ext; ext = ext[1] == 'w' ? "-shm" : NULL) {
		snprintf(side, sizeof(side), "%s%s", tmp, ext);
		unlink(side);
	}
	/* link, not rename: a store another process made meanwhile is kept (its
	 * opener loses nothing) and this one is dropped; the name is per process */
	if (rc != SQLITE_OK || fsync_path(tmp, O_RDONLY) < 0 || link(tmp, path) < 0) {
		unlink(tmp);
		return;
	}
	unlink(tmp);
}

/*
 * The WAL started off the loop thread. A clean stop checkpoints the WAL and
 * deletes it (SQLite's close), so the first commit of the next process
 * starts a new one: SQLite syncs the new WAL's header, and the folder of a
 * WAL it opened at the WAL's first sync, two syncs (0.4-5 ms here) on the
 * loop thread. A server started on a new port makes that commit at once
 * (the kubernetes Endpoints), before it accepts anyone. So a store opened
 * on existing data with an empty WAL has a connection of its own, on a
 * thread of its own, write nothing visible (the meta row "opened", a
 * random number: SQLite writes no page whose bytes do not change, so the
 * value must): its commit pays the two syncs while the loop thread
 * goes on, and the loop's first commit appends to the WAL without a sync.
 * The loop thread's first write (store__exec's BEGIN, exec_sql) and
 * store_close join the thread first, so the two never wait on each
 * other's lock. Not on a new store (the loop thread writes at once), with
 * exclusive locking (no second connection), nor without a loop (tools).
 * A failure is logged and changes nothing: the first commit then starts
 * the WAL as before.
 */
struct store_warm {
	pthread_t thread;
	char *path;
};

static void *warm_main(void *arg)
{
	struct store_warm *w = arg;
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(w->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(
		    db,
		    "PRAGMA synchronous = NORMAL;"
		    " INSERT OR REPLACE INTO meta(key, value) VALUES('opened', random());",
		    NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		kb_debug("store", "starting the WAL at open: %s", sqlite3_errstr(rc));
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	}
	sqlite3_close(db);
	return NULL;
}

static void warm_start(store_t *st)
{
	char wal[4200];
	struct stat sb;
	if (!st->loop || !st->opts.group_commit || st->exclusive || st->rev == 0 ||
	    snprintf(wal, sizeof(wal), "%s-wal", st->path) >= (int)sizeof(wal) ||
	    (stat(wal, &sb) == 0 && sb.st_size > 0))
		return;
	struct store_warm *w = calloc(1, sizeof(*w));
	if (!w || !(w->path = strdup(st->path)) ||
	    pthread_create(&w->thread, NULL, warm_main, w) != 0) {
		if (w)
			free(w->path);
		free(w);
		return;
	}
	st->warm = w;
}

static void warm_join(store_t *st)
{
	struct store_warm *w = st->warm;
	if (!w)
		return;
	st->warm = NULL;
	pthread_join(w->thread, NULL);
	free(w->path);
	free(w);
}

int store_open(uv_loop_t *loop, const char *path, const struct store_opts *opts, store_t **out)
{
	KB_CHECK(path && out, -EINVAL);
	store_t *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->loop = loop;
	set_opts(st, opts);
	st->path = strdup(path);
	if (st->path)
		create_fresh(path);
	int err = st->path ? open_db(st, path) : -ENOMEM;
	if (!err)
		err = configure(st);
	if (err == -EIO && !room_again(st)) {
		/* a full disk leaves no room for the WAL index (-shm, 32 KiB):
		 * opened again with exclusive locking, SQLite keeps the index in
		 * memory (no second connection: SQLite's own checkpoints, no
		 * background ones) until leave_exclusive() */
		kb_warn("store", "no room for %s-shm: exclusive locking until there is", path);
		sqlite3_close(st->db);
		st->db = NULL;
		st->exclusive = true;
		err = open_db(st, path);
		if (!err)
			err = configure(st);
	}
	if (!err)
		err = init_schema(st);
	if (!err)
		err = prepare_all(st);
	if (!err)
		err = load_revs(st);
	if (!err)
		err = health_init(st);
	if (!err)
		err = store__ckpt_start(st, path);
	if (!err)
		err = start_timer(st);
	if (!err && st->opts.group_commit && loop)
		err = group_init(st);
	if (err) {
		store_close(st);
		return err;
	}
	warm_start(st);
	*out = st;
	return 0;
}

static void timer_closed(uv_handle_t *h)
{
	free(h);
}

void store_close(store_t *st)
{
	if (!st)
		return;
	warm_join(st);
	group_fini(st);
	if (st->txn_depth > 0) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		st->rev = st->txn[0].rev;
		st->txn_depth = 0;
	}
	store__watch_fini(st);
	if (st->timer) {
		uv_timer_stop(st->timer);
		uv_close((uv_handle_t *)st->timer, timer_closed);
	}
	if (st->health_timer) {
		uv_timer_stop(st->health_timer);
		uv_close((uv_handle_t *)st->health_timer, timer_closed);
	}
	store__ckpt_stop(st);
	if (st->stmt[SQ__COUNT - 1]) {
		meta_set_int(st, "rev", st->rev);
		mark_save(st);
	}
	for (int i = 0; i < SQ__COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_finalize(st->snap_stmt[0]);
	sqlite3_finalize(st->snap_stmt[1]);
	if (st->db && sqlite3_close(st->db) != SQLITE_OK)
		store__sql_err(st, SQLITE_BUSY, "close");
	free(st->wbuf);
	free(st->rbuf);
	store__oc_free(st);
	store__counts_drop(st);
	free(st->path);
	free(st);
}

int64_t store_rev(const store_t *st)
{
	return st->rev;
}

int64_t store_compacted_rev(const store_t *st)
{
	return st->compacted_rev;
}

/* ---- objects and revisions --------------------------------------------- */

static bool obj_ok(const json_t *obj)
{
	if (!json_is_object(obj))
		return false;
	const json_t *md = json_object_get(obj, "metadata");
	return !md || json_is_object(md);
}

static int set_rv(json_t *obj, int64_t rev)
{
	char buf[24];
	json_t *md = json_object_get(obj, "metadata");
	if (!md) {
		md = json_object();
		if (!md || json_object_set_new(obj, "metadata", md))
			return -ENOMEM;
	}
	snprintf(buf, sizeof(buf), "%" PRId64, rev);
	return json_object_set_new(md, "resourceVersion", json_string(buf)) ? -ENOMEM : 0;
}

/* Puts back the resourceVersion set_rv replaced: rv0 (borrowed), or none. */
static void unset_rv(json_t *obj, json_t *rv0)
{
	json_t *md = json_object_get(obj, "metadata");
	if (rv0)
		json_object_set(md, "resourceVersion", rv0);
	else
		json_object_del(md, "resourceVersion");
}

/* Sets resourceVersion and serializes obj (compact) into st->wbuf. */
static int serialize(store_t *st, json_t *obj, int64_t rev, size_t *len)
{
	int err = set_rv(obj, rev);
	if (err)
		return err;
	struct kb_buf b = {.data = st->wbuf, .len = 0, .cap = st->wbuf_cap};
	err = kb_json_dump(obj, &b);
	st->wbuf = b.data;
	st->wbuf_cap = b.cap;
	*len = b.len;
	return err == -EINVAL ? -ENOMEM : err;
}

static char *dup_text(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/*
 * Looks a key up: 0 with *rev (and *text, malloc'ed, when text != NULL:
 * else the key's row alone is read), -ENOENT, -ENOMEM or -EIO.
 */
static int lookup(store_t *st, const char *res, const char *ns, const char *name, int64_t *rev,
		  char **text, size_t *len)
{
	sqlite3_stmt *q = st->stmt[text ? SQ_GET : SQ_REV];
	int err = 0;
	bind_key(q, res, ns, name);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*rev = sqlite3_column_int64(q, 0);
		if (text) {
			const char *d = (const char *)sqlite3_column_text(q, 1);
			size_t n = (size_t)sqlite3_column_bytes(q, 1);
			*text = d ? dup_text(d, n) : NULL;
			if (len)
				*len = n;
			err = *text ? 0 : -ENOMEM;
		}
	} else {
		err = rc == SQLITE_DONE ? -ENOENT : store__sql_err(st, rc, "get");
	}
	sqlite3_reset(q);
	return err;
}

static int put_event(store_t *st, enum store_event_type type, const char *res, const char *ns,
		     const char *name, int64_t rev, size_t len)
{
	sqlite3_stmt *q = st->stmt[SQ_INS_EV];
	sqlite3_bind_int64(q, 1, rev);
	sqlite3_bind_int(q, 2, (int)type);
	sqlite3_bind_text(q, 3, res, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 5, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 6, st->wbuf, (int)len, SQLITE_STATIC);
	return step_done(st, q, "insert event");
}

/* Deletes the event row of a key's replaced state `old` when compaction
 * kept it only because the key pointed at it (see schema_sql). */
static int drop_kept(store_t *st, int64_t old)
{
	if (old > st->compacted_rev)
		return 0; /* history: compaction's */
	sqlite3_stmt *q = st->stmt[SQ_DEL_EV];
	sqlite3_bind_int64(q, 1, old);
	return step_done(st, q, "delete kept event");
}

/* Writes the key's row (insert, update or delete) pointing at event `rev`;
 * the object cache gets the text in st->wbuf. */
static int put_object(store_t *st, enum store_stmt s, const char *res, const char *ns,
		      const char *name, int64_t rev, size_t len)
{
	sqlite3_stmt *q = st->stmt[s];
	store__oc_drop(st, res, ns, name);
	bind_key(q, res, ns, name);
	if (s != SQ_DEL_OBJ)
		sqlite3_bind_int64(q, 4, rev);
	int rc = sqlite3_step(q);
	/* a create's key taken: the primary key refuses the row, and SQLite
	 * undoes the statement alone (ON CONFLICT ABORT), the transaction
	 * going on; one B-tree search instead of a lookup before the insert
	 * (extended result codes are on) */
	sqlite3_reset(q);
	if (s == SQ_INS_OBJ && rc == SQLITE_CONSTRAINT_PRIMARYKEY)
		return -EEXIST;
	int err = rc == SQLITE_DONE ? 0 : store__sql_err(st, rc, "write object");
	if (!err && sqlite3_changes(st->db) != 1) {
		kb_err("store", "write object %s %s/%s: no row changed", res, ns, name);
		err = -EIO;
	}
	if (!err && s != SQ_UPD_OBJ) /* an update keeps res and ns */
		store__counts_move(st, res, ns, s == SQ_INS_OBJ ? 1 : -1);
	if (!err && s != SQ_DEL_OBJ) /* what the next read would find */
		store__oc_put(st, res, ns, name, st->wbuf, len, rev);
	return err;
}

static int group_open(store_t *st);

static int writable(store_t *st);

static int write_begin(store_t *st)
{
	int err = writable(st);
	if (err)
		return err;
	if (st->txn_depth == 0 && st->gc_check)
		return group_open(st);
	return st->txn_depth > 0 ? 0 : store__exec(st, SQ_BEGIN, "begin");
}

static int commit_timed(store_t *st);
static int take_unsafe(store_t *st);

/*
 * Ends one write: commits it (outside a transaction) and queues its event.
 * On failure restores the revision and frees the node. Takes `n`.
 */
static int write_end(store_t *st, int err, int64_t rev0, struct store_evnode *n)
{
	if (st->txn_depth > 0) {
		if (err == -EIO || err == -ENOSPC)
			st->txn_failed = true;
	} else {
		if (!err)
			err = commit_timed(st);
		if (err && !sqlite3_get_autocommit(st->db))
			store__exec(st, SQ_ROLLBACK, "rollback");
	}
	if (err) {
		st->rev = rev0;
		store__evnode_free(n);
		store__oc_clear(st);               /* the row may be rolled back */
		if (err == -EIO || err == -ENOSPC) /* else nothing was written */
			store__counts_drop(st);
		return err;
	}
	if (n)
		store__emit(st, n);
	return take_unsafe(st);
}

const double STORE_COMMIT_BOUNDS[STORE_COMMIT_NBOUNDS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};

static void after_commit(store_t *st);

/* COMMIT, timed for store_stats; then the health check of the files. */
static int commit_timed(store_t *st)
{
	uint64_t t0 = uv_hrtime();
	int err = store__exec(st, SQ_COMMIT, "commit");
	if (!err)
		after_commit(st);
	double secs = (double)(uv_hrtime() - t0) / 1e9;
	st->stats.commits[kb_prom_bucket(STORE_COMMIT_BOUNDS, STORE_COMMIT_NBOUNDS, secs)]++;
	st->stats.commit_seconds += secs;
	return err;
}

_Static_assert(STORE_FAULT_NOSPACE + 1 == STORE_NFAULTS, "STORE_FAULT_REASONS");
const char *const STORE_FAULT_REASONS[STORE_NFAULTS] = {
    [STORE_FAULT_NONE] = "other", /* a commit's answer withheld as a fault cleared */
    [STORE_FAULT_WAL_LOST] = "wal_removed",
    [STORE_FAULT_DB_LOST] = "database_removed",
    [STORE_FAULT_WAL_GROWING] = "wal_growing",
    [STORE_FAULT_REV_LOST] = "revision_lost",
    [STORE_FAULT_NOSPACE] = "no_space",
};

void store_stats(const store_t *st, struct store_stats *out)
{
	*out = st->stats;
	out->fault = (int)st->fault;
	out->wal_frames = st->wal_pages;
	store__ckpt_stats(st, out);
}

/* Whether this write must build an event node for watchers. */
static bool want_event(const store_t *st, const char *res)
{
	return st->txn_depth > 0 || store__watched(st, res);
}

/* Whether the caller's json_t may be shared with callbacks: only when they
 * run before this call returns. */
static bool deliver_now(const store_t *st)
{
	return st->txn_depth == 0 && st->busy == 0;
}

/* Builds the event node; obj is the new object (borrowed), its text in
 * st->wbuf; prev_text and prev are taken. The node holds obj itself when
 * callbacks run before the write returns or the caller will not change it
 * (final), a copy of it when a watcher may want it later, else only the
 * text (parsed if a watch appears meanwhile). NULL on ENOMEM (event
 * dropped, logged): the write itself stands. */
static struct store_evnode *make_event(store_t *st, enum store_event_type type, const char *res,
				       const char *ns, const char *name, int64_t rev, json_t *obj,
				       bool final, size_t len, char *prev_text, json_t *prev)
{
	struct store_evnode *n = store__evnode_new(res, ns, name);
	if (!n)
		goto fail;
	n->type = type;
	n->rev = rev;
	n->prev = prev;
	n->prev_text = prev_text;
	if (deliver_now(st) || (final && store__watched(st, res))) {
		n->obj = json_incref(obj);
	} else if (store__watched(st, res)) {
		/* A watcher will want the tree: copying it costs about a third
		 * of parsing the text again at fan-out time. */
		n->obj = kb_json_copy(obj);
		if (!n->obj) {
			store__evnode_free(n);
			goto fail_logged;
		}
	} else {
		n->obj_text = dup_text(st->wbuf, len);
		if (!n->obj_text) {
			store__evnode_free(n);
			goto fail_logged;
		}
	}
	return n;
fail:
	free(prev_text);
	json_decref(prev);
fail_logged:
	kb_err("store", "out of memory: event %" PRId64 " not delivered", rev);
	return NULL;
}

static int create(store_t *st, const char *res, const char *ns, const char *name, json_t *obj,
		  bool final, int64_t *rev_out)
{
	KB_CHECK(st && key_ok(res, ns, name) && obj_ok(obj), -EINVAL);
	int64_t rev0 = st->rev, rev = st->rev + 1;
	struct store_evnode *n = NULL;
	size_t len = 0;
	int err = write_begin(st);
	if (err)
		return err;
	/* the resourceVersion obj had, put back when the key is taken */
	json_t *rv0 =
	    json_incref(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
	err = serialize(st, obj, rev, &len);
	if (!err)
		err = put_object(st, SQ_INS_OBJ, res, ns, name, rev, len);
	if (err == -EEXIST)
		unset_rv(obj, rv0);
	json_decref(rv0);
	if (!err)
		err = put_event(st, STORE_ADDED, res, ns, name, rev, len);
	if (!err) {
		st->rev = rev;
		if (want_event(st, res))
			n = make_event(st, STORE_ADDED, res, ns, name, rev, obj, final, len, NULL,
				       NULL);
	}
	err = write_end(st, err, rev0, n);
	if (!err && rev_out)
		*rev_out = rev;
	return err;
}

int store_create(store_t *st, const char *res, const char *ns, const char *name, json_t *obj,
		 int64_t *rev_out)
{
	return create(st, res, ns, name, obj, false, rev_out);
}

int store_create_final(store_t *st, const char *res, const char *ns, const char *name, json_t *obj,
		       int64_t *rev_out)
{
	return create(st, res, ns, name, obj, true, rev_out);
}

static int check_rev(int64_t stored, int64_t expected)
{
	return expected != 0 && expected != stored ? -ESTALE : 0;
}

int store_update(store_t *st, const char *res, const char *ns, const char *name, json_t *obj,
		 int64_t expected_rev, int64_t *rev_out)
{
	KB_CHECK(st && key_ok(res, ns, name) && obj_ok(obj), -EINVAL);
	int64_t rev0 = st->rev, rev = st->rev + 1, old = 0;
	struct store_evnode *n = NULL;
	char *prev_text = NULL;
	bool want = want_event(st, res);
	size_t len = 0;
	int err = write_begin(st);
	if (err)
		return err;
	err = lookup(st, res, ns, name, &old, want ? &prev_text : NULL, NULL);
	if (!err)
		err = check_rev(old, expected_rev);
	if (!err)
		err = serialize(st, obj, rev, &len);
	if (!err)
		err = put_object(st, SQ_UPD_OBJ, res, ns, name, rev, len);
	if (!err)
		err = drop_kept(st, old);
	if (!err)
		err = put_event(st, STORE_MODIFIED, res, ns, name, rev, len);
	if (!err) {
		st->rev = rev;
		if (want)
			n = make_event(st, STORE_MODIFIED, res, ns, name, rev, obj, false, len,
				       prev_text, NULL);
		prev_text = NULL;
	}
	free(prev_text);
	err = write_end(st, err, rev0, n);
	if (!err && rev_out)
		*rev_out = rev;
	return err;
}

/* Parses the stored object being deleted into *prev and its copy *last. */
static int load_for_delete(store_t *st, const char *res, const char *ns, const char *name,
			   int64_t expected_rev, int64_t *old, json_t **prev, json_t **last)
{
	char *text = NULL;
	size_t len = 0;
	int err = lookup(st, res, ns, name, old, &text, &len);
	if (!err)
		err = check_rev(*old, expected_rev);
	if (!err) {
		*prev = kb_json_loadb(text, len, 0, NULL);
		*last = *prev ? json_deep_copy(*prev) : NULL;
		if (!*prev)
			err = store__sql_err(st, SQLITE_CORRUPT, "stored object is not JSON");
		else if (!*last || !obj_ok(*last))
			err = -ENOMEM;
	}
	free(text);
	return err;
}

int store_delete(store_t *st, const char *res, const char *ns, const char *name,
		 int64_t expected_rev, json_t **last_out, int64_t *rev_out)
{
	KB_CHECK(st && key_ok(res, ns, name), -EINVAL);
	int64_t rev0 = st->rev, rev = st->rev + 1, old = 0;
	json_t *prev = NULL, *last = NULL;
	struct store_evnode *n = NULL;
	size_t len = 0;
	int err = write_begin(st);
	if (err)
		return err;
	err = load_for_delete(st, res, ns, name, expected_rev, &old, &prev, &last);
	if (!err)
		err = serialize(st, last, rev, &len);
	if (!err)
		err = put_object(st, SQ_DEL_OBJ, res, ns, name, rev, len);
	if (!err)
		err = drop_kept(st, old);
	if (!err)
		err = put_event(st, STORE_DELETED, res, ns, name, rev, len);
	if (!err) {
		st->rev = rev;
		if (want_event(st, res))
			n = make_event(st, STORE_DELETED, res, ns, name, rev, last, false, len,
				       NULL, json_incref(prev));
	}
	json_decref(prev);
	err = write_end(st, err, rev0, n);
	if (!err && rev_out)
		*rev_out = rev;
	if (!err && last_out)
		*last_out = last;
	else
		json_decref(last);
	return err;
}

/* Copies a read object's text into rbuf: the caller's copy lives until the
 * next store call, the cache's entry only until the next write. */
static int read_out(store_t *st, const void *d, size_t n, const char **text, size_t *len)
{
	if (n + 1 > st->rbuf_cap) {
		char *nb = realloc(st->rbuf, n + 1024);
		if (!nb)
			return -ENOMEM;
		st->rbuf = nb;
		st->rbuf_cap = n + 1024;
	}
	memcpy(st->rbuf, d, n);
	st->rbuf[n] = '\0';
	*text = st->rbuf;
	if (len)
		*len = n;
	return 0;
}

int store_get_raw(store_t *st, const char *res, const char *ns, const char *name, const char **text,
		  size_t *len, int64_t *rev_out)
{
	KB_CHECK(st && key_ok(res, ns, name) && text, -EINVAL);
	const char *ct;
	size_t cl;
	int64_t rev;
	if (store__oc_get(st, res, ns, name, &ct, &cl, &rev) == 0) {
		int err = read_out(st, ct, cl, text, len);
		if (!err && rev_out)
			*rev_out = rev;
		return err;
	}
	sqlite3_stmt *q = st->stmt[SQ_GET];
	int err = 0;
	bind_key(q, res, ns, name);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(q, 1);
		rev = sqlite3_column_int64(q, 0);
		err = read_out(st, sqlite3_column_blob(q, 1), n, text, len);
		if (!err && rev_out)
			*rev_out = rev;
		if (!err)
			store__oc_put(st, res, ns, name, st->rbuf, n, rev);
	} else {
		err = rc == SQLITE_DONE ? -ENOENT : store__sql_err(st, rc, "get");
	}
	sqlite3_reset(q);
	return err;
}

int store_get(store_t *st, const char *res, const char *ns, const char *name, json_t **obj_out)
{
	KB_CHECK(obj_out, -EINVAL);
	const char *text;
	size_t len;
	int err = store_get_raw(st, res, ns, name, &text, &len, NULL);
	if (err)
		return err;
	*obj_out = kb_json_loadb(text, len, 0, NULL);
	if (!*obj_out)
		return store__sql_err(st, SQLITE_CORRUPT, "stored object is not JSON");
	return 0;
}

/* ---- list and count ---------------------------------------------------- */

/* The continue key: base64url of "ns\0name". */
char *store__encode_key(const char *ns, size_t ns_len, const char *name, size_t name_len)
{
	char *raw = malloc(ns_len + name_len + 1);
	if (!raw)
		return NULL;
	memcpy(raw, ns, ns_len);
	raw[ns_len] = '\0';
	memcpy(raw + ns_len + 1, name, name_len);
	char *out = kb_base64url_encode(raw, ns_len + name_len + 1);
	free(raw);
	return out;
}

/* Decodes a continue key into *buf ("ns\0name\0"); *name points inside. */
int store__decode_key(const char *key, unsigned char **buf, const char **name)
{
	size_t len = 0;
	int err = kb_base64url_decode(key, buf, &len);
	if (err)
		return -EINVAL;
	const char *nul = memchr(*buf, '\0', len);
	if (!nul || memchr(nul + 1, '\0', len - (size_t)(nul + 1 - (char *)*buf))) {
		free(*buf);
		*buf = NULL;
		return -EINVAL;
	}
	*name = nul + 1;
	return 0;
}

/* Binds the list statement for req; false when nothing can follow `after`. */
static bool bind_list(sqlite3_stmt *q, const struct store_list_req *req, const char *after_ns,
		      const char *after_name)
{
	sqlite3_bind_text(q, 1, req->res, -1, SQLITE_STATIC);
	if (!req->ns) {
		sqlite3_bind_text(q, 2, after_ns, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 3, after_name, -1, SQLITE_STATIC);
		return true;
	}
	int c = strcmp(after_ns, req->ns);
	sqlite3_bind_text(q, 2, req->ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, c == 0 ? after_name : "", -1, SQLITE_STATIC);
	return c <= 0;
}

struct list_state {
	json_t *items; /* the objects, or NULL when they go to cb as text */
	int (*cb)(const char *text, size_t len, void *arg);
	void *arg;
	size_t count;
	struct kb_buf last_ns, last_name;
	bool more;
};

/* One row: parsed into ls->items, or its text given to ls->cb (parsed only
 * for req->filter). */
static int list_row(store_t *st, sqlite3_stmt *q, const struct store_list_req *req,
		    struct list_state *ls)
{
	const char *text = sqlite3_column_blob(q, 2);
	size_t len = (size_t)sqlite3_column_bytes(q, 2);
	json_t *obj = NULL;
	if (!ls->cb || req->filter) {
		obj = kb_json_loadb(text, len, 0, NULL);
		if (!obj)
			return store__sql_err(st, SQLITE_CORRUPT, "stored object is not JSON");
		if (req->filter && !req->filter(obj, req->filter_arg)) {
			json_decref(obj);
			return 0;
		}
	}
	if (ls->cb) {
		json_decref(obj);
		int err = ls->cb(text ? text : "", len, ls->arg);
		if (err)
			return err;
	} else if (json_array_append_new(ls->items, obj)) {
		return -ENOMEM;
	}
	ls->count++;
	ls->last_ns.len = 0;
	ls->last_name.len = 0;
	if (kb_buf_append(&ls->last_ns, sqlite3_column_blob(q, 0),
			  (size_t)sqlite3_column_bytes(q, 0)) ||
	    kb_buf_append(&ls->last_name, sqlite3_column_blob(q, 1),
			  (size_t)sqlite3_column_bytes(q, 1)))
		return -ENOMEM;
	return 0;
}

/* How many objects of the list follow its page (kube's etcd3 GetList:
 * the range's count less the page, remainingItemCount). A first page
 * reads the kept count (store_count.c); a later one counts the keys after
 * it. 0 or -EIO. */
static int list_remaining(store_t *st, const struct store_list_req *req, struct list_state *ls,
			  int64_t *out)
{
	if (!req->after && !req->filter) { /* a first page: all, less it */
		size_t n = 0;
		int err = store_count(st, req->res, req->ns, &n);
		*out = (int64_t)n - (int64_t)ls->count;
		if (*out < 0)
			*out = 0;
		return err;
	}
	sqlite3_stmt *q = st->stmt[req->ns ? SQ_REMAIN_NS : SQ_REMAIN_ALL];
	kb_buf_append(&ls->last_ns, "", 1); /* NUL-terminated for the binding */
	kb_buf_append(&ls->last_name, "", 1);
	sqlite3_bind_text(q, 1, req->res, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, ls->last_ns.data, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, ls->last_name.data, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(q, 0);
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	return rc == SQLITE_ROW ? 0 : store__sql_err(st, rc, "list remaining");
}

static int list_scan(store_t *st, sqlite3_stmt *q, const struct store_list_req *req,
		     struct list_state *ls)
{
	int rc, err = 0;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (req->limit && ls->count == req->limit) {
			ls->more = true;
			break;
		}
		err = list_row(st, q, req, ls);
		if (err)
			break;
	}
	if (!err && rc != SQLITE_ROW && rc != SQLITE_DONE)
		err = store__sql_err(st, rc, "list");
	sqlite3_reset(q);
	return err;
}

/* store_list and store_list_text_page: ls->items or ls->cb set. */
static int list_run(store_t *st, const struct store_list_req *req, struct list_state *ls,
		    struct store_list_result *out)
{
	unsigned char *kbuf = NULL;
	const char *after_ns = "", *after_name = "";
	sqlite3_stmt *q = st->stmt[req->ns ? SQ_LIST_NS : SQ_LIST_ALL];
	int err = 0;
	if (req->after) {
		err = store__decode_key(req->after, &kbuf, &after_name);
		after_ns = (const char *)kbuf;
	}
	if (!err && bind_list(q, req, after_ns, after_name))
		err = list_scan(st, q, req, ls);
	sqlite3_clear_bindings(q);
	free(kbuf);
	out->next = NULL;
	out->remaining = -1;
	if (!err && ls->more) {
		out->next = store__encode_key(ls->last_ns.data, ls->last_ns.len, ls->last_name.data,
					      ls->last_name.len);
		err = out->next ? 0 : -ENOMEM;
	}
	if (!err && ls->more && req->want_remaining)
		err = list_remaining(st, req, ls, &out->remaining);
	kb_buf_free(&ls->last_ns);
	kb_buf_free(&ls->last_name);
	if (err) {
		free(out->next);
		out->next = NULL;
		return err;
	}
	out->rev = st->rev;
	return 0;
}

int store_list(store_t *st, const struct store_list_req *req, struct store_list_result *out)
{
	KB_CHECK(st && req && req->res && out, -EINVAL);
	if (req->at > 0 && req->at < st->rev)
		return store__list_at(st, req, out);
	struct list_state ls = {.items = json_array()};
	int err = ls.items ? list_run(st, req, &ls, out) : -ENOMEM;
	if (err) {
		json_decref(ls.items);
		return err;
	}
	out->items = ls.items;
	return 0;
}

int store_list_text_page(store_t *st, const struct store_list_req *req,
			 int (*cb)(const char *text, size_t len, void *arg), void *arg,
			 struct store_list_result *out)
{
	KB_CHECK(st && req && req->res && cb && out, -EINVAL);
	if (req->at > 0 && req->at < st->rev)
		return -EAGAIN; /* the page is of an earlier revision: store_list */
	struct list_state ls = {.cb = cb, .arg = arg};
	out->items = NULL;
	return list_run(st, req, &ls, out);
}

int store_list_text(store_t *st, const struct store_list_req *req,
		    int (*cb)(const char *text, size_t len, void *arg), void *arg, int64_t *rev)
{
	KB_CHECK(st && req && req->res && cb && rev, -EINVAL);
	struct store_list_req whole = *req;
	struct store_list_result out = {0};
	whole.limit = 0;
	whole.after = NULL;
	whole.at = 0;
	whole.want_remaining = false;
	int err = store_list_text_page(st, &whole, cb, arg, &out);
	*rev = st->rev;
	return err;
}

/* ---- transactions ------------------------------------------------------ */

int store_txn_begin(store_t *st)
{
	/* not refused while a fault stands: its writes are (write_begin),
	 * and callers that go on after a failed begin stay balanced */
	KB_CHECK(st && st->txn_depth < STORE_TXN_MAX - 1, -EINVAL);
	if (st->txn_depth == 0 && st->gc_check) {
		int gerr = group_open(st);
		if (gerr)
			return gerr;
	}
	int err = store__exec(st, st->txn_depth ? SQ_SAVEPOINT : SQ_BEGIN, "begin");
	if (err)
		return err;
	struct store_txn_level *l = &st->txn[st->txn_depth];
	l->rev = st->rev;
	l->compacted_rev = st->compacted_rev;
	l->mark = st->txn_q.tail;
	if (st->txn_depth == 0)
		st->txn_failed = false;
	st->txn_depth++;
	return 0;
}

/* Undoes the innermost level (SQL, revisions, queued events). */
static void rollback_level(store_t *st)
{
	struct store_txn_level *l = &st->txn[st->txn_depth - 1];
	store__oc_clear(st); /* rows written since are undone */
	store__counts_drop(st);
	if (st->txn_depth > 1) {
		store__exec(st, SQ_ROLLBACK_TO, "rollback to savepoint");
		store__exec(st, SQ_RELEASE, "release savepoint");
	} else if (!sqlite3_get_autocommit(st->db)) {
		store__exec(st, SQ_ROLLBACK, "rollback");
	}
	st->rev = l->rev;
	st->compacted_rev = l->compacted_rev;
	store__txn_drop(st, l->mark);
	st->txn_depth--;
}

int store_txn_commit(store_t *st)
{
	KB_CHECK(st && st->txn_depth > 0, -EINVAL);
	int err = st->txn_failed ? -EIO : 0;
	if (!err)
		err = st->txn_depth > 1 ? store__exec(st, SQ_RELEASE, "commit") : commit_timed(st);
	if (err) {
		if (st->txn_depth == 1) {
			rollback_level(st);
		} else {
			st->txn_failed = true;
			st->txn_depth--;
		}
		return err;
	}
	if (--st->txn_depth == 0 && !st->hold_publish)
		store__txn_publish(st);
	return st->txn_depth == 0 ? take_unsafe(st) : 0;
}

void store_txn_rollback(store_t *st)
{
	if (!st || st->txn_depth == 0) {
		kb_err("store", "rollback without a transaction");
		return;
	}
	rollback_level(st);
}

/* ---- group commit -------------------------------------------------------- */

static void on_gc_check(uv_check_t *h);
static void on_gc_idle(uv_idle_t *h);

/* Opens the iteration's transaction (depth 1) and arms the commit. */
static int group_open(store_t *st)
{
	int err = store__exec(st, SQ_BEGIN, "begin");
	if (err)
		return err;
	struct store_txn_level *l = &st->txn[0];
	l->rev = st->rev;
	l->compacted_rev = st->compacted_rev;
	l->mark = st->txn_q.tail;
	st->txn_failed = false;
	st->txn_depth = 1;
	st->group_open = true;
	uv_check_start(st->gc_check, on_gc_check);
	uv_idle_start(st->gc_idle, on_gc_idle);
	return 0;
}

/* Commits the iteration's writes, then tells the waiters (in order). */
static void group_commit(store_t *st)
{
	if (!st->group_open)
		return;
	uv_check_stop(st->gc_check);
	uv_idle_stop(st->gc_idle);
	int err = 0;
	if (st->txn_depth != 1) {
		kb_err("store", "group commit with %d open transactions", st->txn_depth);
		while (st->txn_depth > 1)
			rollback_level(st);
	}
	st->group_open = false;
	/* the writers hear first, then the watchers: acknowledgements do not
	 * wait for the fan-out */
	st->hold_publish = true;
	err = store_txn_commit(st);
	st->hold_publish = false;
	struct store_commit_waiter *w = st->waiters;
	st->waiters = NULL;
	while (w) {
		struct store_commit_waiter *next = w->next;
		w->cb(err, w->arg);
		free(w);
		w = next;
	}
	if (err == 0 || err == -EROFS) /* -EROFS: committed, not durable */
		store__txn_publish(st);
}

static void on_gc_check(uv_check_t *h)
{
	group_commit(h->data);
}

static void on_gc_idle(uv_idle_t *h)
{
	(void)h;
}

static void handle_freed(uv_handle_t *h)
{
	free(h);
}

/* Creates the group commit handles; they are active (and keep the loop
 * running) only while a commit is pending. */
static int group_init(store_t *st)
{
	st->gc_check = calloc(1, sizeof(*st->gc_check));
	st->gc_idle = calloc(1, sizeof(*st->gc_idle));
	if (!st->gc_check || !st->gc_idle) {
		free(st->gc_check);
		free(st->gc_idle);
		st->gc_check = NULL;
		st->gc_idle = NULL;
		return -ENOMEM;
	}
	uv_check_init(st->loop, st->gc_check);
	uv_idle_init(st->loop, st->gc_idle);
	st->gc_check->data = st;
	st->gc_idle->data = st;
	return 0;
}

/* Commits what is pending and closes the handles. */
static void group_fini(store_t *st)
{
	if (!st->gc_check)
		return;
	group_commit(st);
	uv_close((uv_handle_t *)st->gc_check, handle_freed);
	uv_close((uv_handle_t *)st->gc_idle, handle_freed);
	st->gc_check = NULL;
	st->gc_idle = NULL;
}

void store_flush(store_t *st)
{
	group_commit(st);
}

bool store_pending(const store_t *st)
{
	return st->group_open;
}

int store_on_commit(store_t *st, store_commit_cb cb, void *arg)
{
	if (!st->group_open)
		return -EALREADY;
	struct store_commit_waiter *w = calloc(1, sizeof(*w)), **tail = &st->waiters;
	if (!w)
		return -ENOMEM;
	w->cb = cb;
	w->arg = arg;
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
	return 0;
}

/* ---- health: the files under the store (store.h, Health) ----------------- */

static int file_id(const char *path, const char *sfx, struct store_fileid *id)
{
	char p[4096];
	struct stat sb;
	snprintf(p, sizeof(p), "%s%s", path, sfx);
	if (stat(p, &sb) < 0)
		return -errno;
	id->dev = sb.st_dev;
	id->ino = sb.st_ino;
	id->known = true;
	return 0;
}

/* Whether path+sfx is still the file noted in `id` (unknown: yes). */
static bool same_file(const char *path, const char *sfx, const struct store_fileid *id)
{
	struct store_fileid now = {0};
	if (!id->known)
		return true;
	return file_id(path, sfx, &now) == 0 && now.dev == id->dev && now.ino == id->ino;
}

static void files_note(store_t *st)
{
	st->db_id.known = st->path && file_id(st->path, "", &st->db_id) == 0;
	st->wal_id.known = st->path && file_id(st->path, "-wal", &st->wal_id) == 0;
}

static enum store_fault files_fault(store_t *st)
{
	if (!st->path)
		return STORE_FAULT_NONE;
	if (!st->wal_id.known) /* no WAL yet at open: the first one is ours */
		st->wal_id.known = file_id(st->path, "-wal", &st->wal_id) == 0;
	if (!same_file(st->path, "", &st->db_id))
		return STORE_FAULT_DB_LOST;
	if (!same_file(st->path, "-wal", &st->wal_id))
		return STORE_FAULT_WAL_LOST;
	return STORE_FAULT_NONE;
}

static void set_fault(store_t *st, enum store_fault f)
{
	if (st->fault == f)
		return;
	st->fault = f;
	char why[256];
	store_health(st, why, sizeof(why));
	kb_err("store", "refusing writes: %s", why);
}

/*
 * The WAL was removed: its commits live on in the unlinked file this
 * connection still reads. A TRUNCATE checkpoint copies every one of them
 * into the database file and syncs it (with the background checkpointer
 * stopped, nobody else reads the WAL, so it completes or fails: BUSY is a
 * failure); leaving WAL mode and entering it again makes SQLite create a
 * new WAL at the path. Then the database must hold the revision the store
 * had, else the revision went backwards (never silently: REV_LOST).
 */
static int rebuild_wal(store_t *st)
{
	kb_warn("store", "%s-wal was removed: copying its commits into %s and starting a new one",
		st->path, st->path);
	bool had_ckpt = st->ckpt != NULL;
	store__ckpt_stop(st);
	/* another process reading the file (kubicle list, snapshot) makes
	 * this wait: not for long, on the loop; a later attempt retries */
	sqlite3_busy_timeout(st->db, STORE_REBUILD_BUSY_MS);
	int rc = sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
	int err = rc == SQLITE_OK ? 0 : store__sql_err(st, rc, "checkpoint of the removed WAL");
	if (!err)
		err = exec_sql(st, "PRAGMA journal_mode = DELETE", "leaving WAL mode");
	if (!err)
		err = set_journal(st);
	sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
	if (had_ckpt && store__ckpt_start(st, st->path) < 0)
		kb_err("store", "background checkpoints stay off: out of memory");
	int64_t rev = 0, compacted = 0;
	if (!err)
		err = stored_revs(st, &rev, &compacted);
	if (!err && rev < store__committed_rev(st)) {
		kb_err("store",
		       "the rebuilt database is at revision %" PRId64 ", the store was at %" PRId64,
		       rev, store__committed_rev(st));
		set_fault(st, STORE_FAULT_REV_LOST);
		return -EROFS;
	}
	if (err)
		return err;
	files_note(st);
	st->stats.wal_rebuilds++;
	kb_info("store",
		"a new WAL holds the store again; every commit up to revision %" PRId64 " is in %s",
		store__committed_rev(st), st->path);
	return 0;
}

/* SQLITE_FULL: the disk is full (store__sql_err); writes are refused
 * until room_again(). */
static void disk_full(store_t *st)
{
	if (st->fault == STORE_FAULT_NONE)
		set_fault(st, STORE_FAULT_NOSPACE);
	st->recover_at = uv_hrtime() + STORE_RECOVER_NS;
}

/* Whether the file system of the database has STORE_FREE_BYTES free. */
static bool room_again(const store_t *st)
{
	struct statvfs sv;
	if (!st->path || statvfs(st->path, &sv) < 0)
		return true; /* cannot tell: let the next commit tell */
	return (unsigned long long)sv.f_bavail * sv.f_frsize >= STORE_FREE_BYTES;
}

/* A fault that may go away: the WAL rebuilt, a checkpoint that copied the
 * whole WAL (the next commit starts it over), room on the disk again. */
static void try_recover(store_t *st)
{
	int log = -1, done = -1;
	st->recover_at = uv_hrtime() + STORE_RECOVER_NS;
	switch (st->fault) {
	case STORE_FAULT_WAL_LOST:
		if (files_fault(st) == STORE_FAULT_DB_LOST)
			set_fault(st, STORE_FAULT_DB_LOST);
		else if (rebuild_wal(st) == 0)
			st->fault = STORE_FAULT_NONE;
		break;
	case STORE_FAULT_WAL_GROWING:
		/* a WAL of wal_max_pages is copied by the checkpointer's thread,
		 * not here: the loop never waits for it (without one, a tool's
		 * store, SQLite's checkpoint runs here as its own would) */
		if (st->ckpt ? store__ckpt_drained(st)
			     : sqlite3_wal_checkpoint_v2(st->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
							 &log, &done) == SQLITE_OK &&
				   log == done) {
			st->fault = STORE_FAULT_NONE;
			st->wal_pages = 0;
		}
		break;
	case STORE_FAULT_NOSPACE:
		if (room_again(st))
			st->fault = STORE_FAULT_NONE;
		break;
	default: break; /* not recoverable in place */
	}
	if (st->fault == STORE_FAULT_NONE)
		kb_info("store", "accepting writes again");
}

/* 0, or -EROFS while a fault stands (tried again first, now and then). */
static int writable(store_t *st)
{
	if (st->fault == STORE_FAULT_NONE)
		return 0;
	if (st->txn_depth == 0 && uv_hrtime() >= st->recover_at)
		try_recover(st);
	if (st->fault == STORE_FAULT_NONE)
		return 0;
	st->stats.refused[st->fault]++;
	return -EROFS;
}

int store__write_check(store_t *st)
{
	return writable(st);
}

void store__wrote(store_t *st)
{
	if (st->txn_depth == 0 && !st->group_open)
		after_commit(st);
}

/* After every outermost COMMIT: the commit is acknowledged only if it is
 * in a file the database's path still names (rebuilding the WAL first when
 * it was removed); else take_unsafe() turns its success into -EROFS. */
static void after_commit(store_t *st)
{
	enum store_fault f = files_fault(st);
	if (f == STORE_FAULT_NONE)
		return;
	if (f == STORE_FAULT_WAL_LOST && rebuild_wal(st) == 0)
		return;
	if (st->fault == STORE_FAULT_NONE) /* rebuild_wal may have set REV_LOST */
		set_fault(st, f);
	st->recover_at = uv_hrtime() + STORE_RECOVER_NS;
	st->commit_unsafe = true;
}

static int take_unsafe(store_t *st)
{
	bool unsafe = st->commit_unsafe;
	st->commit_unsafe = false;
	if (unsafe)
		st->stats.refused[st->fault]++;
	return unsafe ? -EROFS : 0;
}

void store__wal_size(store_t *st, int pages)
{
	st->wal_pages = pages;
	if (pages >= st->opts.wal_max_pages && st->fault == STORE_FAULT_NONE) {
		set_fault(st, STORE_FAULT_WAL_GROWING);
		st->recover_at = uv_hrtime() + STORE_RECOVER_NS;
	}
}

/*
 * The revision mark: DIR/kubicle.db-rev holds the newest revision the store
 * has committed, written (not synced: it is for crashes of the process)
 * every second and at close. A store opened below its mark lost commits
 * that were served (a WAL removed just before a crash, an older copy of the
 * file put back): as etcd's restore does (etcdutl snapshot restore
 * --bump-revision --mark-compacted), revisions go on past the mark and the
 * history before is compacted, so that watchers get 410 Gone and relist,
 * and writes carrying a resourceVersion from the lost range conflict.
 */
static void mark_path(const store_t *st, char *buf, size_t len)
{
	snprintf(buf, len, "%s-rev", st->path);
}

static int64_t mark_read(const store_t *st)
{
	char p[4096], buf[32];
	int64_t v = 0;
	mark_path(st, p, sizeof(p));
	FILE *f = fopen(p, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 10);
	fclose(f);
	return v > 0 ? v : 0;
}

static void mark_save(store_t *st)
{
	int64_t rev = store__committed_rev(st);
	char p[4096], tmp[4160], buf[32];
	if (!st->loop || !st->path || rev == st->mark_saved) /* the server's only */
		return;
	mark_path(st, p, sizeof(p));
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	int n = snprintf(buf, sizeof(buf), "%" PRId64 "\n", rev);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && write(fd, buf, (size_t)n) == n;
	if (fd >= 0)
		close(fd);
	if (ok && rename(tmp, p) == 0)
		st->mark_saved = rev;
	else
		unlink(tmp); /* a full disk: the older mark stays */
}

static void mark_check(store_t *st)
{
	if (!st->loop) /* tools reading a tenant's store leave it as it is */
		return;
	int64_t mark = mark_read(st);
	st->mark_saved = mark;
	if (mark <= st->rev)
		return;
	int64_t to = mark + STORE_REV_BUMP;
	kb_err("store",
	       "%s is at revision %" PRId64 " but revision %" PRId64
	       " was served: commits were lost; revisions go on from %" PRId64
	       " and the history before is compacted (watchers relist)",
	       st->path, st->rev, mark, to);
	st->rev = to;
	if (store_compact(st, to) < 0)
		st->compacted_rev = to; /* kept at the next compaction or close */
}

/* Back to WAL with its -shm index and normal locking once there is room
 * (configure() fell back to exclusive locking on a full disk). */
static void leave_exclusive(store_t *st)
{
	int err = exec_sql(st, "PRAGMA journal_mode = DELETE", "leaving WAL mode");
	if (!err)
		err = exec_sql(st, "PRAGMA locking_mode = NORMAL", "locking_mode");
	if (!err) /* the exclusive lock goes with the next access */
		err = exec_sql(st, "SELECT 1 FROM meta LIMIT 1", "unlock");
	if (!err)
		err = set_journal(st);
	if (err) {
		sqlite3_exec(st->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
		return; /* tried again in a second */
	}
	st->exclusive = false;
	files_note(st);
	if (store__ckpt_start(st, st->path) < 0)
		kb_err("store", "background checkpoints stay off: out of memory");
	kb_info("store", "room again: %s-shm made, normal locking", st->path);
}

static void health_timer_cb(uv_timer_t *t)
{
	kb_timer_start_aligned(t, health_timer_cb, STORE_HEALTH_MS);
	store_t *st = t->data;
	if (st->txn_depth > 0)
		return;
	mark_save(st);
	if (st->exclusive && room_again(st))
		leave_exclusive(st);
	if (st->fault != STORE_FAULT_NONE) {
		if (uv_hrtime() >= st->recover_at)
			try_recover(st);
		return;
	}
	enum store_fault f = files_fault(st);
	if (f == STORE_FAULT_WAL_LOST && rebuild_wal(st) == 0)
		return;
	if (f != STORE_FAULT_NONE && st->fault == STORE_FAULT_NONE) {
		set_fault(st, f);
		st->recover_at = uv_hrtime() + STORE_RECOVER_NS;
	}
}

static int health_init(store_t *st)
{
	files_note(st);
	mark_check(st);
	if (!st->loop)
		return 0;
	st->health_timer = malloc(sizeof(*st->health_timer));
	if (!st->health_timer)
		return -ENOMEM;
	uv_timer_init(st->loop, st->health_timer);
	st->health_timer->data = st;
	uv_unref((uv_handle_t *)st->health_timer);
	return kb_timer_start_aligned(st->health_timer, health_timer_cb, STORE_HEALTH_MS);
}

int store_health(const store_t *st, char *why, size_t len)
{
	/* the file's name alone: /readyz/etcd is public */
	const char *f = st->path ? st->path : "the database";
	if (strrchr(f, '/'))
		f = strrchr(f, '/') + 1;
	char buf[256];
	switch (st->fault) {
	case STORE_FAULT_NONE: snprintf(buf, sizeof(buf), "ok"); break;
	case STORE_FAULT_WAL_LOST:
		snprintf(buf, sizeof(buf), "%s-wal was removed and could not be rebuilt yet", f);
		break;
	case STORE_FAULT_DB_LOST:
		snprintf(buf, sizeof(buf), "%s was removed or replaced; restore it and restart", f);
		break;
	case STORE_FAULT_WAL_GROWING:
		snprintf(buf, sizeof(buf), "%s-wal holds %d pages: checkpoints are failing", f,
			 st->wal_pages);
		break;
	case STORE_FAULT_REV_LOST:
		snprintf(buf, sizeof(buf), "the rebuilt %s is older than the revisions served", f);
		break;
	case STORE_FAULT_NOSPACE:
		snprintf(buf, sizeof(buf), "no space left on the device of %s", f);
		break;
	}
	if (why && len)
		snprintf(why, len, "%s", buf);
	return st->fault == STORE_FAULT_NONE ? 0 : -EROFS;
}

/* ---- compaction and key/value ------------------------------------------ */

int store_compact(store_t *st, int64_t rev)
{
	KB_CHECK(st, -EINVAL);
	if (rev > st->rev)
		rev = st->rev;
	if (rev <= st->compacted_rev)
		return 0;
	int64_t rev0 = st->rev;
	int err = write_begin(st);
	if (err)
		return err;
	sqlite3_bind_int64(st->stmt[SQ_COMPACT], 1, rev);
	sqlite3_bind_int64(st->stmt[SQ_COMPACT], 2, st->compacted_rev);
	err = step_done(st, st->stmt[SQ_COMPACT], "compact");
	if (!err)
		err = meta_set_int(st, "compacted", rev);
	if (!err)
		err = meta_set_int(st, "rev", st->rev);
	err = write_end(st, err, rev0, NULL);
	if (!err) {
		st->compacted_rev = rev;
		kb_debug("store", "compacted history up to revision %" PRId64, rev);
	}
	return err;
}

static char *kv_key(const char *key)
{
	size_t n = strlen(key);
	char *k = malloc(n + 4);
	if (k) {
		memcpy(k, "kv/", 3);
		memcpy(k + 3, key, n + 1);
	}
	return k;
}

int store_kv_get(store_t *st, const char *key, char **out)
{
	KB_CHECK(st && key && out, -EINVAL);
	char *k = kv_key(key);
	if (!k)
		return -ENOMEM;
	sqlite3_stmt *q = st->stmt[SQ_META_GET];
	sqlite3_bind_text(q, 1, k, -1, SQLITE_STATIC);
	int err = 0, rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(q, 0);
		*out = dup_text(v ? v : "", v ? (size_t)sqlite3_column_bytes(q, 0) : 0);
		err = *out ? 0 : -ENOMEM;
	} else {
		err = rc == SQLITE_DONE ? -ENOENT : store__sql_err(st, rc, "kv get");
	}
	sqlite3_reset(q);
	free(k);
	return err;
}

int store_kv_set(store_t *st, const char *key, const char *value)
{
	KB_CHECK(st && key && value, -EINVAL);
	char *k = kv_key(key);
	if (!k)
		return -ENOMEM;
	int64_t rev0 = st->rev;
	int err = write_begin(st);
	if (!err) {
		sqlite3_stmt *q = st->stmt[SQ_META_SET];
		sqlite3_bind_text(q, 1, k, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, value, -1, SQLITE_STATIC);
		err = write_end(st, step_done(st, q, "kv set"), rev0, NULL);
	}
	free(k);
	return err;
}
