/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the store's tables (store/store.c, schema_sql): an
 * object's data lives once, in the event row its key points at; compaction
 * keeps the rows keys point at and nothing else; readers of the history
 * never see those kept rows; the statements read objects through their
 * index and events by rowid; a store of schema 1 (the data in both tables)
 * is migrated at open and then read, listed, watched and compacted.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store/store_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"
#include "tests/unit/store/tmpdb.h"

static void setup(void)
{
	store_fixture_setup("kb-schema");
}

static json_t *pod(const char *ns, const char *name, const char *node)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Pod",
			 "metadata", "name", name, "namespace", ns, "spec", "nodeName", node);
}

static int64_t create(store_t *st, const char *name)
{
	int64_t rev = 0;
	json_t *o = pod("default", name, "n1");
	ck_assert_int_eq(store_create(st, "/pods", "default", name, o, &rev), 0);
	json_decref(o);
	return rev;
}

static int64_t update(store_t *st, const char *name, const char *node)
{
	int64_t rev = 0;
	json_t *o = pod("default", name, node);
	ck_assert_int_eq(store_update(st, "/pods", "default", name, o, 0, &rev), 0);
	json_decref(o);
	return rev;
}

/* The event rows' revisions, in order, as "r1,r2,...", read on a second
 * connection (what the store committed). */
static void event_revs(char *out, size_t len)
{
	sqlite3 *raw;
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_open_v2(db.path, &raw, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(
	    sqlite3_prepare_v2(raw, "SELECT rev FROM events ORDER BY rev", -1, &q, NULL),
	    SQLITE_OK);
	size_t n = 0;
	out[0] = '\0';
	while (sqlite3_step(q) == SQLITE_ROW)
		n += (size_t)snprintf(out + n, len - n, "%s%" PRId64, n ? "," : "",
				      (int64_t)sqlite3_column_int64(q, 0));
	sqlite3_finalize(q);
	sqlite3_close(raw);
}

static void expect_events(const char *want)
{
	char got[256];
	event_revs(got, sizeof(got));
	ck_assert_str_eq(got, want);
}

/* The stored text of a key, read through SQLite (a fresh store: no cache). */
static const char *node_of(store_t *st, const char *name, int64_t *rev)
{
	static char node[32];
	const char *text;
	size_t len;
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", name, &text, &len, rev), 0);
	json_t *o = json_loadb(text, len, 0, NULL);
	ck_assert_ptr_nonnull(o);
	snprintf(node, sizeof(node), "%s",
		 json_string_value(json_object_get(json_object_get(o, "spec"), "nodeName")));
	json_decref(o);
	return node;
}

/* The names a list gives, as "a,b,...". */
static void list_names(store_t *st, char *out, size_t len)
{
	struct store_list_req req = {.res = "/pods"};
	struct store_list_result res;
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	size_t n = 0, i;
	json_t *o;
	out[0] = '\0';
	json_array_foreach (res.items, i, o) {
		const char *name =
		    json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
		n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "," : "", name);
	}
	json_decref(res.items);
	free(res.next);
}

struct rec {
	int n;
	int64_t rev[16];
	enum store_event_type type[16];
};

static void rec_cb(const struct store_event *ev, void *arg)
{
	struct rec *r = arg;
	ck_assert_int_lt(r->n, 16);
	r->rev[r->n] = ev->rev;
	r->type[r->n++] = ev->type;
}

/* Compaction removes the history but keeps each key's current state, which
 * a later write of the key removes in turn; gets and lists read it, a
 * watch from the compacted revision never sees it. */
