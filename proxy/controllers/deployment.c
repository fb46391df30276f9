/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Deployment controller: one ReplicaSet per pod template, named
 * "<deployment>-<pod-template-hash>" and labelled with the hash, revisions
 * in deployment.kubernetes.io/revision (with revision-history when an old
 * ReplicaSet comes back), RollingUpdate within maxSurge/maxUnavailable
 * (a replica change in mid-rollout is spread over the active ReplicaSets
 * by size: kube's proportional scaling, driven by the desired-replicas and
 * max-replicas annotations) and
 * Recreate, paused deployments, revisionHistoryLimit, the progress deadline
 * and status with kube's Available and Progressing conditions and reasons.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/json.h"
#include "lib/log.h"

#define D_MANAGER    "deployment-controller"
#define HASH_LABEL   "pod-template-hash"
#define REV_ANN      "deployment.kubernetes.io/revision"
#define REV_HIST_ANN "deployment.kubernetes.io/revision-history"
#define DESIRED_ANN  "deployment.kubernetes.io/desired-replicas"
#define MAX_ANN      "deployment.kubernetes.io/max-replicas"

struct dstate {
	json_t *d;      /* the Deployment (owned) */
	json_t *rss;    /* every ReplicaSet it controls (owned array) */
	json_t *new_rs; /* borrowed from rss, or NULL */
	json_t *olds;   /* owned array of borrowed-by-reference old RSs */
	int replicas, surge, unavail;
	bool created; /* a new ReplicaSet was created in this sync */
};

/* Dotted paths cannot name annotation keys with dots: read them directly. */
static const char *ann(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(ctrl_path(obj, "metadata.annotations"), key));
}

static int64_t rev_of(const json_t *rs)
{
	const char *s = ann(rs, REV_ANN);
	return s ? strtoll(s, NULL, 10) : 0;
}

static int spec_replicas(const json_t *rs)
{
	return (int)ctrl_int(rs, "spec.replicas", 1);
}

static int st_int(const json_t *rs, const char *key)
{
	return (int)json_integer_value(json_object_get(json_object_get(rs, "status"), key));
}

/* A template as compared and hashed: without the hash label, and without
 * the null creationTimestamp clients send back (kube's typed equality). */
static json_t *normal_template(const json_t *tmpl)
{
	json_t *t = json_deep_copy(tmpl);
	json_t *m = json_object_get(t, "metadata");
	if (json_is_null(json_object_get(m, "creationTimestamp")))
		json_object_del(m, "creationTimestamp");
	json_t *labels = json_object_get(m, "labels");
	json_object_del(labels, HASH_LABEL);
	if (labels && json_object_size(labels) == 0)
		json_object_del(m, "labels");
	if (m && json_object_size(m) == 0)
		json_object_del(t, "metadata");
	return t;
}

static bool same_template(const json_t *rs, const json_t *tmpl)
{
	json_t *a = normal_template(ctrl_path(rs, "spec.template"));
	json_t *b = normal_template(tmpl);
	bool eq = json_equal(a, b);
	json_decref(a);
	json_decref(b);
	return eq;
}

static int by_created(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	time_t tx = ctrl_time(json_string_value(ctrl_path(x, "metadata.creationTimestamp")));
	time_t ty = ctrl_time(json_string_value(ctrl_path(y, "metadata.creationTimestamp")));
	if (tx != ty)
		return tx < ty ? -1 : 1;
	return strcmp(ctrl_name(x), ctrl_name(y));
}

static void split(struct dstate *s)
{
	json_t *tmpl = ctrl_path(s->d, "spec.template");
	kb_json_array_sort(s->rss, by_created); /* oldest first */
	s->olds = json_array();
	size_t i;
	json_t *rs;
	json_array_foreach (s->rss, i, rs) {
		if (!s->new_rs && same_template(rs, tmpl))
			s->new_rs = rs;
		else
			json_array_append(s->olds, rs);
	}
}

static int64_t max_old_revision(const struct dstate *s)
{
	int64_t max = 0;
	size_t i;
	json_t *rs;
	json_array_foreach (s->olds, i, rs)
		if (rev_of(rs) > max)
			max = rev_of(rs);
	return max;
}

