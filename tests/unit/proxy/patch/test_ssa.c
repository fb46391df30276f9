/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of server-side apply and managedFields tracking (proxy/patch/patch_ssa.c)
 * against the semantics documented for Kubernetes server-side apply: field
 * ownership per manager, removal of fields a manager stops applying,
 * conflicts and force, list-maps shared between managers, and Update
 * operations taking ownership of what they change.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/patch/patch.h"
#include "lib/json.h"
#include "lib/util.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

#define DEPLOY "k8s.io.api.apps.v1.Deployment"
#define T1     "2025-01-01T00:00:00Z"
#define T2     "2025-01-01T00:01:00Z"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *v = json_loads(s, 0, &e);

	ck_assert_msg(v != NULL, "bad JSON in test: %s (%s)", s, e.text);
	return v;
}

static json_t *entry(const json_t *obj, const char *manager, const char *op)
{
	json_t *mf = json_object_get(json_object_get(obj, "metadata"), "managedFields"), *e;
	size_t i;

	json_array_foreach (mf, i, e) {
		if (!strcmp(json_string_value(json_object_get(e, "manager")), manager) &&
		    !strcmp(json_string_value(json_object_get(e, "operation")), op))
			return e;
	}
	return NULL;
}

/* Does the manager's fieldsV1 contain the path (NULL-terminated elements)? */
static bool owns(const json_t *obj, const char *manager, const char *op, ...)
{
	json_t *e = entry(obj, manager, op), *n;
	const char *pe;
	va_list ap;

	if (!e)
		return false;
	n = json_object_get(e, "fieldsV1");
	va_start(ap, op);
	while (n && (pe = va_arg(ap, const char *)))
		n = json_object_get(n, pe);
	va_end(ap);
	return n != NULL;
}

static const json_t *at(const json_t *v, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *t = strtok_r(buf, ".", &save); t && v; t = strtok_r(NULL, ".", &save)) {
		if (json_is_array(v))
			v = json_array_get(v, (size_t)atoi(t));
		else
			v = json_object_get(v, t);
	}
	return v;
}

static json_t *apply_ok(json_t *live /* stolen */, const char *cfg, const char *manager, bool force,
			const char *now)
{
	json_t *c = J(cfg), *out = NULL, *conf = NULL;
	char err[512] = "";
	int r = patch_apply(live, c, DEPLOY, manager, force, now, &out, &conf, err, sizeof(err));

	ck_assert_msg(r == 0, "apply by %s failed: %d %s", manager, r, err);
	ck_assert_ptr_null(conf);
	json_decref(c);
	json_decref(live);
	return out;
}

#define DEP_HEAD "\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\""

static const char *cfg_full =
    "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"namespace\":\"default\","
    "\"labels\":{\"app\":\"d\",\"extra\":\"x\"}},"
    "\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"app\":\"d\"}},"
    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"nginx:1\"}]}}}}";

START_TEST(first_apply_creates_entry)
{
	json_t *out = apply_ok(NULL, cfg_full, "kubectl", false, T1);
	json_t *e = entry(out, "kubectl", "Apply");

	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(json_string_value(json_object_get(e, "apiVersion")), "apps/v1");
	ck_assert_str_eq(json_string_value(json_object_get(e, "time")), T1);
	ck_assert_str_eq(json_string_value(json_object_get(e, "fieldsType")), "FieldsV1");
	ck_assert(owns(out, "kubectl", "Apply", "f:spec", "f:replicas", NULL));
	ck_assert(owns(out, "kubectl", "Apply", "f:metadata", "f:labels", "f:extra", NULL));
	ck_assert(owns(out, "kubectl", "Apply", "f:spec", "f:template", "f:spec", "f:containers",
		       "k:{\"name\":\"main\"}", ".", NULL));
	ck_assert(owns(out, "kubectl", "Apply", "f:spec", "f:template", "f:spec", "f:containers",
		       "k:{\"name\":\"main\"}", "f:image", NULL));
	/* server-managed paths are never owned; leaves are {} */
	ck_assert(!owns(out, "kubectl", "Apply", "f:metadata", "f:name", NULL));
	ck_assert(!owns(out, "kubectl", "Apply", "f:apiVersion", NULL));
	ck_assert_int_eq(
	    json_object_size(json_object_get(
		json_object_get(json_object_get(json_object_get(e, "fieldsV1"), "f:spec"),
				"f:replicas"),
		".")),
	    0);
	ck_assert_int_eq(
	    json_object_size(json_object_get(
		json_object_get(json_object_get(e, "fieldsV1"), "f:spec"), "f:replicas")),
	    0);
	ck_assert_int_eq(json_integer_value(at(out, "spec.replicas")), 2);
	json_decref(out);
}
END_TEST

START_TEST(reapply_removes_dropped_fields)
{
	json_t *out = apply_ok(NULL, cfg_full, "kubectl", false, T1);

	out = apply_ok(out,
		       "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"labels\":{\"app\":\"d\"}},"
		       "\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"d\"}},"
		       "\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"}},"
		       "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"nginx:2\"}]}}}}",
		       "kubectl", false, T2);
	ck_assert_ptr_null(at(out, "metadata.labels.extra"));
	ck_assert_str_eq(json_string_value(at(out, "metadata.labels.app")), "d");
	ck_assert_ptr_null(at(out, "spec.replicas"));
	ck_assert_str_eq(json_string_value(at(out, "spec.template.spec.containers.0.image")),
			 "nginx:2");
	ck_assert(!owns(out, "kubectl", "Apply", "f:spec", "f:replicas", NULL));
	ck_assert_str_eq(json_string_value(json_object_get(entry(out, "kubectl", "Apply"), "time")),
			 T2);
	/* the namespace stays: it is not owned, so never pruned */
	ck_assert_str_eq(json_string_value(at(out, "metadata.namespace")), "default");
	json_decref(out);
}
END_TEST

