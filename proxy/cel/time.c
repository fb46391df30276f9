/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL's durations and timestamps: Go's duration syntax ("1h30m", "1.5s"),
 * RFC 3339 timestamps, their string forms as cel-go writes them, and the
 * timestamp getters with an optional time zone (fixed offsets "+01:00" or
 * IANA names read from /usr/share/zoneinfo, as Go's time.LoadLocation;
 * each zone file is read once and kept).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/cel_impl.h"
#include "proxy/cel/cel_time.h"

#define NS 1000000000LL

static const struct {
	const char *unit;
	int64_t ns;
} units[] = {{"ns", 1},           {"us", 1000},     {"\xc2\xb5s", 1000},
	     {"\xce\xbcs", 1000}, {"ms", 1000000},  {"s", NS},
	     {"m", 60 * NS},      {"h", 3600 * NS}, {NULL, 0}};

/* One "<number><unit>" at s[*i]; adds to *total. */
static int duration_part(const char *s, size_t n, size_t *i, uint64_t *total)
{
	uint64_t whole = 0, frac = 0, scale = 1;
	size_t start = *i;
	while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
		if (whole > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		whole = whole * 10 + (uint64_t)(s[(*i)++] - '0');
	}
	bool digits = *i > start;
	if (*i < n && s[*i] == '.') {
		(*i)++;
		size_t fs = *i;
		while (*i < n && s[*i] >= '0' && s[*i] <= '9') {
			if (scale < 1000000000000000000ULL) {
				frac = frac * 10 + (uint64_t)(s[*i] - '0');
				scale *= 10;
			}
			(*i)++;
		}
		digits = digits || *i > fs;
	}
	if (!digits)
		return -EINVAL;
	size_t us = *i;
	while (*i < n && !(s[*i] >= '0' && s[*i] <= '9') && s[*i] != '.')
		(*i)++;
	for (int k = 0; units[k].unit; k++) {
		if (strlen(units[k].unit) != *i - us || memcmp(units[k].unit, s + us, *i - us))
			continue;
		uint64_t u = (uint64_t)units[k].ns, v;
		if (__builtin_mul_overflow(whole, u, &v))
			return -ERANGE;
		v += (uint64_t)((long double)frac * u / scale);
		if (__builtin_add_overflow(*total, v, total))
			return -ERANGE;
		return 0;
	}
	return *i == us ? -ENODATA : -ENOENT;
}

int cel_parse_duration(const char *s, size_t n, int64_t *nanos)
{
	size_t i = 0;
	bool neg = false;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	if (n - i == 1 && s[i] == '0') {
		*nanos = 0;
		return 0;
	}
	if (n == 1 && s[0] == '0') {
		*nanos = 0;
		return 0;
	}
	if (i == n)
		return -EINVAL;
	uint64_t total = 0;
	while (i < n) {
		int rc = duration_part(s, n, &i, &total);
		if (rc < 0)
			return rc;
	}
	if (total > (uint64_t)INT64_MAX + (neg ? 1 : 0))
		return -ERANGE;
	*nanos = neg ? (int64_t)(0 - total) : (int64_t)total;
	return 0;
}

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
int64_t cel_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

void cel_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static bool digits(const char *s, size_t n, size_t at, int count, int *out)
{
	*out = 0;
	for (int k = 0; k < count; k++) {
		if (at + (size_t)k >= n || s[at + k] < '0' || s[at + k] > '9')
			return false;
		*out = *out * 10 + (s[at + k] - '0');
	}
	return true;
}

static int parse_offset(const char *s, size_t n, size_t i, int64_t *off)
{
	int oh, om;
	if (i < n && s[i] == 'Z' && i + 1 == n) {
		*off = 0;
		return 0;
	}
	if (i + 6 != n || (s[i] != '+' && s[i] != '-') || !digits(s, n, i + 1, 2, &oh) ||
	    s[i + 3] != ':' || !digits(s, n, i + 4, 2, &om) || oh > 23 || om > 59)
		return -EINVAL;
	*off = (oh * 3600 + om * 60) * (s[i] == '-' ? -1 : 1);
	return 0;
}

