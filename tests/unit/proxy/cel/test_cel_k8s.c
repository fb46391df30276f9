/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of Kubernetes' CEL libraries (cel/k8s*.c), called through the
 * function table as the evaluator calls them: quantities, semver, URLs,
 * IPs, CIDRs and formats, with kube's results and messages (cases from
 * kube's library tests and docs, and Go's parsers' edge cases).
 */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

#include "proxy/cel/cel_impl.h"

static cel_ctx_t *c;

static void setup(void)
{
	c = cel_ctx_new(0);
}

static void teardown(void)
{
	cel_ctx_free(c);
}

/* Calls the table's entry for name (receiver call when recv). */
static cel_value_t call(const char *name, bool recv, const cel_value_t *args, size_t n)
{
	for (const struct cel_func *f = cel_k8s_funcs; f->name; f++)
		if (strcmp(f->name, name) == 0 && f->receiver == recv &&
		    (f->nargs < 0 || (size_t)f->nargs == n))
			return f->fn(c, args, n);
	ck_abort_msg("no table entry for %s/%zu", name, n);
	return cel_null();
}

#define ARGS(...) \
	(cel_value_t[]){__VA_ARGS__}, sizeof((cel_value_t[]){__VA_ARGS__}) / sizeof(cel_value_t)
#define G(name, ...) call(name, false, ARGS(__VA_ARGS__))
#define R(name, ...) call(name, true, ARGS(__VA_ARGS__))
#define S(s)         cel_string(s)

static cel_value_t ok(cel_value_t v)
{
	ck_assert_msg(v.kind != CEL_ERROR, "unexpected error: %.*s", (int)v.s.len, v.s.p);
	return v;
}

static void is_bool(cel_value_t v, bool b)
{
	ck_assert_int_eq(ok(v).kind, CEL_BOOL);
	ck_assert_int_eq(v.b, b);
}

static void is_int(cel_value_t v, int64_t i)
{
	ck_assert_int_eq(ok(v).kind, CEL_INT);
	ck_assert_int_eq(v.i, i);
}

static void is_str(cel_value_t v, const char *s)
{
	ck_assert_int_eq(ok(v).kind, CEL_STRING);
	ck_assert_str_eq(cel_strndup(c, v.s.p, v.s.len), s);
}

static void is_err(cel_value_t v, const char *msg)
{
	ck_assert_int_eq(v.kind, CEL_ERROR);
	ck_assert_str_eq(cel_strndup(c, v.s.p, v.s.len), msg);
}

static bool opaque_eq(cel_value_t a, cel_value_t b)
{
	ck_assert_int_eq(ok(a).kind, CEL_OPAQUE);
	ck_assert_int_eq(ok(b).kind, CEL_OPAQUE);
	ck_assert_ptr_eq(a.o.type, b.o.type);
	return a.o.type->equal(a.o.data, b.o.data);
}

/* ---- quantities ---- */

#define QFMT                                            \
	"quantities must match the regular expression " \
	"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define QSUF "unable to parse quantity's suffix"
#define QNUM "unable to parse numeric part of quantity"

static cel_value_t q(const char *s)
{
	return ok(G("quantity", S(s)));
}

START_TEST(quantity_parse)
{
	static const struct {
		const char *s, *err; /* err NULL: valid */
	} t[] = {
	    {"12Mi", NULL},
	    {"10Mo", QFMT},
	    {"10Mm", QSUF},
	    {"20", NULL},
	    {"20M", NULL},
	    {"1,3G", QFMT},
	    {"200K", QSUF},
	    {"Three", QFMT},
	    {"", QFMT},
	    {"1e3", NULL},
	    {"1E", NULL},
	    {"1e", QSUF},
	    {"1e+", QSUF},
	    {".5", NULL},
	    {"1.", NULL},
	    {"-", NULL},
	    {"0.1n", NULL},
	    {"Ei", QNUM},
	    {"1.5Gi", NULL},
	    {"Mi", NULL},
	    {"+1.5e-3", NULL},
	    {"1e3e", QFMT},
	    {"1Ke3", QSUF},
	    {"1ee3", QSUF},
	    {"--1", QSUF},
	    {"1 ", QFMT},
	    {"0x10", QFMT},
	    {"1.2.3", QFMT},
	    {"1e99999999999999999999", QSUF},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t v = G("quantity", S(t[i].s));
		if (t[i].err)
			is_err(v, t[i].err);
		else
			ck_assert_msg(v.kind == CEL_OPAQUE, "%s", t[i].s);
		is_bool(G("isQuantity", S(t[i].s)), t[i].err == NULL);
	}
	ck_assert_str_eq(q("1").o.type->name, "kubernetes.Quantity");
	ck_assert_int_eq(G("quantity", cel_int(1)).kind, CEL_ERROR);
}
END_TEST

START_TEST(quantity_compare)
{
	static const struct {
		const char *a, *b;
		int cmp;
	} t[] = {
	    {"200M", "0.2G", 0},    {"50M", "50Mi", -1},
	    {"50Mi", "50M", 1},     {"1Gi", "1024Mi", 0},
	    {"1Gi", "1000Mi", 1},   {"0.1", "100m", 0},
	    {"1n", "0.1n", 0},      {"0.1n", "0.2n", 0},
	    {"-0.1n", "-1n", 0},    {"-1", "1", -1},
	    {"2M", "0.002G", 0},    {"2000k", "2M", 0},
	    {"1e3", "1k", 0},       {"1E", "1e18", 0},
	    {"1Ki", "1024", 0},     {"9999999999999999999999999999999999999G", "1E", 1},
	    {"1.5Gi", "1536Mi", 0}, {"Mi", "0", 0},
	    {"-0", "0", 0},         {"100Ei", "8Ei", 0},
	    {"0.5Ki", "512", 0},    {"1.1", "1.10", 0},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t a = q(t[i].a), b = q(t[i].b);
		is_int(R("compareTo", a, b), t[i].cmp);
		is_bool(R("isGreaterThan", a, b), t[i].cmp > 0);
		is_bool(R("isLessThan", a, b), t[i].cmp < 0);
		ck_assert_int_eq(opaque_eq(a, b), t[i].cmp == 0);
	}
}
END_TEST

