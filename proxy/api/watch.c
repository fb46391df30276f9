/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch streams: a chunked response of newline-delimited events
 * ({"type":"ADDED|MODIFIED|DELETED|BOOKMARK|ERROR","object":...}).
 *
 * DESIGN: a watch owns its request until the stream ends. It starts from a
 * resourceVersion (history replayed by the store), or with synthetic ADDED
 * events for the current objects when the version is "" or "0". Selectors
 * are applied to both the old and the new object so that an object moving
 * into or out of the selection is seen as ADDED or DELETED, as
 * kube-apiserver does. One 1-second tick (proxy.tick) ends streams at their
 * timeoutSeconds and sends bookmarks.
 *
 * Memory: the JSON text of an event is built once and shared by every watch
 * that sends it (kube: cacher.go dispatchEvent, the event's object wrapped
 * in a cachingObject that serialises once); a stream whose reader is slow
 * keeps a reference to it, not a copy (kb_http_stream_send). A watch whose
 * unsent backlog passes WATCH_MAX_BACKLOG is cut, and the HTTP server
 * closes the streams blocked longest once the bytes held for slow readers
 * pass its budget (kb_http_server_opts.stream_budget): as kube's
 * cacheWatcher.add closes a watcher that cannot take an event within the
 * dispatch time budget, the client sees its watch end and watches again
 * from the last resourceVersion it saw. kube has no per-user limit on
 * watches (max-requests-inflight leaves long-running requests out; API
 * Priority and Fairness charges a watch only while it starts), so neither
 * has this server.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/api/api.h"
#include "proxy/model/selector.h"
#include "proxy/validation/validate.h"

#define WATCH_MAX_BACKLOG (16u << 20)
#define BOOKMARK_EVERY_MS 60000u

struct watch {
	struct watch *next, *prev;
	struct req *r;
	store_watch_t *sw;
	struct filter f;
	uint64_t deadline_ms, next_bookmark_ms;
	bool headers_sent;
	bool closing;
	bool starting; /* inside watch_start: it finishes a close */
	bool cut;      /* too slow: the connection closes, dropping its backlog */
	unsigned nhot;
	struct kb_http_hot hot[6]; /* what sending an event touches (warm) */
	uint64_t *events;          /* apiserver_watch_events_total of its kind, or NULL */
};

/* The last event line built, shared by every watch sending that event:
 * {"type":T,"object":...}\n is serialized once per (event, type), and the
 * streams that cannot send it at once hold references to it. */
static struct {
	int64_t rev;
	const json_t *obj;
	const char *type;
	kb_http_shared_t *line;
} enc_cache;

static void enc_cache_clear(void)
{
	kb_http_shared_unref(enc_cache.line);
	enc_cache.line = NULL;
	enc_cache.obj = NULL;
}

/* The shared line of an event (borrowed from the cache), or NULL. */
static kb_http_shared_t *event_line(const struct store_event *ev, const char *type)
{
	if (enc_cache.line && enc_cache.rev == ev->rev && enc_cache.obj == ev->obj &&
	    enc_cache.type == type)
		return enc_cache.line;
	enc_cache_clear();
	struct kb_buf b = {0};
	kb_buf_printf(&b, "{\"type\":\"%s\",\"object\":", type);
	size_t at = b.len;
	if (kb_json_dump(ev->obj, &b) < 0 || b.len == at)
		kb_buf_puts(&b, "{}");
	kb_buf_puts(&b, "}\n");
	enc_cache.line = b.data ? kb_http_shared_new(b.data, b.len) : NULL;
	kb_buf_free(&b);
	enc_cache.rev = ev->rev;
	enc_cache.obj = ev->obj;
	enc_cache.type = type;
	return enc_cache.line;
}

static void unlink_watch(struct watch *w)
{
	struct proxy *px = w->r->px;
	if (w->prev)
		w->prev->next = w->next;
	else if (px->api->watches == w)
		px->api->watches = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->next = w->prev = NULL;
	px->api->nwatches--;
}

