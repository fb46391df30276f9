/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Responses: JSON bodies, and the one place where an error becomes a
 * Kubernetes Status (reasons and codes as kube-apiserver sends them).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/core/core.h"
#include "proxy/validation/validate.h"

static void warnings_header(struct req *r, struct kb_buf *hdr)
{
	if (!r->warnings)
		return;
	size_t i;
	json_t *w;
	json_array_foreach (r->warnings, i, w) {
		kb_buf_puts(hdr, "Warning: 299 - \"");
		for (const char *p = json_string_value(w); p && *p; p++) {
			if (*p == '"' || *p == '\\')
				kb_buf_append(hdr, "\\", 1);
			if ((unsigned char)*p >= 0x20)
				kb_buf_append(hdr, p, 1);
		}
		kb_buf_puts(hdr, "\"\r\n");
	}
}

/*
 * A response prepared while the store's group commit is pending waits for
 * it: nothing is acknowledged, nor read, before it is durable.
 */
struct deferred_reply {
	struct deferred_reply *next;
	kb_http_req_t *http;
	struct prom_rec prom; /* counted when sent */
	int code;
	char *content_type, *headers, *body;
	size_t len;
	/* what kube's storage error names (storage_status) */
	char op[16], qn[256], group[128], plural[96];
};

static json_t *storage_status(const char *op, const char *qn, const char *group,
			      const char *plural);

static void deferred_send(struct deferred_reply *d, int status)
{
	prom_record(&d->prom, status == 0 ? d->code : 500);
	if (status == 0) {
		kb_http_respond(d->http, d->code, d->content_type, d->headers, d->body, d->len);
		return;
	}
	json_t *st = status == -EROFS || status == -ENOSPC
			 ? storage_status(d->op, d->qn, d->group, d->plural)
			 : reply_status_object(
			       500, "InternalError",
			       "Internal error occurred: the change could not be committed", NULL);
	char *s = json_dumps(st, JSON_COMPACT);
	/* kube's ErrorNegotiated: retryAfterSeconds becomes Retry-After */
	kb_http_respond(d->http, 500, "application/json",
			status == -EROFS || status == -ENOSPC ? "Retry-After: 2\r\n" : NULL, s,
			s ? strlen(s) : 0);
	free(s);
	json_decref(st);
}

static void deferred_flush(int status, void *arg)
{
	struct proxy *px = arg;
	struct deferred_reply *d = px->deferred;
	px->deferred = NULL;
	px->deferred_tail = &px->deferred;
	while (d) {
		struct deferred_reply *next = d->next;
		deferred_send(d, status);
		free(d->content_type);
		free(d->headers);
		free(d->body);
		free(d);
		d = next;
	}
}

static void storage_names(const struct req *r, char *op, size_t oplen, char *qn, size_t qnlen);

static int defer_reply(struct req *r, const struct prom_rec *prom, int code, const char *ct,
		       const char *headers, const char *body, size_t len)
{
	struct proxy *px = r->px;
	struct deferred_reply *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->http = r->http;
	d->prom = *prom;
	storage_names(r, d->op, sizeof(d->op), d->qn, sizeof(d->qn));
	if (r->res) {
		snprintf(d->group, sizeof(d->group), "%s", r->res->group);
		snprintf(d->plural, sizeof(d->plural), "%s", r->res->plural);
	}
	d->code = code;
	d->content_type = strdup(ct);
	d->headers = headers ? strdup(headers) : NULL;
	d->body = malloc(len + 1);
	if (!d->content_type || (headers && !d->headers) || !d->body) {
		free(d->content_type);
		free(d->headers);
		free(d->body);
		free(d);
		return -ENOMEM;
	}
	memcpy(d->body, body, len);
	d->len = len;
	if (!px->deferred && store_on_commit(px->store, deferred_flush, px) < 0) {
		free(d->content_type);
		free(d->headers);
		free(d->body);
		free(d);
		return -EALREADY;
	}
	if (!px->deferred_tail)
		px->deferred_tail = &px->deferred;
	*px->deferred_tail = d;
	px->deferred_tail = &d->next;
	return 0;
}

