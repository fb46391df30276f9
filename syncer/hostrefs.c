/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a pod names, tenant to host: every field of a Pod (and of what it
 * mounts) that names another object becomes the tenant's own host object,
 * or is refused by the tenant API (proxy/api/hostrefs.c) and, as a second
 * line of defence, removed here. The host must never see a name the tenant
 * chose that could reach a host object: a host Secret, claim, volume,
 * Endpoints, trust bundle, ResourceClaim, service account or cloud disk.
 *
 * The table (core/v1 of Kubernetes 1.33; docs/hostrefs.md keeps it too):
 *
 * | tenant pod field                                   | on the host                      |
 * | -------------------------------------------------- | -------------------------------- |
 * | spec.serviceAccountName / serviceAccount           | SYNCER_POD_SA (no rights, no     |
 * |                                                    | token); the tenant's token in a  |
 * |                                                    | host Secret (translate.c)        |
 * | spec.automountServiceAccountToken                  | false                            |
 * | volumes[].projected.sources[].serviceAccountToken  | item of the pod's token Secret:  |
 * |                                                    | a tenant token of its audience,  |
 * |                                                    | expiry, bound to the pod         |
 * | volumes[].projected.sources[].clusterTrustBundle   | refused (host's bundles)         |
 * | volumes[].projected.sources[].secret/configMap     | translated name (+ host copy)    |
 * | volumes[].secret.secretName, configMap.name        | translated name (+ host copy)    |
 * | env[].valueFrom.secretKeyRef/configMapKeyRef,      | translated name (+ host copy)    |
 * | envFrom[].secretRef/configMapRef                   |                                  |
 * | env[].valueFrom.fieldRef, downwardAPI items        | the tenant's values (annotations)|
 * | spec.imagePullSecrets[].name                       | translated name (+ host copy)    |
 * | volumes[].persistentVolumeClaim.claimName          | translated name (claims synced;  |
 * |                                                    | one binding only existing host   |
 * |                                                    | volumes selects this tenant's:   |
 * |                                                    | translate.c pvc_scope_selector)  |
 * | volumes[].ephemeral.volumeClaimTemplate            | the synced claim "<pod>-<volume>"|
 * |                                                    | the tenant's controller made (a  |
 * |                                                    | claim's admission; volumeName    |
 * |                                                    | dropped, a clone's claim renamed,|
 * |                                                    | other sources dropped)           |
 * | volumes[].csi.nodePublishSecretRef.name,           | translated name (+ host copy)    |
 * | azureFile.secretName, cephfs/cinder/flexVolume/    |                                  |
 * | iscsi/rbd/scaleIO/storageos .secretRef.name        |                                  |
 * | volumes[] of the table's class NEVER               | refused / removed: the table of  |
 * | (policies/volumes.c: glusterfs, cloud disks, fc,   | policies/volumes.c says why      |
 * | gitRepo...), cinder and storageos without a        |                                  |
 * | secretRef, or a member the table does not know     |                                  |
 * | volumes[].hostPath                                 | refused / removed (floor)        |
 * | volumes[].nfs, image, emptyDir, csi (driver,       | as written: no object named      |
 * | volumeAttributes)                                  | (policy's volume rules decide)   |
 * | spec.resourceClaims[], resources.claims (DRA)      | refused (floor) / removed        |
 * | securityContext.windowsOptions                     | refused (a host GMSA credential  |
 * | .gmsaCredentialSpecName (pod, containers)          | spec)                            |
 * | volumes[].image.reference, containers[].image      | as written (pulled with the      |
 * |                                                    | translated pull Secrets)         |
 * | spec.priorityClassName                             | a host class, else dropped       |
 * | spec.runtimeClassName                              | as written (cluster scope; the   |
 * |                                                    | policy decides)                  |
 * | spec.schedulerName                                 | the profile's                    |
 * | spec.nodeName                                      | refused / removed                |
 *
 * Tokens: kube's kubelet asks a TokenRequest for each projected
 * serviceAccountToken source, bound to the pod, and writes it at `path`
 * (pkg/volume/projected, getServiceAccountTokenProjection). The host
 * kubelet would ask the host API, for the host pod's host account: here
 * the tenant issues the token (syncer.c, issue_pod_token) and the source
 * becomes a Secret projection of the same path.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/json.h"
#include "lib/util.h"
#include "policies/policies.h"
#include "syncer/syncer_impl.h"

/* Volume sources whose Secret the pod names: (source, the member holding
 * the reference or NULL: the source itself, the name's key). */
static const struct {
	const char *source, *holder, *key;
} secret_refs[] = {
    {"csi", "nodePublishSecretRef", "name"},
    {"azureFile", NULL, "secretName"},
    {"cephfs", "secretRef", "name"},
    {"cinder", "secretRef", "name"},
    {"flexVolume", "secretRef", "name"},
    {"iscsi", "secretRef", "name"},
    {"rbd", "secretRef", "name"},
    {"scaleIO", "secretRef", "name"},
    {"storageos", "secretRef", "name"},
};

/* A volume the host pod must not have: a source no policy can open (the
 * one table, policies/volumes.c), one that lacks what it needs (cinder and
 * storageos without a secretRef: the host's credentials), or a member the
 * table does not know (fail closed: a source of a later kube). */
static bool volume_refused(const json_t *v)
{
	const char *k;
	json_t *src;
	json_object_foreach ((json_t *)v, k, src) {
		if (strcmp(k, "name") == 0)
			continue;
		const struct policy_volume_source *row = policy_volume_source(k);
		if (!row || row->cls == POLICY_VOLUME_NEVER ||
		    (row->needs && !jstr(json_object_get(src, row->needs), "name")))
			return true;
	}
	return false;
}

/* A securityContext's GMSA credential spec name (a host object). */
static void drop_gmsa(json_t *sc)
{
	json_object_del(json_object_get(sc, "windowsOptions"), "gmsaCredentialSpecName");
}

void syncer_drop_host_refs(json_t *spec)
{
	static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
	json_t *vols = json_object_get(spec, "volumes");
	for (size_t i = json_array_size(vols); i-- > 0;)
		if (volume_refused(json_array_get(vols, i)))
			json_array_remove(vols, i);
	json_object_del(spec, "resourceClaims");
	json_object_del(json_object_get(spec, "resources"), "claims");
	drop_gmsa(json_object_get(spec, "securityContext"));
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, lists[l]), i, c) {
			drop_gmsa(json_object_get(c, "securityContext"));
			json_object_del(json_object_get(c, "resources"), "claims");
		}
	}
}

