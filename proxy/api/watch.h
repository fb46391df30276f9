/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Watch streams (proxy/api/watch.c).
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_WATCH_H
#define KB_PROXY_API_WATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy;
struct req;

/* watch.c */
void watch_start(struct req *r);
void watch_tick(struct proxy *px);
void watch_close_all(struct proxy *px);

#endif
