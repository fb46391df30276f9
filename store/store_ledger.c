/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU allocation ledger's tables (store.h, "the GPU allocation
 * ledger"): what each tenant pod held on the host and when, and the host's
 * GPU capacity as this tenant's syncer saw it.
 *
 * DESIGN: the writer shares the store's connection (loop thread), so its
 * upserts join the store's group-commit transaction when one is open and
 * are their own autocommit otherwise; its statements are its own, prepared
 * once. Readers (`kubicle usage`, another process) open the file read-only
 * and see the last committed state: WAL readers never block the writer.
 * A store made before the ledger existed has no tables for a reader: it
 * reads as empty.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "store/store_impl.h"

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS gpu_alloc ("
    " host_uid TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER, end_kind TEXT,"
    " ns TEXT NOT NULL, pod TEXT NOT NULL, pod_uid TEXT, queue TEXT, node TEXT, model TEXT,"
    " sharing TEXT, gpus REAL NOT NULL, detail TEXT,"
    " PRIMARY KEY (host_uid, start)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS gpu_alloc_end ON gpu_alloc(end);"
    /* covering store_ledger_sums' PODS (its groups in index order, no sort)
     * and TOTALS (a scan of narrower rows than the table's) */
    "CREATE INDEX IF NOT EXISTS gpu_alloc_pod"
    " ON gpu_alloc(ns, pod, model, node, start, end, gpus);"
    "CREATE TABLE IF NOT EXISTS gpu_node ("
    " node_uid TEXT NOT NULL, start INTEGER NOT NULL, end INTEGER, end_kind TEXT,"
    " node TEXT, model TEXT, gpus REAL NOT NULL,"
    " PRIMARY KEY (node_uid, start)) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS gpu_ledger_meta (key TEXT PRIMARY KEY, value INTEGER);";

enum {
	LQ_PUT,
	LQ_PUT_NODE,
	LQ_EACH,
	LQ_EACH_NODE,
	LQ_RECENT,
	LQ_OPEN,
	LQ_OPEN_NODE,
	LQ_CLOSE,
	LQ_CLOSE_NODE,
	LQ_PRUNE,
	LQ_PRUNE_NODE,
	LQ_SET_SEEN,
	LQ_SEEN,
	LQ_MOVED,
	LQ_CLEAR,
	LQ__COUNT
};

/* An open row stays closed once closed: excluded.end NULL keeps the old. */
static const char *const sql[LQ__COUNT] = {
    [LQ_PUT] =
	"INSERT INTO gpu_alloc VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"
	" ON CONFLICT (host_uid, start) DO UPDATE SET"
	" end = COALESCE(excluded.end, end),"
	" end_kind = CASE WHEN excluded.end IS NULL THEN end_kind ELSE excluded.end_kind END,"
	" ns = excluded.ns, pod = excluded.pod, pod_uid = excluded.pod_uid,"
	" queue = excluded.queue, node = excluded.node, model = excluded.model,"
	" sharing = excluded.sharing, gpus = excluded.gpus, detail = excluded.detail",
    [LQ_PUT_NODE] = "INSERT INTO gpu_node VALUES (?1,?2,?3,?4,?5,?6,?7)"
		    " ON CONFLICT (node_uid, start) DO UPDATE SET"
		    " end = COALESCE(excluded.end, end),"
		    " end_kind = CASE WHEN excluded.end IS NULL THEN end_kind"
		    " ELSE excluded.end_kind END,"
		    " node = excluded.node, model = excluded.model, gpus = excluded.gpus",
    [LQ_EACH] = "SELECT host_uid, start, end, end_kind, ns, pod, pod_uid, queue, node, model,"
		" sharing, gpus, detail FROM gpu_alloc"
		/* a scan, in key order: for a report over most of the ledger
		 * faster than an index's lookups of every row */
		" WHERE IFNULL(end, 9223372036854775807) > ?1 AND start < ?2",
    [LQ_EACH_NODE] = "SELECT node_uid, start, end, end_kind, node, model, gpus FROM gpu_node"
		     " WHERE IFNULL(end, 9223372036854775807) > ?1 AND start < ?2",
    /* the rows still open or ended after ?1, by the index on end (two
     * ranges of it: a row's end is NULL or a number) */
    [LQ_RECENT] = "SELECT host_uid, start, end, end_kind, ns, pod, pod_uid, queue, node, model,"
		  " sharing, gpus, detail FROM gpu_alloc WHERE end > ?1"
		  " UNION ALL SELECT host_uid, start, end, end_kind, ns, pod, pod_uid, queue, node,"
		  " model, sharing, gpus, detail FROM gpu_alloc WHERE end IS NULL",
    [LQ_OPEN] = "SELECT host_uid, start FROM gpu_alloc WHERE end IS NULL",
    [LQ_OPEN_NODE] = "SELECT node_uid, start FROM gpu_node WHERE end IS NULL",
    [LQ_CLOSE] = "UPDATE gpu_alloc SET end = MAX(?3, start), end_kind = 'gone'"
		 " WHERE host_uid = ?1 AND start = ?2 AND end IS NULL",
    [LQ_CLOSE_NODE] = "UPDATE gpu_node SET end = MAX(?3, start), end_kind = 'gone'"
		      " WHERE node_uid = ?1 AND start = ?2 AND end IS NULL",
    [LQ_PRUNE] = "DELETE FROM gpu_alloc WHERE end IS NOT NULL AND end < ?1",
    [LQ_PRUNE_NODE] = "DELETE FROM gpu_node WHERE end IS NOT NULL AND end < ?1",
    [LQ_SET_SEEN] = "INSERT INTO gpu_ledger_meta VALUES ('seen', ?1)"
		    " ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)",
    [LQ_SEEN] = "SELECT value FROM gpu_ledger_meta WHERE key = 'seen'",
    /* a host pod is bound once: a row of it under another start was
     * written from a status the host has since corrected */
    [LQ_MOVED] = "DELETE FROM gpu_alloc WHERE host_uid = ?1 AND start <> ?2",
    [LQ_CLEAR] = "DELETE FROM gpu_alloc",
};

struct store_ledger {
	sqlite3 *db;
	store_t *st;       /* the writer's store (its health checks); NULL: a reader */
	bool owned;        /* a read-only connection of our own */
	bool missing;      /* read-only, and the store has no ledger yet */
	bool no_pod_index; /* read-only, and no gpu_alloc_pod yet */
	sqlite3_stmt *q[LQ__COUNT];
};

static int ledger_err(store_ledger_t *l, int rc, const char *what)
{
	kb_err("store", "ledger %s: %s (sqlite %d)", what, sqlite3_errmsg(l->db), rc);
	return -EIO;
}

static int prepare(store_ledger_t *l)
{
	for (int i = 0; i < LQ__COUNT; i++) {
		if (l->owned && (i == LQ_PUT || i == LQ_PUT_NODE || i == LQ_CLOSE ||
				 i == LQ_CLOSE_NODE || i == LQ_PRUNE || i == LQ_PRUNE_NODE ||
				 i == LQ_SET_SEEN || i == LQ_MOVED || i == LQ_CLEAR))
			continue; /* a reader writes nothing */
		int rc = sqlite3_prepare_v3(l->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &l->q[i],
					    NULL);
		if (rc != SQLITE_OK)
			return ledger_err(l, rc, "prepare");
	}
	return 0;
}

int store_ledger_open(store_t *st, store_ledger_t **out)
{
	store_ledger_t *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->db = st->db;
	l->st = st;
	int rc = sqlite3_exec(l->db, schema, NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		ledger_err(l, rc, "schema");
		free(l);
		return -EIO;
	}
	if ((rc = prepare(l)) < 0) {
		store_ledger_close(l);
		return rc;
	}
	*out = l;
	return 0;
}

int store_ledger_open_ro(const char *path, store_ledger_t **out)
{
	store_ledger_t *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->owned = true;
	int rc = sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(l->db, 5000);
	/* one scan of a large ledger: mapped pages, no read() per page */
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(l->db, "PRAGMA mmap_size = 1073741824", NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_close(l->db);
		free(l);
		return rc == SQLITE_CANTOPEN ? -ENOENT : -EIO;
	}
	sqlite3_stmt *q = NULL;
	rc = sqlite3_prepare_v2(l->db,
				"SELECT count(*) FROM sqlite_master WHERE name IN ('gpu_alloc',"
				"'gpu_node','gpu_ledger_meta')",
				-1, &q, NULL);
	int have = rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) : -1;
	sqlite3_finalize(q);
	if (have < 0) {
		ledger_err(l, rc, "open");
		store_ledger_close(l);
		return -EIO;
	}
	l->missing = have < 3;
	rc = sqlite3_prepare_v2(
	    l->db, "SELECT count(*) FROM sqlite_master WHERE name = 'gpu_alloc_pod'", -1, &q, NULL);
	l->no_pod_index =
	    !(rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) == 1);
	sqlite3_finalize(q);
	if (!l->missing && (rc = prepare(l)) < 0) {
		store_ledger_close(l);
		return rc;
	}
	*out = l;
	return 0;
}

