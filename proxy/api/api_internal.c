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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/patch/patch.h"
#include "proxy/api/api.h"
#include "proxy/validation/validate.h"
#include "proxy/admission/vap.h"
#include "proxy/admission/webhook.h"

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

/* Metadata + kind validation, then the built-in admission chain; logs
 * kube's message on failure and, when why is given, copies it there as
 * kube's API would answer it (`Pod "x" is invalid: ...`, `pods "x" is
 * forbidden: ...`: what a controller's FailedCreate event says). */
static int validate(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		    const json_t *old, char *why, size_t wl)
{
	json_t *causes = json_array();
	if (!causes)
		return -ENOMEM;
	val_object_meta(res, obj, old, causes);
	val_object(res, obj, old, causes);
	/* a controller's pod is held to what the API holds a tenant's pod to
	 * (write.c): it names no host object either (a Deployment's template
	 * is the tenant's) */
	if (px->api->host_sync && !res->group[0] && strcmp(res->kind, "Pod") == 0)
		hostpod_refuse(obj, old, px->policy != NULL, causes);
	int rc = 0;
	if (json_array_size(causes) > 0) {
		char *msg = val_status_message(res, obj_str(obj, "metadata.name"), causes);
		kb_warn("api", "internal write refused: %s", msg ? msg : "invalid");
		if (why)
			snprintf(why, wl, "%s", msg ? msg : "invalid");
		free(msg);
		rc = -EINVAL;
	}
	json_decref(causes);
	return rc < 0 ? rc : admission_internal(px, res, obj, old, why, wl);
}

static void track(const struct proxy_resource *res, const char *sub, const json_t *old, json_t *obj,
		  const char *manager)
{
	char ts[40];
	kb_time_rfc3339(time(NULL), ts, sizeof(ts));
	patch_track_update_sub(old, obj, res->proto, manager ? manager : "kubicle-controller",
			       "Update", sub, ts);
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
	write_defaults(px, res, obj);
	return 0;
}

/* The ValidatingAdmissionPolicies on a controller's write (op of obj over
 * old, of res or its subresource sub): 0, or -EACCES with the denial logged
 * and, when why is given, copied there in kube's words. */
static int admit(struct proxy *px, const struct proxy_resource *res, const char *op,
		 const char *sub, const json_t *obj, const json_t *old, const char *manager,
		 char *why, size_t wl)
{
	char denial[1024];
	int rc = vap_admit_internal(px, res, op, sub, obj, old, manager, denial, sizeof(denial));
	if (rc < 0) {
		const json_t *o = obj ? obj : old;
		const char *ns = res->namespaced ? obj_str(o, "metadata.namespace") : NULL;
		kb_warn("api", "%s of %s %s%s%s by %s refused: %s", op, res->plural, ns ? ns : "",
			ns ? "/" : "", obj_str(o, "metadata.name"), manager ? manager : "?",
			denial);
		if (why)
			snprintf(why, wl, "%s", denial);
	}
	return rc;
}

/* Its second half: validation and admission (the ValidatingAdmissionPolicies
 * included: their denial's message into why, when given), managed fields,
 * the store. */
static int create_store(struct proxy *px, const struct proxy_resource *res, json_t *obj,
			const char *manager, json_t **out, char *why, size_t wl)
{
	int rc = validate(px, res, obj, NULL, why, wl);
	if (rc == 0)
		rc = admit(px, res, "CREATE", NULL, obj, NULL, manager, why, wl);
	if (rc < 0)
		return rc;
	track(res, NULL, NULL, obj, manager);
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

/* One create of a controller in its webhooks (px->api->pending_creates). */
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
	for (struct pending_create *p = px->api->pending_creates; p; p = p->next)
		if (p->res == res && strcmp(p->ns, ns) == 0 && strcmp(p->name, name) == 0)
			return true;
	return false;
}

size_t proxy_creates_pending(proxy_t *px, const char *ns, const char *owner_uid)
{
	size_t n = 0;
	for (struct pending_create *p = px->api->pending_creates; p && owner_uid; p = p->next)
		n += p->owner_uid && strcmp(p->ns, ns ? ns : "") == 0 &&
		     strcmp(p->owner_uid, owner_uid) == 0;
	return n;
}

