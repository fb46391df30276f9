/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The syncer's control loop (see syncer.h for the glossary and DESIGN):
 * tenant store watches -> host writes; host informers -> tenant status,
 * events, nodes and deletions; resync compares both sides.
 *
 * State: `pods` maps a host name to what we know of its tenant pod
 * ({ns, name, uid, refs, node, creating, deleting}); `refs` counts the
 * tracked pods using each tenant ConfigMap/Secret ("ConfigMap/ns/name");
 * `nodes` counts the tracked pods bound to each host node; `sas` maps
 * "ns/serviceaccount" to {ns, sa, users, due}: the tracked pods mounting that
 * account's token and when its host Secret is refreshed next (0: retry at
 * the next resync); `sa_auto` caches the ServiceAccounts pods name
 * ("ns/sa" -> {automountServiceAccountToken}; existing accounts only, dropped
 * at each change of the account); `svc_env` caches each namespace's Service
 * variables (ns -> env array, service_env), all dropped when the Services
 * mirror's generation moves (any tenant or host Service event, a relist):
 * a list of the namespace's Services per pod create was a sixth of the
 * syncer's instructions per pod. All of it can be rebuilt from both sides,
 * which is what a resync after restart does.
 *
 * A pod entry also remembers the tenant pod as its last watch event showed
 * it (tuid, tstatus, tnode; gone while the pod is being deleted), so a host
 * pod event that changes nothing the tenant pod shows (most of them: the
 * ADDED after our create, host-side metadata changes) costs no read of the
 * tenant store.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/json.h"
#include "lib/kubeconfig.h"
#include "lib/log.h"
#include "lib/prom.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

#include "lib/addrfilter.h"

#define RESYNC_MS 30000
/* Service-account tokens mounted in host pods live an hour, like the
 * kubelet's projected tokens, and are replaced at 80 % of their life. */
#define SA_TOKEN_TTL     3600
#define SA_REFRESH_AFTER (SA_TOKEN_TTL * 8 / 10)

struct syncer {
	uv_loop_t *loop;
	store_t *store;
	char tenant[64], host_ns[64], queue[128], advertise[128], sa_secret[8];
	char pod_dns[64], domain[254];
	char dns_svc[64]; /* --pod-dns names a host Service: its cluster IP, once read */
	char api_svc[64]; /* --api-service: the host Service of the tenant API */
	bool svc_asking, api_known;
	struct syncer_xlate x;
	kb_httpc_t *http;
	unsigned pipes, max_pipes; /* exec/attach/port-forward sessions piped to the host */
	/* passthroughs in flight, ended by syncer_stop before the host client
	 * goes (their tenant requests' abort callbacks would reach freed memory) */
	struct log_pass *logs;
	struct pipe *pipe_list;
	struct host_informer *pods_inf, *events_inf;
	struct host_informer *workloads_inf; /* Kueue's Workloads (kueue profile) */
	struct host_informer *quotas_inf;    /* the host namespace's ResourceQuotas */
	struct host_classes *classes;
	struct syncer_mirror *pvcs, *svcs; /* syncer_pvc_kind, syncer_service_kind */
	struct syncer_mirror *netpols;     /* syncer_netpol_kind (netpol.c) */
	store_watch_t *w_ns;               /* tenant Namespaces, for netpols */
	json_t *namespaces;                /* s->x.namespaces */
	store_watch_t *w_np;               /* tenant NetworkPolicies, for pods' isolation */
	json_t *netpol_list;               /* every tenant NetworkPolicy */
	struct syncer_pv *pvs;             /* the bound claims' volumes (pv.c) */
	struct host_metrics *metrics;      /* the host's metrics API (metrics.c) */
	struct syncer_groups *groups;      /* host group objects of gangs (gang.c) */
	struct syncer_ledger *ledger;      /* GPU allocation ledger (ledger.c) */
	long ledger_retention_s;
	const char *prices_file; /* opts' (borrowed) */
	store_watch_t *w_pods, *w_cms, *w_secrets, *w_sas;
	uv_timer_t resync;
	json_t *pods, *refs, *nodes, *sas, *sa_auto;
	json_t *svc_env; /* ns -> Service variables (service_env) */
	/* the last account's token Secret name (sa_secret_name): a hash each */
	char sa_memo_ns[64], sa_memo_sa[254], sa_memo_name[SYNCER_NAME_MAX + 1];
	bool sa_memo_ok;
	unsigned long svc_env_gen; /* syncer_mirror_gen(svcs) svc_env is of */
	int (*issue_token)(void *, const char *, const char *, long, char **);
	int (*issue_pod_token)(void *, const struct syncer_token_req *, char **, long *);
	void *token_arg;
	void (*metrics_changed)(void *, bool);
	void *metrics_arg;
	char pods_path[256], sel[160];
	int64_t gpu_quota_milli;         /* the policy's, <= 0: none (gangs above it are refused) */
	json_t *host_quotas;             /* the host namespace's ResourceQuotas (last read) */
	bool quotas_asking, quotas_read; /* read: answered once (any answer) */
	bool host_synced, stopping;
	struct syncer_stats stats;
};

static void resync(struct syncer *s);

/* ---- small helpers -------------------------------------------------------------- */

static json_t *host_pod(struct syncer *s, const char *hn)
{
	return json_object_get(host_informer_cache(s->pods_inf), hn);
}

/*
 * hn gets the host name of tenant pod ns/name (uid NULL: any): its
 * translated name, unless the host has no pod there and has this very pod
 * (annotations: tenant, ns, name, uid) under the name an older Kubicle gave
 * it, which it then keeps (adopted: a running pod is never recreated for a
 * rename; syncer_host_name_legacy). "" when it has none.
 */
static void pod_host_name(struct syncer *s, const char *ns, const char *name, const char *uid,
			  char *hn)
{
	char old[SYNCER_NAME_MAX + 1];
	json_t *hp;
	if (syncer_host_name(ns, name, s->tenant, hn, SYNCER_NAME_MAX + 1) < 0) {
		hn[0] = '\0';
		return;
	}
	if (host_pod(s, hn) || syncer_host_name_legacy(ns, name, s->tenant, old, sizeof(old)) < 0 ||
	    strcmp(old, hn) == 0 || !(hp = host_pod(s, old)) ||
	    !syncer_host_is(hp, s->tenant, ns, name, uid))
		return;
	snprintf(hn, SYNCER_NAME_MAX + 1, "%s", old);
}

static void pod_hn(struct syncer *s, const json_t *pod, char *hn)
{
	pod_host_name(s, meta_str(pod, "namespace"), meta_str(pod, "name"),
		      meta_str(pod, "uid") ? meta_str(pod, "uid") : "", hn);
}

/* ---- conflicts --------------------------------------------------------------------- */

/* A host object under a tenant object's host name that is not exactly its
 * (another tenant's, or one whose kubicle.dev/ labels and annotations name
 * another object): the syncer does not touch it, logs it, and the tenant
 * object gets a Warning event, once per refusal (a repeat counts up). */
void syncer_conflict(store_t *st, const char *tenant, const char *kind, const char *ns,
		     const char *name, const char *uid, const json_t *host)
{
	const json_t *meta = json_object_get(host, "metadata");
	const char *other = jstr(json_object_get(meta, "labels"), LBL_TENANT);
	const char *hn = jstr(meta, "name");
	char msg[600];
	snprintf(msg, sizeof(msg),
		 "host %s %s exists and is not this object's (%s%s%s): not updated, adopted or "
		 "deleted",
		 kind, hn ? hn : "", other ? "tenant " : "no kubicle.dev/tenant label",
		 other ? other : "", other && strcmp(other, tenant) == 0 ? ", another object" : "");
	kb_warn("syncer", "%s %s/%s: %s", kind, ns ? ns : "", name ? name : "", msg);
	syncer_record_event(st, ns ? ns : "", kind, name, uid, "Warning", "HostNameConflict", msg,
			    "host-conflict", NULL);
}

struct conflict_get {
	store_t *st;
	char tenant[64], kind[32], ns[64], name[256], uid[64];
};

static void on_conflict_get(int err, long status, json_t *body, void *arg)
{
	struct conflict_get *g = arg;
	if (!err && status == 200 && !syncer_host_is(body, g->tenant, g->ns, g->name, NULL))
		syncer_conflict(g->st, g->tenant, g->kind, g->ns, g->name, g->uid, body);
	free(g);
}

void syncer_check_conflict(kb_httpc_t *http, store_t *st, const char *path, const char *tenant,
			   const char *kind, const char *ns, const char *name, const char *uid)
{
	struct conflict_get *g = calloc(1, sizeof(*g));
	if (!g)
		return;
	g->st = st;
	snprintf(g->tenant, sizeof(g->tenant), "%s", tenant);
	snprintf(g->kind, sizeof(g->kind), "%s", kind);
	snprintf(g->ns, sizeof(g->ns), "%s", ns ? ns : "");
	snprintf(g->name, sizeof(g->name), "%s", name ? name : "");
	snprintf(g->uid, sizeof(g->uid), "%s", uid ? uid : "");
	if (host_call(http, "GET", path, NULL, on_conflict_get, g) < 0)
		free(g);
}

static void set_meta_new(json_t *obj, time_t now)
{
	char uid[40], ts[40];
	kb_uuid(uid);
	kb_time_rfc3339(now, ts, sizeof(ts));
	json_t *m = json_object_get(obj, "metadata");
	json_object_set_new(m, "uid", json_string(uid));
	json_object_set_new(m, "creationTimestamp", json_string(ts));
}

int syncer_store_put(store_t *st, const char *res, const char *ns, const char *name, json_t *obj,
		     const json_t *old)
{
	json_t *m = json_object_get(obj, "metadata");
	if (!old) {
		set_meta_new(obj, time(NULL));
		return store_create(st, res, ns, name, obj, NULL);
	}
	json_t *om = json_object_get(old, "metadata");
	json_object_set(m, "uid", json_object_get(om, "uid"));
	json_object_set(m, "creationTimestamp", json_object_get(om, "creationTimestamp"));
	return store_update(st, res, ns, name, obj, 0, NULL);
}

/* ---- ConfigMaps and Secrets ------------------------------------------------------ */

static const char *cfg_res(const char *kind)
{
	return strcmp(kind, "ConfigMap") == 0 ? "/configmaps" : "/secrets";
}

static const char *cfg_plural(const char *kind)
{
	return strcmp(kind, "ConfigMap") == 0 ? "configmaps" : "secrets";
}

/*
 * Host copies of ConfigMaps and Secrets (and token Secrets): created, or
 * replaced when one exists that is exactly ours (syncer_host_is: our tenant,
 * the same tenant object by namespace and name; a copy of an older object of
 * that name, another uid, is replaced too), with its resourceVersion, so
 * that nothing written in between is overwritten. Any other object of that
 * name is a conflict: left alone (syncer_conflict).
 */
struct cfg_put {
	struct syncer *s;
	json_t *obj;
	char path[512];
};

static void cfg_put_free(struct cfg_put *p)
{
	json_decref(p->obj);
	free(p);
}

/* The tenant object a host copy names (kind, ns, name, uid: borrowed from
 * obj's annotations). */
static const char *ann_of(const json_t *obj, const char *key)
{
	const char *v = jstr(json_object_get(json_object_get(obj, "metadata"), "annotations"), key);
	return v ? v : "";
}

static void on_cfg_put(int err, long status, json_t *body, void *arg)
{
	struct cfg_put *p = arg;
	if (err || status >= 300)
		kb_info("syncer", "host PUT %s: %s (HTTP %ld)", p->path,
			err ? strerror(-err) : "refused", status);
	cfg_put_free(p);
}

static void on_cfg_get(int err, long status, json_t *body, void *arg)
{
	struct cfg_put *p = arg;
	struct syncer *s = p->s;
	const char *ns = ann_of(p->obj, ANN_NAMESPACE), *name = ann_of(p->obj, ANN_NAME);
	if (err || status != 200 || s->stopping) {
		cfg_put_free(p); /* gone meanwhile: the next push creates it */
		return;
	}
	if (!syncer_host_is(body, s->tenant, ns, name, NULL)) {
		syncer_conflict(s->store, s->tenant, ann_of(p->obj, ANN_KIND), ns, name,
				ann_of(p->obj, ANN_UID), body);
		cfg_put_free(p);
		return;
	}
	json_object_set(json_object_get(p->obj, "metadata"), "resourceVersion",
			json_object_get(json_object_get(body, "metadata"), "resourceVersion"));
	if (host_call(s->http, "PUT", p->path, p->obj, on_cfg_put, p) < 0)
		cfg_put_free(p);
}

static void on_cfg_post(int err, long status, json_t *body, void *arg)
{
	struct cfg_put *p = arg;
	if (!err && status == 409 && !p->s->stopping) { /* exists: whose? */
		if (host_call(p->s->http, "GET", p->path, NULL, on_cfg_get, p) == 0)
			return;
	} else if (err || status >= 300) {
		kb_info("syncer", "host POST %s: %s (HTTP %ld)", p->path,
			err ? strerror(-err) : "refused", status);
	}
	cfg_put_free(p);
}

/* Creates or replaces host object h (stolen) of kind ConfigMap or Secret. */
static void host_upsert(struct syncer *s, const char *kind, json_t *h)
{
	struct cfg_put *p = h ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		json_decref(h);
		return;
	}
	p->s = s;
	p->obj = h;
	snprintf(p->path, sizeof(p->path), "/api/v1/namespaces/%s/%s/%s", s->host_ns,
		 cfg_plural(kind), meta_str(h, "name"));
	char post[512];
	snprintf(post, sizeof(post), "/api/v1/namespaces/%s/%s", s->host_ns, cfg_plural(kind));
	if (host_call(s->http, "POST", post, h, on_cfg_post, p) < 0)
		cfg_put_free(p);
}

/* Creates or replaces the host copy of tenant config kind/ns/name. */
static void cfg_push(struct syncer *s, const char *kind, const char *ns, const char *name)
{
	json_t *obj = NULL;
	if (store_get(s->store, cfg_res(kind), ns, name, &obj) < 0)
		return;
	json_t *h = syncer_translate_config(&s->x, obj, kind);
	json_decref(obj);
	host_upsert(s, kind, h);
}

