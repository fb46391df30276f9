/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cel-go's string.format (ext strings, the version kube 1.33 enables):
 * clauses %s %d %f %e %b %x %X %o with an optional precision, "%%", the
 * en_US rendering of %f (grouped thousands), lists and maps written as CEL
 * literals, and the compile-time check cel-go makes of a constant format
 * string applied to a list literal (argument count and clause types).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/std.h"

#define DEFAULT_PRECISION 6

/* An arena string under construction. */
struct out {
	cel_ctx_t *c;
	char *p;
	size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		size_t cap = (o->len + n + 1) * 2;
		char *p = cel_alloc(o->c, cap);
		if (o->len)
			memcpy(p, o->p, o->len);
		o->p = p;
		o->cap = cap;
	}
	if (n)
		memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = 0;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* One parsed clause: verb and precision (-1: none). */
struct clause {
	char verb;
	int prec;
	size_t len; /* bytes after the '%' */
};

/* The clause after a '%': NULL, or the error (static). */
static const char *parse_clause(const char *p, size_t left, struct clause *cl)
{
	size_t i = 0;
	cl->prec = -1;
	if (p[0] == '.') {
		i = 1;
		while (i < left && p[i] >= '0' && p[i] <= '9')
			i++;
		if (i >= left)
			return "could not parse formatting clause: error while parsing precision: "
			       "could not find end of precision specifier";
		if (i == 1)
			return "could not parse formatting clause: error while parsing precision: "
			       "error while converting precision to integer: strconv.Atoi: parsing "
			       "\"\": invalid syntax";
		cl->prec = atoi(p + 1);
	}
	cl->verb = p[i];
	cl->len = i + 1;
	return NULL; /* an unknown verb is reported by the caller */
}

/* The type error of a clause ("decimal clause can only be used on ..."). */
static void clause_error(char verb, const char *type, char *buf, size_t cap)
{
	const char *what;
	switch (verb) {
	case 's':
		what = "string clause can only be used on strings, bools, bytes, ints, doubles, "
		       "maps, lists, types, durations, and timestamps";
		break;
	case 'd': what = "decimal clause can only be used on integers"; break;
	case 'f': what = "fixed-point clause can only be used on doubles"; break;
	case 'e': what = "scientific clause can only be used on doubles"; break;
	case 'b': what = "only integers and bools can be formatted as binary"; break;
	case 'o': what = "octal clause can only be used on integers"; break;
	default: what = "only integers, byte buffers, and strings can be formatted as hex";
	}
	snprintf(buf, cap, "%s, was given %s", what, type);
}

/* The kinds (type names, "list" for any list) a clause takes. */
static bool clause_takes(char verb, const char *type)
{
	static const char *const s_types[] = {"list",   "map",
					      "int",    "uint",
					      "double", "bool",
					      "string", "google.protobuf.Timestamp",
					      "bytes",  "google.protobuf.Duration",
					      "type",   "null_type",
					      NULL};
	const char *takes;
	switch (verb) {
	case 's':
		for (int k = 0; s_types[k]; k++)
			if (!strcmp(s_types[k], type))
				return true;
		return false;
	case 'd':
	case 'o': takes = " int uint "; break;
	case 'f':
	case 'e': takes = " double string "; break;
	case 'b': takes = " int uint bool "; break;
	default: takes = " int uint string bytes "; break;
	}
	char key[64];
	snprintf(key, sizeof(key), " %s ", type);
	return strstr(takes, key) != NULL;
}

/* ---- values written as cel-go's format writes them ---- */

/* Go's %q of s. */
static void quote(struct out *o, struct cel_str s)
{
	put(o, "\"", 1);
	for (size_t i = 0; i < s.len; i++) {
		unsigned char ch = (unsigned char)s.p[i];
		char tmp[8];
		const char *e = NULL;
		switch (ch) {
		case '\a': e = "\\a"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		case '\v': e = "\\v"; break;
		case '\\': e = "\\\\"; break;
		case '"': e = "\\\""; break;
		default: break;
		}
		if (e) {
			puts_(o, e);
		} else if (ch < 0x20 || ch == 0x7f) {
			snprintf(tmp, sizeof(tmp), "\\x%02x", ch);
			puts_(o, tmp);
		} else {
			put(o, s.p + i, 1);
		}
	}
	put(o, "\"", 1);
}

static const char *format_value(struct out *o, cel_value_t v, bool member);

static const char *format_list(struct out *o, cel_value_t v)
{
	put(o, "[", 1);
	for (size_t i = 0; i < cel_list_size(v.l); i++) {
		if (i)
			put(o, ", ", 2);
		const char *err = format_value(o, cel_list_at(o->c, v.l, i), true);
		if (err)
			return err;
	}
	put(o, "]", 1);
	return NULL;
}

struct pair {
	const char *key, *val;
};

static int pair_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pair *)a)->key, ((const struct pair *)b)->key);
}

