/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The mandatory API Priority and Fairness objects, made at start
 * (proxy/api/flowcontrol.c).
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_FLOWCONTROL_H
#define KB_PROXY_API_FLOWCONTROL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct proxy;

/* flowcontrol.c: the mandatory exempt and catch-all pairs of FlowSchemas and
 * PriorityLevelConfigurations, made when missing. */
int flowcontrol_bootstrap(struct proxy *px);

#endif