START_TEST(two_managers_conflict_and_force)
{
	json_t *out = apply_ok(NULL, cfg_full, "alice", false, T1), *c, *conf = NULL, *o2 = NULL;
	char err[512] = "";

	/* bob applies a different label only: no conflict, both own their fields */
	out = apply_ok(out,
		       "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"labels\":{\"team\":\"b\"}}}",
		       "bob", false, T2);
	ck_assert(owns(out, "bob", "Apply", "f:metadata", "f:labels", "f:team", NULL));
	ck_assert(!owns(out, "bob", "Apply", "f:spec", NULL));
	ck_assert(owns(out, "alice", "Apply", "f:spec", "f:replicas", NULL));

	/* bob sets replicas to the same value: shared, no conflict */
	out = apply_ok(out,
		       "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"labels\":{\"team\":\"b\"}},"
		       "\"spec\":{\"replicas\":2}}",
		       "bob", false, T2);
	ck_assert(owns(out, "bob", "Apply", "f:spec", "f:replicas", NULL));
	ck_assert(owns(out, "alice", "Apply", "f:spec", "f:replicas", NULL));

	/* bob sets a different value: conflict with alice */
	c = J("{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"labels\":{\"team\":\"b\"}},"
	      "\"spec\":{\"replicas\":5}}");
	ck_assert_int_eq(
	    patch_apply(out, c, DEPLOY, "bob", false, T2, &o2, &conf, err, sizeof(err)), -EBUSY);
	ck_assert_ptr_null(o2);
	ck_assert_str_eq(err,
			 "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas");
	ck_assert_int_eq(json_array_size(conf), 1);
	ck_assert_str_eq(json_string_value(at(conf, "0.field")), ".spec.replicas");
	ck_assert_str_eq(json_string_value(at(conf, "0.manager")), "alice");
	json_decref(conf);
	conf = NULL;

	/* with force bob takes replicas over */
	ck_assert_int_eq(patch_apply(out, c, DEPLOY, "bob", true, T2, &o2, &conf, err, sizeof(err)),
			 0);
	ck_assert_int_eq(json_integer_value(at(o2, "spec.replicas")), 5);
	ck_assert(owns(o2, "bob", "Apply", "f:spec", "f:replicas", NULL));
	ck_assert(!owns(o2, "alice", "Apply", "f:spec", "f:replicas", NULL));
	ck_assert(owns(o2, "alice", "Apply", "f:metadata", "f:labels", "f:extra", NULL));
	json_decref(c);
	json_decref(out);

	/* bob stops applying his label: removed, alice's labels stay */
	out = apply_ok(o2, "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":5}}",
		       "bob", false, T2);
	ck_assert_ptr_null(at(out, "metadata.labels.team"));
	ck_assert_str_eq(json_string_value(at(out, "metadata.labels.extra")), "x");
	/* bob drops replicas: nobody else owns it any more, so it is removed */
	out = apply_ok(out, "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"labels\":{\"z\":\"1\"}}}",
		       "bob", false, T2);
	ck_assert_ptr_null(at(out, "spec.replicas"));
	json_decref(out);
}
END_TEST

START_TEST(multiple_conflicts_message)
{
	json_t *out = apply_ok(NULL, cfg_full, "alice", false, T1), *c, *conf = NULL, *o2 = NULL;
	char err[512] = "";

	c = J("{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"labels\":{\"extra\":\"y\"}},"
	      "\"spec\":{\"replicas\":5}}");
	ck_assert_int_eq(
	    patch_apply(out, c, DEPLOY, "bob", false, T2, &o2, &conf, err, sizeof(err)), -EBUSY);
	ck_assert_int_eq(json_array_size(conf), 2);
	ck_assert_msg(strstr(err, "Apply failed with 2 conflicts: conflicts with \"alice\":") ==
			  err,
		      "%s", err);
	ck_assert_msg(strstr(err, "\n- .spec.replicas") &&
			  strstr(err, "\n- .metadata.labels.extra"),
		      "%s", err);
	json_decref(conf);
	json_decref(c);
	json_decref(out);
}
END_TEST

START_TEST(list_map_two_managers)
{
	json_t *out =
	    apply_ok(NULL,
		     "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\"},\"spec\":{\"template\":{\"spec\":"
		     "{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\"}]}}}}",
		     "alice", false, T1);

	out =
	    apply_ok(out,
		     "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\"},\"spec\":{\"template\":{\"spec\":"
		     "{\"containers\":[{\"name\":\"b\",\"image\":\"b:1\"}]}}}}",
		     "bob", false, T2);
	ck_assert_str_eq(json_string_value(at(out, "spec.template.spec.containers.0.name")), "a");
	ck_assert_str_eq(json_string_value(at(out, "spec.template.spec.containers.1.name")), "b");
	ck_assert(owns(out, "alice", "Apply", "f:spec", "f:template", "f:spec", "f:containers",
		       "k:{\"name\":\"a\"}", NULL));
	ck_assert(!owns(out, "alice", "Apply", "f:spec", "f:template", "f:spec", "f:containers",
			"k:{\"name\":\"b\"}", NULL));
	ck_assert(owns(out, "bob", "Apply", "f:spec", "f:template", "f:spec", "f:containers",
		       "k:{\"name\":\"b\"}", "f:image", NULL));
	/* alice updates her container: bob's stays */
	out =
	    apply_ok(out,
		     "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\"},\"spec\":{\"template\":{\"spec\":"
		     "{\"containers\":[{\"name\":\"a\",\"image\":\"a:2\"}]}}}}",
		     "alice", false, T2);
	ck_assert_str_eq(json_string_value(at(out, "spec.template.spec.containers.0.image")),
			 "a:2");
	ck_assert_str_eq(json_string_value(at(out, "spec.template.spec.containers.1.image")),
			 "b:1");
	/* bob stops applying his container: it is removed, alice's stays */
	out = apply_ok(out, "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"labels\":{\"b\":\"1\"}}}",
		       "bob", false, T2);
	ck_assert_int_eq(json_array_size(at(out, "spec.template.spec.containers")), 1);
	ck_assert_str_eq(json_string_value(at(out, "spec.template.spec.containers.0.name")), "a");
	json_decref(out);
}
END_TEST

