/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kubicle-standin: the tests' and the local demo's host cluster (standin.h).
 * It is `kubicle serve` (cmd/serve.h, the same flags) plus, once the API
 * listens:
 *   - KAI Scheduler's Queue kind (queues.scheduling.run.ai/v2), which
 *     tests/host/scheduler.py and `kubicle create` use: the CRD
 *     tests/host/queue-crd.yaml is created unless the store has it (a real
 *     host has it from KAI's chart);
 *   - pods/log, pods/exec and pods/portforward answered as a kubelet would,
 *     through proxy_set_pod_streams (pods/attach is refused: nothing to
 *     attach to).
 * Pods arrive from the tenants' syncers and from tests, with any field: a
 * host stand-in refuses none of them (unlike a syncing tenant).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/serve.h"
#include "lib/log.h"
#include "lib/pki.h" /* kb_read_file */
#include "tests/host/standin.h"

#ifndef STANDIN_QUEUE_CRD
#error "STANDIN_QUEUE_CRD: the path of tests/host/queue-crd.yaml (tests/host/meson.build)"
#endif

#define CRD_MANAGER "kubicle-standin"

static const char usage[] =
    "kubicle-standin: a host cluster for tests and the local demo (never a tenant:\n"
    "its pods/exec runs what a user asks as local processes of this server).\n"
    "\n"
    "Usage:\n" /* then serve's flags */;

void standin_reply_status(kb_http_req_t *req, int code, const char *reason, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion",
			       "v1", "metadata", "status", code < 400 ? "Success" : "Failure",
			       "message", msg, "reason", reason, "code", code);
	char *body = st ? json_dumps(st, JSON_COMPACT) : NULL;
	kb_http_respond(req, code, "application/json", "Cache-Control: no-cache, private\r\n",
			body ? body : "{}", body ? strlen(body) : 2);
	free(body);
	json_decref(st);
}

/* The container an exec names (the proxy has checked it), or the pod's only
 * one, into buf. */
static void exec_container(const char *query, const json_t *pod, char *buf, size_t len)
{
	char *q = strdup(query ? query : "");
	char *cur = q, *k, *v;
	buf[0] = '\0';
	while (q && kb_http_query_next(&cur, &k, &v))
		if (strcmp(k, "container") == 0)
			snprintf(buf, len, "%s", v);
	free(q);
	const char *only =
	    standin_str(json_array_get(kb_json_path(pod, "spec.containers"), 0), "name");
	if (!buf[0] && only)
		snprintf(buf, len, "%s", only);
}

/* The pod_connect hook: exec and portforward; attach has nothing to attach
 * to. */
static void pod_connect(void *arg, kb_http_req_t *req, const char *ns, const char *name,
			const char *sub, const char *query)
{
	struct standin *st = arg;
	if (strcmp(sub, "exec") != 0 && strcmp(sub, "portforward") != 0) {
		standin_reply_status(req, 400, "BadRequest",
				     "pods/%s is not served here: this server is a host stand-in "
				     "without a kubelet",
				     sub);
		return;
	}
	json_t *pod = NULL;
	if (proxy_object_get(st->proxy, "", "v1", "pods", ns, name, &pod) < 0) {
		standin_reply_status(req, 404, "NotFound", "pods \"%s\" not found", name);
		return;
	}
	char id[512], container[256];
	snprintf(id, sizeof(id), "%s/%s", ns ? ns : "", name);
	if (strcmp(sub, "exec") == 0) {
		exec_container(query, pod, container, sizeof(container));
		standin_exec(st, req, id, pod, container);
	} else {
		standin_portforward(st, req, id, pod);
	}
	json_decref(pod);
}

/* A YAML plain scalar (a string from kb_yaml_load) as JSON's type: true,
 * false, null or an integer (new reference); NULL when it stays a string. */
static json_t *scalar_type(const json_t *v)
{
	const char *s = json_string_value(v);
	char *end;
	if (!s || !*s)
		return NULL;
	if (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)
		return json_boolean(s[0] == 't');
	if (strcmp(s, "null") == 0)
		return json_null();
	long long n = strtoll(s, &end, 10);
	return *end ? NULL : json_integer(n);
}

/* kb_yaml_load makes every scalar a string: the CRD file's plain scalars
 * get their JSON types back (it quotes nothing that must stay a string). */
static void yaml_types(json_t *v)
{
	const char *key;
	json_t *child, *typed;
	size_t i;
	void *tmp;
	json_object_foreach_safe (v, tmp, key, child) {
		if ((typed = scalar_type(child)))
			json_object_set_new(v, key, typed);
		else
			yaml_types(child);
	}
	json_array_foreach (v, i, child) {
		if ((typed = scalar_type(child)))
			json_array_set_new(v, i, typed);
		else
			yaml_types(child);
	}
}

/* Creates the Queue CRD unless it exists. */
static int ensure_queue_crd(struct standin *st)
{
	char *text = NULL, err[256] = "";
	json_t *crd = NULL, *have = NULL;
	int rc = kb_read_file(STANDIN_QUEUE_CRD, &text, NULL);
	if (rc < 0) {
		kb_err("standin", "%s: %s", STANDIN_QUEUE_CRD, strerror(-rc));
		return rc;
	}
	if (!(crd = kb_yaml_load(text, strlen(text), err, sizeof(err)))) {
		kb_err("standin", "%s: %s", STANDIN_QUEUE_CRD, err);
		rc = -EINVAL;
		goto out;
	}
	yaml_types(crd);
	const char *name = standin_str(crd, "metadata.name");
	rc = proxy_object_get(st->proxy, "apiextensions.k8s.io", "v1", "customresourcedefinitions",
			      NULL, name ? name : "", &have);
	if (rc == -ENOENT)
		rc = proxy_object_create(st->proxy, "apiextensions.k8s.io", "v1",
					 "customresourcedefinitions", crd, CRD_MANAGER, NULL);
	if (rc < 0)
		kb_err("standin", "CRD %s: %s", name ? name : "?", strerror(-rc));
out:
	json_decref(have);
	json_decref(crd);
	free(text);
	return rc;
}

static int standin_start(void *arg, const struct serve_env *env)
{
	struct standin *st = arg;
	if (env->host_namespace) { /* its hooks would replace the stand-in's */
		kb_err("standin", "a host stand-in is a host, not a tenant with --host-namespace");
		return -EINVAL;
	}
	st->loop = env->loop;
	st->proxy = env->proxy;
	int rc = ensure_queue_crd(st);
	if (rc < 0)
		return rc;
	proxy_set_pod_streams(st->proxy, standin_pod_log, pod_connect, st);
	kb_warn("standin", "host stand-in: pods/exec runs commands as local processes");
	return 0;
}

static void standin_stop(void *arg)
{
	struct standin *st = arg;
	proxy_set_pod_streams(st->proxy, NULL, NULL, NULL);
}

int main(int argc, char **argv)
{
	static struct standin st;
	char text[sizeof(usage) + 4096];
	snprintf(text, sizeof(text), "%s%s", usage, serve_usage);
	const struct serve_hooks hooks = {
	    .usage = text, .start = standin_start, .stop = standin_stop, .arg = &st};
	return serve_run(argc, argv, &hooks);
}
