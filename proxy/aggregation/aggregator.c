/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The aggregation layer's service-backed APIServices, as kube-aggregator
 * serves them: requests under /apis/<group>/<version>/ are authenticated and
 * authorized here (RBAC on the request's attributes, as for any resource),
 * then proxied to the APIService's tenant Service over TLS (its caBundle or
 * insecureSkipTLSVerify, the name <svc>.<ns>.svc) with the caller's identity
 * in the front-proxy headers X-Remote-User, X-Remote-Group (one line per
 * group) and X-Remote-Extra-*, under a client certificate of the tenant's
 * request-header CA. The CA and the header names are published in
 * kube-system/extension-apiserver-authentication as kube-apiserver
 * publishes them, with the Role extension-apiserver-authentication-reader.
 *
 * The availability controller (kube's available_controller) keeps each
 * APIService's Available condition: the Service exists (ServiceNotFound),
 * listens on the port (ServicePortError), has Endpoints (EndpointsNotFound)
 * with an address for the port (MissingEndpoints), and GET
 * /apis/<group>/<version> answers 2xx within 5 s as system:kube-aggregator
 * in system:masters (FailedDiscoveryCheck); else Passed. That answer is
 * also the group/version's discovery (aggregator_discovery). A request to an
 * APIService that is not available is answered 503 "service unavailable",
 * as kube's proxy handler answers it.
 *
 * DESIGN: the backends are kept in a list built from the APIService watch
 * (apiservice.c forwards its events). Checks run every 10 s, at once when an
 * APIService changes, when Services or Endpoints changed (checked once a
 * second) and after a proxied request could not connect. A proxied request
 * leaves the request machinery (prom_handoff, like pods/log) and streams the
 * backend's answer chunk by chunk, so watches stream; its request is kept
 * until the answer's head, whose code its audit event gets; it holds a reference
 * to its backend, which outlives its APIService until the last request on
 * it ends (its HTTP client is closed then).
 *
 * Threading: loop thread only. The front-proxy files are read and written
 * at start (blocking file I/O, as at start-up elsewhere).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/httpc.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/pki.h"
#include "lib/util.h"
#include "proxy/aggregation/aggregation.h"
#include "proxy/model/openapi.h"

#define CHECK_EVERY_S  10
#define CHECK_TIMEOUT  5000
#define CM_NAME        "extension-apiserver-authentication"
#define PROXY_CN       "front-proxy-client"
#define UNAVAILABLE    "service unavailable\n"
#define MAX_FWD_HEADER 64
#define BACKLOG_HIGH   (1024 * 1024) /* bytes queued to a client before the backend pauses */
#define BACKLOG_LOW    (256 * 1024)
#define DRAIN_CHECK_MS 20

struct agg_backend {
	struct agg_backend *prev, *next; /* agg->list, while its APIService exists */
	struct aggregator *agg;
	unsigned refs; /* the list's, and one per request on it */
	bool gone;     /* its APIService is deleted */
	char name[320], group[256], version[64];
	char svc_ns[64], svc_name[256];
	int port;
	int group_p, version_p;
	char *ca_pem; /* the decoded caBundle, or NULL */
	bool insecure;
	bool available; /* its stored Available condition is True */
	kb_httpc_t *client;
	kb_httpc_req_t *check; /* the discovery check in flight */
	void *check_ctx;       /* its argument (struct check_ctx) */
	bool recheck;          /* check again when this one ends */
	json_t *discovery;     /* the last APIResourceList it answered, or NULL */
	kb_httpc_req_t *oa;    /* the read of its /openapi/v3 in flight */
	char *openapi_path;    /* its /openapi/v3 document of the group/version, or NULL */
	kb_httpc_req_t *oa2;   /* the read of its /openapi/v2 in flight */
	json_t *openapi_v2;    /* its /openapi/v2 paths of the group/version and definitions */
};

struct aggregator {
	struct proxy *px;
	struct agg_backend *list;
	uv_timer_t timer;
	unsigned ticks;
	unsigned v2_gen;          /* bumped when a backend's /openapi/v2 changes */
	struct cfg_watch cw;      /* Services and Endpoints */
	char *cert_pem, *key_pem; /* the proxy client certificate, or NULL */
	bool closing;
};

/* ---- backends ---------------------------------------------------------------------- */

static void backend_unref(struct agg_backend *b)
{
	if (--b->refs)
		return;
	if (b->check)
		kb_httpc_cancel(b->check);
	if (b->client)
		kb_httpc_close(b->client);
	json_decref(b->discovery);
	json_decref(b->openapi_v2);
	free(b->openapi_path);
	free(b->ca_pem);
	free(b);
}

static struct agg_backend *find_gv(struct aggregator *agg, const char *group, const char *version)
{
	for (struct agg_backend *b = agg ? agg->list : NULL; b; b = b->next)
		if (strcmp(b->group, group) == 0 && strcmp(b->version, version) == 0)
			return b;
	return NULL;
}

static struct agg_backend *find_name(struct aggregator *agg, const char *name)
{
	for (struct agg_backend *b = agg ? agg->list : NULL; b; b = b->next)
		if (strcmp(b->name, name) == 0)
			return b;
	return NULL;
}

static bool cond_available(const json_t *obj)
{
	size_t i;
	json_t *c;
	json_array_foreach (obj_get(obj, "status.conditions"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "type")) ?: "", "Available") == 0)
			return strcmp(json_string_value(json_object_get(c, "status")) ?: "",
				      "True") == 0;
	return false;
}

static char *ca_of(const json_t *spec)
{
	const char *b64 = json_string_value(json_object_get(spec, "caBundle"));
	unsigned char *raw = NULL;
	size_t n = 0;
	if (!b64 || !*b64 || kb_base64_decode(b64, strlen(b64), &raw, &n) < 0)
		return NULL;
	char *s = calloc(1, n + 1);
	if (s)
		memcpy(s, raw, n);
	free(raw);
	return s;
}

/* Whether the connection settings of b differ from obj's. */
static bool settings_differ(const struct agg_backend *b, const json_t *obj)
{
	const json_t *spec = json_object_get(obj, "spec");
	char *ca = ca_of(spec);
	bool same = strcmp(b->svc_ns, obj_str(obj, "spec.service.namespace") ?: "") == 0 &&
		    strcmp(b->svc_name, obj_str(obj, "spec.service.name") ?: "") == 0 &&
		    b->port == json_integer_value(obj_get(obj, "spec.service.port")) &&
		    b->insecure == json_is_true(json_object_get(spec, "insecureSkipTLSVerify")) &&
		    strcmp(b->ca_pem ?: "", ca ?: "") == 0;
	free(ca);
	return !same;
}

