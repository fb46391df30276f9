/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of FlowSchemas and PriorityLevelConfigurations with kube's
 * field paths and messages (pkg/apis/flowcontrol/validation), the
 * mandatory objects' fixed specs included (proxy/model/flowcontrol.h).
 *
 * Threading: any thread (no global mutable state).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/util.h"
#include "proxy/model/flowcontrol.h"
#include "proxy/validation/validate.h"

#define MAX_QUEUES  10000000
#define MAX_HASHBIT 60

static const char *const distinguishers[] = {"ByNamespace", "ByUser", NULL};
static const char *const verbs[] = {"create", "delete", "deletecollection", "get",   "list",
				    "patch",  "proxy",  "update",           "watch", NULL};
static const char *const subject_kinds[] = {"Group", "ServiceAccount", "User", NULL};
static const char *const pl_types[] = {"Exempt", "Limited", NULL};
static const char *const lr_types[] = {"Queue", "Reject", NULL};

/* ---- validation ----------------------------------------------------------- */

static bool has_star(const json_t *arr)
{
	size_t i;
	json_t *v;
	json_array_foreach (arr, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), "*") == 0)
			return true;
	return false;
}

/* Go's %q of a []string: ["a" "b"]. */
static void go_strings(const json_t *arr, char *buf, size_t len)
{
	size_t i, o = 0;
	json_t *v;
	o += (size_t)snprintf(buf, len, "[");
	json_array_foreach (arr, i, v) {
		char q[256];
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? " " : "",
					      val_quote(json_string_value(v), q, sizeof(q)));
	}
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

static void check_verbs(json_t *c, const json_t *vs, const char *f)
{
	char buf[1024], path[320];
	snprintf(path, sizeof(path), "%s.verbs", f);
	if (json_array_size(vs) == 0) {
		val_add(c, "FieldValueRequired", path, "verbs must contain at least one value");
		return;
	}
	go_strings(vs, buf, sizeof(buf));
	if (has_star(vs)) {
		if (json_array_size(vs) > 1)
			val_add(c, "FieldValueInvalid", path,
				"%s: if '*' is present, must not specify other verbs", buf);
		return;
	}
	size_t i;
	json_t *v;
	json_array_foreach (vs, i, v)
		if (!val_in_list(json_string_value(v), verbs)) {
			val_add(
			    c, "FieldValueNotSupported", path,
			    "%s: supported values: \"create\", \"delete\", \"deletecollection\", "
			    "\"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"",
			    buf);
			return;
		}
}

/* A list that may hold "*" only alone. */
static void check_list(json_t *c, const json_t *l, const char *f, const char *key,
		       const char *missing, const char *what)
{
	char path[320], buf[1024];
	snprintf(path, sizeof(path), "%s.%s", f, key);
	if (json_array_size(l) == 0) {
		val_add(c, "FieldValueRequired", path, "%s", missing);
	} else if (json_array_size(l) > 1 && has_star(l)) {
		go_strings(l, buf, sizeof(buf));
		val_add(c, "FieldValueInvalid", path,
			"%s: if '*' is present, must not specify other %s", buf, what);
	}
}

