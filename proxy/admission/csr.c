/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CertificateSigningRequests in the API (see csr.h): kube's registry
 * strategy (pkg/registry/certificates/certificates/strategy.go), validation
 * (pkg/apis/certificates/validation) and admission plugins
 * (plugin/pkg/admission/certificates: subjectrestriction, approval,
 * signing), run from write_validate for every write of the resource.
 */
#include "proxy/admission/csr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/pki.h"
#include "lib/util.h"
#include "proxy/admission/admission.h"
#include "proxy/auth/rbac.h"
#include "proxy/validation/validate.h"

static int csr_bytes(const json_t *csr, const char *path, unsigned char **out, size_t *len)
{
	const json_t *v = obj_get(csr, path);
	*out = NULL;
	*len = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	if (json_string_length(v) == 0)
		return 0;
	return kb_base64_decode(json_string_value(v), json_string_length(v), out, len);
}

static json_t *conditions(const json_t *csr)
{
	return obj_get(csr, "status.conditions");
}

static const char *cond_type(const json_t *c)
{
	const char *t = json_string_value(json_object_get(c, "type"));
	return t ? t : "";
}

static bool csr_has_condition(const json_t *csr, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach (conditions(csr), i, c)
		if (strcmp(cond_type(c), type) == 0)
			return true;
	return false;
}

/* ---- the strategy ---- */

static void set_or_del(json_t *obj, const char *key, const json_t *v)
{
	if (v && !json_is_null(v))
		json_object_set_new(obj, key, json_deep_copy(v));
	else
		json_object_del(obj, key);
}

/* PrepareForCreate: the requester's identity replaces what the client sent
 * (the tenant has no user extra), status starts empty. */
static void prepare_create(json_t *obj, const struct csr_user *who)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	if (!spec)
		return;
	const char *keys[] = {"username", "uid", "groups", "extra"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++)
		json_object_del(spec, keys[i]);
	if (who && who->name && *who->name)
		json_object_set_new(spec, "username", json_string(who->name));
	if (who && who->uid && *who->uid)
		json_object_set_new(spec, "uid", json_string(who->uid));
	if (who && who->ngroups) {
		json_t *g = json_array();
		for (size_t i = 0; i < who->ngroups; i++)
			json_array_append_new(g, json_string(who->groups[i]));
		json_object_set_new(spec, "groups", g);
	}
	json_object_set_new(obj, "status", json_object());
}

/* The conditions of `type` in new are old's when there are as many
 * (preserveConditionInstances). */
static void preserve_instances(json_t *nconds, const json_t *oconds, const char *type)
{
	size_t oi[64], ni[64], on = 0, nn = 0, i;
	json_t *c;
	json_array_foreach (oconds, i, c)
		if (strcmp(cond_type(c), type) == 0 && on < 64)
			oi[on++] = i;
	json_array_foreach (nconds, i, c)
		if (strcmp(cond_type(c), type) == 0 && nn < 64)
			ni[nn++] = i;
	if (on != nn)
		return;
	for (i = 0; i < nn; i++)
		json_array_set_new(nconds, ni[i], json_deep_copy(json_array_get(oconds, oi[i])));
}

static bool unset_time(const json_t *c, const char *key)
{
	const char *v = json_string_value(json_object_get(c, key));
	return !v || !*v;
}

/* populateConditionTimestamps: missing lastUpdateTime is now, missing
 * lastTransitionTime is that of an old condition of the same type and
 * status, else now. */
static void condition_times(json_t *nconds, const json_t *oconds, const char *now)
{
	size_t i, k;
	json_t *c, *o;
	json_array_foreach (nconds, i, c) {
		if (!json_is_object(c))
			continue;
		if (unset_time(c, "lastUpdateTime"))
			json_object_set_new(c, "lastUpdateTime", json_string(now));
		if (!unset_time(c, "lastTransitionTime"))
			continue;
		const char *t = now;
		json_array_foreach (oconds, k, o) {
			if (strcmp(cond_type(o), cond_type(c)) == 0 &&
			    json_equal(json_object_get(o, "status"),
				       json_object_get(c, "status")) &&
			    !unset_time(o, "lastTransitionTime")) {
				t = json_string_value(json_object_get(o, "lastTransitionTime"));
				break;
			}
		}
		json_object_set_new(c, "lastTransitionTime", json_string(t));
	}
}

