/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API front's entry: starts the HTTPS listener, authenticates each
 * request, splits its path and query, and routes it to health, version,
 * discovery, OpenAPI or the resource handlers; starts and stops every layer
 * and wires the upward hooks (px->client, the CSR row's write check).
 *
 * DESIGN: the layers, lowest first: cel, model, patch and validation, core,
 * auth, admission, api, aggregation, then this file (dns beside them, on
 * model only; controllers on top, on proxy/client.h only). A layer calls and
 * includes only itself and the layers below; what must go up is a hook set
 * at start (px->client, r->resume, a row's write_check and serve,
 * crd_on_change, prom_add_source, struct req_ext). tests/layout/layers.py
 * holds the order and fails on any arrow against it. Where this differs
 * from ../shared/LAYOUT-REVIEW.md, and why:
 * - discovery and the OpenAPI documents are served by aggregation/ (the
 *   review put them in api/): they merge the service-backed APIServices'
 *   groups and documents, which is what kube-aggregator serves in kube too,
 *   and putting them below aggregation would need two more hooks;
 * - the public headers proxy.h and client.h may be included by any layer:
 *   they only declare the contract (lifecycle, hooks, the in-process client)
 *   that modules of several layers implement; what a layer calls is still
 *   judged by the file defining it, so admission calling the client (defined
 *   in api/) is an arrow against the rule, and goes through px->client;
 * - the refused host fields of a syncing tenant's pods stay in
 *   api/hostpod.c beside the pod passthrough (the review moved them to
 *   admission/): only the API's write path calls them, and the tenant
 *   policy's own hostFields rule is admission's already;
 * - bench/ stays at the top (the review moved it under tests/): the
 *   benchmarks' one command is bench/run.sh in every note and issue.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <openssl/x509.h>

#include "lib/log.h"
#include "lib/util.h"
#include "proxy/aggregation/aggregation.h"
#include "proxy/model/openapi.h"
#include "proxy/admission/vap.h"
#include "proxy/admission/webhook.h"
#include "proxy/core/health.h"

/* Go's strconv.ParseBool as kube's isPrettyPrint reads it: 1 for
 * 1/t/T/TRUE/true/True, 0 for anything else, -1 for an empty value. */
static int parse_go_bool(const char *v)
{
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
	if (!*v)
		return -1;
	for (size_t i = 0; i < KB_ARRAY_SIZE(yes); i++)
		if (strcmp(v, yes[i]) == 0)
			return 1;
	return 0;
}

static void parse_query(struct req *r)
{
	struct query *q = &r->q;
	memset(q, 0, sizeof(*q));
	q->timeout_seconds = -1;
	q->grace_period = -1;
	q->send_initial_events = -1;
	q->pretty = -1;
	q->buf = strdup(r->http->query ? r->http->query : "");
	char *cur = q->buf, *k, *v;
	while (cur && kb_http_query_next(&cur, &k, &v)) {
		if (strcmp(k, "labelSelector") == 0)
			q->label_selector = v;
		else if (strcmp(k, "fieldSelector") == 0)
			q->field_selector = v;
		else if (strcmp(k, "resourceVersion") == 0)
			q->resource_version = v;
		else if (strcmp(k, "resourceVersionMatch") == 0)
			q->resource_version_match = v;
		else if (strcmp(k, "continue") == 0)
			q->cont = v;
		else if (strcmp(k, "fieldManager") == 0)
			q->field_manager = v;
		else if (strcmp(k, "propagationPolicy") == 0)
			q->propagation_policy = v;
		else if (strcmp(k, "limit") == 0)
			q->limit = strtol(v, NULL, 10);
		else if (strcmp(k, "timeoutSeconds") == 0)
			q->timeout_seconds = strtol(v, NULL, 10);
		else if (strcmp(k, "gracePeriodSeconds") == 0)
			q->grace_period = strtol(v, NULL, 10);
		else if (strcmp(k, "watch") == 0)
			q->watch = kb_http_query_bool(v);
		else if (strcmp(k, "sendInitialEvents") == 0)
			q->send_initial_events = kb_http_query_bool(v);
		else if (strcmp(k, "allowWatchBookmarks") == 0)
			q->allow_bookmarks = kb_http_query_bool(v);
		else if (strcmp(k, "dryRun") == 0)
			q->dry_run = strcmp(v, "All") == 0;
		else if (strcmp(k, "pretty") == 0)
			q->pretty = parse_go_bool(v);
		else if (strcmp(k, "force") == 0)
			q->force = kb_http_query_bool(v);
		else if (strcmp(k, "fieldValidation") == 0)
			q->validation = strcmp(v, "Strict") == 0   ? FV_STRICT
					: strcmp(v, "Ignore") == 0 ? FV_IGNORE
								   : FV_WARN;
		else if (strcmp(k, "includeObject") == 0)
			q->include = strcmp(v, "Object") == 0 ? INC_OBJECT
				     : strcmp(v, "None") == 0 ? INC_NONE
							      : INC_METADATA;
	}
}

/* Splits the path into decoded segments; -EINVAL for hostile paths. */
static int split_path(struct req *r)
{
	r->pathbuf = strdup(r->http->path);
	if (!r->pathbuf)
		return -ENOMEM;
	char *p = r->pathbuf;
	if (*p != '/')
		return -EINVAL;
	while (*p == '/')
		p++;
	while (*p) {
		if (r->nsegs == (int)KB_ARRAY_SIZE(r->segs))
			return -EINVAL;
		char *seg = p;
		char *slash = strchr(p, '/');
		if (slash) {
			*slash = '\0';
			p = slash + 1;
		} else {
			p += strlen(p);
		}
		if (kb_http_unescape(seg, false) < 0 || !*seg || strcmp(seg, ".") == 0 ||
		    strcmp(seg, "..") == 0 || strchr(seg, '/'))
			return -EINVAL;
		r->segs[r->nsegs++] = seg;
	}
	return 0;
}

static void reply_not_found(struct req *r)
{
	reply_status(r, 404, "NotFound", "the server could not find the requested resource",
		     json_pack("{s:[{s:s,s:s}]}", "causes", "reason", "UnexpectedServerResponse",
			       "message", "404 page not found"));
}

static void serve_version(struct req *r)
{
	json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "major", KB_K8S_MAJOR,
			      "minor", KB_K8S_MINOR, "emulationMajor", KB_K8S_MAJOR,
			      "emulationMinor", KB_K8S_MINOR, "gitVersion", KB_K8S_GIT_VERSION,
			      "gitCommit", "kubicle", "gitTreeState", "clean", "buildDate",
			      "2026-11-29T00:00:00Z", "goVersion", "c17", "compiler", "gcc");
	json_object_set_new(v, "platform", json_string("linux/amd64"));
	reply_json(r, 200, v);
	json_decref(v);
}