int cel_parse_timestamp(const char *s, size_t n, int64_t *nanos)
{
	int y, mo, d, h, mi, se;
	if (n < 20 || !digits(s, n, 0, 4, &y) || s[4] != '-' || !digits(s, n, 5, 2, &mo) ||
	    s[7] != '-' || !digits(s, n, 8, 2, &d) || s[10] != 'T' || !digits(s, n, 11, 2, &h) ||
	    s[13] != ':' || !digits(s, n, 14, 2, &mi) || s[16] != ':' || !digits(s, n, 17, 2, &se))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59)
		return -EINVAL;
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
		return -EINVAL;
	size_t i = 19;
	int64_t frac = 0, scale = NS;
	if (i < n && s[i] == '.') {
		i++;
		size_t fs = i;
		while (i < n && s[i] >= '0' && s[i] <= '9') {
			if (scale > 1) {
				scale /= 10;
				frac += (s[i] - '0') * scale;
			}
			i++;
		}
		if (i == fs)
			return -EINVAL;
	}
	int64_t off;
	if (parse_offset(s, n, i, &off) < 0)
		return -EINVAL;
	int64_t secs = cel_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 +
		       mi * 60 + se - off;
	if (y < 1 || secs < CEL_MIN_TS_SECONDS || secs > CEL_MAX_TS_SECONDS)
		return -ERANGE;
	if (__builtin_mul_overflow(secs, NS, nanos) || __builtin_add_overflow(*nanos, frac, nanos))
		return -ERANGE;
	return 0;
}

/* Go's time.Parse(time.RFC3339, s) error for a string cel_parse_timestamp
 * refused: "cannot parse "x" as "2006"", "month out of range", ... */
void cel_timestamp_error(const char *s, size_t n, char *msg, size_t cap)
{
	static const struct {
		const char *layout;
		int digits; /* 0: a literal */
		int lo, hi;
		const char *range;
	} el[] = {
	    {"2006", 4, 0, 9999, NULL}, {"-", 0, 0, 0, NULL},       {"01", 2, 1, 12, "month"},
	    {"-", 0, 0, 0, NULL},       {"02", 2, 1, 31, "day"},    {"T", 0, 0, 0, NULL},
	    {"15", 2, 0, 23, "hour"},   {":", 0, 0, 0, NULL},       {"04", 2, 0, 59, "minute"},
	    {":", 0, 0, 0, NULL},       {"05", 2, 0, 59, "second"},
	};
	size_t at = 0;
	for (size_t k = 0; k < sizeof(el) / sizeof(el[0]); k++) {
		int v = 0;
		size_t need = el[k].digits ? (size_t)el[k].digits : strlen(el[k].layout);
		bool ok = el[k].digits ? digits(s, n, at, el[k].digits, &v)
				       : (at + need <= n && !memcmp(s + at, el[k].layout, need));
		if (!ok) {
			snprintf(msg, cap,
				 "parsing time \"%.*s\" as \"2006-01-02T15:04:05Z07:00\": cannot "
				 "parse \"%.*s\" as \"%s\"",
				 (int)n, s, (int)(n - at), s + at, el[k].layout);
			return;
		}
		if (el[k].range && (v < el[k].lo || v > el[k].hi)) {
			snprintf(msg, cap, "parsing time \"%.*s\": %s out of range", (int)n, s,
				 el[k].range);
			return;
		}
		at += need;
	}
	if (at < n && s[at] == '.')
		for (at++; at < n && s[at] >= '0' && s[at] <= '9'; at++)
			;
	int64_t off;
	size_t end = at;
	if (end < n && s[end] == 'Z')
		end++;
	else if (n - at >= 6 && parse_offset(s, at + 6, at, &off) == 0)
		end = at + 6;
	if (end == at) {
		snprintf(msg, cap,
			 "parsing time \"%.*s\" as \"2006-01-02T15:04:05Z07:00\": cannot parse "
			 "\"%.*s\" as \"Z07:00\"",
			 (int)n, s, (int)(n - at), s + at);
		return;
	}
	if (end < n) {
		snprintf(msg, cap, "parsing time \"%.*s\": extra text: \"%.*s\"", (int)n, s,
			 (int)(n - end), s + end);
		return;
	}
	snprintf(msg, cap, "parsing time \"%.*s\": day out of range", (int)n, s);
}

