/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/httpc's tunnels against a TLS server of the test's own: a
 * thread with blocking OpenSSL sockets on 127.0.0.1, its certificates made
 * by lib/pki. Covered: a 101 and bytes both ways; 4 MiB each way, in order;
 * a head cut across reads, after an interim answer, with bytes in its last
 * read; refusals with their bodies (Content-Length, chunked, until the end,
 * cut at 64 KiB) and no early bytes sent; malformed and oversized heads, no
 * head at all; a refused connection; the server closing; the bearer token
 * and client certificate; no rate-limit token taken; pausing; closing with
 * bytes pending, also to a peer that writes meanwhile; kb_httpc_close with
 * tunnels open, connecting or in their TLS handshake; a server the CA does
 * not vouch for; arguments refused. And a plain request's extra header
 * lines (an Accept line replacing the default) and head callback (status and
 * Content-Type before the body, an error body streamed too). And the client's
 * credentials, decoded once for every connection: three connections each
 * showing the certificate, a server of another CA refused, a CA bundle's
 * second certificate trusted, a key not matching the certificate refused.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <uv.h>

#include "lib/httpc.h"
#include "lib/pki.h"
#include "lib/util.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

#define PATH "/api/v1/namespaces/ns/pods/p/exec?command=sh&stdin=true"
#define BIG  (4u * 1024 * 1024)

/* ---- certificates (made once, in the parent) ---------------------------------------- */

static char dir_a[64], dir_b[64];
static char *ca_a, *ca_b, *server_cert, *server_key, *client_cert, *client_key;

static char *read_pem(const char *dir, const char *name)
{
	char path[128], *data = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(kb_read_file(path, &data, NULL), 0);
	return data;
}

static void make_pki(char *dir)
{
	strcpy(dir, "/tmp/kb-tun-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(kb_pki_ensure(dir, NULL, 0, "admin", NULL, 0), 0);
}

static void pki_setup(void)
{
	make_pki(dir_a);
	make_pki(dir_b);
	ca_a = read_pem(dir_a, "ca.crt");
	ca_b = read_pem(dir_b, "ca.crt");
	server_cert = read_pem(dir_a, "server.crt");
	server_key = read_pem(dir_a, "server.key");
	ck_assert_int_eq(
	    kb_pki_issue_client(dir_a, "syncer", NULL, 0, 0, &client_cert, &client_key), 0);
}

static void pki_teardown(void)
{
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir_a, dir_b);
	ck_assert_int_eq(system(cmd), 0);
	free(ca_a);
	free(ca_b);
	free(server_cert);
	free(server_key);
	free(client_cert);
	free(client_key);
}

/* ---- the server ------------------------------------------------------------------------ */

struct srv;
typedef void (*script_fn)(struct srv *s, SSL *ssl);

struct srv {
	int lfd, port;
	SSL_CTX *ctx;
	pthread_t th;
	script_fn script; /* after the handshake; NULL: no TLS, read until EOF */
	bool want_cert;   /* ask for a client certificate */
	int conns;        /* connections served one after the other; 0: 1 */
	atomic_bool accepted;
	/* what it saw */
	char head[8192];
	size_t head_len;
	bool peer_cert;
	int with_cert; /* connections that showed a client certificate */
	size_t got;    /* bytes after the head */
	bool got_ok;   /* as expected */
	int eof_seen;  /* the client closed */
};

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void ctx_load(SSL_CTX *ctx, bool want_cert)
{
	BIO *b = BIO_new_mem_buf(server_cert, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	b = BIO_new_mem_buf(server_key, -1);
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	ck_assert(x && k);
	ck_assert_int_eq(SSL_CTX_use_certificate(ctx, x), 1);
	ck_assert_int_eq(SSL_CTX_use_PrivateKey(ctx, k), 1);
	X509_free(x);
	EVP_PKEY_free(k);
	if (!want_cert)
		return;
	b = BIO_new_mem_buf(ca_a, -1);
	X509 *ca = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca);
	X509_free(ca);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	/* a later connection resuming the session of an earlier one: OpenSSL
	 * refuses it without a session id context when it verifies clients */
	static const unsigned char sid[] = "test";
	ck_assert_int_eq(SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1), 1);
}

static void serve(struct srv *s, int fd)
{
	if (!s->script) {
		char buf[4096];
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		s->eof_seen++;
		return;
	}
	SSL *ssl = SSL_new(s->ctx);
	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) == 1) {
		s->peer_cert = SSL_get0_peer_certificate(ssl) != NULL;
		s->with_cert += s->peer_cert;
		s->script(s, ssl);
		SSL_shutdown(ssl);
	}
	SSL_free(ssl);
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	for (int i = 0; i < (s->conns ? s->conns : 1); i++) {
		struct pollfd p = {.fd = s->lfd, .events = POLLIN};
		if (poll(&p, 1, 10000) != 1)
			return NULL;
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		atomic_store(&s->accepted, true);
		struct timeval tv = {10, 0};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		serve(s, fd);
		close(fd);
	}
	return NULL;
}

