/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tenant's host objects (hostsetup.h): made with create-or-adopt
 * (409 AlreadyExists is fine when the object already carries our label, or
 * is a shared one), removed with label-selected deletecollection calls.
 */
#include "cmd/hostsetup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/hostquota.h"
#include "lib/kubeconfig.h"
#include "lib/pki.h"
#include "lib/util.h"
#include "syncer/syncer.h"

#define LABEL      "kubicle.dev/tenant"
#define MANAGED    "app.kubernetes.io/managed-by"
#define NODES_ROLE "kubicle-syncer-nodes"

static json_t *labels(const struct tenant *t)
{
	return json_pack("{s:s,s:s}", LABEL, t->name, MANAGED, "kubicle");
}

static bool ours(const json_t *obj, const struct tenant *t)
{
	const char *v = json_string_value(
	    json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), LABEL));
	return v && strcmp(v, t->name) == 0;
}

/* An object Kubicle shares between its tenants (the ClusterRole
 * kubicle-syncer-nodes): managed by Kubicle, no tenant's label. */
static bool shared_ours(const json_t *obj)
{
	const json_t *l = json_object_get(json_object_get(obj, "metadata"), "labels");
	const char *m = json_string_value(json_object_get(l, MANAGED));
	return m && strcmp(m, "kubicle") == 0 && !json_object_get(l, LABEL);
}

/*
 * POSTs obj (stolen) to `collection`. *made: true when created now or found
 * carrying our label (so it is ours to delete), false when it existed
 * without (someone else's; kept). `keep` (may be NULL) names a field that an
 * existing object of ours, or one Kubicle shares between tenants, is
 * brought back to (a Role's or the shared ClusterRole's rules written by an
 * older Kubicle). 0 or -EIO with err set.
 */
static int ensure(hostapi_t *h, const struct tenant *t, const char *collection, const char *name,
		  json_t *obj, const char *keep, bool *made, char *err, size_t len)
{
	long st = 0;
	json_t *resp = NULL;
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	char what[300];
	snprintf(what, sizeof(what), "%s %s", kind ? kind : "object", name);
	json_t *want = keep ? json_incref(json_object_get(obj, keep)) : NULL;
	int rc = hostapi_call(h, "POST", collection, obj, &st, &resp);
	json_decref(obj);
	if (rc < 0) {
		rc = kb_errf(err, len, rc, "host: creating %s: %s", what, strerror(-rc));
		goto out;
	}
	if (st == 201 || st == 200) {
		*made = true;
		goto out;
	}
	if (st != 409) {
		rc = kb_errf(err, len, -EIO, "host: creating %s: %ld %s", what, st,
			     hostapi_message(resp, st));
		goto out;
	}
	json_decref(resp);
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", collection, name);
	resp = NULL;
	rc = hostapi_call(h, "GET", path, NULL, &st, &resp);
	if (rc < 0 || st != 200) {
		rc = kb_errf(err, len, rc < 0 ? rc : -EIO, "host: reading %s: %s", what,
			     rc < 0 ? strerror(-rc) : hostapi_message(resp, st));
		goto out;
	}
	*made = ours(resp, t);
	if ((*made || shared_ours(resp)) && want &&
	    !json_equal(json_object_get(resp, keep), want)) {
		json_t *patch = json_pack("{s:O}", keep, want);
		json_decref(resp);
		resp = NULL;
		rc = hostapi_call(h, "PATCH", path, patch, &st, &resp);
		json_decref(patch);
		if (rc < 0 || st != 200)
			rc = kb_errf(err, len, rc < 0 ? rc : -EIO, "host: updating %s: %s", what,
				     rc < 0 ? strerror(-rc) : hostapi_message(resp, st));
	}
out:
	json_decref(want);
	json_decref(resp);
	return rc;
}

static json_t *meta(const struct tenant *t, const char *name, const char *ns)
{
	json_t *m = json_pack("{s:s,s:o}", "name", name, "labels", labels(t));
	if (ns)
		json_object_set_new(m, "namespace", json_string(ns));
	return m;
}

