/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cross-file internals of the syncer: translation (translate.c, pure
 * functions on JSON, unit-tested) and the host API client (host.c).
 */
#ifndef KB_SYNCER_IMPL_H
#define KB_SYNCER_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/httpc.h"
#include "syncer/syncer.h"

/* A string member of o (NULL when missing or not a string), and of its
 * metadata. */
static inline const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static inline const char *meta_str(const json_t *o, const char *key)
{
	return jstr(json_object_get(o, "metadata"), key);
}

#define SYNCER_NAME_MAX 63 /* longest host name we produce */
#define SYNCER_HASH_HEX 16 /* hex digits of sha256 in shortened names */

#define LBL_TENANT    "kubicle.dev/tenant"
#define LBL_NAMESPACE "kubicle.dev/namespace"
#define ANN_NAMESPACE "kubicle.dev/namespace"
#define ANN_NAME      "kubicle.dev/name"
#define ANN_UID       "kubicle.dev/uid"
#define ANN_KIND      "kubicle.dev/kind"
#define ANN_OWNERS    "kubicle.dev/owner-references"
/* "true" on a host pod that a tenant NetworkPolicy isolates for ingress
 * (egress): the platform's allow-within-the-tenant policies then leave it
 * to the tenant's (syncer_netpol_isolation, cmd/hostquota.c) */
#define LBL_INGRESS_ISOLATED "kubicle.dev/ingress-isolated"
#define LBL_EGRESS_ISOLATED  "kubicle.dev/egress-isolated"
/* what the pod's downward API reads, set when it does (translate.c) */
#define ANN_SERVICE_ACCOUNT "kubicle.dev/service-account"
#define ANN_LABELS          "kubicle.dev/labels"
#define ANN_ANNOTATIONS     "kubicle.dev/annotations"
/* on a host group object: "<kind>/<name>" of the tenant workload (gang.c) */
#define ANN_GROUP_OWNER "kubicle.dev/owner"

/* ---- scheduler profiles (the table in DESIGN.md) --------------------------- */
struct syncer_profile {
	const char *name;             /* "kai", "kueue", "volcano", "hami", "none" */
	const char *scheduler_name;   /* NULL: leave the host default */
	const char *queue_label;      /* label carrying the queue, or NULL */
	const char *queue_annotation; /* annotation carrying the queue, or NULL */
};
/* The profile by name; NULL when unknown. The result is static. */
const struct syncer_profile *syncer_profile_find(const char *name);

/* ---- names -------------------------------------------------------------------- */
/*
 * The translated name of tenant object (ns, name) of `tenant`:
 * "<name>-x-<ns>-x-<tenant>" when that is at most 62 characters and holds
 * "-x-" exactly twice (overlaps counted), so that the parts can be read
 * back; otherwise (always 63 characters) a readable prefix of it and "-" +
 * hex digits of sha256("<ns>/<name>/<tenant>"). Injective over every
 * (ns, name, tenant): the argument is in translate.c. `buf` needs
 * SYNCER_NAME_MAX + 1 bytes. ns may be "" (cluster scope). Returns 0 or
 * -EINVAL (empty name or tenant, a '/' in a part).
 */
int syncer_host_name(const char *ns, const char *name, const char *tenant, char *buf, size_t len);
/*
 * The name Kubicle gave (ns, name) before the rule above (short form
 * whenever neither name nor ns held "-x-", which was not injective; hashed
 * forms with 16 hex digits). Upgrades: a host object already under that
 * name whose annotations are exactly its tenant object's is adopted and
 * keeps it (syncer.c, mirror.c); one of another object is never touched.
 * Same contract as syncer_host_name.
 */
int syncer_host_name_legacy(const char *ns, const char *name, const char *tenant, char *buf,
			    size_t len);

/* ---- translation ------------------------------------------------------------- */
struct syncer_xlate {
	const char *tenant;  /* tenant name */
	const char *host_ns; /* host namespace */
	const char *queue;   /* the tenant's queue */
	const struct syncer_profile *profile;
	bool topology_hints;        /* scheduler topology keys pass (policy) */
	bool image_pull_any;        /* pull policies pass as written (policy) */
	const char *api_host;       /* KUBERNETES_SERVICE_HOST for pods, or NULL */
	int api_port;               /* KUBERNETES_SERVICE_PORT */
	const char *sa_secret;      /* host secret mounted as the SA token folder, or NULL */
	const char *pod_dns;        /* the tenant's cluster DNS as host pods reach it, or NULL */
	const char *cluster_domain; /* its zone ("cluster.local"); NULL: that */
	const json_t *service_env;  /* syncer_service_env of the pod's namespace, or NULL */
	/* host Secret holding the pod's projected service-account tokens
	 * (syncer_pod_token_name), or NULL: such sources are dropped */
	const char *token_secret;
	/* NetworkPolicies (netpol.c): the tenant's Namespaces (an array, for
	 * namespaceSelectors) and the ipBlocks the platform allows the tenant
	 * (syncer_netpol_allowed); NULL: none. */
	const json_t *namespaces;
	const json_t *egress_allowed;
	/* when egress_allowed is NULL: the NetworkPolicy mirror, whose host
	 * cache holds the platform's kubicle-TENANT-egress (read at each
	 * translation, so a policy translated after the host's list sees it) */
	struct syncer_mirror *const *netpols;
};

