/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Authorization: kube-apiserver's chain for this tenant. Members of
 * system:masters are always allowed (the privileged-group authorizer);
 * everyone else is judged by RBAC over the tenant's Roles, ClusterRoles,
 * RoleBindings and ClusterRoleBindings. Denials are 403 Forbidden with
 * kube's messages.
 *
 * DESIGN: the RBAC index (proxy/auth/rbac.h) is loaded once at start-up and then
 * kept current by four store watches (one per RBAC resource), so a change
 * takes effect on the next request. ClusterRole aggregation
 * (aggregationRule.clusterRoleSelectors) runs on the loop before the next
 * request after any ClusterRole changed, writing the union of the selected
 * roles' rules into each aggregated role (as kube's clusterrole-aggregation
 * controller does). Writes to RBAC objects pass authz_admit: a user may only
 * grant what it holds, unless it has `escalate` (roles) or `bind` (bindings).
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/http.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/auth/auth.h"
#include "proxy/auth/rbac.h"
#include "proxy/model/selector.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"

static const char *const rbac_plurals[4] = {"roles", "clusterroles", "rolebindings",
					    "clusterrolebindings"};

struct authz;

struct authz_watch {
	struct authz *az;
	enum rbac_kind kind;
	store_watch_t *w;
};

struct authz {
	struct proxy *px;
	rbac_index_t *ix;
	struct authz_watch w[4];
	json_t *croles; /* name -> ClusterRole (borrowed copies), for aggregation */
	bool agg_pending;
};

/* ---- attributes of a request ------------------------------------------- */

struct req_groups {
	const char *v[17];
	size_t n;
};

static void groups_of(const struct req *r, struct req_groups *g)
{
	g->n = 0;
	for (int i = 0; i < r->ngroups && g->n < KB_ARRAY_SIZE(g->v); i++)
		g->v[g->n++] = r->groups[i];
}

static bool is_master(const char *const *groups, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(groups[i], "system:masters") == 0)
			return true;
	return false;
}

/* "metadata.name=x" as the only field selector term names the object, as
 * kube's RequestInfo does for lists and watches. */
static const char *selector_name(const struct req *r)
{
	const char *fs = r->q.field_selector;
	static const char *const pfx[] = {"metadata.name=", "metadata.name=="};
	if (!fs || strchr(fs, ','))
		return NULL;
	for (int i = 1; i >= 0; i--)
		if (kb_str_has_prefix(fs, pfx[i]) && fs[strlen(pfx[i])])
			return fs + strlen(pfx[i]);
	return NULL;
}

static void attrs_of(const struct req *r, const struct req_groups *g, struct rbac_attrs *a)
{
	memset(a, 0, sizeof(*a));
	a->user = r->user;
	a->groups = g->v;
	a->ngroups = g->n;
	a->verb = r->verb ? r->verb : "get";
	a->resource_request = r->res != NULL;
	if (!a->resource_request) {
		a->path = r->http->path;
		return;
	}
	a->api_group = r->group ? r->group : "";
	a->resource = r->plural;
	a->subresource = r->sub;
	a->ns = r->ns;
	a->name = r->name;
	if (!a->name && (strcmp(a->verb, "list") == 0 || strcmp(a->verb, "watch") == 0))
		a->name = selector_name(r);
	/* a namespace is in itself: /api/v1/namespaces/x has namespace x */
	if (!r->group[0] && strcmp(r->plural, "namespaces") == 0 && r->name)
		a->ns = r->name;
}

bool authz_check(struct proxy *px, const struct rbac_attrs *a, char *why, size_t len)
{
	if (why && len)
		why[0] = '\0';
	if (is_master(a->groups, a->ngroups))
		return true;
	if (!px->authz)
		return false;
	return rbac_allowed(px->authz->ix, a, why, len);
}

json_t *authz_rules(struct proxy *px, const char *user, const char *const *groups, size_t ngroups,
		    const char *ns)
{
	if (!px->authz)
		return json_array();
	return rbac_rules_for(px->authz->ix, user, groups, ngroups, ns);
}

/* kube's responsewriters.forbiddenMessage + errors.NewForbidden. */
static void reply_forbidden(struct req *r, const struct rbac_attrs *a)
{
	char msg[2048], what[400], qn[300];
	if (!a->resource_request) {
		snprintf(msg, sizeof(msg), "forbidden: User \"%s\" cannot %s path \"%s\"", a->user,
			 a->verb, a->path);
		reply_status(r, 403, "Forbidden", msg, json_object());
		return;
	}
	snprintf(what, sizeof(what), "%s%s%s", a->resource, a->subresource ? "/" : "",
		 a->subresource ? a->subresource : "");
	char scope[300];
	if (a->ns && *a->ns)
		snprintf(scope, sizeof(scope), "in the namespace \"%s\"", a->ns);
	else
		snprintf(scope, sizeof(scope), "at the cluster scope");
	reply_resource_name(r->res, qn, sizeof(qn));
	char name[300] = "";
	if (r->name)
		snprintf(name, sizeof(name), " \"%s\"", r->name);
	snprintf(msg, sizeof(msg),
		 "%s%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" %s",
		 qn, name, a->user, a->verb, what, a->api_group, scope);
	json_t *d = json_object();
	if (r->name)
		json_object_set_new(d, "name", json_string(r->name));
	if (r->res->group[0])
		json_object_set_new(d, "group", json_string(r->res->group));
	json_object_set_new(d, "kind", json_string(r->res->plural));
	reply_status(r, 403, "Forbidden", msg, d);
}

