/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pods/portforward on the host stand-in (kubicle-standin, standin.h): what
 * a kubelet does for `kubectl port-forward`, with the pod's ports taken to
 * be this machine's loopback ports, since the stand-in's pods have no
 * network of their own. Tests and the local demo use it to drive
 * port-forward end to end through a tenant (tenant -> syncer -> this
 * server); a real host's kubelet connects inside the pod's network.
 *
 * The protocol is portforward.k8s.io over SPDY/3.1 (lib/spdy.h), either on
 * the upgraded connection itself (Upgrade: SPDY/3.1, kubectl up to 1.30) or
 * tunnelled in WebSocket binary messages (subprotocol
 * SPDY/3.1+portforward.k8s.io, kubectl 1.31 and later). For each local
 * connection the client opens two streams with the same `requestid` header:
 * `streamtype: error` and `streamtype: data`, both with the `port`. Once
 * both are there the stand-in connects to 127.0.0.1:port and copies bytes
 * between the data stream and the socket; a half-close either way is passed
 * on (FIN <-> shutdown). A failed connect is written on the error stream in
 * the kubelet's words, then both streams are closed. Streams are answered
 * as the kubelet answers them (SYN_REPLY without headers), a stream without
 * a valid port or type is reset, and a pair not completed within 30 s is
 * given up with an error.
 *
 * Client libraries other than client-go (Python's, JavaScript's) speak the
 * kubelet's older WebSocket protocol instead (subprotocol v4.channel.k8s.io,
 * v4.base64.channel.k8s.io, or none): the ports come in the query, each gets
 * a data channel (2i) and an error channel (2i+1) whose first message is the
 * port as two little-endian bytes, and the session ends once every port's
 * connection has.
 *
 * Bounds: 64 pairs per session (16 ports over the channel protocol); bytes for a socket are queued up to 4 MiB
 * (the client's reading pauses above it); a socket is read while less than
 * 1 MiB waits for the client.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include <openssl/evp.h>

#include "lib/http.h"
#include "lib/log.h"
#include "lib/spdy.h"
#include "lib/util.h"
#include "lib/ws.h"
#include "tests/host/standin.h"

#define PROTO        "portforward.k8s.io"
#define WS_PROTO     "SPDY/3.1+portforward.k8s.io"
#define MAX_PAIRS    64
#define MAX_MESSAGE  (1024 * 1024)
#define IN_HIGH      (4 * 1024 * 1024)
#define OUT_HIGH     (1024 * 1024)
#define RECHECK_MS   20
#define PAIR_WAIT_MS 30000
#define MAX_PORTS    16
#define CH_PROTO     "v4.channel.k8s.io"
#define CH_PROTO_B64 "v4.base64.channel.k8s.io"

struct pf;

struct pair {
	struct pf *pf; /* NULL once the session is gone */
	struct pair *next;
	char id[64]; /* requestid */
	uint16_t port;
	uint32_t err_id, data_id; /* SPDY streams */
	int chan;                 /* channel protocol: the data channel (error: +1) */
	uint64_t born;            /* uv_now when its first stream came */
	uv_tcp_t tcp;
	uv_connect_t connect;
	bool started;        /* tcp initialised: closing frees the pair */
	bool connected;      /* the connect succeeded */
	bool client_fin;     /* the client closed its side of the data stream */
	bool sock_eof;       /* the socket's peer closed its side */
	bool shut;           /* shutdown(2) asked */
	bool done;           /* our side of both streams closed */
	bool reading;        /* uv_read_start active */
	bool closing;        /* uv_close called */
	size_t queued;       /* bytes written to the socket, not yet taken */
	struct kb_buf early; /* data before the connect completed */
};

struct pf {
	kb_http_req_t *http; /* NULL once the client is gone */
	kb_spdy_t *spdy;     /* SPDY, raw or tunnelled; NULL: the channel protocol */
	bool ws;             /* in WebSocket messages */
	bool b64;            /* channel protocol: base64 text messages */
	struct kb_ws_parser wsp;
	struct pair *pairs;
	unsigned npairs;
	uv_loop_t *loop;
	uv_timer_t timer;
	char pod[256]; /* ns/name, for messages */
	char uid[64];
	bool paused;
	bool ending;
};

struct sock_write {
	uv_write_t w;
	struct pair *p;
	size_t len;
	char data[];
};

static void pf_check(struct pf *pf);
static void on_timer(uv_timer_t *t);

/* ---- the transport to the client ---- */

static int client_write(void *arg, const uint8_t *d, size_t len)
{
	struct pf *pf = arg;
	if (!pf->http)
		return -ECONNRESET;
	if (!pf->ws)
		return kb_http_raw_write(pf->http, (const char *)d, len);
	return standin_ws_send(pf->http, KB_WS_BINARY, d, len);
}

/* One message of the channel protocol: the channel, then the bytes (as a
 * digit and base64 in a text message when b64). */
static int chan_write(struct pf *pf, int ch, const void *d, size_t len)
{
	if (!pf->http)
		return -ECONNRESET;
	struct kb_buf msg = {0};
	int rc;
	if (pf->b64) {
		rc = kb_buf_reserve(&msg, 2 + 4 * ((len + 2) / 3));
		if (rc == 0) {
			msg.data[0] = (char)('0' + ch);
			msg.len =
			    1 + (size_t)EVP_EncodeBlock((unsigned char *)msg.data + 1, d, (int)len);
		}
	} else {
		rc = kb_buf_reserve(&msg, len + 1);
		if (rc == 0) {
			msg.data[0] = (char)ch;
			if (len)
				memcpy(msg.data + 1, d, len);
			msg.len = len + 1;
		}
	}
	if (rc == 0)
		rc = standin_ws_send(pf->http, pf->b64 ? KB_WS_TEXT : KB_WS_BINARY, msg.data,
				     msg.len);
	kb_buf_free(&msg);
	return rc;
}

/* Bytes on a pair's data or error stream, with the stream's end (SPDY's FIN;
 * the channel protocol has no end of a channel). */
static int pair_out(struct pf *pf, struct pair *p, bool err, const void *d, size_t len, bool fin)
{
	if (!pf->spdy)
		return len ? chan_write(pf, p->chan + err, d, len) : 0;
	uint32_t id = err ? p->err_id : p->data_id;
	return id ? kb_spdy_data(pf->spdy, id, d, len, fin) : 0;
}

static void pf_end(struct pf *pf);

/* ---- pairs ---- */

static void pair_freed(uv_handle_t *h)
{
	struct pair *p = h->data;
	kb_buf_free(&p->early);
	free(p);
}

/* Unlinks and releases a pair: its socket is closed (freeing it after). */
static void pair_drop(struct pf *pf, struct pair *p)
{
	for (struct pair **pp = &pf->pairs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			pf->npairs--;
			break;
		}
	p->pf = NULL;
	if (p->started) {
		if (!p->closing) {
			p->closing = true;
			uv_close((uv_handle_t *)&p->tcp, pair_freed);
		}
	} else {
		kb_buf_free(&p->early);
		free(p);
	}
}

/* A pair for `port`, linked first in the session (its streams or channel
 * set by the caller); NULL without memory. */
static struct pair *pair_new(struct pf *pf, uint16_t port)
{
	struct pair *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pf = pf;
	p->port = port;
	p->born = uv_now(pf->loop);
	p->next = pf->pairs;
	pf->pairs = p;
	pf->npairs++;
	return p;
}

static struct pair *pair_by_stream(struct pf *pf, uint32_t id)
{
	for (struct pair *p = pf->pairs; p; p = p->next)
		if (p->err_id == id || p->data_id == id)
			return p;
	return NULL;
}

/* Closes our side of both streams (once). */
static void pair_finish(struct pf *pf, struct pair *p)
{
	if (p->done)
		return;
	p->done = true;
	pair_out(pf, p, true, NULL, 0, true);
	pair_out(pf, p, false, NULL, 0, true);
}

/* The channel protocol's session ends with its last connection. */
static void pf_maybe_done(struct pf *pf)
{
	if (!pf->spdy && !pf->pairs)
		pf_end(pf);
}

/* The kubelet's message on the error stream, then both streams closed. */
static void pair_fail(struct pf *pf, struct pair *p, const char *why)
{
	if (!p->done) {
		char msg[512];
		int n = snprintf(msg, sizeof(msg), "error forwarding port %u to pod %s, uid %s: %s",
				 p->port, pf->pod, pf->uid, why);
		pair_out(pf, p, true, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1,
			 false);
	}
	pair_finish(pf, p);
	pair_drop(pf, p);
	pf_maybe_done(pf);
}

/* Done with a pair once both directions have ended. */
static void pair_maybe_end(struct pf *pf, struct pair *p)
{
	if (p->sock_eof && p->client_fin && p->queued == 0) {
		pair_finish(pf, p);
		pair_drop(pf, p);
		pf_maybe_done(pf);
	}
}

static void sock_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	static char slab[64 * 1024]; /* one loop thread; the data is sent before the next read */
	*buf = uv_buf_init(slab, sizeof(slab));
}

