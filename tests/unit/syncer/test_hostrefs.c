/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for syncer/hostrefs.c (what a pod names, tenant to host): the host
 * service account, projected service-account tokens made items of the
 * pod's token Secret, generic ephemeral volumes translated as claims,
 * volume plugins' Secrets translated, sources naming host objects and DRA
 * claims removed, and the token Secret's name and contract.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "policies/policies.h"
#include "syncer/syncer_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

#define J(s) json_loads(s, 0, NULL)

static struct syncer_xlate xl(const char *token_secret)
{
	return (struct syncer_xlate){.tenant = "t1",
				     .host_ns = "tenants",
				     .queue = "team-a",
				     .profile = syncer_profile_find("kai"),
				     .token_secret = token_secret};
}

/* A pod of namespace ml with these volumes (a JSON array). */
static json_t *pod_with(const char *volumes)
{
	json_t *p = J("{\"metadata\":{\"name\":\"train\",\"namespace\":\"ml\",\"uid\":\"u-1\"},"
		      "\"spec\":{\"serviceAccountName\":\"runner\","
		      "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}");
	json_object_set_new(json_object_get(p, "spec"), "volumes", J(volumes));
	return p;
}

static json_t *vol(const json_t *hp, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(json_object_get(hp, "spec"), "volumes"), i, v) {
		const char *n = json_string_value(json_object_get(v, "name"));
		if (n && strcmp(n, name) == 0)
			return v;
	}
	return NULL;
}

static const char *at(const json_t *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	const json_t *cur = o;
	for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && cur;
	     k = strtok_r(NULL, ".", &save)) {
		char *end;
		long idx = strtol(k, &end, 10);
		cur = *end == '\0' ? json_array_get(cur, (size_t)idx) : json_object_get(cur, k);
	}
	return json_string_value(cur);
}

START_TEST(host_service_account)
{
	json_t *p = pod_with("[]");
	json_object_set_new(json_object_get(p, "spec"), "serviceAccount", json_string("runner"));
	json_object_set_new(json_object_get(p, "spec"), "automountServiceAccountToken",
			    json_true());
	struct syncer_xlate x = xl(NULL);
	json_t *h = syncer_translate_pod(&x, p, NULL);
	json_t *spec = json_object_get(h, "spec");
	ck_assert_str_eq(at(spec, "serviceAccountName"), SYNCER_POD_SA);
	ck_assert_ptr_null(json_object_get(spec, "serviceAccount"));
	ck_assert(json_is_false(json_object_get(spec, "automountServiceAccountToken")));
	/* never the syncer's own account, kubicle-<tenant> */
	ck_assert_ptr_null(strstr(SYNCER_POD_SA, "-"));
	json_decref(h);
	json_decref(p);
}
END_TEST

static const char *tok_vols =
    "[{\"name\":\"vault\",\"projected\":{\"sources\":["
    "{\"configMap\":{\"name\":\"cm\"}},"
    "{\"serviceAccountToken\":{\"audience\":\"vault\",\"expirationSeconds\":7200,"
    "\"path\":\"vault-token\"}},"
    "{\"clusterTrustBundle\":{\"signerName\":\"example.com/s\",\"path\":\"ca.pem\"}}]}},"
    "{\"name\":\"api\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"path\":\"t\"}}]}}]";

