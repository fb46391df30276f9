/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scale subresource as data (proxy/model/scale.c): an object's
 * autoscaling/v1 Scale, and its replicas set as a Scale write sets them.
 * Pure: any thread; objects borrowed.
 */
#ifndef KB_PROXY_MODEL_SCALE_H
#define KB_PROXY_MODEL_SCALE_H

#include <jansson.h>
#include <stdint.h>

#include "proxy/model/resource.h"

/* The Scale of an object of res (new reference): a custom object's through
 * its CRD's scale paths (NULL when its kind has none), a workload's from
 * spec.replicas, status.replicas and spec.selector. */
json_t *scale_view(const struct proxy_resource *res, const json_t *obj);
/* A workload's Scale (Deployments, ReplicaSets, StatefulSets; a
 * ReplicationController's selector is a map of labels, told by obj's kind). */
json_t *scale_view_workload(const json_t *obj);
/* Sets obj's replicas (borrowed JSON value) as a write of its Scale does. */
void scale_set(const struct proxy_resource *res, json_t *obj, json_t *replicas);
/* Sets a custom object's specReplicasPath: 0, or -ENOTSUP (no scale paths). */
int scale_set_custom(const struct proxy_resource *res, json_t *obj, int64_t replicas);

#endif
