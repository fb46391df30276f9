/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Endpoints controller, as kube-controller-manager's: every Service
 * with a selector (and not of type ExternalName) gets an Endpoints object
 * of its name listing the pods that match the selector and have an IP of
 * the service's first IP family: Ready pods in addresses, others in
 * notReadyAddresses (all in addresses with publishNotReadyAddresses, which
 * also keeps terminating pods), each with its node, a targetRef and the
 * pod's hostname when its subdomain is the service. Ports are the service
 * ports with targetPort resolved per pod (a named port that a pod lacks
 * leaves that pod out of that port). Subsets are repacked as kube's
 * RepackSubsets: addresses grouped by the set of ports they share.
 * The object is written only when its subsets or labels change. Services
 * without a selector keep their user-made Endpoints; a deleted Service
 * loses its Endpoints, and at start Endpoints without a Service are removed
 * (kube's checkLeftoverEndpoints).
 * Deviations: ports and subsets are sorted by their canonical JSON where
 * kube sorts by an md5 of Go's struct dump (same grouping, stable order);
 * no truncation at 1000 addresses (over-capacity annotation).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"

#define EP_MANAGER "endpoint-controller"

/* ---- pure pieces ------------------------------------------------------------ */

const char *ctrl_ep_hostname(const json_t *pod, const json_t *svc)
{
	const char *h = json_string_value(ctrl_path(pod, "spec.hostname"));
	const char *sub = json_string_value(ctrl_path(pod, "spec.subdomain"));
	const char *name = ctrl_name(svc);
	if (!h || !*h || !sub || !name || strcmp(sub, name) != 0)
		return NULL;
	return strcmp(ctrl_ns(pod), ctrl_ns(svc)) == 0 ? h : NULL;
}

static const char *str_or(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : dflt;
}

/* A named port among one container list's ports (name and protocol). */
static bool find_named(const json_t *containers, const char *name, const char *proto,
		       bool sidecars_only, int *out)
{
	size_t i, j;
	json_t *c, *p;
	json_array_foreach (containers, i, c) {
		const char *rp = json_string_value(json_object_get(c, "restartPolicy"));
		if (sidecars_only && (!rp || strcmp(rp, "Always") != 0))
			continue;
		json_array_foreach (json_object_get(c, "ports"), j, p)
			if (strcmp(str_or(p, "name", ""), name) == 0 &&
			    strcmp(str_or(p, "protocol", "TCP"), proto) == 0) {
				*out = (int)json_integer_value(json_object_get(p, "containerPort"));
				return true;
			}
	}
	return false;
}

int ctrl_ep_find_port(const json_t *pod, const json_t *svc_port, int *out)
{
	json_t *tp = json_object_get(svc_port, "targetPort");
	if (!tp)
		tp = json_object_get(svc_port, "port");
	if (json_is_integer(tp)) {
		*out = (int)json_integer_value(tp);
		return 0;
	}
	const char *name = json_string_value(tp);
	const char *proto = str_or(svc_port, "protocol", "TCP");
	if (!name)
		return -ENOENT;
	if (find_named(ctrl_path(pod, "spec.containers"), name, proto, false, out) ||
	    find_named(ctrl_path(pod, "spec.initContainers"), name, proto, true, out))
		return 0;
	return -ENOENT;
}

bool ctrl_ep_pod_ready(const json_t *pod)
{
	json_t *cond = ctrl_get_condition(json_object_get(pod, "status"), "Ready");
	return strcmp(str_or(cond, "status", ""), "True") == 0;
}

bool ctrl_ep_pod_included(const json_t *pod, bool include_terminating)
{
	const char *ph = ctrl_pod_phase(pod);
	if (strcmp(ph, "Succeeded") == 0 || strcmp(ph, "Failed") == 0)
		return false;
	if (!*str_or(ctrl_path(pod, "status"), "podIP", "") &&
	    json_array_size(ctrl_path(pod, "status.podIPs")) == 0)
		return false;
	return include_terminating || !ctrl_path(pod, "metadata.deletionTimestamp");
}

bool ctrl_ep_is_v6(const char *ip)
{
	return ip && strchr(ip, ':') != NULL;
}

const char *ctrl_ep_pod_ip(const json_t *pod, bool v6)
{
	size_t i;
	json_t *p;
	json_array_foreach (ctrl_path(pod, "status.podIPs"), i, p) {
		const char *ip = str_or(p, "ip", "");
		if (*ip && ctrl_ep_is_v6(ip) == v6)
			return ip;
	}
	const char *ip = str_or(ctrl_path(pod, "status"), "podIP", "");
	return *ip && ctrl_ep_is_v6(ip) == v6 ? ip : NULL;
}

/* podToEndpointAddressForService: the family is the service's first one
 * (else its clusterIP's, else for headless the pod IP's). */
static bool svc_wants_v6(const json_t *svc, const json_t *pod)
{
	const char *fam = json_string_value(json_array_get(ctrl_path(svc, "spec.ipFamilies"), 0));
	if (fam)
		return strcmp(fam, "IPv6") == 0;
	const char *cip = json_string_value(ctrl_path(svc, "spec.clusterIP"));
	if (cip && *cip && strcmp(cip, "None") != 0)
		return ctrl_ep_is_v6(cip);
	return ctrl_ep_is_v6(json_string_value(ctrl_path(pod, "status.podIP")));
}

json_t *ctrl_ep_target_ref(const json_t *pod)
{
	return json_pack("{s:s,s:s,s:s,s:s}", "kind", "Pod", "namespace", ctrl_ns(pod), "name",
			 ctrl_name(pod) ? ctrl_name(pod) : "", "uid",
			 ctrl_uid(pod) ? ctrl_uid(pod) : "");
}

static json_t *pod_address(const json_t *svc, const json_t *pod)
{
	const char *ip = ctrl_ep_pod_ip(pod, svc_wants_v6(svc, pod));
	if (!ip)
		return NULL;
	json_t *a = json_pack("{s:s}", "ip", ip);
	const char *h = ctrl_ep_hostname(pod, svc);
	if (h)
		json_object_set_new(a, "hostname", json_string(h));
	const char *node = json_string_value(ctrl_path(pod, "spec.nodeName"));
	if (node && *node)
		json_object_set_new(a, "nodeName", json_string(node));
	json_object_set_new(a, "targetRef", ctrl_ep_target_ref(pod));
	return a;
}

/* The EndpointPort of a service port at number n. */
static json_t *endpoint_port(const json_t *sp, int n)
{
	json_t *p = json_pack("{s:i,s:s}", "port", n, "protocol", str_or(sp, "protocol", "TCP"));
	const char *name = str_or(sp, "name", "");
	if (*name)
		json_object_set_new(p, "name", json_string(name));
	json_t *ap = json_object_get(sp, "appProtocol");
	if (json_is_string(ap))
		json_object_set(p, "appProtocol", ap);
	return p;
}

/* addEndpointSubset: one subset of one address and at most one port. */
static void add_subset(json_t *subsets, json_t *addr, json_t *port, bool ready)
{
	json_t *ss = json_object();
	json_object_set_new(ss, ready ? "addresses" : "notReadyAddresses", json_pack("[O]", addr));
	if (port)
		json_object_set_new(ss, "ports", json_pack("[o]", port));
	json_array_append_new(subsets, ss);
}

json_t *ctrl_ep_subsets(const json_t *svc, const json_t *pods)
{
	json_t *subsets = json_array();
	bool publish = json_is_true(ctrl_path(svc, "spec.publishNotReadyAddresses"));
	const json_t *ports = ctrl_path(svc, "spec.ports");
	const char *cip = str_or(ctrl_path(svc, "spec"), "clusterIP", "");
	size_t i, j;
	json_t *pod, *sp;
	json_array_foreach (pods, i, pod) {
		if (!ctrl_ep_pod_included(pod, publish))
			continue;
		json_t *addr = pod_address(svc, pod);
		if (!addr)
			continue;
		bool ready = publish || ctrl_ep_pod_ready(pod);
		if (json_array_size(ports) == 0 && strcmp(cip, "None") == 0)
			add_subset(subsets, addr, NULL, ready);
		json_array_foreach (ports, j, sp) {
			int n;
			if (ctrl_ep_find_port(pod, sp, &n) == 0)
				add_subset(subsets, addr, endpoint_port(sp, n), ready);
		}
		json_decref(addr);
	}
	json_t *out = ctrl_ep_repack(subsets);
	json_decref(subsets);
	return out;
}

/* ---- RepackSubsets ------------------------------------------------------------ */

/* Addresses are the same when their IP and target uid are. */
static void addr_key(const json_t *a, char *buf, size_t len)
{
	snprintf(buf, len, "%s|%s", str_or(a, "ip", ""),
		 str_or(json_object_get(a, "targetRef"), "uid", ""));
}

static char *canon(const json_t *v)
{
	return json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
}

/* portToAddrReadyMap: port (canonical JSON, "" for no port) -> {addr key:
 * ready}; not ready wins over ready. */
static void map_by_port(json_t *by_port, json_t *all, const json_t *addrs, const char *pkey,
			bool ready)
{
	json_t *set = json_object_get(by_port, pkey);
	if (!set) {
		set = json_object();
		json_object_set_new(by_port, pkey, set);
	}
	size_t i;
	json_t *a;
	char k[400];
	json_array_foreach (addrs, i, a) {
		addr_key(a, k, sizeof(k));
		if (!json_object_get(all, k))
			json_object_set(all, k, a);
		json_t *was = json_object_get(set, k);
		if (!was || json_is_true(was))
			json_object_set_new(set, k, json_boolean(ready));
	}
}

/* The grouping key of an address set: its sorted "key=ready" entries. */
static char *set_signature(const json_t *set)
{
	size_t n = 0;
	const char **keys = kb_json_sorted_keys(set, &n);
	struct kb_buf b = {0};
	kb_buf_puts(&b, "");
	for (size_t i = 0; i < n; i++)
		kb_buf_printf(&b, "%s=%d;", keys[i], json_is_true(json_object_get(set, keys[i])));
	free(keys);
	return b.data;
}

static int addr_cmp(const void *x, const void *y)
{
	const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
	int c = strcmp(str_or(a, "ip", ""), str_or(b, "ip", ""));
	if (c)
		return c;
	return strcmp(str_or(json_object_get(a, "targetRef"), "uid", ""),
		      str_or(json_object_get(b, "targetRef"), "uid", ""));
}

static int canon_cmp(const void *x, const void *y)
{
	char *a = canon(*(json_t *const *)x), *b = canon(*(json_t *const *)y);
	int c = strcmp(a ? a : "", b ? b : "");
	free(a);
	free(b);
	return c;
}

/* One repacked subset from a group {"ports": [...], "set": {key: ready}}. */
static json_t *group_subset(const json_t *group, const json_t *all)
{
	json_t *ready = json_array(), *not_ready = json_array(), *ss = json_object();
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)json_object_get(group, "set"), k, v)
		json_array_append(json_is_true(v) ? ready : not_ready, json_object_get(all, k));
	kb_json_array_sort(ready, addr_cmp);
	kb_json_array_sort(not_ready, addr_cmp);
	if (json_array_size(ready))
		json_object_set(ss, "addresses", ready);
	if (json_array_size(not_ready))
		json_object_set(ss, "notReadyAddresses", not_ready);
	json_t *ports = json_object_get(group, "ports");
	if (json_array_size(ports)) {
		kb_json_array_sort(ports, canon_cmp);
		json_object_set(ss, "ports", ports);
	}
	json_decref(ready);
	json_decref(not_ready);
	return ss;
}

