/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The resource metrics API, metrics.k8s.io/v1beta1 (PodMetrics `pods`,
 * namespaced; NodeMetrics `nodes`), as metrics-server serves it, answered
 * from the host cluster's own metrics API through the syncer
 * (proxy_set_metrics): what `kubectl top pod` and `kubectl top node` read.
 *
 * The two rows join the resource table only while the host serves the API
 * (proxy_metrics_available), so discovery, routing and RBAC treat them as
 * any other resource, and a tenant whose host has no metrics API looks like
 * a cluster without metrics-server ("Metrics API not available").
 *
 * DESIGN: the tenant store is the truth of what a request may show: a read
 * lists the tenant's pods (or nodes) that the request's namespace, name and
 * selectors select, then hands them to the fetch hook, which asks the host
 * once and answers on a later loop turn with those objects' metrics under
 * their tenant names. The request is then owned here (r->async) until that
 * answer or the client's going away (the host read is cancelled). A host
 * that cannot be reached or answers an error gives 503 ServiceUnavailable,
 * as kube-apiserver answers for an aggregated API it cannot reach.
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "proxy/model/openapi.h"
#include "proxy/aggregation/aggregation.h"

#define METRICS_GROUP "metrics.k8s.io"
#define READER_ROLE   "system:aggregated-metrics-reader"

static void serve(struct req *r);

static struct proxy_resource pod_row = {
    .group = METRICS_GROUP,
    .version = "v1beta1",
    .kind = "PodMetrics",
    .list_kind = "PodMetricsList",
    .plural = "pods",
    .singular = "podmetrics",
    .namespaced = true,
    .verbs = VERB_GET | VERB_LIST,
    .serve = serve,
};
static struct proxy_resource node_row = {
    .group = METRICS_GROUP,
    .version = "v1beta1",
    .kind = "NodeMetrics",
    .list_kind = "NodeMetricsList",
    .plural = "nodes",
    .singular = "nodemetrics",
    .namespaced = false,
    .verbs = VERB_GET | VERB_LIST,
    .serve = serve,
};
static bool served; /* the rows are in the table (one proxy per process) */

bool metrics_row(const struct proxy_resource *res)
{
	return res == &pod_row || res == &node_row;
}

void proxy_set_metrics(proxy_t *px, proxy_metrics_fetch_fn fetch, proxy_metrics_cancel_fn cancel,
		       void *arg)
{
	px->metrics->fetch = fetch;
	px->metrics->cancel = cancel;
	px->metrics->arg = arg;
}

/* metrics-server's manifest's ClusterRole, so that view, edit and admin
 * include reading metrics, as on a cluster with metrics-server. */
static void ensure_reader_role(struct proxy *px)
{
	json_t *have = NULL;
	if (proxy_object_get(px, "rbac.authorization.k8s.io", "v1", "clusterroles", NULL,
			     READER_ROLE, &have) == 0) {
		json_decref(have);
		return;
	}
	json_t *role = json_pack(
	    "{s:s,s:s,s:{s:s,s:{s:s,s:s,s:s}},s:[{s:[s],s:[s,s],s:[s,s,s]}]}", "apiVersion",
	    "rbac.authorization.k8s.io/v1", "kind", "ClusterRole", "metadata", "name", READER_ROLE,
	    "labels", "rbac.authorization.k8s.io/aggregate-to-admin", "true",
	    "rbac.authorization.k8s.io/aggregate-to-edit", "true",
	    "rbac.authorization.k8s.io/aggregate-to-view", "true", "rules", "apiGroups",
	    METRICS_GROUP, "resources", "pods", "nodes", "verbs", "get", "list", "watch");
	int rc = proxy_object_create(px, "rbac.authorization.k8s.io", "v1", "clusterroles", role,
				     "kubicle", NULL);
	if (rc < 0 && rc != -EEXIST)
		kb_warn("proxy", "ClusterRole %s: %s", READER_ROLE, strerror(-rc));
	json_decref(role);
}

void proxy_metrics_available(proxy_t *px, bool on)
{
	if (on == served)
		return;
	if (on) {
		if (resource_find(METRICS_GROUP, "v1beta1", "pods") ||
		    resource_find(METRICS_GROUP, "v1beta1", "nodes")) {
			kb_warn("proxy", "metrics API not served: a CustomResourceDefinition of "
					 "the tenant serves its names");
			return;
		}
		if (resource_add(&pod_row) < 0 || resource_add(&node_row) < 0) {
			resource_remove(&pod_row);
			kb_err("proxy", "metrics API: resource table full");
			return;
		}
		ensure_reader_role(px);
	} else {
		resource_remove(&pod_row);
		resource_remove(&node_row);
	}
	served = on;
	openapi_invalidate();
}

/* ---- reads ----------------------------------------------------------------------- */

struct metrics_req {
	struct req *r;
	void *call; /* the fetch hook's handle */
};

static void reply_unavailable(struct req *r, const char *why)
{
	reply_statusf(r, 503, "ServiceUnavailable",
		      "the server is currently unable to handle the request: %s", why);
}

/* metrics-server's 404 for an object without metrics (podmetrics names
 * "ns/name"). */
