/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gang scheduling across the tenant boundary: which tenant pods must be
 * placed together (their gang, from the pod's top owner and a per-kind
 * table), the host group object the profile's scheduler needs (KAI and
 * Volcano PodGroups), and the keys that put a host pod in it.
 *
 * Why the syncer does this itself: the host's group makers cannot. KAI's
 * pod-grouper and Volcano's PodGroup controller read a pod's owners on the
 * host, and host pods have none (the owners live in the tenant); a pod that
 * names a group that does not exist is never scheduled (KAI
 * cluster_info.go snapshotPodGroups, Volcano cache.go Snapshot), and Kueue's
 * webhook refuses a group name without its count (pod_webhook.go
 * validatePodGroupMetadata). So the gang is read here, in the tenant, where
 * the owners are, and its object made on the host before its pods.
 *
 * A gang exists only where all-or-nothing placement is asked for or implied
 * (minimum > 1): a pod of anything else carries no group key at all, and
 * the host's own grouper treats it as the single pod it is.
 *
 * Pure functions on JSON but syncer_gang_of, which reads the owners from
 * the tenant store (loop thread).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

#define GANG_MAX_MEMBERS 10000 /* a larger minimum is taken as this */
#define OWNER_DEPTH      8     /* owner links followed at most */
#define GANG_MAX_SUBS    16    /* more replica types: no subgroups */

/* ---- owners --------------------------------------------------------------------- */

/* The owner kinds the walk reads from the tenant store (their CRDs are
 * the tenant's own for the last five). */
static const struct owner_kind {
	const char *group, *kind, *res;
} owner_kinds[] = {
    {"", "Pod", "/pods"},
    {"batch", "Job", "batch/jobs"},
    {"apps", "StatefulSet", "apps/statefulsets"},
    {"apps", "ReplicaSet", "apps/replicasets"},
    {"apps", "Deployment", "apps/deployments"},
    {"jobset.x-k8s.io", "JobSet", "jobset.x-k8s.io/jobsets"},
    {"kubeflow.org", "PyTorchJob", "kubeflow.org/pytorchjobs"},
    {"kubeflow.org", "MPIJob", "kubeflow.org/mpijobs"},
    {"ray.io", "RayCluster", "ray.io/rayclusters"},
    {"leaderworkerset.x-k8s.io", "LeaderWorkerSet", "leaderworkerset.x-k8s.io/leaderworkersets"},
};

static const struct owner_kind *owner_kind_of(const json_t *ref)
{
	const char *av = jstr(ref, "apiVersion"), *kind = jstr(ref, "kind");
	if (!av || !kind)
		return NULL;
	const char *slash = strchr(av, '/');
	size_t glen = slash ? (size_t)(slash - av) : 0;
	for (size_t i = 0; i < KB_ARRAY_SIZE(owner_kinds); i++) {
		const struct owner_kind *k = &owner_kinds[i];
		if (strcmp(k->kind, kind) == 0 && strlen(k->group) == glen &&
		    strncmp(k->group, av, glen) == 0)
			return k;
	}
	return NULL;
}

/* The controller reference of obj (ownerReferences[controller=true]). */
static const json_t *controller_ref(const json_t *obj)
{
	size_t i;
	json_t *r;
	json_array_foreach (json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i,
			    r) {
		if (json_is_true(json_object_get(r, "controller")))
			return r;
	}
	return NULL;
}

/* ---- shapes --------------------------------------------------------------------- */

/* A non-negative integer at path of o, else dflt. */
static long num(const json_t *o, const char *path, long dflt)
{
	const json_t *v = kb_json_path(o, path);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return dflt;
	json_int_t n = json_integer_value(v);
	return n > GANG_MAX_MEMBERS ? GANG_MAX_MEMBERS : (long)n;
}

static long cap_add(long a, long b)
{
	return a + b > GANG_MAX_MEMBERS ? GANG_MAX_MEMBERS : a + b;
}

/* A subgroup name KAI can carry in a label value: [a-z0-9.-]{1,63}
 * starting and ending alphanumeric, lowercased; "" when s cannot be one. */
static void label_name(const char *s, char *out, size_t len)
{
	size_t n = s ? strlen(s) : 0;
	out[0] = '\0';
	if (n == 0 || n > 63 || n >= len)
		return;
	for (size_t i = 0; i < n; i++) {
		char c = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '.'))) {
			out[0] = '\0';
			return;
		}
		out[i] = c;
	}
	out[n] = '\0';
}

static json_t *shape(long min, long total)
{
	if (min <= 1)
		return NULL;
	return json_pack("{s:I,s:I}", "min", (json_int_t)min, "total", (json_int_t)total);
}

/* Job (KAI job_grouper.go: one group per pod, minMember 1, unless the
 * tenant asks). A gang when the Job says so with kai.scheduler/batch-min-member,
 * or when it is an Indexed Job whose completions equal its parallelism (the
 * shape of distributed training: N ranks, all needed). The count is fixed
 * when completions equal parallelism. */
static json_t *shape_job(const json_t *job)
{
	const json_t *spec = json_object_get(job, "spec");
	long par = num(spec, "parallelism", 1), comp = num(spec, "completions", -1);
	const char *mode = jstr(spec, "completionMode");
	bool fixed = comp == par;
	const char *asked = jstr(json_object_get(json_object_get(job, "metadata"), "annotations"),
				 "kai.scheduler/batch-min-member");
	if (asked) {
		char *end;
		long n = strtol(asked, &end, 10);
		if (*asked && !*end && n > 1)
			return shape(n > par ? par : n, fixed ? par : 0);
		return NULL;
	}
	if (mode && strcmp(mode, "Indexed") == 0 && fixed)
		return shape(par, par);
	return NULL;
}

