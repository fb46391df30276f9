/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Services, tenant to host and allocations back (syncer_impl.h), as
 * vCluster's service syncer does: every tenant Service but default/kubernetes
 * (the tenant API itself, which pods reach through KUBERNETES_SERVICE_HOST)
 * gets a host Service of its translated name whose selector picks the host
 * pods of the tenant Service's namespace, so host pods reach each other
 * through it.
 *
 * DESIGN
 * State: `svcs` maps a host name to {ns, name, uid, creating} of its tenant
 * Service. The tenant owns the host Service: one deleted on the host while
 * its tenant Service exists is created again (unlike a pod or a claim, a
 * Service holds nothing the host could have had a reason to take away); a
 * tenant Service deleted deletes its host Service; a host Service with the
 * tenant's label and kind Service whose tenant Service is gone (an orphan,
 * left while the tenant was down) is deleted once the host's Services were
 * listed.
 *
 * Back to the tenant, written into the tenant store directly: the host's
 * spec.clusterIP and clusterIPs (so that an address a tenant reads, or a pod
 * gets from DNS or its environment, works on the host), the node ports and
 * healthCheckNodePort the host allocated, and status.loadBalancer. A port's
 * nodePort is then part of the tenant Service, and passed back down as if
 * the tenant had chosen it: the host keeps it across updates.
 *
 * Updates: each tenant watch event is compared with the host Service as
 * last seen (syncer_service_update_patch), and what differs is sent as a
 * merge patch; the write-back above changes nothing that is compared, so it
 * does not loop. A host that refuses a create or an update (its quota, a
 * node port taken) gives the tenant Service a Warning event with the host's
 * message; the resync (every 30 s and after each relist) tries again.
 *
 * Not synced: a Service without selector gets a host Service without
 * selector, but its manually written Endpoints and EndpointSlices stay in
 * the tenant; externalIPs are dropped (translate.c says why).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

#define SVC_RES  "/services"
#define SVC_KIND "Service"

/* A host write in flight; listed so that stop frees what host_calls_drop
 * does not call back. */
struct svc_call {
	struct syncer_svcs *v;
	struct svc_call *prev, *next;
	char hn[SYNCER_NAME_MAX + 1];
};

struct syncer_svcs {
	store_t *store;
	kb_httpc_t *http;
	const struct syncer_xlate *x;
	struct syncer_stats *stats;
	store_watch_t *w;
	struct host_informer *inf;
	json_t *svcs; /* host name -> entry (see DESIGN) */
	struct svc_call *calls;
	char path[256], sel[160];
	bool host_synced;
};

/* ---- small helpers -------------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static const char *meta_str(const json_t *o, const char *key)
{
	return jstr(json_object_get(o, "metadata"), key);
}

static bool deleting(const json_t *o)
{
	return meta_str(o, "deletionTimestamp") != NULL;
}

static bool str_eq(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

/* default/kubernetes is the tenant API: never a host Service. */
static bool synced(const json_t *svc)
{
	return !str_eq(meta_str(svc, "namespace"), "default") ||
	       !str_eq(meta_str(svc, "name"), "kubernetes");
}

static void svc_hn(struct syncer_svcs *v, const json_t *svc, char *hn)
{
	if (!synced(svc) || syncer_host_name(meta_str(svc, "namespace"), meta_str(svc, "name"),
					     v->x->tenant, hn, SYNCER_NAME_MAX + 1) < 0)
		hn[0] = '\0';
}

static json_t *host_svc(struct syncer_svcs *v, const char *hn)
{
	return json_object_get(host_informer_cache(v->inf), hn);
}

/* True when host Service hs is one of ours: the tenant's label, annotations
 * naming a tenant Service and kind Service (*ns, *name, *uid borrowed from
 * hs). The label alone is not enough: in-cluster (kubicle manifest) the
 * tenant server's own Service carries it too. */
static bool owned(struct syncer_svcs *v, const json_t *hs, const char **ns, const char **name,
		  const char **uid)
{
	const json_t *ann = json_object_get(json_object_get(hs, "metadata"), "annotations");
	return str_eq(jstr(ann, ANN_KIND), SVC_KIND) &&
	       syncer_host_owner(hs, v->x->tenant, ns, name, uid);
}

static const char *owner_uid(struct syncer_svcs *v, const json_t *hs)
{
	const char *ns, *name, *uid;
	return hs && owned(v, hs, &ns, &name, &uid) ? uid : NULL;
}

