/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of syncer/ledger.c and store/store_ledger.c: what a node
 * offers, the share a pod holds in each sharing mode, when it held it (host
 * timestamps only), and the ledger's rows (idempotent upserts, never
 * reopened, a moved start, rows of pods gone, retention, a read-only
 * reader beside the writer).
 */
#include <check.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"
#include "tests/unit/store/tmpdb.h"

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	ck_assert_msg(v != NULL, "bad JSON in test: %s: %s", e.text, text);
	return v;
}

#define H100                                                                          \
	"{\"metadata\":{\"name\":\"n1\",\"uid\":\"u1\",\"labels\":{"                  \
	"\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\",\"nvidia.com/"          \
	"gpu.memory\":\"80000\","                                                     \
	"\"nvidia.com/gpu.count\":\"8\"}},\"status\":{\"allocatable\":{\"nvidia.com/" \
	"gpu\":\"8\"}}}"

static void node_of(const char *text, struct syncer_gpu_node *n, json_t **keep)
{
	*keep = J(text);
	syncer_gpu_node_info(*keep, n);
}

START_TEST(node_info)
{
	struct syncer_gpu_node n;
	json_t *o;
	node_of(H100, &n, &o);
	ck_assert_str_eq(n.model, "NVIDIA-H100-80GB-HBM3");
	ck_assert(n.gpus == 8 && n.mem_mib == 80000 && n.replicas == 1 && n.slices == 7);
	json_decref(o);
	/* time-sliced: allocatable counts replicas; the devices are the count */
	node_of("{\"metadata\":{\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-L4\","
		"\"nvidia.com/gpu.replicas\":\"4\",\"nvidia.com/gpu.count\":\"2\"}},"
		"\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}",
		&n, &o);
	ck_assert(n.gpus == 2 && n.replicas == 4);
	json_decref(o);
	/* MIG without the count label: its slices, 7 to a GPU */
	node_of("{\"metadata\":{\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\"}},"
		"\"status\":{\"allocatable\":{\"nvidia.com/mig-1g.10gb\":\"7\","
		"\"nvidia.com/mig-3g.40gb\":\"2\"}}}",
		&n, &o);
	ck_assert(n.gpus == 1); /* 7 + 6 sevenths: one whole GPU's worth */
	json_decref(o);
	/* an A30 has 4 slices; a node without GPUs offers none */
	node_of("{\"metadata\":{\"labels\":{\"nvidia.com/gpu.product\":\"NVIDIA-A30\"}}}", &n, &o);
	ck_assert(n.slices == 4 && n.gpus == 0);
	json_decref(o);
	syncer_gpu_node_info(NULL, &n);
	ck_assert(n.gpus == 0 && strcmp(n.model, "") == 0);
}
END_TEST

/* The share of a pod of containers `ctrs` (and annotations ann) on n. */
static double share(const struct syncer_gpu_node *n, const char *ann, const char *ctrs,
		    const char **sharing)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"annotations\":%s},\"spec\":{\"containers\":%s}}",
		 ann ? ann : "{}", ctrs);
	json_t *p = J(buf);
	struct syncer_share s;
	int rc = syncer_pod_share(p, n, &s);
	json_decref(p);
	if (sharing)
		*sharing = rc ? "none" : s.sharing;
	return rc ? -1 : s.gpus;
}

#define LIM(x) "[{\"name\":\"c\",\"resources\":{\"limits\":{" x "}}}]"

