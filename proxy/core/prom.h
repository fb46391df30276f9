/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Request metrics for GET /metrics (proxy/core/prom.c), in kube-apiserver's
 * families, and the writers of the upper layers' families.
 * Included through proxy/core/core.h. Loop thread only.
 */
#ifndef KB_PROXY_CORE_PROM_H
#define KB_PROXY_CORE_PROM_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/proxy.h"

struct proxy;
struct req;
struct proxy_resource;

/* prom.c: the request metrics of GET /metrics. prom_begin counts r in
 * flight (at arrival); prom_take and prom_record count its answer (code,
 * body bytes) once;
 * prom_longrun_begin turns it into a long-running request (a watch, a
 * stream or connection handed over) and prom_longrun_end records it when
 * it ends; prom_req_free settles whatever is left when r is freed. */
int prom_start(struct proxy *px);
void prom_stop(struct proxy *px);
void prom_begin(struct req *r);

/* An answer in two steps, as it may wait for the group commit: prom_take
 * leaves the request's in-flight count and finds its series at
 * once; prom_record counts the answer when it is sent, with the code sent
 * (a failed commit's 500) and the time it took (the commit's included). */
struct prom_rec {
	struct prom_series *s, *sli; /* NULL: not counted */
	int64_t recv_us;
	size_t bytes;
};
void prom_take(struct req *r, size_t bytes, struct prom_rec *out);
void prom_record(const struct prom_rec *rec, int code);
void prom_longrun_begin(struct req *r);
void prom_longrun_end(struct req *r, int code);
void prom_req_free(struct req *r);

/* r->http is handed to a stream or connection of its own (pods/log,
 * exec, attach, portforward): long-running until that request ends. Call
 * before r->http is handed over. */
void prom_handoff(struct req *r);

/* The apiserver_watch_events_total counter of res's kind (lives as long as
 * the proxy), or NULL. */
uint64_t *prom_watch_counter(struct proxy *px, const struct proxy_resource *res);

/* Once a second: the in-flight peaks roll over. */
void prom_tick(struct proxy *px);

/* Answers GET /metrics. */
void prom_serve(struct req *r);

/* Adds a writer of an upper layer's metric families to GET /metrics (after
 * the server's own, before the process's), at start: the admission
 * webhooks' (webhook_start). arg must outlive the proxy. 0, or -ENOSPC. */
#define PROM_SOURCES 4
int prom_add_source(struct proxy *px, proxy_prom_fn fn, void *arg);

#endif