/* The contract's metadata of the host object for tenant metadata tmeta of
 * `kind` (translated name, the tenant's labels and annotations but
 * kubicle.dev/ ones, the tenant, namespace, name, uid and kind). New
 * reference, NULL when the name cannot be translated. */
json_t *syncer_host_meta(const struct syncer_xlate *x, const json_t *tmeta, const char *kind);
/* The metadata part of an update patch (labels and annotations, as
 * syncer_pod_update_patch). New reference. */
json_t *syncer_meta_patch(const json_t *want, const json_t *have, const json_t *prev);

/*
 * The host pod for tenant pod `pod` (borrowed). Returns a new reference, or
 * NULL on ENOMEM. References to ConfigMaps and Secrets are rewritten to
 * translated names; `refs` (borrowed array, may be NULL) gets one
 * {"kind": "ConfigMap"|"Secret", "name": tenant name} per distinct
 * reference.
 */
json_t *syncer_translate_pod(const struct syncer_xlate *x, const json_t *pod, json_t *refs);
/* The environment variables the kubelet gives a pod for `services` (a
 * borrowed array of one namespace's Services: those with a cluster IP get
 * <NAME>_SERVICE_HOST, _SERVICE_PORT[_<PORT>], _PORT and the Docker-link
 * _PORT_<n>_<PROTO>* ones). A new array of {name, value}. */
json_t *syncer_service_env(const json_t *services);
/*
 * Service-account tokens. The service account whose token pod `pod` gets
 * (spec.serviceAccountName, else "default"; borrowed from pod), or NULL when
 * none is mounted: the pod sets automountServiceAccountToken false, or
 * leaves it unset and `sa` (the ServiceAccount, borrowed, may be NULL) does.
 */
const char *syncer_pod_sa(const json_t *pod, const json_t *sa);
/* The host Secret name holding service account ns/sa's token:
 * "<sa>-token-" + 16 hex digits of sha256("<ns>/sa:<sa>/<tenant>"); ':' is
 * in no object name, so it never equals a translated ConfigMap/Secret name.
 * `buf` needs SYNCER_NAME_MAX + 1 bytes. 0 or -EINVAL. */
int syncer_sa_secret_name(const char *ns, const char *sa, const char *tenant, char *buf,
			  size_t len);
/* The host Secret (type Opaque) for service account ns/sa (its uid may be
 * NULL) with data token, ca.crt and namespace (plain strings, encoded
 * here), with the contract's labels and annotations (kind ServiceAccount).
 * New reference or NULL. */
json_t *syncer_sa_secret(const struct syncer_xlate *x, const char *ns, const char *sa,
			 const char *uid, const char *token, const char *ca);
/* The host copy of a tenant ConfigMap or Secret (data, binaryData,
 * stringData, type, immutable). New reference or NULL. */
json_t *syncer_translate_config(const struct syncer_xlate *x, const json_t *obj, const char *kind);
/*
 * Pod updates kube allows, tenant to host: the strategic merge patch that
 * brings host pod `have` in line with `want` (the translation of the current
 * tenant pod) for labels, annotations, spec.containers[*].image,
 * spec.initContainers[*].image (entries keyed by name), activeDeadlineSeconds
 * and tolerations (additions only: the host's own stay). `prev` (the
 * translation of the tenant pod before the change, or NULL) says which
 * labels and annotations the tenant removed: those are deleted on the host
 * (null); keys the host added are kept. All borrowed. New reference, or NULL
 * when nothing differs.
 */
json_t *syncer_pod_update_patch(const json_t *want, const json_t *have, const json_t *prev);
/*
 * The host claim for tenant PersistentVolumeClaim `pvc` (borrowed): the
 * contract's metadata (kind PersistentVolumeClaim; annotations the host's
 * volume controllers own are dropped) and spec accessModes, resources,
 * storageClassName, volumeMode, volumeAttributesClassName, selector; a
 * dataSource or dataSourceRef naming another claim of the same namespace
 * gets its translated name, any other is dropped; volumeName is not passed.
 * New reference or NULL.
 */
json_t *syncer_translate_pvc(const struct syncer_xlate *x, const json_t *pvc);
/* The status the tenant claim should have given host claim `host`
 * (borrowed): phase, accessModes, capacity, conditions, allocatedResources,
 * allocatedResourceStatuses, currentVolumeAttributesClassName and
 * modifyVolumeStatus of host's status. New reference. */
json_t *syncer_pvc_status_from_host(const json_t *host);
/*
 * Claim updates the host allows, tenant to host: the merge patch that brings
 * host claim `have` in line with `want` (the translation of the current
 * tenant claim) for labels and annotations (as syncer_pod_update_patch,
 * `prev` saying which the tenant removed), spec.resources.requests (an
 * expansion) and spec.volumeAttributesClassName. All borrowed. New
 * reference, or NULL when nothing differs.
 */
json_t *syncer_pvc_update_patch(const json_t *want, const json_t *have, const json_t *prev);
/* The strategic merge patch of a host pod's ephemeralcontainers
 * subresource that adds the ephemeral containers of `want` (the tenant
 * pod's translation) that `have` (the host pod) lacks, by name; NULL when
 * none is missing (existing ones cannot change). New reference. */
