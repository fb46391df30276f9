/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP/1.1 server over TLS on libuv (see http.h).
 *
 * Layers: read_cb (ciphertext) -> memory BIO -> SSL_read (plaintext) ->
 * llhttp -> dispatch -> on_request. Responses go the other way: one
 * SSL_write of head and body into the write BIO, then one uv_write of the
 * ciphertext, freed in the write callback.
 *
 * DESIGN
 * - States: a connection is in exactly one `enum conn_state`. Between
 *   dispatch and the end of the response (HANDLER, STREAMING) nothing more is
 *   parsed: ciphertext that arrives meanwhile stays in the read BIO (reading
 *   stops past RBIO_HIGH bytes) and plaintext already decrypted but not parsed
 *   (a pipelined request) is kept in `pending`. When the response finishes
 *   with input still buffered, the connection is queued on the server's
 *   resume list, drained by a uv_idle handle, so that the next on_request is
 *   never nested inside the caller's kb_http_respond().
 * - Lifetime: a connection lives as long as its uv_tcp_t. conn_close() is
 *   idempotent; memory is freed in close_cb, which also calls the abort
 *   callback if a request was still being answered. A request whose handler
 *   set no abort callback outlives its connection as a "zombie" until the
 *   handler answers it (the contract in http.h), then it is freed.
 * - Timeouts: one uv_timer per server. Each timeout kind (head, idle, linger)
 *   has a fixed length, so each kind's list is ordered by deadline when
 *   connections are appended at the tail; the timer fires for the earliest
 *   head of the lists. Idle connections cost no timer handle.
 * - Graceful close: after a final response (Connection: close, errors) the
 *   server sends close_notify, waits for its writes, shuts the socket down
 *   (FIN) and reads and discards for a short linger time, so that a client
 *   still sending a rejected body receives the answer rather than a reset.
 * - Buffers: reads land in one per-server buffer; per-request head storage
 *   comes from a small per-server free list; idle connections hold only the
 *   SSL object (with SSL_MODE_RELEASE_BUFFERS) and the conn struct.
 * - Handed-over streams (kb_http_stream_long) seal their records into the
 *   server's send batch (sendbatch.h) when nothing of theirs is queued, so
 *   that one event fanned out to many watches is one io_uring_enter, not
 *   one write(2) per watch. The batch goes out in a uv_check callback
 *   (after the I/O callbacks that filled it) or, at the latest, in a
 *   uv_prepare callback (before the loop polls), so nothing waits in it
 *   while the loop sleeps. What a socket did not take is queued as after a
 *   short write; a connection flushes the batch before anything else it
 *   sends or its shutdown, so bytes keep their order.
 * - Stream queues: a stream's chunks go to the socket at once while it
 *   takes them; once it does not (a write is queued), later chunks wait in
 *   the connection's queue as plaintext, shared buffers by reference
 *   (kb_http_shared_t), and are sealed SQ_PIECE bytes at a time when its
 *   writes complete. So a stalled reader costs its queue entries and at
 *   most a record or two of ciphertext, and one event queued for many
 *   stalled watchers is held once. The bytes held so (stream_held) have a
 *   budget: past it the connections blocked longest (srv->blocked, in the
 *   order they became blocked) are closed, as kube-apiserver's cacher
 *   closes a watcher that cannot take an event within its time budget
 *   (cache_watcher.go, add). Once much was held and it is given back, the
 *   heap is trimmed (malloc_trim), as after a large response.
 */
#include "lib/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <malloc.h>

#include <llhttp.h>
#include <openssl/buffer.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/sendbatch.h"
#include "lib/tls.h"
#include "lib/tls13.h"
#include "lib/util.h"

#define DEFAULT_MAX_BODY        (3u * 1024 * 1024)
#define DEFAULT_HEAD_TIMEOUT_MS 10000u
#define DEFAULT_IDLE_TIMEOUT_MS 120000u
#define DEFAULT_MAX_CONNS       20000u
#define LINGER_MS               2000u
/* Ciphertext buffered while a request is being answered before reading stops. */
#define RBIO_HIGH      (256 * 1024)
#define READ_BUF_SIZE  (64 * 1024)
#define PLAIN_BUF_SIZE (16 * 1024)
#define HEAD_INITIAL   2048
#define HEAD_KEEP      8192
#define POOL_MAX       64
/* Memory BIOs keep the capacity of their largest use; past this they are
 * replaced when the connection goes idle. */
#define BIO_KEEP (16 * 1024)
/* Bodies above this are written with their own SSL_write instead of copied. */
#define COPY_BODY_MAX 16384
/* After streams were handed to the record writer, give freed pages back
 * (malloc_trim walks the heap: at most once per TRIM_EVERY_MS). */
#define TRIM_DELAY_MS  200
#define TRIM_EVERY_MS  2000
#define ALLOC_FLUSH_MS 1000
/* Responses and stream holdings above this are followed by a trim. */
#define TRIM_AFTER (1u << 20)
/* Plaintext a stream queue seals per step (one TLS record), and the most
 * a chunk may have to be written at once rather than queued. */
#define SQ_PIECE      (16u * 1024)
#define SQ_IOV        16
#define SQ_PUMP_STEPS 16 /* pieces per turn of a connection's queue */
/* Response bodies above this are sent from the queue (queue_body). */
#define SQ_QUEUE_BODY         (256u * 1024)
#define DEFAULT_STREAM_BUDGET (64u << 20)

