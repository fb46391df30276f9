/* SPDX-License-Identifier: Apache-2.0 */
/*
 * API Priority and Fairness objects as data (flowcontrol.apiserver.k8s.io/v1
 * FlowSchema and PriorityLevelConfiguration): kube's defaults
 * (SetDefaults_*) and the fixed specs of the two mandatory pairs kube's
 * configuration ensurer keeps, `exempt` and `catch-all`. Validation is
 * proxy/validation/validate_flowcontrol.c; the pairs are made at start by
 * proxy/api/flowcontrol.c.
 *
 * Threading: any thread (no global mutable state).
 */
#include <string.h>

#include "lib/util.h"
#include "proxy/model/flowcontrol.h"

static json_t *all_rules(void)
{
	return json_pack("[{s:[s],s:[s],s:[s],s:b,s:[s]}]", "verbs", "*", "apiGroups", "*",
			 "resources", "*", "clusterScope", 1, "namespaces", "*");
}

static json_t *all_nonresource(void)
{
	return json_pack("[{s:[s],s:[s]}]", "verbs", "*", "nonResourceURLs", "*");
}

static json_t *group(const char *name)
{
	return json_pack("{s:s,s:{s:s}}", "kind", "Group", "group", "name", name);
}

/* The fixed spec of mandatory FlowSchema `name`, or NULL. */
json_t *flowcontrol_fixed_fs(const char *name)
{
	if (strcmp(name, "exempt") == 0)
		return json_pack("{s:{s:s},s:i,s:[{s:[o],s:o,s:o}]}", "priorityLevelConfiguration",
				 "name", "exempt", "matchingPrecedence", 1, "rules", "subjects",
				 group("system:masters"), "resourceRules", all_rules(),
				 "nonResourceRules", all_nonresource());
	if (strcmp(name, "catch-all") == 0)
		return json_pack("{s:{s:s},s:i,s:{s:s},s:[{s:[o,o],s:o,s:o}]}",
				 "priorityLevelConfiguration", "name", "catch-all",
				 "matchingPrecedence", FC_MAX_PREC, "distinguisherMethod", "type",
				 "ByUser", "rules", "subjects", group("system:unauthenticated"),
				 group("system:authenticated"), "resourceRules", all_rules(),
				 "nonResourceRules", all_nonresource());
	return NULL;
}

/* The fixed spec of mandatory PriorityLevelConfiguration `name`, or NULL. */
json_t *flowcontrol_fixed_pl(const char *name)
{
	if (strcmp(name, "exempt") == 0)
		return json_pack("{s:s,s:{s:i,s:i}}", "type", "Exempt", "exempt",
				 "nominalConcurrencyShares", 0, "lendablePercent", 0);
	if (strcmp(name, "catch-all") == 0)
		return json_pack("{s:s,s:{s:i,s:i,s:{s:s}}}", "type", "Limited", "limited",
				 "nominalConcurrencyShares", 5, "lendablePercent", 0,
				 "limitResponse", "type", "Reject");
	return NULL;
}

bool flowcontrol_is_fs(const struct proxy_resource *r)
{
	return strcmp(r->kind, "FlowSchema") == 0;
}

/* ---- defaults ------------------------------------------------------------- */

static void set_default(json_t *o, const char *key, json_int_t v)
{
	if (json_is_object(o) && !json_is_integer(json_object_get(o, key)))
		json_object_set_new(o, key, json_integer(v));
}

void flowcontrol_default(const struct proxy_resource *res, json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec))
		return;
	if (flowcontrol_is_fs(res)) {
		json_t *p = json_object_get(spec, "matchingPrecedence");
		if (!json_is_integer(p) || json_integer_value(p) == 0)
			json_object_set_new(spec, "matchingPrecedence", json_integer(1000));
		return;
	}
	json_t *ex = json_object_get(spec, "exempt"), *lim = json_object_get(spec, "limited");
	set_default(ex, "nominalConcurrencyShares", 0);
	set_default(ex, "lendablePercent", 0);
	set_default(lim, "nominalConcurrencyShares", 30);
	set_default(lim, "lendablePercent", 0);
	json_t *q = json_object_get(json_object_get(lim, "limitResponse"), "queuing");
	if (json_is_object(q)) {
		static const char *const keys[] = {"handSize", "queues", "queueLengthLimit"};
		static const json_int_t vals[] = {8, 64, 50};
		for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
			if (json_integer_value(json_object_get(q, keys[i])) == 0)
				json_object_set_new(q, keys[i], json_integer(vals[i]));
	}
}
