/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pure arithmetic of kube's HorizontalPodAutoscaler controller
 * (pkg/controller/podautoscaler): the replica calculator of Resource and
 * ContainerResource metrics (utilization of the pods' requests, or an
 * average value), with its grouping of pods into ready, unready, missing and
 * ignored ones, and the normalization of a proposal: min/max, the legacy
 * scale-up limit and downscale stabilization when spec.behavior is unset,
 * else behavior's stabilization windows and rate policies over the recent
 * scale events. No I/O: hpa.c feeds it figures and writes what it decides.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers.h"
#include "lib/json.h"
#include "lib/util.h"

/* kube's defaults: --horizontal-pod-autoscaler-cpu-initialization-period
 * and --horizontal-pod-autoscaler-initial-readiness-delay. */
#define CPU_INIT_PERIOD_S 300
#define READINESS_DELAY_S 30

static json_t *get(const json_t *o, const char *path)
{
	return kb_json_path(o, path);
}

static time_t rfc_time(const json_t *v)
{
	time_t t = 0;
	const char *s = json_string_value(v);
	if (!s || kb_time_parse(s, &t) < 0)
		return 0;
	return t;
}

static const json_t *ready_condition(const json_t *pod)
{
	size_t i;
	json_t *c;
	json_array_foreach (get(pod, "status.conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		if (t && strcmp(t, "Ready") == 0)
			return c;
	}
	return NULL;
}

/* kube's groupPods for one pod: being deleted or Failed is ignored,
 * Pending is unready, without a metric it is missing (a Succeeded one
 * too); for cpu, a pod within its initialization period counts only once
 * ready and measured for a whole window after becoming ready, and later
 * unless it never was. */
enum ctrl_hpa_group ctrl_hpa_group_pod(const json_t *pod, bool has_metric, time_t metric_ts,
				       long window_s, bool cpu, time_t now)
{
	const char *phase = json_string_value(get(pod, "status.phase"));
	if (get(pod, "metadata.deletionTimestamp") || (phase && strcmp(phase, "Failed") == 0))
		return HPA_POD_IGNORED;
	if (phase && strcmp(phase, "Pending") == 0)
		return HPA_POD_UNREADY;
	if (!has_metric)
		return HPA_POD_MISSING;
	if (!cpu)
		return HPA_POD_READY;
	const json_t *cond = ready_condition(pod);
	time_t start = rfc_time(get(pod, "status.startTime"));
	if (!cond || !start)
		return HPA_POD_UNREADY;
	const char *st = json_string_value(json_object_get(cond, "status"));
	bool is_false = st && strcmp(st, "False") == 0;
	time_t moved = rfc_time(json_object_get(cond, "lastTransitionTime"));
	bool unready;
	if (start + CPU_INIT_PERIOD_S > now)
		unready = is_false || metric_ts < moved + window_s;
	else
		unready = is_false && start + READINESS_DELAY_S > moved;
	return unready ? HPA_POD_UNREADY : HPA_POD_READY;
}

/* ---- the replica calculator ------------------------------------------------------ */

static bool within(double ratio, double tolerance)
{
	return fabs(1.0 - ratio) <= tolerance;
}

/* GetResourceUtilizationRatio over the pods counted (usage set). */
static int utilization(const struct ctrl_hpa_pod *pods, size_t n, const bool *counted,
		       const int64_t *usage, int target, double *ratio, int *util, int64_t *raw)
{
	int64_t used = 0, requested = 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (!counted[i])
			continue;
		used += usage[i];
		requested += pods[i].request;
		k++;
	}
	if (requested == 0)
		return -ENODATA;
	*util = (int)(used * 100 / requested);
	*ratio = (double)*util / (double)target;
	if (raw)
		*raw = used / (int64_t)k;
	return 0;
}

/* GetMetricUsageRatio: the average usage against the target. */
static double average(const bool *counted, const int64_t *usage, size_t n, int64_t target,
		      int64_t *avg)
{
	int64_t sum = 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (counted[i]) {
			sum += usage[i];
			k++;
		}
	}
	int64_t a = k ? sum / (int64_t)k : 0;
	if (avg)
		*avg = a;
	return (double)a / (double)target;
}

struct calc {
	const struct ctrl_hpa_pod *pods;
	size_t n;
	bool *counted;
	int64_t *usage;
	size_t ready, unready, missing, samples;
};

