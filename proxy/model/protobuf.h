/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decoding of Kubernetes protobuf request bodies
 * (Content-Type: application/vnd.kubernetes.protobuf) into the object's JSON
 * form, driven by the generated message tables (proxy/model/types.h).
 *
 * The envelope is the 4 bytes "k8s\0" then a runtime.Unknown message
 * {1: typeMeta{1 apiVersion, 2 kind}, 2: raw (the object), 3 contentEncoding,
 * 4 contentType}. gogo-protobuf writes zero values of non-pointer fields, so
 * outside of maps and lists a zero value ("", 0, false, an empty message, a
 * zero Time) is treated as unset and left out; a few pointer fields where a
 * zero is meaningful (Deployment spec.replicas and the like) keep it.
 *
 * Hostile input is expected: every length is bounds-checked, nesting is
 * limited to PB_MAX_DEPTH and a malformed body gives -EINVAL with a message.
 *
 * Threading: pure functions; any thread.
 */
#ifndef KB_PROXY_PROTOBUF_H
#define KB_PROXY_PROTOBUF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define PB_MAX_DEPTH 64

/* True when body starts with the "k8s\0" magic. body borrowed. */
bool pb_is_k8s(const void *body, size_t len);

/*
 * Decodes an enveloped body. msg_name is the expected message
 * ("k8s.io.api.core.v1.Namespace"); when NULL it is derived from the
 * envelope's apiVersion and kind (core "v1" → k8s.io.api.core.v1.<Kind>,
 * "apps/v1" → k8s.io.api.apps.v1.<Kind>). body and msg_name are borrowed.
 * On success *out is a new reference: {"apiVersion", "kind", ...fields by
 * JSON name}. Returns 0, -EINVAL (malformed; message in err), -ENOENT (unknown
 * message) or -ENOTSUP (a contentEncoding such as gzip); -ENOMEM.
 */
int pb_decode_k8s(const void *body, size_t len, const char *msg_name, json_t **out, char *err,
		  size_t errlen);

/*
 * Decodes one bare message (no envelope) of type msg_name. Same ownership
 * and errors as pb_decode_k8s; *out has no apiVersion/kind.
 */
int pb_decode_message(const char *msg_name, const void *data, size_t len, json_t **out, char *err,
		      size_t errlen);

#endif
