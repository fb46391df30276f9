/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CustomResourceDefinitions (apiextensions.k8s.io/v1) as kube-apiserver
 * serves them: each served version of a CRD becomes a run-time row of the
 * resource table (proxy/model/resource.h), so the generic handlers, discovery,
 * OpenAPI, Table output and watch serve custom objects with no code of
 * their own. This file keeps those rows in step with the store, checks CRD
 * objects, runs the schema checks (proxy/validation/crd_validate.h) on custom objects and
 * serves the scale subresource with the CRD's replica paths.
 *
 * DESIGN
 * A store watch on the CRD resource drives everything: ADDED/MODIFIED
 * (re)builds the CRD's rows in version priority order (the first is the
 * group's preferred version), then writes the status a controller would
 * (NamesAccepted, Established, acceptedNames, storedVersions) when it
 * differs; DELETED deletes every object of the resource in all namespaces
 * and removes the rows. Store events are delivered when the writing
 * transaction commits, before the client is answered, so a resource is
 * served as soon as its CRD's create returns.
 *
 * All versions of a CRD share one store key "<group>/<plural>" (conversion
 * None: an object is stored once; its apiVersion is the one it was written
 * with).
 *
 * Lifetimes: a request or a watch stream may hold a row pointer after its
 * CRD is gone, so rows are never freed: a removed row is kept inactive and
 * reused if the same group/version/plural comes back. Row strings are
 * interned for the life of the process. Each tenant is its own process: the
 * table is the tenant's alone.
 *
 * Threading: loop thread only.
 */
#include "proxy/validation/crd_validate.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "proxy/model/openapi.h"
#include "proxy/patch/patch.h"
#include "proxy/api/api.h"
#include "proxy/validation/validate.h"

#define CRD_KEY     "apiextensions.k8s.io/customresourcedefinitions"
#define MAX_NAMES   16
#define CLEANUP_FIN "customresourcecleanup.apiextensions.k8s.io"

struct crd_row {
	struct proxy_resource r; /* first: rows are handed out as this */
	struct crd_row *next;    /* every row ever made */
	const char *crd_name;    /* interned "<plural>.<group>" */
	bool active;
	const char *shorts[MAX_NAMES + 1];
	const char *cats[MAX_NAMES + 1];
	struct proxy_subresource subs[3];
	struct resource_scale scale; /* the CRD's scale paths; NULL: none */
	struct crd_rules *rules;     /* compiled x-kubernetes-validations, or NULL */
};

static struct crd_row *all_rows;
static store_watch_t *crd_watch;
static struct proxy *crd_px;

/* ---- interned strings ---------------------------------------------------------- */

struct istr {
	struct istr *next;
	char s[];
};
static struct istr *istrs;

static const char *intern(const char *s)
{
	if (!s)
		return NULL;
	for (struct istr *i = istrs; i; i = i->next)
		if (strcmp(i->s, s) == 0)
			return i->s;
	size_t n = strlen(s);
	struct istr *i = malloc(sizeof(*i) + n + 1);
	KB_REQUIRE(i);
	memcpy(i->s, s, n + 1);
	i->next = istrs;
	istrs = i;
	return i->s;
}

static const char *js(const json_t *o, const char *path)
{
	const char *s = obj_str(o, path);
	return s ? s : "";
}

/* ---- rows from a CRD ----------------------------------------------------------- */

static struct crd_row *row_of(const struct proxy_resource *r)
{
	for (struct crd_row *c = all_rows; c; c = c->next)
		if (&c->r == r)
			return c;
	return NULL;
}

static struct crd_row *row_find(const char *group, const char *version, const char *plural)
{
	for (struct crd_row *c = all_rows; c; c = c->next)
		if (strcmp(c->r.group, group) == 0 && strcmp(c->r.version, version) == 0 &&
		    strcmp(c->r.plural, plural) == 0)
			return c;
	return NULL;
}

static void set_names(const char **dst, const json_t *arr)
{
	size_t i, n = 0;
	json_t *v;
	json_array_foreach (arr, i, v)
		if (json_is_string(v) && n < MAX_NAMES)
			dst[n++] = intern(json_string_value(v));
	dst[n] = NULL;
}

static const char *path_of(const json_t *scale, const char *key)
{
	const char *p = json_string_value(json_object_get(scale, key));
	if (!p || !*p)
		return NULL;
	return intern(p[0] == '.' ? p + 1 : p);
}

static void fill_subresources(struct crd_row *c, const json_t *v)
{
	const json_t *subs = json_object_get(v, "subresources");
	const json_t *scale = json_object_get(subs, "scale");
	size_t n = 0;
	unsigned verbs = VERB_GET | VERB_PATCH | VERB_UPDATE;
	memset(c->subs, 0, sizeof(c->subs));
	if (json_object_get(subs, "status"))
		c->subs[n++] = (struct proxy_subresource){"status", c->r.group, c->r.version,
							  c->r.kind, verbs};
	c->scale.spec_replicas = c->scale.status_replicas = c->scale.selector_path = NULL;
	c->r.scale = &c->scale;
	if (json_is_object(scale)) {
		c->subs[n++] =
		    (struct proxy_subresource){"scale", "autoscaling", "v1", "Scale", verbs};
		c->scale.spec_replicas = path_of(scale, "specReplicasPath");
		c->scale.status_replicas = path_of(scale, "statusReplicasPath");
		c->scale.selector_path = path_of(scale, "labelSelectorPath");
	}
	c->r.subresources = n ? c->subs : NULL;
	c->r.has_status = json_object_get(subs, "status") != NULL;
}

/*
 * Kubicle's own read-only kinds: the syncer writes their objects straight
 * into the store (gpuusages.kubicle.dev, syncer/ledger.c's showback) and
 * the API serves only get, list and watch, as kube serves a storage with
 * no Creater/Updater/Patcher/GracefulDeleter (apiserver
 * pkg/endpoints/installer.go registerResourceHandlers: no route for the
 * verb, so 405 MethodNotAllowed; discovery lists the verbs it has).
 */
static bool read_only(const char *crd_name)
{
	return strcmp(crd_name, "gpuusages.kubicle.dev") == 0;
}