/* Pods of one replicated job of a JobSet: replicas times parallelism (or
 * completions when fewer), as KAI's jobset_grouper.go
 * calculateReplicatedJobMinAvailable counts them. */
static long jobset_rj_pods(const json_t *rj)
{
	long replicas = num(rj, "replicas", 1), par = num(rj, "template.spec.parallelism", 1);
	long comp = num(rj, "template.spec.completions", 0);
	if (replicas == 0)
		replicas = 1;
	if (par == 0)
		par = 1;
	if (comp > 0 && comp < par)
		par = comp;
	long n = replicas * par;
	return n > GANG_MAX_MEMBERS ? GANG_MAX_MEMBERS : n;
}

/* JobSet: all its replicated jobs' pods in one group; with startupPolicy
 * InOrder, one group per replicated job (its pods' label
 * jobset.sigs.k8s.io/replicatedjob-name), since the later ones are created
 * only once the earlier run (KAI jobset_grouper.go GetPodGroupMetadata). */
static json_t *shape_jobset(const json_t *js, const json_t *pod)
{
	const json_t *rjs = kb_json_path(js, "spec.replicatedJobs");
	const char *order = jstr(kb_json_path(js, "spec.startupPolicy"), "startupPolicyOrder");
	size_t i;
	json_t *rj;
	if (order && strcmp(order, "InOrder") == 0) {
		const char *mine = jstr(json_object_get(json_object_get(pod, "metadata"), "labels"),
					"jobset.sigs.k8s.io/replicatedjob-name");
		char sfx[64];
		label_name(mine, sfx, sizeof(sfx));
		if (!sfx[0] || !(sfx[0] >= 'a' && sfx[0] <= 'z'))
			return NULL;
		json_array_foreach (rjs, i, rj) {
			const char *name = jstr(rj, "name");
			if (name && strcmp(name, mine) == 0) {
				long n = jobset_rj_pods(rj);
				json_t *g = shape(n, n);
				if (g)
					json_object_set_new(g, "suffix", json_string(sfx));
				return g;
			}
		}
		return NULL;
	}
	long n = 0;
	json_array_foreach (rjs, i, rj)
		n = cap_add(n, jobset_rj_pods(rj));
	json_t *g = shape(n, n);
	if (g) /* "0" is no replicated job's name (a DNS-1035 label) */
		json_object_set_new(g, "suffix", json_string("0"));
	return g;
}

/* Kubeflow training jobs (KAI kubeflow/distributed_common.go
 * GetPodGroupMetadata): runPolicy.schedulingPolicy.minAvailable, else (a
 * PyTorchJob) the elastic policy's minReplicas beside its Master, else
 * every replica of every type; subgroups, per replica type, when all are
 * needed (their pods' label training.kubeflow.org/replica-type). An
 * MPIJob's launcher, with launcherCreationPolicy WaitForWorkersReady, is
 * made only once the workers run: it is not in the minimum (KAI
 * mpi-grouper.go handleDelayedLauncherPolicy) and the count is not fixed. */
static json_t *shape_kubeflow(const json_t *job, const json_t *pod, const char *specs_key)
{
	const json_t *spec = json_object_get(job, "spec");
	const json_t *specs = json_object_get(spec, specs_key);
	long all = 0, launcher = 0;
	const char *type;
	json_t *rs, *subs = json_array();
	json_object_foreach ((json_t *)specs, type, rs) {
		long n = num(rs, "replicas", 1);
		char sg[64];
		all = cap_add(all, n);
		if (strcasecmp(type, "Launcher") == 0)
			launcher = n;
		label_name(type, sg, sizeof(sg));
		if (sg[0] && n > 0)
			json_array_append_new(
			    subs, json_pack("{s:s,s:I}", "name", sg, "minMember", (json_int_t)n));
	}
	long min = num(spec, "runPolicy.schedulingPolicy.minAvailable", -1);
	long total = all;
	bool whole = min < 0;
	const json_t *elastic = json_object_get(spec, "elasticPolicy");
	if (min < 0 && elastic) {
		long mr = num(elastic, "minReplicas", -1);
		const json_t *master = json_object_get(specs, "Master");
		min = mr >= 0 ? cap_add(mr, master ? num(master, "replicas", 1) : 0) : all;
		total = 0; /* elastic: the number of pods moves */
		whole = false;
	}
	if (min < 0)
		min = all;
	const char *lcp = jstr(spec, "launcherCreationPolicy");
	if (lcp && strcmp(lcp, "WaitForWorkersReady") == 0) {
		min -= launcher;
		total = 0;
		whole = false;
	}
	json_t *g = shape(min, total);
	const char *rtype = jstr(json_object_get(json_object_get(pod, "metadata"), "labels"),
				 "training.kubeflow.org/replica-type");
	char mine[64];
	label_name(rtype, mine, sizeof(mine));
	if (g && whole && mine[0] && json_array_size(subs) > 1 &&
	    json_array_size(subs) <= GANG_MAX_SUBS) {
		json_object_set_new(g, "subgroup", json_string(mine));
		json_object_set(g, "subGroups", subs);
	}
	json_decref(subs);
	return g;
}

/* RayCluster: its head and every worker group's minimum (minReplicas when
 * the autoscaler is on, else replicas; times numOfHosts), as KAI's
 * raycluster_grouper.go counts them; the count is fixed without the
 * autoscaler. */
static json_t *shape_ray(const json_t *rc)
{
	const json_t *spec = json_object_get(rc, "spec");
	bool autoscale = json_is_true(json_object_get(spec, "enableInTreeAutoscaling"));
	long min = 1, total = 1;
	size_t i;
	json_t *wg;
	json_array_foreach (json_object_get(spec, "workerGroupSpecs"), i, wg) {
		long hosts = num(wg, "numOfHosts", 1), reps = num(wg, "replicas", 0);
		long mr = autoscale ? num(wg, "minReplicas", 0) : reps;
		min = cap_add(min, mr * (hosts ? hosts : 1));
		total = cap_add(total, reps * (hosts ? hosts : 1));
	}
	return shape(min, autoscale ? 0 : total);
}

