/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared pieces of the benchmark clients (prefix bn_): clocks, a TLS client
 * connection over a non-blocking socket with memory BIOs (so every read goes
 * through recvmsg and carries the kernel's receive timestamp), an HTTP/1.1
 * response parser and an incremental chunked-body decoder.
 *
 * These are benchmark tools, not product code: they are single-threaded,
 * exit on allocation failure and verify no server certificate (both the
 * server under test and the reference get the same treatment).
 */
#ifndef KUBICLE_BENCH_BN_H
#define KUBICLE_BENCH_BN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

/* ---- clocks and statistics ---- */

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t bn_mono_ns(void);
/* CLOCK_REALTIME in nanoseconds (the clock of SO_TIMESTAMPNS). */
int64_t bn_real_ns(void);
/* Sleeps for `us` microseconds. */
void bn_sleep_us(long us);
/* Sorts `v` in place and returns its p-quantile (0 <= p <= 1, nearest rank). */
double bn_quantile(double *v, size_t n, double p);
/* Pss and Private_Dirty of process `pid` in KiB from /proc/PID/smaps_rollup. */
int bn_smaps_rollup(int pid, long *pss_kib, long *private_dirty_kib);

/* ---- growable byte buffer ---- */

struct bn_buf {
	char *data; /* owned; always NUL-terminated when non-NULL */
	size_t len, cap;
};

void bn_buf_append(struct bn_buf *b, const void *p, size_t n);
/* Drops the first `n` bytes. */
void bn_buf_consume(struct bn_buf *b, size_t n);
void bn_buf_free(struct bn_buf *b);
/* Reads a whole file into `b` (appended). Returns 0 or -errno. */
int bn_buf_read_file(struct bn_buf *b, const char *path);

/* ---- TLS client connections ---- */

/*
 * A client SSL_CTX (TLS 1.2+), presenting `cert`/`key` (PEM files) when both
 * are non-NULL. Returns NULL on error (printed). Caller frees with SSL_CTX_free.
 */
SSL_CTX *bn_ssl_ctx(const char *cert, const char *key);

/* A non-blocking TCP socket connecting to host:port (IPv4 literal), TCP_NODELAY,
 * SO_TIMESTAMPNS on. Returns the fd or -errno; the connect may still be in progress. */
int bn_tcp_connect(const char *host, int port);

struct bn_conn {
	int fd;            /* owned; -1 when closed */
	SSL *ssl;          /* owned */
	BIO *rbio, *wbio;  /* memory BIOs, owned by ssl */
	bool ready;        /* handshake finished */
	bool eof;          /* peer closed */
	struct bn_buf in;  /* decrypted bytes not yet consumed by the caller */
	struct bn_buf out; /* ciphertext not yet written to fd */
	int64_t rx_ns;     /* kernel receive time (CLOCK_REALTIME) of the last read */
};

/* Takes ownership of `fd`, starts the handshake. Returns 0 or -errno; either way
 * the caller ends with bn_conn_close. */
int bn_conn_init(struct bn_conn *c, SSL_CTX *ctx, int fd);
void bn_conn_close(struct bn_conn *c);
/* Encrypts `len` bytes (handshake must be finished) and tries to write them.
 * Returns 0 or -errno. */
int bn_conn_send(struct bn_conn *c, const void *data, size_t len);
/* Writes pending ciphertext. Returns 0 (all written), 1 (more pending) or -errno. */
int bn_conn_flush(struct bn_conn *c);
/* Reads everything the socket holds, advancing the handshake and appending
 * plaintext to c->in. Returns 0, or -errno (-ECONNRESET on EOF with nothing new). */
int bn_conn_read(struct bn_conn *c);
/* Blocks (poll) until the handshake is done. Returns 0 or -errno (-ETIMEDOUT). */
int bn_conn_handshake(struct bn_conn *c, int timeout_ms);

/* ---- HTTP/1.1 responses ---- */

struct bn_resp {
	int status;
	size_t head_len; /* bytes up to and including the blank line */
	bool chunked;
	long long content_length; /* -1 when absent */
	size_t total_len;         /* whole message, when complete */
};

/*
 * Parses the response at the start of buf. Returns 1 when the head is
 * complete and, unless `head_only`, the whole body too (r->total_len set);
 * 0 when more bytes are needed; -EPROTO on malformed input.
 */
int bn_http_parse(const char *buf, size_t len, bool head_only, struct bn_resp *r);

/* Decodes the body of a complete response into `body` (appended). */
void bn_http_body(const char *buf, const struct bn_resp *r, struct bn_buf *body);

/*
 * Sends `req` on a ready connection and blocks until the full response is
 * in; the response is then at the start of c->in (caller consumes
 * r->total_len bytes). Returns 0 or -errno.
 */
int bn_http_roundtrip(struct bn_conn *c, const char *req, size_t len, struct bn_resp *r,
		      int timeout_ms);

/* Incremental decoder of a chunked body (a watch stream). */
struct bn_dechunk {
	int state;
	unsigned long long remain;
};

/*
 * Consumes up to `len` bytes of chunked encoding and appends the payload to
 * `out`. Returns the bytes consumed (all of them unless the body ended) or
 * -EPROTO.
 */
long bn_dechunk(struct bn_dechunk *d, const char *in, size_t len, struct bn_buf *out);
/* The last (empty) chunk has been consumed. */
bool bn_dechunk_done(const struct bn_dechunk *d);

#endif