static void sock_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct pair *p = s->data;
	struct pf *pf = p->pf;
	if (!pf || n == 0)
		return;
	if (n < 0) {
		uv_read_stop(s);
		p->reading = false;
		p->sock_eof = true;
		pair_finish(pf, p); /* our side of both streams ends */
		if (n != UV_EOF) {
			pair_drop(pf, p);
			pf_maybe_done(pf);
			return;
		}
		/* the client may still send (the channel protocol cannot say
		 * that it is done: the pair ends now) */
		if (!pf->spdy)
			p->client_fin = true;
		pair_maybe_end(pf, p);
		return;
	}
	if (pair_out(pf, p, false, buf->base, (size_t)n, false) < 0)
		return; /* the client is gone: the abort callback ends everything */
	if (pf->http && kb_http_stream_pending(pf->http) > OUT_HIGH) {
		uv_read_stop(s);
		p->reading = false;
		pf_check(pf); /* reads again once the client has taken it */
	}
}

static void sock_written(uv_write_t *w, int status)
{
	struct sock_write *sw = (struct sock_write *)w;
	struct pair *p = sw->p;
	p->queued -= sw->len;
	free(sw);
	struct pf *pf = p->pf;
	if (!pf)
		return;
	if (status < 0) {
		pair_finish(pf, p);
		pair_drop(pf, p);
		pf_maybe_done(pf);
		return;
	}
	pf_check(pf);
	pair_maybe_end(pf, p);
}