/* Ends the stream (when the connection is still there) and frees the watch
 * and, unless the request is still being started, its request. */
static void watch_close(struct watch *w)
{
	if (w->closing)
		return;
	w->closing = true;
	if (w->sw)
		store_unwatch(w->sw);
	w->sw = NULL;
	if (w->starting)
		return; /* watch_start sees `closing` and finishes */
	unlink_watch(w);
	prom_longrun_end(w->r, 200);
	if (w->r->http) {
		kb_http_req_on_abort(w->r->http, NULL, NULL);
		if (w->cut)
			kb_http_stream_cut(w->r->http);
		else
			kb_http_stream_end(w->r->http);
		w->r->http = NULL;
	}
	req_filter_free(&w->f);
	req_free(w->r);
	free(w);
}

/* A watch closed while starting: the stream ends, the request goes back to
 * on_request (which frees it, seeing r->http NULL). */
static void finish_failed_start(struct watch *w)
{
	struct req *r = w->r;
	unlink_watch(w);
	prom_longrun_end(r, 200);
	if (r->http) {
		kb_http_req_on_abort(r->http, NULL, NULL);
		kb_http_stream_end(r->http);
		r->http = NULL;
	}
	req_filter_free(&w->f);
	free(w);
	r->q.watch = false;
}

static void on_abort(kb_http_req_t *http, void *arg)
{
	struct watch *w = arg;
	(void)http;
	w->r->http = NULL;
	watch_close(w);
}

/* After a send: counts it, and cuts a watch whose backlog is too long. */
static int sent(struct watch *w, int rc)
{
	if (rc == 0 && w->events)
		(*w->events)++;
	if (rc == 0 && kb_http_stream_pending(w->r->http) > WATCH_MAX_BACKLOG) {
		kb_warn("watch", "req %llu: client too slow, closing watch",
			(unsigned long long)w->r->http->id);
		w->cut = true;
		return -ENOBUFS;
	}
	return rc;
}

static int send_raw(struct watch *w, const char *data, size_t len)
{
	return sent(w, kb_http_stream_write(w->r->http, data, len));
}

static int send_shared(struct watch *w, kb_http_shared_t *line)
{
	return sent(w, kb_http_stream_send(w->r->http, line));
}

static int send_line(struct watch *w, const char *type, const char *obj_text)
{
	struct kb_buf b = {0};
	kb_buf_printf(&b, "{\"type\":\"%s\",\"object\":", type);
	kb_buf_puts(&b, obj_text);
	kb_buf_puts(&b, "}\n");
	int rc = send_raw(w, b.data, b.len);
	kb_buf_free(&b);
	return rc;
}

static int send_event(struct watch *w, const char *type, const struct store_event *ev)
{
	if (!w->r->want_table) {
		kb_http_shared_t *line = event_line(ev, type);
		return line ? send_shared(w, line) : -ENOMEM;
	}
	w->r->now = time(NULL);
	json_t *items = json_pack("[O]", ev->obj);
	char rv[32];
	snprintf(rv, sizeof(rv), "%lld", (long long)ev->rev);
	json_t *t = table_build(w->r, items, rv, NULL, !w->headers_sent);
	w->headers_sent = true;
	/* kb_json_dump: a row's whole object (includeObject=Object) may carry
	 * a create's fieldsV1 as a raw value (lib/json.h) */
	struct kb_buf text = {0};
	int rc = send_line(w, type, kb_json_dump(t, &text) == 0 && text.data ? text.data : "{}");
	kb_buf_free(&text);
	json_decref(t);
	json_decref(items);
	return rc;
}

