/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The evaluation context: an arena that every value of one evaluation
 * lives in (freed in one call), the cost counter, and the variables bound
 * for the evaluation. Constructors of the values that need memory.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy/cel/cel_impl.h"
#include "proxy/cel/ctx.h"
#include "lib/log.h"

#define CHUNK 16384

const struct cel_func *cel_extra_funcs;

struct chunk {
	struct chunk *next;
	size_t used, cap;
	max_align_t data[];
};

cel_ctx_t *cel_ctx_new(uint64_t cost_limit)
{
	cel_ctx_t *c = calloc(1, sizeof(*c));
	KB_REQUIRE(c != NULL);
	c->cost_limit = cost_limit;
	return c;
}

void cel_ctx_free(cel_ctx_t *c)
{
	if (!c)
		return;
	for (struct chunk *k = c->chunks, *n; k; k = n) {
		n = k->next;
		free(k);
	}
	free(c);
}

void *cel_alloc(cel_ctx_t *c, size_t n)
{
	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	struct chunk *k = c->chunks;
	if (!k || k->cap - k->used < n) {
		size_t cap = n > CHUNK ? n : CHUNK;
		k = malloc(sizeof(*k) + cap);
		KB_REQUIRE(k != NULL);
		k->used = 0;
		k->cap = cap;
		k->next = c->chunks;
		c->chunks = k;
	}
	void *p = (char *)k->data + k->used;
	k->used += n;
	memset(p, 0, n);
	return p;
}

char *cel_strndup(cel_ctx_t *c, const char *s, size_t n)
{
	char *d = cel_alloc(c, n + 1);
	if (n)
		memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

bool cel_cost(cel_ctx_t *c, uint64_t n)
{
	c->cost += n;
	if (c->cost_limit && c->cost > c->cost_limit)
		c->over = true;
	return !c->over;
}

cel_value_t cel_errorf(cel_ctx_t *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char buf[1024];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	return (cel_value_t){.kind = CEL_ERROR, .s = {cel_strndup(c, buf, (size_t)n), (size_t)n}};
}

cel_value_t cel_no_overload(cel_ctx_t *c, const char *fn)
{
	(void)fn; /* cel-go's text names no function */
	return cel_errorf(c, "no such overload");
}

cel_value_t cel_string_copy(cel_ctx_t *c, const char *s, size_t n)
{
	return cel_string_n(cel_strndup(c, s, n), n);
}

cel_value_t cel_optional(cel_ctx_t *c, const cel_value_t *v)
{
	cel_value_t *p = NULL;
	if (v) {
		p = cel_alloc(c, sizeof(*p));
		*p = *v;
	}
	return (cel_value_t){.kind = CEL_OPTIONAL, .opt = p};
}

static int bind(cel_ctx_t *c, const char *name, struct cel_binding **out)
{
	if (!name || !*name)
		return -EINVAL;
	struct cel_binding *b = cel_alloc(c, sizeof(*b));
	b->name = cel_strndup(c, name, strlen(name));
	b->next = c->bindings;
	c->bindings = b;
	*out = b;
	return 0;
}

int cel_bind(cel_ctx_t *c, const char *name, cel_value_t v)
{
	struct cel_binding *b;
	int rc = bind(c, name, &b);
	if (rc == 0) {
		b->value = v;
		b->ready = true;
	}
	return rc;
}

int cel_bind_json(cel_ctx_t *c, const char *name, const json_t *v, const json_t *schema)
{
	return cel_bind(c, name, v ? cel_json(c, v, schema) : cel_null());
}

int cel_bind_lazy(cel_ctx_t *c, const char *name, cel_lazy_fn fn, void *ud)
{
	struct cel_binding *b;
	int rc = bind(c, name, &b);
	if (rc == 0) {
		b->lazy = fn;
		b->ud = ud;
	}
	return rc;
}

bool cel_lookup(cel_ctx_t *c, const char *name, cel_value_t *out)
{
	for (struct cel_binding *b = c->bindings; b; b = b->next) {
		if (strcmp(b->name, name) != 0)
			continue;
		if (!b->ready) {
			b->value = b->lazy(c, b->ud);
			b->ready = true;
		}
		*out = b->value;
		return true;
	}
	return false;
}
