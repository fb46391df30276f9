/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CRD validation rules (x-kubernetes-validations): each rule is a CEL
 * expression over `self` (the value at its place in the schema) and, for a
 * transition rule, `oldSelf` (the value it replaces), as kube-apiserver's
 * apiextensions CEL validator runs them.
 *
 * When a CRD is written, every rule list in each version's schema is
 * checked (crd_rules_check: rule present, message without line breaks,
 * reason, fieldPath, compile errors in cel-go's words). When a CRD row is
 * built, its rules are compiled once (crd_rules_compile) and kept with the
 * row; each custom object write then evaluates them (crd_rules_eval) on the
 * object and its previous version, walking only the parts of the schema
 * that hold rules.
 *
 * Kube's semantics kept here:
 * - null values are not validated; a rule sees its node's value typed by
 *   the node's schema; at the object's root (and in embedded resources)
 *   self also has apiVersion, kind and metadata.name/generateName;
 * - transition rules run only where the old value can be correlated:
 *   through properties and additionalProperties of maps that are not
 *   atomic, and items of map lists by their keys; optionalOldSelf rules run
 *   always, with oldSelf an optional;
 * - ratcheting: a failing rule that does not read oldSelf, on a value equal
 *   to its old value, is a warning, not an error (CRDValidationRatcheting);
 * - each rule may cost 1,000,000 and the whole object 10,000,000 (kube's
 *   PerCallLimit and RuntimeCELCostBudget); past them kube's messages end
 *   the validation;
 * - messageExpression replaces the message when it gives a non-empty
 *   one-line string, reason picks the cause type, fieldPath the field.
 *
 * Threading: the loop thread (compiled programs are read-only).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/cel/cel_impl.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/validation/crd_validate.h"
#include "proxy/validation/validate.h"

#define PATHLEN        VAL_PATHLEN
#define PER_CALL_LIMIT 1000000ull
#define BUDGET         10000000ull

struct rule {
	cel_program_t *prog, *msg_prog; /* msg_prog NULL: no messageExpression */
	const json_t *def;              /* the rule's JSON in the schema (borrowed) */
	char *field;                    /* normalized fieldPath, or NULL */
	bool uses_old, optional_old;
};

struct node {
	const json_t *schema; /* the schema node (borrowed from the row's schema) */
	json_t *typed;        /* the schema CEL types self by (root: with object meta) */
	struct rule *rules;
	size_t n;
};

struct crd_rules {
	json_t *schema; /* reference kept on the version's schema */
	struct node *nodes;
	size_t n;
	const json_t **spine; /* schema nodes holding rules or leading to them */
	size_t nspine;
};

static const char *js(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

static bool has_newline(const char *s)
{
	return strpbrk(s, "\r\n") != NULL;
}

/* kube's strings.TrimSpace emptiness */
static bool blank(const char *s)
{
	for (; *s; s++)
		if (!strchr(" \t\r\n\v\f", *s))
			return false;
	return true;
}

/* Go's %q of s (one at a time: a static buffer; loop thread). */
static const char *quote(const char *s)
{
	static char buf[1200];
	return val_quote(s, buf, sizeof(buf));
}

/* ---- the environment ---------------------------------------------------------- */

/* The schema CEL types `self` by: at a resource's root (the object, or an
 * embedded resource) self also reaches apiVersion, kind and metadata's name
 * and generateName, as kube's WithTypeAndObjectMeta. New reference. */
static json_t *typed_schema(const json_t *s, bool root)
{
	if (!root && !json_is_true(json_object_get(s, "x-kubernetes-embedded-resource")))
		return json_incref((json_t *)s);
	json_t *t = json_deep_copy(s), *props = json_object_get(t, "properties");
	if (!json_is_object(props)) {
		props = json_object();
		json_object_set_new(t, "properties", props);
	}
	json_object_set_new(props, "apiVersion", json_pack("{s:s}", "type", "string"));
	json_object_set_new(props, "kind", json_pack("{s:s}", "type", "string"));
	json_object_set_new(props, "metadata",
			    json_pack("{s:s, s:{s:{s:s}, s:{s:s}}}", "type", "object", "properties",
				      "name", "type", "string", "generateName", "type", "string"));
	if (!json_object_get(t, "type"))
		json_object_set_new(t, "type", json_string("object"));
	return t;
}

enum { VAR_SELF, VAR_OLD_SELF };

/* Compiles an expression of rule r (its rule or messageExpression) with
 * libraries libs: with optionalOldSelf, oldSelf is an optional, as kube
 * declares it. */
static cel_program_t *compile(const char *expr, const json_t *typed, const json_t *r, unsigned libs,
			      char **err)
{
	bool opt = json_is_true(json_object_get(r, "optionalOldSelf"));
	struct cel_var vars[] = {
	    [VAR_SELF] = {"self", typed, false}, [VAR_OLD_SELF] = {"oldSelf", typed, opt}};
	/* kube 1.32+ resolves a property named by a CEL keyword as written
	 * (`t.metadata.namespace`, JobSet's rule) besides `__namespace__` */
	struct cel_env env = {vars, 2, libs, true};
	return cel_compile(expr, &env, 0, err);
}

/* Whether expr is a rule or a messageExpression somewhere in schema s (the
 * stored CRD's): kube compiles those in its StoredExpressions environment
 * and new ones in its NewExpressions one (findPreexistingExpressions). */
static bool preexisting(const json_t *s, const char *expr, int depth)
{
	if (!json_is_object(s) || !expr || depth > 64)
		return false;
	size_t i;
	const json_t *r, *v;
	const char *k;
	json_array_foreach (json_object_get(s, "x-kubernetes-validations"), i, r) {
		const char *a = json_string_value(json_object_get(r, "rule"));
		const char *m = json_string_value(json_object_get(r, "messageExpression"));
		if ((a && !strcmp(a, expr)) || (m && !strcmp(m, expr)))
			return true;
	}
	json_object_foreach ((json_t *)json_object_get(s, "properties"), k, v)
		if (preexisting(v, expr, depth + 1))
			return true;
	return preexisting(json_object_get(s, "additionalProperties"), expr, depth + 1) ||
	       preexisting(json_object_get(s, "items"), expr, depth + 1);
}

/* ---- fieldPath ------------------------------------------------------------------ */

/* kube's ValidFieldPath: ".a.b['c.d']" against the node's schema; the
 * normalized path ("a.b.c.d", map keys as "[k]") into out. 0 or -EINVAL. */
static int field_path(const char *p, const json_t *s, char *out, size_t len)
{
	size_t o = 0;
	out[0] = '\0';
	while (*p) {
		char name[256];
		size_t n = 0;
		if (*p == '.') {
			p++;
			while (*p && *p != '.' && *p != '[' && n < sizeof(name) - 1)
				name[n++] = *p++;
		} else if (p[0] == '[' && p[1] == '\'') {
			p += 2;
			while (*p && !(*p == '\'' && p[-1] != '\\') && n < sizeof(name) - 1) {
				if (*p == '\\' && p[1])
					p++;
				name[n++] = *p++;
			}
			if (p[0] != '\'' || p[1] != ']')
				return -EINVAL;
			p += 2;
		} else {
			return -EINVAL;
		}
		name[n] = '\0';
		if (!n)
			return -EINVAL;
		const json_t *props = json_object_get(s, "properties");
		const json_t *add = json_object_get(s, "additionalProperties");
		int w;
		if (json_is_object(props)) {
			s = json_object_get(props, name);
			if (!s)
				return -EINVAL;
			w = snprintf(out + o, len - o, "%s%s", o ? "." : "", name);
		} else if (json_is_object(add)) {
			s = add;
			w = snprintf(out + o, len - o, "[%s]", name);
		} else {
			return -EINVAL;
		}
		if (w < 0 || (size_t)w >= len - o)
			return -EINVAL;
		o += (size_t)w;
	}
	return 0;
}

/* ---- checks when a CRD is written ------------------------------------------------ */

/* Go's %#v of kube's internal ValidationRule, the value kube shows for a
 * rule that does not compile. */
static void rule_repr(const json_t *r, char *buf, size_t len)
{
	const json_t *oos = json_object_get(r, "optionalOldSelf");
	snprintf(buf, len,
		 "apiextensions.ValidationRule{Rule:\"%s\", Message:\"%s\", "
		 "MessageExpression:\"%s\", Reason:(*apiextensions.FieldValueErrorReason)(%s), "
		 "FieldPath:\"%s\", OptionalOldSelf:(*bool)(%s)}",
		 js(r, "rule"), js(r, "message"), js(r, "messageExpression"),
		 json_object_get(r, "reason") ? "0xc000a1e2f0" : "nil", js(r, "fieldPath"),
		 oos ? "0xc000a1e2f8" : "nil");
}

static void check_rule_fields(const json_t *r, const json_t *s, const char *p, json_t *causes)
{
	char q[PATHLEN], norm[PATHLEN];
	const char *rule = js(r, "rule"), *msg = js(r, "message");
	const char *mexpr = js(r, "messageExpression"), *reason = js(r, "reason");
	const char *fp = js(r, "fieldPath");
	val_path(q, "%s.rule", p);
	if (blank(rule))
		val_add(causes, "FieldValueRequired", q, "rule is not specified");
	val_path(q, "%s.message", p);
	if (!blank(rule) && *msg && blank(msg))
		val_add(causes, "FieldValueInvalid", q,
			"%s: message must be non-empty if specified", quote(msg));
	else if (!blank(rule) && has_newline(msg))
		val_add(causes, "FieldValueInvalid", q, "%s: message must not contain line breaks",
			quote(msg));
	else if (!blank(rule) && has_newline(rule) && blank(msg))
		val_add(causes, "FieldValueRequired", q,
			"message must be specified if rule contains line breaks");
	val_path(q, "%s.messageExpression", p);
	if (*mexpr && blank(mexpr))
		val_add(causes, "FieldValueRequired", q,
			"messageExpression must be non-empty if specified");
	val_path(q, "%s.reason", p);
	if (json_object_get(r, "reason") && strcmp(reason, "FieldValueInvalid") != 0 &&
	    strcmp(reason, "FieldValueForbidden") != 0 &&
	    strcmp(reason, "FieldValueRequired") != 0 && strcmp(reason, "FieldValueDuplicate") != 0)
		val_add(causes, "FieldValueNotSupported", q,
			"%s: supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", "
			"\"FieldValueInvalid\", \"FieldValueRequired\"",
			quote(reason));
	val_path(q, "%s.fieldPath", p);
	if (*fp && blank(fp))
		val_add(causes, "FieldValueInvalid", q,
			"%s: fieldPath must be non-empty if specified", quote(fp));
	else if (has_newline(fp))
		val_add(causes, "FieldValueInvalid", q,
			"%s: fieldPath must not contain line breaks", quote(fp));
	else if (*fp && field_path(fp, s, norm, sizeof(norm)) < 0)
		val_add(causes, "FieldValueInvalid", q, "%s: fieldPath must be a valid path",
			quote(fp));
}

/* ---- estimated cost ------------------------------------------------------------- */

/* kube's limits on the estimated cost of a CRD's rules (apiextensions
 * validation): per expression, and for a version's whole schema. */
#define STATIC_COST_LIMIT     10000000ull
#define STATIC_CRD_COST_LIMIT 100000000ull
#define MOST_EXPENSIVE        4 /* the expressions kube names when the total is passed */

/* The costs of a version's schema's expressions, as kube's TotalCost
 * observes them. */
struct costs {
	json_t *causes;
	bool unchanged;    /* an update that keeps the version's schema: no per-expression limit */
	const json_t *old; /* the stored version's schema on an update, or NULL */
	uint64_t total;
	struct {
		char path[PATHLEN];
		uint64_t cost;
	} top[MOST_EXPENSIVE];
	size_t ntop;
};

static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static void observe(struct costs *co, const char *path, uint64_t cost)
{
	co->total = co->total > UINT64_MAX - cost ? UINT64_MAX : co->total + cost;
	size_t i = co->ntop < MOST_EXPENSIVE ? co->ntop++ : MOST_EXPENSIVE;
	if (i == MOST_EXPENSIVE && cost <= co->top[MOST_EXPENSIVE - 1].cost)
		return;
	if (i == MOST_EXPENSIVE)
		i--;
	for (; i > 0 && co->top[i - 1].cost < cost; i--)
		co->top[i] = co->top[i - 1];
	snprintf(co->top[i].path, sizeof(co->top[i].path), "%s", path);
	co->top[i].cost = cost;
}

/* kube's getCostErrorMessage */
static void cost_message(char *out, size_t len, const char *what, uint64_t cost, uint64_t limit)
{
	double f = (double)cost / (double)limit;
	char factor[64];
	if (f > 100.0)
		snprintf(factor, sizeof(factor), "more than 100x");
	else if (f < 1.5)
		snprintf(factor, sizeof(factor), "%fx", f);
	else
		snprintf(factor, sizeof(factor), "%.1fx", f);
	snprintf(out, len,
		 "%s exceeds budget by factor of %s (try simplifying the rule, or adding "
		 "maxItems, maxProperties, and maxLength where arrays, maps, and strings are "
		 "declared)",
		 what, factor);
}

/* An expression's estimated cost checked against the per-expression limit
 * and added to the schema's total. */
static void expression_cost(struct costs *co, const char *path, const char *what, uint64_t cost)
{
	char msg[512];
	if (cost > STATIC_COST_LIMIT && !co->unchanged) {
		cost_message(msg, sizeof(msg), what, cost, STATIC_COST_LIMIT);
		val_add(co->causes, "FieldValueForbidden", path, "%s", msg);
	}
	observe(co, path, cost);
}

/* The schema's total against kube's limit for a whole schema at path. */
static void total_cost(struct costs *co, const char *path)
{
	char msg[512];
	if (co->total <= STATIC_CRD_COST_LIMIT)
		return;
	for (size_t i = 0; i < co->ntop; i++)
		val_add(co->causes, "FieldValueForbidden", co->top[i].path, "%s",
			"contributed to estimated rule cost total exceeding cost limit for entire "
			"OpenAPIv3 schema");
	cost_message(
	    msg, sizeof(msg),
	    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
	    co->total, STATIC_CRD_COST_LIMIT);
	val_add(co->causes, "FieldValueForbidden", path, "%s", msg);
}

/* How many times a rule at schema s may run for one object: the product of
 * the maxItems and maxProperties above it (card, 0 when one is missing),
 * else what fits in a request (kube's MaxCardinality of s's type). */
static uint64_t cardinality(const json_t *s, uint64_t card)
{
	return card ? card : CEL_MAX_REQUEST_BYTES / (cel_schema_min_size(s) + 1);
}

static uint64_t child_card(uint64_t card, const json_t *parent, const char *limit_key)
{
	const json_t *m = json_object_get(parent, limit_key);
	if (!card || !json_is_integer(m) || json_integer_value(m) < 0)
		return 0;
	return mul_sat(card, (uint64_t)json_integer_value(m));
}

/* ---- checks when a CRD is written: the CEL ----------------------------------------- */

/* The messageExpression of a rule that compiled, as kube's compileRule
 * checks it: it compiles, gives a string, and costs less than the limit. */
/* The libraries expr is compiled with when the CRD is written. */
static unsigned libs_for(const struct costs *co, const char *expr)
{
	return preexisting(co->old, expr, 0) ? CEL_LIB_K8S : CEL_LIB_K8S_NEW;
}

static void check_message_cel(const json_t *r, const json_t *typed, const char *p, const char *repr,
			      struct costs *co)
{
	char q[PATHLEN], *err = NULL;
	const char *mexpr = js(r, "messageExpression");
	if (!*mexpr || blank(mexpr))
		return;
	val_path(q, "%s.messageExpression", p);
	cel_program_t *m = compile(mexpr, typed, r, libs_for(co, mexpr), &err);
	uint64_t lo, hi;
	if (!m) {
		val_add(co->causes, "FieldValueInvalid", q,
			"%s: messageExpression compilation failed: %s", repr, err ? err : "");
	} else if (strcmp(cel_program_type(m), "string") != 0) {
		val_add(co->causes, "FieldValueInvalid", q,
			"%s: messageExpression must evaluate to a string", repr);
	} else {
		cel_program_cost(m, &lo, &hi);
		expression_cost(co, q, "estimated messageExpression cost", hi);
	}
	free(err);
	cel_program_free(m);
}

/* A rule's CEL as kube's compileRule and the schema validation after it
 * check it: its estimated cost (times how often it may run), it compiles
 * and gives a bool (not dyn: kube compares the checked type with bool), its
 * messageExpression once the rule is good, oldSelf only where correlatable,
 * optionalOldSelf only with oldSelf (so also on a rule that failed). */
static void check_rule_cel(const json_t *r, const json_t *s, const json_t *typed, const char *p,
			   const char *uncorrelated, uint64_t card, struct costs *co)
{
	char q[PATHLEN], repr[4096];
	char *err = NULL;
	const char *rule = js(r, "rule");
	rule_repr(r, repr, sizeof(repr));
	val_path(q, "%s.rule", p);
	cel_program_t *prog = compile(rule, typed, r, libs_for(co, rule), &err);
	bool ok = prog && strcmp(cel_program_type(prog), "bool") == 0;
	uint64_t lo = 0, hi = 0;
	if (ok)
		cel_program_cost(prog, &lo, &hi);
	expression_cost(co, q, "estimated rule cost", mul_sat(hi, cardinality(s, card)));
	if (!prog)
		val_add(co->causes, "FieldValueInvalid", q, "%s: compilation failed: %s", repr,
			err ? err : "");
	else if (!ok)
		val_add(co->causes, "FieldValueInvalid", q,
			"%s: cel expression must evaluate to a bool", repr);
	free(err);
	bool uses_old = ok && cel_program_reads(prog, VAR_OLD_SELF);
	cel_program_free(prog);
	if (ok)
		check_message_cel(r, typed, p, repr, co);
	if (uses_old && uncorrelated) {
		val_add(co->causes, "FieldValueInvalid", q,
			"%s: oldSelf cannot be used on the uncorrelatable portion of the "
			"schema within %s",
			quote(rule), uncorrelated);
	} else if (!uses_old && json_object_get(r, "optionalOldSelf")) {
		val_path(q, "%s.optionalOldSelf", p);
		val_add(co->causes, "FieldValueInvalid", q,
			"%s: may not be set if oldSelf is not used in rule",
			json_is_true(json_object_get(r, "optionalOldSelf")) ? "true" : "false");
	}
}

static void check_node(const json_t *s, const char *path, bool root, const char *uncorrelated,
		       uint64_t card, struct costs *co, int depth)
{
	if (!json_is_object(s) || depth > 64)
		return;
	json_t *causes = co->causes;
	const json_t *rules = json_object_get(s, "x-kubernetes-validations");
	if (json_is_array(rules) && json_array_size(rules)) {
		char p[PATHLEN];
		size_t i, before = json_array_size(causes);
		json_t *r;
		json_array_foreach (rules, i, r) {
			val_path(p, "%s.x-kubernetes-validations[%zu]", path, i);
			check_rule_fields(r, s, p, causes);
		}
		/* as kube: CEL is compiled only on a schema without errors here */
		if (json_array_size(causes) == before) {
			json_t *typed = typed_schema(s, root);
			json_array_foreach (rules, i, r) {
				val_path(p, "%s.x-kubernetes-validations[%zu]", path, i);
				check_rule_cel(r, s, typed, p, uncorrelated, card, co);
			}
			json_decref(typed);
		}
	}
	char p[PATHLEN];
	const char *k;
	json_t *v;
	bool atomic_map = strcmp(js(s, "x-kubernetes-map-type"), "atomic") == 0;
	json_object_foreach ((json_t *)json_object_get(s, "properties"), k, v) {
		val_path(p, "%s.properties[%s]", path, k);
		check_node(v, p, false,
			   uncorrelated ? uncorrelated
			   : atomic_map ? path
					: NULL,
			   card, co, depth + 1);
	}
	v = json_object_get(s, "additionalProperties");
	if (json_is_object(v)) {
		val_path(p, "%s.additionalProperties", path);
		check_node(v, p, false,
			   uncorrelated ? uncorrelated
			   : atomic_map ? path
					: NULL,
			   child_card(card, s, "maxProperties"), co, depth + 1);
	}
	v = json_object_get(s, "items");
	if (json_is_object(v)) {
		val_path(p, "%s.items", path);
		bool maplist = strcmp(js(s, "x-kubernetes-list-type"), "map") == 0;
		check_node(v, p, false,
			   uncorrelated ? uncorrelated
			   : maplist    ? NULL
					: path,
			   child_card(card, s, "maxItems"), co, depth + 1);
	}
}

int crd_rules_check(const json_t *schema, const char *path, json_t *causes)
{
	return crd_rules_check_update(schema, NULL, path, causes);
}

int crd_rules_check_update(const json_t *schema, const json_t *old, const char *path,
			   json_t *causes)
{
	size_t before = json_array_size(causes);
	struct costs co = {
	    .causes = causes, .unchanged = old && json_equal(schema, old), .old = old};
	check_node(schema, path, true, NULL, 1, &co, 0);
	total_cost(&co, path);
	return (int)(json_array_size(causes) - before);
}

/* ---- compiling a version's rules -------------------------------------------------- */

static void spine_add(struct crd_rules *cr, const json_t *s)
{
	for (size_t i = 0; i < cr->nspine; i++)
		if (cr->spine[i] == s)
			return;
	cr->spine = realloc(cr->spine, (cr->nspine + 1) * sizeof(*cr->spine));
	KB_REQUIRE(cr->spine);
	cr->spine[cr->nspine++] = s;
}

static bool compile_rule(struct rule *ru, const json_t *r, const json_t *s, const json_t *typed)
{
	char *err = NULL, norm[PATHLEN];
	ru->def = r;
	ru->prog = compile(js(r, "rule"), typed, r, CEL_LIB_K8S, &err);
	free(err);
	if (!ru->prog)
		return false;
	ru->uses_old = cel_program_reads(ru->prog, VAR_OLD_SELF);
	ru->optional_old = json_is_true(json_object_get(r, "optionalOldSelf"));
	const char *m = js(r, "messageExpression");
	if (*m) {
		err = NULL;
		ru->msg_prog = compile(m, typed, r, CEL_LIB_K8S, &err);
		free(err);
	}
	const char *fp = js(r, "fieldPath");
	if (*fp && field_path(fp, s, norm, sizeof(norm)) == 0 && *norm)
		ru->field = strdup(norm);
	return true;
}

/* Compiles the node's rules; true when it holds any (or any below it). */
static bool compile_node(struct crd_rules *cr, const json_t *s, bool root, int depth)
{
	if (!json_is_object(s) || depth > 64)
		return false;
	bool any = false;
	const json_t *rules = json_object_get(s, "x-kubernetes-validations");
	if (json_is_array(rules) && json_array_size(rules)) {
		struct node nd = {.schema = s, .typed = typed_schema(s, root)};
		nd.rules = calloc(json_array_size(rules), sizeof(*nd.rules));
		KB_REQUIRE(nd.rules);
		size_t i;
		json_t *r;
		json_array_foreach (rules, i, r)
			if (compile_rule(&nd.rules[nd.n], r, s, nd.typed))
				nd.n++;
		cr->nodes = realloc(cr->nodes, (cr->n + 1) * sizeof(*cr->nodes));
		KB_REQUIRE(cr->nodes);
		cr->nodes[cr->n++] = nd;
		any = true;
	}
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)json_object_get(s, "properties"), k, v)
		any |= compile_node(cr, v, false, depth + 1);
	v = json_object_get(s, "additionalProperties");
	if (json_is_object(v))
		any |= compile_node(cr, v, false, depth + 1);
	v = json_object_get(s, "items");
	if (json_is_object(v))
		any |= compile_node(cr, v, false, depth + 1);
	if (any)
		spine_add(cr, s);
	return any;
}