/*
 * A generic ephemeral volume: the tenant's ephemeral-volume controller
 * (proxy/controllers/ephemeral.c, as kube's) makes the claim "<pod>-<volume>"
 * of the pod's namespace, owned by the pod; that claim meets the tenant's
 * admission (quota, LimitRange, policy) and is synced as every claim is
 * (pvc.c: syncer_translate_pvc drops volumeName, renames a clone's source,
 * drops other sources). The host pod mounts its host copy by translated
 * name: the host's own ephemeral controller never sees the template the
 * tenant wrote (which could bind a host volume by name, clone a host
 * claim, or escape the tenant's quota).
 */
static void ephemeral_claim(const struct syncer_xlate *x, json_t *v, const char *pod,
			    const char *ns)
{
	const char *vname = jstr(v, "name");
	char claim[600], hn[SYNCER_NAME_MAX + 1];
	if (!json_object_get(v, "ephemeral"))
		return;
	json_object_del(v, "ephemeral");
	snprintf(claim, sizeof(claim), "%s-%s", pod ? pod : "", vname ? vname : "");
	if (!pod || !vname || syncer_host_name(ns, claim, x->tenant, hn, sizeof(hn)) < 0)
		return; /* no source left: the host refuses the pod */
	json_object_set_new(v, "persistentVolumeClaim", json_pack("{s:s}", "claimName", hn));
}

/* A projected volume's sources: tokens become items of the pod's token
 * Secret (in x->token_secret), cluster trust bundles go. */
static void projected_sources(const struct syncer_xlate *x, json_t *v)
{
	json_t *srcs = json_object_get(json_object_get(v, "projected"), "sources");
	const char *vname = jstr(v, "name");
	for (size_t j = json_array_size(srcs); j-- > 0;) {
		json_t *src = json_array_get(srcs, j);
		if (json_object_get(src, "clusterTrustBundle")) {
			json_array_remove(srcs, j);
			continue;
		}
		json_t *tok = json_object_get(src, "serviceAccountToken");
		if (!tok)
			continue;
		const char *path = jstr(tok, "path");
		if (!x->token_secret || !vname || !path) {
			json_array_remove(srcs, j);
			continue;
		}
		char key[128];
		snprintf(key, sizeof(key), "%s-%zu", vname, j);
		json_array_set_new(srcs, j,
				   json_pack("{s:{s:s,s:[{s:s,s:s}]}}", "secret", "name",
					     x->token_secret, "items", "key", key, "path", path));
	}
}