static int calc_init(struct calc *k, const struct ctrl_hpa_pod *pods, size_t n, char *err,
		     size_t errlen)
{
	memset(k, 0, sizeof(*k));
	k->pods = pods;
	k->n = n;
	if (n == 0) {
		snprintf(err, errlen,
			 "no pods returned by selector while calculating replica count");
		return -ENOENT;
	}
	k->counted = calloc(n, sizeof(*k->counted));
	k->usage = calloc(n, sizeof(*k->usage));
	if (!k->counted || !k->usage)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		switch (pods[i].group) {
		case HPA_POD_READY:
			k->ready++;
			k->samples++;
			k->counted[i] = true;
			k->usage[i] = pods[i].usage;
			break;
		case HPA_POD_UNREADY: k->unready++; break;
		case HPA_POD_MISSING: k->missing++; break;
		case HPA_POD_IGNORED: break;
		}
	}
	if (k->samples == 0) {
		snprintf(err, errlen,
			 "did not receive metrics for targeted pods (pods might be unready)");
		return -ENODATA;
	}
	return 0;
}

static void calc_free(struct calc *k)
{
	free(k->counted);
	free(k->usage);
}

/* Missing pods count as `down` on a scale-down and 0 on a scale-up; unready
 * ones as 0 on a scale-up. */
static void fill_in(struct calc *k, double ratio, const int64_t *down)
{
	for (size_t i = 0; i < k->n; i++) {
		enum ctrl_hpa_group g = k->pods[i].group;
		if (g == HPA_POD_MISSING && ratio != 1.0) {
			k->counted[i] = true;
			k->usage[i] = ratio < 1.0 ? down[i] : 0;
		} else if (g == HPA_POD_UNREADY && ratio > 1.0) {
			k->counted[i] = true;
			k->usage[i] = 0;
		}
	}
}

/* The end of both calculations: the new ratio over every sample, kept
 * within tolerance and never turning the direction of the change. */
static int settle(const struct calc *k, int current, double ratio, double new_ratio)
{
	if (within(new_ratio, HPA_TOLERANCE) || (ratio < 1.0 && new_ratio > 1.0) ||
	    (ratio > 1.0 && new_ratio < 1.0))
		return current;
	size_t counted = 0;
	for (size_t i = 0; i < k->n; i++)
		counted += k->counted[i];
	int r = (int)ceil(new_ratio * (double)counted);
	if ((new_ratio < 1.0 && r > current) || (new_ratio > 1.0 && r < current))
		return current;
	return r;
}

int ctrl_hpa_utilization_replicas(const struct ctrl_hpa_pod *pods, size_t n, int current,
				  int target, struct ctrl_hpa_result *out, char *err, size_t errlen)
{
	struct calc k;
	int rc = calc_init(&k, pods, n, err, errlen);
	if (rc < 0)
		goto out;
	double ratio;
	rc = utilization(pods, n, k.counted, k.usage, target, &ratio, &out->utilization, &out->raw);
	if (rc < 0) {
		snprintf(err, errlen, "no metrics returned matched known pods");
		goto out;
	}
	bool up_with_unready = k.unready > 0 && ratio > 1.0;
	if (!up_with_unready && k.missing == 0) {
		out->replicas =
		    within(ratio, HPA_TOLERANCE) ? current : (int)ceil(ratio * (double)k.ready);
		goto out;
	}
	int64_t *down = calloc(n, sizeof(*down));
	if (!down) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		down[i] = pods[i].request * (target > 100 ? target : 100) / 100;
	fill_in(&k, ratio, down);
	free(down);
	double new_ratio;
	int ignored_util;
	rc = utilization(pods, n, k.counted, k.usage, target, &new_ratio, &ignored_util, NULL);
	if (rc < 0) {
		snprintf(err, errlen, "no metrics returned matched known pods");
		goto out;
	}
	out->replicas = settle(&k, current, ratio, new_ratio);
out:
	calc_free(&k);
	return rc;
}

