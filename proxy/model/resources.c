/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The built-in resource table (see resource.h). Facts are kube-apiserver
 * 1.33's: scope, kind, plural, singular, short names, categories, verbs,
 * subresources and the extra field selectors each resource supports.
 */
#include "proxy/model/resource.h"
#include "proxy/model/convert.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/util.h"

#define S(...) ((const char *const[]){__VA_ARGS__, NULL})
#define SUB_STATUS(g, v, k)                                            \
	{                                                              \
		"status", g, v, k, VERB_GET | VERB_PATCH | VERB_UPDATE \
	}
#define SUB_SCALE                                                                          \
	{                                                                                  \
		"scale", "autoscaling", "v1", "Scale", VERB_GET | VERB_PATCH | VERB_UPDATE \
	}
#define SUB_END                           \
	{                                 \
		NULL, NULL, NULL, NULL, 0 \
	}
#define CORE(kind_, plural_, singular_, ns_)                                                       \
	.group = "", .version = "v1", .kind = kind_, .list_kind = kind_ "List", .plural = plural_, \
	.singular = singular_, .namespaced = ns_, .stored = true, .verbs = VERBS_ALL,              \
	.proto = "k8s.io.api.core.v1." kind_
#define APPS(kind_, plural_, singular_)                                               \
	.group = "apps", .version = "v1", .kind = kind_, .list_kind = kind_ "List",   \
	.plural = plural_, .singular = singular_, .namespaced = true, .stored = true, \
	.verbs = VERBS_ALL, .proto = "k8s.io.api.apps.v1." kind_, .has_status = true
#define BATCH(kind_, plural_, singular_)                                               \
	.group = "batch", .version = "v1", .kind = kind_, .list_kind = kind_ "List",   \
	.plural = plural_, .singular = singular_, .namespaced = true, .stored = true,  \
	.verbs = VERBS_ALL, .proto = "k8s.io.api.batch.v1." kind_, .has_status = true, \
	.categories = S("all")
#define RBAC(kind_, plural_, singular_, ns_)                                                    \
	.group = "rbac.authorization.k8s.io", .version = "v1", .kind = kind_,                   \
	.list_kind = kind_ "List", .plural = plural_, .singular = singular_, .namespaced = ns_, \
	.stored = true, .verbs = VERBS_ALL, .proto = "k8s.io.api.rbac.v1." kind_
#define REVIEW(group_, version_, kind_, plural_, ns_, pkg_)                             \
	.group = group_, .version = version_, .kind = kind_, .list_kind = kind_ "List", \
	.plural = plural_, .singular = "", .namespaced = ns_, .stored = false,          \
	.verbs = VERB_CREATE, .proto = "k8s.io.api." pkg_ "." version_ "." kind_

static const struct proxy_subresource ns_subs[] = {
    SUB_STATUS("", "v1", "Namespace"),
    {"finalize", "", "v1", "Namespace", VERB_UPDATE},
    SUB_END,
};
static const struct proxy_subresource sa_subs[] = {
    {"token", "authentication.k8s.io", "v1", "TokenRequest", VERB_CREATE}, SUB_END};
static const struct proxy_subresource crd_subs[] = {
    SUB_STATUS("apiextensions.k8s.io", "v1", "CustomResourceDefinition"), SUB_END};
static const struct proxy_subresource pod_subs[] = {
    SUB_STATUS("", "v1", "Pod"),
    {"log", "", "v1", "Pod", VERB_GET},
    {"exec", "", "v1", "PodExecOptions", VERB_CREATE | VERB_GET},
    {"attach", "", "v1", "PodAttachOptions", VERB_CREATE | VERB_GET},
    {"portforward", "", "v1", "PodPortForwardOptions", VERB_CREATE | VERB_GET},
    {"binding", "", "v1", "Binding", VERB_CREATE},
    {"eviction", "policy", "v1", "Eviction", VERB_CREATE},
    {"ephemeralcontainers", "", "v1", "Pod", VERB_GET | VERB_PATCH | VERB_UPDATE},
    SUB_END};
static const struct proxy_subresource svc_subs[] = {SUB_STATUS("", "v1", "Service"), SUB_END};
static const struct proxy_subresource node_subs[] = {SUB_STATUS("", "v1", "Node"), SUB_END};
static const struct proxy_subresource pvc_subs[] = {SUB_STATUS("", "v1", "PersistentVolumeClaim"),
						    SUB_END};
static const struct proxy_subresource pv_subs[] = {SUB_STATUS("", "v1", "PersistentVolume"),
						   SUB_END};