static void aggregate(struct authz *az);

int authz_authorize(struct req *r)
{
	if (auth_impersonate(r) < 0)
		return -EACCES;
	struct req_groups g;
	struct rbac_attrs a;
	groups_of(r, &g);
	/* kube's authorization filter notes its decision in the audit event;
	 * system:masters is allowed by the privileged-group authorizer, which
	 * gives no reason */
	if (is_master(g.v, g.n)) {
		audit_authz(r, true, "");
		return 0;
	}
	if (r->px->authz && r->px->authz->agg_pending)
		aggregate(r->px->authz);
	attrs_of(r, &g, &a);
	char why[1024];
	bool ok = authz_check(r->px, &a, why, sizeof(why));
	if (ok && a.resource_request && req_is_connect(r) && strcmp(a.verb, "get") == 0 &&
	    kb_http_req_upgrade(r->http)) {
		/* A WebSocket upgrade is a GET, yet it starts a process as SPDY's
		 * POST does: it also needs create, as kube's
		 * AuthorizePodWebsocketUpgradeCreatePermission has it (on by
		 * default from 1.35). */
		a.verb = "create";
		ok = authz_check(r->px, &a, why, sizeof(why));
	}
	audit_authz(r, ok, why);
	if (ok)
		return 0;
	reply_forbidden(r, &a);
	return -EACCES;
}

/* ---- escalation prevention --------------------------------------------- */

/* Go's %q of a []string: ["a" "b"]. */
static void groups_quoted(const struct req_groups *g, struct kb_buf *b)
{
	kb_buf_puts(b, "[");
	for (size_t i = 0; i < g->n; i++)
		kb_buf_printf(b, "%s\"%s\"", i ? " " : "", g->v[i]);
	kb_buf_puts(b, "]");
}

/* rbacv1helpers.CompactString of one rule, quoted lists. */
static void rule_compact(const json_t *rule, struct kb_buf *b)
{
	static const char *const fields[][2] = {
	    {"apiGroups", "APIGroups"},
	    {"resources", "Resources"},
	    {"resourceNames", "ResourceNames"},
	    {"nonResourceURLs", "NonResourceURLs"},
	    {"verbs", "Verbs"},
	};
	bool first = true;
	kb_buf_puts(b, "{");
	for (size_t f = 0; f < KB_ARRAY_SIZE(fields); f++) {
		const json_t *arr = json_object_get(rule, fields[f][0]);
		if (!json_array_size(arr))
			continue;
		kb_buf_printf(b, "%s%s:[", first ? "" : ", ", fields[f][1]);
		first = false;
		size_t i;
		json_t *v;
		json_array_foreach (arr, i, v)
			kb_buf_printf(b, "%s\"%s\"", i ? " " : "", json_string_value(v));
		kb_buf_puts(b, "]");
	}
	kb_buf_puts(b, "}");
}

static void reply_escalation(struct req *r, const char *name, const struct req_groups *g,
			     const json_t *missing, const char *text)
{
	struct kb_buf b = {0};
	char qn[300];
	reply_resource_name(r->res, qn, sizeof(qn));
	kb_buf_printf(&b, "%s \"%s\" is forbidden: ", qn, name ? name : "");
	if (text) {
		kb_buf_puts(&b, text);
	} else {
		kb_buf_printf(&b, "user \"%s\" (groups=", r->user);
		groups_quoted(g, &b);
		kb_buf_puts(&b, ") is attempting to grant RBAC permissions not currently held:");
		size_t i;
		json_t *m;
		json_array_foreach (missing, i, m) {
			kb_buf_puts(&b, "\n");
			rule_compact(m, &b);
		}
	}
	json_t *d = json_pack("{s:s,s:s,s:s}", "name", name ? name : "", "group", RBAC_GROUP,
			      "kind", r->res->plural);
	reply_status(r, 403, "Forbidden", b.data, d);
	kb_buf_free(&b);
}

/* May the requester use `verb` (escalate, bind) on an RBAC object? */
static bool may(struct req *r, const struct req_groups *g, const char *verb, const char *plural,
		const char *ns, const char *name)
{
	struct rbac_attrs a = {.user = r->user,
			       .groups = g->v,
			       .ngroups = g->n,
			       .verb = verb,
			       .resource_request = true,
			       .api_group = RBAC_GROUP,
			       .resource = plural,
			       .ns = ns,
			       .name = name};
	return authz_check(r->px, &a, NULL, 0);
}

