/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CertificateSigningRequests: kube-controller-manager's
 * csrsigning-kube-apiserver-client signer (pkg/controller/certificates/
 * signer) with the tenant's CA, and its csrcleaner (pkg/controller/
 * certificates/cleaner).
 *
 * The signer issues a certificate to an Approved request of signerName
 * kubernetes.io/kube-apiserver-client that has none and is not Failed:
 * usages must be "client auth" with optional "digital signature" and "key
 * encipherment" (else a Failed condition, reason SignerValidationFailure);
 * the certificate lasts min(expirationSeconds, one year) (the default
 * --cluster-signing-duration), at least 10 minutes, is backdated 5 minutes
 * (its end too when it lasts 8 hours or more), and never outlives the CA.
 * Other signers are left alone, for a signer outside the tenant.
 *
 * The cleaner deletes requests Approved and issued, Denied or Failed for
 * more than an hour (the condition's lastUpdateTime), pending (no
 * condition) for more than 24 hours, and issued ones whose certificate
 * expired. Instead of kube's hourly poll, each request is queued again for
 * the moment it becomes due.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/pki.h"
#include "lib/util.h"

#define SIGNER        "kubernetes.io/kube-apiserver-client"
#define CERT_TTL      (365L * 86400L) /* --cluster-signing-duration 8760h */
#define MIN_TTL       600L
#define BACKDATE      300L
#define SHORT_TTL     (8L * 3600L)
#define ISSUED_TTL    3600L
#define DENIED_TTL    3600L
#define PENDING_TTL   (24L * 3600L)
#define FIELD_MANAGER "kube-controller-manager"

/* ---- pure pieces ---------------------------------------------------------- */

const char *ctrl_csr_client_usages(const json_t *usages, char *buf, size_t len)
{
	bool client = false;
	size_t i;
	json_t *u;
	json_array_foreach (usages, i, u) {
		const char *s = json_string_value(u);
		s = s ? s : "";
		if (strcmp(s, "client auth") == 0)
			client = true;
		else if (strcmp(s, "digital signature") != 0 &&
			 strcmp(s, "key encipherment") != 0) {
			snprintf(buf, len, "invalid usage for client certificate: %s", s);
			return buf;
		}
	}
	if (client)
		return NULL;
	snprintf(buf, len, "missing required usage for client certificate: client auth");
	return buf;
}

long ctrl_csr_duration(const json_t *expiration_seconds)
{
	if (!json_is_integer(expiration_seconds))
		return CERT_TTL;
	json_int_t s = json_integer_value(expiration_seconds);
	if (s > CERT_TTL)
		return CERT_TTL;
	return s < MIN_TTL ? MIN_TTL : (long)s;
}

int ctrl_csr_validity(time_t now, long ttl, time_t ca_not_after, time_t *not_before,
		      time_t *not_after)
{
	*not_before = now - BACKDATE;
	*not_after = ttl < SHORT_TTL ? now + ttl : now + ttl - BACKDATE;
	if (*not_after >= ca_not_after)
		*not_after = ca_not_after;
	if (*not_before >= ca_not_after || now >= ca_not_after)
		return -EKEYEXPIRED;
	return 0;
}

/* The usages as OpenSSL extension values (authority/policies.go's map):
 * key usages into ku, extended ones, in Go's order, into eku. */
static const char *const key_usages[][2] = {
    {"signing", "digitalSignature"},
    {"digital signature", "digitalSignature"},
    {"content commitment", "nonRepudiation"},
    {"key encipherment", "keyEncipherment"},
    {"key agreement", "keyAgreement"},
    {"data encipherment", "dataEncipherment"},
    {"cert sign", "keyCertSign"},
    {"crl sign", "cRLSign"},
    {"encipher only", "encipherOnly"},
    {"decipher only", "decipherOnly"},
};
static const char *const ext_usages[][2] = {
    {"any", "anyExtendedKeyUsage"},
    {"server auth", "serverAuth"},
    {"client auth", "clientAuth"},
    {"code signing", "codeSigning"},
    {"email protection", "emailProtection"},
    {"s/mime", "emailProtection"},
    {"ipsec end system", "ipsecEndSystem"},
    {"ipsec tunnel", "ipsecTunnel"},
    {"ipsec user", "ipsecUser"},
    {"timestamping", "timeStamping"},
    {"ocsp signing", "OCSPSigning"},
    {"microsoft sgc", "msSGC"},
    {"netscape sgc", "nsSGC"},
};

