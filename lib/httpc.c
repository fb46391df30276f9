/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP client: libcurl multi driven by libuv (see httpc.h). curl tells us
 * which sockets to watch (socket callback -> uv_poll_t per socket) and when
 * to wake it (timer callback -> one uv_timer_t); we hand readiness back with
 * curl_multi_socket_action and collect finished transfers with
 * curl_multi_info_read. A second timer drives the token bucket.
 * Headers (with the bearer token) are built when a request starts, so a
 * token replaced while requests wait behind the rate limit reaches them.
 * Tunnels (upgraded connections) are in httpc_tunnel.c.
 */
#include "lib/httpc.h"
#include "lib/httpc_impl.h"

#include "lib/kubeconfig.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/log.h"
#include "lib/util.h"

#define MAX_HOST_CONNS 96
/* Non-streaming requests on the wire at once; more wait in the queue. A
 * single-threaded API server answers one at a time anyway, and each extra
 * HTTP/1.1 connection costs a TLS handshake on both sides: under a burst,
 * opening ~50 of them made the first creates wait 100-200 ms (bench/sync.sh);
 * with 32, a 1,000-pod burst still opened ~35 connections, and their
 * setup (a TLS context and the client key per connection, even when the
 * session resumes) was ~5 % of the tenant's and the host's CPU. Too few
 * starve the host of batches (its group commit takes what one loop
 * iteration read): 8 looked slower than 16 and 32 under an 8-client burst
 * (bench/sync.sh; too noisy on a shared VM to rank 16 and 32). Against a
 * kube-apiserver at ~10 ms per create 16 carry ~1,600 creates/s, far above
 * the default rate limit. But the rate is at most MAX_INFLIGHT / round
 * trip, and a round trip between two busy processes sharing cores is long:
 * at an offered 2,000 creates/s (SYNC_RATE=2000 bench/sync.sh, load average
 * 2.5-3.7 from other jobs, runs alternated) 16 carried 630-1,100 pods/s with
 * the queue growing to seconds, 64 carried 870-1,780. The connections a
 * burst opens stay in curl's cache (MAX_HOST_CONNS) and are reused, so
 * their set-up is paid once. Streams (watches, followed logs) hold a
 * connection for long and do not count. */
#define MAX_INFLIGHT 64
/* client-go's cachingTokenSource re-reads a token file at most once a minute */
#define TOKEN_REREAD_MS 60000

struct sock_ctx {
	uv_poll_t poll;
	curl_socket_t fd;
	kb_httpc_t *c;
	struct sock_ctx *next, *prev;
};

struct kb_httpc_req {
	kb_httpc_t *c;
	CURL *easy;
	struct curl_slist *headers, *connect_to, *extra; /* extra: kb_httpc_call.headers */
	char *method, *url, *body, *ctype;
	size_t body_len;
	size_t max_body;    /* kb_httpc_call.max_body */
	unsigned token_gen; /* c->token_gen when the headers were built */
	bool stream, in_cb, cancelled, started, retried, too_big;
	kb_httpc_data_cb on_data;
	kb_httpc_done_cb on_done;
	kb_httpc_head_cb on_head;
	bool head_seen;     /* on_head called */
	char ctype_in[128]; /* the answer's Content-Type, for on_head */
	void *arg;
	struct kb_buf resp;
	struct kb_httpc_dial dial;        /* the connection attempts (allow hook) */
	struct kb_httpc_req *next, *prev; /* in c->queue or c->active */
};

static void pump(kb_httpc_t *c);

/* ---- lists ------------------------------------------------------------------ */

static void list_unlink(struct kb_httpc_req **head, struct kb_httpc_req *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		*head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->next = r->prev = NULL;
}

static void list_push(struct kb_httpc_req **head, struct kb_httpc_req *r)
{
	r->prev = NULL;
	r->next = *head;
	if (*head)
		(*head)->prev = r;
	*head = r;
}

/* Keeps easy handle e for a later request (reset: no option, no state of
 * this one survives), or cleans it up when the pool is full. */
static void easy_release(kb_httpc_t *c, CURL *e)
{
	if (!e)
		return;
	if (c->closing || c->nidle == EASY_POOL) {
		curl_easy_cleanup(e);
		return;
	}
	curl_easy_reset(e);
	c->idle[c->nidle++] = e;
}

static void req_free(struct kb_httpc_req *r)
{
	easy_release(r->c, r->easy);
	curl_slist_free_all(r->headers);
	curl_slist_free_all(r->connect_to);
	curl_slist_free_all(r->extra);
	free(r->method);
	free(r->url);
	free(r->body);
	free(r->ctype);
	kb_buf_free(&r->resp);
	free(r);
}

/* ---- error mapping (the one place curl codes become errnos) ---------------- */

