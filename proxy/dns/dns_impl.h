/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cross-file internals of the tenant DNS: who may ask (dns_clients.c).
 */
#ifndef KB_PROXY_DNS_IMPL_H
#define KB_PROXY_DNS_IMPL_H

#include <stdbool.h>
#include <sys/socket.h>

#include "store/store.h"

/* The addresses of the tenant's pods (status.podIP, status.podIPs), kept
 * from a store watch on pods. Loop thread only. */
struct dns_clients;
/* 0 or a negative errno; *out freed by dns_clients_stop. */
int dns_clients_start(store_t *st, struct dns_clients **out);
/* Whether `peer` may ask: an address of one of the tenant's pods, or the
 * machine's own loopback address (127.0.0.1, ::1). c NULL: anyone. */
bool dns_clients_allowed(const struct dns_clients *c, const struct sockaddr *peer);
void dns_clients_stop(struct dns_clients *c);

#endif
