/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenAPI v3 documents from the resource table and the generated message
 * tables (see openapi.h).
 *
 * A group/version document has, per resource, the collection and item paths
 * (plus subresources) with the operations its verbs allow, each carrying
 * x-kubernetes-group-version-kind and the write parameters (dryRun,
 * fieldManager, fieldValidation) kubectl looks for; and components.schemas
 * with every message reachable from the resources' kinds, named the way
 * kube-apiserver names them (io.k8s.api.core.v1.Pod).
 *
 * Caching: the root's ?hash= is a hash of what determines a document (the
 * rows of that group/version, their CRD schemas and this generator's
 * revision), so the root is cheap and no document is built before a client
 * asks for it. The last rendered document text is kept (one entry).
 */
#include "proxy/model/openapi.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/model/types.h"

#define OPENAPI_K8S_VERSION "v1.33.0"
/* Bump when the rendering changes, so cached documents are refetched. */
#define OPENAPI_REV "kubicle-openapi-4"

static size_t (*res_count)(void) = resource_count;
static const struct proxy_resource *(*res_at)(size_t) = resource_at;

/* The one-entry text cache. */
static struct {
	char *group, *version;
	char *text;
	size_t len;
} cached;

void openapi_set_resources(size_t (*count)(void), const struct proxy_resource *(*at)(size_t))
{
	res_count = count ? count : resource_count;
	res_at = at ? at : resource_at;
	openapi_invalidate();
}

static void drop_cached_text(void)
{
	free(cached.group);
	free(cached.version);
	free(cached.text);
	memset(&cached, 0, sizeof(cached));
}

void openapi_invalidate(void)
{
	drop_cached_text();
	openapi_v2_invalidate();
}

const char *openapi_k8s_version(void)
{
	return OPENAPI_K8S_VERSION;
}

void openapi_schema_name(const char *proto, char *buf, size_t len)
{
	/* a protobuf package has "_" where kube's OpenAPI names have "-" */
	if (kb_str_has_prefix(proto, "k8s.io.kube_aggregator."))
		snprintf(buf, len, "io.k8s.kube-aggregator.%s",
			 proto + strlen("k8s.io.kube_aggregator."));
	else if (kb_str_has_prefix(proto, "k8s.io."))
		snprintf(buf, len, "io.k8s.%s", proto + strlen("k8s.io."));
	else
		snprintf(buf, len, "%s", proto);
}

static bool in_gv(const struct proxy_resource *r, const char *group, const char *version)
{
	return strcmp(r->group, group) == 0 && strcmp(r->version, version) == 0;
}

/* ---- hashes ---- */

static void fnv(uint64_t *h, const char *s)
{
	*h = kb_fnv1a(*h, s, s ? strlen(s) : 0);
	*h = kb_fnv1a(*h, "\xff", 1); /* field separator */
}

static void gv_hash(const char *group, const char *version, char *out, size_t len)
{
	uint64_t h = KB_FNV1A_INIT;
	char num[32];

	fnv(&h, OPENAPI_REV);
	fnv(&h, OPENAPI_K8S_VERSION);
	for (size_t i = 0; i < res_count(); i++) {
		const struct proxy_resource *r = res_at(i);
		if (!in_gv(r, group, version))
			continue;
		snprintf(num, sizeof(num), "%u/%d", r->verbs, r->namespaced);
		const char *parts[] = {r->kind, r->list_kind, r->plural, r->proto, num};
		for (size_t k = 0; k < KB_ARRAY_SIZE(parts); k++)
			fnv(&h, parts[k]);
		for (const struct proxy_subresource *s = r->subresources; s && s->name; s++)
			fnv(&h, s->name);
		if (r->schema) {
			char *dump = json_dumps(r->schema, JSON_COMPACT | JSON_SORT_KEYS);
			fnv(&h, dump);
			free(dump);
		}
	}
	snprintf(out, len, "%016" PRIX64, h);
}

json_t *openapi_v3_root(void)
{
	json_t *paths = json_object();
	char key[300], url[400], hash[32];

	for (size_t i = 0; i < res_count(); i++) {
		const struct proxy_resource *r = res_at(i);
		if (r->group[0])
			snprintf(key, sizeof(key), "apis/%s/%s", r->group, r->version);
		else
			snprintf(key, sizeof(key), "api/%s", r->version);
		if (json_object_get(paths, key))
			continue;
		gv_hash(r->group, r->version, hash, sizeof(hash));
		snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", key, hash);
		json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url));
	}
	return json_pack("{s:o}", "paths", paths);
}

/* ---- schemas of messages ---- */

static json_t *ref_to(const char *name)
{
	char ref[400];

	snprintf(ref, sizeof(ref), "#/components/schemas/%s", name);
	return json_pack("{s:[{s:s}]}", "allOf", "$ref", ref);
}

