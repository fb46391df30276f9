/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The core of the API front: the server (struct proxy) and one request
 * (struct req), the one place an error becomes a Kubernetes Status
 * (status.c), the store through a resource row (rstore.c), audit, request
 * metrics, the admission configuration's watches, and a request's life
 * (req.c). Included by proxy/core/ and the layers above it (auth,
 * admission, api, aggregation, the server); never by model, patch or
 * validation, which know neither a request nor a server.
 *
 * A request flows: server.c (authn, routing, query parsing) ->
 * api/handlers.c (verbs on the resource table) -> api/write.c (defaults,
 * validation, admission) -> store; api/watch.c streams events; the model's
 * printers and openapi builders render.
 *
 * DESIGN: struct proxy holds what every layer shares (loop, store, listener,
 * the tenant's policy) and one pointer per module to that module's own
 * state, defined by the module; struct req holds a request's parse and
 * identity, core's own accounting (audit, metrics), and the upper layers'
 * state only as struct req_ext entries they add. Layers below the API call
 * it only through tables set at start (px->client, r->resume), never by
 * name. Threading: loop thread only.
 */
#ifndef KB_PROXY_CORE_H
#define KB_PROXY_CORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lib/http.h"
#include "lib/ws.h"
#include "proxy/proxy.h"
#include "proxy/model/object.h"
#include "proxy/model/resource.h"
#include "proxy/model/scale.h"
#include "store/store.h"

#define KB_K8S_MAJOR       "1"
#define KB_K8S_MINOR       "33"
#define KB_K8S_GIT_VERSION "v1.33.0"

/* each module's own state, defined in its folder */
struct api;
struct authz;
struct audit;
struct prom;
struct admission;
struct webhooks;
struct pc_cache;
struct vap;
struct apisvc;
struct aggregator;
struct metrics_hook;

/* The in-process client's object calls (proxy/client.h), for the layers
 * below the API that read and write objects (admission: the policy's quota
 * object and the quotas' status; auth: RBAC's bootstrap roles). The API
 * layer provides the table (api_client) and the server sets px->client at
 * start, so those layers call down a table and never up into the API. */
struct core_client {
	int (*create)(struct proxy *px, const char *group, const char *version, const char *plural,
		      json_t *obj, const char *manager, json_t **out);
	int (*update)(struct proxy *px, const char *group, const char *version, const char *plural,
		      json_t *obj, const char *manager, json_t **out);
	int (*update_status)(struct proxy *px, const char *group, const char *version,
			     const char *plural, json_t *obj, const char *manager, json_t **out);
	int (*get)(struct proxy *px, const char *group, const char *version, const char *plural,
		   const char *ns, const char *name, json_t **out);
	int (*list)(struct proxy *px, const char *group, const char *version, const char *plural,
		    const char *ns, json_t **out);
	/* An object the server makes for itself at start (bootstrap RBAC,
	 * namespaces, ...): server metadata and defaults, stored, no
	 * admission. 0, -EEXIST or a store error; *out (may be NULL) new. */
	int (*bootstrap_create)(struct proxy *px, const struct proxy_resource *res, json_t *obj,
				json_t **out);
};

struct proxy {
	uv_loop_t *loop;
	const struct core_client *client; /* the API layer's (api_client) */
	store_t *store;
	kb_http_server_t *http;
	char listen[128];
	char advertise[128];
	int port;
	uv_timer_t tick; /* 1 s: watch timeouts, bookmarks, namespace cleanup */
	struct deferred_reply *deferred, **deferred_tail; /* waiting for a group commit */
	bool stopping;
	char data_dir[1024]; /* the tenant's directory ("" in tests) */
	/* the tenant's policy (borrowed, proxy_set_policy) or NULL */
	const struct policy *policy;
	/* the host floor (policies.h POLICY_FLOOR_NONE, or a Pod Security
	 * level; proxy_set_floor); -1 from proxy_start */
	int floor;
	/* the modules' state: each is defined and owned by its module */
	struct prom *prom;             /* core/prom.c: request metrics for GET /metrics */
	struct audit *audit;           /* core/audit.c: DIR/audit.log, or NULL */
	struct authz *authz;           /* auth/authz.c: RBAC index and watches */
	void *sa_key;                  /* auth/auth.c: EVP_PKEY signing service-account tokens */
	struct token_cache *tokens;    /* auth/tokencache.c: service-account tokens verified */
	struct admission *admission;   /* admission/admission.c: the policy's quota timer */
	struct webhooks *webhooks;     /* admission/webhook.c: the admission webhooks */
	struct cfg_cache *priority;    /* admission/admission.c: PriorityClasses read once */
	struct cfg_cache *limitranges; /* admission/admission.c: LimitRanges read once */
	struct vap *vap;               /* admission/vap.c: ValidatingAdmissionPolicies */
	struct api *api;        /* api/api.h: watches, host passthrough, controllers' writes */
	struct apisvc *apisvc;  /* aggregation/apiservice.c: APIServices */
	struct aggregator *agg; /* aggregation/aggregator.c: service-backed APIServices */
	/* aggregation/aggregator.c: DIR/front-proxy being made, until joined */
	struct kb_pki_client_ca_task *front_proxy_task;
	struct metrics_hook *metrics; /* aggregation/metrics.c: proxy_set_metrics */
	struct egress *egress;        /* core/egress.c: where a tenant may make us connect */
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
	bool watch, allow_bookmarks, dry_run, force;
	int send_initial_events; /* sendInitialEvents: -1 absent, 0, 1 */
	int pretty;              /* pretty: -1 absent or empty, 0, 1 (Go's ParseBool) */
	enum field_validation validation;
	enum include_object include;
	char *buf; /* owned copy of the raw query */
};

/* An upper layer's state on one request, embedded in that layer's own
 * struct and found by its free function (req_ext_find): freed with the
 * request, or by req_ext_remove. The layers below never name it (the
 * webhooks keep where a request is in its calls this way). */
struct req_ext {
	struct req_ext *next;
	void (*free)(struct req_ext *e); /* frees the embedding struct */
};
void req_ext_add(struct req *r, struct req_ext *e);
struct req_ext *req_ext_find(const struct req *r, void (*free_fn)(struct req_ext *e));
void req_ext_remove(struct req *r, struct req_ext *e);

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
	char user[384];   /* authenticated user name (a service account's fits) */
	char *groups[16]; /* authenticated groups (malloc'ed) */
	int ngroups;
	const char *verb;           /* "get", "list", "watch", "create", ... */
	json_t *warnings;           /* array of strings, or NULL */
	json_t *audit_annotations;  /* object: the audit event's annotations, or NULL */
	const char *authz_decision; /* audit.c: the authorizer's decision annotation, or NULL */
	char *authz_reason;         /* audit.c: and its reason */
	bool as_scale;              /* answer writes with the Scale view */
	time_t now;
	int64_t recv_us;                 /* when the request arrived (µs since the epoch) */
	char *uid;                       /* authenticated user's uid (service accounts) or NULL */
	json_t *extra;                   /* the user's extra: {key: [values]} or NULL */
	json_t *real_user;               /* impersonating: the caller's own userInfo, or NULL */
	bool audited;                    /* audit.c: its line is written */
	char *audit_name;                /* audit.c: a create's object name, as the body gave it */
	char audit_id[65];               /* the Audit-Id of its answer and audit event */
	uint8_t prom_state;              /* enum prom_state */
	struct prom_series *prom_series; /* prom.c: its series while long-running */
	bool async;                      /* a module answers later and frees r (metrics.c) */
	bool generated_name;             /* a create's name came from generateName */
	struct req_ext *exts;            /* upper layers' state on it (req_ext_add) */
	/* serves r again once what parked it is done (the webhooks' calls): set
	 * by the API layer's dispatcher, so admission never names it */
	void (*resume)(struct req *r);
};