/* Checks the servant rules against what the requester holds in ns. */
static int confirm_no_escalation(struct req *r, const struct req_groups *g, const char *ns,
				 const json_t *servant, const char *name)
{
	json_t *owner = authz_rules(r->px, r->user, g->v, g->n, ns);
	json_t *missing = NULL;
	bool ok = rbac_covers(owner, servant, &missing);
	if (!ok)
		reply_escalation(r, name, g, missing, NULL);
	json_decref(missing);
	json_decref(owner);
	return ok ? 0 : -EACCES;
}

static int admit_role(struct req *r, const struct req_groups *g, const json_t *obj,
		      const json_t *old)
{
	const char *name = obj_str(obj, "metadata.name");
	bool cluster = strcmp(r->res->plural, "clusterroles") == 0;
	const char *ns = cluster ? "" : r->ns;
	if (may(r, g, "escalate", r->res->plural, ns, name))
		return 0;
	json_t *rules = json_object_get(obj, "rules");
	json_t *empty = json_array();
	int rc = confirm_no_escalation(r, g, ns, rules ? rules : empty, name);
	json_decref(empty);
	if (rc < 0 || !cluster || !json_object_get(obj, "aggregationRule"))
		return rc;
	if (old && json_equal(json_object_get(obj, "aggregationRule"),
			      json_object_get(old, "aggregationRule")))
		return 0;
	json_t *full =
	    json_pack("[{s:[s],s:[s],s:[s]},{s:[s],s:[s]}]", "apiGroups", "*", "resources", "*",
		      "verbs", "*", "nonResourceURLs", "*", "verbs", "*");
	json_t *owner = authz_rules(r->px, r->user, g->v, g->n, "");
	bool ok = rbac_covers(owner, full, NULL);
	json_decref(owner);
	json_decref(full);
	if (ok)
		return 0;
	reply_escalation(r, name, g, NULL,
			 "must have cluster-admin privileges to use the aggregationRule");
	return -EACCES;
}

/* Whether obj and old differ only in metadata.ownerReferences and
 * metadata.finalizers (kube: pkg/registry/rbac/helpers.go
 * IsOnlyMutatingGCFields, which also ignores what the store sets). */
static bool only_gc_fields_differ(const json_t *obj, const json_t *old)
{
	static const char *const ignored[] = {
	    "ownerReferences",   "finalizers", "resourceVersion", "managedFields", "generation",
	    "creationTimestamp", "uid"};
	json_t *a = json_deep_copy(obj), *b = json_deep_copy(old);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
		json_object_del(json_object_get(a, "metadata"), ignored[i]);
		json_object_del(json_object_get(b, "metadata"), ignored[i]);
	}
	bool same = json_equal(a, b);
	json_decref(a);
	json_decref(b);
	return same;
}

static int admit_binding(struct req *r, const struct req_groups *g, const json_t *obj,
			 const json_t *old)
{
	const char *name = obj_str(obj, "metadata.name");
	json_t *ref = json_object_get(obj, "roleRef");
	if (old && !json_equal(ref, json_object_get(old, "roleRef"))) {
		reply_invalid(r, r->res->kind, name,
			      json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueInvalid", "message",
					"Invalid value: \"object\": cannot change roleRef", "field",
					"roleRef"));
		return -EINVAL;
	}
	const char *kind = json_string_value(json_object_get(ref, "kind"));
	const char *rname = json_string_value(json_object_get(ref, "name"));
	bool cluster_ref = kind && strcmp(kind, "ClusterRole") == 0;
	const char *ns = strcmp(r->res->plural, "rolebindings") == 0 ? r->ns : "";
	if (!kind || !rname || !(cluster_ref || strcmp(kind, "Role") == 0)) {
		reply_invalid(
		    r, r->res->kind, name,
		    json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueNotSupported", "message",
			      "Unsupported value: roleRef.kind must be Role or ClusterRole",
			      "field", "roleRef.kind"));
		return -EINVAL;
	}
	/* An update that only moves what the garbage collector writes is let
	 * through (kube: policybased/storage.go Update, IsOnlyMutatingGCFields). */
	if (old && only_gc_fields_differ(obj, old))
		return 0;
	if (may(r, g, "bind", cluster_ref ? "clusterroles" : "roles", ns, rname))
		return 0;
	/* Without `bind`, the caller must hold the role's rules; a role that
	 * does not exist is an error, not an empty set (kube's
	 * GetRoleReferenceRules returns the role getter's NotFound), so a
	 * binding cannot be written now for rules a role gets later. */
	const json_t *rules =
	    r->px->authz ? rbac_role_rules(r->px->authz->ix, cluster_ref, ns, rname) : NULL;
	if (!rules) {
		json_t *details = json_pack("{s:s,s:s,s:s}", "name", rname, "group", RBAC_GROUP,
					    "kind", cluster_ref ? "clusterroles" : "roles");
		char msg[600];
		snprintf(msg, sizeof(msg), "%s.%s \"%s\" not found",
			 cluster_ref ? "clusterroles" : "roles", RBAC_GROUP, rname);
		reply_status(r, 404, "NotFound", msg, details);
		return -ENOENT;
	}
	return confirm_no_escalation(r, g, ns, rules, name);
}

