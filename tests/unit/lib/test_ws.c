/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/ws: the accept value of RFC 6455 section 1.3 and refused
 * keys; the examples of section 5.7; every cut of a multi-frame input gives
 * the same messages and result; each protocol error gives its close code
 * and stays; max_message is enforced on the declared length before any
 * allocation; frames built in either role parse back in the other; close
 * frames and the cutting of their reason on a UTF-8 boundary; a callback's
 * negative value stops the feed.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ws.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

#define B(s)   (const uint8_t *)(s), sizeof(s) - 1
#define WS_MAX (1u << 20)

static const uint8_t key_a[4] = {0x37, 0xfa, 0x21, 0x3d};
static const uint8_t key_b[4] = {0xa5, 0x01, 0xff, 0x5c};

/* ---- what the parser hands over ---- */

struct msg {
	enum kb_ws_op op;
	size_t off, len; /* in got.bytes */
};

struct got {
	struct kb_buf bytes; /* the payloads, one after the other */
	struct msg m[16];
	int n;
	int stop_at; /* return -42 from the stop_at-th message; 0: never */
	bool bad;    /* too many messages, a NULL data or no memory */
};

static int on_msg(void *arg, enum kb_ws_op op, const uint8_t *data, size_t len)
{
	struct got *g = arg;
	/* Not ck_assert: Check records each passed assertion, a system call,
	 * and the cut tests call this millions of times. */
	if (g->n == (int)KB_ARRAY_SIZE(g->m) || !data ||
	    kb_buf_append(&g->bytes, (const char *)data, len) < 0) {
		g->bad = true;
		return -1;
	}
	g->m[g->n] = (struct msg){.op = op, .off = g->bytes.len - len, .len = len};
	g->n++;
	return g->n == g->stop_at ? -42 : 0;
}

static const uint8_t *msg_data(const struct got *g, int i)
{
	return (const uint8_t *)g->bytes.data + g->m[i].off;
}

static void expect_msg(const struct got *g, int i, enum kb_ws_op op, const void *data, size_t len)
{
	ck_assert(!g->bad);
	ck_assert_int_lt(i, g->n);
	ck_assert_int_eq(g->m[i].op, op);
	ck_assert_uint_eq(g->m[i].len, len);
	ck_assert(len == 0 || memcmp(msg_data(g, i), data, len) == 0);
}

static bool same(const struct got *a, const struct got *b)
{
	if (a->bad || b->bad || a->n != b->n || a->bytes.len != b->bytes.len)
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->m[i].op != b->m[i].op || a->m[i].len != b->m[i].len)
			return false;
	return a->bytes.len == 0 || memcmp(a->bytes.data, b->bytes.data, a->bytes.len) == 0;
}

/* Feeds in[0..n) in pieces ending at cuts[0..ncuts) then the rest; the last result. */
static int feed_cut(bool server, size_t max, const uint8_t *in, size_t n, const size_t *cuts,
		    int ncuts, struct got *g)
{
	struct kb_ws_parser p;
	kb_ws_parser_init(&p, server, max);
	size_t at = 0;
	int rc = 0;
	for (int c = 0; c <= ncuts; c++) {
		size_t end = c < ncuts ? cuts[c] : n;
		rc = kb_ws_feed(&p, in + at, end - at, on_msg, g);
		at = end;
	}
	kb_ws_parser_free(&p);
	return rc;
}

static int feed(bool server, const uint8_t *in, size_t n, struct got *g)
{
	return feed_cut(server, WS_MAX, in, n, NULL, 0, g);
}

static void got_free(struct got *g)
{
	kb_buf_free(&g->bytes);
	g->n = 0;
	g->bad = false;
}

/* One frame with first byte b0 into out (room for len + 14), masked with
 * key unless NULL; written here by hand to check kb_ws_frame against. */
static size_t raw_frame(uint8_t *out, uint8_t b0, const void *payload, size_t len,
			const uint8_t *key)
{
	const uint8_t *pl = payload;
	uint8_t mbit = key ? 0x80 : 0;
	size_t n = 0;
	out[n++] = b0;
	if (len <= 125) {
		out[n++] = (uint8_t)(mbit | len);
	} else if (len <= 0xFFFF) {
		out[n++] = mbit | 126;
		out[n++] = (uint8_t)(len >> 8);
		out[n++] = (uint8_t)len;
	} else {
		out[n++] = mbit | 127;
		for (int k = 7; k >= 0; k--)
			out[n++] = (uint8_t)((uint64_t)len >> (8 * k));
	}
	if (key) {
		memcpy(out + n, key, 4);
		n += 4;
	}
	for (size_t k = 0; k < len; k++)
		out[n + k] = pl[k] ^ (key ? key[k & 3] : 0);
	return n + len;
}

