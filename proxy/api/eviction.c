/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Eviction API: POST /api/v1/namespaces/NS/pods/NAME/eviction with a
 * policy/v1 (or v1beta1) Eviction, as kube-apiserver's EvictionREST
 * (pkg/registry/core/pod/storage/eviction.go) serves it for kubectl drain
 * and cluster tools:
 *
 * - a pod that is Succeeded, Failed, Pending or already being deleted is
 *   deleted at once, without looking at budgets;
 * - otherwise the PodDisruptionBudgets of its namespace whose selector
 *   matches it are found: more than one is a 500; one whose
 *   disruptionsAllowed is 0 (or whose status lags its generation) a 429
 *   TooManyRequests with kube's DisruptionBudget cause; else the budget is
 *   decremented and the pod written into its status.disruptedPods (the
 *   disruption controller, proxy/controllers/disruption.c, drops the entry once
 *   the pod is gone or after two minutes);
 * - an unready pod is evicted without spending the budget when the budget's
 *   unhealthyPodEvictionPolicy is AlwaysAllow, or (IfHealthyBudget, the
 *   default) when the budget is currently met; the pod's resourceVersion is
 *   then a precondition of its delete, and a conflict a 429;
 * - the pod gets the condition DisruptionTarget=True (reason
 *   EvictionByEvictionAPI) before it is deleted with the Eviction's
 *   deleteOptions (grace period, preconditions, dryRun).
 *
 * The Eviction meets the admission webhooks (CREATE of pods/eviction, kind
 * policy/v1 Eviction; they see it but do not shape it) and the
 * ValidatingAdmissionPolicies. The budget's update is kube's loopback
 * client's (validated, admitted by the webhooks and policies on
 * poddisruptionbudgets/status as system:apiserver, managedFields of
 * kube-apiserver on the status subresource); while a webhook holds it the
 * request waits (budget_write), and is served again from the top once the
 * write is made (a budget changed meanwhile is read again, as kube retries
 * its conflicts) or refused (the webhook's words). Another eviction under
 * the same budget meanwhile gets kube's 429 "still being processed"; the
 * pod's
 * DisruptionTarget condition is the registry's own write, without
 * admission or managedFields, as kube's addConditionAndDeletePod updates
 * its store directly. Without webhooks everything runs on the loop thread
 * between two store reads, so kube's conflict retries reduce to one attempt.
 */
#include <errno.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "proxy/model/protobuf.h"
#include "proxy/api/api.h"
#include "proxy/model/selector.h"
#include "proxy/admission/vap.h"
#include "proxy/admission/webhook.h"

/* kube's MaxDisruptedPodSize: more unconfirmed evictions are refused. */
#define MAX_DISRUPTED_PODS 2000

#define MSG_VIOLATE "Cannot evict pod as it would violate the pod's disruption budget."

/* One eviction being served: the request's facts, borrowed or owned. */
struct evict {
	struct req *r;
	json_t *ev;   /* the Eviction (owned) */
	json_t *opts; /* its deleteOptions (borrowed from ev) or NULL */
	json_t *pod;  /* the pod (owned) */
	bool dry_run;
	bool rv_unset; /* the options carry no resourceVersion precondition */
};

static const struct proxy_resource *pdb_res(void)
{
	return resource_find("policy", "v1", "poddisruptionbudgets");
}

/* ---- the request --------------------------------------------------------- */

static int decode(struct req *r, json_t **out)
{
	const char *ct = kb_http_req_header(r->http, "content-type");
	*out = NULL;
	if (ct && strncmp(ct, "application/vnd.kubernetes.protobuf", 35) == 0) {
		char err[256] = "";
		if (pb_decode_k8s(r->http->body, r->http->body_len, "k8s.io.api.policy.v1.Eviction",
				  out, err, sizeof(err)) < 0) {
			reply_statusf(r, 400, "BadRequest", "unable to decode protobuf body: %s",
				      err);
			return -EINVAL;
		}
	} else {
		json_error_t je;
		*out = kb_json_loadb(r->http->body, r->http->body_len, 0, &je);
	}
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		reply_statusf(r, 400, "BadRequest",
			      "the object provided is unrecognized: not a JSON object");
		return -EINVAL;
	}
	return 0;
}

