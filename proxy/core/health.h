/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /healthz, /livez and /readyz (proxy/core/health.c). Loop thread only.
 */
#ifndef KB_PROXY_CORE_HEALTH_H
#define KB_PROXY_CORE_HEALTH_H

struct req;

/* Answers a request whose first path segment is healthz, livez or readyz,
 * with kube-apiserver's checks, formats and codes. */
void health_serve(struct req *r);

#endif
