/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NetworkPolicies, tenant to host: a row of the mirrored-kind engine
 * (mirror.c, syncer_impl.h). Every tenant NetworkPolicy gets a host
 * NetworkPolicy of its translated name in the host namespace, updated and
 * deleted with it, as vCluster's networkpolicies syncer does
 * (pkg/controllers/resources/networkpolicies/translate.go, translateSpec):
 * the host pods of all a tenant's namespaces live in one host namespace, so
 * namespaces become the kubicle.dev/namespace label every host pod carries.
 *
 * DESIGN
 * The translation (syncer_translate_netpol) never lets a tenant reach
 * further on the host than its own pods and what the platform allows:
 * - spec.podSelector: the tenant's, plus kubicle.dev/tenant and
 *   kubicle.dev/namespace (the policy's namespace), so it selects that
 *   namespace's host pods only.
 * - A peer's podSelector without namespaceSelector: likewise, in the
 *   policy's namespace.
 * - A namespaceSelector: evaluated against the tenant's Namespaces
 *   (x->namespaces, refreshed by the syncer's resync): the peer selects the
 *   tenant's host pods whose kubicle.dev/namespace is one of them (`In`),
 *   or all the tenant's pods for an empty selector; a selector matching no
 *   namespace drops the peer. Never a namespaceSelector on the host: the
 *   tenant's pods are all in the host namespace, and other namespaces are
 *   other tenants' or the platform's.
 * - An ipBlock: clipped to the CIDRs the platform allows the tenant
 *   (x->egress_allowed: the ipBlocks of the platform's NetworkPolicy
 *   kubicle-TENANT-egress, cmd/hostquota.c), one host ipBlock per allowed
 *   block it meets, with the excepts of both; none: the peer is dropped.
 * - A rule without peers (all sources or destinations): the tenant's own
 *   pods plus the allowed blocks, never the whole host network.
 * - A rule whose peers were all dropped is dropped (an empty peer list
 *   would allow everything); what is left can only be narrower.
 * Selector terms on kubicle.dev/ keys are left out (the host sets those
 * labels itself). Ports are kept. policyTypes are written as kube defaults
 * them (validation.go's defaulting: Ingress, plus Egress when there are
 * egress rules) so that the host's defaulting changes nothing.
 *
 * The tenant owns the host object (SYNCER_MIRROR_HOST_RECREATED): one the
 * host deletes is made again. Nothing comes back to the tenant. A refused
 * create or update is a Warning event on the tenant policy.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "syncer/syncer_impl.h"

/* ---- CIDRs ---------------------------------------------------------------------- */

struct cidr {
	int family;
	unsigned char a[16];
	int bits;
};

static bool cidr_parse(const char *s, struct cidr *c)
{
	char buf[64];
	const char *slash = s ? strchr(s, '/') : NULL;
	if (!slash || (size_t)(slash - s) >= sizeof(buf))
		return false;
	snprintf(buf, sizeof(buf), "%.*s", (int)(slash - s), s);
	memset(c, 0, sizeof(*c));
	c->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(c->family, buf, c->a) != 1)
		return false;
	char *end;
	long bits = strtol(slash + 1, &end, 10);
	int max = c->family == AF_INET ? 32 : 128;
	if (!slash[1] || *end || bits < 0 || bits > max)
		return false;
	c->bits = (int)bits;
	return true;
}

static bool bit_at(const struct cidr *c, int i)
{
	return (c->a[i / 8] >> (7 - i % 8)) & 1;
}

/* Host bits zero. */
static bool canonical(const struct cidr *c)
{
	int max = c->family == AF_INET ? 32 : 128;
	for (int i = c->bits; i < max; i++)
		if (bit_at(c, i))
			return false;
	return true;
}

/* inner within outer (strict: and smaller). */
static bool within(const struct cidr *in, const struct cidr *out, bool strict)
{
	if (in->family != out->family || in->bits < out->bits || (strict && in->bits == out->bits))
		return false;
	for (int i = 0; i < out->bits; i++)
		if (bit_at(in, i) != bit_at(out, i))
			return false;
	return true;
}

bool syncer_cidr_valid(const char *s)
{
	struct cidr c;
	return cidr_parse(s, &c) && canonical(&c);
}

bool syncer_cidr_within(const char *inner, const char *outer, bool strict)
{
	struct cidr a, b;
	return cidr_parse(inner, &a) && cidr_parse(outer, &b) && within(&a, &b, strict);
}

/* Adds to `except` (array) each CIDR of `from` strictly within cidr c;
 * false when one of them covers c whole (the block is then empty). */
static bool add_excepts(json_t *except, const json_t *from, const struct cidr *c)
{
	size_t i;
	json_t *e;
	json_array_foreach (from, i, e) {
		struct cidr ec;
		if (!cidr_parse(json_string_value(e), &ec))
			continue;
		if (within(c, &ec, false))
			return false;
		if (within(&ec, c, true))
			json_array_append(except, e);
	}
	return true;
}

/* The part of tenant ipBlock `tb` within allowed ipBlock `ab`, appended to
 * `out` as a peer; nothing when they do not meet. */
static void clip_one(json_t *out, const json_t *tb, const json_t *ab)
{
	struct cidr t, a;
	if (!cidr_parse(jstr(tb, "cidr"), &t) || !cidr_parse(jstr(ab, "cidr"), &a))
		return;
	const struct cidr *c = within(&t, &a, false) ? &t : within(&a, &t, true) ? &a : NULL;
	if (!c)
		return;
	json_t *except = json_array();
	bool some = add_excepts(except, json_object_get(tb, "except"), c) &&
		    add_excepts(except, json_object_get(ab, "except"), c);
	if (some) {
		json_t *blk =
		    json_pack("{s:s}", "cidr", c == &t ? jstr(tb, "cidr") : jstr(ab, "cidr"));
		if (json_array_size(except))
			json_object_set(blk, "except", except);
		json_array_append_new(out, json_pack("{s:o}", "ipBlock", blk));
	}
	json_decref(except);
}

static void clip(json_t *out, const json_t *tb, const json_t *allowed)
{
	size_t i;
	json_t *ab;
	json_array_foreach (allowed, i, ab)
		clip_one(out, tb, ab);
}

/* ---- selectors ------------------------------------------------------------------- */

static bool ours_key(const char *k)
{
	return kb_str_has_prefix(k, "kubicle.dev/");
}

static bool in_values(const json_t *vals, const char *v)
{
	size_t i;
	json_t *e;
	json_array_foreach (vals, i, e) {
		if (v && json_string_value(e) && strcmp(json_string_value(e), v) == 0)
			return true;
	}
	return false;
}

/* Whether label selector sel (kube's LabelSelector) matches `labels`. */
static bool sel_match(const json_t *sel, const json_t *labels)
{
	const char *k;
	json_t *v, *e;
	size_t i;
	json_object_foreach ((json_t *)json_object_get(sel, "matchLabels"), k, v) {
		const char *have = jstr(labels, k);
		if (!have || !json_string_value(v) || strcmp(have, json_string_value(v)) != 0)
			return false;
	}
	json_array_foreach (json_object_get(sel, "matchExpressions"), i, e) {
		const char *key = jstr(e, "key"), *op = jstr(e, "operator");
		const char *have = key ? jstr(labels, key) : NULL;
		const json_t *vals = json_object_get(e, "values");
		bool ok = op && ((strcmp(op, "In") == 0 && in_values(vals, have)) ||
				 (strcmp(op, "NotIn") == 0 && !in_values(vals, have)) ||
				 (strcmp(op, "Exists") == 0 && have) ||
				 (strcmp(op, "DoesNotExist") == 0 && !have));
		if (!ok)
			return false;
	}
	return true;
}

static bool sel_empty(const json_t *sel)
{
	return json_object_size(json_object_get(sel, "matchLabels")) == 0 &&
	       json_array_size(json_object_get(sel, "matchExpressions")) == 0;
}

/* The tenant's selector (may be NULL) without kubicle.dev/ terms, plus
 * kubicle.dev/tenant and, when ns is given, kubicle.dev/namespace. */
static json_t *host_selector(const struct syncer_xlate *x, const json_t *sel, const char *ns)
{
	json_t *ml = json_object(), *me = json_array(), *v, *e;
	const char *k;
	size_t i;
	json_object_foreach ((json_t *)json_object_get(sel, "matchLabels"), k, v) {
		if (!ours_key(k))
			json_object_set(ml, k, v);
	}
	json_array_foreach (json_object_get(sel, "matchExpressions"), i, e) {
		if (!jstr(e, "key") || !ours_key(jstr(e, "key")))
			json_array_append(me, e);
	}
	json_object_set_new(ml, LBL_TENANT, json_string(x->tenant));
	if (ns)
		json_object_set_new(ml, LBL_NAMESPACE, json_string(ns));
	json_t *out = json_pack("{s:o}", "matchLabels", ml);
	if (json_array_size(me))
		json_object_set(out, "matchExpressions", me);
	json_decref(me);
	return out;
}

/* ---- peers and rules ------------------------------------------------------------- */

/* The tenant namespaces namespaceSelector nsel matches, as an array of
 * names (new reference). */
static json_t *namespaces_of(const struct syncer_xlate *x, const json_t *nsel)
{
	json_t *names = json_array(), *n;
	size_t i;
	json_array_foreach (x->namespaces, i, n) {
		const json_t *meta = json_object_get(n, "metadata");
		if (jstr(meta, "name") && sel_match(nsel, json_object_get(meta, "labels")))
			json_array_append_new(names, json_string(jstr(meta, "name")));
	}
	return names;
}

/* A peer with a namespaceSelector: the tenant's pods of the namespaces it
 * matches (and its podSelector), appended to out; nothing when none. */
static void ns_peer(const struct syncer_xlate *x, json_t *out, const json_t *peer)
{
	const json_t *nsel = json_object_get(peer, "namespaceSelector");
	json_t *sel = host_selector(x, json_object_get(peer, "podSelector"), NULL);
	if (!sel_empty(nsel)) {
		json_t *names = namespaces_of(x, nsel);
		if (json_array_size(names) == 0) {
			json_decref(names);
			json_decref(sel);
			return;
		}
		json_t *me = json_object_get(sel, "matchExpressions");
		if (!me) {
			me = json_array();
			json_object_set_new(sel, "matchExpressions", me);
		}
		json_array_append_new(me, json_pack("{s:s,s:s,s:o}", "key", LBL_NAMESPACE,
						    "operator", "In", "values", names));
	}
	json_array_append_new(out, json_pack("{s:o}", "podSelector", sel));
}

/* The host peers of a rule's tenant peers (NULL or empty: all). */
static json_t *peers(const struct syncer_xlate *x, const json_t *tpeers, const char *ns)
{
	json_t *out = json_array(), *p;
	size_t i;
	if (json_array_size(tpeers) == 0) {
		json_array_append_new(
		    out, json_pack("{s:o}", "podSelector", host_selector(x, NULL, NULL)));
		json_array_foreach (x->egress_allowed, i, p)
			json_array_append_new(out, json_pack("{s:O}", "ipBlock", p));
		return out;
	}
	json_array_foreach (tpeers, i, p) {
		if (json_object_get(p, "ipBlock"))
			clip(out, json_object_get(p, "ipBlock"), x->egress_allowed);
		else if (json_object_get(p, "namespaceSelector"))
			ns_peer(x, out, p);
		else if (json_object_get(p, "podSelector"))
			json_array_append_new(
			    out,
			    json_pack("{s:o}", "podSelector",
				      host_selector(x, json_object_get(p, "podSelector"), ns)));
	}
	return out;
}

/* spec.ingress or spec.egress (`dir`, peers under `key`) translated. */
static json_t *rules(const struct syncer_xlate *x, const json_t *list, const char *key,
		     const char *ns)
{
	json_t *out = json_array(), *r;
	size_t i;
	json_array_foreach (list, i, r) {
		json_t *hp = peers(x, json_object_get(r, key), ns);
		if (json_array_size(hp) == 0) {
			json_decref(hp);
			continue;
		}
		json_t *hr = json_pack("{s:o}", key, hp);
		if (json_object_get(r, "ports"))
			json_object_set_new(hr, "ports",
					    json_deep_copy(json_object_get(r, "ports")));
		json_array_append_new(out, hr);
	}
	return out;
}

/* kube's default of policyTypes: Ingress, and Egress with egress rules. */
static json_t *policy_types(const json_t *ts)
{
	const json_t *pt = json_object_get(ts, "policyTypes");
	if (json_array_size(pt))
		return json_deep_copy(pt);
	json_t *out = json_pack("[s]", "Ingress");
	if (json_array_size(json_object_get(ts, "egress")))
		json_array_append_new(out, json_string("Egress"));
	return out;
}

/* x->egress_allowed, or the blocks of the platform's egress policy in the
 * mirror's host cache (new reference). */
static json_t *allowed_blocks(const struct syncer_xlate *x)
{
	if (x->egress_allowed)
		return json_incref((json_t *)x->egress_allowed);
	char name[128];
	snprintf(name, sizeof(name), "kubicle-%s-egress", x->tenant);
	return syncer_netpol_allowed(x->netpols ? syncer_mirror_host_any(*x->netpols, name) : NULL,
				     x->tenant);
}

json_t *syncer_translate_netpol(const struct syncer_xlate *xl, const json_t *np)
{
	const json_t *tmeta = json_object_get(np, "metadata"), *ts = json_object_get(np, "spec");
	const char *ns = jstr(tmeta, "namespace");
	json_t *meta = syncer_host_meta(xl, tmeta, "NetworkPolicy");
	if (!meta || !ns) {
		json_decref(meta);
		return NULL;
	}
	json_t *allowed = allowed_blocks(xl);
	struct syncer_xlate xc = *xl;
	xc.egress_allowed = allowed;
	const struct syncer_xlate *x = &xc;
	json_t *spec = json_pack("{s:o,s:o}", "podSelector",
				 host_selector(x, json_object_get(ts, "podSelector"), ns),
				 "policyTypes", policy_types(ts));
	if (json_object_get(ts, "ingress"))
		json_object_set_new(spec, "ingress",
				    rules(x, json_object_get(ts, "ingress"), "from", ns));
	if (json_object_get(ts, "egress"))
		json_object_set_new(spec, "egress",
				    rules(x, json_object_get(ts, "egress"), "to", ns));
	json_decref(allowed);
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "networking.k8s.io/v1", "kind",
			 "NetworkPolicy", "metadata", meta, "spec", spec);
}

