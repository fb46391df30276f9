/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cross-file internals of the API front. A request flows:
 * server.c (authn, routing, query parsing) -> handlers.c (verbs on the
 * resource table) -> objects.c (metadata, defaults, validation) -> store;
 * watch.c streams events; discovery.c, openapi.c and table.c render;
 * status.c is the one place an error becomes a Kubernetes Status.
 */
#ifndef KB_PROXY_IMPL_H
#define KB_PROXY_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lib/http.h"
#include "lib/util.h"
#include "proxy/proxy.h"
#include "proxy/resource.h"
#include "store/store.h"

#define KB_K8S_MAJOR       "1"
#define KB_K8S_MINOR       "33"
#define KB_K8S_GIT_VERSION "v1.33.0"

struct watch;
struct kb_buf;
struct wh_req;
struct webhooks;
struct pending_create;
struct apisvc;
struct aggregator;

struct proxy {
	uv_loop_t *loop;
	store_t *store;
	kb_http_server_t *http;
	char listen[128];
	char advertise[128];
	int port;
	uv_timer_t tick;       /* 1 s: watch timeouts, bookmarks, namespace cleanup */
	struct watch *watches; /* every open watch stream */
	size_t nwatches;
	bool ns_pending; /* a namespace is terminating: clean up on tick */
	struct deferred_reply *deferred, **deferred_tail; /* waiting for a group commit */
	bool stopping;
	bool host_sync;                   /* pods run on a host: refuse host-reaching pod fields */
	proxy_pod_log_fn pod_log;         /* pods/log passthrough (subres.c), or NULL */
	proxy_pod_connect_fn pod_connect; /* pods/exec, attach, portforward, or NULL */
	void *pod_log_arg;
	proxy_metrics_fetch_fn metrics_fetch; /* proxy_set_metrics, or NULL */
	proxy_metrics_cancel_fn metrics_cancel;
	void *metrics_arg;
	char data_dir[1024]; /* the tenant's directory ("" in tests) */
	struct authz *authz; /* authz.c: RBAC index and watches */
	struct audit *audit; /* audit.c: DIR/audit.log, or NULL */
	void *sa_key;        /* auth.c: EVP_PKEY signing service-account tokens */
	/* admission.c: the tenant's policy (borrowed) or NULL, and the timer
	 * keeping its quota object and the tenant's ResourceQuotas current */
	const struct policy *policy;
	struct admission *admission;
	struct prom *prom;         /* prom.c: request metrics for GET /metrics */
	struct webhooks *webhooks; /* webhook.c: the configured admission webhooks */
	struct vap *vap;           /* vap.c: ValidatingAdmissionPolicies and bindings */
	struct apisvc *apisvc;     /* apiservice.c: APIServices */
	struct aggregator *agg;    /* aggregator.c: service-backed APIServices */
	struct pending_create
	    *pending_creates; /* api_internal.c: controllers' creates in webhooks */
	struct pending_write
	    *pending_writes; /* api_internal.c: their updates and deletes in webhooks */
	proxy_write_refused_fn write_refused; /* ...and who hears of a refusal */
	void *write_refused_arg;
	proxy_prom_fn prom_fn;
	void *prom_arg;
};

/* prom.c: where a request is in its metrics (kube counts long-running
 * requests when they end, and never as in flight). */
enum prom_state { PROM_NONE = 0, PROM_READONLY, PROM_MUTATING, PROM_LONGRUNNING, PROM_DONE };

enum field_validation { FV_WARN = 0, FV_STRICT, FV_IGNORE };
enum include_object { INC_METADATA = 0, INC_OBJECT, INC_NONE };

struct query {
	char *label_selector, *field_selector;
	char *resource_version, *resource_version_match, *cont;
	char *field_manager, *propagation_policy;
	long limit;
	long timeout_seconds; /* -1 when absent */
	long grace_period;    /* -1 when absent */
	bool watch, allow_bookmarks, dry_run, force, pretty;
	int send_initial_events; /* sendInitialEvents: -1 absent, 0, 1 */
	enum field_validation validation;
	enum include_object include;
	char *buf; /* owned copy of the raw query */
};

