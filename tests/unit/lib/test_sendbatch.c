/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/sendbatch over Unix stream socket pairs: sends arrive whole
 * and in their sockets; a socket without room hands its send back (sent +
 * rest is the send, rest is its tail); a forgotten send is not sent; a
 * broken peer is an error; the batch's limits.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <liburing.h>

#include "lib/sendbatch.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

struct report {
	void *owner;
	size_t sent, rest_len;
	uint8_t rest[16384];
	int err;
};

struct reports {
	struct report r[4];
	int n;
};

static void on_report(void *owner, size_t sent, const uint8_t *rest, size_t rest_len, int err,
		      void *arg)
{
	struct reports *rs = arg;
	ck_assert_int_lt(rs->n, 4);
	struct report *r = &rs->r[rs->n++];
	r->owner = owner;
	r->sent = sent;
	r->rest_len = rest_len;
	ck_assert_uint_le(rest_len, sizeof(r->rest));
	memcpy(r->rest, rest, rest_len);
	r->err = err;
}

/* io_uring is part of what is tested: only a kernel that forbids it
 * (kernel.io_uring_disabled, a seccomp filter), lacks it or is older than
 * IORING_SETUP_SUBMIT_ALL (5.18) may skip these tests. */
static bool uring_forbidden(void)
{
	struct io_uring ring;
	struct io_uring_params p = {.flags = IORING_SETUP_SUBMIT_ALL};
	int rc = io_uring_queue_init_params(1, &ring, &p);
	if (rc == 0)
		io_uring_queue_exit(&ring);
	return rc == -EPERM || rc == -ENOSYS || rc == -EACCES || rc == -EINVAL;
}

static kb_sendbatch_t *new_batch(unsigned entries, size_t arena)
{
	kb_sendbatch_t *b = kb_sendbatch_new(entries, arena);
	if (!b && uring_forbidden()) {
		fprintf(stderr, "sendbatch: io_uring is not usable here, test skipped\n");
		exit(0);
	}
	ck_assert_ptr_nonnull(b);
	return b;
}

static void pair(int sv[2])
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
}

static void unpair(int sv[2])
{
	close(sv[0]);
	close(sv[1]);
}

static int add(kb_sendbatch_t *b, int fd, const char *text, void *owner)
{
	size_t n = strlen(text);
	uint8_t *room = kb_sendbatch_room(b, n);
	ck_assert_ptr_nonnull(room);
	memcpy(room, text, n);
	return kb_sendbatch_add(b, fd, n, owner);
}

static void expect_read(int fd, const char *text)
{
	char buf[256];
	ssize_t got = read(fd, buf, sizeof(buf));
	ck_assert_int_eq(got, (ssize_t)strlen(text));
	ck_assert(memcmp(buf, text, (size_t)got) == 0);
}

START_TEST(sends_arrive_whole)
{
	kb_sendbatch_t *b = new_batch(8, 4096);
	int s[3][2];
	static const char *texts[] = {"first", "second send", "third"};
	int owners[3];
	for (int i = 0; i < 3; i++) {
		pair(s[i]);
		ck_assert_int_eq(add(b, s[i][0], texts[i], &owners[i]), i);
	}
	ck_assert(!kb_sendbatch_empty(b));
	struct reports rs = {0};
	ck_assert_int_eq(kb_sendbatch_flush(b, on_report, &rs), 3);
	ck_assert(kb_sendbatch_empty(b));
	ck_assert_int_eq(rs.n, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_ptr_eq(rs.r[i].owner, &owners[i]);
		ck_assert_uint_eq(rs.r[i].sent, strlen(texts[i]));
		ck_assert_uint_eq(rs.r[i].rest_len, 0);
		ck_assert_int_eq(rs.r[i].err, 0);
		expect_read(s[i][1], texts[i]);
	}
	/* the batch is reusable after a flush */
	add(b, s[1][0], "again", &owners[1]);
	rs.n = 0;
	ck_assert_int_eq(kb_sendbatch_flush(b, on_report, &rs), 1);
	expect_read(s[1][1], "again");
	for (int i = 0; i < 3; i++)
		unpair(s[i]);
	kb_sendbatch_free(b);
}
END_TEST