static void set_ann(json_t *obj, const char *key, const char *val)
{
	json_t *m = json_object_get(obj, "metadata");
	json_t *a = json_object_get(m, "annotations");
	if (!json_is_object(a)) {
		a = json_object();
		json_object_set_new(m, "annotations", a);
	}
	json_object_set_new(a, key, json_string(val));
}

static bool skip_ann(const char *k)
{
	return strcmp(k, "kubectl.kubernetes.io/last-applied-configuration") == 0 ||
	       strcmp(k, REV_ANN) == 0 || strcmp(k, REV_HIST_ANN) == 0 ||
	       strcmp(k, DESIRED_ANN) == 0 || strcmp(k, MAX_ANN) == 0;
}

/* The deployment's annotations a ReplicaSet carries, plus the replica ones. */
static void copy_annotations(const struct dstate *s, json_t *rs)
{
	const char *k;
	json_t *v;
	json_object_foreach (ctrl_path(s->d, "metadata.annotations"), k, v)
		if (!skip_ann(k) && json_is_string(v))
			set_ann(rs, k, json_string_value(v));
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", s->replicas);
	set_ann(rs, DESIRED_ANN, buf);
	snprintf(buf, sizeof(buf), "%d", s->replicas + s->surge);
	set_ann(rs, MAX_ANN, buf);
}

static int scale_rs(struct dstate *s, struct ctrl *c, json_t *rs, int n)
{
	int was = (int)ctrl_int(rs, "spec.replicas", 1);
	json_t *upd = json_deep_copy(rs);
	json_object_set_new(json_object_get(upd, "spec"), "replicas", json_integer(n));
	copy_annotations(s, upd);
	int rc = proxy_object_update(c->px, "apps", "v1", "replicasets", upd, D_MANAGER, NULL);
	json_decref(upd);
	if (rc == 0 && was != n)
		ctrl_event(c, s->d, "apps/v1", "Deployment", "Normal", "ScalingReplicaSet",
			   D_MANAGER, "Scaled %s replica set %s from %d to %d",
			   was < n ? "up" : "down", ctrl_name(rs), was, n);
	return rc;
}

static json_t *new_rs_object(const struct dstate *s, const char *hash, int replicas, int64_t rev)
{
	char name[300], rbuf[32];
	snprintf(name, sizeof(name), "%s-%s", ctrl_name(s->d), hash);
	json_t *tmpl = json_deep_copy(ctrl_path(s->d, "spec.template"));
	json_t *tm = json_object_get(tmpl, "metadata");
	if (!json_is_object(tm)) {
		tm = json_object();
		json_object_set_new(tmpl, "metadata", tm);
	}
	json_t *labels = json_object_get(tm, "labels");
	if (!json_is_object(labels)) {
		labels = json_object();
		json_object_set_new(tm, "labels", labels);
	}
	json_object_set_new(labels, HASH_LABEL, json_string(hash));
	json_t *sel = json_deep_copy(ctrl_path(s->d, "spec.selector"));
	json_t *ml = json_object_get(sel, "matchLabels");
	if (!json_is_object(ml)) {
		ml = json_object();
		json_object_set_new(sel, "matchLabels", ml);
	}
	json_object_set_new(ml, HASH_LABEL, json_string(hash));
	json_t *rs = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:[o]},s:{s:i,s:o,s:o}}", "apiVersion",
			       "apps/v1", "kind", "ReplicaSet", "metadata", "name", name,
			       "namespace", ctrl_ns(s->d), "labels", json_deep_copy(labels),
			       "ownerReferences", ctrl_new_owner_ref(s->d, true), "spec",
			       "replicas", replicas, "selector", sel, "template", tmpl);
	json_t *mrs = ctrl_path(s->d, "spec.minReadySeconds");
	if (json_is_integer(mrs))
		json_object_set(json_object_get(rs, "spec"), "minReadySeconds", mrs);
	copy_annotations(s, rs);
	snprintf(rbuf, sizeof(rbuf), "%lld", (long long)rev);
	set_ann(rs, REV_ANN, rbuf);
	return rs;
}

