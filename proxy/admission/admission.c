/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admission in the API front, for writes by API requests (write_validate) and
 * by in-process controllers (api_internal.c), after validation and before
 * anything is stored. In kube-apiserver's order:
 *
 *   1. LimitRange (limitrange.c): container defaults on new pods, then
 *      min/max/ratio for pods and PVCs;
 *   2. Pod Security admission by the namespace's pod-security.kubernetes.io
 *      labels: enforce refuses pods, warn (and enforce, for pod templates of
 *      workloads) adds "Warning:" headers; invalid label values are refused
 *      on namespaces (422);
 *   3. Priority: a new pod's priority and preemption policy from its
 *      PriorityClass (or the global default one), an unknown class refused;
 *      one global default class;
 *   4. the host floor and the tenant's policy (policies/): pods and pod
 *      templates against the floor (proxy_set_floor: on every server that
 *      syncs to a host, with or without a policy; host priority classes
 *      are checked in step 3, where the class is known) and the policy's
 *      GPU, Pod Security and host rules, its tenant-wide quota (from the
 *      stored pods that have not terminated; an update of a pod is held
 *      to it for what it asks beyond what it held), then its node
 *      selector and tolerations forced onto new pods. The policy is never weakened by a
 *      namespace label: both are checked and the stricter refuses;
 *   5. ResourceQuota (quota.c) last: every quota of the namespace.
 *
 * Before them, for every tenant: KAI's GPU annotations of a pod
 * (gpu-fraction, gpu-memory, gpu-fraction-num-devices) are immutable (422).
 *
 * A refusal is 403 Forbidden as kube words it, e.g. `pods "train" is
 * forbidden: policy untrusted: gpu-fraction is not allowed; request whole
 * nvidia.com/gpu` or `pods "p" is forbidden: exceeded quota: q1, requested:
 * pods=1, used: pods=2, limited: pods=2`.
 *
 * One 1 s timer runs when the store's revision moved: it keeps the policy
 * quota, shown to the tenant as the read-only ResourceQuota
 * kube-system/kubicle-policy, and recomputes status.used of the tenant's
 * ResourceQuotas (the quota controller's part: deletes, terminated pods).
 * It starts with the policy or at the first write; proxy_set_policy(NULL)
 * closes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "policies/policies.h"
#include "proxy/admission/admission.h"
#include "proxy/admission/limitrange.h"
#include "proxy/admission/quota.h"
#include "proxy/admission/vap.h"

#define QUOTA_NS   "kube-system"
#define QUOTA_NAME "kubicle-policy"
#define PSA_PREFIX "pod-security.kubernetes.io/"

/* A namespace's pod-security levels: -1 where unset or invalid. */
struct psa {
	int enforce, audit, warn;
	char enforce_v[32], audit_v[32], warn_v[32];
};

/* The levels of the namespace last asked about, with the stored text they
 * were read from: valid while the namespace's text is the same (revisions
 * alone could repeat after a rolled-back transaction). */
struct psa_cache {
	char *text; /* malloc'ed, or NULL */
	size_t len;
	struct psa p;
};

struct admission {
	uv_timer_t timer;
	struct proxy *px;
	int64_t seen_rev; /* store revision of the last refresh */
	struct psa_cache psa;
};

static bool is_core(const struct proxy_resource *res, const char *kind)
{
	return res->group[0] == '\0' && strcmp(res->kind, kind) == 0;
}

static bool is_policy_quota(const struct proxy_resource *res, const json_t *obj)
{
	const char *ns = obj_str(obj, "metadata.namespace");
	const char *name = obj_str(obj, "metadata.name");
	return is_core(res, "ResourceQuota") && ns && name && strcmp(ns, QUOTA_NS) == 0 &&
	       strcmp(name, QUOTA_NAME) == 0;
}

/* What the stored pods that have not terminated take. */
static int tenant_usage(struct proxy *px, struct policy_usage *u)
{
	const struct proxy_resource *pods = resource_find("", "v1", "pods");
	struct store_list_req lr = {.res = pods->store_key};
	struct store_list_result res = {0};
	int rc = store_list(px->store, &lr, &res);
	if (rc < 0)
		return rc;
	size_t i;
	json_t *pod;
	memset(u, 0, sizeof(*u));
	json_array_foreach (res.items, i, pod)
		policy_pod_usage(px->policy, pod, u);
	json_decref(res.items);
	free(res.next);
	return 0;
}

/* What an update adds to a pod's usage: new minus old, where it grew. */
static void usage_growth(struct policy_usage *req, const struct policy_usage *was)
{
	req->gpu_milli = req->gpu_milli > was->gpu_milli ? req->gpu_milli - was->gpu_milli : 0;
	req->cpu_milli = req->cpu_milli > was->cpu_milli ? req->cpu_milli - was->cpu_milli : 0;
	req->memory = req->memory > was->memory ? req->memory - was->memory : 0;
	req->pods = req->pods > was->pods ? req->pods - was->pods : 0;
}

/* The quota check of a pod: a new one takes what it asks; an update
 * (old, the stored pod) whatever it asks beyond what it held, so every
 * update is held to the quota as a create is. 0 or -EACCES with msg. */
static int check_quota(struct proxy *px, const json_t *pod, const json_t *old, char *msg,
		       size_t len)
{
	if (!policy_has_quota(px->policy))
		return 0;
	struct policy_usage used, req = {0}, was = {0};
	policy_pod_usage(px->policy, pod, &req);
	if (old) {
		policy_pod_usage(px->policy, old, &was);
		usage_growth(&req, &was);
		if (!req.gpu_milli && !req.cpu_milli && !req.memory && !req.pods)
			return 0;
	}
	int rc = tenant_usage(px, &used);
	if (rc < 0) {
		snprintf(msg, len, "policy %s: cannot count quota usage: %s",
			 policy_name(px->policy), strerror(-rc));
		return -EACCES;
	}
	return policy_check_quota(px->policy, &used, &req, msg, len);
}

/* The policy's decision: 0 (obj possibly mutated) or -EACCES with msg. */
static int admit_policy(struct proxy *px, const struct proxy_resource *res, json_t *obj,
			const json_t *old, char *msg, size_t len)
{
	static const char *const groups[] = {"", "apps", "batch"};
	bool builtin = false;
	if (!px->policy && px->floor == POLICY_FLOOR_NONE)
		return 0;
	for (size_t i = 0; i < KB_ARRAY_SIZE(groups); i++)
		builtin |= strcmp(res->group, groups[i]) == 0 && !res->crd;
	if (!builtin)
		return 0;
	int rc = policy_admit(px->policy, px->floor, res->kind, obj, old, msg, len);
	if (rc < 0 || !is_core(res, "Pod"))
		return rc;
	/* kube's AlwaysPullImages Admit, for every container kind
	 * (policies/images.c) */
	policy_mutate_images(px->policy, px->floor, obj, old);
	if (!px->policy)
		return rc;
	if ((rc = check_quota(px, obj, old, msg, len)) < 0 || old)
		return rc;
	return policy_mutate_pod(px->policy, obj) < 0 ? -ENOMEM : 0;
}

/* ---- what the host cannot change after a pod is created ---- */

/*
 * KAI reads its GPU-sharing annotations when it schedules and binds a pod;
 * the syncer would push a later change to the host pod, where KAI's
 * accounting (and the policy's count) would then differ from what the
 * pod holds. They are immutable in the tenant, for every tenant, as kube
 * words it (ValidateImmutableAnnotation in pkg/apis/core/validation):
 * metadata.annotations.gpu-fraction: Invalid value: "0.9": field is
 * immutable. Causes (a new array) or NULL.
 */
static json_t *gpu_immutable_causes(const json_t *obj, const json_t *old)
{
	static const char *const keys[] = {"gpu-fraction", "gpu-memory",
					   "gpu-fraction-num-devices"};
	const json_t *na = obj_get(obj, "metadata.annotations");
	const json_t *oa = obj_get(old, "metadata.annotations");
	json_t *causes = NULL;
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		const char *n = json_string_value(json_object_get(na, keys[i]));
		const char *o = json_string_value(json_object_get(oa, keys[i]));
		if ((!n && !o) || (n && o && strcmp(n, o) == 0))
			continue;
		char field[96], m[600];
		snprintf(field, sizeof(field), "metadata.annotations.%s", keys[i]);
		json_t *q = json_string(n ? n : "");
		char *qs = json_dumps(q, JSON_ENCODE_ANY);
		snprintf(m, sizeof(m), "Invalid value: %s: field is immutable", qs ? qs : "\"\"");
		free(qs);
		json_decref(q);
		if (!causes)
			causes = json_array();
		json_array_append_new(causes,
				      json_pack("{s:s,s:s,s:s}", "reason", "FieldValueInvalid",
						"message", m, "field", field));
	}
	return causes;
}

