/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CronJob controller: at each scheduled time (cron syntax, in
 * spec.timeZone) creates the Job "<cronjob>-<minutes since epoch>" from
 * spec.jobTemplate unless it exists already (so a restart never runs a
 * schedule twice), honours suspend, startingDeadlineSeconds and
 * concurrencyPolicy Allow/Forbid/Replace, keeps successful and failed Jobs
 * up to the history limits, and reports active, lastScheduleTime and
 * lastSuccessfulTime.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"
#include "lib/util.h"

#define CJ_MANAGER "cronjob-controller"

static int job_state(const json_t *job) /* 0 active, 1 complete, 2 failed */
{
	size_t i;
	json_t *c;
	json_array_foreach (ctrl_path(job, "status.conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));
		if (!t || !s || strcmp(s, "True") != 0)
			continue;
		if (strcmp(t, "Complete") == 0)
			return 1;
		if (strcmp(t, "Failed") == 0)
			return 2;
	}
	return 0;
}

static json_t *children(struct ctrl *c, const json_t *cj)
{
	json_t *all = ctrl_list(c, "batch/jobs", ctrl_ns(cj));
	json_t *mine = json_array();
	size_t i;
	json_t *j;
	json_array_foreach (all, i, j) {
		json_t *ref = ctrl_controller_ref(j);
		const char *u = json_string_value(json_object_get(ref, "uid"));
		if (u && strcmp(u, ctrl_uid(cj)) == 0)
			json_array_append(mine, j);
	}
	json_decref(all);
	return mine;
}

static time_t job_time(const json_t *job)
{
	time_t t = ctrl_time(json_string_value(ctrl_path(job, "status.startTime")));
	return t ? t : ctrl_time(json_string_value(ctrl_path(job, "metadata.creationTimestamp")));
}

/* Deletes the oldest finished Jobs in `state` beyond `limit`. */
static void trim_history(struct ctrl *c, json_t *jobs, int state, int64_t limit)
{
	json_t *v = json_array();
	size_t i;
	json_t *j;
	json_array_foreach (jobs, i, j)
		if (job_state(j) == state && !ctrl_path(j, "metadata.deletionTimestamp"))
			json_array_append(v, j);
	while ((int64_t)json_array_size(v) > limit) {
		size_t old = 0;
		for (i = 1; i < json_array_size(v); i++)
			if (job_time(json_array_get(v, i)) < job_time(json_array_get(v, old)))
				old = i;
		j = json_array_get(v, old);
		proxy_object_delete(c->px, "batch", "v1", "jobs", ctrl_ns(j), ctrl_name(j),
				    ctrl_uid(j), "Background", CJ_MANAGER);
		json_array_remove(v, old);
	}
	json_decref(v);
}

static json_t *job_ref(const json_t *j)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s?}", "apiVersion", "batch/v1", "kind", "Job",
			 "name", ctrl_name(j), "namespace", ctrl_ns(j), "uid", ctrl_uid(j),
			 "resourceVersion",
			 json_string_value(ctrl_path(j, "metadata.resourceVersion")));
}

static void fill_status(json_t *st, json_t *jobs)
{
	json_t *active = json_array();
	time_t last_ok = ctrl_time(json_string_value(json_object_get(st, "lastSuccessfulTime")));
	size_t i;
	json_t *j;
	json_array_foreach (jobs, i, j) {
		int s = job_state(j);
		if (s == 0 && !ctrl_path(j, "metadata.deletionTimestamp"))
			json_array_append_new(active, job_ref(j));
		time_t done = ctrl_time(json_string_value(ctrl_path(j, "status.completionTime")));
		if (s == 1 && done > last_ok)
			last_ok = done;
	}
	if (json_array_size(active))
		json_object_set_new(st, "active", active);
	else {
		json_object_del(st, "active");
		json_decref(active);
	}
	if (last_ok) {
		char buf[40];
		kb_time_rfc3339(last_ok, buf, sizeof(buf));
		json_object_set_new(st, "lastSuccessfulTime", json_string(buf));
	}
}

/* The most recent schedule in (earliest, now], or 0; *next the one after now. */
static time_t most_recent(const char *sched, const char *tz, time_t earliest, time_t now,
			  time_t *next)
{
	time_t t = earliest, last = 0;
	*next = 0;
	for (int n = 0; n < 100000; n++) {
		time_t nt;
		if (ctrl_cron_next(sched, tz, t, &nt) < 0)
			return 0;
		if (nt > now) {
			*next = nt;
			break;
		}
		last = t = nt;
	}
	return last;
}

static int create_job(struct ctrl *c, const json_t *cj, time_t t)
{
	char name[300], ts[40];
	snprintf(name, sizeof(name), "%s-%lld", ctrl_name(cj), (long long)(t / 60));
	kb_time_rfc3339(t, ts, sizeof(ts));
	json_t *jt = ctrl_path(cj, "spec.jobTemplate");
	json_t *tm = json_object_get(jt, "metadata");
	json_t *job =
	    json_pack("{s:s,s:s,s:{s:s,s:s,s:[o]},s:O}", "apiVersion", "batch/v1", "kind", "Job",
		      "metadata", "name", name, "namespace", ctrl_ns(cj), "ownerReferences",
		      ctrl_new_owner_ref(cj, true), "spec", json_object_get(jt, "spec"));
	if (!job)
		return -EINVAL;
	json_t *m = json_object_get(job, "metadata");
	json_t *labels = json_object_get(tm, "labels");
	if (json_is_object(labels))
		json_object_set_new(m, "labels", json_deep_copy(labels));
	json_t *anns = json_deep_copy(json_object_get(tm, "annotations"));
	if (!json_is_object(anns)) {
		json_decref(anns);
		anns = json_object();
	}
	json_object_set_new(anns, "batch.kubernetes.io/cronjob-scheduled-timestamp",
			    json_string(ts));
	json_object_set_new(m, "annotations", anns);
	json_t *copy = json_deep_copy(job);
	json_decref(job);
	int rc = proxy_object_create_admitted(c->px, "batch", "v1", "jobs", copy, CJ_MANAGER,
					      ctrl_admitted, c, NULL);
	json_decref(copy);
	if (rc == -EINPROGRESS) /* in its webhooks: ctrl_admitted */
		return rc;
	if (rc == 0)
		ctrl_event(c, cj, "batch/v1", "CronJob", "Normal", "SuccessfulCreate", CJ_MANAGER,
			   "Created job %s", name);
	else if (rc != -EEXIST)
		ctrl_event(c, cj, "batch/v1", "CronJob", "Warning", "FailedCreate", CJ_MANAGER,
			   "Error creating job: %s", strerror(-rc));
	return rc == -EEXIST ? 0 : rc;
}

