/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The operator's own objects (operator_impl.h): the Tenant CRD (embedded
 * from deploy/tenant-crd.yaml), installing it, and `kubicle manifest
 * --operator`: the CRD, the operator's least-privilege RBAC and its
 * Deployment, for `kubectl apply -f -`.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/manifest.h"
#include "cmd/operator.h"
#include "cmd/operator_impl.h"
#include "cmd/version.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"

#define OPM_IMAGE "ghcr.io/kubicle/kubicle"
#define OPM_UID   65532

/* kb_yaml_load reads every scalar as a string; the CRD's file is ours and
 * holds no string that reads as a bool or an integer except quoted ones
 * with capitals ("True"), so plain true/false and integers are typed here. */
static void type_scalars(json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;
	if (json_is_object(v)) {
		json_object_foreach (v, k, x) {
			const char *s = json_string_value(x);
			char *end;
			long long n;
			if (s && (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)) {
				json_object_set_new(v, k, json_boolean(strcmp(s, "true") == 0));
			} else if (s && *s && (n = strtoll(s, &end, 10), *end == 0)) {
				json_object_set_new(v, k, json_integer(n));
			} else {
				type_scalars(x);
			}
		}
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, x)
			type_scalars(x);
	}
}

json_t *op_crd(void)
{
	char err[256];
	json_t *crd = kb_yaml_load(operator_crd_yaml, strlen(operator_crd_yaml), err, sizeof(err));
	if (!crd)
		kb_err("operator", "embedded CRD: %s", err);
	type_scalars(crd);
	return crd;
}

static bool established(const json_t *crd)
{
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(json_object_get(crd, "status"), "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));
		if (t && s && strcmp(t, "Established") == 0 && strcmp(s, "True") == 0)
			return true;
	}
	return false;
}

int op_install_crd(hostapi_t *h, char *err, size_t len)
{
	static const char coll[] = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
	char path[256];
	long st = 0;
	json_t *crd = op_crd(), *resp = NULL;
	if (!crd)
		return kb_errf(err, len, -EINVAL, "embedded CRD does not parse");
	snprintf(path, sizeof(path), "%s/tenants.kubicle.dev", coll);
	int rc = hostapi_call(h, "POST", coll, crd, &st, &resp);
	if (rc == 0 && st == 409) {
		/* bring it to this version's spec */
		json_t *patch = json_pack("{s:O}", "spec", json_object_get(crd, "spec"));
		json_decref(resp);
		resp = NULL;
		rc = hostapi_call(h, "PATCH", path, patch, &st, &resp);
		json_decref(patch);
	}
	json_decref(crd);
	if (rc == 0 && st != 200 && st != 201)
		rc = kb_errf(err, len, -EIO, "installing CRD tenants.kubicle.dev: %ld %s", st,
			     hostapi_message(resp, st));
	else if (rc < 0)
		kb_errf(err, len, rc, "installing CRD: %s", strerror(-rc));
	json_decref(resp);
	if (rc < 0)
		return rc;
	/* one look, never a wait: the caller runs on the operator's loop, whose
	 * Lease must be renewed; it asks again at its next tick */
	resp = NULL;
	rc = hostapi_call(h, "GET", path, NULL, &st, &resp);
	bool ok = rc == 0 && st == 200 && established(resp);
	json_decref(resp);
	if (ok)
		return 0;
	return rc < 0 ? rc
		      : kb_errf(err, len, -EAGAIN, "CRD tenants.kubicle.dev not Established yet");
}

/* ---- kubicle manifest --operator ---------------------------------------------------------- */

static json_t *meta(const char *name, const char *ns)
{
	json_t *m = json_pack("{s:s,s:{s:s,s:s}}", "name", name, "labels", "app.kubernetes.io/name",
			      OP_NAME, "app.kubernetes.io/managed-by", "kubicle");
	if (ns)
		json_object_set_new(m, "namespace", json_string(ns));
	return m;
}

static json_t *obj(const char *api, const char *kind, const char *name, const char *ns)
{
	return json_pack("{s:s,s:s,s:o}", "apiVersion", api, "kind", kind, "metadata",
			 meta(name, ns));
}

/* rule("group", "res1,res2", "verb1,verb2", "name" or NULL) */
static json_t *rule(const char *group, const char *resources, const char *verbs, const char *name)
{
	json_t *r = json_pack("{s:[s]}", "apiGroups", group);
	const char *lists[2] = {resources, verbs};
	const char *keys[2] = {"resources", "verbs"};
	for (int k = 0; k < 2; k++) {
		json_t *a = json_array();
		char *copy = strdup(lists[k]), *save = NULL;
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
			json_array_append_new(a, json_string(t));
		free(copy);
		json_object_set_new(r, keys[k], a);
	}
	if (name)
		json_object_set_new(r, "resourceNames", json_pack("[s]", name));
	return r;
}

#define RW_NS "get,list,create,update,patch,delete,deletecollection"

