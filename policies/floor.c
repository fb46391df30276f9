/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a pod names on the host: the part of the host floor (policies/README.md)
 * that is not Pod Security. A tenant's pod reaches a shared host cluster,
 * where some of its fields pick host objects or host devices; each is
 * refused unless the tenant's policy (written by the platform) gives it:
 *
 * - priorityClassName: the host's system-node-critical and
 *   system-cluster-critical (2000001000 and 2000000000, above every user
 *   class) only when the policy's priorityClasses lists them; the policy's
 *   list also limits the other host classes (proxy/admission/admission.c
 *   knows which classes came from the host);
 * - node targeting: nodeName, nodeSelector and node affinity keys other
 *   than the policy's nodeSelector keys and nodeLabels (default
 *   kubernetes.io/os and kubernetes.io/arch), node affinity matchFields (a
 *   node's name), and tolerations the policy's do not cover (kube's own
 *   node-condition taints excepted);
 * - runtimeClassName: only the policy's runtimeClasses;
 * - scheduler keys: KAI's node-pool label (only the policy's nodePools),
 *   KAI's priorityClassName label (the host class rule above), Kueue's
 *   kueue.x-k8s.io/priority-class label (only the policy's priorityClasses),
 *   and the keys KAI's binder or HAMi's scheduler write on a pod to record
 *   the devices they chose (a tenant writing them would pick devices);
 *   gpu-fraction-container-name must name one of the pod's containers;
 * - annotations the node's runtime or CNI obeys (CDI devices, CRI-O
 *   settings, Multus networks);
 * - NVIDIA_* environment variables, which the NVIDIA container runtime
 *   obeys (NVIDIA_VISIBLE_DEVICES selects GPUs), unless nvidiaEnv: allow:
 *   in env, through an envFrom prefix, or as new keys of a ConfigMap or
 *   Secret (which envFrom turns into variables when the container starts,
 *   so a check of the pod alone could be undone by a later write);
 * - pod (anti-)affinity terms naming namespaces (the host's);
 * - volumes, by the one table of volume sources (volumes.c): those the node
 *   mounts with its own identity (nfs, iscsi, flexVolume...) unless the
 *   policy's volumeTypes lists them, inline CSI volumes unless its
 *   csiDrivers lists the driver, and never those no policy can open (cloud
 *   disks, gitRepo...: the tenant API refuses them first on a syncing
 *   tenant, proxy/api/hostrefs.c);
 * - dynamic resource allocation (resourceClaims, resources.claims): never.
 *
 * Messages name the field and the rule, e.g.
 * "spec.runtimeClassName: runtime class \"nvidia\" is not allowed; allowed: none".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "policies/policies_impl.h"

/* Node labels a pod may select on when the policy lists none: they pick
 * no node the platform did not give (charts commonly set them). */
static const char *const default_node_labels[] = {
    "kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/arch"};

/* Taints kube's node lifecycle controller sets from node conditions
 * (k8s.io/api core/v1 well_known_taints.go); the DefaultTolerationSeconds
 * plugin and the DaemonSet controller add tolerations of them. Cordoning
 * (node.kubernetes.io/unschedulable) is the platform's, so not listed. */
static const char *const kube_taints[] = {
    "node.kubernetes.io/not-ready",       "node.kubernetes.io/unreachable",
    "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure",
    "node.kubernetes.io/pid-pressure",    "node.kubernetes.io/network-unavailable",
};

/* Labels and annotations a scheduler or its binder writes on a pod to
 * record what it chose; a tenant's value would choose for it.
 * KAI: pkg/common/constants/constants.go (runai-gpu-group read back by
 * pkg/common/resources/gpu_sharing.go GetGpuGroups; received-resource-type
 * by pkg/scheduler/api/pod_info/pod_info.go; runai/shared-gpu-configmap by
 * pkg/binder/common/gpusharingconfigmap/config_map.go;
 * run.ai/reserve_for_gpu_index by
 * pkg/binder/binding/resourcereservation/resource_reservation.go). HAMi:
 * hami.io/... (vgpu-devices-to-allocate is what its device plugin mounts) and
 * nvidia.com/use-gpuuuid (GPUs by UUID). */
static const char *const scheduler_labels[] = {"runai-gpu-group"};
static const char *const scheduler_label_prefixes[] = {"runai-gpu-group/"};
static const char *const scheduler_annotations[] = {
    "runai-gpu-group", "received-resource-type", "runai/shared-gpu-configmap",
    "run.ai/reserve_for_gpu_index", "nvidia.com/use-gpuuuid"};
static const char *const scheduler_annotation_prefixes[] = {"hami.io/"};
/* Annotations the node's container runtime or CNI reads from the pod:
 * cdi.k8s.io/ injects Container Device Interface devices (GPUs included)
 * without the device plugin (containerd's and CRI-O's CDI support);
 * io.kubernetes.cri-o. and io.kubernetes.cri. tune the runtime (CRI-O's
 * allowed_annotations: host devices, user namespaces, cgroups); Multus's
 * k8s.v1.cni.cncf.io/networks and v1.multus-cni.io/default-network attach
 * the pod to the host's NetworkAttachmentDefinitions. */
static const char *const runtime_annotation_prefixes[] = {
    "cdi.k8s.io/", "io.kubernetes.cri-o.", "io.kubernetes.cri.", "k8s.v1.cni.cncf.io/",
    "v1.multus-cni.io/"};
/* KAI takes a pod with label app=<these> for one of its own utility pods
 * (pkg/scheduler/api/pod_info/utility_pods.go; the default values of
 * DefaultResourceReservationName and DefaultScaleAdjustName). */
static const char *const kai_utility_apps[] = {"kai-resource-reservation", "kai-scale-adjust"};

#define NODE_POOL_LABEL    "kai.scheduler/node-pool"
#define KAI_PRIORITY_LABEL "priorityClassName"
/* Kueue's workload priority (a cluster-scoped WorkloadPriorityClass of the
 * host; sigs.k8s.io/kueue constants WorkloadPriorityClassLabel) */
#define KUEUE_PRIORITY_LABEL "kueue.x-k8s.io/priority-class"
#define NVIDIA_ENV           "NVIDIA_"

static bool in(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

static bool has_prefix_in(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (kb_str_has_prefix(s, list[i]))
			return true;
	return false;
}

/* Whether the policy list (array of strings, may be NULL) has s or "*". */
static bool listed(const json_t *list, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach (list, i, v) {
		const char *x = json_string_value(v);
		if (x && s && (strcmp(x, "*") == 0 || strcmp(x, s) == 0))
			return true;
	}
	return false;
}

/* "a, b" of a policy list, or "none". */
static void list_text(const json_t *list, const char *const *dflt, size_t ndflt, char *out,
		      size_t len)
{
	out[0] = '\0';
	size_t i;
	json_t *v;
	json_array_foreach (list, i, v)
		policy_msg_add(out, len, "%s", json_string_value(v) ? json_string_value(v) : "");
	for (i = 0; !list && i < ndflt; i++)
		policy_msg_add(out, len, "%s", dflt[i]);
	if (!out[0])
		snprintf(out, len, "none");
}

/* ---- priority ---- */

/* "a, b" of the policy's priorityClasses, or the default. */
static void classes_text(const policy_t *p, char *out, size_t len)
{
	if (p && p->priority_classes)
		list_text(p->priority_classes, NULL, 0, out, len);
	else
		snprintf(out, len, "every host class but system-*");
}

/* Only system-* here: any pod template names them; which other classes
 * came from the host only the API knows (policy_check_priority_class). */
static int priority_check(const policy_t *p, const json_t *spec, char *msg, size_t len)
{
	const char *pc = json_string_value(json_object_get(spec, "priorityClassName"));
	char allowed[512];
	if (!pc || !kb_str_has_prefix(pc, "system-") || (p && listed(p->priority_classes, pc)))
		return 0;
	classes_text(p, allowed, sizeof(allowed));
	policy_msg_add(msg, len,
		       "spec.priorityClassName: \"%s\" is a host priority class not allowed; "
		       "allowed: %s",
		       pc, allowed);
	return 1;
}

/* ---- node targeting ---- */

static bool node_label_ok(const policy_t *p, const char *key)
{
	if (p && json_object_get(p->node_selector, key))
		return true;
	if (p && p->node_labels)
		return listed(p->node_labels, key);
	return in(key, default_node_labels, KB_ARRAY_SIZE(default_node_labels));
}

static int node_key(const policy_t *p, const char *field, const char *key, char *msg, size_t len)
{
	if (node_label_ok(p, key))
		return 0;
	char allowed[512];
	list_text(p ? p->node_labels : NULL, default_node_labels,
		  KB_ARRAY_SIZE(default_node_labels), allowed, sizeof(allowed));
	policy_msg_add(
	    msg, len, "%s: node label \"%s\" is not allowed to select nodes; allowed: %s%s", field,
	    key ? key : "", allowed,
	    p && json_object_size(p->node_selector) ? " and the policy's nodeSelector" : "");
	return 1;
}

/* One NodeSelectorTerm (or a preference) at `field`. */
static int node_term(const policy_t *p, const char *field, const json_t *term, char *msg,
		     size_t len)
{
	int n = 0;
	size_t i;
	json_t *e;
	char f[256];
	json_array_foreach (json_object_get(term, "matchExpressions"), i, e) {
		snprintf(f, sizeof(f), "%s.matchExpressions[%zu].key", field, i);
		n += node_key(p, f, json_string_value(json_object_get(e, "key")), msg, len);
	}
	json_array_foreach (json_object_get(term, "matchFields"), i, e) {
		if (p && listed(p->node_labels, "*"))
			continue;
		policy_msg_add(msg, len,
			       "%s.matchFields[%zu]: node targeting by name is not allowed", field,
			       i);
		n++;
	}
	return n;
}

static int affinity_check(const policy_t *p, const json_t *spec, char *msg, size_t len)
{
	const json_t *na = kb_json_path(spec, "affinity.nodeAffinity");
	int n = 0;
	size_t i;
	json_t *t;
	char f[256];
	json_array_foreach (kb_json_path(na, "requiredDuringSchedulingIgnoredDuringExecution."
					     "nodeSelectorTerms"),
			    i, t) {
		snprintf(
		    f, sizeof(f),
		    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
		    "nodeSelectorTerms[%zu]",
		    i);
		n += node_term(p, f, t, msg, len);
	}
	json_array_foreach (json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution"),
			    i, t) {
		snprintf(
		    f, sizeof(f),
		    "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
		    "[%zu].preference",
		    i);
		n += node_term(p, f, json_object_get(t, "preference"), msg, len);
	}
	return n;
}

static int node_selector_check(const policy_t *p, const json_t *spec, char *msg, size_t len)
{
	int n = 0;
	const char *k;
	json_t *v;
	char f[320];
	json_object_foreach ((json_t *)json_object_get(spec, "nodeSelector"), k, v) {
		snprintf(f, sizeof(f), "spec.nodeSelector[%s]", k);
		n += node_key(p, f, k, msg, len);
	}
	return n;
}

static const char *tstr(const json_t *t, const char *key)
{
	const char *s = json_string_value(json_object_get(t, key));
	return s ? s : "";
}

/* Whether toleration `have` (the policy's) tolerates every taint `t` does
 * (kube's Toleration.ToleratesTaint: an empty key with Exists matches every
 * key, an empty effect every effect; Equal, the default, compares values). */
static bool covers(const json_t *have, const json_t *t)
{
	const char *hk = tstr(have, "key"), *tk = tstr(t, "key");
	const char *he = tstr(have, "effect"), *te = tstr(t, "effect");
	bool h_exists = strcmp(tstr(have, "operator"), "Exists") == 0;
	bool t_exists = strcmp(tstr(t, "operator"), "Exists") == 0;
	if (*he && strcmp(he, te) != 0)
		return false;
	if (!*hk)
		return h_exists;
	if (strcmp(hk, tk) != 0)
		return false;
	return h_exists || (!t_exists && strcmp(tstr(have, "value"), tstr(t, "value")) == 0);
}

static bool toleration_ok(const policy_t *p, const json_t *t)
{
	if (in(tstr(t, "key"), kube_taints, KB_ARRAY_SIZE(kube_taints)))
		return true;
	size_t i;
	json_t *have;
	json_array_foreach (p ? p->tolerations : NULL, i, have)
		if (covers(have, t))
			return true;
	return false;
}

static int tolerations_check(const policy_t *p, const json_t *spec, char *msg, size_t len)
{
	int n = 0;
	size_t i;
	json_t *t;
	json_array_foreach (json_object_get(spec, "tolerations"), i, t) {
		if (toleration_ok(p, t))
			continue;
		const char *key = tstr(t, "key");
		policy_msg_add(msg, len,
			       "spec.tolerations[%zu]: toleration of %s%s%s is not allowed; "
			       "allowed: the policy's tolerations and kube's node condition taints",
			       i, *key ? "taint \"" : "every taint", key, *key ? "\"" : "");
		n++;
	}
	return n;
}

static int node_name_check(const json_t *spec, const json_t *ospec, char *msg, size_t len)
{
	const char *nn = json_string_value(json_object_get(spec, "nodeName"));
	const char *was = json_string_value(json_object_get(ospec, "nodeName"));
	if (!nn || !*nn || (was && strcmp(nn, was) == 0))
		return 0;
	policy_msg_add(msg, len, "spec.nodeName: node targeting by name is not allowed");
	return 1;
}

/* Pod (anti-)affinity terms that name namespaces: on the host they would
 * select the pods of the host's namespaces (other tenants', the
 * platform's), to run beside them or to keep them away. Without them a
 * term selects the pod's own namespace, on the host the tenant's. */
static int pod_affinity_check(const json_t *spec, char *msg, size_t len)
{
	static const char *const kinds[] = {"podAffinity", "podAntiAffinity"};
	static const char *const keys[] = {"namespaces", "namespaceSelector"};
	int n = 0;
	for (size_t k = 0; k < KB_ARRAY_SIZE(kinds); k++) {
		const json_t *a = json_object_get(json_object_get(spec, "affinity"), kinds[k]);
		const json_t *req =
		    json_object_get(a, "requiredDuringSchedulingIgnoredDuringExecution");
		const json_t *pref =
		    json_object_get(a, "preferredDuringSchedulingIgnoredDuringExecution");
		size_t i;
		json_t *t;
		for (size_t j = 0; j < KB_ARRAY_SIZE(keys); j++) {
			json_array_foreach (req, i, t) {
				if (!json_object_get(t, keys[j]))
					continue;
				policy_msg_add(
				    msg, len,
				    "spec.affinity.%s.requiredDuringSchedulingIgnoredDuring"
				    "Execution[%zu].%s: pods of other namespaces are the "
				    "host's; not allowed",
				    kinds[k], i, keys[j]);
				n++;
			}
			json_array_foreach (pref, i, t) {
				if (!json_object_get(json_object_get(t, "podAffinityTerm"),
						     keys[j]))
					continue;
				policy_msg_add(
				    msg, len,
				    "spec.affinity.%s.preferredDuringSchedulingIgnoredDuring"
				    "Execution[%zu].podAffinityTerm.%s: pods of other "
				    "namespaces are the host's; not allowed",
				    kinds[k], i, keys[j]);
				n++;
			}
		}
	}
	return n;
}

/* ---- volumes ---- */

static int volumes_check(const policy_t *p, const json_t *spec, char *msg, size_t len)
{
	int n = 0;
	size_t i;
	json_t *v;
	char allowed[512];
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		const char *k;
		json_t *src;
		json_object_foreach (v, k, src) {
			const struct policy_volume_source *row = policy_volume_source(k);
			if (row && row->cls == POLICY_VOLUME_NEVER) {
				policy_msg_add(msg, len,
					       "spec.volumes[%zu].%s: no policy allows it: %s", i,
					       k, row->why);
				n++;
			} else if (row && row->cls == POLICY_VOLUME_NODE &&
				   !(p && listed(p->volume_types, k))) {
				list_text(p ? p->volume_types : NULL, NULL, 0, allowed,
					  sizeof(allowed));
				policy_msg_add(
				    msg, len,
				    "spec.volumes[%zu].%s: the node mounts it with its own "
				    "identity; allowed: %s",
				    i, k, allowed);
				n++;
			} else if (row && row->cls == POLICY_VOLUME_CSI &&
				   !(p && listed(p->csi_drivers, tstr(src, "driver")))) {
				list_text(p ? p->csi_drivers : NULL, NULL, 0, allowed,
					  sizeof(allowed));
				policy_msg_add(
				    msg, len,
				    "spec.volumes[%zu].csi.driver: inline volumes of CSI "
				    "driver \"%s\" are not allowed; allowed: %s",
				    i, tstr(src, "driver"), allowed);
				n++;
			}
		}
	}
	return n;
}

/* ---- dynamic resource allocation ---- */

/* A DRA claim names ResourceClaims and ResourceClaimTemplates of which the
 * host has no copy (or, worse, another tenant's or the platform's of that
 * name), and a device claimed through DRA (a GPU too) escapes the policy's
 * GPU count: refused for every tenant, here only, in these words. */
#define DRA_RULE                                                                              \
	"dynamic resource allocation is not allowed: the shared host cluster has no copy of " \
	"this cluster's ResourceClaims and ResourceClaimTemplates, and devices claimed "      \
	"through them are not counted by the policy"

static int dra_claims(const json_t *res, const char *at, char *msg, size_t len)
{
	if (!json_array_size(json_object_get(res, "claims")))
		return 0;
	policy_msg_add(msg, len, "%s.resources.claims: " DRA_RULE, at);
	return 1;
}

static int dra_check(const json_t *spec, char *msg, size_t len)
{
	static const char *const kinds[] = {"initContainers", "containers", "ephemeralContainers"};
	int n = 0;
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(spec, "resourceClaims"), i, c) {
		policy_msg_add(msg, len, "spec.resourceClaims[%zu]: " DRA_RULE, i);
		n++;
	}
	n += dra_claims(json_object_get(spec, "resources"), "spec", msg, len);
	for (size_t k = 0; k < KB_ARRAY_SIZE(kinds); k++) {
		json_array_foreach (json_object_get(spec, kinds[k]), i, c) {
			char at[64];
			snprintf(at, sizeof(at), "spec.%s[%zu]", kinds[k], i);
			n += dra_claims(json_object_get(c, "resources"), at, msg, len);
		}
	}
	return n;
}