/* ---- Pod Security admission by namespace labels ---- */

static void psa_mode(const json_t *labels, const char *mode, int *level, char *ver, size_t vlen)
{
	char key[96];
	snprintf(key, sizeof(key), PSA_PREFIX "%s", mode);
	const char *l = json_string_value(json_object_get(labels, key));
	*level = l ? policy_pss_parse(l) : -1;
	*level = *level < 0 ? -1 : *level;
	snprintf(key, sizeof(key), PSA_PREFIX "%s-version", mode);
	const char *v = json_string_value(json_object_get(labels, key));
	snprintf(ver, vlen, "%s", v && *v ? v : "latest");
}

static void psa_parse(const char *text, size_t len, struct psa *p)
{
	json_t *nso = kb_json_loadb(text, len, 0, NULL);
	const json_t *labels = obj_get(nso, "metadata.labels");
	psa_mode(labels, "enforce", &p->enforce, p->enforce_v, sizeof(p->enforce_v));
	psa_mode(labels, "audit", &p->audit, p->audit_v, sizeof(p->audit_v));
	psa_mode(labels, "warn", &p->warn, p->warn_v, sizeof(p->warn_v));
	json_decref(nso);
}

/* The namespace's levels. Every pod write asks, mostly about the same
 * namespace: its stored text is read (no parse) and the labels parsed again
 * only when that text differs from the last one. */
