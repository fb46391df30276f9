/* SPDX-License-Identifier: Apache-2.0 */
/*
 * API discovery from the resource table: aggregated (apidiscovery.k8s.io
 * v2 and v2beta1, chosen by the Accept header) at /api and /apis, and the
 * legacy documents (APIVersions, APIGroupList, APIGroup, APIResourceList).
 * It is the aggregation layer's, as in kube (kube-aggregator serves the
 * merged discovery): the local rows and the service-backed APIServices'
 * group/versions in one document.
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/aggregation/aggregation.h"

enum disc_format { DISC_LEGACY = 0, DISC_V2, DISC_V2BETA1 };

/* The first acceptable media type in the Accept header wins. */
static enum disc_format negotiate(const struct req *r)
{
	const char *accept = kb_http_req_header(r->http, "accept");
	if (!accept)
		return DISC_LEGACY;
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", accept);
	char *save = NULL;
	for (char *part = strtok_r(buf, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
		bool disc = strstr(part, "g=apidiscovery.k8s.io") &&
			    strstr(part, "as=APIGroupDiscoveryList");
		if (disc && strstr(part, "v=v2beta1"))
			return DISC_V2BETA1;
		if (disc && strstr(part, "v=v2"))
			return DISC_V2;
		if (!disc && (strstr(part, "application/json") || strstr(part, "*/*")))
			return DISC_LEGACY;
	}
	return DISC_LEGACY;
}

static json_t *verbs_array(unsigned verbs)
{
	static const char *const names[] = {"get",    "list",  "watch",  "create",
					    "update", "patch", "delete", "deletecollection"};
	static const unsigned order[] = {VERB_CREATE, VERB_DELETE, VERB_DELETECOLLECTION,
					 VERB_GET,    VERB_LIST,   VERB_PATCH,
					 VERB_UPDATE, VERB_WATCH};
	json_t *a = json_array();
	for (size_t i = 0; i < KB_ARRAY_SIZE(order); i++) {
		for (size_t k = 0; k < 8; k++)
			if ((1u << k) == order[i] && (verbs & order[i]))
				json_array_append_new(a, json_string(names[k]));
	}
	return a;
}

static json_t *strings(const char *const *list)
{
	json_t *a = json_array();
	for (; list && *list; list++)
		json_array_append_new(a, json_string(*list));
	return a;
}

static json_t *agg_resource(const struct proxy_resource *res)
{
	json_t *o = json_pack("{s:s,s:{s:s,s:s,s:s},s:s,s:s,s:o}", "resource", res->plural,
			      "responseKind", "group", res->group, "version", res->version, "kind",
			      res->kind, "scope", res->namespaced ? "Namespaced" : "Cluster",
			      "singularResource", res->singular, "verbs", verbs_array(res->verbs));
	if (res->short_names)
		json_object_set_new(o, "shortNames", strings(res->short_names));
	if (res->categories)
		json_object_set_new(o, "categories", strings(res->categories));
	json_t *subs = json_array();
	for (const struct proxy_subresource *s = res->subresources; s && s->name; s++)
		json_array_append_new(subs, json_pack("{s:s,s:{s:s,s:s,s:s},s:o}", "subresource",
						      s->name, "responseKind", "group", s->group,
						      "version", s->version, "kind", s->kind,
						      "verbs", verbs_array(s->verbs)));
	if (json_array_size(subs))
		json_object_set_new(o, "subresources", subs);
	else
		json_decref(subs);
	return o;
}

/* The group item of `items` named group (borrowed), made when missing. */
static json_t *agg_group(json_t *items, const char *group)
{
	size_t k;
	json_t *g;
	json_array_foreach (items, k, g)
		if (strcmp(json_string_value(obj_get(g, "metadata.name")), group) == 0)
			return g;
	g = json_pack("{s:{s:s},s:[]}", "metadata", "name", group, "versions");
	json_array_append_new(items, g);
	return g;
}

/* A service-backed group/version in aggregated discovery, as kube's
 * discovery manager (kube-aggregator pkg/apiserver/handler_discovery.go
 * syncAPIService) puts it: freshness Current with the backend's resources
 * while it answers; once it does not (an unavailable APIService answers
 * 503, fetchFreshDiscoveryForService marks the cached result stale), the
 * version stays, "Stale", with the resources last fetched or none. Clients
 * (client-go's aggregated discovery) then report the group/version as
 * failed, "stale GroupVersion discovery". */
static void agg_backend(const struct aggregator_gv *gv, void *arg)
{
	json_t *items = arg;
	const json_t *list = json_object_get(gv->resources, "resources");
	json_t *entry = json_pack("{s:s}", "version", gv->version);
	if (json_is_array(list) && json_array_size(list))
		json_object_set_new(entry, "resources",
				    aggregator_agg_resources(gv->group, gv->version, list));
	json_object_set_new(
	    entry, "freshness",
	    json_string(gv->available && json_is_array(list) ? "Current" : "Stale"));
	json_t *g = agg_group(items, gv->group);
	json_array_append_new(json_object_get(g, "versions"), entry);
}

/* Groups in table order; versions in table order (first = preferred);
 * then the service-backed group/versions (proxy/aggregation/aggregator.c), which take
 * the place of a local row of the same group/version. */
static json_t *aggregated(struct proxy *px, bool core, enum disc_format fmt)
{
	json_t *items = json_array();
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *res = resource_at(i);
		if (core != (res->group[0] == '\0'))
			continue;
		if (!core && aggregator_backs(px, res->group, res->version))
			continue;
		json_t *group = NULL, *version = NULL;
		size_t k;
		json_t *g;
		json_array_foreach (items, k, g)
			if (strcmp(json_string_value(obj_get(g, "metadata.name")), res->group) == 0)
				group = g;
		if (!group) {
			group =
			    json_pack("{s:{s:s},s:[]}", "metadata", "name", res->group, "versions");
			json_array_append_new(items, group);
		}
		json_array_foreach (json_object_get(group, "versions"), k, g)
			if (strcmp(json_string_value(json_object_get(g, "version")),
				   res->version) == 0)
				version = g;
		if (!version) {
			version = json_pack("{s:s,s:[],s:s}", "version", res->version, "resources",
					    "freshness", "Current");
			json_array_append_new(json_object_get(group, "versions"), version);
		}
		json_array_append_new(json_object_get(version, "resources"), agg_resource(res));
	}
	if (!core)
		aggregator_foreach(px, agg_backend, items);
	return json_pack("{s:s,s:s,s:{},s:o}", "kind", "APIGroupDiscoveryList", "apiVersion",
			 fmt == DISC_V2 ? "apidiscovery.k8s.io/v2" : "apidiscovery.k8s.io/v2beta1",
			 "metadata", "items", items);
}

