/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ValidatingAdmissionPolicy: the tenant's admissionregistration.k8s.io/v1
 * ValidatingAdmissionPolicies and their bindings, evaluated on writes as
 * kube-apiserver's ValidatingAdmissionPolicy plugin does (after the
 * mutating webhooks and the built-in admission, before the validating
 * webhooks and quota).
 *
 * For each policy whose matchConstraints match the request, each binding
 * of it whose matchResources match: its params are found (paramKind and
 * the binding's paramRef: one object by name or every object a selector
 * picks, in the request's namespace unless paramRef names one), then per
 * param the matchConditions (all must hold), the validations (lazily
 * evaluated variables shared between them), the message expressions and
 * the audit annotations. A failed validation is acted on as the binding's
 * validationActions say: Deny refuses the request (the first denial is the
 * answer, with the validation's reason and its code), Warn adds a warning,
 * Audit an audit annotation. An expression that fails to evaluate, a param
 * that cannot be found or an expression that did not compile follows the
 * policy's failurePolicy.
 *
 * Expressions see object, oldObject, request (kube's AdmissionRequest),
 * params, namespaceObject, variables and authorizer (RBAC checks of the
 * requesting user), with kube's CEL libraries.
 *
 * Threading: loop thread only. The compiled set is rebuilt when a policy or
 * binding changes (a store watch marks it stale).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/cel/cel_impl.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/admission/admission.h"
#include "proxy/auth/rbac.h"
#include "proxy/model/selector.h"
#include "proxy/validation/validate.h"
#include "proxy/admission/vap.h"
#include "proxy/admission/webhook.h"
#include "store/store.h"

#define AR_GROUP "admissionregistration.k8s.io"
#define VAP_KEY  AR_GROUP "/validatingadmissionpolicies"
#define VAPB_KEY AR_GROUP "/validatingadmissionpolicybindings"
#define BUDGET   10000000ull /* kube's RuntimeCELCostBudget */

struct expr {
	const char *src; /* borrowed from the policy's JSON */
	cel_program_t *prog;
	char *err; /* the compile error, when prog is NULL */
};

struct policy {
	json_t *def; /* the policy object (referenced) */
	const char *name;
	bool fail; /* failurePolicy Fail */
	struct expr *conds, *vars, *vals, *msgs, *audits;
	size_t nconds, nvars, nvals, naudits;
	const char **var_names;
	struct sel_label *ns_sel, *obj_sel;
};

struct binding {
	json_t *def;
	const char *name;
	struct policy *policy;
	struct sel_label *ns_sel, *obj_sel; /* matchResources', or NULL */
	bool deny, warn, audit;
};

struct vap_set {
	struct policy *policies;
	size_t npolicies;
	struct binding *bindings;
	size_t nbindings;
};

static const struct cel_func authz_funcs[];

struct vap {
	struct cfg_watch cw;
	struct vap_set *set;
};

static const char *js(const json_t *o, const char *path)
{
	const char *s = obj_str(o, path);
	return s ? s : "";
}

/* ---- compiling -------------------------------------------------------------------- */

static const struct cel_var vap_vars[] = {
    {"object", NULL},          {"oldObject", NULL}, {"request", NULL},    {"params", NULL},
    {"namespaceObject", NULL}, {"variables", NULL}, {"authorizer", NULL},
};

static void compile_expr(struct expr *e, const char *src)
{
	struct cel_env env = {vap_vars, KB_ARRAY_SIZE(vap_vars), CEL_LIB_K8S | CEL_LIB_AUTHZ};
	e->src = src ? src : "";
	e->prog = cel_compile(e->src, &env, 0, &e->err);
}

static struct expr *compile_list(const json_t *list, const char *field, size_t *n)
{
	*n = json_array_size(list);
	if (!*n)
		return NULL;
	struct expr *out = calloc(*n, sizeof(*out));
	KB_REQUIRE(out);
	size_t i;
	json_t *v;
	json_array_foreach (list, i, v)
		compile_expr(&out[i], json_string_value(json_object_get(v, field)));
	return out;
}

static void free_exprs(struct expr *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++) {
		cel_program_free(e[i].prog);
		free(e[i].err);
	}
	free(e);
}

static struct sel_label *selector(const json_t *def, const char *path)
{
	struct sel_label *s = NULL;
	char err[256];
	if (sel_label_from_object(obj_get(def, path), &s, err, sizeof(err)) < 0)
		return NULL;
	return s;
}

static void policy_load(struct policy *p, const json_t *def)
{
	p->def = json_incref((json_t *)def);
	p->name = js(def, "metadata.name");
	p->fail = strcmp(js(def, "spec.failurePolicy"), "Ignore") != 0;
	const json_t *spec = json_object_get(def, "spec");
	p->conds = compile_list(json_object_get(spec, "matchConditions"), "expression", &p->nconds);
	p->vars = compile_list(json_object_get(spec, "variables"), "expression", &p->nvars);
	const json_t *vals = json_object_get(spec, "validations");
	p->vals = compile_list(vals, "expression", &p->nvals);
	if (p->nvals) {
		p->msgs = calloc(p->nvals, sizeof(*p->msgs));
		KB_REQUIRE(p->msgs);
		for (size_t i = 0; i < p->nvals; i++) {
			const char *m = obj_str(json_array_get(vals, i), "messageExpression");
			if (m && *m)
				compile_expr(&p->msgs[i], m);
		}
	}
	p->audits =
	    compile_list(json_object_get(spec, "auditAnnotations"), "valueExpression", &p->naudits);
	p->var_names = calloc(p->nvars + 1, sizeof(*p->var_names));
	KB_REQUIRE(p->var_names);
	for (size_t i = 0; i < p->nvars; i++)
		p->var_names[i] = js(json_array_get(json_object_get(spec, "variables"), i), "name");
	p->ns_sel = selector(def, "spec.matchConstraints.namespaceSelector");
	p->obj_sel = selector(def, "spec.matchConstraints.objectSelector");
}

static void policy_free(struct policy *p)
{
	free_exprs(p->conds, p->nconds);
	free_exprs(p->vars, p->nvars);
	free_exprs(p->vals, p->nvals);
	free_exprs(p->msgs, p->nvals);
	free_exprs(p->audits, p->naudits);
	free(p->var_names);
	sel_label_free(p->ns_sel);
	sel_label_free(p->obj_sel);
	json_decref(p->def);
}

static bool has_action(const json_t *def, const char *a)
{
	size_t i;
	json_t *v;
	json_array_foreach (obj_get(def, "spec.validationActions"), i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), a) == 0)
			return true;
	return false;
}