int authz_admit(struct req *r, const json_t *obj, const json_t *old)
{
	if (!r->res || strcmp(r->res->group, RBAC_GROUP) != 0 || r->sub)
		return 0;
	struct req_groups g;
	groups_of(r, &g);
	bool binding = kb_str_has_suffix(r->res->plural, "bindings");
	if (binding && old) {
		/* roleRef is immutable for everyone */
		json_t *ref = json_object_get(obj, "roleRef");
		if (!json_equal(ref, json_object_get(old, "roleRef")))
			return admit_binding(r, &g, obj, old);
	}
	if (is_master(g.v, g.n))
		return 0;
	return binding ? admit_binding(r, &g, obj, old) : admit_role(r, &g, obj, old);
}

/* ---- ClusterRole aggregation -------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void add_rules_of(json_t *out, const json_t *role)
{
	size_t i;
	json_t *rule;
	json_array_foreach (json_object_get(role, "rules"), i, rule) {
		bool have = false;
		size_t k;
		json_t *x;
		json_array_foreach (out, k, x)
			if (json_equal(x, rule))
				have = true;
		if (!have)
			json_array_append(out, rule);
	}
}

/* The union of the rules of the ClusterRoles selected by `agg`. */
static json_t *aggregated_rules(struct authz *az, const char *self, const json_t *agg,
				const char **names, size_t n)
{
	json_t *out = json_array();
	size_t i;
	json_t *ls;
	json_array_foreach (json_object_get(agg, "clusterRoleSelectors"), i, ls) {
		struct sel_label *sel = NULL;
		if (sel_label_from_object(ls, &sel, NULL, 0) < 0)
			continue;
		for (size_t k = 0; k < n; k++) {
			if (strcmp(names[k], self) == 0)
				continue;
			const json_t *o = json_object_get(az->croles, names[k]);
			if (sel_label_match(
				sel, json_object_get(json_object_get(o, "metadata"), "labels")))
				add_rules_of(out, o);
		}
		sel_label_free(sel);
	}
	return out;
}

/* true when the role's rules were rewritten */
static bool aggregate_one(struct authz *az, const char *name, const char **names, size_t n)
{
	json_t *o = json_object_get(az->croles, name);
	json_t *agg = json_object_get(o, "aggregationRule");
	if (!json_is_object(agg))
		return false;
	json_t *rules = aggregated_rules(az, name, agg, names, n);
	json_t *have = json_object_get(o, "rules");
	if (json_equal(rules, have ? have : json_array())) {
		json_decref(rules);
		return false;
	}
	json_t *upd = json_deep_copy(o);
	json_object_set_new(upd, "rules", rules);
	const struct proxy_resource *res = resource_find(RBAC_GROUP, "v1", "clusterroles");
	int rc = store_update(az->px->store, res->store_key, "", name, upd, 0, NULL);
	if (rc < 0)
		kb_warn("authz", "aggregating clusterrole %s: %d", name, rc);
	else /* its watch event comes at the commit; the next pass reads it now */
		json_object_set(az->croles, name, upd);
	json_decref(upd);
	return rc == 0;
}

/* One pass over the roles in name order; true when one was rewritten. */
static bool aggregate_pass(struct authz *az)
{
	bool changed = false;
	size_t n = json_object_size(az->croles), i = 0;
	const char **names = calloc(n ? n : 1, sizeof(*names));
	const char *k;
	json_t *v;
	if (!names)
		return false;
	json_object_foreach (az->croles, k, v)
		names[i++] = k;
	qsort(names, n, sizeof(*names), cmp_str);
	/* copies: an update re-enters the watch callback and changes croles */
	char **copy = calloc(n ? n : 1, sizeof(*copy));
	for (i = 0; copy && i < n; i++)
		copy[i] = strdup(names[i]);
	free(names);
	if (!copy)
		return false;
	for (i = 0; i < n; i++) {
		size_t m = json_object_size(az->croles), j = 0;
		const char **cur = calloc(m ? m : 1, sizeof(*cur));
		if (!cur)
			break;
		json_object_foreach (az->croles, k, v)
			cur[j++] = k;
		qsort(cur, m, sizeof(*cur), cmp_str);
		if (copy[i] && json_object_get(az->croles, copy[i]) &&
		    aggregate_one(az, copy[i], cur, m))
			changed = true;
		free(cur);
	}
	for (i = 0; i < n; i++)
		free(copy[i]);
	free(copy);
	return changed;
}

/*
 * Aggregates until nothing changes. A role can aggregate another
 * aggregated role (admin takes edit's rules, edit takes view's): kube's
 * ClusterRoleAggregation controller (pkg/controller/clusterroleaggregation,
 * syncClusterRole) requeues a role when one it selects changes, until the
 * rules settle. One pass in name order left admin without edit's rules
 * until the next request, and every restart rewrote admin and edit (two
 * writes and a sync on a start that should write nothing). Rules only
 * grow within a pass, so this settles; the bound is a guard.
 */
#define AGG_MAX_PASSES 16