static const char *event_type(const struct watch *w, const struct store_event *ev)
{
	bool now = req_filter_match(ev->obj, (void *)&w->f);
	bool before = ev->prev ? req_filter_match(ev->prev, (void *)&w->f) : now;
	if (ev->type == STORE_ADDED)
		return now ? "ADDED" : NULL;
	if (ev->type == STORE_DELETED)
		return before || now ? "DELETED" : NULL;
	if (now && before)
		return "MODIFIED";
	if (now)
		return "ADDED";
	if (before)
		return "DELETED";
	return NULL;
}

/* An event of a row stored in another shape, converted for this watch;
 * -1 when the watch closed (w is gone). */
static int convert_and_send(struct watch *w, const struct store_event *ev)
{
	const struct proxy_resource *res = w->r->res;
	struct store_event cev = *ev;
	cev.obj = json_deep_copy(ev->obj);
	cev.prev = ev->prev ? json_deep_copy(ev->prev) : NULL;
	res->from_storage(res, cev.obj);
	if (cev.prev)
		res->from_storage(res, cev.prev);
	const char *type = event_type(w, &cev);
	int rc = type ? send_event(w, type, &cev) : 0;
	json_decref(cev.obj);
	json_decref(cev.prev);
	if (rc < 0) {
		watch_close(w);
		return -1;
	}
	return 0;
}

static void on_converted_event(struct watch *w, const struct store_event *ev)
{
	convert_and_send(w, ev);
}

static void send_error(struct watch *w, int code, const char *reason, const char *msg);

/* crdconv_watch_event's delivery: the event, its objects converted by the
 * CRD's webhook (crdconv.c), or the webhook's failure (the watch ends with
 * an ERROR event). -1 when the watch closed. */
static int deliver_webhook_converted(void *arg, const struct store_event *ev, const char *fail)
{
	struct watch *w = arg;
	if (w->closing || !w->r->http)
		return -1;
	if (fail) {
		send_error(w, 500, "InternalError", fail);
		watch_close(w);
		return -1;
	}
	return convert_and_send(w, ev);
}

/* Store warm-up (store_watch_set_warm): loads what on_event will touch. */
static void warm(void *arg)
{
	const struct watch *w = arg;
	for (unsigned i = 0; i < w->nhot; i++)
		for (size_t off = 0; off < w->hot[i].len; off += 64)
			__builtin_prefetch((const char *)w->hot[i].p + off);
}

static void on_event(const struct store_event *ev, void *arg)
{
	struct watch *w = arg;
	if (w->closing || !w->r->http)
		return;
	if (crdconv_applies(w->r->res)) { /* a conversion webhook's: in order, later */
		crdconv_watch_event(w->r, ev, deliver_webhook_converted, w);
		return;
	}
	if (w->r->res->from_storage) {
		on_converted_event(w, ev);
		return;
	}
	const char *type = event_type(w, ev);
	if (type && send_event(w, type, ev) < 0)
		watch_close(w);
}

/* An ERROR event of the Status st (stolen). */
static void send_status(struct watch *w, json_t *st)
{
	char *text = json_dumps(st, JSON_COMPACT);
	send_line(w, "ERROR", text ? text : "{}");
	free(text);
	json_decref(st);
}

static void send_error(struct watch *w, int code, const char *reason, const char *msg)
{
	send_status(w, reply_status_object(code, reason, msg, NULL));
}

/* Synthetic ADDED events for what exists now; returns the list revision. */
static int send_initial(struct watch *w, int64_t *rev)
{
	struct req *r = w->r;
	struct store_list_req lr = {.res = r->res->store_key,
				    .ns = r->res->namespaced ? r->ns : NULL,
				    .filter = req_filter_match,
				    .filter_arg = &w->f};
	struct store_list_result res = {0};
	int rc = rstore_list(r->px, r->res, &lr, &res);
	if (rc < 0)
		return rc;
	size_t i;
	json_t *item;
	json_array_foreach (res.items, i, item) {
		struct store_event ev = {.type = STORE_ADDED, .rev = obj_rv(item), .obj = item};
		if ((rc = send_event(w, "ADDED", &ev)) < 0)
			break;
	}
	*rev = res.rev;
	json_decref(res.items);
	free(res.next);
	return rc;
}