/* LeaderWorkerSet: each group (leader and size - 1 workers, the pods'
 * label leaderworkerset.sigs.k8s.io/group-index) is a gang of size. */
static json_t *shape_lws(const json_t *lws, const json_t *pod)
{
	long size = num(lws, "spec.leaderWorkerTemplate.size", 1);
	const char *idx = jstr(json_object_get(json_object_get(pod, "metadata"), "labels"),
			       "leaderworkerset.sigs.k8s.io/group-index");
	if (!idx || !*idx || strlen(idx) > 10 || strspn(idx, "0123456789") != strlen(idx))
		return NULL;
	json_t *g = shape(size, size);
	if (g)
		json_object_set_new(g, "suffix", json_string(idx));
	return g;
}

/* StatefulSet: its replicas when it starts them together
 * (podManagementPolicy Parallel); one by one (OrderedReady) a gang would
 * wait forever for pods the controller has not made yet. */
static json_t *shape_sts(const json_t *sts)
{
	const char *pmp = jstr(json_object_get(sts, "spec"), "podManagementPolicy");
	long n = num(sts, "spec.replicas", 1);
	return pmp && strcmp(pmp, "Parallel") == 0 ? shape(n, n) : NULL;
}

json_t *syncer_gang_shape(const char *kind, const json_t *top, const json_t *pod)
{
	if (!kind || !top)
		return NULL;
	if (strcmp(kind, "Job") == 0)
		return shape_job(top);
	if (strcmp(kind, "JobSet") == 0)
		return shape_jobset(top, pod);
	if (strcmp(kind, "PyTorchJob") == 0)
		return shape_kubeflow(top, pod, "pytorchReplicaSpecs");
	if (strcmp(kind, "MPIJob") == 0)
		return shape_kubeflow(top, pod, "mpiReplicaSpecs");
	if (strcmp(kind, "RayCluster") == 0)
		return shape_ray(top);
	if (strcmp(kind, "LeaderWorkerSet") == 0)
		return shape_lws(top, pod);
	if (strcmp(kind, "StatefulSet") == 0)
		return shape_sts(top);
	return NULL;
}

/* ---- the gang of a pod ----------------------------------------------------------- */

/* The group's tenant-side name: "pg.<kind>[.<suffix>].<owner>". Kinds
 * and suffixes hold no dot and each kind always or never has a suffix, so
 * distinct gangs of a namespace get distinct names; syncer_host_name makes
 * the host name from it as from any object name. */
static int group_name(const char *kind, const json_t *g, const char *owner, char *buf, size_t len)
{
	char k[32];
	label_name(kind, k, sizeof(k));
	const char *sfx = jstr(g, "suffix");
	int n = snprintf(buf, len, "pg.%s%s%s.%s", k, sfx ? "." : "", sfx ? sfx : "", owner);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

json_t *syncer_gang_of(store_t *st, const json_t *pod, const char *tenant)
{
	const char *ns = meta_str(pod, "namespace");
	json_t *top = NULL, *cur = json_incref((json_t *)pod);
	const char *kind = NULL;
	for (int depth = 0; depth < OWNER_DEPTH; depth++) {
		const json_t *ref = controller_ref(cur);
		if (!ref)
			break;
		const struct owner_kind *k = owner_kind_of(ref);
		json_t *o = NULL;
		if (!k || !jstr(ref, "name") ||
		    store_get(st, k->res, ns ? ns : "", jstr(ref, "name"), &o) < 0 ||
		    !kb_json_same(json_object_get(json_object_get(o, "metadata"), "uid"),
				  json_object_get(ref, "uid"))) {
			json_decref(o); /* an owner we cannot read: no gang */
			json_decref(cur);
			json_decref(top);
			return NULL;
		}
		json_decref(top);
		top = json_incref(o);
		kind = k->kind;
		json_decref(cur);
		cur = o;
	}
	json_decref(cur);
	json_t *g = syncer_gang_shape(kind, top, pod);
	char gname[512], hn[SYNCER_NAME_MAX + 1];
	if (g && (group_name(kind, g, meta_str(top, "name"), gname, sizeof(gname)) < 0 ||
		  syncer_host_name(ns, gname, tenant, hn, sizeof(hn)) < 0)) {
		json_decref(g);
		g = NULL;
	}
	if (g) {
		json_object_set_new(g, "name", json_string(gname));
		json_object_set_new(g, "group", json_string(hn));
		json_object_set_new(g, "ns", json_string(ns));
		json_object_set_new(g, "kind", json_string(kind));
		json_object_set_new(g, "owner", json_string(meta_str(top, "name")));
		json_object_set_new(g, "uid",
				    json_string(meta_str(top, "uid") ? meta_str(top, "uid") : ""));
		json_t *labels = json_object_get(json_object_get(top, "metadata"), "labels");
		if (json_is_object(labels))
			json_object_set_new(g, "labels", json_deep_copy(labels));
	}
	json_decref(top);
	return g;
}

/* ---- the pods a gang needs, against the quotas ------------------------------------ */

/* The pods ResourceQuota q (borrowed) holds for every pod, -1 when it sets
 * none or holds only some pods: a quota with scopes or a scope selector
 * counts the pods that match them (kube's pkg/quota/v1/evaluator/core
 * pods.go podMatchesScopeFunc), which a gang's pods may not. Both kube's
 * keys count pods, `pods` and the object count `count/pods`
 * (pkg/quota/v1/generic ObjectCountQuotaResourceNameFor); the lower holds. */
static long quota_pods(const json_t *q)
{
	static const char *const keys[] = {"pods", "count/pods"};
	const json_t *spec = json_object_get(q, "spec");
	if (json_array_size(json_object_get(spec, "scopes")) ||
	    json_object_get(spec, "scopeSelector"))
		return -1;
	long lowest = -1;
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		const char *v = jstr(json_object_get(spec, "hard"), keys[i]);
		double n;
		if (!v || kb_quantity_parse(v, &n) < 0 || n < 0 || n > 1e9)
			continue;
		if (lowest < 0 || (long)n < lowest)
			lowest = (long)n;
	}
	return lowest;
}

