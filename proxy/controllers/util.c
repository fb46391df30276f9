/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the controllers: store reads, owner references and
 * kube's adopt/release rules, pod state, status conditions, IntOrString
 * scaling and the pod-template hash.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"
#include "lib/json.h"
#include "lib/util.h"
#include "proxy/model/selector.h"

json_t *ctrl_path(const json_t *obj, const char *path)
{
	return kb_json_path(obj, path);
}

const char *ctrl_name(const json_t *obj)
{
	return json_string_value(ctrl_path(obj, "metadata.name"));
}

const char *ctrl_ns(const json_t *obj)
{
	const char *ns = json_string_value(ctrl_path(obj, "metadata.namespace"));
	return ns ? ns : "";
}

const char *ctrl_uid(const json_t *obj)
{
	return json_string_value(ctrl_path(obj, "metadata.uid"));
}

int64_t ctrl_int(const json_t *obj, const char *path, int64_t dflt)
{
	json_t *v = ctrl_path(obj, path);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

json_t *ctrl_list(struct ctrl *c, const char *res, const char *ns)
{
	struct store_list_req lr = {.res = res, .ns = ns};
	struct store_list_result out = {0};
	if (store_list(c->st, &lr, &out) < 0)
		return json_array();
	free(out.next);
	return out.items;
}

/* ---- metadata alone, from stored text --------------------------------------------------- */

static int add_meta(const char *text, size_t len, void *arg)
{
	json_t *items = arg, *o = NULL;
	size_t off, end;
	if (kb_json_text_member(text, len, 0, "metadata", NULL, &off, &end) && text[off] == '{') {
		json_t *md = kb_json_loadb(text + off, end - off, 0, NULL);
		o = md ? json_pack("{s:o}", "metadata", md) : NULL;
	}
	if (!o)
		o = kb_json_loadb(text, len, 0, NULL);
	if (o)
		json_array_append_new(items, o);
	return 0;
}

json_t *ctrl_list_meta(struct ctrl *c, const char *res)
{
	struct store_list_req lr = {.res = res};
	json_t *items = json_array();
	int64_t rev;
	if (items && store_list_text(c->st, &lr, add_meta, items, &rev) < 0)
		json_array_clear(items);
	return items;
}

json_t *ctrl_get(struct ctrl *c, const char *res, const char *ns, const char *name)
{
	json_t *obj = NULL;
	if (store_get(c->st, res, ns ? ns : "", name, &obj) < 0)
		return NULL;
	return obj;
}

/* ---- owner references ------------------------------------------------------ */

json_t *ctrl_controller_ref(const json_t *obj)
{
	/* once: json_array_foreach evaluates its array at every step */
	const json_t *refs = ctrl_path(obj, "metadata.ownerReferences");
	size_t i;
	json_t *ref;
	json_array_foreach (refs, i, ref)
		if (json_is_true(json_object_get(ref, "controller")))
			return ref;
	return NULL;
}

json_t *ctrl_new_owner_ref(const json_t *owner, bool block)
{
	return json_pack("{s:O,s:O,s:s,s:s,s:b,s:b}", "apiVersion",
			 json_object_get(owner, "apiVersion"), "kind",
			 json_object_get(owner, "kind"), "name", ctrl_name(owner), "uid",
			 ctrl_uid(owner), "controller", 1, "blockOwnerDeletion", block);
}

static int set_owner(struct ctrl *c, const char *group, const char *version, const char *plural,
		     json_t *dep, const json_t *owner, const char *manager)
{
	json_t *upd = json_deep_copy(dep);
	json_t *m = json_object_get(upd, "metadata");
	json_t *refs = json_object_get(m, "ownerReferences");
	if (!json_is_array(refs)) {
		refs = json_array();
		json_object_set_new(m, "ownerReferences", refs);
	}
	if (owner) {
		json_array_append_new(refs, ctrl_new_owner_ref(owner, true));
	} else {
		for (size_t i = json_array_size(refs); i-- > 0;)
			if (json_is_true(json_object_get(json_array_get(refs, i), "controller")))
				json_array_remove(refs, i);
		if (json_array_size(refs) == 0)
			json_object_del(m, "ownerReferences");
	}
	int rc = proxy_object_update(c->px, group, version, plural, upd, manager, NULL);
	json_decref(upd);
	return rc;
}

json_t *ctrl_claim(struct ctrl *c, const char *res, const char *group, const char *version,
		   const char *plural, const json_t *owner, const json_t *selector,
		   const char *manager)
{
	json_t *all = ctrl_list(c, res, ctrl_ns(owner));
	json_t *mine = json_array();
	struct sel_label *sel = NULL;
	if (sel_label_from_object(selector, &sel, NULL, 0) < 0)
		sel = NULL;
	const char *uid = ctrl_uid(owner);
	bool owner_deleting = ctrl_path(owner, "metadata.deletionTimestamp") != NULL;
	size_t i;
	json_t *o;
	json_array_foreach (all, i, o) {
		json_t *ref = ctrl_controller_ref(o);
		json_t *labels = ctrl_path(o, "metadata.labels");
		bool match = sel && !sel_label_empty(sel) && sel_label_match(sel, labels);
		const char *ruid = ref ? json_string_value(json_object_get(ref, "uid")) : NULL;
		if (ruid && uid && strcmp(ruid, uid) == 0) {
			if (match || owner_deleting)
				json_array_append(mine, o);
			else
				set_owner(c, group, version, plural, o, NULL, manager);
		} else if (!ref && match && !owner_deleting &&
			   !ctrl_path(o, "metadata.deletionTimestamp")) {
			if (set_owner(c, group, version, plural, o, owner, manager) == 0) {
				json_t *fresh = ctrl_get(c, res, ctrl_ns(o), ctrl_name(o));
				if (fresh)
					json_array_append_new(mine, fresh);
			}
		}
	}
	sel_label_free(sel);
	json_decref(all);
	return mine;
}

/* ---- pods ------------------------------------------------------------------ */

const char *ctrl_pod_phase(const json_t *pod)
{
	const char *p = json_string_value(ctrl_path(pod, "status.phase"));
	return p ? p : "Pending";
}

bool ctrl_pod_active(const json_t *pod)
{
	const char *p = ctrl_pod_phase(pod);
	return strcmp(p, "Succeeded") != 0 && strcmp(p, "Failed") != 0 &&
	       !ctrl_path(pod, "metadata.deletionTimestamp");
}

bool ctrl_pod_ready(const json_t *pod)
{
	json_t *cond = ctrl_get_condition(json_object_get(pod, "status"), "Ready");
	const char *s = json_string_value(json_object_get(cond, "status"));
	return s && strcmp(s, "True") == 0 && ctrl_pod_active(pod);
}

bool ctrl_pod_available(const json_t *pod, int64_t min_ready, time_t now, double *wait)
{
	if (!ctrl_pod_ready(pod))
		return false;
	if (min_ready <= 0)
		return true;
	json_t *cond = ctrl_get_condition(json_object_get(pod, "status"), "Ready");
	time_t since = ctrl_time(json_string_value(json_object_get(cond, "lastTransitionTime")));
	if (since + min_ready <= now)
		return true;
	if (wait && (*wait <= 0 || *wait > (double)(since + min_ready - now)))
		*wait = (double)(since + min_ready - now);
	return false;
}

json_t *ctrl_pod_from_template(const json_t *tmpl, const json_t *owner, const char *name,
			       const char *generate_name)
{
	json_t *pod = json_pack("{s:s,s:s,s:{}}", "apiVersion", "v1", "kind", "Pod", "metadata");
	json_t *pod_spec = json_deep_copy(json_object_get(tmpl, "spec"));
	json_object_set_new(pod, "spec", pod_spec ? pod_spec : json_object());
	json_t *m = json_object_get(pod, "metadata");
	json_t *tm = json_object_get(tmpl, "metadata");
	const char *keys[] = {"labels", "annotations", "finalizers"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(tm, keys[i]);
		if (v)
			json_object_set_new(m, keys[i], json_deep_copy(v));
	}
	if (name)
		json_object_set_new(m, "name", json_string(name));
	else
		json_object_set_new(m, "generateName", json_string(generate_name));
	json_object_set_new(m, "namespace", json_string(ctrl_ns(owner)));
	json_object_set_new(m, "ownerReferences",
			    json_pack("[o]", ctrl_new_owner_ref(owner, true)));
	return pod;
}

/* ---- conditions and time ---------------------------------------------------- */

time_t ctrl_time(const char *s)
{
	time_t t = 0;
	if (!s || kb_time_parse(s, &t) < 0)
		return 0;
	return t;
}

void ctrl_now_str(char *buf, size_t len)
{
	kb_time_rfc3339(time(NULL), buf, len);
}

json_t *ctrl_get_condition(const json_t *status, const char *type)
{
	size_t i;
	json_t *cond;
	json_array_foreach (json_object_get(status, "conditions"), i, cond) {
		const char *t = json_string_value(json_object_get(cond, "type"));
		if (t && strcmp(t, type) == 0)
			return cond;
	}
	return NULL;
}

void ctrl_remove_condition(json_t *status, const char *type)
{
	json_t *conds = json_object_get(status, "conditions");
	for (size_t i = json_array_size(conds); i-- > 0;) {
		const char *t =
		    json_string_value(json_object_get(json_array_get(conds, i), "type"));
		if (t && strcmp(t, type) == 0)
			json_array_remove(conds, i);
	}
}

json_t *ctrl_set_condition(json_t *status, const char *type, const char *st, const char *reason,
			   const char *message, bool update_time)
{
	char now[40];
	ctrl_now_str(now, sizeof(now));
	json_t *conds = json_object_get(status, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(status, "conditions", conds);
	}
	json_t *cond = ctrl_get_condition(status, type);
	if (!cond) {
		cond = json_object();
		json_array_append_new(conds, cond);
	}
	const char *old = json_string_value(json_object_get(cond, "status"));
	const char *old_reason = json_string_value(json_object_get(cond, "reason"));
	if (!old || strcmp(old, st) != 0)
		json_object_set_new(cond, "lastTransitionTime", json_string(now));
	if (update_time &&
	    (!old || strcmp(old, st) != 0 || !old_reason || strcmp(old_reason, reason) != 0))
		json_object_set_new(cond, "lastUpdateTime", json_string(now));
	json_object_set_new(cond, "type", json_string(type));
	json_object_set_new(cond, "status", json_string(st));
	json_object_set_new(cond, "reason", json_string(reason));
	json_object_set_new(cond, "message", json_string(message));
	return cond;
}

int ctrl_write_status(struct ctrl *c, const char *group, const char *version, const char *plural,
		      json_t *obj, json_t *status, const char *manager)
{
	if (json_equal(json_object_get(obj, "status"), status))
		return 0;
	json_t *upd = json_pack("{s:{s:s,s:s,s:s?},s:O}", "metadata", "name", ctrl_name(obj),
				"namespace", ctrl_ns(obj), "resourceVersion",
				json_string_value(ctrl_path(obj, "metadata.resourceVersion")),
				"status", status);
	if (!upd)
		return -ENOMEM;
	int rc = proxy_object_update_status(c->px, group, version, plural, upd, manager, NULL);
	json_decref(upd);
	return rc;
}

/* ---- pure pieces ------------------------------------------------------------ */

int ctrl_scaled_value(const json_t *v, int total, bool round_up, int *out)
{
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		*out = (int)json_integer_value(v);
		return 0;
	}
	const char *s = json_string_value(v);
	if (!s)
		return -EINVAL;
	char *end;
	long n = strtol(s, &end, 10);
	if (end == s)
		return -EINVAL;
	if (*end == '\0') {
		*out = (int)n; /* a numeric string is taken as an int, as kube does */
		return 0;
	}
	if (strcmp(end, "%") != 0 || n < 0)
		return -EINVAL;
	long long p = (long long)n * total;
	*out = (int)(round_up ? (p + 99) / 100 : p / 100);
	return 0;
}

