/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The internal API: how in-process controllers (controllers/) create,
 * update and delete objects. Each write takes the same path as an API
 * request minus HTTP: server-owned metadata, per-kind defaults, metadata and
 * kind validation, managed-fields tracking under the controller's manager
 * name, then the store (which notifies watchers). Errors are returned as
 * negative errnos; validation causes are logged, since there is no client.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/log.h"
#include "lib/util.h"
#include "proxy/patch.h"
#include "proxy/proxy_impl.h"
#include "proxy/validate.h"
#include "proxy/vap.h"
#include "proxy/webhook.h"

static const struct proxy_resource *find_res(const char *group, const char *version,
					     const char *plural)
{
	const struct proxy_resource *res = resource_find(group ? group : "", version, plural);
	if (!res || !res->stored)
		return NULL;
	return res;
}

static const char *key_ns(const struct proxy_resource *res, const json_t *obj)
{
	const char *ns = obj_str(obj, "metadata.namespace");
	return res->namespaced && ns ? ns : "";
}

/* Metadata + kind validation; logs kube's message on failure. */
static int validate(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		    const json_t *old)
{
	json_t *causes = json_array();
	if (!causes)
		return -ENOMEM;
	val_object_meta(res, obj, old, causes);
	val_object(res, obj, old, causes);
	int rc = 0;
	if (json_array_size(causes) > 0) {
		char *msg = val_status_message(res, obj_str(obj, "metadata.name"), causes);
		kb_warn("api", "internal write refused: %s", msg ? msg : "invalid");
		free(msg);
		rc = -EINVAL;
	}
	json_decref(causes);
	return rc < 0 ? rc : admission_internal(px, res, obj, old);
}

static void track(const struct proxy_resource *res, const json_t *old, json_t *obj,
		  const char *manager)
{
	char ts[40];
	kb_time_rfc3339(time(NULL), ts, sizeof(ts));
	patch_track_update(old, obj, res->proto, manager ? manager : "kubicle-controller", "Update",
			   ts);
}

/* The namespace exists and is not terminating. */
static int ns_writable(struct proxy *px, const char *ns)
{
	const struct proxy_resource *nsr = resource_find("", "v1", "namespaces");
	json_t *obj = NULL;
	int rc = store_get(px->store, nsr->store_key, "", ns, &obj);
	if (rc < 0)
		return rc == -ENOENT ? -EPERM : rc;
	bool terminating = obj_str(obj, "metadata.deletionTimestamp") != NULL;
	json_decref(obj);
	return terminating ? -EPERM : 0;
}

static void assign_name(json_t *obj)
{
	json_t *m = obj_meta(obj);
	const char *name = json_string_value(json_object_get(m, "name"));
	const char *gen = json_string_value(json_object_get(m, "generateName"));
	if ((name && *name) || !gen || !*gen)
		return;
	char buf[300], sfx[8];
	kb_random_suffix(sfx, 5);
	size_t glen = strlen(gen);
	if (glen > 58)
		glen = 58;
	snprintf(buf, sizeof(buf), "%.*s%s", (int)glen, gen, sfx);
	json_object_set_new(m, "name", json_string(buf));
}

/* A create's first half: the namespace may take it, its name, server
 * metadata and defaults. 0 or a negative errno. */
static int create_prepare(struct proxy *px, const struct proxy_resource *res, json_t *obj)
{
	int rc;
	if (res->namespaced && (rc = ns_writable(px, key_ns(res, obj))) < 0)
		return rc;
	assign_name(obj);
	obj_init_create(res, obj, time(NULL));
	obj_defaults(px, res, obj);
	return 0;
}

/* Its second half: validation and admission (the ValidatingAdmissionPolicies
 * included: their denial's message into why, when given), managed fields,
 * the store. */
static int create_store(struct proxy *px, const struct proxy_resource *res, json_t *obj,
			const char *manager, json_t **out, char *why, size_t wl)
{
	char denial[1024];
	int rc = validate(px, res, obj, NULL);
	if (rc == 0 &&
	    (rc = vap_admit_internal(px, res, obj, manager, denial, sizeof(denial))) < 0) {
		kb_warn("api", "internal write refused: %s", denial);
		if (why)
			snprintf(why, wl, "%s", denial);
	}
	if (rc < 0)
		return rc;
	track(res, NULL, obj, manager);
	rc = store_create(px->store, res->store_key, key_ns(res, obj),
			  obj_str(obj, "metadata.name"), obj, NULL);
	if (rc == 0 && out)
		*out = json_incref(obj);
	return rc;
}