static const char *format_map(struct out *o, cel_value_t v)
{
	size_t n = cel_map_size(v.m);
	struct pair *pairs = cel_alloc(o->c, (n + 1) * sizeof(*pairs));
	for (size_t i = 0; i < n; i++) {
		cel_value_t k = cel_map_key_at(o->c, v.m, i), val;
		cel_map_get(o->c, v.m, k, &val);
		struct out ko = {o->c}, vo = {o->c};
		if (k.kind != CEL_STRING && k.kind != CEL_BOOL && k.kind != CEL_INT &&
		    k.kind != CEL_UINT)
			return cel_strndup(o->c, "no formatting function for map key", 34);
		const char *err = format_value(&ko, k, true);
		if (!err)
			err = format_value(&vo, val, true);
		if (err)
			return err;
		pairs[i] = (struct pair){ko.p ? ko.p : "", vo.p ? vo.p : ""};
	}
	qsort(pairs, n, sizeof(*pairs), pair_cmp);
	put(o, "{", 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			put(o, ", ", 2);
		puts_(o, pairs[i].key);
		put(o, ":", 1);
		puts_(o, pairs[i].val);
	}
	put(o, "}", 1);
	return NULL;
}

/* %s of v; member: inside a list or map (strings quoted, doubles fixed). */
static const char *format_value(struct out *o, cel_value_t v, bool member)
{
	size_t len;
	const char *s;
	char tmp[64];
	switch (v.kind) {
	case CEL_LIST: return format_list(o, v);
	case CEL_MAP: return format_map(o, v);
	case CEL_NULL: puts_(o, "null"); return NULL;
	case CEL_STRING:
	case CEL_BYTES:
		if (!member) {
			put(o, v.s.p, v.s.len);
		} else {
			if (v.kind == CEL_BYTES)
				put(o, "b", 1);
			quote(o, v.s);
		}
		return NULL;
	case CEL_DOUBLE:
		if (member && isfinite(v.d)) {
			snprintf(tmp, sizeof(tmp), "%.*f", DEFAULT_PRECISION, v.d);
			puts_(o, tmp);
			return NULL;
		}
		break;
	case CEL_TIMESTAMP:
	case CEL_DURATION:
		if (member) {
			s = cel_scalar_string(o->c, v, &len);
			puts_(o, v.kind == CEL_TIMESTAMP ? "timestamp(" : "duration(");
			quote(o, (struct cel_str){s, len});
			put(o, ")", 1);
			return NULL;
		}
		break;
	default: break;
	}
	s = cel_scalar_string(o->c, v, &len);
	if (!s) {
		snprintf(tmp, sizeof(tmp), "no formatting function for %s", cel_type_name(v));
		return cel_strndup(o->c, tmp, strlen(tmp));
	}
	put(o, s, len);
	return NULL;
}

/* en_US digits: "1,234,567.50". */
static void grouped(struct out *o, const char *num)
{
	const char *digits = num[0] == '-' ? num + 1 : num;
	size_t intlen = strcspn(digits, ".");
	if (digits != num)
		put(o, "-", 1);
	for (size_t i = 0; i < intlen; i++) {
		if (i && (intlen - i) % 3 == 0)
			put(o, ",", 1);
		put(o, digits + i, 1);
	}
	puts_(o, digits + intlen);
}

static double as_double(cel_value_t v, bool *ok)
{
	*ok = true;
	if (v.kind == CEL_DOUBLE)
		return v.d;
	if (v.kind == CEL_STRING && v.s.len == 3 && !memcmp(v.s.p, "NaN", 3))
		return NAN;
	if (v.kind == CEL_STRING && v.s.len == 8 && !memcmp(v.s.p, "Infinity", 8))
		return INFINITY;
	if (v.kind == CEL_STRING && v.s.len == 9 && !memcmp(v.s.p, "-Infinity", 9))
		return -INFINITY;
	*ok = false;
	return 0;
}

