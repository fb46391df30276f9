/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API front of one tenant: serves the Kubernetes API over HTTPS from the
 * store, with kube-apiserver's semantics (discovery, OpenAPI, CRUD, watch,
 * patches, Table output, namespaces lifecycle): its lifecycle and the hooks
 * its embedder (cmd/) sets. The in-process client that the tenant's
 * controllers use is proxy/client.h.
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
#include "proxy/client.h"

typedef struct ssl_ctx_st SSL_CTX;

struct proxy_opts {
	const char *listen; /* "127.0.0.1:6443" */
	SSL_CTX *tls;       /* borrowed, outlives the proxy */
	/* The tenant's certificates made meanwhile on another thread
	 * (kb_pki_job_start in lib/pki.h): with tls NULL, the context is
	 * asked of tls_wait(wait_arg, &tls) by proxy_listen, before it
	 * listens, and borrowed as tls is; ca_wait
	 * (wait_arg), when not NULL, is called once the service-account keys
	 * and RBAC are loaded, before the built-in namespaces and APIServices,
	 * which need the store's "ca.crt" (kube-root-ca.crt,
	 * extension-apiserver-authentication): the caller puts it there. An
	 * -errno from ca_wait fails proxy_start, from tls_wait proxy_listen. */
	int (*tls_wait)(void *arg, SSL_CTX **tls);
	int (*ca_wait)(void *arg);
	void *wait_arg;
	store_t *store;             /* borrowed, outlives the proxy */
	const char *advertise_host; /* address written into the kubernetes Service endpoints */
	const char *data_dir;       /* DIR: audit.log goes there; NULL: no audit log */
	/* The egress policy (proxy/core/egress.h) for the connections a tenant
	 * can steer (admission and conversion webhooks, APIService backends):
	 * prefixes allowed ("10.0.0.0/8", "127.0.0.1/32"; NULL-terminated, or
	 * NULL; borrowed for proxy_start), and the host API server's URL, whose
	 * addresses are refused (NULL: none). */
	const char *const *egress_allow;
	const char *host_server;
};

/* Bootstraps the tenant's built-in objects if missing: the API is in place
 * but nothing listens until proxy_listen, so that the caller can start what
 * needs the proxy (the controllers) while the certificates are still being
 * made (tls_wait). Returns 0 or a negative errno (nothing is left then). */
int proxy_start(uv_loop_t *loop, const struct proxy_opts *opts, proxy_t **out);
/* Takes the TLS context (opts->tls, or tls_wait), listens on opts->listen
 * and points the kubernetes Endpoints at the bound port, which *port_out
 * gets. `opts`: proxy_start's. Returns 0 or a negative errno; the caller
 * then proxy_stop()s, as after any start. */
int proxy_listen(proxy_t *px, const struct proxy_opts *opts, int *port_out);
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
/* The same for a pod's projected serviceAccountToken source: audience
 * `audience` (NULL or "": the API server), ttl_seconds brought within
 * 600..172800 (*ttl_out gets it), bound to pod ns/pod of uid pod_uid: the
 * token is refused once that pod is gone. Same returns. Loop thread only. */
int proxy_issue_pod_token(proxy_t *px, const char *ns, const char *sa, const char *audience,
			  long ttl_seconds, const char *pod, const char *pod_uid, char **jwt,
			  long *ttl_out);
/* Ends every watch, stops listening; the loop can then finish. */
void proxy_stop(proxy_t *px);

/* Pods of this tenant run on a host cluster (the syncer): pod specs that
 * would reach into the host (nodeName, hostNetwork, hostPID, hostIPC, host
 * ports, hostPath volumes, privileged containers) and that would name a
 * host object (proxy/api/hostrefs.h: inline disks, glusterfs, gitRepo,
 * clusterTrustBundle, GMSA, DRA claims) are refused with 422, and
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

/* The tenant's own host addresses for the egress policy
 * (proxy/core/egress.h): fn says whether address a (borrowed) belongs to
 * one of the tenant's host pods or host Services as the host reports them.
 * `arg` is borrowed and must outlive the proxy (or be unset with fn NULL
 * first). Loop thread only. */
struct kb_addr;
typedef bool (*proxy_egress_owner_fn)(void *arg, const struct kb_addr *a);
void proxy_set_egress_owner(proxy_t *px, proxy_egress_owner_fn fn, void *arg);

/* GET /metrics (proxy/core/prom.c) appends what fn writes (Prometheus text,
 * lib/prom.h) to kube-apiserver's metrics: the syncer's, for instance.
 * `arg` is borrowed and must outlive the proxy (or be unset with fn NULL
 * first). Loop thread only. */
struct kb_buf;
typedef void (*proxy_prom_fn)(void *arg, struct kb_buf *out);
void proxy_set_prom(proxy_t *px, proxy_prom_fn fn, void *arg);

/*
 * The resource metrics API (metrics.k8s.io/v1beta1: PodMetrics `pods`,
 * NodeMetrics `nodes`, get and list; proxy/aggregation/metrics.c) answered from a host's
 * metrics API. Once authorized, a read lists the tenant's pods (or nodes)
 * it may show and calls `fetch(arg, plural, ns, name, objs, done,
 * done_arg)`, which returns a handle and answers later through `done` (never
 * from inside fetch), or returns NULL (503); `cancel(handle)` drops it when
 * the client goes away. `arg` is borrowed and must outlive the proxy.
 * The API is served (discovery, routing) only while proxy_metrics_available
 * says so: kubectl top then works as against a cluster with metrics-server,
 * and says "Metrics API not available" otherwise.
 */
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
 * Implemented in proxy/admission/admission.c. */
struct policy;
void proxy_set_policy(proxy_t *px, const struct policy *policy);
/* Holds every pod to the host floor `floor` (policies/policies.h: a Pod
 * Security level, or POLICY_FLOOR_NONE, the default, for a server whose
 * pods reach no host), with or without a policy. Loop thread, before the
 * first request. Implemented in proxy/admission/admission.c. */
void proxy_set_floor(proxy_t *px, int floor);

#endif