/* Replicas the new RS may have now (kube's NewRSNewReplicas). */
static int new_rs_replicas(const struct dstate *s, int have)
{
	const char *type = json_string_value(ctrl_path(s->d, "spec.strategy.type"));
	if (type && strcmp(type, "Recreate") == 0)
		return s->replicas;
	int current = 0;
	size_t i;
	json_t *rs;
	json_array_foreach (s->rss, i, rs)
		current += spec_replicas(rs);
	int max_total = s->replicas + s->surge;
	if (current >= max_total)
		return have;
	int up = max_total - current;
	if (up > s->replicas - have)
		up = s->replicas - have;
	return have + (up > 0 ? up : 0);
}

static int bump_collision(struct ctrl *c, json_t *d)
{
	json_t *st = json_deep_copy(json_object_get(d, "status"));
	if (!json_is_object(st)) {
		json_decref(st);
		st = json_object();
	}
	json_object_set_new(st, "collisionCount",
			    json_integer(ctrl_int(d, "status.collisionCount", 0) + 1));
	int rc = ctrl_write_status(c, "apps", "v1", "deployments", d, st, D_MANAGER);
	json_decref(st);
	return rc < 0 ? rc : -ESTALE;
}

static int set_deploy_revision(struct ctrl *c, json_t *d, int64_t rev)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%lld", (long long)rev);
	const char *have = ann(d, REV_ANN);
	if (have && strcmp(have, buf) == 0)
		return 0;
	json_t *upd = json_deep_copy(d);
	set_ann(upd, REV_ANN, buf);
	int rc = proxy_object_update(c->px, "apps", "v1", "deployments", upd, D_MANAGER, NULL);
	json_decref(upd);
	return rc;
}

/* Finds or creates the new ReplicaSet, keeping revisions in order. */
static int ensure_new_rs(struct ctrl *c, struct dstate *s, bool create)
{
	int64_t max_rev = max_old_revision(s);
	if (s->new_rs) {
		int64_t rev = rev_of(s->new_rs);
		if (rev > max_rev)
			return 0;
		json_t *upd = json_deep_copy(s->new_rs);
		char buf[64];
		const char *hist = ann(upd, REV_HIST_ANN);
		char histbuf[512];
		if (rev > 0) {
			snprintf(histbuf, sizeof(histbuf), "%s%s%lld", hist ? hist : "",
				 hist ? "," : "", (long long)rev);
			set_ann(upd, REV_HIST_ANN, histbuf);
		}
		snprintf(buf, sizeof(buf), "%lld", (long long)(max_rev + 1));
		set_ann(upd, REV_ANN, buf);
		copy_annotations(s, upd);
		int rc =
		    proxy_object_update(c->px, "apps", "v1", "replicasets", upd, D_MANAGER, NULL);
		json_decref(upd);
		return rc < 0 ? rc : -EAGAIN;
	}
	if (!create)
		return 0;
	char hash[32];
	json_t *norm = normal_template(ctrl_path(s->d, "spec.template"));
	ctrl_template_hash(norm, ctrl_int(s->d, "status.collisionCount", 0), hash, sizeof(hash));
	json_decref(norm);
	int replicas = new_rs_replicas(s, 0);
	json_t *rs = new_rs_object(s, hash, replicas, max_rev + 1);
	int rc = proxy_object_create_admitted(c->px, "apps", "v1", "replicasets", rs, D_MANAGER,
					      ctrl_admitted, c, NULL);
	if (rc == -EINPROGRESS) { /* in its webhooks: the sync goes on when it exists */
		json_decref(rs);
		s->created = true;
		return 0;
	}
	if (rc == 0 && replicas > 0)
		ctrl_event(c, s->d, "apps/v1", "Deployment", "Normal", "ScalingReplicaSet",
			   D_MANAGER, "Scaled up replica set %s from 0 to %d", ctrl_name(rs),
			   replicas);
	json_decref(rs);
	if (rc == -EEXIST)
		return bump_collision(c, s->d);
	if (rc == 0)
		s->created = true;
	return rc;
}

