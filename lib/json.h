/* SPDX-License-Identifier: Apache-2.0 */
/*
 * JSON helpers over jansson that carry no Kubernetes meaning.
 * Threading: any thread.
 */
#ifndef KB_JSON_H
#define KB_JSON_H

#include <stdbool.h>

#include <jansson.h>

/* The value at a dotted path of object keys ("metadata.name"), or NULL.
 * Borrowed from `obj`. Keys longer than 127 bytes are not found. */
json_t *kb_json_path(const json_t *obj, const char *path);

/* The keys of object `obj` in strcmp order: a malloc'ed array of *n
 * pointers borrowed from obj (free the array only); NULL on ENOMEM. */
const char **kb_json_sorted_keys(const json_t *obj, size_t *n);
/* Sorts array arr in place; cmp is qsort's over `json_t *const *`
 * elements. Left as it is on ENOMEM. */
void kb_json_array_sort(json_t *arr, int (*cmp)(const void *, const void *));

/* parent[key] as an object, made (replacing a non-object) when missing.
 * Borrowed from parent. */
json_t *kb_json_object_at(json_t *parent, const char *key);

/* Whether a and b (borrowed, either may be NULL) are equal JSON values, two
 * missing ones included (jansson's json_equal is false for two NULLs). */
bool kb_json_same(const json_t *a, const json_t *b);

struct kb_buf;

/*
 * Appends the compact JSON text of v to buf (lib/util.h; grown as needed,
 * kept NUL-terminated): byte for byte what json_dumps(v, JSON_COMPACT |
 * JSON_ENCODE_ANY) writes (keys in insertion order, the same escapes), at a
 * fraction of its cost (no per-container loop detection, no callbacks).
 * v is borrowed. 0, -ENOMEM, or -EINVAL for a string that is not UTF-8 (on
 * error buf->len is back where it was).
 */
int kb_json_dump(const json_t *v, struct kb_buf *buf);
/* Appends `str` as a JSON string; invalid UTF-8 becomes U+FFFD (for text
 * from the wire: headers, paths). 0 or -ENOMEM. */
int kb_json_put_string(struct kb_buf *b, const char *str);

/* Appends pfx (pfxlen bytes of printable ASCII without '"' or '\\')
 * followed by str (len bytes) as one JSON string, as kb_json_dump writes
 * it. 0, -ENOMEM, or -EINVAL when str is not UTF-8 (buf as it was). */
int kb_json_put_key(struct kb_buf *b, const char *pfx, size_t pfxlen, const char *str, size_t len);
/*
 * A raw value: JSON text the process wrote itself (a create's fieldsV1,
 * proxy/patch/patch_ssa.c), kept as text inside a tree instead of as the
 * tree it stands for. kb_json_dump and kb_json_copy take it as that value
 * (the text written as it is; the copy still raw); every other reader sees
 * the array [text, null] and must ask kb_json_raw_text first where the
 * value matters. What marks it is a json_t of this process's own (the
 * array's second item), never the content: no decoded input, whatever its
 * bytes, is a raw value. text (len bytes, copied) must be exactly
 * kb_json_dump's text of one JSON value; never pass text from input. New
 * reference, or NULL on ENOMEM.
 */
json_t *kb_json_raw(const char *text, size_t len);
/* The text of v when it is a raw value (borrowed from v; *len its
 * length), else NULL. */
const char *kb_json_raw_text(const json_t *v, size_t *len);

/*
 * In JSON text t[0..n), the object starting at t[at] (after whitespace):
 * finds its member `key` without parsing, strings skipped whole (escapes
 * too) and nested values by their brackets. *key_at (may be NULL) is the
 * offset of the key's opening quote, *val that of its value (whitespace
 * skipped), *val_end (may be NULL: the value is then not looked at, as to
 * look inside it next) just past the value (a scalar's: at the ',' or the
 * bracket that ends it). false when t[at] is not an object, the key is
 * absent, or the text is malformed or cut before it (or in its value). For a quick look at
 * stored or received text (a watch line's managedFields, an object's
 * metadata) where a parse of the whole is the cost.
 */
bool kb_json_text_member(const char *t, size_t n, size_t at, const char *key, size_t *key_at,
			 size_t *val, size_t *val_end);

/* A deep copy of v (new reference; the true/false/null singletons are
 * shared), as json_deep_copy without its loop detection. NULL on ENOMEM.
 * v is borrowed and must not contain a cycle. */
json_t *kb_json_copy(const json_t *v);

/*
 * Parses JSON text exactly as json_loadb(buf, len, flags, err) does (same
 * tree, key order, duplicate-key rule), faster for the usual API object: a
 * direct recursive-descent pass. Anything it does not take as is (any
 * error, reals, integers of 19+ digits, \u0000, nesting deeper than 512,
 * flags other than JSON_REJECT_DUPLICATES) goes to json_loadb itself, so
 * errors and their messages are jansson's. Returns a new reference or NULL
 * with *err (may be NULL) set. buf is borrowed.
 */
json_t *kb_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *err);

/* Whether buf is not JSON as Go's encoding/json checks it: 1 with Go's
 * message in out ("invalid character 'x' looking for beginning of value",
 * "unexpected end of JSON input"), 0 when it is JSON, -ENOMEM. */
int kb_json_go_syntax_error(const char *buf, size_t len, char *out, size_t outlen);

/* YAML text (one document) to JSON, every scalar a string. Returns a new
 * reference, or NULL with err (may be NULL) saying why: a syntax error and
 * its line, or nesting deeper than 32. */
json_t *kb_yaml_load(const char *text, size_t len, char *err, size_t errlen);

/*
 * Makes jansson allocate through a per-thread cache of small freed blocks
 * (lib/json_alloc.c): a tree built, freed and built again reuses its
 * blocks without glibc's arena (once kb_json_alloc_enable was called). Call once, before other threads start
 * (it sets jansson's process-wide allocation functions); blocks are plain
 * malloc'ed ones either way. Not under AddressSanitizer.
 */
void kb_json_alloc_install(void);
/* Lets the calling thread's cache hold blocks (up to 1 MiB); a thread that
 * never calls it keeps none. A server's loop calls it once it has started. */
void kb_json_alloc_enable(void);
/* Gives the calling thread's cached blocks back to malloc (before a
 * malloc_trim, or when a thread goes idle). */
void kb_json_alloc_flush(void);
/* Whether the cache classes a freed block by glibc's chunk header (see
 * lib/json_alloc.c) rather than by malloc_usable_size: false before
 * kb_json_alloc_install, under AddressSanitizer, or with another malloc. */
bool kb_json_alloc_reads_headers(void);

#endif
