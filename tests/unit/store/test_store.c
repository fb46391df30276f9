/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of store/: object semantics (create/get/update/delete with
 * resourceVersion preconditions as kube-apiserver applies them), list order
 * and pagination, transactions, watches (replay, live events, namespace
 * filter, unwatch from callbacks, 410 Gone after compaction), restarts and
 * durability across kill -9. Each test uses its own temporary directory and
 * libuv loop, and checks that closing the store leaves no handle behind.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/store.h"
#include "store/store_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"
#include "tests/unit/store/tmpdb.h"

/* ---- fixture ----------------------------------------------------------- */

static void setup(void)
{
	store_fixture_setup("kb-store");
}

static json_t *mkobj(const char *ns, const char *name, const char *label)
{
	json_t *o =
	    json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "Pod",
		      "metadata", "name", name, "namespace", ns, "spec", "nodeName", "n1");
	if (label)
		json_object_set_new(json_object_get(o, "metadata"), "labels",
				    json_pack("{s:s}", "app", label));
	return o;
}

static const char *rv_of(const json_t *o)
{
	return json_string_value(
	    json_object_get(json_object_get(o, "metadata"), "resourceVersion"));
}

static int64_t create(store_t *st, const char *res, const char *ns, const char *name)
{
	int64_t rev = 0;
	json_t *o = mkobj(ns, name, NULL);
	ck_assert_int_eq(store_create(st, res, ns, name, o, &rev), 0);
	json_decref(o);
	return rev;
}

static int64_t update(store_t *st, const char *res, const char *ns, const char *name,
		      const char *node)
{
	int64_t rev = 0;
	json_t *o = mkobj(ns, name, NULL);
	json_object_set_new(json_object_get(o, "spec"), "nodeName", json_string(node));
	ck_assert_int_eq(store_update(st, res, ns, name, o, 0, &rev), 0);
	json_decref(o);
	return rev;
}

/* ---- watch recorder ---------------------------------------------------- */

#define REC_MAX 256
struct rec_ev {
	enum store_event_type type;
	int64_t rev;
	char res[32], ns[32], name[32];
	char rv[24], prev_rv[24];
	bool has_prev;
};

struct rec {
	int n;
	struct rec_ev ev[REC_MAX];
	int unwatch_after; /* unwatch self after this many events (0: never) */
	store_watch_t *self;
	store_watch_t *victim; /* unwatched on the first event */
	store_t *st;
	bool write_on_added; /* creates "<name>-child" on ADDED of a parent */
};

static void rec_cb(const struct store_event *ev, void *arg)
{
	struct rec *r = arg;
	ck_assert_int_lt(r->n, REC_MAX);
	struct rec_ev *e = &r->ev[r->n++];
	e->type = ev->type;
	e->rev = ev->rev;
	snprintf(e->res, sizeof(e->res), "%s", ev->res);
	snprintf(e->ns, sizeof(e->ns), "%s", ev->ns);
	snprintf(e->name, sizeof(e->name), "%s", ev->name);
	snprintf(e->rv, sizeof(e->rv), "%s", rv_of(ev->obj) ? rv_of(ev->obj) : "");
	e->has_prev = ev->prev != NULL;
	if (ev->prev)
		snprintf(e->prev_rv, sizeof(e->prev_rv), "%s", rv_of(ev->prev));
	if (r->victim) {
		store_unwatch(r->victim);
		r->victim = NULL;
	}
	if (r->unwatch_after && r->n == r->unwatch_after)
		store_unwatch(r->self);
	if (r->write_on_added && ev->type == STORE_ADDED && !strstr(ev->name, "-child")) {
		char child[40];
		snprintf(child, sizeof(child), "%s-child", ev->name);
		create(r->st, ev->res, ev->ns, child);
	}
}

/* ---- objects ----------------------------------------------------------- */

/* A create whose key is taken leaves everything as it was: the stored row,
 * the count, the revision, the object given (its resourceVersion: none, or
 * the one it had) and an open transaction, which commits the rest it holds
 * (the primary key refuses the row; no lookup comes before the insert). */
START_TEST(create_taken_key_changes_nothing)
{
	store_t *st = fixture_open(NULL);
	const char *text;
	size_t len, count = 0;
	int64_t rev = 0;

	ck_assert_int_eq(create(st, "/pods", "default", "web"), 1);
	json_t *o = mkobj("default", "web", "other");
	ck_assert_int_eq(store_txn_begin(st), 0);
	ck_assert_int_eq(store_create(st, "/pods", "default", "web", o, NULL), -EEXIST);
	ck_assert_ptr_null(json_object_get(json_object_get(o, "metadata"), "resourceVersion"));
	json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string("7"));
	ck_assert_int_eq(store_create(st, "/pods", "default", "web", o, NULL), -EEXIST);
	ck_assert_str_eq(rv_of(o), "7");
	ck_assert_int_eq(store_rev(st), 1);
	ck_assert_int_eq(store_create(st, "/pods", "default", "web2", o, NULL), 0);
	ck_assert_int_eq(store_txn_commit(st), 0);
	ck_assert_int_eq(store_rev(st), 2);
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", "web", &text, &len, &rev), 0);
	ck_assert_int_eq(rev, 1);
	ck_assert_ptr_null(strstr(text, "other"));
	ck_assert_int_eq(store_count(st, "/pods", "default", &count), 0);
	ck_assert_uint_eq(count, 2);
	/* outside a transaction too */
	ck_assert_int_eq(store_create(st, "/pods", "default", "web2", o, NULL), -EEXIST);
	ck_assert_int_eq(create(st, "/pods", "default", "web3"), 3);
	json_decref(o);
	fixture_close(st);
}
END_TEST

START_TEST(create_get_update_delete)
{
	store_t *st = fixture_open(NULL);
	int64_t rev = 0;
	ck_assert_int_eq(store_rev(st), 0);

	json_t *o = mkobj("default", "web", NULL);
	ck_assert_int_eq(store_create(st, "/pods", "default", "web", o, &rev), 0);
	ck_assert_int_eq(rev, 1);
	ck_assert_str_eq(rv_of(o), "1"); /* written into the caller's object */

	json_t *got = NULL;
	ck_assert_int_eq(store_get(st, "/pods", "default", "web", &got), 0);
	ck_assert_str_eq(rv_of(got), "1");
	ck_assert_str_eq(json_string_value(json_object_get(got, "kind")), "Pod");

	/* The stored text is the compact serialization, resourceVersion included. */
	const char *text;
	size_t len;
	int64_t srev;
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", "web", &text, &len, &srev), 0);
	char *dumped = json_dumps(got, JSON_COMPACT);
	ck_assert_str_eq(text, dumped);
	ck_assert_uint_eq(len, strlen(dumped));
	ck_assert_int_eq(srev, 1);
	ck_assert_ptr_nonnull(strstr(text, "\"resourceVersion\":\"1\""));
	free(dumped);
	json_decref(got);

	/* AlreadyExists leaves the revision alone. */
	ck_assert_int_eq(store_create(st, "/pods", "default", "web", o, NULL), -EEXIST);
	ck_assert_int_eq(store_rev(st), 1);
	json_decref(o);

	/* Update with the right precondition, then a stale one (Conflict). */
	o = mkobj("default", "web", "v2");
	ck_assert_int_eq(store_update(st, "/pods", "default", "web", o, 1, &rev), 0);
	ck_assert_int_eq(rev, 2);
	ck_assert_str_eq(rv_of(o), "2");
	ck_assert_int_eq(store_update(st, "/pods", "default", "web", o, 1, NULL), -ESTALE);
	ck_assert_int_eq(store_update(st, "/pods", "default", "nope", o, 0, NULL), -ENOENT);
	ck_assert_int_eq(store_rev(st), 2);
	json_decref(o);
	ck_assert_int_eq(store_get(st, "/pods", "default", "web", &got), 0);
	ck_assert_str_eq(rv_of(got), "2");
	ck_assert_ptr_nonnull(json_object_get(json_object_get(got, "metadata"), "labels"));
	json_decref(got);

	/* Delete: stale precondition, then the real one. */
	json_t *last = NULL;
	ck_assert_int_eq(store_delete(st, "/pods", "default", "web", 1, &last, NULL), -ESTALE);
	ck_assert_ptr_null(last);
	ck_assert_int_eq(store_delete(st, "/pods", "default", "web", 2, &last, &rev), 0);
	ck_assert_int_eq(rev, 3);
	ck_assert_str_eq(rv_of(last), "3");
	ck_assert_str_eq(json_string_value(json_object_get(last, "kind")), "Pod");
	json_decref(last);
	ck_assert_int_eq(store_get(st, "/pods", "default", "web", &got), -ENOENT);
	ck_assert_int_eq(store_delete(st, "/pods", "default", "web", 0, NULL, NULL), -ENOENT);
	ck_assert_int_eq(store_rev(st), 3);

	/* The name can be created again, at a new revision. */
	ck_assert_int_eq(create(st, "/pods", "default", "web"), 4);
	fixture_close(st);
}
END_TEST