int kb_httpc_map_curl(CURLcode cc)
{
	switch (cc) {
	case CURLE_OK: return 0;
	case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
	case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
	case CURLE_COULDNT_RESOLVE_HOST: return -EHOSTUNREACH;
	case CURLE_WRITE_ERROR:
	case CURLE_ABORTED_BY_CALLBACK: return -ECANCELED;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CIPHER: return -EPROTO;
	case CURLE_GOT_NOTHING:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE: return -ECONNRESET;
	case CURLE_OUT_OF_MEMORY: return -ENOMEM;
	default: return -EIO;
	}
}

/* ---- connections: the allow hook -------------------------------------------- */

static void format_peer(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)sa;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(buf, len, "%s:%u", a, ntohs(s4->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)sa;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, len, "[%s]:%u", a, ntohs(s6->sin6_port));
	} else {
		buf[0] = '\0';
	}
}

/* curl's open-socket callback: the one place a connection of this client
 * gets its socket, with the address curl resolved and is about to connect
 * to. A refusal makes curl try the next address, or fail to connect. */
static curl_socket_t on_open_socket(void *clientp, curlsocktype purpose,
				    struct curl_sockaddr *address)
{
	struct kb_httpc_dial *d = clientp;
	kb_httpc_t *c = d->c;
	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKET_BAD;
	format_peer(&address->addr, d->peer, sizeof(d->peer));
	if (c->allow && !c->allow(&address->addr, c->allow_arg)) {
		d->refused = true;
		kb_info("httpc", "%s: connection to %s refused by the address filter", c->server,
			d->peer);
		return CURL_SOCKET_BAD;
	}
	return socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

void kb_httpc_setup_dial(kb_httpc_t *c, CURL *e, struct kb_httpc_dial *d)
{
	d->c = c;
	d->peer[0] = '\0';
	d->refused = false;
	curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
	curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, d);
	if (c->allow)
		curl_easy_setopt(e, CURLOPT_PROXY, ""); /* none, whatever the environment says */
}

int kb_httpc_dial_err(const struct kb_httpc_dial *d, CURLcode cc)
{
	if (d->refused && cc == CURLE_COULDNT_CONNECT)
		return -EACCES;
	return kb_httpc_map_curl(cc);
}

const char *kb_httpc_req_peer(kb_httpc_req_t *r)
{
	if (!r->dial.peer[0] && r->easy) { /* a kept-alive connection: curl knows it */
		char *ip = NULL;
		long port = 0;
		curl_easy_getinfo(r->easy, CURLINFO_PRIMARY_IP, &ip);
		curl_easy_getinfo(r->easy, CURLINFO_PRIMARY_PORT, &port);
		if (ip && *ip)
			snprintf(r->dial.peer, sizeof(r->dial.peer),
				 strchr(ip, ':') ? "[%s]:%ld" : "%s:%ld", ip, port);
	}
	return r->dial.peer;
}

/* ---- completion ---------------------------------------------------------------- */

static int start(kb_httpc_t *c, struct kb_httpc_req *r);
static bool token_reload(kb_httpc_t *c);

/* A 401 with a token from a file: the token may have rotated. True when the
 * request should go again with a newer token (once per request). */
static bool retry_unauthorized(kb_httpc_t *c, struct kb_httpc_req *r, CURLcode cc, long status)
{
	if (cc != CURLE_OK || status != 401 || r->retried || r->cancelled || !c->token_file)
		return false;
	if (r->token_gen == c->token_gen && !token_reload(c))
		return false;
	kb_info("httpc", "%s %s: 401, retrying with the re-read token", r->method, r->url);
	r->retried = true;
	r->resp.len = 0;
	return true;
}

static void finish(kb_httpc_t *c, struct kb_httpc_req *r, CURLcode cc)
{
	long status = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	curl_multi_remove_handle(c->multi, r->easy);
	list_unlink(&c->active, r);
	c->nactive--;
	c->ninflight -= !r->stream;
	if (retry_unauthorized(c, r, cc, status)) {
		start(c, r); /* r keeps its handle: cannot fail */
		return;
	}
	if (!r->cancelled) {
		int err = r->too_big ? -EMSGSIZE : kb_httpc_dial_err(&r->dial, cc);
		if ((err && err != -ECANCELED) || (!err && (status == 429 || status >= 500)))
			c->nfailed++;
		if (err && err != -ECANCELED)
			kb_debug("httpc", "%s %s: %s", r->method, r->url, curl_easy_strerror(cc));
		const char *body = r->on_data ? NULL : (r->resp.data ? r->resp.data : "");
		c->in_done = true;
		r->on_done(r, err, err ? 0 : status, body, r->on_data ? 0 : r->resp.len, r->arg);
		c->in_done = false;
	}
	req_free(r);
}

