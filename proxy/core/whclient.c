/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Webhook client configurations (proxy/core/whclient.h): the target of a
 * clientConfig (url, or a tenant Service reached through its cluster IP
 * under the TLS name <service>.<namespace>.svc), its caBundle as the only
 * trusted CA, one kept-alive HTTP client per target. As kube's
 * k8s.io/apiserver pkg/util/webhook (ClientConfig, ClusterIP resolver),
 * which admission and CRD conversion webhooks share in kube too.
 *
 * Threading: loop thread only.
 */
#include "proxy/core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

static char *dup_str(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int take_ca(struct whc_target *t, const json_t *cc)
{
	const char *ca64 = json_string_value(json_object_get(cc, "caBundle"));
	unsigned char *raw = NULL;
	size_t rl = 0;
	if (!ca64 || !*ca64)
		return 0;
	if (kb_base64_decode(ca64, strlen(ca64), &raw, &rl) < 0) {
		t->bad_ca = true;
		return 0;
	}
	t->ca_pem = calloc(1, rl + 1);
	if (t->ca_pem)
		memcpy(t->ca_pem, raw, rl);
	free(raw);
	return t->ca_pem ? 0 : -ENOMEM;
}

int whc_target_init(struct whc_target *t, const json_t *cc, unsigned timeout_s)
{
	const char *url = json_string_value(json_object_get(cc, "url"));
	const json_t *svc = json_object_get(cc, "service");
	char where[4200], path[2048];
	const char *p;
	memset(t, 0, sizeof(*t));
	t->timeout_s = timeout_s;
	if (url) {
		const char *host = strstr(url, "://");
		if (!host)
			return -EINVAL;
		p = strchr(host + 3, '/');
		snprintf(path, sizeof(path), "%s", p ? p : "/");
		snprintf(where, sizeof(where), "%s", url);
		t->server = strndup(url, p ? (size_t)(p - url) : strlen(url));
	} else if (json_is_object(svc)) {
		t->svc_ns = dup_str(json_string_value(json_object_get(svc, "namespace")));
		t->svc_name = dup_str(json_string_value(json_object_get(svc, "name")));
		json_t *port = json_object_get(svc, "port");
		t->svc_port = json_is_integer(port) ? (int)json_integer_value(port) : 443;
		p = json_string_value(json_object_get(svc, "path"));
		if (!t->svc_ns || !t->svc_name)
			return -EINVAL;
		snprintf(path, sizeof(path), "%s", p && *p ? p : "/");
		snprintf(where, sizeof(where), "https://%s.%s.svc:%d", t->svc_name, t->svc_ns,
			 t->svc_port);
		t->server = strdup(where);
		snprintf(where + strlen(where), sizeof(where) - strlen(where), "%s", path);
	} else {
		return -EINVAL;
	}
	char q[64];
	snprintf(q, sizeof(q), "%ctimeout=%us", strchr(path, '?') ? '&' : '?', timeout_s);
	size_t wl = strlen(where) + strlen(q) + 1, pl = strlen(path) + strlen(q) + 1;
	t->where = malloc(wl);
	t->path = malloc(pl);
	if (!t->server || !t->where || !t->path)
		return -ENOMEM;
	snprintf(t->where, wl, "%s%s", where, q);
	snprintf(t->path, pl, "%s%s", path, q);
	return take_ca(t, cc);
}

void whc_target_free(struct whc_target *t)
{
	if (t->client)
		kb_httpc_close(t->client);
	free(t->svc_ns);
	free(t->svc_name);
	free(t->server);
	free(t->where);
	free(t->path);
	free(t->ca_pem);
	memset(t, 0, sizeof(*t));
}

kb_httpc_t *whc_client(struct proxy *px, struct whc_target *t, const char *user_agent, char *why,
		       size_t wl)
{
	if (t->client)
		return t->client;
	if (t->bad_ca) {
		snprintf(why, wl, "caBundle is not base64");
		return NULL;
	}
	struct kb_httpc_opts o = {.server = t->server,
				  .ca_pem = t->ca_pem,
				  .timeout_ms = t->timeout_s * 1000,
				  .user_agent = user_agent,
				  .allow = egress_allow, /* the tenant wrote the address */
				  .allow_arg = px};
	int rc = kb_httpc_new(px->loop, &o, &t->client);
	if (rc < 0) {
		snprintf(why, wl, "cannot make a client for %s: %s", t->server, strerror(-rc));
		t->client = NULL;
	}
	return t->client;
}

int whc_service_address(struct proxy *px, const struct whc_target *t, char *ct, size_t len,
			char *why, size_t wl)
{
	json_t *svc = NULL;
	if (store_get(px->store, "/services", t->svc_ns, t->svc_name, &svc) < 0) {
		snprintf(why, wl, "failed to call webhook: service \"%s/%s\" not found", t->svc_ns,
			 t->svc_name);
		return -ENOENT;
	}
	const char *ip = obj_str(svc, "spec.clusterIP");
	const char *type = obj_str(svc, "spec.type");
	int rc = -1;
	char host[300];
	if (type && strcmp(type, "ExternalName") == 0 && obj_str(svc, "spec.externalName")) {
		/* kube's resolver: the external name at the webhook's port */
		snprintf(ct, len, "%s.%s.svc:%d:%s:%d", t->svc_name, t->svc_ns, t->svc_port,
			 obj_str(svc, "spec.externalName"), t->svc_port);
		rc = 0;
		goto out;
	} else if (!ip || !*ip || strcmp(ip, "None") == 0) {
		snprintf(why, wl, "failed to call webhook: service \"%s/%s\" has no cluster IP",
			 t->svc_ns, t->svc_name);
		goto out;
	}
	snprintf(host, sizeof(host), strchr(ip, ':') ? "[%s]" : "%s", ip);
	size_t i;
	json_t *p;
	json_array_foreach (obj_get(svc, "spec.ports"), i, p) {
		if (json_integer_value(json_object_get(p, "port")) == t->svc_port) {
			snprintf(ct, len, "%s.%s.svc:%d:%s:%d", t->svc_name, t->svc_ns, t->svc_port,
				 host, t->svc_port);
			rc = 0;
			goto out;
		}
	}
	snprintf(why, wl, "failed to call webhook: no service port %d found for service \"%s\"",
		 t->svc_port, t->svc_name);
out:
	json_decref(svc);
	return rc;
}

kb_httpc_req_t *whc_post_json(kb_httpc_t *client, const struct whc_target *t, const char *ct,
			      const json_t *doc, size_t max_body, kb_httpc_done_cb on_done,
			      void *arg)
{
	char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	if (!body)
		return NULL;
	struct kb_httpc_call call = {.method = "POST",
				     .path = t->path,
				     .body = body,
				     .body_len = strlen(body),
				     .connect_to = ct[0] ? ct : NULL,
				     .max_body = max_body,
				     .on_done = on_done,
				     .arg = arg};
	kb_httpc_req_t *hc = kb_httpc_request(client, &call);
	free(body);
	return hc;
}

/* The host and port of url ("h:443" when it names no port), into buf. */
static void url_hostport(const char *url, char *buf, size_t len)
{
	const char *h = strstr(url, "://");
	bool tls = !h || strncmp(url, "https", 5) == 0;
	h = h ? h + 3 : url;
	size_t n = strcspn(h, "/?");
	const char *colon = memrchr(h, ':', n), *bracket = memrchr(h, ']', n);
	bool port = colon && (!bracket || colon > bracket);
	snprintf(buf, len, port ? "%.*s" : "%.*s:%s", (int)n, h, tls ? "443" : "80");
}

void whc_dial_error(int err, const char *peer, const char *url, char *buf, size_t len)
{
	char hp[300], host[300];
	url_hostport(url, hp, sizeof(hp));
	if (!peer || !*peer)
		peer = hp;
	switch (err) {
	case -ECONNREFUSED:
		snprintf(buf, len, "dial tcp %s: connect: connection refused", peer);
		break;
	case -EACCES:
		snprintf(buf, len,
			 "dial tcp %s: connect: address not allowed by this server's egress "
			 "policy (the platform can allow it: kubicle serve --egress-allow)",
			 peer);
		break;
	case -ETIMEDOUT: snprintf(buf, len, "context deadline exceeded"); break;
	case -EHOSTUNREACH:
		snprintf(host, sizeof(host), "%s", hp);
		*strrchr(host, ':') = '\0';
		snprintf(buf, len, "dial tcp: lookup %s: no such host", host);
		break;
	case -EPROTO: snprintf(buf, len, "tls: failed to verify certificate"); break;
	case -ECONNRESET: snprintf(buf, len, "EOF"); break;
	default: snprintf(buf, len, "%s", strerror(-err)); break;
	}
}
