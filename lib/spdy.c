/* SPDX-License-Identifier: Apache-2.0 */
#include "lib/spdy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/log.h"
#include "lib/util.h"

#define MAX_CONTROL (64 * 1024) /* control frame payload */
#define MAX_BLOCK   (64 * 1024) /* inflated header block */
#define MAX_HEADERS 256
#define VERSION     3

enum {
	SYN_STREAM = 1,
	SYN_REPLY = 2,
	RST_STREAM = 3,
	SETTINGS = 4,
	PING = 6,
	GOAWAY = 7,
	HEADERS = 8,
	WINDOW_UPDATE = 9,
};
#define FLAG_FIN 0x01

/* SPDY/3's preset dictionary for header blocks (its draft, 2.6.10.1): header
 * names and values as length-prefixed strings, then common text. 1423
 * bytes; zlib knows it by its Adler-32, 0xe3c6a7c2. */
static const char dictionary[] =
    "\x00\x00\x00\x07options\x00\x00\x00\x04head\x00\x00\x00\x04post\x00\x00\x00\x03pu"
    "t\x00\x00\x00\x06"
    "delete\x00\x00\x00\x05trace\x00\x00\x00\x06"
    "accept\x00\x00\x00"
    "\x0e"
    "accept-charset\x00\x00\x00\x0f"
    "accept-encoding\x00\x00\x00\x0f"
    "accept-lan"
    "guage\x00\x00\x00\x0d"
    "accept-ranges\x00\x00\x00\x03"
    "age\x00\x00\x00\x05"
    "allow\x00"
    "\x00\x00\x0d"
    "authorization\x00\x00\x00\x0d"
    "cache-control\x00\x00\x00\x0a"
    "conne"
    "ction\x00\x00\x00\x0c"
    "content-base\x00\x00\x00\x10"
    "content-encoding\x00\x00\x00"
    "\x10"
    "content-language\x00\x00\x00\x0e"
    "content-length\x00\x00\x00\x10"
    "content-l"
    "ocation\x00\x00\x00\x0b"
    "content-md5\x00\x00\x00\x0d"
    "content-range\x00\x00\x00\x0c"
    "content-type\x00\x00\x00\x04"
    "date\x00\x00\x00\x04"
    "etag\x00\x00\x00\x06"
    "expect\x00"
    "\x00\x00\x07"
    "expires\x00\x00\x00\x04"
    "from\x00\x00\x00\x04host\x00\x00\x00\x08if"
    "-match\x00\x00\x00\x11if-modified-since\x00\x00\x00\x0dif-none-match\x00\x00\x00\x08"
    "if-range\x00\x00\x00\x13if-unmodified-since\x00\x00\x00\x0dlast-modified\x00\x00\x00"
    "\x08location\x00\x00\x00\x0cmax-forwards\x00\x00\x00\x06pragma\x00\x00\x00\x12pro"
    "xy-authenticate\x00\x00\x00\x13proxy-authorization\x00\x00\x00\x05range\x00\x00\x00"
    "\x07referer\x00\x00\x00\x0bretry-after\x00\x00\x00\x06server\x00\x00\x00\x02te\x00"
    "\x00\x00\x07trailer\x00\x00\x00\x11transfer-encoding\x00\x00\x00\x07upgrade\x00\x00"
    "\x00\x0auser-agent\x00\x00\x00\x04vary\x00\x00\x00\x03via\x00\x00\x00\x07warning\x00"
    "\x00\x00\x10www-authenticate\x00\x00\x00\x06method\x00\x00\x00\x03get\x00\x00\x00"
    "\x06status\x00\x00\x00\x06"
    "200 OK\x00\x00\x00\x07version\x00\x00\x00\x08HTTP/1.1"
    "\x00\x00\x00\x03url\x00\x00\x00\x06public\x00\x00\x00\x0aset-cookie\x00\x00\x00\x0a"
    "keep-alive\x00\x00\x00\x06origin1001012012022052063003023033043053063074024054064"
    "07408409410411412413414415416417502504505203 Non-Authoritative Information204 No "
    "Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not F"
    "ound500 Internal Server Error501 Not Implemented503 Service UnavailableJan Feb Ma"
    "r Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun"
    ", GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,application/"
    "xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharse"
    "t=utf-8charset=iso-8859-1,utf-,*,enq=0.";
