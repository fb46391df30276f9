/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RBAC objects a new cluster has (kube-apiserver's bootstrap policy,
 * plugin/pkg/auth/authorizer/rbac/bootstrappolicy): cluster-admin, the
 * aggregated admin/edit/view roles and the aggregate-to-* roles holding their
 * rules, system:discovery, system:basic-user, system:public-info-viewer,
 * system:auth-delegator, system:monitoring (get on /metrics and the health
 * checks), and the ClusterRoleBindings giving them to system:masters,
 * system:authenticated, system:unauthenticated and system:monitoring; the
 * certificates.k8s.io roles (system:node-bootstrapper, the CSR approvers).
 */
#include "proxy/auth/rbac.h"

#include <stdio.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"

static const char defaults_json[] =
    "[{\"apiVersion\":\"rbac.authorization.k8s.io/"
    "v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"clu"
    "ster-admin\",\"labels\":{\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\"},\"annotations\":{\"rbac."
    "authorization.kubernetes.io/"
    "autoupdate\":\"true\"}},\"rules\":[{\"apiGroups\":[\"*\"],\"resources\":["
    "\"*\"],\"verbs\":[\"*\"]},{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}]},{\"apiVersion\":"
    "\"rbac.authoriz"
    "ation.k8s.io/"
    "v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"admin\",\"labels\":{\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\"},\"annotations\":{\"rbac.authorization.kubernetes.io/"
    "autoupdat"
    "e\":\"true\"}},\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"rbac."
    "authorization"
    ".k8s.io/"
    "aggregate-to-admin\":\"true\"}}]},\"rules\":[]},{\"apiVersion\":\"rbac.authorization.k8s.i"
    "o/v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"edit\",\"labels\":{\"kubernetes.io/"
    "bootstrappin"
    "g\":\"rbac-defaults\",\"rbac.authorization.k8s.io/"
    "aggregate-to-admin\":\"true\"},\"annotations\":{\""
    "rbac.authorization.kubernetes.io/"
    "autoupdate\":\"true\"}},\"aggregationRule\":{\"clusterRoleSelec"
    "tors\":[{\"matchLabels\":{\"rbac.authorization.k8s.io/"
    "aggregate-to-edit\":\"true\"}}]},\"rules\":[]"
    "},{\"apiVersion\":\"rbac.authorization.k8s.io/"
    "v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"vi"
    "ew\",\"labels\":{\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\",\"rbac.authorization.k8s.io/agg"
    "regate-to-edit\":\"true\"},\"annotations\":{\"rbac.authorization.kubernetes.io/"
    "autoupdate\":\"true"
    "\"}},\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"rbac.authorization."
    "k8s.io/"
    "aggregate-to-view\":\"true\"}}]},\"rules\":[]},{\"apiVersion\":\"rbac.authorization.k8s.io/"
    "v1\",\"ki"
    "nd\":\"ClusterRole\",\"metadata\":{\"name\":\"system:aggregate-to-admin\",\"labels\":{"
    "\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\",\"rbac.authorization.k8s.io/"
    "aggregate-to-admin\":\"true\"},\"ann"
    "otations\":{\"rbac.authorization.kubernetes.io/"
    "autoupdate\":\"true\"}},\"rules\":[{\"apiGroups\":[\""
    "authorization.k8s.io\"],\"resources\":[\"localsubjectaccessreviews\"],\"verbs\":[\"create\"]},"
    "{\"api"
    "Groups\":[\"rbac.authorization.k8s.io\"],\"resources\":[\"rolebindings\",\"roles\"],\"verbs\":"
    "[\"creat"
    "e\",\"delete\",\"deletecollection\",\"get\",\"list\",\"patch\",\"update\",\"watch\"]}]},{"
    "\"apiVersion\":\"rb"
    "ac.authorization.k8s.io/"
    "v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:aggregate-to-e"
    "dit\",\"labels\":{\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\",\"rbac.authorization.k8s.io/ag"
    "gregate-to-edit\":\"true\"},\"annotations\":{\"rbac.authorization.kubernetes.io/"
    "autoupdate\":\"tru"
    "e\"}},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods/attach\",\"pods/exec\",\"pods/"
    "portforward\","
    "\"pods/proxy\",\"secrets\",\"services/"
    "proxy\"],\"verbs\":[\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"\"]"
    ",\"resources\":[\"serviceaccounts\"],\"verbs\":[\"impersonate\"]},{\"apiGroups\":[\"\"],"
    "\"resources\":[\""
    "pods\",\"pods/attach\",\"pods/exec\",\"pods/portforward\",\"pods/"
    "proxy\"],\"verbs\":[\"create\",\"delete"
    "\",\"deletecollection\",\"patch\",\"update\"]},{\"apiGroups\":[\"\"],\"resources\":[\"pods/"
    "eviction\"],\"v"
    "erbs\":[\"create\"]},{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"events\","
    "\"persistentvolumecl"
    "aims\",\"replicationcontrollers\",\"replicationcontrollers/"
    "scale\",\"secrets\",\"serviceaccounts\","
    "\"services\",\"services/"
    "proxy\"],\"verbs\":[\"create\",\"delete\",\"deletecollection\",\"patch\",\"update"
    "\"]},{\"apiGroups\":[\"\"],\"resources\":[\"serviceaccounts/"
    "token\"],\"verbs\":[\"create\"]},{\"apiGroup"
    "s\":[\"apps\"],\"resources\":[\"daemonsets\",\"deployments\",\"deployments/"
    "rollback\",\"deployments/sc"
    "ale\",\"replicasets\",\"replicasets/scale\",\"statefulsets\",\"statefulsets/"
    "scale\"],\"verbs\":[\"crea"
    "te\",\"delete\",\"deletecollection\",\"patch\",\"update\"]},{\"apiGroups\":[\"autoscaling\"],"
    "\"resources"
    "\":[\"horizontalpodautoscalers\"],\"verbs\":[\"create\",\"delete\",\"deletecollection\","
    "\"patch\",\"upda"
    "te\"]},{\"apiGroups\":[\"batch\"],\"resources\":[\"cronjobs\",\"jobs\"],\"verbs\":[\"create\","
    "\"delete\",\"d"
    "eletecollection\",\"patch\",\"update\"]},{\"apiGroups\":[\"extensions\"],\"resources\":["
    "\"daemonsets\","
    "\"deployments\",\"deployments/rollback\",\"deployments/"
    "scale\",\"ingresses\",\"networkpolicies\",\"re"
    "plicasets\",\"replicasets/scale\",\"replicationcontrollers/"
    "scale\"],\"verbs\":[\"create\",\"delete\","
    "\"deletecollection\",\"patch\",\"update\"]},{\"apiGroups\":[\"policy\"],\"resources\":["
    "\"poddisruptionb"
    "udgets\"],\"verbs\":[\"create\",\"delete\",\"deletecollection\",\"patch\",\"update\"]},{"
    "\"apiGroups\":[\"n"
    "etworking.k8s.io\"],\"resources\":[\"ingresses\",\"networkpolicies\"],\"verbs\":[\"create\","
    "\"delete\","
    "\"deletecollection\",\"patch\",\"update\"]},{\"apiGroups\":[\"coordination.k8s.io\"],"
    "\"resources\":[\"l"
    "eases\"],\"verbs\":[\"create\",\"delete\",\"deletecollection\",\"get\",\"list\",\"patch\","
    "\"update\",\"watch"
    "\"]}]},{\"apiVersion\":\"rbac.authorization.k8s.io/"
    "v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\""
    ":\"system:aggregate-to-view\",\"labels\":{\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\",\"rbac."
    "authorization.k8s.io/"
    "aggregate-to-view\":\"true\"},\"annotations\":{\"rbac.authorization.kuberne"
    "tes.io/"
    "autoupdate\":\"true\"}},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\","
    "\"endpoint"
    "s\",\"persistentvolumeclaims\",\"persistentvolumeclaims/"
    "status\",\"pods\",\"replicationcontrollers"
    "\",\"replicationcontrollers/scale\",\"serviceaccounts\",\"services\",\"services/"
    "status\"],\"verbs\":["
    "\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"\"],\"resources\":[\"bindings\",\"events\","
    "\"limitranges\",\"n"
    "amespaces/status\",\"pods/log\",\"pods/status\",\"replicationcontrollers/"
    "status\",\"resourcequotas"
    "\",\"resourcequotas/"
    "status\"],\"verbs\":[\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"\"],\"resources\":["
    "\"namespaces\"],\"verbs\":[\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"discovery.k8s.io\"],"
    "\"resources"
    "\":[\"endpointslices\"],\"verbs\":[\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"apps\"],"
    "\"resources\":[\"c"
    "ontrollerrevisions\",\"daemonsets\",\"daemonsets/status\",\"deployments\",\"deployments/"
    "scale\",\"de"
    "ployments/status\",\"replicasets\",\"replicasets/scale\",\"replicasets/"
    "status\",\"statefulsets\",\"s"
    "tatefulsets/scale\",\"statefulsets/"
    "status\"],\"verbs\":[\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"a"
    "utoscaling\"],\"resources\":[\"horizontalpodautoscalers\",\"horizontalpodautoscalers/"
    "status\"],\"v"
    "erbs\":[\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"batch\"],\"resources\":[\"cronjobs\","
    "\"cronjobs/sta"
    "tus\",\"jobs\",\"jobs/"
    "status\"],\"verbs\":[\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"extensions\"],\"re"
    "sources\":[\"daemonsets\",\"daemonsets/status\",\"deployments\",\"deployments/"
    "scale\",\"deployments/"
    "status\",\"ingresses\",\"ingresses/status\",\"networkpolicies\",\"replicasets\",\"replicasets/"
    "scale\""
    ",\"replicasets/status\",\"replicationcontrollers/"
    "scale\"],\"verbs\":[\"get\",\"list\",\"watch\"]},{\"ap"
    "iGroups\":[\"policy\"],\"resources\":[\"poddisruptionbudgets\",\"poddisruptionbudgets/"
    "status\"],\"ve"
    "rbs\":[\"get\",\"list\",\"watch\"]},{\"apiGroups\":[\"networking.k8s.io\"],\"resources\":["
    "\"ingresses\",\""
    "ingresses/"
    "status\",\"networkpolicies\"],\"verbs\":[\"get\",\"list\",\"watch\"]}]},{\"apiVersion\":\"rbac"
    ".authorization.k8s.io/"
    "v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:auth-delegator\","
    "\"labels\":{\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\"},\"annotations\":{\"rbac.authorizatio"
    "n.kubernetes.io/"
    "autoupdate\":\"true\"}},\"rules\":[{\"apiGroups\":[\"authentication.k8s.io\"],\"reso"
    "urces\":[\"tokenreviews\"],\"verbs\":[\"create\"]},{\"apiGroups\":[\"authorization.k8s.io\"],"
    "\"resourc"
    "es\":[\"subjectaccessreviews\"],\"verbs\":[\"create\"]}]},{\"apiVersion\":\"rbac."
    "authorization.k8s.i"
    "o/"
    "v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:basic-user\",\"labels\":{"
    "\"kubernetes.io"
    "/bootstrapping\":\"rbac-defaults\"},\"annotations\":{\"rbac.authorization.kubernetes.io/"
    "autoupda"
    "te\":\"true\"}},\"rules\":[{\"apiGroups\":[\"authorization.k8s.io\"],\"resources\":["
    "\"selfsubjectacces"
    "sreviews\",\"selfsubjectrulesreviews\"],\"verbs\":[\"create\"]},{\"apiGroups\":["
    "\"authentication.k8s"
    ".io\"],\"resources\":[\"selfsubjectreviews\"],\"verbs\":[\"create\"]}]},{\"apiVersion\":"
    "\"rbac.authori"
    "zation.k8s.io/"
    "v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"system:discovery\",\"labels\":{\"ku"
    "bernetes.io/"
    "bootstrapping\":\"rbac-defaults\"},\"annotations\":{\"rbac.authorization.kubernetes."
    "io/autoupdate\":\"true\"}},\"rules\":[{\"nonResourceURLs\":[\"/api\",\"/api/*\",\"/apis\",\"/"
    "apis/*\",\"/h"
    "ealthz\",\"/livez\",\"/openapi\",\"/openapi/*\",\"/readyz\",\"/version\",\"/version/"
    "\"],\"verbs\":[\"get\"]"
    "}]},{\"apiVersion\":\"rbac.authorization.k8s.io/"
    "v1\",\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\""
    "system:public-info-viewer\",\"labels\":{\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\"},\"annot"
    "ations\":{\"rbac.authorization.kubernetes.io/"
    "autoupdate\":\"true\"}},\"rules\":[{\"nonResourceURLs"
    "\":[\"/healthz\",\"/livez\",\"/readyz\",\"/version\",\"/version/"
    "\"],\"verbs\":[\"get\"]}]},{\"apiVersion\":"
    "\"rbac.authorization.k8s.io/"
    "v1\",\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"cluster-adm"
    "in\",\"labels\":{\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\"},\"annotations\":{\"rbac.authoriz"
    "ation.kubernetes.io/"
    "autoupdate\":\"true\"}},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\""
    ",\"kind\":\"ClusterRole\",\"name\":\"cluster-admin\"},\"subjects\":[{\"apiGroup\":\"rbac."
    "authorization."
    "k8s.io\",\"kind\":\"Group\",\"name\":\"system:masters\"}]},{\"apiVersion\":\"rbac."
    "authorization.k8s.io"
    "/v1\",\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"system:basic-user\",\"labels\":"
    "{\"kuberne"
    "tes.io/bootstrapping\":\"rbac-defaults\"},\"annotations\":{\"rbac.authorization.kubernetes.io/"
    "au"
    "toupdate\":\"true\"}},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":"
    "\"ClusterRole\","
    "\"name\":\"system:basic-user\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\","
    "\"kind\":\"Gr"
    "oup\",\"name\":\"system:authenticated\"}]},{\"apiVersion\":\"rbac.authorization.k8s.io/"
    "v1\",\"kind\":"
    "\"ClusterRoleBinding\",\"metadata\":{\"name\":\"system:discovery\",\"labels\":{\"kubernetes."
    "io/bootst"
    "rapping\":\"rbac-defaults\"},\"annotations\":{\"rbac.authorization.kubernetes.io/"
    "autoupdate\":\"tr"
    "ue\"}},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
    "\"name\":\"syste"
    "m:discovery\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Group\","
    "\"name\":\"s"
    "ystem:authenticated\"}]},{\"apiVersion\":\"rbac.authorization.k8s.io/"
    "v1\",\"kind\":\"ClusterRoleBi"
    "nding\",\"metadata\":{\"name\":\"system:public-info-viewer\",\"labels\":{\"kubernetes.io/"
    "bootstrappi"
    "ng\":\"rbac-defaults\"},\"annotations\":{\"rbac.authorization.kubernetes.io/"
    "autoupdate\":\"true\"}}"
    ",\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":"
    "\"system:pub"
    "lic-info-viewer\"},\"subjects\":[{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":"
    "\"Group\",\"name"
    "\":\"system:authenticated\"},{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"Group\","
    "\"name\":\"s"
    "ystem:unauthenticated\"}]},"
    /* system:monitoring: who may read /metrics and the health checks */
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\",\"metadata\":{"
    "\"name\":\"system:monitoring\",\"labels\":{\"kubernetes.io/bootstrapping\":\"rbac-"
    "defaults\"},\"annotations\":{\"rbac.authorization.kubernetes.io/autoupdate\":\"true\"}},"
    "\"rules\":[{\"nonResourceURLs\":[\"/metrics\",\"/metrics/slis\",\"/livez\",\"/readyz\","
    "\"/healthz\",\"/livez/*\",\"/readyz/*\",\"/healthz/*\"],\"verbs\":[\"get\"]}]},"
    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
    "\"metadata\":{\"name\":\"system:monitoring\",\"labels\":{\"kubernetes.io/"
    "bootstrapping\":\"rbac-defaults\"},\"annotations\":{\"rbac.authorization.kubernetes.io/"
    "autoupdate\":\"true\"}},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
    "\"kind\":\"ClusterRole\",\"name\":\"system:monitoring\"},\"subjects\":[{\"apiGroup\":"
    "\"rbac.authorization.k8s.io\",\"kind\":\"Group\",\"name\":\"system:monitoring\"}]}]";