int ctrl_hpa_value_replicas(const struct ctrl_hpa_pod *pods, size_t n, int current, int64_t target,
			    struct ctrl_hpa_result *out, char *err, size_t errlen)
{
	struct calc k;
	int rc = calc_init(&k, pods, n, err, errlen);
	if (rc < 0)
		goto out;
	out->utilization = 0;
	double ratio = average(k.counted, k.usage, n, target, &out->raw);
	bool up_with_unready = k.unready > 0 && ratio > 1.0;
	if (!up_with_unready && k.missing == 0) {
		out->replicas =
		    within(ratio, HPA_TOLERANCE) ? current : (int)ceil(ratio * (double)k.ready);
		goto out;
	}
	int64_t *down = calloc(n, sizeof(*down));
	if (!down) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		down[i] = target;
	/* unlike the utilization path, kube counts missing pods as 0 at a ratio
	 * of exactly 1 too */
	fill_in(&k, ratio == 1.0 ? nextafter(1.0, 2.0) : ratio, down);
	free(down);
	out->replicas = settle(&k, current, ratio, average(k.counted, k.usage, n, target, NULL));
out:
	calc_free(&k);
	return rc;
}

/* ---- behavior --------------------------------------------------------------------- */

void ctrl_hpa_rules_parse(const json_t *rules, bool up, struct ctrl_hpa_rules *out)
{
	memset(out, 0, sizeof(*out));
	json_t *w = json_object_get(rules, "stabilizationWindowSeconds");
	out->window = json_is_integer(w) ? (int)json_integer_value(w) : up ? 0 : 300;
	const char *sel = json_string_value(json_object_get(rules, "selectPolicy"));
	out->select = !sel || strcmp(sel, "Max") == 0 ? HPA_SELECT_MAX
		      : strcmp(sel, "Min") == 0       ? HPA_SELECT_MIN
						      : HPA_SELECT_DISABLED;
	size_t i;
	json_t *p;
	json_array_foreach (json_object_get(rules, "policies"), i, p) {
		if (out->npolicies == KB_ARRAY_SIZE(out->policies))
			break;
		struct ctrl_hpa_policy *q = &out->policies[out->npolicies++];
		const char *t = json_string_value(json_object_get(p, "type"));
		q->percent = t && strcmp(t, "Percent") == 0;
		q->value = (int)json_integer_value(json_object_get(p, "value"));
		q->period = (int)json_integer_value(json_object_get(p, "periodSeconds"));
	}
}

static int imax(int a, int b)
{
	return a >= b ? a : b;
}

static int imin(int a, int b)
{
	return a <= b ? a : b;
}

