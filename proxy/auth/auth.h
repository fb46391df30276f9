/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Authentication (auth.c: client certificates, bearer tokens, service-account
 * JWTs, impersonation) and authorization (authz.c: RBAC over rbac.c's
 * index, the write checks of RBAC objects). Included by auth/ and the
 * layers above it. Loop thread only.
 */
#ifndef KB_PROXY_AUTH_H
#define KB_PROXY_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/core/core.h"
#include "proxy/auth/authz.h"

/* auth.c: authentication. 0 with r->user/r->groups set, or -EACCES (the
 * caller answers 401). */
int auth_authenticate(struct req *r);

/* auth.c: switches r's identity to the one named by Impersonate-User /
 * Impersonate-Group headers when the real user may impersonate it. 0 (also
 * without headers); otherwise it has answered (403) and returns -EACCES. */
int auth_impersonate(struct req *r);

/* auth.c: loads or creates the tenant's service-account signing key. */
int auth_start(struct proxy *px);
void auth_stop(struct proxy *px);

/* auth.c: TokenReview of a bearer token: fills user, groups and uid of
 * `who` (a scratch request) or returns -EACCES. */
int auth_token(struct proxy *px, const char *token, const char *const *audiences, size_t naud,
	       struct req *who);

/* auth.c: the serviceaccounts/token subresource (TokenRequest). */
void auth_token_request(struct req *r);

#endif
