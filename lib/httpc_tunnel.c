/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tunnels (see httpc.h): one HTTP/1.1 request whose answer may turn the
 * connection into a byte pipe (101 Switching Protocols), for kubectl exec,
 * attach and port-forward passed through to the host's kube-apiserver.
 *
 * DESIGN. curl makes the connection: an easy handle with CURLOPT_CONNECT_ONLY
 * and the client's TLS settings and session cache does the TCP connect and
 * the TLS handshake, driven without blocking by a curl multi handle of the
 * tunnel's own (socket callback -> one uv_poll_t per socket, timer callback
 * -> ctimer), as requests are driven by the client's. Not the client's
 * multi: with curl 7.88 a CONNECT_ONLY connection stays with the multi that
 * made it (curl_multi_remove_handle closes it, and curl_easy_send/recv find
 * it through that multi's connection cache), and in the client's cache it
 * would count against the per-host limit and be examined whenever curl
 * prunes dead connections for a request. Once connected curl stops watching
 * the socket (CURL_POLL_REMOVE) and the tunnel polls it itself: it writes the
 * request head, later the caller's bytes, with curl_easy_send, and reads with
 * curl_easy_recv until CURLE_AGAIN (OpenSSL may hold decrypted bytes that the
 * socket no longer shows).
 *
 * States: CONNECTING (curl) -> HEAD (request head out, answer head in) ->
 * OPEN (101: the pipe) or BODY (another status: its body, then the end).
 * llhttp parses the answer: it stops at the final head's end (the head is
 * kept as received, for on_head) and, for a refusal, at its body's end.
 * FLUSH: closed by the caller with bytes pending; they are sent, and the
 * tunnel waits until the peer has acknowledged them all (at most 5 s in all)
 * while it reads and drops what the peer sends: a peer blocked writing to us
 * may not read, and a socket closed with unread bytes is reset, which drops
 * what the kernel had not delivered yet. DEAD: curl's handles are gone and
 * the tunnel's are closing.
 *
 * Outgoing bytes wait in a chain of blocks that never move: OpenSSL wants a
 * write that it could not finish retried from the same address with no
 * fewer bytes.
 *
 * Lifetime: a tunnel is freed when its last libuv handle has closed (two
 * timers, its poll, curl's polls while connecting). When it ends, its polls
 * are closed first and curl's handles cleaned up right after (curl closes
 * the socket then): a descriptor must not be closed, and maybe reused, while
 * a poll still watches it. Callbacks run from loop callbacks only; the state
 * is checked again after each of them, as any may close the tunnel.
 *
 * Threading: loop thread only.
 */
#include "lib/httpc.h"
#include "lib/httpc_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/types.h>

#include <linux/sockios.h>

#include <llhttp.h>

#include "lib/log.h"
#include "lib/util.h"

#define HEAD_MAX           (64 * 1024) /* the answer's heads, interim ones included */
#define BODY_MAX           (64 * 1024) /* a refusal's body passed on */
#define HEAD_TIMEOUT_MS    30000       /* connect and head; then a refusal's body */
#define FLUSH_MS           5000        /* pending bytes after kb_httpc_tunnel_close */
#define CONNECT_TIMEOUT_MS 10000L      /* as requests */
#define READ_CHUNK         16384       /* a TLS record */
#define SEND_MAX           65536       /* bytes offered to one curl_easy_send */
#define BLOCK_MIN          16384       /* outgoing block; a bigger write gets its size */
#define LINGER_CHECK_MS    10          /* FLUSH: how often the peer's acks are checked */

enum tun_state { T_CONNECTING, T_HEAD, T_BODY, T_OPEN, T_FLUSH, T_DEAD };

/* One of curl's sockets while it connects. */
struct tsock {
	uv_poll_t poll;
	curl_socket_t fd;
	kb_httpc_tunnel_t *t;
	struct tsock *next, *prev;
};

/* Outgoing bytes: data[off, len) is still to be sent. */
struct out_blk {
	struct out_blk *next;
	size_t off, len, cap;
	char data[];
};

