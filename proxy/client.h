/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-process client of one tenant's API (implemented in
 * proxy/api/api_internal.c and proxy/aggregation/metrics.c): what the
 * tenant's controllers (proxy/controllers/) use, and all they use of the
 * server. Loop thread only.
 */
#ifndef KB_PROXY_CLIENT_H
#define KB_PROXY_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct proxy proxy_t;

/* The answer of a metrics read (proxy_metrics_pods, or the embedder's
 * fetch of proxy.h's proxy_set_metrics): err, the host's HTTP status, the
 * items (borrowed for the call) and the host's message. */
typedef void (*proxy_metrics_done_fn)(void *done_arg, int err, long status, json_t *items,
				      const char *message);

/*
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
