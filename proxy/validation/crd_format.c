/* SPDX-License-Identifier: Apache-2.0 */
/*
 * String `format`s of CRD schemas, checked as kube-apiserver checks them
 * (its format registry, the one of kube-openapi's strfmt): a string field
 * with `format: ipv4` that holds "10.0.0.300" is refused with
 * `spec.x in body must be of type ipv4: "10.0.0.300"`.
 *
 * kube validates the formats of its supported list only
 * (apiextensions-apiserver pkg/apiserver/validation/formats.go
 * supportedVersionedFormats), by their name with dashes removed
 * ("date-time" is "datetime"); others are ignored. Each is checked by the
 * rule of kube-openapi's strfmt default registry (pkg/validation/strfmt
 * default.go init, duration.go, bson.go, and its copy of govalidator):
 * IPs, CIDRs, MACs, UUIDs, dates and date-times, base64, URIs, colours,
 * hostnames (HostnamePattern), e-mail addresses (Go's net/mail
 * ParseAddress), durations (Go's time.ParseDuration, then strfmt's loose
 * "<n> <unit>" reading), ISBNs, credit card numbers, SSNs and BSON object
 * ids; `password` takes any string.
 *
 * Threading: pure functions; any thread.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/util.h"

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

/* k8s.io/utils/net ParseIPSloppy of a dotted IPv4 address (Go 1.16's
 * parser, which strfmt's isIPv4 and isCIDR use in kube 1.33: leading zeros
 * are decimal, "010.0.0.1" is 10.0.0.1): four decimal parts up to 255. */
static bool ipv4_sloppy(const char *s)
{
	for (int part = 0; part < 4; part++) {
		if (part && *s++ != '.')
			return false;
		if (!isdigit((unsigned char)*s))
			return false;
		unsigned n = 0;
		while (isdigit((unsigned char)*s)) {
			n = n * 10 + (unsigned)(*s++ - '0');
			if (n > 255)
				return false;
		}
	}
	return *s == '\0';
}

/* Go's net.ParseCIDR (ParseCIDRSloppy: an IPv4 address may have leading
 * zeros): an address, '/', a decimal prefix length in range. */