/* root: schema is a resource's root (self also has apiVersion, kind and
 * metadata), as it is for a version's schema. */
static struct crd_rules *rules_compile(const json_t *schema, bool root)
{
	if (!schema)
		return NULL;
	struct crd_rules *cr = calloc(1, sizeof(*cr));
	KB_REQUIRE(cr);
	cr->schema = json_incref((json_t *)schema);
	if (!compile_node(cr, schema, root, 0)) {
		crd_rules_free(cr);
		return NULL;
	}
	return cr;
}

struct crd_rules *crd_rules_compile(const json_t *schema)
{
	return rules_compile(schema, true);
}

void crd_rules_free(struct crd_rules *cr)
{
	if (!cr)
		return;
	for (size_t i = 0; i < cr->n; i++) {
		for (size_t j = 0; j < cr->nodes[i].n; j++) {
			cel_program_free(cr->nodes[i].rules[j].prog);
			cel_program_free(cr->nodes[i].rules[j].msg_prog);
			free(cr->nodes[i].rules[j].field);
		}
		free(cr->nodes[i].rules);
		json_decref(cr->nodes[i].typed);
	}
	free(cr->nodes);
	free(cr->spine);
	json_decref(cr->schema);
	free(cr);
}

/* ---- evaluation -------------------------------------------------------------------- */

