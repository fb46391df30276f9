/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Authorization (proxy/auth/authz.c): RBAC decisions over the index
 * rbac.c keeps from a store watch, the bootstrap roles, the rules reviews,
 * and the escalation checks of writes of RBAC objects. Included through
 * proxy/auth/auth.h. Loop thread only.
 */
#ifndef KB_PROXY_AUTH_AUTHZ_H
#define KB_PROXY_AUTH_AUTHZ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct proxy;
struct req;

/* authz.c: authorization of r->verb on r's resource or path. 0 when allowed;
 * otherwise it has answered (403) and returns -EACCES. */
int authz_authorize(struct req *r);

/* authz.c: RBAC index kept from a store watch, bootstrap roles. */
int authz_start(struct proxy *px);
void authz_stop(struct proxy *px);

/* authz.c: the decision for explicit attributes (reviews); borrowed. why
 * (optional) gets kube's reason when allowed ("" for system:masters). */
struct rbac_attrs;
bool authz_check(struct proxy *px, const struct rbac_attrs *a, char *why, size_t len);

/* authz.c: rules of a user in ns (new array reference), for rules reviews. */
json_t *authz_rules(struct proxy *px, const char *user, const char *const *groups, size_t ngroups,
		    const char *ns);

/* authz.c: escalation prevention and RBAC object checks for a create or
 * update of a Role/ClusterRole/(Cluster)RoleBinding; other kinds pass.
 * 0, or it has answered (403/422) and returns -EACCES/-EINVAL. obj, old
 * borrowed (old NULL on create). */
int authz_admit(struct req *r, const json_t *obj, const json_t *old);

#endif