/* Requests cancelled while curl was running: removed now that it is not. */
static void sweep_cancelled(kb_httpc_t *c)
{
	struct kb_httpc_req *r = c->active, *next;
	for (; r; r = next) {
		next = r->next;
		if (!r->cancelled)
			continue;
		curl_multi_remove_handle(c->multi, r->easy);
		list_unlink(&c->active, r);
		c->nactive--;
		c->ninflight -= !r->stream;
		req_free(r);
	}
}

static void check_multi_info(kb_httpc_t *c)
{
	CURLMsg *msg;
	int left;
	while ((msg = curl_multi_info_read(c->multi, &left))) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct kb_httpc_req *r = NULL;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		CURLcode cc = msg->data.result;
		if (r)
			finish(c, r, cc);
		if (c->close_pending)
			break;
	}
	if (c->close_pending) { /* closed from an on_done: now that it is back */
		c->close_pending = false;
		kb_httpc_close(c);
		return;
	}
	sweep_cancelled(c);
	pump(c);
}

/* ---- curl <-> libuv ------------------------------------------------------------ */

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct sock_ctx *s = h->data;
	kb_httpc_t *c = s->c;
	int flags = 0, running;
	if (status < 0)
		flags = CURL_CSELECT_ERR;
	if (events & UV_READABLE)
		flags |= CURL_CSELECT_IN;
	if (events & UV_WRITABLE)
		flags |= CURL_CSELECT_OUT;
	c->in_action = true;
	curl_multi_socket_action(c->multi, s->fd, flags, &running);
	c->in_action = false;
	check_multi_info(c);
}

static void on_sock_closed(uv_handle_t *h)
{
	struct sock_ctx *s = h->data;
	kb_httpc_t *c = s->c;
	free(s);
	if (--c->open_handles == 0 && c->closing)
		free(c);
}

static void sock_close(kb_httpc_t *c, struct sock_ctx *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		c->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	uv_poll_stop(&s->poll);
	uv_close((uv_handle_t *)&s->poll, on_sock_closed);
}

static int on_socket(CURL *easy, curl_socket_t fd, int action, void *userp, void *socketp)
{
	kb_httpc_t *c = userp;
	struct sock_ctx *s = socketp;
	if (action == CURL_POLL_REMOVE) {
		if (s) {
			sock_close(c, s);
			curl_multi_assign(c->multi, fd, NULL);
		}
		return 0;
	}
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			return -1;
		s->fd = fd;
		s->c = c;
		if (uv_poll_init_socket(c->loop, &s->poll, fd) < 0) {
			free(s);
			return -1;
		}
		s->poll.data = s;
		c->open_handles++;
		s->next = c->socks;
		if (c->socks)
			c->socks->prev = s;
		c->socks = s;
		curl_multi_assign(c->multi, fd, s);
	}
	int ev = 0;
	if (action == CURL_POLL_IN || action == CURL_POLL_INOUT)
		ev |= UV_READABLE;
	if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT)
		ev |= UV_WRITABLE;
	uv_poll_start(&s->poll, ev, on_poll);
	return 0;
}

static void on_timeout(uv_timer_t *t)
{
	kb_httpc_t *c = t->data;
	int running;
	c->in_action = true;
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	c->in_action = false;
	check_multi_info(c);
}

static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	kb_httpc_t *c = userp;
	if (timeout_ms < 0)
		uv_timer_stop(&c->timer);
	else
		uv_timer_start(&c->timer, on_timeout, (uint64_t)timeout_ms, 0);
	return 0;
}

/* ---- bodies -------------------------------------------------------------------- */

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct kb_httpc_req *r = userdata;
	size_t n = size * nmemb;
	if (r->cancelled)
		return 0;
	if (r->max_body && r->resp.len + n > r->max_body) {
		r->too_big = true;
		return 0; /* curl ends the transfer */
	}
	if (!r->on_data)
		return kb_buf_append(&r->resp, ptr, n) < 0 ? 0 : n;
	long status = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status >= 300 && !r->on_head) /* an error Status: keep it for on_done */
		return kb_buf_append(&r->resp, ptr, n) < 0 ? 0 : n;
	r->in_cb = true;
	bool go = r->on_data(r, ptr, n, r->arg);
	r->in_cb = false;
	return go && !r->cancelled ? n : 0;
}

