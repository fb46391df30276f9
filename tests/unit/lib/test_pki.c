/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/pki and lib/kubeconfig: the files kb_pki_ensure() writes are
 * checked with OpenSSL itself (chain, SANs, key type, extensions, modes),
 * re-runs keep or re-issue as the contract says, client certificates carry
 * the user as CN and groups as O (how Kubernetes' x509 authenticator reads
 * them), and kubeconfigs embed base64 PEM data.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "lib/kubeconfig.h"
#include "lib/pki.h"
#include "lib/tls.h"
#include "lib/util.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static char dir[64];

static void setup(void)
{
	strcpy(dir, "/tmp/kb-pki-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_rf(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static char *path_of(const char *name)
{
	static char p[128];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static X509 *load_cert(const char *name)
{
	FILE *f = fopen(path_of(name), "r");
	ck_assert_ptr_nonnull(f);
	X509 *c = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(c);
	return c;
}

static X509 *cert_from_pem(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *c = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	ck_assert_ptr_nonnull(c);
	return c;
}

static EVP_PKEY *load_key(const char *name)
{
	FILE *f = fopen(path_of(name), "r");
	ck_assert_ptr_nonnull(f);
	EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	ck_assert_ptr_nonnull(k);
	return k;
}

static void assert_p256(EVP_PKEY *k)
{
	char group[64];
	size_t len = 0;
	ck_assert_int_eq(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
	ck_assert_int_eq(EVP_PKEY_get_group_name(k, group, sizeof(group), &len), 1);
	ck_assert_str_eq(group, "prime256v1");
}

/* Verifies `leaf` against `ca` as a TLS peer would, for `purpose`. */
static int verify_chain(X509 *ca, X509 *leaf, int purpose)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_add_cert(store, ca);
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_STORE_CTX_init(ctx, store, leaf, NULL);
	X509_STORE_CTX_set_purpose(ctx, purpose);
	int ok = X509_verify_cert(ctx);
	int err = X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ok == 1 ? 0 : err;
}

static bool has_ip(X509 *c, const char *ip)
{
	return X509_check_ip_asc(c, ip, 0) == 1;
}

static bool has_dns(X509 *c, const char *name)
{
	return X509_check_host(c, name, 0, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL) == 1;
}

static int mode_of(const char *name)
{
	struct stat st;
	ck_assert_int_eq(stat(path_of(name), &st), 0);
	return (int)(st.st_mode & 0777);
}

static char *subject_field(X509 *c, int nid, int nth)
{
	static char buf[8][128];
	X509_NAME *n = X509_get_subject_name(c);
	int pos = -1;
	for (int i = 0; i <= nth; i++) {
		pos = X509_NAME_get_index_by_NID(n, nid, pos);
		if (pos < 0)
			return NULL;
	}
	ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(n, pos));
	snprintf(buf[nth & 7], sizeof(buf[0]), "%s", ASN1_STRING_get0_data(s));
	return buf[nth & 7];
}

static const char *const groups[] = {"system:masters", "kubicle:admins"};

static void ensure(const char *const *sans, size_t nsans)
{
	ck_assert_int_eq(kb_pki_ensure(dir, sans, nsans, "kubicle-admin", groups, 2), 0);
}

/* A client-only CA (the front-proxy's): CA and client certificate, no
 * serving certificate. */
START_TEST(client_ca_has_no_server)
{
	ck_assert_int_eq(kb_pki_ensure_client_ca(dir, "front-proxy-client"), 0);
	X509 *ca = load_cert("ca.crt"), *adm = load_cert("admin.crt");
	ck_assert_int_eq(X509_check_ca(ca), 1);
	ck_assert_int_eq(verify_chain(ca, adm, X509_PURPOSE_SSL_CLIENT), 0);
	ck_assert_str_eq(subject_field(adm, NID_commonName, 0), "front-proxy-client");
	ck_assert_int_ne(access(path_of("server.crt"), F_OK), 0);
	X509_free(ca);
	X509_free(adm);
}
END_TEST

/* The same on a thread: the join gives the ensure's result, and its
 * files; a folder that cannot be made gives its error. */
START_TEST(client_ca_task)
{
	kb_pki_client_ca_task_t *t = NULL;
	ck_assert_int_eq(kb_pki_client_ca_start(dir, "front-proxy-client", &t), 0);
	ck_assert_int_eq(kb_pki_client_ca_join(t), 0);
	X509 *ca = load_cert("ca.crt"), *adm = load_cert("admin.crt");
	ck_assert_int_eq(verify_chain(ca, adm, X509_PURPOSE_SSL_CLIENT), 0);
	ck_assert_str_eq(subject_field(adm, NID_commonName, 0), "front-proxy-client");
	X509_free(ca);
	X509_free(adm);
	/* again: the files kept */
	ck_assert_int_eq(kb_pki_client_ca_start(dir, "front-proxy-client", &t), 0);
	ck_assert_int_eq(kb_pki_client_ca_join(t), 0);
	char bad[160];
	snprintf(bad, sizeof(bad), "%s/sub", path_of("ca.crt"));
	ck_assert_int_eq(kb_pki_client_ca_start(bad, "front-proxy-client", &t), 0);
	ck_assert_int_lt(kb_pki_client_ca_join(t), 0);
	rm_rf();
}
END_TEST

START_TEST(ensure_creates_valid_pki)
{
	const char *const sans[] = {"10.1.2.3", "api.example.test"};
	ensure(sans, 2);
	X509 *ca = load_cert("ca.crt"), *srv = load_cert("server.crt");
	X509 *adm = load_cert("admin.crt");
	EVP_PKEY *cak = load_key("ca.key"), *sk = load_key("server.key");
	EVP_PKEY *ak = load_key("admin.key");

	ck_assert_int_eq(X509_check_ca(ca), 1);
	ck_assert_int_eq(X509_check_private_key(ca, cak), 1);
	ck_assert_int_eq(X509_check_private_key(srv, sk), 1);
	ck_assert_int_eq(X509_check_private_key(adm, ak), 1);
	assert_p256(cak);
	assert_p256(sk);
	assert_p256(ak);

	ck_assert_int_eq(verify_chain(ca, srv, X509_PURPOSE_SSL_SERVER), 0);
	ck_assert_int_eq(verify_chain(ca, adm, X509_PURPOSE_SSL_CLIENT), 0);
	/* Extended key usage keeps each certificate to its role. */
	ck_assert_int_ne(verify_chain(ca, srv, X509_PURPOSE_SSL_CLIENT), 0);
	ck_assert_int_ne(verify_chain(ca, adm, X509_PURPOSE_SSL_SERVER), 0);

	ck_assert(has_ip(srv, "127.0.0.1"));
	ck_assert(has_ip(srv, "::1"));
	ck_assert(has_ip(srv, "10.1.2.3"));
	ck_assert(has_dns(srv, "localhost"));
	ck_assert(has_dns(srv, "api.example.test"));
	ck_assert(!has_dns(srv, "other.example.test"));
	ck_assert(!has_ip(srv, "10.1.2.4"));

	/* CA: 10 years, leaf: about 1 year. */
	int days, secs;
	ck_assert_int_eq(
	    ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(ca), X509_get0_notAfter(ca)), 1);
	ck_assert_int_ge(days, 3650);
	ck_assert_int_eq(
	    ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(srv), X509_get0_notAfter(srv)), 1);
	ck_assert_int_ge(days, 365);
	ck_assert_int_lt(days, 367);
	time_t now = time(NULL);
	ck_assert_int_lt(X509_cmp_time(X509_get0_notBefore(srv), &now), 0);

	/* Serial numbers are random and large. */
	const ASN1_INTEGER *s1 = X509_get0_serialNumber(ca), *s2 = X509_get0_serialNumber(srv);
	ck_assert_int_ge(ASN1_STRING_length(s1), 16);
	ck_assert_int_ne(ASN1_INTEGER_cmp(s1, s2), 0);

	ck_assert_str_eq(subject_field(adm, NID_commonName, 0), "kubicle-admin");
	ck_assert_str_eq(subject_field(adm, NID_organizationName, 0), "system:masters");
	ck_assert_str_eq(subject_field(adm, NID_organizationName, 1), "kubicle:admins");
	ck_assert_ptr_null(subject_field(adm, NID_organizationName, 2));

	ck_assert_int_eq(mode_of("ca.key"), 0600);
	ck_assert_int_eq(mode_of("server.key"), 0600);
	ck_assert_int_eq(mode_of("admin.key"), 0600);
	ck_assert_int_eq(mode_of("ca.crt") & 0077, 0044);

	X509_free(ca);
	X509_free(srv);
	X509_free(adm);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(sk);
	EVP_PKEY_free(ak);
	rm_rf();
}
END_TEST

