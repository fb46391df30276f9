/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generic verbs on any row of the resource table: get, list, create,
 * update, patch (four types), delete and deletecollection, plus the status
 * and scale subresources. kube-apiserver's semantics: optimistic
 * concurrency on resourceVersion, server-owned metadata kept, generation
 * bumped on spec changes, defaults and validation on every write,
 * fieldValidation, dryRun, finalizers and graceful deletion.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/patch/patch.h"
#include "proxy/model/protobuf.h"
#include "proxy/api/api.h"
#include "proxy/model/schema.h"
#include "proxy/model/selector.h"
#include "proxy/validation/validate.h"
#include "proxy/admission/vap.h"
#include "proxy/admission/webhook.h"

#define CT_JSON "application/json"

static const char *content_type(const struct req *r)
{
	const char *ct = kb_http_req_header(r->http, "content-type");
	return ct ? ct : "";
}

static bool ct_is(const char *ct, const char *want)
{
	size_t n = strlen(want);
	return strncasecmp(ct, want, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static void gv_string(const struct proxy_resource *res, char *buf, size_t len)
{
	if (res->group[0])
		snprintf(buf, len, "%s/%s", res->group, res->version);
	else
		snprintf(buf, len, "%s", res->version);
}

static const char *field_manager(struct req *r, const char *fallback)
{
	if (r->q.field_manager && *r->q.field_manager)
		return r->q.field_manager;
	static char ua[128];
	const char *agent = kb_http_req_header(r->http, "user-agent");
	if (!agent || !*agent)
		return fallback;
	size_t n = strcspn(agent, "/");
	if (n >= sizeof(ua))
		n = sizeof(ua) - 1;
	memcpy(ua, agent, n);
	ua[n] = '\0';
	return ua;
}

static void add_warning(struct req *r, const char *msg)
{
	if (!r->warnings)
		r->warnings = json_array();
	json_array_append_new(r->warnings, json_string(msg));
}

/* Removes the field at a path like "spec.containers[0].foo". */
static void prune_path(json_t *obj, const char *path)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *cur = obj;
	char *p = buf;
	while (cur && *p) {
		size_t n = strcspn(p, ".[");
		char key[256];
		if (n >= sizeof(key))
			return;
		memcpy(key, p, n);
		key[n] = '\0';
		p += n;
		if (*p == '\0') {
			json_object_del(cur, key);
			return;
		}
		cur = n ? json_object_get(cur, key) : cur;
		while (*p == '[') {
			long idx = strtol(p + 1, &p, 10);
			if (*p == ']')
				p++;
			cur = json_array_get(cur, (size_t)idx);
		}
		if (*p == '.')
			p++;
	}
}

/*
 * fieldValidation: Strict refuses unknown fields (400), Warn adds Warning
 * headers, Ignore drops them silently; unknown fields are never stored.
 * Wrong JSON types are refused in every mode, as Go decoding would.
 */
static int check_fields(struct req *r, json_t *obj)
{
	if (!r->res->proto)
		return crd_check_fields(r, obj);
	json_t *errors = json_array(), *paths = json_array();
	schema_check(r->res->proto, obj, errors, paths);
	if (json_array_size(errors)) {
		json_t *e = json_array_get(errors, 0);
		reply_statusf(r, 400, "BadRequest",
			      "%s in version \"%s\" cannot be handled as a %s: %s%s%s",
			      r->res->kind, r->res->version, r->res->kind,
			      json_string_value(json_object_get(e, "field")) ?: "",
			      json_string_value(json_object_get(e, "field")) ? ": " : "",
			      json_string_value(json_object_get(e, "message")) ?: "invalid type");
		json_decref(errors);
		json_decref(paths);
		return -EINVAL;
	}
	json_decref(errors);
	size_t n = json_array_size(paths), i;
	json_t *p;
	if (n && r->q.validation == FV_STRICT) {
		struct kb_buf msg = {0};
		kb_buf_printf(
		    &msg, "%s in version \"%s\" cannot be handled as a %s: strict decoding error: ",
		    r->res->kind, r->res->version, r->res->kind);
		json_array_foreach (paths, i, p)
			kb_buf_printf(&msg, "%sunknown field \"%s\"", i ? ", " : "",
				      json_string_value(p));
		reply_status(r, 400, "BadRequest", msg.data, NULL);
		kb_buf_free(&msg);
		json_decref(paths);
		return -EINVAL;
	}
	json_array_foreach (paths, i, p) {
		if (r->q.validation == FV_WARN) {
			char w[600];
			snprintf(w, sizeof(w), "unknown field \"%s\"", json_string_value(p));
			add_warning(r, w);
		}
		prune_path(obj, json_string_value(p));
	}
	json_decref(paths);
	return 0;
}

/* kube's summarizeData: up to 30 bytes of the body, as text when it
 * starts with '{', else in hex; " ..." when cut, "<empty>" for none. */
static void body_summary(const struct req *r, struct kb_buf *b)
{
	const char *body = r->http->body;
	size_t n = r->http->body_len < 30 ? r->http->body_len : 30;
	if (!r->http->body_len) {
		kb_buf_puts(b, "<empty>");
		return;
	}
	if (body[0] == '{')
		kb_buf_append(b, body, n);
	else
		for (size_t i = 0; i < n; i++)
			kb_buf_printf(b, "%02x", (unsigned char)body[i]);
	if (r->http->body_len > 30)
		kb_buf_puts(b, " ...");
}

/* A body that is not JSON, in kube's words (transformDecodeError in
 * apiserver endpoints/handlers/rest.go, over the JSON serializer's
 * "couldn't get version/kind; json parse error" with Go's syntax error). */
static void reply_unrecognized(struct req *r)
{
	char goerr[256] = "";
	struct kb_buf sum = {0};
	if (kb_json_go_syntax_error(r->http->body, r->http->body_len, goerr, sizeof(goerr)) <= 0)
		snprintf(goerr, sizeof(goerr), "unexpected end of JSON input");
	body_summary(r, &sum);
	reply_statusf(r, 400, "BadRequest",
		      "the object provided is unrecognized (must be of type %s): couldn't get "
		      "version/kind; json parse error: %s (%s)",
		      r->res->kind, goerr, sum.data ? sum.data : "");
	kb_buf_free(&sum);
}

/* Decodes the request body (JSON or Kubernetes protobuf) into an object. */
static int decode_body(struct req *r, json_t **out)
{
	const char *ct = content_type(r);
	json_t *obj = NULL;
	if (ct_is(ct, "application/vnd.kubernetes.protobuf")) {
		char err[256] = "";
		if (!r->res->proto || pb_decode_k8s(r->http->body, r->http->body_len, r->res->proto,
						    &obj, err, sizeof(err)) < 0) {
			reply_statusf(r, 400, "BadRequest", "unable to decode protobuf body: %s",
				      err[0] ? err : "unsupported for this resource");
			return -EINVAL;
		}
	} else if (!ct[0] || ct_is(ct, CT_JSON) || ct_is(ct, "application/yaml") ||
		   ct_is(ct, "*/*")) {
		json_error_t je;
		size_t flags = r->q.validation == FV_STRICT ? JSON_REJECT_DUPLICATES : 0;
		obj = kb_json_loadb(r->http->body, r->http->body_len, flags, &je);
		if (!obj) {
			if (strstr(je.text, "duplicate"))
				reply_statusf(r, 400, "BadRequest",
					      "%s in version \"%s\" cannot be handled as a %s: "
					      "strict decoding error: %s",
					      r->res->kind, r->res->version, r->res->kind, je.text);
			else
				reply_unrecognized(r);
			return -EINVAL;
		}
	} else {
		reply_statusf(r, 415, "UnsupportedMediaType",
			      "the body of the request was in an unknown format - accepted media "
			      "types include: application/json, application/yaml, "
			      "application/vnd.kubernetes.protobuf");
		return -EINVAL;
	}
	if (!json_is_object(obj)) {
		json_decref(obj);
		reply_statusf(r, 400, "BadRequest",
			      "the object provided is unrecognized: not a JSON object");
		return -EINVAL;
	}
	*out = obj;
	return 0;
}

/* apiVersion and kind, when present, must be the resource's. */
static int check_type_meta(struct req *r, json_t *obj)
{
	char gv[128];
	gv_string(r->res, gv, sizeof(gv));
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	if (av && *av && strcmp(av, gv) != 0) {
		reply_statusf(
		    r, 400, "BadRequest",
		    "the API version in the data (%s) does not match the expected API version (%s)",
		    av, gv);
		return -EINVAL;
	}
	if (kind && *kind && strcmp(kind, r->res->kind) != 0) {
		reply_statusf(r, 400, "BadRequest",
			      "%s in version \"%s\" cannot be handled as a %s: the kind in the "
			      "data does not match the expected kind",
			      kind, r->res->version, r->res->kind);
		return -EINVAL;
	}
	json_object_set_new(obj, "apiVersion", json_string(gv));
	json_object_set_new(obj, "kind", json_string(r->res->kind));
	return 0;
}

static int check_namespace(struct req *r, json_t *obj)
{
	json_t *m = obj_meta(obj);
	const char *bns = json_string_value(json_object_get(m, "namespace"));
	if (!r->res->namespaced) {
		json_object_del(m, "namespace");
		return 0;
	}
	if (bns && *bns && r->ns && strcmp(bns, r->ns) != 0) {
		reply_statusf(r, 400, "BadRequest",
			      "the namespace of the provided object does not match the namespace "
			      "sent on the request");
		return -EINVAL;
	}
	if (!r->ns) {
		reply_status(r, 404, "NotFound", "the server could not find the requested resource",
			     json_object());
		return -EINVAL;
	}
	json_object_set_new(m, "namespace", json_string(r->ns));
	return 0;
}

static const char *now_str(struct req *r, char *buf, size_t len)
{
	kb_time_rfc3339(r->now, buf, len);
	return buf;
}

/* Records r's write of obj over old (NULL: a create) in obj's managedFields,
 * under r's field manager (fallback without one) and r's subresource. */
static void handle_track_fields(struct req *r, const json_t *old, json_t *obj, const char *fallback)
{
	char ts[40];
	patch_track_update_sub(old, obj, r->res->proto, field_manager(r, fallback), "Update",
			       old ? r->sub : NULL, now_str(r, ts, sizeof(ts)));
}

/* ---- GET / LIST ------------------------------------------------------- */

void handle_reply_scale(struct req *r, int code, const json_t *scale)
{
	json_t *t = r->want_table ? table_build_scale(r, scale) : NULL;
	reply_json(r, code, t ? t : scale);
	json_decref(t);
}

static void reply_object(struct req *r, int code, json_t *obj)
{
	if (r->res->crd && crdconv_reply(r, code, obj))
		return; /* the stored object, converted back by the webhook (crdconv.c) */
	if (r->as_scale) {
		json_t *scale = scale_view(r->res, obj);
		handle_reply_scale(r, code, scale);
		json_decref(scale);
		return;
	}
	if (r->want_table) {
		json_t *items = json_pack("[O]", obj);
		json_t *t =
		    table_build(r, items, obj_str(obj, "metadata.resourceVersion"), NULL, true);
		json_decref(items);
		reply_json(r, code, t);
		json_decref(t);
		return;
	}
	reply_json(r, code, obj);
}

static int check_get_rv(struct req *r);

static void handle_get(struct req *r)
{
	store_t *st = r->px->store;
	const char *ns = r->ns ? r->ns : "";
	if (check_get_rv(r) < 0)
		return;
	if (!r->sub && !r->want_table && !r->res->from_storage) {
		const char *text;
		size_t len;
		int rc = store_get_raw(st, r->res->store_key, ns, r->name, &text, &len, NULL);
		if (rc < 0)
			reply_errno(r, rc, r->name);
		else
			reply_text(r, 200, CT_JSON, text, len);
		return;
	}
	json_t *obj = NULL;
	int rc = rstore_get(r->px, r->res, ns, r->name, &obj);
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		return;
	}
	if (r->sub && strcmp(r->sub, "scale") == 0) {
		json_t *scale = scale_view_workload(obj);
		handle_reply_scale(r, 200, scale);
		json_decref(scale);
	} else {
		reply_object(r, 200, obj);
	}
	json_decref(obj);
}

