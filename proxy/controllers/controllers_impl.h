/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cross-file internals of the controllers: the shared state (queue, delayed
 * keys, the garbage collector's ownership index), a small string map, and
 * helpers on owner references, pods and conditions.
 * Threading: loop thread only.
 */
#ifndef KB_CONTROLLERS_IMPL_H
#define KB_CONTROLLERS_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

#include "proxy/controllers/controllers.h"
#include "lib/pki.h"

#include "proxy/controllers/kmap.h"

/* ---- shared state ------------------------------------------------------ */
struct ctrl {
	uv_loop_t *loop;
	store_t *st;
	proxy_t *px;
	store_watch_t *watch;
	uv_idle_t idle;
	uv_timer_t timer;
	char **q; /* FIFO of queued keys (owned) */
	size_t qhead, qlen, qcap;
	struct kmap *queued;   /* key -> NULL: in q */
	struct kmap *delayed;  /* key -> uint64_t* due (ms, kb_now_ms) */
	struct kmap *failures; /* key -> unsigned*: failed syncs in a row */
	struct kmap *refusals; /* res\tns\tname -> unsigned*: writes of it refused */
	struct kmap *objs;     /* uid -> struct gc_obj* */
	struct kmap *deps;     /* owner uid -> struct kmap* of dependent uids */
	bool idle_on;
	int open_handles;
	bool stopping;
	/* events.c */
	struct kmap *events;    /* uid|type|reason|message -> event name */
	struct kmap *lists;     /* res\tns -> json_t* array: ctrl_list_kept */
	uint64_t last_event_ns; /* the last event name's time */
	long event_ttl;         /* seconds; 0: one hour */
	uint64_t last_sweep_ms;
	/* hpa.c: ns/name -> struct hpa_mem (recommendations, reads in flight) */
	struct kmap *hpas;
	long hpa_sync_s; /* seconds; 0: SYNC_S */
	/* csr.c: the tenant's CA signing CertificateSigningRequests, or NULL */
	kb_pki_ca_t *ca;
};

/* Queue kinds: "rs", "deploy", "job", "cj", "sts", "ep", "eps" (name = the
 * service's), "gc" (name = uid), "adopt",
 * "jobpods" (name unused: the orphan pods of a namespace), "csr" (ns ""),
 * "vapstatus" (ns "": a ValidatingAdmissionPolicy), "hpa", "pdb", "pdbpod" (a
 * pod), "nsdefaults" (ns: the namespace; name unused), "fsstatus" (ns "": a
 * FlowSchema), "ephemeral" (a pod). */
void ctrl_enqueue(struct ctrl *c, const char *kind, const char *ns, const char *name);
void ctrl_enqueue_after(struct ctrl *c, const char *kind, const char *ns, const char *name,
			double seconds);

/* Store reads: new references or NULL. res is a store key ("apps/replicasets").
 * ctrl_pods_selected: the pods of ns whose labels sel matches (new array). */
struct sel_label;
json_t *ctrl_pods_selected(struct ctrl *c, const char *ns, const struct sel_label *sel);
json_t *ctrl_list(struct ctrl *c, const char *res, const char *ns);
/* Every object of `res` as {"metadata": ...} only (the start's resync: the
 * ownership index and the queues need nothing else), parsed from the
 * stored text's metadata alone; an object whose text is not as the store
 * writes it is parsed whole. A new array, empty on error. */
json_t *ctrl_list_meta(struct ctrl *c, const char *res);
/* ctrl_list, kept per namespace for the kinds a pod event lists (pod
 * controllers, services, budgets) until one of them changes there (new
 * reference: read it, do not change it). */
json_t *ctrl_list_kept(struct ctrl *c, const char *res, const char *ns);
json_t *ctrl_get(struct ctrl *c, const char *res, const char *ns, const char *name);

const char *ctrl_name(const json_t *obj); /* metadata.name, borrowed */
const char *ctrl_ns(const json_t *obj);   /* metadata.namespace or "" */
const char *ctrl_uid(const json_t *obj);
json_t *ctrl_path(const json_t *obj, const char *dotted); /* borrowed or NULL */

/* ---- owner references -------------------------------------------------- */
/* The ownerReference with controller=true, borrowed, or NULL. */
json_t *ctrl_controller_ref(const json_t *obj);
/* A controller ownerReference to owner (borrowed): new reference. */
json_t *ctrl_new_owner_ref(const json_t *owner, bool block);
/* Lists the pods of namespace ns that owner controls, adopting orphans that
 * match selector (borrowed LabelSelector) and releasing controlled pods
 * that no longer match, as kube's ControllerRefManager. New array ref. */
json_t *ctrl_claim(struct ctrl *c, const char *res, const char *group, const char *version,
		   const char *plural, const json_t *owner, const json_t *selector,
		   const char *manager);

/* ---- pods ---------------------------------------------------------------- */
bool ctrl_pod_active(const json_t *pod); /* not terminal, not being deleted */
bool ctrl_pod_ready(const json_t *pod);
bool ctrl_pod_available(const json_t *pod, int64_t min_ready, time_t now, double *wait);
const char *ctrl_pod_phase(const json_t *pod);
/* A pod from a template (borrowed) with generateName or name, namespace,
 * and the owner's controller reference. New reference. */
json_t *ctrl_pod_from_template(const json_t *tmpl, const json_t *owner, const char *name,
			       const char *generate_name);

/* ---- conditions and time ------------------------------------------------- */
/* Sets condition `type` in status.conditions (status borrowed), keeping
 * lastTransitionTime when the status does not change; update_time adds
 * lastUpdateTime (Deployments). Returns the condition (borrowed). */
json_t *ctrl_set_condition(json_t *status, const char *type, const char *st, const char *reason,
			   const char *message, bool update_time);
json_t *ctrl_get_condition(const json_t *status, const char *type);
void ctrl_remove_condition(json_t *status, const char *type);
time_t ctrl_time(const char *rfc3339); /* 0 when absent/bad */
void ctrl_now_str(char *buf, size_t len);
int64_t ctrl_int(const json_t *obj, const char *path, int64_t dflt);
/* Writes status when it differs from the stored one. */
int ctrl_write_status(struct ctrl *c, const char *group, const char *version, const char *plural,
		      json_t *obj, json_t *status, const char *manager);

/* ---- events (events.c) ---------------------------------------------------- */
/* Records an event about obj (borrowed; its kind and apiVersion given, as
 * stored objects lack them), as kube's recorder: type "Normal"/"Warning",
 * component the controller. Failures are logged, never returned. */
void ctrl_event(struct ctrl *c, const json_t *obj, const char *api_version, const char *kind,
		const char *type, const char *reason, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
/* Deletes the events last written more than the event TTL ago; does its
 * work once a minute, or twice a TTL when shorter (called every second). */
void ctrl_events_expire(struct ctrl *c);
/* The end of a controller's create that waited for admission webhooks
 * (proxy_object_create_admitted, arg: the struct ctrl): the owner (the
 * ReplicaSet, Job or StatefulSet of a pod, the Deployment of a ReplicaSet,
 * the CronJob of a Job) gets kube's event and syncs again (after a refusal,
 * 10 s later). */
void ctrl_admitted(void *arg, int rc, const json_t *obj, const char *message);

/* ---- controllers ---------------------------------------------------------- */
int ctrl_rs_sync(struct ctrl *c, const char *ns, const char *name);
int ctrl_rc_sync(struct ctrl *c, const char *ns, const char *name); /* ReplicationControllers */
int ctrl_deploy_sync(struct ctrl *c, const char *ns, const char *name);
int ctrl_job_sync(struct ctrl *c, const char *ns, const char *name);
int ctrl_cj_sync(struct ctrl *c, const char *ns, const char *name);
int ctrl_sts_sync(struct ctrl *c, const char *ns, const char *name);
/* Endpoints ("ep") and EndpointSlices ("eps") of service ns/name. */
int ctrl_ep_sync(struct ctrl *c, const char *ns, const char *name);
int ctrl_eps_sync(struct ctrl *c, const char *ns, const char *name);
/* endpoints.c helpers shared with endpointslice.c (objects borrowed). */
bool ctrl_ep_pod_ready(const json_t *pod); /* condition Ready=True */
/* ShouldPodBeInEndpoints: not terminal, has an IP, not being deleted
 * unless include_terminating. */
bool ctrl_ep_pod_included(const json_t *pod, bool include_terminating);
bool ctrl_ep_is_v6(const char *ip);
const char *ctrl_ep_pod_ip(const json_t *pod, bool v6); /* borrowed or NULL */
json_t *ctrl_ep_target_ref(const json_t *pod);          /* new reference */
bool ctrl_ep_selects(const json_t *svc, const json_t *pod);
/* A service with a selector, not ExternalName: its endpoints are ours. */
bool ctrl_ep_managed(const json_t *svc);
json_t *ctrl_ep_selected_pods(struct ctrl *c, const json_t *svc); /* new array */
/* endpoints.kubernetes.io/last-change-trigger-time: the latest of the
 * service's creation and its pods' Ready transitions (RFC 3339). */
void ctrl_ep_trigger_time(const json_t *svc, const json_t *pods, char *buf, size_t len);
/* Removes the Job tracking finalizer from the orphan pods of namespace ns. */
int ctrl_job_release_orphans(struct ctrl *c, const char *ns);

/* disruption.c: a PodDisruptionBudget's status ("pdb"), a pod's warning and stale
 * DisruptionTarget condition ("pdbpod"), and the budgets (before or
 * after) and stale condition a pod event concerns. */
#define PDB_RES "policy/poddisruptionbudgets"
int ctrl_pdb_sync(struct ctrl *c, const char *ns, const char *name);
int ctrl_pdb_pod_sync(struct ctrl *c, const char *ns, const char *name);
void ctrl_pdb_pod_event(struct ctrl *c, const struct store_event *ev);

/* csr.c: the signer and cleaner of CertificateSigningRequest `name`. */
/* The store key of CertificateSigningRequests (queue kind "csr"). */
#define CSR_RES "certificates.k8s.io/certificatesigningrequests"
#define VAP_RES "admissionregistration.k8s.io/validatingadmissionpolicies"
/* vap_status.c: a policy's status.observedGeneration and typeChecking. */
int ctrl_vap_status_sync(struct ctrl *c, const char *ns, const char *name);
int ctrl_csr_sync(struct ctrl *c, const char *ns, const char *name);
/* nsdefaults.c: a namespace's default ServiceAccount and kube-root-ca.crt,
 * made again when deleted (ev: the store events that may need it). */
int ctrl_nsdefaults_sync(struct ctrl *c, const char *ns, const char *name);
struct store_event;
void ctrl_nsdefaults_event(struct ctrl *c, const struct store_event *ev);
/* ephemeral.c: the claims of a pod's generic ephemeral volumes (queue kind
 * "ephemeral", the pod's ns/name), and the pod and claim events that need
 * them. */
int ctrl_ephemeral_sync(struct ctrl *c, const char *ns, const char *name);
void ctrl_ephemeral_event(struct ctrl *c, const struct store_event *ev);
/* flowschema.c: a FlowSchema's Dangling condition. */
int ctrl_fsstatus_sync(struct ctrl *c, const char *ns, const char *name);
void ctrl_fsstatus_event(struct ctrl *c, const struct store_event *ev);

/* hpa.c: HorizontalPodAutoscalers (queue kind "hpa"). ctrl_hpa_event takes
 * their store events (a new one or a changed spec syncs now; otherwise
 * every SYNC period, as kube's queue); ctrl_hpa_free cancels the metrics reads
 * in flight. */
#define HPA_RES "autoscaling/horizontalpodautoscalers"
int ctrl_hpa_init(struct ctrl *c);
void ctrl_hpa_free(struct ctrl *c);
int ctrl_hpa_sync(struct ctrl *c, const char *ns, const char *name);
void ctrl_hpa_event(struct ctrl *c, const struct store_event *ev);

/* gc.c: the ownership index fed by every store event, and its sync. */
void ctrl_gc_index(struct ctrl *c, const char *res, const struct store_event *ev);
void ctrl_gc_index_obj(struct ctrl *c, const char *res, const json_t *obj);
void ctrl_gc_resync(struct ctrl *c);
int ctrl_gc_sync(struct ctrl *c, const char *uid);
int ctrl_gc_init(struct ctrl *c);
void ctrl_gc_free(struct ctrl *c);

#endif