static void fill(struct agg_backend *b, const json_t *obj)
{
	const json_t *spec = json_object_get(obj, "spec");
	snprintf(b->name, sizeof(b->name), "%s", obj_str(obj, "metadata.name") ?: "");
	snprintf(b->group, sizeof(b->group), "%s", obj_str(obj, "spec.group") ?: "");
	snprintf(b->version, sizeof(b->version), "%s", obj_str(obj, "spec.version") ?: "");
	snprintf(b->svc_ns, sizeof(b->svc_ns), "%s", obj_str(obj, "spec.service.namespace") ?: "");
	snprintf(b->svc_name, sizeof(b->svc_name), "%s", obj_str(obj, "spec.service.name") ?: "");
	json_t *port = obj_get(obj, "spec.service.port");
	b->port = json_is_integer(port) ? (int)json_integer_value(port) : 443;
	b->group_p = (int)json_integer_value(json_object_get(spec, "groupPriorityMinimum"));
	b->version_p = (int)json_integer_value(json_object_get(spec, "versionPriority"));
	free(b->ca_pem);
	b->ca_pem = ca_of(spec);
	b->insecure = json_is_true(json_object_get(spec, "insecureSkipTLSVerify"));
	b->available = cond_available(obj);
}

static void check_start(struct agg_backend *b);

static void backend_drop(struct agg_backend *b)
{
	struct aggregator *agg = b->agg;
	KB_LIST_UNLINK(agg->list, b);
	b->gone = true;
	openapi_invalidate();
	backend_unref(b);
}

/* An APIService was written or deleted (obj: NULL when deleted). */
static void backend_sync(struct aggregator *agg, const char *name, const json_t *obj)
{
	struct agg_backend *b = find_name(agg, name);
	bool service = obj && json_is_object(obj_get(obj, "spec.service"));
	if (!service) {
		if (b)
			backend_drop(b);
		return;
	}
	if (b &&
	    (settings_differ(b, obj) || strcmp(b->group, obj_str(obj, "spec.group") ?: "") != 0 ||
	     strcmp(b->version, obj_str(obj, "spec.version") ?: "") != 0)) {
		backend_drop(b); /* a new client and check for the new settings */
		b = NULL;
	}
	if (b) {
		bool was = b->available;
		fill(b, obj);
		if (was != b->available)
			openapi_invalidate();
		return;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->agg = agg;
	b->refs = 1;
	fill(b, obj);
	KB_LIST_PUSH(agg->list, b);
	openapi_invalidate();
	check_start(b);
}

void aggregator_event(struct proxy *px, const struct store_event *ev)
{
	struct aggregator *agg = px->agg;
	if (agg && !agg->closing)
		backend_sync(agg, ev->name, ev->type == STORE_DELETED ? NULL : ev->obj);
}

/* ---- services ----------------------------------------------------------------------- */

/* kube's ClusterIP service resolver: "<svc>.<ns>.svc:<port>:<addr>:<port>"
 * into ct and "https://<addr>:<port>" into url. 0 or -ENOENT. */
static int resolve(struct proxy *px, const struct agg_backend *b, char *ct, size_t cl, char *url,
		   size_t ul)
{
	json_t *svc = NULL;
	if (store_get(px->store, "/services", b->svc_ns, b->svc_name, &svc) < 0)
		return -ENOENT;
	const char *type = obj_str(svc, "spec.type") ?: "ClusterIP";
	const char *ip = obj_str(svc, "spec.clusterIP");
	char host[300] = "";
	if (strcmp(type, "ExternalName") == 0 && obj_str(svc, "spec.externalName"))
		snprintf(host, sizeof(host), "%s", obj_str(svc, "spec.externalName"));
	else if (ip && *ip && strcmp(ip, "None") != 0)
		snprintf(host, sizeof(host), strchr(ip, ':') ? "[%s]" : "%s", ip);
	bool port = strcmp(type, "ExternalName") == 0;
	size_t i;
	json_t *p;
	json_array_foreach (obj_get(svc, "spec.ports"), i, p)
		port |= json_integer_value(json_object_get(p, "port")) == b->port;
	json_decref(svc);
	if (!host[0] || !port)
		return -ENOENT;
	snprintf(ct, cl, "%s.%s.svc:%d:%s:%d", b->svc_name, b->svc_ns, b->port, host, b->port);
	snprintf(url, ul, "https://%s:%d", host, b->port);
	return 0;
}

static kb_httpc_t *client_of(struct aggregator *agg, struct agg_backend *b)
{
	if (b->client)
		return b->client;
	char server[400];
	snprintf(server, sizeof(server), "https://%s.%s.svc:%d", b->svc_name, b->svc_ns, b->port);
	struct kb_httpc_opts o = {.server = server,
				  .ca_pem = b->ca_pem,
				  .cert_pem = agg->cert_pem,
				  .key_pem = agg->key_pem,
				  .insecure = b->insecure,
				  .timeout_ms = CHECK_TIMEOUT,
				  .user_agent = "kube-aggregator",
				  .allow = egress_allow, /* the tenant wrote the address */
				  .allow_arg = agg->px};
	if (kb_httpc_new(agg->px->loop, &o, &b->client) < 0)
		b->client = NULL;
	return b->client;
}

/* ---- availability -------------------------------------------------------------------- */

/* Writes the Available condition when it changed (kube's
 * SetAPIServiceCondition: the transition time moves with the status). */
static void set_available(struct aggregator *agg, struct agg_backend *b, bool ok,
			  const char *reason, const char *msg)
{
	json_t *obj = NULL;
	if (proxy_object_get(agg->px, "apiregistration.k8s.io", "v1", "apiservices", NULL, b->name,
			     &obj) < 0)
		return;
	json_t *conds = kb_json_object_at(kb_json_object_at(obj, "status"), "conditions");
	if (!json_is_array(conds)) {
		json_object_set_new(json_object_get(obj, "status"), "conditions", json_array());
		conds = obj_get(obj, "status.conditions");
	}
	json_t *c = NULL, *x;
	size_t i;
	json_array_foreach (conds, i, x)
		if (strcmp(json_string_value(json_object_get(x, "type")) ?: "", "Available") == 0)
			c = x;
	const char *st = ok ? "True" : "False";
	if (c && strcmp(json_string_value(json_object_get(c, "status")) ?: "", st) == 0 &&
	    strcmp(json_string_value(json_object_get(c, "reason")) ?: "", reason) == 0 &&
	    strcmp(json_string_value(json_object_get(c, "message")) ?: "", msg) == 0) {
		json_decref(obj);
		return;
	}
	if (!c || strcmp(json_string_value(json_object_get(c, "status")) ?: "", st) != 0) {
		char ts[40];
		kb_time_rfc3339(time(NULL), ts, sizeof(ts));
		json_t *n = json_pack("{s:s,s:s,s:s}", "type", "Available", "status", st,
				      "lastTransitionTime", ts);
		if (c)
			json_object_update(c, n);
		else
			json_array_append(conds, c = n);
		json_decref(n);
	}
	json_object_set_new(c, "reason", json_string(reason));
	json_object_set_new(c, "message", json_string(msg));
	int rc = proxy_object_update_status(agg->px, "apiregistration.k8s.io", "v1", "apiservices",
					    obj, "kube-apiserver", NULL);
	if (rc < 0 && rc != -ENOENT)
		kb_warn("aggregator", "status of %s: %s", b->name, strerror(-rc));
	else if (rc == 0)
		b->available = ok;
	json_decref(obj);
}

/* The Service and Endpoints checks; true when they pass. */
static bool service_ok(struct aggregator *agg, struct agg_backend *b)
{
	char msg[900];
	json_t *svc = NULL, *ep = NULL;
	if (store_get(agg->px->store, "/services", b->svc_ns, b->svc_name, &svc) < 0) {
		snprintf(msg, sizeof(msg), "service/%s in \"%s\" is not present", b->svc_name,
			 b->svc_ns);
		set_available(agg, b, false, "ServiceNotFound", msg);
		return false;
	}
	bool ok = true;
	const char *type = obj_str(svc, "spec.type") ?: "ClusterIP";
	if (strcmp(type, "ClusterIP") != 0)
		goto out;
	const char *port_name = NULL;
	size_t i, k;
	json_t *p, *s;
	json_array_foreach (obj_get(svc, "spec.ports"), i, p)
		if (!port_name && json_integer_value(json_object_get(p, "port")) == b->port)
			port_name = json_string_value(json_object_get(p, "name")) ?: "";
	if (!port_name) {
		snprintf(msg, sizeof(msg), "service/%s in \"%s\" is not listening on port %d",
			 b->svc_name, b->svc_ns, b->port);
		set_available(agg, b, false, "ServicePortError", msg);
		ok = false;
		goto out;
	}
	if (store_get(agg->px->store, "/endpoints", b->svc_ns, b->svc_name, &ep) < 0) {
		snprintf(msg, sizeof(msg), "cannot find endpoints for service/%s in \"%s\"",
			 b->svc_name, b->svc_ns);
		set_available(agg, b, false, "EndpointsNotFound", msg);
		ok = false;
		goto out;
	}
	bool active = false;
	json_array_foreach (json_object_get(ep, "subsets"), i, s) {
		if (!json_array_size(json_object_get(s, "addresses")))
			continue;
		json_array_foreach (json_object_get(s, "ports"), k, p)
			active |= strcmp(json_string_value(json_object_get(p, "name")) ?: "",
					 port_name) == 0;
	}
	if (!active) {
		snprintf(
		    msg, sizeof(msg),
		    "endpoints for service/%s in \"%s\" have no addresses with port name \"%s\"",
		    b->svc_name, b->svc_ns, port_name);
		set_available(agg, b, false, "MissingEndpoints", msg);
		ok = false;
	}
out:
	json_decref(svc);
	json_decref(ep);
	return ok;
}

/* Go's net/http error text for what curl could not do (peer: the address
 * tried, kb_httpc_req_peer, or ""). */
static void go_error(int err, const char *peer, const char *url, char *buf, size_t len)
{
	char dial[300];
	if (err == -ETIMEDOUT) {
		snprintf(buf, len,
			 "Get \"%s\": context deadline exceeded (Client.Timeout exceeded while "
			 "awaiting headers)",
			 url);
		return;
	}
	whc_dial_error(err, peer, url, dial, sizeof(dial));
	snprintf(buf, len, "Get \"%s\": %s", url, dial);
}

/* kube's OpenAPI v3 aggregation: the backend's /openapi/v3 names the
 * document of its group/version (with its hash), which the tenant's root
 * then lists and /openapi/v3/apis/<g>/<v> proxies. */
static void on_openapi_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
			    void *arg)
{
	(void)req;
	struct agg_backend *b = arg;
	b->oa = NULL;
	char key[400];
	snprintf(key, sizeof(key), "apis/%s/%s", b->group, b->version);
	json_t *root = !err && status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
	const char *url = json_string_value(
	    obj_get(json_object_get(obj_get(root, "paths"), key), "serverRelativeURL"));
	bool had = b->openapi_path != NULL;
	free(b->openapi_path);
	b->openapi_path = url && kb_str_has_prefix(url, "/openapi/v3/") ? strdup(url) : NULL;
	if (had || b->openapi_path)
		openapi_invalidate();
	json_decref(root);
	backend_unref(b);
}

