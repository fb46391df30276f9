/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tenant's admission configuration (webhook configurations, admission
 * policies and bindings) is read from two store keys and read again when
 * either changes: a store watch on each marks the set stale, and the next
 * write that needs it reloads it (webhook.c, vap.c).
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <stdlib.h>

#include "proxy/core/core.h"
#include "proxy/core/rstore.h"
#include "store/store.h"

static void on_change(const struct store_event *ev, void *arg)
{
	(void)ev;
	((struct cfg_watch *)arg)->dirty = true;
}

int cfg_watch_start(struct proxy *px, const char *key0, const char *key1, struct cfg_watch *cw)
{
	const char *keys[2] = {key0, key1};
	int64_t rev = store_rev(px->store);
	cw->dirty = true;
	for (int i = 0; i < 2; i++) {
		if (!keys[i])
			continue;
		int rc = store_watch(px->store, keys[i], NULL, rev, on_change, cw, &cw->w[i]);
		if (rc < 0) {
			cfg_watch_stop(cw);
			return rc;
		}
	}
	return 0;
}

void cfg_watch_stop(struct cfg_watch *cw)
{
	for (int i = 0; i < 2; i++) {
		if (cw->w[i])
			store_unwatch(cw->w[i]);
		cw->w[i] = NULL;
	}
}

json_t *cfg_list(struct proxy *px, const char *key)
{
	struct store_list_req lr = {.res = key};
	struct store_list_result out = {0};
	if (store_list(px->store, &lr, &out) < 0)
		return NULL;
	free(out.next);
	return out.items;
}

int cfg_cache_start(struct proxy *px, const struct proxy_resource *res, struct cfg_cache **out)
{
	*out = NULL;
	if (!res)
		return 0;
	struct cfg_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->res = res;
	int rc = cfg_watch_start(px, res->store_key, NULL, &c->cw);
	if (rc < 0) {
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void cfg_cache_stop(struct cfg_cache *c)
{
	if (!c)
		return;
	cfg_watch_stop(&c->cw);
	json_decref(c->items);
	free(c);
}

json_t *cfg_cache_items(struct proxy *px, struct cfg_cache *c, const struct proxy_resource *res)
{
	if (c && !c->cw.dirty && c->items)
		return json_incref(c->items);
	if (c)
		res = c->res;
	struct store_list_req req = {.ns = NULL};
	struct store_list_result out = {0};
	if (!res || rstore_list(px, res, &req, &out) < 0)
		return json_array();
	free(out.next);
	if (c) {
		json_decref(c->items);
		c->items = json_incref(out.items);
		c->cw.dirty = false;
	}
	return out.items;
}
