/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reference for the durable-create benchmark: raw SQLite inserts of SIZE-byte
 * rows with unique keys, one transaction (BEGIN IMMEDIATE ... COMMIT) per
 * insert, in WAL mode with synchronous=NORMAL (or FULL), for a fixed time;
 * prints inserts per second as one line of key=value pairs.
 *
 *   sqlite_ref --db PATH [--secs 5] [--size 2048] [--sync normal|full]
 *              [--with-event | --two-copies] [--batch N] [--label L]
 *
 * --batch N puts N creates in each transaction (default 1), as Kubicle's
 * group commit does with the writes of one loop iteration: the benchmark
 * passes the creates-per-commit the server achieved, read off its metrics.
 * --with-event writes what Kubicle's store writes per create (store/store.c,
 * schema 2): a key row (name, rev) in a WITHOUT ROWID table and an event
 * row carrying the data, in the same transaction. --two-copies writes what
 * schema 1 wrote: the object row with its data and an event row with the
 * same data again.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench/bn.h"

struct opts {
	const char *db, *label;
	double secs;
	int size, batch, page_size;
	bool sync_full, with_event, two_copies;
};

struct ref {
	sqlite3 *db;
	sqlite3_stmt *begin, *commit, *ins_obj, *ins_ev;
	char *data;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: sqlite_ref --db PATH [--secs S] [--size BYTES] "
		"[--sync normal|full] [--with-event | --two-copies] [--batch N] [--page-size B] "
		"[--label L]\n");
	exit(2);
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"db", required_argument, NULL, 'D'},        {"secs", required_argument, NULL, 'd'},
	    {"size", required_argument, NULL, 's'},      {"sync", required_argument, NULL, 'y'},
	    {"with-event", no_argument, NULL, 'e'},      {"two-copies", no_argument, NULL, '2'},
	    {"label", required_argument, NULL, 'l'},     {"batch", required_argument, NULL, 'b'},
	    {"page-size", required_argument, NULL, 'p'}, {NULL, 0, NULL, 0},
	};
	*o = (struct opts){.secs = 5, .size = 2048, .batch = 1, .label = "sqlite"};
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'D': o->db = optarg; break;
		case 'd': o->secs = atof(optarg); break;
		case 's': o->size = atoi(optarg); break;
		case 'y': o->sync_full = strcmp(optarg, "full") == 0; break;
		case 'e': o->with_event = true; break;
		case '2': o->two_copies = true; break;
		case 'l': o->label = optarg; break;
		case 'b': o->batch = atoi(optarg); break;
		case 'p': o->page_size = atoi(optarg); break;
		default: usage();
		}
	}
	if (!o->db || o->size <= 0 || o->secs <= 0 || o->batch <= 0 ||
	    (o->with_event && o->two_copies))
		usage();
}

static int exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		fprintf(stderr, "sqlite_ref: %s: %s\n", sql, msg);
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **q)
{
	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, q, NULL) != SQLITE_OK) {
		fprintf(stderr, "sqlite_ref: %s: %s\n", sql, sqlite3_errmsg(db));
		return -EIO;
	}
	return 0;
}

static int open_db(struct ref *r, const struct opts *o)
{
	unlink(o->db);
	if (sqlite3_open(o->db, &r->db) != SQLITE_OK)
		return -EIO;
	char ps[64];
	snprintf(ps, sizeof(ps), "PRAGMA page_size = %d", o->page_size > 0 ? o->page_size : 4096);
	if (exec(r->db, ps) < 0 || exec(r->db, "PRAGMA journal_mode = WAL") < 0 ||
	    exec(r->db,
		 o->sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL") < 0 ||
	    exec(r->db, o->with_event
			    ? "CREATE TABLE objects(name TEXT PRIMARY KEY,"
			      " rev INTEGER NOT NULL) WITHOUT ROWID"
			    : "CREATE TABLE objects(name TEXT PRIMARY KEY, data TEXT NOT NULL)") <
		0 ||
	    exec(r->db, "CREATE TABLE events(rev INTEGER PRIMARY KEY, name TEXT NOT NULL,"
			" data TEXT NOT NULL)") < 0)
		return -EIO;
	/* ?2 left out of the key row's insert: its binding is ignored */
	if (prepare(r->db, "BEGIN IMMEDIATE", &r->begin) < 0 ||
	    prepare(r->db, "COMMIT", &r->commit) < 0 ||
	    prepare(r->db,
		    o->with_event ? "INSERT INTO objects(name, rev) VALUES(?1, ?3)"
				  : "INSERT INTO objects(name, data) VALUES(?1, ?2)",
		    &r->ins_obj) < 0 ||
	    prepare(r->db, "INSERT INTO events(rev, name, data) VALUES(?3, ?1, ?2)", &r->ins_ev) <
		0)
		return -EIO;
	return 0;
}

static int step(sqlite3 *db, sqlite3_stmt *q)
{
	int rc = sqlite3_step(q);
	sqlite3_reset(q);
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "sqlite_ref: step: %s\n", sqlite3_errmsg(db));
		return -EIO;
	}
	return 0;
}

static int insert(struct ref *r, sqlite3_stmt *q, const char *name, long n)
{
	sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(q, 2, r->data, -1, SQLITE_STATIC);
	if (sqlite3_bind_parameter_count(q) >= 3)
		sqlite3_bind_int64(q, 3, n);
	return step(r->db, q);
}

/* One transaction: `batch` object rows (and their event rows). */
static int one_txn(struct ref *r, const struct opts *o, long n)
{
	char name[32];
	int err = step(r->db, r->begin);
	for (long i = n; !err && i < n + o->batch; i++) {
		snprintf(name, sizeof(name), "pod-%08ld", i);
		err = insert(r, r->ins_obj, name, i);
		if (!err && (o->with_event || o->two_copies))
			err = insert(r, r->ins_ev, name, i);
	}
	if (!err)
		err = step(r->db, r->commit);
	return err;
}

static void close_db(struct ref *r)
{
	sqlite3_finalize(r->begin);
	sqlite3_finalize(r->commit);
	sqlite3_finalize(r->ins_obj);
	sqlite3_finalize(r->ins_ev);
	sqlite3_close(r->db);
	free(r->data);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct ref r = {0};
	parse_opts(argc, argv, &o);
	r.data = malloc((size_t)o.size + 1);
	if (!r.data)
		return 1;
	for (int i = 0; i < o.size; i++)
		r.data[i] = (char)('a' + i % 26);
	r.data[o.size] = '\0';
	if (open_db(&r, &o) < 0)
		return 1;
	long n = 0;
	int64_t t0 = bn_mono_ns(), end = t0 + (int64_t)(o.secs * 1e9), now;
	while ((now = bn_mono_ns()) < end) {
		if (one_txn(&r, &o, n) < 0)
			return 1;
		n += o.batch;
	}
	double secs = (double)(now - t0) / 1e9;
	printf("%s: size=%d sync=%s rows=%s rows_per_txn=%d creates_per_txn=%d inserts=%ld "
	       "secs=%.2f per_s=%.0f\n",
	       o.label, o.size, o.sync_full ? "full" : "normal",
	       o.with_event   ? "key+event"
	       : o.two_copies ? "object+event"
			      : "object",
	       (o.with_event || o.two_copies ? 2 : 1) * o.batch, o.batch, n, secs,
	       (double)n / secs);
	close_db(&r);
	return 0;
}
