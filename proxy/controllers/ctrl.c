/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The controller manager's core: start and stop, the store watch that
 * turns changes into queued keys, the de-duplicated work queue drained by
 * an idle handle, the 1 s timer of delayed keys (retries with backoff),
 * and the resync at start.
 * See proxy/controllers/controllers.h for the DESIGN.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/model/resource.h"

#define BATCH 64

static void queue_push(struct ctrl *c, const char *key);

void ctrl_enqueue(struct ctrl *c, const char *kind, const char *ns, const char *name)
{
	char key[600];
	if (c->stopping || !name)
		return;
	snprintf(key, sizeof(key), "%s\t%s\t%s", kind, ns ? ns : "", name);
	queue_push(c, key);
}

void ctrl_enqueue_after(struct ctrl *c, const char *kind, const char *ns, const char *name,
			double seconds)
{
	char key[600];
	if (c->stopping || !name)
		return;
	snprintf(key, sizeof(key), "%s\t%s\t%s", kind, ns ? ns : "", name);
	uint64_t due = kb_now_ms() + (uint64_t)(seconds > 0 ? seconds * 1000 : 0);
	uint64_t *have = kmap_get(c->delayed, key);
	if (have) {
		if (*have > due)
			*have = due;
		return;
	}
	uint64_t *d = malloc(sizeof(*d));
	if (!d)
		return;
	*d = due;
	kmap_put(c->delayed, key, d);
}

static void on_idle(uv_idle_t *h);

static void queue_push(struct ctrl *c, const char *key)
{
	if (kmap_has(c->queued, key))
		return;
	if (c->qhead + c->qlen == c->qcap) {
		if (c->qhead > 0) {
			memmove(c->q, c->q + c->qhead, c->qlen * sizeof(*c->q));
			c->qhead = 0;
		} else {
			size_t cap = c->qcap ? c->qcap * 2 : 256;
			char **q = realloc(c->q, cap * sizeof(*q));
			if (!q)
				return;
			c->q = q;
			c->qcap = cap;
		}
	}
	char *k = strdup(key);
	if (!k || kmap_put(c->queued, key, NULL) < 0) {
		free(k);
		return;
	}
	c->q[c->qhead + c->qlen++] = k;
	if (!c->idle_on) {
		uv_idle_start(&c->idle, on_idle);
		c->idle_on = true;
	}
}

static int dispatch(struct ctrl *c, const char *kind, const char *ns, const char *name);

/* A failed sync is tried again, as kube's controllers requeue a key with
 * their work queue's rate limiter: a conflict or a transient failure after
 * 1 s; anything else (a write admission refused, an invalid object) after
 * 1 s doubling per failure of that key up to FAIL_MAX_S, until a sync of it
 * succeeds. */
#define FAIL_MAX_S 300

/* One more failure of key in counts (key -> unsigned*): the delay before
 * the next try, 1 s doubling per failure up to FAIL_MAX_S. */
static double backoff(struct kmap *counts, const char *key)
{
	unsigned *n = kmap_get(counts, key);
	if (!n && (n = calloc(1, sizeof(*n))) && kmap_put(counts, key, n) < 0) {
		free(n);
		n = NULL;
	}
	unsigned tries = n ? ++*n : 1;
	double delay = tries > 9 ? FAIL_MAX_S : (double)(1u << (tries - 1));
	return delay > FAIL_MAX_S ? FAIL_MAX_S : delay;
}

static void process(struct ctrl *c, char *key)
{
	char full[600];
	snprintf(full, sizeof(full), "%s", key);
	char *ns = strchr(key, '\t');
	char *name = ns ? strchr(ns + 1, '\t') : NULL;
	if (!name)
		return;
	*ns++ = '\0';
	*name++ = '\0';
	int rc = dispatch(c, key, ns, name);
	if (rc == 0 || rc == -ENOENT || rc == -EINPROGRESS) {
		/* -EINPROGRESS: a write is in its admission webhooks; its store
		 * event brings the key back */
		kmap_del(c->failures, full);
	} else if (rc == -ESTALE || rc == -EEXIST || rc == -EIO || rc == -ENOMEM) {
		kb_debug("ctrl", "%s %s/%s: %s, retrying", key, ns, name, strerror(-rc));
		ctrl_enqueue_after(c, key, ns, name, 1);
	} else {
		double delay = backoff(c->failures, full);
		kb_warn("ctrl", "%s %s/%s: %s; trying again in %.0f s", key, ns, name,
			strerror(-rc), delay);
		ctrl_enqueue_after(c, key, ns, name, delay);
	}
}