void store_ledger_close(store_ledger_t *l)
{
	if (!l)
		return;
	for (int i = 0; i < LQ__COUNT; i++)
		sqlite3_finalize(l->q[i]);
	if (l->owned)
		sqlite3_close(l->db);
	free(l);
}

static void bind_text(sqlite3_stmt *q, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, i);
}

static void bind_end(sqlite3_stmt *q, int i, int64_t end)
{
	if (end)
		sqlite3_bind_int64(q, i, end);
	else
		sqlite3_bind_null(q, i);
}

/* One write, through the store's health path (store__write_check). */
static int step_done(store_ledger_t *l, sqlite3_stmt *q, const char *what)
{
	int err = l->st ? store__write_check(l->st) : -EROFS;
	int rc = err ? SQLITE_OK : sqlite3_step(q);
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	if (err)
		return err;
	if (rc != SQLITE_DONE) {
		char buf[64];
		snprintf(buf, sizeof(buf), "ledger %s", what);
		return store__sql_err(l->st, rc, buf);
	}
	store__wrote(l->st);
	return 0;
}

int store_ledger_put(store_ledger_t *l, const struct store_alloc *a)
{
	sqlite3_stmt *q = l->q[LQ_PUT];
	if (!q || !a->host_uid || !a->ns || !a->pod)
		return -EINVAL;
	bind_text(q, 1, a->host_uid);
	sqlite3_bind_int64(q, 2, a->start);
	bind_end(q, 3, a->end);
	bind_text(q, 4, a->end ? a->end_kind : NULL);
	bind_text(q, 5, a->ns);
	bind_text(q, 6, a->pod);
	bind_text(q, 7, a->pod_uid);
	bind_text(q, 8, a->queue);
	bind_text(q, 9, a->node);
	bind_text(q, 10, a->model);
	bind_text(q, 11, a->sharing);
	sqlite3_bind_double(q, 12, a->gpus);
	bind_text(q, 13, a->detail);
	int rc = step_done(l, q, "put");
	if (!rc) {
		sqlite3_stmt *m = l->q[LQ_MOVED];
		bind_text(m, 1, a->host_uid);
		sqlite3_bind_int64(m, 2, a->start);
		rc = step_done(l, m, "put");
	}
	return rc;
}

