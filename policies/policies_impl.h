/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cross-file internals of the policies module: the parsed policy, the Pod
 * Security Standard checks (pss.c) and the GPU and quota arithmetic (gpu.c).
 */
#ifndef KB_POLICIES_IMPL_H
#define KB_POLICIES_IMPL_H

#include "policies/policies.h"

enum policy_gpu_mode { POLICY_GPU_WHOLE = 0, POLICY_GPU_FRACTIONAL, POLICY_GPU_MIG };
enum policy_pss { POLICY_PSS_PRIVILEGED = 0, POLICY_PSS_BASELINE, POLICY_PSS_RESTRICTED };

struct policy {
	char name[128];
	enum policy_gpu_mode gpu_mode;
	json_t *mig_profiles;   /* array of strings ("1g.10gb") */
	int64_t gpu_memory_mib; /* memory of one GPU, for gpu-memory requests; 0: unknown */
	enum policy_pss pss;
	bool host_fields;    /* hostNetwork, hostPath, privileged... may pass */
	bool topology_hints; /* schedulers' topology keys on pods may pass (syncer) */
	bool has_quota[4];
	struct policy_usage quota; /* valid where has_quota[] */
	json_t *node_selector;     /* object of strings, or NULL */
	json_t *tolerations;       /* array, or NULL */
	json_t *schedulers;        /* array of strings, or NULL: any */
	json_t *extended; /* extendedResources: name -> GPUs (thousandths) of one unit, or NULL */
	/* what pods may name on the host (floor.c); arrays of strings, "*" any */
	json_t *priority_classes; /* host PriorityClasses, or NULL: every one but system-* */
	json_t *node_labels;      /* node label keys to select on, or NULL: os and arch */
	json_t *runtime_classes;  /* RuntimeClasses, or NULL: none */
	json_t *node_pools;       /* values of KAI's kai.scheduler/node-pool, or NULL: none */
	json_t *volume_types;     /* node-mounted volume types (nfs...), or NULL: none */
	json_t *csi_drivers;      /* drivers of inline csi volumes, or NULL: none */
	bool nvidia_env;          /* NVIDIA_* environment variables may pass */
	bool image_pull_any;      /* imagePullPolicy: any (else pods pull Always) */
	json_t *image_registries; /* image prefixes, or NULL: any registry */
};

/* Appends ", " (when msg is not empty) + the printf text to msg (len bytes). */
void policy_msg_add(char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* pss.c: Pod Security Standard violations of a pod spec (spec and meta
 * borrowed) at `level`, appended to msg. host_fields: the host-level checks
 * (host namespaces, hostPath, hostPort, privileged) are exempt. Returns how
 * many. */
int policy_pss_check(enum policy_pss level, bool host_fields, const json_t *meta,
		     const json_t *spec, char *msg, size_t len);
/* pss.c: host-level fields (hostNetwork/PID/IPC, hostPath, hostPort,
 * privileged) appended to msg. Returns how many. */
int policy_host_check(const json_t *spec, char *msg, size_t len);
/* floor.c: what a pod names on the host (priority class, nodes, runtime,
 * scheduler keys, NVIDIA environment) against policy p, or the floor's
 * defaults when p is NULL; ospec (may be NULL) is the stored pod's spec of an
 * update. Violations appended to msg; returns how many. */
int policy_govern_check(const policy_t *p, const json_t *meta, const json_t *spec,
			const json_t *ospec, char *msg, size_t len);
/* floor.c: new NVIDIA_* keys of a ConfigMap or Secret obj (old: the stored
 * one of an update, or NULL), appended to msg; returns how many. */
int policy_config_check(const policy_t *p, const json_t *obj, const json_t *old, char *msg,
			size_t len);
/* images.c: images (containers of every kind, image volumes) from outside
 * the policy's imageRegistries, appended to msg; returns how many. */
int policy_image_check(const policy_t *p, const json_t *spec, char *msg, size_t len);
/* gpu.c: GPU mode violations appended to msg. Returns how many. */
int policy_gpu_check(const policy_t *p, const json_t *meta, const json_t *spec, char *msg,
		     size_t len);
/* gpu.c: GPUs (thousandths) one pod asks for, fractions included. */
int64_t policy_pod_gpu_milli(const policy_t *p, const json_t *meta, const json_t *spec);

#endif