static json_t *queue_obj(const struct tenant *t)
{
	json_int_t g = t->gpus < 0 ? -1 : (json_int_t)t->gpus;
	return json_pack("{s:s,s:s,s:o,s:{s:{s:{s:I,s:I,s:i},s:{s:i,s:i,s:i},s:{s:i,s:i,s:i}}}}",
			 "apiVersion", "scheduling.run.ai/v2", "kind", "Queue", "metadata",
			 meta(t, t->queue, NULL), "spec", "resources", "gpu", "quota", g, "limit",
			 g, "overQuotaWeight", 1, "cpu", "quota", -1, "limit", -1,
			 "overQuotaWeight", 1, "memory", "quota", -1, "limit", -1,
			 "overQuotaWeight", 1);
}

/* The syncer's rules: everything it calls, in its namespace only. */
static json_t *role_obj(const struct tenant *t, const char *sa)
{
	json_t *r = json_pack(
	    "{s:s,s:s,s:o,s:[{s:[s],s:[s],s:[s,s,s,s,s,s,s]},{s:[s],s:[s],s:[s]},"
	    "{s:[s],s:[s,s,s],s:[s,s]},"
	    "{s:[s],s:[s,s],s:[s,s,s,s,s,s,s]},{s:[s],s:[s],s:[s,s,s]},"
	    "{s:[s],s:[s],s:[s,s,s,s,s,s,s]},{s:[s],s:[s],s:[s,s]},"
	    "{s:[s],s:[s],s:[s,s,s,s,s,s,s]},{s:[s],s:[s],s:[s,s]},"
	    "{s:[s],s:[s],s:[s,s,s,s,s,s,s]}]}",
	    "apiVersion", "rbac.authorization.k8s.io/v1", "kind", "Role", "metadata",
	    meta(t, sa, t->host_namespace), "rules", "apiGroups", "", "resources", "pods", "verbs",
	    "get", "list", "watch", "create", "update", "patch", "delete", "apiGroups", "",
	    "resources", "pods/log", "verbs", "get", "apiGroups", "", "resources", "pods/exec",
	    "pods/attach", "pods/portforward", "verbs", "get", "create", "apiGroups", "",
	    "resources", "configmaps", "secrets", "verbs", "get", "list", "watch", "create",
	    "update", "patch", "delete", "apiGroups", "", "resources", "events", "verbs", "get",
	    "list", "watch", "apiGroups", "", "resources", "persistentvolumeclaims", "verbs", "get",
	    "list", "watch", "create", "update", "patch", "delete", "apiGroups", "", "resources",
	    "pods/ephemeralcontainers", "verbs", "get", "patch", "apiGroups", "", "resources",
	    "services", "verbs", "get", "list", "watch", "create", "update", "patch", "delete",
	    "apiGroups", "metrics.k8s.io", "resources", "pods", "verbs", "get", "list", "apiGroups",
	    "networking.k8s.io", "resources", "networkpolicies", "verbs", "get", "list", "watch",
	    "create", "update", "patch", "delete");
	/* the gangs' group objects (syncer/gang.c): KAI's and Volcano's PodGroups */
	json_array_append_new(json_object_get(r, "rules"),
			      json_pack("{s:[s,s],s:[s],s:[s,s,s,s,s,s,s]}", "apiGroups",
					"scheduling.run.ai", "scheduling.volcano.sh", "resources",
					"podgroups", "verbs", "get", "list", "watch", "create",
					"update", "patch", "delete"));
	/* read only: Kueue's Workloads (why a gang waits) and the namespace's
	 * ResourceQuotas (a gang above its pods is refused): syncer.c */
	json_array_append_new(json_object_get(r, "rules"),
			      json_pack("{s:[s],s:[s],s:[s,s,s]}", "apiGroups", "kueue.x-k8s.io",
					"resources", "workloads", "verbs", "get", "list", "watch"));
	json_array_append_new(json_object_get(r, "rules"),
			      json_pack("{s:[s],s:[s],s:[s,s]}", "apiGroups", "", "resources",
					"resourcequotas", "verbs", "get", "list"));
	return r;
}

