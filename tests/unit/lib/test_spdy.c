/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/spdy against what kubectl 1.27 sent for one port-forward
 * connection (captured on the wire: the error stream and the data stream of
 * request 0 for port 17070, five random bytes, half-closes): in one piece and cut
 * byte by byte; the frames the server writes, byte for byte, and its header
 * block compressed with the same dictionary as kubectl's (zlib names it by
 * its Adler-32); pings; resets; the protocol errors that end a session with
 * GOAWAY; a callback's negative value stops the feed.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/spdy.h"
#include "lib/util.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

/* kubectl.1.27 port-forward pod/web 18181:17070, one connection sending
 * the bytes e9 55 c5 88 13 and half-closing */
static const uint8_t kubectl_pf[] = {
    0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2, 0x02, 0x25, 0x3a, 0x70, 0x3a, 0x2b,
    0x29, 0x4a, 0x4d, 0xcc, 0x85, 0x16, 0x25, 0xac, 0xa9, 0xa0, 0x80, 0x86, 0x14, 0xcb, 0x45,
    0xa0, 0x24, 0xcc, 0x6a, 0x68, 0x6e, 0x60, 0x6e, 0xc0, 0xc0, 0xc0, 0xc0, 0x59, 0x04, 0x89,
    0xc7, 0x4c, 0x50, 0xfa, 0x66, 0x34, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00,
    0x01, 0x01, 0x00, 0x00, 0x00, 0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x1a, 0x00, 0x00,
    0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xea, 0x26, 0x42, 0x19, 0xaa, 0x05,
    0xa0, 0xb2, 0x2a, 0x11, 0x00, 0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00,
    0x00, 0x05, 0xe9, 0x55, 0xc5, 0x88, 0x13, 0x00, 0x00, 0x00, 0x03, 0x01, 0x00, 0x00, 0x00,
};

struct ev {
	char what[160];
};

struct rec {
	struct ev ev[32];
	int n;
	struct kb_buf out;  /* what the session wrote */
	int stop_at;        /* return -42 from the stop_at-th event; 0: never */
	struct kb_buf data; /* data bytes since the last data event with fin, per stream 3 */
};

static int add(struct rec *r, const char *s)
{
	ck_assert_int_lt(r->n, 32);
	snprintf(r->ev[r->n].what, sizeof(r->ev[r->n].what), "%s", s);
	r->n++;
	return r->stop_at && r->n == r->stop_at ? -42 : 0;
}

static int on_syn(void *arg, uint32_t id, const struct kb_spdy_header *h, size_t n, bool fin)
{
	char s[160];
	int off = snprintf(s, sizeof(s), "syn %u%s", id, fin ? " fin" : "");
	for (size_t i = 0; i < n && off < (int)sizeof(s); i++)
		off += snprintf(s + off, sizeof(s) - (size_t)off, " %s=%s", h[i].name, h[i].value);
	return add(arg, s);
}

/* Data pieces are joined: one event per stream and fin (or per change of
 * stream), so that any cut of the input gives the same events. */
static int on_data(void *arg, uint32_t id, const uint8_t *d, size_t len, bool fin)
{
	struct rec *r = arg;
	kb_buf_append(&r->data, (const char *)d, len);
	if (!fin && len > 0)
		return 0;
	char s[160];
	int off = snprintf(s, sizeof(s), "data %u '", id);
	for (size_t i = 0; i < r->data.len && i < 32; i++)
		off += snprintf(s + off, sizeof(s) - (size_t)off, "%02x", (uint8_t)r->data.data[i]);
	snprintf(s + off, sizeof(s) - (size_t)off, "'%s", fin ? " fin" : "");
	r->data.len = 0;
	return add(r, s);
}

static int on_rst(void *arg, uint32_t id, uint32_t status)
{
	char s[64];
	snprintf(s, sizeof(s), "rst %u %u", id, status);
	return add(arg, s);
}

static int on_goaway(void *arg)
{
	return add(arg, "goaway");
}

static int on_write(void *arg, const uint8_t *d, size_t len)
{
	struct rec *r = arg;
	return kb_buf_append(&r->out, (const char *)d, len);
}

static const struct kb_spdy_cbs cbs = {on_syn, on_data, on_rst, on_goaway, on_write};

static void rec_free(struct rec *r)
{
	kb_buf_free(&r->out);
	kb_buf_free(&r->data);
}

static const char *const want_pf[] = {
    "syn 1 streamtype=error port=17070 requestid=0",
    "data 1 '' fin",
    "syn 3 port=17070 requestid=0 streamtype=data",
    "data 3 'e955c58813' fin",
};

