/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pod fields a syncing tenant refuses because they name a host object
 * (issue 21): the syncer translates every reference it can to the tenant's
 * own host object (syncer/hostrefs.c, with the table of all of them), and
 * the rest is refused here, at the tenant API, with a Status naming the
 * field. Volume sources are classed by the one table of policies/volumes.c,
 * which the floor and the syncer (its second line of defence: it drops the
 * same sources again) read too.
 */
#include <stdio.h>
#include <string.h>

#include "lib/util.h"
#include "policies/policies.h"
#include "proxy/api/api.h"
#include "proxy/validation/validate.h"

/* A volume's sources against the one table (policies/volumes.c): those no
 * policy can open are refused here, first, in the table's words; a source
 * that needs a member (cinder and storageos: a secretRef, else the host's
 * credentials attach the volume) is refused without it. The node-mounted
 * and CSI ones are the floor's and the policy's (policies/floor.c). */
static void sources(const json_t *v, size_t i, json_t *causes)
{
	const char *k;
	json_t *src;
	json_object_foreach ((json_t *)v, k, src) {
		const struct policy_volume_source *row = policy_volume_source(k);
		char f[96];
		if (!row)
			continue;
		if (row->cls == POLICY_VOLUME_NEVER) {
			snprintf(f, sizeof(f), "spec.volumes[%zu].%s", i, k);
			val_add(causes, "FieldValueForbidden", f,
				"%s volumes are not allowed: %s, and this cluster's pods run on a "
				"shared host cluster",
				k, row->why);
		} else if (row->needs && !json_string_value(json_object_get(
					     json_object_get(src, row->needs), "name"))) {
			snprintf(f, sizeof(f), "spec.volumes[%zu].%s.%s", i, k, row->needs);
			val_add(causes, "FieldValueRequired", f,
				"a %s volume needs a %s on a shared host cluster: without one the "
				"host's credentials would attach the volume",
				k, row->needs);
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

void hostrefs_refuse(const json_t *pod, json_t *causes)
{
	const json_t *spec = json_object_get(pod, "spec");
	size_t i;
	json_t *v;
	gmsa(json_object_get(spec, "securityContext"), "spec.securityContext", causes);
	gmsa_containers(spec, causes);
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		sources(v, i, causes);
		projected(v, i, causes);
	}
	/* DRA (resourceClaims, resources.claims): the floor's, for every
	 * tenant, in one place (policies/floor.c dra_check) */
}
