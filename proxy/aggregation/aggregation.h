/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The aggregation layer, as kube-aggregator in front of kube-apiserver: the
 * APIServices (apiregistration.k8s.io/v1; the local ones kube's autoregister
 * and crdregistration controllers keep, apiservice.c; the service-backed
 * ones proxied to their backends, aggregator.c), the metrics API served
 * from the host (metrics.c), and the merged discovery (discovery.c) and
 * OpenAPI documents (docs.c). Included by aggregation/ and the server.
 *
 * Threading: loop thread only.
 */
#ifndef KB_PROXY_AGGREGATION_H
#define KB_PROXY_AGGREGATION_H

#include <jansson.h>
#include <stdbool.h>

#include "proxy/api/api.h"

/* the aggregation layer's modules, one header each */
#include "proxy/aggregation/aggregator.h"
#include "proxy/aggregation/apiservice.h"
#include "proxy/aggregation/discovery.h"
#include "proxy/aggregation/docs.h"
#include "proxy/aggregation/metrics.h"

#endif
