/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods that run on a host cluster: GET pods/log, pods/exec, pods/attach,
 * pods/portforward, and the pod fields a syncing tenant refuses.
 *
 * pods/log and the connect subresources are checked here as kube checks
 * them, then handed to the hooks of proxy_set_host (a syncing tenant: the
 * syncer proxies them to the host pod) or proxy_set_pod_streams (the tests'
 * host stand-in, tests/host/). A server with neither runs no pods: an empty
 * log, and 400 for the others.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/http.h"
#include "lib/util.h"
#include "proxy/api/api.h"
#include "proxy/validation/validate.h"
#include "proxy/admission/webhook.h"

static void set_streams(proxy_t *px, proxy_pod_log_fn pod_log, proxy_pod_connect_fn pod_connect,
			void *arg)
{
	px->api->pod_log = pod_log;
	px->api->pod_connect = pod_connect;
	px->api->pod_log_arg = arg;
}

void proxy_set_host(proxy_t *px, proxy_pod_log_fn pod_log, proxy_pod_connect_fn pod_connect,
		    void *arg)
{
	px->api->host_sync = pod_log != NULL;
	set_streams(px, pod_log, pod_connect, arg);
}

void proxy_set_pod_streams(proxy_t *px, proxy_pod_log_fn pod_log, proxy_pod_connect_fn pod_connect,
			   void *arg)
{
	px->api->host_sync = false;
	set_streams(px, pod_log, pod_connect, arg);
}

/* The last value of `key` in a raw query, decoded into out (len bytes);
 * false when the key is absent. */
static bool query_value(const char *query, const char *key, char *out, size_t len)
{
	char *buf = strdup(query ? query : "");
	char *cur = buf, *k, *v;
	bool found = false;
	while (buf && kb_http_query_next(&cur, &k, &v))
		if (strcmp(k, key) == 0) {
			snprintf(out, len, "%s", v);
			found = true;
		}
	free(buf);
	return found;
}

void hostpod_log(struct req *r)
{
	json_t *pod = NULL;
	int rc = store_get(r->px->store, r->res->store_key, r->ns ? r->ns : "", r->name, &pod);
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		return;
	}
	json_decref(pod);
	if (!r->px->api->pod_log) { /* no container ran anywhere: kube's answer for no node */
		reply_text(r, 200, "text/plain", "", 0);
		return;
	}
	prom_handoff(r);
	kb_http_req_t *http = r->http;
	r->http = NULL; /* the hook answers it */
	r->px->api->pod_log(r->px->api->pod_log_arg, http, r->ns, r->name, http->query);
}

/* ---- pods/exec, pods/attach, pods/portforward ----------------------------------
 * Checked here as kube's streamLocation checks them (the pod, its container,
 * its node), then passed to the host's kubelet through the host API (the
 * syncer), or to the stand-in's hook.
 */

/* Container names of a list joined by spaces, as Go's %s of a []string. */
static void container_names(const json_t *list, struct kb_buf *b)
{
	size_t i;
	json_t *c;
	json_array_foreach (list, i, c)
		kb_buf_printf(b, "%s%s", i ? " " : "",
			      obj_str(c, "name") ? obj_str(c, "name") : "");
}

static bool has_container(const json_t *spec, const char *name)
{
	static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, lists[l]), i, c) {
			const char *n = obj_str(c, "name");
			if (n && strcmp(n, name) == 0)
				return true;
		}
	}
	return false;
}

/* The container the request names, or the pod's only one, in buf; NULL when
 * it has answered 400. */
static const char *connect_container(struct req *r, const json_t *pod, char *buf, size_t len)
{
	if (!query_value(r->http->query, "container", buf, len))
		buf[0] = '\0';
	const json_t *spec = json_object_get(pod, "spec");
	if (buf[0]) {
		if (has_container(spec, buf))
			return buf;
		reply_statusf(r, 400, "BadRequest", "container %s is not valid for pod %s", buf,
			      r->name);
		return NULL;
	}
	const json_t *cs = json_object_get(spec, "containers");
	if (json_array_size(cs) == 1) {
		snprintf(buf, len, "%s", obj_str(json_array_get(cs, 0), "name"));
		return buf;
	}
	if (json_array_size(cs) == 0) {
		reply_statusf(r, 400, "BadRequest", "a container name must be specified for pod %s",
			      r->name);
		return NULL;
	}
	struct kb_buf b = {0};
	kb_buf_printf(&b, "a container name must be specified for pod %s, choose one of: [",
		      r->name);
	container_names(cs, &b);
	kb_buf_puts(&b, "]");
	const json_t *init = json_object_get(spec, "initContainers");
	if (json_array_size(init)) {
		kb_buf_puts(&b, " or one of the init containers: [");
		container_names(init, &b);
		kb_buf_puts(&b, "]");
	}
	reply_statusf(r, 400, "BadRequest", "%s", b.data ? b.data : "");
	kb_buf_free(&b);
	return NULL;
}

