/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The garbage collector: an index of every object's ownerReferences fed by
 * the store watch, and the rules of kube's garbage collector. When an owner
 * is gone its dependents are deleted (Background), or released when they
 * still have a live owner. An owner marked for deletion with the finalizer
 * "orphan" has its ownerReferences removed from every dependent; one with
 * "foregroundDeletion" deletes its dependents first and goes once no
 * dependent with blockOwnerDeletion is left. The finalizer is removed by the
 * collector, which lets the API finish the deletion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"
#include "proxy/model/resource.h"

#define GC_MANAGER "generic-garbage-collector"

/* An indexed object: one allocation, its strings after the owners' uids
 * (every create of any kind makes one). */
struct gc_obj {
	const char *res, *ns, *name;
	size_t nowners;
	const char *owners[];
};

static void gc_obj_free(void *p)
{
	free(p);
}

/* The entry of an object at res/ns/name with the uids of refs (its
 * ownerReferences; those without a uid left out), or NULL. */
static struct gc_obj *gc_obj_new(const char *res, const char *ns, const char *name,
				 const json_t *refs)
{
	size_t n = json_array_size(refs), len = strlen(res) + strlen(ns) + strlen(name) + 3, i;
	const char *ou;
	json_t *ref;
	json_array_foreach (refs, i, ref)
		if ((ou = json_string_value(json_object_get(ref, "uid"))))
			len += strlen(ou) + 1;
	struct gc_obj *o = malloc(sizeof(*o) + n * sizeof(char *) + len);
	if (!o)
		return NULL;
	char *m = (char *)&o->owners[n];
	o->nowners = 0;
	o->res = m;
	m = stpcpy(m, res) + 1;
	o->ns = m;
	m = stpcpy(m, ns) + 1;
	o->name = m;
	m = stpcpy(m, name) + 1;
	json_array_foreach (refs, i, ref)
		if ((ou = json_string_value(json_object_get(ref, "uid")))) {
			o->owners[o->nowners++] = m;
			m = stpcpy(m, ou) + 1;
		}
	return o;
}

static void deps_free(void *p)
{
	kmap_free(p);
}

int ctrl_gc_init(struct ctrl *c)
{
	c->objs = kmap_new(gc_obj_free);
	c->deps = kmap_new(deps_free);
	return c->objs && c->deps ? 0 : -ENOMEM;
}

void ctrl_gc_free(struct ctrl *c)
{
	kmap_free(c->objs);
	kmap_free(c->deps);
	c->objs = c->deps = NULL;
}

static void unlink_owners(struct ctrl *c, const char *uid)
{
	struct gc_obj *o = kmap_get(c->objs, uid);
	if (!o)
		return;
	for (size_t i = 0; i < o->nowners; i++) {
		struct kmap *d = kmap_get(c->deps, o->owners[i]);
		if (!d)
			continue;
		kmap_del(d, uid);
		if (kmap_size(d) == 0)
			kmap_del(c->deps, o->owners[i]);
	}
}

static bool has_fin(const json_t *obj, const char *fin)
{
	const json_t *fins = ctrl_path(obj, "metadata.finalizers");
	size_t i;
	json_t *f;
	json_array_foreach (fins, i, f)
		if (json_string_value(f) && strcmp(json_string_value(f), fin) == 0)
			return true;
	return false;
}

static void link_owner(struct ctrl *c, const char *owner, const char *uid)
{
	struct kmap *d = kmap_get(c->deps, owner);
	if (!d) {
		d = kmap_new(NULL);
		if (!d || kmap_put(c->deps, owner, d) < 0) {
			kmap_free(d);
			return;
		}
	}
	kmap_put(d, uid, NULL);
	if (!kmap_has(c->objs, owner))
		ctrl_enqueue(c, "gc", "", owner); /* dangling: the owner is gone */
}

/* Indexes obj (its metadata meta, its uid): its owners, and the collector's
 * key when it is being deleted with a finalizer the collector handles. */
static void index_obj(struct ctrl *c, const char *res, const json_t *obj, const json_t *meta,
		      const char *uid)
{
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	if (!name)
		return;
	unlink_owners(c, uid);
	struct gc_obj *o =
	    gc_obj_new(res, ns ? ns : "", name, json_object_get(meta, "ownerReferences"));
	if (!o || kmap_put(c->objs, uid, o) < 0) {
		free(o);
		return;
	}
	for (size_t i = 0; i < o->nowners; i++)
		link_owner(c, o->owners[i], uid);
	if (json_object_get(meta, "deletionTimestamp") &&
	    (has_fin(obj, "orphan") || has_fin(obj, "foregroundDeletion")))
		ctrl_enqueue(c, "gc", "", uid);
}

