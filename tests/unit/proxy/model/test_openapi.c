/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of proxy/openapi: the /openapi/v3 root and group/version documents
 * have what kubectl needs (kubectl-wire.md section 7): a PATCH operation per
 * GVK with the fieldValidation parameter, the Namespace PATCH op in api/v1,
 * and components.schemas with x-kubernetes-group-version-kind for explain.
 */
#include <check.h>
#include <string.h>
#include <time.h>

#include "proxy/model/openapi.h"
#include "lib/util.h"
#include "proxy/model/types.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

/* A small fake resource table. */
static const struct proxy_subresource pod_subs[] = {
    {"status", "", "v1", "Pod", VERB_GET | VERB_PATCH | VERB_UPDATE},
    {NULL, NULL, NULL, NULL, 0},
};
static struct proxy_resource fake[] = {
    {.group = "",
     .version = "v1",
     .kind = "Namespace",
     .list_kind = "NamespaceList",
     .plural = "namespaces",
     .singular = "namespace",
     .namespaced = false,
     .verbs = VERB_GET | VERB_LIST | VERB_CREATE | VERB_DELETE,
     .proto = "k8s.io.api.core.v1.Namespace"},
    {.group = "",
     .version = "v1",
     .kind = "Pod",
     .list_kind = "PodList",
     .plural = "pods",
     .singular = "pod",
     .namespaced = true,
     .verbs = VERBS_ALL,
     .subresources = pod_subs,
     .proto = "k8s.io.api.core.v1.Pod"},
    {.group = "apps",
     .version = "v1",
     .kind = "Deployment",
     .list_kind = "DeploymentList",
     .plural = "deployments",
     .singular = "deployment",
     .namespaced = true,
     .verbs = VERBS_ALL,
     .proto = "k8s.io.api.apps.v1.Deployment"},
    {.group = "example.com",
     .version = "v1",
     .kind = "Widget",
     .list_kind = "WidgetList",
     .plural = "widgets",
     .singular = "widget",
     .namespaced = true,
     .verbs = VERBS_ALL},
};
static size_t nfake = 3;

static size_t fake_count(void)
{
	return nfake;
}

static const struct proxy_resource *fake_at(size_t i)
{
	return i < nfake ? &fake[i] : NULL;
}

static void setup(void)
{
	nfake = 3;
	openapi_set_resources(fake_count, fake_at);
}

static void teardown(void)
{
	openapi_set_resources(NULL, NULL);
}

static const char *str_at(const json_t *root, const char *const *keys)
{
	const json_t *v = root;
	for (; *keys && v; keys++)
		v = json_object_get(v, *keys);
	return json_string_value(v);
}

START_TEST(root_lists_served_gvs)
{
	json_t *root = openapi_v3_root();
	json_t *paths = json_object_get(root, "paths");
	ck_assert_uint_eq(json_object_size(paths), 2);
	const char *u =
	    str_at(root, (const char *[]){"paths", "api/v1", "serverRelativeURL", NULL});
	ck_assert_ptr_nonnull(u);
	ck_assert(strncmp(u, "/openapi/v3/api/v1?hash=", 24) == 0);
	ck_assert_uint_gt(strlen(u), 24);
	const char *a =
	    str_at(root, (const char *[]){"paths", "apis/apps/v1", "serverRelativeURL", NULL});
	ck_assert(strncmp(a, "/openapi/v3/apis/apps/v1?hash=", 30) == 0);
	ck_assert_ptr_null(json_object_get(paths, "apis/batch/v1"));
	char before[128];
	snprintf(before, sizeof(before), "%s", a);

	/* adding a CRD row adds its GV, and the existing hashes stay */
	nfake = 4;
	openapi_invalidate();
	json_t *root2 = openapi_v3_root();
	ck_assert_uint_eq(json_object_size(json_object_get(root2, "paths")), 3);
	ck_assert_str_eq(
	    str_at(root2, (const char *[]){"paths", "apis/apps/v1", "serverRelativeURL", NULL}),
	    before);
	ck_assert_ptr_nonnull(
	    json_object_get(json_object_get(root2, "paths"), "apis/example.com/v1"));
	json_decref(root);
	json_decref(root2);
}
END_TEST

