/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The aggregation layer's APIService objects (apiregistration.k8s.io/v1),
 * as kube-apiserver's kube-aggregator keeps them.
 *
 * Local APIServices: one per group/version the tenant serves itself, with no
 * spec.service, named `<version>.<group>` (`v1.` for the core group), as
 * kube's autoregister controller makes them for the built-in groups (label
 * kube-aggregator.kubernetes.io/automanaged=onstart, the priorities of
 * kube-apiserver's table; a group/version missing from that table gets
 * none, as kube skips it) and its crdregistration controller for each
 * served version of a CRD (label value "true", groupPriorityMinimum 1000,
 * versionPriority 100). Their Available condition is Local (objects.c sets
 * it on create, as kube's strategy does; it is put back when changed, as
 * kube's available controller does for local ones).
 *
 * DESIGN: one sync function compares the wanted local APIServices with the
 * stored ones. At start it handles both kinds: an `onstart` one is created
 * or has its spec put back, and one no longer served is deleted; after
 * start, `onstart` ones are left alone (kube syncs them once) while the CRD
 * ones (`true`) follow the resource table (crd.c tells it: crd_on_change)
 * and are put back when someone edits or deletes them (a watch of the
 * APIServices). An APIService of a wanted name without the automanaged label
 * is the user's and is left alone. Syncs after start run from a zero-delay
 * timer, so that a burst of changes makes one pass and no write happens
 * inside a store callback.
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/aggregation/aggregation.h"

#define AUTO_LABEL  "kube-aggregator.kubernetes.io/automanaged"
#define MANAGER     "kube-apiserver"
#define CRD_GROUP_P 1000 /* crdregistration's priorities */
#define CRD_VER_P   100

/* kube-apiserver's apiVersionPriorities (cmd/kube-apiserver/app/aggregator.go,
 * pkg/controlplane/apiserver/aggregator.go), for the versions it serves. */
static const struct prio {
	const char *group, *version;
	int group_p, version_p;
} prios[] = {
    {"", "v1", 18000, 1},
    {"apps", "v1", 17800, 15},
    {"events.k8s.io", "v1", 17750, 15},
    {"authentication.k8s.io", "v1", 17700, 15},
    {"authentication.k8s.io", "v1beta1", 17700, 9},
    {"authorization.k8s.io", "v1", 17600, 15},
    {"autoscaling", "v1", 17500, 15},
    {"autoscaling", "v2", 17500, 30},
    {"batch", "v1", 17400, 15},
    {"certificates.k8s.io", "v1", 17300, 15},
    {"networking.k8s.io", "v1", 17200, 15},
    {"policy", "v1", 17100, 15},
    {"rbac.authorization.k8s.io", "v1", 17000, 15},
    {"storage.k8s.io", "v1", 16800, 15},
    {"apiextensions.k8s.io", "v1", 16700, 15},
    {"admissionregistration.k8s.io", "v1", 16700, 15},
    {"scheduling.k8s.io", "v1", 16600, 15},
    {"coordination.k8s.io", "v1", 16500, 15},
    {"node.k8s.io", "v1", 16300, 15},
    {"discovery.k8s.io", "v1", 16200, 15},
    {"flowcontrol.apiserver.k8s.io", "v1", 16100, 21},
};

struct apisvc {
	struct proxy *px;
	uv_timer_t timer; /* a pending sync of the CRD ones */
	store_watch_t *watch;
	bool closing;
};

static const struct prio *find_prio(const char *group, const char *version)
{
	for (size_t i = 0; i < KB_ARRAY_SIZE(prios); i++)
		if (strcmp(prios[i].group, group) == 0 && strcmp(prios[i].version, version) == 0)
			return &prios[i];
	return NULL;
}

bool apiservice_local_priority(const char *group, const char *version, int *group_p, int *version_p)
{
	const struct prio *p = find_prio(group, version);
	*group_p = p ? p->group_p : 0;
	*version_p = p ? p->version_p : 0;
	return p != NULL;
}

/* The local APIService wanted for `res`'s group/version (new reference), or
 * NULL when kube would not make one. */
static json_t *wanted_for(struct proxy *px, const struct proxy_resource *res)
{
	int gp = CRD_GROUP_P, vp = CRD_VER_P;
	const char *label = "true";
	if (metrics_row(res) || aggregator_backs(px, res->group, res->version))
		return NULL;
	if (!res->crd) {
		const struct prio *p = find_prio(res->group, res->version);
		if (!p)
			return NULL;
		gp = p->group_p;
		vp = p->version_p;
		label = "onstart";
	}
	char name[320];
	snprintf(name, sizeof(name), "%s.%s", res->version, res->group);
	json_t *spec = json_pack("{s:s,s:i,s:i}", "version", res->version, "groupPriorityMinimum",
				 gp, "versionPriority", vp);
	if (res->group[0])
		json_object_set_new(spec, "group", json_string(res->group));
	return json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:o}", "apiVersion", "apiregistration.k8s.io/v1",
			 "kind", "APIService", "metadata", "name", name, "labels", AUTO_LABEL,
			 label, "spec", spec);
}