static bool is_health(const struct req *r)
{
	return r->nsegs >= 1 &&
	       (strcmp(r->segs[0], "healthz") == 0 || strcmp(r->segs[0], "livez") == 0 ||
		strcmp(r->segs[0], "readyz") == 0);
}

/* Anonymous requests may reach only what system:public-info-viewer allows. */
static bool is_public(const struct req *r)
{
	return is_health(r) || (r->nsegs == 1 && strcmp(r->segs[0], "version") == 0);
}

/* Fills group/version/ns/plural/name/sub from /api/v1/... or /apis/g/v/... */
static int route_parse(struct req *r)
{
	int i;
	if (strcmp(r->segs[0], "api") == 0) {
		if (r->nsegs < 3)
			return -ENOENT;
		r->group = "";
		r->version = r->segs[1];
		i = 2;
	} else {
		if (r->nsegs < 4)
			return -ENOENT;
		r->group = r->segs[1];
		r->version = r->segs[2];
		i = 3;
	}
	int left = r->nsegs - i;
	char **s = &r->segs[i];
	/* namespaces/<ns>/<plural>[/<name>[/<sub>]] unless it is the namespace itself */
	if (strcmp(s[0], "namespaces") == 0 && left >= 3 &&
	    !(left == 3 && (strcmp(s[2], "status") == 0 || strcmp(s[2], "finalize") == 0))) {
		r->ns = s[1];
		s += 2;
		left -= 2;
	}
	if (left > 3)
		return -ENOENT;
	r->plural = s[0];
	r->name = left > 1 ? s[1] : NULL;
	r->sub = left > 2 ? s[2] : NULL;
	return 0;
}

/* route_parse, then the row of the resource. */
static int route_resource(struct req *r)
{
	if (route_parse(r) < 0)
		return -ENOENT;
	r->res = resource_find(r->group, r->version, r->plural);
	if (!r->res)
		return -ENOENT;
	if (r->ns && !r->res->namespaced)
		return -ENOENT;
	return 0;
}

