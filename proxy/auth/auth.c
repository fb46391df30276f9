/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Authentication: who is asking, as kube-apiserver reads it.
 *  - A client certificate signed by the tenant CA: CN is the user, O are the
 *    groups (the TLS layer hands over only certificates that verified, so an
 *    expired one or one from another CA is no credential: 401).
 *  - A bearer token made by `kubicle token create`: only its SHA-256 is
 *    kept, in the store's settings under "token/<hex>" as
 *    {"user","groups","exp","revoked"}; read on each request, so a token
 *    created or revoked by the CLI counts at once.
 *  - A service-account token: an ES256 JWT signed with the tenant's
 *    service-account key (store setting "sa.key"), issued by the
 *    serviceaccounts/token subresource, bound to the account's uid: deleting
 *    the account invalidates it. Identity system:serviceaccount:NS:NAME in
 *    system:serviceaccounts and system:serviceaccounts:NS.
 * Every authenticated user is also in system:authenticated.
 * Impersonation (Impersonate-User / Impersonate-Group) switches identity
 * for users allowed the `impersonate` verb on users, groups or
 * serviceaccounts.
 *
 * Threading: loop thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "lib/log.h"
#include "lib/pki.h"
#include "lib/util.h"
#include "proxy/model/names.h"
#include "proxy/model/protobuf.h"
#include "proxy/auth/auth.h"
#include "proxy/auth/rbac.h"
#include "proxy/auth/tokencache.h"

#define SA_ISSUER             "https://kubernetes.default.svc.cluster.local"
#define SA_PREFIX             "system:serviceaccount:"
#define TOKEN_MIN_SECONDS     600
#define TOKEN_DEFAULT_SECONDS 3600
#define TOKEN_MAX_SECONDS     (48L * 3600)

static void add_group(struct req *r, const char *g)
{
	for (int i = 0; i < r->ngroups; i++)
		if (strcmp(r->groups[i], g) == 0)
			return;
	char *d = r->ngroups < (int)KB_ARRAY_SIZE(r->groups) ? strdup(g) : NULL;
	if (d)
		r->groups[r->ngroups++] = d;
}

static void add_group_cb(const char *g, void *r)
{
	add_group(r, g);
}

static int from_cert(struct req *r, X509 *cert)
{
	X509_NAME *subj = X509_get_subject_name(cert);
	if (X509_NAME_get_text_by_NID(subj, NID_commonName, r->user, sizeof(r->user)) <= 0)
		return -EACCES;
	kb_pki_name_groups(subj, add_group_cb, r);
	return 0;
}

/* ---- static bearer tokens ----------------------------------------------- */

static void token_hash(const char *token, char hex[65])
{
	unsigned char md[32];
	unsigned int n = 0;
	EVP_Digest(token, strlen(token), md, &n, EVP_sha256(), NULL);
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

static int from_static_token(struct proxy *px, const char *token, struct req *who)
{
	char hex[65], key[80];
	char *val = NULL;
	token_hash(token, hex);
	snprintf(key, sizeof(key), "token/%s", hex);
	if (store_kv_get(px->store, key, &val) < 0)
		return -EACCES;
	json_t *t = json_loads(val, 0, NULL);
	free(val);
	int rc = -EACCES;
	const char *user = json_string_value(json_object_get(t, "user"));
	json_int_t exp = json_integer_value(json_object_get(t, "exp"));
	if (!user || json_is_true(json_object_get(t, "revoked")) || (exp && exp <= time(NULL)))
		goto out;
	snprintf(who->user, sizeof(who->user), "%s", user);
	size_t i;
	json_t *g;
	json_array_foreach (json_object_get(t, "groups"), i, g)
		if (json_string_value(g))
			add_group(who, json_string_value(g));
	rc = 0;
out:
	json_decref(t);
	return rc;
}

/* ---- service-account JWTs ----------------------------------------------- */

/* A new signing key, kept in the store (kb_pki_new_key: P-256 as PKCS#8
 * PEM, without OpenSSL 3.0's per-key encoder, 3.6 M instructions of a
 * first start). */
static int sa_key_create(struct proxy *px, EVP_PKEY **out)
{
	EVP_PKEY *k = NULL;
	char *pem = NULL;
	int rc = kb_pki_new_key(&k, &pem);
	if (rc == 0)
		rc = store_kv_set(px->store, "sa.key", pem);
	if (pem)
		OPENSSL_cleanse(pem, strlen(pem));
	free(pem);
	if (rc == 0)
		*out = k;
	else
		EVP_PKEY_free(k);
	return rc;
}

int auth_start(struct proxy *px)
{
	char *pem = NULL;
	EVP_PKEY *k = NULL;
	if (store_kv_get(px->store, "sa.key", &pem) == 0) {
		k = kb_pki_key_from_pem(pem, strlen(pem));
		free(pem);
	}
	if (!k) {
		int rc = sa_key_create(px, &k);
		if (rc < 0)
			return rc;
	}
	px->sa_key = k;
	px->tokens = tokencache_new(px->store);
	return 0;
}

void auth_stop(struct proxy *px)
{
	tokencache_free(px->tokens);
	px->tokens = NULL;
	EVP_PKEY_free(px->sa_key);
	px->sa_key = NULL;
}

static char *b64url_json(const json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	char *out = s ? kb_base64url_encode(s, strlen(s)) : NULL;
	free(s);
	return out;
}

/* ES256 signature (raw r||s, 64 bytes) of `data`. */
static int es256_sign(EVP_PKEY *k, const char *data, unsigned char sig[64])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned char der[128];
	size_t dlen = sizeof(der);
	int rc = -EIO;
	if (c && EVP_DigestSignInit(c, NULL, EVP_sha256(), NULL, k) == 1 &&
	    EVP_DigestSign(c, der, &dlen, (const unsigned char *)data, strlen(data)) == 1) {
		const unsigned char *p = der;
		ECDSA_SIG *es = d2i_ECDSA_SIG(NULL, &p, (long)dlen);
		if (es && BN_bn2binpad(ECDSA_SIG_get0_r(es), sig, 32) == 32 &&
		    BN_bn2binpad(ECDSA_SIG_get0_s(es), sig + 32, 32) == 32)
			rc = 0;
		ECDSA_SIG_free(es);
	}
	EVP_MD_CTX_free(c);
	return rc;
}

