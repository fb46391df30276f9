/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the CEL module's files: the value representation, the
 * evaluation context's arena and cost counter, and the function table that
 * each library file contributes to.
 *
 * Values are plain structs; anything they point to lives in the
 * evaluation's arena (cel_alloc) or in JSON borrowed for the context's life.
 * Errors are values too (CEL_ERROR), propagated as CEL's semantics say
 * (&& and || absorb them when the other side decides).
 */
#ifndef KUBICLE_CEL_IMPL_H
#define KUBICLE_CEL_IMPL_H

#include "proxy/cel/cel.h"

#include <string.h>

enum cel_kind {
	CEL_NULL,
	CEL_BOOL,
	CEL_INT,
	CEL_UINT,
	CEL_DOUBLE,
	CEL_STRING, /* UTF-8, not NUL-terminated necessarily: use s.len */
	CEL_BYTES,
	CEL_LIST,
	CEL_MAP,
	CEL_DURATION,  /* nanoseconds in i */
	CEL_TIMESTAMP, /* nanoseconds since the Unix epoch in i (UTC) */
	CEL_TYPE,      /* a type value: type name in s ("int", "list", ...) */
	CEL_OPTIONAL,  /* opt: NULL for optional.none() */
	CEL_OPAQUE,    /* a library's own type (quantity, URL, IP, ...) */
	CEL_ERROR,     /* s: the message */
};

struct cel_list;
struct cel_map;
struct cel_opaque_type;

struct cel_str {
	const char *p;
	size_t len;
};

struct cel_value {
	enum cel_kind kind;
	union {
		bool b;
		int64_t i;
		uint64_t u;
		double d;
		struct cel_str s;            /* STRING, BYTES, TYPE, ERROR */
		const struct cel_list *l;    /* LIST */
		const struct cel_map *m;     /* MAP */
		const struct cel_value *opt; /* OPTIONAL (NULL: none) */
		struct {
			const struct cel_opaque_type *type;
			const void *data;
		} o; /* OPAQUE */
	};
};

/* A library's own type: its name as type() shows it ("kubernetes.URL",
 * "net.IP", ...), and its equality (NULL: never equal but to itself). */
struct cel_opaque_type {
	const char *name;
	bool (*equal)(const void *a, const void *b);
	/* x.field on a value of the type (kube's authorizer.requestResource),
	 * or NULL: no fields. Returns the field's value or an error value. */
	cel_value_t (*select)(cel_ctx_t *c, const void *data, const char *field);
};

/* ---- the context ---- */

/* Arena memory for the evaluation's life (zeroed). Never NULL: exhaustion
 * aborts through REQUIRE, as the cost limit bounds what an expression makes. */
void *cel_alloc(cel_ctx_t *c, size_t n);
char *cel_strndup(cel_ctx_t *c, const char *s, size_t n);
/* Adds n to the evaluation's cost; false once the limit is passed (the
 * evaluation then ends with CEL_COST). */
bool cel_cost(cel_ctx_t *c, uint64_t n);

/* ---- constructors ---- */

