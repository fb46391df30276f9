/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The syntax error Go's encoding/json reports for a text that is not JSON
 * (json.Unmarshal's checkValid: "invalid character 'x' looking for
 * beginning of value", "unexpected end of JSON input", ...), for messages
 * that quote it as kube-apiserver does. A byte-level state machine after
 * the states of Go's encoding/json/scanner.go (its facts only: which byte
 * is refused where, and the words of each message).
 */
#include "lib/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum gs {
	GS_VALUE,      /* a value begins */
	GS_OBJ_FIRST,  /* after '{': a key or '}' */
	GS_OBJ_KEY,    /* after ',' in an object: a key */
	GS_OBJ_COLON,  /* after a key */
	GS_OBJ_NEXT,   /* after a member's value */
	GS_ARR_FIRST,  /* after '[': a value or ']' */
	GS_ARR_NEXT,   /* after an element */
	GS_STR,        /* in a string */
	GS_ESC,        /* after '\' */
	GS_HEX,        /* in \uXXXX (hex left: n) */
	GS_NEG,        /* after '-' */
	GS_ZERO,       /* after a leading 0 */
	GS_INT,        /* in the integer digits */
	GS_DOT,        /* after '.' */
	GS_FRAC,       /* in the fraction digits */
	GS_EXP,        /* after 'e' */
	GS_EXP_SIGN,   /* after 'e+' */
	GS_EXP_DIGITS, /* in the exponent digits */
	GS_LIT,        /* in true/false/null */
	GS_END,        /* after the top-level value */
};

#define GS_DEPTH 10000

struct gscan {
	enum gs st;
	char stack[GS_DEPTH]; /* 'o' object, 'a' array */
	size_t depth;
	bool key;        /* the string being read is an object key */
	const char *lit; /* rest of the literal being read */
	const char *lit_name;
	int hex;
};

/* Go's quoteChar: 'x', '\'', '"', '\n', '\x01'. */
static void go_quote_char(unsigned char c, char *out, size_t len)
{
	if (c == '\'')
		snprintf(out, len, "'\\''");
	else if (c == '"')
		snprintf(out, len, "'\"'");
	else if (c == '\n')
		snprintf(out, len, "'\\n'");
	else if (c == '\t')
		snprintf(out, len, "'\\t'");
	else if (c == '\r')
		snprintf(out, len, "'\\r'");
	else if (c == '\\')
		snprintf(out, len, "'\\\\'");
	else if (c < 0x20 || c == 0x7f)
		snprintf(out, len, "'\\x%02x'", c);
	else if (c >= 0x80)
		snprintf(out, len, "'\\ufffd'");
	else
		snprintf(out, len, "'%c'", c);
}

static int gs_fail(unsigned char c, const char *ctx, char *out, size_t len)
{
	char q[16];
	go_quote_char(c, q, sizeof(q));
	snprintf(out, len, "invalid character %s %s", q, ctx);
	return 1;
}

static bool gs_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* A value ended: where the scan goes next. */
static void gs_pop_value(struct gscan *s)
{
	if (!s->depth)
		s->st = GS_END;
	else
		s->st = s->stack[s->depth - 1] == 'o' ? GS_OBJ_NEXT : GS_ARR_NEXT;
}

/* A value begins with c; 1 and the message on error. */
static int gs_begin(struct gscan *s, unsigned char c, char *out, size_t len)
{
	static const struct {
		char c;
		const char *rest, *name;
	} lits[] = {{'t', "rue", "true"}, {'f', "alse", "false"}, {'n', "ull", "null"}};

	if (c == '{' || c == '[') {
		if (s->depth == GS_DEPTH) {
			snprintf(out, len, "exceeded max depth");
			return 1;
		}
		s->stack[s->depth++] = c == '{' ? 'o' : 'a';
		s->st = c == '{' ? GS_OBJ_FIRST : GS_ARR_FIRST;
		return 0;
	}
	if (c == '"') {
		s->st = GS_STR;
		s->key = false;
		return 0;
	}
	if (c == '-' || c == '0' || (c >= '1' && c <= '9')) {
		s->st = c == '-' ? GS_NEG : c == '0' ? GS_ZERO : GS_INT;
		return 0;
	}
	for (size_t i = 0; i < 3; i++) {
		if (c == lits[i].c) {
			s->st = GS_LIT;
			s->lit = lits[i].rest;
			s->lit_name = lits[i].name;
			return 0;
		}
	}
	return gs_fail(c, "looking for beginning of value", out, len);
}

/* The end of a number at c: c is read again in the state after it. */
static int gs_step(struct gscan *s, unsigned char c, char *out, size_t len);

static int gs_number_end(struct gscan *s, unsigned char c, char *out, size_t len)
{
	gs_pop_value(s);
	return gs_step(s, c, out, len);
}

