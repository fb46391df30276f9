/* SPDX-License-Identifier: Apache-2.0 */
/*
 * certificates.k8s.io/v1 CertificateSigningRequests as kube-apiserver
 * handles them: the registry strategy (the requester's identity written
 * into spec on create, spec and status kept on updates, /status may set the
 * certificate, /approval only the conditions, condition timestamps
 * defaulted), validation (pkg/apis/certificates/validation) and the three
 * admission plugins (CertificateSubjectRestriction, CertificateApproval,
 * CertificateSigning). The signer and the cleaner are controllers
 * (proxy/controllers/csr.c).
 *
 * Threading: any thread for the pure functions; csr_register on the loop.
 */
#ifndef KB_PROXY_CSR_H
#define KB_PROXY_CSR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "proxy/model/resource.h"

#define CSR_GROUP            "certificates.k8s.io"
#define CSR_SIGNER_APISERVER "kubernetes.io/kube-apiserver-client"
#define CSR_SIGNER_LEGACY    "kubernetes.io/legacy-unknown"

/* Who is asking (borrowed strings). */
struct csr_user {
	const char *name, *uid;
	const char *const *groups;
	size_t ngroups;
};

/*
 * The strategy's PrepareForCreate/PrepareForUpdate for the main resource
 * (sub NULL), "status" or "approval": obj (borrowed, modified) over old
 * (NULL on create). `who` is the requester (create only); `now` the RFC 3339
 * time for defaulted condition timestamps.
 */
void csr_prepare(json_t *obj, const json_t *old, const char *sub, const struct csr_user *who,
		 const char *now);

/*
 * kube's ValidateCertificateSigningRequest{Create,Update,StatusUpdate,
 * ApprovalUpdate} without the metadata part: causes appended to `causes`
 * (borrowed array) with kube's fields and messages. Returns the number added.
 */
int csr_validate(const json_t *obj, const json_t *old, const char *sub, json_t *causes);

/* Makes the CSR write check (kube's strategy, validation and certificate
 * admission plugins for the main resource, /status and /approval) the
 * write_check of CertificateSigningRequests (at
 * proxy start). 0 or -ENOENT. */
int csr_register(void);

#endif