static void srv_start(struct srv *s, script_fn script)
{
	s->script = script;
	s->ctx = SSL_CTX_new(TLS_server_method());
	ctx_load(s->ctx, s->want_cert);
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	ck_assert_int_eq(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(s->lfd, 4), 0);
	ck_assert_int_eq(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	ck_assert_int_eq(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void srv_join(struct srv *s)
{
	pthread_join(s->th, NULL);
	close(s->lfd);
	SSL_CTX_free(s->ctx);
}

/* A port nothing listens on. */
static int dead_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* ---- server scripts ------------------------------------------------------------------- */

static bool read_head(struct srv *s, SSL *ssl)
{
	while (s->head_len + 1 < sizeof(s->head)) {
		if (SSL_read(ssl, s->head + s->head_len, 1) != 1)
			return false;
		s->head_len++;
		s->head[s->head_len] = '\0';
		if (s->head_len >= 4 && memcmp(s->head + s->head_len - 4, "\r\n\r\n", 4) == 0)
			return true;
	}
	return false;
}

static void put(SSL *ssl, const char *p, size_t n)
{
	while (n) {
		int w = SSL_write(ssl, p, n > 65536 ? 65536 : (int)n);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void puts_ssl(SSL *ssl, const char *text)
{
	put(ssl, text, strlen(text));
}

/* Reads until the client closes; counts what came (s->got). */
static void drain(struct srv *s, SSL *ssl)
{
	char buf[16384];
	int n;
	while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0)
		s->got += (size_t)n;
	s->eof_seen = SSL_get_error(ssl, n) != SSL_ERROR_WANT_READ; /* not the 10 s timeout */
}

static unsigned char pattern_a(size_t i)
{
	return (unsigned char)(i * 7 + i / 251);
}

static unsigned char pattern_b(size_t i)
{
	return (unsigned char)(i * 13 + i / 509 + 1);
}

/* Reads until the client closes, checking pattern A. */
static void drain_a(struct srv *s, SSL *ssl, size_t want)
{
	unsigned char buf[16384];
	int n;
	s->got_ok = true;
	while (s->got < want && (n = SSL_read(ssl, buf, sizeof(buf))) > 0) {
		for (int i = 0; i < n; i++)
			if (buf[i] != pattern_a(s->got + (size_t)i))
				s->got_ok = false;
		s->got += (size_t)n;
	}
}

static const char head_101[] = "HTTP/1.1 101 Switching Protocols\r\n"
			       "Upgrade: SPDY/3.1\r\n"
			       "Connection: Upgrade\r\n"
			       "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n";

static void script_echo(struct srv *s, SSL *ssl)
{
	char buf[16384];
	int n;
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, head_101);
	while ((n = SSL_read(ssl, buf, sizeof(buf))) > 0) {
		s->got += (size_t)n;
		put(ssl, buf, (size_t)n);
	}
}

static void script_big(struct srv *s, SSL *ssl)
{
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, head_101);
	unsigned char *b = malloc(BIG);
	for (size_t i = 0; i < BIG; i++)
		b[i] = pattern_b(i);
	put(ssl, (const char *)b, BIG);
	free(b);
	drain_a(s, ssl, BIG);
}

static void script_split(struct srv *s, SSL *ssl)
{
	static const char *const parts[] = {
	    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 10",
	    "1 Switching Protocols\r\nUpgr",
	    "ade: websocket\r\n\r",
	    "\nFIRST",
	    "-SECOND",
	};
	if (!read_head(s, ssl))
		return;
	for (size_t i = 0; i < KB_ARRAY_SIZE(parts); i++) {
		puts_ssl(ssl, parts[i]);
		sleep_ms(30);
	}
	drain(s, ssl);
}

static const char json_body[] =
    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
    "\"message\":\"pods \\\"p\\\" is forbidden\",\"reason\":\"Forbidden\",\"code\":400}";

static void script_refuse_length(struct srv *s, SSL *ssl)
{
	char h[256];
	if (!read_head(s, ssl))
		return;
	snprintf(h, sizeof(h),
		 "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
		 "Content-Length: %zu\r\n\r\n",
		 strlen(json_body));
	puts_ssl(ssl, h);
	sleep_ms(20);
	put(ssl, json_body, 20);
	sleep_ms(20);
	puts_ssl(ssl, json_body + 20);
	drain(s, ssl); /* kept open: the length ends the body */
}

static void script_refuse_chunked(struct srv *s, SSL *ssl)
{
	char c1[64], c2[64];
	size_t n = strlen(json_body);
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
		      "Transfer-Encoding: chunked\r\n\r\n");
	snprintf(c1, sizeof(c1), "a;name=value\r\n");
	puts_ssl(ssl, c1);
	put(ssl, json_body, 10);
	puts_ssl(ssl, "\r");
	sleep_ms(20);
	snprintf(c2, sizeof(c2), "\n%zX\r\n", n - 10);
	puts_ssl(ssl, c2);
	puts_ssl(ssl, json_body + 10);
	puts_ssl(ssl, "\r\n0\r\nX-Trailer: yes\r\n");
	sleep_ms(20);
	puts_ssl(ssl, "\r\n");
	drain(s, ssl);
}

static void script_refuse_big(struct srv *s, SSL *ssl)
{
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100000\r\n\r\n");
	char *b = malloc(100000);
	for (size_t i = 0; i < 100000; i++)
		b[i] = (char)pattern_a(i);
	put(ssl, b, 100000);
	free(b);
	drain(s, ssl);
}

static void script_refuse_eof(struct srv *s, SSL *ssl)
{
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, "HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n");
	sleep_ms(20);
	puts_ssl(ssl, json_body); /* ended by the end of the connection */
}

static void script_no_answer(struct srv *s, SSL *ssl)
{
	read_head(s, ssl);
}

static const char *bad_answer; /* for script_bad */