START_TEST(track_update_moves_ownership)
{
	json_t *obj = J(cfg_full), *old, *c, *conf = NULL, *o2 = NULL;
	char err[512] = "";

	/* kubectl create (client-side apply): an Update entry owning everything */
	ck_assert_int_eq(
	    patch_track_update(NULL, obj, DEPLOY, "kubectl-client-side-apply", "Update", T1), 0);
	ck_assert(owns(obj, "kubectl-client-side-apply", "Update", "f:spec", "f:replicas", NULL));
	ck_assert(owns(obj, "kubectl-client-side-apply", "Update", "f:spec", "f:template", "f:spec",
		       "f:containers", "k:{\"name\":\"main\"}", ".", NULL));
	ck_assert(
	    owns(obj, "kubectl-client-side-apply", "Update", "f:metadata", "f:labels", ".", NULL));
	ck_assert(!owns(obj, "kubectl-client-side-apply", "Update", "f:metadata", "f:name", NULL));

	/* a server-side apply changing replicas conflicts with it */
	c = J("{" DEP_HEAD ",\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":3}}");
	ck_assert_int_eq(
	    patch_apply(obj, c, DEPLOY, "kubectl", false, T2, &o2, &conf, err, sizeof(err)),
	    -EBUSY);
	ck_assert_str_eq(err, "Apply failed with 1 conflict: conflict with "
			      "\"kubectl-client-side-apply\" using apps/v1: .spec.replicas");
	json_decref(conf);
	json_decref(c);

	/* kubectl scale (an Update) takes replicas */
	old = json_deep_copy(obj);
	json_object_set_new(json_object_get(obj, "spec"), "replicas", json_integer(7));
	ck_assert_int_eq(patch_track_update(old, obj, DEPLOY, "kubectl-scale", "Update", T2), 0);
	ck_assert(owns(obj, "kubectl-scale", "Update", "f:spec", "f:replicas", NULL));
	ck_assert(!owns(obj, "kubectl-scale", "Update", "f:metadata", NULL));
	ck_assert(!owns(obj, "kubectl-client-side-apply", "Update", "f:spec", "f:replicas", NULL));
	ck_assert(owns(obj, "kubectl-client-side-apply", "Update", "f:spec", "f:selector", NULL));
	ck_assert_str_eq(
	    json_string_value(json_object_get(entry(obj, "kubectl-scale", "Update"), "time")), T2);
	json_decref(old);

	/* an update removing the label: nobody owns it any more */
	old = json_deep_copy(obj);
	json_object_del(json_object_get(json_object_get(obj, "metadata"), "labels"), "extra");
	ck_assert_int_eq(patch_track_update(old, obj, DEPLOY, "kubectl-label", "Update", T2), 0);
	ck_assert(!owns(obj, "kubectl-client-side-apply", "Update", "f:metadata", "f:labels",
			"f:extra", NULL));
	/* nothing changed or added for kubectl-label: no entry */
	ck_assert_ptr_null(entry(obj, "kubectl-label", "Update"));
	json_decref(old);

	/* an update that changes nothing keeps managedFields as they were */
	old = json_deep_copy(obj);
	ck_assert_int_eq(patch_track_update(old, obj, DEPLOY, "noop", "Update", T2), 0);
	ck_assert(json_equal(json_object_get(json_object_get(old, "metadata"), "managedFields"),
			     json_object_get(json_object_get(obj, "metadata"), "managedFields")));
	json_decref(old);
	json_decref(obj);
}
END_TEST

/* Writes through /scale and /status are kept in entries of their own
 * (kube's managedFields `subresource`), beside the same manager's entry for
 * the object itself; an apply through /status too. */
