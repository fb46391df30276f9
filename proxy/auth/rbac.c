/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RBAC rule evaluation and the in-memory index of roles and bindings (see
 * rbac.h). Matching follows k8s.io/kubernetes pkg/apis/rbac/v1 helpers:
 * "*" matches everything in its field, a rule resource "x/y" matches the
 * subresource y of x, "*\/y" matches subresource y of any resource, empty
 * resourceNames match every name, and a nonResourceURL ending in "*" is a
 * prefix.
 */
#include "proxy/auth/rbac.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small chained hash table: string key -> pointer ----------------- */

struct hnode {
	struct hnode *next;
	char *key;
	void *val;
};

struct htab {
	struct hnode **b;
	size_t nb, n;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static int ht_grow(struct htab *t)
{
	size_t nb = t->nb ? t->nb * 2 : 64;
	struct hnode **b = calloc(nb, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < t->nb; i++) {
		struct hnode *e = t->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			size_t k = hash_str(e->key) & (nb - 1);
			e->next = b[k];
			b[k] = e;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return 0;
}

static void *ht_get(const struct htab *t, const char *key)
{
	if (!t->nb)
		return NULL;
	for (struct hnode *e = t->b[hash_str(key) & (t->nb - 1)]; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e->val;
	return NULL;
}

/* Sets key -> val; *old gets a replaced value (or NULL). */
static int ht_set(struct htab *t, const char *key, void *val, void **old)
{
	*old = NULL;
	if ((t->n + 1) * 2 > t->nb && ht_grow(t) < 0)
		return -ENOMEM;
	struct hnode **slot = &t->b[hash_str(key) & (t->nb - 1)];
	for (struct hnode *e = *slot; e; e = e->next) {
		if (strcmp(e->key, key) == 0) {
			*old = e->val;
			e->val = val;
			return 0;
		}
	}
	struct hnode *e = malloc(sizeof(*e));
	char *k = strdup(key);
	if (!e || !k) {
		free(e);
		free(k);
		return -ENOMEM;
	}
	e->key = k;
	e->val = val;
	e->next = *slot;
	*slot = e;
	t->n++;
	return 0;
}

/* Removes key; returns its value or NULL. */
static void *ht_del(struct htab *t, const char *key)
{
	if (!t->nb)
		return NULL;
	for (struct hnode **p = &t->b[hash_str(key) & (t->nb - 1)]; *p; p = &(*p)->next) {
		struct hnode *e = *p;
		if (strcmp(e->key, key) == 0) {
			void *v = e->val;
			*p = e->next;
			free(e->key);
			free(e);
			t->n--;
			return v;
		}
	}
	return NULL;
}

static void ht_clear(struct htab *t, void (*free_val)(void *))
{
	for (size_t i = 0; i < t->nb; i++) {
		struct hnode *e = t->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			if (free_val)
				free_val(e->val);
			free(e->key);
			free(e);
		}
	}
	free(t->b);
	memset(t, 0, sizeof(*t));
}

/* ---- compiled rules ------------------------------------------------------ */

struct strset {
	const char **v; /* borrowed from the role's JSON (kept alive by it) */
	uint32_t n;
	bool all; /* holds "*" */
};

struct crule {
	struct strset verbs, groups, resources, names, urls;
};

struct role {
	json_t *rules; /* owned reference: the JSON rules the sets point into */
	struct crule *r;
	size_t n;
};

struct binding {
	char *ns;       /* "" for ClusterRoleBindings */
	char *role_key; /* "ns/name" or "/name" of the referenced role */
	char **users;   /* user names (service accounts resolved) */
	char **groups;
	size_t nusers, ngroups;
	char *desc;        /* kube's describer: `RoleBinding "n/ns" of Role "r"` */
	char **user_descs; /* per user: `User "u"` or `ServiceAccount "sa/ns"` */
};

/* A growable list of bindings for one subject. */
struct blist {
	struct binding **v;
	size_t n, cap;
};

struct rbac_index {
	struct htab roles;    /* "ns/name" ("/name" for cluster roles) -> role */
	struct htab bindings; /* "ns/name" ("/name" for CRBs) -> binding */
	size_t counts[4];
	bool subj_dirty;
	struct htab by_user; /* name -> blist */
	struct htab by_group;
};

static bool str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool set_has(const struct strset *s, const char *x)
{
	if (s->all)
		return true;
	for (uint32_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], x) == 0)
			return true;
	return false;
}