static void sock_shut(uv_shutdown_t *req, int status)
{
	(void)status;
	free(req);
}

static int sock_send(struct pair *p, const uint8_t *d, size_t len)
{
	struct sock_write *sw = malloc(sizeof(*sw) + len);
	if (!sw)
		return -ENOMEM;
	sw->p = p;
	sw->len = len;
	memcpy(sw->data, d, len);
	uv_buf_t b = uv_buf_init(sw->data, (unsigned)len);
	int rc = uv_write(&sw->w, (uv_stream_t *)&p->tcp, &b, 1, sock_written);
	if (rc < 0) {
		free(sw);
		return rc;
	}
	p->queued += len;
	return 0;
}

static void sock_shutdown(struct pair *p)
{
	if (p->shut || !p->connected)
		return;
	uv_shutdown_t *req = malloc(sizeof(*req));
	if (req && uv_shutdown(req, (uv_stream_t *)&p->tcp, sock_shut) == 0)
		p->shut = true;
	else
		free(req);
}

/* Bytes from the client for a pair's socket: written, or kept until the
 * connect completes. 0, or -ENOMEM (a failed write ends the pair). */
static int pair_take(struct pf *pf, struct pair *p, const uint8_t *d, size_t n)
{
	if (!p->connected)
		return kb_buf_append(&p->early, (const char *)d, n);
	if (sock_send(p, d, n) < 0)
		pair_fail(pf, p, "write failed");
	return 0;
}

