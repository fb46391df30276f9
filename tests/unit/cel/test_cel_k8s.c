/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of cel/ (placeholder: the first test is written with the code). */
#include <check.h>

#include "cel/cel_impl.h"

START_TEST(arena)
{
	cel_ctx_t *c = cel_ctx_new(0);
	cel_value_t v = cel_string_copy(c, "abc", 3);
	ck_assert_int_eq(v.kind, CEL_STRING);
	ck_assert_int_eq(v.s.len, 3);
	cel_ctx_free(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cel_k8s");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, arena);
	suite_add_tcase(s, tc);
	return s;
}

#include "tests/unit/check_main.h"