static void host_delete_path(struct syncer *s, const char *path, long grace, const char *uid)
{
	json_t *opts = json_pack("{s:s,s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
	if (grace >= 0)
		json_object_set_new(opts, "gracePeriodSeconds", json_integer(grace));
	if (uid)
		json_object_set_new(opts, "preconditions", json_pack("{s:s}", "uid", uid));
	host_call(s->http, "DELETE", path, opts, NULL, NULL);
	s->stats.host_deletes++;
	json_decref(opts);
}

/* Deletes host object `path` when it is exactly ours, a copy of tenant
 * object kind ns/name (any uid), with its uid as a precondition; another
 * object there is a conflict, left alone. */
struct owned_delete {
	struct syncer *s;
	char path[512], kind[32], ns[64], name[256];
	bool quiet; /* another object there is no conflict (a legacy name) */
};

static void on_owned_get(int err, long status, json_t *body, void *arg)
{
	struct owned_delete *d = arg;
	struct syncer *s = d->s;
	if (!err && status == 200 && !s->stopping) {
		if (syncer_host_is(body, s->tenant, d->ns, d->name, NULL))
			host_delete_path(s, d->path, -1, meta_str(body, "uid"));
		else if (!d->quiet)
			syncer_conflict(s->store, s->tenant, d->kind, d->ns, d->name, NULL, body);
	}
	free(d);
}

static void host_delete_owned(struct syncer *s, const char *path, const char *kind, const char *ns,
			      const char *name, bool quiet)
{
	struct owned_delete *d = calloc(1, sizeof(*d));
	if (!d)
		return;
	d->s = s;
	d->quiet = quiet;
	snprintf(d->path, sizeof(d->path), "%s", path);
	snprintf(d->kind, sizeof(d->kind), "%s", kind);
	snprintf(d->ns, sizeof(d->ns), "%s", ns ? ns : "");
	snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
	if (host_call(s->http, "GET", path, NULL, on_owned_get, d) < 0)
		free(d);
}

static void cfg_ref(struct syncer *s, const json_t *refs, const char *ns, int delta)
{
	size_t i;
	json_t *r;
	json_array_foreach (refs, i, r) {
		char key[600];
		snprintf(key, sizeof(key), "%s/%s/%s", jstr(r, "kind"), ns, jstr(r, "name"));
		json_int_t n = json_integer_value(json_object_get(s->refs, key)) + delta;
		if (n > 0) {
			json_object_set_new(s->refs, key, json_integer(n));
			if (delta > 0 && n == 1)
				cfg_push(s, jstr(r, "kind"), ns, jstr(r, "name"));
			continue;
		}
		json_object_del(s->refs, key);
		/* the copy, and one an older Kubicle named otherwise (which pods
		 * it started still mount until then) */
		char hn[SYNCER_NAME_MAX + 1], old[SYNCER_NAME_MAX + 1], path[512];
		const char *kind = jstr(r, "kind"), *name = jstr(r, "name");
		if (syncer_host_name(ns, name, s->tenant, hn, sizeof(hn)) < 0)
			continue;
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/%s/%s", s->host_ns,
			 cfg_plural(kind), hn);
		host_delete_owned(s, path, kind, ns, name, false);
		if (syncer_host_name_legacy(ns, name, s->tenant, old, sizeof(old)) == 0 &&
		    strcmp(old, hn) != 0) {
			snprintf(path, sizeof(path), "/api/v1/namespaces/%s/%s/%s", s->host_ns,
				 cfg_plural(kind), old);
			host_delete_owned(s, path, kind, ns, name, true);
		}
	}
}

static void on_cfg_event(const struct store_event *ev, void *arg)
{
	struct syncer *s = arg;
	const char *kind = strcmp(ev->res, "/configmaps") == 0 ? "ConfigMap" : "Secret";
	char key[600];
	snprintf(key, sizeof(key), "%s/%s/%s", kind, ev->ns, ev->name);
	if (!json_object_get(s->refs, key) || ev->type == STORE_DELETED)
		return; /* a deleted config stays on the host while pods use it */
	cfg_push(s, kind, ev->ns, ev->name);
}

/* ---- service-account tokens --------------------------------------------------------- */

/* The service account whose token tenant pod `pod` mounts, or NULL (none,
 * or no token issuer). Borrowed from pod. */
static const char *pod_sa(struct syncer *s, const json_t *pod)
{
	if (!s->issue_token)
		return NULL;
	const json_t *spec = json_object_get(pod, "spec");
	const char *ns = meta_str(pod, "namespace"), *name = jstr(spec, "serviceAccountName");
	char key[600];
	name = name && *name ? name : "default";
	snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
	json_t *sa = json_object_get(s->sa_auto, key);
	if (sa)
		return syncer_pod_sa(pod, sa);
	if (store_get(s->store, "/serviceaccounts", ns, name, &sa) == 0) {
		json_t *keep = json_object(); /* what syncer_pod_sa reads of it */
		json_t *a = json_object_get(sa, "automountServiceAccountToken");
		if (a)
			json_object_set(keep, "automountServiceAccountToken", a);
		json_object_set_new(s->sa_auto, key, keep);
	}
	const char *r = syncer_pod_sa(pod, sa);
	json_decref(sa);
	return r;
}

/* A ServiceAccount changed: its cached automount setting goes. */
static void on_sa_event(const struct store_event *ev, void *arg)
{
	struct syncer *s = arg;
	char key[600];
	snprintf(key, sizeof(key), "%s/%s", ev->ns ? ev->ns : "", ev->name);
	json_object_del(s->sa_auto, key);
}

/* Issues a fresh token for entry e of s->sas and creates or replaces its
 * host Secret. On failure (e.g. the account does not exist yet) the next
 * resync tries again. */
static void sa_push(struct syncer *s, json_t *e)
{
	const char *ns = jstr(e, "ns"), *sa = jstr(e, "sa");
	char *jwt = NULL, *ca = NULL;
	json_t *obj = NULL;
	int rc = s->issue_token(s->token_arg, ns, sa, SA_TOKEN_TTL, &jwt);
	if (rc < 0) {
		kb_info("syncer", "token for service account %s/%s: %s", ns, sa, strerror(-rc));
		json_object_set_new(e, "due", json_integer(0));
		return;
	}
	store_kv_get(s->store, "ca.crt", &ca); /* the tenant CA pods verify us with */
	store_get(s->store, "/serviceaccounts", ns, sa, &obj);
	host_upsert(s, "Secret", syncer_sa_secret(&s->x, ns, sa, meta_str(obj, "uid"), jwt, ca));
	json_object_set_new(e, "due", json_integer((json_int_t)time(NULL) + SA_REFRESH_AFTER));
	json_decref(obj);
	free(ca);
	free(jwt);
}

/* One more (delta +1) or one fewer tracked pod mounting ns/sa's token: the
 * first pushes the host Secret, the last deletes it. */
static void sa_ref(struct syncer *s, const char *ns, const char *sa, int delta)
{
	if (!sa)
		return;
	char key[600];
	snprintf(key, sizeof(key), "%s/%s", ns, sa);
	json_t *e = json_object_get(s->sas, key);
	if (!e && delta > 0) {
		e = json_pack("{s:s,s:s,s:i,s:i}", "ns", ns, "sa", sa, "users", 0, "due", 0);
		json_object_set_new(s->sas, key, e);
	}
	if (!e)
		return;
	json_int_t n = json_integer_value(json_object_get(e, "users")) + delta;
	json_object_set_new(e, "users", json_integer(n));
	if (delta > 0 && n == 1) {
		sa_push(s, e);
		return;
	}
	if (n > 0)
		return;
	char hn[SYNCER_NAME_MAX + 1], path[512];
	if (syncer_sa_secret_name(ns, sa, s->tenant, hn, sizeof(hn)) == 0) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", s->host_ns, hn);
		host_delete_owned(s, path, "ServiceAccount", ns, sa, false);
	}
	json_object_del(s->sas, key);
}

static bool ptok_tracked(struct syncer *s, const char *ns, const char *name, const char *uid);

/* Our host token Secrets whose account no tracked pod uses (the last pod
 * went while the syncer was down), and projected-token Secrets of no tracked
 * pod, are deleted. */
static void on_sa_secrets(int err, long status, json_t *body, void *arg)
{
	struct syncer *s = arg;
	size_t i;
	json_t *sec;
	if (err || status != 200 || s->stopping)
		return;
	json_array_foreach (json_object_get(body, "items"), i, sec) {
		const char *ns, *name, *uid, *hn = meta_str(sec, "name");
		const json_t *ann =
		    json_object_get(json_object_get(sec, "metadata"), "annotations");
		const char *kind = jstr(ann, ANN_KIND);
		char key[600], path[512];
		bool ptok = kind && strcmp(kind, SYNCER_POD_TOKEN_KIND) == 0;
		if (!hn || !kind || (!ptok && strcmp(kind, "ServiceAccount") != 0) ||
		    !syncer_host_owner(sec, s->tenant, &ns, &name, &uid))
			continue;
		snprintf(key, sizeof(key), "%s/%s", ns, name);
		if (ptok ? ptok_tracked(s, ns, name, uid) : json_object_get(s->sas, key) != NULL)
			continue;
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", s->host_ns, hn);
		host_delete_path(s, path, -1, meta_str(sec, "uid"));
	}
}

/* Resync: replaces tokens at 80 % of their life, retries failed ones and
 * looks for orphaned token Secrets. */
static void sa_refresh(struct syncer *s)
{
	const char *k;
	json_t *e;
	json_int_t now = (json_int_t)time(NULL);
	json_object_foreach (s->sas, k, e) {
		if (json_integer_value(json_object_get(e, "due")) <= now)
			sa_push(s, e);
	}
	if (!s->issue_token)
		return;
	char path[512];
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets?labelSelector=%s", s->host_ns,
		 s->sel);
	host_call(s->http, "GET", path, NULL, on_sa_secrets, s);
}

/* ---- projected service-account tokens (hostrefs.c) -------------------------------------
 * A tenant pod's projected serviceAccountToken sources get tenant tokens of
 * their audience and expiry, bound to the pod, in one host Secret per pod
 * (syncer_pod_token_name; its name in the pod entry's "ptok"). The Secret
 * is written again when its first token is due, as the kubelet would
 * replace it (syncer_token_refresh_after; ptok_due; the resync looks every
 * 30 s, and a token lives at least 10 minutes); the host kubelet updates
 * the projected files of a changed Secret. The Secret goes with the pod's
 * entry (untrack); one left by a syncer that stopped is found by
 * on_sa_secrets.
 */

/* The service account of a pod's projected tokens: its own, whatever its
 * automount setting (kube's volume plugin asks for the pod's account). */
static const char *pod_token_sa(const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec");
	const char *sa = jstr(spec, "serviceAccountName");
	if (!sa || !*sa)
		sa = jstr(spec, "serviceAccount");
	return sa && *sa ? sa : "default";
}

/* buf gets the host Secret name of pod's projected tokens; false when it
 * has none, or there is no issuer (the sources are then dropped). */
static bool pod_token_secret(struct syncer *s, const json_t *pod, char *buf)
{
	if (!s->issue_pod_token)
		return false;
	json_t *toks = syncer_pod_tokens(pod);
	bool any = json_array_size(toks) > 0;
	json_decref(toks);
	return any && syncer_pod_token_name(meta_str(pod, "namespace"), meta_str(pod, "name"),
					    meta_str(pod, "uid"), s->tenant, buf,
					    SYNCER_NAME_MAX + 1) == 0;
}

/* Issues every projected token of tenant pod `pod` (entry st) and writes
 * its host Secret; the entry's ptok_due says when next (0: the next resync,
 * after a failure). */
static void ptok_push(struct syncer *s, json_t *st, const json_t *pod)
{
	json_t *toks = syncer_pod_tokens(pod), *data = json_object(), *e;
	long next = SYNCER_TOKEN_MAX_AGE;
	int rc = 0;
	size_t i;
	json_array_foreach (toks, i, e) {
		struct syncer_token_req rq = {.ns = meta_str(pod, "namespace"),
					      .sa = pod_token_sa(pod),
					      .audience = jstr(e, "audience"),
					      .ttl_seconds = (long)json_integer_value(
						  json_object_get(e, "expirationSeconds")),
					      .pod = meta_str(pod, "name"),
					      .pod_uid = meta_str(pod, "uid")};
		char *jwt = NULL;
		long ttl = 0;
		if ((rc = s->issue_pod_token(s->token_arg, &rq, &jwt, &ttl)) < 0)
			break;
		json_object_set_new(data, jstr(e, "key"), json_string(jwt));
		free(jwt);
		long after = syncer_token_refresh_after(ttl);
		next = after < next ? after : next;
	}
	json_int_t due = 0;
	if (rc < 0)
		kb_info("syncer", "projected token of pod %s/%s: %s", meta_str(pod, "namespace"),
			meta_str(pod, "name"), strerror(-rc));
	else if (json_array_size(toks)) {
		host_upsert(s, "Secret", syncer_pod_token_secret(&s->x, pod, data));
		due = (json_int_t)time(NULL) + next;
	}
	json_object_set_new(st, "ptok_due", json_integer(due));
	json_decref(data);
	json_decref(toks);
}

/* Resync: the token Secrets due for new tokens. */
static void ptok_refresh(struct syncer *s)
{
	const char *hn;
	json_t *st;
	json_int_t now = (json_int_t)time(NULL);
	json_object_foreach (s->pods, hn, st) {
		json_t *pod = NULL;
		if (!jstr(st, "ptok") ||
		    json_integer_value(json_object_get(st, "ptok_due")) > now ||
		    store_get(s->store, "/pods", jstr(st, "ns"), jstr(st, "name"), &pod) < 0)
			continue;
		if (meta_str(pod, "uid") && strcmp(meta_str(pod, "uid"), jstr(st, "uid")) == 0 &&
		    !meta_str(pod, "deletionTimestamp"))
			ptok_push(s, st, pod);
		json_decref(pod);
	}
}

