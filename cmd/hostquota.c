/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tenant's host ResourceQuota, LimitRange and NetworkPolicies
 * (hostquota.h): flags, defaults, the objects, their create-or-adopt.
 *
 * Defaults are what a platform team sharing one GPU cluster between teams
 * would start from: room for a team's jobs, no external exposure (no
 * LoadBalancers, no NodePorts), the internet reachable but no private
 * network (the host's pods, nodes and cloud metadata live there).
 *
 * GPU forms (--gpus G; -1 leaves them out): kube's quota counts extended
 * resources by their requests only (`requests.<name>`; kube's
 * pkg/quota/v1/evaluator/core/pods.go, isExtendedResourceNameForQuota), one
 * key per resource name, so every name a GPU may be asked by gets a key:
 * nvidia.com/gpu (whole GPUs, HAMi's vGPUs), amd.com/gpu, volcano.sh's
 * vgpu-number, HAMi's nvidia.com/gpucores (100 per GPU), and each MIG
 * profile of the A100 and H100 at G times the slices of it one GPU holds
 * (NVIDIA's MIG user guide, "Supported MIG Profiles"). KAI's gpu-fraction
 * and gpu-memory pods request no resource: their share is the Queue's
 * (hostsetup.c).
 */
#include "cmd/hostquota.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/hostsetup.h"
#include "lib/util.h"
#include "policies/policies.h"
#include "syncer/syncer.h"

#define LABEL "kubicle.dev/tenant"

enum val_type { V_COUNT, V_QTY, V_CIDRS, V_CLASS };

static const struct setting {
	const char *flag, *key;
	enum val_type type;
	const char *dflt; /* NULL: unlimited / none */
} settings[] = {
    {"max-pods", "pods", V_COUNT, "100"},
    {"max-cpu", "cpu", V_QTY, "64"},
    {"max-memory", "memory", V_QTY, "256Gi"},
    {"max-pvcs", "persistentVolumeClaims", V_COUNT, "20"},
    {"max-storage", "storage", V_QTY, "1Ti"},
    {"max-storage-class", "storageClasses", V_CLASS, NULL},
    {"max-services", "services", V_COUNT, "20"},
    {"max-load-balancers", "loadBalancers", V_COUNT, "0"},
    {"max-node-ports", "nodePorts", V_COUNT, "0"},
    {"default-cpu-request", "defaultCpuRequest", V_QTY, "100m"},
    {"default-memory-request", "defaultMemoryRequest", V_QTY, "128Mi"},
    {"egress", "egress", V_CIDRS, "0.0.0.0/0 ::/0"},
    {"egress-except", "egressExcept", V_CIDRS,
     "10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 100.64.0.0/10 169.254.0.0/16 127.0.0.0/8 "
     "fc00::/7 fe80::/10"},
};

const struct option hostquota_options[] = {
    {"max-pods", required_argument, NULL, HOSTQUOTA_OPT},
    {"max-cpu", required_argument, NULL, HOSTQUOTA_OPT},
    {"max-memory", required_argument, NULL, HOSTQUOTA_OPT},
    {"max-pvcs", required_argument, NULL, HOSTQUOTA_OPT},
    {"max-storage", required_argument, NULL, HOSTQUOTA_OPT},
    {"max-storage-class", required_argument, NULL, HOSTQUOTA_OPT},
    {"max-services", required_argument, NULL, HOSTQUOTA_OPT},
    {"max-load-balancers", required_argument, NULL, HOSTQUOTA_OPT},
    {"max-node-ports", required_argument, NULL, HOSTQUOTA_OPT},
    {"default-cpu-request", required_argument, NULL, HOSTQUOTA_OPT},
    {"default-memory-request", required_argument, NULL, HOSTQUOTA_OPT},
    {"egress", required_argument, NULL, HOSTQUOTA_OPT},
    {"egress-except", required_argument, NULL, HOSTQUOTA_OPT},
    {NULL, 0, NULL, 0},
};

/* MIG profiles (A100 40GB and 80GB, H100 80GB) and how many of each one
 * GPU holds. The media-extension profiles ("1g.10gb+me") are left out: a
 * '+' is no part of a qualified name, so kube's quota validation
 * (ValidateResourceQuotaResourceName) refuses such a key. */
static const struct {
	const char *profile;
	int per_gpu;
} mig[] = {
    {"1g.5gb", 7},  {"1g.10gb", 7}, {"1g.20gb", 4}, {"2g.10gb", 3}, {"2g.20gb", 3}, {"3g.20gb", 2},
    {"3g.40gb", 2}, {"4g.20gb", 1}, {"4g.40gb", 1}, {"7g.40gb", 1}, {"7g.80gb", 1},
};

static bool unlimited(const char *v)
{
	return strcmp(v, "-1") == 0 || strcmp(v, "none") == 0 || strcmp(v, "unlimited") == 0;
}

static int count_value(const char *v, json_t **out)
{
	char *end;
	long n = strtol(v, &end, 10);
	if (!*v || *end || n < 0 || n > 1000000000L)
		return -EINVAL;
	*out = json_integer(n);
	return 0;
}

static int qty_value(const char *v, json_t **out)
{
	int64_t m;
	if (policy_quantity_milli(v, &m) < 0 || m < 0)
		return -EINVAL;
	*out = json_string(v);
	return 0;
}

/* The value of one flag: a new reference, json null for unlimited. */
static int value_of(const struct setting *s, const char *v, json_t **out)
{
	if (s->type != V_CIDRS && unlimited(v) && strcmp(s->key, "defaultCpuRequest") != 0 &&
	    strcmp(s->key, "defaultMemoryRequest") != 0) {
		*out = json_null();
		return 0;
	}
	return s->type == V_COUNT ? count_value(v, out) : qty_value(v, out);
}

/* CLASS=QUANTITY[/CLAIMS] into limits.storageClasses. */
static int class_flag(json_t *limits, const char *v, char *err, size_t len)
{
	const char *eq = strchr(v, '=');
	char cls[254], qty[64];
	if (!eq || (size_t)(eq - v) >= sizeof(cls) || eq == v)
		return kb_errf(err, len, -EINVAL, "--max-storage-class wants CLASS=SIZE[/CLAIMS]");
	snprintf(cls, sizeof(cls), "%.*s", (int)(eq - v), v);
	const char *slash = strchr(eq + 1, '/');
	snprintf(qty, sizeof(qty), "%.*s", slash ? (int)(slash - eq - 1) : (int)strlen(eq + 1),
		 eq + 1);
	json_t *q = NULL, *n = NULL;
	for (const char *p = cls; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= '0' && *p <= '9') && *p != '-' &&
		    *p != '.')
			return kb_errf(err, len, -EINVAL, "--max-storage-class: bad class %s", cls);
	if (qty_value(qty, &q) < 0 || (slash && count_value(slash + 1, &n) < 0)) {
		json_decref(q);
		return kb_errf(err, len, -EINVAL, "--max-storage-class %s: bad size or count", v);
	}
	json_t *all = json_object_get(limits, "storageClasses");
	if (!json_is_object(all)) {
		all = json_object();
		json_object_set_new(limits, "storageClasses", all);
	}
	json_t *c = json_pack("{s:o}", "storage", q);
	if (n)
		json_object_set_new(c, "claims", n);
	json_object_set_new(all, cls, c);
	return 0;
}

/* Appends CIDR v to limits[key] (a list: each flag adds one; "none" makes
 * it empty). */
static int cidr_flag(json_t *limits, const struct setting *s, const char *v, char *err, size_t len)
{
	json_t *list = json_object_get(limits, s->key);
	if (!json_is_array(list)) {
		list = json_array();
		json_object_set_new(limits, s->key, list);
	}
	if (strcmp(v, "none") == 0)
		return 0;
	if (!syncer_cidr_valid(v))
		return kb_errf(err, len, -EINVAL,
			       "--%s %s: not a CIDR with its host bits zero (10.0.0.0/8, fd00::/8)",
			       s->flag, v);
	json_array_append_new(list, json_string(v));
	return 0;
}

int hostquota_flag(json_t *limits, const char *flag, const char *value, char *err, size_t len)
{
	for (size_t i = 0; i < KB_ARRAY_SIZE(settings); i++) {
		const struct setting *s = &settings[i];
		if (strcmp(flag, s->flag) != 0)
			continue;
		if (s->type == V_CLASS)
			return class_flag(limits, value, err, len);
		if (s->type == V_CIDRS)
			return cidr_flag(limits, s, value, err, len);
		json_t *v = NULL;
		if (value_of(s, value, &v) < 0)
			return kb_errf(err, len, -EINVAL, "--%s wants %s, not %s", flag,
				       s->type == V_COUNT ? "a whole number (-1: unlimited)"
							  : "a quantity (500m, 64, 256Gi)",
				       value);
		json_object_set_new(limits, s->key, v);
		return 0;
	}
	return kb_errf(err, len, -EINVAL, "unknown flag --%s", flag);
}

static json_t *default_of(const struct setting *s)
{
	if (!s->dflt)
		return s->type == V_CLASS ? json_object() : json_null();
	if (s->type == V_COUNT)
		return json_integer(strtol(s->dflt, NULL, 10));
	if (s->type == V_QTY)
		return json_string(s->dflt);
	json_t *list = json_array();
	char buf[512], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", s->dflt);
	for (char *c = strtok_r(buf, " ", &save); c; c = strtok_r(NULL, " ", &save))
		json_array_append_new(list, json_string(c));
	return list;
}

json_t *hostquota_settings(const struct tenant *t)
{
	json_t *o = t->host_limits[0] ? json_loads(t->host_limits, 0, NULL) : NULL;
	if (!json_is_object(o)) {
		json_decref(o);
		o = json_object();
	}
	for (size_t i = 0; i < KB_ARRAY_SIZE(settings); i++)
		if (!json_object_get(o, settings[i].key))
			json_object_set_new(o, settings[i].key, default_of(&settings[i]));
	json_object_set_new(o, "gpus", t->gpus < 0 ? json_null() : json_integer(t->gpus));
	return o;
}

/* ---- the objects ----------------------------------------------------------------- */

static json_t *meta(const struct tenant *t, const char *suffix)
{
	char name[128];
	snprintf(name, sizeof(name), "kubicle-%s%s", t->name, suffix);
	return json_pack("{s:s,s:s,s:{s:s,s:s}}", "name", name, "namespace", t->host_namespace,
			 "labels", LABEL, t->name, "app.kubernetes.io/managed-by", "kubicle");
}

/* hard[key] = the setting's value as a quantity string, unless unlimited. */
static void hard_set(json_t *hard, const char *key, const json_t *v)
{
	char buf[64];
	if (json_is_integer(v)) {
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
		json_object_set_new(hard, key, json_string(buf));
	} else if (json_is_string(v)) {
		json_object_set_new(hard, key, json_string(json_string_value(v)));
	}
}

static void hard_count(json_t *hard, const char *key, long long n)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%lld", n);
	json_object_set_new(hard, key, json_string(buf));
}

static void gpu_hard(json_t *hard, long long g)
{
	char key[128];
	hard_count(hard, "requests.nvidia.com/gpu", g);
	hard_count(hard, "requests.amd.com/gpu", g);
	hard_count(hard, "requests.volcano.sh/vgpu-number", g);
	hard_count(hard, "requests.nvidia.com/gpucores", 100 * g);
	for (size_t i = 0; i < KB_ARRAY_SIZE(mig); i++) {
		snprintf(key, sizeof(key), "requests.nvidia.com/mig-%s", mig[i].profile);
		hard_count(hard, key, g * mig[i].per_gpu);
	}
}

static json_t *quota_obj(const struct tenant *t, const json_t *s)
{
	json_t *hard = json_object();
	hard_set(hard, "pods", json_object_get(s, "pods"));
	hard_set(hard, "requests.cpu", json_object_get(s, "cpu"));
	hard_set(hard, "requests.memory", json_object_get(s, "memory"));
	hard_set(hard, "persistentvolumeclaims", json_object_get(s, "persistentVolumeClaims"));
	hard_set(hard, "requests.storage", json_object_get(s, "storage"));
	hard_set(hard, "services", json_object_get(s, "services"));
	hard_set(hard, "services.loadbalancers", json_object_get(s, "loadBalancers"));
	hard_set(hard, "services.nodeports", json_object_get(s, "nodePorts"));
	const char *cls;
	json_t *c;
	json_object_foreach ((json_t *)json_object_get(s, "storageClasses"), cls, c) {
		char key[400];
		snprintf(key, sizeof(key), "%s.storageclass.storage.k8s.io/requests.storage", cls);
		hard_set(hard, key, json_object_get(c, "storage"));
		snprintf(key, sizeof(key), "%s.storageclass.storage.k8s.io/persistentvolumeclaims",
			 cls);
		hard_set(hard, key, json_object_get(c, "claims"));
	}
	if (json_is_integer(json_object_get(s, "gpus")))
		gpu_hard(hard, json_integer_value(json_object_get(s, "gpus")));
	return json_pack("{s:s,s:s,s:o,s:{s:o}}", "apiVersion", "v1", "kind", "ResourceQuota",
			 "metadata", meta(t, ""), "spec", "hard", hard);
}

/* Default requests: kube's quota admission refuses a pod without a
 * request of a resource the quota limits (requests.cpu, requests.memory),
 * and kube's LimitRanger fills them in before it looks. */
static json_t *limitrange_obj(const struct tenant *t, const json_t *s)
{
	json_t *req = json_object();
	hard_set(req, "cpu", json_object_get(s, "defaultCpuRequest"));
	hard_set(req, "memory", json_object_get(s, "defaultMemoryRequest"));
	return json_pack("{s:s,s:s,s:o,s:{s:[{s:s,s:o}]}}", "apiVersion", "v1", "kind",
			 "LimitRange", "metadata", meta(t, ""), "spec", "limits", "type",
			 "Container", "defaultRequest", req);
}

static json_t *own_pods(const struct tenant *t)
{
	return json_pack("{s:{s:s}}", "matchLabels", LABEL, t->name);
}

/* The tenant server's address as host pods reach it, when it is an IP
 * that is neither loopback nor unspecified (a tenant served from outside
 * the host cluster on a routable address); else NULL (in the cluster,
 * kubicle manifest's Service is in the namespace: the own-pods peer). */
static const char *server_ip(const struct tenant *t, char *buf, size_t len)
{
	const char *a = t->advertise[0] ? t->advertise : NULL;
	if (!a)
		return NULL;
	snprintf(buf, len, "%s", a);
	if (!kb_is_ip(buf) || strcmp(buf, "0.0.0.0") == 0 || strcmp(buf, "::") == 0 ||
	    strncmp(buf, "127.", 4) == 0 || strcmp(buf, "::1") == 0)
		return NULL;
	return buf;
}

/* The tenant's pods that no tenant NetworkPolicy isolates in `dir`
 * ("ingress" or "egress"): the syncer labels each host pod
 * kubicle.dev/<dir>-isolated "true" or "false" (syncer/netpol.c); a pod
 * without the label (an older syncer's) counts as not isolated. */
static json_t *open_pods(const struct tenant *t, const char *dir)
{
	char key[64];
	snprintf(key, sizeof(key), "kubicle.dev/%s-isolated", dir);
	return json_pack("{s:{s:s},s:[{s:s,s:s,s:[s]}]}", "matchLabels", LABEL, t->name,
			 "matchExpressions", "key", key, "operator", "NotIn", "values", "true");
}

/* Every pod of the tenant: isolated both ways; egress to what it needs
 * whatever its own policies say (the host's DNS, its tenant server). */
static json_t *isolation_obj(const struct tenant *t)
{
	json_t *dns_ports = json_pack("[{s:s,s:i},{s:s,s:i}]", "protocol", "UDP", "port", 53,
				      "protocol", "TCP", "port", 53);
	/* the host's DNS: kube-dns pods of kube-system (CoreDNS keeps kube-dns's
	 * k8s-app label), the namespace by its immutable name label */
	json_t *host_dns =
	    json_pack("{s:[{s:{s:{s:s}},s:{s:{s:s}}}],s:o}", "to", "namespaceSelector",
		      "matchLabels", "kubernetes.io/metadata.name", "kube-system", "podSelector",
		      "matchLabels", "k8s-app", "kube-dns", "ports", dns_ports);
	json_t *egress = json_pack("[o]", host_dns);
	char ip[128], cidr[140];
	if (server_ip(t, ip, sizeof(ip))) {
		snprintf(cidr, sizeof(cidr), "%s/%d", ip, strchr(ip, ':') ? 128 : 32);
		json_array_append_new(egress,
				      json_pack("{s:[{s:{s:s}}]}", "to", "ipBlock", "cidr", cidr));
	}
	return json_pack("{s:s,s:s,s:o,s:{s:o,s:[s,s],s:o}}", "apiVersion", "networking.k8s.io/v1",
			 "kind", "NetworkPolicy", "metadata", meta(t, "-isolation"), "spec",
			 "podSelector", own_pods(t), "policyTypes", "Ingress", "Egress", "egress",
			 egress);
}

/* Pods no tenant policy isolates for ingress: from the tenant's pods. */
static json_t *ingress_obj(const struct tenant *t)
{
	return json_pack("{s:s,s:s,s:o,s:{s:o,s:[s],s:[{s:[{s:o}]}]}}", "apiVersion",
			 "networking.k8s.io/v1", "kind", "NetworkPolicy", "metadata",
			 meta(t, "-ingress"), "spec", "podSelector", open_pods(t, "ingress"),
			 "policyTypes", "Ingress", "ingress", "from", "podSelector", own_pods(t));
}

/* Pods no tenant policy isolates for egress: to the tenant's pods and the
 * allowed CIDRs, each with the excepts it strictly contains. The syncer
 * reads the ipBlocks here as what the platform allows (syncer/netpol.c). */
static json_t *egress_obj(const struct tenant *t, const json_t *s)
{
	json_t *to = json_array(), *c, *e;
	size_t i, j;
	json_array_append_new(to, json_pack("{s:o}", "podSelector", own_pods(t)));
	json_array_foreach (json_object_get(s, "egress"), i, c) {
		json_t *block = json_pack("{s:O}", "cidr", c), *ex = json_array();
		json_array_foreach (json_object_get(s, "egressExcept"), j, e) {
			if (syncer_cidr_within(json_string_value(e), json_string_value(c), true))
				json_array_append(ex, e);
		}
		if (json_array_size(ex))
			json_object_set(block, "except", ex);
		json_decref(ex);
		json_array_append_new(to, json_pack("{s:o}", "ipBlock", block));
	}
	return json_pack("{s:s,s:s,s:o,s:{s:o,s:[s],s:[{s:o}]}}", "apiVersion",
			 "networking.k8s.io/v1", "kind", "NetworkPolicy", "metadata",
			 meta(t, "-egress"), "spec", "podSelector", open_pods(t, "egress"),
			 "policyTypes", "Egress", "egress", "to", to);
}

static void add(json_t *list, const char *api, const struct tenant *t, const char *plural,
		json_t *obj)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/namespaces/%s/%s", api, t->host_namespace, plural);
	const char *name =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	json_array_append_new(
	    list, json_pack("{s:s,s:s,s:o}", "path", path, "name", name, "object", obj));
}

json_t *hostquota_objects(const struct tenant *t)
{
	json_t *s = hostquota_settings(t), *out = json_array();
	add(out, "/api/v1", t, "limitranges", limitrange_obj(t, s));
	add(out, "/api/v1", t, "resourcequotas", quota_obj(t, s));
	add(out, "/apis/networking.k8s.io/v1", t, "networkpolicies", isolation_obj(t));
	add(out, "/apis/networking.k8s.io/v1", t, "networkpolicies", ingress_obj(t));
	add(out, "/apis/networking.k8s.io/v1", t, "networkpolicies", egress_obj(t, s));
	json_decref(s);
	return out;
}

int hostquota_setup(hostapi_t *h, const struct tenant *t, char *err, size_t len)
{
	json_t *objs = hostquota_objects(t), *o;
	size_t i;
	int rc = 0;
	json_array_foreach (objs, i, o) {
		bool made = false;
		rc =
		    host_ensure(h, t, json_string_value(json_object_get(o, "path")),
				json_string_value(json_object_get(o, "name")),
				json_incref(json_object_get(o, "object")), "spec", &made, err, len);
		if (rc < 0)
			break;
	}
	json_decref(objs);
	return rc;
}