/* kube's OpenAPI v2 aggregation (kube-aggregator pkg/controllers/openapi,
 * the spec downloader and merger): the backend's /openapi/v2, its paths of
 * its own group/version and its definitions, merged into the tenant's. */
static void on_openapi2_done(kb_httpc_req_t *req, int err, long status, const char *body,
			     size_t len, void *arg)
{
	(void)req;
	struct agg_backend *b = arg;
	b->oa2 = NULL;
	json_t *doc = !err && status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *keep = NULL;
	if (json_is_object(json_object_get(doc, "paths"))) {
		char prefix[400];
		const char *k;
		json_t *v;
		int n = snprintf(prefix, sizeof(prefix), "/apis/%s/%s/", b->group, b->version);
		json_t *defs = json_object_get(doc, "definitions");
		json_t *params = json_object_get(doc, "parameters");
		keep = json_pack("{s:o,s:o,s:o}", "paths", json_object(), "definitions",
				 json_is_object(defs) ? json_incref(defs) : json_object(),
				 "parameters",
				 json_is_object(params) ? json_incref(params) : json_object());
		/* the backend's own group/version: "/apis/G/V" and what is below
		 * it, not "/apis/G/V2..." */
		json_object_foreach (json_object_get(doc, "paths"), k, v)
			if (n > 0 && strncmp(k, prefix, (size_t)n - 1) == 0 &&
			    (k[n - 1] == '\0' || k[n - 1] == '/'))
				json_object_set(json_object_get(keep, "paths"), k, v);
	}
	/* json_equal(NULL, NULL) is false: two absent documents are the same */
	if (keep == b->openapi_v2 || json_equal(keep, b->openapi_v2)) {
		json_decref(keep);
	} else {
		json_decref(b->openapi_v2);
		b->openapi_v2 = keep;
		b->agg->v2_gen++;
	}
	json_decref(doc);
	backend_unref(b);
}

static void openapi2_fetch(struct agg_backend *b, kb_httpc_t *client, const char *ct)
{
	static const char *const hdrs[] = {"X-Remote-User: system:kube-aggregator",
					   "X-Remote-Group: system:masters",
					   "Accept: application/json", NULL};
	if (b->oa2 || b->gone)
		return;
	struct kb_httpc_call call = {.method = "GET",
				     .path = "/openapi/v2",
				     .connect_to = ct,
				     .headers = hdrs,
				     .no_limit = true,
				     .max_body = 16 << 20,
				     .on_done = on_openapi2_done,
				     .arg = b};
	b->refs++;
	if (!(b->oa2 = kb_httpc_request(client, &call)))
		b->refs--;
}

static void openapi_fetch(struct agg_backend *b, kb_httpc_t *client, const char *ct)
{
	openapi2_fetch(b, client, ct);
	static const char *const hdrs[] = {"X-Remote-User: system:kube-aggregator",
					   "X-Remote-Group: system:masters", NULL};
	if (b->oa || b->gone)
		return;
	struct kb_httpc_call call = {.method = "GET",
				     .path = "/openapi/v3",
				     .connect_to = ct,
				     .headers = hdrs,
				     .no_limit = true,
				     .max_body = 8 << 20,
				     .on_done = on_openapi_done,
				     .arg = b};
	b->refs++;
	if (!(b->oa = kb_httpc_request(client, &call)))
		b->refs--;
}

struct check_ctx {
	struct agg_backend *b;
	char url[1100];
};