static struct policy *policy_named(struct vap_set *s, const char *name)
{
	for (size_t i = 0; i < s->npolicies; i++)
		if (strcmp(s->policies[i].name, name) == 0)
			return &s->policies[i];
	return NULL;
}

static void set_free(struct vap_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->npolicies; i++)
		policy_free(&s->policies[i]);
	for (size_t i = 0; i < s->nbindings; i++) {
		sel_label_free(s->bindings[i].ns_sel);
		sel_label_free(s->bindings[i].obj_sel);
		json_decref(s->bindings[i].def);
	}
	free(s->policies);
	free(s->bindings);
	free(s);
}

static struct vap_set *load_set(struct proxy *px)
{
	json_t *pl = cfg_list(px, VAP_KEY), *bl = cfg_list(px, VAPB_KEY);
	struct vap_set *s = calloc(1, sizeof(*s));
	size_t i;
	json_t *v;
	if (!pl || !bl || !s) {
		json_decref(pl);
		json_decref(bl);
		free(s);
		return NULL;
	}
	s->policies = calloc(json_array_size(pl) + 1, sizeof(*s->policies));
	s->bindings = calloc(json_array_size(bl) + 1, sizeof(*s->bindings));
	KB_REQUIRE(s->policies && s->bindings);
	json_array_foreach (pl, i, v)
		policy_load(&s->policies[s->npolicies++], v);
	json_array_foreach (bl, i, v) {
		struct policy *p = policy_named(s, js(v, "spec.policyName"));
		if (!p)
			continue; /* kube: a binding of no policy does nothing */
		struct binding *b = &s->bindings[s->nbindings++];
		b->def = json_incref(v);
		b->name = js(v, "metadata.name");
		b->policy = p;
		if (obj_get(v, "spec.matchResources")) {
			b->ns_sel = selector(v, "spec.matchResources.namespaceSelector");
			b->obj_sel = selector(v, "spec.matchResources.objectSelector");
		}
		b->deny = has_action(v, "Deny");
		b->warn = has_action(v, "Warn");
		b->audit = has_action(v, "Audit");
	}
	json_decref(pl);
	json_decref(bl);
	return s;
}

static struct vap_set *current_set(struct proxy *px)
{
	struct vap *va = px->vap;
	if (!va)
		return NULL;
	if (va->cw.dirty || !va->set) {
		struct vap_set *s = load_set(px);
		if (s) {
			set_free(va->set);
			va->set = s;
			va->cw.dirty = false;
		}
	}
	return va->set;
}

int vap_start(struct proxy *px)
{
	struct vap *va = calloc(1, sizeof(*va));
	if (!va)
		return -ENOMEM;
	cel_extra_funcs = authz_funcs;
	int rc = cfg_watch_start(px, VAP_KEY, VAPB_KEY, &va->cw);
	if (rc < 0) {
		free(va);
		return rc;
	}
	px->vap = va;
	return 0;
}

void vap_stop(struct proxy *px)
{
	struct vap *va = px->vap;
	if (!va)
		return;
	cfg_watch_stop(&va->cw);
	set_free(va->set);
	free(va);
	px->vap = NULL;
}

/* ---- matching ----------------------------------------------------------------------- */

struct attrs {
	struct req *r;
	const char *op, *ns, *name;
	bool is_namespace;
	const json_t *obj, *old;
	json_t *ns_obj; /* read once, when a selector or namespaceObject needs it */
	bool ns_read;
};