static json_t *msg_ref(const struct kt_message *m)
{
	char name[300];

	openapi_schema_name(m->name, name, sizeof(name));
	return ref_to(name);
}

static json_t *scalar_schema(uint8_t kind)
{
	switch (kind) {
	case KT_STRING: return json_pack("{s:s}", "type", "string");
	case KT_BYTES: return json_pack("{s:s, s:s}", "type", "string", "format", "byte");
	case KT_BOOL: return json_pack("{s:s}", "type", "boolean");
	case KT_INT32: return json_pack("{s:s, s:s}", "type", "integer", "format", "int32");
	case KT_INT64: return json_pack("{s:s, s:s}", "type", "integer", "format", "int64");
	case KT_DOUBLE: return json_pack("{s:s, s:s}", "type", "number", "format", "double");
	case KT_FLOAT: return json_pack("{s:s, s:s}", "type", "number", "format", "float");
	default: return json_pack("{s:s}", "type", "integer");
	}
}

static json_t *elem_schema(const struct kt_field *f)
{
	return f->kind == KT_MESSAGE ? msg_ref(f->msg) : scalar_schema(f->kind);
}

static void add_list_extensions(json_t *p, const struct kt_field *f)
{
	if (f->list_type)
		json_object_set_new(p, "x-kubernetes-list-type", json_string(f->list_type));
	if (f->map_keys) {
		json_t *keys = json_array();
		for (const char *const *k = f->map_keys; *k; k++)
			json_array_append_new(keys, json_string(*k));
		json_object_set_new(p, "x-kubernetes-list-map-keys", keys);
	}
	if (f->patch_strategy)
		json_object_set_new(p, "x-kubernetes-patch-strategy",
				    json_string(f->patch_strategy));
	if (f->merge_key)
		json_object_set_new(p, "x-kubernetes-patch-merge-key", json_string(f->merge_key));
}

static json_t *field_schema(const struct kt_field *f)
{
	json_t *p;

	if (f->label == KT_REPEATED)
		p = json_pack("{s:s, s:o}", "type", "array", "items", elem_schema(f));
	else if (f->label == KT_MAP)
		p = json_pack("{s:s, s:o}", "type", "object", "additionalProperties",
			      elem_schema(f));
	else
		p = elem_schema(f);
	add_list_extensions(p, f);
	return p;
}

/* Adds m's fields to props, flattening inline (embedded) structs. */
static void add_properties(json_t *props, const struct kt_message *m, int depth)
{
	for (uint16_t i = 0; i < m->nfields; i++) {
		const struct kt_field *f = &m->fields[i];
		if (f->json[0] == '\0' && f->msg && depth < 4)
			add_properties(props, f->msg, depth + 1);
		else if (f->json[0] && strcmp(f->json, "-") != 0)
			json_object_set_new(props, f->json, field_schema(f));
	}
}

static json_t *special_schema(uint8_t special)
{
	switch (special) {
	case KT_TIME:
	case KT_MICROTIME: return json_pack("{s:s, s:s}", "type", "string", "format", "date-time");
	case KT_DURATION:
	case KT_QUANTITY: return json_pack("{s:s}", "type", "string");
	case KT_INTORSTRING:
		return json_pack("{s:s, s:s, s:b}", "type", "string", "format", "int-or-string",
				 "x-kubernetes-int-or-string", 1);
	case KT_JSON: return json_pack("{s:b}", "x-kubernetes-preserve-unknown-fields", 1);
	default: /* RawExtension, FieldsV1 */ return json_pack("{s:s}", "type", "object");
	}
}

static json_t *message_schema(const struct kt_message *m)
{
	if (m->special != KT_PLAIN)
		return special_schema(m->special);
	json_t *props = json_object();
	add_properties(props, m, 0);
	return json_pack("{s:s, s:o}", "type", "object", "properties", props);
}

/* ---- a kind's schema with every reference inlined (CEL type checking) ---- */

#define INLINE_DEPTH 16 /* deeper messages are left untyped (dyn) */

static json_t *inline_message(const struct kt_message *m, int depth);

static json_t *inline_elem(const struct kt_field *f, int depth)
{
	return f->kind == KT_MESSAGE ? inline_message(f->msg, depth + 1) : scalar_schema(f->kind);
}

static void inline_properties(json_t *props, const struct kt_message *m, int depth, int flat)
{
	for (uint16_t i = 0; i < m->nfields; i++) {
		const struct kt_field *f = &m->fields[i];
		json_t *p;
		if (f->json[0] == '\0' && f->msg && flat < 4) {
			inline_properties(props, f->msg, depth, flat + 1);
			continue;
		}
		if (!f->json[0] || strcmp(f->json, "-") == 0)
			continue;
		if (f->label == KT_REPEATED)
			p = json_pack("{s:s, s:o}", "type", "array", "items",
				      inline_elem(f, depth));
		else if (f->label == KT_MAP)
			p = json_pack("{s:s, s:o}", "type", "object", "additionalProperties",
				      inline_elem(f, depth));
		else
			p = inline_elem(f, depth);
		add_list_extensions(p, f);
		json_object_set_new(props, f->json, p);
	}
}