START_TEST(share_rules)
{
	struct syncer_gpu_node n;
	json_t *o;
	const char *m;
	node_of(H100, &n, &o);
	ck_assert(share(&n, NULL, LIM("\"nvidia.com/gpu\":\"2\""), &m) == 2);
	ck_assert_str_eq(m, "whole");
	/* MIG: slices over the model's 7 */
	ck_assert(fabs(share(&n, NULL, LIM("\"nvidia.com/mig-3g.40gb\":\"1\""), &m) - 3.0 / 7) <
		  1e-12);
	ck_assert_str_eq(m, "mig");
	/* KAI: gpu-fraction times the devices; gpu-memory over the device's */
	ck_assert(share(&n, "{\"gpu-fraction\":\"0.25\",\"gpu-fraction-num-devices\":\"2\"}", "[]",
			&m) == 0.5);
	ck_assert_str_eq(m, "fraction");
	ck_assert(share(&n, "{\"gpu-memory\":\"20000\"}", "[]", &m) == 0.25);
	ck_assert(share(&n, "{\"gpu-fraction\":\"7\"}", "[]", &m) == 1); /* out of range: whole */
	/* a fraction beside whole GPUs: the larger is charged */
	ck_assert(share(&n, "{\"gpu-fraction\":\"0.5\"}", LIM("\"nvidia.com/gpu\":\"4\""), &m) ==
		  4);
	ck_assert_str_eq(m, "whole");
	/* HAMi: the larger of memory and core shares, per vGPU */
	ck_assert(fabs(share(&n, NULL,
			     LIM("\"nvidia.com/gpu\":\"2\",\"nvidia.com/gpumem\":\"20000\","
				 "\"nvidia.com/gpucores\":\"30\""),
			     &m) -
		       0.6) < 1e-12);
	ck_assert_str_eq(m, "hami");
	ck_assert(share(&n, NULL, LIM("\"nvidia.com/gpumem-percentage\":\"50\""), &m) == 0.5);
	/* nothing: no GPU held */
	ck_assert(share(&n, NULL, LIM("\"cpu\":\"1\""), &m) == -1);
	/* effective request: containers summed, an init step may need more */
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "{\"spec\":{\"containers\":" LIM(
		     "\"nvidia.com/gpu\":\"1\"") ","
						 "\"initContainers\":" LIM(
						     "\"nvidia.com/gpu\":\"3\"") "}}");
	json_t *p = J(buf);
	struct syncer_share s;
	ck_assert_int_eq(syncer_pod_share(p, &n, &s), 0);
	ck_assert(s.gpus == 3);
	json_decref(p);
	json_decref(o);
	/* time-sliced: 1/replicas per nvidia.com/gpu */
	node_of("{\"metadata\":{\"labels\":{\"nvidia.com/gpu.replicas\":\"4\"}},"
		"\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"4\"}}}",
		&n, &o);
	ck_assert(share(&n, NULL, LIM("\"nvidia.com/gpu\":\"1\""), &m) == 0.25);
	ck_assert_str_eq(m, "timeslice");
	json_decref(o);
}
END_TEST

static int interval(const char *pod, bool deleted, int64_t now, struct syncer_interval *iv)
{
	json_t *p = J(pod);
	int rc = syncer_pod_interval(p, deleted, now, iv);
	json_decref(p);
	return rc;
}

#define SCHED(st, t) \
	"{\"type\":\"PodScheduled\",\"status\":\"" st "\",\"lastTransitionTime\":\"" t "\"}"

START_TEST(intervals)
{
	struct syncer_interval iv;
	/* never bound: nothing held */
	ck_assert_int_eq(interval("{\"spec\":{},\"status\":{\"conditions\":[" SCHED(
				      "False", "2026-01-01T00:00:00Z") "]}}",
				  false, 0, &iv),
			 -ENOENT);
	/* bound and running: open */
	const char *run = "{\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\","
			  "\"conditions\":[" SCHED("True", "2026-01-01T00:00:10Z") "]}}";
	ck_assert_int_eq(interval(run, false, 0, &iv), 0);
	ck_assert_int_eq(iv.start, 1767225610);
	ck_assert_int_eq(iv.end, 0);
	/* terminal: the last container's finishedAt */
	ck_assert_int_eq(
	    interval("{\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Succeeded\","
		     "\"conditions\":[" SCHED(
			 "True", "2026-01-01T00:00:10Z") "],"
							 "\"containerStatuses\":[{\"state\":{"
							 "\"terminated\":{\"finishedAt\":"
							 "\"2026-01-01T00:01:00Z\"}}},{\"state\":{"
							 "\"terminated\":{\"finishedAt\":"
							 "\"2026-01-01T00:00:30Z\"}}}]}}",
		     false, 0, &iv),
	    0);
	ck_assert_int_eq(iv.end - iv.start, 50);
	ck_assert_str_eq(iv.end_kind, "finished");
	/* deleted: at the deletionTimestamp when it has passed, else when seen */
	const char *del = "{\"metadata\":{\"deletionTimestamp\":\"2026-01-01T00:00:40Z\"},"
			  "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\","
			  "\"conditions\":[" SCHED("True", "2026-01-01T00:00:10Z") "]}}";
	ck_assert_int_eq(interval(del, true, 1767225700, &iv), 0);
	ck_assert_int_eq(iv.end - iv.start, 30);
	ck_assert_str_eq(iv.end_kind, "deleted");
	ck_assert_int_eq(interval(del, true, 1767225620, &iv), 0);
	ck_assert_int_eq(iv.end - iv.start, 10);
	ck_assert_str_eq(iv.end_kind, "gone");
	/* a deletion that is not yet the DELETED event leaves it open */
	ck_assert_int_eq(interval(del, false, 1767225700, &iv), 0);
	ck_assert_int_eq(iv.end, 0);
}
END_TEST