/* kube's validateMountPropagation (pkg/apis/core/validation): a mount
 * propagated back to the node needs a privileged container; refused here
 * in kube's words, since a tenant's mount would reach the host. */
static int propagation_check(const json_t *spec, char *msg, size_t len)
{
	static const char *const kinds[] = {"containers", "initContainers", "ephemeralContainers"};
	int n = 0;
	for (size_t k = 0; k < KB_ARRAY_SIZE(kinds); k++) {
		size_t i, j;
		json_t *c, *m;
		json_array_foreach (json_object_get(spec, kinds[k]), i, c) {
			if (json_is_true(kb_json_path(c, "securityContext.privileged")))
				continue;
			json_array_foreach (json_object_get(c, "volumeMounts"), j, m) {
				if (strcmp(tstr(m, "mountPropagation"), "Bidirectional") != 0)
					continue;
				policy_msg_add(
				    msg, len,
				    "spec.%s[%zu].volumeMounts[%zu].mountPropagation: "
				    "Bidirectional mount propagation is available only to "
				    "privileged containers",
				    kinds[k], i, j);
				n++;
			}
		}
	}
	return n;
}

/* ---- runtime ---- */

static int runtime_check(const policy_t *p, const json_t *spec, char *msg, size_t len)
{
	const char *rc = json_string_value(json_object_get(spec, "runtimeClassName"));
	if (!rc || !*rc || (p && listed(p->runtime_classes, rc)))
		return 0;
	char allowed[512];
	list_text(p ? p->runtime_classes : NULL, NULL, 0, allowed, sizeof(allowed));
	policy_msg_add(msg, len,
		       "spec.runtimeClassName: runtime class \"%s\" is not allowed; "
		       "allowed: %s",
		       rc, allowed);
	return 1;
}

