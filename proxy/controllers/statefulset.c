/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The StatefulSet controller: pods "<sts>-<ordinal>" for ordinals
 * 0..replicas-1 with stable hostname/subdomain and the pod-name and
 * pod-index labels; OrderedReady creates one ordinal at a time once the
 * lower ones are Running and Ready and scales down from the highest
 * ordinal one at a time; Parallel does both at once. The template's
 * revision ("<sts>-<hash>", label controller-revision-hash) drives
 * RollingUpdate from the highest ordinal down to spec.updateStrategy
 * .rollingUpdate.partition. Each revision is kept as a ControllerRevision
 * (the history `kubectl rollout history|undo sts` reads). Pods get one
 * PersistentVolumeClaim per spec.volumeClaimTemplates entry,
 * "<claim>-<sts>-<ordinal>", created before the pod and kept on scale-down
 * and deletion unless persistentVolumeClaimRetentionPolicy says Delete
 * (then the pod, or the set, becomes the claim's owner and the garbage
 * collector removes it). Status: replicas, readyReplicas,
 * availableReplicas, currentReplicas, updatedReplicas, currentRevision,
 * updateRevision, observedGeneration.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"

#define STS_MANAGER  "statefulset-controller"
#define REV_LABEL    "controller-revision-hash"
#define MAX_ORDINALS 10000

struct sstate {
	json_t *sts, *pods;
	json_t **by_ord; /* borrowed from pods, index = ordinal */
	int replicas, nord;
	bool parallel;
	char rev[300];
};

static int ordinal_of(const json_t *sts, const json_t *pod)
{
	const char *n = ctrl_name(pod), *base = ctrl_name(sts);
	size_t bl = strlen(base);
	if (strncmp(n, base, bl) != 0 || n[bl] != '-')
		return -1;
	char *end;
	long v = strtol(n + bl + 1, &end, 10);
	return *end == '\0' && v >= 0 && v < MAX_ORDINALS ? (int)v : -1;
}

static const char *pod_rev(const json_t *pod)
{
	return json_string_value(json_object_get(ctrl_path(pod, "metadata.labels"), REV_LABEL));
}

static int ensure_claims(struct ctrl *c, const json_t *sts, json_t *pod, int ord);

static int create_ordinal(struct ctrl *c, struct sstate *s, int ord)
{
	char name[300], idx[16];
	snprintf(name, sizeof(name), "%s-%d", ctrl_name(s->sts), ord);
	snprintf(idx, sizeof(idx), "%d", ord);
	json_t *pod =
	    ctrl_pod_from_template(ctrl_path(s->sts, "spec.template"), s->sts, name, NULL);
	json_t *m = json_object_get(pod, "metadata");
	json_t *labels = json_object_get(m, "labels");
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(m, "labels", labels);
	}
	json_object_set_new(labels, "statefulset.kubernetes.io/pod-name", json_string(name));
	json_object_set_new(labels, "apps.kubernetes.io/pod-index", json_string(idx));
	json_object_set_new(labels, REV_LABEL, json_string(s->rev));
	json_t *spec = json_object_get(pod, "spec");
	if (strlen(name) <= 63)
		json_object_set_new(spec, "hostname", json_string(name));
	const char *svc = json_string_value(ctrl_path(s->sts, "spec.serviceName"));
	if (svc && *svc)
		json_object_set_new(spec, "subdomain", json_string(svc));
	int rc = ensure_claims(c, s->sts, pod, ord);
	if (rc == 0)
		rc = proxy_object_create_admitted(c->px, "", "v1", "pods", pod, STS_MANAGER,
						  ctrl_admitted, c, NULL);
	json_decref(pod);
	if (rc == -EINPROGRESS) /* its webhooks answer later: ctrl_admitted */
		return 0;
	if (rc == 0)
		ctrl_event(c, s->sts, "apps/v1", "StatefulSet", "Normal", "SuccessfulCreate",
			   STS_MANAGER, "create Pod %s in StatefulSet %s successful", name,
			   ctrl_name(s->sts));
	else if (rc != -EEXIST)
		ctrl_event(c, s->sts, "apps/v1", "StatefulSet", "Warning", "FailedCreate",
			   STS_MANAGER, "create Pod %s in StatefulSet %s failed error: %s", name,
			   ctrl_name(s->sts), strerror(-rc));
	return rc == -EEXIST ? 0 : rc;
}