/* One API request being served. */
struct req {
	kb_http_req_t *http;
	struct proxy *px;
	char *segs[12]; /* path segments (decoded, in pathbuf) */
	int nsegs;
	char *pathbuf;
	const char *group, *version, *ns, *name, *sub, *plural;
	const struct proxy_resource *res;
	struct query q;
	bool want_table;
	char user[256];   /* authenticated user name */
	char *groups[16]; /* authenticated groups (malloc'ed) */
	int ngroups;
	const char *verb;          /* "get", "list", "watch", "create", ... */
	json_t *warnings;          /* array of strings, or NULL */
	json_t *audit_annotations; /* object: the audit event's annotations, or NULL */
	bool as_scale;             /* answer writes with the Scale view */
	time_t now;
	int64_t recv_us;                 /* when the request arrived (µs since the epoch) */
	char *uid;                       /* authenticated user's uid (service accounts) or NULL */
	bool audited;                    /* audit.c: its line is written */
	char *audit_name;                /* audit.c: a create's object name, as the body gave it */
	char audit_id[65];               /* the Audit-Id of its answer and audit event */
	uint8_t prom_state;              /* enum prom_state */
	struct prom_series *prom_series; /* prom.c: its series while long-running */
	bool async;                      /* a module answers later and frees r (metrics.c) */
	bool generated_name;             /* a create's name came from generateName */
	struct wh_req *wh;               /* webhook.c: where it is in the webhooks, or NULL */
};

/* auth.c: authentication. 0 with r->user/r->groups set, or -EACCES (the
 * caller answers 401). */
int auth_authenticate(struct req *r);
/* authz.c: authorization of r->verb on r's resource or path. 0 when allowed;
 * otherwise it has answered (403) and returns -EACCES. */
int authz_authorize(struct req *r);

/* auth.c: switches r's identity to the one named by Impersonate-User /
 * Impersonate-Group headers when the real user may impersonate it. 0 (also
 * without headers); otherwise it has answered (403) and returns -EACCES. */
int auth_impersonate(struct req *r);
/* auth.c: loads or creates the tenant's service-account signing key. */
int auth_start(struct proxy *px);
void auth_stop(struct proxy *px);
/* auth.c: TokenReview of a bearer token: fills user, groups and uid of
 * `who` (a scratch request) or returns -EACCES. */
int auth_token(struct proxy *px, const char *token, const char *const *audiences, size_t naud,
	       struct req *who);
/* auth.c: the serviceaccounts/token subresource (TokenRequest). */
void auth_token_request(struct req *r);

/* authz.c: RBAC index kept from a store watch, bootstrap roles. */
int authz_start(struct proxy *px);
void authz_stop(struct proxy *px);
/* authz.c: the decision for explicit attributes (reviews); borrowed. why
 * (optional) gets kube's reason when allowed ("" for system:masters). */
struct rbac_attrs;
bool authz_check(struct proxy *px, const struct rbac_attrs *a, char *why, size_t len);
/* authz.c: rules of a user in ns (new array reference), for rules reviews. */
json_t *authz_rules(struct proxy *px, const char *user, const char *const *groups, size_t ngroups,
		    const char *ns);
/* authz.c: escalation prevention and RBAC object checks for a create or
 * update of a Role/ClusterRole/(Cluster)RoleBinding; other kinds pass.
 * 0, or it has answered (403/422) and returns -EACCES/-EINVAL. obj, old
 * borrowed (old NULL on create). */
int authz_admit(struct req *r, const json_t *obj, const json_t *old);

/* cfgwatch.c: the admission configuration read from two store keys and
 * marked stale (dirty) when either changes. cw lives as long as the
 * watches (its address is theirs). */
struct cfg_watch {
	store_watch_t *w[2];
	bool dirty;
};
int cfg_watch_start(struct proxy *px, const char *key0, const char *key1, struct cfg_watch *cw);
void cfg_watch_stop(struct cfg_watch *cw);
/* Every object under key (new array reference), or NULL on a store error. */
json_t *cfg_list(struct proxy *px, const char *key);

