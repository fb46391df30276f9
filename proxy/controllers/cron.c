/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cron schedules as CronJobs use them (the robfig/cron standard parser):
 * five fields (minute, hour, day of month, month, day of week) with *, ?,
 * lists, ranges, steps and month/day names, the @yearly/@annually/@monthly/
 * @weekly/@daily/@midnight/@hourly descriptors and "@every <duration>".
 * Day of month and day of week combine with OR when both are restricted,
 * AND when either is a star. Times are evaluated in an IANA time zone by
 * switching TZ around localtime_r/mktime (loop thread only; restored after).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "proxy/controllers/controllers_impl.h"

struct cron {
	uint64_t min, hour, dom, mon, dow;
	bool dom_star, dow_star;
	long every; /* seconds, for @every; 0 otherwise */
};

static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun",
				     "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

static int parse_num(const char **p, const char *const *names, int nnames, int base, int *out)
{
	if (isdigit((unsigned char)**p)) {
		char *end;
		long v = strtol(*p, &end, 10);
		*p = end;
		*out = (int)v;
		return 0;
	}
	for (int i = 0; names && i < nnames; i++) {
		if (strncasecmp(*p, names[i], 3) == 0) {
			*p += 3;
			*out = i + base;
			return 0;
		}
	}
	return -EINVAL;
}

/* One comma-separated term: *, ?, N, N-M, with an optional /step. */
static int parse_term(const char **p, int lo, int hi, const char *const *names, int nnames,
		      int base, uint64_t *bits, bool *star)
{
	int a = lo, b = hi, step = 1;
	if (**p == '*' || **p == '?') {
		(*p)++;
		*star = true;
	} else {
		if (parse_num(p, names, nnames, base, &a) < 0)
			return -EINVAL;
		b = a;
		if (**p == '-') {
			(*p)++;
			if (parse_num(p, names, nnames, base, &b) < 0)
				return -EINVAL;
		}
	}
	if (**p == '/') {
		(*p)++;
		if (!isdigit((unsigned char)**p))
			return -EINVAL;
		step = (int)strtol(*p, (char **)p, 10);
		if (step <= 0)
			return -EINVAL;
		if (a == b && !*star)
			b = hi;
	}
	if (a < lo || b > hi || a > b)
		return -EINVAL;
	for (int v = a; v <= b; v += step)
		*bits |= 1ull << v;
	return 0;
}

static int parse_field(const char *f, int lo, int hi, const char *const *names, int nnames,
		       int base, uint64_t *bits, bool *star)
{
	const char *p = f;
	*bits = 0;
	*star = false;
	for (;;) {
		if (parse_term(&p, lo, hi, names, nnames, base, bits, star) < 0)
			return -EINVAL;
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
}

static long parse_duration(const char *s)
{
	double total = 0;
	if (!*s)
		return -1;
	while (*s) {
		char *end;
		double v = strtod(s, &end);
		if (end == s)
			return -1;
		s = end;
		if (strncmp(s, "ms", 2) == 0) {
			v /= 1000;
			s += 2;
		} else if (*s == 'h') {
			v *= 3600;
			s++;
		} else if (*s == 'm') {
			v *= 60;
			s++;
		} else if (*s == 's') {
			s++;
		} else {
			return -1;
		}
		total += v;
	}
	return total >= 1 ? (long)total : -1;
}

static const char *descriptor(const char *s)
{
	static const char *const map[][2] = {
	    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
	    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
	    {"@hourly", "0 * * * *"},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(s, map[i][0]) == 0)
			return map[i][1];
	return NULL;
}

static int cron_parse(const char *sched, struct cron *c)
{
	memset(c, 0, sizeof(*c));
	while (isspace((unsigned char)*sched))
		sched++;
	if (strncmp(sched, "@every ", 7) == 0) {
		c->every = parse_duration(sched + 7);
		return c->every > 0 ? 0 : -EINVAL;
	}
	const char *d = sched[0] == '@' ? descriptor(sched) : sched;
	if (!d)
		return -EINVAL;
	char buf[256], *f[6], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", d);
	int n = 0;
	for (char *t = strtok_r(buf, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (n == 5)
			return -EINVAL;
		f[n++] = t;
	}
	bool star;
	if (n != 5 || parse_field(f[0], 0, 59, NULL, 0, 0, &c->min, &star) < 0 ||
	    parse_field(f[1], 0, 23, NULL, 0, 0, &c->hour, &star) < 0 ||
	    parse_field(f[2], 1, 31, NULL, 0, 0, &c->dom, &c->dom_star) < 0 ||
	    parse_field(f[3], 1, 12, months, 12, 1, &c->mon, &star) < 0 ||
	    parse_field(f[4], 0, 7, days, 7, 0, &c->dow, &c->dow_star) < 0)
		return -EINVAL;
	if (c->dow & (1ull << 7))
		c->dow |= 1;
	return 0;
}

static bool day_ok(const struct cron *c, const struct tm *tm)
{
	bool dom = c->dom & (1ull << tm->tm_mday);
	bool dow = c->dow & (1ull << tm->tm_wday);
	if (c->dom_star || c->dow_star)
		return dom && dow;
	return dom || dow;
}

/* Runs in the zone already set with TZ. */
static int next_local(const struct cron *c, time_t after, time_t *out)
{
	time_t t = after - (after % 60) + 60;
	time_t limit = after + 5 * 366 * 86400L;
	struct tm tm;
	while (t <= limit) {
		localtime_r(&t, &tm);
		tm.tm_sec = 0;
		if (!(c->mon & (1ull << (tm.tm_mon + 1)))) {
			tm.tm_mon++;
			tm.tm_mday = 1;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!day_ok(c, &tm)) {
			tm.tm_mday++;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!(c->hour & (1ull << tm.tm_hour))) {
			tm.tm_hour++;
			tm.tm_min = 0;
		} else if (!(c->min & (1ull << tm.tm_min))) {
			tm.tm_min++;
		} else {
			*out = t;
			return 0;
		}
		tm.tm_isdst = -1;
		time_t nt = mktime(&tm);
		t = nt > t ? nt : t + 60;
	}
	return -ERANGE;
}

static bool zone_exists(const char *tz)
{
	if (strstr(tz, "..") || tz[0] == '/')
		return false;
	char path[512];
	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", tz);
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	fclose(f);
	return true;
}

int ctrl_cron_next(const char *schedule, const char *tz, time_t after, time_t *out)
{
	struct cron c;
	if (!schedule || cron_parse(schedule, &c) < 0)
		return -EINVAL;
	if (c.every) {
		*out = after + c.every;
		return 0;
	}
	if (tz && *tz && strcmp(tz, "UTC") != 0 && strcmp(tz, "Etc/UTC") != 0 && !zone_exists(tz))
		return -EINVAL;
	const char *old = getenv("TZ");
	char *saved = old ? strdup(old) : NULL;
	setenv("TZ", tz && *tz ? tz : "UTC", 1);
	tzset();
	int rc = next_local(&c, after, out);
	if (saved) {
		setenv("TZ", saved, 1);
		free(saved);
	} else {
		unsetenv("TZ");
	}
	tzset();
	return rc;
}