struct eval {
	json_t *causes, *warnings;
	uint64_t budget; /* left of BUDGET */
	bool stopped;
	bool no_ratchet; /* a default's check: nothing is ratcheted */
};

static const struct node *node_of(const struct crd_rules *cr, const json_t *s)
{
	for (size_t i = 0; i < cr->n; i++)
		if (cr->nodes[i].schema == s)
			return &cr->nodes[i];
	return NULL;
}

static bool on_spine(const struct crd_rules *cr, const json_t *s)
{
	for (size_t i = 0; i < cr->nspine; i++)
		if (cr->spine[i] == s)
			return true;
	return false;
}

static const char *show_path(const char *p)
{
	return *p ? p : "<nil>";
}

/* One cause (or, ratcheted, one warning) in kube's words. */
static void add_error(struct eval *ev, const char *reason, const char *path, const char *type,
		      const char *detail, bool ratchet)
{
	json_t *tmp = json_array();
	if (strcmp(reason, "FieldValueForbidden") == 0 || strcmp(reason, "FieldValueRequired") == 0)
		val_add(tmp, reason, path, "%s", detail);
	else if (strcmp(reason, "FieldValueDuplicate") == 0)
		val_add(tmp, reason, path, "%s", quote(type));
	else
		val_add(tmp, "FieldValueInvalid", path, "%s: %s", quote(type), detail);
	json_t *c = json_array_get(tmp, 0);
	if (!c) {
		json_decref(tmp);
		return;
	}
	if (ratchet) {
		char w[1200];
		snprintf(w, sizeof(w), "%s: %s", show_path(path), js(c, "message"));
		if (!ev->warnings)
			ev->warnings = json_array();
		json_array_append_new(ev->warnings, json_string(w));
	} else {
		if (!*path)
			json_object_set_new(c, "field", json_string("<nil>"));
		json_array_append(ev->causes, c);
	}
	json_decref(tmp);
}