static bool running_ready(const json_t *pod)
{
	return pod && strcmp(ctrl_pod_phase(pod), "Running") == 0 && ctrl_pod_ready(pod);
}

static int del_pod(struct ctrl *c, const struct sstate *s, const json_t *p)
{
	int rc = proxy_object_delete(c->px, "", "v1", "pods", ctrl_ns(p), ctrl_name(p), ctrl_uid(p),
				     NULL, STS_MANAGER);
	if (rc == 0)
		ctrl_event(c, s->sts, "apps/v1", "StatefulSet", "Normal", "SuccessfulDelete",
			   STS_MANAGER, "delete Pod %s in StatefulSet %s successful", ctrl_name(p),
			   ctrl_name(s->sts));
	return rc == -ENOENT ? 0 : rc;
}

/* ---- ControllerRevisions -------------------------------------------------- */

/*
 * As kube's StatefulSet controller keeps its history: one ControllerRevision
 * "<sts>-<hash>" per template, owned by the set, labelled with the template's
 * labels and controller.kubernetes.io/hash, its annotations the set's (when
 * it is made), data = the patch that restores
 * the template, revision = one more than the highest. Going back to an old
 * template reuses its revision object with a new number; revisions no live
 * pod uses beyond spec.revisionHistoryLimit (10) go, oldest first.
 */
static json_t *revision_data(const json_t *sts)
{
	json_t *tmpl = json_deep_copy(ctrl_path(sts, "spec.template"));
	if (!json_is_object(tmpl)) {
		json_decref(tmpl);
		tmpl = json_object();
	}
	json_object_set_new(tmpl, "$patch", json_string("replace"));
	return json_pack("{s:{s:o}}", "spec", "template", tmpl);
}

static json_t *new_revision(const struct sstate *s, const char *hash, int64_t number)
{
	json_t *labels = json_deep_copy(ctrl_path(s->sts, "spec.template.metadata.labels"));
	if (!json_is_object(labels)) {
		json_decref(labels);
		labels = json_object();
	}
	json_object_set_new(labels, "controller.kubernetes.io/hash", json_string(hash));
	json_t *cr = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:[o]},s:o,s:I}", "apiVersion", "apps/v1",
			       "kind", "ControllerRevision", "metadata", "name", s->rev,
			       "namespace", ctrl_ns(s->sts), "labels", labels, "ownerReferences",
			       ctrl_new_owner_ref(s->sts, true), "data", revision_data(s->sts),
			       "revision", (json_int_t)number);
	/* kube's newRevision (statefulset/stateful_set_utils.go) gives the
	 * revision the set's annotations: kubectl rollout history reads its
	 * kubernetes.io/change-cause there */
	json_t *anns = ctrl_path(s->sts, "metadata.annotations");
	if (cr && json_object_size(anns))
		json_object_set_new(json_object_get(cr, "metadata"), "annotations",
				    json_deep_copy(anns));
	return cr;
}

static int64_t rev_number(const json_t *cr)
{
	return ctrl_int(cr, "revision", 0);
}

/* True when a live pod, the current or the update revision uses cr. */
static bool revision_live(const struct sstate *s, const json_t *cr)
{
	const char *name = ctrl_name(cr);
	const char *cur = json_string_value(ctrl_path(s->sts, "status.currentRevision"));
	if (strcmp(name, s->rev) == 0 || (cur && strcmp(name, cur) == 0))
		return true;
	size_t i;
	json_t *p;
	json_array_foreach (s->pods, i, p) {
		const char *r = pod_rev(p);
		if (r && strcmp(r, name) == 0)
			return true;
	}
	return false;
}

static int cmp_revision(const void *a, const void *b)
{
	int64_t x = rev_number(*(json_t *const *)a), y = rev_number(*(json_t *const *)b);
	return x < y ? -1 : x > y;
}

static void truncate_history(struct ctrl *c, const struct sstate *s, json_t *revs)
{
	size_t n = json_array_size(revs), k = 0, i;
	int64_t limit = ctrl_int(s->sts, "spec.revisionHistoryLimit", 10);
	json_t **old = calloc(n ? n : 1, sizeof(*old)), *cr;
	if (!old)
		return;
	json_array_foreach (revs, i, cr)
		if (!revision_live(s, cr))
			old[k++] = cr;
	qsort(old, k, sizeof(*old), cmp_revision);
	for (i = 0; limit >= 0 && k > (size_t)limit && i < k - (size_t)limit; i++)
		proxy_object_delete(c->px, "apps", "v1", "controllerrevisions", ctrl_ns(old[i]),
				    ctrl_name(old[i]), ctrl_uid(old[i]), NULL, STS_MANAGER);
	free(old);
}