void csr_prepare(json_t *obj, const json_t *old, const char *sub, const struct csr_user *who,
		 const char *now)
{
	if (!old) {
		prepare_create(obj, who);
		return;
	}
	set_or_del(obj, "spec", json_object_get(old, "spec"));
	if (!sub) { /* certificate requests are immutable but through subresources */
		set_or_del(obj, "status", json_object_get(old, "status"));
		return;
	}
	json_t *nconds = conditions(obj);
	const json_t *oconds = conditions(old);
	if (strcmp(sub, "status") == 0) {
		preserve_instances(nconds, oconds, "Approved");
		preserve_instances(nconds, oconds, "Denied");
		condition_times(nconds, oconds, now);
		return;
	}
	/* approval: only the conditions change */
	condition_times(nconds, oconds, now);
	json_t *keep = nconds ? json_incref(nconds) : NULL;
	set_or_del(obj, "status", json_object_get(old, "status"));
	if (keep)
		json_object_set(kb_json_object_at(obj, "status"), "conditions", keep);
	else if (json_is_object(json_object_get(obj, "status")))
		json_object_del(json_object_get(obj, "status"), "conditions");
	json_decref(keep);
}

/* ---- validation ---- */

static const char *const all_usages[] = {
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
    NULL,
};

/* Go's %#v of a []byte: []byte{0x2d, 0x2d} (the whole value, as kube). */
static void add_invalid_bytes(json_t *c, const char *field, const unsigned char *v, size_t n,
			      bool present, const char *detail)
{
	struct kb_buf b = {0};
	kb_buf_puts(&b, "Invalid value: ");
	if (!present) {
		kb_buf_puts(&b, "[]byte(nil)");
	} else {
		kb_buf_puts(&b, "[]byte{");
		for (size_t i = 0; i < n; i++)
			kb_buf_printf(&b, "%s0x%x", i ? ", " : "", v[i]);
		kb_buf_puts(&b, "}");
	}
	kb_buf_printf(&b, ": %s", detail);
	if (b.data)
		json_array_append_new(c, json_pack("{s:s,s:s,s:s}", "reason", "FieldValueInvalid",
						   "message", b.data, "field", field));
	kb_buf_free(&b);
}

static void validate_request(const json_t *obj, json_t *c)
{
	unsigned char *req = NULL;
	size_t n = 0;
	char err[256] = "";
	csr_bytes(obj, "spec.request", &req, &n);
	if (kb_pki_csr_check(req ? (const char *)req : "", n, NULL, err, sizeof(err)) < 0)
		add_invalid_bytes(c, "spec.request", req, n, obj_get(obj, "spec.request") != NULL,
				  err);
	free(req);
}

static bool has_unknown_or_dup(const json_t *usages, bool dup)
{
	size_t i, j;
	json_t *u, *v;
	json_array_foreach (usages, i, u) {
		if (!dup && !val_in_list(json_string_value(u), all_usages))
			return true;
		json_array_foreach (usages, j, v)
			if (dup && j < i && json_equal(u, v))
				return true;
	}
	return false;
}

static void validate_usages(const json_t *obj, const json_t *old, json_t *c)
{
	const json_t *usages = obj_get(obj, "spec.usages");
	const json_t *ousages = old ? obj_get(old, "spec.usages") : NULL;
	bool allow_unknown = old && has_unknown_or_dup(ousages, false);
	bool allow_dup = old && has_unknown_or_dup(ousages, true);
	char f[64];
	size_t i, j;
	json_t *u, *v;
	if (json_array_size(usages) == 0)
		val_add(c, "FieldValueRequired", "spec.usages", NULL);
	json_array_foreach (usages, i, u) {
		snprintf(f, sizeof(f), "spec.usages[%zu]", i);
		if (!allow_unknown && !val_in_list(json_string_value(u), all_usages))
			val_not_supported(c, f, json_string_value(u), all_usages);
	}
	json_array_foreach (usages, i, u) {
		bool seen = false;
		json_array_foreach (usages, j, v)
			if (j < i && json_equal(u, v))
				seen = true;
		snprintf(f, sizeof(f), "spec.usages[%zu]", i);
		char q[300];
		if (!allow_dup && seen)
			val_add(c, "FieldValueDuplicate", f, "%s",
				val_quote(json_string_value(u), q, sizeof(q)));
	}
}

/* Splits s at `sep` into at most max pieces (copied into buf). */
static size_t split(const char *s, char sep, char *buf, size_t blen, char **out, size_t max)
{
	size_t n = 0;
	snprintf(buf, blen, "%s", s);
	char *p = buf;
	while (n < max) {
		out[n++] = p;
		char *e = strchr(p, sep);
		if (!e)
			break;
		*e = '\0';
		p = e + 1;
	}
	return n;
}

