/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kubicle operator` (cmd/operator.h): the loop around operator_reconcile.c.
 *
 * DESIGN
 * Two threads. The elector (operator_lease.c) tries to acquire or renew
 * the Lease every --retry-period on its own thread and host client, so
 * that no reconcile, however slow its host calls, holds the renewal back;
 * a leader that has not renewed for --renew-deadline exits 1 from there,
 * as kube-controller-manager does when it loses its lease (its Deployment
 * starts it again, a candidate once more).
 * This thread runs one libuv loop; a timer ticks every 200 ms and, while
 * the elector leads, does what a controller's informers and work queue do
 * (client-go tools/cache: a Reflector's ListAndWatch per kind, its event
 * handlers feeding a workqueue):
 *   - it lists the Tenants and the tenants' StatefulSets (label
 *     kubicle.dev/tenant, every namespace: a Tenant's server state, its
 *     status's only input the host changes) at start, every --resync, and
 *     after a watch failed or answered 410 Gone, and keeps one watch of
 *     each from its list's resourceVersion (lib/httpc, streaming on this
 *     loop);
 *   - a Tenant listed or seen in an event gets a full reconcile; a
 *     StatefulSet event gets its tenant a status reconcile (its server's
 *     state, the spec's host objects left alone when the Tenant's status
 *     says they are in place; a deleted one a full reconcile);
 *   - it reconciles the queue's due names (blocking host calls through
 *     cmd/hostapi.h, on that client's own loop), at most for half a retry
 *     period per tick, so that the watches are read in between.
 * Nothing is polled: a Pending tenant waits for its StatefulSet's events;
 * only a TTL (due at its expiry) and a failed reconcile (retried) are
 * requeued by time.
 * The queue is a set (a name is in it once, with the time it is due), so a
 * burst of events for one Tenant is one reconcile: client-go's workqueue
 * semantics. Nothing is kept that the host API does not hold: a new
 * leader lists and reconciles everything.
 * Status-only updates (ours: metadata.generation equal to
 * status.observedGeneration, no deletionTimestamp) do not requeue.
 *
 * Credentials: --host-kubeconfig FILE, else the pod's service account
 * (KUBERNETES_SERVICE_HOST, the mounted token and CA), written for
 * cmd/hostapi.h as a kubeconfig in a private temporary folder.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "cmd/operator.h"
#include "cmd/operator_impl.h"
#include "lib/httpc.h"
#include "lib/kubeconfig.h"
#include "lib/log.h"
#include "lib/pki.h" /* kb_write_file */
#include "lib/util.h"

#define TICK_MS 200

/* One kind's list and watch (client-go's Reflector). */
struct op_watch {
	struct op *o;
	const char *what;  /* for logs: "tenant", "statefulset" */
	const char *path;  /* its collection, every namespace */
	const char *query; /* "" or "labelSelector=...&" */
	kb_httpc_req_t *req;
	struct kb_buf buf; /* a partial watch line */
	char rv[64];       /* resourceVersion to watch from */
	bool relist;
	/* an object listed (type NULL) or seen in an event */
	void (*on_object)(struct op *o, const char *type, const json_t *obj);
};

struct op {
	uv_loop_t loop;
	uv_timer_t tick;
	uv_async_t wake; /* the elector started leading */
	uv_signal_t sigterm, sigint;
	hostapi_t *h;       /* reconciles (blocking) */
	kb_httpc_t *client; /* the watches (streaming on `loop`) */
	struct op_watch tenants, sets;
	struct op_elector *elector;
	bool leading; /* what this thread last saw of op_elector_leading */
	struct op_config cfg;
	int retry_s;
	bool install_crd, crd_done;
	int64_t next_resync_ms;
	json_t *queue; /* name -> due time (ms, op_now_ms) */
	json_t *polls; /* names queued for a status reconcile only (a StatefulSet
			* event, a TTL): not a full one */
	int exit_code;
	bool stopping;
	char tmpdir[512]; /* in-cluster: the generated kubeconfig's folder */
};

static const char usage[] =
    "usage: kubicle operator [--host-kubeconfig FILE] [--namespace NS] [--id ID]\n"
    "                        [--lease-duration S (15)] [--renew-deadline S (10)]\n"
    "                        [--retry-period S (2)] [--resync S (300)] [--image IMG]\n"
    "                        [--no-install-crd] [--log-level L]\n"
    "  Runs every Tenant (tenants.kubicle.dev) of the host cluster (docs/operator.md).\n";

/* ---- the work queue ------------------------------------------------------------------------ */

/* Work for name: a full reconcile (a poll already queued becomes one). */
static void enqueue(struct op *o, const char *name, int64_t due)
{
	json_object_del(o->polls, name);
	json_t *cur = json_object_get(o->queue, name);
	if (cur && json_integer_value(cur) <= due)
		return;
	json_object_set_new(o->queue, name, json_integer(due));
}

/* Reconciles due names until the time budget is spent. */
static void work(struct op *o)
{
	int64_t start = op_now_ms(), budget = o->retry_s * 500;
	const char *name;
	json_t *due, *next = json_object();
	void *tmp;
	json_object_foreach_safe (o->queue, tmp, name, due) {
		int64_t now = op_now_ms();
		if (json_integer_value(due) > now || now - start > budget || o->stopping ||
		    !op_elector_leading(o->elector))
			continue; /* not leading: nothing more is written */
		char *n = strdup(name);
		bool full = json_object_get(o->polls, n) == NULL;
		json_object_del(o->queue, n);
		json_object_del(o->polls, n);
		int requeue = 0;
		kb_debug("operator", "reconcile %s (%s)", n, full ? "full" : "status");
		int rc = op_reconcile(o->h, &o->cfg, n, full, &requeue);
		if (rc < 0 && requeue == 0)
			requeue = 5;
		if (requeue > 0)
			json_object_set_new(next, n,
					    json_pack("{s:I,s:b}", "due",
						      (json_int_t)(op_now_ms() + requeue * 1000LL),
						      "poll", rc == 0));
		free(n);
	}
	const char *k;
	json_object_foreach (next, k, due) {
		if (json_object_get(o->queue, k))
			continue; /* an event came meanwhile: that full reconcile stands */
		json_object_set_new(o->queue, k, json_incref(json_object_get(due, "due")));
		if (json_is_true(json_object_get(due, "poll")))
			json_object_set_new(o->polls, k, json_true());
	}
	json_decref(next);
}

/* Work for name: a status reconcile, unless any reconcile is queued. */
static void enqueue_poll(struct op *o, const char *name)
{
	if (json_object_get(o->queue, name))
		return;
	json_object_set_new(o->queue, name, json_integer(0));
	json_object_set_new(o->polls, name, json_true());
}

static void on_tick(uv_timer_t *t);

/* ---- the event handlers -------------------------------------------------------------------- */

/* A Tenant: work unless the event is our own status write. */
static void on_tenant(struct op *o, const char *type, const json_t *obj)
{
	const json_t *m = json_object_get(obj, "metadata");
	const char *name = json_string_value(json_object_get(m, "name"));
	if (!name)
		return;
	if (type && strcmp(type, "MODIFIED") == 0 && !json_object_get(m, "deletionTimestamp")) {
		json_int_t gen = json_integer_value(json_object_get(m, "generation"));
		json_int_t seen = json_integer_value(
		    json_object_get(json_object_get(obj, "status"), "observedGeneration"));
		if (gen == seen)
			return;
	}
	enqueue(o, name, 0);
}

/* A tenant's StatefulSet: its Tenant's status follows; one deleted is
 * made again by a full reconcile. */
static void on_statefulset(struct op *o, const char *type, const json_t *obj)
{
	const char *t = json_string_value(json_object_get(
	    json_object_get(json_object_get(obj, "metadata"), "labels"), "kubicle.dev/tenant"));
	if (!t)
		return;
	if (type && strcmp(type, "DELETED") == 0)
		enqueue(o, t, 0);
	else
		enqueue_poll(o, t);
}

/* ---- list and watch (client-go's Reflector.ListAndWatch) ------------------------------------ */

static int list_all(struct op_watch *w)
{
	struct op *o = w->o;
	long st = 0;
	char path[512];
	json_t *resp = NULL, *item;
	size_t i;
	snprintf(path, sizeof(path), "%s%s%.*s", w->path, *w->query ? "?" : "",
		 (int)(*w->query ? strlen(w->query) - 1 : 0), w->query);
	int rc = hostapi_call(o->h, "GET", path, NULL, &st, &resp);
	if (rc == 0 && st != 200)
		rc = -EIO;
	if (rc < 0) {
		kb_warn("operator", "listing %ss: %s", w->what,
			rc == -EIO ? hostapi_message(resp, st) : strerror(-rc));
		json_decref(resp);
		return rc;
	}
	const char *rv = json_string_value(
	    json_object_get(json_object_get(resp, "metadata"), "resourceVersion"));
	snprintf(w->rv, sizeof(w->rv), "%s", rv ? rv : "");
	json_array_foreach (json_object_get(resp, "items"), i, item)
		w->on_object(o, NULL, item);
	kb_info("operator", "listed %zu %s(s) at resourceVersion %s",
		json_array_size(json_object_get(resp, "items")), w->what, w->rv);
	json_decref(resp);
	w->relist = false;
	return 0;
}

static void watch_event(struct op_watch *w, const char *line, size_t len)
{
	json_t *ev = json_loadb(line, len, 0, NULL);
	const char *type = json_string_value(json_object_get(ev, "type"));
	const json_t *obj = json_object_get(ev, "object");
	const char *rv =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
	if (!type) {
		w->relist = true;
	} else if (strcmp(type, "ERROR") == 0) {
		/* 410 Gone: the resourceVersion was compacted away */
		kb_info("operator", "%s watch: %s", w->what,
			json_string_value(json_object_get(obj, "message")) ?: "error");
		w->relist = true;
	} else {
		if (rv)
			snprintf(w->rv, sizeof(w->rv), "%s", rv);
		if (strcmp(type, "BOOKMARK") != 0)
			w->on_object(w->o, type, obj);
	}
	json_decref(ev);
}

static bool on_watch_data(kb_httpc_req_t *req, const char *data, size_t len, void *arg)
{
	(void)req;
	struct op_watch *w = arg;
	struct op *o = w->o;
	if (kb_buf_append(&w->buf, data, len) < 0)
		return false;
	char *start = w->buf.data, *nl;
	while ((nl = memchr(start, '\n', w->buf.len - (size_t)(start - w->buf.data)))) {
		if (nl > start)
			watch_event(w, start, (size_t)(nl - start));
		start = nl + 1;
	}
	size_t rest = w->buf.len - (size_t)(start - w->buf.data);
	memmove(w->buf.data, start, rest);
	w->buf.len = rest;
	if (json_object_size(o->queue) && !o->stopping)
		uv_timer_start(&o->tick, on_tick, 0, 0); /* work now, not at the next tick */
	return true;
}

static void on_watch_done(kb_httpc_req_t *req, int err, long status, const char *body, size_t len,
			  void *arg)
{
	(void)req, (void)body, (void)len;
	struct op_watch *w = arg;
	w->req = NULL;
	w->buf.len = 0;
	if (err < 0 || status != 200) {
		kb_info("operator", "%s watch ended: %s %ld", w->what,
			err < 0 ? strerror(-err) : "status", status);
		w->relist = true;
	}
}

static void start_watch(struct op_watch *w)
{
	char path[512];
	snprintf(path, sizeof(path),
		 "%s?%swatch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=%s",
		 w->path, w->query, w->rv);
	struct kb_httpc_call call = {.method = "GET",
				     .path = path,
				     .stream = true,
				     .on_data = on_watch_data,
				     .on_done = on_watch_done,
				     .arg = w};
	w->req = kb_httpc_request(w->o->client, &call);
}

static void stop_watch(struct op_watch *w)
{
	if (w->req)
		kb_httpc_cancel(w->req);
	w->req = NULL;
	w->buf.len = 0;
}

/* List (when due) and watch one kind: 0, or a negative errno when its list
 * failed (tried again at the next tick). */
static int keep_watching(struct op_watch *w)
{
	if (w->relist) {
		stop_watch(w);
		int rc = list_all(w);
		if (rc < 0)
			return rc;
	}
	if (!w->req)
		start_watch(w);
	return 0;
}

/* ---- the tick ------------------------------------------------------------------------------ */

static void stop(struct op *o, int code)
{
	o->exit_code = code;
	o->stopping = true;
	stop_watch(&o->tenants);
	stop_watch(&o->sets);
	uv_stop(&o->loop);
}

static void on_tick(uv_timer_t *t)
{
	struct op *o = t->data;
	char err[1024];
	bool leading = op_elector_leading(o->elector);
	if (leading && !o->leading)
		o->tenants.relist = o->sets.relist = true; /* a new leader lists everything */
	o->leading = leading;
	if (o->stopping || !leading)
		goto again;
	if (o->install_crd && !o->crd_done) {
		int rc = op_install_crd(o->h, err, sizeof(err));
		if (rc == -EAGAIN) {
			kb_info("operator", "%s", err);
			goto again;
		}
		if (rc < 0) {
			kb_err("operator", "%s", err);
			goto again;
		}
		o->crd_done = true;
	}
	int64_t now = op_now_ms();
	if (now >= o->next_resync_ms) {
		o->tenants.relist = o->sets.relist = true;
		o->next_resync_ms = now + o->cfg.resync_s * 1000LL;
	}
	/* the StatefulSets' first: a Tenant listed after them is reconciled
	 * from a state their watch continues */
	if (keep_watching(&o->sets) < 0 || keep_watching(&o->tenants) < 0)
		goto again;
	work(o);
again:
	if (!o->stopping)
		uv_timer_start(&o->tick, on_tick, TICK_MS, 0);
}

static void on_wake(uv_async_t *a)
{
	struct op *o = a->data;
	if (!o->stopping)
		uv_timer_start(&o->tick, on_tick, 0, 0);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct op *o = s->data;
	kb_info("operator", "signal %d: stopping", signum);
	stop(o, 0); /* the Lease is released once the elector has stopped */
}

/* ---- setup ----------------------------------------------------------------------------------- */

struct op_args {
	const char *kubeconfig, *ns, *id, *image, *log_level;
	int lease_s, renew_s, retry_s, resync_s;
	bool no_crd;
};

/* The pod's service account as a kubeconfig file for hostapi_open. */
static int in_cluster_kubeconfig(struct op *o, char *path, size_t len)
{
	struct kb_kubeconfig_creds cr;
	int rc = kb_kubeconfig_in_cluster(NULL, &cr);
	if (rc < 0)
		return rc;
	const char *tmp = getenv("TMPDIR");
	snprintf(o->tmpdir, sizeof(o->tmpdir), "%s/kubicle-operator.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(o->tmpdir)) {
		kb_kubeconfig_creds_free(&cr);
		o->tmpdir[0] = 0;
		return -errno;
	}
	json_t *user = json_object();
	if (cr.token_file)
		json_object_set_new(user, "tokenFile", json_string(cr.token_file));
	else if (cr.token)
		json_object_set_new(user, "token", json_string(cr.token));
	json_t *cluster = json_pack("{s:s}", "server", cr.server);
	if (cr.ca_file)
		json_object_set_new(cluster, "certificate-authority", json_string(cr.ca_file));
	json_t *kc = json_pack("{s:s,s:s,s:[{s:s,s:o}],s:[{s:s,s:o}],s:[{s:s,s:{s:s,s:s}}],s:s}",
			       "apiVersion", "v1", "kind", "Config", "clusters", "name", "host",
			       "cluster", cluster, "users", "name", "operator", "user", user,
			       "contexts", "name", "host", "context", "cluster", "host", "user",
			       "operator", "current-context", "host");
	kb_kubeconfig_creds_free(&cr);
	char *text = kc ? json_dumps(kc, JSON_INDENT(2)) : NULL;
	json_decref(kc);
	snprintf(path, len, "%s/kubeconfig", o->tmpdir);
	rc = text ? kb_write_file(path, text, strlen(text), 0600) : -ENOMEM;
	free(text);
	return rc;
}

static int start_elector(struct op *o, const struct op_args *a, const char *kubeconfig)
{
	const struct op_elector_opts eo = {.kubeconfig = kubeconfig,
					   .ns = a->ns,
					   .id = a->id,
					   .lease_duration_s = a->lease_s,
					   .renew_deadline_s = a->renew_s,
					   .retry_s = a->retry_s};
	uv_async_init(&o->loop, &o->wake, on_wake);
	o->wake.data = o;
	return op_elector_start(&eo, &o->wake, &o->elector);
}

static int open_clients(struct op *o, const struct op_args *a, const char *kubeconfig)
{
	char path[1024];
	struct kb_kubeconfig_creds cr;
	int rc = 0;
	if (!kubeconfig) {
		if ((rc = in_cluster_kubeconfig(o, path, sizeof(path))) < 0)
			return rc;
		kubeconfig = path;
	}
	if ((rc = hostapi_open(kubeconfig, 15000, &o->h)) < 0)
		return rc;
	if ((rc = start_elector(o, a, kubeconfig)) < 0)
		return rc;
	if ((rc = kb_kubeconfig_load(kubeconfig, NULL, &cr)) < 0)
		return rc;
	struct kb_httpc_opts hopts = {.user_agent = OP_COMPONENT};
	kb_httpc_opts_from_creds(&hopts, &cr);
	rc = kb_httpc_new(&o->loop, &hopts, &o->client);
	kb_kubeconfig_creds_free(&cr);
	return rc;
}

static int parse_secs(const char *flag, const char *v, int *out)
{
	char *end;
	long n = strtol(v, &end, 10);
	if (*end || end == v || n < 1 || n > 86400) {
		fprintf(stderr, "kubicle operator: --%s wants seconds (1 to 86400), not %s\n", flag,
			v);
		return -EINVAL;
	}
	*out = (int)n;
	return 0;
}

static int parse(int argc, char **argv, struct op_args *a)
{
	static const struct option opts[] = {
	    {"host-kubeconfig", required_argument, NULL, 'k'},
	    {"namespace", required_argument, NULL, 'n'},
	    {"id", required_argument, NULL, 'I'},
	    {"lease-duration", required_argument, NULL, 'L'},
	    {"renew-deadline", required_argument, NULL, 'R'},
	    {"retry-period", required_argument, NULL, 'P'},
	    {"resync", required_argument, NULL, 'S'},
	    {"image", required_argument, NULL, 'i'},
	    {"no-install-crd", no_argument, NULL, 'N'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c, rc = 0;
	optind = 1;
	while (rc == 0 && (c = getopt_long(argc, argv, "n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'k': a->kubeconfig = optarg; break;
		case 'n': a->ns = optarg; break;
		case 'I': a->id = optarg; break;
		case 'L': rc = parse_secs("lease-duration", optarg, &a->lease_s); break;
		case 'R': rc = parse_secs("renew-deadline", optarg, &a->renew_s); break;
		case 'P': rc = parse_secs("retry-period", optarg, &a->retry_s); break;
		case 'S': rc = parse_secs("resync", optarg, &a->resync_s); break;
		case 'i': a->image = optarg; break;
		case 'N': a->no_crd = true; break;
		case 'l': a->log_level = optarg; break;
		case 'h': fputs(usage, stdout); exit(0);
		default: return -EINVAL;
		}
	}
	if (rc < 0 || optind != argc)
		return -EINVAL;
	/* client-go's rule (leaderelection.go NewLeaderElector): duration >
	 * deadline > retry period */
	if (a->lease_s <= a->renew_s || a->renew_s <= a->retry_s) {
		fprintf(stderr, "kubicle operator: --lease-duration > --renew-deadline > "
				"--retry-period\n");
		return -EINVAL;
	}
	if (!kb_dns_label(a->ns, 63)) {
		fprintf(stderr, "kubicle operator: bad --namespace %s\n", a->ns);
		return -EINVAL;
	}
	return 0;
}

static void close_walk(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

int cmd_operator(int argc, char **argv)
{
	struct op_args a = {
	    .ns = "kubicle-system", .lease_s = 15, .renew_s = 10, .retry_s = 2, .resync_s = 300};
	struct op o = {0};
	char id[120], host[64] = "";
	if (parse(argc, argv, &a) < 0) {
		fputs(usage, stderr);
		return 2;
	}
	kb_log_set_level(a.log_level ? a.log_level : "info");
	if (!a.id) {
		const char *pod = getenv("POD_NAME");
		gethostname(host, sizeof(host) - 1);
		snprintf(id, sizeof(id), "%.100s_%d", pod && *pod ? pod : host, (int)getpid());
		a.id = id;
	}
	uv_loop_init(&o.loop);
	o.cfg =
	    (struct op_config){.image = a.image, .id = a.id, .ns = a.ns, .resync_s = a.resync_s};
	o.retry_s = a.retry_s;
	o.install_crd = !a.no_crd;
	o.queue = json_object();
	o.polls = json_object();
	o.tenants = (struct op_watch){
	    .o = &o, .what = "tenant", .path = OP_TENANTS, .query = "", .on_object = on_tenant};
	o.sets = (struct op_watch){.o = &o,
				   .what = "statefulset",
				   .path = "/apis/apps/v1/statefulsets",
				   .query = "labelSelector=kubicle.dev%2Ftenant&",
				   .on_object = on_statefulset};
	int rc = open_clients(&o, &a, a.kubeconfig);
	if (rc < 0) {
		fprintf(stderr, "kubicle operator: host credentials %s: %s\n",
			a.kubeconfig ? a.kubeconfig : "(in-cluster)", strerror(-rc));
		o.exit_code = 1;
		goto out;
	}
	kb_info("operator", "%s: candidate for Lease %s/%s", a.id, a.ns, OP_NAME);
	uv_timer_init(&o.loop, &o.tick);
	o.tick.data = &o;
	uv_signal_init(&o.loop, &o.sigterm);
	uv_signal_init(&o.loop, &o.sigint);
	o.sigterm.data = o.sigint.data = &o;
	uv_signal_start(&o.sigterm, on_signal, SIGTERM);
	uv_signal_start(&o.sigint, on_signal, SIGINT);
	uv_timer_start(&o.tick, on_tick, 0, 0);
	uv_run(&o.loop, UV_RUN_DEFAULT);
out:
	op_elector_stop(o.elector, o.exit_code == 0);
	stop_watch(&o.tenants);
	stop_watch(&o.sets);
	if (o.client)
		kb_httpc_close(o.client);
	uv_walk(&o.loop, close_walk, NULL);
	uv_run(&o.loop, UV_RUN_DEFAULT);
	uv_loop_close(&o.loop);
	hostapi_close(o.h);
	json_decref(o.queue);
	json_decref(o.polls);
	kb_buf_free(&o.tenants.buf);
	kb_buf_free(&o.sets.buf);
	if (o.tmpdir[0]) {
		char p[600];
		snprintf(p, sizeof(p), "%s/kubeconfig", o.tmpdir);
		unlink(p);
		rmdir(o.tmpdir);
	}
	return o.exit_code;
}