void ctrl_gc_index_obj(struct ctrl *c, const char *res, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const char *uid = json_string_value(json_object_get(meta, "uid"));
	if (uid)
		index_obj(c, res, obj, meta, uid);
}

void ctrl_gc_index(struct ctrl *c, const char *res, const struct store_event *ev)
{
	const json_t *meta = json_object_get(ev->obj, "metadata");
	const char *uid = json_string_value(json_object_get(meta, "uid"));
	if (!uid)
		return;
	if (ev->type != STORE_DELETED) {
		index_obj(c, res, ev->obj, meta, uid);
		return;
	}
	struct gc_obj *o = kmap_get(c->objs, uid);
	if (o)
		for (size_t i = 0; i < o->nowners; i++)
			ctrl_enqueue(c, "gc", "", o->owners[i]);
	unlink_owners(c, uid);
	kmap_del(c->objs, uid);
	if (kmap_has(c->deps, uid))
		ctrl_enqueue(c, "gc", "", uid);
}

static void dangling(const char *key, void *val, void *arg)
{
	struct ctrl *c = arg;
	(void)val;
	if (!kmap_has(c->objs, key))
		ctrl_enqueue(c, "gc", "", key);
}

void ctrl_gc_resync(struct ctrl *c)
{
	kmap_each(c->deps, dangling, c);
}

/* ---- sync ------------------------------------------------------------------ */

static const struct proxy_resource *res_of_key(const char *key)
{
	for (size_t i = 0; i < resource_count(); i++)
		if (strcmp(resource_at(i)->store_key, key) == 0)
			return resource_at(i);
	return NULL;
}

struct uid_list {
	char **v;
	size_t n;
};

static void collect(const char *key, void *val, void *arg)
{
	struct uid_list *l = arg;
	(void)val;
	l->v[l->n++] = strdup(key);
}

/* A copy of the dependents of owner uid (they change while we write). */
static struct uid_list dependents(struct ctrl *c, const char *uid)
{
	struct uid_list l = {0};
	struct kmap *d = kmap_get(c->deps, uid);
	if (!d || !(l.v = calloc(kmap_size(d) + 1, sizeof(char *))))
		return l;
	kmap_each(d, collect, &l);
	return l;
}

