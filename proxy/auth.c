/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Authentication: who is asking. A client certificate signed by the tenant
 * CA names the user (CN) and its groups (O), as kube-apiserver reads them.
 * Every authenticated user is also in system:authenticated.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/x509.h>

#include "proxy/proxy_impl.h"

static void add_group(struct req *r, const char *g)
{
	if (r->ngroups < (int)(sizeof(r->groups) / sizeof(r->groups[0])))
		snprintf(r->groups[r->ngroups++], sizeof(r->groups[0]), "%s", g);
}

int auth_authenticate(struct req *r)
{
	X509 *cert = r->http->peer_cert;
	if (!cert)
		return -EACCES;
	X509_NAME *subj = X509_get_subject_name(cert);
	if (X509_NAME_get_text_by_NID(subj, NID_commonName, r->user, sizeof(r->user)) <= 0)
		return -EACCES;
	int idx = -1;
	while ((idx = X509_NAME_get_index_by_NID(subj, NID_organizationName, idx)) >= 0) {
		ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, idx));
		char g[128];
		int n = ASN1_STRING_length(d);
		if (n <= 0 || n >= (int)sizeof(g))
			continue;
		memcpy(g, ASN1_STRING_get0_data(d), (size_t)n);
		g[n] = '\0';
		add_group(r, g);
	}
	add_group(r, "system:authenticated");
	return 0;
}