/* Fills (or refills) the row of one served version of crd (borrowed),
 * under the accepted names (borrowed). */
static struct crd_row *row_build(const json_t *crd, const json_t *names, const json_t *v)
{
	const char *group = js(crd, "spec.group"), *plural = js(names, "plural");
	const char *version = js(v, "name");
	struct crd_row *c = row_find(group, version, plural);
	if (!c) {
		c = calloc(1, sizeof(*c));
		KB_REQUIRE(c);
		c->r.group = intern(group);
		c->r.version = intern(version);
		c->r.plural = intern(plural);
		c->next = all_rows;
		all_rows = c;
	}
	c->crd_name = intern(js(crd, "metadata.name"));
	c->r.kind = intern(js(names, "kind"));
	c->r.list_kind = intern(js(names, "listKind"));
	c->r.singular = intern(js(names, "singular"));
	c->r.namespaced = strcmp(js(crd, "spec.scope"), "Namespaced") == 0;
	c->r.verbs = read_only(c->crd_name) ? VERBS_RO : VERBS_ALL;
	set_names(c->shorts, json_object_get(names, "shortNames"));
	set_names(c->cats, json_object_get(names, "categories"));
	c->r.short_names = c->shorts[0] ? c->shorts : NULL;
	c->r.categories = c->cats[0] ? c->cats : NULL;
	fill_subresources(c, v);
	c->r.proto = NULL;
	c->r.stored = true;
	/* defaults apply on the way out too; several versions share one
	 * storage: apiVersion follows the version asked for on the way out, and
	 * the storage version on the way in */
	bool several = json_array_size(obj_get(crd, "spec.versions")) > 1;
	c->r.from_storage = rstore_crd_out;
	c->r.to_storage = several ? rstore_version_in : NULL;
	json_t *old_crd = c->r.crd, *old_schema = c->r.schema;
	c->r.crd = json_incref((json_t *)crd);
	c->r.schema = json_incref(obj_get(v, "schema.openAPIV3Schema"));
	if (crdconv_applies(&c->r)) { /* the webhook's conversions (crdconv.c) */
		c->r.from_storage = crdconv_out;
		c->r.to_storage = crdconv_in;
	}
	if (c->r.schema != old_schema || !c->rules) {
		crd_rules_free(c->rules);
		c->rules = crd_rules_compile(c->r.schema);
	}
	json_decref(old_crd);
	json_decref(old_schema);
	return c;
}

static void rows_drop(const char *crd_name)
{
	for (struct crd_row *c = all_rows; c; c = c->next) {
		if (c->active && strcmp(c->crd_name, crd_name) == 0) {
			resource_remove(&c->r);
			c->active = false;
		}
	}
}

static int version_order(const void *a, const void *b)
{
	const json_t *va = *(const json_t *const *)a, *vb = *(const json_t *const *)b;
	return crd_version_cmp(js(va, "name"), js(vb, "name"));
}

/* A built-in row serving group/version/plural: the CRD's names conflict. */
static bool conflicts(const json_t *crd)
{
	const char *group = js(crd, "spec.group"), *plural = js(crd, "spec.names.plural");
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *r = resource_at(i);
		if (!row_of(r) && strcmp(r->group, group) == 0 && strcmp(r->plural, plural) == 0)
			return true;
	}
	return false;
}

/* Rebuilds the rows of crd (borrowed) under `names` (borrowed; NULL: the
 * CRD is not established and serves nothing). */
static void rows_sync(const json_t *crd, const json_t *names)
{
	const json_t *versions = obj_get(crd, "spec.versions");
	size_t n = json_array_size(versions), k = 0, i;
	rows_drop(js(crd, "metadata.name"));
	if (!names || !*js(names, "plural"))
		return;
	const json_t **order = calloc(n ? n : 1, sizeof(*order));
	KB_REQUIRE(order);
	json_t *v;
	json_array_foreach (versions, i, v)
		if (json_is_true(json_object_get(v, "served")))
			order[k++] = v;
	qsort(order, k, sizeof(*order), version_order);
	for (i = 0; i < k; i++) {
		struct crd_row *c = row_build(crd, names, order[i]);
		if (resource_add(&c->r) == 0)
			c->active = true;
		else
			kb_err("crd", "%s: resource table full", js(crd, "metadata.name"));
	}
	free(order);
}

static crd_change_fn change_fn; /* crd_on_change */
static void *change_arg;

void crd_on_change(crd_change_fn fn, void *arg)
{
	change_fn = fn;
	change_arg = arg;
}

static void table_changed(void)
{
	openapi_invalidate(); /* discovery is built per request from the table */
	if (change_fn)        /* crdregistration: the CRDs' APIServices */
		change_fn(change_arg);
}

/* ---- names, as the naming controller accepts them --------------------------------- */

/*
 * kube's NamingConditionController: a requested name is accepted when it is
 * the one already accepted or no other CRD of the group has accepted it
 * (plural, singular and short names share one set, kind and listKind
 * another). A name that is refused keeps the previously accepted one; the
 * last refusal gives NamesAccepted's reason and message.
 */
struct names_verdict {
	json_t *accepted; /* new ref: status.acceptedNames */
	bool ok;
	const char *reason;
	char msg[512];
};

static const json_t *cond_find(const json_t *crd, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach (obj_get(crd, "status.conditions"), i, c)
		if (strcmp(js(c, "type"), type) == 0)
			return c;
	return NULL;
}

static bool cond_true(const json_t *crd, const char *type)
{
	return strcmp(js(cond_find(crd, type), "status"), "True") == 0;
}

static void used_add(json_t *set, const char *s)
{
	if (s && *s)
		json_object_set_new(set, s, json_true());
}

