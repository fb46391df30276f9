/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's resource metrics API (metrics.k8s.io/v1beta1, what
 * metrics-server serves) seen from the tenant: whether the host serves it,
 * and PodMetrics and NodeMetrics read from the host and translated back to
 * the tenant's names and labels.
 *
 * DESIGN
 * Availability: the host's discovery document of metrics.k8s.io/v1beta1 is
 * read at start, after each relist of the host's pods (the host came back)
 * and at each resync. 200 naming both `pods` and `nodes`: available; 404:
 * not (no metrics-server, or its APIService removed). Anything else (host
 * unreachable, 503 of an unavailable APIService, 403) leaves the last answer
 * as it is: the tenant keeps its API and answers 503 while the host cannot.
 * A change is reported through syncer_opts' metrics_changed.
 * Reads: one host GET per tenant request (a list filtered by the tenant's
 * label and, with a namespace, the namespace's; or one object by its
 * translated name), never cached: metrics-server keeps the last scrape
 * itself. The caller passes the tenant objects (pods or nodes) the answer may
 * show; host items without one are dropped. Calls in flight at stop are
 * answered -ESHUTDOWN.
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

#define METRICS_GV "/apis/metrics.k8s.io/v1beta1"

struct metrics_call {
	struct host_metrics *m;
	struct metrics_call *prev, *next;
	kb_httpc_req_t *up;
	bool single; /* one object asked by name */
	bool pods;
	json_t *objs; /* the tenant objects (owned reference) */
	syncer_metrics_done_fn done;
	void *arg;
};

struct host_metrics {
	kb_httpc_t *http;
	char tenant[64], host_ns[64];
	void (*changed)(void *arg, bool available);
	void *arg;
	kb_httpc_req_t *check; /* discovery read in flight */
	int available;         /* -1 unknown, 0, 1 */
	struct metrics_call *calls;
};

/* ---- translation (pure) ---------------------------------------------------------- */

/* Items of `host` (borrowed array) by metadata.name, in a new object. */
static json_t *by_name(const json_t *host)
{
	json_t *idx = json_object();
	size_t i;
	json_t *h;
	json_array_foreach (host, i, h) {
		const char *n = meta_str(h, "name");
		if (n)
			json_object_set(idx, n, h);
	}
	return idx;
}

/* The tenant's metrics object: the tenant's name, namespace and labels, the
 * host's creationTimestamp, timestamp, window and (key) containers or usage. */
static json_t *metrics_item(const json_t *host, const json_t *tenant, const char *key)
{
	const json_t *tm = json_object_get(tenant, "metadata");
	json_t *meta = json_pack("{s:O}", "name", json_object_get(tm, "name"));
	if (json_object_get(tm, "namespace"))
		json_object_set(meta, "namespace", json_object_get(tm, "namespace"));
	const json_t *ct = json_object_get(json_object_get(host, "metadata"), "creationTimestamp");
	if (ct)
		json_object_set(meta, "creationTimestamp", (json_t *)ct);
	const json_t *labels = json_object_get(tm, "labels");
	if (json_object_size(labels))
		json_object_set_new(meta, "labels", json_deep_copy(labels));
	json_t *out = json_pack("{s:o}", "metadata", meta);
	static const char *const keys[] = {"timestamp", "window"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(host, keys[i]);
		if (v)
			json_object_set_new(out, keys[i], json_deep_copy(v));
	}
	json_t *v = json_object_get(host, key);
	json_object_set_new(out, key, v ? json_deep_copy(v) : json_array());
	return out;
}

json_t *syncer_pod_metrics(const json_t *host, const json_t *pods, const char *tenant)
{
	json_t *idx = by_name(host), *out = json_array();
	size_t i;
	json_t *p;
	json_array_foreach (pods, i, p) {
		char hn[SYNCER_NAME_MAX + 1];
		const char *ns = meta_str(p, "namespace"), *name = meta_str(p, "name");
		if (!ns || !name || syncer_host_name(ns, name, tenant, hn, sizeof(hn)) < 0)
			continue;
		const json_t *h = json_object_get(idx, hn);
		char old[SYNCER_NAME_MAX + 1];
		if (!h && syncer_host_name_legacy(ns, name, tenant, old, sizeof(old)) == 0 &&
		    strcmp(old, hn) != 0) {
			/* a pod adopted under its old name (syncer_host_name_legacy):
			 * PodMetrics carry the pod's labels, and two objects that
			 * shared an old name differ in their namespace */
			h = json_object_get(idx, old);
			const char *lns = json_string_value(json_object_get(
			    json_object_get(json_object_get(h, "metadata"), "labels"),
			    LBL_NAMESPACE));
			if (!lns || strcmp(lns, ns) != 0)
				h = NULL;
		}
		const char *owner = json_string_value(json_object_get(
		    json_object_get(json_object_get(h, "metadata"), "labels"), LBL_TENANT));
		if (!h || !owner || strcmp(owner, tenant) != 0)
			continue; /* not the host pod of this tenant pod */
		json_array_append_new(out, metrics_item(h, p, "containers"));
	}
	json_decref(idx);
	return out;
}

json_t *syncer_node_metrics(const json_t *host, const json_t *nodes)
{
	json_t *idx = by_name(host), *out = json_array();
	size_t i;
	json_t *n;
	json_array_foreach (nodes, i, n) {
		const char *name = meta_str(n, "name");
		const json_t *h = name ? json_object_get(idx, name) : NULL;
		if (h && json_object_get(h, "usage"))
			json_array_append_new(out, metrics_item(h, n, "usage"));
	}
	json_decref(idx);
	return out;
}

