/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Table printers (see printers.h). Each built-in kind has a column list and
 * a cell function mirroring kube's pkg/printers/internalversion logic (pod
 * status reasons, "n/m" ready counts, "<none>" placeholders, port strings).
 * Objects are read as JSON; a missing field prints like Go's zero value.
 */
#include "proxy/model/printers.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "proxy/model/selector.h"

/* ---- columns ---------------------------------------------------------------- */

struct col {
	const char *name, *type, *format;
	int priority;
	const char *desc;
};

#define D_NAME                                                                          \
	"Name must be unique within a namespace. Is required when creating resources, " \
	"although some resources may allow a client to request the generation of an "   \
	"appropriate name automatically. Name is primarily intended for creation "      \
	"idempotence and configuration definition. Cannot be updated. More info: "      \
	"https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
#define D_AGE                                                                             \
	"CreationTimestamp is a timestamp representing the server time when this object " \
	"was created. It is not guaranteed to be set in happens-before order across "     \
	"separate operations. Clients may not set this value. It is represented in "      \
	"RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for "    \
	"lists. More info: https://git.k8s.io/community/contributors/devel/"              \
	"sig-architecture/api-conventions.md#metadata"

#define C_NAME                                      \
	{                                           \
		"Name", "string", "name", 0, D_NAME \
	}
#define C_AGE                                 \
	{                                     \
		"Age", "string", "", 0, D_AGE \
	}
#define C_S(n, d)                     \
	{                             \
		n, "string", "", 0, d \
	}
#define C_I(n, d)                      \
	{                              \
		n, "integer", "", 0, d \
	}
#define C_W(n, d)                     \
	{                             \
		n, "string", "", 1, d \
	}
#define C_END                             \
	{                                 \
		NULL, NULL, NULL, 0, NULL \
	}

static const struct col cols_default[] = {
    C_NAME,
    {"Created At", "date", "", 0, D_AGE},
    C_END,
};
static const struct col cols_name_age[] = {C_NAME, C_AGE, C_END};