static void psa_of(struct proxy *px, const char *ns, struct psa *p)
{
	const struct proxy_resource *nsr = resource_find("", "v1", "namespaces");
	struct psa_cache *c = px->admission ? &px->admission->psa : NULL;
	const char *text;
	size_t len;

	p->enforce = p->audit = p->warn = -1;
	p->enforce_v[0] = p->audit_v[0] = p->warn_v[0] = '\0';
	if (!ns || !nsr || store_get_raw(px->store, nsr->store_key, "", ns, &text, &len, NULL) < 0)
		return;
	if (c && c->text && c->len == len && memcmp(c->text, text, len) == 0) {
		*p = c->p;
		return;
	}
	psa_parse(text, len, p);
	if (!c)
		return;
	char *copy = malloc(len);
	if (copy) {
		memcpy(copy, text, len);
		free(c->text);
		c->text = copy;
		c->len = len;
		c->p = *p;
	}
}

/* The pod template of a workload kind, or the pod itself; NULL otherwise. */
static const json_t *pod_template(const struct proxy_resource *res, const json_t *obj)
{
	static const char *const templated[] = {
	    "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController"};
	if (res->crd ||
	    (res->group[0] && strcmp(res->group, "apps") != 0 && strcmp(res->group, "batch") != 0))
		return NULL;
	if (strcmp(res->kind, "Pod") == 0)
		return obj;
	if (strcmp(res->kind, "PodTemplate") == 0)
		return json_object_get(obj, "template");
	if (strcmp(res->kind, "CronJob") == 0)
		return obj_get(obj, "spec.jobTemplate.spec.template");
	for (size_t i = 0; i < KB_ARRAY_SIZE(templated); i++)
		if (strcmp(res->kind, templated[i]) == 0)
			return obj_get(obj, "spec.template");
	return NULL;
}

/* "<verb> PodSecurity "baseline:latest": ..." into out when t breaks the
 * level; true then. */
