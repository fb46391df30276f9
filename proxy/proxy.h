/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API front of one tenant: serves the Kubernetes API over HTTPS from the
 * store, with kube-apiserver's semantics (discovery, OpenAPI, CRUD, watch,
 * patches, Table output, namespaces lifecycle).
 *
 * Threading: loop thread only.
 */
#ifndef KB_PROXY_H
#define KB_PROXY_H

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

#include "lib/http.h"
#include "store/store.h"

typedef struct proxy proxy_t;
typedef struct ssl_ctx_st SSL_CTX;

struct proxy_opts {
	const char *listen;         /* "127.0.0.1:6443" */
	SSL_CTX *tls;               /* borrowed, outlives the proxy */
	store_t *store;             /* borrowed, outlives the proxy */
	const char *advertise_host; /* address written into the kubernetes Service endpoints */
	const char *data_dir;       /* DIR: audit.log goes there; NULL: no audit log */
};

/* Bootstraps the tenant's built-in objects if missing, then listens.
 * *port_out gets the bound port. Returns 0 or a negative errno. */
int proxy_start(uv_loop_t *loop, const struct proxy_opts *opts, proxy_t **out, int *port_out);
/* Bearer tokens of a tenant (for the CLI, which may run beside a server on
 * the same store: the server reads them per request). Only the token's
 * SHA-256 is kept. ttl_seconds 0: no expiry. Returns 0 or a negative errno. */
int proxy_token_add(store_t *st, const char *token, const char *user, const char *const *groups,
		    size_t ngroups, long ttl_seconds);
/* Revokes one token, or (token NULL) every token of `user`. Returns the
 * number revoked (0 or 1 for one token), -ENOENT for an unknown token, or a
 * negative errno. */
int proxy_token_revoke(store_t *st, const char *token, const char *user);
/* Signs a service-account token (JWT, audience the API server) for service
 * account ns/sa, bound to its uid and valid ttl_seconds (600..172800), as
 * the serviceaccounts/token subresource would. *jwt gets a malloc'ed string
 * the caller frees. Returns 0, -ENOENT (no such account, or being deleted),
 * -EINVAL or -EIO. Loop thread only. */
int proxy_issue_sa_token(proxy_t *px, const char *ns, const char *sa, long ttl_seconds, char **jwt);
/* Ends every watch, stops listening; the loop can then finish. */
void proxy_stop(proxy_t *px);

/* Pods of this tenant run on a host cluster (the syncer): pod specs that
 * would reach into the host (nodeName, hostNetwork, hostPID, hostIPC, host
 * ports, hostPath volumes, privileged containers) are refused with 422, and
 * GET pods/log is answered by `pod_log(arg, req, ns, name, raw_query)` and
 * the upgrade requests of pods/exec, pods/attach and pods/portforward, once
 * authorized and checked against the pod (its container, its node), by
 * `pod_connect(arg, req, ns, name, sub, raw_query)`; both must answer `req`
 * (borrowed until answered). `arg` is borrowed and must outlive the proxy
 * (or be unset with pod_log NULL first). */
typedef void (*proxy_pod_log_fn)(void *arg, kb_http_req_t *req, const char *ns, const char *name,
				 const char *query);
typedef void (*proxy_pod_connect_fn)(void *arg, kb_http_req_t *req, const char *ns,
				     const char *name, const char *sub, const char *query);
void proxy_set_host(proxy_t *px, proxy_pod_log_fn pod_log, proxy_pod_connect_fn pod_connect,
		    void *arg);
/* The same passthrough of pods/log and of the connect subresources, for a
 * server that is itself where pods run (the tests' host stand-in,
 * tests/host/): the hooks answer as above, but no pod field is refused (it
 * is the host, whose pods come from syncers and from tests). Unset with
 * pod_log NULL. Without either hook, pods/log answers 200 with an empty log
 * (kube's answer for a pod with no node) and the connect subresources 400:
 * this server runs no pods. Loop thread only. */
void proxy_set_pod_streams(proxy_t *px, proxy_pod_log_fn pod_log, proxy_pod_connect_fn pod_connect,
			   void *arg);

/* GET /metrics (proxy/prom.c) appends what fn writes (Prometheus text,
 * lib/prom.h) to kube-apiserver's metrics: the syncer's, for instance.
 * `arg` is borrowed and must outlive the proxy (or be unset with fn NULL
 * first). Loop thread only. */
struct kb_buf;
typedef void (*proxy_prom_fn)(void *arg, struct kb_buf *out);
void proxy_set_prom(proxy_t *px, proxy_prom_fn fn, void *arg);

