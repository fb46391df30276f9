/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ResourceQuota as kube-apiserver's ResourceQuota admission plugin and
 * kube-controller-manager's quota controller do it, for the quotas a tenant
 * creates in its namespaces: what an object takes (pods, compute requests and
 * limits, requests.<extended>, services.*, PVC storage, count/<resource> and
 * the legacy object counts), which quotas apply (the resources they track and
 * their scopes), the refusal words ("exceeded quota: q1, requested: pods=1,
 * used: pods=2, limited: pods=2"; "failed quota: q1: must specify limits.cpu
 * for: c") and status.used.
 *
 * DESIGN: usage is always recomputed from the store rather than trusted
 * from status.used (one loop thread, so admission sees every stored object).
 * An admitted write stores the new usage into status.used at once (as kube's
 * admission does) and admission.c's 1 s timer recomputes every quota when
 * the store moved (deletes, pods that terminated), as the controller does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "policies/policies.h"
#include "proxy/admission/admission.h"
#include "proxy/admission/quota.h"
#include "proxy/model/quantity.h"

#define MANAGER "resourcequota-controller"

/* The pod's effective requests or limits: containers and sidecars summed,
 * the largest init container step, overhead on top. */
static json_t *pod_list(const json_t *spec, bool requests)
{
	return qty_pod_resources(spec, requests, true);
}

/* kube's podComputeUsageHelper: quota names of requests and limits. */
static void compute_usage(json_t *out, const json_t *req, const json_t *lim)
{
	static const char *const native[] = {"cpu", "memory", "ephemeral-storage"};
	char key[300];
	qty_list_add_key(out, "pods", 1000);
	for (size_t i = 0; i < KB_ARRAY_SIZE(native); i++) {
		json_t *v = json_object_get(req, native[i]);
		if (v) {
			json_object_set(out, native[i], v);
			snprintf(key, sizeof(key), "requests.%s", native[i]);
			json_object_set(out, key, v);
		}
		if ((v = json_object_get(lim, native[i]))) {
			snprintf(key, sizeof(key), "limits.%s", native[i]);
			json_object_set(out, key, v);
		}
	}
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)req, k, v) {
		if (strncmp(k, "hugepages-", 10) == 0)
			json_object_set(out, k, v);
		if (strncmp(k, "hugepages-", 10) == 0 || qty_extended(k)) {
			snprintf(key, sizeof(key), "requests.%s", k);
			json_object_set(out, key, v);
		}
	}
}

/* kube's QuotaV1Pod inverted: terminated, or deleted and past its grace. */
static bool pod_terminal(const json_t *pod)
{
	const char *phase = obj_str(pod, "status.phase");
	if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return true;
	const char *del = obj_str(pod, "metadata.deletionTimestamp");
	json_t *grace = obj_get(pod, "metadata.deletionGracePeriodSeconds");
	time_t at;
	if (!del || !json_is_integer(grace) || kb_time_parse(del, &at) < 0)
		return false;
	return time(NULL) > at + (time_t)json_integer_value(grace);
}

static void pod_usage(const json_t *pod, json_t *out)
{
	if (pod_terminal(pod))
		return;
	const json_t *spec = json_object_get(pod, "spec");
	json_t *req = pod_list(spec, true), *lim = pod_list(spec, false);
	json_t *u = json_object();
	compute_usage(u, req, lim);
	qty_list_add(out, u, 1);
	json_decref(u);
	json_decref(req);
	json_decref(lim);
}

static void service_usage(const json_t *svc, json_t *out)
{
	const char *type = obj_str(svc, "spec.type");
	size_t ports = json_array_size(obj_get(svc, "spec.ports"));
	if (!type)
		return;
	if (strcmp(type, "NodePort") == 0)
		qty_list_add_key(out, "services.nodeports", 1000 * (int64_t)ports);
	if (strcmp(type, "LoadBalancer") == 0) {
		qty_list_add_key(out, "services.loadbalancers", 1000);
		if (!json_is_false(obj_get(svc, "spec.allocateLoadBalancerNodePorts")))
			qty_list_add_key(out, "services.nodeports", 1000 * (int64_t)ports);
	}
}

static void pvc_usage(const json_t *pvc, json_t *out)
{
	char key[400];
	int64_t m = 0;
	bool has = qty_parse(obj_get(pvc, "spec.resources.requests.storage"), &m) == 0;
	const char *sc = obj_str(pvc, "spec.storageClassName");
	if (has)
		qty_list_add_key(out, "requests.storage", m);
	if (sc && *sc) {
		snprintf(key, sizeof(key), "%s.storageclass.storage.k8s.io/persistentvolumeclaims",
			 sc);
		qty_list_add_key(out, key, 1000);
		snprintf(key, sizeof(key), "%s.storageclass.storage.k8s.io/requests.storage", sc);
		if (has)
			qty_list_add_key(out, key, m);
	}
}