START_TEST(bad_arguments)
{
	store_t *st = fixture_open(NULL);
	json_t *arr = json_array();
	json_t *o = mkobj("default", "x", NULL);
	ck_assert_int_eq(store_create(st, "/pods", "default", "x", arr, NULL), -EINVAL);
	ck_assert_int_eq(store_create(st, "/pods", "default", "", o, NULL), -EINVAL);
	ck_assert_int_eq(store_create(st, "/pods", NULL, "x", o, NULL), -EINVAL);
	json_object_set_new(o, "metadata", json_string("bad"));
	ck_assert_int_eq(store_create(st, "/pods", "default", "x", o, NULL), -EINVAL);
	ck_assert_int_eq(store_rev(st), 0);
	json_decref(arr);
	json_decref(o);
	/* An object without metadata gets one holding its resourceVersion. */
	o = json_object();
	ck_assert_int_eq(store_create(st, "/namespaces", "", "kube-system", o, NULL), 0);
	ck_assert_str_eq(rv_of(o), "1");
	json_decref(o);
	fixture_close(st);
}
END_TEST

START_TEST(revision_across_resources)
{
	store_t *st = fixture_open(NULL);
	ck_assert_int_eq(create(st, "/pods", "default", "a"), 1);
	ck_assert_int_eq(create(st, "/configmaps", "default", "a"), 2);
	ck_assert_int_eq(create(st, "apps/deployments", "kube-system", "a"), 3);
	ck_assert_int_eq(create(st, "/namespaces", "", "default"), 4);
	ck_assert_int_eq(update(st, "/pods", "default", "a", "n2"), 5);
	ck_assert_int_eq(store_delete(st, "/configmaps", "default", "a", 0, NULL, NULL), 0);
	ck_assert_int_eq(store_rev(st), 6);
	/* Same name, different resources: distinct objects. */
	json_t *got;
	ck_assert_int_eq(store_get(st, "apps/deployments", "kube-system", "a", &got), 0);
	ck_assert_str_eq(rv_of(got), "3");
	json_decref(got);
	ck_assert_int_eq(store_get(st, "apps/deployments", "default", "a", &got), -ENOENT);
	fixture_close(st);
}
END_TEST

/* ---- list and count ---------------------------------------------------- */

static void check_names(json_t *items, const char *const *want, size_t n)
{
	ck_assert_uint_eq(json_array_size(items), n);
	for (size_t i = 0; i < n; i++) {
		json_t *md = json_object_get(json_array_get(items, i), "metadata");
		char got[80];
		snprintf(got, sizeof(got), "%s/%s",
			 json_string_value(json_object_get(md, "namespace")),
			 json_string_value(json_object_get(md, "name")));
		ck_assert_str_eq(got, want[i]);
	}
}

START_TEST(list_order_and_namespace)
{
	store_t *st = fixture_open(NULL);
	create(st, "/pods", "b", "z");
	create(st, "/pods", "a", "y");
	create(st, "/pods", "b", "a");
	create(st, "/pods", "c", "m");
	create(st, "/pods", "a", "b");
	create(st, "/pods", "ab", "a");
	create(st, "/configmaps", "a", "a");

	struct store_list_req req = {.res = "/pods"};
	struct store_list_result res;
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	const char *all[] = {"a/b", "a/y", "ab/a", "b/a", "b/z", "c/m"};
	check_names(res.items, all, 6);
	ck_assert_ptr_null(res.next);
	ck_assert_int_eq(res.rev, 7);
	json_decref(res.items);

	req.ns = "a";
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	const char *in_a[] = {"a/b", "a/y"};
	check_names(res.items, in_a, 2);
	json_decref(res.items);

	req.ns = "nowhere";
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	ck_assert_uint_eq(json_array_size(res.items), 0);
	ck_assert_ptr_null(res.next);
	json_decref(res.items);

	size_t count = 0;
	ck_assert_int_eq(store_count(st, "/pods", NULL, &count), 0);
	ck_assert_uint_eq(count, 6);
	ck_assert_int_eq(store_count(st, "/pods", "b", &count), 0);
	ck_assert_uint_eq(count, 2);
	ck_assert_int_eq(store_count(st, "/configmaps", NULL, &count), 0);
	ck_assert_uint_eq(count, 1);
	ck_assert_int_eq(store_count(st, "/secrets", NULL, &count), 0);
	ck_assert_uint_eq(count, 0);
	fixture_close(st);
}
END_TEST

static bool odd_filter(const json_t *obj, void *arg)
{
	int *calls = arg;
	(*calls)++;
	const json_t *l = json_object_get(json_object_get(obj, "metadata"), "labels");
	return strcmp(json_string_value(json_object_get(l, "app")), "odd") == 0;
}

/* Pages through with limit + continue; every matching object exactly once. */
static void paginate(store_t *st, const char *ns, size_t limit, int total, int nns)
{
	struct store_list_req req = {.res = "/pods", .ns = ns, .limit = limit};
	int calls = 0, seen[200] = {0}, got = 0, pages = 0;
	char *after = NULL;
	req.filter = odd_filter;
	req.filter_arg = &calls;
	do {
		struct store_list_result res;
		req.after = after;
		ck_assert_int_eq(store_list(st, &req, &res), 0);
		ck_assert_uint_le(json_array_size(res.items), limit);
		for (size_t i = 0; i < json_array_size(res.items); i++) {
			json_t *md = json_object_get(json_array_get(res.items, i), "metadata");
			int idx = atoi(json_string_value(json_object_get(md, "name")) + 1);
			ck_assert_int_eq(idx % 2, 1);
			if (ns)
				ck_assert_int_eq(idx % nns, ns[2] - '0');
			seen[idx]++;
			got++;
		}
		if (res.next)
			ck_assert_uint_eq(json_array_size(res.items), limit);
		free(after);
		after = res.next;
		json_decref(res.items);
		ck_assert_int_lt(++pages, 100);
	} while (after);
	int want = 0;
	for (int i = 0; i < total; i++) {
		bool in = i % 2 == 1 && (!ns || i % nns == ns[2] - '0');
		ck_assert_int_eq(seen[i], in ? 1 : 0);
		want += in;
	}
	ck_assert_int_eq(got, want);
}

START_TEST(pagination_with_filter)
{
	store_t *st = fixture_open(NULL);
	const int total = 120, nns = 3;
	for (int i = 0; i < total; i++) {
		char ns[8], name[8];
		snprintf(ns, sizeof(ns), "ns%d", i % nns);
		snprintf(name, sizeof(name), "p%03d", i);
		json_t *o = mkobj(ns, name, i % 2 ? "odd" : "even");
		ck_assert_int_eq(store_create(st, "/pods", ns, name, o, NULL), 0);
		json_decref(o);
	}
	paginate(st, NULL, 7, total, nns);
	paginate(st, NULL, 1, total, nns);
	paginate(st, NULL, 60, total, nns);
	paginate(st, "ns1", 5, total, nns);
	paginate(st, "ns2", 100, total, nns);

	/* A continue key from another namespace's page and garbage keys. */
	struct store_list_req req = {.res = "/pods", .limit = 2};
	struct store_list_result res;
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	ck_assert_ptr_nonnull(res.next);
	json_decref(res.items);
	req.after = res.next;
	req.ns = "ns0";
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	ck_assert_uint_eq(json_array_size(res.items), 2);
	json_decref(res.items);
	free(res.next);
	free((char *)req.after);
	req.after = "!!not base64!!";
	ck_assert_int_eq(store_list(st, &req, &res), -EINVAL);
	fixture_close(st);
}
END_TEST

static size_t count_of(store_t *st, const char *res, const char *ns)
{
	size_t n = 99;
	ck_assert_int_eq(store_count(st, res, ns, &n), 0);
	return n;
}

/* A count inside an open transaction includes its writes (quota admission
 * skips its list on a count of 0: a quota made earlier in the same group
 * commit must count), and a rollback takes them back. */
START_TEST(count_sees_the_open_transaction)
{
	store_t *st = fixture_open(NULL);
	ck_assert_uint_eq(count_of(st, "/resourcequotas", "team"), 0);
	ck_assert_int_eq(store_txn_begin(st), 0);
	create(st, "/resourcequotas", "team", "q");
	ck_assert_uint_eq(count_of(st, "/resourcequotas", "team"), 1);
	ck_assert_uint_eq(count_of(st, "/resourcequotas", "other"), 0);
	store_txn_rollback(st);
	ck_assert_uint_eq(count_of(st, "/resourcequotas", "team"), 0);
	ck_assert_int_eq(store_txn_begin(st), 0);
	create(st, "/resourcequotas", "team", "q");
	ck_assert_int_eq(store_txn_commit(st), 0);
	ck_assert_uint_eq(count_of(st, "/resourcequotas", "team"), 1);
	fixture_close(st);
}
END_TEST