static json_t *binding_obj(const struct tenant *t, const char *kind, const char *name,
			   const char *role_kind, const char *role, const char *sa)
{
	bool cluster = strcmp(kind, "ClusterRoleBinding") == 0;
	return json_pack("{s:s,s:s,s:o,s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}", "apiVersion",
			 "rbac.authorization.k8s.io/v1", "kind", kind, "metadata",
			 meta(t, name, cluster ? NULL : t->host_namespace), "roleRef", "apiGroup",
			 "rbac.authorization.k8s.io", "kind", role_kind, "name", role, "subjects",
			 "kind", "ServiceAccount", "name", sa, "namespace", t->host_namespace);
}

static void sa_name(const struct tenant *t, char *buf, size_t len)
{
	snprintf(buf, len, "kubicle-%s", t->name);
}

int host_setup(hostapi_t *h, struct tenant *t, char *err, size_t len)
{
	char sa[64], path[512], name[128];
	bool made = false;
	int rc;
	sa_name(t, sa, sizeof(sa));
	json_t *ns = json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "Namespace", "metadata",
			       meta(t, t->host_namespace, NULL));
	if ((rc = ensure(h, t, "/api/v1/namespaces", t->host_namespace, ns, NULL, &made, err,
			 len)) < 0)
		return rc;
	t->made_namespace = made;
	if (strcmp(t->scheduler, "kai") == 0 && t->queue[0]) {
		rc = ensure(h, t, "/apis/scheduling.run.ai/v2/queues", t->queue, queue_obj(t), NULL,
			    &made, err, len);
		if (rc < 0)
			return rc;
		t->made_queue = made;
	}
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts", t->host_namespace);
	json_t *o = json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "ServiceAccount",
			      "metadata", meta(t, sa, t->host_namespace));
	if ((rc = ensure(h, t, path, sa, o, NULL, &made, err, len)) < 0)
		return rc;
	/* the account host pods run under: no role bound, no token mounted
	 * (kept so on an existing one of ours) */
	o = json_pack("{s:s,s:s,s:o,s:b}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata",
		      meta(t, SYNCER_POD_SA, t->host_namespace), "automountServiceAccountToken", 0);
	if ((rc = ensure(h, t, path, SYNCER_POD_SA, o, "automountServiceAccountToken", &made, err,
			 len)) < 0)
		return rc;
	snprintf(path, sizeof(path), "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
		 t->host_namespace);
	if ((rc = ensure(h, t, path, sa, role_obj(t, sa), "rules", &made, err, len)) < 0)
		return rc;
	snprintf(path, sizeof(path),
		 "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
		 t->host_namespace);
	o = binding_obj(t, "RoleBinding", sa, "Role", sa, sa);
	if ((rc = ensure(h, t, path, sa, o, NULL, &made, err, len)) < 0)
		return rc;
	/* cluster-scoped reads: the nodes its pods run on and the host's GPU
	 * capacity (the ledger watches every node: docs/finops.md), the
	 * priority classes the tenant gets copies of, node metrics (kubectl
	 * top node) */
	o = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:[{s:[s],s:[s],s:[s,s,s]},{s:[s],s:[s],s:[s,s,s]},"
		      "{s:[s],s:[s],s:[s,s]}]}",
		      "apiVersion", "rbac.authorization.k8s.io/v1", "kind", "ClusterRole",
		      "metadata", "name", NODES_ROLE, "labels", MANAGED, "kubicle", "rules",
		      "apiGroups", "", "resources", "nodes", "verbs", "get", "list", "watch",
		      "apiGroups", "scheduling.k8s.io", "resources", "priorityclasses", "verbs",
		      "get", "list", "watch", "apiGroups", "metrics.k8s.io", "resources", "nodes",
		      "verbs", "get", "list");
	if ((rc = ensure(h, t, "/apis/rbac.authorization.k8s.io/v1/clusterroles", NODES_ROLE, o,
			 "rules", &made, err, len)) < 0)
		return rc;
	snprintf(name, sizeof(name), "kubicle-%s-nodes", t->name);
	o = binding_obj(t, "ClusterRoleBinding", name, "ClusterRole", NODES_ROLE, sa);
	if ((rc = ensure(h, t, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", name, o,
			 NULL, &made, err, len)) < 0)
		return rc;
	return hostquota_setup(h, t, err, len);
}

