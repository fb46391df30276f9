/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The write path's checks, in kube's order: mutating webhooks, the write's
 * authorization checks (RBAC escalation), metadata and kind validation
 * (with a custom resource's schema and rules), the refused host fields of a
 * syncing tenant's pods, the built-in admission chain, then the validating
 * webhooks. And the write path's defaults: kube's per-kind defaults
 * (proxy/model/defaults.c) after the allocation they leave to the server,
 * a Service's ClusterIP.
 *
 * Threading: loop thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "proxy/model/schema.h"
#include "proxy/api/api.h"
#include "proxy/validation/validate.h"
#include "proxy/admission/webhook.h"

/* A ClusterIP from 10.96.0.0/12 for a Service without one (but an
 * ExternalName one), derived from the store's revision. */
static void allocate_cluster_ip(struct proxy *px, json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	if (!spec || json_object_get(spec, "clusterIP"))
		return;
	const char *type = json_string_value(json_object_get(spec, "type"));
	if (type && strcmp(type, "ExternalName") == 0)
		return;
	char ip[32];
	unsigned h = (unsigned)store_rev(px->store) * 2654435761u;
	snprintf(ip, sizeof(ip), "10.%u.%u.%u", 96 + ((h >> 16) & 15), (h >> 8) & 255,
		 2 + (h & 127));
	json_object_set_new(spec, "clusterIP", json_string(ip));
}

static bool service_needs_cluster_ip(const json_t *svc)
{
	const char *type = json_string_value(kb_json_path(svc, "spec.type"));
	return !type || strcmp(type, "ExternalName") != 0;
}

void write_keep_allocated(const struct proxy_resource *res, const json_t *old, json_t *obj)
{
	if (res->group[0] || strcmp(res->kind, "Service") != 0 || !old ||
	    !service_needs_cluster_ip(old) || !service_needs_cluster_ip(obj))
		return;
	json_t *spec = json_object_get(obj, "spec");
	const json_t *ospec = json_object_get(old, "spec");
	const char *cip = json_string_value(json_object_get(spec, "clusterIP"));
	json_t *ocip = json_object_get(ospec, "clusterIP"),
	       *oips = json_object_get(ospec, "clusterIPs");
	if (!json_is_object(spec))
		return;
	if ((!cip || !*cip) && ocip)
		json_object_set(spec, "clusterIP", ocip);
	if (json_array_size(json_object_get(spec, "clusterIPs")) == 0 && json_array_size(oips))
		json_object_set(spec, "clusterIPs", oips);
}

void write_defaults(struct proxy *px, const struct proxy_resource *res, json_t *obj)
{
	if (!res->group[0] && strcmp(res->kind, "Service") == 0)
		allocate_cluster_ip(px, obj);
	obj_defaults(res, obj);
}

/* Validation and the built-in admission chain. */
static int validate_admit(struct req *r, json_t *obj, const json_t *old)
{
	if (authz_admit(r, obj, old) < 0)
		return -EACCES;
	if (r->res->write_check) {
		int rc = r->res->write_check(r, obj, old);
		return rc < 0 ? rc : admission_check(r, obj, old);
	}
	json_t *causes = json_array();
	val_object_meta(r->res, obj, old, causes);
	val_object(r->res, obj, old, causes);
	if (r->res->crd)
		crd_check_rules(r, obj, old, causes);
	/* creates and updates alike (pods/ephemeralcontainers adds containers
	 * to a running pod): what an update adds is held to the same rules */
	if (r->px->api->host_sync && strcmp(r->res->group, "") == 0 &&
	    strcmp(r->res->kind, "Pod") == 0)
		hostpod_refuse(obj, old, r->px->policy != NULL, causes);
	if (json_array_size(causes) == 0) {
		json_decref(causes);
		return admission_check(r, obj, old);
	}
	reply_invalid(r, r->res->kind, obj_str(obj, "metadata.name"), causes);
	return -EINVAL;
}

/*
 * kube's order: mutating webhooks, validation, the built-in admission
 * chain, validating webhooks, quota. The chain charges quota as it admits,
 * so while validating webhooks are still to come it runs as a dry run, and
 * for real on the pass after they allowed the write (webhook.h).
 */
int write_validate(struct req *r, json_t *obj, const json_t *old)
{
	int rc = webhook_mutate(r, obj, old);
	if (rc)
		return rc > 0 ? -EINPROGRESS : rc;
	bool ahead = webhook_validation_ahead(r, obj, old), dry = r->q.dry_run;
	/* a custom resource written through a version its conversion webhook
	 * converts to storage: converted last (kube converts when it encodes
	 * for storage), the request then served again (crdconv.c) */
	bool conv = r->res->crd && crdconv_write_ahead(r, obj);
	r->q.dry_run = dry || ahead || conv;
	rc = validate_admit(r, obj, old);
	r->q.dry_run = dry;
	if (rc < 0)
		return rc;
	if (ahead) {
		rc = webhook_validate(r, obj);
		if (rc)
			return rc > 0 ? -EINPROGRESS : rc;
	}
	return conv ? crdconv_write(r, obj) : 0;
}

/* ---- a strategic merge patch of the wrong type ----------------------- */

/* Go's %v of a float64: strconv's 'g' with the shortest digits, the
 * exponent form below 1e-4 and from 1e6 on (ftoa.go: precision 6 decides
 * when the digits are the shortest), as "1e+06". */
static void go_float(struct kb_buf *b, double v)
{
	char t[64];
	int p = 1;
	for (; p < 17; p++) {
		snprintf(t, sizeof(t), "%.*e", p - 1, v);
		if (strtod(t, NULL) == v)
			break;
	}
	snprintf(t, sizeof(t), "%.*e", p - 1, v);
	int exp = atoi(strchr(t, 'e') + 1);
	if (exp < -4 || exp >= 6)
		kb_buf_puts(b, t);
	else
		kb_buf_printf(b, "%.*f", p - 1 - exp > 0 ? p - 1 - exp : 0, v);
}

/* Go's %+v of a value json.Unmarshal made: map[k:v ...] with sorted keys,
 * [a b], numbers as float64, <nil>. */
static void go_value(struct kb_buf *b, const json_t *v)
{
	size_t i, n;
	json_t *x;
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char **keys = kb_json_sorted_keys(v, &n);
		kb_buf_puts(b, "map[");
		for (i = 0; keys && i < n; i++) {
			kb_buf_printf(b, "%s%s:", i ? " " : "", keys[i]);
			go_value(b, json_object_get(v, keys[i]));
		}
		kb_buf_puts(b, "]");
		free(keys);
		break;
	}
	case JSON_ARRAY:
		kb_buf_puts(b, "[");
		json_array_foreach (v, i, x) {
			if (i)
				kb_buf_puts(b, " ");
			go_value(b, x);
		}
		kb_buf_puts(b, "]");
		break;
	case JSON_STRING: kb_buf_puts(b, json_string_value(v)); break;
	case JSON_INTEGER: go_float(b, (double)json_integer_value(v)); break;
	case JSON_REAL: go_float(b, json_real_value(v)); break;
	case JSON_TRUE: kb_buf_puts(b, "true"); break;
	case JSON_FALSE: kb_buf_puts(b, "false"); break;
	default: kb_buf_puts(b, "<nil>"); break;
	}
}