/* Whether host token Secret `sec` (ours, of kind SYNCER_POD_TOKEN_KIND, of
 * tenant pod ns/name/uid) belongs to a tracked pod. */
static bool ptok_tracked(struct syncer *s, const char *ns, const char *name, const char *uid)
{
	char hn[SYNCER_NAME_MAX + 1];
	pod_host_name(s, ns, name, uid, hn);
	json_t *st = hn[0] ? json_object_get(s->pods, hn) : NULL;
	return st && jstr(st, "ptok") && strcmp(jstr(st, "uid"), uid) == 0;
}

/* The kubelet's Service variables for a pod of namespace ns: the Services
 * of its namespace as they are now, as the kubelet reads them when it
 * starts a container, and only those the host has (a Service made with the
 * pod may not be there yet, and its address would not work: as in kube, a
 * Service that comes after the pod is not in its environment). New
 * reference or NULL. */
/* The Service variables of namespace ns's Services that the host has (with
 * the host's cluster IP), as kubelet's getServiceEnvVarMap gives them; new
 * reference or NULL. Cached per namespace while no Service changed on
 * either side (svc_env). */
static json_t *service_env(struct syncer *s, const char *ns)
{
	if (!ns)
		return NULL;
	if (s->svc_env_gen != syncer_mirror_gen(s->svcs)) {
		json_object_clear(s->svc_env);
		s->svc_env_gen = syncer_mirror_gen(s->svcs);
	}
	json_t *env = json_object_get(s->svc_env, ns);
	if (env)
		return json_incref(env);
	struct store_list_req lr = {.res = "/services", .ns = ns};
	struct store_list_result res = {0};
	if (store_list(s->store, &lr, &res) < 0)
		return NULL;
	for (size_t i = json_array_size(res.items); i-- > 0;)
		if (!syncer_svcs_on_host(s->svcs, json_array_get(res.items, i)))
			json_array_remove(res.items, i);
	env = syncer_service_env(res.items);
	json_decref(res.items);
	free(res.next);
	if (env)
		json_object_set(s->svc_env, ns, env);
	return env;
}

/* Claims an older Kubicle named otherwise keep that name (adopted,
 * syncer_mirror_name): host pod hp's volumes of tenant pod `pod` name it. */
static void adopted_claims(struct syncer *s, const json_t *pod, json_t *hp)
{
	const char *ns = meta_str(pod, "namespace");
	json_t *hvols = json_object_get(json_object_get(hp, "spec"), "volumes"), *v, *hv;
	size_t i, j;
	json_array_foreach (json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
		const char *claim = jstr(json_object_get(v, "persistentVolumeClaim"), "claimName");
		json_t *pvc = NULL;
		char hn[SYNCER_NAME_MAX + 1];
		if (!claim || store_get(s->store, "/persistentvolumeclaims", ns, claim, &pvc) < 0)
			continue;
		syncer_mirror_name(s->pvcs, pvc, hn);
		json_decref(pvc);
		json_array_foreach (hvols, j, hv) {
			json_t *src = json_object_get(hv, "persistentVolumeClaim");
			if (hn[0] && src &&
			    kb_json_same(json_object_get(hv, "name"), json_object_get(v, "name")))
				json_object_set_new(src, "claimName", json_string(hn));
		}
	}
}

/* The host pod for tenant pod `pod` mounting service account sa's token
 * Secret (sa NULL: none). `starts`: containers will start from this
 * translation (a create, or ephemeral containers added), so they get the
 * Service variables, which cost a list of the namespace's Services; the
 * comparisons of updates and resyncs do without. New reference or NULL. */
/* The host pod's LBL_INGRESS_ISOLATED and LBL_EGRESS_ISOLATED: whether a
 * tenant NetworkPolicy isolates the tenant pod, so that the platform's
 * policies that let the tenant's pods reach each other and the allowed
 * networks select it only when no tenant policy does (the tenant's deny
 * policies then hold on the host as in the tenant). */
static void mark_isolation(struct syncer *s, const json_t *pod, json_t *hp)
{
	bool in = false, eg = false;
	json_t *labels = json_object_get(json_object_get(hp, "metadata"), "labels");
	if (!json_is_object(labels))
		return;
	syncer_netpol_isolation(s->netpol_list, pod, &in, &eg);
	json_object_set_new(labels, LBL_INGRESS_ISOLATED, json_string(in ? "true" : "false"));
	json_object_set_new(labels, LBL_EGRESS_ISOLATED, json_string(eg ? "true" : "false"));
}

/* syncer_sa_secret_name of ns/sa, remembered for the next pod (a burst's
 * pods share their account); NULL when it has none. */
static const char *sa_secret_name(struct syncer *s, const char *ns, const char *sa)
{
	bool fits =
	    ns && sa && strlen(ns) < sizeof(s->sa_memo_ns) && strlen(sa) < sizeof(s->sa_memo_sa);
	if (fits && s->sa_memo_ok && strcmp(ns, s->sa_memo_ns) == 0 &&
	    strcmp(sa, s->sa_memo_sa) == 0)
		return s->sa_memo_name;
	s->sa_memo_ok = false;
	if (syncer_sa_secret_name(ns, sa, s->tenant, s->sa_memo_name, sizeof(s->sa_memo_name)) < 0)
		return NULL;
	if (fits) {
		snprintf(s->sa_memo_ns, sizeof(s->sa_memo_ns), "%s", ns);
		snprintf(s->sa_memo_sa, sizeof(s->sa_memo_sa), "%s", sa);
		s->sa_memo_ok = true;
	}
	return s->sa_memo_name;
}

static json_t *translate(struct syncer *s, const json_t *pod, const char *sa, json_t *refs,
			 bool starts)
{
	char tn[SYNCER_NAME_MAX + 1];
	s->x.sa_secret = sa_secret_name(s, meta_str(pod, "namespace"), sa);
	s->x.token_secret = pod_token_secret(s, pod, tn) ? tn : NULL;
	json_t *env = starts ? service_env(s, meta_str(pod, "namespace")) : NULL;
	s->x.service_env = env;
	json_t *hp = syncer_translate_pod(&s->x, pod, refs);
	s->x.sa_secret = NULL;
	s->x.token_secret = NULL;
	s->x.service_env = NULL;
	mark_isolation(s, pod, hp);
	json_decref(env);
	if (starts)
		adopted_claims(s, pod, hp);
	/* a class only the tenant has: the host pod gets the host's default */
	json_t *spec = json_object_get(hp, "spec");
	if (!syncer_class_on_host(s->store, jstr(spec, "priorityClassName")))
		json_object_del(spec, "priorityClassName");
	return hp;
}

/* ---- tenant Nodes ---------------------------------------------------------------- */

static void on_node_get(int err, long status, json_t *body, void *arg)
{
	struct syncer *s = arg;
	if (err || status != 200 || s->stopping)
		return;
	const char *name = meta_str(body, "name");
	if (!name || !json_object_get(s->nodes, name))
		return;
	json_t *n = syncer_translate_node(body, s->tenant);
	json_t *old = NULL;
	store_get(s->store, "/nodes", "", name, &old);
	syncer_store_put(s->store, "/nodes", "", name, n, old);
	json_decref(old);
	json_decref(n);
}

static void node_ref(struct syncer *s, const char *node, int delta)
{
	if (!node || !*node)
		return;
	json_int_t n = json_integer_value(json_object_get(s->nodes, node)) + delta;
	if (n > 0) {
		json_object_set_new(s->nodes, node, json_integer(n));
		if (delta > 0 && n == 1) {
			char path[300];
			snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
			host_call(s->http, "GET", path, NULL, on_node_get, s);
		}
		return;
	}
	json_object_del(s->nodes, node);
	json_t *old = NULL;
	if (store_get(s->store, "/nodes", "", node, &old) == 0 &&
	    jstr(json_object_get(json_object_get(old, "metadata"), "annotations"),
		 "kubicle.dev/host-node"))
		store_delete(s->store, "/nodes", "", node, 0, NULL, NULL);
	json_decref(old);
}

/* ---- tracked pods ------------------------------------------------------------------ */

/* A tracked pod's entry {ns, name, uid, refs (stolen), node ""}; built
 * directly (json_pack's format parsing was 8 k instructions a pod), with
 * json_pack's answer when ns or name is missing. */
static json_t *tracked_new(const char *ns, const char *name, const char *uid, json_t *refs)
{
	if (!ns || !name)
		return json_pack("{s:s,s:s,s:s,s:o,s:s}", "ns", ns, "name", name, "uid",
				 uid ? uid : "", "refs", refs, "node", "");
	json_t *st = json_object();
	json_object_set_new_nocheck(st, "ns", json_string(ns));
	json_object_set_new_nocheck(st, "name", json_string(name));
	json_object_set_new_nocheck(st, "uid", json_string(uid ? uid : ""));
	json_object_set_new_nocheck(st, "refs", refs);
	json_object_set_new_nocheck(st, "node", json_string(""));
	return st;
}

static json_t *track(struct syncer *s, const json_t *pod, const char *hn, json_t **host_out)
{
	json_t *st = json_object_get(s->pods, hn);
	if (st)
		return st;
	json_t *refs = json_array();
	const char *sa = pod_sa(s, pod);
	json_t *hp = translate(s, pod, sa, refs, host_out != NULL);
	if (!hp) {
		json_decref(refs);
		return NULL;
	}
	const char *ns = meta_str(pod, "namespace");
	st = tracked_new(ns, meta_str(pod, "name"), meta_str(pod, "uid"), refs);
	if (sa)
		json_object_set_new(st, "sa", json_string(sa));
	json_object_set_new(s->pods, hn, st);
	s->stats.pods = json_object_size(s->pods);
	cfg_ref(s, refs, ns, +1);
	sa_ref(s, ns, sa, +1);
	char tn[SYNCER_NAME_MAX + 1];
	if (pod_token_secret(s, pod, tn)) {
		json_object_set_new(st, "ptok", json_string(tn));
		ptok_push(s, st, pod);
	}
	if (host_out)
		*host_out = hp;
	else
		json_decref(hp);
	return st;
}

static void untrack(struct syncer *s, const char *hn)
{
	json_t *st = json_object_get(s->pods, hn);
	if (!st)
		return;
	cfg_ref(s, json_object_get(st, "refs"), jstr(st, "ns"), -1);
	sa_ref(s, jstr(st, "ns"), jstr(st, "sa"), -1);
	node_ref(s, jstr(st, "node"), -1);
	if (jstr(st, "ptok")) {
		char path[512];
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", s->host_ns,
			 jstr(st, "ptok"));
		host_delete_owned(s, path, SYNCER_POD_TOKEN_KIND, jstr(st, "ns"), jstr(st, "name"),
				  false);
	}
	syncer_groups_release(s->groups, hn); /* its group goes after its last pod */
	json_object_del(s->pods, hn);
	s->stats.pods = json_object_size(s->pods);
}

/* ---- host pod create / delete ------------------------------------------------------ */

struct pod_call {
	struct syncer *s;
	char hn[SYNCER_NAME_MAX + 1];
};

static void on_pod_created(int err, long status, json_t *body, void *arg)
{
	struct pod_call *pc = arg;
	struct syncer *s = pc->s;
	json_t *st = s->stopping ? NULL : json_object_get(s->pods, pc->hn);
	if (st)
		json_object_set_new(st, "creating", json_false());
	if (st && !err && status == 409 && !host_pod(s, pc->hn)) {
		/* there, and not (yet) in our informer: ours being listed, or
		 * another tenant's or object's, which is never touched */
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", s->pods_path, pc->hn);
		syncer_check_conflict(s->http, s->store, path, s->tenant, "Pod", jstr(st, "ns"),
				      jstr(st, "name"), jstr(st, "uid"));
	}
	if (!st || err || status == 201 || status == 200 || status == 409) {
		free(pc);
		return;
	}
	kb_info("syncer", "host refused pod %s: HTTP %ld %s", pc->hn, status,
		jstr(body, "message") ? jstr(body, "message") : "");
	if (status >= 400 && status < 500 && status != 429)
		syncer_record_event(s->store, jstr(st, "ns"), "Pod", jstr(st, "name"),
				    jstr(st, "uid"), "Warning", "FailedCreate",
				    jstr(body, "message") ? jstr(body, "message")
							  : "the host refused the pod",
				    "host", NULL);
	free(pc);
}

static void lookup_host_services(struct syncer *s);

/* The tenant's default/kubernetes Service gets the cluster IP of the host
 * Service that serves the tenant API (--api-service), as vCluster's does:
 * kubernetes.default.svc, in the tenant's DNS, is then the tenant API for
 * host pods, not the host's. */
static void set_api_address(struct syncer *s, const char *ip)
{
	json_t *svc = NULL;
	if (store_get(s->store, "/services", "default", "kubernetes", &svc) < 0)
		return;
	json_t *spec = json_object_get(svc, "spec");
	const char *have = jstr(spec, "clusterIP");
	if (json_is_object(spec) && !(have && strcmp(have, ip) == 0)) {
		json_object_set_new(spec, "clusterIP", json_string(ip));
		json_object_set_new(spec, "clusterIPs", json_pack("[s]", ip));
		if (store_update(s->store, "/services", "default", "kubernetes", svc, 0, NULL) == 0)
			kb_info("syncer", "kubernetes.default is %s (host Service %s)", ip,
				s->api_svc);
	}
	json_decref(svc);
}

