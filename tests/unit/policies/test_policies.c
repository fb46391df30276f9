/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for policies/: the shipped policies (untrusted, trusted, mig) over a
 * table of pods and pod templates written from the Kubernetes Pod Security
 * Standards and the GPU request forms (whole nvidia.com/gpu, KAI gpu-fraction
 * and gpu-memory annotations, HAMi resources, MIG profiles); quota arithmetic
 * with fractions; forced node selector and tolerations; policy parsing.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policies/policies.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j != NULL, "bad json: %s: %s", s, e.text);
	return j;
}

static policy_t *load(const char *name)
{
	policy_t *p = NULL;
	char err[256] = "";
	int rc = policy_load(name, &p, err, sizeof(err));
	ck_assert_msg(rc == 0, "load %s: %d %s", name, rc, err);
	return p;
}

/* A container that meets "restricted". */
#define SAFE_SC                                                                          \
	"\"securityContext\":{\"allowPrivilegeEscalation\":false,\"runAsNonRoot\":true," \
	"\"seccompProfile\":{\"type\":\"RuntimeDefault\"},\"capabilities\":{\"drop\":[\"ALL\"]}}"
#define CTR(extra) "{\"name\":\"c\",\"image\":\"busybox\"," SAFE_SC extra "}"
#define POD(ann, spec_extra, ctr)                                                            \
	"{\"metadata\":{\"name\":\"train\",\"annotations\":{" ann "}},\"spec\":{" spec_extra \
	"\"containers\":[" ctr "]}}"
#define GPU(n) ",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"" n "\"}}"

struct acase {
	const char *policy, *kind, *obj;
	bool ok;
	const char *want; /* substring of the refusal */
};

