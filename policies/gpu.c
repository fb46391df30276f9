/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPUs and quotas. A pod asks for GPUs in one of four ways:
 * - whole GPUs: the extended resource nvidia.com/gpu (whole numbers);
 * - KAI fractions: the pod annotations gpu-fraction ("0.5", times
 *   gpu-fraction-num-devices) or gpu-memory (MiB of one GPU);
 * - HAMi: nvidia.com/gpu counts vGPUs, shared by nvidia.com/gpucores
 *   (percent), nvidia.com/gpumem-percentage or nvidia.com/gpumem (MiB);
 * - MIG: nvidia.com/mig-<N>g.<M>gb slices, N sevenths of a GPU each.
 * Every share is counted in thousandths of a GPU, rounded up.
 * Any other extended resource is refused unless the policy lists it in
 * extendedResources, with the GPUs one unit counts as.
 * Quota usage counts each as the part of a GPU it takes (gpu-memory and
 * gpumem need the policy's gpuMemoryMiB; without it they count as one GPU).
 * GPUs, cpu and memory count requests (limits when requests are absent, as
 * the API server defaults them) over the pod as kube computes its
 * effective request (pod_amount: sidecars, init steps, pod-level requests,
 * overhead).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "policies/policies_impl.h"

static const char *const hami_keys[] = {"nvidia.com/gpumem", "nvidia.com/gpucores",
					"nvidia.com/gpumem-percentage"};

/* a + b for amounts (>= 0), saturating: a tenant's huge quantities must
 * not wrap around into a small or negative usage. */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Thousandths of a GPU, rounded up: a share, however small, takes some of
 * the quota (gpu-fraction 0.0001 counted 0 and so any number of pods fit);
 * 1e-9 absorbs the binary noise of decimal fractions (0.29 * 1000). */
static int64_t up(double milli)
{
	return (int64_t)ceil(milli - 1e-9);
}

int policy_quantity_milli(const char *s, int64_t *out)
{
	static const struct {
		const char *sfx;
		double mult;
	} sfx[] = {{"", 1},
		   {"m", 1e-3},
		   {"k", 1e3},
		   {"M", 1e6},
		   {"G", 1e9},
		   {"T", 1e12},
		   {"P", 1e15},
		   {"Ki", 1024.0},
		   {"Mi", 1048576.0},
		   {"Gi", 1073741824.0},
		   {"Ti", 1099511627776.0},
		   {"Pi", 1125899906842624.0}};
	if (!s || !*s)
		return -EINVAL;
	char *end;
	double v = strtod(s, &end);
	if (end == s || v < 0 || !isfinite(v))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
		if (strcmp(end, sfx[i].sfx) == 0) {
			double m = v * sfx[i].mult * 1000.0;
			if (m > 9.0e18)
				return -EINVAL;
			*out = llround(m);
			return 0;
		}
	return -EINVAL;
}

/* A quantity that may be a JSON string or number; -1 when absent or bad. */
static int64_t qty_milli(const json_t *v)
{
	int64_t m;
	if (json_is_integer(v))
		return json_integer_value(v) * 1000;
	if (json_is_real(v))
		return llround(json_real_value(v) * 1000.0);
	if (policy_quantity_milli(json_string_value(v), &m) < 0)
		return -1;
	return m;
}

/* A container's amount of `key`: requests, else limits; -1 when absent. */
static int64_t ctr_qty(const json_t *c, const char *key)
{
	const json_t *res = json_object_get(c, "resources");
	json_t *v = json_object_get(json_object_get(res, "requests"), key);
	if (!v)
		v = json_object_get(json_object_get(res, "limits"), key);
	return v ? qty_milli(v) : -1;
}

static const char *annotation(const json_t *meta, const char *key)
{
	return json_string_value(json_object_get(json_object_get(meta, "annotations"), key));
}

/* MIG profile of a resource name ("nvidia.com/mig-1g.10gb" -> "1g.10gb"). */
static const char *mig_profile(const char *key)
{
	return strncmp(key, "nvidia.com/mig-", 15) == 0 ? key + 15 : NULL;
}

static bool is_hami(const char *key)
{
	for (size_t i = 0; i < sizeof(hami_keys) / sizeof(hami_keys[0]); i++)
		if (strcmp(key, hami_keys[i]) == 0)
			return true;
	return false;
}

static bool mig_allowed(const policy_t *p, const char *profile)
{
	size_t i;
	json_t *v;
	json_array_foreach (p->mig_profiles, i, v)
		if (json_string_value(v) && strcmp(json_string_value(v), profile) == 0)
			return true;
	return false;
}

static void mig_list(const policy_t *p, char *buf, size_t len)
{
	size_t i, off = 0;
	json_t *v;
	buf[0] = '\0';
	json_array_foreach (p->mig_profiles, i, v) {
		int n = snprintf(buf + off, len - off, "%snvidia.com/mig-%s", i ? ", " : "",
				 json_string_value(v) ? json_string_value(v) : "");
		if (n < 0 || (size_t)n >= len - off)
			return;
		off += (size_t)n;
	}
}

/* A resource name kube calls extended: a domain other than kubernetes.io
 * (kube's IsExtendedResourceName; native names have no '/'). */
static bool is_extended(const char *key)
{
	return strchr(key, '/') && !strstr(key, "kubernetes.io/");
}

/* The GPU forms the mode governs: nvidia.com/gpu, MIG slices, HAMi. */
static bool is_gpu_form(const char *key)
{
	return strcmp(key, "nvidia.com/gpu") == 0 || mig_profile(key) || is_hami(key);
}

/* An extended resource outside the GPU forms: allowed only when the
 * policy's extendedResources lists it (with the GPUs one unit counts as). */
static int check_other(const policy_t *p, const char *key, char *msg, size_t len)
{
	if (!is_extended(key) || is_gpu_form(key) || json_object_get(p->extended, key))
		return 0;
	policy_msg_add(msg, len,
		       "%s is not allowed; an extended resource must be listed in the policy's "
		       "extendedResources",
		       key);
	return 1;
}

/* One resource key of a container under the policy's GPU mode. */
static int check_key(const policy_t *p, const char *key, const json_t *val, char *msg, size_t len)
{
	const char *mig = mig_profile(key);
	char list[512];
	if (strcmp(key, "nvidia.com/gpu") == 0) {
		int64_t m = qty_milli(val);
		if (p->gpu_mode == POLICY_GPU_MIG) {
			mig_list(p, list, sizeof(list));
			policy_msg_add(msg, len,
				       "nvidia.com/gpu is not allowed; request a MIG profile (%s)",
				       list);
			return 1;
		}
		if (m < 0 || m % 1000 != 0) {
			policy_msg_add(msg, len, "nvidia.com/gpu must be a whole number");
			return 1;
		}
		return 0;
	}
	if (mig && p->gpu_mode != POLICY_GPU_MIG) {
		policy_msg_add(msg, len, "%s is not allowed; %s", key,
			       p->gpu_mode == POLICY_GPU_WHOLE
				   ? "request whole nvidia.com/gpu"
				   : "MIG profiles are not allowed by this policy");
		return 1;
	}
	if (mig && !mig_allowed(p, mig)) {
		mig_list(p, list, sizeof(list));
		policy_msg_add(msg, len, "%s is not allowed; allowed MIG profiles: %s", key, list);
		return 1;
	}
	if (is_hami(key) && p->gpu_mode != POLICY_GPU_FRACTIONAL) {
		policy_msg_add(msg, len, "%s is not allowed; %s", key,
			       p->gpu_mode == POLICY_GPU_WHOLE ? "request whole nvidia.com/gpu"
							       : "request a MIG profile");
		return 1;
	}
	return check_other(p, key, msg, len);
}

static int check_ctr(const policy_t *p, const json_t *c, char *msg, size_t len)
{
	static const char *const sect[] = {"requests", "limits"};
	int n = 0;
	for (size_t s = 0; s < 2; s++) {
		const char *k;
		json_t *v;
		json_t *m = kb_json_path(c, "resources");
		json_object_foreach (json_object_get(m, sect[s]), k, v) {
			/* requests and limits of one key: report once */
			if (s == 1 && kb_json_path(m, "requests") &&
			    json_object_get(json_object_get(m, "requests"), k))
				continue;
			n += check_key(p, k, v, msg, len);
		}
	}
	return n;
}

/* Whether any container or init container asks for nvidia.com/gpu (KAI's
 * getFirstGPULimit looks at both lists). */
static bool has_whole_gpu(const json_t *spec)
{
	static const char *const kinds[] = {"containers", "initContainers"};
	for (size_t k = 0; k < 2; k++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, kinds[k]), i, c)
			if (json_object_get(kb_json_path(c, "resources.limits"),
					    "nvidia.com/gpu") ||
			    json_object_get(kb_json_path(c, "resources.requests"),
					    "nvidia.com/gpu"))
				return true;
	}
	return false;
}