int host_ensure(hostapi_t *h, const struct tenant *t, const char *collection, const char *name,
		json_t *obj, const char *keep, bool *made, char *err, size_t len)
{
	return ensure(h, t, collection, name, obj, keep, made, err, len);
}

/* The host kubeconfig for the syncer: JSON is YAML, and kubectl reads it. */
static int write_host_kubeconfig(const struct tenant *t, const struct kb_kubeconfig_creds *cr,
				 const char *sa)
{
	json_t *cluster = json_pack("{s:s}", "server", cr->server);
	if (cr->ca_pem) {
		char *b64 = kb_base64_encode(cr->ca_pem, strlen(cr->ca_pem));
		json_object_set_new(cluster, "certificate-authority-data", json_string(b64));
		free(b64);
	} else if (cr->ca_file) {
		json_object_set_new(cluster, "certificate-authority", json_string(cr->ca_file));
	}
	if (cr->insecure)
		json_object_set_new(cluster, "insecure-skip-tls-verify", json_true());
	json_t *kc =
	    json_pack("{s:s,s:s,s:[{s:s,s:o}],s:[{s:s,s:{s:s}}],s:[{s:s,s:{s:s,s:s,s:s}}],"
		      "s:s}",
		      "apiVersion", "v1", "kind", "Config", "clusters", "name", "host", "cluster",
		      cluster, "users", "name", sa, "user", "tokenFile", "host-token", "contexts",
		      "name", "host", "context", "cluster", "host", "user", sa, "namespace",
		      t->host_namespace, "current-context", "host");
	char *text = kc ? json_dumps(kc, JSON_INDENT(2)) : NULL;
	json_decref(kc);
	if (!text)
		return -ENOMEM;
	char path[PATH_MAX];
	home_path(t, "host.kubeconfig", path, sizeof(path));
	int rc = kb_write_file(path, text, strlen(text), 0600);
	free(text);
	return rc;
}

int host_issue_token(hostapi_t *h, const struct tenant *t, char *err, size_t len)
{
	char sa[64], path[512];
	long st = 0;
	json_t *resp = NULL;
	sa_name(t, sa, sizeof(sa));
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/serviceaccounts/%s/token",
		 t->host_namespace, sa);
	json_t *body =
	    json_pack("{s:s,s:s,s:{s:i}}", "apiVersion", "authentication.k8s.io/v1", "kind",
		      "TokenRequest", "spec", "expirationSeconds", HOST_TOKEN_SECONDS);
	int rc = hostapi_call(h, "POST", path, body, &st, &resp);
	json_decref(body);
	const char *tok =
	    json_string_value(json_object_get(json_object_get(resp, "status"), "token"));
	if (rc < 0 || st != 201 || !tok) {
		rc = kb_errf(err, len, rc < 0 ? rc : -EIO,
			     "host: token for ServiceAccount %s/%s: %s", t->host_namespace, sa,
			     rc < 0 ? strerror(-rc) : hostapi_message(resp, st));
		json_decref(resp);
		return rc;
	}
	home_path(t, "host-token", path, sizeof(path));
	rc = kb_write_file(path, tok, strlen(tok), 0600);
	json_decref(resp);
	if (rc < 0)
		return kb_errf(err, len, rc, "writing %s: %s", path, strerror(-rc));
	struct kb_kubeconfig_creds cr;
	if ((rc = kb_kubeconfig_load(t->host_kubeconfig, NULL, &cr)) < 0)
		return kb_errf(err, len, rc, "%s: %s", t->host_kubeconfig, strerror(-rc));
	rc = write_host_kubeconfig(t, &cr, sa);
	kb_kubeconfig_creds_free(&cr);
	return rc < 0 ? kb_errf(err, len, rc, "writing host.kubeconfig: %s", strerror(-rc)) : 0;
}

