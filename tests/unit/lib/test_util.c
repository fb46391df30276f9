/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/util: ages as kubectl prints them (apimachinery's
 * duration.HumanDuration), base64 (standard and URL-safe), RFC 3339 parsing,
 * generateName suffixes, the growable buffer, resource quantities, DNS
 * labels, hex digits and kb_errf.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

START_TEST(dns_labels_and_addresses)
{
	ck_assert(kb_dns_label("web-0", 63));
	ck_assert(kb_dns_label("a", 1));
	ck_assert(!kb_dns_label("ab", 1));
	ck_assert(!kb_dns_label("", 63));
	ck_assert(!kb_dns_label(NULL, 63));
	ck_assert(!kb_dns_label("-web", 63));
	ck_assert(!kb_dns_label("web-", 63));
	ck_assert(!kb_dns_label("Web", 63));
	ck_assert(!kb_dns_label("a.b", 63));
	ck_assert(kb_dns_label_n("web-0.svc", 5)); /* a span: the rest is not looked at */
	ck_assert(kb_dns_label_n("0", 1));
	ck_assert(!kb_dns_label_n("web", 0));
	ck_assert(!kb_dns_label_n(NULL, 0));
	ck_assert(!kb_dns_label_n("web-0", 4)); /* "web-" */
	ck_assert(!kb_dns_label_n("-a", 2));
	ck_assert(!kb_dns_label_n("a.b", 3));
	ck_assert(!kb_dns_label_n("a_b", 3));
	ck_assert(!kb_dns_label_n("aB", 2));
	char long_label[101];
	memset(long_label, 'a', 100);
	long_label[100] = '\0';
	ck_assert(kb_dns_label_n(long_label, 100)); /* no length limit of its own */
	ck_assert(!kb_dns_label(long_label, 63));
	ck_assert(kb_is_ip("10.0.0.10"));
	ck_assert(kb_is_ip("fd00::a"));
	ck_assert(!kb_is_ip("10.0.0.256"));
	ck_assert(!kb_is_ip("dns.example"));
	ck_assert(!kb_is_ip(""));
	ck_assert(!kb_is_ip(NULL));
}
END_TEST

static Suite *suite(void);
#include "tests/unit/check_main.h"

START_TEST(hex_digits)
{
	const char *digits = "0123456789abcdef";
	for (int i = 0; i < 16; i++) {
		ck_assert_int_eq(kb_hexval(digits[i]), i);
		ck_assert_int_eq(kb_hexval(i < 10 ? digits[i] : digits[i] - 'a' + 'A'), i);
	}
	for (int c = -128; c < 256; c++)
		if (!strchr("0123456789abcdefABCDEF", c) || c == 0)
			ck_assert_int_eq(kb_hexval(c), -1);
	ck_assert_int_eq(kb_hexval((char)0xe9), -1); /* a negative char */
}
END_TEST

START_TEST(errf_formats_and_returns)
{
	char err[16] = "untouched";
	ck_assert_int_eq(kb_errf(err, sizeof(err), -EINVAL, "bad %s at %d", "op", 3), -EINVAL);
	ck_assert_str_eq(err, "bad op at 3");
	ck_assert_int_eq(kb_errf(err, sizeof(err), 0, "%s", "a message longer than err"), 0);
	ck_assert_str_eq(err, "a message longe"); /* truncated, NUL-terminated */
	ck_assert_int_eq(kb_errf(NULL, 64, -ENOMEM, "no buffer %d", 1), -ENOMEM);
	strcpy(err, "kept");
	ck_assert_int_eq(kb_errf(err, 0, -EIO, "no room"), -EIO);
	ck_assert_str_eq(err, "kept");
}
END_TEST

static void age_is(long seconds, const char *want)
{
	char buf[32];
	time_t now = 1700000000;
	kb_age(now - seconds, now, buf, sizeof(buf));
	ck_assert_msg(strcmp(buf, want) == 0, "age of %lds: got %s, want %s", seconds, buf, want);
}

