/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The defaults kube-apiserver applies per kind (its SetDefaults_*
 * functions), and the defaults of list-map keys that server-side apply
 * needs before merging. A Service's ClusterIP is not a default but an
 * allocation: the write path makes it (proxy/api/write.c) before these run.
 *
 * Threading: any thread (no global mutable state).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "proxy/model/flowcontrol.h"
#include "proxy/model/object.h"

static void set_default(json_t *obj, const char *key, json_t *value)
{
	if (!json_object_get(obj, key))
		json_object_set(obj, key, value);
	json_decref(value);
}

/* set_default of an integer, made only where it is missing (key a literal). */
static void set_default_int(json_t *obj, const char *key, json_int_t v)
{
	if (json_is_object(obj) && !json_object_get(obj, key))
		json_object_set_new_nocheck(obj, key, json_integer(v));
}

/* set_default of a string, made only where it is missing: every create
 * goes through some twenty of these and finds most of them set. key and s
 * are the literals below (ASCII: not checked again as UTF-8). */
static void set_default_str(json_t *obj, const char *key, const char *s)
{
	if (json_is_object(obj) && !json_object_get(obj, key))
		json_object_set_new_nocheck(obj, key, json_string_nocheck(s));
}
static bool image_has_tag(const char *image)
{
	if (strchr(image, '@'))
		return true;
	const char *slash = strrchr(image, '/');
	const char *colon = strrchr(slash ? slash : image, ':');
	return colon && strcmp(colon, ":latest") != 0;
}

/* 0.5 -> "500m", 2.0 -> "2", like Quantity's canonical form. */
static void real_quantity(double d, char *buf, size_t len)
{
	long long m = (long long)(d * 1000.0 + (d >= 0 ? 0.5 : -0.5));
	double diff = d * 1000.0 - (double)m;
	if (diff > 1e-6 || diff < -1e-6)
		snprintf(buf, len, "%.17g", d);
	else if (m % 1000 == 0)
		snprintf(buf, len, "%lld", m / 1000);
	else
		snprintf(buf, len, "%lldm", m);
}

/* A Quantity may arrive as a JSON number (kubectl sends YAML `gpu: 1` so);
 * kube stores and returns it as a string. */
static void quantities_as_strings(json_t *list)
{
	const char *k;
	json_t *v;
	json_object_foreach (list, k, v) {
		char buf[64];
		if (json_is_integer(v))
			snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
		else if (json_is_real(v))
			real_quantity(json_real_value(v), buf, sizeof(buf));
		else
			continue;
		json_object_set_new(list, k, json_string(buf));
	}
}

/* ObjectFieldSelector: kube's apiVersion "v1". */
static void default_field_ref(json_t *holder)
{
	json_t *fr = json_object_get(holder, "fieldRef");
	if (json_is_object(fr))
		set_default_str(fr, "apiVersion", "v1");
}

/* SetDefaults_HTTPGetAction: path "/", scheme HTTP. */
static void default_http_get(json_t *holder)
{
	json_t *hg = json_object_get(holder, "httpGet");
	if (!json_is_object(hg))
		return;
	set_default_str(hg, "path", "/");
	set_default_str(hg, "scheme", "HTTP");
}

/* SetDefaults_Probe (1 s timeout, every 10 s, 1 success, 3 failures) and
 * its handler's SetDefaults_HTTPGetAction. */
static void default_probe(json_t *p)
{
	if (!json_is_object(p))
		return;
	set_default_int(p, "timeoutSeconds", 1);
	set_default_int(p, "periodSeconds", 10);
	set_default_int(p, "successThreshold", 1);
	set_default_int(p, "failureThreshold", 3);
	default_http_get(p);
}

/* Whether the key k of n bytes is the literal lit. */
#define KEY_IS(k, n, lit) ((n) == sizeof(lit) - 1 && memcmp((k), (lit), (n)) == 0)

/* The keys of a container that its defaults read or set, found in one
 * pass over its keys (a container has a dozen; looking each of these up
 * cost a hash apiece). */
struct container_keys {
	json_t *probe[3]; /* liveness, readiness, startup */
	json_t *lifecycle, *env, *resources, *image, *ports;
	bool pull_policy, message_path, message_policy;
};

static void container_keys(json_t *c, struct container_keys *ck)
{
	const char *k;
	size_t n;
	json_t *v;

	*ck = (struct container_keys){0};
	json_object_keylen_foreach (c, k, n, v) {
		switch (n ? k[0] : 0) {
		case 'l':
			if (KEY_IS(k, n, "livenessProbe"))
				ck->probe[0] = v;
			else if (KEY_IS(k, n, "lifecycle"))
				ck->lifecycle = v;
			break;
		case 'r':
			if (KEY_IS(k, n, "readinessProbe"))
				ck->probe[1] = v;
			else if (KEY_IS(k, n, "resources"))
				ck->resources = v;
			break;
		case 's':
			if (KEY_IS(k, n, "startupProbe"))
				ck->probe[2] = v;
			break;
		case 'e':
			if (KEY_IS(k, n, "env"))
				ck->env = v;
			break;
		case 'i':
			if (KEY_IS(k, n, "image"))
				ck->image = v;
			else if (KEY_IS(k, n, "imagePullPolicy"))
				ck->pull_policy = true;
			break;
		case 't':
			if (KEY_IS(k, n, "terminationMessagePath"))
				ck->message_path = true;
			else if (KEY_IS(k, n, "terminationMessagePolicy"))
				ck->message_policy = true;
			break;
		case 'p':
			if (KEY_IS(k, n, "ports"))
				ck->ports = v;
			break;
		}
	}
}

/* SetDefaults_Container and what it holds: probes', lifecycle hooks' and
 * env fieldRefs' defaults, quantities as strings, the pull policy by the
 * image's tag, the termination message, empty resources, ports' TCP. */
