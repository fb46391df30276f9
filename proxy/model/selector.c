/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Label and field selectors (see selector.h). The label parser follows the
 * grammar of k8s.io/apimachinery/pkg/labels: a small lexer producing tokens
 * (identifier, '!', '!=', '=', '==', '>', '<', '(', ')', ',', in, notin) and a
 * recursive-descent parser whose error texts match kube's so that kubectl
 * users see the same messages. Field selectors follow pkg/fields: terms split
 * on unescaped commas, operator found at the first unescaped "!=", "==" or "=".
 */
#include "proxy/model/selector.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/model/names.h"

/* ---- common ---------------------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- label selector representation ---------------------------------------- */

enum lop { LOP_EQ, LOP_DEQ, LOP_NE, LOP_IN, LOP_NOTIN, LOP_EXISTS, LOP_NOTEXISTS, LOP_GT, LOP_LT };

struct lreq {
	char *key;
	enum lop op;
	char **values; /* sorted, unique */
	size_t nvalues;
};

struct sel_label {
	bool nothing;
	struct lreq *reqs;
	size_t nreqs, cap;
};

static void lreq_clear(struct lreq *r)
{
	free(r->key);
	for (size_t i = 0; i < r->nvalues; i++)
		free(r->values[i]);
	free(r->values);
	memset(r, 0, sizeof(*r));
}

void sel_label_free(struct sel_label *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nreqs; i++)
		lreq_clear(&s->reqs[i]);
	free(s->reqs);
	free(s);
}

