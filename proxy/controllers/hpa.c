/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HorizontalPodAutoscaler controller, as kube-controller-manager's
 * (pkg/controller/podautoscaler): every autoscaler is reconciled every
 * SYNC_S seconds (--horizontal-pod-autoscaler-sync-period); it reads its
 * target through the scale subresource (proxy_scale_get), computes a
 * proposal per metric (hpa_calc.c), keeps the largest, normalizes it
 * (min/max, stabilization, behavior), writes the target's new size through
 * the scale path (proxy_scale_update) and its status, conditions and events
 * in kube's words. Resource and ContainerResource metrics come from the
 * tenant's resource metrics API (PodMetrics from the host's metrics-server
 * through the syncer); no custom or external metrics API exists here, so
 * Pods, Object and External metrics fail as kube's do without one.
 *
 * DESIGN: a metrics read goes to the host and answers on a later loop turn,
 * so a sync that needs metrics runs in two passes: the first lists the
 * target's pods, starts the read (proxy_metrics_pods) and returns; the
 * answer is kept in the autoscaler's memory (struct hpa_mem) and queues the
 * key again; the second pass reconciles with it from a fresh read of the
 * store. Nothing blocks the loop. The memory (recommendations and scale
 * events for stabilization and behavior, the read in flight) lives as long
 * as the autoscaler; a deleted one's read is cancelled. Loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/model/quantity.h"
#include "proxy/model/selector.h"

#define HPA_MANAGER "horizontal-pod-autoscaler"
#define HPA_API     "autoscaling/v2"
#define HPA_KIND    "HorizontalPodAutoscaler"
#define SYNC_S      15
#define ERR_LEN     1024
/* A metrics read not answered after this long is given up (the host is
 * taken as unreachable), so that a stuck read never stops an autoscaler. */
#define READ_MAX_MS 60000

/* What an autoscaler keeps between syncs. */
struct hpa_mem {
	struct ctrl *c;
	char *ns, *name;
	struct ctrl_hpa_history hist;
	void *call;       /* a metrics read in flight, or NULL */
	uint64_t call_ms; /* when it started (kb_now_ms) */
	bool answered;    /* an answer waits for the next sync */
	int err;          /* the answer: -errno (host unreachable), or... */
	long status;      /* ...the host's HTTP status */
	char message[512];
	json_t *items; /* PodMetrics (owned), with 200 */
};

static void mem_free(void *p)
{
	struct hpa_mem *m = p;
	if (!m)
		return;
	if (m->call)
		proxy_metrics_pods_cancel(m->c->px, m->call);
	ctrl_hpa_history_free(&m->hist);
	json_decref(m->items);
	free(m->ns);
	free(m->name);
	free(m);
}

int ctrl_hpa_init(struct ctrl *c)
{
	c->hpas = kmap_new(mem_free);
	return c->hpas ? 0 : -ENOMEM;
}

void ctrl_set_hpa_sync_period(ctrl_t *c, long seconds)
{
	c->hpa_sync_s = seconds;
}

void ctrl_hpa_free(struct ctrl *c)
{
	kmap_free(c->hpas); /* cancels the reads in flight */
	c->hpas = NULL;
}

static void mem_key(const char *ns, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", ns, name);
}

static struct hpa_mem *mem_of(struct ctrl *c, const char *ns, const char *name)
{
	char key[600];
	mem_key(ns, name, key, sizeof(key));
	struct hpa_mem *m = kmap_get(c->hpas, key);
	if (m)
		return m;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->c = c;
	m->ns = strdup(ns);
	m->name = strdup(name);
	if (!m->ns || !m->name || kmap_put(c->hpas, key, m) < 0) {
		mem_free(m);
		return NULL;
	}
	return m;
}

static void on_metrics(void *arg, int err, long status, json_t *items, const char *message)
{
	struct hpa_mem *m = arg;
	m->call = NULL;
	m->answered = true;
	m->err = err;
	m->status = status;
	snprintf(m->message, sizeof(m->message), "%s", message ? message : "");
	json_decref(m->items);
	m->items = err == 0 && status == 200 ? json_deep_copy(items) : NULL;
	ctrl_enqueue(m->c, "hpa", m->ns, m->name);
}

/* ---- one reconcile ------------------------------------------------------------------ */

struct hsync {
	struct ctrl *c;
	struct hpa_mem *m;
	json_t *hpa;   /* the autoscaler (owned) */
	json_t *st;    /* the status being written (owned) */
	json_t *scale; /* the target's Scale (owned) */
	const char *selector;
	int current, min, max;
	time_t now;
};

static void event(struct hsync *s, const char *type, const char *reason, const char *msg)
{
	ctrl_event(s->c, s->hpa, HPA_API, HPA_KIND, type, reason, HPA_MANAGER, "%s", msg);
}

static void condition(struct hsync *s, const char *type, bool ok, const char *reason,
		      const char *msg)
{
	ctrl_set_condition(s->st, type, ok ? "True" : "False", reason, msg, false);
}

/* getUnableComputeReplicaCountCondition: the event, then ScalingActive
 * False with the message (kept for the metric that fails first). */
