/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: CEL expressions (proxy/cel/cel.h), as tenants write them in
 * CRD validation rules, admission policies and webhook matchConditions.
 * The input's first line is the expression, the rest a JSON document bound
 * to `self` (dyn) and, through a schema, to `typed`. Compiles it with every
 * library and evaluates it under a cost limit; the result is converted to
 * JSON. Nothing may crash, leak or run past the limit; the checked type
 * and the estimated cost are always there (min <= max).
 */
#include "tests/fuzz/fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "proxy/cel/cel_impl.h"

static const json_t *schema(void)
{
	static json_t *s;
	if (!s)
		s = json_loads(
		    "{\"type\":\"object\",\"properties\":{"
		    "\"name\":{\"type\":\"string\"},\"n\":{\"type\":\"integer\"},"
		    "\"x\":{\"type\":\"number\"},\"when\":{\"type\":\"string\","
		    "\"format\":\"date-time\"},\"ios\":{\"x-kubernetes-int-or-string\":"
		    "true},\"tags\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\","
		    "\"items\":{\"type\":\"string\"}},\"m\":{\"type\":\"object\","
		    "\"additionalProperties\":{\"type\":\"string\"}}}}",
		    0, NULL);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_strndup(data, size);
	if (!s)
		return 0;
	char *nl = strchr(s, '\n');
	json_t *doc = NULL;
	if (nl) {
		*nl = '\0';
		doc = json_loads(nl + 1, JSON_DECODE_ANY, NULL);
	}
	struct cel_var vars[] = {{"self", NULL}, {"typed", schema()}};
	struct cel_env env = {vars, 2, CEL_LIB_K8S};
	char *err = NULL;
	cel_program_t *p = cel_compile(s, &env, 4096, &err);
	if (p) {
		uint64_t lo, hi;
		cel_program_cost(p, &lo, &hi);
		if (lo > hi || !cel_program_type(p))
			abort();
		cel_ctx_t *c = cel_ctx_new(100000);
		cel_bind_json(c, "self", doc, NULL);
		cel_bind_json(c, "typed", doc, schema());
		cel_value_t out;
		const char *msg = NULL;
		if (cel_eval(p, c, &out, &msg, NULL) == CEL_OK) {
			json_decref(cel_to_json(out));
			(void)cel_debug_string(c, out);
		}
		cel_ctx_free(c);
		cel_program_free(p);
	}
	free(err);
	json_decref(doc);
	free(s);
	return 0;
}