/*
 * The resource metrics API (metrics.k8s.io/v1beta1: PodMetrics `pods`,
 * NodeMetrics `nodes`, get and list; proxy/metrics.c) answered from a host's
 * metrics API. Once authorized, a read lists the tenant's pods (or nodes)
 * it may show and calls `fetch(arg, plural, ns, name, objs, done,
 * done_arg)`, which returns a handle and answers later through `done` (never
 * from inside fetch), or returns NULL (503); `cancel(handle)` drops it when
 * the client goes away. `arg` is borrowed and must outlive the proxy.
 * The API is served (discovery, routing) only while proxy_metrics_available
 * says so: kubectl top then works as against a cluster with metrics-server,
 * and says "Metrics API not available" otherwise.
 */
typedef void (*proxy_metrics_done_fn)(void *done_arg, int err, long status, json_t *items,
				      const char *message);
typedef void *(*proxy_metrics_fetch_fn)(void *arg, const char *plural, const char *ns,
					const char *name, const json_t *objs,
					proxy_metrics_done_fn done, void *done_arg);
typedef void (*proxy_metrics_cancel_fn)(void *handle);
void proxy_set_metrics(proxy_t *px, proxy_metrics_fetch_fn fetch, proxy_metrics_cancel_fn cancel,
		       void *arg);
/* Serves the metrics API (true) or not (false). The first time it is served,
 * the ClusterRole system:aggregated-metrics-reader that metrics-server's
 * manifest installs is created (get, list, watch on metrics.k8s.io pods and
 * nodes, aggregated into view, edit and admin) unless it exists. */
void proxy_metrics_available(proxy_t *px, bool on);

/* Enforces a tenant policy (policies/policies.h; borrowed, must outlive the
 * proxy or be unset) on pods and pod templates, and keeps the ResourceQuota
 * kube-system/kubicle-policy showing its quota and usage. NULL: no policy
 * (everything allowed). Call with NULL before proxy_stop in every case (with
 * or without a policy): admission's timer starts at the first write.
 * Implemented in proxy/admission.c. */
struct policy;
void proxy_set_policy(proxy_t *px, const struct policy *policy);

/* ---- Internal API (proxy/api_internal.c) -----------------------------------
 * Writes made by in-process controllers. They go through the same server
 * metadata, defaults, validation and managed-fields tracking as API requests
 * (under field manager `manager`, e.g. "deployment-controller"), then the
 * store, so watchers see them like any other change. Resources are named by
 * group ("" for core), version and plural. Loop thread only.
 * Errors: -ENOENT (unknown resource or object), -EEXIST, -ESTALE (the
 * resourceVersion in obj differs from the stored one), -EINVAL (invalid:
 * the causes are logged), -EPERM (namespace missing or terminating), -EIO.
 * json_t *obj is borrowed (and modified in place); *out (may be NULL) gets a
 * new reference to the object as stored.
 */

/* A namespace's kube-root-ca.crt ConfigMap as kube's root-ca-cert-publisher
 * writes it: ca (PEM) under "ca.crt" and kube's description annotation. New
 * reference. */
json_t *proxy_root_ca_configmap(const char *ns, const char *ca);

/* Creates obj; metadata.generateName gives a name with a 5-char suffix. */
int proxy_object_create(proxy_t *px, const char *group, const char *version, const char *plural,
			json_t *obj, const char *manager, json_t **out);
/*
 * The same for a controller's object that the tenant's admission webhooks
 * must see, as kube's controllers' writes do (pods of ReplicaSets, Jobs and
 * StatefulSets): when a webhook matches, returns -EINPROGRESS and the create
 * completes later (or fails); `done` (may be NULL) is then called with rc, the
 * object (as stored; on failure as the webhooks left it; borrowed) and, on
 * failure, kube's message. A create of a
 * name that is already waiting returns -EINPROGRESS at once. Without
 * matching webhooks it is proxy_object_create (done is not called), but
 * for a ValidatingAdmissionPolicy's denial: done gets it, in kube's words,
 * and -EINPROGRESS is returned.
 */
typedef void (*proxy_create_done_fn)(void *arg, int rc, const json_t *obj, const char *message);
int proxy_object_create_admitted(proxy_t *px, const char *group, const char *version,
				 const char *plural, json_t *obj, const char *manager,
				 proxy_create_done_fn done, void *arg, json_t **out);
/* Creates of that kind still in their webhooks, of objects in ns whose
 * controller ownerReference has owner_uid (controllers count them as made). */
