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
	/* api_internal.c: the controllers' writes in their webhooks, and who
	 * hears of a refusal */
	struct pending_create *pending_creates;
	struct pending_write *pending_writes;
	proxy_write_refused_fn write_refused;
	void *write_refused_arg;
};

/* the API layer's modules, one header each */
#include "proxy/api/api_internal.h"
#include "proxy/api/crd.h"
#include "proxy/api/eviction.h"
#include "proxy/api/flowcontrol.h"
#include "proxy/api/handlers.h"
#include "proxy/api/hostpod.h"
#include "proxy/api/hostrefs.h"
#include "proxy/api/namespace.h"
#include "proxy/api/subres.h"
#include "proxy/api/table.h"
#include "proxy/api/virtual.h"
#include "proxy/api/watch.h"
#include "proxy/api/write.h"

#endif
