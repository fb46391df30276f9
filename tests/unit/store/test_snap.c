/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of store/store_snap.c: the pages after the first of a
 * paginated list (store_list with `at`) show the collection as it was at
 * `at`, the revision of the first page, as kube-apiserver's continue tokens
 * do: objects changed since show their old state, deleted ones are still
 * there, created ones are not; beyond the retained history the newest state
 * is shown.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"
#include "tests/unit/store/tmpdb.h"

static store_t *st;

static void setup(void)
{
	tmpdb_make(&db, "kb-snap");
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_eq(store_open(&loop, db.path, NULL, &st), 0);
}

static void teardown(void)
{
	store_close(st);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	tmpdb_remove(&db);
}

static json_t *mkobj(const char *ns, const char *name, const char *color)
{
	return json_pack("{s:{s:s,s:s,s:{s:s}}}", "metadata", "name", name, "namespace", ns,
			 "labels", "color", color);
}

static void create(const char *ns, const char *name, const char *color)
{
	json_t *o = mkobj(ns, name, color);
	ck_assert_int_eq(store_create(st, "/pods", ns, name, o, NULL), 0);
	json_decref(o);
}

static void update(const char *ns, const char *name, const char *color)
{
	json_t *o = mkobj(ns, name, color);
	ck_assert_int_eq(store_update(st, "/pods", ns, name, o, 0, NULL), 0);
	json_decref(o);
}

/* "name:color name:color ..." of a page. */
static char *page_text(json_t *items)
{
	static char buf[512];
	buf[0] = '\0';
	size_t i;
	json_t *it;
	json_array_foreach (items, i, it) {
		const json_t *md = json_object_get(it, "metadata");
		char one[64];
		snprintf(
		    one, sizeof(one), "%s%s:%s", i ? " " : "",
		    json_string_value(json_object_get(md, "name")),
		    json_string_value(json_object_get(json_object_get(md, "labels"), "color")));
		strcat(buf, one);
	}
	return buf;
}

/* Lists a page (limit 2) in ns after `after` as of `at`. */
static char *page(const char *ns, const char *after, int64_t at, char **next)
{
	struct store_list_req r = {.res = "/pods", .ns = ns, .after = after, .limit = 2, .at = at};
	struct store_list_result res = {0};
	ck_assert_int_eq(store_list(st, &r, &res), 0);
	char *t = page_text(res.items);
	json_decref(res.items);
	free(*next);
	*next = res.next;
	return t;
}

START_TEST(pages_keep_the_first_pages_revision)
{
	create("n", "a1", "red");
	create("n", "a2", "red");
	create("n", "a3", "red");
	create("n", "a4", "red");
	create("n", "a5", "red");
	create("n", "a6", "red");
	char *next = NULL;
	ck_assert_str_eq(page("n", NULL, 0, &next), "a1:red a2:red");
	ck_assert_ptr_nonnull(next);
	int64_t at = store_rev(st);
	/* the collection changes between pages */
	update("n", "a3", "blue");
	update("n", "a3", "green");
	ck_assert_int_eq(store_delete(st, "/pods", "n", "a4", 0, NULL, NULL), 0);
	create("n", "a2x", "new"); /* sorts inside the next page */
	create("n", "a7", "new");
	update("n", "a1", "blue"); /* already listed */

	ck_assert_str_eq(page("n", next, at, &next), "a3:red a4:red");
	ck_assert_ptr_nonnull(next);
	ck_assert_str_eq(page("n", next, at, &next), "a5:red a6:red");
	/* a7 did not exist at `at`: nothing follows */
	if (next)
		ck_assert_str_eq(page("n", next, at, &next), "");
	ck_assert_ptr_null(next);

	/* without `at` the newest state is listed */
	ck_assert_str_eq(page("n", NULL, 0, &next), "a1:blue a2:red");
	ck_assert_str_eq(page("n", next, 0, &next), "a2x:new a3:green");
	free(next);
}
END_TEST

/* Objects changed since `at` must not make a page longer than its limit,
 * and a page cut short goes on where it stopped. */
START_TEST(merged_pages_respect_the_limit)
{
	create("n", "b1", "red");
	create("n", "b2", "red");
	create("n", "b3", "red");
	create("n", "b4", "red");
	char *next = NULL;
	ck_assert_str_eq(page("n", NULL, 0, &next), "b1:red b2:red");
	int64_t at = store_rev(st);
	ck_assert_int_eq(store_delete(st, "/pods", "n", "b3", 0, NULL, NULL), 0);
	ck_assert_int_eq(store_delete(st, "/pods", "n", "b4", 0, NULL, NULL), 0);
	create("n", "b5", "new");
	ck_assert_str_eq(page("n", next, at, &next), "b3:red b4:red");
	if (next)
		ck_assert_str_eq(page("n", next, at, &next), "");
	ck_assert_ptr_null(next);
}
END_TEST

/* Cluster-wide lists order by (namespace, name); another namespace's
 * changes do not leak into a namespaced list. */
START_TEST(all_namespaces_and_filters)
{
	create("a", "x", "red");
	create("b", "x", "red");
	create("c", "x", "red");
	char *next = NULL;
	struct store_list_req r = {.res = "/pods", .limit = 1};
	struct store_list_result res = {0};
	ck_assert_int_eq(store_list(st, &r, &res), 0);
	json_decref(res.items);
	next = res.next;
	int64_t at = store_rev(st);
	update("b", "x", "blue");
	ck_assert_int_eq(store_delete(st, "/pods", "c", "x", 0, NULL, NULL), 0);
	create("bb", "x", "new");
	r.after = next;
	r.limit = 0;
	r.at = at;
	ck_assert_int_eq(store_list(st, &r, &res), 0);
	ck_assert_str_eq(page_text(res.items), "x:red x:red");
	ck_assert_int_eq(res.rev, at);
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_object_get(json_array_get(res.items, 1), "metadata"), "namespace")),
	    "c");
	json_decref(res.items);
	free(res.next);
	free(next);
	next = NULL;
	ck_assert_str_eq(page("a", NULL, at, &next), "x:red");
	free(next);
}
END_TEST

/* When the state at `at` was compacted away, the newest state is listed;
 * a token older than the compaction is -ERANGE. */
START_TEST(beyond_the_history)
{
	create("n", "c1", "red");
	create("n", "c2", "red");
	create("n", "c3", "red");
	ck_assert_int_eq(store_compact(st, store_rev(st)), 0);
	char *next = NULL;
	ck_assert_str_eq(page("n", NULL, 0, &next), "c1:red c2:red");
	int64_t at = store_rev(st);
	update("n", "c3", "blue");
	ck_assert_str_eq(page("n", next, at, &next), "c3:blue");
	ck_assert_int_eq(store_compact(st, store_rev(st)), 0);
	struct store_list_req r = {.res = "/pods", .ns = "n", .at = at};
	struct store_list_result res = {0};
	ck_assert_int_eq(store_list(st, &r, &res), -ERANGE);
	free(next);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("store_snap");
	TCase *tc = tcase_create("snap");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pages_keep_the_first_pages_revision);
	tcase_add_test(tc, merged_pages_respect_the_limit);
	tcase_add_test(tc, all_namespaces_and_filters);
	tcase_add_test(tc, beyond_the_history);
	suite_add_tcase(s, tc);
	return s;
}
