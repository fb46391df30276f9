/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for what the operator builds without a host (cmd/manifest.h's
 * exported builders, cmd/operator_manifest.c's CRD): the checks a Tenant's
 * spec goes through, the objects the reconcile applies, and the embedded
 * CRD read back with its types (booleans and integers, never "True" or
 * "False" of a condition's enum).
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "cmd/manifest.h"
#include "cmd/operator_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static struct manifest_spec spec(void)
{
	return (struct manifest_spec){.name = "t1", .queue = "q", .gpus = -1};
}

START_TEST(test_check)
{
	char err[256];
	struct manifest_spec s = spec();
	ck_assert_int_eq(manifest_check(&s, err, sizeof(err)), 0);
	s.queue = NULL;
	ck_assert_int_eq(manifest_check(&s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "needs --queue"));
	s = spec();
	s.policy = "/etc/shadow";
	ck_assert_int_eq(manifest_check(&s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a file"));
	s = spec();
	s.ns = "Bad_NS";
	ck_assert_int_eq(manifest_check(&s, err, sizeof(err)), -EINVAL);
	s = spec();
	s.name = "a-x-b";
	ck_assert_int_eq(manifest_check(&s, err, sizeof(err)), -EINVAL);
	s = spec();
	const char *bad[] = {"not-a-cidr"};
	s.egress = bad;
	s.negress = 1;
	ck_assert_int_eq(manifest_check(&s, err, sizeof(err)), -EINVAL);
	s = spec();
	s.floor = "none";
	ck_assert_int_eq(manifest_check(&s, err, sizeof(err)), -EINVAL);
}
END_TEST

START_TEST(test_objects)
{
	char err[256];
	struct manifest_spec s = spec();
	struct manifest_pki p = {0};
	s.image = "registry.example/kubicle:9";
	ck_assert_int_eq(manifest_pki_make(&s, NULL, &p, err, sizeof(err)), 0);
	json_t *items = manifest_objects(&s, &p, err, sizeof(err));
	ck_assert_ptr_nonnull(items);
	size_t i;
	json_t *o;
	int sts = 0;
	json_array_foreach (items, i, o) {
		const char *kind = json_string_value(json_object_get(o, "kind"));
		if (strcmp(kind, "StatefulSet") != 0)
			continue;
		sts++;
		json_t *c = json_array_get(
		    json_object_get(
			json_object_get(json_object_get(json_object_get(o, "spec"), "template"),
					"spec"),
			"containers"),
		    0);
		ck_assert_str_eq(json_string_value(json_object_get(c, "image")), s.image);
	}
	ck_assert_int_eq(sts, 1);
	/* a seed's CA signs the next serving certificate: the CA is kept */
	struct manifest_pki q = {0};
	ck_assert_int_eq(manifest_pki_make(&s, &p, &q, err, sizeof(err)), 0);
	ck_assert_str_eq(q.ca_crt, p.ca_crt);
	ck_assert_str_eq(q.admin_crt, p.admin_crt);
	json_decref(items);
	manifest_pki_free(&p);
	manifest_pki_free(&q);
}
END_TEST

START_TEST(test_crd_types)
{
	json_t *crd = op_crd();
	ck_assert_ptr_nonnull(crd);
	json_t *v = json_array_get(json_object_get(json_object_get(crd, "spec"), "versions"), 0);
	ck_assert(json_is_true(json_object_get(v, "served")));
	ck_assert(json_is_true(json_object_get(v, "storage")));
	json_t *props = json_object_get(
	    json_object_get(json_object_get(v, "schema"), "openAPIV3Schema"), "properties");
	json_t *sp = json_object_get(json_object_get(props, "spec"), "properties");
	ck_assert(json_is_integer(json_object_get(json_object_get(sp, "gpus"), "minimum")));
	ck_assert_int_eq(
	    json_integer_value(json_object_get(json_object_get(sp, "gpus"), "minimum")), -1);
	ck_assert(json_is_false(json_object_get(json_object_get(sp, "paused"), "default")));
	json_t *cond = json_object_get(
	    json_object_get(
		json_object_get(json_object_get(json_object_get(props, "status"), "properties"),
				"conditions"),
		"items"),
	    "properties");
	json_t *en = json_object_get(json_object_get(cond, "status"), "enum");
	ck_assert_str_eq(json_string_value(json_array_get(en, 0)), "True");
	ck_assert_str_eq(json_string_value(json_array_get(en, 1)), "False");
	json_decref(crd);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("operator");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_check);
	tcase_add_test(tc, test_objects);
	tcase_add_test(tc, test_crd_types);
	suite_add_tcase(s, tc);
	return s;
}