json_t *syncer_ephemeral_patch(const json_t *want, const json_t *have);
/* The status the tenant pod should have given host pod `host` (borrowed):
 * a new reference to a copy of host's status. */
json_t *syncer_status_from_host(const json_t *host);
/*
 * What the syncer keeps of host pod `hp` (borrowed) in its informer cache:
 * metadata name, namespace, uid, resourceVersion, labels, annotations and
 * deletion fields; spec nodeName, activeDeadlineSeconds, tolerations and
 * the containers' and init containers' names and images; status. Everything
 * the syncer reads of a host pod (ownership, status back, the update patch,
 * delete preconditions), without managedFields and the rest of the spec,
 * which were most of the syncer's memory per pod. The result shares values
 * with hp (never modify either): a new reference, NULL on ENOMEM.
 */
json_t *syncer_host_pod_view(const json_t *hp);
/*
 * True when host object `host` is exactly one of tenant's: the label
 * kubicle.dev/tenant is tenant, annotations name a tenant object (namespace,
 * name, uid; the kubicle.dev/namespace label, when set, agrees) and the host
 * object's name is that object's (syncer_host_name, or the legacy name; for
 * a token Secret, kind ServiceAccount, syncer_sa_secret_name). *ns, *name,
 * *uid (borrowed from host) get the annotations. The syncer updates,
 * adopts or deletes no host object for which this is false.
 */
bool syncer_host_owner(const json_t *host, const char *tenant, const char **ns, const char **name,
		       const char **uid);
/* syncer_host_owner and the tenant object is ns/name (ns "" for cluster
 * scope) of this uid (NULL: any). */
bool syncer_host_is(const json_t *host, const char *tenant, const char *ns, const char *name,
		    const char *uid);
/* The tenant Node for host node `node` (labels, capacity, allocatable,
 * conditions, nodeInfo, addresses). New reference or NULL. */
json_t *syncer_translate_node(const json_t *node, const char *tenant);

/* Writes obj as tenant object res ns/name: `old` (what the store had, or
 * NULL) gives it its uid and creationTimestamp, else they are new. Returns
 * store_update's or store_create's result (syncer.c). */
int syncer_store_put(store_t *st, const char *res, const char *ns, const char *name, json_t *obj,
		     const json_t *old);
/* An event on tenant object kind ns/obj (uid may be NULL), named
 * "<obj>.<suffix>": a repeat counts up the earlier one. component NULL:
 * kubicle-syncer. Written to the tenant store directly (syncer.c). */
void syncer_record_event(store_t *st, const char *ns, const char *kind, const char *obj,
			 const char *uid, const char *type, const char *reason, const char *msg,
			 const char *suffix, const char *component);

/* Host object `host` (borrowed) sits under the host name of tenant object
 * kind ns/name (uid may be NULL) and is not exactly its (syncer_host_is):
 * logged, and a Warning event HostNameConflict on the tenant object. The
 * object is not touched. (syncer.c) */
void syncer_conflict(store_t *st, const char *tenant, const char *kind, const char *ns,
		     const char *name, const char *uid, const json_t *host);
/* Reads host object `path` (a create of it answered 409) and reports it
 * with syncer_conflict when it is not exactly tenant object kind ns/name's. */
void syncer_check_conflict(kb_httpc_t *http, store_t *st, const char *path, const char *tenant,
			   const char *kind, const char *ns, const char *name, const char *uid);

/* translate.c's own helpers, for hostrefs.c: rename_ref (o[key], a tenant
 * object name of namespace ns, becomes its translated name, counted in refs
 * as kind; o, kind and refs may be NULL) and host_meta (the contract's
 * metadata for tenant metadata tmeta; new reference or NULL). */
void syncer_rename_ref(const struct syncer_xlate *x, json_t *o, const char *key, const char *kind,
		       const char *ns, json_t *refs);
json_t *syncer_host_meta(const struct syncer_xlate *x, const json_t *tmeta, const char *kind);

/* ---- what a pod names (hostrefs.c; the table is there and in
 * docs/hostrefs.md) --------------------------------------------------------------- */
/* ANN_KIND of the host Secret of a pod's projected service-account tokens:
 * its annotations name the tenant pod. */
#define SYNCER_POD_TOKEN_KIND "TokenRequest"
/*
 * Host pod volume v (modified) of tenant pod `pod` of namespace ns: a
 * generic ephemeral volume becomes the host copy of the claim
 * "<pod>-<volume>" the tenant's ephemeral-volume controller made (mounted
 * by translated name); the Secrets volume plugins name (csi, azureFile, cephfs,
 * cinder, flexVolume, iscsi, rbd, scaleIO, storageos) their translated
 * names, counted in refs; projected serviceAccountToken sources become items
 * of x->token_secret (dropped without one) and clusterTrustBundle sources
 * go.
 */
void syncer_volume_refs(const struct syncer_xlate *x, json_t *v, const char *pod, const char *ns,
			json_t *refs);
/* Removes from host pod spec `spec` what names host objects that no
 * translation can make the tenant's: volumes of the sources the tenant API
 * refuses (the table in hostrefs.c), spec.resourceClaims and the
 * securityContexts' windowsOptions.gmsaCredentialSpecName. A second line
 * of defence: the tenant API refuses them (proxy/api/hostrefs.c). */