size_t proxy_creates_pending(proxy_t *px, const char *ns, const char *owner_uid);
/* Replaces the object named by obj's metadata (spec and metadata; status is
 * kept from the stored object when the kind has a status subresource). An
 * object being deleted whose finalizers become empty is removed. The
 * update (a change), as the status update and delete below, meets the
 * tenant's admission webhooks as its controller (manager): when one matches
 * it returns -EINPROGRESS and the write is made once they allow it, if the
 * object has not changed meanwhile (a refusal is logged; the object's next
 * change syncs its controller again); a write of an object whose previous
 * write is still in its webhooks returns -EINPROGRESS at once. */
int proxy_object_update(proxy_t *px, const char *group, const char *version, const char *plural,
			json_t *obj, const char *manager, json_t **out);
/* Told when a controller's write that went into its webhooks was refused
 * there or by what followed (policies, validation): the object's store key
 * ("apps/replicasets"), and the object as it is (borrowed), so that its
 * controller tries again later, as kube's controllers requeue a failed
 * sync. One hook per proxy (the controller manager's); NULL removes it. */
typedef void (*proxy_write_refused_fn)(void *arg, const char *res, const json_t *obj);
void proxy_on_write_refused(proxy_t *px, proxy_write_refused_fn fn, void *arg);
/* Replaces only the status of the object named by obj's metadata. */
int proxy_object_update_status(proxy_t *px, const char *group, const char *version,
			       const char *plural, json_t *obj, const char *manager, json_t **out);
/* Deletes with a propagation policy ("Background", "Foreground", "Orphan"
 * or NULL for Background): Foreground and Orphan, and objects with
 * finalizers, are marked (deletionTimestamp + finalizer foregroundDeletion or
 * orphan) and left to the garbage collector. uid (may be NULL) is a
 * precondition. manager names the controller, whose delete meets the
 * ValidatingAdmissionPolicies as system:serviceaccount:kube-system:<manager>;
 * NULL for the server's own housekeeping (events past their TTL), which
 * kube-apiserver does not admit either. */
int proxy_object_delete(proxy_t *px, const char *group, const char *version, const char *plural,
			const char *ns, const char *name, const char *uid, const char *propagation,
			const char *manager);
/* Reads one object; *out is a new reference. */
int proxy_object_get(proxy_t *px, const char *group, const char *version, const char *plural,
		     const char *ns, const char *name, json_t **out);
/* Lists objects (ns NULL: every namespace); *out is a new array reference. */
int proxy_object_list(proxy_t *px, const char *group, const char *version, const char *plural,
		      const char *ns, json_t **out);
/*
 * The scale subresource of the object `kind` (of apiVersion `api_version`)
 * ns/name, as GET .../scale answers it: an autoscaling/v1 Scale (new
 * reference in *out) with spec.replicas, status.replicas and
 * status.selector, for Deployments, ReplicaSets, StatefulSets,
 * ReplicationControllers and custom objects whose CRD has a scale
 * subresource. -ENOENT (unknown kind or object), -ENOTSUP (no scale
 * subresource); `err` gets kube's message.
 */
int proxy_scale_get(proxy_t *px, const char *api_version, const char *kind, const char *ns,
		    const char *name, json_t **out, char *err, size_t errlen);
/* Sets that object's replica count as a PUT of its Scale would, through
 * proxy_object_update (admission as `manager`); -EINPROGRESS: in its
 * webhooks. Errors as above, or proxy_object_update's. */
int proxy_scale_update(proxy_t *px, const char *api_version, const char *kind, const char *ns,
		       const char *name, int64_t replicas, const char *manager, char *err,
		       size_t errlen);
/*
 * The PodMetrics of `pods` (borrowed array of tenant pods of namespace ns)
 * for a controller (the HorizontalPodAutoscaler's), from the metrics hook of
 * proxy_set_metrics: `done` follows on a later loop turn, as for a request
 * (err, host status, items borrowed for the call). NULL when the metrics API
 * is not served (no callback then). Cancel with proxy_metrics_pods_cancel
 * (the callback is then not called). Loop thread only.
 */
void *proxy_metrics_pods(proxy_t *px, const char *ns, const json_t *pods,
			 proxy_metrics_done_fn done, void *arg);
/* Whether proxy_metrics_pods can ask anything (the API is served). */
bool proxy_metrics_served(proxy_t *px);
void proxy_metrics_pods_cancel(proxy_t *px, void *call);

/* For DELETE requests: when `propagation` is Foreground or Orphan and obj
 * (borrowed, modified) is not already being deleted, adds the finalizer
 * foregroundDeletion or orphan to its metadata.finalizers. True when added. */
bool proxy_propagation_finalizer(const char *propagation, json_t *obj);

#endif