/* The request's attributes as policies and conditions read them: a
 * Namespace is in its own namespace, as kube's request info has it. */
static void attrs_init(struct attrs *a, struct req *r, const char *op, const json_t *obj,
		       const json_t *old)
{
	const json_t *named = obj ? obj : old;
	*a = (struct attrs){.r = r,
			    .op = op,
			    .ns = r->ns ? r->ns : "",
			    .name = r->name ? r->name
				    : named ? js(named, "metadata.name")
					    : "",
			    .is_namespace =
				!r->res->group[0] && strcmp(r->res->kind, "Namespace") == 0,
			    .obj = obj,
			    .old = old};
	if (a->is_namespace)
		a->ns = a->name;
}

static const json_t *ns_object(struct attrs *a)
{
	if (!a->ns_read && *a->ns && !a->is_namespace &&
	    store_get(a->r->px->store, "/namespaces", "", a->ns, &a->ns_obj) < 0)
		a->ns_obj = NULL;
	a->ns_read = true;
	return a->ns_obj;
}

static bool named_rule_matches(const json_t *rule, struct attrs *a)
{
	const struct req *r = a->r;
	if (!webhook_rule_matches(rule, a->op, r->res->group, r->res->version, r->res->plural,
				  r->sub, a->ns, a->is_namespace))
		return false;
	const json_t *names = json_object_get(rule, "resourceNames");
	if (!json_array_size(names))
		return true;
	size_t i;
	json_t *v;
	json_array_foreach (names, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), a->name) == 0)
			return true;
	return false;
}

static bool any_rule(const json_t *rules, struct attrs *a)
{
	size_t i;
	json_t *rule;
	json_array_foreach (rules, i, rule)
		if (named_rule_matches(rule, a))
			return true;
	return false;
}

static const json_t *labels_of(const json_t *o)
{
	return o ? obj_get(o, "metadata.labels") : NULL;
}

/* kube's MatchResources: rules, exclusions, namespace and object selectors. */
static bool resources_match(const json_t *mr, const struct sel_label *ns_sel,
			    const struct sel_label *obj_sel, struct attrs *a)
{
	const json_t *rules = json_object_get(mr, "resourceRules");
	/* no resourceRules (a binding's matchResources may omit them): every
	 * resource the policy matched */
	if ((json_array_size(rules) && !any_rule(rules, a)) ||
	    any_rule(json_object_get(mr, "excludeResourceRules"), a))
		return false;
	if (!sel_label_empty(ns_sel)) {
		if (a->is_namespace) {
			if (!sel_label_match(ns_sel, labels_of(a->obj ? a->obj : a->old)))
				return false;
		} else if (*a->ns && !sel_label_match(ns_sel, labels_of(ns_object(a)))) {
			return false;
		}
	}
	if (!sel_label_empty(obj_sel) && !(a->obj && sel_label_match(obj_sel, labels_of(a->obj))) &&
	    !(a->old && sel_label_match(obj_sel, labels_of(a->old))))
		return false;
	return true;
}

static bool binding_matches(const struct binding *b, struct attrs *a)
{
	const json_t *mr = obj_get(b->def, "spec.matchResources");
	return !mr || resources_match(mr, b->ns_sel, b->obj_sel, a);
}

/* ---- the authorizer library ---------------------------------------------------------- */

struct authz_val {
	struct proxy *px;
	const struct req *req; /* the request (requestResource), or NULL */
	const char *user;
	const char *const *groups;
	size_t ngroups;
	const char *group, *resource, *sub, *ns, *name, *path;
	bool is_path;
};

struct decision {
	bool allowed;
	const char *reason;
};

static const struct cel_opaque_type resource_type;

/* authorizer.requestResource: a check of the request's own resource. */
static cel_value_t authz_select(cel_ctx_t *c, const void *data, const char *field)
{
	const struct authz_val *x = data;
	if (strcmp(field, "requestResource") != 0 || !x->req)
		return cel_errorf(c, "no such key: %s", field);
	struct authz_val *n = cel_alloc(c, sizeof(*n));
	*n = *x;
	n->group = x->req->res->group;
	n->resource = x->req->res->plural;
	n->sub = x->req->sub;
	n->ns = x->req->ns;
	n->name = x->req->name;
	return cel_opaque(&resource_type, n);
}

static const struct cel_opaque_type authz_type = {"kubernetes.authorization.Authorizer", NULL,
						  authz_select};
static const struct cel_opaque_type path_type = {"kubernetes.authorization.PathCheck", NULL};
static const struct cel_opaque_type group_type = {"kubernetes.authorization.GroupCheck", NULL};
static const struct cel_opaque_type resource_type = {"kubernetes.authorization.ResourceCheck", NULL,
						     NULL};
static const struct cel_opaque_type decision_type = {"kubernetes.authorization.Decision", NULL};

static bool is(const cel_value_t *v, const struct cel_opaque_type *t)
{
	return v->kind == CEL_OPAQUE && v->o.type == t;
}