static bool has_usage(const json_t *usages, const char *u)
{
	size_t i;
	json_t *v;
	json_array_foreach (usages, i, v)
		if (json_string_value(v) && strcmp(json_string_value(v), u) == 0)
			return true;
	return false;
}

/* Appends each OpenSSL name of table whose usage is asked for, once. */
static void usage_list(const json_t *usages, const char *const (*table)[2], size_t n, char *buf,
		       size_t len)
{
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (!has_usage(usages, table[i][0]) || strstr(buf, table[i][1]))
			continue;
		size_t l = strlen(buf);
		snprintf(buf + l, len - l, "%s%s", l ? "," : "", table[i][1]);
	}
}

void ctrl_csr_usages(const json_t *usages, char *ku, size_t kulen, char *eku, size_t ekulen)
{
	usage_list(usages, key_usages, KB_ARRAY_SIZE(key_usages), ku, kulen);
	usage_list(usages, ext_usages, KB_ARRAY_SIZE(ext_usages), eku, ekulen);
}

static bool issued(const json_t *csr)
{
	const char *c = json_string_value(ctrl_path(csr, "status.certificate"));
	return c && *c;
}

/* The certificate's notAfter, 0 when it does not parse. */
static time_t cert_not_after(const json_t *csr)
{
	const char *c = json_string_value(ctrl_path(csr, "status.certificate"));
	unsigned char *pem = NULL;
	size_t n = 0;
	time_t t = 0;
	if (c && kb_base64_decode(c, strlen(c), &pem, &n) == 0 &&
	    kb_pki_cert_not_after(pem, n, &t) < 0)
		t = 0;
	free(pem);
	return t;
}

/* isOlderThan(t, d): t set and now - t > d. Tracks the earliest future
 * moment in *next (0: none). */
static bool older(time_t t, long d, time_t now, time_t *next)
{
	if (!t)
		return false;
	if (now > t + d)
		return true;
	if (!*next || t + d + 1 < *next)
		*next = t + d + 1;
	return false;
}

bool ctrl_csr_gc_due(const json_t *csr, time_t now, time_t *next)
{
	bool due = false;
	size_t i;
	json_t *c;
	*next = 0;
	const json_t *conds = ctrl_path(csr, "status.conditions");
	json_array_foreach (conds, i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		time_t at = ctrl_time(json_string_value(json_object_get(c, "lastUpdateTime")));
		if (!t)
			continue;
		if (strcmp(t, "Approved") == 0 && issued(csr))
			due |= older(at, ISSUED_TTL, now, next);
		else if (strcmp(t, "Denied") == 0)
			due |= older(at, DENIED_TTL, now, next);
		else if (strcmp(t, "Failed") == 0)
			due |= older(at, DENIED_TTL, now, next);
	}
	if (json_array_size(conds) == 0)
		due |= older(
		    ctrl_time(json_string_value(ctrl_path(csr, "metadata.creationTimestamp"))),
		    PENDING_TTL, now, next);
	time_t na = issued(csr) ? cert_not_after(csr) : 0;
	bool approved = false;
	json_array_foreach (conds, i, c)
		approved |= json_string_value(json_object_get(c, "type")) &&
			    strcmp(json_string_value(json_object_get(c, "type")), "Approved") == 0;
	if (approved && na)
		due |= older(na, 0, now, next);
	return due;
}

/* ---- the controller ---------------------------------------------------- */

void ctrl_set_signer(ctrl_t *c, kb_pki_ca_t *ca)
{
	kb_pki_ca_free(c->ca);
	c->ca = ca;
	json_t *items = ctrl_list(c, CSR_RES, NULL);
	size_t i;
	json_t *o;
	json_array_foreach (items, i, o)
		ctrl_enqueue(c, "csr", "", ctrl_name(o));
	json_decref(items);
}

static bool has_cond(const json_t *csr, const char *type)
{
	return ctrl_get_condition(ctrl_path(csr, "status"), type) != NULL;
}

static int write_status(struct ctrl *c, json_t *csr, json_t *status)
{
	return ctrl_write_status(c, "certificates.k8s.io", "v1", "certificatesigningrequests", csr,
				 status, FIELD_MANAGER);
}