START_TEST(ca_extensions)
{
	ensure(NULL, 0);
	X509 *ca = load_cert("ca.crt"), *srv = load_cert("server.crt");
	int crit = -1;
	BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(ca, NID_basic_constraints, &crit, NULL);
	ck_assert_ptr_nonnull(bc);
	ck_assert(bc->ca);
	ck_assert_int_eq(crit, 1);
	BASIC_CONSTRAINTS_free(bc);
	uint32_t ku = X509_get_key_usage(ca);
	ck_assert(ku & KU_KEY_CERT_SIGN);
	ck_assert(ku & KU_CRL_SIGN);
	ck_assert(ku & KU_DIGITAL_SIGNATURE);
	const ASN1_OCTET_STRING *skid = X509_get0_subject_key_id(ca);
	const ASN1_OCTET_STRING *akid = X509_get0_authority_key_id(srv);
	ck_assert_ptr_nonnull(skid);
	ck_assert_ptr_nonnull(akid);
	ck_assert_int_eq(ASN1_OCTET_STRING_cmp(skid, akid), 0);
	ck_assert(X509_get_extended_key_usage(srv) & XKU_SSL_SERVER);
	ck_assert_int_eq(X509_check_ca(srv), 0);
	X509_free(ca);
	X509_free(srv);
	rm_rf();
}
END_TEST