static bool es256_verify(EVP_PKEY *k, const char *data, size_t len, const unsigned char *sig,
			 size_t slen)
{
	if (slen != 64)
		return false;
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
	unsigned char *der = NULL;
	bool ok = false;
	if (!es || !r || !s || ECDSA_SIG_set0(es, r, s) != 1) {
		BN_free(r);
		BN_free(s);
		ECDSA_SIG_free(es);
		return false;
	}
	int dlen = i2d_ECDSA_SIG(es, &der);
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	if (dlen > 0 && c && EVP_DigestVerifyInit(c, NULL, EVP_sha256(), NULL, k) == 1)
		ok = EVP_DigestVerify(c, der, (size_t)dlen, (const unsigned char *)data, len) == 1;
	EVP_MD_CTX_free(c);
	OPENSSL_free(der);
	ECDSA_SIG_free(es);
	return ok;
}

/* Signs claims (borrowed) into a malloc'ed compact JWT. */
static char *jwt_sign(EVP_PKEY *k, const json_t *claims)
{
	json_t *hdr = json_pack("{s:s,s:s}", "alg", "ES256", "typ", "JWT");
	char *h = b64url_json(hdr), *p = b64url_json(claims), *out = NULL;
	json_decref(hdr);
	struct kb_buf b = {0};
	unsigned char sig[64];
	if (h && p) {
		kb_buf_printf(&b, "%s.%s", h, p);
		if (es256_sign(k, b.data, sig) == 0) {
			char *s = kb_base64url_encode(sig, sizeof(sig));
			if (s)
				kb_buf_printf(&b, ".%s", s);
			free(s);
			out = s ? b.data : NULL;
		}
	}
	if (!out)
		kb_buf_free(&b);
	free(h);
	free(p);
	return out;
}

/* Verifies the signature and decodes the claims (new reference) or NULL. */
static json_t *jwt_verify(EVP_PKEY *k, const char *token)
{
	const char *d1 = strchr(token, '.');
	const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (!k || !d2 || strchr(d2 + 1, '.'))
		return NULL;
	unsigned char *sig = NULL, *payload = NULL;
	size_t slen = 0, plen = 0;
	json_t *claims = NULL;
	if (kb_base64url_decode(d2 + 1, &sig, &slen) < 0)
		return NULL;
	if (!es256_verify(k, token, (size_t)(d2 - token), sig, slen))
		goto out;
	char *mid = strndup(d1 + 1, (size_t)(d2 - d1 - 1));
	if (mid && kb_base64url_decode(mid, &payload, &plen) == 0)
		claims = json_loadb((const char *)payload, plen, 0, NULL);
	free(mid);
out:
	free(sig);
	free(payload);
	return claims;
}

static bool aud_ok(const json_t *claims, const char *const *audiences, size_t naud)
{
	const json_t *aud = json_object_get(claims, "aud");
	size_t i;
	json_t *a;
	json_array_foreach (aud, i, a)
		for (size_t k = 0; k < naud; k++)
			if (json_string_value(a) && strcmp(json_string_value(a), audiences[k]) == 0)
				return true;
	return false;
}

/*
 * The objects a token is bound to (claims kubernetes.io.pod, .secret,
 * .node: a TokenRequest's boundObjectRef, the syncer's projected tokens)
 * hold while each exists with its uid and was not deleted more than a
 * minute ago (jwt.DefaultLeeway), as kube's validator checks them
 * (pkg/serviceaccount/claims.go, validator.Validate: "service account
 * token has been invalidated", or the uid mismatch). A pod-bound token's
 * node claim (ServiceAccountTokenPodNodeInfo) is information, not a
 * binding: kube checks the node only of a token bound to the node.
 */
