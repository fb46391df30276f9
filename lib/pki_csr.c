/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Certificate requests and an in-memory CA (see pki.h): checking a PKCS#10
 * request and its self-signature with Go's messages, checking PEM
 * certificates, and signing a request with the tenant's CA.
 *
 * DESIGN: the CA's certificate and key are read once (kb_pki_ca_load, at
 * start-up) and kept; signing is CPU only (one P-256 signature, well under
 * a millisecond), so callers may sign on the loop thread.
 */
#include "lib/pki.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "lib/pki_impl.h"
#include "lib/tls.h"

struct kb_pki_ca {
	struct pki_pair p;
};

static void set_err(char *err, size_t len, const char *msg)
{
	if (err && len)
		snprintf(err, len, "%s", msg);
}

/* The first PEM block of (pem, len): its type and DER bytes (malloc'ed by
 * OpenSSL, caller frees both). 0, or -ENOENT when there is none. */
static int first_block(const void *pem, size_t len, char **type, unsigned char **der, long *derlen,
		       char **header)
{
	if (len > INT32_MAX)
		return -ENOENT;
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	if (!b)
		return -ENOMEM;
	int ok = PEM_read_bio(b, type, header, der, derlen);
	BIO_free(b);
	ERR_clear_error();
	return ok == 1 ? 0 : -ENOENT;
}

/* Go's CheckSignature messages, by key type. */
static const char *sig_failure(const EVP_PKEY *k)
{
	switch (EVP_PKEY_get_base_id(k)) {
	case EVP_PKEY_RSA: return "crypto/rsa: verification error";
	case EVP_PKEY_ED25519: return "x509: Ed25519 verification failure";
	default: return "x509: ECDSA verification failure";
	}
}

void kb_pki_name_groups(const struct X509_name_st *name, void (*cb)(const char *group, void *arg),
			void *arg)
{
	int idx = -1;
	while ((idx = X509_NAME_get_index_by_NID(name, NID_organizationName, idx)) >= 0) {
		const ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
		char g[128];
		int n = ASN1_STRING_length(d);
		if (n <= 0 || n >= (int)sizeof(g))
			continue;
		memcpy(g, ASN1_STRING_get0_data(d), (size_t)n);
		g[n] = '\0';
		cb(g, arg);
	}
}

static void note_masters(const char *group, void *arg)
{
	struct kb_csr_info *info = arg;
	info->masters |= strcmp(group, "system:masters") == 0;
}

/* What the request's subject would give the certificate: every O value,
 * as the signer copies them all and login reads them all. */
static void fill_info(X509_REQ *req, struct kb_csr_info *info)
{
	memset(info, 0, sizeof(*info));
	kb_pki_name_groups(X509_REQ_get_subject_name(req), note_masters, info);
}

/* Parses and verifies; *out owned by the caller. */
static int parse_request(const void *pem, size_t len, X509_REQ **out, char *err, size_t errlen)
{
	char *type = NULL, *header = NULL;
	unsigned char *der = NULL;
	long derlen = 0;
	int rc = -EINVAL;
	*out = NULL;
	if (first_block(pem, len, &type, &der, &derlen, &header) < 0 ||
	    strcmp(type, "CERTIFICATE REQUEST") != 0) {
		set_err(err, errlen, "PEM block type must be CERTIFICATE REQUEST");
		goto out;
	}
	const unsigned char *p = der;
	X509_REQ *req = d2i_X509_REQ(NULL, &p, derlen);
	EVP_PKEY *k = req ? X509_REQ_get0_pubkey(req) : NULL;
	if (!req || !k || p != der + derlen) {
		set_err(err, errlen, "x509: malformed certificate request");
		X509_REQ_free(req);
		goto out;
	}
	if (X509_REQ_verify(req, k) != 1) {
		set_err(err, errlen, sig_failure(k));
		X509_REQ_free(req);
		goto out;
	}
	*out = req;
	rc = 0;
out:
	OPENSSL_free(type);
	OPENSSL_free(header);
	OPENSSL_free(der);
	ERR_clear_error();
	return rc;
}

int kb_pki_csr_check(const void *pem, size_t len, struct kb_csr_info *info, char *err,
		     size_t errlen)
{
	X509_REQ *req = NULL;
	int rc = parse_request(pem, len, &req, err, errlen);
	if (rc == 0 && info)
		fill_info(req, info);
	X509_REQ_free(req);
	return rc;
}