/* admission.c: the admission chain for a create or update of obj (borrowed,
 * may be changed) over old (borrowed, NULL on create), in kube's order:
 * LimitRange (defaults, then min/max), Pod Security (namespace labels), the
 * tenant policy (a new pod gets its node selector and tolerations), then
 * ResourceQuota (the tenant's quotas, charged when admitted). 0, or it has
 * answered (403/422) and returns -EACCES/-EINVAL. */
int admission_check(struct req *r, json_t *obj, const json_t *old);
/* admission.c: the same chain for writes of in-process controllers: 0, or
 * -EACCES (the reason is logged). */
int admission_internal(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		       const json_t *old);

/* audit.c: DIR/audit.log with rotation; one Event line per request. */
int audit_open(struct proxy *px);
void audit_close(struct proxy *px);
/* Writes r's line once (later calls do nothing). code: the response's. */
void audit_log(struct req *r, int code);
/* Adds an annotation to r's audit event (kube's audit.AddAuditAnnotation:
 * authorization decision and reason, Pod Security's verdicts). */
void audit_annotate(struct req *r, const char *key, const char *value);
/* The name of the object a create's body names, for the event's objectRef
 * (kube's LogRequestObject; a generateName create has none). */
void audit_object_name(struct req *r, const char *name);
/* The request's audit ID, as kube's WithAuditInit: the client's Audit-ID
 * header when it sent a usable one, else a new UUID. */
void audit_init(struct req *r);
/* "Audit-Id: ..." for the answer's headers. */
void audit_id_header(const struct req *r, struct kb_buf *hdr);

/* virtual.c: resources that are not stored (reviews, ...): answers POST. */
void virtual_handle(struct req *r);

/* subres.c: subresources served by a module of their own (pods/log,
 * serviceaccounts/token, ...). True when it answered the request. */
bool subres_handle(struct req *r);
/* hostpod.c: GET pods/log (passthrough to the host when syncing, or to the
 * pod_log hook of proxy_set_pod_streams; else an empty log). */
void hostpod_log(struct req *r);
/* hostpod.c: pods/exec, pods/attach, pods/portforward (upgrade requests):
 * passed to the pod_connect hook (proxy_set_host, proxy_set_pod_streams),
 * else refused (400). */
void hostpod_connect(struct req *r);
/* Whether r names one of those subresources of pods. */
bool hostpod_is_connect(const struct req *r);
/* hostpod.c: a pod spec field that would reach into the host, for 422
 * causes when px->host_sync (json causes array borrowed). With a policy,
 * only spec.nodeName: the policy's hostFields rule decides the rest. */
void hostpod_refuse_fields(const json_t *pod, bool policy, json_t *causes);
/* hostpod.c: POST pods/binding (a scheduler places a pod on a node). */
void hostpod_binding(struct req *r);
/* eviction.c: POST pods/eviction (kube's EvictionREST). */
void eviction_handle(struct req *r);

/* metrics.c: whether res is a row of the metrics API; its GET and LIST
 * (asks the host: sets r->async and answers later). */
bool metrics_row(const struct proxy_resource *res);
void metrics_handle(struct req *r);

/* crd.c: CustomResourceDefinitions turn into resource rows at start-up and
 * whenever one changes. */
int crd_start(struct proxy *px);
/* crd.c: a CRD about to be deleted (borrowed, modified) gets the
 * customresourcecleanup finalizer, as kube adds it at delete time. */
void crd_before_delete(json_t *crd);
/* crd.c: field checks of a body for a row without a protobuf message: CRD
 * objects (defaults, validation) and custom objects (unknown fields pruned
 * or refused with Strict, schema defaults; their schema validation is
 * crd_check_rules'). obj is borrowed and modified. 0, or answered (400/422)
 * and -EINVAL. */
int crd_check_fields(struct req *r, json_t *obj);
/* A custom object's validation in kube's order, on obj against old (NULL on
 * create): the schema (ratcheting unchanged values), list-type uniqueness,
 * then the x-kubernetes-validations rules unless a cause so far is of a
 * kind kube stops at (then kube's "some validation rules were not checked"
 * note); failures appended to causes, ratcheted rule failures to
 * r->warnings. Returns causes added. */
