/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/httpc's address hook (kb_httpc_opts.allow): it sees each
 * resolved address before a connection is opened to it, a refusal means no
 * connection at all and ends the request with -EACCES (a name that resolves
 * to refused addresses included), the address tried is reported
 * (kb_httpc_req_peer), an allowed address is connected to, and tunnels go
 * through the same hook. The peer is a listening socket that never
 * accepts: the kernel completes a connection to it, and a non-blocking
 * accept() then says whether any arrived.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "lib/httpc.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

/* A listener on 127.0.0.1 that nobody accepts from; *port gets its port. */
static int listener(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* How many connections wait on the listener. */
static int arrived(int fd)
{
	int n = 0, c;
	while ((c = accept(fd, NULL, NULL)) >= 0) {
		close(c);
		n++;
	}
	return n;
}

struct rec {
	uv_loop_t loop;
	kb_httpc_t *c;
	int asked;      /* hook calls */
	int asked_port; /* the port the hook saw */
	bool allow;     /* the hook's answer */
	int err;        /* on_done's or on_close's */
	char peer[64];  /* kb_httpc_req_peer in on_done */
	bool done;
};

static bool hook(const struct sockaddr *sa, void *arg)
{
	struct rec *r = arg;
	r->asked++;
	if (sa->sa_family == AF_INET)
		r->asked_port = ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
	else if (sa->sa_family == AF_INET6)
		r->asked_port = ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
	return r->allow;
}

static void on_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
		    void *arg)
{
	(void)status;
	(void)body;
	(void)len;
	struct rec *r = arg;
	r->err = err;
	r->done = true;
	snprintf(r->peer, sizeof(r->peer), "%s", kb_httpc_req_peer(req));
}

static void client(struct rec *r, const char *server, bool allow)
{
	struct kb_httpc_opts o = {
	    .server = server, .timeout_ms = 400, .allow = hook, .allow_arg = r};
	r->allow = allow;
	ck_assert_int_eq(uv_loop_init(&r->loop), 0);
	ck_assert_int_eq(kb_httpc_new(&r->loop, &o, &r->c), 0);
}

static void request(struct rec *r)
{
	struct kb_httpc_call call = {.method = "GET", .path = "/x", .on_done = on_done, .arg = r};
	ck_assert_ptr_nonnull(kb_httpc_request(r->c, &call));
}

static void finish(struct rec *r)
{
	uv_run(&r->loop, UV_RUN_DEFAULT);
	kb_httpc_close(r->c);
	uv_run(&r->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&r->loop), 0);
}

START_TEST(refused_address_never_connected)
{
	int port, fd = listener(&port);
	char url[64], want[64];
	struct rec r = {0};
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	client(&r, url, false);
	request(&r);
	finish(&r);
	ck_assert(r.done);
	ck_assert_int_eq(r.err, -EACCES);
	ck_assert_int_eq(r.asked, 1);
	ck_assert_int_eq(r.asked_port, port); /* the address as it would be connected */
	snprintf(want, sizeof(want), "127.0.0.1:%d", port);
	ck_assert_str_eq(r.peer, want);
	ck_assert_int_eq(arrived(fd), 0);
	close(fd);
}
END_TEST

START_TEST(refused_name_never_connected)
{
	int port, fd = listener(&port);
	char url[64];
	struct rec r = {0};
	snprintf(url, sizeof(url), "http://localhost:%d", port); /* resolved by curl */
	client(&r, url, false);
	request(&r);
	finish(&r);
	ck_assert_int_eq(r.err, -EACCES);
	ck_assert_int_ge(r.asked, 1); /* each address localhost has */
	ck_assert_int_eq(arrived(fd), 0);
	close(fd);
}
END_TEST

START_TEST(allowed_address_connected)
{
	int port, fd = listener(&port);
	char url[64], want[64];
	struct rec r = {0};
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	client(&r, url, true);
	request(&r);
	finish(&r);
	ck_assert_int_eq(r.err, -ETIMEDOUT); /* connected; nobody answers */
	ck_assert_int_eq(r.asked, 1);
	snprintf(want, sizeof(want), "127.0.0.1:%d", port);
	ck_assert_str_eq(r.peer, want);
	ck_assert_int_eq(arrived(fd), 1);
	close(fd);
}
END_TEST

static void t_head(kb_httpc_tunnel_t *t, int status, const char *h, size_t len, void *arg)
{
	ck_abort_msg("a refused tunnel got a head");
}

static void t_data(kb_httpc_tunnel_t *t, const char *p, size_t n, void *arg)
{
	ck_abort_msg("a refused tunnel got data");
}

static void t_close(kb_httpc_tunnel_t *t, int err, void *arg)
{
	struct rec *r = arg;
	r->err = err;
	r->done = true;
}

START_TEST(refused_tunnel_never_connected)
{
	int port, fd = listener(&port);
	char url[64];
	struct rec r = {0};
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	client(&r, url, false);
	struct kb_httpc_tunnel_cbs cbs = {t_head, t_data, t_close, &r};
	ck_assert_ptr_nonnull(kb_httpc_tunnel(r.c, "GET", "/x", NULL, &cbs));
	finish(&r);
	ck_assert(r.done);
	ck_assert_int_eq(r.err, -EACCES);
	ck_assert_int_eq(arrived(fd), 0);
	close(fd);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lib/httpc");
	TCase *tc = tcase_create("allow");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, refused_address_never_connected);
	tcase_add_test(tc, refused_name_never_connected);
	tcase_add_test(tc, allowed_address_connected);
	tcase_add_test(tc, refused_tunnel_never_connected);
	suite_add_tcase(s, tc);
	return s;
}