START_TEST(quantity_integer)
{
	static const struct {
		const char *s;
		bool ok;
		int64_t v;
	} t[] = {
	    {"50k", true, 50000},
	    {"50", true, 50},
	    {"1Gi", true, 1073741824},
	    {"12e3", true, 12000},
	    {"-5", true, -5},
	    {"0", true, 0},
	    {"922337203685477580", true, 922337203685477580},
	    {"9223372036854775807", false, 0}, /* 19 digits: the decimal form */
	    {"1E", true, 1000000000000000000},
	    {"50000000G", true, 50000000000000000},
	    {"9999999999999999999999999999999999999G", false, 0},
	    {"9223372036854775808", false, 0}, /* 19 digits: the decimal form */
	    {"10E", false, 0},
	    {"1.5Gi", false, 0}, /* a whole number, but kube keeps it as inf.Dec */
	    {"1000m", false, 0},
	    {"1.0", false, 0},
	    {"0.5", false, 0},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t v = q(t[i].s);
		is_bool(R("isInteger", v), t[i].ok);
		if (t[i].ok)
			is_int(R("asInteger", v), t[i].v);
		else
			is_err(R("asInteger", v), "cannot convert value to integer");
	}
}
END_TEST

START_TEST(quantity_float)
{
	static const struct {
		const char *s;
		double d;
	} t[] = {
	    {"50.703k", 50703},
	    {"0.3", 0.30000000000000004}, /* 3 × math.Pow10(-1), as Go computes it */
	    {"1.5Gi", 1610612736},
	    {"1m", 0.001},
	    {"-2Ki", -2048},
	    {"1e400", INFINITY},
	    {"9999999999999999999999999999999999999G", 1.0000000000000001e+46}, /* as Go rounds */
	    {"0.1n", 1e-9},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t v = ok(R("asApproximateFloat", q(t[i].s)));
		ck_assert_int_eq(v.kind, CEL_DOUBLE);
		ck_assert_msg(v.d == t[i].d, "%s: %.17g", t[i].s, v.d);
	}
	ck_assert(isnan(R("asApproximateFloat", q("0e400")).d)); /* 0 × +Inf in Go too */
}
END_TEST

START_TEST(quantity_arith)
{
	static const struct {
		const char *a, *op, *b; /* b NULL: the int n */
		int64_t n;
		const char *want;
	} t[] = {
	    {"50k", "add", "20", 0, "50.02k"},
	    {"50k", "add", NULL, 20, "50020"},
	    {"50k", "sub", "20", 0, "49.98k"},
	    {"50k", "sub", NULL, 20, "49980"},
	    {"50k", "sub", NULL, 20000, "30k"},
	    {"50k", "add", "20k", 0, "70k"},
	    {"1Gi", "sub", "1Mi", 0, "1023Mi"},
	    {"1.5", "add", "500m", 0, "2"},
	    {"0", "add", "1.5Gi", 0, "1536Mi"},
	    {"9223372036854775807", "add", NULL, 1, "9223372036854775808"},
	    {"-9223372036854775807", "sub", NULL, 2, "-9223372036854775809"},
	    {"1e30", "add", "1", 0, "1000000000000000000000000000001"},
	    {"1n", "sub", "1n", 0, "0"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t b = t[i].b ? q(t[i].b) : cel_int(t[i].n);
		cel_value_t r = ok(R(t[i].op, q(t[i].a), b));
		ck_assert_msg(opaque_eq(r, q(t[i].want)), "%s %s", t[i].a, t[i].op);
	}
	/* kube's chain: the int64 form survives, the overflow goes decimal */
	cel_value_t v =
	    R("sub", R("sub", R("add", q("50k"), cel_int(20)), q("100k")), cel_int(-50000));
	is_int(R("asInteger", v), 20);
	is_int(R("asInteger", R("sub", R("add", q("50k"), cel_int(20)), q("100k"))), -49980);
	is_bool(R("isInteger", R("add", q("9223372036854775807"), cel_int(1))), false);
	cel_value_t big = R("add", q("9E"), cel_int(300000000000000000)); /* leaves int64 */
	is_bool(R("isInteger", big), false);
	ck_assert(opaque_eq(big, q("9.3E")));
	big = R("add", q("9E"), q("1E")); /* int64 form, but asInteger overflows */
	is_bool(R("isInteger", big), false);
	ck_assert(opaque_eq(big, q("10E")));
	is_int(R("asInteger", R("sub", q("10E"), q("1E"))), 9000000000000000000);
	is_bool(R("isInteger", R("add", q("1"), q("1.5Gi"))), false);
	is_int(G("sign", R("sub", q("1"), q("1.5Gi"))), -1);
	ck_assert_int_eq(R("add", q("1"), S("1")).kind, CEL_ERROR);
	is_err(R("add", q("1e99999"), q("1")), "quantity arithmetic result too large");
	/* a zero in inf.Dec form keeps its scale: Go's float is then NaN */
	ck_assert(isnan(R("asApproximateFloat", R("add", q("0e-400"), q("1e300"))).d));
	/* a sum with a zero owns its digits (checked after other calls) */
	cel_value_t z = R("sub", q("22373k"), q("+0Pi"));
	for (int i = 0; i < 4; i++)
		R("add", q("123456789"), q("987654321"));
	ck_assert(opaque_eq(z, q("22373k")));
	ck_assert(R("asApproximateFloat", z).d == 22373000);
}
END_TEST

START_TEST(quantity_sign)
{
	static const struct {
		const char *s;
		int sign;
	} t[] = {{"-5", -1},  {"0", 0},    {"3m", 1}, {"-1.5Gi", -1},
		 {"-0.0", 0}, {"0.1n", 1}, {"-Mi", 0}};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		is_int(G("sign", q(t[i].s)), t[i].sign);
}
END_TEST

/* ---- semver ---- */

START_TEST(semver_parse)
{
	static const struct {
		const char *s, *err;
	} t[] = {
	    {"1.0.0", NULL},
	    {"0.1.0-alpha.1", NULL},
	    {"1.2.3-rc.1+build.5", NULL},
	    {"1.0.0-x-y-z.--", NULL},
	    {"", "Version string empty"},
	    {"1.0", "No Major.Minor.Patch elements found"},
	    {"v1.0.0", "Invalid character(s) found in major number \"v1\""},
	    {"01.0.0", "Major number must not contain leading zeroes \"01\""},
	    {"1.01.0", "Minor number must not contain leading zeroes \"01\""},
	    {"1.0.01", "Patch number must not contain leading zeroes \"01\""},
	    {"1.x.0", "Invalid character(s) found in minor number \"x\""},
	    {"1.0.x", "Invalid character(s) found in patch number \"x\""},
	    {"1..0", "strconv.ParseUint: parsing \"\": invalid syntax"},
	    {"99999999999999999999.0.0",
	     "strconv.ParseUint: parsing \"99999999999999999999\": value out of range"},
	    {"1.0.0-", "Prerelease is empty"},
	    {"1.0.0-a..b", "Prerelease is empty"},
	    {"1.0.0-01", "Numeric PreRelease version must not contain leading zeroes \"01\""},
	    {"1.0.0-a_b", "Invalid character(s) found in prerelease \"a_b\""},
	    {"1.0.0+", "Build meta data is empty"},
	    {"1.0.0+a.b_c", "Invalid character(s) found in build meta data \"b_c\""},
	    {"200K", "No Major.Minor.Patch elements found"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t v = G("semver", S(t[i].s));
		if (t[i].err)
			is_err(v, t[i].err);
		else
			ck_assert_msg(v.kind == CEL_OPAQUE, "%s", t[i].s);
		is_bool(G("isSemver", S(t[i].s)), t[i].err == NULL);
	}
	cel_value_t v = G("semver", S("1.2.3"));
	is_int(R("major", v), 1);
	is_int(R("minor", v), 2);
	is_int(R("patch", v), 3);
	ck_assert_str_eq(v.o.type->name, "kubernetes.Semver");
}
END_TEST

START_TEST(semver_normalize)
{
	static const struct {
		const char *s, *want, *err;
	} t[] = {
	    {"v1.0.0", "1.0.0", NULL},
	    {"1.0", "1.0.0", NULL},
	    {"1", "1.0.0", NULL},
	    {"01.01.01", "1.1.1", NULL},
	    {"v1.2.3-rc.1", "1.2.3-rc.1", NULL},
	    {"1.2.00-rc", "1.2.0-rc", NULL},
	    {"1.0-rc", NULL, "short version cannot contain PreRelease/Build meta data"},
	    {"1+b", NULL, "short version cannot contain PreRelease/Build meta data"},
	    {"V1.0.0", NULL, "Invalid character(s) found in major number \"0V1\""}, /* as kube */
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t v = G("semver", S(t[i].s), cel_bool(true));
		is_bool(G("isSemver", S(t[i].s), cel_bool(true)), t[i].err == NULL);
		if (t[i].err) {
			is_err(v, t[i].err);
			continue;
		}
		ck_assert_msg(opaque_eq(v, G("semver", S(t[i].want))), "%s", t[i].s);
	}
	is_bool(G("isSemver", S("v1.0"), cel_bool(false)), false);
	is_bool(G("isSemver", S("v1.0")), false);
}
END_TEST

START_TEST(semver_compare)
{
	/* semver.org's precedence example, in order */
	static const char *const order[] = {"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta",
					    "1.0.0-beta",  "1.0.0-beta.2",  "1.0.0-beta.11",
					    "1.0.0-rc.1",  "1.0.0",         "1.0.1",
					    "1.1.0",       "2.0.0",         "10.0.0"};
	size_t n = sizeof(order) / sizeof(order[0]);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < n; j++) {
			cel_value_t a = G("semver", S(order[i])), b = G("semver", S(order[j]));
			int want = (i > j) - (i < j);
			is_int(R("compareTo", a, b), want);
			is_bool(R("isGreaterThan", a, b), want > 0);
			is_bool(R("isLessThan", a, b), want < 0);
			ck_assert_int_eq(opaque_eq(a, b), want == 0);
		}
	}
	ck_assert(opaque_eq(G("semver", S("1.0.0+a")), G("semver", S("1.0.0+b"))));
	/* quantities and versions do not mix */
	ck_assert_int_eq(R("compareTo", G("semver", S("1.0.0")), q("1")).kind, CEL_ERROR);
}
END_TEST

