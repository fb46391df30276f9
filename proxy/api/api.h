/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Serving the API: the verbs on the resource table (handlers.c), the write
 * path (write.c), watches, Tables, namespaces, CRDs' rows, subresources
 * (pods' log, exec, binding, eviction; the in-process client's writes in
 * api_internal.c). Included by api/ and the layers above it. Loop thread
 * only.
 */
#ifndef KB_PROXY_API_H
#define KB_PROXY_API_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/ws.h"
#include "proxy/admission/admission.h"
struct watch;
struct pending_create;
struct pending_write;

/* The API layer's state on the server (px->api), allocated with it. */
struct api {
	struct watch *watches; /* every open watch stream (watch.c) */
	size_t nwatches;
	bool ns_pending; /* a namespace is terminating: clean up on tick (namespace.c) */
	/* hostpod.c: the host passthrough (proxy_set_host) */
	bool host_sync;                   /* pods run on a host: refuse host-reaching pod fields */
	proxy_pod_log_fn pod_log;         /* pods/log passthrough, or NULL */
	proxy_pod_connect_fn pod_connect; /* pods/exec, attach, portforward, or NULL */
	void *pod_log_arg;
	bool standin_exec; /* proxy_set_standin_exec */
	/* api_internal.c: the controllers' writes in their webhooks, and who
	 * hears of a refusal */
	struct pending_create *pending_creates;
	struct pending_write *pending_writes;
	proxy_write_refused_fn write_refused;
	void *write_refused_arg;
};

/* virtual.c: resources that are not stored (reviews, ...): answers POST. */
void virtual_handle(struct req *r);

/* subres.c: subresources served by a module of their own (pods/log,
 * serviceaccounts/token, ...). True when it answered the request. */
bool subres_handle(struct req *r);

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

/* eviction.c: POST pods/eviction (kube's EvictionREST). */
void eviction_handle(struct req *r);

/* crd.c: CustomResourceDefinitions turn into resource rows at start-up and
 * whenever one changes. */
int crd_start(struct proxy *px);

/* crd.c: fn(arg) after the rows changed (kube's crd-registration
 * controller listens: the aggregation layer's APIServices of CRD groups);
 * one listener, NULL removes it. arg must live until removed. */
typedef void (*crd_change_fn)(void *arg);
void crd_on_change(crd_change_fn fn, void *arg);

/* crd.c: a CRD about to be deleted (borrowed, modified) gets the
 * customresourcecleanup finalizer, as kube adds it at delete time. */
void crd_before_delete(json_t *crd);

/* crd.c: field checks of a body for a row without a protobuf message: CRD
 * objects (defaults, validation) and custom objects (unknown fields pruned
 * or refused with Strict, schema defaults; their schema validation is
 * crd_check_rules'). obj is borrowed and modified. 0, or answered (400/422)
 * and -EINVAL. */
int crd_check_fields(struct req *r, json_t *obj);

/* A custom object's validation in kube's order, on obj against old (NULL on
 * create): the schema (ratcheting unchanged values), list-type uniqueness,
 * then the x-kubernetes-validations rules unless a cause so far is of a
 * kind kube stops at (then kube's "some validation rules were not checked"
 * note); failures appended to causes, ratcheted rule failures to
 * r->warnings. Returns causes added. */
int crd_check_rules(struct req *r, const json_t *obj, const json_t *old, json_t *causes);

/* crd.c: the scale subresource of custom objects (the CRD's replica paths).
 * True when it answered. */
bool crd_subres(struct req *r);

/* Records r's write of obj over old (NULL: a create) in obj's managedFields,
 * under r's field manager (fallback without one) and r's subresource. */
void req_track_fields(struct req *r, const json_t *old, json_t *obj, const char *fallback);

/* A write through /scale: obj (borrowed, modified) is old with the new
 * replicas; it is written as any update and answered as a Scale. */
void req_write_scale(struct req *r, const json_t *old, json_t *obj);

/* A Scale (borrowed), as a Table when the client asked for one. */
void reply_scale(struct req *r, int code, const json_t *scale);

/* handlers.c */
void handle_resource(struct req *r);

/* The pod delete of pods/eviction, as kube's store.Delete with
 * ValidateAllObjectFunc (no admission of its own): pod (borrowed) with the
 * Eviction's DeleteOptions doc (borrowed, may be NULL), pre_rv (NULL: the
 * doc's) as resourceVersion precondition, dry_run or the doc's dryRun.
 * 0, or a negative errno once it has answered. */
int handle_delete_evicted(struct req *r, const json_t *doc, const char *pre_rv, bool dry_run,
			  json_t *pod);

/* api_internal.c: forgets the controllers' writes still in their webhooks
 * (after webhook_stop dropped the calls), at shutdown. */
void proxy_pending_creates_free(struct proxy *px);

/* Shared write paths used by handlers, namespaces and bootstrap. */
int object_create(struct proxy *px, const struct proxy_resource *res, json_t *obj, json_t **out);

/* api_internal.c: the in-process client's calls as a table for the layers
 * below (px->client). */
extern const struct core_client api_client;

/* write.c: the write path's defaults (kube's per-kind defaults, after the
 * allocations they leave to the server: a Service's ClusterIP). */
void write_defaults(struct proxy *px, const struct proxy_resource *res, json_t *obj);

/* write.c: mutating webhooks, authorization of the write (authz_admit),
 * metadata + kind validation (on failure answers 422 and returns -EINVAL),
 * the admission chain (admission_check: may change obj; answers 403,
 * returns -EACCES), then the validating webhooks; -EINPROGRESS while a
 * webhook call is out (the request is served again after it). */
int write_validate(struct req *r, json_t *obj, const json_t *old);

/* watch.c */
void watch_start(struct req *r);
void watch_tick(struct proxy *px);
void watch_close_all(struct proxy *px);

/* table.c */
json_t *table_build(struct req *r, json_t *items /* borrowed array */, const char *rv,
		    const char *cont, bool headers);

/* The Table of a /scale answer (scale borrowed). New reference. */
json_t *table_build_scale(struct req *r, const json_t *scale);

/* namespace.c */
int ns_bootstrap(struct proxy *px);

/* flowcontrol.c: the mandatory exempt and catch-all pairs of FlowSchemas and
 * PriorityLevelConfigurations, made when missing. */
int flowcontrol_bootstrap(struct proxy *px);

/* The `kubernetes` Service's Endpoints and EndpointSlice, as kube-apiserver's
 * endpoint reconciler keeps them at every start: the advertise address and
 * the port the server listens on (px->port, so after listening). The
 * controllers leave them alone (no selector; skip-mirror). */
int ns_reconcile_api_endpoints(struct proxy *px);

/* 0 when the namespace exists and accepts new content, else answers and
 * returns -errno. */
int ns_check_writable(struct req *r, const char *ns, const char *name);

/* Creates what a new namespace holds at once: the default ServiceAccount
 * and the kube-root-ca.crt ConfigMap. */
void ns_created(struct proxy *px, const char *ns);
void ns_tick(struct proxy *px);

#endif