static bool cidr_ok(const char *s)
{
	const char *slash = strchr(s, '/');
	char ip[64];
	if (!slash || (size_t)(slash - s) >= sizeof(ip) || !slash[1])
		return false;
	memcpy(ip, s, (size_t)(slash - s));
	ip[slash - s] = '\0';
	unsigned char buf[16];
	int bits = ipv4_sloppy(ip) ? 32 : inet_pton(AF_INET6, ip, buf) == 1 ? 128 : 0;
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

/* govalidator's Base64 pattern: padded, the standard alphabet, at least
 * one group of four (an empty string is not one). */
static bool byte_ok(const char *s)
{
	size_t n = strlen(s), pad = 0;
	if (n == 0 || n % 4)
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

/* strfmt's IsHostname: HostnamePattern (RFC 1034 labels, digits first
 * allowed, symbols and letters of any script, a final label of two or more
 * letters), at most 255 bytes, labels of at most 63. */
static bool hostname_ok(const char *s)
{
	static const char *const pattern =
	    "^([a-zA-Z0-9\\p{S}\\p{L}]((-?[a-zA-Z0-9\\p{S}\\p{L}]{0,62})?)|"
	    "([a-zA-Z0-9\\p{S}\\p{L}](([a-zA-Z0-9-\\p{S}\\p{L}]{0,61}[a-zA-Z0-9\\p{S}\\p{L}])?)"
	    "(\\.)){1,}([a-zA-Z\\p{L}]){2,63})$";
	if (strlen(s) > 255 || !re(pattern, s))
		return false;
	for (const char *p = s;;) {
		size_t n = strcspn(p, ".");
		if (n > 63)
			return false;
		if (!p[n])
			return true;
		p += n + 1;
	}
}

/* Go's net/mail ParseAddress (message.go addrParser), which strfmt's
 * IsEmail calls: one mailbox, "addr-spec" or "phrase <addr-spec>" (or a
 * group holding one), with comments; the domain a dot-atom or an
 * "[IP]" literal. RFC 2047 words in a phrase are read as plain words. */
struct mailp {
	const char *s;
};

/* Length of the UTF-8 sequence at s (1-4), 0 at the end, -1 if invalid
 * (Go's utf8.DecodeRuneInString: RuneError of size 1). */
static int utf8_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	if (!u[0])
		return 0;
	if (u[0] < 0x80)
		return 1;
	int n = u[0] >= 0xf0 && u[0] <= 0xf4 ? 4 : u[0] >= 0xe0 ? 3 : u[0] >= 0xc2 ? 2 : -1;
	if (n < 0 || (u[0] >= 0xf8))
		return -1;
	for (int i = 1; i < n; i++)
		if ((u[i] & 0xc0) != 0x80)
			return -1;
	if (n == 3 && ((u[0] == 0xe0 && u[1] < 0xa0) || (u[0] == 0xed && u[1] >= 0xa0)))
		return -1;
	if (n == 4 && ((u[0] == 0xf0 && u[1] < 0x90) || (u[0] == 0xf4 && u[1] >= 0x90)))
		return -1;
	return n;
}

static bool vchar(const char *c, int n)
{
	return n > 1 || (*c >= '!' && *c <= '~');
}

static bool atext(const char *c, int n, bool dot)
{
	if (n == 1 && *c == '.')
		return dot;
	if (n == 1 && strchr("()<>[]:;@\\,\"", *c))
		return false;
	return vchar(c, n);
}

static void mail_space(struct mailp *p)
{
	while (*p->s == ' ' || *p->s == '\t')
		p->s++;
}

static bool mail_comment(struct mailp *p)
{
	int depth = 1;
	while (*p->s && depth) {
		if (*p->s == '\\' && p->s[1])
			p->s++;
		else if (*p->s == '(')
			depth++;
		else if (*p->s == ')')
			depth--;
		p->s++;
	}
	return depth == 0;
}

static bool mail_cfws(struct mailp *p)
{
	mail_space(p);
	while (*p->s == '(') {
		p->s++;
		if (!mail_comment(p))
			return false;
		mail_space(p);
	}
	return true;
}

/* consumeAtom: 0 or -1; permissive allows stray dots (phrases). */
static int mail_atom(struct mailp *p, bool dot, bool permissive)
{
	const char *a = p->s;
	int n;
	while ((n = utf8_len(p->s)) > 0 && atext(p->s, n, dot))
		p->s += n;
	if (n < 0 || p->s == a)
		return -1;
	size_t len = (size_t)(p->s - a);
	if (!permissive && (a[0] == '.' || a[len - 1] == '.' || memmem(a, len, "..", 2)))
		return -1;
	return 0;
}

/* consumeQuotedString at '"': 0 and *empty, or -1. */
static int mail_quoted(struct mailp *p, bool *empty)
{
	const char *q = p->s + 1;
	bool esc = false;
	*empty = true;
	for (;;) {
		int n = utf8_len(q);
		if (n <= 0)
			return -1;
		if (esc) {
			if (!vchar(q, n) && *q != ' ' && *q != '\t')
				return -1;
			esc = false;
			*empty = false;
		} else if (*q == '"' && n == 1) {
			break;
		} else if (*q == '\\') {
			esc = true;
		} else if (vchar(q, n) || *q == ' ' || *q == '\t') {
			*empty = false;
		} else {
			return -1;
		}
		q += n;
	}
	p->s = q + 1;
	return 0;
}

/* consumeDomainLiteral at '[': dtext up to ']' that Go's net.ParseIP reads. */
static int mail_literal(struct mailp *p)
{
	const char *d = ++p->s;
	int n;
	while (*p->s && *p->s != ']') {
		n = utf8_len(p->s);
		if (n < 0 || !vchar(p->s, n) || *p->s == '[' || *p->s == '\\')
			return -1;
		p->s += n;
	}
	if (*p->s != ']' || p->s - d > 45)
		return -1;
	char ip[46];
	memcpy(ip, d, (size_t)(p->s - d));
	ip[p->s - d] = '\0';
	p->s++;
	return ip_ok(ip, 0) ? 0 : -1;
}

/* consumeAddrSpec: local-part "@" domain; p is left as it was on failure. */
static int mail_spec(struct mailp *p)
{
	struct mailp orig = *p;
	bool empty = false;
	mail_space(p);
	int rc = !*p->s ? -1 : *p->s == '"' ? mail_quoted(p, &empty) : mail_atom(p, true, false);
	if (rc == 0 && empty)
		rc = -1;
	if (rc == 0 && *p->s == '@') {
		p->s++;
		mail_space(p);
		rc = !*p->s ? -1 : *p->s == '[' ? mail_literal(p) : mail_atom(p, true, false);
	} else {
		rc = -1;
	}
	if (rc < 0)
		*p = orig;
	return rc;
}

/* consumePhrase: one or more words (atoms with any dots, quoted strings). */
static int mail_phrase(struct mailp *p)
{
	int words = 0;
	for (;;) {
		if (words && !mail_cfws(p))
			return -1;
		mail_space(p);
		if (!*p->s)
			break;
		bool empty;
		struct mailp save = *p;
		int rc = *p->s == '"' ? mail_quoted(p, &empty) : mail_atom(p, true, true);
		if (rc < 0) {
			*p = save;
			break;
		}
		words++;
	}
	return words ? 0 : -1;
}

/* parseAddress: the number of addresses read (a group may hold several,
 * or none), or -1. */
static int mail_address(struct mailp *p, bool group)
{
	mail_space(p);
	if (!*p->s)
		return -1;
	if (mail_spec(p) == 0) {
		mail_space(p);
		if (*p->s == '(') {
			p->s++;
			if (!mail_comment(p))
				return -1;
		}
		return 1;
	}
	if (*p->s != '<' && mail_phrase(p) < 0)
		return -1;
	mail_space(p);
	if (group && *p->s == ':') {
		p->s++;
		int count = 0;
		mail_space(p);
		if (*p->s == ';') {
			p->s++;
			return mail_cfws(p) ? 0 : -1;
		}
		for (;;) {
			mail_space(p);
			int n = mail_address(p, false);
			if (n < 0 || !mail_cfws(p))
				return -1;
			count += n;
			if (*p->s == ';') {
				p->s++;
				return mail_cfws(p) ? count : -1;
			}
			if (*p->s++ != ',')
				return -1;
		}
	}
	if (*p->s != '<')
		return -1;
	p->s++;
	if (mail_spec(p) < 0 || *p->s != '>')
		return -1;
	p->s++;
	return 1;
}

/* parseSingleAddress, as strfmt's IsEmail asks (a non-empty address). */
static bool email_ok(const char *s)
{
	struct mailp p = {s};
	int n = mail_address(&p, true);
	return n == 1 && mail_cfws(&p) && !*p.s;
}

/* Go's time.ParseDuration: [-+] then one or more <decimal><unit>, unit
 * ns, us, µs, μs, ms, s, m or h, or "0"; within int64 nanoseconds. */
static bool go_duration_ok(const char *s)
{
	static const struct {
		const char *name;
		double ns;
	} units[] = {{"ns", 1},   {"us", 1e3}, {"\xc2\xb5s", 1e3}, {"\xce\xbcs", 1e3},
		     {"ms", 1e6}, {"s", 1e9},  {"m", 60e9},        {"h", 3600e9}};
	bool neg = *s == '-';
	if (*s == '-' || *s == '+')
		s++;
	if (strcmp(s, "0") == 0)
		return true;
	if (!*s)
		return false;
	long double total = 0;
	while (*s) {
		const char *num = s;
		long double v = 0, scale = 1;
		bool frac = false, any = false;
		for (; isdigit((unsigned char)*s) || (*s == '.' && !frac); s++) {
			if (*s == '.') {
				frac = true;
				continue;
			}
			any = true;
			if (frac)
				v += (*s - '0') * (scale /= 10);
			else
				v = v * 10 + (*s - '0');
		}
		if (!any || s == num)
			return false;
		const char *u = s;
		while (*s && *s != '.' && !isdigit((unsigned char)*s))
			s++;
		size_t ul = (size_t)(s - u);
		double mult = 0;
		for (size_t i = 0; i < KB_ARRAY_SIZE(units); i++)
			if (strlen(units[i].name) == ul && memcmp(units[i].name, u, ul) == 0)
				mult = units[i].ns;
		if (!mult)
			return false;
		total += v * mult;
	}
	return total <= (neg ? 9223372036854775808.0L : 9223372036854775807.0L);
}

/* A unit of strfmt's loose reading (duration.go timeUnits): one of a
 * group's spellings, or a word that starts with its last (longest) one. */
static bool loose_unit(const char *unit)
{
	static const char *const groups[][4] = {
	    {"ns", "nano"}, {"us", "\xc2\xb5s", "micro"}, {"ms", "milli"}, {"s", "sec"},
	    {"m", "min"},   {"h", "hr", "hour"},          {"d", "day"},    {"w", "wk", "week"},
	};
	for (size_t g = 0; g < KB_ARRAY_SIZE(groups); g++) {
		size_t last = 0;
		while (last + 1 < 4 && groups[g][last + 1])
			last++;
		for (size_t i = 0; i <= last; i++) {
			const char *v = groups[g][i];
			if (strcasecmp(v, unit) == 0 ||
			    (i == last && strncmp(unit, v, strlen(v)) == 0))
				return true;
		}
	}
	return false;
}

/* strfmt's ParseDuration: Go's first, else every "<digits> <letters>" in
 * the string (durationMatcher) whose letters, lower-cased, name a unit;
 * valid when one does, and no number overflows Go's int. */
static bool duration_ok(const char *s)
{
	if (go_duration_ok(s))
		return true;
	bool ok = false;
	for (const char *p = s; *p;) {
		if (!isdigit((unsigned char)*p)) {
			p++;
			continue;
		}
		const char *d = p;
		while (isdigit((unsigned char)*p))
			p++;
		size_t nd = (size_t)(p - d);
		const char *q = p;
		while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\f' || *q == '\r')
			q++;
		const char *u = q;
		while (isalpha((unsigned char)*q) || (q[0] == '\xc2' && q[1] == '\xb5'))
			q += isalpha((unsigned char)*q) ? 1 : 2;
		if (q == u)
			continue; /* no unit: the match would start at a later digit */
		while (nd > 1 && *d == '0')
			d++, nd--;
		if (nd > 19 || (nd == 19 && strncmp(d, "9223372036854775807", 19) > 0))
			return false; /* strconv.Atoi's range error */
		char unit[32];
		size_t ul = (size_t)(q - u) < sizeof(unit) - 1 ? (size_t)(q - u) : sizeof(unit) - 1;
		for (size_t i = 0; i < ul; i++)
			unit[i] = (char)tolower((unsigned char)u[i]);
		unit[ul] = '\0';
		ok |= loose_unit(unit);
		p = q;
	}
	return ok;
}

/* s without the bytes in drop (govalidator's sanitizing), in buf. */
static const char *strip(const char *s, const char *drop, char *buf, size_t size)
{
	size_t n = 0;
	for (; *s && n + 1 < size; s++)
		if (!strchr(drop, *s))
			buf[n++] = *s;
	buf[n] = '\0';
	return *s ? NULL : buf;
}

/* govalidator's IsISBN: spaces and dashes dropped, the pattern, the check
 * digit. */
static bool isbn_ok(const char *s, int version)
{
	char buf[64];
	const char *d = strip(s, " \t\n\f\r-", buf, sizeof(buf));
	if (!d)
		return false;
	int sum = 0;
	if (version == 10) {
		if (!re("^(?:[0-9]{9}X|[0-9]{10})$", d))
			return false;
		for (int i = 0; i < 9; i++)
			sum += (i + 1) * (d[i] - '0');
		sum += 10 * (d[9] == 'X' ? 10 : d[9] - '0');
		return sum % 11 == 0;
	}
	if (!re("^(?:[0-9]{13})$", d))
		return false;
	for (int i = 0; i < 12; i++)
		sum += (i % 2 ? 3 : 1) * (d[i] - '0');
	return d[12] - '0' == (10 - sum % 10) % 10;
}

/* govalidator's IsCreditCard: non-digits dropped, the issuers' pattern,
 * the Luhn sum. */
static bool creditcard_ok(const char *s)
{
	char buf[128];
	size_t n = 0;
	for (; *s; s++)
		if (isdigit((unsigned char)*s)) {
			if (n + 1 >= sizeof(buf))
				return false;
			buf[n++] = *s;
		}
	buf[n] = '\0';
	if (!re("^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|"
		"3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\\d{3})\\d{11})$",
		buf))
		return false;
	int sum = 0;
	bool dbl = false;
	for (size_t i = n; i-- > 0; dbl = !dbl) {
		int v = buf[i] - '0';
		if (dbl)
			v = v * 2 >= 10 ? v * 2 % 10 + 1 : v * 2;
		sum += v;
	}
	return sum % 10 == 0;
}

/* govalidator's IsSSN: 11 bytes, ddd-dd-dddd (dashes or spaces). */
static bool ssn_ok(const char *s)
{
	return strlen(s) == 11 && re("^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$", s);
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
		return ipv4_sloppy(s) || ip_ok(s, AF_INET);
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
	if (strcmp(f, "rgbcolor") == 0)
		return re("^rgb\\(\\s*(0|[1-9]\\d?|1\\d\\d?|2[0-4]\\d|25[0-5])\\s*,\\s*"
			  "(0|[1-9]\\d?|1\\d\\d?|2[0-4]\\d|25[0-5])\\s*,\\s*"
			  "(0|[1-9]\\d?|1\\d\\d?|2[0-4]\\d|25[0-5])\\s*\\)$",
			  s);
	if (strcmp(f, "hostname") == 0)
		return hostname_ok(s);
	if (strcmp(f, "email") == 0)
		return email_ok(s);
	if (strcmp(f, "duration") == 0)
		return duration_ok(s);
	if (strcmp(f, "isbn") == 0)
		return isbn_ok(s, 10) || isbn_ok(s, 13);
	if (strcmp(f, "isbn10") == 0 || strcmp(f, "isbn13") == 0)
		return isbn_ok(s, f[5] == '0' ? 10 : 13);
	if (strcmp(f, "creditcard") == 0)
		return creditcard_ok(s);
	if (strcmp(f, "ssn") == 0)
		return ssn_ok(s);
	if (strcmp(f, "bsonobjectid") == 0) /* bson ObjectIDFromHex */
		return re("^[0-9a-fA-F]{24}$", s);
	return true; /* password, or one kube does not know (it strips those) */
}
