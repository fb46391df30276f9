/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loading a policy (YAML through libyaml into JSON, then the fields of
 * policies/README.md, unknown fields refused), admission of a pod or pod
 * template against it, and the forced node selector and tolerations.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/pki.h"
#include "policies/policies_impl.h"

#ifndef KB_POLICY_DIRS
#define KB_POLICY_DIRS ""
#endif

void policy_msg_add(char *msg, size_t len, const char *fmt, ...)
{
	size_t off = strlen(msg);
	if (off + 3 >= len)
		return;
	if (off) {
		memcpy(msg + off, ", ", 3);
		off += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg + off, len - off, fmt, ap);
	va_end(ap);
}

static json_t *yaml_to_json(const char *text, size_t len, char *err, size_t errlen)
{
	json_t *out = kb_yaml_load(text, len, err, errlen);
	if (out && !json_is_object(out)) {
		snprintf(err, errlen, "a policy is a YAML mapping");
		json_decref(out);
		out = NULL;
	}
	return out;
}

/* ---- the fields ---- */

static int bad(char *err, size_t errlen, const char *field, const char *why)
{
	snprintf(err, errlen, "%s: %s", field, why);
	return -EINVAL;
}

static int parse_gpu(policy_t *p, json_t *g, char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	json_object_foreach (g, k, v) {
		const char *s = json_string_value(v);
		if (strcmp(k, "mode") == 0 && s && strcmp(s, "whole") == 0)
			p->gpu_mode = POLICY_GPU_WHOLE;
		else if (strcmp(k, "mode") == 0 && s && strcmp(s, "fractional") == 0)
			p->gpu_mode = POLICY_GPU_FRACTIONAL;
		else if (strcmp(k, "mode") == 0 && s && strcmp(s, "mig") == 0)
			p->gpu_mode = POLICY_GPU_MIG;
		else if (strcmp(k, "mode") == 0)
			return bad(err, errlen, "gpu.mode", "must be whole, fractional or mig");
		else if (strcmp(k, "migProfiles") == 0 && json_is_array(v))
			p->mig_profiles = json_incref(v);
		else if (strcmp(k, "gpuMemoryMiB") == 0 && s && atoll(s) > 0)
			p->gpu_memory_mib = atoll(s);
		else
			return bad(err, errlen, "gpu", "unknown or malformed field");
	}
	if (p->gpu_mode == POLICY_GPU_MIG && json_array_size(p->mig_profiles) == 0)
		return bad(err, errlen, "gpu.migProfiles", "mode mig needs at least one profile");
	return 0;
}

static int parse_quota(policy_t *p, json_t *q, char *err, size_t errlen)
{
	static const char *const names[] = {"gpu", "cpu", "memory", "pods"};
	const char *k;
	json_t *v;
	json_object_foreach (q, k, v) {
		int i = 0;
		while (i < 4 && strcmp(k, names[i]) != 0)
			i++;
		int64_t m;
		if (i == 4 || policy_quantity_milli(json_string_value(v), &m) < 0)
			return bad(err, errlen, "quota", "unknown key or bad quantity");
		p->has_quota[i] = true;
		if (i == 0)
			p->quota.gpu_milli = m;
		else if (i == 1)
			p->quota.cpu_milli = m;
		else if (i == 2)
			p->quota.memory = m / 1000;
		else
			p->quota.pods = m / 1000;
	}
	return 0;
}

/* extendedResources: each extended resource (outside the GPU forms of
 * gpu.mode) pods may ask for, with the GPUs one unit counts as ("0" for a
 * device that is no GPU). Stored as thousandths. */
static int parse_extended(policy_t *p, json_t *e, char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	json_t *out = json_object();
	if (!out)
		return -ENOMEM;
	json_object_foreach (e, k, v) {
		int64_t m;
		if (!strchr(k, '/') || strstr(k, "kubernetes.io/") ||
		    policy_quantity_milli(json_string_value(v), &m) < 0 || m > 1000000) {
			json_decref(out);
			return bad(err, errlen, "extendedResources",
				   "a map of extended resource names (domain/name) to the GPUs "
				   "one unit counts as (0 to 1000)");
		}
		json_object_set_new(out, k, json_integer(m));
	}
	p->extended = out;
	return 0;
}

