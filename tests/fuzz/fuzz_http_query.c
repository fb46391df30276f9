/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: percent-decoding and query strings (lib/http.h), as every
 * request's path and ?query go through them.
 */
#include "tests/fuzz/fuzz.h"

#include "lib/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	if (!s)
		return 0;
	size_t len = strlen(s);
	if (kb_http_unescape(s, false) == 0)
		KB_REQUIRE(strlen(s) <= len);
	memcpy(s, data, size);
	s[size] = '\0';
	(void)kb_http_unescape(s, true);
	memcpy(s, data, size);
	s[size] = '\0';
	char *cursor = s, *key, *val;
	while (kb_http_query_next(&cursor, &key, &val))
		KB_REQUIRE(key >= s && val >= s && key <= s + size && val <= s + size);
	free(s);
	return 0;
}
