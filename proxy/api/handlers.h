/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs on the resource table (proxy/api/handlers.c): get, list,
 * create, update, patch, delete, deletecollection, and what they share
 * with the rest of the API layer.
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_HANDLERS_H
#define KB_PROXY_API_HANDLERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy;
struct req;
struct proxy_resource;

/* A write through /scale: obj (borrowed, modified) is old with the new
 * replicas; it is written as any update and answered as a Scale. */
void handle_write_scale(struct req *r, const json_t *old, json_t *obj);

/* A Scale (borrowed), as a Table when the client asked for one. */
void handle_reply_scale(struct req *r, int code, const json_t *scale);

/* handlers.c */
void handle_resource(struct req *r);

/* kube's "Too large resource version" (storage/errors.go,
 * NewTooLargeResourceVersionError, as the cacher returns it with
 * resourceVersionTooHighRetrySeconds): a resourceVersion `want` newer than
 * the store's `cur`. The Status object (new reference) for a watch's ERROR
 * event; handle_reply_too_large answers it as the request's 504. */
json_t *handle_too_large_status(int64_t want, int64_t cur);
void handle_reply_too_large(struct req *r, int64_t want, int64_t cur);

/* The pod delete of pods/eviction, as kube's store.Delete with
 * ValidateAllObjectFunc (no admission of its own): pod (borrowed) with the
 * Eviction's DeleteOptions doc (borrowed, may be NULL), pre_rv (NULL: the
 * doc's) as resourceVersion precondition, dry_run or the doc's dryRun.
 * 0, or a negative errno once it has answered. */
int handle_delete_evicted(struct req *r, const json_t *doc, const char *pre_rv, bool dry_run,
			  json_t *pod);

/* Shared write paths used by handlers, namespaces and bootstrap. */
int handle_bootstrap_create(struct proxy *px, const struct proxy_resource *res, json_t *obj,
			    json_t **out);

#endif
