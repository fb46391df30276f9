/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of proxy/types: the generated message tables agree with the
 * Kubernetes 1.33 API (k8s.io/api generated.proto and the Go struct tags).
 */
#include <check.h>
#include <string.h>

#include "proxy/model/types.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

START_TEST(find_pod)
{
	const struct kt_message *pod = kt_find("k8s.io.api.core.v1.Pod");
	ck_assert_ptr_nonnull(pod);
	ck_assert_str_eq(pod->name, "k8s.io.api.core.v1.Pod");
	ck_assert_int_eq(pod->special, KT_PLAIN);
	ck_assert_ptr_eq(kt_find(".k8s.io.api.core.v1.Pod"), pod);
	ck_assert_ptr_null(kt_find("k8s.io.api.core.v1.Nope"));
	ck_assert_ptr_null(kt_find(""));
	ck_assert_ptr_null(kt_find(NULL));

	const struct kt_field *spec = kt_field(pod, "spec");
	ck_assert_ptr_nonnull(spec);
	ck_assert_int_eq(spec->num, 2);
	ck_assert_int_eq(spec->kind, KT_MESSAGE);
	ck_assert_str_eq(spec->msg->name, "k8s.io.api.core.v1.PodSpec");
	ck_assert_ptr_eq(kt_field_num(pod, 3), kt_field(pod, "status"));
	ck_assert_ptr_null(kt_field(pod, "apiVersion"));
}
END_TEST

START_TEST(podspec_containers)
{
	const struct kt_message *ps = kt_find("k8s.io.api.core.v1.PodSpec");
	const struct kt_field *c = kt_field(ps, "containers");
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->num, 2);
	ck_assert_int_eq(c->label, KT_REPEATED);
	ck_assert_str_eq(c->patch_strategy, "merge");
	ck_assert_str_eq(c->merge_key, "name");
	ck_assert_str_eq(c->list_type, "map");
	ck_assert_ptr_nonnull(c->map_keys);
	ck_assert_str_eq(c->map_keys[0], "name");
	ck_assert_ptr_null(c->map_keys[1]);
	ck_assert_str_eq(c->msg->name, "k8s.io.api.core.v1.Container");

	const struct kt_field *v = kt_field(ps, "volumes");
	ck_assert_str_eq(v->patch_strategy, "merge,retainKeys");

	const struct kt_field *ports = kt_field(c->msg, "ports");
	ck_assert_str_eq(ports->merge_key, "containerPort");
	ck_assert_str_eq(ports->patch_strategy, "merge");
	ck_assert_str_eq(ports->list_type, "map");
	ck_assert_str_eq(ports->map_keys[0], "containerPort");
	ck_assert_str_eq(ports->map_keys[1], "protocol");
	ck_assert_ptr_null(ports->map_keys[2]);

	const struct kt_field *args = kt_field(c->msg, "args");
	ck_assert_int_eq(args->kind, KT_STRING);
	ck_assert_int_eq(args->label, KT_REPEATED);
	ck_assert_str_eq(args->list_type, "atomic");
	ck_assert_ptr_null(args->merge_key);

	/* nodeSelector is a map<string,string> */
	const struct kt_field *ns = kt_field(ps, "nodeSelector");
	ck_assert_int_eq(ns->label, KT_MAP);
	ck_assert_int_eq(ns->key_kind, KT_STRING);
	ck_assert_int_eq(ns->kind, KT_STRING);
}
END_TEST

START_TEST(object_meta_numbers)
{
	const struct kt_message *om = kt_find("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta");
	ck_assert_ptr_nonnull(om);
	ck_assert_str_eq(kt_field_num(om, 1)->json, "name");
	ck_assert_str_eq(kt_field_num(om, 2)->json, "generateName");
	ck_assert_str_eq(kt_field_num(om, 3)->json, "namespace");
	ck_assert_str_eq(kt_field_num(om, 11)->json, "labels");
	ck_assert_str_eq(kt_field_num(om, 12)->json, "annotations");
	ck_assert_int_eq(kt_field(om, "labels")->label, KT_MAP);
	ck_assert_int_eq(kt_field(om, "generation")->kind, KT_INT64);
	ck_assert_int_eq(kt_field(om, "creationTimestamp")->msg->special, KT_TIME);
	ck_assert_ptr_null(kt_field_num(om, 999));
	const struct kt_field *mf = kt_field(om, "managedFields");
	ck_assert_str_eq(mf->list_type, "atomic");
}
END_TEST

