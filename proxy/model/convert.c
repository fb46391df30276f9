/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Storage conversions of resource rows (the rows' to_storage and
 * from_storage, proxy/model/resource.h): events.k8s.io/v1 Events stored as
 * core/v1 Events, and autoscaling/v1 HorizontalPodAutoscalers stored as
 * autoscaling/v2.
 *
 * autoscaling/v1 HorizontalPodAutoscalers, stored as autoscaling/v2 as in
 * kube-apiserver (kubectl up to 1.30 autoscales through v1). v1 knows one
 * metric, the CPU utilization target; everything else travels in kube's
 * round-trip annotations, in kube's formats, so that a v1 client that
 * updates an autoscaler loses none of what a v2 client gave it:
 *
 *   autoscaling.alpha.kubernetes.io/metrics          the other metrics, as
 *                                                    v1's MetricSpec list
 *   autoscaling.alpha.kubernetes.io/current-metrics  status.currentMetrics
 *   autoscaling.alpha.kubernetes.io/behavior         spec.behavior, with Go's
 *                                                    field names (kube marshals
 *                                                    its internal type)
 *   autoscaling.alpha.kubernetes.io/conditions       status.conditions
 *
 * Reading v1 writes them; writing v1 takes them back into the fields and
 * drops them, as kube's conversion does (pkg/apis/autoscaling/v1).
 */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "lib/json.h"
#include "lib/util.h"
#include "proxy/model/convert.h"
#include "proxy/model/object.h"

#define A_METRICS    "autoscaling.alpha.kubernetes.io/metrics"
#define A_STATUSES   "autoscaling.alpha.kubernetes.io/current-metrics"
#define A_BEHAVIOR   "autoscaling.alpha.kubernetes.io/behavior"
#define A_CONDITIONS "autoscaling.alpha.kubernetes.io/conditions"

static void put(json_t *o, const char *key, json_t *v)
{
	if (v && !json_is_null(v))
		json_object_set(o, key, v);
}

/* ---- metrics: v2 <-> v1's MetricSpec / MetricStatus ------------------------------ */

/* v2 {metric: {name, selector}} into v1's metricName / `selector_key`. */
static void metric_id_to_v1(json_t *out, const json_t *m, const char *selector_key)
{
	put(out, "metricName", json_object_get(json_object_get(m, "metric"), "name"));
	put(out, selector_key, json_object_get(json_object_get(m, "metric"), "selector"));
}

static json_t *metric_id_to_v2(const json_t *in, const char *selector_key)
{
	json_t *id = json_object();
	put(id, "name", json_object_get(in, "metricName"));
	put(id, "selector", json_object_get(in, selector_key));
	return id;
}

static const char *const sources[] = {"object", "pods", "resource", "containerResource",
				      "external"};

/* One v2 MetricSpec (spec) or MetricStatus (!spec) as v1's. */
static json_t *metric_to_v1(const json_t *m, bool spec)
{
	json_t *out = json_object();
	put(out, "type", json_object_get(m, "type"));
	for (size_t i = 0; i < KB_ARRAY_SIZE(sources); i++) {
		const json_t *s = json_object_get(m, sources[i]);
		if (!s)
			continue;
		const json_t *t = json_object_get(s, spec ? "target" : "current");
		json_t *v = json_object();
		const char *pre = spec ? "target" : "current";
		char key[64];
		switch (sources[i][0]) {
		case 'o': /* object */
			put(v, "target", json_object_get(s, "describedObject"));
			metric_id_to_v1(v, s, "selector");
			snprintf(key, sizeof(key), "%sValue", pre);
			put(v, key, json_object_get(t, "value"));
			put(v, "averageValue", json_object_get(t, "averageValue"));
			break;
		case 'p': /* pods */
			metric_id_to_v1(v, s, "selector");
			snprintf(key, sizeof(key), "%sAverageValue", pre);
			put(v, key, json_object_get(t, "averageValue"));
			break;
		case 'e': /* external */
			metric_id_to_v1(v, s, "metricSelector");
			snprintf(key, sizeof(key), "%sValue", pre);
			put(v, key, json_object_get(t, "value"));
			snprintf(key, sizeof(key), "%sAverageValue", pre);
			put(v, key, json_object_get(t, "averageValue"));
			break;
		default: /* resource, containerResource */
			put(v, "name", json_object_get(s, "name"));
			put(v, "container", json_object_get(s, "container"));
			snprintf(key, sizeof(key), "%sAverageUtilization", pre);
			put(v, key, json_object_get(t, "averageUtilization"));
			snprintf(key, sizeof(key), "%sAverageValue", pre);
			put(v, key, json_object_get(t, "averageValue"));
		}
		json_object_set_new(out, sources[i], v);
	}
	return out;
}

