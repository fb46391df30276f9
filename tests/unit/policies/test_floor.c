/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for the host floor (policies/floor.c and policy_admit's floor): a
 * table of hostile pods, one host-relevant field each, against no policy,
 * the shipped policies and policies that give nodes, runtimes, priority
 * classes and node pools; priority classes by origin; policy parsing of the
 * new fields.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policies/policies.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

#define BASELINE 1

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j != NULL, "bad json: %s: %s", s, e.text);
	return j;
}

static const char gives_yaml[] = "name: gives\n"
				 "podSecurity: baseline\n"
				 "nodeSelector: {pool: gpu}\n"
				 "nodeLabels: [topology.kubernetes.io/zone]\n"
				 "tolerations:\n"
				 "  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
				 "runtimeClasses: [nvidia]\n"
				 "priorityClasses: [train, system-cluster-critical]\n"
				 "nodePools: [pool-a]\n"
				 "nvidiaEnv: allow\n"
				 "volumeTypes: [nfs]\n"
				 "csiDrivers: [secrets-store.csi.k8s.io]\n";
static const char weak_yaml[] = "name: weak\npodSecurity: privileged\nhostFields: allow\n";

static policy_t *get(const char *which)
{
	policy_t *p = NULL;
	char err[256] = "";
	int rc = 0;
	if (!which)
		return NULL;
	if (strcmp(which, "gives") == 0)
		rc = policy_parse(gives_yaml, strlen(gives_yaml), "gives", &p, err, sizeof(err));
	else if (strcmp(which, "weak") == 0)
		rc = policy_parse(weak_yaml, strlen(weak_yaml), "weak", &p, err, sizeof(err));
	else
		rc = policy_load(which, &p, err, sizeof(err));
	ck_assert_msg(rc == 0, "policy %s: %s", which, err);
	return p;
}

/* A pod meeting "restricted"; meta_extra inside metadata, spec_extra in
 * spec, ctr_extra in the container. */
#define SAFE_SC                                                                          \
	"\"securityContext\":{\"allowPrivilegeEscalation\":false,\"runAsNonRoot\":true," \
	"\"seccompProfile\":{\"type\":\"RuntimeDefault\"},\"capabilities\":{\"drop\":[\"ALL\"]}}"
#define POD(meta_extra, spec_extra, ctr_extra)                               \
	"{\"metadata\":{\"name\":\"p\"" meta_extra "},\"spec\":{" spec_extra \
	"\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"," SAFE_SC ctr_extra "}]}}"
#define ANN(k, v) ",\"annotations\":{\"" k "\":\"" v "\"}"
#define LBL(k, v) ",\"labels\":{\"" k "\":\"" v "\"}"
#define AFF(term)                                                                             \
	"\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
	"{\"nodeSelectorTerms\":[" term "]}}},"

struct fcase {
	const char *policy; /* NULL: none; "gives", "weak" or a shipped name */
	int floor;
	const char *obj;
	bool ok;
	const char *want; /* substring of the refusal */
};