/*
 * Least privilege, rule by rule (what the operator calls, cmd/hostsetup.c,
 * cmd/hostquota.c and operator_reconcile.c):
 *  - Tenants: read and watch them, its finalizer and TTL deletes (update,
 *    patch, delete), their status;
 *  - the tenants' host objects, in any namespace (a Tenant names its host
 *    namespace): namespaces (get, create, delete; never list: it finds them
 *    by name), what each host namespace holds (create, read, update and
 *    delete by label: pods only to remove them, as `kubicle stop` does),
 *    StatefulSets (watched too: a tenant's server state), KAI Queues and
 *    the gangs' PodGroups;
 *  - RBAC: it writes each tenant's syncer Role and binds it, and binds the
 *    shared ClusterRole kubicle-syncer-nodes. Rather than holding every
 *    right of the syncer's Role itself (exec, attach and port-forward on
 *    every pod of the cluster), it has `escalate` and `bind` on Roles:
 *    kube-apiserver's RBAC escalation check (plugin/pkg/auth/authorizer/
 *    rbac, ConfirmNoEscalation) then lets it write them. That makes it as
 *    trusted as the platform team in namespaces: any Role it writes could
 *    name anything. The ClusterRole it may create and bind is the read-only
 *    kubicle-syncer-nodes only (bind and patch by name; create cannot be
 *    limited by name, and escalation prevention holds it to the node,
 *    priority-class and node-metrics reads it holds itself);
 *  - its Lease (in its namespace, by name) and Events (in "default", where
 *    a cluster-scoped object's Events go).
 * No CRD rights: `kubicle manifest --operator` installs the CRD and the
 * Deployment runs with --no-install-crd.
 */
static json_t *cluster_role(void)
{
	json_t *o = obj("rbac.authorization.k8s.io/v1", "ClusterRole", OP_NAME, NULL);
	json_t *rules = json_array();
	json_array_append_new(
	    rules, rule("kubicle.dev", "tenants", "get,list,watch,update,patch,delete", NULL));
	json_array_append_new(rules,
			      rule("kubicle.dev", "tenants/status", "get,update,patch", NULL));
	json_array_append_new(rules, rule("", "namespaces", "get,create,delete", NULL));
	json_array_append_new(
	    rules, rule("",
			"serviceaccounts,secrets,configmaps,services,persistentvolumeclaims,"
			"resourcequotas,limitranges",
			RW_NS, NULL));
	json_array_append_new(rules, rule("", "pods", "get,list,delete,deletecollection", NULL));
	json_array_append_new(rules, rule("apps", "statefulsets", RW_NS ",watch", NULL));
	json_array_append_new(rules, rule("networking.k8s.io", "networkpolicies", RW_NS, NULL));
	json_array_append_new(
	    rules, rule("rbac.authorization.k8s.io", "roles", RW_NS ",escalate,bind", NULL));
	json_array_append_new(rules,
			      rule("rbac.authorization.k8s.io", "rolebindings", RW_NS, NULL));
	json_array_append_new(rules, rule("rbac.authorization.k8s.io", "clusterrolebindings",
					  "get,list,create,delete,deletecollection", NULL));
	json_array_append_new(rules,
			      rule("rbac.authorization.k8s.io", "clusterroles", "create", NULL));
	json_array_append_new(rules, rule("rbac.authorization.k8s.io", "clusterroles",
					  "get,patch,bind", "kubicle-syncer-nodes"));
	/* what kubicle-syncer-nodes grants, held so it may be written */
	json_array_append_new(rules, rule("", "nodes", "get,list,watch", NULL));
	json_array_append_new(rules,
			      rule("scheduling.k8s.io", "priorityclasses", "get,list,watch", NULL));
	json_array_append_new(rules, rule("metrics.k8s.io", "nodes", "get,list", NULL));
	json_array_append_new(rules,
			      rule("scheduling.run.ai", "queues", "get,create,delete", NULL));
	json_array_append_new(
	    rules, rule("scheduling.run.ai", "podgroups", "list,delete,deletecollection", NULL));
	json_array_append_new(rules, rule("scheduling.volcano.sh", "podgroups",
					  "list,delete,deletecollection", NULL));
	json_object_set_new(o, "rules", rules);
	return o;
}

static json_t *binding(const char *kind, const char *name, const char *ns, const char *role_kind,
		       const char *role, const char *sa_ns)
{
	json_t *o = obj("rbac.authorization.k8s.io/v1", kind, name, ns);
	json_object_set_new(o, "roleRef",
			    json_pack("{s:s,s:s,s:s}", "apiGroup", "rbac.authorization.k8s.io",
				      "kind", role_kind, "name", role));
	json_object_set_new(o, "subjects",
			    json_pack("[{s:s,s:s,s:s}]", "kind", "ServiceAccount", "name", OP_NAME,
				      "namespace", sa_ns));
	return o;
}