/* kube's AcceptsGroupVersion: policy/v1 and policy/v1beta1 Evictions. */
static int check_type(struct req *r, const json_t *ev)
{
	const char *av = json_string_value(json_object_get(ev, "apiVersion"));
	const char *kind = json_string_value(json_object_get(ev, "kind"));
	if (av && *av && strcmp(av, "policy/v1") != 0 && strcmp(av, "policy/v1beta1") != 0) {
		reply_statusf(r, 400, "BadRequest",
			      "the API version in the data (%s) does not match the expected API "
			      "version (policy/v1)",
			      av);
		return -EINVAL;
	}
	if (kind && *kind && strcmp(kind, "Eviction") != 0) {
		reply_statusf(r, 400, "BadRequest",
			      "%s in version \"v1\" cannot be handled as a Eviction: the kind in "
			      "the data does not match the expected kind",
			      kind);
		return -EINVAL;
	}
	const char *name = obj_str(ev, "metadata.name");
	if (!name || strcmp(name, r->name) != 0) {
		reply_status(r, 400, "BadRequest",
			     "name in URL does not match name in Eviction object", NULL);
		return -EINVAL;
	}
	const char *ns = obj_str(ev, "metadata.namespace");
	if (ns && *ns && strcmp(ns, r->ns) != 0) {
		reply_statusf(r, 400, "BadRequest",
			      "the namespace of the provided object does not match the namespace "
			      "sent on the request");
		return -EINVAL;
	}
	return 0;
}

static bool dry_run_all(const json_t *list)
{
	size_t i;
	json_t *v;
	json_array_foreach (list, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), "All") == 0)
			return true;
	return false;
}

/* kube's propagateDryRun: the query's dryRun goes into the deleteOptions;
 * both given and different is an error. */
static int propagate_dry_run(struct evict *e)
{
	struct req *r = e->r;
	json_t *dr = json_object_get(e->opts, "dryRun");
	if (json_array_size(dr) > 0 && r->q.dry_run && !dry_run_all(dr)) {
		reply_statusf(r, 500, "InternalError",
			      "Internal error occurred: Non-matching dry-run options in request "
			      "and content: [All] and %s",
			      json_string_value(json_array_get(dr, 0)) ?: "");
		return -EINVAL;
	}
	e->dry_run = r->q.dry_run || dry_run_all(dr);
	e->rv_unset = !obj_get(e->opts, "preconditions.resourceVersion");
	return 0;
}

/* The admission of the Eviction's CREATE: webhooks, then policies. */
static int admit(struct evict *e)
{
	int rc = webhook_create_unshaped(e->r, e->ev);
	if (rc)
		return rc > 0 ? -EINPROGRESS : rc;
	return vap_admit(e->r, "CREATE", e->ev, NULL);
}

/* ---- the pod --------------------------------------------------------------- */

static const char *phase_of(const json_t *pod)
{
	const char *p = obj_str(pod, "status.phase");
	return p ? p : "";
}

static bool is_phase(const json_t *pod, const char *phase)
{
	return strcmp(phase_of(pod), phase) == 0;
}

static bool deleting(const json_t *pod)
{
	return obj_str(pod, "metadata.deletionTimestamp") != NULL;
}

/* canIgnorePDB: it already disrupts nothing. */
static bool can_ignore_pdb(const json_t *pod)
{
	return is_phase(pod, "Succeeded") || is_phase(pod, "Failed") || is_phase(pod, "Pending") ||
	       deleting(pod);
}

/* shouldEnforceResourceVersion: a pod that could still become ready. */
static bool enforce_rv(const json_t *pod)
{
	return !is_phase(pod, "Succeeded") && !is_phase(pod, "Failed") && !deleting(pod);
}

