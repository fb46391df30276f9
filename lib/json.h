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

/* parent[key] as an object, made (replacing a non-object) when missing.
 * Borrowed from parent. */
json_t *kb_json_object_at(json_t *parent, const char *key);

/* YAML text (one document) to JSON, every scalar a string. Returns a new
 * reference, or NULL with err (may be NULL) saying why: a syntax error and
 * its line, or nesting deeper than 32. */
json_t *kb_yaml_load(const char *text, size_t len, char *err, size_t errlen);

#endif