/* Adds a value unless already present (a set, like sets.String). */
static int lreq_add_value(struct lreq *r, const char *v, size_t n)
{
	for (size_t i = 0; i < r->nvalues; i++)
		if (strlen(r->values[i]) == n && memcmp(r->values[i], v, n) == 0)
			return 0;
	char **nv = realloc(r->values, (r->nvalues + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	r->values = nv;
	nv[r->nvalues] = strndup(v, n);
	if (!nv[r->nvalues])
		return -ENOMEM;
	r->nvalues++;
	return 0;
}

/* Takes ownership of *r (cleared on success and failure). */
static int sel_push(struct sel_label *s, struct lreq *r)
{
	if (s->nreqs == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4;
		struct lreq *n = realloc(s->reqs, cap * sizeof(*n));
		if (!n) {
			lreq_clear(r);
			return -ENOMEM;
		}
		s->reqs = n;
		s->cap = cap;
	}
	if (r->nvalues > 1)
		qsort(r->values, r->nvalues, sizeof(char *), cmp_str);
	s->reqs[s->nreqs++] = *r;
	memset(r, 0, sizeof(*r));
	return 0;
}

static int cmp_req(const void *a, const void *b)
{
	return strcmp(((const struct lreq *)a)->key, ((const struct lreq *)b)->key);
}

static bool is_integer(const char *v)
{
	if (*v == '-' || *v == '+')
		v++;
	if (!*v)
		return false;
	for (; *v; v++)
		if (*v < '0' || *v > '9')
			return false;
	return true;
}

/* NewRequirement's checks: value count per operator, value syntax. */
static int lreq_validate(const struct lreq *r, char *err, size_t errlen)
{
	switch (r->op) {
	case LOP_IN:
	case LOP_NOTIN:
		if (r->nvalues == 0) {
			set_err(err, errlen,
				"values: Invalid value: []: for 'in', 'notin' "
				"operators, values set can't be empty");
			return -EINVAL;
		}
		break;
	case LOP_EQ:
	case LOP_DEQ:
	case LOP_NE:
		if (r->nvalues != 1) {
			set_err(err, errlen,
				"values: Invalid value: []: exact-match "
				"compatibility requires one single value");
			return -EINVAL;
		}
		break;
	case LOP_EXISTS:
	case LOP_NOTEXISTS:
		if (r->nvalues != 0) {
			set_err(err, errlen,
				"values: Invalid value: []: values set must be "
				"empty for exists and does not exist");
			return -EINVAL;
		}
		break;
	case LOP_GT:
	case LOP_LT:
		if (r->nvalues != 1) {
			set_err(err, errlen,
				"values: Invalid value: []: for 'Gt', 'Lt' "
				"operators, exactly one value is required");
			return -EINVAL;
		}
		if (!is_integer(r->values[0])) {
			set_err(err, errlen,
				"values[0]: Invalid value: \"%s\": for 'Gt', 'Lt' "
				"operators, the value must be an integer",
				r->values[0]);
			return -EINVAL;
		}
		return 0;
	}
	for (size_t i = 0; i < r->nvalues; i++) {
		const char *m = names_label_value(r->values[i]);
		if (m) {
			set_err(err, errlen, "values[%zu]: Invalid value: \"%s\": %s", i,
				r->values[i], m);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- label lexer ---------------------------------------------------------- */

enum tok {
	T_ERROR,
	T_EOS,
	T_IDENT,
	T_NOTEXIST,
	T_NE,
	T_EQ,
	T_DEQ,
	T_GT,
	T_LT,
	T_IN,
	T_NOTIN,
	T_OPEN,
	T_CLOSE,
	T_COMMA,
};

struct token {
	enum tok t;
	char *lit; /* malloc'ed literal */
};

struct lexer {
	const char *s;
	size_t pos;
	struct token *toks;
	size_t n, cap;
	size_t at; /* parser position */
};

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
	return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

static enum tok special_tok(const char *s, size_t n)
{
	static const struct {
		const char *s;
		enum tok t;
	} map[] = {
	    {"!", T_NOTEXIST}, {"!=", T_NE},  {"=", T_EQ},    {"==", T_DEQ},  {">", T_GT},
	    {"<", T_LT},       {"(", T_OPEN}, {")", T_CLOSE}, {",", T_COMMA},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strlen(map[i].s) == n && memcmp(map[i].s, s, n) == 0)
			return map[i].t;
	return T_ERROR;
}

static int lex_push(struct lexer *l, enum tok t, const char *s, size_t n)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct token *nt = realloc(l->toks, cap * sizeof(*nt));
		if (!nt)
			return -ENOMEM;
		l->toks = nt;
		l->cap = cap;
	}
	char *lit = strndup(s, n);
	if (!lit)
		return -ENOMEM;
	l->toks[l->n].t = t;
	l->toks[l->n].lit = lit;
	l->n++;
	return 0;
}

/* Longest run of special characters that still forms a known token. */
static int lex_special(struct lexer *l)
{
	const char *start = l->s + l->pos;
	size_t len = 0, best = 0;
	enum tok bt = T_ERROR;
	while (is_special(start[len])) {
		len++;
		enum tok t = special_tok(start, len);
		if (t != T_ERROR) {
			best = len;
			bt = t;
		} else if (bt != T_ERROR) {
			break;
		}
	}
	if (bt == T_ERROR) {
		char msg[160];
		snprintf(msg, sizeof(msg), "error expected: keyword found '%.*s'", (int)len, start);
		l->pos += len;
		return lex_push(l, T_ERROR, msg, strlen(msg));
	}
	l->pos += best;
	return lex_push(l, bt, start, best);
}

static int lex_ident(struct lexer *l)
{
	const char *start = l->s + l->pos;
	size_t len = 0;
	while (start[len] && !is_ws(start[len]) && !is_special(start[len]))
		len++;
	l->pos += len;
	enum tok t = T_IDENT;
	if (len == 2 && memcmp(start, "in", 2) == 0)
		t = T_IN;
	else if (len == 5 && memcmp(start, "notin", 5) == 0)
		t = T_NOTIN;
	return lex_push(l, t, start, len);
}

static int lex_all(struct lexer *l)
{
	for (;;) {
		while (is_ws(l->s[l->pos]))
			l->pos++;
		char c = l->s[l->pos];
		int rc;
		if (!c)
			return lex_push(l, T_EOS, "", 0);
		rc = is_special(c) ? lex_special(l) : lex_ident(l);
		if (rc < 0)
			return rc;
	}
}

static void lex_free(struct lexer *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->toks[i].lit);
	free(l->toks);
}

/* In the "values" context the keywords in/notin are plain identifiers. */
static enum tok peek_v(struct lexer *l, const char **lit)
{
	struct token *t = &l->toks[l->at];
	*lit = t->lit;
	return (t->t == T_IN || t->t == T_NOTIN) ? T_IDENT : t->t;
}

static enum tok next_v(struct lexer *l, const char **lit)
{
	enum tok t = peek_v(l, lit);
	if (l->toks[l->at].t != T_EOS)
		l->at++;
	return t;
}

static enum tok next_k(struct lexer *l, const char **lit)
{
	struct token *t = &l->toks[l->at];
	*lit = t->lit;
	if (t->t != T_EOS)
		l->at++;
	return t->t;
}

/* ---- label parser --------------------------------------------------------- */

static int parse_key(struct lexer *l, struct lreq *r, char *err, size_t errlen)
{
	const char *lit;
	enum tok t = next_v(l, &lit);
	bool neg = false;
	if (t == T_NOTEXIST) {
		neg = true;
		t = next_v(l, &lit);
	}
	if (t != T_IDENT) {
		set_err(err, errlen, "found '%s', expected: identifier", lit);
		return -EINVAL;
	}
	const char *m = names_qualified_name(lit);
	if (m) {
		set_err(err, errlen, "<nil>: Invalid value: \"%s\": %s", lit, m);
		return -EINVAL;
	}
	r->key = strdup(lit);
	if (!r->key)
		return -ENOMEM;
	enum tok la = peek_v(l, &lit);
	if (neg)
		r->op = LOP_NOTEXISTS;
	else if (la == T_EOS || la == T_COMMA)
		r->op = LOP_EXISTS;
	else
		r->op = LOP_EQ; /* provisional: the operator follows */
	return 0;
}

static int parse_op(struct lexer *l, struct lreq *r, char *err, size_t errlen)
{
	const char *lit;
	switch (next_k(l, &lit)) {
	case T_IN: r->op = LOP_IN; return 0;
	case T_NOTIN: r->op = LOP_NOTIN; return 0;
	case T_EQ: r->op = LOP_EQ; return 0;
	case T_DEQ: r->op = LOP_DEQ; return 0;
	case T_NE: r->op = LOP_NE; return 0;
	case T_GT: r->op = LOP_GT; return 0;
	case T_LT: r->op = LOP_LT; return 0;
	default:
		set_err(err, errlen, "found '%s', expected: in, notin, =, ==, !=, gt, lt", lit);
		return -EINVAL;
	}
}

/* "(a,b,,c)" after '(' was consumed; accepts empty members like kube. */
static int parse_ident_list(struct lexer *l, struct lreq *r, char *err, size_t errlen)
{
	const char *lit, *lit2;
	int rc;
	for (;;) {
		enum tok t = next_v(l, &lit);
		if (t == T_IDENT) {
			if ((rc = lreq_add_value(r, lit, strlen(lit))) < 0)
				return rc;
			enum tok t2 = peek_v(l, &lit2);
			if (t2 == T_COMMA)
				continue;
			if (t2 == T_CLOSE)
				return 0;
			set_err(err, errlen, "found '%s', expected: ',' or ')'", lit2);
			return -EINVAL;
		}
		if (t != T_COMMA) {
			set_err(err, errlen, "found '%s', expected: ',', or identifier", lit);
			return -EINVAL;
		}
		if (r->nvalues == 0 && (rc = lreq_add_value(r, "", 0)) < 0)
			return rc;
		enum tok t2 = peek_v(l, &lit2);
		if (t2 == T_CLOSE)
			return lreq_add_value(r, "", 0);
		if (t2 == T_COMMA) {
			next_v(l, &lit2);
			if ((rc = lreq_add_value(r, "", 0)) < 0)
				return rc;
		}
	}
}

static int parse_values(struct lexer *l, struct lreq *r, char *err, size_t errlen)
{
	const char *lit, *lit2;
	if (next_v(l, &lit) != T_OPEN) {
		set_err(err, errlen, "found '%s' expected: '('", lit);
		return -EINVAL;
	}
	enum tok t = peek_v(l, &lit);
	if (t == T_CLOSE) {
		next_v(l, &lit);
		return lreq_add_value(r, "", 0);
	}
	if (t != T_IDENT && t != T_COMMA) {
		set_err(err, errlen, "found '%s', expected: ',', ')' or identifier", lit);
		return -EINVAL;
	}
	int rc = parse_ident_list(l, r, err, errlen);
	if (rc < 0)
		return rc;
	if (next_v(l, &lit2) != T_CLOSE) {
		set_err(err, errlen, "found '%s', expected: ')'", lit);
		return -EINVAL;
	}
	return 0;
}

static int parse_exact(struct lexer *l, struct lreq *r, char *err, size_t errlen)
{
	const char *lit;
	enum tok t = peek_v(l, &lit);
	if (t == T_EOS || t == T_COMMA)
		return lreq_add_value(r, "", 0);
	t = next_v(l, &lit);
	if (t == T_IDENT)
		return lreq_add_value(r, lit, strlen(lit));
	set_err(err, errlen, "found '%s', expected: identifier", lit);
	return -EINVAL;
}

static int parse_requirement(struct lexer *l, struct lreq *r, char *err, size_t errlen)
{
	int rc = parse_key(l, r, err, errlen);
	if (rc < 0 || r->op == LOP_EXISTS || r->op == LOP_NOTEXISTS)
		return rc;
	if ((rc = parse_op(l, r, err, errlen)) < 0)
		return rc;
	if (r->op == LOP_IN || r->op == LOP_NOTIN)
		rc = parse_values(l, r, err, errlen);
	else
		rc = parse_exact(l, r, err, errlen);
	if (rc < 0)
		return rc;
	return lreq_validate(r, err, errlen);
}

/* One requirement plus what follows it; 1 when the selector ended. */
static int parse_one(struct lexer *l, struct sel_label *s, char *err, size_t errlen)
{
	char inner[512] = "";
	struct lreq r = {0};
	const char *lit;
	int rc = parse_requirement(l, &r, inner, sizeof(inner));
	if (rc < 0) {
		lreq_clear(&r);
		if (rc == -EINVAL)
			set_err(err, errlen, "unable to parse requirement: %s", inner);
		return rc;
	}
	if ((rc = sel_push(s, &r)) < 0)
		return rc;
	enum tok t = next_v(l, &lit);
	if (t == T_EOS)
		return 1;
	if (t != T_COMMA) {
		set_err(err, errlen, "found '%s', expected: ',' or 'end of string'", lit);
		return -EINVAL;
	}
	t = peek_v(l, &lit);
	if (t != T_IDENT && t != T_NOTEXIST) {
		set_err(err, errlen, "found '%s', expected: identifier after ','", lit);
		return -EINVAL;
	}
	return 0;
}

static int parse_label(struct lexer *l, struct sel_label *s, char *err, size_t errlen)
{
	const char *lit;
	for (;;) {
		enum tok t = peek_v(l, &lit);
		if (t == T_EOS)
			return 0;
		if (t != T_IDENT && t != T_NOTEXIST) {
			set_err(err, errlen,
				"found '%s', expected: !, identifier, or 'end of string'", lit);
			return -EINVAL;
		}
		int rc = parse_one(l, s, err, errlen);
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
}

int sel_label_parse(const char *s, struct sel_label **out, char *err, size_t errlen)
{
	struct lexer l = {.s = s ? s : ""};
	struct sel_label *sel = calloc(1, sizeof(*sel));
	int rc = -ENOMEM;
	*out = NULL;
	if (!sel)
		return -ENOMEM;
	if ((rc = lex_all(&l)) < 0)
		goto fail;
	if ((rc = parse_label(&l, sel, err, errlen)) < 0)
		goto fail;
	if (sel->nreqs > 1)
		qsort(sel->reqs, sel->nreqs, sizeof(*sel->reqs), cmp_req);
	lex_free(&l);
	*out = sel;
	return 0;
fail:
	lex_free(&l);
	sel_label_free(sel);
	return rc;
}

/* ---- label selector from metav1.LabelSelector ------------------------------ */

static int obj_req(struct sel_label *s, const char *key, enum lop op, const json_t *vals,
		   const char *path, char *err, size_t errlen)
{
	struct lreq r = {.op = op};
	const char *m = names_qualified_name(key);
	int rc;
	if (m) {
		set_err(err, errlen, "%s: Invalid value: \"%s\": %s", path, key, m);
		return -EINVAL;
	}
	if (!(r.key = strdup(key)))
		return -ENOMEM;
	size_t i;
	json_t *v;
	json_array_foreach (vals, i, v) {
		const char *sv = json_is_string(v) ? json_string_value(v) : "";
		if ((rc = lreq_add_value(&r, sv, strlen(sv))) < 0)
			goto fail;
	}
	if ((rc = lreq_validate(&r, err, errlen)) < 0)
		goto fail;
	return sel_push(s, &r);
fail:
	lreq_clear(&r);
	return rc;
}

static int obj_match_labels(struct sel_label *s, const json_t *ml, char *err, size_t errlen)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)ml, k, v) {
		json_t *arr = json_pack("[s]", json_is_string(v) ? json_string_value(v) : "");
		if (!arr)
			return -ENOMEM;
		int rc = obj_req(s, k, LOP_EQ, arr, "key", err, errlen);
		json_decref(arr);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int obj_expr_op(const char *op, enum lop *out)
{
	static const struct {
		const char *s;
		enum lop op;
	} ops[] = {
	    {"In", LOP_IN},
	    {"NotIn", LOP_NOTIN},
	    {"Exists", LOP_EXISTS},
	    {"DoesNotExist", LOP_NOTEXISTS},
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (op && strcmp(op, ops[i].s) == 0) {
			*out = ops[i].op;
			return 0;
		}
	return -EINVAL;
}

static int obj_match_exprs(struct sel_label *s, const json_t *me, char *err, size_t errlen)
{
	size_t i;
	json_t *e;
	json_array_foreach (me, i, e) {
		const char *key = json_string_value(json_object_get(e, "key"));
		const char *op = json_string_value(json_object_get(e, "operator"));
		enum lop lop;
		if (obj_expr_op(op, &lop) < 0) {
			set_err(err, errlen, "\"%s\" is not a valid label selector operator",
				op ? op : "");
			return -EINVAL;
		}
		int rc = obj_req(s, key ? key : "", lop, json_object_get(e, "values"), "key", err,
				 errlen);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int sel_label_from_object(const json_t *ls, struct sel_label **out, char *err, size_t errlen)
{
	struct sel_label *sel = calloc(1, sizeof(*sel));
	int rc;
	*out = NULL;
	if (!sel)
		return -ENOMEM;
	if (!ls || json_is_null(ls)) {
		sel->nothing = true;
		*out = sel;
		return 0;
	}
	if (!json_is_object(ls)) {
		set_err(err, errlen, "invalid label selector: not an object");
		rc = -EINVAL;
		goto fail;
	}
	if ((rc = obj_match_labels(sel, json_object_get(ls, "matchLabels"), err, errlen)) < 0)
		goto fail;
	if ((rc = obj_match_exprs(sel, json_object_get(ls, "matchExpressions"), err, errlen)) < 0)
		goto fail;
	if (sel->nreqs > 1)
		qsort(sel->reqs, sel->nreqs, sizeof(*sel->reqs), cmp_req);
	*out = sel;
	return 0;
fail:
	sel_label_free(sel);
	return rc;
}

/* ---- label matching ------------------------------------------------------- */

static bool has_value(const struct lreq *r, const char *v)
{
	for (size_t i = 0; i < r->nvalues; i++)
		if (strcmp(r->values[i], v) == 0)
			return true;
	return false;
}

static bool cmp_int(const char *have, const char *want, bool gt)
{
	if (!is_integer(have))
		return false;
	long long a = strtoll(have, NULL, 10), b = strtoll(want, NULL, 10);
	return gt ? a > b : a < b;
}

static bool lreq_match(const struct lreq *r, const json_t *labels)
{
	json_t *v = labels ? json_object_get(labels, r->key) : NULL;
	const char *sv = json_is_string(v) ? json_string_value(v) : NULL;
	switch (r->op) {
	case LOP_EQ:
	case LOP_DEQ:
	case LOP_IN: return sv && has_value(r, sv);
	case LOP_NE:
	case LOP_NOTIN: return !sv || !has_value(r, sv);
	case LOP_EXISTS: return sv != NULL;
	case LOP_NOTEXISTS: return sv == NULL;
	case LOP_GT:
	case LOP_LT: return sv && cmp_int(sv, r->values[0], r->op == LOP_GT);
	}
	return false;
}

bool sel_label_match(const struct sel_label *s, const json_t *labels)
{
	if (!s)
		return true;
	if (s->nothing)
		return false;
	if (labels && !json_is_object(labels))
		labels = NULL;
	for (size_t i = 0; i < s->nreqs; i++)
		if (!lreq_match(&s->reqs[i], labels))
			return false;
	return true;
}

bool sel_label_empty(const struct sel_label *s)
{
	return !s || (!s->nothing && s->nreqs == 0);
}

/* ---- label selector text ---------------------------------------------------- */

static int req_string(struct kb_buf *b, const struct lreq *r)
{
	static const char *const opstr[] = {
	    [LOP_EQ] = "=",          [LOP_DEQ] = "==", [LOP_NE] = "!=", [LOP_IN] = " in ",
	    [LOP_NOTIN] = " notin ", [LOP_GT] = ">",   [LOP_LT] = "<",
	};
	int rc = 0;
	if (r->op == LOP_NOTEXISTS)
		rc |= kb_buf_puts(b, "!");
	rc |= kb_buf_puts(b, r->key);
	if (r->op == LOP_EXISTS || r->op == LOP_NOTEXISTS)
		return rc;
	rc |= kb_buf_puts(b, opstr[r->op]);
	bool set = r->op == LOP_IN || r->op == LOP_NOTIN;
	if (set)
		rc |= kb_buf_puts(b, "(");
	for (size_t i = 0; i < r->nvalues; i++) {
		if (i)
			rc |= kb_buf_puts(b, ",");
		rc |= kb_buf_puts(b, r->values[i]);
	}
	if (set)
		rc |= kb_buf_puts(b, ")");
	return rc ? -ENOMEM : 0;
}

char *sel_label_string(const struct sel_label *s)
{
	struct kb_buf b = {0};
	if (kb_buf_puts(&b, "") < 0)
		return NULL;
	for (size_t i = 0; s && !s->nothing && i < s->nreqs; i++) {
		if ((i && kb_buf_puts(&b, ",") < 0) || req_string(&b, &s->reqs[i]) < 0) {
			kb_buf_free(&b);
			return NULL;
		}
	}
	return b.data;
}

/* ---- field selectors ------------------------------------------------------ */

enum fop { FOP_EQ, FOP_NE };

struct fterm {
	char *label;      /* as written: "metadata.name", "source" */
	char *path;       /* dotted path read from the object */
	const char *dflt; /* value when the path is missing */
	enum fop op;
	char *value; /* unescaped */
};

struct sel_field {
	struct fterm *terms;
	size_t n;
};

/* Field labels that do not read the same-named path, per kind. */
static const struct {
	const char *group, *kind, *label, *path, *dflt;
} field_alias[] = {
    {"", "Event", "source", "source.component", ""},
    {"batch", "Job", "status.successful", "status.succeeded", "0"},
    {"", "Node", "spec.unschedulable", "spec.unschedulable", "false"},
    {"", "Pod", "spec.hostNetwork", "spec.hostNetwork", "false"},
    {"", "ReplicationController", "status.replicas", "status.replicas", "0"},
    {"apps", "ReplicaSet", "status.replicas", "status.replicas", "0"},
};

static void field_resolve(const struct proxy_resource *r, const char *label, const char **path,
			  const char **dflt)
{
	*path = label;
	*dflt = "";
	if (!r)
		return;
	for (size_t i = 0; i < sizeof(field_alias) / sizeof(field_alias[0]); i++) {
		if (strcmp(field_alias[i].group, r->group ? r->group : "") == 0 &&
		    strcmp(field_alias[i].kind, r->kind ? r->kind : "") == 0 &&
		    strcmp(field_alias[i].label, label) == 0) {
			*path = field_alias[i].path;
			*dflt = field_alias[i].dflt;
			return;
		}
	}
}

static bool field_supported(const struct proxy_resource *r, const char *label)
{
	if (strcmp(label, "metadata.name") == 0 || strcmp(label, "metadata.namespace") == 0)
		return true;
	for (const char *const *f = r ? r->field_selectors : NULL; f && *f; f++)
		if (strcmp(*f, label) == 0)
			return true;
	return false;
}

void sel_field_free(struct sel_field *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->terms[i].label);
		free(f->terms[i].path);
		free(f->terms[i].value);
	}
	free(f->terms);
	free(f);
}

/* UnescapeValue: "\\" "\," "\=" are escapes; any other '\' or a bare ',' or
 * '=' is an error. Writes into a new string. */
static int unescape_value(const char *s, size_t n, char **out, char *err, size_t errlen)
{
	char *o = malloc(n + 1), *w = o;
	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\\') {
			if (i + 1 >= n ||
			    (s[i + 1] != '\\' && s[i + 1] != ',' && s[i + 1] != '=')) {
				set_err(err, errlen,
					"invalid field selector: invalid escape "
					"sequence: %.*s",
					(int)(i + 1 < n ? 2 : 1), s + i);
				free(o);
				return -EINVAL;
			}
			*w++ = s[++i];
		} else if (c == ',' || c == '=') {
			set_err(err, errlen,
				"invalid field selector: unescaped character in "
				"value: %c",
				c);
			free(o);
			return -EINVAL;
		} else {
			*w++ = c;
		}
	}
	*w = '\0';
	*out = o;
	return 0;
}

/* Finds the operator at the first position not preceded by an escape. */
static bool split_term(const char *t, size_t n, size_t *lhs, size_t *rhs_at, enum fop *op)
{
	static const struct {
		const char *s;
		enum fop op;
	} ops[] = {
	    {"!=", FOP_NE},
	    {"==", FOP_EQ},
	    {"=", FOP_EQ},
	};
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '\\') {
			i++;
			continue;
		}
		for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
			size_t ol = strlen(ops[k].s);
			if (i + ol <= n && memcmp(t + i, ops[k].s, ol) == 0) {
				*lhs = i;
				*rhs_at = i + ol;
				*op = ops[k].op;
				return true;
			}
		}
	}
	return false;
}