/* ---- URLs ---- */

#define UERR "URL parse error during conversion from string: "

START_TEST(url_parse)
{
	static const struct {
		const char *s, *err;
	} t[] = {
	    {"https://user:pass@example.com:80/path?query=val#fragment", NULL},
	    {"/absolute-path", NULL},
	    {"https://a:b:c/", UERR "parse \"https://a:b:c/\": invalid port \":c\" after host"},
	    {"../relative-path", UERR "parse \"../relative-path\": invalid URI for request"},
	    {"", UERR "parse \"\": empty url"},
	    {"*", NULL},
	    {"mailto:a@b.c", NULL},
	    {"example.com", UERR "parse \"example.com\": invalid URI for request"},
	    {":foo", UERR "parse \":foo\": missing protocol scheme"},
	    {"http://[::1", UERR "parse \"http://[::1\": missing ']' in host"},
	    {"http://a b/", UERR "parse \"http://a b/\": invalid character \" \" in host name"},
	    {"http://a/%zz", UERR "parse \"http://a/%zz\": invalid URL escape \"%zz\""},
	    {"http://a/%4", UERR "parse \"http://a/%4\": invalid URL escape \"%4\""},
	    {"http://a\x01/",
	     UERR "parse \"http://a\\x01/\": net/url: invalid control character in URL"},
	    {"http://us er@a/", UERR "parse \"http://us er@a/\": net/url: invalid userinfo"},
	    {"http://%41/", UERR "parse \"http://%41/\": invalid URL escape \"%41\""},
	    {"http://[fe80::1%25en0]:8080/", NULL},
	    {"//host/path", NULL},
	    {"http:", NULL},
	    /* checked against Go's net/url */
	    {"http://a:%31/", UERR "parse \"http://a:%31/\": invalid port \":%31\" after host"},
	    {"http://[fe80::1%2]/",
	     UERR "parse \"http://[fe80::1%2]/\": invalid URL escape \"%2]\""},
	    {"http://3f3[2~8#e",
	     UERR "parse \"http://3f3[2~8#e\": invalid character \"#\" in host name"},
	    {"https://%i_E=MMa&", UERR "parse \"https://%i_E=MMa&\": invalid URL escape \"%i_\""},
	    {"./a:b", UERR "parse \"./a:b\": invalid URI for request"},
	    {"a:b", NULL},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t v = G("url", S(t[i].s));
		if (t[i].err)
			is_err(v, t[i].err);
		else
			ck_assert_msg(v.kind == CEL_OPAQUE, "%s: %.*s", t[i].s, (int)v.s.len,
				      v.s.p);
		is_bool(G("isURL", S(t[i].s)), t[i].err == NULL);
	}
	ck_assert_str_eq(G("url", S("/a")).o.type->name, "kubernetes.URL");
}
END_TEST