int proxy_object_create(proxy_t *px, const char *group, const char *version, const char *plural,
			json_t *obj, const char *manager, json_t **out)
{
	const struct proxy_resource *res = find_res(group, version, plural);
	if (!res)
		return -ENOENT;
	int rc = create_prepare(px, res, obj);
	return rc < 0 ? rc : create_store(px, res, obj, manager, out, NULL, 0);
}

/* ---- creates that wait for admission webhooks ---------------------------- */

/* One create of a controller in its webhooks (px->pending_creates). */
struct pending_create {
	struct proxy *px;
	const struct proxy_resource *res;
	char *ns, *name, *owner_uid, *manager;
	proxy_create_done_fn done;
	void *arg;
	struct pending_create *next, *prev;
};

static void pending_free(struct pending_create *p)
{
	free(p->ns);
	free(p->name);
	free(p->owner_uid);
	free(p->manager);
	free(p);
}

static const char *controller_uid(const json_t *obj)
{
	size_t i;
	json_t *ref;
	json_array_foreach (obj_get(obj, "metadata.ownerReferences"), i, ref)
		if (json_is_true(json_object_get(ref, "controller")))
			return json_string_value(json_object_get(ref, "uid"));
	return NULL;
}

static bool pending_named(struct proxy *px, const struct proxy_resource *res, const char *ns,
			  const char *name)
{
	for (struct pending_create *p = px->pending_creates; p; p = p->next)
		if (p->res == res && strcmp(p->ns, ns) == 0 && strcmp(p->name, name) == 0)
			return true;
	return false;
}

void proxy_pending_creates_free(struct proxy *px)
{
	while (px->pending_creates) {
		struct pending_create *p = px->pending_creates;
		KB_LIST_UNLINK(px->pending_creates, p);
		kb_warn("api", "%s %s/%s of %s not created: the server is stopping", p->res->plural,
			p->ns, p->name, p->manager);
		pending_free(p);
	}
}

size_t proxy_creates_pending(proxy_t *px, const char *ns, const char *owner_uid)
{
	size_t n = 0;
	for (struct pending_create *p = px->pending_creates; p && owner_uid; p = p->next)
		n += p->owner_uid && strcmp(p->ns, ns ? ns : "") == 0 &&
		     strcmp(p->owner_uid, owner_uid) == 0;
	return n;
}

/* The webhooks are done with it: validation, then the store. */
static void on_admitted(void *arg, int rc, json_t *obj, const char *message)
{
	struct pending_create *p = arg;
	struct proxy *px = p->px;
	KB_LIST_UNLINK(px->pending_creates, p);
	json_t *made = NULL;
	char why[1200];
	if (rc < 0) {
		snprintf(why, sizeof(why), "%s",
			 message ? message : "refused by an admission webhook");
	} else if (px->stopping) {
		rc = -ECANCELED;
		snprintf(why, sizeof(why), "the server is stopping");
	} else if (p->res->namespaced && (rc = ns_writable(px, p->ns)) < 0) {
		snprintf(why, sizeof(why), "namespace %s is gone or terminating", p->ns);
	} else if ((why[0] = '\0',
		    rc = create_store(px, p->res, obj, p->manager, &made, why, sizeof(why))) < 0) {
		if (!why[0])
			snprintf(why, sizeof(why), "%s", strerror(-rc));
	}
	if (rc < 0)
		kb_warn("api", "%s %s/%s of %s not created: %s", p->res->plural, p->ns, p->name,
			p->manager, why);
	if (p->done)
		p->done(p->arg, rc, made ? made : obj, rc < 0 ? why : NULL);
	json_decref(made);
	pending_free(p);
}

