/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/auth/tokencache: a success is found again for the same
 * token and audiences only, for at most 10 s and never past the token's
 * expiry, and is dropped at once when the account, or the pod, secret or
 * node the token is bound to, is deleted or marked for deletion (kube's
 * cache would keep it up to its TTL).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/auth/tokencache.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"
#include "tests/unit/store/tmpdb.h"

static struct tmpdb db;
static uv_loop_t loop;
static store_t *st;
static struct token_cache *tc;
static const char *const api[] = {"https://kubernetes.default.svc.cluster.local"};
static char *const groups[] = {"system:serviceaccounts", "system:serviceaccounts:team"};
static const struct token_ident ident = {
    .user = "system:serviceaccount:team:robot", .uid = "u-1", .groups = groups, .ngroups = 2};

static void setup(void)
{
	tmpdb_make(&db, "kb-tokencache");
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_eq(store_open(&loop, db.path, NULL, &st), 0);
	tc = tokencache_new(st);
	ck_assert_ptr_nonnull(tc);
}

static void teardown(void)
{
	tokencache_free(tc);
	store_close(st);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	tmpdb_remove(&db);
}

static void put_obj(const char *res, const char *ns, const char *name)
{
	json_t *o = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "X", "metadata",
			      "name", name);
	if (ns)
		json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
	ck_assert_int_eq(store_create(st, res, ns ? ns : "", name, o, NULL), 0);
	json_decref(o);
}

static void settle(void)
{
	for (int i = 0; i < 5; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
}

START_TEST(hit_same_token_and_audiences_only)
{
	struct token_binding b = {.ns = "team", .account = "robot"};
	ck_assert_ptr_null(tokencache_get(tc, "a.b.c", api, 1, 1000));
	tokencache_put(tc, "a.b.c", api, 1, &ident, &b, 5000, 1000);
	const struct token_ident *id = tokencache_get(tc, "a.b.c", api, 1, 1001);
	ck_assert_ptr_nonnull(id);
	ck_assert_str_eq(id->user, ident.user);
	ck_assert_str_eq(id->uid, "u-1");
	ck_assert_int_eq(id->ngroups, 2);
	ck_assert_str_eq(id->groups[1], "system:serviceaccounts:team");
	/* another token, a prefix of it, other audiences, none */
	ck_assert_ptr_null(tokencache_get(tc, "a.b.d", api, 1, 1001));
	ck_assert_ptr_null(tokencache_get(tc, "a.b.", api, 1, 1001));
	static const char *const other[] = {"vault"};
	ck_assert_ptr_null(tokencache_get(tc, "a.b.c", other, 1, 1001));
	ck_assert_ptr_null(tokencache_get(tc, "a.b.c", NULL, 0, 1001));
}
END_TEST

START_TEST(ttl_and_expiry)
{
	struct token_binding b = {.ns = "team", .account = "robot"};
	tokencache_put(tc, "t.o.k", api, 1, &ident, &b, 5000, 1000);
	ck_assert_ptr_nonnull(tokencache_get(tc, "t.o.k", api, 1, 1009));
	ck_assert_ptr_null(tokencache_get(tc, "t.o.k", api, 1, 1010)); /* 10 s */
	ck_assert_int_eq(tokencache_size(tc), 0);
	tokencache_put(tc, "t.o.k", api, 1, &ident, &b, 1003, 1000); /* expires first */
	ck_assert_ptr_nonnull(tokencache_get(tc, "t.o.k", api, 1, 1002));
	ck_assert_ptr_null(tokencache_get(tc, "t.o.k", api, 1, 1003));
	tokencache_put(tc, "t.o.k", api, 1, &ident, &b, 1000, 1000); /* already expired */
	ck_assert_int_eq(tokencache_size(tc), 0);
}
END_TEST

/* Each binding's deletion drops the entries bound to it, and only them. */
START_TEST(deletion_of_a_binding_drops_it)
{
	time_t now = time(NULL);
	put_obj("/serviceaccounts", "team", "robot");
	put_obj("/pods", "team", "p1");
	put_obj("/secrets", "team", "s1");
	put_obj("/nodes", NULL, "n1");
	struct token_binding pod = {.ns = "team", .account = "robot", .pod = "p1", .node = "n1"};
	struct token_binding sec = {.ns = "team", .account = "robot", .secret = "s1"};
	struct token_binding plain = {.ns = "team", .account = "robot"};
	struct token_binding other = {.ns = "other", .account = "robot", .pod = "p1"};
	tokencache_put(tc, "pod.bound.tok", api, 1, &ident, &pod, now + 600, now);
	tokencache_put(tc, "sec.bound.tok", api, 1, &ident, &sec, now + 600, now);
	tokencache_put(tc, "plain.sa.tok", api, 1, &ident, &plain, now + 600, now);
	tokencache_put(tc, "other.ns.tok", api, 1, &ident, &other, now + 600, now);
	ck_assert_int_eq(tokencache_size(tc), 4);

	ck_assert_int_eq(store_delete(st, "/pods", "team", "p1", 0, NULL, NULL), 0);
	settle();
	ck_assert_ptr_null(tokencache_get(tc, "pod.bound.tok", api, 1, now));
	ck_assert_ptr_nonnull(tokencache_get(tc, "sec.bound.tok", api, 1, now));
	ck_assert_ptr_nonnull(tokencache_get(tc, "other.ns.tok", api, 1, now));

	/* a deletion mark is enough */
	json_t *s = json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "v1", "kind", "Secret",
			      "metadata", "name", "s1", "namespace", "team", "deletionTimestamp",
			      "2026-01-01T00:00:00Z");
	ck_assert_int_eq(store_update(st, "/secrets", "team", "s1", s, 0, NULL), 0);
	json_decref(s);
	settle();
	ck_assert_ptr_null(tokencache_get(tc, "sec.bound.tok", api, 1, now));
	ck_assert_ptr_nonnull(tokencache_get(tc, "plain.sa.tok", api, 1, now));

	/* the account's deletion ends every token of it in its namespace */
	tokencache_put(tc, "pod.bound.tok", api, 1, &ident, &pod, now + 600, now);
	ck_assert_int_eq(store_delete(st, "/serviceaccounts", "team", "robot", 0, NULL, NULL), 0);
	settle();
	ck_assert_ptr_null(tokencache_get(tc, "plain.sa.tok", api, 1, now));
	ck_assert_ptr_null(tokencache_get(tc, "pod.bound.tok", api, 1, now));
	ck_assert_ptr_nonnull(tokencache_get(tc, "other.ns.tok", api, 1, now));
	ck_assert_int_eq(tokencache_size(tc), 1);
}
END_TEST

START_TEST(node_deletion)
{
	time_t now = time(NULL);
	put_obj("/nodes", NULL, "n1");
	struct token_binding b = {.ns = "team", .account = "robot", .node = "n1"};
	tokencache_put(tc, "node.bound.tok", api, 1, &ident, &b, now + 600, now);
	ck_assert_int_eq(store_delete(st, "/nodes", "", "n1", 0, NULL, NULL), 0);
	settle();
	ck_assert_ptr_null(tokencache_get(tc, "node.bound.tok", api, 1, now));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("tokencache");
	TCase *tc_ = tcase_create("core");
	tcase_add_checked_fixture(tc_, setup, teardown);
	tcase_add_test(tc_, hit_same_token_and_audiences_only);
	tcase_add_test(tc_, ttl_and_expiry);
	tcase_add_test(tc_, deletion_of_a_binding_drops_it);
	tcase_add_test(tc_, node_deletion);
	suite_add_tcase(s, tc_);
	return s;
}