#define DELETE_LEEWAY 60

static bool bound_one(struct proxy *px, const char *plural, const char *ns, const json_t *ref)
{
	const char *name = json_string_value(json_object_get(ref, "name"));
	const char *uid = json_string_value(json_object_get(ref, "uid"));
	const struct proxy_resource *res = resource_find("", "v1", plural);
	json_t *obj = NULL;
	if (!name || !uid || !res ||
	    store_get(px->store, res->store_key, res->namespaced ? ns : "", name, &obj) < 0)
		return false;
	const char *have = obj_str(obj, "metadata.uid"),
		   *del = obj_str(obj, "metadata.deletionTimestamp");
	time_t t = 0;
	bool ok = have && strcmp(have, uid) == 0 &&
		  (!del || (kb_time_parse(del, &t) == 0 && t >= time(NULL) - DELETE_LEEWAY));
	json_decref(obj);
	return ok;
}

static bool bound_ok(struct proxy *px, const char *ns, const json_t *ki)
{
	const json_t *pod = json_object_get(ki, "pod"), *sec = json_object_get(ki, "secret");
	const json_t *node = json_object_get(ki, "node");
	return (!sec || bound_one(px, "secrets", ns, sec)) &&
	       (!pod || bound_one(px, "pods", ns, pod)) &&
	       (pod || !node || bound_one(px, "nodes", "", node));
}

static int from_sa_token(struct proxy *px, const char *token, const char *const *audiences,
			 size_t naud, struct req *who)
{
	json_t *c = jwt_verify(px->sa_key, token);
	int rc = -EACCES;
	if (!c)
		return rc;
	json_t *ki = json_object_get(c, "kubernetes.io");
	const char *ns = json_string_value(json_object_get(ki, "namespace"));
	json_t *sa = json_object_get(ki, "serviceaccount");
	const char *name = json_string_value(json_object_get(sa, "name"));
	const char *uid = json_string_value(json_object_get(sa, "uid"));
	json_int_t exp = json_integer_value(json_object_get(c, "exp"));
	json_t *obj = NULL;
	const struct proxy_resource *res = resource_find("", "v1", "serviceaccounts");
	if (!ns || !name || !uid || exp <= time(NULL) || !aud_ok(c, audiences, naud) ||
	    !bound_ok(px, ns, ki))
		goto out;
	if (store_get(px->store, res->store_key, ns, name, &obj) < 0 ||
	    strcmp(obj_str(obj, "metadata.uid") ? obj_str(obj, "metadata.uid") : "", uid) != 0 ||
	    obj_str(obj, "metadata.deletionTimestamp"))
		goto out;
	snprintf(who->user, sizeof(who->user), SA_PREFIX "%s:%s", ns, name);
	char g[200];
	add_group(who, "system:serviceaccounts");
	snprintf(g, sizeof(g), "system:serviceaccounts:%s", ns);
	add_group(who, g);
	free(who->uid);
	who->uid = strdup(uid);
	rc = 0;
	const struct token_ident id = {
	    .user = who->user, .uid = who->uid, .groups = who->groups, .ngroups = who->ngroups};
	const struct token_binding b = {
	    .ns = ns,
	    .account = name,
	    .pod = json_string_value(json_object_get(json_object_get(ki, "pod"), "name")),
	    .secret = json_string_value(json_object_get(json_object_get(ki, "secret"), "name")),
	    .node = json_string_value(json_object_get(json_object_get(ki, "node"), "name"))};
	tokencache_put(px->tokens, token, audiences, naud, &id, &b, (time_t)exp, time(NULL));
out:
	json_decref(obj);
	json_decref(c);
	return rc;
}

int auth_token(struct proxy *px, const char *token, const char *const *audiences, size_t naud,
	       struct req *who)
{
	static const char *const api_aud[] = {SA_ISSUER};
	if (!audiences || !naud) {
		audiences = api_aud;
		naud = 1;
	}
	int dots = 0;
	for (const char *p = token; *p; p++)
		dots += *p == '.';
	const struct token_ident *hit =
	    dots == 2 ? tokencache_get(px->tokens, token, audiences, naud, time(NULL)) : NULL;
	int rc;
	if (hit) {
		snprintf(who->user, sizeof(who->user), "%s", hit->user);
		for (int i = 0; i < hit->ngroups; i++)
			add_group(who, hit->groups[i]);
		free(who->uid);
		who->uid = hit->uid ? strdup(hit->uid) : NULL;
		rc = 0;
	} else {
		rc = dots == 2 ? from_sa_token(px, token, audiences, naud, who)
			       : from_static_token(px, token, who);
	}
	if (rc == 0)
		add_group(who, "system:authenticated");
	return rc;
}

int auth_authenticate(struct req *r)
{
	X509 *cert = r->http->peer_cert;
	if (cert) {
		if (from_cert(r, cert) < 0)
			return -EACCES;
		add_group(r, "system:authenticated");
		return 0;
	}
	const char *h = kb_http_req_header(r->http, "authorization");
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return -EACCES;
	h += 7;
	while (*h == ' ')
		h++;
	if (!*h)
		return -EACCES;
	return auth_token(r->px, h, NULL, 0, r);
}

