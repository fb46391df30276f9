/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the store's health (store.h, Health): a WAL removed under
 * a running store is rebuilt before commits are acknowledged, so a kill -9
 * afterwards loses nothing; a WAL that checkpoints cannot bring back
 * refuses writes (-EROFS) until one succeeds; a removed database file
 * refuses writes for good while reads go on.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/store.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"
#include "tests/unit/store/tmpdb.h"

static void setup(void)
{
	store_fixture_setup("kb-health");
}

static int put(store_t *st, int i)
{
	char name[32];
	snprintf(name, sizeof(name), "c%05d", i);
	json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s}}", "apiVersion", "v1", "kind",
			      "ConfigMap", "metadata", "name", name, "namespace", "default", "data",
			      "pad", "0123456789012345678901234567890123456789");
	int err = store_create(st, "/configmaps", "default", name, o, NULL);
	json_decref(o);
	return err;
}

static void wal_path(char *buf, size_t len)
{
	snprintf(buf, len, "%s-wal", db.path);
}

/* The child writes 50 objects, removes the WAL, writes 50 more (each
 * acknowledged), then dies by SIGKILL without closing anything. */
static void child_writes_then_dies(void)
{
	uv_loop_t l;
	store_t *st;
	char wal[160];
	uv_loop_init(&l);
	if (store_open(&l, db.path, NULL, &st))
		_exit(2);
	for (int i = 0; i < 50; i++)
		if (put(st, i))
			_exit(3);
	wal_path(wal, sizeof(wal));
	if (unlink(wal) < 0)
		_exit(4);
	for (int i = 50; i < 100; i++)
		if (put(st, i))
			_exit(5);
	if (store_health(st, NULL, 0) != 0 || access(wal, F_OK) != 0)
		_exit(6);
	kill(getpid(), SIGKILL);
	_exit(7);
}

START_TEST(removed_wal_rebuilt_before_ack)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child_writes_then_dies();
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status), "child exited %d", WEXITSTATUS(status));
	store_t *st = fixture_open(NULL);
	size_t n = 0;
	ck_assert_int_eq(store_count(st, "/configmaps", "default", &n), 0);
	ck_assert_uint_eq(n, 100);
	ck_assert_int_eq(store_rev(st), 100);
	fixture_close(st);
}
END_TEST

/* A reader that keeps an old snapshot open stops checkpoints from letting
 * the WAL start over: past wal_max_pages, writes are refused with -EROFS,
 * and accepted again once a checkpoint copies the whole WAL. */
START_TEST(growing_wal_refuses_writes)
{
	struct store_opts o = {.wal_max_pages = 40};
	store_t *st = fixture_open(&o);
	ck_assert_int_eq(put(st, 0), 0);
	sqlite3 *reader;
	ck_assert_int_eq(sqlite3_open(db.path, &reader), SQLITE_OK);
	ck_assert_int_eq(
	    sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM objects;", NULL, NULL, NULL),
	    SQLITE_OK);
	int i, err = 0;
	for (i = 1; i < 2000 && (err = put(st, i)) == 0; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_int_eq(err, -EROFS);
	char why[256];
	ck_assert_int_eq(store_health(st, why, sizeof(why)), -EROFS);
	ck_assert_msg(strstr(why, "checkpoints are failing"), "%s", why);
	ck_assert_int_eq(put(st, i), -EROFS);
	sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(reader);
	for (int t = 0; t < 500 && (err = put(st, i)) == -EROFS; t++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(20000);
	}
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(store_health(st, NULL, 0), 0);
	fixture_close(st);
}
END_TEST

/* The database file itself removed: nothing to rebuild in place; writes
 * are refused (the acknowledged one before is not claimed durable), reads
 * go on from the open connection. */
START_TEST(removed_database_refuses_writes)
{
	store_t *st = fixture_open(NULL);
	ck_assert_int_eq(put(st, 0), 0);
	ck_assert_int_eq(unlink(db.path), 0);
	ck_assert_int_eq(put(st, 1), -EROFS); /* committed, not durable */
	ck_assert_int_eq(put(st, 2), -EROFS); /* refused */
	char why[256];
	ck_assert_int_eq(store_health(st, why, sizeof(why)), -EROFS);
	ck_assert_msg(strstr(why, "tenant.db was removed"), "%s", why);
	json_t *obj = NULL;
	ck_assert_int_eq(store_get(st, "/configmaps", "default", "c00000", &obj), 0);
	json_decref(obj);
	ck_assert_int_eq(store_get(st, "/configmaps", "default", "c00002", &obj), -ENOENT);
	fixture_close(st);
}
END_TEST

static void watch_cb(const struct store_event *ev, void *arg)
{
	(void)ev;
	(void)arg;
}

/* DIR/kubicle.db-rev says revision 50 was served; the file holds 5 (an
 * older copy put back): revisions go on past the mark and the history
 * before is compacted, so a watch from the lost range is refused (410). */
START_TEST(older_store_than_served_moves_on)
{
	store_t *st = fixture_open(NULL);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(put(st, i), 0);
	fixture_close(st);
	char mark[160];
	snprintf(mark, sizeof(mark), "%s-rev", db.path);
	FILE *f = fopen(mark, "r");
	ck_assert_ptr_nonnull(f);
	long long saved = 0;
	ck_assert_int_eq(fscanf(f, "%lld", &saved), 1);
	fclose(f);
	ck_assert_int_eq(saved, 5);
	f = fopen(mark, "w");
	fputs("50\n", f);
	fclose(f);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	st = fixture_open(NULL);
	ck_assert_int_eq(store_rev(st), 50 + 1000000);
	ck_assert_int_eq(store_compacted_rev(st), 50 + 1000000);
	store_watch_t *w = NULL;
	ck_assert_int_eq(store_watch(st, "/configmaps", NULL, 3, watch_cb, NULL, &w), -ERANGE);
	ck_assert_int_eq(put(st, 5), 0);
	ck_assert_int_eq(store_rev(st), 50 + 1000000 + 1);
	fixture_close(st);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	st = fixture_open(NULL); /* the mark caught up: no second move */
	ck_assert_int_eq(store_rev(st), 50 + 1000000 + 1);
	fixture_close(st);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("store/health");
	TCase *tc = tcase_create("health");
	tcase_add_checked_fixture(tc, setup, store_fixture_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, removed_wal_rebuilt_before_ack);
	tcase_add_test(tc, growing_wal_refuses_writes);
	tcase_add_test(tc, removed_database_refuses_writes);
	tcase_add_test(tc, older_store_than_served_moves_on);
	suite_add_tcase(s, tc);
	return s;
}