/* Finds the PATCH op for a GVK as kubectl's query_param_verifier_v3 does. */
static json_t *patch_op_for(json_t *doc, const char *g, const char *v, const char *k)
{
	const char *path;
	json_t *item;
	json_object_foreach (json_object_get(doc, "paths"), path, item) {
		json_t *op = json_object_get(item, "patch");
		json_t *gvk = json_object_get(op, "x-kubernetes-group-version-kind");
		if (json_is_object(gvk) &&
		    strcmp(json_string_value(json_object_get(gvk, "group")), g) == 0 &&
		    strcmp(json_string_value(json_object_get(gvk, "version")), v) == 0 &&
		    strcmp(json_string_value(json_object_get(gvk, "kind")), k) == 0)
			return op;
	}
	return NULL;
}

static bool has_param(json_t *op, const char *name)
{
	size_t i;
	json_t *p;
	json_array_foreach (json_object_get(op, "parameters"), i, p)
		if (strcmp(json_string_value(json_object_get(p, "name")), name) == 0)
			return true;
	return false;
}

START_TEST(core_paths)
{
	json_t *doc = openapi_v3_gv("", "v1");
	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "openapi")), "3.0.0");
	json_t *paths = json_object_get(doc, "paths");
	json_t *pod = json_object_get(paths, "/api/v1/namespaces/{namespace}/pods/{name}");
	ck_assert_ptr_nonnull(pod);
	ck_assert_ptr_nonnull(json_object_get(pod, "get"));
	ck_assert_ptr_nonnull(json_object_get(pod, "put"));
	ck_assert_ptr_nonnull(json_object_get(pod, "delete"));
	json_t *op = patch_op_for(doc, "", "v1", "Pod");
	ck_assert_ptr_nonnull(op);
	ck_assert(has_param(op, "fieldValidation"));
	ck_assert(has_param(op, "dryRun"));
	ck_assert(has_param(op, "fieldManager"));
	json_t *content = json_object_get(json_object_get(op, "requestBody"), "content");
	ck_assert_ptr_nonnull(json_object_get(content, "application/strategic-merge-patch+json"));
	ck_assert_ptr_nonnull(json_object_get(content, "application/apply-patch+yaml"));
	ck_assert_ptr_nonnull(json_object_get(content, "application/merge-patch+json"));
	/* fieldValidation's schema as kube-apiserver writes it */
	size_t i;
	json_t *p;
	json_array_foreach (json_object_get(op, "parameters"), i, p) {
		if (strcmp(json_string_value(json_object_get(p, "name")), "fieldValidation"))
			continue;
		ck_assert_str_eq(json_string_value(json_object_get(p, "in")), "query");
		json_t *s = json_object_get(p, "schema");
		ck_assert_str_eq(json_string_value(json_object_get(s, "type")), "string");
		ck_assert(json_is_true(json_object_get(s, "uniqueItems")));
	}
	/* the Namespace PATCH op exists even though the fake row lacks the verb */
	json_t *ns = patch_op_for(doc, "", "v1", "Namespace");
	ck_assert_ptr_nonnull(ns);
	ck_assert(has_param(ns, "fieldValidation"));
	ck_assert_ptr_nonnull(
	    json_object_get(json_object_get(paths, "/api/v1/namespaces/{name}"), "patch"));
	/* collections */
	json_t *coll = json_object_get(paths, "/api/v1/namespaces/{namespace}/pods");
	ck_assert_ptr_nonnull(json_object_get(coll, "get"));
	ck_assert_ptr_nonnull(json_object_get(coll, "post"));
	ck_assert(has_param(json_object_get(coll, "post"), "fieldValidation"));
	ck_assert_ptr_nonnull(
	    json_object_get(paths, "/api/v1/namespaces/{namespace}/pods/{name}/status"));
	/* apps/v1 deployments are not in the core document */
	ck_assert_ptr_null(patch_op_for(doc, "apps", "v1", "Deployment"));
	ck_assert_ptr_null(openapi_v3_gv("batch", "v1"));
	json_decref(doc);
}
END_TEST

static json_t *schema_of(json_t *doc, const char *name)
{
	return json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"),
			       name);
}

static json_t *prop(json_t *schema, const char *name)
{
	return json_object_get(json_object_get(schema, "properties"), name);
}

static const char *ref_of(json_t *p)
{
	return json_string_value(
	    json_object_get(json_array_get(json_object_get(p, "allOf"), 0), "$ref"));
}