static json_t *inline_message(const struct kt_message *m, int depth)
{
	if (m->special != KT_PLAIN)
		return special_schema(m->special);
	if (depth > INLINE_DEPTH)
		return json_object();
	json_t *props = json_object();
	inline_properties(props, m, depth, 0);
	return json_pack("{s:s, s:o}", "type", "object", "properties", props);
}

json_t *openapi_kind_schema(const struct proxy_resource *r)
{
	const struct kt_message *m = r->proto ? kt_find(r->proto) : NULL;
	const struct kt_message *om = kt_find("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta");
	json_t *s;
	if (m) {
		s = inline_message(m, 0);
	} else {
		s = r->schema ? json_deep_copy(r->schema)
			      : json_pack("{s:s, s:b}", "type", "object",
					  "x-kubernetes-preserve-unknown-fields", 1);
		if (!json_is_object(json_object_get(s, "properties")))
			json_object_set_new(s, "properties", json_object());
		if (om)
			json_object_set_new(json_object_get(s, "properties"), "metadata",
					    inline_message(om, 1));
	}
	json_t *props = json_object_get(s, "properties");
	if (json_is_object(props)) {
		json_object_set_new(props, "apiVersion", json_pack("{s:s}", "type", "string"));
		json_object_set_new(props, "kind", json_pack("{s:s}", "type", "string"));
	}
	return s;
}

/* Adds m and every message reachable from it to schemas. */
static void add_reachable(json_t *schemas, const struct kt_message *m, int depth)
{
	char name[300];

	openapi_schema_name(m->name, name, sizeof(name));
	if (json_object_get(schemas, name) || depth > 64)
		return;
	json_object_set_new(schemas, name, message_schema(m));
	for (uint16_t i = 0; i < m->nfields; i++)
		if (m->fields[i].msg)
			add_reachable(schemas, m->fields[i].msg, depth + 1);
}

static const struct {
	const char *kind, *text;
} kind_docs[] = {
    {"Pod", "Pod is a collection of containers that can run on a host. This resource is "
	    "created by clients and scheduled onto hosts."},
    {"Namespace", "Namespace provides a scope for Names. Use of multiple namespaces is "
		  "optional."},
    {"Service", "Service is a named abstraction of software service (for example, mysql) "
		"consisting of local port (for example 3306) that the proxy listens on, and "
		"the selector that determines which pods will answer requests sent through "
		"the proxy."},
    {"ConfigMap", "ConfigMap holds configuration data for pods to consume."},
    {"Secret", "Secret holds secret data of a certain type. The total bytes of the values "
	       "in the Data field must be less than MaxSecretSize bytes."},
    {"Deployment", "Deployment enables declarative updates for Pods and ReplicaSets."},
    {"ReplicaSet", "ReplicaSet ensures that a specified number of pod replicas are running "
		   "at any given time."},
    {"StatefulSet", "StatefulSet represents a set of pods with consistent identities."},
    {"DaemonSet", "DaemonSet represents the configuration of a daemon set."},
    {"Job", "Job represents the configuration of a single job."},
    {"CronJob", "CronJob represents the configuration of a single cron job."},
    {"ServiceAccount", "ServiceAccount binds together: a name, understood by users, and "
		       "perhaps by peripheral systems, for an identity; a principal that can "
		       "be authenticated and authorized; a set of secrets."},
    {"Node", "Node is a worker node in Kubernetes."},
    {"Event", "Event is a report of an event somewhere in the cluster."},
};

static void kind_description(const char *kind, const char *gv, char *buf, size_t len)
{
	for (size_t i = 0; i < KB_ARRAY_SIZE(kind_docs); i++)
		if (strcmp(kind_docs[i].kind, kind) == 0) {
			snprintf(buf, len, "%s", kind_docs[i].text);
			return;
		}
	snprintf(buf, len, "%s is a Kubernetes %s resource.", kind, gv);
}

static json_t *gvk_object(const char *group, const char *version, const char *kind)
{
	return json_pack("{s:s, s:s, s:s}", "group", group, "version", version, "kind", kind);
}