/* What a watch request asks for, after kube's defaulting and validation
 * of watch options (SetListOptionsDefaults, validateWatchOptions; the
 * WatchList feature is on, as in 1.33). */
struct watch_opts {
	bool initial;      /* start with ADDED events for the current objects */
	bool end_bookmark; /* then a BOOKMARK marked k8s.io/initial-events-end */
	int64_t since;     /* else: the revision to start after */
	int64_t too_large; /* > 0: a revision newer than the store's (answered in the stream) */
};

static bool is_legacy_rv(const char *rv)
{
	return !rv || !*rv || strcmp(rv, "0") == 0;
}

/* 0, or it has answered (400/422) and returns -EINVAL. */
static int watch_options(struct req *r, struct watch_opts *o)
{
	const char *rv = r->q.resource_version;
	const char *match = r->q.resource_version_match;
	int sie = r->q.send_initial_events;
	if (match && !*match)
		match = NULL;
	if (sie < 0 && !match && is_legacy_rv(rv)) {
		sie = 1; /* a legacy watch from "now" is a WatchList request */
		match = "NotOlderThan";
	}
	json_t *causes = json_array();
	if (sie >= 0 && (!match || strcmp(match, "NotOlderThan") != 0))
		val_add(causes, "FieldValueForbidden", "resourceVersionMatch",
			"sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
	if (match) {
		if (sie < 0)
			val_add(
			    causes, "FieldValueForbidden", "resourceVersionMatch",
			    "resourceVersionMatch is forbidden for watch unless sendInitialEvents "
			    "is provided");
		if (strcmp(match, "NotOlderThan") != 0)
			val_add(causes, "FieldValueNotSupported", "resourceVersionMatch",
				"\"%s\": supported values: \"NotOlderThan\"", match);
		if (r->q.cont && *r->q.cont)
			val_add(causes, "FieldValueForbidden", "resourceVersionMatch",
				"resourceVersionMatch is forbidden when continue is provided");
	}
	if (json_array_size(causes) > 0) {
		reply_list_options_invalid(r, causes);
		return -EINVAL;
	}
	json_decref(causes);
	int64_t want = -1;
	if (!is_legacy_rv(rv)) {
		char *end;
		want = strtoll(rv, &end, 10);
		if (*end || want < 0) {
			reply_statusf(r, 400, "BadRequest", "invalid resource version \"%s\"", rv);
			return -EINVAL;
		}
	}
	int64_t cur = store_rev(r->px->store);
	/* A revision this store has not reached: kube's cacher answers the
	 * watch with an ERROR event, "Too large resource version" (Watch:
	 * waitUntilWatchCacheFreshAndForceAllEvents, then newErrWatcher), so
	 * that the client lists again rather than missing the events between;
	 * here for every watch, as this store never lags behind its writes. */
	o->too_large = want > cur ? want : 0;
	o->initial = sie == 1;
	o->end_bookmark = sie == 1 && r->q.allow_bookmarks;
	o->since = sie == 0 && want < 0 ? cur : want < 0 ? 0 : want;
	return 0;
}

static void send_bookmark(struct watch *w, int64_t rev, bool initial_end);

void watch_start(struct req *r)
{
	struct watch *w = calloc(1, sizeof(*w));
	if (!w) {
		reply_errno(r, -ENOMEM, NULL);
		r->q.watch = false;
		return;
	}
	w->r = r;
	struct watch_opts o;
	if (watch_options(r, &o) < 0) {
		free(w);
		r->q.watch = false;
		return;
	}
	if (req_filter_parse(r, &w->f) < 0) {
		free(w);
		r->q.watch = false;
		return;
	}
	int64_t since = o.since;
	struct proxy *px = r->px;
	w->next = px->api->watches;
	if (w->next)
		w->next->prev = w;
	px->api->watches = w;
	px->api->nwatches++;
	uint64_t now = kb_now_ms();
	long timeout = r->q.timeout_seconds;
	if (timeout <= 0)
		timeout = 1800 + (random() % 1800);
	w->deadline_ms = now + (uint64_t)timeout * 1000u;
	w->next_bookmark_ms = r->q.allow_bookmarks ? now + BOOKMARK_EVERY_MS : UINT64_MAX;
	kb_http_req_on_abort(r->http, on_abort, w);
	kb_http_stream_long(r->http);
	struct kb_buf hdr = {0};
	audit_id_header(r, &hdr);
	kb_http_stream_start(r->http, 200,
			     r->want_table ? "application/json;as=Table;v=v1;g=meta.k8s.io"
					   : "application/json",
			     hdr.data);
	kb_buf_free(&hdr);
	prom_longrun_begin(r);
	w->events = prom_watch_counter(px, r->res);
	w->hot[0] = (struct kb_http_hot){r, 64}; /* http, px, ... */
	w->hot[1] = (struct kb_http_hot){&r->res, 1};
	w->hot[2] = (struct kb_http_hot){&r->want_table, 1};
	w->nhot = 3 + (unsigned)kb_http_stream_hot(r->http, w->hot + 3, 3);
	w->starting = true;
	if (o.too_large) {
		send_status(w, handle_too_large_status(o.too_large, store_rev(px->store)));
		watch_close(w);
	}
	if (!w->closing && o.initial && send_initial(w, &since) < 0)
		watch_close(w);
	if (!w->closing && o.end_bookmark)
		send_bookmark(w, since, true);
	if (!w->closing && since < store_compacted_rev(px->store)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "too old resource version: %lld (%lld)",
			 (long long)since, (long long)store_compacted_rev(px->store));
		send_error(w, 410, "Expired", msg);
		watch_close(w);
	}
	if (!w->closing) {
		int rc = store_watch(px->store, r->res->store_key,
				     r->res->namespaced ? r->ns : NULL, since, on_event, w, &w->sw);
		if (rc == 0 && w->sw)
			store_watch_set_warm(w->sw, warm);
		if (rc < 0 && !w->closing) {
			send_error(w, rc == -ERANGE ? 410 : 500,
				   rc == -ERANGE ? "Expired" : "InternalError",
				   rc == -ERANGE ? "too old resource version" : "watch failed");
			watch_close(w);
		}
	}
	w->starting = false;
	if (w->closing)
		finish_failed_start(w);
}

