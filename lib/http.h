/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP/1.1 server over TLS on libuv, parsing with llhttp.
 *
 * Layers: uv_tcp_t -> TLS (OpenSSL with memory BIOs) -> llhttp -> the
 * on_request callback given to kb_http_server_start(). One connection carries
 * one request at a time (no pipelining of responses: a pipelined request is
 * parsed only after the previous response finished). Keep-alive is the default.
 *
 * Limits (each answered as the comment says, then the connection is closed
 * unless stated otherwise):
 *   - request head (line + headers) over KB_HTTP_MAX_HEAD bytes: 431;
 *   - body over server opts.max_body bytes (default 3 MiB): 413 with a
 *     Kubernetes Status body (RequestEntityTooLarge);
 *   - malformed HTTP: 400 and close;
 *   - a client that sends no complete head within opts.head_timeout_ms
 *     (default 10 s), or no bytes for opts.idle_timeout_ms while idle between
 *     requests (default 120 s): closed without an answer;
 *   - TLS handshake not finished within head_timeout_ms: closed.
 *   - a stalled reader of a stream: what the socket does not take waits as
 *     plaintext in the stream's queue, shared bytes (kb_http_shared_t) by
 *     reference, and is sealed a record at a time as the socket drains;
 *     kb_http_stream_pending() tells how much waits, so that the caller (a
 *     watch) can give up. The bytes held for slow stream readers in the
 *     process (kb_http_stream_held()) have a budget (opts.stream_budget):
 *     past it, the streams blocked longest are closed (as kube-apiserver's
 *     cacher closes the watchers that cannot take an event in time).
 *
 * DESIGN: a connection lives as long as its uv_tcp_t handle; closing is
 * idempotent and memory is freed in the close callback. The request object
 * handed to on_request stays valid until the response is complete
 * (kb_http_respond() or kb_http_stream_end()) or, if the client goes away
 * first, until the abort callback (kb_http_req_on_abort) has returned.
 *
 * Threading: everything here runs on the loop thread that started the server.
 */
#ifndef KB_HTTP_H
#define KB_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct x509_st X509;

#define KB_HTTP_MAX_HEAD    (64 * 1024)
#define KB_HTTP_MAX_HEADERS 100

typedef struct kb_http_server kb_http_server_t;
typedef struct kb_http_req kb_http_req_t;

struct kb_http_header {
	char *name; /* lower-cased */
	char *value;
};

/* A request. Fields are read-only for handlers; owned by the connection. */
struct kb_http_req {
	uint64_t id;        /* unique per server, for logs */
	const char *method; /* "GET", "POST", ... */
	char *path;         /* raw path, without the query */
	char *query;        /* raw query after '?', "" when none */
	char *body;         /* NUL-terminated body, "" when none */
	size_t body_len;
	struct kb_http_header *headers;
	size_t nheaders;
	char peer[64];   /* "ip:port" of the client */
	X509 *peer_cert; /* verified client certificate or NULL; borrowed */
	void *data;      /* free for the handler */
	/* private */
	void *conn_;
};

typedef void (*kb_http_request_cb)(kb_http_req_t *req, void *arg);
typedef void (*kb_http_abort_cb)(kb_http_req_t *req, void *arg);

struct kb_http_server_opts {
	size_t max_body;          /* 0: 3 MiB */
	unsigned head_timeout_ms; /* 0: 10000 */
	unsigned idle_timeout_ms; /* 0: 120000 */
	unsigned max_conns;       /* 0: 20000; further connections are closed at once */
	size_t stream_budget;     /* 0: 64 MiB; see kb_http_stream_held() */
};

/*
 * Listens on `addr` ("127.0.0.1:6443", "[::1]:0", "0.0.0.0:443"). `ctx` is
 * borrowed and must outlive the server. `*port_out` (may be NULL) receives
 * the bound port (useful with port 0). Returns 0 or a negative errno.
 */
int kb_http_server_start(uv_loop_t *loop, const char *addr, SSL_CTX *ctx,
			 const struct kb_http_server_opts *opts, kb_http_request_cb on_request,
			 void *arg, kb_http_server_t **out, int *port_out);

/* Stops listening and closes every connection (aborting their requests);
 * frees the server once all handles have closed. */
