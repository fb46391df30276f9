/* SPDX-License-Identifier: Apache-2.0 */
/* Small foundations: see util.h. */
#include "lib/util.h"

#include <uv.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <uuid/uuid.h>

void kb_time_rfc3339(time_t t, char *buf, size_t len)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int64_t kb_now_us(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

void kb_time_rfc3339_micro(char *buf, size_t len)
{
	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%06ldZ", (long)tv.tv_usec);
}

int kb_time_parse(const char *s, time_t *out)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -EINVAL;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	long off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int hh, mm;
		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
			return -EINVAL;
		off = (hh * 3600L + mm * 60L) * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	*out = timegm(&tm) - off;
	return 0;
}

/* Mirrors the duration rendering kubectl users see (HumanDuration). */
void kb_age(time_t from, time_t now, char *buf, size_t len)
{
	long long s = (long long)(now - from);
	if (s < 0)
		s = 0;
	long long m = s / 60, h = s / 3600, d = s / 86400;
	if (s < 120)
		snprintf(buf, len, "%llds", s);
	else if (m < 10 && s % 60)
		snprintf(buf, len, "%lldm%llds", m, s % 60);
	else if (m < 180)
		snprintf(buf, len, "%lldm", m);
	else if (h < 8 && m % 60)
		snprintf(buf, len, "%lldh%lldm", h, m % 60);
	else if (h < 48)
		snprintf(buf, len, "%lldh", h);
	else if (h < 192 && h % 24)
		snprintf(buf, len, "%lldd%lldh", d, h % 24);
	else if (d < 730)
		snprintf(buf, len, "%lldd", d);
	else if (d < 2920 && d % 365)
		snprintf(buf, len, "%lldy%lldd", d / 365, d % 365);
	else
		snprintf(buf, len, "%lldy", d / 365);
}

uint64_t kb_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int kb_timer_start_aligned(uv_timer_t *t, uv_timer_cb cb, uint64_t period)
{
	uint64_t now = uv_now(t->loop);
	return uv_timer_start(t, cb, period - now % period, 0);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static char *b64_encode(const unsigned char *in, size_t len, const char *alpha, bool pad)
{
	char *out = malloc(4 * ((len + 2) / 3) + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		out[o++] = alpha[(v >> 18) & 63];
		out[o++] = alpha[(v >> 12) & 63];
		if (i + 1 < len)
			out[o++] = alpha[(v >> 6) & 63];
		else if (pad)
			out[o++] = '=';
		if (i + 2 < len)
			out[o++] = alpha[v & 63];
		else if (pad)
			out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

static int b64_value(char c, bool url)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == (url ? '-' : '+'))
		return 62;
	if (c == (url ? '_' : '/'))
		return 63;
	return -1;
}

static int b64_decode(const char *s, size_t slen, bool url, unsigned char **out, size_t *out_len)
{
	while (slen > 0 && s[slen - 1] == '=')
		slen--;
	if (slen % 4 == 1)
		return -EINVAL;
	unsigned char *buf = malloc(slen * 3 / 4 + 3);
	if (!buf)
		return -ENOMEM;
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (size_t i = 0; i < slen; i++) {
		int v = b64_value(s[i], url);
		if (v < 0) {
			free(buf);
			return -EINVAL;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (unsigned char)(acc >> bits);
		}
	}
	buf[o] = 0;
	*out = buf;
	*out_len = o;
	return 0;
}

char *kb_base64_encode(const void *data, size_t len)
{
	return b64_encode(data, len, b64, true);
}

int kb_base64_decode(const char *s, size_t slen, unsigned char **out, size_t *out_len)
{
	return b64_decode(s, slen, false, out, out_len);
}

char *kb_base64url_encode(const void *data, size_t len)
{
	return b64_encode(data, len, b64url, false);
}

int kb_base64url_decode(const char *s, unsigned char **out, size_t *out_len)
{
	return b64_decode(s, strlen(s), true, out, out_len);
}

/*
 * Random (version 4) UUIDs from a per-thread pool of random bytes filled by
 * OpenSSL's DRBG 32 UUIDs at a time: uuid_generate_random reads the kernel
 * and reseeds random(3) at every call, which cost a GET a tenth of its time
 * (the audit ID of every request). A forked child drops its copy of the pool.
 */
#define UUID_POOL (16 * 32)
static __thread unsigned char uuid_pool[UUID_POOL];
static __thread size_t uuid_used = UUID_POOL;
static unsigned uuid_forks; /* bumped in a forked child */
static __thread unsigned uuid_forks_seen;
static pthread_once_t uuid_once = PTHREAD_ONCE_INIT;

static void uuid_child(void)
{
	uuid_forks++;
}

static void uuid_init(void)
{
	pthread_atfork(NULL, NULL, uuid_child);
}

void kb_uuid(char *buf)
{
	uuid_t u;
	pthread_once(&uuid_once, uuid_init);
	if (uuid_forks_seen != uuid_forks) {
		uuid_forks_seen = uuid_forks;
		uuid_used = UUID_POOL;
	}
	if (uuid_used == UUID_POOL) {
		if (RAND_bytes(uuid_pool, UUID_POOL) != 1) {
			uuid_generate_random(u);
			uuid_unparse_lower(u, buf);
			return;
		}
		uuid_used = 0;
	}
	memcpy(u, uuid_pool + uuid_used, 16);
	OPENSSL_cleanse(uuid_pool + uuid_used, 16);
	uuid_used += 16;
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x40); /* version 4 */
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	uuid_unparse_lower(u, buf);
}