/* ---- strategies ------------------------------------------------------------- */

static int available_of(const json_t *arr)
{
	int n = 0;
	size_t i;
	json_t *rs;
	json_array_foreach (arr, i, rs)
		n += st_int(rs, "availableReplicas");
	return n;
}

static int scale_down_olds(struct ctrl *c, struct dstate *s)
{
	int all = 0, olds = 0;
	size_t i;
	json_t *rs;
	json_array_foreach (s->rss, i, rs)
		all += spec_replicas(rs);
	json_array_foreach (s->olds, i, rs)
		olds += spec_replicas(rs);
	if (olds == 0)
		return 0;
	int min_avail = s->replicas - s->unavail;
	int new_unavail =
	    s->new_rs ? spec_replicas(s->new_rs) - st_int(s->new_rs, "availableReplicas") : 0;
	int max_down = all - min_avail - new_unavail;
	if (max_down <= 0)
		return 0;
	/* unhealthy old replicas first */
	json_array_foreach (s->olds, i, rs) {
		int r = spec_replicas(rs), a = st_int(rs, "availableReplicas");
		if (max_down <= 0 || r <= a)
			continue;
		int down = r - a < max_down ? r - a : max_down;
		int rc = scale_rs(s, c, rs, r - down);
		if (rc < 0)
			return rc;
		max_down -= down;
		return 0; /* the next sync sees the new counts */
	}
	int avail = available_of(s->rss);
	int total = avail - min_avail;
	if (total > max_down)
		total = max_down;
	json_array_foreach (s->olds, i, rs) {
		int r = spec_replicas(rs);
		if (total <= 0)
			break;
		if (r == 0)
			continue;
		int down = r < total ? r : total;
		int rc = scale_rs(s, c, rs, r - down);
		if (rc < 0)
			return rc;
		total -= down;
	}
	return 0;
}

static int rolling(struct ctrl *c, struct dstate *s)
{
	int rc = ensure_new_rs(c, s, true);
	if (rc < 0 || s->created)
		return rc;
	int have = spec_replicas(s->new_rs);
	int want = have > s->replicas ? s->replicas : new_rs_replicas(s, have);
	if (want != have)
		return scale_rs(s, c, s->new_rs, want);
	return scale_down_olds(c, s);
}

static bool old_pods_running(struct ctrl *c, const struct dstate *s)
{
	size_t i;
	json_t *rs;
	json_array_foreach (s->olds, i, rs)
		if (st_int(rs, "replicas") > 0)
			return true;
	(void)c;
	return false;
}

static int recreate(struct ctrl *c, struct dstate *s)
{
	size_t i;
	json_t *rs;
	bool scaled = false;
	json_array_foreach (s->olds, i, rs) {
		if (spec_replicas(rs) > 0) {
			int rc = scale_rs(s, c, rs, 0);
			if (rc < 0)
				return rc;
			scaled = true;
		}
	}
	if (scaled || old_pods_running(c, s))
		return 0;
	int rc = ensure_new_rs(c, s, true);
	if (rc < 0 || s->created)
		return rc;
	if (spec_replicas(s->new_rs) != s->replicas)
		return scale_rs(s, c, s->new_rs, s->replicas);
	return 0;
}

/* ---- scaling (kube's DeploymentController.scale) ------------------------------ */

static bool is_active(const json_t *rs)
{
	return spec_replicas(rs) > 0;
}

/* The only active ReplicaSet; with none, the new one or the newest old one. */
static json_t *active_or_latest(const struct dstate *s)
{
	json_t *only = NULL, *rs;
	size_t i, n = 0;
	json_array_foreach (s->rss, i, rs) {
		if (is_active(rs)) {
			only = rs;
			n++;
		}
	}
	if (n == 1)
		return only;
	if (n > 1)
		return NULL;
	if (s->new_rs)
		return s->new_rs;
	size_t k = json_array_size(s->olds);
	return k ? json_array_get(s->olds, k - 1) : NULL; /* olds are oldest first */
}

