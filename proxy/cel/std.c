/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL's standard definitions (size, contains, startsWith, endsWith,
 * matches, the type conversions, the timestamp and duration getters) and
 * the table entries of the generic libraries kube enables, each tagged with
 * its CEL_LIB_* flag: cel-go's ext strings (version 2), kube's lists and
 * regex libraries, ext sets, ext encoders and the optional types' functions
 * (strings.c and format.c hold the ext strings functions, ext.c the
 * others, time.c the calendar and time zones, regex.c the patterns).
 */
#include <errno.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/cel_impl.h"
#include "proxy/cel/std.h"
#include "proxy/cel/cel_time.h"

/* ---- text helpers ---- */

size_t cel_utf8_len(struct cel_str s)
{
	size_t n = 0;
	for (size_t i = 0; i < s.len; i++)
		n += ((unsigned char)s.p[i] & 0xc0) != 0x80;
	return n;
}

bool cel_utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char ch = (unsigned char)s[i];
		size_t len = ch < 0x80         ? 1
			     : (ch >> 5) == 6  ? 2
			     : (ch >> 4) == 14 ? 3
			     : (ch >> 3) == 30 ? 4
					       : 0;
		if (!len || i + len > n || (len == 2 && ch < 0xc2))
			return false;
		uint32_t cp = len == 1 ? ch : ch & (0x7f >> len);
		for (size_t k = 1; k < len; k++) {
			if (((unsigned char)s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | ((unsigned char)s[i + k] & 0x3f);
		}
		if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) ||
		    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		i += len;
	}
	return true;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t cel_base64_encode(const char *in, size_t n, char *out)
{
	size_t o = 0;
	const unsigned char *p = (const unsigned char *)in;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = 0;
	return o;
}

long cel_base64_decode(const char *in, size_t n, char *out)
{
	size_t o = 0, bits = 0, pad = 0;
	uint32_t acc = 0;
	for (size_t i = 0; i < n; i++) {
		if (in[i] == '=') {
			pad++;
			continue;
		}
		const char *k = strchr(b64, in[i]);
		if (!k || !in[i] || pad)
			return -1 - (long)i;
		acc = acc << 6 | (uint32_t)(k - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)(acc >> bits);
		}
	}
	if ((pad && (n % 4 || pad > 2)) || bits >= 6)
		return -1 - (long)n;
	return (long)o;
}

/* Go's %g of a float64 (strconv.FormatFloat(d, 'g', -1, 64)), as cel-go's
 * string(double): shortest digits, exponent form below 1e-4 and from 1e6. */
static int format_double(double d, char *buf, size_t cap)
{
	if (isnan(d))
		return snprintf(buf, cap, "NaN");
	if (isinf(d))
		return snprintf(buf, cap, d > 0 ? "+Inf" : "-Inf");
	char e[64];
	int prec;
	for (prec = 0; prec < 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec, d);
		if (strtod(e, NULL) == d)
			break;
	}
	int exp = atoi(strchr(e, 'e') + 1);
	if (exp < -4 || exp >= 6) {
		char *m = strchr(e, 'e');
		*m = 0;
		return snprintf(buf, cap, "%se%c%02d", e, exp < 0 ? '-' : '+', abs(exp));
	}
	int decimals = prec - exp > 0 ? prec - exp : 0;
	return snprintf(buf, cap, "%.*f", decimals, d);
}

const char *cel_scalar_string(cel_ctx_t *c, cel_value_t v, size_t *len)
{
	char buf[64];
	int n;
	switch (v.kind) {
	case CEL_STRING:
	case CEL_BYTES:
	case CEL_TYPE: *len = v.s.len; return cel_strndup(c, v.s.p, v.s.len);
	case CEL_INT: n = snprintf(buf, sizeof(buf), "%lld", (long long)v.i); break;
	case CEL_UINT: n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v.u); break;
	case CEL_DOUBLE: n = format_double(v.d, buf, sizeof(buf)); break;
	case CEL_BOOL: n = snprintf(buf, sizeof(buf), "%s", v.b ? "true" : "false"); break;
	case CEL_DURATION:
	case CEL_TIMESTAMP: {
		const char *s = v.kind == CEL_DURATION ? cel_format_duration(c, v.i)
						       : cel_format_timestamp(c, v.i);
		*len = strlen(s);
		return s;
	}
	default: return NULL;
	}
	*len = (size_t)n;
	return cel_strndup(c, buf, (size_t)n);
}