int crd_check_rules(struct req *r, const json_t *obj, const json_t *old, json_t *causes);
/* crd.c: the scale subresource of custom objects (the CRD's replica paths).
 * True when it answered. */
bool crd_subres(struct req *r);

/* crd.c: the Scale of a custom object (new reference; NULL when its kind
 * has no scale subresource), and setting its specReplicasPath (0 or
 * -ENOTSUP). Objects borrowed. */
json_t *crd_scale_of(const struct proxy_resource *res, const json_t *obj);
int crd_scale_set(const struct proxy_resource *res, json_t *obj, int64_t replicas);

/* server.c: clears user and groups (before re-authenticating). */
void req_forget_user(struct req *r);
/* server.c: frees a request once its response is complete. */
void proxy_req_free(struct req *r);
/* A made-up request for a write by one of the tenant's controllers
 * (manager: its name), as kube's controllers make it: the user
 * system:serviceaccount:kube-system:<manager> and its groups; no
 * connection. Free with proxy_req_free; NULL when out of memory. */
struct req *proxy_req_controller(struct proxy *px, const struct proxy_resource *res,
				 const char *manager);

/* status.c: the one function that turns an error into a Status response. */
void reply_status(struct req *r, int code, const char *reason, const char *message,
		  json_t *details /* stolen, may be NULL */);
