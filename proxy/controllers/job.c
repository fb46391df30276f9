/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Job controller: runs up to spec.parallelism pods until
 * spec.completions succeed (NonIndexed, or Indexed with one success per
 * completion index), fails the Job past backoffLimit, past
 * activeDeadlineSeconds or on a podFailurePolicy FailJob rule, recreates
 * failed pods after kube's exponential backoff (10 s doubling, 6 min cap),
 * reports status (active, ready, succeeded, failed, startTime,
 * completionTime, completedIndexes, conditions SuccessCriteriaMet/Complete
 * and FailureTarget/Failed with kube's reasons), and deletes finished Jobs
 * after ttlSecondsAfterFinished. Pod phases come from the pods' status.
 *
 * Pod tracking (kube >= 1.26): every pod is created with the finalizer
 * batch.kubernetes.io/job-tracking. A pod that finished (or is deleted
 * before it finished: a failure) is first recorded by uid in
 * status.uncountedTerminatedPods, then its finalizer is removed, then it
 * moves into status.succeeded/failed; the counts are cumulative and
 * survive the pods' deletion. Pods of a finished, suspended, deleted or
 * missing Job, and orphans, lose the finalizer without being counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"

#define JOB_MANAGER "job-controller"
#define INDEX_KEY   "batch.kubernetes.io/job-completion-index"
#define MAX_INDEXES 100000
#define TRACK_FIN   "batch.kubernetes.io/job-tracking"

struct jstate {
	json_t *job, *pods;
	int active, ready, succeeded, failed;
	int pending; /* pods still in their admission webhooks */
	bool indexed;
	int completions; /* -1: not set */
	int parallelism;
	unsigned char *done;    /* Indexed: index succeeded */
	unsigned char *running; /* Indexed: index has an active pod */
	time_t last_failure;
	char fail_reason[64], fail_msg[512];
	/* tracking: counts stored in status, uncounted uids (stored + new),
	 * whether any uid is new, and the pods whose finalizer can go */
	int base_succ, base_fail;
	json_t *unc_succ, *unc_fail, *release;
	bool unc_new;
};

static bool cond_true(const json_t *obj, const char *type)
{
	json_t *c = ctrl_get_condition(json_object_get(obj, "status"), type);
	const char *s = json_string_value(json_object_get(c, "status"));
	return s && strcmp(s, "True") == 0;
}

static int pod_index(const json_t *pod)
{
	const char *s =
	    json_string_value(json_object_get(ctrl_path(pod, "metadata.annotations"), INDEX_KEY));
	if (!s)
		s = json_string_value(
		    json_object_get(ctrl_path(pod, "metadata.labels"), INDEX_KEY));
	return s ? atoi(s) : -1;
}

static time_t finished_at(const json_t *pod)
{
	time_t best = 0;
	size_t i;
	json_t *cs;
	json_array_foreach (ctrl_path(pod, "status.containerStatuses"), i, cs) {
		time_t t =
		    ctrl_time(json_string_value(ctrl_path(cs, "state.terminated.finishedAt")));
		if (t > best)
			best = t;
	}
	if (!best)
		best = ctrl_time(json_string_value(ctrl_path(pod, "metadata.creationTimestamp")));
	return best;
}

/* ---- podFailurePolicy --------------------------------------------------------- */

static bool exit_codes_match(const json_t *rule, const json_t *pod)
{
	const char *op = json_string_value(json_object_get(rule, "operator"));
	const char *cname = json_string_value(json_object_get(rule, "containerName"));
	json_t *values = json_object_get(rule, "values");
	size_t i, j;
	json_t *cs, *v;
	json_array_foreach (ctrl_path(pod, "status.containerStatuses"), i, cs) {
		const char *n = json_string_value(json_object_get(cs, "name"));
		if (cname && (!n || strcmp(cname, n) != 0))
			continue;
		json_t *code = ctrl_path(cs, "state.terminated.exitCode");
		if (!json_is_integer(code) || json_integer_value(code) == 0)
			continue;
		bool in = false;
		json_array_foreach (values, j, v)
			if (json_integer_value(v) == json_integer_value(code))
				in = true;
		if (op && strcmp(op, "NotIn") == 0 ? !in : in)
			return true;
	}
	return false;
}

static bool conditions_match(const json_t *pats, const json_t *pod)
{
	size_t i;
	json_t *p;
	json_array_foreach (pats, i, p) {
		const char *type = json_string_value(json_object_get(p, "type"));
		const char *want = json_string_value(json_object_get(p, "status"));
		json_t *cond =
		    type ? ctrl_get_condition(json_object_get(pod, "status"), type) : NULL;
		const char *have = json_string_value(json_object_get(cond, "status"));
		if (have && strcmp(have, want ? want : "True") == 0)
			return true;
	}
	return false;
}

/* The action of the first matching rule ("Count" when none), and its index. */
static const char *failure_action(const json_t *job, const json_t *pod, size_t *rule_idx)
{
	size_t i;
	json_t *rule;
	json_array_foreach (ctrl_path(job, "spec.podFailurePolicy.rules"), i, rule) {
		json_t *codes = json_object_get(rule, "onExitCodes");
		json_t *conds = json_object_get(rule, "onPodConditions");
		if ((codes && exit_codes_match(codes, pod)) ||
		    (conds && conditions_match(conds, pod))) {
			*rule_idx = i;
			const char *a = json_string_value(json_object_get(rule, "action"));
			return a ? a : "Count";
		}
	}
	return "Count";
}

/* A failed pod's effect under podFailurePolicy; false for Ignore. */
static bool failure_counts(struct jstate *s, const json_t *pod)
{
	size_t rule = 0;
	const char *action = failure_action(s->job, pod, &rule);
	if (strcmp(action, "Ignore") == 0)
		return false;
	time_t t = finished_at(pod);
	if (t > s->last_failure)
		s->last_failure = t;
	if ((strcmp(action, "FailJob") == 0 || strcmp(action, "FailIndex") == 0) &&
	    !s->fail_reason[0]) {
		snprintf(s->fail_reason, sizeof(s->fail_reason), "PodFailurePolicy");
		snprintf(s->fail_msg, sizeof(s->fail_msg),
			 "Pod %s/%s failed with a status matching %s rule at index %zu",
			 ctrl_ns(pod), ctrl_name(pod), action, rule);
	}
	return true;
}

/* ---- counting ------------------------------------------------------------------ */

static bool has_tracking(const json_t *pod)
{
	size_t i;
	json_t *f;
	json_array_foreach (ctrl_path(pod, "metadata.finalizers"), i, f)
		if (json_is_string(f) && strcmp(json_string_value(f), TRACK_FIN) == 0)
			return true;
	return false;
}

static bool uid_in(const json_t *arr, const char *uid)
{
	size_t i;
	json_t *u;
	json_array_foreach (arr, i, u)
		if (json_is_string(u) && strcmp(json_string_value(u), uid) == 0)
			return true;
	return false;
}

/* The uid of a tracked, terminated pod goes to the uncounted list `arr`. */
static void track(struct jstate *s, json_t *arr, const json_t *pod)
{
	if (!uid_in(arr, ctrl_uid(pod))) {
		json_array_append_new(arr, json_string(ctrl_uid(pod)));
		s->unc_new = true;
	}
	json_array_append(s->release, (json_t *)pod);
}

/* Marks completedIndexes ("1,3-5") from the stored status in s->done. */
static void parse_indexes(struct jstate *s, const char *str)
{
	while (str && *str) {
		char *end;
		long a = strtol(str, &end, 10), b = a;
		if (end == str)
			return;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long i = a; i <= b && i >= 0 && i < s->completions; i++)
			s->done[i] = 1;
		str = *end == ',' ? end + 1 : end;
		if (*end != ',')
			return;
	}
}