/* A host Service of --pod-dns or --api-service, with its cluster IP. */
static void on_host_service(int err, long status, json_t *body, void *arg)
{
	struct syncer *s = arg;
	s->svc_asking = false;
	if (s->stopping)
		return;
	const char *ip = jstr(json_object_get(body, "spec"), "clusterIP");
	const char *name = meta_str(body, "name");
	if (err || status != 200 || !kb_is_ip(ip) || !name) {
		kb_warn("syncer", "host Service %s has no cluster IP yet (HTTP %ld)%s",
			s->dns_svc[0] && !s->x.pod_dns ? s->dns_svc : s->api_svc, status,
			s->dns_svc[0] && !s->x.pod_dns ? "; pods wait" : "");
		return;
	}
	if (strcmp(name, s->api_svc) == 0) {
		s->api_known = true;
		set_api_address(s, ip);
	}
	if (strcmp(name, s->dns_svc) == 0 && !s->x.pod_dns) {
		snprintf(s->pod_dns, sizeof(s->pod_dns), "%s", ip);
		s->x.pod_dns = s->pod_dns;
		kb_info("syncer", "pods resolve through %s (host Service %s)", ip, s->dns_svc);
		resync(s);
	}
	lookup_host_services(s); /* the other one, if it is another */
}

/* Asks the host for the Services of --pod-dns and --api-service whose
 * addresses are not known yet, one at a time. */
static void lookup_host_services(struct syncer *s)
{
	const char *want = s->dns_svc[0] && !s->x.pod_dns   ? s->dns_svc
			   : s->api_svc[0] && !s->api_known ? s->api_svc
							    : NULL;
	if (!want || s->svc_asking || s->stopping)
		return;
	char path[300];
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/services/%s", s->host_ns, want);
	s->svc_asking = host_call(s->http, "GET", path, NULL, on_host_service, s) == 0;
}

/* Whether host pods can be written: with --pod-dns naming a host Service,
 * not before its cluster IP is known (a pod's dnsConfig cannot change
 * later); the first call asks the host. */
static bool pod_dns_ready(struct syncer *s)
{
	if (!s->dns_svc[0] || s->x.pod_dns)
		return true;
	lookup_host_services(s);
	return false;
}

/* Tenant pod `pod`, refused by the syncer and never sent to the host, says
 * why in its PodScheduled condition as kube's scheduler words a pod it
 * cannot place (False, reason Unschedulable: pkg/scheduler schedule_one.go
 * handleSchedulingFailure); written when it changes. */
static void refuse_condition(struct syncer *s, const json_t *pod, const char *msg)
{
	json_t *tp = NULL;
	const char *ns = meta_str(pod, "namespace"), *name = meta_str(pod, "name");
	if (store_get(s->store, "/pods", ns, name, &tp) < 0)
		return;
	json_t *status = kb_json_object_at(tp, "status"), *conds = json_array(), *c;
	size_t i;
	const json_t *had = NULL;
	json_array_foreach (json_object_get(status, "conditions"), i, c) {
		if (jstr(c, "type") && strcmp(jstr(c, "type"), "PodScheduled") == 0)
			had = c;
		else
			json_array_append(conds, c);
	}
	if (!(had && jstr(had, "message") && strcmp(jstr(had, "message"), msg) == 0 &&
	      strcmp(jstr(had, "status") ? jstr(had, "status") : "", "False") == 0) &&
	    !meta_str(tp, "deletionTimestamp")) {
		char ts[40];
		kb_time_rfc3339(time(NULL), ts, sizeof(ts));
		json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:n,s:s}", "type",
						       "PodScheduled", "status", "False", "reason",
						       "Unschedulable", "message", msg,
						       "lastProbeTime", "lastTransitionTime", ts));
		json_object_set(status, "conditions", conds);
		if (!jstr(status, "phase"))
			json_object_set_new(status, "phase", json_string("Pending"));
		if (store_update(s->store, "/pods", ns, name, tp, 0, NULL) == 0)
			s->stats.status_updates++;
	}
	json_decref(conds);
	json_decref(tp);
}

/* A gang whose minimum needs more GPUs together than the tenant's quota
 * could never run: its pods are not sent to the host, and say why. */
static bool gang_over_quota(struct syncer *s, const json_t *gang, const json_t *pod,
			    const json_t *hp)
{
	int64_t need = syncer_gang_gpu_milli(gang, hp);
	if (s->gpu_quota_milli <= 0 || need <= s->gpu_quota_milli)
		return false;
	char msg[512];
	snprintf(msg, sizeof(msg),
		 "%s %s needs %lld GPUs together for its %lld pods, more than the tenant's quota "
		 "of %lld GPUs: it could never be scheduled, and its pods are not sent to the host",
		 jstr(gang, "kind"), jstr(gang, "owner"), (long long)(need / 1000),
		 (long long)json_integer_value(json_object_get(gang, "min")),
		 (long long)(s->gpu_quota_milli / 1000));
	syncer_record_event(s->store, meta_str(pod, "namespace"), "Pod", meta_str(pod, "name"),
			    meta_str(pod, "uid"), "Warning", "GangExceedsQuota", msg, "gang", NULL);
	refuse_condition(s, pod, msg);
	return true;
}

/* The ResourceQuotas a gang's pods count in: the tenant's in the pod's
 * namespace, the tenant policy's (kube-system/kubicle-policy, which the
 * API front writes from the policy's pods quota: admission.c) and the host
 * namespace's (kubicle create's kubicle-<tenant>, from --max-pods:
 * cmd/hostquota.c). Each is {quota, where}. New reference. */
static json_t *pod_quotas(struct syncer *s, const char *ns)
{
	json_t *out = json_array(), *q;
	struct store_list_req lr = {.res = "/resourcequotas", .ns = ns};
	struct store_list_result res;
	char where[400];
	size_t i;
	if (store_list(s->store, &lr, &res) == 0) {
		json_array_foreach (res.items, i, q) {
			bool policy =
			    jstr(kb_json_path(q, "metadata.labels"), "kubicle.dev/policy");
			snprintf(where, sizeof(where),
				 policy ? "the tenant's policy" : "the ResourceQuota %s/%s", ns,
				 meta_str(q, "name"));
			json_array_append_new(out,
					      json_pack("{s:O,s:s}", "quota", q, "where", where));
		}
		json_decref(res.items);
		free(res.next);
	}
	if (strcmp(ns, "kube-system") != 0 &&
	    store_get(s->store, "/resourcequotas", "kube-system", "kubicle-policy", &q) == 0)
		json_array_append_new(
		    out, json_pack("{s:o,s:s}", "quota", q, "where", "the tenant's policy"));
	json_array_foreach (s->host_quotas, i, q) {
		snprintf(where, sizeof(where), "the host namespace's ResourceQuota %s",
			 meta_str(q, "name"));
		json_array_append_new(out, json_pack("{s:O,s:s}", "quota", q, "where", where));
	}
	return out;
}

/* A gang whose minimum is more pods than a quota holds could never run
 * whole (the API server refuses the pods past it: kube's
 * plugin/pkg/admission/resourcequota): its pods are not sent to the host,
 * and say why, as the GPU check does. */
static bool gang_over_pods(struct syncer *s, const json_t *gang, const json_t *pod)
{
	json_t *all = pod_quotas(s, meta_str(pod, "namespace")), *quotas = json_array(), *e;
	size_t i;
	json_array_foreach (all, i, e)
		json_array_append(quotas, json_object_get(e, "quota"));
	const json_t *q = syncer_gang_pods_quota(gang, quotas);
	char msg[1024];
	if (q) {
		const char *where = "";
		json_array_foreach (all, i, e)
			if (json_object_get(e, "quota") == q)
				where = jstr(e, "where");
		syncer_gang_pods_message(gang, q, where, msg, sizeof(msg));
		syncer_record_event(s->store, meta_str(pod, "namespace"), "Pod",
				    meta_str(pod, "name"), meta_str(pod, "uid"), "Warning",
				    "GangExceedsQuota", msg, "gang", NULL);
		refuse_condition(s, pod, msg);
	}
	json_decref(quotas);
	json_decref(all);
	return q != NULL;
}

static void on_host_quotas(int err, long status, json_t *body, void *arg)
{
	struct syncer *s = arg;
	bool first = !s->quotas_read;
	s->quotas_asking = false;
	s->quotas_read = true; /* none readable (an older Role): none checked */
	if (!err && status == 200 && json_is_array(json_object_get(body, "items"))) {
		json_decref(s->host_quotas);
		s->host_quotas = json_incref(json_object_get(body, "items"));
	} else if (status != 404 && status != 403) {
		kb_info("syncer", "cannot read the host's ResourceQuotas (HTTP %ld)", status);
	}
	if (first)
		resync(s); /* the gangs' pods that waited for them */
}

/* The host namespace's ResourceQuotas as the informer has them: read once
 * per change (a watch), not at each resync. */
static void quotas_from_cache(struct syncer *s)
{
	json_t *items = json_array();
	const char *k;
	json_t *v;
	json_object_foreach (host_informer_cache(s->quotas_inf), k, v)
		json_array_append(items, v);
	json_decref(s->host_quotas);
	s->host_quotas = items;
}

static void on_host_quota(const char *type, json_t *obj, void *arg)
{
	struct syncer *s = arg;
	(void)type;
	(void)obj;
	quotas_from_cache(s);
}

static void on_host_quotas_listed(json_t *items, void *arg)
{
	struct syncer *s = arg;
	bool first = !s->quotas_read;
	(void)items;
	s->quotas_read = true;
	quotas_from_cache(s);
	if (first)
		resync(s); /* the gangs' pods that waited for them */
}

static void watch_host_quotas(struct syncer *s)
{
	char path[300];
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/resourcequotas", s->host_ns);
	struct host_informer_opts o = {
	    .path = path, .on_event = on_host_quota, .on_synced = on_host_quotas_listed, .arg = s};
	if (host_informer_start(s->loop, s->http, &o, &s->quotas_inf) < 0)
		kb_warn("syncer", "cannot watch the host's ResourceQuotas");
}

/* Reads the host namespace's ResourceQuotas once, for a gang that needs
 * them before the informer listed them (or while it cannot: an older
 * Role without resourcequotas answers 403, and none are checked). */
static void read_host_quotas(struct syncer *s)
{
	char path[300];
	if (s->quotas_asking || s->stopping)
		return;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/resourcequotas", s->host_ns);
	s->quotas_asking = host_call(s->http, "GET", path, NULL, on_host_quotas, s) == 0;
}

static void create_host_pod(struct syncer *s, const json_t *pod, const char *hn)
{
	json_t *hp = NULL;
	if (!pod_dns_ready(s))
		return;
	json_t *st = json_object_get(s->pods, hn);
	if (st && json_is_true(json_object_get(st, "creating")))
		return;
	if (st) { /* known (e.g. a retry): translate again */
		hp = translate(s, pod, jstr(st, "sa"), NULL, true);
	} else if (!(st = track(s, pod, hn, &hp))) {
		return;
	}
	if (!hp)
		return;
	/* a gang's pod is made after its group object, in it */
	json_t *gang = syncer_gang_of(s->store, pod, s->tenant);
	int ready = 1;
	if (gang && !s->quotas_read) { /* the host's quotas first (then a resync) */
		if (!host_informer_up(s->quotas_inf))
			read_host_quotas(s);
		ready = 0;
	} else if (gang && (gang_over_quota(s, gang, pod, hp) || gang_over_pods(s, gang, pod))) {
		ready = 0;
	}
	if (gang && ready)
		ready = syncer_groups_want(s->groups, gang, pod, hn, hp);
	if (ready > 0)
		syncer_gang_keys(&s->x, gang, hp);
	json_decref(gang);
	struct pod_call *pc = ready > 0 ? calloc(1, sizeof(*pc)) : NULL;
	if (!pc) {
		json_decref(hp);
		return;
	}
	pc->s = s;
	snprintf(pc->hn, sizeof(pc->hn), "%s", hn);
	json_object_set_new(st, "creating", json_true());
	s->stats.host_creates++;
	if (host_call(s->http, "POST", s->pods_path, hp, on_pod_created, pc) < 0) {
		json_object_set_new(st, "creating", json_false());
		free(pc);
	}
	json_decref(hp);
}

/* The group of waiting tenant pod ns/name is on the host: the pod is made. */
static void on_group_ready(void *arg, const char *ns, const char *name)
{
	struct syncer *s = arg;
	json_t *tp = NULL;
	char hn[SYNCER_NAME_MAX + 1];
	if (s->stopping || store_get(s->store, "/pods", ns, name, &tp) < 0)
		return;
	pod_hn(s, tp, hn);
	if (hn[0] && !meta_str(tp, "deletionTimestamp") && !host_pod(s, hn))
		create_host_pod(s, tp, hn);
	json_decref(tp);
}

/* Host pod hp of tenant pod tp, found at a resync, counts in its gang's
 * group when it is in it. */
static void hold_group(struct syncer *s, const json_t *tp, const json_t *hp, const char *hn)
{
	if (!s->groups)
		return;
	json_t *gang = syncer_gang_of(s->store, tp, s->tenant);
	json_t *ann = json_object_get(json_object_get(hp, "metadata"), "annotations");
	const char *in = jstr(ann, "pod-group-name") ? jstr(ann, "pod-group-name")
						     : jstr(ann, "scheduling.k8s.io/group-name");
	if (!in)
		in = jstr(kb_json_path(hp, "metadata.labels"), "kueue.x-k8s.io/pod-group-name");
	if (gang && in && strcmp(in, jstr(gang, "group")) == 0)
		syncer_groups_hold(s->groups, gang, hp, hn);
	json_decref(gang);
}

/* Deletes our host pod hn: only if the informer saw it, exactly ours
 * (syncer_host_owner), with its uid as a precondition. */
static void delete_host_pod(struct syncer *s, const char *hn, long grace)
{
	json_t *hp = host_pod(s, hn);
	json_t *st = json_object_get(s->pods, hn);
	const char *ns, *name, *uid;
	if (!hp || (st && json_is_true(json_object_get(st, "deleting"))))
		return;
	if (!syncer_host_owner(hp, s->tenant, &ns, &name, &uid)) {
		kb_warn("syncer", "host pod %s is not exactly ours: not deleted", hn);
		return;
	}
	if (st)
		json_object_set_new(st, "deleting", json_true());
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", s->pods_path, hn);
	host_delete_path(s, path, grace, meta_str(hp, "uid"));
}