static const struct col cols_pod[] = {
    C_NAME,
    C_S("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    C_S("Status", "The aggregate status of the containers in this pod."),
    C_S("Restarts", "The number of times the containers in this pod have been restarted "
		    "and when the last container in this pod has restarted."),
    C_AGE,
    C_W("IP", "podIP address allocated to the pod. Routable at least within the cluster. "
	      "Empty if not yet allocated."),
    C_W("Node", "NodeName indicates in which node this pod is scheduled."),
    C_W("Nominated Node",
	"nominatedNodeName is set only when this pod preempts other pods "
	"on the node, but it cannot be scheduled right away as preemption victims "
	"receive their graceful termination periods."),
    C_W("Readiness Gates", "If specified, all readiness gates will be evaluated for pod "
			   "readiness."),
    C_END,
};

static const struct col cols_namespace[] = {
    C_NAME,
    C_S("Status", "The status of the namespace"),
    C_AGE,
    C_END,
};

static const struct col cols_service[] = {
    C_NAME,
    C_S("Type", "type determines how the Service is exposed."),
    C_S("Cluster-IP", "clusterIP is the IP address of the service."),
    C_S("External-IP", "externalIPs is a list of IP addresses for which nodes in the "
		       "cluster will also accept traffic for this service."),
    C_S("Port(s)", "The list of ports that are exposed by this service."),
    C_AGE,
    C_W("Selector", "Route service traffic to pods with label keys and values matching "
		    "this selector."),
    C_END,
};

static const struct col cols_configmap[] = {
    C_NAME,
    C_I("Data", "Data contains the configuration data."),
    C_AGE,
    C_END,
};

static const struct col cols_secret[] = {
    C_NAME,
    C_S("Type", "Used to facilitate programmatic handling of secret data."),
    C_I("Data", "Data contains the secret data."),
    C_AGE,
    C_END,
};

static const struct col cols_serviceaccount[] = {
    C_NAME,
    C_I("Secrets", "Secrets is a list of the secrets in the same namespace that "
		   "pods running using this ServiceAccount are allowed to use."),
    C_AGE,
    C_END,
};

static const struct col cols_event[] = {
    C_S("Last Seen", "The time at which the most recent occurrence of this event was "
		     "recorded."),
    C_S("Type", "Type of this event (Normal, Warning), new types could be added in the "
		"future"),
    C_S("Reason", "This should be a short, machine understandable string that gives the "
		  "reason for the transition into the object's current status."),
    C_S("Object", "The object that this event is about."),
    C_W("Subobject", "If referring to a piece of an object instead of an entire object, "
		     "this string should contain a valid JSON/Go field access statement."),
    C_W("Source", "The component reporting this event. Should be a short machine "
		  "understandable string."),
    C_S("Message", "A human-readable description of the status of this operation."),
    C_W("First Seen", "The time at which the event was first recorded. (Time of server "
		      "receipt is in TypeMeta.)"),
    {"Count", "string", "", 1, "The number of times this event has occurred."},
    {"Name", "string", "name", 1, D_NAME},
    C_END,
};

static const struct col cols_node[] = {
    C_NAME,
    C_S("Status", "The status of the node"),
    C_S("Roles", "The roles of the node"),
    C_AGE,
    C_S("Version", "Kubelet Version reported by the node."),
    C_W("Internal-IP", "List of addresses reachable to the node."),
    C_W("External-IP", "List of addresses reachable to the node."),
    C_W("OS-Image", "OS Image reported by the node from /etc/os-release (e.g. Debian "
		    "GNU/Linux 7 (wheezy))."),
    C_W("Kernel-Version", "Kernel Version reported by the node from 'uname -r' (e.g. "
			  "3.16.0-0.bpo.4-amd64)."),
    C_W("Container-Runtime", "ContainerRuntime Version reported by the node through "
			     "runtime remote API (e.g. containerd://1.4.2)."),
    C_END,
};

static const struct col cols_endpoints[] = {
    C_NAME,
    C_S("Endpoints", "Endpoints is the list of references to objects exposing "
		     "the service."),
    C_AGE,
    C_END,
};

static const struct col cols_endpointslice[] = {
    C_NAME,
    C_S("AddressType", "addressType specifies the type of address carried by this "
		       "EndpointSlice. All addresses in this slice must be the same type. This "
		       "field is immutable after creation. The following address types are "
		       "currently supported:\n* IPv4: Represents an IPv4 Address.\n* IPv6: "
		       "Represents an IPv6 Address.\n* FQDN: Represents a Fully Qualified Domain "
		       "Name."),
    C_S("Ports", "ports specifies the list of network ports exposed by each endpoint in this "
		 "slice. Each port must have a unique name. When ports is empty, it indicates "
		 "that there are no defined ports. When a port is defined with a nil port value, "
		 "it indicates \"all ports\". Each slice may include a maximum of 100 ports."),
    C_S("Endpoints", "endpoints is a list of unique endpoints in this slice. Each slice may "
		     "include a maximum of 1000 endpoints."),
    C_AGE,
    C_END,
};

static const struct col cols_pvc[] = {
    C_NAME,
    C_S("Status", "Phase represents the current phase of PersistentVolumeClaim."),
    C_S("Volume", "VolumeName is the binding reference to the PersistentVolume backing "
		  "this claim."),
    C_S("Capacity", "capacity represents the actual resources of the underlying volume."),
    C_S("Access Modes", "accessModes contains the desired access modes the volume should "
			"have."),
    C_S("StorageClass", "StorageClass of the PVC"),
    C_S("VolumeAttributesClass", "VolumeAttributesClass of the PVC"),
    C_AGE,
    C_W("VolumeMode", "volumeMode defines what type of volume is required by the claim."),
    C_END,
};

static const struct col cols_pv[] = {
    C_NAME,
    C_S("Capacity", "capacity is the description of the persistent volume's resources and "
		    "capacity. More info: "
		    "https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity"),
    C_S("Access Modes", "accessModes contains all ways the volume can be mounted. More info: "
			"https://kubernetes.io/docs/concepts/storage/"
			"persistent-volumes#access-modes"),
    C_S("Reclaim Policy",
	"persistentVolumeReclaimPolicy defines what happens to a persistent volume when released "
	"from its claim. Valid options are Retain (default for manually created "
	"PersistentVolumes), Delete (default for dynamically provisioned PersistentVolumes), and "
	"Recycle (deprecated). Recycle must be supported by the volume plugin underlying this "
	"PersistentVolume. More info: "
	"https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming"),
    C_S("Status", "phase indicates if a volume is available, bound to a claim, or released by "
		  "a claim. More info: "
		  "https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase"),
    C_S("Claim", "claimRef is part of a bi-directional binding between PersistentVolume and "
		 "PersistentVolumeClaim. Expected to be non-nil when bound. claim.VolumeName is "
		 "the authoritative bind between PV and PVC. More info: "
		 "https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding"),
    C_S("StorageClass", "StorageClass of the pv"),
    C_S("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
    C_S("Reason", "reason is a brief CamelCase string that describes any failure and is meant "
		  "for machine parsing and tidy display in the CLI."),
    C_AGE,
    C_W("VolumeMode", "volumeMode defines if a volume is intended to be used with a formatted "
		      "filesystem or to remain in raw block state. Value of Filesystem is implied "
		      "when not included in spec."),
    C_END,
};

static const struct col cols_quota[] = {
    C_NAME,
    C_AGE,
    C_S("Request", "Request represents a minimum amount of cpu/memory that a container "
		   "may consume."),
    C_S("Limit", "Limits control the maximum amount of cpu/memory that a container may "
		 "use independent of contention on the node."),
    C_END,
};

#define C_CONTAINERS C_W("Containers", "Names of each container in the template.")
#define C_IMAGES     C_W("Images", "Images referenced by each container in the template.")
#define C_SELECTOR   C_W("Selector", "Label selector for pods.")

static const struct col cols_deployment[] = {
    C_NAME,
    C_S("Ready", "Number of the pod with ready state"),
    C_I("Up-to-date", "Total number of non-terminated pods targeted by this deployment "
		      "that have the desired template spec."),
    C_I("Available", "Total number of available pods (ready for at least minReadySeconds) "
		     "targeted by this deployment."),
    C_AGE,
    C_CONTAINERS,
    C_IMAGES,
    C_SELECTOR,
    C_END,
};

static const struct col cols_replicaset[] = {
    C_NAME,
    C_I("Desired", "Replicas is the number of desired replicas."),
    C_I("Current", "Replicas is the most recently observed number of replicas."),
    C_I("Ready", "The number of ready replicas for this replica set."),
    C_AGE,
    C_CONTAINERS,
    C_IMAGES,
    C_SELECTOR,
    C_END,
};

static const struct col cols_rc[] = {
    C_NAME,
    C_I("Desired", "Replicas is the number of desired replicas. This is a pointer to distinguish "
		   "between explicit zero and unspecified. Defaults to 1. More info: "
		   "https://kubernetes.io/docs/concepts/workloads/controllers/"
		   "replicationcontroller#what-is-a-replicationcontroller"),
    C_I("Current", "Replicas is the most recently observed number of replicas. More info: "
		   "https://kubernetes.io/docs/concepts/workloads/controllers/"
		   "replicationcontroller#what-is-a-replicationcontroller"),
    C_I("Ready", "The number of ready replicas for this replication controller."),
    C_AGE,
    C_CONTAINERS,
    C_IMAGES,
    C_SELECTOR,
    C_END,
};

static const struct col cols_podtemplate[] = {
    {"Template", "string", "name", 0, D_NAME},
    C_S("Containers", "Names of each container in the template."),
    C_S("Images", "Images referenced by each container in the template."),
    C_S("Pod Labels", "The labels for the pod template."),
    C_END,
};

static const struct col cols_statefulset[] = {
    C_NAME, C_S("Ready", "Number of the pod with ready state"), C_AGE, C_CONTAINERS, C_IMAGES,
    C_END,
};

static const struct col cols_daemonset[] = {
    C_NAME,
    C_I("Desired", "The total number of nodes that should be running the daemon pod "
		   "(including nodes correctly running the daemon pod)."),
    C_I("Current", "The number of nodes that are running at least 1 daemon pod and are "
		   "supposed to run the daemon pod."),
    C_I("Ready", "numberReady is the number of nodes that should be running the daemon "
		 "pod and have one or more of the daemon pod running with a Ready Condition."),
    C_I("Up-to-date", "The total number of nodes that are running updated daemon pod"),
    C_I("Available", "The number of nodes that should be running the daemon pod and have "
		     "one or more of the daemon pod running and available (ready for at least "
		     "spec.minReadySeconds)"),
    C_S("Node Selector", "NodeSelector is a selector which must be true for the pod to "
			 "fit on a node."),
    C_AGE,
    C_CONTAINERS,
    C_IMAGES,
    C_SELECTOR,
    C_END,
};

static const struct col cols_controllerrevision[] = {
    C_NAME,
    C_S("Controller", "Controller of the object"),
    C_I("Revision", "Revision indicates the revision of the state represented by Data."),
    C_AGE,
    C_END,
};

static const struct col cols_job[] = {
    C_NAME,
    C_S("Status", "Status of the job."),
    C_S("Completions", "The desired number of successfully finished pods the job should "
		       "be run with."),
    C_S("Duration", "Time required to complete the job."),
    C_AGE,
    C_CONTAINERS,
    C_IMAGES,
    C_SELECTOR,
    C_END,
};

static const struct col cols_cronjob[] = {
    C_NAME,
    C_S("Schedule", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    C_S("Timezone", "The time zone name for the given schedule, see "
		    "https://en.wikipedia.org/wiki/List_of_tz_database_time_zones."),
    {"Suspend", "boolean", "", 0,
     "This flag tells the controller to suspend subsequent "
     "executions, it does not apply to already started executions."},
    C_I("Active", "A list of pointers to currently running jobs."),
    C_S("Last Schedule", "Information when was the last time the job was successfully "
			 "scheduled."),
    C_AGE,
    C_CONTAINERS,
    C_IMAGES,
    C_SELECTOR,
    C_END,
};

static json_t *cols_json(const struct col *c)
{
	json_t *a = json_array();
	for (; a && c->name; c++)
		json_array_append_new(a,
				      json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", c->name,
						"type", c->type, "format", c->format, "description",
						c->desc, "priority", c->priority));
	return a;
}

/* ---- JSON reading helpers ----------------------------------------------------- */

/* Dotted path lookup ("status.phase"); NULL when missing. */
static json_t *jp(const json_t *o, const char *path)
{
	char seg[128];
	while (o && *path) {
		size_t n = strcspn(path, ".");
		snprintf(seg, sizeof(seg), "%.*s", (int)n, path);
		o = json_is_object(o) ? json_object_get(o, seg) : NULL;
		path += n + (path[n] == '.');
	}
	return (json_t *)o;
}

static const char *js(const json_t *o, const char *path)
{
	const char *s = json_string_value(jp(o, path));
	return s ? s : "";
}

static json_int_t ji(const json_t *o, const char *path)
{
	return json_integer_value(jp(o, path));
}

static void add_s(json_t *cells, const char *s)
{
	json_array_append_new(cells, json_string(s ? s : ""));
}

static void add_i(json_t *cells, json_int_t v)
{
	json_array_append_new(cells, json_integer(v));
}

/* Age since an RFC3339 stamp at `path`; "<unknown>" when missing. */
static void age_at(char *buf, size_t len, const json_t *o, const char *path, time_t now)
{
	time_t t;
	const char *s = js(o, path);
	if (!*s || kb_time_parse(s, &t) < 0)
		snprintf(buf, len, "<unknown>");
	else
		kb_age(t, now, buf, len);
}

static void add_age(json_t *cells, const json_t *o, time_t now)
{
	char b[32];
	age_at(b, sizeof(b), o, "metadata.creationTimestamp", now);
	add_s(cells, b);
}

static void add_name(json_t *cells, const json_t *o)
{
	add_s(cells, js(o, "metadata.name"));
}

static const char *or_none(const char *s)
{
	return s && *s ? s : "<none>";
}

/* labels.FormatLabels: sorted "k=v,k2=v2", "<none>" when empty. */
static char *format_labels(const json_t *m)
{
	size_t n = 0;
	const char **keys = kb_json_sorted_keys(m, &n);
	struct kb_buf b = {0};
	if (!keys)
		return NULL;
	kb_buf_puts(&b, "");
	for (size_t i = 0; i < n; i++) {
		/* label keys hold dots ("app.kubernetes.io/name"): not paths */
		const char *v = json_string_value(json_object_get(m, keys[i]));
		kb_buf_printf(&b, "%s%s=%s", i ? "," : "", keys[i], v ? v : "");
	}
	free(keys);
	if (n == 0)
		kb_buf_puts(&b, "<none>");
	return b.data;
}

static void add_labels(json_t *cells, const json_t *m)
{
	char *s = format_labels(m);
	add_s(cells, s ? s : "<none>");
	free(s);
}

/* metav1.FormatLabelSelector ("<none>" for empty) when none_if_empty,
 * else labels.Selector.String() ("" for empty, "<invalid>" on error). */
static void add_selector(json_t *cells, const json_t *sel, bool none_if_empty)
{
	struct sel_label *s = NULL;
	char err[128];
	if (sel_label_from_object(sel, &s, err, sizeof(err)) < 0) {
		add_s(cells, none_if_empty ? "<error>" : "<invalid>");
		return;
	}
	char *t = sel_label_string(s);
	add_s(cells, t && *t ? t : (none_if_empty ? "<none>" : ""));
	free(t);
	sel_label_free(s);
}

/* layoutContainerCells: names and images joined with ','. */
static void add_containers(json_t *cells, const json_t *ctrs)
{
	struct kb_buf names = {0}, images = {0};
	size_t i;
	json_t *c;
	kb_buf_puts(&names, "");
	kb_buf_puts(&images, "");
	json_array_foreach (ctrs, i, c) {
		kb_buf_printf(&names, "%s%s", i ? "," : "", js(c, "name"));
		kb_buf_printf(&images, "%s%s", i ? "," : "", js(c, "image"));
	}
	add_s(cells, names.data);
	add_s(cells, images.data);
	kb_buf_free(&names);
	kb_buf_free(&images);
}

static bool has_condition(const json_t *conds, const char *type, const char *status)
{
	size_t i;
	json_t *c;
	json_array_foreach (conds, i, c)
		if (strcmp(js(c, "type"), type) == 0 && strcmp(js(c, "status"), status) == 0)
			return true;
	return false;
}

/* ---- pods ------------------------------------------------------------------------ */

struct pod_acc {
	char reason[128];
	long long restarts;
	int ready, total;
	time_t last_restart;
	/* restartable (sidecar) init containers */
	long long side_restarts;
	time_t side_last_restart;
	bool initializing;
};

static bool restartable_init(const json_t *spec, const char *name)
{
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(spec, "initContainers"), i, c)
		if (strcmp(js(c, "name"), name) == 0)
			return strcmp(js(c, "restartPolicy"), "Always") == 0;
	return false;
}

static void last_termination(const json_t *cs, time_t *latest)
{
	time_t t;
	const char *f = js(cs, "lastState.terminated.finishedAt");
	if (*f && kb_time_parse(f, &t) == 0 && t > *latest)
		*latest = t;
}

/* Reason of a terminated state without a reason: Signal:n or ExitCode:n. */
static void terminated_reason(char *buf, size_t len, const json_t *term, const char *prefix)
{
	if (*js(term, "reason"))
		snprintf(buf, len, "%s%s", prefix, js(term, "reason"));
	else if (ji(term, "signal"))
		snprintf(buf, len, "%sSignal:%lld", prefix, (long long)ji(term, "signal"));
	else
		snprintf(buf, len, "%sExitCode:%lld", prefix, (long long)ji(term, "exitCode"));
}

/* Returns true when this init container decides the pod's reason. */
static bool pod_init_one(struct pod_acc *a, const json_t *spec, const json_t *cs, size_t i,
			 size_t ninit)
{
	bool side = restartable_init(spec, js(cs, "name"));
	const json_t *term = jp(cs, "state.terminated");
	const char *wait = js(cs, "state.waiting.reason");
	a->restarts += ji(cs, "restartCount");
	last_termination(cs, &a->last_restart);
	if (side) {
		a->side_restarts += ji(cs, "restartCount");
		last_termination(cs, &a->side_last_restart);
	}
	if (term && ji(term, "exitCode") == 0)
		return false;
	if (side && json_is_true(jp(cs, "started"))) {
		a->ready += json_is_true(jp(cs, "ready"));
		return false;
	}
	if (term)
		terminated_reason(a->reason, sizeof(a->reason), term, "Init:");
	else if (*wait && strcmp(wait, "PodInitializing") != 0)
		snprintf(a->reason, sizeof(a->reason), "Init:%s", wait);
	else
		snprintf(a->reason, sizeof(a->reason), "Init:%zu/%zu", i, ninit);
	a->initializing = true;
	return true;
}

static void pod_containers(struct pod_acc *a, const json_t *status)
{
	const json_t *css = json_object_get(status, "containerStatuses");
	bool running = false;
	a->restarts = a->side_restarts;
	a->last_restart = a->side_last_restart;
	for (size_t i = json_array_size(css); i-- > 0;) {
		const json_t *cs = json_array_get(css, i);
		const json_t *term = jp(cs, "state.terminated");
		const char *wait = js(cs, "state.waiting.reason");
		a->restarts += ji(cs, "restartCount");
		last_termination(cs, &a->last_restart);
		if (*wait)
			snprintf(a->reason, sizeof(a->reason), "%s", wait);
		else if (term)
			terminated_reason(a->reason, sizeof(a->reason), term, "");
		else if (json_is_true(jp(cs, "ready")) && jp(cs, "state.running")) {
			running = true;
			a->ready++;
		}
	}
	if (strcmp(a->reason, "Completed") == 0 && running)
		snprintf(a->reason, sizeof(a->reason), "%s",
			 has_condition(json_object_get(status, "conditions"), "Ready", "True")
			     ? "Running"
			     : "NotReady");
}

static void pod_status(struct pod_acc *a, const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec"), *st = json_object_get(pod, "status");
	const json_t *ics = json_object_get(st, "initContainerStatuses");
	const char *phase = *js(st, "phase") ? js(st, "phase") : "Pending";
	size_t i, ninit = json_array_size(json_object_get(spec, "initContainers"));
	json_t *x;
	snprintf(a->reason, sizeof(a->reason), "%s", *js(st, "reason") ? js(st, "reason") : phase);
	json_array_foreach (json_object_get(st, "conditions"), i, x)
		if (strcmp(js(x, "type"), "PodScheduled") == 0 &&
		    strcmp(js(x, "reason"), "SchedulingGated") == 0)
			snprintf(a->reason, sizeof(a->reason), "SchedulingGated");
	a->total = (int)json_array_size(json_object_get(spec, "containers"));
	json_array_foreach (json_object_get(spec, "initContainers"), i, x)
		a->total += strcmp(js(x, "restartPolicy"), "Always") == 0;
	json_array_foreach (ics, i, x)
		if (pod_init_one(a, spec, x, i, ninit))
			break;
	if (!a->initializing ||
	    has_condition(json_object_get(st, "conditions"), "Initialized", "True"))
		pod_containers(a, st);
	bool deleting = jp(pod, "metadata.deletionTimestamp") != NULL &&
			!json_is_null(jp(pod, "metadata.deletionTimestamp"));
	if (deleting && strcmp(js(st, "reason"), "NodeLost") == 0)
		snprintf(a->reason, sizeof(a->reason), "Unknown");
	else if (deleting && strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0)
		snprintf(a->reason, sizeof(a->reason), "Terminating");
}

static void pod_readiness_gates(json_t *cells, const json_t *pod)
{
	const json_t *gates = jp(pod, "spec.readinessGates");
	const json_t *conds = jp(pod, "status.conditions");
	size_t i, j, ok = 0;
	json_t *g, *c;
	char buf[32];
	if (json_array_size(gates) == 0) {
		add_s(cells, "<none>");
		return;
	}
	json_array_foreach (gates, i, g) {
		json_array_foreach (conds, j, c) {
			if (strcmp(js(c, "type"), js(g, "conditionType")) == 0) {
				ok += strcmp(js(c, "status"), "True") == 0;
				break;
			}
		}
	}
	snprintf(buf, sizeof(buf), "%zu/%zu", ok, json_array_size(gates));
	add_s(cells, buf);
}

static void cells_pod(json_t *cells, const json_t *pod, time_t now)
{
	struct pod_acc a = {.restarts = 0};
	char buf[160], age[32];
	pod_status(&a, pod);
	add_name(cells, pod);
	snprintf(buf, sizeof(buf), "%d/%d", a.ready, a.total);
	add_s(cells, buf);
	add_s(cells, a.reason);
	if (a.restarts != 0 && a.last_restart != 0) {
		kb_age(a.last_restart, now, age, sizeof(age));
		snprintf(buf, sizeof(buf), "%lld (%s ago)", a.restarts, age);
	} else {
		snprintf(buf, sizeof(buf), "%lld", a.restarts);
	}
	add_s(cells, buf);
	add_age(cells, pod, now);
	const char *ip = js(json_array_get(jp(pod, "status.podIPs"), 0), "ip");
	add_s(cells, or_none(*ip ? ip : js(pod, "status.podIP")));
	add_s(cells, or_none(js(pod, "spec.nodeName")));
	add_s(cells, or_none(js(pod, "status.nominatedNodeName")));
	pod_readiness_gates(cells, pod);
}

/* ---- core kinds ------------------------------------------------------------------- */

static void cells_namespace(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_s(cells, js(o, "status.phase"));
	add_age(cells, o, now);
}

static void service_ports(struct kb_buf *b, const json_t *ports)
{
	size_t i;
	json_t *p;
	json_array_foreach (ports, i, p) {
		const char *proto = *js(p, "protocol") ? js(p, "protocol") : "TCP";
		if (ji(p, "nodePort") > 0)
			kb_buf_printf(b, "%s%lld:%lld/%s", i ? "," : "", (long long)ji(p, "port"),
				      (long long)ji(p, "nodePort"), proto);
		else
			kb_buf_printf(b, "%s%lld/%s", i ? "," : "", (long long)ji(p, "port"),
				      proto);
	}
}

static void join_strings(struct kb_buf *b, const json_t *arr)
{
	size_t i;
	json_t *v;
	json_array_foreach (arr, i, v)
		kb_buf_printf(b, "%s%s", b->len ? "," : "",
			      json_string_value(v) ? json_string_value(v) : "");
}

static void service_external_ip(struct kb_buf *b, const json_t *svc)
{
	const char *type = *js(svc, "spec.type") ? js(svc, "spec.type") : "ClusterIP";
	const json_t *ext = jp(svc, "spec.externalIPs");
	kb_buf_puts(b, "");
	if (strcmp(type, "ClusterIP") == 0 || strcmp(type, "NodePort") == 0) {
		join_strings(b, ext);
		if (!b->len)
			kb_buf_puts(b, "<none>");
	} else if (strcmp(type, "LoadBalancer") == 0) {
		size_t i;
		json_t *in;
		json_array_foreach (jp(svc, "status.loadBalancer.ingress"), i, in) {
			const char *v = *js(in, "ip") ? js(in, "ip") : js(in, "hostname");
			if (*v)
				kb_buf_printf(b, "%s%s", b->len ? "," : "", v);
		}
		join_strings(b, ext);
		if (!b->len)
			kb_buf_puts(b, "<pending>");
	} else if (strcmp(type, "ExternalName") == 0) {
		kb_buf_puts(b, js(svc, "spec.externalName"));
	} else {
		kb_buf_puts(b, "<unknown>");
	}
}

static void cells_service(json_t *cells, const json_t *o, time_t now)
{
	struct kb_buf ports = {0}, ext = {0};
	const char *cip = json_string_value(json_array_get(jp(o, "spec.clusterIPs"), 0));
	add_name(cells, o);
	add_s(cells, *js(o, "spec.type") ? js(o, "spec.type") : "ClusterIP");
	add_s(cells, or_none(cip ? cip : js(o, "spec.clusterIP")));
	service_external_ip(&ext, o);
	add_s(cells, ext.data);
	service_ports(&ports, jp(o, "spec.ports"));
	add_s(cells, or_none(ports.data));
	add_age(cells, o, now);
	add_labels(cells, jp(o, "spec.selector"));
	kb_buf_free(&ports);
	kb_buf_free(&ext);
}

static void cells_configmap(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_i(cells, (json_int_t)(json_object_size(jp(o, "data")) +
				  json_object_size(jp(o, "binaryData"))));
	add_age(cells, o, now);
}

static void cells_secret(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_s(cells, js(o, "type"));
	add_i(cells, (json_int_t)json_object_size(jp(o, "data")));
	add_age(cells, o, now);
}

static void cells_serviceaccount(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_i(cells, (json_int_t)json_array_size(jp(o, "secrets")));
	add_age(cells, o, now);
}

/* ---- events (core/v1 and events.k8s.io/v1 share one printer) ---------------- */

struct event_view {
	const char *first, *last, *micro, *series_last, *kind, *name, *fieldpath;
	const char *component, *host, *message;
	json_int_t count, series_count;
	bool series;
};

static void event_view(struct event_view *v, const json_t *o, bool v1)
{
	const char *p = v1 ? "" : "deprecated";
	char k[64];
#define EVK(field) (snprintf(k, sizeof(k), "%s%s", p, field), k)
	v->first = js(o, v1 ? "firstTimestamp" : EVK("FirstTimestamp"));
	v->last = js(o, v1 ? "lastTimestamp" : EVK("LastTimestamp"));
	v->count = ji(o, v1 ? "count" : EVK("Count"));
	v->component = js(o, v1 ? "source.component" : "deprecatedSource.component");
	v->host = js(o, v1 ? "source.host" : "deprecatedSource.host");
#undef EVK
	const char *ref = v1 ? "involvedObject" : "regarding";
	const json_t *r = jp(o, ref);
	v->kind = js(r, "kind");
	v->name = js(r, "name");
	v->fieldpath = js(r, "fieldPath");
	v->micro = js(o, "eventTime");
	v->message = js(o, v1 ? "message" : "note");
	v->series = jp(o, "series") && !json_is_null(jp(o, "series"));
	v->series_last = js(o, "series.lastObservedTime");
	v->series_count = ji(o, "series.count");
	if (!*v->component)
		v->component = js(o, "reportingController");
	if (!*v->host)
		v->host = js(o, "reportingInstance");
}

static void since(char *buf, size_t len, const char *stamp, time_t now)
{
	time_t t;
	if (!*stamp || kb_time_parse(stamp, &t) < 0)
		snprintf(buf, len, "<unknown>");
	else
		kb_age(t, now, buf, len);
}

static void cells_event_common(json_t *cells, const json_t *o, time_t now, bool v1)
{
	struct event_view v;
	char first[32], last[32], buf[512];
	event_view(&v, o, v1);
	since(first, sizeof(first), *v.first ? v.first : v.micro, now);
	if (*v.last)
		since(last, sizeof(last), v.last, now);
	else
		snprintf(last, sizeof(last), "%s", first);
	json_int_t count = v.count;
	if (v.series) {
		since(last, sizeof(last), v.series_last, now);
		count = v.series_count;
	} else if (count == 0) {
		count = 1;
	}
	add_s(cells, last);
	add_s(cells, js(o, "type"));
	add_s(cells, js(o, "reason"));
	size_t n = (size_t)snprintf(buf, sizeof(buf), "%s%s%s", v.kind, *v.name ? "/" : "", v.name);
	for (size_t i = 0; i < n && i < sizeof(buf) && buf[i] != '/'; i++)
		buf[i] = (char)tolower((unsigned char)buf[i]);
	add_s(cells, buf);
	add_s(cells, v.fieldpath);
	snprintf(buf, sizeof(buf), "%s%s%s", v.component, *v.host ? ", " : "", v.host);
	add_s(cells, buf);
	const char *m = v.message;
	size_t ml = strlen(m);
	while (ml && isspace((unsigned char)m[ml - 1]))
		ml--;
	while (ml && isspace((unsigned char)*m)) {
		m++;
		ml--;
	}
	json_array_append_new(cells, json_stringn(m, ml));
	add_s(cells, first);
	add_i(cells, count);
	add_name(cells, o);
}

static void cells_event(json_t *cells, const json_t *o, time_t now)
{
	cells_event_common(cells, o, now, true);
}

static void cells_event_v1(json_t *cells, const json_t *o, time_t now)
{
	cells_event_common(cells, o, now, false);
}

/* ---- nodes, endpoints, pvcs, quotas -------------------------------------------- */

static void node_status(struct kb_buf *b, const json_t *o)
{
	size_t i;
	json_t *c;
	const char *ready = NULL;
	json_array_foreach (jp(o, "status.conditions"), i, c)
		if (strcmp(js(c, "type"), "Ready") == 0)
			ready = js(c, "status");
	kb_buf_puts(b, !ready ? "Unknown" : strcmp(ready, "True") == 0 ? "Ready" : "NotReady");
	if (json_is_true(jp(o, "spec.unschedulable")))
		kb_buf_puts(b, ",SchedulingDisabled");
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void node_roles(struct kb_buf *b, const json_t *labels)
{
	const char *roles[64], *k;
	size_t n = 0;
	json_t *v;
	json_object_foreach ((json_t *)labels, k, v) {
		if (n >= KB_ARRAY_SIZE(roles))
			break;
		if (kb_str_has_prefix(k, "node-role.kubernetes.io/") &&
		    k[strlen("node-role.kubernetes.io/")])
			roles[n++] = k + strlen("node-role.kubernetes.io/");
		else if (strcmp(k, "kubernetes.io/role") == 0 && json_string_value(v) &&
			 *json_string_value(v))
			roles[n++] = json_string_value(v);
	}
	qsort(roles, n, sizeof(*roles), cmp_cstr);
	kb_buf_puts(b, "");
	for (size_t i = 0; i < n; i++)
		if (i == 0 || strcmp(roles[i], roles[i - 1]) != 0)
			kb_buf_printf(b, "%s%s", b->len ? "," : "", roles[i]);
	if (!b->len)
		kb_buf_puts(b, "<none>");
}

static const char *node_address(const json_t *o, const char *type)
{
	size_t i;
	json_t *a;
	json_array_foreach (jp(o, "status.addresses"), i, a)
		if (strcmp(js(a, "type"), type) == 0)
			return js(a, "address");
	return "<none>";
}

static const char *or_unknown(const char *s)
{
	return *s ? s : "<unknown>";
}

static void cells_node(json_t *cells, const json_t *o, time_t now)
{
	struct kb_buf st = {0}, roles = {0};
	add_name(cells, o);
	node_status(&st, o);
	add_s(cells, st.data);
	node_roles(&roles, jp(o, "metadata.labels"));
	add_s(cells, roles.data);
	add_age(cells, o, now);
	add_s(cells, js(o, "status.nodeInfo.kubeletVersion"));
	add_s(cells, node_address(o, "InternalIP"));
	add_s(cells, node_address(o, "ExternalIP"));
	add_s(cells, or_unknown(js(o, "status.nodeInfo.osImage")));
	add_s(cells, or_unknown(js(o, "status.nodeInfo.kernelVersion")));
	add_s(cells, or_unknown(js(o, "status.nodeInfo.containerRuntimeVersion")));
	kb_buf_free(&st);
	kb_buf_free(&roles);
}

/* listWithMoreString: the first 3 items joined by ",", then " + N more...";
 * "<unset>" for none. */
static void list_with_more(json_t *cells, const char *const *items, int count)
{
	struct kb_buf b = {0};
	kb_buf_puts(&b, "");
	for (int i = 0; i < count && i < 3; i++)
		kb_buf_printf(&b, "%s%s", i ? "," : "", items[i]);
	if (count > 3)
		kb_buf_printf(&b, " + %d more...", count - 3);
	add_s(cells, count ? b.data : "<unset>");
	kb_buf_free(&b);
}

/* printEndpointSlice: formatDiscoveryPorts (port, else name, else "*") and
 * formatDiscoveryEndpoints (every address of every endpoint). */
static void cells_endpointslice(json_t *cells, const json_t *o, time_t now)
{
	const char *items[3];
	char nums[3][24];
	int n = 0;
	size_t i, j;
	json_t *p, *ep, *ad;
	add_name(cells, o);
	add_s(cells, js(o, "addressType"));
	json_array_foreach (jp(o, "ports"), i, p) {
		if (n < 3) {
			json_t *port = json_object_get(p, "port");
			snprintf(nums[n], sizeof(nums[n]), "%lld",
				 (long long)json_integer_value(port));
			items[n] = json_is_integer(port) ? nums[n]
				   : js(p, "name")       ? js(p, "name")
							 : "*";
		}
		n++;
	}
	list_with_more(cells, items, n);
	n = 0;
	json_array_foreach (jp(o, "endpoints"), i, ep)
		json_array_foreach (json_object_get(ep, "addresses"), j, ad) {
			if (n < 3)
				items[n] = json_string_value(ad) ? json_string_value(ad) : "";
			n++;
		}
	list_with_more(cells, items, n);
	add_age(cells, o, now);
}

/* formatEndpoints: up to 3 "ip:port", then " + N more...". */
struct ep_acc {
	struct kb_buf b;
	int listed, count;
	bool more;
};

static void ep_add(struct ep_acc *a, const char *ip, json_int_t port, bool has_port)
{
	if (a->listed == 3) {
		a->more = true;
		return;
	}
	bool v6 = strchr(ip, ':') != NULL;
	if (!has_port)
		kb_buf_printf(&a->b, "%s%s", a->listed ? "," : "", ip);
	else
		kb_buf_printf(&a->b, "%s%s%s%s:%lld", a->listed ? "," : "", v6 ? "[" : "", ip,
			      v6 ? "]" : "", (long long)port);
	a->listed++;
}

static void cells_endpoints(json_t *cells, const json_t *o, time_t now)
{
	struct ep_acc a = {.listed = 0};
	size_t i, j, k;
	json_t *ss, *p, *ad;
	kb_buf_puts(&a.b, "");
	json_array_foreach (jp(o, "subsets"), i, ss) {
		const json_t *addrs = json_object_get(ss, "addresses");
		if (json_array_size(json_object_get(ss, "ports")) == 0) {
			a.count += (int)json_array_size(addrs);
			json_array_foreach (addrs, k, ad)
				ep_add(&a, js(ad, "ip"), 0, false);
			continue;
		}
		json_array_foreach (json_object_get(ss, "ports"), j, p) {
			a.count += (int)json_array_size(addrs);
			json_array_foreach (addrs, k, ad)
				ep_add(&a, js(ad, "ip"), ji(p, "port"), true);
		}
	}
	if (a.more)
		kb_buf_printf(&a.b, " + %d more...", a.count - 3);
	add_name(cells, o);
	add_s(cells, json_array_size(jp(o, "subsets")) ? a.b.data : "<none>");
	add_age(cells, o, now);
	kb_buf_free(&a.b);
}

static void access_modes(struct kb_buf *b, const json_t *modes)
{
	static const struct {
		const char *mode, *abbr;
	} m[] = {
	    {"ReadWriteOnce", "RWO"},
	    {"ReadOnlyMany", "ROX"},
	    {"ReadWriteMany", "RWX"},
	    {"ReadWriteOncePod", "RWOP"},
	};
	kb_buf_puts(b, "");
	for (size_t i = 0; i < KB_ARRAY_SIZE(m); i++) {
		size_t j;
		json_t *v;
		json_array_foreach (modes, j, v)
			if (json_string_value(v) && strcmp(json_string_value(v), m[i].mode) == 0) {
				kb_buf_printf(b, "%s%s", b->len ? "," : "", m[i].abbr);
				break;
			}
	}
}

static void cells_pvc(json_t *cells, const json_t *o, time_t now)
{
	struct kb_buf am = {0};
	const char *phase = js(o, "status.phase");
	const char *vol = js(o, "spec.volumeName");
	const json_t *ann = jp(o, "metadata.annotations");
	const char *beta =
	    json_string_value(json_object_get(ann, "volume.beta.kubernetes.io/storage-class"));
	if (jp(o, "metadata.deletionTimestamp"))
		phase = "Terminating";
	kb_buf_puts(&am, "");
	if (*vol)
		access_modes(&am, jp(o, "status.accessModes"));
	add_name(cells, o);
	add_s(cells, phase);
	add_s(cells, vol);
	add_s(cells, *vol ? js(o, "status.capacity.storage") : "");
	add_s(cells, am.data);
	add_s(cells, beta ? beta : js(o, "spec.storageClassName"));
	add_s(cells, *js(o, "spec.volumeAttributesClassName")
			 ? js(o, "spec.volumeAttributesClassName")
			 : "<unset>");
	add_age(cells, o, now);
	add_s(cells, *js(o, "spec.volumeMode") ? js(o, "spec.volumeMode") : "<unset>");
	kb_buf_free(&am);
}

/* kube's printPersistentVolume */
static void cells_pv(json_t *cells, const json_t *o, time_t now)
{
	struct kb_buf am = {0}, claim = {0};
	const char *phase = js(o, "status.phase");
	const json_t *ann = jp(o, "metadata.annotations");
	const char *beta =
	    json_string_value(json_object_get(ann, "volume.beta.kubernetes.io/storage-class"));
	const char *cap = js(o, "spec.capacity.storage");
	if (jp(o, "metadata.deletionTimestamp"))
		phase = "Terminating";
	kb_buf_puts(&am, "");
	access_modes(&am, jp(o, "spec.accessModes"));
	kb_buf_puts(&claim, "");
	if (jp(o, "spec.claimRef"))
		kb_buf_printf(&claim, "%s/%s", js(o, "spec.claimRef.namespace"),
			      js(o, "spec.claimRef.name"));
	add_name(cells, o);
	add_s(cells, *cap ? cap : "0");
	add_s(cells, am.data);
	add_s(cells, js(o, "spec.persistentVolumeReclaimPolicy"));
	add_s(cells, phase);
	add_s(cells, claim.data);
	add_s(cells, beta ? beta : js(o, "spec.storageClassName"));
	add_s(cells, *js(o, "spec.volumeAttributesClassName")
			 ? js(o, "spec.volumeAttributesClassName")
			 : "<unset>");
	add_s(cells, js(o, "status.reason"));
	add_age(cells, o, now);
	add_s(cells, *js(o, "spec.volumeMode") ? js(o, "spec.volumeMode") : "<unset>");
	kb_buf_free(&am);
	kb_buf_free(&claim);
}

/* "requests.cpu: 0/1, requests.memory: 0/1Gi" / "limits.cpu: …" */
static void cells_quota(json_t *cells, const json_t *o, time_t now)
{
	const json_t *hard = jp(o, "status.hard"), *used = jp(o, "status.used");
	size_t n = json_object_size(hard), i = 0;
	const char **keys = calloc(n ? n : 1, sizeof(*keys)), *k;
	struct kb_buf req = {0}, lim = {0};
	json_t *v;
	json_object_foreach ((json_t *)hard, k, v)
		if (keys)
			keys[i++] = k;
	if (keys)
		qsort(keys, i, sizeof(*keys), cmp_cstr);
	kb_buf_puts(&req, "");
	kb_buf_puts(&lim, "");
	for (size_t j = 0; keys && j < i; j++) {
		struct kb_buf *w = kb_str_has_prefix(keys[j], "limits.") ? &lim : &req;
		/* keys such as "requests.cpu" are map keys, not dotted paths */
		const char *u = json_string_value(json_object_get(used, keys[j]));
		const char *h = json_string_value(json_object_get(hard, keys[j]));
		kb_buf_printf(w, "%s%s: %s/%s", w->len ? ", " : "", keys[j], u ? u : "0",
			      h ? h : "");
	}
	free(keys);
	add_name(cells, o);
	add_age(cells, o, now);
	add_s(cells, req.data);
	add_s(cells, lim.data);
	kb_buf_free(&req);
	kb_buf_free(&lim);
}

static void cells_default(json_t *cells, const json_t *o, time_t now)
{
	(void)now;
	add_name(cells, o);
	add_s(cells, js(o, "metadata.creationTimestamp"));
}

static void cells_name_age(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_age(cells, o, now);
}

/* ---- apps, batch ------------------------------------------------------------------ */

static json_int_t replicas(const json_t *o)
{
	const json_t *r = jp(o, "spec.replicas");
	return r ? json_integer_value(r) : 1;
}

static void cells_deployment(json_t *cells, const json_t *o, time_t now)
{
	char buf[64];
	add_name(cells, o);
	snprintf(buf, sizeof(buf), "%lld/%lld", (long long)ji(o, "status.readyReplicas"),
		 (long long)replicas(o));
	add_s(cells, buf);
	add_i(cells, ji(o, "status.updatedReplicas"));
	add_i(cells, ji(o, "status.availableReplicas"));
	add_age(cells, o, now);
	add_containers(cells, jp(o, "spec.template.spec.containers"));
	add_selector(cells, jp(o, "spec.selector"), false);
}

static void cells_replicaset(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_i(cells, replicas(o));
	add_i(cells, ji(o, "status.replicas"));
	add_i(cells, ji(o, "status.readyReplicas"));
	add_age(cells, o, now);
	add_containers(cells, jp(o, "spec.template.spec.containers"));
	add_selector(cells, jp(o, "spec.selector"), false);
}

/* A ReplicationController's selector is a map: labels.FormatLabels. */
static void cells_rc(json_t *cells, const json_t *o, time_t now)
{
	cells_replicaset(cells, o, now);
	json_array_remove(cells, json_array_size(cells) - 1);
	add_labels(cells, jp(o, "spec.selector"));
}

static void cells_podtemplate(json_t *cells, const json_t *o, time_t now)
{
	(void)now;
	add_name(cells, o);
	add_containers(cells, jp(o, "template.spec.containers"));
	add_labels(cells, jp(o, "template.metadata.labels"));
}

static void cells_statefulset(json_t *cells, const json_t *o, time_t now)
{
	char buf[64];
	add_name(cells, o);
	snprintf(buf, sizeof(buf), "%lld/%lld", (long long)ji(o, "status.readyReplicas"),
		 (long long)replicas(o));
	add_s(cells, buf);
	add_age(cells, o, now);
	add_containers(cells, jp(o, "spec.template.spec.containers"));
}

static void cells_daemonset(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_i(cells, ji(o, "status.desiredNumberScheduled"));
	add_i(cells, ji(o, "status.currentNumberScheduled"));
	add_i(cells, ji(o, "status.numberReady"));
	add_i(cells, ji(o, "status.updatedNumberScheduled"));
	add_i(cells, ji(o, "status.numberAvailable"));
	add_labels(cells, jp(o, "spec.template.spec.nodeSelector"));
	add_age(cells, o, now);
	add_containers(cells, jp(o, "spec.template.spec.containers"));
	add_selector(cells, jp(o, "spec.selector"), true);
}

static void cells_controllerrevision(json_t *cells, const json_t *o, time_t now)
{
	char buf[512] = "<none>";
	size_t i;
	json_t *ref;
	json_array_foreach (jp(o, "metadata.ownerReferences"), i, ref) {
		if (!json_is_true(json_object_get(ref, "controller")))
			continue;
		const char *av = js(ref, "apiVersion"), *slash = strchr(av, '/');
		int gl = slash ? (int)(slash - av) : 0;
		int n = snprintf(buf, sizeof(buf), "%s%s%.*s/%s", js(ref, "kind"), gl ? "." : "",
				 gl, av, js(ref, "name"));
		for (int j = 0; j < n && j < (int)sizeof(buf) && buf[j] != '/'; j++)
			buf[j] = (char)tolower((unsigned char)buf[j]);
		break;
	}
	add_name(cells, o);
	add_s(cells, buf);
	add_i(cells, ji(o, "revision"));
	add_age(cells, o, now);
}

static const char *job_status(const json_t *o)
{
	static const struct {
		const char *cond, *text;
	} order[] = {
	    {"Complete", "Complete"},
	    {"Failed", "Failed"},
	    {NULL, "Terminating"},
	    {"Suspended", "Suspended"},
	    {"FailureTarget", "FailureTarget"},
	    {"SuccessCriteriaMet", "SuccessCriteriaMet"},
	};
	const json_t *conds = jp(o, "status.conditions");
	for (size_t i = 0; i < KB_ARRAY_SIZE(order); i++) {
		if (!order[i].cond ? jp(o, "metadata.deletionTimestamp") != NULL
				   : has_condition(conds, order[i].cond, "True"))
			return order[i].text;
	}
	return "Running";
}

static void cells_job(json_t *cells, const json_t *o, time_t now)
{
	char buf[64], dur[32] = "";
	long long ok = (long long)ji(o, "status.succeeded");
	const json_t *comp = jp(o, "spec.completions");
	long long par = jp(o, "spec.parallelism") ? (long long)ji(o, "spec.parallelism") : 0;
	if (comp)
		snprintf(buf, sizeof(buf), "%lld/%lld", ok, (long long)json_integer_value(comp));
	else if (par > 1)
		snprintf(buf, sizeof(buf), "%lld/1 of %lld", ok, par);
	else
		snprintf(buf, sizeof(buf), "%lld/1", ok);
	time_t start, end = now;
	if (*js(o, "status.startTime") && kb_time_parse(js(o, "status.startTime"), &start) == 0) {
		if (*js(o, "status.completionTime"))
			kb_time_parse(js(o, "status.completionTime"), &end);
		kb_age(start, end, dur, sizeof(dur));
	}
	add_name(cells, o);
	add_s(cells, job_status(o));
	add_s(cells, buf);
	add_s(cells, dur);
	add_age(cells, o, now);
	add_containers(cells, jp(o, "spec.template.spec.containers"));
	add_selector(cells, jp(o, "spec.selector"), true);
}

static void cells_cronjob(json_t *cells, const json_t *o, time_t now)
{
	char last[32] = "<none>";
	const json_t *suspend = jp(o, "spec.suspend");
	if (*js(o, "status.lastScheduleTime"))
		age_at(last, sizeof(last), o, "status.lastScheduleTime", now);
	add_name(cells, o);
	add_s(cells, js(o, "spec.schedule"));
	add_s(cells, or_none(json_string_value(jp(o, "spec.timeZone"))));
	add_s(cells, !suspend ? "<unset>" : json_is_true(suspend) ? "True" : "False");
	add_i(cells, (json_int_t)json_array_size(jp(o, "status.active")));
	add_s(cells, last);
	add_age(cells, o, now);
	add_containers(cells, jp(o, "spec.jobTemplate.spec.template.spec.containers"));
	add_selector(cells, jp(o, "spec.jobTemplate.spec.selector"), true);
}

/* ---- autoscaling, policy, networking, scheduling, storage, node ---------------- */

static const struct col cols_hpa[] = {
    C_NAME,
    C_S("Reference", "scaleTargetRef points to the target resource to scale, and is used "
		     "to the pods for which metrics should be collected, as well as to "
		     "actually change the replica count."),
    C_S("Targets", "metrics contains the specifications for which to use to calculate the "
		   "desired replica count."),
    C_S("MinPods", "minReplicas is the lower limit for the number of replicas to which the "
		   "autoscaler can scale down."),
    C_S("MaxPods", "maxReplicas is the upper limit for the number of replicas to which the "
		   "autoscaler can scale up."),
    C_S("Replicas", "currentReplicas is current number of replicas of pods managed by this "
		    "autoscaler, as last seen by the autoscaler."),
    C_AGE,
    C_END,
};

static void add_bool(json_t *cells, bool v)
{
	json_array_append_new(cells, json_boolean(v));
}

/* A quantity or an int-or-string as kube prints it. */
static const char *scalar(const json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, len, "%s", json_string_value(v) ? json_string_value(v) : "0");
	return buf;
}

/* One metric of formatHPAMetrics: "<current>/<target>" with kube's prefixes
 * and "(avg)" marks; `st` is the status entry at the same index or NULL. */
static void hpa_metric(struct kb_buf *b, const json_t *spec, const json_t *st)
{
	static const struct {
		const char *type, *key;
		bool named, avg_mark;
	} kinds[] = {
	    {"External", "external", false, true},
	    {"Pods", "pods", false, false},
	    {"Object", "object", false, true},
	    {"Resource", "resource", true, false},
	    {"ContainerResource", "containerResource", true, false},
	};
	const char *type = js(spec, "type");
	char cur[64], tgt[64];
	for (size_t i = 0; i < KB_ARRAY_SIZE(kinds); i++) {
		if (strcmp(type, kinds[i].type) != 0)
			continue;
		const json_t *m = jp(spec, kinds[i].key), *c = jp(st, kinds[i].key);
		const json_t *target = jp(m, "target"), *current = jp(c, "current");
		char name[80] = "";
		if (kinds[i].named)
			snprintf(name, sizeof(name), "%s: ", js(m, "name"));
		const json_t *avg = jp(target, "averageValue");
		if (strcmp(type, "Pods") == 0 || avg) {
			/* an average value */
			snprintf(cur, sizeof(cur), "<unknown>");
			if (jp(current, "averageValue"))
				scalar(jp(current, "averageValue"), cur, sizeof(cur));
			kb_buf_printf(b, "%s%s/%s%s", name, cur, scalar(avg, tgt, sizeof(tgt)),
				      kinds[i].avg_mark ? " (avg)" : "");
		} else if (kinds[i].named) {
			/* a utilization */
			snprintf(cur, sizeof(cur), "<unknown>");
			if (json_is_integer(jp(current, "averageUtilization")))
				snprintf(cur, sizeof(cur), "%lld%%",
					 (long long)ji(current, "averageUtilization"));
			snprintf(tgt, sizeof(tgt), "<auto>");
			if (json_is_integer(jp(target, "averageUtilization")))
				snprintf(tgt, sizeof(tgt), "%lld%%",
					 (long long)ji(target, "averageUtilization"));
			kb_buf_printf(b, "%s%s/%s", name, cur, tgt);
		} else {
			/* a value */
			snprintf(cur, sizeof(cur), "<unknown>");
			if (c)
				scalar(jp(current, "value"), cur, sizeof(cur));
			kb_buf_printf(b, "%s/%s", cur,
				      scalar(jp(target, "value"), tgt, sizeof(tgt)));
		}
		return;
	}
	kb_buf_puts(b, "<unknown type>");
}

static void cells_hpa(json_t *cells, const json_t *o, time_t now)
{
	const json_t *specs = jp(o, "spec.metrics"), *sts = jp(o, "status.currentMetrics");
	size_t n = json_array_size(specs);
	struct kb_buf t = {0}, ref = {0};
	kb_buf_puts(&t, n ? "" : "<none>");
	for (size_t i = 0; i < n && i < 2; i++) {
		if (i)
			kb_buf_puts(&t, ", ");
		hpa_metric(&t, json_array_get(specs, i), json_array_get(sts, i));
	}
	if (n > 2)
		kb_buf_printf(&t, " + %zu more...", n - 2);
	kb_buf_printf(&ref, "%s/%s", js(o, "spec.scaleTargetRef.kind"),
		      js(o, "spec.scaleTargetRef.name"));
	char min[32] = "<unset>";
	if (json_is_integer(jp(o, "spec.minReplicas")))
		snprintf(min, sizeof(min), "%lld", (long long)ji(o, "spec.minReplicas"));
	add_name(cells, o);
	add_s(cells, ref.data);
	add_s(cells, t.data);
	add_s(cells, min);
	add_i(cells, ji(o, "spec.maxReplicas"));
	add_i(cells, ji(o, "status.currentReplicas"));
	add_age(cells, o, now);
	kb_buf_free(&t);
	kb_buf_free(&ref);
}

static const struct col cols_pdb[] = {
    C_NAME,
    C_S("Min Available", "An eviction is allowed if at least \"minAvailable\" pods selected "
			 "by \"selector\" will still be available after the eviction."),
    C_S("Max Unavailable", "An eviction is allowed if at most \"maxUnavailable\" pods "
			   "selected by \"selector\" are unavailable after the eviction."),
    C_I("Allowed Disruptions", "Number of pod disruptions that are currently allowed."),
    C_AGE,
    C_END,
};

static void cells_pdb(json_t *cells, const json_t *o, time_t now)
{
	char buf[64];
	add_name(cells, o);
	add_s(cells,
	      jp(o, "spec.minAvailable") ? scalar(jp(o, "spec.minAvailable"), buf, 64) : "N/A");
	add_s(cells,
	      jp(o, "spec.maxUnavailable") ? scalar(jp(o, "spec.maxUnavailable"), buf, 64) : "N/A");
	add_i(cells, ji(o, "status.disruptionsAllowed"));
	add_age(cells, o, now);
}

static const struct col cols_ingress[] = {
    C_NAME,
    C_S("Class", "The name of the IngressClass resource that should be used for additional "
		 "configuration"),
    C_S("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
    C_S("Address", "Address is a list containing ingress points for the load-balancer"),
    C_S("Ports", "Ports of TLS configurations that open"),
    C_AGE,
    C_END,
};

/* Whether `item` is one of the comma-separated entries of `list`. */
static bool in_csv(const char *list, const char *item)
{
	size_t n = strlen(item);
	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && strncmp(p, item, n) == 0)
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

static void cells_ingress(json_t *cells, const json_t *o, time_t now)
{
	const json_t *rules = jp(o, "spec.rules"), *r;
	struct kb_buf hosts = {0}, addr = {0};
	size_t i, listed = 0;
	bool more = false;
	kb_buf_puts(&hosts, "");
	json_array_foreach (rules, i, r) {
		if (listed == 3)
			more = true;
		if (!more && *js(r, "host")) {
			kb_buf_printf(&hosts, "%s%s", listed ? "," : "", js(r, "host"));
			listed++;
		}
	}
	if (!listed)
		kb_buf_puts(&hosts, "*");
	else if (more)
		kb_buf_printf(&hosts, " + %zu more...", json_array_size(rules) - 3);
	/* load-balancer points, each once */
	kb_buf_puts(&addr, "");
	json_array_foreach (jp(o, "status.loadBalancer.ingress"), i, r) {
		const char *a = *js(r, "ip") ? js(r, "ip") : js(r, "hostname");
		if (*a && !in_csv(addr.data, a))
			kb_buf_printf(&addr, "%s%s", addr.len ? "," : "", a);
	}
	add_name(cells, o);
	add_s(cells, or_none(json_string_value(jp(o, "spec.ingressClassName"))));
	add_s(cells, hosts.data);
	add_s(cells, addr.data);
	add_s(cells, json_array_size(jp(o, "spec.tls")) ? "80, 443" : "80");
	add_age(cells, o, now);
	kb_buf_free(&hosts);
	kb_buf_free(&addr);
}

static const struct col cols_ingressclass[] = {
    C_NAME,
    C_S("Controller", "Controller that is responsible for handling this class"),
    C_S("Parameters", "A reference to a resource with additional parameters"),
    C_AGE,
    C_END,
};

static void cells_ingressclass(json_t *cells, const json_t *o, time_t now)
{
	const json_t *p = jp(o, "spec.parameters");
	struct kb_buf b = {0};
	if (!p)
		kb_buf_puts(&b, "<none>");
	else if (json_string_value(jp(p, "apiGroup")))
		kb_buf_printf(&b, "%s.%s/%s", js(p, "kind"), js(p, "apiGroup"), js(p, "name"));
	else
		kb_buf_printf(&b, "%s/%s", js(p, "kind"), js(p, "name"));
	add_name(cells, o);
	add_s(cells, js(o, "spec.controller"));
	add_s(cells, b.data);
	add_age(cells, o, now);
	kb_buf_free(&b);
}

static const struct col cols_netpol[] = {
    C_NAME,
    C_S("Pod-Selector", "podSelector selects the pods to which this NetworkPolicy object "
			"applies."),
    C_AGE,
    C_END,
};

static void cells_netpol(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_selector(cells, jp(o, "spec.podSelector"), true);
	add_age(cells, o, now);
}

static const struct col cols_priorityclass[] = {
    C_NAME,
    C_I("Value", "value represents the integer value of this priority class. This is the "
		 "actual priority that pods receive when they have the name of this class in "
		 "their pod spec."),
    {"Global-Default", "boolean", "", 0,
     "globalDefault specifies whether this PriorityClass should be considered as the default "
     "priority for pods that do not have any priority class."},
    C_AGE,
    C_S("PreemptionPolicy", "preemptionPolicy is the Policy for preempting pods with lower "
			    "priority. One of Never, PreemptLowerPriority."),
    C_END,
};

static void cells_priorityclass(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_i(cells, ji(o, "value"));
	add_bool(cells, json_is_true(jp(o, "globalDefault")));
	add_age(cells, o, now);
	add_s(cells, js(o, "preemptionPolicy"));
}

static const struct col cols_storageclass[] = {
    C_NAME,
    C_S("Provisioner", "provisioner indicates the type of the provisioner."),
    C_S("ReclaimPolicy", "reclaimPolicy controls the reclaimPolicy for dynamically "
			 "provisioned PersistentVolumes of this storage class."),
    C_S("VolumeBindingMode", "volumeBindingMode indicates how PersistentVolumeClaims should "
			     "be provisioned and bound."),
    C_S("AllowVolumeExpansion", "allowVolumeExpansion shows whether the storage class allow "
				"volume expand."),
    C_AGE,
    C_END,
};

/* storageutil.IsDefaultAnnotation: the GA or the beta annotation says "true". */
static bool default_class(const json_t *o)
{
	const json_t *a = jp(o, "metadata.annotations");
	const char *ga = json_string_value(json_object_get(a, "storageclass.kubernetes.io/"
							      "is-default-class"));
	const char *beta = json_string_value(
	    json_object_get(a, "storageclass.beta.kubernetes.io/is-default-class"));
	return (ga && strcmp(ga, "true") == 0) || (beta && strcmp(beta, "true") == 0);
}

static void cells_storageclass(json_t *cells, const json_t *o, time_t now)
{
	char name[300];
	snprintf(name, sizeof(name), "%s%s", js(o, "metadata.name"),
		 default_class(o) ? " (default)" : "");
	add_s(cells, name);
	add_s(cells, js(o, "provisioner"));
	add_s(cells, *js(o, "reclaimPolicy") ? js(o, "reclaimPolicy") : "Delete");
	add_s(cells, *js(o, "volumeBindingMode") ? js(o, "volumeBindingMode") : "Immediate");
	add_bool(cells, json_is_true(jp(o, "allowVolumeExpansion")));
	add_age(cells, o, now);
}

/* both admission webhook configuration kinds: the number of webhooks */
static const struct col cols_webhookcfg[] = {
    C_NAME,
    C_I("Webhooks", "Webhooks indicates the number of webhooks registered in this configuration"),
    C_AGE,
    C_END,
};

static void cells_webhookcfg(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_i(cells, (json_int_t)json_array_size(jp(o, "webhooks")));
	add_age(cells, o, now);
}

/* ValidatingAdmissionPolicy: validations and the param kind */
static const struct col cols_vap[] = {
    C_NAME,
    C_I("Validations",
	"Validations indicates the number of validation rules defined in this configuration"),
    C_S("ParamKind", "ParamKind specifies the kind of resources used to parameterize this policy"),
    C_AGE,
    C_END,
};

static void cells_vap(json_t *cells, const json_t *o, time_t now)
{
	const json_t *pk = jp(o, "spec.paramKind");
	struct kb_buf b = {0};
	add_name(cells, o);
	add_i(cells, (json_int_t)json_array_size(jp(o, "spec.validations")));
	if (json_is_object(pk))
		kb_buf_printf(&b, "%s/%s", js(pk, "apiVersion"), js(pk, "kind"));
	add_s(cells, b.data ? b.data : "<unset>");
	kb_buf_free(&b);
	add_age(cells, o, now);
}

/* Go's String() of a *metav1.LabelSelector (gogo protobuf's generated text:
 * labels sorted, values as %v of a []string), as kube prints a binding's
 * paramRef selector. */
static void go_selector_string(struct kb_buf *b, const json_t *sel)
{
	size_t n = 0;
	const json_t *ml = json_object_get(sel, "matchLabels");
	const char **keys = kb_json_sorted_keys(ml, &n);
	kb_buf_puts(b, "&LabelSelector{MatchLabels:map[string]string{");
	for (size_t i = 0; keys && i < n; i++) { /* keys hold dots: not paths */
		const char *v = json_string_value(json_object_get(ml, keys[i]));
		kb_buf_printf(b, "%s: %s,", keys[i], v ? v : "");
	}
	free(keys);
	kb_buf_puts(b, "},MatchExpressions:[]LabelSelectorRequirement{");
	const json_t *exprs = json_object_get(sel, "matchExpressions");
	for (size_t i = 0; i < json_array_size(exprs); i++) {
		const json_t *e = json_array_get(exprs, i), *vals = json_object_get(e, "values");
		kb_buf_printf(b, "LabelSelectorRequirement{Key:%s,Operator:%s,Values:[",
			      js(e, "key"), js(e, "operator"));
		for (size_t j = 0; j < json_array_size(vals); j++) {
			const char *v = json_string_value(json_array_get(vals, j));
			kb_buf_printf(b, "%s%s", j ? " " : "", v ? v : "");
		}
		kb_buf_puts(b, "],},");
	}
	kb_buf_puts(b, "},}");
}

/* ValidatingAdmissionPolicyBinding: the policy and the param reference
 * ("<ns>/<name>", "*" for the namespace when unset, or the selector) */
static const struct col cols_vapb[] = {
    C_NAME,
    C_S("PolicyName", "PolicyName indicates the policy definition which the policy binding "
		      "binded to"),
    C_S("ParamRef", "ParamRef indicates the param resource which sets the configration param"),
    C_AGE,
    C_END,
};

static void cells_vapb(json_t *cells, const json_t *o, time_t now)
{
	const json_t *pr = jp(o, "spec.paramRef"), *sel = jp(o, "spec.paramRef.selector");
	struct kb_buf b = {0};
	add_name(cells, o);
	add_s(cells, js(o, "spec.policyName"));
	if (json_is_object(pr) && *js(pr, "name"))
		kb_buf_printf(&b, "%s/%s", *js(pr, "namespace") ? js(pr, "namespace") : "*",
			      js(pr, "name"));
	else if (json_is_object(pr) && json_is_object(sel))
		go_selector_string(&b, sel);
	add_s(cells, b.data ? b.data : "<unset>");
	kb_buf_free(&b);
	add_age(cells, o, now);
}

static const struct col cols_runtimeclass[] = {
    C_NAME,
    C_S("Handler", "handler specifies the underlying runtime and configuration that the CRI "
		   "implementation will use to handle pods of this class."),
    C_AGE,
    C_END,
};

static void cells_runtimeclass(json_t *cells, const json_t *o, time_t now)
{
	add_name(cells, o);
	add_s(cells, js(o, "handler"));
	add_age(cells, o, now);
}

/* kube-aggregator's APIService table: the service or "Local", and Available
 * as its status, with the reason when it is not True */
static const struct col cols_apiservice[] = {
    C_NAME,
    C_S("Service", "The reference to the service that hosts this API endpoint."),
    C_S("Available", "Whether this service is available."),
    C_AGE,
    C_END,
};

static void cells_apiservice(json_t *cells, const json_t *o, time_t now)
{
	char buf[600];
	const json_t *svc = jp(o, "spec.service");
	add_name(cells, o);
	if (json_is_object(svc))
		snprintf(buf, sizeof(buf), "%s/%s", js(svc, "namespace"), js(svc, "name"));
	else
		snprintf(buf, sizeof(buf), "Local");
	add_s(cells, buf);
	const json_t *avail = NULL;
	size_t i;
	json_t *c;
	json_array_foreach (jp(o, "status.conditions"), i, c)
		if (!avail && strcmp(js(c, "type"), "Available") == 0)
			avail = c;
	const char *st = avail ? js(avail, "status") : "Unknown";
	const char *reason = avail ? js(avail, "reason") : "";
	if (avail && strcmp(st, "True") != 0 && *reason)
		snprintf(buf, sizeof(buf), "%s (%s)", st, reason);
	else
		snprintf(buf, sizeof(buf), "%s", st);
	add_s(cells, buf);
	add_age(cells, o, now);
}

static const struct col cols_csr[] = {
    C_NAME,
    C_AGE,
    C_S("SignerName", "signerName indicates the requested signer, and is a qualified name."),
    C_S("Requestor", "request contains an x509 certificate signing request encoded in a "
		     "\"CERTIFICATE REQUEST\" PEM block. When serialized as JSON or YAML, the "
		     "data is additionally base64-encoded."),
    C_S("RequestedDuration", "expirationSeconds is the requested duration of validity of the "
			     "issued certificate."),
    C_S("Condition", "conditions applied to the request. Known conditions are "
		     "\"Approved\", \"Denied\", and \"Failed\"."),
    C_END,
};

/* extractCSRStatus: Denied over Approved over Pending, then Failed, Issued. */
static void cells_csr(json_t *cells, const json_t *o, time_t now)
{
	bool approved = false, denied = false, failed = false;
	size_t i;
	json_t *c;
	json_array_foreach (jp(o, "status.conditions"), i, c) {
		const char *t = js(c, "type");
		approved |= strcmp(t, "Approved") == 0;
		denied |= strcmp(t, "Denied") == 0;
		failed |= strcmp(t, "Failed") == 0;
	}
	char cond[64], dur[32] = "<none>";
	snprintf(cond, sizeof(cond), "%s%s%s",
		 denied     ? "Denied"
		 : approved ? "Approved"
			    : "Pending",
		 failed ? ",Failed" : "", *js(o, "status.certificate") ? ",Issued" : "");
	const json_t *exp = jp(o, "spec.expirationSeconds");
	if (json_is_integer(exp))
		kb_age(now - (time_t)json_integer_value(exp), now, dur, sizeof(dur));
	add_name(cells, o);
	add_age(cells, o, now);
	add_s(cells, *js(o, "spec.signerName") ? js(o, "spec.signerName") : "<none>");
	add_s(cells, js(o, "spec.username"));
	add_s(cells, dur);
	add_s(cells, cond);
}

/* ---- custom resources: additionalPrinterColumns ------------------------------- */

/* The CRD version entry for r->version, or NULL. */
static const json_t *crd_version(const struct proxy_resource *r)
{
	size_t i;
	json_t *v;
	json_array_foreach (jp(r->crd, "spec.versions"), i, v)
		if (strcmp(js(v, "name"), r->version ? r->version : "") == 0)
			return v;
	return NULL;
}

static json_t *crd_columns(const struct proxy_resource *r)
{
	static const struct col name = C_NAME;
	const json_t *apc = json_object_get(crd_version(r), "additionalPrinterColumns");
	json_t *a;
	size_t i;
	json_t *c;
	if (json_array_size(apc) == 0)
		return cols_json(cols_name_age);
	a = json_array();
	json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", name.name, "type",
					   name.type, "format", name.format, "description",
					   name.desc, "priority", 0));
	json_array_foreach (apc, i, c)
		json_array_append_new(
		    a, json_pack("{s:s, s:s, s:s, s:s, s:I}", "name", js(c, "name"), "type",
				 js(c, "type"), "format", js(c, "format"), "description",
				 js(c, "description"), "priority", ji(c, "priority")));
	return a;
}

