/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS server contexts (see tls.h). The context asks for a client certificate
 * without requiring one and accepts the handshake even when the offered
 * certificate does not verify: the verification result stays on the SSL
 * object, and the HTTP layer hands only a certificate whose result is
 * X509_V_OK to the application, which answers 401 otherwise (as
 * kube-apiserver does). A server-side session cache makes TLS 1.2 reconnects
 * cheap (no TLS 1.3 tickets: see ctx_new); SSL_MODE_RELEASE_BUFFERS keeps
 * idle connections small.
 */
#include "lib/tls.h"

#include <errno.h>
#include <stdlib.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "lib/log.h"
#include "lib/pki.h"

/* Session id context: required for session resumption when client
 * certificates are requested. */
static const unsigned char sid_ctx[] = "kubicle";

void kb_tls_log_errors(const char *subsys, const char *what)
{
	unsigned long e;
	char buf[256];
	bool any = false;
	while ((e = ERR_get_error()) != 0) {
		ERR_error_string_n(e, buf, sizeof(buf));
		kb_warn(subsys, "%s: %s", what, buf);
		any = true;
	}
	if (!any)
		kb_debug(subsys, "%s: no OpenSSL error queued", what);
}

/* Accepts any offered certificate; the result is read later with
 * SSL_get_verify_result(). */
static int accept_any_cert(int preverify_ok, X509_STORE_CTX *x509_ctx)
{
	(void)preverify_ok;
	(void)x509_ctx;
	return 1;
}

static int use_client_ca(SSL_CTX *ctx, X509 *ca);

/* The certificates of client_ca_file both verify client certificates and
 * name the acceptable issuers in the CertificateRequest; the file is parsed
 * once for both (each certificate parse decodes its key: OpenSSL 3.0 builds
 * a decoder for it, ~1.4 M instructions). */
static int setup_client_ca(SSL_CTX *ctx, const char *client_ca_file)
{
	BIO *b = BIO_new_file(client_ca_file, "r");
	X509 *x;
	int n = 0, rc = 0;
	if (!b)
		return -EINVAL;
	while (rc == 0 && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		rc = use_client_ca(ctx, x);
		X509_free(x);
		n++;
	}
	BIO_free(b);
	ERR_clear_error();
	if (rc < 0 || n == 0)
		return -EINVAL;
	return 0;
}

/* The key file through kb_pki_key_from_pem (a decoder built once). */
static int use_key_file(SSL_CTX *ctx, const char *key_file)
{
	char *pem = NULL;
	size_t len = 0;
	if (kb_read_file(key_file, &pem, &len) < 0)
		return -ENOENT;
	EVP_PKEY *k = kb_pki_key_from_pem(pem, len);
	OPENSSL_cleanse(pem, len);
	free(pem);
	int ok = k && SSL_CTX_use_PrivateKey(ctx, k) == 1;
	EVP_PKEY_free(k);
	return ok ? 0 : -ENOENT;
}

/* A server context with everything but its certificate, key and client
 * CAs; NULL after logging. */
static SSL_CTX *ctx_new(void)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		kb_tls_log_errors("tls", "SSL_CTX_new");
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		goto fail;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
				     SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	/* TLS 1.3 suites in the order Go's crypto/tls (kubectl, client-go)
	 * prefers on AES hardware: AES-128-GCM first (10 AES rounds, not 14)
	 * rather than AES-256-GCM, which OpenSSL would otherwise pick (the server's
	 * order wins). */
	if (SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
					  "TLS_CHACHA20_POLY1305_SHA256") != 1)
		goto fail;
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
	SSL_CTX_sess_set_cache_size(ctx, 4096);
	SSL_CTX_set_timeout(ctx, 3600);
	/* No TLS 1.3 session tickets: issuing one cost 1.6 M instructions per
	 * full handshake (OpenSSL 3.0 encodes the session and decodes the
	 * client certificate inside it again: 10.5 M -> 8.9 M per handshake,
	 * callgrind), and no Kubernetes client resumes (client-go's
	 * transport.TLSConfigFor sets no ClientSessionCache, so kubectl and
	 * controllers never offer one; kube-apiserver, on Go's crypto/tls,
	 * sends one anyway). TLS 1.2 clients still resume by session id. */
	SSL_CTX_set_num_tickets(ctx, 0);
	if (SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1) != 1)
		goto fail;
	return ctx;
fail:
	kb_tls_log_errors("tls", "server context");
	SSL_CTX_free(ctx);
	return NULL;
}

/* Client certificates verified against `ca`, also named as the acceptable
 * issuer (as setup_client_ca does for a file). */
static int use_client_ca(SSL_CTX *ctx, X509 *ca)
{
	if (X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx), ca) != 1 ||
	    SSL_CTX_add_client_CA(ctx, ca) != 1)
		return -EINVAL;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any_cert);
	SSL_CTX_set_verify_depth(ctx, 4);
	return 0;
}

/*
 * The chain served after the certificate, built once here. Without one,
 * OpenSSL builds it at every handshake from the verify store (the client
 * CAs: its "auto chain", an X509_verify_cert whose ECDSA check of the
 * serving certificate cost 0.95 M instructions a handshake) and sends the
 * certificates it found, root included. SSL_CTX_build_cert_chain does the
 * same search (errors ignored: as far as it gets, as the auto chain sends)
 * and keeps the result, so the handshake sends the same certificates. A
 * certificate given with a chain keeps that chain, as before.
 */
static void build_chain(SSL_CTX *ctx)
{
	STACK_OF(X509) *chain = NULL;
	if (SSL_CTX_get0_chain_certs(ctx, &chain) == 1 && chain)
		return;
	if (SSL_CTX_build_cert_chain(ctx, SSL_BUILD_CHAIN_FLAG_IGNORE_ERROR |
					      SSL_BUILD_CHAIN_FLAG_CLEAR_ERROR) <= 0)
		ERR_clear_error(); /* the auto chain stays */
}

/* Hands ctx out (rc 0) or frees it after logging why (rc < 0). */
static int ctx_done(SSL_CTX *ctx, int rc, SSL_CTX **out)
{
	if (rc == 0) {
		build_chain(ctx);
		*out = ctx;
		return 0;
	}
	kb_tls_log_errors("tls", "server context");
	SSL_CTX_free(ctx);
	return rc;
}

int kb_tls_server_ctx(const char *cert_file, const char *key_file, const char *client_ca_file,
		      SSL_CTX **out)
{
	SSL_CTX *ctx = ctx_new();
	if (!ctx)
		return -ENOMEM;
	int rc = SSL_CTX_use_certificate_chain_file(ctx, cert_file) == 1 &&
			 use_key_file(ctx, key_file) == 0 && SSL_CTX_check_private_key(ctx) == 1
		     ? 0
		     : -ENOENT;
	if (rc == 0 && client_ca_file && setup_client_ca(ctx, client_ca_file) < 0)
		rc = -EINVAL;
	return ctx_done(ctx, rc, out);
}

int kb_tls_server_ctx_mem(X509 *cert, EVP_PKEY *key, X509 *client_ca, SSL_CTX **out)
{
	SSL_CTX *ctx = ctx_new();
	if (!ctx)
		return -ENOMEM;
	int rc = SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1 &&
			 SSL_CTX_check_private_key(ctx) == 1
		     ? 0
		     : -ENOENT;
	if (rc == 0 && client_ca && use_client_ca(ctx, client_ca) < 0)
		rc = -EINVAL;
	return ctx_done(ctx, rc, out);
}