/* ---- status back ------------------------------------------------------------------- */

/* Kueue's reason for a gated pod (pod entry st's "kueue", from its
 * Workload: on_host_workload) in its PodScheduled condition: False,
 * SchedulingGated as kube-scheduler writes for a gated pod, the message the
 * Workload's reason and message. */
static void kueue_condition(const json_t *st, const json_t *hp, json_t *status)
{
	const json_t *why = json_object_get(st, "kueue");
	if (!why || kb_json_path(hp, "spec.nodeName"))
		return;
	char msg[1200];
	snprintf(msg, sizeof(msg), "waiting for Kueue's admission: %s: %s", jstr(why, "reason"),
		 jstr(why, "message") ? jstr(why, "message") : "");
	json_t *conds = kb_json_object_at(status, "conditions"), *c, *mine = NULL;
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(status, "conditions", conds);
	}
	size_t i;
	json_array_foreach (conds, i, c) {
		if (jstr(c, "type") && strcmp(jstr(c, "type"), "PodScheduled") == 0)
			mine = c;
	}
	if (!mine) {
		mine =
		    json_pack("{s:s,s:s,s:s,s:n,s:n}", "type", "PodScheduled", "status", "False",
			      "reason", "SchedulingGated", "lastProbeTime", "lastTransitionTime");
		json_array_append_new(conds, mine);
	}
	if (jstr(mine, "status") && strcmp(jstr(mine, "status"), "False") == 0)
		json_object_set_new(mine, "message", json_string(msg));
}

/* Copies host pod hp's status (and node) into its tenant pod: `tenant` (the
 * tenant pod already read, borrowed and modified), or NULL to read it. */
static void copy_status(struct syncer *s, const json_t *hp, const char *hn, json_t *tenant)
{
	const char *ns, *name, *uid;
	if (!syncer_host_owner(hp, s->tenant, &ns, &name, &uid))
		return;
	json_t *tp = tenant ? json_incref(tenant) : NULL;
	if (!tp && store_get(s->store, "/pods", ns, name, &tp) < 0)
		return;
	json_t *st = json_object_get(s->pods, hn);
	const char *node = jstr(json_object_get(hp, "spec"), "nodeName");
	json_t *status = syncer_status_from_host(hp);
	kueue_condition(st, hp, status);
	json_t *spec = json_object_get(tp, "spec");
	bool same_node =
	    (!node && !jstr(spec, "nodeName")) ||
	    (node && jstr(spec, "nodeName") && strcmp(node, jstr(spec, "nodeName")) == 0);
	if (strcmp(meta_str(tp, "uid") ? meta_str(tp, "uid") : "", uid) == 0 &&
	    (!json_equal(status, json_object_get(tp, "status")) || !same_node)) {
		json_object_set(tp, "status", status);
		if (node)
			json_object_set_new(spec, "nodeName", json_string(node));
		if (store_update(s->store, "/pods", ns, name, tp, 0, NULL) == 0)
			s->stats.status_updates++;
	}
	if (st && node && strcmp(jstr(st, "node"), node) != 0) {
		node_ref(s, jstr(st, "node"), -1);
		json_object_set_new(st, "node", json_string(node));
		node_ref(s, node, +1);
	}
	json_decref(status);
	json_decref(tp);
}

/* The tenant pod `tp` (new ref) of host pod hp, when it is still the same pod. */
static json_t *tenant_of(struct syncer *s, const json_t *hp)
{
	const char *ns, *name, *uid;
	json_t *tp = NULL;
	if (!syncer_host_owner(hp, s->tenant, &ns, &name, &uid))
		return NULL;
	if (store_get(s->store, "/pods", ns, name, &tp) < 0)
		return NULL;
	if (!meta_str(tp, "uid") || strcmp(meta_str(tp, "uid"), uid) != 0) {
		json_decref(tp);
		return NULL;
	}
	return tp;
}

static void tenant_pod_remove(struct syncer *s, json_t *tp)
{
	store_delete(s->store, "/pods", meta_str(tp, "namespace"), meta_str(tp, "name"), 0, NULL,
		     NULL);
}

/*
 * True when host pod event hp would change nothing in its tenant pod as the
 * tenant watch last showed it (pod entry: tuid, tstatus, tnode): same pod,
 * not being deleted on either side, same status and node, node counted.
 * copy_status would then read the tenant pod only to find it equal.
 */
static bool host_pod_known(struct syncer *s, const json_t *hp, const char *hn)
{
	json_t *st = hn ? json_object_get(s->pods, hn) : NULL;
	json_t *ts = json_object_get(st, "tstatus");
	const char *ns, *name, *uid, *tuid = jstr(st, "tuid");
	if (!ts || !tuid || meta_str(hp, "deletionTimestamp") ||
	    !syncer_host_owner(hp, s->tenant, &ns, &name, &uid) || strcmp(uid, tuid) != 0)
		return false;
	const json_t *hs = json_object_get(hp, "status");
	if (hs ? !json_equal(hs, ts) : !(json_is_object(ts) && json_object_size(ts) == 0))
		return false;
	const char *node = jstr(json_object_get(hp, "spec"), "nodeName");
	const char *tnode = jstr(st, "tnode");
	if (!node || !*node)
		return !tnode;
	return tnode && strcmp(node, tnode) == 0 && strcmp(jstr(st, "node"), node) == 0;
}

static void on_host_pod(const char *type, json_t *hp, void *arg)
{
	struct syncer *s = arg;
	const char *hn = meta_str(hp, "name");
	syncer_ledger_pod(s->ledger, type, hp);
	if (strcmp(type, "DELETED") != 0 && host_pod_known(s, hp, hn))
		return;
	json_t *tp = tenant_of(s, hp);
	if (strcmp(type, "DELETED") == 0) {
		/* the host removed it (or finished our delete): the tenant pod goes too */
		if (tp)
			tenant_pod_remove(s, tp);
		untrack(s, hn);
	} else if (!tp) {
		if (s->host_synced)
			delete_host_pod(s, hn, 0); /* orphan */
	} else {
		copy_status(s, hp, hn, tp);
		if (meta_str(tp, "deletionTimestamp") && !meta_str(hp, "deletionTimestamp"))
			delete_host_pod(
			    s, hn,
			    (long)json_integer_value(json_object_get(
				json_object_get(tp, "metadata"), "deletionGracePeriodSeconds")));
	}
	json_decref(tp);
}

/* ---- tenant pod events -------------------------------------------------------------- */

/* What a pod update may change (kube's ValidatePodUpdate, and the
 * ephemeralcontainers subresource): equal in a and b? */
static bool same_mutable(const json_t *a, const json_t *b)
{
	static const char *const meta[] = {"labels", "annotations"};
	static const char *const spec[] = {"containers", "initContainers", "activeDeadlineSeconds",
					   "tolerations", "ephemeralContainers"};
	const json_t *am = json_object_get(a, "metadata"), *bm = json_object_get(b, "metadata");
	const json_t *as = json_object_get(a, "spec"), *bs = json_object_get(b, "spec");
	for (size_t i = 0; i < KB_ARRAY_SIZE(meta); i++)
		if (!kb_json_same(json_object_get(am, meta[i]), json_object_get(bm, meta[i])))
			return false;
	for (size_t i = 0; i < KB_ARRAY_SIZE(spec); i++)
		if (!kb_json_same(json_object_get(as, spec[i]), json_object_get(bs, spec[i])))
			return false;
	return true;
}

static void on_pod_patched(int err, long status, json_t *body, void *arg)
{
	struct pod_call *pc = arg;
	if (!err && status >= 300 && !pc->s->stopping)
		kb_info("syncer", "host refused the update of pod %s: HTTP %ld %s", pc->hn, status,
			jstr(body, "message") ? jstr(body, "message") : "");
	free(pc);
}

/* A strategic merge patch of host pod hn, or of its subresource `sub`
 * (NULL: the pod itself). */
static void patch_host_pod(struct syncer *s, const char *hn, const char *sub, const json_t *patch)
{
	struct pod_call *pc = patch ? calloc(1, sizeof(*pc)) : NULL;
	if (!pc)
		return;
	char path[512];
	pc->s = s;
	snprintf(pc->hn, sizeof(pc->hn), "%s", hn);
	snprintf(path, sizeof(path), "%s/%s%s%s", s->pods_path, hn, sub ? "/" : "", sub ? sub : "");
	if (host_call_ct(s->http, "PATCH", path, "application/strategic-merge-patch+json", patch,
			 on_pod_patched, pc) < 0)
		free(pc);
	else
		s->stats.host_updates++;
}

/* ConfigMaps and Secrets the pod references now that tracked pod st did not
 * (only ephemeral containers can add any): synced from now on. */
static void add_refs(struct syncer *s, json_t *st, const json_t *refs)
{
	json_t *have = json_object_get(st, "refs"), *added = json_array();
	size_t i, j;
	json_t *r, *h;
	json_array_foreach (refs, i, r) {
		bool known = false;
		json_array_foreach (have, j, h)
			known = known || json_equal(r, h);
		if (!known)
			json_array_append(added, r);
	}
	if (json_array_size(added) && json_is_array(have)) {
		json_array_extend(have, added);
		cfg_ref(s, added, jstr(st, "ns"), +1);
	}
	json_decref(added);
}

/*
 * Pushes what kube lets a pod change (labels, annotations, images,
 * activeDeadlineSeconds, added tolerations) from tenant pod `pod` to its
 * host pod hn, as a strategic merge patch. `prev` is the tenant pod before
 * the change (NULL at a resync: labels and annotations are then added or
 * changed, never removed, since the host may have its own).
 */
static void push_update(struct syncer *s, const json_t *prev, const json_t *pod, const char *hn)
{
	json_t *st = json_object_get(s->pods, hn), *hp = host_pod(s, hn);
	if (!st || !hp || json_is_true(json_object_get(st, "creating")) ||
	    json_is_true(json_object_get(st, "deleting")) || meta_str(hp, "deletionTimestamp"))
		return; /* a pod being created gets the update at the next resync */
	if (!syncer_host_is(hp, s->tenant, jstr(st, "ns"), jstr(st, "name"), jstr(st, "uid")))
		return; /* not this pod's: never updated */
	const char *sa = jstr(st, "sa");
	json_t *refs = json_array();
	/* ephemeral containers may start from it (kubectl debug) */
	bool debug = json_array_size(
			 json_object_get(json_object_get(pod, "spec"), "ephemeralContainers")) > 0;
	json_t *want = translate(s, pod, sa, refs, debug);
	json_t *was = prev ? translate(s, prev, sa, NULL, false) : NULL;
	add_refs(s, st, refs);
	json_decref(refs);
	json_t *patch = want ? syncer_pod_update_patch(want, hp, was) : NULL;
	patch_host_pod(s, hn, NULL, patch);
	json_decref(patch);
	/* ephemeral containers the tenant pod gained (kubectl debug): only
	 * the host's subresource may add them */
	patch = want ? syncer_ephemeral_patch(want, hp) : NULL;
	patch_host_pod(s, hn, "ephemeralcontainers", patch);
	json_decref(patch);
	json_decref(was);
	json_decref(want);
}

/* Tenant pod `pod` (its host name hn, from pod_hn) was written or resynced. */
static void tenant_pod_changed(struct syncer *s, const json_t *pod, const char *hn)
{
	if (!hn[0])
		return;
	json_t *hp = host_pod(s, hn);
	if (hp &&
	    !syncer_host_is(hp, s->tenant, meta_str(pod, "namespace"), meta_str(pod, "name"), NULL))
		hp = NULL; /* not this pod's: as if there were none (resync reports it) */
	if (meta_str(pod, "deletionTimestamp")) {
		if (!hp && s->host_synced &&
		    !json_is_true(json_object_get(json_object_get(s->pods, hn), "creating"))) {
			store_delete(s->store, "/pods", meta_str(pod, "namespace"),
				     meta_str(pod, "name"), 0, NULL, NULL);
			untrack(s, hn);
			return;
		}
		delete_host_pod(
		    s, hn,
		    (long)json_integer_value(json_object_get(json_object_get(pod, "metadata"),
							     "deletionGracePeriodSeconds")));
		return;
	}
	if (!json_object_get(s->pods, hn) && !hp)
		create_host_pod(s, pod, hn);
}

/* Tenant pod `pod`, in the group of its host pod hn, is going: its owner
 * may have scaled down, and its group follows (gang.c: Scaling). */
static void refresh_group(struct syncer *s, const json_t *pod, const char *hn)
{
	json_t *hp = host_pod(s, hn);
	if (!s->groups || !hp)
		return;
	json_t *gang = syncer_gang_of(s->store, pod, s->tenant);
	if (gang)
		syncer_groups_refresh(s->groups, gang, hp);
	json_decref(gang);
}

/* Pod entry hn remembers tenant pod `pod` as this watch event shows it
 * (NULL, or a pod being deleted: forgets it). See host_pod_known. */
static void remember_tenant(struct syncer *s, const json_t *pod, const char *hn)
{
	json_t *st = json_object_get(s->pods, hn);
	if (!st)
		return;
	json_object_del(st, "tnode");
	if (!pod || meta_str(pod, "deletionTimestamp") || !meta_str(pod, "uid")) {
		json_object_del(st, "tstatus");
		return;
	}
	json_t *status = kb_json_copy(json_object_get(pod, "status"));
	const char *node = jstr(json_object_get(pod, "spec"), "nodeName");
	json_object_set_new(st, "tuid", json_string(meta_str(pod, "uid")));
	json_object_set_new(st, "tstatus", status ? status : json_null());
	if (node && *node)
		json_object_set_new(st, "tnode", json_string(node));
}

