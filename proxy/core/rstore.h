/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store through a resource row (proxy/core/rstore.c): storage
 * conversions and a custom resource's versions. Objects in and out are in
 * the served shape.
 * Included through proxy/core/core.h. Loop thread only.
 */
#ifndef KB_PROXY_CORE_RSTORE_H
#define KB_PROXY_CORE_RSTORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

struct proxy;
struct proxy_resource;
struct store_list_req;
struct store_list_result;

/* rstore.c: the store through a resource row (storage conversions).
 * Objects in and out are in the served shape. */
int rstore_get(struct proxy *px, const struct proxy_resource *res, const char *ns, const char *name,
	       json_t **out);

/* final: the caller will not change obj again (store_create_final). */
int rstore_create(struct proxy *px, const struct proxy_resource *res, const char *ns,
		  const char *name, json_t *obj, bool final);
int rstore_update(struct proxy *px, const struct proxy_resource *res, const char *ns,
		  const char *name, json_t *obj, int64_t expected);
int rstore_delete(struct proxy *px, const struct proxy_resource *res, const char *ns,
		  const char *name, int64_t expected, json_t **last);

/* req->res is ignored (res->store_key is used); the filter sees served objects. */
int rstore_list(struct proxy *px, const struct proxy_resource *res,
		const struct store_list_req *req, struct store_list_result *out);

/* A custom object written through another version than stored: apiVersion
 * (conversion None) becomes the storage version's (rstore_crd_out turns it
 * back to the row's on the way out). */
void rstore_version_in(const struct proxy_resource *res, json_t *obj);

/* A custom object read from storage: schema defaults, then the version. */
void rstore_crd_out(const struct proxy_resource *res, json_t *obj);

#endif
