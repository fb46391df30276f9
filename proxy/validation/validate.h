/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Object validation with kube-apiserver's field paths, reasons and messages.
 *
 * Validation collects "causes" into a JSON array the caller owns; each cause
 * is {"reason": "FieldValueInvalid", "message": "Invalid value: \"Foo\": …",
 * "field": "metadata.name"} exactly as kube puts them in a Status's
 * details.causes. The caller turns a non-empty array into a 422 Invalid
 * Status; val_status_message() builds its top-level message.
 *
 * The caller applies defaults (protocol TCP, restartPolicy Always, service
 * type ClusterIP, …) and fills metadata.name from generateName BEFORE
 * validating; to be safe, the checks here also treat a missing defaultable
 * field as its default.
 *
 * Threading: any thread (no global mutable state).
 */
#ifndef KB_PROXY_VALIDATE_H
#define KB_PROXY_VALIDATE_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "proxy/model/names.h"
#include "proxy/model/resource.h"

/* ---- causes ----------------------------------------------------------------
 * Appends {"reason","message","field"} to `causes` (borrowed array). The
 * message is the kube type text for `reason` ("Invalid value", "Required
 * value", "Unsupported value", "Forbidden", "Too long", "Duplicate value",
 * "Not found", "Too many", "Internal error") followed, when fmt is non-NULL
 * and non-empty, by ": " and the formatted detail. So an invalid name is
 *   val_add(c, "FieldValueInvalid", "metadata.name", "\"%s\": %s", name, msg)
 * and a missing field is val_add(c, "FieldValueRequired", "spec.x", NULL).
 * Unknown reasons use the reason itself as the type text.
 */