START_TEST(core_schemas)
{
	json_t *doc = openapi_v3_gv("", "v1");
	json_t *pod = schema_of(doc, "io.k8s.api.core.v1.Pod");
	ck_assert_ptr_nonnull(pod);
	ck_assert_str_eq(json_string_value(json_object_get(pod, "type")), "object");
	ck_assert_ptr_nonnull(json_object_get(pod, "description"));
	json_t *gvk = json_array_get(json_object_get(pod, "x-kubernetes-group-version-kind"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(gvk, "group")), "");
	ck_assert_str_eq(json_string_value(json_object_get(gvk, "version")), "v1");
	ck_assert_str_eq(json_string_value(json_object_get(gvk, "kind")), "Pod");
	ck_assert_str_eq(json_string_value(json_object_get(prop(pod, "apiVersion"), "type")),
			 "string");
	ck_assert_str_eq(json_string_value(json_object_get(prop(pod, "kind"), "type")), "string");
	ck_assert_str_eq(ref_of(prop(pod, "spec")),
			 "#/components/schemas/io.k8s.api.core.v1.PodSpec");
	ck_assert_str_eq(ref_of(prop(pod, "metadata")),
			 "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");

	/* pod.spec.containers: a list map keyed by name, of Container */
	json_t *spec = schema_of(doc, "io.k8s.api.core.v1.PodSpec");
	json_t *cs = prop(spec, "containers");
	ck_assert_str_eq(json_string_value(json_object_get(cs, "type")), "array");
	ck_assert_str_eq(ref_of(json_object_get(cs, "items")),
			 "#/components/schemas/io.k8s.api.core.v1.Container");
	ck_assert_str_eq(json_string_value(json_object_get(cs, "x-kubernetes-list-type")), "map");
	ck_assert_str_eq(
	    json_string_value(json_array_get(json_object_get(cs, "x-kubernetes-list-map-keys"), 0)),
	    "name");
	ck_assert_str_eq(json_string_value(json_object_get(cs, "x-kubernetes-patch-strategy")),
			 "merge");
	ck_assert_str_eq(json_string_value(json_object_get(cs, "x-kubernetes-patch-merge-key")),
			 "name");
	json_t *ns = prop(spec, "nodeSelector");
	ck_assert_str_eq(json_string_value(json_object_get(ns, "type")), "object");
	ck_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(ns, "additionalProperties"), "type")),
	    "string");
	json_t *tgps = prop(spec, "terminationGracePeriodSeconds");
	ck_assert_str_eq(json_string_value(json_object_get(tgps, "format")), "int64");

	/* Container fields, scalars and specials */
	json_t *c = schema_of(doc, "io.k8s.api.core.v1.Container");
	ck_assert_str_eq(json_string_value(json_object_get(prop(c, "image"), "type")), "string");
	ck_assert_str_eq(json_string_value(json_object_get(prop(c, "tty"), "type")), "boolean");
	json_t *t = schema_of(doc, "io.k8s.apimachinery.pkg.apis.meta.v1.Time");
	ck_assert_str_eq(json_string_value(json_object_get(t, "format")), "date-time");
	json_t *ios = schema_of(doc, "io.k8s.apimachinery.pkg.util.intstr.IntOrString");
	ck_assert(json_is_true(json_object_get(ios, "x-kubernetes-int-or-string")));
	json_t *q = schema_of(doc, "io.k8s.apimachinery.pkg.api.resource.Quantity");
	ck_assert_str_eq(json_string_value(json_object_get(q, "type")), "string");
	/* inline structs are flattened: Volume has configMap, not volumeSource */
	json_t *vol = schema_of(doc, "io.k8s.api.core.v1.Volume");
	ck_assert_ptr_nonnull(prop(vol, "configMap"));
	ck_assert_ptr_null(prop(vol, "volumeSource"));
	ck_assert_ptr_nonnull(prop(schema_of(doc, "io.k8s.api.core.v1.Probe"), "httpGet"));
	/* the list kind */
	json_t *pl = schema_of(doc, "io.k8s.api.core.v1.PodList");
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_array_get(json_object_get(pl, "x-kubernetes-group-version-kind"), 0), "kind")),
	    "PodList");
	/* no Deployment here */
	ck_assert_ptr_null(schema_of(doc, "io.k8s.api.apps.v1.Deployment"));
	json_decref(doc);
}
END_TEST