/* ---- impersonation ------------------------------------------------------- */
/*
 * As kube's impersonation filter (k8s.io/apiserver
 * pkg/endpoints/filters/impersonation/impersonation.go, WithImpersonation and
 * buildImpersonationRequests): what a request asks to take is, in this
 * order, the user (a service account only when serviceaccount.SplitUsername
 * takes the name: exactly NAMESPACE:NAME after the prefix, a valid namespace
 * and a valid account name; anything else is a user of that name), each
 * Impersonate-Group, each value of each Impersonate-Extra-KEY, the
 * Impersonate-Uid. Each is authorized against the real caller, the first
 * refusal answers 403. Groups, extras or a uid without a user are a 400.
 * The groups given are the whole list (a service account's own groups come
 * only when none is given), plus system:authenticated unless they name it
 * or system:unauthenticated (system:unauthenticated for system:anonymous).
 * The caller stays on the request as real_user: the audit event's user, the
 * identity taken being its impersonatedUser (audit.LogImpersonatedUser).
 */

enum imp_kind { IMP_SA, IMP_USER, IMP_GROUP, IMP_EXTRA, IMP_UID };

struct imp {
	enum imp_kind kind;
	const char *name; /* borrowed: a header's value, or imps.sa_* */
	char *key;        /* IMP_EXTRA: the extra's key, unescaped (malloc'ed) */
};

struct imps {
	struct imp *v;
	size_t n;
	char sa_ns[64], sa_name[254]; /* IMP_SA */
};

static void imps_free(struct imps *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->v[i].key);
	free(x->v);
}

/* serviceaccount.SplitUsername: 0 and ns/name filled, or -EINVAL. */
static int split_sa_user(const char *user, struct imps *x)
{
	if (!kb_str_has_prefix(user, SA_PREFIX))
		return -EINVAL;
	const char *ns = user + strlen(SA_PREFIX), *c = strchr(ns, ':');
	if (!c || strchr(c + 1, ':') || (size_t)(c - ns) >= sizeof(x->sa_ns) ||
	    strlen(c + 1) >= sizeof(x->sa_name))
		return -EINVAL;
	snprintf(x->sa_ns, sizeof(x->sa_ns), "%.*s", (int)(c - ns), ns);
	snprintf(x->sa_name, sizeof(x->sa_name), "%s", c + 1);
	return names_dns1123_label(x->sa_ns) || names_dns1123_subdomain(x->sa_name) ? -EINVAL : 0;
}

static const char *imp_kind_name(enum imp_kind k)
{
	static const char *const names[] = {"ServiceAccount", "User", "Group", "UserExtra", "UID"};
	return names[k];
}

/* Go's %v of the requests' []ObjectReference, as kube's 400 prints it. */
static void imps_describe(const struct imps *x, struct kb_buf *b)
{
	kb_buf_puts(b, "[");
	for (size_t i = 0; i < x->n; i++) {
		const struct imp *m = &x->v[i];
		bool av = m->kind == IMP_EXTRA || m->kind == IMP_UID;
		kb_buf_printf(b, "%s{%s %s %s  %s  %s}", i ? " " : "", imp_kind_name(m->kind),
			      m->kind == IMP_SA ? x->sa_ns : "", m->name,
			      av ? "authentication.k8s.io/v1" : "", m->key ? m->key : "");
	}
	kb_buf_puts(b, "]");
}

/* The requests of r's headers in kube's order; 0, -ENOMEM, or -EINVAL
 * (answered 400). x->n is 0 when nothing is asked. */
static int imps_build(struct req *r, struct imps *x)
{
	const kb_http_req_t *h = r->http;
	const char *user = kb_http_req_header(h, "impersonate-user");
	const char *uid = kb_http_req_header(h, "impersonate-uid");
	if (user && !*user)
		user = NULL;
	if (uid && !*uid)
		uid = NULL;
	if (!(x->v = calloc(h->nheaders + 2, sizeof(*x->v))))
		return -ENOMEM;
	if (user && strlen(user) >= sizeof(r->user)) {
		/* never a name cut short: it could be another account's */
		reply_statusf(r, 400, "BadRequest", "Impersonate-User: longer than %zu bytes",
			      sizeof(r->user) - 1);
		return -EINVAL;
	}
	if (user) {
		bool sa = split_sa_user(user, x) == 0;
		x->v[x->n++] = (struct imp){sa ? IMP_SA : IMP_USER, sa ? x->sa_name : user, NULL};
	}
	bool others = false;
	for (size_t i = 0; i < h->nheaders; i++)
		if (strcmp(h->headers[i].name, "impersonate-group") == 0) {
			x->v[x->n++] = (struct imp){IMP_GROUP, h->headers[i].value, NULL};
			others = true;
		}
	for (size_t i = 0; i < h->nheaders; i++) {
		const char *name = h->headers[i].name;
		if (!kb_str_has_prefix(name, "impersonate-extra-"))
			continue;
		char *key = strdup(name + strlen("impersonate-extra-"));
		if (!key)
			return -ENOMEM;
		/* url.PathUnescape; a malformed key is kept as sent */
		char *dec = strdup(key);
		if (dec && kb_http_unescape(dec, false) == 0) {
			free(key);
			key = dec;
		} else {
			free(dec);
		}
		x->v[x->n++] = (struct imp){IMP_EXTRA, h->headers[i].value, key};
		others = true;
	}
	if (uid) {
		x->v[x->n++] = (struct imp){IMP_UID, uid, NULL};
		others = true;
	}
	if (others && !user) {
		struct kb_buf b = {0};
		imps_describe(x, &b);
		reply_statusf(r, 400, "BadRequest", "requested %s without impersonating a user",
			      b.data ? b.data : "[]");
		kb_buf_free(&b);
		return -EINVAL;
	}
	return 0;
}

