/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: JSON merge patch (RFC 7386, proxy/patch/patch.h). The input is
 * the document, a NUL or newline, then the patch.
 */
#include "tests/fuzz/fuzz.h"

#include "proxy/patch/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc, *patch, *out = NULL;
	if (fuzz_two_docs(data, size, &doc, &patch) < 0)
		return 0;
	if (patch_merge(doc, patch, &out) == 0)
		fuzz_check_json(out);
	json_decref(out);
	out = NULL;
	if (patch_merge(NULL, patch, &out) == 0)
		fuzz_check_json(out);
	json_decref(out);
	json_decref(doc);
	json_decref(patch);
	return 0;
}