static const char *rule_text(const json_t *r)
{
	static char buf[4096];
	const char *m = js(r, "message");
	const char *t = *m ? m : js(r, "rule");
	while (*t && strchr(" \t\r\n\v\f", *t))
		t++;
	size_t n = strlen(t);
	while (n && strchr(" \t\r\n\v\f", t[n - 1]))
		n--;
	snprintf(buf, sizeof(buf), "%.*s", (int)n, t);
	return buf;
}

/* The message: messageExpression's when it gives a usable string, else
 * the rule's message, else "failed rule: <rule>". */
static void detail_of(const struct rule *ru, cel_ctx_t *c, struct eval *ev, char *out, size_t len)
{
	if (ru->msg_prog) {
		cel_value_t v;
		const char *msg = NULL;
		uint64_t cost = 0;
		enum cel_outcome oc = cel_eval(ru->msg_prog, c, &v, &msg, &cost);
		ev->budget = cost > ev->budget ? 0 : ev->budget - cost;
		const char *s;
		size_t n;
		if (oc == CEL_OK && v.kind == CEL_STRING &&
		    val_expression_message(v.s.p, v.s.len, &s, &n)) {
			snprintf(out, len, "%.*s", (int)n, s);
			return;
		}
	}
	const char *m = js(ru->def, "message");
	if (*m && !blank(m))
		snprintf(out, len, "%s", rule_text(ru->def));
	else
		snprintf(out, len, "failed rule: %s", rule_text(ru->def));
}

