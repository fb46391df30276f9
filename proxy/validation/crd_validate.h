/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CustomResourceDefinitions (apiextensions.k8s.io/v1): the structural
 * openAPIV3Schema checks applied to custom objects (crd_schema.c) and the
 * CRD object checks (proxy/api/crd.c). Custom objects go through three steps on every
 * write, in kube-apiserver's order: unknown fields are found and pruned
 * (fieldValidation=Strict refuses them instead), defaults are applied, then
 * the object is validated against the schema (422 Invalid with field paths
 * and kube's texts: "spec.replicas in body must be of type integer:
 * \"string\"", "Required value", "Unsupported value: ...").
 *
 * Schemas are the JSON of a version's schema.openAPIV3Schema, borrowed.
 * Supported keywords: type, properties, additionalProperties, items,
 * required, enum, minimum/maximum (+exclusive*), multipleOf, pattern,
 * minLength/maxLength, minItems/maxItems, uniqueItems,
 * minProperties/maxProperties, nullable, default, string formats of kube's
 * registry (crd_format_valid), value validations in allOf/oneOf/anyOf/not
 * (with go-openapi's texts), and the extensions
 * x-kubernetes-preserve-unknown-fields, x-kubernetes-int-or-string and
 * x-kubernetes-embedded-resource. `pattern` is read as kube reads it, in
 * RE2's syntax (Go's regexp; cel_regex_search), and a CRD whose pattern
 * RE2 refuses is refused.
 *
 * Threading: pure functions; any thread.
 */
#ifndef KB_PROXY_VALIDATION_CRD_VALIDATE_H
#define KB_PROXY_VALIDATION_CRD_VALIDATE_H

#include <jansson.h>
#include <stdbool.h>

/*
 * Removes every field the schema does not declare (pruning). At the root
 * and in embedded resources apiVersion, kind and metadata are kept. When
 * `paths` (borrowed array) is not NULL each removed field's path is appended
 * ("spec.foo", "spec.items[0].bar", "spec.labels[k].x"). schema and obj are
 * borrowed; obj is modified. Returns the number of fields removed.
 */
int crd_schema_prune(const json_t *schema, json_t *obj, json_t *paths);

/*
 * Applies `default`s where a field is absent (or null and not nullable: such
 * nulls are dropped first, as kube does), recursing into properties, items
 * and additionalProperties. obj is borrowed and modified.
 */
void crd_schema_default(const json_t *schema, json_t *obj);

/*
 * Validates obj (borrowed) against schema (borrowed); appends kube causes
 * {"reason","message","field"} to `causes` (borrowed array). The root's
 * metadata, apiVersion and kind are left to the metadata checks. Returns the
 * number of causes added.
 */
int crd_schema_validate(const json_t *schema, const json_t *obj, json_t *causes);

/*
 * The same on an update, with kube's ratcheting (CRDValidationRatcheting,
 * on in 1.33): a value equal to the one it correlates with in old (borrowed;
 * through properties, map keys, map-list keys and set values, not atomic
 * list positions) is not held to the schema, so a tightened schema does not
 * lock existing objects. old NULL: crd_schema_validate.
 */
int crd_schema_validate_update(const json_t *schema, const json_t *obj, const json_t *old,
			       json_t *causes);

/*
 * Whether string s (borrowed) is of `format` (borrowed) as kube's format
 * registry reads it (crd_format.c): ipv4, ipv6, cidr, mac, uuid[345], date,
 * date-time, byte, uri, hexcolor; other formats accept any string.
 */
bool crd_format_valid(const char *format, const char *s);

/*
 * kube's ValidateListSetsAndMaps: in obj (borrowed), the second appearance
 * of an element of an x-kubernetes-list-type set, or of a key of a map
 * list, is a Duplicate cause (`<path>[i]: Duplicate value: <Go %#v>`),
 * appended to `causes`. Not a blocking error: the CEL rules still run, as
 * kube's strategy runs them. Returns the number of causes added.
 */
int crd_schema_list_types(const json_t *schema, const json_t *obj, json_t *causes);