static inline cel_value_t cel_null(void)
{
	return (cel_value_t){.kind = CEL_NULL};
}
static inline cel_value_t cel_bool(bool b)
{
	return (cel_value_t){.kind = CEL_BOOL, .b = b};
}
static inline cel_value_t cel_int(int64_t i)
{
	return (cel_value_t){.kind = CEL_INT, .i = i};
}
static inline cel_value_t cel_uint(uint64_t u)
{
	return (cel_value_t){.kind = CEL_UINT, .u = u};
}
static inline cel_value_t cel_double(double d)
{
	return (cel_value_t){.kind = CEL_DOUBLE, .d = d};
}
/* s borrowed: must live as long as the value (arena, static, bound JSON). */
static inline cel_value_t cel_string_n(const char *s, size_t n)
{
	return (cel_value_t){.kind = CEL_STRING, .s = {s, n}};
}
static inline cel_value_t cel_string(const char *s)
{
	return cel_string_n(s, strlen(s));
}
static inline cel_value_t cel_bytes(const char *s, size_t n)
{
	return (cel_value_t){.kind = CEL_BYTES, .s = {s, n}};
}
static inline cel_value_t cel_opaque(const struct cel_opaque_type *t, const void *data)
{
	return (cel_value_t){.kind = CEL_OPAQUE, .o = {t, data}};
}
static inline bool cel_is_error(cel_value_t v)
{
	return v.kind == CEL_ERROR;
}
/* An error value with a printf-formatted message (arena). */
cel_value_t cel_errorf(cel_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* cel-go's "no such overload" error for a call that matched no signature. */
cel_value_t cel_no_overload(cel_ctx_t *c, const char *fn);
/* Copies s into the arena. */
cel_value_t cel_string_copy(cel_ctx_t *c, const char *s, size_t n);
cel_value_t cel_optional(cel_ctx_t *c, const cel_value_t *v /* NULL: none */);

/* ---- lists and maps (materialized or backed by JSON) ---- */

/* A new list of n items (copied into the arena). */
cel_value_t cel_list_new(cel_ctx_t *c, const cel_value_t *items, size_t n);
size_t cel_list_size(const struct cel_list *l);
/* Item i (< size); a JSON-backed list converts it on the way. */
cel_value_t cel_list_at(cel_ctx_t *c, const struct cel_list *l, size_t i);

/* A new map from n keys and values (copied). Keys must be bool, int, uint
 * or string; duplicate keys make an error value. */
cel_value_t cel_map_new(cel_ctx_t *c, const cel_value_t *keys, const cel_value_t *vals, size_t n);
size_t cel_map_size(const struct cel_map *m);
/* The value at key: true and *out, or false when absent. */
bool cel_map_get(cel_ctx_t *c, const struct cel_map *m, cel_value_t key, cel_value_t *out);
/* The i-th key in iteration order (i < size). */
cel_value_t cel_map_key_at(cel_ctx_t *c, const struct cel_map *m, size_t i);

/* JSON v (borrowed for c's life) as a value typed by schema (NULL: dyn). */
cel_value_t cel_json(cel_ctx_t *c, const json_t *v, const json_t *schema);

/* CEL equality (heterogeneous numeric equality as cel-go does: 1 == 1u ==
 * 1.0); an error value when either side is an error. */
cel_value_t cel_equal(cel_ctx_t *c, cel_value_t a, cel_value_t b);
/* The type name type() gives ("int", "list", "map", "google.protobuf.Duration", ...). */
const char *cel_type_name(cel_value_t v);

/* ---- functions ---- */

/* One overload set of one function as a library contributes it. name is
 * the call's name as written: "size", "startsWith", "quantity",
 * "optional.of", "sets.contains", "format.dns1123Label". A receiver call
 * (x.f(a)) has the receiver as args[0] and nargs counting it. nargs < 0:
 * any number (fn checks). fn checks the argument kinds and returns
 * cel_no_overload for a combination it does not take; args are never error
 * values (errors propagate before the call). */
struct cel_func {
	const char *name;
	bool receiver; /* called as x.name(...) rather than name(...) */
	int nargs;
	unsigned lib; /* CEL_LIB_* it belongs to, 0 for the standard definitions */
	cel_value_t (*fn)(cel_ctx_t *c, const cel_value_t *args, size_t nargs);
};

/* The tables, one per library file (NULL-name terminated). */
extern const struct cel_func cel_std_funcs[];
extern const struct cel_func cel_k8s_funcs[];
/* A table a user of the module adds (kube's authorizer library, which
 * needs the server's RBAC: proxy/admission/vap.c), or NULL. Set before compiling. */
extern const struct cel_func *cel_extra_funcs;

/* ---- helpers shared by the library files (added with the evaluator) ---- */

/* CEL ordering of a and b (same kind, or numbers of any kind: cel-go's
 * cross-type numeric comparisons): 0 and *cmp (-1, 0, 1), or -EINVAL when
 * they are not comparable (NaN included). */
int cel_compare(cel_value_t a, cel_value_t b, int *cmp);
/* CEL equality as a C bool (errors compare unequal). */
bool cel_values_equal(cel_ctx_t *c, cel_value_t a, cel_value_t b);
/* kube's property-name escaping undone: "foo__dash__bar" -> "foo-bar",
 * "__namespace__" -> "namespace". 0, or -EINVAL when name is not the CEL
 * name of any property (kube's Escape of the result must give name back:
 * "foo__bar" names no property, "foo__underscores__bar" names "foo__bar")
 * or does not fit in cap bytes. */
int cel_unescape_field(const char *name, char *out, size_t cap);

/* A regular expression in RE2's (Go's) syntax, compiled by PCRE2. The
 * evaluation's cache: a program's constant patterns are compiled once at
 * compile time, others once per evaluation (freed when cel_eval returns).
 * For library functions, called during cel_eval only. NULL and *err (an
 * error value with Go's message) when refused. */
struct cel_re;
const struct cel_re *cel_regex(cel_ctx_t *c, struct cel_str pattern, cel_value_t *err);
/* The first match in s at or after byte start: 1 and [*so, *eo), 0 none,
 * or -EIO and *err when the match limit is passed. */
int cel_regex_find(cel_ctx_t *c, const struct cel_re *re, struct cel_str s, size_t start,
		   size_t *so, size_t *eo, cel_value_t *err);

/* Standard base64 (padded): the encoded length (out holds 4*ceil(n/3)+1);
 * decoding accepts padded or unpadded input: the length, or -1 - the
 * offset of the first bad byte. */
size_t cel_base64_encode(const char *in, size_t n, char *out);
long cel_base64_decode(const char *in, size_t n, char *out);

/* Durations and timestamps as text (time.c). Go's time.ParseDuration: 0,
 * or -EINVAL (invalid), -ENODATA (a number without unit), -ENOENT (an
 * unknown unit), -ERANGE (overflow). */
int cel_parse_duration(const char *s, size_t n, int64_t *nanos);
/* RFC 3339: 0 or -EINVAL / -ERANGE (outside years 1..9999). */
int cel_parse_timestamp(const char *s, size_t n, int64_t *nanos);
/* "1.5s"; "2023-01-02T03:04:05.5Z" (arena). */
const char *cel_format_duration(cel_ctx_t *c, int64_t nanos);
const char *cel_format_timestamp(cel_ctx_t *c, int64_t nanos);
/* string(v) for a scalar (int, uint, double, bool, string, bytes as UTF-8,
 * duration, timestamp, type): the arena string, or NULL for other kinds. */
const char *cel_scalar_string(cel_ctx_t *c, cel_value_t v, size_t *len);

#endif