/* The label selector (URL-encoded) of the tenant's host objects; with
 * `syncer_only`, of those its syncer made: not the server's own objects
 * that `kubicle manifest` and the operator label kubicle.dev/control-plane
 * (cmd/manifest.c), which `kubicle stop` and a paused Tenant keep. */
static void selector(const struct tenant *t, bool syncer_only, char *buf, size_t len)
{
	snprintf(buf, len, LABEL "%%3D%s%s", t->name,
		 syncer_only ? "%2C%21kubicle.dev%2Fcontrol-plane" : "");
}

/* DELETE of every object of `sel` in one collection; 404 (no such
 * collection or namespace) counts as done. */
static int delete_labelled(hostapi_t *h, const char *sel, const char *collection, char *err,
			   size_t len)
{
	char path[1024];
	long st = 0;
	json_t *resp = NULL;
	snprintf(path, sizeof(path), "%s?labelSelector=%s", collection, sel);
	int rc = hostapi_call(h, "DELETE", path, NULL, &st, &resp);
	if (rc == 0 && st != 200 && st != 202 && st != 404)
		rc = kb_errf(err, len, -EIO, "host: deleting %s: %ld %s", collection, st,
			     hostapi_message(resp, st));
	else if (rc < 0)
		kb_errf(err, len, rc, "host: deleting %s: %s", collection, strerror(-rc));
	json_decref(resp);
	return rc;
}

/* The namespaced collections holding the tenant's objects, in deletion
 * order: what runs first, its credentials last. `stop`: removed by `kubicle
 * stop` too (what runs and what it mounts, and Services: they hold no data,
 * select no pod while the tenant is stopped, and its syncer makes them again
 * at start; never claims: their volumes hold the tenant's data, and pods
 * queued again by start mount them again). `each`: deleted one by one, as
 * kube-apiserver serves no deletecollection of Services. */
static const struct {
	const char *api, *plural;
	bool stop, each;
} ns_collections[] = {
    {"/api/v1", "pods", true, false},
    {"/apis/scheduling.run.ai/v2alpha2", "podgroups", true, false}, /* after their pods */
    {"/apis/scheduling.volcano.sh/v1beta1", "podgroups", true, false},
    {"/api/v1", "services", true, true},
    {"/api/v1", "persistentvolumeclaims", false, false},
    {"/api/v1", "configmaps", true, false},
    {"/api/v1", "secrets", true, false},
    {"/apis/networking.k8s.io/v1", "networkpolicies", false, false},
    {"/api/v1", "resourcequotas", false, false},
    {"/api/v1", "limitranges", false, false},
    {"/apis/rbac.authorization.k8s.io/v1", "rolebindings", false, false},
    {"/apis/rbac.authorization.k8s.io/v1", "roles", false, false},
    {"/api/v1", "serviceaccounts", false, false},
};

static void ns_path(const struct tenant *t, size_t i, char *buf, size_t len)
{
	snprintf(buf, len, "%s/namespaces/%s/%s", ns_collections[i].api, t->host_namespace,
		 ns_collections[i].plural);
}

/* DELETE of one named object; 404 is fine. */
static int delete_one(hostapi_t *h, const char *path, char *err, size_t len)
{
	long st = 0;
	json_t *resp = NULL;
	int rc = hostapi_call(h, "DELETE", path, NULL, &st, &resp);
	if (rc == 0 && st != 200 && st != 202 && st != 404)
		rc = kb_errf(err, len, -EIO, "host: deleting %s: %ld %s", path, st,
			     hostapi_message(resp, st));
	else if (rc < 0)
		kb_errf(err, len, rc, "host: deleting %s: %s", path, strerror(-rc));
	json_decref(resp);
	return rc;
}

/* The same as delete_labelled, one DELETE per object of the selected list
 * (404: gone meanwhile). */