/* name -> wanted object, over the resource table (the first row of each
 * group/version makes it: the table has several a version). */
static json_t *wanted_all(struct proxy *px)
{
	json_t *want = json_object();
	char name[320];
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *res = resource_at(i);
		snprintf(name, sizeof(name), "%s.%s", res->version, res->group);
		if (json_object_get(want, name))
			continue;
		json_t *o = wanted_for(px, res);
		if (o)
			json_object_set_new(want, name, o);
	}
	return want;
}

static const char *auto_label(const json_t *o)
{
	return json_string_value(json_object_get(obj_get(o, "metadata.labels"), AUTO_LABEL));
}

/* Whether have's spec is want's (absent and empty or false alike). */
static bool same_spec(const json_t *have, const json_t *want)
{
	static const char *const keys[] = {
	    "group",   "version",  "groupPriorityMinimum", "versionPriority",
	    "service", "caBundle", "insecureSkipTLSVerify"};
	const json_t *a = json_object_get(have, "spec"), *b = json_object_get(want, "spec");
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		const json_t *x = json_object_get(a, keys[i]), *y = json_object_get(b, keys[i]);
		bool xe = !x || (json_is_string(x) && !*json_string_value(x)) || json_is_false(x);
		bool ye = !y || (json_is_string(y) && !*json_string_value(y)) || json_is_false(y);
		if (!(xe && ye) && !(x && y && json_equal(x, y)))
			return false;
	}
	return true;
}

static int put_back(struct proxy *px, const json_t *have, const json_t *want)
{
	json_t *upd = json_deep_copy(have);
	json_object_set(upd, "spec", json_object_get(want, "spec")); /* the spec only, as kube */
	int rc = proxy_object_update(px, "apiregistration.k8s.io", "v1", "apiservices", upd,
				     MANAGER, NULL);
	if (rc < 0)
		kb_warn("apiservice", "update %s: %s", obj_str(have, "metadata.name"),
			strerror(-rc));
	json_decref(upd);
	return rc;
}

#define LOCAL_MSG "Local APIServices are always available"

/* A local APIService (no spec.service) whose Available condition is kube's
 * Local one. */
static bool local_ok(const json_t *o)
{
	if (json_is_object(obj_get(o, "spec.service")))
		return true; /* the aggregator's */
	size_t i;
	json_t *c;
	json_array_foreach (obj_get(o, "status.conditions"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "type")) ?: "", "Available") == 0)
			return strcmp(json_string_value(json_object_get(c, "status")) ?: "",
				      "True") == 0 &&
			       strcmp(json_string_value(json_object_get(c, "reason")) ?: "",
				      "Local") == 0 &&
			       strcmp(json_string_value(json_object_get(c, "message")) ?: "",
				      LOCAL_MSG) == 0;
	return false;
}

/* kube's available controller on a local APIService: Available=True,
 * Local (the transition time moves when the status does). */
static int make_local_available(struct proxy *px, const json_t *o)
{
	json_t *upd = json_deep_copy(o);
	json_t *conds = kb_json_object_at(upd, "status");
	json_t *list = json_object_get(conds, "conditions"), *c = NULL, *x;
	size_t i;
	if (!json_is_array(list))
		json_object_set_new(conds, "conditions", list = json_array());
	json_array_foreach (list, i, x)
		if (strcmp(json_string_value(json_object_get(x, "type")) ?: "", "Available") == 0)
			c = x;
	if (!c || strcmp(json_string_value(json_object_get(c, "status")) ?: "", "True") != 0) {
		char ts[40];
		kb_time_rfc3339(time(NULL), ts, sizeof(ts));
		json_t *n = json_pack("{s:s,s:s,s:s}", "type", "Available", "status", "True",
				      "lastTransitionTime", ts);
		if (c)
			json_object_update(c, n);
		else
			json_array_append(list, c = n);
		json_decref(n);
	}
	json_object_set_new(c, "reason", json_string("Local"));
	json_object_set_new(c, "message", json_string(LOCAL_MSG));
	int rc = proxy_object_update_status(px, "apiregistration.k8s.io", "v1", "apiservices", upd,
					    MANAGER, NULL);
	if (rc < 0 && rc != -ENOENT)
		kb_warn("apiservice", "status of %s: %s", obj_str(o, "metadata.name"),
			strerror(-rc));
	json_decref(upd);
	return rc;
}

