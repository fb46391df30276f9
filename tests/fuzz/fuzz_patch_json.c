/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: JSON patch (RFC 6902, proxy/patch/patch.h). The input is the
 * document, a NUL or newline, then the array of operations.
 */
#include "tests/fuzz/fuzz.h"

#include "proxy/patch/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc, *ops, *out = NULL;
	char err[256];
	if (fuzz_two_docs(data, size, &doc, &ops) < 0)
		return 0;
	if (patch_json(doc, ops, &out, err, sizeof(err)) == 0)
		fuzz_check_json(out);
	json_decref(out);
	json_decref(doc);
	json_decref(ops);
	return 0;
}
