/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/http: a server on 127.0.0.1:0 runs its own uv loop in a
 * thread, with a certificate from kb_pki_ensure(); the test thread is the
 * client, speaking HTTP/1.1 by hand over blocking OpenSSL sockets so that
 * every byte on the wire is under the test's control. Every test ends by
 * stopping the server and checking that the loop closes with no handle left
 * (uv_loop_close() == 0).
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <uv.h>

#include "lib/http.h"
#include "lib/pki.h"
#include "lib/tls.h"
#include "lib/util.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

/* ---- server side (loop thread) ---- */

static struct {
	char dir[64];
	uv_loop_t loop;
	uv_async_t stop;
	kb_http_server_t *srv;
	SSL_CTX *ctx;
	int port;
	pthread_t thread;
	int loop_close_rc;
	atomic_int aborted;
	atomic_int requests;
	kb_http_req_t *hung;
} S;

static void slow_timer_closed(uv_handle_t *h)
{
	free(h);
}

static void slow_fire(uv_timer_t *t)
{
	kb_http_req_t *req = t->data;
	char body[256];
	int n = snprintf(body, sizeof(body), "slow %s", req->query);
	kb_http_respond(req, 200, "text/plain", NULL, body, (size_t)n);
	uv_close((uv_handle_t *)t, slow_timer_closed);
}

static void on_abort(kb_http_req_t *req, void *arg)
{
	atomic_fetch_add(&S.aborted, 1);
}

static void handle_cert(kb_http_req_t *req)
{
	char cn[128] = "none";
	if (req->peer_cert)
		X509_NAME_get_text_by_NID(X509_get_subject_name(req->peer_cert), NID_commonName, cn,
					  sizeof(cn));
	kb_http_respond(req, req->peer_cert ? 200 : 401, "text/plain", NULL, cn, strlen(cn));
}

static void handle_stream(kb_http_req_t *req)
{
	kb_http_stream_start(req, 200, "application/json", "X-Stream: yes\r\n");
	kb_http_stream_write(req, "one", 3);
	kb_http_stream_write(req, "", 0);
	kb_http_stream_write(req, "two", 3);
	kb_http_stream_write(req, "three", 5);
	kb_http_stream_end(req);
}

/* A long stream handed to the record writer: path and query stay, headers
 * go; ?end=1 ends it after a chunk larger than one TLS record. */
static void handle_long(kb_http_req_t *req)
{
	kb_http_req_on_abort(req, on_abort, NULL);
	kb_http_stream_long(req);
	kb_http_stream_start(req, 200, "application/json", NULL);
	char line[128];
	int n = snprintf(line, sizeof(line), "path=%s q=%s hdr=%s", req->path, req->query,
			 kb_http_req_header(req, "x-h") ? "kept" : "gone");
	kb_http_stream_write(req, line, (size_t)n);
	if (strcmp(req->query, "end=1") != 0)
		return;
	size_t big = 40000;
	char *b = malloc(big);
	memset(b, 'L', big);
	kb_http_stream_write(req, b, big);
	free(b);
	kb_http_stream_end(req);
}

static void handle_echo(kb_http_req_t *req)
{
	struct kb_buf b = {0};
	const char *ua = kb_http_req_header(req, "User-Agent");
	kb_buf_printf(&b, "%s %s?%s peer=%s ua=%s len=%zu\n", req->method, req->path, req->query,
		      req->peer, ua ? ua : "-", req->body_len);
	kb_buf_append(&b, req->body, req->body_len);
	kb_http_respond(req, 200, "text/plain", "X-Test: 1\r\n", b.data, b.len);
	kb_buf_free(&b);
}

/* An upgraded pipe that echoes what the client sends; "bye" at the end of
 * a read ends it from the server's side. */
static void raw_echo(kb_http_req_t *req, const char *data, size_t len, void *arg)
{
	kb_http_raw_write(req, data, len);
	if (len >= 3 && memcmp(data + len - 3, "bye", 3) == 0)
		kb_http_raw_end(req);
}

static void handle_upgrade(kb_http_req_t *req)
{
	kb_http_req_on_abort(req, on_abort, NULL);
	if (!kb_http_req_upgrade(req)) {
		kb_http_respond(req, 426, "text/plain", "Upgrade: echo\r\n", "", 0);
		return;
	}
	kb_http_upgrade(req, "Upgrade: echo\r\nConnection: Upgrade\r\n", raw_echo, NULL);
}

/* Streams fed shared buffers from the loop thread, a round at a time
 * (uv_async from the test thread). */
#define SHARED_CHUNK (64 * 1024)
static struct {
	kb_http_req_t *reqs[2];
	int n;
	uv_async_t send;
	atomic_int rounds;
	size_t held_max;
	size_t held_on_abort; /* when the last stream aborted */
	long held_after_cut;  /* right after the round that cut a stream; -1 */
} Q;

static void shared_abort(kb_http_req_t *req, void *arg)
{
	for (int i = 0; i < Q.n; i++)
		if (Q.reqs[i] == req)
			Q.reqs[i] = NULL;
	Q.held_on_abort = kb_http_stream_held(S.srv);
	atomic_fetch_add(&S.aborted, 1);
}

static void send_round(uv_async_t *a)
{
	int k = atomic_load(&Q.rounds);
	kb_http_shared_t *s = kb_http_shared_new(NULL, SHARED_CHUNK);
	memset(s->data, 'a' + k % 26, s->len);
	for (int i = 0; i < Q.n; i++)
		if (Q.reqs[i] && kb_http_stream_send(Q.reqs[i], s) == -ECONNRESET)
			Q.held_after_cut = (long)kb_http_stream_held(S.srv);
	kb_http_shared_unref(s);
	if (kb_http_stream_held(S.srv) > Q.held_max)
		Q.held_max = kb_http_stream_held(S.srv);
	atomic_fetch_add(&Q.rounds, 1);
}

