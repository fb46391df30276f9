/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RBAC rule evaluation with kube-apiserver's semantics
 * (rbac.authorization.k8s.io/v1): rules over apiGroups, resources
 * ("pods", "pods/log", "*", "*\/scale"), resourceNames, verbs and
 * nonResourceURLs ("/healthz", "/apis/" + "*"), and the subjects of bindings
 * (User, Group, ServiceAccount).
 *
 * DESIGN: an rbac_index holds every Role, ClusterRole, RoleBinding and
 * ClusterRoleBinding compiled into flat string sets, in hash tables keyed
 * by "namespace/name" ("" namespace for cluster objects), plus a subject
 * index (user name -> bindings, group name -> bindings) rebuilt lazily after
 * a binding changes. A decision looks up the user and each group, filters
 * bindings by namespace, finds each binding's role by key and walks its
 * rules: no allocation, no JSON. Role changes replace one entry, so they take
 * effect on the next decision.
 *
 * Escalation checks (rbac_covers) and rule listings (rbac_rules_for) work on
 * the JSON form of rules; they are not on the per-request path.
 *
 * Threading: an index belongs to one thread (the loop thread).
 */
#ifndef KB_PROXY_RBAC_H
#define KB_PROXY_RBAC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* What a request wants: kube's authorizer.Attributes. Strings borrowed. */
struct rbac_attrs {
	const char *user;
	const char *const *groups;
	size_t ngroups;
	const char *verb;
	bool resource_request;
	const char *api_group;   /* resource requests: "" for core */
	const char *resource;    /* "pods" */
	const char *subresource; /* "log" or NULL/"" */
	const char *ns;          /* NULL/"" for cluster scope */
	const char *name;        /* NULL/"" when not named */
	const char *path;        /* non-resource requests: "/healthz" */
};

enum rbac_kind { RBAC_ROLE = 0, RBAC_CLUSTERROLE, RBAC_ROLEBINDING, RBAC_CLUSTERROLEBINDING };

typedef struct rbac_index rbac_index_t;

/* A new empty index (caller frees with rbac_index_free); NULL on ENOMEM. */
rbac_index_t *rbac_index_new(void);
void rbac_index_free(rbac_index_t *ix);
/* Adds or replaces an object of `kind` (borrowed; the index keeps what it
 * needs, including a reference to the rules array). 0, -EINVAL, -ENOMEM. */
int rbac_index_put(rbac_index_t *ix, enum rbac_kind kind, const json_t *obj);
/* Removes an object; absent is fine. ns is "" for cluster objects. */
void rbac_index_del(rbac_index_t *ix, enum rbac_kind kind, const char *ns, const char *name);
/* The rules (borrowed, valid until the role changes) of a ClusterRole
 * (cluster true) or of the Role ns/name; NULL when absent. */
const json_t *rbac_role_rules(rbac_index_t *ix, bool cluster, const char *ns, const char *name);
/* Number of objects of a kind held. */
size_t rbac_index_count(const rbac_index_t *ix, enum rbac_kind kind);

/* The decision: true when a rule of a role bound to the user (directly,
 * through a group, or as a service account) allows the request. Non-mutating
 * apart from the lazy subject index. When allowed and why is non-NULL, it
 * gets kube's reason: `RBAC: allowed by ClusterRoleBinding "b" of
 * ClusterRole "r" to Group "g"`. */
bool rbac_allowed(rbac_index_t *ix, const struct rbac_attrs *a, char *why, size_t len);

/* Every rule (JSON PolicyRule objects) that applies to the user in `ns`
 * (cluster-wide bindings plus, when ns is non-empty, bindings of ns), as a
 * new array reference. */
json_t *rbac_rules_for(rbac_index_t *ix, const char *user, const char *const *groups,
		       size_t ngroups, const char *ns);

/* One rule (borrowed JSON PolicyRule) against a request. */
bool rbac_rule_allows(const json_t *rule, const struct rbac_attrs *a);

/* True when the owner rules (borrowed array) cover every permission of the
 * servant rules (borrowed array), as kube's ConfirmNoEscalation checks. When
 * not, and `missing` is non-NULL, *missing gets a new array of the uncovered
 * atomic rules. */
bool rbac_covers(const json_t *owner, const json_t *servant, json_t **missing);

/* Whether a binding subject (borrowed JSON Subject) names the user; `ns` is
 * the binding's namespace ("" for ClusterRoleBindings). */
bool rbac_subject_matches(const json_t *subject, const char *ns, const char *user,
			  const char *const *groups, size_t ngroups);

/* rbac_defaults.c: the bootstrap ClusterRoles and ClusterRoleBindings as a new
 * array reference (objects with apiVersion, kind, metadata...). */
json_t *rbac_defaults(void);

/* The kind and name of each of rbac_defaults()'s objects, in its order (a
 * static table, *n entries): a start checks that they are stored without
 * building them. */
struct rbac_default_name {
	enum rbac_kind kind;
	const char *name;
};
const struct rbac_default_name *rbac_default_names(size_t *n);

/* A fingerprint of what rbac_defaults() builds (its text and the form of the
 * objects made in code), without building them: a start compares it with
 * the one its last reconcile of the defaults stamped. */
uint64_t rbac_defaults_form(void);

#endif
