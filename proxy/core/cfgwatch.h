/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The admission configuration read from two store keys and marked stale
 * when either changes (proxy/core/cfgwatch.c).
 * Included through proxy/core/core.h. Loop thread only.
 */
#ifndef KB_PROXY_CORE_CFGWATCH_H
#define KB_PROXY_CORE_CFGWATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct proxy;

/* cfgwatch.c: the admission configuration read from two store keys (key1
 * may be NULL) and marked stale (dirty) when either changes. cw lives as long as the
 * watches (its address is theirs). */
struct cfg_watch {
	store_watch_t *w[2];
	bool dirty;
};
int cfg_watch_start(struct proxy *px, const char *key0, const char *key1, struct cfg_watch *cw);
void cfg_watch_stop(struct cfg_watch *cw);

/* Every object under key (new array reference), or NULL on a store error. */
json_t *cfg_list(struct proxy *px, const char *key);

/* Every object of one resource, listed once and again after any of them
 * changed (a cfg_watch on its store key): what admission reads on every
 * write (PriorityClasses, LimitRanges). */
struct proxy_resource;
struct cfg_cache {
	struct cfg_watch cw;
	const struct proxy_resource *res;
	json_t *items;
};
/* NULL res: *out stays NULL and every read lists (0). -ENOMEM or a store
 * error otherwise. */
int cfg_cache_start(struct proxy *px, const struct proxy_resource *res, struct cfg_cache **out);
void cfg_cache_stop(struct cfg_cache *c);
/* The objects (new array reference; read them only): the kept list when
 * nothing changed since it was read, else a new list of `res` (kept). An
 * empty array when c and res are NULL or the store fails. */
json_t *cfg_cache_items(struct proxy *px, struct cfg_cache *c, const struct proxy_resource *res);

#endif
