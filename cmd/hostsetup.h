/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tenant's objects on the host cluster, as the platform team's
 * credentials create and remove them (kubicle create / stop / delete).
 *
 * Every object carries the label kubicle.dev/tenant=NAME:
 *   Namespace NS                      when kubicle created it (deleted with
 *                                     the tenant; an existing one is kept)
 *   Queue Q (scheduling.run.ai/v2)    scheduler profile kai: GPU quota and
 *                                     limit --gpus; deleted when made here
 *   ServiceAccount kubicle-NAME       the syncer's identity, in NS
 *   ServiceAccount kubicle.pods       what host pods run as (SYNCER_POD_SA):
 *                                     no role, automountServiceAccountToken
 *                                     false, in NS
 *   Role/RoleBinding kubicle-NAME     what the syncer does, in NS only
 *   ClusterRoleBinding kubicle-NAME-nodes   to the shared read-only
 *                                     ClusterRole kubicle-syncer-nodes (get
 *                                     nodes: the tenant sees the nodes its
 *                                     pods run on)
 *   ResourceQuota, LimitRange, NetworkPolicies   the tenant's limits and
 *                                     isolation on the host (hostquota.h)
 * plus what the syncer itself writes in NS (pods, PersistentVolumeClaims,
 * ConfigMaps, Secrets, Services, the tenant's NetworkPolicies).
 */
#ifndef KB_CMD_HOSTSETUP_H
#define KB_CMD_HOSTSETUP_H

#include <stddef.h>

#include "cmd/home.h"
#include "cmd/hostapi.h"

#define HOST_TOKEN_SECONDS (48 * 3600)

/* Creates (or adopts, idempotently) the host objects above and records in
 * t which of the namespace and queue it made. Objects of an existing
 * tenant are re-created when missing, and its Role gets this version's
 * rules. 0, or a negative errno with err set to a message naming the object
 * and the host's answer. */
int host_setup(hostapi_t *h, struct tenant *t, char *err, size_t len);

/* Creates obj (stolen) in `collection` under `name`, or adopts it when it
 * is there with t's label; `keep` (may be NULL) names a field brought back
 * to obj's in an adopted one. *made: ours (created or adopted). 0 or a
 * negative errno with err set. */
int host_ensure(hostapi_t *h, const struct tenant *t, const char *collection, const char *name,
		json_t *obj, const char *keep, bool *made, char *err, size_t len);

/*
 * Whether another tenant uses t's host namespace on the host: the
 * namespace's kubicle.dev/tenant label, or that of any object in it of the
 * collections the tenants write (pods, Services, claims, ConfigMaps,
 * Secrets, NetworkPolicies, ResourceQuotas, LimitRanges, RoleBindings,
 * Roles, ServiceAccounts). `other` gets that
 * tenant's name, "" when none (or no such namespace). 0, or a negative
 * errno with err set.
 */
int host_namespace_user(hostapi_t *h, const struct tenant *t, char *other, size_t olen, char *err,
			size_t len);

/* Requests a token for the syncer's ServiceAccount and writes
 * DIR/host-token and DIR/host.kubeconfig (the platform kubeconfig's server
 * and CA, user tokenFile: host-token). */
int host_issue_token(hostapi_t *h, const struct tenant *t, char *err, size_t len);

/* Deletes the tenant's pods (and the syncer's ConfigMaps, Secrets and
 * Services) in its host namespace: what `kubicle stop` takes away, and a
 * paused Tenant (cmd/operator_reconcile.c). Its claims stay (the volumes
 * hold its data), and so do the server's own objects of `kubicle manifest`
 * (label kubicle.dev/control-plane: its PKI and kubeconfig Secrets, its
 * Service). */
int host_remove_pods(hostapi_t *h, const struct tenant *t, char *err, size_t len);

/* Deletes every host object of the tenant; with `wait`, polls until none
 * is left (at most timeout_s seconds: -ETIMEDOUT). */
int host_teardown(hostapi_t *h, const struct tenant *t, bool wait, unsigned timeout_s, char *err,
		  size_t len);

/* Counts the host objects still labelled with the tenant (pods, Services,
 * claims, ConfigMaps, Secrets, NetworkPolicies, ResourceQuotas, LimitRanges,
 * ServiceAccounts, Roles, RoleBindings in NS; the
 * ClusterRoleBinding; the Queue and Namespace when made here). */
int host_count_left(hostapi_t *h, const struct tenant *t, size_t *left, char *err, size_t len);

#endif