static const char *const legacy_counts[] = {
    "services",      "secrets", "configmaps", "persistentvolumeclaims", "replicationcontrollers",
    "resourcequotas"};

static bool is_core(const struct proxy_resource *res, const char *plural)
{
	return res->group[0] == '\0' && strcmp(res->plural, plural) == 0;
}

json_t *quota_object_usage(const struct proxy_resource *res, const json_t *obj)
{
	json_t *out = json_object();
	char key[300];
	if (res->group[0])
		snprintf(key, sizeof(key), "count/%s.%s", res->plural, res->group);
	else
		snprintf(key, sizeof(key), "count/%s", res->plural);
	qty_list_add_key(out, key, 1000);
	for (size_t i = 0; i < KB_ARRAY_SIZE(legacy_counts); i++)
		if (is_core(res, legacy_counts[i]))
			qty_list_add_key(out, legacy_counts[i], 1000);
	if (is_core(res, "pods"))
		pod_usage(obj, out);
	else if (is_core(res, "services"))
		service_usage(obj, out);
	else if (is_core(res, "persistentvolumeclaims"))
		pvc_usage(obj, out);
	return out;
}

/* ---- which objects a quota tracks ---- */

static const struct proxy_resource *find_row(const char *group, const char *plural)
{
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *r = resource_at(i);
		if (r->stored && strcmp(r->group, group) == 0 && strcmp(r->plural, plural) == 0)
			return r;
	}
	return NULL;
}

/* The row whose objects a quota resource name counts (NULL: none served). */
static const struct proxy_resource *key_row(const char *key)
{
	if (strncmp(key, "count/", 6) == 0) {
		char plural[256];
		const char *dot = strchr(key + 6, '.');
		size_t n = dot ? (size_t)(dot - key - 6) : strlen(key + 6);
		if (n >= sizeof(plural))
			return NULL;
		memcpy(plural, key + 6, n);
		plural[n] = '\0';
		return find_row(dot ? dot + 1 : "", plural);
	}
	for (size_t i = 0; i < KB_ARRAY_SIZE(legacy_counts); i++)
		if (strcmp(key, legacy_counts[i]) == 0)
			return find_row("", key);
	if (strncmp(key, "services.", 9) == 0)
		return find_row("", "services");
	if (strcmp(key, "requests.storage") == 0 || strstr(key, ".storageclass.storage.k8s.io/"))
		return find_row("", "persistentvolumeclaims");
	return find_row("", "pods");
}

static bool tracks(const json_t *hard, const struct proxy_resource *res)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)hard, k, v) {
		const struct proxy_resource *r = key_row(k);
		if (r && strcmp(r->group, res->group) == 0 && strcmp(r->plural, res->plural) == 0)
			return true;
	}
	return false;
}

static bool pod_best_effort(const json_t *spec)
{
	static const char *const kinds[] = {"containers", "initContainers"};
	for (size_t k = 0; k < KB_ARRAY_SIZE(kinds); k++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, kinds[k]), i, c) {
			const json_t *res = json_object_get(c, "resources");
			const char *which[] = {"requests", "limits"};
			for (int w = 0; w < 2; w++) {
				json_t *l = json_object_get(res, which[w]);
				if (json_object_get(l, "cpu") || json_object_get(l, "memory"))
					return false;
			}
		}
	}
	return true;
}