static void count_each_cb(const char *res, int64_t count, void *arg)
{
	char *out = arg;
	size_t n = strlen(out);
	snprintf(out + n, 128 - n, "%s=%" PRId64 " ", res, count);
}

/* The counts the store keeps (store_count.c) follow creates and deletes,
 * give a first page's remainingItemCount, come back right after a
 * rollback, and are read from the objects when first asked for. */
START_TEST(kept_counts)
{
	store_t *st = fixture_open(NULL);
	create(st, "/pods", "a", "x");
	create(st, "/pods", "a", "y");
	create(st, "/pods", "b", "z");
	create(st, "/configmaps", "a", "c");
	ck_assert_uint_eq(count_of(st, "/pods", NULL), 3);
	ck_assert_uint_eq(count_of(st, "/pods", "a"), 2);
	ck_assert_int_eq(store_delete(st, "/pods", "a", "x", 0, NULL, NULL), 0);
	ck_assert_uint_eq(count_of(st, "/pods", "a"), 1);
	ck_assert_int_eq(store_delete(st, "/pods", "b", "z", 0, NULL, NULL), 0);
	ck_assert_uint_eq(count_of(st, "/pods", "b"), 0);
	ck_assert_uint_eq(count_of(st, "/pods", NULL), 1);
	create(st, "/pods", "b", "w");
	create(st, "/pods", "c", "v");
	struct store_list_req req = {.res = "/pods", .limit = 1, .want_remaining = true};
	struct store_list_result res;
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	ck_assert_int_eq(res.remaining, 2);
	json_decref(res.items);
	free(res.next);
	/* a taken key counts nothing; rolled-back writes are uncounted */
	json_t *o = json_object();
	ck_assert_int_eq(store_create(st, "/pods", "b", "w", o, NULL), -EEXIST);
	json_decref(o);
	ck_assert_uint_eq(count_of(st, "/pods", "b"), 1);
	ck_assert_int_eq(store_txn_begin(st), 0);
	create(st, "/pods", "b", "u");
	ck_assert_int_eq(store_delete(st, "/pods", "c", "v", 0, NULL, NULL), 0);
	ck_assert_uint_eq(count_of(st, "/pods", "b"), 2);
	ck_assert_uint_eq(count_of(st, "/pods", "c"), 0);
	store_txn_rollback(st);
	ck_assert_uint_eq(count_of(st, "/pods", "b"), 1);
	ck_assert_uint_eq(count_of(st, "/pods", "c"), 1);
	fixture_close(st);
	/* rows written while the store is closed: read from objects at the
	 * first question */
	sqlite3 *raw;
	ck_assert_int_eq(sqlite3_open(db.path, &raw), SQLITE_OK);
	ck_assert_int_eq(
	    sqlite3_exec(raw,
			 "INSERT INTO objects"
			 " SELECT res, 'd', name, rev FROM objects WHERE res = '/pods'",
			 NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(raw);
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	st = fixture_open(NULL);
	ck_assert_uint_eq(count_of(st, "/pods", NULL), 6);
	ck_assert_uint_eq(count_of(st, "/pods", "d"), 3);
	ck_assert_uint_eq(count_of(st, "/configmaps", NULL), 1);
	create(st, "/pods", "d", "new");
	ck_assert_uint_eq(count_of(st, "/pods", "d"), 4);
	char each[128] = "";
	ck_assert_int_eq(store_count_each(st, count_each_cb, each), 0);
	ck_assert_str_eq(each, "/configmaps=1 /pods=7 ");
	/* the last of a namespace and of a resource */
	ck_assert_int_eq(store_delete(st, "/configmaps", "a", "c", 0, NULL, NULL), 0);
	ck_assert_int_eq(store_delete(st, "/pods", "a", "y", 0, NULL, NULL), 0);
	ck_assert_uint_eq(count_of(st, "/pods", "a"), 0);
	ck_assert_uint_eq(count_of(st, "/configmaps", NULL), 0);
	each[0] = '\0';
	ck_assert_int_eq(store_count_each(st, count_each_cb, each), 0);
	ck_assert_str_eq(each, "/pods=6 ");
	fixture_close(st);
}
END_TEST

static int collect_text(const char *text, size_t len, void *arg)
{
	json_t *names = arg;
	json_t *o = json_loadb(text, len, 0, NULL);
	ck_assert_ptr_nonnull(o);
	json_t *md = json_object_get(o, "metadata");
	char key[64];
	snprintf(key, sizeof(key), "%s/%s", json_string_value(json_object_get(md, "namespace")),
		 json_string_value(json_object_get(md, "name")));
	json_array_append_new(names, json_string(key));
	json_decref(o);
	return 0;
}

/* remainingItemCount's count (what follows a page, in the namespace or
 * everywhere) and the whole list as stored texts. */
START_TEST(list_remaining_and_text)
{
	store_t *st = fixture_open(NULL);
	create(st, "/pods", "b", "z");
	create(st, "/pods", "a", "y");
	create(st, "/pods", "b", "a");
	create(st, "/pods", "c", "m");
	create(st, "/pods", "a", "b");
	create(st, "/configmaps", "a", "a");
	struct store_list_req req = {.res = "/pods", .limit = 2, .want_remaining = true};
	struct store_list_result res;
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	ck_assert_int_eq(res.remaining, 3); /* b/a b/z c/m */
	req.after = res.next;
	json_decref(res.items);
	struct store_list_result res2;
	ck_assert_int_eq(store_list(st, &req, &res2), 0);
	ck_assert_int_eq(res2.remaining, 1);
	free((char *)req.after);
	json_decref(res2.items);
	req.after = res2.next;
	req.limit = 5;
	ck_assert_int_eq(store_list(st, &req, &res), 0);
	ck_assert_ptr_null(res.next); /* the last page: not counted */
	ck_assert_int_eq(res.remaining, -1);
	json_decref(res.items);
	free((char *)req.after);
	struct store_list_req in_b = {
	    .res = "/pods", .ns = "b", .limit = 1, .want_remaining = true};
	ck_assert_int_eq(store_list(st, &in_b, &res), 0);
	ck_assert_int_eq(res.remaining, 1);
	json_decref(res.items);
	free(res.next);

	json_t *names = json_array();
	struct store_list_req all = {.res = "/pods"};
	int64_t rev = 0;
	ck_assert_int_eq(store_list_text(st, &all, collect_text, names, &rev), 0);
	const char *want[] = {"a/b", "a/y", "b/a", "b/z", "c/m"};
	ck_assert_uint_eq(json_array_size(names), 5);
	for (size_t i = 0; i < 5; i++)
		ck_assert_str_eq(json_string_value(json_array_get(names, i)), want[i]);
	ck_assert_int_eq(rev, 6);
	json_array_clear(names);
	all.ns = "a";
	ck_assert_int_eq(store_list_text(st, &all, collect_text, names, &rev), 0);
	ck_assert_uint_eq(json_array_size(names), 2);

	/* pages of texts: the same pages, keys and counts as store_list */
	struct store_list_req pg = {.res = "/pods", .limit = 2, .want_remaining = true};
	struct store_list_result tp;
	json_array_clear(names);
	ck_assert_int_eq(store_list_text_page(st, &pg, collect_text, names, &tp), 0);
	ck_assert_ptr_null(tp.items);
	ck_assert_uint_eq(json_array_size(names), 2);
	ck_assert_str_eq(json_string_value(json_array_get(names, 1)), "a/y");
	ck_assert_int_eq(tp.remaining, 3);
	ck_assert_int_eq(tp.rev, 6);
	ck_assert_ptr_nonnull(tp.next);
	ck_assert_int_eq(store_list(st, &pg, &res), 0);
	ck_assert_str_eq(res.next, tp.next);
	json_decref(res.items);
	free(res.next);
	pg.after = tp.next;
	pg.limit = 5;
	pg.at = 6;
	json_array_clear(names);
	ck_assert_int_eq(store_list_text_page(st, &pg, collect_text, names, &tp), 0);
	ck_assert_uint_eq(json_array_size(names), 3);
	ck_assert_str_eq(json_string_value(json_array_get(names, 0)), "b/a");
	ck_assert_ptr_null(tp.next);
	ck_assert_int_eq(tp.remaining, -1);
	pg.at = 5; /* a page of an earlier revision: the tree path's */
	ck_assert_int_eq(store_list_text_page(st, &pg, collect_text, names, &tp), -EAGAIN);
	free((char *)pg.after);
	json_decref(names);
	fixture_close(st);
}
END_TEST

/* ---- transactions ------------------------------------------------------ */

/* store_get_raw answers from its cache of read objects (store_cache.c):
 * always what SQLite holds, after writes, deletes and rollbacks, and for
 * the revision too. */
START_TEST(read_cache_follows_writes)
{
	store_t *st = fixture_open(NULL);
	const char *text;
	size_t len;
	int64_t rev = 0;
	create(st, "/pods", "default", "a");
	for (int i = 0; i < 2; i++) { /* the second read is the cache's */
		ck_assert_int_eq(store_get_raw(st, "/pods", "default", "a", &text, &len, &rev), 0);
		ck_assert_int_eq(rev, 1);
		ck_assert_ptr_nonnull(strstr(text, "\"n1\""));
	}
	update(st, "/pods", "default", "a", "n2");
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", "a", &text, &len, &rev), 0);
	ck_assert_int_eq(rev, 2);
	ck_assert_ptr_nonnull(strstr(text, "\"n2\""));
	ck_assert_uint_eq(len, strlen(text));

	/* read inside a transaction, then rolled back: the committed text again */
	ck_assert_int_eq(store_txn_begin(st), 0);
	update(st, "/pods", "default", "a", "n3");
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", "a", &text, &len, &rev), 0);
	ck_assert_ptr_nonnull(strstr(text, "\"n3\""));
	ck_assert_int_eq(store_txn_begin(st), 0);
	update(st, "/pods", "default", "a", "n4");
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", "a", &text, &len, &rev), 0);
	ck_assert_ptr_nonnull(strstr(text, "\"n4\""));
	store_txn_rollback(st); /* the inner level only */
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", "a", &text, &len, &rev), 0);
	ck_assert_ptr_nonnull(strstr(text, "\"n3\""));
	store_txn_rollback(st);
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", "a", &text, &len, &rev), 0);
	ck_assert_int_eq(rev, 2);
	ck_assert_ptr_nonnull(strstr(text, "\"n2\""));

	ck_assert_int_eq(store_delete(st, "/pods", "default", "a", 0, NULL, NULL), 0);
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", "a", &text, &len, &rev), -ENOENT);
	/* a namesake in another namespace is another object */
	create(st, "/pods", "other", "a");
	ck_assert_int_eq(store_get_raw(st, "/pods", "default", "a", &text, &len, &rev), -ENOENT);
	ck_assert_int_eq(store_get_raw(st, "/pods", "other", "a", &text, &len, &rev), 0);
	fixture_close(st);
}
END_TEST

START_TEST(txn_commit_and_rollback)
{
	store_t *st = fixture_open(NULL);
	struct rec r = {0};
	store_watch_t *w;
	create(st, "/pods", "default", "keep");
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 1, rec_cb, &r, &w), 0);

	/* Commit: events only after the outermost commit. */
	ck_assert_int_eq(store_txn_begin(st), 0);
	ck_assert_int_eq(create(st, "/pods", "default", "t1"), 2);
	ck_assert_int_eq(store_txn_begin(st), 0);
	ck_assert_int_eq(create(st, "/pods", "default", "t2"), 3);
	ck_assert_int_eq(store_txn_commit(st), 0);
	ck_assert_int_eq(r.n, 0);
	ck_assert_int_eq(store_txn_commit(st), 0);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.ev[0].rev, 2);
	ck_assert_int_eq(r.ev[1].rev, 3);

	/* Rollback: no object, no event, same revision, no gap after. */
	ck_assert_int_eq(store_txn_begin(st), 0);
	create(st, "/pods", "default", "gone");
	update(st, "/pods", "default", "keep", "other");
	ck_assert_int_eq(store_delete(st, "/pods", "default", "t1", 0, NULL, NULL), 0);
	ck_assert_int_eq(store_rev(st), 6);
	store_txn_rollback(st);
	ck_assert_int_eq(store_rev(st), 3);
	ck_assert_int_eq(r.n, 2);
	json_t *got;
	ck_assert_int_eq(store_get(st, "/pods", "default", "gone", &got), -ENOENT);
	ck_assert_int_eq(store_get(st, "/pods", "default", "t1", &got), 0);
	json_decref(got);
	ck_assert_int_eq(store_get(st, "/pods", "default", "keep", &got), 0);
	ck_assert_str_eq(rv_of(got), "1");
	json_decref(got);
	ck_assert_int_eq(create(st, "/pods", "default", "after"), 4);
	ck_assert_int_eq(r.n, 3);

	/* Nested rollback undoes only the inner level. */
	ck_assert_int_eq(store_txn_begin(st), 0);
	create(st, "/pods", "default", "outer");
	ck_assert_int_eq(store_txn_begin(st), 0);
	create(st, "/pods", "default", "inner");
	store_txn_rollback(st);
	ck_assert_int_eq(store_rev(st), 5);
	ck_assert_int_eq(store_txn_commit(st), 0);
	ck_assert_int_eq(store_get(st, "/pods", "default", "inner", &got), -ENOENT);
	ck_assert_int_eq(store_get(st, "/pods", "default", "outer", &got), 0);
	json_decref(got);
	ck_assert_int_eq(r.n, 4);
	ck_assert_str_eq(r.ev[3].name, "outer");
	ck_assert_int_eq(store_txn_commit(st), -EINVAL); /* nothing open */

	/* History holds no trace of the rolled-back writes. */
	struct rec h = {0};
	store_watch_t *hw;
	ck_assert_int_eq(store_watch(st, NULL, NULL, 0, rec_cb, &h, &hw), 0);
	ck_assert_int_eq(h.n, 5);
	for (int i = 0; i < h.n; i++)
		ck_assert_int_eq(h.ev[i].rev, i + 1);
	ck_assert_str_eq(h.ev[3].name, "after");
	fixture_close(st);
}
END_TEST

