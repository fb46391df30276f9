/* SPDX-License-Identifier: Apache-2.0 */
/*
 * FlowSchemas and PriorityLevelConfigurations as data: kube's defaults and
 * the fixed specs of the mandatory `exempt` and `catch-all` objects
 * (proxy/model/flowcontrol.c). Pure: any thread.
 */
#ifndef KB_PROXY_MODEL_FLOWCONTROL_H
#define KB_PROXY_MODEL_FLOWCONTROL_H

#include <jansson.h>
#include <stdbool.h>

#include "proxy/model/resource.h"

#define FC_API      "flowcontrol.apiserver.k8s.io/v1"
#define FC_MAX_PREC 10000 /* matchingPrecedence's bound, and catch-all's */

/* kube's defaults of obj (borrowed, modified), a FlowSchema or a
 * PriorityLevelConfiguration of res. */
void flowcontrol_default(const struct proxy_resource *res, json_t *obj);
/* The fixed spec of the mandatory FlowSchema or PriorityLevelConfiguration
 * `name` (new reference), or NULL when `name` is not mandatory. */
json_t *flowcontrol_fixed_fs(const char *name);
json_t *flowcontrol_fixed_pl(const char *name);
/* Whether res is FlowSchemas (else PriorityLevelConfigurations). */
bool flowcontrol_is_fs(const struct proxy_resource *res);

#endif