START_TEST(track_update_subresource_entries)
{
	json_t *obj = J(cfg_full), *old, *o2 = NULL, *c, *mf, *e;
	char err[512] = "";
	size_t i, scale = 0, plain = 0, status = 0, apply_status = 0;

	ck_assert_int_eq(patch_track_update(NULL, obj, DEPLOY, "kubectl", "Update", T1), 0);
	old = json_deep_copy(obj);
	json_object_set_new(json_object_get(obj, "spec"), "replicas", json_integer(9));
	ck_assert_int_eq(patch_track_update_sub(old, obj, DEPLOY, "kubectl", "Update", "scale", T2),
			 0);
	json_decref(old);
	old = json_deep_copy(obj);
	json_object_set_new(obj, "status", json_pack("{s:i}", "replicas", 9));
	ck_assert_int_eq(patch_track_update_sub(old, obj, DEPLOY, "ctrl", "Update", "status", T2),
			 0);
	json_decref(old);
	c = J("{" DEP_HEAD ",\"metadata\":{\"name\":\"d\"},\"status\":{\"readyReplicas\":2}}");
	ck_assert_int_eq(
	    patch_apply_sub(obj, c, DEPLOY, "st", "status", false, T2, &o2, NULL, err, sizeof(err)),
	    0);
	json_decref(c);
	mf = json_object_get(json_object_get(o2, "metadata"), "managedFields");
	json_array_foreach (mf, i, e) {
		const char *m = json_string_value(json_object_get(e, "manager"));
		const char *sub = json_string_value(json_object_get(e, "subresource"));
		const json_t *f = json_object_get(e, "fieldsV1");
		if (!strcmp(m, "kubectl") && sub && !strcmp(sub, "scale")) {
			json_t *want = json_pack("{s:{s:{}}}", "f:spec", "f:replicas");
			scale++;
			ck_assert(json_equal(f, want));
			json_decref(want);
		} else if (!strcmp(m, "kubectl") && !sub) {
			plain++;
			ck_assert_ptr_null(
			    json_object_get(json_object_get(f, "f:spec"), "f:replicas"));
			ck_assert_ptr_nonnull(
			    json_object_get(json_object_get(f, "f:spec"), "f:selector"));
		} else if (!strcmp(m, "ctrl")) {
			status += sub && !strcmp(sub, "status");
		} else if (!strcmp(m, "st")) {
			apply_status +=
			    sub && !strcmp(sub, "status") &&
			    !strcmp(json_string_value(json_object_get(e, "operation")), "Apply");
		}
	}
	ck_assert_uint_eq(scale, 1);
	ck_assert_uint_eq(plain, 1);
	ck_assert_uint_eq(status, 1);
	ck_assert_uint_eq(apply_status, 1);
	json_decref(o2);
	json_decref(obj);
}
END_TEST

START_TEST(apply_after_update_and_before_first_apply)
{
	json_t *live = J(cfg_full), *c, *out = NULL, *conf = NULL;
	char err[512] = "";

	/* an object without managedFields: everything belongs to before-first-apply */
	c = J("{" DEP_HEAD ",\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":4}}");
	ck_assert_int_eq(
	    patch_apply(live, c, DEPLOY, "kubectl", false, T2, &out, &conf, err, sizeof(err)),
	    -EBUSY);
	ck_assert_msg(strstr(err, "\"before-first-apply\" using apps/v1: .spec.replicas") != NULL,
		      "%s", err);
	json_decref(conf);
	conf = NULL;
	/* same value: no conflict, and the labels are not pruned */
	json_decref(c);
	c = J("{" DEP_HEAD ",\"metadata\":{\"name\":\"d\"},\"spec\":{\"replicas\":2}}");
	ck_assert_int_eq(
	    patch_apply(live, c, DEPLOY, "kubectl", false, T2, &out, &conf, err, sizeof(err)), 0);
	ck_assert(owns(out, "before-first-apply", "Update", "f:metadata", "f:labels", NULL));
	ck_assert(owns(out, "kubectl", "Apply", "f:spec", "f:replicas", NULL));
	ck_assert_str_eq(json_string_value(at(out, "metadata.labels.extra")), "x");
	/* the Apply entry sorts before the Update entry */
	ck_assert_str_eq(json_string_value(at(out, "metadata.managedFields.0.operation")), "Apply");
	json_decref(out);
	json_decref(c);
	json_decref(live);
}
END_TEST

START_TEST(unknown_type_and_bad_input)
{
	json_t *c = J(
	    "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},"
	    "\"spec\":{\"items\":[1,2],\"size\":{\"a\":1}}}");
	json_t *out = NULL, *out2 = NULL, *conf = NULL;
	char err[256] = "";

	ck_assert_int_eq(patch_apply(NULL, c, NULL, "m", false, T1, &out, &conf, err, sizeof(err)),
			 0);
	/* lists are atomic, maps granular */
	ck_assert(owns(out, "m", "Apply", "f:spec", "f:items", NULL));
	ck_assert(!owns(out, "m", "Apply", "f:spec", "f:items", "v:1", NULL));
	ck_assert(owns(out, "m", "Apply", "f:spec", "f:size", "f:a", NULL));
	json_decref(c);
	c = J(
	    "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},"
	    "\"spec\":{\"items\":[3]}}");
	ck_assert_int_eq(patch_apply(out, c, "example.com.v1.Widget", "m", false, T2, &out2, &conf,
				     err, sizeof(err)),
			 0);
	ck_assert_int_eq(json_array_size(at(out2, "spec.items")), 1);
	ck_assert_ptr_null(at(out2, "spec.size"));
	json_decref(out2);
	json_decref(c);

	c = J("{\"metadata\":{\"name\":\"w\"}}");
	ck_assert_int_eq(patch_apply(out, c, NULL, "m", false, T2, &out2, &conf, err, sizeof(err)),
			 -EINVAL);
	json_decref(c);
	/* list-map element without its key */
	c = J("{" DEP_HEAD ",\"metadata\":{\"name\":\"d\"},\"spec\":{\"template\":{\"spec\":"
	      "{\"containers\":[{\"image\":\"x\"}]}}}}");
	ck_assert_int_eq(
	    patch_apply(NULL, c, DEPLOY, "m", false, T2, &out2, &conf, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "omits key field \"name\"") != NULL, "%s", err);
	json_decref(c);
	json_decref(out);
}
END_TEST

