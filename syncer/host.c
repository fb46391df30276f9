/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The syncer's view of the host API: JSON calls and informers (list, then
 * watch from the list's resourceVersion; a watch that ends normally is
 * resumed from the last resourceVersion seen; 410 Gone or any error leads,
 * after a jittered exponential backoff, to a fresh list). Each informer
 * keeps the last known copy of every object, so a relist can be compared
 * with the tenant side in one pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

#define BACKOFF_MIN_MS  200
#define BACKOFF_MAX_MS  10000
#define WATCH_TIMEOUT_S 290
#define MAX_LINE        (16u << 20)

/* ---- calls ---------------------------------------------------------------------- */

struct call {
	host_done_cb cb;
	void *arg;
	bool want_body; /* GET: the caller reads the answer */
	kb_httpc_t *client;
	struct call *prev, *next; /* calls in flight (host_calls_drop) */
};

static struct call *in_flight; /* loop thread only */

static void call_unlink(struct call *c)
{
	KB_LIST_UNLINK(in_flight, c);
}

void host_calls_drop(kb_httpc_t *client)
{
	for (struct call *c = in_flight, *next; c; c = next) {
		next = c->next;
		if (c->client == client) {
			call_unlink(c);
			free(c);
		}
	}
}

static void on_call_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
			 void *arg)
{
	struct call *c = arg;
	call_unlink(c);
	json_t *doc = NULL;
	/* a write's 2xx answer (the whole object) is not read by any caller:
	 * not parsing it saves a JSON parse per synced pod */
	if (!err && body && len && (c->want_body || status >= 300))
		doc = kb_json_loadb(body, len, 0, NULL);
	if (c->cb)
		c->cb(err, status, doc, c->arg);
	json_decref(doc);
	free(c);
}

int host_call(kb_httpc_t *c, const char *method, const char *path, const json_t *body,
	      host_done_cb cb, void *arg)
{
	return host_call_ct(c, method, path, NULL, body, cb, arg);
}

