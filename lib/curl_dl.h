/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl, loaded when first needed (dlopen) rather than at every start.
 *
 * libcurl brings about 30 shared libraries with it (GnuTLS for librtmp,
 * Kerberos, LDAP, SASL, ssh2, ...); relocating them is most of the CPU a
 * `kubicle` process spends before main(): ~25 ms per exec measured with perf.
 * Most processes never talk HTTP as a client (a tenant without a host, the
 * supervisor, the CLI without a host), so lib/httpc.c includes this header
 * instead of <curl/curl.h>: the curl_* names it calls become entries of a
 * table that kb_curl_load() fills on first use.
 *
 * Threading: kb_curl_load() is called from kb_httpc_new (loop thread); the
 * table is written once.
 */
#ifndef KB_CURL_DL_H
#define KB_CURL_DL_H

#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdbool.h>

struct kb_curl_api {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *h);
	void (*easy_reset)(CURL *h);
	CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
	const char *(*easy_strerror)(CURLcode code);
	CURLcode (*easy_send)(CURL *h, const void *buf, size_t len, size_t *n);
	CURLcode (*easy_recv)(CURL *h, void *buf, size_t len, size_t *n);
	CURLcode (*easy_pause)(CURL *h, int bitmask);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_cleanup)(CURLM *m);
	CURLMcode (*multi_setopt)(CURLM *m, CURLMoption opt, ...);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_assign)(CURLM *m, curl_socket_t s, void *p);
	CURLMcode (*multi_socket_action)(CURLM *m, curl_socket_t s, int ev, int *running);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	CURLSH *(*share_init)(void);
	CURLSHcode (*share_setopt)(CURLSH *sh, CURLSHoption opt, ...);
	CURLSHcode (*share_cleanup)(CURLSH *sh);
	curl_version_info_data *(*version_info)(CURLversion v);
};

extern struct kb_curl_api kb_curl;

/*
 * The OpenSSL that libcurl loaded (libssl.so.3 and libcrypto.so.3, found by
 * dlsym on libcurl's handle, which searches its dependencies), not the one
 * linked into kubicle: an object made by one must never reach the other.
 * lib/httpc.c builds the host client's CA store, certificate and key with
 * these once, and hands them to each TLS context curl makes (its SSL_CTX
 * callback) instead of PEM blobs that curl decodes again per connection.
 * Filled only when libcurl's TLS backend is OpenSSL 3 and every symbol
 * resolves (kb_curl_ossl_ok); the types are those of our OpenSSL 3 headers,
 * whose public structs the shared 3.x library shares.
 */
struct kb_curl_ossl {
	BIO *(*bio_new_mem_buf)(const void *buf, int len);
	int (*bio_free)(BIO *b);
	STACK_OF(X509_INFO) * (*pem_x509_info_read_bio)(BIO *b, STACK_OF(X509_INFO) * sk,
							pem_password_cb *cb, void *u);
	X509 *(*pem_read_bio_x509_aux)(BIO *b, X509 **x, pem_password_cb *cb, void *u);
	X509 *(*pem_read_bio_x509)(BIO *b, X509 **x, pem_password_cb *cb, void *u);
	EVP_PKEY *(*pem_read_bio_privatekey)(BIO *b, EVP_PKEY **x, pem_password_cb *cb, void *u);
	int (*x509_check_private_key)(const X509 *x, const EVP_PKEY *k);
	void (*x509_free)(X509 *x);
	void (*x509_info_free)(X509_INFO *i);
	void (*evp_pkey_free)(EVP_PKEY *k);
	X509_STORE *(*x509_store_new)(void);
	void (*x509_store_free)(X509_STORE *s);
	int (*x509_store_up_ref)(X509_STORE *s);
	int (*x509_store_add_cert)(X509_STORE *s, X509 *x);
	int (*x509_store_add_crl)(X509_STORE *s, X509_CRL *x);
	int (*x509_store_set_flags)(X509_STORE *s, unsigned long flags);
	int (*sk_num)(const OPENSSL_STACK *sk);
	void *(*sk_value)(const OPENSSL_STACK *sk, int i);
	void (*sk_free)(OPENSSL_STACK *sk);
	void (*err_clear_error)(void);
	void (*ssl_ctx_set_cert_store)(SSL_CTX *ctx, X509_STORE *s);
	int (*ssl_ctx_use_certificate)(SSL_CTX *ctx, X509 *x);
	int (*ssl_ctx_use_privatekey)(SSL_CTX *ctx, EVP_PKEY *k);
	long (*ssl_ctx_ctrl)(SSL_CTX *ctx, int cmd, long larg, void *parg);
};

extern struct kb_curl_ossl kb_curl_ossl;
extern bool kb_curl_ossl_ok;

/* Loads libcurl.so.4 and calls curl_global_init once; fills kb_curl_ossl
 * when it can. 0, or -ENOENT with the reason logged. */
int kb_curl_load(void);

#ifndef KB_CURL_DL_IMPL
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#undef curl_share_setopt
#define curl_global_init         kb_curl.global_init
#define curl_easy_init           kb_curl.easy_init
#define curl_easy_cleanup        kb_curl.easy_cleanup
#define curl_easy_reset          kb_curl.easy_reset
#define curl_easy_setopt         kb_curl.easy_setopt
#define curl_easy_getinfo        kb_curl.easy_getinfo
#define curl_easy_strerror       kb_curl.easy_strerror
#define curl_easy_send           kb_curl.easy_send
#define curl_easy_recv           kb_curl.easy_recv
#define curl_easy_pause          kb_curl.easy_pause
#define curl_multi_init          kb_curl.multi_init
#define curl_multi_cleanup       kb_curl.multi_cleanup
#define curl_multi_setopt        kb_curl.multi_setopt
#define curl_multi_add_handle    kb_curl.multi_add_handle
#define curl_multi_remove_handle kb_curl.multi_remove_handle
#define curl_multi_assign        kb_curl.multi_assign
#define curl_multi_socket_action kb_curl.multi_socket_action
#define curl_multi_info_read     kb_curl.multi_info_read
#define curl_slist_append        kb_curl.slist_append
#define curl_slist_free_all      kb_curl.slist_free_all
#define curl_share_init          kb_curl.share_init
#define curl_share_setopt        kb_curl.share_setopt
#define curl_share_cleanup       kb_curl.share_cleanup
#define curl_version_info        kb_curl.version_info
#endif

#endif