/* Continue tokens: base64url of {"v":"meta.k8s.io/v1","rv":N,"start":KEY}. */
static char *continue_encode(int64_t rev, const char *key)
{
	json_t *t =
	    json_pack("{s:s,s:I,s:s}", "v", "meta.k8s.io/v1", "rv", (json_int_t)rev, "start", key);
	char *s = json_dumps(t, JSON_COMPACT);
	json_decref(t);
	char *enc = s ? kb_base64url_encode(s, strlen(s)) : NULL;
	free(s);
	return enc;
}

static int continue_decode(const char *tok, int64_t *rev, char **key)
{
	unsigned char *raw;
	size_t len;
	if (kb_base64url_decode(tok, &raw, &len) < 0)
		return -EINVAL;
	json_t *t = json_loadb((const char *)raw, len, 0, NULL);
	free(raw);
	const char *start = json_string_value(json_object_get(t, "start"));
	json_t *rv = json_object_get(t, "rv");
	if (!start || !json_is_integer(rv)) {
		json_decref(t);
		return -EINVAL;
	}
	*rev = json_integer_value(rv);
	*key = strdup(start);
	json_decref(t);
	return 0;
}

json_t *handle_too_large_status(int64_t want, int64_t cur)
{
	char msg[128];
	snprintf(msg, sizeof(msg), "Too large resource version: %lld, current: %lld",
		 (long long)want, (long long)cur);
	return reply_status_object(504, "Timeout", msg,
				   json_pack("{s:[{s:s,s:s}],s:i}", "causes", "reason",
					     "ResourceVersionTooLarge", "message",
					     "Too large resource version", "retryAfterSeconds", 1));
}

void handle_reply_too_large(struct req *r, int64_t want, int64_t cur)
{
	json_t *st = handle_too_large_status(want, cur);
	reply_json(r, 504, st);
	json_decref(st);
}

/* The request's resourceVersion as a number in *want: 1; 0 for "", "0" or
 * none (the latest); -EINVAL once it has answered 400 for one that is not a
 * number. */
static int query_rv(struct req *r, long long *want)
{
	const char *rv = r->q.resource_version;
	if (!rv || !*rv || strcmp(rv, "0") == 0)
		return 0;
	char *end;
	*want = strtoll(rv, &end, 10);
	if (*end || *want < 0) {
		reply_statusf(r, 400, "BadRequest", "invalid resource version \"%s\"", rv);
		return -EINVAL;
	}
	return 1;
}

/* A resourceVersion on a get: kube's cacher (Get: WaitUntilFreshAndGet)
 * answers one newer than its store with "Too large resource version";
 * "" and "0" read the latest. 0, or it has answered and returns -EINVAL. */
static int check_get_rv(struct req *r)
{
	long long want;
	int rc = query_rv(r, &want);
	if (rc <= 0)
		return rc;
	int64_t cur = store_rev(r->px->store);
	if (want > cur) {
		handle_reply_too_large(r, want, cur);
		return -EINVAL;
	}
	return 0;
}