static void on_request(kb_http_req_t *req, void *arg)
{
	atomic_fetch_add(&S.requests, 1);
	if (strcmp(req->path, "/slow") == 0) {
		uv_timer_t *t = malloc(sizeof(*t));
		uv_timer_init(&S.loop, t);
		t->data = req;
		uv_timer_start(t, slow_fire, 50, 0);
	} else if (strcmp(req->path, "/stream") == 0) {
		handle_stream(req);
	} else if (strcmp(req->path, "/watch") == 0) {
		kb_http_req_on_abort(req, on_abort, NULL);
		kb_http_stream_start(req, 200, "application/json", NULL);
		kb_http_stream_write(req, "{\"type\":\"ADDED\"}\n", 17);
	} else if (strcmp(req->path, "/shared") == 0) {
		kb_http_req_on_abort(req, shared_abort, NULL);
		kb_http_stream_start(req, 200, "application/json", NULL);
		Q.reqs[Q.n++] = req;
	} else if (strcmp(req->path, "/huge") == 0) {
		size_t n = 3u << 20;
		char *big = malloc(n);
		for (size_t i = 0; i < n; i++)
			big[i] = (char)('a' + i % 26);
		kb_http_respond(req, 200, "text/plain", NULL, big, n);
		free(big);
	} else if (strcmp(req->path, "/long") == 0) {
		handle_long(req);
	} else if (strcmp(req->path, "/hang") == 0) {
		S.hung = req; /* answered later, without an abort callback */
	} else if (strcmp(req->path, "/cert") == 0) {
		handle_cert(req);
	} else if (strcmp(req->path, "/upgrade") == 0) {
		handle_upgrade(req);
	} else if (strcmp(req->path, "/big") == 0) {
		size_t n = 100000;
		char *big = malloc(n);
		memset(big, 'b', n);
		kb_http_respond(req, 200, "text/plain", NULL, big, n);
		free(big);
	} else {
		handle_echo(req);
	}
}

static void stop_cb(uv_async_t *a)
{
	kb_http_server_stop(S.srv);
	uv_close((uv_handle_t *)a, NULL);
	uv_close((uv_handle_t *)&Q.send, NULL);
}

static void *loop_main(void *arg)
{
	uv_run(&S.loop, UV_RUN_DEFAULT);
	S.loop_close_rc = uv_loop_close(&S.loop);
	return NULL;
}

static char *dir_path(const char *name)
{
	static char p[8][128];
	static int i;
	i = (i + 1) & 7;
	snprintf(p[i], sizeof(p[i]), "%s/%s", S.dir, name);
	return p[i];
}

static void start_server(const struct kb_http_server_opts *opts)
{
	/* Servers on libuv must ignore SIGPIPE (writes to reset sockets). */
	signal(SIGPIPE, SIG_IGN);
	strcpy(S.dir, "/tmp/kb-http-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(S.dir));
	const char *const groups[] = {"system:masters"};
	ck_assert_int_eq(kb_pki_ensure(S.dir, NULL, 0, "admin", groups, 1), 0);
	ck_assert_int_eq(kb_tls_server_ctx(dir_path("server.crt"), dir_path("server.key"),
					   dir_path("ca.crt"), &S.ctx),
			 0);
	ck_assert_int_eq(uv_loop_init(&S.loop), 0);
	ck_assert_int_eq(uv_async_init(&S.loop, &S.stop, stop_cb), 0);
	memset(&Q, 0, sizeof(Q));
	ck_assert_int_eq(uv_async_init(&S.loop, &Q.send, send_round), 0);
	ck_assert_int_eq(kb_http_server_start(&S.loop, "127.0.0.1:0", S.ctx, opts, on_request, NULL,
					      &S.srv, &S.port),
			 0);
	ck_assert_int_gt(S.port, 0);
	ck_assert_int_eq(pthread_create(&S.thread, NULL, loop_main, NULL), 0);
}

static void stop_server(void)
{
	uv_async_send(&S.stop);
	ck_assert_int_eq(pthread_join(S.thread, NULL), 0);
	ck_assert_int_eq(S.loop_close_rc, 0);
	SSL_CTX_free(S.ctx);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", S.dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* ---- client side (test thread) ---- */

struct client {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl;
	char buf[256 * 1024];
	size_t len;
};

struct resp {
	int status;
	char head[8192];
	char *body;
	size_t body_len;
	bool chunked;
};

static int client_rcvbuf; /* set: SO_RCVBUF of the next connections */

static int tcp_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	if (client_rcvbuf)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &client_rcvbuf, sizeof(client_rcvbuf));
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)S.port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = {.tv_sec = 5};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void use_cert(SSL_CTX *ctx, const char *cert_pem, const char *key_pem)
{
	BIO *b = BIO_new_mem_buf(cert_pem, -1);
	X509 *c = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	b = BIO_new_mem_buf(key_pem, -1);
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	ck_assert_int_eq(SSL_CTX_use_certificate(ctx, c), 1);
	ck_assert_int_eq(SSL_CTX_use_PrivateKey(ctx, k), 1);
	X509_free(c);
	EVP_PKEY_free(k);
}

/* Connects and handshakes; returns 0 or -1 when the handshake failed. */
static int client_open_with(struct client *c, const char *cert_pem, const char *key_pem)
{
	memset(c, 0, sizeof(*c));
	c->ctx = SSL_CTX_new(TLS_client_method());
	ck_assert_int_eq(SSL_CTX_load_verify_locations(c->ctx, dir_path("ca.crt"), NULL), 1);
	SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
	if (cert_pem)
		use_cert(c->ctx, cert_pem, key_pem);
	c->fd = tcp_connect();
	c->ssl = SSL_new(c->ctx);
	SSL_set_fd(c->ssl, c->fd);
	SSL_set_tlsext_host_name(c->ssl, "localhost");
	SSL_set1_host(c->ssl, "localhost");
	int rc = SSL_connect(c->ssl) == 1 ? 0 : -1;
	ERR_clear_error();
	return rc;
}

static struct client *client_open(void)
{
	struct client *c = malloc(sizeof(*c));
	ck_assert_int_eq(client_open_with(c, NULL, NULL), 0);
	return c;
}