START_TEST(watch_started_inside_txn)
{
	store_t *st = fixture_open(NULL);
	create(st, "/pods", "default", "before"); /* 1 */
	struct rec r = {0};
	store_watch_t *w;
	ck_assert_int_eq(store_txn_begin(st), 0);
	create(st, "/pods", "default", "in-txn"); /* 2, not committed yet */
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, rec_cb, &r, &w), 0);
	ck_assert_int_eq(r.n, 1);                   /* only committed history */
	create(st, "/pods", "default", "in-txn-2"); /* 3 */
	ck_assert_int_eq(store_txn_commit(st), 0);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.ev[1].rev, 2);
	ck_assert_int_eq(r.ev[2].rev, 3);

	ck_assert_int_eq(store_txn_begin(st), 0);
	create(st, "/pods", "default", "dropped");
	struct rec r2 = {0};
	store_watch_t *w2;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 3, rec_cb, &r2, &w2), 0);
	store_txn_rollback(st);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r2.n, 0);
	ck_assert_int_eq(create(st, "/pods", "default", "next"), 4);
	ck_assert_int_eq(r2.n, 1);
	ck_assert_str_eq(r2.ev[0].name, "next");
	fixture_close(st);
}
END_TEST

/* ---- watches ----------------------------------------------------------- */

START_TEST(watch_replay_then_live)
{
	store_t *st = fixture_open(NULL);
	create(st, "/pods", "default", "a");                                           /* 1 */
	create(st, "/configmaps", "default", "cm");                                    /* 2 */
	update(st, "/pods", "default", "a", "n2");                                     /* 3 */
	create(st, "/pods", "default", "b");                                           /* 4 */
	ck_assert_int_eq(store_delete(st, "/pods", "default", "b", 0, NULL, NULL), 0); /* 5 */

	struct rec r = {0};
	store_watch_t *w;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 1, rec_cb, &r, &w), 0);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.ev[0].type, STORE_MODIFIED);
	ck_assert_int_eq(r.ev[0].rev, 3);
	ck_assert_str_eq(r.ev[0].rv, "3");
	ck_assert(!r.ev[0].has_prev);
	ck_assert_int_eq(r.ev[1].type, STORE_ADDED);
	ck_assert_int_eq(r.ev[2].type, STORE_DELETED);
	ck_assert_str_eq(r.ev[2].rv, "5");
	ck_assert_int_eq(store_watch_count(st), 1);

	/* Watching from the current revision replays nothing. */
	struct rec now = {0};
	store_watch_t *w2;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, store_rev(st), rec_cb, &now, &w2), 0);
	ck_assert_int_eq(now.n, 0);

	create(st, "/pods", "default", "c"); /* 6 */
	ck_assert_int_eq(r.n, 4);
	ck_assert_int_eq(r.ev[3].rev, 6);
	ck_assert_int_eq(now.n, 1);
	store_unwatch(w);
	store_unwatch(w2);
	ck_assert_int_eq(store_watch_count(st), 0);
	create(st, "/pods", "default", "d");
	ck_assert_int_eq(r.n, 4);
	fixture_close(st);
}
END_TEST