/* Marks schema as the top-level kind: GVK array, apiVersion/kind, description. */
static void mark_kind(json_t *schema, const struct proxy_resource *r, const char *kind)
{
	char gv[300], desc[600];
	json_t *gvks = json_object_get(schema, "x-kubernetes-group-version-kind");

	if (!gvks) {
		gvks = json_array();
		json_object_set_new(schema, "x-kubernetes-group-version-kind", gvks);
	}
	json_array_append_new(gvks, gvk_object(r->group, r->version, kind));
	if (r->group[0])
		snprintf(gv, sizeof(gv), "%s/%s", r->group, r->version);
	else
		snprintf(gv, sizeof(gv), "%s", r->version);
	if (!json_object_get(schema, "description")) {
		kind_description(kind, gv, desc, sizeof(desc));
		json_object_set_new(schema, "description", json_string(desc));
	}
	json_t *props = json_object_get(schema, "properties");
	if (!json_is_object(props)) {
		props = json_object();
		json_object_set_new(schema, "properties", props);
	}
	json_object_set_new(
	    props, "apiVersion",
	    json_pack(
		"{s:s, s:s}", "description",
		"APIVersion defines the versioned schema of this representation of an object.",
		"type", "string"));
	json_object_set_new(
	    props, "kind",
	    json_pack(
		"{s:s, s:s}", "description",
		"Kind is a string value representing the REST resource this object represents.",
		"type", "string"));
}

/* "example.com" + "v1" + "Widget" → "com.example.v1.Widget". */
static void crd_schema_name(const struct proxy_resource *r, char *buf, size_t len)
{
	size_t n = 0;
	const char *g = r->group, *end = g + strlen(g);

	buf[0] = '\0';
	while (end > g && n < len) {
		const char *dot = end - 1;
		while (dot > g && dot[-1] != '.')
			dot--;
		n += (size_t)snprintf(buf + n, len - n, "%s%.*s", n ? "." : "", (int)(end - dot),
				      dot);
		end = dot > g ? dot - 1 : g;
	}
	if (n < len)
		snprintf(buf + n, len - n, ".%s.%s", r->version, r->kind);
}

static void add_crd_schema(json_t *schemas, const struct proxy_resource *r, char *name, size_t len)
{
	const struct kt_message *om = kt_find("k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta");
	json_t *s = r->schema ? json_deep_copy(r->schema)
			      : json_pack("{s:s, s:b}", "type", "object",
					  "x-kubernetes-preserve-unknown-fields", 1);

	crd_schema_name(r, name, len);
	mark_kind(s, r, r->kind);
	if (om) {
		json_object_set_new(json_object_get(s, "properties"), "metadata", msg_ref(om));
		add_reachable(schemas, om, 0);
	}
	json_object_set_new(schemas, name, s);
}

/* A custom resource's list schema, as kube's CRD OpenAPI builder makes it
 * (apiextensions-apiserver pkg/controller/openapi/builder: <Kind>List with
 * apiVersion, kind, items of the kind and the list's metadata, items
 * required). */
static void add_crd_list_schema(json_t *schemas, const struct proxy_resource *r, const char *name,
				char *lname, size_t llen)
{
	const struct kt_message *lm = kt_find("k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta");
	char ref[400], desc[300];
	snprintf(lname, llen, "%sList", name);
	snprintf(ref, sizeof(ref), "#/components/schemas/%s", name);
	snprintf(desc, sizeof(desc), "%s is a list of %s", r->list_kind, r->kind);
	json_t *s = json_pack("{s:s, s:s, s:[s], s:{s:{s:s, s:{s:s}}}}", "description", desc,
			      "type", "object", "required", "items", "properties", "items", "type",
			      "array", "items", "$ref", ref);
	if (lm) {
		json_object_set_new(json_object_get(s, "properties"), "metadata", msg_ref(lm));
		add_reachable(schemas, lm, 0);
	}
	mark_kind(s, r, r->list_kind);
	json_object_set_new(schemas, lname, s);
}

/* Adds the kind's schema (and its list's); name gets the kind's schema
 * name, lname its list's ("" when it has none). */
static void add_kind_schemas(json_t *schemas, const struct proxy_resource *r, char *name,
			     size_t len, char *lname, size_t llen)
{
	const struct kt_message *m = r->proto ? kt_find(r->proto) : NULL;
	char list_proto[300];

	lname[0] = '\0';
	if (!m) {
		add_crd_schema(schemas, r, name, len);
		if (r->list_kind)
			add_crd_list_schema(schemas, r, name, lname, llen);
		return;
	}
	add_reachable(schemas, m, 0);
	openapi_schema_name(m->name, name, len);
	mark_kind(json_object_get(schemas, name), r, r->kind);
	snprintf(list_proto, sizeof(list_proto), "%sList", r->proto);
	const struct kt_message *lm = kt_find(list_proto);
	if (lm && r->list_kind) {
		add_reachable(schemas, lm, 0);
		openapi_schema_name(lm->name, lname, llen);
		mark_kind(json_object_get(schemas, lname), r, r->list_kind);
	}
}