static json_t *uid_list(const json_t *job, const char *which)
{
	json_t *a = json_deep_copy(ctrl_path(job, which));
	if (json_is_array(a))
		return a;
	json_decref(a);
	return json_array();
}

static void count_pod(struct jstate *s, json_t *p, bool quiet)
{
	const char *phase = ctrl_pod_phase(p);
	bool tracked = has_tracking(p);
	int idx = s->indexed ? pod_index(p) : -1;
	bool in_range = idx >= 0 && idx < s->completions;
	bool deleting = ctrl_path(p, "metadata.deletionTimestamp") != NULL;
	if (strcmp(phase, "Succeeded") == 0) {
		if (in_range)
			s->done[idx] = 1;
		if (tracked)
			track(s, s->unc_succ, p);
	} else if (strcmp(phase, "Failed") == 0 || (deleting && tracked)) {
		bool counts = failure_counts(s, p);
		if (tracked && (quiet || !counts))
			json_array_append(s->release, p);
		else if (tracked)
			track(s, s->unc_fail, p);
	} else if (ctrl_pod_active(p)) {
		s->active++;
		s->ready += ctrl_pod_ready(p);
		if (in_range)
			s->running[idx] = 1;
	}
}

/* Counts: the stored counters plus the uncounted uids, stored or new. A
 * suspended Job's deleted pods are not failures (quiet). */
