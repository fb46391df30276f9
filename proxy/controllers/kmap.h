/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A string map for the controllers' queues and indexes
 * (proxy/controllers/kmap.c): keys copied, values owned through free_val.
 * Not thread-safe: the loop thread's.
 */
#ifndef KB_PROXY_CONTROLLERS_KMAP_H
#define KB_PROXY_CONTROLLERS_KMAP_H

#include <stdbool.h>
#include <stddef.h>

struct kmap;
struct kmap *kmap_new(void (*free_val)(void *));
void kmap_free(struct kmap *m);
void *kmap_get(const struct kmap *m, const char *key);
bool kmap_has(const struct kmap *m, const char *key);
/* Inserts or replaces (freeing the old value). 0 or -ENOMEM. */
int kmap_put(struct kmap *m, const char *key, void *val);
void kmap_del(struct kmap *m, const char *key);
size_t kmap_size(const struct kmap *m);
/* Calls fn for each entry; fn must not modify the map. */
void kmap_each(const struct kmap *m, void (*fn)(const char *key, void *val, void *arg), void *arg);

#endif
