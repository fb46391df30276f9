/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ValidatingAdmissionPolicy type checking, as kube's policy status
 * controller does it (its TypeChecker): the kinds a policy's resource
 * rules name (no wildcards, at most 10, sorted), each one's OpenAPI schema
 * typing `object` and `oldObject` (the paramKind's typing `params`,
 * kube's AdmissionRequest `request`, Namespace's `namespaceObject`, and
 * each variable's expression its `variables.<name>`),
 * and every validation's expression and messageExpression compiled with
 * cel-go's checker against each; the errors become
 * status.typeChecking.expressionWarnings, with status.observedGeneration.
 * The controller that writes the status is proxy/controllers/vap_status.c.
 *
 * Threading: loop thread (reads the resource table).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/cel/cel.h"
#include "lib/util.h"
#include "proxy/model/openapi.h"
#include "proxy/model/resource.h"
#include "proxy/validation/vap_typecheck.h"

#define MAX_TYPES 10 /* kube's maxTypesToCheck */

struct gvk {
	const struct proxy_resource *r;
	json_t *schema; /* owned */
};

struct kinds {
	struct gvk v[MAX_TYPES];
	size_t n;
};

/* A rule's list (apiGroups, apiVersions, resources) sorted, or NULL when
 * it is empty or holds a wildcard: kube checks no kind for it. New
 * reference. */
static json_t *sorted_list(const json_t *rule, const char *key)
{
	const json_t *l = json_object_get(rule, key);
	json_t *out = json_array();
	size_t i;
	const json_t *v;
	json_array_foreach (l, i, v) {
		const char *s = json_string_value(v);
		if (!s || strchr(s, '*')) {
			json_decref(out);
			return NULL;
		}
		size_t at = 0;
		while (at < json_array_size(out) &&
		       strcmp(json_string_value(json_array_get(out, at)), s) < 0)
			at++;
		json_array_insert_new(out, at, json_string(s));
	}
	if (!json_array_size(out)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static int gvk_cmp(const struct proxy_resource *a, const struct proxy_resource *b)
{
	int c = strcmp(a->group, b->group);
	if (!c)
		c = strcmp(a->version, b->version);
	return c ? c : strcmp(a->kind, b->kind);
}

static void add_kind(struct kinds *k, const struct proxy_resource *r)
{
	size_t at = 0;
	while (at < k->n && gvk_cmp(k->v[at].r, r) < 0)
		at++;
	if (k->n == MAX_TYPES || (at < k->n && gvk_cmp(k->v[at].r, r) == 0))
		return;
	memmove(&k->v[at + 1], &k->v[at], (k->n - at) * sizeof(k->v[0]));
	k->v[at].r = r;
	k->v[at].schema = openapi_kind_schema(r);
	k->n++;
}

/* kube's typesToCheck: the kinds of spec.matchConstraints.resourceRules. */
static void kinds_of(const json_t *policy, struct kinds *k)
{
	const json_t *rules = json_object_get(
	    json_object_get(json_object_get(policy, "spec"), "matchConstraints"), "resourceRules");
	size_t i;
	const json_t *rule;
	json_array_foreach (rules, i, rule) {
		json_t *gs = sorted_list(rule, "apiGroups"), *vs = sorted_list(rule, "apiVersions"),
		       *rs = sorted_list(rule, "resources");
		for (size_t g = 0; gs && vs && rs && g < json_array_size(gs); g++)
			for (size_t v = 0; v < json_array_size(vs); v++)
				for (size_t r = 0; r < json_array_size(rs); r++) {
					const struct proxy_resource *row =
					    resource_find(json_string_value(json_array_get(gs, g)),
							  json_string_value(json_array_get(vs, v)),
							  json_string_value(json_array_get(rs, r)));
					if (row)
						add_kind(k, row);
				}
		json_decref(gs);
		json_decref(vs);
		json_decref(rs);
	}
}

/* The paramKind's schema (new reference), or NULL (dyn). */
static json_t *param_schema(const json_t *spec)
{
	const json_t *pk = json_object_get(spec, "paramKind");
	const char *av = json_string_value(json_object_get(pk, "apiVersion"));
	const char *kind = json_string_value(json_object_get(pk, "kind"));
	if (!av || !kind)
		return NULL;
	const char *slash = strchr(av, '/');
	char group[256];
	snprintf(group, sizeof(group), "%.*s", slash ? (int)(slash - av) : 0, av);
	const char *version = slash ? slash + 1 : av;
	const struct proxy_resource *r = resource_find_kind(group, kind);
	if (!r || strcmp(r->version, version) != 0)
		return NULL;
	return openapi_kind_schema(r);
}

/* The OpenAPI schema of a value of CEL type t (cel-go's name, n bytes):
 * what types variables.<name> as kube's composition types it by the
 * variable's expression; {} (dyn) where JSON has no such type. New
 * reference. */
static json_t *schema_of_type(const char *t, size_t n)
{
	static const struct {
		const char *name, *type, *format;
	} prims[] = {
	    {"bool", "boolean", NULL},
	    {"int", "integer", NULL},
	    {"double", "number", NULL},
	    {"string", "string", NULL},
	    {"bytes", "string", "byte"},
	    {"google.protobuf.Timestamp", "string", "date-time"},
	    {"google.protobuf.Duration", "string", "duration"},
	};
	for (size_t k = 0; k < KB_ARRAY_SIZE(prims); k++)
		if (strlen(prims[k].name) == n && !strncmp(prims[k].name, t, n))
			return json_pack("{s:s, s:s*}", "type", prims[k].type, "format",
					 prims[k].format);
	if (n > 6 && !strncmp(t, "list(", 5) && t[n - 1] == ')')
		return json_pack("{s:s, s:o}", "type", "array", "items",
				 schema_of_type(t + 5, n - 6));
	if (n > 13 && !strncmp(t, "map(string, ", 12) && t[n - 1] == ')')
		return json_pack("{s:s, s:o}", "type", "object", "additionalProperties",
				 schema_of_type(t + 12, n - 13));
	return json_object();
}

/* The type of a variable: the schema its value was typed by, else one
 * for its CEL type. New reference. */
static json_t *variable_type(const cel_program_t *p)
{
	const json_t *s = p ? cel_program_schema(p) : NULL;
	const char *t = p ? cel_program_type(p) : "dyn";
	return s ? json_deep_copy(s) : schema_of_type(t, strlen(t));
}

json_t *vap_variables_schema(const json_t *spec, struct cel_var *vars, size_t nvars)
{
	const json_t *list = json_object_get(spec, "variables");
	size_t at = nvars;
	for (size_t i = 0; i < nvars; i++)
		if (!strcmp(vars[i].name, "variables"))
			at = i;
	if (!json_array_size(list) || at == nvars)
		return NULL;
	json_t *s = json_pack("{s:s, s:{}}", "type", "object", "properties");
	json_t *props = json_object_get(s, "properties");
	const json_t *saved = vars[at].schema;
	vars[at].schema = s;
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *v = json_array_get(list, i);
		const char *name = json_string_value(json_object_get(v, "name"));
		const char *expr = json_string_value(json_object_get(v, "expression"));
		if (!name || !*name || !expr)
			continue;
		struct cel_env env = {vars, nvars, CEL_LIB_K8S | CEL_LIB_AUTHZ, true};
		char *err = NULL;
		cel_program_t *p = cel_compile(expr, &env, 0, &err);
		json_object_set_new(props, name, variable_type(p));
		free(err);
		cel_program_free(p);
	}
	vars[at].schema = saved;
	return s;
}

json_t *vap_request_schema(void)
{
	const char *gvk = "{\"type\":\"object\",\"properties\":{\"group\":{\"type\":\"string\"},"
			  "\"version\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\"}}}";
	const char *gvr = "{\"type\":\"object\",\"properties\":{\"group\":{\"type\":\"string\"},"
			  "\"version\":{\"type\":\"string\"},\"resource\":{\"type\":\"string\"}}}";
	json_t *k = json_loads(gvk, 0, NULL), *r = json_loads(gvr, 0, NULL);
	json_t *s = json_pack(
	    "{s:s, s:{s:O, s:O, s:{s:s}, s:O, s:O, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, "
	    "s:{s:s, s:{s:{s:s}, s:{s:s}, s:{s:s, s:{s:s}}, s:{s:s, s:{s:s, s:{s:s}}}}}, "
	    "s:{s:s}, s:{}}}",
	    "type", "object", "properties", "kind", k, "resource", r, "subResource", "type",
	    "string", "requestKind", k, "requestResource", r, "requestSubResource", "type",
	    "string", "name", "type", "string", "namespace", "type", "string", "operation", "type",
	    "string", "userInfo", "type", "object", "properties", "username", "type", "string",
	    "uid", "type", "string", "groups", "type", "array", "items", "type", "string", "extra",
	    "type", "object", "additionalProperties", "type", "array", "items", "type", "string",
	    "dryRun", "type", "boolean", "options");
	json_decref(k);
	json_decref(r);
	return s;
}

json_t *vap_namespace_schema(void)
{
	const struct proxy_resource *r = resource_find("", "v1", "namespaces");
	return r ? openapi_kind_schema(r) : NULL;
}

/* The errors of expr against each kind, as kube writes them: "<group>/<version>,
 * Kind=<kind>: <cel-go's errors>\n" each, joined by a line break; NULL when
 * none (malloc'd). */
struct typed {
	const json_t *spec;
	const json_t *params, *request, *ns; /* schemas, or NULL (dyn) */
	bool variables;
};

static char *check_expression(const char *expr, const struct kinds *k, const struct typed *t)
{
	struct kb_buf b = {0};
	bool variables = t->variables;
	for (size_t i = 0; i < k->n; i++) {
		struct cel_var vars[] = {
		    {"object", k->v[i].schema, false}, {"oldObject", k->v[i].schema, false},
		    {"request", t->request, false},    {"params", t->params, false},
		    {"namespaceObject", t->ns, false}, {"authorizer", NULL, false},
		    {"variables", NULL, false},
		};
		json_t *vs =
		    variables ? vap_variables_schema(t->spec, vars, KB_ARRAY_SIZE(vars)) : NULL;
		vars[KB_ARRAY_SIZE(vars) - 1].schema = vs;
		struct cel_env env = {vars, KB_ARRAY_SIZE(vars) - (variables ? 0 : 1),
				      CEL_LIB_K8S | CEL_LIB_AUTHZ, true};
		char *err = NULL;
		cel_program_t *p = cel_compile(expr, &env, 0, &err);
		if (!p && err) {
			const struct proxy_resource *r = k->v[i].r;
			kb_buf_printf(&b, "%s%s/%s, Kind=%s: %s\n", b.len ? "\n" : "", r->group,
				      r->version, r->kind, err);
		}
		free(err);
		cel_program_free(p);
		json_decref(vs);
	}
	return b.data;
}

static void warn(json_t *warnings, const char *field, char *msg)
{
	if (msg)
		json_array_append_new(warnings,
				      json_pack("{s:s, s:s}", "fieldRef", field, "warning", msg));
	free(msg);
}

json_t *vap_type_check(const json_t *policy)
{
	const json_t *spec = json_object_get(policy, "spec");
	struct kinds k = {.n = 0};
	kinds_of(policy, &k);
	json_t *params = param_schema(spec), *request = vap_request_schema();
	json_t *ns = vap_namespace_schema();
	const struct typed t = {spec, params, request, ns,
				json_array_size(json_object_get(spec, "variables")) > 0};
	json_t *warnings = json_array();
	const json_t *vals = json_object_get(spec, "validations");
	for (size_t i = 0; i < json_array_size(vals) && k.n; i++) {
		const json_t *v = json_array_get(vals, i);
		const char *e = json_string_value(json_object_get(v, "expression"));
		const char *m = json_string_value(json_object_get(v, "messageExpression"));
		char f[96];
		snprintf(f, sizeof(f), "spec.validations[%zu].expression", i);
		if (e && *e)
			warn(warnings, f, check_expression(e, &k, &t));
		snprintf(f, sizeof(f), "spec.validations[%zu].messageExpression", i);
		if (m && *m)
			warn(warnings, f, check_expression(m, &k, &t));
	}
	for (size_t i = 0; i < k.n; i++)
		json_decref(k.v[i].schema);
	json_decref(params);
	json_decref(request);
	json_decref(ns);
	const json_t *old = json_object_get(policy, "status");
	json_t *status = json_is_object(old) ? json_deep_copy(old) : json_object();
	json_t *gen = json_object_get(json_object_get(policy, "metadata"), "generation");
	json_object_set_new(status, "observedGeneration",
			    json_integer(json_is_integer(gen) ? json_integer_value(gen) : 0));
	json_t *tc = json_object();
	if (json_array_size(warnings))
		json_object_set(tc, "expressionWarnings", warnings);
	json_decref(warnings);
	json_object_set_new(status, "typeChecking", tc);
	return status;
}