static cel_value_t derive(cel_ctx_t *c, const cel_value_t *from, const struct cel_opaque_type *t,
			  const char **field, cel_value_t s)
{
	struct authz_val *n = cel_alloc(c, sizeof(*n));
	*n = *(const struct authz_val *)from->o.data;
	if (field)
		*field = cel_strndup(c, s.s.p, s.s.len);
	return cel_opaque(t, n);
}

static cel_value_t fn_group(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	if (!is(&a[0], &authz_type) || a[1].kind != CEL_STRING)
		return cel_no_overload(c, "group");
	cel_value_t v = derive(c, &a[0], &group_type, NULL, a[1]);
	((struct authz_val *)v.o.data)->group = cel_strndup(c, a[1].s.p, a[1].s.len);
	return v;
}

static cel_value_t fn_path(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	if (!is(&a[0], &authz_type) || a[1].kind != CEL_STRING)
		return cel_no_overload(c, "path");
	cel_value_t v = derive(c, &a[0], &path_type, NULL, a[1]);
	struct authz_val *x = (struct authz_val *)v.o.data;
	x->path = cel_strndup(c, a[1].s.p, a[1].s.len);
	x->is_path = true;
	return v;
}

static cel_value_t fn_service_account(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	if (!is(&a[0], &authz_type) || a[1].kind != CEL_STRING || a[2].kind != CEL_STRING)
		return cel_no_overload(c, "serviceAccount");
	struct authz_val *x = cel_alloc(c, sizeof(*x));
	*x = *(const struct authz_val *)a[0].o.data;
	char u[600];
	snprintf(u, sizeof(u), "system:serviceaccount:%.*s:%.*s", (int)a[1].s.len, a[1].s.p,
		 (int)a[2].s.len, a[2].s.p);
	x->user = cel_strndup(c, u, strlen(u));
	const char **g = cel_alloc(c, 3 * sizeof(*g));
	g[0] = "system:serviceaccounts";
	snprintf(u, sizeof(u), "system:serviceaccounts:%.*s", (int)a[1].s.len, a[1].s.p);
	g[1] = cel_strndup(c, u, strlen(u));
	x->groups = g;
	x->ngroups = 2;
	return cel_opaque(&authz_type, x);
}

static cel_value_t set_field(cel_ctx_t *c, const cel_value_t *a, const struct cel_opaque_type *in,
			     const struct cel_opaque_type *out, size_t off, const char *fn)
{
	if (!is(&a[0], in) || a[1].kind != CEL_STRING)
		return cel_no_overload(c, fn);
	struct authz_val *x = cel_alloc(c, sizeof(*x));
	*x = *(const struct authz_val *)a[0].o.data;
	*(const char **)((char *)x + off) = cel_strndup(c, a[1].s.p, a[1].s.len);
	return cel_opaque(out, x);
}

static cel_value_t fn_resource(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	return set_field(c, a, &group_type, &resource_type, offsetof(struct authz_val, resource),
			 "resource");
}

static cel_value_t fn_subresource(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	return set_field(c, a, &resource_type, &resource_type, offsetof(struct authz_val, sub),
			 "subresource");
}

static cel_value_t fn_namespace(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	return set_field(c, a, &resource_type, &resource_type, offsetof(struct authz_val, ns),
			 "namespace");
}

static cel_value_t fn_name(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	return set_field(c, a, &resource_type, &resource_type, offsetof(struct authz_val, name),
			 "name");
}

static cel_value_t fn_check(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	if (!(is(&a[0], &resource_type) || is(&a[0], &path_type)) || a[1].kind != CEL_STRING)
		return cel_no_overload(c, "check");
	const struct authz_val *x = a[0].o.data;
	char verb[64], why[512] = "";
	snprintf(verb, sizeof(verb), "%.*s", (int)a[1].s.len, a[1].s.p);
	struct rbac_attrs ra = {.user = x->user,
				.groups = x->groups,
				.ngroups = x->ngroups,
				.verb = verb,
				.resource_request = !x->is_path,
				.api_group = x->group ? x->group : "",
				.resource = x->resource ? x->resource : "",
				.subresource = x->sub,
				.ns = x->ns,
				.name = x->name,
				.path = x->path};
	struct decision *d = cel_alloc(c, sizeof(*d));
	d->allowed = authz_check(x->px, &ra, why, sizeof(why));
	d->reason = cel_strndup(c, why, strlen(why));
	return cel_opaque(&decision_type, d);
}

static cel_value_t fn_allowed(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	if (!is(&a[0], &decision_type))
		return cel_no_overload(c, "allowed");
	return cel_bool(((const struct decision *)a[0].o.data)->allowed);
}

static cel_value_t fn_reason(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	if (!is(&a[0], &decision_type))
		return cel_no_overload(c, "reason");
	return cel_string(((const struct decision *)a[0].o.data)->reason);
}

static cel_value_t fn_errored(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	if (!is(&a[0], &decision_type))
		return cel_no_overload(c, "errored");
	return cel_bool(false); /* RBAC decisions never fail here */
}