START_TEST(projected_tokens_become_tenant_items)
{
	json_t *p = pod_with(tok_vols), *refs = json_array();
	char tn[SYNCER_NAME_MAX + 1];
	ck_assert_int_eq(syncer_pod_token_name("ml", "train", "u-1", "t1", tn, sizeof(tn)), 0);
	struct syncer_xlate x = xl(tn);
	json_t *h = syncer_translate_pod(&x, p, refs);
	json_t *v = vol(h, "vault");
	json_t *srcs = json_object_get(json_object_get(v, "projected"), "sources");
	/* the trust bundle is gone; the token is an item of the pod's Secret */
	ck_assert_uint_eq(json_array_size(srcs), 2);
	ck_assert_str_eq(at(srcs, "0.configMap.name"), "cm-x-ml-x-t1");
	ck_assert_ptr_null(json_object_get(json_array_get(srcs, 1), "serviceAccountToken"));
	ck_assert_str_eq(at(srcs, "1.secret.name"), tn);
	ck_assert_str_eq(at(srcs, "1.secret.items.0.key"), "vault-1");
	ck_assert_str_eq(at(srcs, "1.secret.items.0.path"), "vault-token");
	ck_assert_str_eq(
	    at(json_object_get(vol(h, "api"), "projected"), "sources.0.secret.items.0.key"),
	    "api-0");
	/* the token Secret is not a tenant Secret: not counted, not renamed */
	size_t i;
	json_t *r;
	json_array_foreach (refs, i, r)
		ck_assert_str_ne(json_string_value(json_object_get(r, "name")), tn);
	json_decref(h);
	/* without an issuer the source goes: never a host token */
	x = xl(NULL);
	h = syncer_translate_pod(&x, p, NULL);
	char *txt = json_dumps(h, 0);
	ck_assert_ptr_null(strstr(txt, "serviceAccountToken"));
	ck_assert_ptr_null(strstr(txt, "clusterTrustBundle"));
	free(txt);
	json_decref(h);
	json_decref(refs);
	json_decref(p);
}
END_TEST

START_TEST(pod_tokens_list)
{
	json_t *p = pod_with(tok_vols);
	json_t *t = syncer_pod_tokens(p);
	ck_assert_uint_eq(json_array_size(t), 2);
	ck_assert_str_eq(at(t, "0.key"), "vault-1");
	ck_assert_str_eq(at(t, "0.audience"), "vault");
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_array_get(t, 0), "expirationSeconds")), 7200);
	ck_assert_str_eq(at(t, "1.key"), "api-0");
	ck_assert_ptr_null(json_object_get(json_array_get(t, 1), "audience"));
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_array_get(t, 1), "expirationSeconds")), 3600);
	json_decref(t);
	json_decref(p);
	p = pod_with("[{\"name\":\"e\",\"emptyDir\":{}}]");
	t = syncer_pod_tokens(p);
	ck_assert_uint_eq(json_array_size(t), 0);
	json_decref(t);
	json_decref(p);
}
END_TEST

START_TEST(token_refresh)
{
	/* the kubelet's: 80 % of the life, or 24 hours */
	ck_assert_int_eq(syncer_token_refresh_after(3600), 2880);
	ck_assert_int_eq(syncer_token_refresh_after(600), 480);
	ck_assert_int_eq(syncer_token_refresh_after(48L * 3600), 24L * 3600);
}
END_TEST

START_TEST(pod_token_secret_contract)
{
	char a[SYNCER_NAME_MAX + 1], b[SYNCER_NAME_MAX + 1], sa[SYNCER_NAME_MAX + 1];
	ck_assert_int_eq(syncer_pod_token_name("ml", "train", "u-1", "t1", a, sizeof(a)), 0);
	ck_assert_int_eq(syncer_pod_token_name("ml", "train", "u-2", "t1", b, sizeof(b)), 0);
	ck_assert_str_ne(a, b); /* a new pod of the same name: another Secret */
	ck_assert_int_eq(syncer_sa_secret_name("ml", "train", "t1", sa, sizeof(sa)), 0);
	ck_assert_str_ne(a, sa);
	ck_assert(kb_str_has_prefix(a, "train-token-"));
	ck_assert_int_eq(syncer_pod_token_name("ml", "train", NULL, "t1", a, sizeof(a)), -EINVAL);
	/* a long dotted name cut at a dot: still a valid Secret name */
	ck_assert_int_eq(syncer_pod_token_name("ml", "abcdefghijabcdefghijabcdefghijabcdefghi.x.y",
					       "u-1", "t1", a, sizeof(a)),
			 0);
	ck_assert_int_eq(strlen(a), 63);
	ck_assert_ptr_null(strchr(a, '.'));
	ck_assert(kb_str_has_prefix(a, "abcdefghijabcdefghijabcdefghijabcdefghi--token-"));
	ck_assert_int_eq(syncer_pod_token_name("ml", "train", "u-1", "t1", a, sizeof(a)), 0);
	json_t *p = pod_with("[]");
	struct syncer_xlate x = xl(NULL);
	json_t *toks = J("{\"vault-1\":\"aaa.bbb.ccc\"}");
	json_t *sec = syncer_pod_token_secret(&x, p, toks);
	ck_assert_str_eq(at(sec, "metadata.name"), a);
	ck_assert_str_eq(at(sec, "metadata.namespace"), "tenants");
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_object_get(json_object_get(sec, "metadata"), "labels"), LBL_TENANT)),
	    "t1");
	ck_assert_str_eq(at(sec, "type"), "Opaque");
	ck_assert_str_eq(at(sec, "data.vault-1"), "YWFhLmJiYi5jY2M=");
	/* it is ours, of the pod: the syncer may replace and delete it */
	ck_assert(syncer_host_is(sec, "t1", "ml", "train", "u-1"));
	ck_assert(!syncer_host_is(sec, "t2", "ml", "train", "u-1"));
	/* a Secret under that name naming another pod is not */
	json_t *ann = json_object_get(json_object_get(sec, "metadata"), "annotations");
	json_object_set_new(ann, ANN_UID, json_string("u-2"));
	ck_assert(!syncer_host_is(sec, "t1", "ml", "train", NULL));
	json_decref(sec);
	json_decref(toks);
	json_decref(p);
}
END_TEST