static int delete_each(hostapi_t *h, const char *sel, const char *collection, char *err, size_t len)
{
	char path[1024];
	long st = 0;
	json_t *resp = NULL, *item;
	size_t i;
	snprintf(path, sizeof(path), "%s?labelSelector=%s", collection, sel);
	int rc = hostapi_call(h, "GET", path, NULL, &st, &resp);
	if (rc == 0 && st != 200 && st != 404)
		rc = kb_errf(err, len, -EIO, "host: listing %s: %ld %s", collection, st,
			     hostapi_message(resp, st));
	else if (rc < 0)
		kb_errf(err, len, rc, "host: listing %s: %s", collection, strerror(-rc));
	json_array_foreach (rc == 0 && st == 200 ? json_object_get(resp, "items") : NULL, i, item) {
		const char *name =
		    json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
		snprintf(path, sizeof(path), "%s/%s", collection, name ? name : "");
		if (name && (rc = delete_one(h, path, err, len)) < 0)
			break;
	}
	json_decref(resp);
	return rc;
}

static int delete_collection(hostapi_t *h, const struct tenant *t, size_t i, bool syncer_only,
			     char *err, size_t len)
{
	char path[512], sel[300];
	ns_path(t, i, path, sizeof(path));
	selector(t, syncer_only, sel, sizeof(sel));
	return ns_collections[i].each ? delete_each(h, sel, path, err, len)
				      : delete_labelled(h, sel, path, err, len);
}