struct failure {
	int count;
	char reason[64];
	char condition[ERR_LEN + 64];
	char error[ERR_LEN + 256]; /* the first failure, as computeReplicasForMetric returns */
};

static void metric_failed(struct hsync *s, struct failure *f, const char *reason, const char *inner,
			  const char *outer)
{
	event(s, "Warning", reason, inner);
	if (f->count++ > 0)
		return;
	snprintf(f->reason, sizeof(f->reason), "%s", reason);
	snprintf(f->condition, sizeof(f->condition),
		 "the HPA was unable to compute the replica count: %s", inner);
	snprintf(f->error, sizeof(f->error), "%s", outer);
}

/* ---- Resource and ContainerResource metrics ------------------------------------------- */

static const json_t *metrics_item(const json_t *items, const char *pod)
{
	size_t i;
	json_t *it;
	json_array_foreach (items, i, it) {
		const char *n = json_string_value(kb_json_path(it, "metadata.name"));
		if (n && strcmp(n, pod) == 0)
			return it;
	}
	return NULL;
}

/* A pod's usage of resource (milli-units) from its PodMetrics, summed over
 * its containers or the one named; -ENOENT when absent (getPodMetrics
 * drops a pod missing the resource in any container). */
static int usage_of(const json_t *item, const char *resource, const char *container, int64_t *out,
		    char *err, size_t errlen)
{
	json_t *cs = json_object_get(item, "containers");
	int64_t sum = 0;
	bool found = false;
	size_t i;
	json_t *ct;
	if (json_array_size(cs) == 0)
		return -ENOENT;
	json_array_foreach (cs, i, ct) {
		const char *n = json_string_value(json_object_get(ct, "name"));
		if (container && (!n || strcmp(n, container) != 0))
			continue;
		found = true;
		int64_t v;
		if (qty_parse(json_object_get(json_object_get(ct, "usage"), resource), &v) < 0)
			return -ENOENT;
		sum += v;
	}
	if (container && !found) {
		snprintf(err, errlen, "container %s not present in metrics for pod %s/%s",
			 container, json_string_value(kb_json_path(item, "metadata.namespace")),
			 json_string_value(kb_json_path(item, "metadata.name")));
		return -EINVAL;
	}
	*out = sum;
	return 0;
}

/* One container's request of resource added to *sum; kube's message when
 * it has none. */
static int add_request(const json_t *pod, const json_t *ct, const char *resource, int64_t *sum,
		       char *err, size_t errlen)
{
	const char *n = json_string_value(json_object_get(ct, "name"));
	json_t *q = json_object_get(kb_json_path(ct, "resources.requests"), resource);
	int64_t v;
	if (!q || qty_parse(q, &v) < 0) {
		snprintf(err, errlen, "missing request for %s in container %s of Pod %s", resource,
			 n ? n : "", json_string_value(kb_json_path(pod, "metadata.name")));
		return -EINVAL;
	}
	*sum += v;
	return 0;
}

/* calculatePodRequests for one pod: the requests of resource of its
 * containers and sidecars (restartPolicy Always init containers), or of
 * the one named. */
static int request_of(const json_t *pod, const char *resource, const char *container, int64_t *out,
		      char *err, size_t errlen)
{
	static const char *const lists[] = {"spec.containers", "spec.initContainers"};
	int64_t sum = 0;
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		size_t i;
		json_t *ct;
		json_array_foreach (kb_json_path(pod, lists[l]), i, ct) {
			const char *n = json_string_value(json_object_get(ct, "name"));
			const char *rp = json_string_value(json_object_get(ct, "restartPolicy"));
			if (l == 1 && (!rp || strcmp(rp, "Always") != 0))
				continue;
			if (container && (!n || strcmp(n, container) != 0))
				continue;
			if (add_request(pod, ct, resource, &sum, err, errlen) < 0)
				return -EINVAL;
		}
	}
	*out = sum;
	return 0;
}

/* The target's pods (new array) matching s->selector. */
static json_t *target_pods(struct hsync *s)
{
	struct sel_label *sel = NULL;
	if (sel_label_parse(s->selector, &sel, NULL, 0) < 0)
		return json_array();
	json_t *out = ctrl_pods_selected(s->c, ctrl_ns(s->hpa), sel);
	sel_label_free(sel);
	return out;
}

/* GetResourceMetric's failure to read the metrics API, in kube's words. */
static bool metrics_unavailable(const struct hpa_mem *m, char *err, size_t errlen)
{
	const char *why = NULL;
	if (m->err == -ENOTSUP || (m->err == 0 && m->status == 404))
		why = "the server could not find the requested resource";
	else if (m->err < 0 || m->status != 200)
		why = "the server is currently unable to handle the request";
	if (why)
		snprintf(err, errlen,
			 "unable to fetch metrics from resource metrics API: %s (get "
			 "pods.metrics.k8s.io)",
			 why);
	return why != NULL;
}