int store_ledger_put_node(store_ledger_t *l, const struct store_node_cap *c)
{
	sqlite3_stmt *q = l->q[LQ_PUT_NODE];
	if (!q || !c->node_uid)
		return -EINVAL;
	bind_text(q, 1, c->node_uid);
	sqlite3_bind_int64(q, 2, c->start);
	bind_end(q, 3, c->end);
	bind_text(q, 4, c->end ? c->end_kind : NULL);
	bind_text(q, 5, c->node);
	bind_text(q, 6, c->model);
	sqlite3_bind_double(q, 7, c->gpus);
	return step_done(l, q, "put node");
}

static const char *col(sqlite3_stmt *q, int i)
{
	return (const char *)sqlite3_column_text(q, i);
}

static void bind_window(sqlite3_stmt *q, int64_t since, int64_t until)
{
	sqlite3_bind_int64(q, 1, since);
	sqlite3_bind_int64(q, 2, until > 0 ? until : INT64_MAX);
}

static int each_row(store_ledger_t *l, sqlite3_stmt *q,
		    void (*cb)(const struct store_alloc *a, void *arg), void *arg);

int store_ledger_each(store_ledger_t *l, int64_t since, int64_t until,
		      void (*cb)(const struct store_alloc *a, void *arg), void *arg)
{
	if (l->missing)
		return 0;
	sqlite3_stmt *q = l->q[LQ_EACH];
	bind_window(q, since, until);
	return each_row(l, q, cb, arg);
}

