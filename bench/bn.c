/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared pieces of the benchmark clients: clocks, statistics, buffers, TLS
 * client connections on memory BIOs with kernel receive timestamps, and
 * HTTP/1.1 response parsing. Contracts are in bench/bn.h.
 */
#include "bench/bn.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>

#define BN_READ_CHUNK 65536

/* ---- clocks and statistics ---- */

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bn_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

int64_t bn_real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void bn_sleep_us(long us)
{
	struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bn_quantile(double *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	size_t rank = (size_t)(p * (double)n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}

int bn_smaps_rollup(int pid, long *pss_kib, long *private_dirty_kib)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	*pss_kib = *private_dirty_kib = -1;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "Pss: %ld kB", pss_kib);
		sscanf(line, "Private_Dirty: %ld kB", private_dirty_kib);
	}
	fclose(f);
	return *pss_kib < 0 ? -EPROTO : 0;
}

/* ---- growable byte buffer ---- */

void bn_buf_append(struct bn_buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		b->data = realloc(b->data, cap);
		if (!b->data) {
			perror("realloc");
			exit(1);
		}
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void bn_buf_consume(struct bn_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
	} else {
		memmove(b->data, b->data + n, b->len - n);
		b->len -= n;
	}
	if (b->data)
		b->data[b->len] = '\0';
}

void bn_buf_free(struct bn_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

int bn_buf_read_file(struct bn_buf *b, const char *path)
{
	char tmp[8192];
	size_t n;
	FILE *f = fopen(path, "rb");
	if (!f)
		return -errno;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		bn_buf_append(b, tmp, n);
	int err = ferror(f) ? -EIO : 0;
	fclose(f);
	return err;
}

/* ---- TLS client connections ---- */

SSL_CTX *bn_ssl_ctx(const char *cert, const char *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		goto fail;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	if (cert && key &&
	    (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	     SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1))
		goto fail;
	return ctx;
fail:
	ERR_print_errors_fp(stderr);
	SSL_CTX_free(ctx);
	return NULL;
}

int bn_tcp_connect(const char *host, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Moves ciphertext produced by OpenSSL into c->out. */
static void drain_wbio(struct bn_conn *c)
{
	char tmp[16384];
	int n;
	while ((n = BIO_read(c->wbio, tmp, sizeof(tmp))) > 0)
		bn_buf_append(&c->out, tmp, (size_t)n);
}

int bn_conn_init(struct bn_conn *c, SSL_CTX *ctx, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->ssl = SSL_new(ctx);
	c->rbio = BIO_new(BIO_s_mem());
	c->wbio = BIO_new(BIO_s_mem());
	if (!c->ssl || !c->rbio || !c->wbio) {
		BIO_free(c->rbio);
		BIO_free(c->wbio);
		SSL_free(c->ssl);
		close(fd);
		c->fd = -1;
		c->ssl = NULL;
		return -ENOMEM;
	}
	BIO_set_mem_eof_return(c->rbio, -1);
	SSL_set_bio(c->ssl, c->rbio, c->wbio);
	SSL_set_connect_state(c->ssl);
	SSL_do_handshake(c->ssl);
	drain_wbio(c);
	int rc = bn_conn_flush(c);
	return rc < 0 && rc != -ENOTCONN ? rc : 0;
}

void bn_conn_close(struct bn_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	SSL_free(c->ssl);
	c->ssl = NULL;
	bn_buf_free(&c->in);
	bn_buf_free(&c->out);
}

int bn_conn_flush(struct bn_conn *c)
{
	size_t off = 0;
	while (off < c->out.len) {
		ssize_t n = send(c->fd, c->out.data + off, c->out.len - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == ENOTCONN)
				break;
			return -errno;
		}
		off += (size_t)n;
	}
	bn_buf_consume(&c->out, off);
	return c->out.len ? 1 : 0;
}

int bn_conn_send(struct bn_conn *c, const void *data, size_t len)
{
	if (!c->ready)
		return -ENOTCONN;
	if (len && SSL_write(c->ssl, data, (int)len) != (int)len)
		return -EIO;
	drain_wbio(c);
	int rc = bn_conn_flush(c);
	return rc < 0 ? rc : 0;
}

/* One recvmsg with its SO_TIMESTAMPNS control message. */
static ssize_t recv_stamped(struct bn_conn *c, char *buf, size_t len)
{
	union {
		char b[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b)};
	ssize_t n = recvmsg(c->fd, &msg, 0);
	if (n <= 0)
		return n;
	c->rx_ns = bn_real_ns(); /* when the kernel gives no timestamp */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
			c->rx_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		}
	}
	return n;
}

