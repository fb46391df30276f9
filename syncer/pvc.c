/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PersistentVolumeClaims, tenant to host and status back: a row of the
 * mirrored-kind engine (mirror.c, syncer_impl.h) and its hooks.
 * Every tenant claim gets a host claim of its translated name, not only the
 * claims pods use: a WaitForFirstConsumer class binds when the host pod
 * comes, an Immediate one provisions at once, as it would on a cluster of
 * its own. Pods name their claims by translated name (translate.c).
 *
 * DESIGN
 * The host decides (SYNCER_MIRROR_TENANT_FOLLOWS). `seen`: the host had the
 * claim of this uid since the syncer started. A claim the host no longer
 * has is then one the host removed (an admin, its namespace), and the
 * tenant claim goes too, as for pods and as vCluster does; one never seen
 * (a restart, a restored tenant, a host that refused it) is created. A host
 * claim being deleted takes its tenant claim with it; a tenant claim
 * deleted deletes its host claim (the host's own finalizer then keeps the
 * volume while a host pod uses it). A refused create gets a Warning
 * FailedCreate event (what the tenant can act on: a class, a size, a
 * quota); a refused update is only logged.
 *
 * Back to the tenant: the host claim's status (syncer_pvc_status_from_host)
 * and, once bound, spec.volumeName (the host volume's name; pv.c makes a
 * tenant PersistentVolume of that name from the claim), and the host's default storageClassName when the tenant claim named
 * none (what kube's DefaultStorageClass admission would have set). These
 * are written into the tenant store directly.
 *
 * Loops: those writes come back as tenant watch events that change nothing
 * pushed to the host (labels, annotations, resources.requests,
 * volumeAttributesClassName: same_pushable), so they are not sent on; a
 * host event that changes nothing the tenant claim shows as its last watch
 * event showed it (the entry's tstatus, tvol, tclass: remember) costs no
 * store read (host_known), and an equal status is never written.
 */
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

static const char *spec_str(const json_t *o, const char *key)
{
	return jstr(json_object_get(o, "spec"), key);
}

static bool str_eq(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

/* Entry e remembers tenant claim pvc as this watch event shows it (nothing
 * of a claim being deleted: host_known then reads the store). */
static void remember(json_t *e, const json_t *pvc)
{
	static const char *const keys[] = {"tstatus", "tvol", "tclass"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		json_object_del(e, keys[i]);
	if (jstr(json_object_get(pvc, "metadata"), "deletionTimestamp"))
		return;
	json_t *st = json_deep_copy(json_object_get(pvc, "status"));
	json_object_set_new(e, "tstatus", st ? st : json_object());
	if (spec_str(pvc, "volumeName"))
		json_object_set_new(e, "tvol", json_string(spec_str(pvc, "volumeName")));
	if (spec_str(pvc, "storageClassName"))
		json_object_set_new(e, "tclass", json_string(spec_str(pvc, "storageClassName")));
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

/* The host's default class for a tenant claim that named none. */
static const char *class_back(const json_t *hp, const json_t *tspec)
{
	const char *hc = spec_str(hp, "storageClassName");
	return hc && *hc && !json_object_get(tspec, "storageClassName") ? hc : NULL;
}

/* Copies host claim hp's status, bound volume and default class into tenant
 * claim tp (borrowed and modified); tp (a new reference) when something
 * differs, else NULL. */
static json_t *copy_back(const json_t *hp, json_t *tp)
{
	json_t *status = syncer_pvc_status_from_host(hp);
	json_t *tspec = json_object_get(tp, "spec");
	const char *vol = spec_str(hp, "volumeName"), *cls = class_back(hp, tspec);
	bool new_vol = vol && *vol && !str_eq(vol, jstr(tspec, "volumeName"));
	json_t *out = NULL;
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
	out = json_incref(tp);
out:
	json_decref(status);
	return out;
}

/* True when host claim event hp would change nothing in its tenant claim as
 * the tenant watch last showed it (entry e): copy_back would read it only
 * to find it equal. */
static bool host_known(const json_t *hp, const json_t *e)
{
	json_t *ts = json_object_get(e, "tstatus");
	if (!ts)
		return false;
	const char *vol = spec_str(hp, "volumeName"), *hc = spec_str(hp, "storageClassName");
	if ((vol && *vol && !str_eq(vol, jstr(e, "tvol"))) || (hc && *hc && !jstr(e, "tclass")))
		return false;
	json_t *status = syncer_pvc_status_from_host(hp);
	bool eq = kb_json_same(status, ts);
	json_decref(status);
	return eq;
}

static size_t *tracked(struct syncer_stats *st)
{
	return &st->pvcs;
}

const struct syncer_mirror_kind syncer_pvc_kind = {
    .res = "/persistentvolumeclaims",
    .kind = "PersistentVolumeClaim",
    .plural = "persistentvolumeclaims",
    .noun = "claim",
    .create_refused = "claim",
    .host_deleted = SYNCER_MIRROR_TENANT_FOLLOWS,
    .update_refusal_event = false,
    .translate = syncer_translate_pvc,
    .update_patch = syncer_pvc_update_patch,
    .same_pushable = same_pushable,
    .copy_back = copy_back,
    .remember = remember,
    .host_known = host_known,
    .tracked = tracked,
};