/* Runs one rule; false when the validation must stop (cost). */
static bool run_rule(const struct node *nd, const struct rule *ru, const json_t *v,
		     const json_t *old, const char *path, bool ratchet, struct eval *ev)
{
	const char *type = js(nd->schema, "type");
	char detail[2048];
	if (ru->uses_old && !old && !ru->optional_old)
		return true;
	cel_ctx_t *c = cel_ctx_new(PER_CALL_LIMIT < ev->budget ? PER_CALL_LIMIT : ev->budget);
	cel_bind_json(c, "self", v, nd->typed);
	if (ru->optional_old) {
		cel_value_t o = old ? cel_json(c, old, nd->typed) : cel_null();
		cel_bind(c, "oldSelf", cel_optional(c, old ? &o : NULL));
	} else if (old) {
		cel_bind_json(c, "oldSelf", old, nd->typed);
	}
	cel_value_t out;
	const char *msg = NULL;
	uint64_t cost = 0;
	enum cel_outcome oc = cel_eval(ru->prog, c, &out, &msg, &cost);
	bool go_on = true;
	if (oc == CEL_COST) {
		if (cost >= ev->budget)
			snprintf(detail, sizeof(detail),
				 "validation failed due to running out of cost budget, no further "
				 "validation rules will be run");
		else
			snprintf(detail, sizeof(detail),
				 "'%s': no further validation rules will be run due to call cost "
				 "exceeds limit for rule: %s",
				 msg, rule_text(ru->def));
		add_error(ev, "FieldValueInvalid", path, type, detail, false);
		go_on = false;
	} else if (oc == CEL_EVAL_ERROR && strncmp(msg, "no such overload", 16) == 0) {
		snprintf(detail, sizeof(detail),
			 "'%s': call arguments did not match a supported operator, function or "
			 "macro signature for rule: %s",
			 msg, rule_text(ru->def));
		add_error(ev, "FieldValueInvalid", path, type, detail, false);
	} else if (oc == CEL_EVAL_ERROR) {
		snprintf(detail, sizeof(detail), "%s evaluating rule: %s", msg, rule_text(ru->def));
		add_error(ev, "FieldValueInvalid", path, type, detail, false);
	} else if (out.kind != CEL_BOOL) {
		add_error(ev, "FieldValueInvalid", path, type,
			  "cel expression must evaluate to a bool", false);
	} else if (!out.b) {
		char fpath[PATHLEN];
		if (ru->field)
			snprintf(fpath, sizeof(fpath), "%s%s%s", path,
				 *path && ru->field[0] != '[' ? "." : "", ru->field);
		else
			snprintf(fpath, sizeof(fpath), "%s", path);
		ev->budget = cost > ev->budget ? 0 : ev->budget - cost;
		cost = 0;
		detail_of(ru, c, ev, detail, sizeof(detail));
		const char *reason = js(ru->def, "reason");
		add_error(ev, *reason ? reason : "FieldValueInvalid", fpath, type, detail,
			  ratchet && !ru->uses_old && !ev->no_ratchet);
	}
	ev->budget = cost > ev->budget ? 0 : ev->budget - cost;
	cel_ctx_free(c);
	return go_on;
}