/* resourceVersion on a list: "", "0" or an RV not newer than ours. */
static int check_list_rv(struct req *r)
{
	long long want;
	int rc = query_rv(r, &want);
	if (rc <= 0)
		return rc;
	int64_t cur = store_rev(r->px->store);
	const char *match = r->q.resource_version_match;
	if (match && strcmp(match, "Exact") == 0 && want != cur) {
		if (want < store_compacted_rev(r->px->store) || want < cur)
			reply_statusf(r, 410, "Expired",
				      "The resourceVersion for the provided list is too old.");
		else
			reply_statusf(r, 504, "Timeout",
				      "Too large resource version: %lld, current: %lld", want,
				      (long long)cur);
		return -EINVAL;
	}
	if (want > cur) {
		handle_reply_too_large(r, want, cur);
		return -EINVAL;
	}
	return 0;
}

struct text_list {
	struct kb_buf b;
	size_t n;
};

static int append_item(const char *text, size_t len, void *arg)
{
	struct text_list *t = arg;
	if (t->n++ > 0 && kb_buf_append(&t->b, ",", 1) < 0)
		return -ENOMEM;
	return kb_buf_append(&t->b, text, len);
}

/* A whole list of objects served as stored: their texts are copied into
 * the body as they are read, rather than parsed into a tree of every
 * object and printed again (50,000 ConfigMaps: the body's size, not ten
 * times it). */
static void reply_list_text(struct req *r, const struct store_list_req *lr)
{
	struct text_list t = {0};
	char gv[128];
	gv_string(r->res, gv, sizeof(gv));
	int64_t rev = store_rev(r->px->store); /* the list is read at it: same thread */
	int rc = kb_buf_printf(&t.b,
			       "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{"
			       "\"resourceVersion\":\"%lld\"},\"items\":[",
			       r->res->list_kind, gv, (long long)rev);
	int64_t at;
	if (rc >= 0)
		rc = store_list_text(r->px->store, lr, append_item, &t, &at);
	if (rc >= 0)
		rc = kb_buf_puts(&t.b, "]}");
	if (rc < 0)
		reply_errno(r, rc, NULL);
	else
		reply_text(r, 200, CT_JSON, t.b.data, t.b.len);
	kb_buf_free(&t.b);
}

struct text_table {
	struct req *r;
	struct kb_buf b;
	size_t n;
};

static int append_row(const char *text, size_t len, void *arg)
{
	struct text_table *t = arg;
	json_t *obj = kb_json_loadb(text, len, 0, NULL);
	if (!obj)
		return -EIO;
	json_t *row = table_row(t->r, obj);
	int rc = t->n++ > 0 ? kb_buf_append(&t->b, ",", 1) : 0;
	if (rc >= 0)
		rc = kb_json_dump(row, &t->b);
	json_decref(row);
	json_decref(obj);
	return rc < 0 ? rc : 0;
}

/* A whole list as kubectl get's Table, each row made from one stored text
 * and printed before the next is read: the same bytes as table_build over
 * the parsed list, without a tree of every object (10,000 pods: +400 MB of
 * peak RSS and most of the time in malloc). */
static void reply_table_text(struct req *r, const struct store_list_req *lr)
{
	struct text_table t = {.r = r};
	char rvs[32];
	snprintf(rvs, sizeof(rvs), "%lld", (long long)store_rev(r->px->store));
	int64_t at;
	int rc = table_text_head(r, rvs, NULL, &t.b);
	if (rc >= 0)
		rc = store_list_text(r->px->store, lr, append_row, &t, &at);
	if (rc >= 0)
		rc = kb_buf_puts(&t.b, "]}");
	if (rc < 0)
		reply_errno(r, rc, NULL);
	else
		reply_text(r, 200, "application/json;as=Table;v=v1;g=meta.k8s.io", t.b.data,
			   t.b.len);
	kb_buf_free(&t.b);
}

/*
 * One page of a list (limit=, continue=: kubectl get asks for pages of
 * 500) written from the stored texts, as the whole lists above are: the
 * same bytes as the page built from parsed objects. -EAGAIN (nothing
 * answered) for a later page when the store changed since the first:
 * those are merged from the history (store_snap.c) as trees.
 */
static int reply_page_text(struct req *r, const struct store_list_req *lr, int64_t tok_rev)
{
	struct text_table rows = {.r = r};
	struct text_list items = {0};
	struct store_list_result res = {0};
	struct kb_buf *body = r->want_table ? &rows.b : &items.b;
	struct kb_buf head = {0};
	char rvs[32], gv[128];
	char *cont = NULL;
	int rc = r->want_table ? store_list_text_page(r->px->store, lr, append_row, &rows, &res)
			       : store_list_text_page(r->px->store, lr, append_item, &items, &res);

	if (rc == -EAGAIN) {
		kb_buf_free(body);
		return rc;
	}
	snprintf(rvs, sizeof(rvs), "%lld", (long long)(tok_rev ? tok_rev : res.rev));
	if (rc >= 0 && res.next && !(cont = continue_encode(tok_rev ? tok_rev : res.rev, res.next)))
		rc = -ENOMEM;
	if (rc >= 0 && r->want_table) {
		rc = table_text_head(r, rvs, cont, &head);
	} else if (rc >= 0) {
		gv_string(r->res, gv, sizeof(gv));
		rc = kb_buf_printf(&head,
				   "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{"
				   "\"resourceVersion\":\"%s\"",
				   r->res->list_kind, gv, rvs);
		if (rc >= 0 && cont)
			rc = kb_buf_puts(&head, ",\"continue\":") < 0
				 ? -ENOMEM
				 : kb_json_put_string(&head, cont);
		if (rc >= 0 && cont && res.remaining >= 0)
			rc = kb_buf_printf(&head, ",\"remainingItemCount\":%lld",
					   (long long)res.remaining);
		if (rc >= 0)
			rc = kb_buf_puts(&head, "},\"items\":[");
	}
	if (rc >= 0 && body->len)
		rc = kb_buf_append(&head, body->data, body->len);
	if (rc >= 0)
		rc = kb_buf_puts(&head, "]}");
	if (rc < 0)
		reply_errno(r, rc, NULL);
	else
		reply_text(r, 200,
			   r->want_table ? "application/json;as=Table;v=v1;g=meta.k8s.io" : CT_JSON,
			   head.data, head.len);
	kb_buf_free(&head);
	kb_buf_free(body);
	free(res.next);
	free(cont);
	return 0;
}

