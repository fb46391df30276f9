/* SPDX-License-Identifier: Apache-2.0 */
/* JSON helpers: see json.h. */
#include "lib/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

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

json_t *kb_json_object_at(json_t *parent, const char *key)
{
	json_t *o = json_object_get(parent, key);
	if (!json_is_object(o)) {
		o = json_object();
		json_object_set_new(parent, key, o);
	}
	return o;
}

static json_t *yaml_node_json(yaml_document_t *doc, yaml_node_t *n, int depth)
{
	if (!n || depth > 32)
		return NULL;
	if (n->type == YAML_SCALAR_NODE)
		return json_stringn((const char *)n->data.scalar.value, n->data.scalar.length);
	if (n->type == YAML_SEQUENCE_NODE) {
		json_t *a = json_array();
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     a && it < n->data.sequence.items.top; it++) {
			json_t *v =
			    yaml_node_json(doc, yaml_document_get_node(doc, *it), depth + 1);
			if (!v || json_array_append_new(a, v) < 0) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	json_t *o = json_object();
	for (yaml_node_pair_t *pr = n->data.mapping.pairs.start;
	     o && pr < n->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(doc, pr->key);
		json_t *v = yaml_node_json(doc, yaml_document_get_node(doc, pr->value), depth + 1);
		if (!k || k->type != YAML_SCALAR_NODE || !v ||
		    json_object_set_new(o, (const char *)k->data.scalar.value, v) < 0) {
			json_decref(v);
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *kb_yaml_load(const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	json_t *out = NULL;
	if (!yaml_parser_initialize(&parser))
		return NULL;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		if (err)
			snprintf(err, errlen, "yaml: %s at line %zu",
				 parser.problem ? parser.problem : "syntax error",
				 parser.problem_mark.line + 1);
		yaml_parser_delete(&parser);
		return NULL;
	}
	out = yaml_node_json(&doc, yaml_document_get_root_node(&doc), 0);
	if (!out && err)
		snprintf(err, errlen, "yaml: empty, or nested deeper than 32");
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return out;
}