/* ---- paths ---- */

/* What each parameter does, in this project's words (kube documents the
 * same parameters; clients such as kubectl explain and API browsers show
 * the text). */
static const struct {
	const char *name, *text;
} param_docs[] = {
    {"allowWatchBookmarks",
     "With watch: also send BOOKMARK events, which carry only a resourceVersion to resume from. "
     "The server decides when to send them; a client must not rely on their timing."},
    {"continue", "The continue token of the previous page of this list (its metadata.continue). "
		 "The next page comes from the same version of the list; a token too old is "
		 "answered 410 Gone."},
    {"dryRun", "All: check, default and admit the request but store nothing. All is the only "
	       "value accepted."},
    {"fieldManager", "The name of the actor making this change, recorded in managedFields (at "
		     "most 128 printable characters). Required for an apply patch."},
    {"fieldSelector", "Only objects whose fields match, such as metadata.name=web or "
		      "status.phase!=Running. Empty: every object."},
    {"fieldValidation", "What to do with unknown or duplicated fields in the body: Ignore, Warn "
			"(answer with a warning for each; the default) or Strict (refuse the "
			"request)."},
    {"force", "Apply patches only: take over fields that other managers own instead of "
	      "answering 409 Conflict."},
    {"gracePeriodSeconds", "Seconds the object has before it is deleted: 0 deletes it at once, "
			   "unset takes the kind's default."},
    {"ignoreStoreReadErrorWithClusterBreakingPotential",
     "Delete an object whose stored form cannot be read. What depends on it may break; the "
     "caller also needs the unsafe-delete-ignore-read-errors verb."},
    {"labelSelector", "Only objects whose labels match, such as app=web,tier in (front,back). "
		      "Empty: every object."},
    {"limit", "At most this many items in the answer. When more are left, metadata.continue "
	      "holds the token of the next page and metadata.remainingItemCount may count "
	      "them."},
    {"name", "The name of the object."},
    {"namespace", "The namespace of the object."},
    {"orphanDependents", "Deprecated (use propagationPolicy): true leaves the dependents, false "
			 "deletes them."},
    {"pretty", "true: indent the JSON answer."},
    {"propagationPolicy", "What becomes of the dependents: Orphan (kept), Background (the "
			  "garbage collector deletes them afterwards) or Foreground (the object "
			  "stays until they are gone)."},
    {"resourceVersion",
     "Which version to answer from. Unset: the latest. \"0\": any version the server holds. "
     "Another value: that version or a newer one (see resourceVersionMatch). With watch: the "
     "events after it."},
    {"resourceVersionMatch", "How a list's resourceVersion is read: Exact or NotOlderThan. Only "
			     "with resourceVersion."},
    {"sendInitialEvents", "With watch: first the objects as they are, as ADDED events, then a "
			  "BOOKMARK annotated k8s.io/initial-events-end, then the changes. Needs "
			  "resourceVersionMatch=NotOlderThan."},
    {"timeoutSeconds", "End the list or watch after this many seconds."},
    {"watch", "Stream the changes of the objects (ADDED, MODIFIED, DELETED events) instead of "
	      "answering their list."},
};

static const char *param_doc(const char *name)
{
	for (size_t i = 0; i < KB_ARRAY_SIZE(param_docs); i++)
		if (strcmp(param_docs[i].name, name) == 0)
			return param_docs[i].text;
	return NULL;
}

static json_t *query_param(const char *name, const char *type)
{
	json_t *p = json_pack("{s:s, s:s, s:{s:s, s:b}}", "name", name, "in", "query", "schema",
			      "type", type, "uniqueItems", 1);
	const char *d = param_doc(name);
	if (p && d)
		json_object_set_new(p, "description", json_string(d));
	return p;
}

static json_t *path_param(const char *name)
{
	json_t *p = json_pack("{s:s, s:s, s:b, s:{s:s, s:b}}", "name", name, "in", "path",
			      "required", 1, "schema", "type", "string", "uniqueItems", 1);
	const char *d = param_doc(name);
	if (p && d)
		json_object_set_new(p, "description", json_string(d));
	return p;
}

static json_t *write_params(bool patch)
{
	json_t *a = json_pack("[o, o, o]", query_param("dryRun", "string"),
			      query_param("fieldManager", "string"),
			      query_param("fieldValidation", "string"));
	if (patch)
		json_array_append_new(a, query_param("force", "boolean"));
	return a;
}

/* A list's query parameters, kube's set in kube's (alphabetical) order:
 * its generated list operations take allowWatchBookmarks, continue,
 * fieldSelector, labelSelector, limit, resourceVersion,
 * resourceVersionMatch, sendInitialEvents, timeoutSeconds and watch
 * (apiserver pkg/endpoints/installer.go, metav1.ListOptions). */