void syncer_volume_refs(const struct syncer_xlate *x, json_t *v, const char *pod, const char *ns,
			json_t *refs)
{
	for (size_t i = 0; i < KB_ARRAY_SIZE(secret_refs); i++) {
		json_t *src = json_object_get(v, secret_refs[i].source);
		if (src && secret_refs[i].holder)
			src = json_object_get(src, secret_refs[i].holder);
		if (json_is_object(src))
			syncer_rename_ref(x, src, secret_refs[i].key, "Secret", ns, refs);
	}
	ephemeral_claim(x, v, pod, ns);
	projected_sources(x, v);
}

/* ---- projected service-account tokens --------------------------------------------- */

/* The token's lifetime a source asks: kube's default is an hour
 * (defaults.c sets it on the tenant pod). */
static json_int_t token_ttl(const json_t *tok)
{
	json_int_t s = json_integer_value(json_object_get(tok, "expirationSeconds"));
	return s > 0 ? s : 3600;
}

json_t *syncer_pod_tokens(const json_t *pod)
{
	json_t *out = json_array();
	size_t i, j;
	json_t *v, *src;
	json_array_foreach (json_object_get(json_object_get(pod, "spec"), "volumes"), i, v) {
		const char *vname = jstr(v, "name");
		json_array_foreach (json_object_get(json_object_get(v, "projected"), "sources"), j,
				    src) {
			json_t *tok = json_object_get(src, "serviceAccountToken");
			const char *path = jstr(tok, "path"), *aud = jstr(tok, "audience");
			if (!tok || !path || !vname)
				continue;
			char key[128];
			snprintf(key, sizeof(key), "%s-%zu", vname, j);
			json_t *e = json_pack("{s:s,s:s,s:I}", "key", key, "path", path,
					      "expirationSeconds", token_ttl(tok));
			if (aud && *aud)
				json_object_set_new(e, "audience", json_string(aud));
			json_array_append_new(out, e);
		}
	}
	return out;
}

long syncer_token_refresh_after(long ttl_seconds)
{
	long after = ttl_seconds * 8 / 10;
	return after < SYNCER_TOKEN_MAX_AGE ? after : SYNCER_TOKEN_MAX_AGE;
}

int syncer_pod_token_name(const char *ns, const char *name, const char *uid, const char *tenant,
			  char *buf, size_t len)
{
	if (!ns || !name || !*name || !uid || !tenant || !*tenant || len < SYNCER_NAME_MAX + 1)
		return -EINVAL;
	char key[1024];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	snprintf(key, sizeof(key), "%s/pod:%s/%s/%s", ns, name, uid, tenant);
	EVP_Digest(key, strlen(key), md, &mdlen, EVP_sha256(), NULL);
	char hex[SYNCER_HASH_HEX + 1];
	for (size_t i = 0; i < SYNCER_HASH_HEX / 2; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	/* the prefix keeps it readable; its dots become '-' (cut short, a
	 * pod name with dots could leave a '.' before "-token-", no valid
	 * Secret name) */
	int plen = SYNCER_NAME_MAX - (int)strlen("-token-") - SYNCER_HASH_HEX;
	snprintf(buf, len, "%.*s-token-%s", plen, name, hex);
	for (char *p = buf; *p && p < buf + plen; p++)
		if (*p == '.')
			*p = '-';
	return 0;
}

json_t *syncer_pod_token_secret(const struct syncer_xlate *x, const json_t *pod,
				const json_t *tokens)
{
	const json_t *tmeta = json_object_get(pod, "metadata");
	const char *ns = jstr(tmeta, "namespace"), *name = jstr(tmeta, "name");
	const char *uid = jstr(tmeta, "uid");
	char hn[SYNCER_NAME_MAX + 1];
	if (syncer_pod_token_name(ns, name, uid, x->tenant, hn, sizeof(hn)) < 0)
		return NULL;
	/* the contract's metadata names the pod; none of its labels or
	 * annotations (a Service selecting the pod's labels must not select
	 * a Secret, and the pod's annotations are the pod's) */
	json_t *m = json_pack("{s:s,s:s,s:s}", "namespace", ns, "name", name, "uid", uid);
	json_t *meta = m ? syncer_host_meta(x, m, SYNCER_POD_TOKEN_KIND) : NULL;
	json_decref(m);
	if (!meta)
		return NULL;
	json_object_set_new(meta, "name", json_string(hn));
	json_t *data = json_object();
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)tokens, k, v) {
		const char *jwt = json_string_value(v);
		char *b = jwt ? kb_base64_encode(jwt, strlen(jwt)) : NULL;
		if (b)
			json_object_set_new(data, k, json_string(b));
		free(b);
	}
	return json_pack("{s:s,s:s,s:o,s:s,s:o}", "apiVersion", "v1", "kind", "Secret", "metadata",
			 meta, "type", "Opaque", "data", data);
}