/* A v2 target's type: AverageValue when it has one, else `otherwise`
 * (a status's `current` has no type). */
static void target_type(json_t *t, bool spec, const char *otherwise)
{
	if (spec)
		json_object_set_new(
		    t, "type",
		    json_string(json_object_get(t, "averageValue") ? "AverageValue" : otherwise));
}

/* One v1 MetricSpec (spec) or MetricStatus (!spec) as v2's. */
static json_t *metric_to_v2(const json_t *m, bool spec)
{
	json_t *out = json_object();
	put(out, "type", json_object_get(m, "type"));
	const char *pre = spec ? "target" : "current";
	char key[64];
	for (size_t i = 0; i < KB_ARRAY_SIZE(sources); i++) {
		const json_t *s = json_object_get(m, sources[i]);
		if (!s)
			continue;
		json_t *v = json_object(), *t = json_object();
		switch (sources[i][0]) {
		case 'o':
			put(v, "describedObject", json_object_get(s, "target"));
			json_object_set_new(v, "metric", metric_id_to_v2(s, "selector"));
			snprintf(key, sizeof(key), "%sValue", pre);
			put(t, "value", json_object_get(s, key));
			put(t, "averageValue", json_object_get(s, "averageValue"));
			target_type(t, spec, "Value");
			break;
		case 'p':
			json_object_set_new(v, "metric", metric_id_to_v2(s, "selector"));
			snprintf(key, sizeof(key), "%sAverageValue", pre);
			put(t, "averageValue", json_object_get(s, key));
			target_type(t, spec, "AverageValue");
			break;
		case 'e':
			json_object_set_new(v, "metric", metric_id_to_v2(s, "metricSelector"));
			snprintf(key, sizeof(key), "%sValue", pre);
			put(t, "value", json_object_get(s, key));
			snprintf(key, sizeof(key), "%sAverageValue", pre);
			put(t, "averageValue", json_object_get(s, key));
			target_type(t, spec, "Value");
			break;
		default:
			put(v, "name", json_object_get(s, "name"));
			put(v, "container", json_object_get(s, "container"));
			snprintf(key, sizeof(key), "%sAverageUtilization", pre);
			put(t, "averageUtilization", json_object_get(s, key));
			snprintf(key, sizeof(key), "%sAverageValue", pre);
			put(t, "averageValue", json_object_get(s, key));
			target_type(t, spec, "Utilization");
		}
		json_object_set_new(v, spec ? "target" : "current", t);
		json_object_set_new(out, sources[i], v);
	}
	return out;
}

/* The CPU utilization metric v1 carries in its own field. */
static bool cpu_utilization(const json_t *m, const char *target)
{
	const json_t *r = json_object_get(m, "resource");
	const char *type = json_string_value(json_object_get(m, "type"));
	const char *name = json_string_value(json_object_get(r, "name"));
	return type && strcmp(type, "Resource") == 0 && name && strcmp(name, "cpu") == 0 &&
	       json_is_integer(json_object_get(json_object_get(r, target), "averageUtilization"));
}

/* ---- behavior: v2 <-> kube's internal type marshalled without tags ---------------- */

/* Field names of HPAScalingRules and HPAScalingPolicy, v2 then Go. */
static const char *const rule_names[][2] = {
    {"stabilizationWindowSeconds", "StabilizationWindowSeconds"},
    {"selectPolicy", "SelectPolicy"},
    {"policies", "Policies"},
    {"tolerance", "Tolerance"},
};
static const char *const policy_names[][2] = {
    {"type", "Type"},
    {"value", "Value"},
    {"periodSeconds", "PeriodSeconds"},
};

