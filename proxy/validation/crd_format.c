/* SPDX-License-Identifier: Apache-2.0 */
/*
 * String `format`s of CRD schemas, checked as kube-apiserver checks them
 * (its format registry, the one of kube-openapi's strfmt): a string field
 * with `format: ipv4` that holds "10.0.0.300" is refused with
 * `spec.x in body must be of type ipv4: "10.0.0.300"`.
 *
 * kube validates the formats of its supported list only, by their name
 * with dashes removed ("date-time" is "datetime"); others are ignored.
 * This file checks those whose grammar is exact (IPs, CIDRs, MACs, UUIDs,
 * dates and date-times, base64, URIs, colours); the few whose definition
 * is a library's loose parser (hostname, email, duration, isbn, creditcard,
 * ssn, bsonobjectid, rgbcolor) are let through rather than refused wrongly.
 *
 * Threading: pure functions; any thread.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/cel/cel.h"
#include "proxy/validation/crd_validate.h"

static bool re(const char *pattern, const char *s)
{
	char *err = NULL;
	int rc = cel_regex_search(pattern, s, &err);
	free(err);
	return rc == 1;
}

/* Go's net.ParseIP (no zones, no leading zeros) with the dot or colon that
 * strfmt's IsIPv4 and IsIPv6 ask for. */
static bool ip_ok(const char *s, int af)
{
	unsigned char buf[16];
	if (strlen(s) > 45)
		return false;
	if (inet_pton(AF_INET, s, buf) == 1)
		return af == AF_INET || af == 0 || (af == AF_INET6 && strchr(s, ':'));
	if (inet_pton(AF_INET6, s, buf) == 1)
		return af == AF_INET6 || af == 0 || (af == AF_INET && strchr(s, '.'));
	return false;
}

/* Go's net.ParseCIDR: an address, '/', a decimal prefix length in range. */
static bool cidr_ok(const char *s)
{
	const char *slash = strchr(s, '/');
	char ip[64];
	if (!slash || (size_t)(slash - s) >= sizeof(ip) || !slash[1])
		return false;
	memcpy(ip, s, (size_t)(slash - s));
	ip[slash - s] = '\0';
	unsigned char buf[16];
	int bits = inet_pton(AF_INET, ip, buf) == 1    ? 32
		   : inet_pton(AF_INET6, ip, buf) == 1 ? 128
						       : 0;
	if (!bits)
		return false;
	long n = 0;
	for (const char *p = slash + 1; *p; p++) {
		if (!isdigit((unsigned char)*p) || n > 1000)
			return false;
		n = n * 10 + (*p - '0');
	}
	return n <= bits;
}

/* Go's net.ParseMAC: 6, 8 or 20 octets as xx:xx.. or xx-xx.., or xxxx.xxxx.. */
static bool mac_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 14)
		return false;
	if (s[2] == ':' || s[2] == '-') {
		if ((n + 1) % 3)
			return false;
		size_t oct = (n + 1) / 3;
		if (oct != 6 && oct != 8 && oct != 20)
			return false;
		for (size_t i = 0; i < n; i++)
			if (i % 3 == 2 ? s[i] != s[2] : !isxdigit((unsigned char)s[i]))
				return false;
		return true;
	}
	if (s[4] == '.') {
		if ((n + 1) % 5)
			return false;
		size_t oct = 2 * (n + 1) / 5;
		if (oct != 6 && oct != 8 && oct != 20)
			return false;
		for (size_t i = 0; i < n; i++)
			if (i % 5 == 4 ? s[i] != '.' : !isxdigit((unsigned char)s[i]))
				return false;
		return true;
	}
	return false;
}

static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Go's time.Parse("2006-01-02"): a real calendar day. */
static bool date_ok(const char *s)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return false;
	int y = digits(s, 4), m = digits(s + 5, 2), d = digits(s + 8, 2);
	if (y < 0 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		return false;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return !(m == 2 && d == 29 && !leap);
}

