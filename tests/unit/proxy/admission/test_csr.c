/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/csr: CertificateSigningRequest validation with kube's
 * fields and messages (request PEM and self-signature, usages, signerName,
 * expirationSeconds, conditions, update rules of the main resource, /status
 * and /approval) and the strategy (requester identity, kept spec and
 * status, condition timestamps).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/json.h"
#include "lib/util.h"
#include "proxy/admission/csr.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

/* A base64 PEM request for CN=cn, O=orgs...; a broken signature when bad. */
static char *make_request(const char *cn, const char *org, bool bad)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509_REQ *req = X509_REQ_new();
	X509_NAME *n = X509_REQ_get_subject_name(req);
	if (org)
		X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8, (const unsigned char *)org, -1,
					   -1, 0);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
	X509_REQ_set_pubkey(req, k);
	X509_REQ_sign(req, k, EVP_sha256());
	if (bad) { /* another key's signature */
		EVP_PKEY *other = EVP_EC_gen("P-256");
		X509_REQ_sign(req, other, EVP_sha256());
		EVP_PKEY_free(other);
	}
	BIO *b = BIO_new(BIO_s_mem());
	PEM_write_bio_X509_REQ(b, req);
	char *data;
	long len = BIO_get_mem_data(b, &data);
	char *out = kb_base64_encode(data, (size_t)len);
	BIO_free(b);
	X509_REQ_free(req);
	EVP_PKEY_free(k);
	return out;
}

static json_t *make_csr(const char *signer)
{
	char *req = make_request("alice", "dev", false);
	json_t *o =
	    json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s,s:[s]}}", "apiVersion", "certificates.k8s.io/v1",
		      "kind", "CertificateSigningRequest", "metadata", "name", "alice", "spec",
		      "request", req, "signerName", signer, "usages", "client auth");
	free(req);
	return o;
}

/* The causes of csr_validate as "field: message" lines. */
static char *causes_of(const json_t *obj, const json_t *old, const char *sub)
{
	json_t *c = json_array();
	csr_validate(obj, old, sub, c);
	struct kb_buf b = {0};
	kb_buf_puts(&b, "");
	size_t i;
	json_t *x;
	json_array_foreach (c, i, x)
		kb_buf_printf(&b, "%s: %s\n", json_string_value(json_object_get(x, "field")),
			      json_string_value(json_object_get(x, "message")));
	json_decref(c);
	return b.data;
}

#define ASSERT_CAUSES(obj, old, sub, want)                                            \
	do {                                                                          \
		char *got_ = causes_of(obj, old, sub);                                \
		ck_assert_msg(strstr(got_, want), "wanted '%s' in '%s'", want, got_); \
		free(got_);                                                           \
	} while (0)
#define ASSERT_VALID(obj, old, sub)                                                \
	do {                                                                       \
		char *got_ = causes_of(obj, old, sub);                             \
		ck_assert_msg(got_[0] == '\0', "wanted no cause, got '%s'", got_); \
		free(got_);                                                        \
	} while (0)

START_TEST(valid_request)
{
	json_t *o = make_csr("kubernetes.io/kube-apiserver-client");
	ASSERT_VALID(o, NULL, NULL);
	json_object_set_new(json_object_get(o, "spec"), "expirationSeconds", json_integer(600));
	ASSERT_VALID(o, NULL, NULL);
	json_decref(o);
}
END_TEST

START_TEST(request_pem)
{
	json_t *o = make_csr("example.com/x");
	json_t *spec = json_object_get(o, "spec");
	char *cert =
	    kb_base64_encode("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", 58);
	json_object_set_new(spec, "request", json_string(cert));
	free(cert);
	ASSERT_CAUSES(o, NULL, NULL,
		      "spec.request: Invalid value: []byte{0x2d, 0x2d, 0x2d, 0x2d, 0x2d, 0x42");
	ASSERT_CAUSES(o, NULL, NULL, "}: PEM block type must be CERTIFICATE REQUEST\n");
	json_object_del(spec, "request");
	ASSERT_CAUSES(o, NULL, NULL,
		      "spec.request: Invalid value: []byte(nil): PEM block type must be "
		      "CERTIFICATE REQUEST");
	char *bad = make_request("alice", NULL, true);
	json_object_set_new(spec, "request", json_string(bad));
	free(bad);
	ASSERT_CAUSES(o, NULL, NULL, ": x509: ECDSA verification failure\n");
	json_decref(o);
}
END_TEST