/* reply_text with `extra` header lines ("Name: value\r\n", or NULL). */
static void send_text(struct req *r, int code, const char *content_type, const char *extra,
		      const char *body, size_t len)
{
	struct kb_buf hdr = {0};
	warnings_header(r, &hdr);
	kb_buf_puts(&hdr, "Cache-Control: no-cache, private\r\n");
	if (extra)
		kb_buf_puts(&hdr, extra);
	reply_raw(r, code, content_type, hdr.data, body, len);
	kb_buf_free(&hdr);
}

void reply_text(struct req *r, int code, const char *content_type, const char *body, size_t len)
{
	send_text(r, code, content_type, NULL, body, len);
}

/*
 * Whether the client wants indented JSON: an accepted media type with
 * pretty=1, else kube's isPrettyPrint
 * (apiserver endpoints/handlers/negotiation/negotiate.go): the query's
 * "pretty" when set, else a User-Agent of curl, Wget or a browser
 * ("Mozilla/5.0"). kubectl and client libraries get compact JSON.
 */
static bool want_pretty(const struct req *r)
{
	/* NegotiateOutputMediaType: a pretty=1 parameter of the accepted
	 * media type first */
	const char *accept = kb_http_req_header(r->http, "accept");
	if (accept && strstr(accept, "pretty=1"))
		return true;
	if (r->q.pretty >= 0)
		return r->q.pretty == 1;
	const char *ua = kb_http_req_header(r->http, "user-agent");
	return ua && (strncmp(ua, "curl", 4) == 0 || strncmp(ua, "Wget", 4) == 0 ||
		      strncmp(ua, "Mozilla/5.0", 11) == 0);
}

/* body indented as Go's json.MarshalIndent(obj, "", "  ") writes it (kube's
 * pretty JSON serializer), or NULL to send it as it is. Caller frees. */
static char *pretty_body(const struct req *r, const char *content_type, const char *body,
			 size_t len)
{
	if (!want_pretty(r) || strncmp(content_type, "application/json", 16) != 0 || !len ||
	    (body[0] != '{' && body[0] != '['))
		return NULL;
	json_t *v = json_loadb(body, len, JSON_DECODE_ANY, NULL);
	char *out = v ? json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY) : NULL;
	json_decref(v);
	return out;
}

void reply_raw(struct req *r, int code, const char *content_type, const char *headers,
	       const char *body, size_t len)
{
	char *pretty = pretty_body(r, content_type, body, len);
	if (pretty) {
		body = pretty;
		len = strlen(pretty);
	}
	struct kb_buf hdr = {0};
	struct prom_rec prom;
	prom_take(r, len, &prom);
	audit_log(r, code);
	audit_id_header(r, &hdr);
	if (headers)
		kb_buf_puts(&hdr, headers);
	if (!store_pending(r->px->store) ||
	    defer_reply(r, &prom, code, content_type, hdr.data, body, len) < 0) {
		prom_record(&prom, code);
		kb_http_respond(r->http, code, content_type, hdr.data, body, len);
	}
	kb_buf_free(&hdr);
	free(pretty);
	r->http = NULL;
}

void reply_json(struct req *r, int code, const json_t *obj)
{
	struct kb_buf b = {0};
	if (kb_json_dump(obj, &b) < 0) {
		kb_buf_free(&b);
		reply_text(r, 500, "application/json", "{}", 2);
		return;
	}
	const char *ct = "application/json";
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	if (kind && strcmp(kind, "Table") == 0)
		ct = "application/json;as=Table;v=v1;g=meta.k8s.io";
	reply_text(r, code, ct, b.data, b.len);
	kb_buf_free(&b);
}

