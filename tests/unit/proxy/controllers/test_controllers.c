/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the controllers' pure pieces: cron next times (fields, names,
 * steps, day-of-month/day-of-week OR rule, descriptors, time zones), the
 * pod-template hash, IntOrString scaling and RollingUpdate fenceposts. */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#include "proxy/controllers/controllers.h"

/* 2024-01-15 10:07:30 UTC, a Monday */
#define T0 ((time_t)1705313250)

static time_t next(const char *s, const char *tz, time_t after)
{
	time_t out = 0;
	ck_assert_int_eq(ctrl_cron_next(s, tz, after, &out), 0);
	return out;
}

START_TEST(cron_every_minute)
{
	ck_assert_int_eq(next("* * * * *", NULL, T0), T0 - 30 + 60);
	/* strictly after: an exact minute gives the next one */
	ck_assert_int_eq(next("* * * * *", NULL, T0 - 30), T0 - 30 + 60);
}
END_TEST

START_TEST(cron_fields)
{
	/* every 5 minutes -> 10:10 */
	ck_assert_int_eq(next("*/5 * * * *", NULL, T0), 1705313400);
	/* 0 12 * * * -> 12:00 same day */
	ck_assert_int_eq(next("0 12 * * *", NULL, T0), 1705320000);
	/* 30 9 * * * -> 09:30 next day */
	ck_assert_int_eq(next("30 9 * * *", NULL, T0), 1705397400);
	/* @hourly -> 11:00 */
	ck_assert_int_eq(next("@hourly", NULL, T0), 1705316400);
	/* month names: 0 0 1 feb * -> 2024-02-01 00:00 */
	ck_assert_int_eq(next("0 0 1 feb *", NULL, T0), 1706745600);
	/* day names: 0 0 * * fri -> Friday 2024-01-19 */
	ck_assert_int_eq(next("0 0 * * FRI", NULL, T0), 1705622400);
	/* ranges and lists: 0 8-9,17 * * * -> 17:00 */
	ck_assert_int_eq(next("0 8-9,17 * * *", NULL, T0), 1705338000);
}
END_TEST

START_TEST(cron_dom_dow_or)
{
	/* both restricted: the 20th OR a Wednesday -> Wed 2024-01-17 */
	ck_assert_int_eq(next("0 0 20 * 3", NULL, T0), 1705449600);
	/* dow star: only the 20th */
	ck_assert_int_eq(next("0 0 20 * *", NULL, T0), 1705708800);
	/* 7 is Sunday too -> Sun 2024-01-21 */
	ck_assert_int_eq(next("0 0 * * 7", NULL, T0), 1705795200);
}
END_TEST

START_TEST(cron_timezone)
{
	/* 09:00 in Paris (UTC+1 in January) is 08:00 UTC on the 16th */
	ck_assert_int_eq(next("0 9 * * *", "Europe/Paris", T0), 1705392000);
	/* New York (UTC-5): 06:00 local = 11:00 UTC the same day */
	ck_assert_int_eq(next("0 6 * * *", "America/New_York", T0), 1705316400);
	time_t out;
	ck_assert_int_eq(ctrl_cron_next("0 6 * * *", "Mars/Olympus", T0, &out), -EINVAL);
}
END_TEST

START_TEST(cron_bad)
{
	time_t out;
	ck_assert_int_eq(ctrl_cron_next("* * * *", NULL, T0, &out), -EINVAL);
	ck_assert_int_eq(ctrl_cron_next("60 * * * *", NULL, T0, &out), -EINVAL);
	ck_assert_int_eq(ctrl_cron_next("@fortnightly", NULL, T0, &out), -EINVAL);
	ck_assert_int_eq(ctrl_cron_next("*/0 * * * *", NULL, T0, &out), -EINVAL);
	/* Feb 30 never happens */
	ck_assert_int_eq(ctrl_cron_next("0 0 30 2 *", NULL, T0, &out), -ERANGE);
	ck_assert_int_eq(ctrl_cron_next("@every 90s", NULL, T0, &out), 0);
	ck_assert_int_eq(out, T0 + 90);
}
END_TEST