int proxy_object_create_admitted(proxy_t *px, const char *group, const char *version,
				 const char *plural, json_t *obj, const char *manager,
				 proxy_create_done_fn done, void *arg, json_t **out)
{
	const struct proxy_resource *res = find_res(group, version, plural);
	if (!res)
		return -ENOENT;
	int rc = create_prepare(px, res, obj);
	if (rc < 0)
		return rc;
	const char *ns = key_ns(res, obj), *name = obj_str(obj, "metadata.name");
	if (name && pending_named(px, res, ns, name))
		return -EINPROGRESS; /* already on its way */
	struct pending_create *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->px = px;
	p->res = res;
	p->ns = strdup(ns);
	p->name = strdup(name ? name : "");
	p->owner_uid = controller_uid(obj) ? strdup(controller_uid(obj)) : NULL;
	p->manager = strdup(manager ? manager : "kubicle-controller");
	p->done = done;
	p->arg = arg;
	if (!p->ns || !p->name || !p->manager) {
		pending_free(p);
		return -ENOMEM;
	}
	KB_LIST_PUSH(px->pending_creates, p);
	rc = webhook_internal_create(px, res, obj, p->manager, on_admitted, p);
	if (rc == 1)
		return -EINPROGRESS; /* p is the webhooks' now (maybe freed already) */
	KB_LIST_UNLINK(px->pending_creates, p);
	pending_free(p);
	if (rc < 0)
		return rc;
	char why[2048] = "";
	rc = create_store(px, res, obj, manager, out, why, sizeof(why));
	if (rc == -EACCES && why[0] && done) {
		done(arg, rc, obj, why); /* a policy's denial, in kube's words */
		return -EINPROGRESS;
	}
	return rc;
}

/* Stores obj over old (both borrowed) after defaults and validation. */
static int write_over(struct proxy *px, const struct proxy_resource *res, const json_t *old,
		      json_t *obj, const char *manager, json_t **out)
{
	int64_t old_rv = obj_rv(old);
	int64_t want_rv = obj_rv(obj);
	if (want_rv && want_rv != old_rv)
		return -ESTALE;
	obj_keep_server_meta(old, obj);
	json_object_set(obj_meta(obj), "resourceVersion",
			json_object_get(json_object_get(old, "metadata"), "resourceVersion"));
	obj_defaults(px, res, obj);
	if (obj_has_generation(res) && obj_spec_changed(old, obj)) {
		json_int_t g = json_integer_value(obj_get(old, "metadata.generation"));
		json_object_set_new(obj_meta(obj), "generation", json_integer(g + 1));
	}
	int rc = validate(px, res, obj, old);
	if (rc < 0)
		return rc;
	track(res, old, obj, manager);
	const char *ns = key_ns(res, old), *name = obj_str(old, "metadata.name");
	if (obj_same(old, obj)) {
		if (out)
			*out = json_incref((json_t *)old);
		return 0;
	}
	if (obj_str(obj, "metadata.deletionTimestamp") &&
	    json_array_size(obj_get(obj, "metadata.finalizers")) == 0 &&
	    !(res->group[0] == '\0' && strcmp(res->kind, "Namespace") == 0)) {
		rc = store_delete(px->store, res->store_key, ns, name, old_rv, out, NULL);
		return rc;
	}
	rc = store_update(px->store, res->store_key, ns, name, obj, old_rv, NULL);
	if (rc == 0 && out)
		*out = json_incref(obj);
	return rc;
}

static int load_old(struct proxy *px, const struct proxy_resource *res, const json_t *obj,
		    json_t **old)
{
	const char *name = obj_str(obj, "metadata.name");
	if (!name)
		return -EINVAL;
	return store_get(px->store, res->store_key, key_ns(res, obj), name, old);
}

int proxy_object_update(proxy_t *px, const char *group, const char *version, const char *plural,
			json_t *obj, const char *manager, json_t **out)
{
	const struct proxy_resource *res = find_res(group, version, plural);
	json_t *old = NULL;
	if (!res)
		return -ENOENT;
	int rc = load_old(px, res, obj, &old);
	if (rc < 0)
		return rc;
	if (res->has_status) {
		json_t *st = json_object_get(old, "status");
		if (st)
			json_object_set(obj, "status", st);
		else
			json_object_del(obj, "status");
	}
	rc = write_over(px, res, old, obj, manager, out);
	json_decref(old);
	return rc;
}

int proxy_object_update_status(proxy_t *px, const char *group, const char *version,
			       const char *plural, json_t *obj, const char *manager, json_t **out)
{
	const struct proxy_resource *res = find_res(group, version, plural);
	json_t *old = NULL;
	if (!res)
		return -ENOENT;
	int rc = load_old(px, res, obj, &old);
	if (rc < 0)
		return rc;
	json_t *upd = json_deep_copy(old);
	json_t *st = json_object_get(obj, "status");
	if (st)
		json_object_set(upd, "status", st);
	json_t *rv = obj_get(obj, "metadata.resourceVersion");
	if (rv)
		json_object_set(obj_meta(upd), "resourceVersion", rv);
	rc = write_over(px, res, old, upd, manager, out);
	json_decref(upd);
	json_decref(old);
	return rc;
}