static void reply_aggregated(struct req *r, bool core, enum disc_format fmt)
{
	json_t *doc = aggregated(r->px, core, fmt);
	char *s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	reply_text(
	    r, 200,
	    fmt == DISC_V2
		? "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
		: "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
	    s, strlen(s));
	free(s);
}

struct gv_doc {
	const char *group;
	json_t *versions;
};

static void add_version(json_t *versions, const char *group, const char *version)
{
	char gv[256];
	snprintf(gv, sizeof(gv), "%s/%s", group, version);
	size_t k;
	json_t *v;
	json_array_foreach (versions, k, v)
		if (strcmp(json_string_value(json_object_get(v, "groupVersion")), gv) == 0)
			return;
	json_array_append_new(versions,
			      json_pack("{s:s,s:s}", "groupVersion", gv, "version", version));
}

static void doc_backend(const struct aggregator_gv *gv, void *arg)
{
	struct gv_doc *d = arg;
	if (strcmp(gv->group, d->group) == 0)
		add_version(d->versions, gv->group, gv->version);
}

/* A group's APIGroup: its local versions, then its service-backed ones
 * (every APIService, available or not, as kube's legacy discovery). */
static json_t *group_doc(struct proxy *px, const char *group)
{
	json_t *versions = json_array();
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *res = resource_at(i);
		if (strcmp(res->group, group) != 0 || aggregator_backs(px, group, res->version))
			continue;
		char gv[256];
		snprintf(gv, sizeof(gv), "%s/%s", group, res->version);
		bool seen = false;
		size_t k;
		json_t *v;
		json_array_foreach (versions, k, v)
			seen |=
			    strcmp(json_string_value(json_object_get(v, "groupVersion")), gv) == 0;
		if (!seen)
			json_array_append_new(versions, json_pack("{s:s,s:s}", "groupVersion", gv,
								  "version", res->version));
	}
	struct gv_doc d = {group, versions};
	aggregator_foreach(px, doc_backend, &d);
	if (!json_array_size(versions)) {
		json_decref(versions);
		return NULL;
	}
	return json_pack("{s:s,s:o,s:O}", "name", group, "versions", versions, "preferredVersion",
			 json_array_get(versions, 0));
}

