/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/addrfilter: addresses and prefixes in both families (IPv4 as
 * its IPv4-mapped form), the special ranges, exceptions that must name a
 * denied range on purpose, and the machine's own addresses.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "lib/addrfilter.h"

static struct kb_addr A(const char *s) {
	struct kb_addr a;
	ck_assert_msg(kb_addr_parse(s, &a) == 0, "address %s", s);
	return a;
}

static struct kb_cidr
C(const char *s) {
	struct kb_cidr c;
	ck_assert_msg(kb_cidr_parse(s, &c) == 0, "prefix %s", s);
	return c;
}

static enum kb_addr_verdict
check(const kb_addrfilter_t *f, const char *s)
{
	struct kb_addr a = A(s);
	return kb_addrfilter_check(f, &a);
}

START_TEST(addresses_both_families)
{
	char buf[64];
	struct kb_addr a = A("10.1.2.3"), m = A("::ffff:10.1.2.3");
	ck_assert(memcmp(&a, &m, sizeof(a)) == 0); /* one form for both spellings */
	ck_assert(kb_addr_is_v4(&a));
	ck_assert_str_eq(kb_addr_format(&a, buf, sizeof(buf)), "10.1.2.3");
	struct kb_addr six = A("fd00::1");
	ck_assert(!kb_addr_is_v4(&six));
	ck_assert_str_eq(kb_addr_format(&six, buf, sizeof(buf)), "fd00::1");
	struct kb_addr bad;
	ck_assert_int_eq(kb_addr_parse("10.1.2", &bad), -EINVAL);
	ck_assert_int_eq(kb_addr_parse("example.com", &bad), -EINVAL);
	ck_assert_int_eq(kb_addr_parse("", &bad), -EINVAL);
	ck_assert_int_eq(kb_addr_parse(NULL, &bad), -EINVAL);

	struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons(443)};
	inet_pton(AF_INET, "169.254.169.254", &s4.sin_addr);
	ck_assert_int_eq(kb_addr_from_sockaddr((struct sockaddr *)&s4, &a), 0);
	ck_assert_str_eq(kb_addr_format(&a, buf, sizeof(buf)), "169.254.169.254");
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &s6.sin6_addr);
	ck_assert_int_eq(kb_addr_from_sockaddr((struct sockaddr *)&s6, &a), 0);
	ck_assert_str_eq(kb_addr_format(&a, buf, sizeof(buf)), "127.0.0.1");
	struct sockaddr un = {.sa_family = AF_UNIX};
	ck_assert_int_eq(kb_addr_from_sockaddr(&un, &a), -EAFNOSUPPORT);
}
END_TEST