static bool saturated(const struct dstate *s, const json_t *rs)
{
	const char *want = rs ? ann(rs, DESIRED_ANN) : NULL;
	return want && strtol(want, NULL, 10) == s->replicas && spec_replicas(rs) == s->replicas &&
	       st_int(rs, "availableReplicas") == s->replicas;
}

/* A Deployment whose active ReplicaSets were sized for another replica
 * count (their desired-replicas annotation): kube's isScalingEvent. */
static bool scaling_event(const struct dstate *s)
{
	size_t i;
	json_t *rs;
	json_array_foreach (s->rss, i, rs) {
		const char *want = ann(rs, DESIRED_ANN);
		if (is_active(rs) && want && strtol(want, NULL, 10) != s->replicas)
			return true;
	}
	return false;
}

/* Larger first; between equal sizes the newer first when scaling up, the
 * older first when scaling down. */
static bool scale_up_order;
static int by_size(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int rx = spec_replicas(x), ry = spec_replicas(y);
	if (rx != ry)
		return rx > ry ? -1 : 1;
	int older = by_created(a, b);
	return scale_up_order ? -older : older;
}

/* kube's GetReplicaSetProportion: the RS's share of `to_add` by its size
 * against the max-replicas it was sized for. */
static int proportion(const struct dstate *s, const json_t *rs, int to_add, int added)
{
	int r = spec_replicas(rs);
	if (r == 0 || to_add == 0 || to_add == added)
		return 0;
	int fraction;
	if (s->replicas == 0) {
		fraction = -r;
	} else {
		const char *m = ann(rs, MAX_ANN);
		long before = m ? strtol(m, NULL, 10)
				: json_integer_value(ctrl_path(s->d, "status.replicas"));
		if (before <= 0)
			before = r;
		double size = (double)r * (s->replicas + s->surge) / (double)before;
		fraction = (int)(size < 0 ? size - 0.5 : size + 0.5) - r;
	}
	int allowed = to_add - added;
	if (to_add > 0)
		return fraction < allowed ? fraction : allowed;
	return fraction > allowed ? fraction : allowed;
}

/* Rolling update with old pods and a new RS not saturated: the change in
 * replicas (allowed size replicas+maxSurge minus what the active RSs have)
 * spread over the active RSs by size; leftovers go to the largest. */
static int scale_proportionally(struct ctrl *c, struct dstate *s)
{
	size_t n = json_array_size(s->rss), k = 0, i;
	json_t **act = calloc(n ? n : 1, sizeof(*act)), *rs;
	int total = 0, added = 0, rc = 0;
	if (!act)
		return -ENOMEM;
	json_array_foreach (s->rss, i, rs) {
		if (is_active(rs)) {
			act[k++] = rs;
			total += spec_replicas(rs);
		}
	}
	int allowed = s->replicas > 0 ? s->replicas + s->surge : 0;
	int to_add = allowed - total;
	int *size = calloc(k ? k : 1, sizeof(*size));
	if (!size) {
		free(act);
		return -ENOMEM;
	}
	scale_up_order = to_add > 0;
	qsort(act, k, sizeof(*act), by_size);
	for (i = 0; i < k; i++) {
		int p = proportion(s, act[i], to_add, added);
		size[i] = spec_replicas(act[i]) + p;
		added += p;
	}
	if (k && to_add != 0) {
		size[0] += to_add - added;
		if (size[0] < 0)
			size[0] = 0;
	}
	for (i = 0; i < k && rc >= 0; i++)
		rc = scale_rs(s, c, act[i], size[i]);
	free(size);
	free(act);
	return rc;
}