START_TEST(set_list_two_managers)
{
	/* metadata.finalizers is a set: each manager owns its own values */
	json_t *out = apply_ok(
	    NULL, "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"finalizers\":[\"a.io/x\"]}}",
	    "alice", false, T1);

	out = apply_ok(out,
		       "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"finalizers\":[\"b.io/y\"]}}",
		       "bob", false, T2);
	ck_assert_int_eq(json_array_size(at(out, "metadata.finalizers")), 2);
	ck_assert(owns(out, "alice", "Apply", "f:metadata", "f:finalizers", "v:\"a.io/x\"", NULL));
	ck_assert(owns(out, "bob", "Apply", "f:metadata", "f:finalizers", "v:\"b.io/y\"", NULL));
	out = apply_ok(out, "{" DEP_HEAD ",\"metadata\":{\"name\":\"d\",\"labels\":{\"a\":\"1\"}}}",
		       "alice", false, T2);
	ck_assert_int_eq(json_array_size(at(out, "metadata.finalizers")), 1);
	ck_assert_str_eq(json_string_value(at(out, "metadata.finalizers.0")), "b.io/y");
	json_decref(out);
}
END_TEST

#define POD "k8s.io.api.core.v1.Pod"

/* Objects whose create-time field sets are compared in track_create_*. */
static const struct {
	const char *msg;
	const char *obj;
} create_cases[] = {
    {POD, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
	  "\"namespace\":\"default\",\"uid\":\"u\",\"resourceVersion\":\"\","
	  "\"creationTimestamp\":\"2025-01-01T00:00:00Z\",\"labels\":{\"app\":\"a\","
	  "\"kai.scheduler/queue\":\"q\"},\"annotations\":{\"x\":\"y\"},"
	  "\"finalizers\":[\"b.io/y\",\"a.io/x\",\"b.io/y\"]},"
	  "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"app\","
	  "\"image\":\"i\",\"command\":[\"/bin/app\",\"--port=8080\"],"
	  "\"ports\":[{\"name\":\"http\",\"containerPort\":8080,\"protocol\":\"TCP\"},"
	  "{\"containerPort\":53,\"protocol\":\"UDP\"}],"
	  "\"env\":[{\"name\":\"MODE\",\"value\":\"b\"},{\"name\":\"Q\\\"\\\\\\u00e9\\n\"},"
	  "{\"value\":\"no name\"},{\"name\":\"MODE\",\"valueFrom\":{}}],"
	  "\"resources\":{\"requests\":{\"cpu\":\"1\"},\"limits\":{}}},"
	  "{\"name\":\"app\",\"image\":\"j\"}],\"tolerations\":[{\"key\":\"k\"}],"
	  "\"nodeSelector\":{},\"volumes\":[],\"hostname\":null},"
	  "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\"}]}}"},
    {DEPLOY, "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\","
	     "\"managedFields\":[{\"manager\":\"evil\",\"operation\":\"Update\","
	     "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{}}}]},"
	     "\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{\"a\":\"b\"}},"
	     "\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":"
	     "[{\"name\":\"main\",\"image\":\"x\",\"args\":[]}]}}}}"},
    /* unknown type: maps granular, lists atomic */
    {NULL, "{\"apiVersion\":\"x.io/v1\",\"kind\":\"W\",\"metadata\":{\"name\":\"w\"},"
	   "\"spec\":{\"a\":{\"b\":[1,2],\"c\":{}},\"d\":1.5,\"e\":true}}"},
    /* nothing but server-managed fields: no entry, the client's empty one dropped */
    {POD, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
	  "\"managedFields\":[{\"manager\":\"m\",\"operation\":\"Update\"}]}}"},
    {POD, "{\"metadata\":{}}"},
    /* what the walk drops as it goes: list-maps whose items have no key,
     * then the structs left empty above them; metadata with nothing but
     * managed fields; a managed field the writer made an object */
    {POD, "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"generation\":{\"a\":1},"
	  "\"finalizers\":[]},\"spec\":{\"containers\":[{\"image\":\"x\"}],"
	  "\"securityContext\":{\"sysctls\":[{\"value\":\"1\"}]}},\"status\":{}}"},
    {POD, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"uid\":\"u\"},"
	  "\"spec\":{\"containers\":[{\"image\":\"x\"},{\"name\":null,\"ports\":"
	  "[{\"protocol\":\"TCP\"}]}],\"volumes\":[{\"name\":\"v\"},{\"name\":\"v\","
	  "\"emptyDir\":{}}]}}"},
};

/*
 * A create (old NULL) is tracked in one walk of the object; it must record
 * exactly what the general path records when it compares the object with an
 * empty one ({} as old has no fields and no managers), byte for byte.
 */
START_TEST(track_create_matches_compare)
{
	for (size_t i = 0; i < sizeof(create_cases) / sizeof(*create_cases); i++) {
		json_t *a = J(create_cases[i].obj), *b = J(create_cases[i].obj);
		json_t *empty = json_object();

		ck_assert_int_eq(
		    patch_track_update(NULL, a, create_cases[i].msg, "m", "Update", T1), 0);
		ck_assert_int_eq(
		    patch_track_update(empty, b, create_cases[i].msg, "m", "Update", T1), 0);
		char *sa = json_dumps(a, JSON_COMPACT), *sb = json_dumps(b, JSON_COMPACT);
		ck_assert_msg(strcmp(sa, sb) == 0, "case %zu:\n one walk: %s\n compare:  %s", i, sa,
			      sb);
		free(sa);
		free(sb);
		json_decref(a);
		json_decref(b);
		json_decref(empty);
	}
}
END_TEST

/* For the text only: a repeated list-map item whose fields differ below a
 * shared field (the one walk and the comparison do not agree on these). */
