/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ValidatingAdmissionPolicy (vap.c): the tenant's policies and bindings
 * evaluated on writes with CEL, as kube-apiserver's plugin of that name.
 * Threading: loop thread only.
 */
#ifndef KB_PROXY_VAP_H
#define KB_PROXY_VAP_H

#include <jansson.h>

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

#endif
