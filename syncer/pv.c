/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PersistentVolumes in the tenant for the claims the host bound: what
 * `kubectl get pv` shows on a cluster of its own, and what tools that follow
 * a claim's spec.volumeName to its volume read.
 *
 * The host's volume itself is not copied: its source (an NFS server, a
 * cloud disk id, a CSI handle) is the platform's business, and reading it
 * would need a cluster-wide grant on the host. A tenant volume is made from
 * its claim, as vCluster's fake volumes are: the name the host bound the
 * claim to (the claim's spec.volumeName, copied back by pvc.c), the claim's
 * capacity and access modes as the host reported them, its class and volume
 * mode, a claimRef to the tenant claim, reclaim policy Delete, phase Bound,
 * and a CSI source of driver "host.kubicle.dev" whose handle is the volume's
 * name. It carries the annotation kubicle.dev/host-volume; a volume of the
 * same name without it is the tenant's own and is left alone.
 *
 * DESIGN: a watch of the tenant's claims. A bound claim's volume is made or
 * brought up to date (a resize); a claim deleted, or being deleted, takes
 * its volume with it. At start, a resync does both for what changed while
 * the tenant was down. Writes go to the tenant store directly, as pvc.c's.
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "syncer/syncer_impl.h"

#define PV_RES     "/persistentvolumes"
#define PVC_RES    "/persistentvolumeclaims"
#define ANN_VOLUME "kubicle.dev/host-volume"
#define PV_DRIVER  "host.kubicle.dev"

struct syncer_pv {
	store_t *st;
	store_watch_t *w;
};

static const char *path_str(const json_t *o, const char *a, const char *b)
{
	return jstr(json_object_get(o, a), b);
}

/* Whether stored volume pv is one this file made. */
static bool ours(const json_t *pv)
{
	return jstr(json_object_get(json_object_get(pv, "metadata"), "annotations"), ANN_VOLUME);
}

/* The volume claim pvc is bound to, or NULL. */
static const char *bound_volume(const json_t *pvc)
{
	const char *vol = path_str(pvc, "spec", "volumeName");
	const char *phase = path_str(pvc, "status", "phase");
	if (!vol || !*vol || !phase || strcmp(phase, "Bound") != 0 ||
	    path_str(pvc, "metadata", "deletionTimestamp"))
		return NULL;
	return vol;
}

static void copy_key(json_t *to, const char *tkey, const json_t *from, const char *fkey)
{
	json_t *v = json_object_get(from, fkey);
	if (v && !json_is_null(v))
		json_object_set(to, tkey, v);
}

/* The tenant volume for bound claim pvc (new reference). */
static json_t *volume_of(const json_t *pvc, const char *vol)
{
	const json_t *meta = json_object_get(pvc, "metadata");
	const json_t *spec = json_object_get(pvc, "spec");
	const json_t *status = json_object_get(pvc, "status");
	json_t *pv =
	    json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s,s:{s:s,s:s,s:s,s:s,s:s,s:s}"
		      ",s:{s:s,s:s}},s:{s:s}}",
		      "apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", vol,
		      "annotations", ANN_VOLUME, "true", "spec", "persistentVolumeReclaimPolicy",
		      "Delete", "claimRef", "kind", "PersistentVolumeClaim", "apiVersion", "v1",
		      "namespace", jstr(meta, "namespace"), "name", jstr(meta, "name"), "uid",
		      jstr(meta, "uid") ? jstr(meta, "uid") : "", "resourceVersion",
		      jstr(meta, "resourceVersion") ? jstr(meta, "resourceVersion") : "", "csi",
		      "driver", PV_DRIVER, "volumeHandle", vol, "status", "phase", "Bound");
	if (!pv)
		return NULL;
	json_t *ps = json_object_get(pv, "spec");
	const json_t *cap = json_object_get(status, "capacity");
	if (!json_object_get(cap, "storage"))
		cap = json_object_get(json_object_get(spec, "resources"), "requests");
	if (json_object_get(cap, "storage"))
		json_object_set_new(ps, "capacity",
				    json_pack("{s:O}", "storage", json_object_get(cap, "storage")));
	copy_key(ps, "accessModes", status, "accessModes");
	if (!json_object_get(ps, "accessModes"))
		copy_key(ps, "accessModes", spec, "accessModes");
	copy_key(ps, "storageClassName", spec, "storageClassName");
	copy_key(ps, "volumeMode", spec, "volumeMode");
	copy_key(ps, "volumeAttributesClassName", spec, "volumeAttributesClassName");
	return pv;
}

/* What a volume shows, without the store's metadata and the claim's
 * resourceVersion (which changes with every status write): equal? */