static int add_term(struct sel_field *f, const char *sel, const char *t, size_t n,
		    const struct proxy_resource *r, char *err, size_t errlen)
{
	size_t lhs, rhs;
	enum fop op;
	if (!split_term(t, n, &lhs, &rhs, &op)) {
		set_err(err, errlen, "invalid selector: '%s'; can't understand '%.*s'", sel, (int)n,
			t);
		return -EINVAL;
	}
	struct fterm *nt = realloc(f->terms, (f->n + 1) * sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	f->terms = nt;
	struct fterm *ft = &nt[f->n];
	memset(ft, 0, sizeof(*ft));
	f->n++;
	ft->op = op;
	if (!(ft->label = strndup(t, lhs)))
		return -ENOMEM;
	int rc = unescape_value(t + rhs, n - rhs, &ft->value, err, errlen);
	if (rc < 0)
		return rc;
	if (!field_supported(r, ft->label)) {
		set_err(err, errlen, "field label not supported: %s", ft->label);
		return -EINVAL;
	}
	const char *path;
	field_resolve(r, ft->label, &path, &ft->dflt);
	return (ft->path = strdup(path)) ? 0 : -ENOMEM;
}

int sel_field_parse(const char *s, const struct proxy_resource *r, struct sel_field **out,
		    char *err, size_t errlen)
{
	struct sel_field *f = calloc(1, sizeof(*f));
	int rc = 0;
	*out = NULL;
	if (!f)
		return -ENOMEM;
	s = s ? s : "";
	size_t start = 0, i = 0, len = strlen(s);
	for (; i <= len; i++) {
		if (s[i] == '\\' && i + 1 < len) {
			i++;
			continue;
		}
		if (i < len && s[i] != ',')
			continue;
		if (i > start && (rc = add_term(f, s, s + start, i - start, r, err, errlen)) < 0)
			goto fail;
		start = i + 1;
	}
	*out = f;
	return 0;
fail:
	sel_field_free(f);
	return rc;
}

/* Reads a dotted path; renders scalars as kube's field sets would. */
static void field_value(const json_t *obj, const char *path, const char *dflt, char *buf,
			size_t len, const char **out)
{
	char seg[256];
	const json_t *cur = obj;
	const char *p = path;
	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		snprintf(seg, sizeof(seg), "%.*s", (int)n, p);
		cur = json_is_object(cur) ? json_object_get(cur, seg) : NULL;
		p += n + (dot ? 1 : 0);
	}
	*out = buf;
	if (json_is_string(cur))
		*out = json_string_value(cur);
	else if (json_is_integer(cur))
		snprintf(buf, len, "%lld", (long long)json_integer_value(cur));
	else if (json_is_real(cur))
		snprintf(buf, len, "%g", json_real_value(cur));
	else if (json_is_boolean(cur))
		snprintf(buf, len, "%s", json_is_true(cur) ? "true" : "false");
	else
		*out = dflt;
}

bool sel_field_match(const struct sel_field *f, const json_t *obj)
{
	char buf[64];
	const char *v;
	for (size_t i = 0; f && i < f->n; i++) {
		const struct fterm *t = &f->terms[i];
		field_value(obj, t->path, t->dflt, buf, sizeof(buf), &v);
		bool eq = strcmp(v, t->value) == 0;
		if (eq != (t->op == FOP_EQ))
			return false;
	}
	return true;
}

const char *sel_field_exact(const struct sel_field *f, const char *field)
{
	for (size_t i = 0; f && i < f->n; i++)
		if (f->terms[i].op == FOP_EQ && strcmp(f->terms[i].label, field) == 0)
			return f->terms[i].value;
	return NULL;
}