/* Maps the sets of addresses to the ports they offer. */
static json_t *group_ports(const json_t *by_port, const json_t *port_of)
{
	json_t *groups = json_object();
	const char *pk;
	json_t *set;
	json_object_foreach ((json_t *)by_port, pk, set) {
		char *sig = set_signature(set);
		json_t *g = json_object_get(groups, sig ? sig : "");
		if (!g) {
			g = json_pack("{s:[],s:O}", "ports", "set", set);
			json_object_set_new(groups, sig ? sig : "", g);
		}
		if (*pk)
			json_array_append(json_object_get(g, "ports"),
					  json_object_get(port_of, pk));
		free(sig);
	}
	return groups;
}

json_t *ctrl_ep_repack(const json_t *subsets)
{
	json_t *all = json_object(), *by_port = json_object(), *port_of = json_object();
	size_t i, j;
	json_t *ss, *p;
	json_array_foreach (subsets, i, ss) {
		const json_t *ports = json_object_get(ss, "ports");
		const json_t *ready = json_object_get(ss, "addresses");
		const json_t *nready = json_object_get(ss, "notReadyAddresses");
		if (json_array_size(ports) == 0) { /* kept under a sentinel, as kube */
			map_by_port(by_port, all, ready, "", true);
			map_by_port(by_port, all, nready, "", false);
		}
		json_array_foreach (ports, j, p) {
			char *pk = canon(p);
			json_object_set(port_of, pk ? pk : "?", p);
			map_by_port(by_port, all, ready, pk ? pk : "?", true);
			map_by_port(by_port, all, nready, pk ? pk : "?", false);
			free(pk);
		}
	}
	json_t *groups = group_ports(by_port, port_of);
	json_t *out = json_array();
	const char *k;
	json_t *g;
	json_object_foreach (groups, k, g) {
		json_t *s = group_subset(g, all);
		if (json_object_get(s, "addresses") || json_object_get(s, "notReadyAddresses"))
			json_array_append_new(out, s);
		else
			json_decref(s);
	}
	kb_json_array_sort(out, canon_cmp);
	json_decref(groups);
	json_decref(all);
	json_decref(by_port);
	json_decref(port_of);
	return out;
}

