/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store as a resource row sees it. Most rows store objects as served;
 * a row with a storage conversion (events.k8s.io/v1 Events live as core/v1
 * Events, as in kube-apiserver) converts on the way in and out (the row's
 * to_storage and from_storage: proxy/model/convert.c), so both APIs show
 * the same objects, and selectors see the served shape.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/validation/crd_validate.h"
#include "proxy/core/core.h"

static void out_conv(const struct proxy_resource *res, json_t *obj)
{
	if (res->from_storage && obj)
		res->from_storage(res, obj);
}

int rstore_get(struct proxy *px, const struct proxy_resource *res, const char *ns, const char *name,
	       json_t **out)
{
	int rc = store_get(px->store, res->store_key, ns ? ns : "", name, out);
	if (rc == 0)
		out_conv(res, *out);
	return rc;
}

/* Writes through a converted copy, then gives the caller's object the
 * revision the store assigned. */
static int conv_write(struct proxy *px, const struct proxy_resource *res, const char *ns,
		      const char *name, json_t *obj, int64_t expected, bool create)
{
	json_t *st = json_deep_copy(obj);
	if (!st)
		return -ENOMEM;
	res->to_storage(res, st);
	int rc = create ? store_create(px->store, res->store_key, ns, name, st, NULL)
			: store_update(px->store, res->store_key, ns, name, st, expected, NULL);
	if (rc == 0)
		json_object_set(obj_meta(obj), "resourceVersion",
				obj_get(st, "metadata.resourceVersion"));
	json_decref(st);
	return rc;
}

int rstore_create(struct proxy *px, const struct proxy_resource *res, const char *ns,
		  const char *name, json_t *obj, bool final)
{
	if (res->to_storage)
		return conv_write(px, res, ns ? ns : "", name, obj, 0, true);
	return (final ? store_create_final : store_create)(px->store, res->store_key, ns ? ns : "",
							   name, obj, NULL);
}

int rstore_update(struct proxy *px, const struct proxy_resource *res, const char *ns,
		  const char *name, json_t *obj, int64_t expected)
{
	if (res->to_storage)
		return conv_write(px, res, ns ? ns : "", name, obj, expected, false);
	return store_update(px->store, res->store_key, ns ? ns : "", name, obj, expected, NULL);
}

int rstore_delete(struct proxy *px, const struct proxy_resource *res, const char *ns,
		  const char *name, int64_t expected, json_t **last)
{
	int rc = store_delete(px->store, res->store_key, ns ? ns : "", name, expected, last, NULL);
	if (rc == 0 && last)
		out_conv(res, *last);
	return rc;
}

struct conv_filter {
	const struct proxy_resource *res;
	store_filter_fn filter;
	void *arg;
};

static bool conv_filter_match(const json_t *obj, void *arg)
{
	struct conv_filter *cf = arg;
	json_t *copy = json_deep_copy(obj);
	cf->res->from_storage(cf->res, copy);
	bool ok = cf->filter(copy, cf->arg);
	json_decref(copy);
	return ok;
}

int rstore_list(struct proxy *px, const struct proxy_resource *res,
		const struct store_list_req *req, struct store_list_result *out)
{
	struct store_list_req lr = *req;
	struct conv_filter cf = {res, req->filter, req->filter_arg};
	lr.res = res->store_key;
	if (res->from_storage && req->filter) {
		lr.filter = conv_filter_match;
		lr.filter_arg = &cf;
	}
	int rc = store_list(px->store, &lr, out);
	if (rc == 0 && res->from_storage) {
		size_t i;
		json_t *item;
		json_array_foreach (out->items, i, item)
			res->from_storage(res, item);
	}
	return rc;
}

/* ---- several versions of a custom resource (conversion None) ------------ */

static void set_api_version(json_t *obj, const char *group, const char *version)
{
	char av[300];
	if (group[0])
		snprintf(av, sizeof(av), "%s/%s", group, version);
	else
		snprintf(av, sizeof(av), "%s", version);
	json_object_set_new(obj, "apiVersion", json_string(av));
}

static void version_out(const struct proxy_resource *res, json_t *obj)
{
	set_api_version(obj, res->group, res->version);
}

void rstore_version_in(const struct proxy_resource *res, json_t *obj)
{
	size_t i;
	json_t *v;
	json_array_foreach (obj_get(res->crd, "spec.versions"), i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		if (name && json_is_true(json_object_get(v, "storage"))) {
			set_api_version(obj, res->group, name);
			return;
		}
	}
}

/* A custom object on its way out: the version's schema defaults (kube
 * defaults objects read from storage too, so a default added to a schema
 * shows on old objects), and the version asked for when it has several. */
void rstore_crd_out(const struct proxy_resource *res, json_t *obj)
{
	if (res->schema)
		crd_schema_default(res->schema, obj);
	if (json_array_size(obj_get(res->crd, "spec.versions")) > 1)
		version_out(res, obj);
}
