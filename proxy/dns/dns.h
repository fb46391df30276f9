/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cluster DNS of one tenant: the names kube's DNS specification gives
 * Services and Pods (cluster-dns spec 1.1.0), answered from the tenant's own
 * store, so that its pods on the host find each other by the tenant's names.
 *
 * On the host a tenant Service is a Service of another name in another
 * namespace (syncer/); the host's DNS knows only that one. The syncer points
 * every host pod of dnsPolicy ClusterFirst at this responder instead
 * (dnsPolicy None, the tenant's search path), which answers the tenant's
 * zone from the store and forwards every other name to the upstream
 * resolver (the host's DNS when the server runs in the host cluster).
 * vCluster runs a CoreDNS per virtual cluster for the same purpose; here it
 * is a part of the tenant's one process.
 *
 * Names of the zone (default cluster.local), as CoreDNS's kubernetes plugin
 * answers them:
 *   <svc>.<ns>.svc.<zone>       A/AAAA: the Service's cluster IPs; headless
 *                               (clusterIP None): the ready addresses of its
 *                               Endpoints; ExternalName: a CNAME. SRV: one
 *                               per named port (or per address and port).
 *   _<port>._<proto>.<svc>.<ns>.svc.<zone>   SRV of one named port.
 *   <host>.<svc>.<ns>.svc.<zone>  A/AAAA of a headless Service's endpoint
 *                               whose hostname is <host>, or whose address
 *                               written with dashes is <host>.
 *   <a-b-c-d>.<ns>.pod.<zone>   A of the address the name spells.
 *   dns-version.<zone>          TXT "1.1.0".
 *   <zone>                      SOA, NS.
 *   d.c.b.a.in-addr.arpa (and ip6.arpa)  PTR of a Service's cluster IP or of
 *                               a headless endpoint with a hostname; other
 *                               addresses are forwarded.
 *   *.<host namespace>.svc.<zone>  forwarded: the host's names of the host
 *                               namespace (the tenant API's Service, which
 *                               pods reach it by); nothing there is another
 *                               tenant's.
 * Only the tenant's own pods (and the machine's loopback address) may ask:
 * a query from any other address is REFUSED (dns_opts.any_client).
 * A name of the zone that does not exist is NXDOMAIN, one that exists
 * without the asked type NOERROR without answers, both with the zone's SOA
 * (TTL 5 s, the SOA serial is the store's revision).
 *
 * DESIGN
 * Threading: loop thread only (it reads the store directly). UDP and TCP on
 * the same address; TCP connections are limited in number, close after
 * 10 s idle, and a reader that does not take its answers is dropped.
 * Forwarded queries keep the client's bytes but for a random ID; answers
 * come back over a connected UDP socket (so the kernel accepts only the
 * upstream's), a query without answer after 2 s gets SERVFAIL. DNS packets
 * are parsed and written by ldns (Debian's libldns).
 */
#ifndef KB_PROXY_DNS_H
#define KB_PROXY_DNS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store/store.h"

/* What the resolver reads: objects by kind ("services", "endpoints",
 * "namespaces"), as a store would give them. Unit tests pass a fake. */
struct dns_view {
	void *arg;
	/* A new reference to the object, or NULL when there is none. ns is
	 * "" for namespaces. */
	json_t *(*get)(void *arg, const char *kind, const char *ns, const char *name);
	/* Calls fn(obj, farg) for every object of kind until it returns
	 * false. */
	void (*each)(void *arg, const char *kind, bool (*fn)(const json_t *obj, void *farg),
		     void *farg);
	uint32_t serial; /* the SOA serial */
};

struct dns_zone {
	const char *domain; /* "cluster.local", lower case, no trailing dot */
	uint32_t ttl;       /* of every answer; 0: 5 */
	/* The host namespace, or NULL: names under <host_ns>.svc.<zone> are
	 * the host's (the tenant API's own Service, NAME.NS.svc, which tenant
	 * pods reach it by: its certificate names it) and are forwarded. */
	const char *host_ns;
};

/*
 * The answer to DNS message q (qlen bytes, borrowed) for a client on TCP
 * (tcp) or UDP. Returns 1 with *resp a malloc'ed message the caller frees
 * (FORMERR, NOTIMP or REFUSED included), 0 when the name is not this
 * zone's and the query should be forwarded, -EINVAL when q is not worth an
 * answer (shorter than a header, or itself a response), -ENOMEM.
 */
int dns_answer(const struct dns_view *v, const struct dns_zone *z, const uint8_t *q, size_t qlen,
	       bool tcp, uint8_t **resp, size_t *rlen);
/* An answer of rcode (SERVFAIL: a forwarded query that got none; REFUSED:
 * nowhere to forward) to q, its question kept. Same returns as
 * dns_answer, never 0. */
int dns_fail(const uint8_t *q, size_t qlen, int rcode, uint8_t **resp, size_t *rlen);

typedef struct dns dns_t;

struct dns_opts {
	const char *listen;   /* "ADDR:PORT", UDP and TCP; port 0 picks one */
	const char *domain;   /* NULL: "cluster.local" */
	const char *upstream; /* "IP", "IP:PORT" or "[IPv6]:PORT"; NULL: the first
				 nameserver of /etc/resolv.conf; "none": no
				 forwarding (REFUSED) */
	const char *host_ns;  /* dns_zone's */
	/* false (default): only the tenant's pods (their status.podIP(s)) and
	 * the loopback address may ask; others get REFUSED (dns_clients.c).
	 * true: anyone who reaches the address. */
	bool any_client;
};

/* Starts the responder on loop with store st (borrowed, outlives it).
 * *port_out (may be NULL) gets the bound port. 0 or a negative errno. */
int dns_start(uv_loop_t *loop, store_t *st, const struct dns_opts *o, dns_t **out, int *port_out);
/* Closes every handle; memory is freed once the loop ran their close
 * callbacks. NULL is fine. */
void dns_stop(dns_t *d);

#endif