static const char *const create_text_extra =
    "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
    "\"env\":[{\"name\":\"E\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"a\"}}},"
    "{\"name\":\"E\",\"valueFrom\":{\"secretKeyRef\":{\"key\":\"b\"}}},"
    "{\"name\":\"E\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\"}}}]}]}}";

/* The dumps of a and b (kb_json_dump) are the same bytes. */
static void same_dump(const json_t *a, const json_t *b, size_t i, const char *what)
{
	struct kb_buf x = {0}, y = {0};

	ck_assert_int_eq(kb_json_dump(a, &x), 0);
	ck_assert_int_eq(kb_json_dump(b, &y), 0);
	ck_assert_msg(x.len == y.len && memcmp(x.data, y.data, x.len) == 0,
		      "case %zu, %s:\n raw:  %s\n tree: %s", i, what, x.data, y.data);
	kb_buf_free(&x);
	kb_buf_free(&y);
}

/* The fieldsV1 of obj's only managedFields entry, or NULL. */
static json_t *v1_of(const json_t *obj)
{
	json_t *mf = json_object_get(json_object_get(obj, "metadata"), "managedFields");
	return json_object_get(json_array_get(mf, 0), "fieldsV1");
}

/* An update of a copy of created (status.phase changed, spec.x added) by
 * "other", with the managedFields as stored (old = created, obj without
 * them) and as sent back (obj carries them, old has none: the writer's
 * are taken, so they must decode). */
static void update_after(const json_t *created, const char *text, json_t *out[2])
{
	json_t *bare = J(text);

	json_object_del(json_object_get(bare, "metadata"), "managedFields");
	for (int k = 0; k < 2; k++) {
		json_t *obj = kb_json_copy(created);

		if (!k)
			json_object_del(json_object_get(obj, "metadata"), "managedFields");
		json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Running"));
		if (json_is_object(json_object_get(obj, "spec")))
			json_object_set_new(json_object_get(obj, "spec"), "x", json_true());
		ck_assert_int_eq(
		    patch_track_update(k ? bare : created, obj, POD, "other", "Update", T2), 0);
		out[k] = obj;
	}
	json_decref(bare);
}

/*
 * patch_track_create with `raw` records what patch_track_update does for a
 * create, with the fieldsV1 kept as its text: every object dumps to the
 * same bytes as with the tree (kb_json_dump, and copies made by
 * kb_json_copy and json_deep_copy), the text is json_dumps' of the tree,
 * and a later update reads the ownership from the text as from the tree.
 * Without `raw`, or with managedFields the writer sent, there is no raw
 * value.
 */
START_TEST(track_create_raw_is_the_tree)
{
	size_t ncases = sizeof(create_cases) / sizeof(*create_cases);

	for (size_t i = 0; i <= ncases; i++) {
		const char *msg = i < ncases ? create_cases[i].msg : POD;
		const char *obj = i < ncases ? create_cases[i].obj : create_text_extra;
		json_t *a = J(obj), *b = J(obj), *c = J(obj);
		size_t len;

		ck_assert_int_eq(patch_track_create(a, msg, "m", T1, true), 0);
		ck_assert_int_eq(patch_track_update(NULL, b, msg, "m", "Update", T1), 0);
		ck_assert_int_eq(patch_track_create(c, msg, "m", T1, false), 0);
		ck_assert_msg(json_equal(c, b), "case %zu: not what patch_track_update records", i);
		ck_assert_ptr_null(kb_json_raw_text(v1_of(c), &len));
		same_dump(a, b, i, "the object");

		json_t *v1 = v1_of(a);
		const char *text = kb_json_raw_text(v1, &len);
		bool writers = strstr(obj, "managedFields") != NULL;
		ck_assert_msg(writers || !v1 || text, "case %zu: the fieldsV1 is not raw", i);
		if (text) {
			char *want = json_dumps(v1_of(b), JSON_COMPACT);
			ck_assert_msg(len == strlen(want) && memcmp(text, want, len) == 0,
				      "case %zu:\n text: %.*s\n dump: %s", i, (int)len, text, want);
			free(want);
		}

		json_t *ka = kb_json_copy(a), *da = json_deep_copy(a);
		ck_assert_ptr_nonnull(ka);
		ck_assert_ptr_nonnull(da);
		ck_assert(!text || kb_json_raw_text(v1_of(ka), &len));
		ck_assert(!text || kb_json_raw_text(v1_of(da), &len));
		same_dump(ka, b, i, "kb_json_copy");
		same_dump(da, b, i, "json_deep_copy");

		json_t *ua[2], *ub[2];
		update_after(a, obj, ua);
		update_after(b, obj, ub);
		for (int k = 0; k < 2; k++) {
			ck_assert_msg(json_equal(ua[k], ub[k]), "case %zu: update %d differs", i,
				      k);
			same_dump(ua[k], ub[k], i, k ? "update, sent back" : "update, stored");
			json_decref(ua[k]);
			json_decref(ub[k]);
		}
		json_decref(ka);
		json_decref(da);
		json_decref(a);
		json_decref(b);
		json_decref(c);
	}
}
END_TEST

/* What kube-apiserver records for a pod created with kubectl create: the
 * set-valued and list-map paths, "." beside children, leaves as {}, keys
 * sorted, no server-managed metadata. */