/* strfmt's IsDateTime: lowercased and cut at each 't', a date, then a time
 * with seconds and a zone (`z` or ±hh:mm), fields compared as text. */
static bool datetime_ok(const char *s)
{
	char low[128];
	size_t n = strlen(s);
	if (n < 4 || n >= sizeof(low))
		return false;
	for (size_t i = 0; i <= n; i++)
		low[i] = (char)tolower((unsigned char)s[i]);
	char *t = strchr(low, 't');
	if (!t)
		return false;
	*t = '\0';
	char *rest = t + 1, *t2 = strchr(rest, 't');
	if (t2)
		*t2 = '\0';
	if (!date_ok(low))
		return false;
	if (!re("^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$", rest))
		return false;
	return strncmp(rest, "23", 2) <= 0 && strncmp(rest + 3, "59", 2) <= 0 &&
	       strncmp(rest + 6, "59", 2) <= 0;
}

/* Go's base64.StdEncoding: padded, the standard alphabet. */
static bool byte_ok(const char *s)
{
	size_t n = strlen(s), pad = 0;
	if (n % 4)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '=') {
			pad++;
			continue;
		}
		if (pad || !(isalnum(c) || c == '+' || c == '/'))
			return false;
	}
	return pad <= 2;
}

/* Go's url.ParseRequestURI, in its main lines: no control bytes, an
 * absolute URI (scheme ':' ...) or an absolute path, a numeric port. */
static bool uri_ok(const char *s)
{
	if (!*s)
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	const char *p = s;
	if (isalpha((unsigned char)*p)) {
		while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
			p++;
		if (*p != ':')
			p = s;
	}
	if (p == s)
		return *s == '/';
	const char *rest = p + 1;
	if (strncmp(rest, "//", 2) != 0)
		return true;
	const char *auth = rest + 2, *end = auth + strcspn(auth, "/?#");
	const char *at = NULL;
	for (const char *q = auth; q < end; q++)
		if (*q == '@')
			at = q;
	const char *host = at ? at + 1 : auth;
	const char *colon = NULL;
	if (*host == '[') {
		const char *rb = memchr(host, ']', (size_t)(end - host));
		if (!rb)
			return false;
		if (rb + 1 < end && rb[1] != ':')
			return false;
		colon = rb + 1 < end ? rb + 1 : NULL;
	} else {
		for (const char *q = host; q < end; q++)
			if (*q == ':')
				colon = q;
	}
	for (const char *q = colon ? colon + 1 : end; q < end; q++)
		if (!isdigit((unsigned char)*q))
			return false;
	return true;
}

bool crd_format_valid(const char *format, const char *s)
{
	char f[32];
	size_t n = 0;
	for (const char *p = format; *p && n + 1 < sizeof(f); p++)
		if (*p != '-')
			f[n++] = *p;
	f[n] = '\0';
	if (strcmp(f, "ipv4") == 0)
		return ip_ok(s, AF_INET);
	if (strcmp(f, "ipv6") == 0)
		return ip_ok(s, AF_INET6);
	if (strcmp(f, "cidr") == 0)
		return cidr_ok(s);
	if (strcmp(f, "mac") == 0)
		return mac_ok(s);
	if (strcmp(f, "uuid") == 0)
		return re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
			  s);
	if (strcmp(f, "uuid3") == 0)
		return re("(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
			  s);
	if (strcmp(f, "uuid4") == 0 || strcmp(f, "uuid5") == 0) {
		char pat[96];
		snprintf(pat, sizeof(pat),
			 "(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?%c[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]"
			 "{12}$",
			 f[4]);
		return re(pat, s);
	}
	if (strcmp(f, "date") == 0)
		return date_ok(s);
	if (strcmp(f, "datetime") == 0)
		return datetime_ok(s);
	if (strcmp(f, "byte") == 0)
		return byte_ok(s);
	if (strcmp(f, "uri") == 0)
		return uri_ok(s);
	if (strcmp(f, "hexcolor") == 0)
		return re("^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", s);
	return true; /* a loose one, or one kube does not know (it strips those) */
}
