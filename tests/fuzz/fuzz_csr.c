/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: CertificateSigningRequest bytes (proxy/admission/csr.h,
 * lib/pki.h). The input is checked as a PEM certificate request and as PEM
 * certificates, then becomes spec.request and status.certificate of a CSR
 * validated as a create and as updates of the main resource, /status and
 * /approval of a fixed approved request (after the strategy's preparation).
 */
#include "tests/fuzz/fuzz.h"

#include "lib/pki.h"
#include "lib/util.h"
#include "proxy/admission/csr.h"

static void validate(const json_t *obj, const json_t *old, const char *sub)
{
	json_t *c = json_array();
	json_t *o = json_deep_copy(obj);
	KB_REQUIRE(c != NULL && o != NULL);
	const char *g[] = {"system:authenticated"};
	struct csr_user who = {.name = "u", .groups = g, .ngroups = 1};
	csr_prepare(o, old, sub, &who, "2026-01-01T00:00:00Z");
	int n = csr_validate(o, old, sub, c);
	KB_REQUIRE(n >= 0 && (size_t)n == json_array_size(c));
	json_decref(o);
	json_decref(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kb_csr_info info;
	char err[256];
	kb_pki_csr_check(data, size, &info, err, sizeof(err));
	kb_pki_certs_check(data, size, err, sizeof(err));
	char *b64 = kb_base64_encode(data, size);
	if (!b64)
		return 0;
	json_t *obj =
	    json_pack("{s:{s:s},s:{s:s,s:s,s:[s]},s:{s:s,s:[{s:s,s:s}]}}", "metadata", "name", "x",
		      "spec", "request", b64, "signerName", "kubernetes.io/kube-apiserver-client",
		      "usages", "client auth", "status", "certificate", b64, "conditions", "type",
		      "Approved", "status", "True");
	json_t *old =
	    json_pack("{s:{s:s},s:{s:s,s:s,s:[s]},s:{s:[{s:s,s:s}]}}", "metadata", "name", "x",
		      "spec", "request", "", "signerName", "a.b/c", "usages", "client auth",
		      "status", "conditions", "type", "Approved", "status", "True");
	KB_REQUIRE(obj != NULL && old != NULL);
	validate(obj, NULL, NULL);
	validate(obj, old, NULL);
	validate(obj, old, "status");
	validate(obj, old, "approval");
	json_decref(obj);
	json_decref(old);
	free(b64);
	return 0;
}