json_t *reply_status_object(int code, const char *reason, const char *message, json_t *details)
{
	json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:s}", "kind", "Status", "apiVersion", "v1",
			       "metadata", "status", code < 400 ? "Success" : "Failure", "message",
			       message ? message : "");
	if (reason && *reason)
		json_object_set_new(st, "reason", json_string(reason));
	if (details)
		json_object_set_new(st, "details", details);
	json_object_set_new(st, "code", json_integer(code));
	return st;
}

void reply_status(struct req *r, int code, const char *reason, const char *message, json_t *details)
{
	json_t *st = reply_status_object(code, reason, message, details);
	if (code >= 500)
		kb_warn("proxy", "req %llu: %d %s", (unsigned long long)r->http->id, code, message);
	else
		kb_debug("proxy", "req %llu: %d %s", (unsigned long long)r->http->id, code,
			 message);
	/* kube's ErrorNegotiated: details.retryAfterSeconds becomes Retry-After */
	json_int_t retry = json_integer_value(json_object_get(details, "retryAfterSeconds"));
	struct kb_buf b = {0};
	if (retry > 0 && kb_json_dump(st, &b) == 0) {
		char extra[64];
		snprintf(extra, sizeof(extra), "Retry-After: %lld\r\n", (long long)retry);
		send_text(r, code, "application/json", extra, b.data, b.len);
	} else {
		reply_json(r, code, st);
	}
	kb_buf_free(&b);
	json_decref(st);
}

void reply_statusf(struct req *r, int code, const char *reason, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_status(r, code, reason, msg, NULL);
}

void reply_resource_name(const struct proxy_resource *res, char *buf, size_t len)
{
	if (!res)
		snprintf(buf, len, "unknown");
	else if (res->group[0])
		snprintf(buf, len, "%s.%s", res->plural, res->group);
	else
		snprintf(buf, len, "%s", res->plural);
}

static json_t *details_of(const struct req *r, const char *name)
{
	json_t *d = json_object();
	if (name && *name)
		json_object_set_new(d, "name", json_string(name));
	if (r->res) {
		if (r->res->group[0])
			json_object_set_new(d, "group", json_string(r->res->group));
		json_object_set_new(d, "kind", json_string(r->res->plural));
	}
	return d;
}

/*
 * The store refuses writes (store.h, Health) or the disk is full: kube's
 * answer when its storage cannot serve a request
 * (apiserver/pkg/storage/errors/storage.go, InterpretCreateError and its
 * siblings: an unreachable storage becomes errors.NewServerTimeout(resource,
 * verb, 2)): 500 ServerTimeout, "The create operation against pods could
 * not be completed at this time, please try again.", with Retry-After: 2.
 * kube's registry names a patch "update" and a delete "delete".
 */
static void storage_names(const struct req *r, char *op, size_t oplen, char *qn, size_t qnlen)
{
	const char *v = r->verb ? r->verb : "update";
	if (strcmp(v, "patch") == 0)
		v = "update";
	else if (strcmp(v, "deletecollection") == 0)
		v = "delete";
	snprintf(op, oplen, "%s", v);
	reply_resource_name(r->res, qn, qnlen);
}

/* The Status of errors.NewServerTimeout(resource, op, 2) (new reference). */
static json_t *storage_status(const char *op, const char *qn, const char *group, const char *plural)
{
	char msg[512];
	snprintf(msg, sizeof(msg),
		 "The %s operation against %s could not be completed at this time, please try "
		 "again.",
		 op, qn);
	json_t *d = json_pack("{s:s,s:s,s:i}", "kind", plural, "name", op, "retryAfterSeconds", 2);
	if (group[0])
		json_object_set_new(d, "group", json_string(group));
	return reply_status_object(500, "ServerTimeout", msg, d);
}