/* The webhooks are done with it: validation, then the store. */
static void on_admitted(void *arg, int rc, json_t *obj, const char *message)
{
	struct pending_create *p = arg;
	struct proxy *px = p->px;
	KB_LIST_UNLINK(px->api->pending_creates, p);
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
	KB_LIST_PUSH(px->api->pending_creates, p);
	rc = webhook_internal(px, res, "CREATE", NULL, obj, NULL, p->manager, on_admitted, p);
	if (rc == 1)
		return -EINPROGRESS; /* p is the webhooks' now (maybe freed already) */
	KB_LIST_UNLINK(px->api->pending_creates, p);
	pending_free(p);
	if (rc < 0)
		return rc;
	char why[2048] = "";
	rc = create_store(px, res, obj, manager, out, why, sizeof(why));
	if ((rc == -EACCES || rc == -EINVAL) && why[0] && done) {
		done(arg, rc, obj, why); /* a denial or a refused field, in kube's words */
		return -EINPROGRESS;
	}
	return rc;
}

/* Stores obj over old (both borrowed) after defaults and validation. */
static int write_over(struct proxy *px, const struct proxy_resource *res, const char *sub,
		      const json_t *old, json_t *obj, const char *manager, json_t **out)
{
	int64_t old_rv = obj_rv(old);
	int64_t want_rv = obj_rv(obj);
	if (want_rv && want_rv != old_rv)
		return -ESTALE;
	obj_keep_server_meta(old, obj);
	json_object_set(obj_meta(obj), "resourceVersion",
			json_object_get(json_object_get(old, "metadata"), "resourceVersion"));
	write_defaults(px, res, obj);
	if (obj_has_generation(res) && obj_spec_changed(old, obj)) {
		json_int_t g = json_integer_value(obj_get(old, "metadata.generation"));
		json_object_set_new(obj_meta(obj), "generation", json_integer(g + 1));
	}
	int rc = validate(px, res, obj, old, NULL, 0);
	if (rc == 0)
		rc = admit(px, res, "UPDATE", sub, obj, old, manager, NULL, 0);
	if (rc < 0)
		return rc;
	track(res, sub, old, obj, manager);
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

/* What an update of res (sub NULL) or of its status (sub "status") writes
 * over old: obj with old's status (a kind with a status subresource), or
 * old with obj's status and resourceVersion. New reference. */
static json_t *update_of(const struct proxy_resource *res, const char *sub, const json_t *old,
			 json_t *obj)
{
	if (sub && strcmp(sub, "scale") == 0) {
		/* a Scale the webhooks shaped: only its replicas reach the object */
		json_t *upd = json_deep_copy(old);
		json_t *rep = obj_get(obj, "spec.replicas");
		if (upd && rep)
			scale_set(res, upd, rep);
		return upd;
	}
	if (sub) {
		json_t *upd = json_deep_copy(old);
		json_t *st = json_object_get(obj, "status");
		if (st)
			json_object_set(upd, "status", st);
		json_t *rv = obj_get(obj, "metadata.resourceVersion");
		if (rv)
			json_object_set(obj_meta(upd), "resourceVersion", rv);
		return upd;
	}
	if (res->has_status) {
		json_t *st = json_object_get(old, "status");
		if (st)
			json_object_set(obj, "status", st);
		else
			json_object_del(obj, "status");
	}
	return json_incref(obj);
}

/* ---- updates and deletes that wait for admission webhooks ------------------ */

/* One update or delete of a controller in its webhooks (px->api->pending_writes). */
struct pending_write {
	struct proxy *px;
	const struct proxy_resource *res;
	const char *op, *sub; /* "UPDATE" or "DELETE"; NULL, "status" or "scale" */
	char *ns, *name, *manager, *uid, *propagation;
	int64_t rv;             /* UPDATE: the revision the webhooks saw */
	api_write_done_fn done; /* the server's own write: told the outcome */
	void *done_arg;
	struct pending_write *next, *prev;
};

static void write_free(struct pending_write *p)
{
	free(p->ns);
	free(p->name);
	free(p->manager);
	free(p->uid);
	free(p->propagation);
	free(p);
}

static bool write_pending(struct proxy *px, const struct proxy_resource *res, const char *ns,
			  const char *name)
{
	for (struct pending_write *p = px->api->pending_writes; p; p = p->next)
		if (p->res == res && strcmp(p->ns, ns) == 0 && strcmp(p->name, name) == 0)
			return true;
	return false;
}

void api_internal_free(struct proxy *px)
{
	while (px->api->pending_creates) {
		struct pending_create *p = px->api->pending_creates;
		KB_LIST_UNLINK(px->api->pending_creates, p);
		kb_warn("api", "%s %s/%s of %s not created: the server is stopping", p->res->plural,
			p->ns, p->name, p->manager);
		pending_free(p);
	}
	while (px->api->pending_writes) {
		struct pending_write *p = px->api->pending_writes;
		KB_LIST_UNLINK(px->api->pending_writes, p);
		kb_warn("api", "%s of %s %s/%s by %s not made: the server is stopping", p->op,
			p->res->plural, p->ns, p->name, p->manager);
		write_free(p);
	}
}

static int delete_now(struct proxy *px, const struct proxy_resource *res, const char *ns,
		      const char *name, const char *uid, const char *propagation,
		      const char *manager);

void proxy_on_write_refused(proxy_t *px, proxy_write_refused_fn fn, void *arg)
{
	px->api->write_refused = fn;
	px->api->write_refused_arg = arg;
}

/* The webhooks are done with a pending update or delete: the write, now. */
static void on_write_admitted(void *arg, int rc, json_t *obj, const char *message)
{
	struct pending_write *p = arg;
	struct proxy *px = p->px;
	json_t *cur = NULL, *upd = NULL;
	KB_LIST_UNLINK(px->api->pending_writes, p);
	if (rc < 0) {
		kb_warn("api", "%s of %s %s/%s by %s refused: %s", p->op, p->res->plural, p->ns,
			p->name, p->manager, message ? message : "by an admission webhook");
	} else if (px->stopping) {
		rc = -ECANCELED;
	} else if (strcmp(p->op, "DELETE") == 0) {
		rc = delete_now(px, p->res, p->ns, p->name, p->uid, p->propagation, p->manager);
	} else if ((rc = store_get(px->store, p->res->store_key, p->ns, p->name, &cur)) == 0) {
		if (obj_rv(cur) != p->rv) /* changed meanwhile: its controller syncs again */
			rc = -ESTALE;
		else if (!(upd = update_of(p->res, p->sub, cur, obj)))
			rc = -ENOMEM;
		else
			rc = write_over(px, p->res, p->sub, cur, upd, p->manager, NULL);
	}
	if (rc < 0 && rc != -EACCES && rc != -ECANCELED)
		kb_info("api", "%s of %s %s/%s by %s not made after its webhooks: %s", p->op,
			p->res->plural, p->ns, p->name, p->manager, strerror(-rc));
	if (p->done)
		p->done(p->done_arg, rc, rc == -EACCES ? message : NULL);
	/* changed or gone meanwhile: that store event syncs the controller */
	else if (rc < 0 && rc != -ECANCELED && rc != -ESTALE && rc != -ENOENT &&
		 px->api->write_refused &&
		 (cur || store_get(px->store, p->res->store_key, p->ns, p->name, &cur) == 0))
		px->api->write_refused(px->api->write_refused_arg, p->res->store_key, cur);
	json_decref(upd);
	json_decref(cur);
	write_free(p);
}

/* The webhooks on a controller's update (obj over old) or delete (obj
 * NULL): 0 when none matched (write now), -EINPROGRESS when they were called
 * (or a write of that object is still in its webhooks), or a negative errno. */
static int hooked_then(struct proxy *px, const struct proxy_resource *res, const char *op,
		       const char *sub, json_t *obj, const json_t *old, const char *manager,
		       const char *propagation, api_write_done_fn done, void *done_arg)
{
	const char *ns = key_ns(res, old), *name = obj_str(old, "metadata.name");
	if (!name)
		return -EINVAL;
	if (write_pending(px, res, ns, name))
		return -EINPROGRESS; /* its event will sync the controller again */
	struct pending_write *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->px = px;
	p->res = res;
	p->op = op;
	p->sub = sub;
	p->ns = strdup(ns);
	p->name = strdup(name);
	p->manager = strdup(manager ? manager : "kubicle-controller");
	p->uid = obj_str(old, "metadata.uid") ? strdup(obj_str(old, "metadata.uid")) : NULL;
	p->propagation = propagation ? strdup(propagation) : NULL;
	p->rv = obj_rv(old);
	p->done = done;
	p->done_arg = done_arg;
	if (!p->ns || !p->name || !p->manager) {
		write_free(p);
		return -ENOMEM;
	}
	KB_LIST_PUSH(px->api->pending_writes, p);
	int rc = webhook_internal(px, res, op, sub, obj, old, p->manager, on_write_admitted, p);
	if (rc == 1)
		return -EINPROGRESS; /* p is the webhooks' now (maybe freed already) */
	KB_LIST_UNLINK(px->api->pending_writes, p);
	write_free(p);
	return rc;
}

static int hooked(struct proxy *px, const struct proxy_resource *res, const char *op,
		  const char *sub, json_t *obj, const json_t *old, const char *manager,
		  const char *propagation)
{
	return hooked_then(px, res, op, sub, obj, old, manager, propagation, NULL, NULL);
}

/* An update (sub NULL) or status update of the object obj names, through
 * the webhooks when one matches. */
static int update(struct proxy *px, const struct proxy_resource *res, const char *sub, json_t *obj,
		  const char *manager, json_t **out)
{
	json_t *old = NULL, *upd = NULL;
	int rc = load_old(px, res, obj, &old);
	if (rc < 0)
		return rc;
	if (!(upd = update_of(res, sub, old, obj))) {
		rc = -ENOMEM;
	} else if (!webhook_configured(px, res)) {
		rc = write_over(px, res, sub, old, upd, manager, out);
	} else {
		/* kube's controllers do not send what changes nothing */
		json_t *view = json_deep_copy(upd);
		if (view)
			obj_keep_server_meta(old, view);
		bool same = view && obj_same(old, view);
		json_decref(view);
		rc = same ? 0 : hooked(px, res, "UPDATE", sub, upd, old, manager, NULL);
		if (rc == 0)
			rc = write_over(px, res, sub, old, upd, manager, out);
	}
	json_decref(upd);
	json_decref(old);
	return rc;
}

int proxy_object_update(proxy_t *px, const char *group, const char *version, const char *plural,
			json_t *obj, const char *manager, json_t **out)
{
	const struct proxy_resource *res = find_res(group, version, plural);
	return res ? update(px, res, NULL, obj, manager, out) : -ENOENT;
}

int api_internal_update_status_admitted(struct proxy *px, const struct proxy_resource *res,
					json_t *obj, const char *manager, api_write_done_fn done,
					void *arg)
{
	json_t *old = NULL, *upd = NULL;
	int rc = load_old(px, res, obj, &old);
	if (rc < 0)
		return rc;
	if (!(upd = update_of(res, "status", old, obj)))
		rc = -ENOMEM;
	else if (write_pending(px, res, key_ns(res, old), obj_str(old, "metadata.name")))
		rc = -EBUSY;
	else if ((rc = hooked_then(px, res, "UPDATE", "status", upd, old, manager, NULL, done,
				   arg)) == 0)
		rc = write_over(px, res, "status", old, upd, manager, NULL);
	json_decref(upd);
	json_decref(old);
	return rc;
}

void api_internal_forget(struct proxy *px, void *arg)
{
	for (struct pending_write *p = px->api->pending_writes; p; p = p->next)
		if (p->done_arg == arg)
			p->done = NULL;
}

int proxy_object_update_status(proxy_t *px, const char *group, const char *version,
			       const char *plural, json_t *obj, const char *manager, json_t **out)
{
	const struct proxy_resource *res = find_res(group, version, plural);
	return res ? update(px, res, "status", obj, manager, out) : -ENOENT;
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

/* The delete itself, once admitted by the webhooks (not the policies: they
 * are asked here). */
static int delete_now(struct proxy *px, const struct proxy_resource *res, const char *kns,
		      const char *name, const char *uid, const char *propagation,
		      const char *manager)
{
	json_t *obj = NULL;
	int rc = store_get(px->store, res->store_key, kns, name, &obj);
	if (rc < 0)
		return rc;
	const char *have = obj_str(obj, "metadata.uid");
	if (uid && have && strcmp(uid, have) != 0) {
		rc = -ESTALE;
		goto out;
	}
	if (manager && (rc = admit(px, res, "DELETE", NULL, NULL, obj, manager, NULL, 0)) < 0)
		goto out;
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

int proxy_object_delete(proxy_t *px, const char *group, const char *version, const char *plural,
			const char *ns, const char *name, const char *uid, const char *propagation,
			const char *manager)
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
	if (uid && have && strcmp(uid, have) != 0)
		rc = -ESTALE;
	else if (manager)
		rc = hooked(px, res, "DELETE", NULL, NULL, obj, manager, propagation);
	json_decref(obj);
	return rc ? rc : delete_now(px, res, kns, name, uid, propagation, manager);
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

/* ---- the scale subresource ------------------------------------------------------- */

/* The row serving kind in api_version's group that has a scale subresource,
 * or NULL with kube's message (the RESTMapper's, then the scale client's). */
static const struct proxy_resource *scale_row(const char *api_version, const char *kind, char *err,
					      size_t errlen)
{
	char group[256] = "";
	const char *slash = api_version ? strchr(api_version, '/') : NULL;
	if (slash)
		snprintf(group, sizeof(group), "%.*s", (int)(slash - api_version), api_version);
	const struct proxy_resource *res = kind ? resource_find_kind(group, kind) : NULL;
	if (!res || !res->stored) {
		snprintf(err, errlen, "no matches for kind \"%s\" in group \"%s\"",
			 kind ? kind : "", group);
		return NULL;
	}
	if (!resource_sub(res, "scale")) {
		snprintf(err, errlen, "the server could not find the requested resource");
		return NULL;
	}
	return res;
}

static int scale_object(struct proxy *px, const struct proxy_resource *res, const char *ns,
			const char *name, json_t **obj, char *err, size_t errlen)
{
	int rc = rstore_get(px, res, res->namespaced ? ns : "", name, obj);
	if (rc < 0) {
		char q[300];
		reply_resource_name(res, q, sizeof(q));
		if (rc == -ENOENT)
			snprintf(err, errlen, "%s \"%s\" not found", q, name);
		else
			snprintf(err, errlen, "%s \"%s\": %s", q, name, strerror(-rc));
	}
	return rc;
}

int proxy_scale_get(proxy_t *px, const char *api_version, const char *kind, const char *ns,
		    const char *name, json_t **out, char *err, size_t errlen)
{
	const struct proxy_resource *res = scale_row(api_version, kind, err, errlen);
	if (!res)
		return -ENOENT;
	json_t *obj = NULL;
	int rc = scale_object(px, res, ns, name, &obj, err, errlen);
	if (rc < 0)
		return rc;
	if (!json_object_get(obj, "kind")) /* obj_scale_view tells an RC by its kind */
		json_object_set_new(obj, "kind", json_string(res->kind));
	*out = scale_view(res, obj);
	json_decref(obj);
	if (!*out) {
		snprintf(err, errlen, "the server could not find the requested resource");
		return -ENOTSUP;
	}
	return 0;
}

/* A controller's write of obj (the stored object with new replicas) through
 * the scale subresource, as kube's HPA controller writes through the scale
 * client (pkg/controller/podautoscaler/horizontal.go reconcileAutoscaler,
 * scaleNamespacer.Update): webhooks see an UPDATE of <plural>/scale with
 * autoscaling/v1 Scale objects, managedFields record the subresource. */
static int scale_write(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		       const char *manager)
{
	json_t *old = NULL;
	int rc = load_old(px, res, obj, &old);
	if (rc < 0)
		return rc;
	if (webhook_configured(px, res) && !obj_same(old, obj))
		rc = hooked(px, res, "UPDATE", "scale", obj, old, manager, NULL);
	if (rc == 0)
		rc = write_over(px, res, "scale", old, obj, manager, NULL);
	json_decref(old);
	return rc;
}

int proxy_scale_update(proxy_t *px, const char *api_version, const char *kind, const char *ns,
		       const char *name, int64_t replicas, const char *manager, char *err,
		       size_t errlen)
{
	const struct proxy_resource *res = scale_row(api_version, kind, err, errlen);
	if (!res)
		return -ENOENT;
	json_t *obj = NULL;
	int rc = scale_object(px, res, ns, name, &obj, err, errlen);
	if (rc < 0)
		return rc;
	if (res->crd)
		rc = scale_set_custom(res, obj, replicas);
	else
		json_object_set_new(kb_json_object_at(obj, "spec"), "replicas",
				    json_integer(replicas));
	if (rc == 0)
		rc = scale_write(px, res, obj, manager);
	if (rc < 0 && rc != -EINPROGRESS)
		snprintf(err, errlen, "%s",
			 rc == -ESTALE ? "the object has been modified; please apply your changes "
					 "to the latest version and try again"
				       : strerror(-rc));
	json_decref(obj);
	return rc;
}

const struct core_client api_client = {
    .create = proxy_object_create,
    .update = proxy_object_update,
    .update_status = proxy_object_update_status,
    .get = proxy_object_get,
    .list = proxy_object_list,
    .bootstrap_create = handle_bootstrap_create,
};