static void format_float(struct out *o, double d, char verb, int prec)
{
	char tmp[512];
	if (isnan(d) || isinf(d)) {
		puts_(o, isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (verb == 'f') {
		snprintf(tmp, sizeof(tmp), "%.*f", prec < 0 ? DEFAULT_PRECISION : prec, d);
		grouped(o, tmp);
		return;
	}
	/* cel-go writes "%<precision>e": the precision is a width */
	snprintf(tmp, sizeof(tmp), "%*e", prec < 0 ? DEFAULT_PRECISION : prec, d);
	puts_(o, tmp);
}

static void format_integer(struct out *o, cel_value_t v, char verb)
{
	char tmp[80];
	bool neg = v.kind == CEL_INT && v.i < 0;
	unsigned long long u = v.kind == CEL_UINT   ? v.u
			       : v.kind == CEL_BOOL ? (unsigned long long)v.b
			       : neg                ? 0 - (unsigned long long)v.i
						    : (unsigned long long)v.i;
	if (neg)
		put(o, "-", 1);
	if (verb == 'b') {
		int k = 64;
		tmp[k] = 0;
		do {
			tmp[--k] = (char)('0' + (u & 1));
			u >>= 1;
		} while (u);
		puts_(o, tmp + k);
		return;
	}
	if (verb == 'd')
		snprintf(tmp, sizeof(tmp), "%llu", u);
	else if (verb == 'o')
		snprintf(tmp, sizeof(tmp), "%llo", u);
	else if (verb == 'x')
		snprintf(tmp, sizeof(tmp), "%llx", u);
	else
		snprintf(tmp, sizeof(tmp), "%llX", u);
	puts_(o, tmp);
}

static void format_hex_bytes(struct out *o, struct cel_str s, char verb)
{
	for (size_t i = 0; i < s.len; i++) {
		char tmp[4];
		snprintf(tmp, sizeof(tmp), verb == 'x' ? "%02x" : "%02X", (unsigned char)s.p[i]);
		put(o, tmp, 2);
	}
}

static const char *type_error(struct out *o, char verb, const char *type)
{
	char msg[256];
	clause_error(verb, type, msg, sizeof(msg));
	return cel_strndup(o->c, msg, strlen(msg));
}

/* One clause applied to v: NULL, or the error (arena). */
static const char *apply(struct out *o, const struct clause *cl, cel_value_t v)
{
	const char *type = cel_type_name(v);
	if (!clause_takes(cl->verb, type) || v.kind == CEL_OPAQUE)
		return type_error(o, cl->verb, type);
	bool ok;
	double d;
	switch (cl->verb) {
	case 's': return format_value(o, v, false);
	case 'f':
	case 'e':
		d = as_double(v, &ok);
		if (!ok)
			return type_error(o, cl->verb, type);
		format_float(o, d, cl->verb, cl->prec);
		return NULL;
	default:
		if (v.kind == CEL_STRING || v.kind == CEL_BYTES)
			format_hex_bytes(o, v.s, cl->verb);
		else
			format_integer(o, v, cl->verb);
		return NULL;
	}
}

CEL_FN(cel_s_format)
{
	if (n != 2 || a[0].kind != CEL_STRING || a[1].kind != CEL_LIST)
		return cel_no_overload(c, "format");
	struct cel_str f = a[0].s;
	struct out o = {c};
	put(&o, "", 0);
	size_t arg = 0, nargs = cel_list_size(a[1].l);
	for (size_t i = 0; i < f.len;) {
		if (f.p[i] != '%') {
			put(&o, f.p + i++, 1);
			continue;
		}
		if (i + 1 < f.len && f.p[i + 1] == '%') {
			put(&o, "%", 1);
			i += 2;
			continue;
		}
		if (arg >= nargs)
			return cel_errorf(c, "index %zu out of range", arg);
		if (i + 1 >= f.len)
			return cel_errorf(c, "unexpected end of string");
		struct clause cl;
		const char *err = parse_clause(f.p + i + 1, f.len - i - 1, &cl);
		if (err)
			return cel_errorf(c, "%s", err);
		if (!strchr("sdfebxXo", cl.verb) || !cl.verb)
			return cel_errorf(c,
					  "could not parse formatting clause: unrecognized "
					  "formatting clause \"%c\"",
					  cl.verb);
		err = apply(&o, &cl, cel_list_at(c, a[1].l, arg++));
		if (err)
			return cel_errorf(c, "error during formatting: %s", err);
		i += 1 + cl.len;
	}
	return cel_string_n(o.p, o.len);
}

/* The kind of a static type: "list(int)" -> "list". */
static void kind_of(const char *type, char *out, size_t cap)
{
	size_t n = strcspn(type, "(");
	snprintf(out, cap, "%.*s", (int)n, type);
}

int cel_format_check(const char *f, size_t len, const char *const *types, size_t nargs, char *msg,
		     size_t cap, long *bad_arg)
{
	size_t arg = 0;
	*bad_arg = -1;
	for (size_t i = 0; i < len;) {
		if (f[i] != '%') {
			i++;
			continue;
		}
		if (i + 1 < len && f[i + 1] == '%') {
			i += 2;
			continue;
		}
		if (arg >= nargs) {
			snprintf(msg, cap, "index %zu out of range", arg);
			return -EINVAL;
		}
		if (i + 1 >= len) {
			snprintf(msg, cap, "unexpected end of string");
			return -EINVAL;
		}
		struct clause cl;
		const char *err = parse_clause(f + i + 1, len - i - 1, &cl);
		if (err || !strchr("sdfebxXo", cl.verb) || !cl.verb) {
			if (err)
				snprintf(msg, cap, "%s", err);
			else
				snprintf(msg, cap,
					 "could not parse formatting clause: unrecognized "
					 "formatting clause \"%c\"",
					 cl.verb);
			return -EINVAL;
		}
		char kind[64];
		if (types[arg]) {
			kind_of(types[arg], kind, sizeof(kind));
			if (!clause_takes(cl.verb, kind)) {
				char inner[256];
				clause_error(cl.verb, kind, inner, sizeof(inner));
				snprintf(msg, cap, "error during formatting: %s", inner);
				*bad_arg = (long)arg;
				return -EINVAL;
			}
		}
		arg++;
		i += 1 + cl.len;
	}
	if (nargs > arg) {
		snprintf(msg, cap,
			 "too many arguments supplied to string.format (expected %zu, got %zu)",
			 arg, nargs);
		return -EINVAL;
	}
	return 0;
}
