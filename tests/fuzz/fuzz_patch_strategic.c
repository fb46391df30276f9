/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: strategic merge patch (proxy/patch/patch.h) of a Pod, and of an
 * unknown type (plain merge semantics). The input is the document, a NUL or
 * newline, then the patch.
 */
#include "tests/fuzz/fuzz.h"

#include "proxy/patch/patch.h"

static void one(const json_t *doc, const json_t *patch, const char *msg)
{
	json_t *out = NULL;
	char err[256];
	if (patch_strategic(doc, patch, msg, &out, err, sizeof(err)) == 0)
		fuzz_check_json(out);
	json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc, *patch;
	if (fuzz_two_docs(data, size, &doc, &patch) < 0)
		return 0;
	one(doc, patch, "k8s.io.api.core.v1.Pod");
	one(doc, patch, "k8s.io.api.apps.v1.Deployment");
	one(doc, patch, NULL);
	json_decref(doc);
	json_decref(patch);
	return 0;
}