static const char status_413_body[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"the request body is too large\",\"reason\":\"RequestEntityTooLarge\","
    "\"code\":413}";

static char empty_string[1];

enum conn_state {
	CS_HANDSHAKE, /* TLS handshake in progress */
	CS_IDLE,      /* between requests */
	CS_HEAD,      /* reading a request head */
	CS_BODY,      /* reading a request body */
	CS_HANDLER,   /* dispatched, no response yet */
	CS_STREAMING, /* chunked response in progress */
	CS_UPGRADED,  /* 101 sent: a byte pipe (kb_http_upgrade) */
	CS_DRAINING,  /* final bytes queued; shutdown when written */
	CS_LINGER,    /* shut down; discarding input until EOF or timeout */
};

enum { TL_HEAD, TL_IDLE, TL_LINGER, TL_COUNT, TL_NONE = -1 };

struct dlink {
	struct dlink *prev, *next;
};

/* Head storage of one request: bytes of url and headers, NUL-separated. */
struct reqbuf {
	struct reqbuf *next_free;
	struct kb_buf head;
	uint32_t off[KB_HTTP_MAX_HEADERS][2];
	struct kb_http_header hdrs[KB_HTTP_MAX_HEADERS];
};

struct conn {
	uv_tcp_t tcp;
	kb_http_server_t *srv;
	uint64_t id;
	SSL *ssl;
	BIO *rbio, *wbio; /* owned by ssl */
	llhttp_t parser;
	enum conn_state state;
	struct dlink all;   /* srv->conns or srv->zombies */
	struct dlink tnode; /* one of srv->tlists */
	uint64_t deadline;
	int tlist;
	struct dlink resume; /* srv->resumes when queued */
	bool closing;        /* uv_close called */
	bool zombie;         /* handle closed, request still owned by handler */
	bool in_process;
	bool in_abort;
	bool read_stopped;
	bool msg_ready;  /* llhttp paused after a complete message */
	bool req_active; /* between dispatch and response end */
	bool keep_alive;
	bool upgrade;
	bool is_head;
	bool head_too_big;
	bool peer_eof; /* EOF seen while draining */
	bool body_too_big;
	unsigned writes;  /* uv_write requests in flight */
	uint32_t tok_off; /* start of the token being collected */
	X509 *peer_cert;  /* borrowed from ssl, verified */
	bool long_stream; /* kb_http_stream_long: hand the stream to `tx` */
	bool tx_unknown;  /* record count lost: never hand over */
	uint8_t tx_secret_len;
	uint8_t tx_secret[48];      /* server application traffic secret */
	uint64_t tx_records;        /* protected records sent since the handshake */
	uint32_t tx_skip;           /* bytes of a record body still to skip */
	struct kb_tls13_writer *tx; /* set: ssl is freed, we seal records */
	int batched;                /* its send's slot in srv->batch + 1, or 0 */
	char *head_copy;            /* handed-over stream: method, path, query */
	struct reqbuf *rb;
	char *body;
	size_t body_cap;
	char *pending; /* decrypted, unparsed bytes */
	size_t pending_len, pending_off;
	kb_http_abort_cb abort_cb;
	void *abort_arg;
	kb_http_done_cb done_cb; /* kb_http_req_on_done */
	void *done_arg;
	int status;                   /* of the response started, 0 before */
	struct sq *sq_head, *sq_tail; /* stream queue (plaintext waiting) */
	size_t sq_bytes;              /* bytes in it not yet sent */
	size_t w_held;                /* of srv->stream_held: its wreqs' (0 once closed) */
	struct dlink blocked;         /* srv->blocked while sq_head */
	struct dlink pumpl;           /* srv->pumps: its queue goes on from idle_cb */
	bool pumping;                 /* in sq_pump: writes bypass the batch */
	bool end_queued;              /* the stream's end waits in its queue */
	bool body_queued;             /* kb_http_respond: queue_body took the body */
	kb_http_raw_cb raw_cb;        /* CS_UPGRADED: the client's bytes */
	void *raw_arg;
	bool raw_paused;
	kb_http_req_t req;
};

struct tlist {
	struct dlink head;
	unsigned timeout_ms;
};

struct kb_http_server {
	uv_loop_t *loop;
	size_t stream_held, stream_held_peak; /* kb_http_stream_held() */
	uint64_t streams_cut;                 /* kb_http_streams_cut() */
	uv_tcp_t listener;
	uv_timer_t timer;
	uv_idle_t idle;
	SSL_CTX *ctx;
	kb_http_request_cb on_request;
	void *arg;
	struct kb_http_server_opts opts;
	llhttp_settings_t settings;
	struct dlink conns, zombies, resumes;
	struct dlink blocked; /* connections with a stream queue, longest blocked first */
	struct dlink pumps;   /* stream queues to go on from idle_cb */
	struct tlist tlists[TL_COUNT];
	uint64_t timer_due; /* 0: not armed */
	size_t nconns;
	unsigned handles; /* open handles, including connections */
	bool stopping;
	uint64_t conn_seq, req_seq;
	struct reqbuf *pool;
	size_t npool;
	struct kb_buf scratch;
	struct kb_buf wscratch;     /* ciphertext on its way to the socket */
	kb_sendbatch_t *batch;      /* records of handed-over streams (sendbatch.h) */
	bool batch_off;             /* io_uring unavailable: one write per record */
	uv_prepare_t flush_prepare; /* send the batch before the loop polls */
	uv_check_t flush_check;     /* and after the I/O callbacks that filled it */
	uv_timer_t trim;
	uv_timer_t aflush;   /* aflush_cb */
	bool busy;           /* a request came since aflush_cb last ran */
	uint64_t trimmed_at; /* uv_now of the last malloc_trim */
	time_t date_sec;
	char date[40];
	char readbuf[READ_BUF_SIZE];
	char plain[PLAIN_BUF_SIZE];
};

struct wreq {
	uv_write_t req;
	struct conn *conn;
	size_t held; /* counted in srv->stream_held (a stream's ciphertext) */
	char data[];
};

/* An entry of a stream queue: a chunk's head, its body (shared) and its
 * "\r\n", or the last chunk (end). */
struct sq {
	struct sq *next;
	kb_http_shared_t *buf; /* NULL: no body */
	size_t off;            /* bytes of the entry sent */
	size_t total;          /* hl + body + tail */
	bool tail, end;
	bool held; /* a stream's: counted in srv->stream_held */
	bool own;  /* held, counted per entry: buf is held_by another server */
	uint8_t hl;
	char head[24];
};

static void conn_close(struct conn *c, const char *why);
static void conn_process(struct conn *c);
static void close_gracefully(struct conn *c);
static void srv_maybe_free(kb_http_server_t *srv);
static void idle_cb(uv_idle_t *h);
static void sq_pump(struct conn *c);
static void sq_later(struct conn *c);
static void sq_drop(struct conn *c);
static void schedule_trim(kb_http_server_t *srv);
static void held_add(kb_http_server_t *srv, size_t n);

/* ---- intrusive lists ---- */

static void dl_init(struct dlink *l)
{
	l->prev = l->next = l;
}

static bool dl_empty(const struct dlink *l)
{
	return l->next == l;
}

static void dl_append(struct dlink *l, struct dlink *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

static void dl_remove(struct dlink *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

/* ---- timeouts ---- */

static void timer_cb(uv_timer_t *t);

static void timer_arm(kb_http_server_t *srv, uint64_t due)
{
	if (srv->stopping || (srv->timer_due && srv->timer_due <= due))
		return;
	uint64_t now = uv_now(srv->loop);
	srv->timer_due = due;
	uv_timer_start(&srv->timer, timer_cb, due > now ? due - now : 0, 0);
}

/* Moves the connection to the tail of list `which` (TL_NONE: no timeout). */
static void tl_set(struct conn *c, int which)
{
	if (c->tlist != TL_NONE)
		dl_remove(&c->tnode);
	c->tlist = which;
	if (which == TL_NONE)
		return;
	struct tlist *tl = &c->srv->tlists[which];
	c->deadline = uv_now(c->srv->loop) + tl->timeout_ms;
	dl_append(&tl->head, &c->tnode);
	timer_arm(c->srv, c->deadline);
}

static void timer_cb(uv_timer_t *t)
{
	kb_http_server_t *srv = kb_container_of(t, kb_http_server_t, timer);
	uint64_t now = uv_now(srv->loop), next = 0;
	srv->timer_due = 0;
	for (int i = 0; i < TL_COUNT; i++) {
		struct dlink *h = &srv->tlists[i].head;
		while (!dl_empty(h)) {
			struct conn *c = kb_container_of(h->next, struct conn, tnode);
			if (c->deadline > now) {
				if (!next || c->deadline < next)
					next = c->deadline;
				break;
			}
			kb_debug("http", "conn %llu: timeout in state %d",
				 (unsigned long long)c->id, (int)c->state);
			conn_close(c, "timeout");
		}
	}
	if (next)
		timer_arm(srv, next);
}

/* ---- request buffers ---- */

static struct reqbuf *reqbuf_get(kb_http_server_t *srv)
{
	struct reqbuf *rb = srv->pool;
	if (rb) {
		srv->pool = rb->next_free;
		srv->npool--;
		rb->head.len = 0;
		return rb;
	}
	rb = calloc(1, sizeof(*rb));
	if (!rb)
		return NULL;
	rb->head.data = malloc(HEAD_INITIAL);
	if (!rb->head.data) {
		free(rb);
		return NULL;
	}
	rb->head.cap = HEAD_INITIAL;
	return rb;
}

static void reqbuf_free(struct reqbuf *rb)
{
	if (rb) {
		kb_buf_free(&rb->head);
		free(rb);
	}
}

static void reqbuf_put(kb_http_server_t *srv, struct reqbuf *rb)
{
	if (!rb)
		return;
	if (!srv || srv->npool >= POOL_MAX || rb->head.cap > HEAD_KEEP) {
		reqbuf_free(rb);
		return;
	}
	rb->next_free = srv->pool;
	srv->pool = rb;
	srv->npool++;
}

static int reqbuf_append(struct reqbuf *rb, const char *s, size_t n, bool lower)
{
	if (kb_buf_reserve(&rb->head, n) < 0)
		return -ENOMEM;
	char *d = rb->head.data + rb->head.len;
	if (lower) {
		for (size_t i = 0; i < n; i++)
			d[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] + 32) : s[i];
	} else {
		memcpy(d, s, n);
	}
	rb->head.len += n;
	return 0;
}

/* ---- writing ---- */

static void write_cb(uv_write_t *req, int status)
{
	struct wreq *w = kb_container_of(req, struct wreq, req);
	struct conn *c = w->conn;
	/* a closed connection gave its count back when it closed */
	size_t h = w->held < c->w_held ? w->held : c->w_held;
	c->w_held -= h;
	c->srv->stream_held -= h;
	free(w);
	c->writes--;
	if (status < 0) {
		kb_debug("http", "conn %llu: write: %s", (unsigned long long)c->id,
			 uv_strerror(status));
		conn_close(c, "write error");
		return;
	}
	if (c->state == CS_DRAINING) {
		if (c->writes == 0)
			close_gracefully(c);
	} else if (c->writes == 0 && c->sq_head) {
		sq_pump(c); /* may end the request and start draining */
	}
}

/* Counts the protected records in ciphertext TLS produced after the
 * handshake: their number is the sequence number the record writer takes
 * over with. OpenSSL writes whole records into the memory BIO; should a
 * header ever straddle two flushes, the count is given up. */
static void count_records(struct conn *c, const uint8_t *p, size_t n)
{
	if (c->state == CS_HANDSHAKE || c->tx_unknown)
		return;
	size_t i = 0;
	if (c->tx_skip) {
		size_t k = c->tx_skip < n ? c->tx_skip : n;
		c->tx_skip -= (uint32_t)k;
		i = k;
	}
	while (i < n) {
		if (n - i < 5) {
			c->tx_unknown = true;
			return;
		}
		uint32_t len = ((uint32_t)p[i + 3] << 8) | p[i + 4];
		if (p[i] == KB_TLS13_APPLICATION_DATA)
			c->tx_records++;
		i += 5;
		size_t k = len < n - i ? len : n - i;
		c->tx_skip = len - (uint32_t)k;
		i += k;
	}
}

/* Queues a copy of what the socket did not take. 0 or a negative errno. */
static int write_rest(struct conn *c, const char *data, size_t n)
{
	struct wreq *w = malloc(sizeof(*w) + n);
	if (!w) {
		conn_close(c, "out of memory");
		return -ENOMEM;
	}
	memcpy(w->data, data, n);
	w->conn = c;
	w->held = c->state == CS_STREAMING ? n : 0;
	uv_buf_t buf = uv_buf_init(w->data, (unsigned)n);
	int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &buf, 1, write_cb);
	if (rc < 0) {
		free(w);
		conn_close(c, "uv_write failed");
		return rc;
	}
	held_add(c->srv, w->held);
	c->w_held += w->held;
	c->writes++;
	return 0;
}

static void batch_flush(kb_http_server_t *srv);

/* Writes ciphertext to the socket: what the socket takes now is written
 * at once, the rest is copied into a write request. 0 or a negative errno
 * (the connection is closing). */
static int write_out(struct conn *c, const char *data, size_t n)
{
	if (c->batched) /* its batched record goes first */
		batch_flush(c->srv);
	if (c->closing)
		return -ECONNRESET;
	uv_buf_t buf = uv_buf_init((char *)data, (unsigned)n);
	int done = uv_try_write((uv_stream_t *)&c->tcp, &buf, 1); /* EAGAIN behind queued writes */
	if (done < 0 && done != UV_EAGAIN) {
		kb_debug("http", "conn %llu: write: %s", (unsigned long long)c->id,
			 uv_strerror(done));
		conn_close(c, "write error");
		return done;
	}
	if (done < 0)
		done = 0;
	if ((size_t)done == n)
		return 0;
	return write_rest(c, data + done, n - (size_t)done);
}

/* ---- batched records of handed-over streams (sendbatch.h) ---- */

#define BATCH_SENDS 256
#define BATCH_ARENA (256u * 1024)

static void batch_done(void *owner, size_t sent, const uint8_t *rest, size_t rest_len, int err,
		       void *arg)
{
	(void)sent;
	(void)arg;
	struct conn *c = owner;
	c->batched = 0;
	if (err) {
		kb_debug("http", "conn %llu: send: %s", (unsigned long long)c->id, strerror(-err));
		conn_close(c, "write error");
	} else if (rest_len > 0) {
		write_rest(c, (const char *)rest, rest_len);
	} else if (c->sq_head) {
		sq_later(c); /* not from inside the batch's flush */
	}
}

static void batch_flush(kb_http_server_t *srv)
{
	if (!srv->batch || kb_sendbatch_empty(srv->batch))
		return;
	uv_prepare_stop(&srv->flush_prepare);
	uv_check_stop(&srv->flush_check);
	kb_sendbatch_flush(srv->batch, batch_done, srv);
}

static void flush_prepare_cb(uv_prepare_t *h)
{
	batch_flush(h->data);
}

static void flush_check_cb(uv_check_t *h)
{
	batch_flush(h->data);
}

/* Room in the batch for a record of n bytes of c, or NULL: write it now. */
static uint8_t *batch_room(struct conn *c, size_t n)
{
	kb_http_server_t *srv = c->srv;
	if (c->state != CS_STREAMING || srv->stopping || srv->batch_off || c->pumping)
		return NULL;
	if (c->batched) /* one send per socket and batch */
		batch_flush(srv);
	if (c->closing || c->writes > 0)
		return NULL;
	if (!srv->batch && !(srv->batch = kb_sendbatch_new(BATCH_SENDS, BATCH_ARENA))) {
		srv->batch_off = true;
		return NULL;
	}
	uint8_t *room = kb_sendbatch_room(srv->batch, n);
	if (!room && !kb_sendbatch_empty(srv->batch)) {
		batch_flush(srv);
		room = c->closing || c->writes > 0 ? NULL : kb_sendbatch_room(srv->batch, n);
	}
	return room;
}

/* Adds the record of len bytes sealed at the batch's room. */
static void batch_add(struct conn *c, size_t len)
{
	kb_http_server_t *srv = c->srv;
	uv_os_fd_t fd;
	KB_REQUIRE(uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0);
	if (kb_sendbatch_empty(srv->batch)) {
		uv_prepare_start(&srv->flush_prepare, flush_prepare_cb);
		uv_check_start(&srv->flush_check, flush_check_cb);
	}
	c->batched = kb_sendbatch_add(srv->batch, fd, len, c) + 1;
}

/* Room for n bytes of ciphertext in the server's write scratch. */
static char *wscratch(kb_http_server_t *srv, size_t n)
{
	struct kb_buf *b = &srv->wscratch;
	b->len = 0;
	return kb_buf_reserve(b, n) < 0 ? NULL : b->data;
}

static void shrink_wscratch(kb_http_server_t *srv)
{
	if (srv->wscratch.cap > 256 * 1024)
		kb_buf_free(&srv->wscratch);
}

/* Sends whatever TLS produced. 0 or a negative errno (connection closed). */
static int flush(struct conn *c)
{
	if (c->closing)
		return -ECONNRESET;
	if (c->tx)
		return 0; /* the record writer sends as it seals */
	size_t n = BIO_ctrl_pending(c->wbio);
	if (n == 0)
		return 0;
	char *data = wscratch(c->srv, n);
	if (!data) {
		conn_close(c, "out of memory");
		return -ENOMEM;
	}
	int got = BIO_read(c->wbio, data, (int)n);
	KB_REQUIRE(got == (int)n);
	count_records(c, (const uint8_t *)data, n);
	int rc = write_out(c, data, n);
	shrink_wscratch(c->srv);
	return rc;
}

/* Seals iov as records of `type` with the record writer and sends them. */
static int tx_send(struct conn *c, uint8_t type, const struct iovec *iov, int n)
{
	if (c->closing)
		return -ECONNRESET;
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	size_t need = kb_tls13_sealed_size(total);
	uint8_t *room = batch_room(c, need);
	if (c->closing)
		return -ECONNRESET;
	char *out = room ? (char *)room : wscratch(c->srv, need);
	size_t len = 0;
	int rc = out ? kb_tls13_seal(c->tx, type, iov, n, (uint8_t *)out, &len) : -ENOMEM;
	if (rc < 0) {
		conn_close(c, rc == -EOVERFLOW ? "record limit" : "seal failed");
		return rc;
	}
	if (room) {
		batch_add(c, len);
		return 0;
	}
	rc = write_out(c, out, len);
	shrink_wscratch(c->srv);
	return rc;
}

/* Encrypts into the write BIO without sending (with the record writer:
 * seals and sends). */
static int tls_put(struct conn *c, const char *data, size_t len)
{
	if (c->closing)
		return -ECONNRESET;
	if (len == 0)
		return 0;
	if (c->tx) {
		struct iovec v = {.iov_base = (void *)data, .iov_len = len};
		return tx_send(c, KB_TLS13_APPLICATION_DATA, &v, 1);
	}
	if (SSL_write(c->ssl, data, (int)len) <= 0) {
		kb_tls_log_errors("http", "SSL_write");
		conn_close(c, "SSL_write failed");
		return -EIO;
	}
	return 0;
}

static int tls_send(struct conn *c, const char *data, size_t len)
{
	int rc = tls_put(c, data, len);
	return rc < 0 ? rc : flush(c);
}

static BIO *new_mem_bio(void)
{
	BIO *b = BIO_new(BIO_s_mem());
	if (b)
		BIO_set_mem_eof_return(b, -1);
	return b;
}

static size_t bio_capacity(BIO *b)
{
	BUF_MEM *bm = NULL;
	BIO_get_mem_ptr(b, &bm);
	return bm ? bm->max : 0;
}

/* Gives back the memory an empty BIO kept from a large handshake flight,
 * request or response, so that idle connections stay small. */
static void shrink_bios(struct conn *c)
{
	if (!c->ssl || BIO_ctrl_pending(c->rbio) || BIO_ctrl_pending(c->wbio) ||
	    (bio_capacity(c->rbio) <= BIO_KEEP && bio_capacity(c->wbio) <= BIO_KEEP))
		return;
	BIO *r = new_mem_bio(), *w = new_mem_bio();
	if (!r || !w) {
		BIO_free(r);
		BIO_free(w);
		return;
	}
	SSL_set_bio(c->ssl, r, w);
	c->rbio = r;
	c->wbio = w;
}

/* ---- closing ---- */

static void conn_free(struct conn *c)
{
	SSL_free(c->ssl);
	if (c->tx) {
		kb_tls13_writer_wipe(c->tx);
		free(c->tx);
	}
	OPENSSL_cleanse(c->tx_secret, sizeof(c->tx_secret));
	reqbuf_put(c->srv, c->rb);
	free(c->head_copy);
	if (c->body != empty_string)
		free(c->body);
	free(c->pending);
	free(c);
}

/* The request ends: its done callback, once. */
static void req_ended(struct conn *c)
{
	kb_http_done_cb cb = c->done_cb;
	c->done_cb = NULL;
	if (cb)
		cb(c->status, c->done_arg);
}

static void release_request(struct conn *c)
{
	req_ended(c);
	reqbuf_put(c->srv, c->rb);
	c->rb = NULL;
	free(c->head_copy);
	c->head_copy = NULL;
	if (c->body != empty_string)
		free(c->body);
	c->body = NULL;
	c->body_cap = 0;
	c->long_stream = false;
	c->abort_cb = NULL;
	c->abort_arg = NULL;
	c->req_active = false;
	memset(&c->req.id, 0, offsetof(kb_http_req_t, peer) - offsetof(kb_http_req_t, id));
	c->req.data = NULL;
}

static void close_cb(uv_handle_t *h)
{
	struct conn *c = kb_container_of(h, struct conn, tcp);
	kb_http_server_t *srv = c->srv;
	dl_remove(&c->all);
	srv->nconns--;
	srv->handles--;
	if (c->req_active && c->end_queued) { /* answered, not all sent */
		req_ended(c);
		conn_free(c);
	} else if (c->req_active && c->abort_cb) {
		c->in_abort = true;
		c->abort_cb(&c->req, c->abort_arg);
		c->in_abort = false;
		req_ended(c);
		conn_free(c);
	} else if (c->req_active) {
		c->zombie = true;
		dl_append(&srv->zombies, &c->all);
	} else {
		conn_free(c);
	}
	srv_maybe_free(srv);
}

static void conn_close(struct conn *c, const char *why)
{
	if (c->closing)
		return;
	kb_debug("http", "conn %llu: close (%s)", (unsigned long long)c->id, why);
	c->closing = true;
	if (c->batched) {
		kb_sendbatch_forget(c->srv->batch, c->batched - 1);
		c->batched = 0;
	}
	tl_set(c, TL_NONE);
	if (c->resume.next != &c->resume)
		dl_remove(&c->resume);
	sq_drop(c);
	/* its queued writes are cancelled: their bytes are no longer held for
	 * it (the stream budget must not close another for them) */
	c->srv->stream_held -= c->w_held;
	c->w_held = 0;
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_close((uv_handle_t *)&c->tcp, close_cb);
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
	struct conn *c = req->data;
	free(req);
	if (status < 0 || c->closing) {
		conn_close(c, "shutdown");
		return;
	}
	if (c->peer_eof) {
		conn_close(c, "eof");
		return;
	}
	c->state = CS_LINGER;
	tl_set(c, TL_LINGER);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void start_reading(struct conn *c)
{
	if (c->closing)
		return;
	if (uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb) < 0)
		conn_close(c, "read start");
	else
		c->read_stopped = false;
}

/* Sends close_notify, waits for queued writes, then shuts down and lingers. */
static void close_gracefully(struct conn *c)
{
	if (c->closing)
		return;
	if (c->state != CS_DRAINING) {
		/* A slow reader of a large final answer gets the idle timeout. */
		c->state = CS_DRAINING;
		tl_set(c, TL_IDLE);
		if (c->tx) {
			static const char close_notify[2] = {1, 0}; /* warning, close_notify */
			struct iovec v = {.iov_base = (void *)close_notify, .iov_len = 2};
			if (tx_send(c, KB_TLS13_ALERT, &v, 1) < 0)
				return;
		} else {
			SSL_shutdown(c->ssl);
			ERR_clear_error();
			if (flush(c) < 0)
				return;
		}
	}
	if (c->writes > 0)
		return;
	uv_shutdown_t *req = malloc(sizeof(*req));
	if (!req) {
		conn_close(c, "out of memory");
		return;
	}
	req->data = c;
	if (uv_shutdown(req, (uv_stream_t *)&c->tcp, shutdown_cb) < 0) {
		free(req);
		conn_close(c, "shutdown failed");
		return;
	}
	if (c->read_stopped && !c->peer_eof)
		start_reading(c);
}

/* ---- responses ---- */

static const char *date_header(kb_http_server_t *srv)
{
	time_t now = time(NULL);
	if (now != srv->date_sec) {
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(srv->date, sizeof(srv->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		srv->date_sec = now;
	}
	return srv->date;
}

static bool status_has_body(int status)
{
	return !(status < 200 || status == 204 || status == 304);
}

/* Appends the status line and common headers to srv->scratch. */
static int build_head(struct conn *c, int status, const char *content_type, const char *extra,
		      bool chunked, size_t len, bool closing)
{
	kb_http_server_t *srv = c->srv;
	struct kb_buf *b = &srv->scratch;
	b->len = 0;
	c->status = status;
	/* written piece by piece, without printf: every response has one */
	char num[24], *e = num + sizeof(num);
	unsigned s = status > 0 && status < 1000 ? (unsigned)status : 500;
	char code[4] = {(char)('0' + s / 100), (char)('0' + s / 10 % 10), (char)('0' + s % 10),
			' '};
	int rc = kb_buf_append(b, "HTTP/1.1 ", 9);
	rc = rc ? rc : kb_buf_append(b, code, 4);
	rc = rc ? rc : kb_buf_puts(b, kb_http_reason(status));
	rc = rc ? rc : kb_buf_append(b, "\r\nDate: ", 8);
	rc = rc ? rc : kb_buf_puts(b, date_header(srv));
	rc = rc ? rc : kb_buf_append(b, "\r\n", 2);
	if (rc == 0 && content_type) {
		rc = kb_buf_append(b, "Content-Type: ", 14);
		rc = rc ? rc : kb_buf_puts(b, content_type);
		rc = rc ? rc : kb_buf_append(b, "\r\n", 2);
	}
	if (rc == 0 && chunked) {
		rc = kb_buf_puts(b, "Transfer-Encoding: chunked\r\n");
	} else if (rc == 0 && status_has_body(status)) {
		size_t n = len;
		*--e = '\n';
		*--e = '\r';
		do
			*--e = (char)('0' + n % 10);
		while ((n /= 10) != 0);
		rc = kb_buf_append(b, "Content-Length: ", 16);
		rc = rc ? rc : kb_buf_append(b, e, (size_t)(num + sizeof(num) - e));
	}
	if (rc == 0 && extra)
		rc = kb_buf_puts(b, extra);
	if (rc == 0 && closing)
		rc = kb_buf_puts(b, "Connection: close\r\n");
	if (rc == 0)
		rc = kb_buf_puts(b, "\r\n");
	return rc;
}

static void shrink_scratch(kb_http_server_t *srv)
{
	if (srv->scratch.cap > 1024 * 1024)
		kb_buf_free(&srv->scratch);
}

/* Queues the connection for conn_process() from the loop (never nested). */
static void queue_resume(struct conn *c)
{
	kb_http_server_t *srv = c->srv;
	if (c->closing || c->resume.next != &c->resume)
		return;
	dl_append(&srv->resumes, &c->resume);
	uv_idle_start(&srv->idle, idle_cb);
}

static bool input_buffered(struct conn *c)
{
	if (!c->ssl)
		return c->pending_len > c->pending_off;
	return c->pending_len > c->pending_off || BIO_ctrl_pending(c->rbio) > 0 ||
	       SSL_pending(c->ssl) > 0;
}

/* The response is complete: next request, or close. */
static void finish_request(struct conn *c)
{
	bool keep = c->keep_alive && !c->srv->stopping;
	kb_debug("http", "conn %llu: request %llu done", (unsigned long long)c->id,
		 (unsigned long long)c->req.id);
	release_request(c);
	if (c->closing)
		return;
	if (!keep) {
		close_gracefully(c);
		return;
	}
	c->state = CS_IDLE;
	c->msg_ready = false;
	llhttp_resume(&c->parser);
	shrink_bios(c);
	tl_set(c, TL_IDLE);
	if (c->read_stopped)
		start_reading(c);
	if (!c->in_process && input_buffered(c))
		queue_resume(c);
}

/* Frees a zombie request (its connection is gone) once answered. */
static void zombie_done(struct conn *c)
{
	dl_remove(&c->all);
	c->req_active = false;
	req_ended(c);
	kb_http_server_t *srv = c->srv;
	conn_free(c);
	srv_maybe_free(srv);
}

/* Common entry checks of the response functions. Returns 1 when the
 * response may be written, 0 when the connection is gone (request finished
 * or freed as appropriate), or a negative errno for misuse. */
static int response_gate(struct conn *c, bool ends)
{
	if (!c->req_active)
		return -EINVAL;
	if (c->zombie) {
		if (ends)
			zombie_done(c);
		return 0;
	}
	if (c->closing) {
		if (ends && !c->in_abort) {
			c->req_active = false;
			req_ended(c);
		}
		return 0;
	}
	return 1;
}

static int sq_push(struct conn *c, kb_http_shared_t *buf, const char *head, size_t hl, bool tail,
		   bool end);

/* A large body goes out from the connection's queue a record at a time as
 * the socket drains (one copy of it, not its ciphertext too); the request
 * finishes after it. A slow reader gets the idle timeout. */
static int queue_body(struct conn *c, const char *body, size_t len)
{
	kb_http_shared_t *s = kb_http_shared_new(body, len);
	int rc = s ? sq_push(c, s, "", 0, false, false) : -ENOMEM;
	kb_http_shared_unref(s);
	if (rc == 0)
		rc = sq_push(c, NULL, "", 0, false, true);
	if (rc < 0) {
		conn_close(c, "out of memory");
		return rc;
	}
	c->end_queued = true;
	c->body_queued = true;
	tl_set(c, TL_IDLE);
	if (c->writes == 0)
		sq_pump(c); /* may send it all and finish the request */
	return 0;
}

static int send_response(struct conn *c, int status, const char *content_type, const char *extra,
			 const char *body, size_t len)
{
	kb_http_server_t *srv = c->srv;
	bool closing = !c->keep_alive || srv->stopping;
	bool with_body = !c->is_head && status_has_body(status) && len > 0;
	int rc = build_head(c, status, content_type, extra, false, len, closing);
	if (rc == 0 && with_body && len <= COPY_BODY_MAX)
		rc = kb_buf_append(&srv->scratch, body, len);
	if (rc < 0) {
		conn_close(c, "out of memory");
		return rc;
	}
	rc = tls_put(c, srv->scratch.data, srv->scratch.len);
	shrink_scratch(srv);
	if (rc == 0 && with_body && len > SQ_QUEUE_BODY) {
		rc = flush(c);
		return rc < 0 ? rc : queue_body(c, body, len);
	}
	if (rc == 0 && with_body && len > COPY_BODY_MAX)
		rc = tls_put(c, body, len);
	return rc < 0 ? rc : flush(c);
}

int kb_http_respond(kb_http_req_t *req, int status, const char *content_type,
		    const char *extra_headers, const char *body, size_t len)
{
	struct conn *c = req->conn_;
	KB_CHECK(c->state == CS_HANDLER || c->zombie || c->closing, -EINVAL);
	int rc = response_gate(c, true);
	if (rc <= 0)
		return rc < 0 ? rc : -ECONNRESET;
	kb_debug("http", "conn %llu: %s %s -> %d (%zu bytes)", (unsigned long long)c->id,
		 req->method, req->path, status, len);
	rc =
	    send_response(c, status, content_type, extra_headers, body ? body : "", body ? len : 0);
	if (len > TRIM_AFTER) /* the caller frees the body next */
		schedule_trim(c->srv);
	if (c->body_queued) /* finished once the queued body is sent */
		c->body_queued = false;
	else
		finish_request(c);
	return rc;
}

/* ---- long streams: handing the connection to the record writer ---- */

/* Key-log callback: keeps each connection's server application traffic
 * secret, the one a record writer needs to take over the stream. */
static void keylog_cb(const SSL *ssl, const char *line)
{
	static const char label[] = "SERVER_TRAFFIC_SECRET_0 ";
	struct conn *c = SSL_get_app_data(ssl);
	if (!c || strncmp(line, label, sizeof(label) - 1) != 0)
		return;
	const char *hex = strchr(line + sizeof(label) - 1, ' '); /* after client_random */
	if (!hex)
		return;
	hex++;
	size_t n = strlen(hex) / 2;
	if (n > sizeof(c->tx_secret))
		return;
	for (size_t i = 0; i < n; i++) {
		int hi = kb_hexval(hex[2 * i]), lo = kb_hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return;
		c->tx_secret[i] = (uint8_t)(hi << 4 | lo);
	}
	c->tx_secret_len = (uint8_t)n;
}

/* The suite id when the connection can be handed to the record writer:
 * TLS 1.3, a supported AEAD, the secret known, the record count exact,
 * nothing buffered in either direction, no key update pending. */
static unsigned handover_suite(struct conn *c)
{
	if (!c->ssl || c->tx_unknown || c->tx_skip || c->tx_secret_len == 0 ||
	    SSL_version(c->ssl) != TLS1_3_VERSION || input_buffered(c) ||
	    BIO_ctrl_pending(c->wbio) > 0 || SSL_get_key_update_type(c->ssl) != SSL_KEY_UPDATE_NONE)
		return 0;
	const SSL_CIPHER *ci = SSL_get_current_cipher(c->ssl);
	unsigned suite = ci ? (unsigned)(SSL_CIPHER_get_id(ci) & 0xffff) : 0;
	return kb_tls13_supported(suite) ? suite : 0;
}

/* The jansson blocks kept for reuse and the heap's free pages go back. */
static void trim_heap(kb_http_server_t *srv)
{
	kb_json_alloc_flush();
	malloc_trim(0);
	srv->trimmed_at = uv_now(srv->loop);
}

static void trim_cb(uv_timer_t *t)
{
	trim_heap(t->data);
}

/* Every ALLOC_FLUSH_MS while requests come: the blocks jansson's
 * allocations keep for reuse (lib/json_alloc.c) go back to malloc; the
 * first period without a request also trims the heap, so a server gone
 * idle holds neither. */
static void aflush_cb(uv_timer_t *t)
{
	kb_http_server_t *srv = t->data;

	kb_json_alloc_enable(); /* the first time: a period after the start */
	if (srv->busy) {
		kb_json_alloc_flush();
		srv->busy = false;
		uv_timer_start(&srv->aflush, aflush_cb, ALLOC_FLUSH_MS, 0);
	} else {
		trim_heap(srv);
	}
}

static void note_busy(kb_http_server_t *srv)
{
	srv->busy = true;
	if (!srv->stopping && !uv_is_active((uv_handle_t *)&srv->aflush))
		uv_timer_start(&srv->aflush, aflush_cb, ALLOC_FLUSH_MS, 0);
}

/* Gives freed pages back soon (at most once per TRIM_EVERY_MS). */
static void schedule_trim(kb_http_server_t *srv)
{
	if (!srv || srv->stopping || uv_is_active((uv_handle_t *)&srv->trim))
		return;
	uint64_t now = uv_now(srv->loop), due = now + TRIM_DELAY_MS;
	if (srv->trimmed_at && due < srv->trimmed_at + TRIM_EVERY_MS)
		due = srv->trimmed_at + TRIM_EVERY_MS;
	uv_timer_start(&srv->trim, trim_cb, due - now, 0);
}

/* Keeps only method, path and query of the request (one small copy) and
 * gives its head buffer back to the pool. */
static int compact_request(struct conn *c)
{
	struct reqbuf *rb = c->rb;
	kb_http_req_t *r = &c->req;
	if (!rb)
		return 0;
	size_t plen = strlen(r->path) + 1, qlen = strlen(r->query) + 1;
	char *copy = malloc(plen + qlen);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, r->path, plen);
	memcpy(copy + plen, r->query, qlen);
	r->path = copy;
	r->query = copy + plen;
	r->headers = NULL;
	r->nheaders = 0;
	r->peer_cert = NULL;
	c->head_copy = copy;
	reqbuf_put(c->srv, rb);
	c->rb = NULL;
	return 0;
}

/* Frees the connection's OpenSSL state; from now on its records are sealed
 * by a kb_tls13_writer taking over at the record count seen so far. */
static void hand_over(struct conn *c, unsigned suite)
{
	struct kb_tls13_writer *tx = malloc(sizeof(*tx));
	if (!tx)
		return;
	int rc = kb_tls13_writer_init(tx, suite, c->tx_secret, c->tx_secret_len, c->tx_records);
	OPENSSL_cleanse(c->tx_secret, sizeof(c->tx_secret));
	c->tx_secret_len = 0;
	if (rc < 0 || compact_request(c) < 0) {
		kb_tls13_writer_wipe(tx);
		free(tx);
		c->tx_unknown = true;
		return;
	}
	SSL_free(c->ssl);
	c->ssl = NULL;
	c->rbio = c->wbio = NULL;
	c->peer_cert = NULL;
	c->tx = tx;
	schedule_trim(c->srv);
	kb_debug("http", "conn %llu: stream handed to the record writer at record %llu",
		 (unsigned long long)c->id, (unsigned long long)tx->seq);
}

/* "<hex length>\r\n" into buf (at least 20 bytes); returns its length. */
static size_t chunk_head(char *buf, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	size_t n = 0;
	do {
		tmp[n++] = digits[len & 15];
		len >>= 4;
	} while (len);
	for (size_t i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\r';
	buf[n + 1] = '\n';
	return n + 2;
}

void kb_http_stream_long(kb_http_req_t *req)
{
	struct conn *c = req->conn_;
	c->long_stream = true;
}

int kb_http_stream_start(kb_http_req_t *req, int status, const char *content_type,
			 const char *extra_headers)
{
	struct conn *c = req->conn_;
	int rc = response_gate(c, false);
	if (rc <= 0)
		return rc < 0 ? rc : -ECONNRESET;
	KB_CHECK(c->state == CS_HANDLER, -EINVAL);
	/* What TLS still holds (a session ticket written with the handshake's
	 * end) goes out first, so that its records are counted. */
	if (c->long_stream && flush(c) < 0)
		return -ECONNRESET;
	unsigned suite = c->long_stream ? handover_suite(c) : 0;
	if (suite)
		c->keep_alive = false; /* the writer cannot read a next request */
	bool closing = !c->keep_alive || c->srv->stopping;
	rc = build_head(c, status, content_type, extra_headers, true, 0, closing);
	if (rc < 0) {
		conn_close(c, "out of memory");
		return rc;
	}
	c->state = CS_STREAMING;
	kb_debug("http", "conn %llu: %s %s -> %d streaming", (unsigned long long)c->id, req->method,
		 req->path, status);
	rc = tls_send(c, c->srv->scratch.data, c->srv->scratch.len);
	if (rc == 0 && suite && handover_suite(c) == suite)
		hand_over(c, suite);
	return rc;
}

/* ---- stream queues ---- */

kb_http_shared_t *kb_http_shared_new(const char *data, size_t len)
{
	kb_http_shared_t *s = malloc(sizeof(*s) + len + 1);
	if (!s)
		return NULL;
	s->refs = 1;
	s->queued = 0;
	s->len = len;
	if (data)
		memcpy(s->data, data, len);
	s->data[len] = '\0';
	return s;
}

kb_http_shared_t *kb_http_shared_ref(kb_http_shared_t *s)
{
	s->refs++;
	return s;
}

void kb_http_shared_unref(kb_http_shared_t *s)
{
	if (s && --s->refs == 0)
		free(s);
}

size_t kb_http_stream_held(const kb_http_server_t *srv)
{
	return srv->stream_held;
}

uint64_t kb_http_streams_cut(const kb_http_server_t *srv)
{
	return srv->streams_cut;
}

static void held_add(kb_http_server_t *srv, size_t n)
{
	srv->stream_held += n;
	if (srv->stream_held > srv->stream_held_peak)
		srv->stream_held_peak = srv->stream_held;
}

/* Appends an entry; 0 or -ENOMEM (the connection is then closing). */
static int sq_push(struct conn *c, kb_http_shared_t *buf, const char *head, size_t hl, bool tail,
		   bool end)
{
	struct sq *e = calloc(1, sizeof(*e));
	if (!e) {
		conn_close(c, "out of memory");
		return -ENOMEM;
	}
	KB_REQUIRE(hl <= sizeof(e->head));
	memcpy(e->head, head, hl);
	e->hl = (uint8_t)hl;
	e->tail = tail;
	e->end = end;
	e->buf = buf ? kb_http_shared_ref(buf) : NULL;
	e->held = c->state == CS_STREAMING; /* a response's body is not a stream's */
	if (buf && e->held) {
		if (buf->held_by && buf->held_by != c->srv) {
			e->own = true; /* another server counts it: this one too */
			held_add(c->srv, buf->len);
		} else if (buf->queued++ == 0) {
			buf->held_by = c->srv;
			held_add(c->srv, buf->len);
		}
	}
	e->total = hl + (buf ? buf->len : 0) + (tail ? 2 : 0);
	c->sq_bytes += e->total;
	if (c->sq_tail)
		c->sq_tail->next = e;
	else if (e->held)
		dl_append(&c->srv->blocked, &c->blocked);
	if (!c->sq_head)
		c->sq_head = e;
	c->sq_tail = e;
	return 0;
}

/* Removes the head entry; true when it was the stream's end. */
static bool sq_pop(struct conn *c)
{
	struct sq *e = c->sq_head;
	bool end = e->end;
	c->sq_head = e->next;
	if (!c->sq_head) {
		c->sq_tail = NULL;
		dl_remove(&c->blocked); /* unlinked: a no-op */
	}
	c->sq_bytes -= e->total - e->off;
	kb_http_server_t *srv = c->srv;
	if (e->buf && e->held && e->own) {
		srv->stream_held -= e->buf->len;
	} else if (e->buf && e->held && --e->buf->queued == 0) {
		srv->stream_held -= e->buf->len; /* srv is held_by */
		e->buf->held_by = NULL;
	}
	kb_http_shared_unref(e->buf);
	free(e);
	if (srv->stream_held == 0 && srv->stream_held_peak > TRIM_AFTER) {
		srv->stream_held_peak = 0;
		schedule_trim(srv);
	}
	return end;
}

/* Frees the queue of a connection that closes. */
static void sq_drop(struct conn *c)
{
	while (c->sq_head)
		sq_pop(c);
	if (!dl_empty(&c->pumpl))
		dl_remove(&c->pumpl);
}

/* The unsent part of e, up to room bytes, as iovecs; returns how many. */
static int sq_iov(const struct sq *e, size_t room, struct iovec *v, size_t *took)
{
	const char *seg[3] = {e->head, e->buf ? e->buf->data : "", "\r\n"};
	size_t len[3] = {e->hl, e->buf ? e->buf->len : 0, e->tail ? 2 : 0};
	size_t off = e->off;
	int n = 0;
	*took = 0;
	for (int i = 0; i < 3 && room > 0; i++) {
		if (off >= len[i]) {
			off -= len[i];
			continue;
		}
		size_t k = len[i] - off < room ? len[i] - off : room;
		v[n++] = (struct iovec){.iov_base = (void *)(seg[i] + off), .iov_len = k};
		room -= k;
		*took += k;
		off = 0;
	}
	return n;
}

/* Seals and writes the pieces (to the socket directly, not the batch). */
static int sq_write(struct conn *c, const struct iovec *v, int n)
{
	if (c->tx)
		return tx_send(c, KB_TLS13_APPLICATION_DATA, v, n);
	for (int i = 0; i < n; i++) {
		int rc = tls_put(c, v[i].iov_base, v[i].iov_len);
		if (rc < 0)
			return rc;
	}
	return flush(c);
}

/* Marks n bytes of the queue sent; the stream ends after its last chunk. */
static void sq_advance(struct conn *c, size_t n)
{
	while (c->sq_head) {
		struct sq *e = c->sq_head;
		size_t k = e->total - e->off < n ? e->total - e->off : n;
		e->off += k;
		c->sq_bytes -= k;
		n -= k;
		if (e->off < e->total)
			return;
		e->off = e->total;
		if (sq_pop(c)) {
			c->end_queued = false;
			finish_request(c);
			return;
		}
	}
}

/* Pumps c's queue from the idle callback (after the I/O callbacks: a write
 * that fans an event out to many streams is answered first). */
static void sq_later(struct conn *c)
{
	if (c->closing || !dl_empty(&c->pumpl))
		return;
	dl_append(&c->srv->pumps, &c->pumpl);
	uv_idle_start(&c->srv->idle, idle_cb);
}

/* Sends from the queue while the socket takes all it is given: a piece at a
 * time, so that what it does not take is one piece of ciphertext; after
 * SQ_PUMP_STEPS pieces the other connections get their turn. */
static void sq_pump(struct conn *c)
{
	c->pumping = true;
	for (int step = 0; c->sq_head && !c->closing && c->writes == 0; step++) {
		if (step == SQ_PUMP_STEPS) { /* the others' turn: go on from idle_cb */
			sq_later(c);
			break;
		}
		struct iovec v[SQ_IOV];
		int n = 0;
		size_t room = SQ_PIECE, took;
		for (const struct sq *e = c->sq_head; e && room > 0 && n + 3 <= SQ_IOV;
		     e = e->next) {
			n += sq_iov(e, room, v + n, &took);
			room -= took;
		}
		if (n > 0 && sq_write(c, v, n) < 0)
			break;
		sq_advance(c, SQ_PIECE - room);
	}
	c->pumping = false;
}

/* Past the budget, closes the connections blocked longest. */
static void sq_budget(kb_http_server_t *srv)
{
	while (srv->stream_held > srv->opts.stream_budget && !dl_empty(&srv->blocked)) {
		struct conn *v = kb_container_of(srv->blocked.next, struct conn, blocked);
		kb_warn("http",
			"conn %llu: closing a stream whose reader is too slow (%zu bytes queued; "
			"%zu held for slow readers, budget %zu)",
			(unsigned long long)v->id, v->sq_bytes, srv->stream_held,
			srv->opts.stream_budget);
		srv->streams_cut++;
		conn_close(v, "stream budget");
	}
}

/* Writes one chunk now (the queue is empty and the socket takes bytes). */
static int stream_write_now(struct conn *c, const char *head, size_t hl, const char *data,
			    size_t len)
{
	if (c->tx) { /* sealed straight from the pieces, no copy */
		struct iovec v[3] = {{.iov_base = (void *)head, .iov_len = hl},
				     {.iov_base = (void *)data, .iov_len = len},
				     {.iov_base = (void *)"\r\n", .iov_len = 2}};
		return tx_send(c, KB_TLS13_APPLICATION_DATA, v, 3);
	}
	struct kb_buf *b = &c->srv->scratch;
	b->len = 0;
	int rc = kb_buf_append(b, head, hl);
	if (rc == 0)
		rc = kb_buf_append(b, data, len);
	if (rc == 0)
		rc = kb_buf_append(b, "\r\n", 2);
	if (rc < 0) {
		conn_close(c, "out of memory");
		return rc;
	}
	rc = tls_put(c, b->data, b->len);
	shrink_scratch(c->srv);
	return rc < 0 ? rc : flush(c);
}

/* One chunk: written now when nothing waits and it is small, else queued
 * (shared, or a copy of data when s is NULL). */
static int stream_chunk(struct conn *c, kb_http_shared_t *s, const char *data, size_t len)
{
	char head[24];
	size_t hl = chunk_head(head, len);
	if (!c->sq_head && c->writes == 0 && len <= SQ_PIECE)
		return stream_write_now(c, head, hl, data, len);
	kb_http_shared_t *own = s ? NULL : kb_http_shared_new(data, len);
	if (!s && !own) {
		conn_close(c, "out of memory");
		return -ENOMEM;
	}
	int rc = sq_push(c, s ? s : own, head, hl, true, false);
	kb_http_shared_unref(own);
	if (rc < 0)
		return rc;
	if (c->writes == 0)
		sq_later(c);
	sq_budget(c->srv);
	return c->closing ? -ECONNRESET : 0;
}

int kb_http_stream_write(kb_http_req_t *req, const char *data, size_t len)
{
	struct conn *c = req->conn_;
	int rc = response_gate(c, false);
	if (rc <= 0)
		return rc < 0 ? rc : -ECONNRESET;
	KB_CHECK(c->state == CS_STREAMING, -EINVAL);
	if (len == 0)
		return 0;
	return stream_chunk(c, NULL, data, len);
}

int kb_http_stream_send(kb_http_req_t *req, kb_http_shared_t *s)
{
	struct conn *c = req->conn_;
	int rc = response_gate(c, false);
	if (rc <= 0)
		return rc < 0 ? rc : -ECONNRESET;
	KB_CHECK(c->state == CS_STREAMING && s, -EINVAL);
	if (s->len == 0)
		return 0;
	return stream_chunk(c, s, s->data, s->len);
}

size_t kb_http_stream_hot(const kb_http_req_t *req, struct kb_http_hot *out, size_t max)
{
	const struct conn *c = req->conn_;
	size_t n = 0;
	if (n < max)
		out[n++] = (struct kb_http_hot){c, sizeof(*c)};
	if (c->tx && n < max)
		out[n++] = (struct kb_http_hot){c->tx, sizeof(*c->tx)};
	if (c->tx && c->tx->ctx && n < max) /* opaque: its first lines */
		out[n++] = (struct kb_http_hot){c->tx->ctx, 128};
	return n;
}

int kb_http_stream_end(kb_http_req_t *req)
{
	struct conn *c = req->conn_;
	int rc = response_gate(c, true);
	if (rc <= 0)
		return rc < 0 ? rc : -ECONNRESET;
	KB_CHECK(c->state == CS_STREAMING, -EINVAL);
	if (c->sq_head) { /* after what waits; a slow reader gets the idle timeout */
		rc = sq_push(c, NULL, "0\r\n\r\n", 5, false, true);
		if (rc == 0) {
			c->end_queued = true;
			tl_set(c, TL_IDLE);
		}
		return rc;
	}
	rc = tls_send(c, "0\r\n\r\n", 5);
	finish_request(c);
	return rc;
}

int kb_http_stream_cut(kb_http_req_t *req)
{
	struct conn *c = req->conn_;
	int rc = response_gate(c, true);
	if (rc <= 0)
		return rc;
	KB_CHECK(c->state == CS_STREAMING, -EINVAL);
	c->req_active = false;
	req_ended(c);
	conn_close(c, "stream cut");
	return 0;
}

size_t kb_http_stream_pending(const kb_http_req_t *req)
{
	const struct conn *c = req->conn_;
	if (c->zombie || c->closing)
		return 0;
	return c->sq_bytes + uv_stream_get_write_queue_size((const uv_stream_t *)&c->tcp) +
	       (c->wbio ? BIO_ctrl_pending(c->wbio) : 0);
}

void kb_http_req_on_abort(kb_http_req_t *req, kb_http_abort_cb cb, void *arg)
{
	struct conn *c = req->conn_;
	c->abort_cb = cb;
	c->abort_arg = arg;
}

void kb_http_req_on_done(kb_http_req_t *req, kb_http_done_cb cb, void *arg)
{
	struct conn *c = req->conn_;
	c->done_cb = cb;
	c->done_arg = arg;
}

/* ---- upgraded connections ---- */

int kb_http_upgrade(kb_http_req_t *req, const char *extra_headers, kb_http_raw_cb on_data,
		    void *arg)
{
	struct conn *c = req->conn_;
	KB_CHECK(on_data, -EINVAL);
	int rc = response_gate(c, false);
	if (rc <= 0)
		return rc < 0 ? rc : -ECONNRESET;
	KB_CHECK(c->state == CS_HANDLER && c->upgrade && c->ssl, -EINVAL);
	c->keep_alive = false;
	rc = build_head(c, 101, NULL, extra_headers, false, 0, false);
	if (rc < 0) {
		conn_close(c, "out of memory");
		return rc;
	}
	c->state = CS_UPGRADED;
	c->raw_cb = on_data;
	c->raw_arg = arg;
	kb_debug("http", "conn %llu: %s %s -> 101", (unsigned long long)c->id, req->method,
		 req->path);
	rc = tls_send(c, c->srv->scratch.data, c->srv->scratch.len);
	if (rc == 0)
		queue_resume(c); /* what the client already sent, from the loop */
	return rc;
}

int kb_http_raw_write(kb_http_req_t *req, const char *data, size_t len)
{
	struct conn *c = req->conn_;
	int rc = response_gate(c, false);
	if (rc <= 0)
		return rc < 0 ? rc : -ECONNRESET;
	KB_CHECK(c->state == CS_UPGRADED, -EINVAL);
	return tls_send(c, data, len);
}

void kb_http_raw_pause(kb_http_req_t *req, bool pause)
{
	struct conn *c = req->conn_;
	if (c->zombie || c->closing || c->state != CS_UPGRADED || c->raw_paused == pause)
		return;
	c->raw_paused = pause;
	if (!pause)
		queue_resume(c);
}

int kb_http_raw_end(kb_http_req_t *req)
{
	struct conn *c = req->conn_;
	int rc = response_gate(c, true);
	if (rc <= 0)
		return rc < 0 ? rc : -ECONNRESET;
	KB_CHECK(c->state == CS_UPGRADED, -EINVAL);
	c->raw_cb = NULL;
	finish_request(c);
	return 0;
}

/* Answers a protocol error (400, 413, 431) and closes. */
static void send_error(struct conn *c, int status)
{
	const char *body = status == 413 ? status_413_body : kb_http_reason(status);
	const char *type = status == 413 ? "application/json" : "text/plain; charset=utf-8";
	kb_debug("http", "conn %llu: protocol error %d", (unsigned long long)c->id, status);
	c->keep_alive = false;
	c->is_head = false;
	if (send_response(c, status, type, NULL, body, strlen(body)) == 0)
		close_gracefully(c);
}

/* ---- parsing ---- */

static struct conn *parser_conn(llhttp_t *p)
{
	return kb_container_of(p, struct conn, parser);
}

static int collect(llhttp_t *p, const char *at, size_t len, bool lower)
{
	struct conn *c = parser_conn(p);
	if (c->rb->head.len + len > KB_HTTP_MAX_HEAD) {
		c->head_too_big = true;
		return -1;
	}
	return reqbuf_append(c->rb, at, len, lower) < 0 ? -1 : 0;
}

/* Ends the current token with a NUL; returns its offset. */
static int end_token(struct conn *c, uint32_t *off)
{
	*off = c->tok_off;
	if (reqbuf_append(c->rb, "", 1, false) < 0)
		return -1;
	c->tok_off = (uint32_t)c->rb->head.len;
	return 0;
}

static int on_message_begin(llhttp_t *p)
{
	struct conn *c = parser_conn(p);
	if (!c->rb && !(c->rb = reqbuf_get(c->srv)))
		return -1;
	c->rb->head.len = 0;
	c->tok_off = 0;
	c->req.nheaders = 0;
	c->head_too_big = c->body_too_big = false;
	return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
	return collect(p, at, len, false);
}

static int on_url_complete(llhttp_t *p)
{
	uint32_t off;
	return end_token(parser_conn(p), &off);
}

/* RFC 9110 token characters: what a header name may hold. llhttp (8.1) lets
 * a space through, which Go's server (and so kube-apiserver) refuses. */
static bool is_token_char(unsigned char ch)
{
	if (ch >= '0' && ch <= '9')
		return true;
	if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z')
		return true;
	return ch && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (!is_token_char((unsigned char)at[i])) {
			llhttp_set_error_reason(p, "invalid header name");
			return HPE_USER;
		}
	}
	return collect(p, at, len, true);
}

static int on_header_field_complete(llhttp_t *p)
{
	struct conn *c = parser_conn(p);
	if (c->req.nheaders >= KB_HTTP_MAX_HEADERS) {
		c->head_too_big = true;
		return -1;
	}
	return end_token(c, &c->rb->off[c->req.nheaders][0]);
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
	return collect(p, at, len, false);
}

static int on_header_value_complete(llhttp_t *p)
{
	struct conn *c = parser_conn(p);
	if (end_token(c, &c->rb->off[c->req.nheaders][1]) < 0)
		return -1;
	c->req.nheaders++;
	return 0;
}

/* Points the request's fields into the finished head buffer. */
static void finalize_head(struct conn *c)
{
	struct reqbuf *rb = c->rb;
	kb_http_req_t *r = &c->req;
	for (size_t i = 0; i < r->nheaders; i++) {
		rb->hdrs[i].name = rb->head.data + rb->off[i][0];
		rb->hdrs[i].value = rb->head.data + rb->off[i][1];
	}
	r->headers = rb->hdrs;
	r->path = rb->head.data;
	char *q = strchr(rb->head.data, '?');
	if (q) {
		*q = '\0';
		r->query = q + 1;
	} else {
		r->query = empty_string;
	}
	r->method = llhttp_method_name((llhttp_method_t)llhttp_get_method(&c->parser));
	r->body = empty_string;
	r->body_len = 0;
	c->body = empty_string;
}

static bool expects_continue(struct conn *c)
{
	const char *e = kb_http_req_header(&c->req, "expect");
	return e && strcasecmp(e, "100-continue") == 0;
}

static int on_headers_complete(llhttp_t *p)
{
	struct conn *c = parser_conn(p);
	finalize_head(c);
	c->is_head = strcmp(c->req.method, "HEAD") == 0;
	c->upgrade = p->upgrade != 0;
	bool has_len = (p->flags & F_CONTENT_LENGTH) != 0;
	bool chunked = (p->flags & F_CHUNKED) != 0;
	if (has_len && p->content_length > c->srv->opts.max_body) {
		c->body_too_big = true;
		return -1;
	}
	if (has_len && p->content_length > 0) {
		c->body = malloc((size_t)p->content_length + 1);
		if (!c->body) {
			c->body = empty_string;
			return -1;
		}
		c->body_cap = (size_t)p->content_length + 1;
	}
	c->state = CS_BODY;
	tl_set(c, TL_IDLE);
	if ((chunked || (has_len && p->content_length > 0)) && expects_continue(c))
		if (tls_send(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
			return -1;
	return 0;
}

static int grow_body(struct conn *c, size_t need)
{
	size_t cap = c->body_cap ? c->body_cap : 4096;
	while (cap < need)
		cap *= 2;
	if (cap > c->srv->opts.max_body + 1)
		cap = c->srv->opts.max_body + 1;
	char *b = realloc(c->body == empty_string ? NULL : c->body, cap);
	if (!b)
		return -1;
	c->body = b;
	c->body_cap = cap;
	return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
	struct conn *c = parser_conn(p);
	size_t have = c->req.body_len;
	if (have + len > c->srv->opts.max_body) {
		c->body_too_big = true;
		return -1;
	}
	if (have + len + 1 > c->body_cap && grow_body(c, have + len + 1) < 0)
		return -1;
	memcpy(c->body + have, at, len);
	c->req.body_len = have + len;
	return 0;
}

static int on_message_complete(llhttp_t *p)
{
	struct conn *c = parser_conn(p);
	c->keep_alive = llhttp_should_keep_alive(p) && !c->upgrade;
	c->msg_ready = true;
	return HPE_PAUSED;
}

static void init_settings(llhttp_settings_t *s)
{
	llhttp_settings_init(s);
	s->on_message_begin = on_message_begin;
	s->on_url = on_url;
	s->on_url_complete = on_url_complete;
	s->on_header_field = on_header_field;
	s->on_header_field_complete = on_header_field_complete;
	s->on_header_value = on_header_value;
	s->on_header_value_complete = on_header_value_complete;
	s->on_headers_complete = on_headers_complete;
	s->on_body = on_body;
	s->on_message_complete = on_message_complete;
}

/* ---- dispatch ---- */

static void dispatch(struct conn *c)
{
	kb_http_server_t *srv = c->srv;
	kb_http_req_t *r = &c->req;
	if (c->body != empty_string)
		c->body[r->body_len] = '\0';
	r->body = c->body;
	r->id = ++srv->req_seq;
	r->peer_cert = c->peer_cert;
	r->data = NULL;
	r->conn_ = c;
	c->state = CS_HANDLER;
	c->req_active = true;
	c->status = 0;
	tl_set(c, TL_NONE);
	kb_debug("http", "conn %llu: request %llu %s %s", (unsigned long long)c->id,
		 (unsigned long long)r->id, r->method, r->path);
	srv->on_request(r, srv->arg);
}

static int save_pending(struct conn *c, const char *data, size_t len)
{
	char *p = malloc(len);
	if (!p)
		return -ENOMEM;
	memcpy(p, data, len);
	free(c->pending);
	c->pending = p;
	c->pending_len = len;
	c->pending_off = 0;
	return 0;
}

static void drop_pending(struct conn *c)
{
	free(c->pending);
	c->pending = NULL;
	c->pending_len = c->pending_off = 0;
}

static int parse_error_status(struct conn *c)
{
	if (c->body_too_big)
		return 413;
	if (c->head_too_big)
		return 431;
	return 400;
}

/* Feeds plaintext to llhttp; dispatches a complete request. */
static void feed(struct conn *c, const char *data, size_t len, bool from_pending)
{
	if (c->state == CS_IDLE) {
		c->state = CS_HEAD;
		tl_set(c, TL_HEAD);
	}
	llhttp_errno_t err = llhttp_execute(&c->parser, data, len);
	if (c->closing)
		return;
	if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
		size_t used = (size_t)(llhttp_get_error_pos(&c->parser) - data);
		if (from_pending)
			c->pending_off += used;
		else if (used < len && save_pending(c, data + used, len - used) < 0) {
			conn_close(c, "out of memory");
			return;
		}
		if (c->pending_off >= c->pending_len)
			drop_pending(c);
		if (c->msg_ready)
			dispatch(c);
		return;
	}
	if (from_pending)
		drop_pending(c);
	if (err != HPE_OK) {
		kb_debug("http", "conn %llu: parse error %s (%s)", (unsigned long long)c->id,
			 llhttp_errno_name(err), llhttp_get_error_reason(&c->parser));
		send_error(c, parse_error_status(c));
	}
}

static bool parsing(const struct conn *c)
{
	return !c->closing && (c->state == CS_IDLE || c->state == CS_HEAD || c->state == CS_BODY);
}

static void handshake_done(struct conn *c)
{
	X509 *cert = SSL_get0_peer_certificate(c->ssl);
	if (cert && SSL_get_verify_result(c->ssl) == X509_V_OK)
		c->peer_cert = cert;
	c->state = CS_IDLE;
	tl_set(c, TL_IDLE);
	shrink_bios(c);
	kb_debug("http", "conn %llu: TLS %s %s%s", (unsigned long long)c->id,
		 SSL_get_version(c->ssl), SSL_session_reused(c->ssl) ? "resumed" : "new",
		 c->peer_cert ? " with client certificate" : "");
}

/* 1: done, 0: needs more input, <0: failed (connection closing). */
static int handshake_step(struct conn *c)
{
	int r = SSL_do_handshake(c->ssl);
	if (r == 1) {
		handshake_done(c);
		return 1;
	}
	int e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return flush(c) < 0 ? -1 : 0;
	kb_debug("http", "conn %llu: TLS handshake failed", (unsigned long long)c->id);
	ERR_clear_error();
	c->keep_alive = false;
	close_gracefully(c);
	return -1;
}

/* One SSL_read; false when no more plaintext is available now. */
static bool read_plain(struct conn *c)
{
	kb_http_server_t *srv = c->srv;
	int n = SSL_read(c->ssl, srv->plain, sizeof(srv->plain));
	if (n > 0) {
		feed(c, srv->plain, (size_t)n, false);
		return true;
	}
	int e = SSL_get_error(c->ssl, n);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return false;
	if (e == SSL_ERROR_ZERO_RETURN) {
		c->keep_alive = false;
		close_gracefully(c);
	} else {
		kb_tls_log_errors("http", "SSL_read");
		conn_close(c, "TLS error");
	}
	return false;
}

/* An upgraded connection: hands what the client sent to the handler. */
static void raw_deliver(struct conn *c)
{
	kb_http_server_t *srv = c->srv;
	while (!c->closing && !c->raw_paused && c->state == CS_UPGRADED) {
		if (c->pending_len > c->pending_off) {
			/* bytes that came with the request head */
			char *p = c->pending;
			size_t off = c->pending_off, len = c->pending_len - off;
			c->pending = NULL;
			c->pending_len = c->pending_off = 0;
			c->raw_cb(&c->req, p + off, len, c->raw_arg);
			free(p);
			continue;
		}
		int n = SSL_read(c->ssl, srv->plain, sizeof(srv->plain));
		if (n > 0) {
			c->raw_cb(&c->req, srv->plain, (size_t)n, c->raw_arg);
			continue;
		}
		int e = SSL_get_error(c->ssl, n);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			break;
		if (e == SSL_ERROR_ZERO_RETURN) {
			conn_close(c, "client closed the upgraded connection");
		} else {
			kb_tls_log_errors("http", "SSL_read");
			conn_close(c, "TLS error");
		}
		return;
	}
	if (!c->closing && c->read_stopped && !c->raw_paused)
		start_reading(c);
}

static void conn_process(struct conn *c)
{
	if (c->in_process || c->closing)
		return;
	c->in_process = true;
	if (c->state == CS_HANDSHAKE && handshake_step(c) <= 0)
		goto out;
	if (c->state == CS_UPGRADED) {
		raw_deliver(c);
		goto out;
	}
	while (parsing(c)) {
		if (c->pending_len > c->pending_off) {
			feed(c, c->pending + c->pending_off, c->pending_len - c->pending_off, true);
			continue;
		}
		if (!read_plain(c))
			break;
	}
	if (!c->closing)
		flush(c);
out:
	c->in_process = false;
}

/* ---- reading ---- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = kb_container_of(h, struct conn, tcp);
	*buf = uv_buf_init(c->srv->readbuf, sizeof(c->srv->readbuf));
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = kb_container_of(s, struct conn, tcp);
	if (nread == 0)
		return;
	if (nread == UV_EOF && c->state == CS_DRAINING) {
		/* Let the final answer go out first; shutdown_cb closes. */
		c->peer_eof = true;
		uv_read_stop(s);
		return;
	}
	if (nread < 0) {
		conn_close(c, nread == UV_EOF ? "eof" : uv_strerror((int)nread));
		return;
	}
	if (c->state == CS_DRAINING || c->state == CS_LINGER)
		return; /* discarded */
	note_busy(c->srv);
	if (c->tx) {
		/* A handed-over stream cannot decrypt: the client's only business
		 * now is its close_notify (or a key update, which we cannot
		 * follow). Either way the stream is over. */
		conn_close(c, "client spoke during a handed-over stream");
		return;
	}
	if (BIO_write(c->rbio, buf->base, (int)nread) != (int)nread) {
		conn_close(c, "out of memory");
		return;
	}
	if (c->state == CS_BODY)
		tl_set(c, TL_IDLE);
	if (c->state == CS_HANDLER || c->state == CS_STREAMING ||
	    (c->state == CS_UPGRADED && c->raw_paused)) {
		if (BIO_ctrl_pending(c->rbio) > RBIO_HIGH) {
			uv_read_stop(s);
			c->read_stopped = true;
		}
		return;
	}
	conn_process(c);
}

static void idle_cb(uv_idle_t *h)
{
	kb_http_server_t *srv = kb_container_of(h, kb_http_server_t, idle);
	while (!dl_empty(&srv->resumes)) {
		struct conn *c = kb_container_of(srv->resumes.next, struct conn, resume);
		dl_remove(&c->resume);
		conn_process(c);
	}
	struct dlink turn; /* this pass's: a pump may queue its conn for the next */
	dl_init(&turn);
	if (!dl_empty(&srv->pumps)) {
		turn.next = srv->pumps.next;
		turn.prev = srv->pumps.prev;
		turn.next->prev = turn.prev->next = &turn;
		dl_init(&srv->pumps);
	}
	while (!dl_empty(&turn)) {
		struct conn *c = kb_container_of(turn.next, struct conn, pumpl);
		dl_remove(&c->pumpl);
		if (c->writes == 0)
			sq_pump(c);
	}
	if (dl_empty(&srv->resumes) && dl_empty(&srv->pumps))
		uv_idle_stop(h);
}

/* ---- accepting ---- */

static void peer_name(struct conn *c)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			uv_ip6_name(a, ip, sizeof(ip));
			port = ntohs(a->sin6_port);
			snprintf(c->req.peer, sizeof(c->req.peer), "[%s]:%d", ip, port);
			return;
		}
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		uv_ip4_name(a, ip, sizeof(ip));
		port = ntohs(a->sin_port);
	}
	snprintf(c->req.peer, sizeof(c->req.peer), "%s:%d", ip, port);
}

