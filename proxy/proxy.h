/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API front of one tenant: serves the Kubernetes API over HTTPS from the
 * store, with kube-apiserver's semantics (discovery, OpenAPI, CRUD, watch,
 * patches, Table output, namespaces lifecycle).
 *
 * Threading: loop thread only.
 */
#ifndef KB_PROXY_H
#define KB_PROXY_H

#include <uv.h>

#include "lib/http.h"
#include "store/store.h"

typedef struct proxy proxy_t;
typedef struct ssl_ctx_st SSL_CTX;

struct proxy_opts {
	const char *listen;          /* "127.0.0.1:6443" */
	SSL_CTX *tls;                /* borrowed, outlives the proxy */
	store_t *store;              /* borrowed, outlives the proxy */
	const char *advertise_host;  /* address written into the kubernetes Service endpoints */
	const char *data_dir;        /* DIR: audit.log goes there; NULL: no audit log */
};

/* Bootstraps the tenant's built-in objects if missing, then listens.
 * *port_out gets the bound port. Returns 0 or a negative errno. */
int proxy_start(uv_loop_t *loop, const struct proxy_opts *opts, proxy_t **out,
		int *port_out);
/* Bearer tokens of a tenant (for the CLI, which may run beside a server on
 * the same store: the server reads them per request). Only the token's
 * SHA-256 is kept. ttl_seconds 0: no expiry. Returns 0 or a negative errno. */
int proxy_token_add(store_t *st, const char *token, const char *user,
		    const char *const *groups, size_t ngroups, long ttl_seconds);
/* Revokes one token, or (token NULL) every token of `user`. Returns the
 * number revoked (0 or 1 for one token), -ENOENT for an unknown token, or a
 * negative errno. */
int proxy_token_revoke(store_t *st, const char *token, const char *user);
/* Ends every watch, stops listening; the loop can then finish. */
void proxy_stop(proxy_t *px);

/* Pods of this tenant run on a host cluster (the syncer): pod specs that
 * would reach into the host (nodeName, hostNetwork, hostPID, hostIPC, host
 * ports, hostPath volumes, privileged containers) are refused with 422, and
 * GET pods/log is answered by `pod_log(arg, req, ns, name, raw_query)`,
 * which must answer `req` (borrowed until answered). `arg` is borrowed and
 * must outlive the proxy (or be unset with pod_log NULL first). */
typedef void (*proxy_pod_log_fn)(void *arg, kb_http_req_t *req, const char *ns,
				 const char *name, const char *query);
void proxy_set_host(proxy_t *px, proxy_pod_log_fn pod_log, void *arg);

#endif
