/* SPDX-License-Identifier: Apache-2.0 */
/* CEL's evaluator: to be written (stub so the module builds). */
#include <errno.h>

#include "cel/cel_impl.h"

struct cel_list {
	size_t n;
	cel_value_t *items;
};

cel_value_t cel_list_new(cel_ctx_t *c, const cel_value_t *items, size_t n)
{
	struct cel_list *l = cel_alloc(c, sizeof(*l));
	l->items = cel_alloc(c, n * sizeof(*items) + 1);
	if (n)
		memcpy(l->items, items, n * sizeof(*items));
	l->n = n;
	return (cel_value_t){.kind = CEL_LIST, .l = l};
}

size_t cel_list_size(const struct cel_list *l)
{
	return l->n;
}

cel_value_t cel_list_at(cel_ctx_t *c, const struct cel_list *l, size_t i)
{
	return l->items[i];
}

cel_value_t cel_json(cel_ctx_t *c, const json_t *v, const json_t *schema)
{
	return cel_errorf(c, "not implemented");
}

enum cel_outcome cel_eval(const cel_program_t *p, cel_ctx_t *c, cel_value_t *out, const char **msg,
			  uint64_t *cost)
{
	*msg = "not implemented";
	return CEL_EVAL_ERROR;
}