/* A Go duration ("15s", "10.5s", "1m0s", "500ms") in seconds; 0 when bad. */
static double go_duration(const char *s)
{
	static const struct {
		const char *unit;
		double sec;
	} units[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
	double total = 0;
	while (s && *s) {
		char *end;
		double v = strtod(s, &end);
		if (end == s)
			return 0;
		size_t best = KB_ARRAY_SIZE(units);
		for (size_t i = 0; i < KB_ARRAY_SIZE(units); i++)
			if (strncmp(end, units[i].unit, strlen(units[i].unit)) == 0 &&
			    (best == KB_ARRAY_SIZE(units) ||
			     strlen(units[i].unit) > strlen(units[best].unit)))
				best = i;
		if (best == KB_ARRAY_SIZE(units))
			return 0;
		total += v * units[best].sec;
		s = end + strlen(units[best].unit);
	}
	return total;
}

/* The pods as the calculator sees them (array of n, malloc'd) or NULL with
 * kube's message. */
static struct ctrl_hpa_pod *calc_pods(struct hsync *s, const json_t *pods, const char *resource,
				      const char *container, char *err, size_t errlen)
{
	size_t n = json_array_size(pods), i;
	struct ctrl_hpa_pod *out = calloc(n ? n : 1, sizeof(*out));
	json_t *p;
	if (!out) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	bool cpu = strcmp(resource, "cpu") == 0;
	json_array_foreach (pods, i, p) {
		const json_t *item = metrics_item(s->m->items, ctrl_name(p));
		int64_t usage = 0;
		char uerr[256] = "";
		int rc = item ? usage_of(item, resource, container, &usage, uerr, sizeof(uerr))
			      : -ENOENT;
		if (rc == -EINVAL) {
			snprintf(err, errlen, "%s", uerr);
			free(out);
			return NULL;
		}
		time_t ts = ctrl_time(json_string_value(json_object_get(item, "timestamp")));
		double window = go_duration(json_string_value(json_object_get(item, "window")));
		out[i].group = ctrl_hpa_group_pod(p, rc == 0, ts, (long)window, cpu, s->now);
		out[i].usage = usage;
		if (request_of(p, resource, container, &out[i].request, err, errlen) < 0) {
			free(out);
			return NULL;
		}
	}
	return out;
}

/* The target of a Resource or ContainerResource metric (borrowed). */
struct res_metric {
	const char *type; /* "Resource" or "ContainerResource" */
	const char *key;  /* "resource" or "containerResource" */
	const char *name, *container;
	const json_t *target;
};

/* GetResourceReplicas / GetRawResourceReplicas: 0 with the proposal, or
 * -errno with kube's message. */
static int resource_replicas(struct hsync *s, const struct res_metric *rm,
			     struct ctrl_hpa_result *res, bool *utilization, char *err,
			     size_t errlen)
{
	json_t *util = json_object_get(rm->target, "averageUtilization");
	json_t *avg = json_object_get(rm->target, "averageValue");
	int64_t target_value = 0;
	*utilization = !avg;
	if (!avg && !json_is_integer(util)) {
		snprintf(err, errlen,
			 "invalid resource metric source: neither an average "
			 "utilization target nor an average value (usage) target was "
			 "set");
		return -EINVAL;
	}
	if (avg && qty_parse(avg, &target_value) < 0)
		target_value = 0;
	char why[512];
	if (metrics_unavailable(s->m, why, sizeof(why)) ||
	    (json_array_size(s->m->items) == 0 &&
	     snprintf(why, sizeof(why), "no metrics returned from resource metrics API"))) {
		snprintf(err, errlen, "unable to get metrics for resource %s: %s", rm->name, why);
		return -ENODATA;
	}
	json_t *pods = target_pods(s);
	if (json_array_size(pods) == 0) {
		json_decref(pods);
		snprintf(err, errlen,
			 "no pods returned by selector while calculating replica count");
		return -ENOENT;
	}
	struct ctrl_hpa_pod *cp = calc_pods(s, pods, rm->name, rm->container, err, errlen);
	size_t n = json_array_size(pods);
	json_decref(pods);
	if (!cp)
		return -EINVAL;
	int rc = avg ? ctrl_hpa_value_replicas(cp, n, s->current, target_value, res, err, errlen)
		     : ctrl_hpa_utilization_replicas(
			   cp, n, s->current, (int)json_integer_value(util), res, err, errlen);
	free(cp);
	return rc;
}

static json_t *resource_status(const struct res_metric *rm, const struct ctrl_hpa_result *res,
			       bool utilization)
{
	char q[64];
	qty_format(res->raw, false, q, sizeof(q));
	json_t *cur = json_pack("{s:s}", "averageValue", q);
	if (utilization)
		json_object_set_new(cur, "averageUtilization", json_integer(res->utilization));
	json_t *src = json_pack("{s:s,s:o}", "name", rm->name, "current", cur);
	if (rm->container)
		json_object_set_new(src, "container", json_string(rm->container));
	return json_pack("{s:s,s:o}", "type", rm->type, rm->key, src);
}

/* One Resource or ContainerResource metric: the proposal, its status and
 * its name, or a failure. */
static int compute_resource(struct hsync *s, const json_t *spec, bool container, int *replicas,
			    json_t **status, char *name, size_t namelen, struct failure *f)
{
	struct res_metric rm = {.type = container ? "ContainerResource" : "Resource",
				.key = container ? "containerResource" : "resource"};
	const json_t *src = json_object_get(spec, rm.key);
	rm.name = json_string_value(json_object_get(src, "name"));
	rm.container = container ? json_string_value(json_object_get(src, "container")) : NULL;
	rm.target = json_object_get(src, "target");
	if (!rm.name)
		rm.name = "";
	struct ctrl_hpa_result res = {0};
	bool utilization;
	char err[ERR_LEN], inner[ERR_LEN + 64], outer[ERR_LEN + 192];
	int rc = resource_replicas(s, &rm, &res, &utilization, err, sizeof(err));
	if (rc < 0) {
		/* computeStatusForResourceMetricGeneric's words, then
		 * computeReplicasForMetric's */
		if (rc == -EINVAL && strncmp(err, "invalid resource", 16) == 0)
			snprintf(inner, sizeof(inner), "%s", err);
		else
			snprintf(inner, sizeof(inner), "failed to get %s %s: %s", rm.name,
				 utilization ? "utilization" : "usage", err);
		if (container)
			snprintf(outer, sizeof(outer),
				 "failed to get %s container metric value: %s",
				 rm.container ? rm.container : "", inner);
		else
			snprintf(outer, sizeof(outer), "failed to get %s resource metric value: %s",
				 rm.name, inner);
		metric_failed(s, f,
			      container ? "FailedGetContainerResourceMetric"
					: "FailedGetResourceMetric",
			      inner, outer);
		return rc;
	}
	*replicas = res.replicas;
	*status = resource_status(&rm, &res, utilization);
	snprintf(name, namelen, "%s%s resource%s", rm.name, container ? " container" : "",
		 utilization ? " utilization (percentage of request)" : "");
	return 0;
}

/* ---- Pods, Object and External metrics: no API serves them here ------------------------ */

static int by_string(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a),
		      json_string_value(*(json_t *const *)b));
}

