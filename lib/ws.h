/* SPDX-License-Identifier: Apache-2.0 */
/*
 * WebSocket framing (RFC 6455) over an upgraded HTTP/1.1 connection: the
 * opening handshake's accept value, an incremental frame parser that
 * reassembles fragmented messages, and frame building.
 *
 * Used by the host stand-in's pods/exec (tests/host/standin_exec.c)
 * in the server role: client frames must be masked (section 5.1), frames
 * sent are not. The client role (masked output, unmasked input expected) is
 * there for tests.
 *
 * Limits: a control frame carries at most 125 bytes and is never fragmented;
 * a data message over the parser's max_message is refused with close code
 * 1009; a text message that is not UTF-8 with 1007; anything else against
 * section 5 (reserved bits, unknown opcodes, an unmasked client frame, a
 * continuation without a start, a new message inside a fragmented one, a
 * 64-bit length with the top bit set) with 1002.
 *
 * Threading: a parser belongs to one thread; kb_ws_accept may be called
 * from any thread.
 */
#ifndef KB_WS_H
#define KB_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/util.h"

enum kb_ws_op {
	KB_WS_CONT = 0x0,
	KB_WS_TEXT = 0x1,
	KB_WS_BINARY = 0x2,
	KB_WS_CLOSE = 0x8,
	KB_WS_PING = 0x9,
	KB_WS_PONG = 0xA,
};

/* Close codes (section 7.4.1). */
#define KB_WS_CLOSE_NORMAL     1000
#define KB_WS_CLOSE_GOING_AWAY 1001
#define KB_WS_CLOSE_PROTOCOL   1002
#define KB_WS_CLOSE_BAD_DATA   1007
#define KB_WS_CLOSE_POLICY     1008
#define KB_WS_CLOSE_TOO_BIG    1009
#define KB_WS_CLOSE_INTERNAL   1011

#define KB_WS_ACCEPT_LEN 28 /* base64 of a SHA-1 digest */

/*
 * Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64 of the SHA-1
 * of the key (surrounding spaces trimmed) and the GUID of section 1.3, into
 * out (KB_WS_ACCEPT_LEN + 1 bytes). 0, -EINVAL when the key is not the
 * base64 of 16 bytes, 24 characters with the "==" padding (section 4.2.1:
 * the server then refuses the handshake), or -ENOMEM / -EIO.
 */
int kb_ws_accept(const char *key, char out[KB_WS_ACCEPT_LEN + 1]);

/*
 * One complete message (data reassembled from its fragments; opcode
 * KB_WS_TEXT or KB_WS_BINARY) or one control frame (KB_WS_PING, KB_WS_PONG,
 * KB_WS_CLOSE with its raw payload: a 2-byte code then a reason, or empty).
 * `data` is borrowed for the call. Return 0 to go on, or a negative value
 * to stop kb_ws_feed, which then returns it.
 */
typedef int (*kb_ws_msg_cb)(void *arg, enum kb_ws_op op, const uint8_t *data, size_t len);

struct kb_ws_parser {
	/* settings */
	bool server;        /* expect masked frames (the server role) */
	size_t max_message; /* largest data message, reassembled */
	/* private */
	uint8_t hdr[14];
	unsigned hdr_len;
	bool in_frame; /* header parsed, payload being read */
	uint8_t op;    /* opcode of the frame being read */
	bool fin;
	bool masked;
	uint8_t mask[4];
	uint64_t left;     /* payload bytes of the frame still to read */
	uint64_t pos;      /* payload bytes of the frame read (mask index) */
	uint8_t msg_op;    /* opcode of the data message being read, 0 between messages */
	struct kb_buf msg; /* data message being reassembled */
	uint8_t ctl[125];  /* control frame payload */
	unsigned ctl_len;
	bool closed; /* a close frame was delivered or an error seen */
	int err;     /* what kb_ws_feed returns once closed: 0 or the error */
};

/* A parser for the server role (server true) or the client role. */
void kb_ws_parser_init(struct kb_ws_parser *p, bool server, size_t max_message);
void kb_ws_parser_free(struct kb_ws_parser *p);

/*
 * Feeds bytes from the peer, in any cut. Calls cb for each message and
 * control frame completed. Returns 0; a close code (KB_WS_CLOSE_PROTOCOL,
 * KB_WS_CLOSE_BAD_DATA, KB_WS_CLOSE_TOO_BIG) when the peer broke the
 * protocol, after which the caller sends a close frame with that code and
 * closes (further feeds return the same code); or the callback's negative
 * value, after which further feeds return the same value; -ENOMEM likewise.
 * Bytes after a close frame are ignored (0). A text message is checked for
 * UTF-8 once complete, so 1007 comes with its final frame.
 */
int kb_ws_feed(struct kb_ws_parser *p, const uint8_t *data, size_t len, kb_ws_msg_cb cb, void *arg);

/*
 * Appends one unfragmented frame of `op` with `len` bytes of payload to out
 * (fin set; masked with a random key when `mask`, the client role).
 * `payload` is borrowed for the call (may be NULL when len is 0).
 * 0, -EINVAL (a control frame over 125 bytes, KB_WS_CONT, an unknown
 * opcode), -EIO (no random bytes for the mask) or -ENOMEM; out is unchanged
 * on error.
 */
int kb_ws_frame(struct kb_buf *out, enum kb_ws_op op, const void *payload, size_t len, bool mask);

/* Appends a close frame with `code` and a reason (may be NULL; cut to fit
 * 123 bytes on a UTF-8 boundary). 0, -EIO (mask) or -ENOMEM. */
int kb_ws_close_frame(struct kb_buf *out, uint16_t code, const char *reason, bool mask);

#endif