/* A simple JSONPath: ".a.b", ".a[0].b", "a.b"; NULL when not found. */
static const json_t *simple_jsonpath(const json_t *o, const char *path)
{
	char seg[128];
	if (*path == '{') /* "{.a.b}" form */
		path++;
	while (o && *path && *path != '}') {
		if (*path == '.') {
			path++;
			continue;
		}
		if (*path == '[') {
			char *end;
			long idx = strtol(path + 1, &end, 10);
			o = json_is_array(o) ? json_array_get(o, (size_t)idx) : NULL;
			path = *end == ']' ? end + 1 : end;
			continue;
		}
		size_t n = strcspn(path, ".[}");
		snprintf(seg, sizeof(seg), "%.*s", (int)n, path);
		o = json_is_object(o) ? json_object_get(o, seg) : NULL;
		path += n;
	}
	return o;
}

static void cells_crd(const struct proxy_resource *r, json_t *cells, const json_t *o, time_t now)
{
	const json_t *apc = json_object_get(crd_version(r), "additionalPrinterColumns");
	size_t i;
	json_t *c;
	if (json_array_size(apc) == 0) {
		cells_name_age(cells, o, now);
		return;
	}
	add_name(cells, o);
	json_array_foreach (apc, i, c) {
		const json_t *v = simple_jsonpath(o, js(c, "jsonPath"));
		const char *type = js(c, "type");
		time_t t;
		char b[32];
		if (strcmp(type, "date") == 0 && json_is_string(v)) {
			/* kube's cellForJSONValue: a date prints as an age */
			if (kb_time_parse(json_string_value(v), &t) < 0)
				snprintf(b, sizeof(b), "<invalid>");
			else
				kb_age(t, now, b, sizeof(b));
			add_s(cells, b);
		} else if (v && strcmp(type, "string") != 0 &&
			   (strcmp(type, "integer") == 0   ? !json_is_number(v)
			    : strcmp(type, "number") == 0  ? !json_is_number(v)
			    : strcmp(type, "boolean") == 0 ? !json_is_boolean(v)
							   : true)) {
			json_array_append_new(cells, json_null()); /* type mismatch: empty cell */
		} else if (v && strcmp(type, "integer") == 0 && json_is_real(v)) {
			json_array_append_new(cells, json_integer((json_int_t)json_real_value(v)));
		} else if (v && (json_is_object(v) || json_is_array(v))) {
			char *d = json_dumps(v, JSON_COMPACT);
			add_s(cells, d ? d : "");
			free(d);
		} else {
			json_array_append_new(cells, v ? json_deep_copy(v) : json_null());
		}
	}
}