/* ---- scheduler keys ---- */

/* KAI's pod grouper takes the label priorityClassName before
 * spec.priorityClassName for the pod group's priority
 * (pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go
 * calcPodGroupPriorityClass; constants.PriorityLabelKey), looked up among
 * the host's classes: its value is held to the host class rule. */
static bool class_label_ok(const policy_t *p, const char *val)
{
	if (!val || !*val)
		return true;
	if (p && p->priority_classes)
		return listed(p->priority_classes, val);
	return !kb_str_has_prefix(val, "system-");
}

static int labels_check(const policy_t *p, const json_t *meta, char *msg, size_t len)
{
	int n = 0;
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)json_object_get(meta, "labels"), k, v) {
		const char *val = json_string_value(v);
		if (in(k, scheduler_labels, KB_ARRAY_SIZE(scheduler_labels)) ||
		    has_prefix_in(k, scheduler_label_prefixes,
				  KB_ARRAY_SIZE(scheduler_label_prefixes))) {
			policy_msg_add(msg, len,
				       "metadata.labels[%s]: set by the scheduler on the host, "
				       "not by a tenant",
				       k);
			n++;
		} else if (strcmp(k, KAI_PRIORITY_LABEL) == 0 && !class_label_ok(p, val)) {
			char allowed[512];
			classes_text(p, allowed, sizeof(allowed));
			policy_msg_add(msg, len,
				       "metadata.labels[" KAI_PRIORITY_LABEL "]: KAI takes \"%s\" "
				       "for the pod's priority class, a host class not allowed; "
				       "allowed: %s",
				       val ? val : "", allowed);
			n++;
		} else if (strcmp(k, KUEUE_PRIORITY_LABEL) == 0 &&
			   !(p && listed(p->priority_classes, val))) {
			char allowed[512];
			list_text(p ? p->priority_classes : NULL, NULL, 0, allowed,
				  sizeof(allowed));
			policy_msg_add(msg, len,
				       "metadata.labels[" KUEUE_PRIORITY_LABEL "]: Kueue's "
				       "WorkloadPriorityClass \"%s\" is a host object not allowed; "
				       "allowed: %s",
				       val ? val : "", allowed);
			n++;
		} else if (strcmp(k, "app") == 0 &&
			   in(val, kai_utility_apps, KB_ARRAY_SIZE(kai_utility_apps))) {
			policy_msg_add(msg, len,
				       "metadata.labels[app]: \"%s\" marks KAI's own utility pods",
				       val);
			n++;
		} else if (strcmp(k, NODE_POOL_LABEL) == 0 && !(p && listed(p->node_pools, val))) {
			char allowed[512];
			list_text(p ? p->node_pools : NULL, NULL, 0, allowed, sizeof(allowed));
			policy_msg_add(msg, len,
				       "metadata.labels[" NODE_POOL_LABEL "]: node pool \"%s\" is "
				       "not allowed; allowed: %s",
				       val ? val : "", allowed);
			n++;
		}
	}
	return n;
}