static json_t *list_params(void)
{
	static const struct {
		const char *name, *type;
	} params[] = {
	    {"allowWatchBookmarks", "boolean"},
	    {"continue", "string"},
	    {"fieldSelector", "string"},
	    {"labelSelector", "string"},
	    {"limit", "integer"},
	    {"resourceVersion", "string"},
	    {"resourceVersionMatch", "string"},
	    {"sendInitialEvents", "boolean"},
	    {"timeoutSeconds", "integer"},
	    {"watch", "boolean"},
	};
	json_t *a = json_array();

	for (size_t i = 0; i < KB_ARRAY_SIZE(params); i++)
		json_array_append_new(a, query_param(params[i].name, params[i].type));
	return a;
}

/* A delete's query parameters (metav1.DeleteOptions as query parameters:
 * dryRun, gracePeriodSeconds,
 * ignoreStoreReadErrorWithClusterBreakingPotential, orphanDependents,
 * propagationPolicy); a deletecollection takes the list's too (but watch
 * and allowWatchBookmarks), all in kube's alphabetical order. */
static json_t *delete_params(bool collection)
{
	static const struct {
		const char *name, *type;
		bool list;
	} params[] = {
	    {"continue", "string", true},
	    {"dryRun", "string", false},
	    {"fieldSelector", "string", true},
	    {"gracePeriodSeconds", "integer", false},
	    {"ignoreStoreReadErrorWithClusterBreakingPotential", "boolean", false},
	    {"labelSelector", "string", true},
	    {"limit", "integer", true},
	    {"orphanDependents", "boolean", false},
	    {"propagationPolicy", "string", false},
	    {"resourceVersion", "string", true},
	    {"resourceVersionMatch", "string", true},
	    {"sendInitialEvents", "boolean", true},
	    {"timeoutSeconds", "integer", true},
	};
	json_t *a = json_array();

	for (size_t i = 0; i < KB_ARRAY_SIZE(params); i++)
		if (collection || !params[i].list)
			json_array_append_new(a, query_param(params[i].name, params[i].type));
	return a;
}

static json_t *body_of(const char *schema_name, bool patch, bool builtin)
{
	char ref[400];
	json_t *content = json_object();

	snprintf(ref, sizeof(ref), "#/components/schemas/%s", schema_name);
	if (!patch) {
		json_object_set_new(content, "application/json",
				    json_pack("{s:{s:s}}", "schema", "$ref", ref));
	} else {
		const char *types[] = {
		    "application/apply-patch+yaml", "application/json-patch+json",
		    "application/merge-patch+json", "application/strategic-merge-patch+json"};
		for (size_t i = 0; i < KB_ARRAY_SIZE(types) - !builtin; i++)
			json_object_set_new(content, types[i],
					    json_pack("{s:{s:s}}", "schema", "type", "object"));
	}
	return json_pack("{s:o, s:b}", "content", content, "required", 1);
}

struct op_ctx {
	const struct proxy_resource *r;
	const char *group, *version, *kind; /* GVK of the operation */
	const char *schema;                 /* component of its body/response */
	bool builtin;
	const char *sub;         /* the subresource of its path, or NULL */
	const char *list_schema; /* a list's response component ("": the kind's) */
	bool all_namespaces;     /* the list of every namespace (/api/v1/pods) */
};

/* kube's ToValidOperationID (apiserver pkg/endpoints/openapi/openapi.go):
 * s without what is not a letter (or, past the first, a digit or '_'),
 * the letter after each dropped character upper-cased, and the first too
 * when cap. Appends to out (NUL-terminated, of size len). */
static void valid_op_id(const char *s, bool cap, char *out, size_t len)
{
	size_t n = strlen(out);
	for (size_t i = 0; s[i] && n + 1 < len; i++) {
		char ch = s[i];
		bool letter = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
		if (letter || ch == '_' || (i && ch >= '0' && ch <= '9')) {
			out[n++] = cap && ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
			cap = false;
		} else {
			cap = true;
		}
	}
	out[n] = '\0';
}

/* The group as kube's operation ids and tags name it: "core" for the
 * legacy group, ".k8s.io" cut off (GetOperationIDAndTags). */
static void op_group(const char *group, char *out, size_t len)
{
	size_t n = strlen(group);
	if (!*group) {
		snprintf(out, len, "core");
		return;
	}
	if (n > 7 && strcmp(group + n - 7, ".k8s.io") == 0)
		n -= 7;
	snprintf(out, len, "%.*s", (int)n, group);
}