/* Runs the handshake and SSL_read over what rbio holds. */
static int pump_ssl(struct bn_conn *c)
{
	char tmp[16384];
	if (!c->ready) {
		int rc = SSL_do_handshake(c->ssl);
		if (rc != 1) {
			int e = SSL_get_error(c->ssl, rc);
			drain_wbio(c);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return 0;
			ERR_print_errors_fp(stderr);
			return -EPROTO;
		}
		c->ready = true;
	}
	for (;;) {
		int n = SSL_read(c->ssl, tmp, sizeof(tmp));
		if (n > 0) {
			bn_buf_append(&c->in, tmp, (size_t)n);
			continue;
		}
		int e = SSL_get_error(c->ssl, n);
		drain_wbio(c);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
			return 0;
		if (e == SSL_ERROR_ZERO_RETURN) {
			c->eof = true;
			return 0;
		}
		ERR_print_errors_fp(stderr);
		return -EPROTO;
	}
}

int bn_conn_read(struct bn_conn *c)
{
	static __thread char buf[BN_READ_CHUNK]; /* per thread: loadgen -t */
	size_t before = c->in.len;
	for (;;) {
		ssize_t n = recv_stamped(c, buf, sizeof(buf));
		if (n == 0) {
			c->eof = true;
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -errno;
		}
		BIO_write(c->rbio, buf, (int)n);
		int rc = pump_ssl(c);
		if (rc < 0)
			return rc;
	}
	int rc = bn_conn_flush(c);
	if (rc < 0)
		return rc;
	return c->eof && c->in.len == before ? -ECONNRESET : 0;
}