static bool names_container(const json_t *spec, const char *name)
{
	static const char *const kinds[] = {"containers", "initContainers"};
	for (size_t k = 0; k < KB_ARRAY_SIZE(kinds); k++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, kinds[k]), i, c)
			if (strcmp(tstr(c, "name"), name) == 0)
				return true;
	}
	return false;
}

static int annotations_check(const json_t *meta, const json_t *spec, char *msg, size_t len)
{
	int n = 0;
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)json_object_get(meta, "annotations"), k, v) {
		if (in(k, scheduler_annotations, KB_ARRAY_SIZE(scheduler_annotations)) ||
		    has_prefix_in(k, scheduler_annotation_prefixes,
				  KB_ARRAY_SIZE(scheduler_annotation_prefixes))) {
			policy_msg_add(
			    msg, len,
			    "metadata.annotations[%s]: set by the scheduler on the host, "
			    "not by a tenant",
			    k);
			n++;
		} else if (has_prefix_in(k, runtime_annotation_prefixes,
					 KB_ARRAY_SIZE(runtime_annotation_prefixes))) {
			policy_msg_add(msg, len,
				       "metadata.annotations[%s]: read by the node's container "
				       "runtime or network plugin; not allowed",
				       k);
			n++;
		} else if (strcmp(k, "gpu-fraction-container-name") == 0 &&
			   !names_container(spec,
					    json_string_value(v) ? json_string_value(v) : "")) {
			policy_msg_add(msg, len,
				       "metadata.annotations[gpu-fraction-container-name]: \"%s\" "
				       "is not a container of the pod",
				       json_string_value(v) ? json_string_value(v) : "");
			n++;
		}
	}
	return n;
}

