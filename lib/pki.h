/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keys and certificates for a tenant: an ECDSA P-256 CA, a serving
 * certificate and client certificates, all written as PEM files.
 *
 * Threading: blocking file I/O; call at start-up or from a CLI command,
 * never from a loop callback serving requests.
 */
#ifndef KB_PKI_H
#define KB_PKI_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/*
 * Makes sure `dir` holds ca.crt/ca.key, server.crt/server.key (SANs:
 * 127.0.0.1, ::1, localhost plus `sans`, each an IP or DNS name) and
 * admin.crt/admin.key (client certificate, CN `admin_user`, O each of
 * `admin_groups`). Existing valid files are kept; the serving certificate is
 * re-issued when its SANs differ from the requested ones. Keys are 0600.
 * Returns 0 or a negative errno.
 */
int kb_pki_ensure(const char *dir, const char *const *sans, size_t nsans, const char *admin_user,
		  const char *const *admin_groups, size_t ngroups);
/* The file in `dir` where a check that passed leaves its stamp (a cache,
 * lib/pki.c; whoever removes the folder removes it too). */
#define KB_PKI_STAMP ".pki-checked"
/* The same without a serving certificate: a CA that signs only the one
 * client certificate admin.crt/admin.key of CN `user` (the aggregation
 * layer's front-proxy identity). */
int kb_pki_ensure_client_ca(const char *dir, const char *user);

/*
 * Issues a client certificate signed by the CA in `dir`: writes PEM
 * certificate and key into the malloc'ed *cert_pem and *key_pem (caller
 * frees). `ttl_seconds` 0 means one year.
 */
int kb_pki_issue_client(const char *dir, const char *user, const char *const *groups,
			size_t ngroups, long ttl_seconds, char **cert_pem, char **key_pem);

/* A new P-256 key (*key, EVP_PKEY_free) and its PEM text as this module
 * writes keys (PKCS#8; *pem malloc'ed). 0 or -ENOMEM. Any thread. */
struct evp_pkey_st;
int kb_pki_new_key(struct evp_pkey_st **key, char **pem);

/* The first private key in PEM text (PKCS#8 EC keys, what this module
 * writes, through a decoder built once; others as PEM_read_bio_PrivateKey
 * reads them), or NULL. The caller owns it (EVP_PKEY_free). Any thread. */
struct evp_pkey_st *kb_pki_key_from_pem(const char *pem, size_t len);

/* Reads a whole file into a malloc'ed NUL-terminated buffer. */
int kb_read_file(const char *path, char **out, size_t *len_out);
/* Writes atomically (temp file + fsync + rename) with `mode`. */
int kb_write_file(const char *path, const char *data, size_t len, int mode);
/* The same without fsync: for a file made again from others whenever it
 * is missing or differs (a crash may leave the old one, or none, until
 * then). */
int kb_write_file_unsynced(const char *path, const char *data, size_t len, int mode);

/* ---- certificate requests and an in-memory CA (pki_csr.c) -----------------
 * CPU only, no file I/O except kb_pki_ca_load. */

/* What a PKCS#10 request asks for. */
struct kb_csr_info {
	bool masters; /* a subject O value gives the group system:masters (kb_pki_name_groups) */
};

/*
 * The groups a client certificate's subject gives at login: each of its O
 * values, in order, read one way for the authenticator and for whatever
 * must know what a certificate will give (a value of 128 bytes or more
 * gives none; one with a NUL ends there). cb(group, arg) for each.
 */
struct X509_name_st;
void kb_pki_name_groups(const struct X509_name_st *name, void (*cb)(const char *group, void *arg),
			void *arg);

/*
 * Checks PEM text as Go's pem.Decode + x509.ParseCertificateRequest +
 * CheckSignature do: the first PEM block must be a "CERTIFICATE REQUEST"
 * whose DER parses and whose self-signature verifies. 0 (info filled when
 * non-NULL), or -EINVAL with Go's message in err ("PEM block type must be
 * CERTIFICATE REQUEST", "x509: ECDSA verification failure", ...).
 */
int kb_pki_csr_check(const void *pem, size_t len, struct kb_csr_info *info, char *err,
		     size_t errlen);

/*
 * Checks PEM text holding certificates: one or more "CERTIFICATE" blocks
 * without headers, each parsing as X.509; 0 or -EINVAL with the reason in
 * err. Empty input is fine (0).
 */
int kb_pki_certs_check(const void *pem, size_t len, char *err, size_t errlen);

/*
 * A CA bundle as client-go's rootCertPool takes it (crypto/x509
 * AppendCertsFromPEM): usable when at least one "CERTIFICATE" block without
 * headers parses as X.509; other blocks are skipped. 0, or -EINVAL with
 * client-go's reason (transport's createErrorParsingCAData) in err:
 * "unable to parse bytes as PEM block" (no PEM block at all), "failed to
 * parse certificate: x509: malformed certificate", or "no valid
 * certificate authority data seen". Empty input is -EINVAL too (no block).
 */
int kb_pki_ca_bundle_check(const void *pem, size_t len, char *err, size_t errlen);

/* notAfter of the first certificate in PEM text: 0 or -EINVAL. */
int kb_pki_cert_not_after(const void *pem, size_t len, time_t *out);

