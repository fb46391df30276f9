/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of proxy/core/egress: the decision for one address as a tenant's
 * outbound call meets it (lib/httpc's allow hook): the special ranges and
 * this machine's addresses refused, the host API server's addresses
 * refused unless an allow prefix inside them names them, --egress-allow
 * prefixes, the tenant's own host addresses (the syncer's answer), and
 * everything else refused. Bad prefixes fail the start.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/addrfilter.h"
#include "proxy/core/core.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static bool allowed(struct proxy *px, const char *ip)
{
	struct sockaddr_storage ss = {0};
	if (strchr(ip, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(443);
		ck_assert_int_eq(inet_pton(AF_INET6, ip, &s6->sin6_addr), 1);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons(443);
		ck_assert_int_eq(inet_pton(AF_INET, ip, &s4->sin_addr), 1);
	}
	return egress_allow((struct sockaddr *)&ss, px);
}

/* the syncer's stand-in: 10.244.1.2 is one of the tenant's host pods */
static bool owner(void *arg, const struct kb_addr *a)
{
	struct kb_addr pod;
	(void)arg;
	kb_addr_parse("10.244.1.2", &pod);
	return memcmp(&pod, a, sizeof(pod)) == 0;
}

START_TEST(default_policy)
{
	struct proxy px = {0};
	struct proxy_opts o = {.host_server = "https://192.0.2.10:6443"};
	ck_assert_int_eq(egress_start(&px, &o), 0);
	static const char *const refused[] = {
	    "127.0.0.1",  "::1",        "169.254.169.254", "::ffff:169.254.169.254",
	    "0.0.0.0",    "fe80::1",    "192.0.2.10", /* the host API server */
	    "10.244.1.2",                             /* no owner set yet */
	    "8.8.8.8",    "2001:db8::1"};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		ck_assert_msg(!allowed(&px, refused[i]), "%s allowed", refused[i]);
	proxy_set_egress_owner(&px, owner, NULL);
	ck_assert(allowed(&px, "10.244.1.2"));
	ck_assert(allowed(&px, "::ffff:10.244.1.2"));
	ck_assert(!allowed(&px, "10.244.1.3")); /* a pod that is not the tenant's */
	proxy_set_egress_owner(&px, NULL, NULL);
	ck_assert(!allowed(&px, "10.244.1.2"));
	egress_stop(&px);
	ck_assert_ptr_null(px.egress);
}
END_TEST

START_TEST(allow_list)
{
	struct proxy px = {0};
	const char *const allow[] = {"192.0.2.0/24", "127.0.0.1/32", "fd00::/8", NULL};
	struct proxy_opts o = {.host_server = "https://192.0.2.10:6443", .egress_allow = allow};
	ck_assert_int_eq(egress_start(&px, &o), 0);
	ck_assert(allowed(&px, "192.0.2.11"));
	ck_assert(!allowed(&px, "192.0.2.10")); /* the host API: a /24 does not name it */
	ck_assert(allowed(&px, "127.0.0.1"));   /* named on purpose */
	ck_assert(!allowed(&px, "127.0.0.2"));
	ck_assert(allowed(&px, "fd12::1"));
	ck_assert(!allowed(&px, "169.254.169.254"));
	egress_stop(&px);
	const char *const host[] = {"192.0.2.10/32", NULL};
	struct proxy_opts o2 = {.host_server = "https://192.0.2.10:6443", .egress_allow = host};
	ck_assert_int_eq(egress_start(&px, &o2), 0);
	ck_assert(allowed(&px, "192.0.2.10")); /* the platform names it */
	egress_stop(&px);
}
END_TEST

START_TEST(bad_prefix)
{
	struct proxy px = {0};
	const char *const allow[] = {"10.0.0.1/8", NULL};
	struct proxy_opts o = {.egress_allow = allow};
	ck_assert_int_eq(egress_start(&px, &o), -EINVAL);
	ck_assert_ptr_null(px.egress);
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	inet_pton(AF_INET, "10.0.0.1", &s4.sin_addr);
	ck_assert(!egress_allow((struct sockaddr *)&s4, &px)); /* no policy: nothing */
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/core/egress");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, default_policy);
	tcase_add_test(tc, allow_list);
	tcase_add_test(tc, bad_prefix);
	suite_add_tcase(s, tc);
	return s;
}
