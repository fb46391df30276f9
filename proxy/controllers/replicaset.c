/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ReplicaSet controller: keeps spec.replicas active pods matching the
 * selector (names "<rs>-<5 chars>", controller ownerReference), adopts
 * orphans and releases pods that stop matching, deletes the least useful
 * pods first when scaling down, and reports status (replicas,
 * fullyLabeledReplicas, readyReplicas, availableReplicas with
 * minReadySeconds, observedGeneration, ReplicaFailure). The same code is
 * kube's replication manager for core/v1 ReplicationControllers, whose
 * selector is a map of labels (ctrl_rc_sync), as kube runs one for both.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"

#define BURST 500

/* The two kinds this controller keeps. */
struct rs_kind {
	const char *res;            /* store key */
	const char *group, *plural; /* for status writes */
	const char *api, *kind;     /* events */
	const char *queue;          /* the work queue's kind */
	const char *manager;
	bool map_selector; /* spec.selector is a map of labels */
};

static const struct rs_kind rs_kind = {
    "apps/replicasets", "apps", "replicasets",           "apps/v1",
    "ReplicaSet",       "rs",   "replicaset-controller", false};
static const struct rs_kind rc_kind = {
    "/replicationcontrollers", "",   "replicationcontrollers", "v1",
    "ReplicationController",   "rc", "replication-controller", true};

/* kube's ActivePods order: the pods to delete first sort first. */
static int phase_rank(const json_t *p)
{
	const char *ph = ctrl_pod_phase(p);
	if (strcmp(ph, "Pending") == 0)
		return 0;
	if (strcmp(ph, "Unknown") == 0)
		return 1;
	return 2;
}

static int deletion_cmp(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	const char *nx = json_string_value(ctrl_path(x, "spec.nodeName"));
	const char *ny = json_string_value(ctrl_path(y, "spec.nodeName"));
	int ax = nx && *nx, ay = ny && *ny;
	if (ax != ay)
		return ax - ay;
	if (phase_rank(x) != phase_rank(y))
		return phase_rank(x) - phase_rank(y);
	if (ctrl_pod_ready(x) != ctrl_pod_ready(y))
		return (int)ctrl_pod_ready(x) - (int)ctrl_pod_ready(y);
	time_t tx = ctrl_time(json_string_value(ctrl_path(x, "metadata.creationTimestamp")));
	time_t ty = ctrl_time(json_string_value(ctrl_path(y, "metadata.creationTimestamp")));
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return strcmp(ctrl_name(y), ctrl_name(x));
}

static bool fully_labeled(const json_t *pod, const json_t *want)
{
	json_t *have = ctrl_path(pod, "metadata.labels");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)want, k, v)
		if (!json_equal(json_object_get(have, k), v))
			return false;
	return true;
}

static int create_pods(struct ctrl *c, const struct rs_kind *k, const json_t *rs, int n, char *err,
		       size_t errlen)
{
	char gen[300];
	snprintf(gen, sizeof(gen), "%s-", ctrl_name(rs));
	json_t *tmpl = ctrl_path(rs, "spec.template");
	for (int i = 0; i < n && i < BURST; i++) {
		json_t *pod = ctrl_pod_from_template(tmpl, rs, NULL, gen), *made = NULL;
		int rc = proxy_object_create_admitted(c->px, "", "v1", "pods", pod, k->manager,
						      ctrl_admitted, c, &made);
		json_decref(pod);
		if (rc == -EINPROGRESS)
			continue; /* its webhooks answer later: ctrl_admitted */
		if (rc < 0) {
			snprintf(err, errlen, "pods \"%s\" is forbidden: %s", gen, strerror(-rc));
			ctrl_event(c, rs, k->api, k->kind, "Warning", "FailedCreate", k->manager,
				   "Error creating: %s", err);
			return rc;
		}
		ctrl_event(c, rs, k->api, k->kind, "Normal", "SuccessfulCreate", k->manager,
			   "Created pod: %s", ctrl_name(made));
		json_decref(made);
	}
	if (n > BURST)
		ctrl_enqueue(c, k->queue, ctrl_ns(rs), ctrl_name(rs));
	return 0;
}

