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
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controllers_impl.h"
#include "lib/log.h"

#define JOB_MANAGER "job-controller"
#define INDEX_KEY   "batch.kubernetes.io/job-completion-index"
#define MAX_INDEXES 100000

struct jstate {
	json_t *job, *pods;
	int active, ready, succeeded, failed;
	bool indexed;
	int completions; /* -1: not set */
	int parallelism;
	unsigned char *done;    /* Indexed: index succeeded */
	unsigned char *running; /* Indexed: index has an active pod */
	time_t last_failure;
	char fail_reason[64], fail_msg[512];
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

static void count_failed(struct jstate *s, const json_t *pod)
{
	size_t rule = 0;
	const char *action = failure_action(s->job, pod, &rule);
	if (strcmp(action, "Ignore") == 0)
		return;
	s->failed++;
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
}

/* ---- counting ------------------------------------------------------------------ */

static void count(struct jstate *s)
{
	size_t i;
	json_t *p;
	json_array_foreach (s->pods, i, p) {
		const char *phase = ctrl_pod_phase(p);
		int idx = s->indexed ? pod_index(p) : -1;
		bool in_range = idx >= 0 && idx < s->completions;
		if (strcmp(phase, "Succeeded") == 0) {
			if (!s->indexed)
				s->succeeded++;
			else if (in_range && !s->done[idx]) {
				s->done[idx] = 1;
				s->succeeded++;
			}
		} else if (strcmp(phase, "Failed") == 0) {
			count_failed(s, p);
		} else if (ctrl_pod_active(p)) {
			s->active++;
			s->ready += ctrl_pod_ready(p);
			if (in_range)
				s->running[idx] = 1;
		}
	}
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
					    ctrl_uid(p), NULL);
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
	int rc = proxy_object_create(c->px, "", "v1", "pods", pod, JOB_MANAGER, NULL);
	json_decref(pod);
	if (rc == 0)
		s->active++;
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
	if (s->indexed) {
		for (int i = 0; i < s->completions && s->active < s->parallelism && rc == 0; i++)
			if (!s->done[i] && !s->running[i])
				rc = create_pod(c, s, i);
		return rc;
	}
	int want = s->parallelism;
	if (s->completions >= 0 && s->completions - s->succeeded < want)
		want = s->completions - s->succeeded;
	if (s->completions < 0 && s->succeeded > 0)
		want = 0;
	while (s->active < want && rc == 0)
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
	json_object_set_new(st, "succeeded", json_integer(s->succeeded));
	json_object_set_new(st, "failed", json_integer(s->failed));
	json_object_set_new(st, "terminating", json_integer(0));
	if (s->indexed) {
		char buf[4096];
		completed_indexes(s, buf, sizeof(buf));
		if (buf[0])
			json_object_set_new(st, "completedIndexes", json_string(buf));
	}
	json_object_set_new(st, "uncountedTerminatedPods", json_object());
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
				     ctrl_uid(job), "Foreground");
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
	} else if (complete_now(s)) {
		delete_active(c, s);
		char now[40];
		ctrl_now_str(now, sizeof(now));
		finish(st, "SuccessCriteriaMet", "Complete", "CompletionsReached",
		       "Reached expected number of succeeded pods");
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

int job_sync(struct ctrl *c, const char *ns, const char *name)
{
	struct jstate s = {0};
	s.job = ctrl_get(c, "batch/jobs", ns, name);
	if (!s.job)
		return 0;
	int rc = 0;
	if (cond_true(s.job, "Complete") || cond_true(s.job, "Failed")) {
		rc = ttl_check(c, s.job);
		goto out;
	}
	if (ctrl_path(s.job, "metadata.deletionTimestamp"))
		goto out;
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
	rc = sync_state(c, &s);
out:
	free(s.done);
	free(s.running);
	json_decref(s.pods);
	json_decref(s.job);
	return rc;
}