START_TEST(ephemeral_as_claims)
{
	json_t *p = pod_with(
	    "[{\"name\":\"scratch\",\"ephemeral\":{\"volumeClaimTemplate\":{"
	    "\"metadata\":{\"labels\":{\"app\":\"x\",\"kubicle.dev/tenant\":\"t2\"},"
	    "\"annotations\":{\"volume.kubernetes.io/selected-node\":\"n1\","
	    "\"pv.kubernetes.io/bind-completed\":\"yes\",\"note\":\"n\"}},"
	    "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\"storageClassName\":\"fast\","
	    "\"volumeName\":\"pv-of-another-tenant\","
	    "\"dataSource\":{\"kind\":\"PersistentVolumeClaim\",\"name\":\"seed\"},"
	    "\"dataSourceRef\":{\"apiGroup\":\"snapshot.storage.k8s.io\",\"kind\":"
	    "\"VolumeSnapshot\",\"name\":\"host-snap\"},"
	    "\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}}},"
	    "{\"name\":\"other\",\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{"
	    "\"dataSource\":{\"kind\":\"PersistentVolumeClaim\",\"name\":\"x\",\"namespace\":"
	    "\"kube-system\"}}}}}]");
	struct syncer_xlate x = xl(NULL);
	json_t *h = syncer_translate_pod(&x, p, NULL);
	/* the claim the tenant's controller made, by its translated name */
	json_t *sv = vol(h, "scratch");
	ck_assert_ptr_null(json_object_get(sv, "ephemeral"));
	ck_assert_str_eq(at(sv, "persistentVolumeClaim.claimName"), "train-scratch-x-ml-x-t1");
	ck_assert_str_eq(at(vol(h, "other"), "persistentVolumeClaim.claimName"),
			 "train-other-x-ml-x-t1");
	/* nothing of the template reaches the host */
	char *txt = json_dumps(h, 0);
	ck_assert_ptr_null(strstr(txt, "volumeClaimTemplate"));
	ck_assert_ptr_null(strstr(txt, "pv-of-another-tenant"));
	ck_assert_ptr_null(strstr(txt, "host-snap"));
	ck_assert_ptr_null(strstr(txt, "selected-node"));
	free(txt);
	json_decref(h);
	json_decref(p);
}
END_TEST