static bool has_finalizer(const json_t *obj, const char *fin)
{
	size_t i;
	json_t *f;
	json_array_foreach (obj_get(obj, "metadata.finalizers"), i, f)
		if (json_string_value(f) && strcmp(json_string_value(f), fin) == 0)
			return true;
	return false;
}

bool proxy_propagation_finalizer(const char *propagation, json_t *obj)
{
	const char *fin = NULL;
	if (!propagation || obj_str(obj, "metadata.deletionTimestamp"))
		return false;
	if (strcmp(propagation, "Foreground") == 0)
		fin = "foregroundDeletion";
	else if (strcmp(propagation, "Orphan") == 0)
		fin = "orphan";
	if (!fin || has_finalizer(obj, fin))
		return false;
	json_t *m = obj_meta(obj);
	json_t *fins = json_object_get(m, "finalizers");
	if (!json_is_array(fins)) {
		fins = json_array();
		json_object_set_new(m, "finalizers", fins);
	}
	json_array_append_new(fins, json_string(fin));
	return true;
}

/* A pod bound to a node terminates gracefully (the syncer removes it). */
static long pod_grace(const struct proxy_resource *res, const json_t *obj)
{
	if (res->group[0] || strcmp(res->kind, "Pod") != 0)
		return 0;
	const char *node = obj_str(obj, "spec.nodeName");
	const char *phase = obj_str(obj, "status.phase");
	if (!node || !*node ||
	    (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
		return 0;
	json_t *g = obj_get(obj, "spec.terminationGracePeriodSeconds");
	return json_is_integer(g) ? (long)json_integer_value(g) : 30;
}

/* Marks obj (borrowed copy) for deletion: deletionTimestamp after grace. */
static int mark_deleted(struct proxy *px, const struct proxy_resource *res, json_t *obj, long grace)
{
	char ts[40];
	kb_time_rfc3339(time(NULL) + grace, ts, sizeof(ts));
	json_object_set_new(obj_meta(obj), "deletionTimestamp", json_string(ts));
	json_object_set_new(obj_meta(obj), "deletionGracePeriodSeconds", json_integer(grace));
	return store_update(px->store, res->store_key, key_ns(res, obj),
			    obj_str(obj, "metadata.name"), obj, obj_rv(obj), NULL);
}

int proxy_object_delete(proxy_t *px, const char *group, const char *version, const char *plural,
			const char *ns, const char *name, const char *uid, const char *propagation)
{
	const struct proxy_resource *res = find_res(group, version, plural);
	json_t *obj = NULL;
	if (!res)
		return -ENOENT;
	const char *kns = res->namespaced && ns ? ns : "";
	int rc = store_get(px->store, res->store_key, kns, name, &obj);
	if (rc < 0)
		return rc;
	const char *have = obj_str(obj, "metadata.uid");
	if (uid && have && strcmp(uid, have) != 0) {
		rc = -ESTALE;
		goto out;
	}
	bool added = proxy_propagation_finalizer(propagation, obj);
	if (obj_str(obj, "metadata.deletionTimestamp")) {
		if (added)
			rc = store_update(px->store, res->store_key, kns, name, obj, obj_rv(obj),
					  NULL);
		goto out;
	}
	long grace = pod_grace(res, obj);
	if (json_array_size(obj_get(obj, "metadata.finalizers")) > 0 || grace > 0) {
		rc = mark_deleted(px, res, obj, grace);
		goto out;
	}
	rc = store_delete(px->store, res->store_key, kns, name, obj_rv(obj), NULL, NULL);
out:
	json_decref(obj);
	return rc;
}

int proxy_object_get(proxy_t *px, const char *group, const char *version, const char *plural,
		     const char *ns, const char *name, json_t **out)
{
	const struct proxy_resource *res = find_res(group, version, plural);
	if (!res)
		return -ENOENT;
	return store_get(px->store, res->store_key, res->namespaced && ns ? ns : "", name, out);
}

int proxy_object_list(proxy_t *px, const char *group, const char *version, const char *plural,
		      const char *ns, json_t **out)
{
	const struct proxy_resource *res = find_res(group, version, plural);
	if (!res)
		return -ENOENT;
	struct store_list_req lr = {.res = res->store_key, .ns = res->namespaced ? ns : NULL};
	struct store_list_result lres = {0};
	int rc = store_list(px->store, &lr, &lres);
	if (rc < 0)
		return rc;
	free(lres.next);
	*out = lres.items;
	return 0;
}