static void client_close(struct client *c)
{
	SSL_free(c->ssl);
	close(c->fd);
	SSL_CTX_free(c->ctx);
	free(c);
}

static void client_send(struct client *c, const char *data, size_t len)
{
	ck_assert_int_eq(SSL_write(c->ssl, data, (int)len), (int)len);
}

static void client_puts(struct client *c, const char *s)
{
	client_send(c, s, strlen(s));
}

/* Reads more bytes; false on EOF, error or timeout. */
static bool client_fill(struct client *c)
{
	if (c->len == sizeof(c->buf))
		return false;
	int n = SSL_read(c->ssl, c->buf + c->len, (int)(sizeof(c->buf) - c->len));
	ERR_clear_error();
	if (n <= 0)
		return false;
	c->len += (size_t)n;
	return true;
}

static void client_consume(struct client *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

/* Waits until `n` bytes are buffered. */
static bool client_need(struct client *c, size_t n)
{
	while (c->len < n)
		if (!client_fill(c))
			return false;
	return true;
}

/* Returns the offset after the next CRLF, reading as needed; 0 on EOF. */
static size_t client_line(struct client *c)
{
	for (;;) {
		char *p = memmem(c->buf, c->len, "\r\n", 2);
		if (p)
			return (size_t)(p - c->buf) + 2;
		if (!client_fill(c))
			return 0;
	}
}

/* Returns true when the peer closed the connection (EOF within 3 s). */
static bool client_sees_close(struct client *c)
{
	char b[256];
	for (;;) {
		int n = SSL_read(c->ssl, b, sizeof(b));
		if (n <= 0) {
			int e = SSL_get_error(c->ssl, n);
			ERR_clear_error();
			return e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL ||
			       e == SSL_ERROR_SSL;
		}
	}
}

static const char *resp_header(struct resp *r, const char *name)
{
	static char val[512];
	char key[128];
	snprintf(key, sizeof(key), "\r\n%s:", name);
	const char *p = strcasestr(r->head, key);
	if (!p)
		return NULL;
	p += strlen(key);
	while (*p == ' ')
		p++;
	size_t n = strcspn(p, "\r");
	snprintf(val, sizeof(val), "%.*s", (int)n, p);
	return val;
}

static void read_chunked(struct client *c, struct resp *r)
{
	struct kb_buf b = {0};
	kb_buf_puts(&b, "");
	for (;;) {
		size_t l = client_line(c);
		ck_assert_uint_gt(l, 0);
		size_t n = strtoul(c->buf, NULL, 16);
		client_consume(c, l);
		ck_assert(client_need(c, n + 2));
		ck_assert(memcmp(c->buf + n, "\r\n", 2) == 0);
		kb_buf_append(&b, c->buf, n);
		client_consume(c, n + 2);
		if (n == 0)
			break;
	}
	r->body = b.data;
	r->body_len = b.len;
}

/* Reads one response; returns false on EOF before a status line. */
static bool client_read(struct client *c, struct resp *r, bool head_only)
{
	memset(r, 0, sizeof(*r));
	char *end;
	while (!(end = memmem(c->buf, c->len, "\r\n\r\n", 4)))
		if (!client_fill(c))
			return false;
	size_t hlen = (size_t)(end - c->buf) + 4;
	ck_assert_uint_lt(hlen, sizeof(r->head));
	memcpy(r->head, c->buf, hlen);
	client_consume(c, hlen);
	ck_assert_int_eq(sscanf(r->head, "HTTP/1.1 %d", &r->status), 1);
	const char *te = resp_header(r, "Transfer-Encoding");
	r->chunked = te && strcmp(te, "chunked") == 0;
	if (head_only || r->status == 100 || r->status == 204)
		return true;
	if (r->chunked) {
		read_chunked(c, r);
		return true;
	}
	const char *cl = resp_header(r, "Content-Length");
	ck_assert_ptr_nonnull(cl);
	r->body_len = strtoul(cl, NULL, 10);
	ck_assert(client_need(c, r->body_len));
	r->body = strndup(c->buf, r->body_len);
	client_consume(c, r->body_len);
	return true;
}

static void resp_free(struct resp *r)
{
	free(r->body);
	r->body = NULL;
}

static bool wait_for(atomic_int *v, int want)
{
	for (int i = 0; i < 300; i++) {
		if (atomic_load(v) >= want)
			return true;
		usleep(10000);
	}
	return false;
}

/* ---- tests ---- */

START_TEST(get_keep_alive)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r1, r2;
	client_puts(c, "GET /hello?a=1&b=x%20y HTTP/1.1\r\nHost: localhost\r\n"
		       "User-Agent: kubectl/v1.30\r\n\r\n");
	ck_assert(client_read(c, &r1, false));
	ck_assert_int_eq(r1.status, 200);
	ck_assert_str_eq(resp_header(&r1, "Content-Type"), "text/plain");
	ck_assert_str_eq(resp_header(&r1, "X-Test"), "1");
	ck_assert_ptr_nonnull(resp_header(&r1, "Date"));
	ck_assert_ptr_null(resp_header(&r1, "Connection"));
	ck_assert(kb_str_has_prefix(r1.body, "GET /hello?a=1&b=x%20y peer=127.0.0.1:"));
	ck_assert_ptr_nonnull(strstr(r1.body, "ua=kubectl/v1.30 len=0\n"));

	client_puts(c, "GET /again HTTP/1.1\r\nHost: localhost\r\n\r\n");
	ck_assert(client_read(c, &r2, false));
	ck_assert_int_eq(r2.status, 200);
	ck_assert(kb_str_has_prefix(r2.body, "GET /again? peer="));
	/* Same connection: same client port. */
	const char *p1 = strstr(r1.body, "peer="), *p2 = strstr(r2.body, "peer=");
	ck_assert(strncmp(p1, p2, strcspn(p1, " ")) == 0);
	ck_assert_int_eq(atomic_load(&S.requests), 2);
	resp_free(&r1);
	resp_free(&r2);
	client_close(c);
	stop_server();
}
END_TEST

