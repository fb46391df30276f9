/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: lib/json's fast JSON loader and writer against
 * jansson, differentially. kb_json_loadb must accept exactly what
 * json_loadb accepts and build an equal tree (it hands everything it does
 * not handle itself to jansson); kb_json_dump must write the very bytes of
 * json_dumps(JSON_COMPACT); kb_json_copy must be equal to its source;
 * kb_json_go_syntax_error must find no error in what jansson accepts.
 */
#include "tests/fuzz/fuzz.h"

#include "lib/json.h"
#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *ours = kb_json_loadb((const char *)data, size, 0, NULL);
	json_t *ref = json_loadb((const char *)data, size, 0, NULL);
	if (!ours != !ref || (ours && !json_equal(ours, ref)))
		abort();
	json_t *dup = kb_json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	json_t *dref = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!dup != !dref)
		abort();
	/* what jansson takes Go's encoding/json takes too (the reverse does
	 * not hold: Go takes scalars at the top, invalid UTF-8, huge numbers;
	 * jansson reads some text after a NUL byte as the end) */
	char goerr[256];
	int gs = kb_json_go_syntax_error((const char *)data, size, goerr, sizeof(goerr));
	if (gs < 0 || (ref && gs != 0 && !memchr(data, 0, size)) || (gs == 1 && !goerr[0]))
		abort();
	if (ref) {
		struct kb_buf b = {0};
		char *text = json_dumps(ref, JSON_COMPACT);
		if (kb_json_dump(ref, &b) == 0 && text &&
		    (b.len != strlen(text) || memcmp(b.data, text, b.len)))
			abort();
		json_t *copy = kb_json_copy(ref);
		if (!copy || !json_equal(copy, ref))
			abort();
		json_decref(copy);
		free(text);
		kb_buf_free(&b);
	}
	json_decref(ours);
	json_decref(ref);
	json_decref(dup);
	json_decref(dref);
	return 0;
}