/* kube's operationId and tag of an operation: the installer's operation
 * (registerResourceHandlers: verb, "Namespaced", kind, subresource) with
 * the group and version put after its verb, "listCoreV1NamespacedPod",
 * "deleteAppsV1CollectionNamespacedDeployment",
 * "readRbacAuthorizationV1ClusterRole", "patchCoreV1NamespacedPodStatus";
 * tag "core_v1", "rbacAuthorization_v1" (GetOperationIDAndTags). */
static void set_op_id(json_t *op, const struct op_ctx *c, const char *action)
{
	static const struct {
		const char *action, *verb, *infix;
	} verbs[] = {{"list", "list", ""},
		     {"get", "read", ""},
		     {"put", "replace", ""},
		     {"patch", "patch", ""},
		     {"post", "create", ""},
		     {"delete", "delete", ""},
		     {"deletecollection", "delete", "Collection"}};
	const char *verb = NULL, *infix = "";
	for (size_t i = 0; i < KB_ARRAY_SIZE(verbs); i++)
		if (strcmp(verbs[i].action, action) == 0) {
			verb = verbs[i].verb;
			infix = verbs[i].infix;
		}
	if (!verb)
		return;
	char g[256], id[700] = "", tag[300] = "";
	op_group(c->r->group, g, sizeof(g));
	snprintf(id, sizeof(id), "%s", verb);
	valid_op_id(g, true, id, sizeof(id));
	valid_op_id(c->r->version, true, id, sizeof(id));
	valid_op_id(infix, true, id, sizeof(id));
	valid_op_id(c->r->namespaced && !c->all_namespaces ? "Namespaced" : "", true, id,
		    sizeof(id));
	valid_op_id(c->r->kind, true, id, sizeof(id));
	if (c->sub)
		valid_op_id(c->sub, true, id, sizeof(id));
	if (c->all_namespaces)
		valid_op_id("ForAllNamespaces", true, id, sizeof(id));
	valid_op_id(g, false, tag, sizeof(tag));
	snprintf(tag + strlen(tag), sizeof(tag) - strlen(tag), "_");
	valid_op_id(c->r->version, false, tag, sizeof(tag));
	json_object_set_new(op, "operationId", json_string(id));
	json_object_set_new(op, "tags", json_pack("[s]", tag));
}

static json_t *operation(const struct op_ctx *c, const char *action, const char *verb_desc)
{
	char ref[400], desc[400];

	/* a list answers the list kind (installer.go: the LIST route writes
	 * versionedList) */
	bool list = strcmp(action, "list") == 0 && c->list_schema && *c->list_schema;
	snprintf(ref, sizeof(ref), "#/components/schemas/%s", list ? c->list_schema : c->schema);
	snprintf(desc, sizeof(desc), "%s %s", verb_desc, c->kind);
	json_t *op =
	    json_pack("{s:s, s:{s:{s:s, s:{s:{s:{s:s}}}}}, s:s, s:o}", "description", desc,
		      "responses", "200", "description", "OK", "content", "application/json",
		      "schema", "$ref", ref, "x-kubernetes-action", action,
		      "x-kubernetes-group-version-kind", gvk_object(c->group, c->version, c->kind));
	set_op_id(op, c, action);
	bool write = strcmp(action, "put") == 0 || strcmp(action, "patch") == 0 ||
		     strcmp(action, "post") == 0;
	if (write) {
		json_object_set_new(op, "parameters", write_params(strcmp(action, "patch") == 0));
		json_object_set_new(op, "requestBody",
				    body_of(c->schema, strcmp(action, "patch") == 0, c->builtin));
	} else if (strcmp(action, "list") == 0) {
		json_object_set_new(op, "parameters", list_params());
	} else if (strcmp(action, "delete") == 0 || strcmp(action, "deletecollection") == 0) {
		json_object_set_new(op, "parameters",
				    delete_params(strcmp(action, "deletecollection") == 0));
	}
	return op;
}

static void set_path(json_t *paths, const char *path, json_t *item, bool namespaced, bool named)
{
	json_t *params = json_array();

	if (named)
		json_array_append_new(params, path_param("name"));
	if (namespaced)
		json_array_append_new(params, path_param("namespace"));
	/* every path of kube's takes pretty (installer.go: the path's params) */
	json_array_append_new(params, query_param("pretty", "string"));
	json_object_set_new(item, "parameters", params);
	json_object_set_new(paths, path, item);
}

static void add_item_ops(json_t *item, const struct op_ctx *c, unsigned verbs)
{
	if (verbs & VERB_GET)
		json_object_set_new(item, "get", operation(c, "get", "read the specified"));
	if (verbs & VERB_UPDATE)
		json_object_set_new(item, "put", operation(c, "put", "replace the specified"));
	if (verbs & VERB_PATCH)
		json_object_set_new(item, "patch",
				    operation(c, "patch", "partially update the specified"));
	if (verbs & VERB_DELETE)
		json_object_set_new(item, "delete", operation(c, "delete", "delete a"));
}