bool syncer_svcs_on_host(struct syncer_svcs *v, const json_t *svc)
{
	char hn[SYNCER_NAME_MAX + 1];
	if (!v)
		return false;
	svc_hn(v, svc, hn);
	const json_t *hs = hn[0] ? host_svc(v, hn) : NULL;
	const char *ip = jstr(json_object_get(svc, "spec"), "clusterIP");
	return hs && owner_uid(v, hs) && str_eq(owner_uid(v, hs), meta_str(svc, "uid")) &&
	       str_eq(jstr(json_object_get(hs, "spec"), "clusterIP"), ip);
}

/* ---- tracked Services ------------------------------------------------------------ */

/* The entry of tenant Service svc (host name hn), made or, when svc is
 * another Service of that name (another uid), made again. */
static json_t *entry(struct syncer_svcs *v, const json_t *svc, const char *hn)
{
	const char *uid = meta_str(svc, "uid") ? meta_str(svc, "uid") : "";
	json_t *e = json_object_get(v->svcs, hn);
	if (e && str_eq(jstr(e, "uid"), uid))
		return e;
	e = json_pack("{s:s,s:s,s:s,s:b}", "ns", meta_str(svc, "namespace"), "name",
		      meta_str(svc, "name"), "uid", uid, "creating", 0);
	json_object_set_new(v->svcs, hn, e);
	v->stats->services = json_object_size(v->svcs);
	return e;
}

static void untrack(struct syncer_svcs *v, const char *hn)
{
	json_object_del(v->svcs, hn);
	v->stats->services = json_object_size(v->svcs);
}

/* ---- host writes ---------------------------------------------------------------- */

static struct svc_call *call_new(struct syncer_svcs *v, const char *hn)
{
	struct svc_call *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->v = v;
	snprintf(c->hn, sizeof(c->hn), "%s", hn);
	c->next = v->calls;
	if (v->calls)
		v->calls->prev = c;
	v->calls = c;
	return c;
}

static void call_free(struct svc_call *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		c->v->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

/* A refusal the tenant can act on (a quota, a node port, a field the host
 * does not take) as a Warning event on the tenant Service of entry e. */
static void refused(struct svc_call *c, long status, const json_t *body, const char *reason,
		    const char *suffix)
{
	json_t *e = json_object_get(c->v->svcs, c->hn);
	const char *msg = jstr(body, "message");
	kb_info("syncer", "host refused %s of service %s: HTTP %ld %s",
		strcmp(reason, "FailedCreate") == 0 ? "the creation" : "the update", c->hn, status,
		msg ? msg : "");
	if (e && status >= 400 && status < 500 && status != 409 && status != 429)
		syncer_record_event(c->v->store, jstr(e, "ns"), SVC_KIND, jstr(e, "name"),
				    jstr(e, "uid"), "Warning", reason,
				    msg ? msg : "the host refused the service", suffix, NULL);
}

static void on_created(int err, long status, json_t *body, void *arg)
{
	struct svc_call *c = arg;
	json_t *e = json_object_get(c->v->svcs, c->hn);
	if (e)
		json_object_set_new(e, "creating", json_false());
	/* 409: there already (ours, or an older Service of that name still
	 * being deleted: its DELETED event creates this one) */
	if (err)
		kb_info("syncer", "host service %s: %s", c->hn, strerror(-err));
	else if (status >= 300 && status != 409)
		refused(c, status, body, "FailedCreate", "host");
	call_free(c);
}

static void create_host(struct syncer_svcs *v, const json_t *svc, const char *hn)
{
	json_t *e = entry(v, svc, hn);
	if (json_is_true(json_object_get(e, "creating")))
		return;
	json_t *hs = syncer_translate_service(v->x, svc);
	struct svc_call *c = hs ? call_new(v, hn) : NULL;
	if (c) {
		json_object_set_new(e, "creating", json_true());
		v->stats->host_creates++;
		if (host_call(v->http, "POST", v->path, hs, on_created, c) < 0) {
			json_object_set_new(e, "creating", json_false());
			call_free(c);
		}
	}
	json_decref(hs);
}

/* Deletes host Service hn of its uid (a precondition: never a newer
 * Service of that name), unless the host is deleting it already. */
static void delete_host(struct syncer_svcs *v, const json_t *hs, const char *hn)
{
	if (!hs || deleting(hs))
		return;
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", v->path, hn);
	json_t *opts =
	    json_pack("{s:s,s:s,s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
		      "preconditions", "uid", meta_str(hs, "uid") ? meta_str(hs, "uid") : "");
	host_call(v->http, "DELETE", path, opts, NULL, NULL);
	v->stats->host_deletes++;
	json_decref(opts);
}

static void on_patched(int err, long status, json_t *body, void *arg)
{
	struct svc_call *c = arg;
	if (!err && status >= 300)
		refused(c, status, body, "FailedUpdate", "host-update");
	call_free(c);
}

/* Pushes tenant Service svc's changes onto host Service hn. `prev`: the
 * tenant Service before the change, or NULL at a resync (labels and
 * annotations are then not removed). */
static void push_update(struct syncer_svcs *v, const json_t *prev, const json_t *svc,
			const char *hn)
{
	json_t *hs = host_svc(v, hn);
	if (!hs || deleting(hs))
		return;
	json_t *want = syncer_translate_service(v->x, svc);
	json_t *was = prev ? syncer_translate_service(v->x, prev) : NULL;
	json_t *patch = want ? syncer_service_update_patch(want, hs, was) : NULL;
	struct svc_call *c = patch ? call_new(v, hn) : NULL;
	if (c) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", v->path, hn);
		if (host_call_ct(v->http, "PATCH", path, "application/merge-patch+json", patch,
				 on_patched, c) < 0)
			call_free(c);
		else
			v->stats->host_updates++;
	}
	json_decref(patch);
	json_decref(was);
	json_decref(want);
}

