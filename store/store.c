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
 * changes anything, so only an SQLite failure can leave a half-done write;
 * that poisons the open transaction, whose commit then rolls back (-EIO).
 *
 * The current revision is not written on every change: it is the largest
 * event revision, or the compacted revision when compaction emptied the
 * history (meta "rev" is also written at compaction and close). Meta keys of
 * store_kv_* are prefixed with "kv/" so they never collide with ours.
 */
#include "store/store_impl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/prom.h"
#include "lib/util.h"

#define STORE_SCHEMA_VERSION  1
#define STORE_BUSY_TIMEOUT_MS 5000
#define STORE_JOURNAL_LIMIT   (4 * 1024 * 1024)
#define STORE_LOOKASIDE_SZ    256
#define STORE_LOOKASIDE_CNT   64
#define STORE_MMAP_SIZE       (256LL * 1024 * 1024)
/* The timer deletes at most this many events per run (a short pause of the
 * loop); when more are due it runs again right away. */
#define STORE_COMPACT_BATCH 1000

/*
 * objects is a rowid table on purpose: objects are ~1-4 KiB, which a rowid
 * table keeps inside its leaf pages while a WITHOUT ROWID (index) b-tree
 * spills everything past ~1 KiB to an overflow page: twice the pages read
 * and cached per object. The primary key's index serves gets, lists and
 * counts (the latter without touching the rows).
 */
static const char *const schema_sql =
    "CREATE TABLE IF NOT EXISTS objects("
    " res TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,"
    " rev INTEGER NOT NULL, data TEXT NOT NULL,"
    " PRIMARY KEY(res, ns, name));"
    "CREATE TABLE IF NOT EXISTS events("
    " rev INTEGER PRIMARY KEY, type INTEGER NOT NULL, res TEXT NOT NULL,"
    " ns TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS meta("
    " key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "PRAGMA user_version = 1;";