static int set_compile(struct strset *s, const json_t *arr)
{
	size_t n = json_array_size(arr), i;
	json_t *v;
	s->v = n ? calloc(n, sizeof(*s->v)) : NULL;
	if (n && !s->v)
		return -ENOMEM;
	s->n = 0;
	json_array_foreach (arr, i, v) {
		const char *str = json_string_value(v);
		if (!str)
			continue;
		if (strcmp(str, "*") == 0)
			s->all = true;
		s->v[s->n++] = str;
	}
	return 0;
}

static void role_free(void *p)
{
	struct role *ro = p;
	if (!ro)
		return;
	for (size_t i = 0; i < ro->n; i++) {
		free(ro->r[i].verbs.v);
		free(ro->r[i].groups.v);
		free(ro->r[i].resources.v);
		free(ro->r[i].names.v);
		free(ro->r[i].urls.v);
	}
	free(ro->r);
	json_decref(ro->rules);
	free(ro);
}

static struct role *role_compile(const json_t *rules)
{
	struct role *ro = calloc(1, sizeof(*ro));
	if (!ro)
		return NULL;
	ro->rules = json_is_array(rules) ? json_incref((json_t *)rules) : json_array();
	size_t n = json_array_size(ro->rules), i;
	ro->r = n ? calloc(n, sizeof(*ro->r)) : NULL;
	if (n && !ro->r)
		goto fail;
	json_t *rule;
	json_array_foreach (ro->rules, i, rule) {
		struct crule *c = &ro->r[ro->n++];
		if (set_compile(&c->verbs, json_object_get(rule, "verbs")) < 0 ||
		    set_compile(&c->groups, json_object_get(rule, "apiGroups")) < 0 ||
		    set_compile(&c->resources, json_object_get(rule, "resources")) < 0 ||
		    set_compile(&c->names, json_object_get(rule, "resourceNames")) < 0 ||
		    set_compile(&c->urls, json_object_get(rule, "nonResourceURLs")) < 0)
			goto fail;
	}
	return ro;
fail:
	role_free(ro);
	return NULL;
}

/* ---- matching ------------------------------------------------------------ */

static bool resource_matches(const struct strset *s, const char *res, const char *sub)
{
	bool has_sub = sub && *sub;
	size_t rlen = strlen(res), slen = has_sub ? strlen(sub) : 0;
	for (uint32_t i = 0; i < s->n; i++) {
		const char *r = s->v[i];
		if (strcmp(r, "*") == 0)
			return true;
		if (!has_sub) {
			if (strcmp(r, res) == 0)
				return true;
			continue;
		}
		/* "pods/log" against pods + log */
		if (strncmp(r, res, rlen) == 0 && r[rlen] == '/' && strcmp(r + rlen + 1, sub) == 0)
			return true;
		/* "*\/log" against any resource's log */
		if (r[0] == '*' && r[1] == '/' && strlen(r) == slen + 2 && strcmp(r + 2, sub) == 0)
			return true;
	}
	return false;
}

static bool url_matches(const struct strset *s, const char *path)
{
	for (uint32_t i = 0; i < s->n; i++) {
		const char *u = s->v[i];
		size_t n = strlen(u);
		if (strcmp(u, "*") == 0 || strcmp(u, path) == 0)
			return true;
		if (n && u[n - 1] == '*' && strncmp(u, path, n - 1) == 0)
			return true;
	}
	return false;
}

static bool crule_allows(const struct crule *c, const struct rbac_attrs *a)
{
	if (!set_has(&c->verbs, a->verb))
		return false;
	if (!a->resource_request)
		return url_matches(&c->urls, a->path ? a->path : "");
	if (!set_has(&c->groups, a->api_group ? a->api_group : ""))
		return false;
	if (!resource_matches(&c->resources, a->resource ? a->resource : "", a->subresource))
		return false;
	return c->names.n == 0 || (a->name && *a->name && set_has(&c->names, a->name));
}

bool rbac_rule_allows(const json_t *rule, const struct rbac_attrs *a)
{
	json_t *arr = json_pack("[O]", rule);
	struct role *ro = role_compile(arr);
	json_decref(arr);
	bool ok = ro && ro->n == 1 && crule_allows(&ro->r[0], a);
	role_free(ro);
	return ok;
}

