/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What lib/pki.c (the tenant's own certificates) and lib/pki_csr.c
 * (certificates signed for CertificateSigningRequests) share: a certificate
 * and its key, loaded from dir/<base>.crt and .key, and the pieces every
 * certificate is built from. Not for use outside lib/pki*.c.
 */
#ifndef KB_PKI_IMPL_H
#define KB_PKI_IMPL_H

#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

struct pki_pair {
	X509 *cert;
	EVP_PKEY *key;
};

void pki_pair_free(struct pki_pair *p);
/* Loads dir/<base>.crt and .key; -ENOENT when either is missing, broken or
 * not the other's, -ENAMETOOLONG. */
int pki_load_pair(const char *dir, const char *base, struct pki_pair *p);
/* A CSR signer sharing p's certificate and key (both up-referenced).
 * 0 or -ENOMEM; *out freed with kb_pki_ca_free. */
struct kb_pki_ca;
int pki_ca_share(const struct pki_pair *p, struct kb_pki_ca **out);
/* The certificate's notAfter (0 when unreadable). */
time_t pki_not_after(const X509 *c);
/* 128 random bits, positive and of constant length (RFC 5280). */
int pki_random_serial(X509 *cert);
/* Adds extension `nid` from its OpenSSL config text. 0, -EINVAL, -ENOMEM. */
int pki_add_ext(X509 *cert, X509V3_CTX *ctx, int nid, const char *value);
/* The certificate as malloc'ed PEM text, or NULL. */
char *pki_cert_pem(X509 *cert);

/* kb_pki_ensure_keep, telling ca_known(ca_arg, pem, len) the CA's text as
 * soon as it is settled (what ca.crt holds once the call returns 0), before
 * the serving and admin pairs are made sure of; called on the caller's
 * thread, at most twice (a kept CA whose serving pair then fails to parse
 * is told again by the full check), the text borrowed for the call. */
typedef void (*pki_ca_known_fn)(void *arg, const char *pem, size_t len);
struct kb_pki;
int pki_ensure_keep_tell(const char *dir, const char *const *sans, size_t nsans,
			 const char *admin_user, const char *const *admin_groups, size_t ngroups,
			 pki_ca_known_fn ca_known, void *ca_arg, struct kb_pki **out);

#endif