START_TEST(watch_live_with_prev)
{
	store_t *st = fixture_open(NULL);
	struct rec r = {0};
	store_watch_t *w;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, rec_cb, &r, &w), 0);
	create(st, "/pods", "default", "a");
	update(st, "/pods", "default", "a", "n2");
	json_t *last;
	ck_assert_int_eq(store_delete(st, "/pods", "default", "a", 2, &last, NULL), 0);
	json_decref(last);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.ev[0].type, STORE_ADDED);
	ck_assert(!r.ev[0].has_prev);
	ck_assert_str_eq(r.ev[0].rv, "1");
	ck_assert_int_eq(r.ev[1].type, STORE_MODIFIED);
	ck_assert(r.ev[1].has_prev);
	ck_assert_str_eq(r.ev[1].rv, "2");
	ck_assert_str_eq(r.ev[1].prev_rv, "1");
	ck_assert_int_eq(r.ev[2].type, STORE_DELETED);
	ck_assert(r.ev[2].has_prev);
	ck_assert_str_eq(r.ev[2].rv, "3");
	ck_assert_str_eq(r.ev[2].prev_rv, "2");
	ck_assert_str_eq(r.ev[2].res, "/pods");
	ck_assert_str_eq(r.ev[2].ns, "default");
	ck_assert_str_eq(r.ev[2].name, "a");
	fixture_close(st);
}
END_TEST

START_TEST(watch_namespace_and_all_resources)
{
	store_t *st = fixture_open(NULL);
	struct rec one = {0}, all = {0}, cms = {0};
	store_watch_t *w1, *w2, *w3;
	ck_assert_int_eq(store_watch(st, "/pods", "team-a", 0, rec_cb, &one, &w1), 0);
	ck_assert_int_eq(store_watch(st, NULL, NULL, 0, rec_cb, &all, &w2), 0);
	ck_assert_int_eq(store_watch(st, "/configmaps", NULL, 0, rec_cb, &cms, &w3), 0);
	create(st, "/pods", "team-a", "x");
	create(st, "/pods", "team-b", "x");
	create(st, "/configmaps", "team-a", "x");
	create(st, "/namespaces", "", "team-a");
	ck_assert_int_eq(one.n, 1);
	ck_assert_str_eq(one.ev[0].ns, "team-a");
	ck_assert_int_eq(all.n, 4);
	ck_assert_int_eq(cms.n, 1);
	ck_assert_str_eq(cms.ev[0].res, "/configmaps");

	/* Replay honours the same filters. */
	struct rec rone = {0}, rall = {0};
	store_watch_t *r1, *r2;
	ck_assert_int_eq(store_watch(st, "/pods", "team-b", 0, rec_cb, &rone, &r1), 0);
	ck_assert_int_eq(rone.n, 1);
	ck_assert_int_eq(rone.ev[0].rev, 2);
	ck_assert_int_eq(store_watch(st, NULL, "team-a", 0, rec_cb, &rall, &r2), 0);
	ck_assert_int_eq(rall.n, 2);
	ck_assert_int_eq(rall.ev[1].rev, 3);
	fixture_close(st);
}
END_TEST

START_TEST(many_watches_one_event)
{
	store_t *st = fixture_open(NULL);
	static struct rec recs[1000];
	memset(recs, 0, sizeof(recs));
	for (int i = 0; i < 1000; i++) {
		char ns[16];
		snprintf(ns, sizeof(ns), "ns%d", i);
		store_watch_t *w;
		ck_assert_int_eq(store_watch(st, "/pods", ns, 0, rec_cb, &recs[i], &w), 0);
	}
	ck_assert_int_eq(store_watch_count(st), 1000);
	create(st, "/pods", "ns7", "a");
	create(st, "/configmaps", "ns7", "a");
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(recs[i].n, i == 7 ? 1 : 0);
	fixture_close(st); /* frees every watch without callbacks */
}
END_TEST

START_TEST(unwatch_inside_callback)
{
	store_t *st = fixture_open(NULL);
	struct rec a = {.unwatch_after = 1}, b = {0}, c = {0}, d = {0};
	store_watch_t *wb, *wc;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, rec_cb, &a, &a.self), 0);
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, rec_cb, &b, &wb), 0);
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, rec_cb, &c, &wc), 0);
	/* d, on every resource, unwatches c while the same event fans out. */
	d.victim = wc;
	store_watch_t *wd;
	ck_assert_int_eq(store_watch(st, NULL, NULL, 0, rec_cb, &d, &wd), 0);
	create(st, "/pods", "default", "x");
	create(st, "/pods", "default", "y");
	ck_assert_int_eq(a.n, 1);
	ck_assert_int_eq(b.n, 2);
	ck_assert_int_le(c.n, 1); /* c may come before or after d in the fan-out */
	ck_assert_int_eq(d.n, 2);
	ck_assert_int_eq(store_watch_count(st), 2);

	/* Unwatch during replay stops the replay. */
	for (int i = 0; i < 150; i++) {
		char name[16];
		snprintf(name, sizeof(name), "r%d", i);
		create(st, "/pods", "default", name);
	}
	struct rec e = {.unwatch_after = 70};
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, rec_cb, &e, &e.self), 0);
	ck_assert_int_eq(e.n, 70);
	ck_assert_int_eq(store_watch_count(st), 2);
	create(st, "/pods", "default", "z");
	ck_assert_int_eq(e.n, 70);
	fixture_close(st);
}
END_TEST

START_TEST(callbacks_that_write_keep_order)
{
	store_t *st = fixture_open(NULL);
	struct rec writer = {.write_on_added = true}, obs = {0}, late = {0};
	writer.st = st;
	store_watch_t *w1, *w2, *w3;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, rec_cb, &writer, &w1), 0);
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, rec_cb, &obs, &w2), 0);
	create(st, "/pods", "default", "a");
	create(st, "/pods", "default", "b");
	ck_assert_int_eq(store_rev(st), 4);
	ck_assert_int_eq(obs.n, 4);
	ck_assert_int_eq(writer.n, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(obs.ev[i].rev, i + 1);
		ck_assert_int_eq(writer.ev[i].rev, i + 1);
	}
	/* A replaying watch that writes sees its own writes once, in order. */
	late.write_on_added = true;
	late.st = st;
	create(st, "/configmaps", "default", "c"); /* 5, not a pod */
	ck_assert_int_eq(store_watch(st, "/configmaps", NULL, 0, rec_cb, &late, &w3), 0);
	ck_assert_int_eq(late.n, 2);
	ck_assert_int_eq(late.ev[0].rev, 5);
	ck_assert_int_eq(late.ev[1].rev, 6);
	ck_assert_str_eq(late.ev[1].name, "c-child");
	fixture_close(st);
}
END_TEST

/* ---- compaction -------------------------------------------------------- */

START_TEST(compaction_gone)
{
	store_t *st = fixture_open(NULL);
	for (int i = 0; i < 10; i++) {
		char name[8];
		snprintf(name, sizeof(name), "p%d", i);
		create(st, "/pods", "default", name);
	}
	ck_assert_int_eq(store_compacted_rev(st), 0);
	ck_assert_int_eq(store_compact(st, 5), 0);
	ck_assert_int_eq(store_compacted_rev(st), 5);
	struct rec r = {0};
	store_watch_t *w;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 4, rec_cb, &r, &w), -ERANGE);
	ck_assert_int_eq(r.n, 0);
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 5, rec_cb, &r, &w), 0);
	ck_assert_int_eq(r.n, 5);
	ck_assert_int_eq(r.ev[0].rev, 6);
	/* Objects are untouched by compaction. */
	size_t count;
	ck_assert_int_eq(store_count(st, "/pods", NULL, &count), 0);
	ck_assert_uint_eq(count, 10);
	/* Compacting everything keeps the revision across a restart. */
	ck_assert_int_eq(store_compact(st, 100), 0);
	ck_assert_int_eq(store_compacted_rev(st), 10);
	st = fixture_reopen(st, NULL);
	ck_assert_int_eq(store_rev(st), 10);
	ck_assert_int_eq(store_compacted_rev(st), 10);
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 9, rec_cb, &r, &w), -ERANGE);
	ck_assert_int_eq(create(st, "/pods", "default", "new"), 11);
	fixture_close(st);
}
END_TEST

struct wait_compact {
	uv_timer_t t;
	store_t *st;
	int64_t want;
	int ticks;
};

