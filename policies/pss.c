/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod Security Standards (kubernetes.io/docs/concepts/security/
 * pod-security-standards): the baseline checks (host namespaces, privileged,
 * capabilities, hostPath, host ports, AppArmor, SELinux, /proc mount,
 * seccomp, sysctls, Windows HostProcess, probe and lifecycle hosts) and
 * the restricted ones on top
 * (volume types, privilege escalation, non-root, seccomp, capabilities).
 * Each violation is appended to the message as kube's pod-security
 * admission words it: "privileged (container "c" must not set
 * securityContext.privileged=true)".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/json.h"
#include "policies/policies_impl.h"

static const char *const kinds[] = {"containers", "initContainers", "ephemeralContainers"};

static const char *const baseline_caps[] = {
    "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};

static const char *const safe_sysctls[] = {"kernel.shm_rmid_forced",
					   "net.ipv4.ip_local_port_range",
					   "net.ipv4.ip_unprivileged_port_start",
					   "net.ipv4.tcp_syncookies",
					   "net.ipv4.ping_group_range",
					   "net.ipv4.ip_local_reserved_ports",
					   "net.ipv4.tcp_keepalive_time",
					   "net.ipv4.tcp_fin_timeout",
					   "net.ipv4.tcp_keepalive_intvl",
					   "net.ipv4.tcp_keepalive_probes"};

static const char *const restricted_volumes[] = {"configMap", "csi",       "downwardAPI",
						 "emptyDir",  "ephemeral", "persistentVolumeClaim",
						 "projected", "secret"};

static const char *const selinux_types[] = {"", "container_t", "container_init_t",
					    "container_kvm_t", "container_engine_t"};

static bool in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s && strcmp(s, list[i]) == 0)
			return true;
	return false;
}
#define IN(s, list) in_list((s), (list), sizeof(list) / sizeof(list[0]))

static const char *str(const json_t *o, const char *path)
{
	return json_string_value(kb_json_path(o, path));
}

static bool is_true(const json_t *o, const char *path)
{
	return json_is_true(kb_json_path(o, path));
}

static const char *cname(const json_t *c)
{
	const char *n = str(c, "name");
	return n ? n : "";
}

/* Calls fn for every container of every kind; sums its results. */
typedef int (*ctr_fn)(const json_t *spec, const json_t *c, char *msg, size_t len);
static int each_container(const json_t *spec, ctr_fn fn, char *msg, size_t len)
{
	int n = 0;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, kinds[k]), i, c)
			n += fn(spec, c, msg, len);
	}
	return n;
}

/* ---- host fields (baseline, and the policy's hostFields: deny) ---- */

static int host_ns(const json_t *spec, char *msg, size_t len)
{
	static const char *const keys[] = {"hostNetwork", "hostPID", "hostIPC"};
	int n = 0;
	for (size_t i = 0; i < 3; i++)
		if (is_true(spec, keys[i])) {
			policy_msg_add(msg, len, "host namespaces (%s=true)", keys[i]);
			n++;
		}
	return n;
}

static int host_path(const json_t *spec, char *msg, size_t len)
{
	size_t i;
	json_t *v;
	int n = 0;
	json_array_foreach (json_object_get(spec, "volumes"), i, v)
		if (json_object_get(v, "hostPath")) {
			policy_msg_add(msg, len, "hostPath volumes (volume \"%s\")", cname(v));
			n++;
		}
	return n;
}

static int ctr_host(const json_t *spec, const json_t *c, char *msg, size_t len)
{
	int n = 0;
	if (is_true(c, "securityContext.privileged")) {
		policy_msg_add(msg, len,
			       "privileged (container \"%s\" must not set "
			       "securityContext.privileged=true)",
			       cname(c));
		n++;
	}
	size_t i;
	json_t *port;
	json_array_foreach (json_object_get(c, "ports"), i, port)
		if (json_integer_value(json_object_get(port, "hostPort")) != 0) {
			policy_msg_add(
			    msg, len, "hostPort (container \"%s\" uses hostPort %lld)", cname(c),
			    (long long)json_integer_value(json_object_get(port, "hostPort")));
			n++;
		}
	return n;
}

