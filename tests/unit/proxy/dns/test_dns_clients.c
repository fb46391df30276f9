/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/dns/dns_clients.c: who may ask the tenant DNS. A pod's
 * status.podIP and podIPs may, loopback may, any other address may not; a
 * pod's address changes and deletions are followed through the store watch.
 */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <string.h>

#include "proxy/dns/dns_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"
#include "tests/unit/store/tmpdb.h"

static struct tmpdb db;
static uv_loop_t loop;
static store_t *st;

static void setup(void)
{
	tmpdb_make(&db, "kb-dnscl");
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_eq(store_open(&loop, db.path, NULL, &st), 0);
}

static void teardown(void)
{
	store_close(st);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	tmpdb_remove(&db);
}

static json_t *pod(const char *name, const char *ip, const char *ip6)
{
	json_t *p =
	    json_pack("{s:{s:s,s:s},s:{}}", "metadata", "name", name, "namespace", "ml", "status");
	json_t *s = json_object_get(p, "status");
	if (ip)
		json_object_set_new(s, "podIP", json_string(ip));
	if (ip6)
		json_object_set_new(s, "podIPs",
				    json_pack("[{s:s},{s:s}]", "ip", ip ? ip : "", "ip", ip6));
	return p;
}

static bool ok4(struct dns_clients *c, const char *ip)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	inet_pton(AF_INET, ip, &a.sin_addr);
	return dns_clients_allowed(c, (struct sockaddr *)&a);
}

static bool ok6(struct dns_clients *c, const char *ip)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6};
	inet_pton(AF_INET6, ip, &a.sin6_addr);
	return dns_clients_allowed(c, (struct sockaddr *)&a);
}

static void settle(void)
{
	for (int i = 0; i < 20; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
}

START_TEST(pods_and_loopback)
{
	json_t *p = pod("a", "10.1.0.5", "fd00::5");
	ck_assert_int_eq(store_create(st, "/pods", "ml", "a", p, NULL), 0);
	json_decref(p);
	struct dns_clients *c = NULL;
	ck_assert_int_eq(dns_clients_start(st, &c), 0);
	ck_assert(ok4(c, "10.1.0.5"));
	ck_assert(ok6(c, "fd00::5"));
	ck_assert(ok6(c, "::ffff:127.0.0.1"));
	ck_assert(ok4(c, "127.0.0.1"));
	ck_assert(ok6(c, "::1"));
	ck_assert(!ok4(c, "10.1.0.6"));
	ck_assert(!ok4(c, "127.0.0.2"));
	ck_assert(!ok6(c, "::ffff:10.1.0.6"));
	ck_assert(ok6(c, "::ffff:10.1.0.5"));
	/* a pod made later, one that changes address, one deleted */
	p = pod("b", "10.1.0.7", NULL);
	ck_assert_int_eq(store_create(st, "/pods", "ml", "b", p, NULL), 0);
	json_decref(p);
	p = pod("a", "10.1.0.8", NULL);
	ck_assert_int_eq(store_update(st, "/pods", "ml", "a", p, 0, NULL), 0);
	json_decref(p);
	settle();
	ck_assert(ok4(c, "10.1.0.7"));
	ck_assert(ok4(c, "10.1.0.8"));
	ck_assert(!ok4(c, "10.1.0.5"));
	ck_assert(!ok6(c, "fd00::5"));
	ck_assert_int_eq(store_delete(st, "/pods", "ml", "b", 0, NULL, NULL), 0);
	settle();
	ck_assert(!ok4(c, "10.1.0.7"));
	dns_clients_stop(c);
}
END_TEST

START_TEST(anyone_without_filter)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	inet_pton(AF_INET, "203.0.113.9", &a.sin_addr);
	ck_assert(dns_clients_allowed(NULL, (struct sockaddr *)&a));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("dns_clients");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pods_and_loopback);
	tcase_add_test(tc, anyone_without_filter);
	suite_add_tcase(s, tc);
	return s;
}
