/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /metrics: kube-apiserver's request metrics for what Kubicle has
 * (apiserver_request_total, _duration_seconds, _sli_duration_seconds,
 * response sizes, in-flight and long-running requests, watch events,
 * stored objects), the process collector's metrics, and Kubicle's own
 * (kubicle_*: store commit latency, the syncer's through a hook), in the
 * Prometheus text format 0.0.4.
 *
 * DESIGN: one series per label set (verb, dry_run, group, version,
 * resource, subresource, scope) in an open-addressing table that only
 * grows; a series holds its counts per response code, its histograms and
 * its long-running gauge. Label values come from the resource table (or a
 * fixed list of non-resource paths), never from the raw path, so the set
 * is bounded; unknown paths count under empty labels. Recording a request
 * hashes a few short strings and bumps counters: no allocation but for the
 * first request of a label set (or a code new to it). Series live as long
 * as the proxy (as kube keeps a series once seen); a CRD's series outlive
 * its row (their strings are copies).
 *
 * Verbs and scopes follow kube's endpoints/metrics: GET or LIST by scope,
 * WATCH for watch=true, APPLY for an apply patch, CONNECT for the log,
 * exec, attach, portforward and proxy subresources, else the HTTP method
 * (a DELETE of a collection is DELETE, as kube's cleanVerb reports it);
 * scope "resource" when the request names an object or creates one,
 * "namespace", "cluster", or "" for non-resource paths. Watches and
 * connections are long-running: apiserver_longrunning_requests while open,
 * apiserver_request_total and _duration_seconds when they end, never the
 * SLI histogram or the in-flight gauge (kube attaches neither to them).
 *
 * Threading: loop thread only.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/prom.h"
#include "lib/util.h"
#include "proxy/core/core.h"

static const double DURATION_BOUNDS[] = {0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8,
					 1.0,   1.25,  1.5,  2,   3,   4,   5,   6,
					 8,     10,    15,   20,  30,  45,  60};
static const double SLI_BOUNDS[] = {0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
				    4,    5,   6,   8,   10,  15,  20,  30,   45,  60};
static const double SIZE_BOUNDS[] = {1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
#define NDUR  KB_ARRAY_SIZE(DURATION_BOUNDS)
#define NSLI  KB_ARRAY_SIZE(SLI_BOUNDS)
#define NSIZE KB_ARRAY_SIZE(SIZE_BOUNDS)

enum pverb {
	PV_GET,
	PV_LIST,
	PV_WATCH,
	PV_POST,
	PV_PUT,
	PV_PATCH,
	PV_APPLY,
	PV_DELETE,
	PV_CONNECT,
	PV_OTHER
};
static const char *const verb_names[] = {"GET",   "LIST",  "WATCH",  "POST",    "PUT",
					 "PATCH", "APPLY", "DELETE", "CONNECT", "other"};
enum pscope { PS_NONE, PS_RESOURCE, PS_NAMESPACE, PS_CLUSTER };
static const char *const scope_names[] = {"", "resource", "namespace", "cluster"};

struct code_count {
	int code;
	uint64_t n;
};

struct prom_series {
	uint32_t hash;
	uint8_t verb, scope;
	bool dry_run;
	bool lr_seen; /* has been long-running: its gauge is written */
	const char *group, *version, *resource, *sub; /* in strs */
	struct code_count *codes;
	size_t ncodes;
	uint64_t dur[NDUR + 1], sli[NSLI + 1], size[NSIZE + 1];
	double dur_sum, sli_sum, size_sum;
	int64_t longrunning;
	char strs[];
};

/* apiserver_watch_events_total{group,version,kind}: one counter per row
 * kind, found once per watch. */
struct watch_kind {
	struct watch_kind *next;
	uint64_t n;
	const char *group, *version, *kind;
	char strs[];
};

enum { KIND_RO, KIND_MUT };

/* A request handed over to a stream of its own (prom_handoff), until the
 * HTTP layer says it ended. */
struct handoff {
	struct handoff *next, *prev;
	struct prom *pm;
	kb_http_req_t *http;
	struct prom_series *s;
	int64_t recv_us;
};

struct prom {
	struct prom_series **slots; /* open addressing, power of two */
	size_t cap, n;
	struct watch_kind *kinds;
	struct handoff *handoffs;
	int64_t inflight[2];
	int64_t max_now[2], max_last[2]; /* this second's and the last second's peaks */
	double start_time;
	/* writers of the upper layers' metric families (prom_add_source), and
	 * the embedder's (proxy_set_prom) after everything */
	struct {
		proxy_prom_fn fn;
		void *arg;
	} sources[PROM_SOURCES];
	size_t nsources;
	proxy_prom_fn fn;
	void *arg;
};

/* ---- series -------------------------------------------------------------- */

static uint32_t hash_str(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return (h ^ 0xff) * 16777619u; /* separator */
}

struct key {
	uint8_t verb, scope;
	bool dry_run;
	const char *group, *version, *resource, *sub;
};

static uint32_t key_hash(const struct key *k)
{
	uint32_t h = 2166136261u ^ (uint32_t)(k->verb | k->scope << 4 | k->dry_run << 7);
	h = hash_str(h, k->group);
	h = hash_str(h, k->version);
	h = hash_str(h, k->resource);
	return hash_str(h, k->sub);
}

static bool key_eq(const struct prom_series *s, uint32_t h, const struct key *k)
{
	return s->hash == h && s->verb == k->verb && s->scope == k->scope &&
	       s->dry_run == k->dry_run && strcmp(s->resource, k->resource) == 0 &&
	       strcmp(s->sub, k->sub) == 0 && strcmp(s->group, k->group) == 0 &&
	       strcmp(s->version, k->version) == 0;
}

static struct prom_series *series_new(const struct key *k, uint32_t h)
{
	size_t lg = strlen(k->group) + 1, lv = strlen(k->version) + 1, lr = strlen(k->resource) + 1,
	       ls = strlen(k->sub) + 1;
	struct prom_series *s = calloc(1, sizeof(*s) + lg + lv + lr + ls);
	if (!s)
		return NULL;
	s->hash = h;
	s->verb = k->verb;
	s->scope = k->scope;
	s->dry_run = k->dry_run;
	char *p = s->strs;
	s->group = memcpy(p, k->group, lg);
	s->version = memcpy(p += lg, k->version, lv);
	s->resource = memcpy(p += lv, k->resource, lr);
	s->sub = memcpy(p + lr, k->sub, ls);
	return s;
}

static int grow(struct prom *pm)
{
	size_t cap = pm->cap ? pm->cap * 2 : 256;
	struct prom_series **slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < pm->cap; i++) {
		struct prom_series *s = pm->slots[i];
		if (!s)
			continue;
		size_t j = s->hash & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = s;
	}
	free(pm->slots);
	pm->slots = slots;
	pm->cap = cap;
	return 0;
}

/* The series of k, made on first use; NULL when out of memory. */
static struct prom_series *series_get(struct prom *pm, const struct key *k)
{
	uint32_t h = key_hash(k);
	if (pm->cap) {
		for (size_t j = h & (pm->cap - 1); pm->slots[j]; j = (j + 1) & (pm->cap - 1))
			if (key_eq(pm->slots[j], h, k))
				return pm->slots[j];
	}
	if ((pm->n + 1) * 2 > pm->cap && grow(pm) < 0)
		return NULL;
	struct prom_series *s = series_new(k, h);
	if (!s)
		return NULL;
	size_t j = h & (pm->cap - 1);
	while (pm->slots[j])
		j = (j + 1) & (pm->cap - 1);
	pm->slots[j] = s;
	pm->n++;
	return s;
}

static void count_code(struct prom_series *s, int code)
{
	for (size_t i = 0; i < s->ncodes; i++) {
		if (s->codes[i].code == code) {
			s->codes[i].n++;
			return;
		}
	}
	struct code_count *c = realloc(s->codes, (s->ncodes + 1) * sizeof(*c));
	if (!c)
		return;
	s->codes = c;
	s->codes[s->ncodes++] = (struct code_count){code, 1};
}

/* ---- a request's labels --------------------------------------------------- */

static bool is_seg(const struct req *r, int i, const char *s)
{
	return r->nsegs > i && strcmp(r->segs[i], s) == 0;
}

/* The fixed path a non-resource request is counted under ("" when unknown:
 * such requests count under empty labels). */
static const char *nonresource_path(const struct req *r)
{
	if (r->nsegs == 0)
		return "/";
	static const char *const fixed[] = {"healthz", "livez", "readyz", "version", "metrics"};
	static const char *const paths[] = {"/healthz", "/livez", "/readyz", "/version",
					    "/metrics"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(fixed); i++)
		if (is_seg(r, 0, fixed[i]))
			return paths[i];
	if (is_seg(r, 0, "openapi"))
		return is_seg(r, 1, "v2") ? "/openapi/v2" : is_seg(r, 1, "v3") ? "/openapi/v3" : "";
	if (is_seg(r, 0, "api"))
		return "/api";
	if (is_seg(r, 0, "apis"))
		return "/apis";
	return "";
}

static bool is_connect_sub(const char *sub)
{
	return strcmp(sub, "log") == 0 || strcmp(sub, "exec") == 0 || strcmp(sub, "attach") == 0 ||
	       strcmp(sub, "portforward") == 0 || strcmp(sub, "proxy") == 0;
}

static uint8_t method_verb(const char *m, uint8_t scope)
{
	if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
		return scope == PS_RESOURCE || scope == PS_NONE ? PV_GET : PV_LIST;
	return strcmp(m, "POST") == 0     ? PV_POST
	       : strcmp(m, "PUT") == 0    ? PV_PUT
	       : strcmp(m, "PATCH") == 0  ? PV_PATCH
	       : strcmp(m, "DELETE") == 0 ? PV_DELETE
					  : PV_OTHER;
}

static void key_of(const struct req *r, struct key *k)
{
	const char *m = r->http ? r->http->method : "GET";
	*k = (struct key){.group = "", .version = "", .resource = "", .sub = ""};
	k->dry_run = r->q.dry_run;
	if (!r->res) {
		k->sub = nonresource_path(r);
		k->scope = PS_NONE;
		k->verb = method_verb(m, PS_NONE);
		if (r->q.watch && k->verb == PV_GET)
			k->verb = PV_WATCH;
		return;
	}
	k->group = r->res->group;
	k->version = r->res->version;
	k->resource = r->res->plural;
	if (r->sub && resource_sub(r->res, r->sub))
		k->sub = r->sub;
	k->scope = r->name || strcmp(m, "POST") == 0 ? PS_RESOURCE
		   : r->ns                           ? PS_NAMESPACE
						     : PS_CLUSTER;
	k->verb = method_verb(m, k->scope);
	if (r->q.watch && (k->verb == PV_GET || k->verb == PV_LIST))
		k->verb = PV_WATCH;
	if (k->verb == PV_PATCH && r->http) {
		const char *ct = kb_http_req_header(r->http, "content-type");
		if (ct && strncmp(ct, "application/apply-patch+yaml", 28) == 0)
			k->verb = PV_APPLY;
	}
	if (*k->sub && is_connect_sub(k->sub))
		k->verb = PV_CONNECT;
}

static double since_s(int64_t recv_us)
{
	int64_t now = kb_now_us();
	return now > recv_us ? (double)(now - recv_us) / 1e6 : 0;
}

/* ---- recording -------------------------------------------------------------- */

static void inflight_add(struct prom *pm, int kind, int d)
{
	pm->inflight[kind] += d;
	if (pm->inflight[kind] > pm->max_now[kind])
		pm->max_now[kind] = pm->inflight[kind];
}

void prom_begin(struct req *r)
{
	struct prom *pm = r->px->prom;
	if (!pm)
		return;
	const char *m = r->http->method;
	int kind = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0 ? KIND_RO : KIND_MUT;
	r->prom_state = kind == KIND_RO ? PROM_READONLY : PROM_MUTATING;
	inflight_add(pm, kind, 1);
}

static void leave_inflight(struct prom *pm, struct req *r)
{
	if (r->prom_state == PROM_READONLY)
		inflight_add(pm, KIND_RO, -1);
	else if (r->prom_state == PROM_MUTATING)
		inflight_add(pm, KIND_MUT, -1);
}

static void observe(const double *bounds, size_t n, uint64_t *counts, double *sum, double v)
{
	counts[kb_prom_bucket(bounds, n, v)]++;
	*sum += v;
}

void prom_take(struct req *r, size_t bytes, struct prom_rec *out)
{
	*out = (struct prom_rec){.recv_us = r->recv_us, .bytes = bytes};
	struct prom *pm = r->px ? r->px->prom : NULL;
	if (!pm || r->prom_state == PROM_DONE || r->prom_state == PROM_LONGRUNNING)
		return;
	leave_inflight(pm, r);
	r->prom_state = PROM_DONE;
	struct key k;
	key_of(r, &k);
	out->s = series_get(pm, &k);
	/* the SLI histogram has no dry_run label: a dry run's goes to its
	 * sibling without */
	out->sli = out->s;
	if (out->s && k.dry_run) {
		k.dry_run = false;
		out->sli = series_get(pm, &k);
	}
}

void prom_record(const struct prom_rec *rec, int code)
{
	struct prom_series *s = rec->s;
	if (!s)
		return;
	double secs = since_s(rec->recv_us);
	count_code(s, code);
	observe(DURATION_BOUNDS, NDUR, s->dur, &s->dur_sum, secs);
	if (rec->sli)
		observe(SLI_BOUNDS, NSLI, rec->sli->sli, &rec->sli->sli_sum, secs);
	if (s->verb == PV_GET || s->verb == PV_LIST)
		observe(SIZE_BOUNDS, NSIZE, s->size, &s->size_sum, (double)rec->bytes);
}

/* A long-running request ended: out of the gauge, counted with its code and
 * its whole duration (never in the SLI histogram, as kube). */
static void longrun_finish(struct prom_series *s, int code, int64_t recv_us)
{
	s->longrunning--;
	count_code(s, code);
	observe(DURATION_BOUNDS, NDUR, s->dur, &s->dur_sum, since_s(recv_us));
}

void prom_longrun_begin(struct req *r)
{
	struct prom *pm = r->px->prom;
	if (!pm || r->prom_state == PROM_LONGRUNNING || r->prom_state == PROM_DONE)
		return;
	leave_inflight(pm, r);
	r->prom_state = PROM_LONGRUNNING;
	struct key k;
	key_of(r, &k);
	r->prom_series = series_get(pm, &k);
	if (r->prom_series) {
		r->prom_series->longrunning++;
		r->prom_series->lr_seen = true;
	}
}

void prom_longrun_end(struct req *r, int code)
{
	if (r->prom_state != PROM_LONGRUNNING)
		return;
	r->prom_state = PROM_DONE;
	struct prom_series *s = r->prom_series;
	r->prom_series = NULL;
	if (s)
		longrun_finish(s, code, r->recv_us);
}

static void handoff_unlink(struct handoff *h)
{
	KB_LIST_UNLINK(h->pm->handoffs, h);
}

static void on_handoff_done(int status, void *arg)
{
	struct handoff *h = arg;
	handoff_unlink(h);
	longrun_finish(h->s, status, h->recv_us);
	free(h);
}

void prom_handoff(struct req *r)
{
	struct prom *pm = r->px->prom;
	prom_longrun_begin(r);
	struct handoff *h = r->prom_series ? calloc(1, sizeof(*h)) : NULL;
	if (!h)
		return; /* counted open until r is freed */
	h->pm = pm;
	h->http = r->http;
	h->s = r->prom_series;
	h->recv_us = r->recv_us;
	KB_LIST_PUSH(pm->handoffs, h);
	r->prom_series = NULL; /* the gauge is the handoff's now */
	r->prom_state = PROM_DONE;
	kb_http_req_on_done(r->http, on_handoff_done, h);
}

void prom_req_free(struct req *r)
{
	struct prom *pm = r->px ? r->px->prom : NULL;
	if (pm && (r->prom_state == PROM_READONLY || r->prom_state == PROM_MUTATING))
		leave_inflight(pm, r);
	if (r->prom_state == PROM_LONGRUNNING && r->prom_series)
		r->prom_series->longrunning--;
	r->prom_state = PROM_DONE;
	r->prom_series = NULL;
}

uint64_t *prom_watch_counter(struct proxy *px, const struct proxy_resource *res)
{
	struct prom *pm = px->prom;
	if (!pm)
		return NULL;
	for (struct watch_kind *w = pm->kinds; w; w = w->next)
		if (strcmp(w->kind, res->kind) == 0 && strcmp(w->group, res->group) == 0 &&
		    strcmp(w->version, res->version) == 0)
			return &w->n;
	size_t lg = strlen(res->group) + 1, lv = strlen(res->version) + 1,
	       lk = strlen(res->kind) + 1;
	struct watch_kind *w = calloc(1, sizeof(*w) + lg + lv + lk);
	if (!w)
		return NULL;
	char *p = w->strs;
	w->group = memcpy(p, res->group, lg);
	w->version = memcpy(p += lg, res->version, lv);
	w->kind = memcpy(p + lv, res->kind, lk);
	w->next = pm->kinds;
	pm->kinds = w;
	return &w->n;
}

void prom_tick(struct proxy *px)
{
	struct prom *pm = px->prom;
	if (!pm)
		return;
	for (int i = 0; i < 2; i++) {
		pm->max_last[i] = pm->max_now[i];
		pm->max_now[i] = pm->inflight[i];
	}
}

/* ---- exposition ----------------------------------------------------------------- */

static size_t labels_of(const struct prom_series *s, const char **l, bool dry_run)
{
	size_t n = 0;
	l[n++] = "verb";
	l[n++] = verb_names[s->verb];
	if (dry_run) {
		l[n++] = "dry_run";
		l[n++] = s->dry_run ? "All" : "";
	}
	l[n++] = "group";
	l[n++] = s->group;
	l[n++] = "version";
	l[n++] = s->version;
	l[n++] = "resource";
	l[n++] = s->resource;
	l[n++] = "subresource";
	l[n++] = s->sub;
	l[n++] = "scope";
	l[n++] = scope_names[s->scope];
	l[n++] = "component";
	l[n++] = "apiserver";
	return n / 2;
}

static void write_requests(struct prom *pm, struct kb_buf *b)
{
	const char *l[22];
	kb_prom_family(
	    b, "apiserver_request_total", "counter",
	    "[STABLE] Counter of apiserver requests broken out for each verb, dry run "
	    "value, group, version, resource, scope, component, and HTTP response code.");
	for (size_t i = 0; i < pm->cap; i++) {
		struct prom_series *s = pm->slots[i];
		for (size_t c = 0; s && c < s->ncodes; c++) {
			char code[16];
			snprintf(code, sizeof(code), "%d", s->codes[c].code);
			size_t n = labels_of(s, l, true);
			l[2 * n] = "code";
			l[2 * n + 1] = code;
			kb_prom_sample(b, "apiserver_request_total", NULL, l, n + 1,
				       (double)s->codes[c].n);
		}
	}
	kb_prom_family(b, "apiserver_request_duration_seconds", "histogram",
		       "[STABLE] Response latency distribution in seconds for each verb, dry run "
		       "value, group, version, resource, subresource, scope and component.");
	for (size_t i = 0; i < pm->cap; i++) {
		struct prom_series *s = pm->slots[i];
		uint64_t total = 0;
		for (size_t j = 0; s && j <= NDUR; j++)
			total += s->dur[j];
		if (total)
			kb_prom_histogram(b, "apiserver_request_duration_seconds", l,
					  labels_of(s, l, true), DURATION_BOUNDS, NDUR, s->dur,
					  s->dur_sum);
	}
	kb_prom_family(b, "apiserver_request_sli_duration_seconds", "histogram",
		       "[ALPHA] Response latency distribution (not counting webhook duration and "
		       "priority & fairness queue wait times) in seconds for each verb, group, "
		       "version, resource, subresource, scope and component.");
	for (size_t i = 0; i < pm->cap; i++) {
		struct prom_series *s = pm->slots[i];
		uint64_t total = 0;
		for (size_t j = 0; s && !s->dry_run && j <= NSLI; j++)
			total += s->sli[j];
		if (total)
			kb_prom_histogram(b, "apiserver_request_sli_duration_seconds", l,
					  labels_of(s, l, false), SLI_BOUNDS, NSLI, s->sli,
					  s->sli_sum);
	}
}

static void write_sizes_and_longrunning(struct prom *pm, struct kb_buf *b)
{
	const char *l[22];
	kb_prom_family(b, "apiserver_response_sizes", "histogram",
		       "[STABLE] Response size distribution in bytes for each group, version, "
		       "verb, resource, subresource, scope and component.");
	for (size_t i = 0; i < pm->cap; i++) {
		struct prom_series *s = pm->slots[i];
		uint64_t total = 0;
		for (size_t j = 0; s && !s->dry_run && j <= NSIZE; j++)
			total += s->size[j];
		if (total)
			kb_prom_histogram(b, "apiserver_response_sizes", l, labels_of(s, l, false),
					  SIZE_BOUNDS, NSIZE, s->size, s->size_sum);
	}
	kb_prom_family(b, "apiserver_longrunning_requests", "gauge",
		       "[STABLE] Gauge of all active long-running apiserver requests broken out by "
		       "verb, group, version, resource, scope and component. Not all requests are "
		       "tracked this way.");
	for (size_t i = 0; i < pm->cap; i++) {
		struct prom_series *s = pm->slots[i];
		if (s && s->lr_seen && !s->dry_run)
			kb_prom_sample(b, "apiserver_longrunning_requests", NULL, l,
				       labels_of(s, l, false), (double)s->longrunning);
	}
}

static void write_inflight_and_watch(struct prom *pm, struct kb_buf *b)
{
	kb_prom_family(b, "apiserver_current_inflight_requests", "gauge",
		       "[STABLE] Maximal number of currently used inflight request limit of this "
		       "apiserver per request kind in last second.");
	static const char *const kinds[] = {"readOnly", "mutating"};
	for (int i = 0; i < 2; i++) {
		const char *l[] = {"request_kind", kinds[i]};
		int64_t v = pm->max_last[i] > pm->max_now[i] ? pm->max_last[i] : pm->max_now[i];
		kb_prom_sample(b, "apiserver_current_inflight_requests", NULL, l, 1, (double)v);
	}
	kb_prom_family(b, "apiserver_watch_events_total", "counter",
		       "[ALPHA] Number of events sent in watch clients");
	for (struct watch_kind *w = pm->kinds; w; w = w->next) {
		const char *l[] = {"group", w->group, "version", w->version, "kind", w->kind};
		kb_prom_sample(b, "apiserver_watch_events_total", NULL, l, 3, (double)w->n);
	}
}

struct count_ctx {
	struct kb_buf *b;
};

/* "apps/deployments" -> deployments.apps; "/pods" -> pods (kube's label).
 * Only keys of served rows are written (bounded). */
static void on_count(const char *key, int64_t count, void *arg)
{
	struct count_ctx *c = arg;
	bool served = false;
	for (size_t i = 0, n = resource_count(); i < n && !served; i++) {
		const struct proxy_resource *res = resource_at(i);
		served = res->stored && strcmp(res->store_key, key) == 0;
	}
	const char *slash = strchr(key, '/');
	if (!served || !slash)
		return;
	char name[300];
	if (slash == key)
		snprintf(name, sizeof(name), "%s", slash + 1);
	else
		snprintf(name, sizeof(name), "%s.%.*s", slash + 1, (int)(slash - key), key);
	const char *l[] = {"resource", name};
	kb_prom_sample(c->b, "apiserver_storage_objects", NULL, l, 1, (double)count);
}

/* Slow watchers closed and store faults, named as kube's
 * apiserver_terminated_watchers_total (cacher, "closed due to
 * unresponsiveness") under kubicle_. */
static void write_faults(struct proxy *px, struct kb_buf *b, const struct store_stats *st)
{
	kb_prom_scalar(b, "kubicle_terminated_watchers_total", "counter",
		       "Watch and other streams closed because their readers fell behind: the "
		       "bytes held for slow readers passed the process's budget.",
		       px->http ? (double)kb_http_streams_cut(px->http) : 0);
	kb_prom_family(b, "kubicle_storage_writes_refused_total", "counter",
		       "Writes the store refused (500 ServerTimeout with Retry-After) while a "
		       "fault stood, by fault: no_space, wal_removed, wal_growing, "
		       "database_removed, revision_lost.");
	for (int i = 0; i < STORE_NFAULTS; i++) {
		const char *l[] = {"reason", STORE_FAULT_REASONS[i]};
		if (i || st->refused[i])
			kb_prom_sample(b, "kubicle_storage_writes_refused_total", NULL, l, 1,
				       (double)st->refused[i]);
	}
	kb_prom_scalar(b, "kubicle_storage_wal_rebuilds_total", "counter",
		       "Removed WAL files rebuilt from the open database (no commit lost).",
		       (double)st->wal_rebuilds);
	kb_prom_family(b, "kubicle_storage_fault", "gauge",
		       "1 for the fault that makes the store refuse writes now (readyz's etcd "
		       "check fails), 0 for the others.");
	for (int i = 1; i < STORE_NFAULTS; i++) {
		const char *l[] = {"reason", STORE_FAULT_REASONS[i]};
		kb_prom_sample(b, "kubicle_storage_fault", NULL, l, 1, st->fault == i ? 1 : 0);
	}
}

static void write_storage(struct proxy *px, struct kb_buf *b)
{
	kb_prom_family(b, "apiserver_storage_objects", "gauge",
		       "[STABLE] Number of stored objects at the time of last check split by kind. "
		       "In case of a fetching error, the value will be -1.");
	struct count_ctx c = {b};
	if (store_count_each(px->store, on_count, &c) < 0)
		kb_warn("proxy", "metrics: counting stored objects failed");
	struct store_stats st;
	store_stats(px->store, &st);
	kb_prom_family(b, "kubicle_store_commit_duration_seconds", "histogram",
		       "Latency of the store's SQLite commits (a write, a transaction or a group "
		       "commit of one loop iteration's writes) in seconds.");
	kb_prom_histogram(b, "kubicle_store_commit_duration_seconds", NULL, 0, STORE_COMMIT_BOUNDS,
			  STORE_COMMIT_NBOUNDS, st.commits, st.commit_seconds);
	kb_prom_scalar(b, "kubicle_store_watches", "gauge",
		       "Watches open on the store (API watches and in-process watchers).",
		       (double)store_watch_count(px->store));
	kb_prom_scalar(b, "kubicle_store_wal_frames", "gauge",
		       "Frames (pages) in the store's SQLite WAL at its last commit.",
		       (double)st.wal_frames);
	kb_prom_scalar(b, "kubicle_store_wal_restarts_total", "counter",
		       "Times the store's WAL started over after a checkpoint copied it all "
		       "(each pauses writes for one sync of the database file).",
		       (double)st.wal_restarts);
	write_faults(px, b, &st);
}

/* ---- process collector (client_golang's names and help) ------------------- */

/* The fields of /proc/self/stat after the command name (state first), in
 * buf; NULL when unreadable. */
static const char *self_stat(char *buf, size_t len)
{
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold anything but its end */
	return p && p[1] ? p + 2 : NULL;
}

static void write_process(struct prom *pm, struct kb_buf *b)
{
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	unsigned long utime = 0, stime = 0, vsize = 0;
	long rss = 0;
	char buf[1024];
	const char *p = self_stat(buf, sizeof(buf));
	if (p)
		sscanf(
		    p,
		    "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu %*d %*d %*d %*d %*d %*d "
		    "%*u %lu %ld",
		    &utime, &stime, &vsize, &rss);
	kb_prom_scalar(b, "process_cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.",
		       (double)(utime + stime) / (double)tick);
	int fds = 0;
	DIR *d = opendir("/proc/self/fd");
	for (struct dirent *e; d && (e = readdir(d));)
		fds += e->d_name[0] != '.';
	if (d) {
		closedir(d);
		fds--; /* the directory's own descriptor */
	}
	struct rlimit rl = {0};
	getrlimit(RLIMIT_NOFILE, &rl);
	kb_prom_scalar(b, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
		       (double)rl.rlim_cur);
	kb_prom_scalar(b, "process_open_fds", "gauge", "Number of open file descriptors.", fds);
	kb_prom_scalar(b, "process_resident_memory_bytes", "gauge",
		       "Resident memory size in bytes.", (double)rss * page);
	kb_prom_scalar(b, "process_start_time_seconds", "gauge",
		       "Start time of the process since unix epoch in seconds.", pm->start_time);
	kb_prom_scalar(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
		       (double)vsize);
	getrlimit(RLIMIT_AS, &rl);
	kb_prom_scalar(b, "process_virtual_memory_max_bytes", "gauge",
		       "Maximum amount of virtual memory available in bytes.",
		       rl.rlim_cur == RLIM_INFINITY ? 18446744073709551615.0 : (double)rl.rlim_cur);
}

/* The process's start: boot time (/proc/stat btime) plus its start tick. */
static double process_start_time(void)
{
	char buf[1024];
	unsigned long long start = 0;
	double btime = 0;
	const char *p = self_stat(buf, sizeof(buf));
	if (p)
		sscanf(
		    p,
		    "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d "
		    "%llu",
		    &start);
	FILE *f = fopen("/proc/stat", "r");
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %lf", &btime) == 1)
			break;
	if (f)
		fclose(f);
	if (!btime)
		return (double)time(NULL);
	return btime + (double)start / (double)sysconf(_SC_CLK_TCK);
}

void prom_serve(struct req *r)
{
	struct prom *pm = r->px->prom;
	struct kb_buf b = {0};
	if (pm) {
		write_requests(pm, &b);
		write_sizes_and_longrunning(pm, &b);
		write_inflight_and_watch(pm, &b);
		write_storage(r->px, &b);
		for (size_t i = 0; i < pm->nsources; i++)
			pm->sources[i].fn(pm->sources[i].arg, &b);
		write_process(pm, &b);
		if (pm->fn)
			pm->fn(pm->arg, &b);
	}
	reply_text(r, 200, KB_PROM_CONTENT_TYPE, b.data ? b.data : "", b.len);
	kb_buf_free(&b);
}

int prom_start(struct proxy *px)
{
	struct prom *pm = calloc(1, sizeof(*pm));
	if (!pm)
		return -ENOMEM;
	pm->start_time = process_start_time();
	px->prom = pm;
	return 0;
}

void prom_stop(struct proxy *px)
{
	struct prom *pm = px->prom;
	if (!pm)
		return;
	for (size_t i = 0; i < pm->cap; i++) {
		if (pm->slots[i])
			free(pm->slots[i]->codes);
		free(pm->slots[i]);
	}
	free(pm->slots);
	for (struct handoff *h = pm->handoffs, *next; h; h = next) {
		next = h->next;
		kb_http_req_on_done(h->http, NULL, NULL);
		free(h);
	}
	for (struct watch_kind *w = pm->kinds, *next; w; w = next) {
		next = w->next;
		free(w);
	}
	free(pm);
	px->prom = NULL;
}

void proxy_set_prom(proxy_t *px, proxy_prom_fn fn, void *arg)
{
	if (!px->prom)
		return;
	px->prom->fn = fn;
	px->prom->arg = arg;
}

int prom_add_source(struct proxy *px, proxy_prom_fn fn, void *arg)
{
	struct prom *pm = px->prom;
	if (!pm || pm->nsources == PROM_SOURCES)
		return -ENOSPC;
	pm->sources[pm->nsources].fn = fn;
	pm->sources[pm->nsources++].arg = arg;
	return 0;
}