static void connected(uv_connect_t *c, int status)
{
	struct pair *p = c->data;
	struct pf *pf = p->pf;
	if (!pf)
		return;
	if (status < 0) {
		char why[160];
		snprintf(why, sizeof(why), "failed to connect to 127.0.0.1:%u: %s", p->port,
			 uv_strerror(status));
		kb_info("standin", "port-forward %s: %s", pf->pod, why);
		pair_fail(pf, p, why);
		return;
	}
	p->connected = true;
	if (p->early.len && sock_send(p, (const uint8_t *)p->early.data, p->early.len) < 0) {
		pair_fail(pf, p, "write failed");
		return;
	}
	kb_buf_free(&p->early);
	if (p->client_fin)
		sock_shutdown(p);
	if (uv_read_start((uv_stream_t *)&p->tcp, sock_alloc, sock_read) == 0)
		p->reading = true;
	pf_check(pf);
}

static void pair_start(struct pf *pf, struct pair *p)
{
	struct sockaddr_in sa;
	uv_ip4_addr("127.0.0.1", p->port, &sa);
	uv_tcp_init(pf->loop, &p->tcp);
	p->tcp.data = p;
	p->started = true;
	p->connect.data = p;
	int rc = uv_tcp_connect(&p->connect, &p->tcp, (const struct sockaddr *)&sa, connected);
	if (rc < 0)
		pair_fail(pf, p, uv_strerror(rc));
}

/* ---- SPDY events ---- */

static int on_syn(void *arg, uint32_t id, const struct kb_spdy_header *h, size_t n, bool fin)
{
	(void)fin;
	struct pf *pf = arg;
	const char *type = kb_spdy_header_get(h, n, "streamtype");
	const char *port = kb_spdy_header_get(h, n, "port");
	const char *req = kb_spdy_header_get(h, n, "requestid");
	char *end = NULL;
	unsigned long pn = port ? strtoul(port, &end, 10) : 0;
	bool is_err = type && strcmp(type, "error") == 0;
	bool is_data = type && strcmp(type, "data") == 0;
	if (!port || !*port || *end || pn < 1 || pn > 65535 || (!is_err && !is_data)) {
		kb_info("standin", "port-forward %s: stream %u refused (port %s, streamtype %s)",
			pf->pod, id, port ? port : "-", type ? type : "-");
		return kb_spdy_rst(pf->spdy, id, KB_SPDY_REFUSED_STREAM);
	}
	/* clients before request ids: the error stream's id, the data stream's minus 2 */
	char rid[64];
	if (req && *req)
		snprintf(rid, sizeof(rid), "%s", req);
	else
		snprintf(rid, sizeof(rid), "%u", is_err ? id : id - 2);
	struct pair *p = pf->pairs;
	while (p && strcmp(p->id, rid) != 0)
		p = p->next;
	if (!p) {
		if (pf->npairs >= MAX_PAIRS)
			return kb_spdy_rst(pf->spdy, id, KB_SPDY_REFUSED_STREAM);
		if (!(p = pair_new(pf, (uint16_t)pn)))
			return -ENOMEM;
		snprintf(p->id, sizeof(p->id), "%s", rid);
	}
	if ((is_err && p->err_id) || (is_data && p->data_id)) {
		int rc = kb_spdy_rst(pf->spdy, id, KB_SPDY_PROTOCOL_ERROR);
		pair_fail(pf, p,
			  is_err ? "error stream already assigned"
				 : "data stream already assigned");
		return rc;
	}
	*(is_err ? &p->err_id : &p->data_id) = id;
	int rc = kb_spdy_reply(pf->spdy, id, NULL, 0, false);
	if (rc == 0 && p->err_id && p->data_id)
		pair_start(pf, p);
	pf_check(pf); /* a pair still waiting for its other stream is timed */
	return rc;
}

