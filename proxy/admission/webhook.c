/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Dynamic admission: the tenant's MutatingWebhookConfigurations and
 * ValidatingWebhookConfigurations, called as kube-apiserver calls them.
 *
 * What a webhook sees and when, as in kube:
 * - CREATE and UPDATE (PUT, every patch type, the status subresource): the
 *   mutating webhooks one after the other, in the order of their
 *   configurations' names and then of the webhooks within one, each on the
 *   object the ones before shaped (JSONPatch responses); those with
 *   reinvocationPolicy IfNeeded once more when a later one changed the
 *   object. Then the object is validated and the built-in admission chain
 *   runs (LimitRange, Pod Security, the tenant's policy); then every matching
 *   validating webhook, all at once; then ResourceQuota charges the write.
 * - DELETE of one object: the mutating webhooks (their patches have nothing
 *   to apply to), then the validating ones, with the object as oldObject.
 * - A create's mutating webhooks see no uid and no creationTimestamp, and no
 *   name when the request asked for a generated one; the validating ones see
 *   them as they are stored.
 * - Matching: rules (operations, apiGroups, apiVersions, resources with
 *   subresources and wildcards, scope), namespaceSelector (the namespace's
 *   labels; a Namespace's own labels; ignored for other cluster-scoped
 *   objects), objectSelector (the new or the old object's labels). The
 *   configurations themselves are never sent to webhooks.
 * - A call: POST of an AdmissionReview (admission.k8s.io/v1, or v1beta1 when
 *   the webhook names only that) to the url, or to the tenant Service through
 *   its cluster IP with the TLS name <service>.<namespace>.svc, `?timeout=Ns`
 *   added, the caBundle as the only trusted CA (the system's without one).
 * - A refusal answers with the webhook's Status (a code under 400 becomes
 *   400) and kube's words: admission webhook "NAME" denied the request: ...
 *   A webhook that cannot be called, times out or answers nonsense fails the
 *   request with 500 under failurePolicy Fail and is skipped under Ignore
 *   (logged, and noted in the audit event as kube notes it).
 * - Warnings of webhooks reach the client's Warning headers; their audit
 *   annotations the audit event, under "<webhook name>/<key>".
 *
 * DESIGN: the write path is synchronous (handlers.c, objects.c), and a
 * webhook answers later. A request that needs webhooks is suspended where
 * kube would call them (write_validate; delete_one) and owned here (r->async)
 * while the calls run; when they are done the request is served again from
 * its start (its body is still in memory), and the stage it reached lets it
 * pass the webhooks this time: the object the webhooks shaped replaces the
 * one the replay built, with the first pass's generated name, uid and
 * creation time, so what the webhooks saw is what is stored. An update or a
 * delete whose object changed in between (its resourceVersion) goes through
 * the webhooks again, as kube's retried update does. Built-in admission that
 * writes (ResourceQuota's charge) runs as a dry run before the validating
 * webhooks and for real only on the final pass.
 *
 * The configurations are read from the store into an immutable set of
 * parsed webhooks when they changed (a store watch marks it stale); a
 * request holds a reference to the set it started with, so a change of the
 * configurations never pulls a webhook from under a call in flight. Each
 * webhook has its own HTTP client (kept-alive connections), made at its
 * first call.
 *
 * Also: deletecollection (each object's DELETE webhooks at once; a refused
 * object stays), the scale subresource (autoscaling/v1 Scale objects; a
 * webhook's patch of spec.replicas is applied), CONNECT (pods/exec, attach and
 * portforward, with kube's options objects, before the upgrade), CEL
 * matchConditions (vap.c evaluates them), and the writes of the tenant's
 * controllers (webhook_internal: the pods they create, their updates,
 * status updates and deletes).
 *
 * Not done: matchPolicy Equivalent across versions (each resource is served in one
 * version here, so Exact and Equivalent agree; custom resources with several
 * versions match only the version requested), the scale subresource of
 * custom resources.
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/httpc.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/prom.h"
#include "lib/util.h"
#include "proxy/patch/patch.h"
#include "proxy/admission/admission.h"
#include "proxy/model/selector.h"
#include "proxy/admission/vap.h"
#include "proxy/admission/webhook.h"

#define AR_GROUP     "admissionregistration.k8s.io"
#define MWC_KEY      AR_GROUP "/mutatingwebhookconfigurations"
#define VWC_KEY      AR_GROUP "/validatingwebhookconfigurations"
#define MAX_RESTARTS 8
#define MAX_ANSWER   (8u << 20) /* a webhook's answer, patch included */

struct wh_hook {
	bool mutating, fail, reinvoke;
	char *name, *config;
	json_t *def; /* the webhook (owned reference) */
	struct sel_label *ns_sel, *obj_sel;
	unsigned timeout_s;
	const char *review_version; /* "v1" or "v1beta1" */
	struct whc_target t;        /* where it is called (proxy/core/whclient.h) */
	bool bad;                   /* the configuration cannot be called (logged once) */
	struct vap_conds *conds;    /* compiled matchConditions, or NULL */
};

struct wh_set {
	int refs;
	struct wh_hook *hooks; /* mutating first, then validating, each in order */
	size_t n, nmut;
};

struct wh_metric;

struct webhooks {
	struct cfg_watch cw;
	struct wh_set *set;
	struct wh_metric *metrics; /* GET /metrics: kube's admission webhook families */
	struct wh_req *internal;   /* controllers' creates in their webhooks */
};

enum wh_stage { WH_MUTATING = 1, WH_MUTATED, WH_VALIDATING, WH_VALIDATED };

struct wh_req;

struct wh_call {
	struct wh_req *wr;
	size_t hook;
	kb_httpc_req_t *hc;
	char uid[40];
	int64_t start_us;
	int item; /* deletecollection: the object's index in wr->items */
	/* its outcome, for the metrics */
	bool rejected;
	int rejection_code;
	const char *error_type; /* kube's: calling_webhook_error, no_error, ... */
};

struct wh_req {
	struct req_ext ext; /* on r while it is in its webhooks (wh_of) */
	struct req *r;
	struct wh_set *set; /* referenced */
	enum wh_stage stage;
	const char *op; /* CREATE, UPDATE, DELETE */
	json_t *obj;    /* what the webhooks shaped (owned); NULL for DELETE */
	json_t *old;    /* DELETE: the object (owned) */
	json_t *fixed;  /* CREATE: name, uid and creationTimestamp of the first pass */
	int64_t old_rv;
	json_t *options;
	size_t *mut; /* matched mutating hooks; mi: the next to call */
	size_t nmut, mi;
	unsigned *seen; /* per matched mutating hook: mutations when it was last called */
	unsigned mutations;
	int round;
	size_t *val; /* matched validating hooks */
	size_t nval;
	struct wh_call *calls; /* in flight: one (mutating) or nval (validating) */
	size_t ncalls, pending;
	json_t *warnings;     /* array of strings */
	json_t *error;        /* the Status to answer with, or NULL */
	struct wh_call *cur;  /* the call whose answer is being read, or NULL */
	json_t *items;        /* deletecollection: the objects sent (owned), or NULL */
	json_t *refusals;     /* deletecollection: per item, its refusal Status or null */
	webhook_done_fn done; /* a controller's create (r is made up), or NULL */
	const char *kind;     /* the review's kind when not the resource's (CONNECT) */
	bool scale;           /* the scale subresource: Scale objects are sent */
	bool keep;            /* the object is sent but not shaped (DELETE, CONNECT) */
	void *done_arg;
	char *ns;                   /* the namespace r->ns points to (a controller's write) */
	char *name;                 /* the name r->name points to (a controller's write) */
	struct wh_req *next, *prev; /* in webhooks.internal (a controller's create) */
	bool given;                 /* the warnings are in r->warnings (this pass) */
	int restarts;
};

/* ---- the set of configured webhooks ------------------------------------- */

static char *dup_str(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void hook_free(struct wh_hook *h)
{
	whc_target_free(&h->t);
	sel_label_free(h->ns_sel);
	sel_label_free(h->obj_sel);
	vap_conds_free(h->conds);
	json_decref(h->def);
	free(h->name);
	free(h->config);
}

static void metrics_free(struct webhooks *wh);

static void set_unref(struct wh_set *s)
{
	if (!s || --s->refs > 0)
		return;
	for (size_t i = 0; i < s->n; i++)
		hook_free(&s->hooks[i]);
	free(s->hooks);
	free(s);
}

static struct sel_label *selector_of(const json_t *def, const char *key, const char *what)
{
	struct sel_label *s = NULL;
	char err[256];
	json_t *ls = json_object_get(def, key);
	json_t *all = json_is_object(ls) ? json_incref(ls) : json_object(); /* none: {} */
	if (sel_label_from_object(all, &s, err, sizeof(err)) < 0) {
		kb_warn("webhook", "%s: %s: %s", what, key, err);
		s = NULL;
	}
	json_decref(all);
	return s;
}

/* The first review version of the webhook's list that this server speaks. */
static const char *review_version(const json_t *def)
{
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(def, "admissionReviewVersions"), i, v) {
		const char *s = json_string_value(v);
		if (s && (strcmp(s, "v1") == 0 || strcmp(s, "v1beta1") == 0))
			return strcmp(s, "v1") == 0 ? "v1" : "v1beta1";
	}
	return NULL;
}

/* Where the webhook is called: url, or service (namespace, name, port,
 * path). Fills h->t (proxy/core/whclient.h); false when it is unusable. */
static bool hook_target(struct wh_hook *h)
{
	return whc_target_init(&h->t, json_object_get(h->def, "clientConfig"), h->timeout_s) == 0;
}

static void add_hooks(struct wh_set *s, const json_t *configs, bool mutating)
{
	size_t i, j;
	json_t *cfg, *def;
	json_array_foreach (configs, i, cfg) {
		const char *cname = obj_str(cfg, "metadata.name");
		json_array_foreach (json_object_get(cfg, "webhooks"), j, def) {
			struct wh_hook *h = &s->hooks[s->n];
			memset(h, 0, sizeof(*h));
			h->mutating = mutating;
			h->def = json_incref(def);
			h->name = dup_str(json_string_value(json_object_get(def, "name")));
			h->config = dup_str(cname);
			const char *fp = json_string_value(json_object_get(def, "failurePolicy"));
			h->fail = !fp || strcmp(fp, "Ignore") != 0;
			const char *rp =
			    json_string_value(json_object_get(def, "reinvocationPolicy"));
			h->reinvoke = mutating && rp && strcmp(rp, "IfNeeded") == 0;
			json_t *t = json_object_get(def, "timeoutSeconds");
			h->timeout_s = json_is_integer(t) ? (unsigned)json_integer_value(t) : 10;
			if (h->timeout_s < 1 || h->timeout_s > 30)
				h->timeout_s = 10;
			h->review_version = review_version(def);
			h->ns_sel = selector_of(def, "namespaceSelector", h->name ? h->name : "?");
			h->obj_sel = selector_of(def, "objectSelector", h->name ? h->name : "?");
			h->conds = vap_conds_compile(json_object_get(def, "matchConditions"));
			s->n++;
			if (!h->name || !h->config || !h->ns_sel || !h->obj_sel ||
			    !h->review_version || !hook_target(h)) {
				h->bad = true;
				kb_warn("webhook", "%s %s: webhook %s cannot be called",
					mutating ? "MutatingWebhookConfiguration"
						 : "ValidatingWebhookConfiguration",
					cname ? cname : "?", h->name ? h->name : "?");
			}
		}
	}
}

static size_t count_hooks(const json_t *configs)
{
	size_t i, n = 0;
	json_t *cfg;
	json_array_foreach (configs, i, cfg)
		n += json_array_size(json_object_get(cfg, "webhooks"));
	return n;
}

static struct wh_set *load_set(struct proxy *px)
{
	json_t *m = cfg_list(px, MWC_KEY), *v = cfg_list(px, VWC_KEY);
	struct wh_set *s = calloc(1, sizeof(*s));
	size_t n = count_hooks(m) + count_hooks(v);
	if (!s || !m || !v || (n && !(s->hooks = calloc(n, sizeof(*s->hooks))))) {
		free(s);
		s = NULL;
	} else {
		s->refs = 1;
		add_hooks(s, m, true);
		s->nmut = s->n;
		add_hooks(s, v, false);
	}
	json_decref(m);
	json_decref(v);
	return s;
}

/* The current set (the caller takes no reference), reloaded when stale. */
static struct wh_set *current_set(struct proxy *px)
{
	struct webhooks *wh = px->webhooks;
	if (!wh)
		return NULL;
	if (wh->cw.dirty || !wh->set) {
		struct wh_set *s = load_set(px);
		if (!s)
			return wh->set; /* keep the last one; retried on the next write */
		set_unref(wh->set);
		wh->set = s;
		wh->cw.dirty = false;
	}
	return wh->set;
}

static void prom_write(void *arg, struct kb_buf *b);

int webhook_start(struct proxy *px)
{
	struct webhooks *wh = calloc(1, sizeof(*wh));
	if (!wh)
		return -ENOMEM;
	int rc = cfg_watch_start(px, MWC_KEY, VWC_KEY, &wh->cw);
	if (rc < 0) {
		free(wh);
		return rc;
	}
	px->webhooks = wh;
	if (prom_add_source(px, prom_write, px) < 0)
		kb_warn("webhook", "GET /metrics will not show the webhooks' metrics");
	return 0;
}

void webhook_stop(struct proxy *px)
{
	struct webhooks *wh = px->webhooks;
	if (!wh)
		return;
	while (wh->internal) /* their callers are told by proxy_stop's pending list */
		req_free(wh->internal->r);
	cfg_watch_stop(&wh->cw);
	set_unref(wh->set);
	metrics_free(wh);
	free(wh);
	px->webhooks = NULL;
}

/* ---- matching ------------------------------------------------------------ */

struct wh_attrs {
	struct req *r;
	const char *op, *group, *version, *plural, *sub; /* sub: "" for none */
	const char *ns;                                  /* "" for none */
	bool is_namespace;                               /* the object is a Namespace */
	const json_t *obj, *old;
	/* match(): the namespace, read once for every hook that selects on it */
	json_t *ns_obj;
	bool ns_read;
};

static bool in_list(const json_t *list, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach (list, i, v) {
		const char *x = json_string_value(v);
		if (x && (strcmp(x, "*") == 0 || strcmp(x, s) == 0))
			return true;
	}
	return false;
}

static bool resource_in(const json_t *list, const char *plural, const char *sub)
{
	size_t i;
	json_t *v;
	json_array_foreach (list, i, v) {
		const char *x = json_string_value(v);
		if (!x)
			continue;
		if (strcmp(x, "*/*") == 0 || (strcmp(x, "*") == 0 && !*sub))
			return true;
		const char *slash = strchr(x, '/');
		if (!slash) {
			if (!*sub && strcmp(x, plural) == 0)
				return true;
			continue;
		}
		size_t rl = (size_t)(slash - x);
		bool rok = (rl == 1 && x[0] == '*') ||
			   (strlen(plural) == rl && strncmp(x, plural, rl) == 0);
		if (rok && *sub && (strcmp(slash + 1, "*") == 0 || strcmp(slash + 1, sub) == 0))
			return true;
	}
	return false;
}

static bool scope_ok(const char *scope, const struct wh_attrs *a)
{
	if (!scope || strcmp(scope, "*") == 0)
		return true;
	bool cluster = a->is_namespace || !*a->ns;
	if (strcmp(scope, "Cluster") == 0)
		return cluster;
	if (strcmp(scope, "Namespaced") == 0)
		return !cluster;
	return false;
}

bool webhook_rule_matches(const json_t *rule, const char *op, const char *group,
			  const char *version, const char *plural, const char *sub, const char *ns,
			  bool is_namespace)
{
	struct wh_attrs a = {.op = op,
			     .group = group,
			     .version = version,
			     .plural = plural,
			     .sub = sub ? sub : "",
			     .ns = ns ? ns : "",
			     .is_namespace = is_namespace};
	return in_list(json_object_get(rule, "operations"), a.op) &&
	       in_list(json_object_get(rule, "apiGroups"), a.group) &&
	       in_list(json_object_get(rule, "apiVersions"), a.version) &&
	       resource_in(json_object_get(rule, "resources"), a.plural, a.sub) &&
	       scope_ok(json_string_value(json_object_get(rule, "scope")), &a);
}

static bool rules_match(const json_t *def, const struct wh_attrs *a)
{
	size_t i;
	json_t *rule;
	json_array_foreach (json_object_get(def, "rules"), i, rule)
		if (webhook_rule_matches(rule, a->op, a->group, a->version, a->plural, a->sub,
					 a->ns, a->is_namespace))
			return true;
	return false;
}

static const json_t *labels_of(const json_t *obj)
{
	return obj ? obj_get(obj, "metadata.labels") : NULL;
}

static bool namespace_match(struct proxy *px, const struct wh_hook *h, struct wh_attrs *a)
{
	if (sel_label_empty(h->ns_sel))
		return true;
	if (a->is_namespace)
		return sel_label_match(h->ns_sel, labels_of(a->obj ? a->obj : a->old));
	if (!*a->ns)
		return true; /* other cluster-scoped objects: not selected by namespace */
	if (!a->ns_read && store_get(px->store, "/namespaces", "", a->ns, &a->ns_obj) < 0)
		a->ns_obj = NULL;
	a->ns_read = true;
	return sel_label_match(h->ns_sel, labels_of(a->ns_obj));
}

static bool object_match(const struct wh_hook *h, const struct wh_attrs *a)
{
	if (sel_label_empty(h->obj_sel))
		return true;
	return (a->obj && sel_label_match(h->obj_sel, labels_of(a->obj))) ||
	       (a->old && sel_label_match(h->obj_sel, labels_of(a->old)));
}

/* kube's matchConditions: a false one skips the webhook; an error skips it
 * under Ignore and fails the call under Fail (call_start). */
static bool conditions_match(const struct wh_hook *h, const struct wh_attrs *a)
{
	if (!h->conds || !a->r)
		return true;
	char *msg = NULL;
	int rc = vap_conds_eval(h->conds, a->r, a->op, a->obj, a->old, &msg);
	free(msg);
	return rc == 1 || (rc < 0 && h->fail);
}

static bool hook_matches(struct proxy *px, const struct wh_hook *h, struct wh_attrs *a)
{
	return rules_match(h->def, a) && namespace_match(px, h, a) && object_match(h, a) &&
	       conditions_match(h, a);
}

/* kube never sends its admission configuration objects to webhooks. */
static bool exempt(const struct proxy_resource *res)
{
	return strcmp(res->group, AR_GROUP) == 0;
}

static void attrs_of(const struct req *r, const char *op, const json_t *obj, const json_t *old,
		     struct wh_attrs *a)
{
	a->r = (struct req *)r;
	a->op = op;
	a->group = r->res->group;
	a->version = r->res->version;
	a->plural = r->res->plural;
	a->sub = r->sub ? r->sub : "";
	a->is_namespace = !r->res->group[0] && strcmp(r->res->kind, "Namespace") == 0;
	a->ns = r->ns ? r->ns : "";
	if (a->is_namespace && r->name)
		a->ns = r->name; /* kube's request info names a namespace's own */
	a->obj = obj;
	a->old = old;
}

/* Indexes of the hooks in [from, to) of the set that match a; count in *n. */
static size_t *match(struct proxy *px, const struct wh_set *s, size_t from, size_t to,
		     const struct wh_attrs *attrs, size_t *n)
{
	struct wh_attrs a = *attrs;
	size_t *out = NULL;
	*n = 0;
	a.ns_obj = NULL;
	a.ns_read = false;
	for (size_t i = from; i < to; i++) {
		if (!hook_matches(px, &s->hooks[i], &a))
			continue;
		size_t *o = realloc(out, (*n + 1) * sizeof(*o));
		if (!o)
			break;
		out = o;
		out[(*n)++] = i;
	}
	json_decref(a.ns_obj);
	return out;
}

/* ---- the AdmissionReview ------------------------------------------------- */

static json_t *review_of(const struct wh_req *wr, const struct wh_hook *h, const char *uid,
			 const json_t *obj, const json_t *old)
{
	const struct req *r = wr->r;
	const struct proxy_resource *res = r->res;
	/* a subresource's own kind (pods/eviction: policy/v1 Eviction) */
	const struct proxy_subresource *sr = r->sub ? resource_sub(res, r->sub) : NULL;
	bool own = wr->kind && sr && strcmp(sr->kind, wr->kind) == 0;
	json_t *kind = wr->scale ? json_pack("{s:s,s:s,s:s}", "group", "autoscaling", "version",
					     "v1", "kind", "Scale")
				 : json_pack("{s:s,s:s,s:s}", "group", own ? sr->group : res->group,
					     "version", own ? sr->version : res->version, "kind",
					     wr->kind ? wr->kind : res->kind);
	json_t *resource = json_pack("{s:s,s:s,s:s}", "group", res->group, "version", res->version,
				     "resource", res->plural);
	const json_t *named = obj ? obj : old;
	const char *name = r->name ? r->name : named ? obj_str(named, "metadata.name") : NULL;
	json_t *rq = json_pack("{s:s,s:O,s:O,s:O,s:O,s:s,s:o,s:O,s:O,s:b,s:O}", "uid", uid, "kind",
			       kind, "resource", resource, "requestKind", kind, "requestResource",
			       resource, "operation", wr->op, "userInfo", req_user_info(r),
			       "object", obj ? (json_t *)obj : json_null(), "oldObject",
			       old ? (json_t *)old : json_null(), "dryRun", r->q.dry_run, "options",
			       wr->options ? wr->options : json_null());
	if (r->sub) {
		json_object_set_new(rq, "subResource", json_string(r->sub));
		json_object_set_new(rq, "requestSubResource", json_string(r->sub));
	}
	if (name && *name)
		json_object_set_new(rq, "name", json_string(name));
	struct wh_attrs a;
	attrs_of(r, wr->op, NULL, NULL, &a);
	if (*a.ns)
		json_object_set_new(rq, "namespace", json_string(a.ns));
	json_decref(kind);
	json_decref(resource);
	char av[64];
	snprintf(av, sizeof(av), "admission.k8s.io/%s", h->review_version);
	return json_pack("{s:s,s:s,s:o}", "kind", "AdmissionReview", "apiVersion", av, "request",
			 rq);
}

/* ---- metrics ------------------------------------------------------------- */

/* kube's apiserver_admission_webhook_* families, one row per label set. */
enum wh_family { WHM_DURATION, WHM_REQUESTS, WHM_REJECTIONS, WHM_FAIL_OPEN, WHM_FAMILIES };

static const double duration_bounds[] = {0.005, 0.025, 0.1, 0.5, 1, 2.5, 10, 25};
#define NBOUNDS KB_ARRAY_SIZE(duration_bounds)

struct wh_metric {
	struct wh_metric *next;
	enum wh_family family;
	char *values[5];
	uint64_t count;
	uint64_t buckets[NBOUNDS + 1];
	double sum;
};

static const struct {
	const char *name, *type, *help;
	const char *labels[5];
} families[WHM_FAMILIES] = {
    {"apiserver_admission_webhook_admission_duration_seconds",
     "histogram",
     "[STABLE] Admission webhook latency histogram in seconds, identified by name and broken "
     "out for each operation and API resource and type (validate or admit).",
     {"name", "type", "operation", "rejected"}},
    {"apiserver_admission_webhook_request_total",
     "counter",
     "[ALPHA] Admission webhook request total, identified by name and broken out for each "
     "admission type (validating or mutating) and operation. Additional labels specify whether "
     "the request was rejected or not and an HTTP status code. Codes greater than 600 are "
     "truncated to 600, to keep the metrics cardinality bounded.",
     {"name", "type", "operation", "code", "rejected"}},
    {"apiserver_admission_webhook_rejection_count",
     "counter",
     "[ALPHA] Admission webhook rejection count, identified by name and broken out for each "
     "admission type (validating or admit) and operation. Additional labels specify an error "
     "type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error "
     "otherwise) and optionally a non-zero rejection code if the webhook rejects the request "
     "with an HTTP status code (honored by the apiserver when the code is greater or equal to "
     "400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality "
     "bounded.",
     {"name", "type", "operation", "error_type", "rejection_code"}},
    {"apiserver_admission_webhook_fail_open_count",
     "counter",
     "[ALPHA] Admission webhook fail open count, identified by name and broken out for each "
     "admission type (validating or admit).",
     {"name", "type"}},
};

static size_t nlabels(enum wh_family f)
{
	size_t n = 0;
	while (n < 5 && families[f].labels[n])
		n++;
	return n;
}

static struct wh_metric *metric_row(struct webhooks *wh, enum wh_family f, const char *const *v)
{
	size_t n = nlabels(f);
	struct wh_metric *m;
	for (m = wh->metrics; m; m = m->next) {
		size_t i = 0;
		while (m->family == f && i < n && strcmp(m->values[i], v[i]) == 0)
			i++;
		if (m->family == f && i == n)
			return m;
	}
	if (!(m = calloc(1, sizeof(*m))))
		return NULL;
	m->family = f;
	for (size_t i = 0; i < n; i++)
		if (!(m->values[i] = strdup(v[i]))) {
			for (size_t j = 0; j < i; j++)
				free(m->values[j]);
			free(m);
			return NULL;
		}
	m->next = wh->metrics;
	wh->metrics = m;
	return m;
}

static void metric_inc(struct webhooks *wh, enum wh_family f, const char *const *v)
{
	struct wh_metric *m = metric_row(wh, f, v);
	if (m)
		m->count++;
}

/* One call's end in the metrics (kube records each call to a webhook). */
static void record_call(struct wh_req *wr, const struct wh_call *c, long code)
{
	struct webhooks *wh = wr->r->px->webhooks;
	const struct wh_hook *h = &wr->set->hooks[c->hook];
	if (!wh || !h->name)
		return;
	const char *type = h->mutating ? "admit" : "validating";
	const char *rej = c->rejected ? "true" : "false";
	char codes[24], rcode[16];
	snprintf(codes, sizeof(codes), "%ld", code > 600 ? 600 : code);
	snprintf(rcode, sizeof(rcode), "%d", c->rejection_code > 600 ? 600 : c->rejection_code);
	const char *dv[] = {h->name, type, wr->op, rej};
	struct wh_metric *m = metric_row(wh, WHM_DURATION, dv);
	if (m) {
		double secs = c->start_us ? (double)(kb_now_us() - c->start_us) / 1e6 : 0;
		m->buckets[kb_prom_bucket(duration_bounds, NBOUNDS, secs)]++;
		m->sum += secs;
		m->count++;
	}
	const char *qv[] = {h->name, type, wr->op, codes, rej};
	metric_inc(wh, WHM_REQUESTS, qv);
	if (c->rejected) {
		const char *xv[] = {h->name, type, wr->op,
				    c->error_type ? c->error_type : "no_error", rcode};
		metric_inc(wh, WHM_REJECTIONS, xv);
	}
}

/* GET /metrics: kube's apiserver_admission_webhook_* families (admission
 * duration, requests, rejections, fail-open), for the calls made so far. */
static void prom_write(void *arg, struct kb_buf *b)
{
	struct proxy *px = arg;
	struct webhooks *wh = px->webhooks;
	for (int f = 0; wh && f < WHM_FAMILIES; f++) {
		bool any = false;
		for (struct wh_metric *m = wh->metrics; m; m = m->next) {
			if (m->family != (enum wh_family)f)
				continue;
			if (!any)
				kb_prom_family(b, families[f].name, families[f].type,
					       families[f].help);
			any = true;
			const char *l[12];
			size_t n = nlabels(f);
			for (size_t i = 0; i < n; i++) {
				l[2 * i] = families[f].labels[i];
				l[2 * i + 1] = m->values[i];
			}
			if (f == WHM_DURATION)
				kb_prom_histogram(b, families[f].name, l, n, duration_bounds,
						  NBOUNDS, m->buckets, m->sum);
			else
				kb_prom_sample(b, families[f].name, NULL, l, n, (double)m->count);
		}
	}
}

static void metrics_free(struct webhooks *wh)
{
	while (wh->metrics) {
		struct wh_metric *m = wh->metrics;
		wh->metrics = m->next;
		for (size_t i = 0; i < 5; i++)
			free(m->values[i]);
		free(m);
	}
}

/* ---- errors, warnings, audit --------------------------------------------- */

static void set_error(struct wh_req *wr, json_t *status)
{
	if (wr->error)
		json_decref(status);
	else
		wr->error = status;
}

/* kube's ErrCallingWebhook under failurePolicy Fail: 500 InternalError. */
static void call_failed(struct wh_req *wr, const struct wh_hook *h, const char *why)
{
	char msg[3072], cause[3000];
	snprintf(cause, sizeof(cause), "failed calling webhook \"%s\": %s", h->name, why);
	kb_warn("webhook", "%s", cause);
	if (wr->cur) {
		wr->cur->rejected = h->fail;
		wr->cur->error_type = "calling_webhook_error";
	}
	if (!h->fail && wr->r->px->webhooks) {
		const char *fv[] = {h->name, h->mutating ? "admit" : "validating"};
		metric_inc(wr->r->px->webhooks, WHM_FAIL_OPEN, fv);
	}
	if (!h->fail) {
		char key[160], val[1024];
		snprintf(
		    key, sizeof(key), "failed-open.%s.webhook.admission.k8s.io/round_%d_index_%zu",
		    h->mutating ? "mutating" : "validating", wr->round, h->mutating ? wr->mi : 0);
		json_t *v = json_pack("{s:s,s:s}", "configuration", h->config, "webhook", h->name);
		char *d = json_dumps(v, JSON_COMPACT);
		snprintf(val, sizeof(val), "%s", d ? d : "");
		free(d);
		json_decref(v);
		audit_annotate(wr->r, key, val);
		return;
	}
	snprintf(msg, sizeof(msg), "Internal error occurred: %s", cause);
	set_error(wr, reply_status_object(500, "InternalError", msg,
					  json_pack("{s:[{s:s}]}", "causes", "message", cause)));
}

/* kube's webhookerrors.ToStatusErr: the webhook's Status with a code of
 * at least 400, its message (or reason) after kube's words. */
static void denied(struct wh_req *wr, const struct wh_hook *h, const json_t *result)
{
	json_int_t code = json_integer_value(json_object_get(result, "code"));
	if (code < 400)
		code = 400;
	if (wr->cur) {
		wr->cur->rejected = true;
		wr->cur->rejection_code = (int)code;
		wr->cur->error_type = "no_error";
	}
	const char *msg = json_string_value(json_object_get(result, "message"));
	const char *reason = json_string_value(json_object_get(result, "reason"));
	const char *why = msg && *msg ? msg : reason && *reason ? reason : NULL;
	char m[4096];
	snprintf(m, sizeof(m), "admission webhook \"%s\" denied the request%s%s", h->name,
		 why ? ": " : " without explanation", why ? why : "");
	json_t *details = json_object_get(result, "details");
	set_error(wr,
		  reply_status_object((int)code, reason, m,
				      json_is_object(details) ? json_deep_copy(details) : NULL));
}

static void take_extras(struct wh_req *wr, const struct wh_hook *h, const json_t *resp)
{
	size_t i;
	json_t *w;
	json_array_foreach (json_object_get(resp, "warnings"), i, w)
		if (json_is_string(w))
			json_array_append(wr->warnings, w);
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)json_object_get(resp, "auditAnnotations"), k, v) {
		char key[512];
		snprintf(key, sizeof(key), "%s/%s", h->name, k);
		if (json_is_string(v))
			audit_annotate(wr->r, key, json_string_value(v));
	}
}

/* Applies a mutating webhook's JSONPatch to wr->obj (a failure is recorded). */
static void apply_patch(struct wh_req *wr, const struct wh_hook *h, const json_t *resp)
{
	const char *p = json_string_value(json_object_get(resp, "patch"));
	if (!p || !wr->obj || wr->keep)
		return;
	const char *pt = json_string_value(json_object_get(resp, "patchType"));
	char why[1200];
	if (!pt || strcmp(pt, "JSONPatch") != 0) {
		snprintf(why, sizeof(why), "unsupported patch type \"%s\"", pt ? pt : "");
		call_failed(wr, h, why);
		return;
	}
	unsigned char *raw = NULL;
	size_t rl = 0;
	json_t *ops = NULL, *out = NULL;
	json_error_t je;
	char err[1024] = "";
	int rc = kb_base64_decode(p, strlen(p), &raw, &rl);
	if (rc == 0)
		ops = kb_json_loadb((const char *)raw, rl, 0, &je);
	free(raw);
	if (!json_is_array(ops) || patch_json(wr->obj, ops, &out, err, sizeof(err)) < 0 ||
	    !json_is_object(out)) {
		snprintf(why, sizeof(why), "JSONPatch: %s", err[0] ? err : "not a JSON patch");
		json_decref(ops);
		json_decref(out);
		call_failed(wr, h, why);
		if (wr->cur)
			wr->cur->error_type = "apiserver_internal_error";
		return;
	}
	json_decref(ops);
	bool changed = !json_equal(out, wr->obj);
	char key[160], val[1024];
	snprintf(key, sizeof(key), "mutation.webhook.admission.k8s.io/round_%d_index_%zu",
		 wr->round, wr->mi);
	snprintf(val, sizeof(val), "{\"configuration\":\"%s\",\"webhook\":\"%s\",\"mutated\":%s}",
		 h->config, h->name, changed ? "true" : "false");
	audit_annotate(wr->r, key, val);
	if (changed) {
		json_decref(wr->obj);
		wr->obj = out;
		wr->mutations++;
	} else {
		json_decref(out);
	}
}

/* ---- calls ---------------------------------------------------------------- */

static void on_call_done(kb_httpc_req_t *hc, int err, long status, const char *body, size_t len,
			 void *arg);

/* Starts the call of hook `hook` with obj. true when it is in flight;
 * false when it ended at once (its failure is recorded). */
static bool call_start(struct wh_req *wr, struct wh_call *c, size_t hook, const json_t *obj)
{
	struct proxy *px = wr->r->px;
	struct wh_hook *h = &wr->set->hooks[hook];
	char why[2048] = "", ct[600] = "";
	c->wr = wr;
	c->hook = hook;
	c->hc = NULL;
	c->rejected = false;
	c->rejection_code = 0;
	c->error_type = NULL;
	c->start_us = kb_now_us();
	kb_uuid(c->uid);
	wr->cur = c; /* until it is on the wire: a failure now is this call's */
	if (h->bad) {
		call_failed(wr, h, "the webhook's configuration cannot be used");
		record_call(wr, c, 0);
		wr->cur = NULL;
		return false;
	}
	const json_t *prev = wr->items ? json_array_get(wr->items, (size_t)c->item) : wr->old;
	char *cond_err = NULL;
	if (h->conds && vap_conds_eval(h->conds, wr->r, wr->op, obj, prev, &cond_err) < 0) {
		snprintf(why, sizeof(why), "failed to evaluate match conditions: %s",
			 cond_err ? cond_err : "");
		free(cond_err);
		call_failed(wr, h, why);
		record_call(wr, c, 0);
		wr->cur = NULL;
		return false;
	}
	kb_httpc_t *client = whc_client(px, &h->t, "kube-apiserver-admission", why, sizeof(why));
	if (!client ||
	    (h->t.svc_name && whc_service_address(px, &h->t, ct, sizeof(ct), why, sizeof(why)))) {
		call_failed(wr, h, why);
		record_call(wr, c, 0);
		wr->cur = NULL;
		return false;
	}
	const json_t *old = wr->items ? json_array_get(wr->items, (size_t)c->item) : wr->old;
	json_t *review = review_of(wr, h, c->uid, obj, old);
	c->hc = whc_post_json(client, &h->t, ct, review, MAX_ANSWER, on_call_done, c);
	json_decref(review);
	if (!c->hc) {
		call_failed(wr, h, "out of memory");
		record_call(wr, c, 0);
		wr->cur = NULL;
		return false;
	}
	wr->cur = NULL;
	wr->pending++;
	return true;
}

/* The verdict of one answer: a refusal or failure is recorded in wr. */
static void verdict(struct wh_req *wr, struct wh_call *c, int err, const char *peer, long status,
		    const char *body, size_t len)
{
	struct wh_hook *h = &wr->set->hooks[c->hook];
	char why[3000], dial[600];
	if (err) {
		/* kube's dispatcher: ErrCallingWebhook{Reason: "failed to call
		 * webhook: " + the rest client's error}, Go's words for that */
		if (err == -EMSGSIZE)
			snprintf(dial, sizeof(dial), "the answer is larger than 8 MiB");
		else
			whc_dial_error(err, peer, h->t.where, dial, sizeof(dial));
		snprintf(why, sizeof(why), "failed to call webhook: Post \"%s\": %s", h->t.where,
			 dial);
		call_failed(wr, h, why);
		return;
	}
	if (status < 200 || status > 299) {
		snprintf(why, sizeof(why),
			 "failed to call webhook: the server responded with the status code %ld "
			 "but did not return more information",
			 status);
		call_failed(wr, h, why);
		return;
	}
	json_error_t je;
	json_t *doc = kb_json_loadb(body, len, 0, &je);
	json_t *resp = json_object_get(doc, "response");
	const char *uid = json_string_value(json_object_get(resp, "uid"));
	if (!json_is_object(doc)) {
		snprintf(why, sizeof(why), "received invalid webhook response: %s", je.text);
		call_failed(wr, h, why);
	} else if (!json_is_object(resp)) {
		call_failed(wr, h, "received invalid webhook response: response was absent");
	} else if (!uid || strcmp(uid, c->uid) != 0) {
		snprintf(why, sizeof(why),
			 "received invalid webhook response: expected response.uid=\"%s\", got "
			 "\"%s\"",
			 c->uid, uid ? uid : "");
		call_failed(wr, h, why);
	} else if (!json_is_true(json_object_get(resp, "allowed"))) {
		take_extras(wr, h, resp);
		denied(wr, h, json_object_get(resp, "status"));
	} else {
		take_extras(wr, h, resp);
		if (h->mutating)
			apply_patch(wr, h, resp);
	}
	json_decref(doc);
}

static void resume(struct wh_req *wr);
static void restore_fixed(json_t *obj, const json_t *fixed);
static void validate_start(struct wh_req *wr, const json_t *obj);

/*
 * Calls the next matched mutating hook (or hooks due again). true when a
 * call is in flight; false when the mutating stage is over (wr->error may
 * be set).
 */
static bool mutate_next(struct wh_req *wr)
{
	for (;;) {
		if (wr->error)
			return false;
		if (wr->mi == wr->nmut) {
			/* a round is over: once more for IfNeeded hooks that a
			 * later one changed the object after */
			if (wr->round > 0 || !wr->obj || wr->keep)
				return false;
			bool again = false;
			for (size_t i = 0; i < wr->nmut; i++)
				again |= wr->set->hooks[wr->mut[i]].reinvoke &&
					 wr->seen[i] != wr->mutations;
			if (!again)
				return false;
			wr->round = 1;
			wr->mi = 0;
		}
		size_t i = wr->mi;
		if (wr->round > 0 &&
		    (!wr->set->hooks[wr->mut[i]].reinvoke || wr->seen[i] == wr->mutations)) {
			wr->mi++;
			continue;
		}
		struct wh_call *c = &wr->calls[0];
		if (call_start(wr, c, wr->mut[i], wr->obj))
			return true;
		wr->seen[i] = wr->mutations;
		wr->mi++;
	}
}

static void on_call_done(kb_httpc_req_t *hc, int err, long status, const char *body, size_t len,
			 void *arg)
{
	struct wh_call *c = arg;
	struct wh_req *wr = c->wr;
	c->hc = NULL;
	wr->pending--;
	wr->cur = c;
	verdict(wr, c, err, err ? kb_httpc_req_peer(hc) : "", status, body, len);
	wr->cur = NULL;
	record_call(wr, c, err ? 0 : status);
	if (wr->items) { /* deletecollection: a refusal is its object's */
		if (wr->error && json_is_null(json_array_get(wr->refusals, (size_t)c->item)))
			json_array_set(wr->refusals, (size_t)c->item, wr->error);
		json_decref(wr->error);
		wr->error = NULL;
		if (wr->pending == 0) {
			wr->stage = WH_VALIDATED;
			resume(wr);
		}
		return;
	}
	if (wr->stage == WH_MUTATING) {
		wr->seen[wr->mi] = wr->mutations;
		wr->mi++;
		if (mutate_next(wr))
			return;
		/* DELETE, CONNECT and a controller's create: straight on to validating */
		if (!wr->error && (wr->keep || wr->done)) {
			validate_start(wr, wr->obj);
			if (wr->pending)
				return;
		}
		wr->stage = wr->keep || wr->done ? WH_VALIDATED : WH_MUTATED;
		resume(wr);
		return;
	}
	if (wr->pending == 0) {
		wr->stage = WH_VALIDATED;
		resume(wr);
	}
}

/* Starts every matched validating hook on obj (DELETE: NULL). */
static void validate_start(struct wh_req *wr, const json_t *obj)
{
	wr->stage = WH_VALIDATING;
	free(wr->calls);
	wr->calls = calloc(wr->nval ? wr->nval : 1, sizeof(*wr->calls));
	wr->ncalls = wr->nval;
	for (size_t i = 0; wr->calls && i < wr->nval; i++)
		call_start(wr, &wr->calls[i], wr->val[i], obj);
	if (!wr->calls)
		set_error(wr, reply_status_object(500, "InternalError", "out of memory", NULL));
}

/* ---- the request's state -------------------------------------------------- */

static void cancel_calls(struct wh_req *wr)
{
	for (size_t i = 0; wr->calls && i < wr->ncalls; i++)
		if (wr->calls[i].hc) {
			kb_httpc_cancel(wr->calls[i].hc);
			wr->calls[i].hc = NULL;
		}
	wr->pending = 0;
}

static void wr_free(struct wh_req *wr)
{
	if (!wr)
		return;
	if (wr->done && wr->r->px->webhooks)
		KB_LIST_UNLINK(wr->r->px->webhooks->internal, wr);
	cancel_calls(wr);
	set_unref(wr->set);
	json_decref(wr->obj);
	json_decref(wr->old);
	json_decref(wr->fixed);
	json_decref(wr->options);
	json_decref(wr->warnings);
	json_decref(wr->error);
	json_decref(wr->items);
	json_decref(wr->refusals);
	free(wr->mut);
	free(wr->seen);
	free(wr->val);
	free(wr->calls);
	free(wr->ns);
	free(wr->name);
	free(wr);
}

static void wr_ext_free(struct req_ext *e)
{
	wr_free(kb_container_of(e, struct wh_req, ext));
}

/* Where r is in its webhooks, or NULL. */
static struct wh_req *wh_of(const struct req *r)
{
	struct req_ext *e = req_ext_find(r, wr_ext_free);
	return e ? kb_container_of(e, struct wh_req, ext) : NULL;
}

static void wh_set_req(struct req *r, struct wh_req *wr)
{
	wr->ext.free = wr_ext_free;
	req_ext_add(r, &wr->ext);
}

/* Frees r's webhook state (cancels its calls). */
static void webhook_req_free(struct req *r)
{
	struct wh_req *wr = wh_of(r);
	if (wr)
		req_ext_remove(r, &wr->ext);
}

static void on_abort(kb_http_req_t *http, void *arg)
{
	(void)http;
	struct req *r = arg;
	r->http = NULL;
	req_free(r); /* cancels the calls */
}

/* Leaves r to the calls in flight (the handler returns without answer). */
static void suspend(struct wh_req *wr)
{
	wr->r->async = true;
	if (wr->r->http)
		kb_http_req_on_abort(wr->r->http, on_abort, wr->r);
}

static void give_warnings(struct wh_req *wr)
{
	struct req *r = wr->r;
	if (wr->given || json_array_size(wr->warnings) == 0)
		return;
	wr->given = true;
	if (!r->warnings)
		r->warnings = json_array();
	json_array_extend(r->warnings, wr->warnings);
}

static void answer_error(struct wh_req *wr)
{
	struct req *r = wr->r;
	give_warnings(wr);
	json_int_t code = json_integer_value(json_object_get(wr->error, "code"));
	reply_json(r, code >= 400 ? (int)code : 500, wr->error);
}

/* Serves the request again, past the webhooks it has been through. */
static void resume(struct wh_req *wr)
{
	struct req *r = wr->r;
	if (wr->done) {
		const char *msg = json_string_value(json_object_get(wr->error, "message"));
		if (wr->obj)
			restore_fixed(wr->obj, wr->fixed);
		wr->done(wr->done_arg, wr->error ? -EACCES : 0, wr->obj, msg);
		req_free(r);
		return;
	}
	json_decref(r->warnings);
	r->warnings = NULL;
	wr->given = false;
	if (!wr->error) {
		req_resume(r);
		return;
	}
	kb_http_req_on_abort(r->http, NULL, NULL);
	r->async = false;
	answer_error(wr);
	req_free(r);
}

static json_t *options_of(const struct req *r, const char *op, const json_t *delete_doc)
{
	const char *kind = strcmp(op, "CREATE") == 0   ? "CreateOptions"
			   : strcmp(op, "UPDATE") == 0 ? "UpdateOptions"
						       : "DeleteOptions";
	json_t *o = json_is_object(delete_doc) ? json_deep_copy(delete_doc) : json_object();
	json_object_set_new(o, "kind", json_string(kind));
	json_object_set_new(o, "apiVersion", json_string("meta.k8s.io/v1"));
	if (r->q.dry_run && !json_object_get(o, "dryRun"))
		json_object_set_new(o, "dryRun", json_pack("[s]", "All"));
	if (strcmp(op, "DELETE") != 0 && r->q.field_manager && *r->q.field_manager)
		json_object_set_new(o, "fieldManager", json_string(r->q.field_manager));
	if (strcmp(op, "DELETE") == 0) {
		if (r->q.grace_period >= 0 && !json_object_get(o, "gracePeriodSeconds"))
			json_object_set_new(o, "gracePeriodSeconds",
					    json_integer(r->q.grace_period));
		if (r->q.propagation_policy && !json_object_get(o, "propagationPolicy"))
			json_object_set_new(o, "propagationPolicy",
					    json_string(r->q.propagation_policy));
	}
	return o;
}

static struct wh_req *wr_new(struct req *r, struct wh_set *s, const char *op)
{
	struct wh_req *wr = calloc(1, sizeof(*wr));
	if (!wr)
		return NULL;
	wr->r = r;
	wr->set = s;
	s->refs++;
	wr->op = op;
	wr->warnings = json_array();
	return wr;
}

/* Whether r may meet webhooks at all: the set, or NULL. */
static struct wh_set *set_for(struct req *r)
{
	if (exempt(r->res))
		return NULL;
	struct wh_set *s = current_set(r->px);
	return s && s->n ? s : NULL;
}

/* The server-set fields of a create, kept from the first pass. */
static json_t *fixed_of(const json_t *obj)
{
	json_t *f = json_object();
	const char *k[] = {"name", "uid", "creationTimestamp"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(k); i++) {
		json_t *v = obj_get(obj, k[i][0] == 'n'   ? "metadata.name"
					 : k[i][0] == 'u' ? "metadata.uid"
							  : "metadata.creationTimestamp");
		if (v)
			json_object_set(f, k[i], v);
	}
	return f;
}

/* A create's server-set fields of the first pass back into obj (a
 * webhook's name stays when it gave one). */
static void restore_fixed(json_t *obj, const json_t *fixed)
{
	json_t *m = obj_meta(obj);
	const char *name = json_string_value(json_object_get(m, "name"));
	json_t *v;
	if ((!name || !*name) && (v = json_object_get(fixed, "name")))
		json_object_set(m, "name", v);
	if ((v = json_object_get(fixed, "uid")))
		json_object_set(m, "uid", v);
	if ((v = json_object_get(fixed, "creationTimestamp")))
		json_object_set(m, "creationTimestamp", v);
}

/* Replaces obj's members with wr->obj's, then the server-set fields. */
static void take_shaped(struct wh_req *wr, json_t *obj, const json_t *old)
{
	if (wr->scale) { /* what a Scale can change: the replicas */
		json_t *rep = obj_get(wr->obj, "spec.replicas");
		if (rep)
			scale_set(wr->r->res, obj, rep);
		return;
	}
	json_t *shaped = json_deep_copy(wr->obj);
	json_object_clear(obj);
	json_object_update(obj, shaped);
	json_decref(shaped);
	if (old) {
		obj_keep_server_meta(old, obj);
		return;
	}
	restore_fixed(obj, wr->fixed);
}

/* The object a create's mutating webhooks see: no uid, no creation time,
 * no generated name (kube generates and sets them after). */
static json_t *create_view(const json_t *obj, bool gen_name)
{
	json_t *o = json_deep_copy(obj);
	json_t *m = obj_meta(o);
	json_object_del(m, "uid");
	json_object_del(m, "creationTimestamp");
	if (gen_name)
		json_object_del(m, "name");
	return o;
}

/*
 * Starts the stages of a new wr whose matches are set: the mutating
 * webhooks, then, for objects not shaped here (straight: DELETE, CONNECT,
 * a controller's create), the validating ones. 1 when calls are in flight
 * (r suspended), 0 when every webhook ended at once (wr->error may be set),
 * or -ENOMEM.
 */
static int stages_start(struct wh_req *wr, bool straight)
{
	wr->seen = calloc(wr->nmut ? wr->nmut : 1, sizeof(*wr->seen));
	wr->calls = calloc(1, sizeof(*wr->calls));
	wr->ncalls = 1;
	if (!wr->seen || !wr->calls)
		return -ENOMEM;
	wr->stage = WH_MUTATING;
	if (mutate_next(wr)) {
		suspend(wr);
		return 1;
	}
	if (straight && !wr->error) {
		validate_start(wr, wr->obj);
		if (wr->pending) {
			suspend(wr);
			return 1;
		}
	}
	return 0;
}

/* stages_start for a request being served: 1 suspended; 0 when every
 * webhook ended at once and allowed it; or it has answered (500, or the
 * refusal) and returns < 0. */
static int stages_run(struct wh_req *wr, bool straight, bool ready)
{
	int rc = ready ? stages_start(wr, straight) : -ENOMEM;
	if (rc < 0) {
		reply_status(wr->r, 500, "InternalError", "out of memory", NULL);
		return rc;
	}
	if (rc)
		return 1;
	if (wr->error) {
		answer_error(wr);
		return -EACCES;
	}
	return 0;
}

/* Starts the mutating stage of a new wr whose matches are set. */
static int mutate_begin(struct req *r, struct wh_req *wr, json_t *obj, const json_t *old)
{
	wr->old_rv = old ? obj_rv(old) : 0;
	wr->fixed = old ? NULL : fixed_of(obj);
	wr->old = !old ? NULL : wr->scale ? scale_view(r->res, old) : json_deep_copy(old);
	wr->options = options_of(r, wr->op, NULL);
	wr->obj = !old        ? create_view(obj, !old && r->generated_name)
		  : wr->scale ? scale_view(r->res, obj)
			      : json_deep_copy(obj);
	int rc = stages_run(wr, false, wr->obj && wr->options);
	if (rc)
		return rc;
	wr->stage = WH_MUTATED;
	take_shaped(wr, obj, old);
	give_warnings(wr);
	return 0;
}

int webhook_mutate(struct req *r, json_t *obj, const json_t *old)
{
	struct wh_req *wr = wh_of(r);
	int restarts = 0;
	if (wr && wr->old_rv == (old ? obj_rv(old) : 0)) {
		take_shaped(wr, obj, old);
		give_warnings(wr);
		return 0;
	}
	if (wr) { /* changed since the webhooks saw it: through them again */
		restarts = wr->restarts + 1;
		webhook_req_free(r);
		if (restarts > MAX_RESTARTS) {
			reply_errno(r, -ESTALE, r->name);
			return -ESTALE;
		}
	}
	struct wh_set *s = set_for(r);
	if (!s)
		return 0;
	const char *op = old ? "UPDATE" : "CREATE";
	bool scale = old && r->as_scale;
	json_t *sv = scale ? scale_view(r->res, obj) : NULL;
	json_t *so = scale ? scale_view(r->res, old) : NULL;
	struct wh_attrs a;
	attrs_of(r, op, scale ? sv : obj, scale ? so : old, &a);
	size_t nm = 0, nv = 0;
	size_t *m = match(r->px, s, 0, s->nmut, &a, &nm);
	/* without mutating webhooks the object stays as it is: its validating
	 * matches now are those after them (webhook_validation_ahead) */
	size_t *v = nm ? NULL : match(r->px, s, s->nmut, s->n, &a, &nv);
	json_decref(sv);
	json_decref(so);
	if (!nm && !nv) {
		free(m);
		free(v);
		return 0;
	}
	if (!(wr = wr_new(r, s, op))) {
		free(m);
		free(v);
		reply_status(r, 500, "InternalError", "out of memory", NULL);
		return -ENOMEM;
	}
	wh_set_req(r, wr);
	wr->restarts = restarts;
	wr->scale = scale;
	wr->mut = m;
	wr->nmut = nm;
	wr->val = v;
	wr->nval = nv;
	return mutate_begin(r, wr, obj, old);
}

bool webhook_validation_ahead(struct req *r, const json_t *obj, const json_t *old)
{
	struct wh_req *wr = wh_of(r);
	if (!wr || wr->stage != WH_MUTATED)
		return false;
	if (!wr->val) {
		struct wh_attrs a;
		attrs_of(r, wr->op, wr->scale ? wr->obj : obj, wr->scale ? wr->old : old, &a);
		wr->val = match(r->px, wr->set, wr->set->nmut, wr->set->n, &a, &wr->nval);
		if (!wr->nval)
			wr->stage = WH_VALIDATED;
	}
	return wr->stage == WH_MUTATED;
}

int webhook_validate(struct req *r, const json_t *obj)
{
	struct wh_req *wr = wh_of(r);
	if (!wr || wr->stage != WH_MUTATED)
		return 0;
	json_t *sv = wr->scale ? scale_view(r->res, obj) : NULL;
	validate_start(wr, sv ? sv : obj); /* the reviews are written by now */
	json_decref(sv);
	if (wr->pending) {
		suspend(wr);
		return 1;
	}
	if (wr->error) {
		answer_error(wr);
		return -EACCES;
	}
	wr->stage = WH_VALIDATED;
	return 0;
}

/* DELETE and CONNECT: webhooks that see the object but do not shape it
 * (obj: CONNECT's options; old: DELETE's object; both borrowed; options
 * stolen). 0 to go on, 1 suspended, < 0 answered. */
static int unshaped(struct req *r, const char *op, const char *kind, const json_t *obj,
		    const json_t *old, json_t *options, int restarts)
{
	struct wh_set *s = set_for(r);
	if (!s) {
		json_decref(options);
		return 0;
	}
	struct wh_attrs a;
	attrs_of(r, op, obj, old, &a);
	size_t nm = 0, nv = 0;
	size_t *m = match(r->px, s, 0, s->nmut, &a, &nm);
	size_t *v = match(r->px, s, s->nmut, s->n, &a, &nv);
	struct wh_req *wr = (nm || nv) ? wr_new(r, s, op) : NULL;
	if (!wr) {
		free(m);
		free(v);
		json_decref(options);
		if (!nm && !nv)
			return 0;
		reply_status(r, 500, "InternalError", "out of memory", NULL);
		return -ENOMEM;
	}
	wh_set_req(r, wr);
	wr->restarts = restarts;
	wr->kind = kind;
	wr->keep = true;
	wr->mut = m;
	wr->nmut = nm;
	wr->val = v;
	wr->nval = nv;
	wr->obj = obj ? json_deep_copy(obj) : NULL;
	wr->old = old ? json_deep_copy(old) : NULL;
	wr->old_rv = old ? obj_rv(old) : 0;
	wr->options = options;
	int rc = stages_run(wr, true, true);
	if (rc)
		return rc;
	wr->stage = WH_VALIDATED;
	give_warnings(wr);
	return 0;
}

int webhook_delete(struct req *r, const json_t *obj, const json_t *delete_doc)
{
	if (!r->name)
		return 0; /* deletecollection: webhook_delete_collection called them */
	struct wh_req *wr = wh_of(r);
	if (wr && wr->old_rv == obj_rv(obj) && wr->stage == WH_VALIDATED) {
		give_warnings(wr);
		return 0;
	}
	int restarts = wr ? wr->restarts + 1 : 0;
	webhook_req_free(r);
	if (restarts > MAX_RESTARTS) {
		reply_errno(r, -ESTALE, r->name);
		return -ESTALE;
	}
	return unshaped(r, "DELETE", NULL, NULL, obj, options_of(r, "DELETE", delete_doc),
			restarts);
}

int webhook_connect(struct req *r, const json_t *opts)
{
	struct wh_req *wr = wh_of(r);
	if (wr && wr->stage == WH_VALIDATED) {
		give_warnings(wr);
		return 0;
	}
	webhook_req_free(r);
	return unshaped(r, "CONNECT", json_string_value(json_object_get(opts, "kind")), opts, NULL,
			NULL, 0);
}

int webhook_create_unshaped(struct req *r, const json_t *obj)
{
	struct wh_req *wr = wh_of(r);
	if (wr && wr->stage == WH_VALIDATED) {
		give_warnings(wr);
		return 0;
	}
	webhook_req_free(r);
	/* the row's kind: a static string that outlives a suspended request */
	const struct proxy_subresource *sr = r->sub ? resource_sub(r->res, r->sub) : NULL;
	return unshaped(r, "CREATE", sr ? sr->kind : NULL, obj, NULL, options_of(r, "CREATE", NULL),
			0);
}

/* ---- writes of the tenant's controllers ------------------------------------ */

bool webhook_configured(struct proxy *px, const struct proxy_resource *res)
{
	struct wh_set *s = current_set(px);
	return s && s->n && !exempt(res);
}

int webhook_internal(struct proxy *px, const struct proxy_resource *res, const char *op,
		     const char *sub, json_t *obj, const json_t *old, const char *manager,
		     webhook_done_fn done, void *arg)
{
	if (!webhook_configured(px, res))
		return 0;
	struct wh_set *s = current_set(px);
	struct req *r = req_controller(px, res, manager);
	if (!r)
		return -ENOMEM;
	bool create = strcmp(op, "CREATE") == 0;
	const json_t *named = obj ? obj : old;
	const char *ns = res->namespaced ? obj_str(named, "metadata.namespace") : NULL;
	const char *name = create ? NULL : obj_str(named, "metadata.name");
	struct wh_attrs a;
	struct wh_req *wr = NULL;
	size_t nm = 0, nv = 0, *m = NULL, *v = NULL;
	char *nsc = ns ? strdup(ns) : NULL, *namec = name ? strdup(name) : NULL;
	r->ns = nsc;
	r->name = namec;
	r->sub = sub;
	/* a controller's write through the scale subresource (the HPA's):
	 * the webhooks see autoscaling/v1 Scale objects, as for a client's */
	bool scale = !create && obj && sub && strcmp(sub, "scale") == 0;
	json_t *sv = scale ? scale_view(res, obj) : NULL;
	json_t *so = scale ? scale_view(res, old) : NULL;
	if (scale && (!sv || !so)) {
		json_decref(sv);
		json_decref(so);
		free(nsc);
		free(namec);
		req_free(r);
		return -ENOMEM;
	}
	attrs_of(r, op, scale ? sv : obj, scale ? so : old, &a);
	m = match(px, s, 0, s->nmut, &a, &nm);
	v = match(px, s, s->nmut, s->n, &a, &nv);
	if ((!nm && !nv) || (ns && !nsc) || (name && !namec) || !(wr = wr_new(r, s, op))) {
		int rc = (!nm && !nv) ? 0 : -ENOMEM;
		free(m);
		free(v);
		free(nsc);
		free(namec);
		json_decref(sv);
		json_decref(so);
		req_free(r);
		return rc;
	}
	wh_set_req(r, wr);
	wr->ns = nsc;
	wr->name = namec;
	wr->done = done;
	KB_LIST_PUSH(px->webhooks->internal, wr);
	wr->done_arg = arg;
	wr->mut = m;
	wr->nmut = nm;
	wr->val = v;
	wr->nval = nv;
	wr->options = options_of(r, op, NULL);
	bool ready = wr->options != NULL;
	if (create) {
		wr->fixed = fixed_of(obj);
		wr->obj = create_view(obj, false);
		ready = ready && wr->fixed && wr->obj;
	} else if (scale) {
		wr->scale = true;
		wr->obj = sv; /* the done callback gets the shaped Scale */
		wr->old = so;
		wr->old_rv = obj_rv(old);
		ready = ready && wr->obj && wr->old;
	} else {
		wr->obj = obj ? json_deep_copy(obj) : NULL;
		wr->old = json_deep_copy(old);
		wr->old_rv = obj_rv(old);
		wr->keep = !obj; /* a DELETE: sent, not shaped */
		ready = ready && (!obj || wr->obj) && wr->old;
	}
	int rc = ready ? stages_start(wr, true) : -ENOMEM;
	if (rc) {
		if (rc < 0)
			req_free(r);
		return rc;
	}
	/* every call ended at once: done() is called now */
	wr->stage = WH_VALIDATED;
	resume(wr);
	return 1;
}

/* ---- deletecollection --------------------------------------------------- */

/* Whether item (uid and resourceVersion) was sent in wr's round. */
static ssize_t checked_index(const struct wh_req *wr, const json_t *item)
{
	size_t i;
	json_t *x;
	json_array_foreach (wr->items, i, x)
		if (obj_str(x, "metadata.uid") && obj_str(item, "metadata.uid") &&
		    strcmp(obj_str(x, "metadata.uid"), obj_str(item, "metadata.uid")) == 0 &&
		    obj_rv(x) == obj_rv(item))
			return (ssize_t)i;
	return -1;
}

int webhook_delete_collection(struct req *r, const json_t *items, const json_t *delete_doc)
{
	struct wh_req *wr = wh_of(r);
	struct wh_set *s = set_for(r);
	size_t i;
	json_t *item;
	if (!s) {
		webhook_req_free(r);
		return 0;
	}
	/* the objects webhooks want to see: every one of them, this round */
	json_t *want = json_array(), *wmatch = json_array();
	json_array_foreach (items, i, item) {
		struct wh_attrs a;
		attrs_of(r, "DELETE", NULL, item, &a);
		size_t n = 0;
		free(match(r->px, s, 0, s->n, &a, &n));
		if (n &&
		    !(wr && wr->items && wr->stage == WH_VALIDATED && checked_index(wr, item) >= 0))
			json_array_append(want, item);
		if (n)
			json_array_append(wmatch, item);
	}
	if (json_array_size(want) == 0) {
		json_decref(want);
		json_decref(wmatch);
		if (wr)
			give_warnings(wr);
		return 0; /* none, or every one already through them */
	}
	json_decref(want);
	int restarts = wr ? wr->restarts + 1 : 0;
	webhook_req_free(r);
	if (restarts > MAX_RESTARTS) {
		json_decref(wmatch);
		reply_errno(r, -ESTALE, NULL);
		return -ESTALE;
	}
	if (!(wr = wr_new(r, s, "DELETE"))) {
		json_decref(wmatch);
		reply_status(r, 500, "InternalError", "out of memory", NULL);
		return -ENOMEM;
	}
	wh_set_req(r, wr);
	wr->restarts = restarts;
	wr->keep = true;
	wr->items = wmatch;
	wr->refusals = json_array();
	wr->options = options_of(r, "DELETE", delete_doc);
	/* each object's webhooks, all at once (their patches are not applied) */
	size_t ncalls = 0;
	struct wh_call *calls = NULL;
	json_array_foreach (wmatch, i, item) {
		json_array_append_new(wr->refusals, json_null());
		struct wh_attrs a;
		attrs_of(r, "DELETE", NULL, item, &a);
		size_t n = 0, *m = match(r->px, s, 0, s->n, &a, &n);
		struct wh_call *more = n ? realloc(calls, (ncalls + n) * sizeof(*calls)) : calls;
		if (n && !more) {
			free(m);
			break;
		}
		calls = more;
		for (size_t k = 0; k < n; k++) {
			memset(&calls[ncalls], 0, sizeof(*calls));
			calls[ncalls].item = (int)i;
			calls[ncalls++].hook = m[k];
		}
		free(m);
	}
	wr->calls = calls;
	wr->ncalls = ncalls;
	wr->stage = WH_VALIDATING;
	for (i = 0; i < ncalls; i++) {
		struct wh_call *c = &calls[i];
		size_t hook = c->hook;
		if (!call_start(wr, c, hook, NULL)) {
			if (wr->error &&
			    json_is_null(json_array_get(wr->refusals, (size_t)c->item)))
				json_array_set(wr->refusals, (size_t)c->item, wr->error);
			json_decref(wr->error);
			wr->error = NULL;
		}
	}
	if (wr->pending) {
		suspend(wr);
		return 1;
	}
	wr->stage = WH_VALIDATED;
	give_warnings(wr);
	return 0;
}

const json_t *webhook_collection_refusal(struct req *r, const json_t *item)
{
	struct wh_req *wr = wh_of(r);
	if (!wr || !wr->items)
		return NULL;
	ssize_t i = checked_index(wr, item);
	const json_t *st = i >= 0 ? json_array_get(wr->refusals, (size_t)i) : NULL;
	return json_is_object(st) ? st : NULL;
}