/* Header lines of the answer: its Content-Type is kept, and the blank line
 * ending a final (not 1xx) head calls on_head. */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct kb_httpc_req *r = userdata;
	size_t n = size * nmemb;
	if (r->cancelled)
		return 0;
	if (n > 13 && strncasecmp(ptr, "content-type:", 13) == 0) {
		const char *v = ptr + 13;
		size_t vl = n - 13;
		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
			vl--;
		snprintf(r->ctype_in, sizeof(r->ctype_in), "%.*s", (int)vl, v);
	}
	if (!((n == 2 && ptr[0] == '\r') || (n == 1 && ptr[0] == '\n')) || r->head_seen)
		return n;
	long status = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200) {
		r->ctype_in[0] = '\0';
		return n;
	}
	r->head_seen = true;
	r->in_cb = true;
	bool go = r->on_head(r, status, r->ctype_in, r->arg);
	r->in_cb = false;
	return go && !r->cancelled ? n : 0;
}

/* ---- TLS credentials, decoded once ------------------------------------------------ */

/* Up to this many certificates after the client's own (its chain) */
#define MAX_CHAIN 8

/* The client's CA store, certificate, chain and key as objects of the
 * OpenSSL libcurl loaded (kb_curl_ossl), made once per client. curl makes a
 * new TLS context per connection and, given PEM blobs, decodes them into it
 * each time: ~7.5 M instructions (the key's decoder alone 4.8 M) of the
 * ~17.5 M a new connection to the host cost (bench/README.md, branch
 * sync4). The store is shared by reference (X509_STORE is
 * reference-counted and read-only once built); certificate and key are
 * taken by reference by each context. */
struct kb_httpc_creds {
	X509_STORE *store; /* NULL: no ca_pem */
	X509 *cert;        /* NULL: no client certificate */
	X509 *chain[MAX_CHAIN];
	unsigned nchain;
	EVP_PKEY *key;
};

static void creds_free(struct kb_httpc_creds *k)
{
	if (!k)
		return;
	const struct kb_curl_ossl *o = &kb_curl_ossl;
	if (k->store)
		o->x509_store_free(k->store);
	if (k->cert)
		o->x509_free(k->cert);
	for (unsigned i = 0; i < k->nchain; i++)
		o->x509_free(k->chain[i]);
	if (k->key)
		o->evp_pkey_free(k->key);
	free(k);
}

/* The CA bundle's certificates and CRLs in a new store, as curl's
 * CAINFO_BLOB loads them (PEM_X509_INFO_read_bio; at least one entry).
 * NULL when the PEM does not load. */
static X509_STORE *creds_store(const char *pem)
{
	const struct kb_curl_ossl *o = &kb_curl_ossl;
	BIO *b = o->bio_new_mem_buf(pem, (int)strlen(pem));
	STACK_OF(X509_INFO) *inf = b ? o->pem_x509_info_read_bio(b, NULL, NULL, NULL) : NULL;
	X509_STORE *st = inf ? o->x509_store_new() : NULL;
	int n = inf ? o->sk_num((OPENSSL_STACK *)inf) : 0, count = 0;
	for (int i = 0; st && i < n; i++) {
		X509_INFO *it = o->sk_value((OPENSSL_STACK *)inf, i);
		bool ok = (!it->x509 || o->x509_store_add_cert(st, it->x509)) &&
			  (!it->crl || o->x509_store_add_crl(st, it->crl));
		count += ok ? !!it->x509 + !!it->crl : 0;
		if (!ok)
			count = n = 0; /* as curl: a failed add fails the bundle */
	}
	for (int i = 0; inf && i < o->sk_num((OPENSSL_STACK *)inf); i++)
		o->x509_info_free(o->sk_value((OPENSSL_STACK *)inf, i));
	if (inf)
		o->sk_free((OPENSSL_STACK *)inf);
	if (b)
		o->bio_free(b);
	if (st && !count) {
		o->x509_store_free(st);
		st = NULL;
	}
	/* the flags curl 7.88 sets on its store (populate_x509_store) once it
	 * verifies the peer, set here too, should a curl set its store up
	 * before the SSL_CTX callback rather than after */
	if (st)
		o->x509_store_set_flags(st, X509_V_FLAG_TRUSTED_FIRST | X509_V_FLAG_PARTIAL_CHAIN);
	return st;
}

/* PEM password callback: none (as curl's without CURLOPT_KEYPASSWD), so
 * that an encrypted key fails instead of prompting on a terminal. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf, (void)size, (void)rwflag, (void)u;
	return 0;
}

/* The client certificate (first PEM block, as curl reads it: trusted
 * form accepted), its chain (the blocks after it) and the key, which must
 * match. -EPROTO when any does not load. */