static const struct acase cases[] = {
    /* GPU modes */
    {"untrusted", "Pod", POD("", "", CTR(GPU("1"))), true, NULL},
    {"untrusted", "Pod", POD("", "", CTR(GPU("2"))), true, NULL},
    {"untrusted", "Pod", POD("\"gpu-fraction\":\"0.5\"", "", CTR("")), false,
     "policy untrusted: gpu-fraction is not allowed; request whole nvidia.com/gpu"},
    {"untrusted", "Pod", POD("\"gpu-memory\":\"2000\"", "", CTR("")), false,
     "gpu-memory is not allowed"},
    {"untrusted", "Pod",
     POD("", "",
	 CTR(",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/"
	     "gpumem\":\"3000\"}}")),
     false, "nvidia.com/gpumem is not allowed; request whole nvidia.com/gpu"},
    {"untrusted", "Pod",
     POD("", "", CTR(",\"resources\":{\"limits\":{\"nvidia.com/mig-1g.10gb\":\"1\"}}")), false,
     "nvidia.com/mig-1g.10gb is not allowed"},
    {"trusted", "Pod", POD("\"gpu-fraction\":\"0.5\"", "", CTR("")), true, NULL},
    {"trusted", "Pod", POD("\"gpu-fraction\":\"1.5\"", "", CTR("")), false,
     "gpu-fraction must be a number strictly between 0 and 1, not \"1.5\""},
    /* KAI's rules (gpu_request_validator.go ValidateGpuRequests) */
    {"trusted", "Pod", POD("\"gpu-fraction\":\"1\"", "", CTR("")), false,
     "gpu-fraction must be a number strictly between 0 and 1, not \"1\""},
    {"trusted", "Pod", POD("\"gpu-fraction\":\"0\"", "", CTR("")), false,
     "gpu-fraction must be a number strictly between 0 and 1"},
    {"trusted", "Pod", POD("\"gpu-fraction\":\"0.5\"", "", CTR(GPU("1"))), false,
     "gpu-fraction cannot be combined with nvidia.com/gpu"},
    {"trusted", "Pod", POD("\"gpu-memory\":\"2000\",\"gpu-fraction\":\"0.5\"", "", CTR("")), false,
     "gpu-memory cannot be combined with gpu-fraction"},
    {"trusted", "Pod", POD("\"gpu-memory\":\"2000\"", "", CTR(GPU("1"))), false,
     "gpu-memory cannot be combined with nvidia.com/gpu"},
    {"trusted", "Pod", POD("\"gpu-memory\":\"1.5\"", "", CTR("")), false,
     "gpu-memory must be a positive integer (MiB), not \"1.5\""},
    {"trusted", "Pod", POD("\"gpu-memory\":\"0\"", "", CTR("")), false,
     "gpu-memory must be a positive integer"},
    {"trusted", "Pod", POD("\"gpu-memory\":\"2000\"", "", CTR("")), true, NULL},
    {"trusted", "Pod",
     POD("\"gpu-fraction\":\"0.5\",\"gpu-fraction-num-devices\":\"0\"", "", CTR("")), false,
     "gpu-fraction-num-devices must be a positive integer, not \"0\""},
    {"trusted", "Pod",
     POD("\"gpu-fraction\":\"0.5\",\"gpu-fraction-num-devices\":\"2\"", "", CTR("")), true, NULL},
    {"trusted", "Pod", POD("\"gpu-fraction-num-devices\":\"2\"", "", CTR("")), false,
     "gpu-fraction-num-devices needs gpu-fraction or gpu-memory"},
    {"trusted", "Pod", POD("\"mps\":\"true\"", "", CTR(GPU("1"))), false,
     "mps needs gpu-fraction or gpu-memory"},
    {"untrusted", "Pod", POD("\"gpu-fraction-num-devices\":\"2\"", "", CTR(GPU("1"))), false,
     "gpu-fraction-num-devices is not allowed; request whole nvidia.com/gpu"},
    /* other accelerators: refused unless the policy lists them */
    {"untrusted", "Pod", POD("", "", CTR(",\"resources\":{\"limits\":{\"amd.com/gpu\":\"1\"}}")),
     false,
     "policy untrusted: amd.com/gpu is not allowed; an extended resource must be listed in the "
     "policy's extendedResources"},
    {"trusted", "Pod",
     POD("", "", CTR(",\"resources\":{\"limits\":{\"nvidia.com/gpu.shared\":\"1\"}}")), false,
     "nvidia.com/gpu.shared is not allowed"},
    {"trusted", "Pod", POD("", "\"overhead\":{\"habana.ai/gaudi\":\"1\"},", CTR("")), false,
     "habana.ai/gaudi is not allowed"},
    {"trusted", "Pod",
     POD("", "\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"t\"}],",
	 CTR("")),
     false, "policy trusted: spec.resourceClaims[0]: dynamic resource allocation is not allowed"},
    {"untrusted", "Pod",
     POD("", "",
	 CTR(",\"resources\":{\"limits\":{\"cpu\":\"1\",\"hugepages-2Mi\":\"2Mi\","
	     "\"example.kubernetes.io/x\":\"1\"}}")),
     true, NULL},
    {"trusted", "Pod",
     POD("", "",
	 CTR(",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/"
	     "gpucores\":\"30\"}}")),
     true, NULL},
    {"trusted", "Pod",
     POD("", "", CTR(",\"resources\":{\"limits\":{\"nvidia.com/mig-1g.10gb\":\"1\"}}")), false,
     "MIG profiles are not allowed"},
    {"mig", "Pod",
     POD("", "", CTR(",\"resources\":{\"limits\":{\"nvidia.com/mig-1g.10gb\":\"1\"}}")), true,
     NULL},
    {"mig", "Pod",
     POD("", "", CTR(",\"resources\":{\"limits\":{\"nvidia.com/mig-7g.80gb\":\"1\"}}")), false,
     "nvidia.com/mig-7g.80gb is not allowed; allowed MIG profiles: nvidia.com/mig-1g.10gb"},
    {"mig", "Pod", POD("", "", CTR(GPU("1"))), false, "nvidia.com/gpu is not allowed"},
    {"mig", "Pod", POD("\"gpu-fraction\":\"0.5\"", "", CTR("")), false,
     "gpu-fraction is not allowed"},
    /* baseline (trusted) */
    {"trusted", "Pod", POD("", "\"hostNetwork\":true,", CTR("")), false,
     "violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true)"},
    {"trusted", "Pod", POD("", "", "{\"name\":\"c\",\"securityContext\":{\"privileged\":true}}"),
     false, "privileged (container \"c\" must not set securityContext.privileged=true)"},
    {"trusted", "Pod",
     POD("", "\"volumes\":[{\"name\":\"h\",\"hostPath\":{\"path\":\"/\"}}],", "{\"name\":\"c\"}"),
     false, "hostPath volumes (volume \"h\")"},
    {"trusted", "Pod",
     POD("", "", "{\"name\":\"c\",\"ports\":[{\"containerPort\":80,\"hostPort\":80}]}"), false,
     "hostPort"},
    {"trusted", "Pod",
     POD("", "",
	 "{\"name\":\"c\",\"securityContext\":{\"capabilities\":{\"add\":[\"SYS_ADMIN\"]}}}"),
     false, "non-default capabilities (container \"c\" must not include \"SYS_ADMIN\""},
    {"trusted", "Pod",
     POD("", "", "{\"name\":\"c\",\"securityContext\":{\"capabilities\":{\"add\":[\"NET_RAW\"]}}}"),
     false, "NET_RAW"},
    {"trusted", "Pod",
     POD("", "",
	 "{\"name\":\"c\",\"securityContext\":{\"capabilities\":{\"add\":[\"CHOWN\",\"KILL\"]}}}"),
     true, NULL},
    {"trusted", "Pod",
     POD("", "\"securityContext\":{\"sysctls\":[{\"name\":\"kernel.msgmax\",\"value\":\"1\"}]},",
	 "{\"name\":\"c\"}"),
     false, "forbidden sysctls (kernel.msgmax)"},
    {"trusted", "Pod",
     POD("",
	 "\"securityContext\":{\"sysctls\":[{\"name\":\"net.ipv4.ip_local_port_range\",\"value\":"
	 "\"1 2\"}]},",
	 "{\"name\":\"c\"}"),
     true, NULL},
    {"trusted", "Pod",
     POD("", "\"securityContext\":{\"seccompProfile\":{\"type\":\"Unconfined\"}},",
	 "{\"name\":\"c\"}"),
     false, "seccompProfile"},
    {"trusted", "Pod",
     POD("", "", "{\"name\":\"c\",\"securityContext\":{\"procMount\":\"Unmasked\"}}"), false,
     "procMount"},
    {"trusted", "Pod",
     POD("", "", "{\"name\":\"c\",\"securityContext\":{\"seLinuxOptions\":{\"type\":\"spc_t\"}}}"),
     false, "seLinuxOptions"},
    {"trusted", "Pod",
     POD("", "",
	 "{\"name\":\"c\",\"securityContext\":{\"appArmorProfile\":{\"type\":\"Unconfined\"}}}"),
     false, "appArmorProfile"},
    {"trusted", "Pod",
     POD("\"container.apparmor.security.beta.kubernetes.io/c\":\"unconfined\"", "",
	 "{\"name\":\"c\"}"),
     false, "forbidden AppArmor profile"},
    /* baseline does not ask for restricted fields */
    {"trusted", "Pod", POD("", "", "{\"name\":\"c\",\"image\":\"busybox\"}"), true, NULL},
    /* restricted (untrusted) */
    {"untrusted", "Pod", POD("", "", "{\"name\":\"c\",\"image\":\"busybox\"}"), false,
     "allowPrivilegeEscalation != false (container \"c\""},
    {"untrusted", "Pod",
     POD("", "",
	 "{\"name\":\"c\",\"securityContext\":{\"allowPrivilegeEscalation\":false,"
	 "\"seccompProfile\":{\"type\":\"RuntimeDefault\"},\"capabilities\":{\"drop\":[\"ALL\"]}}"
	 "}"),
     false, "runAsNonRoot != true"},
    {"untrusted", "Pod",
     POD("",
	 "\"securityContext\":{\"runAsNonRoot\":true,\"seccompProfile\":{\"type\":\"Localhost\"}},",
	 "{\"name\":\"c\",\"securityContext\":{\"allowPrivilegeEscalation\":false,"
	 "\"capabilities\":{\"drop\":[\"ALL\"],\"add\":[\"NET_BIND_SERVICE\"]}}}"),
     true, NULL},
    {"untrusted", "Pod",
     POD("", "",
	 "{\"name\":\"c\"," SAFE_SC ",\"ports\":[]},{\"name\":\"d\",\"securityContext\":{"
	 "\"allowPrivilegeEscalation\":false,\"runAsNonRoot\":true,\"seccompProfile\":{\"type\":"
	 "\"RuntimeDefault\"},\"capabilities\":{\"drop\":[\"ALL\"],\"add\":[\"CHOWN\"]}}}"),
     false, "container \"d\" must not include \"CHOWN\""},
    {"untrusted", "Pod",
     POD("", "\"volumes\":[{\"name\":\"n\",\"nfs\":{\"server\":\"x\",\"path\":\"/\"}}],", CTR("")),
     false, "restricted volume types (volume \"n\" uses restricted volume type \"nfs\")"},
    {"untrusted", "Pod",
     POD("",
	 "\"volumes\":[{\"name\":\"e\",\"emptyDir\":{}},{\"name\":\"s\",\"secret\":{\"secretName\":"
	 "\"x\"}}],",
	 CTR("")),
     true, NULL},
    {"untrusted", "Pod", POD("", "", "{\"name\":\"c\",\"securityContext\":{\"privileged\":true}}"),
     false, "privileged (container \"c\""},
    /* schedulers */
    {"untrusted", "Pod", POD("", "\"schedulerName\":\"my-sched\",", CTR("")), false,
     "schedulerName \"my-sched\" is not allowed; allowed: default-scheduler, kai-scheduler"},
    {"untrusted", "Pod", POD("", "\"schedulerName\":\"kai-scheduler\",", CTR("")), true, NULL},
    /* pod templates */
    {"untrusted", "Deployment",
     "{\"spec\":{\"template\":" POD("\"gpu-fraction\":\"0.5\"", "", CTR("")) "}}", false,
     "gpu-fraction is not allowed"},
    {"untrusted", "Deployment", "{\"spec\":{\"template\":" POD("", "", CTR(GPU("1"))) "}}", true,
     NULL},
    {"untrusted", "CronJob",
     "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":" POD("", "\"hostPID\":true,",
							       CTR("")) "}}}}",
     false, "hostPID=true"},
    {"untrusted", "Job", "{\"spec\":{\"template\":" POD("", "", "{\"name\":\"c\"}") "}}", false,
     "runAsNonRoot"},
    {"untrusted", "ConfigMap", "{\"data\":{\"a\":\"b\"}}", true, NULL},
};