static void default_container(json_t *c)
{
	struct container_keys ck;

	container_keys(c, &ck);
	for (size_t i = 0; i < KB_ARRAY_SIZE(ck.probe); i++)
		default_probe(ck.probe[i]);
	default_http_get(json_object_get(ck.lifecycle, "postStart"));
	default_http_get(json_object_get(ck.lifecycle, "preStop"));
	size_t j;
	json_t *e;
	json_array_foreach (ck.env, j, e)
		default_field_ref(json_object_get(e, "valueFrom"));
	quantities_as_strings(json_object_get(ck.resources, "limits"));
	quantities_as_strings(json_object_get(ck.resources, "requests"));
	const char *image = json_string_value(ck.image);
	if (!ck.pull_policy)
		json_object_set_new_nocheck(
		    c, "imagePullPolicy",
		    json_string_nocheck(image && image_has_tag(image) ? "IfNotPresent" : "Always"));
	if (!ck.message_path)
		json_object_set_new_nocheck(c, "terminationMessagePath",
					    json_string_nocheck("/dev/termination-log"));
	if (!ck.message_policy)
		json_object_set_new_nocheck(c, "terminationMessagePolicy",
					    json_string_nocheck("File"));
	if (!ck.resources)
		json_object_set_new_nocheck(c, "resources", json_object());
	size_t i;
	json_t *p;
	json_array_foreach (ck.ports, i, p)
		if (json_is_object(p))
			set_default_str(p, "protocol", "TCP");
}

static void default_downward_items(json_t *src)
{
	size_t i;
	json_t *it;
	json_array_foreach (json_object_get(src, "items"), i, it)
		if (json_is_object(it))
			default_field_ref(it);
}

/* SetDefaults_PersistentVolumeClaimSpec: volumeMode Filesystem. */
static void default_pvc_spec(json_t *spec)
{
	if (json_is_object(spec))
		set_default_str(spec, "volumeMode", "Filesystem");
}

/* The defaults of the volume sources a pod and a PersistentVolume share
 * (SetDefaults_ISCSIVolumeSource, _RBDVolumeSource, _AzureDiskVolumeSource,
 * _ScaleIOVolumeSource, and their persistent-volume twins), for the source
 * o under key k. */
static void default_shared_source(const char *k, json_t *o)
{
	if (strcmp(k, "iscsi") == 0) {
		set_default_str(o, "iscsiInterface", "default");
	} else if (strcmp(k, "rbd") == 0) {
		set_default_str(o, "pool", "rbd");
		set_default_str(o, "user", "admin");
		set_default_str(o, "keyring", "/etc/ceph/keyring");
	} else if (strcmp(k, "azureDisk") == 0) {
		set_default_str(o, "cachingMode", "ReadWrite");
		set_default_str(o, "fsType", "ext4");
		set_default(o, "readOnly", json_false());
		set_default_str(o, "kind", "Shared");
	} else if (strcmp(k, "scaleIO") == 0) {
		set_default_str(o, "storageMode", "ThinProvisioned");
		set_default_str(o, "fsType", "xfs");
	}
}

static void default_shared_sources(json_t *v)
{
	static const char *const shared[] = {"iscsi", "rbd", "azureDisk", "scaleIO"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(shared); i++) {
		json_t *o = json_object_get(v, shared[i]);
		if (json_is_object(o))
			default_shared_source(shared[i], o);
	}
}

/* The defaults of a pod volume's source o under key k: the shared sources,
 * an image volume's pull policy as a container's
 * (SetDefaults_ImageVolumeSource), a generic ephemeral volume's claim spec,
 * file modes 0644, downward API field paths in v1, a projected token's
 * hour, hostPath's unset type. */
static void default_pod_source(const char *k, json_t *o)
{
	static const char *const moded[] = {"secret", "configMap", "downwardAPI", "projected"};
	default_shared_source(k, o);
	if (strcmp(k, "image") == 0) {
		const char *ref = json_string_value(json_object_get(o, "reference"));
		set_default_str(o, "pullPolicy",
				ref && image_has_tag(ref) ? "IfNotPresent" : "Always");
	} else if (strcmp(k, "ephemeral") == 0) {
		default_pvc_spec(obj_get(o, "volumeClaimTemplate.spec"));
	} else if (strcmp(k, "hostPath") == 0) {
		set_default_str(o, "type", "");
	}
	for (size_t i = 0; i < KB_ARRAY_SIZE(moded); i++)
		if (strcmp(k, moded[i]) == 0)
			set_default(o, "defaultMode", json_integer(0644));
	if (strcmp(k, "downwardAPI") == 0)
		default_downward_items(o);
	if (strcmp(k, "projected") != 0)
		return;
	size_t j;
	json_t *src;
	json_array_foreach (json_object_get(o, "sources"), j, src) {
		default_downward_items(json_object_get(src, "downwardAPI"));
		json_t *tok = json_object_get(src, "serviceAccountToken");
		if (json_is_object(tok))
			set_default(tok, "expirationSeconds", json_integer(3600));
	}
}

/* The volumes' defaults (SetDefaults_Volume: no source at all is an
 * emptyDir), each volume's keys read once rather than probed for every
 * source that has a default: a source that is not an object has none. */
static void default_volumes(json_t *spec)
{
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		if (!json_is_object(v))
			continue;
		bool any = false;
		const char *k;
		json_t *x;
		json_object_foreach (v, k, x) {
			if (strcmp(k, "name") != 0 && !json_is_null(x))
				any = true;
			if (json_is_object(x))
				default_pod_source(k, x);
		}
		if (!any)
			json_object_set_new(v, "emptyDir", json_object());
	}
}

