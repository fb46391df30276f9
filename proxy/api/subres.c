/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Subresources served by modules of their own, by (group, resource,
 * subresource). The generic ones (status, scale) live in handlers.c.
 */
#include <string.h>

#include "proxy/api/api.h"

struct subres_route {
	const char *group, *plural, *sub;
	void (*handle)(struct req *r);
};

static const struct subres_route routes[] = {
    {"", "pods", "log", hostpod_log},
    {"", "pods", "exec", hostpod_connect},
    {"", "pods", "attach", hostpod_connect},
    {"", "pods", "portforward", hostpod_connect},
    {"", "pods", "binding", hostpod_binding},
    {"", "pods", "eviction", eviction_handle},
    {"", "serviceaccounts", "token", auth_token_request},
    {NULL, NULL, NULL, NULL},
};

bool subres_handle(struct req *r)
{
	if (r->res->crd && crd_subres(r))
		return true;
	for (const struct subres_route *e = routes; e->sub; e++) {
		if (strcmp(e->group, r->res->group) == 0 &&
		    strcmp(e->plural, r->res->plural) == 0 && strcmp(e->sub, r->sub) == 0) {
			e->handle(r);
			return true;
		}
	}
	return false;
}
