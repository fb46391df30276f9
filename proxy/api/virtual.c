/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Resources that are computed, never stored: the access reviews
 * (authorization.k8s.io/v1 SelfSubjectAccessReview, SelfSubjectRulesReview,
 * SubjectAccessReview, LocalSubjectAccessReview) and the identity reviews
 * (authentication.k8s.io SelfSubjectReview v1/v1beta1, TokenReview). Each
 * takes a POST (JSON or protobuf), answers 201 with the object and its
 * status filled in, as kube-apiserver does; nothing is kept.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/model/protobuf.h"
#include "proxy/api/api.h"
#include "proxy/auth/rbac.h"

static int decode(struct req *r, json_t **out)
{
	const char *ct = kb_http_req_header(r->http, "content-type");
	char err[256] = "";
	*out = NULL;
	if (ct && strstr(ct, "protobuf")) {
		if (r->res->proto && pb_decode_k8s(r->http->body, r->http->body_len, r->res->proto,
						   out, err, sizeof(err)) == 0)
			return 0;
		reply_statusf(r, 400, "BadRequest", "unable to decode protobuf body: %s", err);
		return -EINVAL;
	}
	*out = json_loadb(r->http->body, r->http->body_len, 0, NULL);
	if (json_is_object(*out))
		return 0;
	json_decref(*out);
	*out = NULL;
	reply_status(r, 400, "BadRequest", "the object provided is unrecognized: not a JSON object",
		     NULL);
	return -EINVAL;
}

static const char *str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "";
}

/* Attributes from a review's spec (strings borrowed from spec). */
static bool spec_attrs(const json_t *spec, struct rbac_attrs *a)
{
	const json_t *ra = json_object_get(spec, "resourceAttributes");
	const json_t *na = json_object_get(spec, "nonResourceAttributes");
	if (json_is_object(ra)) {
		a->resource_request = true;
		a->verb = str(ra, "verb");
		a->api_group = str(ra, "group");
		a->resource = str(ra, "resource");
		a->subresource = str(ra, "subresource");
		a->ns = str(ra, "namespace");
		a->name = str(ra, "name");
		return true;
	}
	if (json_is_object(na)) {
		a->verb = str(na, "verb");
		a->path = str(na, "path");
		return true;
	}
	return false;
}

static void reply_review(struct req *r, json_t *obj, json_t *status)
{
	char av[128];
	snprintf(av, sizeof(av), "%s/%s", r->res->group, r->res->version);
	json_object_set_new(obj, "apiVersion", json_string(av));
	json_object_set_new(obj, "kind", json_string(r->res->kind));
	json_t *m = json_object_get(obj, "metadata");
	if (!json_is_object(m))
		json_object_set_new(obj, "metadata", json_object());
	json_object_set_new(obj, "status", status);
	reply_json(r, 201, obj);
}

static json_t *access_status(struct proxy *px, const struct rbac_attrs *a)
{
	char why[1024];
	bool ok = authz_check(px, a, why, sizeof(why));
	json_t *st = json_pack("{s:b}", "allowed", ok);
	if (ok && why[0])
		json_object_set_new(st, "reason", json_string(why));
	return st;
}

static void self_access(struct req *r, json_t *obj)
{
	const char *g[17];
	size_t ng = 0;
	for (int i = 0; i < r->ngroups && ng < 17; i++)
		g[ng++] = r->groups[i];
	struct rbac_attrs a = {.user = r->user, .groups = g, .ngroups = ng};
	json_t *spec = json_object_get(obj, "spec");
	if (!spec_attrs(spec, &a)) {
		reply_invalid(r, r->res->kind, "",
			      json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueRequired",
					"message",
					"Required value: exactly one of nonResourceAttributes or "
					"resourceAttributes must be specified",
					"field", "spec.resourceAttributes"));
		return;
	}
	reply_review(r, obj, access_status(r->px, &a));
}

static void subject_access(struct req *r, json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	json_t *groups = json_object_get(spec, "groups");
	const char *g[64];
	size_t ng = 0, i;
	json_t *v;
	json_array_foreach (groups, i, v)
		if (json_string_value(v) && ng < KB_ARRAY_SIZE(g))
			g[ng++] = json_string_value(v);
	struct rbac_attrs a = {.user = str(spec, "user"), .groups = g, .ngroups = ng};
	json_t *causes = json_array();
	if (!*a.user && !ng)
		json_array_append_new(
		    causes,
		    json_pack(
			"{s:s,s:s,s:s}", "reason", "FieldValueInvalid", "message",
			"Invalid value: \"\": at least one of user or group must be specified",
			"field", "spec.user"));
	if (!spec_attrs(spec, &a))
		json_array_append_new(
		    causes, json_pack("{s:s,s:s,s:s}", "reason", "FieldValueRequired", "message",
				      "Required value: exactly one of nonResourceAttributes or "
				      "resourceAttributes must be specified",
				      "field", "spec.resourceAttributes"));
	bool local = r->res->namespaced;
	if (local && a.resource_request && strcmp(a.ns ? a.ns : "", r->ns ? r->ns : "") != 0)
		json_array_append_new(
		    causes, json_pack("{s:s,s:s,s:s}", "reason", "FieldValueInvalid", "message",
				      "Invalid value: \"\": must match metadata.namespace", "field",
				      "spec.resourceAttributes.namespace"));
	if (json_array_size(causes)) {
		reply_invalid(r, r->res->kind, "", causes);
		return;
	}
	json_decref(causes);
	reply_review(r, obj, access_status(r->px, &a));
}