/* The options object of a connect request, as kube decodes its query
 * (PodExecOptions, PodAttachOptions, PodPortForwardOptions), for the
 * webhooks' CONNECT review. */
static json_t *connect_options(const struct req *r)
{
	const char *kind = strcmp(r->sub, "exec") == 0     ? "PodExecOptions"
			   : strcmp(r->sub, "attach") == 0 ? "PodAttachOptions"
							   : "PodPortForwardOptions";
	json_t *o = json_pack("{s:s,s:s}", "kind", kind, "apiVersion", "v1");
	bool pf = strcmp(r->sub, "portforward") == 0, exec = strcmp(r->sub, "exec") == 0;
	json_t *list = json_array();
	char *buf = r->http->query ? strdup(r->http->query) : NULL, *cur = buf, *k, *v;
	while (buf && kb_http_query_next(&cur, &k, &v)) {
		if (!pf && (strcmp(k, "stdin") == 0 || strcmp(k, "stdout") == 0 ||
			    strcmp(k, "stderr") == 0 || strcmp(k, "tty") == 0))
			json_object_set_new(o, k, json_boolean(kb_http_query_bool(v)));
		else if (!pf && strcmp(k, "container") == 0)
			json_object_set_new(o, k, json_string(v));
		else if ((exec && strcmp(k, "command") == 0) || (pf && strcmp(k, "ports") == 0))
			json_array_append_new(list, pf ? json_integer(strtol(v, NULL, 10))
						       : json_string(v));
	}
	free(buf);
	if (exec || json_array_size(list)) /* ports: omitted when none, as kube's */
		json_object_set_new(o, exec ? "command" : "ports", list);
	else
		json_decref(list);
	return o;
}

void hostpod_connect(struct req *r)
{
	const char *m = r->http->method;
	if (strcmp(m, "GET") != 0 && strcmp(m, "POST") != 0) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	/* kube calls the webhooks first, with the options of the query */
	json_t *opts = connect_options(r);
	int rc = webhook_connect(r, opts);
	json_decref(opts);
	if (rc != 0)
		return; /* answered, or in its webhooks (served again after) */
	json_t *pod = NULL;
	rc = store_get(r->px->store, r->res->store_key, r->ns ? r->ns : "", r->name, &pod);
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		return;
	}
	char container[256];
	bool ports = strcmp(r->sub, "portforward") == 0;
	const char *node = obj_str(pod, "spec.nodeName");
	if (!ports && !connect_container(r, pod, container, sizeof(container)))
		goto out;
	if (!node || !*node) {
		reply_statusf(r, 400, "BadRequest", "pod %s does not have a host assigned",
			      r->name);
		goto out;
	}
	if (!kb_http_req_upgrade(r->http)) {
		reply_statusf(r, 400, "BadRequest", "Upgrade request required");
		goto out;
	}
	if (r->px->api->pod_connect) {
		prom_handoff(r);
		kb_http_req_t *http = r->http;
		r->http = NULL; /* the hook answers it */
		r->px->api->pod_connect(r->px->api->pod_log_arg, http, r->ns, r->name, r->sub,
					http->query);
	} else {
		reply_statusf(r, 400, "BadRequest",
			      "pods/%s is not served here: this server runs no pods (no kubelet, "
			      "no host cluster)",
			      r->sub);
	}
out:
	json_decref(pod);
}

/* ---- fields refused when pods run on a host ------------------------------------ */

static void refuse(json_t *causes, const char *field, const char *what)
{
	val_add(causes, "FieldValueForbidden", field,
		"%s is not allowed: this cluster's pods run on a shared host cluster", what);
}

static void refuse_containers(const json_t *spec, const char *list, json_t *causes)
{
	size_t i, j;
	json_t *c, *p;
	char f[128];
	json_array_foreach (json_object_get(spec, list), i, c) {
		if (json_is_true(obj_get(c, "securityContext.privileged"))) {
			snprintf(f, sizeof(f), "spec.%s[%zu].securityContext.privileged", list, i);
			refuse(causes, f, "privileged");
		}
		json_array_foreach (json_object_get(c, "ports"), j, p) {
			if (json_integer_value(json_object_get(p, "hostPort")) != 0) {
				snprintf(f, sizeof(f), "spec.%s[%zu].ports[%zu].hostPort", list, i,
					 j);
				refuse(causes, f, "hostPort");
			}
		}
	}
}

