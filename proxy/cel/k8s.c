/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes' CEL libraries (kube 1.33): the function table, and the
 * quantity and semver libraries. URLs, IPs and CIDRs are in k8s_net.c,
 * format.* in k8s_format.c.
 *
 * DESIGN. A quantity keeps the two forms k8s.io/apimachinery's Quantity
 * has, because what CEL can see depends on them: an int64 amount
 * (value × 10^scale), which isInteger()/asInteger() accept when it is a
 * whole number, and an arbitrary-precision decimal (inf.Dec), which they
 * always refuse (quantity("1.5Gi").isInteger() is false in kube). Parsing,
 * the rounding of sub-nano amounts up to 1n, the cap of binary amounts at
 * 2^63-1, and add/sub (int64 while it fits, decimal after) follow
 * resource.ParseQuantity and Quantity.Add/Sub; asApproximateFloat repeats
 * Go's arithmetic (unscaled value times math.Pow10) so it gives the same
 * double. Decimals are digit strings in the evaluation's arena. As in
 * kube, sign is a global function (sign(q)), the rest are members; kube
 * 1.33 has no mul/div.
 *
 * Semver follows github.com/blang/semver/v4's Parse and Compare (build
 * metadata ignored), and kube's normalization for semver(s, true).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/k8s_impl.h"

/* ---- shared helpers ---- */

bool k8s_cost_len(cel_ctx_t *c, size_t n)
{
	return cel_cost(c, 1 + n / 10);
}

/* Length of the valid UTF-8 sequence at s[0..n) (no overlong forms,
 * surrogates or code points past U+10FFFF, as Go decodes), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (s[0] > 0xf4 || len == 0 || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return len;
}

/* Go's escape of byte ch in a quoted string, NULL when it stands as is. */
static const char *quote_escape(unsigned char ch)
{
	static const char *const esc[] = {
	    ['\a'] = "\\a", ['\b'] = "\\b", ['\f'] = "\\f", ['\n'] = "\\n", ['\r'] = "\\r",
	    ['\t'] = "\\t", ['\v'] = "\\v", ['"'] = "\\\"", ['\\'] = "\\\\"};
	return ch < sizeof(esc) / sizeof(esc[0]) ? esc[ch] : NULL;
}

