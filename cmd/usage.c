/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kubicle usage [TENANT...] [--since T] [--until T]
 *                [--by tenant|namespace|queue|pod|node] [--prices FILE]
 *                [--share-idle] [-o table|json|csv]`
 *
 * Reads the allocation ledger of every tenant under KUBICLE_HOME (each
 * store opened read-only: a WAL reader beside the running tenant) and
 * reports, for the window [since, until): GPU-hours held, their cost at
 * the price file's rates, the share of the host's GPU capacity, and idle
 * capacity (capacity x time - all tenants' allocations), shown apart or
 * shared pro rata to cost (--share-idle, as Kubecost's shareIdle).
 *
 * DESIGN
 * Capacity: every tenant's syncer records the GPU nodes it sees
 * (syncer/ledger.c); the records are merged by node uid: at each second a
 * node's capacity is that of the record starting last among those covering
 * it (the latest observation of a change wins; copies of one fact are the
 * same record). An open record (a node still there, a pod still holding)
 * lasts until now when its store's "seen" mark is recent (its syncer is
 * live, at most SEEN_FRESH seconds ago), else until that mark: a stopped
 * or killed tenant's view ends where its evidence ends. Tenants given on
 * the command line select the rows shown; capacity and idle are always
 * the whole host's (every tenant's allocations count against it).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/home.h"
#include "cmd/usage.h"
#include "cmd/users.h"
#include "lib/json.h"
#include "lib/util.h"
#include "store/store.h"
#include "syncer/syncer.h"

/* A store whose seen mark is this recent belongs to a live syncer (it
 * marks every 30 s: syncer.c's resync). */
#define SEEN_FRESH 90

enum by { BY_TENANT, BY_NAMESPACE, BY_QUEUE, BY_POD, BY_NODE };
static const char *const by_names[] = {"tenant", "namespace", "queue", "pod", "node"};

struct usage_args {
	const char **tenants; /* selected (argv), n_tenants of them; none: all */
	int n_tenants;
	int64_t since, until, now;
	enum by by;
	const char *prices_file;
	const char *out; /* table json csv */
	const char *chart;
	bool share_idle;
};

struct prices {
	json_t *models; /* model -> price per GPU-hour */
	double dflt;
	char currency[16];
	bool set;
};

struct acc {
	const struct usage_args *a;
	const struct prices *p;
	const char *tenant;
	bool shown;          /* the tenant's rows are reported */
	int64_t seen;        /* the store's seen mark */
	bool now_live;       /* it is recent: open rows last until now */
	json_t *groups;      /* key -> {seconds, cost, labels...} */
	json_t *model_alloc; /* model -> GPU-seconds allocated (every tenant) */
	json_t *node_alloc;  /* node name -> GPU-seconds allocated */
	json_t *nodes;       /* node uid -> [[start, end, gpus, model, name]...] */
	json_t *series;      /* chart: tenant -> {bucket -> GPU-seconds} */
	double allocated;    /* GPU-seconds, every tenant */
	double idle_cost;    /* report(): idle capacity's cost */
	double all_cost;     /* report(): every tenant's allocations' cost */
};

static double price_of(const struct prices *p, const char *model)
{
	json_t *v = model && *model ? json_object_get(p->models, model) : NULL;
	return v ? json_number_value(v) : p->dflt;
}

/* The price file's figures (syncer_prices_load: one parser for the
 * reports and the tenants' own GPUUsage costs). */
static int load_prices(const char *file, struct prices *p, char *err, size_t len)
{
	snprintf(p->currency, sizeof(p->currency), "USD");
	p->models = json_object();
	if (!file)
		return 0;
	json_t *doc = NULL;
	int rc = syncer_prices_load(file, &doc, err, len);
	if (rc < 0)
		return rc;
	json_object_update(p->models, json_object_get(doc, "models"));
	p->dflt = json_number_value(json_object_get(doc, "default"));
	snprintf(p->currency, sizeof(p->currency), "%s",
		 json_string_value(json_object_get(doc, "currency")));
	json_decref(doc);
	p->set = true;
	return 0;
}

/* ---- reading the ledgers ------------------------------------------------------ */

static double add_num(json_t *o, const char *key, double v)
{
	json_t *x = json_object_get(o, key);
	if (json_is_real(x)) {
		json_real_set(x, json_real_value(x) + v);
		return json_real_value(x);
	}
	v += json_number_value(x);
	json_object_set_new(o, key, json_real(v));
	return v;
}

static void group_key(const struct acc *c, const struct store_alloc *r, char *key, size_t len)
{
	switch (c->a->by) {
	case BY_TENANT: snprintf(key, len, "%s", c->tenant); break;
	case BY_NAMESPACE: snprintf(key, len, "%s/%s", c->tenant, r->ns); break;
	case BY_QUEUE: snprintf(key, len, "%s", r->queue && *r->queue ? r->queue : "-"); break;
	case BY_POD: snprintf(key, len, "%s/%s/%s", c->tenant, r->ns, r->pod); break;
	case BY_NODE: snprintf(key, len, "%s", r->node ? r->node : "-"); break;
	}
}

static json_t *group_new(const struct acc *c, const struct store_alloc *r)
{
	json_t *g = json_object();
	switch (c->a->by) {
	case BY_POD:
		json_object_set_new(g, "pod", json_string(r->pod));
		/* fall through */
	case BY_NAMESPACE:
		json_object_set_new(g, "namespace", json_string(r->ns));
		/* fall through */
	case BY_TENANT: json_object_set_new(g, "tenant", json_string(c->tenant)); break;
	case BY_QUEUE:
		json_object_set_new(g, "queue",
				    json_string(r->queue && *r->queue ? r->queue : "-"));
		break;
	case BY_NODE: json_object_set_new(g, "node", json_string(r->node ? r->node : "-")); break;
	}
	return g;
}

#define CHART_BUCKETS 240

/* Adds `gpus` held over [from, to) to the chart buckets of series s. */
static void chart_add(const struct acc *c, json_t *s, int64_t from, int64_t to, double gpus)
{
	double w = (double)(c->a->until - c->a->since) / CHART_BUCKETS;
	int b0 = (int)((double)(from - c->a->since) / w);
	int b1 = (int)((double)(to - c->a->since) / w);
	for (int b = b0 < 0 ? 0 : b0; b <= b1 && b < CHART_BUCKETS; b++) {
		double lo = c->a->since + b * w, hi = lo + w;
		double x = fmin(hi, (double)to) - fmax(lo, (double)from);
		if (x > 0) {
			char k[16];
			snprintf(k, sizeof(k), "%d", b);
			add_num(s, k, gpus * x);
		}
	}
}

static int64_t open_end(const struct acc *c)
{
	return c->now_live ? c->a->now : c->seen;
}

/* Every tenant's allocations, by model and node. */
static void on_total(const struct store_alloc_sum *r, struct acc *c)
{
	c->allocated += r->gpu_seconds;
	add_num(c->model_alloc, r->model ? r->model : "", r->gpu_seconds);
	add_num(c->node_alloc, r->node ? r->node : "-", r->gpu_seconds);
}

/* A group's GPU-seconds and cost, one model at a time. */
static void group_add(const struct acc *c, json_t *g, const struct store_alloc_sum *r)
{
	add_num(g, "gpuSeconds", r->gpu_seconds);
	add_num(g, "cost", r->gpu_seconds / 3600 * price_of(c->p, r->model));
}

/* A row: every tenant's totals, and the shown tenants' groups. */
static void on_row(const struct store_alloc_sum *r, void *arg)
{
	struct acc *c = arg;
	on_total(r, c);
	if (!c->shown || c->a->by == BY_POD)
		return;
	struct store_alloc a = {.ns = r->ns, .pod = r->pod, .queue = r->queue, .node = r->node};
	char key[512];
	group_key(c, &a, key, sizeof(key));
	json_t *g = json_object_get(c->groups, key);
	if (!g) {
		g = group_new(c, &a);
		json_object_set_new(c->groups, key, g);
	}
	group_add(c, g, r);
}

/* The chart's buckets need each interval (only with --chart). */
static void on_chart_row(const struct store_alloc *r, void *arg)
{
	struct acc *c = arg;
	int64_t end = r->end ? r->end : open_end(c);
	int64_t from = r->start > c->a->since ? r->start : c->a->since;
	int64_t to = end < c->a->until ? end : c->a->until;
	if (to <= from)
		return;
	json_t *s = json_object_get(c->series, c->tenant);
	if (!s)
		json_object_set_new(c->series, c->tenant, s = json_object());
	chart_add(c, s, from, to, r->gpus);
}

static void on_node(const struct store_node_cap *n, void *arg)
{
	struct acc *c = arg;
	json_t *l = json_object_get(c->nodes, n->node_uid);
	if (!l)
		json_object_set_new(c->nodes, n->node_uid, l = json_array());
	int64_t end = n->end ? n->end : open_end(c);
	/* the same fact from several tenants' stores: once */
	size_t i;
	json_t *e;
	json_array_foreach (l, i, e) {
		if (json_integer_value(json_array_get(e, 0)) == n->start &&
		    json_real_value(json_array_get(e, 2)) == n->gpus) {
			if (end > json_integer_value(json_array_get(e, 1)))
				json_array_set_new(e, 1, json_integer(end));
			return;
		}
	}
	json_array_append_new(l,
			      json_pack("[I,I,f,s,s]", (json_int_t)n->start, (json_int_t)end,
					n->gpus, n->model ? n->model : "", n->node ? n->node : ""));
}

static bool selected(const struct usage_args *a, const char *name)
{
	if (!a->n_tenants)
		return true;
	for (int i = 0; i < a->n_tenants; i++)
		if (strcmp(a->tenants[i], name) == 0)
			return true;
	return false;
}

/* --by pod without --share-idle: the pods streamed are summed into the
 * totals as they go (one pass over a shown tenant's ledger, not two). */
static bool pods_first(const struct usage_args *a)
{
	return a->by == BY_POD && !a->share_idle;
}

static int read_tenant(struct acc *c, const char *name)
{
	char dir[2048], path[2100];
	int rc = home_tenant_dir(name, dir, sizeof(dir));
	if (rc < 0)
		return rc;
	snprintf(path, sizeof(path), "%s/kubicle.db", dir);
	store_ledger_t *l;
	if ((rc = store_ledger_open_ro(path, &l)) < 0)
		return rc == -ENOENT ? 0 : rc;
	c->tenant = name;
	c->shown = selected(c->a, name);
	c->seen = store_ledger_seen(l);
	c->now_live = c->a->now - c->seen <= SEEN_FRESH;
	int64_t since = c->a->since, until = c->a->until;
	/* --by pod: the groups are streamed once the totals are known
	 * (stream_pods), never held */
	if (!(pods_first(c->a) && c->shown)) /* else stream_pods adds them */
		rc = store_ledger_sums(l,
				       c->a->by == BY_POD ? STORE_LEDGER_TOTALS : STORE_LEDGER_ROWS,
				       since, until, open_end(c), on_row, c);
	if (!rc && c->shown && c->series)
		rc = store_ledger_each(l, since, until, on_chart_row, c);
	if (!rc)
		rc = store_ledger_each_node(l, since, until, on_node, c);
	store_ledger_close(l);
	return rc;
}

/* ---- capacity ----------------------------------------------------------------------- */

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return a < b ? -1 : a > b;
}

struct cap {
	double total;     /* GPU-seconds */
	json_t *by_model; /* model -> GPU-seconds */
	json_t *by_node;  /* node name -> GPU-seconds */
	json_t *chart;    /* bucket -> GPU-seconds */
};

/* One node's records merged (DESIGN): over each stretch between two
 * boundaries, the covering record that started last. */
static void node_capacity(const struct acc *c, const json_t *recs, struct cap *out)
{
	size_t n = json_array_size(recs), nb = 0;
	int64_t *b = calloc(2 * n + 2, sizeof(*b));
	if (!b)
		return;
	b[nb++] = c->a->since;
	b[nb++] = c->a->until;
	for (size_t i = 0; i < n; i++) {
		json_t *r = json_array_get(recs, i);
		for (int j = 0; j < 2; j++) {
			int64_t t = json_integer_value(json_array_get(r, (size_t)j));
			if (t > c->a->since && t < c->a->until)
				b[nb++] = t;
		}
	}
	qsort(b, nb, sizeof(*b), cmp_i64);
	for (size_t k = 0; k + 1 < nb; k++) {
		int64_t lo = b[k], hi = b[k + 1];
		if (hi <= lo)
			continue;
		const json_t *best = NULL;
		for (size_t i = 0; i < n; i++) {
			json_t *r = json_array_get(recs, i);
			int64_t s = json_integer_value(json_array_get(r, 0));
			int64_t e = json_integer_value(json_array_get(r, 1));
			if (s <= lo && e >= hi &&
			    (!best || s > json_integer_value(json_array_get(best, 0))))
				best = r;
		}
		if (!best)
			continue;
		double secs = json_real_value(json_array_get(best, 2)) * (double)(hi - lo);
		out->total += secs;
		add_num(out->by_model, json_string_value(json_array_get(best, 3)), secs);
		add_num(out->by_node, json_string_value(json_array_get(best, 4)), secs);
		if (out->chart) {
			struct acc tmp = *c;
			chart_add(&tmp, out->chart, lo, hi,
				  json_real_value(json_array_get(best, 2)));
		}
	}
	free(b);
}

static int strcmp_ptr(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* ---- output ----------------------------------------------------------------------- */

static double r6(double v)
{
	return round(v * 1e6) / 1e6;
}

/* One line of the report: a group's labels (borrowed; NULL when not one
 * of its labels) and figures. */
struct item {
	const char *key, *tenant, *ns, *pod, *queue, *node;
	double secs, cost;
};

/* The item of group g (c->groups' value, borrowed). */
static struct item item_of(const json_t *g, const char *key)
{
	return (struct item){.key = key,
			     .tenant = json_string_value(json_object_get(g, "tenant")),
			     .ns = json_string_value(json_object_get(g, "namespace")),
			     .pod = json_string_value(json_object_get(g, "pod")),
			     .queue = json_string_value(json_object_get(g, "queue")),
			     .node = json_string_value(json_object_get(g, "node")),
			     .secs = json_number_value(json_object_get(g, "gpuSeconds")),
			     .cost = json_number_value(json_object_get(g, "cost"))};
}

/* The report without its items (c->groups, or streamed: stream_pods);
 * sets c->idle_cost and c->all_cost for item_finish. */
static json_t *report(struct acc *c, struct cap *cap)
{
	const struct usage_args *a = c->a;
	double idle = cap->total - c->allocated;
	const char *k;
	json_t *v;
	json_t *models = json_array();
	c->idle_cost = 0;
	json_object_foreach (cap->by_model, k, v) {
		double alloc = json_number_value(json_object_get(c->model_alloc, k));
		double mi = json_number_value(v) - alloc;
		c->idle_cost += mi / 3600 * price_of(c->p, k);
		json_array_append_new(models,
				      json_pack("{s:s,s:f,s:f,s:f,s:f}", "model", k,
						"capacityGpuSeconds", r6(json_number_value(v)),
						"allocatedGpuSeconds", r6(alloc), "idleGpuSeconds",
						r6(mi), "pricePerGpuHour", price_of(c->p, k)));
	}
	/* allocations on a model no node of the window reports (a node the
	 * ledger never saw) have no capacity, so no idle; idle is shared in
	 * proportion to the cost of every tenant's allocations */
	c->all_cost = 0;
	json_object_foreach (c->model_alloc, k, v)
		c->all_cost += json_number_value(v) / 3600 * price_of(c->p, k);
	char since[32], until[32];
	kb_time_rfc3339((time_t)a->since, since, sizeof(since));
	kb_time_rfc3339((time_t)a->until, until, sizeof(until));
	return json_pack(
	    "{s:s,s:s,s:s,s:s,s:b,s:s,s:f,s:f,s:{s:f,s:f,s:f,s:b},s:o,s:[]}", "kind", "GPUUsage",
	    "since", since, "until", until, "by", by_names[a->by], "shareIdle", a->share_idle,
	    "currency", c->p->currency, "capacityGpuSeconds", r6(cap->total), "allocatedGpuSeconds",
	    r6(c->allocated), "idle", "gpuSeconds", r6(idle), "gpuHours", r6(idle / 3600), "cost",
	    r6(c->idle_cost), "shared", a->share_idle, "models", models, "items");
}

static double num(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* ---- output: a head, the items one at a time, a tail ------------------------------- */

struct out {
	const struct usage_args *a;
	const struct acc *c;
	const struct cap *cap;
	json_t *r; /* the report without its items (out_tail) */
	size_t n;  /* items written */
};

/* JSON: the items first (they may be streamed before the totals are
 * known: --by pod), then the report's other fields (out_tail). */
static void out_head(struct out *o)
{
	const struct usage_args *a = o->a;
	if (strcmp(a->out, "json") == 0) {
		fputs("{\n  \"items\": [", stdout);
	} else if (strcmp(a->out, "csv") == 0) {
		printf("%s,gpu_seconds,gpu_hours,cost,share_of_capacity%s%s\n", by_names[a->by],
		       a->by == BY_NODE ? ",capacity_gpu_seconds,idle_gpu_seconds" : "",
		       a->share_idle ? ",idle_cost" : "");
	} else {
		printf("%-40s %12s %12s %8s%s\n", "KEY", "GPU-HOURS", "COST", "SHARE",
		       a->by == BY_NODE ? "     IDLE-HOURS" : "");
	}
}

/* One item's line, built in memory and written at once (a million lines
 * for --by pod: no printf per field). */
struct line {
	char b[2048];
	size_t n;
};

static void lput(struct line *l, const char *s, size_t n)
{
	if (l->n + n < sizeof(l->b)) {
		memcpy(l->b + l->n, s, n);
		l->n += n;
	}
}

static void lstr(struct line *l, const char *s)
{
	lput(l, s, strlen(s));
}

/* v rounded to the millionth, as %.6f would write it; json: trailing
 * zeros dropped but one (jansson's look of a real). */
static void lnum(struct line *l, double v, bool json)
{
	char b[48], *e = b + sizeof(b), *p = e;
	long long m = llround(v * 1e6);
	unsigned long long u = m < 0 ? (unsigned long long)-m : (unsigned long long)m;
	for (int k = 0; k < 6; k++, u /= 10)
		*--p = (char)('0' + u % 10);
	*--p = '.';
	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) > 0);
	if (m < 0)
		*--p = '-';
	int n = (int)(e - p);
	memmove(b, p, (size_t)n);
	if (json)
		while (n > 2 && b[n - 1] == '0' && b[n - 2] != '.')
			n--;
	lput(l, b, (size_t)n);
}

/* A string as JSON: names are DNS labels, written as they are; anything
 * else escaped by jansson. */
static void ljson_str(struct line *l, const char *s)
{
	if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-./_") ==
	    strlen(s)) {
		lput(l, "\"", 1);
		lstr(l, s);
		lput(l, "\"", 1);
		return;
	}
	json_t *j = json_string(s);
	char *t = json_dumps(j, JSON_ENCODE_ANY);
	lstr(l, t ? t : "\"\"");
	free(t);
	json_decref(j);
}

static void ljson_field(struct line *l, const char *k, const char *v)
{
	if (!v)
		return;
	lstr(l, ",\n      \"");
	lstr(l, k);
	lstr(l, "\": ");
	ljson_str(l, v);
}

static void ljson_num(struct line *l, const char *k, double v)
{
	lstr(l, ",\n      \"");
	lstr(l, k);
	lstr(l, "\": ");
	lnum(l, v, true);
}

static void lcsv(struct line *l, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		lstr(l, s);
		return;
	}
	lput(l, "\"", 1);
	for (; *s; s++) {
		if (*s == '"')
			lput(l, "\"", 1);
		lput(l, s, 1);
	}
	lput(l, "\"", 1);
}

static void out_json(struct line *l, const struct out *o, const struct item *i, double cost,
		     double share, double cap_secs, double idle_part)
{
	lstr(l, o->n ? ",\n    {\n      \"key\": " : "\n    {\n      \"key\": ");
	ljson_str(l, i->key);
	ljson_field(l, "tenant", i->tenant);
	ljson_field(l, "namespace", i->ns);
	ljson_field(l, "pod", i->pod);
	ljson_field(l, "queue", i->queue);
	ljson_field(l, "node", i->node);
	ljson_num(l, "gpuSeconds", i->secs);
	ljson_num(l, "gpuHours", i->secs / 3600);
	ljson_num(l, "cost", cost);
	ljson_num(l, "shareOfCapacity", share);
	if (o->a->by == BY_NODE) {
		ljson_num(l, "capacityGpuSeconds", cap_secs);
		ljson_num(l, "idleGpuSeconds", cap_secs - i->secs);
	}
	if (o->a->share_idle)
		ljson_num(l, "idleCost", idle_part);
	lstr(l, "\n    }");
}

static void out_csv(struct line *l, const struct out *o, const struct item *i, double cost,
		    double share, double cap_secs, double idle_part)
{
	double v[] = {i->secs, i->secs / 3600, cost, share, cap_secs, cap_secs - i->secs};
	lcsv(l, i->key);
	for (size_t k = 0; k < 6; k++) {
		if (k >= 4 && o->a->by != BY_NODE)
			break;
		lput(l, ",", 1);
		lnum(l, v[k], false);
	}
	if (o->a->share_idle) {
		lput(l, ",", 1);
		lnum(l, idle_part, false);
	}
	lput(l, "\n", 1);
}

/* Writes item i: figures rounded to the millionth, its share of capacity,
 * its node's idle (--by node) and its part of idle's cost (--share-idle). */
static void out_item(struct out *o, const struct item *i)
{
	const struct usage_args *a = o->a;
	bool node = a->by == BY_NODE;
	double cap_secs = node ? json_number_value(json_object_get(o->cap->by_node, i->key)) : 0;
	double share = o->cap->total > 0 ? i->secs / o->cap->total : 0;
	double idle_part = 0, cost = i->cost;
	if (a->share_idle) {
		idle_part = o->c->all_cost > 0 ? o->c->idle_cost * cost / o->c->all_cost : 0;
		cost += idle_part;
	}
	struct line l = {.n = 0};
	if (strcmp(a->out, "json") == 0) {
		out_json(&l, o, i, cost, share, cap_secs, idle_part);
	} else if (strcmp(a->out, "csv") == 0) {
		out_csv(&l, o, i, cost, share, cap_secs, idle_part);
	} else {
		l.n = (size_t)snprintf(l.b, sizeof(l.b), "%-40s %12.3f %8.2f %-3s %7.2f%%", i->key,
				       r6(i->secs / 3600), r6(cost), o->c->p->currency,
				       100 * r6(share));
		if (l.n >= sizeof(l.b))
			l.n = sizeof(l.b) - 1;
		if (node)
			l.n += (size_t)snprintf(l.b + l.n, sizeof(l.b) - l.n, " %14.3f",
						r6(cap_secs - i->secs) / 3600);
		lput(&l, "\n", 1);
	}
	fwrite(l.b, 1, l.n, stdout);
	o->n++;
}

static void out_tail(struct out *o)
{
	const struct usage_args *a = o->a;
	const json_t *r = o->r;
	const json_t *idle = json_object_get(r, "idle");
	double cap = num(r, "capacityGpuSeconds");
	if (strcmp(a->out, "json") == 0) {
		json_object_del(o->r, "items");
		char *t = json_dumps(o->r, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
		printf("%s],%s\n", o->n ? "\n  " : "", t ? t + 1 : "}"); /* "{" written first */
		free(t);
	} else if (strcmp(a->out, "csv") == 0) {
		if (!a->share_idle) {
			printf("(idle),%.6f,%.6f,%.6f,%.6f", num(idle, "gpuSeconds"),
			       num(idle, "gpuHours"), num(idle, "cost"),
			       cap > 0 ? num(idle, "gpuSeconds") / cap : 0);
			if (a->by == BY_NODE)
				printf(",,");
			putchar('\n');
		}
	} else {
		const char *cur = json_string_value(json_object_get(r, "currency"));
		printf("%-40s %12.3f %8.2f %-3s %7.2f%%%s\n",
		       a->share_idle ? "(idle, shared above)" : "(idle)", num(idle, "gpuHours"),
		       num(idle, "cost"), cur, cap > 0 ? 100 * num(idle, "gpuSeconds") / cap : 0.0,
		       "");
		printf("%-40s %12.3f\n", "(capacity)", cap / 3600);
	}
}

/* The items of c->groups, in key order. */
static void out_groups(struct out *o, const struct acc *c)
{
	const char *k;
	json_t *v;
	const char **keys = malloc((json_object_size(c->groups) + 1) * sizeof(*keys));
	size_t n = 0;
	json_object_foreach (c->groups, k, v)
		keys[n++] = k;
	qsort(keys, n, sizeof(*keys), strcmp_ptr);
	for (size_t i = 0; i < n; i++) {
		struct item it = item_of(json_object_get(c->groups, keys[i]), keys[i]);
		out_item(o, &it);
	}
	free(keys);
}

/* --by pod: one pod at a time from each tenant's ledger, in the order of
 * tenant, namespace and pod, the pod's models summed. */
struct pod_stream {
	struct acc *c;
	struct out *o;
	bool have;
	char ns[256], pod[256], key[600];
	double secs, cost;
};

static void pod_flush(struct pod_stream *p)
{
	if (!p->have)
		return;
	struct item it = {.key = p->key,
			  .tenant = p->c->tenant,
			  .ns = p->ns,
			  .pod = p->pod,
			  .secs = p->secs,
			  .cost = p->cost};
	out_item(p->o, &it);
	p->have = false;
}

static void on_pod(const struct store_alloc_sum *r, void *arg)
{
	struct pod_stream *p = arg;
	if (p->have && (strcmp(r->ns, p->ns) != 0 || strcmp(r->pod, p->pod) != 0))
		pod_flush(p);
	if (!p->have) { /* names of at most 253 bytes (kube's), tenants of 40 */
		size_t t = strlen(p->c->tenant), nl = strlen(r->ns), pl = strlen(r->pod);
		if (nl >= sizeof(p->ns) || pl >= sizeof(p->pod) || t > 64)
			return;
		memcpy(p->ns, r->ns, nl + 1);
		memcpy(p->pod, r->pod, pl + 1);
		memcpy(p->key, p->c->tenant, t);
		p->key[t] = '/';
		memcpy(p->key + t + 1, r->ns, nl);
		p->key[t + 1 + nl] = '/';
		memcpy(p->key + t + 2 + nl, r->pod, pl + 1);
		p->secs = p->cost = 0;
		p->have = true;
	}
	p->secs += r->gpu_seconds;
	p->cost += r->gpu_seconds / 3600 * price_of(p->c->p, r->model);
	if (pods_first(p->c->a))
		on_total(r, p->c);
}

static int stream_pods(struct out *o, struct acc *c, char **names, size_t n)
{
	qsort(names, n, sizeof(*names), strcmp_ptr);
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		if (!selected(c->a, names[i]))
			continue;
		char dir[2048], path[2100];
		store_ledger_t *l;
		if ((rc = home_tenant_dir(names[i], dir, sizeof(dir))) < 0)
			break;
		snprintf(path, sizeof(path), "%s/kubicle.db", dir);
		if ((rc = store_ledger_open_ro(path, &l)) < 0) {
			rc = rc == -ENOENT ? 0 : rc;
			continue;
		}
		c->tenant = names[i];
		c->seen = store_ledger_seen(l);
		c->now_live = c->a->now - c->seen <= SEEN_FRESH;
		struct pod_stream p = {.c = c, .o = o};
		rc = store_ledger_sums(l, STORE_LEDGER_PODS, c->a->since, c->a->until, open_end(c),
				       on_pod, &p);
		pod_flush(&p);
		store_ledger_close(l);
	}
	return rc;
}

/* ---- the chart ------------------------------------------------------------------- */

static void svg_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

/*
 * GPUs allocated over time, one band per tenant stacked, idle on top up to
 * the capacity line; each band is labelled in place (at its widest bucket)
 * and in the key, so no colour needs looking up.
 */
static int write_chart(const char *file, const struct acc *c, const struct cap *cap)
{
	static const char *const colours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
					      "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
					      "#9c755f", "#bab0ac"};
	const int W = 960, H = 420, L = 60, R = 180, T = 30, B = 40;
	double w = (double)(c->a->until - c->a->since) / CHART_BUCKETS;
	double capb[CHART_BUCKETS], base[CHART_BUCKETS], ymax = 0;
	for (int b = 0; b < CHART_BUCKETS; b++) {
		char k[16];
		snprintf(k, sizeof(k), "%d", b);
		capb[b] = num(cap->chart, k) / w;
		base[b] = 0;
		ymax = fmax(ymax, capb[b]);
	}
	size_t nt = json_object_size(c->series);
	const char **names = malloc((nt + 1) * sizeof(*names));
	size_t n = 0;
	const char *k;
	json_t *v;
	json_object_foreach (c->series, k, v)
		names[n++] = k;
	qsort(names, n, sizeof(*names), strcmp_ptr);
	for (int b = 0; b < CHART_BUCKETS; b++) {
		double sum = 0;
		char kk[16];
		snprintf(kk, sizeof(kk), "%d", b);
		for (size_t i = 0; i < n; i++)
			sum += num(json_object_get(c->series, names[i]), kk) / w;
		ymax = fmax(ymax, sum);
	}
	if (ymax <= 0)
		ymax = 1;
	FILE *f = fopen(file, "w");
	if (!f) {
		free(names);
		return -errno;
	}
	double pw = W - L - R, ph = H - T - B;
#define X(b) (L + pw * (b) / CHART_BUCKETS)
#define Y(g) (T + ph - ph * (g) / ymax)
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<title>GPUs allocated by tenant, with idle capacity</title>\n"
		"<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
		W, H, W, H, W, H);
	char since[32], until[32];
	kb_time_rfc3339((time_t)c->a->since, since, sizeof(since));
	kb_time_rfc3339((time_t)c->a->until, until, sizeof(until));
	fprintf(
	    f,
	    "<text x=\"%d\" y=\"18\" font-size=\"14\">GPUs allocated by tenant, %s to %s</text>\n",
	    L, since, until);
	for (size_t i = 0; i <= n; i++) {
		bool idle = i == n;
		const char *name = idle ? "idle" : names[i];
		json_t *s = idle ? NULL : json_object_get(c->series, name);
		double top[CHART_BUCKETS];
		int widest = 0;
		double wmax = -1;
		for (int b = 0; b < CHART_BUCKETS; b++) {
			char kk[16];
			snprintf(kk, sizeof(kk), "%d", b);
			double g = idle ? fmax(0, capb[b] - base[b]) : num(s, kk) / w;
			top[b] = base[b] + g;
			if (g > wmax)
				wmax = g, widest = b;
		}
		fprintf(f, "<g class=\"series\" data-series=\"");
		svg_text(f, name);
		fprintf(f, "\"><path fill=\"%s\" stroke=\"none\"%s d=\"M%.1f %.1f",
			idle ? "#e8e8e8" : colours[i % KB_ARRAY_SIZE(colours)],
			idle ? " fill-opacity=\"0.9\"" : "", X(0), Y(base[0]));
		for (int b = 0; b < CHART_BUCKETS; b++)
			fprintf(f, " L%.1f %.1f L%.1f %.1f", X(b), Y(top[b]), X(b + 1), Y(top[b]));
		for (int b = CHART_BUCKETS - 1; b >= 0; b--)
			fprintf(f, " L%.1f %.1f L%.1f %.1f", X(b + 1), Y(base[b]), X(b),
				Y(base[b]));
		fprintf(f, " Z\"><title>");
		svg_text(f, name);
		fprintf(f, "</title></path>\n");
		if (wmax > 0 && Y(base[widest]) - Y(top[widest]) >= 12) {
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
				X(widest + 0.5), (Y(base[widest]) + Y(top[widest])) / 2 + 4);
			svg_text(f, name);
			fprintf(f, "</text>\n");
		}
		fprintf(f, "<rect x=\"%d\" y=\"%zu\" width=\"12\" height=\"12\" fill=\"%s\"/>",
			W - R + 16, T + 18 * i,
			idle ? "#e8e8e8" : colours[i % KB_ARRAY_SIZE(colours)]);
		fprintf(f, "<text x=\"%d\" y=\"%zu\">", W - R + 34, T + 18 * i + 11);
		svg_text(f, name);
		fprintf(f, "</text></g>\n");
		memcpy(base, top, sizeof(base));
	}
	fprintf(f, "<polyline fill=\"none\" stroke=\"black\" stroke-width=\"1.5\" points=\"");
	for (int b = 0; b < CHART_BUCKETS; b++)
		fprintf(f, "%.1f,%.1f %.1f,%.1f ", X(b), Y(capb[b]), X(b + 1), Y(capb[b]));
	fprintf(f, "\"><title>capacity</title></polyline>\n");
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", L,
		Y(0), X(CHART_BUCKETS), Y(0));
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>\n", L, T, L,
		Y(0));
	for (int t = 0; t <= 4; t++) {
		double g = ymax * t / 4;
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", L - 6,
			Y(g) + 4, g);
	}
	fprintf(f,
		"<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" "
		"text-anchor=\"middle\">GPUs</text>\n",
		T + ph / 2, T + ph / 2);
	fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", L, H - 12, since);
	fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\">%s</text>\n", X(CHART_BUCKETS),
		H - 12, until);
	fprintf(f, "</svg>\n");
#undef X
#undef Y
	free(names);
	return fclose(f) == 0 ? 0 : -EIO;
}

/* ---- arguments -------------------------------------------------------------------- */

int64_t usage_month_start(int64_t now)
{
	time_t t = (time_t)now;
	struct tm tm;
	gmtime_r(&t, &tm);
	tm.tm_mday = 1;
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	return (int64_t)timegm(&tm);
}

/* RFC 3339, a date (UTC midnight), "now", or a duration ago ("24h", "7d"). */
static int parse_time(const char *s, int64_t now, int64_t *out)
{
	time_t t;
	char buf[64];
	long d;
	if (strcmp(s, "now") == 0) {
		*out = now;
		return 0;
	}
	if (kb_time_parse(s, &t) == 0) {
		*out = t;
		return 0;
	}
	if (strlen(s) == 10) {
		snprintf(buf, sizeof(buf), "%sT00:00:00Z", s);
		if (kb_time_parse(buf, &t) == 0) {
			*out = t;
			return 0;
		}
	}
	if ((d = users_parse_duration(s)) > 0 && strspn(s, "0123456789") < strlen(s)) {
		*out = now - d;
		return 0;
	}
	return -EINVAL;
}

static const char usage_text[] =
    "Usage: kubicle usage [TENANT...] [--since T] [--until T]\n"
    "                     [--by tenant|namespace|queue|pod|node] [--prices FILE]\n"
    "                     [--share-idle] [--chart FILE.svg] [-o table|json|csv]\n"
    "  GPU-hours the tenants' pods held on the host, their cost, their share of the\n"
    "  host's GPU capacity, and idle capacity, for [--since, --until) (default: this\n"
    "  month until now). T: RFC 3339, YYYY-MM-DD (UTC), now, or a duration ago (7d).\n"
    "  --prices: YAML {currency, default, models: {<nvidia.com/gpu.product>: price\n"
    "  per GPU-hour}}. --share-idle: idle cost shared pro rata to cost. --chart:\n"
    "  an SVG of GPUs allocated over time, stacked by tenant, with idle.\n"
    "  docs/finops.md.\n";

static int parse_args(int argc, char **argv, struct usage_args *a)
{
	static const struct option opts[] = {
	    {"since", required_argument, NULL, 's'},
	    {"until", required_argument, NULL, 'u'},
	    {"by", required_argument, NULL, 'b'},
	    {"prices", required_argument, NULL, 'p'},
	    {"share-idle", no_argument, NULL, 'i'},
	    {"chart", required_argument, NULL, 'c'},
	    {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *since = NULL, *until = NULL;
	int c;
	a->now = (int64_t)time(NULL);
	a->out = "table";
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': since = optarg; break;
		case 'u': until = optarg; break;
		case 'p': a->prices_file = optarg; break;
		case 'i': a->share_idle = true; break;
		case 'c': a->chart = optarg; break;
		case 'o': a->out = optarg; break;
		case 'b': {
			size_t i;
			for (i = 0; i < KB_ARRAY_SIZE(by_names) && strcmp(by_names[i], optarg); i++)
				;
			if (i == KB_ARRAY_SIZE(by_names)) {
				fprintf(stderr, "kubicle usage: bad --by %s\n%s", optarg,
					usage_text);
				return 2;
			}
			a->by = (enum by)i;
			break;
		}
		case 'h': fputs(usage_text, stdout); return -1;
		default: fputs(usage_text, stderr); return 2;
		}
	}
	if (strcmp(a->out, "table") && strcmp(a->out, "json") && strcmp(a->out, "csv")) {
		fprintf(stderr, "kubicle usage: bad -o %s (table, json, csv)\n", a->out);
		return 2;
	}
	a->since = usage_month_start(a->now);
	a->until = a->now;
	if ((since && parse_time(since, a->now, &a->since) < 0) ||
	    (until && parse_time(until, a->now, &a->until) < 0)) {
		fprintf(stderr, "kubicle usage: bad time %s\n",
			since && parse_time(since, a->now, &a->since) < 0 ? since : until);
		return 2;
	}
	if (a->until <= a->since) {
		fprintf(stderr, "kubicle usage: --until must be after --since\n");
		return 2;
	}
	a->tenants = (const char **)argv + optind;
	a->n_tenants = argc - optind;
	return 0;
}

static void acc_free(struct acc *c)
{
	json_decref(c->groups);
	json_decref(c->model_alloc);
	json_decref(c->node_alloc);
	json_decref(c->nodes);
	json_decref(c->series);
}

int cmd_usage(int argc, char **argv)
{
	struct usage_args a = {0};
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	struct prices p = {0};
	char err[512];
	char dflt[4096];
	if (!a.prices_file)
		a.prices_file = usage_default_prices(dflt, sizeof(dflt), true);
	if ((rc = load_prices(a.prices_file, &p, err, sizeof(err))) < 0) {
		fprintf(stderr, "kubicle usage: %s\n", err);
		json_decref(p.models);
		return 1;
	}
	char **names;
	size_t n;
	if ((rc = home_list(&names, &n)) < 0) {
		fprintf(stderr, "kubicle usage: %s\n", strerror(-rc));
		json_decref(p.models);
		return 1;
	}
	for (int i = 0; i < a.n_tenants; i++) {
		bool found = false;
		for (size_t j = 0; j < n && !found; j++)
			found = strcmp(names[j], a.tenants[i]) == 0;
		if (!found) {
			fprintf(stderr, "kubicle usage: no tenant %s\n", a.tenants[i]);
			home_free_names(names, n);
			json_decref(p.models);
			return 1;
		}
	}
	struct acc c = {.a = &a, .p = &p};
	c.groups = json_object();
	c.model_alloc = json_object();
	c.node_alloc = json_object();
	c.nodes = json_object();
	c.series = a.chart ? json_object() : NULL;
	for (size_t i = 0; i < n && !rc; i++)
		if ((rc = read_tenant(&c, names[i])) < 0)
			fprintf(stderr, "kubicle usage: tenant %s: %s\n", names[i], strerror(-rc));
	struct cap cap = {.by_model = json_object(),
			  .by_node = json_object(),
			  .chart = a.chart ? json_object() : NULL};
	const char *k;
	json_t *v;
	json_object_foreach (c.nodes, k, v)
		node_capacity(&c, v, &cap);
	/* streamed pods add the totals as they go (pods_first), the report
	 * follows them; else it comes first (idle's cost to share) */
	json_t *r = rc || pods_first(&a) ? NULL : report(&c, &cap);
	if (!rc && a.chart && (rc = write_chart(a.chart, &c, &cap)) < 0)
		fprintf(stderr, "kubicle usage: %s: %s\n", a.chart, strerror(-rc));
	if (!rc) {
		struct out o = {.a = &a, .c = &c, .cap = &cap};
		out_head(&o);
		if (a.by == BY_POD)
			rc = stream_pods(&o, &c, names, n);
		else
			out_groups(&o, &c);
		if (!r)
			r = report(&c, &cap);
		o.r = r;
		out_tail(&o);
		if (rc < 0)
			fprintf(stderr, "kubicle usage: %s\n", strerror(-rc));
	}
	json_decref(r);
	json_decref(cap.by_model);
	json_decref(cap.by_node);
	json_decref(cap.chart);
	acc_free(&c);
	home_free_names(names, n);
	json_decref(p.models);
	return rc ? 1 : 0;
}

const char *usage_default_prices(char *buf, size_t len, bool present)
{
	char home[4000];
	if (home_dir(home, sizeof(home)) < 0)
		return NULL;
	snprintf(buf, len, "%s/prices.yaml", home);
	return !present || access(buf, F_OK) == 0 ? buf : NULL;
}

/* ---- kubicle list's column -------------------------------------------------------- */

static void sum_hours(const struct store_alloc *r, void *arg)
{
	struct acc *c = arg;
	int64_t end = r->end ? r->end : open_end(c);
	int64_t from = r->start > c->a->since ? r->start : c->a->since;
	int64_t to = end < c->a->until ? end : c->a->until;
	if (to > from)
		c->allocated += r->gpus * (double)(to - from);
}

int usage_gpu_hours(const char *db, int64_t since, int64_t until, double *out)
{
	store_ledger_t *l;
	*out = 0;
	int rc = store_ledger_open_ro(db, &l);
	if (rc < 0)
		return rc == -ENOENT ? 0 : rc;
	struct usage_args a = {.since = since, .until = until, .now = (int64_t)time(NULL)};
	struct acc c = {.a = &a};
	c.seen = store_ledger_seen(l);
	c.now_live = a.now - c.seen <= SEEN_FRESH;
	rc = store_ledger_each(l, since, until, sum_hours, &c);
	store_ledger_close(l);
	*out = c.allocated / 3600;
	return rc;
}