static void script_bad(struct srv *s, SSL *ssl)
{
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, bad_answer);
	drain(s, ssl);
}

static void script_bye(struct srv *s, SSL *ssl)
{
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
	sleep_ms(20);
	puts_ssl(ssl, "bye");
}

static void script_sink(struct srv *s, SSL *ssl)
{
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, head_101);
	drain_a(s, ssl, SIZE_MAX);
}

/* Writes 16 MiB (more than the sockets hold) before it reads. */
static void script_talker(struct srv *s, SSL *ssl)
{
	size_t n = 16u << 20;
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, head_101);
	char *b = calloc(1, n);
	put(ssl, b, n);
	free(b);
	drain_a(s, ssl, SIZE_MAX);
}

static void script_pause(struct srv *s, SSL *ssl)
{
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\none");
	sleep_ms(30);
	puts_ssl(ssl, "two");
	drain(s, ssl);
}

/* ---- the client side ---------------------------------------------------------------- */

struct rec;
typedef void (*hook_fn)(struct rec *r);

struct rec {
	uv_loop_t loop;
	kb_httpc_t *c; /* NULL once closed */
	kb_httpc_tunnel_t *t;
	int status, heads, datas, closes, close_err;
	char headers[1024];
	size_t headers_len;
	char order[8]; /* 'h', 'd', 'c' as they came */
	int norder;
	struct kb_buf data;
	char first[64]; /* the first on_data */
	size_t first_len;
	int write_rc; /* kb_httpc_tunnel_write in on_head */
	bool check_b, b_ok;
	hook_fn on_head, on_data;
	uv_timer_t timer;
	int ticks;
	struct srv *srv;
};

static bool in_create; /* inside kb_httpc_tunnel: no callback may come */

static void note(struct rec *r, char what)
{
	if (r->norder < (int)sizeof(r->order))
		r->order[r->norder++] = what;
}

static void rec_head(kb_httpc_tunnel_t *t, int status, const char *h, size_t len, void *arg)
{
	struct rec *r = arg;
	ck_assert(!in_create);
	ck_assert_ptr_eq(t, r->t);
	r->status = status;
	r->heads++;
	ck_assert_uint_lt(len, sizeof(r->headers));
	memcpy(r->headers, h, len);
	r->headers[len] = '\0';
	r->headers_len = len;
	note(r, 'h');
	if (r->on_head)
		r->on_head(r);
}

static void rec_data(kb_httpc_tunnel_t *t, const char *p, size_t n, void *arg)
{
	struct rec *r = arg;
	ck_assert(!in_create);
	ck_assert_uint_gt(n, 0);
	if (!r->datas++) {
		r->first_len = n < sizeof(r->first) - 1 ? n : sizeof(r->first) - 1;
		memcpy(r->first, p, r->first_len);
	}
	if (r->check_b)
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)p[i] != pattern_b(r->data.len + i))
				r->b_ok = false;
	if (!r->norder || r->order[r->norder - 1] != 'd')
		note(r, 'd');
	ck_assert_int_eq(kb_buf_append(&r->data, p, n), 0);
	if (r->on_data)
		r->on_data(r);
}

static void rec_close(kb_httpc_tunnel_t *t, int err, void *arg)
{
	struct rec *r = arg;
	ck_assert(!in_create);
	r->closes++;
	r->close_err = err;
	note(r, 'c');
	r->t = NULL;
}

static void new_client(struct rec *r, int port, const char *ca, const char *token, bool cert)
{
	char url[64];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d", port);
	struct kb_httpc_opts o = {
	    .server = url,
	    .ca_pem = ca,
	    .token = token,
	    .cert_pem = cert ? client_cert : NULL,
	    .key_pem = cert ? client_key : NULL,
	    .qps = 1, /* tunnels do not wait for the rate limit */
	    .burst = 1,
	};
	ck_assert_int_eq(uv_loop_init(&r->loop), 0);
	ck_assert_int_eq(kb_httpc_new(&r->loop, &o, &r->c), 0);
}

static void open_tunnel(struct rec *r, const char *headers)
{
	struct kb_httpc_tunnel_cbs cbs = {rec_head, rec_data, rec_close, r};
	in_create = true;
	r->t = kb_httpc_tunnel(r->c, "POST", PATH, headers, &cbs);
	in_create = false;
	ck_assert_ptr_nonnull(r->t);
}

static void close_client(struct rec *r)
{
	kb_httpc_close(r->c);
	r->c = NULL;
}

/* Runs the loop until the tunnel is over, closes the client, and checks
 * that no handle is left. */
static void run(struct rec *r)
{
	uv_run(&r->loop, UV_RUN_DEFAULT);
	if (r->c)
		close_client(r);
	uv_run(&r->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&r->loop), 0);
}

static bool head_has(const struct srv *s, const char *line)
{
	return strstr(s->head, line) != NULL;
}

static void write_text(struct rec *r, const char *text)
{
	ck_assert_int_eq(kb_httpc_tunnel_write(r->t, text, strlen(text)), 0);
}

static void close_tunnel(struct rec *r)
{
	kb_httpc_tunnel_close(r->t);
	r->t = NULL;
}

/* ---- tests ----------------------------------------------------------------------------- */

static void never_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
		       void *arg)
{
	ck_abort_msg("a cancelled request called back");
}

static void echo_head(struct rec *r)
{
	write_text(r, "hello, ");
	write_text(r, "tunnel");
}