/* ---- the store's ledger ---- */

static struct tmpdb db;
static store_t *st;
static store_ledger_t *led;

static void store_setup(void)
{
	tmpdb_make(&db, "kb-ledger");
	struct store_opts o = {0};
	ck_assert_int_eq(store_open(NULL, db.path, &o, &st), 0);
	ck_assert_int_eq(store_ledger_open(st, &led), 0);
}

static void store_teardown(void)
{
	store_ledger_close(led);
	store_close(st);
	tmpdb_remove(&db);
}

struct rows {
	int n;
	double secs; /* gpus x (end - start), open rows to 1000 */
	int64_t end[8];
};

static void count(const struct store_alloc *a, void *arg)
{
	struct rows *r = arg;
	if (r->n < 8)
		r->end[r->n] = a->end;
	r->n++;
	r->secs += a->gpus * (double)((a->end ? a->end : 1000) - a->start);
}

static struct rows rows_of(store_ledger_t *l, int64_t since, int64_t until)
{
	struct rows r = {0};
	ck_assert_int_eq(store_ledger_each(l, since, until, count, &r), 0);
	return r;
}

struct sums {
	int calls;
	double secs;
};

static void add_sum(const struct store_alloc_sum *s, void *arg)
{
	struct sums *r = arg;
	r->calls++;
	r->secs += s->gpu_seconds;
}

static struct sums sums_of(store_ledger_t *l, enum store_ledger_sums kind)
{
	struct sums r = {0};
	ck_assert_int_eq(store_ledger_sums(l, kind, 0, 1000, 1000, add_sum, &r), 0);
	return r;
}