static char *slurp(const char *name)
{
	char *data = NULL;
	ck_assert_int_eq(kb_read_file(path_of(name), &data, NULL), 0);
	return data;
}

START_TEST(second_run_keeps_everything)
{
	const char *const sans[] = {"tenant.example.test"};
	ensure(sans, 1);
	char *ca1 = slurp("ca.crt"), *srv1 = slurp("server.crt"), *adm1 = slurp("admin.crt");
	ensure(sans, 1);
	char *ca2 = slurp("ca.crt"), *srv2 = slurp("server.crt"), *adm2 = slurp("admin.crt");
	ck_assert_str_eq(ca1, ca2);
	ck_assert_str_eq(srv1, srv2);
	ck_assert_str_eq(adm1, adm2);
	free(ca1);
	free(ca2);
	free(srv1);
	free(srv2);
	free(adm1);
	free(adm2);
	rm_rf();
}
END_TEST

START_TEST(changed_sans_reissue_server_only)
{
	const char *const sans1[] = {"a.example.test"};
	const char *const sans2[] = {"b.example.test", "192.0.2.7"};
	ensure(sans1, 1);
	char *ca1 = slurp("ca.crt"), *srv1 = slurp("server.crt"), *adm1 = slurp("admin.crt");
	ensure(sans2, 2);
	char *ca2 = slurp("ca.crt"), *srv2 = slurp("server.crt"), *adm2 = slurp("admin.crt");
	ck_assert_str_eq(ca1, ca2);
	ck_assert_str_ne(srv1, srv2);
	ck_assert_str_eq(adm1, adm2);
	X509 *srv = load_cert("server.crt"), *ca = load_cert("ca.crt");
	ck_assert(has_dns(srv, "b.example.test"));
	ck_assert(has_ip(srv, "192.0.2.7"));
	ck_assert(!has_dns(srv, "a.example.test"));
	ck_assert(has_ip(srv, "127.0.0.1"));
	ck_assert_int_eq(verify_chain(ca, srv, X509_PURPOSE_SSL_SERVER), 0);
	/* Same set in another order: kept. */
	const char *const sans3[] = {"192.0.2.7", "b.example.test", "localhost"};
	ensure(sans3, 3);
	char *srv3 = slurp("server.crt");
	ck_assert_str_eq(srv2, srv3);
	X509_free(srv);
	X509_free(ca);
	free(ca1);
	free(ca2);
	free(srv1);
	free(srv2);
	free(srv3);
	free(adm1);
	free(adm2);
	rm_rf();
}
END_TEST

START_TEST(broken_files_are_replaced)
{
	ensure(NULL, 0);
	char *srv1 = slurp("server.crt");
	ck_assert_int_eq(kb_write_file(path_of("server.key"), "garbage", 7, 0600), 0);
	ensure(NULL, 0);
	char *srv2 = slurp("server.crt");
	ck_assert_str_ne(srv1, srv2);
	X509 *srv = load_cert("server.crt");
	EVP_PKEY *k = load_key("server.key");
	ck_assert_int_eq(X509_check_private_key(srv, k), 1);
	/* A new CA means new leaves. */
	ck_assert_int_eq(unlink(path_of("ca.key")), 0);
	ensure(NULL, 0);
	X509 *ca = load_cert("ca.crt"), *adm = load_cert("admin.crt");
	ck_assert_int_eq(verify_chain(ca, adm, X509_PURPOSE_SSL_CLIENT), 0);
	ck_assert_int_ne(verify_chain(ca, srv, X509_PURPOSE_SSL_SERVER), 0);
	X509_free(srv);
	X509_free(ca);
	X509_free(adm);
	EVP_PKEY_free(k);
	free(srv1);
	free(srv2);
	rm_rf();
}
END_TEST

