/* SPDX-License-Identifier: Apache-2.0 */
/* placeholder: replaced by the real tests of store/store */
#include <check.h>
static Suite *suite(void);
#include "tests/unit/check_main.h"
START_TEST(placeholder) { ck_assert_int_eq(1 + 1, 2); }
END_TEST
static Suite *suite(void)
{
	Suite *s = suite_create("store/store");
	TCase *tc = tcase_create("placeholder");
	tcase_add_test(tc, placeholder);
	suite_add_tcase(s, tc);
	return s;
}