static int creds_client(struct kb_httpc_creds *k, const char *cert_pem, const char *key_pem)
{
	const struct kb_curl_ossl *o = &kb_curl_ossl;
	BIO *b = o->bio_new_mem_buf(cert_pem, (int)strlen(cert_pem));
	k->cert = b ? o->pem_read_bio_x509_aux(b, NULL, no_password, NULL) : NULL;
	X509 *x;
	while (k->cert && (x = o->pem_read_bio_x509(b, NULL, no_password, NULL))) {
		if (k->nchain == MAX_CHAIN) {
			o->x509_free(x);
			break; /* longer than any kubeconfig's: left to curl */
		}
		k->chain[k->nchain++] = x;
	}
	bool more = k->nchain == MAX_CHAIN;
	if (b)
		o->bio_free(b);
	b = o->bio_new_mem_buf(key_pem, (int)strlen(key_pem));
	k->key = b ? o->pem_read_bio_privatekey(b, NULL, no_password, NULL) : NULL;
	if (b)
		o->bio_free(b);
	o->err_clear_error(); /* the chain's end (no start line) and any failure */
	if (!k->cert || !k->key || more || o->x509_check_private_key(k->cert, k->key) != 1) {
		o->err_clear_error();
		return -EPROTO;
	}
	return 0;
}

/* Builds c->creds when libcurl's OpenSSL is at hand and there is PEM to
 * decode; left NULL (curl gets the PEM blobs, and reports what is wrong
 * with them) otherwise. */
static void creds_build(kb_httpc_t *c)
{
	if (!kb_curl_ossl_ok || (!c->ca_pem && !(c->cert_pem && c->key_pem)))
		return;
	struct kb_httpc_creds *k = calloc(1, sizeof(*k));
	if (!k)
		return;
	if ((c->ca_pem && !(k->store = creds_store(c->ca_pem))) ||
	    (c->cert_pem && c->key_pem && creds_client(k, c->cert_pem, c->key_pem) < 0)) {
		kb_info("httpc", "%s: credentials not decoded here: curl gets the PEM", c->server);
		kb_curl_ossl.err_clear_error();
		creds_free(k);
		return;
	}
	c->creds = k;
}

/* curl's SSL_CTX callback: a new connection's TLS context, after curl set
 * its options and before its handshake. Gives it the shared store and the
 * client's certificate, chain and key. curl then sets its verification
 * flags on that store (trusted first, partial chains: the same as on its
 * own) and checks the peer's name itself. */
static CURLcode on_ssl_ctx(CURL *e, void *ssl_ctx, void *arg)
{
	(void)e;
	const struct kb_httpc_creds *k = arg;
	const struct kb_curl_ossl *o = &kb_curl_ossl;
	SSL_CTX *ctx = ssl_ctx;
	if (k->store) {
		if (!o->x509_store_up_ref(k->store))
			return CURLE_OUT_OF_MEMORY;
		o->ssl_ctx_set_cert_store(ctx, k->store); /* takes the reference */
	}
	if (!k->cert)
		return CURLE_OK;
	if (o->ssl_ctx_use_certificate(ctx, k->cert) != 1)
		return CURLE_SSL_CERTPROBLEM;
	for (unsigned i = 0; i < k->nchain; i++)
		if (!o->ssl_ctx_ctrl(ctx, SSL_CTRL_CHAIN_CERT, 1, k->chain[i])) /* add1 */
			return CURLE_SSL_CERTPROBLEM;
	if (o->ssl_ctx_use_privatekey(ctx, k->key) != 1)
		return CURLE_SSL_CERTPROBLEM;
	return CURLE_OK;
}

/* ---- starting requests ----------------------------------------------------------- */

/* With decoded credentials: no PEM for curl, and no CA file or directory
 * either (curl's defaults, /etc/ssl/certs: the store holds exactly the CA
 * bundle given, as client-go trusts only a kubeconfig's CA data). */
static void setup_tls_creds(kb_httpc_t *c, CURL *e)
{
	const struct kb_httpc_creds *k = c->creds;
	curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, on_ssl_ctx);
	curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, (void *)k);
	if (k->store) {
		curl_easy_setopt(e, CURLOPT_CAINFO, NULL);
		curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	} else if (c->ca_file) {
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
	}
}

void kb_httpc_setup_tls(kb_httpc_t *c, CURL *e)
{
	if (c->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->creds) {
		setup_tls_creds(c, e);
		return;
	}
	if (c->ca_pem) {
		struct curl_blob b = {c->ca_pem, strlen(c->ca_pem), CURL_BLOB_NOCOPY};
		curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
	} else if (c->ca_file) {
		curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
	}
	if (c->cert_pem && c->key_pem) {
		struct curl_blob cb = {c->cert_pem, strlen(c->cert_pem), CURL_BLOB_NOCOPY};
		struct curl_blob kb = {c->key_pem, strlen(c->key_pem), CURL_BLOB_NOCOPY};
		curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
		curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
		curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	}
}