START_TEST(age_kubectl)
{
	const long m = 60, h = 3600, d = 86400, y = 365 * 86400L;
	age_is(0, "0s");
	age_is(5, "5s");
	age_is(119, "119s"); /* seconds up to two minutes */
	age_is(120, "2m");
	age_is(150, "2m30s");
	age_is(3 * m, "3m");
	age_is(9 * m + 59, "9m59s");
	age_is(10 * m, "10m");
	age_is(10 * m + 30, "10m"); /* seconds dropped from ten minutes on */
	age_is(179 * m, "179m");
	age_is(3 * h, "3h");
	age_is(5 * h + 20 * m, "5h20m");
	age_is(8 * h + 20 * m, "8h"); /* minutes dropped from eight hours on */
	age_is(47 * h, "47h");
	age_is(48 * h, "2d");
	age_is(2 * d + 3 * h, "2d3h");
	age_is(7 * d + 23 * h, "7d23h");
	age_is(8 * d + 5 * h, "8d");
	age_is(10 * d, "10d");
	age_is(729 * d, "729d");
	age_is(2 * y, "2y");
	age_is(3 * y + 100 * d, "3y100d");
	age_is(8 * y + 100 * d, "8y");
}
END_TEST

START_TEST(age_clock_skew)
{
	/* A creation time one second in the future is "now" for kubectl. */
	age_is(-1, "0s");
}
END_TEST

static void b64_round_trip(const unsigned char *data, size_t len)
{
	char *enc = kb_base64_encode(data, len);
	ck_assert_ptr_nonnull(enc);
	ck_assert_uint_eq(strlen(enc), 4 * ((len + 2) / 3));
	unsigned char *dec = NULL;
	size_t dlen = 0;
	ck_assert_int_eq(kb_base64_decode(enc, strlen(enc), &dec, &dlen), 0);
	ck_assert_uint_eq(dlen, len);
	ck_assert(memcmp(dec, data, len) == 0);
	free(dec);
	free(enc);

	enc = kb_base64url_encode(data, len);
	ck_assert_ptr_nonnull(enc);
	ck_assert_ptr_null(strpbrk(enc, "+/="));
	ck_assert_int_eq(kb_base64url_decode(enc, &dec, &dlen), 0);
	ck_assert_uint_eq(dlen, len);
	ck_assert(memcmp(dec, data, len) == 0);
	free(dec);
	free(enc);
}

START_TEST(base64_vectors)
{
	/* RFC 4648 section 10. */
	static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *const out[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
					  "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(in); i++) {
		char *enc = kb_base64_encode(in[i], strlen(in[i]));
		ck_assert_str_eq(enc, out[i]);
		free(enc);
	}
	char *u = kb_base64url_encode("\xfb\xff", 2);
	ck_assert_str_eq(u, "-_8");
	free(u);
	char *s = kb_base64_encode("\xfb\xff", 2);
	ck_assert_str_eq(s, "+/8=");
	free(s);
}
END_TEST

START_TEST(base64_round_trips)
{
	unsigned char data[300];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 37 + 11);
	for (size_t len = 0; len < 70; len++)
		b64_round_trip(data, len);
	b64_round_trip(data, sizeof(data));
}
END_TEST

START_TEST(base64_rejects_garbage)
{
	unsigned char *dec = NULL;
	size_t dlen;
	ck_assert_int_lt(kb_base64_decode("Zm9v!", 5, &dec, &dlen), 0);
	ck_assert_int_lt(kb_base64_decode("Z", 1, &dec, &dlen), 0);
	ck_assert_int_lt(kb_base64url_decode("ab+c", &dec, &dlen), 0);
	ck_assert_int_lt(kb_base64url_decode("ab/c", &dec, &dlen), 0);
}
END_TEST

START_TEST(time_parse)
{
	time_t t;
	ck_assert_int_eq(kb_time_parse("1970-01-01T00:00:00Z", &t), 0);
	ck_assert_int_eq((long)t, 0);
	ck_assert_int_eq(kb_time_parse("2023-11-14T22:13:20Z", &t), 0);
	ck_assert_int_eq((long)t, 1700000000L);
	/* An offset names the local time: 23:13:20+01:00 is 22:13:20Z. */
	ck_assert_int_eq(kb_time_parse("2023-11-14T23:13:20+01:00", &t), 0);
	ck_assert_int_eq((long)t, 1700000000L);
	ck_assert_int_eq(kb_time_parse("2023-11-14T16:43:20-05:30", &t), 0);
	ck_assert_int_eq((long)t, 1700000000L);
	/* Fractions (MicroTime) are accepted and truncated. */
	ck_assert_int_eq(kb_time_parse("2023-11-14T22:13:20.999999Z", &t), 0);
	ck_assert_int_eq((long)t, 1700000000L);
	ck_assert_int_eq(kb_time_parse("2023-11-14T22:13:20.5+00:00", &t), 0);
	ck_assert_int_eq((long)t, 1700000000L);
}
END_TEST

