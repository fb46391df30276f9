/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: server-side apply (proxy/patch/patch.h). The input is the live
 * object, a NUL or newline, then the applied configuration. Applies as
 * manager "fuzz" without force and, on a conflict, with force; then applies
 * the result again as a second manager, so managedFields written by the
 * first call are read back.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>

#include "proxy/patch/patch.h"

#define NOW "2024-05-01T10:00:00Z"
#define POD "k8s.io.api.core.v1.Pod"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *live, *applied, *out = NULL, *out2 = NULL, *conflicts = NULL;
	char err[512];
	if (fuzz_two_docs(data, size, &live, &applied) < 0)
		return 0;
	int rc =
	    patch_apply(live, applied, POD, "fuzz", false, NOW, &out, &conflicts, err, sizeof(err));
	if (rc == -EBUSY) {
		KB_REQUIRE(out == NULL);
		json_decref(conflicts);
		conflicts = NULL;
		rc = patch_apply(live, applied, POD, "fuzz", true, NOW, &out, NULL, err,
				 sizeof(err));
	}
	if (rc == 0) {
		fuzz_check_json(out);
		if (patch_apply(out, applied, POD, "other", true, NOW, &out2, NULL, err,
				sizeof(err)) == 0)
			fuzz_check_json(out2);
	}
	json_decref(out2);
	out2 = NULL;
	/* Create path (no live object) and an unknown type (CRD-like). */
	if (patch_apply(NULL, applied, NULL, "fuzz", false, NOW, &out2, NULL, err, sizeof(err)) ==
	    0)
		fuzz_check_json(out2);
	json_decref(out2);
	json_decref(conflicts);
	json_decref(out);
	json_decref(live);
	json_decref(applied);
	return 0;
}