static cel_value_t fn_error(cel_ctx_t *c, const cel_value_t *a, size_t n)
{
	if (!is(&a[0], &decision_type))
		return cel_no_overload(c, "error");
	return cel_string("");
}

static const struct cel_func authz_funcs[] = {
    {"group", true, 2, CEL_LIB_AUTHZ, fn_group},
    {"path", true, 2, CEL_LIB_AUTHZ, fn_path},
    {"serviceAccount", true, 3, CEL_LIB_AUTHZ, fn_service_account},
    {"resource", true, 2, CEL_LIB_AUTHZ, fn_resource},
    {"subresource", true, 2, CEL_LIB_AUTHZ, fn_subresource},
    {"namespace", true, 2, CEL_LIB_AUTHZ, fn_namespace},
    {"name", true, 2, CEL_LIB_AUTHZ, fn_name},
    {"check", true, 2, CEL_LIB_AUTHZ, fn_check},
    {"allowed", true, 1, CEL_LIB_AUTHZ, fn_allowed},
    {"reason", true, 1, CEL_LIB_AUTHZ, fn_reason},
    {"errored", true, 1, CEL_LIB_AUTHZ, fn_errored},
    {"error", true, 1, CEL_LIB_AUTHZ, fn_error},
    {NULL, false, 0, 0, NULL},
};

/* ---- evaluation ------------------------------------------------------------------------ */

struct run {
	struct attrs *a;
	const struct policy *p;
	json_t *request, *ns_view;
	const json_t *params;
	uint64_t budget;
	char *verdict; /* the first failure's message (malloc'd) */
	const char *reason;
};

/* kube's AdmissionRequest as CEL sees it (request), without the objects. */
static json_t *request_view(struct attrs *a)
{
	const struct req *r = a->r;
	const struct proxy_resource *res = r->res;
	/* a subresource with a kind of its own (pods/eviction: policy/v1
	 * Eviction, pods/binding: Binding) is named by it */
	const struct proxy_subresource *sr = r->sub ? resource_sub(res, r->sub) : NULL;
	if (sr && (strcmp(sr->name, "status") == 0 || strcmp(sr->name, "scale") == 0))
		sr = NULL;
	json_t *kind =
	    json_pack("{s:s,s:s,s:s}", "group", sr ? sr->group : res->group, "version",
		      sr ? sr->version : res->version, "kind", sr ? sr->kind : res->kind);
	json_t *resource = json_pack("{s:s,s:s,s:s}", "group", res->group, "version", res->version,
				     "resource", res->plural);
	json_t *user = req_user_info(r);
	json_t *rq = json_pack("{s:O,s:O,s:O,s:O,s:s,s:s,s:s,s:o,s:b}", "kind", kind, "resource",
			       resource, "requestKind", kind, "requestResource", resource, "name",
			       a->name, "namespace", a->ns, "operation", a->op, "userInfo", user,
			       "dryRun", r->q.dry_run);
	if (r->sub) {
		json_object_set_new(rq, "subResource", json_string(r->sub));
		json_object_set_new(rq, "requestSubResource", json_string(r->sub));
	}
	json_decref(kind);
	json_decref(resource);
	return rq;
}

/* variables: kube evaluates them lazily; here each is evaluated in order
 * (seeing the ones before it) and an error stays in its value, so it
 * surfaces only where the variable is read, as kube's. */
static void bind_variables(struct run *run, cel_ctx_t *c)
{
	const struct policy *p = run->p;
	cel_value_t *keys = cel_alloc(c, (p->nvars + 1) * sizeof(*keys));
	cel_value_t *vals = cel_alloc(c, (p->nvars + 1) * sizeof(*vals));
	for (size_t i = 0; i < p->nvars; i++) {
		cel_bind(c, "variables", cel_map_new(c, keys, vals, i));
		const struct expr *e = &p->vars[i];
		cel_value_t out;
		const char *msg = NULL;
		uint64_t cost = 0;
		keys[i] = cel_string(p->var_names[i]);
		if (!e->prog)
			vals[i] = cel_errorf(c, "compilation error: %s", e->err ? e->err : "");
		else if (cel_eval(e->prog, c, &out, &msg, &cost) == CEL_OK)
			vals[i] = out;
		else
			vals[i] = cel_errorf(c, "%s", msg ? msg : "error");
		run->budget = cost > run->budget ? 0 : run->budget - cost;
	}
	cel_bind(c, "variables", cel_map_new(c, keys, vals, p->nvars));
}

static void bind_common(struct run *run, cel_ctx_t *c)
{
	struct attrs *a = run->a;
	cel_bind_json(c, "object", a->obj, NULL);
	cel_bind_json(c, "oldObject", a->old, NULL);
	cel_bind_json(c, "request", run->request, NULL);
	cel_bind_json(c, "params", run->params, NULL);
	cel_bind_json(c, "namespaceObject", run->ns_view, NULL);
	struct authz_val *az = cel_alloc(c, sizeof(*az));
	az->px = a->r->px;
	az->req = a->r;
	az->user = a->r->user;
	az->groups = (const char *const *)a->r->groups;
	az->ngroups = (size_t)a->r->ngroups;
	cel_bind(c, "authorizer", cel_opaque(&authz_type, az));
	bind_variables(run, c);
}