static void count(struct jstate *s)
{
	bool quiet = json_is_true(ctrl_path(s->job, "spec.suspend"));
	s->base_succ = (int)ctrl_int(s->job, "status.succeeded", 0);
	s->base_fail = (int)ctrl_int(s->job, "status.failed", 0);
	s->unc_succ = uid_list(s->job, "status.uncountedTerminatedPods.succeeded");
	s->unc_fail = uid_list(s->job, "status.uncountedTerminatedPods.failed");
	s->release = json_array();
	if (s->indexed)
		parse_indexes(s, json_string_value(ctrl_path(s->job, "status.completedIndexes")));
	size_t i;
	json_t *p;
	json_array_foreach (s->pods, i, p)
		count_pod(s, p, quiet);
	s->succeeded = s->base_succ + (int)json_array_size(s->unc_succ);
	if (s->indexed) {
		s->succeeded = 0;
		for (int k = 0; k < s->completions; k++)
			s->succeeded += s->done[k];
	}
	s->failed = s->base_fail + (int)json_array_size(s->unc_fail);
}

/* ---- finalizers ------------------------------------------------------------------ */

/* Removes the tracking finalizer from pod (borrowed). 0 when it is gone. */
static int release_pod(struct ctrl *c, const json_t *pod)
{
	if (!has_tracking(pod))
		return 0;
	json_t *upd = json_deep_copy(pod);
	json_t *fins = ctrl_path(upd, "metadata.finalizers");
	for (size_t i = json_array_size(fins); i-- > 0;)
		if (strcmp(json_string_value(json_array_get(fins, i)) ?: "", TRACK_FIN) == 0)
			json_array_remove(fins, i);
	if (json_array_size(fins) == 0)
		json_object_del(json_object_get(upd, "metadata"), "finalizers");
	int rc = proxy_object_update(c->px, "", "v1", "pods", upd, JOB_MANAGER, NULL);
	json_decref(upd);
	return rc == -ENOENT ? 0 : rc;
}

/* Drops uid from arr when its pod was released. */
static void uid_remove(json_t *arr, const char *uid)
{
	for (size_t i = json_array_size(arr); i-- > 0;)
		if (strcmp(json_string_value(json_array_get(arr, i)) ?: "", uid) == 0)
			json_array_remove(arr, i);
}

/*
 * kube's order: the new uncounted uids are written first, then the pods'
 * finalizers go, then (in the final status write) the released uids move
 * into the counters. A pod whose finalizer could not be removed stays
 * uncounted for the next sync.
 */
