/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pods that run on a host cluster (proxy/api/hostpod.c): pods/log and the
 * streaming subresources passed to the host, pods/binding, and the pod
 * fields a syncing tenant refuses.
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_HOSTPOD_H
#define KB_PROXY_API_HOSTPOD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/http.h"

struct req;

/* hostpod.c: GET pods/log: handed to the pod-streams hook (proxy_set_host,
 * proxy_set_pod_streams); without one, an empty log (no container ran). */
void hostpod_log(struct req *r);

/* hostpod.c: pods/exec, pods/attach, pods/portforward (upgrade requests):
 * checked as kube's streamLocation checks them, then handed to the
 * pod-streams hook; without one, 400 (this server runs no pods). */
void hostpod_connect(struct req *r);

/* hostpod.c: a pod spec field that would reach into the host, for 422
 * causes when px->host_sync (json causes array borrowed). With a policy,
 * only spec.nodeName: the policy's hostFields rule decides the rest. */
void hostpod_refuse_fields(const json_t *pod, bool policy, json_t *causes);

/* hostpod.c: every pod-level refusal of a syncing tenant (the fields above
 * and hostrefs_refuse's), on every path that writes a pod: the API's
 * creates and updates (pods/ephemeralcontainers included) and the
 * controllers' (proxy/api/api_internal.c). old (may be NULL) is the stored
 * pod of an update: a cause old already had (the same field and words: a
 * nodeName the host chose, a field of a pod admitted before) is not
 * repeated, so only what the update adds is refused. pod, old borrowed;
 * causes appended to `causes`. */
void hostpod_refuse(const json_t *pod, const json_t *old, bool policy, json_t *causes);

/* hostpod.c: POST pods/binding (a scheduler places a pod on a node). */
void hostpod_binding(struct req *r);

#endif