static int wait_fd(int fd, short events, int64_t deadline_ns)
{
	for (;;) {
		int64_t left = (deadline_ns - bn_mono_ns()) / 1000000;
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd p = {.fd = fd, .events = events};
		int n = poll(&p, 1, (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

int bn_conn_handshake(struct bn_conn *c, int timeout_ms)
{
	int64_t deadline = bn_mono_ns() + (int64_t)timeout_ms * 1000000;
	while (!c->ready) {
		short ev = POLLIN | (c->out.len ? POLLOUT : 0);
		int rc = wait_fd(c->fd, ev, deadline);
		if (rc == 0)
			rc = bn_conn_flush(c) < 0 ? -EIO : bn_conn_read(c);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- HTTP/1.1 responses ---- */

/* Header `name` (without colon) in the head [p, end) or NULL. */
static const char *find_header(const char *p, const char *end, const char *name, size_t *vlen)
{
	size_t nl = strlen(name);
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			return NULL;
		if ((size_t)(eol - p) > nl && p[nl] == ':' && strncasecmp(p, name, nl) == 0) {
			const char *v = p + nl + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			const char *ve = eol;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
				ve--;
			*vlen = (size_t)(ve - v);
			return v;
		}
		p = eol + 1;
	}
	return NULL;
}

/* Walks a chunked body from `p`; returns its encoded length, 0 if incomplete, -1 if bad. */
static long long chunked_len(const char *p, const char *end, struct bn_buf *body)
{
	const char *start = p;
	for (;;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			return 0;
		char *hex_end;
		unsigned long long sz = strtoull(p, &hex_end, 16);
		if (hex_end == p)
			return -1;
		p = eol + 1;
		if (sz == 0)
			break;
		if ((unsigned long long)(end - p) < sz + 2)
			return 0;
		if (body)
			bn_buf_append(body, p, sz);
		p += sz + 2;
	}
	for (;;) { /* trailers up to the empty line */
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			return 0;
		bool empty = eol == p || (eol == p + 1 && *p == '\r');
		p = eol + 1;
		if (empty)
			return p - start;
	}
}

static int parse_head(const char *buf, size_t len, struct bn_resp *r)
{
	const char *hend = memmem(buf, len, "\r\n\r\n", 4);
	if (!hend)
		return len > 65536 ? -EPROTO : 0;
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0)
		return -EPROTO;
	r->status = atoi(buf + 9);
	r->head_len = (size_t)(hend - buf) + 4;
	r->content_length = -1;
	size_t vl;
	const char *v = find_header(buf, hend + 2, "content-length", &vl);
	if (v)
		r->content_length = strtoll(v, NULL, 10);
	v = find_header(buf, hend + 2, "transfer-encoding", &vl);
	r->chunked = v && vl >= 7 && strncasecmp(v + vl - 7, "chunked", 7) == 0;
	return 1;
}

int bn_http_parse(const char *buf, size_t len, bool head_only, struct bn_resp *r)
{
	memset(r, 0, sizeof(*r));
	int rc = parse_head(buf, len, r);
	if (rc <= 0 || head_only)
		return rc;
	if (r->chunked) {
		long long n = chunked_len(buf + r->head_len, buf + len, NULL);
		if (n <= 0)
			return n < 0 ? -EPROTO : 0;
		r->total_len = r->head_len + (size_t)n;
		return 1;
	}
	long long cl = r->content_length < 0 ? 0 : r->content_length;
	if (r->status == 204 || r->status == 304 || r->status / 100 == 1)
		cl = 0;
	if (len - r->head_len < (unsigned long long)cl)
		return 0;
	r->total_len = r->head_len + (size_t)cl;
	return 1;
}

void bn_http_body(const char *buf, const struct bn_resp *r, struct bn_buf *body)
{
	if (r->chunked)
		chunked_len(buf + r->head_len, buf + r->total_len, body);
	else
		bn_buf_append(body, buf + r->head_len, r->total_len - r->head_len);
}

int bn_http_roundtrip(struct bn_conn *c, const char *req, size_t len, struct bn_resp *r,
		      int timeout_ms)
{
	int64_t deadline = bn_mono_ns() + (int64_t)timeout_ms * 1000000;
	int rc = bn_conn_send(c, req, len);
	while (rc >= 0) {
		rc = bn_http_parse(c->in.data ? c->in.data : "", c->in.len, false, r);
		if (rc != 0)
			break;
		short ev = POLLIN | (c->out.len ? POLLOUT : 0);
		rc = wait_fd(c->fd, ev, deadline);
		if (rc == 0)
			rc = bn_conn_flush(c) < 0 ? -EIO : bn_conn_read(c);
	}
	return rc < 0 ? rc : 0;
}

/* ---- chunked stream decoder ---- */

enum { DC_SIZE, DC_EXT, DC_SIZE_LF, DC_DATA, DC_DATA_CR, DC_DATA_LF, DC_DONE };

static int dechunk_byte(struct bn_dechunk *d, char ch)
{
	switch (d->state) {
	case DC_SIZE:
		if (isxdigit((unsigned char)ch)) {
			unsigned v = isdigit((unsigned char)ch)
					 ? (unsigned)(ch - '0')
					 : (unsigned)(tolower(ch) - 'a' + 10);
			d->remain = d->remain * 16 + v;
		} else if (ch == ';') {
			d->state = DC_EXT;
		} else if (ch == '\r') {
			d->state = DC_SIZE_LF;
		} else {
			return -EPROTO;
		}
		return 0;
	case DC_EXT:
		if (ch == '\r')
			d->state = DC_SIZE_LF;
		return 0;
	case DC_SIZE_LF:
		if (ch != '\n')
			return -EPROTO;
		d->state = d->remain ? DC_DATA : DC_DONE;
		return 0;
	case DC_DATA_CR: d->state = DC_DATA_LF; return ch == '\r' ? 0 : -EPROTO;
	case DC_DATA_LF:
		d->state = DC_SIZE;
		d->remain = 0;
		return ch == '\n' ? 0 : -EPROTO;
	default: return -EPROTO;
	}
}

bool bn_dechunk_done(const struct bn_dechunk *d)
{
	return d->state == DC_DONE;
}

long bn_dechunk(struct bn_dechunk *d, const char *in, size_t len, struct bn_buf *out)
{
	size_t i = 0;
	while (i < len && d->state != DC_DONE) {
		if (d->state == DC_DATA) {
			size_t n = len - i;
			if (n > d->remain)
				n = (size_t)d->remain;
			bn_buf_append(out, in + i, n);
			i += n;
			d->remain -= n;
			if (!d->remain)
				d->state = DC_DATA_CR;
			continue;
		}
		if (dechunk_byte(d, in[i++]) < 0)
			return -EPROTO;
	}
	return (long)i;
}
