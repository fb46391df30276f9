/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metrics API (metrics.k8s.io) served from the host
 * (proxy/aggregation/metrics.c).
 * Included through proxy/aggregation/aggregation.h. Loop thread only.
 */
#ifndef KB_PROXY_AGGREGATION_METRICS_H
#define KB_PROXY_AGGREGATION_METRICS_H

#include <jansson.h>
#include <stdbool.h>

#include "proxy/proxy.h"

struct proxy_resource;

/* metrics.c: whether res is a row of the metrics API. */
bool metrics_row(const struct proxy_resource *res);

/* metrics.c: its state on the server (px->metrics): proxy_set_metrics. */
struct metrics_hook {
	proxy_metrics_fetch_fn fetch;
	proxy_metrics_cancel_fn cancel;
	void *arg;
};

#endif