static void on_check_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
			  void *arg)
{
	struct check_ctx *cx = arg;
	struct agg_backend *b = cx->b;
	struct aggregator *agg = b->agg;
	b->check = NULL;
	b->check_ctx = NULL;
	char why[1500], msg[2700];
	if (!b->gone && err == 0 && status >= 200 && status <= 299) {
		json_t *doc = json_loadb(body, len, 0, NULL);
		json_decref(b->discovery);
		b->discovery = json_is_object(doc) ? doc : NULL;
		if (!b->discovery)
			json_decref(doc);
		set_available(agg, b, true, "Passed", "all checks passed");
		openapi_invalidate();
		char ct[700], base[400];
		if (b->client && resolve(agg->px, b, ct, sizeof(ct), base, sizeof(base)) == 0)
			openapi_fetch(b, b->client, ct);
	} else if (!b->gone) {
		if (err)
			go_error(err, kb_httpc_req_peer(req), cx->url, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "bad status from %s: %ld", cx->url, status);
		snprintf(msg, sizeof(msg), "failing or missing response from %s: %s", cx->url, why);
		set_available(agg, b, false, "FailedDiscoveryCheck", msg);
		openapi_invalidate();
	}
	bool again = b->recheck && !b->gone;
	b->recheck = false;
	free(cx);
	if (again)
		check_start(b);
	backend_unref(b);
}

/* kube's available_controller sync of one service-backed APIService. */
static void check_start(struct agg_backend *b)
{
	struct aggregator *agg = b->agg;
	if (agg->closing || b->gone)
		return;
	if (b->check) {
		b->recheck = true;
		return;
	}
	if (!service_ok(agg, b))
		return;
	char ct[700], base[400];
	struct check_ctx *cx = calloc(1, sizeof(*cx));
	kb_httpc_t *client = client_of(agg, b);
	if (!cx || !client || resolve(agg->px, b, ct, sizeof(ct), base, sizeof(base)) < 0) {
		free(cx);
		return;
	}
	char path[400];
	snprintf(path, sizeof(path), "/apis/%s/%s", b->group, b->version);
	snprintf(cx->url, sizeof(cx->url), "%s%s", base, path);
	cx->b = b;
	static const char *const hdrs[] = {"X-Remote-User: system:kube-aggregator",
					   "X-Remote-Group: system:masters", NULL};
	struct kb_httpc_call call = {.method = "GET",
				     .path = path,
				     .connect_to = ct,
				     .headers = hdrs,
				     .no_limit = true,
				     .max_body = 8 << 20,
				     .on_done = on_check_done,
				     .arg = cx};
	b->refs++;
	b->check = kb_httpc_request(client, &call);
	b->check_ctx = cx;
	if (!b->check) {
		b->refs--;
		b->check_ctx = NULL;
		free(cx);
	}
}

static void on_timer(uv_timer_t *t)
{
	kb_timer_start_aligned(t, on_timer, 1000);
	struct aggregator *agg = kb_container_of(t, struct aggregator, timer);
	bool all = ++agg->ticks % CHECK_EVERY_S == 0 || agg->cw.dirty;
	agg->cw.dirty = false;
	if (!all)
		return;
	for (struct agg_backend *b = agg->list; b; b = b->next)
		check_start(b);
}

/* ---- the front proxy's identity -------------------------------------------------------- */

/* kube-apiserver's ConfigMap of its authentication settings, and the Role
 * that reads it (bootstrap policy). */
static void publish_auth(struct proxy *px, const char *rh_ca)
{
	char *ca = NULL;
	store_kv_get(px->store, "ca.crt", &ca);
	json_t *cm = json_pack(
	    "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s,s:s}}", "apiVersion", "v1", "kind",
	    "ConfigMap", "metadata", "name", CM_NAME, "namespace", "kube-system", "data",
	    "client-ca-file", ca ? ca : "", "requestheader-allowed-names", "[\"" PROXY_CN "\"]",
	    "requestheader-client-ca-file", rh_ca, "requestheader-extra-headers-prefix",
	    "[\"X-Remote-Extra-\"]", "requestheader-group-headers", "[\"X-Remote-Group\"]",
	    "requestheader-username-headers", "[\"X-Remote-User\"]");
	free(ca);
	json_t *have = NULL;
	int rc;
	if (proxy_object_get(px, "", "v1", "configmaps", "kube-system", CM_NAME, &have) == 0) {
		/* unchanged (every start but the first, or after a new CA): the
		 * update would store nothing; kube's ClusterAuthenticationTrust
		 * controller too writes only when the data differ */
		rc = 0;
		if (!kb_json_same(json_object_get(have, "data"), json_object_get(cm, "data"))) {
			json_object_set(have, "data", json_object_get(cm, "data"));
			rc = proxy_object_update(px, "", "v1", "configmaps", have, "kube-apiserver",
						 NULL);
		}
		json_decref(have);
	} else {
		rc = proxy_object_create(px, "", "v1", "configmaps", cm, "kube-apiserver", NULL);
	}
	if (rc < 0)
		kb_warn("aggregator", "%s: %s", CM_NAME, strerror(-rc));
	json_decref(cm);
	const struct proxy_resource *rr = resource_find("rbac.authorization.k8s.io", "v1", "roles");
	const char *text;
	size_t len;
	if (rr &&
	    store_get_raw(px->store, rr->store_key, "kube-system",
			  "extension-apiserver-authentication-reader", &text, &len, NULL) == 0)
		return; /* made once, as below */
	json_t *role = json_pack(
	    "{s:s,s:s,s:{s:s,s:s,s:{s:s},s:{s:s}},s:[{s:[s],s:[s],s:[s],s:[s,s,s]}]}", "apiVersion",
	    "rbac.authorization.k8s.io/v1", "kind", "Role", "metadata", "name",
	    "extension-apiserver-authentication-reader", "namespace", "kube-system", "labels",
	    "kubernetes.io/bootstrapping", "rbac-defaults", "annotations",
	    "rbac.authorization.kubernetes.io/autoupdate", "true", "rules", "apiGroups", "",
	    "resources", "configmaps", "resourceNames", CM_NAME, "verbs", "get", "list", "watch");
	rc = proxy_object_create(px, "rbac.authorization.k8s.io", "v1", "roles", role,
				 "kube-apiserver", NULL);
	if (rc < 0 && rc != -EEXIST)
		kb_warn("aggregator", "extension-apiserver-authentication-reader: %s",
			strerror(-rc));
	json_decref(role);
}

/* DIR/front-proxy: the request-header CA (ca.crt) and the proxy's client
 * certificate (admin.crt, CN front-proxy-client); blocking, at start. */
static void front_proxy(struct aggregator *agg)
{
	struct proxy *px = agg->px;
	char dir[1100], path[1200];
	if (!px->data_dir[0])
		return;
	snprintf(dir, sizeof(dir), "%s/front-proxy", px->data_dir);
	int rc;
	if (px->front_proxy_task) {
		rc = kb_pki_client_ca_join(px->front_proxy_task);
		px->front_proxy_task = NULL;
	} else {
		rc = kb_pki_ensure_client_ca(dir, PROXY_CN);
	}
	char *ca = NULL;
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/admin.crt", dir);
		rc = kb_read_file(path, &agg->cert_pem, NULL);
	}
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/admin.key", dir);
		rc = kb_read_file(path, &agg->key_pem, NULL);
	}
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/ca.crt", dir);
		rc = kb_read_file(path, &ca, NULL);
	}
	if (rc < 0) {
		kb_warn("aggregator", "front-proxy certificates in %s: %s", dir, strerror(-rc));
		return;
	}
	publish_auth(px, ca);
	free(ca);
}