static void aggregate(struct authz *az)
{
	for (int pass = 0; pass < AGG_MAX_PASSES; pass++) {
		az->agg_pending = false;
		if (!aggregate_pass(az))
			break;
	}
}

/* ---- the index, from the store ------------------------------------------ */

static void on_event(const struct store_event *ev, void *arg)
{
	struct authz_watch *w = arg;
	struct authz *az = w->az;
	if (ev->type == STORE_DELETED)
		rbac_index_del(az->ix, w->kind, ev->ns, ev->name);
	else if (rbac_index_put(az->ix, w->kind, ev->obj) < 0)
		kb_err("authz", "cannot index %s %s/%s", rbac_plurals[w->kind], ev->ns, ev->name);
	if (w->kind != RBAC_CLUSTERROLE)
		return;
	if (ev->type == STORE_DELETED)
		json_object_del(az->croles, ev->name);
	else
		json_object_set_new(az->croles, ev->name, json_deep_copy(ev->obj));
	az->agg_pending = true;
}

static int cmp_made(const void *a, const void *b)
{
	const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
	int c =
	    strcmp(obj_str(x, "metadata.namespace") ?: "", obj_str(y, "metadata.namespace") ?: "");
	return c ? c : strcmp(obj_str(x, "metadata.name") ?: "", obj_str(y, "metadata.name") ?: "");
}

/* The objects of res's kind in `made` (borrowed), in the store's key order
 * (namespace, name), as a list would give them: a new array. */
static json_t *made_of(const json_t *made, const struct proxy_resource *res)
{
	const json_t **v = calloc(json_array_size(made) + 1, sizeof(*v));
	json_t *sorted = v ? json_array() : NULL;
	size_t i, n = 0;
	json_t *o;
	json_array_foreach (made, i, o)
		if (v &&
		    strcmp(json_string_value(json_object_get(o, "kind")) ?: "", res->kind) == 0)
			v[n++] = o;
	if (v)
		qsort(v, n, sizeof(*v), cmp_made);
	for (i = 0; sorted && i < n; i++)
		json_array_append(sorted, (json_t *)v[i]);
	free(v);
	return sorted;
}

/* Indexes and watches one kind. `made` (borrowed, may be NULL): on a store
 * that was empty, every default the start created, which are then all there
 * is (no list: its parse of what was just written was 1.9 M instructions
 * of a first start). `crbs` (may be NULL) gets the ClusterRoleBindings by
 * name. */
static int load_kind(struct authz *az, enum rbac_kind kind, const json_t *made, json_t *crbs)
{
	const struct proxy_resource *res = resource_find(RBAC_GROUP, "v1", rbac_plurals[kind]);
	struct store_list_req lr = {.res = res->store_key};
	struct store_list_result out = {0};
	int rc = 0;
	if (made) {
		out.items = made_of(made, res);
		out.rev = store_rev(az->px->store);
		rc = out.items ? 0 : -ENOMEM;
	} else {
		rc = store_list(az->px->store, &lr, &out);
	}
	if (rc < 0)
		return rc;
	size_t i;
	json_t *o;
	json_array_foreach (out.items, i, o) {
		rbac_index_put(az->ix, kind, o);
		if (kind == RBAC_CLUSTERROLE)
			json_object_set(az->croles, obj_str(o, "metadata.name"), o);
		else if (kind == RBAC_CLUSTERROLEBINDING && crbs)
			json_object_set(crbs, obj_str(o, "metadata.name") ?: "", o);
	}
	json_decref(out.items);
	free(out.next);
	az->w[kind].az = az;
	az->w[kind].kind = kind;
	return store_watch(az->px->store, res->store_key, NULL, out.rev, on_event, &az->w[kind],
			   &az->w[kind].w);
}

/*
 * The default ClusterRoles aggregated among themselves, in place, before
 * the first of them is created: a first start then stores admin, edit and
 * view with the rules aggregate() would give them (nothing else is stored
 * yet) instead of storing them empty and updating each again (3 M
 * instructions and a larger first commit). Any role stored later is
 * aggregated as before.
 */
static void preaggregate(json_t *objs)
{
	struct authz tmp = {.croles = json_object()};
	size_t i, n, k = 0;
	json_t *o;
	const char *key;
	json_array_foreach (objs, i, o)
		if (strcmp(json_string_value(json_object_get(o, "kind")) ?: "", "ClusterRole") == 0)
			json_object_set(tmp.croles, obj_str(o, "metadata.name"), o);
	n = json_object_size(tmp.croles);
	const char **names = calloc(n ? n : 1, sizeof(*names));
	if (!names)
		goto out;
	json_object_foreach (tmp.croles, key, o)
		names[k++] = key;
	qsort(names, n, sizeof(*names), cmp_str);
	bool changed = true;
	for (int pass = 0; changed && pass < AGG_MAX_PASSES; pass++) {
		changed = false;
		for (k = 0; k < n; k++) {
			json_t *role = json_object_get(tmp.croles, names[k]);
			json_t *agg = json_object_get(role, "aggregationRule");
			if (!json_is_object(agg))
				continue;
			json_t *rules = aggregated_rules(&tmp, names[k], agg, names, n);
			json_t *have = json_object_get(role, "rules");
			if (have ? json_equal(rules, have) : json_array_size(rules) == 0) {
				json_decref(rules);
				continue;
			}
			json_object_set_new(role, "rules", rules);
			changed = true;
		}
	}
	free(names);
out:
	json_decref(tmp.croles);
}