static void on_tenant_pod(const struct store_event *ev, void *arg)
{
	struct syncer *s = arg;
	char hn[SYNCER_NAME_MAX + 1];
	pod_hn(s, ev->obj, hn);
	if (hn[0] &&
	    (ev->type == STORE_DELETED || (meta_str(ev->obj, "deletionTimestamp") &&
					   !(ev->prev && meta_str(ev->prev, "deletionTimestamp")))))
		refresh_group(s, ev->obj, hn);
	if (ev->type != STORE_DELETED) {
		tenant_pod_changed(s, ev->obj, hn);
		if (!hn[0])
			return;
		remember_tenant(s, ev->obj, hn);
		if (ev->type == STORE_MODIFIED && ev->prev &&
		    !meta_str(ev->obj, "deletionTimestamp") && !same_mutable(ev->prev, ev->obj))
			push_update(s, ev->prev, ev->obj, hn);
		return;
	}
	if (!hn[0])
		return;
	remember_tenant(s, NULL, hn);
	delete_host_pod(s, hn, 0);
	if (!host_pod(s, hn))
		untrack(s, hn);
}

/* ---- events: host -> tenant ----------------------------------------------------------- */

void syncer_record_event(store_t *st, const char *ns, const char *kind, const char *obj,
			 const char *uid, const char *type, const char *reason, const char *msg,
			 const char *suffix, const char *component)
{
	char name[512], ts[40];
	snprintf(name, sizeof(name), "%s.%s", obj, suffix);
	kb_time_rfc3339(time(NULL), ts, sizeof(ts));
	json_t *old = NULL;
	json_int_t count = 1;
	if (store_get(st, "/events", ns, name, &old) == 0)
		count = json_integer_value(json_object_get(old, "count")) + 1;
	json_t *ev = json_pack(
	    "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:I,s:s,s:s,s:{s:s}}",
	    "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", ns,
	    "involvedObject", "kind", kind, "namespace", ns, "name", obj, "uid", uid ? uid : "",
	    "type", type ? type : "Normal", "reason", reason ? reason : "", "message",
	    msg ? msg : "", "count", count, "firstTimestamp", ts, "lastTimestamp", ts, "source",
	    "component", component ? component : "kubicle-syncer");
	json_object_set_new(json_object_get(ev, "involvedObject"), "apiVersion", json_string("v1"));
	if (old)
		json_object_set(ev, "firstTimestamp", json_object_get(old, "firstTimestamp"));
	syncer_store_put(st, "/events", ns, name, ev, old);
	json_decref(old);
	json_decref(ev);
}

static void on_host_event(const char *type, json_t *ev, void *arg)
{
	struct syncer *s = arg;
	if (strcmp(type, "DELETED") == 0)
		return;
	json_t *io = json_object_get(ev, "involvedObject");
	const char *kind = jstr(io, "kind"), *hn = jstr(io, "name");
	json_t *hp = NULL;
	if (hn && kind && strcmp(kind, "Pod") == 0)
		hp = host_pod(s, hn);
	else if (hn && kind && strcmp(kind, "PersistentVolumeClaim") == 0)
		hp = syncer_mirror_host(s->pvcs, hn); /* provisioning, binding, resizing */
	const char *ns, *name, *uid;
	if (!hp || !syncer_host_owner(hp, s->tenant, &ns, &name, &uid))
		return;
	/* the suffix after the object's name keeps one tenant event per host event */
	const char *hname = meta_str(ev, "name");
	const char *dot = hname ? strrchr(hname, '.') : NULL;
	json_t *old = NULL;
	char nm[512];
	snprintf(nm, sizeof(nm), "%s.%s", name, dot ? dot + 1 : "host");
	if (store_get(s->store, "/events", ns, nm, &old) == 0 &&
	    json_equal(json_object_get(old, "message"), json_object_get(ev, "message")) &&
	    json_integer_value(json_object_get(old, "count")) >=
		json_integer_value(json_object_get(ev, "count"))) {
		json_decref(old);
		return;
	}
	json_decref(old);
	syncer_record_event(s->store, ns, kind, name, uid, jstr(ev, "type"), jstr(ev, "reason"),
			    jstr(ev, "message"), dot ? dot + 1 : "host",
			    jstr(json_object_get(ev, "source"), "component"));
}

/* ---- Kueue's Workloads: why a pod waits ---------------------------------------------- */

/* The condition of `type` in obj's status.conditions, or NULL. */
static const json_t *condition(const json_t *obj, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach (kb_json_path(obj, "status.conditions"), i, c) {
		if (jstr(c, "type") && strcmp(jstr(c, "type"), type) == 0)
			return c;
	}
	return NULL;
}

/*
 * Under Kueue a pod waits gated, and why lives on its Workload, not on the
 * pod: Kueue's scheduler sets the Workload's QuotaReserved condition False
 * with a reason (Pending, WaitingForQuota, ExceedsMaxQuota, ...) and the
 * flavor assigner's message, and records an event of that reason on the
 * Workload (kueue pkg/scheduler/scheduler.go requeueAndUpdate). A pod
 * group's Workload is named after the group and owned by every member, a
 * lone pod's by the pod (pkg/controller/jobs/pod/pod_controller.go
 * ConstructComposableWorkload, workloadName). So each pending host pod that
 * owns a Workload kept from quota gets its reason, on its tenant pod, as a
 * Warning event of the Workload's reason and message (one per pod, its
 * count moving up when the message changes), as KAI's and Volcano's
 * reasons reach the tenant from their pod events, and in the message of
 * its PodScheduled=False condition (kueue_condition) until the Workload is
 * admitted or gone.
 */
static void on_host_workload(const char *type, json_t *wl, void *arg)
{
	struct syncer *s = arg;
	const json_t *c = condition(wl, "QuotaReserved");
	bool waits = strcmp(type, "DELETED") != 0 && c && jstr(c, "status") &&
		     strcmp(jstr(c, "status"), "False") == 0 && !condition(wl, "Finished");
	const char *reason = waits && jstr(c, "reason") ? jstr(c, "reason") : "Pending";
	size_t i;
	json_t *r;
	json_array_foreach (kb_json_path(wl, "metadata.ownerReferences"), i, r) {
		const char *hn = jstr(r, "name"), *ns, *name, *uid;
		json_t *hp = hn && jstr(r, "kind") && strcmp(jstr(r, "kind"), "Pod") == 0
				 ? host_pod(s, hn)
				 : NULL;
		json_t *st = hp ? json_object_get(s->pods, hn) : NULL;
		if (!st || !syncer_host_owner(hp, s->tenant, &ns, &name, &uid))
			continue;
		json_t *why = waits ? json_pack("{s:s,s:s}", "reason", reason, "message",
						jstr(c, "message") ? jstr(c, "message") : "")
				    : NULL;
		json_t *had = json_object_get(st, "kueue");
		bool changed = why ? !json_equal(why, had) : had != NULL;
		if (why)
			json_object_set_new(st, "kueue", why);
		else
			json_object_del(st, "kueue");
		if (!changed)
			continue;
		copy_status(s, hp, hn, NULL);
		if (waits && !kb_json_path(hp, "spec.nodeName"))
			syncer_record_event(s->store, ns, "Pod", name, uid, "Warning", reason,
					    jstr(c, "message"), "kueue", "kueue-admission");
	}
}

/* Kueue's profile: the Workloads of the host namespace are watched. */
static void watch_workloads(struct syncer *s)
{
	if (strcmp(s->x.profile->name, "kueue") != 0)
		return;
	char path[300];
	snprintf(path, sizeof(path), "/apis/kueue.x-k8s.io/v1beta1/namespaces/%s/workloads",
		 s->host_ns);
	struct host_informer_opts o = {
	    .path = path, .on_event = on_host_workload, .no_cache = true, .arg = s};
	if (host_informer_start(s->loop, s->http, &o, &s->workloads_inf) < 0)
		kb_warn("syncer", "cannot watch Kueue's Workloads");
}

/* ---- resync --------------------------------------------------------------------------- */

static void resync_tenant_pod(struct syncer *s, json_t *tp, json_t *seen)
{
	char hn[SYNCER_NAME_MAX + 1];
	pod_hn(s, tp, hn);
	if (!hn[0])
		return;
	json_object_set_new(seen, hn, json_string(meta_str(tp, "uid") ? meta_str(tp, "uid") : ""));
	json_t *hp = host_pod(s, hn);
	json_t *st = json_object_get(s->pods, hn);
	if (st && json_is_true(json_object_get(st, "creating")))
		return;
	if (meta_str(tp, "deletionTimestamp")) {
		tenant_pod_changed(s, tp, hn);
		return;
	}
	if (!hp) {
		const char *node = jstr(json_object_get(tp, "spec"), "nodeName");
		if (node && *node) { /* it ran on the host and is gone there */
			tenant_pod_remove(s, tp);
			untrack(s, hn);
		} else {
			create_host_pod(s, tp, hn);
		}
		return;
	}
	if (!syncer_host_is(hp, s->tenant, meta_str(tp, "namespace"), meta_str(tp, "name"), NULL)) {
		/* our label, but not this pod's annotations: never touched */
		syncer_conflict(s->store, s->tenant, "Pod", meta_str(tp, "namespace"),
				meta_str(tp, "name"), meta_str(tp, "uid"), hp);
		return;
	}
	if (!syncer_host_is(hp, s->tenant, meta_str(tp, "namespace"), meta_str(tp, "name"),
			    meta_str(tp, "uid") ? meta_str(tp, "uid") : "")) {
		delete_host_pod(s, hn, 0); /* a previous pod of that name */
		return;
	}
	track(s, tp, hn, NULL);
	hold_group(s, tp, hp, hn);
	copy_status(s, hp, hn, NULL);
	push_update(s, NULL, tp, hn); /* updates lost while the pod was created or the host away */
}

static void resync(struct syncer *s)
{
	if (!s->host_synced || s->stopping)
		return;
	s->stats.resyncs++;
	struct store_list_req lr = {.res = "/pods"};
	struct store_list_result res;
	if (store_list(s->store, &lr, &res) < 0)
		return;
	json_t *seen = json_object();
	size_t i;
	json_t *tp;
	json_array_foreach (res.items, i, tp)
		resync_tenant_pod(s, tp, seen);
	json_decref(res.items);
	free(res.next);
	/* host pods with no tenant pod: orphans */
	const char *hn;
	json_t *hp;
	void *tmp;
	json_t *cache = kb_json_copy(host_informer_cache(s->pods_inf));
	json_object_foreach_safe (cache, tmp, hn, hp) {
		if (!json_object_get(seen, hn))
			delete_host_pod(s, hn, 0);
	}
	json_decref(cache);
	/* tracked pods that vanished on both sides */
	json_t *pods = kb_json_copy(s->pods);
	json_object_foreach_safe (pods, tmp, hn, hp) {
		if (!json_object_get(seen, hn) && !host_pod(s, hn))
			untrack(s, hn);
	}
	json_decref(pods);
	json_decref(seen);
	syncer_groups_resync(s->groups);
	sa_refresh(s);
	ptok_refresh(s);
	lookup_host_services(s); /* retried here until the host has them */
}

static void on_host_synced(json_t *items, void *arg)
{
	struct syncer *s = arg;
	bool first = !s->host_synced;
	s->host_synced = true;
	syncer_ledger_pods_listed(s->ledger, items);
	resync(s);
	host_metrics_check(s->metrics); /* the host may be back */
	if (first) {
		char path[300];
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", s->host_ns);
		struct host_informer_opts eo = {
		    .path = path, .on_event = on_host_event, .no_cache = true, .arg = s};
		if (host_informer_start(s->loop, s->http, &eo, &s->events_inf) < 0)
			kb_warn("syncer", "cannot watch host events");
		watch_workloads(s);
		watch_host_quotas(s);
	}
}

static void on_host_state(bool up, void *arg)
{
	kb_info("syncer", "host %s", up ? "reachable" : "unreachable");
}

static void on_resync_timer(uv_timer_t *t)
{
	struct syncer *s = t->data;
	resync(s);
	host_metrics_check(s->metrics);
	syncer_ledger_tick(s->ledger);
	if (host_informer_up(s->pods_inf))
		syncer_ledger_seen(s->ledger);
	syncer_mirror_resync(s->pvcs);
	syncer_mirror_resync(s->svcs);
	syncer_mirror_resync(s->netpols);
}

/* The tenant's Namespaces into s->x.namespaces (NetworkPolicies'
 * namespaceSelectors); true when they changed. */
static bool list_namespaces(struct syncer *s)
{
	struct store_list_req lr = {.res = "/namespaces"};
	struct store_list_result res;
	if (store_list(s->store, &lr, &res) < 0)
		return false;
	free(res.next);
	bool changed = !s->namespaces || !json_equal(s->namespaces, res.items);
	json_decref(s->namespaces);
	s->namespaces = res.items;
	s->x.namespaces = s->namespaces;
	return changed;
}

/* Every tenant NetworkPolicy into s->netpol_list. */
static void list_netpols(struct syncer *s)
{
	struct store_list_req lr = {.res = "networking.k8s.io/networkpolicies"};
	struct store_list_result res;
	if (store_list(s->store, &lr, &res) < 0)
		return;
	free(res.next);
	json_decref(s->netpol_list);
	s->netpol_list = res.items;
}

/* A tenant NetworkPolicy changed: which pods it isolates may have too; the
 * pods' resync pushes their isolation labels (push_update). */
static void on_np_event(const struct store_event *ev, void *arg)
{
	struct syncer *s = arg;
	(void)ev;
	list_netpols(s);
	resync(s);
}

/* A namespace added, relabelled or deleted changes what the tenant's
 * NetworkPolicies' namespaceSelectors select: they are translated again. */
static void on_ns_event(const struct store_event *ev, void *arg)
{
	struct syncer *s = arg;
	(void)ev;
	if (list_namespaces(s))
		syncer_mirror_resync(s->netpols);
}

/* ---- pods/log ------------------------------------------------------------------------- */

struct log_pass {
	struct syncer *s;
	struct log_pass *prev, *next; /* s->logs */
	kb_http_req_t *req;
	kb_httpc_req_t *up;
	bool started;
};

static void log_pass_free(struct log_pass *lp)
{
	KB_LIST_UNLINK(lp->s->logs, lp);
	free(lp);
}

