/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for controllers/csr: the kube-apiserver-client signer's checks
 * (usages, duration, validity window, usage mapping), a certificate signed
 * with a real CA (lib/pki_csr), and the csrcleaner's decision.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "proxy/controllers/controllers.h"
#include "lib/pki.h"
#include "lib/util.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

START_TEST(client_usages)
{
	char b[256];
	json_t *u = json_pack("[s]", "client auth");
	ck_assert_ptr_null(ctrl_csr_client_usages(u, b, sizeof(b)));
	json_decref(u);
	u = json_pack("[s,s,s]", "digital signature", "key encipherment", "client auth");
	ck_assert_ptr_null(ctrl_csr_client_usages(u, b, sizeof(b)));
	json_decref(u);
	u = json_pack("[s,s]", "client auth", "server auth");
	ck_assert_str_eq(ctrl_csr_client_usages(u, b, sizeof(b)),
			 "invalid usage for client certificate: server auth");
	json_decref(u);
	u = json_pack("[s]", "digital signature");
	ck_assert_str_eq(ctrl_csr_client_usages(u, b, sizeof(b)),
			 "missing required usage for client certificate: client auth");
	json_decref(u);
}
END_TEST

START_TEST(durations)
{
	ck_assert_int_eq(ctrl_csr_duration(NULL), 365L * 86400);
	json_t *v = json_integer(86400);
	ck_assert_int_eq(ctrl_csr_duration(v), 86400);
	json_integer_set(v, 10L * 365 * 86400);
	ck_assert_int_eq(ctrl_csr_duration(v), 365L * 86400);
	json_integer_set(v, 100);
	ck_assert_int_eq(ctrl_csr_duration(v), 600);
	json_decref(v);
}
END_TEST

START_TEST(validity)
{
	time_t nb, na, now = 1000000000, ca_end = now + 10L * 365 * 86400;
	ck_assert_int_eq(ctrl_csr_validity(now, 3600, ca_end, &nb, &na), 0);
	ck_assert_int_eq(nb, now - 300);
	ck_assert_int_eq(na, now + 3600); /* short: the end is not backdated */
	ck_assert_int_eq(ctrl_csr_validity(now, 86400, ca_end, &nb, &na), 0);
	ck_assert_int_eq(na, now + 86400 - 300);
	ck_assert_int_eq(ctrl_csr_validity(now, 86400, now + 60, &nb, &na), 0);
	ck_assert_int_eq(na, now + 60);
	ck_assert_int_eq(ctrl_csr_validity(now, 86400, now, &nb, &na), -EKEYEXPIRED);
}
END_TEST

START_TEST(usage_names)
{
	char ku[128], eku[128];
	json_t *u = json_pack("[s,s,s,s]", "client auth", "key encipherment", "server auth",
			      "digital signature");
	ctrl_csr_usages(u, ku, sizeof(ku), eku, sizeof(eku));
	ck_assert_str_eq(ku, "digitalSignature,keyEncipherment");
	ck_assert_str_eq(eku, "serverAuth,clientAuth");
	json_decref(u);
	u = json_pack("[s]", "client auth");
	ctrl_csr_usages(u, ku, sizeof(ku), eku, sizeof(eku));
	ck_assert_str_eq(ku, "");
	ck_assert_str_eq(eku, "clientAuth");
	json_decref(u);
}
END_TEST

/* A PEM request CN=myuser O=dev O=qa (subject given CN first). */
static char *request_pem(size_t *len)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509_REQ *req = X509_REQ_new();
	X509_NAME *n = X509_REQ_get_subject_name(req);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)"myuser", -1, -1,
				   0);
	X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)"dev", -1, -1, 0);
	X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)"qa", -1, -1, 0);
	X509_REQ_set_pubkey(req, k);
	X509_REQ_sign(req, k, EVP_sha256());
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_X509_REQ(b, req);
	char *data;
	*len = (size_t)BIO_get_mem_data(b, &data);
	char *out = strndup(data, *len);
	BIO_free(b);
	X509_REQ_free(req);
	EVP_PKEY_free(k);
	return out;
}