/* The names other CRDs of crd's group (borrowed) have accepted. */
static void used_names(struct proxy *px, const json_t *crd, json_t *res, json_t *kinds)
{
	struct store_list_req lr = {.res = CRD_KEY};
	struct store_list_result out = {0};
	if (store_list(px->store, &lr, &out) < 0)
		return;
	size_t i, k;
	json_t *o, *s;
	json_array_foreach (out.items, i, o) {
		if (strcmp(js(o, "metadata.name"), js(crd, "metadata.name")) == 0 ||
		    strcmp(js(o, "spec.group"), js(crd, "spec.group")) != 0)
			continue;
		const json_t *an = obj_get(o, "status.acceptedNames");
		used_add(res, obj_str(an, "plural"));
		used_add(res, obj_str(an, "singular"));
		json_array_foreach (json_object_get(an, "shortNames"), k, s)
			used_add(res, json_string_value(s));
		used_add(kinds, obj_str(an, "kind"));
		used_add(kinds, obj_str(an, "listKind"));
	}
	json_decref(out.items);
	free(out.next);
}

static void refuse_name(struct names_verdict *v, const char *reason, const char *msg)
{
	v->ok = false;
	v->reason = reason;
	snprintf(v->msg, sizeof(v->msg), "%s", msg);
}

/* One name: the requested one when accepted or fresh, else the old one. */
static void take_name(struct names_verdict *v, const char *key, const json_t *want,
		      const json_t *had, const json_t *used, const char *reason)
{
	const char *w = js(want, key), *h = js(had, key);
	char msg[300];
	if (strcmp(w, h) != 0 && json_object_get(used, w)) {
		snprintf(msg, sizeof(msg), "\"%s\" is already in use", w);
		refuse_name(v, reason, msg);
		w = h;
	}
	if (*w)
		json_object_set_new(v->accepted, key, json_string(w));
}

static bool in_array(const json_t *arr, const char *s)
{
	size_t i;
	json_t *x;
	json_array_foreach (arr, i, x)
		if (json_is_string(x) && strcmp(json_string_value(x), s) == 0)
			return true;
	return false;
}

static void take_short_names(struct names_verdict *v, const json_t *want, const json_t *had,
			     const json_t *used)
{
	const json_t *ws = json_object_get(want, "shortNames"),
		     *hs = json_object_get(had, "shortNames");
	struct kb_buf msg = {0};
	size_t i, bad = 0;
	json_t *s;
	json_array_foreach (ws, i, s) {
		const char *n = json_string_value(s);
		if (!n || in_array(hs, n) || !json_object_get(used, n))
			continue;
		kb_buf_printf(&msg, "%s\"%s\" is already in use", bad++ ? ", " : "", n);
	}
	const json_t *keep = bad ? hs : ws;
	if (json_array_size(keep))
		json_object_set_new(v->accepted, "shortNames", json_deep_copy(keep));
	if (bad) {
		char m[sizeof(v->msg)];
		snprintf(m, sizeof(m), bad > 1 ? "[%s]" : "%s", msg.data);
		refuse_name(v, "ShortNamesConflict", m);
	}
	kb_buf_free(&msg);
}

static void names_accept(struct proxy *px, const json_t *crd, struct names_verdict *v)
{
	const json_t *want = obj_get(crd, "spec.names"),
		     *had = obj_get(crd, "status.acceptedNames");
	json_t *res = json_object(), *kinds = json_object();
	used_names(px, crd, res, kinds);
	v->accepted = json_object();
	v->ok = true;
	v->reason = "NoConflicts";
	snprintf(v->msg, sizeof(v->msg), "no conflicts found");
	take_name(v, "plural", want, had, res, "PluralConflict");
	take_name(v, "singular", want, had, res, "SingularConflict");
	take_short_names(v, want, had, res);
	take_name(v, "kind", want, had, kinds, "KindConflict");
	take_name(v, "listKind", want, had, kinds, "ListKindConflict");
	json_t *cats = json_object_get(want, "categories");
	if (json_array_size(cats))
		json_object_set_new(v->accepted, "categories", json_deep_copy(cats));
	if (v->ok && conflicts(crd))
		refuse_name(v, "ResourceConflict",
			    "the resource name conflicts with a built-in resource");
	json_decref(res);
	json_decref(kinds);
}

/* ---- status, as the apiextensions controllers write it ------------------------- */

static json_t *condition(const char *type, bool ok, const char *reason, const char *msg,
			 const char *ts)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", type, "status", ok ? "True" : "False",
			 "lastTransitionTime", ts, "reason", reason, "message", msg);
}

static const char *storage_version(const json_t *crd)
{
	size_t i;
	json_t *v;
	json_array_foreach (obj_get(crd, "spec.versions"), i, v)
		if (json_is_true(json_object_get(v, "storage")))
			return js(v, "name");
	return NULL;
}

static json_t *stored_versions(const json_t *crd)
{
	json_t *stored = json_deep_copy(obj_get(crd, "status.storedVersions"));
	if (!json_is_array(stored)) {
		json_decref(stored);
		stored = json_array();
	}
	const char *sv = storage_version(crd);
	if (sv && !in_array(stored, sv))
		json_array_append_new(stored, json_string(sv));
	return stored;
}

/* Keeps a condition's lastTransitionTime while its status does not change. */
static void keep_transition_times(json_t *conds, const json_t *crd)
{
	size_t i;
	json_t *c;
	json_array_foreach (conds, i, c) {
		const json_t *old = cond_find(crd, js(c, "type"));
		if (old && strcmp(js(old, "status"), js(c, "status")) == 0 &&
		    json_object_get(old, "lastTransitionTime"))
			json_object_set(c, "lastTransitionTime",
					json_object_get(old, "lastTransitionTime"));
	}
}

/* bad_ca: not established because the conversion webhook's caBundle is
 * invalid (kube's establishing controller, InvalidCABundle). */
static json_t *desired_status(const json_t *crd, const struct names_verdict *v, bool established,
			      bool bad_ca, const char *ts)
{
	json_t *conds = json_array();
	json_array_append_new(conds, condition("NamesAccepted", v->ok, v->reason, v->msg, ts));
	if (established)
		json_array_append_new(conds, condition("Established", true, "InitialNamesAccepted",
						       "the initial names have been accepted", ts));
	else if (bad_ca)
		json_array_append_new(conds,
				      condition("Established", false, "InvalidCABundle",
						"The conversion webhook CABundle is invalid", ts));
	else
		json_array_append_new(conds, condition("Established", false, "NotAccepted",
						       "not all names are accepted", ts));
	const json_t *term = cond_find(crd, "Terminating");
	if (term)
		json_array_append_new(conds, json_deep_copy(term));
	keep_transition_times(conds, crd);
	return json_pack("{s:o,s:O,s:o}", "conditions", conds, "acceptedNames", v->accepted,
			 "storedVersions", stored_versions(crd));
}