/* Evaluates e: 1 true, 0 false, < 0 an error with *msg set (arena). */
static int eval_bool(struct run *run, cel_ctx_t *c, const struct expr *e, const char **msg)
{
	if (!e->prog) {
		*msg = cel_errorf(c, "compilation error: %s", e->err ? e->err : "").s.p;
		return -EINVAL;
	}
	cel_value_t out;
	uint64_t cost = 0;
	enum cel_outcome oc = cel_eval(e->prog, c, &out, msg, &cost);
	run->budget = cost > run->budget ? 0 : run->budget - cost;
	if (oc != CEL_OK)
		return -EIO;
	if (out.kind != CEL_BOOL) {
		*msg = "expected bool";
		return -EINVAL;
	}
	return out.b ? 1 : 0;
}

/* The message of failed validation i. */
static char *message_of(struct run *run, cel_ctx_t *c, size_t i)
{
	const json_t *v = json_array_get(obj_get(run->p->def, "spec.validations"), i);
	const struct expr *m = &run->p->msgs[i];
	if (m->prog) {
		cel_value_t out;
		const char *msg;
		uint64_t cost = 0;
		const char *s;
		size_t n;
		if (cel_eval(m->prog, c, &out, &msg, &cost) == CEL_OK && out.kind == CEL_STRING &&
		    val_expression_message(out.s.p, out.s.len, &s, &n))
			return strndup(s, n);
	}
	const char *msg = js(v, "message");
	if (*msg)
		return strdup(msg);
	char *out = NULL;
	if (asprintf(&out, "failed expression: %s", js(v, "expression")) < 0)
		return NULL;
	return out;
}

/* The policy's validations for one param; the binding's actions on each
 * failure. Returns false when the request is denied (run->verdict). */
static bool validate_one(struct run *run, const struct binding *b)
{
	const struct policy *p = run->p;
	cel_ctx_t *c = cel_ctx_new(run->budget);
	bind_common(run, c);
	const char *msg = NULL;
	bool denied = false;
	/* kube's matcher: one false condition and the policy does not apply;
	 * otherwise an error follows failurePolicy */
	char *cond_err = NULL;
	for (size_t i = 0; i < p->nconds; i++) {
		int rc = eval_bool(run, c, &p->conds[i], &msg);
		if (rc == 0) {
			free(cond_err);
			goto out;
		}
		if (rc < 0 && !cond_err &&
		    asprintf(&cond_err, "expression '%s' resulted in error: %s", p->conds[i].src,
			     msg ? msg : "") < 0)
			cond_err = NULL;
	}
	if (cond_err) {
		if (p->fail) { /* under Fail: the answer */
			if (!run->verdict) {
				run->verdict = cond_err;
				cond_err = NULL;
			}
			denied = true;
		}
		free(cond_err);
		goto out; /* under Ignore the policy does not apply either */
	}
	for (size_t i = 0; i < p->nvals && !denied; i++) {
		int rc = eval_bool(run, c, &p->vals[i], &msg);
		if (rc == 1 || (rc < 0 && !p->fail))
			continue;
		char *m;
		const char *reason = "Invalid";
		if (rc < 0) {
			if (asprintf(&m, "expression '%s' resulted in error: %s", p->vals[i].src,
				     msg) < 0)
				m = NULL;
		} else {
			m = message_of(run, c, i);
			const char *rs = obj_str(
			    json_array_get(obj_get(p->def, "spec.validations"), i), "reason");
			if (rs && *rs)
				reason = rs;
		}
		if (b->warn) {
			char w[6000];
			snprintf(
			    w, sizeof(w),
			    "Validation failed for ValidatingAdmissionPolicy '%s' with binding "
			    "'%s': %s",
			    p->name, b->name, m ? m : "");
			if (!run->a->r->warnings)
				run->a->r->warnings = json_array();
			json_array_append_new(run->a->r->warnings, json_string(w));
		}
		if (b->audit) {
			json_t *val = json_pack("[{s:s,s:s,s:s,s:i,s:O}]", "message", m ? m : "",
						"policy", p->name, "binding", b->name,
						"expressionIndex", (int)i, "validationActions",
						obj_get(b->def, "spec.validationActions"));
			char *txt = json_dumps(val, JSON_COMPACT);
			audit_annotate(run->a->r,
				       "validation.policy.admission.k8s.io/validation_failure",
				       txt ? txt : "");
			free(txt);
			json_decref(val);
		}
		if (b->deny && !run->verdict) {
			run->verdict = m;
			run->reason = reason;
			m = NULL;
			denied = true;
		}
		free(m);
	}
	for (size_t i = 0; i < p->naudits && !denied; i++) {
		const struct expr *e = &p->audits[i];
		cel_value_t out;
		if (!e->prog || cel_eval(e->prog, c, &out, &msg, NULL) != CEL_OK)
			continue;
		if (out.kind != CEL_STRING || !out.s.len)
			continue;
		char key[600], *val = strndup(out.s.p, out.s.len);
		snprintf(key, sizeof(key), "%s/%s", p->name,
			 js(json_array_get(obj_get(p->def, "spec.auditAnnotations"), i), "key"));
		audit_annotate(run->a->r, key, val ? val : "");
		free(val);
	}
out:
	cel_ctx_free(c);
	return !denied;
}

