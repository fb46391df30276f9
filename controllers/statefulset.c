/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The StatefulSet controller: pods "<sts>-<ordinal>" for ordinals
 * 0..replicas-1 with stable hostname/subdomain and the pod-name and
 * pod-index labels; OrderedReady creates one ordinal at a time once the
 * lower ones are Running and Ready and scales down from the highest
 * ordinal one at a time; Parallel does both at once. The template's
 * revision ("<sts>-<hash>", label controller-revision-hash) drives
 * RollingUpdate from the highest ordinal down to spec.updateStrategy
 * .rollingUpdate.partition. Status: replicas, readyReplicas,
 * availableReplicas, currentReplicas, updatedReplicas, currentRevision,
 * updateRevision, observedGeneration.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controllers_impl.h"
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
	int rc = proxy_object_create(c->px, "", "v1", "pods", pod, STS_MANAGER, NULL);
	json_decref(pod);
	return rc == -EEXIST ? 0 : rc;
}

static bool running_ready(const json_t *pod)
{
	return pod && strcmp(ctrl_pod_phase(pod), "Running") == 0 && ctrl_pod_ready(pod);
}

static int del_pod(struct ctrl *c, const json_t *p)
{
	int rc = proxy_object_delete(c->px, "", "v1", "pods", ctrl_ns(p), ctrl_name(p), ctrl_uid(p),
				     NULL);
	return rc == -ENOENT ? 0 : rc;
}

/* One step (OrderedReady) or every step (Parallel) towards the spec. */
static int reconcile(struct ctrl *c, struct sstate *s)
{
	/* failed pods are replaced */
	for (int i = 0; i < s->nord; i++) {
		json_t *p = s->by_ord[i];
		if (p && strcmp(ctrl_pod_phase(p), "Failed") == 0 &&
		    !ctrl_path(p, "metadata.deletionTimestamp"))
			return del_pod(c, p);
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
		int rc = del_pod(c, p);
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
		return ctrl_path(p, "metadata.deletionTimestamp") ? 0 : del_pod(c, p);
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

int sts_sync(struct ctrl *c, const char *ns, const char *name)
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