/* ---- the controller ------------------------------------------------------------- */

bool ctrl_ep_selects(const json_t *svc, const json_t *pod)
{
	const json_t *sel = ctrl_path(svc, "spec.selector"), *labels;
	const char *k;
	json_t *v;
	if (json_object_size(sel) == 0) /* the kubernetes Service's, among others */
		return false;
	labels = ctrl_path(pod, "metadata.labels");
	json_object_foreach ((json_t *)sel, k, v)
		if (!json_equal(json_object_get(labels, k), v))
			return false;
	return true;
}

bool ctrl_ep_managed(const json_t *svc)
{
	const char *type = json_string_value(ctrl_path(svc, "spec.type"));
	if (type && strcmp(type, "ExternalName") == 0)
		return false;
	return json_object_size(ctrl_path(svc, "spec.selector")) > 0;
}

json_t *ctrl_ep_selected_pods(struct ctrl *c, const json_t *svc)
{
	json_t *all = ctrl_list(c, "/pods", ctrl_ns(svc));
	json_t *out = json_array();
	size_t i;
	json_t *p;
	json_array_foreach (all, i, p)
		if (ctrl_ep_selects(svc, p))
			json_array_append(out, p);
	json_decref(all);
	return out;
}

void ctrl_ep_trigger_time(const json_t *svc, const json_t *pods, char *buf, size_t len)
{
	time_t t = ctrl_time(json_string_value(ctrl_path(svc, "metadata.creationTimestamp")));
	size_t i;
	json_t *p;
	json_array_foreach (pods, i, p) {
		json_t *cond = ctrl_get_condition(json_object_get(p, "status"), "Ready");
		time_t pt = ctrl_time(str_or(cond, "lastTransitionTime", NULL));
		if (pt > t)
			t = pt;
	}
	kb_time_rfc3339(t, buf, len);
}