/*
 * The start's stamp (store kv STAMP_KEY): a fingerprint of the stored
 * APIServices' texts and of the wanted ones, written after a start's sync.
 * A start that finds both as stamped skips the sync, which would find
 * every one as wanted and write nothing: its list, parse and comparison of
 * the 21 (2.2 M instructions of a start on existing data) become one pass
 * over their texts. Any write to an APIService changes its text (its
 * resourceVersion at least), so a user's edit or deletion of a local one
 * is put back at the next start, as kube's autoregister controller does at
 * every start; the wanted side changes with the resource table (a CRD
 * served or gone) and with the wanted objects' form (one of them is part
 * of it). FNV-1a over the texts with their count and lengths: a cache key,
 * not a security one (whoever can write an APIService can also delete it).
 */
#define STAMP_KEY "apiservices-synced"

struct fingerprint {
	uint64_t h;
	size_t n;
	json_t *backed; /* NULL, or gets the service-backed ones, parsed */
};

static int fp_text(const char *text, size_t len, void *arg)
{
	struct fingerprint *f = arg;
	uint64_t l = len;
	f->h = kb_fnv1a(kb_fnv1a(f->h, &l, sizeof(l)), text, len);
	f->n++;
	if (f->backed && memmem(text, len, "\"service\"", 9)) {
		json_t *o = kb_json_loadb(text, len, 0, NULL);
		if (json_is_object(obj_get(o, "spec.service")))
			json_array_append(f->backed, o);
		json_decref(o);
	}
	return 0;
}

/* The wanted side: what wanted_all would build, as (name, priorities,
 * label) per row, and the form of the first wanted object. */
static uint64_t wanted_fp(struct proxy *px)
{
	uint64_t h = KB_FNV1A_INIT;
	bool form = false;
	char line[400];
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *res = resource_at(i);
		const struct prio *p = res->crd ? NULL : find_prio(res->group, res->version);
		if (metrics_row(res) || aggregator_backs(px, res->group, res->version) ||
		    (!res->crd && !p))
			continue;
		int n = snprintf(line, sizeof(line), "%s.%s %d %d %s\n", res->version, res->group,
				 p ? p->group_p : CRD_GROUP_P, p ? p->version_p : CRD_VER_P,
				 p ? "onstart" : "true");
		h = kb_fnv1a(h, line, n > 0 && (size_t)n < sizeof(line) ? (size_t)n : 0);
		if (!form) {
			json_t *o = wanted_for(px, res);
			char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
			if (text)
				h = kb_fnv1a(h, text, strlen(text));
			free(text);
			json_decref(o);
			form = true;
		}
	}
	return h;
}

/* The stamp of the APIServices stored now (parsing the service-backed
 * ones into backed, when not NULL) and of `want`. */
static int stamp_now(struct proxy *px, uint64_t want, json_t *backed, char *out, size_t len)
{
	const struct proxy_resource *res =
	    resource_find("apiregistration.k8s.io", "v1", "apiservices");
	struct fingerprint f = {.h = KB_FNV1A_INIT, .backed = backed};
	struct store_list_req lr = {.res = res->store_key};
	int64_t rev;
	int rc = store_list_text(px->store, &lr, fp_text, &f, &rev);
	snprintf(out, len, "%016llx %016llx %zu", (unsigned long long)f.h, (unsigned long long)want,
		 f.n);
	return rc;
}

/* One pass; `start` also handles the onstart ones. */
/* *listed (may be NULL) gets the APIServices as listed when the sync wrote
 * none of those with a spec.service, the only ones the aggregator keeps
 * (aggregator.c backend_sync): its writes are creates of local ones, their
 * Available status, and the spec or deletion of local ones, so the
 * aggregator need not list and parse them again; NULL otherwise. New
 * reference. */
