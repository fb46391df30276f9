/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command line's blocking API client: one libuv loop per client, run
 * until the call in flight is answered (lib/httpc does TLS, credentials
 * and keeps the connection alive between calls).
 */
#include "cmd/hostapi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "lib/httpc.h"
#include "lib/kubeconfig.h"

struct hostapi {
	uv_loop_t loop;
	kb_httpc_t *c;
	uv_timer_t deadline;  /* ends a call at deadline_ms */
	uint64_t deadline_ms; /* uv_hrtime in ms; 0: none (hostapi_set_deadline) */
};

struct call_state {
	bool done;
	int err;
	long status;
	json_t *body;
	kb_httpc_req_t *req;
};

int hostapi_open(const char *kubeconfig, unsigned timeout_ms, hostapi_t **out)
{
	struct kb_kubeconfig_creds cr;
	int rc = kb_kubeconfig_load(kubeconfig, NULL, &cr);
	if (rc < 0)
		return rc;
	struct hostapi *h = calloc(1, sizeof(*h));
	if (!h) {
		kb_kubeconfig_creds_free(&cr);
		return -ENOMEM;
	}
	uv_loop_init(&h->loop);
	uv_timer_init(&h->loop, &h->deadline);
	/* it bounds a call, never keeps the loop in a wait of its own:
	 * hostapi_call runs the loop as it does without it */
	uv_unref((uv_handle_t *)&h->deadline);
	struct kb_httpc_opts o = {.timeout_ms = timeout_ms ? timeout_ms : 10000};
	kb_httpc_opts_from_creds(&o, &cr);
	rc = kb_httpc_new(&h->loop, &o, &h->c);
	kb_kubeconfig_creds_free(&cr);
	if (rc < 0) {
		uv_close((uv_handle_t *)&h->deadline, NULL);
		uv_run(&h->loop, UV_RUN_DEFAULT);
		uv_loop_close(&h->loop);
		free(h);
		return rc;
	}
	*out = h;
	return 0;
}

void hostapi_close(hostapi_t *h)
{
	if (!h)
		return;
	kb_httpc_close(h->c);
	uv_close((uv_handle_t *)&h->deadline, NULL);
	uv_run(&h->loop, UV_RUN_DEFAULT);
	uv_loop_close(&h->loop);
	free(h);
}

static void on_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
		    void *arg)
{
	(void)req;
	struct call_state *cs = arg;
	cs->done = true;
	cs->err = err;
	cs->status = status;
	if (err == 0 && body && len)
		cs->body = json_loadb(body, len, 0, NULL);
}

void hostapi_set_deadline(hostapi_t *h, unsigned in_ms)
{
	h->deadline_ms = in_ms ? uv_hrtime() / 1000000 + in_ms : 0;
}

/* The deadline passed: the call ends as a timeout would end it. */
static void on_deadline(uv_timer_t *t)
{
	struct call_state *cs = t->data;
	if (cs->done)
		return; /* answered in the same loop iteration: req is gone */
	kb_httpc_cancel(cs->req);
	cs->done = true;
	cs->err = -ETIMEDOUT;
}

int hostapi_call(hostapi_t *h, const char *method, const char *path, const json_t *body,
		 long *status, json_t **resp)
{
	struct call_state cs = {0};
	uint64_t now = uv_hrtime() / 1000000;
	if (h->deadline_ms && now >= h->deadline_ms)
		return -ETIMEDOUT;
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	if (body && !text)
		return -ENOMEM;
	struct kb_httpc_call call = {
	    .method = method,
	    .path = path,
	    .content_type = strcmp(method, "PATCH") == 0 ? "application/merge-patch+json" : NULL,
	    .body = text,
	    .body_len = text ? strlen(text) : 0,
	    .on_done = on_done,
	    .arg = &cs};
	kb_httpc_req_t *req = kb_httpc_request(h->c, &call);
	free(text);
	if (!req)
		return -ENOMEM;
	cs.req = req;
	if (h->deadline_ms) {
		/* from the loop's clock, stale when it idled between calls (its
		 * time is left alone: lib/httpc's timers count from it) */
		uint64_t at = uv_now(&h->loop);
		h->deadline.data = &cs;
		uv_timer_start(&h->deadline, on_deadline,
			       h->deadline_ms > at ? h->deadline_ms - at : 0, 0);
	}
	while (!cs.done)
		uv_run(&h->loop, UV_RUN_ONCE);
	uv_timer_stop(&h->deadline);
	if (cs.err < 0) {
		json_decref(cs.body);
		return cs.err;
	}
	*status = cs.status;
	if (resp)
		*resp = cs.body;
	else
		json_decref(cs.body);
	return 0;
}

const char *hostapi_message(const json_t *resp, long status)
{
	const char *m = json_string_value(json_object_get(resp, "message"));
	if (m && *m)
		return m;
	switch (status) {
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "NotFound";
	case 409: return "Conflict";
	default: return "unexpected answer";
	}
}