struct kb_httpc_tunnel {
	kb_httpc_t *c;                       /* NULL once DEAD */
	struct kb_httpc_tunnel *next, *prev; /* in c->tunnels */
	struct kb_httpc_tunnel_cbs cbs;
	enum tun_state state;
	CURLM *multi; /* ours alone: it holds the connection */
	CURL *easy;
	struct kb_httpc_dial dial; /* its connection attempts (the allow hook) */
	struct tsock *socks;
	uv_timer_t ctimer; /* curl's timeout while connecting; then resume and linger checks */
	uv_timer_t timer;  /* head (and refusal body) deadline, then the flush deadline */
	uv_poll_t poll;    /* the connection, once curl has made it */
	curl_socket_t fd;  /* its socket (curl's) */
	int poll_ev;       /* events poll was started with */
	int open_handles;
	bool poll_open, paused, user_closed, no_body;
	struct kb_buf req; /* the request head */
	size_t req_off, req_line;
	struct out_blk *out, *out_tail;
	size_t pending;                /* the caller's bytes in out */
	struct kb_buf head;            /* the answer's heads as they arrive */
	struct kb_buf held;            /* peer bytes read while paused */
	llhttp_t parser;               /* the answer */
	size_t hs;                     /* where the header lines start in head; 0: none yet */
	struct kb_buf body;            /* a refusal's body */
	struct curl_slist *connect_to; /* kb_httpc_tunnel_to's, or NULL */
};

static void update_poll(kb_httpc_tunnel_t *t);

/* ---- the end ------------------------------------------------------------------------ */

static void drop_out(kb_httpc_tunnel_t *t)
{
	struct out_blk *b, *next;
	for (b = t->out; b; b = next) {
		next = b->next;
		free(b);
	}
	t->out = t->out_tail = NULL;
	t->pending = 0;
}

static void tunnel_free(kb_httpc_tunnel_t *t)
{
	drop_out(t);
	kb_buf_free(&t->req);
	kb_buf_free(&t->head);
	kb_buf_free(&t->held);
	kb_buf_free(&t->body);
	curl_slist_free_all(t->connect_to);
	free(t);
}

static void on_closed(uv_handle_t *h)
{
	kb_httpc_tunnel_t *t = h->data;
	if (--t->open_handles == 0)
		tunnel_free(t);
}

static void on_tsock_closed(uv_handle_t *h)
{
	struct tsock *s = h->data;
	kb_httpc_tunnel_t *t = s->t;
	free(s);
	if (--t->open_handles == 0)
		tunnel_free(t);
}

static void tsock_close(kb_httpc_tunnel_t *t, struct tsock *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		t->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	uv_close((uv_handle_t *)&s->poll, on_tsock_closed);
}

/* Ends t without calling back: polls closed, then curl's handles (the
 * connection with them). Memory goes with the last handle. */
static void teardown(kb_httpc_tunnel_t *t)
{
	if (t->state == T_DEAD)
		return;
	t->state = T_DEAD;
	kb_httpc_t *c = t->c;
	if (t->prev)
		t->prev->next = t->next;
	else
		c->tunnels = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->c = NULL;
	while (t->socks)
		tsock_close(t, t->socks);
	if (t->poll_open)
		uv_close((uv_handle_t *)&t->poll, on_closed);
	uv_close((uv_handle_t *)&t->ctimer, on_closed);
	uv_close((uv_handle_t *)&t->timer, on_closed);
	/* removing a CONNECT_ONLY handle closes its connection */
	curl_multi_remove_handle(t->multi, t->easy);
	curl_easy_cleanup(t->easy);
	curl_multi_cleanup(t->multi);
	t->easy = NULL;
	t->multi = NULL;
}

/* Ends t and reports err, unless the caller closed it. */
static void finish(kb_httpc_tunnel_t *t, int err)
{
	if (t->state == T_DEAD)
		return;
	bool report = !t->user_closed;
	if (err < 0)
		kb_debug("httpc", "tunnel %.*s: %s", (int)t->req_line, t->req.data, strerror(-err));
	teardown(t);
	if (report)
		t->cbs.on_close(t, err, t->cbs.arg);
}