static int conn_tls_init(struct conn *c)
{
	c->ssl = SSL_new(c->srv->ctx);
	if (!c->ssl)
		return -ENOMEM;
	c->rbio = new_mem_bio();
	c->wbio = new_mem_bio();
	if (!c->rbio || !c->wbio) {
		BIO_free(c->rbio);
		BIO_free(c->wbio);
		return -ENOMEM;
	}
	SSL_set_bio(c->ssl, c->rbio, c->wbio);
	SSL_set_app_data(c->ssl, c);
	SSL_set_accept_state(c->ssl);
	return 0;
}

static struct conn *conn_new(kb_http_server_t *srv)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->srv = srv;
	c->id = ++srv->conn_seq;
	c->tlist = TL_NONE;
	dl_init(&c->tnode);
	dl_init(&c->resume);
	dl_init(&c->all);
	dl_init(&c->blocked);
	dl_init(&c->pumpl);
	c->req.conn_ = c;
	c->req.query = empty_string;
	c->req.body = empty_string;
	llhttp_init(&c->parser, HTTP_REQUEST, &srv->settings);
	uv_tcp_init(srv->loop, &c->tcp);
	srv->handles++;
	srv->nconns++;
	dl_append(&srv->conns, &c->all);
	return c;
}

static void on_connection(uv_stream_t *server, int status)
{
	kb_http_server_t *srv = kb_container_of(server, kb_http_server_t, listener);
	if (status < 0) {
		kb_warn("http", "accept: %s", uv_strerror(status));
		return;
	}
	struct conn *c = conn_new(srv);
	if (!c) {
		kb_err("http", "accept: out of memory");
		return;
	}
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
		conn_close(c, "accept failed");
		return;
	}
	if (srv->nconns > srv->opts.max_conns) {
		kb_warn("http", "conn %llu: over max_conns (%u), closing",
			(unsigned long long)c->id, srv->opts.max_conns);
		conn_close(c, "max_conns");
		return;
	}
	uv_tcp_nodelay(&c->tcp, 1);
	peer_name(c);
	if (conn_tls_init(c) < 0) {
		conn_close(c, "TLS init");
		return;
	}
	c->state = CS_HANDSHAKE;
	tl_set(c, TL_HEAD);
	kb_debug("http", "conn %llu: accepted from %s", (unsigned long long)c->id, c->req.peer);
	start_reading(c);
}