START_TEST(usages)
{
	json_t *o = make_csr("example.com/x");
	json_t *spec = json_object_get(o, "spec");
	json_object_set_new(spec, "usages", json_array());
	ASSERT_CAUSES(o, NULL, NULL, "spec.usages: Required value\n");
	json_object_set_new(spec, "usages",
			    json_pack("[s,s,s]", "client auth", "flying", "client auth"));
	ASSERT_CAUSES(o, NULL, NULL,
		      "spec.usages[1]: Unsupported value: \"flying\": supported values: \"any\", "
		      "\"cert sign\", \"client auth\", \"code signing\", \"content commitment\"");
	ASSERT_CAUSES(o, NULL, NULL,
		      "\"ocsp signing\", \"s/mime\", \"server auth\", \"signing\", "
		      "\"timestamping\"\n");
	ASSERT_CAUSES(o, NULL, NULL, "spec.usages[2]: Duplicate value: \"client auth\"\n");
	/* an update tolerates what the stored object already had */
	json_t *old = json_deep_copy(o);
	char *got = causes_of(o, old, NULL);
	ck_assert_ptr_null(strstr(got, "spec.usages"));
	free(got);
	json_decref(old);
	json_decref(o);
}
END_TEST

START_TEST(signer_names)
{
	static const struct {
		const char *name, *want;
	} cases[] = {
	    {"", "spec.signerName: Required value\n"},
	    {"foo", "spec.signerName: Invalid value: \"foo\": must be a fully qualified domain and "
		    "path of the form 'example.com/signer-name'\n"},
	    {"a/b/c", "must be a fully qualified domain and path"},
	    {"example/x", "spec.signerName: Invalid value: \"example\": should be a domain with at "
			  "least two segments separated by dots\n"},
	    {"Example.com/x", "spec.signerName: Invalid value: \"Example.com\": validating label "
			      "\"Example\": a lowercase RFC 1123 label"},
	    {"example.com/X_1", "spec.signerName: Invalid value: \"X_1\": validating label "
				"\"X_1\": a lowercase RFC 1123 subdomain"},
	    {"kubernetes.io/legacy-unknown",
	     "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy "
	     "signerName is not allowed via this API version\n"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *o = make_csr(cases[i].name);
		if (!*cases[i].name)
			json_object_del(json_object_get(o, "spec"), "signerName");
		ASSERT_CAUSES(o, NULL, NULL, cases[i].want);
		json_decref(o);
	}
	json_t *o = make_csr("example.com/my-signer.v1");
	ASSERT_VALID(o, NULL, NULL);
	json_decref(o);
	/* an existing legacy request may be updated */
	o = make_csr("kubernetes.io/legacy-unknown");
	char *got = causes_of(o, o, NULL);
	ck_assert_str_eq(got, "");
	free(got);
	json_decref(o);
}
END_TEST

START_TEST(expiration)
{
	json_t *o = make_csr("example.com/x");
	json_object_set_new(json_object_get(o, "spec"), "expirationSeconds", json_integer(599));
	ASSERT_CAUSES(o, NULL, NULL,
		      "spec.expirationSeconds: Invalid value: 599: may not specify a duration less "
		      "than 600 seconds (10 minutes)\n");
	json_decref(o);
}
END_TEST

static void set_conditions(json_t *o, json_t *conds)
{
	json_object_set_new(o, "status", json_pack("{s:o}", "conditions", conds));
}

START_TEST(conditions)
{
	json_t *o = make_csr("example.com/x");
	set_conditions(o, json_pack("[{s:s,s:s},{s:s,s:s}]", "type", "Approved", "status", "True",
				    "type", "Denied", "status", "True"));
	ASSERT_CAUSES(o, NULL, NULL,
		      "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied "
		      "conditions are mutually exclusive\n");
	set_conditions(o,
		       json_pack("[{s:s,s:s},{s:s},{s:s,s:s}]", "type", "Failed", "status", "False",
				 "type", "Custom", "type", "Custom", "status", "Maybe"));
	ASSERT_CAUSES(o, NULL, NULL,
		      "status.conditions[0].status: Unsupported value: \"False\": supported "
		      "values: \"True\"\n");
	ASSERT_CAUSES(o, NULL, NULL, "status.conditions[1].status: Required value\n");
	ASSERT_CAUSES(o, NULL, NULL,
		      "status.conditions[2].status: Unsupported value: \"Maybe\": supported "
		      "values: \"False\", \"True\", \"Unknown\"\n");
	ASSERT_CAUSES(o, NULL, NULL, "status.conditions[2].type: Duplicate value: \"Custom\"\n");
	json_decref(o);
}
END_TEST

START_TEST(update_rules)
{
	json_t *old = make_csr("example.com/x");
	set_conditions(old, json_pack("[{s:s,s:s,s:s}]", "type", "Approved", "status", "True",
				      "lastUpdateTime", "2026-01-01T00:00:00Z"));
	json_t *o = json_deep_copy(old);
	/* removing Approved, through any path */
	set_conditions(o, json_array());
	ASSERT_CAUSES(o, old, "approval",
		      "status.conditions: Forbidden: updates may not remove a condition of type "
		      "\"Approved\"\n");
	/* adding Denied: only through /approval */
	set_conditions(o, json_pack("[{s:s,s:s,s:s},{s:s,s:s}]", "type", "Approved", "status",
				    "True", "lastUpdateTime", "2026-01-01T00:00:00Z", "type",
				    "Failed", "status", "True"));
	ASSERT_VALID(o, old, "status");
	json_array_append_new(kb_json_path(o, "status.conditions"),
			      json_pack("{s:s,s:s}", "type", "Denied", "status", "True"));
	ASSERT_CAUSES(o, old, "status",
		      "status.conditions: Forbidden: updates may not add a condition of type "
		      "\"Denied\"\n");
	/* a certificate: only through /status, and only once */
	json_decref(o);
	o = json_deep_copy(old);
	char *cert = kb_base64_encode("x", 1);
	json_object_set_new(json_object_get(o, "status"), "certificate", json_string(cert));
	free(cert);
	ASSERT_CAUSES(o, old, NULL,
		      "status.certificate: Forbidden: updates may not set certificate content\n");
	ASSERT_CAUSES(o, old, "status",
		      "status.certificate: Invalid value: \"<certificate data>\": must contain at "
		      "least one CERTIFICATE PEM block\n");
	json_t *older = json_deep_copy(o);
	json_object_set_new(json_object_get(older, "status"), "certificate", json_string("eQ=="));
	ASSERT_CAUSES(o, older, "status",
		      "status.certificate: Forbidden: updates may not modify existing certificate "
		      "content\n");
	json_decref(older);
	json_decref(o);
	json_decref(old);
}
END_TEST

START_TEST(prepare_create)
{
	json_t *o = make_csr("example.com/x");
	json_t *spec = json_object_get(o, "spec");
	json_object_set_new(spec, "username", json_string("root"));
	json_object_set_new(spec, "extra", json_pack("{s:[s]}", "k", "v"));
	set_conditions(o, json_pack("[{s:s,s:s}]", "type", "Approved", "status", "True"));
	const char *groups[] = {"dev", "system:authenticated"};
	struct csr_user who = {.name = "alice", .uid = NULL, .groups = groups, .ngroups = 2};
	csr_prepare(o, NULL, NULL, &who, "2026-01-01T00:00:00Z");
	ck_assert_str_eq(json_string_value(json_object_get(spec, "username")), "alice");
	ck_assert_ptr_null(json_object_get(spec, "uid"));
	ck_assert_ptr_null(json_object_get(spec, "extra"));
	ck_assert_int_eq(json_array_size(json_object_get(spec, "groups")), 2);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(spec, "groups"), 1)),
			 "system:authenticated");
	ck_assert_int_eq(json_object_size(json_object_get(o, "status")), 0);
	json_decref(o);
}
END_TEST