static bool pod_ready(const json_t *pod)
{
	size_t i;
	json_t *c;
	json_array_foreach (obj_get(pod, "status.conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *s = json_string_value(json_object_get(c, "status"));
		if (t && strcmp(t, "Ready") == 0)
			return s && strcmp(s, "True") == 0;
	}
	return false;
}

/* UpdatePodCondition of DisruptionTarget=True: false when it is there. */
static bool add_disruption_condition(json_t *pod, time_t now)
{
	json_t *st = kb_json_object_at(pod, "status");
	json_t *conds = json_object_get(st, "conditions");
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(st, "conditions", conds);
	}
	json_t *c = NULL, *x;
	size_t i;
	json_array_foreach (conds, i, x) {
		const char *t = json_string_value(json_object_get(x, "type"));
		if (t && strcmp(t, "DisruptionTarget") == 0)
			c = x;
	}
	const char *old = json_string_value(json_object_get(c, "status"));
	const char *reason = json_string_value(json_object_get(c, "reason"));
	if (old && strcmp(old, "True") == 0 && reason &&
	    strcmp(reason, "EvictionByEvictionAPI") == 0)
		return false;
	char ts[40];
	kb_time_rfc3339(now, ts, sizeof(ts));
	if (!c) {
		c = json_object();
		json_array_append_new(conds, c);
	}
	if (!old || strcmp(old, "True") != 0)
		json_object_set_new(c, "lastTransitionTime", json_string(ts));
	json_object_set_new(c, "type", json_string("DisruptionTarget"));
	json_object_set_new(c, "status", json_string("True"));
	json_object_set_new(c, "lastProbeTime", json_null());
	json_object_set_new(c, "reason", json_string("EvictionByEvictionAPI"));
	json_object_set_new(c, "message", json_string("Eviction API: evicting"));
	return true;
}

/* The options' preconditions against the pod as it is (kube's getLatestPod):
 * a 409 when they no longer hold. */
static int check_latest(struct evict *e, const char *pre_rv)
{
	const char *uid = obj_str(e->opts, "preconditions.uid");
	const char *have_uid = obj_str(e->pod, "metadata.uid");
	const char *have_rv = obj_str(e->pod, "metadata.resourceVersion");
	const char *what = NULL, *want = NULL, *have = NULL;
	if (uid && *uid && have_uid && strcmp(uid, have_uid) != 0)
		what = "UID", want = uid, have = have_uid;
	else if (pre_rv && *pre_rv && have_rv && strcmp(pre_rv, have_rv) != 0)
		what = "ResourceVersion", want = pre_rv, have = have_rv;
	if (!what)
		return 0;
	reply_statusf(e->r, 409, "Conflict",
		      "Operation cannot be fulfilled on pods \"%s\": Precondition failed: %s in "
		      "precondition: %s, %s in object meta: %s",
		      e->r->name, what, want, what, have);
	return -ESTALE;
}

/* addConditionAndDeletePod: the DisruptionTarget condition (not in a dry
 * run), then the delete with the options; pre_rv (NULL: the options')
 * follows the pod through its condition write. 0 or -errno, answered. */
static int condition_and_delete(struct evict *e, const char *pre_rv)
{
	struct req *r = e->r;
	char rvbuf[32];
	const char *opt_rv = obj_str(e->opts, "preconditions.resourceVersion");
	const char *rv = pre_rv ? pre_rv : opt_rv;
	if (!e->dry_run) {
		if (check_latest(e, rv) < 0)
			return -ESTALE;
		if (add_disruption_condition(e->pod, r->now)) {
			int rc =
			    rstore_update(r->px, r->res, r->ns, r->name, e->pod, obj_rv(e->pod));
			if (rc < 0) {
				reply_errno(r, rc, r->name);
				return rc;
			}
			if (rv) { /* our own write bumped it */
				snprintf(rvbuf, sizeof(rvbuf), "%s",
					 obj_str(e->pod, "metadata.resourceVersion") ?: "");
				rv = rvbuf;
			}
		}
	}
	return handle_delete_evicted(r, e->opts, rv, e->dry_run, e->pod);
}

static void reply_success(struct req *r)
{
	json_t *ok = reply_status_object(201, NULL, NULL, NULL);
	json_object_del(ok, "message");
	reply_json(r, 201, ok);
	json_decref(ok);
}

/* ---- budgets --------------------------------------------------------------- */

/* The budgets of the pod's namespace whose selector matches it: a new
 * array (an empty or invalid selector matches nothing, as kube's). */
static json_t *budgets_of(struct req *r, const json_t *pod)
{
	json_t *out = json_array();
	const struct proxy_resource *res = pdb_res();
	struct store_list_req lr = {.res = res ? res->store_key : "policy/poddisruptionbudgets",
				    .ns = r->ns};
	struct store_list_result lres = {0};
	if (store_list(r->px->store, &lr, &lres) < 0)
		return out;
	free(lres.next);
	size_t i;
	json_t *pdb;
	json_array_foreach (lres.items, i, pdb) {
		struct sel_label *sel = NULL;
		if (sel_label_from_object(obj_get(pdb, "spec.selector"), &sel, NULL, 0) < 0)
			continue;
		if (!sel_label_empty(sel) && sel_label_match(sel, obj_get(pod, "metadata.labels")))
			json_array_append(out, pdb);
		sel_label_free(sel);
	}
	json_decref(lres.items);
	return out;
}