START_TEST(crd_rows)
{
	nfake = 4;
	fake[3].schema =
	    json_pack("{s:s, s:{s:{s:s, s:{s:{s:s}}}}}", "type", "object", "properties", "spec",
		      "type", "object", "properties", "size", "type", "integer");
	json_t *doc = openapi_v3_gv("example.com", "v1");
	ck_assert_ptr_nonnull(doc);
	json_t *w = schema_of(doc, "com.example.v1.Widget");
	ck_assert_ptr_nonnull(w);
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_array_get(json_object_get(w, "x-kubernetes-group-version-kind"), 0), "kind")),
	    "Widget");
	ck_assert_ptr_nonnull(prop(prop(w, "spec"), "size"));
	ck_assert_ptr_nonnull(prop(w, "apiVersion"));
	ck_assert_str_eq(ref_of(prop(w, "metadata")),
			 "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
	ck_assert_ptr_nonnull(schema_of(doc, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
	json_t *op = patch_op_for(doc, "example.com", "v1", "Widget");
	ck_assert_ptr_nonnull(op);
	ck_assert(has_param(op, "fieldValidation"));
	/* no strategic merge patch for custom resources */
	json_t *content = json_object_get(json_object_get(op, "requestBody"), "content");
	ck_assert_ptr_null(json_object_get(content, "application/strategic-merge-patch+json"));
	ck_assert_ptr_nonnull(
	    json_object_get(json_object_get(doc, "paths"),
			    "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"));
	/* the row's schema itself is not modified */
	ck_assert_ptr_null(json_object_get(fake[3].schema, "x-kubernetes-group-version-kind"));
	json_decref(doc);
	json_decref(fake[3].schema);
	fake[3].schema = NULL;
}
END_TEST

START_TEST(text_cache)
{
	size_t len = 0, len2 = 0;
	const char *t = openapi_v3_gv_text("apps", "v1", &len);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(strlen(t), len);
	json_t *doc = json_loadb(t, len, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	ck_assert_ptr_nonnull(patch_op_for(doc, "apps", "v1", "Deployment"));
	ck_assert_ptr_nonnull(schema_of(doc, "io.k8s.api.apps.v1.Deployment"));
	ck_assert_ptr_nonnull(schema_of(doc, "io.k8s.api.core.v1.PodSpec"));
	json_decref(doc);
	ck_assert_ptr_eq(openapi_v3_gv_text("apps", "v1", &len2), t);
	ck_assert_ptr_null(openapi_v3_gv_text("nope", "v1", &len2));
	char name[64];
	openapi_schema_name("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta", name, sizeof(name));
	ck_assert_str_eq(name, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
}
END_TEST

/* The real resource table: every GV renders, and core has what kubectl needs. */
START_TEST(real_table)
{
	openapi_set_resources(NULL, NULL);
	json_t *root = openapi_v3_root();
	const char *key;
	json_t *v;
	ck_assert_ptr_nonnull(json_object_get(json_object_get(root, "paths"), "api/v1"));
	json_object_foreach (json_object_get(root, "paths"), key, v) {
		size_t len;
		const char *g = "", *ver;
		char buf[256];
		snprintf(buf, sizeof(buf), "%s", key);
		char *slash = strrchr(buf, '/');
		*slash = '\0';
		ver = slash + 1;
		if (strncmp(buf, "apis/", 5) == 0)
			g = buf + 5;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		const char *text = openapi_v3_gv_text(g, ver, &len);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ck_assert_msg(text != NULL, "%s", key);
		fprintf(stderr, "openapi %s: %zu bytes in %.1f ms\n", key, len,
			(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	}
	json_t *doc = openapi_v3_gv("", "v1");
	ck_assert_ptr_nonnull(patch_op_for(doc, "", "v1", "Namespace"));
	ck_assert_ptr_nonnull(patch_op_for(doc, "", "v1", "Pod"));
	json_decref(doc);
	json_decref(root);
}
END_TEST

/* ---- OpenAPI v2 ---- */

static json_t *def_of(json_t *doc, const char *name)
{
	return json_object_get(json_object_get(doc, "definitions"), name);
}

/* Every $ref of v must name a definition and no v3 allOf wrapper may remain:
 * kubectl's proto parser fails the whole document otherwise. */
static void check_refs(json_t *doc, json_t *v, int *nrefs)
{
	const char *k;
	json_t *c;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach (v, i, c)
			check_refs(doc, c, nrefs);
		return;
	}
	if (!json_is_object(v))
		return;
	json_object_foreach (v, k, c) {
		if (strcmp(k, "$ref") == 0) {
			const char *ref = json_string_value(c);
			ck_assert_msg(strncmp(ref, "#/definitions/", 14) == 0, "%s", ref);
			ck_assert_msg(def_of(doc, ref + 14) != NULL, "dangling %s", ref);
			ck_assert_msg(json_object_get(v, "type") == NULL, "typed ref %s", ref);
			(*nrefs)++;
		}
		ck_assert_msg(strcmp(k, "allOf") != 0 && strcmp(k, "requestBody") != 0 &&
				  strcmp(k, "components") != 0,
			      "v3 key %s", k);
		check_refs(doc, c, nrefs);
	}
}

static json_t *param_named(json_t *op, const char *name)
{
	size_t i;
	json_t *p;
	json_array_foreach (json_object_get(op, "parameters"), i, p)
		if (strcmp(json_string_value(json_object_get(p, "name")), name) == 0)
			return p;
	return NULL;
}

START_TEST(v2_document)
{
	json_t *doc = openapi_v2_doc();
	int nrefs = 0;

	ck_assert_str_eq(json_string_value(json_object_get(doc, "swagger")), "2.0");
	check_refs(doc, doc, &nrefs);
	ck_assert_int_gt(nrefs, 50);
	/* definitions are kube's names with the GVK list explain/validation look up */
	json_t *pod = def_of(doc, "io.k8s.api.core.v1.Pod");
	json_t *gvk = json_array_get(json_object_get(pod, "x-kubernetes-group-version-kind"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(gvk, "kind")), "Pod");
	ck_assert_str_eq(json_string_value(json_object_get(gvk, "group")), "");
	ck_assert_str_eq(json_string_value(json_object_get(prop(pod, "spec"), "$ref")),
			 "#/definitions/io.k8s.api.core.v1.PodSpec");
	ck_assert_ptr_nonnull(def_of(doc, "io.k8s.api.apps.v1.Deployment"));
	json_t *cs = prop(def_of(doc, "io.k8s.api.core.v1.PodSpec"), "containers");
	ck_assert_str_eq(json_string_value(json_object_get(cs, "x-kubernetes-patch-merge-key")),
			 "name");
	ck_assert_str_eq(json_string_value(json_object_get(cs, "x-kubernetes-patch-strategy")),
			 "merge");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(cs, "items"), "$ref")),
			 "#/definitions/io.k8s.api.core.v1.Container");

	/* the PATCH op: GVK object, action, fieldValidation inline, body parameter */
	json_t *item = json_object_get(json_object_get(doc, "paths"),
				       "/apis/apps/v1/namespaces/{namespace}/deployments/{name}");
	json_t *op = json_object_get(item, "patch");
	ck_assert_ptr_nonnull(op);
	ck_assert_str_eq(json_string_value(json_object_get(op, "x-kubernetes-action")), "patch");
	ck_assert_str_eq(json_string_value(json_object_get(
			     json_object_get(op, "x-kubernetes-group-version-kind"), "kind")),
			 "Deployment");
	json_t *fv = param_named(op, "fieldValidation");
	ck_assert_str_eq(json_string_value(json_object_get(fv, "in")), "query");
	ck_assert_str_eq(json_string_value(json_object_get(fv, "type")), "string");
	ck_assert_ptr_null(json_object_get(fv, "schema"));
	json_t *body = param_named(op, "body");
	ck_assert_str_eq(json_string_value(json_object_get(body, "in")), "body");
	ck_assert(json_is_true(json_object_get(body, "required")));
	bool smp = false;
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(op, "consumes"), i, c)
		smp = smp ||
		      strcmp(json_string_value(c), "application/strategic-merge-patch+json") == 0;
	ck_assert(smp);
	/* PUT's body and the 200 response are the kind */
	json_t *put = json_object_get(item, "put");
	ck_assert_str_eq(json_string_value(json_object_get(
			     json_object_get(param_named(put, "body"), "schema"), "$ref")),
			 "#/definitions/io.k8s.api.apps.v1.Deployment");
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_object_get(json_object_get(json_object_get(put, "responses"), "200"),
				"schema"),
		"$ref")),
	    "#/definitions/io.k8s.api.apps.v1.Deployment");
	/* path parameters inline */
	json_t *pp = json_array_get(json_object_get(item, "parameters"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(pp, "in")), "path");
	ck_assert_str_eq(json_string_value(json_object_get(pp, "type")), "string");
	ck_assert(json_is_true(json_object_get(pp, "required")));
	json_decref(doc);
}
END_TEST