/* ---- flowcontrol.apiserver.k8s.io ------------------------------------------------ */

static const struct col cols_flowschema[] = {
    C_NAME,
    C_S("PriorityLevel", "`name` is the name of the priority level configuration being "
			 "referenced Required."),
    C_S("MatchingPrecedence",
	"`matchingPrecedence` is used to choose among the FlowSchemas that match a given "
	"request. The chosen FlowSchema is among those with the numerically lowest (which we "
	"take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must "
	"be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to "
	"1000 as default."),
    C_S("DistinguisherMethod", "`distinguisherMethod` defines how to compute the flow "
			       "distinguisher for requests that match this schema. `nil` "
			       "specifies that the distinguisher is disabled and thus will "
			       "always be the empty string."),
    C_AGE,
    C_S("MissingPL", "references a broken or non-existent PriorityLevelConfiguration"),
    C_END,
};

static void cells_flowschema(json_t *cells, const json_t *o, time_t now)
{
	const char *dm = js(o, "spec.distinguisherMethod.type"), *dangling = "?";
	size_t i;
	json_t *c;
	json_array_foreach (jp(o, "status.conditions"), i, c)
		if (strcmp(js(c, "type"), "Dangling") == 0) {
			dangling = js(c, "status");
			break;
		}
	add_name(cells, o);
	add_s(cells, js(o, "spec.priorityLevelConfiguration.name"));
	add_i(cells, json_integer_value(jp(o, "spec.matchingPrecedence")));
	add_s(cells, jp(o, "spec.distinguisherMethod") ? dm : "<none>");
	add_age(cells, o, now);
	add_s(cells, dangling);
}