static const struct proxy_subresource rq_subs[] = {SUB_STATUS("", "v1", "ResourceQuota"), SUB_END};
static const struct proxy_subresource deploy_subs[] = {SUB_STATUS("apps", "v1", "Deployment"),
						       SUB_SCALE, SUB_END};
static const struct proxy_subresource rc_subs[] = {SUB_STATUS("", "v1", "ReplicationController"),
						   SUB_SCALE, SUB_END};
static const struct proxy_subresource rs_subs[] = {SUB_STATUS("apps", "v1", "ReplicaSet"),
						   SUB_SCALE, SUB_END};
static const struct proxy_subresource sts_subs[] = {SUB_STATUS("apps", "v1", "StatefulSet"),
						    SUB_SCALE, SUB_END};
static const struct proxy_subresource ds_subs[] = {SUB_STATUS("apps", "v1", "DaemonSet"), SUB_END};
static const struct proxy_subresource job_subs[] = {SUB_STATUS("batch", "v1", "Job"), SUB_END};
static const struct proxy_subresource cj_subs[] = {SUB_STATUS("batch", "v1", "CronJob"), SUB_END};
static const struct proxy_subresource hpa_subs[] = {
    SUB_STATUS("autoscaling", "v2", "HorizontalPodAutoscaler"), SUB_END};
static const struct proxy_subresource hpa_v1_subs[] = {
    SUB_STATUS("autoscaling", "v1", "HorizontalPodAutoscaler"), SUB_END};
static const struct proxy_subresource pdb_subs[] = {
    SUB_STATUS("policy", "v1", "PodDisruptionBudget"), SUB_END};
static const struct proxy_subresource fs_subs[] = {
    SUB_STATUS("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"), SUB_END};
static const struct proxy_subresource plc_subs[] = {
    SUB_STATUS("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration"), SUB_END};
static const struct proxy_subresource ing_subs[] = {
    SUB_STATUS("networking.k8s.io", "v1", "Ingress"), SUB_END};
static const struct proxy_subresource vap_subs[] = {
    SUB_STATUS("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy"), SUB_END};
static const struct proxy_subresource apisvc_subs[] = {
    SUB_STATUS("apiregistration.k8s.io", "v1", "APIService"), SUB_END};
static const struct proxy_subresource csr_subs[] = {
    SUB_STATUS("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    {"approval", "certificates.k8s.io", "v1", "CertificateSigningRequest",
     VERB_GET | VERB_PATCH | VERB_UPDATE},
    SUB_END};

/* A kind stored as an object, of group g at version v (proto package pkg). */
#define STORED(g, v, pkg, kind_, plural_, singular_, ns_)                                      \
	.group = g, .version = v, .kind = kind_, .list_kind = kind_ "List", .plural = plural_, \
	.singular = singular_, .namespaced = ns_, .stored = true, .verbs = VERBS_ALL,          \
	.proto = "k8s.io.api." pkg "." v "." kind_

