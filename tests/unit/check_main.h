/* SPDX-License-Identifier: Apache-2.0 */
/* Shared main() for Check unit tests: each test file defines
 * `static Suite *suite(void)` and then includes this header. */
#ifndef KB_TESTS_CHECK_MAIN_H
#define KB_TESTS_CHECK_MAIN_H
#include <check.h>
#include <stdlib.h>

static Suite *suite(void);

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
#endif