static bool gone(const kb_httpc_tunnel_t *t)
{
	return t->state == T_DEAD || t->user_closed;
}

static void on_deadline(uv_timer_t *h)
{
	kb_httpc_tunnel_t *t = h->data;
	if (t->state == T_FLUSH)
		teardown(t); /* the peer did not take the rest in time */
	else
		finish(t, -ETIMEDOUT);
}

/* ---- writing -------------------------------------------------------------------------- */

/* Bytes that one curl_easy_send took (0: the socket is full), or a
 * negative errno. */
static ssize_t send_some(kb_httpc_tunnel_t *t, const char *p, size_t len)
{
	size_t n = 0;
	CURLcode cc = curl_easy_send(t->easy, p, len, &n);
	if (cc == CURLE_AGAIN)
		return 0;
	if (cc != CURLE_OK)
		return kb_httpc_dial_err(&t->dial, cc);
	return (ssize_t)n;
}

/* Sends what may go: the request head, then, once the pipe is open, the
 * caller's bytes. 0 (done, or the socket is full) or a negative errno. */
static int flush(kb_httpc_tunnel_t *t)
{
	while (t->req_off < t->req.len) {
		ssize_t n = send_some(t, t->req.data + t->req_off, t->req.len - t->req_off);
		if (n <= 0)
			return (int)n;
		t->req_off += (size_t)n;
	}
	while (t->out && (t->state == T_OPEN || t->state == T_FLUSH)) {
		struct out_blk *b = t->out;
		size_t len = b->len - b->off;
		ssize_t n = send_some(t, b->data + b->off, len < SEND_MAX ? len : SEND_MAX);
		if (n <= 0)
			return (int)n;
		b->off += (size_t)n;
		t->pending -= (size_t)n;
		if (b->off == b->len) {
			t->out = b->next;
			if (!t->out)
				t->out_tail = NULL;
			free(b);
		}
	}
	return 0;
}

static void do_read(kb_httpc_tunnel_t *t);

/* FLUSH with every byte handed to the socket: ends t once the peer has
 * acknowledged them (SIOCOUTQ: bytes sent and not acknowledged), so that
 * its own bytes still coming cannot make the close a reset that drops ours. */
static void on_linger(uv_timer_t *h)
{
	kb_httpc_tunnel_t *t = h->data;
	int unacked = 0;
	do_read(t); /* dropped: nothing left unread at the close */
	if (t->state != T_FLUSH)
		return;
	if (ioctl(t->fd, SIOCOUTQ, &unacked) == 0 && unacked > 0)
		return; /* again in LINGER_CHECK_MS, until the deadline */
	teardown(t);
}

static void write_step(kb_httpc_tunnel_t *t)
{
	int rc = flush(t);
	if (rc < 0)
		finish(t, rc);
	else if (t->state == T_FLUSH && !t->out && !uv_is_active((uv_handle_t *)&t->ctimer))
		uv_timer_start(&t->ctimer, on_linger, 0, LINGER_CHECK_MS);
}

/* Appends n bytes to the outgoing chain: all of them, or none and -ENOMEM. */
static int out_append(kb_httpc_tunnel_t *t, const char *p, size_t n)
{
	struct out_blk *tail = t->out_tail, *nb = NULL;
	size_t room = tail ? tail->cap - tail->len : 0;
	size_t k = n < room ? n : room;
	if (n > k) {
		size_t cap = n - k > BLOCK_MIN ? n - k : BLOCK_MIN;
		nb = malloc(sizeof(*nb) + cap);
		if (!nb)
			return -ENOMEM;
		*nb = (struct out_blk){.len = n - k, .cap = cap};
		memcpy(nb->data, p + k, n - k);
	}
	if (k) {
		memcpy(tail->data + tail->len, p, k);
		tail->len += k;
	}
	if (nb) {
		if (tail)
			tail->next = nb;
		else
			t->out = nb;
		t->out_tail = nb;
	}
	t->pending += n;
	return 0;
}