static const struct col cols_plc[] = {
    C_NAME,
    C_S("Type", "`type` indicates whether this priority level is subject to limitation on "
		"request execution.  A value of `\"Exempt\"` means that requests of this priority "
		"level are not subject to a limit (and thus are never queued) and do not detract "
		"from the capacity made available to other priority levels.  A value of "
		"`\"Limited\"` means that (a) requests of this priority level _are_ subject to "
		"limits and (b) some of the server's limited capacity is made available "
		"exclusively to this priority level. Required."),
    C_S("NominalConcurrencyShares", "`nominalConcurrencyShares` (NCS) contributes to the "
				    "computation of the NominalConcurrencyLimit (NominalCL) of "
				    "this level."),
    C_S("Queues", "`queues` is the number of queues for this priority level. The queues exist "
		  "independently at each apiserver. The value must be positive.  Setting it to 1 "
		  "effectively precludes shufflesharding and thus makes the distinguisher method "
		  "of associated flow schemas irrelevant.  This field has a default value of 64."),
    C_S("HandSize", "`handSize` is a small positive number that configures the shuffle "
		    "sharding of requests into queues."),
    C_S("QueueLengthLimit", "`queueLengthLimit` is the maximum number of requests allowed to "
			    "be waiting in a given queue of this priority level at a time; "
			    "excess requests are rejected.  This value must be positive.  If "
			    "not specified, it will be defaulted to 50."),
    C_AGE,
    C_END,
};