/* CRD schemas get kube's v2 pruning; the CRD's GV appears after invalidation. */
START_TEST(v2_crd)
{
	size_t len;
	const char *t = openapi_v2_text(&len);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_null(strstr(t, "com.example.v1.Widget"));
	nfake = 4;
	fake[3].schema = json_loads(
	    "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{"
	    "\"size\":{\"type\":\"integer\",\"description\":\"How big.\"},"
	    "\"color\":{\"type\":\"string\",\"nullable\":true},"
	    "\"port\":{\"x-kubernetes-int-or-string\":true,\"anyOf\":[{\"type\":\"integer\"},"
	    "{\"type\":\"string\"}]},"
	    "\"extra\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true,"
	    "\"properties\":{\"a\":{\"type\":\"string\"}}},"
	    "\"bare\":{\"type\":\"array\"}}}}}",
	    0, NULL);
	ck_assert_ptr_nonnull(fake[3].schema);
	/* still the cached text until the table change is announced */
	ck_assert_ptr_eq(openapi_v2_text(&len), t);
	openapi_invalidate();
	json_t *doc = openapi_v2_doc();
	json_t *w = def_of(doc, "com.example.v1.Widget");
	ck_assert_ptr_nonnull(w);
	json_t *spec = prop(w, "spec");
	ck_assert_str_eq(json_string_value(json_object_get(prop(spec, "size"), "description")),
			 "How big.");
	ck_assert_ptr_null(json_object_get(prop(spec, "color"), "type"));
	ck_assert_ptr_null(json_object_get(prop(spec, "color"), "nullable"));
	ck_assert_ptr_null(json_object_get(prop(spec, "port"), "anyOf"));
	ck_assert(json_is_true(json_object_get(prop(spec, "port"), "x-kubernetes-int-or-string")));
	ck_assert_ptr_null(json_object_get(prop(spec, "extra"), "properties"));
	ck_assert_ptr_null(json_object_get(prop(spec, "bare"), "type"));
	ck_assert_str_eq(json_string_value(json_object_get(prop(w, "metadata"), "$ref")),
			 "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
	int nrefs = 0;
	check_refs(doc, doc, &nrefs);
	json_decref(doc);
	t = openapi_v2_text(&len);
	ck_assert_ptr_nonnull(strstr(t, "\"com.example.v1.Widget\""));
	json_decref(fake[3].schema);
	fake[3].schema = NULL;
	openapi_invalidate();
}
END_TEST

/* A minimal protobuf reader for the test: the next field of [*p, end). */
struct pbf {
	uint32_t num;
	unsigned wire;
	uint64_t v;
	const unsigned char *data;
	size_t len;
};

static uint64_t rd_varint(const unsigned char **p, const unsigned char *end)
{
	uint64_t v = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	ck_abort_msg("truncated varint");
	return 0;
}

static bool pb_next(const unsigned char **p, const unsigned char *end, struct pbf *f)
{
	if (*p >= end)
		return false;
	uint64_t tag = rd_varint(p, end);
	f->num = (uint32_t)(tag >> 3);
	f->wire = tag & 7;
	ck_assert_uint_gt(f->num, 0);
	switch (f->wire) {
	case 0: f->v = rd_varint(p, end); break;
	case 1:
		ck_assert((size_t)(end - *p) >= 8);
		*p += 8;
		break;
	case 2:
		f->len = rd_varint(p, end);
		ck_assert(f->len <= (size_t)(end - *p));
		f->data = *p;
		*p += f->len;
		break;
	default: ck_abort_msg("wire type %u", f->wire);
	}
	return true;
}

/* The string/bytes field num of a message (first occurrence), or NULL. */
static bool pb_field(const unsigned char *m, size_t len, uint32_t num, const unsigned char **out,
		     size_t *olen)
{
	const unsigned char *p = m;
	struct pbf f;
	while (pb_next(&p, m + len, &f))
		if (f.num == num && f.wire == 2) {
			*out = f.data;
			*olen = f.len;
			return true;
		}
	return false;
}

static bool pb_str_is(const unsigned char *m, size_t len, uint32_t num, const char *want)
{
	const unsigned char *s;
	size_t n;
	return pb_field(m, len, num, &s, &n) && n == strlen(want) && memcmp(s, want, n) == 0;
}

/* Among the repeated Named* entries `num` of m ({1: name, 2: value}), the
 * value of the one called name. */
static bool pb_named(const unsigned char *m, size_t len, uint32_t num, const char *name,
		     const unsigned char **out, size_t *olen)
{
	const unsigned char *p = m;
	struct pbf f;
	while (pb_next(&p, m + len, &f))
		if (f.num == num && f.wire == 2 && pb_str_is(f.data, f.len, 1, name))
			return pb_field(f.data, f.len, 2, out, olen);
	return false;
}

START_TEST(v2_protobuf)
{
	json_t *doc = openapi_v2_doc();
	struct kb_buf pb = {0};
	ck_assert_int_eq(openapi_v2_encode(doc, &pb), 0);
	json_decref(doc);
	const unsigned char *d = (const unsigned char *)pb.data, *m, *s, *x;
	size_t mn, sn, xn;

	/* Document: swagger=1, info=2 {title=1, version=2}, paths=8, definitions=9 */
	ck_assert(pb_str_is(d, pb.len, 1, "2.0"));
	ck_assert(pb_field(d, pb.len, 2, &m, &mn));
	ck_assert(pb_str_is(m, mn, 1, "Kubernetes"));
	/* definitions: NamedSchema "io.k8s.api.core.v1.Pod" */
	ck_assert(pb_field(d, pb.len, 9, &m, &mn));
	ck_assert(pb_named(m, mn, 1, "io.k8s.api.core.v1.Pod", &s, &sn));
	/* Schema.type=22 TypeItem{value=1}: "object" */
	ck_assert(pb_field(s, sn, 22, &x, &xn));
	ck_assert(pb_str_is(x, xn, 1, "object"));
	/* Schema.vendor_extension=31: NamedAny{Any{yaml=2}} with the GVK list */
	ck_assert(pb_named(s, sn, 31, "x-kubernetes-group-version-kind", &x, &xn));
	ck_assert(pb_field(x, xn, 2, &x, &xn));
	char yaml[256];
	snprintf(yaml, sizeof(yaml), "%.*s", (int)xn, (const char *)x);
	ck_assert_str_eq(yaml, "[{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"}]");
	/* Schema.properties=25 {NamedSchema "spec" → Schema{_ref=1}} */
	ck_assert(pb_field(s, sn, 25, &x, &xn));
	ck_assert(pb_named(x, xn, 1, "spec", &x, &xn));
	ck_assert(pb_str_is(x, xn, 1, "#/definitions/io.k8s.api.core.v1.PodSpec"));
	/* PodSpec.containers: array (TypeItem), items=23 ItemsItem{schema=1 {_ref}} */
	ck_assert(pb_named(m, mn, 1, "io.k8s.api.core.v1.PodSpec", &s, &sn));
	ck_assert(pb_field(s, sn, 25, &x, &xn));
	ck_assert(pb_named(x, xn, 1, "containers", &s, &sn));
	ck_assert(pb_field(s, sn, 22, &x, &xn));
	ck_assert(pb_str_is(x, xn, 1, "array"));
	ck_assert(pb_field(s, sn, 23, &x, &xn));
	ck_assert(pb_field(x, xn, 1, &x, &xn));
	ck_assert(pb_str_is(x, xn, 1, "#/definitions/io.k8s.api.core.v1.Container"));
	ck_assert(pb_named(s, sn, 31, "x-kubernetes-patch-merge-key", &x, &xn));
	ck_assert(pb_str_is(x, xn, 2, "\"name\""));

	/* paths=8 {path=2 NamedPathItem} → PathItem.patch=8 → Operation.parameters=8
	 * → ParametersItem.parameter=1 → Parameter.non_body_parameter=2 →
	 * query_parameter_sub_schema=3 {in=2, name=4, type=6} */
	ck_assert(pb_field(d, pb.len, 8, &m, &mn));
	ck_assert(pb_named(m, mn, 2, "/api/v1/namespaces/{namespace}/pods/{name}", &s, &sn));
	ck_assert(pb_field(s, sn, 8, &s, &sn));
	ck_assert(pb_named(s, sn, 13, "x-kubernetes-action", &x, &xn));
	ck_assert(pb_str_is(x, xn, 2, "\"patch\""));
	const unsigned char *p = s;
	struct pbf f;
	bool found = false, body = false;
	while (pb_next(&p, s + sn, &f)) {
		if (f.num != 8)
			continue;
		ck_assert(pb_field(f.data, f.len, 1, &x, &xn));
		if (pb_field(x, xn, 1, &m, &mn)) { /* BodyParameter{name=2, in=3} */
			body = body || pb_str_is(m, mn, 3, "body");
			continue;
		}
		ck_assert(pb_field(x, xn, 2, &x, &xn));
		if (!pb_field(x, xn, 3, &x, &xn))
			continue;
		if (pb_str_is(x, xn, 4, "fieldValidation")) {
			found = true;
			ck_assert(pb_str_is(x, xn, 2, "query"));
			ck_assert(pb_str_is(x, xn, 6, "string"));
		}
	}
	ck_assert(found);
	ck_assert(body);
	kb_buf_free(&pb);

	/* the cached bytes are this encoding */
	size_t len;
	ck_assert_ptr_nonnull(openapi_v2_proto(&len));
	ck_assert_uint_gt(len, 1000);
}
END_TEST