/* Gives r its curl handle when it starts, not when it is queued: a queue of
 * a thousand creates (a burst the host cannot follow) then holds bodies, not
 * curl handles. 0 or -ENOMEM. */
static int req_setup(kb_httpc_t *c, struct kb_httpc_req *r)
{
	CURL *e = c->nidle ? c->idle[--c->nidle] : curl_easy_init();
	if (!e)
		return -ENOMEM;
	r->easy = e;
	if (c->share) /* after a reset too: it resizes the handle's session cache */
		curl_easy_setopt(e, CURLOPT_SHARE, c->share);
	curl_easy_setopt(e, CURLOPT_URL, r->url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	if (r->on_head) {
		curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	}
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, c->user_agent ? c->user_agent : "kubicle-syncer");
	if (r->connect_to)
		curl_easy_setopt(e, CURLOPT_CONNECT_TO, r->connect_to);
	if (!r->stream)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	if (strcmp(r->method, "GET") == 0)
		curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
	if (r->body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
	}
	kb_httpc_setup_tls(c, e);
	kb_httpc_setup_dial(c, e, &r->dial);
	return 0;
}

/* ---- bearer token ------------------------------------------------------------------ */

int kb_httpc_set_token(kb_httpc_t *c, const char *token)
{
	char *t = NULL;
	if (token && !(t = strdup(token)))
		return -ENOMEM;
	free(c->token);
	c->token = t;
	c->token_gen++;
	return 0;
}

/* Re-reads the token file; true when the token changed. A file that cannot
 * be read keeps the current token (the writer may be replacing it). */
static bool token_reload(kb_httpc_t *c)
{
	char *t = NULL;
	c->token_read_ms = kb_now_ms();
	int rc = kb_kubeconfig_read_token(c->token_file, &t);
	if (rc < 0) {
		kb_warn("httpc", "re-reading token file %s: %s", c->token_file, strerror(-rc));
		return false;
	}
	bool changed = !c->token || strcmp(t, c->token) != 0;
	if (changed) {
		kb_info("httpc", "token file %s: new token", c->token_file);
		free(c->token);
		c->token = t;
		c->token_gen++;
	} else {
		free(t);
	}
	return changed;
}

const char *kb_httpc_token(kb_httpc_t *c)
{
	if (c->token_file && kb_now_ms() - c->token_read_ms >= TOKEN_REREAD_MS)
		token_reload(c);
	return c->token;
}

static bool add_header(struct curl_slist **h, const char *line)
{
	struct curl_slist *n = curl_slist_append(*h, line);
	if (n)
		*h = n;
	return n != NULL;
}

/* (Re)builds r's headers with the current token. 0 or -ENOMEM (r keeps
 * its previous headers). */
static int req_headers(kb_httpc_t *c, struct kb_httpc_req *r)
{
	char ct[300];
	snprintf(ct, sizeof(ct), "Content-Type: %s", r->ctype ? r->ctype : "application/json");
	size_t al = c->token ? strlen(c->token) + 32 : 0;
	char *auth = al ? malloc(al) : NULL;
	if (auth)
		snprintf(auth, al, "Authorization: Bearer %s", c->token);
	struct curl_slist *h = NULL;
	bool accept = false;
	for (const struct curl_slist *x = r->extra; x; x = x->next)
		accept |= strncasecmp(x->data, "accept:", 7) == 0;
	bool ok = (!al || auth) && (accept || add_header(&h, "Accept: application/json")) &&
		  (!r->body || add_header(&h, ct)) && (!auth || add_header(&h, auth)) &&
		  add_header(&h, "Expect:");
	for (const struct curl_slist *x = r->extra; ok && x; x = x->next)
		ok = add_header(&h, x->data);
	free(auth);
	if (!ok) {
		curl_slist_free_all(h);
		return -ENOMEM;
	}
	curl_slist_free_all(r->headers);
	r->headers = h;
	r->token_gen = c->token_gen;
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, h);
	return 0;
}

/* Puts r on the wire. 0, or -ENOMEM with r untouched (not started). */
static int start(kb_httpc_t *c, struct kb_httpc_req *r)
{
	if (!r->easy && req_setup(c, r) < 0) {
		easy_release(c, r->easy);
		r->easy = NULL;
		return -ENOMEM;
	}
	kb_httpc_token(c); /* re-read when stale */
	if (req_headers(c, r) < 0)
		kb_err("httpc", "out of memory building headers for %s", r->url);
	r->started = true;
	list_push(&c->active, r);
	c->nactive++;
	c->ninflight += !r->stream;
	if (curl_multi_add_handle(c->multi, r->easy) != CURLM_OK)
		kb_err("httpc", "curl_multi_add_handle failed for %s", r->url);
	return 0;
}