/* ---- start, stop --------------------------------------------------------------------- */

void aggregator_prepare(struct proxy *px)
{
	char dir[1100];
	if (!px->data_dir[0] || px->front_proxy_task)
		return;
	snprintf(dir, sizeof(dir), "%s/front-proxy", px->data_dir);
	if (kb_pki_client_ca_start(dir, PROXY_CN, &px->front_proxy_task) < 0)
		px->front_proxy_task = NULL;
}

int aggregator_start(struct proxy *px, const json_t *apiservices)
{
	struct aggregator *agg = calloc(1, sizeof(*agg));
	if (!agg)
		return -ENOMEM;
	agg->px = px;
	px->agg = agg;
	uv_timer_init(px->loop, &agg->timer);
	uv_unref((uv_handle_t *)&agg->timer);
	front_proxy(agg);
	json_t *have = apiservices ? json_incref((json_t *)apiservices) : NULL;
	if (have || proxy_object_list(px, "apiregistration.k8s.io", "v1", "apiservices", NULL,
				      &have) == 0) {
		size_t i;
		json_t *o;
		json_array_foreach (have, i, o)
			backend_sync(agg, obj_str(o, "metadata.name"), o);
		json_decref(have);
	}
	int rc = cfg_watch_start(px, "/services", "/endpoints", &agg->cw);
	if (rc < 0) {
		aggregator_stop(px);
		return rc;
	}
	agg->cw.dirty = false;
	kb_timer_start_aligned(&agg->timer, on_timer, 1000);
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	struct aggregator *agg = kb_container_of((uv_timer_t *)h, struct aggregator, timer);
	free(agg->cert_pem);
	free(agg->key_pem);
	free(agg);
}

void aggregator_stop(struct proxy *px)
{
	struct aggregator *agg = px->agg;
	if (px->front_proxy_task) {
		kb_pki_client_ca_join(px->front_proxy_task);
		px->front_proxy_task = NULL;
	}
	if (!agg)
		return;
	agg->closing = true;
	cfg_watch_stop(&agg->cw);
	for (struct agg_backend *b = agg->list; b; b = b->next) {
		if (b->oa) {
			kb_httpc_cancel(b->oa);
			b->oa = NULL;
			b->refs--;
		}
		if (b->oa2) {
			kb_httpc_cancel(b->oa2);
			b->oa2 = NULL;
			b->refs--;
		}
		if (!b->check)
			continue;
		kb_httpc_cancel(b->check); /* no callback: its reference goes here */
		b->check = NULL;
		free(b->check_ctx);
		b->check_ctx = NULL;
		b->refs--;
	}
	while (agg->list)
		backend_drop(agg->list);
	px->agg = NULL;
	uv_close((uv_handle_t *)&agg->timer, on_closed);
}

/* ---- look-ups for discovery and routing ---------------------------------------------------- */

bool aggregator_backs(struct proxy *px, const char *group, const char *version)
{
	return px && find_gv(px->agg, group, version) != NULL;
}

bool aggregator_backs_group(struct proxy *px, const char *group)
{
	for (struct agg_backend *b = px && px->agg ? px->agg->list : NULL; b; b = b->next)
		if (strcmp(b->group, group) == 0)
			return true;
	return false;
}

void aggregator_foreach(struct proxy *px, aggregator_each_fn fn, void *arg)
{
	for (struct agg_backend *b = px && px->agg ? px->agg->list : NULL; b; b = b->next) {
		struct aggregator_gv gv = {.group = b->group,
					   .version = b->version,
					   .group_priority = b->group_p,
					   .version_priority = b->version_p,
					   .available = b->available,
					   .resources = b->discovery};
		fn(&gv, arg);
	}
}

/* An aggregated discovery resource of a backend's APIResourceList entry,
 * with the subresources ("<plural>/<sub>") of `list` (new reference). */
static json_t *agg_resource(const char *group, const char *version, const json_t *e,
			    const json_t *list)
{
	const char *plural = json_string_value(json_object_get(e, "name"));
	const char *kind = json_string_value(json_object_get(e, "kind"));
	json_t *o = json_pack(
	    "{s:s,s:{s:s,s:s,s:s},s:s,s:s}", "resource", plural, "responseKind", "group", group,
	    "version", version, "kind", kind ? kind : "", "scope",
	    json_is_true(json_object_get(e, "namespaced")) ? "Namespaced" : "Cluster",
	    "singularResource", json_string_value(json_object_get(e, "singularName")) ?: "");
	static const char *const keys[] = {"verbs", "shortNames", "categories"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		if (json_array_size(json_object_get(e, keys[i])))
			json_object_set(o, keys[i], json_object_get(e, keys[i]));
	if (!json_object_get(o, "verbs"))
		json_object_set_new(o, "verbs", json_array());
	json_t *subs = json_array(), *x;
	size_t i, pl = strlen(plural);
	json_array_foreach (list, i, x) {
		const char *n = json_string_value(json_object_get(x, "name"));
		if (!n || strncmp(n, plural, pl) != 0 || n[pl] != '/')
			continue;
		const char *sg = json_string_value(json_object_get(x, "group"));
		const char *sv = json_string_value(json_object_get(x, "version"));
		json_t *so = json_pack(
		    "{s:s,s:{s:s,s:s,s:s},s:O}", "subresource", n + pl + 1, "responseKind", "group",
		    sg ? sg : group, "version", sv ? sv : version, "kind",
		    json_string_value(json_object_get(x, "kind")) ?: "", "verbs",
		    json_object_get(x, "verbs") ? json_object_get(x, "verbs") : json_array());
		json_array_append_new(subs, so);
	}
	if (json_array_size(subs))
		json_object_set_new(o, "subresources", subs);
	else
		json_decref(subs);
	return o;
}

json_t *aggregator_agg_resources(const char *group, const char *version, const json_t *list)
{
	json_t *resources = json_array(), *e;
	size_t i;
	json_array_foreach (list, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));
		if (n && !strchr(n, '/'))
			json_array_append_new(resources, agg_resource(group, version, e, list));
	}
	return resources;
}

/* ---- proxying -------------------------------------------------------------------------------- */

struct agg_call {
	struct proxy_resource res; /* r->res while r lives */
	struct agg_backend *b;
	struct req *r; /* kept (r->async) until the answer's head, for its audit event */
	kb_http_req_t *http;
	kb_httpc_req_t *up;
	bool started;
	bool paused;      /* the backend's answer waits for the client */
	uv_timer_t drain; /* checks the client's backlog while paused */
};

/* Writes r's audit event with the answer's code (0: none), then frees r;
 * the connection stays the call's. */
static void release_req(struct agg_call *c, int code)
{
	struct req *r = c->r;
	if (!r)
		return;
	c->r = NULL;
	if (code)
		audit_log(r, code);
	r->http = NULL;
	r->res = NULL;
	req_free(r);
}

static void on_call_closed(uv_handle_t *h)
{
	free(kb_container_of((uv_timer_t *)h, struct agg_call, drain));
}

static void call_free(struct agg_call *c)
{
	release_req(c, 0);
	backend_unref(c->b);
	uv_close((uv_handle_t *)&c->drain, on_call_closed);
}