static void check_resource_rule(json_t *c, const json_t *rr, const char *f)
{
	char path[280], q[300];
	check_verbs(c, json_object_get(rr, "verbs"), f);
	check_list(c, json_object_get(rr, "apiGroups"), f, "apiGroups",
		   "resource rules must supply at least one api group", "api groups");
	check_list(c, json_object_get(rr, "resources"), f, "resources",
		   "resource rules must supply at least one resource", "resources");
	const json_t *ns = json_object_get(rr, "namespaces");
	snprintf(path, sizeof(path), "%s.namespaces", f);
	if (json_array_size(ns) == 0 && !json_is_true(json_object_get(rr, "clusterScope"))) {
		val_add(c, "FieldValueRequired", path,
			"resource rules that are not cluster scoped must supply at least one "
			"namespace");
	} else if (has_star(ns)) {
		if (json_array_size(ns) > 1) {
			char buf[1024];
			go_strings(ns, buf, sizeof(buf));
			val_add(c, "FieldValueInvalid", path,
				"%s: if '*' is present, must not specify other namespaces", buf);
		}
	} else {
		size_t i;
		json_t *v;
		json_array_foreach (ns, i, v) {
			const char *m = names_dns1123_label(json_string_value(v));
			char ip[320];
			snprintf(ip, sizeof(ip), "%s[%zu]", path, i);
			if (m)
				val_add(c, "FieldValueInvalid", ip,
					"%s: each member of this list must be '*' or a DNS-1123 "
					"label; %s",
					val_quote(json_string_value(v), q, sizeof(q)), m);
		}
	}
}

static const char *url_problem(const char *p)
{
	if (!*p)
		return "must not be empty";
	if (strcmp(p, "/") == 0)
		return NULL;
	if (*p != '/')
		return "must start with slash";
	if (strchr(p, ' '))
		return "must not contain white-space";
	if (strstr(p, "//"))
		return "must not contain double slash";
	const char *star = strchr(p, '*');
	size_t n = strlen(p);
	if (star && (strchr(star + 1, '*') || n < 2 || strcmp(p + n - 2, "/*") != 0))
		return "wildcard can only do suffix matching";
	return NULL;
}

static void check_nonresource_rule(json_t *c, const json_t *nr, const char *f)
{
	char path[300], q[300];
	check_verbs(c, json_object_get(nr, "verbs"), f);
	const json_t *urls = json_object_get(nr, "nonResourceURLs");
	check_list(c, urls, f, "nonResourceURLs", "nonResourceURLs must contain at least one value",
		   "non-resource URLs");
	if (!json_array_size(urls) || has_star(urls))
		return;
	size_t i;
	json_t *v;
	json_array_foreach (urls, i, v) {
		const char *u = json_string_value(v) ? json_string_value(v) : "";
		const char *m = url_problem(u);
		snprintf(path, sizeof(path), "%s.nonResourceURLs[%zu]", f, i);
		if (m)
			val_add(c, "FieldValueInvalid", path, "%s: %s", val_quote(u, q, sizeof(q)),
				m);
	}
}

/* A subject's member for its kind; the other two must be absent. */
static void check_subject(json_t *c, const json_t *s, const char *f)
{
	static const char *const members[] = {"serviceAccount", "user", "group"};
	static const char *const kinds[] = {"ServiceAccount", "User", "Group"};
	const char *kind = json_string_value(json_object_get(s, "kind"));
	char path[240], q[300];
	size_t k = 0;
	while (k < 3 && !(kind && strcmp(kind, kinds[k]) == 0))
		k++;
	if (k == 3) {
		snprintf(path, sizeof(path), "%s.kind", f);
		val_not_supported(c, path, kind ? kind : "", subject_kinds);
		return;
	}
	const json_t *m = json_object_get(s, members[k]);
	snprintf(path, sizeof(path), "%s.%s", f, members[k]);
	if (!json_is_object(m)) {
		val_add(c, "FieldValueRequired", path, "%s is required when subject kind is '%s'",
			members[k], kinds[k]);
	} else {
		const char *name = json_string_value(json_object_get(m, "name"));
		char np[260];
		snprintf(np, sizeof(np), "%s.name", path);
		if (!name || !*name)
			val_add(c, "FieldValueRequired", np, NULL);
		if (k == 0) {
			const char *ns = json_string_value(json_object_get(m, "namespace"));
			const char *msg = ns && *ns ? names_dns1123_label(ns) : NULL;
			if (name && *name && strcmp(name, "*") != 0 &&
			    names_dns1123_subdomain(name))
				val_add(c, "FieldValueInvalid", np, "%s: %s",
					val_quote(name, q, sizeof(q)),
					names_dns1123_subdomain(name));
			snprintf(np, sizeof(np), "%s.namespace", path);
			if (!ns || !*ns)
				val_add(c, "FieldValueRequired", np,
					"must specify namespace for service account");
			else if (msg)
				val_add(c, "FieldValueInvalid", np, "%s: %s",
					val_quote(ns, q, sizeof(q)), msg);
		}
	}
	for (size_t o = 0; o < 3; o++) {
		if (o == k || !json_object_get(s, members[o]))
			continue;
		snprintf(path, sizeof(path), "%s.%s", f, members[o]);
		val_add(c, "FieldValueForbidden", path,
			"%s is forbidden when subject kind is not '%s'", members[o], kinds[o]);
	}
}