static bool psa_violates(int level, const char *ver, const json_t *t, const char *pfx, char *out,
			 size_t len)
{
	char why[3072] = "";
	if (level <= 0 || policy_pss_violations(level, json_object_get(t, "metadata"),
						json_object_get(t, "spec"), why, sizeof(why)) == 0)
		return false;
	snprintf(out, len, "%s PodSecurity \"%s:%s\": %s", pfx, policy_pss_name(level), ver, why);
	return true;
}

static void add_warning(json_t **warnings, const char *w)
{
	if (!warnings)
		return;
	if (!*warnings)
		*warnings = json_array();
	json_array_append_new(*warnings, json_string(w));
}

/* Pod Security's notes in r's audit event, as kube's EvaluatePod leaves
 * them: the enforce policy a pod was checked against, and what the audit
 * level would refuse (pods and pod templates). */
static void psa_audit(struct req *r, const struct psa *p, const json_t *t, bool pod)
{
	char v[4096];
	if (!r)
		return;
	if (pod) {
		bool privileged = p->enforce <= 0 && p->audit <= 0 && p->warn <= 0;
		snprintf(v, sizeof(v), "%s:%s", policy_pss_name(p->enforce > 0 ? p->enforce : 0),
			 privileged || !p->enforce_v[0] ? "latest" : p->enforce_v);
		audit_annotate(r, PSA_PREFIX "enforce-policy", v);
	}
	if (psa_violates(p->audit, p->audit_v, t, "would violate", v, sizeof(v)))
		audit_annotate(r, PSA_PREFIX "audit-violations", v);
}

/* Enforce (pods), audit and warn: 0, or -EACCES with msg. r (for the
 * audit event) and warnings may be NULL. */
static int admit_psa(struct proxy *px, struct req *r, const struct proxy_resource *res,
		     const json_t *obj, const json_t *old, json_t **warnings, char *msg, size_t len)
{
	const json_t *t = pod_template(res, obj), *ot = old ? pod_template(res, old) : NULL;
	if (!t || (ot && json_equal(json_object_get(t, "spec"), json_object_get(ot, "spec"))))
		return 0;
	struct psa p;
	psa_of(px, obj_str(obj, "metadata.namespace"), &p);
	bool pod = t == obj;
	psa_audit(r, &p, t, pod);
	if (p.enforce <= 0 && p.warn <= 0)
		return 0;
	char w[4096];
	if (pod && psa_violates(p.enforce, p.enforce_v, t, "violates", msg, len))
		return -EACCES;
	if (!pod && psa_violates(p.enforce, p.enforce_v, t, "would violate", w, sizeof(w)))
		add_warning(warnings, w);
	bool same = p.warn == p.enforce && strcmp(p.warn_v, p.enforce_v) == 0;
	if ((pod || !same) && psa_violates(p.warn, p.warn_v, t, "would violate", w, sizeof(w)))
		add_warning(warnings, w);
	return 0;
}

/* PSA's check of a namespace's own labels: causes (new array) or NULL. */
static json_t *psa_label_causes(const json_t *ns)
{
	static const char *const modes[] = {"enforce", "audit", "warn"};
	const json_t *labels = obj_get(ns, "metadata.labels");
	json_t *causes = NULL;
	char key[96], field[160], m[512];
	for (size_t i = 0; i < KB_ARRAY_SIZE(modes); i++)
		for (int ver = 0; ver < 2; ver++) {
			snprintf(key, sizeof(key), PSA_PREFIX "%s%s", modes[i],
				 ver ? "-version" : "");
			const char *v = json_string_value(json_object_get(labels, key));
			if (!v)
				continue;
			bool ok = ver ? strcmp(v, "latest") == 0 ||
					    (strncmp(v, "v1.", 3) == 0 && v[3] &&
					     strspn(v + 3, "0123456789") == strlen(v + 3) &&
					     (v[3] != '0' || !v[4]))
				      : policy_pss_parse(v) >= 0;
			if (ok)
				continue;
			snprintf(field, sizeof(field), "metadata.labels[%s]", key);
			snprintf(m, sizeof(m), "Invalid value: \"%s\": %s", v,
				 ver ? "must be \"latest\" or \"v1.x\""
				     : "must be one of privileged, baseline, restricted");
			if (!causes)
				causes = json_array();
			json_array_append_new(causes, json_pack("{s:s,s:s,s:s}", "reason",
								"FieldValueInvalid", "message", m,
								"field", field));
		}
	return causes;
}

