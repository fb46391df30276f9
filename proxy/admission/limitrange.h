/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LimitRange as kube's LimitRanger admission plugin applies it
 * (proxy/admission/limitrange.c): defaults on pods, then min/max and ratio
 * checks on pods, containers and PVCs.
 */
#ifndef KB_PROXY_ADMISSION_LIMITRANGE_H
#define KB_PROXY_ADMISSION_LIMITRANGE_H

#include <jansson.h>
#include <stddef.h>

#include "proxy/model/resource.h"

struct proxy;

/* Container defaults of one LimitRange applied to a pod (modified) that lacks
 * them; the kubernetes.io/limit-ranger annotation says what was set.
 * Limits-without-requests first get their request from the limit. */
void limitrange_mutate_pod(const json_t *lr, json_t *pod);
/* Min/max/maxLimitRequestRatio of one LimitRange for a pod (Container and
 * Pod types) or a PVC (PersistentVolumeClaim type: requests.storage).
 * 0, or -EACCES with kube's message (several as "[a, b]"). */
int limitrange_validate(const json_t *lr, const struct proxy_resource *res, const json_t *obj,
			char *msg, size_t len);
/* LimitRange admission in obj's namespace: pods on create (defaults of every
 * LimitRange, then validation), PVCs on create and update; a LimitRange being
 * written gets its defaults. 0 or -EACCES with msg. */
int limitrange_admit(struct proxy *px, const struct proxy_resource *res, json_t *obj,
		     const json_t *old, char *msg, size_t len);

#endif