const json_t *syncer_gang_pods_quota(const json_t *gang, const json_t *quotas)
{
	json_int_t min = json_integer_value(json_object_get(gang, "min"));
	const json_t *worst = NULL;
	long lowest = -1;
	size_t i;
	json_t *q;
	json_array_foreach (quotas, i, q) {
		long n = quota_pods(q);
		if (n >= 0 && n < min && (lowest < 0 || n < lowest)) {
			lowest = n;
			worst = q;
		}
	}
	return worst;
}

int syncer_gang_pods_message(const json_t *gang, const json_t *quota, const char *where, char *msg,
			     size_t len)
{
	int n = snprintf(
	    msg, len,
	    "%s %s needs %lld pods together, more than %s allows: exceeded quota: %s, "
	    "requested: pods=%lld, limited: pods=%ld: it could never be scheduled, and "
	    "its pods are not sent to the host",
	    jstr(gang, "kind"), jstr(gang, "owner"),
	    (long long)json_integer_value(json_object_get(gang, "min")), where,
	    meta_str(quota, "name") ? meta_str(quota, "name") : "",
	    (long long)json_integer_value(json_object_get(gang, "min")), quota_pods(quota));
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* ---- host objects and keys --------------------------------------------------------- */

const char *syncer_group_api(const struct syncer_profile *p)
{
	if (p && strcmp(p->name, "kai") == 0)
		return "/apis/scheduling.run.ai/v2alpha2";
	if (p && strcmp(p->name, "volcano") == 0)
		return "/apis/scheduling.volcano.sh/v1beta1";
	return NULL;
}

/* Label keys of the owner that stay off the host group: the schedulers'
 * and Kubicle's own (a tenant picks no node pool, project or priority
 * there), and kube's. */
static bool group_label_ok(const char *k)
{
	static const char *const plain[] = {"project", "user", "priorityClassName",
					    "runai-gpu-group"};
	static const char *const domains[] = {"kai.scheduler", "run.ai",         "runai",
					      "volcano.sh",    "kueue.x-k8s.io", "kubicle.dev",
					      "k8s.io",        "kubernetes.io",  "nvidia.com"};
	const char *slash = strchr(k, '/');
	if (!slash) {
		for (size_t i = 0; i < KB_ARRAY_SIZE(plain); i++)
			if (strcmp(k, plain[i]) == 0)
				return false;
		return !kb_str_has_prefix(k, "runai");
	}
	size_t n = (size_t)(slash - k);
	for (size_t i = 0; i < KB_ARRAY_SIZE(domains); i++) {
		size_t d = strlen(domains[i]);
		if (n >= d && strncmp(k + n - d, domains[i], d) == 0 &&
		    (n == d || k[n - d - 1] == '.'))
			return false;
	}
	return true;
}

static json_t *group_meta(const struct syncer_xlate *x, const json_t *gang)
{
	json_t *labels = json_object(), *v;
	const char *k;
	json_object_foreach (json_object_get(gang, "labels"), k, v) {
		if (json_is_string(v) && group_label_ok(k))
			json_object_set(labels, k, v);
	}
	json_object_set_new(labels, LBL_TENANT, json_string(x->tenant));
	json_object_set_new(labels, LBL_NAMESPACE, json_string(jstr(gang, "ns")));
	char owner[400];
	snprintf(owner, sizeof(owner), "%s/%s", jstr(gang, "kind"), jstr(gang, "owner"));
	return json_pack("{s:s,s:s,s:o,s:{s:s,s:s,s:s,s:s,s:s}}", "name", jstr(gang, "group"),
			 "namespace", x->host_ns, "labels", labels, "annotations", ANN_NAMESPACE,
			 jstr(gang, "ns"), ANN_NAME, jstr(gang, "name"), ANN_UID, jstr(gang, "uid"),
			 ANN_KIND, "PodGroup", ANN_GROUP_OWNER, owner);
}

/* A container's nvidia.com/gpu: its request, else its limit (kube
 * defaults the request to the limit). */
static json_int_t ctr_gpus(const json_t *c)
{
	const json_t *res = json_object_get(c, "resources");
	const char *q = jstr(json_object_get(res, "requests"), "nvidia.com/gpu");
	if (!q)
		q = jstr(json_object_get(res, "limits"), "nvidia.com/gpu");
	return q ? strtoll(q, NULL, 10) : 0;
}

/* The GPUs of one host pod as kube counts its effective request: app
 * containers summed, or an init container when larger. */
static json_int_t pod_gpus(const json_t *hp)
{
	const json_t *spec = json_object_get(hp, "spec");
	json_int_t sum = 0, init = 0;
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(spec, "containers"), i, c)
		sum += ctr_gpus(c);
	json_array_foreach (json_object_get(spec, "initContainers"), i, c)
		init = ctr_gpus(c) > init ? ctr_gpus(c) : init;
	return sum > init ? sum : init;
}

/* KAI's topology keys (podgrouper plugins/constants: read from the top
 * owner by its grouper, which our groups skip) as the PodGroup's
 * topologyConstraint. They are on the host pod only where the tenant's
 * policy lets them pass (translate.c). */