/* Polls until the store's own timer has compacted up to `want` (or ~10 s). */
static void wait_compact_cb(uv_timer_t *t)
{
	struct wait_compact *wc = (struct wait_compact *)t;
	if (store_compacted_rev(wc->st) >= wc->want || ++wc->ticks > 1000)
		uv_close((uv_handle_t *)t, NULL);
}

START_TEST(compaction_timer)
{
	/* More than one batch is due: the timer catches up in several runs. */
	struct store_opts o = {.history_keep = 3, .compact_interval_ms = 10};
	store_t *st = fixture_open(&o);
	ck_assert_int_eq(store_txn_begin(st), 0);
	for (int i = 0; i < 2505; i++) {
		char name[8];
		snprintf(name, sizeof(name), "p%d", i);
		create(st, "/pods", "default", name);
	}
	ck_assert_int_eq(store_txn_commit(st), 0);
	/* The store's timer is unref'ed: alone, it does not keep the loop up. */
	ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
	ck_assert_int_eq(store_compacted_rev(st), 0);
	struct wait_compact wc = {.st = st, .want = 2502};
	uv_timer_init(&loop, &wc.t);
	uv_timer_start(&wc.t, wait_compact_cb, 10, 10);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(store_compacted_rev(st), 2502);
	struct rec r = {0};
	store_watch_t *w;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 2501, rec_cb, &r, &w), -ERANGE);
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 2502, rec_cb, &r, &w), 0);
	ck_assert_int_eq(r.n, 3);
	fixture_close(st);
}
END_TEST

/* ---- restarts, key/value, durability ----------------------------------- */

START_TEST(reopen_keeps_everything)
{
	store_t *st = fixture_open(NULL);
	create(st, "/pods", "default", "a");
	create(st, "/pods", "default", "b");
	update(st, "/pods", "default", "a", "n9");
	ck_assert_int_eq(store_delete(st, "/pods", "default", "b", 0, NULL, NULL), 0);
	ck_assert_int_eq(store_kv_set(st, "cluster-uid", "1234"), 0);
	st = fixture_reopen(st, NULL);
	ck_assert_int_eq(store_rev(st), 4);
	json_t *got;
	ck_assert_int_eq(store_get(st, "/pods", "default", "a", &got), 0);
	ck_assert_str_eq(rv_of(got), "3");
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(got, "spec"), "nodeName")), "n9");
	json_decref(got);
	ck_assert_int_eq(store_get(st, "/pods", "default", "b", &got), -ENOENT);
	struct rec r = {0};
	store_watch_t *w;
	ck_assert_int_eq(store_watch(st, NULL, NULL, 0, rec_cb, &r, &w), 0);
	ck_assert_int_eq(r.n, 4);
	ck_assert_int_eq(r.ev[3].type, STORE_DELETED);
	ck_assert_str_eq(r.ev[3].name, "b");
	ck_assert_int_eq(create(st, "/pods", "default", "c"), 5);
	ck_assert_int_eq(r.n, 5);
	char *v;
	ck_assert_int_eq(store_kv_get(st, "cluster-uid", &v), 0);
	ck_assert_str_eq(v, "1234");
	free(v);
	fixture_close(st);
}
END_TEST

START_TEST(kv_get_set)
{
	store_t *st = fixture_open(NULL);
	char *v = NULL;
	ck_assert_int_eq(store_kv_get(st, "ca-key", &v), -ENOENT);
	ck_assert_int_eq(store_kv_set(st, "ca-key", "first"), 0);
	ck_assert_int_eq(store_kv_set(st, "ca-key", "second"), 0);
	ck_assert_int_eq(store_kv_get(st, "ca-key", &v), 0);
	ck_assert_str_eq(v, "second");
	free(v);
	/* Our own meta keys are not reachable through kv. */
	ck_assert_int_eq(store_kv_set(st, "rev", "999"), 0);
	ck_assert_int_eq(store_kv_set(st, "compacted", "999"), 0);
	ck_assert_int_eq(store_rev(st), 0);
	create(st, "/pods", "default", "a");
	st = fixture_reopen(st, NULL);
	ck_assert_int_eq(store_rev(st), 1);
	ck_assert_int_eq(store_compacted_rev(st), 0);
	ck_assert_int_eq(store_kv_get(st, "rev", &v), 0);
	ck_assert_str_eq(v, "999");
	free(v);
	fixture_close(st);
}
END_TEST

/* The child writes objects and acknowledges each on a pipe until killed. */
static void durability_child(int fd)
{
	uv_loop_t l;
	store_t *st;
	uv_loop_init(&l);
	if (store_open(&l, db.path, NULL, &st))
		_exit(2);
	char pad[2048];
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (int i = 0;; i++) {
		char name[16], ack[24];
		snprintf(name, sizeof(name), "p%06d", i);
		json_t *o = mkobj("default", name, NULL);
		json_object_set_new(o, "pad", json_string(pad));
		if (store_create(st, "/pods", "default", name, o, NULL))
			_exit(3);
		json_decref(o);
		int n = snprintf(ack, sizeof(ack), "%d\n", i);
		if (write(fd, ack, (size_t)n) != n)
			_exit(4);
	}
}

START_TEST(durability_kill9)
{
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		durability_child(p[1]);
	}
	close(p[1]);
	FILE *f = fdopen(p[0], "r");
	int acked = -1, v;
	while (acked < 300 && fscanf(f, "%d", &v) == 1)
		acked = v;
	kill(pid, SIGKILL);
	while (fscanf(f, "%d", &v) == 1) /* acks written before the kill */
		acked = v;
	fclose(f);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_ge(acked, 300);

	store_t *st = fixture_open(NULL);
	ck_assert_int_ge(store_rev(st), acked + 1);
	for (int i = 0; i <= acked; i++) {
		char name[16];
		const char *text;
		snprintf(name, sizeof(name), "p%06d", i);
		ck_assert_int_eq(store_get_raw(st, "/pods", "default", name, &text, NULL, NULL), 0);
	}
	fixture_close(st);
}
END_TEST

START_TEST(sync_full_works)
{
	struct store_opts o = {.sync_full = true, .cache_kib = 256};
	store_t *st = fixture_open(&o);
	ck_assert_int_eq(create(st, "/pods", "default", "a"), 1);
	fixture_close(st);
}
END_TEST

/* Group commit: writes of one loop iteration commit together, after it. */
struct commit_seen {
	int calls, status;
	int64_t rev_then;
	store_t *st;
};

static void on_commit(int status, void *arg)
{
	struct commit_seen *c = arg;
	c->calls++;
	c->status = status;
	c->rev_then = store_rev(c->st);
}

static int events_seen;
static void count_cb(const struct store_event *ev, void *arg)
{
	(void)ev;
	(void)arg;
	events_seen++;
}

START_TEST(group_commit_batches_an_iteration)
{
	struct store_opts o = {.group_commit = true};
	store_t *st = fixture_open(&o);
	struct commit_seen c = {.st = st};
	store_watch_t *w = NULL;
	events_seen = 0;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, count_cb, NULL, &w), 0);
	ck_assert(!store_pending(st));
	ck_assert_int_eq(store_on_commit(st, on_commit, &c), -EALREADY);
	create(st, "/pods", "default", "a");
	create(st, "/pods", "default", "b");
	ck_assert(store_pending(st));
	ck_assert_int_eq(store_on_commit(st, on_commit, &c), 0);
	/* nothing is delivered before the commit */
	ck_assert_int_eq(events_seen, 0);
	ck_assert_int_eq(c.calls, 0);
	/* a nested transaction that rolls back undoes only its own write */
	ck_assert_int_eq(store_txn_begin(st), 0);
	create(st, "/pods", "default", "gone");
	store_txn_rollback(st);
	uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_int_eq(c.calls, 1);
	ck_assert_int_eq(c.status, 0);
	ck_assert_int_eq(c.rev_then, 2);
	ck_assert_int_eq(events_seen, 2);
	ck_assert(!store_pending(st));
	json_t *got = NULL;
	ck_assert_int_eq(store_get(st, "/pods", "default", "gone", &got), -ENOENT);
	store_unwatch(w);
	/* committed writes survive a reopen */
	st = fixture_reopen(st, NULL);
	ck_assert_int_eq(store_get(st, "/pods", "default", "b", &got), 0);
	json_decref(got);
	ck_assert_int_eq(store_rev(st), 2);
	fixture_close(st);
}
END_TEST

/* Records the tree each event carries. */
static void tree_cb(const struct store_event *ev, void *arg)
{
	const json_t **trees = arg;
	trees[ev->rev - 1] = ev->obj;
}

