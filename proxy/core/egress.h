/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress policy: where a tenant may make this server connect.
 * Admission webhooks, CRD conversion webhooks and APIService backends are
 * addresses a tenant writes (a URL, a Service with its cluster IP or
 * ExternalName); without a check, a tenant could make the platform's
 * server call loopback listeners, the cloud metadata address, the host
 * API server or another tenant's server (server-side request forgery).
 * Every HTTP client made for such a target gets egress_allow as its
 * address hook (lib/httpc.h), which sees the address actually connected
 * to, after name resolution.
 *
 * The decision, for one address (lib/addrfilter.h does the prefix work):
 *   1. refused: loopback, link-local (169.254/16: cloud metadata), the
 *      unspecified and multicast ranges and the IPv6 forms carrying IPv4
 *      elsewhere (kb_addrfilter_deny_special), this machine's interface
 *      addresses and the host API server's addresses; unless an
 *      --egress-allow prefix lying inside the refused range names it;
 *   2. allowed: inside an --egress-allow prefix;
 *   3. allowed: an address of the tenant's own host objects (its host
 *      pods' IPs, its host Services' cluster IPs), as the syncer knows them
 *      from the host (proxy_set_egress_owner), never from a tenant-written
 *      field;
 *   4. refused: anything else (other tenants' pods and Services included).
 * Included through proxy/core/core.h. Loop thread only.
 */
#ifndef KB_PROXY_CORE_EGRESS_H
#define KB_PROXY_CORE_EGRESS_H

#include <stdbool.h>

struct proxy;
struct proxy_opts;
struct sockaddr;

/* Builds px's policy from opts (egress_allow, host_server). 0, -EINVAL
 * (a bad prefix, logged) or -ENOMEM. Blocks briefly at startup: the
 * machine's interfaces are listed and the host server's name resolved. */
int egress_start(struct proxy *px, const struct proxy_opts *opts);
void egress_stop(struct proxy *px);
/* lib/httpc's allow hook; arg is the proxy. */
bool egress_allow(const struct sockaddr *addr, void *arg);

#endif
