/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The estimated cost of a program, as cel-go's static estimator computes it
 * (checker/cost.go) with kube's size estimates from the OpenAPI schemas of
 * the values (maxLength, maxItems, maxProperties, or the most a 3 MiB
 * request can hold): kube refuses a CRD rule whose worst case is too
 * expensive before any object is written.
 *
 * DESIGN. A walk of the checked tree: each node's cost is an interval
 * [min, max] of cel-go's cost units (an identifier or a field selection 1,
 * a call 1, a list literal 10, a map literal 30, string operations by
 * their length at 0.1 per character, regular expressions 0.1 times 0.25), a
 * comprehension its range's size times the cost of one iteration of the
 * macro's expansion. Sizes come from the schema a node was typed by, from
 * literals, or from what an operation makes (a concatenation, a map()); an
 * unknown size is the most a request can hold. All arithmetic saturates.
 */
#include "proxy/cel/check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* kube's request limit (apiserver's DefaultMaxRequestSizeBytes): sizes a
 * schema leaves open are what fits in it. */
#define MAX_REQUEST CEL_MAX_REQUEST_BYTES

struct est {
	uint64_t min, max;
};

static uint64_t add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t mul(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* ceil(a * num / den), saturating */
static uint64_t factor(uint64_t a, uint64_t num, uint64_t den)
{
	uint64_t m = mul(a, num);
	return m == UINT64_MAX ? m : (m + den - 1) / den;
}

static struct est e_add(struct est a, struct est b)
{
	return (struct est){add(a.min, b.min), add(a.max, b.max)};
}

static struct est e_const(uint64_t c)
{
	return (struct est){c, c};
}

/* ---- sizes ---- */

static const json_t *get(const json_t *s, const char *k)
{
	return json_object_get(s, k);
}

static bool flag(const json_t *s, const char *k)
{
	return json_is_true(get(s, k));
}

/* An object's least size, as kube's SchemaDeclType counts it: "{}" and,
 * for each required property without a default, its name, its value's
 * least size and 4 (quotes, colon, comma). */
static uint64_t object_min_size(const json_t *s)
{
	const json_t *props = get(s, "properties"), *req = get(s, "required");
	uint64_t n = 2;
	size_t i;
	const json_t *name;
	json_array_foreach (req, i, name) {
		const json_t *p = json_object_get(props, json_string_value(name));
		if (p && !get(p, "default"))
			n = add(n,
				add(strlen(json_string_value(name)) + 4, cel_schema_min_size(p)));
	}
	return n;
}

uint64_t cel_schema_min_size(const json_t *s)
{
	const char *t = json_string_value(get(s, "type"));
	const char *f = json_string_value(get(s, "format"));
	if (!s || !t || flag(s, "x-kubernetes-int-or-string"))
		return 1;
	if (!strcmp(t, "string")) {
		if (f && !strcmp(f, "duration"))
			return 3; /* "0" quoted: Go parses it */
		if (f && !strcmp(f, "date"))
			return 12; /* "2006-01-02" quoted */
		if (f && !strcmp(f, "date-time"))
			return 21; /* kube's MinDatetimeSizeJSON */
		return 2;
	}
	if (!strcmp(t, "boolean"))
		return 4;
	if (!strcmp(t, "integer") || !strcmp(t, "number"))
		return 1;
	if (!strcmp(t, "object") && !json_is_object(get(s, "additionalProperties")))
		return object_min_size(s);
	return 2; /* [] or {} */
}

static uint64_t limit(const json_t *s, const char *key, uint64_t dflt)
{
	const json_t *v = get(s, key);
	return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t)json_integer_value(v)
								: dflt;
}

/* The length of the longest string among s's enum values. */
static uint64_t enum_max(const json_t *s)
{
	uint64_t m = 0;
	size_t i;
	const json_t *v;
	json_array_foreach (get(s, "enum"), i, v) {
		if (json_is_string(v) && json_string_length(v) > m)
			m = json_string_length(v);
	}
	return m;
}

/* The most elements (characters, items, properties) a value of schema s
 * may have, as kube's size estimator gives it (0 is a size: a map's keys);
 * false when s is not sized. */