/* A LabelSelector (borrowed, may be NULL) as Go prints a
 * *metav1.LabelSelector with %+v (its generated String()): kube's external
 * metric messages carry it. */
static void selector_string(const json_t *ls, struct kb_buf *b)
{
	if (!json_is_object(ls)) {
		kb_buf_puts(b, "nil");
		return;
	}
	json_t *ml = json_object_get(ls, "matchLabels");
	json_t *keys = json_array();
	const char *k;
	json_t *v;
	json_object_foreach (ml, k, v)
		json_array_append_new(keys, json_string(k));
	kb_json_array_sort(keys, by_string);
	kb_buf_puts(b, "&LabelSelector{MatchLabels:map[string]string{");
	size_t i;
	json_array_foreach (keys, i, v)
		kb_buf_printf(b, "%s: %s,", json_string_value(v),
			      json_string_value(json_object_get(ml, json_string_value(v))));
	json_decref(keys);
	kb_buf_puts(b, "},MatchExpressions:[]LabelSelectorRequirement{");
	json_t *e;
	json_array_foreach (json_object_get(ls, "matchExpressions"), i, e) {
		kb_buf_printf(b, "LabelSelectorRequirement{Key:%s,Operator:%s,Values:[",
			      json_string_value(json_object_get(e, "key")),
			      json_string_value(json_object_get(e, "operator")));
		size_t j;
		json_t *val;
		json_array_foreach (json_object_get(e, "values"), j, val)
			kb_buf_printf(b, "%s%s", j ? " " : "", json_string_value(val));
		kb_buf_puts(b, "],},");
	}
	kb_buf_puts(b, "},}");
}

#define NO_CUSTOM                                                                              \
	"unable to fetch metrics from custom metrics API: no known available metric versions " \
	"found"