static void handle_list(struct req *r)
{
	struct filter f;
	if (r->q.send_initial_events >= 0) {
		json_t *causes = json_array();
		val_add(causes, "FieldValueForbidden", "sendInitialEvents",
			"sendInitialEvents is forbidden for list");
		reply_list_options_invalid(r, causes);
		return;
	}
	if (check_list_rv(r) < 0 || req_filter_parse(r, &f) < 0)
		return;
	struct store_list_req lr = {
	    .res = r->res->store_key,
	    .ns = r->res->namespaced ? r->ns : NULL,
	    .limit = r->q.limit > 0 ? (size_t)r->q.limit : 0,
	    /* no selector: nothing to parse the stored texts for */
	    .filter = f.labels || f.fields ? req_filter_match : NULL,
	    .filter_arg = &f,
	    /* kube's etcd3 GetList counts what follows a page only when no
	     * selector could make the count wrong (Predicate.Empty) */
	    .want_remaining = !f.labels && !f.fields,
	};
	bool whole = !r->q.cont || !*r->q.cont;
	if (whole && !lr.limit && !r->res->from_storage) {
		if (r->want_table)
			reply_table_text(r, &lr);
		else
			reply_list_text(r, &lr);
		req_filter_free(&f);
		return;
	}
	char *after = NULL;
	int64_t tok_rev = 0;
	if (!whole) {
		if (continue_decode(r->q.cont, &tok_rev, &after) < 0) {
			reply_status(r, 400, "BadRequest", "continue key is not valid", NULL);
			req_filter_free(&f);
			return;
		}
		lr.after = after;
		lr.at = tok_rev; /* the pages after the first are as of its revision */
	}
	if (!r->res->from_storage && reply_page_text(r, &lr, tok_rev) != -EAGAIN) {
		free(after);
		req_filter_free(&f);
		return;
	}
	struct store_list_result res = {0};
	int rc = rstore_list(r->px, r->res, &lr, &res); /* -ERANGE: lr.at compacted */
	free(after);
	req_filter_free(&f);
	if (rc == -ERANGE && tok_rev) {
		reply_status(
		    r, 410, "Expired",
		    "The provided continue parameter is too old to display a consistent "
		    "list result. You can start a new list without the continue parameter.",
		    NULL);
		return;
	}
	if (rc < 0) {
		reply_errno(r, rc, NULL);
		return;
	}
	int64_t rev = tok_rev ? tok_rev : res.rev;
	char rvs[32];
	snprintf(rvs, sizeof(rvs), "%lld", (long long)rev);
	char *cont = res.next ? continue_encode(rev, res.next) : NULL;
	json_t *out;
	if (r->want_table) {
		out = table_build(r, res.items, rvs, cont, true);
	} else {
		char gv[128];
		gv_string(r->res, gv, sizeof(gv));
		out = json_pack("{s:s,s:s,s:{s:s},s:O}", "kind", r->res->list_kind, "apiVersion",
				gv, "metadata", "resourceVersion", rvs, "items", res.items);
		json_t *meta = json_object_get(out, "metadata");
		if (cont)
			json_object_set_new(meta, "continue", json_string(cont));
		if (cont && res.remaining >= 0)
			json_object_set_new(meta, "remainingItemCount",
					    json_integer(res.remaining));
	}
	reply_json(r, 200, out);
	json_decref(out);
	json_decref(res.items);
	free(res.next);
	free(cont);
}

/* ---- CREATE ----------------------------------------------------------- */

/* Stores a new object after server-owned metadata and defaults; no
 * validation (callers validate). Used by bootstrap and controllers. */
int handle_bootstrap_create(struct proxy *px, const struct proxy_resource *res, json_t *obj,
			    json_t **out)
{
	obj_init_create(res, obj, time(NULL));
	write_defaults(px, res, obj);
	const char *ns = obj_str(obj, "metadata.namespace");
	int rc = rstore_create(px, res, res->namespaced ? ns : NULL, obj_str(obj, "metadata.name"),
			       obj, false);
	if (rc == 0 && out)
		*out = json_incref(obj);
	return rc;
}

static int assign_name(struct req *r, json_t *obj)
{
	json_t *m = obj_meta(obj);
	const char *name = json_string_value(json_object_get(m, "name"));
	const char *gen = json_string_value(json_object_get(m, "generateName"));
	if (name && *name)
		return 0;
	if (!gen || !*gen) {
		reply_invalid(r, r->res->kind, "",
			      json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueRequired",
					"message",
					"Required value: name or generateName is required", "field",
					"metadata.name"));
		return -EINVAL;
	}
	char buf[300], sfx[8];
	kb_random_suffix(sfx, 5);
	size_t glen = strlen(gen);
	if (glen > 58)
		glen = 58;
	snprintf(buf, sizeof(buf), "%.*s%s", (int)glen, gen, sfx);
	json_object_set_new(m, "name", json_string(buf));
	r->generated_name = true;
	return 0;
}

/*
 * Answers 201 with the object just stored. A plain JSON answer is the text
 * the store wrote (the same compact serialization of the same object), read
 * back instead of serializing the object a second time.
 */
static void reply_created(struct req *r, json_t *obj)
{
	const char *text;
	size_t len;
	if (!r->as_scale && !r->want_table && !r->res->to_storage && !r->res->from_storage &&
	    store_get_raw(r->px->store, r->res->store_key, r->ns ? r->ns : "",
			  obj_str(obj, "metadata.name"), &text, &len, NULL) == 0) {
		reply_text(r, 201, CT_JSON, text, len);
		return;
	}
	reply_object(r, 201, obj);
}

/* obj_str(obj, "metadata.<key>") without the path's parsing (a create
 * reads the name four times). */
static const char *meta_str(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

/*
 * Whether a create of r may keep its managedFields' fieldsV1 as text (a raw
 * value, patch_track_create): every reader of the object after it knows
 * raw values (kb_json_dump: the store, the answers, JSON and Table watch
 * events; kb_json_copy and json_deep_copy keep them; ownership reads parse
 * them). A row with storage conversions or a custom resource's (its
 * conversion webhooks, printer columns and version conversions dump or
 * walk the object otherwise) gets the tree.
 */
static bool create_raw_v1(const struct req *r)
{
	return !r->res->crd && !r->res->to_storage && !r->res->from_storage;
}

static void handle_create(struct req *r)
{
	json_t *obj = NULL;
	if (r->name || !(r->res->verbs & VERB_CREATE)) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	if (decode_body(r, &obj) < 0)
		return;
	audit_object_name(r, meta_str(obj, "name"));
	if (check_type_meta(r, obj) < 0 || check_fields(r, obj) < 0 ||
	    check_namespace(r, obj) < 0 || assign_name(r, obj) < 0)
		goto out;
	if (meta_str(obj, "resourceVersion") && *meta_str(obj, "resourceVersion")) {
		reply_status(r, 400, "BadRequest",
			     "resourceVersion should not be set on objects to be created", NULL);
		goto out;
	}
	if (r->res->namespaced && ns_check_writable(r, r->ns, meta_str(obj, "name")) < 0)
		goto out;
	obj_init_create(r->res, obj, r->now);
	write_defaults(r->px, r->res, obj);
	if (write_validate(r, obj, NULL) < 0)
		goto out;
	char ts[40];
	patch_track_create(obj, r->res->proto, field_manager(r, "unknown"),
			   now_str(r, ts, sizeof(ts)), create_raw_v1(r));
	if (r->q.dry_run) {
		/* a dry run stores nothing but is refused as the create would
		 * be (apiserver registry/dryrun.go DryRunnableStorage.Create:
		 * the key is looked up, and KeyExists when it is there) */
		const char *text;
		size_t len;
		if (store_get_raw(r->px->store, r->res->store_key, r->ns ? r->ns : "",
				  meta_str(obj, "name"), &text, &len, NULL) == 0)
			reply_errno(r, -EEXIST, meta_str(obj, "name"));
		else
			reply_object(r, 201, obj);
		goto out;
	}
	const char *name = meta_str(obj, "name");
	store_txn_begin(r->px->store);
	/* obj is only read from here on when the answer is the stored text */
	int rc = rstore_create(r->px, r->res, r->ns, name, obj, !r->as_scale && !r->want_table);
	if (rc == 0 && !r->res->group[0] && strcmp(r->res->kind, "Namespace") == 0)
		ns_created(r->px, name);
	if (rc == 0)
		rc = store_txn_commit(r->px->store);
	else
		store_txn_rollback(r->px->store);
	if (rc < 0)
		reply_errno(r, rc, name);
	else
		reply_created(r, obj);
out:
	json_decref(obj);
}

/* ---- UPDATE ----------------------------------------------------------- */

static bool being_deleted_and_finalized(const json_t *obj)
{
	return obj_str(obj, "metadata.deletionTimestamp") &&
	       json_array_size(obj_get(obj, "metadata.finalizers")) == 0;
}

static void finish_namespace_if_done(struct req *r, json_t *obj);

/* A resourceVersion of "0": what kube's versioner reads as no version. */
static bool rv_is_zero(const char *rv)
{
	return *rv && rv[strspn(rv, "0")] == '\0';
}

/*
 * The write half shared by PUT, PATCH, status, scale and delete-marking:
 * `obj` (borrowed, modified) replaces `old`. Keeps server metadata, bumps
 * generation on spec changes, applies defaults, validates, records managed
 * fields (unless `tracked`), honours dryRun and finalization, and replies.
 */
static void write_update(struct req *r, const json_t *old, json_t *obj, bool tracked, int code)
{
	int64_t old_rv = obj_rv(old);
	const char *body_rv = obj_str(obj, "metadata.resourceVersion");
	/* "0" is no version: an unconditional write (kube's APIObjectVersioner
	 * parses it as 0, which the generic store's Update takes as unset) */
	if (body_rv && *body_rv && !rv_is_zero(body_rv) && strtoll(body_rv, NULL, 10) != old_rv) {
		reply_errno(r, -ESTALE, r->name);
		return;
	}
	obj_keep_server_meta(old, obj);
	json_object_set(obj_meta(obj), "resourceVersion",
			json_object_get(json_object_get(old, "metadata"), "resourceVersion"));
	write_keep_allocated(r->res, old, obj);
	write_defaults(r->px, r->res, obj);
	if (obj_has_generation(r->res) && obj_spec_changed(old, obj)) {
		json_int_t g = json_integer_value(obj_get(old, "metadata.generation"));
		json_object_set_new(obj_meta(obj), "generation", json_integer(g + 1));
	}
	if (write_validate(r, obj, old) < 0)
		return;
	if (!tracked)
		handle_track_fields(r, old, obj, "unknown");
	if (obj_same(old, obj)) {
		reply_object(r, 200, (json_t *)old);
		return;
	}
	if (r->q.dry_run) {
		reply_object(r, code, obj);
		return;
	}
	int rc;
	if (being_deleted_and_finalized(obj) &&
	    !(r->res->group[0] == '\0' && strcmp(r->res->kind, "Namespace") == 0)) {
		json_t *last = NULL;
		rc = rstore_delete(r->px, r->res, r->ns, r->name, old_rv, &last);
		if (rc == 0) {
			reply_object(r, code, last);
			json_decref(last);
			return;
		}
	} else {
		rc = rstore_update(r->px, r->res, r->ns, r->name, obj, old_rv);
	}
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		return;
	}
	if (r->res->group[0] == '\0' && strcmp(r->res->kind, "Namespace") == 0)
		finish_namespace_if_done(r, obj);
	reply_object(r, code, obj);
}

