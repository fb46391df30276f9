/* SPDX-License-Identifier: Apache-2.0 */
/*
 * WebSocket framing (RFC 6455, see ws.h): the handshake's accept value
 * (section 4.2.2), the frame parser (sections 5.2 to 5.5) with UTF-8 and
 * close-code checks (sections 5.5.1, 7.4 and 8.1), and frame building.
 *
 * DESIGN: the parser is a byte-driven state machine so that any cut of the
 * input gives the same messages and the same result. Between frames it
 * gathers the header (2 to 14 bytes) in p->hdr; the first two bytes are
 * checked as soon as they are there (reserved bits, opcode, control frame
 * rules, masking, fragment order), the extended length once it is whole
 * (top bit, max_message against the declared length, before any byte of
 * the payload is stored). The payload is then unmasked while it is copied:
 * control frames into p->ctl (at most 125 bytes), data frames appended to
 * p->msg, which grows with the bytes that arrive, never by the declared
 * length. A message is handed over when its final frame ends; a text
 * message is checked for UTF-8 as a whole at that point.
 */
#include "lib/ws.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "lib/util.h"

#define KEY_LEN     24 /* base64 of 16 bytes, with its "==" */
#define KEY_BYTES   16
#define CTL_MAX     125
#define REASON_MAX  (CTL_MAX - 2)
#define KEEP_MSG    65536 /* p->msg capacity kept between messages */
#define LEN16       126   /* 7-bit length values that announce a longer one */
#define LEN64       127
#define B0_FIN      0x80
#define B0_RSV      0x70
#define B0_OP       0x0F
#define B1_MASK     0x80
#define B1_LEN      0x7F
#define LEN64_LIMIT (UINT64_C(1) << 63)

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* ---- handshake ---- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Section 4.1: the key is the base64 of 16 random bytes, so 24 characters
 * ending in "==". */
static int check_key(const char *key, size_t len)
{
	if (len != KEY_LEN || key[KEY_LEN - 2] != '=' || key[KEY_LEN - 1] != '=')
		return -EINVAL;
	unsigned char *raw;
	size_t raw_len;
	int rc = kb_base64_decode(key, len, &raw, &raw_len);
	if (rc < 0)
		return rc;
	free(raw);
	return raw_len == KEY_BYTES ? 0 : -EINVAL;
}

int kb_ws_accept(const char *key, char out[KB_WS_ACCEPT_LEN + 1])
{
	size_t len = strlen(key);
	while (len > 0 && is_blank(key[len - 1]))
		len--;
	while (len > 0 && is_blank(*key)) {
		key++;
		len--;
	}
	int rc = check_key(key, len);
	if (rc < 0)
		return rc;
	char in[KEY_LEN + sizeof(ws_guid) - 1];
	memcpy(in, key, KEY_LEN);
	memcpy(in + KEY_LEN, ws_guid, sizeof(ws_guid) - 1);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	if (EVP_Digest(in, sizeof(in), md, &md_len, EVP_sha1(), NULL) != 1 || md_len != 20)
		return -EIO;
	char *b64 = kb_base64_encode(md, md_len);
	if (!b64)
		return -ENOMEM;
	memcpy(out, b64, KB_WS_ACCEPT_LEN);
	out[KB_WS_ACCEPT_LEN] = '\0';
	free(b64);
	return 0;
}

/* ---- UTF-8 (RFC 3629: no overlongs, no surrogates, nothing over U+10FFFF) ---- */

