/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The syncer: runs a tenant's pods on the shared host cluster.
 *
 * Glossary
 *   tenant object   an object in this tenant's store (a Pod, the ConfigMaps
 *                   and Secrets it references, a PersistentVolumeClaim, a
 *                   Service).
 *   host object     its translated copy in the host cluster's namespace,
 *                   labelled kubicle.dev/tenant=<tenant> and annotated with
 *                   the tenant object's namespace, name and uid.
 *   translated name "<name>-x-<namespace>-x-<tenant>", or a prefix plus a
 *                   hash when that is too long or ambiguous (syncer_impl.h).
 *                   Deterministic, so a create is idempotent: 409
 *                   AlreadyExists means "already there".
 *   resync          a full comparison of both sides (tenant pods vs host pods
 *                   with our label, and the same for claims): create what is
 *                   missing, delete orphans,
 *                   refresh statuses. Runs at start and whenever the host
 *                   watch had to relist (host outage, 410 Gone).
 *
 * DESIGN
 * Tenant side: a store watch on pods (and ConfigMaps/Secrets) drives host
 * writes; the host side is a list+watch of pods labelled with our tenant in
 * the host namespace (plus a watch of the host namespace's events).
 * PersistentVolumeClaims, every one of them, get host claims the same way
 * (a store watch and a host informer of their own, syncer/pvc.c), their
 * status, bound volume's name and host events coming back. Services (but
 * default/kubernetes) get host Services selecting the host pods of their
 * namespace (syncer/service.c), the host's cluster IPs, node ports and load
 * balancer status coming back. Both are rows of one engine of mirrored
 * kinds (syncer/mirror.c). Tenant
 * pod updates kube allows (labels, annotations, container and init container
 * images, activeDeadlineSeconds, added tolerations) are patched onto the
 * host pod (strategic merge) and re-checked at each resync. Host
 * pod status is written back into the tenant pod directly in the store
 * (status and spec.nodeName only). The host decides: a host pod that
 * disappears while its tenant pod is not being deleted means the host
 * removed it (eviction, preemption, an admin), and the tenant pod is removed
 * as kube-apiserver would after such a deletion.
 * Writes to the host go through lib/httpc's token bucket (default 50 QPS,
 * burst 100: see syncer_opts). Errors back off with jitter; a failed write
 * is retried by the next resync (every 30 s and after each relist).
 * Host credentials may rotate (a kubeconfig's tokenFile written by a
 * supervisor, the in-cluster projected token): lib/httpc re-reads the file
 * once a minute and on a 401, then retries the request with the new token.
 *
 * Threading: loop thread only (the store's thread).
 */
#ifndef KB_SYNCER_H
#define KB_SYNCER_H

#include <stdbool.h>
#include <uv.h>

#include "lib/http.h"
#include "store/store.h"

typedef struct syncer syncer_t;

/*
 * The host service account every host pod runs under: made by `kubicle
 * create` (cmd/hostsetup.c) in the host namespace with
 * automountServiceAccountToken false and no role bound, so a token the
 * host's kubelet or a CSI driver mints for a host pod carries no rights.
 * The '.' keeps it apart from the syncer's own "kubicle-<tenant>" (a tenant
 * name is a DNS label). A host namespace set up by hand needs it too.
 */
#define SYNCER_POD_SA "kubicle.pods"

/* A token for a tenant pod's projected serviceAccountToken source
 * (syncer_opts.issue_pod_token). All borrowed for the call. */
struct syncer_token_req {
	const char *ns, *sa;       /* the pod's service account */
	const char *audience;      /* NULL or "": the tenant API's */
	long ttl_seconds;          /* requested expirationSeconds */
	const char *pod, *pod_uid; /* the pod the token is bound to */
};

struct syncer_opts {
	const char *host_kubeconfig; /* path, or NULL: in-cluster service account */
	const char *host_namespace;  /* required */
	const char *tenant;          /* required: DNS label without "-x-" */
	const char *queue;           /* required for profiles with a queue key */
	const char *scheduler;       /* "kai" (default), "kueue", "volcano", "hami", "none" */
	/* The tenant policy's word on gangs: whether scheduler topology keys
	 * of pods pass to the host (else stripped), and its GPU quota in
	 * thousandths (<= 0: none), above which a gang could never run and
	 * is refused with an event. */
	bool topology_hints;
	int64_t gpu_quota_milli;
	/* The policy's imagePullPolicy: any (policy_image_pull_any). Else every
	 * container and image volume of a host pod pulls Always (kube's
	 * AlwaysPullImages, policies/images.c): on shared nodes a cached image
	 * must not run without the registry's word. */
	bool image_pull_any;
	const char *advertise; /* tenant API address for pods, or NULL */
	int api_port;          /* tenant API port for pods */
	/* The tenant's cluster DNS (proxy/dns/dns.h) as host pods reach it: an IP.
	 * Host pods of dnsPolicy ClusterFirst get dnsPolicy None and a
	 * dnsConfig naming it, with the tenant's search path in
	 * cluster_domain (NULL: "cluster.local"). NULL: pods keep the host's
	 * DNS, which knows none of the tenant's names. */
	const char *pod_dns;
	const char *cluster_domain;
	/* A host Service in host_namespace that serves the tenant API on 443
	 * (kubicle manifest's): the tenant's default/kubernetes Service gets
	 * its cluster IP, so kubernetes.default.svc is the tenant API for host
	 * pods. NULL: left as it is. */
	const char *api_service;
	/*
	 * Rate limit of requests to the host. Default (0) 50 QPS, burst 100:
	 * client-go's own default (5/10) would take 40 s to start 200 pods, but
	 * a host API server shares its capacity between many tenants through
	 * API Priority and Fairness; 50 QPS per tenant lets 20 tenants burst
	 * together at ~1000 QPS, what one kube-apiserver serves comfortably.
	 * A negative qps turns the limit off (benchmarks).
	 */
	double qps;
	unsigned burst;
	/* exec, attach and port-forward sessions piped to the host at once
	 * (each is a connection of its own); more are answered 429. 0: 256. */
	unsigned max_streams;
	/*
	 * Issues a tenant service-account token for ns/sa valid ttl_seconds;
	 * *jwt gets a malloc'ed string (the caller frees). 0 or a negative errno
	 * (-ENOENT: no such account yet; retried at the next resync). With it,
	 * each synced pod gets its service account's token mounted (a host
	 * Secret per account, refreshed at 80 % of the token's life); NULL: no
	 * tenant token is mounted. `token_arg` is borrowed, outlives the syncer.
	 */
	int (*issue_token)(void *token_arg, const char *ns, const char *sa, long ttl_seconds,
			   char **jwt);
	/*
	 * Issues the token of a pod's projected serviceAccountToken source, as
	 * kube's TokenRequest with that audience, expiration and a bound pod;
	 * *jwt (malloc'ed) and *ttl_out (the lifetime it got: the tenant caps
	 * it) set on success. 0 or a negative errno (retried at the next
	 * resync). With it, such a source becomes an item of a host Secret per
	 * pod, refreshed at 80 % of its life; NULL: the source is dropped and
	 * the host pod has no such file. Uses token_arg.
	 */
	int (*issue_pod_token)(void *token_arg, const struct syncer_token_req *req, char **jwt,
			       long *ttl_out);
	void *token_arg;
	/*
	 * The host's resource metrics API (metrics.k8s.io/v1beta1) came or went:
	 * called with true once the host's discovery names its pods and nodes,
	 * with false once it answers 404 (an unreachable host changes nothing).
	 * NULL: not reported. `metrics_arg` is borrowed, outlives the syncer.
	 */
	void (*metrics_changed)(void *metrics_arg, bool available);
	void *metrics_arg;
	/* How long the GPU allocation ledger keeps an interval after it ended
	 * (seconds; 0: 400 days). docs/finops.md. */
	long gpu_ledger_retention_s;
	/* The platform's GPU price file (docs/finops.md): the tenant's
	 * GPUUsage objects show costs at its prices while it is there and
	 * valid; read again when it changes. NULL: no costs shown. Borrowed:
	 * outlives the syncer. */
	const char *gpu_prices_file;
};

/*
 * Reads a GPU price file (YAML: currency, default, models: {MODEL: price
 * per GPU-hour}) into *out, a new {"currency", "default", "models"}; an
 * error's text in err. 0 or a negative errno. Blocking file I/O.
 */
int syncer_prices_load(const char *file, json_t **out, char *err, size_t len);
/* The price per GPU-hour of model (the default for none or another). */
double syncer_price_of(const json_t *prices, const char *model);

/* Starts syncing. `store` is borrowed and must outlive the syncer. Returns
 * 0 or a negative errno (-EINVAL: bad options; -ENOENT: no kubeconfig and
 * not in a cluster). Host connection problems are not errors here: the
 * syncer keeps retrying. */
int syncer_start(uv_loop_t *loop, store_t *store, const struct syncer_opts *opts, syncer_t **out);
/* Stops every watch and request; frees the syncer once its handles closed.
 * Call before store_close. */
void syncer_stop(syncer_t *s);

/*
 * Serves GET pods/log of tenant pod ns/name by proxying to its host pod
 * (follow streams chunked). `query` is the tenant request's raw query
 * (container, follow, previous, sinceSeconds, sinceTime, timestamps,
 * tailLines, limitBytes are passed on). Answers `req` in every case.
 * Matches proxy_opts' pod_log hook signature.
 */
void syncer_pod_log(void *syncer, kb_http_req_t *req, const char *ns, const char *name,
		    const char *query);

/*
 * Serves pods/exec, pods/attach and pods/portforward (`sub`) of tenant pod
 * ns/name, an upgrade request (WebSocket or SPDY), by opening the same
 * upgrade to its host pod and, once the host answers 101, piping bytes both
 * ways unchanged, as kube-apiserver's upgrade-aware proxy does towards the
 * kubelet: the stream protocol (channels, pings, the exit Status) is the
 * host's. The host's refusal (any other status) is passed on with its
 * body. `query` (command, container, stdin/stdout/stderr, tty, ports) is
 * passed on. Answers `req` in every case. Matches proxy_pod_connect_fn.
 */
void syncer_pod_connect(void *syncer, kb_http_req_t *req, const char *ns, const char *name,
			const char *sub, const char *query);

/*
 * PodMetrics or NodeMetrics of the tenant, read from the host's metrics API
 * (syncer/metrics.c). `plural` "pods" (ns: the tenant namespace, or NULL for
 * every one) or "nodes" (ns NULL); `name` one object, or NULL for a list.
 * `objs` (borrowed array of tenant Pods or Nodes; a reference is kept) are
 * those the answer may show: host items of other objects are dropped. The
 * host is asked once; `done(arg, err, status, items, message)` follows on a
 * later loop turn: err a negative errno when the host was not reached
 * (-ESHUTDOWN when the syncer stops); else the host's status, and with 200
 * `items`, the tenant's metrics objects (borrowed array, in the order of
 * objs, without kind), otherwise the host's Status message. Returns a handle
 * for syncer_metrics_cancel, or NULL (ENOMEM, bad name; no callback then).
 * Matches proxy_metrics_fetch_fn.
 */
typedef void (*syncer_metrics_done_fn)(void *arg, int err, long status, json_t *items,
				       const char *message);
void *syncer_metrics_get(void *syncer, const char *plural, const char *ns, const char *name,
			 const json_t *objs, syncer_metrics_done_fn done, void *arg);
/* Cancels a read of syncer_metrics_get; its callback is not called. */
void syncer_metrics_cancel(void *call);

/* Whether `name` can be a tenant's name (syncer_opts.tenant): NULL when it
 * can, else why not. A DNS label of at most 40 characters, without "-x-"
 * (host names stay readable) and not ending in "token-" and 16 hex digits
 * (a translated name ends with the tenant's, and service-account token
 * Secrets are named "<sa>-token-<16 hex>" in the same host namespace). */
const char *syncer_check_tenant(const char *name);

/* Whether `name` is a scheduler profile the syncer knows (kai, kueue,
 * volcano, hami, none). */
bool syncer_scheduler_known(const char *name);

/* Whether s is a CIDR ("10.0.0.0/8", "fd00::/8") with its host bits zero. */
bool syncer_cidr_valid(const char *s);
/* Whether CIDR inner lies within CIDR outer (strict: and is smaller); false
 * when either is not a CIDR or their families differ. */
bool syncer_cidr_within(const char *inner, const char *outer, bool strict);

/* Counters for benchmarks and tests. */
struct syncer_stats {
	size_t pods;         /* tenant pods tracked */
	size_t pvcs;         /* tenant PersistentVolumeClaims tracked */
	size_t services;     /* tenant Services tracked */
	size_t netpols;      /* tenant NetworkPolicies tracked */
	size_t host_creates; /* create calls sent */
	size_t host_deletes;
	size_t host_updates;   /* patches sent (pod updates kube allows) */
	size_t status_updates; /* tenant pod status writes */
	size_t resyncs;
	size_t host_pods;     /* host pods of this tenant the host informer holds */
	size_t host_errors;   /* host requests of any kind that failed: no answer, 429, 5xx */
	size_t host_restarts; /* pod and event informers restarted: failure or 410 */
	bool host_up;         /* the host pods' informer is listed and watching */
};
/* Loop thread only. */
void syncer_get_stats(const syncer_t *s, struct syncer_stats *out);
/* Writes the kubicle_syncer_ metrics of `syncer` (a syncer_t *) to b, in
 * Prometheus' text format: GET /metrics's hook (proxy_set_prom). */
struct kb_buf;
void syncer_prom(void *syncer, struct kb_buf *b);
/* The egress policy's question (proxy_set_egress_owner): is address a one
 * of this tenant's host pods' IPs or host Services' cluster IPs, as the
 * host reports them (the syncer's informer caches; a tenant-written field
 * never counts)? A host pod whose IP is its node's (host network) does not
 * count. Loop thread. */
struct kb_addr;
bool syncer_owns_address(void *syncer, const struct kb_addr *a);

#endif