static void kai_topology(const json_t *hp, json_t *spec)
{
	static const char *const keys[][2] = {
	    {"kai.scheduler/topology", "topology"},
	    {"kai.scheduler/topology-required-placement", "requiredTopologyLevel"},
	    {"kai.scheduler/topology-preferred-placement", "preferredTopologyLevel"},
	};
	const json_t *ann = kb_json_path(hp, "metadata.annotations");
	json_t *tc = json_object();
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		if (jstr(ann, keys[i][0]))
			json_object_set_new(tc, keys[i][1], json_string(jstr(ann, keys[i][0])));
	if (json_object_size(tc))
		json_object_set_new(spec, "topologyConstraint", tc);
	else
		json_decref(tc);
}

/* Volcano's network topology keys (topology/v1alpha1 labels.go:
 * volcano.sh/network-topology-mode "hard"|"soft", -highest-tier an
 * integer) as the PodGroup's spec.networkTopology (scheduling/v1beta1
 * NetworkTopologySpec), where its scheduler reads them for a group. */
static void volcano_topology(const json_t *hp, json_t *spec)
{
	const json_t *ann = kb_json_path(hp, "metadata.annotations");
	const char *mode = jstr(ann, "volcano.sh/network-topology-mode");
	const char *tier = jstr(ann, "volcano.sh/network-topology-highest-tier");
	json_t *nt = json_object();
	if (mode && (strcmp(mode, "hard") == 0 || strcmp(mode, "soft") == 0))
		json_object_set_new(nt, "mode", json_string(mode));
	char *end = NULL;
	long t = tier ? strtol(tier, &end, 10) : -1;
	if (tier && *tier && !*end && t >= 0 && t <= 1000)
		json_object_set_new(nt, "highestTierAllowed", json_integer(t));
	if (json_object_size(nt))
		json_object_set_new(spec, "networkTopology", nt);
	else
		json_decref(nt);
}

int64_t syncer_gang_gpu_milli(const json_t *gang, const json_t *hp)
{
	return (int64_t)pod_gpus(hp) * 1000 * json_integer_value(json_object_get(gang, "min"));
}

json_t *syncer_group_object(const struct syncer_xlate *x, const json_t *gang, const json_t *hp)
{
	const char *api = syncer_group_api(x->profile);
	if (!api || !gang)
		return NULL;
	bool kai = strcmp(x->profile->name, "kai") == 0;
	json_int_t min = json_integer_value(json_object_get(gang, "min"));
	json_t *spec = json_pack("{s:I}", "minMember", min);
	if (x->queue)
		json_object_set_new(spec, "queue", json_string(x->queue));
	const char *pc = jstr(json_object_get(hp, "spec"), "priorityClassName");
	if (pc)
		json_object_set_new(spec, "priorityClassName", json_string(pc));
	if (kai && json_object_get(gang, "subGroups"))
		json_object_set(spec, "subGroups", json_object_get(gang, "subGroups"));
	if (kai)
		kai_topology(hp, spec);
	else
		volcano_topology(hp, spec);
	/* Volcano admits a group to its queue by minResources (enqueue):
	 * given where every member has the same template */
	const char *kind = jstr(gang, "kind");
	json_int_t g = pod_gpus(hp);
	if (!kai && g > 0 && kind &&
	    (strcmp(kind, "Job") == 0 || strcmp(kind, "StatefulSet") == 0)) {
		char n[32];
		snprintf(n, sizeof(n), "%lld", (long long)(g * min));
		json_object_set_new(spec, "minResources", json_pack("{s:s}", "nvidia.com/gpu", n));
	}
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", api + strlen("/apis/"), "kind",
			 "PodGroup", "metadata", group_meta(x, gang), "spec", spec);
}

void syncer_gang_keys(const struct syncer_xlate *x, const json_t *gang, json_t *hp)
{
	const char *group = jstr(gang, "group");
	if (!group || !x->profile)
		return;
	json_t *m = kb_json_object_at(hp, "metadata");
	json_t *labels = kb_json_object_at(m, "labels"), *ann = kb_json_object_at(m, "annotations");
	const char *p = x->profile->name;
	if (strcmp(p, "kai") == 0) {
		json_object_set_new(ann, "pod-group-name", json_string(group));
		json_object_set_new(ann, "kai.scheduler/skip-podgrouper", json_string("true"));
		if (jstr(gang, "subgroup"))
			json_object_set_new(labels, "kai.scheduler/subgroup-name",
					    json_string(jstr(gang, "subgroup")));
	} else if (strcmp(p, "volcano") == 0) {
		json_object_set_new(ann, "scheduling.k8s.io/group-name", json_string(group));
	} else if (strcmp(p, "kueue") == 0) {
		json_int_t total = json_integer_value(json_object_get(gang, "total"));
		if (total <= 1)
			return; /* a count that moves: Kueue has no group of it */
		char n[32];
		snprintf(n, sizeof(n), "%lld", (long long)total);
		json_object_set_new(labels, "kueue.x-k8s.io/pod-group-name", json_string(group));
		json_object_set_new(ann, "kueue.x-k8s.io/pod-group-total-count", json_string(n));
	}
}

/* ---- host group objects ------------------------------------------------------------ */

