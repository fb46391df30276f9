/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers of the libFuzzer targets in tests/fuzz: the entry point
 * prototypes, quiet logging, NUL-terminated copies of the input and the
 * "two documents in one input" split used by the patch targets.
 *
 * Each target is one translation unit that includes this header once.
 */
#ifndef KB_TESTS_FUZZ_H
#define KB_TESTS_FUZZ_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Product code logs errors of bad input; the fuzzer's output stays readable. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	kb_log_level = -1;
	return 0;
}

/* A malloc'ed NUL-terminated copy of the input (owned by the caller), or NULL. */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (s) {
		memcpy(s, data, size);
		s[size] = '\0';
	}
	return s;
}

/*
 * Splits the input at its first NUL or newline into two JSON documents
 * (new references owned by the caller; NULL when a part does not parse).
 * Returns 0 when both parsed, -1 otherwise (whatever parsed is released).
 */
static inline int fuzz_two_docs(const uint8_t *data, size_t size, json_t **a, json_t **b)
{
	size_t i = 0;
	while (i < size && data[i] != '\0' && data[i] != '\n')
		i++;
	*a = json_loadb((const char *)data, i, JSON_DECODE_ANY, NULL);
	*b = i < size ? json_loadb((const char *)data + i + 1, size - i - 1, JSON_DECODE_ANY, NULL)
		      : NULL;
	if (*a && *b)
		return 0;
	json_decref(*a);
	json_decref(*b);
	*a = *b = NULL;
	return -1;
}

/* Aborts (a fuzzer finding) when a successful result is not a JSON value. */
static inline void fuzz_check_json(const json_t *v)
{
	KB_REQUIRE(v != NULL);
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	KB_REQUIRE(s != NULL);
	free(s);
}

#endif