/* ---- server ---- */

static void apply_defaults(struct kb_http_server_opts *o)
{
	if (!o->max_body)
		o->max_body = DEFAULT_MAX_BODY;
	if (!o->head_timeout_ms)
		o->head_timeout_ms = DEFAULT_HEAD_TIMEOUT_MS;
	if (!o->idle_timeout_ms)
		o->idle_timeout_ms = DEFAULT_IDLE_TIMEOUT_MS;
	if (!o->max_conns)
		o->max_conns = DEFAULT_MAX_CONNS;
	if (!o->stream_budget)
		o->stream_budget = DEFAULT_STREAM_BUDGET;
}

static void srv_init_lists(kb_http_server_t *srv)
{
	dl_init(&srv->conns);
	dl_init(&srv->zombies);
	dl_init(&srv->resumes);
	dl_init(&srv->blocked);
	dl_init(&srv->pumps);
	for (int i = 0; i < TL_COUNT; i++)
		dl_init(&srv->tlists[i].head);
	srv->tlists[TL_HEAD].timeout_ms = srv->opts.head_timeout_ms;
	srv->tlists[TL_IDLE].timeout_ms = srv->opts.idle_timeout_ms;
	srv->tlists[TL_LINGER].timeout_ms =
	    srv->opts.head_timeout_ms < LINGER_MS ? srv->opts.head_timeout_ms : LINGER_MS;
}