/* A positive decimal integer, as Go's strconv.ParseUint(s, 10, 64) reads
 * one (digits only, no sign or space), not 0. */
static bool positive_int(const char *s)
{
	if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 19)
		return false;
	return strtoull(s, NULL, 10) > 0;
}

/*
 * KAI Scheduler's own rules for its GPU-sharing annotations, which its
 * admission webhook applies on the host: github.com/NVIDIA/KAI-Scheduler
 * pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go,
 * ValidateGpuRequests. gpu-fraction is a number strictly between 0 and 1
 * and is not combined with nvidia.com/gpu; gpu-memory (MiB) is a positive
 * integer and is combined with neither; gpu-fraction-num-devices is a
 * positive integer and needs one of them; mps "true" needs one of them too.
 */
static int kai_check(const json_t *meta, const json_t *spec, char *msg, size_t len)
{
	const char *frac = annotation(meta, "gpu-fraction");
	const char *mem = annotation(meta, "gpu-memory");
	const char *ndev = annotation(meta, "gpu-fraction-num-devices");
	bool whole = has_whole_gpu(spec);
	int n = 0;
	if (frac) {
		char *end;
		double f = strtod(frac, &end);
		if (end == frac || *end || !(f > 0 && f < 1)) {
			policy_msg_add(msg, len,
				       "gpu-fraction must be a number strictly between 0 and 1, "
				       "not \"%s\"",
				       frac);
			n++;
		}
	}
	if (frac && whole) {
		policy_msg_add(msg, len, "gpu-fraction cannot be combined with nvidia.com/gpu");
		n++;
	}
	if (mem && !positive_int(mem)) {
		policy_msg_add(msg, len, "gpu-memory must be a positive integer (MiB), not \"%s\"",
			       mem);
		n++;
	}
	if (mem && (frac || whole)) {
		policy_msg_add(msg, len, "gpu-memory cannot be combined with %s",
			       frac ? "gpu-fraction" : "nvidia.com/gpu");
		n++;
	}
	if (ndev && !positive_int(ndev)) {
		policy_msg_add(msg, len,
			       "gpu-fraction-num-devices must be a positive integer, not \"%s\"",
			       ndev);
		n++;
	} else if (ndev && !frac && !mem) {
		policy_msg_add(msg, len,
			       "gpu-fraction-num-devices needs gpu-fraction or gpu-memory");
		n++;
	}
	const char *mps = annotation(meta, "mps");
	if (mps && strcmp(mps, "true") == 0 && !frac && !mem) {
		policy_msg_add(msg, len, "mps needs gpu-fraction or gpu-memory");
		n++;
	}
	return n;
}