void kb_http_server_stop(kb_http_server_t *srv);

/* Number of open connections. */
size_t kb_http_server_conns(const kb_http_server_t *srv);

/* Case-insensitive header lookup; returns a borrowed value or NULL. */
const char *kb_http_req_header(const kb_http_req_t *req, const char *name);
/* True when a header `name` (any of its lines) lists `token` in its
 * comma-separated values, case-insensitively. */
bool kb_http_req_offers(const kb_http_req_t *req, const char *name, const char *token);

/*
 * Sends a complete response with Content-Length. `extra_headers` is NULL or
 * a block of "Name: value\r\n" lines. `body` is copied (a large one once, and
 * sent from the connection's queue a record at a time as the socket
 * drains, rather than sealed whole). After this call the
 * request must not be used. Returns 0 or a negative errno (the request is
 * finished either way).
 */
int kb_http_respond(kb_http_req_t *req, int status, const char *content_type,
		    const char *extra_headers, const char *body, size_t len);

/*
 * Marks the response about to start as a long stream (a watch). On a TLS 1.3
 * connection with an AEAD suite, kb_http_stream_start() then answers with
 * "Connection: close" and hands the connection to a record writer
 * (lib/tls13.h): the OpenSSL state (~17 KiB) and the request's headers are
 * freed; method, path and query stay readable. Bytes from the client after
 * that end the stream (abort callback); the connection closes when the
 * stream ends. Elsewhere the stream works as any other. Call before
 * kb_http_stream_start().
 */
void kb_http_stream_long(kb_http_req_t *req);

/* Starts a chunked response (watch, log follow). */
int kb_http_stream_start(kb_http_req_t *req, int status, const char *content_type,
			 const char *extra_headers);
/* Sends one chunk (copied). len 0 is ignored. */
int kb_http_stream_write(kb_http_req_t *req, const char *data, size_t len);
/* Sends the last chunk; the request must not be used afterwards. What the
 * stream still queues for a slow reader goes first. */
int kb_http_stream_end(kb_http_req_t *req);
/* Bytes written by the stream but not yet taken by the socket. */
size_t kb_http_stream_pending(const kb_http_req_t *req);
/* Ends the stream by closing the connection, dropping what it still queues
 * (a reader too slow to be given an orderly end); the request must not be
 * used afterwards. 0 or a negative errno. */
int kb_http_stream_cut(kb_http_req_t *req);

/*
 * Bytes shared by many streams (one watch event sent to every watcher):
 * reference-counted, immutable once sent. A stream whose reader is slow
 * keeps a reference to them rather than a copy, so that an event queued
 * for a thousand stalled watchers is held once. Loop thread only.
 */
typedef struct kb_http_shared {
	unsigned refs;                  /* private */
	unsigned queued;                /* private: stream queue entries of held_by's holding it */
	struct kb_http_server *held_by; /* private: the server counting it held */
	size_t len;
	char data[];
} kb_http_shared_t;
/* A buffer of len bytes (a copy of data, or uninitialised when data is
 * NULL, for the caller to fill before sending it), with one reference for
 * the caller. NULL when out of memory. */
kb_http_shared_t *kb_http_shared_new(const char *data, size_t len);
/* Takes one more reference; returns s. */
kb_http_shared_t *kb_http_shared_ref(kb_http_shared_t *s);
/* Drops one reference (s may be NULL); the last one frees it. */
void kb_http_shared_unref(kb_http_shared_t *s);
/* Sends s as one chunk of the stream; s is borrowed (the stream takes its
 * own reference while the bytes wait). 0 or a negative errno: the
 * connection is closing (-ECONNRESET also when the stream budget closed it). */
int kb_http_stream_send(kb_http_req_t *req, kb_http_shared_t *s);
/*
 * Bytes srv holds for slow stream readers: the shared buffers in its
 * stream queues (each counted once, however many of its streams wait for
 * it; again by another server whose streams queue it too) and the
 * ciphertext sealed for its streams but not yet taken by their sockets.
 * A closed connection's bytes leave the count when it is closed, not when
 * libuv later gives back its writes. Loop thread only.
 */