/* The keys of a pod spec that its defaults (and a pod's) read or set, found
 * in one pass as a container's are. The containers' lists, hostNetwork and
 * tolerations stay what they were through default_pod_spec_scanned. */
struct spec_keys {
	json_t *containers, *init, *ephemeral, *host_network, *tolerations;
	json_t *sa_name, *sa; /* serviceAccountName, serviceAccount */
	bool restart, grace, dns, security, scheduler, links;
};

static void spec_keys(json_t *spec, struct spec_keys *sk)
{
	const char *k;
	size_t n;
	json_t *v;

	json_object_keylen_foreach (spec, k, n, v) {
		switch (n ? k[0] : 0) {
		case 'c':
			if (KEY_IS(k, n, "containers"))
				sk->containers = v;
			break;
		case 'd':
			if (KEY_IS(k, n, "dnsPolicy"))
				sk->dns = true;
			break;
		case 'e':
			if (KEY_IS(k, n, "enableServiceLinks"))
				sk->links = true;
			else if (KEY_IS(k, n, "ephemeralContainers"))
				sk->ephemeral = v;
			break;
		case 'h':
			if (KEY_IS(k, n, "hostNetwork"))
				sk->host_network = v;
			break;
		case 'i':
			if (KEY_IS(k, n, "initContainers"))
				sk->init = v;
			break;
		case 'r':
			if (KEY_IS(k, n, "restartPolicy"))
				sk->restart = true;
			break;
		case 's':
			if (KEY_IS(k, n, "securityContext"))
				sk->security = true;
			else if (KEY_IS(k, n, "schedulerName"))
				sk->scheduler = true;
			else if (KEY_IS(k, n, "serviceAccountName"))
				sk->sa_name = v;
			else if (KEY_IS(k, n, "serviceAccount"))
				sk->sa = v;
			break;
		case 't':
			if (KEY_IS(k, n, "terminationGracePeriodSeconds"))
				sk->grace = true;
			else if (KEY_IS(k, n, "tolerations"))
				sk->tolerations = v;
			break;
		}
	}
}

/* SetDefaults_PodSpec and its containers' and volumes' defaults; sk is
 * what spec_keys found (all NULL for a spec that is not an object). */
static void default_pod_spec_scanned(json_t *spec, struct spec_keys *sk)
{
	*sk = (struct spec_keys){0};
	if (!json_is_object(spec))
		return;
	spec_keys(spec, sk);
	if (!sk->restart)
		json_object_set_new_nocheck(spec, "restartPolicy", json_string_nocheck("Always"));
	if (!sk->grace)
		json_object_set_new_nocheck(spec, "terminationGracePeriodSeconds",
					    json_integer(30));
	if (!sk->dns)
		json_object_set_new_nocheck(spec, "dnsPolicy", json_string_nocheck("ClusterFirst"));
	if (!sk->security)
		json_object_set_new_nocheck(spec, "securityContext", json_object());
	if (!sk->scheduler)
		json_object_set_new_nocheck(spec, "schedulerName",
					    json_string_nocheck("default-scheduler"));
	if (!sk->links)
		json_object_set_new_nocheck(spec, "enableServiceLinks", json_true());
	const char *sa = json_string_value(sk->sa_name);
	if (!sa)
		sa = json_string_value(sk->sa);
	char name[256];
	snprintf(name, sizeof(name), "%s", sa ? sa : "default");
	/* replaces the values sk->sa_name and sk->sa pointed to */
	json_object_set_new(spec, "serviceAccountName", json_string(name));
	json_object_set_new(spec, "serviceAccount", json_string(name));
	sk->sa_name = sk->sa = NULL;
	json_t *const lists[] = {sk->containers, sk->init, sk->ephemeral};
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (lists[l], i, c)
			if (json_is_object(c))
				default_container(c);
	}
	default_volumes(spec);
}

static void default_pod_spec(json_t *spec)
{
	struct spec_keys sk;

	default_pod_spec_scanned(spec, &sk);
}

/* QoS class as kubelet computes it (requests/limits of all containers). */
static const char *pod_qos(const json_t *containers)
{
	bool any = false, guaranteed = true;
	size_t i;
	json_t *c;
	json_array_foreach (containers, i, c) {
		json_t *res = json_object_get(c, "resources");
		json_t *req = json_object_get(res, "requests");
		json_t *lim = json_object_get(res, "limits");
		if (json_object_size(req) || json_object_size(lim))
			any = true;
		const char *names[] = {"cpu", "memory"};
		for (int k = 0; k < 2; k++) {
			json_t *l = json_object_get(lim, names[k]);
			json_t *q = json_object_get(req, names[k]);
			if (!l || (q && !json_equal(q, l)))
				guaranteed = false;
		}
	}
	if (!any)
		return "BestEffort";
	return guaranteed ? "Guaranteed" : "Burstable";
}

/* Pods only (not templates), as kube: a limit without a request sets the
 * request. */
static void requests_from_limits(const struct spec_keys *sk)
{
	json_t *const lists[] = {sk->containers, sk->init};
	for (size_t l = 0; l < 2; l++) {
		size_t i;
		json_t *c;
		json_array_foreach (lists[l], i, c) {
			json_t *res = json_object_get(c, "resources");
			json_t *lim = json_object_get(res, "limits");
			if (!json_is_object(lim) || !json_object_size(lim))
				continue;
			json_t *req = json_object_get(res, "requests");
			if (!json_is_object(req)) {
				req = json_object();
				json_object_set_new(res, "requests", req);
			}
			const char *k;
			json_t *v;
			json_object_foreach (lim, k, v)
				if (!json_object_get(req, k))
					json_object_set(req, k, v);
		}
	}
}

