/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Facts about every Kubernetes 1.33 API message, generated from
 * k8s-api/types-1.33.json by scripts/gen_types.py into proxy/model/types_gen.c:
 * protobuf field numbers and types, JSON names, strategic-merge patch
 * strategies and merge keys, server-side apply list types and map keys.
 * Used by the protobuf decoder, field validation, OpenAPI, strategic merge
 * patch and server-side apply.
 *
 * Threading: read-only tables; any thread.
 */
#ifndef KB_PROXY_TYPES_H
#define KB_PROXY_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kt_kind {
	KT_STRING = 1,
	KT_BYTES,
	KT_BOOL,
	KT_INT32,
	KT_INT64,
	KT_UINT32,
	KT_UINT64,
	KT_DOUBLE,
	KT_FLOAT,
	KT_MESSAGE,
};

enum kt_label { KT_OPTIONAL = 0, KT_REPEATED, KT_MAP };

/* Messages whose JSON form is not an object of their fields. */
enum kt_special {
	KT_PLAIN = 0,
	KT_TIME,         /* metav1.Time: RFC3339 string (seconds, nanos in proto) */
	KT_MICROTIME,    /* metav1.MicroTime: RFC3339 with microseconds */
	KT_DURATION,     /* metav1.Duration: Go duration string */
	KT_QUANTITY,     /* resource.Quantity: string (a number is accepted) */
	KT_INTORSTRING,  /* intstr.IntOrString: integer or string */
	KT_RAWEXTENSION, /* runtime.RawExtension: any JSON object */
	KT_FIELDSV1,     /* metav1.FieldsV1: any JSON object */
	KT_JSON,         /* apiextensions JSON: any JSON value */
};

struct kt_message;

struct kt_field {
	const char *name;             /* protobuf field name */
	const char *json;             /* JSON name */
	uint32_t num;                 /* protobuf field number */
	uint8_t kind;                 /* enum kt_kind (map: of the value) */
	uint8_t label;                /* enum kt_label */
	uint8_t key_kind;             /* map key kind, 0 if not a map */
	const struct kt_message *msg; /* message type (map: of the value), or NULL */
	const char
	    *patch_strategy;   /* "merge", "retainKeys", "merge,retainKeys", "replace" or NULL */
	const char *merge_key; /* strategic merge key or NULL */
	const char *list_type; /* "atomic", "set", "map" or NULL */
	const char *const *map_keys; /* NULL-terminated list-map keys or NULL */
};

struct kt_message {
	const char *name; /* "k8s.io.api.core.v1.Pod" */
	const struct kt_field *fields;
	uint16_t nfields;
	uint8_t special; /* enum kt_special */
};

/* Finds a message by full name (no leading dot); NULL if unknown. */
const struct kt_message *kt_find(const char *name);
/* Finds a field by JSON name / by protobuf number; NULL if none. */
const struct kt_field *kt_field(const struct kt_message *m, const char *json);
const struct kt_field *kt_field_num(const struct kt_message *m, uint32_t num);
/* Every message, for iteration (OpenAPI). */
size_t kt_count(void);
const struct kt_message *kt_at(size_t i);

/* Inline fields: a field whose `json` is "" is a Go struct embedded with
 * `json:",inline"` (Volume's VolumeSource, Probe's ProbeHandler, the
 * LocalObjectReference of ConfigMapKeySelector...): its message's fields
 * appear directly in the parent's JSON object. kt_field() looks through
 * them, returning the embedded message's field; code that iterates
 * m->fields must descend into them itself. */

/* Internal: the generated tables behind the functions above
 * (proxy/model/types_gen.c, by scripts/gen_types.py), sorted by name. */
extern const struct kt_message kt_gen_messages[];
extern const size_t kt_gen_nmessages;

#endif