static const char *const stmt_sql[SQ__COUNT] = {
    [SQ_GET] = "SELECT rev, data FROM objects WHERE res = ?1 AND ns = ?2 AND name = ?3",
    [SQ_INS_OBJ] = "INSERT INTO objects(res, ns, name, rev, data) VALUES(?1, ?2, ?3, ?4, ?5)",
    [SQ_UPD_OBJ] =
	"UPDATE objects SET rev = ?4, data = ?5 WHERE res = ?1 AND ns = ?2 AND name = ?3",
    [SQ_DEL_OBJ] = "DELETE FROM objects WHERE res = ?1 AND ns = ?2 AND name = ?3",
    [SQ_INS_EV] =
	"INSERT INTO events(rev, type, res, ns, name, data) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [SQ_LIST_ALL] = "SELECT ns, name, data FROM objects WHERE res = ?1 AND (ns, name) > (?2, ?3)"
		    " ORDER BY ns, name",
    [SQ_LIST_NS] = "SELECT ns, name, data FROM objects WHERE res = ?1 AND ns = ?2 AND name > ?3"
		   " ORDER BY name",
    /* remainingItemCount: the keys after a page's last, from the index */
    [SQ_REMAIN_ALL] = "SELECT count(*) FROM objects WHERE res = ?1 AND (ns, name) > (?2, ?3)",
    [SQ_REMAIN_NS] = "SELECT count(*) FROM objects WHERE res = ?1 AND ns = ?2 AND name > ?3",
    [SQ_COUNT_ALL] = "SELECT count(*) FROM objects WHERE res = ?1",
    [SQ_COUNT_NS] = "SELECT count(*) FROM objects WHERE res = ?1 AND ns = ?2",
    [SQ_COUNT_EACH] = "SELECT res, count(*) FROM objects GROUP BY res",
    [SQ_REPLAY] = "SELECT rev, type, res, ns, name, data FROM events"
		  " WHERE rev > ?1 AND rev <= ?2 AND (?3 IS NULL OR res = ?3)"
		  " AND (?4 IS NULL OR ns = ?4) ORDER BY rev LIMIT ?5",
    [SQ_COMPACT] = "DELETE FROM events WHERE rev <= ?1",
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

int store__sql_err(store_t *st, int rc, const char *what)
{
	kb_err("store", "%s: %s (sqlite %d)", what, st->db ? sqlite3_errmsg(st->db) : "", rc);
	return -EIO;
}

int store__exec(store_t *st, enum store_stmt s, const char *what)
{
	sqlite3_stmt *q = st->stmt[s];
	int rc = sqlite3_step(q);
	sqlite3_reset(q);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return store__sql_err(st, rc, what);
	return 0;
}

static void group_fini(store_t *st);
static int group_init(store_t *st);

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
	int err = set_journal(st);
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

static int init_schema(store_t *st)
{
	int64_t version = 0;
	int err = pragma_int(st, "PRAGMA user_version", &version);
	if (err)
		return err;
	if (version == STORE_SCHEMA_VERSION)
		return 0;
	if (version != 0) {
		kb_err("store", "unknown schema version %" PRId64, version);
		return -EIO;
	}
	err = exec_sql(st, "BEGIN IMMEDIATE", "schema");
	if (!err)
		err = exec_sql(st, schema_sql, "schema");
	if (!err)
		return exec_sql(st, "COMMIT", "schema");
	sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	return err;
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

/* Current revision: see DESIGN above. */
static int load_revs(store_t *st)
{
	int64_t max_ev = 0, meta_rev = 0;
	int err = meta_get_int(st, "compacted", &st->compacted_rev);
	if (err && err != -ENOENT)
		return err;
	err = meta_get_int(st, "rev", &meta_rev);
	if (err && err != -ENOENT)
		return err;
	err = pragma_int(st, "SELECT coalesce(max(rev), 0) FROM events", &max_ev);
	if (err)
		return err;
	st->rev = st->compacted_rev;
	if (meta_rev > st->rev)
		st->rev = meta_rev;
	if (max_ev > st->rev)
		st->rev = max_ev;
	return 0;
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
}

static int open_db(store_t *st, const char *path)
{
	int rc = sqlite3_open_v2(
	    path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
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

int store_open(uv_loop_t *loop, const char *path, const struct store_opts *opts, store_t **out)
{
	KB_CHECK(path && out, -EINVAL);
	store_t *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->loop = loop;
	set_opts(st, opts);
	int err = open_db(st, path);
	if (!err)
		err = configure(st);
	if (!err)
		err = init_schema(st);
	if (!err)
		err = prepare_all(st);
	if (!err)
		err = load_revs(st);
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
	store__ckpt_stop(st);
	if (st->stmt[SQ__COUNT - 1])
		meta_set_int(st, "rev", st->rev);
	for (int i = 0; i < SQ__COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	sqlite3_finalize(st->snap_stmt[0]);
	sqlite3_finalize(st->snap_stmt[1]);
	if (st->db && sqlite3_close(st->db) != SQLITE_OK)
		store__sql_err(st, SQLITE_BUSY, "close");
	free(st->wbuf);
	free(st->rbuf);
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
 * Looks a key up: 0 with *rev (and *text, malloc'ed, when text != NULL),
 * -ENOENT, -ENOMEM or -EIO.
 */
static int lookup(store_t *st, const char *res, const char *ns, const char *name, int64_t *rev,
		  char **text, size_t *len)
{
	sqlite3_stmt *q = st->stmt[SQ_GET];
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

/* Writes the object row (insert, update or delete) from st->wbuf. */
static int put_object(store_t *st, enum store_stmt s, const char *res, const char *ns,
		      const char *name, int64_t rev, size_t len)
{
	sqlite3_stmt *q = st->stmt[s];
	bind_key(q, res, ns, name);
	if (s != SQ_DEL_OBJ) {
		sqlite3_bind_int64(q, 4, rev);
		sqlite3_bind_text(q, 5, st->wbuf, (int)len, SQLITE_STATIC);
	}
	int err = step_done(st, q, "write object");
	if (!err && sqlite3_changes(st->db) != 1) {
		kb_err("store", "write object %s %s/%s: no row changed", res, ns, name);
		err = -EIO;
	}
	return err;
}

static int group_open(store_t *st);

static int write_begin(store_t *st)
{
	if (st->txn_depth == 0 && st->gc_check)
		return group_open(st);
	return st->txn_depth > 0 ? 0 : store__exec(st, SQ_BEGIN, "begin");
}

static int commit_timed(store_t *st);

/*
 * Ends one write: commits it (outside a transaction) and queues its event.
 * On failure restores the revision and frees the node. Takes `n`.
 */
static int write_end(store_t *st, int err, int64_t rev0, struct store_evnode *n)
{
	if (st->txn_depth > 0) {
		if (err == -EIO)
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
		return err;
	}
	if (n)
		store__emit(st, n);
	return 0;
}

const double STORE_COMMIT_BOUNDS[STORE_COMMIT_NBOUNDS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1};

/* COMMIT, timed for store_stats. */
static int commit_timed(store_t *st)
{
	uint64_t t0 = uv_hrtime();
	int err = store__exec(st, SQ_COMMIT, "commit");
	double secs = (double)(uv_hrtime() - t0) / 1e9;
	st->stats.commits[kb_prom_bucket(STORE_COMMIT_BOUNDS, STORE_COMMIT_NBOUNDS, secs)]++;
	st->stats.commit_seconds += secs;
	return err;
}

void store_stats(const store_t *st, struct store_stats *out)
{
	*out = st->stats;
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
	int64_t rev0 = st->rev, rev = st->rev + 1, old;
	struct store_evnode *n = NULL;
	size_t len = 0;
	int err = write_begin(st);
	if (err)
		return err;
	err = lookup(st, res, ns, name, &old, NULL, NULL);
	if (err == 0)
		err = -EEXIST;
	else if (err == -ENOENT)
		err = serialize(st, obj, rev, &len);
	if (!err)
		err = put_object(st, SQ_INS_OBJ, res, ns, name, rev, len);
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
			   int64_t expected_rev, json_t **prev, json_t **last)
{
	char *text = NULL;
	size_t len = 0;
	int64_t old = 0;
	int err = lookup(st, res, ns, name, &old, &text, &len);
	if (!err)
		err = check_rev(old, expected_rev);
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
	int64_t rev0 = st->rev, rev = st->rev + 1;
	json_t *prev = NULL, *last = NULL;
	struct store_evnode *n = NULL;
	size_t len = 0;
	int err = write_begin(st);
	if (err)
		return err;
	err = load_for_delete(st, res, ns, name, expected_rev, &prev, &last);
	if (!err)
		err = serialize(st, last, rev, &len);
	if (!err)
		err = put_object(st, SQ_DEL_OBJ, res, ns, name, rev, len);
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

int store_get_raw(store_t *st, const char *res, const char *ns, const char *name, const char **text,
		  size_t *len, int64_t *rev_out)
{
	KB_CHECK(st && key_ok(res, ns, name) && text, -EINVAL);
	sqlite3_stmt *q = st->stmt[SQ_GET];
	int err = 0;
	bind_key(q, res, ns, name);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(q, 1);
		const void *d = sqlite3_column_blob(q, 1);
		if (n + 1 > st->rbuf_cap) {
			char *nb = realloc(st->rbuf, n + 1024);
			err = nb ? 0 : -ENOMEM;
			if (nb) {
				st->rbuf = nb;
				st->rbuf_cap = n + 1024;
			}
		}
		if (!err) {
			memcpy(st->rbuf, d, n);
			st->rbuf[n] = '\0';
			*text = st->rbuf;
			if (len)
				*len = n;
			if (rev_out)
				*rev_out = sqlite3_column_int64(q, 0);
		}
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
	json_t *items;
	size_t count;
	struct kb_buf last_ns, last_name;
	bool more;
};

static int list_row(store_t *st, sqlite3_stmt *q, const struct store_list_req *req,
		    struct list_state *ls)
{
	json_t *obj =
	    kb_json_loadb(sqlite3_column_blob(q, 2), (size_t)sqlite3_column_bytes(q, 2), 0, NULL);
	if (!obj)
		return store__sql_err(st, SQLITE_CORRUPT, "stored object is not JSON");
	if (req->filter && !req->filter(obj, req->filter_arg)) {
		json_decref(obj);
		return 0;
	}
	if (json_array_append_new(ls->items, obj))
		return -ENOMEM;
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
 * the range's count less the page, remainingItemCount). 0 or -EIO. */
static int list_remaining(store_t *st, const struct store_list_req *req, struct list_state *ls,
			  int64_t *out)
{
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

int store_list(store_t *st, const struct store_list_req *req, struct store_list_result *out)
{
	KB_CHECK(st && req && req->res && out, -EINVAL);
	if (req->at > 0 && req->at < st->rev)
		return store__list_at(st, req, out);
	struct list_state ls = {.items = json_array()};
	unsigned char *kbuf = NULL;
	const char *after_ns = "", *after_name = "";
	sqlite3_stmt *q = st->stmt[req->ns ? SQ_LIST_NS : SQ_LIST_ALL];
	int err = ls.items ? 0 : -ENOMEM;
	if (!err && req->after) {
		err = store__decode_key(req->after, &kbuf, &after_name);
		after_ns = (const char *)kbuf;
	}
	if (!err && bind_list(q, req, after_ns, after_name))
		err = list_scan(st, q, req, &ls);
	sqlite3_clear_bindings(q);
	free(kbuf);
	out->next = NULL;
	out->remaining = -1;
	if (!err && ls.more) {
		out->next = store__encode_key(ls.last_ns.data, ls.last_ns.len, ls.last_name.data,
					      ls.last_name.len);
		err = out->next ? 0 : -ENOMEM;
	}
	if (!err && ls.more && req->want_remaining)
		err = list_remaining(st, req, &ls, &out->remaining);
	kb_buf_free(&ls.last_ns);
	kb_buf_free(&ls.last_name);
	if (err) {
		json_decref(ls.items);
		return err;
	}
	out->items = ls.items;
	out->rev = st->rev;
	return 0;
}

/* One row of store_list_text: filtered, then given to cb. */
static int text_row(store_t *st, sqlite3_stmt *q, const struct store_list_req *req,
		    int (*cb)(const char *, size_t, void *), void *arg)
{
	const char *text = sqlite3_column_blob(q, 2);
	size_t len = (size_t)sqlite3_column_bytes(q, 2);
	if (req->filter) {
		json_t *obj = kb_json_loadb(text, len, 0, NULL);
		if (!obj)
			return store__sql_err(st, SQLITE_CORRUPT, "stored object is not JSON");
		bool keep = req->filter(obj, req->filter_arg);
		json_decref(obj);
		if (!keep)
			return 0;
	}
	return cb(text ? text : "", len, arg);
}

int store_list_text(store_t *st, const struct store_list_req *req,
		    int (*cb)(const char *text, size_t len, void *arg), void *arg, int64_t *rev)
{
	KB_CHECK(st && req && req->res && cb && rev, -EINVAL);
	sqlite3_stmt *q = st->stmt[req->ns ? SQ_LIST_NS : SQ_LIST_ALL];
	int rc, err = 0;
	bind_list(q, req, "", "");
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		if ((err = text_row(st, q, req, cb, arg)) != 0)
			break;
	if (!err && rc != SQLITE_DONE)
		err = store__sql_err(st, rc, "list");
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	*rev = st->rev;
	return err;
}

int store_count(store_t *st, const char *res, const char *ns, size_t *count)
{
	KB_CHECK(st && res && count, -EINVAL);
	sqlite3_stmt *q = st->stmt[ns ? SQ_COUNT_NS : SQ_COUNT_ALL];
	sqlite3_bind_text(q, 1, res, -1, SQLITE_STATIC);
	if (ns)
		sqlite3_bind_text(q, 2, ns, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*count = (size_t)sqlite3_column_int64(q, 0);
	sqlite3_reset(q);
	return rc == SQLITE_ROW ? 0 : store__sql_err(st, rc, "count");
}

int store_count_each(store_t *st, void (*cb)(const char *res, int64_t count, void *arg), void *arg)
{
	KB_CHECK(st && cb, -EINVAL);
	sqlite3_stmt *q = st->stmt[SQ_COUNT_EACH];
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		cb((const char *)sqlite3_column_text(q, 0), sqlite3_column_int64(q, 1), arg);
	sqlite3_reset(q);
	return rc == SQLITE_DONE ? 0 : store__sql_err(st, rc, "count each");
}

/* ---- transactions ------------------------------------------------------ */

int store_txn_begin(store_t *st)
{
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
	return 0;
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
	if (err == 0)
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