START_TEST(plugin_secrets_translated)
{
	json_t *p = pod_with(
	    "[{\"name\":\"a\",\"csi\":{\"driver\":\"d\",\"nodePublishSecretRef\":{\"name\":\"s1\"}}"
	    "},"
	    "{\"name\":\"b\",\"azureFile\":{\"secretName\":\"s2\",\"shareName\":\"x\"}},"
	    "{\"name\":\"c\",\"cephfs\":{\"monitors\":[\"m\"],\"secretRef\":{\"name\":\"s3\"}}},"
	    "{\"name\":\"d\",\"flexVolume\":{\"driver\":\"x/y\",\"secretRef\":{\"name\":\"s4\"}}},"
	    "{\"name\":\"e\",\"iscsi\":{\"targetPortal\":\"p\",\"iqn\":\"q\",\"lun\":0,"
	    "\"secretRef\":{\"name\":\"s5\"}}},"
	    "{\"name\":\"f\",\"rbd\":{\"monitors\":[\"m\"],\"image\":\"i\",\"secretRef\":{\"name\":"
	    "\"s6\"}}},"
	    "{\"name\":\"g\",\"scaleIO\":{\"gateway\":\"g\",\"system\":\"s\",\"secretRef\":{"
	    "\"name\":\"s7\"}}},"
	    "{\"name\":\"h\",\"cinder\":{\"volumeID\":\"v\",\"secretRef\":{\"name\":\"s8\"}}},"
	    "{\"name\":\"i\",\"storageos\":{\"volumeName\":\"v\",\"secretRef\":{\"name\":\"s9\"}}}"
	    "]");
	json_t *refs = json_array();
	struct syncer_xlate x = xl(NULL);
	json_t *h = syncer_translate_pod(&x, p, refs);
	ck_assert_str_eq(at(vol(h, "a"), "csi.nodePublishSecretRef.name"), "s1-x-ml-x-t1");
	ck_assert_str_eq(at(vol(h, "b"), "azureFile.secretName"), "s2-x-ml-x-t1");
	ck_assert_str_eq(at(vol(h, "c"), "cephfs.secretRef.name"), "s3-x-ml-x-t1");
	ck_assert_str_eq(at(vol(h, "d"), "flexVolume.secretRef.name"), "s4-x-ml-x-t1");
	ck_assert_str_eq(at(vol(h, "e"), "iscsi.secretRef.name"), "s5-x-ml-x-t1");
	ck_assert_str_eq(at(vol(h, "f"), "rbd.secretRef.name"), "s6-x-ml-x-t1");
	ck_assert_str_eq(at(vol(h, "g"), "scaleIO.secretRef.name"), "s7-x-ml-x-t1");
	ck_assert_str_eq(at(vol(h, "h"), "cinder.secretRef.name"), "s8-x-ml-x-t1");
	ck_assert_str_eq(at(vol(h, "i"), "storageos.secretRef.name"), "s9-x-ml-x-t1");
	/* each is a tenant Secret the syncer copies to the host */
	ck_assert_uint_eq(json_array_size(refs), 9);
	ck_assert_str_eq(at(refs, "0.kind"), "Secret");
	json_decref(h);
	json_decref(refs);
	json_decref(p);
}
END_TEST