/* Paused, or a scaling event: size the ReplicaSets without rolling. */
static int scale_only(struct ctrl *c, struct dstate *s)
{
	json_t *target = active_or_latest(s);
	if (target) {
		const char *want = ann(target, DESIRED_ANN);
		bool stale = is_active(target) && want && strtol(want, NULL, 10) != s->replicas;
		if (spec_replicas(target) == s->replicas && !stale)
			return 0;
		return scale_rs(s, c, target, s->replicas);
	}
	if (saturated(s, s->new_rs)) {
		size_t i;
		json_t *rs;
		json_array_foreach (s->olds, i, rs) {
			int rc = is_active(rs) ? scale_rs(s, c, rs, 0) : 0;
			if (rc < 0)
				return rc;
		}
		return 0;
	}
	const char *type = json_string_value(ctrl_path(s->d, "spec.strategy.type"));
	if (type && strcmp(type, "Recreate") == 0)
		return 0;
	return scale_proportionally(c, s);
}

static int cleanup(struct ctrl *c, struct dstate *s)
{
	json_t *lim = ctrl_path(s->d, "spec.revisionHistoryLimit");
	if (!json_is_integer(lim))
		return 0;
	int keep = (int)json_integer_value(lim);
	json_t *dead = json_array();
	size_t i;
	json_t *rs;
	json_array_foreach (s->olds, i, rs)
		if (spec_replicas(rs) == 0 && st_int(rs, "replicas") == 0 &&
		    !ctrl_path(rs, "metadata.deletionTimestamp"))
			json_array_append(dead, rs);
	int extra = (int)json_array_size(dead) - keep;
	for (i = 0; (int)i < extra; i++) {
		/* oldest revision first */
		size_t best = 0;
		for (size_t j = 1; j < json_array_size(dead); j++)
			if (rev_of(json_array_get(dead, j)) < rev_of(json_array_get(dead, best)))
				best = j;
		json_t *v = json_array_get(dead, best);
		proxy_object_delete(c->px, "apps", "v1", "replicasets", ctrl_ns(v), ctrl_name(v),
				    ctrl_uid(v), NULL, D_MANAGER);
		json_array_remove(dead, best);
	}
	json_decref(dead);
	return 0;
}

/* ---- status ------------------------------------------------------------------ */

static void progressing(struct ctrl *c, struct dstate *s, json_t *st, bool complete, bool progress)
{
	char msg[400];
	const char *rsname = s->new_rs ? ctrl_name(s->new_rs) : ctrl_name(s->d);
	bool paused = json_is_true(ctrl_path(s->d, "spec.paused"));
	json_t *old = ctrl_get_condition(st, "Progressing");
	const char *old_reason = json_string_value(json_object_get(old, "reason"));
	if (paused) {
		ctrl_set_condition(st, "Progressing", "Unknown", "DeploymentPaused",
				   "Deployment is paused", true);
		return;
	}
	if (old_reason && strcmp(old_reason, "DeploymentPaused") == 0) {
		ctrl_set_condition(st, "Progressing", "Unknown", "DeploymentResumed",
				   "Deployment is resumed", true);
		return;
	}
	if (complete) {
		snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" has successfully progressed.",
			 rsname);
		ctrl_set_condition(st, "Progressing", "True", "NewReplicaSetAvailable", msg, true);
		return;
	}
	if (progress || !old) {
		snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" is progressing.", rsname);
		json_t *cond =
		    ctrl_set_condition(st, "Progressing", "True", "ReplicaSetUpdated", msg, true);
		char now[40];
		ctrl_now_str(now, sizeof(now));
		json_object_set_new(cond, "lastUpdateTime", json_string(now));
		old = cond;
	}
	int64_t deadline = ctrl_int(s->d, "spec.progressDeadlineSeconds", 600);
	time_t last = ctrl_time(json_string_value(json_object_get(old, "lastUpdateTime")));
	time_t now = time(NULL);
	if (last && last + deadline <= now) {
		snprintf(msg, sizeof(msg), "ReplicaSet \"%s\" has timed out progressing.", rsname);
		ctrl_set_condition(st, "Progressing", "False", "ProgressDeadlineExceeded", msg,
				   true);
	} else if (last) {
		ctrl_enqueue_after(c, "deploy", ctrl_ns(s->d), ctrl_name(s->d),
				   (double)(last + deadline - now));
	}
}

