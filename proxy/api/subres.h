/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Subresources served by a module of their own (pods/log,
 * serviceaccounts/token, ...): proxy/api/subres.c.
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_SUBRES_H
#define KB_PROXY_API_SUBRES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct req;

/* subres.c: subresources served by a module of their own (pods/log,
 * serviceaccounts/token, ...). True when it answered the request. */
bool subres_handle(struct req *r);

#endif