void syncer_drop_host_refs(json_t *spec);
/*
 * The projected service-account tokens of tenant pod `pod` (borrowed): a
 * new array of {key, path, audience (absent: the API's), expirationSeconds}
 * in volume order, key "<volume>-<index of the source in the volume>",
 * the host Secret's key (unique: the index is what follows the last '-').
 * Empty when none.
 */
json_t *syncer_pod_tokens(const json_t *pod);
/* When a token of this lifetime is replaced, in seconds after it was
 * issued: as kube's kubelet, at 80 % of its life or once it is
 * SYNCER_TOKEN_MAX_AGE old, whichever comes first
 * (pkg/kubelet/token/token_manager.go, requiresRefresh). */
#define SYNCER_TOKEN_MAX_AGE (24L * 3600)
long syncer_token_refresh_after(long ttl_seconds);
/* The host Secret name of the projected tokens of tenant pod ns/name of
 * this uid: "<name>-token-" + 16 hex digits of
 * sha256("<ns>/pod:<name>/<uid>/<tenant>") (':' is in no object name, as
 * for syncer_sa_secret_name; the uid makes a pod of the same name another
 * Secret). buf needs SYNCER_NAME_MAX + 1 bytes. 0 or -EINVAL. */
int syncer_pod_token_name(const char *ns, const char *name, const char *uid, const char *tenant,
			  char *buf, size_t len);
/* The host Secret (Opaque) of tenant pod `pod`'s projected tokens: data
 * `tokens` ({key: JWT}, borrowed, base64-encoded here), the contract's
 * metadata naming the pod, kind SYNCER_POD_TOKEN_KIND. New reference or
 * NULL. */
json_t *syncer_pod_token_secret(const struct syncer_xlate *x, const json_t *pod,
				const json_t *tokens);
/* ---- gang scheduling (gang.c) ---------------------------------------------- */
/*
 * The gang of tenant pod `pod` (borrowed): its controller owners are read
 * from the tenant store up to the top one (Pod, Job, StatefulSet,
 * ReplicaSet, Deployment, JobSet, PyTorchJob, MPIJob, RayCluster,
 * LeaderWorkerSet; any other kind, or an owner missing or of another uid,
 * ends the walk with no gang) and syncer_gang_shape of the top one says
 * whether it is one. A new object {group: host name, name: tenant-side
 * name, ns, kind, owner, uid, labels (the owner's), min, total, and
 * subgroup, subGroups where the kind has them}, or NULL: no gang.
 */
json_t *syncer_gang_of(store_t *st, const json_t *pod, const char *tenant);
/*
 * Whether top owner `top` of kind `kind` makes pod `pod` (both borrowed)
 * part of a gang, per kind (gang.c says where each rule comes from): NULL
 * when not (a minimum of one), else a new {min, total (0: the number of
 * pods moves), suffix (one group of several for the owner: JobSet InOrder,
 * LeaderWorkerSet), subgroup (the pod's), subGroups [{name, minMember}]}.
 */
json_t *syncer_gang_shape(const char *kind, const json_t *top, const json_t *pod);
/* The API path ("/apis/<group>/<version>") of the group objects of profile
 * p, NULL when it has none (kueue, hami, none). */
const char *syncer_group_api(const struct syncer_profile *p);
/* The host group object of gang `gang` for the profile of x (a KAI or
 * Volcano PodGroup: minMember, queue, priorityClassName of host pod `hp`;
 * KAI subGroups and topologyConstraint, Volcano minResources and
 * networkTopology; topology from hp's annotations, there only where the
 * policy let them pass), with the
 * contract's labels and annotations (kind PodGroup, name the gang's
 * tenant-side name, uid its owner's). New reference; NULL when the profile
 * has no group objects. */
json_t *syncer_group_object(const struct syncer_xlate *x, const json_t *gang, const json_t *hp);
/* The GPUs (thousandths) gang's minimum takes together, each member taking
 * what host pod hp (borrowed) asks (whole nvidia.com/gpu). */
int64_t syncer_gang_gpu_milli(const json_t *gang, const json_t *hp);
/* The ResourceQuota of `quotas` (a borrowed array of them) that can never
 * hold gang's minimum of pods together: the lowest spec.hard.pods below it
 * among those that count every pod (no scopes), or NULL. Borrowed from
 * quotas. */
const json_t *syncer_gang_pods_quota(const json_t *gang, const json_t *quotas);
/* The GangExceedsQuota message for gang and that quota, `where` naming it
 * for the tenant ("the ResourceQuota default/compute"). 0 or
 * -ENAMETOOLONG. */
int syncer_gang_pods_message(const json_t *gang, const json_t *quota, const char *where, char *msg,
			     size_t len);
/* Puts host pod hp in gang's group: KAI pod-group-name,
 * kai.scheduler/skip-podgrouper and kai.scheduler/subgroup-name; Volcano
 * scheduling.k8s.io/group-name; Kueue the pod-group-name label and
 * pod-group-total-count annotation, only for a fixed count. */
void syncer_gang_keys(const struct syncer_xlate *x, const json_t *gang, json_t *hp);

