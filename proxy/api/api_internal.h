/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-process client's writes (proxy/api/api_internal.c, the contract
 * in proxy/client.h), and its calls as a table for the layers below.
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_API_INTERNAL_H
#define KB_PROXY_API_API_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy;
struct core_client;

/* api_internal.c: forgets the controllers' writes still in their webhooks
 * (after webhook_stop dropped the calls), at shutdown. */
void api_internal_free(struct proxy *px);

/* api_internal.c: the in-process client's calls as a table for the layers
 * below (px->client). */
extern const struct core_client api_client;

#endif