/* A host-network pod's container ports are its host ports (kube's
 * defaultHostNetworkPorts, from SetDefaults_Pod: pods, not templates). */
static void host_network_ports(const struct spec_keys *sk)
{
	json_t *const lists[] = {sk->containers, sk->init};
	if (!json_is_true(sk->host_network))
		return;
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		size_t i, j;
		json_t *c, *p;
		json_array_foreach (lists[l], i, c)
			json_array_foreach (json_object_get(c, "ports"), j, p) {
				json_t *hp = json_object_get(p, "hostPort");
				if (json_is_object(p) && (!hp || json_integer_value(hp) == 0))
					json_object_set(p, "hostPort",
							json_object_get(p, "containerPort"));
			}
	}
}

/* {"key":key,"operator":"Exists","effect":"NoExecute","tolerationSeconds":300}
 * (the DefaultTolerationSeconds admission plugin's), built directly: json_pack
 * parses its format on every pod. NULL on ENOMEM. */
static json_t *not_ready_toleration(const char *key)
{
	json_t *t = json_object();

	if (!t || json_object_set_new_nocheck(t, "key", json_string_nocheck(key)) ||
	    json_object_set_new_nocheck(t, "operator", json_string_nocheck("Exists")) ||
	    json_object_set_new_nocheck(t, "effect", json_string_nocheck("NoExecute")) ||
	    json_object_set_new_nocheck(t, "tolerationSeconds", json_integer(300))) {
		json_decref(t);
		return NULL;
	}
	return t;
}

