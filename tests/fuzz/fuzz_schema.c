/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: strict field checks (proxy/model/schema.h) of a JSON object
 * against a few built-in messages: unknown fields and JSON type errors.
 */
#include "tests/fuzz/fuzz.h"

#include "proxy/model/schema.h"

static const char *const messages[] = {
    "k8s.io.api.core.v1.Pod",      "k8s.io.api.apps.v1.Deployment", "k8s.io.api.core.v1.Service",
    "k8s.io.api.batch.v1.CronJob", "k8s.io.api.core.v1.ConfigMap",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *obj = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!obj)
		return 0;
	for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) {
		json_t *paths = json_array(), *errors = json_array();
		KB_REQUIRE(paths && errors);
		int n = schema_unknown_fields(messages[i], obj, paths);
		KB_REQUIRE(n < 0 || (size_t)n == json_array_size(paths));
		n = schema_check_types(messages[i], obj, errors);
		KB_REQUIRE(n < 0 || (size_t)n == json_array_size(errors));
		json_decref(paths);
		json_decref(errors);
	}
	json_decref(obj);
	return 0;
}