/* ---- size, contains, startsWith, endsWith, matches ---- */

static cel_value_t f_size(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	switch (a[0].kind) {
	case CEL_STRING: return cel_int((int64_t)cel_utf8_len(a[0].s));
	case CEL_BYTES: return cel_int((int64_t)a[0].s.len);
	case CEL_LIST: return cel_int((int64_t)cel_list_size(a[0].l));
	case CEL_MAP: return cel_int((int64_t)cel_map_size(a[0].m));
	default: return cel_no_overload(c, "size");
	}
}

static bool both_strings(const cel_value_t *a)
{
	return a[0].kind == CEL_STRING && a[1].kind == CEL_STRING;
}

const char *cel_memmem(struct cel_str h, struct cel_str n)
{
	if (n.len == 0)
		return h.p ? h.p : "";
	for (size_t i = 0; i + n.len <= h.len; i++)
		if (!memcmp(h.p + i, n.p, n.len))
			return h.p + i;
	return NULL;
}

static cel_value_t f_contains(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	if (!both_strings(a))
		return cel_no_overload(c, "contains");
	return cel_bool(cel_memmem(a[0].s, a[1].s) != NULL);
}

static cel_value_t f_starts(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	if (!both_strings(a))
		return cel_no_overload(c, "startsWith");
	return cel_bool(a[1].s.len <= a[0].s.len && !memcmp(a[0].s.p, a[1].s.p, a[1].s.len));
}

static cel_value_t f_ends(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	if (!both_strings(a))
		return cel_no_overload(c, "endsWith");
	return cel_bool(a[1].s.len <= a[0].s.len &&
			!memcmp(a[0].s.p + a[0].s.len - a[1].s.len, a[1].s.p, a[1].s.len));
}

static cel_value_t f_matches(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	if (!both_strings(a))
		return cel_no_overload(c, "matches");
	cel_value_t err;
	const struct cel_re *re = cel_regex(c, a[1].s, &err);
	if (!re)
		return err;
	size_t so, eo;
	int rc = cel_regex_find(c, re, a[0].s, 0, &so, &eo, &err);
	return rc < 0 ? err : cel_bool(rc == 1);
}

/* ---- conversions ---- */

static cel_value_t parse_error(cel_ctx_t *c, const char *fn, struct cel_str s, int rc)
{
	return cel_errorf(c, "strconv.%s: parsing \"%.*s\": %s", fn, (int)s.len, s.p,
			  rc == -ERANGE ? "value out of range" : "invalid syntax");
}

static int parse_int(struct cel_str s, bool isunsigned, int64_t *i, uint64_t *u)
{
	char buf[64];
	if (s.len == 0 || s.len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s.p, s.len);
	buf[s.len] = 0;
	const char *p = buf;
	if (isunsigned && (*p == '-' || *p == '+'))
		return -EINVAL;
	if (*p == '+' || *p == '-')
		p++;
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return -EINVAL;
	if (!*p)
		return -EINVAL;
	char *end;
	errno = 0;
	if (isunsigned)
		*u = strtoull(buf, &end, 10);
	else
		*i = strtoll(buf, &end, 10);
	return errno == ERANGE ? -ERANGE : 0;
}

static bool double_fits_int(double d)
{
	return d > -9223372036854775808.0 && d < 9223372036854775808.0 && !isnan(d);
}