/* Makes sure the update revision exists and is the newest one. */
static int sync_revisions(struct ctrl *c, struct sstate *s, const char *hash)
{
	json_t *revs =
	    ctrl_claim(c, "apps/controllerrevisions", "apps", "v1", "controllerrevisions", s->sts,
		       ctrl_path(s->sts, "spec.selector"), STS_MANAGER);
	int64_t max = 0;
	json_t *mine = NULL, *cr;
	size_t i;
	int rc = 0;
	json_array_foreach (revs, i, cr) {
		if (rev_number(cr) > max)
			max = rev_number(cr);
		if (strcmp(ctrl_name(cr), s->rev) == 0)
			mine = cr;
	}
	if (!mine) {
		json_t *obj = new_revision(s, hash, max + 1);
		rc = proxy_object_create(c->px, "apps", "v1", "controllerrevisions", obj,
					 STS_MANAGER, NULL);
		json_decref(obj);
		rc = rc == -EEXIST ? 0 : rc;
	} else if (rev_number(mine) < max) {
		json_t *upd = json_deep_copy(mine);
		json_object_set_new(upd, "revision", json_integer(max + 1));
		rc = proxy_object_update(c->px, "apps", "v1", "controllerrevisions", upd,
					 STS_MANAGER, NULL);
		json_decref(upd);
	}
	truncate_history(c, s, revs);
	json_decref(revs);
	return rc;
}

/* ---- volumeClaimTemplates --------------------------------------------------- */

/* "<claim>-<sts>-<ordinal>", as kube names a pod's claim. */
static void claim_name(const json_t *sts, const json_t *tmpl, int ord, char *buf, size_t len)
{
	snprintf(buf, len, "%s-%s-%d", ctrl_name(tmpl), ctrl_name(sts), ord);
}

static const char *retention(const json_t *sts, const char *when)
{
	char path[96];
	snprintf(path, sizeof(path), "spec.persistentVolumeClaimRetentionPolicy.%s", when);
	const char *v = json_string_value(ctrl_path(sts, path));
	return v ? v : "Retain";
}

/* The claim of template tmpl for ordinal ord: the template with the set's
 * selector labels, and the set as an owner when whenDeleted is Delete. */
static json_t *claim_from_template(const json_t *sts, const json_t *tmpl, int ord)
{
	char name[300];
	claim_name(sts, tmpl, ord, name, sizeof(name));
	json_t *pvc = json_deep_copy(tmpl);
	json_object_del(pvc, "status");
	json_object_set_new(pvc, "apiVersion", json_string("v1"));
	json_object_set_new(pvc, "kind", json_string("PersistentVolumeClaim"));
	json_t *m = json_object_get(pvc, "metadata");
	if (!json_is_object(m)) {
		m = json_object();
		json_object_set_new(pvc, "metadata", m);
	}
	json_object_set_new(m, "name", json_string(name));
	json_object_set_new(m, "namespace", json_string(ctrl_ns(sts)));
	json_t *labels = json_object_get(m, "labels");
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(m, "labels", labels);
	}
	json_object_update(labels, ctrl_path(sts, "spec.selector.matchLabels"));
	if (strcmp(retention(sts, "whenDeleted"), "Delete") == 0) {
		json_t *ref = ctrl_new_owner_ref(sts, true);
		json_object_del(ref, "controller");
		json_object_set_new(m, "ownerReferences", json_pack("[o]", ref));
	}
	return pvc;
}

/* Creates the claims of ordinal ord (kept when they exist) and points the
 * pod's (borrowed, modified) volumes of the same names at them. */