/*
 * The unstructured converter's words (apimachinery runtime/converter.go:
 * mapFromUnstructured, sliceFromUnstructured, structFromUnstructured,
 * fromUnstructured's scalars) for the JSON kind and Go type a type error
 * of schema_check_types names ("json: cannot unmarshal string into Go
 * struct field ObjectMeta.metadata.labels of type map[string]string").
 */
static void converter_message(const char *json_msg, char *out, size_t len)
{
	static const struct {
		const char *json, *go;
	} kinds[] = {{"string", "string"},
		     {"number", "float64"},
		     {"bool", "bool"},
		     {"object", "map"},
		     {"array", "slice"}};
	const char *src = "string", *t = strstr(json_msg, " of type ");
	const char *u = strstr(json_msg, "unmarshal ");
	t = t ? t + 9 : "";
	for (size_t i = 0; u && i < KB_ARRAY_SIZE(kinds); i++)
		if (strncmp(u + 10, kinds[i].json, strlen(kinds[i].json)) == 0)
			src = kinds[i].go;
	if (strncmp(t, "map[", 4) == 0)
		snprintf(out, len, "cannot restore map from %s", src);
	else if (strncmp(t, "[]", 2) == 0 && strcmp(t, "[]uint8") != 0)
		snprintf(out, len, "cannot restore slice from %s", src);
	else if (strchr(t, '.'))
		snprintf(out, len, "cannot restore struct from: %s", src);
	else
		snprintf(out, len, "cannot convert %s to %s", src, t);
}

/* kube's applyPatchToObject (apiserver endpoints/handlers/patch.go): a
 * converter error is Invalid, of no kind, on the field "patch" with the
 * patch as Go prints it. */
int write_patch_types(struct req *r, const json_t *patch, const json_t *obj)
{
	if (!r->res->proto)
		return 0;
	json_t *errors = json_array();
	schema_check_types(r->res->proto, obj, errors);
	const char *m = json_string_value(json_object_get(json_array_get(errors, 0), "message"));
	if (!m) {
		json_decref(errors);
		return 0;
	}
	char conv[300], q[4096];
	struct kb_buf pv = {0}, cause = {0}, msg = {0};
	converter_message(m, conv, sizeof(conv));
	go_value(&pv, patch);
	kb_buf_printf(&cause, "Invalid value: %s: %s", val_quote(pv.data, q, sizeof(q)), conv);
	kb_buf_printf(&msg, " \"\" is invalid: patch: %s", cause.data ? cause.data : "");
	json_t *d = json_pack("{s:[{s:s, s:s, s:s}]}", "causes", "reason", "FieldValueInvalid",
			      "message", cause.data ? cause.data : "", "field", "patch");
	reply_status(r, 422, "Invalid", msg.data, d);
	kb_buf_free(&pv);
	kb_buf_free(&cause);
	kb_buf_free(&msg);
	json_decref(errors);
	return -EINVAL;
}