START_TEST(issue_client)
{
	ensure(NULL, 0);
	const char *const g[] = {"dev", "system:authenticated"};
	char *cert = NULL, *key = NULL;
	ck_assert_int_eq(kb_pki_issue_client(dir, "jane", g, 2, 3600, &cert, &key), 0);
	X509 *c = cert_from_pem(cert), *ca = load_cert("ca.crt");
	ck_assert_str_eq(subject_field(c, NID_commonName, 0), "jane");
	ck_assert_str_eq(subject_field(c, NID_organizationName, 0), "dev");
	ck_assert_str_eq(subject_field(c, NID_organizationName, 1), "system:authenticated");
	ck_assert_int_eq(verify_chain(ca, c, X509_PURPOSE_SSL_CLIENT), 0);
	ck_assert(X509_get_extended_key_usage(c) & XKU_SSL_CLIENT);
	int days, secs;
	ck_assert_int_eq(
	    ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(c), X509_get0_notAfter(c)), 1);
	ck_assert_int_eq(days, 0);
	ck_assert_int_le(secs, 3600 + 600);
	BIO *b = BIO_new_mem_buf(key, -1);
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	ck_assert_ptr_nonnull(k);
	assert_p256(k);
	ck_assert_int_eq(X509_check_private_key(c, k), 1);
	/* No CA there: an error, not a crash. */
	char *c2 = NULL, *k2 = NULL;
	ck_assert_int_lt(kb_pki_issue_client("/nonexistent-kb", "x", NULL, 0, 0, &c2, &k2), 0);
	EVP_PKEY_free(k);
	X509_free(c);
	X509_free(ca);
	free(cert);
	free(key);
	rm_rf();
}
END_TEST

/* What keeps a first start cheap (its time is measured in bench/run.sh, not
 * asserted here): every key is ECDSA P-256, none RSA. */
START_TEST(keys_are_p256)
{
	static const char *const keys[] = {"ca.key", "server.key", "admin.key"};
	ensure(NULL, 0);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		FILE *f = fopen(path_of(keys[i]), "r");
		ck_assert_ptr_nonnull(f);
		EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
		fclose(f);
		ck_assert_ptr_nonnull(k);
		ck_assert_int_eq(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
		char group[64] = "";
		size_t glen = 0;
		ck_assert_int_eq(
		    EVP_PKEY_get_utf8_string_param(k, "group", group, sizeof(group), &glen), 1);
		ck_assert_str_eq(group, "prime256v1");
		EVP_PKEY_free(k);
	}
	rm_rf();
}
END_TEST

START_TEST(write_and_read_file)
{
	char *p = strdup(path_of("f.txt"));
	ck_assert_int_eq(kb_write_file(p, "hello", 5, 0640), 0);
	ck_assert_int_eq(mode_of("f.txt"), 0640);
	ck_assert_int_eq(kb_write_file(p, "bye", 3, 0600), 0);
	char *data = NULL;
	size_t len = 0;
	ck_assert_int_eq(kb_read_file(p, &data, &len), 0);
	ck_assert_uint_eq(len, 3);
	ck_assert_str_eq(data, "bye");
	ck_assert_int_eq(mode_of("f.txt"), 0600);
	free(data);
	/* unsynced: the same replacement, without fsync */
	ck_assert_int_eq(kb_write_file_unsynced(p, "again", 5, 0644), 0);
	ck_assert_int_eq(kb_read_file(p, &data, &len), 0);
	ck_assert_str_eq(data, "again");
	ck_assert_int_eq(mode_of("f.txt"), 0644);
	free(data);
	ck_assert_int_eq(kb_read_file(path_of("missing"), &data, &len), -ENOENT);
	ck_assert_int_lt(kb_write_file("/nonexistent-kb/x", "a", 1, 0600), 0);
	ck_assert_int_lt(kb_write_file_unsynced("/nonexistent-kb/x", "a", 1, 0600), 0);
	/* No temp files left behind. */
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) -eq 1", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(p);
	rm_rf();
}
END_TEST

static char *kc_field(const char *yaml, const char *key)
{
	const char *p = strstr(yaml, key);
	ck_assert_msg(p != NULL, "missing %s", key);
	p += strlen(key);
	size_t n = strcspn(p, "\n");
	return strndup(p, n);
}