static cel_value_t f_int(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	int64_t i;
	int rc;
	switch (a[0].kind) {
	case CEL_INT: return a[0];
	case CEL_UINT:
		return a[0].u > INT64_MAX ? cel_errorf(c, "integer overflow")
					  : cel_int((int64_t)a[0].u);
	case CEL_DOUBLE:
		if (!double_fits_int(a[0].d))
			return cel_errorf(c, "integer overflow");
		return cel_int((int64_t)a[0].d);
	case CEL_STRING:
		rc = parse_int(a[0].s, false, &i, NULL);
		return rc < 0 ? parse_error(c, "ParseInt", a[0].s, rc) : cel_int(i);
	case CEL_TIMESTAMP: return cel_int(a[0].i / 1000000000 - (a[0].i % 1000000000 < 0));
	case CEL_DURATION: return cel_int(a[0].i);
	default: return cel_no_overload(c, "int");
	}
}

static cel_value_t f_uint(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	uint64_t u;
	int rc;
	switch (a[0].kind) {
	case CEL_UINT: return a[0];
	case CEL_INT:
		return a[0].i < 0 ? cel_errorf(c, "unsigned integer overflow")
				  : cel_uint((uint64_t)a[0].i);
	case CEL_DOUBLE:
		if (!(a[0].d > -1.0 && a[0].d < 18446744073709551616.0))
			return cel_errorf(c, "unsigned integer overflow");
		return cel_uint((uint64_t)a[0].d);
	case CEL_STRING:
		rc = parse_int(a[0].s, true, NULL, &u);
		return rc < 0 ? parse_error(c, "ParseUint", a[0].s, rc) : cel_uint(u);
	default: return cel_no_overload(c, "uint");
	}
}