START_TEST(track_create_pod_fields)
{
	json_t *pod = J(create_cases[0].obj);

	ck_assert_int_eq(patch_track_update(NULL, pod, POD, "kubectl-create", "Update", T1), 0);
	json_t *e = entry(pod, "kubectl-create", "Update");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(json_string_value(json_object_get(e, "apiVersion")), "v1");
	ck_assert_str_eq(json_string_value(json_object_get(e, "time")), T1);
	ck_assert_str_eq(json_string_value(json_object_get(e, "fieldsType")), "FieldsV1");
	ck_assert(owns(pod, "kubectl-create", "Update", "f:metadata", "f:finalizers",
		       "v:\"a.io/x\"", NULL));
	ck_assert(owns(pod, "kubectl-create", "Update", "f:metadata", "f:labels", ".", NULL));
	ck_assert(!owns(pod, "kubectl-create", "Update", "f:metadata", "f:name", NULL));
	ck_assert(!owns(pod, "kubectl-create", "Update", "f:metadata", "f:uid", NULL));
	ck_assert(!owns(pod, "kubectl-create", "Update", "f:apiVersion", NULL));
	ck_assert(owns(pod, "kubectl-create", "Update", "f:spec", "f:containers",
		       "k:{\"name\":\"app\"}", "f:env", "k:{\"name\":\"Q\\\"\\\\\u00e9\\n\"}", ".",
		       NULL));
	ck_assert(owns(pod, "kubectl-create", "Update", "f:spec", "f:containers",
		       "k:{\"name\":\"app\"}", "f:ports",
		       "k:{\"containerPort\":53,\"protocol\":\"UDP\"}", "f:protocol", NULL));
	ck_assert(owns(pod, "kubectl-create", "Update", "f:spec", "f:tolerations", NULL));
	ck_assert(!owns(pod, "kubectl-create", "Update", "f:spec", "f:tolerations",
			"k:{\"key\":\"k\"}", NULL));
	char *v1 = json_dumps(json_object_get(e, "fieldsV1"), JSON_COMPACT);
	ck_assert_msg(strstr(v1, "{\"f:metadata\":{\"f:annotations\":{\".\":{},\"f:x\":{}},") == v1,
		      "%s", v1);
	ck_assert_msg(
	    strstr(v1, "\"f:labels\":{\".\":{},\"f:app\":{},\"f:kai.scheduler/queue\":{}}"), "%s",
	    v1);
	free(v1);
	json_decref(pod);

	/* only server-managed fields: no entry at all */
	pod = J(create_cases[3].obj);
	ck_assert_int_eq(patch_track_update(NULL, pod, POD, "kubectl-create", "Update", T1), 0);
	ck_assert_ptr_null(json_object_get(json_object_get(pod, "metadata"), "managedFields"));
	json_decref(pod);
}
END_TEST

#define CM_HEAD      "\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\""
#define CM           "k8s.io.api.core.v1.ConfigMap"
#define LAST_APPLIED "kubectl.kubernetes.io/last-applied-configuration"

/* A ConfigMap as `kubectl apply` (client-side) leaves it: data a=1, b=2,
 * the last-applied annotation, the fields owned by kubectl-client-side-apply. */
static json_t *csa_configmap(void)
{
	json_t *cm = J("{" CM_HEAD ",\"metadata\":{\"name\":\"m\",\"namespace\":\"default\","
		       "\"annotations\":{\"" LAST_APPLIED "\":\"{\\\"apiVersion\\\":\\\"v1\\\","
		       "\\\"data\\\":{\\\"a\\\":\\\"1\\\",\\\"b\\\":\\\"2\\\"},\\\"kind\\\":"
		       "\\\"ConfigMap\\\",\\\"metadata\\\":{\\\"annotations\\\":{},\\\"name\\\":"
		       "\\\"m\\\",\\\"namespace\\\":\\\"default\\\"}}\\n\"}},"
		       "\"data\":{\"a\":\"1\",\"b\":\"2\"}}");

	ck_assert_int_eq(
	    patch_track_update(NULL, cm, CM, "kubectl-client-side-apply", "Update", T1), 0);
	return cm;
}

/* kube's lastAppliedManager: "kubectl" takes over, without force, the
 * fields of the last-applied configuration that live still holds; the
 * annotation then follows the applied configuration (lastAppliedUpdater). */
START_TEST(kubectl_takes_over_client_side_apply)
{
	json_t *live = csa_configmap(), *c, *out = NULL, *conf = NULL;
	const char *cfg = "{" CM_HEAD ",\"metadata\":{\"name\":\"m\",\"namespace\":\"default\"},"
			  "\"data\":{\"a\":\"10\",\"b\":\"2\"}}";
	char err[512] = "";

	c = J(cfg);
	/* another manager conflicts as before */
	ck_assert_int_eq(patch_apply(live, c, CM, "helm", false, T2, &out, &conf, err, sizeof(err)),
			 -EBUSY);
	ck_assert_msg(strstr(err, "kubectl-client-side-apply") != NULL, "%s", err);
	json_decref(conf);
	conf = NULL;
	ck_assert_int_eq(
	    patch_apply(live, c, CM, "kubectl", false, T2, &out, &conf, err, sizeof(err)), 0);
	ck_assert_str_eq(json_string_value(at(out, "data.a")), "10");
	ck_assert(owns(out, "kubectl", "Apply", "f:data", "f:a", NULL));
	ck_assert(!owns(out, "kubectl-client-side-apply", "Update", "f:data", "f:a", NULL));
	ck_assert_str_eq(
	    json_string_value(json_object_get(at(out, "metadata.annotations"), LAST_APPLIED)),
	    "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"10\",\"b\":\"2\"},\"kind\":"
	    "\"ConfigMap\",\"metadata\":{\"name\":\"m\",\"namespace\":\"default\"}}\n");
	json_decref(out);
	out = NULL;
	json_decref(c);

	/* a field live changed since (not the last-applied value) stays a conflict */
	json_object_set_new(json_object_get(live, "data"), "b", json_string("3"));
	c = J("{" CM_HEAD ",\"metadata\":{\"name\":\"m\"},\"data\":{\"a\":\"10\",\"b\":\"4\"}}");
	ck_assert_int_eq(
	    patch_apply(live, c, CM, "kubectl", false, T2, &out, &conf, err, sizeof(err)), -EBUSY);
	ck_assert_msg(strstr(err, "Apply failed with 1 conflict: ") && strstr(err, ".data.b"), "%s",
		      err);
	json_decref(conf);
	json_decref(c);
	json_decref(live);
}
END_TEST