static void compute_unserved(struct hsync *s, const json_t *spec, const char *type,
			     struct failure *f)
{
	char inner[ERR_LEN], outer[ERR_LEN + 192];
	if (strcmp(type, "Pods") == 0) {
		const char *n = json_string_value(kb_json_path(spec, "pods.metric.name"));
		snprintf(inner, sizeof(inner), "unable to get metric %s: " NO_CUSTOM, n ? n : "");
		snprintf(outer, sizeof(outer), "failed to get pods metric value: %s", inner);
		metric_failed(s, f, "FailedGetPodsMetric", inner, outer);
	} else if (strcmp(type, "Object") == 0) {
		const json_t *o = json_object_get(spec, "object");
		const char *n = json_string_value(kb_json_path(o, "metric.name"));
		const char *kind = json_string_value(kb_json_path(o, "describedObject.kind"));
		const char *on = json_string_value(kb_json_path(o, "describedObject.name"));
		/* kube's format puts the error last and the kind first */
		snprintf(inner, sizeof(inner), "unable to get metric %s: %s on %s %s/" NO_CUSTOM,
			 n ? n : "", kind ? kind : "", ctrl_ns(s->hpa), on ? on : "");
		snprintf(outer, sizeof(outer), "failed to get object metric value: %s", inner);
		metric_failed(s, f, "FailedGetObjectMetric", inner, outer);
	} else {
		const json_t *e = json_object_get(spec, "external");
		const char *n = json_string_value(kb_json_path(e, "metric.name"));
		struct kb_buf sel = {0};
		selector_string(kb_json_path(e, "metric.selector"), &sel);
		snprintf(inner, sizeof(inner),
			 "unable to get external metric %s/%s/%s: unable to fetch metrics from "
			 "external metrics API: the server could not find the requested resource "
			 "(get %s.external.metrics.k8s.io)",
			 ctrl_ns(s->hpa), n ? n : "", sel.data ? sel.data : "", n ? n : "");
		kb_buf_free(&sel);
		bool avg = json_object_get(kb_json_path(e, "target"), "averageValue") != NULL;
		char mid[ERR_LEN + 64];
		if (avg)
			snprintf(mid, sizeof(mid), "failed to get %s external metric: %s",
				 n ? n : "", inner);
		else
			snprintf(mid, sizeof(mid), "failed to get external metric %s: %s",
				 n ? n : "", inner);
		snprintf(outer, sizeof(outer), "failed to get %s external metric value: %s",
			 n ? n : "", mid);
		metric_failed(s, f, "FailedGetExternalMetric", inner, outer);
	}
}

/* ---- computeReplicasForMetrics ---------------------------------------------------------- */

/* 0 with the largest proposal and its metric's name (err set when some
 * metrics failed, as kube goes on with the others); -errno when nothing
 * can move (conditions set, err: the FailedComputeMetricsReplicas
 * message). statuses gets one entry per metric (empty when it failed). */
static int compute_metrics(struct hsync *s, int *replicas, char *metric, size_t mlen,
			   json_t *statuses, char *err, size_t errlen)
{
	const json_t *specs = kb_json_path(s->hpa, "spec.metrics");
	struct failure f = {0};
	size_t i, n = json_array_size(specs);
	json_t *spec;
	*replicas = 0;
	json_array_foreach (specs, i, spec) {
		const char *type = json_string_value(json_object_get(spec, "type"));
		int r = 0;
		json_t *status = NULL;
		char name[300];
		if (!type)
			type = "";
		int rc = -EINVAL;
		if (strcmp(type, "Resource") == 0 || strcmp(type, "ContainerResource") == 0) {
			rc = compute_resource(s, spec, type[0] == 'C', &r, &status, name,
					      sizeof(name), &f);
		} else if (strcmp(type, "Pods") == 0 || strcmp(type, "Object") == 0 ||
			   strcmp(type, "External") == 0) {
			compute_unserved(s, spec, type, &f);
		} else {
			char m[300];
			snprintf(m, sizeof(m), "unknown metric source type \"%s\"", type);
			metric_failed(s, &f, "InvalidMetricSourceType", m, m);
		}
		/* one entry per metric, as kube: a failed one's is empty */
		json_array_append_new(statuses, status ? status : json_pack("{s:s}", "type", ""));
		if (rc < 0)
			continue;
		if (*replicas == 0 || r > *replicas) {
			*replicas = r;
			snprintf(metric, mlen, "%s", name);
		}
	}
	if (f.count)
		snprintf(err, errlen, "invalid metrics (%d invalid out of %zu), first error is: %s",
			 f.count, n, f.error);
	/* all invalid, or some and the others would scale down: nothing moves */
	if (f.count >= (int)n ||
	    (f.count > 0 && *replicas < ctrl_int(s->scale, "spec.replicas", 0))) {
		condition(s, "ScalingActive", false, f.reason, f.condition);
		return -ENODATA;
	}
	char msg[400];
	snprintf(msg, sizeof(msg),
		 "the HPA was able to successfully calculate a replica count from %s", metric);
	condition(s, "ScalingActive", true, "ValidMetricFound", msg);
	return 0;
}

/* Whether autoscaler h (borrowed)'s target selects one of pods. */
static bool selects_any(struct hsync *s, const json_t *h, const json_t *pods)
{
	const json_t *ref = kb_json_path(h, "spec.scaleTargetRef");
	json_t *scale = NULL;
	char err[ERR_LEN];
	struct sel_label *sel = NULL;
	bool any = false;
	if (proxy_scale_get(s->c->px, json_string_value(json_object_get(ref, "apiVersion")),
			    json_string_value(json_object_get(ref, "kind")), ctrl_ns(h),
			    json_string_value(json_object_get(ref, "name")), &scale, err,
			    sizeof(err)) < 0)
		return false;
	const char *str = json_string_value(kb_json_path(scale, "status.selector"));
	if (str && *str && sel_label_parse(str, &sel, NULL, 0) == 0) {
		size_t i;
		json_t *p;
		json_array_foreach (pods, i, p)
			any = any || sel_label_match(sel, kb_json_path(p, "metadata.labels"));
		sel_label_free(sel);
	}
	json_decref(scale);
	return any;
}