#define DICT_LEN (sizeof(dictionary) - 1)

struct kb_spdy {
	struct kb_spdy_cbs cb;
	void *arg;
	z_stream zin, zout;
	bool zin_ok, zout_ok;
	uint8_t hdr[8]; /* the frame header being read */
	unsigned hdr_len;
	bool in_frame;
	bool control;
	uint16_t type;
	uint8_t flags;
	uint32_t stream;     /* DATA: its stream */
	uint32_t left;       /* payload bytes still to come */
	struct kb_buf ctl;   /* control frame payload */
	struct kb_buf block; /* inflated header block */
	uint32_t last_id;    /* highest stream the client opened */
	int err;
};

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

kb_spdy_t *kb_spdy_new(const struct kb_spdy_cbs *cbs, void *arg)
{
	kb_spdy_t *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cb = *cbs;
	s->arg = arg;
	s->zin_ok = inflateInit(&s->zin) == Z_OK;
	s->zout_ok = deflateInit(&s->zout, Z_DEFAULT_COMPRESSION) == Z_OK &&
		     deflateSetDictionary(&s->zout, (const Bytef *)dictionary, DICT_LEN) == Z_OK;
	if (!s->zin_ok || !s->zout_ok) {
		kb_spdy_free(s);
		return NULL;
	}
	return s;
}

void kb_spdy_free(kb_spdy_t *s)
{
	if (!s)
		return;
	if (s->zin_ok)
		inflateEnd(&s->zin);
	if (s->zout_ok)
		deflateEnd(&s->zout);
	kb_buf_free(&s->ctl);
	kb_buf_free(&s->block);
	free(s);
}

const char *kb_spdy_header_get(const struct kb_spdy_header *h, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(h[i].name, name) == 0)
			return h[i].value;
	return NULL;
}

/* ---- writing ---- */

static int send_control(kb_spdy_t *s, uint16_t type, uint8_t flags, const uint8_t *body, size_t len)
{
	if (len > 0xffffff)
		return -EINVAL;
	struct kb_buf b = {0};
	int rc = kb_buf_reserve(&b, 8 + len);
	if (rc < 0)
		return rc;
	uint8_t *p = (uint8_t *)b.data;
	p[0] = 0x80;
	p[1] = VERSION;
	p[2] = (uint8_t)(type >> 8);
	p[3] = (uint8_t)type;
	put32(p + 4, (uint32_t)len);
	p[4] = flags;
	if (len)
		memcpy(p + 8, body, len);
	rc = s->cb.write(s->arg, p, 8 + len);
	kb_buf_free(&b);
	return rc;
}

/* Appends the compressed header block of h[0..n) to out. */
static int deflate_block(kb_spdy_t *s, const struct kb_spdy_header *h, size_t n, struct kb_buf *out)
{
	struct kb_buf raw = {0};
	uint8_t num[4];
	put32(num, (uint32_t)n);
	int rc = kb_buf_append(&raw, (const char *)num, 4);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const char *kv[2] = {h[i].name, h[i].value};
		for (int j = 0; rc == 0 && j < 2; j++) {
			put32(num, (uint32_t)strlen(kv[j]));
			rc = kb_buf_append(&raw, (const char *)num, 4);
			if (rc == 0)
				rc = kb_buf_append(&raw, kv[j], strlen(kv[j]));
		}
	}
	s->zout.next_in = (Bytef *)raw.data;
	s->zout.avail_in = (uInt)raw.len;
	while (rc == 0) {
		if ((rc = kb_buf_reserve(out, 256)) < 0)
			break;
		size_t room = out->cap - out->len - 1;
		s->zout.next_out = (Bytef *)out->data + out->len;
		s->zout.avail_out = (uInt)room;
		int z = deflate(&s->zout, Z_SYNC_FLUSH);
		out->len += room - s->zout.avail_out;
		if (z != Z_OK && z != Z_BUF_ERROR)
			rc = -EIO;
		else if (s->zout.avail_in == 0 && s->zout.avail_out != 0)
			break;
	}
	kb_buf_free(&raw);
	return rc;
}