static void status_sync(struct proxy *px, const json_t *crd, const struct names_verdict *v,
			bool established, bool bad_ca)
{
	char ts[40];
	kb_time_rfc3339(time(NULL), ts, sizeof(ts));
	json_t *want = desired_status(crd, v, established, bad_ca, ts);
	if (!want || json_equal(want, json_object_get(crd, "status"))) {
		json_decref(want);
		return;
	}
	json_t *upd = json_deep_copy(crd);
	json_object_set_new(upd, "status", want);
	int rc =
	    store_update(px->store, CRD_KEY, "", js(crd, "metadata.name"), upd, obj_rv(crd), NULL);
	if (rc < 0 && rc != -ESTALE)
		kb_err("crd", "%s: status update failed: %d", js(crd, "metadata.name"), rc);
	json_decref(upd);
}

/* ---- deletion: the customresourcecleanup finalizer ------------------------------- */

/*
 * A CRD carries CLEANUP_FIN, so deleting it only sets deletionTimestamp.
 * While it is terminating it keeps serving reads, updates and deletes but
 * refuses creates (405); every custom object is deleted (those with
 * finalizers get a deletionTimestamp and are waited for, through a store
 * watch on the resource); when none is left the finalizer is dropped and
 * the CRD removed, which takes its rows out of discovery.
 */
struct fin_watch {
	struct fin_watch *next;
	store_watch_t *w;
	struct proxy *px;
	char name[];
};
static struct fin_watch *fin_watches;

static bool has_finalizer(const json_t *obj, const char *fin)
{
	return in_array(obj_get(obj, "metadata.finalizers"), fin);
}

static void drop_finalizer(json_t *obj, const char *fin)
{
	json_t *fins = obj_get(obj, "metadata.finalizers");
	for (size_t i = json_array_size(fins); i-- > 0;)
		if (strcmp(json_string_value(json_array_get(fins, i)) ?: "", fin) == 0)
			json_array_remove(fins, i);
	if (fins && json_array_size(fins) == 0)
		json_object_del(obj_meta(obj), "finalizers");
}

/* Sets the Terminating condition of crd (borrowed, modified); true when it
 * changed. */
static bool set_terminating(json_t *crd, bool on, const char *reason, const char *msg)
{
	const json_t *old = cond_find(crd, "Terminating");
	if (old && strcmp(js(old, "status"), on ? "True" : "False") == 0 &&
	    strcmp(js(old, "reason"), reason) == 0 && strcmp(js(old, "message"), msg) == 0)
		return false;
	char ts[40];
	kb_time_rfc3339(time(NULL), ts, sizeof(ts));
	json_t *st = json_object_get(crd, "status");
	if (!json_is_object(st)) {
		st = json_object();
		json_object_set_new(crd, "status", st);
	}
	json_t *conds = json_object_get(st, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(st, "conditions", conds);
	}
	for (size_t i = json_array_size(conds); i-- > 0;)
		if (strcmp(js(json_array_get(conds, i), "type"), "Terminating") == 0)
			json_array_remove(conds, i);
	json_array_append_new(conds, condition("Terminating", on, reason, msg, ts));
	return true;
}

static void custom_key(const json_t *crd, char *key, size_t len)
{
	snprintf(key, len, "%s/%s", js(crd, "spec.group"), js(crd, "spec.names.plural"));
}

/* Deletes one custom object, or marks it when finalizers hold it. 1: it
 * remains; 0: gone; < 0: error. */
static int delete_instance(struct proxy *px, const char *key, const json_t *o, const char *ts)
{
	const char *ns = js(o, "metadata.namespace"), *name = js(o, "metadata.name");
	if (obj_str(o, "metadata.deletionTimestamp"))
		return 1;
	if (json_array_size(obj_get(o, "metadata.finalizers")) == 0) {
		int rc = store_delete(px->store, key, ns, name, obj_rv(o), NULL, NULL);
		return rc == -ENOENT ? 0 : rc;
	}
	json_t *upd = json_deep_copy(o);
	json_object_set_new(obj_meta(upd), "deletionTimestamp", json_string(ts));
	json_object_set_new(obj_meta(upd), "deletionGracePeriodSeconds", json_integer(0));
	int rc = store_update(px->store, key, ns, name, upd, obj_rv(o), NULL);
	json_decref(upd);
	return rc < 0 ? rc : 1;
}

/* Deletes every custom object of crd (borrowed). Returns how many remain
 * (held by finalizers) or a negative errno; *rev gets the list revision. */
static int delete_instances(struct proxy *px, const json_t *crd, int64_t *rev)
{
	char key[256], ts[40];
	custom_key(crd, key, sizeof(key));
	kb_time_rfc3339(time(NULL), ts, sizeof(ts));
	struct store_list_req lr = {.res = key};
	struct store_list_result res = {0};
	int rc = store_list(px->store, &lr, &res);
	if (rc < 0)
		return rc;
	*rev = res.rev;
	size_t i;
	json_t *o;
	int left = 0;
	store_txn_begin(px->store);
	json_array_foreach (res.items, i, o) {
		int r = delete_instance(px, key, o, ts);
		if (r < 0 && r != -ESTALE)
			rc = r;
		left += r != 0;
	}
	if (store_txn_commit(px->store) < 0)
		rc = -EIO;
	json_decref(res.items);
	free(res.next);
	return rc < 0 ? rc : left;
}

static void finalize_step(struct proxy *px, const char *name);

static void on_instance(const struct store_event *ev, void *arg)
{
	struct fin_watch *f = arg;
	if (ev->type == STORE_DELETED)
		finalize_step(f->px, f->name);
}