START_TEST(final_create_shares_the_tree)
{
	store_t *st = fixture_open(NULL);
	const json_t *trees[2] = {NULL, NULL};
	store_watch_t *w = NULL;
	ck_assert_int_eq(store_watch(st, "/pods", NULL, 0, tree_cb, trees, &w), 0);
	json_t *a = mkobj("default", "a", NULL), *b = mkobj("default", "b", NULL);
	/* inside a transaction events wait for the commit: the store keeps
	 * the final writer's tree, and a copy of the other's */
	ck_assert_int_eq(store_txn_begin(st), 0);
	ck_assert_int_eq(store_create_final(st, "/pods", "default", "a", a, NULL), 0);
	ck_assert_int_eq(store_create(st, "/pods", "default", "b", b, NULL), 0);
	json_t *keep_a = json_incref(a), *keep_b = json_incref(b);
	json_decref(a);
	json_decref(b);
	ck_assert_int_eq(store_txn_commit(st), 0);
	uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_ptr_eq(trees[0], keep_a);
	ck_assert_ptr_nonnull(trees[1]);
	ck_assert_ptr_ne(trees[1], keep_b);
	ck_assert_str_eq(rv_of(keep_a), "1");
	json_decref(keep_a);
	json_decref(keep_b);
	store_unwatch(w);
	fixture_close(st);
}
END_TEST

START_TEST(group_commit_flush_on_close)
{
	struct store_opts o = {.group_commit = true};
	store_t *st = fixture_open(&o);
	struct commit_seen c = {.st = st};
	create(st, "/pods", "default", "a");
	ck_assert_int_eq(store_on_commit(st, on_commit, &c), 0);
	store_flush(st);
	ck_assert_int_eq(c.calls, 1);
	create(st, "/pods", "default", "b");
	st = fixture_reopen(st, NULL); /* store_close commits what is pending */
	json_t *got = NULL;
	ck_assert_int_eq(store_get(st, "/pods", "default", "b", &got), 0);
	json_decref(got);
	fixture_close(st);
}
END_TEST

/* The size of the scratch store's WAL, -1 when there is none. */
static long wal_size(void)
{
	char p[160];
	struct stat sb;
	snprintf(p, sizeof(p), "%s-wal", db.path);
	return stat(p, &sb) == 0 ? (long)sb.st_size : -1;
}

/* A store opened on existing data with group commit, after a clean close
 * removed its WAL: a thread of the store's own starts the WAL (store.c
 * warm_start), so that it holds frames before anything is written through
 * the store and the loop's first commit appends without syncing; the
 * revision and the objects do not move, and writes and reads go on. */
START_TEST(reopen_starts_the_wal_off_the_loop)
{
	struct store_opts o = {.group_commit = true};
	store_t *st = fixture_open(&o);
	create(st, "/pods", "default", "a");
	store_flush(st);
	fixture_close(st);
	ck_assert_int_le(wal_size(), 0); /* checkpointed and removed at close */
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	st = fixture_open(&o);
	long n = 0;
	for (int i = 0; i < 500 && (n = wal_size()) <= 0; i++)
		usleep(10000);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(store_rev(st), 1);
	ck_assert_int_eq(create(st, "/pods", "default", "b"), 2);
	store_flush(st);
	json_t *got = NULL;
	ck_assert_int_eq(store_get(st, "/pods", "default", "a", &got), 0);
	json_decref(got);
	/* a new store is started by the loop's first commit, as before */
	fixture_close(st);
	tmpdb_remove(&db);
	tmpdb_make(&db, "store-warm");
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	st = fixture_open(&o);
	usleep(50000);
	ck_assert_int_le(wal_size(), 0);
	fixture_close(st);
}
END_TEST

/* Whether a thread of this process runs at nice `nice` (field 19 of
 * /proc/self/task/TID/stat, after the command's closing parenthesis). */
static bool a_thread_at_nice(int nice)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool found = false;
	ck_assert_ptr_nonnull(d);
	while (!found && (e = readdir(d))) {
		char path[300], buf[1024];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		if (f)
			fclose(f);
		buf[n] = '\0';
		const char *p = strrchr(buf, ')');
		int field = 2, v = 0;
		for (; p && *p && field < 19; p++)
			if (*p == ' ')
				field++;
		found = p && field == 19 && sscanf(p, "%d", &v) == 1 && v == nice;
	}
	closedir(d);
	return found;
}

/* Closes st, opens the store again and counts the pods in "ns" (what a
 * restart finds), then closes it. */
static size_t pods_after_reopen(store_t *st)
{
	size_t n = 0;
	st = fixture_reopen(st, NULL);
	ck_assert_int_eq(store_count(st, "/pods", "ns", &n), 0);
	fixture_close(st);
	return n;
}

/* Creates /pods ns/NAME carrying `pad` (a string of a few KB: WAL frames). */
static void create_padded(store_t *st, const char *name, const char *pad)
{
	json_t *o = mkobj("ns", name, NULL);
	json_object_set_new(o, "pad", json_string(pad));
	ck_assert_int_eq(store_create(st, "/pods", "ns", name, o, NULL), 0);
	json_decref(o);
}

/* WAL checkpoints run on a worker thread (store_ckpt.c): after enough
 * commits one completes while the loop keeps running, and nothing is lost
 * across a reopen. */
START_TEST(checkpoint_in_the_background)
{
	store_t *st = fixture_open(NULL);
	char name[32], pad[2048];
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (int i = 0; i < 1500; i++) {
		snprintf(name, sizeof(name), "p%04d", i);
		create_padded(st, name, pad);
		uv_run(&loop, UV_RUN_NOWAIT);
	}
	for (int i = 0; i < 1000 && store_checkpoints(st) == 0; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(10000);
	}
	ck_assert_uint_ge(store_checkpoints(st), 1);
	/* (a process started at nice 10 or more keeps its own) */
	int own = getpriority(PRIO_PROCESS, 0);
	ck_assert_msg(a_thread_at_nice(own > 10 ? own : 10), "no thread checkpoints at nice 10");
	ck_assert_uint_eq(pods_after_reopen(st), 1500);
}
END_TEST

/* The checkpoint a commit starts (store_ckpt.c): a worker's every
 * STORE_CKPT_PAGES frames below STORE_CKPT_RESTART, back to back past it;
 * one on the loop only for the few frames after a worker's that caught up,
 * or past STORE_CKPT_LIMIT whatever is left. */
START_TEST(checkpoint_step_by_wal_size)
{
	const int R = STORE_CKPT_RESTART, L = STORE_CKPT_LIMIT, C = STORE_CKPT_CATCHUP;
	/* below the restart size: every STORE_CKPT_PAGES frames, one at a time */
	ck_assert_int_eq(store__ckpt_step(500, 1000, false, false, 0), STORE_CKPT_NONE);
	ck_assert_int_eq(store__ckpt_step(1000, 1000, false, false, 0), STORE_CKPT_ON_WORKER);
	ck_assert_int_eq(store__ckpt_step(2100, 2000, true, false, 0), STORE_CKPT_NONE);
	ck_assert_int_eq(store__ckpt_step(1500, 2000, false, true, 1490), STORE_CKPT_NONE);
	/* past it: the worker's back to back, whatever next_at says */
	ck_assert_int_eq(store__ckpt_step(R + 10, R + 900, false, false, 0), STORE_CKPT_ON_WORKER);
	ck_assert_int_eq(store__ckpt_step(R + 10, R + 900, true, false, 0), STORE_CKPT_NONE);
	/* a worker's that caught up, far behind: another worker's, not the loop */
	ck_assert_int_eq(store__ckpt_step(R + 2000, R + 2500, false, true, R),
			 STORE_CKPT_ON_WORKER);
	ck_assert_int_eq(store__ckpt_step(R + C + 1, R + 900, false, true, R),
			 STORE_CKPT_ON_WORKER);
	/* ... close behind: the loop copies the rest */
	ck_assert_int_eq(store__ckpt_step(R + C, R + 900, false, true, R), STORE_CKPT_ON_LOOP);
	ck_assert_int_eq(store__ckpt_step(R + 5, R + 900, true, true, R), STORE_CKPT_ON_LOOP);
	/* the limit: on the loop in any case */
	ck_assert_int_eq(store__ckpt_step(L, L + 900, true, false, 0), STORE_CKPT_ON_LOOP);
	ck_assert_int_eq(store__ckpt_step(L + 5000, 0, false, true, 10), STORE_CKPT_ON_LOOP);
	ck_assert_int_lt(STORE_CKPT_PAGES, R);
	ck_assert_int_lt(R, L);
}
END_TEST

/* Size of the file at PATH (0 when absent). */
static long file_size(const char *path)
{
	struct stat sb;
	return stat(path, &sb) < 0 ? 0 : (long)sb.st_size;
}

