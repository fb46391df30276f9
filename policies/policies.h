/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tenant policies: how a tenant may use GPUs (whole GPUs, fractions, or a
 * list of MIG profiles), the Pod Security Standard level its pods must meet
 * (baseline or restricted), whether host-level pod fields may pass, quotas
 * across the tenant (GPUs counting fractions, cpu, memory, pods), node
 * selectors and tolerations forced onto every pod, the scheduler
 * profiles pods may name, and what pods may name on the host beyond the
 * host floor (priority and runtime classes, node labels, node pools,
 * node-mounted and CSI volumes, NVIDIA_* variables), how images are pulled
 * and from where. A policy is a YAML
 * file (policies/README.md);
 * untrusted.yaml, trusted.yaml and mig.yaml ship with Kubicle.
 *
 * This module only decides: the API front (proxy/admission/admission.c) finds the
 * objects, the usage and turns a refusal into 403 Forbidden. Messages are
 * "policy NAME: <rule and limit>", e.g. "policy untrusted: gpu-fraction is
 * not allowed; request whole nvidia.com/gpu".
 *
 * Threading: a loaded policy is immutable; any thread may read it.
 */
#ifndef KB_POLICIES_H
#define KB_POLICIES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct policy policy_t;

/* What pods take from a quota: GPUs and cpu in thousandths, memory in
 * bytes, pods as a count. */
struct policy_usage {
	int64_t gpu_milli;
	int64_t cpu_milli;
	int64_t memory;
	int64_t pods;
};

/* Loads a policy: `ref` is a shipped name ("untrusted", "trusted", "mig",
 * looked up in $KUBICLE_POLICY_DIR, then the source and install folders) or
 * a path to a YAML file (anything with a '/' or ending in .yaml/.yml).
 * *out is owned by the caller (policy_free). 0, -ENOENT, -EINVAL (err gets
 * why), -ENOMEM. */
int policy_load(const char *ref, policy_t **out, char *err, size_t errlen);
/* Whether policy_load takes `ref` as a file (it has a '/' or ends in .yaml
 * or .yml) rather than a shipped name. */
bool policy_ref_is_file(const char *ref);
/* Parses YAML text (borrowed) into a policy named `name` when the text does
 * not name itself. Same results as policy_load. */
int policy_parse(const char *yaml, size_t len, const char *name, policy_t **out, char *err,
		 size_t errlen);
void policy_free(policy_t *p);
/* The policy's name (borrowed, lives as long as p). */
const char *policy_name(const policy_t *p);

/*
 * The host floor (policies/README.md): what every pod that reaches a host is
 * held to, whatever its tenant's policy, which can only be stricter. `floor`
 * arguments are a Pod Security level (policy_pss_parse: privileged 0,
 * baseline 1, restricted 2), or POLICY_FLOOR_NONE for a server whose pods
 * reach no host. At every level but NONE the floor also refuses what picks
 * host objects or devices the policy does not give (host priority classes,
 * node targeting, runtime classes, scheduler keys, NVIDIA_* variables); a
 * tenant without a policy gets the floor's defaults. Only the platform sets
 * the level (kubicle serve/create --floor); the default is baseline.
 */
#define POLICY_FLOOR_NONE (-1)

/* Admission of one object of `kind` (Pod, Deployment, ReplicaSet,
 * StatefulSet, DaemonSet, Job, CronJob, ReplicationController, PodTemplate;
 * ConfigMap and Secret: no new NVIDIA_* key, which envFrom would make a
 * variable; other kinds pass): the pod or its pod template against the floor, then
 * the policy p (may be NULL: the floor alone): its GPU mode, Pod Security
 * Standard, host fields and scheduler rules. old (may be NULL) is the
 * stored object of an update: an unchanged pod spec, labels and annotations
 * pass. 0, or -EACCES with msg set to "host floor: ..." and/or "policy
 * NAME: ..." (joined by "; "). obj and old are borrowed. */
int policy_admit(const policy_t *p, int floor, const char *kind, const json_t *obj,
		 const json_t *old, char *msg, size_t len);
/* Whether a pod may name the PriorityClass `name` (borrowed), which is a
 * copy of the host's class of that name when host_class: under a floor or a
 * policy, only the policy's priorityClasses, or without that list every
 * host class but system-*. 0, or -EACCES with msg "host floor: ..." or
 * "policy NAME: ...". */
int policy_check_priority_class(const policy_t *p, int floor, const char *name, bool host_class,
				char *msg, size_t len);

/* Adds what one pod (borrowed) takes to *u; pods that have terminated
 * (phase Succeeded or Failed) take nothing. */