static cel_value_t f_double(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	char buf[128], *end;
	switch (a[0].kind) {
	case CEL_DOUBLE: return a[0];
	case CEL_INT: return cel_double((double)a[0].i);
	case CEL_UINT: return cel_double((double)a[0].u);
	case CEL_STRING:
		if (a[0].s.len == 0 || a[0].s.len >= sizeof(buf) ||
		    isspace((unsigned char)a[0].s.p[0]))
			return parse_error(c, "ParseFloat", a[0].s, -EINVAL);
		memcpy(buf, a[0].s.p, a[0].s.len);
		buf[a[0].s.len] = 0;
		errno = 0;
		double d = strtod(buf, &end);
		if (*end || (buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')))
			return parse_error(c, "ParseFloat", a[0].s, -EINVAL);
		if (errno == ERANGE && isinf(d))
			return parse_error(c, "ParseFloat", a[0].s, -ERANGE);
		return cel_double(d);
	default: return cel_no_overload(c, "double");
	}
}

static cel_value_t f_string(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	size_t len;
	if (a[0].kind == CEL_BYTES && !cel_utf8_valid(a[0].s.p, a[0].s.len))
		return cel_errorf(c, "invalid UTF-8 in bytes, cannot convert to string");
	if (a[0].kind == CEL_STRING)
		return a[0];
	const char *s = cel_scalar_string(c, a[0], &len);
	return s ? cel_string_n(s, len) : cel_no_overload(c, "string");
}

static cel_value_t f_bytes(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	if (a[0].kind == CEL_BYTES)
		return a[0];
	if (a[0].kind == CEL_STRING)
		return cel_bytes(a[0].s.p, a[0].s.len);
	return cel_no_overload(c, "bytes");
}

static cel_value_t f_bool(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True", NULL};
	static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False", NULL};
	if (a[0].kind == CEL_BOOL)
		return a[0];
	if (a[0].kind != CEL_STRING)
		return cel_no_overload(c, "bool");
	for (int k = 0; yes[k]; k++) {
		if (strlen(yes[k]) == a[0].s.len && !memcmp(yes[k], a[0].s.p, a[0].s.len))
			return cel_bool(true);
		if (strlen(no[k]) == a[0].s.len && !memcmp(no[k], a[0].s.p, a[0].s.len))
			return cel_bool(false);
	}
	return parse_error(c, "ParseBool", a[0].s, -EINVAL);
}

/* Go's "time: unknown unit "d" in duration "1d"": the first unit not known. */
static cel_value_t unknown_unit(cel_ctx_t *c, struct cel_str s)
{
	static const char *const known[] = {"ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms",
					    "s",  "m",  "h",         NULL};
	for (size_t i = 0; i < s.len;) {
		while (i < s.len && (strchr("0123456789.+-", s.p[i])))
			i++;
		size_t u = i;
		while (i < s.len && !strchr("0123456789.", s.p[i]))
			i++;
		bool ok = false;
		for (int k = 0; known[k]; k++)
			ok = ok || (strlen(known[k]) == i - u && !memcmp(known[k], s.p + u, i - u));
		if (!ok)
			return cel_errorf(c, "time: unknown unit \"%.*s\" in duration \"%.*s\"",
					  (int)(i - u), s.p + u, (int)s.len, s.p);
	}
	return cel_errorf(c, "time: invalid duration \"%.*s\"", (int)s.len, s.p);
}

static cel_value_t f_duration(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	int64_t ns;
	if (a[0].kind == CEL_DURATION)
		return a[0];
	if (a[0].kind == CEL_INT)
		return (cel_value_t){.kind = CEL_DURATION, .i = a[0].i};
	if (a[0].kind != CEL_STRING)
		return cel_no_overload(c, "duration");
	int rc = cel_parse_duration(a[0].s.p, a[0].s.len, &ns);
	if (rc == -ENODATA)
		return cel_errorf(c, "time: missing unit in duration \"%.*s\"", (int)a[0].s.len,
				  a[0].s.p);
	if (rc == -ENOENT)
		return unknown_unit(c, a[0].s);
	if (rc < 0)
		return cel_errorf(c, "time: invalid duration \"%.*s\"", (int)a[0].s.len, a[0].s.p);
	return (cel_value_t){.kind = CEL_DURATION, .i = ns};
}

static cel_value_t f_timestamp(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)n;
	int64_t ns;
	if (a[0].kind == CEL_TIMESTAMP)
		return a[0];
	if (a[0].kind == CEL_INT) {
		if (a[0].i < CEL_MIN_TS_SECONDS || a[0].i > CEL_MAX_TS_SECONDS ||
		    __builtin_mul_overflow(a[0].i, 1000000000, &ns))
			return cel_errorf(c, "timestamp overflow");
		return (cel_value_t){.kind = CEL_TIMESTAMP, .i = ns};
	}
	if (a[0].kind != CEL_STRING)
		return cel_no_overload(c, "timestamp");
	int rc = cel_parse_timestamp(a[0].s.p, a[0].s.len, &ns);
	if (rc == -ERANGE)
		return cel_errorf(c, "timestamp overflow");
	if (rc < 0) {
		char msg[512];
		cel_timestamp_error(a[0].s.p, a[0].s.len, msg, sizeof(msg));
		return cel_errorf(c, "%s", msg);
	}
	return (cel_value_t){.kind = CEL_TIMESTAMP, .i = ns};
}

static cel_value_t f_type(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)c;
	(void)n;
	const char *name = cel_type_name(a[0]);
	if (a[0].kind == CEL_TYPE)
		name = "type";
	return (cel_value_t){.kind = CEL_TYPE, .s = {name, strlen(name)}};
}

static cel_value_t f_dyn(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	(void)c;
	(void)n;
	return a[0];
}

/* ---- timestamps and durations ---- */

enum {
	G_YEAR,
	G_MONTH,
	G_DATE,
	G_DAY_OF_MONTH,
	G_DAY_OF_WEEK,
	G_DAY_OF_YEAR,
	G_HOURS,
	G_MINUTES,
	G_SECONDS,
	G_MILLIS
};