/* Whether r names one of those subresources of pods. */
bool req_is_connect(const struct req *r);

/* server.c: clears user and groups (before re-authenticating). */
void req_forget_user(struct req *r);

/* The user as kube's authentication.k8s.io UserInfo writes it (username,
 * uid, groups, extra; the anonymous user as system:anonymous in
 * system:unauthenticated), for reviews, webhooks and the audit event. New
 * reference. */
json_t *req_user_info(const struct req *r);

/* Serves r (parked: r->async) again once what held it is done: its abort
 * callback unset, then r->resume; a request nothing answered gets a 500,
 * and r is freed unless it was parked again. */
void req_resume(struct req *r);

/* server.c: frees a request once its response is complete. */
void req_free(struct req *r);

/* A made-up request for a write by one of the tenant's controllers
 * (manager: its name), as kube's controllers make it: the user
 * system:serviceaccount:kube-system:<manager> and its groups; no
 * connection. Free with req_free; NULL when out of memory. */
struct req *req_controller(struct proxy *px, const struct proxy_resource *res, const char *manager);

/* handlers.c: label and field selectors of a list or watch. */
struct filter {
	struct sel_label *labels;
	struct sel_field *fields;
};

/* Parses r's selectors; on error answers 400 and returns -EINVAL. */
int req_filter_parse(struct req *r, struct filter *f);
bool req_filter_match(const json_t *obj, void *arg);
void req_filter_free(struct filter *f);

/* the core's modules, one header each */
#include "proxy/core/audit.h"
#include "proxy/core/cfgwatch.h"
#include "proxy/core/egress.h"
#include "proxy/core/prom.h"
#include "proxy/core/rstore.h"
#include "proxy/core/whclient.h"
#include "proxy/core/status.h"

#endif