/*
 * Checks that a CRD version's openAPIV3Schema (borrowed) is structural:
 * every node has a type (unless it preserves unknown fields or is
 * int-or-string), the root is an object, arrays have items, properties and
 * additionalProperties are not both set, no $ref, and root metadata only
 * restricts name and generateName. Causes go to `causes` under `path`
 * ("spec.versions[0].schema.openAPIV3Schema"). Returns causes added.
 */
int crd_schema_structural(const json_t *schema, const char *path, json_t *causes);
/* The same with kube's list checks relaxed for an update: relax holds the
 * CRD_LAX_* rules the old CRD's schemas already broke (crd_schema_lax of
 * each), which kube then does not require (requireAtomicSetType,
 * requireMapListKeysMapSetValidation). Besides the structural rules, both
 * check what kube's ValidateCustomResourceDefinitionOpenAPISchema checks of
 * x-kubernetes-list-type, -map-type, -list-map-keys (keys required or
 * defaulted, not nullable) and -preserve-unknown-fields, and that what the
 * root's allOf/anyOf/oneOf/not name exists in the schema (complete.go). */
#define CRD_LAX_ATOMIC_SET 1u /* a set's items not atomic */
#define CRD_LAX_MAP_KEYS   2u /* a map key neither required nor defaulted, or nullable */
#define CRD_LAX_PRUNED     4u /* a default with fields its schema prunes (requirePrunedDefaults) */
int crd_schema_structural_relaxed(const json_t *schema, const char *path, unsigned relax,
				  json_t *causes);
/* The CRD_LAX_* rules schema (borrowed, may be NULL) breaks. */
unsigned crd_schema_lax(const json_t *schema);
/* Checks every default of a structural schema (borrowed) against its own
 * schema as kube does at CRD write (defaulting/validation.go
 * ValidateDefaults): pruned to itself, then the value validations, causes
 * at "<path>...default"; with CRD_LAX_PRUNED in relax (crd_schema_lax of
 * the old CRD) an unpruned default is let through; a default that passes
 * its schema then goes through its rules (crd_rules_check_default).
 * Returns the causes added. */
int crd_schema_check_defaults(const json_t *schema, const char *path, unsigned relax,
			      json_t *causes);

/* True when pattern (RE2's syntax) matches str anywhere; true as well when
 * the pattern cannot run (refused, or past the match limit). */
bool crd_schema_pattern_match(const char *pattern, const char *str);

/*
 * CRD validation rules (x-kubernetes-validations, proxy/validation/crd_rules.c).
 * crd_rules_check: the rule lists of a version's schema (borrowed) as kube
 * checks them when a CRD is written (fields, compile errors), causes under
 * `path`; returns causes added.
 * crd_rules_compile: the schema's rules compiled, or NULL when it has none;
 * the schema (borrowed) gets a reference held until crd_rules_free.
 * crd_rules_eval: evaluates them on obj against old (NULL on create), both
 * borrowed; failures go to `causes`, ratcheted failures to *warnings (an
 * array made when needed). Returns causes added.
 */
struct crd_rules;
int crd_rules_check(const json_t *schema, const char *path, json_t *causes);
/* The same on an update: old (borrowed, NULL when the version is new) is
 * the version's stored schema; when it equals schema kube does not apply
 * the per-expression cost limit (the schema's total still applies). */
int crd_rules_check_update(const json_t *schema, const json_t *old, const char *path,
			   json_t *causes);
struct crd_rules *crd_rules_compile(const json_t *schema);
void crd_rules_free(struct crd_rules *cr);
int crd_rules_eval(const struct crd_rules *cr, const json_t *obj, const json_t *old, json_t *causes,
		   json_t **warnings);
/* A default (borrowed) of schema node s (borrowed; root: the version's
 * root or an embedded resource) against the rules of s and below, as kube
 * checks defaults at CRD write; failures go to `causes` under `path` (the
 * default's place, "...properties[x].default"). Returns causes added. */
int crd_rules_check_default(const json_t *s, const json_t *def, bool root, const char *path,
			    json_t *causes);

/* kube's version priority: "v2" > "v1" > "v1beta2" > "v1beta1" >
 * "v1alpha1" > anything else (alphabetical). < 0 when a comes first. */
int crd_version_cmp(const char *a, const char *b);

#endif