START_TEST(admit_table)
{
	const struct acase *c = &cases[_i];
	policy_t *p = load(c->policy);
	json_t *obj = J(c->obj);
	char msg[4096] = "";
	int rc = policy_admit(p, POLICY_FLOOR_NONE, c->kind, obj, NULL, msg, sizeof(msg));
	if (c->ok) {
		ck_assert_msg(rc == 0, "case %d: refused: %s", _i, msg);
	} else {
		ck_assert_msg(rc == -EACCES, "case %d: admitted", _i);
		ck_assert_msg(strstr(msg, c->want), "case %d: message %s lacks %s", _i, msg,
			      c->want);
		ck_assert_msg(strncmp(msg, "policy ", 7) == 0, "case %d: %s", _i, msg);
	}
	json_decref(obj);
	policy_free(p);
}
END_TEST

/* An update that leaves the pod spec as it was passes (labels change). */
START_TEST(update_unchanged_spec)
{
	policy_t *p = load("untrusted");
	json_t *old = J(POD("", "\"hostNetwork\":true,", "{\"name\":\"c\"}"));
	json_t *obj = json_deep_copy(old);
	char msg[1024] = "";
	ck_assert_int_eq(policy_admit(p, POLICY_FLOOR_NONE, "Pod", obj, old, msg, sizeof(msg)), 0);
	json_object_set_new(json_object_get(obj, "spec"), "hostIPC", json_true());
	ck_assert_int_eq(policy_admit(p, POLICY_FLOOR_NONE, "Pod", obj, old, msg, sizeof(msg)),
			 -EACCES);
	json_decref(obj);
	json_decref(old);
	policy_free(p);
}
END_TEST