START_TEST(full_socket_hands_the_rest_back)
{
	kb_sendbatch_t *b = new_batch(4, 16384);
	int s[2];
	pair(s);
	int small = 4096;
	setsockopt(s[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	char fill[1024];
	memset(fill, 'f', sizeof(fill));
	while (write(s[0], fill, sizeof(fill)) > 0)
		;
	ck_assert_int_eq(errno, EAGAIN);
	uint8_t *room = kb_sendbatch_room(b, 6000);
	for (int i = 0; i < 6000; i++)
		room[i] = (uint8_t)(i * 7);
	int owner;
	kb_sendbatch_add(b, s[0], 6000, &owner);
	struct reports rs = {0};
	ck_assert_int_eq(kb_sendbatch_flush(b, on_report, &rs), 1);
	ck_assert_int_eq(rs.n, 1);
	struct report *r = &rs.r[0];
	ck_assert_int_eq(r->err, 0);
	ck_assert_uint_eq(r->sent, 0);
	ck_assert_uint_eq(r->rest_len, 6000);
	for (size_t i = 0; i < r->rest_len; i++)
		ck_assert_uint_eq(r->rest[i], (uint8_t)(i * 7));

	/* Room for part of it: sent + rest is the send, rest its tail. */
	char sink[65536];
	while (read(s[1], sink, sizeof(sink)) > 0)
		;
	while (write(s[0], fill, sizeof(fill)) > 0)
		;
	ck_assert_int_gt(read(s[1], sink, 2048), 0);
	room = kb_sendbatch_room(b, 16000);
	for (int i = 0; i < 16000; i++)
		room[i] = (uint8_t)(i * 13);
	kb_sendbatch_add(b, s[0], 16000, &owner);
	rs.n = 0;
	kb_sendbatch_flush(b, on_report, &rs);
	r = &rs.r[0];
	ck_assert_int_eq(r->err, 0);
	ck_assert_uint_eq(r->sent + r->rest_len, 16000);
	ck_assert_uint_lt(r->sent, 16000);
	for (size_t i = 0; i < r->rest_len && i < sizeof(r->rest); i++)
		ck_assert_uint_eq(r->rest[i], (uint8_t)((r->sent + i) * 13));
	unpair(s);
	kb_sendbatch_free(b);
}
END_TEST

START_TEST(forgotten_sends_stay_unsent)
{
	kb_sendbatch_t *b = new_batch(4, 4096);
	int a[2], c[2], oa, oc;
	pair(a);
	pair(c);
	int slot = add(b, a[0], "never", &oa);
	add(b, c[0], "sent", &oc);
	kb_sendbatch_forget(b, slot);
	kb_sendbatch_forget(b, 99); /* out of range: ignored */
	struct reports rs = {0};
	ck_assert_int_eq(kb_sendbatch_flush(b, on_report, &rs), 1);
	ck_assert_int_eq(rs.n, 1);
	ck_assert_ptr_eq(rs.r[0].owner, &oc);
	expect_read(c[1], "sent");
	char buf[16];
	ck_assert_int_eq(read(a[1], buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EAGAIN);
	/* a batch whose sends were all forgotten flushes nothing */
	slot = add(b, a[0], "never", &oa);
	kb_sendbatch_forget(b, slot);
	rs.n = 0;
	ck_assert_int_eq(kb_sendbatch_flush(b, on_report, &rs), 0);
	ck_assert_int_eq(rs.n, 0);
	ck_assert(kb_sendbatch_empty(b));
	unpair(a);
	unpair(c);
	kb_sendbatch_free(b);
}
END_TEST

START_TEST(broken_peer_is_an_error)
{
	kb_sendbatch_t *b = new_batch(4, 4096);
	int s[2], o;
	pair(s);
	close(s[1]);
	add(b, s[0], "into the void", &o);
	struct reports rs = {0};
	ck_assert_int_eq(kb_sendbatch_flush(b, on_report, &rs), 1);
	ck_assert_int_eq(rs.n, 1);
	ck_assert_int_eq(rs.r[0].err, -EPIPE); /* and no SIGPIPE */
	ck_assert_uint_eq(rs.r[0].sent, 0);
	close(s[0]);
	kb_sendbatch_free(b);
}
END_TEST

START_TEST(limits)
{
	kb_sendbatch_t *b = new_batch(2, 100);
	int s[2], o;
	pair(s);
	ck_assert_ptr_null(kb_sendbatch_room(b, 101)); /* more than the arena */
	ck_assert_ptr_nonnull(kb_sendbatch_room(b, 100));
	ck_assert_int_eq(kb_sendbatch_add(b, s[0], 60, &o), 0);
	ck_assert_ptr_null(kb_sendbatch_room(b, 41)); /* arena used up */
	ck_assert_ptr_nonnull(kb_sendbatch_room(b, 40));
	ck_assert_int_eq(kb_sendbatch_add(b, s[1], 10, &o), 1);
	ck_assert_ptr_null(kb_sendbatch_room(b, 1)); /* sends used up */
	ck_assert_int_eq(kb_sendbatch_add(b, s[0], 1, &o), -EINVAL);
	ck_assert_int_eq(kb_sendbatch_add(b, s[0], 1, NULL), -EINVAL);
	struct reports rs = {0};
	ck_assert_int_eq(kb_sendbatch_flush(b, on_report, &rs), 2);
	ck_assert_ptr_nonnull(kb_sendbatch_room(b, 100));
	kb_sendbatch_free(NULL);
	unpair(s);
	kb_sendbatch_free(b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("sendbatch");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, sends_arrive_whole);
	tcase_add_test(tc, full_socket_hands_the_rest_back);
	tcase_add_test(tc, forgotten_sends_stay_unsent);
	tcase_add_test(tc, broken_peer_is_an_error);
	tcase_add_test(tc, limits);
	suite_add_tcase(s, tc);
	return s;
}
