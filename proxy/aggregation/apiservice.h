/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The local APIServices kube's autoregister and crdregistration
 * controllers keep (proxy/aggregation/apiservice.c).
 * Included through proxy/aggregation/aggregation.h. Loop thread only.
 */
#ifndef KB_PROXY_AGGREGATION_APISERVICE_H
#define KB_PROXY_AGGREGATION_APISERVICE_H

#include <jansson.h>
#include <stdbool.h>

struct proxy;

/* Creates, fixes and deletes the local APIServices (built-in group/versions
 * once, the CRDs' from then on: it listens to crd_on_change) and watches the
 * APIServices. Call after crd_start (the CRDs' rows are in the table). 0 or
 * a negative errno. */
int apiservice_start(struct proxy *px);
/* kube-apiserver's priorities of a built-in group/version's local
 * APIService; false when kube's table has none (no APIService then). */
bool apiservice_local_priority(const char *group, const char *version, int *group_p,
			       int *version_p);
/* Drops the watch and closes the timer (freed in its close callback). */
void apiservice_stop(struct proxy *px);

#endif
