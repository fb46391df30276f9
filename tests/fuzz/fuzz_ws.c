/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the WebSocket frame parser of lib/ws, in both roles.
 * The input is fed whole, then in cuts drawn from a generator seeded by its
 * first bytes (with empty feeds among them); both must give the same
 * messages (hashed) and the same result. What is delivered must keep the
 * parser's promises (sizes, opcodes, close payloads, UTF-8 text checked
 * here a second way); a callback that stops at the k-th message must stop
 * the feed there; and the delivered messages, framed again by kb_ws_frame
 * in the other role, must parse back to the same messages.
 */
#include "tests/fuzz/fuzz.h"

#include "lib/ws.h"

#define MAX_MESSAGE 4096

struct trace {
	uint64_t hash;
	size_t n;
	size_t stop_at;       /* return -1 from this message (1-based); 0: never */
	bool rebuild_mask;    /* frame each message again, with or without a mask */
	struct kb_buf *again; /* where; NULL: not */
};

static void mix(uint64_t *h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		*h ^= b[i];
		*h *= 0x100000001b3ULL;
	}
}

/* Bytes of the sequence a UTF-8 lead byte starts, 0 for no lead byte. */
static size_t seq_len(uint8_t c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return 2;
	if (c >= 0xE0 && c <= 0xEF)
		return 3;
	if (c >= 0xF0 && c <= 0xF4)
		return 4;
	return 0;
}

/* UTF-8 by the byte ranges of RFC 3629 section 4, independent of lib/ws. */
static bool utf8_ok(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = s[i];
		size_t k = seq_len(c);
		if (k == 0 || n - i < k)
			return false;
		uint8_t lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
		uint8_t hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
		for (size_t j = 1; j < k; j++, lo = 0x80, hi = 0xBF)
			if (s[i + j] < lo || s[i + j] > hi)
				return false;
		i += k;
	}
	return true;
}

/* RFC 6455 section 7.4: the codes a peer may send. */
static bool close_code_ok(unsigned code)
{
	switch (code / 1000) {
	case 1: return code <= 1003 || (code >= 1007 && code <= 1014);
	case 3:
	case 4: return true;
	default: return false;
	}
}

static void check_promises(enum kb_ws_op op, const uint8_t *data, size_t len)
{
	KB_REQUIRE(data != NULL);
	switch (op) {
	case KB_WS_TEXT: KB_REQUIRE(len <= MAX_MESSAGE && utf8_ok(data, len)); break;
	case KB_WS_BINARY: KB_REQUIRE(len <= MAX_MESSAGE); break;
	case KB_WS_PING:
	case KB_WS_PONG: KB_REQUIRE(len <= 125); break;
	case KB_WS_CLOSE:
		KB_REQUIRE(len <= 125 && len != 1);
		KB_REQUIRE(len == 0 || (close_code_ok((unsigned)(data[0] << 8 | data[1])) &&
					utf8_ok(data + 2, len - 2)));
		break;
	default: abort(); /* not an opcode of a message */
	}
}

static int on_msg(void *arg, enum kb_ws_op op, const uint8_t *data, size_t len)
{
	struct trace *t = arg;
	check_promises(op, data, len);
	uint8_t head[1 + sizeof(uint64_t)] = {(uint8_t)op};
	uint64_t len64 = len;
	memcpy(head + 1, &len64, sizeof(len64));
	mix(&t->hash, head, sizeof(head));
	mix(&t->hash, data, len);
	t->n++;
	if (t->again)
		KB_REQUIRE(kb_ws_frame(t->again, op, data, len, t->rebuild_mask) == 0);
	return t->n == t->stop_at ? -1 : 0;
}

static void trace_init(struct trace *t)
{
	memset(t, 0, sizeof(*t));
	t->hash = 0xcbf29ce484222325ULL;
}

static int feed_whole(bool server, const uint8_t *data, size_t size, struct trace *t)
{
	struct kb_ws_parser p;
	kb_ws_parser_init(&p, server, MAX_MESSAGE);
	int rc = kb_ws_feed(&p, data, size, on_msg, t);
	/* Stays: an error, a close (0) or a stop. */
	if (p.closed)
		KB_REQUIRE(kb_ws_feed(&p, data, size, on_msg, t) == rc);
	kb_ws_parser_free(&p);
	return rc;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The result of the last feed, in cuts of 0 to 511 bytes. */
static int feed_cut(bool server, const uint8_t *data, size_t size, struct trace *t)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL ^ size;
	for (size_t i = 0; i < size && i < 8; i++)
		s = s * 131 + data[i];
	if (s == 0)
		s = 1;
	struct kb_ws_parser p;
	kb_ws_parser_init(&p, server, MAX_MESSAGE);
	int rc = kb_ws_feed(&p, data, 0, on_msg, t);
	size_t at = 0;
	while (at < size) {
		uint64_t r = next(&s);
		size_t step = (r & 3) == 0 ? (r >> 8) % 512 : (r >> 8) % 8;
		if (step > size - at)
			step = size - at;
		rc = kb_ws_feed(&p, data + at, step, on_msg, t);
		at += step;
	}
	kb_ws_parser_free(&p);
	return rc;
}

static void check_role(bool server, const uint8_t *data, size_t size)
{
	struct trace whole, cut, stop, back;
	struct kb_buf again = {0};
	trace_init(&whole);
	whole.again = &again;
	whole.rebuild_mask = server; /* what a client sends a server is masked */
	int rc = feed_whole(server, data, size, &whole);
	KB_REQUIRE(rc == 0 || rc == KB_WS_CLOSE_PROTOCOL || rc == KB_WS_CLOSE_BAD_DATA ||
		   rc == KB_WS_CLOSE_TOO_BIG);

	trace_init(&cut);
	KB_REQUIRE(feed_cut(server, data, size, &cut) == rc);
	KB_REQUIRE(cut.n == whole.n && cut.hash == whole.hash);

	/* Stopped at the k-th message (k from the input), with k <= 4. */
	trace_init(&stop);
	stop.stop_at = size ? 1 + data[size - 1] % 4 : 1;
	int src = feed_whole(server, data, size, &stop);
	KB_REQUIRE(whole.n >= stop.stop_at ? src == -1 && stop.n == stop.stop_at
					   : src == rc && stop.n == whole.n);

	/* Framed again in the peer's role, the messages read the same. */
	trace_init(&back);
	KB_REQUIRE(feed_whole(server, (const uint8_t *)again.data, again.len, &back) == 0);
	KB_REQUIRE(back.n == whole.n && back.hash == whole.hash);
	kb_buf_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_role(true, data, size);
	check_role(false, data, size);
	return 0;
}
