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

/* The server's own write of a status that the tenant's admission
 * webhooks must see before it is made (the eviction's budget update, as
 * kube's loopback client makes it): obj (borrowed, modified) over the
 * stored object it names, under manager. 0 when no webhook matched and the
 * write is made (done not called); -EINPROGRESS when it is in its webhooks:
 * done(arg, rc, message) follows with 0 once made, -ESTALE when the object
 * changed meanwhile (not written), or another negative errno and kube's
 * message (a webhook's refusal: -EACCES); -EBUSY when another write of that
 * object is still in its webhooks; another negative errno when refused at
 * once. api_internal_forget(px, arg) before arg goes away unsets done. */
struct proxy_resource;
typedef void (*api_write_done_fn)(void *arg, int rc, const char *message);
int api_internal_update_status_admitted(struct proxy *px, const struct proxy_resource *res,
					json_t *obj, const char *manager, api_write_done_fn done,
					void *arg);
void api_internal_forget(struct proxy *px, void *arg);

/* api_internal.c: the in-process client's calls as a table for the layers
 * below (px->client). */
extern const struct core_client api_client;

#endif