void val_add(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void val_addv(json_t *causes, const char *reason, const char *field, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* Go's %q of s, close enough (JSON quoting), into buf; returns buf. */
const char *val_quote(const char *s, char *buf, size_t len);
/* NotSupported with kube's list text: `"v": supported values: "a", "b"`. */
void val_not_supported(json_t *c, const char *field, const char *v, const char *const *vals);
/* Whether v (may be NULL: no) is in the NULL-ended list. */
bool val_in_list(const char *v, const char *const *vals);

/*
 * Kube's top-level message for a 422: `Pod "x" is invalid: <field>: <msg>`
 * for one cause, `... is invalid: [<f1>: <m1>, <f2>: <m2>]` for several. The
 * kind is qualified with the group for non-core kinds ("Deployment.apps").
 * Returns a malloc'ed string owned by the caller (NULL on ENOMEM).
 */
char *val_status_message(const struct proxy_resource *r, const char *name, const json_t *causes);

/* ---- objects ----------------------------------------------------------------
 * All take borrowed objects; `old` is NULL on create, the stored object on
 * update. Causes are appended to `causes` (borrowed). Return the number of
 * causes added (0: valid) or a negative errno (-ENOMEM).
 */

/* metadata: name (syntax per kind), namespace (required iff r->namespaced),
 * labels, annotations (keys, 256 KiB total), ownerReferences, finalizers;
 * on update name/namespace/uid/creationTimestamp are immutable. */
int val_object_meta(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		    json_t *causes);

/* The per-kind checks of the built-in kinds (by r->group and r->kind; other
 * kinds: none). Does NOT include val_object_meta: callers run both. On update
 * it enforces the kind's immutable fields (pod spec, selectors, clusterIP,
 * secret type, `immutable: true` data). -EINVAL if obj or causes is bad. */
int val_object(const struct proxy_resource *r, const json_t *obj, const json_t *old,
	       json_t *causes);

/* ValidatingWebhookConfiguration and MutatingWebhookConfiguration
 * (admissionregistration.k8s.io/v1, proxy/validation/validate_webhook.c): kube's
 * ValidateValidatingWebhookConfiguration / ValidateMutatingWebhookConfiguration
 * and, with `old`, their Update forms (checks the old object already failed
 * are relaxed as kube relaxes them). val_object dispatches here
 * (its kinds table, hence no count returned: use val_object for one). */
void val_webhook_configuration(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			       json_t *causes);

/* A CRD's spec.conversion as kube's validateCustomResourceConversion: the
 * strategy (None or Webhook; Webhook needs preserveUnknownFields false), the
 * webhook's clientConfig (url or service) and conversionReviewVersions
 * (need_known: one must be v1 or v1beta1). crd is borrowed. */
void val_crd_conversion(json_t *causes, const json_t *crd, bool need_known, bool allow_invalid_ca);
/* The CRD's conversion webhook caBundle is empty or loads as PEM
 * certificates (kube's webhook.ValidateCABundle; the establishing
 * controller leaves a CRD with an invalid one not Established). */
bool val_crd_ca_bundle_ok(const json_t *crd);
/* kube's v1 defaults of a conversion webhook (service port 443). */
void val_crd_conversion_defaults(json_t *crd);
/* Pieces of the webhook walk that the admission policies share
 * (proxy/validation/validate_webhook.c), each appending kube's causes at `base`:
 * validateRuleWithOperations (operations, apiGroups, apiVersions, resources
 * with subresources, scope); metav1validation.ValidateLabelSelector (lax:
 * AllowInvalidLabelValueInSelector); and an Invalid cause whose value is
 * Go's %#v of a string slice, `gotype{"a", "b"}`. */
void val_rule_with_operations(json_t *causes, const json_t *rule, const char *base);
void val_label_selector(json_t *causes, const json_t *sel, const char *base, bool lax);
void val_invalid_strings(json_t *causes, const char *field, const char *gotype, const json_t *arr,
			 const char *msg);

/* FlowSchema and PriorityLevelConfiguration (flowcontrol.apiserver.k8s.io/v1,
 * proxy/validation/validate_flowcontrol.c): kube's ValidateFlowSchema and
 * ValidatePriorityLevelConfiguration (an update is checked as a create, as
 * kube's); the mandatory objects' fixed specs. Reached through val_object. */
void val_flowcontrol(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		     json_t *causes);

/* ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding
 * (admissionregistration.k8s.io/v1, proxy/validation/validate_vap.c): kube's
 * ValidateValidatingAdmissionPolicy / ...Binding and, with `old`, their
 * Update forms (a policy's matchConditions are not checked again when
 * neither they nor paramKind changed); a policy's status as kube's status
 * update checks it. CEL expressions are checked for presence and length
 * only, in one place (check_expr), where their compilation will go.
 * Reached through val_object. */
void val_admission_policy(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			  json_t *causes);
void val_admission_policy_binding(const struct proxy_resource *r, const json_t *obj,
				  const json_t *old, json_t *causes);

/* APIService (apiregistration.k8s.io/v1, proxy/validation/validate_apiservice.c):
 * kube-aggregator's ValidateAPIService (the name must be
 * `<spec.version>.<spec.group>`, group and version syntax, priority ranges,
 * local APIServices without caBundle or insecureSkipTLSVerify, a service's
 * namespace and name) and ValidateAPIServiceStatus (condition statuses).
 * Reached through val_object. */
void val_apiservice(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		    json_t *causes);

/* A pod spec (borrowed) at `path` ("spec", "spec.template.spec"):
 * containers, init containers, ports, env, resources, restartPolicy (one of
 * Always/OnFailure/Never; absent means Always). Workload kinds add their own
 * restartPolicy rules on top. Returns causes added or -ENOMEM. */
int val_pod_spec(const json_t *spec, const char *path, json_t *causes);

/* kube's SplitMaybeSubscriptedPath for a downward API field path:
 * "metadata.labels['app']" gives path "metadata.labels" and key "app" (cut
 * to their buffers); false when fp has no subscript. */
bool val_split_subscript(const char *fp, char *path, size_t plen, char *key, size_t klen);

/* A quantity (kb_quantity_parse) in milli-units, saturated to INT64 bounds.
 * 0 or -EINVAL. */
int val_quantity_milli(const char *s, int64_t *out);

/* Cron schedule check for CronJob: 5 fields or @yearly/@annually/@monthly/
 * @weekly/@daily/@midnight/@hourly/@every <dur>. NULL when valid, else a
 * message written into buf (returned). */
const char *val_cron_schedule(const char *s, char *buf, size_t len);

/* Field paths of causes: snprintf into a VAL_PATHLEN buffer (truncated,
 * never overflowing); returns buf. */
#define VAL_PATHLEN 512
char *val_path(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A string member of o, or NULL. */
static inline const char *val_jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* kube's validateMatchConditions for a webhook's or policy's
 * matchConditions (array, borrowed) at base: names, duplicates, at most 64,
 * expressions present and compiling (proxy/validation/validate_vap.c). */
void val_match_conditions(json_t *c, const json_t *mcs, const char *base);

/* kube's use of a messageExpression's result (CRD rules, admission
 * policies): s[0..n) trimmed of white space into *out and *outn; true when it
 * is non-empty, at most 5,120 bytes (MaxEvaluatedMessageExpressionSizeBytes)
 * and on one line, else the static message stands. */
bool val_expression_message(const char *s, size_t n, const char **out, size_t *outn);

#endif