static void csr_validate_signer_name(const char *name, const char *field, json_t *c)
{
	char q[700], buf[1024], lbl[300];
	char *seg[3], *parts[64];
	if (!name || !*name) {
		val_add(c, "FieldValueRequired", field, NULL);
		return;
	}
	if (strlen(name) >= sizeof(buf) || split(name, '/', buf, sizeof(buf), seg, 3) != 2) {
		val_add(c, "FieldValueInvalid", field,
			"%s: must be a fully qualified domain and path of the form "
			"'example.com/signer-name'",
			val_quote(name, q, sizeof(q)));
		return;
	}
	char *domain = seg[0], *path = seg[1];
	char dom_q[700], path_q[700];
	val_quote(domain, dom_q, sizeof(dom_q));
	val_quote(path, path_q, sizeof(path_q));
	if (strlen(domain) > 253)
		val_add(c, "FieldValueTooLong", field, "may not be more than 253 bytes");
	char dbuf[1024];
	size_t nd = split(domain, '.', dbuf, sizeof(dbuf), parts, 64);
	for (size_t i = 0; i < nd; i++) {
		const char *e = names_dns1123_label(parts[i]);
		if (e) {
			val_add(c, "FieldValueInvalid", field, "%s: validating label %s: %s", dom_q,
				val_quote(parts[i], lbl, sizeof(lbl)), e);
			break;
		}
	}
	if (nd < 2)
		val_add(c, "FieldValueInvalid", field,
			"%s: should be a domain with at least two segments separated by dots",
			dom_q);
	char pbuf[1024];
	size_t np = split(path, '.', pbuf, sizeof(pbuf), parts, 64);
	for (size_t i = 0; i < np; i++) {
		const char *e = names_dns1123_subdomain(parts[i]);
		if (e) {
			val_add(c, "FieldValueInvalid", field, "%s: validating label %s: %s",
				path_q, val_quote(parts[i], lbl, sizeof(lbl)), e);
			break;
		}
	}
	if (strlen(name) > 253 + 253 + 63 + 1 + 1)
		val_add(c, "FieldValueTooLong", field, "may not be more than 571 bytes");
}

static bool has_both(const json_t *csr)
{
	return csr_has_condition(csr, "Approved") && csr_has_condition(csr, "Denied");
}

static bool has_dup_types(const json_t *csr)
{
	size_t i, j;
	json_t *a, *b;
	json_array_foreach (conditions(csr), i, a)
		json_array_foreach (conditions(csr), j, b)
			if (j < i && strcmp(cond_type(a), cond_type(b)) == 0)
				return true;
	return false;
}

static bool has_empty_type(const json_t *csr)
{
	size_t i;
	json_t *a;
	json_array_foreach (conditions(csr), i, a)
		if (!*cond_type(a))
			return true;
	return false;
}

static void validate_condition(json_t *c, const json_t *cond, size_t i, bool allow_empty)
{
	static const char *const true_only[] = {"True", NULL};
	static const char *const all_status[] = {"False", "True", "Unknown", NULL};
	char f[64];
	const char *t = cond_type(cond);
	const char *st = json_string_value(json_object_get(cond, "status"));
	snprintf(f, sizeof(f), "status.conditions[%zu].type", i);
	if (!allow_empty && !*t)
		val_add(c, "FieldValueRequired", f, NULL);
	bool fixed =
	    strcmp(t, "Approved") == 0 || strcmp(t, "Denied") == 0 || strcmp(t, "Failed") == 0;
	snprintf(f, sizeof(f), "status.conditions[%zu].status", i);
	if (!st || !*st)
		val_add(c, "FieldValueRequired", f, NULL);
	else if (!val_in_list(st, fixed ? true_only : all_status))
		val_not_supported(c, f, st, fixed ? true_only : all_status);
}