struct syncer_groups;
/* A waiting pod's group is on the host: create tenant pod ns/name. */
typedef void (*syncer_group_ready_fn)(void *arg, const char *ns, const char *name);
/* Keeps the host group objects of x's profile, or under Kueue the count on
 * its groups' members (none, hami: *out NULL, and every call below does
 * nothing; want answers 1). x, http, stats borrowed. */
int syncer_groups_start(uv_loop_t *loop, kb_httpc_t *http, store_t *store,
			const struct syncer_xlate *x, const char *label_selector,
			syncer_group_ready_fn ready, void *arg, struct syncer_stats *stats,
			struct syncer_groups **out);
/* Before host_calls_drop of its client: nothing is called back after. */
void syncer_groups_stop(struct syncer_groups *g);
/* Host pod hn of tenant pod `pod` (translated: hp) is to be made in gang
 * `gang`: 1 when its group is on the host (make the pod now; it counts as
 * a member), 0 when the group is being made (ready() is called for the pod
 * then), a negative errno on error. */
int syncer_groups_want(struct syncer_groups *g, const json_t *gang, const json_t *pod,
		       const char *hn, const json_t *hp);
/* Host pod hn (hp, borrowed: the host's), found on the host in gang's
 * group, counts as a member; the group follows the gang's shape now. */
void syncer_groups_hold(struct syncer_groups *g, const json_t *gang, const json_t *hp,
			const char *hn);
/* A member of gang (host pod hp) changed (deleted: its owner may have
 * scaled down): its group, when known, follows the gang's shape now
 * (gang.c: Scaling). */
void syncer_groups_refresh(struct syncer_groups *g, const json_t *gang, const json_t *hp);
/* Host pod hn is gone: a group left with no member is deleted. */
void syncer_groups_release(struct syncer_groups *g, const char *hn);
/* Makes the groups of members that the host lacks, deletes ours that have
 * none (after a crash). */
void syncer_groups_resync(struct syncer_groups *g);

/* ---- the host's metrics API (metrics.c) ------------------------------------- */
/*
 * PodMetrics of tenant pods `pods` (borrowed array of Pods) from host
 * PodMetrics items `host` (borrowed array): for each tenant pod, in its
 * order, the host item named by its translated name and carrying the
 * tenant's label (or, for a pod adopted under its old name, the item of
 * that name with the tenant's and the namespace's labels) becomes {metadata: the tenant pod's name, namespace and
 * labels, the host's creationTimestamp; timestamp, window, containers as
 * the host has them}. Pods without a host item are left out. New array.
 */
json_t *syncer_pod_metrics(const json_t *host, const json_t *pods, const char *tenant);
/* NodeMetrics of tenant nodes `nodes` (borrowed array of Nodes; a tenant
 * node has its host node's name) from host NodeMetrics `host` (borrowed):
 * metadata name, the tenant node's labels, the host's creationTimestamp,
 * timestamp, window and usage. New array. */
json_t *syncer_node_metrics(const json_t *host, const json_t *nodes);
/* Whether an APIResourceList (borrowed) of metrics.k8s.io/v1beta1 names
 * both pods and nodes. */
bool syncer_metrics_discovered(const json_t *doc);
struct host_metrics;
struct metrics_call;
/* Starts watching the host's metrics discovery (read now, then at each
 * host_metrics_check); `changed(arg, available)` is called when the answer
 * changes. `http` is borrowed and outlives it. 0 or -ENOMEM. */
int host_metrics_start(kb_httpc_t *http, const char *tenant, const char *host_ns,
		       void (*changed)(void *arg, bool available), void *arg,
		       struct host_metrics **out);
/* Reads the host's discovery again (unless a read is in flight). */
void host_metrics_check(struct host_metrics *m);
/* A read for syncer_metrics_get; NULL on ENOMEM (no callback then).
 * host_name: pod ns/name's host pod when known (one adopted under its old
 * name), NULL: its translated name. */
struct metrics_call *host_metrics_get(struct host_metrics *m, bool pods, const char *ns,
				      const char *name, const char *host_name, const json_t *objs,
				      syncer_metrics_done_fn done, void *arg);
/* Cancels a read in flight: no callback. */
void host_metrics_cancel(struct metrics_call *c);
/* Answers the reads in flight -ESHUTDOWN, then frees m (NULL: nothing).
 * Before kb_httpc_close of its client. */
void host_metrics_stop(struct host_metrics *m);

/* ---- the host's PriorityClasses (classes.c) ---------------------------------- */
struct host_classes;
/* Keeps read-only copies of the host's PriorityClasses (but the system-
 * ones) in the tenant store, labelled kubicle.dev/host-class=true. */
int syncer_classes_start(uv_loop_t *loop, kb_httpc_t *http, store_t *store,
			 struct host_classes **out);
void syncer_classes_stop(struct host_classes *hc);
/* The tenant copy of host PriorityClass `host` (value, globalDefault,
 * preemptionPolicy, description), or NULL for a system- class. New
 * reference. */
json_t *syncer_tenant_class(const json_t *host);
/* Whether a host pod may name PriorityClass `name`: a host class or a
 * system- one (true for NULL or ""), not one only the tenant has. */
