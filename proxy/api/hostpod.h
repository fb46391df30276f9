/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods that run on a host cluster (proxy/api/hostpod.c): pods/log and the
 * streaming subresources passed to the host, pods/binding, and the pod
 * fields a syncing tenant refuses.
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_HOSTPOD_H
#define KB_PROXY_API_HOSTPOD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/http.h"
#include "lib/ws.h"

struct proxy;
struct req;
struct proxy_resource;

/* hostpod.c: GET pods/log (passthrough to the host when syncing; else the
 * host stand-in's logs from the pod's kubicle.dev/log annotation). */
void hostpod_log(struct req *r);

/* hostpod.c: pods/exec, pods/attach, pods/portforward (upgrade requests):
 * passed to the host when syncing, else the stand-in's exec (when on). */
void hostpod_connect(struct req *r);

/* standin_exec.c: runs the command of an exec request on the host stand-in
 * in `container` of `pod` (borrowed: hostpod_connect has read it) and speaks
 * v5.channel.k8s.io over WebSocket; answers r->http (takes it). */
void standin_exec(struct req *r, const json_t *pod, const char *container);

/* standin_portforward.c: answers a port-forward request on the host stand-in
 * by connecting to this machine's loopback ports (SPDY, or SPDY tunnelled in
 * WebSocket). */
void standin_portforward(struct req *r, const json_t *pod);

/* standin_exec.c, for both: one unmasked WebSocket message on an upgraded
 * connection (-ECONNRESET when http is NULL); a close frame with `code`,
 * then the end of the connection (its abort callback unset first). */
int standin_ws_send(kb_http_req_t *http, enum kb_ws_op op, const void *data, size_t len);
void standin_ws_end(kb_http_req_t *http, uint16_t code);

/* The handshakes of both: a version 13 WebSocket request's accept value; the
 * 101 head of a SPDY/3.1 upgrade to `proto`, negotiated by
 * X-Stream-Protocol-Version as the kubelet does (a client naming other
 * protocols only is refused, 403; one naming none gets proto unless `named`).
 * 0, or -1 with the refusal answered. */
int standin_ws_accept(struct req *r, char accept[KB_WS_ACCEPT_LEN + 1]);
int standin_spdy_head(struct req *r, const char *proto, bool named, char *head, size_t len);

/* hostpod.c: a pod spec field that would reach into the host, for 422
 * causes when px->host_sync (json causes array borrowed). With a policy,
 * only spec.nodeName: the policy's hostFields rule decides the rest. */
void hostpod_refuse_fields(const json_t *pod, bool policy, json_t *causes);

/* hostpod.c: POST pods/binding (a scheduler places a pod on a node). */
void hostpod_binding(struct req *r);

#endif