START_TEST(specials)
{
	static const struct {
		const char *name;
		int special;
	} want[] = {
	    {"k8s.io.apimachinery.pkg.apis.meta.v1.Time", KT_TIME},
	    {"k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime", KT_MICROTIME},
	    {"k8s.io.apimachinery.pkg.apis.meta.v1.Duration", KT_DURATION},
	    {"k8s.io.apimachinery.pkg.api.resource.Quantity", KT_QUANTITY},
	    {"k8s.io.apimachinery.pkg.util.intstr.IntOrString", KT_INTORSTRING},
	    {"k8s.io.apimachinery.pkg.runtime.RawExtension", KT_RAWEXTENSION},
	    {"k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1", KT_FIELDSV1},
	    {"k8s.io.api.apps.v1.Deployment", KT_PLAIN},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct kt_message *m = kt_find(want[i].name);
		ck_assert_msg(m != NULL, "%s missing", want[i].name);
		ck_assert_int_eq(m->special, want[i].special);
	}
	/* a Secret's data is a map of bytes */
	const struct kt_field *d = kt_field(kt_find("k8s.io.api.core.v1.Secret"), "data");
	ck_assert_int_eq(d->label, KT_MAP);
	ck_assert_int_eq(d->kind, KT_BYTES);
	/* resources.limits is a map of Quantity */
	const struct kt_field *l =
	    kt_field(kt_find("k8s.io.api.core.v1.ResourceRequirements"), "limits");
	ck_assert_int_eq(l->label, KT_MAP);
	ck_assert_int_eq(l->msg->special, KT_QUANTITY);
	/* JSON names that differ from proto names */
	const struct kt_message *wh =
	    kt_find("k8s.io.api.admissionregistration.v1.ValidatingWebhookConfiguration");
	ck_assert_ptr_nonnull(kt_field(wh, "webhooks"));
	ck_assert_str_eq(kt_field(wh, "webhooks")->name, "Webhooks");
	ck_assert_ptr_null(kt_field(wh, "Webhooks"));
}
END_TEST

/* Go structs embedded with json:",inline" have an empty JSON name and
 * kt_field() looks through them. */
START_TEST(inline_fields)
{
	const struct kt_message *vol = kt_find("k8s.io.api.core.v1.Volume");
	const struct kt_field *src = kt_field_num(vol, 2);
	ck_assert_str_eq(src->name, "volumeSource");
	ck_assert_str_eq(src->json, "");
	ck_assert_ptr_null(kt_field(vol, "volumeSource"));
	ck_assert_ptr_null(kt_field(vol, ""));
	const struct kt_field *cm = kt_field(vol, "configMap");
	ck_assert_ptr_nonnull(cm);
	ck_assert_str_eq(cm->msg->name, "k8s.io.api.core.v1.ConfigMapVolumeSource");
	/* two levels: ConfigMapVolumeSource embeds LocalObjectReference */
	ck_assert_ptr_nonnull(kt_field(cm->msg, "name"));
	ck_assert_ptr_nonnull(kt_field(kt_find("k8s.io.api.core.v1.Probe"), "httpGet"));
	ck_assert_ptr_nonnull(kt_field(kt_find("k8s.io.api.core.v1.EphemeralContainer"), "image"));
}
END_TEST

START_TEST(sorted_and_complete)
{
	ck_assert_uint_gt(kt_count(), 1000);
	for (size_t i = 1; i < kt_count(); i++)
		ck_assert_int_lt(strcmp(kt_at(i - 1)->name, kt_at(i)->name), 0);
	for (size_t i = 0; i < kt_count(); i++) {
		const struct kt_message *m = kt_at(i);
		ck_assert_ptr_eq(kt_find(m->name), m);
		for (uint16_t j = 0; j < m->nfields; j++) {
			const struct kt_field *f = &m->fields[j];
			ck_assert(f->num > 0);
			ck_assert((f->kind == KT_MESSAGE) == (f->msg != NULL));
			ck_assert((f->label == KT_MAP) == (f->key_kind != 0));
		}
	}
	ck_assert_ptr_null(kt_at(kt_count()));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/types");
	TCase *tc = tcase_create("tables");
	tcase_add_test(tc, find_pod);
	tcase_add_test(tc, podspec_containers);
	tcase_add_test(tc, object_meta_numbers);
	tcase_add_test(tc, specials);
	tcase_add_test(tc, inline_fields);
	tcase_add_test(tc, sorted_and_complete);
	suite_add_tcase(s, tc);
	return s;
}