START_TEST(url_parts)
{
	static const struct {
		const char *url, *fn, *want;
	} t[] = {
	    {"/path", "getScheme", ""},
	    {"https://example.com/", "getScheme", "https"},
	    {"HTTPS://example.com/", "getScheme", "https"},
	    {"https://example.com:80/", "getHost", "example.com:80"},
	    {"https://example.com/", "getHost", "example.com"},
	    {"https://[::1]:80/", "getHost", "[::1]:80"},
	    {"https://[::1]/", "getHost", "[::1]"},
	    {"/path", "getHost", ""},
	    {"https://example.com:80/", "getHostname", "example.com"},
	    {"https://127.0.0.1:80/", "getHostname", "127.0.0.1"},
	    {"https://[::1]:80/", "getHostname", "::1"},
	    {"/path", "getHostname", ""},
	    {"https://example.com:80/", "getPort", "80"},
	    {"https://example.com/", "getPort", ""},
	    {"https://example.com:/", "getPort", ""},
	    {"/path", "getPort", ""},
	    {"https://user:pass@example.com:8443/x", "getHost", "example.com:8443"},
	    {"http://[fe80::1%25en0]:8080/", "getHostname", "fe80::1%en0"},
	    {"https://example.com/path", "getEscapedPath", "/path"},
	    {"https://example.com/path with spaces/", "getEscapedPath", "/path%20with%20spaces/"},
	    {"https://example.com", "getEscapedPath", ""},
	    {"https://example.com/a%2Fb", "getEscapedPath", "/a%2Fb"},
	    {"https://example.com/a%41b", "getEscapedPath", "/a%41b"},
	    {"https://example.com/é", "getEscapedPath", "/%C3%A9"},
	    {"https://example.com/a?b#c", "getEscapedPath", "/a"},
	    {"*", "getEscapedPath", "*"},
	    {"//host/path", "getHost", "host"},
	    {"mailto:a@b.c", "getEscapedPath", ""},
	    /* checked against Go's net/url */
	    {"http://a%2541/", "getHost", "a%41"},
	    {"http://[fe80::1%25%65n0]/", "getHostname", "fe80::1%en0"},
	    {"/a b?c d#e f", "getEscapedPath", "/a%20b"},
	    {"http://h/<x>", "getEscapedPath", "/%3Cx%3E"},
	    {"http://h/a%7e", "getEscapedPath", "/a%7e"},
	    {"http://h/!$&'()*+,;=:@", "getEscapedPath", "/!$&'()*+,;=:@"},
	    {"a:/b", "getEscapedPath", "/b"},
	    {"/a/../b", "getEscapedPath", "/a/../b"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t u = ok(G("url", S(t[i].url)));
		cel_value_t v = R(t[i].fn, u);
		ck_assert_msg(v.kind == CEL_STRING, "%s %s", t[i].url, t[i].fn);
		ck_assert_msg(v.s.len == strlen(t[i].want) &&
				  memcmp(v.s.p, t[i].want, v.s.len) == 0,
			      "%s %s: %.*s", t[i].url, t[i].fn, (int)v.s.len, v.s.p);
	}
}
END_TEST

START_TEST(url_equality)
{
	static const struct {
		const char *a, *b;
		bool eq;
	} t[] = {
	    {"https://a/x", "https://a/x", true},
	    {"HTTPS://a/x", "https://a/x", true},
	    {"https://a/x#f1", "https://a/x#f2", false},
	    {"https://a/x#f", "https://a/x#f", true},
	    {"https://u@a/", "https://a/", false},
	    {"/a?", "/a", false},
	    {"/a?x=1", "/a?x=2", false},
	    {"/a%2Fb", "/a/b", false},
	    {"/a b", "/a%20b", true},
	    {"mailto:x@y", "mailto:x@z", false},
	    {"https://a:80/", "https://a/", false},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_msg(opaque_eq(G("url", S(t[i].a)), G("url", S(t[i].b))) == t[i].eq,
			      "%s %s", t[i].a, t[i].b);
}
END_TEST

/* The query's list for key as "a,b" (NULL when absent). */
static const char *query_get(cel_value_t m, const char *key)
{
	cel_value_t l;
	if (!cel_map_get(c, m.m, S(key), &l))
		return NULL;
	char *out = cel_alloc(c, 256);
	for (size_t i = 0; i < cel_list_size(l.l); i++) {
		cel_value_t s = cel_list_at(c, l.l, i);
		snprintf(out + strlen(out), 256 - strlen(out), "%s%.*s", i ? "," : "", (int)s.s.len,
			 s.s.p);
	}
	return out;
}

START_TEST(url_query)
{
	cel_value_t m = ok(R("getQuery", G("url", S("https://example.com/path?k1=a&k2=b&k2=c"))));
	ck_assert_int_eq(cel_map_size(m.m), 2);
	ck_assert_str_eq(query_get(m, "k1"), "a");
	ck_assert_str_eq(query_get(m, "k2"), "b,c");
	m = ok(R("getQuery",
		 G("url", S("https://example.com/path?key with spaces=value with spaces"))));
	ck_assert_str_eq(query_get(m, "key with spaces"), "value with spaces");
	m = ok(R("getQuery", G("url", S("https://example.com/path?"))));
	ck_assert_int_eq(cel_map_size(m.m), 0);
	m = ok(R("getQuery", G("url", S("https://example.com/path"))));
	ck_assert_int_eq(cel_map_size(m.m), 0);
	m = ok(R("getQuery", G("url", S("/p?a=1+2&b=%41&c&d=x;y&&e=%zz&f=#frag"))));
	ck_assert_str_eq(query_get(m, "a"), "1 2");
	ck_assert_str_eq(query_get(m, "b"), "A");
	ck_assert_str_eq(query_get(m, "c"), "");
	ck_assert_ptr_null(query_get(m, "d"));
	ck_assert_ptr_null(query_get(m, "e"));
	ck_assert_str_eq(query_get(m, "f"), "");
	ck_assert_int_eq(cel_map_size(m.m), 4);
	m = ok(R("getQuery", G("url", S("/a?b?c"))));
	ck_assert_str_eq(query_get(m, "b?c"), "");
	m = ok(R("getQuery", G("url", S("http://a/?q=%2B+"))));
	ck_assert_str_eq(query_get(m, "q"), "+ ");
}
END_TEST

/* ---- IPs ---- */

#define IPERR(s) \
	"IP Address \"" s "\" parse error during conversion from string: ParseAddr(\"" s "\"): "

START_TEST(ip_parse)
{
	static const struct {
		const char *s, *err;
	} t[] = {
	    {"127.0.0.1", NULL},
	    {"::1", NULL},
	    {"::", NULL},
	    {"2001:db8::68", NULL},
	    {"1:2:3:4:5:6:7:8", NULL},
	    {"::ffff:1.2.3.4", "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed"},
	    {"::1.2.3.4", NULL},
	    {"fe80::1%eth0", "IP address \"fe80::1%eth0\" with zone value is not allowed"},
	    {"127.0.0.256", IPERR("127.0.0.256") "IPv4 field has value >255"},
	    {":::1",
	     IPERR(":::1") "each colon-separated field must have at least one digit (at \":1\")"},
	    {"01.2.3.4", IPERR("01.2.3.4") "IPv4 field has octet with leading zero"},
	    {"1.2.3", IPERR("1.2.3") "IPv4 address too short"},
	    {"1.2.3.4.5", IPERR("1.2.3.4.5") "IPv4 address too long"},
	    {"1.2..4", IPERR("1.2..4") "IPv4 field must have at least one digit (at \".4\")"},
	    {"1.2.3.x", IPERR("1.2.3.x") "unexpected character (at \"x\")"},
	    {"", IPERR("") "unable to parse IP"},
	    {"abc", IPERR("abc") "unable to parse IP"},
	    {"%eth0", IPERR("%eth0") "missing IPv6 address"},
	    {"fe80::1%", IPERR("fe80::1%") "zone must be a non-empty string"},
	    {"1::2::3", IPERR("1::2::3") "multiple :: in address (at \":3\")"},
	    {"12345::", IPERR("12345::") "each group must have 4 or less digits (at \"12345::\")"},
	    {"1:2:3:4:5:6:7", IPERR("1:2:3:4:5:6:7") "address string too short"},
	    {"1:2:3:4:5:6:7:8:9",
	     IPERR("1:2:3:4:5:6:7:8:9") "trailing garbage after address (at \"9\")"},
	    {"1:2:3:4::5:6:7:8",
	     IPERR("1:2:3:4::5:6:7:8") "the :: must expand to at least one field of zeros"},
	    {"1:", IPERR("1:") "colon must be followed by more characters (at \":\")"},
	    {"1:2:3:4:1.2.3.4",
	     IPERR("1:2:3:4:1.2.3.4") "embedded IPv4 address must replace the final 2 fields of "
				      "the address (at \"1.2.3.4\")"},
	    {"1g::", IPERR("1g::") "unexpected character, want colon (at \"g::\")"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t v = G("ip", S(t[i].s));
		if (t[i].err)
			is_err(v, t[i].err);
		else
			ck_assert_msg(v.kind == CEL_OPAQUE, "%s: %.*s", t[i].s, (int)v.s.len,
				      v.s.p);
		is_bool(G("isIP", S(t[i].s)), t[i].err == NULL);
	}
	ck_assert_str_eq(G("ip", S("::1")).o.type->name, "net.IP");
	/* messages quote as Go's %q does */
	is_err(
	    G("ip", S("a\tb\"\xc3\xa9\x01\xff\xc2\x85\\")),
	    "IP Address \"a\\tb\\\"\xc3\xa9\\x01\\xff\\u0085\\\\\" parse error during conversion "
	    "from string: ParseAddr(\"a\\tb\\\"\xc3\xa9\\x01\\xff\\u0085\\\\\"): unable to parse "
	    "IP");
}
END_TEST

START_TEST(ip_canonical)
{
	static const struct {
		const char *s, *canon;
	} t[] = {
	    {"127.0.0.1", "127.0.0.1"},
	    {"2001:db8::abcd", "2001:db8::abcd"},
	    {"2001:DB8::ABCD", "2001:db8::abcd"},
	    {"2001:db8::0:0:0:abcd", "2001:db8::abcd"},
	    {"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"},
	    {"1:0:0:2:0:0:0:3", "1:0:0:2::3"},
	    {"1:0:2:3:4:5:6:7", "1:0:2:3:4:5:6:7"},
	    {"0:0:0:0:0:0:0:0", "::"},
	    {"::1.2.3.4", "::102:304"},
	    {"1::", "1::"},
	    {"0001:0db8::", "1:db8::"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		is_bool(G("ip.isCanonical", S(t[i].s)), strcmp(t[i].s, t[i].canon) == 0);
		is_str(G("string", G("ip", S(t[i].s))), t[i].canon);
		ck_assert(opaque_eq(G("ip", S(t[i].s)), G("ip", S(t[i].canon))));
	}
	is_err(G("ip.isCanonical", S("1.2.3")), IPERR("1.2.3") "IPv4 address too short");
	ck_assert(!opaque_eq(G("ip", S("::1")), G("ip", S("::2"))));
	ck_assert(!opaque_eq(G("ip", S("0.0.0.1")), G("ip", S("::1"))));
}
END_TEST

START_TEST(ip_predicates)
{
	static const struct {
		const char *ip;
		int family;
		bool unspec, loop, llm, llu, global;
	} t[] = {
	    {"0.0.0.0", 4, true, false, false, false, false},
	    {"::", 6, true, false, false, false, false},
	    {"127.0.0.1", 4, false, true, false, false, false},
	    {"127.255.0.9", 4, false, true, false, false, false},
	    {"::1", 6, false, true, false, false, false},
	    {"224.0.0.1", 4, false, false, true, false, false},
	    {"224.0.1.1", 4, false, false, false, false, false},
	    {"ff02::1", 6, false, false, true, false, false},
	    {"ff12::1", 6, false, false, true, false, false},
	    {"ff05::1", 6, false, false, false, false, false},
	    {"fd00::1", 6, false, false, false, false, true},
	    {"169.254.169.254", 4, false, false, false, true, false},
	    {"fe80::1", 6, false, false, false, true, false},
	    {"febf::1", 6, false, false, false, true, false},
	    {"fd80::1", 6, false, false, false, false, true},
	    {"192.168.0.1", 4, false, false, false, false, true},
	    {"255.255.255.255", 4, false, false, false, false, false},
	    {"2001:db8::abcd", 6, false, false, false, false, true},
	    {"ff00::1", 6, false, false, false, false, false},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t ip = G("ip", S(t[i].ip));
		is_int(R("family", ip), t[i].family);
		is_bool(R("isUnspecified", ip), t[i].unspec);
		is_bool(R("isLoopback", ip), t[i].loop);
		is_bool(R("isLinkLocalMulticast", ip), t[i].llm);
		is_bool(R("isLinkLocalUnicast", ip), t[i].llu);
		is_bool(R("isGlobalUnicast", ip), t[i].global);
	}
	ck_assert_int_eq(R("family", S("1.2.3.4")).kind, CEL_ERROR);
}
END_TEST

/* ---- CIDRs ---- */

#define CERR    "network address parse error during conversion from string: "
#define PERR(s) CERR CERR "netip.ParsePrefix(\"" s "\"): "

START_TEST(cidr_parse)
{
	static const struct {
		const char *s, *err;
	} t[] = {
	    {"192.168.0.0/24", NULL},
	    {"192.168.0.1/24", NULL},
	    {"2001:db8::/32", NULL},
	    {"::/0", NULL},
	    {"192.168.0.0/", PERR("192.168.0.0/") "bad bits after slash: \"\""},
	    {"2001:db8::/", PERR("2001:db8::/") "bad bits after slash: \"\""},
	    {"10.0.0.0/08", PERR("10.0.0.0/08") "bad bits after slash: \"08\""},
	    {"10.0.0.0/+8", PERR("10.0.0.0/+8") "bad bits after slash: \"+8\""},
	    {"10.0.0.0/33", PERR("10.0.0.0/33") "prefix length out of range"},
	    {"::/129", PERR("::/129") "prefix length out of range"},
	    {"10.0.0.0", PERR("10.0.0.0") "no '/'"},
	    {"10.0.0/8", PERR("10.0.0/8") "ParseAddr(\"10.0.0\"): IPv4 address too short"},
	    {"fe80::%eth0/64", PERR("fe80::%eth0/64") "IPv6 zones cannot be present in a prefix"},
	    {"::ffff:1.2.3.0/120",
	     CERR "IPv4-mapped IPv6 address \"::ffff:1.2.3.0/120\" is not allowed"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t v = G("cidr", S(t[i].s));
		if (t[i].err)
			is_err(v, t[i].err);
		else
			ck_assert_msg(v.kind == CEL_OPAQUE, "%s: %.*s", t[i].s, (int)v.s.len,
				      v.s.p);
		is_bool(G("isCIDR", S(t[i].s)), t[i].err == NULL);
	}
	ck_assert_str_eq(G("cidr", S("::/0")).o.type->name, "net.CIDR");
}
END_TEST

START_TEST(cidr_contains)
{
	static const struct {
		const char *cidr, *other;
		bool ip, want; /* other an IP (else a CIDR) */
	} t[] = {
	    {"192.168.0.0/24", "192.168.0.1", true, true},
	    {"192.168.0.0/24", "192.168.1.1", true, false},
	    {"2001:db8::/32", "2001:db8::1", true, true},
	    {"2001:db8::/32", "2001:dc8::1", true, false},
	    {"10.0.0.0/8", "::a00:1", true, false},
	    {"0.0.0.0/0", "8.8.8.8", true, true},
	    {"192.168.0.1/24", "192.168.0.200", true, true},
	    {"192.168.0.0/24", "192.168.0.0/25", false, true},
	    {"192.168.0.0/24", "192.168.0.0/23", false, false},
	    {"2001:db8::/32", "2001:db8::/33", false, true},
	    {"2001:db8::/32", "2001:db8::/31", false, false},
	    {"192.168.0.0/16", "192.168.10.0/24", false, true}, /* kubernetes#130450 */
	    {"192.168.0.0/16", "192.168.0.1/32", false, true},
	    {"192.168.0.0/16", "192.169.0.0/24", false, false},
	    {"10.0.0.0/8", "10.0.0.0/8", false, true},
	    {"::/0", "0.0.0.0/0", false, false},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t p = G("cidr", S(t[i].cidr));
		const char *fn = t[i].ip ? "containsIP" : "containsCIDR";
		cel_value_t o = t[i].ip ? G("ip", S(t[i].other)) : G("cidr", S(t[i].other));
		is_bool(R(fn, p, o), t[i].want);
		is_bool(R(fn, p, S(t[i].other)), t[i].want);
	}
	cel_value_t p = G("cidr", S("10.0.0.0/8"));
	is_err(R("containsIP", p, S("10.0.0.256")), "no such overload");
	is_err(R("containsCIDR", p, S("10.0.0.0")), PERR("10.0.0.0") "no '/'");
}
END_TEST

START_TEST(cidr_parts)
{
	cel_value_t p = G("cidr", S("192.168.0.1/24"));
	ck_assert(opaque_eq(R("ip", p), G("ip", S("192.168.0.1"))));
	is_int(R("family", R("ip", p)), 4);
	is_int(R("prefixLength", p), 24);
	ck_assert(opaque_eq(R("masked", p), G("cidr", S("192.168.0.0/24"))));
	ck_assert(!opaque_eq(p, R("masked", p)));
	ck_assert(
	    opaque_eq(G("cidr", S("192.168.0.0/24")), R("masked", G("cidr", S("192.168.0.0/24")))));
	ck_assert(
	    opaque_eq(R("masked", G("cidr", S("2001:db8:1::/32"))), G("cidr", S("2001:db8::/32"))));
	ck_assert(
	    opaque_eq(R("masked", G("cidr", S("10.255.255.255/9"))), G("cidr", S("10.128.0.0/9"))));
	is_int(R("prefixLength", G("cidr", S("::1/128"))), 128);
	is_str(G("string", G("cidr", S("192.168.0.0/24"))), "192.168.0.0/24");
	is_str(G("string", G("cidr", S("2001:DB8:0::/48"))), "2001:db8::/48");
	ck_assert(!opaque_eq(G("cidr", S("10.0.0.0/8")), G("cidr", S("10.0.0.0/9"))));
	ck_assert_int_eq(G("string", cel_int(1)).kind, CEL_ERROR);
}
END_TEST

/* ---- formats ---- */

#define MSG_LABEL                                                                                \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', " \
	"and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', " \
	"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define MSG_SUB                                                                                   \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' " \
	"or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "     \
	"regex used for validation is "                                                           \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define MSG_1035                                                                                  \
	"a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with " \
	"an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "   \
	"'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
#define MSG_QN                                                                                    \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "  \
	"an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for " \
	"validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define MSG_LV                                                                                   \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' " \
	"or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "    \
	"'my_value',  or '12345', regex used for validation is "                                 \
	"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define L64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

START_TEST(format_validate)
{
	static const struct {
		const char *fmt, *s, *m1, *m2; /* m1 NULL: valid */
	} t[] = {
	    {"dns1123Label", "my-label-name", NULL, NULL},
	    {"dns1123Label", "123-abc", NULL, NULL},
	    {"dns1123Label", "My-Label", MSG_LABEL, NULL},
	    {"dns1123Label", "a.b", "must not contain dots", NULL},
	    {"dns1123Label", "-a", MSG_LABEL, NULL},
	    {"dns1123Label", "", MSG_LABEL, NULL},
	    {"dns1123Label", L64, "must be no more than 63 characters", NULL},
	    {"dns1123Label", L64 "-", "must be no more than 63 characters", MSG_LABEL},
	    {"dns1123Subdomain", "apiextensions.k8s.io", NULL, NULL},
	    {"dns1123Subdomain", "a..b", MSG_SUB, NULL},
	    {"dns1123Subdomain", "A.b", MSG_SUB, NULL},
	    {"dns1035Label", "my-label-name", NULL, NULL},
	    {"dns1035Label", "1abc", MSG_1035, NULL},
	    {"qualifiedName", "apiextensions.k8s.io/v1beta1", NULL, NULL},
	    {"qualifiedName", "MyName", NULL, NULL},
	    {"qualifiedName", "/a", "prefix part must be non-empty", NULL},
	    {"qualifiedName", "a/", "name part must be non-empty", "name part " MSG_QN},
	    {"qualifiedName", "A.com/b", "prefix part " MSG_SUB, NULL},
	    {"qualifiedName", "a/b/c",
	     "a qualified name " MSG_QN
	     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
	     NULL},
	    {"qualifiedName", "-a", "name part " MSG_QN, NULL},
	    {"dns1123LabelPrefix", "my-label-prefix-", NULL, NULL},
	    {"dns1123LabelPrefix", "my-label-prefix--", NULL, NULL},
	    {"dns1123LabelPrefix", "-", MSG_LABEL, NULL},
	    {"dns1123SubdomainPrefix", "mysubdomain.prefix.-", NULL, NULL},
	    {"dns1123SubdomainPrefix", "a.-", NULL, NULL},
	    {"dns1035LabelPrefix", "my-label-prefix-", NULL, NULL},
	    {"dns1035LabelPrefix", "1-", NULL, NULL}, /* masked to "a" */
	    {"dns1035LabelPrefix", "1a-", MSG_1035, NULL},
	    {"labelValue", "", NULL, NULL},
	    {"labelValue", "my_value", NULL, NULL},
	    {"labelValue", "-x", MSG_LV, NULL},
	    {"uri", "http://example.com", NULL, NULL},
	    {"uri", "example", "parse \"example\": invalid URI for request", NULL},
	    {"uuid", "123e4567-e89b-12d3-a456-426614174000", NULL, NULL},
	    {"uuid", "123E4567E89B12D3A456426614174000", NULL, NULL},
	    {"uuid", "123e4567-e89b-12d3-a456-42661417400", "does not match the UUID format", NULL},
	    {"uuid", "123e4567-e89b-12d3-a456--426614174000", "does not match the UUID format",
	     NULL},
	    {"byte", "aGVsbG8=", NULL, NULL},
	    {"byte", "aGVsbA==", NULL, NULL},
	    {"byte", "aGVs", NULL, NULL},
	    {"byte", "aGVsbG8", "invalid base64", NULL},
	    {"byte", "", "invalid base64", NULL},
	    {"byte", "a=Vs", "invalid base64", NULL},
	    {"date", "2021-01-01", NULL, NULL},
	    {"date", "2020-02-29", NULL, NULL},
	    {"date", "2021-02-29", "invalid date", NULL},
	    {"date", "2021-13-01", "invalid date", NULL},
	    {"date", "2021-1-01", "invalid date", NULL},
	    {"datetime", "2021-01-01T00:00:00Z", NULL, NULL},
	    {"datetime", "2021-01-01t23:59:59.123+01:00", NULL, NULL},
	    {"datetime", "2021-01-01T00:00:00,5z", NULL, NULL},
	    {"datetime", "2021-01-01T24:00:00Z", "invalid datetime", NULL},
	    {"datetime", "2021-01-01T00:00:00", "invalid datetime", NULL},
	    {"datetime", "2021-01-01", "invalid datetime", NULL},
	    {"datetime", "2021-02-30T00:00:00Z", "invalid datetime", NULL},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cel_value_t f = ok(G("format.named", S(t[i].fmt)));
		ck_assert_int_eq(f.kind, CEL_OPTIONAL);
		ck_assert_ptr_nonnull(f.opt);
		char name[64];
		snprintf(name, sizeof(name), "format.%s", t[i].fmt);
		ck_assert(opaque_eq(*f.opt, call(name, false, NULL, 0)));
		cel_value_t r = ok(R("validate", *f.opt, S(t[i].s)));
		ck_assert_int_eq(r.kind, CEL_OPTIONAL);
		if (!t[i].m1) {
			ck_assert_msg(r.opt == NULL, "%s %s: %.*s", t[i].fmt, t[i].s,
				      r.opt ? (int)cel_list_at(c, r.opt->l, 0).s.len : 0,
				      r.opt ? cel_list_at(c, r.opt->l, 0).s.p : "");
			continue;
		}
		ck_assert_msg(r.opt != NULL, "%s %s", t[i].fmt, t[i].s);
		ck_assert_int_eq(cel_list_size(r.opt->l), t[i].m2 ? 2 : 1);
		is_str(cel_list_at(c, r.opt->l, 0), t[i].m1);
		if (t[i].m2)
			is_str(cel_list_at(c, r.opt->l, 1), t[i].m2);
	}
}
END_TEST

START_TEST(format_named)
{
	cel_value_t none = G("format.named", S("nope"));
	ck_assert_int_eq(none.kind, CEL_OPTIONAL);
	ck_assert_ptr_null(none.opt);
	cel_value_t f = call("format.dns1123Label", false, NULL, 0);
	ck_assert_str_eq(f.o.type->name, "kubernetes.NamedFormat");
	ck_assert(!opaque_eq(f, call("format.dns1035Label", false, NULL, 0)));
	ck_assert_int_eq(R("validate", f, cel_int(1)).kind, CEL_ERROR);
	ck_assert_int_eq(R("validate", S("x"), S("x")).kind, CEL_ERROR);
}
END_TEST

/* ---- end to end: compiled and evaluated with every kube library ---- */

/* Evaluates expr: "true"/"false" for a bool, the message for an error. */
static const char *eval(const char *expr)
{
	static const struct cel_env env = {NULL, 0, CEL_LIB_K8S};
	char *err = NULL;
	cel_program_t *p = cel_compile(expr, &env, 0, &err);
	ck_assert_msg(p != NULL, "%s: %s", expr, err ? err : "");
	cel_value_t v;
	const char *msg = NULL, *out;
	enum cel_outcome o = cel_eval(p, c, &v, &msg, NULL);
	if (o != CEL_OK)
		out = cel_strndup(c, msg, strlen(msg));
	else if (v.kind == CEL_BOOL)
		out = v.b ? "true" : "false";
	else
		out = cel_debug_string(c, v);
	cel_program_free(p);
	return out;
}

START_TEST(end_to_end)
{
	static const struct {
		const char *expr, *want;
	} t[] = {
	    {"quantity('1Gi').isGreaterThan(quantity('1000Mi'))", "true"},
	    {"quantity('50k').add(quantity('20')) == quantity('50.02k')", "true"},
	    {"quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20", "true"},
	    {"quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')",
	     "true"},
	    {"quantity('50M').compareTo(quantity('50Mi')) == -1", "true"},
	    {"sign(quantity('-1m')) == -1", "true"},
	    {"quantity('9999999999999999999999999999999999999G').asInteger()",
	     "cannot convert value to integer"},
	    {"quantity('10Mm')", "unable to parse quantity's suffix"},
	    {"isQuantity('1,3G') || isQuantity('200K')", "false"},
	    {"quantity('50.703k').asApproximateFloat() == 50703.0", "true"},
	    {"url('https://a.b:8080/x?y=1').getPort() == '8080'", "true"},
	    {"url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == "
	     "{'k1': ['a'], 'k2': ['b', 'c']}",
	     "true"},
	    {"url('https://example.com/path?k2=b&k2=c').getQuery()['k2'][1] == 'c'", "true"},
	    {"isURL('../relative-path')", "false"},
	    {"url('https://[::1]:80/').getHostname() == '::1'", "true"},
	    {"url('../x')", "URL parse error during conversion from string: parse \"../x\": "
			    "invalid URI for request"},
	    {"cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))", "true"},
	    {"cidr('10.0.0.0/8').containsIP('11.1.2.3')", "false"},
	    {"cidr('192.168.0.0/16').containsCIDR('192.168.10.0/24')", "true"},
	    {"cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')", "true"},
	    {"cidr('192.168.0.1/24') == cidr('192.168.0.1/24').masked()", "false"},
	    {"cidr('192.168.0.1/24').ip() == ip('192.168.0.1')", "true"},
	    {"string(ip('2001:DB8::1')) == '2001:db8::1'", "true"},
	    {"string(cidr('::1/128')) == '::1/128'", "true"},
	    {"ip('::1').family() == 6 && ip('127.0.0.1').isLoopback()", "true"},
	    {"ip.isCanonical('2001:db8::0:0:0:abcd')", "false"},
	    {"ip('127.0.0.256')", "IP Address \"127.0.0.256\" parse error during conversion from "
				  "string: ParseAddr(\"127.0.0.256\"): IPv4 field has value >255"},
	    {"semver('1.2.3').isLessThan(semver('2.0.0'))", "true"},
	    {"semver('v1.0', true) == semver('1.0.0')", "true"},
	    {"semver('1.0.0-rc.1').compareTo(semver('1.0.0')) == -1", "true"},
	    {"isSemver('v1.0')", "false"},
	    {"semver('1.0.0').major() + semver('1.2.0').minor() + semver('0.0.3').patch() == 6",
	     "true"},
	    {"format.dns1123Label().validate('my-name') == optional.none()", "true"},
	    {"format.dns1123Label().validate('a.b').value() == ['must not contain dots']", "true"},
	    {"format.named('labelValue').value().validate('-x').hasValue()", "true"},
	    {"!format.named('nope').hasValue()", "true"},
	    {"format.uri().validate('http://example.com').hasValue()", "false"},
	    {"format.datetime().validate('2021-01-01T00:00:00Z').orValue(['x']) == ['x']", "true"},
	    {"type(quantity('1')) == type(quantity('2'))", "true"},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_msg(strcmp(eval(t[i].expr), t[i].want) == 0, "%s: %s", t[i].expr,
			      eval(t[i].expr));
}
END_TEST

START_TEST(library_flags)
{
	/* each function is declared only with its library */
	static const struct {
		unsigned libs;
		const char *expr;
		bool compiles;
	} t[] = {
	    {CEL_LIB_URLS, "url('/a').getPort() == ''", true},
	    {CEL_LIB_URLS, "ip('1.2.3.4') == ip('1.2.3.4')", false},
	    {CEL_LIB_IP, "cidr('::/0').containsIP('::1')", true},
	    {CEL_LIB_IP, "quantity('1') == quantity('1')", false},
	    {CEL_LIB_QUANTITY, "quantity('1').compareTo(quantity('2')) == -1", true},
	    {CEL_LIB_QUANTITY, "isSemver('1.0.0')", false},
	    {CEL_LIB_SEMVER, "semver('1.0.0').compareTo(semver('1.0.1')) == -1", true},
	    {CEL_LIB_SEMVER, "format.dns1123Label().validate('a').hasValue()", false},
	    {CEL_LIB_FORMAT | CEL_LIB_OPTIONAL, "format.dns1123Label().validate('a').hasValue()",
	     true},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct cel_env env = {NULL, 0, t[i].libs};
		char *err = NULL;
		cel_program_t *p = cel_compile(t[i].expr, &env, 0, &err);
		ck_assert_msg((p != NULL) == t[i].compiles, "%s: %s", t[i].expr, err ? err : "");
		cel_program_free(p);
		free(err);
	}
}
END_TEST

START_TEST(table)
{
	/* every entry has a library and at most one entry per name/receiver/arity */
	for (const struct cel_func *f = cel_k8s_funcs; f->name; f++) {
		ck_assert_uint_ne(f->lib, 0);
		ck_assert_uint_eq(f->lib & ~(unsigned)CEL_LIB_K8S, 0);
		for (const struct cel_func *g = f + 1; g->name; g++)
			ck_assert_msg(!(strcmp(f->name, g->name) == 0 &&
					f->receiver == g->receiver && f->nargs == g->nargs),
				      "%s twice", f->name);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cel_k8s");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, quantity_parse);
	tcase_add_test(tc, quantity_compare);
	tcase_add_test(tc, quantity_integer);
	tcase_add_test(tc, quantity_float);
	tcase_add_test(tc, quantity_arith);
	tcase_add_test(tc, quantity_sign);
	tcase_add_test(tc, semver_parse);
	tcase_add_test(tc, semver_normalize);
	tcase_add_test(tc, semver_compare);
	tcase_add_test(tc, url_parse);
	tcase_add_test(tc, url_parts);
	tcase_add_test(tc, url_equality);
	tcase_add_test(tc, url_query);
	tcase_add_test(tc, ip_parse);
	tcase_add_test(tc, ip_canonical);
	tcase_add_test(tc, ip_predicates);
	tcase_add_test(tc, cidr_parse);
	tcase_add_test(tc, cidr_contains);
	tcase_add_test(tc, cidr_parts);
	tcase_add_test(tc, format_validate);
	tcase_add_test(tc, format_named);
	tcase_add_test(tc, end_to_end);
	tcase_add_test(tc, library_flags);
	tcase_add_test(tc, table);
	suite_add_tcase(s, tc);
	return s;
}

#include "tests/unit/check_main.h"
