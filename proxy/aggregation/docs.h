/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OpenAPI documents as served (proxy/aggregation/docs.c).
 * Included through proxy/aggregation/aggregation.h. Loop thread only.
 */
#ifndef KB_PROXY_AGGREGATION_DOCS_H
#define KB_PROXY_AGGREGATION_DOCS_H

#include <jansson.h>
#include <stdbool.h>

struct req;

/* GET /openapi/v2 (protobuf when Accept names
 * application/com.github.proto-openapi.spec.v2@v1.0+protobuf or the
 * .v2.v1.0+protobuf spelling, else JSON; ETag / If-None-Match: 304) and
 * /openapi/v3[/...]; false when r names no document (not answered). */
bool docs_serve(struct req *r);

#endif