/* ---- the answer ----------------------------------------------------------------------- */

static bool is_tchar(char ch)
{
	return isalnum((unsigned char)ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static kb_httpc_tunnel_t *parser_tunnel(llhttp_t *p)
{
	return kb_container_of(p, kb_httpc_tunnel_t, parser);
}

static int on_message_begin(llhttp_t *p)
{
	parser_tunnel(p)->hs = 0; /* an interim answer's header lines are not passed on */
	return 0;
}

/* Notes where the header lines start, and refuses a name that is not a
 * token (llhttp 8.1 lets a space through). */
static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
	kb_httpc_tunnel_t *t = parser_tunnel(p);
	for (size_t i = 0; i < len; i++)
		if (!is_tchar(at[i]))
			return -1;
	if (!t->hs && t->state == T_HEAD)
		t->hs = (size_t)(at - t->head.data);
	return 0;
}

/* Stops at a final answer's head (it is passed on before its body);
 * interim answers (1xx but 101) have no body and are skipped. */
static int on_headers_complete(llhttp_t *p)
{
	if (p->status_code < 100 || p->http_major != 1)
		return -1; /* llhttp takes any three digits, HTTP/0.9 and HTTP/2.0 */
	if (p->status_code < 200 && p->status_code != 101)
		return 1;
	return HPE_PAUSED;
}

/* A refusal's body, the first BODY_MAX bytes of it kept. */
static int on_body(llhttp_t *p, const char *at, size_t len)
{
	kb_httpc_tunnel_t *t = parser_tunnel(p);
	size_t room = BODY_MAX - t->body.len;
	if (len > room)
		len = room;
	if (len && kb_buf_append(&t->body, at, len) < 0)
		kb_warn("httpc", "tunnel %.*s: out of memory for the body", (int)t->req_line,
			t->req.data);
	return 0;
}

/* Stops at the end of a refusal's body: what may follow is not read. */
static int on_message_complete(llhttp_t *p)
{
	return parser_tunnel(p)->state == T_BODY ? HPE_PAUSED : 0;
}

static const llhttp_settings_t answer_settings = {
    .on_message_begin = on_message_begin,
    .on_header_field = on_header_field,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Feeds the answer to llhttp: 1 when it stopped (at the final head's end,
 * or the body's), 0 when it wants more, -EPROTO. The errors of llhttp are
 * mapped here. */
static int parse(kb_httpc_tunnel_t *t, const char *p, size_t n)
{
	llhttp_errno_t err = llhttp_execute(&t->parser, p, n);
	if (err == HPE_OK || err == HPE_PAUSED)
		return err == HPE_PAUSED;
	kb_debug("httpc", "tunnel %.*s: answer: %s", (int)t->req_line, t->req.data,
		 llhttp_get_error_reason(&t->parser));
	return -EPROTO;
}

/* The body has ended: its bytes, then on_close with err. */
static void end_body(kb_httpc_tunnel_t *t, int err)
{
	if (t->body.len) {
		t->cbs.on_data(t, t->body.data, t->body.len, t->cbs.arg);
		if (gone(t))
			return;
	}
	finish(t, err);
}

static void feed_body(kb_httpc_tunnel_t *t, const char *p, size_t n)
{
	int rc = parse(t, p, n);
	if (rc < 0)
		finish(t, rc);
	else if (rc || t->body.len >= BODY_MAX) /* whole, or all that is passed on */
		end_body(t, 0);
}

static void feed(kb_httpc_tunnel_t *t, const char *p, size_t n);

/* The final head is whole, hl bytes into t->head: on_head, then the bytes
 * that came with it. */
static void head_done(kb_httpc_tunnel_t *t, size_t hl)
{
	int status = t->parser.status_code;
	size_t hs = t->hs ? t->hs : hl - 2; /* no header lines: empty */
	uv_timer_stop(&t->timer);
	if (status == 101) {
		t->state = T_OPEN;
	} else {
		t->state = T_BODY;
		drop_out(t); /* the caller's bytes were for a pipe */
		uv_timer_start(&t->timer, on_deadline, HEAD_TIMEOUT_MS, 0);
	}
	t->cbs.on_head(t, status, t->head.data + hs, hl - 2 - hs, t->cbs.arg);
	if (gone(t))
		return;
	const char *rest = t->head.data + hl;
	size_t n = t->head.len - hl;
	if (t->state == T_OPEN) {
		if (n)
			feed(t, rest, n);
	} else if (t->no_body || status == 204 || status == 304) {
		end_body(t, 0); /* RFC 9112 section 6.3: no body, whatever the headers say */
	} else {
		llhttp_resume(&t->parser);
		feed_body(t, rest, n); /* ends at once when the body is empty */
	}
	kb_buf_free(&t->head);
}

/* Bytes of the answer's heads, kept whole for on_head: the final head
 * must end within HEAD_MAX bytes. */
static void feed_head(kb_httpc_tunnel_t *t, const char *p, size_t n)
{
	size_t from = t->head.len;
	if (kb_buf_append(&t->head, p, n) < 0) {
		finish(t, -ENOMEM);
		return;
	}
	int rc = parse(t, t->head.data + from, n);
	size_t hl =
	    rc > 0 ? (size_t)(llhttp_get_error_pos(&t->parser) - t->head.data) : t->head.len;
	if (rc < 0 || hl > HEAD_MAX)
		finish(t, -EPROTO);
	else if (rc > 0)
		head_done(t, hl);
}

/* ---- reading ------------------------------------------------------------------------- */

static bool reading(const kb_httpc_tunnel_t *t)
{
	return t->state == T_HEAD || t->state == T_BODY || t->state == T_OPEN ||
	       t->state == T_FLUSH;
}

static void feed(kb_httpc_tunnel_t *t, const char *p, size_t n)
{
	if (t->state == T_HEAD) {
		feed_head(t, p, n);
	} else if (t->state == T_BODY) {
		feed_body(t, p, n);
	} else if (t->state == T_FLUSH) {
		/* dropped: the caller wants no more */
	} else if (t->paused) { /* paused from inside on_head: kept for the resume */
		if (kb_buf_append(&t->held, p, n) < 0)
			finish(t, -ENOMEM);
	} else {
		t->cbs.on_data(t, p, n, t->cbs.arg);
	}
}

static void deliver_held(kb_httpc_tunnel_t *t)
{
	struct kb_buf h = t->held;
	t->held = (struct kb_buf){0};
	t->cbs.on_data(t, h.data, h.len, t->cbs.arg);
	kb_buf_free(&h);
}

static void peer_closed(kb_httpc_tunnel_t *t)
{
	if (t->state == T_HEAD)
		finish(t, -ECONNRESET);
	else if (t->state == T_BODY) /* llhttp: does the end of the connection end the body? */
		end_body(t, llhttp_finish(&t->parser) == HPE_INVALID_EOF_STATE ? -ECONNRESET : 0);
	else
		finish(t, 0);
}

/* Reads until curl has no more (CURLE_AGAIN), t pauses or ends. */
static void do_read(kb_httpc_tunnel_t *t)
{
	char buf[READ_CHUNK];
	while (reading(t) && !t->paused) {
		if (t->held.len) {
			deliver_held(t);
			continue;
		}
		size_t n = 0;
		CURLcode cc = curl_easy_recv(t->easy, buf, sizeof(buf), &n);
		if (cc == CURLE_AGAIN)
			return;
		if (cc != CURLE_OK) {
			finish(t, kb_httpc_dial_err(&t->dial, cc));
			return;
		}
		if (n == 0) {
			peer_closed(t);
			return;
		}
		feed(t, buf, n);
	}
}

/* ---- the connection --------------------------------------------------------------------- */

static void on_poll(uv_poll_t *h, int status, int events)
{
	kb_httpc_tunnel_t *t = h->data;
	if (status < 0) { /* libuv stopped the poll; bytes read before the error count */
		t->poll_ev = 0;
		do_read(t);
		finish(t, -ECONNRESET);
		return;
	}
	if (events & UV_READABLE)
		do_read(t);
	if (t->state != T_DEAD && (events & UV_WRITABLE))
		write_step(t);
	update_poll(t);
}

/* Reads on when the caller resumes: OpenSSL or t->held may have bytes
 * that no poll event announces. */
static void on_kick(uv_timer_t *h)
{
	kb_httpc_tunnel_t *t = h->data;
	do_read(t);
	update_poll(t);
}

static void update_poll(kb_httpc_tunnel_t *t)
{
	if (!t->poll_open || t->state == T_DEAD)
		return;
	bool out =
	    t->req_off < t->req.len || (t->out && (t->state == T_OPEN || t->state == T_FLUSH));
	int ev = (reading(t) && !t->paused ? UV_READABLE : 0) | (out ? UV_WRITABLE : 0);
	if (ev == t->poll_ev)
		return; /* uv_poll_start re-registers the descriptor each time */
	t->poll_ev = ev;
	if (ev)
		uv_poll_start(&t->poll, ev, on_poll);
	else
		uv_poll_stop(&t->poll);
}

/* curl has connected (the TLS handshake done) or failed. */
static void connected(kb_httpc_tunnel_t *t, CURLcode cc)
{
	if (cc != CURLE_OK) {
		kb_debug("httpc", "tunnel to %s: %s", t->c->server, curl_easy_strerror(cc));
		finish(t, kb_httpc_dial_err(&t->dial, cc));
		return;
	}
	curl_socket_t fd = CURL_SOCKET_BAD;
	curl_easy_getinfo(t->easy, CURLINFO_ACTIVESOCKET, &fd);
	while (t->socks) /* curl said CURL_POLL_REMOVE: libuv allows one poll per descriptor */
		tsock_close(t, t->socks);
	uv_timer_stop(&t->ctimer);
	t->state = T_HEAD;
	t->fd = fd;
	if (fd == CURL_SOCKET_BAD || uv_poll_init_socket(t->c->loop, &t->poll, fd) < 0) {
		finish(t, -EIO);
		return;
	}
	t->poll.data = t;
	t->poll_open = true;
	t->open_handles++;
	update_poll(t);
}

static void check_done(kb_httpc_tunnel_t *t)
{
	CURLMsg *msg;
	int left;
	while (t->state == T_CONNECTING && (msg = curl_multi_info_read(t->multi, &left)))
		if (msg->msg == CURLMSG_DONE)
			connected(t, msg->data.result);
}

static void on_tsock_poll(uv_poll_t *h, int status, int events)
{
	struct tsock *s = h->data;
	kb_httpc_tunnel_t *t = s->t;
	int flags = status < 0 ? CURL_CSELECT_ERR : 0, running;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(t->multi, s->fd, flags, &running);
	check_done(t);
}

static int on_curl_socket(CURL *e, curl_socket_t fd, int action, void *userp, void *socketp)
{
	kb_httpc_tunnel_t *t = userp;
	struct tsock *s = socketp;
	if (t->state != T_CONNECTING)
		return 0; /* the socket is ours now, or t is ending */
	if (action == CURL_POLL_REMOVE) {
		if (s) {
			tsock_close(t, s);
			curl_multi_assign(t->multi, fd, NULL);
		}
		return 0;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s || uv_poll_init_socket(t->c->loop, &s->poll, fd) < 0) {
			free(s);
			return -1;
		}
		s->fd = fd;
		s->t = t;
		s->poll.data = s;
		t->open_handles++;
		s->next = t->socks;
		if (t->socks)
			t->socks->prev = s;
		t->socks = s;
		curl_multi_assign(t->multi, fd, s);
	}
	int ev = 0;
	if (action == CURL_POLL_IN || action == CURL_POLL_INOUT)
		ev |= UV_READABLE;
	if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT)
		ev |= UV_WRITABLE;
	uv_poll_start(&s->poll, ev, on_tsock_poll);
	return 0;
}

static void on_curl_timeout(uv_timer_t *h)
{
	kb_httpc_tunnel_t *t = h->data;
	int running;
	curl_multi_socket_action(t->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(t);
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
	kb_httpc_tunnel_t *t = userp;
	if (t->state != T_CONNECTING)
		return 0;
	if (timeout_ms < 0)
		uv_timer_stop(&t->ctimer);
	else
		uv_timer_start(&t->ctimer, on_curl_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

/* ---- starting --------------------------------------------------------------------------- */

static bool valid_method(const char *m)
{
	if (!m || !*m)
		return false;
	for (; *m; m++)
		if (!is_tchar(*m))
			return false;
	return true;
}

static bool is_ctl(char ch)
{
	return (unsigned char)ch < 0x20 || ch == 0x7f;
}

static bool valid_path(const char *p)
{
	if (!p || *p != '/')
		return false;
	for (; *p; p++)
		if (is_ctl(*p) || *p == ' ')
			return false;
	return true;
}

/* NULL, "", or non-empty "Name: value\r\n" lines. */
static bool valid_headers(const char *h)
{
	if (!h || !*h)
		return true;
	size_t len = strlen(h);
	if (len < 2 || strcmp(h + len - 2, "\r\n") != 0 || h[0] == '\r' || strstr(h, "\r\n\r\n"))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (h[i] == '\r' && h[i + 1] != '\n')
			return false;
		if (h[i] == '\n' && (i == 0 || h[i - 1] != '\r'))
			return false;
	}
	return true;
}

/* "METHOD <server's path>PATH HTTP/1.1", Host (the server's authority),
 * User-Agent, the token, the caller's headers. 0 or -ENOMEM. */
static int build_head(kb_httpc_tunnel_t *t, const char *method, const char *path,
		      const char *headers)
{
	kb_httpc_t *c = t->c;
	const char *auth = strstr(c->server, "://");
	auth = auth ? auth + 3 : c->server;
	size_t alen = strcspn(auth, "/");
	const char *at = memchr(auth, '@', alen);
	if (at) {
		alen -= (size_t)(at + 1 - auth);
		auth = at + 1;
	}
	const char *token = kb_httpc_token(c);
	struct kb_buf *b = &t->req;
	if (kb_buf_printf(b, "%s %s%s HTTP/1.1\r\n", method, auth + alen, path) < 0)
		return -ENOMEM;
	t->req_line = b->len - 2;
	if (kb_buf_printf(b, "Host: %.*s\r\nUser-Agent: kubicle-syncer\r\n", (int)alen, auth) < 0 ||
	    (token && kb_buf_printf(b, "Authorization: Bearer %s\r\n", token) < 0) ||
	    (headers && kb_buf_puts(b, headers) < 0) || kb_buf_puts(b, "\r\n") < 0)
		return -ENOMEM;
	return 0;
}

static void easy_setup(kb_httpc_tunnel_t *t)
{
	kb_httpc_t *c = t->c;
	CURL *e = t->easy;
	if (c->share)
		curl_easy_setopt(e, CURLOPT_SHARE, c->share);
	curl_easy_setopt(e, CURLOPT_URL, c->server);
	if (t->connect_to)
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, t->connect_to);
	curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
	/* ALPN offers http/1.1 alone: the head written is HTTP/1.1 */
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	kb_httpc_setup_tls(c, e);
	kb_httpc_setup_dial(c, e, &t->dial);
	curl_multi_setopt(t->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
	curl_multi_setopt(t->multi, CURLMOPT_SOCKETDATA, t);
	curl_multi_setopt(t->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	curl_multi_setopt(t->multi, CURLMOPT_TIMERDATA, t);
}

kb_httpc_tunnel_t *kb_httpc_tunnel(kb_httpc_t *c, const char *method, const char *path,
				   const char *headers, const struct kb_httpc_tunnel_cbs *cbs)
{
	return kb_httpc_tunnel_to(c, method, path, headers, NULL, cbs);
}

kb_httpc_tunnel_t *kb_httpc_tunnel_to(kb_httpc_t *c, const char *method, const char *path,
				      const char *headers, const char *connect_to,
				      const struct kb_httpc_tunnel_cbs *cbs)
{
	KB_CHECK(c && !c->closing && cbs && cbs->on_head && cbs->on_data && cbs->on_close, NULL);
	KB_CHECK(valid_method(method) && valid_path(path) && valid_headers(headers), NULL);
	kb_httpc_tunnel_t *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (connect_to && !(t->connect_to = curl_slist_append(NULL, connect_to))) {
		free(t);
		return NULL;
	}
	t->c = c;
	t->cbs = *cbs;
	t->no_body = strcmp(method, "HEAD") == 0;
	llhttp_init(&t->parser, HTTP_RESPONSE, &answer_settings);
	if (build_head(t, method, path, headers) < 0)
		goto fail_head;
	if (!(t->multi = curl_multi_init()))
		goto fail_head;
	if (!(t->easy = curl_easy_init()))
		goto fail_multi;
	easy_setup(t);
	uv_timer_init(c->loop, &t->ctimer);
	uv_timer_init(c->loop, &t->timer);
	t->ctimer.data = t->timer.data = t;
	t->open_handles = 2;
	t->next = c->tunnels;
	if (c->tunnels)
		c->tunnels->prev = t;
	c->tunnels = t;
	uv_timer_start(&t->timer, on_deadline, HEAD_TIMEOUT_MS, 0);
	/* curl only arms its timer here: the connect starts from the loop */
	if (curl_multi_add_handle(t->multi, t->easy) != CURLM_OK) {
		t->user_closed = true;
		teardown(t); /* frees t once its timers have closed */
		return NULL;
	}
	return t;

fail_multi:
	curl_multi_cleanup(t->multi);
fail_head:
	tunnel_free(t);
	return NULL;
}

/* ---- using ------------------------------------------------------------------------------ */

int kb_httpc_tunnel_write(kb_httpc_tunnel_t *t, const char *data, size_t len)
{
	if (t->user_closed ||
	    (t->state != T_CONNECTING && t->state != T_HEAD && t->state != T_OPEN))
		return -EPIPE;
	if (!len)
		return 0;
	if (out_append(t, data, len) < 0)
		return -ENOMEM;
	update_poll(t);
	return 0;
}

size_t kb_httpc_tunnel_pending(const kb_httpc_tunnel_t *t)
{
	return t->pending;
}

void kb_httpc_tunnel_pause(kb_httpc_tunnel_t *t, bool pause)
{
	if (gone(t) || t->paused == pause)
		return;
	t->paused = pause;
	update_poll(t);
	if (!pause && t->poll_open)
		uv_timer_start(&t->ctimer, on_kick, 0, 0);
}

void kb_httpc_tunnel_close(kb_httpc_tunnel_t *t)
{
	if (!t || gone(t))
		return;
	t->user_closed = true;
	if (t->state != T_OPEN) {
		teardown(t);
		return;
	}
	/* the pipe: what is pending is sent, and acknowledged, before the close */
	t->state = T_FLUSH;
	t->paused = false;
	kb_buf_free(&t->held);
	uv_update_time(t->c->loop); /* the caller may have worked long since the loop's "now" */
	uv_timer_start(&t->timer, on_deadline, FLUSH_MS, 0);
	uv_timer_stop(&t->ctimer); /* a resume's read: the poll reads now */
	if (!t->out)
		uv_timer_start(&t->ctimer, on_linger, 0, LINGER_CHECK_MS);
	update_poll(t);
}

void kb_httpc_tunnels_close(kb_httpc_t *c)
{
	while (c->tunnels) {
		c->tunnels->user_closed = true;
		teardown(c->tunnels);
	}
}