static bool on_log_data(kb_httpc_req_t *r, const char *data, size_t len, void *arg)
{
	struct log_pass *lp = arg;
	if (!lp->started) {
		lp->started = true;
		kb_http_stream_start(lp->req, 200, "text/plain", NULL);
	}
	return kb_http_stream_write(lp->req, data, len) == 0;
}

/* Answers a passthrough (log, exec) that could not reach the host. */
static void host_unreachable(kb_http_req_t *req)
{
	static const char msg[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
				  "\"status\":\"Failure\",\"message\":\"the host cluster is not "
				  "reachable\",\"reason\":\"ServiceUnavailable\",\"code\":503}";
	kb_http_respond(req, 503, "application/json", NULL, msg, sizeof(msg) - 1);
}

static void on_log_done(kb_httpc_req_t *r, int err, long status, const char *body, size_t len,
			void *arg)
{
	struct log_pass *lp = arg;
	kb_http_req_on_abort(lp->req, NULL, NULL);
	if (lp->started) {
		kb_http_stream_end(lp->req);
	} else if (err) {
		host_unreachable(lp->req);
	} else {
		kb_http_respond(lp->req, (int)status,
				status == 200 ? "text/plain" : "application/json", NULL,
				body ? body : "", body ? len : 0);
	}
	log_pass_free(lp);
}

static void on_log_abort(kb_http_req_t *req, void *arg)
{
	struct log_pass *lp = arg;
	kb_httpc_cancel(lp->up);
	log_pass_free(lp);
}

static void log_not_found(kb_http_req_t *req, const char *name)
{
	char msg[600];
	int n = snprintf(msg, sizeof(msg),
			 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
			 "\"message\":\"pods \\\"%s\\\" not found\",\"reason\":\"NotFound\","
			 "\"details\":{\"name\":\"%s\",\"kind\":\"pods\"},\"code\":404}",
			 name, name);
	kb_http_respond(req, 404, "application/json", NULL, msg, (size_t)n);
}

void syncer_pod_log(void *arg, kb_http_req_t *req, const char *ns, const char *name,
		    const char *query)
{
	struct syncer *s = arg;
	char hn[SYNCER_NAME_MAX + 1], path[2048];
	pod_host_name(s, ns, name, NULL, hn);
	if (!hn[0] || !host_pod(s, hn) ||
	    !syncer_host_is(host_pod(s, hn), s->tenant, ns, name, NULL)) {
		log_not_found(req, name);
		return;
	}
	snprintf(path, sizeof(path), "%s/%s/log%s%s", s->pods_path, hn, query && *query ? "?" : "",
		 query ? query : "");
	struct log_pass *lp = calloc(1, sizeof(*lp));
	if (!lp) {
		kb_http_respond(req, 500, "text/plain", NULL, "", 0);
		return;
	}
	lp->req = req;
	lp->s = s;
	struct kb_httpc_call call = {.method = "GET",
				     .path = path,
				     .stream = true,
				     .no_limit = true,
				     .on_data = on_log_data,
				     .on_done = on_log_done,
				     .arg = lp};
	lp->up = kb_httpc_request(s->http, &call);
	if (!lp->up) {
		free(lp);
		kb_http_respond(req, 500, "text/plain", NULL, "", 0);
		return;
	}
	kb_http_req_on_abort(req, on_log_abort, lp);
	KB_LIST_PUSH(s->logs, lp);
}

/* ---- pods/exec, attach, portforward: an upgraded pipe to the host pod ---------------- */

/* Request headers passed on to the host: those of the upgrade itself and of
 * the stream protocols' negotiation. Authorization, cookies and the rest
 * stay here (the host sees the syncer's own credentials). */
static const char *const pipe_req_headers[] = {
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-protocol",
    "x-stream-protocol-version",
};
/* Answer headers passed back to the tenant's client with a 101. */
static const char *const pipe_resp_headers[] = {
    "upgrade:",
    "connection:",
    "sec-websocket-accept:",
    "sec-websocket-protocol:",
    "x-stream-protocol-version:",
};

#define PIPE_HIGH       (1024 * 1024) /* bytes queued towards one side before the other pauses */
#define PIPE_RECHECK_MS 20

struct pipe {
	struct syncer *s;
	struct pipe *prev, *next; /* s->pipe_list */
	kb_http_req_t *req;       /* the tenant's request; NULL once ended */
	kb_httpc_tunnel_t *t;     /* the host side; NULL once ended */
	bool open;                /* 101 passed on */
	int status;               /* the host's refusal, else 0 */
	struct kb_buf body;       /* its body */
	bool req_paused, t_paused;
	uv_timer_t timer; /* resumes a paused side once the other drained */
	bool timer_on;
};

static void pipe_timer_closed(uv_handle_t *h)
{
	struct pipe *p = h->data;
	kb_buf_free(&p->body);
	free(p);
}

/* Unlinks now (the syncer may be gone when the timer has closed). */
static void pipe_free(struct pipe *p)
{
	struct syncer *s = p->s;
	s->pipes--;
	KB_LIST_UNLINK(s->pipe_list, p);
	uv_close((uv_handle_t *)&p->timer, pipe_timer_closed);
}

static void pipe_check(uv_timer_t *h)
{
	struct pipe *p = h->data;
	if (p->t_paused && p->req && kb_http_stream_pending(p->req) < PIPE_HIGH / 2) {
		p->t_paused = false;
		kb_httpc_tunnel_pause(p->t, false);
	}
	if (p->req_paused && p->t && kb_httpc_tunnel_pending(p->t) < PIPE_HIGH / 2) {
		p->req_paused = false;
		kb_http_raw_pause(p->req, false);
	}
	if (!p->t_paused && !p->req_paused) {
		uv_timer_stop(&p->timer);
		p->timer_on = false;
	}
}

static void pipe_watch(struct pipe *p)
{
	if (!p->timer_on) {
		p->timer_on = true;
		uv_timer_start(&p->timer, pipe_check, PIPE_RECHECK_MS, PIPE_RECHECK_MS);
	}
}

/* From the tenant's client to the host. */
static void pipe_from_client(kb_http_req_t *req, const char *data, size_t len, void *arg)
{
	struct pipe *p = arg;
	if (!p->t || kb_httpc_tunnel_write(p->t, data, len) < 0)
		return;
	if (kb_httpc_tunnel_pending(p->t) > PIPE_HIGH) {
		p->req_paused = true;
		kb_http_raw_pause(req, true);
		pipe_watch(p);
	}
}

/* The tenant's client went away. */
static void pipe_client_gone(kb_http_req_t *req, void *arg)
{
	struct pipe *p = arg;
	p->req = NULL;
	if (p->t) {
		kb_httpc_tunnel_close(p->t);
		p->t = NULL;
	}
	pipe_free(p);
}

static void pipe_head(kb_httpc_tunnel_t *t, int status, const char *headers, size_t len, void *arg)
{
	struct pipe *p = arg;
	if (status != 101) {
		p->status = status;
		return;
	}
	struct kb_buf h = {0};
	const char *line = headers, *end = headers + len;
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) + 1 : (size_t)(end - line);
		for (size_t i = 0; i < KB_ARRAY_SIZE(pipe_resp_headers); i++) {
			size_t k = strlen(pipe_resp_headers[i]);
			if (n > k && strncasecmp(line, pipe_resp_headers[i], k) == 0)
				kb_buf_append(&h, line, n);
		}
		line += n;
	}
	if (h.len && h.data[h.len - 1] != '\n')
		kb_buf_puts(&h, "\r\n");
	int rc = kb_http_upgrade(p->req, h.data ? h.data : "", pipe_from_client, p);
	kb_buf_free(&h);
	if (rc < 0) { /* the client is gone: its abort callback ends the pipe */
		kb_debug("syncer", "pods connect: upgrade: %s", strerror(-rc));
		return;
	}
	p->open = true;
}

/* From the host to the tenant's client (or the host's refusal's body). */
static void pipe_data(kb_httpc_tunnel_t *t, const char *data, size_t len, void *arg)
{
	struct pipe *p = arg;
	if (!p->open) { /* a refusal's body: the tunnel passes 64 KiB at most */
		kb_buf_append(&p->body, data, len);
		return;
	}
	if (!p->req || kb_http_raw_write(p->req, data, len) < 0)
		return;
	if (kb_http_stream_pending(p->req) > PIPE_HIGH) {
		p->t_paused = true;
		kb_httpc_tunnel_pause(t, true);
		pipe_watch(p);
	}
}

static void pipe_closed(kb_httpc_tunnel_t *t, int err, void *arg)
{
	struct pipe *p = arg;
	p->t = NULL;
	if (p->req) {
		kb_http_req_on_abort(p->req, NULL, NULL);
		if (p->open) {
			kb_http_raw_end(p->req);
		} else if (p->status) {
			bool json = p->body.len && p->body.data[0] == '{';
			kb_http_respond(p->req, p->status,
					json ? "application/json" : "text/plain; charset=utf-8",
					NULL, p->body.data ? p->body.data : "", p->body.len);
		} else {
			kb_warn("syncer", "pods connect: host: %s", strerror(-err));
			host_unreachable(p->req);
		}
		p->req = NULL;
	}
	pipe_free(p);
}

void syncer_pod_connect(void *arg, kb_http_req_t *req, const char *ns, const char *name,
			const char *sub, const char *query)
{
	struct syncer *s = arg;
	char hn[SYNCER_NAME_MAX + 1], path[4096];
	pod_host_name(s, ns, name, NULL, hn);
	if (!hn[0] || !host_pod(s, hn) ||
	    !syncer_host_is(host_pod(s, hn), s->tenant, ns, name, NULL)) {
		log_not_found(req, name);
		return;
	}
	if (s->pipes >= s->max_pipes) {
		char msg[300];
		int n =
		    snprintf(msg, sizeof(msg),
			     "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
			     "\"status\":\"Failure\",\"message\":\"too many exec, attach and "
			     "port-forward sessions at once (%u)\",\"reason\":\"TooManyRequests\","
			     "\"details\":{\"retryAfterSeconds\":1},\"code\":429}",
			     s->max_pipes);
		kb_http_respond(req, 429, "application/json", "Retry-After: 1\r\n", msg, (size_t)n);
		return;
	}
	int n = snprintf(path, sizeof(path), "%s/%s/%s%s%s", s->pods_path, hn, sub,
			 query && *query ? "?" : "", query ? query : "");
	struct kb_buf h = {0};
	for (size_t i = 0; i < req->nheaders; i++)
		for (size_t j = 0; j < KB_ARRAY_SIZE(pipe_req_headers); j++)
			if (strcmp(req->headers[i].name, pipe_req_headers[j]) == 0)
				kb_buf_printf(&h, "%s: %s\r\n", req->headers[i].name,
					      req->headers[i].value);
	struct pipe *p = calloc(1, sizeof(*p));
	if (n < 0 || (size_t)n >= sizeof(path) || !p) {
		free(p);
		kb_buf_free(&h);
		kb_http_respond(req, n < 0 || (size_t)n >= sizeof(path) ? 414 : 500, "text/plain",
				NULL, "", 0);
		return;
	}
	p->s = s;
	p->req = req;
	s->pipes++;
	KB_LIST_PUSH(s->pipe_list, p);
	uv_timer_init(s->loop, &p->timer);
	p->timer.data = p;
	struct kb_httpc_tunnel_cbs cbs = {
	    .on_head = pipe_head, .on_data = pipe_data, .on_close = pipe_closed, .arg = p};
	p->t = kb_httpc_tunnel(s->http, req->method, path, h.data, &cbs);
	kb_buf_free(&h);
	if (!p->t) {
		pipe_free(p);
		kb_http_respond(req, 500, "text/plain", NULL, "", 0);
		return;
	}
	kb_http_req_on_abort(req, pipe_client_gone, p);
}

/* ---- the host's metrics API (metrics.c) --------------------------------------------- */

void *syncer_metrics_get(void *arg, const char *plural, const char *ns, const char *name,
			 const json_t *objs, syncer_metrics_done_fn done, void *done_arg)
{
	struct syncer *s = arg;
	if (s->stopping || !s->metrics)
		return NULL;
	bool pods = strcmp(plural, "pods") == 0;
	char hn[SYNCER_NAME_MAX + 1] = "";
	if (pods && name)
		pod_host_name(s, ns, name, NULL, hn);
	return host_metrics_get(s->metrics, pods, ns, name, hn[0] ? hn : NULL, objs, done,
				done_arg);
}

void syncer_metrics_cancel(void *call)
{
	host_metrics_cancel(call);
}

/* ---- start / stop --------------------------------------------------------------------- */

static int load_creds(const struct syncer_opts *o, struct kb_kubeconfig_creds *c)
{
	int rc = o->host_kubeconfig ? kb_kubeconfig_load(o->host_kubeconfig, NULL, c)
				    : kb_kubeconfig_in_cluster(NULL, c);
	if (rc < 0)
		kb_err("syncer", "host credentials (%s): %s",
		       o->host_kubeconfig ? o->host_kubeconfig : "in-cluster", strerror(-rc));
	return rc;
}

static int check_opts(const struct syncer_opts *o)
{
	const char *why = o->tenant ? syncer_check_tenant(o->tenant) : "none given";
	if (why || !o->host_namespace || !*o->host_namespace ||
	    !syncer_profile_find(o->scheduler)) {
		kb_err("syncer", "need --tenant (%s), --host-namespace and a known --scheduler",
		       why ? why : "ok");
		return -EINVAL;
	}
	if (o->api_service && !kb_dns_label(o->api_service, 63)) {
		kb_err("syncer", "--api-service wants a host Service's name, not %s",
		       o->api_service);
		return -EINVAL;
	}
	if (o->pod_dns && !kb_is_ip(o->pod_dns) && !kb_dns_label(o->pod_dns, 63)) {
		kb_err("syncer", "--pod-dns wants an IP address or a host Service's name, not %s",
		       o->pod_dns);
		return -EINVAL;
	}
	const struct syncer_profile *p = syncer_profile_find(o->scheduler);
	if ((p->queue_label || p->queue_annotation) && (!o->queue || !*o->queue)) {
		kb_err("syncer", "the %s profile needs --queue", p->name);
		return -EINVAL;
	}
	return 0;
}

