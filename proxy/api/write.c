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
#include <string.h>

#include "lib/json.h"
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
	if (r->px->api->host_sync && !old && strcmp(r->res->group, "") == 0 &&
	    strcmp(r->res->kind, "Pod") == 0) {
		hostpod_refuse_fields(obj, r->px->policy != NULL, causes);
		hostrefs_refuse(obj, r->px->policy != NULL, causes);
	}
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