/* Splits PolicyRules into ResourceRules and NonResourceRules. */
static void split_rules(const json_t *rules, json_t *res, json_t *nonres)
{
	size_t i;
	json_t *rule;
	json_array_foreach (rules, i, rule) {
		json_t *urls = json_object_get(rule, "nonResourceURLs");
		json_t *verbs = json_object_get(rule, "verbs");
		if (json_array_size(urls)) {
			json_array_append_new(nonres, json_pack("{s:O,s:O}", "verbs", verbs,
								"nonResourceURLs", urls));
			continue;
		}
		json_t *o = json_pack("{s:O}", "verbs", verbs);
		const char *keys[] = {"apiGroups", "resources", "resourceNames"};
		for (size_t k = 0; k < KB_ARRAY_SIZE(keys); k++)
			if (json_array_size(json_object_get(rule, keys[k])))
				json_object_set(o, keys[k], json_object_get(rule, keys[k]));
		json_array_append_new(res, o);
	}
}

static void self_rules(struct req *r, json_t *obj)
{
	const char *g[17];
	size_t ng = 0;
	for (int i = 0; i < r->ngroups && ng < 17; i++)
		g[ng++] = r->groups[i];
	const char *ns = str(json_object_get(obj, "spec"), "namespace");
	json_t *rules = authz_rules(r->px, r->user, g, ng, ns);
	json_t *res = json_array(), *nonres = json_array();
	split_rules(rules, res, nonres);
	json_decref(rules);
	reply_review(r, obj,
		     json_pack("{s:o,s:o,s:b}", "resourceRules", res, "nonResourceRules", nonres,
			       "incomplete", false));
}

static void self_subject(struct req *r, json_t *obj)
{
	reply_review(r, obj, json_pack("{s:o}", "userInfo", req_user_info(r)));
}

static void token_review(struct req *r, json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	const char *aud[16];
	size_t na = 0, i;
	json_t *v;
	json_array_foreach (json_object_get(spec, "audiences"), i, v)
		if (json_string_value(v) && na < KB_ARRAY_SIZE(aud))
			aud[na++] = json_string_value(v);
	struct req *who = calloc(1, sizeof(*who));
	if (!who) {
		reply_errno(r, -ENOMEM, NULL);
		return;
	}
	json_t *st;
	if (auth_token(r->px, str(spec, "token"), na ? aud : NULL, na, who) == 0) {
		st = json_pack("{s:b,s:o}", "authenticated", true, "user", req_user_info(who));
		json_t *a = json_array();
		for (size_t k = 0; k < na; k++)
			json_array_append_new(a, json_string(aud[k]));
		if (!na)
			json_array_append_new(
			    a, json_string("https://kubernetes.default.svc.cluster.local"));
		json_object_set_new(st, "audiences", a);
	} else {
		st = json_pack("{s:{},s:s}", "user", "error", "[invalid bearer token]");
	}
	free(who->uid);
	req_forget_user(who);
	free(who);
	reply_review(r, obj, st);
}

void virtual_handle(struct req *r)
{
	json_t *obj = NULL;
	if (strcmp(r->http->method, "POST") != 0 || r->name) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	if (decode(r, &obj) < 0)
		return;
	const char *kind = r->res->kind;
	if (strcmp(kind, "SelfSubjectAccessReview") == 0)
		self_access(r, obj);
	else if (strcmp(kind, "SubjectAccessReview") == 0 ||
		 strcmp(kind, "LocalSubjectAccessReview") == 0)
		subject_access(r, obj);
	else if (strcmp(kind, "SelfSubjectRulesReview") == 0)
		self_rules(r, obj);
	else if (strcmp(kind, "SelfSubjectReview") == 0)
		self_subject(r, obj);
	else if (strcmp(kind, "TokenReview") == 0)
		token_review(r, obj);
	else
		reply_status(r, 404, "NotFound", "the server could not find the requested resource",
			     json_object());
	json_decref(obj);
}