/*
 * State: `groups` maps a host group name to {obj: the host object to make,
 * ns, name: its tenant-side name, members: {host pod name: true} (pods
 * made or found in it), waiting: {host pod name: [ns, name]} (tenant pods
 * whose creation waits for it), creating, ready}. A group is made when its
 * first pod is to be, its pods once it is there (ready); it is deleted
 * when its last member and waiting pod are gone. A group object deleted on
 * the host while it has members is made again; one of ours with no entry
 * (a crash between the last pod and the group) is swept at the resync.
 *
 * Kueue has no group object (`objects` false): its group is the keys on
 * its members, and an entry is {ns, name, members, waiting (empty), total:
 * the pod-group-total-count they carry, ready}.
 *
 * Scaling: the gang is read again whenever one of its pods is made, found
 * at a resync or deleted (syncer_groups_refresh), as KAI's pod-grouper
 * recomputes it from the top owner at each pod's reconcile
 * (pkg/podgrouper/podgroup/handler.go ApplyToCluster: the PodGroup updated
 * when its spec differs) and Volcano's job controller when the job's
 * minAvailable or minResources change (pkg/controllers/job/
 * job_controller_actions.go shouldUpdateExistingPodGroup). A group object
 * whose spec would change is patched; under Kueue every member's
 * pod-group-total-count is, since Kueue composes no Workload while its
 * members' counts differ (pkg/controller/jobs/pod/pod_controller.go
 * validatePodGroupMetadata).
 */
struct syncer_groups {
	kb_httpc_t *http;
	const struct syncer_xlate *x;
	store_t *store;
	char path[300];
	bool objects; /* false: Kueue (no group object) */
	struct host_informer *inf;
	json_t *groups;
	syncer_group_ready_fn ready;
	void *arg;
	struct syncer_stats *stats;
};

struct group_call {
	struct syncer_groups *g;
	char name[SYNCER_NAME_MAX + 1];
};

static void group_event(struct syncer_groups *g, json_t *e, const char *reason, const char *msg)
{
	const char *hn;
	json_t *w;
	json_object_foreach (json_object_get(e, "waiting"), hn, w) {
		json_t *tp = NULL;
		const char *ns = json_string_value(json_array_get(w, 0));
		const char *name = json_string_value(json_array_get(w, 1));
		if (store_get(g->store, "/pods", ns, name, &tp) == 0)
			syncer_record_event(g->store, ns, "Pod", name, meta_str(tp, "uid"),
					    "Warning", reason, msg, "group", NULL);
		json_decref(tp);
	}
}

/* The group is on the host: its waiting pods are made now. */
static void group_ready(struct syncer_groups *g, const char *name)
{
	json_t *e = json_object_get(g->groups, name);
	if (!e)
		return;
	json_object_set_new(e, "ready", json_true());
	json_t *waiting = json_object_get(e, "waiting");
	json_incref(waiting);
	json_object_set_new(e, "waiting", json_object());
	const char *hn;
	json_t *w;
	json_object_foreach (waiting, hn, w)
		g->ready(g->arg, json_string_value(json_array_get(w, 0)),
			 json_string_value(json_array_get(w, 1)));
	json_decref(waiting);
}

static void on_group_get(int err, long status, json_t *body, void *arg)
{
	struct group_call *gc = arg;
	struct syncer_groups *g = gc->g;
	json_t *e = json_object_get(g->groups, gc->name);
	if (e && !err && status == 200) {
		if (syncer_host_is(body, g->x->tenant, jstr(e, "ns"), jstr(e, "name"), NULL)) {
			group_ready(g, gc->name);
		} else {
			kb_warn("syncer", "host group %s is not ours: its pods wait", gc->name);
			group_event(g, e, "HostNameConflict",
				    "the host has another object under this pod's group name");
		}
	}
	free(gc);
}

static void on_group_created(int err, long status, json_t *body, void *arg)
{
	struct group_call *gc = arg;
	struct syncer_groups *g = gc->g;
	json_t *e = json_object_get(g->groups, gc->name);
	if (e)
		json_object_set_new(e, "creating", json_false());
	if (!e || err) {
		free(gc);
		return;
	}
	if (status == 201 || status == 200) {
		group_ready(g, gc->name);
	} else if (status == 409) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", g->path, gc->name);
		if (host_call(g->http, "GET", path, NULL, on_group_get, gc) == 0)
			return;
	} else {
		const char *m = jstr(body, "message");
		char msg[600];
		snprintf(msg, sizeof(msg), "the host refused the pod group %s: %s", gc->name,
			 m ? m : "no reason given");
		kb_info("syncer", "%s (HTTP %ld)", msg, status);
		if (status >= 400 && status < 500 && status != 429)
			group_event(g, e, "FailedCreate", msg);
	}
	free(gc);
}

static void group_create(struct syncer_groups *g, const char *name, json_t *e)
{
	struct group_call *gc = calloc(1, sizeof(*gc));
	if (!gc || json_is_true(json_object_get(e, "creating"))) {
		free(gc);
		return;
	}
	gc->g = g;
	snprintf(gc->name, sizeof(gc->name), "%s", name);
	json_object_set_new(e, "creating", json_true());
	if (host_call(g->http, "POST", g->path, json_object_get(e, "obj"), on_group_created, gc) <
	    0) {
		json_object_set_new(e, "creating", json_false());
		free(gc);
		return;
	}
	g->stats->host_creates++;
}

/* Deletes host group `name` when the informer saw it, exactly ours, with
 * its uid as a precondition. */
static void group_delete(struct syncer_groups *g, const char *name)
{
	if (!g->objects)
		return;
	json_t *hg = json_object_get(host_informer_cache(g->inf), name);
	const char *ns, *tname, *uid;
	if (!hg || meta_str(hg, "deletionTimestamp") ||
	    !syncer_host_owner(hg, g->x->tenant, &ns, &tname, &uid))
		return;
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", g->path, name);
	json_t *opts = json_pack("{s:s,s:s,s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1",
				 "preconditions", "uid", meta_str(hg, "uid"));
	host_call(g->http, "DELETE", path, opts, NULL, NULL);
	g->stats->host_deletes++;
	json_decref(opts);
}

#define KUEUE_COUNT "kueue.x-k8s.io/pod-group-total-count"