/* The Kubernetes verb of a request (RBAC's "get", "list", "watch", ...). */
static const char *request_verb(const struct req *r, bool is_resource)
{
	const char *m = r->http->method;
	if (!is_resource)
		return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 ? "get"
		       : strcmp(m, "POST") == 0                        ? "post"
		       : strcmp(m, "PUT") == 0                         ? "put"
		       : strcmp(m, "DELETE") == 0                      ? "delete"
		       : strcmp(m, "PATCH") == 0                       ? "patch"
								       : "options";
	if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
		return r->name ? "get" : r->q.watch ? "watch" : "list";
	if (strcmp(m, "POST") == 0)
		return "create";
	if (strcmp(m, "PUT") == 0)
		return "update";
	if (strcmp(m, "PATCH") == 0)
		return "patch";
	if (strcmp(m, "DELETE") == 0)
		return r->name ? "delete" : "deletecollection";
	return "unknown";
}

static void route(struct req *r)
{
	/* non-resource paths outside /api and /apis are authorized here */
	if (!is_public(r) && (r->nsegs == 0 || (strcmp(r->segs[0], "api") != 0 &&
						strcmp(r->segs[0], "apis") != 0))) {
		r->verb = request_verb(r, false);
		if (authz_authorize(r) < 0)
			return;
	}
	if (r->nsegs == 0) {
		json_t *paths = json_pack("{s:[s,s,s,s,s,s,s,s,s]}", "paths", "/api", "/apis",
					  "/healthz", "/livez", "/metrics", "/openapi/v2",
					  "/openapi/v3", "/readyz", "/version");
		reply_json(r, 200, paths);
		json_decref(paths);
		return;
	}
	if (is_health(r)) {
		health_serve(r);
		return;
	}
	if (r->nsegs == 1 && strcmp(r->segs[0], "version") == 0) {
		serve_version(r);
		return;
	}
	if (r->nsegs == 1 && strcmp(r->segs[0], "metrics") == 0 &&
	    (strcmp(r->http->method, "GET") == 0 || strcmp(r->http->method, "HEAD") == 0)) {
		prom_serve(r);
		return;
	}
	if (strcmp(r->segs[0], "openapi") == 0) {
		if (!docs_serve(r))
			reply_not_found(r);
		return;
	}
	if (strcmp(r->segs[0], "api") != 0 && strcmp(r->segs[0], "apis") != 0) {
		reply_not_found(r);
		return;
	}
	bool is_resource = !(r->nsegs <= 2 || (strcmp(r->segs[0], "apis") == 0 && r->nsegs == 3));
	/* a group/version of a service-backed APIService is proxied (it takes
	 * precedence over a local one of the same name, metrics.k8s.io's) */
	if (r->nsegs >= 3 && strcmp(r->segs[0], "apis") == 0 &&
	    aggregator_backs(r->px, r->segs[1], r->segs[2])) {
		if (is_resource && route_parse(r) < 0) {
			reply_not_found(r);
			return;
		}
		r->verb = request_verb(r, is_resource);
		if (aggregator_route(r, is_resource))
			return;
	}
	if (is_resource && route_resource(r) < 0) {
		reply_not_found(r);
		return;
	}
	r->verb = request_verb(r, is_resource);
	if (authz_authorize(r) < 0)
		return;
	if (!is_resource) {
		if (!discovery_handle(r))
			reply_not_found(r);
		return;
	}
	handle_resource(r);
}

static void on_request(kb_http_req_t *http, void *arg)
{
	struct req *r = calloc(1, sizeof(*r));
	if (!r) {
		kb_http_respond(http, 503, "text/plain", NULL, "busy", 4);
		return;
	}
	r->http = http;
	r->px = arg;
	r->now = time(NULL);
	r->recv_us = kb_now_us();
	audit_init(r);
	parse_query(r);
	prom_begin(r);
	const char *accept = kb_http_req_header(http, "accept");
	r->want_table = accept && strstr(accept, "as=Table");
	if (split_path(r) < 0) {
		reply_not_found(r);
	} else if (auth_authenticate(r) < 0 && (req_forget_user(r), !is_public(r))) {
		reply_status(r, 401, "Unauthorized", "Unauthorized", NULL);
	} else {
		route(r);
	}
	if (r->async)
		return; /* answered and freed later (metrics.c, webhook.c) */
	/* A watch keeps r->http and takes ownership of r (r->http stays set). */
	if (r->http && r->q.watch) {
		audit_log(r, 200);
		return;
	}
	if (r->http)
		reply_status(r, 500, "InternalError", "no response", NULL);
	req_free(r);
}

/* The HTTP server's options: the budget of bytes held for slow watch readers
 * comes from KUBICLE_WATCH_BUFFER_BYTES (default 64 MiB; see lib/http.h). */
static struct kb_http_server_opts http_opts(void)
{
	const char *v = getenv("KUBICLE_WATCH_BUFFER_BYTES");
	long long n = v ? strtoll(v, NULL, 10) : 0;
	return (struct kb_http_server_opts){.stream_budget = n > 0 ? (size_t)n : 0};
}

