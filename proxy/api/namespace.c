/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Namespaces: the built-in ones a new cluster has, what every namespace
 * holds from birth (default ServiceAccount, kube-root-ca.crt), refusing new
 * content in a missing or terminating namespace, and the namespace
 * lifecycle: a deleted namespace is Terminating until everything in it is
 * gone, then its "kubernetes" finalizer is dropped and it is removed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/api/api.h"

static const char *const builtin_ns[] = {"default", "kube-system", "kube-public", "kube-node-lease",
					 NULL};

json_t *proxy_root_ca_configmap(const char *ns, const char *ca)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s}}", "apiVersion", "v1", "kind",
			 "ConfigMap", "metadata", "name", "kube-root-ca.crt", "namespace", ns,
			 "annotations", "kubernetes.io/description",
			 "Contains a CA bundle that can be used to verify the kube-apiserver when "
			 "using internal endpoints such as the internal service IP or "
			 "kubernetes.default.svc. No other usage is guaranteed across "
			 "distributions of Kubernetes clusters.",
			 "data", "ca.crt", ca);
}

void ns_created(struct proxy *px, const char *ns)
{
	const struct proxy_resource *sa = resource_find("", "v1", "serviceaccounts");
	json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
			      "metadata", "name", "default", "namespace", ns);
	handle_bootstrap_create(px, sa, o, NULL);
	json_decref(o);
	char *ca = NULL;
	if (store_kv_get(px->store, "ca.crt", &ca) < 0)
		return;
	const struct proxy_resource *cm = resource_find("", "v1", "configmaps");
	o = proxy_root_ca_configmap(ns, ca);
	handle_bootstrap_create(px, cm, o, NULL);
	json_decref(o);
	free(ca);
}

/* The `kubernetes` Service in `default`, made once (a user may change it). */
static int bootstrap_kubernetes_svc(struct proxy *px)
{
	const struct proxy_resource *svc = resource_find("", "v1", "services");
	if (ns_bootstrap_stored(px, svc, "default", "kubernetes"))
		return 0;
	json_t *o = json_pack(
	    "{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:s,s:[s],s:[{s:s,s:i,s:s,s:i}],s:s,s:s}}",
	    "apiVersion", "v1", "kind", "Service", "metadata", "name", "kubernetes", "namespace",
	    "default", "labels", "component", "apiserver", "provider", "kubernetes", "spec",
	    "clusterIP", "10.96.0.1", "clusterIPs", "10.96.0.1", "ports", "name", "https", "port",
	    443, "protocol", "TCP", "targetPort", 6443, "type", "ClusterIP", "sessionAffinity",
	    "None");
	int rc = handle_bootstrap_create(px, svc, o, NULL);
	json_decref(o);
	return rc == -EEXIST ? 0 : rc;
}

/* The API's address in its Endpoints is the advertise address when that is
 * an IP; in-cluster it is the Service's name, which Endpoints cannot hold:
 * the EndpointSlice then says FQDN and Endpoints list no address. */
static json_t *api_endpoints(const struct proxy *px)
{
	json_t *subsets = json_array();
	if (kb_is_ip(px->advertise))
		json_array_append_new(subsets,
				      json_pack("{s:[{s:s}],s:[{s:s,s:i,s:s}]}", "addresses", "ip",
						px->advertise, "ports", "name", "https", "port",
						px->port, "protocol", "TCP"));
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:o}", "apiVersion", "v1", "kind",
			 "Endpoints", "metadata", "name", "kubernetes", "namespace", "default",
			 "labels", "endpointslice.kubernetes.io/skip-mirror", "true", "subsets",
			 subsets);
}

static json_t *api_endpoint_slice(const struct proxy *px)
{
	const char *type = !kb_is_ip(px->advertise)     ? "FQDN"
			   : strchr(px->advertise, ':') ? "IPv6"
							: "IPv4";
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:s,s:[{s:[s],s:{s:b}}],s:[{s:s,s:i,s:s}]}",
			 "apiVersion", "discovery.k8s.io/v1", "kind", "EndpointSlice", "metadata",
			 "name", "kubernetes", "namespace", "default", "labels",
			 "kubernetes.io/service-name", "kubernetes", "addressType", type,
			 "endpoints", "addresses", px->advertise, "conditions", "ready", 1, "ports",
			 "name", "https", "port", px->port, "protocol", "TCP");
}

/* Makes stored object `want` (stolen) of res exist with want's `keys`: made
 * again when they differ (an EndpointSlice's addressType cannot change, and
 * a local server's loopback address is no endpoint validation accepts). */