static void fin_watch_start(struct proxy *px, const json_t *crd, int64_t since)
{
	const char *name = js(crd, "metadata.name");
	for (struct fin_watch *f = fin_watches; f; f = f->next)
		if (strcmp(f->name, name) == 0)
			return;
	char key[256];
	custom_key(crd, key, sizeof(key));
	struct fin_watch *f = calloc(1, sizeof(*f) + strlen(name) + 1);
	KB_REQUIRE(f);
	f->px = px;
	strcpy(f->name, name);
	f->next = fin_watches;
	fin_watches = f;
	if (store_watch(px->store, key, NULL, since, on_instance, f, &f->w) < 0)
		kb_err("crd", "%s: cannot watch its objects", name);
}

static void fin_watch_stop(const char *name)
{
	for (struct fin_watch **p = &fin_watches; *p; p = &(*p)->next) {
		struct fin_watch *f = *p;
		if (strcmp(f->name, name) == 0) {
			*p = f->next;
			if (f->w)
				store_unwatch(f->w);
			free(f);
			return;
		}
	}
}

/* The last step: the finalizer goes, and with no other finalizer the CRD. */
static void finalize_done(struct proxy *px, json_t *upd, int64_t rv)
{
	const char *name = js(upd, "metadata.name");
	int rc;
	drop_finalizer(upd, CLEANUP_FIN);
	if (json_array_size(obj_get(upd, "metadata.finalizers")) == 0)
		rc = store_delete(px->store, CRD_KEY, "", name, rv, NULL, NULL);
	else
		rc = store_update(px->store, CRD_KEY, "", name, upd, rv, NULL);
	if (rc < 0 && rc != -ESTALE && rc != -ENOENT)
		kb_err("crd", "%s: finalizing failed: %d", name, rc);
}

/* One pass of kube's CRD finalizer over the CRD called name. */
static void finalize_step(struct proxy *px, const char *name)
{
	json_t *crd = NULL, *upd = NULL;
	int64_t rev = 0;
	if (store_get(px->store, CRD_KEY, "", name, &crd) < 0)
		return;
	if (!obj_str(crd, "metadata.deletionTimestamp") || !has_finalizer(crd, CLEANUP_FIN))
		goto out;
	upd = json_deep_copy(crd);
	if (!cond_true(crd, "Established")) {
		set_terminating(upd, false, "NeverEstablished", "resource was never established");
		finalize_done(px, upd, obj_rv(crd));
		goto out;
	}
	int left = delete_instances(px, crd, &rev);
	if (left == 0) {
		set_terminating(upd, false, "InstanceDeletionCompleted", "removed all instances");
		finalize_done(px, upd, obj_rv(crd));
		goto out;
	}
	if (left > 0)
		fin_watch_start(px, crd, rev);
	bool changed = left > 0 ? set_terminating(upd, true, "InstanceDeletionInProgress",
						  "CustomResource deletion is in progress")
				: set_terminating(upd, true, "InstanceDeletionFailed",
						  "could not delete instances");
	if (changed && store_update(px->store, CRD_KEY, "", name, upd, obj_rv(crd), NULL) < 0)
		kb_debug("crd", "%s: terminating status not written", name);
out:
	json_decref(upd);
	json_decref(crd);
}

/* ---- events ------------------------------------------------------------------- */

/* Deletes every object of the CRD's resource, in every namespace (a CRD
 * removed without its finalizer). */
static void delete_objects(struct proxy *px, const json_t *crd)
{
	char key[256];
	custom_key(crd, key, sizeof(key));
	struct store_list_req lr = {.res = key};
	struct store_list_result res = {0};
	if (store_list(px->store, &lr, &res) < 0)
		return;
	size_t i;
	json_t *o;
	store_txn_begin(px->store);
	json_array_foreach (res.items, i, o)
		store_delete(px->store, key, js(o, "metadata.namespace"), js(o, "metadata.name"), 0,
			     NULL, NULL);
	if (store_txn_commit(px->store) < 0)
		kb_err("crd", "%s: deleting objects failed", js(crd, "metadata.name"));
	json_decref(res.items);
	free(res.next);
}

/* Names, rows, status and finalization of one CRD (borrowed). */
static void reconcile(struct proxy *px, const json_t *crd)
{
	struct names_verdict v;
	names_accept(px, crd, &v);
	/* kube's establishing controller: names accepted and, since 1.31, a
	 * valid conversion caBundle (EstablishingController.sync) */
	bool was = cond_true(crd, "Established");
	bool bad_ca = !was && v.ok && !val_crd_ca_bundle_ok(crd);
	bool established = (v.ok && !bad_ca) || was;
	rows_sync(crd, established ? v.accepted : NULL);
	status_sync(px, crd, &v, established, bad_ca);
	json_decref(v.accepted);
	if (obj_str(crd, "metadata.deletionTimestamp"))
		finalize_step(px, js(crd, "metadata.name"));
}

/* Names freed in a group: the CRDs of that group still waiting for theirs
 * are looked at again. */
static void retry_group(struct proxy *px, const char *group, const char *except)
{
	struct store_list_req lr = {.res = CRD_KEY};
	struct store_list_result res = {0};
	if (store_list(px->store, &lr, &res) < 0)
		return;
	size_t i;
	json_t *o;
	json_array_foreach (res.items, i, o)
		if (strcmp(js(o, "spec.group"), group) == 0 &&
		    strcmp(js(o, "metadata.name"), except) != 0 && !cond_true(o, "NamesAccepted"))
			reconcile(px, o);
	json_decref(res.items);
	free(res.next);
}

static bool names_changed(const struct store_event *ev)
{
	return !ev->prev || !json_equal(obj_get(ev->prev, "status.acceptedNames"),
					obj_get(ev->obj, "status.acceptedNames"));
}

static void on_crd(const struct store_event *ev, void *arg)
{
	struct proxy *px = arg;
	if (ev->type == STORE_DELETED) {
		rows_drop(ev->name);
		fin_watch_stop(ev->name);
		delete_objects(px, ev->obj);
		table_changed();
		retry_group(px, js(ev->obj, "spec.group"), ev->name);
		return;
	}
	reconcile(px, ev->obj);
	table_changed();
	if (ev->type == STORE_MODIFIED && names_changed(ev))
		retry_group(px, js(ev->obj, "spec.group"), ev->name);
}