static kb_pki_ca_t *test_ca(char *dir, size_t len)
{
	snprintf(dir, len, "/tmp/kb-test-csr.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	const char *g[] = {"system:masters"};
	ck_assert_int_eq(kb_pki_ensure(dir, NULL, 0, "admin", g, 1), 0);
	kb_pki_ca_t *ca = NULL;
	ck_assert_int_eq(kb_pki_ca_load(dir, &ca), 0);
	return ca;
}

static X509 *sign_one(kb_pki_ca_t *ca, const char *ku, time_t nb, time_t na)
{
	size_t n;
	char *req = request_pem(&n);
	struct kb_pki_sign_opts o = {
	    .key_usage = ku, .ext_usage = "clientAuth", .not_before = nb, .not_after = na};
	char *pem = NULL;
	ck_assert_int_eq(kb_pki_ca_sign(ca, req, n, &o, &pem), 0);
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *c = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	free(pem);
	free(req);
	ck_assert_ptr_nonnull(c);
	return c;
}

START_TEST(signing)
{
	char dir[64], path[128], buf[256];
	kb_pki_ca_t *ca = test_ca(dir, sizeof(dir));
	time_t now = time(NULL);
	X509 *c = sign_one(ca, "", now - 300, now + 3600);
	/* Go's order: O before CN */
	BIO *b = BIO_new(BIO_s_mem());
	X509_NAME_print_ex(b, X509_get_subject_name(c), 0, XN_FLAG_ONELINE);
	char *s;
	long l = BIO_get_mem_data(b, &s);
	snprintf(buf, sizeof(buf), "%.*s", (int)l, s);
	BIO_free(b);
	/* one RDN, its values in DER order (a SET OF), as Go writes it too */
	ck_assert_str_eq(buf, "O = qa + O = dev, CN = myuser");
	ck_assert_int_eq(X509_get_ext_by_NID(c, NID_key_usage, -1), -1);
	ck_assert_int_eq(X509_get_extended_key_usage(c), XKU_SSL_CLIENT);
	ck_assert_int_eq(X509_check_ca(c), 0);
	ck_assert_int_eq(ASN1_TIME_cmp_time_t(X509_get0_notBefore(c), now - 300), 0);
	ck_assert_int_eq(ASN1_TIME_cmp_time_t(X509_get0_notAfter(c), now + 3600), 0);
	/* verified by the CA's key */
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	BIO *cb = BIO_new_file(path, "r");
	X509 *cac = PEM_read_bio_X509(cb, NULL, NULL, NULL);
	BIO_free(cb);
	ck_assert_int_eq(X509_verify(c, X509_get0_pubkey(cac)), 1);
	X509_free(c);
	c = sign_one(ca, "digitalSignature,keyEncipherment", now - 300, now + 3600);
	ck_assert_int_ge(X509_get_ext_by_NID(c, NID_key_usage, -1), 0);
	ck_assert_int_eq(X509_get_key_usage(c), KU_DIGITAL_SIGNATURE | KU_KEY_ENCIPHERMENT);
	X509_free(c);
	X509_free(cac);
	kb_pki_ca_free(ca);
	const char *files[] = {"ca.crt",     "ca.key",    "server.crt",
			       "server.key", "admin.crt", "admin.key"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

static json_t *csr_with(const char *created, json_t *conds, const char *cert_b64)
{
	json_t *o = json_pack("{s:{s:s,s:s},s:{s:s}}", "metadata", "name", "x", "creationTimestamp",
			      created, "spec", "signerName", "example.com/x");
	json_t *st = json_object();
	if (conds)
		json_object_set_new(st, "conditions", conds);
	if (cert_b64)
		json_object_set_new(st, "certificate", json_string(cert_b64));
	json_object_set_new(o, "status", st);
	return o;
}

static json_t *cond(const char *type, const char *at)
{
	return json_pack("[{s:s,s:s,s:s}]", "type", type, "status", "True", "lastUpdateTime", at);
}

START_TEST(cleaner)
{
	time_t t0 = 1800000000, next;
	char ts[40], later[40];
	kb_time_rfc3339(t0, ts, sizeof(ts));
	/* pending: 24 hours from creation */
	json_t *o = csr_with(ts, NULL, NULL);
	ck_assert(!ctrl_csr_gc_due(o, t0 + 86400, &next));
	ck_assert_int_eq(next, t0 + 86401);
	ck_assert(ctrl_csr_gc_due(o, t0 + 86401, &next));
	json_decref(o);
	/* denied and failed: one hour after the condition's update */
	kb_time_rfc3339(t0 + 600, later, sizeof(later));
	o = csr_with(ts, cond("Denied", later), NULL);
	ck_assert(!ctrl_csr_gc_due(o, t0 + 3600, &next));
	ck_assert_int_eq(next, t0 + 600 + 3601);
	ck_assert(ctrl_csr_gc_due(o, t0 + 600 + 3601, &next));
	json_decref(o);
	o = csr_with(ts, cond("Failed", later), NULL);
	ck_assert(ctrl_csr_gc_due(o, t0 + 600 + 3601, &next));
	json_decref(o);
	/* approved without a certificate (an outside signer's): kept */
	o = csr_with(ts, cond("Approved", later), NULL);
	ck_assert(!ctrl_csr_gc_due(o, t0 + 30L * 86400, &next));
	ck_assert_int_eq(next, 0);
	json_decref(o);
	/* approved and issued: one hour, or when the certificate expires */
	char dir[64];
	kb_pki_ca_t *ca = test_ca(dir, sizeof(dir));
	time_t now = time(NULL);
	X509 *c = sign_one(ca, "", now - 300, now + 1800);
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_X509(b, c);
	char *data;
	long len = BIO_get_mem_data(b, &data);
	char *b64 = kb_base64_encode(data, (size_t)len);
	BIO_free(b);
	X509_free(c);
	kb_time_rfc3339(now, later, sizeof(later));
	o = csr_with(later, cond("Approved", later), b64);
	ck_assert(!ctrl_csr_gc_due(o, now + 1800, &next));
	ck_assert_int_eq(next, now + 1801); /* the certificate expires first */
	ck_assert(ctrl_csr_gc_due(o, now + 1801, &next));
	json_decref(o);
	o = csr_with(later, cond("Approved", later), b64);
	json_object_set_new(json_object_get(o, "status"), "certificate", json_string("eA=="));
	ck_assert(!ctrl_csr_gc_due(o, now + 3600, &next));
	ck_assert(ctrl_csr_gc_due(o, now + 3601, &next));
	json_decref(o);
	free(b64);
	kb_pki_ca_free(ca);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("controllers/csr");
	TCase *tc = tcase_create("signer");
	tcase_add_test(tc, client_usages);
	tcase_add_test(tc, durations);
	tcase_add_test(tc, validity);
	tcase_add_test(tc, usage_names);
	tcase_add_test(tc, signing);
	suite_add_tcase(s, tc);
	tc = tcase_create("cleaner");
	tcase_add_test(tc, cleaner);
	suite_add_tcase(s, tc);
	return s;
}
