/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenAPI v2 (Swagger 2.0) at /openapi/v2, as JSON and as the gnostic
 * OpenAPIv2 protobuf (application/com.github.proto-openapi.spec.v2@v1.0+protobuf)
 * that kubectl <= 1.28 reads for `apply` validation and `explain`, and newer
 * kubectl for `explain --output=plaintext-openapiv2`, for validating a
 * `kind: List` stream and for computing client-side apply patches.
 *
 * DESIGN: the document is not a second model. It is the union of the v3
 * group/version documents of openapi.c, converted: components.schemas become
 * definitions (a definition shared by several group/versions keeps the union
 * of their x-kubernetes-group-version-kind), `allOf: [{$ref}]` becomes a bare
 * `$ref` into #/definitions, requestBody becomes a body parameter plus
 * `consumes`, parameter schemas become inline type/uniqueItems. CRD schemas
 * get the v2 restrictions kubectl's proto parser needs (no oneOf/anyOf/not,
 * nullable and x-kubernetes-preserve-unknown-fields nodes lose their
 * type/properties/items, an array without items loses its type). The JSON
 * text, its protobuf encoding and an ETag are built on the first request
 * and kept until openapi_invalidate() (the resource table changed: CRDs).
 *
 * Threading: loop thread only.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/model/openapi.h"

#define GVK_EXT   "x-kubernetes-group-version-kind"
#define MAX_DEPTH 64

static struct {
	bool built;
	char *json;
	size_t json_len;
	struct kb_buf pb;
	char etag[40];
} v2;

void openapi_v2_invalidate(void)
{
	free(v2.json);
	kb_buf_free(&v2.pb);
	memset(&v2, 0, sizeof(v2));
}

/* ---- v3 → v2 conversion ---- */

static json_t *v2_ref(const char *ref)
{
	char buf[512];
	const char *p3 = "#/components/schemas/";

	if (kb_str_has_prefix(ref, p3))
		snprintf(buf, sizeof(buf), "#/definitions/%s", ref + strlen(p3));
	else
		snprintf(buf, sizeof(buf), "%s", ref);
	return json_pack("{s:s}", "$ref", buf);
}

static bool copied_key(const char *k)
{
	static const char *const keys[] = {"format",     "description",      "title",
					   "pattern",    "default",          "example",
					   "enum",       "required",         "uniqueItems",
					   "readOnly",   "maxLength",        "minLength",
					   "maxItems",   "minItems",         "maximum",
					   "minimum",    "exclusiveMaximum", "exclusiveMinimum",
					   "multipleOf", "maxProperties",    "minProperties"};

	if (kb_str_has_prefix(k, "x-"))
		return true;
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		if (strcmp(keys[i], k) == 0)
			return true;
	return false;
}

static bool v2_type_ok(const char *t)
{
	static const char *const types[] = {"string",  "number", "integer",
					    "boolean", "object", "array"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(types); i++)
		if (strcmp(types[i], t) == 0)
			return true;
	return false;
}

static json_t *v2_schema(json_t *s, int depth);

static json_t *v2_properties(json_t *props, int depth)
{
	json_t *out = json_object(), *v;
	const char *k;

	json_object_foreach (props, k, v)
		json_object_set_new(out, k, v2_schema(v, depth + 1));
	return out;
}

/* The single `$ref` of s (directly or as allOf: [{$ref}]), or NULL. */
static const char *single_ref(json_t *s)
{
	json_t *all = json_object_get(s, "allOf");

	if (json_is_string(json_object_get(s, "$ref")))
		return json_string_value(json_object_get(s, "$ref"));
	if (json_is_array(all) && json_array_size(all) == 1)
		return json_string_value(json_object_get(json_array_get(all, 0), "$ref"));
	return NULL;
}

/* kubectl's proto parser rejects untyped nodes with items/properties and
 * arrays without items; kube-apiserver prunes CRD schemas the same way. */
static void v2_prune(json_t *out, json_t *s)
{
	bool nullable = json_is_true(json_object_get(s, "nullable"));
	bool preserve = json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields"));
	json_t *ap = json_object_get(out, "additionalProperties");

	if (nullable)
		json_object_del(out, "type");
	if (nullable || preserve) {
		json_object_del(out, "items");
		json_object_del(out, "properties");
	}
	const char *t = json_string_value(json_object_get(out, "type"));
	if (t && strcmp(t, "array") == 0 && !json_object_get(out, "items"))
		json_object_del(out, "type");
	if (json_is_object(ap) &&
	    json_is_true(json_object_get(json_object_get(s, "additionalProperties"), "nullable")))
		json_object_del(out, "additionalProperties");
}