static void srv_handle_closed(uv_handle_t *h)
{
	kb_http_server_t *srv = h->data;
	srv->handles--;
	srv_maybe_free(srv);
}

static int srv_listen(kb_http_server_t *srv, const char *addr, int *port_out)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	int rc = kb_parse_hostport(addr, -1, &ss);
	if (rc < 0)
		return rc;
	rc = uv_tcp_bind(&srv->listener, (const struct sockaddr *)&ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&srv->listener, 1024, on_connection);
	if (rc == 0 && port_out) {
		int len = sizeof(ss);
		rc = uv_tcp_getsockname(&srv->listener, (struct sockaddr *)&ss, &len);
		if (rc == 0)
			*port_out =
			    ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							   : ((struct sockaddr_in *)&ss)->sin_port);
	}
	return rc;
}

/* libuv writes with write(2): a peer that reset the connection would raise
 * SIGPIPE and kill the process. Ignored unless the program set a handler. */
static void ignore_sigpipe(void)
{
	struct sigaction sa;
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
		sa.sa_handler = SIG_IGN;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = 0;
		sigaction(SIGPIPE, &sa, NULL);
	}
}

int kb_http_server_start(uv_loop_t *loop, const char *addr, SSL_CTX *ctx,
			 const struct kb_http_server_opts *opts, kb_http_request_cb on_request,
			 void *arg, kb_http_server_t **out, int *port_out)
{
	KB_CHECK(loop && addr && ctx && on_request && out, -EINVAL);
	ignore_sigpipe();
	kb_http_server_t *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->loop = loop;
	srv->ctx = ctx;
	srv->on_request = on_request;
	srv->arg = arg;
	if (opts)
		srv->opts = *opts;
	apply_defaults(&srv->opts);
	init_settings(&srv->settings);
	srv_init_lists(srv);
	uv_tcp_init(loop, &srv->listener);
	uv_timer_init(loop, &srv->timer);
	uv_timer_init(loop, &srv->trim);
	uv_timer_init(loop, &srv->aflush);
	uv_idle_init(loop, &srv->idle);
	uv_prepare_init(loop, &srv->flush_prepare);
	uv_check_init(loop, &srv->flush_check);
	srv->listener.data = srv->timer.data = srv->idle.data = srv->trim.data = srv->aflush.data =
	    srv;
	srv->flush_prepare.data = srv->flush_check.data = srv;
	srv->handles = 7;
	SSL_CTX_set_keylog_callback(ctx, keylog_cb);
	int rc = srv_listen(srv, addr, port_out);
	if (rc < 0) {
		kb_err("http", "listen on %s: %s", addr, uv_strerror(rc));
		kb_http_server_stop(srv);
		return rc;
	}
	kb_info("http", "listening on %s", addr);
	/* what the start-up built and freed is given back a period later */
	uv_timer_start(&srv->aflush, aflush_cb, ALLOC_FLUSH_MS, 0);
	*out = srv;
	return 0;
}