static int load_all(struct authz *az, const json_t *made, json_t *crbs)
{
	int rc = 0;
	for (int k = 0; rc == 0 && k < 4; k++)
		rc = load_kind(az, (enum rbac_kind)k, made, crbs);
	return rc;
}

/* Back to nothing loaded: no watch, an empty index. */
static int unload(struct authz *az)
{
	for (int k = 0; k < 4; k++) {
		if (az->w[k].w)
			store_unwatch(az->w[k].w);
		az->w[k].w = NULL;
	}
	rbac_index_free(az->ix);
	az->ix = rbac_index_new();
	json_object_clear(az->croles);
	return az->ix ? 0 : -ENOMEM;
}

/* ---- the defaults, reconciled at start ----------------------------------- */

/*
 * kube-apiserver's rbac/bootstrap-roles post-start hook
 * (pkg/registry/rbac/rest/storage_rbac.go, PostStartHook) reconciles every
 * default ClusterRole and ClusterRoleBinding at each start with Confirm and
 * nothing removed (k8s.io/component-helpers/auth/rbac/reconciliation,
 * reconcile_role.go computeReconciledRole and reconcile_rolebindings.go
 * computeReconciledRoleBinding): a missing one is created; an existing one
 * whose annotation rbac.authorization.kubernetes.io/autoupdate is "false"
 * is left alone; otherwise the expected labels and annotations it lacks are
 * added (its own values win), the expected rules it does not cover are
 * appended (as atomic rules, validation.Covers), an aggregationRule it
 * should not have is dropped and the expected selectors it lacks appended;
 * a binding gets the expected subjects it lacks appended, and one whose
 * roleRef differs is deleted and created again. So a default a user pruned
 * is repaired, and a new version's added permissions reach existing
 * clusters.
 *
 * That takes the defaults' 0.9 M parse and a comparison; a start skips it
 * when the stamp the last reconcile left (store kv STAMP_KEY) is what it
 * finds: the defaults' form and each default's stored resourceVersion,
 * which any write to it changes.
 */
#define STAMP_KEY  "rbac-defaults-reconciled"
#define AUTOUPDATE "rbac.authorization.kubernetes.io/autoupdate"

struct start_state {
	json_t *crbs;  /* name -> ClusterRoleBinding, as loaded */
	char *stamped; /* the kv's stamp, or NULL */
};

/* "<form> <rv>,<rv>,...": the defaults' form and their resourceVersions
 * ("-" for one missing), in rbac_default_names() order. New string. */
static char *defaults_stamp(const struct authz *az, const json_t *crbs)
{
	size_t n;
	const struct rbac_default_name *d = rbac_default_names(&n);
	struct kb_buf b = {0};
	int rc = kb_buf_printf(&b, "%016llx ", (unsigned long long)rbac_defaults_form());
	for (size_t i = 0; rc >= 0 && i < n; i++) {
		const json_t *o =
		    json_object_get(d[i].kind == RBAC_CLUSTERROLE ? az->croles : crbs, d[i].name);
		const char *rv = o ? obj_str(o, "metadata.resourceVersion") : NULL;
		rc = kb_buf_printf(&b, "%s%s", i ? "," : "", rv ? rv : "-");
	}
	if (rc < 0)
		kb_buf_free(&b);
	return rc < 0 ? NULL : b.data;
}

static bool is_protected(const json_t *o)
{
	const json_t *a = obj_get(o, "metadata.annotations");
	const char *au = json_string_value(json_object_get(a, AUTOUPDATE));
	return au && strcmp(au, "false") == 0;
}

/* kube's merge(expected, existing) of a string map into upd's metadata:
 * the expected keys upd lacks are added. True when one was. */
static bool merge_meta(json_t *upd, const json_t *want, const char *field)
{
	const json_t *w = json_object_get(json_object_get(want, "metadata"), field);
	json_t *md = json_object_get(upd, "metadata");
	json_t *have = json_object_get(md, field);
	const char *k;
	json_t *v;
	bool changed = false;
	if (!json_is_object(w) || !json_is_object(md))
		return false;
	if (!json_is_object(have)) {
		have = json_object();
		json_object_set_new(md, field, have);
		changed = true; /* kube: nil against an empty map is a change too */
	}
	json_object_foreach ((json_t *)w, k, v)
		if (!json_object_get(have, k)) {
			json_object_set(have, k, v);
			changed = true;
		}
	return changed;
}

/* The expected aggregation selectors `have` lacks (semantic equality as
 * JSON equality), appended to upd; true when the rule changed. */