static void validate_conditions(const json_t *obj, const json_t *old, json_t *c)
{
	bool allow_both = old && has_both(old);
	bool allow_dup = old && has_dup_types(old);
	bool allow_empty = old && has_empty_type(old);
	bool approved = false, denied = false;
	char f[64], q[300];
	size_t i, j;
	json_t *cond, *o;
	json_array_foreach (conditions(obj), i, cond) {
		const char *t = cond_type(cond);
		validate_condition(c, cond, i, allow_empty);
		snprintf(f, sizeof(f), "status.conditions[%zu].type", i);
		if (!allow_both && strcmp(t, "Approved") == 0) {
			approved = true;
			if (denied)
				val_add(c, "FieldValueInvalid", f,
					"%s: Approved and Denied conditions are mutually exclusive",
					val_quote(t, q, sizeof(q)));
		} else if (!allow_both && strcmp(t, "Denied") == 0) {
			denied = true;
			if (approved)
				val_add(c, "FieldValueInvalid", f,
					"%s: Approved and Denied conditions are mutually exclusive",
					val_quote(t, q, sizeof(q)));
		}
		bool seen = false;
		json_array_foreach (conditions(obj), j, o)
			if (j < i && strcmp(cond_type(o), t) == 0)
				seen = true;
		if (!allow_dup && seen)
			val_add(c, "FieldValueDuplicate", f, "%s", val_quote(t, q, sizeof(q)));
	}
}

static bool same_bytes(const json_t *a, const json_t *b, const char *path)
{
	const char *x = obj_str(a, path), *y = b ? obj_str(b, path) : NULL;
	return strcmp(x ? x : "", y ? y : "") == 0;
}

static bool cert_ok(const json_t *csr)
{
	unsigned char *cert = NULL;
	size_t n = 0;
	csr_bytes(csr, "status.certificate", &cert, &n);
	int rc = kb_pki_certs_check(cert ? (const char *)cert : "", n, NULL, 0);
	free(cert);
	return rc == 0;
}

static void validate_certificate(const json_t *obj, const json_t *old, json_t *c)
{
	/* allowArbitraryCertificate */
	if (old && (same_bytes(obj, old, "status.certificate") || !cert_ok(old)))
		return;
	unsigned char *cert = NULL;
	size_t n = 0;
	char err[256] = "";
	csr_bytes(obj, "status.certificate", &cert, &n);
	if (kb_pki_certs_check(cert ? (const char *)cert : "", n, err, sizeof(err)) < 0)
		val_add(c, "FieldValueInvalid", "status.certificate", "\"<certificate data>\": %s",
			err);
	free(cert);
}

static size_t count_type(const json_t *csr, const char *type, json_t *out)
{
	size_t i, n = 0;
	json_t *cond;
	json_array_foreach (conditions(csr), i, cond)
		if (strcmp(cond_type(cond), type) == 0) {
			n++;
			if (out)
				json_array_append(out, cond);
		}
	return n;
}

static void validate_update(const json_t *obj, const json_t *old, const char *sub, json_t *c)
{
	static const char *const kept[] = {"Approved", "Denied", "Failed"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(kept); i++)
		if (count_type(obj, kept[i], NULL) < count_type(old, kept[i], NULL))
			val_add(c, "FieldValueForbidden", "status.conditions",
				"updates may not remove a condition of type \"%s\"", kept[i]);
	bool approval = sub && strcmp(sub, "approval") == 0;
	for (size_t i = 0; !approval && i < 2; i++) {
		json_t *a = json_array(), *b = json_array();
		size_t on = count_type(old, kept[i], a), nn = count_type(obj, kept[i], b);
		if (nn > on)
			val_add(c, "FieldValueForbidden", "status.conditions",
				"updates may not add a condition of type \"%s\"", kept[i]);
		else if (nn == on && !json_equal(a, b))
			val_add(c, "FieldValueForbidden", "status.conditions",
				"updates may not modify a condition of type \"%s\"", kept[i]);
		json_decref(a);
		json_decref(b);
	}
	if (same_bytes(obj, old, "status.certificate"))
		return;
	if (!sub || strcmp(sub, "status") != 0)
		val_add(c, "FieldValueForbidden", "status.certificate",
			"updates may not set certificate content");
	else if (obj_str(old, "status.certificate") && *obj_str(old, "status.certificate"))
		val_add(c, "FieldValueForbidden", "status.certificate",
			"updates may not modify existing certificate content");
}

int csr_validate(const json_t *obj, const json_t *old, const char *sub, json_t *c)
{
	size_t before = json_array_size(c);
	const char *signer = obj_str(obj, "spec.signerName");
	validate_request(obj, c);
	validate_usages(obj, old, c);
	bool legacy_ok = old && obj_str(old, "spec.signerName") &&
			 strcmp(obj_str(old, "spec.signerName"), CSR_SIGNER_LEGACY) == 0;
	if (!legacy_ok && signer && strcmp(signer, CSR_SIGNER_LEGACY) == 0)
		val_add(c, "FieldValueInvalid", "spec.signerName",
			"\"%s\": the legacy signerName is not allowed via this API version",
			signer);
	else
		csr_validate_signer_name(signer, "spec.signerName", c);
	const json_t *exp = obj_get(obj, "spec.expirationSeconds");
	if (json_is_integer(exp) && json_integer_value(exp) < 600)
		val_add(c, "FieldValueInvalid", "spec.expirationSeconds",
			"%lld: may not specify a duration less than 600 seconds (10 minutes)",
			(long long)json_integer_value(exp));
	validate_conditions(obj, old, c);
	validate_certificate(obj, old, c);
	if (old)
		validate_update(obj, old, sub, c);
	return (int)(json_array_size(c) - before);
}