void kb_random_suffix(char *buf, size_t n)
{
	static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char r[64];
	if (n > sizeof(r))
		n = sizeof(r);
	if (RAND_bytes(r, (int)n) != 1)
		for (size_t i = 0; i < n; i++)
			r[i] = (unsigned char)random();
	for (size_t i = 0; i < n; i++)
		buf[i] = alpha[r[i] % (sizeof(alpha) - 1)];
	buf[n] = '\0';
}

int kb_buf_reserve(struct kb_buf *b, size_t n)
{
	if (b->data && b->len + n + 1 <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	char *d = realloc(b->data, cap);
	if (!d)
		return -ENOMEM;
	b->data = d;
	b->cap = cap;
	return 0;
}

int kb_buf_append(struct kb_buf *b, const char *s, size_t n)
{
	if (n == 0 && b->data)
		return 0;
	if (kb_buf_reserve(b, n) < 0)
		return -ENOMEM;
	if (n)
		memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int kb_buf_puts(struct kb_buf *b, const char *s)
{
	return kb_buf_append(b, s, strlen(s));
}

int kb_buf_printf(struct kb_buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof(tmp))
		return kb_buf_append(b, tmp, (size_t)n);
	char *big = malloc((size_t)n + 1);
	if (!big)
		return -ENOMEM;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	int rc = kb_buf_append(b, big, (size_t)n);
	free(big);
	return rc;
}

void kb_buf_free(struct kb_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

bool kb_str_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool kb_str_has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

static bool lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

bool kb_dns_label_n(const char *s, size_t n)
{
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool kb_dns_label(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	return n <= max && kb_dns_label_n(s, n);
}

int kb_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int kb_errf(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && len) {
		va_start(ap, fmt);
		vsnprintf(err, len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

bool kb_is_ip(const char *s)
{
	unsigned char buf[16];
	return s && (uv_inet_pton(AF_INET, s, buf) == 0 || uv_inet_pton(AF_INET6, s, buf) == 0);
}

/* ---- quantities ---------------------------------------------------------------- */

static const struct {
	const char *sfx;
	double mul;
} qty_suffix[] = {
    {"Ki", 1024.0},
    {"Mi", 1048576.0},
    {"Gi", 1073741824.0},
    {"Ti", 1099511627776.0},
    {"Pi", 1125899906842624.0},
    {"Ei", 1152921504606846976.0},
    {"n", 1e-9},
    {"u", 1e-6},
    {"m", 1e-3},
    {"", 1.0},
    {"k", 1e3},
    {"M", 1e6},
    {"G", 1e9},
    {"T", 1e12},
    {"P", 1e15},
    {"E", 1e18},
};

/* Decimal exponent suffix "e3" / "E-2"; returns true and the factor. */
static bool qty_exponent(const char *s, double *mul)
{
	if (*s != 'e' && *s != 'E')
		return false;
	s++;
	const char *d = s + ((*s == '+' || *s == '-') ? 1 : 0);
	if (!*d)
		return false;
	for (const char *p = d; *p; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	*mul = pow(10.0, (double)strtol(s, NULL, 10));
	return true;
}

int kb_quantity_parse(const char *s, double *out)
{
	if (!s || !*s)
		return -EINVAL;
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	size_t digits = 0, dots = 0;
	const char *num_end = p;
	while (isdigit((unsigned char)*num_end) || *num_end == '.') {
		digits += *num_end != '.';
		dots += *num_end == '.';
		num_end++;
	}
	if (digits == 0 || dots > 1)
		return -EINVAL;
	char num[64];
	if ((size_t)(num_end - s) >= sizeof(num))
		return -EINVAL;
	double v, mul = 0;
	if (dots == 0 && digits <= 15) {
		/* an integer of up to 15 digits is exact in a double: strtod's
		 * value without its cost (validation parses every request and
		 * limit of every container, some twice) */
		int64_t n = 0;
		for (const char *d = p; d < num_end; d++)
			n = n * 10 + (*d - '0');
		v = *s == '-' ? -(double)n : (double)n;
	} else {
		memcpy(num, s, (size_t)(num_end - s));
		num[num_end - s] = '\0';
		v = strtod(num, NULL);
	}
	for (size_t i = 0; i < KB_ARRAY_SIZE(qty_suffix) && mul == 0; i++)
		if (qty_suffix[i].sfx[0] == *num_end && strcmp(num_end, qty_suffix[i].sfx) == 0)
			mul = qty_suffix[i].mul;
	if (mul == 0 && !qty_exponent(num_end, &mul))
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int kb_quantity_cmp_values(double x, double y)
{
	/* compare with a relative tolerance so "1Gi" == "1073741824" exactly
	 * and "0.1" == "100m" despite binary floating point */
	double tol = fmax(fabs(x), fabs(y)) * 1e-12;
	return fabs(x - y) <= tol ? 0 : (x < y ? -1 : 1);
}

int kb_quantity_cmp(const char *a, const char *b, int *out)
{
	double x, y;
	if (kb_quantity_parse(a, &x) < 0 || kb_quantity_parse(b, &y) < 0)
		return -EINVAL;
	*out = kb_quantity_cmp_values(x, y);
	return 0;
}

int kb_parse_hostport(const char *addr, int default_port, struct sockaddr_storage *ss)
{
	if (default_port >= 0 && (uv_ip4_addr(addr, default_port, (struct sockaddr_in *)ss) == 0 ||
				  uv_ip6_addr(addr, default_port, (struct sockaddr_in6 *)ss) == 0))
		return 0;
	char host[128];
	const char *colon;
	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');
		if (!end || end[1] != ':' || (size_t)(end - addr - 1) >= sizeof(host))
			return -EINVAL;
		memcpy(host, addr + 1, (size_t)(end - addr - 1));
		host[end - addr - 1] = '\0';
		colon = end + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon || (size_t)(colon - addr) >= sizeof(host))
			return -EINVAL;
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
	}
	char *endp;
	long port = strtol(colon + 1, &endp, 10);
	if (*endp || port < 0 || port > 65535 || colon[1] == '\0')
		return -EINVAL;
	if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss) == 0)
		return 0;
	if (uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)ss) == 0)
		return 0;
	return -EINVAL;
}