static void refill(kb_httpc_t *c)
{
	uint64_t now = kb_now_ms();
	double add = (double)(now - c->last_fill_ms) * c->qps / 1000.0;
	c->last_fill_ms = now;
	c->tokens = fmin((double)c->burst, c->tokens + add);
}

static void on_limit(uv_timer_t *t)
{
	pump(t->data);
}

static struct kb_httpc_req *queue_pop(kb_httpc_t *c)
{
	struct kb_httpc_req *r = c->queue;
	if (!r)
		return NULL;
	c->queue = r->next;
	if (c->queue)
		c->queue->prev = NULL;
	else
		c->queue_tail = NULL;
	r->next = r->prev = NULL;
	c->nqueued--;
	return r;
}

static bool may_start(const kb_httpc_t *c, bool stream)
{
	return stream || c->ninflight < MAX_INFLIGHT;
}

/* Starts queued requests while tokens last and fewer than MAX_INFLIGHT are
 * on the wire; arms the limit timer when tokens are missing (a finishing
 * request pumps again). */
static void pump(kb_httpc_t *c)
{
	if (c->closing || c->in_action)
		return; /* check_multi_info pumps once curl has returned */
	if (c->qps > 0)
		refill(c);
	while (c->queue && (c->qps <= 0 || c->tokens >= 1.0) && may_start(c, c->queue->stream)) {
		struct kb_httpc_req *r = queue_pop(c);
		if (start(c, r) < 0) { /* out of memory: back to the head, retried soon */
			r->next = c->queue;
			if (c->queue)
				c->queue->prev = r;
			else
				c->queue_tail = r;
			c->queue = r;
			c->nqueued++;
			uv_timer_start(&c->limit_timer, on_limit, 100, 0);
			return;
		}
		if (c->qps > 0)
			c->tokens -= 1.0;
	}
	if (c->queue && c->qps > 0 && c->tokens < 1.0 &&
	    !uv_is_active((uv_handle_t *)&c->limit_timer)) {
		uint64_t wait = (uint64_t)ceil((1.0 - c->tokens) * 1000.0 / c->qps);
		uv_timer_start(&c->limit_timer, on_limit, wait ? wait : 1, 0);
	}
}

static void queue_push(kb_httpc_t *c, struct kb_httpc_req *r)
{
	r->next = NULL;
	r->prev = c->queue_tail;
	if (c->queue_tail)
		c->queue_tail->next = r;
	else
		c->queue = r;
	c->queue_tail = r;
	c->nqueued++;
}

kb_httpc_req_t *kb_httpc_request(kb_httpc_t *c, const struct kb_httpc_call *call)
{
	KB_CHECK(call->on_done && call->method && call->path && !c->closing, NULL);
	struct kb_httpc_req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->c = c;
	r->stream = call->stream;
	r->on_data = call->on_data;
	r->on_done = call->on_done;
	r->arg = call->arg;
	r->max_body = call->max_body;
	r->method = strdup(call->method);
	size_t ul = strlen(c->server) + strlen(call->path) + 1;
	r->url = malloc(ul);
	if (r->url)
		snprintf(r->url, ul, "%s%s", c->server, call->path);
	if (call->body) {
		r->body = malloc(call->body_len + 1);
		if (r->body) {
			memcpy(r->body, call->body, call->body_len);
			r->body[call->body_len] = '\0';
		}
		r->body_len = call->body_len;
	}
	if (call->content_type)
		r->ctype = strdup(call->content_type);
	if (call->connect_to)
		r->connect_to = curl_slist_append(NULL, call->connect_to);
	r->on_head = call->on_head;
	bool extra_ok = true;
	for (const char *const *x = call->headers; x && *x && extra_ok; x++)
		extra_ok = add_header(&r->extra, *x);
	if (!extra_ok || !r->method || !r->url || (call->body && !r->body) ||
	    (call->content_type && !r->ctype) || (call->connect_to && !r->connect_to)) {
		req_free(r);
		return NULL;
	}
	if (!c->in_action &&
	    (call->no_limit || (c->qps <= 0 && !c->queue && may_start(c, call->stream)))) {
		if (start(c, r) < 0) {
			req_free(r);
			return NULL;
		}
		return r;
	}
	queue_push(c, r);
	pump(c);
	return r;
}

void kb_httpc_pause(kb_httpc_req_t *r, bool pause)
{
	if (!r || !r->started || r->cancelled || !r->easy)
		return;
	curl_easy_pause(r->easy, pause ? CURLPAUSE_RECV : CURLPAUSE_CONT);
}

