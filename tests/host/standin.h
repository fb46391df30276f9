/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host stand-in (kubicle-standin, tests and the local demo only): a
 * `kubicle serve` (cmd/serve.h) that plays the host cluster, with what a
 * kubelet would serve plugged in through the proxy's public hook
 * (proxy_set_pod_streams in proxy/proxy.h): pods/log from the pod's
 * annotation kubicle.dev/log (standin_log.c), pods/exec as a local process
 * of this server (standin_exec.c), pods/portforward to this machine's
 * loopback ports (standin_portforward.c). The hooks get a request that the
 * proxy has authorized and checked against the pod (it exists, the container
 * is valid, a node is assigned, it is an upgrade); they read the pod again
 * through proxy_object_get and answer the request with lib/http.h.
 *
 * It runs what a user with create on pods/exec asks on this machine, as
 * this user: never a product binary, never on a tenant.
 *
 * Threading: loop thread only.
 */
#ifndef KB_TESTS_HOST_STANDIN_H
#define KB_TESTS_HOST_STANDIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "lib/http.h"
#include "lib/json.h"
#include "lib/ws.h"
#include "proxy/proxy.h"

/* The stand-in's state, the hooks' arg (standin_main.c owns it). */
struct standin {
	uv_loop_t *loop; /* borrowed: serve's loop */
	proxy_t *proxy;  /* borrowed: serve's proxy */
};

/* The string at a dotted path of obj (borrowed), or NULL. */
static inline const char *standin_str(const json_t *obj, const char *path)
{
	return json_string_value(kb_json_path(obj, path));
}

/* Answers req with a Kubernetes Status (kind Status, status Failure for
 * code >= 400) whose message is the formatted text. Takes req. */
void standin_reply_status(kb_http_req_t *req, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* standin_log.c: the pod_log hook (proxy_pod_log_fn); arg is struct standin. */
void standin_pod_log(void *arg, kb_http_req_t *req, const char *ns, const char *name,
		     const char *query);

/* standin_exec.c: runs the command of an exec request (query, as the
 * client sent it) in `container` of `pod` (borrowed for the call) and speaks
 * v5.channel.k8s.io over WebSocket, or v4 over SPDY/3.1; answers req (takes
 * it). `id` ("ns/name") names the pod in logs. */
void standin_exec(struct standin *st, kb_http_req_t *req, const char *id, const json_t *pod,
		  const char *container);
/* standin_portforward.c: answers a port-forward request by connecting to
 * this machine's loopback ports (SPDY, or SPDY tunnelled in WebSocket);
 * takes req. */
void standin_portforward(struct standin *st, kb_http_req_t *req, const char *id, const json_t *pod);

/* standin_exec.c, for both: one unmasked WebSocket message on an upgraded
 * connection (-ECONNRESET when http is NULL); a close frame with `code`,
 * then the end of the connection (its abort callback unset first). */
int standin_ws_send(kb_http_req_t *http, enum kb_ws_op op, const void *data, size_t len);
void standin_ws_end(kb_http_req_t *http, uint16_t code);
/* The handshakes of both: a version 13 WebSocket request's accept value; the
 * 101 head of a SPDY/3.1 upgrade to `proto`, negotiated by
 * X-Stream-Protocol-Version as the kubelet does (a client naming other
 * protocols only is refused, 403; one naming none gets proto unless `named`).
 * 0, or -1 with the refusal answered (req taken). */
int standin_ws_accept(kb_http_req_t *req, char accept[KB_WS_ACCEPT_LEN + 1]);
int standin_spdy_head(kb_http_req_t *req, const char *proto, bool named, char *head, size_t len);

#endif
