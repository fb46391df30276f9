/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Object counts per resource and namespace, kept by the database itself:
 * triggers on the objects table add and take one in the transaction of
 * the write, so a count is one small row read instead of a count(*) over
 * the index (remainingItemCount on a list's first page, store_count,
 * apiserver_storage_objects). kube reads remainingItemCount from the range
 * count etcd returns with a limited range (apiserver
 * pkg/storage/etcd3/store.go GetList: the range's Count less the items
 * returned); this is that count without walking the range.
 *
 * DESIGN: a store made before the counts existed gets them at open, filled
 * from the objects in the same transaction as the table and its triggers.
 * When that cannot be written (a full disk at start), the store counts
 * with count(*) as before and tries again at its next open: the statements
 * are chosen at prepare time (store__count_sql). An object's update keeps
 * its res, ns and name, so only inserts and deletes move a count; a row
 * at zero is removed with its last object.
 */
#include <string.h>

#include "lib/log.h"
#include "store/store_impl.h"

static const char counts_sql[] =
    "CREATE TABLE obj_counts(res TEXT NOT NULL, ns TEXT NOT NULL, n INTEGER NOT NULL,"
    " PRIMARY KEY(res, ns)) WITHOUT ROWID;"
    "CREATE TRIGGER obj_counts_ins AFTER INSERT ON objects BEGIN"
    " INSERT INTO obj_counts(res, ns, n) VALUES(new.res, new.ns, 1)"
    "  ON CONFLICT(res, ns) DO UPDATE SET n = n + 1;"
    " END;"
    "CREATE TRIGGER obj_counts_del AFTER DELETE ON objects BEGIN"
    " UPDATE obj_counts SET n = n - 1 WHERE res = old.res AND ns = old.ns;"
    " DELETE FROM obj_counts WHERE res = old.res AND ns = old.ns AND n <= 0;"
    " END;"
    "INSERT INTO obj_counts(res, ns, n) SELECT res, ns, count(*) FROM objects GROUP BY res, ns;";

static bool have_counts(store_t *st)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(st->db,
				    "SELECT count(*) FROM sqlite_master WHERE name IN"
				    " ('obj_counts', 'obj_counts_ins', 'obj_counts_del')",
				    -1, &q, NULL);
	bool have =
	    rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0) == 3;
	sqlite3_finalize(q);
	return have;
}

int store__counts_init(store_t *st)
{
	st->counted = have_counts(st);
	if (st->counted)
		return 0;
	char *msg = NULL;
	int rc = sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db, counts_sql, NULL, NULL, &msg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(st->db, "COMMIT", NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
		kb_warn("store", "object counts not kept (counting each time): %s",
			msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		return 0; /* counted with count(*) */
	}
	st->counted = true;
	return 0;
}

const char *store__count_sql(const store_t *st, enum store_stmt s)
{
	if (!st->counted)
		return NULL;
	switch (s) {
	case SQ_COUNT_ALL: return "SELECT IFNULL(sum(n), 0) FROM obj_counts WHERE res = ?1";
	case SQ_COUNT_NS:
		return "SELECT IFNULL(sum(n), 0) FROM obj_counts WHERE res = ?1 AND ns = ?2";
	case SQ_COUNT_EACH: return "SELECT res, sum(n) FROM obj_counts GROUP BY res";
	default: return NULL;
	}
}