static void list_backend(const struct aggregator_gv *gv, void *arg)
{
	json_t *names = arg;
	if (!json_object_get(names, gv->group))
		json_object_set_new(names, gv->group, json_true());
}

static json_t *group_list(struct proxy *px)
{
	json_t *groups = json_array(), *names = json_object();
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *res = resource_at(i);
		if (!res->group[0])
			continue;
		bool seen = false;
		size_t k;
		json_t *g;
		json_array_foreach (groups, k, g)
			seen |=
			    strcmp(json_string_value(json_object_get(g, "name")), res->group) == 0;
		if (!seen) {
			json_t *doc = group_doc(px, res->group);
			if (doc)
				json_array_append_new(groups, doc);
			json_object_set_new(names, res->group, json_true());
		}
	}
	json_t *backed = json_object();
	aggregator_foreach(px, list_backend, backed);
	const char *g;
	json_t *v;
	json_object_foreach (backed, g, v)
		if (!json_object_get(names, g))
			json_array_append_new(groups, group_doc(px, g));
	json_decref(backed);
	json_decref(names);
	return json_pack("{s:s,s:s,s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
			 groups);
}

/* kube's discovery.StorageVersionHash (apiserver
 * pkg/endpoints/discovery/storageversionhash.go): the first 8 bytes of the
 * SHA-256 of "<group>/<version>/<kind>", in standard base64. */
static json_t *storage_version_hash(const char *group, const char *version, const char *kind)
{
	char gvk[512];
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	int len = snprintf(gvk, sizeof(gvk), "%s/%s/%s", group, version, kind);
	if (len < 0 || (size_t)len >= sizeof(gvk) ||
	    EVP_Digest(gvk, (size_t)len, md, &n, EVP_sha256(), NULL) != 1)
		return NULL;
	char *b64 = kb_base64_encode(md, 8);
	json_t *s = b64 ? json_string(b64) : NULL;
	free(b64);
	return s;
}

/* The row a built-in row is stored as: the one its `storage` names (a
 * version converted in place, HPA autoscaling/v1 as v2; events.k8s.io
 * events as core events, as kube's events.k8s.io storage is the core one:
 * pkg/registry/core/event/storage NewREST with api.Resource("events")), or
 * itself. */
static const struct proxy_resource *storage_row(const struct proxy_resource *res)
{
	if (!res->storage)
		return res;
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *o = resource_at(i);
		if (!o->storage && !o->crd && strcmp(o->store_key, res->storage) == 0)
			return o;
	}
	return res;
}

/* A top-level resource's storageVersionHash as kube's installer sets it
 * (apiserver pkg/endpoints/installer.go registerResourceHandlers, for a
 * storage with a StorageVersion) and the CRD discovery controller
 * (apiextensions-apiserver customresource_discovery_controller.go sync,
 * from the CRD's storage version); NULL for what kube stores nowhere
 * (reviews, bindings, the metrics API). New reference. */