int host_call_ct(kb_httpc_t *c, const char *method, const char *path, const char *ctype,
		 const json_t *body, host_done_cb cb, void *arg)
{
	struct call *cl = calloc(1, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	cl->cb = cb;
	cl->arg = arg;
	cl->want_body = strcmp(method, "GET") == 0;
	cl->client = c;
	KB_LIST_PUSH(in_flight, cl); /* linked first: a request may end at once */
	/* kb_json_dump: json_dumps(JSON_COMPACT)'s bytes at a fraction of its
	 * cost (a pod per synced pod); a body it cannot write goes empty, as
	 * json_dumps's NULL did */
	struct kb_buf txt = {0};
	if (body && kb_json_dump(body, &txt) < 0)
		kb_buf_free(&txt);
	struct kb_httpc_call call = {.method = method,
				     .path = path,
				     .content_type = ctype,
				     .body = txt.data,
				     .body_len = txt.len,
				     .on_done = on_call_done,
				     .arg = cl};
	kb_httpc_req_t *r = kb_httpc_request(c, &call);
	kb_buf_free(&txt);
	if (!r) {
		call_unlink(cl);
		free(cl);
		return -ENOMEM;
	}
	return 0;
}

/* ---- informer ------------------------------------------------------------------- */

struct host_informer {
	uv_loop_t *loop;
	kb_httpc_t *c;
	struct host_informer_opts o;
	char *path, *selector;
	uv_timer_t retry;
	kb_httpc_req_t *req;
	json_t *cache; /* name -> object */
	char rv[64];
	struct kb_buf line;
	unsigned backoff_ms;
	size_t restarts; /* host_informer_restarts */
	bool up, relist_wanted;
};

static void do_list(struct host_informer *in);
static void do_watch(struct host_informer *in);

static void set_state(struct host_informer *in, bool up)
{
	if (in->up == up)
		return;
	in->up = up;
	if (in->o.on_state)
		in->o.on_state(up, in->o.arg);
}

bool host_informer_up(const struct host_informer *in)
{
	return in && in->up;
}

size_t host_informer_restarts(const struct host_informer *in)
{
	return in ? in->restarts : 0;
}

static void on_retry(uv_timer_t *t)
{
	struct host_informer *in = t->data;
	if (in->relist_wanted || !in->rv[0])
		do_list(in);
	else
		do_watch(in);
}

/* Full jitter around the current backoff: [0.5, 1.5) times it. */
static void backoff(struct host_informer *in, bool relist)
{
	in->relist_wanted = in->relist_wanted || relist;
	in->restarts++;
	unsigned b = in->backoff_ms ? in->backoff_ms : BACKOFF_MIN_MS;
	unsigned wait = b / 2 + (unsigned)(((uint64_t)rand() * b) / ((uint64_t)RAND_MAX + 1));
	in->backoff_ms = b * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : b * 2;
	uv_timer_start(&in->retry, on_retry, wait, 0);
}

static void build_path(struct host_informer *in, char *buf, size_t len, bool watch)
{
	int n = snprintf(buf, len, "%s?", in->path);
	if (in->selector)
		n += snprintf(buf + n, len - (size_t)n, "labelSelector=%s&", in->selector);
	if (watch)
		snprintf(buf + n, len - (size_t)n,
			 "watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%s",
			 WATCH_TIMEOUT_S, in->rv);
}

static void cache_put(struct host_informer *in, const char *name, json_t *obj)
{
	if (in->o.no_cache)
		return;
	json_object_set_new(in->cache, name,
			    in->o.cache_view ? in->o.cache_view(obj) : json_incref(obj));
}

static void apply_event(struct host_informer *in, const char *type, json_t *obj)
{
	const char *rv =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
	if (rv)
		snprintf(in->rv, sizeof(in->rv), "%s", rv);
	if (strcmp(type, "BOOKMARK") == 0)
		return;
	const char *name =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	if (!name)
		return;
	if (strcmp(type, "DELETED") == 0)
		json_object_del(in->cache, name);
	else
		cache_put(in, name, obj);
	in->o.on_event(type, obj, in->o.arg);
}

/* ---- watch lines without managedFields ---------------------------------------- */

size_t syncer_strip_managed_fields(char *s, size_t n)
{
	size_t v, from, to;
	if (!kb_json_text_member(s, n, 0, "object", NULL, &v, NULL) ||
	    !kb_json_text_member(s, n, v, "metadata", NULL, &v, NULL) ||
	    !kb_json_text_member(s, n, v, "managedFields", &from, &v, &to))
		return n;
	while (to < n && strchr(" \t\r\n", s[to]))
		to++;
	if (to < n && s[to] == ',') { /* a member follows: drop our comma */
		to++;
	} else { /* the last member: drop the comma before it, if any */
		size_t j = from;
		while (j > 0 && strchr(" \t\r\n", s[j - 1]))
			j--;
		if (j > 0 && s[j - 1] == ',')
			from = j - 1;
	}
	memmove(s + from, s + to, n - to);
	return n - (to - from);
}

/* Returns false when the watch must end (410 or a broken stream). */
static bool on_line(struct host_informer *in, char *s, size_t n)
{
	json_t *ev = kb_json_loadb(s, syncer_strip_managed_fields(s, n), 0, NULL);
	const char *type = json_string_value(json_object_get(ev, "type"));
	json_t *obj = json_object_get(ev, "object");
	bool ok = true;
	if (!type || !json_is_object(obj)) {
		ok = false;
	} else if (strcmp(type, "ERROR") == 0) {
		long code = (long)json_integer_value(json_object_get(obj, "code"));
		kb_info("syncer", "watch %s: error %ld, relisting", in->path, code);
		in->relist_wanted = true;
		ok = false;
	} else {
		apply_event(in, type, obj);
	}
	json_decref(ev);
	return ok;
}

static bool on_watch_data(kb_httpc_req_t *req, const char *data, size_t len, void *arg)
{
	struct host_informer *in = arg;
	/* the bytes held before hold no newline (every complete line went) */
	size_t start = 0, from = in->line.len;
	if (in->line.len + len > MAX_LINE || kb_buf_append(&in->line, data, len) < 0)
		return false;
	const char *nl;
	while (from < in->line.len &&
	       (nl = memchr(in->line.data + from, '\n', in->line.len - from))) {
		size_t i = (size_t)(nl - in->line.data);
		if (i > start && !on_line(in, in->line.data + start, i - start)) {
			in->line.len = 0;
			return false;
		}
		start = from = i + 1;
	}
	memmove(in->line.data, in->line.data + start, in->line.len - start);
	in->line.len -= start;
	return true;
}

static void on_watch_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
			  void *arg)
{
	struct host_informer *in = arg;
	in->req = NULL;
	in->line.len = 0;
	if (in->relist_wanted || status == 410) {
		backoff(in, true);
		return;
	}
	if (!err && status == 200) { /* the server ended the watch: resume */
		in->backoff_ms = 0;
		do_watch(in);
		return;
	}
	kb_info("syncer", "watch %s ended: %s (HTTP %ld); retrying", in->path,
		err ? strerror(-err) : "error", status);
	set_state(in, false);
	backoff(in, true);
}

