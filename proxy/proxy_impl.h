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
#include "proxy/proxy.h"
#include "proxy/resource.h"
#include "store/store.h"

#define KB_K8S_MAJOR "1"
#define KB_K8S_MINOR "33"
#define KB_K8S_GIT_VERSION "v1.33.0"

struct watch;

struct proxy {
	uv_loop_t *loop;
	store_t *store;
	kb_http_server_t *http;
	char listen[128];
	char advertise[128];
	int port;
	uv_timer_t tick;          /* 1 s: watch timeouts, bookmarks, namespace cleanup */
	struct watch *watches;    /* every open watch stream */
	size_t nwatches;
	bool ns_pending;          /* a namespace is terminating: clean up on tick */
	bool stopping;
};

enum field_validation { FV_WARN = 0, FV_STRICT, FV_IGNORE };
enum include_object { INC_METADATA = 0, INC_OBJECT, INC_NONE };

struct query {
	char *label_selector, *field_selector;
	char *resource_version, *resource_version_match, *cont;
	char *field_manager, *propagation_policy;
	long limit;
	long timeout_seconds;         /* -1 when absent */
	long grace_period;            /* -1 when absent */
	bool watch, allow_bookmarks, dry_run, force, pretty;
	enum field_validation validation;
	enum include_object include;
	char *buf;                    /* owned copy of the raw query */
};

/* One API request being served. */
struct req {
	kb_http_req_t *http;
	struct proxy *px;
	char *segs[12];               /* path segments (decoded, in pathbuf) */
	int nsegs;
	char *pathbuf;
	const char *group, *version, *ns, *name, *sub, *plural;
	const struct proxy_resource *res;
	struct query q;
	bool want_table;
	char user[256];               /* authenticated user name */
	char groups[16][128];         /* authenticated groups */
	int ngroups;
	const char *verb;             /* "get", "list", "watch", "create", ... */
	json_t *warnings;             /* array of strings, or NULL */
	bool as_scale;                /* answer writes with the Scale view */
	time_t now;
};

/* auth.c: authentication. 0 with r->user/r->groups set, or -EACCES (the
 * caller answers 401). */
int auth_authenticate(struct req *r);
/* authz.c: authorization of r->verb on r's resource or path. 0 when allowed;
 * otherwise it has answered (403) and returns -EACCES. */
int authz_authorize(struct req *r);

/* virtual.c: resources that are not stored (reviews, ...): answers POST. */
void virtual_handle(struct req *r);

/* subres.c: subresources served by a module of their own (pods/log,
 * serviceaccounts/token, ...). True when it answered the request. */
bool subres_handle(struct req *r);

/* crd.c: CustomResourceDefinitions turn into resource rows at start-up and
 * whenever one changes. */
int crd_start(struct proxy *px);

/* server.c: frees a request once its response is complete. */
void proxy_req_free(struct req *r);

/* status.c: the one function that turns an error into a Status response. */
void reply_status(struct req *r, int code, const char *reason, const char *message,
		  json_t *details /* stolen, may be NULL */);
void reply_statusf(struct req *r, int code, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Maps a store errno for an object of r->res named `name` to its Status. */
void reply_errno(struct req *r, int err, const char *name);
/* 422 Invalid with causes (stolen). */
void reply_invalid(struct req *r, const char *kind, const char *name, json_t *causes);
/* Builds a Status object (new reference). */
json_t *status_object(int code, const char *reason, const char *message, json_t *details);
void reply_json(struct req *r, int code, const json_t *obj);
void reply_text(struct req *r, int code, const char *content_type, const char *body, size_t len);
/* "pods" or "deployments.apps" as kube names a resource in messages. */
void resource_qualified(const struct proxy_resource *res, char *buf, size_t len);

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
/* Shared write paths used by handlers, namespaces and bootstrap. */
int object_create(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		  json_t **out);

/* objects.c: metadata, defaults and validation. */
void obj_set_str(json_t *obj, const char *path, const char *value);
const char *obj_str(const json_t *obj, const char *path);
json_t *obj_get(const json_t *obj, const char *path);
json_t *obj_meta(json_t *obj);
void obj_init_create(const struct proxy_resource *res, json_t *obj, time_t now);
void obj_defaults(struct proxy *px, const struct proxy_resource *res, json_t *obj);
void obj_default_keys(const struct proxy_resource *res, json_t *obj);
/* Runs metadata + kind validation; on failure answers 422 and returns -EINVAL. */
int obj_validate(struct req *r, const json_t *obj, const json_t *old);
bool obj_spec_changed(const json_t *a, const json_t *b);
int64_t obj_rv(const json_t *obj);

/* watch.c */
void watch_start(struct req *r);
void watch_tick(struct proxy *px);
void watch_close_all(struct proxy *px);

/* discovery.c */
bool discovery_handle(struct req *r);
void discovery_invalidate(void);

/* table.c */
json_t *table_build(struct req *r, json_t *items /* borrowed array */, const char *rv,
		    const char *cont, bool headers);

/* namespace.c */
int ns_bootstrap(struct proxy *px);
/* 0 when the namespace exists and accepts new content, else answers and
 * returns -errno. */
int ns_check_writable(struct req *r, const char *ns, const char *name);
/* Creates what a new namespace holds at once: the default ServiceAccount
 * and the kube-root-ca.crt ConfigMap. */
void ns_created(struct proxy *px, const char *ns);
void ns_tick(struct proxy *px);

#endif