/* Length of the valid sequence at s[0..n), or 0. */
static size_t utf8_seq(const uint8_t *s, size_t n)
{
	uint8_t c = s[0];
	size_t need;
	uint32_t cp, min;
	if (c < 0x80)
		return 1;
	if ((c & 0xE0) == 0xC0) {
		need = 1, cp = c & 0x1F, min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		need = 2, cp = c & 0x0F, min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		need = 3, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n - 1 < need)
		return 0;
	for (size_t k = 1; k <= need; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[k] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return need + 1;
}

static bool utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t k = utf8_seq(s + i, n - i);
		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

/* ---- parser ---- */

void kb_ws_parser_init(struct kb_ws_parser *p, bool server, size_t max_message)
{
	memset(p, 0, sizeof(*p));
	p->server = server;
	p->max_message = max_message;
}

void kb_ws_parser_free(struct kb_ws_parser *p)
{
	kb_buf_free(&p->msg);
}

static bool is_control(unsigned op)
{
	return op >= KB_WS_CLOSE;
}

static bool is_known(unsigned op)
{
	return op <= KB_WS_BINARY || (op >= KB_WS_CLOSE && op <= KB_WS_PONG);
}

/* The sticky end of parsing: a close code, -ENOMEM or a callback's value. */
static int fail(struct kb_ws_parser *p, int err)
{
	p->closed = true;
	p->err = err;
	return err;
}

/* Header bytes wanted so far: 2, then all of them once the second is in. */
static unsigned hdr_need(const struct kb_ws_parser *p)
{
	if (p->hdr_len < 2)
		return 2;
	unsigned len7 = p->hdr[1] & B1_LEN;
	unsigned need = 2 + (p->hdr[1] & B1_MASK ? 4 : 0);
	if (len7 == LEN16)
		need += 2;
	else if (len7 == LEN64)
		need += 8;
	return need;
}

/* Section 5.2 and 5.4 rules on the first two header bytes. */
static int check_start(const struct kb_ws_parser *p)
{
	unsigned op = p->hdr[0] & B0_OP;
	bool fin = p->hdr[0] & B0_FIN;
	bool masked = p->hdr[1] & B1_MASK;
	if ((p->hdr[0] & B0_RSV) || !is_known(op))
		return KB_WS_CLOSE_PROTOCOL;
	if (is_control(op) && (!fin || (p->hdr[1] & B1_LEN) > CTL_MAX))
		return KB_WS_CLOSE_PROTOCOL;
	if (masked != p->server)
		return KB_WS_CLOSE_PROTOCOL;
	if (op == KB_WS_CONT && p->msg_op == 0)
		return KB_WS_CLOSE_PROTOCOL;
	if ((op == KB_WS_TEXT || op == KB_WS_BINARY) && p->msg_op != 0)
		return KB_WS_CLOSE_PROTOCOL;
	return 0;
}

static uint64_t read_be(const uint8_t *b, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v = (v << 8) | b[i];
	return v;
}

/* The whole header is in p->hdr: the length and mask, then the frame. */
static int start_frame(struct kb_ws_parser *p)
{
	unsigned len7 = p->hdr[1] & B1_LEN;
	unsigned at = 2;
	uint64_t len = len7;
	if (len7 == LEN16) {
		len = read_be(p->hdr + at, 2);
		at += 2;
	} else if (len7 == LEN64) {
		len = read_be(p->hdr + at, 8);
		at += 8;
		if (len >= LEN64_LIMIT)
			return KB_WS_CLOSE_PROTOCOL;
	}
	p->op = p->hdr[0] & B0_OP;
	p->fin = p->hdr[0] & B0_FIN;
	p->masked = p->hdr[1] & B1_MASK;
	if (p->masked)
		memcpy(p->mask, p->hdr + at, 4);
	/* p->msg.len <= max_message: it only grows by frames checked here. */
	if (!is_control(p->op) && len > (uint64_t)(p->max_message - p->msg.len))
		return KB_WS_CLOSE_TOO_BIG;
	if (p->op == KB_WS_TEXT || p->op == KB_WS_BINARY)
		p->msg_op = p->op;
	p->left = len;
	p->pos = 0;
	p->ctl_len = 0;
	p->hdr_len = 0;
	p->in_frame = true;
	return 0;
}

/* Takes header bytes from data[*i..len); starts the frame once they are all in. */
static int read_header(struct kb_ws_parser *p, const uint8_t *data, size_t len, size_t *i)
{
	while (p->hdr_len < hdr_need(p)) {
		if (*i == len)
			return 0;
		p->hdr[p->hdr_len++] = data[(*i)++];
		if (p->hdr_len == 2) {
			int rc = check_start(p);
			if (rc)
				return rc;
		}
	}
	return start_frame(p);
}

static void unmask(struct kb_ws_parser *p, uint8_t *b, size_t n)
{
	if (!p->masked)
		return;
	for (size_t k = 0; k < n; k++)
		b[k] ^= p->mask[(p->pos + k) & 3];
}

/* Takes the payload bytes of the current frame that data[*i..len) holds. 0 or -ENOMEM. */
static int read_payload(struct kb_ws_parser *p, const uint8_t *data, size_t len, size_t *i)
{
	size_t n = len - *i;
	if ((uint64_t)n > p->left)
		n = (size_t)p->left;
	if (n == 0)
		return 0;
	uint8_t *dst;
	if (is_control(p->op)) {
		dst = p->ctl + p->ctl_len;
		memcpy(dst, data + *i, n);
		p->ctl_len += (unsigned)n;
	} else {
		if (kb_buf_append(&p->msg, (const char *)data + *i, n) < 0)
			return -ENOMEM;
		dst = (uint8_t *)p->msg.data + p->msg.len - n;
	}
	unmask(p, dst, n);
	p->pos += n;
	p->left -= n;
	*i += n;
	return 0;
}

/* Section 7.4: codes an endpoint may send in a close frame. */
static bool close_code_valid(unsigned code)
{
	if (code >= 3000 && code <= 4999)
		return true;
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014);
}

