/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU allocation ledger's costs (docs/finops.md):
 *
 *   ledger_bench events [N [batch]]
 *     The ledger's work per host pod event (syncer_ledger_pod) on a store in
 *     /tmp, N pods (default 20000), each seen as the host reports a GPU pod's
 *     life: ADDED (pending), MODIFIED (bound: a row is written), MODIFIED
 *     (Running: nothing changes in the row, skipped), MODIFIED (Succeeded:
 *     the row closes), DELETED. Next to it, what the syncer pays for every
 *     event before any of its own work: decoding the watch line (json_loadb
 *     of the same event as the host sends it, managedFields stripped).
 *     Prints CPU nanoseconds (of this thread) per event; "batch" commits
 *     the rows of 100 events together, as the store's group commit does.
 *
 *   ledger_bench fill KUBICLE_HOME N
 *     A tenant "bench" under KUBICLE_HOME whose ledger holds N closed
 *     intervals over the last 30 days (and 16 nodes), for timing `kubicle
 *     usage` over them (bench/ledger.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lib/util.h"
#include "syncer/syncer_impl.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU: the machine is shared */
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A host pod event line as the host sends it, without managedFields. */
static int event_line(char *buf, size_t len, const char *type, int i, const char *phase, bool bound,
		      bool done)
{
	return snprintf(
	    buf, len,
	    "{\"type\":\"%s\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
	    "\"name\":\"train-%d-x-default-x-bench\",\"namespace\":\"tenants\",\"uid\":\"uid-%d\","
	    "\"resourceVersion\":\"%d\",\"creationTimestamp\":\"2026-12-01T10:00:00Z\","
	    "\"labels\":{\"kubicle.dev/tenant\":\"bench\",\"kai.scheduler/queue\":\"q\"},"
	    "\"annotations\":{\"kubicle.dev/namespace\":\"default\",\"kubicle.dev/name\":"
	    "\"train-%d\",\"kubicle.dev/uid\":\"tuid-%d\",\"kubicle.dev/kind\":\"Pod\"}},"
	    "\"spec\":{\"schedulerName\":\"kai-scheduler\",%s\"containers\":[{\"name\":\"c\","
	    "\"image\":\"busybox\",\"command\":[\"sleep\",\"60\"],\"resources\":{\"limits\":{"
	    "\"nvidia.com/gpu\":\"2\",\"cpu\":\"1\",\"memory\":\"1Gi\"},\"requests\":{"
	    "\"nvidia.com/gpu\":\"2\",\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]},"
	    "\"status\":{\"phase\":\"%s\",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":"
	    "\"%s\",\"lastTransitionTime\":\"2026-12-01T10:00:01Z\"}],\"containerStatuses\":[{"
	    "\"name\":\"c\",\"state\":{%s}}]}}}",
	    type, i, i, i, i, i, bound ? "\"nodeName\":\"n1\"," : "", phase,
	    bound ? "True" : "False",
	    done ? "\"terminated\":{\"exitCode\":0,\"finishedAt\":\"2026-12-01T10:01:01Z\"}"
		 : "\"running\":{}");
}

static int events(int n, bool batch)
{
	char dir[] = "/tmp/kb-ledger-bench-XXXXXX", path[128];
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/kubicle.db", dir);
	store_t *st;
	struct store_opts so = {0};
	if (store_open(NULL, path, &so, &st) < 0)
		return 1;
	struct syncer_ledger *l;
	struct syncer_ledger_opts lo = {.tenant = "bench", .queue = "q"};
	if (syncer_ledger_start(NULL, NULL, st, &lo, &l) < 0)
		return 1;
	static const struct {
		const char *type, *phase;
		bool bound, done;
	} steps[] = {{"ADDED", "Pending", false, false},
		     {"MODIFIED", "Pending", true, false},
		     {"MODIFIED", "Running", true, false},
		     {"MODIFIED", "Succeeded", true, true},
		     {"DELETED", "Succeeded", true, true}};
	char line[4096];
	double decode = 0, ledger = 0;
	size_t nev = 0;
	for (int i = 0; i < n; i++) {
		/* as the store's group commit: the writes of a loop turn together */
		if (batch && i % 20 == 0)
			store_txn_begin(st);
		for (size_t k = 0; k < KB_ARRAY_SIZE(steps); k++) {
			int len = event_line(line, sizeof(line), steps[k].type, i, steps[k].phase,
					     steps[k].bound, steps[k].done);
			double t0 = now_ns();
			json_t *ev = json_loadb(line, (size_t)len, 0, NULL);
			double t1 = now_ns();
			syncer_ledger_pod(l, steps[k].type, json_object_get(ev, "object"));
			double t2 = now_ns();
			decode += t1 - t0;
			ledger += t2 - t1;
			nev++;
			json_decref(ev);
		}
		if (batch && (i % 20 == 19 || i == n - 1)) {
			double t = now_ns();
			store_txn_commit(st);
			ledger += now_ns() - t;
		}
	}
	printf("host pod events: %zu (%d pods), rows written: %zu\n", nev, n,
	       syncer_ledger_puts(l));
	printf("syncer: decoding the event line  %8.0f ns/event\n", decode / (double)nev);
	printf("ledger: syncer_ledger_pod        %8.0f ns/event (%s)\n", ledger / (double)nev,
	       batch ? "writes of 100 events per commit, as group commit" : "one commit per row");
	syncer_ledger_stop(l);
	store_close(st);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}

static int fill(const char *home, long n)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/tenants", home);
	mkdir(home, 0755);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/tenants/bench", home);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/tenants/bench/kubicle.db", home);
	store_t *st;
	struct store_opts so = {0};
	store_ledger_t *l;
	if (store_open(NULL, path, &so, &st) < 0 || store_ledger_open(st, &l) < 0)
		return 1;
	int64_t now = (int64_t)time(NULL), from = now - 30 * 86400;
	srand(1);
	store_txn_begin(st);
	char uid[32], pod[32], ns[16], node[16];
	static const char *const models[] = {"NVIDIA-H100-80GB-HBM3", "NVIDIA-A100-SXM4-80GB"};
	for (int i = 0; i < 16; i++) {
		snprintf(uid, sizeof(uid), "node-uid-%d", i);
		snprintf(node, sizeof(node), "n%d", i);
		struct store_node_cap c = {.node_uid = uid,
					   .node = node,
					   .model = models[i % 2],
					   .start = from - 86400,
					   .gpus = 8};
		store_ledger_put_node(l, &c);
	}
	for (long i = 0; i < n; i++) {
		snprintf(uid, sizeof(uid), "uid-%ld", i);
		snprintf(pod, sizeof(pod), "pod-%ld", i);
		snprintf(ns, sizeof(ns), "ns-%ld", i % 20);
		snprintf(node, sizeof(node), "n%ld", i % 16);
		int64_t s = from + rand() % (30 * 86400);
		struct store_alloc a = {.host_uid = uid,
					.start = s,
					.end = s + 1 + rand() % 600,
					.end_kind = "finished",
					.ns = ns,
					.pod = pod,
					.pod_uid = uid,
					.queue = "q",
					.node = node,
					.model = models[i % 2],
					.sharing = "whole",
					.gpus = 0.125,
					.detail = "gpu x1"};
		store_ledger_put(l, &a);
		if (i % 50000 == 49999) {
			store_txn_commit(st);
			store_txn_begin(st);
		}
	}
	store_txn_commit(st);
	store_ledger_set_seen(l, now);
	store_ledger_close(l);
	store_close(st);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "events") == 0)
		return events(argc > 2 ? atoi(argv[2]) : 20000,
			      argc > 3 && strcmp(argv[3], "batch") == 0);
	if (argc >= 4 && strcmp(argv[1], "fill") == 0)
		return fill(argv[2], atol(argv[3]));
	fprintf(stderr, "usage: ledger_bench events [N [batch]] | fill KUBICLE_HOME N\n");
	return 2;
}
