/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Field checks of an object against its protobuf message (proxy/model/types.h),
 * as kube-apiserver's strict decoding does them:
 *  - unknown fields (fieldValidation=Strict fails on them, Warn reports
 *    them as warnings), and
 *  - JSON type errors ("json: cannot unmarshal string into Go struct field
 *    DeploymentSpec.spec.replicas of type int32"), which fail whatever the
 *    field validation mode.
 * Paths are written as kube does: "spec.template.spec.containers[0].image";
 * a map value's path puts its key in brackets: "spec.counters[gpu].value".
 *
 * Top-level "apiVersion" and "kind" are accepted (the protobuf messages lack
 * them). Special messages accept the shapes their JSON form allows (Time and
 * Duration: string; Quantity: string or number; IntOrString: integer or
 * string); RawExtension, FieldsV1 and JSON are not descended. null is
 * accepted everywhere (Go leaves the field unset).
 *
 * Threading: pure functions; any thread.
 */
#ifndef KB_PROXY_SCHEMA_H
#define KB_PROXY_SCHEMA_H

#include <jansson.h>

/*
 * Appends a string per unknown field path ("spec.foo",
 * "spec.containers[0].bar") to `paths` (borrowed array; new strings added).
 * obj is borrowed. Returns how many were found (>= 0), -ENOENT for an
 * unknown message, -EINVAL when obj is not an object or paths not an array.
 */
int schema_unknown_fields(const char *msg_name, const json_t *obj, json_t *paths);

/*
 * Appends {"field": "spec.replicas", "message": "json: cannot unmarshal
 * string into Go struct field DeploymentSpec.spec.replicas of type int32"}
 * to `errors` (borrowed array) for every value of the wrong JSON type
 * (integers must be integral and in range; bytes must be base64). Unknown
 * fields are not reported here. Returns the count (>= 0), -ENOENT or -EINVAL
 * as above.
 */
int schema_check_types(const char *msg_name, const json_t *obj, json_t *errors);

/* Both in one walk of obj (a write's decode checks both): type errors to
 * `errors`, unknown field paths to `paths`; the count of both. */
int schema_check(const char *msg_name, const json_t *obj, json_t *errors, json_t *paths);

#endif