static void check_pf(const struct rec *r)
{
	ck_assert_int_eq(r->n, 4);
	for (int i = 0; i < 4; i++)
		ck_assert_str_eq(r->ev[i].what, want_pf[i]);
	ck_assert_uint_eq(r->out.len, 0);
}

/* The capture in one piece, byte by byte and in cuts of 7: the same events. */
START_TEST(kubectl_cuts)
{
	static const size_t cuts[] = {sizeof(kubectl_pf), 1, 7};
	for (size_t c = 0; c < KB_ARRAY_SIZE(cuts); c++) {
		struct rec r = {0};
		kb_spdy_t *s = kb_spdy_new(&cbs, &r);
		for (size_t i = 0; i < sizeof(kubectl_pf); i += cuts[c]) {
			size_t n =
			    sizeof(kubectl_pf) - i < cuts[c] ? sizeof(kubectl_pf) - i : cuts[c];
			ck_assert_int_eq(kb_spdy_feed(s, kubectl_pf + i, n), 0);
		}
		check_pf(&r);
		kb_spdy_free(s);
		rec_free(&r);
	}
}
END_TEST

START_TEST(reply_and_data_bytes)
{
	struct rec r = {0};
	kb_spdy_t *s = kb_spdy_new(&cbs, &r);
	ck_assert_int_eq(kb_spdy_reply(s, 3, NULL, 0, false), 0);
	const uint8_t *o = (const uint8_t *)r.out.data;
	/* control, version 3, SYN_REPLY, no flags, stream 3 */
	static const uint8_t head[] = {0x80, 0x03, 0x00, 0x02, 0x00};
	ck_assert_mem_eq(o, head, sizeof(head));
	ck_assert_uint_eq((size_t)(o[5] << 16 | o[6] << 8 | o[7]), r.out.len - 8);
	static const uint8_t id3[] = {0, 0, 0, 3};
	ck_assert_mem_eq(o + 8, id3, 4);
	/* a zlib stream with a preset dictionary (FDICT), the one kubectl
	 * named in its own header block above */
	ck_assert_uint_eq(o[12] & 0x0f, 8);
	ck_assert(o[13] & 0x20);
	ck_assert_uint_eq((o[12] << 8 | o[13]) % 31, 0);
	ck_assert_mem_eq(o + 14, kubectl_pf + 20, 4);
	r.out.len = 0;
	ck_assert_int_eq(kb_spdy_data(s, 3, "abc", 3, true), 0);
	static const uint8_t data[] = {0, 0, 0, 3, 0x01, 0, 0, 3, 'a', 'b', 'c'};
	ck_assert_uint_eq(r.out.len, sizeof(data));
	ck_assert_mem_eq(r.out.data, data, sizeof(data));
	r.out.len = 0;
	ck_assert_int_eq(kb_spdy_data(s, 5, NULL, 0, true), 0);
	static const uint8_t fin[] = {0, 0, 0, 5, 0x01, 0, 0, 0};
	ck_assert_mem_eq(r.out.data, fin, sizeof(fin));
	r.out.len = 0;
	ck_assert_int_eq(kb_spdy_rst(s, 7, KB_SPDY_REFUSED_STREAM), 0);
	static const uint8_t rst[] = {0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 7, 0, 0, 0, 3};
	ck_assert_mem_eq(r.out.data, rst, sizeof(rst));
	kb_spdy_free(s);
	rec_free(&r);
}
END_TEST

START_TEST(ping_echoed)
{
	struct rec r = {0};
	kb_spdy_t *s = kb_spdy_new(&cbs, &r);
	static const uint8_t ping[] = {0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 9};
	ck_assert_int_eq(kb_spdy_feed(s, ping, sizeof(ping)), 0);
	ck_assert_uint_eq(r.out.len, sizeof(ping));
	ck_assert_mem_eq(r.out.data, ping, sizeof(ping));
	/* an even id is an answer to the server's own ping: not echoed */
	static const uint8_t pong[] = {0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 8};
	r.out.len = 0;
	ck_assert_int_eq(kb_spdy_feed(s, pong, sizeof(pong)), 0);
	ck_assert_uint_eq(r.out.len, 0);
	/* SETTINGS and WINDOW_UPDATE are read and ignored */
	static const uint8_t other[] = {0x80, 3, 0, 4, 0, 0, 0, 4, 0, 0, 0, 0, 0x80, 3,
					0,    9, 0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 1,    0};
	ck_assert_int_eq(kb_spdy_feed(s, other, sizeof(other)), 0);
	ck_assert_int_eq(r.n, 0);
	kb_spdy_free(s);
	rec_free(&r);
}
END_TEST

