/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Policy admission in the API front: the tenant's policy (policies/) is
 * asked about every pod and pod template that is created or updated, by
 * API requests (obj_validate) and by in-process controllers
 * (api_internal.c), after validation and before anything is stored. A new
 * pod is also counted against the policy's quotas (across the tenant, from
 * the stored pods that have not terminated) and gets the forced node
 * selector and tolerations. A refusal is 403 Forbidden naming the rule:
 * `pods "train" is forbidden: policy untrusted: gpu-fraction is not allowed;
 * request whole nvidia.com/gpu`.
 *
 * The quota and its usage are shown to the tenant as the ResourceQuota
 * kube-system/kubicle-policy, kept by a 1 s timer that recomputes the usage
 * when the store's revision moved; tenant writes to it are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"
#include "policies/policies.h"
#include "proxy/proxy_impl.h"

#define QUOTA_NS   "kube-system"
#define QUOTA_NAME "kubicle-policy"

struct admission {
	uv_timer_t timer;
	struct proxy *px;
	int64_t seen_rev; /* store revision of the last refresh */
};

static bool is_core(const struct proxy_resource *res, const char *kind)
{
	return res->group[0] == '\0' && strcmp(res->kind, kind) == 0;
}

static bool is_policy_quota(const struct proxy_resource *res, const json_t *obj)
{
	const char *ns = obj_str(obj, "metadata.namespace");
	const char *name = obj_str(obj, "metadata.name");
	return is_core(res, "ResourceQuota") && ns && name && strcmp(ns, QUOTA_NS) == 0 &&
	       strcmp(name, QUOTA_NAME) == 0;
}

/* What the stored pods that have not terminated take. */
static int tenant_usage(struct proxy *px, struct policy_usage *u)
{
	const struct proxy_resource *pods = resource_find("", "v1", "pods");
	struct store_list_req lr = {.res = pods->store_key};
	struct store_list_result res = {0};
	int rc = store_list(px->store, &lr, &res);
	if (rc < 0)
		return rc;
	size_t i;
	json_t *pod;
	memset(u, 0, sizeof(*u));
	json_array_foreach (res.items, i, pod)
		policy_pod_usage(px->policy, pod, u);
	json_decref(res.items);
	free(res.next);
	return 0;
}

/* The quota check of a new pod. 0 or -EACCES with msg. */
static int check_quota(struct proxy *px, const json_t *pod, char *msg, size_t len)
{
	if (!policy_has_quota(px->policy))
		return 0;
	struct policy_usage used, req = {0};
	int rc = tenant_usage(px, &used);
	if (rc < 0) {
		snprintf(msg, len, "policy %s: cannot count quota usage: %s",
			 policy_name(px->policy), strerror(-rc));
		return -EACCES;
	}
	policy_pod_usage(px->policy, pod, &req);
	return policy_check_quota(px->policy, &used, &req, msg, len);
}

/* The shared decision: 0 (obj possibly mutated) or -EACCES with msg. */
static int admit(struct proxy *px, const struct proxy_resource *res, json_t *obj, const json_t *old,
		 char *msg, size_t len)
{
	static const char *const groups[] = {"", "apps", "batch"};
	bool builtin = false;
	for (size_t i = 0; i < KB_ARRAY_SIZE(groups); i++)
		builtin |= strcmp(res->group, groups[i]) == 0 && !res->crd;
	if (!builtin)
		return 0;
	int rc = policy_admit(px->policy, res->kind, obj, old, msg, len);
	if (rc < 0 || !is_core(res, "Pod") || old)
		return rc;
	if ((rc = check_quota(px, obj, msg, len)) < 0)
		return rc;
	return policy_mutate_pod(px->policy, obj) < 0 ? -ENOMEM : 0;
}

static void reply_forbidden(struct req *r, const char *name, const char *why)
{
	char qn[300], msg[4096];
	resource_qualified(r->res, qn, sizeof(qn));
	snprintf(msg, sizeof(msg), "%s \"%s\" is forbidden: %s", qn, name ? name : "", why);
	json_t *d = json_object();
	if (name)
		json_object_set_new(d, "name", json_string(name));
	if (r->res->group[0])
		json_object_set_new(d, "group", json_string(r->res->group));
	json_object_set_new(d, "kind", json_string(r->res->plural));
	reply_status(r, 403, "Forbidden", msg, d);
}

