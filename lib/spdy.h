/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SPDY/3.1 framing, the server side, as Kubernetes' streaming protocols use
 * it (k8s.io/apimachinery's httpstream/spdy over moby's spdystream): the
 * client opens streams (SYN_STREAM with a header block), the server answers
 * each (SYN_REPLY), both send DATA and half-close with FIN, either resets
 * (RST_STREAM); PING is echoed; SETTINGS, WINDOW_UPDATE and HEADERS are
 * read and ignored (spdystream enforces no flow-control window).
 *
 * Header blocks are zlib streams with SPDY/3's preset dictionary, one
 * stream per direction for the whole session: every block, even of a frame
 * that is ignored, goes through the inflater so that it stays in step.
 *
 * Bounds: a control frame is at most 64 KiB, a header block inflates to at
 * most 64 KiB with at most 256 headers. DATA payloads are handed on in the
 * pieces they arrive in, never buffered whole.
 *
 * Threading: a session belongs to one thread.
 */
#ifndef KB_SPDY_H
#define KB_SPDY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kb_spdy kb_spdy_t;

struct kb_spdy_header {
	const char *name; /* lower-case, as SPDY/3 sends them */
	const char *value;
};

/* RST_STREAM status codes used here. */
enum { KB_SPDY_PROTOCOL_ERROR = 1, KB_SPDY_REFUSED_STREAM = 3, KB_SPDY_CANCEL = 5 };

/*
 * What the session reports. Each may return a negative value to stop
 * kb_spdy_feed, which then returns it (the caller is ending the session).
 * Pointers are borrowed for the call.
 */
struct kb_spdy_cbs {
	/* A stream the client opened, with its headers; fin: it sends nothing. */
	int (*syn)(void *arg, uint32_t id, const struct kb_spdy_header *h, size_t n, bool fin);
	/* Bytes on a stream (a piece of one DATA frame); fin with the last. */
	int (*data)(void *arg, uint32_t id, const uint8_t *d, size_t len, bool fin);
	/* The client reset a stream. */
	int (*rst)(void *arg, uint32_t id, uint32_t status);
	/* The client said GOAWAY. */
	int (*goaway)(void *arg);
	/* Sends bytes to the client; < 0 when it is gone. */
	int (*write)(void *arg, const uint8_t *d, size_t len);
};

kb_spdy_t *kb_spdy_new(const struct kb_spdy_cbs *cbs, void *arg);
void kb_spdy_free(kb_spdy_t *s);

/* Bytes from the client, in any cut. 0; -EPROTO when it broke the protocol
 * (a GOAWAY has been sent: end the connection); -ENOMEM; or a callback's
 * negative value. After an error every further feed returns it. */
int kb_spdy_feed(kb_spdy_t *s, const uint8_t *d, size_t len);

/* SYN_REPLY to stream `id` with `n` headers (may be 0). */
int kb_spdy_reply(kb_spdy_t *s, uint32_t id, const struct kb_spdy_header *h, size_t n, bool fin);
/* DATA on stream `id` (len may be 0 with fin: a bare half-close). */
int kb_spdy_data(kb_spdy_t *s, uint32_t id, const void *d, size_t len, bool fin);
int kb_spdy_rst(kb_spdy_t *s, uint32_t id, uint32_t status);

/* Value of header `name` (lower-case) in h[0..n), or NULL. */
const char *kb_spdy_header_get(const struct kb_spdy_header *h, size_t n, const char *name);

#endif