static void add_int_or_none(json_t *cells, const json_t *v)
{
	if (json_is_integer(v))
		add_i(cells, json_integer_value(v));
	else
		add_s(cells, "<none>");
}

static void cells_plc(json_t *cells, const json_t *o, time_t now)
{
	const json_t *lim = jp(o, "spec.limited");
	const json_t *q = json_is_object(lim) ? jp(lim, "limitResponse.queuing") : NULL;
	add_name(cells, o);
	add_s(cells, js(o, "spec.type"));
	if (json_is_object(lim))
		add_int_or_none(cells, json_object_get(lim, "nominalConcurrencyShares"));
	else
		add_s(cells, "<none>");
	add_int_or_none(cells, json_object_get(q, "queues"));
	add_int_or_none(cells, json_object_get(q, "handSize"));
	add_int_or_none(cells, json_object_get(q, "queueLengthLimit"));
	add_age(cells, o, now);
}

/* ---- dispatch -------------------------------------------------------------------- */

typedef void (*cells_fn)(json_t *cells, const json_t *obj, time_t now);

static const struct printer {
	const char *group, *kind;
	const struct col *cols;
	cells_fn cells;
} printers[] = {
    {"", "Pod", cols_pod, cells_pod},
    {"", "Namespace", cols_namespace, cells_namespace},
    {"", "Service", cols_service, cells_service},
    {"", "ConfigMap", cols_configmap, cells_configmap},
    {"", "Secret", cols_secret, cells_secret},
    {"", "ServiceAccount", cols_serviceaccount, cells_serviceaccount},
    {"", "Event", cols_event, cells_event},
    {"events.k8s.io", "Event", cols_event, cells_event_v1},
    {"", "Node", cols_node, cells_node},
    {"", "Endpoints", cols_endpoints, cells_endpoints},
    {"", "PersistentVolumeClaim", cols_pvc, cells_pvc},
    {"", "PersistentVolume", cols_pv, cells_pv},
    {"", "ReplicationController", cols_rc, cells_rc},
    {"", "PodTemplate", cols_podtemplate, cells_podtemplate},
    {"", "ResourceQuota", cols_quota, cells_quota},
    {"", "LimitRange", cols_default, cells_default},
    {"apps", "Deployment", cols_deployment, cells_deployment},
    {"apps", "ReplicaSet", cols_replicaset, cells_replicaset},
    {"apps", "StatefulSet", cols_statefulset, cells_statefulset},
    {"apps", "DaemonSet", cols_daemonset, cells_daemonset},
    {"apps", "ControllerRevision", cols_controllerrevision, cells_controllerrevision},
    {"batch", "Job", cols_job, cells_job},
    {"batch", "CronJob", cols_cronjob, cells_cronjob},
    {"autoscaling", "HorizontalPodAutoscaler", cols_hpa, cells_hpa},
    {"policy", "PodDisruptionBudget", cols_pdb, cells_pdb},
    {"networking.k8s.io", "Ingress", cols_ingress, cells_ingress},
    {"networking.k8s.io", "IngressClass", cols_ingressclass, cells_ingressclass},
    {"networking.k8s.io", "NetworkPolicy", cols_netpol, cells_netpol},
    {"discovery.k8s.io", "EndpointSlice", cols_endpointslice, cells_endpointslice},
    {"scheduling.k8s.io", "PriorityClass", cols_priorityclass, cells_priorityclass},
    {"storage.k8s.io", "StorageClass", cols_storageclass, cells_storageclass},
    {"node.k8s.io", "RuntimeClass", cols_runtimeclass, cells_runtimeclass},
    {"flowcontrol.apiserver.k8s.io", "FlowSchema", cols_flowschema, cells_flowschema},
    {"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", cols_plc, cells_plc},
    {"certificates.k8s.io", "CertificateSigningRequest", cols_csr, cells_csr},
    {"apiregistration.k8s.io", "APIService", cols_apiservice, cells_apiservice},
    {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", cols_webhookcfg,
     cells_webhookcfg},
    {"admissionregistration.k8s.io", "MutatingWebhookConfiguration", cols_webhookcfg,
     cells_webhookcfg},
    {"admissionregistration.k8s.io", "ValidatingAdmissionPolicy", cols_vap, cells_vap},
    {"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", cols_vapb, cells_vapb},
};

