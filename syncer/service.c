/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Services, tenant to host and allocations back: a row of the mirrored-kind
 * engine (mirror.c, syncer_impl.h) and its hooks, as
 * vCluster's service syncer does: every tenant Service but default/kubernetes
 * (the tenant API itself, which pods reach through KUBERNETES_SERVICE_HOST)
 * gets a host Service of its translated name whose selector picks the host
 * pods of the tenant Service's namespace, so host pods reach each other
 * through it.
 *
 * DESIGN
 * The tenant owns the host Service (SYNCER_MIRROR_HOST_RECREATED): one
 * deleted on the host while its tenant Service exists is created again
 * (unlike a pod or a claim, a Service holds nothing the host could have had
 * a reason to take away); a tenant Service deleted deletes its host
 * Service; a host Service with the tenant's label and kind Service whose
 * tenant Service is gone (an orphan, left while the tenant was down) is
 * deleted once the host's Services were listed.
 *
 * Back to the tenant, written into the tenant store directly: the host's
 * spec.clusterIP and clusterIPs (so that an address a tenant reads, or a pod
 * gets from DNS or its environment, works on the host), the node ports and
 * healthCheckNodePort the host allocated, and status.loadBalancer. A port's
 * nodePort is then part of the tenant Service, and passed back down as if
 * the tenant had chosen it: the host keeps it across updates.
 *
 * Updates: each tenant watch event is compared with the host Service as
 * last seen (syncer_service_update_patch; there is no same_pushable filter),
 * and what differs is sent as a merge patch; the write-back above changes
 * nothing that is compared, so it does not loop. A host that refuses a
 * create or an update (its quota, a node port taken) gives the tenant
 * Service a Warning event with the host's message (FailedCreate or
 * FailedUpdate: update_refusal_event); the resync (every 30 s and after
 * each relist) tries again.
 *
 * Not synced: a Service without selector gets a host Service without
 * selector, but its manually written Endpoints and EndpointSlices stay in
 * the tenant; externalIPs are dropped (translate.c says why).
 */
#include <string.h>

#include "syncer/syncer_impl.h"

static bool str_eq(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

/* default/kubernetes is the tenant API: never a host Service. */
static bool synced(const json_t *svc)
{
	return !str_eq(meta_str(svc, "namespace"), "default") ||
	       !str_eq(meta_str(svc, "name"), "kubernetes");
}

/* What the host allocated for hs, as tenant Service ts (borrowed) to
 * write: a new reference, or NULL when it changes nothing. */
static json_t *copy_back(const json_t *hs, json_t *ts)
{
	return syncer_service_back(ts, hs);
}

static size_t *tracked(struct syncer_stats *st)
{
	return &st->services;
}

const struct syncer_mirror_kind syncer_service_kind = {
    .res = "/services",
    .kind = "Service",
    .plural = "services",
    .noun = "service",
    .create_refused = "the creation of service",
    .host_deleted = SYNCER_MIRROR_HOST_RECREATED,
    .update_refusal_event = true,
    .synced = synced,
    .translate = syncer_translate_service,
    .update_patch = syncer_service_update_patch,
    .copy_back = copy_back,
    .tracked = tracked,
};

bool syncer_svcs_on_host(struct syncer_mirror *svcs, const json_t *svc)
{
	const json_t *hs = syncer_mirror_host_of(svcs, svc);
	const char *ip = jstr(json_object_get(svc, "spec"), "clusterIP");
	return hs && str_eq(jstr(json_object_get(hs, "spec"), "clusterIP"), ip);
}