START_TEST(quantities)
{
	int64_t m;
	ck_assert_int_eq(policy_quantity_milli("500m", &m), 0);
	ck_assert_int_eq(m, 500);
	ck_assert_int_eq(policy_quantity_milli("2", &m), 0);
	ck_assert_int_eq(m, 2000);
	ck_assert_int_eq(policy_quantity_milli("1Gi", &m), 0);
	ck_assert_int_eq(m, 1073741824LL * 1000);
	ck_assert_int_eq(policy_quantity_milli("0.25", &m), 0);
	ck_assert_int_eq(m, 250);
	ck_assert_int_eq(policy_quantity_milli("1k", &m), 0);
	ck_assert_int_eq(m, 1000000);
	ck_assert_int_eq(policy_quantity_milli("1X", &m), -EINVAL);
	ck_assert_int_eq(policy_quantity_milli("", &m), -EINVAL);
	ck_assert_int_eq(policy_quantity_milli("-1", &m), -EINVAL);
}
END_TEST

static const char quota_yaml[] = "name: q\n"
				 "gpu:\n  mode: fractional\n  gpuMemoryMiB: 80000\n"
				 "podSecurity: privileged\nhostFields: allow\n"
				 "quota:\n  gpu: 2\n  cpu: 4\n  memory: 8Gi\n  pods: 3\n";

