/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The aggregation layer, as kube-aggregator in front of kube-apiserver: the
 * APIServices (apiregistration.k8s.io/v1; the local ones kube's autoregister
 * and crdregistration controllers keep, apiservice.c; the service-backed
 * ones proxied to their backends, aggregator.c), the metrics API served
 * from the host (metrics.c), and the merged discovery (discovery.c) and
 * OpenAPI documents (docs.c). Included by aggregation/ and the server.
 *
 * Threading: loop thread only.
 */
#ifndef KB_PROXY_AGGREGATION_H
#define KB_PROXY_AGGREGATION_H

#include <jansson.h>
#include <stdbool.h>

#include "proxy/api/api.h"

struct proxy;
struct req;
struct store_event;

/* Creates, fixes and deletes the local APIServices (built-in group/versions
 * once, the CRDs' from then on: it listens to crd_on_change) and watches the
 * APIServices. Call after crd_start (the CRDs' rows are in the table). 0 or
 * a negative errno. */
int apiservice_start(struct proxy *px);
/* kube-apiserver's priorities of a built-in group/version's local
 * APIService; false when kube's table has none (no APIService then). */
bool apiservice_local_priority(const char *group, const char *version, int *group_p,
			       int *version_p);
/* Drops the watch and closes the timer (freed in its close callback). */
void apiservice_stop(struct proxy *px);

/* ---- proxy/aggregation/aggregator.c: the service-backed APIServices ---------------------- */

/* Front-proxy certificates (DIR/front-proxy) and the
 * kube-system/extension-apiserver-authentication ConfigMap, the backends of
 * the stored APIServices, the availability checks. apiservice_start calls
 * it. 0 or a negative errno. */
int aggregator_start(struct proxy *px);
void aggregator_stop(struct proxy *px);
/* An APIService event of the watch (borrowed for the call). */
void aggregator_event(struct proxy *px, const struct store_event *ev);
/* When r's path is /apis/<group>/<version>[/...] of a service-backed
 * APIService: authorizes it (r->verb set; r's path fields parsed when
 * is_resource) and proxies it, or answers it; true. False: not aggregated. */
bool aggregator_route(struct req *r, bool is_resource);
/* OpenAPI v3 of the service-backed group/versions: their entries for the
 * root's `paths` (borrowed object, added to), and GET
 * /openapi/v3/apis/<g>/<v> of one, proxied to its backend's document (true:
 * answered or proxied; false: not a backend's). */
void aggregator_openapi_paths(struct proxy *px, json_t *paths);
bool aggregator_openapi(struct req *r);
/* Whether a service-backed APIService serves group/version (or the group). */
bool aggregator_backs(struct proxy *px, const char *group, const char *version);
bool aggregator_backs_group(struct proxy *px, const char *group);

/* One service-backed group/version, for discovery: fields borrowed for the
 * call; resources is the backend's last APIResourceList or NULL. */
struct aggregator_gv {
	const char *group, *version;
	int group_priority, version_priority;
	bool available;
	const json_t *resources;
};
typedef void (*aggregator_each_fn)(const struct aggregator_gv *gv, void *arg);
void aggregator_foreach(struct proxy *px, aggregator_each_fn fn, void *arg);
/* The aggregated discovery resources (apidiscovery v2 shape: responseKind,
 * scope, singularResource, verbs, shortNames, categories, subresources) of
 * a backend's APIResourceList `resources` array (borrowed); new reference. */
json_t *aggregator_agg_resources(const char *group, const char *version, const json_t *list);
/* Whether a client's request header (lower-cased name) stays behind when a
 * request is proxied: credentials, impersonation, hop-by-hop headers and
 * the identity headers the proxy sets. */
bool aggregator_header_dropped(const char *name);

/* ---- proxy/aggregation/docs.c ---- */

/* GET /openapi/v2 (protobuf when Accept names
 * application/com.github.proto-openapi.spec.v2@v1.0+protobuf or the
 * .v2.v1.0+protobuf spelling, else JSON; ETag / If-None-Match: 304) and
 * /openapi/v3[/...]; false when r names no document (not answered). */
bool docs_serve(struct req *r);

/* metrics.c: whether res is a row of the metrics API. */
bool metrics_row(const struct proxy_resource *res);

/* discovery.c */
bool discovery_handle(struct req *r);

/* metrics.c: its state on the server (px->metrics): proxy_set_metrics. */
struct metrics_hook {
	proxy_metrics_fetch_fn fetch;
	proxy_metrics_cancel_fn cancel;
	void *arg;
};

#endif