static bool in_values(const json_t *values, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach (values, i, v)
		if (json_string_value(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

/* One scope selector requirement against a pod. */
static bool scope_match(const char *scope, const char *op, const json_t *values, const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec");
	bool has;
	if (strcmp(scope, "PriorityClass") == 0) {
		const char *pc = obj_str(pod, "spec.priorityClassName");
		pc = pc ? pc : "";
		if (strcmp(op, "In") == 0)
			return in_values(values, pc);
		if (strcmp(op, "NotIn") == 0)
			return !in_values(values, pc);
		has = *pc != '\0';
	} else if (strcmp(scope, "Terminating") == 0 || strcmp(scope, "NotTerminating") == 0) {
		json_t *ads = json_object_get(spec, "activeDeadlineSeconds");
		has = json_is_integer(ads) && json_integer_value(ads) >= 0;
		has = scope[0] == 'N' ? !has : has;
	} else if (strcmp(scope, "BestEffort") == 0 || strcmp(scope, "NotBestEffort") == 0) {
		has = pod_best_effort(spec);
		has = scope[0] == 'N' ? !has : has;
	} else {
		has = false; /* CrossNamespacePodAffinity and unknown scopes */
	}
	return strcmp(op, "DoesNotExist") == 0 ? !has : has;
}

static bool scopes_match(const json_t *quota, const struct proxy_resource *res, const json_t *obj)
{
	const json_t *scopes = obj_get(quota, "spec.scopes");
	const json_t *exprs = obj_get(quota, "spec.scopeSelector.matchExpressions");
	if (json_array_size(scopes) == 0 && json_array_size(exprs) == 0)
		return true;
	if (!is_core(res, "pods"))
		return false;
	size_t i;
	json_t *s;
	json_array_foreach (scopes, i, s)
		if (!json_string_value(s) ||
		    !scope_match(json_string_value(s), "Exists", NULL, obj))
			return false;
	json_array_foreach (exprs, i, s) {
		const char *scope = obj_str(s, "scopeName"), *op = obj_str(s, "operator");
		if (!scope || !op || !scope_match(scope, op, json_object_get(s, "values"), obj))
			return false;
	}
	return true;
}

bool quota_matches(const json_t *quota, const struct proxy_resource *res, const json_t *obj)
{
	return tracks(obj_get(quota, "spec.hard"), res) && scopes_match(quota, res, obj);
}

/* ---- refusals ---- */

static bool needs_explicit(const char *k)
{
	static const char *const set[] = {
	    "cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(set); i++)
		if (strcmp(k, set[i]) == 0)
			return true;
	return false;
}

/* Sorted, distinct names of the containers lacking `key`, comma-joined. */
static void missing_for(const json_t *spec, const char *key, struct kb_buf *b)
{
	static const char *const kinds[] = {"containers", "initContainers"};
	json_t *names = json_object();
	for (size_t k = 0; k < KB_ARRAY_SIZE(kinds); k++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, kinds[k]), i, c) {
			json_t *req = qty_container_list(c, true),
			       *lim = qty_container_list(c, false);
			json_t *u = json_object();
			compute_usage(u, req, lim);
			const char *n = json_string_value(json_object_get(c, "name"));
			if (!json_object_get(u, key))
				json_object_set_new(names, n ? n : "", json_true());
			json_decref(u);
			json_decref(req);
			json_decref(lim);
		}
	}
	size_t n = 0;
	const char **keys = kb_json_sorted_keys(names, &n);
	if (n && keys) {
		kb_buf_printf(b, "%s%s for: ", b->len ? "; " : "", key);
		for (size_t i = 0; i < n; i++)
			kb_buf_printf(b, "%s%s", i ? "," : "", keys[i]);
	}
	free(keys);
	json_decref(names);
}

int quota_pod_constraints(const json_t *hard, const json_t *pod, char *msg, size_t len)
{
	size_t n = 0;
	const char **keys = kb_json_sorted_keys(hard, &n);
	struct kb_buf b = {0};
	const json_t *spec = json_object_get(pod, "spec");
	for (size_t i = 0; keys && i < n; i++)
		if (needs_explicit(keys[i]))
			missing_for(spec, keys[i], &b);
	free(keys);
	int rc = 0;
	if (b.len) {
		snprintf(msg, len, "must specify %s", b.data);
		rc = -EACCES;
	}
	kb_buf_free(&b);
	return rc;
}

static void pretty(struct kb_buf *b, const char *k, int64_t v, const json_t *hard)
{
	char q[64];
	qty_format(v, qty_binary(json_object_get(hard, k)), q, sizeof(q));
	kb_buf_printf(b, "%s%s=%s", b->len ? "," : "", k, q);
}

int quota_check(const char *name, const json_t *hard, const json_t *used, const json_t *requested,
		char *msg, size_t len)
{
	size_t n = 0;
	const char **keys = kb_json_sorted_keys(requested, &n);
	struct kb_buf rq = {0}, us = {0}, lim = {0};
	for (size_t i = 0; keys && i < n; i++) {
		int64_t h;
		if (qty_parse(json_object_get(hard, keys[i]), &h) < 0)
			continue;
		int64_t r = qty_list_get(requested, keys[i]), u = qty_list_get(used, keys[i]);
		if (r <= 0 || u + r <= h)
			continue;
		pretty(&rq, keys[i], r, hard);
		pretty(&us, keys[i], u, hard);
		pretty(&lim, keys[i], h, hard);
	}
	free(keys);
	int rc = 0;
	if (rq.len) {
		snprintf(msg, len, "exceeded quota: %s, requested: %s, used: %s, limited: %s",
			 name ? name : "", rq.data, us.data, lim.data);
		rc = -EACCES;
	}
	kb_buf_free(&rq);
	kb_buf_free(&us);
	kb_buf_free(&lim);
	return rc;
}

json_t *quota_used_strings(const json_t *hard, const json_t *used)
{
	json_t *out = json_object();
	const char *k;
	json_t *v;
	char q[64];
	json_object_foreach ((json_t *)hard, k, v) {
		qty_format(qty_list_get(used, k), qty_binary(v), q, sizeof(q));
		json_object_set_new(out, k, json_string(q));
	}
	return out;
}

/* ---- with the store ---- */

/* kube-system/kubicle-policy, kept by admission.c from the tenant policy. */
static bool is_policy_quota(const json_t *q)
{
	const char *ns = obj_str(q, "metadata.namespace"), *name = obj_str(q, "metadata.name");
	return json_object_get(obj_get(q, "metadata.labels"), "kubicle.dev/policy") && ns && name &&
	       strcmp(ns, "kube-system") == 0 && strcmp(name, "kubicle-policy") == 0;
}

/* Objects of row res in ns (NULL: everywhere): a new array reference. */
static json_t *list_of(struct proxy *px, const struct proxy_resource *res, const char *ns)
{
	struct store_list_req lr = {.res = res->store_key, .ns = ns};
	struct store_list_result out = {0};
	if (rstore_list(px, res, &lr, &out) < 0)
		return json_array();
	free(out.next);
	return out.items;
}

json_t *quota_compute_used(struct proxy *px, const json_t *quota)
{
	const json_t *hard = obj_get(quota, "spec.hard");
	const char *ns = obj_str(quota, "metadata.namespace");
	const struct proxy_resource *rows[32];
	size_t nrows = 0;
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)hard, k, v) {
		const struct proxy_resource *r = key_row(k);
		bool seen = !r;
		for (size_t i = 0; i < nrows && !seen; i++)
			seen = rows[i] == r;
		if (!seen && nrows < KB_ARRAY_SIZE(rows))
			rows[nrows++] = r;
	}
	json_t *total = json_object();
	for (size_t i = 0; ns && i < nrows; i++) {
		json_t *items = list_of(px, rows[i], ns), *o;
		size_t j;
		json_array_foreach (items, j, o)
			if (scopes_match(quota, rows[i], o)) {
				json_t *u = quota_object_usage(rows[i], o);
				qty_list_add(total, u, 1);
				json_decref(u);
			}
		json_decref(items);
	}
	json_t *used = json_object();
	json_object_foreach ((json_t *)hard, k, v)
		json_object_set_new(used, k, json_integer(qty_list_get(total, k)));
	json_decref(total);
	return used;
}