static int flush_tracking(struct ctrl *c, struct jstate *s)
{
	if (s->unc_new) {
		json_t *st = json_deep_copy(json_object_get(s->job, "status"));
		if (!json_is_object(st)) {
			json_decref(st);
			st = json_object();
		}
		json_object_set_new(
		    st, "uncountedTerminatedPods",
		    json_pack("{s:O,s:O}", "succeeded", s->unc_succ, "failed", s->unc_fail));
		int rc = ctrl_write_status(c, "batch", "v1", "jobs", s->job, st, JOB_MANAGER);
		json_decref(st);
		if (rc < 0)
			return rc;
		json_t *fresh = ctrl_get(c, "batch/jobs", ctrl_ns(s->job), ctrl_name(s->job));
		if (fresh) {
			json_decref(s->job);
			s->job = fresh;
		}
	}
	size_t i;
	json_t *p;
	json_array_foreach (s->release, i, p) {
		if (release_pod(c, p) < 0)
			continue;
		const char *uid = ctrl_uid(p);
		if (uid_in(s->unc_succ, uid)) {
			uid_remove(s->unc_succ, uid);
			s->base_succ++;
		} else if (uid_in(s->unc_fail, uid)) {
			uid_remove(s->unc_fail, uid);
			s->base_fail++;
		}
	}
	/* uids whose pods are gone already (released before a restart) */
	json_t *arrs[2] = {s->unc_succ, s->unc_fail};
	int *base[2] = {&s->base_succ, &s->base_fail};
	for (int k = 0; k < 2; k++) {
		for (size_t j = json_array_size(arrs[k]); j-- > 0;) {
			const char *uid = json_string_value(json_array_get(arrs[k], j));
			bool present = false;
			json_array_foreach (s->pods, i, p)
				present |= uid && strcmp(ctrl_uid(p), uid) == 0 && has_tracking(p);
			if (!present) {
				json_array_remove(arrs[k], j);
				(*base[k])++;
			}
		}
	}
	return 0;
}

/* Pods that must lose the finalizer without being counted: those of a
 * finished or deleted Job (uid), of a Job that is gone (name), orphans. */
static void release_all(struct ctrl *c, const char *ns, const char *uid, const char *name)
{
	json_t *pods = ctrl_list(c, "/pods", ns);
	size_t i;
	json_t *p;
	json_array_foreach (pods, i, p) {
		if (!has_tracking(p))
			continue;
		json_t *ref = ctrl_controller_ref(p);
		const char *ruid = json_string_value(json_object_get(ref, "uid"));
		const char *rname = json_string_value(json_object_get(ref, "name"));
		const char *rkind = json_string_value(json_object_get(ref, "kind"));
		bool mine = ref && rkind && strcmp(rkind, "Job") == 0 &&
			    ((uid && ruid && strcmp(uid, ruid) == 0) ||
			     (!uid && name && rname && strcmp(name, rname) == 0));
		if (mine || (!ref && !uid && !name))
			release_pod(c, p);
	}
	json_decref(pods);
}

int ctrl_job_release_orphans(struct ctrl *c, const char *ns)
{
	release_all(c, ns, NULL, NULL);
	return 0;
}

static void completed_indexes(const struct jstate *s, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (int i = 0; i < s->completions; i++) {
		if (!s->done[i])
			continue;
		int j = i;
		while (j + 1 < s->completions && s->done[j + 1])
			j++;
		int n = j == i ? snprintf(buf + off, len - off, "%s%d", off ? "," : "", i)
			       : snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", i, j);
		if (n < 0 || (size_t)n >= len - off)
			return;
		off += (size_t)n;
		i = j;
	}
}

/* ---- actions ----------------------------------------------------------------------- */

static void delete_active(struct ctrl *c, struct jstate *s)
{
	size_t i;
	json_t *p;
	json_array_foreach (s->pods, i, p)
		if (ctrl_pod_active(p))
			proxy_object_delete(c->px, "", "v1", "pods", ctrl_ns(p), ctrl_name(p),
					    ctrl_uid(p), NULL, JOB_MANAGER);
	s->active = s->ready = 0;
}

static void add_index_env(json_t *pod, int idx)
{
	char v[16];
	snprintf(v, sizeof(v), "%d", idx);
	size_t i;
	json_t *ctr;
	json_array_foreach (ctrl_path(pod, "spec.containers"), i, ctr) {
		json_t *env = json_object_get(ctr, "env");
		if (!json_is_array(env)) {
			env = json_array();
			json_object_set_new(ctr, "env", env);
		}
		json_array_append_new(
		    env, json_pack("{s:s,s:{s:{s:s}}}", "name", "JOB_COMPLETION_INDEX", "valueFrom",
				   "fieldRef", "fieldPath", "metadata.labels['" INDEX_KEY "']"));
	}
}