static void walk(const struct crd_rules *cr, const json_t *s, const json_t *v, const json_t *old,
		 const char *path, bool equal, struct eval *ev, int depth);

/* The old item of a map list matching v by the list's keys. */
static const json_t *old_item(const json_t *s, const json_t *v, const json_t *old)
{
	const json_t *keys = json_object_get(s, "x-kubernetes-list-map-keys");
	size_t i, j;
	json_t *o, *k;
	if (!json_is_array(old) || !json_is_array(keys))
		return NULL;
	json_array_foreach (old, i, o) {
		bool same = true;
		json_array_foreach (keys, j, k) {
			const char *key = json_string_value(k);
			const json_t *a = json_object_get(v, key ? key : ""),
				     *b = json_object_get(o, key ? key : "");
			if (!(a == b || (a && b && json_equal(a, b))))
				same = false;
		}
		if (same)
			return o;
	}
	return NULL;
}

static void walk_children(const struct crd_rules *cr, const json_t *s, const json_t *v,
			  const json_t *old, const char *path, bool equal, struct eval *ev,
			  int depth)
{
	char p[PATHLEN];
	const char *k;
	json_t *x;
	if (json_is_object(v)) {
		const json_t *props = json_object_get(s, "properties");
		const json_t *add = json_object_get(s, "additionalProperties");
		bool corr = strcmp(js(s, "x-kubernetes-map-type"), "atomic") != 0;
		json_object_foreach ((json_t *)v, k, x) {
			const json_t *cs = json_object_get(props, k);
			bool named = cs != NULL;
			if (!cs && json_is_object(add))
				cs = add;
			if (!cs || !on_spine(cr, cs) || ev->stopped)
				continue;
			if (named)
				val_path(p, "%s%s%s", path, *path ? "." : "", k);
			else
				val_path(p, "%s[%s]", path, k);
			const json_t *ox = corr ? json_object_get(old, k) : NULL;
			walk(cr, cs, x, ox, p, corr ? ox && json_equal(x, ox) : equal, ev,
			     depth + 1);
		}
	} else if (json_is_array(v)) {
		const json_t *is = json_object_get(s, "items");
		size_t i;
		if (!json_is_object(is) || !on_spine(cr, is))
			return;
		bool maplist = strcmp(js(s, "x-kubernetes-list-type"), "map") == 0;
		json_array_foreach (v, i, x) {
			if (ev->stopped)
				return;
			val_path(p, "%s[%zu]", path, i);
			const json_t *ox = maplist ? old_item(s, x, old) : NULL;
			walk(cr, is, x, ox, p, maplist ? ox && json_equal(x, ox) : equal, ev,
			     depth + 1);
		}
	}
}