START_TEST(compaction_keeps_current_states)
{
	store_t *st = fixture_open(NULL);
	create(st, "a");                                                               /* 1 */
	create(st, "b");                                                               /* 2 */
	create(st, "c");                                                               /* 3 */
	ck_assert_int_eq(update(st, "a", "n2"), 4);                                    /* 4 */
	ck_assert_int_eq(store_delete(st, "/pods", "default", "b", 0, NULL, NULL), 0); /* 5 */
	expect_events("1,2,3,4,5");
	ck_assert_int_eq(store_compact(st, 5), 0);
	expect_events("3,4"); /* c's and a's current states */
	st = fixture_reopen(st, NULL);
	int64_t rev = 0;
	ck_assert_str_eq(node_of(st, "a", &rev), "n2");
	ck_assert_int_eq(rev, 4);
	ck_assert_str_eq(node_of(st, "c", &rev), "n1");
	ck_assert_int_eq(rev, 3);
	char names[64];
	list_names(st, names, sizeof(names));
	ck_assert_str_eq(names, "a,c");
	struct rec r = {0};
	store_watch_t *w;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 5, rec_cb, &r, &w), 0);
	ck_assert_int_eq(r.n, 0); /* the kept rows are not history */
	/* c replaced: its kept row goes with the write, not at compaction */
	ck_assert_int_eq(update(st, "c", "n3"), 6);
	expect_events("4,6");
	ck_assert_int_eq(r.n, 1);
	ck_assert_int_eq(r.rev[0], 6);
	/* a deleted: its kept row goes; the DELETED event keeps a's last state */
	json_t *last = NULL;
	ck_assert_int_eq(store_delete(st, "/pods", "default", "a", 0, &last, NULL), 0);
	json_decref(last);
	expect_events("6,7");
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.type[1], STORE_DELETED);
	/* a created again: no row to drop; compaction keeps its and c's */
	ck_assert_int_eq(create(st, "a"), 8);
	ck_assert_int_eq(store_compact(st, 8), 0);
	expect_events("6,8");
	store_unwatch(w);
	st = fixture_reopen(st, NULL);
	ck_assert_int_eq(store_rev(st), 8);
	ck_assert_int_eq(store_compacted_rev(st), 8);
	ck_assert_str_eq(node_of(st, "c", &rev), "n3");
	list_names(st, names, sizeof(names));
	ck_assert_str_eq(names, "a,c");
	fixture_close(st);
}
END_TEST

/* A list at an earlier revision (store_snap.c) takes a changed key's older
 * state from the history above the compaction, never from a kept row. */
START_TEST(list_at_ignores_kept_rows)
{
	store_t *st = fixture_open(NULL);
	create(st, "a"); /* 1 */
	create(st, "b"); /* 2 */
	ck_assert_int_eq(store_compact(st, 2), 0);
	ck_assert_int_eq(update(st, "a", "n2"), 3);
	ck_assert_int_eq(update(st, "a", "n3"), 4);
	struct store_list_req req = {.res = "/pods", .at = 3};
	struct store_list_result res;
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	ck_assert_uint_eq(json_array_size(res.items), 2);
	json_t *a = json_array_get(res.items, 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(a, "spec"), "nodeName")),
			 "n2");
	json_decref(res.items);
	free(res.next);
	req.at = 1;
	ck_assert_int_eq(store_list(st, &req, &res), -ERANGE);
	fixture_close(st);
}
END_TEST

/* Gets and lists read objects through its index and the event rows by
 * rowid: one search each, no scan of a table, no sort. */
START_TEST(reads_use_the_indexes)
{
	store_t *st = fixture_open(NULL);
	static const enum store_stmt stmts[] = {SQ_GET,     SQ_REV,     SQ_LIST_ALL,
						SQ_LIST_NS, SQ_COMPACT, SQ_DEL_EV};
	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		char sql[1024];
		snprintf(sql, sizeof(sql), "EXPLAIN QUERY PLAN %s",
			 sqlite3_sql(st->stmt[stmts[i]]));
		sqlite3_stmt *q;
		ck_assert_int_eq(sqlite3_prepare_v2(st->db, sql, -1, &q, NULL), SQLITE_OK);
		int searches = 0;
		while (sqlite3_step(q) == SQLITE_ROW) {
			const char *d = (const char *)sqlite3_column_text(q, 3);
			ck_assert_msg(strncmp(d, "SEARCH ", 7) == 0 ||
					  strncmp(d, "CORRELATED SCALAR SUBQUERY", 26) == 0,
				      "%s: %s", sqlite3_sql(st->stmt[stmts[i]]), d);
			ck_assert_msg(!strstr(d, "TEMP B-TREE"), "%s: %s",
				      sqlite3_sql(st->stmt[stmts[i]]), d);
			if (strstr(d, "SEARCH e ") || strstr(d, "SEARCH events "))
				ck_assert_msg(strstr(d, "INTEGER PRIMARY KEY"), "%s", d);
			if (strstr(d, "SEARCH o ") || strstr(d, "SEARCH objects "))
				ck_assert_msg(strstr(d, "PRIMARY KEY (res=?"), "%s", d);
			searches += strncmp(d, "SEARCH ", 7) == 0;
		}
		sqlite3_finalize(q);
		ck_assert_int_eq(searches, stmts[i] == SQ_REV || stmts[i] == SQ_DEL_EV ? 1 : 2);
	}
	fixture_close(st);
}
END_TEST

