/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for cmd/hostapi.h's deadline (the operator's Lease renewal,
 * cmd/operator_lease.c) against a server that never answers: a listening
 * socket nobody accepts on (the kernel completes the TCP handshake, the
 * TLS hello waits forever). And cmd/users.h's durations, which `kubicle
 * create --ttl` and a Tenant's spec.ttl read and `kubicle list` (both
 * modes) prints.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "cmd/hostapi.h"
#include "cmd/users.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

/* A kubeconfig for a silent server on 127.0.0.1; *fd its socket. */
static void silent_server(char *kc, size_t len, int *fd)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(*fd, 0);
	ck_assert_int_eq(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(*fd, 8), 0);
	ck_assert_int_eq(getsockname(*fd, (struct sockaddr *)&a, &alen), 0);
	snprintf(kc, len, "/tmp/kubicle-test-hostapi-%d.kubeconfig", (int)getpid());
	FILE *f = fopen(kc, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"apiVersion: v1\nkind: Config\ncurrent-context: c\n"
		"clusters: [{name: c, cluster: {server: \"https://127.0.0.1:%d\", "
		"insecure-skip-tls-verify: true}}]\n"
		"users: [{name: u, user: {token: t}}]\n"
		"contexts: [{name: c, context: {cluster: c, user: u}}]\n",
		ntohs(a.sin_port));
	fclose(f);
}

START_TEST(test_deadline)
{
	char kc[128];
	int fd;
	long st = 0;
	hostapi_t *h = NULL;
	silent_server(kc, sizeof(kc), &fd);
	ck_assert_int_eq(hostapi_open(kc, 20000, &h), 0);
	/* idle first: the client's loop clock is then stale */
	usleep(300 * 1000);
	hostapi_set_deadline(h, 500);
	uint64_t t0 = uv_hrtime();
	ck_assert_int_eq(hostapi_call(h, "GET", "/version", NULL, &st, NULL), -ETIMEDOUT);
	uint64_t ms = (uv_hrtime() - t0) / 1000000;
	ck_assert_uint_ge(ms, 400);
	ck_assert_uint_lt(ms, 10000); /* the deadline, not the 20 s timeout */
	/* past it, a call fails at once, never sent */
	t0 = uv_hrtime();
	ck_assert_int_eq(hostapi_call(h, "GET", "/version", NULL, &st, NULL), -ETIMEDOUT);
	ck_assert_uint_lt((uv_hrtime() - t0) / 1000000, 100);
	hostapi_close(h);
	close(fd);
	unlink(kc);
}
END_TEST

START_TEST(test_durations)
{
	char buf[32];
	ck_assert_int_eq(users_parse_duration("7d"), 7 * 86400);
	ck_assert_int_eq(users_parse_duration("1h30m"), 5400);
	ck_assert_int_eq(users_parse_duration("90"), 90);
	ck_assert_int_eq(users_parse_duration("soon"), -1);
	ck_assert_int_eq(users_parse_duration("-1h"), -1);
	/* no overflow: refused */
	ck_assert_int_eq(users_parse_duration("99999999999999999999d"), -1);
	ck_assert_int_eq(users_parse_duration("100000001d"), -1);
	users_format_duration(90, buf, sizeof(buf));
	ck_assert_str_eq(buf, "90s");
	users_format_duration(45 * 60, buf, sizeof(buf));
	ck_assert_str_eq(buf, "45m");
	users_format_duration(5 * 3600, buf, sizeof(buf));
	ck_assert_str_eq(buf, "5h");
	users_format_duration(3 * 86400, buf, sizeof(buf));
	ck_assert_str_eq(buf, "3d");
	users_format_duration(-5, buf, sizeof(buf));
	ck_assert_str_eq(buf, "0s");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hostapi");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_deadline);
	tcase_add_test(tc, test_durations);
	suite_add_tcase(s, tc);
	return s;
}