/* The annotation is Go's json.Encoder output: HTML characters escaped. */
START_TEST(last_applied_is_go_json)
{
	json_t *live = csa_configmap(), *c, *out = NULL, *conf = NULL;
	char err[512] = "";

	c = J("{" CM_HEAD ",\"metadata\":{\"name\":\"m\"},\"data\":{\"a\":\"1\",\"b\":\"2\","
	      "\"h\":\"<i>&\"}}");
	ck_assert_int_eq(
	    patch_apply(live, c, CM, "kubectl", false, T2, &out, &conf, err, sizeof(err)), 0);
	ck_assert_str_eq(
	    json_string_value(json_object_get(at(out, "metadata.annotations"), LAST_APPLIED)),
	    "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\",\"b\":\"2\",\"h\":"
	    "\"\\u003ci\\u003e\\u0026\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	    "\"m\"}}\n");
	json_decref(out);
	json_decref(c);
	json_decref(live);
}
END_TEST

/* kube's FieldManager.Update: the writer's managedFields replace the
 * stored ones; [{}] clears them; a subresource write keeps the stored. */
START_TEST(track_update_takes_client_managed_fields)
{
	json_t *old = csa_configmap(), *obj = json_deep_copy(old);
	json_t *mf = J("[{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"apiVersion\":\"v1\","
		       "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:data\":{\"f:a\":{},"
		       "\"f:b\":{}}}}]");

	json_object_set(json_object_get(obj, "metadata"), "managedFields", mf);
	ck_assert_int_eq(patch_track_update(old, obj, CM, "kubectl", "Update", T2), 0);
	ck_assert(owns(obj, "kubectl", "Apply", "f:data", "f:b", NULL));
	ck_assert_ptr_null(entry(obj, "kubectl-client-side-apply", "Update"));
	json_decref(obj);

	obj = json_deep_copy(old);
	json_object_set_new(json_object_get(obj, "metadata"), "managedFields", J("[{}]"));
	ck_assert_int_eq(patch_track_update(old, obj, CM, "kubectl-patch", "Update", T2), 0);
	ck_assert_ptr_null(at(obj, "metadata.managedFields"));
	json_decref(obj);

	/* [] resets them too (isResetManagedFields) */
	obj = json_deep_copy(old);
	json_object_set_new(json_object_get(obj, "metadata"), "managedFields", json_array());
	ck_assert_int_eq(patch_track_update(old, obj, CM, "kubectl-patch", "Update", T2), 0);
	ck_assert_ptr_null(at(obj, "metadata.managedFields"));
	json_decref(obj);

	/* entries kube cannot decode (no apiVersion) keep the stored ones */
	obj = json_deep_copy(old);
	json_object_set_new(json_object_get(obj, "metadata"), "managedFields",
			    J("[{\"manager\":\"x\",\"operation\":\"Update\","
			      "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{}}]"));
	ck_assert_int_eq(patch_track_update(old, obj, CM, "kubectl-patch", "Update", T2), 0);
	ck_assert_ptr_nonnull(entry(obj, "kubectl-client-side-apply", "Update"));
	ck_assert_ptr_null(entry(obj, "x", "Update"));
	json_decref(obj);

	obj = json_deep_copy(old);
	json_object_set(json_object_get(obj, "metadata"), "managedFields", mf);
	ck_assert_int_eq(patch_track_update_sub(old, obj, CM, "kubectl", "Update", "status", T2),
			 0);
	ck_assert_ptr_nonnull(entry(obj, "kubectl-client-side-apply", "Update"));
	ck_assert_ptr_null(entry(obj, "kubectl", "Apply"));
	json_decref(obj);
	json_decref(mf);
	json_decref(old);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/ssa");
	TCase *tc = tcase_create("apply");

	tcase_add_test(tc, first_apply_creates_entry);
	tcase_add_test(tc, reapply_removes_dropped_fields);
	tcase_add_test(tc, two_managers_conflict_and_force);
	tcase_add_test(tc, multiple_conflicts_message);
	tcase_add_test(tc, list_map_two_managers);
	tcase_add_test(tc, apply_after_update_and_before_first_apply);
	tcase_add_test(tc, unknown_type_and_bad_input);
	tcase_add_test(tc, set_list_two_managers);
	tcase_add_test(tc, kubectl_takes_over_client_side_apply);
	tcase_add_test(tc, last_applied_is_go_json);
	suite_add_tcase(s, tc);
	tc = tcase_create("update");
	tcase_add_test(tc, track_update_moves_ownership);
	tcase_add_test(tc, track_update_subresource_entries);
	tcase_add_test(tc, track_create_matches_compare);
	tcase_add_test(tc, track_create_raw_is_the_tree);
	tcase_add_test(tc, track_create_pod_fields);
	tcase_add_test(tc, track_update_takes_client_managed_fields);
	suite_add_tcase(s, tc);
	return s;
}