START_TEST(post_bodies)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	client_puts(c, "POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n"
		       "Content-Type: application/json\r\nContent-Length: 11\r\n\r\nhello world");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	ck_assert(kb_str_has_prefix(r.body, "POST /api/v1/namespaces? "));
	ck_assert(kb_str_has_suffix(r.body, "len=11\nhello world"));
	resp_free(&r);
	/* Chunked request body, split across writes. */
	client_puts(c, "PUT /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
	usleep(20000);
	client_puts(c, "cde\r\n3\r\nfgh\r\n0\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	ck_assert(kb_str_has_suffix(r.body, "len=8\nabcdefgh"));
	resp_free(&r);
	/* A large body in many TLS records. */
	size_t n = 200000;
	char *big = malloc(n + 128);
	int h = snprintf(big, 128, "PATCH /big-body HTTP/1.1\r\nContent-Length: %zu\r\n\r\n", n);
	memset(big + h, 'z', n);
	client_send(c, big, (size_t)h + n);
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "len=200000\nzzz"));
	ck_assert_uint_eq(r.body_len, strcspn(r.body, "\n") + 1 + n);
	resp_free(&r);
	free(big);
	client_close(c);
	stop_server();
}
END_TEST

static const char status_413[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"the request body is too large\",\"reason\":\"RequestEntityTooLarge\","
    "\"code\":413}";

START_TEST(body_too_large)
{
	struct kb_http_server_opts o = {.max_body = 1024};
	start_server(&o);
	struct client *c = client_open();
	struct resp r;
	/* Declared length over the limit: answered before the body is sent. */
	client_puts(c, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 413);
	ck_assert_str_eq(resp_header(&r, "Content-Type"), "application/json");
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	ck_assert_str_eq(r.body, status_413);
	ck_assert(client_sees_close(c));
	resp_free(&r);
	client_close(c);

	/* Exactly the limit is fine. */
	c = client_open();
	char req[1200];
	int h = snprintf(req, sizeof(req), "POST /x HTTP/1.1\r\nContent-Length: 1024\r\n\r\n");
	memset(req + h, 'a', 1024);
	client_send(c, req, (size_t)h + 1024);
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	client_close(c);

	/* A chunked body that grows over the limit. */
	c = client_open();
	client_puts(c, "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	char chunk[600];
	memset(chunk, 'q', sizeof(chunk));
	for (int i = 0; i < 2; i++) {
		client_puts(c, "258\r\n");
		client_send(c, chunk, sizeof(chunk));
		client_puts(c, "\r\n");
	}
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 413);
	ck_assert_str_eq(r.body, status_413);
	resp_free(&r);
	client_close(c);
	ck_assert_int_eq(atomic_load(&S.requests), 1);
	stop_server();
}
END_TEST

START_TEST(head_too_large)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	client_puts(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Huge: ");
	char fill[4096];
	memset(fill, 'h', sizeof(fill));
	for (int i = 0; i < 17; i++)
		client_send(c, fill, sizeof(fill));
	client_puts(c, "\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 431);
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	ck_assert(client_sees_close(c));
	resp_free(&r);
	client_close(c);

	/* Too many headers. */
	c = client_open();
	client_puts(c, "GET / HTTP/1.1\r\n");
	for (int i = 0; i < KB_HTTP_MAX_HEADERS + 1; i++) {
		char line[32];
		snprintf(line, sizeof(line), "X-H%d: v\r\n", i);
		client_puts(c, line);
	}
	client_puts(c, "\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 431);
	resp_free(&r);
	client_close(c);
	ck_assert_int_eq(atomic_load(&S.requests), 0);
	stop_server();
}
END_TEST

START_TEST(garbage_is_400)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	client_puts(c, "HELLO THERE\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 400);
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	ck_assert(client_sees_close(c));
	resp_free(&r);
	client_close(c);
	/* A bad header line after a good request line. */
	c = client_open();
	client_puts(c, "GET / HTTP/1.1\r\nBad Header\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 400);
	resp_free(&r);
	client_close(c);
	/* A header name with a space (llhttp lets it through; Go refuses it). */
	c = client_open();
	client_puts(c, "GET / HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 400);
	resp_free(&r);
	client_close(c);
	ck_assert_int_eq(atomic_load(&S.requests), 0);
	stop_server();
}
END_TEST

START_TEST(chunked_stream)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	client_puts(c, "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	ck_assert(r.chunked);
	ck_assert_ptr_null(resp_header(&r, "Content-Length"));
	ck_assert_str_eq(resp_header(&r, "X-Stream"), "yes");
	ck_assert_str_eq(r.body, "onetwothree");
	resp_free(&r);
	/* The connection is reusable after the last chunk. */
	client_puts(c, "GET /after HTTP/1.1\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	client_close(c);
	stop_server();
}
END_TEST

/* kb_http_stream_long on TLS 1.3: the stream goes on through the record
 * writer (decrypted fine by OpenSSL, records over 16 KiB split), says
 * Connection: close and ends with a close_notify. */
START_TEST(long_stream_handover)
{
	start_server(NULL);
	struct client *c = client_open();
	ck_assert_int_eq(SSL_version(c->ssl), TLS1_3_VERSION);
	struct resp r;
	client_puts(c, "GET /long?end=1 HTTP/1.1\r\nX-H: 1\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	ck_assert(r.chunked);
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	const char *want = "path=/long q=end=1 hdr=gone";
	ck_assert_int_eq(strncmp(r.body, want, strlen(want)), 0);
	size_t ls = strspn(r.body + strlen(want), "L");
	ck_assert_uint_eq(ls, 40000);
	ck_assert_uint_eq(strlen(r.body), strlen(want) + 40000);
	resp_free(&r);
	char b;
	int n = SSL_read(c->ssl, &b, 1);
	ck_assert_int_le(n, 0);
	ck_assert_int_eq(SSL_get_error(c->ssl, n), SSL_ERROR_ZERO_RETURN);
	client_close(c);
	ck_assert_int_eq(atomic_load(&S.aborted), 0);

	/* Anything the client sends on a handed-over stream ends it. */
	c = client_open();
	client_puts(c, "GET /long HTTP/1.1\r\n\r\n");
	ck_assert(client_read(c, &r, true));
	ck_assert_int_eq(r.status, 200);
	size_t l = client_line(c);
	ck_assert_uint_gt(l, 0);
	want = "path=/long q= hdr=gone";
	ck_assert(client_need(c, l + strlen(want)));
	ck_assert(memcmp(c->buf + l, want, strlen(want)) == 0);
	client_puts(c, "GET /next HTTP/1.1\r\n\r\n");
	ck_assert(wait_for(&S.aborted, 1));
	ck_assert(client_sees_close(c));
	client_close(c);
	stop_server();
}
END_TEST

START_TEST(abort_on_disconnect)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	client_puts(c, "GET /watch HTTP/1.1\r\n\r\n");
	ck_assert(client_read(c, &r, true));
	ck_assert_int_eq(r.status, 200);
	ck_assert(r.chunked);
	size_t l = client_line(c);
	ck_assert_uint_gt(l, 0);
	ck_assert(client_need(c, l + 17));
	ck_assert(memcmp(c->buf + l, "{\"type\":\"ADDED\"}\n", 17) == 0);
	ck_assert_int_eq(atomic_load(&S.aborted), 0);
	client_close(c);
	ck_assert(wait_for(&S.aborted, 1));

	/* A watch still open when the server stops is aborted too. */
	c = client_open();
	client_puts(c, "GET /watch HTTP/1.1\r\n\r\n");
	ck_assert(client_read(c, &r, true));
	stop_server();
	ck_assert_int_eq(atomic_load(&S.aborted), 2);
	client_close(c);
}
END_TEST

/* 101 Switching Protocols, then a byte pipe: bytes sent with the request
 * head come first, a large exchange comes back whole, the server ends it
 * (close_notify), or the client does (abort callback). */
START_TEST(upgrade_pipe)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	client_puts(c,
		    "GET /upgrade HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly");
	ck_assert(client_read(c, &r, true));
	ck_assert_int_eq(r.status, 101);
	ck_assert_str_eq(resp_header(&r, "Upgrade"), "echo");
	ck_assert_ptr_null(resp_header(&r, "Content-Length"));
	ck_assert_ptr_null(resp_header(&r, "Transfer-Encoding"));
	resp_free(&r);
	ck_assert(client_need(c, 5));
	ck_assert(memcmp(c->buf, "early", 5) == 0);
	client_consume(c, 5);
	size_t big = 200000;
	char *b = malloc(big);
	for (size_t i = 0; i < big; i++)
		b[i] = (char)('a' + i % 23);
	client_send(c, b, big);
	ck_assert(client_need(c, big));
	ck_assert(memcmp(c->buf, b, big) == 0);
	client_consume(c, big);
	free(b);
	client_puts(c, "bye");
	ck_assert(client_need(c, 3));
	ck_assert(memcmp(c->buf, "bye", 3) == 0);
	ck_assert(client_sees_close(c));
	client_close(c);
	ck_assert_int_eq(atomic_load(&S.aborted), 0);

	/* The client leaves: the handler hears of it. */
	c = client_open();
	client_puts(c, "GET /upgrade HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n");
	ck_assert(client_read(c, &r, true));
	ck_assert_int_eq(r.status, 101);
	resp_free(&r);
	client_puts(c, "ping");
	ck_assert(client_need(c, 4));
	client_close(c);
	ck_assert(wait_for(&S.aborted, 1));

	/* Without Connection: Upgrade it is a plain request. */
	c = client_open();
	client_puts(c, "GET /upgrade HTTP/1.1\r\nUpgrade: echo\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 426);
	resp_free(&r);
	client_close(c);
	stop_server();
}
END_TEST

/* One chunk of a chunked body: its length, or -1. */
static long read_one_chunk(struct client *c, char *out, size_t cap)
{
	size_t l = client_line(c);
	if (!l)
		return -1;
	size_t n = strtoul(c->buf, NULL, 16);
	client_consume(c, l);
	if (n > cap || !client_need(c, n + 2) || memcmp(c->buf + n, "\r\n", 2) != 0)
		return -1;
	memcpy(out, c->buf, n);
	client_consume(c, n + 2);
	return (long)n;
}

/* Shared buffers sent to two streams: the one whose reader reads gets every
 * chunk; the one that reads nothing is closed once the bytes held for it
 * pass the budget, which they never pass by more than a chunk; nothing is
 * held once they are gone. */
START_TEST(shared_stream_budget)
{
	struct kb_http_server_opts o = {.stream_budget = 256 * 1024};
	start_server(&o);
	struct resp r;
	client_rcvbuf = 4096;
	struct client *silent = client_open();
	client_rcvbuf = 0;
	client_puts(silent, "GET /shared HTTP/1.1\r\n\r\n");
	ck_assert(wait_for(&S.requests, 1));
	struct client *reader = client_open();
	client_puts(reader, "GET /shared HTTP/1.1\r\n\r\n");
	ck_assert(client_read(reader, &r, true));
	ck_assert_int_eq(r.status, 200);
	static char chunk[SHARED_CHUNK];
	/* until the silent reader's socket is full and the budget spent (the
	 * kernel takes some MB first) */
	int k;
	for (k = 0; k < 512 && !atomic_load(&S.aborted); k++) {
		uv_async_send(&Q.send);
		ck_assert(wait_for(&Q.rounds, k + 1));
		ck_assert_int_eq(read_one_chunk(reader, chunk, sizeof(chunk)), SHARED_CHUNK);
		ck_assert(chunk[0] == 'a' + k % 26 && chunk[SHARED_CHUNK - 1] == 'a' + k % 26);
	}
	ck_assert_int_eq(atomic_load(&S.aborted), 1); /* the silent one */
	ck_assert_ptr_null(Q.reqs[0]);
	ck_assert_ptr_nonnull(Q.reqs[1]);
	ck_assert_int_gt(k, 4);
	ck_assert_uint_le(Q.held_max, o.stream_budget + SHARED_CHUNK + 64 * 1024);
	ck_assert(client_sees_close(silent));
	client_close(silent);
	client_close(reader);
	stop_server();
	ck_assert_int_eq(atomic_load(&S.aborted), 2);
	ck_assert_uint_eq(Q.held_on_abort, 0);
}
END_TEST

/* The budget is exact: a stream cut for it gives back everything held for
 * it at once, its ciphertext waiting in the socket's write queue too (not
 * when libuv cancels the write later), so no other stream is closed for
 * bytes already let go. One silent stream: nothing is held after its cut. */
START_TEST(stream_budget_exact)
{
	struct kb_http_server_opts o = {.stream_budget = 128 * 1024};
	start_server(&o);
	Q.held_after_cut = -1;
	client_rcvbuf = 4096;
	struct client *silent = client_open();
	client_rcvbuf = 0;
	client_puts(silent, "GET /shared HTTP/1.1\r\n\r\n");
	ck_assert(wait_for(&S.requests, 1));
	int k;
	for (k = 0; k < 512 && !atomic_load(&S.aborted); k++) {
		uv_async_send(&Q.send);
		ck_assert(wait_for(&Q.rounds, k + 1));
	}
	ck_assert_int_eq(atomic_load(&S.aborted), 1);
	ck_assert_int_eq(Q.held_after_cut, 0);
	ck_assert_uint_le(Q.held_max, o.stream_budget + SHARED_CHUNK + 64 * 1024);
	client_close(silent);
	stop_server();
}
END_TEST

/* A body larger than what is sent at once goes out whole, in order, to a
 * reader that takes its time, and the connection serves the next request. */
START_TEST(huge_body_from_queue)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	for (int round = 0; round < 2; round++) {
		client_puts(c, "GET /huge HTTP/1.1\r\n\r\n");
		ck_assert(client_read(c, &r, true));
		ck_assert_int_eq(r.status, 200);
		size_t n = strtoul(resp_header(&r, "Content-Length"), NULL, 10), got = 0;
		ck_assert_uint_eq(n, 3u << 20);
		usleep(200000); /* the server's socket fills meanwhile */
		while (got < n) {
			if (c->len == 0)
				ck_assert(client_fill(c));
			size_t k = c->len < n - got ? c->len : n - got;
			size_t bad = k;
			for (size_t i = 0; i < k && bad == k; i++)
				if (c->buf[i] != 'a' + (char)((got + i) % 26))
					bad = i;
			ck_assert_uint_eq(bad, k);
			client_consume(c, k);
			got += k;
		}
	}
	client_puts(c, "GET /echo HTTP/1.1\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	client_close(c);
	stop_server();
}
END_TEST

START_TEST(request_outlives_connection)
{
	start_server(NULL);
	struct client *c = client_open();
	client_puts(c, "GET /hang?x=1 HTTP/1.1\r\nX-Keep: me\r\n\r\n");
	ck_assert(wait_for(&S.requests, 1));
	client_close(c);
	usleep(100000);
	stop_server();
	/* The handler set no abort callback, so the request is still valid
	 * after its connection and server are gone, until it is answered. */
	ck_assert_ptr_nonnull(S.hung);
	ck_assert_str_eq(S.hung->path, "/hang");
	ck_assert_str_eq(S.hung->query, "x=1");
	ck_assert_str_eq(kb_http_req_header(S.hung, "x-keep"), "me");
	ck_assert_uint_eq(kb_http_stream_pending(S.hung), 0);
	ck_assert_int_eq(kb_http_respond(S.hung, 200, "text/plain", NULL, "late", 4), -ECONNRESET);
}
END_TEST

static long ms_between(const struct timeval *a, const struct timeval *b)
{
	return (b->tv_sec - a->tv_sec) * 1000 + (b->tv_usec - a->tv_usec) / 1000;
}

/* The timers can only be checked from below (they never fire early); how
 * late they fire depends on the machine's load, so no upper bound. */
START_TEST(idle_timeout)
{
	struct kb_http_server_opts o = {.idle_timeout_ms = 200, .head_timeout_ms = 300};
	start_server(&o);
	struct client *c = client_open();
	struct resp r;
	client_puts(c, "GET / HTTP/1.1\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	resp_free(&r);
	struct timeval a, b;
	gettimeofday(&a, NULL);
	ck_assert(client_sees_close(c));
	gettimeofday(&b, NULL);
	long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_usec - a.tv_usec) / 1000;
	ck_assert_int_ge(ms, 150);
	client_close(c);

	/* A head that never completes is cut at head_timeout_ms, unanswered. */
	c = client_open();
	client_puts(c, "GET / HTTP/1.1\r\nHost: x\r\n");
	gettimeofday(&a, NULL);
	ck_assert(!client_read(c, &r, false));
	gettimeofday(&b, NULL);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_usec - a.tv_usec) / 1000;
	ck_assert_int_ge(ms, 250);
	client_close(c);

	/* A connection that is used stays open past one idle period. A gap
	 * between two requests that a loaded machine stretched past the idle
	 * period proves nothing either way: that attempt starts over. */
	bool proved = false;
	for (int attempt = 0; attempt < 20 && !proved; attempt++) {
		c = client_open();
		struct timeval first, last, now;
		gettimeofday(&first, NULL);
		last = first;
		bool open = true;
		while (open && ms_between(&first, &last) < 500) {
			usleep(50000);
			gettimeofday(&now, NULL);
			client_puts(c, "GET / HTTP/1.1\r\n\r\n");
			open = client_read(c, &r, false);
			if (open) {
				ck_assert_int_eq(r.status, 200);
				resp_free(&r);
				gettimeofday(&last, NULL);
			} else {
				ck_assert_int_ge(ms_between(&last, &now), 150);
			}
		}
		proved = open;
		client_close(c);
	}
	ck_assert(proved);
	stop_server();
}
END_TEST

START_TEST(pipelined_in_order)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	client_puts(c, "GET /echo?n=1 HTTP/1.1\r\n\r\n"
		       "GET /slow?n=2 HTTP/1.1\r\n\r\n"
		       "POST /echo?n=3 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
		       "GET /stream?n=4 HTTP/1.1\r\n\r\n"
		       "GET /echo?n=5 HTTP/1.1\r\nConnection: close\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert(kb_str_has_prefix(r.body, "GET /echo?n=1 "));
	resp_free(&r);
	ck_assert(client_read(c, &r, false));
	ck_assert_str_eq(r.body, "slow n=2");
	resp_free(&r);
	ck_assert(client_read(c, &r, false));
	ck_assert(kb_str_has_prefix(r.body, "POST /echo?n=3 "));
	ck_assert(kb_str_has_suffix(r.body, "\nabc"));
	resp_free(&r);
	ck_assert(client_read(c, &r, false));
	ck_assert_str_eq(r.body, "onetwothree");
	resp_free(&r);
	ck_assert(client_read(c, &r, false));
	ck_assert(kb_str_has_prefix(r.body, "GET /echo?n=5 "));
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	resp_free(&r);
	ck_assert(client_sees_close(c));
	client_close(c);
	ck_assert_int_eq(atomic_load(&S.requests), 5);
	stop_server();
}
END_TEST

START_TEST(expect_continue)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	client_puts(c, "POST /e HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 100);
	client_puts(c, "data");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	ck_assert(kb_str_has_suffix(r.body, "len=4\ndata"));
	resp_free(&r);
	client_close(c);
	stop_server();
}
END_TEST

START_TEST(head_method_and_large_response)
{
	start_server(NULL);
	struct client *c = client_open();
	struct resp r;
	client_puts(c, "HEAD /big HTTP/1.1\r\n\r\n");
	ck_assert(client_read(c, &r, true));
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(resp_header(&r, "Content-Length"), "100000");
	client_puts(c, "GET /big HTTP/1.1\r\n\r\n");
	ck_assert(client_read(c, &r, false));
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.body_len, 100000);
	ck_assert_uint_eq(strspn(r.body, "b"), 100000);
	resp_free(&r);
	client_close(c);
	stop_server();
}
END_TEST

START_TEST(client_certificates)
{
	start_server(NULL);
	char *cert = NULL, *key = NULL;
	const char *const g[] = {"dev"};
	ck_assert_int_eq(kb_pki_issue_client(S.dir, "jane", g, 1, 0, &cert, &key), 0);
	struct client c;
	struct resp r;
	ck_assert_int_eq(client_open_with(&c, cert, key), 0);
	client_puts(&c, "GET /cert HTTP/1.1\r\n\r\n");
	ck_assert(client_read(&c, &r, false));
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, "jane");
	resp_free(&r);
	SSL_free(c.ssl);
	close(c.fd);
	SSL_CTX_free(c.ctx);

	/* No certificate: the request still gets through, unauthenticated. */
	struct client *n = client_open();
	client_puts(n, "GET /cert HTTP/1.1\r\n\r\n");
	ck_assert(client_read(n, &r, false));
	ck_assert_int_eq(r.status, 401);
	resp_free(&r);
	client_close(n);

	/* A certificate from another CA: handshake succeeds, not trusted. */
	char other[64] = "/tmp/kb-http-other-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(other));
	ck_assert_int_eq(kb_pki_ensure(other, NULL, 0, "admin", NULL, 0), 0);
	char *ocert = NULL, *okey = NULL;
	ck_assert_int_eq(kb_pki_issue_client(other, "mallory", g, 1, 0, &ocert, &okey), 0);
	ck_assert_int_eq(client_open_with(&c, ocert, okey), 0);
	client_puts(&c, "GET /cert HTTP/1.1\r\n\r\n");
	ck_assert(client_read(&c, &r, false));
	ck_assert_int_eq(r.status, 401);
	resp_free(&r);
	SSL_free(c.ssl);
	close(c.fd);
	SSL_CTX_free(c.ctx);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", other);
	ck_assert_int_eq(system(cmd), 0);
	free(cert);
	free(key);
	free(ocert);
	free(okey);
	stop_server();
}
END_TEST

START_TEST(max_conns)
{
	struct kb_http_server_opts o = {.max_conns = 1};
	start_server(&o);
	struct client *a = client_open();
	struct client b;
	ck_assert_int_ne(client_open_with(&b, NULL, NULL), 0);
	SSL_free(b.ssl);
	close(b.fd);
	SSL_CTX_free(b.ctx);
	struct resp r;
	client_puts(a, "GET / HTTP/1.1\r\n\r\n");
	ck_assert(client_read(a, &r, false));
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	client_close(a);
	stop_server();
}
END_TEST

START_TEST(bad_listen_address)
{
	uv_loop_t loop;
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	kb_http_server_t *srv = NULL;
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_lt(
	    kb_http_server_start(&loop, "nonsense", ctx, NULL, on_request, NULL, &srv, NULL), 0);
	ck_assert_int_lt(
	    kb_http_server_start(&loop, "127.0.0.1:99999", ctx, NULL, on_request, NULL, &srv, NULL),
	    0);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	SSL_CTX_free(ctx);
}
END_TEST

START_TEST(unescape)
{
	char a[] = "a%20b%2Fc+d";
	ck_assert_int_eq(kb_http_unescape(a, false), 0);
	ck_assert_str_eq(a, "a b/c+d");
	char b[] = "a+b%2B";
	ck_assert_int_eq(kb_http_unescape(b, true), 0);
	ck_assert_str_eq(b, "a b+");
	char c[] = "%e2%9C%93";
	ck_assert_int_eq(kb_http_unescape(c, false), 0);
	ck_assert_str_eq(c, "\xe2\x9c\x93");
	char bad1[] = "abc%", bad2[] = "%2", bad3[] = "%zz", bad4[] = "x%00y", bad5[] = "%g1";
	ck_assert_int_eq(kb_http_unescape(bad1, false), -EINVAL);
	ck_assert_int_eq(kb_http_unescape(bad2, false), -EINVAL);
	ck_assert_int_eq(kb_http_unescape(bad3, false), -EINVAL);
	ck_assert_int_eq(kb_http_unescape(bad4, false), -EINVAL);
	ck_assert_int_eq(kb_http_unescape(bad5, false), -EINVAL);
	char empty[] = "";
	ck_assert_int_eq(kb_http_unescape(empty, false), 0);
}
END_TEST

START_TEST(query_iteration)
{
	char q[] = "labelSelector=app%3Dweb%2Ctier+in+(a)&watch=true&&limit=500&flag&"
		   "bad=%zz&fieldSelector=&resourceVersion=0";
	char *cur = q, *k, *v;
	const char *want[][2] = {{"labelSelector", "app=web,tier in (a)"},
				 {"watch", "true"},
				 {"limit", "500"},
				 {"flag", ""},
				 {"fieldSelector", ""},
				 {"resourceVersion", "0"}};
	size_t i = 0;
	while (kb_http_query_next(&cur, &k, &v)) {
		ck_assert_uint_lt(i, KB_ARRAY_SIZE(want));
		ck_assert_str_eq(k, want[i][0]);
		ck_assert_str_eq(v, want[i][1]);
		i++;
	}
	ck_assert_uint_eq(i, KB_ARRAY_SIZE(want));
	ck_assert(!kb_http_query_next(&cur, &k, &v));
	char e[] = "";
	cur = e;
	ck_assert(!kb_http_query_next(&cur, &k, &v));
}
END_TEST

START_TEST(reasons)
{
	ck_assert_str_eq(kb_http_reason(200), "OK");
	ck_assert_str_eq(kb_http_reason(404), "Not Found");
	ck_assert_str_eq(kb_http_reason(409), "Conflict");
	ck_assert_str_eq(kb_http_reason(422), "Unprocessable Entity");
	ck_assert_str_eq(kb_http_reason(429), "Too Many Requests");
	ck_assert_str_eq(kb_http_reason(431), "Request Header Fields Too Large");
}
END_TEST

/* Protocol offers in repeated and comma-separated header lines, as kubectl
 * sends X-Stream-Protocol-Version once per protocol. */
START_TEST(req_offers)
{
	struct kb_http_header h[] = {
	    {"x-stream-protocol-version", "v4.channel.k8s.io"},
	    {"x-stream-protocol-version", "v3.channel.k8s.io"},
	    {"sec-websocket-protocol", " base64.binary.k8s.io ,\tSPDY/3.1+portforward.k8s.io "},
	    {"upgrade", ""},
	};
	kb_http_req_t r = {.headers = h, .nheaders = 4};
	ck_assert(kb_http_req_offers(&r, "X-Stream-Protocol-Version", "v3.channel.k8s.io"));
	ck_assert(kb_http_req_offers(&r, "x-stream-protocol-version", "V4.CHANNEL.K8S.IO"));
	ck_assert(!kb_http_req_offers(&r, "x-stream-protocol-version", "channel.k8s.io"));
	ck_assert(!kb_http_req_offers(&r, "x-stream-protocol-version", "v4.channel.k8s"));
	ck_assert(kb_http_req_offers(&r, "sec-websocket-protocol", "spdy/3.1+portforward.k8s.io"));
	ck_assert(kb_http_req_offers(&r, "sec-websocket-protocol", "base64.binary.k8s.io"));
	ck_assert(!kb_http_req_offers(&r, "sec-websocket-protocol", "portforward.k8s.io"));
	ck_assert(!kb_http_req_offers(&r, "upgrade", ""));
	ck_assert(!kb_http_req_offers(&r, "connection", "upgrade"));
}
END_TEST

/* kube-apiserver's booleans in queries: only "0" and "false" are false
 * (client libraries send "True"; an empty value is true). */
START_TEST(query_bool)
{
	ck_assert(kb_http_query_bool("true"));
	ck_assert(kb_http_query_bool("True"));
	ck_assert(kb_http_query_bool("1"));
	ck_assert(kb_http_query_bool(""));
	ck_assert(kb_http_query_bool("yes"));
	ck_assert(!kb_http_query_bool("0"));
	ck_assert(!kb_http_query_bool("false"));
	ck_assert(!kb_http_query_bool("FALSE"));
	ck_assert(kb_http_query_bool("00"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lib/http");
	TCase *tc = tcase_create("server");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, get_keep_alive);
	tcase_add_test(tc, req_offers);
	tcase_add_test(tc, query_bool);
	tcase_add_test(tc, post_bodies);
	tcase_add_test(tc, body_too_large);
	tcase_add_test(tc, head_too_large);
	tcase_add_test(tc, garbage_is_400);
	tcase_add_test(tc, chunked_stream);
	tcase_add_test(tc, long_stream_handover);
	tcase_add_test(tc, shared_stream_budget);
	tcase_add_test(tc, stream_budget_exact);
	tcase_add_test(tc, huge_body_from_queue);
	tcase_add_test(tc, abort_on_disconnect);
	tcase_add_test(tc, request_outlives_connection);
	tcase_add_test(tc, upgrade_pipe);
	tcase_add_test(tc, idle_timeout);
	tcase_add_test(tc, pipelined_in_order);
	tcase_add_test(tc, expect_continue);
	tcase_add_test(tc, head_method_and_large_response);
	tcase_add_test(tc, client_certificates);
	tcase_add_test(tc, max_conns);
	tcase_add_test(tc, bad_listen_address);
	suite_add_tcase(s, tc);
	TCase *th = tcase_create("helpers");
	tcase_add_test(th, unescape);
	tcase_add_test(th, query_iteration);
	tcase_add_test(th, reasons);
	suite_add_tcase(s, th);
	return s;
}