/* kube's hpasControllingPodsUnderSelector: the autoscalers of the namespace
 * whose targets select the pods of this one's, as "ns/name" (new array). */
static json_t *controlling(struct hsync *s)
{
	json_t *keys = json_array(), *hpas = ctrl_list(s->c, HPA_RES, ctrl_ns(s->hpa));
	json_t *pods = json_array_size(hpas) > 1 ? target_pods(s) : json_array();
	size_t i;
	json_t *h;
	char key[600];
	json_array_foreach (hpas, i, h) {
		if (!json_array_size(pods) || ctrl_path(h, "metadata.deletionTimestamp"))
			continue;
		if (strcmp(ctrl_name(h), ctrl_name(s->hpa)) != 0 && !selects_any(s, h, pods))
			continue;
		snprintf(key, sizeof(key), "%s/%s", ctrl_ns(h), ctrl_name(h));
		json_array_append_new(keys, json_string(key));
	}
	kb_json_array_sort(keys, by_string);
	json_decref(pods);
	json_decref(hpas);
	return keys;
}

static int check_ambiguous(struct hsync *s, char *err, size_t errlen)
{
	json_t *keys = controlling(s);
	int rc = 0;
	if (json_array_size(keys) > 1) {
		struct kb_buf b = {0};
		size_t i;
		json_t *k;
		json_array_foreach (keys, i, k)
			kb_buf_printf(&b, "%s%s", i ? " " : "", json_string_value(k));
		snprintf(err, errlen, "pods by selector %s are controlled by multiple HPAs: [%s]",
			 s->selector, b.data ? b.data : "");
		kb_buf_free(&b);
		event(s, "Warning", "AmbiguousSelector", err);
		condition(s, "ScalingActive", false, "AmbiguousSelector", err);
		rc = -EEXIST;
	}
	json_decref(keys);
	return rc;
}

/* The target's selector: kube's conditions and events when it has none or
 * an invalid one. */
static int check_selector(struct hsync *s, char *err, size_t errlen)
{
	if (!s->selector || !*s->selector) {
		event(s, "Warning", "SelectorRequired", "selector is required");
		condition(s, "ScalingActive", false, "InvalidSelector",
			  "the HPA target's scale is missing a selector");
		snprintf(err, errlen, "selector is required");
		return -EINVAL;
	}
	struct sel_label *sel = NULL;
	char why[256] = "";
	if (sel_label_parse(s->selector, &sel, why, sizeof(why)) < 0) {
		snprintf(err, errlen,
			 "couldn't convert selector into a corresponding internal selector "
			 "object: %s",
			 why);
		event(s, "Warning", "InvalidSelector", err);
		condition(s, "ScalingActive", false, "InvalidSelector", err);
		return -EINVAL;
	}
	sel_label_free(sel);
	return check_ambiguous(s, err, errlen);
}

/* ---- status ---------------------------------------------------------------------------- */

static void set_status(struct hsync *s, int desired, json_t *metrics, bool rescale)
{
	json_object_set_new(s->st, "currentReplicas", json_integer(s->current));
	json_object_set_new(s->st, "desiredReplicas", json_integer(desired));
	if (json_array_size(metrics)) /* kube's setStatus: the metrics of this pass */
		json_object_set(s->st, "currentMetrics", metrics);
	else
		json_object_del(s->st, "currentMetrics");
	/* kube's setStatus makes a new status of these, conditions and
	 * lastScaleTime: observedGeneration is never set */
	json_object_del(s->st, "observedGeneration");
	if (rescale) {
		char now[40];
		ctrl_now_str(now, sizeof(now));
		json_object_set_new(s->st, "lastScaleTime", json_string(now));
	}
}

static int write_status(struct hsync *s)
{
	int rc = ctrl_write_status(s->c, "autoscaling", "v2", "horizontalpodautoscalers", s->hpa,
				   s->st, HPA_MANAGER);
	return rc == -ESTALE ? 0 : rc; /* the next resync writes it */
}

/* ---- the reconcile -------------------------------------------------------------------- */

static void normalize_input(struct hsync *s, int desired, struct ctrl_hpa_input *in)
{
	const json_t *b = kb_json_path(s->hpa, "spec.behavior");
	memset(in, 0, sizeof(*in));
	in->current = s->current;
	in->desired = desired;
	in->min = s->min;
	in->max = s->max;
	in->behavior = json_is_object(b);
	ctrl_hpa_rules_parse(json_object_get(b, "scaleUp"), true, &in->up);
	ctrl_hpa_rules_parse(json_object_get(b, "scaleDown"), false, &in->down);
}