void hostpod_refuse_fields(const json_t *pod, bool policy, json_t *causes)
{
	const json_t *spec = json_object_get(pod, "spec");
	const char *node = json_string_value(json_object_get(spec, "nodeName"));
	if (node && *node)
		refuse(causes, "spec.nodeName", "nodeName");
	if (policy)
		return; /* its hostFields rule decides (admission.c) */
	static const char *const flags[] = {"hostNetwork", "hostPID", "hostIPC"};
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		char f[64];
		snprintf(f, sizeof(f), "spec.%s", flags[i]);
		if (json_is_true(json_object_get(spec, flags[i])))
			refuse(causes, f, flags[i]);
	}
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		if (json_object_get(v, "hostPath")) {
			char f[64];
			snprintf(f, sizeof(f), "spec.volumes[%zu].hostPath", i);
			refuse(causes, f, "hostPath");
		}
	}
	refuse_containers(spec, "initContainers", causes);
	refuse_containers(spec, "containers", causes);
	refuse_containers(spec, "ephemeralContainers", causes);
}

static json_t *pod_causes(const json_t *pod, bool policy)
{
	json_t *causes = json_array();
	hostpod_refuse_fields(pod, policy, causes);
	hostrefs_refuse(pod, causes);
	return causes;
}

void hostpod_refuse(const json_t *pod, const json_t *old, bool policy, json_t *causes)
{
	if (old && json_equal(json_object_get(pod, "spec"), json_object_get(old, "spec")))
		return;
	json_t *now = pod_causes(pod, policy), *was = old ? pod_causes(old, policy) : NULL;
	size_t i, j;
	json_t *c, *w;
	json_array_foreach (now, i, c) {
		bool known = false;
		json_array_foreach (was, j, w)
			known |= json_equal(c, w);
		if (!known)
			json_array_append(causes, c);
	}
	json_decref(now);
	json_decref(was);
}

/* ---- pods/binding ---------------------------------------------------------------
 * What a scheduler calls to place a pod (the host stand-in's test scheduler
 * uses it as KAI does on a real host): sets spec.nodeName once and the
 * PodScheduled condition; 409 when the pod is already bound. Refused on a
 * syncing tenant, whose pods the host's scheduler places.
 */
static void set_scheduled(json_t *pod, time_t now)
{
	json_t *st = json_object_get(pod, "status");
	if (!json_is_object(st)) {
		st = json_object();
		json_object_set_new(pod, "status", st);
	}
	json_t *conds = json_object_get(st, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(st, "conditions", conds);
	}
	for (size_t i = json_array_size(conds); i-- > 0;) {
		const char *t =
		    json_string_value(json_object_get(json_array_get(conds, i), "type"));
		if (t && strcmp(t, "PodScheduled") == 0)
			json_array_remove(conds, i);
	}
	char ts[40];
	kb_time_rfc3339(now, ts, sizeof(ts));
	json_array_append_new(conds,
			      json_pack("{s:s,s:s,s:n,s:s}", "type", "PodScheduled", "status",
					"True", "lastProbeTime", "lastTransitionTime", ts));
}

void hostpod_binding(struct req *r)
{
	if (r->px->api->host_sync) {
		/* the host's scheduler places the host pod and the syncer copies
		 * its node back: a tenant's binding would only make its pod say
		 * it runs where it does not (spec.nodeName never reaches the
		 * host, syncer/translate.c strip_host_fields) */
		reply_statusf(r, 403, "Forbidden",
			      "pods/binding is not allowed: the shared host cluster's scheduler "
			      "places this cluster's pods");
		return;
	}
	json_t *b = json_loadb(r->http->body, r->http->body_len, 0, NULL);
	const char *node = obj_str(b, "target.name");
	json_t *pod = NULL;
	int rc;
	if (!node || !*node) {
		reply_invalid(r, "Binding", r->name,
			      json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueRequired",
					"message", "Required value", "field", "target.name"));
		goto out;
	}
	rc = store_get(r->px->store, r->res->store_key, r->ns, r->name, &pod);
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		goto out;
	}
	const char *have = obj_str(pod, "spec.nodeName");
	if (have && *have) {
		reply_statusf(r, 409, "Conflict",
			      "Operation cannot be fulfilled on pods/binding \"%s\": pod %s is "
			      "already assigned to node \"%s\"",
			      r->name, r->name, have);
		goto out;
	}
	obj_set_str(pod, "spec.nodeName", node);
	set_scheduled(pod, r->now);
	rc = store_update(r->px->store, r->res->store_key, r->ns, r->name, pod, obj_rv(pod), NULL);
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		goto out;
	}
	json_t *ok = reply_status_object(201, NULL, NULL, NULL);
	reply_json(r, 201, ok);
	json_decref(ok);
out:
	json_decref(pod);
	json_decref(b);
}