START_TEST(host_objects_removed)
{
	/* every source of the one table no policy can open (policies/volumes.c),
	 * and a member the table does not know (a later kube's) */
	size_t n;
	const struct policy_volume_source *t = policy_volume_sources(&n);
	for (size_t i = 0; i <= n; i++) {
		if (i < n && t[i].cls != POLICY_VOLUME_NEVER)
			continue;
		char v[300];
		snprintf(v, sizeof(v),
			 "[{\"name\":\"x\",\"%s\":{}},{\"name\":\"y\",\"emptyDir\":{}}]",
			 i < n ? t[i].name : "futureVolume");
		json_t *p = pod_with(v);
		struct syncer_xlate x = xl(NULL);
		json_t *h = syncer_translate_pod(&x, p, NULL);
		ck_assert_msg(!vol(h, "x"), "%s passed", i < n ? t[i].name : "futureVolume");
		ck_assert_ptr_nonnull(vol(h, "y"));
		json_decref(h);
		json_decref(p);
	}
	/* cinder and storageos without a Secret: the host's credentials */
	json_t *p = pod_with("[{\"name\":\"c\",\"cinder\":{\"volumeID\":\"v\"}},"
			     "{\"name\":\"s\",\"storageos\":{\"volumeName\":\"v\"}},"
			     "{\"name\":\"n\",\"nfs\":{\"server\":\"s\",\"path\":\"/\"}}]");
	json_object_set_new(json_object_get(p, "spec"), "resourceClaims",
			    J("[{\"name\":\"gpu\",\"resourceClaimName\":\"host-claim\"}]"));
	json_object_set_new(
	    json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0),
	    "resources", J("{\"claims\":[{\"name\":\"gpu\"}]}"));
	struct syncer_xlate x = xl(NULL);
	json_t *h = syncer_translate_pod(&x, p, NULL);
	ck_assert_ptr_null(vol(h, "c"));
	ck_assert_ptr_null(vol(h, "s"));
	ck_assert_ptr_nonnull(vol(h, "n"));
	ck_assert_ptr_null(json_object_get(json_object_get(h, "spec"), "resourceClaims"));
	ck_assert_ptr_null(json_object_get(
	    json_object_get(
		json_array_get(json_object_get(json_object_get(h, "spec"), "containers"), 0),
		"resources"),
	    "claims"));
	json_decref(h);
	json_object_set_new(json_object_get(p, "spec"), "securityContext",
			    J("{\"windowsOptions\":{\"gmsaCredentialSpecName\":\"g\"}}"));
	h = syncer_translate_pod(&x, p, NULL);
	char *txt = json_dumps(json_object_get(h, "spec"), 0);
	ck_assert_ptr_null(strstr(txt, "gmsa"));
	free(txt);
	json_decref(h);
	json_decref(p);
}
END_TEST

/* Images on shared nodes: the host pod pulls Always (every container kind,
 * image volumes) unless the policy said imagePullPolicy: any; pull Secrets
 * are the tenant's host copies, and one without a translation goes. */
START_TEST(images_pull_always)
{
	json_t *p = pod_with("[{\"name\":\"v\",\"image\":{\"reference\":\"r/x:1\","
			     "\"pullPolicy\":\"IfNotPresent\"}}]");
	json_t *spec = json_object_get(p, "spec");
	json_object_set_new(spec, "ephemeralContainers",
			    J("[{\"name\":\"d\",\"image\":\"i\",\"imagePullPolicy\":\"Never\"}]"));
	json_object_set_new(spec, "imagePullSecrets",
			    J("[{\"name\":\"regcred\"},{\"name\":\"\"},{\"name\":\"a/b\"}]"));
	struct syncer_xlate x = xl(NULL);
	json_t *h = syncer_translate_pod(&x, p, NULL);
	ck_assert_str_eq(at(h, "spec.containers.0.imagePullPolicy"), "Always");
	ck_assert_str_eq(at(h, "spec.ephemeralContainers.0.imagePullPolicy"), "Always");
	ck_assert_str_eq(at(vol(h, "v"), "image.pullPolicy"), "Always");
	json_t *ips = json_object_get(json_object_get(h, "spec"), "imagePullSecrets");
	ck_assert_uint_eq(json_array_size(ips), 1);
	ck_assert_str_eq(at(ips, "0.name"), "regcred-x-ml-x-t1");
	json_decref(h);
	x.image_pull_any = true;
	h = syncer_translate_pod(&x, p, NULL);
	ck_assert_ptr_null(at(h, "spec.containers.0.imagePullPolicy"));
	ck_assert_str_eq(at(h, "spec.ephemeralContainers.0.imagePullPolicy"), "Never");
	json_decref(h);
	json_decref(p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("syncer_hostrefs");
	TCase *tc = tcase_create("hostrefs");
	tcase_add_test(tc, host_service_account);
	tcase_add_test(tc, projected_tokens_become_tenant_items);
	tcase_add_test(tc, pod_tokens_list);
	tcase_add_test(tc, pod_token_secret_contract);
	tcase_add_test(tc, token_refresh);
	tcase_add_test(tc, ephemeral_as_claims);
	tcase_add_test(tc, plugin_secrets_translated);
	tcase_add_test(tc, host_objects_removed);
	tcase_add_test(tc, images_pull_always);
	suite_add_tcase(s, tc);
	return s;
}