static void on_idle(uv_idle_t *h)
{
	struct ctrl *c = h->data;
	for (int i = 0; i < BATCH && c->qlen > 0 && !c->stopping; i++) {
		char *key = c->q[c->qhead++];
		c->qlen--;
		kmap_del(c->queued, key);
		process(c, key);
		free(key);
	}
	if (c->qlen == 0) {
		c->qhead = 0;
		uv_idle_stop(&c->idle);
		c->idle_on = false;
	}
}

struct due_scan {
	struct ctrl *c;
	uint64_t now;
	char **keys;
	size_t n, cap;
};

static void collect_due(const char *key, void *val, void *arg)
{
	struct due_scan *s = arg;
	if (*(uint64_t *)val > s->now)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **k = realloc(s->keys, cap * sizeof(*k));
		if (!k)
			return;
		s->keys = k;
		s->cap = cap;
	}
	s->keys[s->n++] = strdup(key);
}

static void on_timer(uv_timer_t *t)
{
	kb_timer_start_aligned(t, on_timer, 1000);
	struct ctrl *c = t->data;
	struct due_scan s = {.c = c, .now = kb_now_ms()};
	kmap_each(c->delayed, collect_due, &s);
	for (size_t i = 0; i < s.n; i++) {
		if (!s.keys[i])
			continue;
		kmap_del(c->delayed, s.keys[i]);
		queue_push(c, s.keys[i]);
		free(s.keys[i]);
	}
	free(s.keys);
	ctrl_events_expire(c);
}

static int dispatch(struct ctrl *c, const char *kind, const char *ns, const char *name)
{
	if (strcmp(kind, "rs") == 0)
		return ctrl_rs_sync(c, ns, name);
	if (strcmp(kind, "rc") == 0)
		return ctrl_rc_sync(c, ns, name);
	if (strcmp(kind, "deploy") == 0)
		return ctrl_deploy_sync(c, ns, name);
	if (strcmp(kind, "job") == 0)
		return ctrl_job_sync(c, ns, name);
	if (strcmp(kind, "cj") == 0)
		return ctrl_cj_sync(c, ns, name);
	if (strcmp(kind, "sts") == 0)
		return ctrl_sts_sync(c, ns, name);
	if (strcmp(kind, "ep") == 0)
		return ctrl_ep_sync(c, ns, name);
	if (strcmp(kind, "eps") == 0)
		return ctrl_eps_sync(c, ns, name);
	if (strcmp(kind, "gc") == 0)
		return ctrl_gc_sync(c, name);
	if (strcmp(kind, "jobpods") == 0)
		return ctrl_job_release_orphans(c, ns);
	if (strcmp(kind, "csr") == 0)
		return ctrl_csr_sync(c, ns, name);
	if (strcmp(kind, "vapstatus") == 0)
		return ctrl_vap_status_sync(c, ns, name);
	if (strcmp(kind, "nsdefaults") == 0)
		return ctrl_nsdefaults_sync(c, ns, name);
	if (strcmp(kind, "fsstatus") == 0)
		return ctrl_fsstatus_sync(c, ns, name);
	if (strcmp(kind, "hpa") == 0)
		return ctrl_hpa_sync(c, ns, name);
	if (strcmp(kind, "pdb") == 0)
		return ctrl_pdb_sync(c, ns, name);
	if (strcmp(kind, "pdbpod") == 0)
		return ctrl_pdb_pod_sync(c, ns, name);
	if (strcmp(kind, "ephemeral") == 0)
		return ctrl_ephemeral_sync(c, ns, name);
	return 0;
}

/* ---- events ------------------------------------------------------------- */

static const char *const workloads[][2] = {
    {"apps/replicasets", "rs"},        {"apps/deployments", "deploy"}, {"batch/jobs", "job"},
    {"batch/cronjobs", "cj"},          {"apps/statefulsets", "sts"},   {CSR_RES, "csr"},
    {"/replicationcontrollers", "rc"}, {VAP_RES, "vapstatus"},         {PDB_RES, "pdb"},
};

static const char *kind_of_res(const char *res)
{
	for (size_t i = 0; i < KB_ARRAY_SIZE(workloads); i++)
		if (strcmp(res, workloads[i][0]) == 0)
			return workloads[i][1];
	return NULL;
}