int store_ledger_each_recent(store_ledger_t *l, int64_t since,
			     void (*cb)(const struct store_alloc *a, void *arg), void *arg)
{
	if (l->missing)
		return 0;
	sqlite3_stmt *q = l->q[LQ_RECENT];
	sqlite3_bind_int64(q, 1, since);
	return each_row(l, q, cb, arg);
}

static int each_row(store_ledger_t *l, sqlite3_stmt *q,
		    void (*cb)(const struct store_alloc *a, void *arg), void *arg)
{
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_alloc a = {.host_uid = col(q, 0),
					.start = sqlite3_column_int64(q, 1),
					.end = sqlite3_column_int64(q, 2),
					.end_kind = col(q, 3),
					.ns = col(q, 4),
					.pod = col(q, 5),
					.pod_uid = col(q, 6),
					.queue = col(q, 7),
					.node = col(q, 8),
					.model = col(q, 9),
					.sharing = col(q, 10),
					.gpus = sqlite3_column_double(q, 11),
					.detail = col(q, 12)};
		cb(&a, arg);
	}
	sqlite3_reset(q);
	return rc == SQLITE_DONE ? 0 : ledger_err(l, rc, "read");
}

/* A row's seconds in [?1, ?2), an open row lasting until ?3. */
#define CLIPPED "gpus * (min(IFNULL(end, ?3), ?2) - max(start, ?1))"
#define OVERLAPS                                               \
	"IFNULL(end, 9223372036854775807) > ?1 AND start < ?2" \
	" AND min(IFNULL(end, ?3), ?2) > max(start, ?1)"

static int sums(store_ledger_t *l, const char *text, int64_t since, int64_t until, int64_t open_end,
		void (*cb)(const struct store_alloc_sum *s, void *arg), void *arg)
{
	if (l->missing)
		return 0;
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(l->db, text, -1, &q, NULL);
	if (rc != SQLITE_OK)
		return ledger_err(l, rc, "prepare sums");
	sqlite3_bind_int64(q, 1, since);
	sqlite3_bind_int64(q, 2, until);
	sqlite3_bind_int64(q, 3, open_end);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_alloc_sum a = {.ns = col(q, 0),
					    .pod = col(q, 1),
					    .model = col(q, 2),
					    .gpu_seconds = sqlite3_column_double(q, 3),
					    .queue = col(q, 4),
					    .node = col(q, 5)};
		cb(&a, arg);
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE ? 0 : ledger_err(l, rc, "sums");
}

/* store_ledger_sums' statements, by kind; [1]: for a store whose writer
 * has not made gpu_alloc_pod yet (an older server: a reader cannot) */
#define POD_INDEX  " INDEXED BY gpu_alloc_pod"
#define TOTALS(ix) "SELECT NULL, NULL, model, " CLIPPED ", NULL, node FROM gpu_alloc" ix
#define PODS(ix)                                                                                   \
	"SELECT ns, pod, model, sum(" CLIPPED "), NULL, node FROM gpu_alloc" ix " WHERE " OVERLAPS \
	" GROUP BY ns, pod, model, node ORDER BY ns, pod, model, node"