/* ---- NVIDIA environment ---- */

/* Whether prefix + some key can start with NVIDIA_. */
static bool env_prefix_reaches(const char *prefix)
{
	size_t n = strlen(prefix), m = strlen(NVIDIA_ENV);
	return n && strncmp(prefix, NVIDIA_ENV, n < m ? n : m) == 0;
}

static int env_check(const json_t *spec, char *msg, size_t len)
{
	static const char *const kinds[] = {"containers", "initContainers", "ephemeralContainers"};
	int n = 0;
	for (size_t k = 0; k < KB_ARRAY_SIZE(kinds); k++) {
		size_t i, j;
		json_t *c, *e;
		json_array_foreach (json_object_get(spec, kinds[k]), i, c) {
			json_array_foreach (json_object_get(c, "env"), j, e) {
				if (!kb_str_has_prefix(tstr(e, "name"), NVIDIA_ENV))
					continue;
				policy_msg_add(msg, len,
					       "spec.%s[%zu].env[%zu]: %s is read by the NVIDIA "
					       "container runtime; NVIDIA_* variables are not "
					       "allowed",
					       kinds[k], i, j, tstr(e, "name"));
				n++;
			}
			json_array_foreach (json_object_get(c, "envFrom"), j, e) {
				if (!env_prefix_reaches(tstr(e, "prefix")))
					continue;
				policy_msg_add(
				    msg, len,
				    "spec.%s[%zu].envFrom[%zu].prefix: \"%s\" would make "
				    "NVIDIA_* variables; they are not allowed",
				    kinds[k], i, j, tstr(e, "prefix"));
				n++;
			}
		}
	}
	return n;
}

