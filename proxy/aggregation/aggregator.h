/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The service-backed APIServices (proxy/aggregation/aggregator.c): their
 * backends, availability, and requests proxied to them.
 * Included through proxy/aggregation/aggregation.h. Loop thread only.
 */
#ifndef KB_PROXY_AGGREGATION_AGGREGATOR_H
#define KB_PROXY_AGGREGATION_AGGREGATOR_H

#include <jansson.h>
#include <stdbool.h>

struct proxy;
struct req;
struct store_event;
struct proxy_resource;

/* Front-proxy certificates (DIR/front-proxy) and the
 * kube-system/extension-apiserver-authentication ConfigMap, the backends of
 * the stored APIServices, the availability checks. apiservice_start calls
 * it with the APIServices it has just listed when they are still what is
 * stored (borrowed), else NULL (listed here). 0 or a negative errno. */
int aggregator_start(struct proxy *px, const json_t *apiservices);
/* Starts making DIR/front-proxy on a thread (kb_pki_client_ca_start), so
 * that a first start's CA, client pair and fsyncs there overlap the RBAC
 * and namespaces' bootstrap; aggregator_start joins it, or aggregator_stop
 * when the start fails before. Nothing without a data dir or a thread (the
 * folder is then made in aggregator_start). */
void aggregator_prepare(struct proxy *px);
/* Also joins what aggregator_prepare started. */
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
/* OpenAPI v2: the available backends' /openapi/v2 paths (of their
 * group/version) and definitions added to doc (a Swagger 2.0 document,
 * borrowed; names it already has stay; NULL: none, only the answer); true
 * when a backend has one. The
 * generation moves whenever a backend's document changes. */
bool aggregator_openapi_v2_merge(struct proxy *px, json_t *doc);
unsigned aggregator_openapi_v2_gen(struct proxy *px);
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

#endif