static void finish_namespace_if_done(struct req *r, json_t *obj)
{
	if (obj_str(obj, "metadata.deletionTimestamp"))
		r->px->api->ns_pending = true;
}

/* spec[key] of obj: that of `from` (when obj lacks it only, if `missing`). */
static void spec_from(json_t *obj, const json_t *from, const char *key, bool missing)
{
	json_t *spec = json_object_get(obj, "spec");
	json_t *v = json_object_get(json_object_get(from, "spec"), key);
	if (!json_is_object(spec) || (missing && json_object_get(spec, key)))
		return;
	if (v)
		json_object_set(spec, key, v);
	else
		json_object_del(spec, key);
}

/* Subresource semantics: /status changes only status; the main resource
 * ignores status when the kind has a status subresource. A pod's
 * /ephemeralcontainers changes only its ephemeral containers, which the pod
 * itself keeps (kube refuses the change there; it is ignored here), and a
 * pod keeps the priority its admission gave it when an update leaves it
 * out (kube's Priority plugin on update). */
/*
 * A syncing tenant's pod runs on the host: its phase and container states
 * are the host's, which the syncer copies into the store (not through this
 * API). A tenant's write to pods/status keeps them as they were, so that it
 * changes neither what the policy and ResourceQuotas count (a pod the
 * tenant marked Succeeded still holds its GPUs on the host) nor what the
 * host runs; its other status fields (conditions for readiness gates...)
 * are taken.
 */
static void host_owned_status(json_t *obj, const json_t *old)
{
	static const char *const keys[] = {"phase", "containerStatuses", "initContainerStatuses",
					   "ephemeralContainerStatuses"};
	const json_t *os = json_object_get(old, "status");
	json_t *ns = json_object_get(obj, "status");
	if (!json_is_object(ns)) {
		json_object_set_new(obj, "status", os ? json_deep_copy(os) : json_object());
		return;
	}
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(os, keys[i]);
		if (v)
			json_object_set(ns, keys[i], v);
		else
			json_object_del(ns, keys[i]);
	}
}

static void merge_by_sub(struct req *r, const json_t *old, json_t *obj)
{
	bool pod = r->res->group[0] == '\0' && strcmp(r->res->plural, "pods") == 0;
	if (pod && r->sub && strcmp(r->sub, "ephemeralcontainers") == 0) {
		json_t *n = json_deep_copy(old);
		json_t *rv = obj_get(obj, "metadata.resourceVersion");
		spec_from(n, obj, "ephemeralContainers", false);
		if (rv) /* the caller's, for the conflict check */
			json_object_set(obj_meta(n), "resourceVersion", rv);
		else
			json_object_del(obj_meta(n), "resourceVersion");
		json_object_clear(obj);
		json_object_update(obj, n);
		json_decref(n);
		return;
	}
	if (pod && !r->sub) {
		spec_from(obj, old, "ephemeralContainers", false);
		spec_from(obj, old, "priority", true);
		spec_from(obj, old, "preemptionPolicy", true);
	}
	if (pod && r->sub && strcmp(r->sub, "status") == 0 && r->px->api->host_sync)
		host_owned_status(obj, old);
	if (r->sub && strcmp(r->sub, "status") == 0) {
		const char *keys[] = {"spec", "data", "stringData", "type", "immutable"};
		for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
			json_t *v = json_object_get(old, keys[i]);
			if (v)
				json_object_set(obj, keys[i], v);
			else
				json_object_del(obj, keys[i]);
		}
		json_t *om = json_object_get(old, "metadata");
		json_t *m = obj_meta(obj);
		const char *mk[] = {"labels", "annotations", "finalizers", "ownerReferences"};
		for (size_t i = 0; i < KB_ARRAY_SIZE(mk); i++) {
			json_t *v = json_object_get(om, mk[i]);
			if (v)
				json_object_set(m, mk[i], v);
			else
				json_object_del(m, mk[i]);
		}
	} else if (r->res->has_status && resource_sub(r->res, "status")) {
		json_t *v = json_object_get(old, "status");
		if (v)
			json_object_set(obj, "status", v);
		else
			json_object_del(obj, "status");
	}
}

static int load_old(struct req *r, json_t **old)
{
	int rc = rstore_get(r->px, r->res, r->ns, r->name, old);
	if (rc < 0)
		reply_errno(r, rc, r->name);
	return rc;
}