size_t kb_http_stream_held(const kb_http_server_t *srv);
/* Streams srv closed because their readers fell behind (the budget). */
uint64_t kb_http_streams_cut(const kb_http_server_t *srv);

/* A piece of memory that kb_http_stream_write() on a request touches. */
struct kb_http_hot {
	const void *p;
	size_t len;
};
/*
 * Fills `out` (room for `max`) with the memory a stream write on req
 * touches first, for prefetching ahead of a fan-out to many streams; valid
 * until the next call on req that changes its connection (stream start,
 * end). Returns how many it filled.
 */
size_t kb_http_stream_hot(const kb_http_req_t *req, struct kb_http_hot *out, size_t max);

/* Called if the connection dies before the response is complete. After the
 * callback returns the request is freed. */
void kb_http_req_on_abort(kb_http_req_t *req, kb_http_abort_cb cb, void *arg);

/* Called once when the request ends, however it ends (its response
 * complete, or the connection gone: after the abort callback), with the
 * status code of the response it got (0 when none was started). For
 * bookkeeping such as metrics: the request must not be used in it. cb
 * NULL unsets it. */
typedef void (*kb_http_done_cb)(int status, void *arg);
void kb_http_req_on_done(kb_http_req_t *req, kb_http_done_cb cb, void *arg);

/*
 * Upgraded connections (101 Switching Protocols: WebSocket, SPDY), for a
 * request that asked for one (Connection: Upgrade). kb_http_upgrade()
 * answers 101 with `extra_headers` ("Name: value\r\n" lines: Upgrade,
 * Connection, Sec-WebSocket-Accept, ...) and turns the connection into a
 * byte pipe: what the client sends, decrypted, goes to on_data (from the
 * loop, never inside a call made here; bytes that came right after the
 * request head first), kb_http_raw_write() sends bytes, and
 * kb_http_raw_end() closes the connection once its writes are out, after
 * which the request must not be used. A client that goes away (or closes
 * its TLS session) ends it through the abort callback, as for any request.
 * No timeout applies to a pipe; kb_http_stream_pending() tells what is
 * queued, kb_http_raw_pause() stops and resumes on_data (flow control).
 * Any other answer to an upgrade request closes the connection after it.
 */
typedef void (*kb_http_raw_cb)(kb_http_req_t *req, const char *data, size_t len, void *arg);
int kb_http_upgrade(kb_http_req_t *req, const char *extra_headers, kb_http_raw_cb on_data,
		    void *arg);
int kb_http_raw_write(kb_http_req_t *req, const char *data, size_t len);
void kb_http_raw_pause(kb_http_req_t *req, bool pause);
int kb_http_raw_end(kb_http_req_t *req);
/* True when the request asked to switch protocols (Connection: Upgrade). */
bool kb_http_req_upgrade(const kb_http_req_t *req);

/* Status line text ("Not Found") for a code. */
const char *kb_http_reason(int status);

/* Percent-decodes `s` in place ('+' stays '+' unless plus_is_space).
 * Returns 0 or -EINVAL on a bad escape or an encoded NUL. */
int kb_http_unescape(char *s, bool plus_is_space);

/* A boolean query parameter as kube-apiserver reads one: false only for
 * "0" or "false" (any case), anything else true, an empty value too. */
bool kb_http_query_bool(const char *v);

/* Iterates "a=1&b=2" query strings: fills *key and *val (decoded, pointing
 * into `*cursor`'s buffer, which is modified) and advances; returns false at
 * the end. */
bool kb_http_query_next(char **cursor, char **key, char **val);

/*
 * Testing entry for the libFuzzer target tests/fuzz/fuzz_http_head.c: runs
 * `data` (borrowed) through llhttp with the server's own settings and
 * callbacks (head and header-count limits, body collection with the default
 * 3 MiB limit, pipelined requests one after the other), on a connection that
 * has no socket: anything that would be written (an Expect: 100-continue
 * answer) fails as if the peer had gone. Returns the number of complete
 * requests parsed (>= 0), -EINVAL on a parse error (answered 400 by the
 * server), -E2BIG on a head or body limit (431/413), -ENOMEM. Not for
 * product code.
 */
int kb_http_parse_head_for_fuzz(const char *data, size_t len);

#endif