bool syncer_class_on_host(store_t *st, const char *name);
/* ---- mirrored kinds (mirror.c) ----------------------------------------------- */
/*
 * One host object per tenant object of a kind (every namespace): a store
 * watch on the tenant's objects drives creates, merge-patch updates and
 * deletes; an informer on the host's objects with the tenant's label brings
 * back what the host sets and finds orphans. A kind is a row of hooks; the
 * engine keeps the rest (mirror.c's DESIGN).
 */
/* What happens when the host deletes an object of ours. */
enum syncer_mirror_host_deleted {
	/* the host decided: the tenant object goes too when the host was seen
	 * to have it; one never seen is created (a restart, a refusal) */
	SYNCER_MIRROR_TENANT_FOLLOWS,
	/* the tenant owns it: the host object is made again */
	SYNCER_MIRROR_HOST_RECREATED,
};
struct syncer_mirror_kind {
	const char *res;            /* tenant store key: "/services" */
	const char *kind;           /* "Service": ANN_KIND of its host objects, and events */
	const char *plural;         /* host collection <api>/namespaces/<ns>/<plural> */
	const char *api;            /* "/apis/<group>/<version>"; NULL: "/api/v1" */
	const char *noun;           /* in logs and event texts: "service" */
	const char *create_refused; /* log "host refused <create_refused> <host name>" */
	enum syncer_mirror_host_deleted host_deleted;
	bool update_refusal_event; /* a refused update also gets a FailedUpdate event */
	/* Which tenant objects have a host object; NULL: all. */
	bool (*synced)(const json_t *obj);
	/* The host object for tenant object obj; new reference or NULL. */
	json_t *(*translate)(const struct syncer_xlate *x, const json_t *obj);
	/* The merge patch from host object have to want (translations; prev that
	 * of the tenant object before the change, or NULL), or NULL when nothing
	 * differs. All borrowed; new reference. */
	json_t *(*update_patch)(const json_t *want, const json_t *have, const json_t *prev);
	/* Optional: true when tenant objects a and b push the same to the host
	 * (an update then sends nothing); NULL: every update is compared. */
	bool (*same_pushable)(const json_t *a, const json_t *b);
	/* What to write into the tenant store for host object host: a new
	 * reference (tenant, borrowed, may be modified and returned), or NULL
	 * when nothing differs. */
	json_t *(*copy_back)(const json_t *host, json_t *tenant);
	/* Optional: keeps in `entry` (borrowed) what tenant watch event obj
	 * shows, for host_known; called for every event but DELETED. */
	void (*remember)(json_t *entry, const json_t *obj);
	/* Optional: true when host event host (of entry's uid, not being
	 * deleted) changes nothing in the tenant object as remembered. */
	bool (*host_known)(const json_t *host, const json_t *entry);
	/* The stats counter of tracked tenant objects. */
	size_t *(*tracked)(struct syncer_stats *st);
};
struct syncer_mirror;
struct syncer_mirror_opts {
	uv_loop_t *loop;
	store_t *store;               /* borrowed, outlives the syncer_mirror */
	kb_httpc_t *http;             /* borrowed, likewise */
	const struct syncer_xlate *x; /* borrowed, likewise */
	const char *label_selector;   /* the tenant's label, URL-encoded; copied */
	struct syncer_stats *stats;   /* borrowed: counters updated */
};
/* Starts mirroring kind k (static, borrowed for m's life). 0 or a negative
 * errno (the store watch or the informer could not start). Loop thread. */
int syncer_mirror_start(const struct syncer_mirror_kind *k, const struct syncer_mirror_opts *o,
			struct syncer_mirror **out);
/* A full comparison of both sides (the syncer's periodic resync); nothing
 * until the host's objects were listed once. m may be NULL. */
void syncer_mirror_resync(struct syncer_mirror *m);
/* Host object hn as last seen (borrowed, valid until the next host event),
 * or NULL when the host has no such object of ours (or m is NULL). */
json_t *syncer_mirror_host(struct syncer_mirror *m, const char *hn);
/* Every host object of ours as last seen: host name -> object (borrowed,
 * valid until the next host event), or NULL when m is NULL. */
json_t *syncer_mirror_hosts(struct syncer_mirror *m);
/* hn (SYNCER_NAME_MAX + 1 bytes) gets tenant object obj's host name: its
 * translated name, or the legacy one its host object keeps (adopted by
 * annotation), "" when it has none (or m is NULL). */
void syncer_mirror_name(struct syncer_mirror *m, const json_t *obj, char *hn);
/* The host object of tenant object obj (borrowed) when it is of obj's uid,
 * as syncer_mirror_host, else NULL. */
json_t *syncer_mirror_host_of(struct syncer_mirror *m, const json_t *obj);
/* A count that changes at every tenant or host event of m's kind and at
 * every relist of its host objects: what is derived from both sides (a
 * Service's host allocation) is unchanged while it is. 0 when m is NULL. */
unsigned long syncer_mirror_gen(const struct syncer_mirror *m);
/* Stops the watches and frees m (NULL: nothing); its host calls in flight
 * must be dropped (host_calls_drop) before the loop runs again. */
void syncer_mirror_stop(struct syncer_mirror *m);

/* pv.c: the tenant's PersistentVolumes for the claims the host bound. */
struct syncer_pv;
int syncer_pv_start(store_t *st, struct syncer_pv **out);
void syncer_pv_stop(struct syncer_pv *p);