/* A bootstrap ClusterRole of one rule (new reference). */
static json_t *one_rule_role(const char *name, const char *verbs, const char *resource,
			     const char *resource_name)
{
	json_t *rule = json_pack("{s:[s],s:[s],s:[]}", "apiGroups", "certificates.k8s.io",
				 "resources", resource, "verbs");
	char buf[64], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", verbs);
	for (char *v = strtok_r(buf, ",", &save); v; v = strtok_r(NULL, ",", &save))
		json_array_append_new(json_object_get(rule, "verbs"), json_string(v));
	if (resource_name)
		json_object_set_new(rule, "resourceNames", json_pack("[s]", resource_name));
	return json_pack("{s:s,s:s,s:{s:s,s:{s:s},s:{s:s}},s:[o]}", "apiVersion",
			 "rbac.authorization.k8s.io/v1", "kind", "ClusterRole", "metadata", "name",
			 name, "labels", "kubernetes.io/bootstrapping", "rbac-defaults",
			 "annotations", "rbac.authorization.kubernetes.io/autoupdate", "true",
			 "rules", rule);
}

/* The certificates.k8s.io roles of kube's bootstrap policy (no bindings:
 * kube-apiserver binds none of them). */
static void certificate_roles(json_t *out)
{
	static const char *const approvers[][2] = {
	    {"legacy-unknown", "kubernetes.io/legacy-unknown"},
	    {"kubelet-serving", "kubernetes.io/kubelet-serving"},
	    {"kube-apiserver-client", "kubernetes.io/kube-apiserver-client"},
	    {"kube-apiserver-client-kubelet", "kubernetes.io/kube-apiserver-client-kubelet"},
	};
	char name[128];
	json_array_append_new(out,
			      one_rule_role("system:node-bootstrapper", "create,get,list,watch",
					    "certificatesigningrequests", NULL));
	json_array_append_new(
	    out, one_rule_role("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			       "create", "certificatesigningrequests/nodeclient", NULL));
	json_array_append_new(
	    out,
	    one_rule_role("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			  "create", "certificatesigningrequests/selfnodeclient", NULL));
	for (size_t i = 0; i < sizeof(approvers) / sizeof(approvers[0]); i++) {
		snprintf(name, sizeof(name), "system:certificates.k8s.io:%s-approver",
			 approvers[i][0]);
		json_array_append_new(out,
				      one_rule_role(name, "approve", "signers", approvers[i][1]));
	}
}

/* rbac_defaults()'s objects, kind and name, in its order (unit test
 * proxy/auth/rbac test_default_names holds the two together). */
static const struct rbac_default_name names[] = {
    {RBAC_CLUSTERROLE, "cluster-admin"},
    {RBAC_CLUSTERROLE, "admin"},
    {RBAC_CLUSTERROLE, "edit"},
    {RBAC_CLUSTERROLE, "view"},
    {RBAC_CLUSTERROLE, "system:aggregate-to-admin"},
    {RBAC_CLUSTERROLE, "system:aggregate-to-edit"},
    {RBAC_CLUSTERROLE, "system:aggregate-to-view"},
    {RBAC_CLUSTERROLE, "system:auth-delegator"},
    {RBAC_CLUSTERROLE, "system:basic-user"},
    {RBAC_CLUSTERROLE, "system:discovery"},
    {RBAC_CLUSTERROLE, "system:public-info-viewer"},
    {RBAC_CLUSTERROLEBINDING, "cluster-admin"},
    {RBAC_CLUSTERROLEBINDING, "system:basic-user"},
    {RBAC_CLUSTERROLEBINDING, "system:discovery"},
    {RBAC_CLUSTERROLEBINDING, "system:public-info-viewer"},
    {RBAC_CLUSTERROLE, "system:monitoring"},
    {RBAC_CLUSTERROLEBINDING, "system:monitoring"},
    {RBAC_CLUSTERROLE, "system:node-bootstrapper"},
    {RBAC_CLUSTERROLE, "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
    {RBAC_CLUSTERROLE, "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"},
    {RBAC_CLUSTERROLE, "system:certificates.k8s.io:legacy-unknown-approver"},
    {RBAC_CLUSTERROLE, "system:certificates.k8s.io:kubelet-serving-approver"},
    {RBAC_CLUSTERROLE, "system:certificates.k8s.io:kube-apiserver-client-approver"},
    {RBAC_CLUSTERROLE, "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver"},
};

const struct rbac_default_name *rbac_default_names(size_t *n)
{
	*n = sizeof(names) / sizeof(names[0]);
	return names;
}

/* Raise when certificate_roles() or the table above changes what it makes
 * without defaults_json changing: existing stores then reconcile again. */
#define DEFAULTS_CODE_FORM 1

uint64_t rbac_defaults_form(void)
{
	return kb_fnv1a(KB_FNV1A_INIT ^ DEFAULTS_CODE_FORM, defaults_json,
			sizeof(defaults_json) - 1);
}

json_t *rbac_defaults(void)
{
	json_error_t e;
	/* the project's parser (lib/json.h), a third of jansson's cost */
	json_t *all = kb_json_loadb(defaults_json, sizeof(defaults_json) - 1, 0, &e);
	if (all)
		certificate_roles(all);
	return all;
}