/* Sets pod-group-total-count to `total` on host pod hn (merge patch, its
 * uid a precondition when known). */
static void kueue_count_patch(struct syncer_groups *g, const char *hn, const char *uid,
			      json_int_t total)
{
	char path[512], n[32];
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", g->x->host_ns, hn);
	snprintf(n, sizeof(n), "%lld", (long long)total);
	json_t *patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", KUEUE_COUNT, n);
	if (uid)
		json_object_set_new(json_object_get(patch, "metadata"), "uid", json_string(uid));
	if (host_call_ct(g->http, "PATCH", path, "application/merge-patch+json", patch, NULL,
			 NULL) == 0)
		g->stats->host_updates++;
	json_decref(patch);
}

/* Kueue: the gang's count moved: every member but `except` (made now with
 * the new count) gets it. */
static void kueue_recount(struct syncer_groups *g, json_t *e, const json_t *gang,
			  const char *except)
{
	json_int_t total = json_integer_value(json_object_get(gang, "total"));
	if (total <= 1 || total == json_integer_value(json_object_get(e, "total")))
		return; /* a count that moves now: the members keep the last one */
	json_object_set_new(e, "total", json_integer(total));
	const char *hn;
	json_t *v;
	json_object_foreach (json_object_get(e, "members"), hn, v) {
		if (!except || strcmp(hn, except) != 0)
			kueue_count_patch(g, hn, NULL, total);
	}
}

/* A spec patch the host did not take: the next read of the gang sends it
 * again (the entry is stale). */
static void on_group_patched(int err, long status, json_t *body, void *arg)
{
	struct group_call *gc = arg;
	json_t *e = json_object_get(gc->g->groups, gc->name);
	(void)body;
	if (e && (err || status >= 300)) {
		kb_info("syncer", "host group %s: spec patch refused (HTTP %ld)", gc->name, status);
		json_object_set_new(e, "stale", json_true());
	}
	free(gc);
}

/* The gang of a member was read again: its group object follows when its
 * spec would change (patched on the host once it is there and ours, its
 * uid a precondition), or under Kueue its members' count. Compared with
 * what was last made or patched, only the fields written here (the
 * scheduler sets others, and an API server may prune what its schema
 * lacks: a comparison with the host's object could patch forever), or
 * sent again when the last patch failed (stale). While a create is in
 * flight nothing changes: the next read (a member made, held at a resync,
 * deleted) finds the difference. */
static void group_update(struct syncer_groups *g, const char *name, json_t *e, const json_t *gang,
			 const json_t *hp, const char *hn)
{
	if (!g->objects) {
		kueue_recount(g, e, gang, hn);
		return;
	}
	if (json_is_true(json_object_get(e, "creating")))
		return;
	json_t *obj = syncer_group_object(g->x, gang, hp);
	const json_t *last = kb_json_path(json_object_get(e, "obj"), "spec");
	const json_t *spec = json_object_get(obj, "spec");
	if (!obj || (json_equal((json_t *)last, (json_t *)spec) &&
		     !json_is_true(json_object_get(e, "stale")))) {
		json_decref(obj);
		return;
	}
	json_t *patch = json_deep_copy(spec), *v;
	const char *k;
	json_object_foreach ((json_t *)last, k, v) {
		if (!json_object_get(spec, k))
			json_object_set_new(patch, k, json_null());
	}
	json_t *hg = json_object_get(host_informer_cache(g->inf), name);
	bool ours = hg && !meta_str(hg, "deletionTimestamp") &&
		    syncer_host_is(hg, g->x->tenant, jstr(e, "ns"), jstr(e, "name"), NULL);
	if (!json_is_true(json_object_get(e, "ready"))) {
		json_object_set_new(e, "obj", obj); /* the next create makes it so */
	} else if (!ours) {
		json_decref(obj); /* not seen yet: a later read patches it */
	} else {
		json_object_set_new(e, "obj", obj);
		json_object_del(e, "stale");
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", g->path, name);
		json_t *body = json_pack("{s:{s:s},s:O}", "metadata", "uid", meta_str(hg, "uid"),
					 "spec", patch);
		struct group_call *gc = calloc(1, sizeof(*gc));
		if (gc) {
			gc->g = g;
			snprintf(gc->name, sizeof(gc->name), "%s", name);
		}
		if (!gc || host_call_ct(g->http, "PATCH", path, "application/merge-patch+json",
					body, on_group_patched, gc) < 0) {
			free(gc);
			json_object_set_new(e, "stale", json_true());
		} else {
			g->stats->host_updates++;
		}
		json_decref(body);
	}
	json_decref(patch);
}

/* A new entry for gang's group (obj: host object, stolen; NULL under
 * Kueue). */
static json_t *group_entry(struct syncer_groups *g, const json_t *gang, json_t *obj, bool ready)
{
	json_t *e =
	    json_pack("{s:s,s:s,s:{},s:{},s:b,s:b}", "ns", jstr(gang, "ns"), "name",
		      jstr(gang, "name"), "members", "waiting", "creating", 0, "ready", ready);
	if (obj)
		json_object_set_new(e, "obj", obj);
	else
		json_object_set(e, "total", json_object_get(gang, "total"));
	json_object_set_new(g->groups, jstr(gang, "group"), e);
	return e;
}