static const struct fcase cases[] = {
    /* Pod Security: the floor is baseline without a policy, and under a weak one */
    {NULL, BASELINE, POD("", "", ""), true, NULL},
    {NULL, BASELINE, POD("", "", ",\"securityContext\":{\"privileged\":true}"), false,
     "host floor: violates PodSecurity \"baseline:latest\": privileged (container \"c\""},
    {NULL, BASELINE,
     POD("", "", ",\"securityContext\":{\"capabilities\":{\"add\":[\"SYS_ADMIN\"]}}"), false,
     "non-default capabilities (container \"c\" must not include \"SYS_ADMIN\""},
    {NULL, BASELINE, POD("", "", ",\"securityContext\":{\"procMount\":\"Unmasked\"}"), false,
     "procMount"},
    {NULL, BASELINE,
     POD("", "\"securityContext\":{\"seccompProfile\":{\"type\":\"Unconfined\"}},", ""), false,
     "seccompProfile (pod must not set"},
    {NULL, BASELINE,
     POD("", "", ",\"securityContext\":{\"appArmorProfile\":{\"type\":\"Unconfined\"}}"), false,
     "appArmorProfile"},
    {NULL, BASELINE,
     POD("",
	 "\"securityContext\":{\"sysctls\":[{\"name\":\"kernel.core_pattern\",\"value\":\"x\"}]},",
	 ""),
     false, "forbidden sysctls (kernel.core_pattern)"},
    {NULL, BASELINE, POD("", "\"hostPID\":true,", ""), false, "hostPID=true"},
    {NULL, BASELINE, POD("", "\"volumes\":[{\"name\":\"h\",\"hostPath\":{\"path\":\"/\"}}],", ""),
     false, "hostPath volumes (volume \"h\")"},
    {NULL, 0, POD("", "", ",\"securityContext\":{\"privileged\":true}"), true, NULL},
    {NULL, POLICY_FLOOR_NONE, POD("", "\"runtimeClassName\":\"x\",", ""), true, NULL},
    {"weak", BASELINE, POD("", "\"hostNetwork\":true,", ""), false,
     "host floor: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"},
    {"weak", 0, POD("", "\"hostNetwork\":true,", ""), true, NULL},
    /* a policy stricter than the floor answers in its own words */
    {"untrusted", BASELINE, POD("", "\"hostIPC\":true,", ""), false,
     "policy untrusted: violates PodSecurity \"restricted:latest\": host namespaces"},
    /* priority classes */
    {NULL, BASELINE, POD("", "\"priorityClassName\":\"system-node-critical\",", ""), false,
     "host floor: spec.priorityClassName: \"system-node-critical\" is a host priority class not "
     "allowed; allowed: every host class but system-*"},
    {"untrusted", 0, POD("", "\"priorityClassName\":\"system-cluster-critical\",", ""), false,
     "policy untrusted: spec.priorityClassName"},
    {"gives", BASELINE, POD("", "\"priorityClassName\":\"system-cluster-critical\",", ""), true,
     NULL},
    {"gives", BASELINE, POD("", "\"priorityClassName\":\"system-node-critical\",", ""), false,
     "allowed: train, system-cluster-critical"},
    {NULL, BASELINE, POD("", "\"priorityClassName\":\"train\",", ""), true, NULL},
    /* node targeting */
    {NULL, BASELINE, POD("", "\"nodeName\":\"gpu-7\",", ""), false,
     "spec.nodeName: node targeting by name is not allowed"},
    {NULL, BASELINE, POD("", "\"nodeSelector\":{\"kubernetes.io/hostname\":\"gpu-7\"},", ""), false,
     "spec.nodeSelector[kubernetes.io/hostname]: node label \"kubernetes.io/hostname\" is not "
     "allowed to select nodes; allowed: kubernetes.io/os, kubernetes.io/arch"},
    {NULL, BASELINE, POD("", "\"nodeSelector\":{\"kubernetes.io/arch\":\"amd64\"},", ""), true,
     NULL},
    {"gives", BASELINE, POD("", "\"nodeSelector\":{\"pool\":\"cpu\"},", ""), true, NULL},
    {"gives", BASELINE, POD("", "\"nodeSelector\":{\"topology.kubernetes.io/zone\":\"a\"},", ""),
     true, NULL},
    {"gives", BASELINE, POD("", "\"nodeSelector\":{\"kubernetes.io/os\":\"linux\"},", ""), false,
     "allowed: topology.kubernetes.io/zone and the policy's nodeSelector"},
    {NULL, BASELINE,
     POD("",
	 AFF("{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}"
	     "]}"),
	 ""),
     false,
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
     "[0].matchFields[0]: node targeting by name is not allowed"},
    {NULL, BASELINE,
     POD("",
	 AFF("{\"matchExpressions\":[{\"key\":\"node-role.kubernetes.io/control-plane\","
	     "\"operator\":\"Exists\"}]}"),
	 ""),
     false, "nodeSelectorTerms[0].matchExpressions[0].key: node label"},
    {NULL, BASELINE,
     POD("",
	 "\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":[{"
	 "\"weight\":1,\"preference\":{\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\","
	 "\"operator\":\"In\",\"values\":[\"n\"]}]}}]}},",
	 ""),
     false, "preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0]"},
    /* tolerations */
    {NULL, BASELINE, POD("", "\"tolerations\":[{\"operator\":\"Exists\"}],", ""), false,
     "spec.tolerations[0]: toleration of every taint is not allowed"},
    {NULL, BASELINE,
     POD("",
	 "\"tolerations\":[{\"key\":\"node-role.kubernetes.io/control-plane\",\"operator\":"
	 "\"Exists\",\"effect\":\"NoSchedule\"}],",
	 ""),
     false, "toleration of taint \"node-role.kubernetes.io/control-plane\" is not allowed"},
    {NULL, BASELINE,
     POD("",
	 "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exists\","
	 "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],",
	 ""),
     true, NULL},
    {"gives", BASELINE,
     POD("",
	 "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Equal\",\"value\":\"x\","
	 "\"effect\":\"NoSchedule\"}],",
	 ""),
     true, NULL},
    {"gives", BASELINE,
     POD("", "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}],", ""), false,
     "toleration of taint \"nvidia.com/gpu\""},
    /* runtime classes */
    {NULL, BASELINE, POD("", "\"runtimeClassName\":\"nvidia\",", ""), false,
     "host floor: spec.runtimeClassName: runtime class \"nvidia\" is not allowed; allowed: none"},
    {"gives", BASELINE, POD("", "\"runtimeClassName\":\"nvidia\",", ""), true, NULL},
    {"gives", BASELINE, POD("", "\"runtimeClassName\":\"kata\",", ""), false, "allowed: nvidia"},
    /* scheduler keys */
    {NULL, BASELINE, POD(LBL("kai.scheduler/node-pool", "pool-b"), "", ""), false,
     "metadata.labels[kai.scheduler/node-pool]: node pool \"pool-b\" is not allowed; allowed: "
     "none"},
    {"gives", BASELINE, POD(LBL("kai.scheduler/node-pool", "pool-a"), "", ""), true, NULL},
    {NULL, BASELINE, POD(LBL("runai-gpu-group", "g1"), "", ""), false,
     "metadata.labels[runai-gpu-group]: set by the scheduler on the host, not by a tenant"},
    {NULL, BASELINE, POD(LBL("runai-gpu-group/g2", "g2"), "", ""), false,
     "metadata.labels[runai-gpu-group/g2]"},
    {NULL, BASELINE, POD(LBL("app", "kai-resource-reservation"), "", ""), false,
     "marks KAI's own utility pods"},
    {NULL, BASELINE, POD(ANN("received-resource-type", "Regular"), "", ""), false,
     "metadata.annotations[received-resource-type]"},
    {NULL, BASELINE, POD(ANN("hami.io/vgpu-devices-to-allocate", "GPU-1"), "", ""), false,
     "metadata.annotations[hami.io/vgpu-devices-to-allocate]"},
    {NULL, BASELINE, POD(ANN("nvidia.com/use-gpuuuid", "GPU-1"), "", ""), false,
     "metadata.annotations[nvidia.com/use-gpuuuid]"},
    {NULL, BASELINE, POD(ANN("runai/shared-gpu-configmap", "x"), "", ""), false,
     "metadata.annotations[runai/shared-gpu-configmap]"},
    {NULL, BASELINE, POD(ANN("gpu-fraction-container-name", "c"), "", ""), true, NULL},
    {NULL, BASELINE, POD(ANN("gpu-fraction-container-name", "other"), "", ""), false,
     "metadata.annotations[gpu-fraction-container-name]: \"other\" is not a container of the pod"},
    {"untrusted", BASELINE, POD(ANN("gpu-fraction-container-name", "c"), "", ""), false,
     "gpu-fraction-container-name is not allowed; request whole nvidia.com/gpu"},
    {"untrusted", BASELINE, POD(ANN("mps", "true"), "", ""), false, "mps is not allowed"},
    /* NVIDIA environment */
    {NULL, BASELINE,
     POD("", "", ",\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"all\"}]"), false,
     "spec.containers[0].env[0]: NVIDIA_VISIBLE_DEVICES is read by the NVIDIA container runtime"},
    {NULL, BASELINE,
     POD("", "", ",\"env\":[{\"name\":\"NVIDIA_DRIVER_CAPABILITIES\",\"value\":\"all\"}]"), false,
     "NVIDIA_DRIVER_CAPABILITIES"},
    {NULL, BASELINE,
     POD("", "", ",\"envFrom\":[{\"prefix\":\"NV\",\"configMapRef\":{\"name\":\"m\"}}]"), false,
     "spec.containers[0].envFrom[0].prefix: \"NV\" would make NVIDIA_* variables"},
    {NULL, BASELINE,
     POD("", "", ",\"envFrom\":[{\"prefix\":\"APP_\",\"configMapRef\":{\"name\":\"m\"}}]"), true,
     NULL},
    {"gives", BASELINE,
     POD("", "", ",\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"all\"}]"), true, NULL},
    /* KAI's priorityClassName label */
    {NULL, BASELINE, POD(LBL("priorityClassName", "system-node-critical"), "", ""), false,
     "host floor: metadata.labels[priorityClassName]: KAI takes \"system-node-critical\" for the "
     "pod's priority class, a host class not allowed; allowed: every host class but system-*"},
    {NULL, BASELINE, POD(LBL("priorityClassName", "train"), "", ""), true, NULL},
    {"gives", BASELINE, POD(LBL("priorityClassName", "inference"), "", ""), false,
     "allowed: train, system-cluster-critical"},
    {NULL, BASELINE, POD(LBL("kueue.x-k8s.io/priority-class", "high"), "", ""), false,
     "metadata.labels[kueue.x-k8s.io/priority-class]: Kueue's WorkloadPriorityClass \"high\" is "
     "a host object not allowed; allowed: none"},
    {"gives", BASELINE, POD(LBL("kueue.x-k8s.io/priority-class", "train"), "", ""), true, NULL},
    /* annotations the node's runtime or CNI obeys */
    {NULL, BASELINE, POD(ANN("cdi.k8s.io/gpu", "nvidia.com/gpu=all"), "", ""), false,
     "host floor: metadata.annotations[cdi.k8s.io/gpu]: read by the node's container runtime or "
     "network plugin; not allowed"},
    {NULL, BASELINE, POD(ANN("k8s.v1.cni.cncf.io/networks", "default/host-net"), "", ""), false,
     "metadata.annotations[k8s.v1.cni.cncf.io/networks]"},
    {NULL, BASELINE, POD(ANN("io.kubernetes.cri-o.Devices", "/dev/nvidia0"), "", ""), false,
     "metadata.annotations[io.kubernetes.cri-o.Devices]"},
    /* kube: Bidirectional mount propagation needs a privileged container */
    {NULL, BASELINE,
     POD("", "\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}}],",
	 ",\"volumeMounts\":[{\"name\":\"e\",\"mountPath\":\"/e\",\"mountPropagation\":"
	 "\"Bidirectional\"}]"),
     false,
     "spec.containers[0].volumeMounts[0].mountPropagation: Bidirectional mount propagation is "
     "available only to privileged containers"},
    {NULL, BASELINE,
     POD("", "\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}}],",
	 ",\"volumeMounts\":[{\"name\":\"e\",\"mountPath\":\"/e\",\"mountPropagation\":"
	 "\"HostToContainer\"}]"),
     true, NULL},
    /* probes and lifecycle hooks aimed at another host (baseline since 1.34) */
    {NULL, BASELINE,
     POD("", "",
	 ",\"livenessProbe\":{\"httpGet\":{\"host\":\"169.254.169.254\",\"path\":\"/"
	 "\",\"port\":80}}"),
     false,
     "probe or lifecycle host (container \"c\" must not set "
     "livenessProbe.httpGet.host=\"169.254.169.254\")"},
    {NULL, BASELINE,
     POD("", "",
	 ",\"lifecycle\":{\"preStop\":{\"tcpSocket\":{\"host\":\"10.0.0.1\",\"port\":22}}}"),
     false, "lifecycle.preStop.tcpSocket.host=\"10.0.0.1\""},
    {NULL, BASELINE, POD("", "", ",\"readinessProbe\":{\"httpGet\":{\"path\":\"/\",\"port\":80}}"),
     true, NULL},
    /* volumes the node mounts with its own identity */
    {NULL, BASELINE,
     POD("", "\"volumes\":[{\"name\":\"n\",\"nfs\":{\"server\":\"10.0.0.5\",\"path\":\"/\"}}],",
	 ""),
     false, "spec.volumes[0].nfs: the node mounts it with its own identity; allowed: none"},
    {NULL, BASELINE,
     POD("", "\"volumes\":[{\"name\":\"g\",\"gitRepo\":{\"repository\":\"x\"}}],", ""), false,
     "host floor: spec.volumes[0].gitRepo: no policy allows it: Kubernetes 1.33 disables it"},
    {"gives", BASELINE,
     POD("", "\"volumes\":[{\"name\":\"d\",\"awsElasticBlockStore\":{\"volumeID\":\"v\"}}],", ""),
     false, "policy gives: spec.volumes[0].awsElasticBlockStore: no policy allows it"},
    /* DRA: refused for every tenant, in one place and one wording */
    {NULL, BASELINE,
     POD("", "\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"c\"}],",
	 ",\"resources\":{\"claims\":[{\"name\":\"g\"}]}"),
     false,
     "host floor: spec.resourceClaims[0]: dynamic resource allocation is not allowed: the shared "
     "host cluster has no copy of this cluster's ResourceClaims and ResourceClaimTemplates, and "
     "devices claimed through them are not counted by the policy, spec.containers[0].resources."
     "claims: dynamic resource allocation is not allowed"},
    {"gives", BASELINE,
     POD("", "\"volumes\":[{\"name\":\"n\",\"nfs\":{\"server\":\"10.0.0.5\",\"path\":\"/\"}}],",
	 ""),
     true, NULL},
    {NULL, BASELINE,
     POD("", "\"volumes\":[{\"name\":\"s\",\"csi\":{\"driver\":\"secrets-store.csi.k8s.io\"}}],",
	 ""),
     false,
     "spec.volumes[0].csi.driver: inline volumes of CSI driver \"secrets-store.csi.k8s.io\" are "
     "not allowed; allowed: none"},
    {"gives", BASELINE,
     POD("", "\"volumes\":[{\"name\":\"s\",\"csi\":{\"driver\":\"secrets-store.csi.k8s.io\"}}],",
	 ""),
     true, NULL},
    {NULL, BASELINE,
     POD("",
	 "\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}},{\"name\":\"p\",\"persistentVolumeClaim\":{"
	 "\"claimName\":\"d\"}},{\"name\":\"c\",\"configMap\":{\"name\":\"m\"}}],",
	 ""),
     true, NULL},
    /* pod affinity to the host's namespaces */
    {NULL, BASELINE,
     POD("",
	 "\"affinity\":{\"podAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
	 "\"topologyKey\":\"kubernetes.io/hostname\",\"namespaceSelector\":{},"
	 "\"labelSelector\":{\"matchLabels\":{\"app\":\"victim\"}}}]}},",
	 ""),
     false,
     "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]."
     "namespaceSelector: pods of other namespaces are the host's; not allowed"},
    {NULL, BASELINE,
     POD("",
	 "\"affinity\":{\"podAntiAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":"
	 "[{\"weight\":1,\"podAffinityTerm\":{\"topologyKey\":\"kubernetes.io/hostname\","
	 "\"namespaces\":[\"kube-system\"]}}]}},",
	 ""),
     false,
     "podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm."
     "namespaces"},
    {NULL, BASELINE,
     POD("",
	 "\"affinity\":{\"podAntiAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":[{"
	 "\"topologyKey\":\"kubernetes.io/hostname\",\"labelSelector\":{\"matchLabels\":{"
	 "\"app\":\"web\"}}}]}},",
	 ""),
     true, NULL},
};

/* ConfigMap and Secret keys envFrom would make NVIDIA_* variables. */
START_TEST(config_keys)
{
	char msg[1024] = "";
	json_t *cm = J("{\"data\":{\"a\":\"1\",\"NVIDIA_VISIBLE_DEVICES\":\"all\"}}");
	json_t *ok = J("{\"data\":{\"a\":\"1\"}}");
	ck_assert_int_eq(policy_admit(NULL, BASELINE, "ConfigMap", cm, NULL, msg, sizeof(msg)),
			 -EACCES);
	ck_assert_str_eq(msg, "host floor: data[NVIDIA_VISIBLE_DEVICES]: envFrom would make it a "
			      "variable the NVIDIA container runtime obeys; NVIDIA_* keys are not "
			      "allowed");
	ck_assert_int_eq(policy_admit(NULL, BASELINE, "Secret", cm, NULL, msg, sizeof(msg)),
			 -EACCES);
	ck_assert_int_eq(policy_admit(NULL, BASELINE, "ConfigMap", ok, NULL, msg, sizeof(msg)), 0);
	/* a key the stored object had (before the floor) may stay */
	ck_assert_int_eq(policy_admit(NULL, BASELINE, "ConfigMap", cm, cm, msg, sizeof(msg)), 0);
	ck_assert_int_eq(
	    policy_admit(NULL, POLICY_FLOOR_NONE, "ConfigMap", cm, NULL, msg, sizeof(msg)), 0);
	policy_t *g = get("gives");
	ck_assert_int_eq(policy_admit(g, BASELINE, "ConfigMap", cm, NULL, msg, sizeof(msg)), 0);
	policy_free(g);
	policy_t *u = get("untrusted");
	json_t *sec = J("{\"stringData\":{\"NVIDIA_DRIVER_CAPABILITIES\":\"all\"}}");
	ck_assert_int_eq(policy_admit(u, BASELINE, "Secret", sec, NULL, msg, sizeof(msg)), -EACCES);
	ck_assert_ptr_nonnull(
	    strstr(msg, "policy untrusted: stringData[NVIDIA_DRIVER_CAPABILITIES]"));
	policy_free(u);
	json_decref(sec);
	json_decref(ok);
	json_decref(cm);
}
END_TEST

START_TEST(floor_table)
{
	const struct fcase *c = &cases[_i];
	policy_t *p = get(c->policy);
	json_t *obj = J(c->obj);
	char msg[4096] = "";
	int rc = policy_admit(p, c->floor, "Pod", obj, NULL, msg, sizeof(msg));
	if (c->ok) {
		ck_assert_msg(rc == 0, "case %d: refused: %s", _i, msg);
	} else {
		ck_assert_msg(rc == -EACCES, "case %d: admitted", _i);
		ck_assert_msg(strstr(msg, c->want), "case %d: message %s lacks %s", _i, msg,
			      c->want);
	}
	json_decref(obj);
	policy_free(p);
}
END_TEST

/* Pod templates are held to the floor too. */
START_TEST(templates)
{
	json_t *d =
	    J("{\"spec\":{\"template\":" POD("", "\"runtimeClassName\":\"nvidia\",", "") "}}");
	char msg[1024] = "";
	ck_assert_int_eq(policy_admit(NULL, BASELINE, "Deployment", d, NULL, msg, sizeof(msg)),
			 -EACCES);
	ck_assert_ptr_nonnull(strstr(msg, "spec.runtimeClassName"));
	json_decref(d);
}
END_TEST

/* An update: the node the host bound stays; a label added is checked;
 * an unchanged pod passes. */
START_TEST(updates)
{
	json_t *old = J(POD("", "\"nodeName\":\"gpu-7\",", ""));
	json_t *obj = json_deep_copy(old);
	char msg[1024] = "";
	ck_assert_int_eq(policy_admit(NULL, BASELINE, "Pod", obj, old, msg, sizeof(msg)), 0);
	json_object_set_new(json_object_get(obj, "metadata"), "labels",
			    J("{\"runai-gpu-group\":\"g\"}"));
	ck_assert_int_eq(policy_admit(NULL, BASELINE, "Pod", obj, old, msg, sizeof(msg)), -EACCES);
	ck_assert_ptr_nonnull(strstr(msg, "runai-gpu-group"));
	json_object_del(json_object_get(obj, "metadata"), "labels");
	json_object_set_new(json_object_get(obj, "spec"), "nodeName", json_string("gpu-8"));
	msg[0] = '\0';
	ck_assert_int_eq(policy_admit(NULL, BASELINE, "Pod", obj, old, msg, sizeof(msg)), -EACCES);
	ck_assert_ptr_nonnull(strstr(msg, "spec.nodeName"));
	json_decref(obj);
	json_decref(old);
}
END_TEST

START_TEST(priority_classes)
{
	char msg[512];
	policy_t *g = get("gives");
	/* a class only the tenant has does not reach the host */
	ck_assert_int_eq(
	    policy_check_priority_class(NULL, BASELINE, "mine", false, msg, sizeof(msg)), 0);
	ck_assert_int_eq(
	    policy_check_priority_class(NULL, BASELINE, "train", true, msg, sizeof(msg)), 0);
	ck_assert_int_eq(policy_check_priority_class(NULL, BASELINE, "system-node-critical", true,
						     msg, sizeof(msg)),
			 -EACCES);
	ck_assert_str_eq(msg, "host floor: spec.priorityClassName: \"system-node-critical\" is a "
			      "host priority class not allowed; allowed: every host class but "
			      "system-*");
	ck_assert_int_eq(policy_check_priority_class(NULL, POLICY_FLOOR_NONE,
						     "system-node-critical", true, msg,
						     sizeof(msg)),
			 0);
	ck_assert_int_eq(policy_check_priority_class(g, BASELINE, "train", true, msg, sizeof(msg)),
			 0);
	ck_assert_int_eq(
	    policy_check_priority_class(g, BASELINE, "inference", true, msg, sizeof(msg)), -EACCES);
	ck_assert_str_eq(msg,
			 "policy gives: spec.priorityClassName: \"inference\" is a host "
			 "priority class not allowed; allowed: train, system-cluster-critical");
	policy_free(g);
}
END_TEST

START_TEST(parse_fields)
{
	policy_t *p = (policy_t *)1;
	char err[256];
	const char *bad[] = {"runtimeClasses: nvidia\n", "nodeLabels: [\"\"]\n",
			     "priorityClasses: [1, {a: b}]\n", "nvidiaEnv: maybe\n",
			     "nodePools: {a: b}\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(policy_parse(bad[i], strlen(bad[i]), "x", &p, err, sizeof(err)) ==
				  -EINVAL,
			      "accepted %s", bad[i]);
		ck_assert_ptr_null(p);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("floor");
	TCase *tc = tcase_create("floor");
	tcase_add_loop_test(tc, floor_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, templates);
	tcase_add_test(tc, config_keys);
	tcase_add_test(tc, updates);
	tcase_add_test(tc, priority_classes);
	tcase_add_test(tc, parse_fields);
	suite_add_tcase(s, tc);
	return s;
}