/* ---- the mirrored kind ----------------------------------------------------------- */

/* A JSON merge patch (RFC 7386) from have to want: removed keys null,
 * objects compared key by key, anything else replaced. New reference, NULL
 * when equal. */
static json_t *merge_diff(const json_t *have, const json_t *want)
{
	if (!json_is_object(have) || !json_is_object(want))
		return json_equal(have, want) ? NULL : json_deep_copy(want);
	json_t *out = json_object(), *v;
	const char *k;
	json_object_foreach ((json_t *)have, k, v) {
		if (!json_object_get(want, k))
			json_object_set_new(out, k, json_null());
	}
	json_object_foreach ((json_t *)want, k, v) {
		json_t *d = merge_diff(json_object_get(have, k), v);
		if (d)
			json_object_set_new(out, k, d);
	}
	if (json_object_size(out) == 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

json_t *syncer_netpol_update_patch(const json_t *want, const json_t *have, const json_t *prev)
{
	json_t *pmeta = syncer_meta_patch(want, have, prev);
	json_t *pspec = merge_diff(json_object_get(have, "spec"), json_object_get(want, "spec"));
	json_t *patch = json_object();
	if (json_object_size(pmeta))
		json_object_set(patch, "metadata", pmeta);
	if (pspec)
		json_object_set(patch, "spec", pspec);
	json_decref(pmeta);
	json_decref(pspec);
	if (json_object_size(patch) == 0) {
		json_decref(patch);
		return NULL;
	}
	return patch;
}

static json_t *copy_back(const json_t *host, json_t *tenant)
{
	(void)host;
	(void)tenant;
	return NULL; /* the host sets nothing a tenant policy shows */
}

static size_t *tracked(struct syncer_stats *st)
{
	return &st->netpols;
}

const struct syncer_mirror_kind syncer_netpol_kind = {
    .res = "networking.k8s.io/networkpolicies",
    .kind = "NetworkPolicy",
    .plural = "networkpolicies",
    .api = "/apis/networking.k8s.io/v1",
    .noun = "network policy",
    .create_refused = "the creation of network policy",
    .host_deleted = SYNCER_MIRROR_HOST_RECREATED,
    .update_refusal_event = true,
    .translate = syncer_translate_netpol,
    .update_patch = syncer_netpol_update_patch,
    .copy_back = copy_back,
    .tracked = tracked,
};

void syncer_netpol_isolation(const json_t *policies, const json_t *pod, bool *ingress, bool *egress)
{
	const json_t *pm = json_object_get(pod, "metadata");
	const char *ns = jstr(pm, "namespace");
	json_t *np, *t;
	size_t i, j;
	*ingress = *egress = false;
	json_array_foreach (policies, i, np) {
		const json_t *spec = json_object_get(np, "spec");
		const char *pns = jstr(json_object_get(np, "metadata"), "namespace");
		if (!ns || !pns || strcmp(ns, pns) != 0 ||
		    !sel_match(json_object_get(spec, "podSelector"), json_object_get(pm, "labels")))
			continue;
		json_t *types = policy_types(spec);
		json_array_foreach (types, j, t) {
			const char *v = json_string_value(t);
			*ingress = *ingress || (v && strcmp(v, "Ingress") == 0);
			*egress = *egress || (v && strcmp(v, "Egress") == 0);
		}
		json_decref(types);
	}
}

json_t *syncer_netpol_allowed(const json_t *egress_policy, const char *tenant)
{
	json_t *out = json_array(), *r, *p;
	size_t i, j;
	const json_t *labels =
	    json_object_get(json_object_get(egress_policy, "metadata"), "labels");
	if (!egress_policy || !tenant || !jstr(labels, LBL_TENANT) ||
	    strcmp(jstr(labels, LBL_TENANT), tenant) != 0)
		return out;
	json_array_foreach (json_object_get(json_object_get(egress_policy, "spec"), "egress"), i,
			    r) {
		json_array_foreach (json_object_get(r, "to"), j, p) {
			const json_t *b = json_object_get(p, "ipBlock");
			if (b && syncer_cidr_valid(jstr(b, "cidr")))
				json_array_append(out, (json_t *)b);
		}
	}
	return out;
}