/* Scales the target to desired; kube's events and conditions. */
static int rescale(struct hsync *s, const struct ctrl_hpa_input *in, int desired,
		   const char *reason)
{
	const json_t *ref = kb_json_path(s->hpa, "spec.scaleTargetRef");
	char err[ERR_LEN], msg[ERR_LEN + 200];
	int rc =
	    proxy_scale_update(s->c->px, json_string_value(json_object_get(ref, "apiVersion")),
			       json_string_value(json_object_get(ref, "kind")), ctrl_ns(s->hpa),
			       json_string_value(json_object_get(ref, "name")), desired,
			       HPA_MANAGER, err, sizeof(err));
	if (rc < 0 && rc != -EINPROGRESS) {
		snprintf(msg, sizeof(msg), "New size: %d; reason: %s; error: %s", desired, reason,
			 err);
		event(s, "Warning", "FailedRescale", msg);
		snprintf(msg, sizeof(msg),
			 "the HPA controller was unable to update the target scale: %s", err);
		condition(s, "AbleToScale", false, "FailedUpdateScale", msg);
		return rc;
	}
	snprintf(msg, sizeof(msg), "the HPA controller was able to update the target scale to %d",
		 desired);
	condition(s, "AbleToScale", true, "SucceededRescale", msg);
	snprintf(msg, sizeof(msg), "New size: %d; reason: %s", desired, reason);
	event(s, "Normal", "SuccessfulRescale", msg);
	ctrl_hpa_record_scale(&s->m->hist, in, s->current, desired, kb_now_ms());
	kb_info("hpa", "%s/%s: rescaled from %d to %d: %s", ctrl_ns(s->hpa), ctrl_name(s->hpa),
		s->current, desired, reason);
	return 0;
}

/* The metric branch of reconcileAutoscaler: the proposal, normalized. -1
 * when the metrics failed (status written, event recorded). */
static int from_metrics(struct hsync *s, json_t *statuses, char *reason, size_t rlen)
{
	char metric[300] = "", err[ERR_LEN * 2] = "";
	int proposal = 0;
	int rc = check_selector(s, err, sizeof(err));
	if (rc == 0)
		rc = compute_metrics(s, &proposal, metric, sizeof(metric), statuses, err,
				     sizeof(err));
	if (rc < 0) {
		/* setCurrentReplicasAndMetricsInStatus */
		set_status(s, (int)ctrl_int(s->hpa, "status.desiredReplicas", 0), statuses, false);
		write_status(s);
		event(s, "Warning", "FailedComputeMetricsReplicas", err);
		return -1;
	}
	if (*err)
		kb_debug("hpa", "%s/%s: %s", ctrl_ns(s->hpa), ctrl_name(s->hpa), err);
	if (proposal > s->current)
		snprintf(reason, rlen, "%s above target", metric);
	else if (proposal < s->current)
		snprintf(reason, rlen, "All metrics below target");
	struct ctrl_hpa_input in;
	struct ctrl_hpa_verdict v;
	normalize_input(s, proposal, &in);
	ctrl_hpa_normalize(&s->m->hist, &in, kb_now_ms(), &v);
	condition(s, "AbleToScale", true, v.able_reason, v.able_message);
	condition(s, "ScalingLimited", v.limited, v.limit_reason, v.limit_message);
	return v.replicas;
}

static int reconcile(struct hsync *s)
{
	json_t *statuses = json_array();
	char reason[400] = "";
	int desired = 0;
	bool want_rescale = true;
	int64_t spec_replicas = ctrl_int(s->scale, "spec.replicas", 0);
	if (spec_replicas == 0 && s->min != 0) {
		want_rescale = false;
		condition(s, "ScalingActive", false, "ScalingDisabled",
			  "scaling is disabled since the replica count of the target is zero");
	} else if (s->current > s->max) {
		snprintf(reason, sizeof(reason),
			 "Current number of replicas above Spec.MaxReplicas");
		desired = s->max;
	} else if (s->current < s->min) {
		snprintf(reason, sizeof(reason),
			 "Current number of replicas below Spec.MinReplicas");
		desired = s->min;
	} else {
		desired = from_metrics(s, statuses, reason, sizeof(reason));
		if (desired < 0) {
			json_decref(statuses);
			return 0;
		}
		want_rescale = desired != s->current;
	}
	bool done = false;
	if (want_rescale) {
		struct ctrl_hpa_input in;
		normalize_input(s, desired, &in);
		if (rescale(s, &in, desired, reason) < 0) {
			set_status(s, (int)ctrl_int(s->hpa, "status.desiredReplicas", 0), statuses,
				   false);
			json_decref(statuses);
			return write_status(s);
		}
		done = true;
	} else {
		desired = s->current;
	}
	set_status(s, desired, statuses, done);
	json_decref(statuses);
	return write_status(s);
}

/* Reads the target's scale: AbleToScale and the current size, or False
 * with kube's FailedGetScale. */
static int read_scale(struct hsync *s)
{
	const json_t *ref = kb_json_path(s->hpa, "spec.scaleTargetRef");
	char err[ERR_LEN], msg[ERR_LEN + 100];
	int rc = proxy_scale_get(s->c->px, json_string_value(json_object_get(ref, "apiVersion")),
				 json_string_value(json_object_get(ref, "kind")), ctrl_ns(s->hpa),
				 json_string_value(json_object_get(ref, "name")), &s->scale, err,
				 sizeof(err));
	if (rc < 0) {
		event(s, "Warning", "FailedGetScale", err);
		snprintf(msg, sizeof(msg),
			 "the HPA controller was unable to get the target's current scale: %s",
			 err);
		condition(s, "AbleToScale", false, "FailedGetScale", msg);
		return rc;
	}
	condition(s, "AbleToScale", true, "SucceededGetScale",
		  "the HPA controller was able to get the target's current scale");
	s->current = (int)ctrl_int(s->scale, "spec.replicas", 0);
	s->selector = json_string_value(kb_json_path(s->scale, "status.selector"));
	return 0;
}