/* While paused: the backend's answer resumes once the client has taken
 * most of what it was sent. */
static void on_drain(uv_timer_t *t)
{
	struct agg_call *c = kb_container_of(t, struct agg_call, drain);
	if (kb_http_stream_pending(c->http) > BACKLOG_LOW)
		return;
	uv_timer_stop(&c->drain);
	c->paused = false;
	kb_httpc_pause(c->up, false); /* may deliver bytes at once (on_data) */
}

static bool on_head(kb_httpc_req_t *req, long status, const char *ctype, void *arg)
{
	(void)req;
	struct agg_call *c = arg;
	c->started = true;
	release_req(c, (int)status);
	return kb_http_stream_start(c->http, (int)status, ctype && *ctype ? ctype : "text/plain",
				    NULL) == 0;
}

static bool on_data(kb_httpc_req_t *req, const char *data, size_t len, void *arg)
{
	(void)req;
	struct agg_call *c = arg;
	if (kb_http_stream_write(c->http, data, len) < 0)
		return false;
	if (!c->paused && kb_http_stream_pending(c->http) > BACKLOG_HIGH) {
		c->paused = true; /* flow control: the backend waits for a slow client */
		kb_httpc_pause(c->up, true);
		uv_timer_start(&c->drain, on_drain, DRAIN_CHECK_MS, DRAIN_CHECK_MS);
	}
	return true;
}

static void on_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
		    void *arg)
{
	(void)status;
	(void)body;
	(void)len;
	struct agg_call *c = arg;
	kb_http_req_on_abort(c->http, NULL, NULL);
	if (c->started) {
		kb_http_stream_end(c->http);
	} else {
		char why[900];
		char url[400];
		snprintf(url, sizeof(url), "https://%s.%s.svc:%d", c->b->svc_name, c->b->svc_ns,
			 c->b->port);
		go_error(err ? err : -EIO, err ? kb_httpc_req_peer(req) : "", url, why,
			 sizeof(why));
		const char *msg = strstr(why, "\": ");
		msg = msg ? msg + 3 : why;
		char text[900];
		int n = snprintf(text, sizeof(text), "%s\n", msg);
		release_req(c, 503);
		kb_http_respond(c->http, 503, "text/plain; charset=utf-8",
				"X-Content-Type-Options: nosniff\r\n", text, (size_t)n);
		if (err == -ECONNREFUSED || err == -ETIMEDOUT)
			check_start(c->b); /* the backend may be gone: its status too */
	}
	call_free(c);
}

static void on_abort(kb_http_req_t *http, void *arg)
{
	(void)http;
	struct agg_call *c = arg;
	kb_httpc_cancel(c->up);
	call_free(c);
}

/* Request headers not passed on: the client's credentials and
 * impersonation, hop-by-hop ones, and identity headers it may not set. */
bool aggregator_header_dropped(const char *name)
{
	static const char *const drop[] = {"authorization",
					   "connection",
					   "keep-alive",
					   "host",
					   "proxy-authorization",
					   "proxy-connection",
					   "te",
					   "trailer",
					   "transfer-encoding",
					   "upgrade",
					   "content-length",
					   "expect",
					   "content-type"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(drop); i++)
		if (strcmp(name, drop[i]) == 0)
			return true;
	return kb_str_has_prefix(name, "impersonate-") || kb_str_has_prefix(name, "x-remote-");
}

/* One "X-Remote-Extra-KEY: VALUE" line into *line (malloc'ed; NULL when out
 * of memory or when the value would break the line): the key path-escaped
 * as kube's proxy writes it (transport.NewAuthProxyRoundTripper,
 * url.PathEscape, which leaves ':', '=' and '@' too: not here, a header
 * name cannot hold them). */
static void extra_line(char **line, const char *key, const char *value)
{
	struct kb_buf b = {0};
	*line = NULL;
	if (!value || strpbrk(value, "\r\n"))
		return;
	kb_buf_puts(&b, "X-Remote-Extra-");
	for (const unsigned char *p = (const unsigned char *)key; *p; p++)
		if (isalnum(*p) || strchr("-._~$&+", *p))
			kb_buf_printf(&b, "%c", *p);
		else
			kb_buf_printf(&b, "%%%02X", *p);
	kb_buf_printf(&b, ": %s", value);
	*line = b.data;
}

/* The forwarded headers and the front-proxy identity: NULL-terminated
 * array of malloc'ed lines (the caller frees). */
static char **forward_headers(const struct req *r)
{
	size_t n = 0, max = MAX_FWD_HEADER + (size_t)r->ngroups + 2, nextra = 0;
	const char *k;
	json_t *vals;
	json_object_foreach (r->extra, k, vals)
		nextra += json_array_size(vals);
	max += nextra;
	char **h = calloc(max, sizeof(*h));
	if (!h)
		return NULL;
	const kb_http_req_t *http = r->http;
	for (size_t i = 0; i < http->nheaders && n < MAX_FWD_HEADER; i++) {
		const struct kb_http_header *x = &http->headers[i];
		if (aggregator_header_dropped(x->name) || strpbrk(x->value, "\r\n"))
			continue;
		size_t l = strlen(x->name) + strlen(x->value) + 3;
		if ((h[n] = malloc(l)))
			snprintf(h[n++], l, "%s: %s", x->name, x->value);
	}
	size_t l = strlen(r->user) + 16;
	if ((h[n] = malloc(l)))
		snprintf(h[n++], l, "X-Remote-User: %s", r->user);
	for (int i = 0; i < r->ngroups; i++) {
		l = strlen(r->groups[i]) + 17;
		if ((h[n] = malloc(l)))
			snprintf(h[n++], l, "X-Remote-Group: %s", r->groups[i]);
	}
	json_object_foreach (r->extra, k, vals) {
		size_t i;
		json_t *v;
		json_array_foreach (vals, i, v) {
			extra_line(&h[n], k, json_string_value(v));
			n += h[n] != NULL;
		}
	}
	return h;
}

static void free_lines(char **h)
{
	for (size_t i = 0; h && h[i]; i++)
		free(h[i]);
	free(h);
}

static void reply_unavailable(struct req *r)
{
	reply_raw(r, 503, "text/plain; charset=utf-8", "X-Content-Type-Options: nosniff\r\n",
		  UNAVAILABLE, strlen(UNAVAILABLE));
}