static json_t *v2_schema(json_t *s, int depth)
{
	json_t *out, *v;
	const char *k, *ref;

	if (!json_is_object(s) || depth > MAX_DEPTH)
		return json_object();
	if ((ref = single_ref(s)) != NULL) {
		out = v2_ref(ref);
		if (json_is_string(json_object_get(s, "description")))
			json_object_set(out, "description", json_object_get(s, "description"));
		return out;
	}
	out = json_object();
	json_object_foreach (s, k, v) {
		if (strcmp(k, "type") == 0 && json_is_string(v) && v2_type_ok(json_string_value(v)))
			json_object_set(out, k, v);
		else if (strcmp(k, "properties") == 0 && json_is_object(v))
			json_object_set_new(out, k, v2_properties(v, depth));
		else if (strcmp(k, "items") == 0 && json_is_object(v))
			json_object_set_new(out, k, v2_schema(v, depth + 1));
		else if (strcmp(k, "additionalProperties") == 0 && json_is_object(v))
			json_object_set_new(out, k, v2_schema(v, depth + 1));
		else if (strcmp(k, "additionalProperties") == 0 && json_is_boolean(v))
			json_object_set(out, k, v);
		else if (copied_key(k))
			json_object_set_new(out, k, json_deep_copy(v));
	}
	v2_prune(out, s);
	return out;
}

/* v3 {name, in, required, schema: {type, uniqueItems}} → v2 inline form. */
static json_t *v2_param(json_t *p)
{
	static const char *const keys[] = {"name", "in", "required", "description"};
	json_t *out = json_object(), *schema = json_object_get(p, "schema");

	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		if (json_object_get(p, keys[i]))
			json_object_set(out, keys[i], json_object_get(p, keys[i]));
	static const char *const skeys[] = {"type", "format", "uniqueItems"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(skeys); i++)
		if (json_object_get(schema, skeys[i]))
			json_object_set(out, skeys[i], json_object_get(schema, skeys[i]));
	if (!json_object_get(out, "type"))
		json_object_set_new(out, "type", json_string("string"));
	return out;
}

static json_t *v2_params(json_t *params)
{
	json_t *out = json_array(), *p;
	size_t i;

	json_array_foreach (params, i, p)
		json_array_append_new(out, v2_param(p));
	return out;
}

/* requestBody → a body parameter (appended to params) and `consumes`. */
static void v2_body(json_t *op, json_t *body, json_t *params)
{
	json_t *content = json_object_get(body, "content"), *media, *schema = NULL;
	json_t *consumes = json_array();
	const char *type;

	json_object_foreach (content, type, media) {
		json_array_append_new(consumes, json_string(type));
		if (!schema)
			schema = json_object_get(media, "schema");
	}
	json_object_set_new(op, "consumes", consumes);
	json_array_insert_new(params, 0,
			      json_pack("{s:s, s:s, s:b, s:o}", "name", "body", "in", "body",
					"required", 1, "schema", v2_schema(schema, 0)));
}

static json_t *v2_responses(json_t *responses)
{
	json_t *out = json_object(), *resp;
	const char *code;

	json_object_foreach (responses, code, resp) {
		json_t *r = json_object();
		json_t *desc = json_object_get(resp, "description");
		json_object_set_new(r, "description", desc ? json_incref(desc) : json_string(""));
		json_t *schema = json_object_get(
		    json_object_get(json_object_get(resp, "content"), "application/json"),
		    "schema");
		if (schema)
			json_object_set_new(r, "schema", v2_schema(schema, 0));
		json_object_set_new(out, code, r);
	}
	return out;
}

static json_t *v2_operation(json_t *op)
{
	json_t *out = json_object(), *v;
	const char *k;
	json_t *params = v2_params(json_object_get(op, "parameters"));

	json_object_foreach (op, k, v) {
		if (strcmp(k, "description") == 0 || strcmp(k, "operationId") == 0 ||
		    strcmp(k, "tags") == 0 || kb_str_has_prefix(k, "x-"))
			json_object_set_new(out, k, json_deep_copy(v));
	}
	if (json_object_get(op, "requestBody"))
		v2_body(out, json_object_get(op, "requestBody"), params);
	else
		json_object_set_new(out, "consumes", json_pack("[s]", "*/*"));
	json_object_set_new(out, "produces",
			    json_pack("[s, s, s]", "application/json", "application/yaml",
				      "application/vnd.kubernetes.protobuf"));
	json_object_set_new(out, "schemes", json_pack("[s]", "https"));
	json_object_set_new(out, "parameters", params);
	json_object_set_new(out, "responses", v2_responses(json_object_get(op, "responses")));
	return out;
}