static int ensure_claims(struct ctrl *c, const json_t *sts, json_t *pod, int ord)
{
	json_t *spec = json_object_get(pod, "spec"), *vols = json_object_get(spec, "volumes");
	size_t i, k;
	json_t *t, *v;
	json_array_foreach (ctrl_path(sts, "spec.volumeClaimTemplates"), i, t) {
		json_t *pvc = claim_from_template(sts, t, ord);
		int rc = proxy_object_create(c->px, "", "v1", "persistentvolumeclaims", pvc,
					     STS_MANAGER, NULL);
		const char *cname = ctrl_name(pvc), *tname = ctrl_name(t);
		if (!json_is_array(vols)) {
			vols = json_array();
			json_object_set_new(spec, "volumes", vols);
		}
		for (k = json_array_size(vols); k-- > 0;) {
			v = json_array_get(vols, k);
			if (strcmp(json_string_value(json_object_get(v, "name")) ?: "", tname) == 0)
				json_array_remove(vols, k);
		}
		json_array_append_new(vols, json_pack("{s:s,s:{s:s}}", "name", tname,
						      "persistentVolumeClaim", "claimName", cname));
		json_decref(pvc);
		if (rc < 0 && rc != -EEXIST)
			return rc;
	}
	return 0;
}

static bool has_owner(const json_t *refs, const char *uid)
{
	size_t i;
	json_t *r;
	json_array_foreach (refs, i, r)
		if (strcmp(json_string_value(json_object_get(r, "uid")) ?: "", uid) == 0)
			return true;
	return false;
}

/* whenScaled Delete: a condemned pod's claims get the pod as an owner, so
 * the garbage collector removes them after the pod. */
static void release_claims(struct ctrl *c, const json_t *sts, const json_t *pod, int ord)
{
	if (strcmp(retention(sts, "whenScaled"), "Delete") != 0)
		return;
	size_t i;
	json_t *t;
	json_array_foreach (ctrl_path(sts, "spec.volumeClaimTemplates"), i, t) {
		char name[300];
		claim_name(sts, t, ord, name, sizeof(name));
		json_t *pvc = ctrl_get(c, "/persistentvolumeclaims", ctrl_ns(sts), name);
		if (!pvc)
			continue;
		json_t *m = json_object_get(pvc, "metadata"),
		       *refs = json_object_get(m, "ownerReferences");
		if (!json_is_array(refs)) {
			refs = json_array();
			json_object_set_new(m, "ownerReferences", refs);
		}
		if (has_owner(refs, ctrl_uid(pod))) {
			json_decref(pvc);
			continue;
		}
		json_t *ref = ctrl_new_owner_ref(pod, false);
		json_object_del(ref, "controller");
		json_object_set_new(ref, "apiVersion", json_string("v1"));
		json_object_set_new(ref, "kind", json_string("Pod"));
		json_array_append_new(refs, ref);
		if (proxy_object_update(c->px, "", "v1", "persistentvolumeclaims", pvc, STS_MANAGER,
					NULL) < 0)
			kb_debug("sts", "%s: claim %s not released", ctrl_name(sts), name);
		json_decref(pvc);
	}
}

/* One step (OrderedReady) or every step (Parallel) towards the spec. */
static int reconcile(struct ctrl *c, struct sstate *s)
{
	/* failed pods are replaced */
	for (int i = 0; i < s->nord; i++) {
		json_t *p = s->by_ord[i];
		if (p && strcmp(ctrl_pod_phase(p), "Failed") == 0 &&
		    !ctrl_path(p, "metadata.deletionTimestamp"))
			return del_pod(c, s, p);
	}
	for (int i = 0; i < s->replicas; i++) {
		json_t *p = i < s->nord ? s->by_ord[i] : NULL;
		if (!p) {
			int rc = create_ordinal(c, s, i);
			if (rc < 0 || !s->parallel)
				return rc;
			continue;
		}
		if (!s->parallel &&
		    (!running_ready(p) || ctrl_path(p, "metadata.deletionTimestamp")))
			return 0; /* wait for this ordinal */
	}
	for (int i = s->nord - 1; i >= s->replicas; i--) {
		json_t *p = s->by_ord[i];
		if (!p || ctrl_path(p, "metadata.deletionTimestamp")) {
			if (p && !s->parallel)
				return 0;
			continue;
		}
		release_claims(c, s->sts, p, i);
		int rc = del_pod(c, s, p);
		if (rc < 0 || !s->parallel)
			return rc;
	}
	/* rolling update: highest ordinal first, down to the partition */
	const char *type = json_string_value(ctrl_path(s->sts, "spec.updateStrategy.type"));
	if (type && strcmp(type, "OnDelete") == 0)
		return 0;
	int partition = (int)ctrl_int(s->sts, "spec.updateStrategy.rollingUpdate.partition", 0);
	for (int i = s->replicas - 1; i >= partition && i >= 0; i--) {
		json_t *p = i < s->nord ? s->by_ord[i] : NULL;
		if (!p)
			return 0;
		const char *r = pod_rev(p);
		if (r && strcmp(r, s->rev) == 0) {
			if (!running_ready(p))
				return 0;
			continue;
		}
		return ctrl_path(p, "metadata.deletionTimestamp") ? 0 : del_pod(c, s, p);
	}
	return 0;
}