/* ---- PersistentVolumeClaims (pvc.c) ------------------------------------------ */
/* Every tenant claim; the host's status, bound volume and default class come
 * back; a claim the host deletes is deleted in the tenant. */
extern const struct syncer_mirror_kind syncer_pvc_kind;

/* ---- NetworkPolicies (netpol.c) --------------------------------------------- */
/* Every tenant NetworkPolicy, translated (netpol.c's DESIGN); nothing comes
 * back. */
extern const struct syncer_mirror_kind syncer_netpol_kind;
/* The host NetworkPolicy for tenant policy `np` (borrowed), with x's
 * namespaces and allowed ipBlocks. New reference or NULL. */
json_t *syncer_translate_netpol(const struct syncer_xlate *x, const json_t *np);
/* The merge patch from host policy `have` to `want`: metadata as
 * syncer_meta_patch, spec key by key (removed keys null). New reference or
 * NULL when nothing differs. */
json_t *syncer_netpol_update_patch(const json_t *want, const json_t *have, const json_t *prev);
/* The ipBlocks (array, new reference) of the egress rules of the
 * platform's policy kubicle-TENANT-egress (borrowed, may be NULL); empty
 * unless it carries tenant's label. */
json_t *syncer_netpol_allowed(const json_t *egress_policy, const char *tenant);
/* Whether tenant pod `pod` is isolated for ingress and for egress by one of
 * the tenant NetworkPolicies `policies` (an array, borrowed): one of its
 * namespace whose podSelector selects it and whose policyTypes (as kube
 * defaults them) name that direction. */
void syncer_netpol_isolation(const json_t *policies, const json_t *pod, bool *ingress,
			     bool *egress);
/* The informer's copy of host object hn whoever owns it (borrowed, valid
 * until the next host event), or NULL. */
json_t *syncer_mirror_host_any(struct syncer_mirror *m, const char *hn);

/* ---- Services (service.c) --------------------------------------------------- */
/*
 * The host Service for tenant Service `svc` (borrowed): the contract's
 * metadata (kind Service) and spec type, ports (name, protocol, port,
 * targetPort, appProtocol; nodePort when the type has node ports and the
 * tenant Service has one), sessionAffinity(+Config), publishNotReadyAddresses,
 * ipFamilyPolicy, ipFamilies, internalTrafficPolicy, externalTrafficPolicy,
 * loadBalancerClass, loadBalancerSourceRanges, allocateLoadBalancerNodePorts,
 * externalName, trafficDistribution, healthCheckNodePort (LoadBalancer).
 * clusterIP only when "None" (headless; any other is the host's to
 * allocate); externalIPs never (a tenant may not claim host traffic). The
 * selector, when the tenant Service has a non-empty one, is the tenant's
 * plus kubicle.dev/tenant and kubicle.dev/namespace, so it selects the host
 * pods of that tenant namespace only. New reference or NULL.
 */
json_t *syncer_translate_service(const struct syncer_xlate *x, const json_t *svc);
/* Tenant Service `tsvc` with what the host allocated for host Service `hsvc`
 * (both borrowed): spec.clusterIP and clusterIPs, the ports' nodePort (by
 * port and protocol), healthCheckNodePort, status.loadBalancer. A new
 * reference, or NULL when that changes nothing (or ENOMEM). */
json_t *syncer_service_back(const json_t *tsvc, const json_t *hsvc);
/*
 * Service updates, tenant to host: the merge patch that brings host Service
 * `have` in line with `want` (the translation of the current tenant
 * Service): labels and annotations (as syncer_pod_update_patch, `prev`
 * saying which the tenant removed), the copied spec fields (one the tenant
 * leaves unset keeps the host's default, but loadBalancerSourceRanges and
 * externalName, which are removed), ports (a port without nodePort keeps
 * the host's), selector. All borrowed. New reference, or NULL when nothing
 * differs.
 */
json_t *syncer_service_update_patch(const json_t *want, const json_t *have, const json_t *prev);

/* Every tenant Service but default/kubernetes; the host's cluster IPs, node
 * ports and load balancer status come back; a host Service deleted is made
 * again. */
extern const struct syncer_mirror_kind syncer_service_kind;
/* Whether tenant Service svc (borrowed) has its host Service (svcs: the
 * mirror of syncer_service_kind, may be NULL), with the same cluster IP
 * (written back): an address that works on the host. */
bool syncer_svcs_on_host(struct syncer_mirror *svcs, const json_t *svc);

/* ---- host client (host.c) --------------------------------------------------- */
/*
 * Watch event line s (n bytes, modified in place) without its object's
 * metadata.managedFields: nearly half of a host pod event, never read by the
 * syncer, and the most expensive part to decode (one JSON object per field).
 * Returns the new length; n (nothing changed) when there is none or the line
 * is not the JSON object it expects (the decoder then reports it).
 */
size_t syncer_strip_managed_fields(char *s, size_t n);

struct host;
typedef void (*host_done_cb)(int err, long status, json_t *body /* borrowed, may be NULL */,
			     void *arg);
/* A JSON call on the host; body (borrowed, may be NULL) is sent as JSON.
 * The callback gets the parsed answer for GETs and for errors (status >=
 * 300); a write's 2xx answer is not parsed (body NULL). */