static int gs_container(struct gscan *s, unsigned char c, char *out, size_t len)
{
	switch (s->st) {
	case GS_OBJ_FIRST:
	case GS_OBJ_KEY:
		if (c == '}' && s->st == GS_OBJ_FIRST) {
			s->depth--;
			gs_pop_value(s);
			return 0;
		}
		if (c != '"')
			return gs_fail(c, "looking for beginning of object key string", out, len);
		s->st = GS_STR;
		s->key = true;
		return 0;
	case GS_OBJ_COLON:
		if (c != ':')
			return gs_fail(c, "after object key", out, len);
		s->st = GS_VALUE;
		return 0;
	case GS_OBJ_NEXT:
		if (c == ',') {
			s->st = GS_OBJ_KEY;
			return 0;
		}
		if (c != '}')
			return gs_fail(c, "after object key:value pair", out, len);
		s->depth--;
		gs_pop_value(s);
		return 0;
	case GS_ARR_FIRST:
		if (c == ']') {
			s->depth--;
			gs_pop_value(s);
			return 0;
		}
		return gs_begin(s, c, out, len);
	default: /* GS_ARR_NEXT */
		if (c == ',') {
			s->st = GS_VALUE;
			return 0;
		}
		if (c != ']')
			return gs_fail(c, "after array element", out, len);
		s->depth--;
		gs_pop_value(s);
		return 0;
	}
}

static int gs_string(struct gscan *s, unsigned char c, char *out, size_t len)
{
	static const char esc[] = "bfnrt\\/\"";

	if (s->st == GS_ESC) {
		if (c == 'u') {
			s->st = GS_HEX;
			s->hex = 4;
		} else if (c && strchr(esc, c)) {
			s->st = GS_STR;
		} else {
			return gs_fail(c, "in string escape code", out, len);
		}
		return 0;
	}
	if (s->st == GS_HEX) {
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return gs_fail(c, "in \\u hexadecimal character escape", out, len);
		if (--s->hex == 0)
			s->st = GS_STR;
		return 0;
	}
	if (c == '"') {
		if (s->key)
			s->st = GS_OBJ_COLON;
		else
			gs_pop_value(s);
		s->key = false;
		return 0;
	}
	if (c == '\\')
		s->st = GS_ESC;
	else if (c < 0x20)
		return gs_fail(c, "in string literal", out, len);
	return 0;
}

static int gs_number(struct gscan *s, unsigned char c, char *out, size_t len)
{
	bool digit = c >= '0' && c <= '9';

	switch (s->st) {
	case GS_NEG:
		if (!digit)
			return gs_fail(c, "in numeric literal", out, len);
		s->st = c == '0' ? GS_ZERO : GS_INT;
		return 0;
	case GS_ZERO:
	case GS_INT:
		if (digit && s->st == GS_INT)
			return 0;
		if (c == '.') {
			s->st = GS_DOT;
			return 0;
		}
		if (c == 'e' || c == 'E') {
			s->st = GS_EXP;
			return 0;
		}
		return gs_number_end(s, c, out, len);
	case GS_DOT:
		if (!digit)
			return gs_fail(c, "after decimal point in numeric literal", out, len);
		s->st = GS_FRAC;
		return 0;
	case GS_FRAC:
		if (digit)
			return 0;
		if (c == 'e' || c == 'E') {
			s->st = GS_EXP;
			return 0;
		}
		return gs_number_end(s, c, out, len);
	case GS_EXP:
		if (c == '+' || c == '-') {
			s->st = GS_EXP_SIGN;
			return 0;
		}
		/* fall through */
	case GS_EXP_SIGN:
		if (!digit)
			return gs_fail(c, "in exponent of numeric literal", out, len);
		s->st = GS_EXP_DIGITS;
		return 0;
	default: /* GS_EXP_DIGITS */ return digit ? 0 : gs_number_end(s, c, out, len);
	}
}

static int gs_step(struct gscan *s, unsigned char c, char *out, size_t len)
{
	char ctx[64];

	switch (s->st) {
	case GS_STR:
	case GS_ESC:
	case GS_HEX: return gs_string(s, c, out, len);
	case GS_NEG:
	case GS_ZERO:
	case GS_INT:
	case GS_DOT:
	case GS_FRAC:
	case GS_EXP:
	case GS_EXP_SIGN:
	case GS_EXP_DIGITS: return gs_number(s, c, out, len);
	case GS_LIT:
		if (c != (unsigned char)*s->lit) {
			snprintf(ctx, sizeof(ctx), "in literal %s (expecting '%c')", s->lit_name,
				 *s->lit);
			return gs_fail(c, ctx, out, len);
		}
		if (!*++s->lit)
			gs_pop_value(s);
		return 0;
	default: break;
	}
	if (gs_space(c))
		return 0;
	if (s->st == GS_VALUE)
		return gs_begin(s, c, out, len);
	if (s->st == GS_END)
		return gs_fail(c, "after top-level value", out, len);
	return gs_container(s, c, out, len);
}

int kb_json_go_syntax_error(const char *buf, size_t len, char *out, size_t outlen)
{
	struct gscan *s = calloc(1, sizeof(*s)); /* the stack is 10 kB */
	int r = 0;

	if (!s)
		return -ENOMEM;
	s->st = GS_VALUE;
	for (size_t i = 0; i < len && !r; i++)
		r = gs_step(s, (unsigned char)buf[i], out, outlen);
	/* the end of input ends a number at top level, as Go's eof() does */
	if (!r && s->depth == 0 &&
	    (s->st == GS_ZERO || s->st == GS_INT || s->st == GS_FRAC || s->st == GS_EXP_DIGITS))
		s->st = GS_END;
	if (!r && s->st != GS_END) {
		snprintf(out, outlen, "unexpected end of JSON input");
		r = 1;
	}
	free(s);
	return r;
}