START_TEST(time_parse_bad)
{
	time_t t = 42;
	ck_assert_int_eq(kb_time_parse("", &t), -EINVAL);
	ck_assert_int_eq(kb_time_parse("yesterday", &t), -EINVAL);
	ck_assert_int_eq(kb_time_parse("2023-11-14T22:13:20", &t), -EINVAL); /* no zone */
	ck_assert_int_eq(kb_time_parse("2023-11-14 22:13:20Z", &t), -EINVAL);
	ck_assert_int_eq(kb_time_parse("2023-11-14T22:13:20Zjunk", &t), -EINVAL);
	ck_assert_int_eq(kb_time_parse("2023-11-14T22:13:20+0100", &t), -EINVAL);
	ck_assert_int_eq((long)t, 42);
}
END_TEST

START_TEST(time_format_round_trip)
{
	char buf[40];
	time_t t;
	kb_time_rfc3339(1700000000, buf, sizeof(buf));
	ck_assert_str_eq(buf, "2023-11-14T22:13:20Z");
	ck_assert_int_eq(kb_time_parse(buf, &t), 0);
	ck_assert_int_eq((long)t, 1700000000L);
	kb_time_rfc3339_micro(buf, sizeof(buf));
	ck_assert_uint_eq(strlen(buf), strlen("2023-11-14T22:13:20.123456Z"));
	ck_assert_int_eq(kb_time_parse(buf, &t), 0);
}
END_TEST

START_TEST(random_suffix_alphabet)
{
	/* Kubernetes' utilrand alphabet: no vowels, no 0/1/3 (no words, no
	 * look-alikes). */
	const char *alpha = "bcdfghjklmnpqrstvwxz2456789";
	char buf[6], first[6];
	bool differs = false;
	kb_random_suffix(first, 5);
	for (int i = 0; i < 200; i++) {
		kb_random_suffix(buf, 5);
		ck_assert_uint_eq(strlen(buf), 5);
		ck_assert_uint_eq(strspn(buf, alpha), 5);
		if (strcmp(buf, first) != 0)
			differs = true;
	}
	ck_assert(differs);
}
END_TEST

START_TEST(uuid_format)
{
	char a[37], b[37];
	kb_uuid(a);
	kb_uuid(b);
	ck_assert_uint_eq(strlen(a), 36);
	ck_assert_int_eq(a[8], '-');
	ck_assert_int_eq(a[14], '4'); /* version 4 */
	ck_assert_ptr_nonnull(strchr("89ab", a[19]));
	ck_assert_str_ne(a, b);
}
END_TEST

