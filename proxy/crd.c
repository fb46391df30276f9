/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CustomResourceDefinitions (apiextensions.k8s.io/v1) as kube-apiserver
 * serves them: each served version of a CRD becomes a run-time row of the
 * resource table (proxy/resource.h), so the generic handlers, discovery,
 * OpenAPI, Table output and watch serve custom objects with no code of
 * their own. This file keeps those rows in step with the store, checks CRD
 * objects, runs the schema checks (proxy/crd.h) on custom objects and
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
#include "proxy/crd.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "proxy/openapi.h"
#include "proxy/patch.h"
#include "proxy/proxy_impl.h"
#include "proxy/validate.h"

#define CRD_KEY   "apiextensions.k8s.io/customresourcedefinitions"
#define MAX_NAMES 16

struct crd_row {
	struct proxy_resource r; /* first: rows are handed out as this */
	struct crd_row *next;    /* every row ever made */
	const char *crd_name;    /* interned "<plural>.<group>" */
	bool active;
	const char *shorts[MAX_NAMES + 1];
	const char *cats[MAX_NAMES + 1];
	struct proxy_subresource subs[3];
	const char *spec_replicas, *status_replicas, *selector_path; /* scale; NULL: none */
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
	c->spec_replicas = c->status_replicas = c->selector_path = NULL;
	if (json_is_object(scale)) {
		c->subs[n++] =
		    (struct proxy_subresource){"scale", "autoscaling", "v1", "Scale", verbs};
		c->spec_replicas = path_of(scale, "specReplicasPath");
		c->status_replicas = path_of(scale, "statusReplicasPath");
		c->selector_path = path_of(scale, "labelSelectorPath");
	}
	c->r.subresources = n ? c->subs : NULL;
	c->r.has_status = json_object_get(subs, "status") != NULL;
}