int kb_pki_certs_check(const void *pem, size_t len, char *err, size_t errlen)
{
	if (len == 0)
		return 0;
	if (len > INT32_MAX)
		return -EINVAL;
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	int blocks = 0, rc = 0;
	char *type = NULL, *header = NULL;
	unsigned char *der = NULL;
	long derlen = 0;
	while (rc == 0 && b && PEM_read_bio(b, &type, &header, &der, &derlen) == 1) {
		const unsigned char *p = der;
		X509 *c = NULL;
		if (strcmp(type, "CERTIFICATE") != 0) {
			if (err && errlen)
				snprintf(err, errlen,
					 "only CERTIFICATE PEM blocks are allowed, found \"%s\"",
					 type);
			rc = -EINVAL;
		} else if (header && *header) {
			set_err(err, errlen, "no PEM block headers are permitted");
			rc = -EINVAL;
		} else if (!(c = d2i_X509(NULL, &p, derlen))) {
			set_err(err, errlen, "x509: malformed certificate");
			rc = -EINVAL;
		}
		X509_free(c);
		blocks++;
		OPENSSL_free(type);
		OPENSSL_free(header);
		OPENSSL_free(der);
		type = header = NULL;
		der = NULL;
	}
	BIO_free(b);
	ERR_clear_error();
	if (rc == 0 && blocks == 0) {
		set_err(err, errlen, "must contain at least one CERTIFICATE PEM block");
		rc = -EINVAL;
	}
	return rc;
}

/* A certificate's notAfter as a time_t; 0 when it cannot be read. */
time_t pki_not_after(const X509 *c)
{
	struct tm tm;
	return ASN1_TIME_to_tm(X509_get0_notAfter(c), &tm) == 1 ? timegm(&tm) : 0;
}

int kb_pki_cert_not_after(const void *pem, size_t len, time_t *out)
{
	if (len > INT32_MAX)
		return -EINVAL;
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	X509 *c = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	time_t t = c ? pki_not_after(c) : 0;
	int rc = t ? 0 : -EINVAL;
	if (t)
		*out = t;
	X509_free(c);
	BIO_free(b);
	ERR_clear_error();
	return rc;
}

/* ---- the CA ---- */

int pki_ca_share(const struct pki_pair *p, kb_pki_ca_t **out)
{
	struct kb_pki_ca *ca = calloc(1, sizeof(*ca));
	if (!ca)
		return -ENOMEM;
	if (X509_up_ref(p->cert) != 1) {
		free(ca);
		return -ENOMEM;
	}
	ca->p.cert = p->cert;
	if (EVP_PKEY_up_ref(p->key) != 1) {
		kb_pki_ca_free(ca);
		return -ENOMEM;
	}
	ca->p.key = p->key;
	*out = ca;
	return 0;
}

int kb_pki_ca_load(const char *dir, kb_pki_ca_t **out)
{
	struct kb_pki_ca *ca = calloc(1, sizeof(*ca));
	if (!ca)
		return -ENOMEM;
	int rc = pki_load_pair(dir, "ca", &ca->p);
	if (rc < 0) {
		free(ca);
		return rc;
	}
	*out = ca;
	return 0;
}

void kb_pki_ca_free(kb_pki_ca_t *ca)
{
	if (!ca)
		return;
	pki_pair_free(&ca->p);
	free(ca);
}

time_t kb_pki_ca_not_after(const kb_pki_ca_t *ca)
{
	return pki_not_after(ca->p.cert);
}

/* The request's subject in Go's marshalling order (pkix.Name.ToRDNSequence
 * of a parsed name): known attributes only, the values of one attribute in
 * one RDN (O=dev+O=qa), as Go writes them. */
static int copy_subject(X509 *cert, X509_NAME *from)
{
	static const int order[] = {
	    NID_countryName, NID_stateOrProvinceName, NID_localityName,           NID_streetAddress,
	    NID_postalCode,  NID_organizationName,    NID_organizationalUnitName, NID_commonName,
	    NID_serialNumber};
	X509_NAME *to = X509_get_subject_name(cert);
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		int idx = -1;
		/* Go keeps one common name and serial number, the last one */
		bool single = order[k] == NID_commonName || order[k] == NID_serialNumber;
		int last = -1, set = 0; /* the first value opens the RDN, the others join it */
		while ((idx = X509_NAME_get_index_by_NID(from, order[k], idx)) >= 0) {
			if (single) {
				last = idx;
				continue;
			}
			ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(from, idx));
			if (!X509_NAME_add_entry_by_NID(to, order[k], MBSTRING_UTF8,
							ASN1_STRING_get0_data(d),
							ASN1_STRING_length(d), -1, set))
				return -EINVAL;
			set = -1;
		}
		if (last >= 0) {
			ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(from, last));
			if (!X509_NAME_add_entry_by_NID(to, order[k], MBSTRING_UTF8,
							ASN1_STRING_get0_data(d),
							ASN1_STRING_length(d), -1, 0))
				return -EINVAL;
		}
	}
	return 0;
}

