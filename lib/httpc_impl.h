/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of the HTTP client shared by its two files: lib/httpc.c
 * (requests on the client's curl multi handle) and lib/httpc_tunnel.c
 * (upgraded connections, each on a curl multi handle of its own). Not for
 * use outside lib/httpc*.c.
 *
 * Threading: loop thread only, as the public API.
 */
#ifndef KB_HTTPC_IMPL_H
#define KB_HTTPC_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/curl_dl.h"
#include "lib/httpc.h"

/* Finished easy handles kept for the next requests: curl_easy_init and
 * curl_easy_cleanup cost a few allocations of 16-64 KiB buffers each, and
 * freeing those made glibc consolidate its heap once per request. */
#define EASY_POOL 16

struct kb_httpc {
	uv_loop_t *loop;
	CURLM *multi;
	CURLSH *share; /* TLS sessions: a new connection resumes, no full handshake */
	CURL *idle[EASY_POOL];
	unsigned nidle;
	uv_timer_t timer;       /* curl's timeout */
	uv_timer_t limit_timer; /* next token */
	char *server, *token, *token_file;
	char *user_agent;                                      /* NULL: "kubicle-syncer" */
	bool (*allow)(const struct sockaddr *addr, void *arg); /* kb_httpc_opts.allow */
	void *allow_arg;
	unsigned token_gen;     /* bumped by each token change */
	uint64_t token_read_ms; /* last read of token_file */
	char *ca_pem, *ca_file, *cert_pem, *key_pem;
	/* ca_pem, cert_pem and key_pem decoded once by the OpenSSL libcurl
	 * loaded (lib/curl_dl.h), for every new connection's TLS context
	 * (kb_httpc_setup_tls); NULL: none, or curl decodes the PEM itself */
	struct kb_httpc_creds *creds;
	bool insecure;
	unsigned timeout_ms;
	double qps, tokens;
	unsigned burst;
	uint64_t last_fill_ms;
	struct kb_httpc_req *queue, *queue_tail, *active;
	struct sock_ctx *socks;
	size_t nactive, nqueued;
	unsigned ninflight; /* active non-streaming requests */
	uint64_t nfailed;   /* kb_httpc_failed */
	int open_handles;
	bool in_action; /* inside curl_multi_socket_action: no add/remove */
	bool closing;
	/* inside a request's on_done (finish): a kb_httpc_close from there is
	 * carried out once check_multi_info is back (the finishing request's
	 * easy handle still holds the share and the multi) */
	bool in_done, close_pending;
	struct kb_httpc_tunnel *tunnels; /* open tunnels (httpc_tunnel.c) */
};

/* What one easy handle's connection attempts met (the allow hook): the
 * last address tried and whether the hook refused one. */
struct kb_httpc_dial {
	kb_httpc_t *c;
	char peer[64]; /* "ADDR:PORT", "[ADDR]:PORT" or "" */
	bool refused;
};

/* The one place curl codes become errnos: 0, -ECONNREFUSED, -ETIMEDOUT,
 * -EHOSTUNREACH, -ECANCELED, -EPROTO (TLS), -ECONNRESET, -ENOMEM, -EIO. */
int kb_httpc_map_curl(CURLcode cc);
/* Sets e's TLS options from the client's: verification, CA, client
 * certificate and key. The PEM blobs (or the decoded credentials) are
 * borrowed from c (not copied): e must be cleaned up before
 * kb_httpc_close frees them. */
void kb_httpc_setup_tls(kb_httpc_t *c, CURL *e);
/* Sets e to open its sockets through c's allow hook, noting attempts in d
 * (borrowed: lives as long as e's transfer), and, with a hook, to use no
 * proxy. */
void kb_httpc_setup_dial(kb_httpc_t *c, CURL *e, struct kb_httpc_dial *d);
/* The errno for a failed transfer: -EACCES when d saw a refusal and curl
 * could not connect, else kb_httpc_map_curl(cc). */
int kb_httpc_dial_err(const struct kb_httpc_dial *d, CURLcode cc);

/* The bearer token to send now (borrowed until the next call or token
 * change), NULL for none; re-read from the token file first when the last
 * read is a minute old. */
const char *kb_httpc_token(kb_httpc_t *c);
/* Ends every tunnel of c without calling back (kb_httpc_close). */
void kb_httpc_tunnels_close(kb_httpc_t *c);

#endif
