/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL's static types as cel-go's checker has them, shared by the compiler
 * (parse.c: every node gets a type) and the type rules (check.c: types of
 * OpenAPI schemas, assignability, the overload signatures of the standard
 * and kube's libraries and their resolution with type parameters).
 *
 * Types live in the program's memory (or are static) and are immutable.
 * dyn is assignable to and from every type, as in cel-go: where a type is
 * not known the checker lets the expression through and the evaluator
 * decides.
 */
#ifndef KUBICLE_CEL_CHECK_H
#define KUBICLE_CEL_CHECK_H

#include "proxy/cel/ast.h"

enum cel_tk {
	CT_DYN,
	CT_NULL,
	CT_BOOL,
	CT_INT,
	CT_UINT,
	CT_DOUBLE,
	CT_STRING,
	CT_BYTES,
	CT_DURATION,
	CT_TIMESTAMP,
	CT_LIST,   /* p: element */
	CT_MAP,    /* p: key, q: value */
	CT_TYPE,   /* p: the type it names */
	CT_OPT,    /* optional_type(p) */
	CT_OBJECT, /* an OpenAPI object with properties: schema */
	CT_OPAQUE, /* a library's type: name ("net.IP") */
	CT_PARAM,  /* a signature's type parameter: name ("A") */
};

struct cel_type {
	enum cel_tk kind;
	const struct cel_type *p, *q;
	const json_t *schema; /* CT_OBJECT (borrowed from the environment or the program) */
	const char *name;     /* CT_OPAQUE, CT_PARAM */
};

extern const struct cel_type cel_t_dyn, cel_t_null, cel_t_bool, cel_t_int, cel_t_uint, cel_t_double,
    cel_t_string, cel_t_bytes, cel_t_duration, cel_t_timestamp;

/* Composite types, in p's memory. */
const struct cel_type *cel_type_new(cel_program_t *p, enum cel_tk kind, const struct cel_type *a,
				    const struct cel_type *b);
/* The type kube declares for a value of OpenAPI schema s (NULL: dyn). */
const struct cel_type *cel_type_of_schema(cel_program_t *p, const json_t *s);
/* cel-go's name of t ("list(int)", "map(string, int)",
 * "google.protobuf.Duration", "optional_type(string)", "type(int)"). */
void cel_type_name_of(const struct cel_type *t, char *buf, size_t cap);
/* Whether a value of type `actual` may be used where `want` is expected
 * (no type parameters): dyn both ways, composites by their parameters. */
bool cel_type_assignable(const struct cel_type *want, const struct cel_type *actual);
/* cel-go's joinTypes for aggregate literals: the most general of a and b
 * when one is assignable to the other, else NULL. */
const struct cel_type *cel_type_join(const struct cel_type *a, const struct cel_type *b);
bool cel_type_is_dyn(const struct cel_type *t);

/* Resolves a call of function `name` (operators by cel-go's names: "_+_",
 * "_[_]", "@in", "_?_:_", "@not_strictly_false") with argument types args
 * (a receiver call's target first). 1 and *out the result type (dyn when
 * several overloads with different results match); 0 when the function has
 * no known signatures (*out dyn: nothing is checked); -ENOENT when none of
 * its signatures takes the arguments (the caller reports cel-go's "found no
 * matching overload"). */
int cel_check_overload(cel_program_t *p, const char *name, bool receiver,
		       const struct cel_type *const *args, size_t nargs,
		       const struct cel_type **out);

#endif
