/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resources that are not stored (the review APIs): POST answered
 * (proxy/api/virtual.c).
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_VIRTUAL_H
#define KB_PROXY_API_VIRTUAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct req;

/* virtual.c: resources that are not stored (reviews, ...): answers POST. */
void virtual_handle(struct req *r);

#endif