/* The request's DNS, IP, email and URI names as the certificate's SAN. */
static int copy_sans(X509 *cert, X509_REQ *req)
{
	STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(req);
	GENERAL_NAMES *gens = exts ? X509V3_get_d2i(exts, NID_subject_alt_name, NULL, NULL) : NULL;
	GENERAL_NAMES *keep = sk_GENERAL_NAME_new_null();
	int rc = keep ? 0 : -ENOMEM;
	for (int i = 0; rc == 0 && gens && i < sk_GENERAL_NAME_num(gens); i++) {
		GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
		if (g->type != GEN_DNS && g->type != GEN_IPADD && g->type != GEN_EMAIL &&
		    g->type != GEN_URI)
			continue;
		GENERAL_NAME *d = GENERAL_NAME_dup(g);
		if (!d || !sk_GENERAL_NAME_push(keep, d)) {
			GENERAL_NAME_free(d);
			rc = -ENOMEM;
		}
	}
	if (rc == 0 && sk_GENERAL_NAME_num(keep) > 0 &&
	    X509_add1_ext_i2d(cert, NID_subject_alt_name, keep, 0, X509V3_ADD_DEFAULT) != 1)
		rc = -EINVAL;
	GENERAL_NAMES_free(keep);
	GENERAL_NAMES_free(gens);
	sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
	return rc;
}

static int build(const kb_pki_ca_t *ca, X509_REQ *req, const struct kb_pki_sign_opts *o, X509 *cert)
{
	char ku[256];
	X509V3_CTX ctx;
	if (X509_set_version(cert, 2) != 1 || pki_random_serial(cert) < 0 ||
	    !ASN1_TIME_set(X509_getm_notBefore(cert), o->not_before) ||
	    !ASN1_TIME_set(X509_getm_notAfter(cert), o->not_after) ||
	    X509_set_pubkey(cert, X509_REQ_get0_pubkey(req)) != 1 ||
	    X509_set_issuer_name(cert, X509_get_subject_name(ca->p.cert)) != 1)
		return -ENOMEM;
	if (copy_subject(cert, X509_REQ_get_subject_name(req)) < 0 || copy_sans(cert, req) < 0)
		return -EINVAL;
	X509V3_set_ctx(&ctx, ca->p.cert, cert, NULL, NULL, 0);
	if (o->key_usage && *o->key_usage) {
		snprintf(ku, sizeof(ku), "critical,%s", o->key_usage);
		if (pki_add_ext(cert, &ctx, NID_key_usage, ku) < 0)
			return -EINVAL;
	}
	if ((o->ext_usage && *o->ext_usage &&
	     pki_add_ext(cert, &ctx, NID_ext_key_usage, o->ext_usage) < 0) ||
	    pki_add_ext(cert, &ctx, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    pki_add_ext(cert, &ctx, NID_authority_key_identifier, "keyid") < 0)
		return -EINVAL;
	return X509_sign(cert, ca->p.key, EVP_sha256()) > 0 ? 0 : -EINVAL;
}

int kb_pki_ca_sign(const kb_pki_ca_t *ca, const void *csr, size_t len,
		   const struct kb_pki_sign_opts *opts, char **cert_pem)
{
	X509_REQ *req = NULL;
	int rc = parse_request(csr, len, &req, NULL, 0);
	if (rc < 0)
		return rc;
	X509 *cert = X509_new();
	rc = cert ? build(ca, req, opts, cert) : -ENOMEM;
	if (rc == 0 && !(*cert_pem = pki_cert_pem(cert)))
		rc = -ENOMEM;
	if (rc < 0)
		kb_tls_log_errors("pki", "signing a request");
	X509_free(cert);
	X509_REQ_free(req);
	ERR_clear_error();
	return rc;
}

int kb_pki_ca_bundle_check(const void *pem, size_t len, char *err, size_t errlen)
{
	if (len > INT32_MAX)
		return -EINVAL;
	BIO *b = len ? BIO_new_mem_buf(pem, (int)len) : NULL;
	int blocks = 0, certs = 0;
	bool malformed = false;
	char *type = NULL, *header = NULL;
	unsigned char *der = NULL;
	long derlen = 0;
	while (b && PEM_read_bio(b, &type, &header, &der, &derlen) == 1) {
		const unsigned char *p = der;
		blocks++;
		if (strcmp(type, "CERTIFICATE") == 0 && !(header && *header)) {
			X509 *c = d2i_X509(NULL, &p, derlen);
			certs += c != NULL;
			malformed |= c == NULL && certs == 0;
			X509_free(c);
		}
		OPENSSL_free(type);
		OPENSSL_free(header);
		OPENSSL_free(der);
		type = header = NULL;
		der = NULL;
	}
	BIO_free(b);
	ERR_clear_error();
	if (certs)
		return 0;
	set_err(err, errlen,
		!blocks     ? "unable to parse bytes as PEM block"
		: malformed ? "failed to parse certificate: x509: malformed certificate"
			    : "no valid certificate authority data seen");
	return -EINVAL;
}