static struct proxy_resource builtins[] = {
    {CORE("Namespace", "namespaces", "namespace", false), .short_names = S("ns"),
     .subresources = ns_subs, .field_selectors = S("status.phase"), .has_status = true},
    {CORE("Pod", "pods", "pod", true), .short_names = S("po"), .categories = S("all"),
     .subresources = pod_subs, .has_status = true,
     .field_selectors = S("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
			  "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
			  "status.podIP", "status.podIPs", "status.nominatedNodeName")},
    {CORE("Service", "services", "service", true), .short_names = S("svc"), .categories = S("all"),
     .subresources = svc_subs, .has_status = true,
     .field_selectors = S("spec.clusterIP", "spec.type")},
    {CORE("ConfigMap", "configmaps", "configmap", true), .short_names = S("cm")},
    {CORE("Secret", "secrets", "secret", true), .field_selectors = S("type")},
    {CORE("ServiceAccount", "serviceaccounts", "serviceaccount", true), .short_names = S("sa"),
     .subresources = sa_subs},
    {CORE("Event", "events", "event", true), .short_names = S("ev"),
     .field_selectors =
	 S("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
	   "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
	   "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")},
    {CORE("Node", "nodes", "node", false), .short_names = S("no"), .subresources = node_subs,
     .has_status = true, .field_selectors = S("spec.unschedulable")},
    {CORE("Endpoints", "endpoints", "endpoints", true), .short_names = S("ep")},
    {CORE("PersistentVolumeClaim", "persistentvolumeclaims", "persistentvolumeclaim", true),
     .short_names = S("pvc"), .subresources = pvc_subs, .has_status = true},
    /* stored; the syncer adds one for each claim the host bound (syncer/pv.c) */
    {CORE("PersistentVolume", "persistentvolumes", "persistentvolume", false),
     .short_names = S("pv"), .subresources = pv_subs, .has_status = true},
    {CORE("PodTemplate", "podtemplates", "podtemplate", true)},
    /* proxy/controllers/replicaset.c keeps their pods, as ReplicaSets' */
    {CORE("ReplicationController", "replicationcontrollers", "replicationcontroller", true),
     .short_names = S("rc"), .categories = S("all"), .subresources = rc_subs, .has_status = true},
    {CORE("ResourceQuota", "resourcequotas", "resourcequota", true), .short_names = S("quota"),
     .subresources = rq_subs, .has_status = true},
    {CORE("LimitRange", "limitranges", "limitrange", true), .short_names = S("limits")},
    /* the aggregation layer's APIServices (proxy/aggregation/apiservice.c): first of the
     * named groups, as kube-aggregator lists its own group; kube's strategy
     * (status set on create, kept by updates of the main resource) in
     * objects.c, validation in validate_apiservice.c; no generation, as
     * kube's strategy sets none; a PUT needs a resourceVersion */
    {.group = "apiregistration.k8s.io",
     .version = "v1",
     .kind = "APIService",
     .list_kind = "APIServiceList",
     .plural = "apiservices",
     .singular = "apiservice",
     .namespaced = false,
     .stored = true,
     .verbs = VERBS_ALL,
     .proto = "k8s.io.kube_aggregator.pkg.apis.apiregistration.v1.APIService",
     .categories = S("api-extensions"),
     .subresources = apisvc_subs,
     .has_status = true,
     .no_generation = true,
     .conditional_update = true},
    {APPS("Deployment", "deployments", "deployment"), .short_names = S("deploy"),
     .categories = S("all"), .subresources = deploy_subs},
    {APPS("ReplicaSet", "replicasets", "replicaset"), .short_names = S("rs"),
     .categories = S("all"), .subresources = rs_subs, .field_selectors = S("status.replicas")},
    {APPS("StatefulSet", "statefulsets", "statefulset"), .short_names = S("sts"),
     .categories = S("all"), .subresources = sts_subs},
    {APPS("DaemonSet", "daemonsets", "daemonset"), .short_names = S("ds"), .categories = S("all"),
     .subresources = ds_subs},
    {.group = "apps",
     .version = "v1",
     .kind = "ControllerRevision",
     .list_kind = "ControllerRevisionList",
     .plural = "controllerrevisions",
     .singular = "controllerrevision",
     .namespaced = true,
     .stored = true,
     .verbs = VERBS_ALL,
     .proto = "k8s.io.api.apps.v1.ControllerRevision"},
    {BATCH("Job", "jobs", "job"), .subresources = job_subs,
     .field_selectors = S("status.successful")},
    {BATCH("CronJob", "cronjobs", "cronjob"), .short_names = S("cj"), .subresources = cj_subs},
    /* stored as objects, as kube-apiserver serves them; what acts on them
     * (autoscaler, disruption and ingress controllers, network plugins,
     * provisioners) belongs to the host cluster; EndpointSlices are
     * maintained by proxy/controllers/endpointslice.c */
    {STORED("autoscaling", "v2", "autoscaling", "HorizontalPodAutoscaler",
	    "horizontalpodautoscalers", "horizontalpodautoscaler", true),
     .short_names = S("hpa"), .categories = S("all"), .subresources = hpa_subs, .has_status = true},
    {STORED("autoscaling", "v1", "autoscaling", "HorizontalPodAutoscaler",
	    "horizontalpodautoscalers", "horizontalpodautoscaler", true),
     .short_names = S("hpa"), .categories = S("all"), .subresources = hpa_v1_subs,
     .has_status = true, .storage = "autoscaling/horizontalpodautoscalers",
     .to_storage = convert_hpa_v1_to_v2, .from_storage = convert_hpa_v2_to_v1},
    {STORED("policy", "v1", "policy", "PodDisruptionBudget", "poddisruptionbudgets",
	    "poddisruptionbudget", true),
     .short_names = S("pdb"), .subresources = pdb_subs, .has_status = true},
    {STORED("networking.k8s.io", "v1", "networking", "Ingress", "ingresses", "ingress", true),
     .short_names = S("ing"), .subresources = ing_subs, .has_status = true},
    {STORED("networking.k8s.io", "v1", "networking", "IngressClass", "ingressclasses",
	    "ingressclass", false)},
    {STORED("networking.k8s.io", "v1", "networking", "NetworkPolicy", "networkpolicies",
	    "networkpolicy", true),
     .short_names = S("netpol")},
    {STORED("discovery.k8s.io", "v1", "discovery", "EndpointSlice", "endpointslices",
	    "endpointslice", true)},
    {STORED("scheduling.k8s.io", "v1", "scheduling", "PriorityClass", "priorityclasses",
	    "priorityclass", false),
     .short_names = S("pc")},
    {STORED("storage.k8s.io", "v1", "storage", "StorageClass", "storageclasses", "storageclass",
	    false),
     .short_names = S("sc")},
    {STORED("node.k8s.io", "v1", "node", "RuntimeClass", "runtimeclasses", "runtimeclass", false)},
    /* API Priority and Fairness objects (proxy/api/flowcontrol.c): stored,
     * defaulted and validated as kube's, the mandatory exempt and catch-all
     * pairs made at start; nothing throttles a tenant's requests by them */
    {STORED("flowcontrol.apiserver.k8s.io", "v1", "flowcontrol", "FlowSchema", "flowschemas",
	    "flowschema", false),
     .subresources = fs_subs, .has_status = true},
    {STORED("flowcontrol.apiserver.k8s.io", "v1", "flowcontrol", "PriorityLevelConfiguration",
	    "prioritylevelconfigurations", "prioritylevelconfiguration", false),
     .subresources = plc_subs, .has_status = true},
    /* admission webhook configurations (proxy/admission/webhook.c calls them):
     * defaulted and validated as kube-apiserver does (objects.c,
     * validate_webhook.c); has_status only for kube's generation (1 on
     * create, +1 when webhooks change), no status subresource; a PUT needs
     * a resourceVersion (kube's AllowUnconditionalUpdate false) */
    {STORED("admissionregistration.k8s.io", "v1", "admissionregistration",
	    "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
	    "mutatingwebhookconfiguration", false),
     .categories = S("api-extensions"), .has_status = true, .conditional_update = true},
    {STORED("admissionregistration.k8s.io", "v1", "admissionregistration",
	    "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
	    "validatingwebhookconfiguration", false),
     .categories = S("api-extensions"), .has_status = true, .conditional_update = true},
    /* admission policies: stored, defaulted and validated as kube-apiserver
     * does (objects.c, validate_vap.c) and evaluated by proxy/admission/vap.c. The policy has kube's status subresource (its status is
     * cleared on create); the binding has_status only for kube's generation.
     * Both refuse a PUT without a resourceVersion, as kube's strategies.
     * v1 only, as kube 1.33 serves by default (v1beta1 is off). */
    {STORED("admissionregistration.k8s.io", "v1", "admissionregistration",
	    "ValidatingAdmissionPolicy", "validatingadmissionpolicies", "validatingadmissionpolicy",
	    false),
     .categories = S("api-extensions"), .subresources = vap_subs, .has_status = true,
     .conditional_update = true},
    {STORED("admissionregistration.k8s.io", "v1", "admissionregistration",
	    "ValidatingAdmissionPolicyBinding", "validatingadmissionpolicybindings",
	    "validatingadmissionpolicybinding", false),
     .categories = S("api-extensions"), .has_status = true, .conditional_update = true},
    /* CSRs: proxy/admission/csr.c (strategy, validation, admission: its
     * write_check, set at start), proxy/controllers/csr.c (signer,
     * cleaner); no spec/status split (the strategy keeps both) */
    {STORED("certificates.k8s.io", "v1", "certificates", "CertificateSigningRequest",
	    "certificatesigningrequests", "certificatesigningrequest", false),
     .short_names = S("csr"), .subresources = csr_subs, .field_selectors = S("spec.signerName")},
    {.group = "events.k8s.io",
     .version = "v1",
     .kind = "Event",
     .list_kind = "EventList",
     .plural = "events",
     .singular = "event",
     .namespaced = true,
     .stored = true,
     .verbs = VERBS_ALL,
     .proto = "k8s.io.api.events.v1.Event",
     .short_names = S("ev"),
     .storage = "/events",
     .to_storage = convert_event_to_core,
     .from_storage = convert_event_from_core,
     .field_selectors = S("regarding.kind", "regarding.namespace", "regarding.name",
			  "regarding.uid", "regarding.apiVersion", "regarding.resourceVersion",
			  "regarding.fieldPath", "reason", "reportingController", "type")},
    {.group = "coordination.k8s.io",
     .version = "v1",
     .kind = "Lease",
     .list_kind = "LeaseList",
     .plural = "leases",
     .singular = "lease",
     .namespaced = true,
     .stored = true,
     .verbs = VERBS_ALL,
     .proto = "k8s.io.api.coordination.v1.Lease"},
    /* CRDs (proxy/api/crd.c checks them: no apiextensions message in types_gen.c) */
    {.group = "apiextensions.k8s.io",
     .version = "v1",
     .kind = "CustomResourceDefinition",
     .list_kind = "CustomResourceDefinitionList",
     .plural = "customresourcedefinitions",
     .singular = "customresourcedefinition",
     .namespaced = false,
     .stored = true,
     .verbs = VERBS_ALL,
     .short_names = S("crd", "crds"),
     .categories = S("api-extensions"),
     .subresources = crd_subs,
     .has_status = true},
    /* RBAC (proxy/auth/authz.c evaluates them) */
    {RBAC("Role", "roles", "role", true)},
    {RBAC("ClusterRole", "clusterroles", "clusterrole", false)},
    {RBAC("RoleBinding", "rolebindings", "rolebinding", true)},
    {RBAC("ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", false)},
    /* reviews: computed, never stored (proxy/api/virtual.c) */
    {REVIEW("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
	    false, "authorization")},
    {REVIEW("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews",
	    false, "authorization")},
    {REVIEW("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews", false,
	    "authorization")},
    {REVIEW("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews",
	    true, "authorization")},
    {REVIEW("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", false,
	    "authentication")},
    {REVIEW("authentication.k8s.io", "v1beta1", "SelfSubjectReview", "selfsubjectreviews", false,
	    "authentication")},
    {REVIEW("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", false, "authentication")},
};