/* A namespaced resource's list of every namespace ("/api/v1/pods"), as
 * kube's installer registers it (operationId ...ForAllNamespaces). */
static void add_all_namespaces_path(json_t *paths, const struct op_ctx *c)
{
	const struct proxy_resource *r = c->r;
	char path[400];
	if (!r->namespaced || !(r->verbs & VERB_LIST))
		return;
	if (r->group[0])
		snprintf(path, sizeof(path), "/apis/%s/%s/%s", r->group, r->version, r->plural);
	else
		snprintf(path, sizeof(path), "/api/%s/%s", r->version, r->plural);
	struct op_ctx all = *c;
	all.all_namespaces = true;
	json_t *item = json_object();
	json_object_set_new(item, "get", operation(&all, "list", "list or watch objects of kind"));
	set_path(paths, path, item, false, false);
}

static void add_resource_paths(json_t *paths, const struct proxy_resource *r, const char *schema,
			       const char *list_schema)
{
	char base[400], path[600];
	struct op_ctx c = {r,    r->group,    r->version, r->kind, schema, r->proto != NULL,
			   NULL, list_schema, false};
	unsigned verbs = r->verbs;

	if (r->group[0])
		snprintf(base, sizeof(base), "/apis/%s/%s%s/%s", r->group, r->version,
			 r->namespaced ? "/namespaces/{namespace}" : "", r->plural);
	else
		snprintf(base, sizeof(base), "/api/%s%s/%s", r->version,
			 r->namespaced ? "/namespaces/{namespace}" : "", r->plural);
	/* kubectl looks for the Namespace PATCH op (also for CRs): always there */
	if (!r->group[0] && strcmp(r->kind, "Namespace") == 0)
		verbs |= VERB_PATCH;
	json_t *coll = json_object();
	if (verbs & VERB_LIST)
		json_object_set_new(coll, "get",
				    operation(&c, "list", "list or watch objects of kind"));
	if (verbs & VERB_CREATE)
		json_object_set_new(coll, "post", operation(&c, "post", "create a"));
	if (verbs & VERB_DELETECOLLECTION)
		json_object_set_new(coll, "delete",
				    operation(&c, "deletecollection", "delete collection of"));
	set_path(paths, base, coll, r->namespaced, false);
	add_all_namespaces_path(paths, &c);

	json_t *item = json_object();
	add_item_ops(item, &c, verbs);
	snprintf(path, sizeof(path), "%s/{name}", base);
	set_path(paths, path, item, r->namespaced, true);

	for (const struct proxy_subresource *s = r->subresources; s && s->name; s++) {
		struct op_ctx sc = c;
		sc.sub = s->name;
		if (s->kind && strcmp(s->kind, r->kind) == 0) {
			sc.kind = s->kind;
		} else {
			continue; /* other kinds (Scale...) would need their own schemas */
		}
		json_t *sub = json_object();
		add_item_ops(sub, &sc, s->verbs);
		snprintf(path, sizeof(path), "%s/{name}/%s", base, s->name);
		set_path(paths, path, sub, r->namespaced, true);
	}
}

json_t *openapi_v3_gv(const char *group, const char *version)
{
	json_t *paths = NULL, *schemas = NULL;
	char name[300], lname[310];
	bool found = false;

	if (!group || !version)
		return NULL;
	paths = json_object();
	schemas = json_object();
	for (size_t i = 0; i < res_count(); i++) {
		const struct proxy_resource *r = res_at(i);
		if (!in_gv(r, group, version))
			continue;
		found = true;
		add_kind_schemas(schemas, r, name, sizeof(name), lname, sizeof(lname));
		add_resource_paths(paths, r, name, lname);
	}
	if (!found) {
		json_decref(paths);
		json_decref(schemas);
		return NULL;
	}
	return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}", "openapi", "3.0.0", "info", "title",
			 "Kubernetes", "version", OPENAPI_K8S_VERSION, "paths", paths, "components",
			 "schemas", schemas);
}

const char *openapi_v3_gv_text(const char *group, const char *version, size_t *len)
{
	if (!group || !version)
		return NULL;
	if (cached.text && strcmp(cached.group, group) == 0 &&
	    strcmp(cached.version, version) == 0) {
		*len = cached.len;
		return cached.text;
	}
	json_t *doc = openapi_v3_gv(group, version);
	if (!doc)
		return NULL;
	char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!text)
		return NULL;
	drop_cached_text();
	cached.group = strdup(group);
	cached.version = strdup(version);
	cached.text = text;
	cached.len = strlen(text);
	if (!cached.group || !cached.version) {
		drop_cached_text();
		return NULL;
	}
	*len = cached.len;
	return cached.text;
}