/* Sends r on to c->b; false when it could not start (r is answered). */
static bool pass_on(struct req *r, struct agg_call *c, const char *path_as)
{
	struct aggregator *agg = r->px->agg;
	char ct[700], base[400];
	kb_httpc_t *client = client_of(agg, c->b);
	if (!c->b->available || !client ||
	    resolve(r->px, c->b, ct, sizeof(ct), base, sizeof(base)) < 0) {
		reply_unavailable(r);
		return false;
	}
	const kb_http_req_t *http = r->http;
	size_t pl = strlen(http->path) + strlen(http->query) + 2;
	char *path = malloc(pl);
	char **hdrs = forward_headers(r);
	if (!path || !hdrs) {
		free(path);
		free_lines(hdrs);
		reply_status(r, 500, "InternalError", "out of memory", NULL);
		return false;
	}
	snprintf(path, pl, "%s%s%s", http->path, *http->query ? "?" : "", http->query);
	if (path_as) {
		free(path);
		path = strdup(path_as);
	}
	if (!path) {
		free_lines(hdrs);
		reply_status(r, 500, "InternalError", "out of memory", NULL);
		return false;
	}
	const char *ctype = kb_http_req_header(http, "content-type");
	bool body = http->body_len > 0 || strcmp(http->method, "POST") == 0 ||
		    strcmp(http->method, "PUT") == 0 || strcmp(http->method, "PATCH") == 0;
	struct kb_httpc_call call = {.method = http->method,
				     .path = path,
				     .content_type = ctype,
				     .body = body ? http->body : NULL,
				     .body_len = body ? http->body_len : 0,
				     .stream = true,
				     .no_limit = true,
				     .connect_to = ct,
				     .headers = (const char *const *)hdrs,
				     .on_head = on_head,
				     .on_data = on_data,
				     .on_done = on_done,
				     .arg = c};
	c->up = kb_httpc_request(client, &call);
	free(path);
	free_lines(hdrs);
	if (!c->up) {
		reply_status(r, 500, "InternalError", "out of memory", NULL);
		return false;
	}
	return true;
}

/* r's connection goes to the call (r is kept until the answer's head). */
static void hand_over(struct req *r, struct agg_call *c)
{
	prom_handoff(r);
	c->http = r->http;
	c->r = r;
	r->async = true; /* the call frees it (release_req) */
	kb_http_req_on_abort(c->http, on_abort, c);
}

/* A proxied call of r to backend b, or NULL when r has been answered (out
 * of memory). */
static struct agg_call *call_new(struct req *r, struct agg_backend *b)
{
	struct agg_call *c = calloc(1, sizeof(*c));
	if (!c) {
		reply_status(r, 500, "InternalError", "out of memory", NULL);
		return NULL;
	}
	c->b = b;
	b->refs++;
	uv_timer_init(r->px->loop, &c->drain);
	return c;
}

/* ---- upgraded connections (exec-like) ------------------------------------------------- */

/*
 * A request that asks to switch protocols (Connection: Upgrade: an
 * extension server's exec, attach or port-forward) goes to the backend on
 * a connection of its own, with the same front-proxy identity, and once
 * the backend answers 101 the two connections become one byte pipe, as
 * kube-aggregator's proxy does it (pkg/apiserver/handler_proxy.go
 * ServeHTTP: proxy.NewUpgradeAwareHandler with the upgrade transport).
 * Any other answer is passed back with its body. Both directions pause
 * while the other side's backlog is over BACKLOG_HIGH.
 */
struct agg_pipe {
	struct proxy_resource res; /* r->res while r lives (its audit event) */
	struct agg_backend *b;
	struct req *r;        /* until the answer's head, for its audit event */
	kb_http_req_t *http;  /* the client's; NULL once gone */
	kb_httpc_tunnel_t *t; /* the backend's; NULL once ended */
	bool open;            /* 101 passed on */
	int status;           /* the backend's other answer, else 0 */
	struct kb_buf body;   /* its body */
	bool http_paused, t_paused;
	uv_timer_t timer; /* resumes a paused side once the other drained */
	bool timer_on;
};

static void pipe_timer_closed(uv_handle_t *h)
{
	struct agg_pipe *p = h->data;
	kb_buf_free(&p->body);
	free(p);
}

static void pipe_audit(struct agg_pipe *p, int code)
{
	struct req *r = p->r;
	if (!r)
		return;
	p->r = NULL;
	if (code)
		audit_log(r, code);
	r->http = NULL;
	r->res = NULL;
	req_free(r);
}

static void pipe_free(struct agg_pipe *p)
{
	pipe_audit(p, 0);
	backend_unref(p->b);
	uv_close((uv_handle_t *)&p->timer, pipe_timer_closed);
}

static void pipe_check(uv_timer_t *h)
{
	struct agg_pipe *p = h->data;
	if (p->t_paused && p->http && kb_http_stream_pending(p->http) < BACKLOG_LOW) {
		p->t_paused = false;
		kb_httpc_tunnel_pause(p->t, false);
	}
	if (p->http_paused && p->t && kb_httpc_tunnel_pending(p->t) < BACKLOG_LOW) {
		p->http_paused = false;
		kb_http_raw_pause(p->http, false);
	}
	if (!p->t_paused && !p->http_paused) {
		uv_timer_stop(&p->timer);
		p->timer_on = false;
	}
}

static void pipe_watch(struct agg_pipe *p)
{
	if (!p->timer_on) {
		p->timer_on = true;
		uv_timer_start(&p->timer, pipe_check, DRAIN_CHECK_MS, DRAIN_CHECK_MS);
	}
}

/* From the client to the backend. */
static void pipe_from_client(kb_http_req_t *http, const char *data, size_t len, void *arg)
{
	struct agg_pipe *p = arg;
	if (!p->t || kb_httpc_tunnel_write(p->t, data, len) < 0)
		return;
	if (kb_httpc_tunnel_pending(p->t) > BACKLOG_HIGH) {
		p->http_paused = true;
		kb_http_raw_pause(http, true);
		pipe_watch(p);
	}
}

static void pipe_client_gone(kb_http_req_t *http, void *arg)
{
	(void)http;
	struct agg_pipe *p = arg;
	p->http = NULL;
	if (p->t) {
		kb_httpc_tunnel_close(p->t);
		p->t = NULL;
	}
	pipe_free(p);
}

/* The backend's 101 header lines but those the server writes itself. */
static void pipe_head(kb_httpc_tunnel_t *t, int status, const char *headers, size_t len, void *arg)
{
	(void)t;
	struct agg_pipe *p = arg;
	if (status != 101) {
		p->status = status;
		return;
	}
	static const char *const own[] = {"date:", "content-length:", "transfer-encoding:"};
	struct kb_buf h = {0};
	for (const char *line = headers, *end = headers + len; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) + 1 : (size_t)(end - line);
		bool keep = true;
		for (size_t i = 0; i < KB_ARRAY_SIZE(own); i++)
			keep &=
			    !(n > strlen(own[i]) && strncasecmp(line, own[i], strlen(own[i])) == 0);
		if (keep)
			kb_buf_append(&h, line, n);
		line += n;
	}
	if (h.len && h.data[h.len - 1] != '\n')
		kb_buf_puts(&h, "\r\n");
	pipe_audit(p, 101);
	int rc = kb_http_upgrade(p->http, h.data ? h.data : "", pipe_from_client, p);
	kb_buf_free(&h);
	if (rc == 0)
		p->open = true; /* else the client is gone: its abort ends the pipe */
}

/* From the backend to the client (or the body of its other answer). */
static void pipe_data(kb_httpc_tunnel_t *t, const char *data, size_t len, void *arg)
{
	struct agg_pipe *p = arg;
	if (!p->open) {
		kb_buf_append(&p->body, data, len);
		return;
	}
	if (!p->http || kb_http_raw_write(p->http, data, len) < 0)
		return;
	if (kb_http_stream_pending(p->http) > BACKLOG_HIGH) {
		p->t_paused = true;
		kb_httpc_tunnel_pause(t, true);
		pipe_watch(p);
	}
}

