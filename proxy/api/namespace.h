/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespaces (proxy/api/namespace.c): the built-in ones and what a new
 * one holds, Terminating until empty, and the kubernetes Service's
 * endpoints.
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_NAMESPACE_H
#define KB_PROXY_API_NAMESPACE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy;
struct proxy_resource;
struct req;

/* namespace.c */
int ns_bootstrap(struct proxy *px);

/* Whether res's object ns/name (ns NULL or "" for a cluster-scoped one) is
 * stored: a start's check before it builds an object it makes only when
 * missing (reads the stored text, parses nothing). */
bool ns_bootstrap_stored(struct proxy *px, const struct proxy_resource *res, const char *ns,
			 const char *name);

/* The `kubernetes` Service's Endpoints and EndpointSlice, as kube-apiserver's
 * endpoint reconciler keeps them at every start: the advertise address and
 * the port the server listens on (px->port, so after listening). The
 * controllers leave them alone (no selector; skip-mirror). */
int ns_reconcile_api_endpoints(struct proxy *px);

/* 0 when the namespace exists and accepts new content, else answers and
 * returns -errno. */
int ns_check_writable(struct req *r, const char *ns, const char *name);

/* Creates what a new namespace holds at once: the default ServiceAccount
 * and the kube-root-ca.crt ConfigMap. */
void ns_created(struct proxy *px, const char *ns);
void ns_tick(struct proxy *px);

#endif