static void update_scale(struct req *r, const json_t *old, const json_t *scale)
{
	json_t *rep = obj_get(scale, "spec.replicas");
	if (!json_is_integer(rep) || json_integer_value(rep) < 0) {
		reply_invalid(r, "Scale", r->name,
			      json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueInvalid", "message",
					"Invalid value: must be greater than or equal to 0",
					"field", "spec.replicas"));
		return;
	}
	const char *srv = obj_str(scale, "metadata.resourceVersion");
	if (srv && *srv && strtoll(srv, NULL, 10) != obj_rv(old)) {
		reply_errno(r, -ESTALE, r->name);
		return;
	}
	json_t *obj = json_deep_copy(old);
	json_object_set(json_object_get(obj, "spec"), "replicas", rep);
	json_object_del(obj_meta(obj), "resourceVersion");
	handle_write_scale(r, old, obj);
	json_decref(obj);
}

void handle_write_scale(struct req *r, const json_t *old, json_t *obj)
{
	r->as_scale = true;
	write_update(r, old, obj, false, 200);
}

/* kube's generic store for a kind whose strategy refuses unconditional
 * updates: a PUT without metadata.resourceVersion is Invalid, the kind
 * named by its resource ("validatingadmissionpolicies.admissionregistration.k8s.io")
 * and the version as Go's %#v of a uint64 (0x0). */
static int check_conditional(struct req *r, const json_t *obj)
{
	const char *rv = obj_str(obj, "metadata.resourceVersion");
	if (!r->res->conditional_update || (rv && *rv && !rv_is_zero(rv)))
		return 0;
	const char *msg = "Invalid value: 0x0: must be specified for an update";
	struct kb_buf m = {0};
	kb_buf_printf(&m, "%s%s%s \"%s\" is invalid: metadata.resourceVersion: %s", r->res->plural,
		      r->res->group[0] ? "." : "", r->res->group, r->name, msg);
	json_t *d =
	    json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}", "name", r->name, "group",
		      r->res->group, "kind", r->res->plural, "causes", "reason",
		      "FieldValueInvalid", "message", msg, "field", "metadata.resourceVersion");
	reply_status(r, 422, "Invalid", m.data, d);
	kb_buf_free(&m);
	return -EINVAL;
}

static void handle_update(struct req *r)
{
	json_t *obj = NULL, *old = NULL;
	if (!r->name || !(r->res->verbs & VERB_UPDATE)) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	if (r->sub && strcmp(r->sub, "scale") == 0) {
		if (decode_body(r, &obj) < 0)
			return;
		if (load_old(r, &old) == 0)
			update_scale(r, old, obj);
		goto out;
	}
	if (decode_body(r, &obj) < 0 || check_type_meta(r, obj) < 0 || check_fields(r, obj) < 0 ||
	    check_namespace(r, obj) < 0)
		goto out;
	const char *bname = obj_str(obj, "metadata.name");
	if (!bname || strcmp(bname, r->name) != 0) {
		reply_statusf(r, 400, "BadRequest",
			      "the name of the object (%s) does not match the name on the URL (%s)",
			      bname ? bname : "", r->name);
		goto out;
	}
	if (load_old(r, &old) < 0 || check_conditional(r, obj) < 0)
		goto out;
	merge_by_sub(r, old, obj);
	write_update(r, old, obj, false, 200);
out:
	json_decref(obj);
	json_decref(old);
}

/* ---- PATCH ------------------------------------------------------------ */

static int parse_patch_body(struct req *r, json_t **out)
{
	json_error_t je;
	json_t *p = kb_json_loadb(r->http->body, r->http->body_len, 0, &je);
	if (!p) {
		reply_statusf(r, 400, "BadRequest", "error decoding patch: %s", je.text);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

static int patch_errno(struct req *r, int rc, const char *err)
{
	if (rc == -EINVAL)
		reply_status(r, 400, "BadRequest", err, NULL);
	else if (rc == -EDOM)
		reply_status(r, 422, "Invalid", err, NULL);
	else if (rc == -EBUSY)
		reply_status(r, 409, "Conflict", err, NULL);
	else
		reply_errno(r, rc, r->name);
	return rc;
}

/* kube's structuredMergeManager.Apply: an applied configuration is of the
 * resource's version and carries no managedFields. */
static int check_apply_patch(struct req *r, const json_t *patch)
{
	char gv[128];
	gv_string(r->res, gv, sizeof(gv));
	const char *av = json_string_value(json_object_get(patch, "apiVersion"));
	json_t *mf = json_object_get(json_object_get(patch, "metadata"), "managedFields");
	if (av && *av && strcmp(av, gv) != 0) {
		reply_statusf(
		    r, 400, "BadRequest",
		    "Incorrect version specified in apply patch. Specified patch version: "
		    "%s, expected: %s",
		    av, gv);
		return -EINVAL;
	}
	if (mf && !json_is_null(mf)) {
		reply_status(r, 400, "BadRequest", "metadata.managedFields must be nil", NULL);
		return -EINVAL;
	}
	return 0;
}

static void apply_create(struct req *r, json_t *patch)
{
	char ts[40], err[1024] = "";
	json_t *obj = NULL;
	if (check_type_meta(r, patch) < 0 || check_fields(r, patch) < 0)
		return;
	obj_default_keys(r->res, patch);
	int rc = patch_apply(NULL, patch, r->res->proto, r->q.field_manager, r->q.force,
			     now_str(r, ts, sizeof(ts)), &obj, NULL, err, sizeof(err));
	if (rc < 0) {
		patch_errno(r, rc, err);
		return;
	}
	json_object_set_new(obj_meta(obj), "name", json_string(r->name));
	if (check_namespace(r, obj) < 0 ||
	    (r->res->namespaced && ns_check_writable(r, r->ns, r->name) < 0))
		goto out;
	obj_init_create(r->res, obj, r->now);
	write_defaults(r->px, r->res, obj);
	if (write_validate(r, obj, NULL) < 0)
		goto out;
	if (r->q.dry_run) {
		reply_object(r, 201, obj);
		goto out;
	}
	rc = rstore_create(r->px, r->res, r->ns, r->name, obj, false);
	if (rc < 0)
		reply_errno(r, rc, r->name);
	else
		reply_object(r, 201, obj);
out:
	json_decref(obj);
}

static void handle_patch(struct req *r)
{
	json_t *patch = NULL, *old = NULL, *res = NULL;
	char err[1024] = "", ts[40];
	int rc;
	if (!r->name || !(r->res->verbs & VERB_PATCH)) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	const char *ct = content_type(r);
	bool is_apply = ct_is(ct, "application/apply-patch+yaml");
	bool is_smp = ct_is(ct, "application/strategic-merge-patch+json");
	bool is_merge = ct_is(ct, "application/merge-patch+json");
	bool is_json = ct_is(ct, "application/json-patch+json");
	if (!is_apply && !is_smp && !is_merge && !is_json) {
		reply_statusf(
		    r, 415, "UnsupportedMediaType",
		    "the body of the request was in an unknown format - accepted media types "
		    "include: application/json-patch+json, application/merge-patch+json, "
		    "application/apply-patch+yaml, application/strategic-merge-patch+json");
		return;
	}
	if (is_smp && !r->res->proto) {
		char gv[128];
		gv_string(r->res, gv, sizeof(gv));
		reply_statusf(r, 415, "UnsupportedMediaType",
			      "the body of the request was in an unknown format - accepted media "
			      "types include: application/json-patch+json, "
			      "application/merge-patch+json, application/apply-patch+yaml");
		return;
	}
	if (is_apply && (!r->q.field_manager || !*r->q.field_manager)) {
		reply_status(r, 400, "BadRequest", "PATCH /apply requires fieldManager to be set",
			     NULL);
		return;
	}
	if (parse_patch_body(r, &patch) < 0 ||
	    (is_apply && !r->sub && check_apply_patch(r, patch) < 0))
		goto out;
	kb_debug("proxy", "req %llu: %s patch: %.*s", (unsigned long long)r->http->id, ct,
		 (int)(r->http->body_len > 2000 ? 2000 : r->http->body_len), r->http->body);
	rc = rstore_get(r->px, r->res, r->ns, r->name, &old);
	if (rc == -ENOENT && is_apply && !r->sub) {
		apply_create(r, patch);
		goto out;
	}
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		goto out;
	}
	bool scale = r->sub && strcmp(r->sub, "scale") == 0;
	json_t *target = scale ? scale_view_workload(old) : json_incref(old);
	const char *msg = scale ? "k8s.io.api.autoscaling.v1.Scale" : r->res->proto;
	if (is_apply && !scale && json_is_object(patch))
		obj_default_keys(r->res, patch);
	if (is_merge)
		rc = patch_merge(target, patch, &res);
	else if (is_json)
		rc = patch_json(target, patch, &res, err, sizeof(err));
	else if (is_smp)
		rc = patch_strategic(target, patch, msg, &res, err, sizeof(err));
	else
		rc = patch_apply_sub(target, patch, msg, r->q.field_manager, r->sub, r->q.force,
				     now_str(r, ts, sizeof(ts)), &res, NULL, err, sizeof(err));
	json_decref(target);
	if (rc < 0) {
		patch_errno(r, rc, err[0] ? err : "invalid patch");
		goto out;
	}
	if (!json_is_object(res)) {
		reply_status(r, 400, "BadRequest", "the patch did not produce an object", NULL);
		goto out;
	}
	if (scale) {
		update_scale(r, old, res);
		goto out;
	}
	if ((is_smp && write_patch_types(r, patch, res) < 0) || check_type_meta(r, res) < 0 ||
	    check_fields(r, res) < 0)
		goto out;
	merge_by_sub(r, old, res);
	write_update(r, old, res, is_apply, 200);
out:
	json_decref(patch);
	json_decref(old);
	json_decref(res);
}

/* ---- DELETE ----------------------------------------------------------- */

struct delete_opts {
	long grace; /* -1: the object's default */
	const char *propagation;
	const char *pre_uid, *pre_rv;
	bool dry_run;
	json_t *doc;
};

static int opts_from_doc(struct req *r, struct delete_opts *o);

static int parse_delete_opts(struct req *r, struct delete_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->grace = r->q.grace_period;
	o->propagation = r->q.propagation_policy;
	o->dry_run = r->q.dry_run;
	if (r->http->body_len == 0)
		return 0;
	json_error_t je;
	o->doc = kb_json_loadb(r->http->body, r->http->body_len, 0, &je);
	if (!json_is_object(o->doc)) {
		reply_statusf(r, 400, "BadRequest", "invalid DeleteOptions: %s", je.text);
		return -EINVAL;
	}
	return opts_from_doc(r, o);
}

/* The fields of a DeleteOptions document o->doc over the query's. */
static int opts_from_doc(struct req *r, struct delete_opts *o)
{
	json_t *g = json_object_get(o->doc, "gracePeriodSeconds");
	if (json_is_integer(g))
		o->grace = (long)json_integer_value(g);
	const char *p = json_string_value(json_object_get(o->doc, "propagationPolicy"));
	if (p)
		o->propagation = p;
	json_t *pre = json_object_get(o->doc, "preconditions");
	o->pre_uid = json_string_value(json_object_get(pre, "uid"));
	o->pre_rv = json_string_value(json_object_get(pre, "resourceVersion"));
	json_t *dr = json_object_get(o->doc, "dryRun");
	if (json_array_size(dr) && json_string_value(json_array_get(dr, 0)) &&
	    strcmp(json_string_value(json_array_get(dr, 0)), "All") == 0)
		o->dry_run = true;
	if (o->propagation && strcmp(o->propagation, "Background") != 0 &&
	    strcmp(o->propagation, "Foreground") != 0 && strcmp(o->propagation, "Orphan") != 0) {
		reply_invalid(r, "DeleteOptions", "",
			      json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueNotSupported",
					"message",
					"Unsupported value: supported values: \"Foreground\", "
					"\"Background\", \"Orphan\"",
					"field", "propagationPolicy"));
		return -EINVAL;
	}
	return 0;
}

