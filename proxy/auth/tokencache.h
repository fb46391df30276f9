/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cache of service-account token authentications, as kube-apiserver's
 * (k8s.io/apiserver pkg/authentication/token/cache, cached_token_authenticator.go,
 * put in front of the token authenticators by pkg/kubeapiserver/authenticator
 * config.go New when --token-success-cache-ttl > 0, 10 s by default; failures
 * are not cached, the default --token-failure-cache-ttl being 0).
 *
 * A success is kept for 10 s or until the token expires, whichever is
 * first, keyed by the token and the audiences it was checked for. Stricter
 * than kube's: an entry is dropped at once when the service account, or
 * the pod, secret or node the token is bound to, is deleted or marked for
 * deletion, so that a token never outlives what it is bound to by the
 * cache's 10 s.
 *
 * Threading: loop thread only.
 */
#ifndef KUBICLE_PROXY_AUTH_TOKENCACHE_H
#define KUBICLE_PROXY_AUTH_TOKENCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "store/store.h"

struct token_cache;

/* What a cached authentication gives (borrowed from the cache until its
 * next change). */
struct token_ident {
	const char *user, *uid;
	char *const *groups;
	int ngroups;
};

/* What a token is bound to: names in the account's namespace (node: none);
 * NULL when not bound. */
struct token_binding {
	const char *ns, *account, *pod, *secret, *node;
};

struct token_cache *tokencache_new(store_t *st);
void tokencache_free(struct token_cache *tc);

/* The identity cached for `token` checked against these audiences, or NULL. */
const struct token_ident *tokencache_get(struct token_cache *tc, const char *token,
					 const char *const *aud, size_t naud, time_t now);

/* Remembers a successful authentication until min(now + 10 s, exp). */
void tokencache_put(struct token_cache *tc, const char *token, const char *const *aud, size_t naud,
		    const struct token_ident *id, const struct token_binding *b, time_t exp,
		    time_t now);

/* Entries held (tests). */
size_t tokencache_size(const struct token_cache *tc);

#endif
