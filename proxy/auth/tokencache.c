/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The token authentication cache (see tokencache.h).
 *
 * DESIGN: a direct-mapped table of TC_SLOTS entries indexed by a 64-bit
 * FNV-1a hash of the audiences and the token; an entry keeps its own copy
 * of both and is used only when they compare equal, so a hash collision
 * costs a verification, never a wrong identity. A new entry replaces
 * whatever held its slot. Entries are malloc'ed when first filled, so an
 * unused cache costs one small table. The deletions that end a binding are
 * seen through store watches on serviceaccounts, pods, secrets and nodes,
 * started with the first entry.
 */
#include "proxy/auth/tokencache.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "lib/json.h"

#define TC_SLOTS      128
#define TC_TTL        10 /* kube's --token-success-cache-ttl default */
#define TC_MAX_GROUPS 16

struct tc_entry {
	char *token, *aud; /* aud: the audiences joined by '\n' */
	time_t until;
	char *user, *uid;
	char *groups[TC_MAX_GROUPS];
	int ngroups;
	struct token_ident id;
	char *ns, *account, *pod, *secret, *node; /* the binding */
};

static const char *const watched[] = {"/serviceaccounts", "/pods", "/secrets", "/nodes"};
#define NWATCHED (sizeof(watched) / sizeof(watched[0]))

struct token_cache {
	store_t *st;
	struct tc_entry *slot[TC_SLOTS];
	store_watch_t *w[NWATCHED];
	bool watching, blind; /* blind: a watch failed, so nothing is cached */
	size_t n;
};

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

static uint64_t key_hash(const char *token, const char *const *aud, size_t naud)
{
	uint64_t h = 14695981039346656037ULL;
	for (size_t i = 0; i < naud; i++) {
		h = fnv(h, aud[i]);
		h = fnv(h, "\n");
	}
	return fnv(h, token);
}

static bool aud_equal(const char *joined, const char *const *aud, size_t naud)
{
	const char *p = joined;
	for (size_t i = 0; i < naud; i++) {
		size_t n = strlen(aud[i]);
		if (strncmp(p, aud[i], n) != 0 || p[n] != '\n')
			return false;
		p += n + 1;
	}
	return *p == '\0';
}