int kb_spdy_reply(kb_spdy_t *s, uint32_t id, const struct kb_spdy_header *h, size_t n, bool fin)
{
	struct kb_buf b = {0};
	int rc = kb_buf_reserve(&b, 4);
	if (rc == 0) {
		put32((uint8_t *)b.data, id & 0x7fffffff);
		b.len = 4;
		rc = deflate_block(s, h, n, &b);
	}
	if (rc == 0)
		rc = send_control(s, SYN_REPLY, fin ? FLAG_FIN : 0, (const uint8_t *)b.data, b.len);
	kb_buf_free(&b);
	return rc;
}

int kb_spdy_data(kb_spdy_t *s, uint32_t id, const void *d, size_t len, bool fin)
{
	const uint8_t *p = d;
	do {
		size_t n = len > 0xffffff ? 0xffffff : len;
		uint8_t hdr[8];
		put32(hdr, id & 0x7fffffff);
		put32(hdr + 4, (uint32_t)n);
		hdr[4] = fin && n == len ? FLAG_FIN : 0;
		struct kb_buf b = {0};
		int rc = kb_buf_append(&b, (const char *)hdr, 8);
		if (rc == 0 && n)
			rc = kb_buf_append(&b, (const char *)p, n);
		if (rc == 0)
			rc = s->cb.write(s->arg, (const uint8_t *)b.data, b.len);
		kb_buf_free(&b);
		if (rc < 0)
			return rc;
		p += n;
		len -= n;
	} while (len > 0);
	return 0;
}

int kb_spdy_rst(kb_spdy_t *s, uint32_t id, uint32_t status)
{
	uint8_t body[8];
	put32(body, id & 0x7fffffff);
	put32(body + 4, status);
	return send_control(s, RST_STREAM, 0, body, 8);
}

static int goaway(kb_spdy_t *s, uint32_t status)
{
	uint8_t body[8];
	put32(body, s->last_id);
	put32(body + 4, status);
	return send_control(s, GOAWAY, 0, body, 8);
}

/* ---- reading ---- */

/* Inflates a header block into s->block. */
static int inflate_block(kb_spdy_t *s, const uint8_t *in, size_t len)
{
	s->block.len = 0;
	s->zin.next_in = (Bytef *)in;
	s->zin.avail_in = (uInt)len;
	while (s->zin.avail_in > 0) {
		if (kb_buf_reserve(&s->block, 1024) < 0)
			return -ENOMEM;
		size_t room = s->block.cap - s->block.len - 1;
		s->zin.next_out = (Bytef *)s->block.data + s->block.len;
		s->zin.avail_out = (uInt)room;
		int z = inflate(&s->zin, Z_SYNC_FLUSH);
		if (z == Z_NEED_DICT) {
			if (inflateSetDictionary(&s->zin, (const Bytef *)dictionary, DICT_LEN) !=
			    Z_OK)
				return -EPROTO;
			continue;
		}
		s->block.len += room - s->zin.avail_out;
		if ((z != Z_OK && z != Z_BUF_ERROR) || s->block.len > MAX_BLOCK)
			return -EPROTO;
		if (z == Z_BUF_ERROR && s->zin.avail_out != 0)
			return -EPROTO; /* no progress with room to spare */
	}
	return 0;
}

/* Parses s->block into h (pointing into it, names and values NUL-ended in
 * place: each length field is overwritten by the previous string's NUL). */