static int on_data(void *arg, uint32_t id, const uint8_t *d, size_t len, bool fin)
{
	struct pf *pf = arg;
	struct pair *p = pair_by_stream(pf, id);
	if (!p || id != p->data_id || p->client_fin)
		return 0; /* the error stream carries nothing from the client */
	if (len && pair_take(pf, p, d, len) < 0)
		return -ENOMEM;
	if (len && !p->pf)
		return 0; /* the write failed: the pair is gone */
	if (fin) {
		p->client_fin = true;
		sock_shutdown(p);
		pair_maybe_end(pf, p);
		return 0;
	}
	pf_check(pf);
	return 0;
}

static int on_rst(void *arg, uint32_t id, uint32_t status)
{
	(void)status;
	struct pf *pf = arg;
	struct pair *p = pair_by_stream(pf, id);
	if (p) {
		p->done = true; /* nothing more is sent on a reset pair */
		pair_drop(pf, p);
	}
	return 0;
}

static int on_goaway(void *arg)
{
	(void)arg;
	return -ECONNRESET;
}

static const struct kb_spdy_cbs spdy_cbs = {on_syn, on_data, on_rst, on_goaway, client_write};

/* ---- the session ---- */

static void pf_timer_closed(uv_handle_t *h)
{
	struct pf *pf = h->data;
	if (pf->ws)
		kb_ws_parser_free(&pf->wsp);
	kb_spdy_free(pf->spdy);
	free(pf);
}

static void pf_release(struct pf *pf)
{
	while (pf->pairs) {
		pf->pairs->done = true;
		pair_drop(pf, pf->pairs);
	}
	uv_close((uv_handle_t *)&pf->timer, pf_timer_closed);
}

static void pf_end(struct pf *pf)
{
	if (pf->ending)
		return;
	pf->ending = true;
	if (pf->http && pf->ws) {
		standin_ws_end(pf->http, KB_WS_CLOSE_NORMAL);
	} else if (pf->http) {
		kb_http_req_on_abort(pf->http, NULL, NULL);
		kb_http_raw_end(pf->http);
	}
	pf->http = NULL;
	pf_release(pf);
}

/* Flow control both ways, and pairs that never completed. */
static void pf_check(struct pf *pf)
{
	if (!pf->http)
		return;
	size_t queued = 0;
	bool busy = false; /* flow control: look again soon */
	uint64_t due = 0;  /* the first pair that waits for its other stream gives up then */
	uint64_t now = uv_now(pf->loop);
	for (struct pair *p = pf->pairs, *next; p; p = next) {
		next = p->next;
		queued += p->queued + p->early.len;
		if (!p->started && now - p->born >= PAIR_WAIT_MS) {
			pair_fail(pf, p, "timed out waiting for the other stream");
			continue;
		}
		if (!p->started && (!due || p->born + PAIR_WAIT_MS < due))
			due = p->born + PAIR_WAIT_MS;
		if (p->connected && !p->reading && !p->sock_eof) {
			if (kb_http_stream_pending(pf->http) <= OUT_HIGH) {
				if (uv_read_start((uv_stream_t *)&p->tcp, sock_alloc, sock_read) ==
				    0)
					p->reading = true;
			} else {
				busy = true;
			}
		}
	}
	if (!pf->http)
		return; /* a pair that failed ended the session */
	bool pause = queued > IN_HIGH;
	if (pause != pf->paused) {
		pf->paused = pause;
		kb_http_raw_pause(pf->http, pause);
	}
	uint64_t wait = busy || pause ? RECHECK_MS : due ? due - now : 0;
	if (wait)
		uv_timer_start(&pf->timer, on_timer, wait, 0);
	else
		uv_timer_stop(&pf->timer);
}

static void on_timer(uv_timer_t *t)
{
	pf_check(t->data);
}

/* A client message of the channel protocol: bytes for a port's socket
 * (its data channel; the error channel carries nothing from the client). */
