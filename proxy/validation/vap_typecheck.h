/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ValidatingAdmissionPolicies' type checking (proxy/validation/vap_typecheck.c):
 * the CEL environments of a policy's expressions and the warnings kube's
 * policy status controller reports. Pure: any thread.
 */
#ifndef KB_PROXY_VALIDATION_VAP_TYPECHECK_H
#define KB_PROXY_VALIDATION_VAP_TYPECHECK_H

#include <jansson.h>
#include <stddef.h>

/*
 * The status kube's policy status controller gives policy (borrowed): its
 * status (copied) with observedGeneration set to metadata.generation and
 * typeChecking.expressionWarnings: each validation's expression and
 * messageExpression type-checked against the OpenAPI schema of every kind
 * its resource rules name (vap_typecheck.c). New reference.
 */
json_t *vap_type_check(const json_t *policy);
/* The OpenAPI schemas CEL types `request` (kube's AdmissionRequest: kind,
 * resource, subResource, requestKind, requestResource,
 * requestSubResource, name, namespace, operation, userInfo, dryRun,
 * options) and `namespaceObject` (a Namespace; NULL when not served) by.
 * New references. */
json_t *vap_request_schema(void);
/* kube's composition of a policy's variables (spec borrowed): `variables`
 * has a field per variable, typed by its expression compiled in order in
 * the environment vars (nvars; the entry named "variables" is typed by the
 * fields so far while they are compiled, then restored). New reference, or
 * NULL when the policy has none. */
struct cel_var;
json_t *vap_variables_schema(const json_t *spec, struct cel_var *vars, size_t nvars);
json_t *vap_namespace_schema(void);

#endif