START_TEST(ledger_rows)
{
	struct store_alloc a = {.host_uid = "h1",
				.start = 100,
				.ns = "ns",
				.pod = "p",
				.node = "n1",
				.model = "M",
				.sharing = "whole",
				.gpus = 2};
	ck_assert_int_eq(store_ledger_put(led, &a), 0);
	ck_assert_int_eq(store_ledger_put(led, &a), 0); /* again: the same row */
	struct rows r = rows_of(led, 0, 0);
	ck_assert_int_eq(r.n, 1);
	a.end = 160;
	a.end_kind = "finished";
	ck_assert_int_eq(store_ledger_put(led, &a), 0);
	a.end = 0; /* an older event after a restart: stays closed */
	ck_assert_int_eq(store_ledger_put(led, &a), 0);
	r = rows_of(led, 0, 0);
	ck_assert_int_eq(r.n, 1);
	ck_assert_int_eq(r.end[0], 160);
	ck_assert(r.secs == 120);
	/* the window: rows overlapping it only */
	ck_assert_int_eq(rows_of(led, 160, 0).n, 0);
	ck_assert_int_eq(rows_of(led, 0, 100).n, 0);
	ck_assert_int_eq(rows_of(led, 159, 161).n, 1);
	/* the host corrected the start: one row, the new one */
	struct store_alloc b = a;
	b.host_uid = "h2";
	b.start = 200;
	ck_assert_int_eq(store_ledger_put(led, &b), 0);
	b.start = 210;
	ck_assert_int_eq(store_ledger_put(led, &b), 0);
	ck_assert_int_eq(rows_of(led, 0, 0).n, 2);
	/* pods gone from a list: their open rows close at the given time */
	json_t *keep = json_pack("{s:b}", "h9", 1);
	ck_assert_int_eq(store_ledger_close_missing(led, false, keep, 300), 0);
	json_decref(keep);
	r = rows_of(led, 0, 0);
	ck_assert_int_eq(r.end[1], 300);
	/* a reader beside the writer sees the same */
	store_ledger_t *ro;
	ck_assert_int_eq(store_ledger_set_seen(led, 1234), 0);
	ck_assert_int_eq(store_ledger_open_ro(db.path, &ro), 0);
	ck_assert_int_eq(rows_of(ro, 0, 0).n, 2);
	ck_assert_int_eq(store_ledger_seen(ro), 1234);
	/* sums in SQL: per row, totals, per pod (one pod: its two rows) */
	ck_assert_int_eq(sums_of(ro, STORE_LEDGER_ROWS).calls, 2);
	ck_assert(sums_of(ro, STORE_LEDGER_ROWS).secs == 2 * (60 + 90));
	ck_assert(sums_of(ro, STORE_LEDGER_TOTALS).secs == 2 * (60 + 90));
	ck_assert_int_eq(sums_of(ro, STORE_LEDGER_PODS).calls, 1);
	ck_assert(sums_of(ro, STORE_LEDGER_PODS).secs == 2 * (60 + 90));
	store_ledger_close(ro);
	/* a store an older writer made, without the pods' index: the same */
	sqlite3 *raw;
	ck_assert_int_eq(sqlite3_open(db.path, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(raw, "DROP INDEX gpu_alloc_pod", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(raw);
	ck_assert_int_eq(store_ledger_open_ro(db.path, &ro), 0);
	ck_assert_int_eq(sums_of(ro, STORE_LEDGER_PODS).calls, 1);
	ck_assert(sums_of(ro, STORE_LEDGER_TOTALS).secs == 2 * (60 + 90));
	store_ledger_close(ro);
	/* retention */
	ck_assert_int_eq(store_ledger_prune(led, 200), 0);
	ck_assert_int_eq(rows_of(led, 0, 0).n, 1);
	/* nodes: the same upsert rules */
	struct store_node_cap c = {
	    .node_uid = "u1", .node = "n1", .model = "M", .start = 10, .gpus = 8};
	ck_assert_int_eq(store_ledger_put_node(led, &c), 0);
	c.end = 50;
	c.end_kind = "deleted";
	ck_assert_int_eq(store_ledger_put_node(led, &c), 0);
	ck_assert_int_eq(store_ledger_open_ro("/nonexistent/x.db", &ro), -ENOENT);
	ck_assert_int_eq(store_ledger_clear(led), 0);
	ck_assert_int_eq(rows_of(led, 0, 0).n, 0);
}
END_TEST

/* A store restored as another tenant: the other's history is dropped; the
 * same tenant restarting keeps its own. */
START_TEST(ledger_restored)
{
	struct syncer_ledger *l;
	struct syncer_ledger_opts o = {.tenant = "a", .queue = "q"};
	ck_assert_int_eq(syncer_ledger_start(NULL, NULL, st, &o, &l), 0);
	json_t *hp = J("{\"metadata\":{\"uid\":\"h1\",\"annotations\":{"
		       "\"kubicle.dev/namespace\":\"ns\",\"kubicle.dev/name\":\"p\"}},"
		       "\"spec\":{\"nodeName\":\"n1\",\"containers\":" LIM(
			   "\"nvidia.com/gpu\":\"1\"") "},"
						       "\"status\":{\"conditions\":[" SCHED(
							   "True", "2026-01-01T00:00:10Z") "]}}");
	syncer_ledger_pod(l, "ADDED", hp);
	ck_assert_int_eq(syncer_ledger_puts(l), 1);
	syncer_ledger_pod(l, "MODIFIED", hp); /* nothing new: no write */
	ck_assert_int_eq(syncer_ledger_puts(l), 1);
	syncer_ledger_stop(l);
	ck_assert_int_eq(syncer_ledger_start(NULL, NULL, st, &o, &l), 0);
	syncer_ledger_stop(l);
	ck_assert_int_eq(rows_of(led, 0, 0).n, 1);
	o.tenant = "b";
	ck_assert_int_eq(syncer_ledger_start(NULL, NULL, st, &o, &l), 0);
	syncer_ledger_stop(l);
	ck_assert_int_eq(rows_of(led, 0, 0).n, 0);
	json_decref(hp);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("syncer/ledger");
	TCase *tc = tcase_create("rules");
	tcase_add_test(tc, node_info);
	tcase_add_test(tc, share_rules);
	tcase_add_test(tc, intervals);
	suite_add_tcase(s, tc);
	tc = tcase_create("store");
	tcase_add_checked_fixture(tc, store_setup, store_teardown);
	tcase_add_test(tc, ledger_rows);
	tcase_add_test(tc, ledger_restored);
	suite_add_tcase(s, tc);
	return s;
}