int policy_host_check(const json_t *spec, char *msg, size_t len)
{
	return host_ns(spec, msg, len) + host_path(spec, msg, len) +
	       each_container(spec, ctr_host, msg, len);
}

/* ---- the rest of baseline ---- */

/* Baseline since kube 1.34 (KEP-4940): a probe's or lifecycle hook's
 * httpGet.host or tcpSocket.host makes the kubelet connect from the node to
 * an address the pod chose (another node, the cloud's metadata service);
 * only the pod's own IP (no host) is allowed. */
static int probe_hosts(const json_t *c, char *msg, size_t len)
{
	static const char *const handlers[] = {
	    "livenessProbe.httpGet.host",       "livenessProbe.tcpSocket.host",
	    "readinessProbe.httpGet.host",      "readinessProbe.tcpSocket.host",
	    "startupProbe.httpGet.host",        "startupProbe.tcpSocket.host",
	    "lifecycle.postStart.httpGet.host", "lifecycle.postStart.tcpSocket.host",
	    "lifecycle.preStop.httpGet.host",   "lifecycle.preStop.tcpSocket.host"};
	int n = 0;
	for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++) {
		const char *h = str(c, handlers[i]);
		if (!h || !*h)
			continue;
		policy_msg_add(msg, len,
			       "probe or lifecycle host (container \"%s\" must not set %s=\"%s\")",
			       cname(c), handlers[i], h);
		n++;
	}
	return n;
}

static int ctr_baseline(const json_t *spec, const json_t *c, char *msg, size_t len)
{
	int n = 0;
	const char *name = cname(c);
	size_t i;
	json_t *cap;
	json_array_foreach (kb_json_path(c, "securityContext.capabilities.add"), i, cap)
		if (!IN(json_string_value(cap), baseline_caps)) {
			policy_msg_add(msg, len,
				       "non-default capabilities (container \"%s\" must not "
				       "include \"%s\" in securityContext.capabilities.add)",
				       name, json_string_value(cap) ? json_string_value(cap) : "");
			n++;
		}
	const char *pm = str(c, "securityContext.procMount");
	if (pm && strcmp(pm, "Default") != 0) {
		policy_msg_add(
		    msg, len,
		    "procMount (container \"%s\" must not set securityContext.procMount=\"%s\")",
		    name, pm);
		n++;
	}
	const char *sc = str(c, "securityContext.seccompProfile.type");
	if (sc && strcmp(sc, "Unconfined") == 0) {
		policy_msg_add(msg, len,
			       "seccompProfile (container \"%s\" must not set "
			       "securityContext.seccompProfile.type to \"Unconfined\")",
			       name);
		n++;
	}
	const char *aa = str(c, "securityContext.appArmorProfile.type");
	if (aa && strcmp(aa, "RuntimeDefault") != 0 && strcmp(aa, "Localhost") != 0) {
		policy_msg_add(msg, len,
			       "appArmorProfile (container \"%s\" must not set "
			       "securityContext.appArmorProfile.type to \"%s\")",
			       name, aa);
		n++;
	}
	const json_t *se = kb_json_path(c, "securityContext.seLinuxOptions");
	if (se && (!IN(str(se, "type") ? str(se, "type") : "", selinux_types) || str(se, "user") ||
		   str(se, "role"))) {
		policy_msg_add(
		    msg, len,
		    "seLinuxOptions (container \"%s\" sets a forbidden type, user or role)", name);
		n++;
	}
	if (is_true(c, "securityContext.windowsOptions.hostProcess")) {
		policy_msg_add(msg, len,
			       "hostProcess (container \"%s\" must not set "
			       "securityContext.windowsOptions.hostProcess=true)",
			       name);
		n++;
	}
	n += probe_hosts(c, msg, len);
	(void)spec;
	return n;
}

