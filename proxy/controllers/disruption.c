/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The disruption controller, as kube-controller-manager's
 * (pkg/controller/disruption): the status of every PodDisruptionBudget.
 * Its pods are those of its namespace that its selector matches; a pod is
 * healthy when its Ready condition is True, it is not being deleted and it
 * is not in status.disruptedPods (an eviction, proxy/api/eviction.c, is on its
 * way). expectedPods is the number of matching pods for an integer
 * minAvailable, else the sum of the scales of the pods' controllers
 * (a Deployment through its ReplicaSet, a ReplicaSet, StatefulSet,
 * ReplicationController, or a custom resource with a scale subresource);
 * desiredHealthy follows minAvailable or expectedPods - maxUnavailable
 * (percentages rounded up); disruptionsAllowed = currentHealthy -
 * desiredHealthy, at least 0, and 0 while no pod is expected. The
 * condition DisruptionAllowed says SufficientPods or InsufficientPods;
 * a sync that fails writes disruptionsAllowed 0 with reason SyncFailed and
 * the error (kube's failSafe) and is tried again with backoff.
 * disruptedPods entries go when their pod is deleted or after two minutes
 * (kube's DeletionTimeout; the budget is synced again when the first one
 * expires). A pod left with an eviction's DisruptionTarget=True condition
 * but no deletionTimestamp for two minutes gets it set to False.
 *
 * A pod that several budgets select gets kube's MultiplePodDisruptionBudgets
 * warning on each of its changes.
 *
 * Keys: "pdb" (a budget; queued on its changes and on changes of pods it
 * selects before or after) and "pdbpod" (a pod under several budgets or
 * with a DisruptionTarget condition). Threading: loop thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"
#include "lib/util.h"
#include "proxy/model/resource.h"
#include "proxy/model/selector.h"

#define MANAGER          "disruption-controller"
#define COMPONENT        "controllermanager"
#define DELETION_TIMEOUT 120 /* seconds */
#define STALE_TIMEOUT    120 /* seconds */

/* ---- pure pieces ------------------------------------------------------------ */

bool ctrl_pdb_needs_scale(const json_t *spec)
{
	json_t *mu = json_object_get(spec, "maxUnavailable");
	json_t *ma = json_object_get(spec, "minAvailable");
	return (mu && !json_is_null(mu)) || json_is_string(ma);
}

/* GetScaledValueFromIntOrPercent (rounding up) with kube's errors. */
static int scaled(const json_t *v, int total, int *out, char *err, size_t len)
{
	const char *s = json_string_value(v);
	if (s && (!*s || s[strlen(s) - 1] != '%')) {
		snprintf(err, len, "invalid type: string is not a percentage");
		return -EINVAL;
	}
	if (ctrl_scaled_value(v, total, true, out) < 0) {
		snprintf(err, len, "invalid value \"%s\": invalid syntax", s ? s : "");
		return -EINVAL;
	}
	return 0;
}

int ctrl_pdb_expected(const json_t *spec, int npods, int scale, int *expected, int *desired,
		      char *err, size_t len)
{
	json_t *mu = json_object_get(spec, "maxUnavailable");
	json_t *ma = json_object_get(spec, "minAvailable");
	int v = 0;
	*expected = *desired = 0;
	if (mu && !json_is_null(mu)) {
		*expected = scale;
		if (scaled(mu, scale, &v, err, len) < 0)
			return -EINVAL;
		*desired = scale - v > 0 ? scale - v : 0;
	} else if (json_is_integer(ma)) {
		*desired = (int)json_integer_value(ma);
		*expected = npods;
	} else if (json_is_string(ma)) {
		*expected = scale;
		if (scaled(ma, scale, &v, err, len) < 0)
			return -EINVAL;
		*desired = v;
	}
	return 0;
}

static bool pod_deleting(const json_t *pod)
{
	return ctrl_path(pod, "metadata.deletionTimestamp") != NULL;
}

json_t *ctrl_pdb_disrupted(const json_t *pods, const json_t *old, time_t now, time_t *recheck)
{
	json_t *out = json_object();
	*recheck = 0;
	size_t i;
	json_t *pod;
	json_array_foreach (pods, i, pod) {
		const char *name = ctrl_name(pod);
		json_t *when = name ? json_object_get(old, name) : NULL;
		if (!when || pod_deleting(pod))
			continue;
		time_t due = ctrl_time(json_string_value(when)) + DELETION_TIMEOUT;
		if (due < now)
			continue; /* expected to be deleted, but it was not */
		json_object_set(out, name, when);
		if (!*recheck || due < *recheck)
			*recheck = due;
	}
	return out;
}

int ctrl_pdb_healthy(const json_t *pods, const json_t *disrupted, time_t now)
{
	int n = 0;
	size_t i;
	json_t *pod;
	json_array_foreach (pods, i, pod) {
		if (pod_deleting(pod))
			continue;
		json_t *when = json_object_get(disrupted, ctrl_name(pod));
		if (when && ctrl_time(json_string_value(when)) + DELETION_TIMEOUT > now)
			continue;
		if (ctrl_ep_pod_ready(pod))
			n++;
	}
	return n;
}

int ctrl_pdb_allowed(int healthy, int desired, int expected)
{
	int allowed = healthy - desired;
	return expected <= 0 || allowed <= 0 ? 0 : allowed;
}

/* apimeta.SetStatusCondition of a metav1.Condition. */
static void set_condition(json_t *status, const char *st, const char *reason, const char *message,
			  json_int_t generation, time_t now)
{
	json_t *conds = json_object_get(status, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(status, "conditions", conds);
	}
	json_t *c = ctrl_get_condition(status, "DisruptionAllowed");
	if (!c) {
		c = json_object();
		json_array_append_new(conds, c);
	}
	const char *old = json_string_value(json_object_get(c, "status"));
	if (!old || strcmp(old, st) != 0) {
		char ts[40];
		kb_time_rfc3339(now, ts, sizeof(ts));
		json_object_set_new(c, "lastTransitionTime", json_string(ts));
	}
	json_object_set_new(c, "type", json_string("DisruptionAllowed"));
	json_object_set_new(c, "status", json_string(st));
	json_object_set_new(c, "reason", json_string(reason));
	json_object_set_new(c, "message", json_string(message));
	json_object_set_new(c, "observedGeneration", json_integer(generation));
}

json_t *ctrl_pdb_status(const json_t *old, json_int_t generation, int healthy, int desired,
			int expected, const json_t *disrupted, time_t now)
{
	int allowed = ctrl_pdb_allowed(healthy, desired, expected);
	json_t *st =
	    json_pack("{s:I,s:i,s:i,s:i,s:i}", "observedGeneration", (json_int_t)generation,
		      "disruptionsAllowed", allowed, "currentHealthy", healthy, "desiredHealthy",
		      desired, "expectedPods", expected);
	if (json_object_size(disrupted) > 0)
		json_object_set_new(st, "disruptedPods", json_deep_copy(disrupted));
	json_t *conds = json_object_get(old, "conditions");
	json_object_set_new(st, "conditions",
			    json_is_array(conds) ? json_deep_copy(conds) : json_array());
	if (allowed > 0)
		set_condition(st, "True", "SufficientPods", "", generation, now);
	else
		set_condition(st, "False", "InsufficientPods", "", generation, now);
	return st;
}

json_t *ctrl_pdb_fail_status(const json_t *old, const char *message, time_t now)
{
	json_t *st = json_is_object(old) ? json_deep_copy(old) : json_object();
	json_object_set_new(st, "disruptionsAllowed", json_integer(0));
	for (const char *const *k =
		 (const char *const[]){"currentHealthy", "desiredHealthy", "expectedPods", NULL};
	     *k; k++)
		if (!json_object_get(st, *k))
			json_object_set_new(st, *k, json_integer(0));
	set_condition(st, "False", "SyncFailed", message,
		      json_integer_value(json_object_get(st, "observedGeneration")), now);
	return st;
}

/* ---- controllers and their scale ------------------------------------------ */

/* A pod's controller: its uid and scale, found through the owner
 * reference ref (borrowed) as kube's finders do. 0 with *found false when
 * none matches; -EINVAL with err for a kind without a scale. */
struct scale_find {
	struct ctrl *c;
	const char *ns;
	char uid[128];
	int scale;
	bool found;
};

static bool ref_is(const json_t *ref, const char *kind, const char *const *groups)
{
	const char *k = json_string_value(json_object_get(ref, "kind"));
	const char *av = json_string_value(json_object_get(ref, "apiVersion"));
	if (!k || !av || strcmp(k, kind) != 0)
		return false;
	const char *slash = strchr(av, '/');
	size_t glen = slash ? (size_t)(slash - av) : 0;
	for (; *groups; groups++)
		if (strlen(*groups) == glen && strncmp(av, *groups, glen) == 0)
			return true;
	return false;
}

/* The object ref names in res, when its uid is the reference's. New ref. */
static json_t *get_ref(struct scale_find *f, const char *res, const json_t *ref)
{
	const char *name = json_string_value(json_object_get(ref, "name"));
	const char *uid = json_string_value(json_object_get(ref, "uid"));
	json_t *o = name ? ctrl_get(f->c, res, f->ns, name) : NULL;
	if (o && (!uid || !ctrl_uid(o) || strcmp(uid, ctrl_uid(o)) != 0)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static void found(struct scale_find *f, const json_t *obj, int64_t replicas)
{
	snprintf(f->uid, sizeof(f->uid), "%s", ctrl_uid(obj) ? ctrl_uid(obj) : "");
	f->scale = (int)replicas;
	f->found = true;
}

static const char *const apps_groups[] = {"apps", "extensions", NULL};

/* A ReplicaSet: its Deployment's scale when one controls it, else its own. */
static void find_rs(struct scale_find *f, const json_t *ref)
{
	json_t *rs = get_ref(f, "apps/replicasets", ref);
	if (!rs)
		return;
	json_t *up = ctrl_controller_ref(rs);
	if (up && ref_is(up, "Deployment", apps_groups)) {
		json_t *d = get_ref(f, "apps/deployments", up);
		if (d)
			found(f, d, ctrl_int(d, "spec.replicas", 1));
		json_decref(d);
	} else if (!up || strcmp(json_string_value(json_object_get(up, "kind")) ?: "",
				 "Deployment") != 0) {
		found(f, rs, ctrl_int(rs, "spec.replicas", 1));
	}
	json_decref(rs);
}

static void find_simple(struct scale_find *f, const char *res, const json_t *ref)
{
	json_t *o = get_ref(f, res, ref);
	if (o)
		found(f, o, ctrl_int(o, "spec.replicas", 1));
	json_decref(o);
}

/* The scale subresource of a custom resource: its specReplicasPath. */
static const char *crd_replicas_path(const struct proxy_resource *row)
{
	size_t i;
	json_t *v;
	json_array_foreach (ctrl_path(row->crd, "spec.versions"), i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		if (name && strcmp(name, row->version) == 0)
			return json_string_value(
			    ctrl_path(v, "subresources.scale.specReplicasPath"));
	}
	return NULL;
}

static int find_custom(struct scale_find *f, const json_t *ref, char *err, size_t len)
{
	const char *k = json_string_value(json_object_get(ref, "kind"));
	const char *av = json_string_value(json_object_get(ref, "apiVersion"));
	char group[256] = "";
	const char *slash = av ? strchr(av, '/') : NULL;
	if (slash)
		snprintf(group, sizeof(group), "%.*s", (int)(slash - av), av);
	const struct proxy_resource *row = k ? resource_find_kind(group, k) : NULL;
	if (!row) {
		snprintf(err, len, "no matches for kind \"%s\" in version \"%s\"", k ? k : "",
			 av ? av : "");
		return -EINVAL;
	}
	const char *path = row->crd ? crd_replicas_path(row) : NULL;
	if (!path || strncmp(path, ".", 1) != 0) {
		snprintf(err, len, "%s%s%s does not implement the scale subresource", row->plural,
			 *group ? "." : "", group);
		return -EINVAL;
	}
	json_t *o = get_ref(f, row->store_key, ref);
	if (o)
		found(f, o, ctrl_int(o, path + 1, 0));
	json_decref(o);
	return 0;
}

static int find_controller(struct scale_find *f, const json_t *ref, char *err, size_t len)
{
	static const char *const core[] = {"", NULL};
	f->found = false;
	if (ref_is(ref, "ReplicationController", core))
		find_simple(f, "/replicationcontrollers", ref);
	else if (ref_is(ref, "ReplicaSet", apps_groups))
		find_rs(f, ref);
	else if (ref_is(ref, "StatefulSet", (const char *const[]){"apps", NULL}))
		find_simple(f, "apps/statefulsets", ref);
	else
		return find_custom(f, ref, err, len);
	return 0;
}

/* getExpectedScale: the sum of the scales of the pods' controllers, each
 * counted once; pods without a controller are named in unmanaged. */
static int expected_scale(struct ctrl *c, const json_t *pdb, const json_t *pods, int *total,
			  bool *unmanaged, char *err, size_t len)
{
	struct kmap *seen = kmap_new(NULL);
	struct scale_find f = {.c = c, .ns = ctrl_ns(pdb)};
	int rc = seen ? 0 : -ENOMEM;
	size_t i;
	json_t *pod;
	*total = 0;
	*unmanaged = false;
	json_array_foreach (pods, i, pod) {
		json_t *ref = ctrl_controller_ref(pod);
		const char *uid = json_string_value(json_object_get(ref, "uid"));
		if (rc < 0)
			break;
		if (!ref) {
			*unmanaged = true;
			continue;
		}
		if (uid && kmap_has(seen, uid))
			continue;
		rc = find_controller(&f, ref, err, len);
		if (rc == 0 && !f.found) {
			snprintf(err, len, "found no controllers for pod \"%s\"", ctrl_name(pod));
			rc = -EINVAL;
		}
		if (rc == 0 && !kmap_has(seen, f.uid)) {
			kmap_put(seen, f.uid, NULL);
			*total += f.scale;
		}
		if (rc == 0 && uid)
			kmap_put(seen, uid, NULL);
	}
	kmap_free(seen);
	return rc;
}

/* ---- sync ------------------------------------------------------------------- */

/* An event about a budget, from kube's "controllermanager" component. */
#define PDB_EVENT(c, pdb, type, reason, ...) \
	ctrl_event(c, pdb, "policy/v1", "PodDisruptionBudget", type, reason, COMPONENT, __VA_ARGS__)

/* The pods of the namespace the budget's selector matches (new array). */
static json_t *pods_of(struct ctrl *c, const json_t *pdb)
{
	struct sel_label *sel = NULL;
	if (sel_label_from_object(ctrl_path(pdb, "spec.selector"), &sel, NULL, 0) < 0)
		return json_array();
	json_t *out = ctrl_pods_selected(c, ctrl_ns(pdb), sel);
	sel_label_free(sel);
	return out;
}

/* getExpectedPodCount, with kube's events. 0 or -EINVAL with err. */
static int expected_count(struct ctrl *c, const json_t *pdb, const json_t *pods, int *expected,
			  int *desired, char *err, size_t len)
{
	const json_t *spec = ctrl_path(pdb, "spec");
	int scale = 0;
	bool unmanaged = false;
	int rc = 0;
	if (ctrl_pdb_needs_scale(spec))
		rc = expected_scale(c, pdb, pods, &scale, &unmanaged, err, len);
	if (rc == 0)
		rc = ctrl_pdb_expected(spec, (int)json_array_size(pods), scale, expected, desired,
				       err, len);
	if (rc < 0) {
		PDB_EVENT(c, pdb, "Warning", "CalculateExpectedPodCountFailed",
			  "Failed to calculate the number of expected pods: %s", err);
		return rc;
	}
	if (unmanaged) {
		char *sel = NULL;
		struct sel_label *s = NULL;
		if (sel_label_from_object(ctrl_path(pdb, "spec.selector"), &s, NULL, 0) == 0)
			sel = sel_label_string(s);
		sel_label_free(s);
		PDB_EVENT(c, pdb, "Warning", "UnmanagedPods",
			  "Pods selected by this PodDisruptionBudget (selector: %s) were found to "
			  "be unmanaged. As a result, the status of the PDB cannot be calculated "
			  "correctly, which may result in undefined behavior. To account for these "
			  "pods please set \".spec.minAvailable\" field of the PDB to an integer "
			  "value.",
			  sel ? sel : "");
		free(sel);
	}
	return 0;
}

/* Pods kept in disruptedPods too long: kube's NotDeleted event (whose
 * message names the namespace twice, as kube's does). */
static void report_not_deleted(struct ctrl *c, const json_t *pdb, const json_t *pods,
			       const json_t *old, const json_t *kept)
{
	size_t i;
	json_t *pod;
	json_array_foreach (pods, i, pod) {
		const char *name = ctrl_name(pod);
		if (!name || !json_object_get(old, name) || json_object_get(kept, name) ||
		    pod_deleting(pod))
			continue;
		ctrl_event(c, pod, "v1", "Pod", "Warning", "NotDeleted", COMPONENT,
			   "Pod was expected by PDB %s/%s to be deleted but it wasn't",
			   ctrl_ns(pdb), ctrl_ns(pdb));
	}
}

static int write_status(struct ctrl *c, json_t *pdb, json_t *status)
{
	return ctrl_write_status(c, "policy", "v1", "poddisruptionbudgets", pdb, status, MANAGER);
}

/* trySync: 0, or -EINVAL with err for failSafe, or a write's error. */
static int try_sync(struct ctrl *c, json_t *pdb, char *err, size_t len)
{
	json_t *pods = pods_of(c, pdb);
	if (json_array_size(pods) == 0)
		PDB_EVENT(c, pdb, "Normal", "NoPods", "No matching pods found");
	int expected = 0, desired = 0;
	int rc = expected_count(c, pdb, pods, &expected, &desired, err, len);
	if (rc < 0) {
		json_decref(pods);
		return rc;
	}
	time_t now = time(NULL), recheck = 0;
	json_t *old_dp = ctrl_path(pdb, "status.disruptedPods");
	json_t *dp = ctrl_pdb_disrupted(pods, old_dp, now, &recheck);
	report_not_deleted(c, pdb, pods, old_dp, dp);
	int healthy = ctrl_pdb_healthy(pods, dp, now);
	json_t *st =
	    ctrl_pdb_status(ctrl_path(pdb, "status"), ctrl_int(pdb, "metadata.generation", 0),
			    healthy, desired, expected, dp, now);
	rc = write_status(c, pdb, st);
	if (rc == 0 && recheck)
		ctrl_enqueue_after(c, "pdb", ctrl_ns(pdb), ctrl_name(pdb),
				   (double)(recheck - now) + 1);
	json_decref(st);
	json_decref(dp);
	json_decref(pods);
	return rc;
}

int ctrl_pdb_sync(struct ctrl *c, const char *ns, const char *name)
{
	json_t *pdb = ctrl_get(c, PDB_RES, ns, name);
	if (!pdb)
		return 0; /* deleted */
	char err[512] = "";
	int rc = try_sync(c, pdb, err, sizeof(err));
	if (rc == -EINVAL && err[0]) {
		kb_warn("ctrl", "poddisruptionbudget %s/%s: %s", ns, name, err);
		json_t *st = ctrl_pdb_fail_status(ctrl_path(pdb, "status"), err, time(NULL));
		int wrc = write_status(c, pdb, st);
		json_decref(st);
		rc = wrc < 0 ? wrc : -EINVAL; /* tried again with backoff */
	}
	json_decref(pdb);
	return rc;
}

/* ---- stale DisruptionTarget conditions -------------------------------------- */

double ctrl_pdb_stale_in(const json_t *pod, time_t now)
{
	json_t *cond = ctrl_get_condition(json_object_get(pod, "status"), "DisruptionTarget");
	const char *st = json_string_value(json_object_get(cond, "status"));
	if (!st || strcmp(st, "True") != 0 || pod_deleting(pod)) /* most pods: no condition */
		return -1;
	const char *reason = json_string_value(json_object_get(cond, "reason"));
	const char *phase = ctrl_pod_phase(pod);
	if ((reason && strcmp(reason, "TerminationByKubelet") == 0) ||
	    strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)
		return -1;
	time_t since = ctrl_time(json_string_value(json_object_get(cond, "lastTransitionTime")));
	double left = (double)(since + STALE_TIMEOUT - now);
	return left > 0 ? left : 0;
}

/* Stale DisruptionTarget=True: set to False once STALE_TIMEOUT passed. */
static int clear_stale(struct ctrl *c, json_t *pod)
{
	time_t now = time(NULL);
	double left = ctrl_pdb_stale_in(pod, now);
	if (left > 0)
		ctrl_enqueue_after(c, "pdbpod", ctrl_ns(pod), ctrl_name(pod), left);
	if (left != 0)
		return 0;
	json_t *st = json_deep_copy(json_object_get(pod, "status"));
	json_t *cond = ctrl_get_condition(st, "DisruptionTarget");
	char ts[40];
	kb_time_rfc3339(now, ts, sizeof(ts));
	json_object_set_new(cond, "status", json_string("False"));
	json_object_set_new(cond, "lastTransitionTime", json_string(ts));
	int rc = ctrl_write_status(c, "", "v1", "pods", pod, st, MANAGER);
	json_decref(st);
	return rc;
}

static bool selects(const json_t *pdb, const json_t *pod);

/* getPdbForPod's warning when a pod matches several budgets. */
static void warn_multiple(struct ctrl *c, const json_t *pod)
{
	json_t *pdbs = ctrl_list(c, PDB_RES, ctrl_ns(pod));
	const char *first = NULL;
	size_t i, n = 0;
	json_t *pdb;
	json_array_foreach (pdbs, i, pdb) {
		if (!selects(pdb, pod))
			continue;
		if (n++ == 0)
			first = ctrl_name(pdb);
	}
	if (n > 1)
		ctrl_event(c, pod, "v1", "Pod", "Warning", "MultiplePodDisruptionBudgets",
			   COMPONENT,
			   "Pod \"%s\"/\"%s\" matches multiple PodDisruptionBudgets.  Chose \"%s\" "
			   "arbitrarily.",
			   ctrl_ns(pod), ctrl_name(pod), first);
	json_decref(pdbs);
}

int ctrl_pdb_pod_sync(struct ctrl *c, const char *ns, const char *name)
{
	json_t *pod = ctrl_get(c, "/pods", ns, name);
	if (!pod)
		return 0;
	warn_multiple(c, pod);
	int rc = clear_stale(c, pod);
	json_decref(pod);
	return rc;
}

/* ---- queueing ---------------------------------------------------------------- */

static bool selects(const json_t *pdb, const json_t *pod)
{
	struct sel_label *sel = NULL;
	if (!pod || sel_label_from_object(ctrl_path(pdb, "spec.selector"), &sel, NULL, 0) < 0)
		return false;
	bool m = sel_label_match(sel, ctrl_path(pod, "metadata.labels"));
	sel_label_free(sel);
	return m;
}

void ctrl_pdb_pod_event(struct ctrl *c, const struct store_event *ev)
{
	json_t *pdbs = ctrl_list_kept(c, PDB_RES, ev->ns);
	size_t i, n = 0;
	json_t *pdb;
	json_array_foreach (pdbs, i, pdb) {
		bool now = selects(pdb, ev->obj);
		n += now;
		if (now || selects(pdb, ev->prev))
			ctrl_enqueue(c, "pdb", ev->ns, ctrl_name(pdb));
	}
	json_decref(pdbs);
	/* the pod's own key: its warning (writes wait for the sync) and its
	 * stale condition */
	if (ev->type != STORE_DELETED && (n > 1 || ctrl_pdb_stale_in(ev->obj, time(NULL)) >= 0))
		ctrl_enqueue(c, "pdbpod", ev->ns, ev->name);
}
