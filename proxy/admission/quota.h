/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes' own namespace admission driven by objects the tenant creates:
 * ResourceQuota (quota.c: usage of pods, compute resources, extended
 * resources, storage and object counts; scopes; status.used kept current)
 * and LimitRange (limitrange.c: container defaults, min/max/ratio for
 * containers, pods and PersistentVolumeClaims). admission.c calls them in
 * kube's order: LimitRange defaults, validations, ResourceQuota last.
 *
 * Resource lists are JSON objects of resource name -> integer amount in
 * thousandths (milli units: "500m" cpu is 500, "1Gi" is 1073741824000, a
 * count of 2 is 2000). Loop thread only (the store is read).
 */
#ifndef KB_PROXY_QUOTA_H
#define KB_PROXY_QUOTA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/model/quantity.h"
#include "proxy/model/resource.h"

struct proxy;

/* ---- usage (pure functions, objects borrowed) ---- */

/* What one object of row `res` takes from a quota (new reference): pods
 * (terminal pods only count/pods), compute requests and limits, extended
 * requests, services.*, PVC storage, count/<plural>[.<group>] and the
 * legacy object counts. */
json_t *quota_object_usage(const struct proxy_resource *res, const json_t *obj);
/* Whether a ResourceQuota (quota) applies to obj of row res: it tracks a
 * resource the object uses and its scopes (Terminating, NotTerminating,
 * BestEffort, NotBestEffort, PriorityClass via scopeSelector) match. */
bool quota_matches(const json_t *quota, const struct proxy_resource *res, const json_t *obj);
/* kube's pod constraint: when the quota's hard limits cpu or memory (requests
 * or limits), each container must set it. 0, or -EACCES with msg
 * "must specify limits.cpu for: c; requests.memory for: c,d". */
int quota_pod_constraints(const json_t *hard, const json_t *pod, char *msg, size_t len);
/* Checks `requested` (resource list) on top of `used` against the quota's
 * hard (spec.hard strings). 0, or -EACCES with msg "exceeded quota: NAME,
 * requested: pods=1, used: pods=2, limited: pods=2". All borrowed. */
int quota_check(const char *name, const json_t *hard, const json_t *used, const json_t *requested,
		char *msg, size_t len);
/* status.used (new reference): `used` (resource list) as quantity strings for
 * every resource of hard, 0 where nothing is used. */
json_t *quota_used_strings(const json_t *hard, const json_t *used);

/* ---- with the store ---- */

/* Resource list (new reference) of what the stored objects of quota's
 * namespace take from it, for the resources of its spec.hard. */
json_t *quota_compute_used(struct proxy *px, const json_t *quota);
/* ResourceQuota admission of a create (old NULL) or update of obj in its
 * namespace: constraints and limits of every quota that applies, then (unless
 * dry_run) the new usage is written to their status. 0, or -EACCES with msg
 * (kube's words), -ENOMEM/-EIO. obj and old borrowed. */
int quota_admit(struct proxy *px, const struct proxy_resource *res, const json_t *obj,
		const json_t *old, bool dry_run, char *msg, size_t len);
/* A ResourceQuota being created (status reset) or updated (borrowed,
 * modified): status.hard follows spec.hard and status.used is computed when
 * its resources changed (on create it counts the quota itself). */
void quota_prepare(struct proxy *px, json_t *quota, bool create);
/* The quota controller: recomputes status.used of every ResourceQuota (but
 * the policy's) and writes the ones that changed. */
void quota_refresh_all(struct proxy *px);

#endif
