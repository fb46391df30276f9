/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: ?fieldSelector= strings for pods (proxy/model/selector.h),
 * matched against a fixed pod.
 */
#include "tests/fuzz/fuzz.h"

#include "proxy/model/resource.h"
#include "proxy/model/selector.h"

static json_t *fixed_pod(void)
{
	static json_t *pod;
	if (!pod)
		pod = json_loads("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
				 "\"web-1\",\"namespace\":\"default\"},\"spec\":{\"nodeName\":"
				 "\"node-a\",\"restartPolicy\":\"Always\",\"hostNetwork\":false},"
				 "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.7\"}}",
				 0, NULL);
	return pod;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct proxy_resource *pods = resource_find("", "v1", "pods");
	KB_REQUIRE(pods != NULL);
	char *s = fuzz_strndup(data, size);
	struct sel_field *f = NULL;
	char err[256];
	if (s && sel_field_parse(s, pods, &f, err, sizeof(err)) == 0) {
		(void)sel_field_match(f, fixed_pod());
		(void)sel_field_exact(f, "metadata.name");
		(void)sel_field_exact(f, "spec.nodeName");
	}
	sel_field_free(f);
	f = NULL;
	/* Without a row only metadata.name/namespace are accepted. */
	if (s && sel_field_parse(s, NULL, &f, err, sizeof(err)) == 0)
		(void)sel_field_match(f, fixed_pod());
	sel_field_free(f);
	free(s);
	return 0;
}