static int write_status(struct ctrl *c, struct dstate *s)
{
	json_t *st = json_deep_copy(json_object_get(s->d, "status"));
	if (!json_is_object(st)) {
		json_decref(st);
		st = json_object();
	}
	int total = 0, spec_total = 0, ready = 0, avail = 0;
	size_t i;
	json_t *rs;
	json_array_foreach (s->rss, i, rs) {
		total += st_int(rs, "replicas");
		spec_total += spec_replicas(rs);
		ready += st_int(rs, "readyReplicas");
		avail += st_int(rs, "availableReplicas");
	}
	int updated = s->new_rs ? st_int(s->new_rs, "replicas") : 0;
	bool progress = s->created || ctrl_int(s->d, "status.updatedReplicas", -1) != updated ||
			ctrl_int(s->d, "status.availableReplicas", -1) != avail ||
			ctrl_int(s->d, "status.replicas", -1) != total ||
			ctrl_int(s->d, "status.readyReplicas", -1) != ready;
	json_object_set(st, "observedGeneration", ctrl_path(s->d, "metadata.generation"));
	json_object_set_new(st, "replicas", json_integer(total));
	json_object_set_new(st, "updatedReplicas", json_integer(updated));
	json_object_set_new(st, "readyReplicas", json_integer(ready));
	json_object_set_new(st, "availableReplicas", json_integer(avail));
	json_object_set_new(st, "unavailableReplicas",
			    json_integer(spec_total - avail > 0 ? spec_total - avail : 0));
	const char *type = json_string_value(ctrl_path(s->d, "spec.strategy.type"));
	int max_unavail = type && strcmp(type, "Recreate") == 0 ? 0 : s->unavail;
	if (avail >= s->replicas - max_unavail)
		ctrl_set_condition(st, "Available", "True", "MinimumReplicasAvailable",
				   "Deployment has minimum availability.", true);
	else
		ctrl_set_condition(st, "Available", "False", "MinimumReplicasUnavailable",
				   "Deployment does not have minimum availability.", true);
	bool complete = s->new_rs && updated == s->replicas && total == s->replicas &&
			avail == s->replicas && spec_total == s->replicas;
	progressing(c, s, st, complete, progress);
	int rc = ctrl_write_status(c, "apps", "v1", "deployments", s->d, st, D_MANAGER);
	json_decref(st);
	return rc;
}

int ctrl_deploy_sync(struct ctrl *c, const char *ns, const char *name)
{
	struct dstate s = {0};
	s.d = ctrl_get(c, "apps/deployments", ns, name);
	if (!s.d || ctrl_path(s.d, "metadata.deletionTimestamp")) {
		json_decref(s.d);
		return 0;
	}
	s.replicas = (int)ctrl_int(s.d, "spec.replicas", 1);
	if (ctrl_rolling_fenceposts(json_object_get(s.d, "spec"), &s.surge, &s.unavail) < 0)
		s.surge = s.unavail = 0;
	s.rss = ctrl_claim(c, "apps/replicasets", "apps", "v1", "replicasets", s.d,
			   ctrl_path(s.d, "spec.selector"), D_MANAGER);
	split(&s);
	int rc;
	const char *type = json_string_value(ctrl_path(s.d, "spec.strategy.type"));
	if (json_is_true(ctrl_path(s.d, "spec.paused")) || scaling_event(&s))
		rc = scale_only(c, &s);
	else if (type && strcmp(type, "Recreate") == 0)
		rc = recreate(c, &s);
	else
		rc = rolling(c, &s);
	if (rc == -EAGAIN)
		rc = 0; /* the revision moved: the RS event requeues us */
	if (rc == 0 && s.new_rs)
		rc = set_deploy_revision(c, s.d, rev_of(s.new_rs));
	if (rc == 0 && !s.created) {
		json_t *fresh = ctrl_get(c, "apps/deployments", ns, name);
		if (fresh) {
			json_decref(s.d);
			s.d = fresh;
		}
		rc = write_status(c, &s);
		cleanup(c, &s);
	}
	json_decref(s.olds);
	json_decref(s.rss);
	json_decref(s.d);
	return rc == -EINVAL || rc == -EPERM ? 0 : rc;
}
