/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for policies/volumes.c, the one table of pod volume sources: every
 * member of Kubernetes 1.33's VolumeSource has a row (the model's tables,
 * generated from types-1.33.json, and the file itself when it is there), so
 * a new field cannot pass unclassified; the rows the floor and the tenant API
 * rely on have their class; volumeTypes takes only node-mounted types.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "policies/policies.h"
#include "proxy/model/types.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

#define VOLUME_SOURCE "k8s.io.api.core.v1.VolumeSource"

/* Every field of the model's VolumeSource has a row, and every row is a
 * field (no stale name). */
START_TEST(model_fields_classified)
{
	const struct kt_message *m = kt_find(VOLUME_SOURCE);
	ck_assert_ptr_nonnull(m);
	for (uint16_t i = 0; i < m->nfields; i++)
		ck_assert_msg(policy_volume_source(m->fields[i].json) != NULL,
			      "VolumeSource.%s has no row in policies/volumes.c",
			      m->fields[i].json);
	size_t n;
	const struct policy_volume_source *t = policy_volume_sources(&n);
	ck_assert_uint_eq(n, m->nfields);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(kt_field(m, t[i].name) != NULL, "%s is no VolumeSource field",
			      t[i].name);
}
END_TEST

/* The same against types-1.33.json itself (../shared/k8s-api from the
 * source tree), when it is there. */
START_TEST(json_fields_classified)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/../shared/k8s-api/types-1.33.json", KB_SOURCE_ROOT);
	json_t *doc = json_load_file(path, 0, NULL);
	if (!doc)
		return; /* not in this checkout: model_fields_classified holds */
	const json_t *fields = json_object_get(
	    json_object_get(json_object_get(doc, "messages"), VOLUME_SOURCE), "fields");
	ck_assert_uint_gt(json_array_size(fields), 25);
	size_t i;
	json_t *f;
	json_array_foreach (fields, i, f) {
		const char *name = json_string_value(json_object_get(f, "json"));
		if (!name)
			name = json_string_value(json_object_get(f, "name"));
		ck_assert_msg(policy_volume_source(name) != NULL,
			      "VolumeSource.%s of types-1.33.json has no row", name);
	}
	json_decref(doc);
}
END_TEST

START_TEST(classes)
{
	static const struct {
		const char *name;
		enum policy_volume_class cls;
	} want[] = {
	    {"gitRepo", POLICY_VOLUME_NEVER},
	    {"glusterfs", POLICY_VOLUME_NEVER},
	    {"awsElasticBlockStore", POLICY_VOLUME_NEVER},
	    {"fc", POLICY_VOLUME_NEVER},
	    {"nfs", POLICY_VOLUME_NODE},
	    {"flexVolume", POLICY_VOLUME_NODE},
	    {"cinder", POLICY_VOLUME_NODE},
	    {"csi", POLICY_VOLUME_CSI},
	    {"hostPath", POLICY_VOLUME_HOSTPATH},
	    {"ephemeral", POLICY_VOLUME_TENANT},
	    {"projected", POLICY_VOLUME_TENANT},
	    {"image", POLICY_VOLUME_TENANT},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct policy_volume_source *r = policy_volume_source(want[i].name);
		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(r->cls, want[i].cls);
		ck_assert(r->cls != POLICY_VOLUME_NEVER || (r->why && *r->why));
	}
	ck_assert_str_eq(policy_volume_source("storageos")->needs, "secretRef");
	ck_assert_ptr_null(policy_volume_source("name"));
	ck_assert_ptr_null(policy_volume_source(NULL));
}
END_TEST

/* volumeTypes: a type no policy can open used to be taken and do nothing */
START_TEST(volume_types_parse)
{
	static const struct {
		const char *yaml, *err;
	} cases[] = {
	    {"volumeTypes: [nfs, iscsi, flexVolume]\n", NULL},
	    {"volumeTypes: ['*']\n", NULL},
	    {"volumeTypes: [nfs, gitRepo]\n",
	     "volumeTypes: gitRepo: no policy can allow it: Kubernetes 1.33 disables it"},
	    {"volumeTypes: [glusterfs]\n", "volumeTypes: glusterfs: no policy can allow it"},
	    {"volumeTypes: [csi]\n", "volumeTypes: csi: not a node-mounted volume type"},
	    {"volumeTypes: [nsf]\n", "volumeTypes: nsf: not a volume type of Kubernetes 1.33"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		policy_t *p = NULL;
		char err[512] = "";
		int rc =
		    policy_parse(cases[i].yaml, strlen(cases[i].yaml), "v", &p, err, sizeof(err));
		if (!cases[i].err) {
			ck_assert_msg(rc == 0, "%s: %s", cases[i].yaml, err);
		} else {
			ck_assert_int_lt(rc, 0);
			ck_assert_msg(strstr(err, cases[i].err), "%s: %s", cases[i].yaml, err);
		}
		policy_free(p);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("policies_volumes");
	TCase *tc = tcase_create("volumes");
	tcase_add_test(tc, model_fields_classified);
	tcase_add_test(tc, json_fields_classified);
	tcase_add_test(tc, classes);
	tcase_add_test(tc, volume_types_parse);
	suite_add_tcase(s, tc);
	return s;
}