static int create_pod(struct ctrl *c, struct jstate *s, int idx)
{
	char gen[300], v[16];
	json_t *pod;
	if (idx >= 0) {
		snprintf(gen, sizeof(gen), "%s-%d-", ctrl_name(s->job), idx);
		pod = ctrl_pod_from_template(ctrl_path(s->job, "spec.template"), s->job, NULL, gen);
		snprintf(v, sizeof(v), "%d", idx);
		json_t *m = json_object_get(pod, "metadata");
		const char *keys[] = {"labels", "annotations"};
		for (int k = 0; k < 2; k++) {
			json_t *o = json_object_get(m, keys[k]);
			if (!json_is_object(o)) {
				o = json_object();
				json_object_set_new(m, keys[k], o);
			}
			json_object_set_new(o, INDEX_KEY, json_string(v));
		}
		snprintf(gen, sizeof(gen), "%s-%d", ctrl_name(s->job), idx);
		if (!ctrl_path(pod, "spec.hostname") && strlen(gen) <= 63)
			json_object_set_new(json_object_get(pod, "spec"), "hostname",
					    json_string(gen));
		add_index_env(pod, idx);
	} else {
		snprintf(gen, sizeof(gen), "%s-", ctrl_name(s->job));
		pod = ctrl_pod_from_template(ctrl_path(s->job, "spec.template"), s->job, NULL, gen);
	}
	json_t *m = json_object_get(pod, "metadata"), *fins = json_object_get(m, "finalizers");
	if (!json_is_array(fins)) {
		fins = json_array();
		json_object_set_new(m, "finalizers", fins);
	}
	json_array_append_new(fins, json_string(TRACK_FIN));
	json_t *made = NULL;
	int rc = proxy_object_create_admitted(c->px, "", "v1", "pods", pod, JOB_MANAGER,
					      ctrl_admitted, c, &made);
	json_decref(pod);
	if (rc == -EINPROGRESS) { /* its webhooks answer later: ctrl_admitted */
		s->pending++;
		rc = 0;
	} else if (rc == 0) {
		s->active++;
		ctrl_event(c, s->job, "batch/v1", "Job", "Normal", "SuccessfulCreate", JOB_MANAGER,
			   "Created pod: %s", ctrl_name(made));
	} else {
		ctrl_event(c, s->job, "batch/v1", "Job", "Warning", "FailedCreate", JOB_MANAGER,
			   "Error creating: %s", strerror(-rc));
	}
	json_decref(made);
	return rc;
}

/* kube's pod backoff: 10 s doubling per failure, capped at 6 minutes. */
static double backoff_left(const struct jstate *s)
{
	if (s->failed == 0)
		return 0;
	double delay = 10;
	for (int i = 1; i < s->failed && delay < 360; i++)
		delay *= 2;
	if (delay > 360)
		delay = 360;
	double left = (double)s->last_failure + delay - (double)time(NULL);
	return left > 0 ? left : 0;
}

static int create_missing(struct ctrl *c, struct jstate *s)
{
	double wait = backoff_left(s);
	if (wait > 0) {
		ctrl_enqueue_after(c, "job", ctrl_ns(s->job), ctrl_name(s->job), wait);
		return 0;
	}
	int rc = 0;
	/* pods still in their admission webhooks count as active */
	s->pending = (int)proxy_creates_pending(c->px, ctrl_ns(s->job), ctrl_uid(s->job));
	if (s->indexed) {
		for (int i = 0;
		     i < s->completions && s->active + s->pending < s->parallelism && rc == 0; i++)
			if (!s->done[i] && !s->running[i])
				rc = create_pod(c, s, i);
		return rc;
	}
	int want = s->parallelism;
	if (s->completions >= 0 && s->completions - s->succeeded < want)
		want = s->completions - s->succeeded;
	if (s->completions < 0 && s->succeeded > 0)
		want = 0;
	while (s->active + s->pending < want && rc == 0)
		rc = create_pod(c, s, -1);
	return rc;
}

