/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The audit log (proxy/core/audit.c): DIR/audit.log with rotation, one
 * Event line per request, kube's audit IDs and annotations.
 * Included through proxy/core/core.h. Loop thread only.
 */
#ifndef KB_PROXY_CORE_AUDIT_H
#define KB_PROXY_CORE_AUDIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy;
struct req;
struct kb_buf;

/* audit.c: DIR/audit.log with rotation; one Event line per request. */
int audit_open(struct proxy *px);
void audit_close(struct proxy *px);

/* Writes r's line once (later calls do nothing). code: the response's. */
void audit_log(struct req *r, int code);

/* Adds an annotation to r's audit event (kube's audit.AddAuditAnnotation:
 * authorization decision and reason, Pod Security's verdicts). */
void audit_annotate(struct req *r, const char *key, const char *value);
/* The authorizer's decision and reason (annotations
 * authorization.k8s.io/decision and /reason, kept out of the json object
 * since every request has them). */
void audit_authz(struct req *r, bool allow, const char *why);

/* The name of the object a create's body names, for the event's objectRef
 * (kube's LogRequestObject; a generateName create has none). */
void audit_object_name(struct req *r, const char *name);

/* The request's audit ID, as kube's WithAuditInit: the client's Audit-ID
 * header when it sent a usable one, else a new UUID. */
void audit_init(struct req *r);

/* "Audit-Id: ..." for the answer's headers. */
void audit_id_header(const struct req *r, struct kb_buf *hdr);

#endif
