/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes objects as data (proxy/model/object.c, defaults.c): dotted-path
 * access, server-owned metadata, comparisons, and kube's per-kind defaults.
 * Pure: no request, no server, no store; any thread. Objects are borrowed
 * unless a function says otherwise.
 */
#ifndef KB_PROXY_MODEL_OBJECT_H
#define KB_PROXY_MODEL_OBJECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "proxy/model/resource.h"

/* The value at a dotted path ("metadata.name"), borrowed, or NULL. */
json_t *obj_get(const json_t *obj, const char *path);
/* The string at a dotted path (borrowed from obj), or NULL. */
const char *obj_str(const json_t *obj, const char *path);
/* Sets the string at a dotted path, making the objects on the way. */
void obj_set_str(json_t *obj, const char *path, const char *value);
/* obj's metadata object, made when missing (borrowed). */
json_t *obj_meta(json_t *obj);
/* metadata.resourceVersion as a number (0 when absent). */
int64_t obj_rv(const json_t *obj);
/* Whether res's objects carry metadata.generation (1 on create, +1 on
 * changes outside metadata and status). */
bool obj_has_generation(const struct proxy_resource *res);
/* The server-owned metadata of a new object of res (uid,
 * creationTimestamp, generation; apiVersion and kind), at `now`. */
void obj_init_create(const struct proxy_resource *res, json_t *obj, time_t now);
/* Copies the server-owned metadata (uid, creationTimestamp, deletion
 * stamps, generation, name, namespace) of `old` into `obj`. */
void obj_keep_server_meta(const json_t *old, json_t *obj);
/* Equal but for resourceVersion and the times of managedFields entries. */
bool obj_same(const json_t *a, const json_t *b);
/* True when anything outside metadata and status differs. */
bool obj_spec_changed(const json_t *a, const json_t *b);
/* Copies every key of src missing from parent[key] (made when missing). */
void obj_fill_missing(json_t *parent, const char *key, const json_t *src);

/* defaults.c: kube's defaults of an object of res (its SetDefaults_*);
 * a Service's ClusterIP is the write path's allocation, made before. */
void obj_defaults(const struct proxy_resource *res, json_t *obj);
/* autoscaling/v2's defaults of a HorizontalPodAutoscaler (hpa_v1.c applies
 * them to what it converts, as kube's decoding of the stored v2 does), and
 * its metric of a CPU utilization target (new reference; pct stolen). */
void obj_hpa_defaults(json_t *obj);
json_t *obj_hpa_cpu_metric(json_t *pct);
/* Defaults of list-map key fields (ports' protocol), which server-side
 * apply needs before merging so that an applied item matches its live one. */
void obj_default_keys(const struct proxy_resource *res, json_t *obj);
/* kube's defaults of a LimitRange's Container items (default from max,
 * defaultRequest from default, then min). */
void obj_limitrange_defaults(json_t *lr);
/* Whether a LimitRange item (borrowed) is of `type` ("Container", "Pod",
 * "PersistentVolumeClaim"). */
bool obj_limit_item_is(const json_t *item, const char *type);

#endif