static const struct printer *find_printer(const struct proxy_resource *r)
{
	for (size_t i = 0; r && r->kind && i < KB_ARRAY_SIZE(printers); i++)
		if (strcmp(printers[i].group, r->group ? r->group : "") == 0 &&
		    strcmp(printers[i].kind, r->kind) == 0)
			return &printers[i];
	return NULL;
}

/* autoscaling/v1 Scale, as a built-in kind's /scale answers a Table:
 * kube's printScale. */
static const struct col cols_scale[] = {
    C_NAME,
    C_I("Desired", "replicas is the desired number of instances for the scaled object."),
    C_I("Available", "replicas is the actual number of observed instances of the scaled object."),
    C_AGE,
    C_END,
};

json_t *printers_scale_columns(void)
{
	return cols_json(cols_scale);
}

json_t *printers_scale_cells(const json_t *scale, time_t now)
{
	json_t *cells = json_array();
	if (!cells)
		return NULL;
	add_name(cells, scale);
	add_i(cells, json_integer_value(jp(scale, "spec.replicas")));
	add_i(cells, json_integer_value(jp(scale, "status.replicas")));
	add_age(cells, scale, now);
	return cells;
}

json_t *printers_columns(const struct proxy_resource *r)
{
	const struct printer *p = find_printer(r);
	if (p)
		return cols_json(p->cols);
	if (r && r->crd)
		return crd_columns(r);
	return cols_json(cols_default);
}

json_t *printers_cells(const struct proxy_resource *r, const json_t *obj, time_t now)
{
	const struct printer *p = find_printer(r);
	json_t *cells = json_array();
	if (!cells)
		return NULL;
	if (p)
		p->cells(cells, obj, now);
	else if (r && r->crd)
		cells_crd(r, cells, obj, now);
	else
		cells_default(cells, obj, now);
	return cells;
}