static json_t *lease_role(const char *ns)
{
	json_t *o = obj("rbac.authorization.k8s.io/v1", "Role", OP_NAME, ns);
	json_object_set_new(
	    o, "rules",
	    json_pack("[o,o]", rule("coordination.k8s.io", "leases", "create", NULL),
		      rule("coordination.k8s.io", "leases", "get,update", OP_NAME)));
	return o;
}

static json_t *events_role(void)
{
	json_t *o = obj("rbac.authorization.k8s.io/v1", "Role", OP_NAME "-events", "default");
	json_object_set_new(o, "rules", json_pack("[o]", rule("", "events", "create,patch", NULL)));
	return o;
}

static json_t *deployment(const char *ns, const char *image)
{
	json_t *o = obj("apps/v1", "Deployment", OP_NAME, ns);
	json_t *labels = json_pack("{s:s}", "app.kubernetes.io/name", OP_NAME);
	json_t *c = json_pack(
	    "{s:s,s:s,s:s,s:[s],s:[s,s,s,s,s,s],s:[{s:s,s:{s:{s:s}}}],s:{s:{s:s,s:s},s:{s:s}},"
	    "s:{s:b,s:b,s:b,s:{s:[s]},s:{s:s}},s:[{s:s,s:s}]}",
	    "name", "operator", "image", image, "imagePullPolicy", "IfNotPresent", "command",
	    "kubicle", "args", "operator", "--namespace", ns, "--image", image, "--no-install-crd",
	    "env", "name", "POD_NAME", "valueFrom", "fieldRef", "fieldPath", "metadata.name",
	    "resources", "requests", "cpu", "50m", "memory", "64Mi", "limits", "memory", "512Mi",
	    "securityContext", "allowPrivilegeEscalation", 0, "readOnlyRootFilesystem", 1,
	    "runAsNonRoot", 1, "capabilities", "drop", "ALL", "seccompProfile", "type",
	    "RuntimeDefault", "volumeMounts", "name", "tmp", "mountPath", "/tmp");
	json_t *pod = json_pack(
	    "{s:s,s:b,s:{s:b,s:i,s:i},s:[o],s:[{s:s,s:{}}]}", "serviceAccountName", OP_NAME,
	    "automountServiceAccountToken", 1, "securityContext", "runAsNonRoot", 1, "runAsUser",
	    OPM_UID, "runAsGroup", OPM_UID, "containers", c, "volumes", "name", "tmp", "emptyDir");
	/* two replicas, one active (the Lease): the standby takes over within
	 * leaseDurationSeconds when the leader's node goes */
	json_object_set_new(o, "spec",
			    json_pack("{s:i,s:{s:O},s:{s:{s:o},s:o}}", "replicas", 2, "selector",
				      "matchLabels", labels, "template", "metadata", "labels",
				      labels, "spec", pod));
	return o;
}

static const char opm_usage[] =
    "usage: kubicle manifest --operator [--namespace NS] [--image IMG] [-o yaml|json]\n"
    "  Prints the Tenant CRD, the operator's RBAC and Deployment (docs/operator.md).\n";

int cmd_manifest_operator(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"operator", no_argument, NULL, 'O'},    {"namespace", required_argument, NULL, 'n'},
	    {"image", required_argument, NULL, 'i'}, {"output", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
	};
	const char *ns = "kubicle-system", *image = NULL, *out = "yaml";
	char image_buf[256];
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "n:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'O': break;
		case 'n': ns = optarg; break;
		case 'i': image = optarg; break;
		case 'o': out = optarg; break;
		case 'h': fputs(opm_usage, stdout); return 0;
		default: fputs(opm_usage, stderr); return 2;
		}
	}
	if (optind != argc || (strcmp(out, "yaml") != 0 && strcmp(out, "json") != 0) ||
	    !kb_dns_label(ns, 63)) {
		fputs(opm_usage, stderr);
		return 2;
	}
	if (!image) {
		snprintf(image_buf, sizeof(image_buf), "%s:%s", OPM_IMAGE, KUBICLE_VERSION);
		image = image_buf;
	}
	json_t *crd = op_crd();
	if (!crd)
		return 1;
	json_t *items = json_pack(
	    "[o,{s:s,s:s,s:o},o,o,o,o,o,o,o,o]", crd, "apiVersion", "v1", "kind", "Namespace",
	    "metadata", meta(ns, NULL), obj("v1", "ServiceAccount", OP_NAME, ns), cluster_role(),
	    binding("ClusterRoleBinding", OP_NAME, NULL, "ClusterRole", OP_NAME, ns),
	    lease_role(ns), binding("RoleBinding", OP_NAME, ns, "Role", OP_NAME, ns), events_role(),
	    binding("RoleBinding", OP_NAME "-events", "default", "Role", OP_NAME "-events", ns),
	    deployment(ns, image));
	int rc = items ? manifest_print(items, strcmp(out, "json") == 0, stdout) : -ENOMEM;
	json_decref(items);
	if (rc < 0)
		fprintf(stderr, "kubicle manifest: output: %s\n", strerror(-rc));
	return rc < 0 ? 1 : 0;
}