int crd_start(struct proxy *px)
{
	struct store_list_req lr = {.res = CRD_KEY};
	struct store_list_result res = {0};
	int rc = store_list(px->store, &lr, &res);
	if (rc < 0)
		return rc;
	size_t i;
	json_t *o;
	json_array_foreach (res.items, i, o) {
		bool served = cond_true(o, "Established");
		rows_sync(o, served
				 ? (obj_get(o, "status.acceptedNames") ?: obj_get(o, "spec.names"))
				 : NULL);
	}
	table_changed();
	crd_px = px;
	rc = store_watch(px->store, CRD_KEY, NULL, res.rev, on_crd, px, &crd_watch);
	/* finalization interrupted by a restart goes on */
	json_array_foreach (res.items, i, o)
		if (rc == 0 && obj_str(o, "metadata.deletionTimestamp"))
			finalize_step(px, js(o, "metadata.name"));
	json_decref(res.items);
	free(res.next);
	return rc;
}

/* ---- CRD objects: defaults and validation ---------------------------------------- */

static bool is_crd_row(const struct proxy_resource *r)
{
	return strcmp(r->group, "apiextensions.k8s.io") == 0 &&
	       strcmp(r->plural, "customresourcedefinitions") == 0;
}

static bool is_post(const struct req *r)
{
	return r->http && strcmp(r->http->method, "POST") == 0 && !r->sub;
}

static void crd_defaults(json_t *crd)
{
	json_t *spec = json_object_get(crd, "spec");
	json_t *names = json_object_get(spec, "names");
	const char *kind = json_string_value(json_object_get(names, "kind"));
	if (!json_is_object(spec))
		return;
	if (!json_object_get(spec, "conversion"))
		json_object_set_new(spec, "conversion", json_pack("{s:s}", "strategy", "None"));
	val_crd_conversion_defaults(crd);
	if (json_is_object(names) && kind && *kind) {
		if (!json_object_get(names, "singular")) {
			char low[256];
			size_t i;
			for (i = 0; kind[i] && i < sizeof(low) - 1; i++)
				low[i] = (char)tolower((unsigned char)kind[i]);
			low[i] = '\0';
			json_object_set_new(names, "singular", json_string(low));
		}
		if (!json_object_get(names, "listKind")) {
			char lk[300];
			snprintf(lk, sizeof(lk), "%sList", kind);
			json_object_set_new(names, "listKind", json_string(lk));
		}
	}
}

static void val_names(const json_t *crd, json_t *causes)
{
	const json_t *names = obj_get(crd, "spec.names");
	const char *plural = js(names, "plural"), *singular = js(names, "singular");
	const char *msg;
	if (!*plural)
		val_add(causes, "FieldValueRequired", "spec.names.plural", NULL);
	else if ((msg = names_dns1035_label(plural)))
		val_add(causes, "FieldValueInvalid", "spec.names.plural", "\"%s\": %s", plural,
			msg);
	if (*singular && (msg = names_dns1035_label(singular)))
		val_add(causes, "FieldValueInvalid", "spec.names.singular", "\"%s\": %s", singular,
			msg);
	if (!*js(names, "kind"))
		val_add(causes, "FieldValueRequired", "spec.names.kind", NULL);
	if (!*js(names, "listKind"))
		val_add(causes, "FieldValueRequired", "spec.names.listKind", NULL);
}

/* The schema of the version named name in CRD crd (NULL: none). */
static const json_t *version_schema(const json_t *crd, const char *name)
{
	size_t i;
	const json_t *v;
	json_array_foreach (obj_get(crd, "spec.versions"), i, v)
		if (strcmp(js(v, "name"), name) == 0)
			return obj_get(v, "schema.openAPIV3Schema");
	return NULL;
}

static void val_versions(const json_t *crd, const json_t *old, json_t *causes)
{
	const json_t *versions = obj_get(crd, "spec.versions");
	size_t i, k, storage = 0;
	json_t *v;
	char p[300];
	if (json_array_size(versions) == 0) {
		val_add(causes, "FieldValueRequired", "spec.versions",
			"must have exactly one version marked as storage version");
		return;
	}
	/* kube relaxes the list rules an update's old CRD already broke
	 * (validation.go requireAtomicSetType, requireMapListKeysMapSetValidation) */
	unsigned relax = 0;
	json_array_foreach (old ? obj_get(old, "spec.versions") : NULL, i, v)
		relax |= crd_schema_lax(obj_get(v, "schema.openAPIV3Schema"));
	json_array_foreach (versions, i, v) {
		const char *name = js(v, "name"), *msg;
		snprintf(p, sizeof(p), "spec.versions[%zu].name", i);
		if (!*name)
			val_add(causes, "FieldValueRequired", p, NULL);
		else if ((msg = names_dns1035_label(name)))
			val_add(causes, "FieldValueInvalid", p, "\"%s\": %s", name, msg);
		for (k = 0; k < i; k++)
			if (strcmp(js(json_array_get(versions, k), "name"), name) == 0)
				val_add(causes, "FieldValueDuplicate", p, "\"%s\"", name);
		storage += json_is_true(json_object_get(v, "storage"));
		snprintf(p, sizeof(p), "spec.versions[%zu].schema.openAPIV3Schema", i);
		size_t before = json_array_size(causes);
		crd_schema_structural_relaxed(obj_get(v, "schema.openAPIV3Schema"), p, relax,
					      causes);
		if (json_array_size(causes) == before)
			crd_schema_check_defaults(obj_get(v, "schema.openAPIV3Schema"), p, relax,
						  causes);
		if (json_array_size(causes) == before)
			crd_rules_check_update(obj_get(v, "schema.openAPIV3Schema"),
					       old ? version_schema(old, name) : NULL, p, causes);
	}
	if (storage != 1)
		val_add(causes, "FieldValueInvalid", "spec.versions",
			"%zu: must have exactly one version marked as storage version", storage);
}