/* ".5" for 500000000 ns: the fraction without trailing zeros, or "". */
static void fraction(int64_t ns, char *buf)
{
	buf[0] = 0;
	if (ns == 0)
		return;
	snprintf(buf, 12, ".%09lld", (long long)ns);
	size_t l = strlen(buf);
	while (l > 1 && buf[l - 1] == '0')
		buf[--l] = 0;
}

const char *cel_format_duration(cel_ctx_t *c, int64_t nanos)
{
	char frac[16], buf[64];
	uint64_t a = nanos < 0 ? 0 - (uint64_t)nanos : (uint64_t)nanos;
	fraction((int64_t)(a % NS), frac);
	int n = snprintf(buf, sizeof(buf), "%s%llu%ss", nanos < 0 ? "-" : "",
			 (unsigned long long)(a / NS), frac);
	return cel_strndup(c, buf, (size_t)n);
}

void cel_split_time(int64_t nanos, int64_t offset, struct cel_tm *tm)
{
	int64_t secs = nanos / NS, ns = nanos % NS;
	if (ns < 0) {
		ns += NS;
		secs--;
	}
	secs += offset;
	int64_t days = secs / 86400, rem = secs % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	cel_civil_from_days(days, &tm->year, &tm->month, &tm->day);
	tm->hour = (int)(rem / 3600);
	tm->min = (int)(rem / 60 % 60);
	tm->sec = (int)(rem % 60);
	tm->nsec = ns;
	tm->wday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
	tm->yday = (int)(days - cel_days_from_civil(tm->year, 1, 1));
}

const char *cel_format_timestamp(cel_ctx_t *c, int64_t nanos)
{
	struct cel_tm tm;
	cel_split_time(nanos, 0, &tm);
	char frac[16], buf[80];
	fraction(tm.nsec, frac);
	int n = snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02d:%02d:%02d%sZ", (long long)tm.year,
			 tm.month, tm.day, tm.hour, tm.min, tm.sec, frac);
	return cel_strndup(c, buf, (size_t)n);
}

/* ---- time zones ---- */

static int64_t be(const unsigned char *p, int len)
{
	uint64_t v = 0;
	for (int k = 0; k < len; k++)
		v = v << 8 | p[k];
	if (len == 4)
		return (int32_t)(uint32_t)v;
	return (int64_t)v;
}

/* ---- POSIX TZ rules (a zone file's footer, for times after its last
 * transition): "CET-1CEST,M3.5.0,M10.5.0/3" ---- */

struct posix_tz {
	int64_t std, dst; /* UTC offsets, seconds east */
	bool has_dst;
	char start[24], end[24]; /* "M3.5.0/2" */
};

static const char *tz_name(const char *p)
{
	if (*p == '<') {
		const char *e = strchr(p, '>');
		return e ? e + 1 : NULL;
	}
	const char *q = p;
	while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
		q++;
	return q - p >= 3 ? q : NULL;
}

/* [+-]hh[:mm[:ss]] as seconds; *p advanced. */
static bool tz_hms(const char **p, int64_t *out)
{
	int sign = 1;
	if (**p == '+' || **p == '-')
		sign = *(*p)++ == '-' ? -1 : 1;
	if (**p < '0' || **p > '9')
		return false;
	int64_t v = 0;
	for (int part = 0; part < 3; part++) {
		char *end;
		long x = strtol(*p, &end, 10);
		if (end == *p)
			return false;
		v += x * (part == 0 ? 3600 : part == 1 ? 60 : 1);
		*p = end;
		if (**p != ':')
			break;
		(*p)++;
	}
	*out = sign * v;
	return true;
}