static bool job_exists(const json_t *jobs, const json_t *cj, time_t t)
{
	char name[300];
	snprintf(name, sizeof(name), "%s-%lld", ctrl_name(cj), (long long)(t / 60));
	size_t i;
	json_t *j;
	json_array_foreach (jobs, i, j)
		if (strcmp(ctrl_name(j), name) == 0)
			return true;
	return false;
}

/* Starts the run at t if the policies allow; true when lastScheduleTime moves. */
static bool run(struct ctrl *c, const json_t *cj, json_t *jobs, time_t t, int *rc)
{
	const char *policy = json_string_value(ctrl_path(cj, "spec.concurrencyPolicy"));
	json_t *sds = ctrl_path(cj, "spec.startingDeadlineSeconds");
	if (json_is_integer(sds) && t + json_integer_value(sds) < time(NULL))
		return true; /* missed its deadline: skipped */
	if (job_exists(jobs, cj, t))
		return true;
	bool busy = false;
	size_t i;
	json_t *j;
	json_array_foreach (jobs, i, j)
		if (job_state(j) == 0 && !ctrl_path(j, "metadata.deletionTimestamp"))
			busy = true;
	if (busy && policy && strcmp(policy, "Forbid") == 0)
		return false;
	if (busy && policy && strcmp(policy, "Replace") == 0)
		json_array_foreach (jobs, i, j)
			if (job_state(j) == 0)
				proxy_object_delete(c->px, "batch", "v1", "jobs", ctrl_ns(j),
						    ctrl_name(j), ctrl_uid(j), "Background",
						    CJ_MANAGER);
	*rc = create_job(c, cj, t);
	if (*rc == -EINPROGRESS) { /* the schedule moves once the Job exists */
		*rc = 0;
		return false;
	}
	return *rc == 0;
}

int ctrl_cj_sync(struct ctrl *c, const char *ns, const char *name)
{
	json_t *cj = ctrl_get(c, "batch/cronjobs", ns, name);
	if (!cj || ctrl_path(cj, "metadata.deletionTimestamp")) {
		json_decref(cj);
		return 0;
	}
	json_t *jobs = children(c, cj);
	json_t *st = json_deep_copy(json_object_get(cj, "status"));
	if (!json_is_object(st)) {
		json_decref(st);
		st = json_object();
	}
	int rc = 0;
	const char *sched = json_string_value(ctrl_path(cj, "spec.schedule"));
	const char *tz = json_string_value(ctrl_path(cj, "spec.timeZone"));
	time_t now = time(NULL), next = 0;
	if (!json_is_true(ctrl_path(cj, "spec.suspend")) && sched) {
		time_t earliest =
		    ctrl_time(json_string_value(json_object_get(st, "lastScheduleTime")));
		if (!earliest)
			earliest = ctrl_time(
			    json_string_value(ctrl_path(cj, "metadata.creationTimestamp")));
		json_t *sds = ctrl_path(cj, "spec.startingDeadlineSeconds");
		if (json_is_integer(sds) && earliest < now - json_integer_value(sds))
			earliest = now - json_integer_value(sds);
		time_t first;
		if (ctrl_cron_next(sched, tz, earliest, &first) == -ERANGE)
			/* kube's syncCronJob: a schedule that never fires
			 * ("59 23 31 2 *": robfig/cron's Next gives the zero
			 * time) fails mostRecentScheduleTime's check */
			ctrl_event(c, cj, "batch/v1", "CronJob", "Warning", "InvalidSchedule",
				   CJ_MANAGER,
				   "invalid schedule: %s : time difference between two schedules "
				   "is less than 1 second",
				   sched);
		time_t t = most_recent(sched, tz, earliest, now, &next);
		if (t && run(c, cj, jobs, t, &rc)) {
			char buf[40];
			kb_time_rfc3339(t, buf, sizeof(buf));
			json_object_set_new(st, "lastScheduleTime", json_string(buf));
			json_decref(jobs);
			jobs = children(c, cj);
		}
		if (next)
			ctrl_enqueue_after(c, "cj", ns, name, (double)(next - now) + 0.2);
	}
	fill_status(st, jobs);
	trim_history(c, jobs, 1, ctrl_int(cj, "spec.successfulJobsHistoryLimit", 3));
	trim_history(c, jobs, 2, ctrl_int(cj, "spec.failedJobsHistoryLimit", 1));
	int wrc = ctrl_write_status(c, "batch", "v1", "cronjobs", cj, st, CJ_MANAGER);
	json_decref(st);
	json_decref(jobs);
	json_decref(cj);
	if (rc == -EINVAL || rc == -EPERM)
		rc = 0;
	return rc < 0 ? rc : wrc;
}