/* "a (x), b (y (z))" -> "a, b": the check names of a violation list. */
static void reasons_only(const char *in, char *out, size_t len)
{
	size_t o = 0;
	int depth = 0;
	for (const char *p = in; *p && o + 1 < len; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth > 0)
			depth--;
		else if (depth == 0 && !(*p == ' ' && p[1] == '('))
			out[o++] = *p;
	}
	out[o] = '\0';
	/* one container after another repeats a check: keep the first */
	char *save = NULL, copy[1024];
	snprintf(copy, sizeof(copy), "%s", out);
	out[0] = '\0';
	json_t *seen = json_object();
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		t += *t == ' ';
		if (json_object_get(seen, t))
			continue;
		json_object_set_new(seen, t, json_true());
		size_t off = strlen(out);
		snprintf(out + off, len - off, "%s%s", off ? ", " : "", t);
	}
	json_decref(seen);
}

/* kube's warnings when a namespace's enforce level changes: the existing
 * pods that break the new level, "NAME: check, check". */
static void psa_existing_pods(struct proxy *px, const json_t *ns, const json_t *old,
			      json_t **warnings)
{
	struct psa now, before;
	const json_t *labels = obj_get(ns, "metadata.labels");
	psa_mode(labels, "enforce", &now.enforce, now.enforce_v, sizeof(now.enforce_v));
	psa_mode(obj_get(old, "metadata.labels"), "enforce", &before.enforce, before.enforce_v,
		 sizeof(before.enforce_v));
	json_t *pods = NULL, *pod;
	if (now.enforce <= 0 ||
	    (now.enforce == before.enforce && strcmp(now.enforce_v, before.enforce_v) == 0) ||
	    px->client->list(px, "", "v1", "pods", obj_str(ns, "metadata.name"), &pods) < 0)
		return;
	size_t i;
	bool first = true;
	json_array_foreach (pods, i, pod) {
		char why[3072] = "", names[1024], w[1400];
		if (policy_pss_violations(now.enforce, obj_get(pod, "metadata"),
					  obj_get(pod, "spec"), why, sizeof(why)) == 0)
			continue;
		if (first) {
			snprintf(w, sizeof(w),
				 "existing pods in namespace \"%s\" violate the new PodSecurity "
				 "enforce level \"%s:%s\"",
				 obj_str(ns, "metadata.name"), policy_pss_name(now.enforce),
				 now.enforce_v);
			add_warning(warnings, w);
			first = false;
		}
		reasons_only(why, names, sizeof(names));
		snprintf(w, sizeof(w), "%s: %s", obj_str(pod, "metadata.name"), names);
		add_warning(warnings, w);
	}
	json_decref(pods);
}

/* ---- Priority: a pod's priority from its PriorityClass ---- */

static bool is_priority_class(const struct proxy_resource *res)
{
	return strcmp(res->group, "scheduling.k8s.io") == 0 &&
	       strcmp(res->plural, "priorityclasses") == 0;
}

static const struct proxy_resource *pc_resource(void)
{
	return resource_find("scheduling.k8s.io", "v1", "priorityclasses");
}

int admission_start(struct proxy *px)
{
	int rc = cfg_cache_start(px, pc_resource(), &px->priority);
	if (rc == 0)
		rc = cfg_cache_start(px, resource_find("", "v1", "limitranges"), &px->limitranges);
	if (rc < 0)
		admission_stop(px);
	return rc;
}

void admission_stop(struct proxy *px)
{
	cfg_cache_stop(px->priority);
	cfg_cache_stop(px->limitranges);
	px->priority = px->limitranges = NULL;
}