static void sync_local(struct proxy *px, bool start, json_t **listed)
{
	json_t *have = NULL;
	bool backed_written = false, failed = false;
	char stamp[80] = "", *stamped = NULL;
	uint64_t want_fp = 0;
	if (listed)
		*listed = NULL;
	if (start) {
		json_t *backed = json_array();
		want_fp = wanted_fp(px);
		if (stamp_now(px, want_fp, backed, stamp, sizeof(stamp)) == 0 &&
		    store_kv_get(px->store, STAMP_KEY, &stamped) == 0 &&
		    strcmp(stamped, stamp) == 0) {
			free(stamped);
			if (listed)
				*listed = backed; /* all the aggregator keeps */
			else
				json_decref(backed);
			return;
		}
		json_decref(backed);
	}
	int64_t rev = store_rev(px->store);
	if (proxy_object_list(px, "apiregistration.k8s.io", "v1", "apiservices", NULL, &have) < 0) {
		free(stamped);
		return;
	}
	json_t *want = wanted_all(px);
	size_t i;
	json_t *o;
	store_txn_begin(px->store); /* one commit for the first start's twenty */
	json_array_foreach (have, i, o) {
		const char *name = obj_str(o, "metadata.name"), *label = auto_label(o);
		const json_t *w = json_object_get(want, name);
		bool mine = label && (strcmp(label, "true") == 0 || (start && *label));
		if (!local_ok(o))
			failed |= make_local_available(px, o) < 0;
		if (w) {
			if (label && *label &&
			    (start || strcmp(auto_label(w) ?: "", "true") == 0) &&
			    !same_spec(o, w)) {
				backed_written |= json_is_object(obj_get(o, "spec.service"));
				failed |= put_back(px, o, w) < 0;
			}
			json_object_del(want, name);
		} else if (mine) {
			backed_written |= json_is_object(obj_get(o, "spec.service"));
			int rc = proxy_object_delete(px, "apiregistration.k8s.io", "v1",
						     "apiservices", NULL, name, NULL, NULL,
						     "kube-apiserver-autoregistration");
			if (rc < 0 && rc != -ENOENT)
				kb_warn("apiservice", "delete %s: %s", name, strerror(-rc));
			failed |= rc < 0 && rc != -ENOENT;
		}
	}
	const char *name;
	json_object_foreach (want, name, o) {
		if (!start && strcmp(auto_label(o) ?: "", "true") != 0)
			continue;
		json_t *obj = json_deep_copy(o);
		int rc = proxy_object_create(px, "apiregistration.k8s.io", "v1", "apiservices", obj,
					     MANAGER, NULL);
		if (rc < 0 && rc != -EEXIST)
			kb_warn("apiservice", "create %s: %s", name, strerror(-rc));
		failed |= rc < 0 && rc != -EEXIST;
		json_decref(obj);
	}
	bool written = store_txn_commit(px->store) == 0;
	if (!written)
		kb_warn("apiservice", "the local APIServices could not be written");
	json_decref(want);
	if (listed && !backed_written)
		*listed = json_incref(have);
	json_decref(have);
	/* the stamp of what the sync leaves (the texts again only if it wrote);
	 * none after a write that failed, which the next start tries again */
	if (start && written && !failed &&
	    (store_rev(px->store) == rev ||
	     stamp_now(px, want_fp, NULL, stamp, sizeof(stamp)) == 0) &&
	    stamp[0] && (!stamped || strcmp(stamped, stamp) != 0))
		store_kv_set(px->store, STAMP_KEY, stamp);
	free(stamped);
}

static void on_timer(uv_timer_t *t)
{
	struct apisvc *as = kb_container_of(t, struct apisvc, timer);
	sync_local(as->px, false, NULL);
}

static void schedule(struct apisvc *as)
{
	if (!as->closing && !uv_is_active((uv_handle_t *)&as->timer))
		uv_timer_start(&as->timer, on_timer, 0, 0);
}

static void crds_changed(void *arg)
{
	struct proxy *px = arg;
	if (px->apisvc)
		schedule(px->apisvc);
}

static void on_event(const struct store_event *ev, void *arg)
{
	struct apisvc *as = arg;
	const char *label = auto_label(ev->obj);
	if ((label && strcmp(label, "true") == 0 && ev->type != STORE_ADDED) ||
	    (ev->type != STORE_DELETED && !local_ok(ev->obj)))
		schedule(as);
	aggregator_event(as->px, ev);
}

int apiservice_start(struct proxy *px)
{
	struct apisvc *as = calloc(1, sizeof(*as));
	if (!as)
		return -ENOMEM;
	as->px = px;
	px->apisvc = as;
	crd_on_change(crds_changed, px);
	uv_timer_init(px->loop, &as->timer);
	uv_unref((uv_handle_t *)&as->timer);
	json_t *listed = NULL;
	sync_local(px, true, &listed);
	int rc = aggregator_start(px, listed);
	json_decref(listed);
	if (rc < 0) {
		apiservice_stop(px);
		return rc;
	}
	const struct proxy_resource *res =
	    resource_find("apiregistration.k8s.io", "v1", "apiservices");
	/* from now: what the sync and the aggregator have seen is the store as
	 * it is (a list's revision is store_rev) */
	rc = store_watch(px->store, res->store_key, NULL, store_rev(px->store), on_event, as,
			 &as->watch);
	if (rc == 0)
		return 0;
	apiservice_stop(px);
	return rc;
}

static void on_closed(uv_handle_t *h)
{
	free(kb_container_of((uv_timer_t *)h, struct apisvc, timer));
}

void apiservice_stop(struct proxy *px)
{
	struct apisvc *as = px->apisvc;
	if (!as)
		return;
	as->closing = true;
	crd_on_change(NULL, NULL);
	if (as->watch)
		store_unwatch(as->watch);
	aggregator_stop(px);
	px->apisvc = NULL;
	uv_close((uv_handle_t *)&as->timer, on_closed);
}
