/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mirrored kinds (syncer_impl.h): one host object per tenant object of a
 * kind, in the host namespace under its translated name, kept by one engine
 * that a table of hooks (struct syncer_mirror_kind) drives. Its rows are
 * PersistentVolumeClaims (pvc.c) and Services (service.c); their DESIGN
 * paragraphs say what is particular to each.
 *
 * DESIGN
 * State: `objs` maps a host name to what we know of its tenant object:
 * {ns, name, uid, creating, seen} and whatever the kind's remember hook
 * keeps of the last tenant watch event. `creating`: a POST is in flight, so
 * a second one is not sent. `seen`: the host had the object of this uid
 * since the syncer started (used by SYNCER_MIRROR_TENANT_FOLLOWS only).
 *
 * Ownership: a host object is ours when it carries the tenant's label,
 * annotations naming a tenant object that lives under that very host name
 * (syncer_host_owner) and the kind in ANN_KIND (the label alone is not
 * enough: in-cluster, the tenant server's own claim and Service carry it
 * too); no other host object is ever updated, adopted or deleted: one under
 * a tenant object's host name is a conflict, reported as a Warning event
 * on the tenant object (syncer_conflict). Names an older Kubicle gave are
 * adopted when the object there is exactly the tenant object's, uid
 * included (host_name). Deletes carry
 * the host object's uid as a precondition, so a newer object of that name
 * is never deleted. A tenant object whose name still has an older host
 * object (another uid) deletes it and is created at its DELETED event.
 *
 * When the host deletes an object, the kind's policy decides: the tenant
 * object follows (the host decided, as for pods) when the host was seen to
 * have it, else it is created (a restart, a restored tenant, a refusal); or
 * the host object is created again (the tenant owns it).
 *
 * Loops: write-back into the tenant store comes back as tenant watch events;
 * the kind's same_pushable and update patch say they change nothing the
 * host gets, and its host_known lets a host event that changes nothing the
 * tenant object showed cost no store read.
 *
 * Resync: after every list of the host's objects and with the syncer's
 * periodic resync (nothing before the first list): missing host objects are
 * created, host objects of ours whose tenant object is gone are deleted,
 * what the host sets is copied back and updates are pushed again.
 *
 * Threads: all of it runs on the syncer's loop thread. Host writes in flight
 * are listed (struct mirror_call) so that stop frees those host_calls_drop
 * does not call back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

/* A host write in flight, with the host name it concerns. */
struct mirror_call {
	struct syncer_mirror *m;
	struct mirror_call *prev, *next;
	char hn[SYNCER_NAME_MAX + 1];
};

struct syncer_mirror {
	const struct syncer_mirror_kind *k;
	store_t *store;
	kb_httpc_t *http;
	const struct syncer_xlate *x;
	struct syncer_stats *stats;
	store_watch_t *w;
	struct host_informer *inf;
	json_t *objs; /* host name -> entry (see DESIGN) */
	struct mirror_call *calls;
	char path[256], sel[160];
	unsigned long gen; /* syncer_mirror_gen */
	bool host_synced;
};

/* ---- small helpers -------------------------------------------------------------- */

struct syncer_mirror;
static bool owned(struct syncer_mirror *m, const json_t *hp, const char **ns, const char **name,
		  const char **uid);

static const char *owner_uid(struct syncer_mirror *m, const json_t *hp)
{
	const char *ns, *name, *uid;
	return hp && owned(m, hp, &ns, &name, &uid) ? uid : NULL;
}

static const char *owner_uid_of(const json_t *hp)
{
	return jstr(json_object_get(json_object_get(hp, "metadata"), "annotations"), ANN_UID);
}

static bool deleting(const json_t *o)
{
	return meta_str(o, "deletionTimestamp") != NULL;
}