static int chan_in(struct pf *pf, const uint8_t *data, size_t len)
{
	if (len == 0)
		return 0;
	int ch = pf->b64 ? data[0] - '0' : data[0];
	struct pair *p = pf->pairs;
	while (p && p->chan != ch)
		p = p->next;
	if (!p || len == 1)
		return 0;
	uint8_t *dec = NULL;
	const uint8_t *d = data + 1;
	size_t n = len - 1;
	if (pf->b64) {
		dec = malloc(n / 4 * 3 + 3);
		if (!dec)
			return -ENOMEM;
		int m = EVP_DecodeBlock(dec, d, (int)n);
		if (m < 0) {
			free(dec);
			return 0; /* not base64: dropped */
		}
		/* EVP_DecodeBlock counts the padding's bytes */
		while (n > 0 && d[n - 1] == '=' && m > 0) {
			n--;
			m--;
		}
		d = dec;
		n = (size_t)m;
	}
	int rc = pair_take(pf, p, d, n);
	free(dec);
	if (rc == 0 && pf->http)
		pf_check(pf);
	return rc;
}

static int on_message(void *arg, enum kb_ws_op op, const uint8_t *data, size_t len)
{
	struct pf *pf = arg;
	switch (op) {
	case KB_WS_PING: standin_ws_send(pf->http, KB_WS_PONG, data, len); return 0;
	case KB_WS_CLOSE: return -ECONNRESET;
	case KB_WS_BINARY:
		if (pf->spdy)
			return kb_spdy_feed(pf->spdy, data, len);
		return pf->b64 ? 0 : chan_in(pf, data, len);
	case KB_WS_TEXT: return pf->b64 ? chan_in(pf, data, len) : 0;
	default: return 0;
	}
}

static void from_client(kb_http_req_t *req, const char *data, size_t len, void *arg)
{
	(void)req;
	struct pf *pf = arg;
	int rc = pf->ws ? kb_ws_feed(&pf->wsp, (const uint8_t *)data, len, on_message, pf)
			: kb_spdy_feed(pf->spdy, (const uint8_t *)data, len);
	if (rc != 0)
		pf_end(pf);
}

static void client_gone(kb_http_req_t *req, void *arg)
{
	(void)req;
	struct pf *pf = arg;
	pf->http = NULL;
	pf_release(pf);
}

/* The ports of a channel-protocol request (`ports`, repeated or
 * comma-separated), as the kubelet reads them; 0 or -1 (answered). */
static int chan_ports(kb_http_req_t *req, uint16_t *ports, int *n)
{
	char *buf = strdup(req->query ? req->query : ""), *cur = buf, *k, *v;
	int rc = buf ? 0 : -1;
	*n = 0;
	while (rc == 0 && kb_http_query_next(&cur, &k, &v)) {
		if (strcmp(k, "ports") != 0)
			continue;
		if (!*v) {
			standin_reply_status(req, 400, "BadRequest",
					     "query parameter \"ports\" cannot be empty");
			rc = -1;
			break;
		}
		char *save = NULL;
		for (char *t = strtok_r(v, ",", &save); t && rc == 0;
		     t = strtok_r(NULL, ",", &save)) {
			char *end;
			unsigned long port = strtoul(t, &end, 10);
			if (*end || !*t || port > 65535 || *t == '-') {
				standin_reply_status(req, 400, "BadRequest",
						     "unable to parse \"%s\" as a port", t);
				rc = -1;
			} else if (port < 1) {
				standin_reply_status(req, 400, "BadRequest",
						     "port \"%s\" must be > 0", t);
				rc = -1;
			} else if (*n == MAX_PORTS) {
				standin_reply_status(req, 400, "BadRequest",
						     "at most %d ports at once", MAX_PORTS);
				rc = -1;
			} else {
				ports[(*n)++] = (uint16_t)port;
			}
		}
	}
	if (rc == 0 && *n == 0) {
		standin_reply_status(req, 400, "BadRequest",
				     "query parameter \"ports\" is required");
		rc = -1;
	}
	free(buf);
	return rc;
}

