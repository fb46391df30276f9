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

#endif
