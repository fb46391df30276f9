/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compiled form of a CEL expression, shared by the parser (parse.c),
 * which builds it, and the evaluator (eval.c), which walks it. A program
 * owns every node and string in its block list (freed with the program);
 * nodes are immutable once compiled, so threads may share a program.
 */
#ifndef KUBICLE_CEL_AST_H
#define KUBICLE_CEL_AST_H

#include "proxy/cel/cel_impl.h"

enum cel_nk {
	N_CONST,  /* val */
	N_IDENT,  /* name */
	N_SELECT, /* a.name; op 1: has(); opt: a.?name */
	N_INDEX,  /* a[b]; opt: a[?b] */
	N_CALL,   /* name(args), or a.name(args) for a member call */
	N_LIST,   /* [args...]; optf[i]: ?elem */
	N_MAP,    /* {args[i]: args2[i]}; optf[i]: ?key */
	N_AND,    /* a && b */
	N_OR,     /* a || b */
	N_COND,   /* a ? b : c */
	N_NOT,    /* !a */
	N_NEG,    /* -a */
	N_BIN,    /* a op b (enum cel_binop in op) */
	N_COMPR,  /* macro (enum cel_macro in op) over a; vars name, name2; body b, c */
};

enum cel_binop { B_ADD, B_SUB, B_MUL, B_DIV, B_MOD, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_IN };

enum cel_macro {
	M_ALL,          /* b: predicate */
	M_EXISTS,       /* b: predicate */
	M_EXISTS_ONE,   /* b: predicate */
	M_MAP,          /* b: transform, c: filter or NULL */
	M_FILTER,       /* b: predicate */
	M_TMAP,         /* transformMap: b transform, c filter or NULL */
	M_TMAP_ENTRY,   /* transformMapEntry: b transform (a map), c filter or NULL */
	M_OPT_MAP,      /* optMap: b transforms the optional's value */
	M_OPT_FLAT_MAP, /* optFlatMap: b gives an optional from the value */
};

struct cel_node {
	enum cel_nk kind;
	int op;
	unsigned pos; /* byte offset in the source */
	bool opt;
	bool two; /* comprehension with two variables */
	const char *name, *name2;
	struct cel_node *a, *b, *c;
	struct cel_node **args, **args2;
	size_t nargs;
	bool *optf;
	cel_value_t val;
	const struct cel_func **funcs; /* overloads of a call, NULL-terminated */
	const char *type; /* static type's name ("int", "list(string)"), NULL: dyn or an object */
	const struct cel_type *ct; /* static type (check.h), set by the checker */
	const json_t *schema;      /* the schema that typed the value, or NULL */
	struct cel_size {
		uint64_t min, max; /* size of a value the expression makes (max 0: unknown) */
	} size;                    /* set by the cost estimator (cost.c) */
};

struct cel_block;
struct cel_type;

/* Zeroed memory owned by program p (freed with it). */
void *cel_prog_alloc(cel_program_t *p, size_t n);

struct cel_program {
	struct cel_block *mem;
	char *source;
	struct cel_node *root;
	struct cel_re *regexes;      /* constant patterns compiled once */
	json_t *owned;               /* schemas the compiler made (an array), or NULL */
	uint64_t reads;              /* bit i: the expression reads the environment's variable i */
	const char *type_name;       /* cel-go's name of the result's static type */
	uint64_t cost_min, cost_max; /* cel-go's estimated cost (cost.c) */
};

/* Sets p's estimated cost (cost.c), once p is checked. */
void cel_estimate(cel_program_t *p);

/* Regular expressions (regex.c). A pattern compiled with RE2's syntax
 * checked, added to *list: 0, or -EINVAL and *err (malloc'd, Go's
 * message) when refused. */
int cel_re_add(struct cel_re **list, const char *pat, size_t len, char **err);
void cel_re_free_all(struct cel_re *re);
/* Makes a program's compiled patterns visible to cel_regex for the
 * duration of an evaluation; cel_re_leave restores the previous scope (an
 * evaluation may run inside another's lazy binding) and frees the patterns
 * compiled during it. */
struct cel_re_scope {
	struct cel_re *prog, *eval;
};
void cel_re_enter(struct cel_re *program_res, struct cel_re_scope *saved);
void cel_re_leave(const struct cel_re_scope *saved);

#endif
