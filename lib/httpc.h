/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP client on libuv: libcurl's multi interface driven by the loop
 * (curl_multi_socket_action from uv_poll_t and one uv_timer_t), so many
 * requests and long watches share one thread and reuse kept-alive TLS
 * connections (curl's connection cache lives in the multi handle).
 *
 * TLS: the peer is verified by default (CA from PEM data or a file, else the
 * system store); `insecure` turns verification off, as a kubeconfig's
 * insecure-skip-tls-verify does. Client credentials: certificate + key PEM
 * (data) or a bearer token. A token that rotates (a kubeconfig's tokenFile, the
 * in-cluster projected token) is re-read from its file, as client-go does:
 * when a request starts and the last read is a minute old, and when the
 * host answers 401 (the request is then retried once with the new token).
 *
 * Rate limit: a token bucket (qps, burst) gates the START of requests; a
 * request waits in a FIFO queue for a token. A watch costs one token when it
 * starts, not per event. qps 0 disables the limit. Independently of it, at
 * most 16 non-streaming requests are on the wire at once (the rest wait in
 * the same queue), so a burst does not open dozens of TLS connections.
 * Finished curl handles are reset and reused, and TLS sessions are shared by
 * all connections (a curl share handle): a connection opened under a burst
 * resumes the session instead of a full handshake with the client key.
 *
 * Address filter: an `allow` hook sees every address a connection is about
 * to be opened to, after name resolution (so the address checked is the
 * one connected: a name that resolves elsewhere on a second lookup gains
 * nothing), for requests and tunnels alike; a refused address is never
 * connected to, and a request whose every address was refused ends with
 * -EACCES. With a hook, proxies from the environment (http_proxy, ...) are
 * not used: a proxy would connect on our behalf to an address never seen.
 *
 * DESIGN: a request lives from kb_httpc_request() until its done callback
 * has returned, or until kb_httpc_cancel() (no callback then). The client
 * lives until kb_httpc_close(), which cancels every request without calling
 * back and frees itself once its libuv handles have closed; called from a
 * request's done callback, it closes once that callback has returned.
 *
 * Threading: loop thread only.
 */
#ifndef KB_HTTPC_H
#define KB_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct sockaddr;

typedef struct kb_httpc kb_httpc_t;
typedef struct kb_httpc_req kb_httpc_req_t;

struct kb_httpc_opts {
	const char *server;     /* "https://10.0.0.1:6443"; copied */
	const char *ca_pem;     /* CA bundle PEM data or NULL; copied */
	const char *ca_file;    /* CA bundle path or NULL; copied */
	const char *cert_pem;   /* client certificate PEM or NULL; copied */
	const char *key_pem;    /* client key PEM or NULL; copied */
	const char *token;      /* bearer token or NULL; copied */
	const char *token_file; /* file the token came from (re-read), or NULL; copied */
	bool insecure;          /* skip TLS verification (never the default) */
	double qps;             /* requests started per second; 0: unlimited */
	unsigned burst;         /* bucket size; 0: max(1, qps) */
	unsigned timeout_ms;    /* whole-request timeout for non-streaming calls; 0: 30000 */
	const char *user_agent; /* NULL: "kubicle-syncer"; copied */
	/* Asked before each connection with the resolved address (AF_INET or
	 * AF_INET6, its port set; borrowed for the call): false refuses it.
	 * NULL: every address. Called on the loop thread, never after
	 * kb_httpc_close. */
	bool (*allow)(const struct sockaddr *addr, void *arg);
	void *allow_arg; /* borrowed: outlives the client */
};

/* Streaming body bytes (watch events, followed logs), in arrival order. The
 * data is borrowed for the call. Return false to abort the request (the
 * done callback follows with -ECANCELED). */
typedef bool (*kb_httpc_data_cb)(kb_httpc_req_t *req, const char *data, size_t len, void *arg);
/*
 * The end of a request. `err` is 0 when an HTTP answer was received (any
 * status, in `status`), else a negative errno (-ECONNREFUSED, -ETIMEDOUT,
 * -EPROTO for TLS failures, -ECANCELED, -EMSGSIZE past max_body, -EACCES
 * when the allow hook refused every address). `body`
 * is the whole body when no data callback was given (borrowed for the
 * call, NUL-terminated), else NULL.
 */
typedef void (*kb_httpc_done_cb)(kb_httpc_req_t *req, int err, long status, const char *body,
				 size_t len, void *arg);
/* The answer's head (a proxy passes it on before the body): its status and
 * Content-Type ("" when none; borrowed for the call). Return false to abort
 * the request (the done callback follows with -ECANCELED). */
typedef bool (*kb_httpc_head_cb)(kb_httpc_req_t *req, long status, const char *content_type,
				 void *arg);

struct kb_httpc_call {
	const char *method;       /* "GET", "POST", "PUT", "PATCH", "DELETE"; copied */
	const char *path;         /* "/api/v1/namespaces/x/pods?watch=1"; copied */
	const char *content_type; /* for the body; NULL: application/json; copied */
	const char *body;         /* copied; NULL: none */
	size_t body_len;
	bool stream;   /* no overall timeout (watch, log follow) */
	bool no_limit; /* bypass the rate limit (log passthrough) */
	/* connect elsewhere than the URL's host, which still names the peer
	 * for TLS: "HOST:PORT:ADDR:PORT" (curl's CONNECT_TO); NULL: none; copied */
	const char *connect_to;
	/* extra request header lines ("Name: value"), NULL-terminated, or NULL;
	 * an "Accept:" line replaces the default Accept; copied */
	const char *const *headers;
	/* called once the answer's head is in; with it, every body byte of
	 * any status goes to on_data (none is kept for on_done) */
	kb_httpc_head_cb on_head;
	size_t max_body;          /* a longer answer ends the request with -EMSGSIZE; 0: no limit */
	kb_httpc_data_cb on_data; /* NULL: buffer the body for on_done */
	kb_httpc_done_cb on_done; /* required */
	void *arg;
};

/* Fills the connection fields of *o (server, CA, client credentials, token
 * and token file, insecure) from kubeconfig credentials; pointers are
 * borrowed from cr (kb_httpc_new copies them). Other fields are left. */
struct kb_kubeconfig_creds;
void kb_httpc_opts_from_creds(struct kb_httpc_opts *o, const struct kb_kubeconfig_creds *cr);
/* Creates a client. 0 or -EINVAL (bad options) / -ENOMEM. */
int kb_httpc_new(uv_loop_t *loop, const struct kb_httpc_opts *opts, kb_httpc_t **out);
/* Cancels every request without calling back; frees the client later. */
void kb_httpc_close(kb_httpc_t *c);
/* Starts (or queues behind the rate limit) a request. Returns NULL on
 * ENOMEM; the done callback is then never called. */
kb_httpc_req_t *kb_httpc_request(kb_httpc_t *c, const struct kb_httpc_call *call);
/* Cancels a pending request; its done callback is not called. Safe from
 * inside its own data callback (do not touch req afterwards). */
void kb_httpc_cancel(kb_httpc_req_t *req);
/* Stops (true) or resumes reading a request's answer, for flow control
 * towards a slower consumer; callable from its data callback. A resume may
 * deliver buffered bytes to the data callback before it returns. */
void kb_httpc_pause(kb_httpc_req_t *req, bool pause);
/* Replaces the bearer token (copied; NULL: none). Requests started after
 * the call, including queued ones, send the new token. 0 or -ENOMEM. */
int kb_httpc_set_token(kb_httpc_t *c, const char *token);
/* The address of the connection req went on, or of the last one it tried,
 * as "ADDR:PORT" ("[ADDR]:PORT" for IPv6), "" when none was tried (the name
 * did not resolve). Borrowed: valid until req's done callback returns. */
const char *kb_httpc_req_peer(kb_httpc_req_t *req);
/* Sets the rate limit (qps 0: off). */
void kb_httpc_set_limit(kb_httpc_t *c, double qps, unsigned burst);
/* Requests in flight and waiting for a token. */
size_t kb_httpc_active(const kb_httpc_t *c);
size_t kb_httpc_queued(const kb_httpc_t *c);
/* Requests that failed so far: no answer (cancels aside), 429 or 5xx. */
uint64_t kb_httpc_failed(const kb_httpc_t *c);

/*
 * ---- tunnels: upgraded connections (pods/exec, attach, portforward) ----
 *
 * A tunnel opens a connection of its own to the client's server (the
 * client's TLS settings and credentials; never one of the kept-alive
 * connections of requests, and not subject to the rate limit), sends one
 * request head without a body, and reads the answer's head. When the
 * answer is 101 Switching Protocols the connection becomes a byte pipe in
 * both directions, as kube-apiserver's upgrade-aware proxy makes it; any
 * other answer is reported with its body and the tunnel ends.
 */
typedef struct kb_httpc_tunnel kb_httpc_tunnel_t;

struct kb_httpc_tunnel_cbs {
	/*
	 * The answer's head: its status and its header lines exactly as
	 * received ("Name: value\r\n" each, without the status line and the
	 * blank line; borrowed for the call). With 101 the pipe is open when
	 * the call returns and on_data brings the peer's bytes. With any other
	 * status on_data brings the body (at most 64 KiB of it, delimited by
	 * Content-Length, chunked encoding or the end of the connection) and
	 * on_close follows with err 0.
	 */
	void (*on_head)(kb_httpc_tunnel_t *t, int status, const char *headers, size_t len,
			void *arg);
	/* Bytes from the peer, in order; borrowed for the call. */
	void (*on_data)(kb_httpc_tunnel_t *t, const char *data, size_t len, void *arg);
	/*
	 * The end, called once unless kb_httpc_tunnel_close came first: err 0
	 * when the peer closed (after a head), else a negative errno
	 * (-ECONNREFUSED, -ETIMEDOUT: no head within 30 s, -EPROTO: TLS or a
	 * malformed answer, -ECONNRESET). t is freed when it returns.
	 */
	void (*on_close)(kb_httpc_tunnel_t *t, int err, void *arg);
	void *arg;
};

/*
 * Starts a tunnel: `method` and `path` (with its query) and `headers`
 * ("Name: value\r\n" lines, e.g. Connection, Upgrade, Sec-WebSocket-*; NULL:
 * none). Host, User-Agent and the bearer token, if the client has one, are
 * added. Returns NULL on ENOMEM (no callback then). The callbacks run on
 * the loop thread, never from inside this call.
 */
kb_httpc_tunnel_t *kb_httpc_tunnel(kb_httpc_t *c, const char *method, const char *path,
				   const char *headers, const struct kb_httpc_tunnel_cbs *cbs);
/* The same, connecting as curl's CURLOPT_CONNECT_TO says ("HOST:PORT:ADDR:PORT",
 * as kb_httpc_call.connect_to; copied; NULL: the server's own address): the
 * TLS name and Host stay the server's (an APIService's backend: its
 * Service's name, the endpoint's address). */
kb_httpc_tunnel_t *kb_httpc_tunnel_to(kb_httpc_t *c, const char *method, const char *path,
				      const char *headers, const char *connect_to,
				      const struct kb_httpc_tunnel_cbs *cbs);
/* Sends bytes to the peer once the pipe is open (copied; bytes written
 * before on_head wait for it). 0, -ENOMEM, or -EPIPE when the tunnel is
 * ending. */
int kb_httpc_tunnel_write(kb_httpc_tunnel_t *t, const char *data, size_t len);
/* Bytes written but not yet taken by the socket. */
size_t kb_httpc_tunnel_pending(const kb_httpc_tunnel_t *t);
/* Stops (true) or resumes reading from the peer, for flow control. */
void kb_httpc_tunnel_pause(kb_httpc_tunnel_t *t, bool pause);
/* Ends the tunnel: what is pending is still sent (for at most 5 s), then
 * the connection closes. No callback follows; t must not be used. */
void kb_httpc_tunnel_close(kb_httpc_tunnel_t *t);

#endif