/* Queue key kind of an owner reference's kind, or NULL. */
static const char *kind_of_owner(const json_t *ref)
{
	const char *k = json_string_value(json_object_get(ref, "kind"));
	const char *av = json_string_value(json_object_get(ref, "apiVersion"));
	if (!k || !av)
		return NULL;
	if (strcmp(av, "apps/v1") == 0) {
		if (strcmp(k, "ReplicaSet") == 0)
			return "rs";
		if (strcmp(k, "Deployment") == 0)
			return "deploy";
		if (strcmp(k, "StatefulSet") == 0)
			return "sts";
	} else if (strcmp(av, "batch/v1") == 0) {
		if (strcmp(k, "Job") == 0)
			return "job";
		if (strcmp(k, "CronJob") == 0)
			return "cj";
	} else if (strcmp(av, "v1") == 0 && strcmp(k, "ReplicationController") == 0) {
		return "rc";
	}
	return NULL;
}

/* The controller of an object (ref: its controller reference, or NULL). */
static void enqueue_owner(struct ctrl *c, const json_t *ref, const char *ns)
{
	const char *k = ref ? kind_of_owner(ref) : NULL;
	if (k)
		ctrl_enqueue(c, k, ns, json_string_value(json_object_get(ref, "name")));
}

/* ---- the lists a pod event reads ---- */

/* Kinds a pod's event lists in its namespace (pod controllers, services,
 * budgets): each namespace's list is kept, empty ones too, until an object of
 * that kind in that namespace changes, as kube's informers answer from
 * memory. */
static const char *const kept[] = {"apps/replicasets",        "batch/jobs", "apps/statefulsets",
				   "/replicationcontrollers", "/services",  PDB_RES};

static bool is_kept(const char *res)
{
	for (size_t i = 0; i < KB_ARRAY_SIZE(kept); i++)
		if (strcmp(kept[i], res) == 0)
			return true;
	return false;
}

static void list_free(void *v)
{
	json_decref(v);
}

/* A kept list's key "res\tns" into key[400] (cut as snprintf cut it): made
 * for every pod event, some five times, so not through snprintf. */
static void list_key(char *key, const char *res, const char *ns)
{
	size_t n = strlen(res), m = ns ? strlen(ns) : 0;
	if (n > 399)
		n = 399;
	memcpy(key, res, n);
	if (n < 399)
		key[n++] = '\t';
	if (m > 399 - n)
		m = 399 - n;
	memcpy(key + n, ns ? ns : "", m);
	key[n + m] = '\0';
}

/* A kept kind's list (res one of kept[]). New reference. */
static json_t *list_kept(struct ctrl *c, const char *res, const char *ns)
{
	char key[400];
	list_key(key, res, ns);
	json_t *have = kmap_get(c->lists, key);
	if (have)
		return json_incref(have);
	json_t *items = ctrl_list(c, res, ns);
	if (kmap_put(c->lists, key, json_incref(items)) < 0)
		json_decref(items);
	return items;
}

json_t *ctrl_list_kept(struct ctrl *c, const char *res, const char *ns)
{
	return is_kept(res) ? list_kept(c, res, ns) : ctrl_list(c, res, ns);
}

/* An orphan pod: every pod controller of its namespace may adopt it. */
static void enqueue_adopters(struct ctrl *c, const char *ns)
{
	const char *res[][2] = {{"apps/replicasets", "rs"},
				{"batch/jobs", "job"},
				{"apps/statefulsets", "sts"},
				{"/replicationcontrollers", "rc"}};
	for (size_t i = 0; i < KB_ARRAY_SIZE(res); i++) {
		json_t *items = list_kept(c, res[i][0], ns);
		size_t j;
		json_t *o;
		json_array_foreach (items, j, o)
			ctrl_enqueue(c, res[i][1], ns, ctrl_name(o));
		json_decref(items);
	}
}

/* A pod holding the Job controller's tracking finalizer. */
static bool tracked_by_job(const json_t *pod)
{
	const json_t *fins = ctrl_path(pod, "metadata.finalizers");
	size_t i;
	json_t *f;
	json_array_foreach (fins, i, f)
		if (json_is_string(f) &&
		    strcmp(json_string_value(f), "batch.kubernetes.io/job-tracking") == 0)
			return true;
	return false;
}

/* The Endpoints and EndpointSlices of a service. */
static void enqueue_service(struct ctrl *c, const char *ns, const char *name)
{
	ctrl_enqueue(c, "ep", ns, name);
	ctrl_enqueue(c, "eps", ns, name);
}

/* A pod changed: the services selecting it before or after. */
static void enqueue_selecting(struct ctrl *c, const struct store_event *ev)
{
	json_t *svcs = list_kept(c, "/services", ev->ns);
	size_t i;
	json_t *s;
	json_array_foreach (svcs, i, s)
		if (ctrl_ep_selects(s, ev->obj) || (ev->prev && ctrl_ep_selects(s, ev->prev)))
			enqueue_service(c, ev->ns, ctrl_name(s));
	json_decref(svcs);
}