static void pipe_closed(kb_httpc_tunnel_t *t, int err, void *arg)
{
	(void)t;
	struct agg_pipe *p = arg;
	p->t = NULL;
	if (p->http) {
		kb_http_req_on_abort(p->http, NULL, NULL);
		if (p->open) {
			kb_http_raw_end(p->http);
		} else if (p->status) {
			bool json = p->body.len && p->body.data[0] == '{';
			pipe_audit(p, p->status);
			kb_http_respond(p->http, p->status,
					json ? "application/json" : "text/plain; charset=utf-8",
					NULL, p->body.data ? p->body.data : "", p->body.len);
		} else {
			/* kube's proxy error for a backend it cannot reach */
			char text[300];
			int n = snprintf(text, sizeof(text), "%s\n", strerror(-err));
			pipe_audit(p, 503);
			kb_http_respond(p->http, 503, "text/plain; charset=utf-8",
					"X-Content-Type-Options: nosniff\r\n", text, (size_t)n);
			if (err == -ECONNREFUSED || err == -ETIMEDOUT)
				check_start(p->b);
		}
		p->http = NULL;
	}
	pipe_free(p);
}

/* The forwarded headers for a tunnel: forward_headers' lines (the
 * tunnel writes its own User-Agent), then Connection and Upgrade. */
static char *tunnel_headers(const struct req *r)
{
	char **lines = forward_headers(r);
	const char *up = kb_http_req_header(r->http, "upgrade");
	struct kb_buf b = {0};
	if (!lines || !up || strpbrk(up, "\r\n")) {
		free_lines(lines);
		return NULL;
	}
	for (size_t i = 0; lines[i]; i++)
		if (strncasecmp(lines[i], "user-agent:", 11) != 0)
			kb_buf_printf(&b, "%s\r\n", lines[i]);
	kb_buf_printf(&b, "Connection: Upgrade\r\nUpgrade: %s\r\n", up);
	free_lines(lines);
	return b.data;
}

/* r (an upgrade request, authorized) to backend b, taken or answered; res:
 * r's row (NULL: not a resource request). */
static void pass_upgrade(struct req *r, struct agg_backend *b, const struct proxy_resource *res)
{
	struct aggregator *agg = r->px->agg;
	char ct[700], base[400];
	kb_httpc_t *client = client_of(agg, b);
	if (!b->available || !client || resolve(r->px, b, ct, sizeof(ct), base, sizeof(base)) < 0) {
		reply_unavailable(r);
		return;
	}
	const kb_http_req_t *http = r->http;
	size_t pl = strlen(http->path) + strlen(http->query) + 2;
	char *path = malloc(pl), *hdrs = tunnel_headers(r);
	struct agg_pipe *p = calloc(1, sizeof(*p));
	if (!path || !hdrs || !p) {
		free(path);
		free(hdrs);
		free(p);
		reply_status(r, 500, "InternalError", "out of memory", NULL);
		return;
	}
	snprintf(path, pl, "%s%s%s", http->path, *http->query ? "?" : "", http->query);
	struct kb_httpc_tunnel_cbs cbs = {
	    .on_head = pipe_head, .on_data = pipe_data, .on_close = pipe_closed, .arg = p};
	p->t = kb_httpc_tunnel_to(client, http->method, path, hdrs, ct, &cbs);
	free(path);
	free(hdrs);
	if (!p->t) {
		free(p);
		reply_status(r, 500, "InternalError", "out of memory", NULL);
		return;
	}
	p->b = b;
	b->refs++;
	if (res) {
		p->res = *res;
		r->res = &p->res;
	}
	uv_timer_init(r->px->loop, &p->timer);
	p->timer.data = p;
	prom_handoff(r);
	p->http = r->http;
	p->r = r;
	r->async = true; /* the pipe frees it (pipe_audit) */
	kb_http_req_on_abort(p->http, pipe_client_gone, p);
}

bool aggregator_route(struct req *r, bool is_resource)
{
	struct aggregator *agg = r->px->agg;
	if (!agg || r->nsegs < 3 || strcmp(r->segs[0], "apis") != 0)
		return false;
	struct agg_backend *b = find_gv(agg, r->segs[1], r->segs[2]);
	if (!b)
		return false;
	struct agg_call *c = call_new(r, b);
	if (!c)
		return true;
	if (is_resource) {
		c->res = (struct proxy_resource){.group = b->group,
						 .version = b->version,
						 .kind = "",
						 .list_kind = "",
						 .plural = r->plural,
						 .singular = "",
						 .namespaced = r->ns != NULL};
		r->res = &c->res;
	}
	if (kb_http_req_upgrade(r->http)) {
		bool ok = authz_authorize(r) == 0;
		r->res = NULL;
		if (ok)
			pass_upgrade(r, b, is_resource ? &c->res : NULL);
		if (!r->async)
			r->res = NULL;
		call_free(c);
		return true;
	}
	if (authz_authorize(r) < 0 || !pass_on(r, c, NULL)) {
		r->res = NULL;
		call_free(c);
		return true;
	}
	hand_over(r, c);
	return true;
}

void aggregator_openapi_paths(struct proxy *px, json_t *paths)
{
	char key[400], url[600];
	for (struct agg_backend *b = px && px->agg ? px->agg->list : NULL; b; b = b->next) {
		if (!b->available || !b->openapi_path)
			continue;
		const char *hash = strstr(b->openapi_path, "?hash=");
		snprintf(key, sizeof(key), "apis/%s/%s", b->group, b->version);
		snprintf(url, sizeof(url), "/openapi/v3/%s%s", key, hash ? hash : "");
		json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url));
	}
}

bool aggregator_openapi(struct req *r)
{
	struct aggregator *agg = r->px->agg;
	if (!agg || r->nsegs != 5 || strcmp(r->segs[2], "apis") != 0)
		return false;
	struct agg_backend *b = find_gv(agg, r->segs[3], r->segs[4]);
	if (!b || !b->openapi_path)
		return false;
	struct agg_call *c = call_new(r, b);
	if (!c)
		return true;
	if (!pass_on(r, c, b->openapi_path)) {
		call_free(c);
		return true;
	}
	hand_over(r, c);
	return true;
}

unsigned aggregator_openapi_v2_gen(struct proxy *px)
{
	/* the documents' generation and which of them are served now */
	unsigned h = px && px->agg ? px->agg->v2_gen : 0, i = 1;
	for (struct agg_backend *b = px && px->agg ? px->agg->list : NULL; b; b = b->next, i++)
		h = h * 31 + (b->available && b->openapi_v2 ? i : 0);
	return h;
}

bool aggregator_openapi_v2_merge(struct proxy *px, json_t *doc)
{
	bool any = false;
	json_t *paths = json_object_get(doc, "paths"), *defs = json_object_get(doc, "definitions");
	for (struct agg_backend *b = px && px->agg ? px->agg->list : NULL; b; b = b->next) {
		if (!b->available || !b->openapi_v2)
			continue;
		any = true;
		if (!json_is_object(paths) || !json_is_object(defs))
			continue;
		/* the tenant's own paths win; a clashing definition of the
		 * backend's is renamed (kube-aggregator's merge) */
		openapi_v2_merge(doc, b->openapi_v2);
	}
	return any;
}