static void reply_too_many(struct req *r, const char *cause, int retry_after)
{
	json_t *d =
	    json_pack("{s:[{s:s,s:s}]}", "causes", "reason", "DisruptionBudget", "message", cause);
	if (retry_after > 0)
		json_object_set_new(d, "retryAfterSeconds", json_integer(retry_after));
	reply_status(r, 429, "TooManyRequests", MSG_VIOLATE, d);
}

/* createTooManyRequestsError: the budget's status is behind. */
static void reply_processing(struct req *r, const char *pdb_name)
{
	char cause[512];
	snprintf(cause, sizeof(cause),
		 "The disruption budget %s is still being processed by the server.", pdb_name);
	reply_too_many(r, cause, 10);
}

static void reply_pdb_forbidden(struct req *r, const char *name, const char *why)
{
	char msg[1024];
	snprintf(msg, sizeof(msg), "poddisruptionbudget.policy \"%s\" is forbidden: %s", name, why);
	reply_status(r, 403, "Forbidden", msg,
		     json_pack("{s:s,s:s,s:s}", "name", name, "group", "policy", "kind",
			       "poddisruptionbudget"));
}

/* UpdateDisruptionAllowedCondition after a decrement to 0. */
static void set_insufficient(json_t *status, time_t now)
{
	json_t *conds = json_object_get(status, "conditions");
	json_t *c = NULL, *x;
	size_t i;
	json_array_foreach (conds, i, x) {
		const char *t = json_string_value(json_object_get(x, "type"));
		if (t && strcmp(t, "DisruptionAllowed") == 0)
			c = x;
	}
	if (!c) {
		if (!json_is_array(conds)) {
			conds = json_array();
			json_object_set_new(status, "conditions", conds);
		}
		c = json_object();
		json_array_append_new(conds, c);
		json_object_set_new(c, "message", json_string(""));
	}
	const char *old = json_string_value(json_object_get(c, "status"));
	if (!old || strcmp(old, "False") != 0) {
		char ts[40];
		kb_time_rfc3339(now, ts, sizeof(ts));
		json_object_set_new(c, "lastTransitionTime", json_string(ts));
	}
	json_object_set_new(c, "type", json_string("DisruptionAllowed"));
	json_object_set_new(c, "status", json_string("False"));
	json_object_set_new(c, "reason", json_string("InsufficientPods"));
	json_object_set_new(
	    c, "observedGeneration",
	    json_integer(json_integer_value(json_object_get(status, "observedGeneration"))));
}

/* ---- the budget's write, through the webhooks -------------------------------- */

/* kube's EvictionsRetry: the budget's update is tried again on conflicts
 * (retry.RetryOnConflict, 20 steps), each time from a fresh read. */
#define BUDGET_TRIES 20

/* The budget's write on its way through the webhooks, kept on the request
 * across its passes (the eviction is served again from the top once the
 * write is made or refused: handle_resource through r->resume). */
struct budget_wait {
	struct req_ext ext;
	struct req *r;
	bool parked; /* r waits (r->async): resume it when done */
	bool done;   /* the write's outcome is in rc and message */
	int rc, tries;
	char *message;
};

static void budget_wait_free(struct req_ext *x)
{
	struct budget_wait *bw = kb_container_of(x, struct budget_wait, ext);
	api_internal_forget(bw->r->px, bw);
	free(bw->message);
	free(bw);
}

static struct budget_wait *budget_wait_of(struct req *r, bool make)
{
	struct req_ext *x = req_ext_find(r, budget_wait_free);
	if (x || !make)
		return x ? kb_container_of(x, struct budget_wait, ext) : NULL;
	struct budget_wait *bw = calloc(1, sizeof(*bw));
	if (!bw)
		return NULL;
	bw->ext.free = budget_wait_free;
	bw->r = r;
	req_ext_add(r, &bw->ext);
	return bw;
}

static void on_budget_abort(kb_http_req_t *http, void *arg)
{
	(void)http;
	struct budget_wait *bw = arg;
	struct req *r = bw->r;
	r->http = NULL;
	req_free(r); /* forgets bw's write (budget_wait_free): it goes on without us */
}