static bool schema_max(const json_t *s, uint64_t *out)
{
	const char *t = json_string_value(get(s, "type"));
	const char *f = json_string_value(get(s, "format"));
	if (flag(s, "x-kubernetes-int-or-string")) {
		*out = MAX_REQUEST - 2;
		return true;
	}
	if (!t)
		return false;
	if (!strcmp(t, "string")) {
		uint64_t d = MAX_REQUEST - 2;
		if (f && !strcmp(f, "duration"))
			d = 32;
		else if (f && !strcmp(f, "date"))
			d = 12;
		else if (f && !strcmp(f, "date-time"))
			d = 32; /* kube's MaxDatetimeSizeJSON */
		/* kube: a maxLength in code points is taken as up to 4 bytes
		 * each (MaxElements = maxLength * 4); a format's fixed bound or,
		 * without maxLength, an enum's longest value */
		if (f && (!strcmp(f, "duration") || !strcmp(f, "date") || !strcmp(f, "date-time")))
			*out = d;
		else if (f && !strcmp(f, "byte"))
			*out = limit(s, "maxLength", d);
		else if (json_is_integer(get(s, "maxLength")))
			*out = mul(limit(s, "maxLength", 0), 4);
		else
			*out = json_array_size(get(s, "enum")) ? enum_max(s) : d;
		return true;
	}
	if (!strcmp(t, "array")) {
		*out = limit(s, "maxItems",
			     (MAX_REQUEST - 2) / (cel_schema_min_size(get(s, "items")) + 1));
		return true;
	}
	if (!strcmp(t, "object") && json_is_object(get(s, "additionalProperties"))) {
		*out = limit(s, "maxProperties",
			     (MAX_REQUEST - 2) /
				 (cel_schema_min_size(get(s, "additionalProperties")) + 6));
		return true;
	}
	return false;
}

/* The size of n's value when it is a string, bytes, a list or a map. */
static struct est size_of(const struct cel_node *n)
{
	uint64_t m;
	if (n->schema && schema_max(n->schema, &m))
		return (struct est){0, m};
	if (n->kind == N_CONST && (n->val.kind == CEL_STRING || n->val.kind == CEL_BYTES))
		return e_const(n->val.s.len);
	if (n->kind == N_LIST || n->kind == N_MAP)
		return e_const(n->nargs);
	if (n->size.max)
		return (struct est){n->size.min, n->size.max};
	return (struct est){0, MAX_REQUEST - 2}; /* no value is bigger than a request */
}

static bool stringish(const struct cel_node *n)
{
	return n->ct && (n->ct->kind == CT_STRING || n->ct->kind == CT_BYTES);
}

/* A value whose size cel-go's estimator takes as 1: not a string, bytes,
 * list or map (nor dyn, whose size is not known). */
static bool scalar(const struct cel_node *n)
{
	if (!n->ct)
		return false;
	switch (n->ct->kind) {
	case CT_STRING:
	case CT_BYTES:
	case CT_LIST:
	case CT_MAP:
	case CT_DYN: return false;
	default: return true;
	}
}

/* ---- costs ---- */

static struct est cost(struct cel_node *n);

/* String traversal (0.1 per character) of the larger of a and b. */
static struct est traverse(struct est s)
{
	return (struct est){factor(s.min, 1, 10), factor(s.max, 1, 10)};
}

/* The size cel-go's equality reads: 1 for a scalar, 0 for an object typed
 * by a schema, else the value's. */
static uint64_t eq_size(const struct cel_node *n, struct est s)
{
	if (n->ct && n->ct->kind == CT_OBJECT)
		return 0;
	return scalar(n) ? 1 : s.max;
}

static struct est compare_cost(uint64_t a, uint64_t b)
{
	uint64_t m = a < b ? a : b;
	return (struct est){m ? 1 : 0, factor(m, 1, 10)};
}