/* ---- schema 1 ------------------------------------------------------------ */

/* A store as schema 1 wrote it: each object's data in its objects row and,
 * while within the history, in its event row too; the counts and their
 * triggers. History compacted to 3: a (rev 2) and the deleted z (rev 3)
 * have no event row; b's update (4) and c's create (5) do. */
static const char v1_sql[] =
    "PRAGMA journal_mode = WAL;"
    "CREATE TABLE objects(res TEXT NOT NULL, ns TEXT NOT NULL, name TEXT NOT NULL,"
    " rev INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY(res, ns, name));"
    "CREATE TABLE events(rev INTEGER PRIMARY KEY, type INTEGER NOT NULL, res TEXT NOT NULL,"
    " ns TEXT NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL);"
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "CREATE TABLE obj_counts(res TEXT NOT NULL, ns TEXT NOT NULL, n INTEGER NOT NULL,"
    " PRIMARY KEY(res, ns)) WITHOUT ROWID;"
    "CREATE TRIGGER obj_counts_ins AFTER INSERT ON objects BEGIN"
    " INSERT INTO obj_counts(res, ns, n) VALUES(new.res, new.ns, 1)"
    "  ON CONFLICT(res, ns) DO UPDATE SET n = n + 1; END;"
    "CREATE TRIGGER obj_counts_del AFTER DELETE ON objects BEGIN"
    " UPDATE obj_counts SET n = n - 1 WHERE res = old.res AND ns = old.ns;"
    " DELETE FROM obj_counts WHERE res = old.res AND ns = old.ns AND n <= 0; END;"
    "INSERT INTO objects VALUES('/pods', 'default', 'a', 2, '{\"kind\":\"Pod\",\"metadata\":"
    "{\"name\":\"a\",\"namespace\":\"default\",\"resourceVersion\":\"2\"},"
    "\"spec\":{\"nodeName\":\"n1\"}}');"
    "INSERT INTO objects VALUES('/pods', 'default', 'b', 4, '{\"kind\":\"Pod\",\"metadata\":"
    "{\"name\":\"b\",\"namespace\":\"default\",\"resourceVersion\":\"4\"},"
    "\"spec\":{\"nodeName\":\"n4\"}}');"
    "INSERT INTO objects VALUES('/configmaps', 'x', 'c', 5, '{\"kind\":\"ConfigMap\","
    "\"metadata\":{\"name\":\"c\",\"namespace\":\"x\",\"resourceVersion\":\"5\"}}');"
    "INSERT INTO events SELECT 4, 2, res, ns, name, data FROM objects WHERE rev = 4;"
    "INSERT INTO events SELECT 5, 1, res, ns, name, data FROM objects WHERE rev = 5;"
    "INSERT INTO meta VALUES('compacted', 3), ('rev', 5), ('kv/uid', 'u1');"
    "PRAGMA user_version = 1;";

static void write_v1(void)
{
	sqlite3 *raw;
	ck_assert_int_eq(sqlite3_open(db.path, &raw), SQLITE_OK);
	char *msg = NULL;
	int rc = sqlite3_exec(raw, v1_sql, NULL, NULL, &msg);
	ck_assert_msg(rc == SQLITE_OK, "%s", msg ? msg : "");
	sqlite3_close(raw);
}