int policy_gpu_check(const policy_t *p, const json_t *meta, const json_t *spec, char *msg,
		     size_t len)
{
	static const char *const kinds[] = {"containers", "initContainers"};
	/* KAI's GPU-sharing keys (pkg/common/constants/constants.go): the
	 * binder gives the fraction to the container gpu-fraction-container-name
	 * names (pkg/binder/common/gpu_access.go GetFractionContainerRef) and
	 * sets up MPS for "mps" (gpu_request_validator.go ValidateGpuRequests) */
	static const char *const kai[] = {"gpu-fraction", "gpu-memory", "gpu-fraction-num-devices",
					  "gpu-fraction-container-name", "mps"};
	int n = 0;
	for (size_t i = 0; i < KB_ARRAY_SIZE(kai); i++) {
		if (!annotation(meta, kai[i]) || p->gpu_mode == POLICY_GPU_FRACTIONAL)
			continue;
		policy_msg_add(msg, len, "%s is not allowed; %s", kai[i],
			       p->gpu_mode == POLICY_GPU_WHOLE ? "request whole nvidia.com/gpu"
							       : "request a MIG profile");
		n++;
	}
	if (p->gpu_mode == POLICY_GPU_FRACTIONAL)
		n += kai_check(meta, spec, msg, len);
	for (size_t k = 0; k < 2; k++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, kinds[k]), i, c)
			n += check_ctr(p, c, msg, len);
	}
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(spec, "overhead"), k, v)
		n += check_key(p, k, v, msg, len);
	/* DRA devices (a GPU claimed through a ResourceClaim) have no count in
	 * the policy: refused by the floor for every tenant (floor.c dra_check) */
	return n;
}