static void uid_list_free(struct uid_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static json_t *load(struct ctrl *c, const char *uid, const struct proxy_resource **res)
{
	struct gc_obj *o = kmap_get(c->objs, uid);
	if (!o || !(*res = res_of_key(o->res)))
		return NULL;
	return ctrl_get(c, o->res, o->ns, o->name);
}

static int update(struct ctrl *c, const struct proxy_resource *r, json_t *obj)
{
	return proxy_object_update(c->px, r->group, r->version, r->plural, obj, GC_MANAGER, NULL);
}

/* Removes the ownerReferences to owner from dep (borrowed). */
static int release(struct ctrl *c, const struct proxy_resource *r, json_t *dep, const char *owner)
{
	json_t *upd = json_deep_copy(dep);
	json_t *refs = ctrl_path(upd, "metadata.ownerReferences");
	for (size_t i = json_array_size(refs); i-- > 0;) {
		const char *u = json_string_value(json_object_get(json_array_get(refs, i), "uid"));
		if (u && strcmp(u, owner) == 0)
			json_array_remove(refs, i);
	}
	if (json_array_size(refs) == 0)
		json_object_del(json_object_get(upd, "metadata"), "ownerReferences");
	int rc = update(c, r, upd);
	json_decref(upd);
	return rc;
}

static int remove_finalizer(struct ctrl *c, const struct proxy_resource *r, json_t *obj,
			    const char *fin)
{
	json_t *upd = json_deep_copy(obj);
	json_t *fins = ctrl_path(upd, "metadata.finalizers");
	for (size_t i = json_array_size(fins); i-- > 0;) {
		const char *f = json_string_value(json_array_get(fins, i));
		if (f && strcmp(f, fin) == 0)
			json_array_remove(fins, i);
	}
	int rc = update(c, r, upd);
	json_decref(upd);
	return rc;
}

static bool has_live_owner(struct ctrl *c, const json_t *dep, const char *except)
{
	size_t i;
	json_t *ref;
	json_array_foreach (ctrl_path(dep, "metadata.ownerReferences"), i, ref) {
		const char *u = json_string_value(json_object_get(ref, "uid"));
		if (u && strcmp(u, except) != 0 && kmap_has(c->objs, u))
			return true;
	}
	return false;
}

static bool blocks(const json_t *dep, const char *owner)
{
	size_t i;
	json_t *ref;
	json_array_foreach (ctrl_path(dep, "metadata.ownerReferences"), i, ref) {
		const char *u = json_string_value(json_object_get(ref, "uid"));
		if (u && strcmp(u, owner) == 0 &&
		    json_is_true(json_object_get(ref, "blockOwnerDeletion")))
			return true;
	}
	return false;
}

static int delete_dep(struct ctrl *c, const struct proxy_resource *r, const json_t *dep,
		      const char *dep_uid, const char *policy)
{
	if (ctrl_path(dep, "metadata.deletionTimestamp"))
		return 0;
	const char *p = policy;
	if (!p)
		p = kmap_has(c->deps, dep_uid) ? "Foreground" : "Background";
	int rc = proxy_object_delete(c->px, r->group, r->version, r->plural, ctrl_ns(dep),
				     ctrl_name(dep), dep_uid, p, GC_MANAGER);
	return rc == -ENOENT ? 0 : rc;
}

/* The owner is gone: delete dependents, or release those with live owners. */
static int collect_orphans(struct ctrl *c, const char *uid)
{
	struct uid_list l = dependents(c, uid);
	int rc = 0;
	for (size_t i = 0; i < l.n; i++) {
		const struct proxy_resource *r = NULL;
		json_t *dep = load(c, l.v[i], &r);
		if (!dep)
			continue;
		int err = has_live_owner(c, dep, uid) ? release(c, r, dep, uid)
						      : delete_dep(c, r, dep, l.v[i], "Background");
		if (err < 0 && err != -ENOENT)
			rc = err;
		json_decref(dep);
	}
	uid_list_free(&l);
	return rc;
}

static int orphan_dependents(struct ctrl *c, const char *uid, const struct proxy_resource *r,
			     json_t *owner)
{
	struct uid_list l = dependents(c, uid);
	int rc = 0;
	for (size_t i = 0; i < l.n && rc == 0; i++) {
		const struct proxy_resource *dr = NULL;
		json_t *dep = load(c, l.v[i], &dr);
		if (dep)
			rc = release(c, dr, dep, uid);
		json_decref(dep);
	}
	uid_list_free(&l);
	if (rc == 0)
		rc = remove_finalizer(c, r, owner, "orphan");
	return rc == -ENOENT ? 0 : rc;
}

static int foreground(struct ctrl *c, const char *uid, const struct proxy_resource *r,
		      json_t *owner)
{
	struct uid_list l = dependents(c, uid);
	int rc = 0;
	for (size_t i = 0; i < l.n; i++) {
		const struct proxy_resource *dr = NULL;
		json_t *dep = load(c, l.v[i], &dr);
		if (dep && rc == 0)
			rc = delete_dep(c, dr, dep, l.v[i], NULL);
		json_decref(dep);
	}
	uid_list_free(&l);
	if (rc < 0)
		return rc;
	/* what is left after the deletions above */
	l = dependents(c, uid);
	size_t blocking = 0;
	for (size_t i = 0; i < l.n; i++) {
		const struct proxy_resource *dr = NULL;
		json_t *dep = load(c, l.v[i], &dr);
		if (dep && blocks(dep, uid))
			blocking++;
		json_decref(dep);
	}
	uid_list_free(&l);
	if (blocking > 0)
		return 0;
	rc = remove_finalizer(c, r, owner, "foregroundDeletion");
	return rc == -ENOENT ? 0 : rc;
}

int ctrl_gc_sync(struct ctrl *c, const char *uid)
{
	if (!kmap_has(c->objs, uid))
		return collect_orphans(c, uid);
	const struct proxy_resource *r = NULL;
	json_t *owner = load(c, uid, &r);
	int rc = 0;
	if (!owner || !ctrl_path(owner, "metadata.deletionTimestamp"))
		goto out;
	if (has_fin(owner, "orphan"))
		rc = orphan_dependents(c, uid, r, owner);
	else if (has_fin(owner, "foregroundDeletion"))
		rc = foreground(c, uid, r, owner);
out:
	json_decref(owner);
	return rc;
}
