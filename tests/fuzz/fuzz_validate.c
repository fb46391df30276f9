/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: object validation (proxy/validation/validate.h) of a JSON object as
 * a create and as an update of a fixed valid object, for pods and a few other
 * built-in kinds (webhook configurations and admission policies also as an
 * update of themselves, for the update relaxations); the 422 message is
 * built whenever causes were found.
 */
#include "tests/fuzz/fuzz.h"

#include "proxy/model/resource.h"
#include "proxy/validation/validate.h"

static const char *const rows[][3] = {
    {"", "v1", "pods"},
    {"apps", "v1", "deployments"},
    {"", "v1", "services"},
    {"batch", "v1", "cronjobs"},
    {"", "v1", "secrets"},
    {"admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"},
    {"admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"},
    {"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"},
    {"admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings"},
};

static json_t *old_pod(void)
{
	static json_t *pod;
	if (!pod)
		pod = json_loads("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
				 "\"web\",\"namespace\":\"default\",\"uid\":\"u-1\","
				 "\"creationTimestamp\":\"2024-01-01T00:00:00Z\"},\"spec\":{"
				 "\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}",
				 0, NULL);
	return pod;
}

static void check(const struct proxy_resource *r, const json_t *obj, const json_t *old)
{
	json_t *causes = json_array();
	KB_REQUIRE(causes != NULL);
	int n = val_object_meta(r, obj, old, causes);
	int m = val_object(r, obj, old, causes);
	if (n >= 0 && m >= 0)
		KB_REQUIRE((size_t)(n + m) == json_array_size(causes));
	if (json_array_size(causes) > 0) {
		char *msg = val_status_message(r, "x", causes);
		KB_REQUIRE(msg != NULL);
		free(msg);
	}
	json_decref(causes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *obj = json_loadb((const char *)data, size, 0, NULL);
	if (!obj)
		return 0;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct proxy_resource *r = resource_find(rows[i][0], rows[i][1], rows[i][2]);
		KB_REQUIRE(r != NULL);
		check(r, obj, NULL);
		if (i == 0)
			check(r, obj, old_pod());
		else if (strstr(r->plural, "webhookconfigurations") ||
			 strstr(r->plural, "admissionpolic"))
			check(r, obj, obj);
	}
	json_decref(obj);
	return 0;
}