/* One request authorized against the real caller: 0, or answered 403 as
 * kube's responsewriters.Forbidden words it and -EACCES. */
static int imp_authorize(struct req *r, const struct imps *x, const struct imp *m)
{
	static const char *const res[] = {"serviceaccounts", "users", "groups", "userextras",
					  "uids"};
	const char *group =
	    m->kind == IMP_EXTRA || m->kind == IMP_UID ? "authentication.k8s.io" : "";
	const char *ns = m->kind == IMP_SA ? x->sa_ns : NULL;
	struct rbac_attrs a = {.user = r->user,
			       .groups = (const char *const *)r->groups,
			       .ngroups = (size_t)r->ngroups,
			       .verb = "impersonate",
			       .resource_request = true,
			       .api_group = group,
			       .resource = res[m->kind],
			       .subresource = m->key,
			       .ns = ns,
			       .name = m->name};
	if (authz_check(r->px, &a, NULL, 0))
		return 0;
	char msg[1400];
	snprintf(msg, sizeof(msg),
		 "%s%s%s \"%s\" is forbidden: User \"%s\" cannot impersonate resource \"%s%s%s\" "
		 "in API group \"%s\" %s%s%s",
		 res[m->kind], *group ? "." : "", group, m->name, r->user, res[m->kind],
		 m->key ? "/" : "", m->key ? m->key : "", group,
		 ns ? "in the namespace \"" : "at the cluster scope", ns ? ns : "", ns ? "\"" : "");
	json_t *d = json_pack("{s:s,s:s}", "name", m->name, "kind", res[m->kind]);
	if (*group)
		json_object_set_new(d, "group", json_string(group));
	reply_status(r, 403, "Forbidden", msg, d);
	return -EACCES;
}

/* Switches r to the identity the requests name; the caller's userInfo is
 * kept as r->real_user. */
static int imps_apply(struct req *r, const struct imps *x)
{
	json_t *real = req_user_info(r), *extra = json_object();
	char *uid = NULL;
	bool groups_given = false;
	const char *user = NULL;
	for (size_t i = 0; i < x->n; i++) {
		const struct imp *m = &x->v[i];
		if (m->kind == IMP_SA || m->kind == IMP_USER)
			user = m->kind == IMP_USER ? m->name : NULL;
		groups_given |= m->kind == IMP_GROUP;
		if (m->kind == IMP_UID) {
			free(uid);
			uid = strdup(m->name);
		}
		if (m->kind == IMP_EXTRA) {
			json_t *vals = json_object_get(extra, m->key);
			if (!vals)
				json_object_set_new(extra, m->key, vals = json_array());
			json_array_append_new(vals, json_string(m->name));
		}
	}
	req_forget_user(r);
	if (user)
		snprintf(r->user, sizeof(r->user), "%s", user);
	else
		snprintf(r->user, sizeof(r->user), SA_PREFIX "%s:%s", x->sa_ns, x->sa_name);
	for (size_t i = 0; i < x->n; i++)
		if (x->v[i].kind == IMP_GROUP)
			add_group(r, x->v[i].name);
	if (!user && !groups_given) {
		char grp[300];
		add_group(r, "system:serviceaccounts");
		snprintf(grp, sizeof(grp), "system:serviceaccounts:%s", x->sa_ns);
		add_group(r, grp);
	}
	bool anonymous = strcmp(r->user, "system:anonymous") == 0, named = false;
	for (int i = 0; i < r->ngroups; i++)
		named |= strcmp(r->groups[i], "system:unauthenticated") == 0 ||
			 (!anonymous && strcmp(r->groups[i], "system:authenticated") == 0);
	if (!named)
		add_group(r, anonymous ? "system:unauthenticated" : "system:authenticated");
	free(r->uid);
	r->uid = uid;
	r->extra = extra;
	json_decref(r->real_user);
	r->real_user = real;
	return 0;
}