/* A BOOKMARK at revision rev; after the initial events (at the revision
 * they were listed at) it is annotated k8s.io/initial-events-end. */
static void send_bookmark(struct watch *w, int64_t rev, bool initial_end)
{
	char text[640];
	char gv[128];
	const struct proxy_resource *res = w->r->res;
	if (res->group[0])
		snprintf(gv, sizeof(gv), "%s/%s", res->group, res->version);
	else
		snprintf(gv, sizeof(gv), "%s", res->version);
	snprintf(
	    text, sizeof(text),
	    "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%lld\"%s}}",
	    res->kind, gv, (long long)rev,
	    initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}" : "");
	if (send_line(w, "BOOKMARK", text) < 0)
		watch_close(w);
}

void watch_tick(struct proxy *px)
{
	uint64_t now = kb_now_ms();
	struct watch *w = px->api->watches, *next;
	for (; w; w = next) {
		next = w->next;
		if (now >= w->deadline_ms) {
			watch_close(w);
		} else if (now >= w->next_bookmark_ms && !crdconv_watch_busy(w->r)) {
			/* a bookmark never overtakes events still being converted */
			w->next_bookmark_ms = now + BOOKMARK_EVERY_MS;
			send_bookmark(w, store_rev(px->store), false);
		}
	}
}

void watch_close_all(struct proxy *px)
{
	while (px->api->watches)
		watch_close(px->api->watches);
	enc_cache_clear();
}