static int delete_pods(struct ctrl *c, const struct rs_kind *k, const json_t *rs, json_t *active,
		       int n)
{
	size_t len = json_array_size(active);
	json_t **v = calloc(len + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		v[i] = json_array_get(active, i);
	qsort(v, len, sizeof(*v), deletion_cmp);
	int rc = 0;
	for (size_t i = 0; i < len && (int)i < n; i++) {
		int err = proxy_object_delete(c->px, "", "v1", "pods", ctrl_ns(v[i]),
					      ctrl_name(v[i]), ctrl_uid(v[i]), NULL, k->manager);
		if (err < 0 && err != -ENOENT && err != -EINPROGRESS)
			rc = err;
		if (err == 0)
			ctrl_event(c, rs, k->api, k->kind, "Normal", "SuccessfulDelete", k->manager,
				   "Deleted pod: %s", ctrl_name(v[i]));
	}
	free(v);
	return rc;
}

static json_t *rs_status(struct ctrl *c, const struct rs_kind *k, const json_t *rs,
			 const json_t *active, const char *failure)
{
	json_t *st = json_deep_copy(json_object_get(rs, "status"));
	if (!json_is_object(st)) {
		json_decref(st);
		st = json_object();
	}
	int64_t min_ready = ctrl_int(rs, "spec.minReadySeconds", 0);
	json_t *want = ctrl_path(rs, "spec.template.metadata.labels");
	time_t now = time(NULL);
	double wait = 0;
	int full = 0, ready = 0, avail = 0;
	size_t i;
	json_t *p;
	json_array_foreach (active, i, p) {
		full += fully_labeled(p, want);
		ready += ctrl_pod_ready(p);
		avail += ctrl_pod_available(p, min_ready, now, &wait);
	}
	if (wait > 0)
		ctrl_enqueue_after(c, k->queue, ctrl_ns(rs), ctrl_name(rs), wait);
	json_object_set_new(st, "replicas", json_integer((json_int_t)json_array_size(active)));
	json_object_set_new(st, "fullyLabeledReplicas", json_integer(full));
	json_object_set_new(st, "readyReplicas", json_integer(ready));
	json_object_set_new(st, "availableReplicas", json_integer(avail));
	json_object_set(st, "observedGeneration", ctrl_path(rs, "metadata.generation"));
	if (failure)
		ctrl_set_condition(st, "ReplicaFailure", "True", "FailedCreate", failure, false);
	else
		ctrl_remove_condition(st, "ReplicaFailure");
	if (json_array_size(json_object_get(st, "conditions")) == 0)
		json_object_del(st, "conditions");
	return st;
}

static int keep_pods(struct ctrl *c, const struct rs_kind *k, const char *ns, const char *name)
{
	json_t *rs = ctrl_get(c, k->res, ns, name);
	if (!rs)
		return 0;
	json_t *sel = k->map_selector
			  ? json_pack("{s:O}", "matchLabels", ctrl_path(rs, "spec.selector"))
			  : json_incref(ctrl_path(rs, "spec.selector"));
	json_t *pods = ctrl_claim(c, "/pods", "", "v1", "pods", rs, sel, k->manager);
	json_decref(sel);
	json_t *active = json_array();
	size_t i;
	json_t *p;
	json_array_foreach (pods, i, p)
		if (ctrl_pod_active(p))
			json_array_append(active, p);
	int rc = 0;
	char err[512] = "";
	if (!ctrl_path(rs, "metadata.deletionTimestamp")) {
		/* pods still in their admission webhooks count as made */
		int diff = (int)json_array_size(active) +
			   (int)proxy_creates_pending(c->px, ctrl_ns(rs), ctrl_uid(rs)) -
			   (int)ctrl_int(rs, "spec.replicas", 1);
		if (diff < 0)
			rc = create_pods(c, k, rs, -diff, err, sizeof(err));
		else if (diff > 0)
			rc = delete_pods(c, k, rs, active, diff);
	}
	json_t *st = rs_status(c, k, rs, active, err[0] ? err : NULL);
	int wrc = ctrl_write_status(c, k->group, "v1", k->plural, rs, st, k->manager);
	json_decref(st);
	json_decref(active);
	json_decref(pods);
	json_decref(rs);
	if (rc == -EINVAL || rc == -EPERM)
		rc = 0; /* reported in status; retried on the next change */
	return rc < 0 ? rc : wrc;
}

int ctrl_rs_sync(struct ctrl *c, const char *ns, const char *name)
{
	return keep_pods(c, &rs_kind, ns, name);
}

int ctrl_rc_sync(struct ctrl *c, const char *ns, const char *name)
{
	return keep_pods(c, &rc_kind, ns, name);
}
