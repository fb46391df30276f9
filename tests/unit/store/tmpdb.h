/* SPDX-License-Identifier: Apache-2.0 */
/* The store tests' scratch database: a fresh folder under /tmp holding
 * tenant.db, and its removal with SQLite's -wal and -shm files. */
#ifndef KB_TESTS_STORE_TMPDB_H
#define KB_TESTS_STORE_TMPDB_H
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
#endif