static int parse_block(kb_spdy_t *s, struct kb_spdy_header *h, size_t *n)
{
	/* a block that inflates to nothing has no buffer (data NULL): check the
	 * length before any pointer arithmetic on it */
	if (!s->block.data || s->block.len < 4)
		return -EPROTO;
	uint8_t *p = (uint8_t *)s->block.data, *end = p + s->block.len;
	uint32_t count = get32(p);
	p += 4;
	if (count > MAX_HEADERS)
		return -EPROTO;
	/* Each string is moved one byte back over its length field's last byte,
	 * so that the byte after it (the next length field's first) can be its
	 * NUL; the block's spare byte (kb_buf keeps one) ends the last. */
	for (uint32_t i = 0; i < count; i++) {
		char *str[2];
		for (int j = 0; j < 2; j++) {
			if (end - p < 4)
				return -EPROTO;
			uint32_t len = get32(p);
			if ((size_t)(end - p - 4) < len)
				return -EPROTO;
			memmove(p + 3, p + 4, len);
			p[3 + len] = '\0';
			str[j] = (char *)p + 3;
			p += 4 + len;
		}
		if (!*str[0])
			return -EPROTO;
		for (char *c = str[0]; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		h[i] = (struct kb_spdy_header){str[0], str[1]};
	}
	*n = count;
	return 0;
}

static int control_frame(kb_spdy_t *s)
{
	const uint8_t *p = (const uint8_t *)s->ctl.data;
	size_t len = s->ctl.len;
	struct kb_spdy_header h[MAX_HEADERS];
	size_t n = 0;
	int rc = 0;
	switch (s->type) {
	case SYN_STREAM: {
		if (len < 10)
			return -EPROTO;
		uint32_t id = get32(p) & 0x7fffffff;
		if ((rc = inflate_block(s, p + 10, len - 10)) < 0 ||
		    (rc = parse_block(s, h, &n)) < 0)
			return rc;
		/* client streams are odd and increase */
		if (id == 0 || !(id & 1) || id <= s->last_id)
			return -EPROTO;
		s->last_id = id;
		return s->cb.syn(s->arg, id, h, n, s->flags & FLAG_FIN);
	}
	case HEADERS:
		if (len < 4)
			return -EPROTO;
		return inflate_block(s, p + 4, len - 4); /* kept in step, not used */
	case SYN_REPLY: return -EPROTO;                  /* the server opens no streams */
	case RST_STREAM:
		if (len < 8)
			return -EPROTO;
		return s->cb.rst(s->arg, get32(p) & 0x7fffffff, get32(p + 4));
	case PING:
		if (len != 4)
			return -EPROTO;
		return (get32(p) & 1) ? send_control(s, PING, 0, p, 4) : 0; /* echo the client's */
	case GOAWAY: return s->cb.goaway(s->arg);
	case SETTINGS:
	case WINDOW_UPDATE:
	default: return 0;
	}
}

int kb_spdy_feed(kb_spdy_t *s, const uint8_t *d, size_t len)
{
	if (s->err)
		return s->err;
	int rc = 0;
	while (len > 0 && rc == 0) {
		if (!s->in_frame) {
			size_t take = 8 - s->hdr_len < len ? 8 - s->hdr_len : len;
			memcpy(s->hdr + s->hdr_len, d, take);
			s->hdr_len += (unsigned)take;
			d += take;
			len -= take;
			if (s->hdr_len < 8)
				break;
			s->hdr_len = 0;
			s->in_frame = true;
			s->control = s->hdr[0] & 0x80;
			s->flags = s->hdr[4];
			s->left = get32(s->hdr + 4) & 0xffffff;
			s->ctl.len = 0;
			if (s->control) {
				uint16_t version = (uint16_t)((s->hdr[0] & 0x7f) << 8 | s->hdr[1]);
				s->type = (uint16_t)(s->hdr[2] << 8 | s->hdr[3]);
				if (version != VERSION || s->left > MAX_CONTROL) {
					rc = -EPROTO;
					break;
				}
			} else {
				s->stream = get32(s->hdr) & 0x7fffffff;
			}
			/* a frame without payload is handled below at once */
		}
		if (s->control) {
			size_t take = s->left < len ? s->left : len;
			if (take && kb_buf_append(&s->ctl, (const char *)d, take) < 0) {
				rc = -ENOMEM;
				break;
			}
			d += take;
			len -= take;
			s->left -= (uint32_t)take;
			if (s->left == 0) {
				s->in_frame = false;
				rc = control_frame(s);
			}
		} else {
			size_t take = s->left < len ? s->left : len;
			s->left -= (uint32_t)take;
			bool last = s->left == 0;
			if (last)
				s->in_frame = false;
			if (take > 0 || last)
				rc = s->cb.data(s->arg, s->stream, d, take,
						last && (s->flags & FLAG_FIN));
			d += take;
			len -= take;
		}
	}
	if (rc == -EPROTO) {
		kb_info("spdy", "the client broke the protocol: ending the session");
		goaway(s, KB_SPDY_PROTOCOL_ERROR);
	}
	if (rc < 0)
		s->err = rc;
	return rc;
}