void reply_statusf(struct req *r, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Maps a store errno for an object of r->res named `name` to its Status. */
void reply_errno(struct req *r, int err, const char *name);
/* 422 Invalid with causes (stolen). */
void reply_invalid(struct req *r, const char *kind, const char *name, json_t *causes);
/* 422 Invalid for bad list or watch options (ListOptions.meta.k8s.io), as
 * kube words it; causes stolen. */
void reply_list_options_invalid(struct req *r, json_t *causes);
/* Builds a Status object (new reference). */
json_t *status_object(int code, const char *reason, const char *message, json_t *details);
void reply_json(struct req *r, int code, const json_t *obj);
/* Records r's write of obj over old (NULL: a create) in obj's managedFields,
 * under r's field manager (fallback without one) and r's subresource. */
void req_track_fields(struct req *r, const json_t *old, json_t *obj, const char *fallback);
/* A write through /scale: obj (borrowed, modified) is old with the new
 * replicas; it is written as any update and answered as a Scale. */
void req_write_scale(struct req *r, const json_t *old, json_t *obj);
/* The Scale view of an object of res (a CRD's through its scale paths:
 * crd_scale_of, NULL without them), and setting its replicas (replicas
 * borrowed). */
json_t *res_scale_view(const struct proxy_resource *res, const json_t *obj);
void res_scale_set(const struct proxy_resource *res, json_t *obj, json_t *replicas);
/* A Scale (borrowed), as a Table when the client asked for one. */
void reply_scale(struct req *r, int code, const json_t *scale);
/* admission.NewForbidden's 403: `<resource> "<name>" is forbidden: <why>`,
 * details name, group and kind (admission.c). */
void reply_denied(struct req *r, const char *name, const char *why);
void reply_text(struct req *r, int code, const char *content_type, const char *body, size_t len);
/* Every answer's last step: counted in the metrics, audited, given its
 * Audit-Id, held back while a group commit is pending, then sent with
 * `headers` ("Name: value\r\n" lines, or NULL); r->http is NULL after. */
void reply_raw(struct req *r, int code, const char *content_type, const char *headers,
	       const char *body, size_t len);
/* "pods" or "deployments.apps" as kube names a resource in messages. */
void resource_qualified(const struct proxy_resource *res, char *buf, size_t len);

/* rstore.c: the store through a resource row (storage conversions).
 * Objects in and out are in the served shape. */
int rs_get(struct proxy *px, const struct proxy_resource *res, const char *ns, const char *name,
	   json_t **out);
/* final: the caller will not change obj again (store_create_final). */
int rs_create(struct proxy *px, const struct proxy_resource *res, const char *ns, const char *name,
	      json_t *obj, bool final);
int rs_update(struct proxy *px, const struct proxy_resource *res, const char *ns, const char *name,
	      json_t *obj, int64_t expected);
int rs_delete(struct proxy *px, const struct proxy_resource *res, const char *ns, const char *name,
	      int64_t expected, json_t **last);
/* req->res is ignored (res->store_key is used); the filter sees served objects. */
int rs_list(struct proxy *px, const struct proxy_resource *res, const struct store_list_req *req,
	    struct store_list_result *out);
void rs_event_to_core(const struct proxy_resource *res, json_t *obj);
void rs_event_from_core(const struct proxy_resource *res, json_t *obj);
/* hpa_v1.c: autoscaling/v1 HorizontalPodAutoscalers, stored as v2. */
void rs_hpa_v1_to_v2(const struct proxy_resource *res, json_t *obj);
void rs_hpa_v2_to_v1(const struct proxy_resource *res, json_t *obj);
/* A custom resource read through another version than stored: apiVersion
 * (conversion None) becomes the row's, and the storage version's on write. */
void rs_version_out(const struct proxy_resource *res, json_t *obj);
void rs_version_in(const struct proxy_resource *res, json_t *obj);
/* A custom object read from storage: schema defaults, then the version. */
void rs_crd_out(const struct proxy_resource *res, json_t *obj);

/* csr.c: a write of a CertificateSigningRequest (main resource, /status or
 * /approval): kube's strategy, validation and certificate admission plugins.
 * 0, or answered (422/403) and -EINVAL/-EACCES. obj borrowed, modified. */
int csr_write_check(struct req *r, json_t *obj, const json_t *old);

/* handlers.c: label and field selectors of a list or watch. */
struct filter {
	struct sel_label *labels;
	struct sel_field *fields;
};
/* Parses r's selectors; on error answers 400 and returns -EINVAL. */
int filter_parse(struct req *r, struct filter *f);
bool filter_match(const json_t *obj, void *arg);
void filter_free(struct filter *f);

/* handlers.c */
void handle_resource(struct req *r);
/* The pod delete of pods/eviction, as kube's store.Delete with
 * ValidateAllObjectFunc (no admission of its own): pod (borrowed) with the
 * Eviction's DeleteOptions doc (borrowed, may be NULL), pre_rv (NULL: the
 * doc's) as resourceVersion precondition, dry_run or the doc's dryRun.
 * 0, or a negative errno once it has answered. */
int handle_delete_evicted(struct req *r, const json_t *doc, const char *pre_rv, bool dry_run,
			  json_t *pod);
/* The autoscaling/v1 Scale of a workload (new reference). */
json_t *obj_scale_view(const json_t *obj);
/* api_internal.c: forgets the controllers' writes still in their webhooks
 * (after webhook_stop dropped the calls), at shutdown. */
void proxy_pending_creates_free(struct proxy *px);
/* Shared write paths used by handlers, namespaces and bootstrap. */
int object_create(struct proxy *px, const struct proxy_resource *res, json_t *obj, json_t **out);

/* objects.c: metadata, defaults and validation. */
void obj_set_str(json_t *obj, const char *path, const char *value);
const char *obj_str(const json_t *obj, const char *path);
json_t *obj_get(const json_t *obj, const char *path);
json_t *obj_meta(json_t *obj);
void obj_init_create(const struct proxy_resource *res, json_t *obj, time_t now);
void obj_defaults(struct proxy *px, const struct proxy_resource *res, json_t *obj);
/* autoscaling/v2's defaults of a HorizontalPodAutoscaler (hpa_v1.c applies
 * them to what it converts, as kube's decoding of the stored v2 does), and
 * its metric of a CPU utilization target (new reference; pct stolen). */
void obj_hpa_defaults(json_t *obj);
json_t *obj_hpa_cpu_metric(json_t *pct);
void obj_default_keys(const struct proxy_resource *res, json_t *obj);
/* Copies the server-owned metadata (uid, creationTimestamp, deletion
 * stamps, generation, name, namespace) of `old` into `obj`. */
void obj_keep_server_meta(const json_t *old, json_t *obj);
/* Equal but for resourceVersion and managedFields. */
bool obj_same(const json_t *a, const json_t *b);
/* Runs authorization of the write (authz_admit), metadata + kind validation
 * (on failure answers 422 and returns -EINVAL), then the admission chain
 * (admission_check: may change obj; answers 403, returns -EACCES). */
int obj_validate(struct req *r, json_t *obj, const json_t *old);
bool obj_spec_changed(const json_t *a, const json_t *b);
/* Whether res's objects carry metadata.generation (1 on create, +1 on
 * changes outside metadata and status). */
bool obj_has_generation(const struct proxy_resource *res);
int64_t obj_rv(const json_t *obj);

/* prom.c: the request metrics of GET /metrics. prom_begin counts r in
 * flight (at arrival); prom_end records its answer (code, body bytes) once;
 * prom_longrun_begin turns it into a long-running request (a watch, a
 * stream or connection handed over) and prom_longrun_end records it when
 * it ends; prom_req_free settles whatever is left when r is freed. */
int prom_start(struct proxy *px);
void prom_stop(struct proxy *px);
void prom_begin(struct req *r);
void prom_end(struct req *r, int code, size_t bytes);
/* prom_end in two steps, for an answer that waits for the group commit:
 * prom_take leaves the request's in-flight count and finds its series at
 * once; prom_record counts the answer when it is sent, with the code sent
 * (a failed commit's 500) and the time it took (the commit's included). */
struct prom_rec {
	struct prom_series *s, *sli; /* NULL: not counted */
	int64_t recv_us;
	size_t bytes;
};
void prom_take(struct req *r, size_t bytes, struct prom_rec *out);
void prom_record(const struct prom_rec *rec, int code);
void prom_longrun_begin(struct req *r);
void prom_longrun_end(struct req *r, int code);
void prom_req_free(struct req *r);
/* r->http is handed to a stream or connection of its own (pods/log,
 * exec, attach, portforward): long-running until that request ends. Call
 * before r->http is handed over. */
void prom_handoff(struct req *r);
/* The apiserver_watch_events_total counter of res's kind (lives as long as
 * the proxy), or NULL. */
uint64_t *prom_watch_counter(struct proxy *px, const struct proxy_resource *res);
/* Once a second: the in-flight peaks roll over. */
void prom_tick(struct proxy *px);
/* Answers GET /metrics. */
void prom_serve(struct req *r);

/* watch.c */
void watch_start(struct req *r);
void watch_tick(struct proxy *px);
void watch_close_all(struct proxy *px);

/* discovery.c */
bool discovery_handle(struct req *r);

/* table.c */
json_t *table_build(struct req *r, json_t *items /* borrowed array */, const char *rv,
		    const char *cont, bool headers);
/* The Table of a /scale answer (scale borrowed). New reference. */
json_t *table_build_scale(struct req *r, const json_t *scale);

/* namespace.c */
int ns_bootstrap(struct proxy *px);
/* flowcontrol.c: kube's defaults of FlowSchemas and PriorityLevelConfigurations,
 * and the mandatory exempt and catch-all pairs, made when missing. */
void flowcontrol_default(const struct proxy_resource *res, json_t *obj);
int flowcontrol_bootstrap(struct proxy *px);
/* The `kubernetes` Service's Endpoints and EndpointSlice, as kube-apiserver's
 * endpoint reconciler keeps them at every start: the advertise address and
 * the port the server listens on (px->port, so after listening). The
 * controllers leave them alone (no selector; skip-mirror). */
int ns_reconcile_api_endpoints(struct proxy *px);
/* 0 when the namespace exists and accepts new content, else answers and
 * returns -errno. */
int ns_check_writable(struct req *r, const char *ns, const char *name);
/* Creates what a new namespace holds at once: the default ServiceAccount
 * and the kube-root-ca.crt ConfigMap. */
void ns_created(struct proxy *px, const char *ns);
void ns_tick(struct proxy *px);

#endif