/* equal: the value (or, where it cannot be correlated, its nearest
 * correlated ancestor) equals its old value: failures are ratcheted. */
static void walk(const struct crd_rules *cr, const json_t *s, const json_t *v, const json_t *old,
		 const char *path, bool equal, struct eval *ev, int depth)
{
	if (!v || json_is_null(v) || depth > 64 || ev->stopped)
		return;
	const struct node *nd = node_of(cr, s);
	if (nd && nd->n) {
		if (ev->budget == 0) {
			add_error(ev, "FieldValueInvalid", path, js(s, "type"),
				  "validation failed due to running out of cost budget, no further "
				  "validation rules will be run",
				  false);
			ev->stopped = true;
			return;
		}
		for (size_t i = 0; i < nd->n && !ev->stopped; i++)
			if (!run_rule(nd, &nd->rules[i], v, json_is_null(old) ? NULL : old, path,
				      equal, ev))
				ev->stopped = true;
	}
	walk_children(cr, s, v, old, path, equal, ev, depth);
}

int crd_rules_eval(const struct crd_rules *cr, const json_t *obj, const json_t *old, json_t *causes,
		   json_t **warnings)
{
	if (!cr)
		return 0;
	struct eval ev = {.causes = causes, .budget = BUDGET};
	size_t before = json_array_size(causes);
	walk(cr, cr->schema, obj, old, "", old && json_equal(obj, old), &ev, 0);
	if (ev.warnings) {
		if (!*warnings)
			*warnings = json_array();
		json_array_extend(*warnings, ev.warnings);
		json_decref(ev.warnings);
	}
	return (int)(json_array_size(causes) - before);
}