static struct est bin_cost(struct cel_node *n)
{
	struct est ca = cost(n->a), cb = cost(n->b); /* first: they size what they make */
	struct est a = size_of(n->a), b = size_of(n->b), c = {1, 1};
	switch (n->op) {
	case B_IN:
		if (n->b->ct && n->b->ct->kind == CT_LIST)
			c = (struct est){1, b.max ? b.max : 1};
		break;
	case B_ADD:
		if (stringish(n->a)) {
			c = traverse(e_add(a, b));
			n->size.min = add(a.min, b.min);
			n->size.max = add(a.max, b.max);
		} else if (n->a->ct && n->a->ct->kind == CT_LIST) {
			n->size.min = add(a.min, b.min);
			n->size.max = add(a.max, b.max);
		}
		break;
	case B_EQ:
	case B_NE:
		/* cel-go: the smaller of the two sizes at 0.1, no base cost; a
		 * scalar's size is 1, a schema object's 0 (kube gives it no
		 * MaxElements) */
		c = compare_cost(eq_size(n->a, a), eq_size(n->b, b));
		break;
	case B_LT:
	case B_LE:
	case B_GT:
	case B_GE:
		if (stringish(n->a) && stringish(n->b))
			c = compare_cost(a.max, b.max);
		break;
	default: break;
	}
	return e_add(e_add(ca, cb), c);
}

/* Whether name (" f ") is in the space-separated list. */
static bool named(const char *list, const char *key)
{
	return strstr(list, key) != NULL;
}

/* A function's own cost (cel-go's and kube's estimates for the functions
 * whose work grows with their input: a traversal of a string at 0.1 per
 * character, a regular expression at 0.1 per character of the string
 * times 0.25 per character of the pattern, a list's items one each) and the
 * size of its result when it follows from its input's. */
static struct est call_cost(struct cel_node *n)
{
	const struct cel_node *first = n->a ? n->a : n->nargs ? n->args[0] : NULL;
	const struct cel_node *arg =
	    n->a ? (n->nargs ? n->args[0] : NULL) : (n->nargs > 1 ? n->args[1] : NULL);
	static const char *const regexes = " matches find findAll ";
	static const char *const same_size = " lowerAscii upperAscii trim substring split replace ";
	static const char *const scans = " lowerAscii upperAscii trim replace split substring "
					 "charAt indexOf lastIndexOf join strings.quote format "
					 "quantity isQuantity url isURL ip isIP cidr isCIDR "
					 "semver isSemver base64.encode base64.decode ";
	static const char *const lists = " isSorted sum min max indexOf lastIndexOf ";
	char key[80];
	snprintf(key, sizeof(key), " %s ", n->name);
	if (!first)
		return e_const(1);
	struct est s = size_of(first);
	bool list = first->ct && first->ct->kind == CT_LIST;
	if (named(regexes, key) && arg) {
		/* cel-go: the string traversed at 0.1 per character (matches
		 * counts one more, so that an empty string still costs) times
		 * the pattern at 0.25 per character; kube's find and findAll
		 * likewise, without the one */
		uint64_t one = !strcmp(n->name, "matches");
		struct est r = size_of(arg);
		return (struct est){mul(factor(add(s.min, one), 1, 10), factor(r.min, 1, 4)),
				    mul(factor(add(s.max, one), 1, 10), factor(r.max, 1, 4))};
	}
	/* no base cost where cel-go and kube price by size */
	if (!strcmp(n->name, "contains") && arg) {
		struct est r = size_of(arg);
		return (struct est){mul(factor(s.min, 1, 10), factor(r.min, 1, 10)),
				    mul(factor(s.max, 1, 10), factor(r.max, 1, 10))};
	}
	if ((!strcmp(n->name, "startsWith") || !strcmp(n->name, "endsWith")) && arg) {
		struct est r = size_of(arg);
		return (struct est){factor(r.min, 1, 10), factor(r.max, 1, 10)};
	}
	if (list && named(lists, key))
		return (struct est){1, add(1, s.max)};
	if (!strncmp(n->name, "sets.", 5) && arg)
		return (struct est){1, add(1, mul(s.max, size_of(arg).max))};
	if (named(same_size, key) || (!strcmp(n->name, "string") && stringish(first)))
		n->size = (struct cel_size){s.min, s.max};
	if (named(scans, key))
		return (struct est){factor(s.min, 1, 10), factor(s.max, 1, 10)};
	return e_const(1);
}