static void default_pod(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	struct spec_keys sk;
	default_pod_spec_scanned(spec, &sk);
	requests_from_limits(&sk);
	host_network_ports(&sk);
	json_t *tols = sk.tolerations;
	if (!json_is_array(tols)) {
		tols = json_array();
		json_object_set_new(spec, "tolerations", tols);
	}
	const char *keys[] = {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"};
	bool have[2] = {false, false};
	size_t i;
	json_t *t;
	json_array_foreach (tols, i, t) { /* each toleration's key read once */
		const char *tk =
		    json_is_object(t) ? json_string_value(json_object_get(t, "key")) : NULL;
		for (int k = 0; tk && k < 2; k++)
			if (strcmp(tk, keys[k]) == 0)
				have[k] = true;
	}
	for (int k = 0; k < 2; k++)
		if (!have[k])
			json_array_append_new(tols, not_ready_toleration(keys[k]));
	json_t *status = kb_json_object_at(obj, "status");
	set_default_str(status, "phase", "Pending");
	set_default(status, "qosClass", json_string(pod_qos(sk.containers)));
}

static void default_template(json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	json_t *tmpl = json_object_get(spec, "template");
	if (json_is_object(tmpl)) {
		default_pod_spec(json_object_get(tmpl, "spec"));
		kb_json_object_at(tmpl, "metadata");
	}
}

static void default_deployment(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	set_default(spec, "replicas", json_integer(1));
	set_default(spec, "revisionHistoryLimit", json_integer(10));
	set_default(spec, "progressDeadlineSeconds", json_integer(600));
	json_t *st = kb_json_object_at(spec, "strategy");
	set_default_str(st, "type", "RollingUpdate");
	if (strcmp(obj_str(st, "type") ? obj_str(st, "type") : "", "RollingUpdate") == 0) {
		json_t *ru = kb_json_object_at(st, "rollingUpdate");
		set_default_str(ru, "maxUnavailable", "25%");
		set_default_str(ru, "maxSurge", "25%");
	}
	default_template(obj);
	set_default(obj, "status", json_object());
}

static void default_pvc(json_t *obj);

static void default_statefulset(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	set_default(spec, "replicas", json_integer(1));
	set_default(spec, "revisionHistoryLimit", json_integer(10));
	set_default_str(spec, "podManagementPolicy", "OrderedReady");
	/* SetDefaults_StatefulSet: an unset strategy is RollingUpdate with a
	 * partition of 0; a RollingUpdate one given without rollingUpdate
	 * stays without */
	json_t *us = kb_json_object_at(spec, "updateStrategy");
	if (!obj_str(us, "type")) {
		json_object_set_new(us, "type", json_string("RollingUpdate"));
		kb_json_object_at(us, "rollingUpdate");
	}
	json_t *ru = json_object_get(us, "rollingUpdate");
	if (strcmp(obj_str(us, "type"), "RollingUpdate") == 0 && json_is_object(ru))
		set_default(ru, "partition", json_integer(0));
	json_t *rp = kb_json_object_at(spec, "persistentVolumeClaimRetentionPolicy");
	set_default_str(rp, "whenDeleted", "Retain");
	set_default_str(rp, "whenScaled", "Retain");
	size_t i;
	json_t *pvc;
	json_array_foreach (json_object_get(spec, "volumeClaimTemplates"), i, pvc)
		if (json_is_object(pvc))
			default_pvc(pvc);
	default_template(obj);
	json_t *status = kb_json_object_at(obj, "status");
	set_default(status, "replicas", json_integer(0));
	set_default(status, "availableReplicas", json_integer(0));
}

static void default_replicaset(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	set_default(spec, "replicas", json_integer(1));
	default_template(obj);
	json_t *status = kb_json_object_at(obj, "status");
	set_default(status, "replicas", json_integer(0));
}

/* kube's SetDefaults_ReplicationController: the selector and the labels
 * from the template's labels when empty, one replica. */
static void default_replication_controller(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	json_t *labels = obj_get(obj, "spec.template.metadata.labels");
	if (json_object_size(labels)) {
		if (!json_object_size(json_object_get(spec, "selector")))
			json_object_set_new(spec, "selector", json_deep_copy(labels));
		if (!json_object_size(obj_get(obj, "metadata.labels")))
			json_object_set_new(obj_meta(obj), "labels", json_deep_copy(labels));
	}
	set_default(spec, "replicas", json_integer(1));
	default_template(obj);
	json_t *status = kb_json_object_at(obj, "status");
	set_default(status, "replicas", json_integer(0));
}

static void default_pod_template(json_t *obj)
{
	json_t *tmpl = json_object_get(obj, "template");
	if (json_is_object(tmpl))
		default_pod_spec(json_object_get(tmpl, "spec"));
}

static void default_daemonset(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	set_default(spec, "revisionHistoryLimit", json_integer(10));
	json_t *us = kb_json_object_at(spec, "updateStrategy");
	set_default_str(us, "type", "RollingUpdate");
	if (strcmp(obj_str(us, "type") ? obj_str(us, "type") : "", "RollingUpdate") == 0) {
		json_t *ru = kb_json_object_at(us, "rollingUpdate");
		set_default(ru, "maxUnavailable", json_integer(1));
		set_default(ru, "maxSurge", json_integer(0));
	}
	default_template(obj);
	json_t *status = kb_json_object_at(obj, "status");
	const char *keys[] = {"currentNumberScheduled", "numberMisscheduled",
			      "desiredNumberScheduled", "numberReady"};
	for (int i = 0; i < 4; i++)
		set_default(status, keys[i], json_integer(0));
}

/* SetDefaults_PodFailurePolicyOnPodConditionsPattern: status "True". */
static void default_pod_failure_policy(json_t *pfp)
{
	size_t i, j;
	json_t *rule, *pat;
	json_array_foreach (json_object_get(pfp, "rules"), i, rule)
		json_array_foreach (json_object_get(rule, "onPodConditions"), j, pat)
			if (json_is_object(pat))
				set_default_str(pat, "status", "True");
}

static void default_job(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	/* SetDefaults_Job: one completion only when parallelism is unset too
	 * (a work queue's Job has none) */
	if (!json_object_get(spec, "parallelism"))
		set_default(spec, "completions", json_integer(1));
	set_default(spec, "parallelism", json_integer(1));
	set_default(spec, "backoffLimit",
		    json_integer(json_object_get(spec, "backoffLimitPerIndex") ? 2147483647 : 6));
	set_default_str(spec, "completionMode", "NonIndexed");
	set_default(spec, "suspend", json_false());
	json_t *pfp = json_object_get(spec, "podFailurePolicy");
	set_default(spec, "podReplacementPolicy",
		    json_string(json_is_object(pfp) ? "Failed" : "TerminatingOrFailed"));
	default_pod_failure_policy(pfp);
	json_t *tl = obj_get(obj, "spec.template.metadata.labels");
	if (json_object_size(tl) && !json_object_size(obj_get(obj, "metadata.labels")))
		json_object_set_new(obj_meta(obj), "labels", json_deep_copy(tl));
	const char *uid = obj_str(obj, "metadata.uid");
	const char *name = obj_str(obj, "metadata.name");
	json_t *tmpl = kb_json_object_at(spec, "template");
	json_t *labels = kb_json_object_at(kb_json_object_at(tmpl, "metadata"), "labels");
	if (uid && name && !json_object_get(spec, "selector") &&
	    !json_is_true(json_object_get(spec, "manualSelector"))) {
		json_object_set_new(spec, "selector",
				    json_pack("{s:{s:s}}", "matchLabels",
					      "batch.kubernetes.io/controller-uid", uid));
		json_object_set_new(labels, "batch.kubernetes.io/controller-uid", json_string(uid));
		json_object_set_new(labels, "batch.kubernetes.io/job-name", json_string(name));
		json_object_set_new(labels, "controller-uid", json_string(uid));
		json_object_set_new(labels, "job-name", json_string(name));
	}
	default_template(obj);
	set_default(obj, "status", json_object());
}

static void default_cronjob(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	set_default_str(spec, "concurrencyPolicy", "Allow");
	set_default(spec, "suspend", json_false());
	set_default(spec, "successfulJobsHistoryLimit", json_integer(3));
	set_default(spec, "failedJobsHistoryLimit", json_integer(1));
	/* SetDefaults_CronJob stops there: a job template's spec is no Job
	 * (SetDefaults_Job does not run on it), only its pod spec and pod
	 * failure policy are defaulted */
	json_t *jspec = obj_get(obj, "spec.jobTemplate.spec");
	if (json_is_object(jspec)) {
		default_pod_spec(obj_get(jspec, "template.spec"));
		default_pod_failure_policy(json_object_get(jspec, "podFailurePolicy"));
	}
	set_default(obj, "status", json_object());
}

/* kube's SetDefaults_Service; spec.clusterIP is allocated before (its
 * absence here is an ExternalName Service's). */
static void default_service(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	set_default_str(spec, "type", "ClusterIP");
	set_default_str(spec, "sessionAffinity", "None");
	const char *type = json_string_value(json_object_get(spec, "type"));
	if (type && strcmp(type, "ExternalName") != 0) {
		const char *cip = json_string_value(json_object_get(spec, "clusterIP"));
		set_default(spec, "clusterIPs", json_pack("[s]", cip ? cip : "None"));
		set_default(spec, "ipFamilies", json_pack("[s]", "IPv4"));
		set_default_str(spec, "ipFamilyPolicy", "SingleStack");
		set_default_str(spec, "internalTrafficPolicy", "Cluster");
	}
	/* ClientIP affinity's 3 hours; NodePort and LoadBalancer's external
	 * traffic policy; a load balancer's node ports */
	const char *aff = json_string_value(json_object_get(spec, "sessionAffinity"));
	if (aff && strcmp(aff, "ClientIP") == 0) {
		json_t *ci =
		    kb_json_object_at(kb_json_object_at(spec, "sessionAffinityConfig"), "clientIP");
		set_default(ci, "timeoutSeconds", json_integer(10800));
	}
	if (type && (strcmp(type, "NodePort") == 0 || strcmp(type, "LoadBalancer") == 0))
		set_default_str(spec, "externalTrafficPolicy", "Cluster");
	if (type && strcmp(type, "LoadBalancer") == 0)
		set_default(spec, "allocateLoadBalancerNodePorts", json_true());
	size_t i;
	json_t *p;
	json_array_foreach (json_object_get(spec, "ports"), i, p) {
		if (!json_is_object(p))
			continue;
		set_default_str(p, "protocol", "TCP");
		json_t *port = json_object_get(p, "port");
		if (port && !json_object_get(p, "targetPort"))
			json_object_set(p, "targetPort", port);
	}
	json_t *status = kb_json_object_at(obj, "status");
	set_default(status, "loadBalancer", json_object());
}

static void default_secret(json_t *obj)
{
	set_default_str(obj, "type", "Opaque");
	json_t *sd = json_object_get(obj, "stringData");
	if (json_is_object(sd)) {
		json_t *data = kb_json_object_at(obj, "data");
		const char *k;
		json_t *v;
		json_object_foreach (sd, k, v) {
			const char *s = json_string_value(v);
			if (!s)
				continue;
			char *b = kb_base64_encode(s, strlen(s));
			json_object_set_new(data, k, json_string(b));
			free(b);
		}
		json_object_del(obj, "stringData");
	}
}

static void default_namespace(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	set_default(spec, "finalizers", json_pack("[s]", "kubernetes"));
	json_t *status = kb_json_object_at(obj, "status");
	set_default_str(status, "phase", "Active");
	json_t *labels = kb_json_object_at(obj_meta(obj), "labels");
	const char *name = obj_str(obj, "metadata.name");
	if (name)
		json_object_set_new(labels, "kubernetes.io/metadata.name", json_string(name));
}

static void default_pvc(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	default_pvc_spec(spec);
	json_t *status = kb_json_object_at(obj, "status");
	set_default_str(status, "phase", "Pending");
}

/* kube's SetDefaults_PersistentVolume */
static void default_pv(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	set_default_str(spec, "persistentVolumeReclaimPolicy", "Retain");
	set_default_str(spec, "volumeMode", "Filesystem");
	default_shared_sources(spec);
	json_t *status = kb_json_object_at(obj, "status");
	set_default_str(status, "phase", "Pending");
}

static void default_port_protocols(json_t *ports);

/* A behavior's unset scaling rules from `defaults` (stolen). */
static void hpa_rules(json_t *behavior, const char *key, json_t *defaults)
{
	json_t *rules = kb_json_object_at(behavior, key);
	const char *fields[] = {"selectPolicy", "stabilizationWindowSeconds", "policies"};
	for (size_t i = 0; rules && i < KB_ARRAY_SIZE(fields); i++) {
		json_t *d = json_object_get(defaults, fields[i]);
		if (d && !json_object_get(rules, fields[i]))
			json_object_set(rules, fields[i], d);
	}
	json_decref(defaults);
}

json_t *obj_hpa_cpu_metric(json_t *pct)
{
	return json_pack("{s:s,s:{s:s,s:{s:s,s:o}}}", "type", "Resource", "resource", "name", "cpu",
			 "target", "type", "Utilization", "averageUtilization", pct);
}

/* autoscaling/v2 SetDefaults_HorizontalPodAutoscaler: one replica at least,
 * CPU at 80 % when no metric is given, and a behavior's unset scaling rules
 * from the autoscaler's historical ones. */
void obj_hpa_defaults(json_t *obj)
{
	set_default(kb_json_object_at(obj, "status"), "desiredReplicas", json_integer(0));
	json_t *spec = kb_json_object_at(obj, "spec");
	set_default(spec, "minReplicas", json_integer(1));
	if (json_array_size(json_object_get(spec, "metrics")) == 0)
		json_object_set_new(spec, "metrics",
				    json_pack("[o]", obj_hpa_cpu_metric(json_integer(80))));
	json_t *behavior = json_object_get(spec, "behavior");
	if (!json_is_object(behavior))
		return;
	hpa_rules(behavior, "scaleUp",
		  json_pack("{s:s,s:i,s:[{s:s,s:i,s:i},{s:s,s:i,s:i}]}", "selectPolicy", "Max",
			    "stabilizationWindowSeconds", 0, "policies", "type", "Pods", "value", 4,
			    "periodSeconds", 15, "type", "Percent", "value", 100, "periodSeconds",
			    15));
	hpa_rules(behavior, "scaleDown",
		  json_pack("{s:s,s:[{s:s,s:i,s:i}]}", "selectPolicy", "Max", "policies", "type",
			    "Percent", "value", 100, "periodSeconds", 15));
}

/* networking/v1: policyTypes from the rules given, ports' protocol TCP. */
static void default_networkpolicy(json_t *obj)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	if (json_array_size(json_object_get(spec, "policyTypes")) == 0) {
		json_t *types = json_pack("[s]", "Ingress");
		if (json_array_size(json_object_get(spec, "egress")) > 0)
			json_array_append_new(types, json_string("Egress"));
		json_object_set_new(spec, "policyTypes", types);
	}
	const char *dirs[] = {"ingress", "egress"};
	for (size_t d = 0; d < 2; d++) {
		size_t i;
		json_t *rule;
		json_array_foreach (json_object_get(spec, dirs[d]), i, rule)
			default_port_protocols(json_object_get(rule, "ports"));
	}
}

