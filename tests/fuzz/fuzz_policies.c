/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: policies/ on a tenant's bytes. The input is a JSON
 * object (a Pod, a Deployment or a ConfigMap, by its "kind"; a Pod when it
 * has none) admitted under no policy and the baseline host floor, and under
 * a policy that gives every governed field (node labels, tolerations,
 * runtime and priority classes, node pools, CSI drivers): nothing may crash
 * or leak, a refusal always says why, and an object compared with itself as
 * the stored one of an update passes. An input that is no JSON object is
 * parsed as a policy file instead.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>

#include "policies/policies.h"

static const char gives[] = "name: gives\n"
			    "gpu: {mode: fractional, gpuMemoryMiB: 81920}\n"
			    "podSecurity: baseline\n"
			    "quota: {gpu: 4, pods: 10}\n"
			    "nodeSelector: {pool: gpu}\n"
			    "nodeLabels: [topology.kubernetes.io/zone]\n"
			    "tolerations:\n"
			    "  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
			    "runtimeClasses: [nvidia]\n"
			    "priorityClasses: [train, system-cluster-critical]\n"
			    "nodePools: [pool-a]\n"
			    "volumeTypes: [nfs]\n"
			    "csiDrivers: [secrets-store.csi.k8s.io]\n";

static void admit(const policy_t *p, int floor, const char *kind, const json_t *obj)
{
	char msg[4096] = "";
	int rc = policy_admit(p, floor, kind, obj, NULL, msg, sizeof(msg));
	if (rc != 0 && (rc != -EACCES || !msg[0]))
		abort();
	/* an update that changes nothing passes */
	if (policy_admit(p, floor, kind, obj, obj, msg, sizeof(msg)) != 0 &&
	    strcmp(kind, "ConfigMap") != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static policy_t *pol;
	char err[256];
	if (!pol && policy_parse(gives, strlen(gives), "gives", &pol, err, sizeof(err)) < 0)
		abort();
	json_t *obj = json_loadb((const char *)data, size, 0, NULL);
	if (!json_is_object(obj)) {
		policy_t *p = NULL;
		char *text = fuzz_strndup(data, size);
		if (text && policy_parse(text, size, "f", &p, err, sizeof(err)) == 0) {
			json_t *empty = json_object();
			admit(p, 1, "Pod", empty);
			json_decref(empty);
			policy_free(p);
		}
		free(text);
		json_decref(obj);
		return 0;
	}
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	if (!kind)
		kind = "Pod";
	admit(NULL, 1, kind, obj);
	admit(pol, 1, kind, obj);
	admit(pol, 0, kind, obj);
	char msg[512];
	const char *pc =
	    json_string_value(json_object_get(json_object_get(obj, "spec"), "priorityClassName"));
	policy_check_priority_class(NULL, 1, pc, true, msg, sizeof(msg));
	policy_check_priority_class(pol, 1, pc, true, msg, sizeof(msg));
	json_decref(obj);
	return 0;
}