int auth_impersonate(struct req *r)
{
	struct imps x = {0};
	int rc = imps_build(r, &x);
	if (rc == -ENOMEM)
		reply_errno(r, rc, NULL);
	for (size_t i = 0; rc == 0 && i < x.n; i++)
		rc = imp_authorize(r, &x, &x.v[i]);
	if (rc == 0 && x.n)
		rc = imps_apply(r, &x);
	imps_free(&x);
	return rc < 0 ? -EACCES : 0;
}

/* ---- TokenRequest: serviceaccounts/NAME/token ----------------------------- */

static int decode(struct req *r, const char *proto, json_t **out)
{
	const char *ct = kb_http_req_header(r->http, "content-type");
	char err[256] = "";
	if (ct && strstr(ct, "protobuf")) {
		if (pb_decode_k8s(r->http->body, r->http->body_len, proto, out, err, sizeof(err)) ==
		    0)
			return 0;
	} else {
		*out = json_loadb(r->http->body, r->http->body_len, 0, NULL);
		if (json_is_object(*out))
			return 0;
		json_decref(*out);
		snprintf(err, sizeof(err), "not a JSON object");
	}
	reply_statusf(r, 400, "BadRequest", "the object provided is unrecognized: %s", err);
	return -EINVAL;
}

static json_t *token_claims(const json_t *sa, const json_t *aud, long secs, time_t now)
{
	json_t *c = json_pack("{s:O,s:I,s:I,s:s,s:I,s:{s:s,s:{s:s,s:s}}}", "aud", aud, "exp",
			      (json_int_t)(now + secs), "iat", (json_int_t)now, "iss", SA_ISSUER,
			      "nbf", (json_int_t)now, "kubernetes.io", "namespace",
			      obj_str(sa, "metadata.namespace"), "serviceaccount", "name",
			      obj_str(sa, "metadata.name"), "uid", obj_str(sa, "metadata.uid"));
	char sub[600];
	snprintf(sub, sizeof(sub), SA_PREFIX "%s:%s", obj_str(sa, "metadata.namespace"),
		 obj_str(sa, "metadata.name"));
	json_object_set_new(c, "sub", json_string(sub));
	return c;
}

/*
 * spec.boundObjectRef of a TokenRequest, as kube's TokenREST.Create checks it
 * (pkg/registry/core/serviceaccount/storage/token.go): a Pod (running as
 * this service account), a Node (ServiceAccountTokenNodeBinding, GA in
 * 1.33) or a Secret of the request's namespace, which must exist (404 in
 * kube's words) and have the reference's uid when it gives one (409). The
 * claims then name it (pkg/serviceaccount/claims.go): kubernetes.io.pod,
 * .node or .secret {name, uid}, and a pod's node {name, uid when the node
 * exists} (ServiceAccountTokenPodNodeInfo). 0 with the claim added to ki, or
 * -1 when it has answered.
 */
static int bind_object(struct req *r, const json_t *ref, json_t *ki)
{
	const char *kind = obj_str(ref, "kind"), *api = obj_str(ref, "apiVersion");
	const char *name = obj_str(ref, "name"), *want = obj_str(ref, "uid");
	const char *slash = api ? strchr(api, '/') : NULL;
	char group[128] = "";
	if (slash)
		snprintf(group, sizeof(group), "%.*s", (int)(slash - api), api);
	static const struct {
		const char *kind, *plural, *claim;
		bool namespaced;
	} kinds[] = {{"Pod", "pods", "pod", true},
		     {"Node", "nodes", "node", false},
		     {"Secret", "secrets", "secret", true}};
	size_t k = 0;
	while (k < KB_ARRAY_SIZE(kinds) && (group[0] || !kind || strcmp(kind, kinds[k].kind) != 0))
		k++;
	if (k == KB_ARRAY_SIZE(kinds)) {
		/* Go's GroupVersionKind.String(): "GROUP/VERSION, Kind=KIND" */
		reply_statusf(r, 400, "BadRequest",
			      "cannot bind token to object of type %s/%s, Kind=%s", group,
			      slash ? slash + 1 : (api ? api : ""), kind ? kind : "");
		return -1;
	}
	const struct proxy_resource *res = resource_find("", "v1", kinds[k].plural);
	json_t *obj = NULL;
	if (!res || !name || !*name ||
	    store_get(r->px->store, res->store_key, kinds[k].namespaced ? r->ns : "", name, &obj) <
		0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s \"%s\" not found", kinds[k].plural,
			 name ? name : "");
		reply_status(
		    r, 404, "NotFound", msg,
		    json_pack("{s:s,s:s}", "name", name ? name : "", "kind", kinds[k].plural));
		return -1;
	}
	const char *uid = obj_str(obj, "metadata.uid") ? obj_str(obj, "metadata.uid") : "";
	const char *sa = obj_str(obj, "spec.serviceAccountName");
	int rc = -1;
	if (k == 0 && strcmp(sa ? sa : "default", r->name) != 0) {
		reply_statusf(r, 400, "BadRequest",
			      "cannot bind token for serviceaccount \"%s\" to pod running with "
			      "different serviceaccount name.",
			      r->name);
		goto out;
	}
	if (want && *want && strcmp(want, uid) != 0) {
		char msg[700];
		snprintf(
		    msg, sizeof(msg),
		    "Operation cannot be fulfilled on %s \"%s\": the UID in the bound object "
		    "reference (%s) does not match the UID in record. The object might have been "
		    "deleted and then recreated",
		    kinds[k].kind, name, want);
		reply_status(r, 409, "Conflict", msg,
			     json_pack("{s:s,s:s}", "name", name, "kind", kinds[k].kind));
		goto out;
	}
	json_object_set_new(ki, kinds[k].claim, json_pack("{s:s,s:s}", "name", name, "uid", uid));
	const char *node = k == 0 ? obj_str(obj, "spec.nodeName") : NULL;
	if (node && *node) {
		json_t *n = NULL, *claim = json_pack("{s:s}", "name", node);
		const struct proxy_resource *nres = resource_find("", "v1", "nodes");
		if (nres && store_get(r->px->store, nres->store_key, "", node, &n) == 0 &&
		    obj_str(n, "metadata.uid"))
			json_object_set_new(claim, "uid", json_string(obj_str(n, "metadata.uid")));
		json_decref(n);
		json_object_set_new(ki, "node", claim);
	}
	rc = 0;
