/* SPDX-License-Identifier: Apache-2.0 */
/* The store tests' scratch database: a fresh folder under /tmp holding
 * tenant.db, and its removal with SQLite's -wal and -shm files; and their
 * fixture: that database and a loop of the test's own. */
#ifndef KB_TESTS_STORE_TMPDB_H
#define KB_TESTS_STORE_TMPDB_H
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "store/store.h"

struct tmpdb {
	char dir[64];
	char path[128];
};

static void tmpdb_make(struct tmpdb *t, const char *prefix)
{
	snprintf(t->dir, sizeof(t->dir), "/tmp/%s-XXXXXX", prefix);
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	snprintf(t->path, sizeof(t->path), "%s/tenant.db", t->dir);
}

static void tmpdb_remove(const struct tmpdb *t)
{
	static const char *const sfx[] = {"", "-wal", "-shm", "-rev"};
	char p[160];
	for (size_t i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s%s", t->path, sfx[i]);
		unlink(p);
	}
	rmdir(t->dir);
}

/* The fixture: made before each test (store_fixture_setup, with the
 * folder's prefix), removed after (store_fixture_teardown). */
static struct tmpdb db;
static uv_loop_t loop;

static inline void store_fixture_setup(const char *prefix)
{
	tmpdb_make(&db, prefix);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
}

static inline void store_fixture_teardown(void)
{
	tmpdb_remove(&db);
}

/* Opens the scratch store on the loop. */
static inline store_t *fixture_open(const struct store_opts *o)
{
	store_t *st = NULL;
	ck_assert_int_eq(store_open(&loop, db.path, o, &st), 0);
	ck_assert_ptr_nonnull(st);
	return st;
}

/* Closes the store and checks the loop has nothing left open. */
static inline void fixture_close(store_t *st)
{
	store_close(st);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}

/* Closes and opens again on a fresh loop. */
static inline store_t *fixture_reopen(store_t *st, const struct store_opts *o)
{
	fixture_close(st);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	return fixture_open(o);
}
#endif