/* Whether this sync needs a metrics answer it does not have yet. */
static bool needs_metrics(const struct hsync *s)
{
	if (s->m->answered)
		return false;
	if (ctrl_int(s->scale, "spec.replicas", 0) == 0 && s->min != 0)
		return false;
	if (s->current > s->max || s->current < s->min || !s->selector || !*s->selector)
		return false;
	size_t i;
	json_t *spec;
	json_array_foreach (kb_json_path(s->hpa, "spec.metrics"), i, spec) {
		const char *t = json_string_value(json_object_get(spec, "type"));
		if (t && (strcmp(t, "Resource") == 0 || strcmp(t, "ContainerResource") == 0))
			return true;
	}
	return false;
}

/* The answer of a read that needs no host: the API is not served
 * (-ENOTSUP), or there is no pod to ask about (an empty list). */
static void answer_now(struct hpa_mem *m, int err)
{
	m->answered = true;
	m->err = err;
	m->status = 200;
	json_decref(m->items);
	m->items = json_array();
}

/* Starts the metrics read of the target's pods; false when it answered at
 * once (answer_now). */
static bool start_read(struct hsync *s)
{
	if (!proxy_metrics_served(s->c->px)) {
		answer_now(s->m, -ENOTSUP);
		return false;
	}
	json_t *pods = target_pods(s);
	s->m->call = json_array_size(pods)
			 ? proxy_metrics_pods(s->c->px, ctrl_ns(s->hpa), pods, on_metrics, s->m)
			 : NULL;
	s->m->call_ms = kb_now_ms();
	bool started = s->m->call != NULL;
	if (!started)
		answer_now(s->m, json_array_size(pods) ? -ENOTSUP : 0);
	json_decref(pods);
	return started;
}

static void forget(struct ctrl *c, const char *ns, const char *name)
{
	char key[600];
	mem_key(ns, name, key, sizeof(key));
	kmap_del(c->hpas, key);
}

int ctrl_hpa_sync(struct ctrl *c, const char *ns, const char *name)
{
	json_t *hpa = ctrl_get(c, HPA_RES, ns, name);
	if (!hpa || ctrl_path(hpa, "metadata.deletionTimestamp")) {
		json_decref(hpa);
		forget(c, ns, name);
		return 0;
	}
	struct hsync s = {.c = c, .hpa = hpa, .m = mem_of(c, ns, name), .now = time(NULL)};
	if (!s.m) {
		json_decref(hpa);
		return -ENOMEM;
	}
	ctrl_enqueue_after(c, "hpa", ns, name, c->hpa_sync_s > 0 ? (double)c->hpa_sync_s : SYNC_S);
	if (s.m->call && kb_now_ms() - s.m->call_ms < READ_MAX_MS) {
		json_decref(hpa); /* the answer queues the key */
		return 0;
	}
	if (s.m->call) {
		proxy_metrics_pods_cancel(c->px, s.m->call);
		on_metrics(s.m, -ETIMEDOUT, 0, NULL, NULL);
	}
	s.st = json_deep_copy(json_object_get(hpa, "status"));
	if (!json_is_object(s.st)) {
		json_decref(s.st);
		s.st = json_object();
	}
	s.min = (int)ctrl_int(hpa, "spec.minReplicas", 1);
	s.max = (int)ctrl_int(hpa, "spec.maxReplicas", 1);
	int rc = read_scale(&s);
	if (rc < 0) {
		rc = write_status(&s);
		goto out;
	}
	ctrl_hpa_record_initial(&s.m->hist, s.current, kb_now_ms());
	if (needs_metrics(&s) && start_read(&s))
		goto out; /* on_metrics queues the second pass */
	rc = reconcile(&s);
	s.m->answered = false;
	json_decref(s.m->items);
	s.m->items = NULL;
out:
	json_decref(s.scale);
	json_decref(s.st);
	json_decref(hpa);
	return rc == -EINVAL || rc == -EPERM ? 0 : rc;
}

void ctrl_hpa_event(struct ctrl *c, const struct store_event *ev)
{
	if (ev->type == STORE_DELETED) {
		forget(c, ev->ns, ev->name);
		return;
	}
	/* kube's queue delays an autoscaler's updates by the sync period; a
	 * new one, or a changed spec, is reconciled now */
	if (ev->type == STORE_ADDED || !ev->prev ||
	    ctrl_int(ev->obj, "metadata.generation", 0) !=
		ctrl_int(ev->prev, "metadata.generation", 0))
		ctrl_enqueue(c, "hpa", ev->ns, ev->name);
}