static int pod_baseline(const json_t *meta, const json_t *spec, char *msg, size_t len)
{
	int n = 0;
	const char *sc = str(spec, "securityContext.seccompProfile.type");
	if (sc && strcmp(sc, "Unconfined") == 0) {
		policy_msg_add(msg, len,
			       "seccompProfile (pod must not set "
			       "securityContext.seccompProfile.type to \"Unconfined\")");
		n++;
	}
	const char *aa = str(spec, "securityContext.appArmorProfile.type");
	if (aa && strcmp(aa, "RuntimeDefault") != 0 && strcmp(aa, "Localhost") != 0) {
		policy_msg_add(msg, len,
			       "appArmorProfile (pod must not set "
			       "securityContext.appArmorProfile.type to \"%s\")",
			       aa);
		n++;
	}
	const json_t *se = kb_json_path(spec, "securityContext.seLinuxOptions");
	if (se && (!IN(str(se, "type") ? str(se, "type") : "", selinux_types) || str(se, "user") ||
		   str(se, "role"))) {
		policy_msg_add(msg, len,
			       "seLinuxOptions (pod sets a forbidden type, user or role)");
		n++;
	}
	if (is_true(spec, "securityContext.windowsOptions.hostProcess")) {
		policy_msg_add(msg, len,
			       "hostProcess (pod must not set "
			       "securityContext.windowsOptions.hostProcess=true)");
		n++;
	}
	size_t i;
	json_t *s;
	json_array_foreach (kb_json_path(spec, "securityContext.sysctls"), i, s)
		if (!IN(str(s, "name"), safe_sysctls)) {
			policy_msg_add(msg, len, "forbidden sysctls (%s)",
				       str(s, "name") ? str(s, "name") : "");
			n++;
		}
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)json_object_get(meta, "annotations"), k, v) {
		const char *val = json_string_value(v);
		if (strncmp(k, "container.apparmor.security.beta.kubernetes.io/", 47) == 0 && val &&
		    strcmp(val, "runtime/default") != 0 && strncmp(val, "localhost/", 10) != 0) {
			policy_msg_add(msg, len,
				       "forbidden AppArmor profile (annotation %s=\"%s\")", k, val);
			n++;
		}
	}
	return n;
}

/* ---- restricted ---- */

static bool ctr_or_pod_true(const json_t *spec, const json_t *c, const char *field)
{
	json_t *v = kb_json_path(c, field);
	if (v)
		return json_is_true(v);
	return is_true(spec, field);
}