out:
	json_decref(obj);
	return rc;
}

void auth_token_request(struct req *r)
{
	json_t *body = NULL, *sa = NULL, *claims = NULL;
	if (strcmp(r->http->method, "POST") != 0) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	if (decode(r, "k8s.io.api.authentication.v1.TokenRequest", &body) < 0)
		return;
	int rc = store_get(r->px->store, r->res->store_key, r->ns, r->name, &sa);
	if (rc < 0) {
		reply_errno(r, rc, r->name);
		goto out;
	}
	json_t *spec = json_object_get(body, "spec");
	json_int_t secs = json_integer_value(json_object_get(spec, "expirationSeconds"));
	if (!secs)
		secs = TOKEN_DEFAULT_SECONDS;
	if (secs < TOKEN_MIN_SECONDS) {
		reply_invalid(r, "TokenRequest", r->name,
			      json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueInvalid", "message",
					"may not specify a duration less than 10 minutes", "field",
					"spec.expirationSeconds"));
		goto out;
	}
	if (secs > TOKEN_MAX_SECONDS)
		secs = TOKEN_MAX_SECONDS;
	json_t *aud = json_object_get(spec, "audiences");
	aud = json_array_size(aud) ? json_incref(aud) : json_pack("[s]", SA_ISSUER);
	claims = token_claims(sa, aud, (long)secs, r->now);
	const json_t *ref = json_object_get(spec, "boundObjectRef");
	if (json_is_object(ref) &&
	    bind_object(r, ref, json_object_get(claims, "kubernetes.io")) < 0) {
		json_decref(aud);
		goto out;
	}
	char *jwt = jwt_sign(r->px->sa_key, claims);
	if (!jwt) {
		json_decref(aud);
		reply_errno(r, -EIO, r->name);
		goto out;
	}
	char exp[40];
	kb_time_rfc3339(r->now + (time_t)secs, exp, sizeof(exp));
	json_t *resp = json_pack(
	    "{s:s,s:s,s:{s:s,s:s,s:s},s:{s:O,s:I},s:{s:s,s:s}}", "kind", "TokenRequest",
	    "apiVersion", "authentication.k8s.io/v1", "metadata", "name", r->name, "namespace",
	    r->ns, "creationTimestamp", exp, "spec", "audiences", aud, "expirationSeconds", secs,
	    "status", "token", jwt, "expirationTimestamp", exp);
	json_object_del(json_object_get(resp, "metadata"), "creationTimestamp");
	if (json_is_object(ref)) /* kube answers the request's spec */
		json_object_set(json_object_get(resp, "spec"), "boundObjectRef", (json_t *)ref);
	reply_json(r, 201, resp);
	json_decref(resp);
	json_decref(aud);
	free(jwt);
out:
	json_decref(claims);
	json_decref(sa);
	json_decref(body);
}

/* For the syncer (through cmd/main.c): the same token a TokenRequest with no
 * audiences would return, bound to the service account's uid. */
int proxy_issue_sa_token(proxy_t *px, const char *ns, const char *sa, long ttl_seconds, char **jwt)
{
	json_t *obj = NULL;
	const struct proxy_resource *res = resource_find("", "v1", "serviceaccounts");
	*jwt = NULL;
	if (!res || !ns || !sa || ttl_seconds < TOKEN_MIN_SECONDS ||
	    ttl_seconds > TOKEN_MAX_SECONDS)
		return -EINVAL;
	int rc = store_get(px->store, res->store_key, ns, sa, &obj);
	if (rc < 0)
		return rc;
	if (obj_str(obj, "metadata.deletionTimestamp") || !obj_str(obj, "metadata.uid")) {
		json_decref(obj);
		return -ENOENT;
	}
	json_t *aud = json_pack("[s]", SA_ISSUER);
	json_t *claims = token_claims(obj, aud, ttl_seconds, time(NULL));
	*jwt = jwt_sign(px->sa_key, claims);
	json_decref(claims);
	json_decref(aud);
	json_decref(obj);
	return *jwt ? 0 : -EIO;
}