START_TEST(kubeconfig_render)
{
	ensure(NULL, 0);
	char *ca = slurp("ca.crt"), *cert = slurp("admin.crt"), *key = slurp("admin.key");
	struct kb_kubeconfig kc = {.name = "team-a",
				   .server = "https://127.0.0.1:6443",
				   .ca_pem = ca,
				   .cert_pem = cert,
				   .key_pem = key};
	char *out = NULL;
	ck_assert_int_eq(kb_kubeconfig_render(&kc, &out), 0);
	ck_assert(kb_str_has_prefix(out, "apiVersion: v1\nkind: Config\n"));
	ck_assert_ptr_nonnull(strstr(out, "current-context: \"team-a\"\n"));
	ck_assert_ptr_nonnull(strstr(out, "    server: \"https://127.0.0.1:6443\"\n"));
	char *b64 = kc_field(out, "certificate-authority-data: ");
	unsigned char *dec = NULL;
	size_t dlen = 0;
	ck_assert_int_eq(kb_base64_decode(b64, strlen(b64), &dec, &dlen), 0);
	ck_assert_uint_eq(dlen, strlen(ca));
	ck_assert(memcmp(dec, ca, dlen) == 0);
	free(dec);
	free(b64);
	b64 = kc_field(out, "client-key-data: ");
	ck_assert_int_eq(kb_base64_decode(b64, strlen(b64), &dec, &dlen), 0);
	ck_assert(memcmp(dec, key, dlen) == 0);
	free(dec);
	free(b64);
	ck_assert_ptr_null(strstr(out, "token"));
	free(out);

	/* Tokens and names that need quoting. */
	struct kb_kubeconfig kt = {.name = "we\"ird\\name: x",
				   .server = "https://[::1]:1",
				   .ca_pem = ca,
				   .token = "abc.def",
				   .user = "bot"};
	ck_assert_int_eq(kb_kubeconfig_render(&kt, &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "  name: \"we\\\"ird\\\\name: x\"\n"));
	ck_assert_ptr_nonnull(strstr(out, "- name: \"bot\"\n  user:\n    token: \"abc.def\"\n"));
	ck_assert_ptr_nonnull(strstr(out, "    user: \"bot\"\n"));
	ck_assert_ptr_null(strstr(out, "client-key-data"));
	free(out);

	char *p = strdup(path_of("kubeconfig"));
	ck_assert_int_eq(kb_kubeconfig_write(p, &kc), 0);
	ck_assert_int_eq(mode_of("kubeconfig"), 0600);
	free(p);
	struct kb_kubeconfig bad = {.name = "x"};
	ck_assert_int_eq(kb_kubeconfig_render(&bad, &out), -EINVAL);
	free(ca);
	free(cert);
	free(key);
	rm_rf();
}
END_TEST

/* The stamp's NOT_AFTER, or 0. */
static long long stamp_not_after(void)
{
	char *st = slurp(".pki-checked"), hex[65];
	long long na = 0;
	if (sscanf(st, "v1 %64s %lld", hex, &na) != 2)
		na = 0;
	free(st);
	return na;
}

/* A check that passed leaves a stamp; a start whose files and request
 * match it skips the check; renewal due, a changed file or other SANs
 * take the full check again, which does what it always did. */
