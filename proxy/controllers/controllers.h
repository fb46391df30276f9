/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Controllers of one tenant, with kube-controller-manager's semantics:
 * ReplicaSet, Deployment, Job, CronJob, StatefulSet, Endpoints,
 * EndpointSlice, HorizontalPodAutoscaler (hpa.c: its metrics reads are the
 * one asynchronous step, see there), the kube-apiserver-client CSR signer
 * and the CSR cleaner, and the garbage collector (ownerReferences with
 * Background, Foreground and Orphan propagation).
 *
 * DESIGN
 * Threading: everything runs on the API's libuv loop thread. One store
 * watch on every resource feeds a de-duplicated work queue of object keys
 * ("deploy/ns/name"); the watch callback only enqueues (writes made by a
 * sync re-enter it), an idle handle drains the queue a batch at a time, and
 * a 1 s timer releases delayed keys (minReadySeconds, deadlines, backoff,
 * cron schedules, TTLs). The store is read directly, so a sync always sees
 * the writes of the previous one: no expectations are needed.
 * Writes go through proxy/proxy.h's internal API (defaults, validation,
 * managed fields as "<kind>-controller").
 * Restart: ctrl_start lists every object, queues every workload and checks
 * every ownerReference, so controllers continue where they stopped; pods
 * are found by controller ownerReference (adopting orphans that match a
 * selector), ReplicaSets by pod-template hash and Jobs by scheduled time,
 * never duplicated.
 */
#ifndef KB_CONTROLLERS_H
#define KB_CONTROLLERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <uv.h>

#include "proxy/client.h"
#include "store/store.h"

typedef struct ctrl ctrl_t;

/* Starts every controller on `loop`; store and proxy are borrowed and must
 * outlive ctrl_stop. Returns 0 or a negative errno. Loop thread only. */
int ctrl_start(uv_loop_t *loop, store_t *st, proxy_t *px, ctrl_t **out);
/* Stops watching and closes the handles; memory is freed once the loop has
 * run the close callbacks. Call before store_close. NULL is fine. */
void ctrl_stop(ctrl_t *c);
/* kube-apiserver's --event-ttl: events are deleted this many seconds after
 * their last write (default 3600). */
void ctrl_set_event_ttl(ctrl_t *c, long seconds);
/* kube-controller-manager's --horizontal-pod-autoscaler-sync-period: each
 * HorizontalPodAutoscaler is reconciled this often (default 15 s). */
void ctrl_set_hpa_sync_period(ctrl_t *c, long seconds);

/* Signs CertificateSigningRequests of signerName
 * kubernetes.io/kube-apiserver-client with `ca` (lib/pki.h: kb_pki_signer
 * or kb_pki_ca_load), whose ownership passes to the controllers. Without
 * one, nothing is signed. */
struct kb_pki_ca;
void ctrl_set_signer(ctrl_t *c, struct kb_pki_ca *ca);

/* ---- pure pieces (any thread) ---------------------------------------------- */

/* The pod-template-hash of a Deployment's template (borrowed): FNV-32a over
 * its canonical JSON plus collisionCount, written with kube's "safe"
 * alphabet (no vowels) into buf. Stable across runs. */
void ctrl_template_hash(const json_t *tmpl, int64_t collision_count, char *buf, size_t len);

/* An IntOrString (borrowed: integer or "NN%") scaled against total as kube's
 * GetScaledValueFromIntOrPercent: percentages round up or down. NULL gives
 * 0. -EINVAL for a malformed value. */
int ctrl_scaled_value(const json_t *v, int total, bool round_up, int *out);

/* A Deployment's RollingUpdate fenceposts from its spec (borrowed): maxSurge
 * rounds up, maxUnavailable down, and both 0 makes maxUnavailable 1. */
int ctrl_rolling_fenceposts(const json_t *spec, int *max_surge, int *max_unavailable);

/* The first time strictly after `after` that matches the cron `schedule`
 * (5 fields, names, ranges, steps, @hourly/@daily/... and "@every <dur>"),
 * evaluated in time zone `tz` (NULL: UTC; "Europe/Paris"...). -EINVAL for a
 * bad schedule or zone, -ERANGE when nothing matches within 5 years. */
int ctrl_cron_next(const char *schedule, const char *tz, time_t after, time_t *out);

/* ---- PodDisruptionBudgets (disruption.c) -----------------------------------
 * Pure pieces of kube's disruption controller. Objects are borrowed;
 * returned json_t* are new references. */

/* Whether expectedPods comes from the pods' controllers' scales
 * (maxUnavailable, or a percentage minAvailable) rather than the pods. */
bool ctrl_pdb_needs_scale(const json_t *spec);
/* getExpectedPodCount's arithmetic over a budget's spec: npods matching
 * pods, scale the sum of their controllers' scales. 0, or -EINVAL with
 * kube's message in err (a string that is not a percentage). */