START_TEST(template_hash)
{
	json_t *a =
	    json_loads("{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":"
		       "[{\"name\":\"c\",\"image\":\"nginx:1.25\"}]}}",
		       0, NULL);
	json_t *b =
	    json_loads("{\"spec\":{\"containers\":[{\"image\":\"nginx:1.25\",\"name\":\"c\"}]},"
		       "\"metadata\":{\"labels\":{\"app\":\"web\"}}}",
		       0, NULL);
	json_t *c =
	    json_loads("{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":{\"containers\":"
		       "[{\"name\":\"c\",\"image\":\"nginx:1.26\"}]}}",
		       0, NULL);
	char ha[32], hb[32], hc[32], hd[32];
	ctrl_template_hash(a, 0, ha, sizeof(ha));
	ctrl_template_hash(b, 0, hb, sizeof(hb));
	ctrl_template_hash(c, 0, hc, sizeof(hc));
	ctrl_template_hash(a, 1, hd, sizeof(hd));
	ck_assert_str_eq(ha, hb); /* key order does not matter */
	ck_assert_str_ne(ha, hc); /* the image does */
	ck_assert_str_ne(ha, hd); /* and the collision count */
	ck_assert(strlen(ha) >= 6 && strlen(ha) <= 10);
	for (const char *p = ha; *p; p++)
		ck_assert_msg(strchr("bcdfghjklmnpqrstvwxz2456789", *p), "unsafe char %c", *p);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}
END_TEST

START_TEST(scaled_values)
{
	int v;
	json_t *p25 = json_string("25%"), *i3 = json_integer(3), *bad = json_string("x%");
	ck_assert_int_eq(ctrl_scaled_value(p25, 10, true, &v), 0);
	ck_assert_int_eq(v, 3); /* 2.5 rounds up */
	ck_assert_int_eq(ctrl_scaled_value(p25, 10, false, &v), 0);
	ck_assert_int_eq(v, 2); /* and down */
	ck_assert_int_eq(ctrl_scaled_value(i3, 10, false, &v), 0);
	ck_assert_int_eq(v, 3);
	ck_assert_int_eq(ctrl_scaled_value(bad, 10, false, &v), -EINVAL);
	json_decref(p25);
	json_decref(i3);
	json_decref(bad);
}
END_TEST

START_TEST(fenceposts)
{
	int s, u;
	json_t *spec = json_loads("{\"replicas\":4}", 0, NULL);
	ck_assert_int_eq(ctrl_rolling_fenceposts(spec, &s, &u), 0);
	ck_assert_int_eq(s, 1); /* 25% of 4 */
	ck_assert_int_eq(u, 1);
	json_decref(spec);
	spec = json_loads("{\"replicas\":1,\"strategy\":{\"rollingUpdate\":{\"maxSurge\":0,"
			  "\"maxUnavailable\":\"10%\"}}}",
			  0, NULL);
	ck_assert_int_eq(ctrl_rolling_fenceposts(spec, &s, &u), 0);
	ck_assert_int_eq(s, 0);
	ck_assert_int_eq(u, 1); /* both zero: one may be unavailable */
	json_decref(spec);
	spec = json_loads("{\"replicas\":10,\"strategy\":{\"rollingUpdate\":{\"maxSurge\":\"15%\","
			  "\"maxUnavailable\":\"15%\"}}}",
			  0, NULL);
	ck_assert_int_eq(ctrl_rolling_fenceposts(spec, &s, &u), 0);
	ck_assert_int_eq(s, 2); /* 1.5 up */
	ck_assert_int_eq(u, 1); /* 1.5 down */
	json_decref(spec);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("controllers");
	TCase *tc = tcase_create("pure");
	tcase_add_test(tc, cron_every_minute);
	tcase_add_test(tc, cron_fields);
	tcase_add_test(tc, cron_dom_dow_or);
	tcase_add_test(tc, cron_timezone);
	tcase_add_test(tc, cron_bad);
	tcase_add_test(tc, template_hash);
	tcase_add_test(tc, scaled_values);
	tcase_add_test(tc, fenceposts);
	suite_add_tcase(s, tc);
	return s;
}

#include "tests/unit/check_main.h"