static void reply_no_metrics(struct req *r)
{
	const char *kind = r->res == &pod_row ? "podmetrics" : "nodemetrics";
	char name[600], msg[700];
	if (r->ns)
		snprintf(name, sizeof(name), "%s/%s", r->ns, r->name);
	else
		snprintf(name, sizeof(name), "%s", r->name);
	snprintf(msg, sizeof(msg), "%s." METRICS_GROUP " \"%s\" not found", kind, name);
	reply_status(
	    r, 404, "NotFound", msg,
	    json_pack("{s:s,s:s,s:s}", "name", name, "group", METRICS_GROUP, "kind", kind));
}

static void reply_items(struct req *r, json_t *items)
{
	if (r->name) {
		json_t *item = json_array_get(items, 0);
		if (!item) {
			reply_no_metrics(r);
			return;
		}
		json_t *o = json_pack("{s:s,s:s}", "kind", r->res->kind, "apiVersion",
				      METRICS_GROUP "/v1beta1");
		json_object_update(o, item);
		reply_json(r, 200, o);
		json_decref(o);
		return;
	}
	json_t *list = json_pack("{s:s,s:s,s:{},s:O}", "kind", r->res->list_kind, "apiVersion",
				 METRICS_GROUP "/v1beta1", "metadata", "items", items);
	reply_json(r, 200, list);
	json_decref(list);
}

static void on_fetched(void *arg, int err, long status, json_t *items, const char *message)
{
	struct metrics_req *mr = arg;
	struct req *r = mr->r;
	free(mr);
	kb_http_req_on_abort(r->http, NULL, NULL);
	char why[700];
	if (err) {
		snprintf(why, sizeof(why), "the host cluster's metrics API is not reachable (%s)",
			 strerror(-err));
		reply_unavailable(r, why);
	} else if (status == 404 && r->name) {
		reply_no_metrics(r);
	} else if (status != 200) {
		snprintf(why, sizeof(why), "the host cluster's metrics API answered %ld%s%s",
			 status, message && *message ? ": " : "", message ? message : "");
		reply_unavailable(r, why);
	} else {
		reply_items(r, items);
	}
	req_free(r);
}

static void on_abort(kb_http_req_t *http, void *arg)
{
	struct metrics_req *mr = arg;
	mr->r->px->metrics->cancel(mr->call);
	mr->r->http = NULL;
	req_free(mr->r);
	free(mr);
}

/* The tenant objects the request may show (new array), or NULL when it has
 * answered (404 for a named object the tenant lacks, 400 for selectors). */
static json_t *tenant_objects(struct req *r)
{
	const char *res = r->res == &pod_row ? "/pods" : "/nodes";
	const char *what = r->res == &pod_row ? "pods" : "nodes";
	if (r->name) {
		json_t *obj = NULL;
		int rc = store_get(r->px->store, res, r->ns ? r->ns : "", r->name, &obj);
		if (rc < 0) {
			char msg[600];
			snprintf(msg, sizeof(msg), "%s \"%s\" not found", what, r->name);
			reply_status(r, rc == -ENOENT ? 404 : 500,
				     rc == -ENOENT ? "NotFound" : "InternalError", msg,
				     json_pack("{s:s,s:s}", "name", r->name, "kind", what));
			return NULL;
		}
		return json_pack("[o]", obj);
	}
	struct filter f;
	if (req_filter_parse(r, &f) < 0)
		return NULL;
	struct store_list_req lr = {
	    .res = res, .ns = r->ns, .filter = req_filter_match, .filter_arg = &f};
	struct store_list_result out = {0};
	int rc = store_list(r->px->store, &lr, &out);
	req_filter_free(&f);
	if (rc < 0) {
		reply_statusf(r, 500, "InternalError", "listing %s: %s", what, strerror(-rc));
		return NULL;
	}
	free(out.next);
	return out.items;
}

/* GET and LIST of the metrics rows: asks the host (sets r->async and
 * answers later). */
static void serve(struct req *r)
{
	const char *m = r->http->method;
	if ((strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0) || r->q.watch || r->sub) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	json_t *objs = tenant_objects(r);
	if (!objs)
		return;
	if (!r->name && json_array_size(objs) == 0) {
		reply_items(r, objs); /* nothing the host could add */
		json_decref(objs);
		return;
	}
	struct metrics_req *mr = calloc(1, sizeof(*mr));
	if (mr && r->px->metrics->fetch)
		mr->call = r->px->metrics->fetch(r->px->metrics->arg, r->res->plural, r->ns,
						 r->name, objs, on_fetched, mr);
	json_decref(objs);
	if (!mr || !mr->call) {
		free(mr);
		reply_unavailable(r, "the host cluster's metrics API cannot be asked");
		return;
	}
	mr->r = r;
	r->async = true;
	kb_http_req_on_abort(r->http, on_abort, mr);
}

/* ---- a controller's reads ----------------------------------------------------------- */

bool proxy_metrics_served(proxy_t *px)
{
	return served && px->metrics->fetch;
}

void *proxy_metrics_pods(proxy_t *px, const char *ns, const json_t *pods,
			 proxy_metrics_done_fn done, void *arg)
{
	if (!served || !px->metrics->fetch)
		return NULL;
	return px->metrics->fetch(px->metrics->arg, "pods", ns, NULL, pods, done, arg);
}

void proxy_metrics_pods_cancel(proxy_t *px, void *call)
{
	if (call && px->metrics->cancel)
		px->metrics->cancel(call);
}