/* A key of `o` equal to `name` ignoring case (encoding/json's matching). */
static json_t *get_ci(const json_t *o, const char *name)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)o, k, v)
		if (strcasecmp(k, name) == 0)
			return v;
	return NULL;
}

static json_t *rename_keys(const json_t *o, const char *const (*names)[2], size_t n, int to)
{
	json_t *out = json_object();
	for (size_t i = 0; i < n; i++) {
		json_t *v = to ? json_object_get(o, names[i][0]) : get_ci(o, names[i][1]);
		if (!v)
			continue;
		if (strcmp(names[i][0], "policies") == 0 && json_is_array(v)) {
			json_t *list = json_array();
			size_t j;
			json_t *p;
			json_array_foreach (v, j, p)
				json_array_append_new(list, rename_keys(p, policy_names, 3, to));
			json_object_set_new(out, names[i][to], list);
		} else if (to || !json_is_null(v)) {
			json_object_set(out, names[i][to], v);
		}
	}
	return out;
}

static json_t *behavior_convert(const json_t *b, int to)
{
	json_t *out = json_object();
	const char *const dirs[][2] = {{"scaleUp", "ScaleUp"}, {"scaleDown", "ScaleDown"}};
	for (size_t i = 0; i < 2; i++) {
		json_t *r = to ? json_object_get(b, dirs[i][0]) : get_ci(b, dirs[i][1]);
		if (json_is_object(r))
			json_object_set_new(out, dirs[i][to], rename_keys(r, rule_names, 4, to));
		else if (to)
			json_object_set_new(out, dirs[i][to], json_null());
	}
	return out;
}

/* ---- annotations -------------------------------------------------------------- */

static void annotate(json_t *obj, const char *key, json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT);
	json_decref(v);
	if (!text)
		return;
	json_t *a = kb_json_object_at(obj_meta(obj), "annotations");
	json_object_set_new(a, key, json_string(text));
	free(text);
}

/* Takes annotation `key` (removed) parsed as JSON, or NULL. */
static json_t *take_annotation(json_t *obj, const char *key)
{
	json_t *a = json_object_get(obj_meta(obj), "annotations");
	const char *text = json_string_value(json_object_get(a, key));
	json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
	json_object_del(a, key);
	if (a && json_object_size(a) == 0)
		json_object_del(obj_meta(obj), "annotations");
	return v;
}

/* ---- the two directions ------------------------------------------------------- */

void convert_hpa_v2_to_v1(const struct proxy_resource *res, json_t *obj)
{
	(void)res;
	json_object_set_new(obj, "apiVersion", json_string("autoscaling/v1"));
	json_t *spec = kb_json_object_at(obj, "spec"), *status = json_object_get(obj, "status");
	json_t *metrics = json_object_get(spec, "metrics"), *others = json_array();
	size_t i;
	json_t *m;
	json_array_foreach (metrics, i, m) {
		if (!cpu_utilization(m, "target"))
			json_array_append_new(others, metric_to_v1(m, true));
		else if (!json_object_get(spec, "targetCPUUtilizationPercentage")) /* the first */
			json_object_set(spec, "targetCPUUtilizationPercentage",
					obj_get(m, "resource.target.averageUtilization"));
	}
	if (json_array_size(others))
		annotate(obj, A_METRICS, others);
	else
		json_decref(others);
	if (json_is_object(json_object_get(spec, "behavior")))
		annotate(obj, A_BEHAVIOR, behavior_convert(json_object_get(spec, "behavior"), 1));
	json_object_del(spec, "metrics");
	json_object_del(spec, "behavior");
	if (!json_is_object(status))
		return;
	/* v1 always shows both counts */
	const char *counts[] = {"currentReplicas", "desiredReplicas"};
	for (size_t k = 0; k < KB_ARRAY_SIZE(counts); k++)
		if (!json_object_get(status, counts[k]))
			json_object_set_new(status, counts[k], json_integer(0));
	json_t *cur = json_object_get(status, "currentMetrics");
	if (json_array_size(cur)) {
		json_t *list = json_array();
		json_array_foreach (cur, i, m) {
			if (cpu_utilization(m, "current") &&
			    !json_object_get(status, "currentCPUUtilizationPercentage"))
				json_object_set(status, "currentCPUUtilizationPercentage",
						obj_get(m, "resource.current.averageUtilization"));
			json_array_append_new(list, metric_to_v1(m, false));
		}
		annotate(obj, A_STATUSES, list);
	}
	if (json_array_size(json_object_get(status, "conditions")))
		annotate(obj, A_CONDITIONS, json_incref(json_object_get(status, "conditions")));
	json_object_del(status, "currentMetrics");
	json_object_del(status, "conditions");
}

