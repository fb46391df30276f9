/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the CRD schema checks a CRD write runs
 * (proxy/validation/crd_schema.c: structural rules, list and map types,
 * completeness, defaults against their schema and its CEL rules, the
 * relaxations of an update) on a JSON schema, and every string format of
 * kube's registry (crd_format.c: hostname, email, duration, ISBNs, ...) on each string
 * the input holds.
 */
#include "tests/fuzz/fuzz.h"

#include "lib/util.h"
#include "proxy/validation/crd_validate.h"

static const char *const formats[] = {
    "hostname", "email",    "duration",     "isbn",     "isbn10", "isbn13", "creditcard",
    "ssn",      "rgbcolor", "bsonobjectid", "hexcolor", "uri",    "byte",   "date-time",
    "date",     "ipv4",     "ipv6",         "cidr",     "mac",    "uuid4",  "password",
};

static void strings(const json_t *v, int depth)
{
	size_t i;
	const char *k;
	json_t *x;
	if (depth > 32)
		return;
	if (json_is_string(v)) {
		for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++)
			(void)crd_format_valid(formats[f], json_string_value(v));
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, x)
			strings(x, depth + 1);
	} else if (json_is_object(v)) {
		json_object_foreach ((json_t *)v, k, x)
			strings(x, depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *s = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	if (!s)
		return 0;
	json_t *causes = json_array();
	KB_REQUIRE(causes);
	unsigned lax = crd_schema_lax(s);
	int n = crd_schema_structural_relaxed(s, "spec.versions[0].schema.openAPIV3Schema", lax,
					      causes);
	KB_REQUIRE(n >= 0 && (size_t)n == json_array_size(causes));
	if (n == 0)
		crd_schema_check_defaults(s, "spec.versions[0].schema.openAPIV3Schema", lax,
					  causes);
	strings(s, 0);
	json_decref(causes);
	json_decref(s);
	return 0;
}