/* The Endpoints labels: the service's, with the headless label for a
 * service without a cluster IP. New reference. */
static json_t *ep_labels(const json_t *svc)
{
	json_t *l = json_deep_copy(ctrl_path(svc, "metadata.labels"));
	if (!json_is_object(l)) {
		json_decref(l);
		l = json_object();
	}
	const char *cip = str_or(ctrl_path(svc, "spec"), "clusterIP", "");
	if (!*cip || strcmp(cip, "None") == 0)
		json_object_set_new(l, "service.kubernetes.io/headless", json_string(""));
	else
		json_object_del(l, "service.kubernetes.io/headless");
	return l;
}

static bool empty_same(const json_t *a, const json_t *b)
{
	bool ea = !a || (json_is_object(a) && json_object_size(a) == 0) ||
		  (json_is_array(a) && json_array_size(a) == 0);
	bool eb = !b || (json_is_object(b) && json_object_size(b) == 0) ||
		  (json_is_array(b) && json_array_size(b) == 0);
	return (ea && eb) || json_equal(a, b);
}

static int ep_write(struct ctrl *c, const json_t *svc, json_t *cur, json_t *subsets, json_t *labels,
		    const char *trigger)
{
	json_t *o = cur ? json_deep_copy(cur)
			: json_pack("{s:{s:s,s:s}}", "metadata", "name", ctrl_name(svc),
				    "namespace", ctrl_ns(svc));
	json_t *m = json_object_get(o, "metadata");
	json_object_set_new(o, "apiVersion", json_string("v1"));
	json_object_set_new(o, "kind", json_string("Endpoints"));
	if (json_array_size(subsets))
		json_object_set(o, "subsets", subsets);
	else
		json_object_del(o, "subsets");
	if (json_object_size(labels))
		json_object_set(m, "labels", labels);
	else
		json_object_del(m, "labels");
	json_t *ann = kb_json_object_at(m, "annotations");
	json_object_set_new(ann, "endpoints.kubernetes.io/last-change-trigger-time",
			    json_string(trigger));
	json_object_del(ann, "endpoints.kubernetes.io/over-capacity");
	int rc = cur ? proxy_object_update(c->px, "", "v1", "endpoints", o, EP_MANAGER, NULL)
		     : proxy_object_create(c->px, "", "v1", "endpoints", o, EP_MANAGER, NULL);
	json_decref(o);
	if (rc == -EPERM && !cur)
		return 0; /* namespace terminating: nothing to keep */
	return rc;
}

