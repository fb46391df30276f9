/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcurl loaded on first use (curl_dl.h says why): dlopen of the soname
 * the headers belong to, every entry point looked up by name.
 */
#define KB_CURL_DL_IMPL 1
#include "lib/curl_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>

#include "lib/log.h"
#include "lib/util.h"

struct kb_curl_api kb_curl;

/* An entry point: its name, and where its address goes in the table. */
struct entry {
	const char *name;
	size_t offset;
};

/* one entry per line */
/* clang-format off */
static const struct entry entries[] = {
#define E(sym, field) {#sym, offsetof(struct kb_curl_api, field)}
	E(curl_global_init, global_init),
	E(curl_easy_init, easy_init),
	E(curl_easy_cleanup, easy_cleanup),
	E(curl_easy_reset, easy_reset),
	E(curl_easy_setopt, easy_setopt),
	E(curl_easy_getinfo, easy_getinfo),
	E(curl_easy_strerror, easy_strerror),
	E(curl_easy_send, easy_send),
	E(curl_easy_recv, easy_recv),
	E(curl_easy_pause, easy_pause),
	E(curl_multi_init, multi_init),
	E(curl_multi_cleanup, multi_cleanup),
	E(curl_multi_setopt, multi_setopt),
	E(curl_multi_add_handle, multi_add_handle),
	E(curl_multi_remove_handle, multi_remove_handle),
	E(curl_multi_assign, multi_assign),
	E(curl_multi_socket_action, multi_socket_action),
	E(curl_multi_info_read, multi_info_read),
	E(curl_slist_append, slist_append),
	E(curl_slist_free_all, slist_free_all),
	E(curl_share_init, share_init),
	E(curl_share_setopt, share_setopt),
	E(curl_share_cleanup, share_cleanup),
	E(curl_version_info, version_info),
#undef E
};

struct kb_curl_ossl kb_curl_ossl;
bool kb_curl_ossl_ok;

static const struct entry ossl_entries[] = {
#define E(sym, field) {#sym, offsetof(struct kb_curl_ossl, field)}
	E(BIO_new_mem_buf, bio_new_mem_buf),
	E(BIO_free, bio_free),
	E(PEM_X509_INFO_read_bio, pem_x509_info_read_bio),
	E(PEM_read_bio_X509_AUX, pem_read_bio_x509_aux),
	E(PEM_read_bio_X509, pem_read_bio_x509),
	E(PEM_read_bio_PrivateKey, pem_read_bio_privatekey),
	E(X509_check_private_key, x509_check_private_key),
	E(X509_free, x509_free),
	E(X509_INFO_free, x509_info_free),
	E(EVP_PKEY_free, evp_pkey_free),
	E(X509_STORE_new, x509_store_new),
	E(X509_STORE_free, x509_store_free),
	E(X509_STORE_up_ref, x509_store_up_ref),
	E(X509_STORE_add_cert, x509_store_add_cert),
	E(X509_STORE_add_crl, x509_store_add_crl),
	E(X509_STORE_set_flags, x509_store_set_flags),
	E(OPENSSL_sk_num, sk_num),
	E(OPENSSL_sk_value, sk_value),
	E(OPENSSL_sk_free, sk_free),
	E(ERR_clear_error, err_clear_error),
	E(SSL_CTX_set_cert_store, ssl_ctx_set_cert_store),
	E(SSL_CTX_use_certificate, ssl_ctx_use_certificate),
	E(SSL_CTX_use_PrivateKey, ssl_ctx_use_privatekey),
	E(SSL_CTX_ctrl, ssl_ctx_ctrl),
#undef E
};
/* clang-format on */

/* Looks each of the n entries up in h and writes its address into table:
 * NULL, or the name of the first one missing (table then partly written). */
static const char *resolve(void *h, const struct entry *e, size_t n, void *table)
{
	for (size_t i = 0; i < n; i++) {
		void *sym = dlsym(h, e[i].name);
		if (!sym)
			return e[i].name;
		memcpy((char *)table + e[i].offset, &sym, sizeof(sym));
	}
	return NULL;
}

/* Fills kb_curl_ossl from the OpenSSL libcurl was linked with, when that is
 * its TLS backend and version 3 (the ABI of our headers); else leaves it
 * off and curl gets PEM blobs. */
static void ossl_load(void *curl)
{
	const curl_version_info_data *v = kb_curl.version_info(CURLVERSION_NOW);
	if (!v || !v->ssl_version || strncmp(v->ssl_version, "OpenSSL/3.", 10) != 0) {
		kb_info("httpc", "libcurl's TLS is %s: client credentials go as PEM blobs",
			v && v->ssl_version ? v->ssl_version : "none");
		return;
	}
	struct kb_curl_ossl o;
	const char *missing = resolve(curl, ossl_entries, KB_ARRAY_SIZE(ossl_entries), &o);
	if (missing) {
		kb_info("httpc", "libcurl's OpenSSL lacks %s: credentials go as PEM blobs",
			missing);
		return;
	}
	kb_curl_ossl = o;
	kb_curl_ossl_ok = true;
}

int kb_curl_load(void)
{
	static int state; /* 0: not tried, 1: loaded, -errno: failed */
	if (state)
		return state > 0 ? 0 : state;
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		kb_err("httpc", "cannot load libcurl: %s", dlerror());
		state = -ENOENT;
		return state;
	}
	struct kb_curl_api api;
	const char *missing = resolve(h, entries, KB_ARRAY_SIZE(entries), &api);
	if (missing) {
		kb_err("httpc", "libcurl lacks %s", missing);
		dlclose(h);
		state = -ENOENT;
		return state;
	}
	kb_curl = api;
	kb_curl.global_init(CURL_GLOBAL_DEFAULT);
	ossl_load(h);
	state = 1;
	return 0;
}
