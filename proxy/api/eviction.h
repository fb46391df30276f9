/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST pods/eviction as kube's EvictionREST (proxy/api/eviction.c).
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_EVICTION_H
#define KB_PROXY_API_EVICTION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct req;

/* eviction.c: POST pods/eviction (kube's EvictionREST). */
void eviction_handle(struct req *r);

#endif