static int start_watches(struct syncer *s)
{
	int64_t rev = store_rev(s->store);
	int rc = store_watch(s->store, "/pods", NULL, rev, on_tenant_pod, s, &s->w_pods);
	if (rc == 0)
		rc = store_watch(s->store, "/configmaps", NULL, rev, on_cfg_event, s, &s->w_cms);
	if (rc == 0)
		rc = store_watch(s->store, "/secrets", NULL, rev, on_cfg_event, s, &s->w_secrets);
	if (rc == 0)
		rc =
		    store_watch(s->store, "/serviceaccounts", NULL, rev, on_sa_event, s, &s->w_sas);
	if (rc < 0)
		return rc;
	struct syncer_mirror_opts vo = {.loop = s->loop,
					.store = s->store,
					.http = s->http,
					.x = &s->x,
					.label_selector = s->sel,
					.stats = &s->stats};
	if ((rc = syncer_mirror_start(&syncer_pvc_kind, &vo, &s->pvcs)) < 0)
		return rc;
	if ((rc = syncer_mirror_start(&syncer_service_kind, &vo, &s->svcs)) < 0)
		return rc;
	list_namespaces(s);
	list_netpols(s);
	if ((rc = store_watch(s->store, "networking.k8s.io/networkpolicies", NULL, rev, on_np_event,
			      s, &s->w_np)) < 0)
		return rc;
	s->x.netpols = &s->netpols;
	if ((rc = store_watch(s->store, "/namespaces", NULL, rev, on_ns_event, s, &s->w_ns)) < 0)
		return rc;
	if ((rc = syncer_mirror_start(&syncer_netpol_kind, &vo, &s->netpols)) < 0)
		return rc;
	if ((rc = syncer_pv_start(s->store, &s->pvs)) < 0)
		return rc;
	if ((rc = syncer_groups_start(s->loop, s->http, s->store, &s->x, s->sel, on_group_ready, s,
				      &s->stats, &s->groups)) < 0)
		return rc;
	struct syncer_ledger_opts lo = {.tenant = s->tenant,
					.queue = s->queue,
					.retention_s = s->ledger_retention_s,
					.prices_file = s->prices_file};
	if ((rc = syncer_ledger_start(s->loop, s->http, s->store, &lo, &s->ledger)) < 0)
		return rc;
	struct host_informer_opts po = {.path = s->pods_path,
					.label_selector = s->sel,
					.cache_view = syncer_host_pod_view,
					.on_event = on_host_pod,
					.on_synced = on_host_synced,
					.on_state = on_host_state,
					.arg = s};
	if ((rc = host_informer_start(s->loop, s->http, &po, &s->pods_inf)) < 0)
		return rc;
	if ((rc = host_metrics_start(s->http, s->tenant, s->host_ns, s->metrics_changed,
				     s->metrics_arg, &s->metrics)) < 0)
		return rc;
	return syncer_classes_start(s->loop, s->http, s->store, &s->classes);
}

static void init_state(struct syncer *s, uv_loop_t *loop, store_t *store,
		       const struct syncer_opts *o)
{
	s->loop = loop;
	s->store = store;
	s->ledger_retention_s = o->gpu_ledger_retention_s;
	s->prices_file = o->gpu_prices_file;
	snprintf(s->tenant, sizeof(s->tenant), "%s", o->tenant);
	snprintf(s->host_ns, sizeof(s->host_ns), "%s", o->host_namespace);
	snprintf(s->queue, sizeof(s->queue), "%s", o->queue ? o->queue : "");
	snprintf(s->advertise, sizeof(s->advertise), "%s", o->advertise ? o->advertise : "");
	if (kb_is_ip(o->pod_dns))
		snprintf(s->pod_dns, sizeof(s->pod_dns), "%s", o->pod_dns);
	else
		snprintf(s->dns_svc, sizeof(s->dns_svc), "%s", o->pod_dns ? o->pod_dns : "");
	snprintf(s->api_svc, sizeof(s->api_svc), "%s", o->api_service ? o->api_service : "");
	snprintf(s->domain, sizeof(s->domain), "%s",
		 o->cluster_domain ? o->cluster_domain : "cluster.local");
	s->x = (struct syncer_xlate){.tenant = s->tenant,
				     .host_ns = s->host_ns,
				     .queue = s->queue[0] ? s->queue : NULL,
				     .profile = syncer_profile_find(o->scheduler),
				     .topology_hints = o->topology_hints,
				     .image_pull_any = o->image_pull_any,
				     .api_host = s->advertise[0] ? s->advertise : NULL,
				     .api_port = o->api_port,
				     .pod_dns = s->pod_dns[0] ? s->pod_dns : NULL,
				     .cluster_domain = s->domain};
	snprintf(s->pods_path, sizeof(s->pods_path), "/api/v1/namespaces/%s/pods", s->host_ns);
	snprintf(s->sel, sizeof(s->sel), "kubicle.dev%%2Ftenant%%3D%s", s->tenant);
	s->pods = json_object();
	s->refs = json_object();
	s->nodes = json_object();
	s->sas = json_object();
	s->sa_auto = json_object();
	s->svc_env = json_object();
	s->issue_token = o->issue_token;
	s->issue_pod_token = o->issue_pod_token;
	s->token_arg = o->token_arg;
	s->metrics_changed = o->metrics_changed;
	s->metrics_arg = o->metrics_arg;
	s->max_pipes = o->max_streams ? o->max_streams : 256;
	s->gpu_quota_milli = o->gpu_quota_milli;
}

int syncer_start(uv_loop_t *loop, store_t *store, const struct syncer_opts *o, syncer_t **out)
{
	int rc = check_opts(o);
	if (rc < 0)
		return rc;
	struct kb_kubeconfig_creds cr;
	if ((rc = load_creds(o, &cr)) < 0)
		return rc;
	struct syncer *s = calloc(1, sizeof(*s));
	if (!s) {
		kb_kubeconfig_creds_free(&cr);
		return -ENOMEM;
	}
	init_state(s, loop, store, o);
	struct kb_httpc_opts ho = {.qps = o->qps < 0 ? 0 : (o->qps > 0 ? o->qps : 50),
				   .burst = o->burst ? o->burst : 100};
	kb_httpc_opts_from_creds(&ho, &cr);
	rc = kb_httpc_new(loop, &ho, &s->http);
	kb_kubeconfig_creds_free(&cr);
	if (rc < 0)
		goto fail;
	uv_timer_init(loop, &s->resync);
	s->resync.data = s;
	if ((rc = start_watches(s)) < 0) {
		syncer_stop(s);
		return rc;
	}
	uv_timer_start(&s->resync, on_resync_timer, RESYNC_MS, RESYNC_MS);
	kb_info("syncer", "tenant %s -> host namespace %s (%s profile, queue %s)", s->tenant,
		s->host_ns, s->x.profile->name, s->queue[0] ? s->queue : "-");
	*out = s;
	return 0;
fail:
	json_decref(s->pods);
	json_decref(s->refs);
	json_decref(s->nodes);
	json_decref(s->sas);
	json_decref(s->sa_auto);
	json_decref(s->svc_env);
	json_decref(s->namespaces);
	json_decref(s->netpol_list);
	free(s);
	return rc;
}

static void on_resync_closed(uv_handle_t *h)
{
	struct syncer *s = h->data;
	json_decref(s->pods);
	json_decref(s->host_quotas);
	json_decref(s->refs);
	json_decref(s->nodes);
	json_decref(s->sas);
	json_decref(s->sa_auto);
	json_decref(s->svc_env);
	json_decref(s->namespaces);
	json_decref(s->netpol_list);
	free(s);
}

void syncer_stop(syncer_t *s)
{
	if (!s || s->stopping)
		return;
	s->stopping = true;
	if (s->w_pods)
		store_unwatch(s->w_pods);
	if (s->w_cms)
		store_unwatch(s->w_cms);
	if (s->w_secrets)
		store_unwatch(s->w_secrets);
	if (s->w_sas)
		store_unwatch(s->w_sas);
	if (s->w_ns)
		store_unwatch(s->w_ns);
	if (s->w_np)
		store_unwatch(s->w_np);
	if (s->pods_inf)
		host_informer_stop(s->pods_inf);
	if (s->events_inf)
		host_informer_stop(s->events_inf);
	if (s->workloads_inf)
		host_informer_stop(s->workloads_inf);
	if (s->quotas_inf)
		host_informer_stop(s->quotas_inf);
	syncer_classes_stop(s->classes);
	syncer_mirror_stop(s->pvcs); /* its calls in flight are dropped next */
	syncer_mirror_stop(s->svcs);
	syncer_mirror_stop(s->netpols);
	s->netpols = NULL;
	syncer_pv_stop(s->pvs);
	s->pvs = NULL;
	host_metrics_stop(s->metrics);
	s->metrics = NULL;
	/* logs and pipes in flight end now, their tenant requests answered, so
	 * that no abort callback reaches a host client or syncer that is gone */
	while (s->logs) {
		struct log_pass *lp = s->logs;
		kb_httpc_cancel(lp->up);
		kb_http_req_on_abort(lp->req, NULL, NULL);
		if (lp->started)
			kb_http_stream_end(lp->req);
		else
			host_unreachable(lp->req);
		log_pass_free(lp);
	}
	while (s->pipe_list) {
		struct pipe *p = s->pipe_list;
		kb_httpc_tunnel_close(p->t); /* no callback after a close */
		pipe_closed(NULL, -ESHUTDOWN, p);
	}
	syncer_groups_stop(s->groups);
	s->groups = NULL;
	syncer_ledger_stop(s->ledger);
	s->ledger = NULL;
	host_calls_drop(s->http);
	kb_httpc_close(s->http);
	uv_close((uv_handle_t *)&s->resync, on_resync_closed);
}

void syncer_get_stats(const syncer_t *s, struct syncer_stats *out)
{
	*out = s->stats;
	out->host_pods = s->pods_inf ? json_object_size(host_informer_cache(s->pods_inf)) : 0;
	out->host_up = host_informer_up(s->pods_inf);
	out->host_errors = s->http ? (size_t)kb_httpc_failed(s->http) : 0;
	out->host_restarts =
	    host_informer_restarts(s->pods_inf) + host_informer_restarts(s->events_inf);
}

/* The syncer's part of GET /metrics (proxy_set_prom). */
void syncer_prom(void *arg, struct kb_buf *b)
{
	struct syncer_stats st;
	syncer_get_stats(arg, &st);
	kb_prom_scalar(
	    b, "kubicle_syncer_host_up", "gauge",
	    "1 when the syncer's host pod informer is listed and watching the host, else 0.",
	    st.host_up);
	kb_prom_scalar(b, "kubicle_syncer_host_pods", "gauge",
		       "Host pods of this tenant that the syncer's host informer holds.",
		       (double)st.host_pods);
	kb_prom_scalar(b, "kubicle_syncer_tenant_pods", "gauge", "Tenant pods the syncer tracks.",
		       (double)st.pods);
	kb_prom_family(b, "kubicle_syncer_host_writes_total", "counter",
		       "Writes the syncer sent to the host API, by operation.");
	static const char *const ops[] = {"create", "update", "delete"};
	size_t n[] = {st.host_creates, st.host_updates, st.host_deletes};
	for (size_t i = 0; i < 3; i++) {
		const char *l[] = {"operation", ops[i]};
		kb_prom_sample(b, "kubicle_syncer_host_writes_total", NULL, l, 1, (double)n[i]);
	}
	kb_prom_scalar(b, "kubicle_syncer_host_request_errors_total", "counter",
		       "Requests to the host API that failed: no answer, 429 or 5xx.",
		       (double)st.host_errors);
	kb_prom_scalar(b, "kubicle_syncer_host_watch_restarts_total", "counter",
		       "Host lists and watches started again after a failure or a 410 Gone.",
		       (double)st.host_restarts);
	kb_prom_scalar(b, "kubicle_syncer_resyncs_total", "counter",
		       "Full comparisons of tenant and host pods.", (double)st.resyncs);
	kb_prom_scalar(b, "kubicle_syncer_status_updates_total", "counter",
		       "Tenant pod status writes from host pod status.", (double)st.status_updates);
	syncer_ledger_prom(((struct syncer *)arg)->ledger, b);
}

/* ---- the egress policy's question ------------------------------------------- */

static bool ip_is(const char *ip, const struct kb_addr *a)
{
	struct kb_addr b;
	return ip && kb_addr_parse(ip, &b) == 0 && memcmp(&b, a, sizeof(b)) == 0;
}

static bool pod_has_ip(const json_t *hp, const struct kb_addr *a)
{
	const json_t *st = json_object_get(hp, "status");
	const char *host_ip = jstr(st, "hostIP");
	size_t i;
	json_t *p;
	if (host_ip && ip_is(host_ip, a))
		return false; /* the node's own address (host network) */
	if (ip_is(jstr(st, "podIP"), a))
		return true;
	json_array_foreach (json_object_get(st, "podIPs"), i, p)
		if (ip_is(jstr(p, "ip"), a))
			return true;
	return false;
}

static bool service_has_ip(const json_t *hs, const struct kb_addr *a)
{
	const json_t *spec = json_object_get(hs, "spec");
	size_t i;
	json_t *ip;
	if (ip_is(jstr(spec, "clusterIP"), a))
		return true;
	json_array_foreach (json_object_get(spec, "clusterIPs"), i, ip)
		if (ip_is(json_string_value(ip), a))
			return true;
	return false;
}

bool syncer_owns_address(void *arg, const struct kb_addr *a)
{
	struct syncer *s = arg;
	const char *k;
	json_t *v;
	if (!s || s->stopping)
		return false;
	json_object_foreach (s->pods_inf ? host_informer_cache(s->pods_inf) : NULL, k, v)
		if (pod_has_ip(v, a))
			return true;
	json_object_foreach (syncer_mirror_hosts(s->svcs), k, v)
		if (service_has_ip(v, a))
			return true;
	return false;
}