/* ---- bindings and subjects -------------------------------------------- */

static void binding_free(void *p)
{
	struct binding *b = p;
	if (!b)
		return;
	for (size_t i = 0; i < b->nusers; i++)
		free(b->users[i]);
	for (size_t i = 0; i < b->ngroups; i++)
		free(b->groups[i]);
	for (size_t i = 0; b->user_descs && i < b->nusers; i++)
		free(b->user_descs[i]);
	free(b->users);
	free(b->user_descs);
	free(b->groups);
	free(b->desc);
	free(b->ns);
	free(b->role_key);
	free(b);
}

/* A formatted copy (free it), or NULL. */
static char *str_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *str_fmt(const char *fmt, ...)
{
	va_list ap;
	char *out = NULL;
	va_start(ap, fmt);
	int n = vasprintf(&out, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : out;
}

/* The user name a subject stands for, or the group name; NULL to skip.
 * desc (optional) gets kube's describeSubject of it. */
static char *subject_name(const json_t *s, const char *ns, bool *is_group, char **desc)
{
	const char *kind = json_string_value(json_object_get(s, "kind"));
	const char *name = json_string_value(json_object_get(s, "name"));
	char buf[600];
	if (!kind || !name)
		return NULL;
	*is_group = strcmp(kind, "Group") == 0;
	if (strcmp(kind, "User") == 0 || *is_group) {
		if (desc)
			*desc = str_fmt("%s \"%s\"", kind, name);
		return strdup(name);
	}
	if (strcmp(kind, "ServiceAccount") != 0)
		return NULL;
	const char *sns = json_string_value(json_object_get(s, "namespace"));
	if (!sns || !*sns)
		sns = ns;
	if (!sns || !*sns)
		return NULL;
	if (desc)
		*desc = str_fmt("ServiceAccount \"%s/%s\"", name, sns);
	snprintf(buf, sizeof(buf), "system:serviceaccount:%s:%s", sns, name);
	return strdup(buf);
}

static struct binding *binding_compile(const json_t *obj, const char *ns, bool cluster)
{
	struct binding *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	const json_t *ref = json_object_get(obj, "roleRef");
	const char *rk = json_string_value(json_object_get(ref, "kind"));
	const char *rn = json_string_value(json_object_get(ref, "name"));
	char key[600];
	bool role_is_cluster = cluster || (rk && strcmp(rk, "ClusterRole") == 0);
	snprintf(key, sizeof(key), "%s/%s", role_is_cluster ? "" : ns, rn ? rn : "");
	b->ns = strdup(cluster ? "" : ns);
	b->role_key = strdup(key);
	const char *bn =
	    json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	if (cluster)
		b->desc = str_fmt("ClusterRoleBinding \"%s\" of %s \"%s\"", bn ? bn : "",
				  rk ? rk : "", rn ? rn : "");
	else
		b->desc = str_fmt("RoleBinding \"%s/%s\" of %s \"%s\"", bn ? bn : "", ns,
				  rk ? rk : "", rn ? rn : "");
	const json_t *subs = json_object_get(obj, "subjects");
	size_t n = json_array_size(subs), i;
	b->users = calloc(n + 1, sizeof(char *));
	b->user_descs = calloc(n + 1, sizeof(char *));
	b->groups = calloc(n + 1, sizeof(char *));
	if (!b->ns || !b->role_key || !b->desc || !b->users || !b->user_descs || !b->groups)
		goto fail;
	json_t *s;
	json_array_foreach (subs, i, s) {
		bool grp = false;
		char *desc = NULL;
		char *nm = subject_name(s, cluster ? "" : ns, &grp, &desc);
		if (!nm)
			continue;
		if (grp) {
			free(desc);
			b->groups[b->ngroups++] = nm;
		} else if (!desc) {
			free(nm);
			goto fail;
		} else {
			b->user_descs[b->nusers] = desc;
			b->users[b->nusers++] = nm;
		}
	}
	return b;
fail:
	binding_free(b);
	return NULL;
}

bool rbac_subject_matches(const json_t *subject, const char *ns, const char *user,
			  const char *const *groups, size_t ngroups)
{
	bool grp = false;
	char *nm = subject_name(subject, ns, &grp, NULL);
	bool ok = false;
	if (!nm)
		return false;
	if (!grp)
		ok = str_eq(nm, user);
	for (size_t i = 0; grp && i < ngroups && !ok; i++)
		ok = strcmp(nm, groups[i]) == 0;
	free(nm);
	return ok;
}

static void blist_free(void *p)
{
	struct blist *l = p;
	if (l)
		free(l->v);
	free(l);
}

static int blist_add(struct htab *t, const char *key, struct binding *b)
{
	struct blist *l = ht_get(t, key);
	if (!l) {
		void *old;
		l = calloc(1, sizeof(*l));
		if (!l || ht_set(t, key, l, &old) < 0) {
			free(l);
			return -ENOMEM;
		}
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4;
		struct binding **v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = b;
	return 0;
}

static int subjects_rebuild(rbac_index_t *ix)
{
	ht_clear(&ix->by_user, blist_free);
	ht_clear(&ix->by_group, blist_free);
	for (size_t i = 0; i < ix->bindings.nb; i++) {
		for (struct hnode *e = ix->bindings.b[i]; e; e = e->next) {
			struct binding *b = e->val;
			for (size_t k = 0; k < b->nusers; k++)
				if (blist_add(&ix->by_user, b->users[k], b) < 0)
					return -ENOMEM;
			for (size_t k = 0; k < b->ngroups; k++)
				if (blist_add(&ix->by_group, b->groups[k], b) < 0)
					return -ENOMEM;
		}
	}
	ix->subj_dirty = false;
	return 0;
}

/* ---- the index ----------------------------------------------------------- */

rbac_index_t *rbac_index_new(void)
{
	return calloc(1, sizeof(struct rbac_index));
}

void rbac_index_free(rbac_index_t *ix)
{
	if (!ix)
		return;
	ht_clear(&ix->roles, role_free);
	ht_clear(&ix->bindings, binding_free);
	ht_clear(&ix->by_user, blist_free);
	ht_clear(&ix->by_group, blist_free);
	free(ix);
}

static void obj_key(char *buf, size_t len, enum rbac_kind kind, const char *ns, const char *name)
{
	bool cluster = kind == RBAC_CLUSTERROLE || kind == RBAC_CLUSTERROLEBINDING;
	snprintf(buf, len, "%s/%s", cluster || !ns ? "" : ns, name ? name : "");
}

int rbac_index_put(rbac_index_t *ix, enum rbac_kind kind, const json_t *obj)
{
	const json_t *m = json_object_get(obj, "metadata");
	const char *name = json_string_value(json_object_get(m, "name"));
	const char *ns = json_string_value(json_object_get(m, "namespace"));
	if (!name)
		return -EINVAL;
	char key[600];
	obj_key(key, sizeof(key), kind, ns, name);
	bool is_role = kind == RBAC_ROLE || kind == RBAC_CLUSTERROLE;
	void *val =
	    is_role ? (void *)role_compile(json_object_get(obj, "rules"))
		    : (void *)binding_compile(obj, ns ? ns : "", kind == RBAC_CLUSTERROLEBINDING);
	if (!val)
		return -ENOMEM;
	void *old = NULL;
	struct htab *t = is_role ? &ix->roles : &ix->bindings;
	if (ht_set(t, key, val, &old) < 0) {
		is_role ? role_free(val) : binding_free(val);
		return -ENOMEM;
	}
	if (old)
		is_role ? role_free(old) : binding_free(old);
	else
		ix->counts[kind]++;
	if (!is_role)
		ix->subj_dirty = true;
	return 0;
}

void rbac_index_del(rbac_index_t *ix, enum rbac_kind kind, const char *ns, const char *name)
{
	char key[600];
	obj_key(key, sizeof(key), kind, ns, name);
	bool is_role = kind == RBAC_ROLE || kind == RBAC_CLUSTERROLE;
	void *old = ht_del(is_role ? &ix->roles : &ix->bindings, key);
	if (!old)
		return;
	ix->counts[kind]--;
	if (is_role) {
		role_free(old);
	} else {
		binding_free(old);
		ix->subj_dirty = true;
	}
}

const json_t *rbac_role_rules(rbac_index_t *ix, bool cluster, const char *ns, const char *name)
{
	char key[600];
	obj_key(key, sizeof(key), cluster ? RBAC_CLUSTERROLE : RBAC_ROLE, ns, name);
	const struct role *ro = ht_get(&ix->roles, key);
	return ro ? ro->rules : NULL;
}

size_t rbac_index_count(const rbac_index_t *ix, enum rbac_kind kind)
{
	return ix->counts[kind];
}

/* Whether binding b applies in namespace ns (cluster bindings everywhere). */
static bool binding_in_scope(const struct binding *b, const char *ns)
{
	return !b->ns[0] || (ns && strcmp(b->ns, ns) == 0);
}

/* The first binding of l whose role allows a, or NULL. */
static const struct binding *list_allows(rbac_index_t *ix, const struct blist *l,
					 const struct rbac_attrs *a)
{
	for (size_t i = 0; l && i < l->n; i++) {
		const struct binding *b = l->v[i];
		if (!binding_in_scope(b, a->ns))
			continue;
		const struct role *ro = ht_get(&ix->roles, b->role_key);
		for (size_t k = 0; ro && k < ro->n; k++)
			if (crule_allows(&ro->r[k], a))
				return b;
	}
	return NULL;
}

bool rbac_allowed(rbac_index_t *ix, const struct rbac_attrs *a, char *why, size_t len)
{
	if (ix->subj_dirty && subjects_rebuild(ix) < 0)
		return false;
	const char *user = a->user ? a->user : "";
	const struct binding *b = list_allows(ix, ht_get(&ix->by_user, user), a);
	if (b) {
		for (size_t k = 0; why && k < b->nusers; k++)
			if (strcmp(b->users[k], user) == 0) {
				snprintf(why, len, "RBAC: allowed by %s to %s", b->desc,
					 b->user_descs[k]);
				break;
			}
		return true;
	}
	for (size_t i = 0; i < a->ngroups; i++)
		if ((b = list_allows(ix, ht_get(&ix->by_group, a->groups[i]), a))) {
			if (why)
				snprintf(why, len, "RBAC: allowed by %s to Group \"%s\"", b->desc,
					 a->groups[i]);
			return true;
		}
	return false;
}

static void append_rules(rbac_index_t *ix, const struct blist *l, const char *ns, json_t *out,
			 struct htab *seen)
{
	for (size_t i = 0; l && i < l->n; i++) {
		const struct binding *b = l->v[i];
		void *old;
		if (!binding_in_scope(b, ns))
			continue;
		char k[32];
		snprintf(k, sizeof(k), "%p", (const void *)b);
		if (ht_get(seen, k))
			continue;
		ht_set(seen, k, (void *)b, &old);
		const struct role *ro = ht_get(&ix->roles, b->role_key);
		if (ro)
			json_array_extend(out, ro->rules);
	}
}

json_t *rbac_rules_for(rbac_index_t *ix, const char *user, const char *const *groups,
		       size_t ngroups, const char *ns)
{
	json_t *out = json_array();
	struct htab seen = {0};
	if (ix->subj_dirty && subjects_rebuild(ix) < 0)
		return out;
	append_rules(ix, ht_get(&ix->by_user, user ? user : ""), ns, out, &seen);
	for (size_t i = 0; i < ngroups; i++)
		append_rules(ix, ht_get(&ix->by_group, groups[i]), ns, out, &seen);
	ht_clear(&seen, NULL);
	return out;
}

/* ---- escalation: does one set of rules cover another --------------------- */

static bool arr_has(const json_t *arr, const char *x)
{
	size_t i;
	json_t *v;
	json_array_foreach (arr, i, v) {
		const char *s = json_string_value(v);
		if (s && (strcmp(s, "*") == 0 || strcmp(s, x) == 0))
			return true;
	}
	return false;
}

static bool arr_has_exact(const json_t *arr, const char *x)
{
	size_t i;
	json_t *v;
	json_array_foreach (arr, i, v)
		if (str_eq(json_string_value(v), x))
			return true;
	return false;
}

/* kube's resourceCoversAll: "*" covers all, then equality, a star-slash-sub
 * rule covers "x/sub", and "x/" followed by a star covers "x/y". */
static bool owner_covers_resource(const json_t *owner_res, const char *res)
{
	if (arr_has(owner_res, res))
		return true;
	const char *slash = strchr(res, '/');
	size_t i;
	json_t *v;
	json_array_foreach (owner_res, i, v) {
		const char *o = json_string_value(v);
		if (!o)
			continue;
		if (slash && o[0] == '*' && o[1] == '/' && strcmp(o + 1, slash) == 0)
			return true;
		size_t n = strlen(o);
		if (n >= 2 && strcmp(o + n - 2, "/*") == 0 && strncmp(o, res, n - 1) == 0)
			return true;
	}
	return false;
}

static bool owner_covers_url(const json_t *urls, const char *url)
{
	size_t i;
	json_t *v;
	json_array_foreach (urls, i, v) {
		const char *u = json_string_value(v);
		if (!u)
			continue;
		size_t n = strlen(u);
		if (strcmp(u, "*") == 0 || strcmp(u, url) == 0)
			return true;
		if (n && u[n - 1] == '*' && strncmp(u, url, n - 1) == 0)
			return true;
	}
	return false;
}

/* One atomic servant rule: a verb, and either (group, resource, name) or url. */
struct atom {
	const char *verb, *group, *res, *name, *url;
};

static bool rule_covers_atom(const json_t *o, const struct atom *a)
{
	if (!arr_has(json_object_get(o, "verbs"), a->verb))
		return false;
	if (a->url)
		return owner_covers_url(json_object_get(o, "nonResourceURLs"), a->url);
	if (!arr_has(json_object_get(o, "apiGroups"), a->group))
		return false;
	if (!owner_covers_resource(json_object_get(o, "resources"), a->res))
		return false;
	const json_t *names = json_object_get(o, "resourceNames");
	if (json_array_size(names) == 0)
		return true;
	return a->name && arr_has_exact(names, a->name);
}

static bool owner_covers_atom(const json_t *owner, const struct atom *a)
{
	size_t i;
	json_t *o;
	json_array_foreach (owner, i, o)
		if (rule_covers_atom(o, a))
			return true;
	return false;
}

static void add_missing(json_t **missing, const struct atom *a)
{
	if (!missing)
		return;
	if (!*missing)
		*missing = json_array();
	json_t *r = json_pack("{s:[s]}", "verbs", a->verb);
	if (a->url) {
		json_object_set_new(r, "nonResourceURLs", json_pack("[s]", a->url));
	} else {
		json_object_set_new(r, "apiGroups", json_pack("[s]", a->group));
		json_object_set_new(r, "resources", json_pack("[s]", a->res));
		if (a->name)
			json_object_set_new(r, "resourceNames", json_pack("[s]", a->name));
	}
	json_array_append_new(*missing, r);
}

static const char *nth(const json_t *arr, size_t i)
{
	return json_string_value(json_array_get(arr, i));
}

static bool covers_rule(const json_t *owner, const json_t *s, json_t **missing)
{
	const json_t *verbs = json_object_get(s, "verbs"),
		     *groups = json_object_get(s, "apiGroups"),
		     *res = json_object_get(s, "resources"),
		     *names = json_object_get(s, "resourceNames"),
		     *urls = json_object_get(s, "nonResourceURLs");
	bool ok = true;
	for (size_t v = 0; v < json_array_size(verbs); v++) {
		for (size_t u = 0; u < json_array_size(urls); u++) {
			struct atom a = {.verb = nth(verbs, v), .url = nth(urls, u)};
			if (a.verb && a.url && !owner_covers_atom(owner, &a)) {
				ok = false;
				add_missing(missing, &a);
			}
		}
		for (size_t g = 0; g < json_array_size(groups); g++) {
			for (size_t r = 0; r < json_array_size(res); r++) {
				size_t nn = json_array_size(names);
				for (size_t n = 0; n < (nn ? nn : 1); n++) {
					struct atom a = {.verb = nth(verbs, v),
							 .group = nth(groups, g),
							 .res = nth(res, r),
							 .name = nn ? nth(names, n) : NULL};
					if (!a.verb || !a.group || !a.res)
						continue;
					if (!owner_covers_atom(owner, &a)) {
						ok = false;
						add_missing(missing, &a);
					}
				}
			}
		}
	}
	return ok;
}

bool rbac_covers(const json_t *owner, const json_t *servant, json_t **missing)
{
	bool ok = true;
	size_t i;
	json_t *s;
	if (missing)
		*missing = NULL;
	json_array_foreach (servant, i, s)
		if (!covers_rule(owner, s, missing))
			ok = false;
	return ok;
}