int ctrl_pdb_expected(const json_t *spec, int npods, int scale, int *expected, int *desired,
		      char *err, size_t len);
/* buildDisruptedPodMap: the entries of old (status.disruptedPods, may be
 * NULL) for pods listed and not being deleted, at most two minutes old;
 * *recheck: when the first kept one expires (0: none). */
json_t *ctrl_pdb_disrupted(const json_t *pods, const json_t *old, time_t now, time_t *recheck);
/* countHealthyPods: Ready, not being deleted, not disrupted. */
int ctrl_pdb_healthy(const json_t *pods, const json_t *disrupted, time_t now);
/* currentHealthy - desiredHealthy, 0 when negative or nothing is expected. */
int ctrl_pdb_allowed(int healthy, int desired, int expected);
/* updatePdbStatus's status over the old one (conditions kept, condition
 * DisruptionAllowed SufficientPods/InsufficientPods). */
json_t *ctrl_pdb_status(const json_t *old, json_int_t generation, int healthy, int desired,
			int expected, const json_t *disrupted, time_t now);
/* failSafe's status: the old one with disruptionsAllowed 0 and condition
 * DisruptionAllowed False, reason SyncFailed, the error as message. */
json_t *ctrl_pdb_fail_status(const json_t *old, const char *message, time_t now);

/* nonTerminatingPodHasStaleDisruptionCondition: for a pod (not being
 * deleted, not terminal) with DisruptionTarget=True not set by the kubelet,
 * the seconds left before the condition is stale (two minutes after its
 * transition; 0: stale now), else -1. */
double ctrl_pdb_stale_in(const json_t *pod, time_t now);

/* ---- Endpoints and EndpointSlices (endpoints.c, endpointslice.c) ----------
 * Pure pieces of kube's endpoints and endpointslice controllers. Objects
 * are borrowed; returned json_t* are new references. */

/* ShouldSetHostname: pod.spec.hostname (borrowed from pod) when the pod's
 * spec.subdomain is the service's name in the same namespace, else NULL. */
const char *ctrl_ep_hostname(const json_t *pod, const json_t *svc);
/* FindPort: the pod port a service port targets: a numeric targetPort as
 * is, a named one looked up by name and protocol in the containers' ports
 * (and sidecar init containers'). 0, or -ENOENT when the name is unknown. */
int ctrl_ep_find_port(const json_t *pod, const json_t *svc_port, int *out);
/* The Endpoints subsets of service svc over pods (an array of pods already
 * matching its selector): pods with an IP of the service's family, Ready
 * ones in addresses, others in notReadyAddresses (all ready, terminating
 * ones kept, with publishNotReadyAddresses), one subset entry per resolved
 * port, repacked (ctrl_ep_repack). */
json_t *ctrl_ep_subsets(const json_t *svc, const json_t *pods);
/* RepackSubsets: addresses (by IP and target uid) grouped by the set of
 * ports they offer, not-ready winning over ready, everything sorted. */
json_t *ctrl_ep_repack(const json_t *subsets);
/* The EndpointSlice endpoint of pod for svc in the IPv6 or IPv4 family
 * (NULL when the pod has no such IP): addresses, conditions {ready,
 * serving, terminating}, hostname, nodeName, targetRef. */
json_t *ctrl_eps_endpoint(const json_t *pod, const json_t *svc, bool v6);
/* The EndpointSlice ports of svc for pod (name, port, protocol,
 * appProtocol); service ports that do not resolve on the pod are left out. */
json_t *ctrl_eps_ports(const json_t *svc, const json_t *pod);

/* ---- CertificateSigningRequests (csr.c) ------------------------------------
 * Pure pieces of kube's kube-apiserver-client signer and csrcleaner. */

/* validAPIServerClientUsages: NULL when the usages (borrowed array) are
 * "client auth" with optional "digital signature" and "key encipherment";
 * else kube's message, written into buf. */
const char *ctrl_csr_client_usages(const json_t *usages, char *buf, size_t len);
/* The certificate's lifetime in seconds for spec.expirationSeconds
 * (borrowed, may be NULL): one year without it or above, at least 600. */
long ctrl_csr_duration(const json_t *expiration_seconds);
/* PermissiveSigningPolicy's window: notBefore now - 5 min, notAfter now +
 * ttl (minus 5 min when ttl >= 8 h), cut at the CA's end. 0, or
 * -EKEYEXPIRED when the CA has expired. */
int ctrl_csr_validity(time_t now, long ttl, time_t ca_not_after, time_t *not_before,
		      time_t *not_after);
/* The usages as OpenSSL keyUsage and extendedKeyUsage values
 * ("digitalSignature,keyEncipherment", "clientAuth"); "" when none. */
void ctrl_csr_usages(const json_t *usages, char *ku, size_t kulen, char *eku, size_t ekulen);
/* csrcleaner's decision for a request (borrowed) at `now`: true to delete
 * it now; else *next is when it becomes due (0: never). */