int host_call(kb_httpc_t *c, const char *method, const char *path, const json_t *body,
	      host_done_cb cb, void *arg);
/* Frees the calls in flight on `client` without calling back, before
 * kb_httpc_close (which cancels them silently). */
void host_calls_drop(kb_httpc_t *client);
/* The same with the body's content type (e.g. a strategic merge patch). */
int host_call_ct(kb_httpc_t *c, const char *method, const char *path, const char *ctype,
		 const json_t *body, host_done_cb cb, void *arg);

/* A list+watch loop on a host collection: lists, reports each item, then
 * watches from the list's resourceVersion, resuming after errors from the
 * last seen version and relisting on 410 Gone, with jittered backoff. */
struct host_informer;
typedef void (*host_event_cb)(const char *type /* ADDED MODIFIED DELETED */,
			      json_t *obj /* borrowed */, void *arg);
/* After each complete list: `items` (borrowed array) is the whole set. */
typedef void (*host_synced_cb)(json_t *items, void *arg);
/* Connection state changes: up true once a list succeeded, false on errors. */
typedef void (*host_state_cb)(bool up, void *arg);
struct host_informer_opts {
	const char *path;           /* "/api/v1/namespaces/ns/pods" */
	const char *label_selector; /* or NULL */
	/* What the cache keeps of each object (a new reference), NULL: the
	 * whole object. */
	json_t *(*cache_view)(const json_t *obj);
	bool no_cache; /* keep no cache (host_informer_cache stays empty) */
	host_event_cb on_event;
	host_synced_cb on_synced;
	host_state_cb on_state;
	void *arg;
};
int host_informer_start(uv_loop_t *loop, kb_httpc_t *c, const struct host_informer_opts *o,
			struct host_informer **out);
/* The last known objects, name -> object (borrowed; valid until the next
 * event or list). */
json_t *host_informer_cache(struct host_informer *in);
/* Forces a relist (e.g. after a tenant-side restart). */
void host_informer_relist(struct host_informer *in);
void host_informer_stop(struct host_informer *in);
/* Whether the informer is listed and watching. */
bool host_informer_up(const struct host_informer *in);
/* How often it listed or watched again after a failure or a 410 (metrics). */
size_t host_informer_restarts(const struct host_informer *in);

/* ---- the GPU allocation ledger (ledger.c) ----------------------------------- */
/* What a host node offers, from its labels (NVIDIA GPU feature discovery's
 * nvidia.com/gpu.product, .memory (MiB), .count, .replicas) and its
 * allocatable nvidia.com/gpu (over the replicas) or MIG slices. Strings
 * borrowed from the node; node may be NULL (all unknown). */
struct syncer_gpu_node {
	const char *model; /* "" unknown */
	double mem_mib;    /* 0 unknown */
	int replicas;      /* time-slicing replicas, 1 without */
	int slices;        /* MIG compute slices of a whole GPU of the model */
	double gpus;       /* physical GPUs */
};
void syncer_gpu_node_info(const json_t *node, struct syncer_gpu_node *out);
/* What host pod hp holds on node n (share rules in ledger.c and
 * docs/finops.md). 0, or -ENOENT when it holds no GPU. */
struct syncer_share {
	double gpus;
	const char *sharing; /* static: "whole" "mig" "fraction" "hami" "timeslice" */
	char detail[200];
};
int syncer_pod_share(const json_t *hp, const struct syncer_gpu_node *n, struct syncer_share *out);
/* When hp held it, from host timestamps (`deleted`: its DELETED event came
 * at `now`). end 0: still held. -ENOENT when it was never bound. */
struct syncer_interval {
	int64_t start, end;
	const char *end_kind; /* static, NULL while open */
};
int syncer_pod_interval(const json_t *hp, bool deleted, int64_t now, struct syncer_interval *out);

#define SYNCER_LEDGER_RETENTION (400L * 86400) /* default: 400 days */
struct syncer_ledger;
struct syncer_ledger_opts {
	const char *tenant, *queue;
	long retention_s;        /* rows that ended longer ago are dropped; 0: default */
	const char *prices_file; /* GPUUsage costs (syncer_opts'); NULL: none */
};
/* Opens the ledger in st and, with http, watches the host's nodes. */
int syncer_ledger_start(uv_loop_t *loop, kb_httpc_t *http, store_t *st,
			const struct syncer_ledger_opts *o, struct syncer_ledger **out);
/* A host pod event (type ADDED MODIFIED DELETED; hp borrowed, whole). */
void syncer_ledger_pod(struct syncer_ledger *l, const char *type, const json_t *hp);
/* A complete list of our host pods (borrowed): rows of pods not in it close. */
void syncer_ledger_pods_listed(struct syncer_ledger *l, const json_t *items);
/* Periodic: retention. */
void syncer_ledger_tick(struct syncer_ledger *l);
/* The host view is live now (store_ledger_set_seen). */
void syncer_ledger_seen(struct syncer_ledger *l);
/* The kubicle_gpu_allocated metrics. */
void syncer_ledger_prom(struct syncer_ledger *l, struct kb_buf *b);
size_t syncer_ledger_puts(const struct syncer_ledger *l);
/* Stops the node informer (before kb_httpc_close) and frees l (NULL ok). */
void syncer_ledger_stop(struct syncer_ledger *l);

#endif