/* Writes status {hard, used} of a stored quota (borrowed) when it changed. */
static void write_status(struct proxy *px, const json_t *q, const json_t *used)
{
	const json_t *hard = obj_get(q, "spec.hard");
	json_t *st = json_pack("{s:O, s:o}", "hard", hard ? hard : json_object(), "used",
			       quota_used_strings(hard, used));
	if (!st || json_equal(st, json_object_get(q, "status"))) {
		json_decref(st);
		return;
	}
	json_t *c = json_deep_copy(q);
	json_object_set_new(c, "status", st);
	int rc = px->client->update_status(px, "", "v1", "resourcequotas", c, MANAGER, NULL);
	if (rc < 0 && rc != -ESTALE)
		kb_warn("quota", "status of %s/%s: %s", obj_str(q, "metadata.namespace"),
			obj_str(q, "metadata.name"), strerror(-rc));
	json_decref(c);
}

/* requested: the positive part of delta for the resources of hard. */
static json_t *mask_positive(const json_t *delta, const json_t *hard)
{
	json_t *out = json_object();
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)delta, k, v)
		if (json_integer_value(v) > 0 && json_object_get(hard, k))
			json_object_set(out, k, v);
	return out;
}

/* One quota's decision; on success *used_out (new reference) is its usage
 * with the request added, or NULL when the request takes nothing from it. */