/* need_known: the conversion webhook's review versions must include one kube
 * knows (false on an update whose old CRD already had none it knew:
 * ValidateCustomResourceDefinitionUpdate's requireRecognizedConversionReviewVersion). */
static void val_crd(const json_t *crd, const json_t *old, bool need_known, bool allow_bad_ca,
		    json_t *causes)
{
	const char *group = js(crd, "spec.group"), *scope = js(crd, "spec.scope");
	const char *name = js(crd, "metadata.name");
	char want[600];
	snprintf(want, sizeof(want), "%s.%s", js(crd, "spec.names.plural"), group);
	if (strcmp(name, want) != 0)
		val_add(causes, "FieldValueInvalid", "metadata.name",
			"\"%s\": must be spec.names.plural+\".\"+spec.group", name);
	if (!*group)
		val_add(causes, "FieldValueRequired", "spec.group", NULL);
	else if (!strchr(group, '.'))
		val_add(causes, "FieldValueInvalid", "spec.group",
			"\"%s\": should be a domain with at least one dot", group);
	if (!*scope)
		val_add(causes, "FieldValueRequired", "spec.scope", NULL);
	else if (strcmp(scope, "Cluster") != 0 && strcmp(scope, "Namespaced") != 0)
		val_add(causes, "FieldValueNotSupported", "spec.scope",
			"\"%s\": supported values: \"Cluster\", \"Namespaced\"", scope);
	else if (old && strcmp(scope, js(old, "spec.scope")) != 0)
		val_add(causes, "FieldValueInvalid", "spec.scope", "\"%s\": field is immutable",
			scope);
	val_crd_conversion(causes, crd, need_known, allow_bad_ca);
	val_names(crd, causes);
	val_versions(crd, old, causes);
}

static void add_finalizer(json_t *obj, const char *fin)
{
	json_t *m = obj_meta(obj), *fins = json_object_get(m, "finalizers");
	if (has_finalizer(obj, fin))
		return;
	if (!json_is_array(fins)) {
		fins = json_array();
		json_object_set_new(m, "finalizers", fins);
	}
	json_array_append_new(fins, json_string(fin));
}

/* As kube's CRD REST Delete: the cleanup finalizer goes on when a CRD is
 * deleted, so its custom objects are removed before it is. */
void crd_before_delete(json_t *crd)
{
	if (!obj_str(crd, "metadata.deletionTimestamp"))
		add_finalizer(crd, CLEANUP_FIN);
}

/* kube's allowInvalidCABundle of the stored CRD an update replaces (true on
 * create): it is not Established, or its own caBundle is set and invalid. */
static bool bad_ca_allowed(struct req *r)
{
	json_t *prev = NULL;
	if (is_post(r) || !r->name || store_get(r->px->store, CRD_KEY, "", r->name, &prev) != 0)
		return true;
	const char *ca = js(prev, "spec.conversion.webhook.clientConfig.caBundle");
	bool allow = !cond_true(prev, "Established") || (*ca && !val_crd_ca_bundle_ok(prev));
	json_decref(prev);
	return allow;
}

/* kube's hasValidConversionReviewVersionOrEmpty of the stored CRD an update
 * replaces (true on create). */
static bool known_review_version(struct req *r)
{
	json_t *prev = NULL;
	bool known = true;
	if (is_post(r) || !r->name || store_get(r->px->store, CRD_KEY, "", r->name, &prev) != 0)
		return true;
	const json_t *vs = obj_get(prev, "spec.conversion.webhook.conversionReviewVersions");
	if (json_array_size(vs)) {
		known = false;
		for (size_t i = 0; i < json_array_size(vs); i++) {
			const char *v = json_string_value(json_array_get(vs, i));
			known |= v && (strcmp(v, "v1") == 0 || strcmp(v, "v1beta1") == 0);
		}
	}
	json_decref(prev);
	return known;
}

static int check_crd(struct req *r, json_t *obj)
{
	json_t *old = NULL, *causes = json_array();
	int rc = 0;
	if (r->sub)
		goto out;
	crd_defaults(obj);
	if (is_post(r))
		json_object_del(obj, "status");
	if (obj_str(obj, "metadata.deletionTimestamp") && r->name)
		store_get(r->px->store, CRD_KEY, "", r->name, &old);
	val_crd(obj, old, known_review_version(r), bad_ca_allowed(r), causes);
	if (json_array_size(causes)) {
		reply_invalid(r, r->res->kind, obj_str(obj, "metadata.name"), json_incref(causes));
		rc = -EINVAL;
	}
out:
	json_decref(causes);
	json_decref(old);
	return rc;
}

/* ---- custom objects ---------------------------------------------------------------- */

static int refuse_unknown(struct req *r, const json_t *paths)
{
	struct kb_buf msg = {0};
	size_t i;
	json_t *p;
	kb_buf_printf(&msg,
		      "%s in version \"%s\" cannot be handled as a %s: strict decoding error: ",
		      r->res->kind, r->res->version, r->res->kind);
	json_array_foreach (paths, i, p)
		kb_buf_printf(&msg, "%sunknown field \"%s\"", i ? ", " : "", json_string_value(p));
	reply_status(r, 400, "BadRequest", msg.data ? msg.data : "strict decoding error", NULL);
	kb_buf_free(&msg);
	return -EINVAL;
}

static void warn_unknown(struct req *r, const json_t *paths)
{
	size_t i;
	json_t *p;
	char w[600];
	json_array_foreach (paths, i, p) {
		if (!r->warnings)
			r->warnings = json_array();
		snprintf(w, sizeof(w), "unknown field \"%s\"", json_string_value(p));
		json_array_append_new(r->warnings, json_string(w));
	}
}

static int check_custom(struct req *r, json_t *obj)
{
	json_t *paths = json_array(), *causes = json_array();
	int rc = 0;
	crd_schema_prune(r->res->schema, obj, paths);
	if (json_array_size(paths) && r->q.validation == FV_STRICT) {
		rc = refuse_unknown(r, paths);
		goto out;
	}
	if (r->q.validation == FV_WARN)
		warn_unknown(r, paths);
	if (is_post(r) && resource_sub(r->res, "status"))
		json_object_del(obj, "status");
	crd_schema_default(r->res->schema, obj);
	/* validation comes with the rules, where the old object is known
	 * (crd_check_rules) */
out:
	json_decref(paths);
	json_decref(causes);
	return rc;
}