static bool str_eq(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

static bool follows_host(const struct syncer_mirror *m)
{
	return m->k->host_deleted == SYNCER_MIRROR_TENANT_FOLLOWS;
}

json_t *syncer_mirror_hosts(struct syncer_mirror *m)
{
	return m ? host_informer_cache(m->inf) : NULL;
}

static json_t *host_obj(struct syncer_mirror *m, const char *hn)
{
	return json_object_get(host_informer_cache(m->inf), hn);
}

/* True when host object hp is one of ours (see DESIGN); *ns, *name, *uid
 * borrowed from hp. */
static bool owned(struct syncer_mirror *m, const json_t *hp, const char **ns, const char **name,
		  const char **uid)
{
	const json_t *ann = json_object_get(json_object_get(hp, "metadata"), "annotations");
	return str_eq(jstr(ann, ANN_KIND), m->k->kind) &&
	       syncer_host_owner(hp, m->x->tenant, ns, name, uid);
}

/* True when hp is ours and of tenant object obj's namespace and name (its
 * uid or an older object's of that name). */
static bool owned_by(struct syncer_mirror *m, const json_t *hp, const json_t *obj)
{
	const char *ns, *name, *uid;
	return hp && owned(m, hp, &ns, &name, &uid) &&
	       syncer_host_is(hp, m->x->tenant, meta_str(obj, "namespace"), meta_str(obj, "name"),
			      NULL);
}

/*
 * hn gets tenant object obj's host name, or "" when it has none (not
 * synced, or no name): its translated name, unless the host has nothing
 * there and has this very object (uid) under the name an older Kubicle
 * gave it, which it keeps (adopted: a claim is never made again empty for
 * a rename; syncer_host_name_legacy).
 */
static void host_name(struct syncer_mirror *m, const json_t *obj, char *hn)
{
	const char *ns = meta_str(obj, "namespace"), *name = meta_str(obj, "name");
	char old[SYNCER_NAME_MAX + 1];
	json_t *hp;
	if ((m->k->synced && !m->k->synced(obj)) ||
	    syncer_host_name(ns, name, m->x->tenant, hn, SYNCER_NAME_MAX + 1) < 0) {
		hn[0] = '\0';
		return;
	}
	if (host_obj(m, hn) ||
	    syncer_host_name_legacy(ns, name, m->x->tenant, old, sizeof(old)) < 0 ||
	    strcmp(old, hn) == 0 || !(hp = host_obj(m, old)) || !owned_by(m, hp, obj) ||
	    !str_eq(owner_uid_of(hp), meta_str(obj, "uid")))
		return;
	snprintf(hn, SYNCER_NAME_MAX + 1, "%s", old);
}

/* A host object of tenant object obj's name that is not its (another
 * tenant's, or our label on another object's annotations): reported,
 * never touched. */
static void conflict(struct syncer_mirror *m, const json_t *hp, const json_t *obj)
{
	syncer_conflict(m->store, m->x->tenant, m->k->kind, meta_str(obj, "namespace"),
			meta_str(obj, "name"), meta_str(obj, "uid"), hp);
}

static void host_path(struct syncer_mirror *m, const char *hn, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", m->path, hn);
}

/* ---- tracked objects ------------------------------------------------------------ */

static void count(struct syncer_mirror *m)
{
	*m->k->tracked(m->stats) = json_object_size(m->objs);
}

/* The entry of tenant object obj (host name hn), made or, when obj is
 * another object of that name (another uid), made again. */
static json_t *entry(struct syncer_mirror *m, const json_t *obj, const char *hn)
{
	const char *uid = meta_str(obj, "uid") ? meta_str(obj, "uid") : "";
	json_t *e = json_object_get(m->objs, hn);
	if (e && str_eq(jstr(e, "uid"), uid))
		return e;
	e = json_pack("{s:s,s:s,s:s,s:b,s:b}", "ns", meta_str(obj, "namespace"), "name",
		      meta_str(obj, "name"), "uid", uid, "creating", 0, "seen", 0);
	json_object_set_new(m->objs, hn, e);
	count(m);
	return e;
}

static void untrack(struct syncer_mirror *m, const char *hn)
{
	json_object_del(m->objs, hn);
	count(m);
}

static void mark_seen(struct syncer_mirror *m, const char *hn)
{
	json_t *e = json_object_get(m->objs, hn);
	if (e)
		json_object_set_new(e, "seen", json_true());
}

/* ---- host writes ---------------------------------------------------------------- */

static struct mirror_call *call_new(struct syncer_mirror *m, const char *hn)
{
	struct mirror_call *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->m = m;
	snprintf(c->hn, sizeof(c->hn), "%s", hn);
	KB_LIST_PUSH(m->calls, c);
	return c;
}

static void call_free(struct mirror_call *c)
{
	KB_LIST_UNLINK(c->m->calls, c);
	free(c);
}

/* What the tenant can act on (a quota, a class, a node port, a field the
 * host does not take) becomes a Warning event on the tenant object of the
 * call's entry; not 409 (there already) or 429 (throttled), which are not
 * the tenant's to mend. */
static void refusal_event(struct mirror_call *c, long status, const json_t *body,
			  const char *reason, const char *suffix)
{
	const struct syncer_mirror_kind *k = c->m->k;
	json_t *e = json_object_get(c->m->objs, c->hn);
	char dflt[64];
	if (!e || status < 400 || status >= 500 || status == 409 || status == 429)
		return;
	snprintf(dflt, sizeof(dflt), "the host refused the %s", k->noun);
	syncer_record_event(c->m->store, jstr(e, "ns"), k->kind, jstr(e, "name"), jstr(e, "uid"),
			    "Warning", reason, jstr(body, "message") ? jstr(body, "message") : dflt,
			    suffix, NULL);
}

static void on_created(int err, long status, json_t *body, void *arg)
{
	struct mirror_call *c = arg;
	const struct syncer_mirror_kind *k = c->m->k;
	json_t *e = json_object_get(c->m->objs, c->hn);
	if (e)
		json_object_set_new(e, "creating", json_false());
	/* 409: there already (ours, or the older object of that name still
	 * being deleted: its DELETED event creates this one) */
	if (err) {
		kb_info("syncer", "host %s %s: %s", k->noun, c->hn, strerror(-err));
	} else if (status == 409 && e && !host_obj(c->m, c->hn)) {
		/* there, and not in our informer: ours being listed, or not ours */
		char path[512];
		host_path(c->m, c->hn, path, sizeof(path));
		syncer_check_conflict(c->m->http, c->m->store, path, c->m->x->tenant, k->kind,
				      jstr(e, "ns"), jstr(e, "name"), jstr(e, "uid"));
	} else if (status >= 300 && status != 409) {
		kb_info("syncer", "host refused %s %s: HTTP %ld %s", k->create_refused, c->hn,
			status, jstr(body, "message") ? jstr(body, "message") : "");
		refusal_event(c, status, body, "FailedCreate", "host");
	}
	call_free(c);
}

static void create_host(struct syncer_mirror *m, const json_t *obj, const char *hn)
{
	json_t *e = entry(m, obj, hn);
	if (json_is_true(json_object_get(e, "creating")))
		return;
	json_t *hp = m->k->translate(m->x, obj);
	struct mirror_call *c = hp ? call_new(m, hn) : NULL;
	if (c) {
		json_object_set_new(e, "creating", json_true());
		m->stats->host_creates++;
		if (host_call(m->http, "POST", m->path, hp, on_created, c) < 0) {
			json_object_set_new(e, "creating", json_false());
			call_free(c);
		}
	}
	json_decref(hp);
}

/* Deletes host object hn of hp's uid (a precondition: never a newer object
 * of that name), unless the host is deleting it already. */
static void delete_host(struct syncer_mirror *m, const json_t *hp, const char *hn)
{
	if (!hp || deleting(hp) || !owner_uid(m, hp))
		return; /* not ours: never touched */
	char path[512];
	host_path(m, hn, path, sizeof(path));
	json_t *opts =
	    json_pack("{s:s,s:s,s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
		      "preconditions", "uid", meta_str(hp, "uid") ? meta_str(hp, "uid") : "");
	host_call(m->http, "DELETE", path, opts, NULL, NULL);
	m->stats->host_deletes++;
	json_decref(opts);
}

static void on_patched(int err, long status, json_t *body, void *arg)
{
	struct mirror_call *c = arg;
	const struct syncer_mirror_kind *k = c->m->k;
	if (!err && status >= 300) {
		kb_info("syncer", "host refused the update of %s %s: HTTP %ld %s", k->noun, c->hn,
			status, jstr(body, "message") ? jstr(body, "message") : "");
		if (k->update_refusal_event)
			refusal_event(c, status, body, "FailedUpdate", "host-update");
	}
	call_free(c);
}

/* Pushes what the host lets the kind change from tenant object obj onto
 * host object hn, as a merge patch. `prev`: the tenant object before the
 * change, or NULL at a resync (labels and annotations are then not
 * removed). */
static void push_update(struct syncer_mirror *m, const json_t *prev, const json_t *obj,
			const char *hn)
{
	json_t *hp = host_obj(m, hn);
	if (!hp || deleting(hp) || !owned_by(m, hp, obj))
		return;
	json_t *want = m->k->translate(m->x, obj);
	json_t *was = prev ? m->k->translate(m->x, prev) : NULL;
	json_t *patch = want ? m->k->update_patch(want, hp, was) : NULL;
	struct mirror_call *c = patch ? call_new(m, hn) : NULL;
	if (c) {
		char path[512];
		host_path(m, hn, path, sizeof(path));
		if (host_call_ct(m->http, "PATCH", path, "application/merge-patch+json", patch,
				 on_patched, c) < 0)
			call_free(c);
		else
			m->stats->host_updates++;
	}
	json_decref(patch);
	json_decref(was);
	json_decref(want);
}

/* ---- back to the tenant ------------------------------------------------------------ */

static void tenant_remove(struct syncer_mirror *m, const json_t *tp)
{
	store_delete(m->store, m->k->res, meta_str(tp, "namespace"), meta_str(tp, "name"), 0, NULL,
		     NULL);
}

/* The tenant object (new ref) of host object hp when it is still the same
 * object (uid), else NULL. */
static json_t *tenant_of(struct syncer_mirror *m, const json_t *hp)
{
	const char *ns, *name, *uid;
	json_t *tp = NULL;
	if (!owned(m, hp, &ns, &name, &uid) || store_get(m->store, m->k->res, ns, name, &tp) < 0)
		return NULL;
	if (!str_eq(meta_str(tp, "uid"), uid)) {
		json_decref(tp);
		return NULL;
	}
	return tp;
}

/* Writes what the host set on hp into tenant object tp (borrowed; the hook
 * may modify it), only when the kind's copy_back finds a difference. */
static void copy_back(struct syncer_mirror *m, const json_t *hp, json_t *tp)
{
	json_t *back = m->k->copy_back(hp, tp);
	if (back && store_update(m->store, m->k->res, meta_str(tp, "namespace"),
				 meta_str(tp, "name"), back, 0, NULL) == 0)
		m->stats->status_updates++;
	json_decref(back);
}

/* True when host event hp would change nothing in its tenant object as the
 * tenant watch last showed it (the kind's host_known), so that copy_back
 * need not read the store to find it equal. */
static bool host_known(struct syncer_mirror *m, const json_t *hp, const char *hn)
{
	json_t *e = json_object_get(m->objs, hn);
	return m->k->host_known && e && !deleting(hp) && str_eq(owner_uid(m, hp), jstr(e, "uid")) &&
	       m->k->host_known(hp, e);
}

/* Host object hn of a tenant object that still exists (tp) was deleted:
 * by the kind's policy, the tenant object goes (same uid) or the host
 * object is made again; a newer tenant object that waited gets its own. */
static void host_gone_live(struct syncer_mirror *m, json_t *tp, const char *uid, const char *hn)
{
	bool same = str_eq(meta_str(tp, "uid"), uid);
	const char *noun = m->k->noun;
	if (same && follows_host(m)) {
		kb_info("syncer", "host %s %s was deleted: deleting %s %s/%s", noun, hn, noun,
			meta_str(tp, "namespace"), meta_str(tp, "name"));
		tenant_remove(m, tp);
		untrack(m, hn);
		return;
	}
	if (same)
		kb_info("syncer", "host %s %s was deleted: creating it again", noun, hn);
	create_host(m, tp, hn);
}

static void host_gone(struct syncer_mirror *m, const json_t *hp, const char *hn)
{
	const char *ns, *name, *uid;
	json_t *tp = NULL;
	if (!owned(m, hp, &ns, &name, &uid))
		return;
	if (store_get(m->store, m->k->res, ns, name, &tp) < 0 || deleting(tp)) {
		if (str_eq(jstr(json_object_get(m->objs, hn), "uid"), uid))
			untrack(m, hn);
	} else {
		host_gone_live(m, tp, uid, hn);
	}
	json_decref(tp);
}

/* Host object hp of tenant object tp (same uid) changed: a host deleting
 * it takes the tenant object along when the tenant follows the host;
 * otherwise what the host set is copied back (not onto a tenant object
 * the host may drop under a tenant-owned policy). */
static void host_changed(struct syncer_mirror *m, const json_t *hp, json_t *tp, const char *hn)
{
	if (!follows_host(m)) {
		if (!deleting(hp) && !deleting(tp))
			copy_back(m, hp, tp);
	} else if (deleting(hp) && !deleting(tp)) {
		kb_info("syncer", "host %s %s is being deleted: deleting %s %s/%s", m->k->noun, hn,
			m->k->noun, meta_str(tp, "namespace"), meta_str(tp, "name"));
		tenant_remove(m, tp);
	} else {
		copy_back(m, hp, tp);
	}
}

static void on_host_event(const char *type, json_t *hp, void *arg)
{
	struct syncer_mirror *m = arg;
	const char *hn = meta_str(hp, "name");
	m->gen++;
	if (!hn || !owner_uid(m, hp))
		return; /* not ours: never touched */
	if (strcmp(type, "DELETED") == 0) {
		host_gone(m, hp, hn);
		return;
	}
	if (host_known(m, hp, hn)) {
		mark_seen(m, hn);
		return;
	}
	json_t *tp = tenant_of(m, hp);
	if (!tp) {
		if (m->host_synced)
			delete_host(m, hp, hn); /* an orphan, or an older object of that name */
		return;
	}
	entry(m, tp, hn);
	mark_seen(m, hn);
	host_changed(m, hp, tp, hn);
	json_decref(tp);
}

/* ---- tenant events ------------------------------------------------------------------ */

/* Whether tenant update ev may change what the host object gets. */
static bool pushable(struct syncer_mirror *m, const struct store_event *ev)
{
	if (ev->type != STORE_MODIFIED)
		return false;
	return !m->k->same_pushable || (ev->prev && !m->k->same_pushable(ev->prev, ev->obj));
}

static void on_tenant_event(const struct store_event *ev, void *arg)
{
	struct syncer_mirror *m = arg;
	const json_t *obj = ev->obj;
	char hn[SYNCER_NAME_MAX + 1];
	m->gen++;
	host_name(m, obj, hn);
	if (!hn[0])
		return;
	json_t *hp = host_obj(m, hn);
	bool same_uid = str_eq(owner_uid(m, hp), meta_str(obj, "uid"));
	if (ev->type != STORE_DELETED && m->k->remember)
		m->k->remember(entry(m, obj, hn), obj);
	if (ev->type == STORE_DELETED || deleting(obj)) {
		if (same_uid)
			delete_host(m, hp, hn);
		if (ev->type == STORE_DELETED)
			untrack(m, hn);
		return;
	}
	entry(m, obj, hn);
	if (!hp)
		create_host(m, obj, hn);
	else if (!owned_by(m, hp, obj))
		conflict(m, hp, obj);
	else if (!same_uid)
		delete_host(m, hp, hn); /* an older object: this one follows its DELETED */
	else if (pushable(m, ev))
		push_update(m, ev->prev, obj, hn);
}

/* ---- resync ------------------------------------------------------------------------- */

/* Tenant object tp, not being deleted, with host object hp of another uid
 * or none (e: its entry). */
static void resync_missing(struct syncer_mirror *m, json_t *tp, json_t *e, const char *hn)
{
	if (follows_host(m) && json_is_true(json_object_get(e, "seen"))) {
		/* gone from the host while its watch was down */
		kb_info("syncer", "host %s %s is gone: deleting %s %s/%s", m->k->noun, hn,
			m->k->noun, meta_str(tp, "namespace"), meta_str(tp, "name"));
		tenant_remove(m, tp);
		untrack(m, hn);
	} else {
		create_host(m, tp, hn); /* new, refused before, or deleted unseen */
	}
}

static void resync_obj(struct syncer_mirror *m, json_t *tp, json_t *seen)
{
	char hn[SYNCER_NAME_MAX + 1];
	host_name(m, tp, hn);
	if (!hn[0])
		return;
	json_object_set_new(seen, hn, json_true());
	json_t *e = entry(m, tp, hn), *hp = host_obj(m, hn);
	if (json_is_true(json_object_get(e, "creating")))
		return;
	bool same_uid = str_eq(owner_uid(m, hp), meta_str(tp, "uid"));
	if (deleting(tp)) {
		if (same_uid)
			delete_host(m, hp, hn);
	} else if (!hp) {
		resync_missing(m, tp, e, hn);
	} else if (!owned_by(m, hp, tp)) {
		conflict(m, hp, tp);
	} else if (!same_uid) {
		delete_host(m, hp, hn);
	} else if (deleting(hp)) {
		mark_seen(m, hn);
		if (follows_host(m))
			tenant_remove(m, tp);
	} else {
		mark_seen(m, hn);
		copy_back(m, hp, tp);
		push_update(m, NULL, tp, hn); /* updates lost while the host was away */
	}
}

/* Host objects of ours whose tenant object the resync did not see
 * (orphans) are deleted; entries of tenant objects it did not see go. */
static void resync_forget(struct syncer_mirror *m, json_t *seen)
{
	const char *hn;
	json_t *o;
	void *tmp;
	json_t *cache = json_copy(host_informer_cache(m->inf));
	json_object_foreach_safe (cache, tmp, hn, o) {
		if (!json_object_get(seen, hn) && owner_uid(m, o))
			delete_host(m, o, hn);
	}
	json_decref(cache);
	json_t *objs = json_copy(m->objs);
	json_object_foreach_safe (objs, tmp, hn, o) {
		if (!json_object_get(seen, hn))
			untrack(m, hn);
	}
	json_decref(objs);
}

void syncer_mirror_resync(struct syncer_mirror *m)
{
	if (!m || !m->host_synced)
		return;
	struct store_list_req lr = {.res = m->k->res};
	struct store_list_result res;
	if (store_list(m->store, &lr, &res) < 0)
		return;
	json_t *seen = json_object();
	size_t i;
	json_t *tp;
	json_array_foreach (res.items, i, tp)
		resync_obj(m, tp, seen);
	json_decref(res.items);
	free(res.next);
	resync_forget(m, seen);
	json_decref(seen);
}

static void on_host_synced(json_t *items, void *arg)
{
	struct syncer_mirror *m = arg;
	(void)items;
	m->gen++;
	m->host_synced = true;
	syncer_mirror_resync(m);
}

/* ---- lookups, start / stop ---------------------------------------------------------- */

json_t *syncer_mirror_host(struct syncer_mirror *m, const char *hn)
{
	json_t *hp = m ? host_obj(m, hn) : NULL;
	return owner_uid(m, hp) ? hp : NULL;
}

unsigned long syncer_mirror_gen(const struct syncer_mirror *m)
{
	return m ? m->gen : 0;
}

json_t *syncer_mirror_host_any(struct syncer_mirror *m, const char *hn)
{
	return m ? host_obj(m, hn) : NULL;
}

void syncer_mirror_name(struct syncer_mirror *m, const json_t *obj, char *hn)
{
	if (m)
		host_name(m, obj, hn);
	else
		hn[0] = '\0';
}

json_t *syncer_mirror_host_of(struct syncer_mirror *m, const json_t *obj)
{
	char hn[SYNCER_NAME_MAX + 1];
	if (!m)
		return NULL;
	host_name(m, obj, hn);
	json_t *hp = hn[0] ? host_obj(m, hn) : NULL;
	const char *uid = owner_uid(m, hp);
	return uid && str_eq(uid, meta_str(obj, "uid")) ? hp : NULL;
}

int syncer_mirror_start(const struct syncer_mirror_kind *k, const struct syncer_mirror_opts *o,
			struct syncer_mirror **out)
{
	struct syncer_mirror *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->k = k;
	m->store = o->store;
	m->http = o->http;
	m->x = o->x;
	m->stats = o->stats;
	m->objs = json_object();
	snprintf(m->path, sizeof(m->path), "%s/namespaces/%s/%s", k->api ? k->api : "/api/v1",
		 o->x->host_ns, k->plural);
	snprintf(m->sel, sizeof(m->sel), "%s", o->label_selector);
	int rc =
	    store_watch(m->store, k->res, NULL, store_rev(m->store), on_tenant_event, m, &m->w);
	if (rc < 0)
		goto fail_watch;
	struct host_informer_opts io = {.path = m->path,
					.label_selector = m->sel,
					.on_event = on_host_event,
					.on_synced = on_host_synced,
					.arg = m};
	if ((rc = host_informer_start(o->loop, m->http, &io, &m->inf)) < 0)
		goto fail_informer;
	*out = m;
	return 0;
fail_informer:
	store_unwatch(m->w);
fail_watch:
	json_decref(m->objs);
	free(m);
	return rc;
}

void syncer_mirror_stop(struct syncer_mirror *m)
{
	if (!m)
		return;
	store_unwatch(m->w);
	host_informer_stop(m->inf);
	while (m->calls)
		call_free(m->calls);
	json_decref(m->objs);
	free(m);
}