#define MAX_ROWS 1024
static struct proxy_resource *rows[MAX_ROWS];
static size_t nrows;

static void table_init(void)
{
	if (nrows)
		return;
	for (size_t i = 0; i < KB_ARRAY_SIZE(builtins); i++) {
		struct proxy_resource *r = &builtins[i];
		if (r->storage)
			snprintf(r->store_key, sizeof(r->store_key), "%s", r->storage);
		else
			snprintf(r->store_key, sizeof(r->store_key), "%s/%s", r->group, r->plural);
		rows[nrows++] = r;
	}
}

const struct proxy_resource *resource_find(const char *group, const char *version,
					   const char *plural)
{
	table_init();
	for (size_t i = 0; i < nrows; i++) {
		const struct proxy_resource *r = rows[i];
		if (strcmp(r->plural, plural) == 0 && strcmp(r->group, group) == 0 &&
		    strcmp(r->version, version) == 0)
			return r;
	}
	return NULL;
}

const struct proxy_resource *resource_find_kind(const char *group, const char *kind)
{
	table_init();
	for (size_t i = 0; i < nrows; i++) {
		const struct proxy_resource *r = rows[i];
		if (strcmp(r->kind, kind) == 0 && strcmp(r->group, group) == 0)
			return r;
	}
	return NULL;
}