static int reconcile(struct proxy *px, const struct proxy_resource *res, json_t *want,
		     const char *const *keys)
{
	json_t *have = NULL;
	bool same = store_get(px->store, res->store_key, "default", "kubernetes", &have) == 0;
	for (size_t i = 0; same && keys[i]; i++)
		same = kb_json_same(json_object_get(have, keys[i]), json_object_get(want, keys[i]));
	int rc = 0;
	if (!same) {
		if (have)
			store_delete(px->store, res->store_key, "default", "kubernetes", 0, NULL,
				     NULL);
		rc = handle_bootstrap_create(px, res, want, NULL);
	}
	json_decref(have);
	json_decref(want);
	return rc == -EEXIST ? 0 : rc;
}

int ns_reconcile_api_endpoints(struct proxy *px)
{
	static const char *const ep_keys[] = {"subsets", NULL};
	static const char *const eps_keys[] = {"addressType", "endpoints", "ports", NULL};
	int rc = reconcile(px, resource_find("", "v1", "endpoints"), api_endpoints(px), ep_keys);
	if (rc == 0)
		rc = reconcile(px, resource_find("discovery.k8s.io", "v1", "endpointslices"),
			       api_endpoint_slice(px), eps_keys);
	return rc;
}

static int bootstrap_kubernetes_service(struct proxy *px)
{
	return bootstrap_kubernetes_svc(px);
}

/* The two system PriorityClasses kube-apiserver makes at start. */
static int bootstrap_priority_classes(struct proxy *px)
{
	static const struct {
		const char *name, *desc;
		json_int_t value;
	} pcs[] = {
	    {"system-node-critical",
	     "Used for system critical pods that must not be moved from their current node.",
	     2000001000},
	    {"system-cluster-critical",
	     "Used for system critical pods that must run in the cluster, but can be moved to "
	     "another node if necessary.",
	     2000000000},
	};
	const struct proxy_resource *pc =
	    resource_find("scheduling.k8s.io", "v1", "priorityclasses");
	for (size_t i = 0; pc && i < KB_ARRAY_SIZE(pcs); i++) {
		if (ns_bootstrap_stored(px, pc, NULL, pcs[i].name))
			continue;
		json_t *o =
		    json_pack("{s:s,s:s,s:{s:s},s:I,s:s}", "apiVersion", "scheduling.k8s.io/v1",
			      "kind", "PriorityClass", "metadata", "name", pcs[i].name, "value",
			      pcs[i].value, "description", pcs[i].desc);
		int rc = handle_bootstrap_create(px, pc, o, NULL);
		json_decref(o);
		if (rc < 0 && rc != -EEXIST)
			return rc;
	}
	return 0;
}

bool ns_bootstrap_stored(struct proxy *px, const struct proxy_resource *res, const char *ns,
			 const char *name)
{
	const char *text;
	size_t len;
	return store_get_raw(px->store, res->store_key, res->namespaced && ns ? ns : "", name,
			     &text, &len, NULL) == 0;
}

int ns_bootstrap(struct proxy *px)
{
	const struct proxy_resource *nsr = resource_find("", "v1", "namespaces");
	int rc = store_txn_begin(px->store);
	if (rc < 0)
		return rc;
	for (int i = 0; builtin_ns[i]; i++) {
		if (ns_bootstrap_stored(px, nsr, NULL, builtin_ns[i]))
			continue;
		json_t *o = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
				      "metadata", "name", builtin_ns[i]);
		rc = handle_bootstrap_create(px, nsr, o, NULL);
		json_decref(o);
		if (rc == 0)
			ns_created(px, builtin_ns[i]);
		else if (rc != -EEXIST)
			goto fail;
	}
	rc = bootstrap_kubernetes_service(px);
	if (rc == 0)
		rc = bootstrap_priority_classes(px);
	if (rc == 0)
		rc = flowcontrol_bootstrap(px);
	if (rc < 0)
		goto fail;
	rc = store_txn_commit(px->store);
	if (rc == 0) {
		json_t *items = NULL;
		/* a namespace terminating when we stopped resumes its cleanup */
		struct store_list_req lr = {.res = nsr->store_key};
		struct store_list_result res = {0};
		if (store_list(px->store, &lr, &res) == 0) {
			size_t k;
			json_t *n;
			json_array_foreach (res.items, k, n)
				if (obj_str(n, "metadata.deletionTimestamp"))
					px->api->ns_pending = true;
			items = res.items;
			free(res.next);
		}
		json_decref(items);
	}
	return rc;
fail:
	store_txn_rollback(px->store);
	kb_err("proxy", "bootstrap failed: %d", rc);
	return rc;
}