/* discovery/v1: ports' name "" and protocol TCP (SetDefaults_EndpointPort). */
static void default_endpointslice(json_t *obj)
{
	size_t i;
	json_t *p;
	json_array_foreach (json_object_get(obj, "ports"), i, p) {
		if (!json_is_object(p))
			continue;
		set_default_str(p, "name", "");
		set_default_str(p, "protocol", "TCP");
	}
}

/* core/v1 Endpoints: subsets' ports protocol TCP. */
static void default_endpoints(json_t *obj)
{
	size_t i;
	json_t *ss;
	json_array_foreach (json_object_get(obj, "subsets"), i, ss)
		default_port_protocols(json_object_get(ss, "ports"));
}

/* policy/v1: a new budget's status starts at zero (PrepareForCreate). */
static void default_pdb(json_t *obj)
{
	json_t *status = kb_json_object_at(obj, "status");
	const char *counts[] = {"disruptionsAllowed", "currentHealthy", "desiredHealthy",
				"expectedPods"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(counts); i++)
		set_default(status, counts[i], json_integer(0));
}

/* A default where the field is absent or null (kube's nil pointer). */
static void set_default_nil(json_t *obj, const char *key, json_t *value)
{
	if (json_is_null(json_object_get(obj, key)))
		json_object_del(obj, key);
	set_default(obj, key, value);
}

