/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: syncer_strip_managed_fields, the text scanner that cuts
 * object.metadata.managedFields out of a host watch line before it is
 * parsed. It must stay inside the line, and for every line jansson reads
 * (without duplicate keys, which a kube-apiserver never sends) its result
 * must read as the same event with that one member gone, and nothing else
 * changed.
 */
#include "tests/fuzz/fuzz.h"

#include "syncer/syncer_impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size ? size : 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	size_t n = syncer_strip_managed_fields(s, size);
	if (n > size)
		abort();
	json_t *before = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (before) {
		json_t *after = json_loadb(s, n, JSON_REJECT_DUPLICATES, NULL);
		json_t *meta = json_object_get(json_object_get(before, "object"), "metadata");
		if (json_is_object(meta))
			json_object_del(meta, "managedFields");
		if (!after || !json_equal(before, after))
			abort();
		json_decref(after);
	}
	json_decref(before);
	free(s);
	return 0;
}
