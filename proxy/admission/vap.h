/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ValidatingAdmissionPolicy (vap.c): the tenant's policies and bindings
 * evaluated on writes with CEL, as kube-apiserver's plugin of that name.
 * Threading: loop thread only.
 */
#ifndef KB_PROXY_VAP_H
#define KB_PROXY_VAP_H

#include <jansson.h>
#include <stddef.h>

struct proxy;
struct req;

/* Reads the policies and bindings and watches them. 0 or a negative errno. */
int vap_start(struct proxy *px);
void vap_stop(struct proxy *px);
/*
 * The policies bound to r's resource on op ("CREATE", "UPDATE", "DELETE")
 * of obj over old (both borrowed; obj NULL for DELETE, old NULL for
 * CREATE). 0 to go on (warnings and audit annotations may have been added
 * to r), or -ECANCELED when a policy denied the request and it has been
 * answered.
 */
int vap_admit(struct req *r, const char *op, const json_t *obj, const json_t *old);

/*
 * A write by one of the tenant's controllers (manager: its name; the
 * policies see system:serviceaccount:kube-system:<manager>), as vap_admit:
 * op "CREATE" (old NULL), "UPDATE" or "DELETE" (obj NULL) of res, or of its
 * subresource sub (NULL: the object itself; "status"). obj and old
 * borrowed. 0, or -EACCES with kube's message of the denial in why.
 */
struct proxy_resource;
int vap_admit_internal(struct proxy *px, const struct proxy_resource *res, const char *op,
		       const char *sub, const json_t *obj, const json_t *old, const char *manager,
		       char *why, size_t wl);

/*
 * A webhook's matchConditions (kube's matchconditions.Matcher): compiled
 * once (NULL when there are none); evaluated with object, oldObject,
 * request and authorizer for r's op on obj over old: 1 when every
 * condition holds, 0 when one is false (even if others failed), or -EIO
 * with *msg (malloc'd) when some failed to evaluate and none was false.
 */
struct vap_conds;
struct vap_conds *vap_conds_compile(const json_t *conds);
void vap_conds_free(struct vap_conds *vc);
int vap_conds_eval(const struct vap_conds *vc, struct req *r, const char *op, const json_t *obj,
		   const json_t *old, char **msg);

#endif
