/* SPDX-License-Identifier: Apache-2.0 */
/* The evaluation context's fields, for the module's own files (proxy/cel/ctx.c). */
#ifndef KUBICLE_CEL_CTX_H
#define KUBICLE_CEL_CTX_H

#include "proxy/cel/cel_impl.h"

struct chunk;

struct cel_binding {
	struct cel_binding *next;
	const char *name;
	cel_value_t value;
	bool ready;
	cel_lazy_fn lazy;
	void *ud;
};

struct cel_ctx {
	struct chunk *chunks;
	uint64_t cost, cost_limit;
	bool over; /* the cost limit was passed */
	struct cel_binding *bindings;
};

/* The value bound to name (a lazy binding is evaluated on first read):
 * true and *out, or false when nothing is bound to it. */
bool cel_lookup(cel_ctx_t *c, const char *name, cel_value_t *out);

#endif