/* ---- back to the tenant ------------------------------------------------------------ */

/* The tenant Service (new ref) of host Service hs when it is still the same
 * Service (uid), else NULL. */
static json_t *tenant_of(struct syncer_svcs *v, const json_t *hs)
{
	const char *ns, *name, *uid;
	json_t *ts = NULL;
	if (!owned(v, hs, &ns, &name, &uid) || store_get(v->store, SVC_RES, ns, name, &ts) < 0)
		return NULL;
	if (!str_eq(meta_str(ts, "uid"), uid)) {
		json_decref(ts);
		return NULL;
	}
	return ts;
}

/* Writes what the host allocated for hs into tenant Service ts (borrowed),
 * only when something differs. */
static void copy_back(struct syncer_svcs *v, const json_t *hs, const json_t *ts)
{
	json_t *back = syncer_service_back(ts, hs);
	if (back && store_update(v->store, SVC_RES, meta_str(ts, "namespace"), meta_str(ts, "name"),
				 back, 0, NULL) == 0)
		v->stats->status_updates++;
	json_decref(back);
}

/* Host Service hs was deleted: the tenant Service of that name, if any and
 * not being deleted, gets it again (the same uid: someone else deleted it;
 * another: a newer tenant Service waited for the older host Service). */
static void host_gone(struct syncer_svcs *v, const json_t *hs, const char *hn)
{
	const char *ns, *name, *uid;
	json_t *ts = NULL;
	if (!owned(v, hs, &ns, &name, &uid))
		return;
	if (store_get(v->store, SVC_RES, ns, name, &ts) < 0 || deleting(ts)) {
		if (str_eq(jstr(json_object_get(v->svcs, hn), "uid"), uid))
			untrack(v, hn);
	} else {
		if (str_eq(meta_str(ts, "uid"), uid))
			kb_info("syncer", "host service %s was deleted: creating it again", hn);
		create_host(v, ts, hn);
	}
	json_decref(ts);
}

static void on_host_svc(const char *type, json_t *hs, void *arg)
{
	struct syncer_svcs *v = arg;
	const char *hn = meta_str(hs, "name"), *ns, *name, *uid;
	if (!hn || !owned(v, hs, &ns, &name, &uid))
		return; /* not ours: never touched */
	if (strcmp(type, "DELETED") == 0) {
		host_gone(v, hs, hn);
		return;
	}
	json_t *ts = tenant_of(v, hs);
	if (!ts) {
		if (v->host_synced)
			delete_host(v, hs, hn); /* an orphan, or an older Service of that name */
		return;
	}
	entry(v, ts, hn);
	if (!deleting(hs) && !deleting(ts))
		copy_back(v, hs, ts);
	json_decref(ts);
}

/* ---- tenant Service events ---------------------------------------------------------- */