void standin_portforward(struct standin *st, kb_http_req_t *http, const char *id, const json_t *pod)
{
	const char *up = kb_http_req_header(http, "upgrade");
	char head[256];
	bool ws = up && strcasecmp(up, "websocket") == 0;
	bool tunnel = !ws, b64 = false;
	uint16_t ports[MAX_PORTS];
	int nports = 0;
	if (ws) {
		char accept[KB_WS_ACCEPT_LEN + 1];
		if (standin_ws_accept(http, accept) < 0)
			return;
		/* SPDY tunnelled (client-go), else the kubelet's channels */
		const char *proto = NULL;
		if (kb_http_req_offers(http, "sec-websocket-protocol", WS_PROTO))
			proto = WS_PROTO, tunnel = true;
		else if (kb_http_req_offers(http, "sec-websocket-protocol", CH_PROTO))
			proto = CH_PROTO;
		else if (kb_http_req_offers(http, "sec-websocket-protocol", CH_PROTO_B64))
			proto = CH_PROTO_B64, b64 = true;
		if (!proto && kb_http_req_header(http, "sec-websocket-protocol")) {
			standin_reply_status(
			    http, 400, "BadRequest",
			    "port-forward over WebSocket needs the subprotocol %s, "
			    "%s or %s",
			    WS_PROTO, CH_PROTO, CH_PROTO_B64);
			return;
		}
		if (!tunnel && chan_ports(http, ports, &nports) < 0)
			return;
		int n = snprintf(head, sizeof(head),
				 "Upgrade: websocket\r\nConnection: Upgrade\r\n"
				 "Sec-WebSocket-Accept: %s\r\n",
				 accept);
		if (proto)
			snprintf(head + n, sizeof(head) - (size_t)n,
				 "Sec-WebSocket-Protocol: %s\r\n", proto);
	} else if (up && strcasecmp(up, "SPDY/3.1") == 0) {
		/* a client that names no protocol is an old one and gets ours */
		if (standin_spdy_head(http, PROTO, false, head, sizeof(head)) < 0)
			return;
	} else {
		standin_reply_status(http, 400, "BadRequest",
				     "unable to upgrade: %s is not supported",
				     up ? up : "this protocol");
		return;
	}
	struct pf *pf = calloc(1, sizeof(*pf));
	if (!pf || (tunnel && !(pf->spdy = kb_spdy_new(&spdy_cbs, pf)))) {
		free(pf);
		standin_reply_status(http, 500, "InternalError", "out of memory");
		return;
	}
	pf->ws = ws;
	pf->b64 = b64;
	if (ws)
		kb_ws_parser_init(&pf->wsp, true, MAX_MESSAGE);
	pf->loop = st->loop;
	snprintf(pf->pod, sizeof(pf->pod), "%s", id);
	const char *uid = standin_str(pod, "metadata.uid");
	snprintf(pf->uid, sizeof(pf->uid), "%s", uid ? uid : "");
	uv_timer_init(pf->loop, &pf->timer);
	pf->timer.data = pf;
	pf->http = http; /* the session answers it from now on */
	kb_http_req_on_abort(http, client_gone, pf);
	for (int i = nports - 1; i >= 0; i--) { /* the channel protocol's pairs */
		struct pair *p = pair_new(pf, ports[i]);
		if (!p)
			break; /* the session ends below */
		p->chan = 2 * i;
	}
	if (kb_http_upgrade(http, head, from_client, pf) < 0)
		return; /* the client is gone: its abort callback releases the session */
	kb_info("standin", "port-forward %s: session open (%s)", pf->pod,
		!ws      ? "SPDY"
		: tunnel ? "SPDY in WebSocket"
			 : "WebSocket channels");
	if (tunnel)
		return;
	if ((int)pf->npairs < nports) {
		pf_end(pf);
		return;
	}
	/* each channel first says its port, as two little-endian bytes */
	for (struct pair *p = pf->pairs; p; p = p->next) {
		uint8_t le[2] = {(uint8_t)p->port, (uint8_t)(p->port >> 8)};
		chan_write(pf, p->chan, le, 2);
		chan_write(pf, p->chan + 1, le, 2);
	}
	for (struct pair *p = pf->pairs, *next; p && !pf->ending; p = next) {
		next = p->next;
		pair_start(pf, p);
	}
}