/* Fractions add up: 0.5 + 0.25 (gpu-memory 20000 of 80000) + 1 whole. */
START_TEST(quota_fractions)
{
	policy_t *p = NULL;
	char err[256], msg[512] = "";
	ck_assert_int_eq(policy_parse(quota_yaml, strlen(quota_yaml), NULL, &p, err, sizeof(err)),
			 0);
	ck_assert_str_eq(policy_name(p), "q");
	struct policy_usage used = {0}, req = {0};
	json_t *a =
	    J("{\"metadata\":{\"annotations\":{\"gpu-fraction\":\"0.5\"}},\"spec\":{"
	      "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"500m\","
	      "\"memory\":\"1Gi\"}}}]}}");
	json_t *b =
	    J("{\"metadata\":{\"annotations\":{\"gpu-memory\":\"20000\"}},\"spec\":{"
	      "\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"cpu\":\"1\"}}}]}}");
	json_t *c =
	    J("{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
	      "\"nvidia.com/gpu\":\"1\"}}}],\"initContainers\":[{\"name\":\"i\",\"resources\":{"
	      "\"requests\":{\"cpu\":\"2\"}}}]}}");
	json_t *done = J("{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
			 "\"nvidia.com/gpu\":\"1\"}}}]},\"status\":{\"phase\":\"Succeeded\"}}");
	policy_pod_usage(p, a, &used);
	policy_pod_usage(p, b, &used);
	policy_pod_usage(p, done, &used);
	ck_assert_int_eq(used.gpu_milli, 750);
	ck_assert_int_eq(used.cpu_milli, 1500);
	ck_assert_int_eq(used.memory, 1073741824LL);
	ck_assert_int_eq(used.pods, 2);
	policy_pod_usage(p, c, &req);
	ck_assert_int_eq(req.gpu_milli, 1000);
	ck_assert_int_eq(req.cpu_milli, 2000); /* the init container is larger */
	ck_assert_int_eq(policy_check_quota(p, &used, &req, msg, sizeof(msg)), 0);
	policy_pod_usage(p, c, &used); /* 1.75 GPUs, 3.5 cpu, 3 pods */
	struct policy_usage more = {0};
	policy_pod_usage(p, a, &more);
	ck_assert_int_eq(policy_check_quota(p, &used, &more, msg, sizeof(msg)), -EACCES);
	ck_assert_str_eq(msg,
			 "policy q: exceeded quota: gpu, requested: 0.5, used: 1.75, limited: 2");
	json_t *used_map = policy_quota_used(p, &used);
	ck_assert_str_eq(json_string_value(json_object_get(used_map, "requests.nvidia.com/gpu")),
			 "1750m");
	ck_assert_str_eq(json_string_value(json_object_get(used_map, "requests.memory")), "1Gi");
	ck_assert_str_eq(json_string_value(json_object_get(used_map, "pods")), "3");
	json_t *hard = policy_quota_hard(p);
	ck_assert_str_eq(json_string_value(json_object_get(hard, "requests.memory")), "8Gi");
	ck_assert_str_eq(json_string_value(json_object_get(hard, "requests.cpu")), "4");
	json_decref(hard);
	json_decref(used_map);
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(done);
	policy_free(p);
}
END_TEST