/* For the syncer: the token of a pod's projected serviceAccountToken source,
 * as the kubelet's TokenRequest for it (pkg/volume/projected): the pod's
 * account, the source's audience (none: the API's), its expiration within
 * the TokenRequest bounds, bound to the pod (name and uid). */
int proxy_issue_pod_token(proxy_t *px, const char *ns, const char *sa, const char *audience,
			  long ttl_seconds, const char *pod, const char *pod_uid, char **jwt,
			  long *ttl_out)
{
	json_t *obj = NULL;
	const struct proxy_resource *res = resource_find("", "v1", "serviceaccounts");
	*jwt = NULL;
	if (!res || !ns || !sa || !pod || !pod_uid)
		return -EINVAL;
	long secs = ttl_seconds < TOKEN_MIN_SECONDS   ? TOKEN_MIN_SECONDS
		    : ttl_seconds > TOKEN_MAX_SECONDS ? TOKEN_MAX_SECONDS
						      : ttl_seconds;
	int rc = store_get(px->store, res->store_key, ns, sa, &obj);
	if (rc < 0)
		return rc;
	if (obj_str(obj, "metadata.deletionTimestamp") || !obj_str(obj, "metadata.uid")) {
		json_decref(obj);
		return -ENOENT;
	}
	json_t *aud = json_pack("[s]", audience && *audience ? audience : SA_ISSUER);
	json_t *claims = token_claims(obj, aud, secs, time(NULL));
	json_object_set_new(json_object_get(claims, "kubernetes.io"), "pod",
			    json_pack("{s:s,s:s}", "name", pod, "uid", pod_uid));
	*jwt = jwt_sign(px->sa_key, claims);
	*ttl_out = secs;
	json_decref(claims);
	json_decref(aud);
	json_decref(obj);
	return *jwt ? 0 : -EIO;
}

/* ---- the CLI's side: tokens in a tenant's store -------------------------- */

static int user_tokens(store_t *st, const char *user, json_t **out)
{
	char key[400], *val = NULL;
	snprintf(key, sizeof(key), "token-user/%s", user);
	*out = store_kv_get(st, key, &val) == 0 ? json_loads(val, 0, NULL) : NULL;
	free(val);
	if (!json_is_array(*out)) {
		json_decref(*out);
		*out = json_array();
	}
	return *out ? 0 : -ENOMEM;
}

static int kv_set_json(store_t *st, const char *key, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);
	int rc = s ? store_kv_set(st, key, s) : -ENOMEM;
	free(s);
	return rc;
}

int proxy_token_add(store_t *st, const char *token, const char *user, const char *const *groups,
		    size_t ngroups, long ttl_seconds)
{
	char hex[65], key[80];
	token_hash(token, hex);
	snprintf(key, sizeof(key), "token/%s", hex);
	json_t *g = json_array(), *list = NULL;
	for (size_t i = 0; i < ngroups; i++)
		json_array_append_new(g, json_string(groups[i]));
	json_t *t = json_pack("{s:s,s:o,s:I,s:I}", "user", user, "groups", g, "exp",
			      (json_int_t)(ttl_seconds > 0 ? time(NULL) + ttl_seconds : 0),
			      "created", (json_int_t)time(NULL));
	int rc = kv_set_json(st, key, t);
	if (rc == 0 && (rc = user_tokens(st, user, &list)) == 0) {
		json_array_append_new(list, json_string(hex));
		char ukey[400];
		snprintf(ukey, sizeof(ukey), "token-user/%s", user);
		rc = kv_set_json(st, ukey, list);
	}
	json_decref(list);
	json_decref(t);
	return rc;
}

static int revoke_hash(store_t *st, const char *hex)
{
	char key[80], *val = NULL;
	snprintf(key, sizeof(key), "token/%s", hex);
	if (store_kv_get(st, key, &val) < 0)
		return -ENOENT;
	json_t *t = json_loads(val, 0, NULL);
	free(val);
	if (!t)
		return -EINVAL;
	bool was = json_is_true(json_object_get(t, "revoked"));
	json_object_set_new(t, "revoked", json_true());
	int rc = kv_set_json(st, key, t);
	json_decref(t);
	return rc < 0 ? rc : was ? 0 : 1;
}

int proxy_token_revoke(store_t *st, const char *token, const char *user)
{
	if (token) {
		char hex[65];
		token_hash(token, hex);
		return revoke_hash(st, hex);
	}
	json_t *list = NULL;
	int rc = user_tokens(st, user, &list), n = 0;
	size_t i;
	json_t *h;
	json_array_foreach (list, i, h) {
		int one = revoke_hash(st, json_string_value(h));
		if (one > 0)
			n++;
	}
	json_decref(list);
	return rc < 0 ? rc : n;
}