/* A container's amount of `key` (requests, else limits), 0 when absent. */
static int64_t ctr_amount(const json_t *c, const char *key)
{
	int64_t n = ctr_qty(c, key);
	return n > 0 ? n : 0;
}

/* Every resource name a container asks for (requests and limits): f is
 * called once per name. */
static int64_t ctr_keys(const policy_t *p, const json_t *c,
			int64_t (*f)(const policy_t *p, const json_t *c, const char *key))
{
	int64_t total = 0;
	const json_t *req = kb_json_path(c, "resources.requests");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)req, k, v)
		total = sat_add(total, f(p, c, k));
	json_object_foreach (kb_json_path(c, "resources.limits"), k, v)
		if (!json_object_get(req, k))
			total = sat_add(total, f(p, c, k));
	return total;
}

/* GPUs (thousandths) of one resource name of a container: a MIG slice
 * Ng.* is N sevenths of a GPU; a listed extended resource its weight. */
/* The GPU instance size of a MIG profile, in sevenths of a GPU: the <N>
 * of its "<N>g" part ("3g.40gb" and the compute-instance form "1c.3g.40gb"
 * both take 3); 7 (a whole GPU) when there is none. */
static int mig_sevenths(const char *profile)
{
	for (const char *t = profile; t && *t; t = strchr(t, '.') ? strchr(t, '.') + 1 : NULL) {
		size_t d = strspn(t, "0123456789");
		if (d && d < 3 && t[d] == 'g' && (t[d + 1] == '.' || !t[d + 1])) {
			int n = atoi(t);
			return n >= 1 && n <= 7 ? n : 7;
		}
	}
	return 7;
}

static int64_t key_gpu(const policy_t *p, const json_t *c, const char *key)
{
	const char *mig = mig_profile(key);
	json_t *w = mig || is_gpu_form(key) ? NULL : json_object_get(p->extended, key);
	if (!mig && !w)
		return 0;
	int64_t n = ctr_amount(c, key);
	return sat_mul(n / 1000, mig ? (mig_sevenths(mig) * 1000 + 6) / 7 : json_integer_value(w));
}

/* GPUs (thousandths) of one container. */
static int64_t ctr_gpu(const policy_t *p, const json_t *c)
{
	int64_t total = ctr_keys(p, c, key_gpu);
	int64_t n = ctr_qty(c, "nvidia.com/gpu");
	bool hami = ctr_qty(c, "nvidia.com/gpucores") > 0 ||
		    ctr_qty(c, "nvidia.com/gpumem-percentage") > 0 ||
		    ctr_qty(c, "nvidia.com/gpumem") > 0;
	/* HAMi gives one vGPU to a container that asks for a share alone */
	if (n <= 0 && hami)
		n = 1000;
	if (n <= 0)
		return total;
	/* HAMi: each vGPU takes the largest share it asks for */
	double share = 0;
	int64_t pct = ctr_qty(c, "nvidia.com/gpucores");
	if (pct > 0)
		share = fmax(share, pct / 100000.0);
	pct = ctr_qty(c, "nvidia.com/gpumem-percentage");
	if (pct > 0)
		share = fmax(share, pct / 100000.0);
	int64_t mem = ctr_qty(c, "nvidia.com/gpumem");
	if (mem > 0)
		share =
		    fmax(share, p->gpu_memory_mib ? mem / 1000.0 / (double)p->gpu_memory_mib : 1);
	if (share <= 0 || share > 1)
		share = 1;
	double g = (double)n * share;
	return sat_add(total, g >= 9.0e18 ? INT64_MAX : up(g));
}