/* tolerationSeconds is an integer in a pod. */
static int parse_tolerations(policy_t *p, json_t *t, char *err, size_t errlen)
{
	size_t i;
	json_t *v;
	json_array_foreach (t, i, v) {
		if (!json_is_object(v))
			return bad(err, errlen, "tolerations", "each toleration is a mapping");
		const char *secs = json_string_value(json_object_get(v, "tolerationSeconds"));
		if (secs)
			json_object_set_new(v, "tolerationSeconds", json_integer(atoll(secs)));
	}
	p->tolerations = json_incref(t);
	return 0;
}

/* A list of names (priorityClasses, nodeLabels, runtimeClasses, nodePools,
 * volumeTypes, csiDrivers); "*" stands for any. */
static int parse_names(json_t **out, const char *field, json_t *v, char *err, size_t errlen)
{
	size_t i;
	json_t *x;
	if (!json_is_array(v))
		return bad(err, errlen, field, "a list of names");
	json_array_foreach (v, i, x)
		if (!json_string_value(x) || !*json_string_value(x))
			return bad(err, errlen, field, "a list of names");
	json_decref(*out);
	*out = json_incref(v);
	return 0;
}

/* volumeTypes: names of node-mounted volume types of the table
 * (volumes.c), or "*" for all of them; a type no policy can open, or one
 * this list does not govern, is refused with why (it would do nothing). */
static int parse_volume_types(policy_t *p, json_t *v, char *err, size_t errlen)
{
	int rc = parse_names(&p->volume_types, "volumeTypes", v, err, errlen);
	size_t i;
	json_t *x;
	json_array_foreach (rc < 0 ? NULL : v, i, x) {
		const char *t = json_string_value(x);
		const struct policy_volume_source *row = policy_volume_source(t);
		if (strcmp(t, "*") == 0 || (row && row->cls == POLICY_VOLUME_NODE))
			continue;
		if (row && row->cls == POLICY_VOLUME_NEVER)
			snprintf(err, errlen, "volumeTypes: %s: no policy can allow it: %s", t,
				 row->why);
		else if (row)
			snprintf(
			    err, errlen, "volumeTypes: %s: not a node-mounted volume type (%s)", t,
			    row->cls == POLICY_VOLUME_CSI        ? "csiDrivers governs csi"
			    : row->cls == POLICY_VOLUME_HOSTPATH ? "hostFields governs hostPath"
								 : "always allowed");
		else
			snprintf(err, errlen,
				 "volumeTypes: %s: not a volume type of Kubernetes 1.33", t);
		return -EINVAL;
	}
	return rc;
}

static int parse_pss(policy_t *p, const char *s, char *err, size_t errlen)
{
	if (s && strcmp(s, "privileged") == 0)
		p->pss = POLICY_PSS_PRIVILEGED;
	else if (s && strcmp(s, "baseline") == 0)
		p->pss = POLICY_PSS_BASELINE;
	else if (s && strcmp(s, "restricted") == 0)
		p->pss = POLICY_PSS_RESTRICTED;
	else
		return bad(err, errlen, "podSecurity",
			   "must be privileged, baseline or restricted");
	return 0;
}

