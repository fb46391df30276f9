/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON helpers over jansson that carry no Kubernetes meaning.
 * Threading: any thread.
 */
#ifndef KB_JSON_H
#define KB_JSON_H

#include <jansson.h>

/* The value at a dotted path of object keys ("metadata.name"), or NULL.
 * Borrowed from `obj`. Keys longer than 127 bytes are not found. */
json_t *kb_json_path(const json_t *obj, const char *path);

/* The keys of object `obj` in strcmp order: a malloc'ed array of *n
 * pointers borrowed from obj (free the array only); NULL on ENOMEM. */
const char **kb_json_sorted_keys(const json_t *obj, size_t *n);

#endif