static int check_preconditions(struct req *r, const struct delete_opts *o, const json_t *obj,
			       bool reply)
{
	char qn[300];
	reply_resource_name(r->res, qn, sizeof(qn));
	const char *uid = obj_str(obj, "metadata.uid");
	const char *rv = obj_str(obj, "metadata.resourceVersion");
	if (o->pre_uid && uid && strcmp(o->pre_uid, uid) != 0) {
		if (reply)
			reply_statusf(r, 409, "Conflict",
				      "Operation cannot be fulfilled on %s \"%s\": Precondition "
				      "failed: UID in precondition: %s, UID in object meta: %s",
				      qn, obj_str(obj, "metadata.name"), o->pre_uid, uid);
		return -ESTALE;
	}
	if (o->pre_rv && rv && strcmp(o->pre_rv, rv) != 0) {
		if (reply)
			reply_statusf(r, 409, "Conflict",
				      "Operation cannot be fulfilled on %s \"%s\": Precondition "
				      "failed: ResourceVersion in precondition: %s, "
				      "ResourceVersion in object meta: %s",
				      qn, obj_str(obj, "metadata.name"), o->pre_rv, rv);
		return -ESTALE;
	}
	return 0;
}

static bool is_kind(const struct proxy_resource *res, const char *group, const char *kind)
{
	return strcmp(res->group, group) == 0 && strcmp(res->kind, kind) == 0;
}

/* A pod bound to a node terminates gracefully (its kubelet, here the
 * syncer, removes it); anything else goes at once. */
static long pod_grace(const struct delete_opts *o, const json_t *obj)
{
	if (!obj_str(obj, "spec.nodeName") || !*obj_str(obj, "spec.nodeName"))
		return 0;
	const char *phase = obj_str(obj, "status.phase");
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return 0;
	if (o->grace >= 0)
		return o->grace;
	json_t *g = obj_get(obj, "spec.terminationGracePeriodSeconds");
	return json_is_integer(g) ? (long)json_integer_value(g) : 30;
}

/*
 * Deletes (or marks for deletion) one object. Returns 0 with *result (new
 * ref) set to what the client sees, or a negative errno (already answered
 * when `reply`).
 */
static int delete_write(struct req *r, const struct delete_opts *o, json_t *obj, json_t **result);

static int delete_one(struct req *r, const struct delete_opts *o, json_t *obj, json_t **result)
{
	if (check_preconditions(r, o, obj, true) < 0)
		return -ESTALE;
	int wrc = vap_admit(r, "DELETE", NULL, obj);
	if (wrc < 0)
		return wrc;
	wrc = webhook_delete(r, obj, o->doc);
	if (wrc)
		return wrc > 0 ? -EINPROGRESS : wrc;
	return delete_write(r, o, obj, result);
}

int handle_delete_evicted(struct req *r, const json_t *doc, const char *pre_rv, bool dry_run,
			  json_t *pod)
{
	struct delete_opts o;
	memset(&o, 0, sizeof(o));
	o.grace = -1;
	o.doc = json_is_object(doc) ? json_deep_copy(doc) : NULL;
	int rc = o.doc ? opts_from_doc(r, &o) : 0;
	if (pre_rv)
		o.pre_rv = pre_rv;
	o.dry_run = o.dry_run || dry_run;
	json_t *result = NULL;
	if (rc == 0)
		rc = check_preconditions(r, &o, pod, true) < 0 ? -ESTALE
							       : delete_write(r, &o, pod, &result);
	json_decref(result);
	json_decref(o.doc);
	return rc;
}