static void srv_maybe_free(kb_http_server_t *srv)
{
	if (!srv || !srv->stopping || srv->handles > 0)
		return;
	/* Zombie requests outlive the server: detach them. */
	while (!dl_empty(&srv->zombies)) {
		struct conn *c = kb_container_of(srv->zombies.next, struct conn, all);
		dl_remove(&c->all);
		c->srv = NULL;
	}
	while (srv->pool) {
		struct reqbuf *rb = srv->pool;
		srv->pool = rb->next_free;
		reqbuf_free(rb);
	}
	kb_buf_free(&srv->scratch);
	kb_buf_free(&srv->wscratch);
	kb_sendbatch_free(srv->batch);
	free(srv);
}

void kb_http_server_stop(kb_http_server_t *srv)
{
	if (!srv || srv->stopping)
		return;
	srv->stopping = true;
	struct dlink *l = srv->conns.next;
	while (l != &srv->conns) {
		struct dlink *next = l->next;
		conn_close(kb_container_of(l, struct conn, all), "server stop");
		l = next;
	}
	uv_timer_stop(&srv->timer);
	uv_timer_stop(&srv->trim);
	uv_timer_stop(&srv->aflush);
	uv_idle_stop(&srv->idle);
	uv_close((uv_handle_t *)&srv->listener, srv_handle_closed);
	uv_close((uv_handle_t *)&srv->timer, srv_handle_closed);
	uv_close((uv_handle_t *)&srv->trim, srv_handle_closed);
	uv_close((uv_handle_t *)&srv->aflush, srv_handle_closed);
	uv_close((uv_handle_t *)&srv->idle, srv_handle_closed);
	uv_close((uv_handle_t *)&srv->flush_prepare, srv_handle_closed);
	uv_close((uv_handle_t *)&srv->flush_check, srv_handle_closed);
}

