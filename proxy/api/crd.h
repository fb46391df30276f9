/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CustomResourceDefinitions at run time (proxy/api/crd.c): their rows in
 * the resource table, their objects' field checks and rules, /scale.
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_CRD_H
#define KB_PROXY_API_CRD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy;
struct req;
struct proxy_resource;

/* crd.c: CustomResourceDefinitions turn into resource rows at start-up and
 * whenever one changes. */
int crd_start(struct proxy *px);

/* crd.c: a CRD about to be deleted (borrowed, modified) gets the
 * customresourcecleanup finalizer, as kube adds it at delete time. */
void crd_before_delete(json_t *crd);

/* crd.c: field checks of a body for a row without a protobuf message: CRD
 * objects (defaults, validation) and custom objects (unknown fields pruned
 * or refused with Strict, schema defaults; their schema validation is
 * crd_check_rules'). obj is borrowed and modified. 0, or answered (400/422)
 * and -EINVAL. */
int crd_check_fields(struct req *r, json_t *obj);

/* A custom object's validation in kube's order, on obj against old (NULL on
 * create): the schema (ratcheting unchanged values), list-type uniqueness,
 * then the x-kubernetes-validations rules unless a cause so far is of a
 * kind kube stops at (then kube's "some validation rules were not checked"
 * note); failures appended to causes, ratcheted rule failures to
 * r->warnings. Returns causes added. */
int crd_check_rules(struct req *r, const json_t *obj, const json_t *old, json_t *causes);

/* crd.c: the scale subresource of custom objects (the CRD's replica paths).
 * True when it answered. */
bool crd_subres(struct req *r);

/* crd.c: fn(arg) after the rows changed (kube's crd-registration
 * controller listens: the aggregation layer's APIServices of CRD groups);
 * one listener, NULL removes it. arg must live until removed. */
typedef void (*crd_change_fn)(void *arg);
void crd_on_change(crd_change_fn fn, void *arg);

/* crdconv.c: conversion webhooks (spec.conversion.strategy Webhook) of
 * requests through a version other than the storage one.
 * crdconv_applies: res is such a version of such a CRD.
 * crdconv_begin, before r's handler: true when it answered r or parked it
 * (r->async; it comes back through r->resume); false: serve r (its reads
 * then see the converted objects until crdconv_end).
 * crdconv_out: the from_storage of such rows (borrowed res, obj modified). */
bool crdconv_applies(const struct proxy_resource *res);
bool crdconv_begin(struct req *r);
void crdconv_end(struct req *r);
void crdconv_out(const struct proxy_resource *res, json_t *obj);
/* crdconv.c, the write path (write_validate): whether obj (borrowed) is yet
 * to be converted to the storage version, and its conversion: 0 when done,
 * -EINPROGRESS when parked (served again later), another error when
 * answered. crdconv_in: the to_storage of such rows. */
bool crdconv_write_ahead(struct req *r, const json_t *obj);
int crdconv_write(struct req *r, const json_t *obj);
void crdconv_in(const struct proxy_resource *res, json_t *obj);
/* crdconv.c, a write's answer: when r's write was converted to storage by
 * the webhook, the stored object is converted back to r's version by a
 * second call and answered with `code` later (true: r parked, or answered
 * with the webhook's failure); false: answer obj (borrowed) as usual. */
bool crdconv_reply(struct req *r, int code, const json_t *obj);
/* crdconv.c, watches: ev (borrowed; copied) is queued on r's watch and
 * deliver(arg, ev, NULL) is called in order once its objects are converted
 * (the rows' from_storage then sees them), or deliver(arg, NULL, message)
 * when the webhook fails. deliver returns -1 when the watch closed (r is
 * freed: nothing more is delivered). Queued events go with r. */
struct store_event;
typedef int (*crdconv_deliver_fn)(void *arg, const struct store_event *ev, const char *fail);
void crdconv_watch_event(struct req *r, const struct store_event *ev, crdconv_deliver_fn deliver,
			 void *arg);
/* Whether r's watch has events waiting for their conversion (its bookmarks
 * wait: they must not overtake them). */
bool crdconv_watch_busy(const struct req *r);

#endif
