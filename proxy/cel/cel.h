/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CEL, the Common Expression Language, as Kubernetes uses it: CRD validation
 * rules (x-kubernetes-validations), ValidatingAdmissionPolicy expressions
 * and webhook matchConditions.
 *
 * An expression is compiled once (cel_compile: parse, macro expansion,
 * resolution of variables and functions against an environment, cel-go's
 * static type checking, the estimated cost) into an immutable program
 * that any number of evaluations share. An evaluation
 * (cel_eval) runs in its own arena: every value it makes lives there and is
 * freed in one call (cel_ctx_free), as a request's pool is.
 *
 * DESIGN. Values are small structs passed by value (cel_impl.h); lists and
 * maps read from JSON (cel_json) are wrapped, not copied: a rule on a 3 MiB
 * object that reads one field converts one field. Types follow the OpenAPI
 * schema when one is given (integer -> int, number -> double, format
 * date-time -> timestamp, ...), as kube's structural-schema conversion does;
 * without one a JSON value maps to its natural CEL type (dyn). A runtime
 * cost counter stops runaway expressions ("operation cancelled: actual cost
 * limit exceeded"), as kube's per-call limit does.
 *
 * Threads: compiled programs are read-only and may be shared; a cel_ctx
 * belongs to one thread. Nothing here blocks or does I/O.
 */
#ifndef KUBICLE_CEL_H
#define KUBICLE_CEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cel_program cel_program_t;
typedef struct cel_ctx cel_ctx_t;
typedef struct cel_value cel_value_t; /* defined in cel_impl.h */

/* Libraries an environment offers, beyond the CEL standard definitions. */
enum {
	CEL_LIB_STRINGS = 1u << 0,   /* cel-go ext strings (charAt, split, format, ...) */
	CEL_LIB_LISTS = 1u << 1,     /* kube lists: isSorted, sum, min, max, indexOf */
	CEL_LIB_REGEX = 1u << 2,     /* kube regex: find, findAll */
	CEL_LIB_URLS = 1u << 3,      /* kube url(), isURL, getScheme, ... */
	CEL_LIB_QUANTITY = 1u << 4,  /* kube quantity(), isQuantity, ... */
	CEL_LIB_IP = 1u << 5,        /* kube ip(), cidr(), isIP, isCIDR, ... */
	CEL_LIB_SEMVER = 1u << 6,    /* kube semver(), isSemver, ... */
	CEL_LIB_FORMAT = 1u << 7,    /* kube format.dns1123Label() etc. */
	CEL_LIB_SETS = 1u << 8,      /* cel-go ext sets.contains/equivalent/intersects */
	CEL_LIB_ENCODERS = 1u << 9,  /* cel-go ext base64.encode/decode */
	CEL_LIB_OPTIONAL = 1u << 10, /* optional types: ?. [?] optional.of ... */
	CEL_LIB_AUTHZ = 1u << 11,    /* kube authorizer (ValidatingAdmissionPolicy) */
	CEL_LIB_ALL = 0x7ffu,        /* every library here but the authorizer */
	/* What kube 1.33 offers an expression it already stores (its base
	 * environment at 1.33), but the authorizer: kube has no ext encoders. */
	CEL_LIB_K8S = CEL_LIB_ALL & ~CEL_LIB_ENCODERS,
	/* What kube 1.33 offers a new expression (a CRD rule or a policy
	 * expression being written): its base environment at its compatibility
	 * version, 1.32, without semver (introduced in 1.33). */
	CEL_LIB_K8S_NEW = CEL_LIB_K8S & ~CEL_LIB_SEMVER,
};

/* A variable an environment declares. schema (borrowed, must outlive every
 * program compiled against the environment) is the OpenAPI v3 schema of
 * its value, or NULL for dyn; it is used to check field selections at
 * compile time ("undefined field 'x'") when not NULL. */
struct cel_var {
	const char *name;
	const json_t *schema;
	bool optional; /* the variable is an optional_type of the schema's type
			* (kube's oldSelf with optionalOldSelf) */
};

struct cel_env {
	const struct cel_var *vars;
	size_t nvars;
	unsigned libs; /* CEL_LIB_* */
	/* a property named by a CEL keyword is selected as written
	 * (`request.namespace`), as kube's policy environments have it; else
	 * only escaped (`self.__namespace__`), as CRD rules */
	bool keyword_fields;
};

/* Compiles expr against env. On success returns a program (free with
 * cel_program_free) and NULL *err. On failure returns NULL and sets *err to
 * a malloc'd message in cel-go's form, e.g.
 *   ERROR: <input>:1:6: Syntax error: mismatched input ...
 *    | self.x ==
 *    | .....^
 * Expressions over max_len (0: no limit) bytes are refused. */
cel_program_t *cel_compile(const char *expr, const struct cel_env *env, size_t max_len, char **err);
void cel_program_free(cel_program_t *p);
/* The source text (borrowed, lives as long as p). */
const char *cel_program_source(const cel_program_t *p);
/* cel-go's name of the static type of p's result, as its checker gives
 * it: "bool", "string", "int", "list(string)", "map(string, int)",
 * "google.protobuf.Duration", "optional_type(int)", "object" (a schema's
 * object), "dyn" when not known until run time. Borrowed from p. */
const char *cel_program_type(const cel_program_t *p);
/* The cost of evaluating p as cel-go's static estimator gives it, in its
 * cost units: the least and the most any input may cost, the sizes of
 * strings, lists and maps read from the variables' schemas (maxLength,
 * maxItems, maxProperties, else the most a 3 MiB request holds, as kube
 * estimates them). kube refuses a CRD rule whose most is too high. */
void cel_program_cost(const cel_program_t *p, uint64_t *min, uint64_t *max);
/* kube's request size limit (apiserver's DefaultMaxRequestSizeBytes), from
 * which the sizes a schema leaves open are estimated. */
#define CEL_MAX_REQUEST_BYTES 3145728ull
/* The fewest bytes a value of OpenAPI schema s takes in JSON (kube's
 * MinSerializedSize of its CEL type: 2 for "" [] {}, 4 for true, 1 for a
 * number or a value of any type). */
uint64_t cel_schema_min_size(const json_t *s);
/* The OpenAPI schema that typed p's result (borrowed from a variable's
 * schema in the environment: `object.spec` gives the spec's schema), or
 * NULL when the result was typed otherwise (a computed value). */
const json_t *cel_program_schema(const cel_program_t *p);
/* Whether p reads variable `var` (its index in the environment's vars, as
 * compiled; not a comprehension's variable of the same name): kube's
 * transition rules are the rules that read oldSelf. */
bool cel_program_reads(const cel_program_t *p, size_t var);

/* An evaluation context: arena, cost limit, variable bindings. cost_limit
 * 0 means no limit. */
cel_ctx_t *cel_ctx_new(uint64_t cost_limit);
void cel_ctx_free(cel_ctx_t *c);
/* Binds name to JSON v (borrowed; must outlive c) typed by schema (borrowed;
 * NULL for dyn). v NULL binds null. name is copied. */
int cel_bind_json(cel_ctx_t *c, const char *name, const json_t *v, const json_t *schema);
/* Binds name to a value made in c (cel_impl.h constructors). */
int cel_bind(cel_ctx_t *c, const char *name, cel_value_t v);
/* Binds name lazily: fn is called the first time the name is read, and its
 * result is kept for the rest of c's life (ValidatingAdmissionPolicy's
 * variables). ud is borrowed. */
typedef cel_value_t (*cel_lazy_fn)(cel_ctx_t *c, void *ud);
int cel_bind_lazy(cel_ctx_t *c, const char *name, cel_lazy_fn fn, void *ud);

/* The outcome of one evaluation. */
enum cel_outcome {
	CEL_OK = 0,     /* a value */
	CEL_EVAL_ERROR, /* an error value ("no such key: x", "division by zero") */
	CEL_COST,       /* the cost limit was passed */
};
/* Evaluates p in c. *out is the value (valid until c is freed). On
 * CEL_EVAL_ERROR/CEL_COST *msg is the message (borrowed from c). cost, if
 * not NULL, receives the cost spent. */
enum cel_outcome cel_eval(const cel_program_t *p, cel_ctx_t *c, cel_value_t *out, const char **msg,
			  uint64_t *cost);

/* Shorthands for a result of a known type: 0, -EINVAL when the value is of
 * another type (*msg names it: "expected bool, got int"), or -EIO on an
 * evaluation error / cost (*msg the message). */
int cel_eval_bool(const cel_program_t *p, cel_ctx_t *c, bool *out, const char **msg);
/* *out borrowed from c. */
int cel_eval_string(const cel_program_t *p, cel_ctx_t *c, const char **out, const char **msg);

/* The value as JSON (new reference), NULL for values JSON cannot hold
 * (types, opaque values; bytes become base64 strings, durations and
 * timestamps their string forms, as cel-go's JSON conversion does). */
json_t *cel_to_json(cel_value_t v);
/* The value as CEL's string() conversion would write it, for messages
 * (borrowed from c). */
const char *cel_debug_string(cel_ctx_t *c, cel_value_t v);

/* Whether s matches pattern anywhere, the pattern in RE2's syntax (Go's
 * regexp, as kube reads a CRD schema's `pattern`): 1 or 0; -EINVAL and
 * *err (malloc'd, Go's message) for a pattern RE2 refuses; -EIO past the
 * match limit. Compiled patterns are kept per thread (a few dozen). */
int cel_regex_search(const char *pattern, const char *s, char **err);

#endif