static void echo_data(struct rec *r)
{
	if (r->data.len == strlen("early hello, tunnel"))
		close_tunnel(r);
}

/* The usual start: a scripted server, a client trusting it, one tunnel. */
static void start_tunnel(struct srv *s, struct rec *r, script_fn script)
{
	srv_start(s, script);
	new_client(r, s->port, ca_a, NULL, false);
	open_tunnel(r, NULL);
}

/* Runs the loop until the tunnel ends, then waits for the server. */
static void run_to_end(struct rec *r, struct srv *s)
{
	run(r);
	srv_join(s);
}

START_TEST(echo_both_ways)
{
	struct srv s = {.want_cert = true};
	struct rec r = {.on_head = echo_head, .on_data = echo_data};
	srv_start(&s, script_echo);
	new_client(&r, s.port, ca_a, "tok-123", true);
	open_tunnel(&r, "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
			"X-Stream-Protocol-Version: v4.channel.k8s.io\r\n");
	write_text(&r, "early "); /* waits for the 101 */
	ck_assert_uint_eq(kb_httpc_tunnel_pending(r.t), 6);
	ck_assert_uint_eq(kb_httpc_active(r.c), 0);
	/* the bucket's one token is still there: a request starts at once */
	struct kb_httpc_call call = {.method = "GET", .path = "/api", .on_done = never_done};
	kb_httpc_req_t *req = kb_httpc_request(r.c, &call);
	ck_assert_ptr_nonnull(req);
	ck_assert_uint_eq(kb_httpc_active(r.c), 1);
	ck_assert_uint_eq(kb_httpc_queued(r.c), 0);
	kb_httpc_cancel(req);
	run_to_end(&r, &s);
	ck_assert(s.peer_cert);
	ck_assert_int_eq(r.status, 101);
	ck_assert_int_eq(r.heads, 1);
	ck_assert_str_eq(r.headers, "Upgrade: SPDY/3.1\r\nConnection: Upgrade\r\n"
				    "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n");
	ck_assert_uint_eq(r.data.len, 19);
	ck_assert(memcmp(r.data.data, "early hello, tunnel", 19) == 0);
	ck_assert_int_eq(r.closes, 0); /* closed by the caller: no callback */
	ck_assert(kb_str_has_prefix(s.head, "POST " PATH " HTTP/1.1\r\n"));
	char host[64];
	snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%d\r\n", s.port);
	ck_assert(head_has(&s, host));
	ck_assert(head_has(&s, "\r\nUser-Agent: kubicle-syncer\r\n"));
	ck_assert(head_has(&s, "\r\nAuthorization: Bearer tok-123\r\n"));
	ck_assert(head_has(&s, "\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
			       "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n"));
	ck_assert_uint_eq(s.got, 19);
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(four_mib_each_way)
{
	struct srv s = {0};
	struct rec r = {.check_b = true, .b_ok = true};
	start_tunnel(&s, &r, script_big);
	unsigned char *a = malloc(BIG);
	for (size_t i = 0; i < BIG; i++)
		a[i] = pattern_a(i);
	/* uneven writes: one byte, a block and a bit, the rest */
	ck_assert_int_eq(kb_httpc_tunnel_write(r.t, (char *)a, 1), 0);
	ck_assert_int_eq(kb_httpc_tunnel_write(r.t, (char *)a + 1, 20000), 0);
	ck_assert_int_eq(kb_httpc_tunnel_write(r.t, (char *)a + 20001, BIG - 20001), 0);
	free(a);
	ck_assert_uint_eq(kb_httpc_tunnel_pending(r.t), BIG);
	run_to_end(&r, &s);
	ck_assert_int_eq(r.status, 101);
	ck_assert_uint_eq(r.data.len, BIG);
	ck_assert(r.b_ok);
	ck_assert_uint_eq(s.got, BIG);
	ck_assert(s.got_ok);
	ck_assert_int_eq(r.closes, 1); /* the server closed after reading all */
	ck_assert_int_eq(r.close_err, 0);
	ck_assert(!head_has(&s, "Authorization:"));
	kb_buf_free(&r.data);
}
END_TEST

static void split_data(struct rec *r)
{
	if (r->data.len == strlen("FIRST-SECOND"))
		close_tunnel(r);
}

START_TEST(head_split_across_reads)
{
	struct srv s = {0};
	struct rec r = {.on_data = split_data};
	start_tunnel(&s, &r, script_split);
	run_to_end(&r, &s);
	ck_assert_int_eq(r.heads, 1); /* the 100 is skipped */
	ck_assert_int_eq(r.status, 101);
	ck_assert_str_eq(r.headers, "Upgrade: websocket\r\n");
	ck_assert_int_eq(r.norder, 2);
	ck_assert(memcmp(r.order, "hd", 2) == 0);
	ck_assert_uint_eq(r.first_len, 5); /* the bytes read with the head's end */
	ck_assert(memcmp(r.first, "FIRST", 5) == 0);
	ck_assert(memcmp(r.data.data, "FIRST-SECOND", 12) == 0);
	ck_assert_int_eq(r.closes, 0);
	ck_assert(s.eof_seen);
	kb_buf_free(&r.data);
}
END_TEST

static void refused_head(struct rec *r)
{
	r->write_rc = kb_httpc_tunnel_write(r->t, "x", 1);
}

static void check_refusal(struct rec *r, struct srv *s, int status)
{
	ck_assert_int_eq(r->status, status);
	ck_assert_int_eq(r->norder, 3);
	ck_assert(memcmp(r->order, "hdc", 3) == 0);
	ck_assert_int_eq(r->close_err, 0);
	ck_assert_int_eq(r->write_rc, -EPIPE);
	ck_assert_uint_eq(s->got, 0); /* the early bytes were not sent */
	ck_assert(s->eof_seen);
}

START_TEST(refusal_with_length)
{
	struct srv s = {0};
	struct rec r = {.on_head = refused_head};
	start_tunnel(&s, &r, script_refuse_length);
	write_text(&r, "EARLY");
	run_to_end(&r, &s);
	check_refusal(&r, &s, 400);
	ck_assert_int_eq(r.datas, 1);
	ck_assert_uint_eq(r.data.len, strlen(json_body));
	ck_assert(memcmp(r.data.data, json_body, r.data.len) == 0);
	ck_assert(strstr(r.headers, "Content-Type: application/json\r\n"));
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(refusal_chunked)
{
	struct srv s = {0};
	struct rec r = {.on_head = refused_head};
	start_tunnel(&s, &r, script_refuse_chunked);
	write_text(&r, "EARLY");
	run_to_end(&r, &s);
	check_refusal(&r, &s, 400);
	ck_assert_uint_eq(r.data.len, strlen(json_body));
	ck_assert(memcmp(r.data.data, json_body, r.data.len) == 0);
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(refusal_body_cut_at_64k)
{
	struct srv s = {0};
	struct rec r = {.on_head = refused_head};
	start_tunnel(&s, &r, script_refuse_big);
	run_to_end(&r, &s);
	check_refusal(&r, &s, 500);
	ck_assert_uint_eq(r.data.len, 65536);
	for (size_t i = 0; i < r.data.len; i++)
		ck_assert_uint_eq((unsigned char)r.data.data[i], pattern_a(i));
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(refusal_until_eof)
{
	struct srv s = {0};
	struct rec r = {.on_head = refused_head};
	start_tunnel(&s, &r, script_refuse_eof);
	run_to_end(&r, &s);
	ck_assert_int_eq(r.status, 403);
	ck_assert_int_eq(r.norder, 3);
	ck_assert(memcmp(r.order, "hdc", 3) == 0);
	ck_assert_int_eq(r.close_err, 0);
	ck_assert_uint_eq(r.data.len, strlen(json_body));
	ck_assert(memcmp(r.data.data, json_body, r.data.len) == 0);
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(closed_without_answer)
{
	struct srv s = {0};
	struct rec r = {0};
	start_tunnel(&s, &r, script_no_answer);
	run_to_end(&r, &s);
	ck_assert(s.head_len > 0);
	ck_assert_int_eq(r.heads, 0);
	ck_assert_int_eq(r.closes, 1);
	ck_assert_int_eq(r.close_err, -ECONNRESET);
	kb_buf_free(&r.data);
}
END_TEST

static const char *const bad_answers[] = {
    "HTTP/1.1 101 Switching Protocols\r\nNo colon here\r\n\r\n",
    "HTTP/1.1 1O1 Switching Protocols\r\n\r\n",
    "SPDY/3.1 101 Switching Protocols\r\n\r\n",
    "HTTP/1.1 400 Bad Request\r\nContent-Length: 12x\r\n\r\n",
    NULL, /* a head over 64 KiB: made in the test */
};

START_TEST(malformed_answer)
{
	struct srv s = {0};
	struct rec r = {0};
	struct kb_buf big = {0};
	bad_answer = bad_answers[_i];
	if (!bad_answer) {
		kb_buf_puts(&big, "HTTP/1.1 101 Switching Protocols\r\n");
		while (big.len < 70 * 1024)
			kb_buf_puts(&big,
				    "X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
		kb_buf_puts(&big, "\r\n");
		bad_answer = big.data;
	}
	start_tunnel(&s, &r, script_bad);
	run_to_end(&r, &s);
	kb_buf_free(&big);
	ck_assert_int_eq(r.heads, 0);
	ck_assert_int_eq(r.closes, 1);
	ck_assert_int_eq(r.close_err, -EPROTO);
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(connection_refused)
{
	struct rec r = {0};
	new_client(&r, dead_port(), ca_a, NULL, false);
	open_tunnel(&r, NULL);
	run(&r);
	ck_assert_int_eq(r.heads, 0);
	ck_assert_int_eq(r.datas, 0);
	ck_assert_int_eq(r.closes, 1);
	ck_assert_int_eq(r.close_err, -ECONNREFUSED);
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(server_closes)
{
	struct srv s = {0};
	struct rec r = {0};
	srv_start(&s, script_bye);
	new_client(&r, s.port, ca_a, NULL, false);
	open_tunnel(&r, "Upgrade: websocket\r\n");
	run_to_end(&r, &s);
	ck_assert_int_eq(r.status, 101);
	ck_assert_int_eq(r.norder, 3);
	ck_assert(memcmp(r.order, "hdc", 3) == 0);
	ck_assert_uint_eq(r.data.len, 3);
	ck_assert(memcmp(r.data.data, "bye", 3) == 0);
	ck_assert_int_eq(r.closes, 1);
	ck_assert_int_eq(r.close_err, 0);
	ck_assert(!head_has(&s, "Authorization:"));
	ck_assert(head_has(&s, "\r\nUpgrade: websocket\r\n\r\n"));
	kb_buf_free(&r.data);
}
END_TEST

#define PENDING (1024 * 1024)

static void pending_head(struct rec *r)
{
	char *a = malloc(PENDING);
	for (size_t i = 0; i < PENDING; i++)
		a[i] = (char)pattern_a(i);
	ck_assert_int_eq(kb_httpc_tunnel_write(r->t, a, PENDING), 0);
	free(a);
	ck_assert_uint_eq(kb_httpc_tunnel_pending(r->t), PENDING);
	close_tunnel(r);
}

START_TEST(close_sends_pending)
{
	struct srv s = {0};
	struct rec r = {.on_head = pending_head};
	start_tunnel(&s, &r, script_sink);
	run_to_end(&r, &s);
	ck_assert_int_eq(r.heads, 1);
	ck_assert_int_eq(r.closes, 0);
	ck_assert_uint_eq(s.got, PENDING);
	ck_assert(s.got_ok);
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(close_sends_pending_to_a_talker)
{
	struct srv s = {0};
	struct rec r = {.on_head = pending_head};
	start_tunnel(&s, &r, script_talker);
	run_to_end(&r, &s);
	ck_assert_int_eq(r.closes + r.datas, 0); /* its bytes were dropped, not passed on */
	ck_assert_uint_eq(s.got, PENDING);
	ck_assert(s.got_ok);
	kb_buf_free(&r.data);
}
END_TEST

static void client_close_head(struct rec *r)
{
	write_text(r, "never mind");
	close_client(r); /* from inside the tunnel's own callback */
}

START_TEST(client_close_with_open_tunnel)
{
	struct srv s = {0};
	struct rec r = {.on_head = client_close_head};
	start_tunnel(&s, &r, script_sink);
	run_to_end(&r, &s);
	ck_assert_int_eq(r.heads, 1);
	ck_assert_int_eq(r.datas, 0);
	ck_assert_int_eq(r.closes, 0);
	kb_buf_free(&r.data);
}
END_TEST

static void wait_accepted(uv_timer_t *h)
{
	struct rec *r = h->data;
	struct srv *s = r->srv;
	if (!atomic_load(&s->accepted) && ++r->ticks < 2000)
		return;
	uv_close((uv_handle_t *)h, NULL);
	close_client(r); /* curl is waiting for the server's hello */
}

START_TEST(client_close_in_handshake)
{
	struct srv s = {0};
	struct rec r = {.srv = &s};
	srv_start(&s, NULL); /* accepts, never answers the TLS hello */
	new_client(&r, s.port, ca_a, NULL, false);
	open_tunnel(&r, NULL);
	uv_timer_init(&r.loop, &r.timer);
	r.timer.data = &r;
	uv_timer_start(&r.timer, wait_accepted, 5, 5);
	run_to_end(&r, &s);
	ck_assert(atomic_load(&s.accepted));
	ck_assert_int_lt(r.ticks, 2000);
	ck_assert_int_eq(s.eof_seen, 1); /* the connection was closed */
	ck_assert_int_eq(r.heads + r.datas + r.closes, 0);
	kb_buf_free(&r.data);
}
END_TEST

static void wait_two(uv_timer_t *h)
{
	struct rec *r = h->data;
	if (!atomic_load(&r->srv->accepted) && ++r->ticks < 2000)
		return;
	uv_close((uv_handle_t *)h, NULL);
	close_client(r);
}

START_TEST(client_close_with_two_tunnels)
{
	struct srv s = {.conns = 2};
	struct rec r = {.srv = &s}, r2 = {0};
	srv_start(&s, NULL); /* accepts one, then the other once the first closed */
	new_client(&r, s.port, ca_a, NULL, false);
	open_tunnel(&r, NULL);
	struct kb_httpc_tunnel_cbs cbs = {rec_head, rec_data, rec_close, &r2};
	r2.t = kb_httpc_tunnel(r.c, "GET", "/two", NULL, &cbs);
	ck_assert_ptr_nonnull(r2.t);
	uv_timer_init(&r.loop, &r.timer);
	r.timer.data = &r;
	uv_timer_start(&r.timer, wait_two, 5, 5);
	run_to_end(&r, &s);
	ck_assert_int_eq(s.eof_seen, 2); /* both connections were closed */
	ck_assert_int_eq(r.heads + r.datas + r.closes, 0);
	ck_assert_int_eq(r2.heads + r2.datas + r2.closes, 0);
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(client_close_before_connect)
{
	struct rec r = {0};
	new_client(&r, dead_port(), ca_a, NULL, false);
	open_tunnel(&r, NULL);
	write_text(&r, "queued");
	close_client(&r);
	run(&r);
	ck_assert_int_eq(r.heads + r.datas + r.closes, 0);
	kb_buf_free(&r.data);
}
END_TEST

static void resume(uv_timer_t *h)
{
	struct rec *r = h->data;
	ck_assert_uint_eq(r->data.len, 0); /* nothing while paused */
	r->ticks++;
	uv_close((uv_handle_t *)h, NULL);
	kb_httpc_tunnel_pause(r->t, false);
}

static void pause_head(struct rec *r)
{
	kb_httpc_tunnel_pause(r->t, true);
	uv_timer_init(&r->loop, &r->timer);
	r->timer.data = r;
	uv_timer_start(&r->timer, resume, 150, 0);
}

static void pause_data(struct rec *r)
{
	if (r->data.len == 6)
		close_tunnel(r);
}

START_TEST(pause_holds_bytes)
{
	struct srv s = {0};
	struct rec r = {.on_head = pause_head, .on_data = pause_data};
	start_tunnel(&s, &r, script_pause);
	run_to_end(&r, &s);
	ck_assert_int_eq(r.ticks, 1);
	ck_assert_uint_eq(r.data.len, 6);
	ck_assert(memcmp(r.data.data, "onetwo", 6) == 0);
	ck_assert_int_eq(r.closes, 0);
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(wrong_ca)
{
	struct srv s = {0};
	struct rec r = {0};
	srv_start(&s, script_echo);
	new_client(&r, s.port, ca_b, NULL, false);
	open_tunnel(&r, NULL);
	run_to_end(&r, &s);
	ck_assert_int_eq(r.heads, 0);
	ck_assert_int_eq(r.closes, 1);
	ck_assert_int_eq(r.close_err, -EPROTO);
	ck_assert_uint_eq(s.head_len, 0);
	kb_buf_free(&r.data);
}
END_TEST

START_TEST(bad_arguments)
{
	struct rec r = {0};
	struct kb_httpc_tunnel_cbs cbs = {rec_head, rec_data, rec_close, &r};
	new_client(&r, dead_port(), ca_a, NULL, false);
	ck_assert_ptr_null(kb_httpc_tunnel(r.c, "GET", "no-slash", NULL, &cbs));
	ck_assert_ptr_null(kb_httpc_tunnel(r.c, "GE T", "/x", NULL, &cbs));
	ck_assert_ptr_null(kb_httpc_tunnel(r.c, "GET", "/x y", NULL, &cbs));
	ck_assert_ptr_null(kb_httpc_tunnel(r.c, "GET", "/x", "A: b", &cbs));
	ck_assert_ptr_null(kb_httpc_tunnel(r.c, "GET", "/x", "A: b\r\n\r\nC: d\r\n", &cbs));
	ck_assert_ptr_null(kb_httpc_tunnel(r.c, "GET", "/x", "A: b\nC: d\r\n", &cbs));
	run(&r);
	ck_assert_int_eq(r.heads + r.datas + r.closes, 0);
	kb_buf_free(&r.data);
}
END_TEST

/* ---- a request's head callback and extra headers ------------------------------------ */

static void script_proxied(struct srv *s, SSL *ssl)
{
	if (!read_head(s, ssl))
		return;
	puts_ssl(ssl, "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
		      "Transfer-Encoding: chunked\r\n\r\n");
	puts_ssl(ssl, "5\r\n{\"a\":\r\n");
	sleep_ms(50);
	puts_ssl(ssl, "2\r\n1}\r\n0\r\n\r\n");
}

struct head_rec {
	long status, done_status;
	char ctype[64], order[8];
	int norder, done_err;
	struct kb_buf body;
};

static bool hr_head(kb_httpc_req_t *req, long status, const char *ctype, void *arg)
{
	struct head_rec *h = arg;
	h->status = status;
	snprintf(h->ctype, sizeof(h->ctype), "%s", ctype);
	h->order[h->norder++] = 'h';
	return true;
}

static bool hr_data(kb_httpc_req_t *req, const char *p, size_t n, void *arg)
{
	struct head_rec *h = arg;
	if (h->norder < 6 && h->order[h->norder - 1] != 'd')
		h->order[h->norder++] = 'd';
	return kb_buf_append(&h->body, p, n) == 0;
}

static void hr_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
		    void *arg)
{
	struct head_rec *h = arg;
	h->done_err = err;
	h->done_status = status;
	ck_assert_ptr_null(body);
	h->order[h->norder++] = 'e';
}

START_TEST(request_head_and_headers)
{
	struct srv s = {.want_cert = true};
	struct rec r = {0};
	struct head_rec h = {0};
	srv_start(&s, script_proxied);
	new_client(&r, s.port, ca_a, NULL, true);
	static const char *const extra[] = {"Accept: application/json;as=Table;v=v1;g=meta.k8s.io",
					    "X-Remote-User: alice", "X-Remote-Group: devs",
					    "X-Remote-Group: system:authenticated", NULL};
	struct kb_httpc_call call = {.method = "GET",
				     .path = "/apis/wardle.example.com/v1alpha1/flunders",
				     .headers = extra,
				     .stream = true,
				     .on_head = hr_head,
				     .on_data = hr_data,
				     .on_done = hr_done,
				     .arg = &h};
	ck_assert_ptr_nonnull(kb_httpc_request(r.c, &call));
	run_to_end(&r, &s);
	ck_assert(s.peer_cert);
	ck_assert_int_eq(h.status, 404);
	ck_assert_str_eq(h.ctype, "application/json");
	ck_assert_int_eq(h.done_err, 0);
	ck_assert_int_eq(h.done_status, 404);
	h.order[h.norder] = '\0';
	ck_assert_str_eq(h.order, "hde");
	ck_assert_uint_eq(h.body.len, 7);
	ck_assert(memcmp(h.body.data, "{\"a\":1}", 7) == 0);
	ck_assert(head_has(&s, "\r\nAccept: application/json;as=Table;v=v1;g=meta.k8s.io\r\n"));
	ck_assert(!head_has(&s, "\r\nAccept: application/json\r\n"));
	ck_assert(head_has(&s, "\r\nX-Remote-User: alice\r\n"));
	ck_assert(head_has(&s, "\r\nX-Remote-Group: devs\r\nX-Remote-Group: "
			       "system:authenticated\r\n"));
	kb_buf_free(&h.body);
}
END_TEST

/* ---- credentials decoded once, given to each new connection ------------------------ */

static void script_ok_close(struct srv *s, SSL *ssl)
{
	if (read_head(s, ssl))
		puts_ssl(ssl,
			 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
}

struct done_rec {
	int err, n;
	long status;
};

static void dr_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
		    void *arg)
{
	struct done_rec *d = arg;
	d->err = err;
	d->status = status;
	d->n++;
}

/* n GETs at once from a client trusting ca (PEM) with the client
 * certificate and key given; each is checked to end with err and, when 0,
 * a 200. */
static void get_n(struct srv *s, int n, const char *ca, const char *key, int err)
{
	struct rec r = {0};
	struct done_rec d[4] = {{0}};
	char url[64];
	snprintf(url, sizeof(url), "https://127.0.0.1:%d", s->port);
	struct kb_httpc_opts o = {
	    .server = url, .ca_pem = ca, .cert_pem = client_cert, .key_pem = key};
	ck_assert_int_eq(uv_loop_init(&r.loop), 0);
	ck_assert_int_eq(kb_httpc_new(&r.loop, &o, &r.c), 0);
	for (int i = 0; i < n; i++) {
		struct kb_httpc_call call = {
		    .method = "GET", .path = "/x", .on_done = dr_done, .arg = &d[i]};
		ck_assert_ptr_nonnull(kb_httpc_request(r.c, &call));
	}
	run_to_end(&r, s);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(d[i].n, 1);
		ck_assert_int_eq(d[i].err, err);
		ck_assert_int_eq(d[i].status, err ? 0 : 200);
	}
	kb_buf_free(&r.data);
}

/* Three connections at once: each TLS context gets the store, certificate
 * and key decoded once, and each shows the certificate. */
START_TEST(three_connections_one_set_of_credentials)
{
	struct srv s = {.want_cert = true, .conns = 3};
	srv_start(&s, script_ok_close);
	get_n(&s, 3, ca_a, client_key, 0);
	ck_assert_int_eq(s.with_cert, 3);
}
END_TEST

/* The decoded store still decides: a server its CA did not sign is not
 * spoken to. */
START_TEST(request_to_a_server_of_another_ca)
{
	struct srv s = {.want_cert = true};
	srv_start(&s, script_ok_close);
	get_n(&s, 1, ca_b, client_key, -EPROTO);
	ck_assert_uint_eq(s.head_len, 0);
}
END_TEST

/* Every certificate of a CA bundle is trusted, not only its first. */
START_TEST(ca_bundle_of_two)
{
	struct srv s = {.want_cert = true};
	size_t lb = strlen(ca_b), la = strlen(ca_a);
	char *both = malloc(lb + la + 1);
	memcpy(both, ca_b, lb);
	memcpy(both + lb, ca_a, la + 1);
	srv_start(&s, script_ok_close);
	get_n(&s, 1, both, client_key, 0);
	ck_assert_int_eq(s.with_cert, 1);
	free(both);
}
END_TEST

/* A key that is not the certificate's: no connection gets through. */
START_TEST(key_of_another_certificate)
{
	struct srv s = {.want_cert = true};
	char *cert2 = NULL, *key2 = NULL;
	ck_assert_int_eq(kb_pki_issue_client(dir_a, "other", NULL, 0, 0, &cert2, &key2), 0);
	srv_start(&s, script_ok_close);
	get_n(&s, 1, ca_a, key2, -EPROTO);
	ck_assert_uint_eq(s.head_len, 0);
	free(cert2);
	free(key2);
}
END_TEST

static Suite *suite(void)
{
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("httpc_tunnel");
	TCase *tc = tcase_create("httpc_tunnel");
	tcase_set_timeout(tc, 60);
	tcase_add_unchecked_fixture(tc, pki_setup, pki_teardown);
	tcase_add_test(tc, echo_both_ways);
	tcase_add_test(tc, four_mib_each_way);
	tcase_add_test(tc, head_split_across_reads);
	tcase_add_test(tc, refusal_with_length);
	tcase_add_test(tc, refusal_chunked);
	tcase_add_test(tc, refusal_body_cut_at_64k);
	tcase_add_test(tc, refusal_until_eof);
	tcase_add_test(tc, closed_without_answer);
	tcase_add_loop_test(tc, malformed_answer, 0, (int)KB_ARRAY_SIZE(bad_answers));
	tcase_add_test(tc, connection_refused);
	tcase_add_test(tc, server_closes);
	tcase_add_test(tc, close_sends_pending);
	tcase_add_test(tc, close_sends_pending_to_a_talker);
	tcase_add_test(tc, client_close_with_open_tunnel);
	tcase_add_test(tc, client_close_in_handshake);
	tcase_add_test(tc, client_close_with_two_tunnels);
	tcase_add_test(tc, client_close_before_connect);
	tcase_add_test(tc, pause_holds_bytes);
	tcase_add_test(tc, wrong_ca);
	tcase_add_test(tc, bad_arguments);
	tcase_add_test(tc, request_head_and_headers);
	tcase_add_test(tc, three_connections_one_set_of_credentials);
	tcase_add_test(tc, request_to_a_server_of_another_ca);
	tcase_add_test(tc, ca_bundle_of_two);
	tcase_add_test(tc, key_of_another_certificate);
	suite_add_tcase(s, tc);
	return s;
}