size_t kb_http_server_conns(const kb_http_server_t *srv)
{
	return srv->nconns;
}

/* ---- helpers ---- */

bool kb_http_req_upgrade(const kb_http_req_t *req)
{
	const struct conn *c = req->conn_;
	return c->upgrade;
}

const char *kb_http_req_header(const kb_http_req_t *req, const char *name)
{
	for (size_t i = 0; i < req->nheaders; i++)
		if (strcasecmp(req->headers[i].name, name) == 0)
			return req->headers[i].value;
	return NULL;
}

bool kb_http_query_bool(const char *v)
{
	return strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0;
}

bool kb_http_req_offers(const kb_http_req_t *req, const char *name, const char *token)
{
	size_t n = strlen(token);
	for (size_t i = 0; i < req->nheaders; i++) {
		if (strcasecmp(req->headers[i].name, name) != 0)
			continue;
		for (const char *p = req->headers[i].value; *p;) {
			while (*p == ' ' || *p == '\t' || *p == ',')
				p++;
			const char *e = p;
			while (*e && *e != ',')
				e++;
			const char *t = e;
			while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
				t--;
			if ((size_t)(t - p) == n && strncasecmp(p, token, n) == 0)
				return true;
			p = e;
		}
	}
	return false;
}

const char *kb_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Request Entity Too Large";
	case 414: return "Request-URI Too Long";
	case 415: return "Unsupported Media Type";
	case 416: return "Requested Range Not Satisfiable";
	case 417: return "Expectation Failed";
	case 422: return "Unprocessable Entity";
	case 426: return "Upgrade Required";
	case 428: return "Precondition Required";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