typedef struct kb_pki_ca kb_pki_ca_t;

/* Loads dir/ca.crt and dir/ca.key (blocking file I/O: at start-up). 0 or
 * -errno; *out freed with kb_pki_ca_free. */
int kb_pki_ca_load(const char *dir, kb_pki_ca_t **out);
void kb_pki_ca_free(kb_pki_ca_t *ca);
/* The CA certificate's notAfter. */
time_t kb_pki_ca_not_after(const kb_pki_ca_t *ca);

/*
 * kb_pki_ensure for a server that goes on to serve with what it made sure
 * of: the CA and serving pairs stay parsed in *out (kb_pki_free), so the
 * TLS context and the CSR signer do not read and parse the files again
 * (each certificate parse builds an OpenSSL 3.0 decoder for its key, 1.4 M
 * instructions). Same files, same checks, same result as kb_pki_ensure.
 */
typedef struct kb_pki kb_pki_t;
int kb_pki_ensure_keep(const char *dir, const char *const *sans, size_t nsans,
		       const char *admin_user, const char *const *admin_groups, size_t ngroups,
		       kb_pki_t **out);
void kb_pki_free(kb_pki_t *pki);
/* The serving TLS context (as kb_tls_server_ctx builds it from the dir's
 * server.crt, server.key and ca.crt); *out owned by the caller. */
struct ssl_ctx_st;
int kb_pki_server_ctx(const kb_pki_t *pki, struct ssl_ctx_st **out);
/*
 * kb_pki_ensure_keep and then kb_pki_server_ctx on a thread of their own,
 * so that the caller does other start-up work meanwhile (a serving
 * process's start: about a third of its instructions are these two, which
 * a second core then does beside the store's start). The arrays and
 * strings are borrowed until kb_pki_job_join; a job started is always
 * joined. Blocking calls, from the thread that started the job:
 * - kb_pki_job_ca: waits until the CA is settled: *pem is the text ca.crt
 *   holds (borrowed until kb_pki_job_join), before the serving and admin
 *   pairs are; the ensure's -errno if it failed first.
 * - kb_pki_job_tls: waits for the end: *tls is the serving context (the
 *   caller's), or the ensure's or the context's -errno.
 * - kb_pki_job_join: waits for the end and frees the job: *pki as
 *   kb_pki_ensure_keep gives it (NULL on failure; *pki_failed says whether
 *   the ensure or the TLS context failed). *ca_later, when not NULL, gets
 *   the CA's text if it ended other than what kb_pki_job_ca said (a kept
 *   CA whose serving pair did not parse, then found unusable by the full
 *   check: the caller's to free), else NULL.
 */
typedef struct kb_pki_job kb_pki_job_t;
int kb_pki_job_start(const char *dir, const char *const *sans, size_t nsans, const char *admin_user,
		     const char *const *admin_groups, size_t ngroups, kb_pki_job_t **out);
int kb_pki_job_ca(kb_pki_job_t *job, const char **pem);
int kb_pki_job_tls(kb_pki_job_t *job, struct ssl_ctx_st **tls);
int kb_pki_job_join(kb_pki_job_t *job, kb_pki_t **pki, bool *pki_failed, char **ca_later);
/*
 * kb_pki_ensure_client_ca(dir, user) on a thread of its own (the strings
 * are copied), for a start that needs its files only later: a first start
 * makes a CA and a client pair there (two keys, two signatures, four
 * fsyncs). kb_pki_client_ca_join waits for it, frees the task and returns
 * what the ensure returned; a task started is always joined. Either call
 * from the thread that started it.
 */
typedef struct kb_pki_client_ca_task kb_pki_client_ca_task_t;
int kb_pki_client_ca_start(const char *dir, const char *user, kb_pki_client_ca_task_t **out);
int kb_pki_client_ca_join(kb_pki_client_ca_task_t *task);

/* The CA as a CSR signer (what kb_pki_ca_load would load), sharing the
 * parsed pair: no file I/O. 0 or -ENOMEM; *out freed with kb_pki_ca_free. */
int kb_pki_signer(const kb_pki_t *pki, kb_pki_ca_t **out);

/* How to sign a request. Strings are OpenSSL extension values. */
struct kb_pki_sign_opts {
	const char *key_usage; /* "digitalSignature,keyEncipherment" (critical), or NULL/"" */
	const char *ext_usage; /* "clientAuth,serverAuth", or NULL/"" */
	time_t not_before, not_after;
};

/*
 * Signs the PEM request csr (checked as kb_pki_csr_check) with `ca`: a
 * random 128-bit serial, the request's subject (C, ST, L, street,
 * postalCode, O, OU, CN, serialNumber, in that order, as Go marshals a
 * parsed name) and DNS/IP/email/URI subjectAltNames, the request's public
 * key, basicConstraints CA:FALSE, the given usages, authorityKeyIdentifier,
 * SHA-256. *cert_pem is malloc'ed PEM (caller frees). 0, -EINVAL, -ENOMEM.
 */
int kb_pki_ca_sign(const kb_pki_ca_t *ca, const void *csr, size_t len,
		   const struct kb_pki_sign_opts *opts, char **cert_pem);

#endif