/* Service, pod, Endpoints and EndpointSlice events for both controllers:
 * a deleted Endpoints is remade, a changed slice is checked. */
static void endpoints_event(struct ctrl *c, const struct store_event *ev)
{
	if (strcmp(ev->res, "/services") == 0)
		enqueue_service(c, ev->ns, ev->name);
	else if (strcmp(ev->res, "/pods") == 0)
		enqueue_selecting(c, ev);
	else if (strcmp(ev->res, "/endpoints") == 0 && ev->type == STORE_DELETED)
		ctrl_enqueue(c, "ep", ev->ns, ev->name);
	else if (strcmp(ev->res, "discovery.k8s.io/endpointslices") == 0)
		ctrl_enqueue(
		    c, "eps", ev->ns,
		    json_string_value(json_object_get(ctrl_path(ev->obj, "metadata.labels"),
						      "kubernetes.io/service-name")));
}

static void on_event(const struct store_event *ev, void *arg)
{
	struct ctrl *c = arg;
	if (c->stopping)
		return;
	if (kmap_size(c->refusals)) { /* changed: a refused write's count starts again */
		char key[600];
		snprintf(key, sizeof(key), "%s\t%s\t%s", ev->res, ev->ns ? ev->ns : "", ev->name);
		kmap_del(c->refusals, key);
	}
	if (is_kept(ev->res)) { /* its namespace's list is read again */
		char key[400];
		list_key(key, ev->res, ev->ns);
		kmap_del(c->lists, key);
	}
	ctrl_gc_index(c, ev->res, ev);
	endpoints_event(c, ev);
	ctrl_nsdefaults_event(c, ev);
	ctrl_fsstatus_event(c, ev);
	ctrl_ephemeral_event(c, ev);
	if (strcmp(ev->res, HPA_RES) == 0)
		ctrl_hpa_event(c, ev);
	bool pod = strcmp(ev->res, "/pods") == 0;
	if (pod)
		ctrl_pdb_pod_event(c, ev);
	const char *k = kind_of_res(ev->res);
	if (k)
		ctrl_enqueue(c, k, ev->ns, ev->name);
	if (!k && !pod)
		return;
	const json_t *ref = ctrl_controller_ref(ev->obj);
	enqueue_owner(c, ref, ev->ns);
	if (ev->prev)
		enqueue_owner(c, ctrl_controller_ref(ev->prev), ev->ns);
	if (!pod || ev->type == STORE_DELETED || ref)
		return;
	if (tracked_by_job(ev->obj)) /* an orphan pod */
		ctrl_enqueue(c, "jobpods", ev->ns, "");
	if (json_object_size(json_object_get(json_object_get(ev->obj, "metadata"), "labels")) > 0)
		enqueue_adopters(c, ev->ns);
}

/* A write of the controllers that its webhooks (or what followed them)
 * refused: the object's own key, its controller's and, for the garbage
 * collector, its owners' come back after a delay that doubles with each
 * refusal of that object (1 s to FAIL_MAX_S), as kube's controllers requeue
 * a failed sync; a change of the object starts the count again. */
static void on_write_refused(void *arg, const char *res, const json_t *obj)
{
	struct ctrl *c = arg;
	char key[600];
	if (c->stopping)
		return;
	snprintf(key, sizeof(key), "%s\t%s\t%s", res, ctrl_ns(obj), ctrl_name(obj));
	double delay = backoff(c->refusals, key);
	const char *k = kind_of_res(res);
	if (k)
		ctrl_enqueue_after(c, k, ctrl_ns(obj), ctrl_name(obj), delay);
	size_t i;
	json_t *ref;
	json_array_foreach (ctrl_path(obj, "metadata.ownerReferences"), i, ref) {
		const char *ok = kind_of_owner(ref);
		const char *uid = json_string_value(json_object_get(ref, "uid"));
		if (ok && json_is_true(json_object_get(ref, "controller")))
			ctrl_enqueue_after(c, ok, ctrl_ns(obj),
					   json_string_value(json_object_get(ref, "name")), delay);
		if (uid)
			ctrl_enqueue_after(c, "gc", "", uid, delay);
	}
}

/* ---- start and resync ---------------------------------------------------- */

static bool seen_key(const char *key, size_t upto)
{
	for (size_t i = 0; i < upto; i++)
		if (strcmp(resource_at(i)->store_key, key) == 0)
			return true;
	return false;
}

/* Services are synced; Endpoints too, so that those left without a
 * Service are deleted (kube's checkLeftoverEndpoints, leader-election
 * records excepted). */