static int64_t user_version(void)
{
	sqlite3 *raw;
	sqlite3_stmt *q;
	ck_assert_int_eq(sqlite3_open(db.path, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(raw);
	return v;
}

START_TEST(schema_1_migrates)
{
	write_v1();
	store_t *st = fixture_open(NULL);
	ck_assert_int_eq(user_version(), 2);
	ck_assert_int_eq(store_rev(st), 5);
	ck_assert_int_eq(store_compacted_rev(st), 3);
	expect_events("2,4,5"); /* a's data moved into a row at its revision */
	int64_t rev = 0;
	ck_assert_str_eq(node_of(st, "a", &rev), "n1");
	ck_assert_int_eq(rev, 2);
	ck_assert_str_eq(node_of(st, "b", &rev), "n4");
	ck_assert_int_eq(rev, 4);
	const char *text;
	ck_assert_int_eq(store_get_raw(st, "/configmaps", "x", "c", &text, NULL, &rev), 0);
	ck_assert_str_eq(text, "{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\","
			       "\"namespace\":\"x\",\"resourceVersion\":\"5\"}}");
	char names[64];
	list_names(st, names, sizeof(names));
	ck_assert_str_eq(names, "a,b");
	size_t n = 0;
	ck_assert_int_eq(store_count(st, "/pods", "default", &n), 0);
	ck_assert_uint_eq(n, 2);
	char *v = NULL;
	ck_assert_int_eq(store_kv_get(st, "uid", &v), 0);
	ck_assert_str_eq(v, "u1");
	free(v);
	/* the history above the compaction, and not a's moved row */
	struct rec r = {0};
	store_watch_t *w;
	ck_assert_int_eq(store_watch(st, NULL, NULL, 2, rec_cb, &r, &w), -ERANGE);
	ck_assert_int_eq(store_watch(st, NULL, NULL, 3, rec_cb, &r, &w), 0);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.rev[0], 4);
	ck_assert_int_eq(r.type[0], STORE_MODIFIED);
	ck_assert_int_eq(r.rev[1], 5);
	/* writes: the counts' triggers are back, a's moved row goes with a's
	 * update, compaction keeps the current states */
	ck_assert_int_eq(create(st, "d"), 6);
	ck_assert_int_eq(store_count(st, "/pods", "default", &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(update(st, "a", "n7"), 7);
	expect_events("4,5,6,7");
	ck_assert_int_eq(r.n, 4);
	ck_assert_int_eq(store_compact(st, 7), 0);
	expect_events("4,5,6,7");
	ck_assert_int_eq(update(st, "b", "n8"), 8);
	ck_assert_int_eq(store_compact(st, 8), 0);
	expect_events("5,6,7,8");
	store_unwatch(w);
	st = fixture_reopen(st, NULL);
	ck_assert_int_eq(store_rev(st), 8);
	ck_assert_str_eq(node_of(st, "a", &rev), "n7");
	list_names(st, names, sizeof(names));
	ck_assert_str_eq(names, "a,b,d");
	ck_assert_int_eq(store_count(st, "/pods", NULL, &n), 0);
	ck_assert_uint_eq(n, 3);
	fixture_close(st);
}
END_TEST

/* A new store is made at schema 2 directly. */
START_TEST(new_store_is_schema_2)
{
	store_t *st = fixture_open(NULL);
	fixture_close(st);
	ck_assert_int_eq(user_version(), 2);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("store/schema");
	TCase *tc = tcase_create("schema");
	tcase_add_checked_fixture(tc, setup, store_fixture_teardown);
	tcase_add_test(tc, compaction_keeps_current_states);
	tcase_add_test(tc, list_at_ignores_kept_rows);
	tcase_add_test(tc, reads_use_the_indexes);
	tcase_add_test(tc, schema_1_migrates);
	tcase_add_test(tc, new_store_is_schema_2);
	suite_add_tcase(s, tc);
	return s;
}