/* Every PriorityClass (new reference; callers read it only). */
static json_t *priority_classes(struct proxy *px)
{
	return cfg_cache_items(px, px->priority, pc_resource());
}

/* Whether class pc is the syncer's copy of a host class (syncer/classes.c:
 * label kubicle.dev/host-class, or a system- class, which the host pod
 * keeps by name). */
static bool host_class(const json_t *pc)
{
	const char *n = obj_str(pc, "metadata.name");
	const char *v = json_string_value(
	    json_object_get(obj_get(pc, "metadata.labels"), "kubicle.dev/host-class"));
	return (n && strncmp(n, "system-", 7) == 0) || (v && strcmp(v, "true") == 0);
}

/* The global default class (the lowest value when several are), or NULL;
 * borrowed from pcs. */
static const json_t *default_class(const json_t *pcs)
{
	const json_t *best = NULL;
	size_t i;
	json_t *pc;
	json_array_foreach (pcs, i, pc)
		if (json_is_true(json_object_get(pc, "globalDefault")) &&
		    (!best || json_integer_value(json_object_get(pc, "value")) <
				  json_integer_value(json_object_get(best, "value"))))
			best = pc;
	return best;
}

/*
 * kube's Priority plugin. A new pod gets spec.priority and
 * spec.preemptionPolicy from its priorityClassName, or from the global
 * default class when it names none (which then becomes its class), or 0 and
 * PreemptLowerPriority without one; an unknown class, or a value the pod
 * brings that differs from the class's, is refused. A PriorityClass may be
 * the global default only when no other one is.
 */
static int admit_priority(struct proxy *px, const struct proxy_resource *res, json_t *obj,
			  const json_t *old, char *msg, size_t len)
{
	bool pod = is_core(res, "Pod");
	if (!pod && !is_priority_class(res))
		return 0;
	/* an update keeps them (handlers.c merge_by_sub, before validation) */
	if ((pod && old) || (!pod && !json_is_true(json_object_get(obj, "globalDefault"))))
		return 0;
	json_t *pcs = priority_classes(px);
	const json_t *dflt = default_class(pcs);
	int rc = 0;
	if (!pod) {
		const char *dn = obj_str(dflt, "metadata.name");
		if (dn && (!old || strcmp(dn, obj_str(obj, "metadata.name")) != 0)) {
			snprintf(msg, len,
				 "PriorityClass %s is already marked as default. Only one default "
				 "can exist",
				 dn);
			rc = -EACCES;
		}
		json_decref(pcs);
		return rc;
	}
	json_t *spec = kb_json_object_at(obj, "spec");
	const char *cn = json_string_value(json_object_get(spec, "priorityClassName"));
	const json_t *pc = NULL;
	if (cn && *cn) {
		size_t i;
		json_t *c;
		json_array_foreach (pcs, i, c)
			if (strcmp(obj_str(c, "metadata.name"), cn) == 0)
				pc = c;
		if (!pc) {
			snprintf(msg, len, "no PriorityClass with name %s was found", cn);
			json_decref(pcs);
			return -EACCES;
		}
		if (policy_check_priority_class(px->policy, px->floor, cn, host_class(pc), msg,
						len) < 0) {
			json_decref(pcs);
			return -EACCES;
		}
	} else if ((pc = dflt)) {
		json_object_set_new(spec, "priorityClassName",
				    json_string(obj_str(pc, "metadata.name")));
	}
	json_int_t value = pc ? json_integer_value(json_object_get(pc, "value")) : 0;
	const char *pp = pc ? obj_str(pc, "preemptionPolicy") : NULL;
	pp = pp ? pp : "PreemptLowerPriority";
	json_t *have = json_object_get(spec, "priority");
	const char *have_pp = json_string_value(json_object_get(spec, "preemptionPolicy"));
	if (have && (!json_is_integer(have) || json_integer_value(have) != value)) {
		snprintf(msg, len,
			 "the integer value of priority (%lld) must not be provided in pod spec; "
			 "priority admission controller computed %lld from the given PriorityClass "
			 "name",
			 (long long)json_integer_value(have), (long long)value);
		rc = -EACCES;
	} else if (have_pp && strcmp(have_pp, pp) != 0) {
		snprintf(msg, len,
			 "the string value of PreemptionPolicy (%s) must not be provided in pod "
			 "spec; priority admission controller computed %s from the given "
			 "PriorityClass name",
			 have_pp, pp);
		rc = -EACCES;
	} else {
		json_object_set_new(spec, "priority", json_integer(value));
		json_object_set_new(spec, "preemptionPolicy", json_string(pp));
	}
	json_decref(pcs);
	return rc;
}

