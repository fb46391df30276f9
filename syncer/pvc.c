/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PersistentVolumeClaims, tenant to host and status back (syncer_impl.h).
 * Every tenant claim gets a host claim of its translated name, not only the
 * claims pods use: a WaitForFirstConsumer class binds when the host pod
 * comes, an Immediate one provisions at once, as it would on a cluster of
 * its own. Pods name their claims by translated name (translate.c).
 *
 * DESIGN
 * State: `claims` maps a host name to what we know of its tenant claim
 * ({ns, name, uid, creating, seen} and, as the tenant watch last showed it,
 * tstatus, tvol, tclass). `seen`: the host had the claim of this uid since
 * the syncer started. A claim the host no longer has is then one the host
 * removed (an admin, its namespace), and the tenant claim goes too, as for
 * pods and as vCluster does; one never seen (a restart, a restored tenant,
 * a host that refused it) is created. A host claim being deleted takes its
 * tenant claim with it; a tenant claim deleted deletes its host claim (the
 * host's own finalizer then keeps the volume while a host pod uses it).
 *
 * Back to the tenant: the host claim's status (syncer_pvc_status_from_host)
 * and, once bound, spec.volumeName (the tenant serves no PersistentVolumes:
 * the name is the host's, for `kubectl get pvc` and for tools that wait on
 * it), and the host's default storageClassName when the tenant claim named
 * none (what kube's DefaultStorageClass admission would have set). These
 * are written into the tenant store directly.
 *
 * Loops: those writes come back as tenant watch events that change nothing
 * pushed to the host (labels, annotations, resources.requests,
 * volumeAttributesClassName), so they are not sent on; a host event that
 * changes nothing the tenant claim shows as its last watch event showed it
 * costs no store read, and an equal status is never written.
 *
 * Resync: after every list of the host's claims and with the syncer's
 * periodic resync: missing host claims are created, host claims with the
 * tenant's label and kind PersistentVolumeClaim whose tenant claim is gone
 * are deleted, statuses are copied and updates pushed again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

#define PVC_RES  "/persistentvolumeclaims"
#define PVC_KIND "PersistentVolumeClaim"

/* A host write in flight; listed so that stop frees what host_calls_drop
 * does not call back. */
struct pvc_call {
	struct syncer_pvcs *p;
	struct pvc_call *prev, *next;
	char hn[SYNCER_NAME_MAX + 1];
};

struct syncer_pvcs {
	store_t *store;
	kb_httpc_t *http;
	const struct syncer_xlate *x;
	struct syncer_stats *stats;
	store_watch_t *w;
	struct host_informer *inf;
	json_t *claims; /* host name -> entry (see DESIGN) */
	struct pvc_call *calls;
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

static const char *spec_str(const json_t *o, const char *key)
{
	return jstr(json_object_get(o, "spec"), key);
}

static bool deleting(const json_t *o)
{
	return meta_str(o, "deletionTimestamp") != NULL;
}

static bool str_eq(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

static void claim_hn(struct syncer_pvcs *p, const json_t *pvc, char *hn)
{
	if (syncer_host_name(meta_str(pvc, "namespace"), meta_str(pvc, "name"), p->x->tenant, hn,
			     SYNCER_NAME_MAX + 1) < 0)
		hn[0] = '\0';
}

static json_t *host_claim(struct syncer_pvcs *p, const char *hn)
{
	return json_object_get(host_informer_cache(p->inf), hn);
}

/* True when host claim hp is one of ours: the tenant's label, annotations
 * naming a tenant claim and kind PersistentVolumeClaim (*ns, *name, *uid
 * borrowed from hp). The label alone is not enough: in-cluster (kubicle
 * manifest) the tenant server's own store claim carries it too. */
static bool owned(struct syncer_pvcs *p, const json_t *hp, const char **ns, const char **name,
		  const char **uid)
{
	const json_t *ann = json_object_get(json_object_get(hp, "metadata"), "annotations");
	return str_eq(jstr(ann, ANN_KIND), PVC_KIND) &&
	       syncer_host_owner(hp, p->x->tenant, ns, name, uid);
}

static const char *owner_uid(struct syncer_pvcs *p, const json_t *hp)
{
	const char *ns, *name, *uid;
	return hp && owned(p, hp, &ns, &name, &uid) ? uid : NULL;
}

/* ---- tracked claims ------------------------------------------------------------- */

/* The entry of tenant claim pvc (host name hn), made or, when pvc is
 * another claim of that name (another uid), made again. */
static json_t *entry(struct syncer_pvcs *p, const json_t *pvc, const char *hn)
{
	const char *uid = meta_str(pvc, "uid") ? meta_str(pvc, "uid") : "";
	json_t *e = json_object_get(p->claims, hn);
	if (e && str_eq(jstr(e, "uid"), uid))
		return e;
	e = json_pack("{s:s,s:s,s:s,s:b,s:b}", "ns", meta_str(pvc, "namespace"), "name",
		      meta_str(pvc, "name"), "uid", uid, "creating", 0, "seen", 0);
	json_object_set_new(p->claims, hn, e);
	p->stats->pvcs = json_object_size(p->claims);
	return e;
}

static void untrack(struct syncer_pvcs *p, const char *hn)
{
	json_object_del(p->claims, hn);
	p->stats->pvcs = json_object_size(p->claims);
}

/* Entry hn remembers tenant claim pvc as this watch event shows it. */
static void remember(struct syncer_pvcs *p, const json_t *pvc, const char *hn)
{
	json_t *e = entry(p, pvc, hn);
	static const char *const keys[] = {"tstatus", "tvol", "tclass"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		json_object_del(e, keys[i]);
	if (deleting(pvc))
		return;
	json_t *st = json_deep_copy(json_object_get(pvc, "status"));
	json_object_set_new(e, "tstatus", st ? st : json_object());
	if (spec_str(pvc, "volumeName"))
		json_object_set_new(e, "tvol", json_string(spec_str(pvc, "volumeName")));
	if (spec_str(pvc, "storageClassName"))
		json_object_set_new(e, "tclass", json_string(spec_str(pvc, "storageClassName")));
}

static void mark_seen(struct syncer_pvcs *p, const char *hn)
{
	json_t *e = json_object_get(p->claims, hn);
	if (e)
		json_object_set_new(e, "seen", json_true());
}

/* ---- host writes ---------------------------------------------------------------- */

static struct pvc_call *call_new(struct syncer_pvcs *p, const char *hn)
{
	struct pvc_call *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->p = p;
	snprintf(c->hn, sizeof(c->hn), "%s", hn);
	c->next = p->calls;
	if (p->calls)
		p->calls->prev = c;
	p->calls = c;
	return c;
}

static void call_free(struct pvc_call *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		c->p->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

static void on_created(int err, long status, json_t *body, void *arg)
{
	struct pvc_call *c = arg;
	json_t *e = json_object_get(c->p->claims, c->hn);
	if (e)
		json_object_set_new(e, "creating", json_false());
	/* 409: there already (ours, or the old claim of that name still being
	 * deleted: its DELETED event creates this one) */
	if (err)
		kb_info("syncer", "host claim %s: %s", c->hn, strerror(-err));
	else if (status >= 300 && status != 409)
		kb_info("syncer", "host refused claim %s: HTTP %ld %s", c->hn, status,
			jstr(body, "message") ? jstr(body, "message") : "");
	/* what the tenant can act on (a class, a size, a quota), as for pods */
	if (e && !err && status >= 400 && status < 500 && status != 409 && status != 429)
		syncer_record_event(c->p->store, jstr(e, "ns"), PVC_KIND, jstr(e, "name"),
				    jstr(e, "uid"), "Warning", "FailedCreate",
				    jstr(body, "message") ? jstr(body, "message")
							  : "the host refused the claim",
				    "host", NULL);
	call_free(c);
}

static void create_host(struct syncer_pvcs *p, const json_t *pvc, const char *hn)
{
	json_t *e = entry(p, pvc, hn);
	if (json_is_true(json_object_get(e, "creating")))
		return;
	json_t *hc = syncer_translate_pvc(p->x, pvc);
	struct pvc_call *c = hc ? call_new(p, hn) : NULL;
	if (c) {
		json_object_set_new(e, "creating", json_true());
		p->stats->host_creates++;
		if (host_call(p->http, "POST", p->path, hc, on_created, c) < 0) {
			json_object_set_new(e, "creating", json_false());
			call_free(c);
		}
	}
	json_decref(hc);
}

/* Deletes host claim hn of uid `uid` (a precondition: never a newer claim
 * of that name), unless the host is deleting it already. */
static void delete_host(struct syncer_pvcs *p, const json_t *hp, const char *hn)
{
	if (!hp || deleting(hp))
		return;
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", p->path, hn);
	json_t *opts =
	    json_pack("{s:s,s:s,s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
		      "preconditions", "uid", meta_str(hp, "uid") ? meta_str(hp, "uid") : "");
	host_call(p->http, "DELETE", path, opts, NULL, NULL);
	p->stats->host_deletes++;
	json_decref(opts);
}

static void on_patched(int err, long status, json_t *body, void *arg)
{
	struct pvc_call *c = arg;
	if (!err && status >= 300)
		kb_info("syncer", "host refused the update of claim %s: HTTP %ld %s", c->hn, status,
			jstr(body, "message") ? jstr(body, "message") : "");
	call_free(c);
}

/* Pushes what the host lets a claim change from tenant claim pvc to host
 * claim hn. `prev`: the tenant claim before the change, or NULL at a
 * resync (labels and annotations are then not removed). */
static void push_update(struct syncer_pvcs *p, const json_t *prev, const json_t *pvc,
			const char *hn)
{
	json_t *hp = host_claim(p, hn);
	if (!hp || deleting(hp))
		return;
	json_t *want = syncer_translate_pvc(p->x, pvc);
	json_t *was = prev ? syncer_translate_pvc(p->x, prev) : NULL;
	json_t *patch = want ? syncer_pvc_update_patch(want, hp, was) : NULL;
	struct pvc_call *c = patch ? call_new(p, hn) : NULL;
	if (c) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", p->path, hn);
		if (host_call_ct(p->http, "PATCH", path, "application/merge-patch+json", patch,
				 on_patched, c) < 0)
			call_free(c);
		else
			p->stats->host_updates++;
	}
	json_decref(patch);
	json_decref(was);
	json_decref(want);
}

/* What a tenant claim update may push (syncer_pvc_update_patch): equal? */
static bool same_pushable(const json_t *a, const json_t *b)
{
	const json_t *am = json_object_get(a, "metadata"), *bm = json_object_get(b, "metadata");
	const json_t *as = json_object_get(a, "spec"), *bs = json_object_get(b, "spec");
	return kb_json_same(json_object_get(am, "labels"), json_object_get(bm, "labels")) &&
	       kb_json_same(json_object_get(am, "annotations"),
			    json_object_get(bm, "annotations")) &&
	       kb_json_same(json_object_get(as, "resources"), json_object_get(bs, "resources")) &&
	       kb_json_same(json_object_get(as, "volumeAttributesClassName"),
			    json_object_get(bs, "volumeAttributesClassName"));
}

/* ---- back to the tenant ------------------------------------------------------------ */

static void tenant_remove(struct syncer_pvcs *p, const json_t *tp)
{
	store_delete(p->store, PVC_RES, meta_str(tp, "namespace"), meta_str(tp, "name"), 0, NULL,
		     NULL);
}

/* The tenant claim (new ref) of host claim hp when it is still the same
 * claim (uid), else NULL. */
static json_t *tenant_of(struct syncer_pvcs *p, const json_t *hp)
{
	const char *ns, *name, *uid;
	json_t *tp = NULL;
	if (!owned(p, hp, &ns, &name, &uid) || store_get(p->store, PVC_RES, ns, name, &tp) < 0)
		return NULL;
	if (!str_eq(meta_str(tp, "uid"), uid)) {
		json_decref(tp);
		return NULL;
	}
	return tp;
}

/* The host's default class for a tenant claim that named none. */
static const char *class_back(const json_t *hp, const json_t *tspec)
{
	const char *hc = spec_str(hp, "storageClassName");
	return hc && *hc && !json_object_get(tspec, "storageClassName") ? hc : NULL;
}

/* Copies host claim hp's status, bound volume and default class into tenant
 * claim tp (borrowed and modified), writing it only when something differs. */
static void copy_back(struct syncer_pvcs *p, const json_t *hp, json_t *tp)
{
	json_t *status = syncer_pvc_status_from_host(hp);
	json_t *tspec = json_object_get(tp, "spec");
	const char *vol = spec_str(hp, "volumeName"), *cls = class_back(hp, tspec);
	bool new_vol = vol && *vol && !str_eq(vol, jstr(tspec, "volumeName"));
	if (!status || (kb_json_same(status, json_object_get(tp, "status")) && !new_vol && !cls))
		goto out;
	if (!json_is_object(tspec)) {
		tspec = json_object();
		json_object_set_new(tp, "spec", tspec);
	}
	json_object_set(tp, "status", status);
	if (new_vol)
		json_object_set_new(tspec, "volumeName", json_string(vol));
	if (cls)
		json_object_set_new(tspec, "storageClassName", json_string(cls));
	if (store_update(p->store, PVC_RES, meta_str(tp, "namespace"), meta_str(tp, "name"), tp, 0,
			 NULL) == 0)
		p->stats->status_updates++;
out:
	json_decref(status);
}

/* True when host claim event hp would change nothing in its tenant claim as
 * the tenant watch last showed it: copy_back would read it only to find it
 * equal. */
static bool host_known(struct syncer_pvcs *p, const json_t *hp, const char *hn)
{
	json_t *e = json_object_get(p->claims, hn);
	json_t *ts = json_object_get(e, "tstatus");
	if (!ts || deleting(hp) || !str_eq(owner_uid(p, hp), jstr(e, "uid")))
		return false;
	const char *vol = spec_str(hp, "volumeName"), *hc = spec_str(hp, "storageClassName");
	if ((vol && *vol && !str_eq(vol, jstr(e, "tvol"))) || (hc && *hc && !jstr(e, "tclass")))
		return false;
	json_t *status = syncer_pvc_status_from_host(hp);
	bool eq = kb_json_same(status, ts);
	json_decref(status);
	return eq;
}

/* Host claim hp was deleted: its tenant claim goes (the host decided), or a
 * newer tenant claim of that name that waited for it gets its host claim. */
static void host_gone(struct syncer_pvcs *p, const json_t *hp, const char *hn)
{
	const char *ns, *name, *uid;
	json_t *tp = NULL;
	if (!owned(p, hp, &ns, &name, &uid))
		return;
	if (store_get(p->store, PVC_RES, ns, name, &tp) < 0 || deleting(tp)) {
		if (str_eq(jstr(json_object_get(p->claims, hn), "uid"), uid))
			untrack(p, hn);
	} else if (str_eq(meta_str(tp, "uid"), uid)) {
		kb_info("syncer", "host claim %s was deleted: deleting claim %s/%s", hn, ns, name);
		tenant_remove(p, tp);
		untrack(p, hn);
	} else {
		create_host(p, tp, hn);
	}
	json_decref(tp);
}

static void on_host_claim(const char *type, json_t *hp, void *arg)
{
	struct syncer_pvcs *p = arg;
	const char *hn = meta_str(hp, "name"), *ns, *name, *uid;
	if (!hn || !owned(p, hp, &ns, &name, &uid))
		return; /* not ours: never touched */
	if (strcmp(type, "DELETED") == 0) {
		host_gone(p, hp, hn);
		return;
	}
	if (host_known(p, hp, hn)) {
		mark_seen(p, hn);
		return;
	}
	json_t *tp = tenant_of(p, hp);
	if (!tp) {
		if (p->host_synced)
			delete_host(p, hp, hn); /* an orphan, or an older claim of that name */
		return;
	}
	entry(p, tp, hn);
	mark_seen(p, hn);
	if (deleting(hp) && !deleting(tp)) {
		kb_info("syncer", "host claim %s is being deleted: deleting claim %s/%s", hn, ns,
			name);
		tenant_remove(p, tp);
	} else {
		copy_back(p, hp, tp);
	}
	json_decref(tp);
}

/* ---- tenant claim events ------------------------------------------------------------ */

static void on_tenant_claim(const struct store_event *ev, void *arg)
{
	struct syncer_pvcs *p = arg;
	const json_t *pvc = ev->obj;
	char hn[SYNCER_NAME_MAX + 1];
	claim_hn(p, pvc, hn);
	if (!hn[0])
		return;
	json_t *hp = host_claim(p, hn);
	bool same_uid = str_eq(owner_uid(p, hp), meta_str(pvc, "uid"));
	if (ev->type == STORE_DELETED) {
		if (same_uid)
			delete_host(p, hp, hn);
		untrack(p, hn);
		return;
	}
	remember(p, pvc, hn);
	if (deleting(pvc)) {
		if (same_uid)
			delete_host(p, hp, hn);
	} else if (!hp) {
		create_host(p, pvc, hn);
	} else if (!same_uid) {
		delete_host(p, hp, hn); /* an older claim: this one follows its DELETED */
	} else if (ev->type == STORE_MODIFIED && ev->prev && !same_pushable(ev->prev, pvc)) {
		push_update(p, ev->prev, pvc, hn);
	}
}

/* ---- resync ------------------------------------------------------------------------- */

static void resync_claim(struct syncer_pvcs *p, json_t *tp, json_t *seen)
{
	char hn[SYNCER_NAME_MAX + 1];
	claim_hn(p, tp, hn);
	if (!hn[0])
		return;
	json_object_set_new(seen, hn, json_true());
	json_t *e = entry(p, tp, hn), *hp = host_claim(p, hn);
	if (json_is_true(json_object_get(e, "creating")))
		return;
	bool same_uid = str_eq(owner_uid(p, hp), meta_str(tp, "uid"));
	if (deleting(tp)) {
		if (same_uid)
			delete_host(p, hp, hn);
	} else if (!hp && json_is_true(json_object_get(e, "seen"))) {
		/* gone from the host while its watch was down */
		kb_info("syncer", "host claim %s is gone: deleting claim %s/%s", hn,
			meta_str(tp, "namespace"), meta_str(tp, "name"));
		tenant_remove(p, tp);
		untrack(p, hn);
	} else if (!hp) {
		create_host(p, tp, hn);
	} else if (!same_uid) {
		delete_host(p, hp, hn);
	} else if (deleting(hp)) {
		mark_seen(p, hn);
		tenant_remove(p, tp);
	} else {
		mark_seen(p, hn);
		copy_back(p, hp, tp);
		push_update(p, NULL, tp, hn); /* updates lost while the host was away */
	}
}

void syncer_pvcs_resync(struct syncer_pvcs *p)
{
	if (!p || !p->host_synced)
		return;
	struct store_list_req lr = {.res = PVC_RES};
	struct store_list_result res;
	if (store_list(p->store, &lr, &res) < 0)
		return;
	json_t *seen = json_object();
	size_t i;
	json_t *tp;
	json_array_foreach (res.items, i, tp)
		resync_claim(p, tp, seen);
	json_decref(res.items);
	free(res.next);
	/* host claims with our label and kind and no tenant claim: orphans */
	const char *hn;
	json_t *hp;
	void *tmp;
	json_t *cache = json_copy(host_informer_cache(p->inf));
	json_object_foreach_safe (cache, tmp, hn, hp) {
		if (!json_object_get(seen, hn) && owner_uid(p, hp))
			delete_host(p, hp, hn);
	}
	json_decref(cache);
	/* entries of claims gone from the tenant */
	json_t *claims = json_copy(p->claims);
	json_object_foreach_safe (claims, tmp, hn, hp) {
		if (!json_object_get(seen, hn))
			untrack(p, hn);
	}
	json_decref(claims);
	json_decref(seen);
}

static void on_host_synced(json_t *items, void *arg)
{
	struct syncer_pvcs *p = arg;
	(void)items;
	p->host_synced = true;
	syncer_pvcs_resync(p);
}

/* ---- start / stop ------------------------------------------------------------------- */

json_t *syncer_pvcs_host(struct syncer_pvcs *p, const char *hn)
{
	json_t *hp = p ? host_claim(p, hn) : NULL;
	return owner_uid(p, hp) ? hp : NULL;
}

int syncer_pvcs_start(const struct syncer_pvcs_opts *o, struct syncer_pvcs **out)
{
	struct syncer_pvcs *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->store = o->store;
	p->http = o->http;
	p->x = o->x;
	p->stats = o->stats;
	p->claims = json_object();
	snprintf(p->path, sizeof(p->path), "/api/v1/namespaces/%s/persistentvolumeclaims",
		 o->x->host_ns);
	snprintf(p->sel, sizeof(p->sel), "%s", o->label_selector);
	int rc =
	    store_watch(p->store, PVC_RES, NULL, store_rev(p->store), on_tenant_claim, p, &p->w);
	if (rc < 0)
		goto fail;
	struct host_informer_opts io = {.path = p->path,
					.label_selector = p->sel,
					.on_event = on_host_claim,
					.on_synced = on_host_synced,
					.arg = p};
	if ((rc = host_informer_start(o->loop, p->http, &io, &p->inf)) < 0) {
		store_unwatch(p->w);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	json_decref(p->claims);
	free(p);
	return rc;
}

void syncer_pvcs_stop(struct syncer_pvcs *p)
{
	if (!p)
		return;
	store_unwatch(p->w);
	host_informer_stop(p->inf);
	while (p->calls)
		call_free(p->calls);
	json_decref(p->claims);
	free(p);
}