/* Fills (or refills) the row of one served version of crd (borrowed). */
static struct crd_row *row_build(const json_t *crd, const json_t *v)
{
	const char *group = js(crd, "spec.group"), *plural = js(crd, "spec.names.plural");
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
	const json_t *names = obj_get(crd, "spec.names");
	c->crd_name = intern(js(crd, "metadata.name"));
	c->r.kind = intern(js(names, "kind"));
	c->r.list_kind = intern(js(names, "listKind"));
	c->r.singular = intern(js(names, "singular"));
	c->r.namespaced = strcmp(js(crd, "spec.scope"), "Namespaced") == 0;
	c->r.verbs = VERBS_ALL;
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
	c->r.from_storage = rs_crd_out;
	c->r.to_storage = several ? rs_version_in : NULL;
	json_t *old_crd = c->r.crd, *old_schema = c->r.schema;
	c->r.crd = json_incref((json_t *)crd);
	c->r.schema = json_incref(obj_get(v, "schema.openAPIV3Schema"));
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

/* Rebuilds the rows of crd (borrowed). Returns false on a names conflict. */
static bool rows_sync(const json_t *crd)
{
	const json_t *versions = obj_get(crd, "spec.versions");
	size_t n = json_array_size(versions), k = 0, i;
	rows_drop(js(crd, "metadata.name"));
	if (conflicts(crd))
		return false;
	const json_t **order = calloc(n ? n : 1, sizeof(*order));
	KB_REQUIRE(order);
	json_t *v;
	json_array_foreach (versions, i, v)
		if (json_is_true(json_object_get(v, "served")))
			order[k++] = v;
	qsort(order, k, sizeof(*order), version_order);
	for (i = 0; i < k; i++) {
		struct crd_row *c = row_build(crd, order[i]);
		if (resource_add(&c->r) == 0)
			c->active = true;
		else
			kb_err("crd", "%s: resource table full", js(crd, "metadata.name"));
	}
	free(order);
	return true;
}

static void table_changed(void)
{
	openapi_invalidate(); /* discovery is built per request from the table */
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

static json_t *desired_status(const json_t *crd, bool accepted, const char *ts)
{
	json_t *names = json_deep_copy(obj_get(crd, "spec.names"));
	json_t *conds = json_array();
	if (accepted) {
		json_array_append_new(conds, condition("NamesAccepted", true, "NoConflicts",
						       "no conflicts found", ts));
		json_array_append_new(conds, condition("Established", true, "InitialNamesAccepted",
						       "the initial names have been accepted", ts));
	} else {
		json_array_append_new(
		    conds, condition("NamesAccepted", false, "ResourceConflict",
				     "the resource name conflicts with a built-in resource", ts));
		json_array_append_new(conds, condition("Established", false, "NotAccepted",
						       "not all names are accepted", ts));
	}
	json_t *stored = json_deep_copy(obj_get(crd, "status.storedVersions"));
	if (!json_is_array(stored)) {
		json_decref(stored);
		stored = json_array();
	}
	const char *sv = storage_version(crd);
	bool have = false;
	size_t i;
	json_t *x;
	json_array_foreach (stored, i, x)
		have |= sv && strcmp(json_string_value(x), sv) == 0;
	if (sv && !have)
		json_array_append_new(stored, json_string(sv));
	if (!accepted) {
		json_decref(names);
		names = json_object();
	}
	return json_pack("{s:o,s:o,s:o}", "conditions", conds, "acceptedNames", names,
			 "storedVersions", stored);
}

/* Equal but for lastTransitionTime. */
static bool same_status(const json_t *a, const json_t *b)
{
	json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(x, "conditions"), i, c)
		json_object_del(c, "lastTransitionTime");
	json_array_foreach (json_object_get(y, "conditions"), i, c)
		json_object_del(c, "lastTransitionTime");
	bool eq = json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return eq;
}

static void status_sync(struct proxy *px, const json_t *crd, bool accepted)
{
	char ts[40];
	kb_time_rfc3339(time(NULL), ts, sizeof(ts));
	json_t *want = desired_status(crd, accepted, ts);
	if (!want || same_status(want, json_object_get(crd, "status"))) {
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

/* ---- events ------------------------------------------------------------------- */

/* Deletes every object of the CRD's resource, in every namespace. */
static void delete_objects(struct proxy *px, const json_t *crd)
{
	char key[256];
	snprintf(key, sizeof(key), "%s/%s", js(crd, "spec.group"), js(crd, "spec.names.plural"));
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

static void on_crd(const struct store_event *ev, void *arg)
{
	struct proxy *px = arg;
	if (ev->type == STORE_DELETED) {
		rows_drop(ev->name);
		delete_objects(px, ev->obj);
		table_changed();
		return;
	}
	bool ok = rows_sync(ev->obj);
	table_changed();
	status_sync(px, ev->obj, ok);
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
	json_array_foreach (res.items, i, o)
		rows_sync(o);
	json_decref(res.items);
	free(res.next);
	table_changed();
	crd_px = px;
	return store_watch(px->store, CRD_KEY, NULL, res.rev, on_crd, px, &crd_watch);
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
	else if ((msg = val_dns1035_label(plural)))
		val_add(causes, "FieldValueInvalid", "spec.names.plural", "\"%s\": %s", plural,
			msg);
	if (*singular && (msg = val_dns1035_label(singular)))
		val_add(causes, "FieldValueInvalid", "spec.names.singular", "\"%s\": %s", singular,
			msg);
	if (!*js(names, "kind"))
		val_add(causes, "FieldValueRequired", "spec.names.kind", NULL);
	if (!*js(names, "listKind"))
		val_add(causes, "FieldValueRequired", "spec.names.listKind", NULL);
}

static void val_versions(const json_t *crd, json_t *causes)
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
	json_array_foreach (versions, i, v) {
		const char *name = js(v, "name"), *msg;
		snprintf(p, sizeof(p), "spec.versions[%zu].name", i);
		if (!*name)
			val_add(causes, "FieldValueRequired", p, NULL);
		else if ((msg = val_dns1035_label(name)))
			val_add(causes, "FieldValueInvalid", p, "\"%s\": %s", name, msg);
		for (k = 0; k < i; k++)
			if (strcmp(js(json_array_get(versions, k), "name"), name) == 0)
				val_add(causes, "FieldValueDuplicate", p, "\"%s\"", name);
		storage += json_is_true(json_object_get(v, "storage"));
		snprintf(p, sizeof(p), "spec.versions[%zu].schema.openAPIV3Schema", i);
		crd_schema_structural(obj_get(v, "schema.openAPIV3Schema"), p, causes);
	}
	if (storage != 1)
		val_add(causes, "FieldValueInvalid", "spec.versions",
			"%zu: must have exactly one version marked as storage version", storage);
}

static void val_crd(const json_t *crd, const json_t *old, json_t *causes)
{
	const char *group = js(crd, "spec.group"), *scope = js(crd, "spec.scope");
	const char *name = js(crd, "metadata.name"),
		   *strategy = js(crd, "spec.conversion.strategy");
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
	if (strcmp(strategy, "None") != 0)
		val_add(causes, "FieldValueNotSupported", "spec.conversion.strategy",
			"\"%s\": supported values: \"None\"", strategy);
	val_names(crd, causes);
	val_versions(crd, causes);
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
	else if (r->name)
		store_get(r->px->store, CRD_KEY, "", r->name, &old);
	val_crd(obj, old, causes);
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
	crd_schema_validate(r->res->schema, obj, causes);
	if (json_array_size(causes)) {
		reply_invalid(r, r->res->kind, obj_str(obj, "metadata.name"), json_incref(causes));
		rc = -EINVAL;
	}
out:
	json_decref(paths);
	json_decref(causes);
	return rc;
}

int crd_check_fields(struct req *r, json_t *obj)
{
	if (is_crd_row(r->res))
		return check_crd(r, obj);
	if (r->res->crd && r->res->schema)
		return check_custom(r, obj);
	return 0;
}

/* ---- the scale subresource ------------------------------------------------------------ */

/* Sets the value (stolen) at a dotted path, creating objects on the way. */
static void set_path(json_t *obj, const char *path, json_t *value)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *cur = obj;
	char *save = NULL, *seg = strtok_r(buf, ".", &save), *next;
	for (; seg; seg = next) {
		next = strtok_r(NULL, ".", &save);
		if (!next) {
			json_object_set_new(cur, seg, value);
			return;
		}
		json_t *c = json_object_get(cur, seg);
		if (!json_is_object(c)) {
			c = json_object();
			json_object_set_new(cur, seg, c);
		}
		cur = c;
	}
	json_decref(value);
}

static json_t *scale_view(const struct crd_row *c, const json_t *obj)
{
	json_t *m = json_object_get(obj, "metadata"), *sm = json_object();
	const char *keys[] = {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		if (json_object_get(m, keys[i]))
			json_object_set(sm, keys[i], json_object_get(m, keys[i]));
	json_t *spec = c->spec_replicas ? obj_get(obj, c->spec_replicas) : NULL;
	json_t *st = c->status_replicas ? obj_get(obj, c->status_replicas) : NULL;
	json_t *scale = json_pack("{s:s,s:s,s:o,s:{s:I},s:{s:I}}", "kind", "Scale", "apiVersion",
				  "autoscaling/v1", "metadata", sm, "spec", "replicas",
				  (json_int_t)json_integer_value(spec), "status", "replicas",
				  (json_int_t)json_integer_value(st));
	const char *sel = c->selector_path ? obj_str(obj, c->selector_path) : NULL;
	if (sel)
		json_object_set_new(json_object_get(scale, "status"), "selector", json_string(sel));
	return scale;
}

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

static void scale_write(struct req *r, const struct crd_row *c, json_t *obj)
{
	json_t *cur = scale_view(c, obj), *in = NULL, *causes = json_array();
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
	set_path(upd, c->spec_replicas, json_incref(rep));
	if (!json_equal(upd, obj)) {
		json_int_t g = json_integer_value(obj_get(obj, "metadata.generation"));
		json_object_set_new(obj_meta(upd), "generation", json_integer(g + 1));
	}
	crd_schema_validate(c->r.schema, upd, causes);
	int rc = json_array_size(causes)
		     ? -EINVAL
		     : store_update(r->px->store, c->r.store_key, r->ns ? r->ns : "", r->name, upd,
				    obj_rv(obj), NULL);
	if (rc == -EINVAL)
		reply_invalid(r, c->r.kind, r->name, json_incref(causes));
	else if (rc < 0)
		reply_errno(r, rc, r->name);
	else {
		json_t *s = scale_view(c, upd);
		reply_json(r, 200, s);
		json_decref(s);
	}
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
	if (!c || !r->sub || strcmp(r->sub, "scale") != 0 || !c->spec_replicas)
		return false;
	int rc = store_get(r->px->store, c->r.store_key, r->ns ? r->ns : "", r->name, &obj);
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		return true;
	}
	const char *m = r->http->method;
	if (strcmp(m, "GET") == 0) {
		json_t *s = scale_view(c, obj);
		reply_json(r, 200, s);
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
