/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A webhook's client configuration as kube-apiserver calls it
 * (k8s.io/apiserver pkg/util/webhook: ClientConfig, the ClusterIP service
 * resolver): shared by admission webhooks (proxy/admission/webhook.c) and
 * CRD conversion webhooks (proxy/api/crdconv.c).
 * Included through proxy/core/core.h. Loop thread only.
 */
#ifndef KB_PROXY_CORE_WHCLIENT_H
#define KB_PROXY_CORE_WHCLIENT_H

#include <jansson.h>
#include <stddef.h>

#include "lib/httpc.h"

struct proxy;

/* Where a webhook is called; all strings owned. */
struct whc_target {
	kb_httpc_t *client;      /* made at the first call (whc_client) */
	char *svc_ns, *svc_name; /* service reference, or NULL (url) */
	int svc_port;
	unsigned timeout_s;
	char *server; /* scheme://host[:port] its client is made for */
	char *where;  /* the URL as kube's messages show it, with ?timeout= */
	char *path;   /* path and query sent */
	char *ca_pem; /* the decoded caBundle, or NULL (the system's CAs) */
	bool bad_ca;  /* the caBundle is not base64 */
};

/* Fills t from clientConfig cc (borrowed: url or service, caBundle), the
 * service's port defaulting to 443; `?timeout=<timeout_s>s` is added to the
 * path as kube's rest client adds it. 0, or -EINVAL when cc names no target
 * (t is then half filled: whc_target_free it). */
int whc_target_init(struct whc_target *t, const json_t *cc, unsigned timeout_s);
void whc_target_free(struct whc_target *t);

/* t's HTTP client (made once, kept alive), or NULL with why. */
kb_httpc_t *whc_client(struct proxy *px, struct whc_target *t, const char *user_agent, char *why,
		       size_t wl);

/* POSTs doc (borrowed; sent as compact JSON, the review of an admission or
 * conversion webhook) to t's path through client (connect-to entry ct, or
 * "" for none), keeping at most max_body bytes of the answer for on_done.
 * The call, or NULL (out of memory: on_done is not called). */
kb_httpc_req_t *whc_post_json(kb_httpc_t *client, const struct whc_target *t, const char *ct,
			      const json_t *doc, size_t max_body, kb_httpc_done_cb on_done,
			      void *arg);

/* kube's ClusterIP service resolver: the libcurl connect-to entry
 * "<svc>.<ns>.svc:<port>:<cluster IP>:<port>" for the tenant Service t
 * names. 0, or -ENOENT (no such Service) or -1, with the admission
 * webhooks' words in why. */
int whc_service_address(struct proxy *px, const struct whc_target *t, char *ct, size_t len,
			char *why, size_t wl);

/* Go's words for a call that got no answer, as kube-apiserver's messages
 * show them after `Post "URL": ` (net/http and net errors): err from
 * lib/httpc, peer its kb_httpc_req_peer ("" when unknown: the URL's host
 * and port stand in), url the URL called. -ECONNREFUSED "dial tcp ADDR:
 * connect: connection refused"; -EACCES (the egress policy,
 * proxy/core/egress.h) "dial tcp ADDR: connect: address not allowed ...";
 * -ETIMEDOUT "context deadline exceeded"; -EHOSTUNREACH "dial tcp: lookup
 * HOST: no such host"; -EPROTO "tls: failed to verify certificate";
 * -ECONNRESET "EOF". */
void whc_dial_error(int err, const char *peer, const char *url, char *buf, size_t len);

#endif