int host_remove_pods(hostapi_t *h, const struct tenant *t, char *err, size_t len)
{
	for (size_t i = 0; i < sizeof(ns_collections) / sizeof(*ns_collections); i++) {
		if (!ns_collections[i].stop)
			continue;
		int rc = delete_collection(h, t, i, true, err, len);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int teardown_once(hostapi_t *h, const struct tenant *t, char *err, size_t len)
{
	char path[512];
	int rc;
	for (size_t i = 0; i < sizeof(ns_collections) / sizeof(*ns_collections); i++) {
		if ((rc = delete_collection(h, t, i, false, err, len)) < 0)
			return rc;
	}
	char sel[300];
	selector(t, false, sel, sizeof(sel));
	if ((rc = delete_labelled(h, sel, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
				  err, len)) < 0)
		return rc;
	if (t->made_queue) {
		snprintf(path, sizeof(path), "/apis/scheduling.run.ai/v2/queues/%s", t->queue);
		if ((rc = delete_one(h, path, err, len)) < 0)
			return rc;
	}
	if (t->made_namespace) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s", t->host_namespace);
		if ((rc = delete_one(h, path, err, len)) < 0)
			return rc;
	}
	return 0;
}

/* Items in a label-selected list (404: none). */
static int count_labelled(hostapi_t *h, const struct tenant *t, const char *collection, size_t *n,
			  char *err, size_t len)
{
	char path[1024];
	long st = 0;
	json_t *resp = NULL;
	snprintf(path, sizeof(path), "%s?labelSelector=" LABEL "%%3D%s", collection, t->name);
	int rc = hostapi_call(h, "GET", path, NULL, &st, &resp);
	if (rc == 0 && st == 200)
		*n += json_array_size(json_object_get(resp, "items"));
	else if (rc == 0 && st != 404)
		rc = kb_errf(err, len, -EIO, "host: listing %s: %ld %s", collection, st,
			     hostapi_message(resp, st));
	else if (rc < 0)
		kb_errf(err, len, rc, "host: listing %s: %s", collection, strerror(-rc));
	json_decref(resp);
	return rc;
}

static int exists(hostapi_t *h, const char *path, size_t *n, char *err, size_t len)
{
	long st = 0;
	int rc = hostapi_call(h, "GET", path, NULL, &st, NULL);
	if (rc < 0)
		return kb_errf(err, len, rc, "host: reading %s: %s", path, strerror(-rc));
	if (st == 200)
		(*n)++;
	return 0;
}

int host_count_left(hostapi_t *h, const struct tenant *t, size_t *left, char *err, size_t len)
{
	char path[512];
	int rc;
	*left = 0;
	for (size_t i = 0; i < sizeof(ns_collections) / sizeof(*ns_collections); i++) {
		ns_path(t, i, path, sizeof(path));
		if ((rc = count_labelled(h, t, path, left, err, len)) < 0)
			return rc;
	}
	rc = count_labelled(h, t, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", left,
			    err, len);
	if (rc == 0 && t->made_queue) {
		snprintf(path, sizeof(path), "/apis/scheduling.run.ai/v2/queues/%s", t->queue);
		rc = exists(h, path, left, err, len);
	}
	if (rc == 0 && t->made_namespace) {
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s", t->host_namespace);
		rc = exists(h, path, left, err, len);
	}
	return rc;
}

int host_teardown(hostapi_t *h, const struct tenant *t, bool wait, unsigned timeout_s, char *err,
		  size_t len)
{
	int rc = teardown_once(h, t, err, len);
	if (rc < 0 || !wait)
		return rc;
	time_t until = time(NULL) + (time_t)timeout_s;
	unsigned delay_ms = 20;
	for (;;) {
		size_t left = 0;
		if ((rc = host_count_left(h, t, &left, err, len)) < 0)
			return rc;
		if (left == 0)
			return 0;
		if (time(NULL) >= until)
			return kb_errf(err, len, -ETIMEDOUT,
				       "host: %zu object(s) of tenant %s still there after %u s",
				       left, t->name, timeout_s);
		usleep(delay_ms * 1000);
		delay_ms = delay_ms < 500 ? delay_ms * 2 : 500;
	}
}

/* The kubicle.dev/tenant label of the first object in `collection` that
 * carries another tenant's, copied into other (left "" when none; 404: no
 * such collection or namespace yet). */
static int other_labelled(hostapi_t *h, const struct tenant *t, const char *collection, char *other,
			  size_t olen, char *err, size_t len)
{
	char path[1024];
	long st = 0;
	json_t *resp = NULL;
	snprintf(path, sizeof(path), "%s?limit=1&labelSelector=" LABEL "%%2C" LABEL "%%21%%3D%s",
		 collection, t->name);
	int rc = hostapi_call(h, "GET", path, NULL, &st, &resp);
	if (rc == 0 && st == 200) {
		json_t *item = json_array_get(json_object_get(resp, "items"), 0);
		const char *v = json_string_value(json_object_get(
		    json_object_get(json_object_get(item, "metadata"), "labels"), LABEL));
		if (v && strcmp(v, t->name) != 0)
			snprintf(other, olen, "%s", v);
	} else if (rc == 0 && st != 404) {
		rc = kb_errf(err, len, -EIO, "host: listing %s: %ld %s", collection, st,
			     hostapi_message(resp, st));
	} else if (rc < 0) {
		kb_errf(err, len, rc, "host: listing %s: %s", collection, strerror(-rc));
	}
	json_decref(resp);
	return rc;
}

int host_namespace_user(hostapi_t *h, const struct tenant *t, char *other, size_t olen, char *err,
			size_t len)
{
	char path[512];
	long st = 0;
	json_t *resp = NULL;
	other[0] = '\0';
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", t->host_namespace);
	int rc = hostapi_call(h, "GET", path, NULL, &st, &resp);
	if (rc < 0)
		return kb_errf(err, len, rc, "host: reading %s: %s", path, strerror(-rc));
	const char *v = json_string_value(
	    json_object_get(json_object_get(json_object_get(resp, "metadata"), "labels"), LABEL));
	if (st == 200 && v && strcmp(v, t->name) != 0)
		snprintf(other, olen, "%s", v);
	json_decref(resp);
	if (st != 200) /* no namespace: nobody's objects */
		return 0;
	for (size_t i = 0; !other[0] && i < sizeof(ns_collections) / sizeof(*ns_collections); i++) {
		ns_path(t, i, path, sizeof(path));
		if ((rc = other_labelled(h, t, path, other, olen, err, len)) < 0)
			return rc;
	}
	return 0;
}