static void on_tick(uv_timer_t *t)
{
	kb_timer_start_aligned(t, on_tick, 1000);
	struct proxy *px = kb_container_of(t, struct proxy, tick);
	watch_tick(px);
	ns_tick(px);
	prom_tick(px);
}

int proxy_start(uv_loop_t *loop, const struct proxy_opts *opts, proxy_t **out)
{
	struct proxy *px = calloc(1, sizeof(*px));
	if (!px)
		return -ENOMEM;
	px->loop = loop;
	px->floor = -1; /* POLICY_FLOOR_NONE until proxy_set_floor */
	px->client = &api_client;
	px->api = calloc(1, sizeof(*px->api));
	px->metrics = calloc(1, sizeof(*px->metrics));
	if (!px->api || !px->metrics) {
		free(px->api);
		free(px->metrics);
		free(px);
		return -ENOMEM;
	}
	px->store = opts->store;
	snprintf(px->listen, sizeof(px->listen), "%s", opts->listen);
	snprintf(px->advertise, sizeof(px->advertise), "%s",
		 opts->advertise_host ? opts->advertise_host : "127.0.0.1");
	if (opts->data_dir)
		snprintf(px->data_dir, sizeof(px->data_dir), "%s", opts->data_dir);
	int rc = egress_start(px, opts);
	if (rc == 0 && (rc = prom_start(px)) < 0)
		egress_stop(px);
	if (rc < 0) {
		free(px->api);
		free(px->metrics);
		free(px);
		return rc;
	}
	/* the front proxy's certificates meanwhile, on a thread */
	aggregator_prepare(px);
	/* the RBAC defaults before the namespaces: they name none, and the
	 * namespaces' kube-root-ca.crt waits for the CA (opts->ca_wait) */
	if ((rc = auth_start(px)) < 0 || (rc = authz_start(px)) < 0 || (rc = audit_open(px)) < 0)
		goto fail_auth;
	if (opts->ca_wait && (rc = opts->ca_wait(opts->wait_arg)) < 0)
		goto fail_auth;
	if ((rc = ns_bootstrap(px)) < 0)
		goto fail_auth;
	rc = csr_register();
	if (rc == 0)
		rc = crd_start(px);
	if (rc == 0)
		rc = webhook_start(px);
	if (rc == 0)
		rc = admission_start(px);
	if (rc == 0)
		rc = vap_start(px);
	if (rc == 0)
		rc = apiservice_start(px);
	if (rc < 0)
		goto fail_auth;
	uv_timer_init(loop, &px->tick); /* started by proxy_listen; closed by proxy_stop */
	*out = px;
	return 0;
fail_auth:
	apiservice_stop(px);
	aggregator_stop(px); /* a front-proxy thread still running */
	vap_stop(px);
	admission_stop(px);
	webhook_stop(px);
	audit_close(px);
	authz_stop(px);
	auth_stop(px);
	prom_stop(px);
	egress_stop(px);
	free(px->api);
	free(px->metrics);
	free(px);
	return rc;
}

int proxy_listen(proxy_t *px, const struct proxy_opts *opts, int *port_out)
{
	SSL_CTX *tls = opts->tls;
	int rc = 0;
	if (!tls && (rc = opts->tls_wait ? opts->tls_wait(opts->wait_arg, &tls) : -EINVAL) < 0)
		return rc;
	struct kb_http_server_opts hopts = http_opts();
	rc = kb_http_server_start(px->loop, opts->listen, tls, &hopts, on_request, px, &px->http,
				  &px->port);
	if (rc < 0)
		return rc;
	if ((rc = ns_reconcile_api_endpoints(px)) < 0)
		kb_warn("proxy", "the kubernetes Endpoints: %s", strerror(-rc));
	kb_timer_start_aligned(&px->tick, on_tick, 1000);
	uv_unref((uv_handle_t *)&px->tick);
	if (port_out)
		*port_out = px->port;
	return 0;
}

static void on_tick_closed(uv_handle_t *h)
{
	struct proxy *px = kb_container_of((uv_timer_t *)h, struct proxy, tick);
	prom_stop(px);
	egress_stop(px);
	free(px->api);
	free(px->metrics);
	free(px);
}

void proxy_stop(proxy_t *px)
{
	px->stopping = true;
	store_flush(px->store);
	watch_close_all(px);
	apiservice_stop(px);
	vap_stop(px);
	admission_stop(px);
	webhook_stop(px);
	api_internal_free(px);
	authz_stop(px);
	audit_close(px);
	auth_stop(px);
	kb_http_server_stop(px->http);
	uv_close((uv_handle_t *)&px->tick, on_tick_closed);
}