int syncer_groups_want(struct syncer_groups *g, const json_t *gang, const json_t *pod,
		       const char *hn, const json_t *hp)
{
	const char *name = jstr(gang, "group");
	if (!g || !name)
		return 1;
	json_t *e = json_object_get(g->groups, name);
	if (!g->objects) { /* Kueue: a fixed count, or no group at all */
		if (json_integer_value(json_object_get(gang, "total")) <= 1)
			return 1;
		if (!e)
			e = group_entry(g, gang, NULL, true);
		else
			group_update(g, name, e, gang, hp, hn);
		json_object_set_new(json_object_get(e, "members"), hn, json_true());
		return 1;
	}
	if (!e) {
		json_t *obj = syncer_group_object(g->x, gang, hp);
		if (!obj)
			return -ENOMEM;
		e = group_entry(g, gang, obj, false);
		/* there already (a restart): ready as soon as it is checked */
	} else {
		group_update(g, name, e, gang, hp, hn); /* scaled up */
	}
	json_t *have = json_object_get(host_informer_cache(g->inf), name);
	if (have && !meta_str(have, "deletionTimestamp") &&
	    syncer_host_is(have, g->x->tenant, jstr(e, "ns"), jstr(e, "name"), NULL))
		json_object_set_new(e, "ready", json_true()); /* made before a restart */
	if (json_is_true(json_object_get(e, "ready"))) {
		json_object_set_new(json_object_get(e, "members"), hn, json_true());
		return 1;
	}
	json_object_set_new(json_object_get(e, "waiting"), hn,
			    json_pack("[s,s]", meta_str(pod, "namespace"), meta_str(pod, "name")));
	group_create(g, name, e);
	return 0;
}

void syncer_groups_hold(struct syncer_groups *g, const json_t *gang, const json_t *hp,
			const char *hn)
{
	const char *name = jstr(gang, "group");
	if (!g || !name)
		return;
	json_t *e = json_object_get(g->groups, name);
	if (!g->objects) {
		json_int_t total = json_integer_value(json_object_get(gang, "total"));
		if (total <= 1)
			return;
		if (!e)
			e = group_entry(g, gang, NULL, true);
		else
			group_update(g, name, e, gang, hp, hn);
		/* its count moved while we were away */
		const char *have = jstr(kb_json_path(hp, "metadata.annotations"), KUEUE_COUNT);
		if (!have || strtoll(have, NULL, 10) != total)
			kueue_count_patch(g, hn, meta_str(hp, "uid"), total);
	} else if (!e) {
		json_t *obj = syncer_group_object(g->x, gang, hp);
		if (!obj)
			return;
		e = group_entry(g, gang, obj, true);
	} else {
		group_update(g, name, e, gang, hp, hn);
	}
	json_object_set_new(json_object_get(e, "members"), hn, json_true());
}

void syncer_groups_refresh(struct syncer_groups *g, const json_t *gang, const json_t *hp)
{
	const char *name = jstr(gang, "group");
	json_t *e = g && name ? json_object_get(g->groups, name) : NULL;
	if (e)
		group_update(g, name, e, gang, hp, NULL);
}

void syncer_groups_release(struct syncer_groups *g, const char *hn)
{
	if (!g)
		return;
	const char *name;
	json_t *e;
	void *tmp;
	json_object_foreach_safe (g->groups, tmp, name, e) {
		json_object_del(json_object_get(e, "members"), hn);
		json_object_del(json_object_get(e, "waiting"), hn);
		if (json_object_size(json_object_get(e, "members")) == 0 &&
		    json_object_size(json_object_get(e, "waiting")) == 0) {
			group_delete(g, name);
			json_object_del(g->groups, name);
		}
	}
}

void syncer_groups_resync(struct syncer_groups *g)
{
	if (!g || !g->objects || !host_informer_up(g->inf))
		return;
	json_t *cache = host_informer_cache(g->inf);
	const char *name;
	json_t *e, *hg;
	json_object_foreach (g->groups, name, e) {
		if (!json_object_get(cache, name))
			group_create(g, name, e); /* deleted on the host, or never made */
	}
	json_t *copy = json_deep_copy(cache);
	json_object_foreach (copy, name, hg) {
		if (!json_object_get(g->groups, name))
			group_delete(g, name); /* no member left: swept */
	}
	json_decref(copy);
}

static void on_host_group(const char *type, json_t *obj, void *arg)
{
	struct syncer_groups *g = arg;
	const char *name = meta_str(obj, "name");
	json_t *e = name ? json_object_get(g->groups, name) : NULL;
	if (e && strcmp(type, "DELETED") == 0 && json_is_true(json_object_get(e, "ready")))
		group_create(g, name, e); /* made again: its members are still there */
}

int syncer_groups_start(uv_loop_t *loop, kb_httpc_t *http, store_t *store,
			const struct syncer_xlate *x, const char *label_selector,
			syncer_group_ready_fn ready, void *arg, struct syncer_stats *stats,
			struct syncer_groups **out)
{
	*out = NULL;
	const char *api = syncer_group_api(x->profile);
	bool kueue = x->profile && strcmp(x->profile->name, "kueue") == 0;
	if (!api && !kueue)
		return 0;
	struct syncer_groups *g = calloc(1, sizeof(*g));
	if (!g || !(g->groups = json_object())) {
		free(g);
		return -ENOMEM;
	}
	g->http = http;
	g->x = x;
	g->store = store;
	g->ready = ready;
	g->arg = arg;
	g->stats = stats;
	g->objects = api != NULL;
	if (!api) {
		*out = g;
		return 0;
	}
	snprintf(g->path, sizeof(g->path), "%s/namespaces/%s/podgroups", api, x->host_ns);
	struct host_informer_opts o = {
	    .path = g->path, .label_selector = label_selector, .on_event = on_host_group, .arg = g};
	int rc = host_informer_start(loop, http, &o, &g->inf);
	if (rc < 0) {
		json_decref(g->groups);
		free(g);
		return rc;
	}
	*out = g;
	return 0;
}

void syncer_groups_stop(struct syncer_groups *g)
{
	if (!g)
		return;
	if (g->inf)
		host_informer_stop(g->inf);
	json_decref(g->groups);
	free(g);
}