size_t resource_count(void)
{
	table_init();
	return nrows;
}

const struct proxy_resource *resource_at(size_t i)
{
	table_init();
	return i < nrows ? rows[i] : NULL;
}

const struct proxy_subresource *resource_sub(const struct proxy_resource *r, const char *name)
{
	for (const struct proxy_subresource *s = r->subresources; s && s->name; s++)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

int resource_add(struct proxy_resource *r)
{
	table_init();
	if (nrows >= MAX_ROWS)
		return -28; /* -ENOSPC */
	snprintf(r->store_key, sizeof(r->store_key), "%s/%s", r->group, r->plural);
	rows[nrows++] = r;
	return 0;
}

void resource_remove(const struct proxy_resource *r)
{
	for (size_t i = 0; i < nrows; i++) {
		if (rows[i] == r) {
			memmove(&rows[i], &rows[i + 1], (nrows - i - 1) * sizeof(rows[0]));
			nrows--;
			return;
		}
	}
}

int resource_set_write_check(const char *group, const char *plural, resource_write_check_fn fn)
{
	int rc = -ENOENT;
	for (size_t i = 0; i < KB_ARRAY_SIZE(builtins); i++)
		if (strcmp(builtins[i].group, group) == 0 &&
		    strcmp(builtins[i].plural, plural) == 0) {
			builtins[i].write_check = fn;
			rc = 0;
		}
	return rc;
}