static bool merge_aggregation(json_t *upd, const json_t *have, const json_t *want)
{
	const json_t *wa = json_object_get(want, "aggregationRule");
	const json_t *ha = json_object_get(have, "aggregationRule");
	if (json_is_null(wa))
		wa = NULL;
	if (json_is_null(ha))
		ha = NULL;
	if (!wa) {
		if (!ha)
			return false;
		json_object_del(upd, "aggregationRule");
		return true;
	}
	const json_t *hs = json_object_get(ha, "clusterRoleSelectors");
	json_t *ua = json_object_get(upd, "aggregationRule");
	bool changed = false;
	size_t i, j;
	json_t *s, *t;
	json_array_foreach (json_object_get(wa, "clusterRoleSelectors"), i, s) {
		bool found = false;
		json_array_foreach (hs, j, t)
			if (json_equal(s, t)) {
				found = true;
				break;
			}
		if (found)
			continue;
		if (!json_is_object(ua)) {
			ua = json_object();
			json_object_set_new(upd, "aggregationRule", ua);
		}
		json_t *us = json_object_get(ua, "clusterRoleSelectors");
		if (!json_is_array(us)) {
			us = json_array();
			json_object_set_new(ua, "clusterRoleSelectors", us);
		}
		json_array_append(us, s);
		changed = true;
	}
	return changed;
}

/* computeReconciledRole: the role to store, or NULL when none is to be. */
static json_t *reconciled_role(const json_t *have, const json_t *want)
{
	if (is_protected(have))
		return NULL;
	json_t *upd = json_deep_copy(have);
	if (!upd)
		return NULL;
	bool changed = merge_meta(upd, want, "annotations");
	changed |= merge_meta(upd, want, "labels");
	json_t *missing = NULL, *empty = json_array();
	const json_t *hr = json_object_get(have, "rules");
	rbac_covers(json_is_array(hr) ? hr : empty, json_object_get(want, "rules"), &missing);
	json_decref(empty);
	if (missing) {
		json_t *ur = json_object_get(upd, "rules");
		if (!json_is_array(ur)) {
			ur = json_array();
			json_object_set_new(upd, "rules", ur);
		}
		json_array_extend(ur, missing);
		json_decref(missing);
		changed = true;
	}
	changed |= merge_aggregation(upd, have, want);
	if (!changed) {
		json_decref(upd);
		return NULL;
	}
	return upd;
}

static bool same_str(const json_t *a, const json_t *b, const char *key)
{
	return strcmp(json_string_value(json_object_get(a, key)) ?: "",
		      json_string_value(json_object_get(b, key)) ?: "") == 0;
}

/* rbacv1.Subject equality (all four fields) */
static bool same_subject(const json_t *a, const json_t *b)
{
	return same_str(a, b, "kind") && same_str(a, b, "apiGroup") && same_str(a, b, "name") &&
	       same_str(a, b, "namespace");
}

static bool has_subject(const json_t *list, const json_t *s)
{
	size_t i;
	json_t *t;
	json_array_foreach (list, i, t)
		if (same_subject(t, s))
			return true;
	return false;
}

/* computeReconciledRoleBinding: the binding to store (*recreate: delete the
 * stored one first, its roleRef differing), or NULL when none is to be. */
static json_t *reconciled_binding(const json_t *have, const json_t *want, bool *recreate)
{
	*recreate = false;
	if (is_protected(have))
		return NULL;
	const json_t *hr = json_object_get(have, "roleRef"), *wr = json_object_get(want, "roleRef");
	if (!same_str(hr, wr, "apiGroup") || !same_str(hr, wr, "kind") ||
	    !same_str(hr, wr, "name")) {
		*recreate = true;
		return json_deep_copy(want);
	}
	json_t *upd = json_deep_copy(have);
	if (!upd)
		return NULL;
	bool changed = merge_meta(upd, want, "annotations");
	changed |= merge_meta(upd, want, "labels");
	const json_t *hs = json_object_get(have, "subjects");
	json_t *us = json_object_get(upd, "subjects");
	size_t i;
	json_t *s;
	json_array_foreach (json_object_get(want, "subjects"), i, s) {
		if (has_subject(hs, s) || has_subject(us, s))
			continue;
		if (!json_is_array(us)) {
			us = json_array();
			json_object_set_new(upd, "subjects", us);
		}
		json_array_append(us, s);
		changed = true;
	}
	if (!changed) {
		json_decref(upd);
		return NULL;
	}
	return upd;
}

/* One default against what is stored: created (and appended to `made`, may
 * be NULL), updated, recreated or left. 0 or a store error; *wrote set when
 * something was written. */