START_TEST(prefixes)
{
	char buf[64];
	struct kb_cidr c = C("10.0.0.0/8");
	ck_assert_uint_eq(c.bits, 104);
	ck_assert_str_eq(kb_cidr_format(&c, buf, sizeof(buf)), "10.0.0.0/8");
	struct kb_addr in = A("10.255.0.1"), out = A("11.0.0.1"), in6 = A("::ffff:10.9.9.9");
	ck_assert(kb_cidr_contains(&c, &in));
	ck_assert(kb_cidr_contains(&c, &in6));
	ck_assert(!kb_cidr_contains(&c, &out));
	c = C("127.0.0.1"); /* a bare address: one host */
	ck_assert_str_eq(kb_cidr_format(&c, buf, sizeof(buf)), "127.0.0.1/32");
	c = C("fd00::/8");
	ck_assert_str_eq(kb_cidr_format(&c, buf, sizeof(buf)), "fd00::/8");
	in = A("fdff::1");
	ck_assert(kb_cidr_contains(&c, &in));
	c = C("0.0.0.0/0"); /* every IPv4 address, no IPv6 one */
	in = A("8.8.8.8");
	out = A("2001:db8::1");
	ck_assert(kb_cidr_contains(&c, &in));
	ck_assert(!kb_cidr_contains(&c, &out));
	c = C("::/0");
	ck_assert(kb_cidr_contains(&c, &in) && kb_cidr_contains(&c, &out));
	c = C("10.1.2.0/23"); /* a prefix not on a byte boundary */
	in = A("10.1.3.255");
	out = A("10.1.4.0");
	ck_assert(kb_cidr_contains(&c, &in));
	ck_assert(!kb_cidr_contains(&c, &out));

	static const char *const bad[] = {
	    "10.0.0.1/8",  "10.0.0.0/33", "::/129",    "10.0.0.0/", "10.0.0.0/x",
	    "10.0.0.0/-1", "/8",          "fd00::1/8", "nonsense",  ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(kb_cidr_parse(bad[i], &c) == -EINVAL, "accepted %s", bad[i]);
}
END_TEST

START_TEST(special_ranges_refused)
{
	kb_addrfilter_t *f = kb_addrfilter_new();
	ck_assert_int_eq(kb_addrfilter_deny_special(f), 0);
	static const char *const denied[] = {
	    "127.0.0.1", "127.1.2.3", "0.0.0.0", "169.254.169.254", "169.254.0.1", "224.0.0.1",
	    "239.255.255.250", "255.255.255.255", "::1", "::", "fe80::1", "febf::1", "ff02::1",
	    /* the same places written another way */
	    "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1", "::ffff:0.0.0.0",
	    "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "2002:7f00:1::1"};
	for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++)
		ck_assert_msg(check(f, denied[i]) == KB_ADDR_DENY, "%s not refused", denied[i]);
	static const char *const unknown[] = {"10.96.0.10",  "8.8.8.8",     "169.253.255.255",
					      "169.255.0.1", "2001:db8::1", "fd00::1",
					      "fec0::1"};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		ck_assert_msg(check(f, unknown[i]) == KB_ADDR_UNKNOWN, "%s decided", unknown[i]);
	kb_addrfilter_free(f);
}
END_TEST

START_TEST(allow_list_and_exceptions)
{
	kb_addrfilter_t *f = kb_addrfilter_new();
	ck_assert_int_eq(kb_addrfilter_deny_special(f), 0);
	struct kb_cidr c = C("127.0.0.1/32");
	ck_assert_int_eq(kb_addrfilter_allow(f, &c), 0);
	c = C("0.0.0.0/0");
	ck_assert_int_eq(kb_addrfilter_allow(f, &c), 0);
	c = C("fd00::/8");
	ck_assert_int_eq(kb_addrfilter_allow(f, &c), 0);
	/* named on purpose: one loopback address, in both spellings */
	ck_assert_int_eq(check(f, "127.0.0.1"), KB_ADDR_ALLOW);
	ck_assert_int_eq(check(f, "::ffff:127.0.0.1"), KB_ADDR_ALLOW);
	/* a wide allow does not open what it merely covers */
	ck_assert_int_eq(check(f, "127.0.0.2"), KB_ADDR_DENY);
	ck_assert_int_eq(check(f, "169.254.169.254"), KB_ADDR_DENY);
	ck_assert_int_eq(check(f, "::ffff:169.254.169.254"), KB_ADDR_DENY);
	ck_assert_int_eq(check(f, "::1"), KB_ADDR_DENY);
	ck_assert_int_eq(check(f, "8.8.8.8"), KB_ADDR_ALLOW);
	ck_assert_int_eq(check(f, "fd12::1"), KB_ADDR_ALLOW);
	ck_assert_int_eq(check(f, "2001:db8::1"), KB_ADDR_UNKNOWN);
	ck_assert_uint_eq(kb_addrfilter_nallow(f), 3);
	ck_assert_int_eq(kb_addrfilter_allow(f, &c), 0); /* twice: kept once */
	ck_assert_uint_eq(kb_addrfilter_nallow(f), 3);
	/* the host API server's address: denied as one host, opened only by itself */
	struct kb_addr api = A("10.0.0.1");
	ck_assert_int_eq(kb_addrfilter_deny_addr(f, &api), 0);
	ck_assert_int_eq(check(f, "10.0.0.1"), KB_ADDR_DENY);
	ck_assert_int_eq(check(f, "10.0.0.2"), KB_ADDR_ALLOW);
	c = C("10.0.0.1/32");
	ck_assert_int_eq(kb_addrfilter_allow(f, &c), 0);
	ck_assert_int_eq(check(f, "10.0.0.1"), KB_ADDR_ALLOW);
	kb_addrfilter_free(f);
}
END_TEST

START_TEST(own_addresses)
{
	kb_addrfilter_t *f = kb_addrfilter_new();
	ck_assert_int_eq(kb_addrfilter_deny_local(f), 0);
	ck_assert_uint_gt(kb_addrfilter_ndeny(f), 0);
	/* every machine has its loopback interface */
	ck_assert_int_eq(check(f, "127.0.0.1"), KB_ADDR_DENY);
	ck_assert_int_eq(check(f, "::ffff:127.0.0.1"), KB_ADDR_DENY);
	ck_assert_int_eq(check(f, "192.0.2.1"), KB_ADDR_UNKNOWN); /* TEST-NET-1: nobody's */
	kb_addrfilter_free(f);
	kb_addrfilter_free(NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lib/addrfilter");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, addresses_both_families);
	tcase_add_test(tc, prefixes);
	tcase_add_test(tc, special_ranges_refused);
	tcase_add_test(tc, allow_list_and_exceptions);
	tcase_add_test(tc, own_addresses);
	suite_add_tcase(s, tc);
	return s;
}

#include "tests/unit/check_main.h"