START_TEST(quota_whole_gpus)
{
	policy_t *p = load("untrusted");
	struct policy_usage used = {0}, req = {0};
	char msg[512] = "";
	json_t *pod = J(POD("", "", CTR(GPU("2"))));
	policy_pod_usage(p, pod, &used);
	policy_pod_usage(p, pod, &used);
	policy_pod_usage(p, pod, &req);
	ck_assert_int_eq(used.gpu_milli, 4000);
	ck_assert_int_eq(policy_check_quota(p, &used, &req, msg, sizeof(msg)), -EACCES);
	ck_assert_str_eq(
	    msg, "policy untrusted: exceeded quota: gpu, requested: 2, used: 4, limited: 4");
	json_decref(pod);
	policy_free(p);
}
END_TEST

/* What a pod takes, counted as kube's PodRequests counts it
 * (k8s.io/component-helpers resource/helpers.go): sidecars summed with the
 * app containers and added to every later init step, the largest step,
 * pod-level requests, overhead; for every GPU form. */
static const char count_yaml[] =
    "name: c\n"
    "gpu:\n  mode: fractional\n  gpuMemoryMiB: 80000\n"
    "extendedResources:\n  amd.com/gpu: 1\n  nvidia.com/gpu.shared: 250m\n"
    "  rdma/hca: 0\n";

#define LIM(k, v)     "{\"limits\":{\"" k "\":\"" v "\"}}"
#define C(name, res)  "{\"name\":\"" name "\",\"resources\":" res "}"
#define SC(name, res) "{\"name\":\"" name "\",\"restartPolicy\":\"Always\",\"resources\":" res "}"
#define SPEC(ann, extra, init, ctrs)                                                             \
	"{\"metadata\":{\"annotations\":{" ann "}},\"spec\":{" extra "\"initContainers\":[" init \
	"],\"containers\":[" ctrs "]}}"