/* ---- handshake ---- */

START_TEST(accept_rfc_example)
{
	char out[KB_WS_ACCEPT_LEN + 1];
	ck_assert_int_eq(kb_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
	ck_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}
END_TEST

START_TEST(accept_trims_blanks)
{
	char out[KB_WS_ACCEPT_LEN + 1];
	ck_assert_int_eq(kb_ws_accept(" \tdGhlIHNhbXBsZSBub25jZQ== \t", out), 0);
	ck_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	/* Another key, another value. */
	ck_assert_int_eq(kb_ws_accept("AAAAAAAAAAAAAAAAAAAAAA==", out), 0);
	ck_assert_str_ne(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	ck_assert_uint_eq(strlen(out), KB_WS_ACCEPT_LEN);
}
END_TEST

START_TEST(accept_refuses_bad_keys)
{
	static const char *bad[] = {
	    "",
	    "   \t",
	    "dGhlIHNhbXBsZSBub25jZQ",       /* no padding */
	    "dGhlIHNhbXBsZSBub25jZQ=",      /* short padding */
	    "AAAAAAAAAAAAAAAAAAAA",         /* 15 bytes */
	    "AAAAAAAAAAAAAAAAAAAAAAA=",     /* 17 bytes */
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAA", /* 21 bytes */
	    "dGhlIHNhbXBsZSBub25j!Q==",     /* not base64 */
	    "dGhl IHNhbXBsZSBub25jZQ==",    /* inner blank */
	    "========================",     /* nothing */
	};
	char out[KB_WS_ACCEPT_LEN + 1];
	for (size_t i = 0; i < KB_ARRAY_SIZE(bad); i++)
		ck_assert_msg(kb_ws_accept(bad[i], out) == -EINVAL, "key '%s'", bad[i]);
}
END_TEST

/* ---- RFC 6455 section 5.7 ---- */

START_TEST(rfc_unmasked_text)
{
	struct got g = {0};
	ck_assert_int_eq(feed(false, B("\x81\x05Hello"), &g), 0);
	ck_assert_int_eq(g.n, 1);
	expect_msg(&g, 0, KB_WS_TEXT, "Hello", 5);
	got_free(&g);
	/* A server wants masked frames. */
	ck_assert_int_eq(feed(true, B("\x81\x05Hello"), &g), KB_WS_CLOSE_PROTOCOL);
	ck_assert_int_eq(g.n, 0);
	got_free(&g);
}
END_TEST

START_TEST(rfc_masked_text)
{
	static const uint8_t in[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
				     0x7f, 0x9f, 0x4d, 0x51, 0x58};
	struct got g = {0};
	ck_assert_int_eq(feed(true, in, sizeof(in), &g), 0);
	ck_assert_int_eq(g.n, 1);
	expect_msg(&g, 0, KB_WS_TEXT, "Hello", 5);
	got_free(&g);
	/* A client wants unmasked frames. */
	ck_assert_int_eq(feed(false, in, sizeof(in), &g), KB_WS_CLOSE_PROTOCOL);
	ck_assert_int_eq(g.n, 0);
	got_free(&g);
}
END_TEST

START_TEST(rfc_fragmented)
{
	struct got g = {0};
	ck_assert_int_eq(feed(false, B("\x01\x03Hel\x80\x02lo"), &g), 0);
	ck_assert_int_eq(g.n, 1);
	expect_msg(&g, 0, KB_WS_TEXT, "Hello", 5);
	got_free(&g);
}
END_TEST

START_TEST(rfc_ping_pong)
{
	static const uint8_t pong[] = {0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d,
				       0x7f, 0x9f, 0x4d, 0x51, 0x58};
	struct got g = {0};
	ck_assert_int_eq(feed(false, B("\x89\x05Hello"), &g), 0);
	ck_assert_int_eq(g.n, 1);
	expect_msg(&g, 0, KB_WS_PING, "Hello", 5);
	ck_assert_int_eq(feed(true, pong, sizeof(pong), &g), 0);
	ck_assert_int_eq(g.n, 2);
	expect_msg(&g, 1, KB_WS_PONG, "Hello", 5);
	got_free(&g);
}
END_TEST

START_TEST(rfc_long_lengths)
{
	size_t big = 65536;
	uint8_t *in = malloc(big + 10);
	ck_assert_ptr_nonnull(in);
	for (size_t i = 0; i < big; i++)
		in[10 + i] = (uint8_t)(i * 7);
	/* 256 bytes: 0x82 0x7E 0x0100 */
	memcpy(in + 6, "\x82\x7E\x01\x00", 4);
	struct got g = {0};
	ck_assert_int_eq(feed(false, in + 6, 4 + 256, &g), 0);
	ck_assert_int_eq(g.n, 1);
	expect_msg(&g, 0, KB_WS_BINARY, in + 10, 256);
	/* 64 KiB: 0x82 0x7F 0x0000000000010000 */
	memcpy(in, "\x82\x7F\x00\x00\x00\x00\x00\x01\x00\x00", 10);
	ck_assert_int_eq(feed(false, in, 10 + big, &g), 0);
	ck_assert_int_eq(g.n, 2);
	expect_msg(&g, 1, KB_WS_BINARY, in + 10, big);
	got_free(&g);
	free(in);
}
END_TEST

START_TEST(non_minimal_lengths_accepted)
{
	struct got g = {0};
	ck_assert_int_eq(feed(false, B("\x81\x7E\x00\x05Hello"), &g), 0);
	ck_assert_int_eq(feed(false, B("\x81\x7F\x00\x00\x00\x00\x00\x00\x00\x02Hi"), &g), 0);
	ck_assert_int_eq(g.n, 2);
	expect_msg(&g, 0, KB_WS_TEXT, "Hello", 5);
	expect_msg(&g, 1, KB_WS_TEXT, "Hi", 2);
	got_free(&g);
}
END_TEST

START_TEST(empty_payloads)
{
	struct got g = {0};
	ck_assert_int_eq(
	    feed(false, B("\x81\x00\x82\x00\x89\x00\x8A\x00\x01\x00\x80\x00\x88\x00"), &g), 0);
	ck_assert_int_eq(g.n, 6);
	enum kb_ws_op ops[] = {KB_WS_TEXT, KB_WS_BINARY, KB_WS_PING,
			       KB_WS_PONG, KB_WS_TEXT,   KB_WS_CLOSE};
	for (int i = 0; i < 6; i++)
		expect_msg(&g, i, ops[i], NULL, 0);
	got_free(&g);
}
END_TEST

/* ---- any cut ---- */

/* A server-role input: a text message in three fragments (an "é" split
 * between two) with a ping and a pong between them, a 300-byte binary
 * message, an empty text, a close, then bytes that must be ignored. */
static size_t multi_input(uint8_t *in)
{
	uint8_t bin[300];
	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (uint8_t)(i ^ 0x5a);
	size_t n = 0;
	n += raw_frame(in + n, 0x01, "h\xc3", 2, key_a);
	n += raw_frame(in + n, 0x89, "p1", 2, key_b);
	n += raw_frame(in + n, 0x00, "\xa9llo ", 5, key_b);
	n += raw_frame(in + n, 0x8A, "", 0, key_a);
	n += raw_frame(in + n, 0x80, "world", 5, key_a);
	n += raw_frame(in + n, 0x82, bin, sizeof(bin), key_b);
	n += raw_frame(in + n, 0x81, "", 0, key_b);
	n += raw_frame(in + n, 0x88, "\003\350bye", 5, key_a); /* 1000 "bye" */
	in[n++] = 0xff;
	in[n++] = 0x00;
	return n;
}

/* Every cut of in (one byte at a time, at one point, at two points) gives
 * what feeding it whole gives. */
static void check_cuts(bool server, size_t max, const uint8_t *in, size_t n, const struct got *ref,
		       int ref_rc)
{
	size_t *cuts = malloc(n * sizeof(*cuts));
	ck_assert_ptr_nonnull(cuts);
	for (size_t i = 0; i < n; i++)
		cuts[i] = i + 1;
	struct got g = {0};
	ck_assert_int_eq(feed_cut(server, max, in, n, cuts, (int)n, &g), ref_rc);
	ck_assert(same(&g, ref));
	got_free(&g);
	size_t tried = 0;
	for (size_t a = 0; a <= n; a++) {
		for (size_t b = a; b <= n; b++, tried++) {
			size_t two[2] = {a, b};
			int rc = feed_cut(server, max, in, n, two, 2, &g);
			if (rc != ref_rc || !same(&g, ref))
				ck_abort_msg("cut at %zu and %zu: %d, %d messages", a, b, rc, g.n);
			got_free(&g);
		}
	}
	ck_assert_uint_eq(tried, (n + 1) * (n + 2) / 2);
	free(cuts);
}

START_TEST(every_cut_same_messages)
{
	uint8_t in[512];
	size_t n = multi_input(in);
	struct got ref = {0};
	ck_assert_int_eq(feed(true, in, n, &ref), 0);
	ck_assert_int_eq(ref.n, 6);
	expect_msg(&ref, 0, KB_WS_PING, "p1", 2);
	expect_msg(&ref, 1, KB_WS_PONG, NULL, 0);
	expect_msg(&ref, 2, KB_WS_TEXT, "h\xc3\xa9llo world", 12);
	ck_assert_int_eq(ref.m[3].op, KB_WS_BINARY);
	ck_assert_uint_eq(ref.m[3].len, 300);
	ck_assert_uint_eq(msg_data(&ref, 3)[299], (uint8_t)(299 ^ 0x5a));
	expect_msg(&ref, 4, KB_WS_TEXT, NULL, 0);
	expect_msg(&ref, 5, KB_WS_CLOSE, "\003\350bye", 5);
	check_cuts(true, WS_MAX, in, n, &ref, 0);
	got_free(&ref);
}
END_TEST

START_TEST(every_cut_same_error)
{
	uint8_t in[512];
	size_t n = multi_input(in);
	n -= 2 + 11; /* the close frame and what follows it */
	/* A frame with RSV1 set after the valid ones. */
	n += raw_frame(in + n, 0xC1, "x", 1, key_a);
	struct got ref = {0};
	ck_assert_int_eq(feed(true, in, n, &ref), KB_WS_CLOSE_PROTOCOL);
	ck_assert_int_eq(ref.n, 5);
	check_cuts(true, WS_MAX, in, n, &ref, KB_WS_CLOSE_PROTOCOL);
	got_free(&ref);
	/* The same input over a small max_message: 1009 at the binary frame. */
	n -= 7;
	ck_assert_int_eq(feed_cut(true, 100, in, n, NULL, 0, &ref), KB_WS_CLOSE_TOO_BIG);
	ck_assert_int_eq(ref.n, 3);
	check_cuts(true, 100, in, n, &ref, KB_WS_CLOSE_TOO_BIG);
	got_free(&ref);
}
END_TEST

/* ---- protocol errors ---- */

#define M "\0\0\0\0" /* a zero masking key: masked, payload unchanged */

struct bad_case {
	const char *name;
	bool server;
	const uint8_t *in;
	size_t len;
	int code;
	int msgs; /* delivered before the error */
};

START_TEST(protocol_errors)
{
	static const struct bad_case cases[] = {
	    {"rsv1", true, B("\xC1\x80" M), 1002},
	    {"rsv2", true, B("\xA1\x80" M), 1002},
	    {"rsv3", true, B("\x91\x80" M), 1002},
	    {"rsv on a continuation", true, B("\x01\x80" M "\xD0\x80" M), 1002},
	    {"unmasked to a server", true, B("\x82\x00"), 1002},
	    {"masked to a client", false, B("\x82\x80" M), 1002},
	    {"ping without fin", true, B("\x09\x80" M), 1002},
	    {"close without fin", true, B("\x08\x80" M), 1002},
	    {"ping of 126", true, B("\x89\xFE\x00\x7E" M), 1002},
	    {"pong of 126", true, B("\x8A\xFE\x00\x7E" M), 1002},
	    {"close of 127 (64-bit)", true, B("\x88\xFF\0\0\0\0\0\0\0\x05" M), 1002},
	    {"continuation first", true, B("\x80\x80" M), 1002},
	    {"continuation after a message", true, B("\x81\x80" M "\x80\x80" M), 1002, 1},
	    {"text inside a fragmented message", true, B("\x01\x80" M "\x81\x80" M), 1002},
	    {"binary inside a fragmented message", true, B("\x02\x80" M "\x02\x80" M), 1002},
	    {"64-bit length with the top bit", true, B("\x82\xFF\x80\0\0\0\0\0\0\0" M), 1002},
	    {"64-bit length all ones", false, B("\x82\x7F\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF"), 1002},
	    {"overlong 2-byte", true, B("\x81\x82" M "\xC0\x80"), 1007},
	    {"overlong 3-byte", true, B("\x81\x83" M "\xE0\x80\xAF"), 1007},
	    {"overlong 4-byte", true, B("\x81\x84" M "\xF0\x8F\xBF\xBF"), 1007},
	    {"surrogate", true, B("\x81\x83" M "\xED\xA0\x80"), 1007},
	    {"over U+10FFFF", true, B("\x81\x84" M "\xF4\x90\x80\x80"), 1007},
	    {"lead byte F8", true, B("\x81\x81" M "\xF8"), 1007},
	    {"lone continuation", true, B("\x81\x82" M "a\x80"), 1007},
	    {"truncated sequence", true, B("\x81\x82" M "\xE2\x82"), 1007},
	    {"bad sequence across fragments", true, B("\x01\x81" M "\xC3\x80\x81" M "A"), 1007},
	    {"close of 1 byte", true, B("\x88\x81" M "\x03"), 1002},
	    {"close reason not UTF-8", true,
	     B("\x88\x84" M "\x03\xE8\xFF"
	       "A"),
	     1007},
	    {"close reason overlong", false, B("\x88\x04\x03\xE8\xC1\xBF"), 1007},
	};
	for (size_t i = 0; i < KB_ARRAY_SIZE(cases); i++) {
		const struct bad_case *c = &cases[i];
		struct got g = {0};
		int rc = feed(c->server, c->in, c->len, &g);
		ck_assert_msg(rc == c->code, "%s: %d, not %d", c->name, rc, c->code);
		ck_assert_msg(g.n == c->msgs, "%s: %d messages", c->name, g.n);
		got_free(&g);
	}
}
END_TEST

START_TEST(unknown_opcodes)
{
	for (unsigned op = 0; op < 16; op++) {
		uint8_t in[6] = {(uint8_t)(0x80 | op), 0x80};
		struct got g = {0};
		int rc = feed(true, in, sizeof(in), &g);
		bool known = op == 1 || op == 2 || op == 8 || op == 9 || op == 10;
		if (op == 0) /* a continuation without a start */
			ck_assert_int_eq(rc, KB_WS_CLOSE_PROTOCOL);
		else if (known)
			ck_assert_msg(rc == 0 && g.n == 1, "opcode %u: %d", op, rc);
		else
			ck_assert_msg(rc == KB_WS_CLOSE_PROTOCOL && g.n == 0, "opcode %u: %d", op,
				      rc);
		got_free(&g);
	}
}
END_TEST

START_TEST(close_codes)
{
	static const unsigned bad[] = {0,    1,    999,  1004, 1005, 1006, 1015,
				       1016, 1100, 2000, 2999, 5000, 65535};
	static const unsigned good[] = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010,
					1011, 1012, 1013, 1014, 3000, 4000, 4999};
	uint8_t in[32];
	struct got g = {0};
	for (size_t i = 0; i < KB_ARRAY_SIZE(bad); i++) {
		uint8_t pl[2] = {(uint8_t)(bad[i] >> 8), (uint8_t)bad[i]};
		size_t n = raw_frame(in, 0x88, pl, 2, key_a);
		ck_assert_msg(feed(true, in, n, &g) == KB_WS_CLOSE_PROTOCOL, "code %u", bad[i]);
		ck_assert_int_eq(g.n, 0);
	}
	for (size_t i = 0; i < KB_ARRAY_SIZE(good); i++) {
		uint8_t pl[4] = {(uint8_t)(good[i] >> 8), (uint8_t)good[i], 'o', 'k'};
		size_t n = raw_frame(in, 0x88, pl, 4, key_b);
		ck_assert_msg(feed(true, in, n, &g) == 0, "code %u", good[i]);
		ck_assert_int_eq(g.n, (int)i + 1);
		expect_msg(&g, (int)i, KB_WS_CLOSE, pl, 4);
	}
	got_free(&g);
}
END_TEST

START_TEST(errors_stay)
{
	struct kb_ws_parser p;
	kb_ws_parser_init(&p, true, WS_MAX);
	struct got g = {0};
	uint8_t ok[16];
	size_t n = raw_frame(ok, 0x81, "hi", 2, key_a);
	ck_assert_int_eq(kb_ws_feed(&p, B("\xC1\x80" M), on_msg, &g), KB_WS_CLOSE_PROTOCOL);
	ck_assert_int_eq(kb_ws_feed(&p, ok, n, on_msg, &g), KB_WS_CLOSE_PROTOCOL);
	ck_assert_int_eq(kb_ws_feed(&p, NULL, 0, on_msg, &g), KB_WS_CLOSE_PROTOCOL);
	ck_assert_int_eq(g.n, 0);
	kb_ws_parser_free(&p);
	/* 1007 as well, found at the end of a message */
	kb_ws_parser_init(&p, true, WS_MAX);
	ck_assert_int_eq(kb_ws_feed(&p, B("\x81\x81" M "\xFF"), on_msg, &g), KB_WS_CLOSE_BAD_DATA);
	ck_assert_int_eq(kb_ws_feed(&p, ok, n, on_msg, &g), KB_WS_CLOSE_BAD_DATA);
	ck_assert_int_eq(g.n, 0);
	kb_ws_parser_free(&p);
	got_free(&g);
}
END_TEST

START_TEST(bytes_after_close_ignored)
{
	uint8_t in[64];
	size_t n = raw_frame(in, 0x88, "\x03\xe9", 2, key_a);
	size_t close_len = n;
	n += raw_frame(in + n, 0x81, "late", 4, key_b);
	n += raw_frame(in + n, 0xF0, "", 0, key_b); /* would be an error */
	struct kb_ws_parser p;
	kb_ws_parser_init(&p, true, WS_MAX);
	struct got g = {0};
	ck_assert_int_eq(kb_ws_feed(&p, in, n, on_msg, &g), 0);
	ck_assert_int_eq(g.n, 1);
	expect_msg(&g, 0, KB_WS_CLOSE, "\x03\xe9", 2);
	ck_assert_int_eq(kb_ws_feed(&p, in + close_len, n - close_len, on_msg, &g), 0);
	ck_assert_int_eq(kb_ws_feed(&p, in, close_len, on_msg, &g), 0);
	ck_assert_int_eq(g.n, 1);
	kb_ws_parser_free(&p);
	got_free(&g);
}
END_TEST

/* ---- max_message ---- */

START_TEST(max_message_single_frame)
{
	uint8_t pl[101], in[128];
	memset(pl, 'x', sizeof(pl));
	struct got g = {0};
	size_t n = raw_frame(in, 0x82, pl, 100, key_a);
	ck_assert_int_eq(feed_cut(true, 100, in, n, NULL, 0, &g), 0);
	ck_assert_int_eq(g.n, 1);
	/* 101: refused on the header alone, nothing stored. */
	n = raw_frame(in, 0x82, pl, 101, key_a);
	struct kb_ws_parser p;
	kb_ws_parser_init(&p, true, 100);
	ck_assert_int_eq(kb_ws_feed(&p, in, 8, on_msg, &g), KB_WS_CLOSE_TOO_BIG);
	ck_assert_ptr_null(p.msg.data);
	ck_assert_int_eq(kb_ws_feed(&p, in + 8, n - 8, on_msg, &g), KB_WS_CLOSE_TOO_BIG);
	ck_assert_int_eq(g.n, 1);
	kb_ws_parser_free(&p);
	/* Control frames are not data messages. */
	n = raw_frame(in, 0x89, pl, 101, key_b);
	ck_assert_int_eq(feed_cut(true, 100, in, n, NULL, 0, &g), 0);
	ck_assert_int_eq(g.n, 2);
	got_free(&g);
}
END_TEST

START_TEST(max_message_fragments)
{
	uint8_t pl[100], in[256];
	memset(pl, 'y', sizeof(pl));
	struct got g = {0};
	size_t n = raw_frame(in, 0x01, pl, 60, key_a);
	n += raw_frame(in + n, 0x80, pl, 40, key_b);
	ck_assert_int_eq(feed_cut(true, 100, in, n, NULL, 0, &g), 0);
	ck_assert_int_eq(g.n, 1);
	expect_msg(&g, 0, KB_WS_TEXT, pl, 100);
	n = raw_frame(in, 0x01, pl, 60, key_a);
	n += raw_frame(in + n, 0x80, pl, 41, key_b);
	ck_assert_int_eq(feed_cut(true, 100, in, n, NULL, 0, &g), KB_WS_CLOSE_TOO_BIG);
	ck_assert_int_eq(g.n, 1);
	got_free(&g);
}
END_TEST

START_TEST(max_message_declared_not_allocated)
{
	struct got g = {0};
	struct kb_ws_parser p;
	/* 2^40 declared, 1 MiB allowed: refused on the header. */
	kb_ws_parser_init(&p, true, WS_MAX);
	ck_assert_int_eq(kb_ws_feed(&p, B("\x82\xFF\0\0\x01\0\0\0\0\0" M), on_msg, &g),
			 KB_WS_CLOSE_TOO_BIG);
	ck_assert_ptr_null(p.msg.data);
	kb_ws_parser_free(&p);
	/* No limit and 2^62 declared: storage grows with the bytes that come. */
	kb_ws_parser_init(&p, true, SIZE_MAX);
	ck_assert_int_eq(kb_ws_feed(&p, B("\x82\xFF\x40\0\0\0\0\0\0\0" M "0123456789"), on_msg, &g),
			 0);
	ck_assert_uint_eq(p.msg.len, 10);
	ck_assert_uint_le(p.msg.cap, 4096);
	ck_assert_int_eq(g.n, 0);
	kb_ws_parser_free(&p);
	got_free(&g);
}
END_TEST

/* ---- building ---- */

START_TEST(round_trip)
{
	static const size_t lens[] = {0, 1, 125, 126, 65535, 65536};
	uint8_t *pl = malloc(65536);
	ck_assert_ptr_nonnull(pl);
	for (size_t i = 0; i < 65536; i++)
		pl[i] = (uint8_t)('a' + i % 26);
	for (size_t i = 0; i < KB_ARRAY_SIZE(lens); i++) {
		for (int mask = 0; mask < 2; mask++) {
			size_t len = lens[i];
			size_t hdr = (len <= 125 ? 2 : len <= 65535 ? 4 : 10) + (mask ? 4 : 0);
			enum kb_ws_op op = i % 2 ? KB_WS_TEXT : KB_WS_BINARY;
			struct kb_buf out = {0};
			ck_assert_int_eq(kb_ws_frame(&out, op, pl, len, mask), 0);
			ck_assert_uint_eq(out.len, hdr + len);
			const uint8_t *f = (const uint8_t *)out.data;
			ck_assert_uint_eq(f[0], 0x80 | op);
			ck_assert_uint_eq(f[1] & 0x80, mask ? 0x80 : 0);
			ck_assert_uint_eq(f[1] & 0x7F, len <= 125 ? len : len <= 65535 ? 126 : 127);
			if (!mask)
				ck_assert(len == 0 || memcmp(f + hdr, pl, len) == 0);
			struct got g = {0};
			ck_assert_int_eq(feed(mask, f, out.len, &g), 0);
			ck_assert_int_eq(g.n, 1);
			expect_msg(&g, 0, op, pl, len);
			/* The other role refuses it. */
			ck_assert_int_eq(feed(!mask, f, out.len, &g), KB_WS_CLOSE_PROTOCOL);
			got_free(&g);
			kb_buf_free(&out);
		}
	}
	free(pl);
}
END_TEST

START_TEST(frame_refuses)
{
	uint8_t pl[126] = {0};
	struct kb_buf out = {0};
	ck_assert_int_eq(kb_ws_frame(&out, KB_WS_PING, pl, 126, false), -EINVAL);
	ck_assert_int_eq(kb_ws_frame(&out, KB_WS_CLOSE, pl, 126, true), -EINVAL);
	ck_assert_int_eq(kb_ws_frame(&out, KB_WS_CONT, pl, 1, false), -EINVAL);
	ck_assert_int_eq(kb_ws_frame(&out, (enum kb_ws_op)3, pl, 1, false), -EINVAL);
	ck_assert_int_eq(kb_ws_frame(&out, (enum kb_ws_op)0xB, pl, 1, false), -EINVAL);
	ck_assert_int_eq(kb_ws_frame(&out, KB_WS_TEXT, NULL, 1, false), -EINVAL);
	ck_assert_uint_eq(out.len, 0);
	ck_assert_int_eq(kb_ws_frame(&out, KB_WS_PONG, pl, 125, false), 0);
	ck_assert_uint_eq(out.len, 127);
	/* Frames append. */
	ck_assert_int_eq(kb_ws_frame(&out, KB_WS_TEXT, NULL, 0, false), 0);
	ck_assert_uint_eq(out.len, 129);
	ck_assert_uint_eq((uint8_t)out.data[127], 0x81);
	kb_buf_free(&out);
}
END_TEST

START_TEST(close_frame_bytes)
{
	struct kb_buf out = {0};
	ck_assert_int_eq(kb_ws_close_frame(&out, 1000, "bye", false), 0);
	ck_assert_uint_eq(out.len, 7);
	ck_assert(memcmp(out.data, "\x88\x05\003\350bye", 7) == 0); /* 1000 = 0x03e8 */
	out.len = 0;
	ck_assert_int_eq(kb_ws_close_frame(&out, 4001, NULL, false), 0);
	ck_assert_uint_eq(out.len, 4);
	ck_assert(memcmp(out.data, "\x88\x02\x0f\xa1", 4) == 0);
	out.len = 0;
	ck_assert_int_eq(kb_ws_close_frame(&out, KB_WS_CLOSE_TOO_BIG, "too big", true), 0);
	ck_assert_uint_eq(out.len, 2 + 4 + 9);
	struct got g = {0};
	ck_assert_int_eq(feed(true, (const uint8_t *)out.data, out.len, &g), 0);
	ck_assert_int_eq(g.n, 1);
	expect_msg(&g, 0, KB_WS_CLOSE, "\003\361too big", 9); /* 1009 = 0x03f1 */
	got_free(&g);
	kb_buf_free(&out);
}
END_TEST

/* The reason a close frame for `reason` carries, after a parse by a client. */
static size_t close_reason_len(const char *reason)
{
	struct kb_buf out = {0};
	ck_assert_int_eq(kb_ws_close_frame(&out, 1001, reason, false), 0);
	struct got g = {0};
	ck_assert_int_eq(feed(false, (const uint8_t *)out.data, out.len, &g), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(g.m[0].op, KB_WS_CLOSE);
	size_t n = g.m[0].len - 2;
	ck_assert(memcmp(msg_data(&g, 0) + 2, reason, n) == 0);
	got_free(&g);
	kb_buf_free(&out);
	return n;
}

START_TEST(close_reason_cut)
{
	char r[256];
	memset(r, 'a', 200);
	r[200] = '\0';
	ck_assert_uint_eq(close_reason_len(r), 123);
	r[124] = '\0';
	ck_assert_uint_eq(close_reason_len(r), 123);
	r[123] = '\0';
	ck_assert_uint_eq(close_reason_len(r), 123);
	r[122] = '\0';
	ck_assert_uint_eq(close_reason_len(r), 122);
	/* 122 bytes then "é" (2 bytes) straddling the limit */
	strcpy(r + 122, "\303\251b"); /* é = c3 a9 */
	ck_assert_uint_eq(close_reason_len(r), 122);
	/* "€" (3 bytes) 50 times: 41 fit exactly */
	r[0] = '\0';
	for (int i = 0; i < 50; i++)
		strcat(r, "\xe2\x82\xac");
	ck_assert_uint_eq(close_reason_len(r), 123);
	/* shifted by one byte: 40 fit */
	memmove(r + 1, r, strlen(r) + 1);
	r[0] = 'a';
	ck_assert_uint_eq(close_reason_len(r), 121);
	/* U+1D11E (4 bytes) 40 times: 30 fit */
	r[0] = '\0';
	for (int i = 0; i < 40; i++)
		strcat(r, "\xf0\x9d\x84\x9e");
	ck_assert_uint_eq(close_reason_len(r), 120);
}
END_TEST

/* ---- the callback ---- */

START_TEST(callback_stops_feed)
{
	uint8_t in[64];
	size_t n = raw_frame(in, 0x81, "one", 3, key_a);
	n += raw_frame(in + n, 0x89, "two", 3, key_b);
	n += raw_frame(in + n, 0x82, "three", 5, key_a);
	struct kb_ws_parser p;
	kb_ws_parser_init(&p, true, WS_MAX);
	struct got g = {.stop_at = 2};
	ck_assert_int_eq(kb_ws_feed(&p, in, n, on_msg, &g), -42);
	ck_assert_int_eq(g.n, 2);
	expect_msg(&g, 1, KB_WS_PING, "two", 3);
	ck_assert_int_eq(kb_ws_feed(&p, in, n, on_msg, &g), -42);
	ck_assert_int_eq(g.n, 2);
	kb_ws_parser_free(&p);
	got_free(&g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("ws");
	TCase *hs = tcase_create("handshake");
	tcase_add_test(hs, accept_rfc_example);
	tcase_add_test(hs, accept_trims_blanks);
	tcase_add_test(hs, accept_refuses_bad_keys);
	suite_add_tcase(s, hs);
	TCase *rfc = tcase_create("rfc");
	tcase_add_test(rfc, rfc_unmasked_text);
	tcase_add_test(rfc, rfc_masked_text);
	tcase_add_test(rfc, rfc_fragmented);
	tcase_add_test(rfc, rfc_ping_pong);
	tcase_add_test(rfc, rfc_long_lengths);
	tcase_add_test(rfc, non_minimal_lengths_accepted);
	tcase_add_test(rfc, empty_payloads);
	suite_add_tcase(s, rfc);
	TCase *cut = tcase_create("cuts");
	tcase_set_timeout(cut, 60);
	tcase_add_test(cut, every_cut_same_messages);
	tcase_add_test(cut, every_cut_same_error);
	suite_add_tcase(s, cut);
	TCase *err = tcase_create("errors");
	tcase_add_test(err, protocol_errors);
	tcase_add_test(err, unknown_opcodes);
	tcase_add_test(err, close_codes);
	tcase_add_test(err, errors_stay);
	tcase_add_test(err, bytes_after_close_ignored);
	tcase_add_test(err, max_message_single_frame);
	tcase_add_test(err, max_message_fragments);
	tcase_add_test(err, max_message_declared_not_allocated);
	suite_add_tcase(s, err);
	TCase *build = tcase_create("build");
	tcase_add_test(build, round_trip);
	tcase_add_test(build, frame_refuses);
	tcase_add_test(build, close_frame_bytes);
	tcase_add_test(build, close_reason_cut);
	tcase_add_test(build, callback_stops_feed);
	suite_add_tcase(s, build);
	return s;
}