static cel_value_t getter(cel_ctx_t *c, const cel_value_t *a, size_t n, int which, const char *name)
{
	if (a[0].kind == CEL_DURATION && n == 1) {
		int64_t d = a[0].i;
		switch (which) {
		case G_HOURS: return cel_int(d / 3600000000000LL);
		case G_MINUTES: return cel_int(d / 60000000000LL);
		case G_SECONDS: return cel_int(d / 1000000000LL);
		case G_MILLIS: return cel_int(d / 1000000LL);
		default: return cel_no_overload(c, name);
		}
	}
	if (a[0].kind != CEL_TIMESTAMP || (n == 2 && a[1].kind != CEL_STRING))
		return cel_no_overload(c, name);
	int64_t off = 0;
	if (n == 2) {
		char *tz = cel_strndup(c, a[1].s.p, a[1].s.len);
		if (cel_zone_offset(tz, a[0].i, &off) < 0)
			return cel_errorf(c, "unknown time zone %s", tz);
	}
	struct cel_tm tm;
	cel_split_time(a[0].i, off, &tm);
	switch (which) {
	case G_YEAR: return cel_int(tm.year);
	case G_MONTH: return cel_int(tm.month - 1);
	case G_DATE: return cel_int(tm.day);
	case G_DAY_OF_MONTH: return cel_int(tm.day - 1);
	case G_DAY_OF_WEEK: return cel_int(tm.wday);
	case G_DAY_OF_YEAR: return cel_int(tm.yday);
	case G_HOURS: return cel_int(tm.hour);
	case G_MINUTES: return cel_int(tm.min);
	case G_SECONDS: return cel_int(tm.sec);
	default: return cel_int(tm.nsec / 1000000);
	}
}

#define GETTER(fn, which, name)                                             \
	static cel_value_t fn(cel_ctx_t *c, const cel_value_t *a, size_t n) \
	{                                                                   \
		return getter(c, a, n, which, name);                        \
	}
GETTER(g_year, G_YEAR, "getFullYear")
GETTER(g_month, G_MONTH, "getMonth")
GETTER(g_date, G_DATE, "getDate")
GETTER(g_dom, G_DAY_OF_MONTH, "getDayOfMonth")
GETTER(g_dow, G_DAY_OF_WEEK, "getDayOfWeek")
GETTER(g_doy, G_DAY_OF_YEAR, "getDayOfYear")
GETTER(g_hours, G_HOURS, "getHours")
GETTER(g_minutes, G_MINUTES, "getMinutes")
GETTER(g_seconds, G_SECONDS, "getSeconds")
GETTER(g_millis, G_MILLIS, "getMilliseconds")

/* ---- the table ---- */

#define STD(name, recv, nargs, fn)       \
	{                                \
		name, recv, nargs, 0, fn \
	}

const struct cel_func cel_std_funcs[] = {
    STD("size", false, 1, f_size),
    STD("size", true, 1, f_size),
    STD("contains", true, 2, f_contains),
    STD("startsWith", true, 2, f_starts),
    STD("endsWith", true, 2, f_ends),
    STD("matches", true, 2, f_matches),
    STD("matches", false, 2, f_matches),
    STD("int", false, 1, f_int),
    STD("uint", false, 1, f_uint),
    STD("double", false, 1, f_double),
    STD("string", false, 1, f_string),
    STD("bytes", false, 1, f_bytes),
    STD("bool", false, 1, f_bool),
    STD("duration", false, 1, f_duration),
    STD("timestamp", false, 1, f_timestamp),
    STD("type", false, 1, f_type),
    STD("dyn", false, 1, f_dyn),
    STD("getFullYear", true, -1, g_year),
    STD("getMonth", true, -1, g_month),
    STD("getDate", true, -1, g_date),
    STD("getDayOfMonth", true, -1, g_dom),
    STD("getDayOfWeek", true, -1, g_dow),
    STD("getDayOfYear", true, -1, g_doy),
    STD("getHours", true, -1, g_hours),
    STD("getMinutes", true, -1, g_minutes),
    STD("getSeconds", true, -1, g_seconds),
    STD("getMilliseconds", true, -1, g_millis),
    CEL_STRINGS_FUNCS,
    CEL_EXT_FUNCS,
    {0},
};
