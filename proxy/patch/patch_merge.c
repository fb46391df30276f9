/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 7386 JSON merge patch (application/merge-patch+json): what kubectl
 * label/annotate/scale and `patch --type merge` send, and what client-side
 * apply uses for custom resources. Objects merge key by key, null removes a
 * key, every other value (arrays included) replaces the target.
 */
#include "proxy/patch/patch.h"

#include <errno.h>

static json_t *merge_value(const json_t *target, const json_t *patch);

/* Merges the object `patch` into a fresh copy of target (an object or not). */
static json_t *merge_object(const json_t *target, const json_t *patch)
{
	json_t *res = json_is_object(target) ? json_deep_copy(target) : json_object();
	const char *key;
	json_t *pv;

	if (!res)
		return NULL;
	json_object_foreach ((json_t *)patch, key, pv) {
		if (json_is_null(pv)) {
			json_object_del(res, key);
			continue;
		}
		json_t *nv = merge_value(json_object_get(res, key), pv);
		if (!nv || json_object_set_new(res, key, nv) != 0) {
			json_decref(res);
			return NULL;
		}
	}
	return res;
}

static json_t *merge_value(const json_t *target, const json_t *patch)
{
	if (!json_is_object(patch))
		return json_deep_copy(patch);
	return merge_object(target, patch);
}

int patch_merge(const json_t *doc, const json_t *patch, json_t **out)
{
	json_t *res;

	if (!patch)
		return -EINVAL;
	res = merge_value(doc, patch);
	if (!res)
		return -ENOMEM;
	*out = res;
	return 0;
}