/* ---- the whole chain ---- */

/* kube's order: LimitRange, Pod Security, the policy, ResourceQuota last.
 * 0 (obj possibly mutated), -EACCES with msg, or another -errno. */
static int admit(struct proxy *px, struct req *r, const struct proxy_resource *res, json_t *obj,
		 const json_t *old, bool dry_run, json_t **warnings, char *msg, size_t len)
{
	if (is_core(res, "ResourceQuota") &&
	    !(is_policy_quota(res, obj) &&
	      json_object_get(obj_get(obj, "metadata.labels"), "kubicle.dev/policy")))
		quota_prepare(px, obj, !old);
	int rc = limitrange_admit(px, res, obj, old, msg, len);
	if (rc == 0)
		rc = admit_psa(px, r, res, obj, old, warnings, msg, len);
	if (rc == 0)
		rc = admit_priority(px, res, obj, old, msg, len);
	if (rc == 0)
		rc = admit_policy(px, res, obj, old, msg, len);
	if (rc == 0 && r)
		rc = vap_admit(r, old ? "UPDATE" : "CREATE", obj, old);
	if (rc == 0)
		rc = quota_admit(px, res, obj, old, dry_run, msg, len);
	return rc;
}

void admission_denied(struct req *r, const char *name, const char *why)
{
	char qn[300], msg[4096];
	reply_resource_name(r->res, qn, sizeof(qn));
	snprintf(msg, sizeof(msg), "%s \"%s\" is forbidden: %s", qn, name ? name : "", why);
	json_t *d = json_object();
	if (name)
		json_object_set_new(d, "name", json_string(name));
	if (r->res->group[0])
		json_object_set_new(d, "group", json_string(r->res->group));
	json_object_set_new(d, "kind", json_string(r->res->plural));
	reply_status(r, 403, "Forbidden", msg, d);
}

static void start_timer(struct proxy *px);

int admission_check(struct req *r, json_t *obj, const json_t *old)
{
	struct proxy *px = r->px;
	char msg[4096] = "";
	start_timer(px);
	if (px->policy && is_policy_quota(r->res, obj)) {
		snprintf(msg, sizeof(msg), "policy %s: the policy quota is read-only",
			 policy_name(px->policy));
		admission_denied(r, obj_str(obj, "metadata.name"), msg);
		return -EACCES;
	}
	if (old && is_core(r->res, "Pod")) {
		json_t *causes = gpu_immutable_causes(obj, old);
		if (causes) {
			reply_invalid(r, "Pod", obj_str(obj, "metadata.name"), causes);
			return -EINVAL;
		}
	}
	if (is_core(r->res, "Namespace")) {
		json_t *causes = psa_label_causes(obj);
		if (causes) {
			reply_invalid(r, "Namespace", obj_str(obj, "metadata.name"), causes);
			return -EINVAL;
		}
		if (old)
			psa_existing_pods(px, obj, old, &r->warnings);
	}
	int rc = admit(px, r, r->res, obj, old, r->q.dry_run, &r->warnings, msg, sizeof(msg));
	if (rc == -EACCES)
		admission_denied(r, obj_str(obj, "metadata.name"), msg);
	else if (rc == -ECANCELED)
		rc = -EACCES; /* a ValidatingAdmissionPolicy denied it and answered */
	else if (rc < 0)
		reply_errno(r, rc, obj_str(obj, "metadata.name"));
	return rc;
}

