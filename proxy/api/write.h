/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The write path (proxy/api/write.c): kube's defaults with the server's
 * allocations, then validation and admission in kube's order.
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_WRITE_H
#define KB_PROXY_API_WRITE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy;
struct req;
struct proxy_resource;

/* write.c: the write path's defaults (kube's per-kind defaults, after the
 * allocations they leave to the server: a Service's ClusterIP). */
void write_defaults(struct proxy *px, const struct proxy_resource *res, json_t *obj);

/* write.c: an update keeps what the server allocated and the writer left
 * out: a Service's cluster IPs (kube's patchAllocatedValues,
 * pkg/registry/core/service/storage). old and obj: the stored object
 * (borrowed) and the new one (borrowed, modified). */
void write_keep_allocated(const struct proxy_resource *res, const json_t *old, json_t *obj);

/* write.c: mutating webhooks, authorization of the write (authz_admit),
 * metadata + kind validation (on failure answers 422 and returns -EINVAL),
 * the admission chain (admission_check: may change obj; answers 403,
 * returns -EACCES), then the validating webhooks; -EINPROGRESS while a
 * webhook call is out (the request is served again after it). */
int write_validate(struct req *r, json_t *obj, const json_t *old);

/* write.c: a strategic merge patch whose result `obj` (borrowed) has a
 * value of the wrong type answers kube's 422 (the unstructured converter's
 * "cannot restore map from string" on the patch, printed as Go's %+v of
 * `patch`, borrowed) and returns -EINVAL; else 0. */
int write_patch_types(struct req *r, const json_t *patch, const json_t *obj);

#endif