/* The write is made or refused: the eviction is served again. */
static void on_budget_written(void *arg, int rc, const char *message)
{
	struct budget_wait *bw = arg;
	bw->done = true;
	bw->rc = rc;
	free(bw->message);
	bw->message = message ? strdup(message) : NULL;
	if (!bw->parked)
		return; /* within api_internal_update_status_admitted: budget_write sees it */
	bw->parked = false;
	req_resume(bw->r);
}

/* The outcome of this request's budget write: 0 made (the eviction goes
 * on), 2 to try again from a fresh read (the budget changed meanwhile,
 * kube's conflict), or -errno answered
 * (a webhook's refusal in its words, 400 as kube's ToStatusErr gives a
 * refusal without a code). */
static int budget_outcome(struct req *r, struct budget_wait *bw, const char *name)
{
	bw->done = false;
	if (bw->rc == 0)
		return 0;
	if (bw->rc == -ESTALE && ++bw->tries < BUDGET_TRIES)
		return 2;
	if (bw->rc == -EACCES)
		reply_status(r, 400, NULL,
			     bw->message ? bw->message : "admission webhook denied the request",
			     NULL);
	else
		reply_errno(r, bw->rc, name);
	return bw->rc;
}

/* Writes the spent budget (pdb, borrowed and modified); 0 when written, 1
 * when the request is parked until its webhooks answer, or -errno
 * answered. */
static int budget_write(struct evict *e, json_t *pdb)
{
	struct req *r = e->r;
	const char *name = obj_str(pdb, "metadata.name");
	const struct proxy_resource *res = pdb_res();
	struct budget_wait *bw = budget_wait_of(r, true);
	if (!res || !bw) {
		reply_errno(r, !res ? -ENOENT : -ENOMEM, name);
		return -ENOMEM;
	}
	int rc = api_internal_update_status_admitted(r->px, res, pdb, "kube-apiserver",
						     on_budget_written, bw);
	if (rc == -EBUSY) {
		/* another eviction's write of this budget is in its webhooks:
		 * kube's would conflict with it and read the budget again; here
		 * the client is asked to come back, as for a budget being
		 * processed */
		reply_processing(r, name);
		return -EAGAIN;
	}
	if (rc == -EINPROGRESS && !bw->done) {
		bw->parked = true;
		r->async = true;
		kb_http_req_on_abort(r->http, on_budget_abort, bw);
		return 1;
	}
	if (rc == -EINPROGRESS) { /* the webhooks answered at once */
		int out = budget_outcome(r, bw, name);
		if (out == 2)
			reply_errno(r, -ESTALE, name);
		return out == 2 ? -ESTALE : out;
	}
	if (rc < 0)
		reply_errno(r, rc, name);
	return rc;
}

/* checkAndDecrement: 0 when the budget allowed this eviction (and, unless
 * a dry run, recorded it), or -errno once answered. */
static int check_and_decrement(struct evict *e, json_t *pdb)
{
	struct req *r = e->r;
	const char *name = obj_str(pdb, "metadata.name");
	json_t *st = kb_json_object_at(pdb, "status");
	json_int_t gen = json_integer_value(obj_get(pdb, "metadata.generation"));
	json_int_t observed = json_integer_value(json_object_get(st, "observedGeneration"));
	json_int_t allowed = json_integer_value(json_object_get(st, "disruptionsAllowed"));
	json_t *dp = json_object_get(st, "disruptedPods");
	struct budget_wait *bw = budget_wait_of(r, false);
	if (bw && bw->done) { /* served again: this request's write is made or refused */
		int out = budget_outcome(r, bw, name);
		if (out != 2)
			return out;
	}
	if (observed < gen) {
		reply_processing(r, name);
		return -EAGAIN;
	}
	if (allowed < 0) {
		reply_pdb_forbidden(r, name, "pdb disruptions allowed is negative");
		return -EACCES;
	}
	if (json_object_size(dp) > MAX_DISRUPTED_PODS) {
		reply_pdb_forbidden(r, name,
				    "DisruptedPods map too big - too many evictions not confirmed "
				    "by PDB controller");
		return -EACCES;
	}
	if (allowed == 0) {
		char cause[512];
		snprintf(cause, sizeof(cause),
			 "The disruption budget %s needs %lld healthy pods and has %lld currently",
			 name, (long long)json_integer_value(json_object_get(st, "desiredHealthy")),
			 (long long)json_integer_value(json_object_get(st, "currentHealthy")));
		reply_too_many(r, cause, 0);
		return -EAGAIN;
	}
	json_object_set_new(st, "disruptionsAllowed", json_integer(allowed - 1));
	if (allowed - 1 == 0)
		set_insufficient(st, r->now);
	if (e->dry_run)
		return 0;
	if (!json_is_object(dp)) {
		dp = json_object();
		json_object_set_new(st, "disruptedPods", dp);
	}
	char ts[40];
	kb_time_rfc3339(r->now, ts, sizeof(ts));
	json_object_set_new(dp, r->name, json_string(ts));
	/* kube's checkAndDecrement writes the budget through its loopback
	 * client (podDisruptionBudgetClient.UpdateStatus): validated, admitted
	 * (webhooks and policies on poddisruptionbudgets/status, as
	 * system:apiserver) and recorded in managedFields as kube-apiserver's;
	 * the eviction waits for it (budget_write) */
	return budget_write(e, pdb);
}

