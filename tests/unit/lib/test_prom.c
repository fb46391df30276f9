/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/prom: the Prometheus text exposition writer (HELP/TYPE lines,
 * label value escaping, numbers as client_golang writes them, histograms
 * with cumulative buckets ending at +Inf, _sum and _count).
 */
#include <check.h>
#include <math.h>
#include <string.h>

#include "lib/prom.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static void float_is(double v, const char *want)
{
	struct kb_buf b = {0};
	ck_assert_int_eq(kb_prom_float(&b, v), 0);
	ck_assert_str_eq(b.data, want);
	kb_buf_free(&b);
}

START_TEST(numbers_as_go_writes_them)
{
	float_is(0, "0");
	float_is(1, "1");
	float_is(3, "3");
	float_is(0.005, "0.005");
	float_is(0.025, "0.025");
	float_is(1.25, "1.25");
	float_is(60, "60");
	float_is(1000, "1000");
	float_is(100000, "100000");
	float_is(999999, "999999"); /* the last integer written plainly */
	float_is(-7, "-7");
	float_is(1e6, "1e+06");
	float_is(1e9, "1e+09");
	float_is(1234567, "1.234567e+06");
	float_is(0.0001, "0.0001");
	float_is(0.00001, "1e-05");
	float_is(-2.5, "-2.5");
	float_is(1700000000.25, "1.70000000025e+09");
	float_is(INFINITY, "+Inf");
	float_is(-INFINITY, "-Inf");
	float_is(NAN, "NaN");
}
END_TEST

START_TEST(help_and_type_lines)
{
	struct kb_buf b = {0};
	ck_assert_int_eq(kb_prom_family(&b, "x_total", "counter", "Counts a\\b\nthing \"q\"."), 0);
	ck_assert_str_eq(b.data, "# HELP x_total Counts a\\\\b\\nthing \"q\".\n"
				 "# TYPE x_total counter\n");
	kb_buf_free(&b);
}
END_TEST

START_TEST(label_values_are_escaped)
{
	struct kb_buf b = {0};
	const char *l[] = {"path", "a\\b\"c\nd", "empty", ""};
	ck_assert_int_eq(kb_prom_sample(&b, "m", NULL, l, 2, 7), 0);
	ck_assert_str_eq(b.data, "m{path=\"a\\\\b\\\"c\\nd\",empty=\"\"} 7\n");
	b.len = 0;
	ck_assert_int_eq(kb_prom_sample(&b, "m", "_total", NULL, 0, 2.5), 0);
	ck_assert_str_eq(b.data, "m_total 2.5\n");
	b.len = 0;
	ck_assert_int_eq(kb_prom_escape(&b, "plain"), 0);
	ck_assert_str_eq(b.data, "plain");
	kb_buf_free(&b);
}
END_TEST

START_TEST(histogram_lines)
{
	static const double bounds[] = {0.1, 1, 10};
	uint64_t counts[4] = {0};
	double obs[] = {0.05, 0.1, 0.5, 20, 3};
	double sum = 0;
	for (size_t i = 0; i < 5; i++) {
		counts[kb_prom_bucket(bounds, 3, obs[i])]++;
		sum += obs[i];
	}
	ck_assert_uint_eq(counts[0], 2); /* le is inclusive */
	ck_assert_uint_eq(counts[3], 1);
	struct kb_buf b = {0};
	const char *l[] = {"verb", "GET"};
	ck_assert_int_eq(kb_prom_histogram(&b, "d_seconds", l, 1, bounds, 3, counts, sum), 0);
	ck_assert_str_eq(b.data, "d_seconds_bucket{verb=\"GET\",le=\"0.1\"} 2\n"
				 "d_seconds_bucket{verb=\"GET\",le=\"1\"} 3\n"
				 "d_seconds_bucket{verb=\"GET\",le=\"10\"} 4\n"
				 "d_seconds_bucket{verb=\"GET\",le=\"+Inf\"} 5\n"
				 "d_seconds_sum{verb=\"GET\"} 23.65\n"
				 "d_seconds_count{verb=\"GET\"} 5\n");
	b.len = 0;
	uint64_t none[4] = {0};
	ck_assert_int_eq(kb_prom_histogram(&b, "h", NULL, 0, bounds, 3, none, 0), 0);
	ck_assert_str_eq(b.data,
			 "h_bucket{le=\"0.1\"} 0\nh_bucket{le=\"1\"} 0\n"
			 "h_bucket{le=\"10\"} 0\nh_bucket{le=\"+Inf\"} 0\nh_sum 0\nh_count 0\n");
	kb_buf_free(&b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("prom");
	TCase *tc = tcase_create("exposition");
	tcase_add_test(tc, numbers_as_go_writes_them);
	tcase_add_test(tc, help_and_type_lines);
	tcase_add_test(tc, label_values_are_escaped);
	tcase_add_test(tc, histogram_lines);
	suite_add_tcase(s, tc);
	return s;
}