/* admissionregistration/v1 SetDefaults_ValidatingWebhook, _MutatingWebhook
 * (reinvocationPolicy), _Rule (scope) and _ServiceReference (port). */
static void default_webhook(json_t *hook, bool mutating)
{
	size_t i;
	json_t *rule;
	set_default_nil(hook, "failurePolicy", json_string("Fail"));
	set_default_nil(hook, "matchPolicy", json_string("Equivalent"));
	set_default_nil(hook, "namespaceSelector", json_object());
	set_default_nil(hook, "objectSelector", json_object());
	set_default_nil(hook, "timeoutSeconds", json_integer(10));
	if (mutating)
		set_default_nil(hook, "reinvocationPolicy", json_string("Never"));
	json_array_foreach (json_object_get(hook, "rules"), i, rule)
		if (json_is_object(rule))
			set_default_nil(rule, "scope", json_string("*"));
	json_t *svc = obj_get(hook, "clientConfig.service");
	if (json_is_object(svc))
		set_default_nil(svc, "port", json_integer(443));
}

static void default_webhook_configuration(json_t *obj, bool mutating)
{
	size_t i;
	json_t *hook;
	json_array_foreach (json_object_get(obj, "webhooks"), i, hook)
		if (json_is_object(hook))
			default_webhook(hook, mutating);
}

/* admissionregistration/v1 SetDefaults_MatchResources, with _Rule (scope)
 * on both rule lists. */
static void default_match_resources(json_t *mr)
{
	size_t i;
	json_t *rule;
	set_default_nil(mr, "matchPolicy", json_string("Equivalent"));
	set_default_nil(mr, "namespaceSelector", json_object());
	set_default_nil(mr, "objectSelector", json_object());
	const char *lists[] = {"resourceRules", "excludeResourceRules"};
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++)
		json_array_foreach (json_object_get(mr, lists[l]), i, rule)
			if (json_is_object(rule))
				set_default_nil(rule, "scope", json_string("*"));
}

/* SetDefaults_ValidatingAdmissionPolicySpec (failurePolicy; the spec is not
 * a pointer in kube, so an object without one gets it) and the match
 * resources of a policy (matchConstraints) or a binding (matchResources).
 * v1 defaults nothing in a binding's paramRef. */
static void default_admission_policy(json_t *obj, bool binding)
{
	json_t *spec = kb_json_object_at(obj, "spec");
	if (!spec)
		return;
	if (!binding)
		set_default_nil(spec, "failurePolicy", json_string("Fail"));
	json_t *mr = json_object_get(spec, binding ? "matchResources" : "matchConstraints");
	if (json_is_object(mr))
		default_match_resources(mr);
}

/* rbac/v1 SetDefaults_RoleBinding, _ClusterRoleBinding (the role's group)
 * and SetDefaults_Subject (a User's or Group's group; a ServiceAccount's
 * is "", which kube's JSON omits). */
static void default_role_binding(json_t *obj)
{
	static const char *const rbac = "rbac.authorization.k8s.io";
	json_t *ref = json_object_get(obj, "roleRef");
	const char *g = json_string_value(json_object_get(ref, "apiGroup"));
	if (json_is_object(ref) && (!g || !*g))
		json_object_set_new(ref, "apiGroup", json_string(rbac));
	size_t i;
	json_t *sub;
	json_array_foreach (json_object_get(obj, "subjects"), i, sub) {
		const char *kind = json_string_value(json_object_get(sub, "kind"));
		const char *sg = json_string_value(json_object_get(sub, "apiGroup"));
		if (!json_is_object(sub) || (sg && *sg) || !kind)
			continue;
		if (strcmp(kind, "User") == 0 || strcmp(kind, "Group") == 0)
			json_object_set_new(sub, "apiGroup", json_string(rbac));
	}
}

