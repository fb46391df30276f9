/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy
 * and ValidatingAdmissionPolicyBinding with kube-apiserver's field paths and
 * messages (pkg/apis/admissionregistration/validation: the policy's spec and
 * status, the binding's spec, and their Update forms). The rules, label
 * selectors and Go-formatted lists are the webhook walk's
 * (validate_webhook.c).
 *
 * CEL: every expression string of a policy (validations[].expression and
 * .messageExpression, auditAnnotations[].valueExpression,
 * variables[].expression, matchConditions[].expression) goes through
 * check_expr: what kube checks before compiling (presence, the audit
 * value's length), then the compile with cel-go's type checker and the
 * result type each kind of expression must give (compile_check).
 *
 * Not done here, unlike kube's strategies: the paramKind and paramRef
 * authorization checks (the writer may read the param kind).
 *
 * Threading: any thread (no global mutable state).
 */
#include "proxy/validation/validate.h"

#include <stdio.h>
#include <string.h>

#include "lib/json.h"
#include "proxy/cel/cel.h"
#include "lib/util.h"
#include "proxy/validation/vap_typecheck.h"

static const char *const failure_policies[] = {"Fail", "Ignore", NULL};
static const char *const match_policies[] = {"Equivalent", "Exact", NULL};
static const char *const reasons[] = {"Forbidden", "Invalid", "RequestEntityTooLarge", NULL};
static const char *const actions[] = {"Audit", "Deny", "Warn", NULL};
static const char *const not_found_actions[] = {"Deny", "Allow", NULL};
static const char *const condition_statuses[] = {"False", "True", "Unknown", NULL};

#define MAX_AUDIT_ANNOTATIONS 20
#define MAX_AUDIT_VALUE_EXPR  (5 * 1024)
#define MAX_MATCH_CONDITIONS  64
#define MAX_CONDITION_REASON  1024
#define MAX_CONDITION_MESSAGE (32 * 1024)

/* ---- helpers ------------------------------------------------------------------ */

/* A member that is present and not null (Go's non-nil pointer). */
static const json_t *member(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_null(v) ? NULL : v;
}

static const char *str_or_empty(const json_t *o, const char *key)
{
	const char *s = val_jstr(o, key);
	return s ? s : "";
}

static bool is_space(char ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/* Whether s is empty after Go's strings.TrimSpace (ASCII white space). */
static bool blank(const char *s)
{
	for (; s && *s; s++)
		if (!is_space(*s))
			return false;
	return true;
}

/* The length of s without its leading and trailing white space. */
static size_t trimmed_len(const char *s)
{
	size_t n = strlen(s);
	while (n && is_space(s[n - 1]))
		n--;
	size_t i = 0;
	while (i < n && is_space(s[i]))
		i++;
	return n - i;
}

static void add_invalid(json_t *c, const char *field, const char *v, const char *msg)
{
	char q[600];
	val_add(c, "FieldValueInvalid", field, "%s: %s", val_quote(v, q, sizeof(q)), msg);
}

/* One Invalid cause of `v` per message of the syntax check of `s`. */
static void check_syntax(json_t *c, enum names_syntax syn, const char *field, const char *s,
			 const char *v)
{
	const char *m[NAMES_MAXMSG];
	size_t n = names_syntax_msgs(syn, s, m);
	for (size_t i = 0; i < n; i++)
		add_invalid(c, field, v, m[i]);
}

/* The messages of a syntax check joined with "," as kube's strings.Join;
 * false when there are none. */
static bool joined_msgs(enum names_syntax syn, const char *s, char *out, size_t len)
{
	const char *m[NAMES_MAXMSG];
	size_t n = names_syntax_msgs(syn, s, m), at = 0;
	out[0] = '\0';
	for (size_t i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(out + at, len - at, "%s%s", i ? "," : "", m[i]);
	return n > 0;
}

static void check_enum(json_t *c, const json_t *o, const char *key, const char *field,
		       const char *const *vals)
{
	const json_t *v = member(o, key);
	if (!v)
		val_add(c, "FieldValueRequired", field, NULL);
	else if (!val_in_list(json_string_value(v), vals))
		val_not_supported(c, field, json_string_value(v) ? json_string_value(v) : "", vals);
}

/* A set of strings as a JSON object's keys; true when s was already there. */
static bool set_seen(json_t *set, const char *s)
{
	if (json_object_get(set, s))
		return true;
	json_object_set_new(set, s, json_true());
	return false;
}

static void duplicate(json_t *c, const char *field, const char *v)
{
	char q[600];
	val_add(c, "FieldValueDuplicate", field, "%s", val_quote(v, q, sizeof(q)));
}

/* ---- CEL expressions ------------------------------------------------------------ */

enum expr_kind {
	EXPR_VALIDATION,  /* validations[].expression: a bool */
	EXPR_MESSAGE,     /* validations[].messageExpression: a string */
	EXPR_AUDIT_VALUE, /* auditAnnotations[].valueExpression: a string or null */
	EXPR_VARIABLE,    /* variables[].expression: any value */
	EXPR_MATCH,       /* matchConditions[].expression: a bool */
};

/* What a compiler needs to know about the policy around an expression. */
struct expr_env {
	bool has_params;         /* paramKind set: `params` is declared */
	bool has_variables;      /* variables set: `variables` is declared (composition) */
	const json_t *old_spec;  /* the stored spec on update (kube's StoredExpressions
				 * environment for expressions it already holds), or NULL */
	const json_t *variables; /* the schema typing `variables` (variables_schema), or NULL */
	const json_t *request;   /* the schemas typing request and namespaceObject, or NULL */
	const json_t *ns;
};

/* kube's check of an expression's result type (plugin/cel's
 * CompileCELExpression against the expression's ReturnTypes): NULL when
 * type (cel-go's name) is one kind takes, else kube's reason. kube's
 * object and params are dyn too, but its request, namespaceObject and
 * variables have types that are dyn here: so dyn passes, where kube would
 * refuse it. */
static const char *result_type_error(enum expr_kind kind, const char *type)
{
	if (!strcmp(type, "dyn"))
		return NULL;
	switch (kind) {
	case EXPR_VALIDATION:
	case EXPR_MATCH: return strcmp(type, "bool") ? "must evaluate to bool" : NULL;
	case EXPR_MESSAGE: return strcmp(type, "string") ? "must evaluate to string" : NULL;
	case EXPR_AUDIT_VALUE:
		return strcmp(type, "string") && strcmp(type, "null_type")
			   ? "must evaluate to one of [string null_type]"
			   : NULL;
	case EXPR_VARIABLE: return NULL;
	}
	return NULL;
}

/* Whether expr is a string anywhere in the stored spec v: kube compiles the
 * expressions a stored policy already has in its StoredExpressions
 * environment, new ones in its NewExpressions one. */
static bool stored_expr(const json_t *v, const char *expr, int depth)
{
	size_t i;
	const char *k;
	const json_t *x;
	if (json_is_string(v))
		return !strcmp(json_string_value(v), expr);
	if (depth > 16)
		return false;
	if (json_is_array(v))
		json_array_foreach (v, i, x)
			if (stored_expr(x, expr, depth + 1))
				return true;
	if (json_is_object(v))
		json_object_foreach ((json_t *)v, k, x)
			if (stored_expr(x, expr, depth + 1))
				return true;
	return false;
}

/* Compiles expr in the policy's environment (object, oldObject, request,
 * params, namespaceObject, authorizer, and variables when the policy has
 * some). */
static cel_program_t *compile_env(const char *expr, const struct expr_env *env, char **err)
{
	const struct cel_var vars[] = {
	    {"object", NULL, false},
	    {"oldObject", NULL, false},
	    {"request", env ? env->request : NULL, false},
	    {"params", NULL, false},
	    {"namespaceObject", env ? env->ns : NULL, false},
	    {"authorizer", NULL, false},
	    {"variables", env ? env->variables : NULL, false},
	};
	bool stored = env && env->old_spec && stored_expr(env->old_spec, expr, 0);
	struct cel_env e = {vars, KB_ARRAY_SIZE(vars) - (env && env->has_variables ? 0 : 1),
			    (stored ? CEL_LIB_K8S : CEL_LIB_K8S_NEW) | CEL_LIB_AUTHZ, true};
	return cel_compile(expr, &e, 0, err);
}

/* Compiles a present expression as kube does: a compile error, or a result
 * of a type the expression may not give, is an Invalid cause with kube's
 * message. */
static void compile_check(json_t *c, const char *path, const char *expr, enum expr_kind kind,
			  const struct expr_env *env)
{
	char *err = NULL, msg[2048];
	cel_program_t *p = compile_env(expr, env, &err);
	const char *bad = p ? result_type_error(kind, cel_program_type(p)) : NULL;
	if (!p) {
		snprintf(msg, sizeof(msg), "compilation failed: %s", err ? err : "");
		add_invalid(c, path, expr, msg);
	} else if (bad) {
		add_invalid(c, path, expr, bad);
	}
	free(err);
	cel_program_free(p);
}

/* kube's composition of variables (vap_variables_schema) in the policy's
 * environment as written. New reference, or NULL when it has none. */
static json_t *variables_schema(const json_t *spec, const struct expr_env *env)
{
	struct cel_var vars[] = {
	    {"object", NULL, false},
	    {"oldObject", NULL, false},
	    {"request", env->request, false},
	    {"params", NULL, false},
	    {"namespaceObject", env->ns, false},
	    {"authorizer", NULL, false},
	    {"variables", NULL, false},
	};
	return vap_variables_schema(spec, vars, KB_ARRAY_SIZE(vars));
}

/*
 * The one place a policy's CEL expression is checked: `expr` (NULL when
 * absent) at `path`: kube's checks before compiling, with its messages,
 * then the compile (compile_check). kube compiles an audit value trimmed
 * and the others as written; an expression the stored policy already had
 * (env->old_spec) is compiled in kube's StoredExpressions environment
 * (with semver), a new one in its NewExpressions one (compile_env).
 */
static void check_expr(json_t *c, const char *path, const char *expr, enum expr_kind kind,
		       const struct expr_env *env)
{
	switch (kind) {
	case EXPR_VALIDATION:
	case EXPR_VARIABLE:
		if (blank(expr))
			val_add(c, "FieldValueRequired", path, "expression is not specified");
		break;
	case EXPR_MATCH:
		if (blank(expr))
			val_add(c, "FieldValueRequired", path, NULL);
		break;
	case EXPR_MESSAGE:
		if (expr && *expr && blank(expr)) {
			add_invalid(c, path, expr, "must be non-empty if specified");
			return;
		}
		break;
	case EXPR_AUDIT_VALUE:
		if (blank(expr))
			val_add(c, "FieldValueRequired", path, "valueExpression is not specified");
		else if (trimmed_len(expr) > MAX_AUDIT_VALUE_EXPR) {
			val_add(c, "FieldValueRequired", path, "must not exceed %d bytes in length",
				MAX_AUDIT_VALUE_EXPR);
			return;
		}
		break;
	}
	if (!blank(expr))
		compile_check(c, path, expr, kind, env);
}

/* ---- match resources ------------------------------------------------------------ */

/* validateNamedRuleWithOperations */
static void named_rule(json_t *c, const json_t *rule, const char *base)
{
	char f[VAL_PATHLEN];
	const json_t *names = json_object_get(rule, "resourceNames");
	json_t *seen = json_object();
	for (size_t i = 0; i < json_array_size(names); i++) {
		const char *n = json_string_value(json_array_get(names, i));
		n = n ? n : "";
		val_path(f, "%s.resourceNames[%zu]", base, i);
		check_syntax(c, NAMES_PATH_SEGMENT, f, n, n);
		if (set_seen(seen, n))
			duplicate(c, f, n);
	}
	json_decref(seen);
	val_rule_with_operations(c, rule, base);
}

/* validateMatchResources (the caller checks mc is set) */
static void match_resources(json_t *c, const json_t *mc, const char *base)
{
	char f[VAL_PATHLEN];
	check_enum(c, mc, "matchPolicy", val_path(f, "%s.matchPolicy", base), match_policies);
	const char *sels[] = {"namespaceSelector", "objectSelector"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(sels); i++) {
		const json_t *sel = member(mc, sels[i]);
		val_path(f, "%s.%s", base, sels[i]);
		if (!sel)
			val_add(c, "FieldValueRequired", f, NULL);
		else
			val_label_selector(c, sel, f, false);
	}
	const char *lists[] = {"resourceRules", "excludeResourceRules"};
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		const json_t *rules = json_object_get(mc, lists[l]);
		for (size_t i = 0; i < json_array_size(rules); i++)
			named_rule(c, json_array_get(rules, i),
				   val_path(f, "%s.%s[%zu]", base, lists[l], i));
	}
}

/* ---- the policy's spec ------------------------------------------------------------ */

/* validateParamKind's apiVersion: kube's parseGroupVersion, then the group
 * as a DNS subdomain and the version as a DNS-1035 label. */
static void param_api_version(json_t *c, const char *av, const char *f)
{
	char group[256], msg[1024];
	const char *slash = strchr(av, '/');
	if (slash && strchr(slash + 1, '/')) {
		snprintf(msg, sizeof(msg), "unexpected GroupVersion string: %s", av);
		add_invalid(c, f, av, msg);
		return;
	}
	const char *version = strcmp(av, "/") == 0 ? "" : slash ? slash + 1 : av;
	snprintf(group, sizeof(group), "%.*s", slash ? (int)(slash - av) : 0, av);
	if (group[0] && joined_msgs(NAMES_DNS1123_SUBDOMAIN, group, msg, sizeof(msg)))
		add_invalid(c, f, group, msg);
	if (!*version)
		add_invalid(c, f, av, "version must be specified");
	else if (joined_msgs(NAMES_DNS1035_LABEL, version, msg, sizeof(msg)))
		add_invalid(c, f, version, msg);
}

/* validateParamKind */
static void param_kind(json_t *c, const json_t *pk, const char *base)
{
	char f[VAL_PATHLEN], lower[256], msg[1024];
	const char *av = str_or_empty(pk, "apiVersion"), *kind = str_or_empty(pk, "kind");
	val_path(f, "%s.apiVersion", base);
	if (!*av)
		val_add(c, "FieldValueRequired", f, NULL);
	else
		param_api_version(c, av, f);
	val_path(f, "%s.kind", base);
	if (!*kind) {
		val_add(c, "FieldValueRequired", f, NULL);
		return;
	}
	size_t n = 0;
	for (; kind[n] && n + 1 < sizeof(lower); n++)
		lower[n] = (char)(kind[n] >= 'A' && kind[n] <= 'Z' ? kind[n] - 'A' + 'a' : kind[n]);
	lower[n] = '\0';
	if (joined_msgs(NAMES_DNS1035_LABEL, lower, msg, sizeof(msg))) {
		char full[1200];
		snprintf(full, sizeof(full), "may have mixed case, but should otherwise match: %s",
			 msg);
		add_invalid(c, f, kind, full);
	}
}

/* validateMatchConditions */
static void match_conditions(json_t *c, const json_t *mcs, const char *base,
			     const struct expr_env *env)
{
	char f[VAL_PATHLEN];
	size_t n = json_array_size(mcs);
	if (n > MAX_MATCH_CONDITIONS)
		val_add(c, "FieldValueTooMany", base, "%zu: must have at most %d items", n,
			MAX_MATCH_CONDITIONS);
	json_t *names = json_object();
	for (size_t i = 0; i < n; i++) {
		const json_t *mc = json_array_get(mcs, i);
		const char *name = str_or_empty(mc, "name");
		check_expr(c, val_path(f, "%s[%zu].expression", base, i),
			   val_jstr(mc, "expression"), EXPR_MATCH, env);
		val_path(f, "%s[%zu].name", base, i);
		if (!*name)
			val_add(c, "FieldValueRequired", f, NULL);
		else
			check_syntax(c, NAMES_QUALIFIED_NAME, f, name, name);
		if (*name && set_seen(names, name))
			duplicate(c, f, name);
	}
	json_decref(names);
}

void val_match_conditions(json_t *c, const json_t *mcs, const char *base)
{
	json_t *request = vap_request_schema(), *ns = vap_namespace_schema();
	const struct expr_env env = {.request = request, .ns = ns};
	match_conditions(c, mcs, base, &env);
	json_decref(request);
	json_decref(ns);
}

/* kube's isCELIdentifier: [_a-zA-Z][_a-zA-Z0-9]*, not a reserved word */
static bool cel_identifier(const char *s)
{
	static const char *const reserved[] = {
	    "true",      "false",  "null",     "in",   "as",     "break", "const", "continue",
	    "else",      "for",    "function", "if",   "import", "let",   "loop",  "package",
	    "namespace", "return", "var",      "void", "while",  NULL};
	if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return false;
	for (const char *p = s; *p; p++)
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9')))
			return false;
	return !val_in_list(s, reserved);
}

/* validateVariable */
static void variable(json_t *c, const json_t *v, const char *base, const struct expr_env *env)
{
	char f[VAL_PATHLEN];
	const char *name = str_or_empty(v, "name");
	val_path(f, "%s.name", base);
	if (blank(name))
		val_add(c, "FieldValueRequired", f, "name is not specified");
	else if (!cel_identifier(name))
		add_invalid(c, f, name, "name is not a valid CEL identifier");
	check_expr(c, val_path(f, "%s.expression", base), val_jstr(v, "expression"), EXPR_VARIABLE,
		   env);
}

/* A line break inside s once its surrounding white space is trimmed. */
static bool inner_line_break(const char *s)
{
	size_t n = strlen(s), i = 0;
	while (n && is_space(s[n - 1]))
		n--;
	while (i < n && is_space(s[i]))
		i++;
	for (; i < n; i++)
		if (s[i] == '\r' || s[i] == '\n')
			return true;
	return false;
}

/* validateValidation */
static void validation(json_t *c, const json_t *v, const char *base, const struct expr_env *env)
{
	char f[VAL_PATHLEN];
	check_expr(c, val_path(f, "%s.expression", base), val_jstr(v, "expression"),
		   EXPR_VALIDATION, env);
	check_expr(c, val_path(f, "%s.messageExpression", base), val_jstr(v, "messageExpression"),
		   EXPR_MESSAGE, env);
	const char *msg = str_or_empty(v, "message");
	val_path(f, "%s.message", base);
	if (*msg && blank(msg))
		add_invalid(c, f, msg, "message must be non-empty if specified");
	else if (inner_line_break(msg))
		add_invalid(c, f, msg, "message must not contain line breaks");
	const json_t *reason = member(v, "reason");
	if (reason && !val_in_list(json_string_value(reason), reasons))
		val_not_supported(c, val_path(f, "%s.reason", base),
				  json_string_value(reason) ? json_string_value(reason) : "",
				  reasons);
}

/* Go's %#v of []admissionregistration.AuditAnnotation */
static void too_many_audit_annotations(json_t *c, const json_t *aas, const char *base)
{
	struct kb_buf b = {0};
	char k[600], v[600];
	kb_buf_puts(&b, "[]admissionregistration.AuditAnnotation{");
	for (size_t i = 0; i < json_array_size(aas); i++) {
		const json_t *a = json_array_get(aas, i);
		kb_buf_printf(&b,
			      "%sadmissionregistration.AuditAnnotation{Key:%s, ValueExpression:%s}",
			      i ? ", " : "", val_quote(str_or_empty(a, "key"), k, sizeof(k)),
			      val_quote(str_or_empty(a, "valueExpression"), v, sizeof(v)));
	}
	kb_buf_puts(&b, "}");
	val_add(c, "FieldValueInvalid", base, "%s: must not have more than %d auditAnnotations",
		b.data ? b.data : "", MAX_AUDIT_ANNOTATIONS);
	kb_buf_free(&b);
}

/* validateAuditAnnotation: the key is checked as "<policy name>/<key>" */
static void audit_annotation(json_t *c, const json_t *a, const char *policy, const char *base,
			     const struct expr_env *env)
{
	char f[VAL_PATHLEN];
	const char *key = str_or_empty(a, "key");
	val_path(f, "%s.key", base);
	if (*policy) {
		struct kb_buf b = {0};
		kb_buf_printf(&b, "%s/%s", policy, key);
		check_syntax(c, NAMES_QUALIFIED_NAME, f, b.data ? b.data : "",
			     b.data ? b.data : "");
		kb_buf_free(&b);
	} else {
		add_invalid(c, f, key, "requires metadata.name be non-empty");
	}
	check_expr(c, val_path(f, "%s.valueExpression", base), val_jstr(a, "valueExpression"),
		   EXPR_AUDIT_VALUE, env);
}

static void audit_annotations(json_t *c, const json_t *aas, const char *policy,
			      const struct expr_env *env)
{
	char f[VAL_PATHLEN];
	if (json_array_size(aas) > MAX_AUDIT_ANNOTATIONS)
		too_many_audit_annotations(c, aas, "spec.auditAnnotations");
	json_t *keys = json_object();
	for (size_t i = 0; i < json_array_size(aas); i++) {
		const json_t *a = json_array_get(aas, i);
		audit_annotation(c, a, policy, val_path(f, "spec.auditAnnotations[%zu]", i), env);
		if (set_seen(keys, str_or_empty(a, "key")))
			duplicate(c, val_path(f, "spec.auditAnnotations[%zu].key", i),
				  str_or_empty(a, "key"));
	}
	json_decref(keys);
}

/* The expressions: variables, then validations and audit annotations (at
 * least one of the two). */
static void expressions(json_t *c, const json_t *spec, const char *policy,
			const struct expr_env *env)
{
	char f[VAL_PATHLEN];
	const json_t *vars = json_object_get(spec, "variables");
	for (size_t i = 0; i < json_array_size(vars); i++)
		variable(c, json_array_get(vars, i), val_path(f, "spec.variables[%zu]", i), env);
	const json_t *vals = json_object_get(spec, "validations");
	const json_t *aas = json_object_get(spec, "auditAnnotations");
	if (json_array_size(vals) == 0 && json_array_size(aas) == 0) {
		const char *m = "validations or auditAnnotations must contain at least one item";
		val_add(c, "FieldValueRequired", "spec.validations", "%s", m);
		val_add(c, "FieldValueRequired", "spec.auditAnnotations", "%s", m);
		return;
	}
	for (size_t i = 0; i < json_array_size(vals); i++)
		validation(c, json_array_get(vals, i), val_path(f, "spec.validations[%zu]", i),
			   env);
	audit_annotations(c, aas, policy, env);
}

/* ---- the policy's status ------------------------------------------------------------ */

/* A condition's reason: [A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])? */
static bool condition_reason_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	for (size_t i = 1; i < n; i++) {
		char ch = s[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9') || ch == '_';
		if (!alnum && !((ch == ',' || ch == ':') && i + 1 < n))
			return false;
	}
	return true;
}

static void condition_reason(json_t *c, const char *reason, const char *f)
{
	if (!*reason) {
		val_add(c, "FieldValueRequired", f, "must be set");
		return;
	}
	if (!condition_reason_ok(reason))
		add_invalid(
		    c, f, reason,
		    "a condition reason must start with alphabetic character, optionally "
		    "followed by a string of alphanumeric characters or '_,:', and must end "
		    "with an alphanumeric character or '_'");
	if (strlen(reason) > MAX_CONDITION_REASON)
		val_add(c, "FieldValueTooLong", f, "may not be more than %d bytes",
			MAX_CONDITION_REASON);
}

/* metav1validation.ValidateCondition */
static void condition(json_t *c, const json_t *cond, const char *base)
{
	char f[VAL_PATHLEN];
	const char *type = str_or_empty(cond, "type"), *status = str_or_empty(cond, "status");
	check_syntax(c, NAMES_QUALIFIED_NAME, val_path(f, "%s.type", base), type, type);
	if (!val_in_list(status, condition_statuses))
		val_not_supported(c, val_path(f, "%s.status", base), status, condition_statuses);
	const json_t *og = json_object_get(cond, "observedGeneration");
	if (json_is_integer(og) && json_integer_value(og) < 0)
		val_add(c, "FieldValueInvalid", val_path(f, "%s.observedGeneration", base),
			"%lld: must be greater than or equal to zero",
			(long long)json_integer_value(og));
	if (!*str_or_empty(cond, "lastTransitionTime"))
		val_add(c, "FieldValueRequired", val_path(f, "%s.lastTransitionTime", base),
			"must be set");
	condition_reason(c, str_or_empty(cond, "reason"), val_path(f, "%s.reason", base));
	if (strlen(str_or_empty(cond, "message")) > MAX_CONDITION_MESSAGE)
		val_add(c, "FieldValueTooLong", val_path(f, "%s.message", base),
			"may not be more than %d bytes", MAX_CONDITION_MESSAGE);
}

/* validateValidatingAdmissionPolicyStatus (typeChecking, conditions); the
 * fieldRef is not parsed as kube's JSONPath, only required. */
static void policy_status(json_t *c, const json_t *status)
{
	char f[VAL_PATHLEN];
	const json_t *ws = json_object_get(member(status, "typeChecking"), "expressionWarnings");
	for (size_t i = 0; i < json_array_size(ws); i++) {
		const json_t *w = json_array_get(ws, i);
		if (!*str_or_empty(w, "warning"))
			val_add(
			    c, "FieldValueRequired",
			    val_path(f, "status.typeChecking.expressionWarnings[%zu].warning", i),
			    NULL);
		if (blank(str_or_empty(w, "fieldRef")))
			val_add(
			    c, "FieldValueRequired",
			    val_path(f, "status.typeChecking.expressionWarnings[%zu].fieldRef", i),
			    NULL);
	}
	const json_t *conds = json_object_get(status, "conditions");
	json_t *types = json_object();
	for (size_t i = 0; i < json_array_size(conds); i++) {
		const json_t *cond = json_array_get(conds, i);
		condition(c, cond, val_path(f, "status.conditions[%zu]", i));
		if (set_seen(types, str_or_empty(cond, "type")))
			duplicate(c, val_path(f, "status.conditions[%zu].type", i),
				  str_or_empty(cond, "type"));
	}
	json_decref(types);
}

/* ---- the kinds ------------------------------------------------------------------ */

/* kube's ignoreValidatingAdmissionPolicyMatchConditions: on update, the
 * match conditions are not checked again when neither they nor paramKind
 * changed. */
static bool skip_match_conditions(const json_t *spec, const json_t *old)
{
	const json_t *os = json_object_get(old, "spec");
	return old && kb_json_same(member(spec, "paramKind"), member(os, "paramKind")) &&
	       kb_json_same(member(spec, "matchConditions"), member(os, "matchConditions"));
}

void val_admission_policy(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			  json_t *c)
{
	(void)r;
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *pk = member(spec, "paramKind"), *mc = member(spec, "matchConstraints");
	struct expr_env env = {
	    .has_params = pk != NULL,
	    .has_variables = json_array_size(json_object_get(spec, "variables")) > 0,
	    .old_spec = old ? json_object_get(old, "spec") : NULL,
	};
	json_t *request = vap_request_schema(), *ns = vap_namespace_schema();
	env.request = request;
	env.ns = ns;
	json_t *vars = variables_schema(spec, &env);
	env.variables = vars;
	check_enum(c, spec, "failurePolicy", "spec.failurePolicy", failure_policies);
	if (pk)
		param_kind(c, pk, "spec.paramKind");
	if (!mc) {
		val_add(c, "FieldValueRequired", "spec.matchConstraints", NULL);
	} else {
		match_resources(c, mc, "spec.matchConstraints");
		if (json_array_size(json_object_get(mc, "resourceRules")) == 0)
			val_add(c, "FieldValueRequired", "spec.matchConstraints.resourceRules",
				NULL);
	}
	if (!skip_match_conditions(spec, old))
		match_conditions(c, json_object_get(spec, "matchConditions"),
				 "spec.matchConditions", &env);
	const json_t *meta = json_object_get(obj, "metadata");
	expressions(c, spec, str_or_empty(meta, "name"), &env);
	json_decref(vars);
	json_decref(request);
	json_decref(ns);
	policy_status(c, json_object_get(obj, "status"));
}

/* validateParamRef */
static void param_ref(json_t *c, const json_t *pr)
{
	const char *name = str_or_empty(pr, "name");
	const json_t *sel = member(pr, "selector");
	const char *excl = "name and selector are mutually exclusive";
	if (*name) {
		check_syntax(c, NAMES_PATH_SEGMENT, "spec.paramRef.name", name, name);
		if (sel)
			val_add(c, "FieldValueForbidden", "spec.paramRef.name", "%s", excl);
	}
	if (sel) {
		val_label_selector(c, sel, "spec.paramRef.selector", false);
		if (*name)
			val_add(c, "FieldValueForbidden", "spec.paramRef.selector", "%s", excl);
	}
	if (!*name && !sel)
		val_add(c, "FieldValueRequired", "spec.paramRef",
			"one of name or selector must be specified");
	const char *pnf = str_or_empty(pr, "parameterNotFoundAction");
	if (!*pnf)
		val_add(c, "FieldValueRequired", "spec.paramRef.parameterNotFoundAction", NULL);
	else if (!val_in_list(pnf, not_found_actions))
		val_not_supported(c, "spec.paramRef.parameterNotFoundAction", pnf,
				  not_found_actions);
}

/* validateValidationActions */
static void validation_actions(json_t *c, const json_t *va)
{
	char f[VAL_PATHLEN];
	json_t *seen = json_object();
	for (size_t i = 0; i < json_array_size(va); i++) {
		const char *a = json_string_value(json_array_get(va, i));
		a = a ? a : "";
		val_path(f, "spec.validationActions[%zu]", i);
		if (!val_in_list(a, actions))
			val_not_supported(c, f, a, actions);
		if (set_seen(seen, a))
			duplicate(c, f, a);
	}
	if (json_object_get(seen, "Deny") && json_object_get(seen, "Warn"))
		val_invalid_strings(c, "spec.validationActions",
				    "[]admissionregistration.ValidationAction", va,
				    "must not contain both Deny and Warn (repeating the same "
				    "validation failure information in the API response and "
				    "headers serves no purpose)");
	if (json_object_size(seen) == 0)
		val_add(c, "FieldValueRequired", "spec.validationActions",
			"at least one validation action is required");
	json_decref(seen);
}

void val_admission_policy_binding(const struct proxy_resource *r, const json_t *obj,
				  const json_t *old, json_t *c)
{
	(void)r;
	(void)old; /* kube's update check is the create one */
	const json_t *spec = json_object_get(obj, "spec");
	const char *policy = str_or_empty(spec, "policyName");
	if (!*policy)
		val_add(c, "FieldValueRequired", "spec.policyName", NULL);
	else
		check_syntax(c, NAMES_DNS1123_SUBDOMAIN, "spec.policyName", policy, policy);
	const json_t *pr = member(spec, "paramRef"), *mr = member(spec, "matchResources");
	if (pr)
		param_ref(c, pr);
	if (mr) /* kube's path has this spelling */
		match_resources(c, mr, "spec.matchResouces");
	validation_actions(c, json_object_get(spec, "validationActions"));
}