START_TEST(stamp_skips_only_an_unchanged_check)
{
	ensure(NULL, 0);
	long long na = stamp_not_after();
	X509 *adm = load_cert("admin.crt"), *s1 = load_cert("server.crt");
	struct tm ta, ts;
	ck_assert_int_eq(ASN1_TIME_to_tm(X509_get0_notAfter(adm), &ta), 1);
	ck_assert_int_eq(ASN1_TIME_to_tm(X509_get0_notAfter(s1), &ts), 1);
	long long a = (long long)timegm(&ta), b = (long long)timegm(&ts);
	ck_assert_int_eq(na, a < b ? a : b); /* the earliest: the leaves' year */
	X509_free(adm);
	X509_free(s1);
	/* renewal due by the stamp: the full check runs and stamps the truth */
	char *st = slurp(".pki-checked");
	st[strlen(st) - 1] = '\0';
	*strrchr(st, ' ') = '\0';
	char line[160];
	int n = snprintf(line, sizeof(line), "%s %lld\n", st, (long long)time(NULL) + 60);
	ck_assert_int_eq(kb_write_file(path_of(".pki-checked"), line, (size_t)n, 0644), 0);
	free(st);
	ensure(NULL, 0);
	ck_assert_int_eq(stamp_not_after(), na);
	/* another CA's admin pair under an unchanged stamp: re-issued by ours */
	char other[80];
	snprintf(other, sizeof(other), "%s/other", dir);
	ck_assert_int_eq(kb_pki_ensure(other, NULL, 0, "kubicle-admin", NULL, 0), 0);
	char *oc = slurp("other/admin.crt"), *ok = slurp("other/admin.key");
	ck_assert_int_eq(kb_write_file(path_of("admin.crt"), oc, strlen(oc), 0644), 0);
	ck_assert_int_eq(kb_write_file(path_of("admin.key"), ok, strlen(ok), 0600), 0);
	ensure(NULL, 0);
	char *now = slurp("admin.crt");
	ck_assert_str_ne(now, oc);
	X509 *ca = load_cert("ca.crt");
	adm = load_cert("admin.crt");
	ck_assert_int_eq(verify_chain(ca, adm, X509_PURPOSE_SSL_CLIENT), 0);
	/* other SANs: a new serving certificate despite the stamp */
	char *srv1 = slurp("server.crt");
	const char *const sans[] = {"new.example.test"};
	ensure(sans, 1);
	X509 *srv = load_cert("server.crt");
	ck_assert(has_dns(srv, "new.example.test"));
	X509_free(srv);
	X509_free(adm);
	X509_free(ca);
	free(srv1);
	free(now);
	free(oc);
	free(ok);
	rm_rf();
}
END_TEST

/* Appends file `from` to file `to` (a chain, a bundle). */
static void append_file(const char *to, const char *from)
{
	char *a = slurp(to), *b = slurp(from);
	size_t na = strlen(a), nb = strlen(b);
	char *both = malloc(na + nb + 1);
	memcpy(both, a, na);
	memcpy(both + na, b, nb + 1);
	ck_assert_int_eq(kb_write_file(path_of(to), both, na + nb, 0644), 0);
	free(a);
	free(b);
	free(both);
}

/* The subject CNs of the context's acceptable client CAs, joined by ','. */
static void client_ca_names(SSL_CTX *ctx, char *out, size_t len)
{
	STACK_OF(X509_NAME) *names = SSL_CTX_get_client_CA_list(ctx);
	out[0] = '\0';
	for (int i = 0; i < sk_X509_NAME_num(names); i++) {
		char cn[64] = "";
		X509_NAME_get_text_by_NID(sk_X509_NAME_value(names, i), NID_commonName, cn,
					  sizeof(cn));
		snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", cn);
	}
}

/* kb_pki_ensure_keep keeps what kb_pki_ensure writes: the TLS context built
 * from it serves server.crt with server.key and asks for certificates of
 * ca.crt, as kb_tls_server_ctx builds it from the files; the signer is the
 * CA. */
START_TEST(keep_serves_the_files)
{
	const char *const masters[] = {"system:masters"};
	kb_pki_t *pki = NULL;
	ck_assert_int_eq(kb_pki_ensure_keep(dir, NULL, 0, "admin", masters, 1, &pki), 0);
	SSL_CTX *mem = NULL, *files = NULL;
	ck_assert_int_eq(kb_pki_server_ctx(pki, &mem), 0);
	char crt[128], key[128], cap[128];
	snprintf(crt, sizeof(crt), "%s", path_of("server.crt"));
	snprintf(key, sizeof(key), "%s", path_of("server.key"));
	snprintf(cap, sizeof(cap), "%s", path_of("ca.crt"));
	ck_assert_int_eq(kb_tls_server_ctx(crt, key, cap, &files), 0);
	X509 *srv = load_cert("server.crt"), *ca = load_cert("ca.crt");
	ck_assert_int_eq(X509_cmp(SSL_CTX_get0_certificate(mem), srv), 0);
	ck_assert_int_eq(X509_cmp(SSL_CTX_get0_certificate(files), srv), 0);
	char a[256], b[256];
	client_ca_names(mem, a, sizeof(a));
	client_ca_names(files, b, sizeof(b));
	ck_assert_str_eq(a, "kubicle-ca");
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(SSL_CTX_get_verify_mode(mem), SSL_CTX_get_verify_mode(files));
	/* both serve the chain OpenSSL's auto chain sent, built once: the CA */
	SSL_CTX *both[] = {mem, files};
	for (int i = 0; i < 2; i++) {
		STACK_OF(X509) *chain = NULL;
		ck_assert_int_eq(SSL_CTX_get0_chain_certs(both[i], &chain), 1);
		ck_assert_int_eq(sk_X509_num(chain), 1);
		ck_assert_int_eq(X509_cmp(sk_X509_value(chain, 0), ca), 0);
	}
	kb_pki_ca_t *signer = NULL;
	ck_assert_int_eq(kb_pki_signer(pki, &signer), 0);
	ASN1_TIME *na = ASN1_TIME_set(NULL, kb_pki_ca_not_after(signer));
	ck_assert_int_eq(ASN1_TIME_compare(na, X509_get0_notAfter(ca)), 0);
	ASN1_TIME_free(na);
	kb_pki_ca_free(signer);
	kb_pki_free(pki);
	/* a second start keeps the same files and serves the same certificate */
	ck_assert_int_eq(kb_pki_ensure_keep(dir, NULL, 0, "admin", masters, 1, &pki), 0);
	SSL_CTX *again = NULL;
	ck_assert_int_eq(kb_pki_server_ctx(pki, &again), 0);
	ck_assert_int_eq(X509_cmp(SSL_CTX_get0_certificate(again), srv), 0);
	kb_pki_free(pki);
	SSL_CTX_free(again);
	SSL_CTX_free(mem);
	SSL_CTX_free(files);
	X509_free(srv);
	X509_free(ca);
	rm_rf();
}
END_TEST

