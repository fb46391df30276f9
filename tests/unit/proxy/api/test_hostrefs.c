/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/api/hostrefs.c: the pod fields a syncing tenant refuses
 * because they would name a host object, each cause naming its field, and
 * the same list of volume sources the syncer removes (syncer/hostrefs.c).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "policies/policies.h"
#include "proxy/api/api.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *pod(const char *spec)
{
	char buf[2048];
	snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"p\"},\"spec\":%s}", spec);
	return json_loads(buf, 0, NULL);
}

/* The causes of a pod, "reason field" lines. */
static char *causes_of(const char *spec, char *out, size_t len)
{
	json_t *p = pod(spec), *c = json_array(), *e;
	size_t i, n = 0;
	out[0] = '\0';
	hostrefs_refuse(p, c);
	json_array_foreach (c, i, e)
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s %s\n",
				      json_string_value(json_object_get(e, "reason")),
				      json_string_value(json_object_get(e, "field")));
	json_decref(c);
	json_decref(p);
	return out;
}

/* Every source of the one table (policies/volumes.c) no policy can open is
 * refused, and only those: node-mounted and CSI ones are the floor's. */
START_TEST(host_sources_refused)
{
	size_t n, never = 0;
	const struct policy_volume_source *t = policy_volume_sources(&n);
	char spec[512], out[1024], want[256];
	for (size_t i = 0; i < n; i++) {
		snprintf(spec, sizeof(spec),
			 "{\"volumes\":[{\"name\":\"ok\",\"emptyDir\":{}},{\"name\":\"x\",\"%s\":"
			 "{\"secretRef\":{\"name\":\"s\"}}}]}",
			 t[i].name);
		snprintf(want, sizeof(want), "FieldValueForbidden spec.volumes[1].%s\n", t[i].name);
		if (t[i].cls == POLICY_VOLUME_NEVER)
			never++;
		ck_assert_str_eq(causes_of(spec, out, sizeof(out)),
				 t[i].cls == POLICY_VOLUME_NEVER ? want : "");
	}
	ck_assert_uint_ge(never, 11); /* the cloud disks, fc, glusterfs, gitRepo... */
}
END_TEST

START_TEST(credentials_and_translated)
{
	char out[1024];
	ck_assert_str_eq(
	    causes_of("{\"volumes\":[{\"name\":\"c\",\"cinder\":{\"volumeID\":\"v\"}},"
		      "{\"name\":\"s\",\"storageos\":{\"volumeName\":\"v\",\"secretRef\":{}}}]}",
		      out, sizeof(out)),
	    "FieldValueRequired spec.volumes[0].cinder.secretRef\n"
	    "FieldValueRequired spec.volumes[1].storageos.secretRef\n");
	/* what the syncer translates passes */
	ck_assert_str_eq(
	    causes_of(
		"{\"volumes\":[{\"name\":\"c\",\"cinder\":{\"volumeID\":\"v\",\"secretRef\":"
		"{\"name\":\"s\"}}},{\"name\":\"e\",\"ephemeral\":{\"volumeClaimTemplate\":{"
		"\"spec\":{\"volumeName\":\"pv\"}}}},{\"name\":\"x\",\"csi\":{\"driver\":\"d\","
		"\"nodePublishSecretRef\":{\"name\":\"s\"}}},{\"name\":\"n\",\"nfs\":{}}]}",
		out, sizeof(out)),
	    "");
}
END_TEST

START_TEST(projected_sources)
{
	char out[1024];
	ck_assert_str_eq(
	    causes_of("{\"volumes\":[{\"name\":\"p\",\"projected\":{\"sources\":["
		      "{\"serviceAccountToken\":{\"path\":\"t\",\"audience\":\"vault\","
		      "\"expirationSeconds\":3600}},"
		      "{\"serviceAccountToken\":{\"expirationSeconds\":60}},"
		      "{\"clusterTrustBundle\":{\"name\":\"host-bundle\",\"path\":\"b\"}}]}}]}",
		      out, sizeof(out)),
	    "FieldValueRequired spec.volumes[0].projected.sources[1].serviceAccountToken.path\n"
	    "FieldValueInvalid "
	    "spec.volumes[0].projected.sources[1].serviceAccountToken.expirationSeconds\n"
	    "FieldValueForbidden spec.volumes[0].projected.sources[2].clusterTrustBundle\n");
}
END_TEST

/* DRA is refused in one place, the floor (policies/floor.c), not here. */
START_TEST(resource_claims)
{
	char out[1024];
	const char *spec = "{\"resourceClaims\":[{\"name\":\"g\",\"resourceClaimName\":\"c\"}]}";
	ck_assert_str_eq(causes_of(spec, out, sizeof(out)), "");
}
END_TEST

START_TEST(gmsa_named)
{
	char out[1024];
	ck_assert_str_eq(
	    causes_of(
		"{\"securityContext\":{\"windowsOptions\":{\"gmsaCredentialSpecName\":\"g\"}},"
		"\"containers\":[{\"name\":\"c\",\"securityContext\":{\"windowsOptions\":{"
		"\"gmsaCredentialSpecName\":\"g\"}}}]}",
		out, sizeof(out)),
	    "FieldValueForbidden spec.securityContext.windowsOptions.gmsaCredentialSpecName\n"
	    "FieldValueForbidden spec.containers[0].securityContext.windowsOptions."
	    "gmsaCredentialSpecName\n");
}
END_TEST

/* hostpod_refuse, on every path that writes a pod: an update is refused
 * only for what it adds (an ephemeral container naming a host object), not
 * for what the stored pod had (a nodeName the host chose). */
START_TEST(updates_refused_for_what_they_add)
{
	json_t *old = pod("{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\"}]}");
	json_t *same = json_deep_copy(old), *c = json_array();
	hostpod_refuse(same, old, true, c);
	ck_assert_uint_eq(json_array_size(c), 0);
	json_t *eph = json_loads("[{\"name\":\"d\",\"securityContext\":{\"windowsOptions\":{"
				 "\"gmsaCredentialSpecName\":\"g\"}}}]",
				 0, NULL);
	json_object_set_new(json_object_get(same, "spec"), "ephemeralContainers", eph);
	hostpod_refuse(same, old, true, c);
	ck_assert_uint_eq(json_array_size(c), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 0), "field")),
			 "spec.ephemeralContainers[0].securityContext.windowsOptions."
			 "gmsaCredentialSpecName");
	json_array_clear(c);
	/* a create has no old: the nodeName is refused */
	hostpod_refuse(old, NULL, true, c);
	ck_assert_uint_eq(json_array_size(c), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 0), "field")),
			 "spec.nodeName");
	json_decref(c);
	json_decref(same);
	json_decref(old);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy_hostrefs");
	TCase *tc = tcase_create("hostrefs");
	tcase_add_test(tc, host_sources_refused);
	tcase_add_test(tc, credentials_and_translated);
	tcase_add_test(tc, projected_sources);
	tcase_add_test(tc, resource_claims);
	tcase_add_test(tc, gmsa_named);
	tcase_add_test(tc, updates_refused_for_what_they_add);
	suite_add_tcase(s, tc);
	return s;
}