int ns_check_writable(struct req *r, const char *ns, const char *name)
{
	const struct proxy_resource *nsr = resource_find("", "v1", "namespaces");
	json_t *obj = NULL;
	char msg[700];
	const char *text;
	size_t len;
	/* the stored text first: only a namespace that mentions a deletion
	 * timestamp anywhere is parsed (almost never) */
	int rc = store_get_raw(r->px->store, nsr->store_key, "", ns, &text, &len, NULL);
	if (rc == 0 && !memmem(text, len, "\"deletionTimestamp\"", 19))
		return 0;
	if (rc == 0)
		rc = store_get(r->px->store, nsr->store_key, "", ns, &obj);
	if (rc == -ENOENT) {
		snprintf(msg, sizeof(msg), "namespaces \"%s\" not found", ns);
		reply_status(r, 404, "NotFound", msg,
			     json_pack("{s:s,s:s}", "name", ns, "kind", "namespaces"));
		return rc;
	}
	if (rc < 0) {
		reply_errno(r, rc, ns);
		return rc;
	}
	bool terminating = obj_str(obj, "metadata.deletionTimestamp") != NULL;
	json_decref(obj);
	if (!terminating)
		return 0;
	char qn[300];
	reply_resource_name(r->res, qn, sizeof(qn));
	snprintf(msg, sizeof(msg),
		 "%s \"%s\" is forbidden: unable to create new content in namespace %s because "
		 "it is being terminated",
		 qn, name ? name : "", ns);
	reply_status(r, 403, "Forbidden", msg,
		     json_pack("{s:s,s:s,s:[{s:s,s:s,s:s}]}", "name", name ? name : "", "kind",
			       r->res->plural, "causes", "reason", "NamespaceTerminating",
			       "message", msg, "field", "metadata.namespace"));
	return -EACCES;
}

/* Deletes what a terminating namespace holds; true when it is empty. */
static bool ns_empty_out(struct proxy *px, const char *ns)
{
	bool empty = true;
	for (size_t i = 0; i < resource_count(); i++) {
		const struct proxy_resource *res = resource_at(i);
		if (!res->namespaced || !res->stored)
			continue;
		struct store_list_req lr = {.res = res->store_key, .ns = ns};
		struct store_list_result out = {0};
		if (store_list(px->store, &lr, &out) < 0) {
			empty = false;
			continue;
		}
		size_t k;
		json_t *o;
		json_array_foreach (out.items, k, o) {
			const char *name = obj_str(o, "metadata.name");
			if (json_array_size(obj_get(o, "metadata.finalizers")) > 0) {
				empty = false;
				if (!obj_str(o, "metadata.deletionTimestamp")) {
					char ts[40];
					kb_time_rfc3339(time(NULL), ts, sizeof(ts));
					json_t *upd = json_deep_copy(o);
					json_object_set_new(obj_meta(upd), "deletionTimestamp",
							    json_string(ts));
					json_object_set_new(obj_meta(upd),
							    "deletionGracePeriodSeconds",
							    json_integer(0));
					store_update(px->store, res->store_key, ns, name, upd,
						     obj_rv(o), NULL);
					json_decref(upd);
				}
				continue;
			}
			if (store_delete(px->store, res->store_key, ns, name, 0, NULL, NULL) < 0)
				empty = false;
		}
		json_decref(out.items);
		free(out.next);
	}
	return empty;
}

/* Drops the "kubernetes" spec finalizer, then removes the namespace when
 * no metadata finalizer holds it. */
static void ns_finalize(struct proxy *px, const struct proxy_resource *nsr, json_t *n)
{
	const char *name = obj_str(n, "metadata.name");
	json_t *upd = json_deep_copy(n);
	json_t *fin = obj_get(upd, "spec.finalizers");
	for (size_t i = json_array_size(fin); i-- > 0;)
		if (strcmp(json_string_value(json_array_get(fin, i)) ?: "", "kubernetes") == 0)
			json_array_remove(fin, i);
	if (json_array_size(obj_get(upd, "metadata.finalizers")) == 0 &&
	    json_array_size(fin) == 0) {
		store_delete(px->store, nsr->store_key, "", name, 0, NULL, NULL);
	} else if (!json_equal(upd, n)) {
		store_update(px->store, nsr->store_key, "", name, upd, obj_rv(n), NULL);
	}
	json_decref(upd);
}

void ns_tick(struct proxy *px)
{
	if (!px->api->ns_pending)
		return;
	px->api->ns_pending = false;
	const struct proxy_resource *nsr = resource_find("", "v1", "namespaces");
	struct store_list_req lr = {.res = nsr->store_key};
	struct store_list_result res = {0};
	if (store_list(px->store, &lr, &res) < 0) {
		px->api->ns_pending = true;
		return;
	}
	size_t i;
	json_t *n;
	json_array_foreach (res.items, i, n) {
		if (!obj_str(n, "metadata.deletionTimestamp"))
			continue;
		const char *name = obj_str(n, "metadata.name");
		store_txn_begin(px->store);
		bool empty = ns_empty_out(px, name);
		if (empty)
			ns_finalize(px, nsr, n);
		else
			px->api->ns_pending = true;
		store_txn_commit(px->store);
		kb_info("proxy", "namespace %s: %s", name,
			empty ? "removed" : "waiting for finalizers");
	}
	json_decref(res.items);
	free(res.next);
}
