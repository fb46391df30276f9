/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Storage conversions of resource rows (proxy/model/convert.c): each
 * converts obj (borrowed, modified in place) between a row's served shape
 * and its storage row's, as kube-apiserver's conversions do. Pure: any
 * thread.
 */
#ifndef KB_PROXY_MODEL_CONVERT_H
#define KB_PROXY_MODEL_CONVERT_H

#include <jansson.h>

#include "proxy/model/resource.h"

/* events.k8s.io/v1 Event <-> core/v1 Event (kube's field renames). */
void convert_event_to_core(const struct proxy_resource *res, json_t *obj);
void convert_event_from_core(const struct proxy_resource *res, json_t *obj);
/* autoscaling/v1 <-> autoscaling/v2 HorizontalPodAutoscaler, with kube's
 * round-trip annotations for what v1 cannot say. */
void convert_hpa_v1_to_v2(const struct proxy_resource *res, json_t *obj);
void convert_hpa_v2_to_v1(const struct proxy_resource *res, json_t *obj);

#endif