int ctrl_rolling_fenceposts(const json_t *spec, int *max_surge, int *max_unavailable)
{
	int replicas = (int)ctrl_int(spec, "replicas", 1);
	json_t *ru = ctrl_path(spec, "strategy.rollingUpdate");
	json_t *surge = json_object_get(ru, "maxSurge");
	json_t *unav = json_object_get(ru, "maxUnavailable");
	json_t *dflt = json_string("25%");
	int rc = ctrl_scaled_value(surge ? surge : dflt, replicas, true, max_surge);
	if (rc == 0)
		rc = ctrl_scaled_value(unav ? unav : dflt, replicas, false, max_unavailable);
	json_decref(dflt);
	if (rc < 0)
		return rc;
	if (*max_surge == 0 && *max_unavailable == 0)
		*max_unavailable = 1;
	return 0;
}

void ctrl_template_hash(const json_t *tmpl, int64_t collision_count, char *buf, size_t len)
{
	static const char safe[] = "bcdfghjklmnpqrstvwxz2456789";
	char *text = json_dumps(tmpl, JSON_SORT_KEYS | JSON_COMPACT);
	uint32_t h = 2166136261u;
	for (const char *p = text ? text : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	free(text);
	if (collision_count > 0) {
		unsigned char b[8] = {0};
		for (int i = 0; i < 4; i++)
			b[i] = (unsigned char)((uint32_t)collision_count >> (8 * i));
		for (int i = 0; i < 8; i++)
			h = (h ^ b[i]) * 16777619u;
	}
	char dec[16];
	snprintf(dec, sizeof(dec), "%u", h);
	size_t i;
	for (i = 0; dec[i] && i + 1 < len; i++)
		buf[i] = safe[(unsigned char)dec[i] % (sizeof(safe) - 1)];
	if (len)
		buf[i] = '\0';
}

void ctrl_admitted(void *arg, int rc, const json_t *obj, const char *message)
{
	struct ctrl *c = arg;
	json_t *ref = obj ? ctrl_controller_ref(obj) : NULL;
	const char *kind = json_string_value(json_object_get(ref, "kind"));
	const char *owner = json_string_value(json_object_get(ref, "name"));
	const char *ns = ctrl_ns(obj), *name = ctrl_name(obj);
	static const struct {
		const char *kind, *key, *group, *plural, *api, *manager;
	} kinds[] = {
	    {"ReplicaSet", "rs", "apps", "replicasets", "apps/v1", "replicaset-controller"},
	    {"ReplicationController", "rc", "", "replicationcontrollers", "v1",
	     "replication-controller"},
	    {"Job", "job", "batch", "jobs", "batch/v1", "job-controller"},
	    {"StatefulSet", "sts", "apps", "statefulsets", "apps/v1", "statefulset-controller"},
	    {"Deployment", "deploy", "apps", "deployments", "apps/v1", "deployment-controller"},
	    {"CronJob", "cj", "batch", "cronjobs", "batch/v1", "cronjob-controller"},
	};
	for (size_t i = 0; kind && owner && i < KB_ARRAY_SIZE(kinds); i++) {
		if (strcmp(kind, kinds[i].kind) != 0)
			continue;
		json_t *o = NULL;
		const char *m = message ? message : "", *api = kinds[i].api,
			   *mgr = kinds[i].manager;
		if (proxy_object_get(c->px, kinds[i].group, "v1", kinds[i].plural, ns, owner, &o) ==
		    0) {
			/* kube's words of each controller */
			if (strcmp(kind, "StatefulSet") == 0 && rc == 0)
				ctrl_event(c, o, api, kind, "Normal", "SuccessfulCreate", mgr,
					   "create Pod %s in StatefulSet %s successful", name,
					   owner);
			else if (strcmp(kind, "StatefulSet") == 0)
				ctrl_event(c, o, api, kind, "Warning", "FailedCreate", mgr,
					   "create Pod %s in StatefulSet %s failed error: %s", name,
					   owner, m);
			else if (strcmp(kind, "Deployment") == 0 && rc == 0 &&
				 json_integer_value(ctrl_path(obj, "spec.replicas")) > 0)
				ctrl_event(
				    c, o, api, kind, "Normal", "ScalingReplicaSet", mgr,
				    "Scaled up replica set %s from 0 to %lld", name,
				    (long long)json_integer_value(ctrl_path(obj, "spec.replicas")));
			else if (strcmp(kind, "Deployment") == 0 && rc < 0)
				ctrl_event(c, o, api, kind, "Warning", "FailedCreate", mgr,
					   "Failed to create new replica set \"%s\": %s", name, m);
			else if (strcmp(kind, "CronJob") == 0 && rc == 0)
				ctrl_event(c, o, api, kind, "Normal", "SuccessfulCreate", mgr,
					   "Created job %s", name);
			else if (strcmp(kind, "CronJob") == 0)
				ctrl_event(c, o, api, kind, "Warning", "FailedCreate", mgr,
					   "Error creating job: %s", m);
			else if (rc == 0 && strcmp(kind, "Deployment") != 0)
				ctrl_event(c, o, api, kind, "Normal", "SuccessfulCreate", mgr,
					   "Created pod: %s", name);
			else if (rc < 0)
				ctrl_event(c, o, api, kind, "Warning", "FailedCreate", mgr,
					   "Error creating: %s", m);
			json_decref(o);
		}
		/* a refusal is tried again later, as kube's rate-limited requeue */
		if (rc == 0)
			ctrl_enqueue(c, kinds[i].key, ns, owner);
		else
			ctrl_enqueue_after(c, kinds[i].key, ns, owner, 10);
	}
}

json_t *ctrl_pods_selected(struct ctrl *c, const char *ns, const struct sel_label *sel)
{
	json_t *out = json_array(), *all = ctrl_list(c, "/pods", ns), *pod;
	size_t i;
	json_array_foreach (all, i, pod)
		if (sel_label_match(sel, ctrl_path(pod, "metadata.labels")))
			json_array_append(out, pod);
	json_decref(all);
	return out;
}