void convert_hpa_v1_to_v2(const struct proxy_resource *res, json_t *obj)
{
	(void)res;
	json_object_set_new(obj, "apiVersion", json_string("autoscaling/v2"));
	json_t *spec = kb_json_object_at(obj, "spec"), *status = json_object_get(obj, "status");
	json_t *metrics = json_array(), *others = take_annotation(obj, A_METRICS);
	size_t i;
	json_t *m;
	json_array_foreach (others, i, m)
		if (json_is_object(m))
			json_array_append_new(metrics, metric_to_v2(m, true));
	json_decref(others);
	/* v1's own target, last (kube appends it after the others) */
	json_t *cpu = json_object_get(spec, "targetCPUUtilizationPercentage");
	if (cpu)
		json_array_append_new(metrics, obj_hpa_cpu_metric(json_incref(cpu)));
	json_object_set_new(spec, "metrics", metrics);
	json_object_del(spec, "targetCPUUtilizationPercentage");
	json_t *b = take_annotation(obj, A_BEHAVIOR);
	if (json_is_object(b))
		json_object_set_new(spec, "behavior", behavior_convert(b, 0));
	json_decref(b);
	obj_hpa_defaults(obj); /* no metric at all: 80 % CPU, as v2 reads it */
	json_t *cur = take_annotation(obj, A_STATUSES), *conds = take_annotation(obj, A_CONDITIONS);
	if (!json_is_object(status)) {
		json_decref(cur);
		json_decref(conds);
		return;
	}
	json_t *pct = json_object_get(status, "currentCPUUtilizationPercentage");
	if (json_array_size(cur)) {
		json_t *list = json_array();
		json_array_foreach (cur, i, m)
			if (json_is_object(m))
				json_array_append_new(list, metric_to_v2(m, false));
		json_object_set_new(status, "currentMetrics", list);
	} else if (pct) {
		json_object_set_new(status, "currentMetrics",
				    json_pack("[{s:s,s:{s:s,s:{s:O}}}]", "type", "Resource",
					      "resource", "name", "cpu", "current",
					      "averageUtilization", pct));
	}
	json_object_del(status, "currentCPUUtilizationPercentage");
	if (json_is_array(conds))
		json_object_set(status, "conditions", conds);
	json_decref(cur);
	json_decref(conds);
}

/* ---- events.k8s.io/v1 Event <-> core/v1 Event ---------------------------- */

static const char *const event_fields[][2] = {
    /* core/v1, events.k8s.io/v1 */
    {"involvedObject", "regarding"},
    {"message", "note"},
    {"source", "deprecatedSource"},
    {"firstTimestamp", "deprecatedFirstTimestamp"},
    {"lastTimestamp", "deprecatedLastTimestamp"},
    {"count", "deprecatedCount"},
    {"reportingComponent", "reportingController"},
};

static void rename_fields(json_t *obj, int from, int to)
{
	for (size_t i = 0; i < sizeof(event_fields) / sizeof(event_fields[0]); i++) {
		json_t *v = json_object_get(obj, event_fields[i][from]);
		if (!v)
			continue;
		json_object_set(obj, event_fields[i][to], v);
		json_object_del(obj, event_fields[i][from]);
	}
}

void convert_event_to_core(const struct proxy_resource *res, json_t *obj)
{
	(void)res;
	rename_fields(obj, 1, 0);
	json_object_set_new(obj, "apiVersion", json_string("v1"));
	json_object_set_new(obj, "kind", json_string("Event"));
}

void convert_event_from_core(const struct proxy_resource *res, json_t *obj)
{
	(void)res;
	rename_fields(obj, 0, 1);
	json_object_set_new(obj, "apiVersion", json_string("events.k8s.io/v1"));
	json_object_set_new(obj, "kind", json_string("Event"));
}
