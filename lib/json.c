/* SPDX-License-Identifier: Apache-2.0 */
/* JSON helpers: see json.h. */
#include "lib/json.h"

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
