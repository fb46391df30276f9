/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL's compiler: a lexer and a recursive-descent parser for the whole CEL
 * grammar (with the optional-types syntax kube enables), expansion of the
 * macros (has, all, exists, exists_one, map, filter and the two-variable
 * comprehensions) into comprehension nodes, then a resolution pass against
 * the environment: undeclared variables and functions, qualified function
 * names (optional.of, sets.contains, base64.encode, ...), field selections
 * checked against a variable's OpenAPI schema, constant regular
 * expressions compiled once, and cel-go's type checking, each node typed
 * on the way up (the types and signatures are check.c's); then the cost
 * estimate (cost.c). Errors are reported in cel-go's form, with the source
 * line and a caret under the column.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/ast.h"
#include "proxy/cel/check.h"
#include "proxy/cel/std.h"
#include "lib/log.h"
#include "lib/util.h"

#define MAX_DEPTH 250 /* cel-go's default parser recursion limit */
/* Left-associative chains (a + b + c ...) nest without recursing in the
 * parser, but the tree's depth is what the checker and the evaluator recurse
 * on: bounded too, so that a long chain cannot exhaust a small stack. */
#define MAX_CHAIN  2000
#define MAX_ERRORS 100 /* cel-go's default limit of errors reported */

/* ---- program memory ---- */

struct cel_block {
	struct cel_block *next;
	max_align_t data[];
};

void *cel_prog_alloc(cel_program_t *p, size_t n)
{
	struct cel_block *b = calloc(1, sizeof(*b) + n);
	KB_REQUIRE(b != NULL);
	b->next = p->mem;
	p->mem = b;
	return b->data;
}

static void *pmalloc(cel_program_t *p, size_t n)
{
	return cel_prog_alloc(p, n);
}

static char *pstrndup(cel_program_t *p, const char *s, size_t n)
{
	char *d = pmalloc(p, n + 1);
	memcpy(d, s, n);
	return d;
}

/* ---- lexer ---- */

enum tk {
	T_EOF,
	T_IDENT,
	T_INT,
	T_UINT,
	T_DOUBLE,
	T_STRING,
	T_BYTES,
	T_PUNCT, /* operators and punctuation: text in tok.p/len */
	T_ERROR,
};

struct tok {
	enum tk kind;
	unsigned pos, len;
	const char *p;
	cel_value_t val; /* literals */
};

struct parser {
	cel_program_t *prog;
	const char *src;
	size_t n;
	size_t at; /* lexer position */
	struct tok t;
	int depth;
	char *err; /* first error (malloc'd, without the source snippet) */
	unsigned errpos;
	const struct cel_env *env;
	int in_format; /* inside format()'s arguments: mixed literals allowed */
	int chain;     /* operators of left-associative chains on the current path */
	/* The checker reports every error, as cel-go's does (the parser stops
	 * at its first). */
	bool checking;
	struct {
		unsigned pos;
		char *msg;
	} errs[MAX_ERRORS];
	size_t nerrs;
};

static void perr(struct parser *ps, unsigned pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void perr(struct parser *ps, unsigned pos, const char *fmt, ...)
{
	if (ps->err || (ps->checking && ps->nerrs == MAX_ERRORS))
		return;
	va_list ap;
	va_start(ap, fmt);
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	char *msg = strdup(buf);
	KB_REQUIRE(msg != NULL);
	if (ps->checking) {
		ps->errs[ps->nerrs].pos = pos;
		ps->errs[ps->nerrs++].msg = msg;
		return;
	}
	ps->err = msg;
	ps->errpos = pos;
}

static bool is_ident_start(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

static void skip_space(struct parser *ps)
{
	for (;;) {
		char ch = ps->at < ps->n ? ps->src[ps->at] : 0;
		if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f') {
			ps->at++;
		} else if (ch == '/' && ps->at + 1 < ps->n && ps->src[ps->at + 1] == '/') {
			while (ps->at < ps->n && ps->src[ps->at] != '\n')
				ps->at++;
		} else {
			return;
		}
	}
}

/* Appends code point cp as UTF-8 to buf. */
static size_t put_utf8(char *buf, uint32_t cp)
{
	if (cp < 0x80) {
		buf[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		buf[0] = (char)(0xc0 | (cp >> 6));
		buf[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		buf[0] = (char)(0xe0 | (cp >> 12));
		buf[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		buf[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	buf[0] = (char)(0xf0 | (cp >> 18));
	buf[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	buf[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	buf[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* One escape sequence at s[*i] (after the backslash); appends to out. */
static int lex_escape(const char *s, size_t end, size_t *i, char *out, size_t *o, bool bytes)
{
	char ch = s[*i];
	static const char simple[] = "abfnrtv\\'\"`?";
	static const char value[] = "\a\b\f\n\r\t\v\\'\"`?";
	const char *k = ch ? strchr(simple, ch) : NULL;
	if (k) {
		out[(*o)++] = value[k - simple];
		(*i)++;
		return 0;
	}
	int digits = ch == 'x' || ch == 'X' ? 2 : ch == 'u' ? 4 : ch == 'U' ? 8 : 0;
	if (digits) {
		uint32_t cp = 0;
		for (int d = 1; d <= digits; d++) {
			int h = *i + d < end ? kb_hexval(s[*i + d]) : -1;
			if (h < 0)
				return -EINVAL;
			cp = cp * 16 + (uint32_t)h;
		}
		*i += (size_t)digits + 1;
		if (digits == 2 && bytes) {
			out[(*o)++] = (char)cp;
			return 0;
		}
		if (digits > 2 && bytes)
			return -EINVAL;
		if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
			return -EINVAL;
		*o += put_utf8(out + *o, cp);
		return 0;
	}
	if (ch >= '0' && ch <= '3') {
		uint32_t v = 0;
		for (int d = 0; d < 3; d++) {
			char oc = *i + (size_t)d < end ? s[*i + (size_t)d] : 0;
			if (oc < '0' || oc > '7')
				return -EINVAL;
			v = v * 8 + (uint32_t)(oc - '0');
		}
		*i += 3;
		if (bytes)
			out[(*o)++] = (char)v;
		else
			*o += put_utf8(out + *o, v);
		return 0;
	}
	return -EINVAL;
}

static bool lex_string(struct parser *ps, size_t start, bool raw, bool bytes)
{
	const char *s = ps->src;
	char q = s[ps->at];
	bool triple = ps->at + 2 < ps->n && s[ps->at + 1] == q && s[ps->at + 2] == q;
	size_t i = ps->at + (triple ? 3 : 1);
	char *out = pmalloc(ps->prog, ps->n - ps->at + 1); /* escapes never grow */
	size_t o = 0;
	for (;;) {
		if (i >= ps->n || (!triple && (s[i] == '\n' || s[i] == '\r')))
			goto unterminated;
		if (s[i] == q && (!triple || (i + 2 < ps->n && s[i + 1] == q && s[i + 2] == q)))
			break;
		if (s[i] == '\\' && !raw) {
			i++;
			if (i >= ps->n || lex_escape(s, ps->n, &i, out, &o, bytes) < 0) {
				perr(ps, (unsigned)start,
				     "Syntax error: token recognition error at: '%.*s'",
				     (int)(i + 1 - start > 40 ? 40 : i + 1 - start), s + start);
				return false;
			}
		} else {
			out[o++] = s[i++];
		}
	}
	ps->at = i + (triple ? 3 : 1);
	ps->t.kind = bytes ? T_BYTES : T_STRING;
	ps->t.val = bytes ? cel_bytes(out, o) : cel_string_n(out, o);
	return true;
unterminated:
	perr(ps, (unsigned)start, "Syntax error: token recognition error at: '%.*s'",
	     (int)(ps->n - start > 40 ? 40 : ps->n - start), s + start);
	return false;
}

static bool lex_number(struct parser *ps)
{
	const char *s = ps->src;
	size_t i = ps->at, start = i;
	bool hex = s[i] == '0' && i + 1 < ps->n && (s[i + 1] == 'x' || s[i + 1] == 'X');
	bool isdouble = false;
	if (hex) {
		i += 2;
		while (i < ps->n && kb_hexval(s[i]) >= 0)
			i++;
	} else {
		while (i < ps->n && is_digit(s[i]))
			i++;
		if (i + 1 < ps->n && s[i] == '.' && is_digit(s[i + 1])) {
			isdouble = true;
			i++;
			while (i < ps->n && is_digit(s[i]))
				i++;
		}
		if (i < ps->n && (s[i] == 'e' || s[i] == 'E')) {
			size_t j = i + 1;
			if (j < ps->n && (s[j] == '+' || s[j] == '-'))
				j++;
			if (j < ps->n && is_digit(s[j])) {
				isdouble = true;
				i = j;
				while (i < ps->n && is_digit(s[i]))
					i++;
			}
		}
	}
	char buf[128];
	size_t len = i - start;
	if (len >= sizeof(buf))
		len = sizeof(buf) - 1;
	memcpy(buf, s + start, len);
	buf[len] = 0;
	ps->t.len = (unsigned)(i - start);
	if (isdouble) {
		ps->t.kind = T_DOUBLE;
		ps->t.val = cel_double(strtod(buf, NULL));
		ps->at = i;
		return true;
	}
	bool u = i < ps->n && (s[i] == 'u' || s[i] == 'U');
	errno = 0;
	unsigned long long v = strtoull(hex ? buf + 2 : buf, NULL, hex ? 16 : 10);
	bool range = errno != ERANGE && !(hex && len == 2);
	ps->at = i + (u ? 1 : 0);
	if (u) {
		ps->t.kind = T_UINT;
		ps->t.val = cel_uint(v);
		if (!range)
			perr(ps, (unsigned)start, "invalid uint literal");
		return range;
	}
	ps->t.kind = T_INT;
	/* INT64_MIN is reachable through unary minus: kept as uint here. */
	ps->t.val = cel_uint(v);
	if (!range || v > (unsigned long long)INT64_MAX + 1)
		perr(ps, (unsigned)start, "invalid int literal");
	return !ps->err;
}

static const char *const puncts[] = {"==", "!=", "<=", ">=", "&&", "||", "<", ">", "!",
				     "?",  ":",  ".",  ",",  "[",  "]",  "(", ")", "{",
				     "}",  "+",  "-",  "*",  "/",  "%",  "=", NULL};

static bool lex_punct(struct parser *ps)
{
	for (int k = 0; puncts[k]; k++) {
		size_t l = strlen(puncts[k]);
		if (ps->at + l <= ps->n && memcmp(ps->src + ps->at, puncts[k], l) == 0) {
			if (l == 1 && puncts[k][0] == '=')
				break;
			ps->t.kind = T_PUNCT;
			ps->at += l;
			return true;
		}
	}
	size_t len = 1; /* the whole character, not a byte of it */
	while (ps->at + len < ps->n && ((unsigned char)ps->src[ps->at + len] & 0xc0) == 0x80)
		len++;
	perr(ps, (unsigned)ps->at, "Syntax error: token recognition error at: '%.*s'", (int)len,
	     ps->src + ps->at);
	return false;
}

/* Reads the next token into ps->t. */
static void next(struct parser *ps)
{
	skip_space(ps);
	struct tok *t = &ps->t;
	memset(t, 0, sizeof(*t));
	t->pos = (unsigned)ps->at;
	t->p = ps->src + ps->at;
	if (ps->at >= ps->n) {
		t->kind = T_EOF;
		return;
	}
	const char *s = ps->src;
	size_t i = ps->at;
	bool ok;
	if (is_ident_start(s[i])) {
		/* string prefixes: r, b, rb, br (any case) */
		size_t j = i;
		bool raw = false, bytes = false;
		while (j < ps->n && j < i + 2 && strchr("rRbB", s[j])) {
			if (s[j] == 'r' || s[j] == 'R')
				raw = true;
			else
				bytes = true;
			j++;
		}
		if (j < ps->n && (s[j] == '"' || s[j] == '\'') &&
		    !(j == i + 2 && ((s[i] | 32) == (s[i + 1] | 32)))) {
			ps->at = j;
			ok = lex_string(ps, i, raw, bytes);
		} else {
			while (i < ps->n && (is_ident_start(s[i]) || is_digit(s[i])))
				i++;
			t->kind = T_IDENT;
			ps->at = i;
			ok = true;
		}
	} else if (s[i] == '"' || s[i] == '\'') {
		ok = lex_string(ps, i, false, false);
	} else if (is_digit(s[i]) || (s[i] == '.' && i + 1 < ps->n && is_digit(s[i + 1]))) {
		ok = lex_number(ps);
	} else {
		ok = lex_punct(ps);
	}
	if (!ok)
		t->kind = T_ERROR;
	t->len = (unsigned)(ps->at - t->pos);
}

static bool is(struct parser *ps, const char *punct)
{
	return ps->t.kind == T_PUNCT && ps->t.len == strlen(punct) &&
	       memcmp(ps->t.p, punct, ps->t.len) == 0;
}

static bool is_word(struct parser *ps, const char *w)
{
	return ps->t.kind == T_IDENT && ps->t.len == strlen(w) &&
	       memcmp(ps->t.p, w, ps->t.len) == 0;
}

static void unexpected(struct parser *ps, const char *expecting)
{
	if (ps->t.kind == T_ERROR)
		return;
	if (ps->t.kind == T_EOF)
		perr(ps, ps->t.pos, "Syntax error: mismatched input '<EOF>' expecting %s",
		     expecting);
	else
		perr(ps, ps->t.pos, "Syntax error: mismatched input '%.*s' expecting %s",
		     (int)ps->t.len, ps->t.p, expecting);
}

static bool expect(struct parser *ps, const char *punct)
{
	if (is(ps, punct)) {
		next(ps);
		return true;
	}
	char want[8];
	snprintf(want, sizeof(want), "'%s'", punct);
	/* ANTLR's single-token insertion: a closer missing at the end */
	if (ps->t.kind == T_EOF && strchr(")]}", punct[0]))
		perr(ps, ps->t.pos, "Syntax error: missing %s at '<EOF>'", want);
	else
		unexpected(ps, want);
	return false;
}

/* The kind of the token after the current one. */
static enum tk peek(const struct parser *ps)
{
	struct parser copy = *ps;
	copy.err = NULL;
	next(&copy);
	free(copy.err);
	return copy.t.kind;
}

/* Input left after a whole expression: ANTLR's single-token deletion
 * ("extraneous input") when only one token is left, else a mismatch. */
static void trailing(struct parser *ps)
{
	if (ps->t.kind == T_ERROR)
		return;
	if (peek(ps) == T_EOF)
		perr(ps, ps->t.pos, "Syntax error: extraneous input '%.*s' expecting <EOF>",
		     (int)ps->t.len, ps->t.p);
	else
		unexpected(ps, "<EOF>");
}

/* ---- nodes ---- */

static struct cel_node *node(struct parser *ps, enum cel_nk kind, unsigned pos)
{
	struct cel_node *n = pmalloc(ps->prog, sizeof(*n));
	n->kind = kind;
	n->pos = pos;
	return n;
}

static const char *const reserved[] = {
    "as",     "break",  "const", "continue", "else",  "false",   "for",       "function",
    "if",     "import", "in",    "let",      "loop",  "package", "namespace", "null",
    "return", "true",   "var",   "void",     "while", NULL};

static bool is_reserved(const char *s, size_t n)
{
	for (int k = 0; reserved[k]; k++)
		if (strlen(reserved[k]) == n && memcmp(reserved[k], s, n) == 0)
			return true;
	return false;
}

static const char *expr_expecting = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
				    "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";

static struct cel_node *parse_expr(struct parser *ps);

/* Comma-separated expressions up to close; *out and *nout. */
/* A growing list of parsed expressions (program memory; the parser's
 * frames stay small however long a literal is). */
struct items {
	struct cel_node **v, **v2;
	bool *opt;
	size_t n, cap;
};

static void items_add(struct parser *ps, struct items *it, struct cel_node *a, struct cel_node *b,
		      bool opt)
{
	if (it->n == it->cap) {
		size_t cap = it->cap ? it->cap * 2 : 8;
		struct cel_node **v = pmalloc(ps->prog, (cap + 1) * sizeof(*v));
		struct cel_node **v2 = pmalloc(ps->prog, (cap + 1) * sizeof(*v2));
		bool *o = pmalloc(ps->prog, cap + 1);
		if (it->n) {
			memcpy(v, it->v, it->n * sizeof(*v));
			memcpy(v2, it->v2, it->n * sizeof(*v2));
			memcpy(o, it->opt, it->n);
		}
		it->v = v;
		it->v2 = v2;
		it->opt = o;
		it->cap = cap;
	}
	it->v[it->n] = a;
	it->v2[it->n] = b;
	it->opt[it->n++] = opt;
}

/* Comma-separated expressions up to close; *out and *nout. */
static bool parse_args(struct parser *ps, const char *close, struct cel_node ***out, size_t *nout,
		       bool **optf)
{
	struct items it = {0};
	while (!is(ps, close)) {
		bool opt = false;
		if (optf && is(ps, "?")) {
			opt = true;
			next(ps);
		}
		struct cel_node *e = parse_expr(ps);
		if (!e)
			return false;
		items_add(ps, &it, e, NULL, opt);
		if (!is(ps, ","))
			break;
		next(ps);
	}
	if (!expect(ps, close))
		return false;
	if (!it.n) { /* empty: arrays all the same */
		items_add(ps, &it, NULL, NULL, false);
		it.n = 0;
	}
	*out = it.v;
	*nout = it.n;
	if (optf)
		*optf = it.opt;
	return true;
}

static struct cel_node *parse_map(struct parser *ps, unsigned pos)
{
	struct cel_node *n = node(ps, N_MAP, pos);
	struct items it = {0};
	while (!is(ps, "}")) {
		bool opt = false;
		if (is(ps, "?")) {
			opt = true;
			next(ps);
		}
		struct cel_node *k = parse_expr(ps);
		if (!k || !expect(ps, ":"))
			return NULL;
		struct cel_node *v = parse_expr(ps);
		if (!v)
			return NULL;
		items_add(ps, &it, k, v, opt);
		if (!is(ps, ","))
			break;
		next(ps);
	}
	if (!expect(ps, "}"))
		return NULL;
	if (!it.n) { /* empty: arrays all the same */
		items_add(ps, &it, NULL, NULL, false);
		it.n = 0;
	}
	n->args = it.v;
	n->args2 = it.v2;
	n->optf = it.opt;
	n->nargs = it.n;
	return n;
}

static struct cel_node *constant(struct parser *ps, cel_value_t v, unsigned pos)
{
	struct cel_node *n = node(ps, N_CONST, pos);
	n->val = v;
	return n;
}

static struct cel_node *make_call(struct parser *ps, const char *name, struct cel_node *target,
				  unsigned pos);

static struct cel_node *parse_ident_primary(struct parser *ps, bool leading_dot, unsigned pos)
{
	struct tok t = ps->t;
	if (is_reserved(t.p, t.len)) {
		perr(ps, t.pos, "reserved identifier: %.*s", (int)t.len, t.p);
		return NULL;
	}
	next(ps);
	const char *name = pstrndup(ps->prog, t.p, t.len);
	if (is(ps, "(")) {
		unsigned open = ps->t.pos; /* cel-go places a call at its '(' */
		next(ps);
		return make_call(ps, name, NULL, open);
	}
	if (is(ps, "{")) {
		perr(ps, ps->t.pos, "message construction is not supported: %s", name);
		return NULL;
	}
	struct cel_node *n = node(ps, N_IDENT, leading_dot ? pos : t.pos);
	n->name = name;
	return n;
}

static struct cel_node *parse_primary(struct parser *ps)
{
	unsigned pos = ps->t.pos;
	struct tok t = ps->t;
	switch (t.kind) {
	case T_INT:
		if (t.val.u > INT64_MAX) {
			perr(ps, t.pos, "invalid int literal");
			return NULL;
		}
		next(ps);
		return constant(ps, cel_int((int64_t)t.val.u), pos);
	case T_UINT:
	case T_DOUBLE:
	case T_STRING:
	case T_BYTES: next(ps); return constant(ps, t.val, pos);
	case T_IDENT:
		if (is_word(ps, "true") || is_word(ps, "false")) {
			next(ps);
			return constant(ps, cel_bool(t.p[0] == 't'), pos);
		}
		if (is_word(ps, "null")) {
			next(ps);
			return constant(ps, cel_null(), pos);
		}
		return parse_ident_primary(ps, false, pos);
	case T_PUNCT: break;
	default: unexpected(ps, expr_expecting); return NULL;
	}
	if (is(ps, ".")) {
		next(ps);
		if (ps->t.kind != T_IDENT) {
			unexpected(ps, "IDENTIFIER");
			return NULL;
		}
		return parse_ident_primary(ps, true, pos);
	}
	if (is(ps, "(")) {
		next(ps);
		struct cel_node *e = parse_expr(ps);
		if (!e || !expect(ps, ")"))
			return NULL;
		return e;
	}
	if (is(ps, "[")) {
		next(ps);
		struct cel_node *n = node(ps, N_LIST, pos);
		return parse_args(ps, "]", &n->args, &n->nargs, &n->optf) ? n : NULL;
	}
	if (is(ps, "{")) {
		next(ps);
		return parse_map(ps, pos);
	}
	unexpected(ps, expr_expecting);
	return NULL;
}

static struct cel_node *parse_member(struct parser *ps)
{
	struct cel_node *e = parse_primary(ps);
	while (e) {
		unsigned pos = ps->t.pos;
		if (is(ps, ".")) {
			next(ps);
			bool opt = false;
			if (is(ps, "?")) {
				opt = true;
				next(ps);
			}
			if (ps->t.kind != T_IDENT || is_word(ps, "in") || is_word(ps, "true") ||
			    is_word(ps, "false") || is_word(ps, "null")) {
				unexpected(ps, "IDENTIFIER");
				return NULL;
			}
			struct tok f = ps->t;
			next(ps);
			const char *name = pstrndup(ps->prog, f.p, f.len);
			if (!opt && is(ps, "(")) {
				unsigned open = ps->t.pos;
				next(ps);
				e = make_call(ps, name, e, open);
				continue;
			}
			struct cel_node *s = node(ps, N_SELECT, pos);
			s->a = e;
			s->name = name;
			s->opt = opt;
			e = s;
		} else if (is(ps, "[")) {
			next(ps);
			struct cel_node *x = node(ps, N_INDEX, pos);
			if (is(ps, "?")) {
				x->opt = true;
				next(ps);
			}
			x->a = e;
			x->b = parse_expr(ps);
			if (!x->b || !expect(ps, "]"))
				return NULL;
			e = x;
		} else {
			break;
		}
	}
	return e;
}

static struct cel_node *parse_unary(struct parser *ps)
{
	unsigned pos = ps->t.pos;
	if (is(ps, "!") || is(ps, "-")) {
		bool neg = is(ps, "-");
		next(ps);
		if (++ps->depth > MAX_DEPTH) {
			perr(ps, pos, "expression recursion limit exceeded: %d", MAX_DEPTH);
			return NULL;
		}
		/* -<int literal> is the negative literal (reaches INT64_MIN) */
		if (neg && ps->t.kind == T_INT) {
			struct tok t = ps->t;
			next(ps);
			if (t.val.u > (uint64_t)INT64_MAX + 1) {
				perr(ps, t.pos, "invalid int literal");
				return NULL;
			}
			ps->depth--;
			return constant(ps, cel_int((int64_t)(0 - t.val.u)), pos);
		}
		struct cel_node *operand = parse_unary(ps);
		ps->depth--;
		if (!operand)
			return NULL;
		struct cel_node *n = node(ps, neg ? N_NEG : N_NOT, pos);
		n->a = operand;
		return n;
	}
	return parse_member(ps);
}

static int binop_of(struct parser *ps, int level)
{
	static const struct {
		const char *text;
		int level, op;
	} ops[] = {
	    {"*", 3, B_MUL}, {"/", 3, B_DIV}, {"%", 3, B_MOD}, {"+", 2, B_ADD},
	    {"-", 2, B_SUB}, {"==", 1, B_EQ}, {"!=", 1, B_NE}, {"<", 1, B_LT},
	    {"<=", 1, B_LE}, {">", 1, B_GT},  {">=", 1, B_GE},
	};
	if (level == 1 && is_word(ps, "in"))
		return B_IN;
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++)
		if (ops[k].level == level && is(ps, ops[k].text))
			return ops[k].op;
	return -1;
}

static bool chain_link(struct parser *ps, int *links)
{
	(*links)++;
	if (++ps->chain > MAX_CHAIN) {
		perr(ps, ps->t.pos, "expression recursion limit exceeded: %d", MAX_DEPTH);
		return false;
	}
	return true;
}

/* Left-associative binary levels: 1 relations, 2 additive, 3 multiplicative. */
static struct cel_node *parse_binary(struct parser *ps, int level)
{
	struct cel_node *l = level == 4 ? parse_unary(ps) : parse_binary(ps, level + 1);
	if (level == 4)
		return l;
	int op, links = 0;
	while (l && (op = binop_of(ps, level)) >= 0) {
		unsigned pos = ps->t.pos;
		if (!chain_link(ps, &links))
			return NULL;
		next(ps);
		struct cel_node *r = parse_binary(ps, level + 1);
		if (!r)
			return NULL;
		struct cel_node *n = node(ps, N_BIN, pos);
		n->op = op;
		n->a = l;
		n->b = r;
		l = n;
	}
	ps->chain -= links;
	return l;
}

static struct cel_node *parse_logical(struct parser *ps, bool isor)
{
	struct cel_node *l = isor ? parse_logical(ps, false) : parse_binary(ps, 1);
	int links = 0;
	while (l && is(ps, isor ? "||" : "&&")) {
		unsigned pos = ps->t.pos;
		if (!chain_link(ps, &links))
			return NULL;
		next(ps);
		struct cel_node *r = isor ? parse_logical(ps, false) : parse_binary(ps, 1);
		if (!r)
			return NULL;
		struct cel_node *n = node(ps, isor ? N_OR : N_AND, pos);
		n->a = l;
		n->b = r;
		l = n;
	}
	ps->chain -= links;
	return l;
}

static struct cel_node *parse_expr(struct parser *ps)
{
	if (ps->err)
		return NULL;
	if (++ps->depth > MAX_DEPTH) {
		perr(ps, ps->t.pos, "expression recursion limit exceeded: %d", MAX_DEPTH);
		return NULL;
	}
	struct cel_node *e = parse_logical(ps, true);
	if (e && is(ps, "?")) {
		struct cel_node *n = node(ps, N_COND, ps->t.pos);
		next(ps);
		n->a = e;
		n->b = parse_logical(ps, true);
		if (!n->b || !expect(ps, ":"))
			return NULL;
		n->c = parse_expr(ps);
		e = n->c ? n : NULL;
	}
	ps->depth--;
	return e;
}

/* ---- macros ---- */

static bool simple_name(struct parser *ps, struct cel_node *arg, const char **out)
{
	if (arg->kind != N_IDENT) {
		perr(ps, arg->pos, "argument must be a simple name");
		return false;
	}
	*out = arg->name;
	return true;
}

struct macro {
	const char *name;
	int nargs; /* without the receiver */
	int kind;
	bool two;
	int filter; /* 1: the predicate before the transform */
};

static const struct macro macros[] = {
    {"all", 2, M_ALL, false, 0},
    {"exists", 2, M_EXISTS, false, 0},
    {"exists_one", 2, M_EXISTS_ONE, false, 0},
    {"map", 2, M_MAP, false, 0},
    {"map", 3, M_MAP, false, 1},
    {"filter", 2, M_FILTER, false, 0},
    {"all", 3, M_ALL, true, 0},
    {"exists", 3, M_EXISTS, true, 0},
    {"exists_one", 3, M_EXISTS_ONE, true, 0},
    {"existsOne", 3, M_EXISTS_ONE, true, 0},
    {"transformList", 3, M_MAP, true, 0},
    {"transformList", 4, M_MAP, true, 1},
    {"transformMap", 3, M_TMAP, true, 0},
    {"transformMap", 4, M_TMAP, true, 1},
    {"transformMapEntry", 3, M_TMAP_ENTRY, true, 0},
    {"transformMapEntry", 4, M_TMAP_ENTRY, true, 1},
    {"optMap", 2, M_OPT_MAP, false, 0},
    {"optFlatMap", 2, M_OPT_FLAT_MAP, false, 0},
    {NULL, 0, 0, false, 0},
};

static struct cel_node *expand(struct parser *ps, const struct macro *m, struct cel_node *target,
			       struct cel_node **args, unsigned pos)
{
	struct cel_node *n = node(ps, N_COMPR, pos);
	n->op = m->kind;
	n->two = m->two;
	n->a = target;
	int k = 0;
	if (!simple_name(ps, args[k++], &n->name))
		return NULL;
	if (m->two) {
		if (!simple_name(ps, args[k++], &n->name2))
			return NULL;
		if (strcmp(n->name, n->name2) == 0) {
			perr(ps, args[1]->pos, "duplicate variable name: %s", n->name);
			return NULL;
		}
	}
	if (m->filter) {
		n->c = args[k++];
		n->b = args[k++];
	} else {
		n->b = args[k++];
	}
	return n;
}

/* A call: a macro's expansion, or a N_CALL whose resolution comes later. */
static struct cel_node *make_call(struct parser *ps, const char *name, struct cel_node *target,
				  unsigned pos)
{
	struct cel_node **args;
	size_t nargs;
	if (!parse_args(ps, ")", &args, &nargs, NULL))
		return NULL;
	if (!target && strcmp(name, "has") == 0 && nargs == 1) {
		if (args[0]->kind != N_SELECT || args[0]->opt) {
			perr(ps, args[0]->pos, "invalid argument to has() macro");
			return NULL;
		}
		args[0]->op = 1;
		return args[0];
	}
	for (const struct macro *m = macros; target && m->name; m++) {
		bool optional = m->kind == M_OPT_MAP || m->kind == M_OPT_FLAT_MAP;
		if (strcmp(m->name, name) || (size_t)m->nargs != nargs ||
		    (optional && !(ps->env->libs & CEL_LIB_OPTIONAL)))
			continue;
		if (optional && args[0]->kind != N_IDENT) {
			perr(ps, args[0]->pos, "%s() variable name must be a simple identifier",
			     m->name);
			return NULL;
		}
		return expand(ps, m, target, args, pos);
	}
	struct cel_node *n = node(ps, N_CALL, pos);
	n->name = name;
	n->a = target;
	n->args = args;
	n->nargs = nargs;
	return n;
}

/* ---- resolution against the environment ---- */

struct scope {
	const struct scope *up;
	const char *name;
	const json_t *schema;
	const struct cel_type *type;
};

static const struct cel_var *find_var(const struct parser *ps, const char *name)
{
	for (size_t i = 0; i < ps->env->nvars; i++)
		if (strcmp(ps->env->vars[i].name, name) == 0)
			return &ps->env->vars[i];
	return NULL;
}

static bool in_scope(const struct scope *sc, const char *name, const json_t **schema)
{
	for (; sc; sc = sc->up)
		if (strcmp(sc->name, name) == 0) {
			*schema = sc->schema;
			return true;
		}
	return false;
}

static bool is_type_name(const char *name)
{
	static const char *const types[] = {"int",  "uint", "double",    "bool", "string", "bytes",
					    "list", "map",  "null_type", "type", "dyn",    NULL};
	for (int k = 0; types[k]; k++)
		if (strcmp(types[k], name) == 0)
			return true;
	return false;
}

static bool lib_on(const struct parser *ps, const struct cel_func *f)
{
	return f->lib == 0 || (ps->env->libs & f->lib);
}

/* The overloads named name with the receiver style (NULL-terminated), or
 * NULL when there are none. */
static const struct cel_func **overloads(struct parser *ps, const char *name, bool receiver)
{
	const struct cel_func *tables[] = {cel_std_funcs, cel_k8s_funcs, cel_extra_funcs};
	size_t n = 0;
	for (int t = 0; t < 3; t++)
		for (const struct cel_func *f = tables[t]; f && f->name; f++)
			if (f->receiver == receiver && lib_on(ps, f) && strcmp(f->name, name) == 0)
				n++;
	if (n == 0)
		return NULL;
	const struct cel_func **out = pmalloc(ps->prog, (n + 1) * sizeof(*out));
	n = 0;
	for (int t = 0; t < 3; t++)
		for (const struct cel_func *f = tables[t]; f && f->name; f++)
			if (f->receiver == receiver && lib_on(ps, f) && strcmp(f->name, name) == 0)
				out[n++] = f;
	return out;
}

/* "a.b.c" for an ident/select chain not rooted at a variable, else NULL. */
static char *qualified(struct parser *ps, const struct cel_node *n, const struct scope *sc)
{
	const json_t *schema;
	if (n->kind == N_IDENT) {
		if (find_var(ps, n->name) || in_scope(sc, n->name, &schema))
			return NULL;
		return pstrndup(ps->prog, n->name, strlen(n->name));
	}
	if (n->kind != N_SELECT || n->opt || n->op)
		return NULL;
	char *q = qualified(ps, n->a, sc);
	if (!q)
		return NULL;
	size_t lq = strlen(q), ln = strlen(n->name);
	char *r = pmalloc(ps->prog, lq + ln + 2);
	memcpy(r, q, lq);
	r[lq] = '.';
	memcpy(r + lq + 1, n->name, ln);
	return r;
}

static bool resolve(struct parser *ps, struct cel_node *n, const struct scope *sc,
		    const json_t **schema);

/* Schemas the compiler makes, kept in the program: [0] kube's embedded
 * resources' metadata (name and generateName only), [1] the key of a map
 * typed by a schema. kube's key type is its plain string type, which has no
 * size (MaxElements 0): cel-go's estimator, given the path "@keys", takes a
 * key's size as 0 whatever the keys may hold. */
static const json_t *owned_schema(struct parser *ps, size_t i)
{
	cel_program_t *p = ps->prog;
	if (!p->owned)
		p->owned = json_array();
	if (json_array_size(p->owned) == 0) {
		json_array_append_new(p->owned,
				      json_pack("{s:s, s:{s:{s:s}, s:{s:s}}}", "type", "object",
						"properties", "name", "type", "string",
						"generateName", "type", "string"));
		json_array_append_new(p->owned,
				      json_pack("{s:s, s:i}", "type", "string", "maxLength", 0));
	}
	return json_array_get(p->owned, i);
}

static const json_t *embedded_metadata(struct parser *ps)
{
	return owned_schema(ps, 0);
}

/* The schema of property name (escaped as kube does) in object schema s;
 * false when s declares properties and name is none of them. */
static bool schema_field(struct parser *ps, const json_t *s, const char *name, const json_t **out)
{
	*out = NULL;
	if (!s)
		return true;
	const json_t *props = json_object_get(s, "properties");
	const json_t *addl = json_object_get(s, "additionalProperties");
	if (json_is_object(addl)) {
		*out = addl;
		return true;
	}
	if (json_is_true(json_object_get(s, "x-kubernetes-embedded-resource"))) {
		if (!strcmp(name, "apiVersion") || !strcmp(name, "kind")) {
			*out = json_object_get(props, name);
			return true;
		}
		if (!strcmp(name, "metadata")) {
			*out = embedded_metadata(ps);
			return true;
		}
	}
	if (!json_is_object(props))
		return true;
	char buf[256];
	/* kube's recognizeKeywordAsFieldName: `x.namespace` as written */
	if (ps->env->keyword_fields && is_reserved(name, strlen(name)) &&
	    (*out = json_object_get(props, name)))
		return true;
	if (cel_unescape_field(name, buf, sizeof(buf)) < 0)
		return false;
	*out = json_object_get(props, buf);
	return *out != NULL;
}

static bool resolve_select(struct parser *ps, struct cel_node *n, const struct scope *sc,
			   const json_t **schema)
{
	char *q = qualified(ps, n, sc);
	if (q && is_type_name(q) == false && strncmp(q, "google.protobuf.", 16) == 0) {
		n->kind = N_IDENT;
		n->name = q;
		return true;
	}
	const json_t *s = NULL;
	if (!resolve(ps, n->a, sc, &s))
		return false;
	const struct cel_type *t = n->a->ct; /* an object a call or a macro gave */
	if (t && t->kind == CT_OPT && n->opt)
		t = t->p;
	if (!s && t && t->kind == CT_OBJECT)
		s = t->schema;
	if (s && !schema_field(ps, s, n->name, schema)) {
		perr(ps, n->pos, "undefined field '%s'", n->name);
		return false;
	}
	return true;
}

/* A constant pattern of matches/find/findAll compiled once, now: a pattern
 * Go's regexp refuses is a compile error. */
static bool regex_arg(struct parser *ps, struct cel_node *n)
{
	const struct cel_node *pat = NULL;
	if (!strcmp(n->name, "matches") && !n->a && n->nargs == 2)
		pat = n->args[1];
	else if ((!strcmp(n->name, "matches") || !strcmp(n->name, "find") ||
		  !strcmp(n->name, "findAll")) &&
		 n->a && n->nargs >= 1)
		pat = n->args[0];
	if (!pat || pat->kind != N_CONST || pat->val.kind != CEL_STRING)
		return true;
	char *msg = NULL;
	if (cel_re_add(&ps->prog->regexes, pat->val.s.p, pat->val.s.len, &msg) < 0) {
		/* cel-go's ValidateRegexLiterals for matches; the pattern's own
		 * error for find/findAll, compiled when the program is made */
		if (!strcmp(n->name, "matches"))
			perr(ps, pat->pos, "invalid matches argument");
		else
			perr(ps, pat->pos, "%s", msg ? msg : "invalid regular expression");
		free(msg);
		return false;
	}
	return true;
}

/* cel-go's ValidateDurationLiterals and ValidateTimestampLiterals: a
 * constant argument of duration() or timestamp() is converted now. */
static bool literal_arg(struct parser *ps, struct cel_node *n)
{
	if (n->a || n->nargs != 1 || n->args[0]->kind != N_CONST ||
	    (strcmp(n->name, "duration") && strcmp(n->name, "timestamp")))
		return true;
	cel_ctx_t *c = cel_ctx_new(0);
	cel_value_t r = cel_no_overload(c, n->name);
	for (const struct cel_func **f = n->funcs; *f && cel_is_error(r); f++)
		if ((*f)->nargs == 1)
			r = (*f)->fn(c, &n->args[0]->val, 1);
	cel_ctx_free(c);
	if (cel_is_error(r))
		perr(ps, n->args[0]->pos, "invalid %s argument", n->name);
	return !cel_is_error(r);
}

/* cel-go's check of "...".format([...]) with a constant format string. */
static bool format_arg(struct parser *ps, struct cel_node *n)
{
	if (!n->a || strcmp(n->name, "format") || n->a->kind != N_CONST ||
	    n->a->val.kind != CEL_STRING || n->nargs != 1 || n->args[0]->kind != N_LIST)
		return true;
	const struct cel_node *list = n->args[0];
	const char **types = pmalloc(ps->prog, (list->nargs + 1) * sizeof(*types));
	for (size_t i = 0; i < list->nargs; i++)
		types[i] = list->args[i]->type;
	char msg[512];
	long bad;
	if (cel_format_check(n->a->val.s.p, n->a->val.s.len, types, list->nargs, msg, sizeof(msg),
			     &bad) == 0)
		return true;
	perr(ps, bad >= 0 ? list->args[bad]->pos : n->pos, "%s", msg);
	return false;
}

static bool resolve_call(struct parser *ps, struct cel_node *n, const struct scope *sc)
{
	char *q = n->a ? qualified(ps, n->a, sc) : NULL;
	if (q) {
		size_t lq = strlen(q), ln = strlen(n->name);
		char *full = pmalloc(ps->prog, lq + ln + 2);
		memcpy(full, q, lq);
		full[lq] = '.';
		memcpy(full + lq + 1, n->name, ln);
		n->funcs = overloads(ps, full, false);
		if (n->funcs) {
			n->name = full;
			n->a = NULL;
		}
	}
	if (!n->funcs)
		n->funcs = overloads(ps, n->name, n->a != NULL);
	if (!n->funcs) {
		const struct cel_node *root = n->a;
		while (q && root->kind == N_SELECT)
			root = root->a;
		if (q)
			perr(ps, root->pos, "undeclared reference to '%s' (in container '')",
			     root->name);
		else
			perr(ps, n->pos, "undeclared reference to '%s' (in container '')", n->name);
		const json_t *ignored;
		if (n->a && !q)
			resolve(ps, n->a, sc, &ignored);
		for (size_t i = 0; i < n->nargs; i++)
			resolve(ps, n->args[i], sc, &ignored);
		return false;
	}
	const json_t *s;
	if (n->a && !resolve(ps, n->a, sc, &s))
		return false;
	bool format = n->a && !strcmp(n->name, "format");
	ps->in_format += format;
	for (size_t i = 0; i < n->nargs; i++)
		if (!resolve(ps, n->args[i], sc, &s))
			return false;
	ps->in_format -= format;
	return regex_arg(ps, n) && literal_arg(ps, n) && format_arg(ps, n);
}

static const json_t *items_schema(const json_t *s)
{
	if (!s)
		return NULL;
	const json_t *items = json_object_get(s, "items");
	if (items)
		return items;
	return NULL;
}

static void range_types(struct parser *ps, const struct cel_node *n, const struct cel_type **v1,
			const struct cel_type **v2, bool report);

static bool resolve_compr(struct parser *ps, struct cel_node *n, const struct scope *sc)
{
	const json_t *s = NULL;
	if (!resolve(ps, n->a, sc, &s))
		return false;
	const json_t *is = NULL, *vs = NULL;
	if (s && json_object_get(s, "items")) {
		is = items_schema(s);
	} else if (s) {
		const json_t *addl = json_object_get(s, "additionalProperties");
		vs = json_is_object(addl) ? addl : NULL;
	}
	const json_t *ks = vs ? owned_schema(ps, 1) : NULL; /* a map's keys: size 0 */
	const struct cel_type *t1, *t2;
	range_types(ps, n, &t1, &t2, true);
	struct scope v1 = {sc, n->name,
			   n->two ? ks
			   : is   ? is
				  : ks,
			   t1},
		     v2 = {&v1, n->name2, is ? is : vs, t2};
	const struct scope *inner = n->two ? &v2 : &v1;
	const json_t *ignored;
	if (n->c && !resolve(ps, n->c, inner, &ignored))
		return false;
	return resolve(ps, n->b, inner, &ignored);
}

/* Resolves n: *schema is its value's schema when known. */
static bool resolve_node(struct parser *ps, struct cel_node *n, const struct scope *sc,
			 const json_t **schema)
{
	*schema = NULL;
	const json_t *s;
	switch (n->kind) {
	case N_CONST: return true;
	case N_IDENT:
		if (in_scope(sc, n->name, schema))
			return true;
		const struct cel_var *v = find_var(ps, n->name);
		if (v) {
			size_t i = (size_t)(v - ps->env->vars);
			if (i < 64)
				ps->prog->reads |= 1ull << i;
			*schema = v->schema;
			return true;
		}
		if (is_type_name(n->name) || strcmp(n->name, "optional_type") == 0)
			return true;
		perr(ps, n->pos, "undeclared reference to '%s' (in container '')", n->name);
		return false;
	case N_SELECT: return resolve_select(ps, n, sc, schema);
	case N_CALL: return resolve_call(ps, n, sc);
	case N_COMPR: return resolve_compr(ps, n, sc);
	case N_LIST:
	case N_MAP:
		for (size_t i = 0; i < n->nargs; i++)
			if (!resolve(ps, n->args[i], sc, &s) ||
			    (n->args2 && !resolve(ps, n->args2[i], sc, &s)))
				return false;
		if ((n->kind == N_LIST || n->kind == N_MAP) && !(ps->env->libs & CEL_LIB_OPTIONAL))
			for (size_t i = 0; i < n->nargs; i++)
				if (n->optf[i]) {
					perr(ps, n->args[i]->pos, "unsupported syntax '?'");
					return false;
				}
		return true;
	case N_INDEX:
		if (!resolve(ps, n->a, sc, &s))
			return false;
		if (s && json_object_get(s, "items"))
			*schema = items_schema(s);
		else if (s && json_is_object(json_object_get(s, "additionalProperties")))
			*schema = json_object_get(s, "additionalProperties");
		return resolve(ps, n->b, sc, &s);
	default:
		if (n->a && !resolve(ps, n->a, sc, &s))
			return false;
		if (n->b && !resolve(ps, n->b, sc, &s))
			return false;
		return !n->c || resolve(ps, n->c, sc, &s);
	}
}

/* ---- static types: cel-go's type checker (types and signatures in check.c) ---- */

static const struct cel_type *T(const struct cel_node *n)
{
	return n && n->ct ? n->ct : &cel_t_dyn;
}

/* Sets n's type; n->type is its name for the evaluator and format()'s
 * check, NULL where the type says nothing about the value's kind. */
static void set_type(struct parser *ps, struct cel_node *n, const struct cel_type *t)
{
	n->ct = t ? t : &cel_t_dyn;
	n->type = NULL;
	if (n->ct->kind == CT_DYN || n->ct->kind == CT_OBJECT || n->ct->kind == CT_OPAQUE)
		return;
	char buf[256];
	cel_type_name_of(n->ct, buf, sizeof(buf));
	n->type = pstrndup(ps->prog, buf, strlen(buf));
}

/* cel-go's "found no matching overload for 'f' applied to '(a, b)'", a
 * receiver call's as 'recv.(a)'. */
static void no_match(struct parser *ps, unsigned pos, const char *fn, bool receiver,
		     const struct cel_type *const *args, size_t n)
{
	char sig[1024], one[256];
	size_t used = 0, i = 0;
	if (receiver && n) {
		cel_type_name_of(args[0], one, sizeof(one));
		used += (size_t)snprintf(sig, sizeof(sig), "%s.", one);
		i = 1;
	}
	used += (size_t)snprintf(sig + used, sizeof(sig) - used, "(");
	for (size_t first = i; i < n && used < sizeof(sig) - 300; i++) {
		cel_type_name_of(args[i], one, sizeof(one));
		used += (size_t)snprintf(sig + used, sizeof(sig) - used, "%s%s",
					 i > first ? ", " : "", one);
	}
	snprintf(sig + used, sizeof(sig) - used, ")");
	perr(ps, pos, "found no matching overload for '%s' applied to '%s'", fn, sig);
}

/* The result of calling fn with args as cel-go resolves it: an error and
 * dyn when no overload takes them. */
static const struct cel_type *call(struct parser *ps, unsigned pos, const char *fn, bool receiver,
				   const struct cel_type *const *args, size_t n)
{
	const struct cel_type *out;
	if (cel_check_overload(ps->prog, fn, receiver, args, n, &out) == -ENOENT) {
		no_match(ps, pos, fn, receiver, args, n);
		return &cel_t_dyn;
	}
	return out;
}

static const char *const bin_names[] = {
    [B_ADD] = "_+_", [B_SUB] = "_-_", [B_MUL] = "_*_", [B_DIV] = "_/_",
    [B_MOD] = "_%_", [B_EQ] = "_==_", [B_NE] = "_!=_", [B_LT] = "_<_",
    [B_LE] = "_<=_", [B_GT] = "_>_",  [B_GE] = "_>=_", [B_IN] = "@in",
};

static const struct cel_type *check_bin(struct parser *ps, struct cel_node *n)
{
	const struct cel_type *args[] = {T(n->a), T(n->b)};
	/* null compares with anything, as the evaluator does */
	if ((n->op == B_EQ || n->op == B_NE) &&
	    (args[0]->kind == CT_NULL || args[1]->kind == CT_NULL))
		return &cel_t_bool;
	return call(ps, n->pos, bin_names[n->op], false, args, 2);
}

/* The type of an element of an aggregate literal: an optional entry's
 * value type. */
static const struct cel_type *entry_type(const struct cel_node *e, bool opt)
{
	const struct cel_type *t = T(e);
	if (!opt)
		return t;
	return t->kind == CT_OPT ? t->p : &cel_t_dyn;
}

/* cel-go's joinTypes with HomogeneousAggregateLiterals (format()'s
 * arguments excepted): prev joined with the element at e. */
static const struct cel_type *join(struct parser *ps, const struct cel_type *prev,
				   const struct cel_type *cur, const struct cel_node *e)
{
	if (!prev)
		return cur;
	const struct cel_type *j = cel_type_join(prev, cur);
	if (j)
		return j;
	if (ps->in_format)
		return &cel_t_dyn;
	char a[256], b[256];
	cel_type_name_of(prev, a, sizeof(a));
	cel_type_name_of(cur, b, sizeof(b));
	perr(ps, e->pos, "expected type '%s' but found '%s'", a, b);
	return &cel_t_dyn;
}

static const struct cel_type *check_list(struct parser *ps, struct cel_node *n)
{
	const struct cel_type *t = NULL;
	for (size_t i = 0; i < n->nargs; i++)
		t = join(ps, t, entry_type(n->args[i], n->optf[i]), n->args[i]);
	return cel_type_new(ps->prog, CT_LIST, t, NULL);
}

static const struct cel_type *check_map(struct parser *ps, struct cel_node *n)
{
	const struct cel_type *kt = NULL, *vt = NULL;
	for (size_t i = 0; i < n->nargs; i++) {
		kt = join(ps, kt, T(n->args[i]), n->args[i]);
		vt = join(ps, vt, entry_type(n->args2[i], n->optf[i]), n->args2[i]);
	}
	return cel_type_new(ps->prog, CT_MAP, kt, vt);
}

/* The type of a declared name: a comprehension's variable, a variable of
 * the environment, or a type's name. */
static const struct cel_type *ident_type(struct parser *ps, const struct cel_node *n,
					 const struct scope *sc)
{
	static const struct {
		const char *name;
		const struct cel_type *t;
	} types[] = {
	    {"int", &cel_t_int},
	    {"uint", &cel_t_uint},
	    {"double", &cel_t_double},
	    {"bool", &cel_t_bool},
	    {"string", &cel_t_string},
	    {"bytes", &cel_t_bytes},
	    {"null_type", &cel_t_null},
	    {"dyn", &cel_t_dyn},
	    {"google.protobuf.Duration", &cel_t_duration},
	    {"google.protobuf.Timestamp", &cel_t_timestamp},
	};
	for (; sc; sc = sc->up)
		if (!strcmp(sc->name, n->name))
			return sc->type;
	const struct cel_var *v = find_var(ps, n->name);
	if (v && v->optional)
		return cel_type_new(ps->prog, CT_OPT, cel_type_of_schema(ps->prog, v->schema),
				    NULL);
	if (v)
		return cel_type_of_schema(ps->prog, v->schema);
	const struct cel_type *named = NULL;
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
		if (!strcmp(types[k].name, n->name))
			named = types[k].t;
	if (!named && !strcmp(n->name, "list"))
		named = cel_type_new(ps->prog, CT_LIST, NULL, NULL);
	else if (!named && !strcmp(n->name, "map"))
		named = cel_type_new(ps->prog, CT_MAP, NULL, NULL);
	else if (!named && !strcmp(n->name, "optional_type"))
		named = cel_type_new(ps->prog, CT_OPT, NULL, NULL);
	else if (!named && !strcmp(n->name, "type"))
		named = cel_type_new(ps->prog, CT_TYPE, NULL, NULL);
	return named ? cel_type_new(ps->prog, CT_TYPE, named, NULL) : &cel_t_dyn;
}

/* cel-go selects and indexes through an optional operand: a.f and a[k] on
 * an optional_type(T) look into T, and the result is optional too
 * (optional_map_index_value, optional_list_index_int). *was is set when a
 * was unwrapped. */
static const struct cel_type *unwrap_opt(const struct cel_type *a, bool *was)
{
	*was = a->kind == CT_OPT;
	return *was ? a->p : a;
}

static const struct cel_type *opt_result(struct parser *ps, const struct cel_node *n,
					 const struct cel_type *t, bool was)
{
	return n->opt || was ? cel_type_new(ps->prog, CT_OPT, t, NULL) : t;
}

/* a.f, a.?f: the field's type from the schema when known, else from a's
 * type (a map's values). */
static const struct cel_type *check_select(struct parser *ps, struct cel_node *n,
					   const json_t *schema)
{
	bool was;
	const struct cel_type *a = unwrap_opt(T(n->a), &was);
	bool selectable = a->kind == CT_MAP || a->kind == CT_OBJECT || a->kind == CT_DYN ||
			  a->kind == CT_LIST || a->kind == CT_OPAQUE || a->kind == CT_OPT ||
			  a->kind == CT_PARAM;
	if (n->op && selectable)
		return &cel_t_bool; /* has() */
	switch (a->kind) {
	case CT_MAP: return opt_result(ps, n, a->q, was);
	case CT_OBJECT: return opt_result(ps, n, cel_type_of_schema(ps->prog, schema), was);
	case CT_DYN:
	case CT_LIST:
	case CT_OPAQUE:
	case CT_OPT:
	case CT_PARAM:
		return opt_result(ps, n, schema ? cel_type_of_schema(ps->prog, schema) : NULL, was);
	default: break;
	}
	char name[256];
	cel_type_name_of(a, name, sizeof(name));
	perr(ps, n->pos, "type '%s' does not support field selection", name);
	return &cel_t_dyn;
}

static const struct cel_type *check_index(struct parser *ps, struct cel_node *n,
					  const json_t *schema)
{
	bool was;
	const struct cel_type *a = unwrap_opt(T(n->a), &was);
	if (a->kind == CT_OBJECT || a->kind == CT_OPAQUE)
		return opt_result(ps, n, cel_type_of_schema(ps->prog, schema), was);
	const struct cel_type *args[] = {a, T(n->b)};
	return opt_result(ps, n, call(ps, n->pos, "_[_]", false, args, 2), was);
}

static const struct cel_type *check_call(struct parser *ps, struct cel_node *n)
{
	if (!n->funcs)
		return &cel_t_dyn;
	size_t total = n->nargs + (n->a ? 1 : 0);
	const struct cel_type **args = pmalloc(ps->prog, (total + 1) * sizeof(*args));
	size_t k = 0;
	if (n->a)
		args[k++] = T(n->a);
	for (size_t i = 0; i < n->nargs; i++)
		args[k++] = T(n->args[i]);
	/* a number of arguments no overload of the function takes */
	bool arity = false;
	for (const struct cel_func **f = n->funcs; *f; f++)
		arity |= (*f)->nargs < 0 || (size_t)(*f)->nargs == total;
	if (!arity) {
		no_match(ps, n->pos, n->name, n->a != NULL, args, total);
		return &cel_t_dyn;
	}
	return call(ps, n->pos, n->name, n->a != NULL, args, total);
}

/* A comprehension's range and the types of its variables (*v1, *v2). */
static void range_types(struct parser *ps, const struct cel_node *n, const struct cel_type **v1,
			const struct cel_type **v2, bool report)
{
	const struct cel_type *r = T(n->a);
	*v1 = *v2 = &cel_t_dyn;
	if (n->op == M_OPT_MAP || n->op == M_OPT_FLAT_MAP) {
		*v1 = r->kind == CT_OPT ? r->p : &cel_t_dyn;
		return;
	}
	switch (r->kind) {
	case CT_LIST:
		*v1 = n->two ? &cel_t_int : r->p;
		*v2 = r->p;
		return;
	case CT_MAP:
		*v1 = r->p;
		*v2 = r->q;
		return;
	case CT_DYN:
	case CT_OBJECT: return;
	default: break;
	}
	if (!report)
		return;
	char name[256];
	cel_type_name_of(r, name, sizeof(name));
	perr(ps, n->a->pos,
	     "expression of type '%s' cannot be range of a comprehension (must be list, map, or "
	     "dynamic)",
	     name);
}

/* A filter or a predicate (cel-go's expansion: `pred ? accu + [x] :
 * accu`, `@not_strictly_false(pred)`, `pred ? accu + 1 : accu`). */
static void predicate(struct parser *ps, const struct cel_node *pred, const char *fn,
		      const struct cel_type *accu)
{
	const struct cel_type *args[] = {T(pred), accu, accu};
	size_t n = accu ? 3 : 1;
	const struct cel_type *out;
	if (cel_check_overload(ps->prog, fn, false, args, n, &out) == -ENOENT)
		no_match(ps, pred->pos, fn, false, args, n);
}

static const struct cel_type *check_compr(struct parser *ps, struct cel_node *n)
{
	const struct cel_type *v1, *v2, *r = T(n->a), *b = T(n->b);
	range_types(ps, n, &v1, &v2, false);
	const struct cel_type *elem = n->two ? v2 : v1;
	switch (n->op) {
	case M_ALL:
	case M_EXISTS: predicate(ps, n->b, "@not_strictly_false", NULL); return &cel_t_bool;
	case M_EXISTS_ONE: predicate(ps, n->b, "_?_:_", &cel_t_int); return &cel_t_bool;
	case M_FILTER: {
		const struct cel_type *l = cel_type_new(ps->prog, CT_LIST, elem, NULL);
		predicate(ps, n->b, "_?_:_", l);
		return l;
	}
	case M_MAP:
	case M_TMAP: {
		const struct cel_type *l =
		    n->op == M_MAP
			? cel_type_new(ps->prog, CT_LIST, b, NULL)
			: cel_type_new(ps->prog, CT_MAP, r->kind == CT_LIST ? &cel_t_int : v1, b);
		if (n->c)
			predicate(ps, n->c, "_?_:_", l);
		return l;
	}
	case M_TMAP_ENTRY:
		if (n->c)
			predicate(ps, n->c, "_?_:_", b);
		return b->kind == CT_MAP ? b : &cel_t_dyn;
	case M_OPT_MAP: return cel_type_new(ps->prog, CT_OPT, b, NULL);
	default: return b;
	}
}

static const struct cel_type *node_type(struct parser *ps, struct cel_node *n, const json_t *schema,
					const struct scope *sc)
{
	static const struct cel_type *const consts[] = {
	    [CEL_NULL] = &cel_t_null,
	    [CEL_BOOL] = &cel_t_bool,
	    [CEL_INT] = &cel_t_int,
	    [CEL_UINT] = &cel_t_uint,
	    [CEL_DOUBLE] = &cel_t_double,
	    [CEL_STRING] = &cel_t_string,
	    [CEL_BYTES] = &cel_t_bytes,
	    [CEL_DURATION] = &cel_t_duration,
	    [CEL_TIMESTAMP] = &cel_t_timestamp,
	};
	const struct cel_type *args[3] = {T(n->a), T(n->b), T(n->c)};
	switch (n->kind) {
	case N_CONST: return n->val.kind <= CEL_TIMESTAMP ? consts[n->val.kind] : &cel_t_dyn;
	case N_IDENT: return ident_type(ps, n, sc);
	case N_SELECT: return check_select(ps, n, schema);
	case N_INDEX: return check_index(ps, n, schema);
	case N_BIN: return check_bin(ps, n);
	case N_NOT: return call(ps, n->pos, "!_", false, args, 1);
	case N_NEG: return call(ps, n->pos, "-_", false, args, 1);
	case N_AND: return call(ps, n->pos, "_&&_", false, args, 2);
	case N_OR: return call(ps, n->pos, "_||_", false, args, 2);
	case N_COND: return call(ps, n->pos, "_?_:_", false, args, 3);
	case N_LIST: return check_list(ps, n);
	case N_MAP: return check_map(ps, n);
	case N_COMPR: return check_compr(ps, n);
	case N_CALL: return check_call(ps, n);
	}
	return &cel_t_dyn;
}

/* Resolves n and gives it its static type (cel-go's type-check errors):
 * *schema is its value's schema when known. */
static bool resolve(struct parser *ps, struct cel_node *n, const struct scope *sc,
		    const json_t **schema)
{
	if (!resolve_node(ps, n, sc, schema)) {
		*schema = NULL; /* reported; the checker goes on with the rest */
		set_type(ps, n, &cel_t_dyn);
		return true;
	}
	set_type(ps, n, node_type(ps, n, *schema, sc));
	n->schema = *schema;
	return true;
}

/* ---- the program ---- */

/* cel-go's error display: message, the source line, a caret line. */
static char *format_error(const char *src, unsigned pos, const char *msg)
{
	unsigned line = 1, col = 0;
	const char *ls = src;
	for (unsigned i = 0; i < pos && src[i]; i++) {
		if (src[i] == '\n') {
			line++;
			ls = src + i + 1;
			col = 0;
		} else if (((unsigned char)src[i] & 0xc0) != 0x80) {
			col++;
		}
	}
	size_t ll = strcspn(ls, "\n");
	size_t cap = strlen(msg) + ll * 2 + col + 64;
	char *out = malloc(cap);
	KB_REQUIRE(out != NULL);
	int n = snprintf(out, cap, "ERROR: <input>:%u:%u: %s\n | %.*s\n | ", line, col + 1, msg,
			 (int)ll, ls);
	for (unsigned i = 0; i < col; i++)
		out[n++] = '.';
	out[n++] = '^';
	out[n] = 0;
	return out;
}

/* The checker's errors, by position, each displayed as cel-go does, one
 * after the other (malloc'd); frees them. */
static char *check_errors(struct parser *ps)
{
	for (size_t i = 1; i < ps->nerrs; i++) /* stable: same place, same order */
		for (size_t j = i; j > 0 && ps->errs[j - 1].pos > ps->errs[j].pos; j--) {
			unsigned pos = ps->errs[j].pos;
			char *msg = ps->errs[j].msg;
			ps->errs[j] = ps->errs[j - 1];
			ps->errs[j - 1].pos = pos;
			ps->errs[j - 1].msg = msg;
		}
	char *out = NULL;
	size_t len = 0;
	for (size_t i = 0; i < ps->nerrs; i++) {
		char *one = format_error(ps->src, ps->errs[i].pos, ps->errs[i].msg);
		size_t l = strlen(one);
		out = realloc(out, len + l + 2);
		KB_REQUIRE(out != NULL);
		if (len)
			out[len++] = '\n';
		memcpy(out + len, one, l + 1);
		len += l;
		free(one);
		free(ps->errs[i].msg);
	}
	return out;
}

cel_program_t *cel_compile(const char *expr, const struct cel_env *env, size_t max_len, char **err)
{
	static const struct cel_env empty = {0};
	*err = NULL;
	size_t len = strlen(expr);
	if (max_len && len > max_len) {
		char msg[160];
		snprintf(
		    msg, sizeof(msg),
		    "ERROR: <input>:-1:0: expression code point size exceeds limit: size: %zu, "
		    "limit %zu",
		    len, max_len);
		*err = strdup(msg);
		return NULL;
	}
	cel_program_t *p = calloc(1, sizeof(*p));
	KB_REQUIRE(p != NULL);
	p->source = pstrndup(p, expr, len);
	struct parser ps = {.prog = p, .src = p->source, .n = len, .env = env ? env : &empty};
	next(&ps);
	p->root = ps.t.kind == T_ERROR ? NULL : parse_expr(&ps);
	if (p->root && ps.t.kind != T_EOF)
		trailing(&ps);
	const json_t *schema;
	if (!ps.err && !p->root)
		perr(&ps, 0, "Syntax error: invalid expression");
	if (!ps.err) {
		ps.checking = true;
		resolve(&ps, p->root, NULL, &schema);
		if (!ps.nerrs)
			cel_estimate(p);
		char name[256];
		cel_type_name_of(p->root->ct, name, sizeof(name));
		p->type_name = pstrndup(p, name, strlen(name));
		if (ps.nerrs)
			ps.err = check_errors(&ps);
	} else {
		char *msg = format_error(p->source, ps.errpos, ps.err);
		free(ps.err);
		ps.err = msg;
	}
	if (ps.err) {
		*err = ps.err;
		cel_program_free(p);
		return NULL;
	}
	return p;
}

void cel_program_free(cel_program_t *p)
{
	if (!p)
		return;
	cel_re_free_all(p->regexes);
	json_decref(p->owned);
	for (struct cel_block *b = p->mem, *nb; b; b = nb) {
		nb = b->next;
		free(b);
	}
	free(p);
}

bool cel_program_reads(const cel_program_t *p, size_t var)
{
	return var < 64 && (p->reads >> var & 1);
}

void cel_program_cost(const cel_program_t *p, uint64_t *min, uint64_t *max)
{
	*min = p->cost_min;
	*max = p->cost_max;
}

const json_t *cel_program_schema(const cel_program_t *p)
{
	return p->root->schema;
}

const char *cel_program_type(const cel_program_t *p)
{
	return p->type_name;
}

const char *cel_program_source(const cel_program_t *p)
{
	return p->source;
}