static json_t *v2_path_item(json_t *item)
{
	static const char *const methods[] = {"get",     "put",  "post", "delete",
					      "options", "head", "patch"};
	json_t *out = json_object();

	for (size_t i = 0; i < KB_ARRAY_SIZE(methods); i++) {
		json_t *op = json_object_get(item, methods[i]);
		if (op)
			json_object_set_new(out, methods[i], v2_operation(op));
	}
	if (json_object_get(item, "parameters"))
		json_object_set_new(out, "parameters",
				    v2_params(json_object_get(item, "parameters")));
	return out;
}

/* Adds def (stolen) under name; an existing one gains its GVKs. */
static void merge_def(json_t *defs, const char *name, json_t *def)
{
	json_t *old = json_object_get(defs, name);
	json_t *og, *ng, *g;
	size_t i, j;

	if (!old) {
		json_object_set_new(defs, name, def);
		return;
	}
	ng = json_object_get(def, GVK_EXT);
	og = json_object_get(old, GVK_EXT);
	if (ng && !og) {
		json_object_set_new(defs, name, def); /* drops old, which had none */
		return;
	}
	json_array_foreach (ng, i, g) {
		bool seen = false;
		json_t *o;
		json_array_foreach (og, j, o)
			seen = seen || json_equal(o, g);
		if (!seen)
			json_array_append(og, g);
	}
	json_decref(def);
}

static void add_gv(json_t *paths, json_t *defs, const char *group, const char *version)
{
	json_t *doc = openapi_v3_gv(group, version), *v;
	const char *k;

	if (!doc)
		return;
	json_object_foreach (json_object_get(doc, "paths"), k, v)
		json_object_set_new(paths, k, v2_path_item(v));
	json_object_foreach (json_object_get(json_object_get(doc, "components"), "schemas"), k, v)
		merge_def(defs, k, v2_schema(v, 0));
	json_decref(doc);
}

/* "api/v1" → "", "v1"; "apis/apps/v1" → "apps", "v1". */
static bool split_gv_key(const char *key, char *group, size_t glen, const char **version)
{
	const char *slash;

	if (kb_str_has_prefix(key, "api/")) {
		group[0] = '\0';
		*version = key + 4;
		return true;
	}
	if (!kb_str_has_prefix(key, "apis/") || !(slash = strrchr(key, '/')) || slash < key + 5)
		return false;
	snprintf(group, glen, "%.*s", (int)(slash - key - 5), key + 5);
	*version = slash + 1;
	return true;
}

json_t *openapi_v2_doc(void)
{
	json_t *root = openapi_v3_root(), *v;
	json_t *paths = json_object(), *defs = json_object();
	const char *key, *version;
	char group[256];

	json_object_foreach (json_object_get(root, "paths"), key, v)
		if (split_gv_key(key, group, sizeof(group), &version))
			add_gv(paths, defs, group, version);
	json_decref(root);
	return json_pack("{s:s, s:{s:s, s:s}, s:o, s:o}", "swagger", "2.0", "info", "title",
			 "Kubernetes", "version", openapi_k8s_version(), "paths", paths,
			 "definitions", defs);
}

/* ---- gnostic OpenAPIv2 protobuf writer ---- */

struct pbw {
	struct kb_buf b;
	int err;
};

static void put_raw(struct pbw *w, const void *p, size_t n)
{
	if (!w->err && n)
		w->err = kb_buf_append(&w->b, p, n);
}