static void check_rules(json_t *c, const json_t *rule, const char *f)
{
	char path[200];
	const json_t *subs = json_object_get(rule, "subjects");
	const json_t *rr = json_object_get(rule, "resourceRules");
	const json_t *nr = json_object_get(rule, "nonResourceRules");
	size_t i;
	json_t *v;
	if (json_array_size(subs) == 0) {
		snprintf(path, sizeof(path), "%s.subjects", f);
		val_add(c, "FieldValueRequired", path, "subjects must contain at least one value");
	}
	json_array_foreach (subs, i, v) {
		snprintf(path, sizeof(path), "%s.subjects[%zu]", f, i);
		check_subject(c, v, path);
	}
	if (json_array_size(rr) == 0 && json_array_size(nr) == 0)
		val_add(c, "FieldValueRequired", f,
			"at least one of resourceRules and nonResourceRules has to be non-empty");
	json_array_foreach (rr, i, v) {
		snprintf(path, sizeof(path), "%s.resourceRules[%zu]", f, i);
		check_resource_rule(c, v, path);
	}
	json_array_foreach (nr, i, v) {
		snprintf(path, sizeof(path), "%s.nonResourceRules[%zu]", f, i);
		check_nonresource_rule(c, v, path);
	}
}

static void check_conditions(json_t *c, const json_t *obj)
{
	const json_t *conds = json_object_get(json_object_get(obj, "status"), "conditions");
	size_t i, j;
	json_t *v, *w;
	char path[200], q[300];
	json_array_foreach (conds, i, v) {
		const char *t = json_string_value(json_object_get(v, "type"));
		snprintf(path, sizeof(path), "status.conditions[%zu].type", i);
		if (!t || !*t) {
			val_add(c, "FieldValueRequired", path, "must not be empty");
			continue;
		}
		json_array_foreach (conds, j, w) {
			if (j >= i)
				break;
			const char *u = json_string_value(json_object_get(w, "type"));
			if (u && strcmp(u, t) == 0) {
				val_add(c, "FieldValueDuplicate", path, "%s",
					val_quote(t, q, sizeof(q)));
				break;
			}
		}
	}
}

/* kube prints the spec as Go's %#v of its internal struct; the type name
 * stands for it here. */
static void check_fixed(json_t *c, const json_t *obj, json_t *want, const char *name,
			const char *gotype)
{
	if (want && !json_equal(json_object_get(obj, "spec"), want))
		val_add(c, "FieldValueInvalid", "spec",
			"%s{...}: spec of '%s' must equal the fixed value", gotype, name);
	json_decref(want);
}