START_TEST(rst_and_goaway)
{
	struct rec r = {0};
	kb_spdy_t *s = kb_spdy_new(&cbs, &r);
	static const uint8_t in[] = {0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 5,
				     0x80, 3, 0, 7, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0};
	ck_assert_int_eq(kb_spdy_feed(s, in, sizeof(in)), 0);
	ck_assert_int_eq(r.n, 2);
	ck_assert_str_eq(r.ev[0].what, "rst 5 5");
	ck_assert_str_eq(r.ev[1].what, "goaway");
	kb_spdy_free(s);
	rec_free(&r);
}
END_TEST

/* Each input breaks the protocol: -EPROTO, a GOAWAY with PROTOCOL_ERROR
 * written, and the same error for every later feed. */
static void check_broken(const uint8_t *in, size_t len)
{
	struct rec r = {0};
	kb_spdy_t *s = kb_spdy_new(&cbs, &r);
	ck_assert_int_eq(kb_spdy_feed(s, in, len), -EPROTO);
	static const uint8_t goaway[] = {0x80, 3, 0, 7, 0, 0, 0, 8};
	ck_assert_uint_eq(r.out.len, 16);
	ck_assert_mem_eq(r.out.data, goaway, sizeof(goaway));
	ck_assert_uint_eq((uint8_t)r.out.data[15], KB_SPDY_PROTOCOL_ERROR);
	ck_assert_int_eq(kb_spdy_feed(s, kubectl_pf, sizeof(kubectl_pf)), -EPROTO);
	ck_assert_int_eq(r.n, 0);
	kb_spdy_free(s);
	rec_free(&r);
}

START_TEST(protocol_errors)
{
	/* SPDY/2 */
	static const uint8_t v2[] = {0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1};
	check_broken(v2, sizeof(v2));
	/* a control frame over 64 KiB */
	static const uint8_t big[] = {0x80, 3, 0, 1, 0, 0x01, 0x00, 0x01};
	check_broken(big, sizeof(big));
	/* kubectl's first SYN_STREAM with its stream id made even */
	uint8_t even[sizeof(kubectl_pf)];
	memcpy(even, kubectl_pf, sizeof(even));
	even[11] = 2;
	check_broken(even, 72);
	/* its header block's zlib header damaged */
	uint8_t bad[sizeof(kubectl_pf)];
	memcpy(bad, kubectl_pf, sizeof(bad));
	bad[19] ^= 0x01;
	check_broken(bad, 72);
	/* a header block that is not zlib at all */
	static const uint8_t junk[] = {0x80, 3, 0, 1, 0, 0, 0,   14,  0,   0,   0,   1,
				       0,    0, 0, 0, 0, 0, 'j', 'u', 'n', 'k', '!', '!'};
	check_broken(junk, sizeof(junk));
	/* a SYN_REPLY from the client */
	static const uint8_t reply[] = {0x80, 3, 0, 2, 0, 0, 0, 4, 0, 0, 0, 1};
	check_broken(reply, sizeof(reply));
	/* a short RST_STREAM */
	static const uint8_t rst[] = {0x80, 3, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1};
	check_broken(rst, sizeof(rst));
}
END_TEST

START_TEST(callback_stops_feed)
{
	struct rec r = {.stop_at = 2};
	kb_spdy_t *s = kb_spdy_new(&cbs, &r);
	ck_assert_int_eq(kb_spdy_feed(s, kubectl_pf, sizeof(kubectl_pf)), -42);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(kb_spdy_feed(s, kubectl_pf, 1), -42);
	ck_assert_int_eq(r.n, 2);
	kb_spdy_free(s);
	rec_free(&r);
}
END_TEST

START_TEST(header_lookup)
{
	const struct kb_spdy_header h[] = {{"port", "80"}, {"streamtype", "data"}};
	ck_assert_str_eq(kb_spdy_header_get(h, 2, "streamtype"), "data");
	ck_assert_ptr_null(kb_spdy_header_get(h, 2, "requestid"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("spdy");
	TCase *t = tcase_create("spdy");
	tcase_add_test(t, kubectl_cuts);
	tcase_add_test(t, reply_and_data_bytes);
	tcase_add_test(t, ping_echoed);
	tcase_add_test(t, rst_and_goaway);
	tcase_add_test(t, protocol_errors);
	tcase_add_test(t, callback_stops_feed);
	tcase_add_test(t, header_lookup);
	suite_add_tcase(s, t);
	return s;
}