/* The write of a delete that its admission allowed. */
static int delete_write(struct req *r, const struct delete_opts *o, json_t *obj, json_t **result)
{
	const char *name = obj_str(obj, "metadata.name");
	const char *ns = obj_str(obj, "metadata.namespace");
	bool is_ns = is_kind(r->res, "", "Namespace");
	long grace = is_kind(r->res, "", "Pod") ? pod_grace(o, obj) : 0;
	if (is_kind(r->res, "apiextensions.k8s.io", "CustomResourceDefinition"))
		crd_before_delete(obj);
	bool finalizers = proxy_propagation_finalizer(o->propagation, obj) ||
			  json_array_size(obj_get(obj, "metadata.finalizers")) > 0;
	/* a second delete may shorten the grace period; 0 (a kubelet confirming
	 * that the containers stopped) removes a pod being deleted */
	if (obj_str(obj, "metadata.deletionTimestamp") &&
	    !(grace == 0 && o->grace == 0 && !finalizers)) {
		*result = json_incref(obj);
		return 0;
	}
	if (is_ns || finalizers || grace > 0) {
		json_t *upd = json_deep_copy(obj);
		char ts[40];
		kb_time_rfc3339(r->now + grace, ts, sizeof(ts));
		json_object_set_new(obj_meta(upd), "deletionTimestamp", json_string(ts));
		json_object_set_new(obj_meta(upd), "deletionGracePeriodSeconds",
				    json_integer(grace));
		if (is_ns)
			obj_set_str(upd, "status.phase", "Terminating");
		int rc = 0;
		if (!o->dry_run)
			rc = rstore_update(r->px, r->res, ns, name, upd, obj_rv(obj));
		if (rc < 0) {
			json_decref(upd);
			reply_errno(r, rc, name);
			return rc;
		}
		if (is_ns)
			r->px->api->ns_pending = true;
		*result = upd;
		return 0;
	}
	if (o->dry_run) {
		*result = json_incref(obj);
		return 0;
	}
	int rc = rstore_delete(r->px, r->res, ns, name, obj_rv(obj), result);
	if (rc < 0)
		reply_errno(r, rc, name);
	return rc;
}

static const char *const protected_ns[] = {"default", "kube-system", "kube-public", NULL};

static void handle_delete(struct req *r)
{
	struct delete_opts o;
	json_t *obj = NULL, *result = NULL;
	if (!(r->res->verbs & VERB_DELETE) || r->sub) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	if (parse_delete_opts(r, &o) < 0)
		goto out;
	if (load_old(r, &obj) < 0)
		goto out;
	if (is_kind(r->res, "", "Namespace")) {
		for (int i = 0; protected_ns[i]; i++) {
			if (strcmp(r->name, protected_ns[i]) == 0) {
				reply_statusf(r, 403, "Forbidden",
					      "namespaces \"%s\" is forbidden: this namespace may "
					      "not be deleted",
					      r->name);
				goto out;
			}
		}
	}
	if (delete_one(r, &o, obj, &result) == 0)
		reply_object(r, 200, result);
out:
	json_decref(o.doc);
	json_decref(obj);
	json_decref(result);
}

static void handle_deletecollection(struct req *r)
{
	struct delete_opts o;
	struct filter f;
	if (!(r->res->verbs & VERB_DELETECOLLECTION)) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	if (parse_delete_opts(r, &o) < 0)
		return;
	if (req_filter_parse(r, &f) < 0) {
		json_decref(o.doc);
		return;
	}
	struct store_list_req lr = {.res = r->res->store_key,
				    .ns = r->res->namespaced ? r->ns : NULL,
				    .filter = req_filter_match,
				    .filter_arg = &f};
	struct store_list_result res = {0};
	int rc = rstore_list(r->px, r->res, &lr, &res);
	req_filter_free(&f);
	if (rc < 0) {
		reply_errno(r, rc, NULL);
		json_decref(o.doc);
		return;
	}
	/* each object's DELETE webhooks first (served again after them) */
	if (webhook_delete_collection(r, res.items, o.doc) != 0) {
		json_decref(res.items);
		free(res.next);
		json_decref(o.doc);
		return;
	}
	json_t *deleted = json_array(), *refusal = NULL;
	size_t i;
	json_t *item;
	store_txn_begin(r->px->store);
	json_array_foreach (res.items, i, item) {
		json_t *out = NULL;
		const json_t *no = webhook_collection_refusal(r, item);
		if (no) { /* kube's deletecollection ends with the first error */
			if (!refusal)
				refusal = json_deep_copy(no);
			continue;
		}
		if (is_kind(r->res, "", "Namespace")) {
			const char *n = obj_str(item, "metadata.name");
			bool prot = false;
			for (int k = 0; protected_ns[k]; k++)
				prot |= strcmp(n, protected_ns[k]) == 0;
			if (prot)
				continue;
		}
		struct delete_opts oo = o;
		oo.pre_uid = oo.pre_rv = NULL;
		if (delete_one(r, &oo, item, &out) < 0)
			break;
		json_array_append_new(deleted, out);
	}
	if (!r->http) {
		store_txn_rollback(r->px->store);
		goto out;
	}
	rc = store_txn_commit(r->px->store);
	if (rc < 0) {
		reply_errno(r, rc, NULL);
		goto out;
	}
	if (refusal) {
		json_int_t code = json_integer_value(json_object_get(refusal, "code"));
		reply_json(r, code >= 400 ? (int)code : 400, refusal);
		goto out;
	}
	char gv[128], rvs[32];
	gv_string(r->res, gv, sizeof(gv));
	snprintf(rvs, sizeof(rvs), "%lld", (long long)store_rev(r->px->store));
	json_t *list = json_pack("{s:s,s:s,s:{s:s},s:O}", "kind", r->res->list_kind, "apiVersion",
				 gv, "metadata", "resourceVersion", rvs, "items", deleted);
	reply_json(r, 200, list);
	json_decref(list);
out:
	json_decref(refusal);
	json_decref(deleted);
	json_decref(res.items);
	free(res.next);
	json_decref(o.doc);
}

/* ---- dispatch --------------------------------------------------------- */

static bool sub_allowed(struct req *r)
{
	if (!r->sub)
		return true;
	const struct proxy_subresource *s = resource_sub(r->res, r->sub);
	if (s)
		return true;
	/* kube's generic 404 carries empty details (kubectl debug reads them) */
	reply_status(r, 404, "NotFound", "the server could not find the requested resource",
		     json_object());
	return false;
}

static void dispatch(struct req *r);

void handle_resource(struct req *r)
{
	r->resume = handle_resource; /* a request parked in its webhooks comes back here */
	if (r->res->crd && crdconv_begin(r))
		return; /* answered, or parked in a conversion webhook */
	dispatch(r);
	crdconv_end(r);
}

static void dispatch(struct req *r)
{
	const char *m = r->http->method;
	if (r->sub && subres_handle(r))
		return;
	if (!sub_allowed(r))
		return;
	if (r->res->serve) {
		r->res->serve(r);
		return;
	}
	if (!r->res->stored) {
		virtual_handle(r);
		return;
	}
	if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0) {
		if (r->name)
			handle_get(r);
		else if (r->q.watch)
			watch_start(r);
		else
			handle_list(r);
	} else if (strcmp(m, "POST") == 0) {
		handle_create(r);
	} else if (strcmp(m, "PUT") == 0) {
		handle_update(r);
	} else if (strcmp(m, "PATCH") == 0) {
		handle_patch(r);
	} else if (strcmp(m, "DELETE") == 0) {
		if (r->name)
			handle_delete(r);
		else
			handle_deletecollection(r);
	} else {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
	}
}