void kb_httpc_cancel(kb_httpc_req_t *r)
{
	kb_httpc_t *c = r->c;
	if (r->cancelled)
		return;
	r->cancelled = true;
	if (!r->started) {
		if (r->prev)
			r->prev->next = r->next;
		else
			c->queue = r->next;
		if (r->next)
			r->next->prev = r->prev;
		else
			c->queue_tail = r->prev;
		c->nqueued--;
		req_free(r);
		return;
	}
	if (r->in_cb || c->in_action)
		return; /* on_write returns 0, or the sweep in check_multi_info frees it */
	curl_multi_remove_handle(c->multi, r->easy);
	list_unlink(&c->active, r);
	c->nactive--;
	c->ninflight -= !r->stream;
	req_free(r);
}

/* ---- client ---------------------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

void kb_httpc_set_limit(kb_httpc_t *c, double qps, unsigned burst)
{
	c->qps = qps > 0 ? qps : 0;
	c->burst = burst ? burst : (unsigned)fmax(1.0, qps);
	c->tokens = c->burst;
	c->last_fill_ms = kb_now_ms();
}

void kb_httpc_opts_from_creds(struct kb_httpc_opts *o, const struct kb_kubeconfig_creds *cr)
{
	o->server = cr->server;
	o->ca_pem = cr->ca_pem;
	o->ca_file = cr->ca_file;
	o->cert_pem = cr->cert_pem;
	o->key_pem = cr->key_pem;
	o->token = cr->token;
	o->token_file = cr->token_file; /* rotates: re-read */
	o->insecure = cr->insecure;
}

int kb_httpc_new(uv_loop_t *loop, const struct kb_httpc_opts *o, kb_httpc_t **out)
{
	if (!o->server || !kb_str_has_prefix(o->server, "http"))
		return -EINVAL;
	int rc = kb_curl_load(); /* loaded on first use: lib/curl_dl.h */
	if (rc < 0)
		return rc;
	kb_httpc_t *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->server = strdup(o->server);
	size_t sl = strlen(c->server);
	while (sl > 0 && c->server[sl - 1] == '/')
		c->server[--sl] = '\0';
	c->token = dup_or_null(o->token);
	c->token_file = dup_or_null(o->token_file);
	c->token_read_ms = kb_now_ms();
	c->ca_pem = dup_or_null(o->ca_pem);
	c->ca_file = dup_or_null(o->ca_file);
	c->cert_pem = dup_or_null(o->cert_pem);
	c->key_pem = dup_or_null(o->key_pem);
	c->insecure = o->insecure;
	creds_build(c);
	c->timeout_ms = o->timeout_ms ? o->timeout_ms : 30000;
	c->user_agent = dup_or_null(o->user_agent);
	c->allow = o->allow;
	c->allow_arg = o->allow_arg;
	kb_httpc_set_limit(c, o->qps, o->burst);
	c->multi = curl_multi_init();
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)MAX_HOST_CONNS);
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)MAX_HOST_CONNS);
	c->share = curl_share_init();
	if (c->share)
		curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	uv_timer_init(loop, &c->timer);
	uv_timer_init(loop, &c->limit_timer);
	c->timer.data = c->limit_timer.data = c;
	c->open_handles = 2;
	*out = c;
	return 0;
}

static void on_timer_closed(uv_handle_t *h)
{
	kb_httpc_t *c = h->data;
	if (--c->open_handles == 0)
		free(c);
}

void kb_httpc_close(kb_httpc_t *c)
{
	if (!c || c->closing)
		return;
	if (c->in_done) {
		c->close_pending = true;
		return;
	}
	kb_httpc_tunnels_close(c); /* their easy handles use c's share and PEM blobs */
	while (c->queue)
		kb_httpc_cancel(c->queue);
	while (c->active) {
		struct kb_httpc_req *r = c->active;
		curl_multi_remove_handle(c->multi, r->easy);
		list_unlink(&c->active, r);
		req_free(r);
	}
	c->closing = true;
	curl_multi_cleanup(c->multi);
	while (c->nidle)
		curl_easy_cleanup(c->idle[--c->nidle]);
	if (c->share)
		curl_share_cleanup(c->share);
	creds_free(c->creds); /* each TLS context holds its own references */
	while (c->socks)
		sock_close(c, c->socks);
	free(c->server);
	free(c->user_agent);
	free(c->token);
	free(c->token_file);
	free(c->ca_pem);
	free(c->ca_file);
	free(c->cert_pem);
	free(c->key_pem);
	uv_close((uv_handle_t *)&c->timer, on_timer_closed);
	uv_close((uv_handle_t *)&c->limit_timer, on_timer_closed);
}

size_t kb_httpc_active(const kb_httpc_t *c)
{
	return c->nactive;
}

size_t kb_httpc_queued(const kb_httpc_t *c)
{
	return c->nqueued;
}

uint64_t kb_httpc_failed(const kb_httpc_t *c)
{
	return c->nfailed;
}
