/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one place an error becomes a Kubernetes Status, and every answer's
 * last step (proxy/core/status.c): reply_*.
 * Included through proxy/core/core.h. Loop thread only.
 */
#ifndef KB_PROXY_CORE_STATUS_H
#define KB_PROXY_CORE_STATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct req;
struct proxy_resource;

/* status.c: the one function that turns an error into a Status response. */
void reply_status(struct req *r, int code, const char *reason, const char *message,
		  json_t *details /* stolen, may be NULL */);
void reply_statusf(struct req *r, int code, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Maps a store errno for an object of r->res named `name` to its Status. */
void reply_errno(struct req *r, int err, const char *name);

/* 422 Invalid with causes (stolen). */
void reply_invalid(struct req *r, const char *kind, const char *name, json_t *causes);

/* 422 Invalid for bad list or watch options (ListOptions.meta.k8s.io), as
 * kube words it; causes stolen. */
void reply_list_options_invalid(struct req *r, json_t *causes);

/* Builds a Status object (new reference). */
json_t *reply_status_object(int code, const char *reason, const char *message, json_t *details);
void reply_json(struct req *r, int code, const json_t *obj);

/* Every answer's last step: counted in the metrics, audited, given its
 * Audit-Id, held back while a group commit is pending, then sent with
 * `headers` ("Name: value\r\n" lines, or NULL); r->http is NULL after. */
/* A body as it is, with its Content-Type. */
void reply_text(struct req *r, int code, const char *content_type, const char *body, size_t len);
void reply_raw(struct req *r, int code, const char *content_type, const char *headers,
	       const char *body, size_t len);

/* "pods" or "deployments.apps" as kube names a resource in messages. */
void reply_resource_name(const struct proxy_resource *res, char *buf, size_t len);

#endif
