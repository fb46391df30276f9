/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Objects as data: dotted-path access, the metadata the server owns on
 * create (uid, creationTimestamp, generation) and on update, and the
 * comparisons the write path makes. kube's per-kind defaults are
 * proxy/model/defaults.c; validation and admission are the write path's
 * (proxy/api/write.c).
 *
 * Threading: any thread (no global mutable state).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "proxy/model/object.h"

json_t *obj_get(const json_t *obj, const char *path)
{
	return kb_json_path(obj, path);
}

const char *obj_str(const json_t *obj, const char *path)
{
	return json_string_value(obj_get(obj, path));
}

/* Sets a string at a dotted path, creating objects on the way. */
void obj_set_str(json_t *obj, const char *path, const char *value)
{
	char key[128];
	json_t *cur = obj;
	for (;;) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(key))
			return;
		memcpy(key, path, n);
		key[n] = '\0';
		if (!dot) {
			json_object_set_new(cur, key, json_string(value));
			return;
		}
		json_t *next = json_object_get(cur, key);
		if (!json_is_object(next)) {
			next = json_object();
			json_object_set_new(cur, key, next);
		}
		cur = next;
		path = dot + 1;
	}
}

json_t *obj_meta(json_t *obj)
{
	json_t *m = json_object_get(obj, "metadata");
	if (!json_is_object(m)) {
		m = json_object();
		json_object_set_new(obj, "metadata", m);
	}
	return m;
}

int64_t obj_rv(const json_t *obj)
{
	const char *rv = obj_str(obj, "metadata.resourceVersion");
	return rv ? strtoll(rv, NULL, 10) : 0;
}
bool obj_has_generation(const struct proxy_resource *res)
{
	return (res->has_status && !res->no_generation) || res->crd;
}

/* kube-aggregator's strategy's PrepareForCreate: the status a client sent is
 * dropped, and a local APIService (no spec.service) is available at once. */
static void apiservice_prepare_create(json_t *obj, time_t now)
{
	json_t *status = json_object();
	json_object_set_new(obj, "status", status);
	if (json_is_object(obj_get(obj, "spec.service")))
		return;
	char ts[40];
	kb_time_rfc3339(now, ts, sizeof(ts));
	json_object_set_new(status, "conditions",
			    json_pack("[{s:s,s:s,s:s,s:s,s:s}]", "type", "Available", "status",
				      "True", "lastTransitionTime", ts, "reason", "Local",
				      "message", "Local APIServices are always available"));
}

/* Server-owned metadata of a new object. */
void obj_init_create(const struct proxy_resource *res, json_t *obj, time_t now)
{
	json_t *m = obj_meta(obj);
	char uid[40], ts[40];
	kb_uuid(uid);
	kb_time_rfc3339(now, ts, sizeof(ts));
	/* ours, ASCII: neither the keys nor the values checked as UTF-8 again */
	json_object_set_new_nocheck(m, "uid", json_string_nocheck(uid));
	json_object_set_new_nocheck(m, "creationTimestamp", json_string_nocheck(ts));
	json_object_del(m, "deletionTimestamp");
	json_object_del(m, "deletionGracePeriodSeconds");
	json_object_del(m, "selfLink");
	json_object_del(m, "resourceVersion");
	if (obj_has_generation(res))
		json_object_set_new_nocheck(m, "generation", json_integer(1));
	else
		json_object_del(m, "generation");
	if (strcmp(res->group, "admissionregistration.k8s.io") == 0 &&
	    strcmp(res->kind, "ValidatingAdmissionPolicy") == 0) /* kube's PrepareForCreate */
		json_object_set_new(obj, "status", json_object());
	/* kube's podStrategy.PrepareForCreate (pkg/registry/core/pod/strategy.go):
	 * a new pod's status is the server's (phase Pending and its QoS class,
	 * from the defaults); a pod created "Succeeded" would count for
	 * nothing in a quota while it runs */
	if (!res->group[0] && strcmp(res->kind, "Pod") == 0)
		json_object_set_new(obj, "status", json_object());
	if (strcmp(res->group, "apiregistration.k8s.io") == 0)
		apiservice_prepare_create(obj, now);
	char av[128];
	if (res->group[0])
		snprintf(av, sizeof(av), "%s/%s", res->group, res->version);
	else
		snprintf(av, sizeof(av), "%s", res->version);
	json_object_set_new_nocheck(obj, "apiVersion", json_string(av));
	json_object_set_new_nocheck(obj, "kind", json_string(res->kind));
}
/* Metadata the client cannot change through an update: taken from `old`. */
void obj_keep_server_meta(const json_t *old, json_t *obj)
{
	json_t *om = json_object_get(old, "metadata");
	json_t *m = obj_meta(obj);
	const char *keys[] = {"uid",
			      "creationTimestamp",
			      "deletionTimestamp",
			      "deletionGracePeriodSeconds",
			      "generation",
			      "namespace",
			      "name"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(om, keys[i]);
		if (v)
			json_object_set(m, keys[i], v);
		else
			json_object_del(m, keys[i]);
	}
	json_object_del(m, "selfLink");
}

/* Drops the times of managedFields entries. */
static void drop_field_times(json_t *obj)
{
	size_t i;
	json_t *e;
	json_array_foreach (json_object_get(obj_meta(obj), "managedFields"), i, e)
		json_object_del(e, "time");
}

/* True when a and b differ at most in resourceVersion and the times of
 * their managedFields entries (an update that changes nothing is not
 * written, as in kube-apiserver, whose IgnoreManagedFieldsTimestampsTransformer
 * in endpoints/handlers/fieldmanager keeps the old times then; a change of
 * owners alone, such as a new co-owner's apply, is written). */
bool obj_same(const json_t *a, const json_t *b)
{
	json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
	drop_field_times(x);
	drop_field_times(y);
	json_object_del(obj_meta(x), "resourceVersion");
	json_object_del(obj_meta(y), "resourceVersion");
	bool eq = json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return eq;
}
/* True when anything outside metadata and status differs. */
bool obj_spec_changed(const json_t *a, const json_t *b)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)a, k, v) {
		if (strcmp(k, "metadata") == 0 || strcmp(k, "status") == 0)
			continue;
		if (!json_equal(v, json_object_get(b, k)))
			return true;
	}
	json_object_foreach ((json_t *)b, k, v) {
		if (strcmp(k, "metadata") == 0 || strcmp(k, "status") == 0)
			continue;
		if (!json_object_get(a, k))
			return true;
	}
	return false;
}

/* Copies every key of src missing from parent[key] (created on demand). */
void obj_fill_missing(json_t *parent, const char *key, const json_t *src)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)src, k, v)
		if (!json_object_get(json_object_get(parent, key), k))
			json_object_set(kb_json_object_at(parent, key), k, v);
}
