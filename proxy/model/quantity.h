/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Quantities and resource lists (proxy/model/quantity.c). A resource list
 * is a JSON object of resource name -> integer thousandths. Pure: any
 * thread; JSON arguments borrowed unless said.
 */
#ifndef KB_PROXY_MODEL_QUANTITY_H
#define KB_PROXY_MODEL_QUANTITY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A quantity as a JSON string ("500m", "1Gi", "2") or number into
 * thousandths. 0 or -EINVAL (absent, negative or malformed). v borrowed. */
int qty_parse(const json_t *v, int64_t *milli);
/* Formats thousandths as kube's canonical quantity string: binary suffixes
 * (Ki, Mi, Gi...) when `binary` and the value is a whole multiple, else
 * decimal ones ("1500m", "2", "2k"). */
void qty_format(int64_t milli, bool binary, char *buf, size_t len);
/* True when a quantity string uses a binary suffix ("1Gi"). v borrowed. */
bool qty_binary(const json_t *v);

/* ---- resource lists ---- */

/* Adds (sign 1) or subtracts (sign -1) list b into a (both resource lists). */
void qty_list_add(json_t *a, const json_t *b, int sign);
/* Adds v to key k of resource list rl; the value of k (0 when absent). */
void qty_list_add_key(json_t *rl, const char *k, int64_t v);
int64_t qty_list_get(const json_t *rl, const char *k);
/* A container's (borrowed) requests (those it lacks default to its limits,
 * as the API defaults them) or limits, as a resource list (new reference). */
json_t *qty_container_list(const json_t *c, bool requests);
/* A pod spec's (borrowed) effective requests (requests missing default to
 * limits) or limits as a resource list (new reference): containers and
 * sidecars summed, the largest init container step, spec.overhead on top
 * when `overhead`. */
json_t *qty_pod_resources(const json_t *spec, bool requests, bool overhead);
/* Whether a resource name is extended (a domain other than kubernetes.io,
 * not a requests.* quota name). */
bool qty_extended(const char *name);
/* kube's IsOvercommitAllowed: a native resource (no domain, or a
 * kubernetes.io one) that is not hugepages; GPUs and other extended
 * resources may not be overcommitted. */
bool qty_overcommit_allowed(const char *name);

#endif
