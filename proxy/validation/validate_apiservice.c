/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of apiregistration.k8s.io/v1 APIService with kube-aggregator's
 * field paths and messages (pkg/apis/apiregistration/validation): the name
 * is a path segment (val_object_meta) that must equal
 * `<spec.version>.<spec.group>`; only v1 may have an empty group (the core
 * group's `v1.`); the group is a DNS-1123 subdomain and the version a
 * DNS-1035 label; groupPriorityMinimum is in (0, 20000] and versionPriority
 * in (0, 1000]; a local APIService (no spec.service) has neither caBundle
 * nor insecureSkipTLSVerify; a service names its namespace, name and a
 * valid port, and insecureSkipTLSVerify excludes a caBundle. The status's conditions have
 * the statuses True, False or Unknown. An update is checked as a create
 * (kube's ValidateAPIServiceUpdate adds only the metadata rules).
 *
 * Threading: any thread (no global mutable state).
 */
#include "proxy/validation/validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

static const char *const cond_statuses[] = {"True", "False", "Unknown", NULL};

static void check_syntax(json_t *c, enum names_syntax syn, const char *field, const char *v)
{
	const char *m[NAMES_MAXMSG];
	char q[512];
	size_t n = names_syntax_msgs(syn, v, m);
	for (size_t i = 0; i < n; i++)
		val_add(c, "FieldValueInvalid", field, "%s: %s", val_quote(v, q, sizeof(q)), m[i]);
}

/* The name kube requires, when the name is otherwise a valid path segment. */
static void check_name(json_t *c, const json_t *obj, const char *group, const char *version)
{
	const char *name =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	const char *m[NAMES_MAXMSG];
	if (!name || !*name || names_syntax_msgs(NAMES_PATH_SEGMENT, name, m))
		return;
	size_t len = strlen(version) + strlen(group) + 2;
	char *want = malloc(len);
	if (!want)
		return;
	snprintf(want, len, "%s.%s", version, group);
	if (strcmp(name, want) != 0) {
		char qn[512], qw[512];
		val_add(c, "FieldValueInvalid", "metadata.name",
			"%s: must be `spec.version+\".\"+spec.group`: %s",
			val_quote(name, qn, sizeof(qn)), val_quote(want, qw, sizeof(qw)));
	}
	free(want);
}

static void check_priorities(json_t *c, const json_t *spec)
{
	json_int_t g = json_integer_value(json_object_get(spec, "groupPriorityMinimum"));
	json_int_t v = json_integer_value(json_object_get(spec, "versionPriority"));
	if (g <= 0 || g > 20000)
		val_add(c, "FieldValueInvalid", "spec.groupPriorityMinimum",
			"%lld: must be positive and less than 20000", (long long)g);
	if (v <= 0 || v > 1000)
		val_add(c, "FieldValueInvalid", "spec.versionPriority",
			"%lld: must be positive and less than 1000", (long long)v);
}

/* Decoded bytes of the base64 caBundle (0 when absent or not base64). */
static size_t ca_bundle_len(const json_t *spec)
{
	const char *b64 = val_jstr(spec, "caBundle");
	unsigned char *raw = NULL;
	size_t n = 0;
	if (!b64 || !*b64 || kb_base64_decode(b64, strlen(b64), &raw, &n) < 0)
		return 0;
	free(raw);
	return n;
}

static void check_service(json_t *c, const json_t *spec)
{
	const json_t *svc = json_object_get(spec, "service");
	bool insecure = json_is_true(json_object_get(spec, "insecureSkipTLSVerify"));
	size_t ca = ca_bundle_len(spec);
	if (!json_is_object(svc)) {
		if (ca)
			val_add(c, "FieldValueInvalid", "spec.caBundle",
				"\"%zu bytes\": local APIServices may not have a caBundle", ca);
		if (insecure)
			val_add(c, "FieldValueInvalid", "spec.insecureSkipTLSVerify",
				"true: local APIServices may not have insecureSkipTLSVerify");
		return;
	}
	const char *ns = val_jstr(svc, "namespace"), *name = val_jstr(svc, "name");
	if (!ns || !*ns)
		val_add(c, "FieldValueRequired", "spec.service.namespace", NULL);
	if (!name || !*name)
		val_add(c, "FieldValueRequired", "spec.service.name", NULL);
	json_t *port = json_object_get(svc, "port"); /* defaulted to 443 */
	json_int_t pn = json_is_integer(port) ? json_integer_value(port) : 443;
	if (pn < 1 || pn > 65535)
		val_add(c, "FieldValueInvalid", "spec.service.port",
			"%lld: port is not valid: must be between 1 and 65535, inclusive",
			(long long)pn);
	if (insecure && ca)
		val_add(c, "FieldValueInvalid", "spec.insecureSkipTLSVerify",
			"true: may not be true if caBundle is present");
}

static void check_status(json_t *c, const json_t *obj)
{
	size_t i;
	json_t *cond;
	json_array_foreach (json_object_get(json_object_get(obj, "status"), "conditions"), i,
			    cond) {
		const char *st = val_jstr(cond, "status");
		if (!val_in_list(st, cond_statuses)) {
			char field[VAL_PATHLEN];
			val_not_supported(c, val_path(field, "status.conditions[%zu].status", i),
					  st ? st : "", cond_statuses);
		}
	}
}

void val_apiservice(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		    json_t *causes)
{
	(void)r;
	(void)old;
	const json_t *spec = json_object_get(obj, "spec");
	const char *group = val_jstr(spec, "group"), *version = val_jstr(spec, "version");
	group = group ? group : "";
	version = version ? version : "";
	check_name(causes, obj, group, version);
	if (!*group && strcmp(version, "v1") != 0)
		val_add(causes, "FieldValueRequired", "spec.group",
			"only v1 may have an empty group and it better be legacy kube");
	if (*group)
		check_syntax(causes, NAMES_DNS1123_SUBDOMAIN, "spec.group", group);
	check_syntax(causes, NAMES_DNS1035_LABEL, "spec.version", version);
	check_priorities(causes, spec);
	check_service(causes, spec);
	check_status(causes, obj);
}