void policy_pod_usage(const policy_t *p, const json_t *pod, struct policy_usage *u);
/* Whether `used` plus `req` stays within the policy's quotas. 0, or
 * -EACCES with msg "policy NAME: exceeded quota: gpu, requested: 1, used:
 * 4, limited: 4". */
int policy_check_quota(const policy_t *p, const struct policy_usage *used,
		       const struct policy_usage *req, char *msg, size_t len);
/* Whether the schedulers' topology keys of pods (KAI kai.scheduler/topology*,
 * Kueue podset-*-topology, Volcano network-topology-*) may reach the host
 * (topologyHints: allow; default deny). */
bool policy_topology_hints(const policy_t *p);
/* The policy's GPU quota in thousandths of a GPU, -1 when it sets none. */
int64_t policy_gpu_quota_milli(const policy_t *p);
/* True when the policy sets at least one quota. */
bool policy_has_quota(const policy_t *p);
/* ResourceQuota spec.hard / status.used maps (new references) for the
 * quotas the policy sets, e.g. {"requests.nvidia.com/gpu": "4"}. */
json_t *policy_quota_hard(const policy_t *p);
json_t *policy_quota_used(const policy_t *p, const struct policy_usage *used);

/* Merges the forced node selector and tolerations into a pod (borrowed,
 * modified): the policy's nodeSelector keys win; tolerations are added
 * unless an equal one is present. 0 or -ENOMEM. */
int policy_mutate_pod(const policy_t *p, json_t *pod);

/* Pod Security Standard levels by name, as the pod-security.kubernetes.io
 * namespace labels and the policy's podSecurity spell them: "privileged" 0,
 * "baseline" 1, "restricted" 2 (the stricter the higher); -EINVAL for
 * anything else (name borrowed, may be NULL). */
int policy_pss_parse(const char *name);
/* The name of a level from policy_pss_parse ("restricted"); NULL if none. */
const char *policy_pss_name(int level);
/* The policy's podSecurity level (policy_pss_parse's values). */
int policy_pss_level(const policy_t *p);
/* Pod Security admission of one pod (meta and spec borrowed) at `level`
 * (policy_pss_parse's values), every check included: the violations are
 * appended to msg as kube's pod-security admission words them ("privileged
 * (container "c" must not set securityContext.privileged=true)"), joined by
 * ", ". Returns how many. */
int policy_pss_violations(int level, const json_t *meta, const json_t *spec, char *msg, size_t len);

/*
 * The volume sources of a Kubernetes 1.33 pod (every member of core/v1
 * VolumeSource) and what a tenant's pod may do with each (policies/volumes.c,
 * policies/README.md): the one table the tenant API, the floor and the
 * syncer read.
 */
enum policy_volume_class {
	POLICY_VOLUME_TENANT,   /* pod-local or the tenant's own host objects */
	POLICY_VOLUME_NODE,     /* node-mounted: only the policy's volumeTypes */
	POLICY_VOLUME_CSI,      /* inline CSI: only the policy's csiDrivers */
	POLICY_VOLUME_HOSTPATH, /* Pod Security's hostPath rule (hostFields) */
	POLICY_VOLUME_NEVER,    /* no policy can open it */
};
struct policy_volume_source {
	const char *name; /* the VolumeSource member ("nfs") */
	enum policy_volume_class cls;
	const char *why;   /* NEVER: why, "it names ..." */
	const char *needs; /* a member naming a Secret it must have ("secretRef"), or NULL */
};
/* The row of VolumeSource member `name` (borrowed, may be NULL); NULL when
 * 1.33's VolumeSource has no such member. The row is static. */
const struct policy_volume_source *policy_volume_source(const char *name);
/* The whole table (static), *n rows. */
const struct policy_volume_source *policy_volume_sources(size_t *n);

/*
 * Images on shared nodes (policies/images.c): kube's AlwaysPullImages. The
 * pull policy of every container (init, app, ephemeral) and image volume of
 * pod (borrowed, modified) becomes Always, on a create and on an update
 * (old: the stored pod, else NULL) that brings an image the pod did not
 * have, under the floor or a policy, unless the policy says
 * imagePullPolicy: any. Returns how many fields it changed.
 */
int policy_mutate_images(const policy_t *p, int floor, json_t *pod, const json_t *old);
/* Sets Always on every container and image volume of a pod spec (borrowed,
 * modified): the syncer's second line. Returns how many it changed. */
int policy_pull_always(json_t *spec);
/* The policy's imagePullPolicy: any (p may be NULL: false). */
bool policy_image_pull_any(const policy_t *p);

/* Parses a Kubernetes quantity ("500m", "2", "1Gi", "1.5") into
 * thousandths. 0 or -EINVAL. */
int policy_quantity_milli(const char *s, int64_t *out);

#endif