int admission_check(struct req *r, json_t *obj, const json_t *old)
{
	struct proxy *px = r->px;
	char msg[4096] = "";
	if (!px->policy)
		return 0;
	if (is_policy_quota(r->res, obj)) {
		snprintf(msg, sizeof(msg), "policy %s: the policy quota is read-only",
			 policy_name(px->policy));
		reply_forbidden(r, obj_str(obj, "metadata.name"), msg);
		return -EACCES;
	}
	int rc = admit(px, r->res, obj, old, msg, sizeof(msg));
	if (rc == -EACCES)
		reply_forbidden(r, obj_str(obj, "metadata.name"), msg);
	else if (rc < 0)
		reply_errno(r, rc, obj_str(obj, "metadata.name"));
	return rc;
}

int admission_internal(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		       const json_t *old)
{
	char msg[4096] = "";
	if (!px->policy)
		return 0;
	int rc = admit(px, res, obj, old, msg, sizeof(msg));
	if (rc == -EACCES)
		kb_warn("admission", "%s \"%s\" refused: %s", res->plural,
			obj_str(obj, "metadata.name") ? obj_str(obj, "metadata.name") : "", msg);
	return rc;
}

/* ---- the kubicle-policy ResourceQuota ---- */

static json_t *quota_object(struct proxy *px, const struct policy_usage *u)
{
	json_t *hard = policy_quota_hard(px->policy);
	json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:O}, s:{s:O, s:o}}",
			      "apiVersion", "v1", "kind", "ResourceQuota", "metadata", "name",
			      QUOTA_NAME, "namespace", QUOTA_NS, "labels", "kubicle.dev/policy",
			      policy_name(px->policy), "spec", "hard", hard, "status", "hard", hard,
			      "used", policy_quota_used(px->policy, u));
	json_decref(hard);
	return o;
}

static void refresh_quota(struct proxy *px)
{
	struct policy_usage u;
	json_t *want = NULL, *have = NULL;
	if (tenant_usage(px, &u) < 0 || !(want = quota_object(px, &u)))
		goto out;
	int rc = proxy_object_get(px, "", "v1", "resourcequotas", QUOTA_NS, QUOTA_NAME, &have);
	if (rc == -ENOENT) {
		json_t *c = json_deep_copy(want);
		rc = c ? proxy_object_create(px, "", "v1", "resourcequotas", c, "kubicle-policy",
					     &have)
		       : -ENOMEM;
		json_decref(c);
	}
	if (rc < 0 || !have)
		goto out;
	if (!json_equal(json_object_get(have, "spec"), json_object_get(want, "spec"))) {
		json_object_set(have, "spec", json_object_get(want, "spec"));
		json_t *upd = NULL;
		if (proxy_object_update(px, "", "v1", "resourcequotas", have, "kubicle-policy",
					&upd) < 0)
			goto out;
		json_decref(have);
		have = upd;
	}
	if (!json_equal(json_object_get(have, "status"), json_object_get(want, "status"))) {
		json_object_set(have, "status", json_object_get(want, "status"));
		proxy_object_update_status(px, "", "v1", "resourcequotas", have, "kubicle-policy",
					   NULL);
	}
out:
	json_decref(want);
	json_decref(have);
}

static void on_timer(uv_timer_t *t)
{
	struct admission *a = kb_container_of(t, struct admission, timer);
	int64_t rev = store_rev(a->px->store);
	if (rev == a->seen_rev || a->px->stopping)
		return;
	refresh_quota(a->px);
	a->seen_rev = store_rev(a->px->store);
}

static void on_closed(uv_handle_t *h)
{
	free(kb_container_of((uv_timer_t *)h, struct admission, timer));
}

void proxy_set_policy(proxy_t *px, const policy_t *policy)
{
	if (px->admission) {
		uv_close((uv_handle_t *)&px->admission->timer, on_closed);
		px->admission = NULL;
	}
	px->policy = policy;
	if (!policy || !policy_has_quota(policy))
		return;
	struct admission *a = calloc(1, sizeof(*a));
	if (!a) {
		kb_err("admission", "no memory for the policy quota timer");
		return;
	}
	a->px = px;
	a->seen_rev = -1;
	uv_timer_init(px->loop, &a->timer);
	uv_timer_start(&a->timer, on_timer, 0, 1000);
	px->admission = a;
}