static void val_flowschema(const json_t *obj, json_t *c)
{
	const json_t *spec = json_object_get(obj, "spec");
	const char *name =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	json_int_t p = json_integer_value(json_object_get(spec, "matchingPrecedence"));
	if (p <= 0)
		val_add(c, "FieldValueInvalid", "spec.matchingPrecedence",
			"%lld: must be a positive value", (long long)p);
	if (p > FC_MAX_PREC)
		val_add(c, "FieldValueInvalid", "spec.matchingPrecedence",
			"%lld: must not be greater than %d", (long long)p, FC_MAX_PREC);
	if (p == 1 && (!name || strcmp(name, "exempt") != 0))
		val_add(c, "FieldValueInvalid", "spec.matchingPrecedence",
			"1: only the schema named 'exempt' may have matchingPrecedence 1");
	const json_t *dm = json_object_get(spec, "distinguisherMethod");
	const char *dt = json_string_value(json_object_get(dm, "type"));
	if (json_is_object(dm) && !val_in_list(dt, distinguishers))
		val_not_supported(c, "spec.distinguisherMethod.type", dt ? dt : "", distinguishers);
	const char *pl = json_string_value(
	    json_object_get(json_object_get(spec, "priorityLevelConfiguration"), "name"));
	char q[300];
	if (!pl || !*pl)
		val_add(c, "FieldValueRequired", "spec.priorityLevelConfiguration.name",
			"must reference a priority level");
	else if (names_dns1123_subdomain(pl))
		val_add(c, "FieldValueInvalid", "spec.priorityLevelConfiguration.name", "%s: %s",
			val_quote(pl, q, sizeof(q)), names_dns1123_subdomain(pl));
	size_t i;
	json_t *r;
	json_array_foreach (json_object_get(spec, "rules"), i, r) {
		char path[64];
		snprintf(path, sizeof(path), "spec.rules[%zu]", i);
		check_rules(c, r, path);
	}
	if (name)
		check_fixed(c, obj, flowcontrol_fixed_fs(name), name, "flowcontrol.FlowSchemaSpec");
	check_conditions(c, obj);
}

/* shufflesharding.RequiredEntropyBits: ceil(log2(deck) * hand). */
static int entropy_bits(json_int_t deck, json_int_t hand)
{
	return (int)ceil(log2((double)deck) * (double)hand);
}

static void check_queuing(json_t *c, const json_t *q)
{
	const char *f = "spec.limited.limitResponse.queuing";
	char path[200];
	json_int_t ql = json_integer_value(json_object_get(q, "queueLengthLimit"));
	json_int_t qs = json_integer_value(json_object_get(q, "queues"));
	json_int_t hs = json_integer_value(json_object_get(q, "handSize"));
	snprintf(path, sizeof(path), "%s.queueLengthLimit", f);
	if (ql <= 0)
		val_add(c, "FieldValueInvalid", path, "%lld: must be positive", (long long)ql);
	snprintf(path, sizeof(path), "%s.queues", f);
	if (qs <= 0)
		val_add(c, "FieldValueInvalid", path, "%lld: must be positive", (long long)qs);
	else if (qs > MAX_QUEUES)
		val_add(c, "FieldValueInvalid", path, "%lld: must not be greater than %d",
			(long long)qs, MAX_QUEUES);
	snprintf(path, sizeof(path), "%s.handSize", f);
	if (hs <= 0)
		val_add(c, "FieldValueInvalid", path, "%lld: must be positive", (long long)hs);
	else if (hs > qs)
		val_add(c, "FieldValueInvalid", path,
			"%lld: should not be greater than queues (%lld)", (long long)hs,
			(long long)qs);
	else if (entropy_bits(qs, hs) > MAX_HASHBIT)
		val_add(
		    c, "FieldValueInvalid", path,
		    "%lld: required entropy bits of deckSize %lld and handSize %lld should not be "
		    "greater than %d",
		    (long long)hs, (long long)qs, (long long)hs, MAX_HASHBIT);
}

static void check_percent(json_t *c, const json_t *o, const char *f, const char *key)
{
	const json_t *v = json_object_get(o, key);
	char path[200];
	snprintf(path, sizeof(path), "%s.%s", f, key);
	if (json_is_integer(v) && (json_integer_value(v) < 0 || json_integer_value(v) > 100))
		val_add(c, "FieldValueInvalid", path, "%lld: must be between 0 and 100, inclusive",
			(long long)json_integer_value(v));
}

