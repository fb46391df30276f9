/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The aggregation layer (apiregistration.k8s.io/v1 APIService) inside the
 * API front: the local APIServices kube's autoregister and crdregistration
 * controllers keep (proxy/apiservice.c).
 *
 * Threading: loop thread only.
 */
#ifndef KB_PROXY_APISERVICE_H
#define KB_PROXY_APISERVICE_H

struct proxy;

/* Creates, fixes and deletes the local APIServices (built-in group/versions
 * once, the CRDs' from then on) and watches the APIServices. Call after
 * crd_start (the CRDs' rows are in the table). 0 or a negative errno. */
int apiservice_start(struct proxy *px);
/* Drops the watch and closes the timer (freed in its close callback). */
void apiservice_stop(struct proxy *px);
/* The resource table changed (a CRD's rows came or went): the CRDs' local
 * APIServices are synced on a later loop turn. */
void apiservice_changed(struct proxy *px);

#endif
