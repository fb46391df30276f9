/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenAPI v3 documents (/openapi/v3 and /openapi/v3/<api|apis/g>/<v>) built
 * from the resource table (proxy/model/resource.h) and the generated message
 * tables (proxy/model/types.h). kubectl needs them for `apply`/`create -f`
 * validation (the PATCH operation of a GVK must declare `fieldValidation`)
 * and for `kubectl explain` (components.schemas with
 * x-kubernetes-group-version-kind).
 *
 * DESIGN: documents are built only on request. Each group/version document
 * is rendered to text once to compute its hash (for the root's
 * serverRelativeURL ?hash=) and then dropped, except for the one most
 * recently asked for, so an idle tenant keeps only a few hashes. The cache is
 * dropped by openapi_invalidate() whenever the resource table changes
 * (CRDs).
 *
 * Threading: loop thread only (reads the resource table).
 */
#ifndef KB_PROXY_OPENAPI_H
#define KB_PROXY_OPENAPI_H

#include <jansson.h>
#include <stddef.h>

#include "proxy/model/resource.h"

/* {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=H"},
 *  "apis/<g>/<v>": ...}} for every served group/version. New reference. */
json_t *openapi_v3_root(void);

/* The document of one group/version ("" for core), or NULL when no resource
 * of it is served. New reference. */
json_t *openapi_v3_gv(const char *group, const char *version);

/* The same document rendered compactly, *len set to its length; NULL when
 * not served. Borrowed: valid until the next openapi_* call. */
const char *openapi_v3_gv_text(const char *group, const char *version, size_t *len);

/* The OpenAPI v3 schema of row r's objects with every reference inlined
 * (messages deeper than a limit left untyped), apiVersion and kind
 * included, as kube's schema resolver gives CEL's type checker. New
 * reference. */
json_t *openapi_kind_schema(const struct proxy_resource *r);

/* Forgets cached hashes and text; call after the resource table changes. */
void openapi_invalidate(void);

/* The schema component name of a message: "k8s.io.api.core.v1.Pod" →
 * "io.k8s.api.core.v1.Pod". Writes into buf (len bytes). */
void openapi_schema_name(const char *proto, char *buf, size_t len);

/* Replaces the resource table source (tests); NULLs restore
 * resource_count/resource_at. Functions borrowed for the program's life. */
void openapi_set_resources(size_t (*count)(void), const struct proxy_resource *(*at)(size_t));

/* "v1.33.0": the Kubernetes version the documents describe. Static. */
const char *openapi_k8s_version(void);

/* ---- OpenAPI v2 (proxy/model/openapi_v2.c) ---- */

struct req;
struct kb_buf;

/* The Swagger 2.0 document of every served group/version (the union of the
 * v3 documents, converted; definitions named like kube's). New reference. */
json_t *openapi_v2_doc(void);

/* Encodes a Swagger 2.0 JSON document (borrowed) as a gnostic
 * openapi.v2.Document protobuf into *out (initialized here; the caller frees
 * it with kb_buf_free). Returns 0 or -ENOMEM. */
int openapi_v2_encode(json_t *doc, struct kb_buf *out);

/* The cached document as compact JSON / as protobuf, built on first use;
 * NULL on failure. Borrowed: valid until openapi_invalidate(). */
const char *openapi_v2_text(size_t *len);
const void *openapi_v2_proto(size_t *len);

/* The v2 document's ETag (a quoted hash of the JSON), or NULL when it
 * cannot be built. */
const char *openapi_v2_etag(void);

/* Merges an aggregated API's Swagger 2.0 document (source, borrowed:
 * its paths, definitions and parameters) into dest (borrowed, modified)
 * as kube-aggregator does (kube-openapi pkg/aggregator mergeSpecs, with
 * path conflicts ignored and definitions and parameters renamed): the
 * paths dest has already are left out, with the definitions only they
 * used; a definition (or shared parameter) dest has with other content
 * (GVKs aside) is renamed name_v2 (_v3, ...; or an equal one of dest's
 * is reused) and the references to it follow; the GVKs of the same
 * definition are merged. */
void openapi_v2_merge(json_t *dest, const json_t *source);

/* Drops the v2 cache (openapi_invalidate() calls it). */
void openapi_v2_invalidate(void);

#endif
