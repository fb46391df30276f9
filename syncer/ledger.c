/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU allocation ledger (docs/finops.md): for each tenant pod, every
 * interval during which its host pod held GPU capacity, what it held and
 * on which node; and the host's GPU capacity per node over time. Rows go
 * to the tenant's store (store.h, "the GPU allocation ledger").
 *
 * DESIGN
 * Only the host's timestamps count, so that the same host history gives
 * the same rows whenever and however often it is read (a restart, a
 * relist): an interval starts at the host pod's PodScheduled=True
 * lastTransitionTime (the scheduler's binding, kube-scheduler's
 * bind/updatePod writes it; KAI's and Volcano's binders likewise) and ends
 * when the pod is terminal (phase Succeeded or Failed: the kubelet's device
 * manager and the scheduler's cache stop counting a terminal pod) at its
 * last container's terminated finishedAt, or when the host pod is deleted:
 * at its deletionTimestamp (kube-apiserver sets it to the deletion time
 * plus the grace period: the kubelet's deadline; BeforeDelete in
 * k8s.io/apiserver/pkg/registry/rest/delete.go) or the moment the DELETED
 * event arrived, whichever is earlier. A pod deleted while the syncer was
 * down is closed at the first list that misses it ("gone"): an upper
 * bound, the truth lying between the last "seen" mark (store_ledger_seen)
 * and then. Rows are keyed by (host pod uid, start) and upserted.
 * Capacity: an informer on the host's nodes; a node's interval starts at
 * its creationTimestamp (or where its previous interval ended) and ends at
 * its deletion (deletionTimestamp, else when seen gone); a change of its
 * GPUs or model closes one interval and opens the next at the moment it
 * was seen. Every tenant's syncer records the nodes it sees; `kubicle
 * usage` merges them by node uid.
 * Writes are skipped when a host event changes nothing in a row (the last
 * row written per host pod is remembered). Loop thread only.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/prom.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

/* ---- what a node offers ------------------------------------------------------ */

static double label_num(const json_t *labels, const char *key)
{
	const char *v = jstr(labels, key);
	double d;
	return v && kb_quantity_parse(v, &d) == 0 && d > 0 && d < 1e12 ? d : 0;
}

static double alloc_num(const json_t *node, const char *key)
{
	const json_t *a = kb_json_path(node, "status.allocatable");
	const char *v = jstr(a, key);
	double d;
	return v && kb_quantity_parse(v, &d) == 0 && d > 0 && d < 1e12 ? d : 0;
}

/* MIG slices of a whole GPU of `model`: an A30 has 4 compute slices, the
 * A100 and H100 families 7 (NVIDIA's MIG user guide, supported profiles). */
static int model_slices(const char *model)
{
	return model && strstr(model, "A30") ? 4 : 7;
}

void syncer_gpu_node_info(const json_t *node, struct syncer_gpu_node *out)
{
	const json_t *labels = kb_json_path(node, "metadata.labels");
	memset(out, 0, sizeof(*out));
	out->model = jstr(labels, "nvidia.com/gpu.product");
	if (!out->model)
		out->model = "";
	out->mem_mib = label_num(labels, "nvidia.com/gpu.memory");
	out->replicas = (int)label_num(labels, "nvidia.com/gpu.replicas");
	if (out->replicas < 1)
		out->replicas = 1;
	out->slices = model_slices(out->model);
	double count = label_num(labels, "nvidia.com/gpu.count");
	double alloc = alloc_num(node, "nvidia.com/gpu");
	if (alloc > 0)
		out->gpus = floor(alloc / out->replicas);
	else if (count > 0)
		out->gpus = floor(count);
	if (count > 0 && (alloc <= 0 || out->replicas > 1 || count < out->gpus))
		out->gpus = floor(count); /* GPU feature discovery's physical count */
	if (out->gpus <= 0) {             /* a MIG-only node without the count: its slices */
		const char *k;
		json_t *v;
		double sevenths = 0;
		json_object_foreach ((json_t *)kb_json_path(node, "status.allocatable"), k, v) {
			if (strncmp(k, "nvidia.com/mig-", 15) != 0)
				continue;
			int n = atoi(k + 15);
			sevenths += alloc_num(node, k) * (n > 0 ? n : out->slices);
		}
		out->gpus = floor(sevenths / out->slices);
	}
}

/* ---- what a pod holds ------------------------------------------------------------ */

/* A container's amount of `key` (requests, else limits; extended resources
 * have both equal), 0 when absent. */
static double ctr_qty(const json_t *c, const char *key)
{
	const char *v = jstr(kb_json_path(c, "resources.requests"), key);
	if (!v)
		v = jstr(kb_json_path(c, "resources.limits"), key);
	double d;
	return v && kb_quantity_parse(v, &d) == 0 && d > 0 && d < 1e9 ? d : 0;
}

struct ctr_share {
	double gpus;      /* GPUs held */
	int mode;         /* bit per sharing form */
	char detail[160]; /* what it asked for */
};

enum { M_WHOLE = 1, M_MIG = 2, M_HAMI = 4, M_SLICE = 8 };

static void detail_add(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void detail_add(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	if (n + 2 >= len)
		return;
	if (n)
		buf[n++] = ' ', buf[n] = '\0';
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

/*
 * One container's GPUs on node n:
 * - MIG: each nvidia.com/mig-<N>g.<M>gb is N slices of the model's total;
 * - HAMi (nvidia.com/gpumem, gpumem-percentage, gpucores): each of its
 *   nvidia.com/gpu vGPUs (one when it names none) takes the larger of its
 *   memory share (gpumem over the device's memory, or the percentage) and
 *   its core share (gpucores / 100), at most one device: a device is full
 *   when either runs out (HAMi's fit checks both, score.go);
 * - time-sliced (the node's nvidia.com/gpu.replicas R > 1): each
 *   nvidia.com/gpu is 1/R of a device;
 * - otherwise each nvidia.com/gpu is one device.
 */
static void ctr_share(const json_t *c, const struct syncer_gpu_node *n, struct ctr_share *out)
{
	memset(out, 0, sizeof(*out));
	const char *k;
	json_t *v;
	const json_t *req = kb_json_path(c, "resources.requests");
	const json_t *lim = kb_json_path(c, "resources.limits");
	for (int pass = 0; pass < 2; pass++) {
		json_object_foreach ((json_t *)(pass ? lim : req), k, v) {
			if (strncmp(k, "nvidia.com/mig-", 15) != 0 ||
			    (pass && json_object_get(req, k)))
				continue;
			double cnt = ctr_qty(c, k);
			int sl = atoi(k + 15);
			if (cnt <= 0)
				continue;
			if (sl < 1 || sl > n->slices)
				sl = n->slices;
			out->gpus += cnt * sl / n->slices;
			out->mode |= M_MIG;
			detail_add(out->detail, sizeof(out->detail), "%s x%g", k + 11, cnt);
		}
	}
	double gpu = ctr_qty(c, "nvidia.com/gpu");
	double mem = ctr_qty(c, "nvidia.com/gpumem"),
	       pct = ctr_qty(c, "nvidia.com/gpumem-percentage");
	double cores = ctr_qty(c, "nvidia.com/gpucores");
	if (mem > 0 || pct > 0 || cores > 0) {
		double share = cores / 100;
		if (pct > 0)
			share = fmax(share, pct / 100);
		if (mem > 0)
			share = fmax(share, n->mem_mib > 0 ? mem / n->mem_mib : 1);
		if (share <= 0 || share > 1)
			share = 1;
		double vgpus = gpu > 0 ? gpu : 1;
		out->gpus += vgpus * share;
		out->mode |= M_HAMI;
		detail_add(out->detail, sizeof(out->detail), "hami %gx(mem %g%s, cores %g%%)",
			   vgpus, mem > 0 ? mem : pct, mem > 0 ? "MiB" : "%", cores);
	} else if (gpu > 0 && n->replicas > 1) {
		out->gpus += gpu / n->replicas;
		out->mode |= M_SLICE;
		detail_add(out->detail, sizeof(out->detail), "gpu x%g of %d replicas", gpu,
			   n->replicas);
	} else if (gpu > 0) {
		out->gpus += gpu;
		out->mode |= M_WHOLE;
		detail_add(out->detail, sizeof(out->detail), "gpu x%g", gpu);
	}
}

static bool is_sidecar(const json_t *c)
{
	const char *rp = jstr(c, "restartPolicy");
	return rp && strcmp(rp, "Always") == 0;
}

/* KAI's fraction annotations: gpu-fraction (0 < f <= 1), or gpu-memory
 * (MiB) over the device's memory, on gpu-fraction-num-devices devices
 * (KAI's pkg/common/resources/gpu_sharing.go reads the same three). */
static bool kai_share(const json_t *hp, const struct syncer_gpu_node *n, struct syncer_share *out)
{
	memset(out, 0, sizeof(*out));
	const json_t *ann = kb_json_path(hp, "metadata.annotations");
	const char *frac = jstr(ann, "gpu-fraction"), *mem = jstr(ann, "gpu-memory");
	const char *dev = jstr(ann, "gpu-fraction-num-devices");
	if (!frac && !mem)
		return false;
	double ndev = dev ? strtod(dev, NULL) : 1;
	if (!(ndev >= 1 && ndev <= 1024))
		ndev = 1;
	ndev = floor(ndev);
	double f = 1;
	if (frac) {
		f = strtod(frac, NULL);
		if (!(f > 0 && f <= 1))
			f = 1;
		snprintf(out->detail, sizeof(out->detail), "gpu-fraction %s x%g", frac, ndev);
	} else {
		double mib = strtod(mem, NULL);
		f = n->mem_mib > 0 && mib > 0 && mib < n->mem_mib ? mib / n->mem_mib : 1;
		snprintf(out->detail, sizeof(out->detail), "gpu-memory %sMiB of %gMiB x%g", mem,
			 n->mem_mib, ndev);
	}
	out->gpus = f * ndev;
	out->sharing = "fraction";
	return true;
}

/*
 * The pod's effective GPUs as kube computes an effective request
 * (k8s.io/component-helpers resource/helpers.go, PodRequests): app
 * containers and sidecars summed; each init step (a plain init container
 * plus the sidecars started before it) may need more; the largest wins.
 */
int syncer_pod_share(const json_t *hp, const struct syncer_gpu_node *n, struct syncer_share *out)
{
	memset(out, 0, sizeof(*out));
	struct syncer_share kai;
	bool frac = kai_share(hp, n, &kai);
	const json_t *spec = json_object_get(hp, "spec");
	double sum = 0, sidecars = 0, top = 0;
	int mode = 0;
	char detail[sizeof(out->detail)] = "";
	size_t i;
	json_t *c;
	struct ctr_share cs;
	json_array_foreach (json_object_get(spec, "containers"), i, c) {
		ctr_share(c, n, &cs);
		sum += cs.gpus;
		mode |= cs.mode;
		if (cs.detail[0])
			detail_add(detail, sizeof(detail), "%s", cs.detail);
	}
	json_array_foreach (json_object_get(spec, "initContainers"), i, c) {
		ctr_share(c, n, &cs);
		if (cs.gpus <= 0)
			continue;
		mode |= cs.mode;
		detail_add(detail, sizeof(detail), "init:%s", cs.detail);
		if (is_sidecar(c)) {
			sum += cs.gpus;
			sidecars += cs.gpus;
		} else {
			top = fmax(top, cs.gpus + sidecars);
		}
	}
	out->gpus = fmax(sum, top);
	/* KAI's annotations beside device resources (a host scheduler that
	 * takes both): the larger counts, never the smaller */
	if (frac && kai.gpus >= out->gpus) {
		*out = kai;
		return 0;
	}
	if (out->gpus <= 0)
		return -ENOENT;
	out->sharing = mode & M_MIG     ? "mig"
		       : mode & M_HAMI  ? "hami"
		       : mode & M_SLICE ? "timeslice"
					: "whole";
	snprintf(out->detail, sizeof(out->detail), "%s", detail);
	return 0;
}

/* ---- when a pod held it ------------------------------------------------------- */

static int64_t ts(const char *s)
{
	time_t t;
	return s && kb_time_parse(s, &t) == 0 ? (int64_t)t : 0;
}

/* The latest finishedAt of the pod's terminated containers; 0 unless every
 * app container it reports has terminated. */
static int64_t finished_at(const json_t *status)
{
	int64_t last = 0;
	size_t i;
	json_t *cs;
	const json_t *all = json_object_get(status, "containerStatuses");
	json_array_foreach (all, i, cs) {
		int64_t f = ts(jstr(kb_json_path(cs, "state.terminated"), "finishedAt"));
		if (!f)
			return 0;
		if (f > last)
			last = f;
	}
	return last;
}

/* The last condition transition: when a terminal pod without container
 * times (evicted, rejected) was seen so by its kubelet. */
static int64_t last_transition(const json_t *status)
{
	int64_t last = 0, t;
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(status, "conditions"), i, c)
		if ((t = ts(jstr(c, "lastTransitionTime"))) > last)
			last = t;
	return last;
}

int syncer_pod_interval(const json_t *hp, bool deleted, int64_t now, struct syncer_interval *out)
{
	const json_t *status = json_object_get(hp, "status");
	size_t i;
	json_t *c;
	memset(out, 0, sizeof(*out));
	json_array_foreach (json_object_get(status, "conditions"), i, c) {
		const char *type = jstr(c, "type"), *st = jstr(c, "status");
		if (type && st && strcmp(type, "PodScheduled") == 0 && strcmp(st, "True") == 0)
			out->start = ts(jstr(c, "lastTransitionTime"));
	}
	const char *node = jstr(json_object_get(hp, "spec"), "nodeName");
	if (!out->start || !node || !*node)
		return -ENOENT; /* never bound: held nothing */
	const char *phase = jstr(status, "phase");
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)) {
		int64_t f = finished_at(status);
		out->end = f ? f : last_transition(status);
		out->end_kind = "finished";
	}
	if (!out->end && deleted) {
		int64_t d = ts(meta_str(hp, "deletionTimestamp"));
		out->end = d && d < now ? d : now;
		out->end_kind = d && d < now ? "deleted" : "gone";
	}
	if (out->end && out->end < out->start)
		out->end = out->start;
	return 0;
}

static void showback_refresh(struct syncer_ledger *l);

/* ---- the ledger -------------------------------------------------------------- */

struct syncer_ledger {
	store_ledger_t *db;
	store_t *st; /* the tenant store (showback objects) */
	struct host_informer *nodes;
	char tenant[64], queue[128];
	int64_t retention_s, started, pruned;
	json_t *written;              /* host pod uid -> signature of the row last written */
	json_t *waiting;              /* host pod uid -> host pod whose node was unknown */
	json_t *open;                 /* node uid -> {start, gpus, model} of its open interval */
	json_t *ends;                 /* node uid -> end of its last closed interval */
	size_t puts;                  /* rows written (benchmarks) */
	char *prices_file;            /* NULL: no costs in GPUUsage */
	json_t *prices;               /* its figures (syncer_prices_load), NULL: none valid */
	struct timespec prices_mtime; /* of the file read last */
	off_t prices_size;
};

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static json_t *node_named(struct syncer_ledger *l, const char *name)
{
	return l->nodes && name ? json_object_get(host_informer_cache(l->nodes), name) : NULL;
}

static void pod_event(struct syncer_ledger *l, const json_t *hp, bool deleted)
{
	const char *uid = meta_str(hp, "uid");
	const json_t *ann = kb_json_path(hp, "metadata.annotations");
	struct syncer_interval iv;
	if (!uid || syncer_pod_interval(hp, deleted, now_s(), &iv) < 0)
		return;
	const char *node = jstr(json_object_get(hp, "spec"), "nodeName");
	json_t *nobj = node_named(l, node);
	struct syncer_gpu_node ni;
	syncer_gpu_node_info(nobj, &ni);
	struct syncer_share sh;
	if (syncer_pod_share(hp, &ni, &sh) < 0)
		return;
	if (!nobj && !deleted && !iv.end)
		json_object_set(l->waiting, uid, (json_t *)hp);
	else
		json_object_del(l->waiting, uid);
	char sig[512];
	snprintf(sig, sizeof(sig), "%lld|%lld|%.9g|%s|%s|%s", (long long)iv.start,
		 (long long)iv.end, sh.gpus, node, ni.model, sh.detail);
	const char *had = jstr(l->written, uid);
	if (had && strcmp(had, sig) == 0)
		return;
	struct store_alloc a = {.host_uid = uid,
				.start = iv.start,
				.end = iv.end,
				.end_kind = iv.end_kind,
				.ns = jstr(ann, ANN_NAMESPACE),
				.pod = jstr(ann, ANN_NAME),
				.pod_uid = jstr(ann, ANN_UID),
				.queue = l->queue,
				.node = node,
				.model = ni.model,
				.sharing = sh.sharing,
				.gpus = sh.gpus,
				.detail = sh.detail};
	if (!a.ns || !a.pod)
		return;
	if (store_ledger_put(l->db, &a) == 0) {
		l->puts++;
		json_object_set_new(l->written, uid, json_string(sig));
	}
}

void syncer_ledger_pod(struct syncer_ledger *l, const char *type, const json_t *hp)
{
	if (!l)
		return;
	bool deleted = strcmp(type, "DELETED") == 0;
	pod_event(l, hp, deleted);
	if (deleted) {
		const char *uid = meta_str(hp, "uid");
		json_object_del(l->written, uid ? uid : "");
		json_object_del(l->waiting, uid ? uid : "");
	}
}

void syncer_ledger_pods_listed(struct syncer_ledger *l, const json_t *items)
{
	if (!l)
		return;
	json_t *keep = json_object();
	size_t i;
	json_t *hp;
	json_array_foreach (items, i, hp) {
		const char *uid = meta_str(hp, "uid");
		if (uid)
			json_object_set_new(keep, uid, json_true());
		pod_event(l, hp, false);
	}
	store_ledger_close_missing(l->db, false, keep, now_s());
	/* what was remembered of pods now gone */
	const char *k;
	void *tmp;
	json_t *v;
	json_object_foreach_safe (l->written, tmp, k, v)
		if (!json_object_get(keep, k))
			json_object_del(l->written, k);
	json_decref(keep);
	store_ledger_set_seen(l->db, now_s());
}

/* ---- capacity ----------------------------------------------------------------- */

static void node_close(struct syncer_ledger *l, const char *uid, const char *name, int64_t end,
		       const char *kind)
{
	json_t *o = json_object_get(l->open, uid);
	if (!o)
		return;
	struct store_node_cap c = {.node_uid = uid,
				   .node = name,
				   .model = jstr(o, "model"),
				   .start = json_integer_value(json_object_get(o, "start")),
				   .end = end,
				   .end_kind = kind,
				   .gpus = json_real_value(json_object_get(o, "gpus"))};
	if (c.end < c.start)
		c.end = c.start;
	store_ledger_put_node(l->db, &c);
	json_object_set_new(l->ends, uid, json_integer(c.end));
	json_object_del(l->open, uid);
}

static void node_seen(struct syncer_ledger *l, const json_t *node)
{
	const char *uid = meta_str(node, "uid"), *name = meta_str(node, "name");
	if (!uid || !name)
		return;
	struct syncer_gpu_node ni;
	syncer_gpu_node_info(node, &ni);
	json_t *o = json_object_get(l->open, uid);
	int64_t now = now_s();
	if (o && json_real_value(json_object_get(o, "gpus")) == ni.gpus &&
	    strcmp(jstr(o, "model"), ni.model) == 0)
		return;
	int64_t start = ts(meta_str(node, "creationTimestamp"));
	if (o) { /* changed: seen now */
		node_close(l, uid, name, now, "changed");
		start = now;
	}
	json_int_t prev = json_integer_value(json_object_get(l->ends, uid));
	if (start < prev)
		start = prev;
	if (!start)
		start = now;
	if (ni.gpus <= 0)
		return; /* not (or no longer) a GPU node */
	struct store_node_cap c = {
	    .node_uid = uid, .node = name, .model = ni.model, .start = start, .gpus = ni.gpus};
	if (store_ledger_put_node(l->db, &c) == 0)
		json_object_set_new(l->open, uid,
				    json_pack("{s:I,s:f,s:s}", "start", (json_int_t)start, "gpus",
					      ni.gpus, "model", ni.model));
}

/* The open pods whose node arrived: their rows now with its model. */
static void retry_waiting(struct syncer_ledger *l, const char *node)
{
	const char *k;
	void *tmp;
	json_t *hp;
	json_object_foreach_safe (l->waiting, tmp, k, hp) {
		const char *n = jstr(json_object_get(hp, "spec"), "nodeName");
		if (n && strcmp(n, node) == 0) {
			json_incref(hp);
			pod_event(l, hp, false);
			json_decref(hp);
		}
	}
}

static void on_node(const char *type, json_t *node, void *arg)
{
	struct syncer_ledger *l = arg;
	const char *uid = meta_str(node, "uid"), *name = meta_str(node, "name");
	if (!uid || !name)
		return;
	if (strcmp(type, "DELETED") == 0) {
		int64_t now = now_s(), d = ts(meta_str(node, "deletionTimestamp"));
		node_close(l, uid, name, d && d <= now ? d : now,
			   d && d <= now ? "deleted" : "gone");
		return;
	}
	node_seen(l, node);
	retry_waiting(l, name);
}

static void on_nodes_listed(json_t *items, void *arg)
{
	struct syncer_ledger *l = arg;
	json_t *keep = json_object();
	size_t i;
	json_t *n;
	json_array_foreach (items, i, n) {
		const char *uid = meta_str(n, "uid");
		if (uid)
			json_object_set_new(keep, uid, json_true());
	}
	int64_t now = now_s();
	const char *k;
	void *tmp;
	json_t *o;
	json_object_foreach_safe (l->open, tmp, k, o)
		if (!json_object_get(keep, k))
			node_close(l, k, NULL, now, "gone");
	store_ledger_close_missing(l->db, true, keep, now);
	json_decref(keep);
	json_array_foreach (items, i, n) {
		node_seen(l, n);
		retry_waiting(l, meta_str(n, "name") ? meta_str(n, "name") : "");
	}
}

/* What the node cache keeps: labels, uid, times, allocatable. */
static json_t *node_view(const json_t *n)
{
	const json_t *m = json_object_get(n, "metadata");
	json_t *meta = json_object();
	static const char *const keys[] = {"name", "uid", "labels", "creationTimestamp",
					   "deletionTimestamp"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		if (json_object_get(m, keys[i]))
			json_object_set(meta, keys[i], json_object_get(m, keys[i]));
	json_t *v = json_pack("{s:o}", "metadata", meta);
	const json_t *a = kb_json_path(n, "status.allocatable");
	if (v && a)
		json_object_set_new(v, "status", json_pack("{s:O}", "allocatable", a));
	return v;
}

static void load_open(const struct store_node_cap *c, void *arg)
{
	struct syncer_ledger *l = arg;
	if (!c->end) {
		json_object_set_new(l->open, c->node_uid,
				    json_pack("{s:I,s:f,s:s}", "start", (json_int_t)c->start,
					      "gpus", c->gpus, "model", c->model ? c->model : ""));
	} else if (c->end > json_integer_value(json_object_get(l->ends, c->node_uid))) {
		json_object_set_new(l->ends, c->node_uid, json_integer(c->end));
	}
}

int syncer_ledger_start(uv_loop_t *loop, kb_httpc_t *http, store_t *st,
			const struct syncer_ledger_opts *o, struct syncer_ledger **out)
{
	struct syncer_ledger *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	int rc = store_ledger_open(st, &l->db);
	if (rc < 0) {
		free(l);
		return rc;
	}
	l->st = st;
	snprintf(l->tenant, sizeof(l->tenant), "%s", o->tenant);
	/* a store restored from another tenant's snapshot (kubicle restore)
	 * holds that tenant's history: not this one's to report again */
	char *was = NULL;
	if (store_kv_get(st, "gpu-ledger-tenant", &was) == 0 && strcmp(was, l->tenant) != 0) {
		kb_info("syncer", "GPU ledger of tenant %s dropped: this store is tenant %s's now",
			was, l->tenant);
		store_ledger_clear(l->db);
	}
	if (!was || strcmp(was, l->tenant) != 0)
		store_kv_set(st, "gpu-ledger-tenant", l->tenant);
	free(was);
	snprintf(l->queue, sizeof(l->queue), "%s", o->queue ? o->queue : "");
	l->retention_s = o->retention_s > 0 ? o->retention_s : SYNCER_LEDGER_RETENTION;
	l->prices_file = o->prices_file ? strdup(o->prices_file) : NULL;
	l->started = now_s();
	l->written = json_object();
	l->waiting = json_object();
	l->open = json_object();
	l->ends = json_object();
	store_ledger_each_node(l->db, 0, 0, load_open, l);
	syncer_ledger_tick(l);
	if (http) {
		struct host_informer_opts no = {.path = "/api/v1/nodes",
						.cache_view = node_view,
						.on_event = on_node,
						.on_synced = on_nodes_listed,
						.arg = l};
		if ((rc = host_informer_start(loop, http, &no, &l->nodes)) < 0) {
			syncer_ledger_stop(l);
			return rc;
		}
	}
	*out = l;
	return 0;
}

void syncer_ledger_tick(struct syncer_ledger *l)
{
	if (!l)
		return;
	int64_t now = now_s();
	if (now - l->pruned >= 3600) {
		store_ledger_prune(l->db, now - l->retention_s);
		l->pruned = now;
	}
	showback_refresh(l);
}

void syncer_ledger_seen(struct syncer_ledger *l)
{
	if (l)
		store_ledger_set_seen(l->db, now_s());
}

void syncer_ledger_stop(struct syncer_ledger *l)
{
	if (!l)
		return;
	if (l->nodes)
		host_informer_stop(l->nodes);
	store_ledger_close(l->db);
	free(l->prices_file);
	json_decref(l->prices);
	json_decref(l->written);
	json_decref(l->waiting);
	json_decref(l->open);
	json_decref(l->ends);
	free(l);
}

size_t syncer_ledger_puts(const struct syncer_ledger *l)
{
	return l ? l->puts : 0;
}

/* ---- showback inside the tenant ------------------------------------------------- */

/*
 * The tenant's own figures, readable with kubectl (`kubectl get gpuusage
 * -A`): a CustomResourceDefinition gpuusages.kubicle.dev that the syncer
 * writes into the tenant's store once it has something to show, and one
 * GPUUsage "gpu-usage" per namespace whose pods held GPUs this month:
 * usage.gpuHoursToday (since midnight UTC), usage.gpuHoursThisMonth,
 * usage.gpusNow, from the ledger, refreshed at each resync (30 s). RBAC
 * applies as to any kind; a tenant sees only its own store. The tenant's
 * admin could edit them: the next refresh writes the ledger's figures back
 * (the ledger itself is not reachable through the API).
 */
#define SB_CRD  "gpuusages.kubicle.dev"
#define SB_RES  "kubicle.dev/gpuusages"
#define SB_NAME "gpu-usage"

static json_t *with_cost_column(json_t *crd);

static json_t *showback_crd(void)
{
	return with_cost_column(json_pack(
	    "{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:s,s:{s:s,s:s,s:s,s:s},s:{s:s},s:[{s:s,s:b,s:b,"
	    "s:{s:{s:s,s:{s:{s:s},s:{s:s},s:{s:s},s:{s:s,s:b}}}},s:[{s:s,s:s,s:s,s:s},"
	    "{s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s},{s:s,s:s,s:s}]}]}}",
	    "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition", "metadata",
	    "name", SB_CRD, "labels", "app.kubernetes.io/managed-by", "kubicle", "spec", "group",
	    "kubicle.dev", "scope", "Namespaced", "names", "plural", "gpuusages", "singular",
	    "gpuusage", "kind", "GPUUsage", "listKind", "GPUUsageList", "conversion", "strategy",
	    "None", "versions", "name", "v1", "served", 1, "storage", 1, "schema",
	    "openAPIV3Schema", "type", "object", "properties", "apiVersion", "type", "string",
	    "kind", "type", "string", "metadata", "type", "object", "usage", "type", "object",
	    "x-kubernetes-preserve-unknown-fields", 1, "additionalPrinterColumns", "name", "GPUs",
	    "type", "number", "jsonPath", ".usage.gpusNow", "description", "GPUs held now", "name",
	    "Today", "type", "number", "jsonPath", ".usage.gpuHoursToday", "description",
	    "GPU-hours since midnight UTC", "name", "Month", "type", "number", "jsonPath",
	    ".usage.gpuHoursThisMonth", "description", "GPU-hours this month (UTC)", "name", "Age",
	    "type", "date", "jsonPath", ".metadata.creationTimestamp"));
}

/* The cost column added to the CRD's printer columns (before Age). */
static json_t *with_cost_column(json_t *crd)
{
	json_t *cols = json_object_get(
	    json_array_get(json_object_get(json_object_get(crd, "spec"), "versions"), 0),
	    "additionalPrinterColumns");
	json_array_insert_new(cols, json_array_size(cols) - 1,
			      json_pack("{s:s,s:s,s:s,s:s}", "name", "Cost", "type", "number",
					"jsonPath", ".usage.costThisMonth", "description",
					"cost this month at the platform's prices (kubicle "
					"serve --gpu-prices)"));
	return crd;
}

static bool has_cost_column(const json_t *crd)
{
	const json_t *cols = json_object_get(
	    json_array_get(json_object_get(json_object_get(crd, "spec"), "versions"), 0),
	    "additionalPrinterColumns");
	size_t i;
	json_t *c;
	json_array_foreach ((json_t *)cols, i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		if (name && strcmp(name, "Cost") == 0)
			return true;
	}
	return false;
}

struct sb_sum {
	int64_t day, month, now;
	const json_t *prices; /* NULL: no costs */
	json_t *ns; /* namespace -> [today s, month s, gpus now, today cost, month cost] */
};

static json_t *sb_zero(void)
{
	return json_pack("[f,f,f,f,f]", 0.0, 0.0, 0.0, 0.0, 0.0);
}

static void sb_add(json_t *v, size_t i, double x)
{
	json_real_set(json_array_get(v, i), json_real_value(json_array_get(v, i)) + x);
}

static void sb_row(const struct store_alloc *a, void *arg)
{
	struct sb_sum *s = arg;
	json_t *v = json_object_get(s->ns, a->ns);
	if (!v)
		json_object_set_new(s->ns, a->ns, v = sb_zero());
	int64_t end = a->end && a->end < s->now ? a->end : s->now;
	double price = s->prices ? syncer_price_of(s->prices, a->model) : 0;
	for (size_t i = 0; i < 2; i++) {
		int64_t since = i ? s->month : s->day;
		int64_t from = a->start > since ? a->start : since;
		if (end > from) {
			double secs = a->gpus * (double)(end - from);
			sb_add(v, i, secs);
			sb_add(v, 3 + i, secs / 3600 * price);
		}
	}
	if (!a->end || a->end > s->now)
		sb_add(v, 2, a->gpus);
}

/* GPU-hours to the millionth: to the hundredth of a GPU-second */
static double r6(double v)
{
	return round(v * 1e6) / 1e6;
}

static void showback_put(struct syncer_ledger *l, const char *ns, const json_t *v)
{
	json_t *nsobj = NULL, *old = NULL;
	if (store_get(l->st, "/namespaces", "", ns, &nsobj) < 0)
		return; /* gone: nothing to show it in */
	json_decref(nsobj);
	json_t *usage = json_pack(
	    "{s:f,s:f,s:f}", "gpuHoursToday", r6(json_real_value(json_array_get(v, 0)) / 3600),
	    "gpuHoursThisMonth", r6(json_real_value(json_array_get(v, 1)) / 3600), "gpusNow",
	    r6(json_real_value(json_array_get(v, 2))));
	if (l->prices) { /* at the platform's prices (kubicle usage's rule) */
		json_object_set_new(usage, "costToday",
				    json_real(r6(json_real_value(json_array_get(v, 3)))));
		json_object_set_new(usage, "costThisMonth",
				    json_real(r6(json_real_value(json_array_get(v, 4)))));
		json_object_set(usage, "currency", json_object_get(l->prices, "currency"));
	}
	store_get(l->st, SB_RES, ns, SB_NAME, &old);
	if (!old || !json_equal(json_object_get(old, "usage"), usage)) {
		json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s},s:O}", "apiVersion", "kubicle.dev/v1",
				      "kind", "GPUUsage", "metadata", "name", SB_NAME, "namespace",
				      ns, "usage", usage);
		syncer_store_put(l->st, SB_RES, ns, SB_NAME, o, old);
		json_decref(o);
	}
	json_decref(usage);
	json_decref(old);
}

/* Reads the price file again when it changed (or came or went); a bad
 * one is logged and leaves no costs shown rather than old ones. */
static void prices_reload(struct syncer_ledger *l)
{
	struct stat sb;
	if (!l->prices_file)
		return;
	if (stat(l->prices_file, &sb) < 0) {
		if (l->prices)
			kb_info("syncer", "GPU prices: %s is gone: no costs shown", l->prices_file);
		json_decref(l->prices);
		l->prices = NULL;
		l->prices_size = -1;
		return;
	}
	if (sb.st_mtim.tv_sec == l->prices_mtime.tv_sec &&
	    sb.st_mtim.tv_nsec == l->prices_mtime.tv_nsec && sb.st_size == l->prices_size)
		return;
	l->prices_mtime = sb.st_mtim;
	l->prices_size = sb.st_size;
	char err[512];
	json_t *p = NULL;
	if (syncer_prices_load(l->prices_file, &p, err, sizeof(err)) < 0)
		kb_warn("syncer", "GPU prices not used: %s", err);
	json_decref(l->prices);
	l->prices = p;
}

static void showback_refresh(struct syncer_ledger *l)
{
	if (!l->st)
		return;
	prices_reload(l);
	struct sb_sum s = {.now = now_s(), .prices = l->prices};
	time_t t = (time_t)s.now;
	struct tm tm;
	gmtime_r(&t, &tm);
	s.day = s.now - (tm.tm_hour * 3600 + tm.tm_min * 60 + tm.tm_sec);
	s.month = s.day - (int64_t)(tm.tm_mday - 1) * 86400;
	s.ns = json_object();
	store_ledger_each(l->db, s.month, 0, sb_row, &s);
	json_t *crd = NULL;
	store_get(l->st, "apiextensions.k8s.io/customresourcedefinitions", "", SB_CRD, &crd);
	if (!crd && json_object_size(s.ns)) {
		crd = showback_crd();
		if (syncer_store_put(l->st, "apiextensions.k8s.io/customresourcedefinitions", "",
				     SB_CRD, crd, NULL) < 0) {
			json_decref(crd);
			crd = NULL;
		}
	} else if (crd && !has_cost_column(crd)) { /* written by an older Kubicle */
		json_t *want = showback_crd();
		json_t *upd = json_deep_copy(crd);
		json_object_set(upd, "spec", json_object_get(want, "spec"));
		syncer_store_put(l->st, "apiextensions.k8s.io/customresourcedefinitions", "",
				 SB_CRD, upd, crd);
		json_decref(upd);
		json_decref(want);
	}
	if (crd) {
		/* namespaces with nothing this month any more show zeros */
		struct store_list_req lr = {.res = SB_RES};
		struct store_list_result res = {0};
		size_t i;
		json_t *o;
		if (store_list(l->st, &lr, &res) == 0) {
			json_array_foreach (res.items, i, o) {
				const char *ns = meta_str(o, "namespace");
				if (ns && !json_object_get(s.ns, ns))
					json_object_set_new(s.ns, ns, sb_zero());
			}
			json_decref(res.items);
			free(res.next);
		}
		const char *ns;
		json_t *v;
		json_object_foreach (s.ns, ns, v)
			showback_put(l, ns, v);
	}
	json_decref(crd);
	json_decref(s.ns);
}

/* ---- metrics ------------------------------------------------------------------- */

struct prom_sum {
	int64_t since, now;
	json_t *secs, *held; /* "ns\tmodel\tsharing" -> number */
};

static void sum_row(const struct store_alloc *a, void *arg)
{
	struct prom_sum *p = arg;
	char key[600];
	snprintf(key, sizeof(key), "%s\t%s\t%s", a->ns, a->model ? a->model : "",
		 a->sharing ? a->sharing : "");
	int64_t from = a->start > p->since ? a->start : p->since;
	int64_t to = a->end && a->end < p->now ? a->end : p->now;
	double s = to > from ? a->gpus * (double)(to - from) : 0;
	json_object_set_new(p->secs, key,
			    json_real(json_real_value(json_object_get(p->secs, key)) + s));
	if (!a->end || a->end > p->now)
		if (a->start <= p->now)
			json_object_set_new(
			    p->held, key,
			    json_real(json_real_value(json_object_get(p->held, key)) + a->gpus));
}

static void prom_map(struct kb_buf *b, const char *name, const json_t *m)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)m, k, v) {
		char buf[600];
		snprintf(buf, sizeof(buf), "%s", k);
		char *model = strchr(buf, '\t');
		char *sharing = model ? strchr(model + 1, '\t') : NULL;
		if (!sharing)
			continue;
		*model++ = '\0';
		*sharing++ = '\0';
		const char *l[] = {"namespace", buf, "model", model, "sharing", sharing};
		kb_prom_sample(b, name, NULL, l, 3, json_real_value(v));
	}
}

void syncer_ledger_prom(struct syncer_ledger *l, struct kb_buf *b)
{
	if (!l)
		return;
	struct prom_sum p = {.since = l->started, .now = now_s()};
	p.secs = json_object();
	p.held = json_object();
	store_ledger_each_recent(l->db, p.since, sum_row, &p);
	kb_prom_family(
	    b, "kubicle_gpu_allocated_seconds_total", "counter",
	    "GPU-seconds held by this tenant's pods on the host since the server "
	    "started (the ledger's intervals, host timestamps), by tenant namespace, GPU "
	    "model and sharing mode.");
	prom_map(b, "kubicle_gpu_allocated_seconds_total", p.secs);
	kb_prom_family(b, "kubicle_gpu_allocated", "gauge",
		       "GPUs (shares of devices) this tenant's pods hold on the host now.");
	prom_map(b, "kubicle_gpu_allocated", p.held);
	json_decref(p.secs);
	json_decref(p.held);
}
