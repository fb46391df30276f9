/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admission webhooks (webhook.c): the tenant's Mutating- and
 * ValidatingWebhookConfigurations called on writes, as kube-apiserver's
 * MutatingAdmissionWebhook and ValidatingAdmissionWebhook plugins call
 * them. A request that needs calls is suspended (r->async) and served again
 * from its start once they are done; the functions below return 1 then,
 * and the caller returns -EINPROGRESS without answering.
 *
 * Threading: loop thread only.
 */
#ifndef KB_PROXY_WEBHOOK_H
#define KB_PROXY_WEBHOOK_H

#include <jansson.h>
#include <stdbool.h>

struct proxy;
struct req;

/* Reads the configurations and watches them. 0 or a negative errno. */
int webhook_start(struct proxy *px);
void webhook_stop(struct proxy *px);

/*
 * CREATE (old NULL) or UPDATE of obj (borrowed, modified) before its
 * validation: the mutating webhooks. 0 to go on (obj is what they shaped),
 * 1 suspended, or a negative errno when it has answered.
 */
int webhook_mutate(struct req *r, json_t *obj, const json_t *old);
/* After webhook_mutate returned 0: whether validating webhooks will be
 * called after the built-in admission chain (which should then not charge
 * quota: the request is served again once they allowed it). */
bool webhook_validation_ahead(struct req *r, const json_t *obj, const json_t *old);
/* After the built-in chain passed: the validating webhooks on obj. 0 to
 * go on, 1 suspended, or a negative errno when it has answered. */
int webhook_validate(struct req *r, const json_t *obj);
/* DELETE of one object (obj borrowed; delete_doc: the request's
 * DeleteOptions body or NULL): 0 to go on, 1 suspended, < 0 answered. */
int webhook_delete(struct req *r, const json_t *obj, const json_t *delete_doc);
/* Whether one rule of a webhook (RuleWithOperations) matches a request: op
 * CREATE/UPDATE/DELETE, the resource and subresource (NULL or "": none),
 * the namespace (NULL or "": cluster-scoped; a Namespace's own name for a
 * request on it, with is_namespace). */
bool webhook_rule_matches(const json_t *rule, const char *op, const char *group,
			  const char *version, const char *plural, const char *sub, const char *ns,
			  bool is_namespace);
/*
 * A write by one of the tenant's controllers (manager: its name, the user
 * the webhooks see as system:serviceaccount:kube-system:<manager>): op
 * "CREATE" of obj (named, with server metadata and defaults; old NULL),
 * "UPDATE" of obj over old, or "DELETE" of old (obj NULL), of res or of its
 * subresource sub (NULL, or a string that outlives the call, e.g.
 * "status"); obj and old borrowed. Through the mutating webhooks, then the
 * validating ones. 0 when none matches (go on at once), 1 when done() will
 * be called with rc 0 or < 0 and kube's message of the refusal or failure,
 * and the object they shaped (borrowed for the call; NULL for a DELETE), or
 * a negative errno.
 */
typedef void (*webhook_done_fn)(void *arg, int rc, json_t *obj, const char *message);
struct proxy_resource;
/* Whether any webhook is configured that a write of res could meet (a
 * cheap test before preparing what webhook_internal would be given). */
bool webhook_configured(struct proxy *px, const struct proxy_resource *res);
int webhook_internal(struct proxy *px, const struct proxy_resource *res, const char *op,
		     const char *sub, json_t *obj, const json_t *old, const char *manager,
		     webhook_done_fn done, void *arg);
/*
 * deletecollection of `items` (the objects it would delete, borrowed): each
 * one's DELETE webhooks, all at once. 0 to go on (then
 * webhook_collection_refusal tells which were refused), 1 suspended, < 0
 * answered. Objects that changed or appeared since the webhooks saw them
 * go through them again.
 */
int webhook_delete_collection(struct req *r, const json_t *items, const json_t *delete_doc);
/* A webhook's refusal of item (a Status, borrowed), or NULL. */
const json_t *webhook_collection_refusal(struct req *r, const json_t *item);
/* CONNECT (pods/exec, attach, portforward) with its options object (kind
 * PodExecOptions, ...; borrowed): 0 to go on, 1 suspended, < 0 answered. */
int webhook_connect(struct req *r, const json_t *opts);
/* CREATE of a subresource whose object the webhooks see but do not shape
 * (pods/eviction's Eviction, borrowed; its kind and group are the
 * subresource row's): 0 to go on, 1 suspended, < 0 answered. */
int webhook_create_unshaped(struct req *r, const json_t *obj);

#endif