int ctrl_ep_sync(struct ctrl *c, const char *ns, const char *name)
{
	json_t *svc = ctrl_get(c, "/services", ns, name);
	if (!svc) {
		int rc = proxy_object_delete(c->px, "", "v1", "endpoints", ns, name, NULL, NULL,
					     EP_MANAGER);
		return rc == -ENOENT ? 0 : rc;
	}
	if (!ctrl_ep_managed(svc)) {
		json_decref(svc);
		return 0;
	}
	json_t *pods = ctrl_ep_selected_pods(c, svc);
	json_t *subsets = ctrl_ep_subsets(svc, pods);
	json_t *labels = ep_labels(svc);
	json_t *cur = ctrl_get(c, "/endpoints", ns, name);
	json_t *cur_labels = json_deep_copy(ctrl_path(cur, "metadata.labels"));
	json_object_del(cur_labels, "service.kubernetes.io/headless");
	int rc = 0;
	if (!cur || !empty_same(json_object_get(cur, "subsets"), subsets) ||
	    !empty_same(cur_labels, ctrl_path(svc, "metadata.labels")) ||
	    json_object_get(ctrl_path(cur, "metadata.annotations"),
			    "endpoints.kubernetes.io/over-capacity")) {
		char trigger[40];
		ctrl_ep_trigger_time(svc, pods, trigger, sizeof(trigger));
		rc = ep_write(c, svc, cur, subsets, labels, trigger);
	}
	json_decref(cur_labels);
	json_decref(cur);
	json_decref(labels);
	json_decref(subsets);
	json_decref(pods);
	json_decref(svc);
	return rc;
}