/* ---- status ----------------------------------------------------------------------- */

static void finish(json_t *st, const char *type1, const char *type2, const char *reason,
		   const char *msg)
{
	ctrl_set_condition(st, type1, "True", reason, msg, false);
	ctrl_set_condition(st, type2, "True", reason, msg, false);
}

static bool failed_now(struct jstate *s, const json_t *st)
{
	if (s->fail_reason[0])
		return true;
	if (s->failed > ctrl_int(s->job, "spec.backoffLimit", 6)) {
		snprintf(s->fail_reason, sizeof(s->fail_reason), "BackoffLimitExceeded");
		snprintf(s->fail_msg, sizeof(s->fail_msg),
			 "Job has reached the specified backoff limit");
		return true;
	}
	json_t *ads = ctrl_path(s->job, "spec.activeDeadlineSeconds");
	time_t start = ctrl_time(json_string_value(json_object_get(st, "startTime")));
	if (json_is_integer(ads) && start) {
		time_t end = start + (time_t)json_integer_value(ads);
		if (time(NULL) >= end) {
			snprintf(s->fail_reason, sizeof(s->fail_reason), "DeadlineExceeded");
			snprintf(s->fail_msg, sizeof(s->fail_msg),
				 "Job was active longer than specified deadline");
			return true;
		}
	}
	return false;
}

static bool complete_now(const struct jstate *s)
{
	if (s->completions < 0)
		return s->succeeded > 0 && s->active == 0;
	return s->succeeded >= s->completions;
}

static json_t *base_status(const struct jstate *s)
{
	json_t *st = json_deep_copy(json_object_get(s->job, "status"));
	if (!json_is_object(st)) {
		json_decref(st);
		st = json_object();
	}
	return st;
}

static void set_counts(const struct jstate *s, json_t *st)
{
	json_object_set_new(st, "active", json_integer(s->active));
	json_object_set_new(st, "ready", json_integer(s->ready));
	json_object_set_new(st, "succeeded",
			    json_integer(s->indexed ? s->succeeded : s->base_succ));
	json_object_set_new(st, "failed", json_integer(s->base_fail));
	json_object_set_new(st, "terminating", json_integer(0));
	if (s->indexed) {
		char buf[4096];
		completed_indexes(s, buf, sizeof(buf));
		if (buf[0])
			json_object_set_new(st, "completedIndexes", json_string(buf));
	}
	json_t *unc = json_object();
	if (json_array_size(s->unc_succ))
		json_object_set(unc, "succeeded", s->unc_succ);
	if (json_array_size(s->unc_fail))
		json_object_set(unc, "failed", s->unc_fail);
	json_object_set_new(st, "uncountedTerminatedPods", unc);
	if (!json_object_get(st, "startTime")) {
		char now[40];
		ctrl_now_str(now, sizeof(now));
		json_object_set_new(st, "startTime", json_string(now));
	}
}

/* ---- TTL -------------------------------------------------------------------------- */

static int ttl_check(struct ctrl *c, const json_t *job)
{
	json_t *ttl = ctrl_path(job, "spec.ttlSecondsAfterFinished");
	if (!json_is_integer(ttl))
		return 0;
	time_t done = ctrl_time(json_string_value(ctrl_path(job, "status.completionTime")));
	if (!done) {
		json_t *f = ctrl_get_condition(json_object_get(job, "status"), "Failed");
		done = ctrl_time(json_string_value(json_object_get(f, "lastTransitionTime")));
	}
	if (!done)
		return 0;
	time_t at = done + (time_t)json_integer_value(ttl);
	if (time(NULL) < at) {
		ctrl_enqueue_after(c, "job", ctrl_ns(job), ctrl_name(job),
				   (double)(at - time(NULL)));
		return 0;
	}
	int rc = proxy_object_delete(c->px, "batch", "v1", "jobs", ctrl_ns(job), ctrl_name(job),
				     ctrl_uid(job), "Foreground", JOB_MANAGER);
	return rc == -ENOENT ? 0 : rc;
}