static bool same_volume(const json_t *a, const json_t *b)
{
	json_t *sa = json_deep_copy(json_object_get(a, "spec"));
	json_t *sb = json_deep_copy(json_object_get(b, "spec"));
	json_object_del(json_object_get(sa, "claimRef"), "resourceVersion");
	json_object_del(json_object_get(sb, "claimRef"), "resourceVersion");
	bool eq = kb_json_same(sa, sb) &&
		  kb_json_same(json_object_get(a, "status"), json_object_get(b, "status"));
	json_decref(sa);
	json_decref(sb);
	return eq;
}

/* Bound claim pvc: its volume made or brought up to date. */
static void ensure(struct syncer_pv *p, const json_t *pvc, const char *vol)
{
	json_t *old = NULL, *want = volume_of(pvc, vol);
	if (!want)
		return;
	store_get(p->st, PV_RES, "", vol, &old);
	if (old && !ours(old)) {
		kb_debug("syncer", "volume %s is the tenant's own: not replaced", vol);
	} else if (!old || !same_volume(old, want)) {
		int rc = syncer_store_put(p->st, PV_RES, "", vol, want, old);
		if (rc < 0)
			kb_warn("syncer", "volume %s of claim %s/%s not written: %s", vol,
				path_str(pvc, "metadata", "namespace"),
				path_str(pvc, "metadata", "name"), strerror(-rc));
	}
	json_decref(old);
	json_decref(want);
}

/* The volume vol goes when it is ours and its claim is not (or no longer)
 * the claim of uid (NULL: whatever claim it names is checked). */
static void release(struct syncer_pv *p, const char *vol, const char *uid)
{
	json_t *pv = NULL;
	if (!vol || !*vol || store_get(p->st, PV_RES, "", vol, &pv) < 0)
		return;
	const json_t *ref = json_object_get(json_object_get(pv, "spec"), "claimRef");
	bool gone = ours(pv);
	if (gone && uid) {
		gone = jstr(ref, "uid") && strcmp(jstr(ref, "uid"), uid) == 0;
	} else if (gone) {
		json_t *pvc = NULL;
		if (store_get(p->st, PVC_RES, jstr(ref, "namespace") ? jstr(ref, "namespace") : "",
			      jstr(ref, "name") ? jstr(ref, "name") : "", &pvc) == 0) {
			const char *bv = bound_volume(pvc);
			const char *cu = path_str(pvc, "metadata", "uid");
			gone = !bv || strcmp(bv, vol) != 0 || !cu || !jstr(ref, "uid") ||
			       strcmp(cu, jstr(ref, "uid")) != 0;
		}
		json_decref(pvc);
	}
	if (gone)
		store_delete(p->st, PV_RES, "", vol, 0, NULL, NULL);
	json_decref(pv);
}

static void on_claim(const struct store_event *ev, void *arg)
{
	struct syncer_pv *p = arg;
	const char *vol = ev->type == STORE_DELETED ? NULL : bound_volume(ev->obj);
	const char *uid = path_str(ev->obj, "metadata", "uid");
	const char *was = ev->prev ? path_str(ev->prev, "spec", "volumeName") : NULL;
	if (vol)
		ensure(p, ev->obj, vol);
	else
		release(p, path_str(ev->obj, "spec", "volumeName"), uid);
	if (was && (!vol || strcmp(was, vol) != 0))
		release(p, was, uid);
}

/* What changed while the tenant was down: every bound claim's volume made,
 * every volume of ours whose claim is gone removed. */
static void resync(struct syncer_pv *p)
{
	struct store_list_req lr = {.res = PVC_RES};
	struct store_list_result lres = {0};
	size_t i;
	json_t *o;
	if (store_list(p->st, &lr, &lres) == 0) {
		json_array_foreach (lres.items, i, o)
			if (bound_volume(o))
				ensure(p, o, bound_volume(o));
		json_decref(lres.items);
		free(lres.next);
	}
	lr = (struct store_list_req){.res = PV_RES};
	lres = (struct store_list_result){0};
	if (store_list(p->st, &lr, &lres) == 0) {
		json_array_foreach (lres.items, i, o)
			if (ours(o))
				release(p, path_str(o, "metadata", "name"), NULL);
		json_decref(lres.items);
		free(lres.next);
	}
}

int syncer_pv_start(store_t *st, struct syncer_pv **out)
{
	struct syncer_pv *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->st = st;
	resync(p);
	int rc = store_watch(st, PVC_RES, NULL, store_rev(st), on_claim, p, &p->w);
	if (rc < 0) {
		free(p);
		return rc;
	}
	*out = p;
	return 0;
}

void syncer_pv_stop(struct syncer_pv *p)
{
	if (!p)
		return;
	store_unwatch(p->w);
	free(p);
}