START_TEST(prepare_updates)
{
	json_t *old = make_csr("example.com/x");
	set_conditions(old, json_pack("[{s:s,s:s,s:s,s:s}]", "type", "Approved", "status", "True",
				      "lastUpdateTime", "2026-01-01T00:00:00Z",
				      "lastTransitionTime", "2026-01-01T00:00:00Z"));
	/* main resource: spec and status are the stored ones */
	json_t *o = json_deep_copy(old);
	json_object_set_new(json_object_get(o, "spec"), "signerName", json_string("a.b/c"));
	set_conditions(o, json_array());
	csr_prepare(o, old, NULL, NULL, "2026-06-01T00:00:00Z");
	ck_assert(json_equal(json_object_get(o, "spec"), json_object_get(old, "spec")));
	ck_assert(json_equal(json_object_get(o, "status"), json_object_get(old, "status")));
	json_decref(o);
	/* /status: Approved instances kept as stored, new conditions stamped */
	o = json_deep_copy(old);
	set_conditions(o,
		       json_pack("[{s:s,s:s,s:s},{s:s,s:s}]", "type", "Approved", "status", "True",
				 "reason", "Changed", "type", "Failed", "status", "True"));
	csr_prepare(o, old, "status", NULL, "2026-06-01T00:00:00Z");
	json_t *c0 = json_array_get(kb_json_path(o, "status.conditions"), 0);
	json_t *c1 = json_array_get(kb_json_path(o, "status.conditions"), 1);
	ck_assert_ptr_null(json_object_get(c0, "reason"));
	ck_assert_str_eq(json_string_value(json_object_get(c1, "lastUpdateTime")),
			 "2026-06-01T00:00:00Z");
	ck_assert_str_eq(json_string_value(json_object_get(c1, "lastTransitionTime")),
			 "2026-06-01T00:00:00Z");
	json_decref(o);
	/* /approval: only conditions; lastTransitionTime of the same type/status kept */
	o = json_deep_copy(old);
	json_object_set_new(json_object_get(o, "status"), "certificate", json_string("eQ=="));
	set_conditions(o, json_pack("[{s:s,s:s,s:s}]", "type", "Approved", "status", "True",
				    "reason", "Again"));
	csr_prepare(o, old, "approval", NULL, "2026-06-01T00:00:00Z");
	c0 = json_array_get(kb_json_path(o, "status.conditions"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c0, "lastUpdateTime")),
			 "2026-06-01T00:00:00Z");
	ck_assert_str_eq(json_string_value(json_object_get(c0, "lastTransitionTime")),
			 "2026-01-01T00:00:00Z");
	ck_assert_ptr_null(kb_json_path(o, "status.certificate"));
	json_decref(o);
	json_decref(old);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/csr");
	TCase *tc = tcase_create("validation");
	tcase_add_test(tc, valid_request);
	tcase_add_test(tc, request_pem);
	tcase_add_test(tc, usages);
	tcase_add_test(tc, signer_names);
	tcase_add_test(tc, expiration);
	tcase_add_test(tc, conditions);
	tcase_add_test(tc, update_rules);
	suite_add_tcase(s, tc);
	tc = tcase_create("strategy");
	tcase_add_test(tc, prepare_create);
	tcase_add_test(tc, prepare_updates);
	suite_add_tcase(s, tc);
	return s;
}