static int parse_field(policy_t *p, const char *k, json_t *v, char *err, size_t errlen)
{
	const char *s = json_string_value(v);
	if (strcmp(k, "name") == 0 && s)
		snprintf(p->name, sizeof(p->name), "%s", s);
	else if (strcmp(k, "description") == 0)
		return 0;
	else if (strcmp(k, "gpu") == 0 && json_is_object(v))
		return parse_gpu(p, v, err, errlen);
	else if (strcmp(k, "podSecurity") == 0)
		return parse_pss(p, s, err, errlen);
	else if (strcmp(k, "hostFields") == 0 && s &&
		 (strcmp(s, "allow") == 0 || strcmp(s, "deny") == 0))
		p->host_fields = strcmp(s, "allow") == 0;
	else if (strcmp(k, "topologyHints") == 0 && s &&
		 (strcmp(s, "allow") == 0 || strcmp(s, "deny") == 0))
		p->topology_hints = strcmp(s, "allow") == 0;
	else if (strcmp(k, "quota") == 0 && json_is_object(v))
		return parse_quota(p, v, err, errlen);
	else if (strcmp(k, "nodeSelector") == 0 && json_is_object(v))
		p->node_selector = json_incref(v);
	else if (strcmp(k, "tolerations") == 0 && json_is_array(v))
		return parse_tolerations(p, v, err, errlen);
	else if (strcmp(k, "schedulers") == 0 && json_is_array(v))
		p->schedulers = json_incref(v);
	else if (strcmp(k, "extendedResources") == 0 && json_is_object(v))
		return parse_extended(p, v, err, errlen);
	else if (strcmp(k, "priorityClasses") == 0)
		return parse_names(&p->priority_classes, k, v, err, errlen);
	else if (strcmp(k, "nodeLabels") == 0)
		return parse_names(&p->node_labels, k, v, err, errlen);
	else if (strcmp(k, "runtimeClasses") == 0)
		return parse_names(&p->runtime_classes, k, v, err, errlen);
	else if (strcmp(k, "nodePools") == 0)
		return parse_names(&p->node_pools, k, v, err, errlen);
	else if (strcmp(k, "volumeTypes") == 0)
		return parse_volume_types(p, v, err, errlen);
	else if (strcmp(k, "csiDrivers") == 0)
		return parse_names(&p->csi_drivers, k, v, err, errlen);
	else if (strcmp(k, "imagePullPolicy") == 0 && s &&
		 (strcmp(s, "always") == 0 || strcmp(s, "any") == 0))
		p->image_pull_any = strcmp(s, "any") == 0;
	else if (strcmp(k, "imageRegistries") == 0)
		return parse_names(&p->image_registries, k, v, err, errlen);
	else if (strcmp(k, "nvidiaEnv") == 0 && s &&
		 (strcmp(s, "allow") == 0 || strcmp(s, "deny") == 0))
		p->nvidia_env = strcmp(s, "allow") == 0;
	else
		return bad(err, errlen, k, "unknown or malformed field");
	return 0;
}

int policy_parse(const char *yaml, size_t len, const char *name, policy_t **out, char *err,
		 size_t errlen)
{
	if (errlen)
		err[0] = '\0';
	json_t *doc = yaml_to_json(yaml, len, err, errlen);
	if (!doc)
		return err[0] ? -EINVAL : -ENOMEM;
	policy_t *p = calloc(1, sizeof(*p));
	int rc = -ENOMEM;
	if (!p)
		goto out;
	snprintf(p->name, sizeof(p->name), "%s", name ? name : "custom");
	const char *k;
	json_t *v;
	rc = 0;
	json_object_foreach (doc, k, v)
		if ((rc = parse_field(p, k, v, err, errlen)) < 0)
			break;
	if (rc < 0) {
		policy_free(p);
		p = NULL;
	}
out:
	json_decref(doc);
	*out = p;
	return rc;
}

void policy_free(policy_t *p)
{
	if (!p)
		return;
	json_decref(p->mig_profiles);
	json_decref(p->node_selector);
	json_decref(p->tolerations);
	json_decref(p->schedulers);
	json_decref(p->extended);
	json_decref(p->priority_classes);
	json_decref(p->node_labels);
	json_decref(p->runtime_classes);
	json_decref(p->node_pools);
	json_decref(p->volume_types);
	json_decref(p->image_registries);
	json_decref(p->csi_drivers);
	free(p);
}

const char *policy_name(const policy_t *p)
{
	return p->name;
}

bool policy_ref_is_file(const char *ref)
{
	size_t n = strlen(ref);
	return strchr(ref, '/') || (n > 5 && strcmp(ref + n - 5, ".yaml") == 0) ||
	       (n > 4 && strcmp(ref + n - 4, ".yml") == 0);
}

/* Reads DIR/ref.yaml from the first folder of the search path that has it. */
static int read_shipped(const char *ref, char **text, size_t *len)
{
	const char *env = getenv("KUBICLE_POLICY_DIR");
	char dirs[4096], path[4096];
	snprintf(dirs, sizeof(dirs), "%s:%s", env ? env : "", KB_POLICY_DIRS);
	for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		snprintf(path, sizeof(path), "%s/%s.yaml", d, ref);
		if (kb_read_file(path, text, len) == 0)
			return 0;
	}
	return -ENOENT;
}