static const char *const sums_sql[][2] = {
    /* a scan in key order: for most of the ledger faster than an index */
    [STORE_LEDGER_ROWS] = {"SELECT ns, pod, model, " CLIPPED ", queue, node FROM gpu_alloc"
			   " WHERE " OVERLAPS,
			   NULL},
    [STORE_LEDGER_TOTALS] = {TOTALS(POD_INDEX) " WHERE " OVERLAPS, TOTALS("") " WHERE " OVERLAPS},
    [STORE_LEDGER_PODS] = {PODS(POD_INDEX), PODS("")},
};

int store_ledger_sums(store_ledger_t *l, enum store_ledger_sums kind, int64_t since, int64_t until,
		      int64_t open_end, void (*cb)(const struct store_alloc_sum *s, void *arg),
		      void *arg)
{
	if ((unsigned)kind > STORE_LEDGER_PODS)
		return -EINVAL;
	const char *text = sums_sql[kind][l->no_pod_index && sums_sql[kind][1]];
	return sums(l, text, since, until, open_end, cb, arg);
}

int store_ledger_each_node(store_ledger_t *l, int64_t since, int64_t until,
			   void (*cb)(const struct store_node_cap *c, void *arg), void *arg)
{
	if (l->missing)
		return 0;
	sqlite3_stmt *q = l->q[LQ_EACH_NODE];
	bind_window(q, since, until);
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct store_node_cap c = {.node_uid = col(q, 0),
					   .start = sqlite3_column_int64(q, 1),
					   .end = sqlite3_column_int64(q, 2),
					   .end_kind = col(q, 3),
					   .node = col(q, 4),
					   .model = col(q, 5),
					   .gpus = sqlite3_column_double(q, 6)};
		cb(&c, arg);
	}
	sqlite3_reset(q);
	return rc == SQLITE_DONE ? 0 : ledger_err(l, rc, "read nodes");
}

int store_ledger_close_missing(store_ledger_t *l, bool nodes, const json_t *keep, int64_t end)
{
	sqlite3_stmt *q = l->q[nodes ? LQ_OPEN_NODE : LQ_OPEN];
	sqlite3_stmt *c = l->q[nodes ? LQ_CLOSE_NODE : LQ_CLOSE];
	if (!q || !c)
		return -EINVAL;
	json_t *gone = json_array();
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		if (!json_object_get(keep, col(q, 0)))
			json_array_append_new(
			    gone,
			    json_pack("[s,I]", col(q, 0), (json_int_t)sqlite3_column_int64(q, 1)));
	sqlite3_reset(q);
	int err = rc == SQLITE_DONE ? 0 : ledger_err(l, rc, "open rows");
	size_t i;
	json_t *g;
	json_array_foreach (gone, i, g) {
		if (err)
			break;
		bind_text(c, 1, json_string_value(json_array_get(g, 0)));
		sqlite3_bind_int64(c, 2, json_integer_value(json_array_get(g, 1)));
		sqlite3_bind_int64(c, 3, end);
		err = step_done(l, c, "close");
	}
	json_decref(gone);
	return err;
}

int store_ledger_prune(store_ledger_t *l, int64_t before)
{
	int rc = 0;
	for (int i = LQ_PRUNE; i <= LQ_PRUNE_NODE && !rc; i++) {
		sqlite3_bind_int64(l->q[i], 1, before);
		rc = step_done(l, l->q[i], "prune");
	}
	return rc;
}

int store_ledger_clear(store_ledger_t *l)
{
	int rc = step_done(l, l->q[LQ_CLEAR], "clear");
	if (!rc) {
		int s = sqlite3_exec(l->db, "DELETE FROM gpu_node; DELETE FROM gpu_ledger_meta",
				     NULL, NULL, NULL);
		rc = s == SQLITE_OK ? 0 : store__sql_err(l->st, s, "ledger clear");
	}
	return rc;
}

int store_ledger_set_seen(store_ledger_t *l, int64_t t)
{
	sqlite3_bind_int64(l->q[LQ_SET_SEEN], 1, t);
	return step_done(l, l->q[LQ_SET_SEEN], "seen");
}

int64_t store_ledger_seen(store_ledger_t *l)
{
	if (l->missing)
		return 0;
	sqlite3_stmt *q = l->q[LQ_SEEN];
	int64_t t = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
	sqlite3_reset(q);
	return t;
}