static void default_other_groups(const struct proxy_resource *res, json_t *obj)
{
	const char *g = res->group, *k = res->kind;
	if (strcmp(g, "autoscaling") == 0 && strcmp(k, "HorizontalPodAutoscaler") == 0) {
		if (strcmp(res->version, "v1") == 0) /* v1 defaults only this */
			set_default(kb_json_object_at(obj, "spec"), "minReplicas", json_integer(1));
		else
			obj_hpa_defaults(obj);
	} else if (strcmp(g, "policy") == 0 && strcmp(k, "PodDisruptionBudget") == 0)
		default_pdb(obj);
	else if (strcmp(g, "networking.k8s.io") == 0 && strcmp(k, "NetworkPolicy") == 0)
		default_networkpolicy(obj);
	else if (strcmp(g, "discovery.k8s.io") == 0 && strcmp(k, "EndpointSlice") == 0)
		default_endpointslice(obj);
	else if (strcmp(g, "rbac.authorization.k8s.io") == 0 &&
		 (strcmp(k, "RoleBinding") == 0 || strcmp(k, "ClusterRoleBinding") == 0))
		default_role_binding(obj);
	else if (strcmp(g, "networking.k8s.io") == 0 && strcmp(k, "IngressClass") == 0) {
		/* SetDefaults_IngressClass: parameters are cluster-scoped */
		json_t *params = obj_get(obj, "spec.parameters");
		if (json_is_object(params))
			set_default_str(params, "scope", "Cluster");
	} else if (strcmp(g, "scheduling.k8s.io") == 0 && strcmp(k, "PriorityClass") == 0)
		set_default_str(obj, "preemptionPolicy", "PreemptLowerPriority");
	else if (strcmp(g, "flowcontrol.apiserver.k8s.io") == 0)
		flowcontrol_default(res, obj);
	else if (strcmp(g, "storage.k8s.io") == 0 && strcmp(k, "StorageClass") == 0) {
		set_default_str(obj, "reclaimPolicy", "Delete");
		set_default_str(obj, "volumeBindingMode", "Immediate");
	} else if (strcmp(g, "apiregistration.k8s.io") == 0) {
		/* SetDefaults_ServiceReference; a null service is a local one */
		json_t *svc = obj_get(obj, "spec.service");
		if (json_is_null(svc))
			json_object_del(json_object_get(obj, "spec"), "service");
		else if (json_is_object(svc))
			set_default_nil(svc, "port", json_integer(443));
	} else if (strcmp(g, "admissionregistration.k8s.io") == 0 &&
		   (strcmp(k, "ValidatingWebhookConfiguration") == 0 ||
		    strcmp(k, "MutatingWebhookConfiguration") == 0))
		default_webhook_configuration(obj, k[0] == 'M');
	else if (strcmp(g, "admissionregistration.k8s.io") == 0 &&
		 strncmp(k, "ValidatingAdmissionPolicy", 25) == 0)
		default_admission_policy(obj, strcmp(k, "ValidatingAdmissionPolicyBinding") == 0);
}

void obj_defaults(const struct proxy_resource *res, json_t *obj)
{
	const char *g = res->group, *k = res->kind;
	if (!g[0]) {
		if (strcmp(k, "Pod") == 0)
			default_pod(obj);
		else if (strcmp(k, "Service") == 0)
			default_service(obj);
		else if (strcmp(k, "Secret") == 0)
			default_secret(obj);
		else if (strcmp(k, "Namespace") == 0)
			default_namespace(obj);
		else if (strcmp(k, "PersistentVolumeClaim") == 0)
			default_pvc(obj);
		else if (strcmp(k, "PersistentVolume") == 0)
			default_pv(obj);
		else if (strcmp(k, "ReplicationController") == 0)
			default_replication_controller(obj);
		else if (strcmp(k, "PodTemplate") == 0)
			default_pod_template(obj);
		else if (strcmp(k, "Endpoints") == 0)
			default_endpoints(obj);
	} else if (strcmp(g, "apps") == 0) {
		if (strcmp(k, "Deployment") == 0)
			default_deployment(obj);
		else if (strcmp(k, "StatefulSet") == 0)
			default_statefulset(obj);
		else if (strcmp(k, "ReplicaSet") == 0)
			default_replicaset(obj);
		else if (strcmp(k, "DaemonSet") == 0)
			default_daemonset(obj);
	} else if (strcmp(g, "batch") == 0) {
		if (strcmp(k, "Job") == 0)
			default_job(obj);
		else if (strcmp(k, "CronJob") == 0)
			default_cronjob(obj);
	} else {
		default_other_groups(res, obj);
	}
}

static void default_port_protocols(json_t *ports)
{
	size_t i;
	json_t *p;
	json_array_foreach (ports, i, p)
		if (json_is_object(p) && !json_object_get(p, "protocol"))
			json_object_set_new(p, "protocol", json_string("TCP"));
}

static void default_pod_spec_keys(json_t *spec)
{
	const char *lists[] = {"containers", "initContainers"};
	for (int l = 0; l < 2; l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, lists[l]), i, c)
			default_port_protocols(json_object_get(c, "ports"));
	}
}

/* Defaults of list-map key fields (ports' protocol), which server-side
 * apply needs before merging so that an applied item matches its live one. */
void obj_default_keys(const struct proxy_resource *res, json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec");
	if (!json_is_object(spec))
		return;
	if (!res->group[0] && strcmp(res->kind, "Service") == 0) {
		default_port_protocols(json_object_get(spec, "ports"));
		return;
	}
	default_pod_spec_keys(spec);
	default_pod_spec_keys(obj_get(spec, "template.spec"));
	default_pod_spec_keys(obj_get(spec, "jobTemplate.spec.template.spec"));
}

bool obj_limit_item_is(const json_t *item, const char *type)
{
	const char *t = json_string_value(json_object_get(item, "type"));
	return t && strcmp(t, type) == 0;
}

/* kube's SetDefaults_LimitRangeItem for Container items. */
void obj_limitrange_defaults(json_t *lr)
{
	size_t i;
	json_t *item;
	json_array_foreach (obj_get(lr, "spec.limits"), i, item) {
		if (!json_is_object(item) || !obj_limit_item_is(item, "Container"))
			continue;
		obj_fill_missing(item, "default", json_object_get(item, "max"));
		obj_fill_missing(item, "defaultRequest", json_object_get(item, "default"));
		obj_fill_missing(item, "defaultRequest", json_object_get(item, "min"));
	}
}