/* ---- admission ---- */

/* IsAuthorizedForSignerName: `verb` on signers/<name>, or on <domain>/\*. */
static bool signer_allowed(struct req *r, const char *verb, const char *signer)
{
	struct rbac_attrs a = {.user = r->user,
			       .groups = (const char *const *)r->groups,
			       .ngroups = (size_t)r->ngroups,
			       .verb = verb,
			       .resource_request = true,
			       .api_group = CSR_GROUP,
			       .resource = "signers",
			       .name = signer};
	if (authz_check(r->px, &a, NULL, 0))
		return true;
	char wild[600];
	snprintf(wild, sizeof(wild), "%.*s/*", (int)strcspn(signer, "/"), signer);
	a.name = wild;
	return authz_check(r->px, &a, NULL, 0);
}

/* CertificateSubjectRestriction: no system:masters certificates from the
 * kube-apiserver-client signer. */
static int subject_restriction(struct req *r, const json_t *obj)
{
	const char *signer = obj_str(obj, "spec.signerName");
	if (!signer || strcmp(signer, CSR_SIGNER_APISERVER) != 0)
		return 0;
	unsigned char *req = NULL;
	size_t n = 0;
	struct kb_csr_info info;
	char err[256] = "", why[512];
	csr_bytes(obj, "spec.request", &req, &n);
	int rc = kb_pki_csr_check(req ? (const char *)req : "", n, &info, err, sizeof(err));
	free(req);
	if (rc < 0) {
		snprintf(why, sizeof(why), "failed to parse CSR: %s", err);
		admission_denied(r, obj_str(obj, "metadata.name"), why);
		return -EACCES;
	}
	if (info.masters) {
		admission_denied(r, obj_str(obj, "metadata.name"),
				 "use of " CSR_SIGNER_APISERVER
				 " signer with system:masters group is not allowed");
		return -EACCES;
	}
	return 0;
}

/* CertificateApproval (approval) and CertificateSigning (status with a
 * new certificate), against the old object's signerName. */
static int signer_admission(struct req *r, const json_t *obj, const json_t *old)
{
	const char *verb = NULL, *what = NULL;
	if (strcmp(r->sub, "approval") == 0) {
		verb = "approve";
		what = "approve";
	} else if (strcmp(r->sub, "status") == 0 && !same_bytes(obj, old, "status.certificate")) {
		verb = "sign";
		what = "sign";
	}
	const char *signer = obj_str(old, "spec.signerName");
	if (!verb || signer_allowed(r, verb, signer ? signer : ""))
		return 0;
	char why[1024];
	snprintf(why, sizeof(why), "user not permitted to %s requests with signerName \"%s\"", what,
		 signer ? signer : "");
	admission_denied(r, obj_str(old, "metadata.name"), why);
	return -EACCES;
}

/* A write of a CertificateSigningRequest: 0, or answered (422/403) and
 * -EINVAL/-EACCES. obj borrowed, modified. */
static int csr_write_check(struct req *r, json_t *obj, const json_t *old)
{
	char now[40];
	kb_time_rfc3339(r->now, now, sizeof(now));
	struct csr_user who = {.name = r->user,
			       .uid = r->uid,
			       .groups = (const char *const *)r->groups,
			       .ngroups = (size_t)r->ngroups};
	csr_prepare(obj, old, r->sub, &who, now);
	json_t *causes = json_array();
	val_object_meta(r->res, obj, old, causes);
	csr_validate(obj, old, r->sub, causes);
	if (json_array_size(causes) > 0) {
		reply_invalid(r, r->res->kind, obj_str(obj, "metadata.name"), causes);
		return -EINVAL;
	}
	json_decref(causes);
	if (!old)
		return subject_restriction(r, obj);
	return r->sub ? signer_admission(r, obj, old) : 0;
}

int csr_register(void)
{
	return resource_set_write_check(CSR_GROUP, "certificatesigningrequests", csr_write_check);
}