START_TEST(buf_grows)
{
	struct kb_buf b = {0};
	ck_assert_int_eq(kb_buf_puts(&b, "abc"), 0);
	ck_assert_int_eq(kb_buf_append(&b, "defgh", 2), 0);
	ck_assert_str_eq(b.data, "abcde");
	ck_assert_uint_eq(b.len, 5);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(kb_buf_printf(&b, "%04d", i), 0);
	ck_assert_uint_eq(b.len, 5 + 4000);
	ck_assert_uint_eq(strlen(b.data), b.len);
	ck_assert(memcmp(b.data + 5, "00000001", 8) == 0);
	ck_assert_str_eq(b.data + b.len - 4, "0999");
	/* Longer than printf's stack buffer. */
	char big[2000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	size_t before = b.len;
	ck_assert_int_eq(kb_buf_printf(&b, "<%s>", big), 0);
	ck_assert_uint_eq(b.len, before + sizeof(big) + 1);
	ck_assert_int_eq(b.data[b.len - 1], '>');
	kb_buf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
}
END_TEST

START_TEST(str_affixes)
{
	ck_assert(kb_str_has_prefix("/api/v1", "/api"));
	ck_assert(!kb_str_has_prefix("/ap", "/api"));
	ck_assert(kb_str_has_suffix("pods/status", "/status"));
	ck_assert(!kb_str_has_suffix("s", "/status"));
	ck_assert(kb_str_has_suffix("x", ""));
}
END_TEST

START_TEST(quantities)
{
	double v;
	int cmp;
	ck_assert_int_eq(kb_quantity_parse("100m", &v), 0);
	ck_assert(v > 0.0999 && v < 0.1001);
	ck_assert_int_eq(kb_quantity_parse("1Gi", &v), 0);
	ck_assert(v == 1073741824.0);
	ck_assert_int_eq(kb_quantity_parse("1e3", &v), 0);
	ck_assert(v == 1000.0);
	ck_assert_int_eq(kb_quantity_parse("500Mi", &v), 0);
	ck_assert(v == 500.0 * 1048576.0);
	ck_assert_int_eq(kb_quantity_parse("+1.5k", &v), 0);
	ck_assert(v == 1500.0);
	ck_assert_int_eq(kb_quantity_parse("-2", &v), 0);
	ck_assert(v == -2.0);
	ck_assert_int_eq(kb_quantity_parse("", &v), -EINVAL);
	ck_assert_int_eq(kb_quantity_parse("1Gb", &v), -EINVAL);
	ck_assert_int_eq(kb_quantity_parse("abc", &v), -EINVAL);
	ck_assert_int_eq(kb_quantity_parse("1..2", &v), -EINVAL);
	ck_assert_int_eq(kb_quantity_cmp("1Gi", "1024Mi", &cmp), 0);
	ck_assert_int_eq(cmp, 0);
	ck_assert_int_eq(kb_quantity_cmp("0.1", "100m", &cmp), 0);
	ck_assert_int_eq(cmp, 0);
	ck_assert_int_eq(kb_quantity_cmp("1G", "1Gi", &cmp), 0);
	ck_assert_int_eq(cmp, -1);
	ck_assert_int_eq(kb_quantity_cmp("2", "1500m", &cmp), 0);
	ck_assert_int_eq(cmp, 1);
}
END_TEST

/* Integers of up to 15 digits are read without strtod: the same double,
 * bit for bit (a negative zero too), as strtod of the number times the
 * suffix's factor; longer ones and fractions still go to strtod. */
START_TEST(quantity_integers_as_strtod)
{
	static const struct {
		const char *num, *sfx;
		double mul;
	} cases[] = {
	    {"0", "", 1.0},
	    {"-0", "", 1.0},
	    {"+0", "m", 1e-3},
	    {"007", "Mi", 1048576.0},
	    {"1", "n", 1e-9},
	    {"3", "u", 1e-6},
	    {"250", "m", 1e-3},
	    {"999999999999999", "", 1.0},
	    {"123456789012345", "k", 1e3},
	    {"1234567890123456", "", 1.0},
	    {"99999999999999999999", "Ei", 1152921504606846976.0},
	    {"-17", "G", 1e9},
	    {"+5", "E", 1e18},
	    {"2", "Ki", 1024.0},
	    {"1.5", "Gi", 1073741824.0},
	    {"0.1", "", 1.0},
	    {"12.", "T", 1e12},
	    {".5", "P", 1e15},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char text[64];
		double got, want = strtod(cases[i].num, NULL) * cases[i].mul;
		snprintf(text, sizeof(text), "%s%s", cases[i].num, cases[i].sfx);
		ck_assert_int_eq(kb_quantity_parse(text, &got), 0);
		ck_assert_msg(memcmp(&got, &want, sizeof(got)) == 0, "%s: %.17g, not %.17g", text,
			      got, want);
	}
	double v;
	ck_assert_int_eq(kb_quantity_parse("-", &v), -EINVAL);
	ck_assert_int_eq(kb_quantity_parse("5X", &v), -EINVAL);
	ck_assert_int_eq(kb_quantity_parse("5mi", &v), -EINVAL);
	ck_assert_int_eq(kb_quantity_parse("5e", &v), -EINVAL);
	ck_assert_int_eq(kb_quantity_parse("5e-3", &v), 0);
	ck_assert(v == 5 * pow(10.0, -3));
}
END_TEST

struct node {
	struct node *prev, *next;
	char name;
};

/* The list from head forwards and, checking each prev link, as a string. */
static const char *walk(struct node *head, char *buf)
{
	int n = 0;
	for (struct node *e = head, *before = NULL; e; before = e, e = e->next) {
		ck_assert_ptr_eq(e->prev, before);
		buf[n++] = e->name;
	}
	buf[n] = '\0';
	return buf;
}

/* KB_LIST_PUSH links at the front; KB_LIST_UNLINK takes out the head, a
 * middle element or the tail, and the last one empties the list. */
START_TEST(intrusive_list)
{
	struct node a = {.name = 'a'}, b = {.name = 'b'}, c = {.name = 'c'}, d = {.name = 'd'};
	struct node *head = NULL;
	char buf[8];
	KB_LIST_PUSH(head, &a);
	KB_LIST_PUSH(head, &b);
	KB_LIST_PUSH(head, &c);
	KB_LIST_PUSH(head, &d);
	ck_assert_str_eq(walk(head, buf), "dcba");
	KB_LIST_UNLINK(head, &c);
	ck_assert_str_eq(walk(head, buf), "dba");
	KB_LIST_UNLINK(head, &d);
	ck_assert_str_eq(walk(head, buf), "ba");
	KB_LIST_UNLINK(head, &a);
	ck_assert_str_eq(walk(head, buf), "b");
	KB_LIST_UNLINK(head, &b);
	ck_assert_ptr_null(head);
	KB_LIST_PUSH(head, &c); /* c's old links are overwritten */
	ck_assert_str_eq(walk(head, buf), "c");
}
END_TEST

/* kb_timer_start_aligned: the first 40 ms timer fires late (the loop
 * stalled 57 ms), starts the second one, and from then on both fire in the
 * same loop iterations (at the same uv_now): the late one re-armed at the
 * next multiple of 40, not 40 ms after its late tick. */
struct tick_log {
	uint64_t at[2][6];
	int n[2], want[2];
	uv_timer_t t[2];
};

static void on_tick(uv_timer_t *t)
{
	struct tick_log *l = t->data;
	int i = t == &l->t[1];
	l->at[i][l->n[i]++] = uv_now(t->loop);
	if (l->n[i] < l->want[i])
		kb_timer_start_aligned(t, on_tick, 40);
	if (i == 0 && l->n[0] == 1)
		kb_timer_start_aligned(&l->t[1], on_tick, 40);
}

START_TEST(timers_aligned)
{
	uv_loop_t loop;
	struct tick_log l = {.want = {5, 3}};
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	for (int i = 0; i < 2; i++) {
		uv_timer_init(&loop, &l.t[i]);
		l.t[i].data = &l;
	}
	ck_assert_int_eq(kb_timer_start_aligned(&l.t[0], on_tick, 40), 0);
	uv_sleep(57);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(l.n[0], 5);
	ck_assert_int_eq(l.n[1], 3);
	for (int k = 0; k < 3; k++) {
		bool together = false;
		for (int j = 1; j < 5; j++)
			together |= l.at[0][j] == l.at[1][k];
		ck_assert_msg(together, "tick %d of the second timer at %llu: not with the first's",
			      k, (unsigned long long)l.at[1][k]);
	}
	for (int i = 0; i < 2; i++)
		uv_close((uv_handle_t *)&l.t[i], NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lib/util");
	TCase *tc = tcase_create("util");
	tcase_add_test(tc, age_kubectl);
	tcase_add_test(tc, intrusive_list);
	tcase_add_test(tc, age_clock_skew);
	tcase_add_test(tc, base64_vectors);
	tcase_add_test(tc, base64_round_trips);
	tcase_add_test(tc, base64_rejects_garbage);
	tcase_add_test(tc, time_parse);
	tcase_add_test(tc, time_parse_bad);
	tcase_add_test(tc, time_format_round_trip);
	tcase_add_test(tc, random_suffix_alphabet);
	tcase_add_test(tc, uuid_format);
	tcase_add_test(tc, buf_grows);
	tcase_add_test(tc, str_affixes);
	tcase_add_test(tc, quantities);
	tcase_add_test(tc, quantity_integers_as_strtod);
	tcase_add_test(tc, dns_labels_and_addresses);
	tcase_add_test(tc, hex_digits);
	tcase_add_test(tc, errf_formats_and_returns);
	tcase_add_test(tc, timers_aligned);
	suite_add_tcase(s, tc);
	return s;
}