/* The params a binding gives (new array reference), or NULL with *why set
 * when they cannot be found and that is a failure. */
static json_t *params_of(struct attrs *a, const struct policy *p, const struct binding *b,
			 char *why, size_t wl)
{
	const json_t *pk = obj_get(p->def, "spec.paramKind");
	json_t *out = json_array();
	if (!pk) {
		json_array_append_new(out, json_null());
		return out;
	}
	const json_t *ref = obj_get(b->def, "spec.paramRef");
	if (!ref) {
		snprintf(why, wl,
			 "failed to configure binding: paramRef is required when paramKind is set");
		json_decref(out);
		return NULL;
	}
	char group[256];
	const char *av = js(pk, "apiVersion"), *slash = strchr(av, '/');
	snprintf(group, sizeof(group), "%.*s", slash ? (int)(slash - av) : 0, av);
	const struct proxy_resource *res = resource_find_kind(group, js(pk, "kind"));
	if (!res) {
		snprintf(why, wl,
			 "failed to configure binding: failed to find resource referenced by "
			 "paramKind: '%s, Kind=%s'",
			 av, js(pk, "kind"));
		json_decref(out);
		return NULL;
	}
	const char *ns = obj_str(ref, "namespace");
	if (!ns || !*ns)
		ns = res->namespaced ? a->ns : "";
	if (res->namespaced && !*ns) {
		snprintf(why, wl,
			 "failed to configure binding: cannot use namespaced paramRef in policy "
			 "binding that matches cluster-scoped resources");
		json_decref(out);
		return NULL;
	}
	const char *name = obj_str(ref, "name");
	if (name && *name) {
		json_t *o = NULL;
		if (store_get(a->r->px->store, res->store_key, res->namespaced ? ns : "", name,
			      &o) == 0)
			json_array_append_new(out, o);
	} else {
		struct sel_label *sel = selector(b->def, "spec.paramRef.selector");
		json_t *all = NULL;
		struct store_list_req lr = {.res = res->store_key,
					    .ns = res->namespaced ? ns : NULL};
		struct store_list_result lo = {0};
		if (store_list(a->r->px->store, &lr, &lo) == 0) {
			all = lo.items;
			free(lo.next);
		}
		size_t i;
		json_t *o;
		json_array_foreach (all, i, o)
			if (sel_label_match(sel, labels_of(o)))
				json_array_append(out, o);
		json_decref(all);
		sel_label_free(sel);
	}
	if (!json_array_size(out) && strcmp(js(ref, "parameterNotFoundAction"), "Deny") == 0) {
		snprintf(why, wl,
			 "failed to configure binding: no params found for policy binding with "
			 "`Deny` parameterNotFoundAction");
		json_decref(out);
		return NULL;
	}
	return out;
}

/* A denial: the policy, its binding and the message, as kube words it. */
struct denial {
	char *message; /* ValidatingAdmissionPolicy '<p>' with binding '<b>' denied request: ... */
	const char *reason;
	const char *name;
};

static void deny(struct denial *d, const struct policy *p, const struct binding *b,
		 const char *verdict, const char *reason)
{
	int n = b ? asprintf(&d->message,
			     "ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s",
			     p->name, b->name, verdict)
		  : asprintf(&d->message, "ValidatingAdmissionPolicy '%s' denied request: %s",
			     p->name, verdict);
	if (n < 0)
		d->message = NULL;
	d->reason = reason;
}

/* The policies on r's op: 0, or -EACCES with *d filled (free d->message). */
static int decide(struct req *r, const char *op, const json_t *obj, const json_t *old,
		  struct denial *d)
{
	struct vap_set *s = current_set(r->px);
	if (!s || !s->nbindings || strcmp(r->res->group, AR_GROUP) == 0)
		return 0;
	struct attrs a;
	attrs_init(&a, r, op, obj, old);
	d->name = a.name;
	int rc = 0;
	json_t *request = NULL;
	for (size_t pi = 0; pi < s->npolicies && rc == 0; pi++) {
		struct policy *p = &s->policies[pi];
		const json_t *mc = obj_get(p->def, "spec.matchConstraints");
		if (!resources_match(mc, p->ns_sel, p->obj_sel, &a))
			continue;
		for (size_t bi = 0; bi < s->nbindings && rc == 0; bi++) {
			struct binding *b = &s->bindings[bi];
			if (b->policy != p || !binding_matches(b, &a))
				continue;
			char why[512] = "";
			json_t *params = params_of(&a, p, b, why, sizeof(why));
			if (!params) {
				if (p->fail) {
					deny(d, p, b, why, "Invalid");
					rc = -EACCES;
				}
				continue;
			}
			if (!request)
				request = request_view(&a);
			struct run run = {.a = &a,
					  .p = p,
					  .request = request,
					  .ns_view = (json_t *)ns_object(&a),
					  .budget = BUDGET};
			size_t i;
			json_t *pv;
			json_array_foreach (params, i, pv) {
				run.params = json_is_null(pv) ? NULL : pv;
				if (!validate_one(&run, b))
					break;
			}
			if (run.verdict) {
				deny(d, p, b, run.verdict, run.reason ? run.reason : "Invalid");
				rc = -EACCES;
			}
			free(run.verdict);
			json_decref(params);
		}
	}
	json_decref(request);
	json_decref(a.ns_obj);
	return rc;
}