/* KAI's annotations: gpu-fraction or gpu-memory, on each of
 * gpu-fraction-num-devices devices (one when absent). */
static int64_t kai_gpu(const policy_t *p, const json_t *meta)
{
	const char *frac = annotation(meta, "gpu-fraction");
	const char *mem = annotation(meta, "gpu-memory");
	const char *dev = annotation(meta, "gpu-fraction-num-devices");
	long ndev = dev ? strtol(dev, NULL, 10) : 1;
	if (ndev < 1)
		ndev = 1;
	if (ndev > 1000000)
		ndev = 1000000; /* refused on admission; bounded for old pods */
	if (frac) {
		double f = strtod(frac, NULL);
		return (f > 0 && f <= 1 ? up(f * 1000.0) : 1000) * ndev;
	}
	if (mem) {
		double mib = strtod(mem, NULL);
		if (p->gpu_memory_mib <= 0 || mib <= 0 || mib >= (double)p->gpu_memory_mib)
			return 1000 * ndev;
		return up(mib * 1000.0 / (double)p->gpu_memory_mib) * ndev;
	}
	return 0;
}

static bool is_sidecar(const json_t *c)
{
	const char *rp = json_string_value(json_object_get(c, "restartPolicy"));
	return rp && strcmp(rp, "Always") == 0;
}

/* Resources kube allows in a pod's spec.resources (PodLevelResources):
 * cpu, memory and hugepages-* (IsSupportedPodLevelResource). */
static bool pod_level_key(const char *key)
{
	return key && (strcmp(key, "cpu") == 0 || strcmp(key, "memory") == 0 ||
		       strncmp(key, "hugepages-", 10) == 0);
}

/*
 * A pod's effective request of what f measures in one container, as kube
 * computes it: k8s.io/component-helpers resource/helpers.go, PodRequests
 * and aggregateContainerResourcesByFn. App containers are summed; a
 * restartable init container (a sidecar, restartPolicy Always) is added to
 * that sum and to every later init step; each init step (a plain init
 * container plus the sidecars started before it) may need more, so the
 * pod takes the largest of the sum and every step. A pod-level request
 * (spec.resources.requests, for the resources kube allows there) is then
 * the pod's request, and spec.overhead comes on top.
 */
typedef int64_t (*amount_fn)(const policy_t *p, const json_t *c, const char *key);
static int64_t pod_amount(const policy_t *p, const json_t *spec, amount_fn f, const char *key)
{
	int64_t sum = 0, sidecars = 0, init = 0;
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(spec, "containers"), i, c) {
		int64_t v = f(p, c, key);
		sum = sat_add(sum, v > 0 ? v : 0);
	}
	json_array_foreach (json_object_get(spec, "initContainers"), i, c) {
		int64_t v = f(p, c, key), step;
		v = v > 0 ? v : 0;
		if (is_sidecar(c)) {
			sum = sat_add(sum, v);
			sidecars = sat_add(sidecars, v);
			step = sidecars;
		} else {
			step = sat_add(v, sidecars);
		}
		if (step > init)
			init = step;
	}
	int64_t total = sum > init ? sum : init;
	const json_t *plr = kb_json_path(spec, "resources.requests");
	if (pod_level_key(key) && json_object_get(plr, key)) {
		int64_t v = qty_milli(json_object_get(plr, key));
		total = v > 0 ? v : 0;
	}
	/* the overhead is a list of amounts, as a container's limits are */
	json_t *over = json_object_get(spec, "overhead");
	if (json_is_object(over) && json_object_size(over)) {
		json_t *oc = json_pack("{s:{s:O}}", "resources", "limits", over);
		int64_t v = oc ? f(p, oc, key) : 0;
		total = sat_add(total, v > 0 ? v : 0);
		json_decref(oc);
	}
	return total;
}

static int64_t amount_gpu(const policy_t *p, const json_t *c, const char *key)
{
	(void)key;
	return ctr_gpu(p, c);
}

