/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The OpenAPI documents as served: /openapi/v2 (JSON or protobuf, with its
 * ETag) and /openapi/v3 (the root, and one document per group/version), the
 * local rows' built by proxy/model/openapi*.c merged with the
 * service-backed APIServices', as kube-aggregator serves them.
 *
 * Threading: loop thread.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/http.h"
#include "lib/util.h"
#include "proxy/aggregation/aggregation.h"
#include "proxy/model/openapi.h"

#define V2_PB_TYPE  "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
#define V2_PB_TYPE2 "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

/* The Content-Type of a protobuf answer, or NULL for JSON. Clients ask with
 * the "@v1.0" spelling, but Go's mime parser refuses '@' in a Content-Type,
 * so kube-apiserver answers with the ".v1.0" one; so do we. */
static const char *wanted_pb(const char *accept)
{
	if (accept && (strstr(accept, V2_PB_TYPE) || strstr(accept, V2_PB_TYPE2)))
		return V2_PB_TYPE2;
	return NULL;
}

/* The v2 document with the service-backed APIServices' merged in, kept
 * while neither the local document (its ETag) nor theirs change. */
static struct {
	char base[40];
	unsigned gen;
	bool valid;
	char *text;
	size_t text_len;
	struct kb_buf pb;
	char etag[40];
} merged;

static void merged_drop(void)
{
	free(merged.text);
	kb_buf_free(&merged.pb);
	memset(&merged, 0, sizeof(merged));
}

/* kube-aggregator serves one v2 document, its own merged with every
 * available APIService's (pkg/controllers/openapi/aggregator). false when
 * no backend has one: the local document as it is. */
static bool merged_v2(struct proxy *px, const char *base)
{
	unsigned gen = aggregator_openapi_v2_gen(px);
	if (merged.valid && merged.gen == gen && strcmp(merged.base, base) == 0)
		return true;
	merged_drop();
	if (!aggregator_openapi_v2_merge(px, NULL))
		return false;
	json_t *doc = openapi_v2_doc();
	if (!doc || !aggregator_openapi_v2_merge(px, doc)) {
		json_decref(doc);
		return false;
	}
	merged.text = json_dumps(doc, JSON_COMPACT);
	int rc = merged.text ? openapi_v2_encode(doc, &merged.pb) : -ENOMEM;
	json_decref(doc);
	if (rc < 0) {
		merged_drop();
		return false;
	}
	merged.text_len = strlen(merged.text);
	uint64_t h = 1469598103934665603ull; /* FNV-1a of the JSON */
	for (size_t i = 0; i < merged.text_len; i++)
		h = (h ^ (unsigned char)merged.text[i]) * 1099511628211ull;
	snprintf(merged.etag, sizeof(merged.etag), "\"%016llX\"", (unsigned long long)h);
	snprintf(merged.base, sizeof(merged.base), "%s", base);
	merged.gen = gen;
	merged.valid = true;
	return true;
}

static void serve_v2(struct req *r)
{
	const char *type = wanted_pb(kb_http_req_header(r->http, "accept"));
	const char *inm = kb_http_req_header(r->http, "if-none-match");
	struct kb_buf hdr = {0};
	size_t len = 0;
	const char *body = type ? openapi_v2_proto(&len) : openapi_v2_text(&len);
	const char *etag = openapi_v2_etag();
	if (body && etag && merged_v2(r->px, etag)) {
		body = type ? merged.pb.data : merged.text;
		len = type ? merged.pb.len : merged.text_len;
		etag = merged.etag;
	}

	if (!body || !etag) {
		reply_status(r, 500, "InternalError", "the OpenAPI v2 document could not be built",
			     NULL);
		return;
	}
	kb_buf_printf(&hdr, "ETag: %s\r\nVary: Accept\r\nCache-Control: no-cache, private\r\n",
		      etag);
	int code = inm && strstr(inm, etag) ? 304 : 200;
	reply_raw(r, code, type ? type : "application/json", hdr.data, code == 304 ? "" : body,
		  code == 304 ? 0 : len);
	kb_buf_free(&hdr);
}

bool docs_serve(struct req *r)
{
	if (r->nsegs == 2 && strcmp(r->segs[1], "v2") == 0) {
		serve_v2(r);
		return true;
	}
	if (r->nsegs == 2 && strcmp(r->segs[1], "v3") == 0) {
		json_t *root = openapi_v3_root();
		aggregator_openapi_paths(r->px, json_object_get(root, "paths"));
		reply_json(r, 200, root);
		json_decref(root);
		return true;
	}
	if (aggregator_openapi(r))
		return true;
	if (r->nsegs >= 3 && strcmp(r->segs[1], "v3") == 0) {
		const char *group = "", *version = NULL;
		if (r->nsegs == 4 && strcmp(r->segs[2], "api") == 0)
			version = r->segs[3];
		else if (r->nsegs == 5 && strcmp(r->segs[2], "apis") == 0) {
			group = r->segs[3];
			version = r->segs[4];
		}
		size_t len = 0;
		const char *text = version ? openapi_v3_gv_text(group, version, &len) : NULL;
		if (text) {
			reply_raw(r, 200, "application/json",
				  "Cache-Control: public, immutable\r\n", text, len);
			return true;
		}
	}
	return false;
}