static const struct {
	const char *pod;
	int64_t gpu_milli, cpu_milli;
} counts[] = {
    /* the pod: three 4-GPU sidecars and a 4-GPU container ask 16 */
    {SPEC("", "",
	  SC("s1", LIM("nvidia.com/gpu", "4")) "," SC("s2", LIM("nvidia.com/gpu", "4")) "," SC(
	      "s3", LIM("nvidia.com/gpu", "4")),
	  C("c", LIM("nvidia.com/gpu", "4"))),
     16000, 0},
    /* a plain init container larger than the app containers */
    {SPEC("", "", C("i", LIM("nvidia.com/gpu", "8")), C("c", LIM("nvidia.com/gpu", "2"))), 8000, 0},
    /* an init step after a sidecar runs beside it: 2 + 4 */
    {SPEC("", "", SC("s", LIM("nvidia.com/gpu", "2")) "," C("i", LIM("nvidia.com/gpu", "4")),
	  C("c", LIM("nvidia.com/gpu", "1"))),
     6000, 0},
    /* an init step before the sidecar does not */
    {SPEC("", "", C("i", LIM("nvidia.com/gpu", "4")) "," SC("s", LIM("nvidia.com/gpu", "2")),
	  C("c", LIM("nvidia.com/gpu", "1"))),
     4000, 0},
    /* overhead comes on top */
    {SPEC("", "\"overhead\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"250m\"},", "",
	  C("c", "{\"limits\":{\"nvidia.com/gpu\":\"1\",\"cpu\":\"1\"}}")),
     2000, 1250},
    /* a pod-level request is the pod's request (cpu, memory) */
    {SPEC("", "\"resources\":{\"requests\":{\"cpu\":\"4\"}},", "", C("c", LIM("cpu", "1"))), 0,
     4000},
    /* sidecars' cpu too */
    {SPEC("", "", SC("s", LIM("cpu", "2")), C("c", LIM("cpu", "1"))), 0, 3000},
    /* KAI gpu-memory on gpu-fraction-num-devices devices */
    {SPEC("\"gpu-memory\":\"20000\",\"gpu-fraction-num-devices\":\"2\"", "", "", C("c", "{}")), 500,
     0},
    {SPEC("\"gpu-fraction\":\"0.25\",\"gpu-fraction-num-devices\":\"3\"", "", "", C("c", "{}")),
     750, 0},
    /* HAMi: a share without nvidia.com/gpu is one vGPU */
    {SPEC("", "", "", C("c", LIM("nvidia.com/gpumem", "40000"))), 500, 0},
    /* HAMi in a sidecar counts beside the app container */
    {SPEC("", "", SC("s", "{\"limits\":{\"nvidia.com/gpu\":\"2\",\"nvidia.com/gpucores\":\"50\"}}"),
	  C("c", LIM("nvidia.com/gpu", "1"))),
     2000, 0},
    /* MIG slices in a sidecar and an app container: 3/7 + 1/7 */
    {SPEC("", "", SC("s", LIM("nvidia.com/mig-3g.40gb", "1")),
	  C("c", LIM("nvidia.com/mig-1g.10gb", "1"))),
     429 + 143, 0},
    /* a compute-instance profile takes its GPU instance's size (3g); a
     * profile without one counts a whole GPU */
    {SPEC("", "", "", C("c", LIM("nvidia.com/mig-1c.3g.40gb", "1"))), 429, 0},
    /* a share however small takes some quota (rounded up) */
    {SPEC("\"gpu-fraction\":\"0.0001\"", "", "", C("c", "{}")), 1, 0},
    {SPEC("\"gpu-fraction\":\"0.29\"", "", "", C("c", "{}")), 290, 0},
    {SPEC("\"gpu-memory\":\"1\"", "", "", C("c", "{}")), 1, 0},
    {SPEC("", "", "", C("c", LIM("nvidia.com/mig-weird", "1"))), 1000, 0},
    /* listed extended resources count their weight */
    {SPEC("", "", SC("s", LIM("amd.com/gpu", "2")),
	  C("c", "{\"limits\":{\"nvidia.com/gpu.shared\":\"4\",\"rdma/hca\":\"1\"}}")),
     3000, 0},
    /* huge quantities saturate instead of wrapping around */
    {SPEC("", "", "",
	  C("a", LIM("nvidia.com/gpu", "5e15")) "," C("b", LIM("nvidia.com/gpu", "5e15"))),
     INT64_MAX, 0},
};

START_TEST(pod_requests)
{
	policy_t *p = NULL;
	char err[256] = "";
	ck_assert_msg(policy_parse(count_yaml, strlen(count_yaml), NULL, &p, err, sizeof(err)) == 0,
		      "%s", err);
	json_t *pod = J(counts[_i].pod);
	struct policy_usage u = {0};
	policy_pod_usage(p, pod, &u);
	ck_assert_msg(u.gpu_milli == counts[_i].gpu_milli, "case %d: gpu %lld, want %lld", _i,
		      (long long)u.gpu_milli, (long long)counts[_i].gpu_milli);
	ck_assert_msg(u.cpu_milli == counts[_i].cpu_milli, "case %d: cpu %lld, want %lld", _i,
		      (long long)u.cpu_milli, (long long)counts[_i].cpu_milli);
	json_decref(pod);
	policy_free(p);
}
END_TEST

/* The pod against a 4-GPU quota: refused, not counted as 4. */
START_TEST(sidecars_quota)
{
	policy_t *p = load("untrusted");
	struct policy_usage used = {0}, req = {0};
	char msg[512] = "";
	json_t *pod = J(counts[0].pod);
	policy_pod_usage(p, pod, &req);
	ck_assert_int_eq(policy_check_quota(p, &used, &req, msg, sizeof(msg)), -EACCES);
	ck_assert_str_eq(
	    msg, "policy untrusted: exceeded quota: gpu, requested: 16, used: 0, limited: 4");
	/* saturated usage is refused too */
	struct policy_usage huge = {.gpu_milli = INT64_MAX};
	ck_assert_int_eq(policy_check_quota(p, &huge, &req, msg, sizeof(msg)), -EACCES);
	json_decref(pod);
	policy_free(p);
}
END_TEST