static int sync_state(struct ctrl *c, struct jstate *s)
{
	json_t *st = base_status(s);
	int rc = 0;
	if (json_is_true(ctrl_path(s->job, "spec.suspend"))) {
		delete_active(c, s);
		ctrl_set_condition(st, "Suspended", "True", "JobSuspended", "Job suspended", false);
	} else if (set_counts(s, st), failed_now(s, st)) {
		delete_active(c, s);
		finish(st, "FailureTarget", "Failed", s->fail_reason, s->fail_msg);
		ctrl_event(c, s->job, "batch/v1", "Job", "Warning", s->fail_reason, JOB_MANAGER,
			   "%s", s->fail_msg);
	} else if (complete_now(s)) {
		delete_active(c, s);
		char now[40];
		ctrl_now_str(now, sizeof(now));
		finish(st, "SuccessCriteriaMet", "Complete", "CompletionsReached",
		       "Reached expected number of succeeded pods");
		ctrl_event(c, s->job, "batch/v1", "Job", "Normal", "Completed", JOB_MANAGER,
			   "Job completed");
		json_object_set_new(st, "completionTime", json_string(now));
	} else {
		if (json_object_get(st, "conditions"))
			ctrl_remove_condition(st, "Suspended");
		rc = create_missing(c, s);
		json_t *ads = ctrl_path(s->job, "spec.activeDeadlineSeconds");
		time_t start = ctrl_time(json_string_value(json_object_get(st, "startTime")));
		if (json_is_integer(ads))
			ctrl_enqueue_after(c, "job", ctrl_ns(s->job), ctrl_name(s->job),
					   (double)(start + json_integer_value(ads) - time(NULL)));
	}
	set_counts(s, st);
	int wrc = ctrl_write_status(c, "batch", "v1", "jobs", s->job, st, JOB_MANAGER);
	json_decref(st);
	return rc == -EINVAL || rc == -EPERM || rc == 0 ? wrc : rc;
}

int ctrl_job_sync(struct ctrl *c, const char *ns, const char *name)
{
	struct jstate s = {0};
	s.job = ctrl_get(c, "batch/jobs", ns, name);
	if (!s.job) {
		release_all(c, ns, NULL, name);
		return 0;
	}
	int rc = 0;
	if (cond_true(s.job, "Complete") || cond_true(s.job, "Failed")) {
		release_all(c, ns, ctrl_uid(s.job), NULL);
		rc = ttl_check(c, s.job);
		goto out;
	}
	if (ctrl_path(s.job, "metadata.deletionTimestamp")) {
		release_all(c, ns, ctrl_uid(s.job), NULL);
		goto out;
	}
	json_t *cm = ctrl_path(s.job, "spec.completionMode");
	s.indexed = json_string_value(cm) && strcmp(json_string_value(cm), "Indexed") == 0;
	json_t *comp = ctrl_path(s.job, "spec.completions");
	s.completions = json_is_integer(comp) ? (int)json_integer_value(comp) : -1;
	s.parallelism = (int)ctrl_int(s.job, "spec.parallelism", 1);
	if (s.indexed && (s.completions < 0 || s.completions > MAX_INDEXES))
		goto out;
	if (s.indexed) {
		s.done = calloc((size_t)s.completions + 1, 1);
		s.running = calloc((size_t)s.completions + 1, 1);
		if (!s.done || !s.running) {
			rc = -ENOMEM;
			goto out;
		}
	}
	s.pods = ctrl_claim(c, "/pods", "", "v1", "pods", s.job, ctrl_path(s.job, "spec.selector"),
			    JOB_MANAGER);
	count(&s);
	rc = flush_tracking(c, &s);
	if (rc == 0)
		rc = sync_state(c, &s);
out:
	json_decref(s.unc_succ);
	json_decref(s.unc_fail);
	json_decref(s.release);
	free(s.done);
	free(s.running);
	json_decref(s.pods);
	json_decref(s.job);
	return rc;
}
