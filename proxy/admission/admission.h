/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admission (admission.c): kube's built-in chain in its order (LimitRange,
 * Pod Security, the tenant policy, Priority, ResourceQuota), the
 * certificate plugins (csr.c), beside the webhooks (webhook.h) and the
 * ValidatingAdmissionPolicies (vap.h). Included by admission/ and the
 * layers above it. Loop thread only.
 */
#ifndef KB_PROXY_ADMISSION_H
#define KB_PROXY_ADMISSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/auth/auth.h"
#include "proxy/admission/csr.h"

/* admission.c: the admission chain for a create or update of obj (borrowed,
 * may be changed) over old (borrowed, NULL on create), in kube's order:
 * LimitRange (defaults, then min/max), Pod Security (namespace labels), the
 * tenant policy (a new pod gets its node selector and tolerations), then
 * ResourceQuota (the tenant's quotas, charged when admitted). 0, or it has
 * answered (403/422) and returns -EACCES/-EINVAL. */
int admission_check(struct req *r, json_t *obj, const json_t *old);

/* The Priority plugin's PriorityClasses, kept between writes and read again
 * after one of them changes (kube's plugin reads its informer's lister). */
int admission_start(struct proxy *px);
void admission_stop(struct proxy *px);

/* admission.c: the same chain for writes of in-process controllers: 0, or
 * -EACCES (the reason is logged and, when why is given, written there as
 * kube's API answers it: `pods "x" is forbidden: ...`). */
int admission_internal(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		       const json_t *old, char *why, size_t wl);

/* admission.NewForbidden's 403: `<resource> "<name>" is forbidden: <why>`,
 * details name, group and kind (admission.c). */
void admission_denied(struct req *r, const char *name, const char *why);

#endif