START_TEST(mig_usage)
{
	policy_t *p = load("mig");
	struct policy_usage u = {0};
	json_t *pod =
	    J(POD("", "", CTR(",\"resources\":{\"limits\":{\"nvidia.com/mig-3g.40gb\":\"1\"}}")));
	policy_pod_usage(p, pod, &u);
	ck_assert_int_eq(u.gpu_milli, 429);
	json_decref(pod);
	policy_free(p);
}
END_TEST

START_TEST(mutate)
{
	policy_t *p = load("mig");
	json_t *pod =
	    J("{\"spec\":{\"nodeSelector\":{\"zone\":\"a\",\"nvidia.com/mig.capable\":\"no\"},"
	      "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
	      "\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"c\"}]}}");
	ck_assert_int_eq(policy_mutate_pod(p, pod), 0);
	json_t *ns = json_object_get(json_object_get(pod, "spec"), "nodeSelector");
	ck_assert_str_eq(json_string_value(json_object_get(ns, "zone")), "a");
	ck_assert_str_eq(json_string_value(json_object_get(ns, "nvidia.com/mig.capable")), "true");
	/* the equal toleration is not added twice */
	ck_assert_int_eq(
	    json_array_size(json_object_get(json_object_get(pod, "spec"), "tolerations")), 1);
	json_decref(pod);
	policy_free(p);
}
END_TEST

START_TEST(parse_errors)
{
	policy_t *p = (policy_t *)1;
	char err[256];
	const char *bad[] = {"gpu:\n  mode: half\n",
			     "podSecurity: lax\n",
			     "quota:\n  gpu: lots\n",
			     "colour: red\n",
			     "gpu:\n  mode: mig\n",
			     "extendedResources:\n  amd.com/gpu: lots\n",
			     "extendedResources:\n  gpu: 1\n",
			     "- a\n- b\n",
			     "a: [\n",
			     "topologyHints: maybe\n"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(policy_parse(bad[i], strlen(bad[i]), "x", &p, err, sizeof(err)) ==
				  -EINVAL,
			      "accepted %s", bad[i]);
		ck_assert_ptr_null(p);
		ck_assert_msg(err[0], "no reason for %s", bad[i]);
	}
	ck_assert_int_eq(policy_load("no-such-policy", &p, err, sizeof(err)), -ENOENT);
}
END_TEST

/* topologyHints and the GPU quota, as the syncer reads them (gangs) */
START_TEST(gang_settings)
{
	policy_t *p = NULL;
	char err[256];
	const char *y = "topologyHints: allow\nquota:\n  gpu: 4\n";
	ck_assert_int_eq(policy_parse(y, strlen(y), NULL, &p, err, sizeof(err)), 0);
	ck_assert(policy_topology_hints(p));
	ck_assert_int_eq(policy_gpu_quota_milli(p), 4000);
	policy_free(p);
	y = "quota:\n  cpu: 4\n";
	ck_assert_int_eq(policy_parse(y, strlen(y), NULL, &p, err, sizeof(err)), 0);
	ck_assert(!policy_topology_hints(p));
	ck_assert_int_eq(policy_gpu_quota_milli(p), -1);
	policy_free(p);
	ck_assert(!policy_topology_hints(NULL));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("policies");
	TCase *tc = tcase_create("policies");
	tcase_add_loop_test(tc, admit_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, update_unchanged_spec);
	tcase_add_test(tc, quantities);
	tcase_add_test(tc, quota_fractions);
	tcase_add_test(tc, quota_whole_gpus);
	tcase_add_test(tc, mig_usage);
	tcase_add_loop_test(tc, pod_requests, 0, (int)(sizeof(counts) / sizeof(counts[0])));
	tcase_add_test(tc, sidecars_quota);
	tcase_add_test(tc, mutate);
	tcase_add_test(tc, parse_errors);
	tcase_add_test(tc, gang_settings);
	suite_add_tcase(s, tc);
	return s;
}
