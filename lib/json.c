/* SPDX-License-Identifier: Apache-2.0 */
/* JSON helpers: see json.h. */
#include "lib/json.h"

#include <stdlib.h>
#include <string.h>

json_t *kb_json_path(const json_t *obj, const char *path)
{
	char key[128];
	const json_t *cur = obj;
	while (cur && *path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		cur = json_object_get(cur, key);
		path += n + (dot ? 1 : 0);
	}
	return (json_t *)cur;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **kb_json_sorted_keys(const json_t *obj, size_t *n)
{
	size_t cnt = json_object_size(obj), i = 0;
	const char **keys = calloc(cnt ? cnt : 1, sizeof(*keys));
	const char *k;
	json_t *v;
	if (!keys)
		return NULL;
	json_object_foreach ((json_t *)obj, k, v)
		keys[i++] = k;
	qsort(keys, i, sizeof(*keys), cmp_key);
	*n = i;
	return keys;
}
