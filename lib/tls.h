/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS contexts. The server context requests (but does not require) a client
 * certificate and verifies it against the tenant CA when given, so that the
 * authentication layer can read the verified certificate from the request.
 * TLS 1.2 and 1.3 only.
 *
 * Threading: call from any thread; contexts are then shared read-only.
 */
#ifndef KB_TLS_H
#define KB_TLS_H

typedef struct ssl_ctx_st SSL_CTX;
typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;

/* Builds a server context from PEM files. `client_ca_file` may be NULL
 * (no client certificates asked). Returns 0 or a negative errno; *out is
 * owned by the caller (SSL_CTX_free). */
int kb_tls_server_ctx(const char *cert_file, const char *key_file, const char *client_ca_file,
		      SSL_CTX **out);

/* The same from a parsed certificate, key and client CA (NULL: none
 * asked); the context takes its own references. */
int kb_tls_server_ctx_mem(X509 *cert, EVP_PKEY *key, X509 *client_ca, SSL_CTX **out);

/* Logs and clears the OpenSSL error queue under `subsys`. */
void kb_tls_log_errors(const char *subsys, const char *what);

#endif