/* ---- rules on defaults at CRD write ------------------------------------------------ */

/* The causes of scratch (fields relative to a default, "<nil>" for the
 * default itself) moved to causes under path. */
static void rebase_causes(json_t *scratch, const char *path, json_t *causes)
{
	size_t i;
	json_t *c;
	char p[PATHLEN];
	json_array_foreach (scratch, i, c) {
		const char *f = js(c, "field");
		if (strcmp(f, "<nil>") == 0 || !*f)
			val_path(p, "%s", path);
		else
			val_path(p, "%s%s%s", path, *f == '[' ? "" : ".", f);
		json_object_set_new(c, "field", json_string(p));
		json_array_append(causes, c);
	}
}

/* kube's ValidateDefaults (apiextensions-apiserver
 * pkg/apiserver/schema/defaulting/validation.go, validate): a default that
 * passed its schema is run through the rules of its schema node and the
 * nodes below it (cel.NewValidator(s, isResourceRoot)), with oldSelf the
 * default itself and nothing ratcheted; when that passes, once more with
 * no old value (CRDValidationRatcheting: a create of the default, where
 * only optionalOldSelf transition rules run). */
int crd_rules_check_default(const json_t *s, const json_t *def, bool root, const char *path,
			    json_t *causes)
{
	struct crd_rules *cr = rules_compile(s, root);
	if (!cr)
		return 0;
	json_t *scratch = json_array();
	struct eval ev = {.causes = scratch, .budget = BUDGET, .no_ratchet = true};
	walk(cr, cr->schema, def, def, "", false, &ev, 0);
	if (json_array_size(scratch) == 0) {
		struct eval fresh = {.causes = scratch, .budget = BUDGET, .no_ratchet = true};
		walk(cr, cr->schema, def, NULL, "", false, &fresh, 0);
	}
	int n = (int)json_array_size(scratch);
	rebase_causes(scratch, path, causes);
	json_decref(scratch);
	crd_rules_free(cr);
	return n;
}