static int check_close(const uint8_t *b, size_t n)
{
	if (n == 0)
		return 0;
	if (n == 1 || !close_code_valid((unsigned)read_be(b, 2)))
		return KB_WS_CLOSE_PROTOCOL;
	return utf8_valid(b + 2, n - 2) ? 0 : KB_WS_CLOSE_BAD_DATA;
}

static int end_control(struct kb_ws_parser *p, kb_ws_msg_cb cb, void *arg)
{
	if (p->op == KB_WS_CLOSE) {
		int rc = check_close(p->ctl, p->ctl_len);
		if (rc)
			return rc;
		p->closed = true;
	}
	return cb(arg, (enum kb_ws_op)p->op, p->ctl, p->ctl_len);
}

static int end_data(struct kb_ws_parser *p, kb_ws_msg_cb cb, void *arg)
{
	static const uint8_t empty[1];
	if (!p->fin)
		return 0;
	enum kb_ws_op op = (enum kb_ws_op)p->msg_op;
	const uint8_t *data = p->msg.data ? (const uint8_t *)p->msg.data : empty;
	p->msg_op = 0;
	if (op == KB_WS_TEXT && !utf8_valid(data, p->msg.len))
		return KB_WS_CLOSE_BAD_DATA;
	int rc = cb(arg, op, data, p->msg.len);
	p->msg.len = 0;
	if (p->msg.cap > KEEP_MSG)
		kb_buf_free(&p->msg);
	return rc;
}

int kb_ws_feed(struct kb_ws_parser *p, const uint8_t *data, size_t len, kb_ws_msg_cb cb, void *arg)
{
	if (p->closed)
		return p->err;
	size_t i = 0;
	for (;;) {
		if (!p->in_frame) {
			int rc = read_header(p, data, len, &i);
			if (rc)
				return fail(p, rc);
			if (!p->in_frame)
				return 0;
		}
		if (read_payload(p, data, len, &i) < 0)
			return fail(p, -ENOMEM);
		if (p->left > 0)
			return 0;
		p->in_frame = false;
		int rc = is_control(p->op) ? end_control(p, cb, arg) : end_data(p, cb, arg);
		if (rc)
			return fail(p, rc);
		if (p->closed)
			return 0;
	}
}

/* ---- building ---- */

static unsigned put_header(uint8_t *h, enum kb_ws_op op, size_t len, bool mask)
{
	unsigned n = 2;
	h[0] = (uint8_t)(B0_FIN | op);
	h[1] = mask ? B1_MASK : 0;
	if (len <= CTL_MAX) {
		h[1] |= (uint8_t)len;
	} else if (len <= UINT16_MAX) {
		h[1] |= LEN16;
		for (unsigned k = 0; k < 2; k++)
			h[n++] = (uint8_t)(len >> (8 * (1 - k)));
	} else {
		h[1] |= LEN64;
		for (unsigned k = 0; k < 8; k++)
			h[n++] = (uint8_t)((uint64_t)len >> (8 * (7 - k)));
	}
	return n;
}

int kb_ws_frame(struct kb_buf *out, enum kb_ws_op op, const void *payload, size_t len, bool mask)
{
	if (op == KB_WS_CONT || !is_known(op) || (is_control(op) && len > CTL_MAX) ||
	    (!payload && len > 0))
		return -EINVAL;
	uint8_t h[14];
	unsigned n = put_header(h, op, len, mask);
	uint8_t key[4] = {0};
	if (mask) {
		if (RAND_bytes(key, sizeof(key)) != 1)
			return -EIO;
		memcpy(h + n, key, sizeof(key));
		n += sizeof(key);
	}
	/* kb_buf_reserve doubles its capacity: keep sizes far from SIZE_MAX. */
	if (out->len > SIZE_MAX / 4 || len > SIZE_MAX / 4 || kb_buf_reserve(out, n + len) < 0)
		return -ENOMEM;
	uint8_t *dst = (uint8_t *)out->data + out->len;
	memcpy(dst, h, n);
	dst += n;
	if (len > 0)
		memcpy(dst, payload, len);
	if (mask)
		for (size_t k = 0; k < len; k++)
			dst[k] ^= key[k & 3];
	out->len += n + len;
	out->data[out->len] = '\0';
	return 0;
}

/* Bytes of s[0..len) that fit in max without splitting a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	size_t n = max;
	while (n > 0 && ((uint8_t)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

int kb_ws_close_frame(struct kb_buf *out, uint16_t code, const char *reason, bool mask)
{
	uint8_t b[CTL_MAX];
	size_t n = reason ? utf8_cut(reason, strlen(reason), REASON_MAX) : 0;
	b[0] = (uint8_t)(code >> 8);
	b[1] = (uint8_t)code;
	if (n > 0)
		memcpy(b + 2, reason, n);
	return kb_ws_frame(out, KB_WS_CLOSE, b, n + 2, mask);
}