static void do_watch(struct host_informer *in)
{
	char path[1024];
	build_path(in, path, sizeof(path), true);
	struct kb_httpc_call call = {.method = "GET",
				     .path = path,
				     .stream = true,
				     .on_data = on_watch_data,
				     .on_done = on_watch_done,
				     .arg = in};
	in->req = kb_httpc_request(in->c, &call);
	if (!in->req)
		backoff(in, false);
}

static void on_list_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
			 void *arg)
{
	struct host_informer *in = arg;
	in->req = NULL;
	json_t *doc = !err && status == 200 ? kb_json_loadb(body, len, 0, NULL) : NULL;
	json_t *items = json_object_get(doc, "items");
	const char *rv =
	    json_string_value(json_object_get(json_object_get(doc, "metadata"), "resourceVersion"));
	if (!json_is_array(items) || !rv) {
		kb_info("syncer", "list %s failed: %s (HTTP %ld)", in->path,
			err ? strerror(-err) : "bad answer", status);
		json_decref(doc);
		set_state(in, false);
		backoff(in, true);
		return;
	}
	snprintf(in->rv, sizeof(in->rv), "%s", rv);
	json_object_clear(in->cache);
	size_t i;
	json_t *o;
	json_array_foreach (items, i, o) {
		const char *name =
		    json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
		if (name)
			cache_put(in, name, o);
	}
	in->relist_wanted = false;
	in->backoff_ms = 0;
	set_state(in, true);
	if (in->o.on_synced)
		in->o.on_synced(items, in->o.arg);
	json_decref(doc);
	do_watch(in);
}

static void do_list(struct host_informer *in)
{
	char path[1024];
	build_path(in, path, sizeof(path), false);
	struct kb_httpc_call call = {
	    .method = "GET", .path = path, .on_done = on_list_done, .arg = in};
	in->req = kb_httpc_request(in->c, &call);
	if (!in->req)
		backoff(in, true);
}

int host_informer_start(uv_loop_t *loop, kb_httpc_t *c, const struct host_informer_opts *o,
			struct host_informer **out)
{
	struct host_informer *in = calloc(1, sizeof(*in));
	if (!in)
		return -ENOMEM;
	in->loop = loop;
	in->c = c;
	in->o = *o;
	in->path = strdup(o->path);
	in->selector = o->label_selector ? strdup(o->label_selector) : NULL;
	in->cache = json_object();
	uv_timer_init(loop, &in->retry);
	in->retry.data = in;
	*out = in;
	do_list(in);
	return 0;
}

void host_informer_relist(struct host_informer *in)
{
	if (in->req) {
		kb_httpc_cancel(in->req);
		in->req = NULL;
	}
	uv_timer_stop(&in->retry);
	do_list(in);
}

static void on_informer_closed(uv_handle_t *h)
{
	struct host_informer *in = h->data;
	json_decref(in->cache);
	kb_buf_free(&in->line);
	free(in->path);
	free(in->selector);
	free(in);
}

void host_informer_stop(struct host_informer *in)
{
	if (in->req)
		kb_httpc_cancel(in->req);
	in->req = NULL;
	uv_close((uv_handle_t *)&in->retry, on_informer_closed);
}

json_t *host_informer_cache(struct host_informer *in)
{
	return in->cache;
}