static int code_of(const char *reason)
{
	if (strcmp(reason, "Unauthorized") == 0)
		return 401;
	if (strcmp(reason, "Forbidden") == 0)
		return 403;
	if (strcmp(reason, "RequestEntityTooLarge") == 0)
		return 413;
	return 422;
}

/* kube's admission.NewForbidden with the denial's reason and code. */
static void forbidden_text(const struct proxy_resource *res, const struct denial *d, char *out,
			   size_t len)
{
	char qn[300];
	reply_resource_name(res, qn, sizeof(qn));
	snprintf(out, len, "%s \"%s\" is forbidden: %s", qn, d->name,
		 d->message ? d->message : "denied");
}

int vap_admit(struct req *r, const char *op, const json_t *obj, const json_t *old)
{
	struct denial d = {0};
	if (decide(r, op, obj, old, &d) == 0)
		return 0;
	char full[6600];
	forbidden_text(r->res, &d, full, sizeof(full));
	json_t *det = json_object();
	if (*d.name)
		json_object_set_new(det, "name", json_string(d.name));
	if (r->res->group[0])
		json_object_set_new(det, "group", json_string(r->res->group));
	json_object_set_new(det, "kind", json_string(r->res->plural));
	json_object_set_new(det, "causes",
			    json_pack("[{s:s}]", "message", d.message ? d.message : ""));
	reply_status(r, code_of(d.reason), d.reason, full, det);
	free(d.message);
	return -ECANCELED;
}

int vap_admit_internal(struct proxy *px, const struct proxy_resource *res, const char *op,
		       const char *sub, const json_t *obj, const json_t *old, const char *manager,
		       char *why, size_t wl)
{
	struct vap_set *s = current_set(px);
	if (!s || !s->nbindings)
		return 0;
	struct req *r = req_controller(px, res, manager);
	if (!r)
		return -ENOMEM;
	const json_t *named = obj ? obj : old;
	char *ns = res->namespaced && obj_str(named, "metadata.namespace")
		       ? strdup(obj_str(named, "metadata.namespace"))
		       : NULL;
	r->ns = ns;
	r->sub = sub;
	struct denial d = {0};
	int rc = decide(r, op, obj, old, &d);
	if (rc < 0)
		forbidden_text(res, &d, why, wl);
	free(d.message);
	free(ns);
	r->ns = NULL;
	req_free(r);
	return rc;
}

/* ---- webhooks' matchConditions -------------------------------------------------------- */

struct vap_conds {
	struct expr *e;
	size_t n;
};

struct vap_conds *vap_conds_compile(const json_t *conds)
{
	size_t n;
	struct expr *e = compile_list(conds, "expression", &n);
	if (!e)
		return NULL;
	struct vap_conds *vc = malloc(sizeof(*vc));
	KB_REQUIRE(vc);
	vc->e = e;
	vc->n = n;
	return vc;
}

void vap_conds_free(struct vap_conds *vc)
{
	if (!vc)
		return;
	free_exprs(vc->e, vc->n);
	free(vc);
}

int vap_conds_eval(const struct vap_conds *vc, struct req *r, const char *op, const json_t *obj,
		   const json_t *old, char **msg)
{
	struct attrs a;
	attrs_init(&a, r, op, obj, old);
	static const struct policy none = {.name = ""};
	struct run run = {.a = &a, .p = &none, .budget = BUDGET};
	run.request = request_view(&a);
	cel_ctx_t *c = cel_ctx_new(BUDGET);
	bind_common(&run, c);
	int out = 1;
	*msg = NULL;
	for (size_t i = 0; i < vc->n; i++) {
		const char *m = NULL;
		int rc = eval_bool(&run, c, &vc->e[i], &m);
		if (rc == 0) {
			out = 0;
			break;
		}
		if (rc < 0 && !*msg &&
		    asprintf(msg, "expression '%s' resulted in error: %s", vc->e[i].src,
			     m ? m : "") < 0)
			*msg = NULL;
		if (rc < 0)
			out = -EIO;
	}
	if (out != -EIO) {
		free(*msg);
		*msg = NULL;
	}
	cel_ctx_free(c);
	json_decref(run.request);
	return out;
}