int admission_internal(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		       const json_t *old, char *why, size_t wl)
{
	char msg[4096] = "";
	start_timer(px);
	int rc = admit(px, NULL, res, obj, old, false, NULL, msg, sizeof(msg));
	const char *name = obj_str(obj, "metadata.name") ? obj_str(obj, "metadata.name") : "";
	if (rc == -EACCES) {
		kb_warn("admission", "%s \"%s\" refused: %s", res->plural, name, msg);
		if (why) {
			char qn[300];
			reply_resource_name(res, qn, sizeof(qn));
			snprintf(why, wl, "%s \"%s\" is forbidden: %s", qn, name, msg);
		}
	}
	return rc;
}

/* ---- the kubicle-policy ResourceQuota ---- */

static json_t *quota_object(struct proxy *px, const struct policy_usage *u)
{
	json_t *hard = policy_quota_hard(px->policy);
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:O}, s:{s:O, s:o}}",
			      "apiVersion", "v1", "kind", "ResourceQuota", "metadata", "name",
			      QUOTA_NAME, "namespace", QUOTA_NS, "labels", "kubicle.dev/policy",
			      policy_name(px->policy), "spec", "hard", hard, "status", "hard", hard,
			      "used", policy_quota_used(px->policy, u));
	json_decref(hard);
	return o;
}

static void refresh_quota(struct proxy *px)
{
	struct policy_usage u;
	json_t *want = NULL, *have = NULL;
	if (tenant_usage(px, &u) < 0 || !(want = quota_object(px, &u)))
		goto out;
	int rc = px->client->get(px, "", "v1", "resourcequotas", QUOTA_NS, QUOTA_NAME, &have);
	if (rc == -ENOENT) {
		json_t *c = json_deep_copy(want);
		rc = c ? px->client->create(px, "", "v1", "resourcequotas", c, "kubicle-policy",
					    &have)
		       : -ENOMEM;
		json_decref(c);
	}
	if (rc < 0 || !have)
		goto out;
	if (!json_equal(json_object_get(have, "spec"), json_object_get(want, "spec"))) {
		json_object_set(have, "spec", json_object_get(want, "spec"));
		json_t *upd = NULL;
		if (px->client->update(px, "", "v1", "resourcequotas", have, "kubicle-policy",
				       &upd) < 0)
			goto out;
		json_decref(have);
		have = upd;
	}
	if (!json_equal(json_object_get(have, "status"), json_object_get(want, "status"))) {
		json_object_set(have, "status", json_object_get(want, "status"));
		px->client->update_status(px, "", "v1", "resourcequotas", have, "kubicle-policy",
					  NULL);
	}
out:
	json_decref(want);
	json_decref(have);
}

static void on_timer(uv_timer_t *t)
{
	struct admission *a = kb_container_of(t, struct admission, timer);
	kb_timer_start_aligned(t, on_timer, 1000); /* with the proxy's other 1 s timers */
	int64_t rev = store_rev(a->px->store);
	if (rev == a->seen_rev || a->px->stopping)
		return;
	if (a->px->policy && policy_has_quota(a->px->policy))
		refresh_quota(a->px);
	quota_refresh_all(a->px);
	a->seen_rev = store_rev(a->px->store);
}

static void on_closed(uv_handle_t *h)
{
	struct admission *a = kb_container_of((uv_timer_t *)h, struct admission, timer);
	free(a->psa.text);
	free(a);
}

static void start_timer(struct proxy *px)
{
	if (px->admission || px->stopping)
		return;
	struct admission *a = calloc(1, sizeof(*a));
	if (!a) {
		kb_err("admission", "no memory for the quota timer");
		return;
	}
	a->px = px;
	a->seen_rev = -1;
	uv_timer_init(px->loop, &a->timer);
	uv_timer_start(&a->timer, on_timer, 0, 0);
	px->admission = a;
}

void proxy_set_floor(proxy_t *px, int floor)
{
	px->floor = floor;
}

void proxy_set_policy(proxy_t *px, const policy_t *policy)
{
	if (px->admission) {
		uv_close((uv_handle_t *)&px->admission->timer, on_closed);
		px->admission = NULL;
	}
	px->policy = policy;
	if (policy)
		start_timer(px);
}