/* kube-aggregator's merge of an aggregated API's v2 document
 * (kube-openapi mergeSpecs): a clashing definition renamed _v2 with its
 * references, an equal one shared with its GVKs merged, a clashing path
 * left out with the definitions only it used, shared parameters renamed. */
START_TEST(v2_merge_renames)
{
	json_t *dest = json_loads(
	    "{\"paths\":{\"/apis/a/v1/xs\":{\"get\":{\"responses\":{\"200\":{\"schema\":"
	    "{\"$ref\":\"#/definitions/io.x.Status\"}}}}}},"
	    "\"definitions\":{\"io.x.Status\":{\"type\":\"object\",\"properties\":{\"code\":"
	    "{\"type\":\"integer\"}}},\"io.x.Meta\":{\"type\":\"object\","
	    "\"x-kubernetes-group-version-kind\":[{\"group\":\"\",\"version\":\"v1\","
	    "\"kind\":\"Meta\"}]}},\"parameters\":{\"pretty\":{\"name\":\"pretty\","
	    "\"in\":\"query\",\"type\":\"string\"}}}",
	    0, NULL);
	json_t *src = json_loads(
	    "{\"paths\":{\"/apis/b/v1/ys\":{\"get\":{\"parameters\":[{\"$ref\":"
	    "\"#/parameters/pretty\"}],\"responses\":{\"200\":{\"schema\":{\"$ref\":"
	    "\"#/definitions/io.x.Status\"}}}}},"
	    "\"/apis/a/v1/xs\":{\"get\":{\"responses\":{\"200\":{\"schema\":"
	    "{\"$ref\":\"#/definitions/io.b.OnlyThere\"}}}}}},"
	    "\"definitions\":{\"io.x.Status\":{\"type\":\"object\",\"properties\":{\"code\":"
	    "{\"type\":\"string\"},\"meta\":{\"$ref\":\"#/definitions/io.x.Meta\"}}},"
	    "\"io.x.Meta\":{\"type\":\"object\",\"x-kubernetes-group-version-kind\":"
	    "[{\"group\":\"b\",\"version\":\"v1\",\"kind\":\"Meta\"}]},"
	    "\"io.b.OnlyThere\":{\"type\":\"string\"},\"io.b.Unused\":{\"type\":\"string\"}},"
	    "\"parameters\":{\"pretty\":{\"name\":\"pretty\",\"in\":\"query\","
	    "\"type\":\"boolean\"}}}",
	    0, NULL);
	ck_assert_ptr_nonnull(dest);
	ck_assert_ptr_nonnull(src);
	openapi_v2_merge(dest, src);
	json_t *defs = json_object_get(dest, "definitions");
	/* dest's Status kept, the backend's as Status_v2, its reference too */
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_object_get(json_object_get(json_object_get(defs, "io.x.Status"), "properties"),
				"code"),
		"type")),
	    "integer");
	ck_assert_ptr_nonnull(json_object_get(defs, "io.x.Status_v2"));
	json_t *get = json_object_get(
	    json_object_get(json_object_get(dest, "paths"), "/apis/b/v1/ys"), "get");
	char *text = json_dumps(get, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_ptr_nonnull(strstr(text, "\"#/definitions/io.x.Status_v2\""));
	ck_assert_ptr_nonnull(strstr(text, "\"#/parameters/pretty_v2\""));
	free(text);
	/* the same Meta (GVKs aside): one definition with both GVKs */
	ck_assert_ptr_null(json_object_get(defs, "io.x.Meta_v2"));
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(defs, "io.x.Meta"),
							  "x-kubernetes-group-version-kind")),
			  2);
	/* the clashing path stays dest's; what only it used is dropped,
	 * what no path used is kept (FilterSpecByPathsWithoutSideEffects) */
	ck_assert_ptr_null(json_object_get(defs, "io.b.OnlyThere"));
	ck_assert_ptr_nonnull(json_object_get(defs, "io.b.Unused"));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(dest, "parameters"), "pretty_v2"));
	/* merged again (the next build of the document): _v2 is reused */
	openapi_v2_merge(dest, src);
	ck_assert_ptr_null(json_object_get(defs, "io.x.Status_v3"));
	json_decref(src);
	json_decref(dest);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/openapi");
	TCase *tc = tcase_create("openapi");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, root_lists_served_gvs);
	tcase_add_test(tc, core_paths);
	tcase_add_test(tc, core_schemas);
	tcase_add_test(tc, crd_rows);
	tcase_add_test(tc, text_cache);
	tcase_add_test(tc, real_table);
	tcase_add_test(tc, v2_document);
	tcase_add_test(tc, v2_crd);
	tcase_add_test(tc, v2_protobuf);
	tcase_add_test(tc, v2_merge_renames);
	suite_add_tcase(s, tc);
	return s;
}