static int ctr_restricted(const json_t *spec, const json_t *c, char *msg, size_t len)
{
	int n = 0;
	const char *name = cname(c);
	if (!json_is_false(kb_json_path(c, "securityContext.allowPrivilegeEscalation"))) {
		policy_msg_add(msg, len,
			       "allowPrivilegeEscalation != false (container \"%s\" must set "
			       "securityContext.allowPrivilegeEscalation=false)",
			       name);
		n++;
	}
	bool drop_all = false;
	size_t i;
	json_t *cap;
	json_array_foreach (kb_json_path(c, "securityContext.capabilities.drop"), i, cap)
		if (json_string_value(cap) && strcmp(json_string_value(cap), "ALL") == 0)
			drop_all = true;
	if (!drop_all) {
		policy_msg_add(msg, len,
			       "unrestricted capabilities (container \"%s\" must set "
			       "securityContext.capabilities.drop=[\"ALL\"])",
			       name);
		n++;
	}
	json_array_foreach (kb_json_path(c, "securityContext.capabilities.add"), i, cap)
		if (!json_string_value(cap) ||
		    strcmp(json_string_value(cap), "NET_BIND_SERVICE") != 0) {
			policy_msg_add(msg, len,
				       "unrestricted capabilities (container \"%s\" must not "
				       "include \"%s\" in securityContext.capabilities.add)",
				       name, json_string_value(cap) ? json_string_value(cap) : "");
			n++;
		}
	if (!ctr_or_pod_true(spec, c, "securityContext.runAsNonRoot")) {
		policy_msg_add(msg, len,
			       "runAsNonRoot != true (pod or container \"%s\" must set "
			       "securityContext.runAsNonRoot=true)",
			       name);
		n++;
	}
	json_t *uid = kb_json_path(c, "securityContext.runAsUser");
	if (uid && json_integer_value(uid) == 0) {
		policy_msg_add(msg, len, "runAsUser=0 (container \"%s\" must not set runAsUser=0)",
			       name);
		n++;
	}
	const char *sc = str(c, "securityContext.seccompProfile.type");
	if (!sc)
		sc = str(spec, "securityContext.seccompProfile.type");
	if (!sc || (strcmp(sc, "RuntimeDefault") != 0 && strcmp(sc, "Localhost") != 0)) {
		policy_msg_add(msg, len,
			       "seccompProfile (pod or container \"%s\" must set "
			       "securityContext.seccompProfile.type "
			       "to \"RuntimeDefault\" or \"Localhost\")",
			       name);
		n++;
	}
	return n;
}

static int pod_restricted(const json_t *spec, char *msg, size_t len)
{
	int n = 0;
	size_t i;
	json_t *v;
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		const char *k;
		json_t *x;
		json_object_foreach (v, k, x) {
			if (strcmp(k, "name") == 0 || IN(k, restricted_volumes) ||
			    strcmp(k, "hostPath") == 0 /* reported by baseline */)
				continue;
			policy_msg_add(msg, len,
				       "restricted volume types (volume \"%s\" uses restricted "
				       "volume type \"%s\")",
				       cname(v), k);
			n++;
		}
	}
	json_t *uid = kb_json_path(spec, "securityContext.runAsUser");
	if (uid && json_integer_value(uid) == 0) {
		policy_msg_add(msg, len, "runAsUser=0 (pod must not set runAsUser=0)");
		n++;
	}
	return n;
}

int policy_pss_check(enum policy_pss level, bool host_fields, const json_t *meta,
		     const json_t *spec, char *msg, size_t len)
{
	if (level == POLICY_PSS_PRIVILEGED)
		return 0;
	int n = (host_fields ? 0 : policy_host_check(spec, msg, len)) +
		pod_baseline(meta, spec, msg, len) + each_container(spec, ctr_baseline, msg, len);
	if (level == POLICY_PSS_RESTRICTED)
		n +=
		    pod_restricted(spec, msg, len) + each_container(spec, ctr_restricted, msg, len);
	return n;
}

/* ---- public: Pod Security admission by namespace labels ---- */

static const char *const level_names[] = {"privileged", "baseline", "restricted"};

int policy_pss_parse(const char *name)
{
	for (size_t i = 0; name && i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(name, level_names[i]) == 0)
			return (int)i;
	return -EINVAL;
}

const char *policy_pss_name(int level)
{
	if (level < 0 || (size_t)level >= sizeof(level_names) / sizeof(level_names[0]))
		return NULL;
	return level_names[level];
}

int policy_pss_level(const policy_t *p)
{
	return p ? (int)p->pss : POLICY_PSS_PRIVILEGED;
}

int policy_pss_violations(int level, const json_t *meta, const json_t *spec, char *msg, size_t len)
{
	if (level <= POLICY_PSS_PRIVILEGED || !json_is_object(spec))
		return 0;
	return policy_pss_check(level >= POLICY_PSS_RESTRICTED ? POLICY_PSS_RESTRICTED
							       : POLICY_PSS_BASELINE,
				false, meta, spec, msg, len);
}