static void reply_storage_unavailable(struct req *r)
{
	char op[16], qn[300];
	storage_names(r, op, sizeof(op), qn, sizeof(qn));
	json_t *st =
	    storage_status(op, qn, r->res ? r->res->group : "", r->res ? r->res->plural : "");
	json_t *d = json_incref(json_object_get(st, "details"));
	reply_status(r, 500, "ServerTimeout", json_string_value(json_object_get(st, "message")), d);
	json_decref(st);
}

void reply_errno(struct req *r, int err, const char *name)
{
	char qn[300], msg[1024];
	reply_resource_name(r->res, qn, sizeof(qn));
	switch (err) {
	case -ENOENT:
		snprintf(msg, sizeof(msg), "%s \"%s\" not found", qn, name ? name : "");
		reply_status(r, 404, "NotFound", msg, details_of(r, name));
		return;
	case -EEXIST:
		snprintf(msg, sizeof(msg), "%s \"%s\" already exists", qn, name ? name : "");
		reply_status(r, 409, "AlreadyExists", msg, details_of(r, name));
		return;
	case -ESTALE:
		snprintf(msg, sizeof(msg),
			 "Operation cannot be fulfilled on %s \"%s\": the object has been "
			 "modified; please apply your changes to the latest version and try again",
			 qn, name ? name : "");
		reply_status(r, 409, "Conflict", msg, details_of(r, name));
		return;
	case -ERANGE: reply_status(r, 410, "Expired", "too old resource version", NULL); return;
	case -ENOMEM: reply_status(r, 500, "InternalError", "out of memory", NULL); return;
	case -EROFS:
	case -ENOSPC: reply_storage_unavailable(r); return;
	default:
		snprintf(msg, sizeof(msg), "Internal error occurred: %s", strerror(-err));
		reply_status(r, 500, "InternalError", msg, NULL);
	}
}

void reply_invalid(struct req *r, const char *kind, const char *name, json_t *causes)
{
	struct kb_buf msg = {0};
	/* kube's errors.NewInvalid names the kind with its group
	 * (GroupKind.String(): "Deployment.apps", "Foo.example.com"), and
	 * stops after "is invalid" when there is no cause */
	bool own = r->res && strcmp(kind, r->res->kind) == 0 && r->res->group[0];
	size_t n = json_array_size(causes), i;
	kb_buf_printf(&msg, "%s%s%s \"%s\" is invalid%s", kind, own ? "." : "",
		      own ? r->res->group : "", name ? name : "", n ? ": " : "");
	json_t *c;
	if (n > 1)
		kb_buf_puts(&msg, "[");
	json_array_foreach (causes, i, c) {
		const char *field = json_string_value(json_object_get(c, "field"));
		const char *m = json_string_value(json_object_get(c, "message"));
		if (i)
			kb_buf_puts(&msg, ", ");
		if (field && *field)
			kb_buf_printf(&msg, "%s: ", field);
		kb_buf_puts(&msg, m ? m : "");
	}
	if (n > 1)
		kb_buf_puts(&msg, "]");
	json_t *d = json_object();
	json_object_set_new(d, "name", json_string(name ? name : ""));
	if (r->res && r->res->group[0])
		json_object_set_new(d, "group", json_string(r->res->group));
	json_object_set_new(d, "kind", json_string(kind));
	json_object_set_new(d, "causes", causes);
	reply_status(r, 422, "Invalid", msg.data, d);
	kb_buf_free(&msg);
}

void reply_list_options_invalid(struct req *r, json_t *causes)
{
	char *msg = val_status_message(NULL, "", causes);
	struct kb_buf b = {0};
	kb_buf_printf(&b, "ListOptions.meta.k8s.io%s", msg ? strchr(msg, ' ') : " is invalid");
	reply_status(r, 422, "Invalid", b.data,
		     json_pack("{s:s,s:s,s:o}", "group", "meta.k8s.io", "kind", "ListOptions",
			       "causes", causes));
	kb_buf_free(&b);
	free(msg);
}
