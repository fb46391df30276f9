/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Health endpoints as kube-apiserver serves them
 * (k8s.io/apiserver/pkg/server/healthz/healthz.go, handleRootHealth and
 * adaptCheckToHandler): GET /readyz runs every check; "ok" when all pass,
 * with ?verbose one "[+]name ok" line each and "readyz check passed";
 * when one fails, always the lines ("[-]name failed: reason withheld": the
 * endpoint is public) and "readyz check failed", status 500. ?exclude=NAME
 * skips a check ("[+]name excluded: ok"). GET /readyz/NAME runs one check:
 * "ok", or 500 "internal server error: REASON".
 *
 * Checks: ping and log always pass. etcd (kube's name, so that probes and
 * dashboards that look for it find it) is the SQLite store's health
 * (store_health: a removed WAL that could not be rebuilt, a WAL that keeps
 * growing, a removed database file): /readyz only. /livez and /healthz
 * leave it out on purpose: a liveness probe that failed on it would have
 * the kubelet restart the server, and a restart loses the commits that a
 * removed WAL still holds in this process (store.h, Health).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "proxy/core/core.h"
#include "proxy/core/health.h"

struct check {
	const char *name;
	bool ready_only; /* /readyz only */
	/* 0, or < 0 with the reason in why */
	int (*run)(struct proxy *px, char *why, size_t len);
};

static int check_pass(struct proxy *px, char *why, size_t len)
{
	(void)px;
	(void)why;
	(void)len;
	return 0;
}

static int check_store(struct proxy *px, char *why, size_t len)
{
	return store_health(px->store, why, len);
}

static const struct check checks[] = {
    {"ping", false, check_pass},
    {"log", false, check_pass},
    {"etcd", true, check_store},
};
#define NCHECKS (sizeof(checks) / sizeof(checks[0]))

static bool applies(const struct check *c, const char *endpoint)
{
	return !c->ready_only || strcmp(endpoint, "readyz") == 0;
}

static void send_body(struct req *r, int code, const struct kb_buf *b)
{
	reply_raw(r, code, "text/plain; charset=utf-8", "X-Content-Type-Options: nosniff\r\n",
		  b->data ? b->data : "", b->len);
}

/* GET /<endpoint>/<name>: one check. */
static void serve_one(struct req *r, const char *endpoint, const char *name)
{
	struct kb_buf b = {0};
	for (size_t i = 0; i < NCHECKS; i++) {
		if (!applies(&checks[i], endpoint) || strcmp(checks[i].name, name) != 0)
			continue;
		char why[256] = "";
		if (checks[i].run(r->px, why, sizeof(why)) < 0) {
			kb_buf_printf(&b, "internal server error: %s\n", why);
			send_body(r, 500, &b);
		} else {
			kb_buf_puts(&b, "ok");
			send_body(r, 200, &b);
		}
		kb_buf_free(&b);
		return;
	}
	kb_buf_puts(&b, "404 page not found\n");
	send_body(r, 404, &b);
	kb_buf_free(&b);
}

struct root_query {
	bool verbose;
	char excluded[NCHECKS]; /* 1: asked to exclude it */
	struct kb_buf unknown;  /* excludes that name no check, quoted */
};

static void parse_root_query(const struct req *r, struct root_query *q)
{
	char *buf = strdup(r->http->query ? r->http->query : ""), *cur = buf, *k, *v;
	while (buf && kb_http_query_next(&cur, &k, &v)) {
		if (strcmp(k, "verbose") == 0) {
			q->verbose = true;
			continue;
		}
		if (strcmp(k, "exclude") != 0)
			continue;
		size_t i = 0;
		while (i < NCHECKS && strcmp(checks[i].name, v) != 0)
			i++;
		if (i < NCHECKS)
			q->excluded[i] = 1;
		else
			kb_buf_printf(&q->unknown, "%s\"%s\"", q->unknown.len ? ", " : "", v);
	}
	free(buf);
}

/* GET /<endpoint>: every check (kube's handleRootHealth). */
static void serve_root(struct req *r, const char *endpoint)
{
	struct root_query q = {0};
	struct kb_buf b = {0};
	bool failed = false;
	parse_root_query(r, &q);
	for (size_t i = 0; i < NCHECKS; i++) {
		const struct check *c = &checks[i];
		char why[256] = "";
		if (!applies(c, endpoint))
			continue;
		if (q.excluded[i]) {
			kb_buf_printf(&b, "[+]%s excluded: ok\n", c->name);
		} else if (c->run(r->px, why, sizeof(why)) < 0) {
			kb_buf_printf(&b, "[-]%s failed: reason withheld\n", c->name);
			kb_info("proxy", "%s: [-]%s failed: %s", endpoint, c->name, why);
			failed = true;
		} else {
			kb_buf_printf(&b, "[+]%s ok\n", c->name);
		}
	}
	if (q.unknown.len)
		kb_buf_printf(&b,
			      "warn: some health checks cannot be excluded: no matches for %s\n",
			      q.unknown.data);
	if (failed) {
		kb_buf_printf(&b, "%s check failed\n", endpoint);
		send_body(r, 500, &b);
	} else if (!q.verbose) {
		struct kb_buf ok = {0};
		kb_buf_puts(&ok, "ok");
		send_body(r, 200, &ok);
		kb_buf_free(&ok);
	} else {
		kb_buf_printf(&b, "%s check passed\n", endpoint);
		send_body(r, 200, &b);
	}
	kb_buf_free(&b);
	kb_buf_free(&q.unknown);
}

void health_serve(struct req *r)
{
	const char *endpoint = r->segs[0];
	if (r->nsegs == 1)
		serve_root(r, endpoint);
	else if (r->nsegs == 2)
		serve_one(r, endpoint, r->segs[1]);
	else
		serve_one(r, endpoint, "");
}
