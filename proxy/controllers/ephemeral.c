/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Generic ephemeral volumes, as kube-controller-manager's ephemeral-volume
 * controller makes them (pkg/controller/volume/ephemeral/controller.go,
 * handleVolume; the claim's name from
 * k8s.io/component-helpers/storage/ephemeral, VolumeClaimName): for each
 * `ephemeral` volume of a pod, the PersistentVolumeClaim "<pod>-<volume>"
 * of the pod's namespace, with the template's labels, annotations and spec,
 * owned by the pod (controller, blockOwnerDeletion), so that the garbage
 * collector deletes it with the pod. The claim is an ordinary create: it
 * meets validation, quota, LimitRange and the tenant's policy as any claim
 * does. A claim of that name that the pod does not own is left alone, as
 * kube's controller leaves it (the pod cannot start: ephemeral.VolumeIsForPod).
 *
 * On a syncing tenant this is what gives such a volume a synced claim's
 * translation and checks: the host pod mounts the host copy of this claim
 * (syncer/hostrefs.c), never a claim the host would make from a template
 * the tenant wrote.
 * Keys: "ephemeral" with the pod's namespace and name.
 *
 * Threading: loop thread.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/client.h"
#include "store/store.h"

#define MANAGER "ephemeral-volume-controller"

static bool has_ephemeral(const json_t *pod)
{
	const json_t *vols = json_object_get(json_object_get(pod, "spec"), "volumes");
	size_t i;
	json_t *v;
	json_array_foreach (vols, i, v)
		if (json_object_get(v, "ephemeral"))
			return true;
	return false;
}

/* The claim for volume v of pod, from its template. New reference. */
static json_t *claim_for(const json_t *pod, const json_t *v, const char *name)
{
	const json_t *tpl = json_object_get(json_object_get(v, "ephemeral"), "volumeClaimTemplate");
	const json_t *tm = json_object_get(tpl, "metadata");
	json_t *meta = json_pack("{s:s,s:s,s:[{s:s,s:s,s:s,s:s,s:b,s:b}]}", "name", name,
				 "namespace", ctrl_ns(pod), "ownerReferences", "apiVersion", "v1",
				 "kind", "Pod", "name", ctrl_name(pod), "uid", ctrl_uid(pod),
				 "controller", 1, "blockOwnerDeletion", 1);
	static const char *const keep[] = {"labels", "annotations"};
	for (size_t i = 0; meta && i < KB_ARRAY_SIZE(keep); i++) {
		json_t *m = json_object_get(tm, keep[i]);
		if (json_object_size(m))
			json_object_set_new(meta, keep[i], json_deep_copy(m));
	}
	json_t *spec = json_deep_copy(json_object_get(tpl, "spec"));
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "PersistentVolumeClaim",
			 "metadata", meta, "spec", spec ? spec : json_object());
}

/* Whether claim pvc is pod's (its controller reference has the pod's uid). */
static bool owned_by(const json_t *pvc, const json_t *pod)
{
	const json_t *ref = ctrl_controller_ref(pvc);
	const char *uid = json_string_value(json_object_get(ref, "uid"));
	return uid && ctrl_uid(pod) && strcmp(uid, ctrl_uid(pod)) == 0;
}

static int handle_volume(struct ctrl *c, const json_t *pod, const json_t *v)
{
	char name[600];
	snprintf(name, sizeof(name), "%s-%s", ctrl_name(pod),
		 json_string_value(json_object_get(v, "name")));
	json_t *have = ctrl_get(c, "/persistentvolumeclaims", ctrl_ns(pod), name);
	if (have) {
		if (!owned_by(have, pod))
			ctrl_event(c, pod, "v1", "Pod", "Warning", "FailedBinding", MANAGER,
				   "PVC %s/%s was not created for the pod", ctrl_ns(pod), name);
		json_decref(have);
		return 0;
	}
	json_t *pvc = claim_for(pod, v, name);
	int rc =
	    pvc ? proxy_object_create(c->px, "", "v1", "persistentvolumeclaims", pvc, MANAGER, NULL)
		: -ENOMEM;
	json_decref(pvc);
	if (rc == -EEXIST || rc == -EINPROGRESS)
		return 0;
	if (rc < 0)
		kb_info("ctrl", "ephemeral volume claim %s/%s not created (%d)", ctrl_ns(pod), name,
			rc);
	return rc;
}

int ctrl_ephemeral_sync(struct ctrl *c, const char *ns, const char *name)
{
	json_t *pod = ctrl_get(c, "/pods", ns, name);
	int rc = 0;
	if (!pod || ctrl_path(pod, "metadata.deletionTimestamp") || !has_ephemeral(pod))
		goto out;
	size_t i;
	json_t *v;
	json_array_foreach (ctrl_path(pod, "spec.volumes"), i, v) {
		if (!json_object_get(v, "ephemeral"))
			continue;
		int one = handle_volume(c, pod, v);
		rc = rc < 0 ? rc : one;
	}
out:
	json_decref(pod);
	return rc;
}

void ctrl_ephemeral_event(struct ctrl *c, const struct store_event *ev)
{
	if (strcmp(ev->res, "/pods") == 0) {
		if (ev->type != STORE_DELETED && has_ephemeral(ev->obj))
			ctrl_enqueue(c, "ephemeral", ev->ns, ev->name);
		return;
	}
	if (strcmp(ev->res, "/persistentvolumeclaims") != 0 || ev->type != STORE_DELETED)
		return;
	/* a pod's claim deleted while the pod lives: made again, as kube's
	 * controller does on the claim's delete event */
	const json_t *ref = ctrl_controller_ref(ev->obj);
	const char *kind = json_string_value(json_object_get(ref, "kind"));
	if (kind && strcmp(kind, "Pod") == 0)
		ctrl_enqueue(c, "ephemeral", ev->ns,
			     json_string_value(json_object_get(ref, "name")));
}
