/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The EndpointSlice controller, as kube-controller-manager's: every Service
 * with a selector (not ExternalName) gets EndpointSlices named
 * "<service>-<5 chars>", labelled kubernetes.io/service-name and
 * endpointslice.kubernetes.io/managed-by (plus the service's labels and the
 * headless label) and controlled by the Service. One slice set per address
 * type of the service (its ipFamilies) and per set of resolved ports; at
 * most 100 endpoints a slice. Each pod with an IP of the type, terminating
 * ones included, is an endpoint: addresses, conditions (serving = Ready,
 * terminating = being deleted, ready = serving and not terminating, or
 * always with publishNotReadyAddresses), hostname, nodeName, targetRef.
 * A service without endpoints keeps one empty placeholder slice.
 * Churn: an endpoint stays in the slice that holds it, new ones fill the
 * existing slices before a new one is made, slices are updated in place and
 * written only when they change; slices left empty are deleted.
 * Deviations: no topology (zone, hints) and no skipping of pods whose node
 * is unknown (tenant nodes are virtual); slices owned by another manager
 * (the mirroring controller's) are left alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"

#define EPS_MANAGER    "endpointslice-controller"
#define EPS_MANAGED_BY "endpointslice-controller.k8s.io"
#define L_SERVICE      "kubernetes.io/service-name"
#define L_MANAGED      "endpointslice.kubernetes.io/managed-by"
#define L_HEADLESS     "service.kubernetes.io/headless"
#define MAX_PER_SLICE  100

/* ---- pure pieces --------------------------------------------------------------- */

json_t *ctrl_eps_endpoint(const json_t *pod, const json_t *svc, bool v6)
{
	const char *ip = ctrl_ep_pod_ip(pod, v6);
	if (!ip)
		return NULL;
	bool serving = ctrl_ep_pod_ready(pod);
	bool terminating = ctrl_path(pod, "metadata.deletionTimestamp") != NULL;
	bool ready = json_is_true(ctrl_path(svc, "spec.publishNotReadyAddresses")) ||
		     (serving && !terminating);
	json_t *ep = json_pack("{s:[s],s:{s:b,s:b,s:b}}", "addresses", ip, "conditions", "ready",
			       ready, "serving", serving, "terminating", terminating);
	const char *h = ctrl_ep_hostname(pod, svc);
	if (h)
		json_object_set_new(ep, "hostname", json_string(h));
	const char *node = json_string_value(ctrl_path(pod, "spec.nodeName"));
	if (node && *node)
		json_object_set_new(ep, "nodeName", json_string(node));
	json_object_set_new(ep, "targetRef", ctrl_ep_target_ref(pod));
	return ep;
}

json_t *ctrl_eps_ports(const json_t *svc, const json_t *pod)
{
	json_t *out = json_array();
	size_t i;
	json_t *sp;
	json_array_foreach (ctrl_path(svc, "spec.ports"), i, sp) {
		int n;
		if (ctrl_ep_find_port(pod, sp, &n) < 0)
			continue;
		const char *name = json_string_value(json_object_get(sp, "name"));
		const char *proto = json_string_value(json_object_get(sp, "protocol"));
		json_t *p = json_pack("{s:s,s:i,s:s}", "name", name ? name : "", "port", n,
				      "protocol", proto ? proto : "TCP");
		json_t *ap = json_object_get(sp, "appProtocol");
		if (json_is_string(ap))
			json_object_set(p, "appProtocol", ap);
		json_array_append_new(out, p);
	}
	return out;
}

/* ---- desired state --------------------------------------------------------------- */

/* The address types of a service: its ipFamilies, else its clusterIP's
 * family, else (headless) both. New array reference. */
static json_t *address_types(const json_t *svc)
{
	json_t *out = json_array();
	size_t i;
	json_t *f;
	json_array_foreach (ctrl_path(svc, "spec.ipFamilies"), i, f) {
		const char *s = json_string_value(f);
		if (s && (strcmp(s, "IPv4") == 0 || strcmp(s, "IPv6") == 0))
			json_array_append(out, f);
	}
	if (json_array_size(out))
		return out;
	const char *cip = json_string_value(ctrl_path(svc, "spec.clusterIP"));
	if (cip && *cip && strcmp(cip, "None") != 0) {
		json_array_append_new(out, json_string(ctrl_ep_is_v6(cip) ? "IPv6" : "IPv4"));
		return out;
	}
	json_array_append_new(out, json_string("IPv4"));
	json_array_append_new(out, json_string("IPv6"));
	return out;
}

/* A slice group's key: address type and canonical ports. malloc'ed. */
static char *group_key(const char *type, const json_t *ports)
{
	char *p = json_dumps(ports ? ports : json_array(), JSON_SORT_KEYS | JSON_COMPACT);
	size_t n = strlen(type) + (p ? strlen(p) : 0) + 2;
	char *k = malloc(n);
	if (k)
		snprintf(k, n, "%s|%s", type, p ? p : "");
	free(p);
	return k;
}

/* groups: key -> {"type", "ports", "eps": [...], "slices": [...]} */
static json_t *group_at(json_t *groups, const char *type, const json_t *ports)
{
	char *k = group_key(type, ports);
	json_t *g = k ? json_object_get(groups, k) : NULL;
	if (k && !g) {
		g = json_pack("{s:s,s:O,s:[],s:[]}", "type", type, "ports", ports, "eps", "slices");
		json_object_set_new(groups, k, g);
	}
	free(k);
	return g;
}

static json_t *desired_groups(const json_t *svc, const json_t *pods, const json_t *types)
{
	json_t *groups = json_object();
	size_t t, i;
	json_t *type, *pod;
	json_array_foreach (types, t, type) {
		bool v6 = strcmp(json_string_value(type), "IPv6") == 0;
		json_array_foreach (pods, i, pod) {
			if (!ctrl_ep_pod_included(pod, true))
				continue;
			json_t *ep = ctrl_eps_endpoint(pod, svc, v6);
			if (!ep)
				continue;
			json_t *ports = ctrl_eps_ports(svc, pod);
			json_t *g = group_at(groups, json_string_value(type), ports);
			json_array_append_new(json_object_get(g, "eps"), ep);
			json_decref(ports);
		}
	}
	return groups;
}

/* ---- writes ------------------------------------------------------------------------- */

static json_t *slice_labels(const json_t *svc)
{
	json_t *l = json_object();
	const char *k;
	json_t *v;
	json_object_foreach (ctrl_path(svc, "metadata.labels"), k, v)
		if (strcmp(k, L_SERVICE) != 0 && strcmp(k, L_MANAGED) != 0 &&
		    strcmp(k, L_HEADLESS) != 0)
			json_object_set(l, k, v);
	const char *cip = json_string_value(ctrl_path(svc, "spec.clusterIP"));
	if (!cip || !*cip || strcmp(cip, "None") == 0)
		json_object_set_new(l, L_HEADLESS, json_string(""));
	json_object_set_new(l, L_SERVICE, json_string(ctrl_name(svc)));
	json_object_set_new(l, L_MANAGED, json_string(EPS_MANAGED_BY));
	return l;
}

static json_t *service_ref(const json_t *svc)
{
	return json_pack("[{s:s,s:s,s:s,s:s,s:b,s:b}]", "apiVersion", "v1", "kind", "Service",
			 "name", ctrl_name(svc), "uid", ctrl_uid(svc), "controller", 1,
			 "blockOwnerDeletion", 1);
}

struct eps_ctx {
	struct ctrl *c;
	const json_t *svc;
	json_t *labels, *refs;
	char trigger[40];
	int rc;
};

/* Creates (cur NULL) or updates a slice when it differs from what it
 * should hold. */
static void slice_put(struct eps_ctx *x, const json_t *cur, const char *type, const json_t *ports,
		      const json_t *eps)
{
	if (cur && kb_json_same(ctrl_path(cur, "metadata.labels"), x->labels) &&
	    kb_json_same(ctrl_path(cur, "metadata.ownerReferences"), x->refs) &&
	    kb_json_same(json_object_get(cur, "endpoints"), eps) &&
	    kb_json_same(json_object_get(cur, "ports"), ports))
		return;
	char gen[300];
	snprintf(gen, sizeof(gen), "%s-", ctrl_name(x->svc));
	json_t *o = cur ? json_deep_copy(cur)
			: json_pack("{s:{s:s,s:s}}", "metadata", "generateName", gen, "namespace",
				    ctrl_ns(x->svc));
	json_t *m = json_object_get(o, "metadata");
	json_object_set_new(o, "apiVersion", json_string("discovery.k8s.io/v1"));
	json_object_set_new(o, "kind", json_string("EndpointSlice"));
	json_object_set_new(o, "addressType", json_string(type));
	json_object_set(o, "endpoints", (json_t *)eps);
	json_object_set(o, "ports", (json_t *)ports);
	json_object_set(m, "labels", x->labels);
	json_object_set(m, "ownerReferences", x->refs);
	json_object_set_new(kb_json_object_at(m, "annotations"),
			    "endpoints.kubernetes.io/last-change-trigger-time",
			    json_string(x->trigger));
	int rc = cur ? proxy_object_update(x->c->px, "discovery.k8s.io", "v1", "endpointslices", o,
					   EPS_MANAGER, NULL)
		     : proxy_object_create(x->c->px, "discovery.k8s.io", "v1", "endpointslices", o,
					   EPS_MANAGER, NULL);
	json_decref(o);
	if (rc < 0 && !(rc == -EPERM && !cur) && x->rc == 0)
		x->rc = rc;
}

static void slice_delete(struct eps_ctx *x, const json_t *s)
{
	int rc = proxy_object_delete(x->c->px, "discovery.k8s.io", "v1", "endpointslices",
				     ctrl_ns(s), ctrl_name(s), ctrl_uid(s), NULL, EPS_MANAGER);
	if (rc < 0 && rc != -ENOENT && x->rc == 0)
		x->rc = rc;
}

static const char *ep_uid(const json_t *ep)
{
	const char *u = json_string_value(ctrl_path(ep, "targetRef.uid"));
	return u ? u : json_string_value(json_array_get(json_object_get(ep, "addresses"), 0));
}

/* Endpoints already in a slice stay there; new ones fill the slices with
 * room, then new slices. Slices left empty are added to `stale`. */
static void fill_group(struct eps_ctx *x, const json_t *g, json_t *stale)
{
	json_t *want = json_object(), *keep = json_array();
	const json_t *slices = json_object_get(g, "slices"), *eps = json_object_get(g, "eps");
	const char *type = json_string_value(json_object_get(g, "type"));
	size_t i, j;
	json_t *s, *e;
	json_array_foreach (eps, i, e)
		json_object_set(want, ep_uid(e) ? ep_uid(e) : "", e);
	json_array_foreach (slices, i, s) {
		json_t *k = json_array();
		json_array_foreach (json_object_get(s, "endpoints"), j, e) {
			json_t *d = ep_uid(e) ? json_object_get(want, ep_uid(e)) : NULL;
			if (d && json_array_size(k) < MAX_PER_SLICE) {
				json_array_append(k, d);
				json_object_del(want, ep_uid(e));
			}
		}
		json_array_append_new(keep, k);
	}
	size_t next = 0;
	json_array_foreach (eps, i, e) {
		if (!ep_uid(e) || !json_object_get(want, ep_uid(e)))
			continue;
		while (next < json_array_size(keep) &&
		       json_array_size(json_array_get(keep, next)) >= MAX_PER_SLICE)
			next++;
		if (next == json_array_size(keep))
			json_array_append_new(keep, json_array());
		json_array_append(json_array_get(keep, next), e);
	}
	json_array_foreach (keep, i, e) {
		const json_t *cur = json_array_get(slices, i);
		if (json_array_size(e) == 0)
			json_array_append(stale, (json_t *)cur);
		else
			slice_put(x, cur, type, json_object_get(g, "ports"), e);
	}
	json_decref(keep);
	json_decref(want);
}

/* A type without endpoints keeps one empty slice: a stale one is reused. */
static void placeholder(struct eps_ctx *x, const char *type, json_t *stale)
{
	json_t *empty = json_array();
	size_t i;
	json_t *s;
	json_array_foreach (stale, i, s) {
		const char *t = json_string_value(json_object_get(s, "addressType"));
		if (t && strcmp(t, type) == 0) {
			slice_put(x, s, type, empty, empty);
			json_array_remove(stale, i);
			json_decref(empty);
			return;
		}
	}
	slice_put(x, NULL, type, empty, empty);
	json_decref(empty);
}

/* The slices this controller made for service ns/name. New array. */
static json_t *managed_slices(struct ctrl *c, const char *ns, const char *name)
{
	json_t *all = ctrl_list(c, "discovery.k8s.io/endpointslices", ns);
	json_t *out = json_array();
	size_t i;
	json_t *s;
	json_array_foreach (all, i, s) {
		json_t *l = ctrl_path(s, "metadata.labels");
		const char *svc = json_string_value(json_object_get(l, L_SERVICE));
		const char *by = json_string_value(json_object_get(l, L_MANAGED));
		if (svc && by && strcmp(svc, name) == 0 && strcmp(by, EPS_MANAGED_BY) == 0)
			json_array_append(out, s);
	}
	json_decref(all);
	return out;
}

static bool owned_by(const json_t *slice, const json_t *svc)
{
	size_t i;
	json_t *r;
	json_array_foreach (ctrl_path(slice, "metadata.ownerReferences"), i, r) {
		const char *uid = json_string_value(json_object_get(r, "uid"));
		const char *kind = json_string_value(json_object_get(r, "kind"));
		if (uid && kind && strcmp(uid, ctrl_uid(svc)) == 0 && strcmp(kind, "Service") == 0)
			return true;
	}
	return false;
}

static bool type_in(const json_t *types, const char *t)
{
	size_t i;
	json_t *v;
	json_array_foreach (types, i, v)
		if (t && strcmp(json_string_value(v), t) == 0)
			return true;
	return false;
}

/* Sorts existing slices into their groups; the others become stale. */
static void place_existing(const json_t *svc, const json_t *slices, const json_t *types,
			   json_t *groups, json_t *stale)
{
	size_t i;
	json_t *s;
	json_array_foreach (slices, i, s) {
		const char *t = json_string_value(json_object_get(s, "addressType"));
		char *k = NULL;
		json_t *g = NULL;
		if (owned_by(s, svc) && type_in(types, t)) {
			json_t *ports = json_object_get(s, "ports");
			json_t *none = json_array();
			k = group_key(t, ports ? ports : none);
			json_decref(none);
			g = k ? json_object_get(groups, k) : NULL;
		}
		json_array_append(g ? json_object_get(g, "slices") : stale, s);
		free(k);
	}
}

static void reconcile(struct eps_ctx *x, const json_t *pods, json_t *slices)
{
	json_t *types = address_types(x->svc);
	json_t *groups = desired_groups(x->svc, pods, types);
	json_t *stale = json_array();
	place_existing(x->svc, slices, types, groups, stale);
	const char *k;
	json_t *g, *t;
	json_object_foreach (groups, k, g)
		fill_group(x, g, stale);
	size_t i;
	json_array_foreach (types, i, t) {
		bool has = false;
		json_object_foreach (groups, k, g)
			has |= strcmp(json_string_value(json_object_get(g, "type")),
				      json_string_value(t)) == 0;
		if (!has)
			placeholder(x, json_string_value(t), stale);
	}
	json_t *s;
	json_array_foreach (stale, i, s)
		slice_delete(x, s);
	json_decref(stale);
	json_decref(groups);
	json_decref(types);
}

int ctrl_eps_sync(struct ctrl *c, const char *ns, const char *name)
{
	json_t *svc = ctrl_get(c, "/services", ns, name);
	json_t *slices = managed_slices(c, ns, name);
	struct eps_ctx x = {.c = c, .svc = svc};
	size_t i;
	json_t *s;
	if (!svc || ctrl_path(svc, "metadata.deletionTimestamp")) {
		json_array_foreach (slices, i, s)
			slice_delete(&x, s);
	} else if (ctrl_ep_managed(svc)) {
		json_t *pods = ctrl_ep_selected_pods(c, svc);
		x.labels = slice_labels(svc);
		x.refs = service_ref(svc);
		ctrl_ep_trigger_time(svc, pods, x.trigger, sizeof(x.trigger));
		reconcile(&x, pods, slices);
		json_decref(x.labels);
		json_decref(x.refs);
		json_decref(pods);
	}
	json_decref(slices);
	json_decref(svc);
	return x.rc;
}
