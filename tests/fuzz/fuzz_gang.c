/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: syncer_gang_shape and syncer_group_object, which read
 * the tenant's own objects (a Job, a JobSet, Kubeflow, Ray and
 * LeaderWorkerSet CRs, any JSON the tenant wrote) to size a gang and write
 * it on the host, and syncer_gang_pods_quota / syncer_gang_pods_message,
 * which read ResourceQuotas the tenant wrote. Input: a JSON object {"top":
 * owner, "pod": pod, "quotas": [ResourceQuota]}; every kind of the table
 * is tried on it. A gang's minimum stays in [2, 10000], its suffix and
 * subgroups are label values, its host object is made, and a quota that
 * refuses it holds fewer pods than its minimum.
 */
#include "tests/fuzz/fuzz.h"

#include "lib/json.h"
#include "syncer/syncer_impl.h"

static bool label_value(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
			return false;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const kinds[] = {"Job",         "JobSet",     "PyTorchJob",
					    "MPIJob",      "RayCluster", "LeaderWorkerSet",
					    "StatefulSet", "Deployment"};
	json_t *in = json_loadb((const char *)data, size, 0, NULL);
	if (!in)
		return 0;
	const json_t *top = json_object_get(in, "top"), *pod = json_object_get(in, "pod");
	struct syncer_xlate x = {.tenant = "t", .host_ns = "h", .queue = "q"};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		json_t *g = syncer_gang_shape(kinds[i], top, pod);
		if (!g)
			continue;
		json_int_t min = json_integer_value(json_object_get(g, "min"));
		const char *sfx = json_string_value(json_object_get(g, "suffix"));
		const char *sub = json_string_value(json_object_get(g, "subgroup"));
		if (min < 2 || min > 10000 || (sfx && !label_value(sfx)) ||
		    (sub && !label_value(sub)))
			abort();
		size_t j;
		json_t *sg;
		json_array_foreach (json_object_get(g, "subGroups"), j, sg)
			if (!label_value(json_string_value(json_object_get(sg, "name"))))
				abort();
		json_object_set_new(g, "group", json_string("g"));
		json_object_set_new(g, "name", json_string("n"));
		json_object_set_new(g, "ns", json_string("ns"));
		json_object_set_new(g, "kind", json_string(kinds[i]));
		json_object_set_new(g, "owner", json_string("o"));
		json_object_set_new(g, "uid", json_string("u"));
		x.profile = syncer_profile_find(i % 2 ? "volcano" : "kai");
		json_t *obj = syncer_group_object(&x, g, pod);
		if (!obj)
			abort();
		const json_t *q = syncer_gang_pods_quota(g, json_object_get(in, "quotas"));
		char msg[1024];
		if (q && (syncer_gang_pods_message(g, q, "w", msg, sizeof(msg)) < 0 ||
			  !strstr(msg, "requested: pods=")))
			abort();
		json_decref(obj);
		json_decref(g);
	}
	json_decref(in);
	return 0;
}