bool ctrl_csr_gc_due(const json_t *csr, time_t now, time_t *next);

/* ---- HorizontalPodAutoscalers (hpa_calc.c) -----------------------------------
 * Pure pieces of kube's podautoscaler: the replica calculator and the
 * normalization of a proposal by min/max, stabilization and behavior. */

#define HPA_TOLERANCE          0.1 /* --horizontal-pod-autoscaler-tolerance */
#define HPA_DOWNSCALE_WINDOW_S 300 /* --horizontal-pod-autoscaler-downscale-stabilization */

enum ctrl_hpa_group { HPA_POD_READY, HPA_POD_UNREADY, HPA_POD_MISSING, HPA_POD_IGNORED };
/* kube's groupPods for one pod (borrowed) of the target: its metric's
 * presence, timestamp and window; cpu applies the initialization rules. */
enum ctrl_hpa_group ctrl_hpa_group_pod(const json_t *pod, bool has_metric, time_t metric_ts,
				       long window_s, bool cpu, time_t now);

/* One pod of the target: its group, its request and usage (milli-units;
 * usage only for READY pods). */
struct ctrl_hpa_pod {
	enum ctrl_hpa_group group;
	int64_t request;
	int64_t usage;
};
struct ctrl_hpa_result {
	int replicas;    /* the proposal */
	int utilization; /* percent of the requests (utilization targets) */
	int64_t raw;     /* the ready pods' average usage, milli-units */
};
/* GetResourceReplicas: target utilization in percent. GetRawResourceReplicas:
 * target average value in milli-units. 0, or -errno with kube's message in
 * err ("did not receive metrics for targeted pods (pods might be unready)"). */
int ctrl_hpa_utilization_replicas(const struct ctrl_hpa_pod *pods, size_t n, int current,
				  int target, struct ctrl_hpa_result *out, char *err,
				  size_t errlen);
int ctrl_hpa_value_replicas(const struct ctrl_hpa_pod *pods, size_t n, int current, int64_t target,
			    struct ctrl_hpa_result *out, char *err, size_t errlen);

enum { HPA_SELECT_MAX, HPA_SELECT_MIN, HPA_SELECT_DISABLED };
struct ctrl_hpa_policy {
	bool percent; /* Percent, else Pods */
	int value, period;
};
struct ctrl_hpa_rules {
	int window; /* stabilizationWindowSeconds */
	int select;
	size_t npolicies;
	struct ctrl_hpa_policy policies[10];
};
/* HPAScalingRules (borrowed, may be NULL) with the controller's defaults:
 * window 0 up, 300 s down; selectPolicy Max. */
void ctrl_hpa_rules_parse(const json_t *rules, bool up, struct ctrl_hpa_rules *out);

/* What one autoscaler remembers between syncs: its recommendations and,
 * with a behavior, its scale events (times in ms, kb_now_ms). */
struct ctrl_hpa_rec {
	int replicas;
	int64_t at_ms;
};
struct ctrl_hpa_event {
	int change;
	int64_t at_ms;
};
struct ctrl_hpa_history {
	struct ctrl_hpa_rec *recs;
	size_t nrecs;
	struct ctrl_hpa_event *up, *down;
	size_t nup, ndown;
};
void ctrl_hpa_history_free(struct ctrl_hpa_history *h);
/* recordInitialRecommendation: the current size, when nothing is known. */
void ctrl_hpa_record_initial(struct ctrl_hpa_history *h, int current, int64_t now_ms);

struct ctrl_hpa_input {
	int current, desired, min, max;
	bool behavior; /* spec.behavior set: up and down apply */
	struct ctrl_hpa_rules up, down;
};
struct ctrl_hpa_verdict {
	int replicas;
	const char *able_reason, *able_message; /* AbleToScale True */
	bool limited;                           /* ScalingLimited */
	const char *limit_reason, *limit_message;
};
/* normalizeDesiredReplicas(WithBehaviors): records the recommendation and
 * decides the size with kube's condition reasons and messages (static). */
void ctrl_hpa_normalize(struct ctrl_hpa_history *h, const struct ctrl_hpa_input *in, int64_t now_ms,
			struct ctrl_hpa_verdict *out);
/* storeScaleEvent after a rescale from -> to. */
void ctrl_hpa_record_scale(struct ctrl_hpa_history *h, const struct ctrl_hpa_input *in, int from,
			   int to, int64_t now_ms);
/* The most replicas behavior's policies allow now (scale up), and the
 * fewest (scale down), from the replicas at the start of each policy's
 * period (the recent events of both directions undone). */
int ctrl_hpa_scale_up_limit(int current, const struct ctrl_hpa_history *h,
			    const struct ctrl_hpa_rules *r, int64_t now_ms);
int ctrl_hpa_scale_down_limit(int current, const struct ctrl_hpa_history *h,
			      const struct ctrl_hpa_rules *r, int64_t now_ms);

#endif