/* The job on its thread: the CA it tells is ca.crt's text byte for byte
 * (first start: a new CA; again: the stamp's path; a torn server.key: the
 * full check, which keeps the CA), the TLS context serves server.crt, and
 * a PKI folder that cannot be made fails both waits as the ensure. */
static void job_run(const char *d, char **ca_told, X509 **served)
{
	const char *const masters[] = {"system:masters"};
	kb_pki_job_t *job = NULL;
	const char *ca = NULL;
	SSL_CTX *tls = NULL;
	kb_pki_t *pki = NULL;
	bool pki_failed = true;
	char *later = (char *)"unset";
	ck_assert_int_eq(kb_pki_job_start(d, NULL, 0, "admin", masters, 1, &job), 0);
	ck_assert_int_eq(kb_pki_job_ca(job, &ca), 0);
	*ca_told = strdup(ca);
	ck_assert_int_eq(kb_pki_job_tls(job, &tls), 0);
	ck_assert_int_eq(kb_pki_job_join(job, &pki, &pki_failed, &later), 0);
	ck_assert(!pki_failed);
	ck_assert_ptr_null(later);
	ck_assert_ptr_nonnull(pki);
	*served = X509_dup(SSL_CTX_get0_certificate(tls));
	kb_pki_free(pki);
	SSL_CTX_free(tls);
}

START_TEST(job_tells_the_ca_then_serves)
{
	char *told = NULL, *file = NULL;
	X509 *served = NULL, *srv = NULL;
	for (int round = 0; round < 3; round++) {
		if (round == 2) /* torn: the full check re-issues the serving pair */
			ck_assert_int_eq(kb_write_file(path_of("server.key"), "x", 1, 0600), 0);
		job_run(dir, &told, &served);
		ck_assert_int_eq(kb_read_file(path_of("ca.crt"), &file, NULL), 0);
		ck_assert_str_eq(told, file);
		srv = load_cert("server.crt");
		ck_assert_int_eq(X509_cmp(served, srv), 0);
		free(told);
		free(file);
		X509_free(served);
		X509_free(srv);
	}
	/* a folder under a file: neither wait hangs, both give the error */
	char bad[160];
	snprintf(bad, sizeof(bad), "%s/sub", path_of("ca.crt"));
	const char *const masters[] = {"system:masters"};
	kb_pki_job_t *job = NULL;
	const char *ca = NULL;
	SSL_CTX *tls = NULL;
	kb_pki_t *pki = NULL;
	bool pki_failed = false;
	ck_assert_int_eq(kb_pki_job_start(bad, NULL, 0, "admin", masters, 1, &job), 0);
	ck_assert_int_lt(kb_pki_job_ca(job, &ca), 0);
	ck_assert_int_lt(kb_pki_job_tls(job, &tls), 0);
	ck_assert_ptr_null(tls);
	ck_assert_int_lt(kb_pki_job_join(job, &pki, &pki_failed, NULL), 0);
	ck_assert(pki_failed);
	ck_assert_ptr_null(pki);
	rm_rf();
}
END_TEST

/* A server.crt with a chain and a ca.crt with a bundle (a --pki-dir filled
 * by the platform): the context has them all, as from the files. */