static json_t *resource_hash(const struct proxy_resource *res)
{
	if (!res->stored || res->serve)
		return NULL;
	if (res->crd) {
		size_t k;
		json_t *v;
		json_array_foreach (obj_get(res->crd, "spec.versions"), k, v)
			if (json_is_true(json_object_get(v, "storage")) &&
			    json_is_string(json_object_get(v, "name")))
				return storage_version_hash(
				    res->group, json_string_value(json_object_get(v, "name")),
				    res->kind);
		return NULL;
	}
	const struct proxy_resource *s = storage_row(res);
	return storage_version_hash(s->group, s->version, s->kind);
}

static json_t *resource_list(const char *group, const char *version)
{
	json_t *list = json_array();
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *res = resource_at(i);
		if (strcmp(res->group, group) != 0 || strcmp(res->version, version) != 0)
			continue;
		json_t *o = json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", res->plural, "singularName",
				      res->singular, "namespaced", res->namespaced, "kind",
				      res->kind, "verbs", verbs_array(res->verbs));
		if (res->short_names)
			json_object_set_new(o, "shortNames", strings(res->short_names));
		if (res->categories)
			json_object_set_new(o, "categories", strings(res->categories));
		json_t *hash = resource_hash(res);
		if (hash)
			json_object_set_new(o, "storageVersionHash", hash);
		json_array_append_new(list, o);
		for (const struct proxy_subresource *s = res->subresources; s && s->name; s++) {
			char name[256];
			snprintf(name, sizeof(name), "%s/%s", res->plural, s->name);
			json_t *so = json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", name,
					       "singularName", "", "namespaced", res->namespaced,
					       "kind", s->kind, "verbs", verbs_array(s->verbs));
			if (strcmp(s->group, res->group) != 0 ||
			    strcmp(s->version, res->version) != 0) {
				json_object_set_new(so, "group", json_string(s->group));
				json_object_set_new(so, "version", json_string(s->version));
			}
			json_array_append_new(list, so);
		}
	}
	if (!json_array_size(list)) {
		json_decref(list);
		return NULL;
	}
	char gv[256];
	if (group[0])
		snprintf(gv, sizeof(gv), "%s/%s", group, version);
	else
		snprintf(gv, sizeof(gv), "%s", version);
	return json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
			 "groupVersion", gv, "resources", list);
}

static void reply_doc(struct req *r, json_t *doc)
{
	if (!doc) {
		reply_status(r, 404, "NotFound", "the server could not find the requested resource",
			     json_object());
		return;
	}
	reply_json(r, 200, doc);
	json_decref(doc);
}

bool discovery_handle(struct req *r)
{
	bool core = strcmp(r->segs[0], "api") == 0;
	if (r->nsegs == 1) {
		enum disc_format fmt = negotiate(r);
		if (fmt != DISC_LEGACY) {
			reply_aggregated(r, core, fmt);
		} else if (core) {
			char addr[160];
			snprintf(addr, sizeof(addr), "%s:%d", r->px->advertise, r->px->port);
			reply_doc(r, json_pack("{s:s,s:[s],s:[{s:s,s:s}]}", "kind", "APIVersions",
					       "versions", "v1", "serverAddressByClientCIDRs",
					       "clientCIDR", "0.0.0.0/0", "serverAddress", addr));
		} else {
			reply_doc(r, group_list(r->px));
		}
		return true;
	}
	if (core && r->nsegs == 2) {
		reply_doc(r, resource_list("", r->segs[1]));
		return true;
	}
	if (!core && r->nsegs == 2) {
		json_t *g = group_doc(r->px, r->segs[1]);
		if (g) {
			json_object_set_new(g, "kind", json_string("APIGroup"));
			json_object_set_new(g, "apiVersion", json_string("v1"));
		}
		reply_doc(r, g);
		return true;
	}
	if (!core && r->nsegs == 3) {
		reply_doc(r, resource_list(r->segs[1], r->segs[2]));
		return true;
	}
	return false;
}