static uint32_t utf8_decode(const unsigned char *u, size_t len)
{
	static const unsigned char lead[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	uint32_t cp = u[0] & lead[len];
	for (size_t i = 1; i < len; i++)
		cp = cp << 6 | (u[i] & 0x3f);
	return cp;
}

/* Whether Go's strconv.Quote escapes code point cp (not unicode.IsPrint):
 * C1 controls, spaces but U+0020, format characters, private use and
 * non-characters (the common cases; unassigned code points are kept). */
static bool go_unprintable(uint32_t cp)
{
	static const uint32_t ranges[][2] = {
	    {0x80, 0xa0},       {0xad, 0xad},        {0x600, 0x605},   {0x61c, 0x61c},
	    {0x6dd, 0x6dd},     {0x70f, 0x70f},      {0x1680, 0x1680}, {0x180e, 0x180e},
	    {0x2000, 0x200f},   {0x2028, 0x202f},    {0x205f, 0x206f}, {0x3000, 0x3000},
	    {0xd800, 0xf8ff},   {0xfeff, 0xfeff},    {0xfff9, 0xfffb}, {0xfffe, 0xffff},
	    {0xe0001, 0xe007f}, {0xf0000, 0x10ffff},
	};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		if (cp >= ranges[i][0] && cp <= ranges[i][1])
			return true;
	return false;
}

const char *k8s_quote(cel_ctx_t *c, const char *s, size_t n)
{
	char *out = cel_alloc(c, n * 5 + 3), *o = out;
	*o++ = '"';
	for (size_t i = 0; i < n;) {
		const unsigned char *u = (const unsigned char *)s + i;
		size_t len = u[0] >= 0x80 ? utf8_len(u, n - i) : 0;
		uint32_t cp = len ? utf8_decode(u, len) : 0;
		if (len && go_unprintable(cp)) {
			o += sprintf(o, cp > 0xffff ? "\\U%08x" : "\\u%04x", (unsigned)cp);
		} else if (len) {
			memcpy(o, u, len);
			o += len;
		} else if (quote_escape(u[0])) {
			o += sprintf(o, "%s", quote_escape(u[0]));
		} else if (u[0] < 0x20 || u[0] >= 0x7f) {
			o += sprintf(o, "\\x%02x", u[0]);
		} else {
			*o++ = (char)u[0];
		}
		i += len ? len : 1;
	}
	*o++ = '"';
	*o = '\0';
	return out;
}

/* ---- decimal magnitudes ---- */

/* A signed decimal d × 10^exp: d has no leading or trailing zeros (n 0:
 * zero). d is borrowed. */
struct dnum {
	bool neg;
	const char *d;
	size_t n;
	int64_t exp;
};

/* Results longer than this many digits are refused (Go would build them). */
#define QTY_MAX_DIGITS 100000

static struct dnum dnum_make(bool neg, const char *d, size_t n, int64_t exp)
{
	while (n > 0 && *d == '0') {
		d++;
		n--;
	}
	while (n > 0 && d[n - 1] == '0') {
		n--;
		exp++;
	}
	return (struct dnum){.neg = neg && n > 0, .d = d, .n = n, .exp = n ? exp : 0};
}

/* |v| × 10^scale, its digits in buf. */
static struct dnum dnum_of_int(int64_t v, int32_t scale, char buf[24])
{
	uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	int len = snprintf(buf, 24, "%llu", (unsigned long long)m);
	return dnum_make(v < 0, buf, (size_t)len, scale);
}

/* The digit of |x| at 10^pos. */
static int dnum_digit(const struct dnum *x, int64_t pos)
{
	int64_t i = pos - x->exp;
	if (i < 0 || i >= (int64_t)x->n)
		return 0;
	return x->d[x->n - 1 - (size_t)i] - '0';
}

static int dnum_cmp_mag(const struct dnum *a, const struct dnum *b)
{
	if (a->n == 0 || b->n == 0)
		return (a->n > 0) - (b->n > 0);
	int64_t ta = (int64_t)a->n + a->exp, tb = (int64_t)b->n + b->exp;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	size_t m = a->n > b->n ? a->n : b->n;
	for (size_t i = 0; i < m; i++) {
		char x = i < a->n ? a->d[i] : '0', y = i < b->n ? b->d[i] : '0';
		if (x != y)
			return x < y ? -1 : 1;
	}
	return 0;
}

static int dnum_cmp(const struct dnum *a, const struct dnum *b)
{
	int sa = a->n ? (a->neg ? -1 : 1) : 0, sb = b->n ? (b->neg ? -1 : 1) : 0;
	if (sa != sb)
		return sa < sb ? -1 : 1;
	int m = dnum_cmp_mag(a, b);
	return sa < 0 ? -m : m;
}

/* a + b (exact), its digits in the arena. 0, or -E2BIG when the result
 * would pass QTY_MAX_DIGITS. */
static int dnum_add(cel_ctx_t *c, const struct dnum *a, const struct dnum *b, struct dnum *out)
{
	if (a->n == 0 || b->n == 0) { /* the other, its digits copied (they may be on a stack) */
		*out = a->n ? *a : *b;
		out->d = cel_strndup(c, out->d, out->n);
		return 0;
	}
	int64_t lo = a->exp < b->exp ? a->exp : b->exp;
	int64_t ta = (int64_t)a->n + a->exp, tb = (int64_t)b->n + b->exp;
	int64_t len = (ta > tb ? ta : tb) - lo + 1;
	if (len > QTY_MAX_DIGITS)
		return -E2BIG;
	cel_cost(c, 1 + (uint64_t)len / 10);
	bool same = a->neg == b->neg;
	const struct dnum *x = a, *y = b;
	if (!same && dnum_cmp_mag(a, b) < 0) {
		x = b;
		y = a;
	}
	char *r = cel_alloc(c, (size_t)len);
	int carry = 0;
	for (int64_t p = 0; p < len; p++) {
		int d =
		    dnum_digit(x, lo + p) + (same ? dnum_digit(y, lo + p) : -dnum_digit(y, lo + p));
		d += carry;
		carry = d >= 10 ? 1 : d < 0 ? -1 : 0;
		d -= carry * 10;
		r[len - 1 - p] = (char)('0' + d);
	}
	*out = dnum_make(x->neg, r, (size_t)len, lo);
	return 0;
}

/* ---- quantities ---- */

struct qty {
	bool dec;  /* inf.Dec form; else int64 form */
	int64_t v; /* int64 form: v × 10^scale */
	int32_t scale;
	struct dnum d; /* dec form: the value (digits in the arena) */
	int64_t nexp;  /* dec form: Go's unscaled × 10^nexp split */
};

#define ERR_QTY_FORMAT                                  \
	"quantities must match the regular expression " \
	"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define ERR_QTY_NUMERIC "unable to parse numeric part of quantity"
#define ERR_QTY_SUFFIX  "unable to parse quantity's suffix"

static struct dnum qty_view(const struct qty *q, char buf[24])
{
	return q->dec ? q->d : dnum_of_int(q->v, q->scale, buf);
}

static int qty_cmp(const struct qty *a, const struct qty *b)
{
	char ba[24], bb[24];
	struct dnum x = qty_view(a, ba), y = qty_view(b, bb);
	return dnum_cmp(&x, &y);
}

static bool qty_equal(const void *a, const void *b)
{
	return qty_cmp(a, b) == 0;
}

const struct cel_opaque_type k8s_quantity_type = {"kubernetes.Quantity", qty_equal};

/* What resource.parseQuantityString splits a quantity into. */
struct qscan {
	bool positive;
	struct cel_str value, num, denom, suffix;
};

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static size_t skip_digits(const char *s, size_t i, size_t n)
{
	while (i < n && is_digit(s[i]))
		i++;
	return i;
}

/* The suffix part from pos: [eEinumkKMGTP]*[-+]?[0-9]*, or -EINVAL. */
static int qty_scan_suffix(const char *s, size_t pos, size_t n, struct qscan *o)
{
	size_t i = pos;
	while (i < n && memchr("eEinumkKMGTP", s[i], 12))
		i++;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	if (skip_digits(s, i, n) < n)
		return -EINVAL;
	o->suffix = (struct cel_str){s + pos, n - pos};
	return 0;
}

static int qty_scan(const char *s, size_t n, struct qscan *o)
{
	size_t pos = 0;
	*o = (struct qscan){.positive = true};
	if (n > 0 && (s[0] == '-' || s[0] == '+')) {
		o->positive = s[0] == '+';
		pos++;
	}
	while (pos < n && s[pos] == '0')
		pos++;
	if (pos >= n) {
		o->num = o->value = (struct cel_str){"0", 1};
		return 0;
	}
	size_t i = skip_digits(s, pos, n);
	o->num = (struct cel_str){s + pos, i - pos};
	o->value = (struct cel_str){s, i};
	if (i >= n)
		return 0;
	if (o->num.len == 0)
		o->num = (struct cel_str){"0", 1};
	if (s[i] == '.') {
		size_t j = skip_digits(s, i + 1, n);
		o->denom = (struct cel_str){s + i + 1, j - i - 1};
		o->value.len = j;
		if (j >= n)
			return 0;
		i = j;
	}
	return qty_scan_suffix(s, i, n, o);
}

/* Go's strconv.ParseInt(s, 10, 64). */
static bool go_parse_int64(const char *s, size_t n, int64_t *out)
{
	bool neg = n > 0 && s[0] == '-';
	size_t i = n > 0 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
	if (i >= n)
		return false;
	uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (!is_digit(s[i]) || v > (lim - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

struct qsuffix {
	int base;
	int32_t exp;
	bool binary;
};

static bool qty_suffix(struct cel_str s, struct qsuffix *o)
{
	static const struct {
		const char *s;
		int base, exp;
	} tab[] = {{"", 10, 0},   {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3},
		   {"k", 10, 3},  {"M", 10, 6},  {"G", 10, 9},  {"T", 10, 12},
		   {"P", 10, 15}, {"E", 10, 18}, {"Ki", 2, 10}, {"Mi", 2, 20},
		   {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50}, {"Ei", 2, 60}};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		if (strlen(tab[i].s) == s.len &&
		    (s.len == 0 || memcmp(tab[i].s, s.p, s.len) == 0)) {
			*o = (struct qsuffix){tab[i].base, tab[i].exp, tab[i].base == 2};
			return true;
		}
	}
	int64_t e;
	if (s.len > 1 && (s.p[0] == 'e' || s.p[0] == 'E') &&
	    go_parse_int64(s.p + 1, s.len - 1, &e)) {
		*o = (struct qsuffix){10, (int32_t)(uint32_t)(uint64_t)e, false};
		return true;
	}
	return false;
}

/* int64 a × b as Go's int64Multiply decides. */
static bool go_mul(int64_t a, int64_t b, int64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

/* resource.ParseQuantity's int64 fast path: true and *q when it applies. */
static bool qty_parse_fast(const struct qscan *sc, const struct qsuffix *sf, struct qty *q)
{
	int32_t precision, scale = 0;
	int64_t mantissa = 1;
	if (!sf->binary) {
		scale = sf->exp;
		precision = 18 - (int32_t)(sc->num.len + sc->denom.len);
	} else if (sc->denom.len == 0) {
		mantissa = (int64_t)1 << sf->exp;
		precision = 15 - (int32_t)sc->num.len - sf->exp * 3 / 10 - 1;
	} else {
		precision = -1;
	}
	if (precision < 0)
		return false;
	scale = (int32_t)((uint32_t)scale - (uint32_t)sc->denom.len);
	if (scale < -9)
		return false;
	int64_t v = 0, r;
	for (size_t i = 0; i < sc->num.len + sc->denom.len; i++) {
		char ch = i < sc->num.len ? sc->num.p[i] : sc->denom.p[i - sc->num.len];
		v = v * 10 + (ch - '0');
	}
	if (!go_mul(v, mantissa, &r))
		return false;
	*q = (struct qty){.v = sc->positive ? r : -r, .scale = scale};
	return true;
}

/* digits (n, most significant first) × m, into the arena. */
static char *mag_mul(cel_ctx_t *c, const char *d, size_t n, uint32_t m, size_t *outn)
{
	char *r = cel_alloc(c, n + 10);
	uint64_t carry = 0;
	size_t k = n + 10;
	for (size_t i = n; i-- > 0;) {
		uint64_t x = (uint64_t)(d[i] - '0') * m + carry;
		r[--k] = (char)('0' + x % 10);
		carry = x / 10;
	}
	while (carry) {
		r[--k] = (char)('0' + carry % 10);
		carry /= 10;
	}
	*outn = n + 10 - k;
	return r + k;
}

/* Rounds a non-zero x up (away from zero) to a multiple of 10^-9. */
static struct dnum round_up_nano(cel_ctx_t *c, struct dnum x)
{
	if (x.exp >= -9)
		return x;
	uint64_t drop = (uint64_t)(-9 - x.exp);
	if (drop >= x.n)
		return dnum_make(x.neg, "1", 1, -9);
	size_t keep = x.n - (size_t)drop;
	char *r = cel_alloc(c, keep + 1);
	memcpy(r + 1, x.d, keep);
	r[0] = '0';
	size_t i = keep;
	while (r[i] == '9')
		r[i--] = '0';
	r[i]++;
	return dnum_make(x.neg, r, keep + 1, -9);
}

/* resource.ParseQuantity's inf.Dec path. */
static const char *qty_parse_dec(cel_ctx_t *c, const struct qscan *sc, const struct qsuffix *sf,
				 struct qty *q)
{
	char *dig = cel_alloc(c, sc->value.len + 1);
	size_t nd = 0, nfrac = 0;
	bool frac = false;
	for (size_t i = 0; i < sc->value.len; i++) {
		char ch = sc->value.p[i];
		if (ch == '.')
			frac = true;
		else if (is_digit(ch)) {
			dig[nd++] = ch;
			nfrac += frac;
		}
	}
	if (nd == 0)
		return ERR_QTY_NUMERIC;
	const char *d = dig;
	for (int left = sf->binary ? sf->exp : 0; left > 0; left -= 20)
		d = mag_mul(c, d, nd, (uint32_t)1 << (left > 20 ? 20 : left), &nd);
	/* inf.Dec's scale: a zero keeps it (0e-400 is 0 × 10^-400 to Go) */
	int64_t nexp = -(int64_t)nfrac + (sf->binary ? 0 : sf->exp);
	struct dnum x = dnum_make(!sc->positive, d, nd, nexp);
	if (x.n) {
		x = round_up_nano(c, x);
		nexp = -9;
	}
	static const struct dnum max = {false, "9223372036854775807", 19, 0};
	if (sf->binary && dnum_cmp_mag(&x, &max) > 0) {
		x = (struct dnum){x.neg, max.d, max.n, 0};
		nexp = 0;
	}
	*q = (struct qty){.dec = true, .d = x, .nexp = nexp};
	return NULL;
}

/* Parses s as resource.ParseQuantity does: NULL and *q, or kube's error. */
static const char *qty_parse(cel_ctx_t *c, const char *s, size_t n, struct qty *q)
{
	struct qscan sc;
	struct qsuffix sf;
	k8s_cost_len(c, n);
	if (n == 0)
		return ERR_QTY_FORMAT;
	if (n == 1 && s[0] == '0') {
		*q = (struct qty){0};
		return NULL;
	}
	if (qty_scan(s, n, &sc) < 0)
		return ERR_QTY_FORMAT;
	if (!qty_suffix(sc.suffix, &sf))
		return ERR_QTY_SUFFIX;
	if (qty_parse_fast(&sc, &sf, q))
		return NULL;
	return qty_parse_dec(c, &sc, &sf, q);
}

static cel_value_t qty_value(cel_ctx_t *c, const struct qty *q)
{
	struct qty *p = cel_alloc(c, sizeof(*p));
	*p = *q;
	return cel_opaque(&k8s_quantity_type, p);
}

K8S_FN(k8s_quantity)
{
	struct qty q;
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "quantity");
	const char *err = qty_parse(c, args[0].s.p, args[0].s.len, &q);
	return err ? cel_errorf(c, "%s", err) : qty_value(c, &q);
}

K8S_FN(k8s_is_quantity)
{
	struct qty q;
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "isQuantity");
	return cel_bool(qty_parse(c, args[0].s.p, args[0].s.len, &q) == NULL);
}

static const struct qty *qty_arg(const cel_value_t *args, size_t nargs, size_t want)
{
	if (nargs != want || !k8s_is(args[0], &k8s_quantity_type))
		return NULL;
	return args[0].o.data;
}

K8S_FN(k8s_q_sign)
{
	const struct qty *q = qty_arg(args, nargs, 1);
	if (!q)
		return cel_no_overload(c, "sign");
	if (!q->dec)
		return cel_int((q->v > 0) - (q->v < 0));
	return cel_int(q->d.n == 0 ? 0 : q->d.neg ? -1 : 1);
}

/* Quantity.AsInt64: only the int64 form, and only whole numbers that fit. */
static bool qty_as_int64(const struct qty *q, int64_t *out)
{
	if (q->dec || q->scale < 0)
		return false;
	int64_t v = q->v;
	for (int32_t s = q->scale; s > 0 && v != 0; s--)
		if (!go_mul(v, 10, &v))
			return false;
	*out = v;
	return true;
}

K8S_FN(k8s_q_is_integer)
{
	const struct qty *q = qty_arg(args, nargs, 1);
	int64_t v;
	if (!q)
		return cel_no_overload(c, "isInteger");
	return cel_bool(qty_as_int64(q, &v));
}

K8S_FN(k8s_q_as_integer)
{
	const struct qty *q = qty_arg(args, nargs, 1);
	int64_t v;
	if (!q)
		return cel_no_overload(c, "asInteger");
	if (!qty_as_int64(q, &v))
		return cel_errorf(c, "cannot convert value to integer");
	return cel_int(v);
}

/* Go's math.Pow10 (its tables, so products round as Go's do). */
static double go_pow10(int64_t n)
{
	static const double tab[32] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
				       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
				       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23,
				       1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31};
	static const double pos32[] = {1e0,   1e32,  1e64,  1e96,  1e128,
				       1e160, 1e192, 1e224, 1e256, 1e288};
	static const double neg32[] = {1e-0,   1e-32,  1e-64,  1e-96,  1e-128, 1e-160,
				       1e-192, 1e-224, 1e-256, 1e-288, 1e-320};
	if (n >= 0 && n <= 308)
		return pos32[n / 32] * tab[n % 32];
	if (n < 0 && n >= -323)
		return neg32[-n / 32] / tab[-n % 32];
	return n > 0 ? INFINITY : 0;
}

/* Quantity.AsApproximateFloat64. */
static double qty_float(cel_ctx_t *c, const struct qty *q)
{
	double base;
	int64_t e;
	if (!q->dec) {
		base = (double)q->v;
		e = q->scale;
	} else {
		char *buf = cel_alloc(c, q->d.n + 32);
		memcpy(buf, q->d.d, q->d.n);
		snprintf(buf + q->d.n, 32, "e%lld", (long long)(q->d.exp - q->nexp));
		base = q->d.n ? strtod(buf, NULL) : 0;
		if (q->d.neg)
			base = -base;
		e = q->nexp;
	}
	return e == 0 ? base : base * go_pow10(e);
}

K8S_FN(k8s_q_as_float)
{
	const struct qty *q = qty_arg(args, nargs, 1);
	if (!q)
		return cel_no_overload(c, "asApproximateFloat");
	return cel_double(qty_float(c, q));
}

/* int64Amount.Add: false when the sum leaves int64 (then the decimal). */
static bool qty_int_add(const struct qty *a, int64_t bv, int32_t bs, struct qty *out)
{
	int64_t x = a->v, y = bv;
	int32_t scale = a->scale;
	if (bv == 0 || a->v == 0) {
		*out = bv == 0 ? *a : (struct qty){.v = bv, .scale = bs};
		return true;
	}
	if (a->scale > bs) {
		for (int64_t s = (int64_t)a->scale - bs; s > 0; s--)
			if (!go_mul(x, 10, &x))
				return false;
		scale = bs;
	} else {
		for (int64_t s = (int64_t)bs - a->scale; s > 0; s--)
			if (!go_mul(y, 10, &y))
				return false;
	}
	if (__builtin_add_overflow(x, y, &x))
		return false;
	*out = (struct qty){.v = x, .scale = scale};
	return true;
}

/* Quantity.Add (sub false) or Quantity.Sub. */
static cel_value_t qty_addsub(cel_ctx_t *c, const struct qty *a, const struct qty *b, bool sub)
{
	struct qty r;
	if (!a->dec && !b->dec) {
		int64_t bv = sub ? (int64_t)(0 - (uint64_t)b->v) : b->v;
		if (qty_int_add(a, bv, b->scale, &r))
			return qty_value(c, &r);
	}
	char ba[24], bb[24];
	struct dnum x = qty_view(a, ba), y = qty_view(b, bb);
	if (sub)
		y.neg = y.n && !y.neg;
	if (dnum_add(c, &x, &y, &r.d) < 0)
		return cel_errorf(c, "quantity arithmetic result too large");
	int64_t na = a->dec ? a->nexp : a->scale, nb = b->dec ? b->nexp : b->scale;
	r.dec = true;
	r.nexp = na < nb ? na : nb;
	return qty_value(c, &r);
}

static cel_value_t qty_arith(cel_ctx_t *c, const cel_value_t *args, size_t nargs, bool sub)
{
	const struct qty *a = qty_arg(args, nargs, 2);
	const char *name = sub ? "sub" : "add";
	if (!a)
		return cel_no_overload(c, name);
	if (args[1].kind == CEL_INT) {
		struct qty b = {.v = args[1].i};
		return qty_addsub(c, a, &b, sub);
	}
	if (!k8s_is(args[1], &k8s_quantity_type))
		return cel_no_overload(c, name);
	return qty_addsub(c, a, args[1].o.data, sub);
}

K8S_FN(k8s_q_add)
{
	return qty_arith(c, args, nargs, false);
}

K8S_FN(k8s_q_sub)
{
	return qty_arith(c, args, nargs, true);
}

/* ---- semver ---- */

struct sv_pre {
	bool num;
	uint64_t n;
	struct cel_str s;
};

struct semver {
	uint64_t major, minor, patch;
	size_t npre;
	struct sv_pre *pre;
};

static bool all_in(struct cel_str s, bool (*ok)(char))
{
	for (size_t i = 0; i < s.len; i++)
		if (!ok(s.p[i]))
			return false;
	return true;
}

static bool is_alnum_dash(char ch)
{
	return is_digit(ch) || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '-';
}

static bool leading_zero(struct cel_str s)
{
	return s.len > 1 && s.p[0] == '0';
}

/* Go's strconv.ParseUint(s, 10, 64): NULL, or its error (arena). */
static const char *go_parse_uint(cel_ctx_t *c, struct cel_str s, uint64_t *out)
{
	uint64_t v = 0;
	const char *why = s.len == 0 ? "invalid syntax" : NULL;
	for (size_t i = 0; i < s.len && !why; i++) {
		if (!is_digit(s.p[i]))
			why = "invalid syntax";
		else if (v > (UINT64_MAX - (uint64_t)(s.p[i] - '0')) / 10)
			why = "value out of range";
		else
			v = v * 10 + (uint64_t)(s.p[i] - '0');
	}
	if (why) {
		cel_value_t e = cel_errorf(c, "strconv.ParseUint: parsing %s: %s",
					   k8s_quote(c, s.p, s.len), why);
		return e.s.p;
	}
	*out = v;
	return NULL;
}

/* One of major/minor/patch; what names it in messages ("major", "Major"). */
static const char *sv_number(cel_ctx_t *c, struct cel_str s, const char *what, const char *What,
			     uint64_t *out)
{
	const char *q = k8s_quote(c, s.p, s.len);
	if (!all_in(s, is_digit))
		return cel_errorf(c, "Invalid character(s) found in %s number %s", what, q).s.p;
	if (leading_zero(s))
		return cel_errorf(c, "%s number must not contain leading zeroes %s", What, q).s.p;
	return go_parse_uint(c, s, out);
}

static const char *sv_prerelease(cel_ctx_t *c, struct cel_str s, struct sv_pre *p)
{
	*p = (struct sv_pre){.s = s};
	if (s.len == 0)
		return "Prerelease is empty";
	if (all_in(s, is_digit)) {
		if (leading_zero(s))
			return cel_errorf(c,
					  "Numeric PreRelease version must not contain leading "
					  "zeroes %s",
					  k8s_quote(c, s.p, s.len))
			    .s.p;
		p->num = true;
		return go_parse_uint(c, s, &p->n);
	}
	if (!all_in(s, is_alnum_dash))
		return cel_errorf(c, "Invalid character(s) found in prerelease %s",
				  k8s_quote(c, s.p, s.len))
		    .s.p;
	return NULL;
}

/* Splits s at sep into at most max parts; returns how many. */
static size_t split(struct cel_str s, char sep, struct cel_str *parts, size_t max)
{
	size_t k = 0;
	const char *p = s.p, *end = s.p + s.len;
	while (k + 1 < max) {
		const char *q = memchr(p, sep, (size_t)(end - p));
		if (!q)
			break;
		parts[k++] = (struct cel_str){p, (size_t)(q - p)};
		p = q + 1;
	}
	parts[k++] = (struct cel_str){p, (size_t)(end - p)};
	return k;
}

static const char *sv_lists(cel_ctx_t *c, struct cel_str pre, struct cel_str build,
			    struct semver *v)
{
	size_t n = pre.p ? 1 : 0;
	for (size_t i = 0; pre.p && i < pre.len; i++)
		n += pre.p[i] == '.';
	struct cel_str *parts = cel_alloc(c, (n + 1) * sizeof(*parts));
	v->pre = cel_alloc(c, (n + 1) * sizeof(*v->pre));
	v->npre = pre.p ? split(pre, '.', parts, n) : 0;
	for (size_t i = 0; i < v->npre; i++) {
		const char *err = sv_prerelease(c, parts[i], &v->pre[i]);
		if (err)
			return err;
	}
	if (!build.p)
		return NULL;
	for (const char *p = build.p, *end = build.p + build.len;;) {
		const char *q = memchr(p, '.', (size_t)(end - p));
		struct cel_str b = {p, q ? (size_t)(q - p) : (size_t)(end - p)};
		if (b.len == 0)
			return "Build meta data is empty";
		if (!all_in(b, is_alnum_dash))
			return cel_errorf(c, "Invalid character(s) found in build meta data %s",
					  k8s_quote(c, b.p, b.len))
			    .s.p;
		if (!q)
			return NULL;
		p = q + 1;
	}
}

/* blang/semver's Parse: NULL and *v, or its error. */
static const char *sv_parse(cel_ctx_t *c, struct cel_str s, struct semver *v)
{
	struct cel_str parts[3], pre = {0}, build = {0};
	const char *err;
	*v = (struct semver){0};
	if (s.len == 0)
		return "Version string empty";
	if (split(s, '.', parts, 3) != 3)
		return "No Major.Minor.Patch elements found";
	if ((err = sv_number(c, parts[0], "major", "Major", &v->major)) ||
	    (err = sv_number(c, parts[1], "minor", "Minor", &v->minor)))
		return err;
	struct cel_str patch = parts[2];
	const char *plus = memchr(patch.p, '+', patch.len);
	if (plus) {
		build = (struct cel_str){plus + 1, (size_t)(patch.p + patch.len - plus - 1)};
		patch.len = (size_t)(plus - patch.p);
	}
	const char *dash = memchr(patch.p, '-', patch.len);
	if (dash) {
		pre = (struct cel_str){dash + 1, (size_t)(patch.p + patch.len - dash - 1)};
		patch.len = (size_t)(dash - patch.p);
	}
	if ((err = sv_number(c, patch, "patch", "Patch", &v->patch)))
		return err;
	return sv_lists(c, pre, build, v);
}

/* kube's normalizeAndParse: no "v", no leading zeros, missing parts 0. */
static const char *sv_parse_normalized(cel_ctx_t *c, struct cel_str s, struct semver *v)
{
	struct cel_str parts[3];
	if (s.len > 0 && s.p[0] == 'v') {
		s.p++;
		s.len--;
	}
	size_t k = split(s, '.', parts, 3);
	char *out = cel_alloc(c, s.len + 8), *o = out;
	for (size_t i = 0; i < 3; i++) {
		struct cel_str p = i < k ? parts[i] : (struct cel_str){"0", 1};
		if (i == k - 1 && k < 3 && (memchr(p.p, '+', p.len) || memchr(p.p, '-', p.len)))
			return "short version cannot contain PreRelease/Build meta data";
		if (i > 0)
			*o++ = '.';
		if (p.len > 1) {
			while (p.len > 0 && p.p[0] == '0') {
				p.p++;
				p.len--;
			}
			if (p.len == 0 || !is_digit(p.p[0]))
				*o++ = '0';
		}
		memcpy(o, p.p, p.len);
		o += p.len;
	}
	return sv_parse(c, (struct cel_str){out, (size_t)(o - out)}, v);
}

static int pre_cmp(const struct sv_pre *a, const struct sv_pre *b)
{
	if (a->num != b->num)
		return a->num ? -1 : 1;
	if (a->num)
		return (a->n > b->n) - (a->n < b->n);
	size_t m = a->s.len < b->s.len ? a->s.len : b->s.len;
	int r = memcmp(a->s.p, b->s.p, m);
	if (r == 0)
		r = (a->s.len > b->s.len) - (a->s.len < b->s.len);
	return (r > 0) - (r < 0);
}

static int sv_cmp(const struct semver *a, const struct semver *b)
{
	const uint64_t x[3] = {a->major, a->minor, a->patch}, y[3] = {b->major, b->minor, b->patch};
	for (int i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] > y[i] ? 1 : -1;
	if (a->npre == 0 || b->npre == 0)
		return (a->npre == 0) - (b->npre == 0);
	for (size_t i = 0; i < a->npre && i < b->npre; i++) {
		int r = pre_cmp(&a->pre[i], &b->pre[i]);
		if (r)
			return r;
	}
	return (a->npre > b->npre) - (a->npre < b->npre);
}

static bool sv_equal(const void *a, const void *b)
{
	return sv_cmp(a, b) == 0;
}

const struct cel_opaque_type k8s_semver_type = {"kubernetes.Semver", sv_equal};

/* semver(s) / semver(s, normalize) and isSemver: the parse, or NULL. */
static const char *sv_args(cel_ctx_t *c, const cel_value_t *args, size_t nargs, struct semver *v)
{
	k8s_cost_len(c, args[0].s.len);
	if (nargs == 2 && args[1].b)
		return sv_parse_normalized(c, args[0].s, v);
	return sv_parse(c, args[0].s, v);
}

static bool sv_args_ok(const cel_value_t *args, size_t nargs)
{
	return (nargs == 1 || (nargs == 2 && args[1].kind == CEL_BOOL)) &&
	       args[0].kind == CEL_STRING;
}

K8S_FN(k8s_semver)
{
	struct semver v;
	if (!sv_args_ok(args, nargs))
		return cel_no_overload(c, "semver");
	const char *err = sv_args(c, args, nargs, &v);
	if (err)
		return cel_errorf(c, "%s", err);
	struct semver *p = cel_alloc(c, sizeof(*p));
	*p = v;
	return cel_opaque(&k8s_semver_type, p);
}

K8S_FN(k8s_is_semver)
{
	struct semver v;
	if (!sv_args_ok(args, nargs))
		return cel_no_overload(c, "isSemver");
	return cel_bool(sv_args(c, args, nargs, &v) == NULL);
}

static cel_value_t sv_part(cel_ctx_t *c, const cel_value_t *args, size_t nargs, int which,
			   const char *name)
{
	if (nargs != 1 || !k8s_is(args[0], &k8s_semver_type))
		return cel_no_overload(c, name);
	const struct semver *v = args[0].o.data;
	uint64_t x = which == 0 ? v->major : which == 1 ? v->minor : v->patch;
	return cel_int((int64_t)x);
}

K8S_FN(k8s_sv_major)
{
	return sv_part(c, args, nargs, 0, "major");
}

K8S_FN(k8s_sv_minor)
{
	return sv_part(c, args, nargs, 1, "minor");
}

K8S_FN(k8s_sv_patch)
{
	return sv_part(c, args, nargs, 2, "patch");
}

/* ---- comparisons shared by quantities and versions ---- */

/* -1, 0 or 1 into *out; false when the arguments are not two quantities
 * or two versions. */
static bool compare(const cel_value_t *args, size_t nargs, int *out)
{
	if (nargs != 2 || args[0].kind != CEL_OPAQUE || args[1].kind != CEL_OPAQUE ||
	    args[0].o.type != args[1].o.type)
		return false;
	if (args[0].o.type == &k8s_quantity_type)
		*out = qty_cmp(args[0].o.data, args[1].o.data);
	else if (args[0].o.type == &k8s_semver_type)
		*out = sv_cmp(args[0].o.data, args[1].o.data);
	else
		return false;
	return true;
}

K8S_FN(k8s_is_greater_than)
{
	int r;
	return compare(args, nargs, &r) ? cel_bool(r > 0) : cel_no_overload(c, "isGreaterThan");
}

K8S_FN(k8s_is_less_than)
{
	int r;
	return compare(args, nargs, &r) ? cel_bool(r < 0) : cel_no_overload(c, "isLessThan");
}

K8S_FN(k8s_compare_to)
{
	int r;
	return compare(args, nargs, &r) ? cel_int(r) : cel_no_overload(c, "compareTo");
}

/* ---- the table ---- */

#define G(name, n, lib, fn)             \
	{                               \
		name, false, n, lib, fn \
	}
#define R(name, n, lib, fn)            \
	{                              \
		name, true, n, lib, fn \
	}
#define Q CEL_LIB_QUANTITY
#define S CEL_LIB_SEMVER
#define U CEL_LIB_URLS
#define I CEL_LIB_IP
#define F CEL_LIB_FORMAT

/* One entry per (name, receiver, arity): where two libraries share a name
 * (compareTo on quantities and versions) one function takes both; lib is
 * then the library that introduced the name first. "string" takes only
 * net.IP and net.CIDR and answers no_overload for the standard kinds. */
const struct cel_func cel_k8s_funcs[] = {
    G("quantity", 1, Q, k8s_quantity),
    G("isQuantity", 1, Q, k8s_is_quantity),
    G("sign", 1, Q, k8s_q_sign),
    R("isInteger", 1, Q, k8s_q_is_integer),
    R("asInteger", 1, Q, k8s_q_as_integer),
    R("asApproximateFloat", 1, Q, k8s_q_as_float),
    R("add", 2, Q, k8s_q_add),
    R("sub", 2, Q, k8s_q_sub),
    R("isGreaterThan", 2, Q | S, k8s_is_greater_than),
    R("isLessThan", 2, Q | S, k8s_is_less_than),
    R("compareTo", 2, Q | S, k8s_compare_to),

    G("semver", 1, S, k8s_semver),
    G("semver", 2, S, k8s_semver),
    G("isSemver", 1, S, k8s_is_semver),
    G("isSemver", 2, S, k8s_is_semver),
    R("major", 1, S, k8s_sv_major),
    R("minor", 1, S, k8s_sv_minor),
    R("patch", 1, S, k8s_sv_patch),

    G("url", 1, U, k8s_url),
    G("isURL", 1, U, k8s_is_url),
    R("getScheme", 1, U, k8s_url_scheme),
    R("getHost", 1, U, k8s_url_host),
    R("getHostname", 1, U, k8s_url_hostname),
    R("getPort", 1, U, k8s_url_port),
    R("getEscapedPath", 1, U, k8s_url_escaped_path),
    R("getQuery", 1, U, k8s_url_query),

    G("ip", 1, I, k8s_ip),
    G("isIP", 1, I, k8s_is_ip),
    G("ip.isCanonical", 1, I, k8s_ip_is_canonical),
    R("family", 1, I, k8s_ip_family),
    R("isUnspecified", 1, I, k8s_ip_is_unspecified),
    R("isLoopback", 1, I, k8s_ip_is_loopback),
    R("isLinkLocalMulticast", 1, I, k8s_ip_is_ll_multicast),
    R("isLinkLocalUnicast", 1, I, k8s_ip_is_ll_unicast),
    R("isGlobalUnicast", 1, I, k8s_ip_is_global_unicast),
    G("string", 1, I, k8s_net_string),
    G("cidr", 1, I, k8s_cidr),
    G("isCIDR", 1, I, k8s_is_cidr),
    R("containsIP", 2, I, k8s_cidr_contains_ip),
    R("containsCIDR", 2, I, k8s_cidr_contains_cidr),
    R("ip", 1, I, k8s_cidr_ip),
    R("masked", 1, I, k8s_cidr_masked),
    R("prefixLength", 1, I, k8s_cidr_prefix_length),

    G("format.named", 1, F, k8s_format_named),
    R("validate", 2, F, k8s_format_validate),
    G("format.dns1123Label", 0, F, k8s_format_dns1123_label),
    G("format.dns1123Subdomain", 0, F, k8s_format_dns1123_subdomain),
    G("format.dns1035Label", 0, F, k8s_format_dns1035_label),
    G("format.qualifiedName", 0, F, k8s_format_qualified_name),
    G("format.dns1123LabelPrefix", 0, F, k8s_format_dns1123_label_prefix),
    G("format.dns1123SubdomainPrefix", 0, F, k8s_format_dns1123_subdomain_prefix),
    G("format.dns1035LabelPrefix", 0, F, k8s_format_dns1035_label_prefix),
    G("format.labelValue", 0, F, k8s_format_label_value),
    G("format.uri", 0, F, k8s_format_uri),
    G("format.uuid", 0, F, k8s_format_uuid),
    G("format.byte", 0, F, k8s_format_byte),
    G("format.date", 0, F, k8s_format_date),
    G("format.datetime", 0, F, k8s_format_datetime),
    {0},
};