static int write_status(struct ctrl *c, struct sstate *s)
{
	json_t *st = json_deep_copy(json_object_get(s->sts, "status"));
	if (!json_is_object(st)) {
		json_decref(st);
		st = json_object();
	}
	int n = 0, ready = 0, avail = 0, updated = 0;
	int64_t min_ready = ctrl_int(s->sts, "spec.minReadySeconds", 0);
	size_t i;
	json_t *p;
	json_array_foreach (s->pods, i, p) {
		if (!ctrl_pod_active(p))
			continue;
		n++;
		ready += ctrl_pod_ready(p);
		avail += ctrl_pod_available(p, min_ready, time(NULL), NULL);
		const char *r = pod_rev(p);
		updated += r && strcmp(r, s->rev) == 0;
	}
	json_object_set_new(st, "replicas", json_integer(n));
	json_object_set_new(st, "readyReplicas", json_integer(ready));
	json_object_set_new(st, "availableReplicas", json_integer(avail));
	json_object_set_new(st, "updatedReplicas", json_integer(updated));
	json_object_set(st, "observedGeneration", ctrl_path(s->sts, "metadata.generation"));
	json_object_set_new(st, "updateRevision", json_string(s->rev));
	const char *cur = json_string_value(json_object_get(st, "currentRevision"));
	if (!cur || (updated == n && n == s->replicas))
		json_object_set_new(st, "currentRevision", json_string(s->rev));
	cur = json_string_value(json_object_get(st, "currentRevision"));
	int current = 0;
	json_array_foreach (s->pods, i, p) {
		const char *r = pod_rev(p);
		current += ctrl_pod_active(p) && r && cur && strcmp(r, cur) == 0;
	}
	json_object_set_new(st, "currentReplicas", json_integer(current));
	json_object_set_new(st, "collisionCount",
			    json_integer(ctrl_int(s->sts, "status.collisionCount", 0)));
	int rc = ctrl_write_status(c, "apps", "v1", "statefulsets", s->sts, st, STS_MANAGER);
	json_decref(st);
	return rc;
}

int ctrl_sts_sync(struct ctrl *c, const char *ns, const char *name)
{
	struct sstate s = {0};
	s.sts = ctrl_get(c, "apps/statefulsets", ns, name);
	if (!s.sts || ctrl_path(s.sts, "metadata.deletionTimestamp")) {
		json_decref(s.sts);
		return 0;
	}
	s.replicas = (int)ctrl_int(s.sts, "spec.replicas", 1);
	if (s.replicas > MAX_ORDINALS)
		s.replicas = MAX_ORDINALS;
	const char *pmp = json_string_value(ctrl_path(s.sts, "spec.podManagementPolicy"));
	s.parallel = pmp && strcmp(pmp, "Parallel") == 0;
	char hash[32];
	ctrl_template_hash(ctrl_path(s.sts, "spec.template"), 0, hash, sizeof(hash));
	snprintf(s.rev, sizeof(s.rev), "%s-%s", name, hash);
	s.pods = ctrl_claim(c, "/pods", "", "v1", "pods", s.sts, ctrl_path(s.sts, "spec.selector"),
			    STS_MANAGER);
	size_t i;
	json_t *p;
	json_array_foreach (s.pods, i, p) {
		int o = ordinal_of(s.sts, p);
		if (o + 1 > s.nord)
			s.nord = o + 1;
	}
	if (s.nord < s.replicas)
		s.nord = s.replicas;
	s.by_ord = calloc((size_t)s.nord + 1, sizeof(*s.by_ord));
	int rc = -ENOMEM;
	if (s.by_ord) {
		json_array_foreach (s.pods, i, p) {
			int o = ordinal_of(s.sts, p);
			if (o >= 0)
				s.by_ord[o] = p;
		}
		rc = sync_revisions(c, &s, hash);
		if (rc == 0)
			rc = reconcile(c, &s);
		int wrc = write_status(c, &s);
		if (rc == 0 || rc == -EINVAL || rc == -EPERM)
			rc = wrc;
	}
	free(s.by_ord);
	json_decref(s.pods);
	json_decref(s.sts);
	return rc;
}