static int64_t amount_qty(const policy_t *p, const json_t *c, const char *key)
{
	(void)p;
	return ctr_qty(c, key);
}

int64_t policy_pod_gpu_milli(const policy_t *p, const json_t *meta, const json_t *spec)
{
	return sat_add(pod_amount(p, spec, amount_gpu, NULL), kai_gpu(p, meta));
}

void policy_pod_usage(const policy_t *p, const json_t *pod, struct policy_usage *u)
{
	const char *phase = json_string_value(kb_json_path(pod, "status.phase"));
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return;
	const json_t *spec = json_object_get(pod, "spec");
	u->gpu_milli =
	    sat_add(u->gpu_milli, policy_pod_gpu_milli(p, json_object_get(pod, "metadata"), spec));
	u->cpu_milli = sat_add(u->cpu_milli, pod_amount(p, spec, amount_qty, "cpu"));
	u->memory = sat_add(u->memory, pod_amount(p, spec, amount_qty, "memory") / 1000);
	u->pods = sat_add(u->pods, 1);
}

/* ---- quotas ---- */

static const char *const quota_names[] = {"gpu", "cpu", "memory", "pods"};
static const char *const quota_keys[] = {"requests.nvidia.com/gpu", "requests.cpu",
					 "requests.memory", "pods"};

static int64_t field(const struct policy_usage *u, int i)
{
	switch (i) {
	case 0: return u->gpu_milli;
	case 1: return u->cpu_milli;
	case 2: return u->memory;
	default: return u->pods;
	}
}

/* Human value for messages: thousandths as a decimal ("0.5", "4"). */
static void fmt_plain(int i, int64_t v, char *buf, size_t len)
{
	if (i >= 2)
		snprintf(buf, len, "%lld", (long long)v);
	else if (v % 1000 == 0)
		snprintf(buf, len, "%lld", (long long)(v / 1000));
	else
		snprintf(buf, len, "%g", (double)v / 1000.0);
}

/* Kubernetes quantity ("500m", "2", "4Gi"). */
static void fmt_qty(int i, int64_t v, char *buf, size_t len)
{
	if (i == 2 && v && v % 1073741824 == 0)
		snprintf(buf, len, "%lldGi", (long long)(v / 1073741824));
	else if (i == 2 && v && v % 1048576 == 0)
		snprintf(buf, len, "%lldMi", (long long)(v / 1048576));
	else if (i >= 2 || v % 1000 == 0)
		snprintf(buf, len, "%lld", (long long)(i >= 2 ? v : v / 1000));
	else
		snprintf(buf, len, "%lldm", (long long)v);
}

int policy_check_quota(const policy_t *p, const struct policy_usage *used,
		       const struct policy_usage *req, char *msg, size_t len)
{
	for (int i = 0; i < 4; i++) {
		if (!p->has_quota[i] || field(req, i) <= 0 ||
		    sat_add(field(used, i), field(req, i)) <= field(&p->quota, i))
			continue;
		char a[32], b[32], c[32];
		fmt_plain(i, field(req, i), a, sizeof(a));
		fmt_plain(i, field(used, i), b, sizeof(b));
		fmt_plain(i, field(&p->quota, i), c, sizeof(c));
		snprintf(msg, len,
			 "policy %s: exceeded quota: %s, requested: %s, used: %s, limited: %s",
			 p->name, quota_names[i], a, b, c);
		return -EACCES;
	}
	return 0;
}

bool policy_has_quota(const policy_t *p)
{
	return p->has_quota[0] || p->has_quota[1] || p->has_quota[2] || p->has_quota[3];
}

static json_t *quota_map(const policy_t *p, const struct policy_usage *u)
{
	json_t *m = json_object();
	for (int i = 0; m && i < 4; i++) {
		if (!p->has_quota[i])
			continue;
		char buf[32];
		fmt_qty(i, field(u, i), buf, sizeof(buf));
		json_object_set_new(m, quota_keys[i], json_string(buf));
	}
	return m;
}

json_t *policy_quota_hard(const policy_t *p)
{
	return quota_map(p, &p->quota);
}

json_t *policy_quota_used(const policy_t *p, const struct policy_usage *used)
{
	return quota_map(p, used);
}
