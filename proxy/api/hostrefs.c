/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod fields a syncing tenant refuses because they name a host object
 * (issue 21): the syncer translates every reference it can to the tenant's
 * own host object (syncer/hostrefs.c, with the table of all of them), and
 * the rest is refused here, at the tenant API, with a Status naming the
 * field. The syncer drops the same fields again (a second line of
 * defence); the two lists are kept equal by the unit tests of both.
 */
#include <stdio.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/api/api.h"
#include "proxy/validation/validate.h"

/* Inline sources that name a disk or an object by name and are attached or
 * mounted with the host's credentials (the node's cloud identity, a CSI
 * migration driver's), or run code on the node; what the tenant is told. */
static const struct {
	const char *source, *why;
} refused[] = {
    {"awsElasticBlockStore", "it names a host cloud disk"},
    {"gcePersistentDisk", "it names a host cloud disk"},
    {"azureDisk", "it names a host cloud disk"},
    {"vsphereVolume", "it names a host disk"},
    {"portworxVolume", "it names a host volume"},
    {"photonPersistentDisk", "it names a host disk"},
    {"flocker", "it names a host dataset"},
    {"quobyte", "it names a host volume"},
    {"fc", "it names host storage-network LUNs"},
    {"glusterfs", "its endpoints name a host Endpoints object"},
    {"gitRepo", "it runs git on the host node"},
};

static void forbid_source(json_t *causes, size_t i, const char *src, const char *why)
{
	char f[96];
	snprintf(f, sizeof(f), "spec.volumes[%zu].%s", i, src);
	val_add(causes, "FieldValueForbidden", f,
		"%s volumes are not allowed: %s, and this cluster's pods run on a shared host "
		"cluster",
		src, why);
}

/* cinder and storageos without a secretRef use the host's credentials. */
static void credentials(const json_t *v, size_t i, json_t *causes)
{
	static const char *const need[] = {"cinder", "storageos"};
	for (size_t k = 0; k < KB_ARRAY_SIZE(need); k++) {
		json_t *src = json_object_get(v, need[k]);
		if (src && !obj_str(src, "secretRef.name")) {
			char f[96];
			snprintf(f, sizeof(f), "spec.volumes[%zu].%s.secretRef", i, need[k]);
			val_add(
			    causes, "FieldValueRequired", f,
			    "a %s volume needs a secretRef on a shared host cluster: without one "
			    "the host's credentials would attach the volume",
			    need[k]);
		}
	}
}

/* kube's ValidateProjectedVolumeSource checks of a token source (the
 * tenant issues the token: a duration it could not issue is refused as
 * kube refuses it). */
static void token_source(const json_t *tok, size_t i, size_t j, json_t *causes)
{
	char f[128];
	json_t *exp = json_object_get(tok, "expirationSeconds");
	const char *path = obj_str(tok, "path");
	if (!path || !*path) {
		snprintf(f, sizeof(f),
			 "spec.volumes[%zu].projected.sources[%zu].serviceAccountToken.path", i, j);
		val_add(causes, "FieldValueRequired", f, NULL);
	}
	if (!exp)
		return;
	json_int_t s = json_integer_value(exp);
	snprintf(f, sizeof(f),
		 "spec.volumes[%zu].projected.sources[%zu].serviceAccountToken.expirationSeconds",
		 i, j);
	if (s < 600)
		val_add(causes, "FieldValueInvalid", f,
			"%lld: may not specify a duration less than 10 minutes", (long long)s);
	else if (s > 4294967296LL)
		val_add(causes, "FieldValueInvalid", f,
			"%lld: may not specify a duration larger than 2^32 seconds", (long long)s);
}

static void projected(const json_t *v, size_t i, json_t *causes)
{
	size_t j;
	json_t *src;
	json_array_foreach (obj_get(v, "projected.sources"), j, src) {
		json_t *tok = json_object_get(src, "serviceAccountToken");
		if (tok)
			token_source(tok, i, j, causes);
		if (json_object_get(src, "clusterTrustBundle")) {
			char f[128];
			snprintf(f, sizeof(f),
				 "spec.volumes[%zu].projected.sources[%zu].clusterTrustBundle", i,
				 j);
			val_add(
			    causes, "FieldValueForbidden", f,
			    "clusterTrustBundle sources are not allowed: they name the shared host "
			    "cluster's ClusterTrustBundles");
		}
	}
}

/* windowsOptions.gmsaCredentialSpecName names a host GMSACredentialSpec
 * (cluster scope), which the host's GMSA webhook would resolve. */
static void gmsa(const json_t *sc, const char *at, json_t *causes)
{
	if (!obj_str(sc, "windowsOptions.gmsaCredentialSpecName"))
		return;
	char f[192];
	snprintf(f, sizeof(f), "%s.windowsOptions.gmsaCredentialSpecName", at);
	val_add(causes, "FieldValueForbidden", f,
		"it names a GMSACredentialSpec of the shared host cluster, which this cluster's "
		"pods may not use");
}

static void gmsa_containers(const json_t *spec, json_t *causes)
{
	static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, lists[l]), i, c) {
			char at[96];
			snprintf(at, sizeof(at), "spec.%s[%zu].securityContext", lists[l], i);
			gmsa(json_object_get(c, "securityContext"), at, causes);
		}
	}
}

void hostrefs_refuse(const json_t *pod, bool policy, json_t *causes)
{
	const json_t *spec = json_object_get(pod, "spec");
	size_t i;
	json_t *v;
	gmsa(json_object_get(spec, "securityContext"), "spec.securityContext", causes);
	gmsa_containers(spec, causes);
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		for (size_t k = 0; k < KB_ARRAY_SIZE(refused); k++)
			if (json_object_get(v, refused[k].source))
				forbid_source(causes, i, refused[k].source, refused[k].why);
		credentials(v, i, causes);
		projected(v, i, causes);
	}
	if (policy)
		return; /* a policy refuses resourceClaims itself (policies/gpu.c) */
	json_array_foreach (json_object_get(spec, "resourceClaims"), i, v) {
		char f[64];
		snprintf(f, sizeof(f), "spec.resourceClaims[%zu]", i);
		val_add(
		    causes, "FieldValueForbidden", f,
		    "dynamic resource allocation claims are not allowed: the shared host cluster "
		    "has no copy of this cluster's ResourceClaims and ResourceClaimTemplates");
	}
}