static bool parse_posix_tz(const char *p, struct posix_tz *tz)
{
	memset(tz, 0, sizeof(*tz));
	int64_t off;
	p = tz_name(p);
	if (!p || !tz_hms(&p, &off))
		return false;
	tz->std = -off;
	if (!*p)
		return true;
	p = tz_name(p);
	if (!p)
		return false;
	tz->has_dst = true;
	tz->dst = tz->std + 3600;
	if (*p && *p != ',') {
		if (!tz_hms(&p, &off))
			return false;
		tz->dst = -off;
	}
	return sscanf(p, ",%23[^,],%23s", tz->start, tz->end) == 2;
}

static bool leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Seconds from the start of year y (local) of a rule date "Mm.w.d[/time]",
 * "Jn[/time]" or "n[/time]". */
static bool rule_seconds(const char *r, int64_t y, int64_t *out)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int64_t day, time = 7200;
	int m, w, d, n;
	const char *slash = strchr(r, '/');
	if (slash) {
		const char *t = slash + 1;
		if (!tz_hms(&t, &time))
			return false;
	}
	if (sscanf(r, "M%d.%d.%d", &m, &w, &d) == 3 && m >= 1 && m <= 12) {
		int64_t first = cel_days_from_civil(y, (unsigned)m, 1);
		int wd1 = (int)(((first % 7) + 11) % 7);
		int md = mdays[m - 1] + (m == 2 && leap(y));
		int dom = 1 + (d - wd1 + 7) % 7 + (w - 1) * 7;
		while (dom > md)
			dom -= 7;
		day = first + dom - 1 - cel_days_from_civil(y, 1, 1);
	} else if (sscanf(r, "J%d", &n) == 1) {
		day = n - 1 + (leap(y) && n >= 60);
	} else if (sscanf(r, "%d", &n) == 1) {
		day = n;
	} else {
		return false;
	}
	*out = day * 86400 + time;
	return true;
}

/* The offset a POSIX TZ rule gives at UTC time t (seconds). */
static bool posix_offset(const char *rule, int64_t t, int64_t *off)
{
	struct posix_tz tz;
	if (!parse_posix_tz(rule, &tz))
		return false;
	*off = tz.std;
	if (!tz.has_dst)
		return true;
	int64_t y;
	unsigned mo, d;
	cel_civil_from_days((t + tz.std) / 86400 - ((t + tz.std) % 86400 < 0), &y, &mo, &d);
	int64_t base = cel_days_from_civil(y, 1, 1) * 86400, s, e;
	if (!rule_seconds(tz.start, y, &s) || !rule_seconds(tz.end, y, &e))
		return false;
	s = base + s - tz.std;
	e = base + e - tz.dst;
	bool in_dst = s < e ? (t >= s && t < e) : !(t >= e && t < s);
	*off = in_dst ? tz.dst : tz.std;
	return true;
}

/* The UTC offset of zone file data at time t (seconds). */
static int tzif_offset(const unsigned char *d, size_t n, int64_t t, int64_t *off)
{
	if (n < 44 || memcmp(d, "TZif", 4))
		return -EINVAL;
	int tsize = 4;
	size_t at = 0;
	for (int pass = 0; pass < 2; pass++) {
		int64_t isutc = be(d + at + 20, 4), isstd = be(d + at + 24, 4);
		int64_t leap = be(d + at + 28, 4), timecnt = be(d + at + 32, 4);
		int64_t typecnt = be(d + at + 36, 4), charcnt = be(d + at + 40, 4);
		size_t body = (size_t)(timecnt * tsize + timecnt + typecnt * 6 + charcnt +
				       leap * (tsize + 4) + isstd + isutc);
		if (pass == 0 && d[4] >= '2' && at + 44 + body + 44 <= n) {
			at += 44 + body;
			tsize = 8;
			continue;
		}
		if (at + 44 + body > n || typecnt < 1)
			return -EINVAL;
		const unsigned char *times = d + at + 44, *idx = times + timecnt * tsize;
		const unsigned char *types = idx + timecnt;
		int64_t type = 0;
		for (int64_t k = 0; k < timecnt; k++)
			if (be(times + k * tsize, tsize) <= t)
				type = idx[k];
		if (type >= typecnt)
			return -EINVAL;
		*off = be(types + type * 6, 4);
		/* after the last transition the footer's rule decides (v2+) */
		const unsigned char *footer = d + at + 44 + body;
		bool last = timecnt == 0 || be(times + (timecnt - 1) * tsize, tsize) <= t;
		if (tsize == 8 && last && footer < d + n && *footer == '\n') {
			char rule[128];
			size_t k = 0;
			for (footer++; footer < d + n && *footer != '\n' && k < sizeof(rule) - 1;)
				rule[k++] = (char)*footer++;
			rule[k] = 0;
			if (k)
				posix_offset(rule, t, off);
		}
		return 0;
	}
	return -EINVAL;
}

