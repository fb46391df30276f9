/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of `kubicle operator` shared by its files:
 *   operator.c            command line, the loop: lease, watch, work queue
 *   operator_lease.c      leader election on a coordination.k8s.io/v1 Lease
 *   operator_reconcile.c  one Tenant into its host objects and status
 *   operator_manifest.c   the CRD (typed from operator_crd_gen.c), the
 *                         operator's RBAC and Deployment
 * Threading: the operator's loop thread, and the elector's own thread
 * (operator_lease.c: the Lease only, with its own host client); every
 * function here blocks on host calls (cmd/hostapi.h).
 */
#ifndef KB_CMD_OPERATOR_IMPL_H
#define KB_CMD_OPERATOR_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <uv.h>

#include "cmd/hostapi.h"

#define OP_TENANTS   "/apis/kubicle.dev/v1/tenants"
#define OP_FINALIZER "kubicle.dev/host-objects"
#define OP_COMPONENT "kubicle-operator"
#define OP_NAME      "kubicle-operator" /* Lease, ServiceAccount, Deployment */

struct op_config {
	const char *image; /* default tenant image; NULL: manifest's default */
	const char *id;    /* holder identity (Lease, Events' reportingInstance) */
	const char *ns;    /* its own namespace (the Lease's): no tenant's */
	int resync_s;      /* a Tenant is reconciled again at least this often */
};

/* ---- operator_lease.c ---------------------------------------------------------------- */

/* One candidate's view of the Lease (client-go tools/leaderelection's
 * LeaderElector: its observedRecord and observedTime). */
struct op_lease {
	char ns[64], id[128];
	int duration_s;            /* leaseDurationSeconds written */
	json_t *observed;          /* the Lease last read (ours), or NULL */
	char observed_holder[128]; /* its holderIdentity and renewTime ... */
	char observed_renew[64];
	int64_t observed_at_ms; /* ... and when either last changed, by our clock */
	int64_t renewed_at_ms;  /* our last successful acquire or renew, 0: none */
	bool leader;
};

/* One tryAcquireOrRenew: 1 when we hold the Lease now, 0 when another
 * holder's is still valid or we lost a race, a negative errno on a
 * transport or unexpected answer (err set). */
int op_lease_try(hostapi_t *h, struct op_lease *l, char *err, size_t len);
/* Gives the Lease up (holderIdentity "", leaseDurationSeconds 1) when we
 * hold it, as client-go's release does with ReleaseOnCancel. */
void op_lease_release(hostapi_t *h, struct op_lease *l);
void op_lease_free(struct op_lease *l);
int64_t op_now_ms(void);

/* The elector: op_lease_try every retry_s on a thread of its own (and a
 * host client of its own), independent of the caller's work; past the
 * renew deadline without a renewal it ends the process (exit code 1). */
struct op_elector_opts {
	const char *kubeconfig, *ns, *id; /* borrowed for the call */
	int lease_duration_s, renew_deadline_s, retry_s;
};
struct op_elector;
/* Starts it; `wake` (borrowed until op_elector_stop, a handle of the
 * caller's loop) is sent when it starts leading. 0 or a negative errno. */
int op_elector_start(const struct op_elector_opts *o, uv_async_t *wake, struct op_elector **out);
/* Whether it leads now: any thread. */
bool op_elector_leading(struct op_elector *e);
/* Stops its thread (waiting for a call in flight), releases the Lease when
 * `release` and it leads, and frees it. NULL is fine. */
void op_elector_stop(struct op_elector *e, bool release);

/* ---- operator_reconcile.c ------------------------------------------------------------ */

/* Brings Tenant `name` and its host objects to what its spec says.
 * *requeue_s: reconcile it again that soon (0: on the next change or
 * resync only). !full: a status reconcile (an event of its StatefulSet, a
 * TTL's requeue): when the Tenant's status says this generation's host
 * objects are in place and it is not paused, only its server's state and
 * its TTL are read. 0, or a negative errno when it
 * should be retried (logged, and recorded in its status and Events where
 * the host allows). */
int op_reconcile(hostapi_t *h, const struct op_config *c, const char *name, bool full,
		 int *requeue_s);

/* ---- operator_manifest.c ------------------------------------------------------------- */

/* The Tenant CRD as JSON: a new reference. */
json_t *op_crd(void);
/* Creates the CRD or brings an existing one to this version's, then looks
 * once whether Tenants are served: 0 when they are, -EAGAIN while not yet
 * (ask again later: it never waits), or a negative errno; err set. */
int op_install_crd(hostapi_t *h, char *err, size_t len);

#endif