bool syncer_metrics_discovered(const json_t *doc)
{
	bool pods = false, nodes = false;
	size_t i;
	json_t *r;
	json_array_foreach (json_object_get(doc, "resources"), i, r) {
		const char *n = json_string_value(json_object_get(r, "name"));
		pods |= n && strcmp(n, "pods") == 0;
		nodes |= n && strcmp(n, "nodes") == 0;
	}
	return pods && nodes;
}

/* ---- availability ---------------------------------------------------------------- */

static void set_available(struct host_metrics *m, bool on)
{
	if (m->available == (int)on)
		return;
	m->available = on;
	kb_info("syncer", "the host's metrics API (metrics.k8s.io/v1beta1) is %s",
		on ? "served: the tenant serves it too" : "not served");
	if (m->changed)
		m->changed(m->arg, on);
}

static void on_discovery(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
			 void *arg)
{
	struct host_metrics *m = arg;
	m->check = NULL;
	if (err || (status != 200 && status != 404)) {
		kb_debug("syncer", "host metrics discovery: %s %ld",
			 err ? strerror(-err) : "status", status);
		return; /* unknown: keep the last answer */
	}
	json_t *doc = status == 200 ? json_loadb(body ? body : "", len, 0, NULL) : NULL;
	set_available(m, status == 200 && syncer_metrics_discovered(doc));
	json_decref(doc);
}

void host_metrics_check(struct host_metrics *m)
{
	if (!m || m->check)
		return;
	struct kb_httpc_call call = {
	    .method = "GET", .path = METRICS_GV, .on_done = on_discovery, .arg = m};
	m->check = kb_httpc_request(m->http, &call);
}

int host_metrics_start(kb_httpc_t *http, const char *tenant, const char *host_ns,
		       void (*changed)(void *, bool), void *arg, struct host_metrics **out)
{
	struct host_metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->http = http;
	snprintf(m->tenant, sizeof(m->tenant), "%s", tenant);
	snprintf(m->host_ns, sizeof(m->host_ns), "%s", host_ns);
	m->changed = changed;
	m->arg = arg;
	m->available = -1;
	host_metrics_check(m);
	*out = m;
	return 0;
}

/* ---- reads ----------------------------------------------------------------------- */

static void call_free(struct metrics_call *c)
{
	KB_LIST_UNLINK(c->m->calls, c);
	json_decref(c->objs);
	free(c);
}

/* The message of a host's Status body, or "". */
static void host_message(const char *body, size_t len, char *buf, size_t n)
{
	json_t *st = body ? json_loadb(body, len, 0, NULL) : NULL;
	const char *msg = json_string_value(json_object_get(st, "message"));
	snprintf(buf, n, "%s", msg ? msg : "");
	json_decref(st);
}

static void on_read(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
		    void *arg)
{
	struct metrics_call *c = arg;
	char msg[512] = "";
	json_t *items = NULL;
	if (!err && status == 200) {
		json_t *doc = json_loadb(body ? body : "", len, 0, NULL);
		if (json_is_object(doc)) {
			json_t *host = c->single ? json_pack("[O]", doc)
						 : json_incref(json_object_get(doc, "items"));
			items = c->pods ? syncer_pod_metrics(host, c->objs, c->m->tenant)
					: syncer_node_metrics(host, c->objs);
			json_decref(host);
		} else {
			status = 502; /* not what a metrics API answers */
			snprintf(msg, sizeof(msg), "the answer is not a JSON object");
		}
		json_decref(doc);
	} else if (!err) {
		host_message(body, len, msg, sizeof(msg));
	}
	c->done(c->arg, err, status, status == 200 ? items : NULL, msg);
	json_decref(items);
	call_free(c);
}

struct metrics_call *host_metrics_get(struct host_metrics *m, bool pods, const char *ns,
				      const char *name, const char *host_name, const json_t *objs,
				      syncer_metrics_done_fn done, void *arg)
{
	char path[1024], hn[SYNCER_NAME_MAX + 1];
	struct metrics_call *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (pods && name && host_name) {
		snprintf(path, sizeof(path), METRICS_GV "/namespaces/%s/pods/%s", m->host_ns,
			 host_name);
	} else if (pods && name) {
		if (syncer_host_name(ns, name, m->tenant, hn, sizeof(hn)) < 0) {
			free(c);
			return NULL;
		}
		snprintf(path, sizeof(path), METRICS_GV "/namespaces/%s/pods/%s", m->host_ns, hn);
	} else if (pods) {
		snprintf(path, sizeof(path),
			 METRICS_GV "/namespaces/%s/pods?labelSelector=" LBL_TENANT "%%3D%s%s%s",
			 m->host_ns, m->tenant, ns ? "%2C" LBL_NAMESPACE "%3D" : "", ns ? ns : "");
	} else {
		snprintf(path, sizeof(path), METRICS_GV "/nodes%s%s", name ? "/" : "",
			 name ? name : "");
	}
	c->m = m;
	c->pods = pods;
	c->single = name != NULL;
	c->objs = json_incref((json_t *)objs);
	c->done = done;
	c->arg = arg;
	struct kb_httpc_call call = {.method = "GET", .path = path, .on_done = on_read, .arg = c};
	KB_LIST_PUSH(m->calls, c); /* linked first: a request may end at once */
	c->up = kb_httpc_request(m->http, &call);
	if (!c->up) {
		call_free(c);
		return NULL;
	}
	return c;
}

void host_metrics_cancel(struct metrics_call *c)
{
	kb_httpc_cancel(c->up);
	call_free(c);
}

void host_metrics_stop(struct host_metrics *m)
{
	if (!m)
		return;
	if (m->check)
		kb_httpc_cancel(m->check);
	while (m->calls) {
		struct metrics_call *c = m->calls;
		kb_httpc_cancel(c->up);
		c->done(c->arg, -ESHUTDOWN, 0, NULL, "");
		call_free(c);
	}
	free(m);
}