static int fail_request(struct ctrl *c, json_t *csr, const char *why)
{
	char now[40];
	ctrl_now_str(now, sizeof(now));
	json_t *status = json_deep_copy(ctrl_path(csr, "status"));
	if (!json_is_object(status)) {
		json_decref(status);
		status = json_object();
	}
	json_t *conds = json_object_get(status, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(status, "conditions", conds);
	}
	/* lastTransitionTime as kube's status strategy defaults it */
	json_array_append_new(conds,
			      json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "type", "Failed", "status",
					"True", "reason", "SignerValidationFailure", "message", why,
					"lastUpdateTime", now, "lastTransitionTime", now));
	int rc = write_status(c, csr, status);
	json_decref(status);
	return rc;
}

static int sign(struct ctrl *c, json_t *csr)
{
	const char *req = json_string_value(ctrl_path(csr, "spec.request"));
	unsigned char *pem = NULL;
	size_t n = 0;
	char why[256], ku[256], eku[256];
	char *cert = NULL;
	if (!req || kb_base64_decode(req, strlen(req), &pem, &n) < 0 ||
	    kb_pki_csr_check(pem, n, NULL, why, sizeof(why)) < 0) {
		kb_warn("ctrl", "csr %s: unable to parse csr", ctrl_name(csr));
		free(pem);
		return 0; /* kube retries; nothing changes until the request does */
	}
	const json_t *usages = ctrl_path(csr, "spec.usages");
	if (ctrl_csr_client_usages(usages, why, sizeof(why))) {
		free(pem);
		return fail_request(c, csr, why);
	}
	struct kb_pki_sign_opts o = {.key_usage = ku, .ext_usage = eku};
	ctrl_csr_usages(usages, ku, sizeof(ku), eku, sizeof(eku));
	int rc = ctrl_csr_validity(time(NULL),
				   ctrl_csr_duration(ctrl_path(csr, "spec.expirationSeconds")),
				   kb_pki_ca_not_after(c->ca), &o.not_before, &o.not_after);
	if (rc == 0)
		rc = kb_pki_ca_sign(c->ca, pem, n, &o, &cert);
	free(pem);
	if (rc < 0) {
		kb_warn("ctrl", "csr %s: error auto signing csr: %s", ctrl_name(csr),
			strerror(-rc));
		return 0;
	}
	char *b64 = kb_base64_encode(cert, strlen(cert));
	free(cert);
	if (!b64)
		return -ENOMEM;
	json_t *status = json_deep_copy(ctrl_path(csr, "status"));
	if (!json_is_object(status)) {
		json_decref(status);
		status = json_object();
	}
	json_object_set_new(status, "certificate", json_string(b64));
	free(b64);
	rc = write_status(c, csr, status);
	json_decref(status);
	if (rc == 0)
		kb_info("ctrl", "csr %s: issued a certificate to %s", ctrl_name(csr),
			json_string_value(ctrl_path(csr, "spec.username")));
	return rc;
}

static bool wants_signing(const struct ctrl *c, const json_t *csr)
{
	const char *signer = json_string_value(ctrl_path(csr, "spec.signerName"));
	return c->ca && signer && strcmp(signer, SIGNER) == 0 && has_cond(csr, "Approved") &&
	       !has_cond(csr, "Denied") && !has_cond(csr, "Failed") && !issued(csr);
}

int ctrl_csr_sync(struct ctrl *c, const char *ns, const char *name)
{
	(void)ns;
	json_t *csr = ctrl_get(c, CSR_RES, "", name);
	if (!csr)
		return 0;
	time_t now = time(NULL), next = 0;
	int rc = 0;
	if (ctrl_csr_gc_due(csr, now, &next)) {
		kb_info("ctrl", "cleaning csr %s", name);
		rc = proxy_object_delete(c->px, "certificates.k8s.io", "v1",
					 "certificatesigningrequests", NULL, name, ctrl_uid(csr),
					 NULL, FIELD_MANAGER);
	} else {
		if (wants_signing(c, csr))
			rc = sign(c, csr);
		if (next)
			ctrl_enqueue_after(c, "csr", "", name, (double)(next - now));
	}
	json_decref(csr);
	return rc;
}