static int check_one(struct proxy *px, const json_t *q, const struct proxy_resource *res,
		     const json_t *obj, const json_t *delta, bool create, json_t **used_out,
		     char *msg, size_t len)
{
	const json_t *hard = obj_get(q, "spec.hard");
	const char *name = obj_str(q, "metadata.name");
	char why[2048];
	*used_out = NULL;
	if (create && is_core(res, "pods") &&
	    quota_pod_constraints(hard, obj, why, sizeof(why)) < 0) {
		snprintf(msg, len, "failed quota: %s: %s", name ? name : "", why);
		return -EACCES;
	}
	json_t *req = mask_positive(delta, hard);
	if (json_object_size(req) == 0) {
		json_decref(req);
		return 0;
	}
	json_t *used = quota_compute_used(px, q);
	int rc = quota_check(name, hard, used, req, msg, len);
	if (rc == 0) {
		qty_list_add(used, req, 1);
		*used_out = used;
		used = NULL;
	}
	json_decref(used);
	json_decref(req);
	return rc;
}

static json_t *delta_of(const struct proxy_resource *res, const json_t *obj, const json_t *old)
{
	json_t *d = quota_object_usage(res, obj);
	if (old) {
		json_t *o = quota_object_usage(res, old);
		qty_list_add(d, o, -1);
		json_decref(o);
	}
	return d;
}

int quota_admit(struct proxy *px, const struct proxy_resource *res, const json_t *obj,
		const json_t *old, bool dry_run, char *msg, size_t len)
{
	const char *ns = obj_str(obj, "metadata.namespace");
	const struct proxy_resource *rq = find_row("", "resourcequotas");
	if (!res->namespaced || !ns || !rq || (old && is_core(res, "pods")))
		return 0;
	/* No quota in the namespace, by the store's count of its rows (kept
	 * in memory, an open transaction's writes included: a quota made
	 * earlier in the same group commit counts, as kube's live lookup when
	 * its informer has none finds it: apiserver
	 * pkg/admission/plugin/resourcequota/resource_access.go GetQuotas):
	 * nothing to list. */
	size_t nquotas = 0;
	if (store_count(px->store, rq->store_key, ns, &nquotas) == 0 && nquotas == 0)
		return 0;
	json_t *quotas = list_of(px, rq, ns);
	if (json_array_size(quotas) == 0) {
		json_decref(quotas);
		return 0;
	}
	json_t *delta = delta_of(res, obj, old), *pending = json_array(), *q;
	size_t i;
	int rc = 0;
	json_array_foreach (quotas, i, q) {
		json_t *used = NULL;
		if (is_policy_quota(q) || !quota_matches(q, res, obj))
			continue;
		if ((rc = check_one(px, q, res, obj, delta, !old, &used, msg, len)) < 0)
			break;
		if (used)
			json_array_append_new(pending, json_pack("[O,o]", q, used));
	}
	json_t *p;
	json_array_foreach (pending, i, p)
		if (rc == 0 && !dry_run)
			write_status(px, json_array_get(p, 0), json_array_get(p, 1));
	json_decref(pending);
	json_decref(delta);
	json_decref(quotas);
	return rc;
}

void quota_prepare(struct proxy *px, json_t *quota, bool create)
{
	const json_t *hard = obj_get(quota, "spec.hard");
	json_t *status = json_object_get(quota, "status");
	if (create || !json_is_object(status)) {
		status = json_object();
		json_object_set_new(quota, "status", status);
	}
	json_object_set_new(status, "hard", hard ? json_deep_copy(hard) : json_object());
	const json_t *used = json_object_get(status, "used");
	bool same_keys = json_object_size(used) == json_object_size(hard);
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)hard, k, v)
		same_keys = same_keys && json_object_get(used, k);
	if (same_keys && !create)
		return;
	json_t *u = quota_compute_used(px, quota);
	const struct proxy_resource *rq = find_row("", "resourcequotas");
	if (rq && create && quota_matches(quota, rq, quota)) {
		json_t *self = quota_object_usage(rq, quota);
		qty_list_add(u, self, 1);
		json_decref(self);
	}
	json_object_set_new(status, "used", quota_used_strings(hard, u));
	json_decref(u);
}

void quota_refresh_all(struct proxy *px)
{
	const struct proxy_resource *rq = find_row("", "resourcequotas");
	if (!rq)
		return;
	json_t *quotas = list_of(px, rq, NULL), *q;
	size_t i;
	json_array_foreach (quotas, i, q) {
		if (is_policy_quota(q) || px->stopping)
			continue;
		json_t *used = quota_compute_used(px, q);
		write_status(px, q, used);
		json_decref(used);
	}
	json_decref(quotas);
}