static void check_limited(json_t *c, const json_t *lim)
{
	const json_t *ncs = json_object_get(lim, "nominalConcurrencyShares");
	if (json_integer_value(ncs) < 0)
		val_add(c, "FieldValueInvalid", "spec.limited.nominalConcurrencyShares",
			"%lld: must be a non-negative integer", (long long)json_integer_value(ncs));
	check_percent(c, lim, "spec.limited", "lendablePercent");
	const json_t *blp = json_object_get(lim, "borrowingLimitPercent");
	if (json_is_integer(blp) && json_integer_value(blp) < 0)
		val_add(c, "FieldValueInvalid", "spec.limited.borrowingLimitPercent",
			"%lld: if specified, must be a non-negative integer",
			(long long)json_integer_value(blp));
	const json_t *lr = json_object_get(lim, "limitResponse");
	const char *t = json_string_value(json_object_get(lr, "type"));
	const json_t *q = json_object_get(lr, "queuing");
	if (t && strcmp(t, "Reject") == 0) {
		if (q && !json_is_null(q))
			val_add(c, "FieldValueForbidden", "spec.limited.limitResponse.queuing",
				"must be nil if limited.limitResponse.type is not Limited");
	} else if (t && strcmp(t, "Queue") == 0) {
		if (!json_is_object(q))
			val_add(c, "FieldValueRequired", "spec.limited.limitResponse.queuing",
				"must not be empty if limited.limitResponse.type is Limited");
		else
			check_queuing(c, q);
	} else {
		val_not_supported(c, "spec.limited.limitResponse.type", t ? t : "", lr_types);
	}
}

static void val_priority_level(const json_t *obj, json_t *c)
{
	const json_t *spec = json_object_get(obj, "spec");
	const char *name =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	const char *t = json_string_value(json_object_get(spec, "type"));
	bool exempt_name = name && strcmp(name, "exempt") == 0;
	bool exempt_type = t && strcmp(t, "Exempt") == 0;
	char q[64];
	if (exempt_name != exempt_type)
		val_add(c, "FieldValueInvalid", "spec.type",
			"%s: type must be 'Exempt' if and only if name is 'exempt'",
			val_quote(t ? t : "", q, sizeof(q)));
	const json_t *lim = json_object_get(spec, "limited"), *ex = json_object_get(spec, "exempt");
	if (exempt_type) {
		if (lim && !json_is_null(lim))
			val_add(c, "FieldValueForbidden", "spec.limited",
				"must be nil if the type is not Limited");
		const json_t *ncs = json_object_get(ex, "nominalConcurrencyShares");
		if (json_integer_value(ncs) < 0)
			val_add(c, "FieldValueInvalid", "spec.exempt.nominalConcurrencyShares",
				"%lld: must be a non-negative integer",
				(long long)json_integer_value(ncs));
		check_percent(c, ex, "spec.exempt", "lendablePercent");
	} else if (t && strcmp(t, "Limited") == 0) {
		if (ex && !json_is_null(ex))
			val_add(c, "FieldValueForbidden", "spec.exempt",
				"must be nil if the type is Limited");
		if (!json_is_object(lim))
			val_add(c, "FieldValueRequired", "spec.limited",
				"must not be empty when type is Limited");
		else
			check_limited(c, lim);
	} else {
		val_not_supported(c, "spec.type", t ? t : "", pl_types);
	}
	/* the exempt level's shares and lendable percent may be tuned; the
	 * catch-all's spec is fixed */
	if (name && strcmp(name, "catch-all") == 0)
		check_fixed(c, obj, flowcontrol_fixed_pl(name), name,
			    "flowcontrol.PriorityLevelConfigurationSpec");
	check_conditions(c, obj);
}

void val_flowcontrol(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		     json_t *causes)
{
	(void)old;
	if (flowcontrol_is_fs(r))
		val_flowschema(obj, causes);
	else
		val_priority_level(obj, causes);
}