/* Whether an unready pod may go without spending the budget. */
static bool unready_may_go(const json_t *pdb)
{
	const char *policy = obj_str(pdb, "spec.unhealthyPodEvictionPolicy");
	if (policy && strcmp(policy, "AlwaysAllow") == 0)
		return true;
	json_int_t cur = json_integer_value(obj_get(pdb, "status.currentHealthy"));
	json_int_t want = json_integer_value(obj_get(pdb, "status.desiredHealthy"));
	return cur >= want && want > 0;
}

/* A pod under budgets: 0 to delete it (*pin_rv: with its resourceVersion
 * as a precondition), 1 answered without a delete, or -errno answered. */
static int through_budgets(struct evict *e, bool *pin_rv)
{
	struct req *r = e->r;
	json_t *pdbs = budgets_of(r, e->pod);
	int rc = 0;
	*pin_rv = false;
	if (json_array_size(pdbs) > 1) {
		reply_status(r, 500, NULL,
			     "This pod has more than one PodDisruptionBudget, which the eviction "
			     "subresource does not support.",
			     NULL);
		rc = 1;
	} else if (json_array_size(pdbs) == 1) {
		json_t *pdb = json_array_get(pdbs, 0);
		if (!pod_ready(e->pod) && unready_may_go(pdb))
			*pin_rv = true;
		else
			rc = check_and_decrement(e, pdb);
	}
	json_decref(pdbs);
	return rc;
}

/* ---- the handler ------------------------------------------------------------ */

static int load(struct evict *e)
{
	struct req *r = e->r;
	if (decode(r, &e->ev) < 0 || check_type(r, e->ev) < 0)
		return -EINVAL;
	e->opts = json_object_get(e->ev, "deleteOptions");
	if (!json_is_object(e->opts))
		e->opts = NULL;
	if (propagate_dry_run(e) < 0)
		return -EINVAL;
	int rc = admit(e);
	if (rc < 0)
		return rc;
	rc = rstore_get(r->px, r->res, r->ns, r->name, &e->pod);
	if (rc < 0)
		reply_errno(r, rc, r->name);
	return rc;
}

/* A pod that disrupts nothing: deleted at once, pinned to the version
 * read unless it is terminal or going anyway. */
static int evict_ignoring_pdb(struct evict *e)
{
	char rv[32] = "";
	if (enforce_rv(e->pod) && e->rv_unset)
		snprintf(rv, sizeof(rv), "%s", obj_str(e->pod, "metadata.resourceVersion") ?: "");
	return condition_and_delete(e, rv[0] ? rv : NULL);
}

static void evict_run(struct evict *e)
{
	struct req *r = e->r;
	if (can_ignore_pdb(e->pod)) {
		if (evict_ignoring_pdb(e) == 0)
			reply_success(r);
		return;
	}
	bool pin = false;
	if (through_budgets(e, &pin) != 0)
		return;
	char rv[32] = "";
	if (pin && e->rv_unset)
		snprintf(rv, sizeof(rv), "%s", obj_str(e->pod, "metadata.resourceVersion") ?: "");
	if (condition_and_delete(e, rv[0] ? rv : NULL) == 0)
		reply_success(r);
}

void eviction_handle(struct req *r)
{
	if (strcmp(r->http->method, "POST") != 0) {
		reply_statusf(r, 405, "MethodNotAllowed",
			      "the server does not allow this method on the requested resource");
		return;
	}
	struct evict e = {.r = r};
	if (load(&e) == 0)
		evict_run(&e);
	json_decref(e.pod);
	json_decref(e.ev);
}