static int recs_push(struct ctrl_hpa_history *h, int replicas, int64_t now_ms, int64_t old_cut)
{
	for (size_t i = 0; i < h->nrecs; i++) {
		if (h->recs[i].at_ms < old_cut) { /* reuse an obsolete sample */
			h->recs[i] = (struct ctrl_hpa_rec){replicas, now_ms};
			return 0;
		}
	}
	struct ctrl_hpa_rec *r = realloc(h->recs, (h->nrecs + 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	h->recs = r;
	h->recs[h->nrecs++] = (struct ctrl_hpa_rec){replicas, now_ms};
	return 0;
}

void ctrl_hpa_record_initial(struct ctrl_hpa_history *h, int current, int64_t now_ms)
{
	if (h->nrecs == 0)
		recs_push(h, current, now_ms, INT64_MIN);
}

/* stabilizeRecommendation (no behavior): the highest recommendation of the
 * window, this one included; the oldest-than-window sample is replaced. */
static int stabilize_legacy(struct ctrl_hpa_history *h, int desired, int64_t now_ms)
{
	int64_t cut = now_ms - (int64_t)HPA_DOWNSCALE_WINDOW_S * 1000;
	int best = desired;
	size_t old = SIZE_MAX;
	for (size_t i = 0; i < h->nrecs; i++) {
		if (h->recs[i].at_ms < cut)
			old = i;
		else if (h->recs[i].replicas > best)
			best = h->recs[i].replicas;
	}
	if (old != SIZE_MAX)
		h->recs[old] = (struct ctrl_hpa_rec){desired, now_ms};
	else
		recs_push(h, desired, now_ms, INT64_MIN);
	return best;
}

static void verdict_able(struct ctrl_hpa_verdict *v, const char *reason, const char *msg)
{
	v->able_reason = reason;
	v->able_message = msg;
}

static void verdict_limit(struct ctrl_hpa_verdict *v, bool limited, const char *reason,
			  const char *msg)
{
	v->limited = limited;
	v->limit_reason = reason;
	v->limit_message = msg;
}

static void normalize_legacy(struct ctrl_hpa_history *h, const struct ctrl_hpa_input *in,
			     int64_t now_ms, struct ctrl_hpa_verdict *v)
{
	int st = stabilize_legacy(h, in->desired, now_ms);
	if (st != in->desired)
		verdict_able(v, "ScaleDownStabilized",
			     "recent recommendations were higher than current one, applying the "
			     "highest recent recommendation");
	else
		verdict_able(v, "ReadyForNewScale", "recommended size matches current size");
	int up_limit = imax(2 * in->current, 4);
	int max_allowed = in->max;
	const char *reason = "TooManyReplicas",
		   *msg = "the desired replica count is more than the maximum replica count";
	if (in->max > up_limit) {
		max_allowed = up_limit;
		reason = "ScaleUpLimit";
		msg = "the desired replica count is increasing faster than the maximum scale rate";
	}
	int r = st;
	if (st < in->min) {
		r = in->min;
		reason = "TooFewReplicas";
		msg = "the desired replica count is less than the minimum replica count";
	} else if (st > max_allowed) {
		r = max_allowed;
	} else {
		reason = "DesiredWithinRange";
		msg = "the desired count is within the acceptable range";
	}
	v->replicas = r;
	verdict_limit(v, r != st, reason, msg);
}

/* stabilizeRecommendationWithBehaviors: the current size brought up to the
 * lowest recommendation of the scale-up window and down to the highest of
 * the scale-down window (this one included in both); a sample older than
 * both windows is replaced by this one. */
static int stabilize_behavior(struct ctrl_hpa_history *h, const struct ctrl_hpa_input *in,
			      int64_t now_ms, const char **reason, const char **msg)
{
	int64_t up_cut = now_ms - (int64_t)in->up.window * 1000;
	int64_t down_cut = now_ms - (int64_t)in->down.window * 1000;
	int up = in->desired, down = in->desired;
	for (size_t i = 0; i < h->nrecs; i++) {
		if (h->recs[i].at_ms > up_cut)
			up = imin(h->recs[i].replicas, up);
		if (h->recs[i].at_ms > down_cut)
			down = imax(h->recs[i].replicas, down);
	}
	recs_push(h, in->desired, now_ms, up_cut < down_cut ? up_cut : down_cut);
	int r = in->current;
	if (r < up)
		r = up;
	if (r > down)
		r = down;
	bool rising = in->desired >= in->current;
	*reason = rising ? "ScaleUpStabilized" : "ScaleDownStabilized";
	*msg = rising ? "recent recommendations were lower than current one, applying the lowest "
			"recent recommendation"
		      : "recent recommendations were higher than current one, applying the highest "
			"recent recommendation";
	return r;
}

/* getReplicasChangePerPeriod */
static int changed_within(const struct ctrl_hpa_event *ev, size_t n, int period, int64_t now_ms)
{
	int64_t cut = now_ms - (int64_t)period * 1000;
	int sum = 0;
	for (size_t i = 0; i < n; i++)
		if (ev[i].at_ms > cut)
			sum += ev[i].change;
	return sum;
}

/* The replicas at the start of a policy's period: the current count less
 * what was added in it, plus what was removed. */
static int period_start(int current, const struct ctrl_hpa_history *h, int period, int64_t now_ms)
{
	return current - changed_within(h->up, h->nup, period, now_ms) +
	       changed_within(h->down, h->ndown, period, now_ms);
}

int ctrl_hpa_scale_up_limit(int current, const struct ctrl_hpa_history *h,
			    const struct ctrl_hpa_rules *r, int64_t now_ms)
{
	if (r->select == HPA_SELECT_DISABLED)
		return current;
	int result = r->select == HPA_SELECT_MIN ? INT32_MAX : INT32_MIN;
	for (size_t i = 0; i < r->npolicies; i++) {
		const struct ctrl_hpa_policy *p = &r->policies[i];
		int start = period_start(current, h, p->period, now_ms);
		int proposed = p->percent ? (int)ceil((double)start * (1.0 + p->value / 100.0))
					  : start + p->value;
		result =
		    r->select == HPA_SELECT_MIN ? imin(result, proposed) : imax(result, proposed);
	}
	return result;
}

int ctrl_hpa_scale_down_limit(int current, const struct ctrl_hpa_history *h,
			      const struct ctrl_hpa_rules *r, int64_t now_ms)
{
	if (r->select == HPA_SELECT_DISABLED)
		return current;
	int result = r->select == HPA_SELECT_MIN ? INT32_MIN : INT32_MAX;
	for (size_t i = 0; i < r->npolicies; i++) {
		const struct ctrl_hpa_policy *p = &r->policies[i];
		int start = period_start(current, h, p->period, now_ms);
		int proposed =
		    p->percent ? (int)((double)start * (1.0 - p->value / 100.0)) : start - p->value;
		result =
		    r->select == HPA_SELECT_MIN ? imax(result, proposed) : imin(result, proposed);
	}
	return result;
}

/* convertDesiredReplicasWithBehaviorRate */
static int behavior_rate(const struct ctrl_hpa_history *h, const struct ctrl_hpa_input *in,
			 int desired, int64_t now_ms, const char **reason, const char **msg)
{
	*reason = "DesiredWithinRange";
	*msg = "the desired count is within the acceptable range";
	if (desired > in->current) {
		int limit = ctrl_hpa_scale_up_limit(in->current, h, &in->up, now_ms);
		limit = imax(limit, in->current);
		int allowed = in->max;
		const char *r = "TooManyReplicas",
			   *m = "the desired replica count is more than the maximum replica count";
		if (allowed > limit) {
			allowed = limit;
			r = "ScaleUpLimit";
			m = "the desired replica count is increasing faster than the maximum scale "
			    "rate";
		}
		if (desired > allowed) {
			*reason = r;
			*msg = m;
			return allowed;
		}
	} else if (desired < in->current) {
		int limit = ctrl_hpa_scale_down_limit(in->current, h, &in->down, now_ms);
		limit = imin(limit, in->current);
		int allowed = in->min;
		const char *r = "TooFewReplicas",
			   *m = "the desired replica count is less than the minimum replica count";
		if (allowed < limit) {
			allowed = limit;
			r = "ScaleDownLimit";
			m = "the desired replica count is decreasing faster than the maximum scale "
			    "rate";
		}
		if (desired < allowed) {
			*reason = r;
			*msg = m;
			return allowed;
		}
	}
	return desired;
}

static void normalize_behavior(struct ctrl_hpa_history *h, const struct ctrl_hpa_input *in,
			       int64_t now_ms, struct ctrl_hpa_verdict *v)
{
	const char *reason, *msg;
	int st = stabilize_behavior(h, in, now_ms, &reason, &msg);
	if (st != in->desired)
		verdict_able(v, reason, msg);
	else
		verdict_able(v, "ReadyForNewScale", "recommended size matches current size");
	struct ctrl_hpa_input moved = *in;
	moved.desired = st;
	v->replicas = behavior_rate(h, &moved, st, now_ms, &reason, &msg);
	verdict_limit(v, v->replicas != st, reason, msg);
}

void ctrl_hpa_normalize(struct ctrl_hpa_history *h, const struct ctrl_hpa_input *in, int64_t now_ms,
			struct ctrl_hpa_verdict *out)
{
	memset(out, 0, sizeof(*out));
	if (in->behavior)
		normalize_behavior(h, in, now_ms, out);
	else
		normalize_legacy(h, in, now_ms, out);
}

static int longest_period(const struct ctrl_hpa_rules *r)
{
	int p = 0;
	for (size_t i = 0; i < r->npolicies; i++)
		p = imax(p, r->policies[i].period);
	return p;
}

/* storeScaleEvent: an event older than the longest policy period of its
 * direction is replaced by the new one. */
static void events_push(struct ctrl_hpa_event **ev, size_t *n, int change, int period,
			int64_t now_ms)
{
	int64_t cut = now_ms - (int64_t)period * 1000;
	for (size_t i = 0; i < *n; i++) {
		if ((*ev)[i].at_ms < cut) {
			(*ev)[i] = (struct ctrl_hpa_event){change, now_ms};
			return;
		}
	}
	struct ctrl_hpa_event *e = realloc(*ev, (*n + 1) * sizeof(*e));
	if (!e)
		return;
	*ev = e;
	e[(*n)++] = (struct ctrl_hpa_event){change, now_ms};
}

void ctrl_hpa_record_scale(struct ctrl_hpa_history *h, const struct ctrl_hpa_input *in, int from,
			   int to, int64_t now_ms)
{
	if (!in->behavior)
		return; /* only behavior's policies read them */
	if (to > from)
		events_push(&h->up, &h->nup, to - from, longest_period(&in->up), now_ms);
	else
		events_push(&h->down, &h->ndown, from - to, longest_period(&in->down), now_ms);
}

void ctrl_hpa_history_free(struct ctrl_hpa_history *h)
{
	free(h->recs);
	free(h->up);
	free(h->down);
	memset(h, 0, sizeof(*h));
}