/* Whether one key of a ConfigMap or Secret map is new (not in old). */
static int config_keys(const json_t *map, const json_t *omap, const char *field, char *msg,
		       size_t len)
{
	int n = 0;
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)map, k, v) {
		if (!kb_str_has_prefix(k, NVIDIA_ENV) || json_object_get(omap, k))
			continue;
		policy_msg_add(msg, len,
			       "%s[%s]: envFrom would make it a variable the NVIDIA container "
			       "runtime obeys; NVIDIA_* keys are not allowed",
			       field, k);
		n++;
	}
	return n;
}

int policy_config_check(const policy_t *p, const json_t *obj, const json_t *old, char *msg,
			size_t len)
{
	static const char *const maps[] = {"data", "binaryData", "stringData"};
	int n = 0;
	if (p && p->nvidia_env)
		return 0;
	for (size_t i = 0; i < KB_ARRAY_SIZE(maps); i++)
		n += config_keys(json_object_get(obj, maps[i]), json_object_get(old, maps[i]),
				 maps[i], msg, len);
	return n;
}

int policy_govern_check(const policy_t *p, const json_t *meta, const json_t *spec,
			const json_t *ospec, char *msg, size_t len)
{
	int n = priority_check(p, spec, msg, len) + node_name_check(spec, ospec, msg, len) +
		node_selector_check(p, spec, msg, len) + affinity_check(p, spec, msg, len) +
		tolerations_check(p, spec, msg, len) + pod_affinity_check(spec, msg, len) +
		runtime_check(p, spec, msg, len) + volumes_check(p, spec, msg, len) +
		propagation_check(spec, msg, len) + dra_check(spec, msg, len) +
		policy_image_check(p, spec, msg, len) + labels_check(p, meta, msg, len) +
		annotations_check(meta, spec, msg, len);
	if (!p || !p->nvidia_env)
		n += env_check(spec, msg, len);
	return n;
}

int policy_check_priority_class(const policy_t *p, int floor, const char *name, bool host_class,
				char *msg, size_t len)
{
	if ((!p && floor < 0) || !name || !*name || !host_class)
		return 0;
	bool sys = kb_str_has_prefix(name, "system-");
	if (p && p->priority_classes ? listed(p->priority_classes, name) : !sys)
		return 0;
	char allowed[512], who[160] = "host floor";
	classes_text(p, allowed, sizeof(allowed));
	if (p)
		snprintf(who, sizeof(who), "policy %s", policy_name(p));
	snprintf(msg, len,
		 "%s: spec.priorityClassName: \"%s\" is a host priority class not allowed; "
		 "allowed: %s",
		 who, name, allowed);
	return -EACCES;
}
