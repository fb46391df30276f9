/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tenant's limits on the host (issue 22, items 3 and 4): what
 * `kubicle create` writes into the tenant's host namespace besides the
 * syncer's identity (hostsetup.h), from the tenant's settings:
 *   ResourceQuota kubicle-NAME          pods, requests.cpu, requests.memory,
 *                                       every GPU form (--gpus), claims and
 *                                       storage (per class where given),
 *                                       Services, LoadBalancers, NodePorts
 *   LimitRange kubicle-NAME             default requests of a container
 *                                       (the quota needs cpu and memory
 *                                       requests on every pod)
 *   NetworkPolicy kubicle-NAME-isolation  every pod of the tenant isolated
 *                                       both ways; egress to the host's DNS
 *                                       and its tenant server (DNS and API)
 *   NetworkPolicy kubicle-NAME-ingress  pods no tenant policy isolates for
 *                                       ingress: from the tenant's pods
 *   NetworkPolicy kubicle-NAME-egress   pods no tenant policy isolates for
 *                                       egress: to the tenant's pods and the
 *                                       CIDRs the platform allows (--egress,
 *                                       --egress-except); the syncer also
 *                                       clips the tenant's own ipBlocks to
 *                                       them (syncer/netpol.c)
 * All carry kubicle.dev/tenant=NAME and are removed with the tenant. The
 * syncer's host Role has no rights on ResourceQuotas and LimitRanges, so a
 * tenant cannot raise its own.
 *
 * Settings are a JSON object kept in tenant.json ("hostLimits"); a key left
 * out takes the default below (hostquota_settings), null is unlimited.
 *
 * Threading: command line only (blocking host calls).
 */
#ifndef KB_CMD_HOSTQUOTA_H
#define KB_CMD_HOSTQUOTA_H

#include <getopt.h>
#include <jansson.h>
#include <stddef.h>

#include "cmd/home.h"
#include "cmd/hostapi.h"

/* The long options of create (getopt_long rows, val HOSTQUOTA_OPT, ended
 * by a zeroed row): --max-pods, --max-cpu, ... */
#define HOSTQUOTA_OPT 0x4851
extern const struct option hostquota_options[];

/* Applies one of hostquota_options (its name, the value) to `limits` (a
 * JSON object, borrowed, modified). 0 or -EINVAL with err set. */
int hostquota_flag(json_t *limits, const char *flag, const char *value, char *err, size_t len);

/* t's settings with every default filled in: a new reference (NULL on
 * ENOMEM). t->host_limits "" (a tenant made before host quotas): all
 * defaults. */
json_t *hostquota_settings(const struct tenant *t);

/* The host objects above for t, as an array of {"path": collection,
 * "name": name, "object": object}: a new reference. */
json_t *hostquota_objects(const struct tenant *t);

/* Creates or adopts the objects of hostquota_objects, bringing the spec of
 * those already there (ours) back to it. 0 or a negative errno, err set. */
int hostquota_setup(hostapi_t *h, const struct tenant *t, char *err, size_t len);

#endif