static void put_varint(struct pbw *w, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;

	do {
		tmp[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	put_raw(w, tmp, n);
}

static void put_tag(struct pbw *w, uint32_t field, unsigned wire)
{
	put_varint(w, ((uint64_t)field << 3) | wire);
}

static void put_len(struct pbw *w, uint32_t field, const void *p, size_t n)
{
	put_tag(w, field, 2);
	put_varint(w, n);
	put_raw(w, p, n);
}

static void put_str(struct pbw *w, uint32_t field, const json_t *v)
{
	const char *s = json_string_value(v);

	if (s && *s)
		put_len(w, field, s, json_string_length(v));
}

static void put_bool(struct pbw *w, uint32_t field, const json_t *v)
{
	if (json_is_true(v)) {
		put_tag(w, field, 0);
		put_varint(w, 1);
	}
}

static void put_int(struct pbw *w, uint32_t field, const json_t *v)
{
	if (json_is_integer(v) && json_integer_value(v) != 0) {
		put_tag(w, field, 0);
		put_varint(w, (uint64_t)json_integer_value(v));
	}
}

static void put_double(struct pbw *w, uint32_t field, const json_t *v)
{
	double d = json_number_value(v);
	uint64_t bits;
	unsigned char le[8];

	if (!json_is_number(v))
		return;
	memcpy(&bits, &d, sizeof(bits));
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(bits >> (8 * i));
	put_tag(w, field, 1);
	put_raw(w, le, sizeof(le));
}

static void put_strings(struct pbw *w, uint32_t field, const json_t *arr)
{
	size_t i;
	json_t *s;

	json_array_foreach (arr, i, s)
		if (json_is_string(s))
			put_len(w, field, json_string_value(s), json_string_length(s));
}

typedef void (*enc_fn)(struct pbw *w, json_t *v);

/* Writes fn(v) as the length-delimited message `field` (also when empty). */
static void put_msg(struct pbw *w, uint32_t field, enc_fn fn, json_t *v)
{
	struct pbw sub = {0};

	fn(&sub, v);
	if (sub.err)
		w->err = sub.err;
	else
		put_len(w, field, sub.b.data, sub.b.len);
	kb_buf_free(&sub.b);
}

/* Any {2: yaml}: JSON text is YAML (flow style). */
static void enc_any(struct pbw *w, json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	if (!text) {
		w->err = -ENOMEM;
		return;
	}
	put_len(w, 2, text, strlen(text));
	free(text);
}

/* A NamedX {1: name, 2: X}; the name travels in a one-key object. */
static void put_named(struct pbw *w, uint32_t field, const char *name, enc_fn fn, json_t *v)
{
	struct pbw sub = {0};

	put_len(&sub, 1, name, strlen(name));
	put_msg(&sub, 2, fn, v);
	if (sub.err)
		w->err = sub.err;
	else
		put_len(w, field, sub.b.data, sub.b.len);
	kb_buf_free(&sub.b);
}

static void put_extensions(struct pbw *w, uint32_t field, json_t *obj)
{
	const char *k;
	json_t *v;

	json_object_foreach (obj, k, v)
		if (kb_str_has_prefix(k, "x-"))
			put_named(w, field, k, enc_any, v);
}

static void enc_schema(struct pbw *w, json_t *s);

static void enc_schemas_named(struct pbw *w, json_t *props)
{
	const char *k;
	json_t *v;

	json_object_foreach (props, k, v)
		put_named(w, 1, k, enc_schema, v);
}

static void enc_additional(struct pbw *w, json_t *v)
{
	if (json_is_boolean(v)) {
		put_tag(w, 2, 0);
		put_varint(w, json_is_true(v));
	} else {
		put_msg(w, 1, enc_schema, v);
	}
}

static void enc_type(struct pbw *w, json_t *v)
{
	if (json_is_string(v))
		put_str(w, 1, v);
	else
		put_strings(w, 1, v);
}

static void enc_items(struct pbw *w, json_t *v)
{
	size_t i;
	json_t *s;

	if (json_is_array(v))
		json_array_foreach (v, i, s)
			put_msg(w, 1, enc_schema, s);
	else
		put_msg(w, 1, enc_schema, v);
}

static void enc_schema_numbers(struct pbw *w, json_t *s)
{
	put_double(w, 6, json_object_get(s, "multipleOf"));
	put_double(w, 7, json_object_get(s, "maximum"));
	put_bool(w, 8, json_object_get(s, "exclusiveMaximum"));
	put_double(w, 9, json_object_get(s, "minimum"));
	put_bool(w, 10, json_object_get(s, "exclusiveMinimum"));
	put_int(w, 11, json_object_get(s, "maxLength"));
	put_int(w, 12, json_object_get(s, "minLength"));
	put_str(w, 13, json_object_get(s, "pattern"));
	put_int(w, 14, json_object_get(s, "maxItems"));
	put_int(w, 15, json_object_get(s, "minItems"));
	put_bool(w, 16, json_object_get(s, "uniqueItems"));
	put_int(w, 17, json_object_get(s, "maxProperties"));
	put_int(w, 18, json_object_get(s, "minProperties"));
}

/* Schema: field numbers of gnostic openapiv2/OpenAPIv2.proto. */
static void enc_schema(struct pbw *w, json_t *s)
{
	json_t *v;
	size_t i;

	put_str(w, 1, json_object_get(s, "$ref"));
	put_str(w, 2, json_object_get(s, "format"));
	put_str(w, 3, json_object_get(s, "title"));
	put_str(w, 4, json_object_get(s, "description"));
	if ((v = json_object_get(s, "default")) != NULL)
		put_msg(w, 5, enc_any, v);
	enc_schema_numbers(w, s);
	put_strings(w, 19, json_object_get(s, "required"));
	json_array_foreach (json_object_get(s, "enum"), i, v)
		put_msg(w, 20, enc_any, v);
	if ((v = json_object_get(s, "additionalProperties")) != NULL)
		put_msg(w, 21, enc_additional, v);
	if ((v = json_object_get(s, "type")) != NULL)
		put_msg(w, 22, enc_type, v);
	if ((v = json_object_get(s, "items")) != NULL)
		put_msg(w, 23, enc_items, v);
	json_array_foreach (json_object_get(s, "allOf"), i, v)
		put_msg(w, 24, enc_schema, v);
	if ((v = json_object_get(s, "properties")) != NULL)
		put_msg(w, 25, enc_schemas_named, v);
	put_bool(w, 27, json_object_get(s, "readOnly"));
	if ((v = json_object_get(s, "example")) != NULL)
		put_msg(w, 30, enc_any, v);
	put_extensions(w, 31, s);
}

/* Query/path/header/formData sub-schemas share required, in, description
 * and name (1-4); type, format and uniqueItems move with allowEmptyValue. */
static void enc_nonbody_sub(struct pbw *w, json_t *p)
{
	const char *in = json_string_value(json_object_get(p, "in"));
	bool has_empty = strcmp(in, "query") == 0 || strcmp(in, "formData") == 0;
	uint32_t base = has_empty ? 6 : 5;

	put_bool(w, 1, json_object_get(p, "required"));
	put_str(w, 2, json_object_get(p, "in"));
	put_str(w, 3, json_object_get(p, "description"));
	put_str(w, 4, json_object_get(p, "name"));
	put_str(w, base, json_object_get(p, "type"));
	put_str(w, base + 1, json_object_get(p, "format"));
	put_bool(w, base + 14, json_object_get(p, "uniqueItems"));
	put_extensions(w, base + 17, p);
}

static void enc_nonbody(struct pbw *w, json_t *p)
{
	static const char *const ins[] = {"header", "formData", "query", "path"};
	const char *in = json_string_value(json_object_get(p, "in"));

	for (uint32_t i = 0; in && i < KB_ARRAY_SIZE(ins); i++)
		if (strcmp(ins[i], in) == 0)
			put_msg(w, i + 1, enc_nonbody_sub, p);
}

static void enc_body_param(struct pbw *w, json_t *p)
{
	put_str(w, 1, json_object_get(p, "description"));
	put_str(w, 2, json_object_get(p, "name"));
	put_str(w, 3, json_object_get(p, "in"));
	put_bool(w, 4, json_object_get(p, "required"));
	if (json_object_get(p, "schema"))
		put_msg(w, 5, enc_schema, json_object_get(p, "schema"));
	put_extensions(w, 6, p);
}

static void enc_parameter(struct pbw *w, json_t *p)
{
	const char *in = json_string_value(json_object_get(p, "in"));

	if (in && strcmp(in, "body") == 0)
		put_msg(w, 1, enc_body_param, p);
	else
		put_msg(w, 2, enc_nonbody, p);
}

static void enc_json_ref(struct pbw *w, json_t *p)
{
	put_str(w, 1, json_object_get(p, "$ref"));
	put_str(w, 2, json_object_get(p, "description"));
}

/* ParametersItem: a Parameter or a JsonReference. */
static void enc_params_item(struct pbw *w, json_t *p)
{
	if (json_object_get(p, "$ref"))
		put_msg(w, 2, enc_json_ref, p);
	else
		put_msg(w, 1, enc_parameter, p);
}

static void put_params(struct pbw *w, uint32_t field, json_t *params)
{
	size_t i;
	json_t *p;

	json_array_foreach (params, i, p)
		put_msg(w, field, enc_params_item, p);
}

static void enc_schema_item(struct pbw *w, json_t *s)
{
	put_msg(w, 1, enc_schema, s);
}

static void enc_response(struct pbw *w, json_t *r)
{
	put_str(w, 1, json_object_get(r, "description"));
	if (json_object_get(r, "schema"))
		put_msg(w, 2, enc_schema_item, json_object_get(r, "schema"));
	put_extensions(w, 5, r);
}

static void enc_response_value(struct pbw *w, json_t *r)
{
	put_msg(w, 1, enc_response, r);
}

static void enc_responses(struct pbw *w, json_t *responses)
{
	const char *code;
	json_t *r;

	json_object_foreach (responses, code, r)
		if (!kb_str_has_prefix(code, "x-"))
			put_named(w, 1, code, enc_response_value, r);
	put_extensions(w, 2, responses);
}

static void enc_operation(struct pbw *w, json_t *op)
{
	put_strings(w, 1, json_object_get(op, "tags"));
	put_str(w, 2, json_object_get(op, "summary"));
	put_str(w, 3, json_object_get(op, "description"));
	put_str(w, 5, json_object_get(op, "operationId"));
	put_strings(w, 6, json_object_get(op, "produces"));
	put_strings(w, 7, json_object_get(op, "consumes"));
	put_params(w, 8, json_object_get(op, "parameters"));
	if (json_object_get(op, "responses"))
		put_msg(w, 9, enc_responses, json_object_get(op, "responses"));
	put_strings(w, 10, json_object_get(op, "schemes"));
	put_bool(w, 11, json_object_get(op, "deprecated"));
	put_extensions(w, 13, op);
}

static void enc_path_item(struct pbw *w, json_t *item)
{
	static const char *const methods[] = {"get",     "put",  "post", "delete",
					      "options", "head", "patch"};

	put_str(w, 1, json_object_get(item, "$ref"));
	for (uint32_t i = 0; i < KB_ARRAY_SIZE(methods); i++) {
		json_t *op = json_object_get(item, methods[i]);
		if (op)
			put_msg(w, i + 2, enc_operation, op);
	}
	put_params(w, 9, json_object_get(item, "parameters"));
	put_extensions(w, 10, item);
}

static void enc_paths(struct pbw *w, json_t *paths)
{
	const char *k;
	json_t *v;

	put_extensions(w, 1, paths);
	json_object_foreach (paths, k, v)
		if (!kb_str_has_prefix(k, "x-"))
			put_named(w, 2, k, enc_path_item, v);
}

static void enc_info(struct pbw *w, json_t *info)
{
	put_str(w, 1, json_object_get(info, "title"));
	put_str(w, 2, json_object_get(info, "version"));
	put_str(w, 3, json_object_get(info, "description"));
	put_extensions(w, 7, info);
}

static void enc_document(struct pbw *w, json_t *doc)
{
	put_str(w, 1, json_object_get(doc, "swagger"));
	if (json_object_get(doc, "info"))
		put_msg(w, 2, enc_info, json_object_get(doc, "info"));
	put_str(w, 3, json_object_get(doc, "host"));
	put_str(w, 4, json_object_get(doc, "basePath"));
	put_strings(w, 5, json_object_get(doc, "schemes"));
	put_strings(w, 6, json_object_get(doc, "consumes"));
	put_strings(w, 7, json_object_get(doc, "produces"));
	if (json_object_get(doc, "paths"))
		put_msg(w, 8, enc_paths, json_object_get(doc, "paths"));
	if (json_object_get(doc, "definitions"))
		put_msg(w, 9, enc_schemas_named, json_object_get(doc, "definitions"));
	put_extensions(w, 16, doc);
}

int openapi_v2_encode(json_t *doc, struct kb_buf *out)
{
	struct pbw w = {0};

	enc_document(&w, doc);
	if (w.err) {
		kb_buf_free(&w.b);
		return w.err;
	}
	*out = w.b;
	return 0;
}

/* ---- cache and HTTP ---- */

static int v2_build(void)
{
	json_t *doc;
	uint64_t h = 14695981039346656037ULL;

	if (v2.built)
		return 0;
	doc = openapi_v2_doc();
	v2.json = json_dumps(doc, JSON_COMPACT);
	int err = v2.json ? openapi_v2_encode(doc, &v2.pb) : -ENOMEM;
	json_decref(doc);
	if (err < 0) {
		openapi_v2_invalidate();
		return err;
	}
	v2.json_len = strlen(v2.json);
	for (size_t i = 0; i < v2.pb.len; i++) {
		h ^= (unsigned char)v2.pb.data[i];
		h *= 1099511628211ULL;
	}
	snprintf(v2.etag, sizeof(v2.etag), "\"%016" PRIX64 "\"", h);
	v2.built = true;
	return 0;
}

const char *openapi_v2_text(size_t *len)
{
	if (v2_build() < 0)
		return NULL;
	*len = v2.json_len;
	return v2.json;
}

const void *openapi_v2_proto(size_t *len)
{
	if (v2_build() < 0)
		return NULL;
	*len = v2.pb.len;
	return v2.pb.data;
}

const char *openapi_v2_etag(void)
{
	return v2_build() < 0 ? NULL : v2.etag;
}

/* ---- merging an aggregated API's document --------------------------------------- */

#define GVK_KEY    "x-kubernetes-group-version-kind"
#define REF_DEFS   "#/definitions/"
#define REF_PARAMS "#/parameters/"

/* Adds to `names` (an object used as a set) the definitions v's "$ref"s
 * name; every "$ref" under v. */
static void refs_of(const json_t *v, json_t *names, int depth)
{
	const char *k;
	json_t *x;
	size_t i;
	if (depth > 256)
		return;
	if (json_is_array(v)) {
		json_array_foreach (v, i, x)
			refs_of(x, names, depth + 1);
		return;
	}
	json_object_foreach ((json_t *)v, k, x) {
		const char *s = json_string_value(x);
		if (strcmp(k, "$ref") == 0 && s && strncmp(s, REF_DEFS, strlen(REF_DEFS)) == 0)
			json_object_set_new(names, s + strlen(REF_DEFS), json_true());
		else
			refs_of(x, names, depth + 1);
	}
}

/* kube-openapi's usedDefinitionForSpec: the definitions the paths (and
 * the parameters they share) reach, through the definitions. New object
 * used as a set. */
static json_t *used_definitions(const json_t *spec)
{
	json_t *used = json_object(), *seen = json_object();
	refs_of(json_object_get(spec, "paths"), used, 0);
	refs_of(json_object_get(spec, "parameters"), used, 0);
	const json_t *defs = json_object_get(spec, "definitions");
	bool more = true;
	while (more) {
		more = false;
		const char *k;
		json_t *x;
		json_object_foreach (used, k, x) {
			if (json_object_get(seen, k))
				continue;
			json_object_set_new(seen, k, json_true());
			refs_of(json_object_get(defs, k), used, 0);
			more = true;
			break; /* used may have grown: start over */
		}
	}
	json_decref(seen);
	return used;
}

/* kube-openapi's FilterSpecByPathsWithoutSideEffects for the paths dest
 * does not have: the others dropped, and the definitions only they used. */
static void drop_paths_of(json_t *src, const json_t *dest_paths)
{
	json_t *before = used_definitions(src), *paths = json_object_get(src, "paths");
	const char *k;
	json_t *x, *tmp;
	json_object_foreach_safe (paths, tmp, k, x)
		if (json_object_get(dest_paths, k))
			json_object_del(paths, k);
	json_t *after = used_definitions(src), *defs = json_object_get(src, "definitions");
	json_object_foreach_safe (defs, tmp, k, x)
		if (json_object_get(before, k) && !json_object_get(after, k))
			json_object_del(defs, k);
	json_decref(before);
	json_decref(after);
}

/* deepEqualDefinitionsModuloGVKs (kube-openapi pkg/aggregator). */
static bool same_modulo_gvk(const json_t *a, const json_t *b)
{
	json_t *x = json_deep_copy(a), *y = json_deep_copy(b);
	json_object_del(x, GVK_KEY);
	json_object_del(y, GVK_KEY);
	bool same = json_equal(x, y);
	json_decref(x);
	json_decref(y);
	return same;
}

/* The renames (object old → new name) that make src's entries of `what`
 * ("definitions" or "parameters") free of conflicts with dest's, as
 * kube-openapi's mergeSpecs: a name both have with different content
 * becomes name_v2 (name_v3, ...), or the first such name of dest whose
 * content is the same. */
static json_t *conflict_renames(const json_t *dest, const json_t *src, const char *what)
{
	const json_t *d = json_object_get(dest, what), *s = json_object_get(src, what);
	bool defs = strcmp(what, "definitions") == 0;
	json_t *renames = json_object(), *used = json_object();
	const char *k;
	json_t *v, *x;
	char name[512];
	json_object_foreach ((json_t *)d, k, x)
		json_object_set_new(used, k, json_true());
	json_object_foreach ((json_t *)s, k, v) {
		const json_t *have = json_object_get(d, k);
		if (!have || (defs ? same_modulo_gvk(have, v) : json_equal(have, v)))
			continue;
		int i = 1;
		bool reuse = false;
		while (have) {
			snprintf(name, sizeof(name), "%s_v%d", k, ++i);
			have = json_object_get(d, name);
			if (have && (defs ? same_modulo_gvk(have, v) : json_equal(have, v))) {
				reuse = true;
				break;
			}
		}
		while (!reuse && (json_object_get(used, name) || json_object_get(s, name)))
			snprintf(name, sizeof(name), "%s_v%d", k, ++i);
		json_object_set_new(renames, k, json_string(name));
		json_object_set_new(used, name, json_true());
	}
	json_decref(used);
	return renames;
}

/* Every "$ref" under v to a renamed definition or parameter follows it. */
static void rename_refs(json_t *v, const json_t *defs, const json_t *params, int depth)
{
	const char *k;
	json_t *x;
	size_t i;
	char ref[600];
	if (depth > 256)
		return;
	if (json_is_array(v)) {
		json_array_foreach (v, i, x)
			rename_refs(x, defs, params, depth + 1);
		return;
	}
	json_object_foreach (v, k, x) {
		const char *s = json_string_value(x), *to = NULL;
		if (strcmp(k, "$ref") != 0 || !s) {
			rename_refs(x, defs, params, depth + 1);
			continue;
		}
		if (strncmp(s, REF_DEFS, strlen(REF_DEFS)) == 0)
			to = json_string_value(json_object_get(defs, s + strlen(REF_DEFS)));
		if (to)
			snprintf(ref, sizeof(ref), REF_DEFS "%s", to);
		else if (strncmp(s, REF_PARAMS, strlen(REF_PARAMS)) == 0 &&
			 (to = json_string_value(json_object_get(params, s + strlen(REF_PARAMS)))))
			snprintf(ref, sizeof(ref), REF_PARAMS "%s", to);
		if (to)
			json_object_set_new(v, k, json_string(ref));
	}
}

/* src's entries of `what` renamed (the object's keys). */
static void rename_keys(json_t *src, const char *what, const json_t *renames)
{
	json_t *o = json_object_get(src, what);
	const char *k;
	json_t *to;
	json_object_foreach ((json_t *)renames, k, to) {
		json_t *v = json_object_get(o, k);
		if (!v)
			continue;
		json_incref(v);
		json_object_del(o, k);
		json_object_set_new(o, json_string_value(to), v);
	}
}

/* mergedGVKs: dest's definition gets the GVKs only src's has. */
static void merge_gvks(json_t *have, const json_t *v)
{
	json_t *a = json_object_get(have, GVK_KEY), *b = json_object_get(v, GVK_KEY), *x, *y;
	size_t i, j;
	if (!json_is_array(b))
		return;
	if (!json_is_array(a)) {
		json_object_set(have, GVK_KEY, b);
		return;
	}
	json_array_foreach (b, i, x) {
		bool found = false;
		json_array_foreach (a, j, y)
			found |= json_equal(x, y);
		if (!found)
			json_array_append(a, x);
	}
}

/* Copies src's entries of `what` that dest lacks (definitions: merging
 * the GVKs of those both have). */
static void copy_new(json_t *dest, const json_t *src, const char *what)
{
	json_t *d = json_object_get(dest, what), *v;
	const char *k;
	if (!json_is_object(d)) {
		if (!json_object_size(json_object_get(src, what)))
			return;
		d = json_object();
		json_object_set_new(dest, what, d);
	}
	json_object_foreach (json_object_get(src, what), k, v) {
		json_t *have = json_object_get(d, k);
		if (!have)
			json_object_set(d, k, v);
		else if (strcmp(what, "definitions") == 0)
			merge_gvks(have, v);
	}
}

void openapi_v2_merge(json_t *dest, const json_t *source)
{
	const json_t *sp = json_object_get(source, "paths");
	json_t *dp = json_object_get(dest, "paths");
	if (!json_is_object(sp) || !json_is_object(dp))
		return;
	const char *k;
	json_t *v;
	size_t keep = 0, clash = 0;
	json_object_foreach ((json_t *)sp, k, v)
		json_object_get(dp, k) ? clash++ : keep++;
	if (keep == 0)
		return; /* every path is dest's already */
	json_t *src = json_deep_copy(source);
	if (!src)
		return;
	if (clash)
		drop_paths_of(src, dp);
	json_t *defs = conflict_renames(dest, src, "definitions");
	rename_keys(src, "definitions", defs);
	rename_refs(src, defs, NULL, 0);
	json_t *params = conflict_renames(dest, src, "parameters");
	rename_keys(src, "parameters", params);
	rename_refs(src, NULL, params, 0);
	copy_new(dest, src, "definitions");
	copy_new(dest, src, "parameters");
	json_object_foreach (json_object_get(src, "paths"), k, v)
		json_object_set(dp, k, v);
	json_decref(defs);
	json_decref(params);
	json_decref(src);
}