START_TEST(keep_with_chain_and_bundle)
{
	kb_pki_t *pki = NULL;
	ck_assert_int_eq(kb_pki_ensure_keep(dir, NULL, 0, "admin", NULL, 0, &pki), 0);
	kb_pki_free(pki);
	char other[80];
	snprintf(other, sizeof(other), "%s/other", dir);
	ck_assert_int_eq(kb_pki_ensure(other, NULL, 0, "admin", NULL, 0), 0);
	append_file("server.crt", "ca.crt");
	append_file("ca.crt", "other/ca.crt");
	ck_assert_int_eq(kb_pki_ensure_keep(dir, NULL, 0, "admin", NULL, 0, &pki), 0);
	SSL_CTX *ctx = NULL;
	ck_assert_int_eq(kb_pki_server_ctx(pki, &ctx), 0);
	STACK_OF(X509) *chain = NULL;
	ck_assert_int_eq(SSL_CTX_get0_chain_certs(ctx, &chain), 1);
	ck_assert_int_eq(sk_X509_num(chain), 1);
	char names[256];
	client_ca_names(ctx, names, sizeof(names));
	ck_assert_str_eq(names, "kubicle-ca,kubicle-ca");
	SSL_CTX_free(ctx);
	kb_pki_free(pki);
	rm_rf();
}
END_TEST

/* kb_pki_new_key's PEM is the key, as PKCS#8. */
START_TEST(new_key_pem)
{
	EVP_PKEY *k = NULL;
	char *pem = NULL;
	ck_assert_int_eq(kb_pki_new_key(&k, &pem), 0);
	assert_p256(k);
	ck_assert_ptr_nonnull(strstr(pem, "-----BEGIN PRIVATE KEY-----"));
	EVP_PKEY *back = kb_pki_key_from_pem(pem, strlen(pem));
	ck_assert_ptr_nonnull(back);
	ck_assert_int_eq(EVP_PKEY_eq(k, back), 1);
	/* read back by its layout (p256_from_pkcs8): the same scalar, and what
	 * it signs verifies under the key made */
	BIGNUM *d1 = NULL, *d2 = NULL;
	ck_assert_int_eq(EVP_PKEY_get_bn_param(k, "priv", &d1), 1);
	ck_assert_int_eq(EVP_PKEY_get_bn_param(back, "priv", &d2), 1);
	ck_assert_int_eq(BN_cmp(d1, d2), 0);
	BN_clear_free(d1);
	BN_clear_free(d2);
	unsigned char sig[128];
	size_t siglen = sizeof(sig);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	ck_assert_int_eq(EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, back), 1);
	ck_assert_int_eq(EVP_DigestSign(md, sig, &siglen, (const unsigned char *)"x", 1), 1);
	EVP_MD_CTX_free(md);
	md = EVP_MD_CTX_new();
	ck_assert_int_eq(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k), 1);
	ck_assert_int_eq(EVP_DigestVerify(md, sig, siglen, (const unsigned char *)"x", 1), 1);
	EVP_MD_CTX_free(md);
	BIO *b = BIO_new(BIO_s_mem());
	ck_assert_int_eq(PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL), 1);
	char *data = NULL;
	long n = BIO_get_mem_data(b, &data);
	ck_assert_int_eq((long)strlen(pem), n);
	ck_assert_int_eq(memcmp(pem, data, (size_t)n), 0);
	BIO_free(b);
	EVP_PKEY_free(back);
	EVP_PKEY_free(k);
	free(pem);
	rm_rf();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lib/pki");
	TCase *tc = tcase_create("pki");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, ensure_creates_valid_pki);
	tcase_add_test(tc, client_ca_has_no_server);
	tcase_add_test(tc, ca_extensions);
	tcase_add_test(tc, second_run_keeps_everything);
	tcase_add_test(tc, changed_sans_reissue_server_only);
	tcase_add_test(tc, broken_files_are_replaced);
	tcase_add_test(tc, issue_client);
	tcase_add_test(tc, keys_are_p256);
	tcase_add_test(tc, write_and_read_file);
	tcase_add_test(tc, kubeconfig_render);
	tcase_add_test(tc, keep_serves_the_files);
	tcase_add_test(tc, keep_with_chain_and_bundle);
	tcase_add_test(tc, new_key_pem);
	tcase_add_test(tc, stamp_skips_only_an_unchanged_check);
	tcase_add_test(tc, job_tells_the_ca_then_serves);
	tcase_add_test(tc, client_ca_task);
	suite_add_tcase(s, tc);
	return s;
}
