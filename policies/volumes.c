/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one table of pod volume sources: every member of Kubernetes 1.33's
 * VolumeSource (k8s.io/api core/v1 types.go; types-1.33.json message
 * k8s.io.api.core.v1.VolumeSource), each with its class. The tenant API
 * (proxy/api/hostrefs.c: POLICY_VOLUME_NEVER refused first, for every
 * syncing tenant), the host floor (floor.c: POLICY_VOLUME_NODE against the
 * policy's volumeTypes, POLICY_VOLUME_CSI against its csiDrivers) and the
 * syncer (syncer/hostrefs.c: a volume of class NEVER, or of a member not in
 * the table, is removed from the host pod) all read it, so a policy's
 * volumeTypes means the same thing everywhere, and policy_parse refuses a
 * volumeTypes entry that is not a node-mounted type (gitRepo there used to
 * be accepted and do nothing). tests/unit/policies/test_volumes.c checks
 * that every VolumeSource field of 1.33 has a row: a new field cannot pass
 * unclassified.
 *
 * Classes:
 * - TENANT: the pod's own (emptyDir, downwardAPI) or the tenant's own host
 *   objects, translated by the syncer (secret, configMap, projected,
 *   persistentVolumeClaim, ephemeral: docs/hostrefs.md), or an image pulled
 *   as the pod's images are (image);
 * - NODE: the kubelet mounts it with the node's network, credentials or
 *   driver, naming no host object a tenant could not reach otherwise: only
 *   when the policy's volumeTypes lists it (the Secrets these plugins name
 *   are translated to the tenant's host copies; cinder and storageos need
 *   one, `needs`, or the host's credentials would attach the volume);
 * - CSI: an inline CSI volume: only the policy's csiDrivers;
 * - HOSTPATH: a node's path: Pod Security baseline refuses it, a policy's
 *   hostFields: allow exempts it;
 * - NEVER: no policy can open it (`why`): it names a host or cloud object
 *   that cannot be scoped to a tenant (a disk or a LUN by id, attached with
 *   the node's cloud identity or the host's storage network; a host
 *   Endpoints), or kube 1.33 itself disables it.
 *
 * Threading: constant data; any thread.
 */
#include <stddef.h>
#include <string.h>

#include "lib/util.h"
#include "policies/policies.h"

#define CLOUD_DISK "it names a cloud disk by id, attached with the host node's cloud identity"

static const struct policy_volume_source sources[] = {
    {"hostPath", POLICY_VOLUME_HOSTPATH, NULL, NULL},
    {"emptyDir", POLICY_VOLUME_TENANT, NULL, NULL},
    {"gcePersistentDisk", POLICY_VOLUME_NEVER, CLOUD_DISK, NULL},
    {"awsElasticBlockStore", POLICY_VOLUME_NEVER, CLOUD_DISK, NULL},
    /* pkg/features/kube_features.go GitRepoVolumeDriver: deprecated, off by
     * default in 1.33; pkg/volume/git_repo/git_repo.go refuses to mount
     * while it is off. It ran git as root on the node (CVE-2024-10220). */
    {"gitRepo", POLICY_VOLUME_NEVER,
     "Kubernetes 1.33 disables it (feature gate GitRepoVolumeDriver) and it runs git on the "
     "host node",
     NULL},
    {"secret", POLICY_VOLUME_TENANT, NULL, NULL},
    {"nfs", POLICY_VOLUME_NODE, NULL, NULL},
    {"iscsi", POLICY_VOLUME_NODE, NULL, NULL},
    {"glusterfs", POLICY_VOLUME_NEVER,
     "its endpoints name an Endpoints object of the host cluster (and kube removed the "
     "plugin in 1.26)",
     NULL},
    {"persistentVolumeClaim", POLICY_VOLUME_TENANT, NULL, NULL},
    {"rbd", POLICY_VOLUME_NODE, NULL, NULL},
    {"flexVolume", POLICY_VOLUME_NODE, NULL, NULL},
    {"cinder", POLICY_VOLUME_NODE, NULL, "secretRef"},
    {"cephfs", POLICY_VOLUME_NODE, NULL, NULL},
    {"flocker", POLICY_VOLUME_NEVER, "it names a dataset of the host's Flocker control service",
     NULL},
    {"downwardAPI", POLICY_VOLUME_TENANT, NULL, NULL},
    {"fc", POLICY_VOLUME_NEVER, "it names LUNs of the host's storage network by WWN", NULL},
    {"azureFile", POLICY_VOLUME_NODE, NULL, NULL},
    {"configMap", POLICY_VOLUME_TENANT, NULL, NULL},
    {"vsphereVolume", POLICY_VOLUME_NEVER,
     "it names a disk of the host's vSphere datastore, attached with the host's credentials", NULL},
    {"quobyte", POLICY_VOLUME_NEVER,
     "it names a volume of the host's Quobyte registry (and kube removed the plugin in 1.25)",
     NULL},
    {"azureDisk", POLICY_VOLUME_NEVER, CLOUD_DISK, NULL},
    {"photonPersistentDisk", POLICY_VOLUME_NEVER, "it names a disk of the host's Photon platform",
     NULL},
    {"projected", POLICY_VOLUME_TENANT, NULL, NULL},
    {"portworxVolume", POLICY_VOLUME_NEVER, "it names a volume of the host's Portworx cluster",
     NULL},
    {"scaleIO", POLICY_VOLUME_NODE, NULL, NULL},
    {"storageos", POLICY_VOLUME_NODE, NULL, "secretRef"},
    {"csi", POLICY_VOLUME_CSI, NULL, NULL},
    {"ephemeral", POLICY_VOLUME_TENANT, NULL, NULL},
    {"image", POLICY_VOLUME_TENANT, NULL, NULL},
};

const struct policy_volume_source *policy_volume_source(const char *name)
{
	for (size_t i = 0; name && i < KB_ARRAY_SIZE(sources); i++)
		if (strcmp(sources[i].name, name) == 0)
			return &sources[i];
	return NULL;
}

const struct policy_volume_source *policy_volume_sources(size_t *n)
{
	*n = KB_ARRAY_SIZE(sources);
	return sources;
}