static char *aud_join(const char *const *aud, size_t naud)
{
	size_t len = 1;
	for (size_t i = 0; i < naud; i++)
		len += strlen(aud[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	for (size_t i = 0; i < naud; i++) {
		size_t n = strlen(aud[i]);
		memcpy(p, aud[i], n);
		p[n] = '\n';
		p += n + 1;
	}
	*p = '\0';
	return s;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void entry_free(struct tc_entry *e)
{
	if (!e)
		return;
	if (e->token) {
		OPENSSL_cleanse(e->token, strlen(e->token));
		free(e->token);
	}
	free(e->aud);
	free(e->user);
	free(e->uid);
	for (int i = 0; i < e->ngroups; i++)
		free(e->groups[i]);
	free(e->ns);
	free(e->account);
	free(e->pod);
	free(e->secret);
	free(e->node);
	free(e);
}

static void drop(struct token_cache *tc, size_t i)
{
	if (!tc->slot[i])
		return;
	entry_free(tc->slot[i]);
	tc->slot[i] = NULL;
	tc->n--;
}

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* A change that can end a binding: a deletion, or the deletion mark. */
static void on_event(const struct store_event *ev, void *arg)
{
	struct token_cache *tc = arg;
	if (!tc->n || !ev->name)
		return;
	if (ev->type != STORE_DELETED &&
	    !(ev->type == STORE_MODIFIED && ev->obj &&
	      json_object_get(json_object_get(ev->obj, "metadata"), "deletionTimestamp")))
		return;
	const char *ns = ev->ns ? ev->ns : "";
	bool sa = strcmp(ev->res, "/serviceaccounts") == 0, pod = strcmp(ev->res, "/pods") == 0,
	     sec = strcmp(ev->res, "/secrets") == 0, node = strcmp(ev->res, "/nodes") == 0;
	for (size_t i = 0; i < TC_SLOTS; i++) {
		struct tc_entry *e = tc->slot[i];
		if (!e)
			continue;
		bool in_ns = same(e->ns, ns);
		if ((sa && in_ns && same(e->account, ev->name)) ||
		    (pod && in_ns && same(e->pod, ev->name)) ||
		    (sec && in_ns && same(e->secret, ev->name)) ||
		    (node && same(e->node, ev->name)))
			drop(tc, i);
	}
}

static void start_watching(struct token_cache *tc)
{
	if (tc->watching || !tc->st)
		return;
	tc->watching = true;
	for (size_t i = 0; i < NWATCHED; i++)
		if (store_watch(tc->st, watched[i], NULL, store_rev(tc->st), on_event, tc,
				&tc->w[i]) < 0) {
			tc->w[i] = NULL;
			tc->blind = true;
		}
}

struct token_cache *tokencache_new(store_t *st)
{
	struct token_cache *tc = calloc(1, sizeof(*tc));
	if (tc)
		tc->st = st;
	return tc;
}

void tokencache_free(struct token_cache *tc)
{
	if (!tc)
		return;
	for (size_t i = 0; i < NWATCHED; i++)
		if (tc->w[i])
			store_unwatch(tc->w[i]);
	for (size_t i = 0; i < TC_SLOTS; i++)
		entry_free(tc->slot[i]);
	free(tc);
}

const struct token_ident *tokencache_get(struct token_cache *tc, const char *token,
					 const char *const *aud, size_t naud, time_t now)
{
	if (!tc || !tc->n)
		return NULL;
	size_t i = key_hash(token, aud, naud) % TC_SLOTS;
	struct tc_entry *e = tc->slot[i];
	if (!e || strcmp(e->token, token) != 0 || !aud_equal(e->aud, aud, naud))
		return NULL;
	if (now >= e->until) {
		drop(tc, i);
		return NULL;
	}
	return &e->id;
}

void tokencache_put(struct token_cache *tc, const char *token, const char *const *aud, size_t naud,
		    const struct token_ident *id, const struct token_binding *b, time_t exp,
		    time_t now)
{
	if (!tc || exp <= now || !id->user)
		return;
	start_watching(tc);
	if (tc->blind)
		return;
	struct tc_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return;
	e->token = strdup(token);
	e->aud = aud_join(aud, naud);
	e->user = strdup(id->user);
	e->uid = dup_or_null(id->uid);
	e->until = exp < now + TC_TTL ? exp : now + TC_TTL;
	bool ok = e->token && e->aud && e->user && (!id->uid || e->uid);
	for (int i = 0; ok && i < id->ngroups && i < TC_MAX_GROUPS; i++) {
		e->groups[i] = strdup(id->groups[i]);
		ok = e->groups[i] != NULL;
		e->ngroups += ok;
	}
	e->ns = dup_or_null(b->ns);
	e->account = dup_or_null(b->account);
	e->pod = dup_or_null(b->pod);
	e->secret = dup_or_null(b->secret);
	e->node = dup_or_null(b->node);
	ok = ok && (!b->ns || e->ns) && (!b->account || e->account) && (!b->pod || e->pod) &&
	     (!b->secret || e->secret) && (!b->node || e->node);
	if (!ok) {
		entry_free(e);
		return;
	}
	e->id = (struct token_ident){
	    .user = e->user, .uid = e->uid, .groups = e->groups, .ngroups = e->ngroups};
	size_t i = key_hash(token, aud, naud) % TC_SLOTS;
	drop(tc, i);
	tc->slot[i] = e;
	tc->n++;
}

size_t tokencache_size(const struct token_cache *tc)
{
	return tc ? tc->n : 0;
}