static void on_tenant_svc(const struct store_event *ev, void *arg)
{
	struct syncer_svcs *v = arg;
	const json_t *svc = ev->obj;
	char hn[SYNCER_NAME_MAX + 1];
	svc_hn(v, svc, hn);
	if (!hn[0])
		return;
	json_t *hs = host_svc(v, hn);
	bool same_uid = str_eq(owner_uid(v, hs), meta_str(svc, "uid"));
	if (ev->type == STORE_DELETED || deleting(svc)) {
		if (same_uid)
			delete_host(v, hs, hn);
		if (ev->type == STORE_DELETED)
			untrack(v, hn);
		return;
	}
	entry(v, svc, hn);
	if (!hs)
		create_host(v, svc, hn);
	else if (!same_uid)
		delete_host(v, hs, hn); /* an older Service: this one follows its DELETED */
	else if (ev->type == STORE_MODIFIED)
		push_update(v, ev->prev, svc, hn);
}

/* ---- resync ------------------------------------------------------------------------- */

static void resync_svc(struct syncer_svcs *v, json_t *ts, json_t *seen)
{
	char hn[SYNCER_NAME_MAX + 1];
	svc_hn(v, ts, hn);
	if (!hn[0])
		return;
	json_object_set_new(seen, hn, json_true());
	json_t *e = entry(v, ts, hn), *hs = host_svc(v, hn);
	if (json_is_true(json_object_get(e, "creating")))
		return;
	bool same_uid = str_eq(owner_uid(v, hs), meta_str(ts, "uid"));
	if (deleting(ts)) {
		if (same_uid)
			delete_host(v, hs, hn);
	} else if (!hs) {
		create_host(v, ts, hn); /* new, refused before, or deleted unseen */
	} else if (!same_uid) {
		delete_host(v, hs, hn);
	} else if (!deleting(hs)) {
		copy_back(v, hs, ts);
		push_update(v, NULL, ts, hn); /* updates lost while the host was away */
	}
}

void syncer_svcs_resync(struct syncer_svcs *v)
{
	if (!v || !v->host_synced)
		return;
	struct store_list_req lr = {.res = SVC_RES};
	struct store_list_result res;
	if (store_list(v->store, &lr, &res) < 0)
		return;
	json_t *seen = json_object();
	size_t i;
	json_t *ts;
	json_array_foreach (res.items, i, ts)
		resync_svc(v, ts, seen);
	json_decref(res.items);
	free(res.next);
	/* host Services with our label and kind and no tenant Service: orphans */
	const char *hn;
	json_t *hs;
	void *tmp;
	json_t *cache = json_copy(host_informer_cache(v->inf));
	json_object_foreach_safe (cache, tmp, hn, hs) {
		if (!json_object_get(seen, hn) && owner_uid(v, hs))
			delete_host(v, hs, hn);
	}
	json_decref(cache);
	/* entries of Services gone from the tenant */
	json_t *svcs = json_copy(v->svcs);
	json_object_foreach_safe (svcs, tmp, hn, hs) {
		if (!json_object_get(seen, hn))
			untrack(v, hn);
	}
	json_decref(svcs);
	json_decref(seen);
}

static void on_host_synced(json_t *items, void *arg)
{
	struct syncer_svcs *v = arg;
	(void)items;
	v->host_synced = true;
	syncer_svcs_resync(v);
}

/* ---- start / stop ------------------------------------------------------------------- */

int syncer_svcs_start(const struct syncer_pvcs_opts *o, struct syncer_svcs **out)
{
	struct syncer_svcs *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->store = o->store;
	v->http = o->http;
	v->x = o->x;
	v->stats = o->stats;
	v->svcs = json_object();
	snprintf(v->path, sizeof(v->path), "/api/v1/namespaces/%s/services", o->x->host_ns);
	snprintf(v->sel, sizeof(v->sel), "%s", o->label_selector);
	int rc = store_watch(v->store, SVC_RES, NULL, store_rev(v->store), on_tenant_svc, v, &v->w);
	if (rc < 0)
		goto fail;
	struct host_informer_opts io = {.path = v->path,
					.label_selector = v->sel,
					.on_event = on_host_svc,
					.on_synced = on_host_synced,
					.arg = v};
	if ((rc = host_informer_start(o->loop, v->http, &io, &v->inf)) < 0) {
		store_unwatch(v->w);
		goto fail;
	}
	*out = v;
	return 0;
fail:
	json_decref(v->svcs);
	free(v);
	return rc;
}

void syncer_svcs_stop(struct syncer_svcs *v)
{
	if (!v)
		return;
	store_unwatch(v->w);
	host_informer_stop(v->inf);
	while (v->calls)
		call_free(v->calls);
	json_decref(v->svcs);
	free(v);
}