int kb_http_unescape(char *s, bool plus_is_space)
{
	char *w = s;
	for (const char *r = s; *r; r++) {
		if (*r == '%') {
			int hi = kb_hexval(r[1]), lo = hi < 0 ? -1 : kb_hexval(r[2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -EINVAL;
			*w++ = (char)(hi * 16 + lo);
			r += 2;
		} else if (*r == '+' && plus_is_space) {
			*w++ = ' ';
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	return 0;
}

bool kb_http_query_next(char **cursor, char **key, char **val)
{
	while (*cursor && **cursor) {
		char *k = *cursor;
		char *end = strchr(k, '&');
		if (end) {
			*end = '\0';
			*cursor = end + 1;
		} else {
			*cursor = k + strlen(k);
		}
		if (!*k)
			continue;
		char *eq = strchr(k, '=');
		char *v = eq ? eq + 1 : k + strlen(k);
		if (eq)
			*eq = '\0';
		/* Like Go's url.ParseQuery (used by kube-apiserver), pairs with
		 * bad escapes are skipped. */
		if (kb_http_unescape(k, true) < 0 || kb_http_unescape(v, true) < 0)
			continue;
		*key = k;
		*val = v;
		return true;
	}
	return false;
}

/* ---- fuzzing entry (see http.h) ---- */

/* A server with the default options and no handles: never started, so its
 * timer is not armed (stopping) and nothing is listened on. */
static kb_http_server_t *fuzz_server(void)
{
	static uv_loop_t loop;
	static kb_http_server_t *srv;
	if (srv)
		return srv;
	if (uv_loop_init(&loop) < 0 || !(srv = calloc(1, sizeof(*srv))))
		return NULL;
	srv->loop = &loop;
	srv->stopping = true;
	apply_defaults(&srv->opts);
	init_settings(&srv->settings);
	srv_init_lists(srv);
	return srv;
}

/* Checks what a handler would read of the parsed request, then releases it
 * as finish_request does. */
static void fuzz_finish(struct conn *c)
{
	kb_http_req_t *r = &c->req;
	if (c->body != empty_string)
		c->body[r->body_len] = '\0';
	KB_REQUIRE(r->path && r->query && r->method);
	for (size_t i = 0; i < r->nheaders; i++)
		KB_REQUIRE(kb_http_req_header(r, r->headers[i].name));
	release_request(c);
	c->msg_ready = false;
	llhttp_resume(&c->parser);
}

int kb_http_parse_head_for_fuzz(const char *data, size_t len)
{
	kb_http_server_t *srv = fuzz_server();
	struct conn *c = srv ? calloc(1, sizeof(*c)) : NULL;
	if (!c)
		return -ENOMEM;
	c->srv = srv;
	c->tlist = TL_NONE;
	dl_init(&c->tnode);
	dl_init(&c->blocked);
	dl_init(&c->pumpl);
	c->closing = true; /* no socket: writes fail */
	c->req.query = c->req.body = empty_string;
	llhttp_init(&c->parser, HTTP_REQUEST, &srv->settings);
	int n = 0;
	while (len > 0) {
		llhttp_errno_t err = llhttp_execute(&c->parser, data, len);
		if (err == HPE_OK)
			break;
		if ((err != HPE_PAUSED && err != HPE_PAUSED_UPGRADE) || !c->msg_ready) {
			n = c->body_too_big || c->head_too_big ? -E2BIG : -EINVAL;
			break;
		}
		size_t used = (size_t)(llhttp_get_error_pos(&c->parser) - data);
		fuzz_finish(c);
		n++;
		if (err == HPE_PAUSED_UPGRADE)
			break;
		data += used;
		len -= used;
	}
	tl_set(c, TL_NONE);
	conn_free(c);
	return n;
}