/* The arguments first: their walk sets the sizes of what they make (a
 * concatenation, a substring), which the call's own cost reads. */
static struct est calls(struct cel_node *n)
{
	struct est c = {0, 0};
	if (n->a)
		c = e_add(c, cost(n->a));
	for (size_t i = 0; i < n->nargs; i++)
		c = e_add(c, cost(n->args[i]));
	return e_add(c, call_cost(n));
}

/* A comprehension: cel-go's expansion of each macro costs, per element of
 * the range, its loop condition and step (the predicate or transform
 * inside); outside the loop the range, the accumulator's start and the
 * result. */
static struct est compr_cost(struct cel_node *n)
{
	struct est range = cost(n->a), body = cost(n->b), filter = {0, 0};
	struct est count = size_of(n->a);
	uint64_t fixed = 0, step = 0;
	if (n->c)
		filter = cost(n->c);
	switch (n->op) {
	case M_ALL: fixed = 1, step = 3; break;
	case M_EXISTS: fixed = 1, step = 4; break;
	case M_EXISTS_ONE: fixed = 2, step = 2; break;
	case M_MAP: fixed = 11, step = 12; break;
	case M_FILTER: fixed = 11, step = 13; break;
	case M_TMAP:
	case M_TMAP_ENTRY: fixed = 31, step = 3; break;
	default: /* optMap, optFlatMap: one step, not a loop */
		return e_add(e_add(range, body), e_const(4));
	}
	if (n->op == M_MAP || n->op == M_FILTER) {
		n->size.min = 0;
		n->size.max = count.max;
	}
	struct est one = e_add(e_add(body, filter), e_const(step));
	struct est loop = {mul(count.min, one.min), mul(count.max, one.max)};
	return e_add(e_add(range, e_const(fixed)), loop);
}

static struct est cost(struct cel_node *n)
{
	struct est a, b, c;
	switch (n->kind) {
	case N_CONST: return e_const(0);
	case N_IDENT: return e_const(1);
	case N_SELECT: {
		a = cost(n->a);
		/* has(): kube's environment prices the presence test 0, its
		 * operand as any (apiserver pkg/cel/environment/base.go:
		 * checker.PresenceTestHasCost(false); cel-go's costSelect) */
		if (n->op)
			return a;
		const struct cel_type *t = n->a->ct;
		bool field =
		    n->opt ||
		    (t && (t->kind == CT_MAP || t->kind == CT_OBJECT || t->kind == CT_OPT));
		return field ? e_add(a, e_const(1)) : a;
	}
	case N_INDEX: return e_add(e_add(cost(n->a), cost(n->b)), e_const(1));
	case N_CALL: return calls(n);
	case N_LIST:
	case N_MAP:
		c = e_const(n->kind == N_LIST ? 10 : 30);
		for (size_t i = 0; i < n->nargs; i++) {
			c = e_add(c, cost(n->args[i]));
			if (n->args2)
				c = e_add(c, cost(n->args2[i]));
		}
		return c;
	case N_AND:
	case N_OR:
		a = cost(n->a);
		b = cost(n->b);
		return (struct est){a.min, add(a.max, b.max)};
	case N_COND:
		a = cost(n->a);
		b = cost(n->b);
		c = cost(n->c);
		{
			struct est sb = size_of(n->b), sc = size_of(n->c);
			n->size.min = sb.min < sc.min ? sb.min : sc.min;
			n->size.max = sb.max > sc.max ? sb.max : sc.max;
		}
		return e_add(
		    a, (struct est){b.min < c.min ? b.min : c.min, b.max > c.max ? b.max : c.max});
	case N_NOT:
	case N_NEG: return e_add(cost(n->a), e_const(1));
	case N_BIN: return bin_cost(n);
	case N_COMPR: return compr_cost(n);
	}
	return e_const(0);
}

void cel_estimate(cel_program_t *p)
{
	struct est e = cost(p->root);
	p->cost_min = e.min;
	p->cost_max = e.max;
}
