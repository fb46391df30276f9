/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a pod of a syncing tenant may not name (proxy/api/hostrefs.c): the
 * references the syncer cannot make the tenant's own host objects
 * (syncer/hostrefs.c holds the whole table: what each becomes on the host).
 * Included through proxy/api/api.h. Loop thread only.
 */
#ifndef KB_PROXY_API_HOSTREFS_H
#define KB_PROXY_API_HOSTREFS_H

#include <jansson.h>
#include <stdbool.h>

/*
 * hostrefs.c: 422 causes (added to `causes`, borrowed) for the fields of pod
 * `pod` (borrowed) that would name a host object: inline volume sources no
 * policy can open (the table's POLICY_VOLUME_NEVER rows, policies/volumes.c:
 * disks and LUNs by id, glusterfs Endpoints, gitRepo), cinder and storageos
 * without a secretRef, projected clusterTrustBundle sources, GMSA
 * credential specs named by windowsOptions.gmsaCredentialSpecName; and
 * kube's own checks of projected serviceAccountToken sources (path,
 * expirationSeconds), whose tokens the tenant issues. For every syncing
 * tenant, policy or not (DRA claims are the floor's: policies/floor.c).
 */
void hostrefs_refuse(const json_t *pod, json_t *causes);

#endif