int policy_load(const char *ref, policy_t **out, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	int rc = policy_ref_is_file(ref) ? kb_read_file(ref, &text, &len)
					 : read_shipped(ref, &text, &len);
	if (rc < 0) {
		snprintf(err, errlen, "policy %s: %s", ref, strerror(-rc));
		return rc;
	}
	rc = policy_parse(text, len, policy_ref_is_file(ref) ? "custom" : ref, out, err, errlen);
	free(text);
	return rc;
}

/* ---- admission ---- */

/* The pod metadata and spec of an object of `kind`; false for other kinds. */
static bool pod_parts(const char *kind, const json_t *obj, const json_t **meta, const json_t **spec)
{
	static const char *const templated[] = {
	    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController"};
	const json_t *t = NULL;
	if (strcmp(kind, "Pod") == 0)
		t = obj;
	else if (strcmp(kind, "PodTemplate") == 0)
		t = json_object_get(obj, "template");
	else if (strcmp(kind, "CronJob") == 0)
		t = kb_json_path(obj, "spec.jobTemplate.spec.template");
	for (size_t i = 0; !t && i < sizeof(templated) / sizeof(templated[0]); i++)
		if (strcmp(kind, templated[i]) == 0)
			t = kb_json_path(obj, "spec.template");
	if (!t)
		return false;
	*meta = json_object_get(t, "metadata");
	*spec = json_object_get(t, "spec");
	return json_is_object(*spec);
}

static void scheduler_check(const policy_t *p, const json_t *spec, char *msg, size_t len)
{
	if (!p->schedulers)
		return;
	const char *s = json_string_value(json_object_get(spec, "schedulerName"));
	if (!s || !*s)
		s = "default-scheduler";
	size_t i;
	json_t *v;
	json_array_foreach (p->schedulers, i, v)
		if (json_string_value(v) && strcmp(json_string_value(v), s) == 0)
			return;
	char list[512] = "";
	json_array_foreach (p->schedulers, i, v)
		policy_msg_add(list, sizeof(list), "%s",
			       json_string_value(v) ? json_string_value(v) : "");
	policy_msg_add(msg, len, "schedulerName \"%s\" is not allowed; allowed: %s", s, list);
}

/* Joins a group of violations into msg with "; ". */
static void join(char *msg, size_t len, const char *prefix, const char *part)
{
	if (!part[0])
		return;
	size_t off = strlen(msg);
	snprintf(msg + off, len - off, "%s%s%s", off ? "; " : "", prefix, part);
}

static const char *const pss_names[] = {"privileged", "baseline", "restricted"};

static bool unchanged(const json_t *meta, const json_t *spec, const json_t *ometa,
		      const json_t *ospec)
{
	return json_equal(spec, ospec) &&
	       kb_json_same(json_object_get(meta, "annotations"),
			    json_object_get(ometa, "annotations")) &&
	       kb_json_same(json_object_get(meta, "labels"), json_object_get(ometa, "labels"));
}

/* The policy's own rules, into body. */
static void policy_rules(const policy_t *p, const json_t *meta, const json_t *spec, char *body,
			 size_t len)
{
	char gpu[1024] = "", pss[2048] = "", host[1024] = "", sched[512] = "", pfx[64];
	policy_gpu_check(p, meta, spec, gpu, sizeof(gpu));
	policy_pss_check(p->pss, p->host_fields, meta, spec, pss, sizeof(pss));
	if (p->pss == POLICY_PSS_PRIVILEGED && !p->host_fields)
		policy_host_check(spec, host, sizeof(host));
	scheduler_check(p, spec, sched, sizeof(sched));
	snprintf(pfx, sizeof(pfx), "violates PodSecurity \"%s:latest\": ", pss_names[p->pss]);
	join(body, len, "", gpu);
	join(body, len, pfx, pss);
	join(body, len, "host-level fields are not allowed: ", host);
	join(body, len, "", sched);
}

/* The floor's Pod Security level, unless the policy's own check already
 * holds the pod to at least as much (its level, host fields denied). */
static void floor_pss(const policy_t *p, int floor, const json_t *meta, const json_t *spec,
		      char *out, size_t len)
{
	if (floor <= POLICY_PSS_PRIVILEGED || (p && (int)p->pss >= floor && !p->host_fields))
		return;
	char pss[2048] = "", pfx[64];
	enum policy_pss lvl =
	    floor >= POLICY_PSS_RESTRICTED ? POLICY_PSS_RESTRICTED : POLICY_PSS_BASELINE;
	policy_pss_check(lvl, false, meta, spec, pss, sizeof(pss));
	snprintf(pfx, sizeof(pfx), "violates PodSecurity \"%s:latest\": ", pss_names[lvl]);
	join(out, len, pfx, pss);
}

static int config_admit(const policy_t *p, const json_t *obj, const json_t *old, char *msg,
			size_t len)
{
	char body[2048] = "";
	if (!policy_config_check(p, obj, old, body, sizeof(body)))
		return 0;
	if (p)
		snprintf(msg, len, "policy %s: %s", p->name, body);
	else
		snprintf(msg, len, "host floor: %s", body);
	return -EACCES;
}

int policy_admit(const policy_t *p, int floor, const char *kind, const json_t *obj,
		 const json_t *old, char *msg, size_t len)
{
	const json_t *meta, *spec, *ometa = NULL, *ospec = NULL;
	if (!p && floor < 0)
		return 0;
	if (strcmp(kind, "ConfigMap") == 0 || strcmp(kind, "Secret") == 0)
		return config_admit(p, obj, old, msg, len);
	if (!pod_parts(kind, obj, &meta, &spec))
		return 0;
	if (old && pod_parts(kind, old, &ometa, &ospec) && unchanged(meta, spec, ometa, ospec))
		return 0;
	char fl[4096] = "", body[4096] = "", gov[2048] = "";
	floor_pss(p, floor, meta, spec, fl, sizeof(fl));
	if (p)
		policy_rules(p, meta, spec, body, sizeof(body));
	policy_govern_check(p, meta, spec, ospec, gov, sizeof(gov));
	join(p ? body : fl, p ? sizeof(body) : sizeof(fl), "", gov);
	if (!fl[0] && !body[0])
		return 0;
	msg[0] = '\0';
	if (fl[0])
		snprintf(msg, len, "host floor: %s", fl);
	if (body[0]) {
		size_t off = strlen(msg);
		snprintf(msg + off, len - off, "%spolicy %s: %s", off ? "; " : "", p->name, body);
	}
	return -EACCES;
}

/* ---- mutation ---- */

static bool has_toleration(const json_t *list, const json_t *t)
{
	size_t i;
	json_t *v;
	json_array_foreach (list, i, v)
		if (json_equal(v, t))
			return true;
	return false;
}

int policy_mutate_pod(const policy_t *p, json_t *pod)
{
	json_t *spec = json_object_get(pod, "spec");
	if (!p || !json_is_object(spec))
		return 0;
	if (p->node_selector && json_object_size(p->node_selector)) {
		json_t *ns = json_object_get(spec, "nodeSelector");
		if (!json_is_object(ns)) {
			ns = json_object();
			if (!ns || json_object_set_new(spec, "nodeSelector", ns) < 0)
				return -ENOMEM;
		}
		if (json_object_update(ns, p->node_selector) < 0)
			return -ENOMEM;
	}
	size_t i;
	json_t *t;
	json_array_foreach (p->tolerations, i, t) {
		json_t *list = json_object_get(spec, "tolerations");
		if (!json_is_array(list)) {
			list = json_array();
			if (!list || json_object_set_new(spec, "tolerations", list) < 0)
				return -ENOMEM;
		}
		if (!has_toleration(list, t) && json_array_append_new(list, json_deep_copy(t)) < 0)
			return -ENOMEM;
	}
	return 0;
}

bool policy_topology_hints(const policy_t *p)
{
	return p && p->topology_hints;
}

int64_t policy_gpu_quota_milli(const policy_t *p)
{
	return p && p->has_quota[0] ? p->quota.gpu_milli : -1;
}