/* The WAL's frames at the last commit, and its starts over (store_stats). */
static int wal_frames(const store_t *st, uint64_t *restarts)
{
	struct store_stats ss;
	store_stats(st, &ss);
	if (restarts)
		*restarts = ss.wal_restarts;
	return ss.wal_frames;
}

/* Creates 3 KB objects (named from *next on) until the WAL has started
 * over `restarts` times in all; *most gets the most frames it held in
 * the last cycle before starting over, *wal_at the WAL file's size at
 * the first commit after the last start over. A worker past 8,000 frames
 * is waited for (a bound for a stuck one, not a timing). */
static void write_until_restarts(store_t *st, int *next, uint64_t restarts, long *most,
				 long *wal_at)
{
	char wal[4200], name[32], pad[3000];
	snprintf(wal, sizeof(wal), "%s-wal", db.path);
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	uint64_t now = 0;
	long cycle = 0;
	wal_frames(st, &now);
	for (int i = 0; i < 40000 && now < restarts; i++, (*next)++) {
		snprintf(name, sizeof(name), "p%05d", *next);
		create_padded(st, name, pad);
		uint64_t r;
		long f = wal_frames(st, &r);
		if (r > now) {
			*most = cycle;
			*wal_at = file_size(wal);
			cycle = f;
			now = r;
		} else if (f > cycle) {
			cycle = f;
		}
		uv_run(&loop, UV_RUN_NOWAIT);
		for (int w = 0; w < 15000 && f >= 8000 && store_checkpoint_pending(st); w++) {
			usleep(2000);
			uv_run(&loop, UV_RUN_NOWAIT);
		}
	}
	ck_assert_msg(now >= restarts, "the WAL started over %llu times, not %llu",
		      (unsigned long long)now, (unsigned long long)restarts);
}

/* Past 8,000 frames (STORE_CKPT_RESTART) the worker's checkpoints run back
 * to back, not every 1,000 frames: with a worker that keeps up (here each
 * of its checkpoints ends before the next commit) the WAL starts over
 * within a few commits, long before 16,000 (STORE_CKPT_LIMIT), where the
 * loop would copy all that is left. (A worker that falls behind by a few
 * commits is the loop's catch-up: checkpoint_step_by_wal_size.) Below
 * 8,000 frames the worker runs beside the commits and may let the WAL
 * start over by itself (a commit late on a busy machine): a cycle that
 * never reached 8,000 frames is not this test's; the next one is. */
START_TEST(checkpoint_lets_the_wal_start_over)
{
	store_t *st = fixture_open(NULL);
	int next = 0;
	long most = 0, wal_at = 0, at_restart = 0;
	for (uint64_t want = 1; want < 8 && !at_restart; want++) {
		write_until_restarts(st, &next, want, &most, &wal_at);
		if (most >= 8000)
			at_restart = most;
	}
	ck_assert_msg(at_restart, "the WAL never started over past 8,000 frames (%ld at most)",
		      most);
	ck_assert_int_lt(at_restart, 9000);
	ck_assert_uint_gt(pods_after_reopen(st), 1000);
}
END_TEST

/* Under a write stream the WAL file is written over in place when it
 * starts over (journal_size_limit STORE_WAL_KEEP_BYTES), not cut to 4 MiB
 * and grown again: the first start over of a stream cuts it (no start
 * before it), the next ones, within wal_keep_ms of the last, keep it.
 * wal_keep_ms of an hour: no timing in the test. */
START_TEST(wal_keeps_its_size_in_a_stream)
{
	struct store_opts o = {.wal_keep_ms = 3600 * 1000};
	store_t *st = fixture_open(&o);
	int next = 0;
	long most = 0, wal_at = 0;
	struct store_stats ss;
	write_until_restarts(st, &next, 1, &most, &wal_at);
	ck_assert_int_le(wal_at, 5 * 1024 * 1024); /* cut: 4 MiB and one commit */
	/* a cycle past 2,000 frames (8 MiB: more than a cut leaves) */
	most = 0;
	for (uint64_t want = 2; want < 10 && most < 2000; want++)
		write_until_restarts(st, &next, want, &most, &wal_at);
	ck_assert_int_ge(most, 2000);
	store_stats(st, &ss);
	ck_assert(ss.wal_kept);
	/* the file kept the size of the whole cycle before */
	ck_assert_int_ge(wal_at, 32 + most * (24 + 4096));
	fixture_close(st);
}
END_TEST

/* Without a stream (wal_keep_ms < 0: never) every start over cuts the WAL
 * file to journal_size_limit's 4 MiB, as SQLite does. */
START_TEST(wal_cut_when_not_streaming)
{
	struct store_opts o = {.wal_keep_ms = -1};
	store_t *st = fixture_open(&o);
	int next = 0;
	long most = 0, wal_at = 0;
	struct store_stats ss;
	for (uint64_t want = 1; want < 10 && most < 2000; want++)
		write_until_restarts(st, &next, want, &most, &wal_at);
	ck_assert_int_ge(most, 2000); /* 8 MiB of WAL, then cut */
	store_stats(st, &ss);
	ck_assert(!ss.wal_kept);
	ck_assert_int_le(wal_at, 5 * 1024 * 1024);
	fixture_close(st);
}
END_TEST

/* The store's VFS (store_vfs.c) writes a transaction's WAL frames, two
 * writes each in SQLite, with one write; another connection sees the
 * commit as soon as it returns (the frames are in the file before SQLite
 * publishes the commit). */
START_TEST(wal_writes_gathered_per_transaction)
{
	store_t *st = fixture_open(NULL);
	struct store_vfs_stats a, b;
	char name[32], pad[3000];
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	store_vfs_stats(&a);
	ck_assert_int_eq(store_txn_begin(st), 0);
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "g%03d", i);
		create_padded(st, name, pad);
	}
	ck_assert_int_eq(store_txn_commit(st), 0);
	store_vfs_stats(&b);
	/* 40 objects of 3 KB: dozens of frames, twice as many SQLite writes,
	 * gathered into writes of up to 120 KiB */
	ck_assert_uint_ge(b.gathered - a.gathered, 80);
	ck_assert_uint_le((b.writes - a.writes) * 10, b.gathered - a.gathered);
	/* another connection, on the default VFS, reads the commit */
	sqlite3 *other;
	sqlite3_stmt *q;
	int64_t count = -1;
	ck_assert_int_eq(sqlite3_open_v2(db.path, &other, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(other, "SELECT count(*) FROM objects", -1, &q, NULL),
			 SQLITE_OK);
	if (sqlite3_step(q) == SQLITE_ROW)
		count = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(other);
	ck_assert_int_ge(count, 40);
	fixture_close(st);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("store/store");
	TCase *tc = tcase_create("store");
	tcase_add_checked_fixture(tc, setup, store_fixture_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, create_get_update_delete);
	tcase_add_test(tc, create_taken_key_changes_nothing);
	tcase_add_test(tc, group_commit_batches_an_iteration);
	tcase_add_test(tc, group_commit_flush_on_close);
	tcase_add_test(tc, reopen_starts_the_wal_off_the_loop);
	tcase_add_test(tc, final_create_shares_the_tree);
	tcase_add_test(tc, bad_arguments);
	tcase_add_test(tc, revision_across_resources);
	tcase_add_test(tc, list_order_and_namespace);
	tcase_add_test(tc, pagination_with_filter);
	tcase_add_test(tc, list_remaining_and_text);
	tcase_add_test(tc, kept_counts);
	tcase_add_test(tc, txn_commit_and_rollback);
	tcase_add_test(tc, read_cache_follows_writes);
	tcase_add_test(tc, watch_started_inside_txn);
	tcase_add_test(tc, watch_replay_then_live);
	tcase_add_test(tc, watch_live_with_prev);
	tcase_add_test(tc, watch_namespace_and_all_resources);
	tcase_add_test(tc, many_watches_one_event);
	tcase_add_test(tc, unwatch_inside_callback);
	tcase_add_test(tc, callbacks_that_write_keep_order);
	tcase_add_test(tc, compaction_gone);
	tcase_add_test(tc, compaction_timer);
	tcase_add_test(tc, reopen_keeps_everything);
	tcase_add_test(tc, kv_get_set);
	tcase_add_test(tc, durability_kill9);
	tcase_add_test(tc, sync_full_works);
	tcase_add_test(tc, checkpoint_in_the_background);
	tcase_add_test(tc, checkpoint_lets_the_wal_start_over);
	tcase_add_test(tc, wal_keeps_its_size_in_a_stream);
	tcase_add_test(tc, wal_cut_when_not_streaming);
	tcase_add_test(tc, wal_writes_gathered_per_transaction);
	tcase_add_test(tc, checkpoint_step_by_wal_size);
	tcase_add_test(tc, count_sees_the_open_transaction);
	suite_add_tcase(s, tc);
	return s;
}
