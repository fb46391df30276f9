/* SPDX-License-Identifier: Apache-2.0 */
/*
 * API discovery (proxy/aggregation/discovery.c).
 * Included through proxy/aggregation/aggregation.h. Loop thread only.
 */
#ifndef KB_PROXY_AGGREGATION_DISCOVERY_H
#define KB_PROXY_AGGREGATION_DISCOVERY_H

#include <jansson.h>
#include <stdbool.h>

struct req;

/* /api and /apis: aggregated (apidiscovery v2, v2beta1) and legacy
 * documents of the local rows and the service-backed APIServices; false
 * when r names none. */
bool discovery_handle(struct req *r);

#endif
