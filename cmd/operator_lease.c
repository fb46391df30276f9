/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leader election for `kubicle operator` on a coordination.k8s.io/v1 Lease
 * (operator_impl.h), with the semantics of client-go's
 * tools/leaderelection (leaderelection.go, LeaderElector.tryAcquireOrRenew
 * and release; resourcelock/leaselock.go for the record's fields):
 *   - a candidate reads the Lease; when another holder's record is set, it
 *     waits until leaseDurationSeconds have passed since IT last saw the
 *     record change (observedTime, by its own clock: clock skew between
 *     machines does not matter, only their rates), then takes it;
 *   - taking a Lease from another holder (or an empty one) sets acquireTime
 *     and adds one to leaseTransitions; renewing sets renewTime only;
 *   - every write is an update carrying the resourceVersion read, so of two
 *     candidates racing only one wins (the other gets 409 Conflict);
 *   - the holder that cannot renew within the renew deadline stops leading
 *     (the loop, operator.c, then exits as kube-controller-manager does);
 *   - release on shutdown writes holderIdentity "" and
 *     leaseDurationSeconds 1, so a standby takes over at once.
 * The elector (op_elector_*) runs tryAcquireOrRenew on a thread of its own
 * with a host client of its own, every retry period, as client-go's
 * LeaderElector.renew runs it on its own goroutine and ticker: a reconcile
 * blocked on a slow host call (a slow admission webhook, an overloaded
 * API server) does not hold the renewal back. While leading, every renewal
 * call is bounded by what is left of the renew deadline (renew's
 * context.WithTimeout(ctx, RenewDeadline)); past it the process exits 1 at
 * once, from the elector's thread, as kube-controller-manager's
 * OnStoppedLeading does (klog.FlushAndExit): the work queue's thread,
 * wherever it is, writes nothing more.
 * As the package comment of client-go's leaderelection says, this is no
 * fencing: a holder that stalls past its lease may still write once.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/operator_impl.h"
#include "lib/log.h"
#include "lib/util.h"

int64_t op_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *spec_str(const json_t *lease, const char *k)
{
	const char *v = json_string_value(json_object_get(json_object_get(lease, "spec"), k));
	return v ? v : "";
}

/* MicroTime, as kube writes a Lease's times ("2006-01-02T15:04:05.000000Z"). */
static void micro_now(char *buf, size_t len)
{
	kb_time_rfc3339_micro(buf, len);
}

static void observe(struct op_lease *l, json_t *lease)
{
	const char *holder = spec_str(lease, "holderIdentity");
	const char *renew = spec_str(lease, "renewTime");
	if (strcmp(holder, l->observed_holder) != 0 || strcmp(renew, l->observed_renew) != 0 ||
	    !l->observed) {
		snprintf(l->observed_holder, sizeof(l->observed_holder), "%s", holder);
		snprintf(l->observed_renew, sizeof(l->observed_renew), "%s", renew);
		l->observed_at_ms = op_now_ms();
	}
	json_decref(l->observed);
	l->observed = json_incref(lease);
}

static void lease_path(const struct op_lease *l, char *buf, size_t len)
{
	snprintf(buf, len, "/apis/coordination.k8s.io/v1/namespaces/%s/leases/" OP_NAME, l->ns);
}

/* The Lease's spec for us holding it: a new reference. */
static json_t *our_spec(const struct op_lease *l, const json_t *old)
{
	char now[64];
	micro_now(now, sizeof(now));
	bool ours = old && strcmp(spec_str(old, "holderIdentity"), l->id) == 0;
	json_int_t transitions =
	    json_integer_value(json_object_get(json_object_get(old, "spec"), "leaseTransitions"));
	const char *acquired =
	    ours && *spec_str(old, "acquireTime") ? spec_str(old, "acquireTime") : now;
	if (old && !ours)
		transitions++;
	return json_pack("{s:s,s:i,s:s,s:s,s:I}", "holderIdentity", l->id, "leaseDurationSeconds",
			 l->duration_s, "acquireTime", acquired, "renewTime", now,
			 "leaseTransitions", transitions);
}

static int create_lease(hostapi_t *h, struct op_lease *l, char *err, size_t len)
{
	char coll[256];
	long st = 0;
	json_t *resp = NULL;
	snprintf(coll, sizeof(coll), "/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->ns);
	json_t *body = json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion",
				 "coordination.k8s.io/v1", "kind", "Lease", "metadata", "name",
				 OP_NAME, "namespace", l->ns, "spec", our_spec(l, NULL));
	int rc = hostapi_call(h, "POST", coll, body, &st, &resp);
	json_decref(body);
	if (rc == 0 && st == 201) {
		observe(l, resp);
		rc = 1;
	} else if (rc == 0 && st == 409) {
		rc = 0; /* another candidate created it first */
	} else if (rc == 0) {
		rc = kb_errf(err, len, -EIO, "creating Lease %s/%s: %ld %s", l->ns, OP_NAME, st,
			     hostapi_message(resp, st));
	}
	json_decref(resp);
	return rc;
}

int op_lease_try(hostapi_t *h, struct op_lease *l, char *err, size_t len)
{
	char path[256];
	long st = 0;
	json_t *lease = NULL, *resp = NULL;
	lease_path(l, path, sizeof(path));
	int rc = hostapi_call(h, "GET", path, NULL, &st, &lease);
	if (rc < 0)
		return kb_errf(err, len, rc, "reading Lease %s/%s: %s", l->ns, OP_NAME,
			       strerror(-rc));
	if (st == 404) {
		json_decref(lease);
		rc = create_lease(h, l, err, len);
		goto out;
	}
	if (st != 200) {
		rc = kb_errf(err, len, -EIO, "reading Lease %s/%s: %ld %s", l->ns, OP_NAME, st,
			     hostapi_message(lease, st));
		json_decref(lease);
		return rc;
	}
	observe(l, lease);
	const char *holder = spec_str(lease, "holderIdentity");
	json_int_t dur = json_integer_value(
	    json_object_get(json_object_get(lease, "spec"), "leaseDurationSeconds"));
	/* another holder whose record we saw change less than its duration ago */
	if (*holder && strcmp(holder, l->id) != 0 &&
	    l->observed_at_ms + (int64_t)dur * 1000 > op_now_ms()) {
		json_decref(lease);
		rc = 0;
		goto out;
	}
	json_t *body = json_deep_copy(lease);
	json_object_set_new(body, "spec", our_spec(l, lease));
	json_decref(lease);
	rc = hostapi_call(h, "PUT", path, body, &st, &resp); /* resourceVersion: ours */
	json_decref(body);
	if (rc == 0 && st == 200) {
		observe(l, resp);
		rc = 1;
	} else if (rc == 0 && st == 409) {
		rc = 0; /* another candidate wrote first */
	} else if (rc == 0) {
		rc = kb_errf(err, len, -EIO, "updating Lease %s/%s: %ld %s", l->ns, OP_NAME, st,
			     hostapi_message(resp, st));
	} else {
		kb_errf(err, len, rc, "updating Lease: %s", strerror(-rc));
	}
	json_decref(resp);
out:
	if (rc == 1)
		l->renewed_at_ms = op_now_ms();
	return rc;
}

void op_lease_release(hostapi_t *h, struct op_lease *l)
{
	char path[256], now[64];
	long st = 0;
	if (!l->leader || !l->observed)
		return;
	lease_path(l, path, sizeof(path));
	micro_now(now, sizeof(now));
	json_t *body = json_deep_copy(l->observed);
	json_t *spec = json_object_get(body, "spec");
	json_object_set_new(spec, "holderIdentity", json_string(""));
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
	json_object_set_new(spec, "renewTime", json_string(now));
	json_object_set_new(spec, "acquireTime", json_string(now));
	if (hostapi_call(h, "PUT", path, body, &st, NULL) == 0 && st == 200)
		kb_info("operator", "released Lease %s/%s", l->ns, OP_NAME);
	json_decref(body);
	l->leader = false;
}

void op_lease_free(struct op_lease *l)
{
	json_decref(l->observed);
	l->observed = NULL;
}

/* ---- the elector: its own thread --------------------------------------------------------- */

struct op_elector {
	uv_thread_t thread;
	uv_mutex_t mu;
	uv_cond_t cond;
	bool quit; /* under mu */
	atomic_bool leading;
	hostapi_t *h; /* the elector thread's own client */
	struct op_lease lease;
	int renew_deadline_s, retry_s;
	uv_async_t *wake; /* borrowed: sent when leading starts */
};

/* The renew deadline passed: nothing more may be written (client-go's
 * OnStoppedLeading; kube-controller-manager exits). */
static _Noreturn void lost(struct op_elector *e)
{
	atomic_store(&e->leading, false);
	kb_err("operator", "%s: leader election lost (no renewal for %d s): exiting", e->lease.id,
	       e->renew_deadline_s);
	_exit(1);
}

static void elect_once(struct op_elector *e)
{
	struct op_lease *l = &e->lease;
	char err[512] = "";
	int64_t deadline = l->renewed_at_ms + e->renew_deadline_s * 1000LL;
	int64_t left = deadline - op_now_ms();
	if (l->leader && left <= 0)
		lost(e);
	hostapi_set_deadline(e->h, l->leader ? (unsigned)left : 0);
	int rc = op_lease_try(e->h, l, err, sizeof(err));
	if (rc < 0)
		kb_warn("operator", "leader election: %s", err);
	if (rc == 1 && !l->leader) {
		l->leader = true;
		atomic_store(&e->leading, true);
		kb_info("operator", "%s: leading (Lease %s/%s)", l->id, l->ns, OP_NAME);
		uv_async_send(e->wake);
	} else if (rc != 1 && l->leader && op_now_ms() >= deadline) {
		lost(e);
	} else if (rc == 0 && !l->leader && l->observed_holder[0]) {
		kb_debug("operator", "standing by: %s leads", l->observed_holder);
	}
}

/* Every retry period (from the start of the last try), until quit. */
static void elector_main(void *arg)
{
	struct op_elector *e = arg;
	uv_mutex_lock(&e->mu);
	while (!e->quit) {
		uv_mutex_unlock(&e->mu);
		int64_t next = op_now_ms() + e->retry_s * 1000LL;
		elect_once(e);
		uv_mutex_lock(&e->mu);
		for (int64_t left; !e->quit && (left = next - op_now_ms()) > 0;)
			uv_cond_timedwait(&e->cond, &e->mu, (uint64_t)left * 1000000);
	}
	uv_mutex_unlock(&e->mu);
}

int op_elector_start(const struct op_elector_opts *o, uv_async_t *wake, struct op_elector **out)
{
	struct op_elector *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	/* a candidate's tries, too, end at most a renew deadline later */
	int rc = hostapi_open(o->kubeconfig, (unsigned)o->renew_deadline_s * 1000, &e->h);
	if (rc < 0) {
		free(e);
		return rc;
	}
	snprintf(e->lease.ns, sizeof(e->lease.ns), "%s", o->ns);
	snprintf(e->lease.id, sizeof(e->lease.id), "%s", o->id);
	e->lease.duration_s = o->lease_duration_s;
	e->renew_deadline_s = o->renew_deadline_s;
	e->retry_s = o->retry_s;
	e->wake = wake;
	atomic_init(&e->leading, false);
	if ((rc = uv_mutex_init(&e->mu)) < 0)
		goto fail_mutex;
	if ((rc = uv_cond_init(&e->cond)) < 0)
		goto fail_cond;
	if ((rc = uv_thread_create(&e->thread, elector_main, e)) < 0)
		goto fail_thread;
	*out = e;
	return 0;
fail_thread:
	uv_cond_destroy(&e->cond);
fail_cond:
	uv_mutex_destroy(&e->mu);
fail_mutex:
	hostapi_close(e->h);
	free(e);
	return rc;
}

bool op_elector_leading(struct op_elector *e)
{
	return atomic_load(&e->leading);
}

void op_elector_stop(struct op_elector *e, bool release)
{
	if (!e)
		return;
	uv_mutex_lock(&e->mu);
	e->quit = true;
	uv_cond_signal(&e->cond);
	uv_mutex_unlock(&e->mu);
	uv_thread_join(&e->thread);
	atomic_store(&e->leading, false);
	if (release) {
		hostapi_set_deadline(e->h, 0);
		op_lease_release(e->h, &e->lease);
	}
	hostapi_close(e->h);
	op_lease_free(&e->lease);
	uv_cond_destroy(&e->cond);
	uv_mutex_destroy(&e->mu);
	free(e);
}