static int reconcile_one(struct authz *az, const json_t *crbs, json_t *want, json_t *made,
			 bool *wrote)
{
	struct proxy *px = az->px;
	const char *kind = json_string_value(json_object_get(want, "kind"));
	const struct proxy_resource *res = resource_find_kind(RBAC_GROUP, kind);
	const char *name = obj_str(want, "metadata.name");
	if (!res || !name)
		return 0;
	bool role = strcmp(kind, "ClusterRole") == 0, recreate = false;
	const json_t *have = json_object_get(role ? az->croles : crbs, name);
	int rc;
	if (!have) {
		rc = px->client->bootstrap_create(px, res, want, NULL);
		*wrote |= rc == 0;
		if (rc == 0 && made)
			json_array_append(made, want);
		return rc == -EEXIST ? 0 : rc;
	}
	json_t *upd =
	    role ? reconciled_role(have, want) : reconciled_binding(have, want, &recreate);
	if (!upd)
		return 0;
	if (recreate) {
		rc = store_delete(px->store, res->store_key, "", name, 0, NULL, NULL);
		if (rc == 0 || rc == -ENOENT)
			rc = px->client->bootstrap_create(px, res, upd, NULL);
	} else {
		rc = store_update(px->store, res->store_key, "", name, upd, 0, NULL);
	}
	if (rc == 0) {
		*wrote = true;
		kb_info("authz", "reconciled %s %s with the default", res->plural, name);
	}
	json_decref(upd);
	return rc;
}

/* Reconciles the defaults `objs` (borrowed; rbac_defaults()) against the
 * loaded objects, in one transaction; on an empty store that creates them
 * all, each appended to `made` (may be NULL). *wrote set when something
 * was written. */
static int reconcile(struct authz *az, const json_t *crbs, json_t *objs, json_t *made, bool *wrote)
{
	size_t i;
	json_t *o;
	int rc = 0;
	store_txn_begin(az->px->store);
	json_array_foreach (objs, i, o)
		if ((rc = reconcile_one(az, crbs, o, made, wrote)) < 0)
			break;
	if (rc == 0)
		rc = store_txn_commit(az->px->store);
	else
		store_txn_rollback(az->px->store);
	return rc;
}

/*
 * Indexes and watches the four kinds, the defaults reconciled first. On
 * existing data the stored objects are loaded, and the defaults are built
 * and reconciled only when the stamp says a default or their form changed
 * since the last reconcile (then loaded again when that wrote). On an empty
 * store (a first start) the defaults are created and what was made is
 * all there is, and *settled is set: those ClusterRoles are the defaults,
 * aggregated among themselves by preaggregate() as aggregate() would (the
 * same rules, to a fixed point), so a pass of aggregate() would find
 * nothing to change (0.6 M).
 */
static int load(struct authz *az, struct start_state *ss, bool *settled)
{
	bool first = store_rev(az->px->store) == 0, wrote = false;
	int rc = 0;
	if (!first) {
		if ((rc = load_all(az, NULL, ss->crbs)) < 0)
			return rc;
		char *now = defaults_stamp(az, ss->crbs);
		bool same = now && ss->stamped && strcmp(now, ss->stamped) == 0;
		free(now);
		if (same)
			return 0;
	}
	json_t *objs = rbac_defaults(), *made = first ? json_array() : NULL;
	if (!objs || (first && !made))
		rc = -ENOMEM;
	if (rc == 0 && first) /* nothing is stored: all are created, aggregated */
		preaggregate(objs);
	if (rc == 0)
		rc = reconcile(az, ss->crbs, objs, made, &wrote);
	json_decref(objs);
	if (rc == 0 && first) {
		rc = load_all(az, made, ss->crbs);
		*settled = rc == 0;
	} else if (rc == 0 && wrote && (rc = unload(az)) == 0) {
		json_object_clear(ss->crbs);
		rc = load_all(az, NULL, ss->crbs);
	}
	json_decref(made);
	return rc;
}

/* After the start's aggregation: the stamp of what is stored now, written
 * when it is not the one found. */
static void stamp(struct authz *az, struct start_state *ss)
{
	char *now = defaults_stamp(az, ss->crbs);
	if (now && !(ss->stamped && strcmp(now, ss->stamped) == 0) &&
	    store_kv_set(az->px->store, STAMP_KEY, now) < 0)
		kb_warn("authz", "cannot stamp the RBAC defaults' reconcile");
	free(now);
}

int authz_start(struct proxy *px)
{
	struct authz *az = calloc(1, sizeof(*az));
	if (!az)
		return -ENOMEM;
	az->px = px;
	az->ix = rbac_index_new();
	az->croles = json_object();
	struct start_state ss = {.crbs = json_object()};
	if (store_kv_get(px->store, STAMP_KEY, &ss.stamped) < 0)
		ss.stamped = NULL;
	bool settled = false;
	int rc = az->ix && az->croles && ss.crbs ? load(az, &ss, &settled) : -ENOMEM;
	if (rc < 0) {
		px->authz = az;
		authz_stop(px);
		json_decref(ss.crbs);
		free(ss.stamped);
		return rc;
	}
	px->authz = az;
	if (!settled)
		aggregate(az);
	stamp(az, &ss);
	json_decref(ss.crbs);
	free(ss.stamped);
	return 0;
}

void authz_stop(struct proxy *px)
{
	struct authz *az = px->authz;
	if (!az)
		return;
	for (int k = 0; k < 4; k++)
		if (az->w[k].w)
			store_unwatch(az->w[k].w);
	rbac_index_free(az->ix);
	json_decref(az->croles);
	free(az);
	px->authz = NULL;
}