/* kube's hasBlockingErr: causes after which the rules are not run. */
static bool blocking(const json_t *causes)
{
	static const char *const types[] = {"FieldValueNotSupported", "FieldValueRequired",
					    "FieldValueTooLong", "FieldValueTooMany",
					    "FieldValueTypeInvalid"};
	size_t i;
	json_t *c;
	json_array_foreach (causes, i, c)
		for (size_t k = 0; k < KB_ARRAY_SIZE(types); k++)
			if (strcmp(js(c, "reason"), types[k]) == 0)
				return true;
	return false;
}

int crd_check_rules(struct req *r, const json_t *obj, const json_t *old, json_t *causes)
{
	struct crd_row *c = r->res->crd ? row_of(r->res) : NULL;
	size_t before = json_array_size(causes);
	if (r->res->schema)
		crd_schema_validate_update(r->res->schema, obj, old, causes);
	/* list-type uniqueness ratchets as kube's: not checked on an update of
	 * an object that already broke it */
	json_t *was = json_array();
	if (!old || crd_schema_list_types(r->res->schema, old, was) == 0)
		crd_schema_list_types(r->res->schema, obj, causes);
	json_decref(was);
	if (c && c->rules) {
		if (blocking(causes))
			val_add(causes, "FieldValueInvalid", "<nil>",
				"null: some validation rules were not checked because the object "
				"was invalid; correct the existing errors to complete validation");
		else
			crd_rules_eval(c->rules, obj, old, causes, &r->warnings);
	}
	return (int)(json_array_size(causes) - before);
}

int crd_check_fields(struct req *r, json_t *obj)
{
	if (is_crd_row(r->res))
		return check_crd(r, obj);
	if (r->res->crd && is_post(r) && obj_str(r->res->crd, "metadata.deletionTimestamp")) {
		reply_status(r, 405, "MethodNotAllowed",
			     "create not allowed while custom resource definition is terminating",
			     NULL);
		return -EPERM;
	}
	if (r->res->crd && r->res->schema)
		return check_custom(r, obj);
	return 0;
}

/* ---- the scale subresource ------------------------------------------------------------ */

/* The new Scale from the request: a PUT body or a patch of the current one. */
static int scale_input(struct req *r, const json_t *cur, json_t **out)
{
	json_error_t je;
	json_t *body = json_loadb(r->http->body, r->http->body_len, 0, &je);
	const char *ct = kb_http_req_header(r->http, "content-type");
	char err[512] = "";
	int rc = 0;
	if (!body) {
		reply_statusf(r, 400, "BadRequest", "error decoding body: %s", je.text);
		return -EINVAL;
	}
	if (strcmp(r->http->method, "PUT") == 0)
		*out = json_incref(body);
	else if (ct && strncmp(ct, "application/json-patch+json", 27) == 0)
		rc = patch_json(cur, body, out, err, sizeof(err));
	else if (ct && (strncmp(ct, "application/merge-patch+json", 28) == 0 ||
			strncmp(ct, "application/strategic-merge-patch+json", 38) == 0))
		rc = patch_merge(cur, body, out);
	else
		rc = -ENOTSUP;
	json_decref(body);
	if (rc == -ENOTSUP)
		reply_statusf(
		    r, 415, "UnsupportedMediaType",
		    "the body of the request was in an unknown format - accepted media types "
		    "include: application/json-patch+json, application/merge-patch+json");
	else if (rc < 0)
		reply_statusf(r, 422, "Invalid", "%s", err[0] ? err : "invalid patch");
	return rc;
}

/* A custom resource's /scale write: the new replicas at specReplicasPath,
 * checked against the schema, then the object goes the way of every update
 * (the CRD's rules, admission with the webhooks and policies seeing a Scale,
 * managedFields under the scale subresource), answered as a Scale. */
static void scale_write(struct req *r, const struct crd_row *c, json_t *obj)
{
	json_t *cur = scale_view(&c->r, obj), *in = NULL, *causes = json_array();
	if (scale_input(r, cur, &in) < 0)
		goto out;
	json_t *rep = obj_get(in, "spec.replicas");
	const char *rv = obj_str(in, "metadata.resourceVersion");
	if (!json_is_integer(rep) || json_integer_value(rep) < 0) {
		val_add(causes, "FieldValueInvalid", "spec.replicas",
			"%lld: should be a non-negative integer",
			(long long)json_integer_value(rep));
		reply_invalid(r, "Scale", r->name, json_incref(causes));
		goto out;
	}
	if (rv && *rv && strtoll(rv, NULL, 10) != obj_rv(obj)) {
		reply_errno(r, -ESTALE, r->name);
		goto out;
	}
	json_t *upd = json_deep_copy(obj);
	scale_set(&c->r, upd, rep);
	json_object_del(obj_meta(upd), "resourceVersion");
	/* the schema (ratcheted against obj) and the rules are checked on the
	 * way of every update (crd_check_rules) */
	handle_write_scale(r, obj, upd);
	json_decref(upd);
out:
	json_decref(cur);
	json_decref(in);
	json_decref(causes);
}

bool crd_subres(struct req *r)
{
	struct crd_row *c = r->res->crd ? row_of(r->res) : NULL;
	json_t *obj = NULL;
	if (!c || !r->sub || strcmp(r->sub, "scale") != 0 || !c->scale.spec_replicas)
		return false;
	int rc = store_get(r->px->store, c->r.store_key, r->ns ? r->ns : "", r->name, &obj);
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		return true;
	}
	const char *m = r->http->method;
	if (strcmp(m, "GET") == 0) {
		json_t *s = scale_view(&c->r, obj);
		handle_reply_scale(r, 200, s);
		json_decref(s);
	} else if (strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0) {
		scale_write(r, c, obj);
	} else {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
	}
	json_decref(obj);
	return true;
}