static void resync_endpoints(struct ctrl *c, const char *res, const json_t *o)
{
	if (strcmp(res, "/services") == 0)
		enqueue_service(c, ctrl_ns(o), ctrl_name(o));
	else if (strcmp(res, "/endpoints") == 0 &&
		 !json_object_get(ctrl_path(o, "metadata.annotations"),
				  "control-plane.alpha.kubernetes.io/leader"))
		ctrl_enqueue(c, "ep", ctrl_ns(o), ctrl_name(o));
}

/* Lists every stored resource once: the ownership index and the workloads. */
static void resync(struct ctrl *c)
{
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *r = resource_at(i);
		if (!r->stored || seen_key(r->store_key, i))
			continue;
		/* metadata is all this needs, but for the pods' volumes */
		bool pods = strcmp(r->store_key, "/pods") == 0;
		json_t *items =
		    pods ? ctrl_list(c, r->store_key, NULL) : ctrl_list_meta(c, r->store_key);
		const char *k = kind_of_res(r->store_key);
		size_t j;
		json_t *o;
		json_array_foreach (items, j, o) {
			ctrl_gc_index_obj(c, r->store_key, o);
			if (k)
				ctrl_enqueue(c, k, ctrl_ns(o), ctrl_name(o));
			resync_endpoints(c, r->store_key, o);
			if (strcmp(r->store_key, "/namespaces") == 0)
				ctrl_enqueue(c, "nsdefaults", ctrl_name(o), "");
			else if (strcmp(r->kind, "FlowSchema") == 0)
				ctrl_enqueue(c, "fsstatus", "", ctrl_name(o));
			if (strcmp(r->store_key, HPA_RES) == 0)
				ctrl_enqueue(c, "hpa", ctrl_ns(o), ctrl_name(o));
			if (pods && ctrl_path(o, "spec.volumes"))
				ctrl_enqueue(c, "ephemeral", ctrl_ns(o), ctrl_name(o));
		}
		json_decref(items);
	}
	ctrl_gc_resync(c);
}

int ctrl_start(uv_loop_t *loop, store_t *st, proxy_t *px, ctrl_t **out)
{
	struct ctrl *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->loop = loop;
	c->st = st;
	c->px = px;
	c->queued = kmap_new(NULL);
	c->delayed = kmap_new(free);
	c->failures = kmap_new(free);
	c->refusals = kmap_new(free);
	c->events = kmap_new(free);
	c->lists = kmap_new(list_free);
	if (ctrl_gc_init(c) < 0 || ctrl_hpa_init(c) < 0 || !c->queued || !c->delayed ||
	    !c->failures || !c->refusals || !c->events || !c->lists) {
		ctrl_gc_free(c);
		ctrl_hpa_free(c);
		kmap_free(c->queued);
		kmap_free(c->delayed);
		kmap_free(c->failures);
		kmap_free(c->refusals);
		kmap_free(c->events);
		kmap_free(c->lists);
		free(c);
		return -ENOMEM;
	}
	uv_idle_init(loop, &c->idle);
	uv_timer_init(loop, &c->timer);
	c->idle.data = c->timer.data = c;
	c->open_handles = 2;
	resync(c);
	int rc = store_watch(st, NULL, NULL, store_rev(st), on_event, c, &c->watch);
	if (rc < 0) {
		ctrl_stop(c);
		return rc;
	}
	kb_timer_start_aligned(&c->timer, on_timer, 1000);
	proxy_on_write_refused(px, on_write_refused, c);
	kb_info("ctrl", "controllers started: %zu objects indexed, %zu keys queued",
		kmap_size(c->objs), c->qlen);
	*out = c;
	return 0;
}

static void on_close(uv_handle_t *h)
{
	struct ctrl *c = h->data;
	if (--c->open_handles > 0)
		return;
	for (size_t i = 0; i < c->qlen; i++)
		free(c->q[c->qhead + i]);
	free(c->q);
	kmap_free(c->queued);
	kmap_free(c->delayed);
	kmap_free(c->failures);
	kmap_free(c->refusals);
	kmap_free(c->events);
	kmap_free(c->lists);
	ctrl_gc_free(c);
	kb_pki_ca_free(c->ca);
	free(c);
}

void ctrl_stop(ctrl_t *c)
{
	if (!c || c->stopping)
		return;
	c->stopping = true;
	proxy_on_write_refused(c->px, NULL, NULL);
	ctrl_hpa_free(c); /* no metrics answer may come back after this */
	if (c->watch)
		store_unwatch(c->watch);
	c->watch = NULL;
	uv_close((uv_handle_t *)&c->idle, on_close);
	uv_close((uv_handle_t *)&c->timer, on_close);
}