/* Zone files read once per process (a few, kept for its life: the zones
 * an installation's rules name are few), shared by all threads. */
#define ZONE_CACHE    32
#define ZONE_MAX_SIZE (256 * 1024)

static pthread_mutex_t zone_lock = PTHREAD_MUTEX_INITIALIZER;
static struct zone {
	char name[208];
	unsigned char *data; /* immutable once cached */
	size_t len;
} zones[ZONE_CACHE];
static int nzones;

static unsigned char *read_zone(const char *name, size_t *len)
{
	char path[256];
	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	unsigned char *buf = malloc(ZONE_MAX_SIZE);
	if (buf)
		*len = fread(buf, 1, ZONE_MAX_SIZE, f);
	fclose(f);
	return buf;
}

/* The cached data of zone name, reading it the first time; NULL when
 * there is no such zone. *tmp is set when the data is not cached (the
 * cache is full) and the caller frees it. */
static const unsigned char *zone_data(const char *name, size_t *len, unsigned char **tmp)
{
	*tmp = NULL;
	pthread_mutex_lock(&zone_lock);
	for (int k = 0; k < nzones; k++)
		if (!strcmp(zones[k].name, name)) {
			*len = zones[k].len;
			pthread_mutex_unlock(&zone_lock);
			return zones[k].data;
		}
	unsigned char *data = read_zone(name, len);
	if (data && nzones < ZONE_CACHE) {
		snprintf(zones[nzones].name, sizeof(zones[nzones].name), "%s", name);
		zones[nzones].data = data;
		zones[nzones++].len = *len;
	} else {
		*tmp = data;
	}
	pthread_mutex_unlock(&zone_lock);
	return data;
}

static int zone_file_offset(const char *name, int64_t t, int64_t *off)
{
	if (!*name || name[0] == '/' || strstr(name, "..") || strlen(name) > 200)
		return -EINVAL;
	size_t len = 0;
	unsigned char *tmp;
	const unsigned char *data = zone_data(name, &len, &tmp);
	if (!data)
		return -ENOENT;
	int rc = tzif_offset(data, len, t, off);
	free(tmp);
	return rc;
}

/* cel-go's numeric zone: "[+-]h:m" (hours and minutes as integers). */
static int numeric_offset(const char *name, int64_t *off)
{
	char *end;
	const char *colon = strchr(name, ':');
	long h = strtol(name, &end, 10);
	if (end != colon || colon == name)
		return -EINVAL;
	long m = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || colon[1] == '+' || colon[1] == '-')
		return -EINVAL;
	long minutes = name[0] == '-' ? h * 60 - m : h * 60 + m;
	*off = minutes * 60;
	return 0;
}

int cel_zone_offset(const char *name, int64_t nanos, int64_t *off)
{
	size_t n = strlen(name);
	int64_t secs = nanos / NS;
	if (n == 0 || !strcmp(name, "UTC") || !strcmp(name, "Z")) {
		*off = 0;
		return 0;
	}
	if (strchr(name, ':'))
		return numeric_offset(name, off);
	return zone_file_offset(name, secs, off);
}
