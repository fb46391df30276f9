/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One Tenant's reconcile (operator_impl.h): level-triggered, from what the
 * host API holds now and nothing else, so that a restart (or a kill -9 in
 * the middle) picks up where it stopped.
 *
 * DESIGN
 * Order, each step idempotent:
 *   1. deleting (metadata.deletionTimestamp): every host object of the
 *      tenant goes (cmd/hostsetup.h host_teardown, what `kubicle delete`
 *      runs, plus the server's StatefulSet and pods), then our finalizer;
 *   2. the spec is checked (cmd/manifest.h manifest_check: the words of
 *      `kubicle manifest`); an invalid one is a Failed phase and a Warning;
 *   3. the finalizer is added before any host object exists;
 *   4. spec.ttl past creationTimestamp: the Tenant is deleted (then 1);
 *   5. host_setup (what `kubicle create` makes: namespace, queue, syncer
 *      identity and RBAC, host limits), refused when another tenant uses
 *      the host namespace;
 *   6. the PKI Secret NAME-pki is made once (its CA signs everything after:
 *      never regenerated while it exists), the admin kubeconfig Secret
 *      NAME-kubeconfig from it, then manifest's Service and StatefulSet
 *      (replicas 0 when paused; a changed image changes the pod template,
 *      so the StatefulSet controller rolls the pod);
 *   7. paused: what `kubicle stop` removes goes (cmd/hostsetup.h
 *      host_remove_pods: the tenant's pods, their gangs' PodGroups, the
 *      syncer's ConfigMaps, Secrets and Services), the claims stay; the
 *      server's own Secrets and Service are labelled
 *      kubicle.dev/control-plane (cmd/manifest.c) and stay too;
 *   8. status (phase, endpoint, conditions Ready and HostReady with
 *      reasons, observedGeneration) is written when it changed; a
 *      condition that changes makes an Event.
 * Objects are applied by create, or by a merge patch of their labels and
 * spec when the live object is not already a superset of what we want;
 * an existing object without the tenant's label is never touched (it is
 * someone else's: HostReady False, reason HostObjectConflict).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/home.h"
#include "cmd/hostquota.h"
#include "cmd/hostsetup.h"
#include "cmd/manifest.h"
#include "cmd/users.h"
#include "cmd/operator_impl.h"
#include "cmd/version.h"
#include "lib/log.h"
#include "lib/util.h"

#define LABEL "kubicle.dev/tenant"

/* What one reconcile learnt, for the status. */
struct rec {
	const char *name;
	json_t *tenant;  /* the live Tenant (owned) */
	struct tenant t; /* the spec in hostsetup's terms */
	struct manifest_spec ms;
	const char *egress[TENANT_EGRESS_MAX];
	char image[512];
	char err[2048];
	/* status inputs */
	const char *phase;
	const char *host_reason; /* HostReady False reason, NULL: True */
	const char *ready_reason;
	char ready_msg[256];
	time_t expires;
};

static const char *sget(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static json_t *meta_of(const json_t *o)
{
	return json_object_get(o, "metadata");
}

static bool labelled_ours(const json_t *obj, const char *tenant)
{
	const char *v = sget(json_object_get(meta_of(obj), "labels"), LABEL);
	return v && strcmp(v, tenant) == 0;
}

/* GET path: the status code (200, 404, ...) with *out the body, or a
 * negative errno. */
static long get(hostapi_t *h, const char *path, json_t **out)
{
	long st = 0;
	*out = NULL;
	int rc = hostapi_call(h, "GET", path, NULL, &st, out);
	return rc < 0 ? rc : st;
}

/* ---- the spec --------------------------------------------------------------------------- */

static int copy_str(char *dst, size_t len, const char *src, const char *what, char *err,
		    size_t elen)
{
	if (!src)
		src = "";
	if (strlen(src) >= len)
		return kb_errf(err, elen, -EINVAL, "spec.%s: longer than %zu", what, len - 1);
	snprintf(dst, len, "%s", src);
	return 0;
}

/* The host's own namespaces, where no tenant's pods and RBAC may go: a
 * Tenant's author would otherwise have the operator (whose rights span
 * every namespace) write Roles and run pods next to the control plane's. */
static bool reserved_namespace(const char *ns, const char *own)
{
	return strncmp(ns, "kube-", 5) == 0 || strcmp(ns, "default") == 0 ||
	       (own && strcmp(ns, own) == 0);
}

/* The Tenant's spec into r->t (hostsetup's terms) and r->ms (manifest's). */
static int read_spec(struct rec *r, const struct op_config *c)
{
	const json_t *spec = json_object_get(r->tenant, "spec");
	const char *why = home_check_name(r->name);
	struct tenant *t = &r->t;
	char *err = r->err;
	size_t elen = sizeof(r->err);
	int rc = 0;
	if (why)
		return kb_errf(err, elen, -EINVAL, "invalid name \"%s\": %s", r->name, why);
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", r->name);
	if (sget(spec, "hostNamespace") && *sget(spec, "hostNamespace"))
		rc = copy_str(t->host_namespace, sizeof(t->host_namespace),
			      sget(spec, "hostNamespace"), "hostNamespace", err, elen);
	else
		snprintf(t->host_namespace, sizeof(t->host_namespace), "kubicle-%s", r->name);
	rc =
	    rc ? rc : copy_str(t->queue, sizeof(t->queue), sget(spec, "queue"), "queue", err, elen);
	rc = rc ? rc
		: copy_str(t->scheduler, sizeof(t->scheduler),
			   sget(spec, "scheduler") ? sget(spec, "scheduler") : "kai", "scheduler",
			   err, elen);
	rc = rc ? rc
		: copy_str(t->policy, sizeof(t->policy), sget(spec, "policy"), "policy", err, elen);
	rc =
	    rc ? rc : copy_str(t->floor, sizeof(t->floor), sget(spec, "floor"), "floor", err, elen);
	if (rc)
		return rc;
	json_t *g = json_object_get(spec, "gpus");
	t->gpus = json_is_integer(g) ? (long)json_integer_value(g) : -1;
	if (t->gpus < -1)
		return kb_errf(err, elen, -EINVAL, "spec.gpus: -1 (unlimited) or more");
	json_t *lim = json_object_get(spec, "hostLimits");
	if (json_is_object(lim)) {
		char *text = json_dumps(lim, JSON_COMPACT);
		rc = text ? copy_str(t->host_limits, sizeof(t->host_limits), text, "hostLimits",
				     err, elen)
			  : -ENOMEM;
		free(text);
		if (rc)
			return rc;
	}
	size_t i, n = 0;
	json_t *e;
	json_array_foreach (json_object_get(spec, "egressAllow"), i, e) {
		if (!json_is_string(e) || n == TENANT_EGRESS_MAX)
			return kb_errf(err, elen, -EINVAL, "spec.egressAllow: at most %d CIDRs",
				       TENANT_EGRESS_MAX);
		r->egress[n++] = json_string_value(e);
		size_t used = strlen(t->egress_allow);
		snprintf(t->egress_allow + used, sizeof(t->egress_allow) - used, "%s%s",
			 used ? "," : "", json_string_value(e));
	}
	t->stopped = json_is_true(json_object_get(spec, "paused"));
	const char *img = sget(spec, "image");
	if (img && *img)
		snprintf(r->image, sizeof(r->image), "%s", img);
	else if (c->image)
		snprintf(r->image, sizeof(r->image), "%s", c->image);
	else
		snprintf(r->image, sizeof(r->image), "ghcr.io/kubicle/kubicle:%s", KUBICLE_VERSION);
	r->ms = (struct manifest_spec){.name = t->name,
				       .ns = t->host_namespace,
				       .queue = t->queue,
				       .scheduler = t->scheduler,
				       .policy = t->policy[0] ? t->policy : NULL,
				       .image = r->image,
				       .storage = sget(spec, "storage"),
				       .storage_class = sget(spec, "storageClass"),
				       .floor = t->floor[0] ? t->floor : NULL,
				       .gpus = t->gpus,
				       .egress = r->egress,
				       .negress = n};
	if ((rc = manifest_check(&r->ms, err, elen)) < 0)
		return rc;
	if (reserved_namespace(t->host_namespace, c->ns))
		return kb_errf(err, elen, -EINVAL,
			       "spec.hostNamespace %s: a namespace of the host's own (kube-*, "
			       "default, the operator's), never a tenant's",
			       t->host_namespace);
	const char *ttl = sget(spec, "ttl");
	if (ttl && *ttl) {
		long s = users_parse_duration(ttl); /* `kubicle create --ttl`'s words */
		time_t created = 0;
		if (s < 0)
			return kb_errf(err, elen, -EINVAL, "spec.ttl: a duration like 30m, 2h, 7d");
		kb_time_parse(sget(meta_of(r->tenant), "creationTimestamp"), &created);
		r->expires = created + s;
	}
	return 0;
}

/* ---- Events (client-go tools/record, event.go makeEvent) -------------------------------- */

/* A core/v1 Event about the Tenant; cluster-scoped objects' Events live in
 * the "default" namespace, as client-go's recorder puts them. Best effort. */
static void event(hostapi_t *h, const struct op_config *c, const json_t *tenant, const char *type,
		  const char *reason, const char *msg)
{
	char now[64], name[128];
	long st = 0;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	kb_time_rfc3339(ts.tv_sec, now, sizeof(now));
	const json_t *m = meta_of(tenant);
	snprintf(name, sizeof(name), "%s.%llx", sget(m, "name"),
		 (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	json_t *ev = json_pack(
	    "{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:{s:s},s:s,s:s,s:i,s:s,"
	    "s:s}",
	    "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace", "default",
	    "involvedObject", "apiVersion", "kubicle.dev/v1", "kind", "Tenant", "name",
	    sget(m, "name"), "uid", sget(m, "uid") ? sget(m, "uid") : "", "resourceVersion",
	    sget(m, "resourceVersion") ? sget(m, "resourceVersion") : "", "type", type, "reason",
	    reason, "message", msg, "source", "component", OP_COMPONENT, "firstTimestamp", now,
	    "lastTimestamp", now, "count", 1, "reportingComponent", OP_COMPONENT,
	    "reportingInstance", c->id);
	if (ev &&
	    hostapi_call(h, "POST", "/api/v1/namespaces/default/events", ev, &st, NULL) == 0 &&
	    st != 201)
		kb_warn("operator", "event %s for tenant %s: host answered %ld", reason,
			sget(m, "name"), st);
	json_decref(ev);
}

/* ---- applying objects ------------------------------------------------------------------- */

/* Whether every field of want is in have with the same value (arrays:
 * the same length, each element a subset): what the host added (defaults,
 * a Service's clusterIP) does not count as a difference. */
static bool subset(const json_t *want, const json_t *have)
{
	if (json_is_object(want)) {
		const char *k;
		json_t *v;
		if (!json_is_object(have))
			return false;
		json_object_foreach ((json_t *)want, k, v) {
			if (!subset(v, json_object_get(have, k)))
				return false;
		}
		return true;
	}
	if (json_is_array(want)) {
		if (!json_is_array(have) || json_array_size(want) != json_array_size(have))
			return false;
		for (size_t i = 0; i < json_array_size(want); i++)
			if (!subset(json_array_get(want, i), json_array_get(have, i)))
				return false;
		return true;
	}
	return have && json_equal(want, have);
}

/* Collection path of a namespaced object of manifest's kinds. */
static int collection(const json_t *obj, char *buf, size_t len)
{
	const char *kind = sget(obj, "kind"), *ns = sget(meta_of(obj), "namespace");
	const char *plural = NULL, *api = "/api/v1";
	if (strcmp(kind, "Secret") == 0)
		plural = "secrets";
	else if (strcmp(kind, "Service") == 0)
		plural = "services";
	else if (strcmp(kind, "ConfigMap") == 0)
		plural = "configmaps";
	else if (strcmp(kind, "StatefulSet") == 0)
		plural = "statefulsets", api = "/apis/apps/v1";
	if (!plural || !ns)
		return -EINVAL;
	snprintf(buf, len, "%s/namespaces/%s/%s", api, ns, plural);
	return 0;
}

/* Creates obj (borrowed), or brings the live one's labels and `field`
 * (spec, or data for a Secret: NULL, never updated) to obj's. */
static int apply_at(hostapi_t *h, struct rec *r, const char *coll, const json_t *obj,
		    const char *field)
{
	char path[1024];
	const char *name = sget(meta_of(obj), "name");
	json_t *live = NULL, *resp = NULL;
	long st;
	int rc = 0;
	snprintf(path, sizeof(path), "%s/%s", coll, name);
	st = get(h, path, &live);
	if (st == 404) {
		rc = hostapi_call(h, "POST", coll, obj, &st, &resp);
		if (rc == 0 && st != 201 && st != 200)
			rc = kb_errf(r->err, sizeof(r->err), -EIO, "creating %s %s/%s: %ld %s",
				     sget(obj, "kind"), r->t.host_namespace, name, st,
				     hostapi_message(resp, st));
		goto out;
	}
	if (st != 200) {
		rc = kb_errf(r->err, sizeof(r->err), st < 0 ? (int)st : -EIO, "reading %s: %s",
			     path, st < 0 ? strerror((int)-st) : hostapi_message(live, st));
		goto out;
	}
	if (!labelled_ours(live, r->name)) {
		r->host_reason = "HostObjectConflict";
		rc = kb_errf(r->err, sizeof(r->err), -EEXIST,
			     "%s %s/%s exists without label %s=%s: not ours, left alone",
			     sget(obj, "kind"), r->t.host_namespace, name, LABEL, r->name);
		goto out;
	}
	const json_t *want_labels = json_object_get(meta_of(obj), "labels");
	if (subset(want_labels, json_object_get(meta_of(live), "labels")) &&
	    (!field || subset(json_object_get(obj, field), json_object_get(live, field))))
		goto out;
	json_t *patch = json_pack("{s:{s:O}}", "metadata", "labels", want_labels);
	if (field)
		json_object_set(patch, field, json_object_get(obj, field));
	rc = hostapi_call(h, "PATCH", path, patch, &st, &resp);
	json_decref(patch);
	if (rc == 0 && st != 200)
		rc = kb_errf(r->err, sizeof(r->err), -EIO, "updating %s: %ld %s", path, st,
			     hostapi_message(resp, st));
out:
	if (rc < 0 && rc != -EEXIST && r->err[0] == 0)
		kb_errf(r->err, sizeof(r->err), rc, "%s: %s", path, strerror(-rc));
	json_decref(live);
	json_decref(resp);
	return rc;
}

static int apply(hostapi_t *h, struct rec *r, const json_t *obj, const char *field)
{
	char coll[512];
	int rc = collection(obj, coll, sizeof(coll));
	if (rc < 0)
		return kb_errf(r->err, sizeof(r->err), rc, "no collection for %s",
			       sget(obj, "kind"));
	return apply_at(h, r, coll, obj, field);
}

/* A spec changed after creation: host_setup adopts what exists as it is
 * (as a second `kubicle create` does), so the host limits and the KAI
 * Queue's GPU quota are brought to the spec here. */
static int update_limits(hostapi_t *h, struct rec *r)
{
	json_t *objs = hostquota_objects(&r->t), *o;
	size_t i;
	int rc = objs ? 0 : -ENOMEM;
	json_array_foreach (objs, i, o) {
		if ((rc = apply_at(h, r, sget(o, "path"), json_object_get(o, "object"), "spec")) <
		    0)
			break;
	}
	json_decref(objs);
	if (rc < 0 || strcmp(r->t.scheduler, "kai") != 0 || !r->t.queue[0])
		return rc;
	char path[512];
	long st = 0;
	json_t *q = NULL, *resp = NULL;
	json_int_t g = r->t.gpus < 0 ? -1 : (json_int_t)r->t.gpus;
	snprintf(path, sizeof(path), "/apis/scheduling.run.ai/v2/queues/%s", r->t.queue);
	const json_t *gpu = NULL;
	if (get(h, path, &q) == 200 && labelled_ours(q, r->name))
		gpu = json_object_get(json_object_get(json_object_get(q, "spec"), "resources"),
				      "gpu");
	if (gpu && (json_integer_value(json_object_get(gpu, "quota")) != g ||
		    json_integer_value(json_object_get(gpu, "limit")) != g)) {
		json_t *patch = json_pack("{s:{s:{s:{s:I,s:I}}}}", "spec", "resources", "gpu",
					  "quota", g, "limit", g);
		rc = hostapi_call(h, "PATCH", path, patch, &st, &resp);
		json_decref(patch);
		if (rc == 0 && st != 200)
			rc = kb_errf(r->err, sizeof(r->err), -EIO, "updating Queue %s: %ld %s",
				     r->t.queue, st, hostapi_message(resp, st));
	}
	json_decref(q);
	json_decref(resp);
	return rc;
}

/* ---- the PKI and kubeconfig Secrets ----------------------------------------------------- */

static char *b64_field(const json_t *data, const char *key)
{
	const char *v = sget(data, key);
	unsigned char *raw = NULL;
	size_t n = 0;
	if (!v || kb_base64_decode(v, strlen(v), &raw, &n) < 0)
		return NULL;
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, raw, n);
		s[n] = 0;
	}
	free(raw);
	return s;
}

/* The certificates from the live NAME-pki Secret, or new ones (the Secret
 * is then created with the other objects). *have: it exists and holds them
 * all; false when they are new or reissued from a damaged one, whose data
 * is then written back (apply_manifest). */
static int load_pki(hostapi_t *h, struct rec *r, struct manifest_pki *p, bool *have)
{
	char path[512];
	json_t *sec = NULL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s-pki", r->t.host_namespace,
		 r->name);
	long st = get(h, path, &sec);
	*have = st == 200;
	if (st == 200) {
		const json_t *d = json_object_get(sec, "data");
		if (!labelled_ours(sec, r->name)) {
			json_decref(sec);
			r->host_reason = "HostObjectConflict";
			return kb_errf(r->err, sizeof(r->err), -EEXIST,
				       "Secret %s exists without label %s=%s", path, LABEL,
				       r->name);
		}
		p->server_crt = b64_field(d, "tls.crt");
		p->server_key = b64_field(d, "tls.key");
		p->ca_crt = b64_field(d, "ca.crt");
		p->ca_key = b64_field(d, "ca.key");
		p->admin_crt = b64_field(d, "admin.crt");
		p->admin_key = b64_field(d, "admin.key");
		json_decref(sec);
		if (p->server_crt && p->server_key && p->ca_crt && p->ca_key && p->admin_crt &&
		    p->admin_key)
			return 0;
		/* damaged: reissue from what is there (its CA when present) */
		kb_warn("operator", "tenant %s: Secret %s-pki is incomplete: reissued", r->name,
			r->name);
		*have = false;
		struct manifest_pki seed = *p;
		memset(p, 0, sizeof(*p));
		int rc = manifest_pki_make(&r->ms, &seed, p, r->err, sizeof(r->err));
		manifest_pki_free(&seed);
		return rc;
	}
	json_decref(sec);
	if (st != 404)
		return kb_errf(r->err, sizeof(r->err), st < 0 ? (int)st : -EIO,
			       "reading Secret %s: %ld", path, st);
	return manifest_pki_make(&r->ms, NULL, p, r->err, sizeof(r->err));
}

/* Secret NAME-kubeconfig: the admin kubeconfig for the Service's name. */
static json_t *kubeconfig_secret(const struct rec *r, const struct manifest_pki *p)
{
	char server[300], name[128];
	snprintf(server, sizeof(server), "https://%s.%s.svc:443", r->name, r->t.host_namespace);
	snprintf(name, sizeof(name), "%s-kubeconfig", r->name);
	char *ca = kb_base64_encode(p->ca_crt, strlen(p->ca_crt));
	char *crt = kb_base64_encode(p->admin_crt, strlen(p->admin_crt));
	char *key = kb_base64_encode(p->admin_key, strlen(p->admin_key));
	json_t *kc = json_pack(
	    "{s:s,s:s,s:[{s:s,s:{s:s,s:s}}],s:[{s:s,s:{s:s,s:s}}],s:[{s:s,s:{s:s,s:s}}],s:s}",
	    "apiVersion", "v1", "kind", "Config", "clusters", "name", r->name, "cluster", "server",
	    server, "certificate-authority-data", ca ? ca : "", "users", "name", "admin", "user",
	    "client-certificate-data", crt ? crt : "", "client-key-data", key ? key : "",
	    "contexts", "name", r->name, "context", "cluster", r->name, "user", "admin",
	    "current-context", r->name);
	free(ca);
	free(crt);
	free(key);
	char *text = kc ? json_dumps(kc, JSON_INDENT(2)) : NULL;
	json_decref(kc);
	char *b = text ? kb_base64_encode(text, strlen(text)) : NULL;
	free(text);
	if (!b)
		return NULL;
	/* the server's own, as manifest's objects: a pause keeps it */
	json_t *o = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s,s:s}},s:s,s:{s:s}}", "apiVersion",
			      "v1", "kind", "Secret", "metadata", "name", name, "namespace",
			      r->t.host_namespace, "labels", LABEL, r->name,
			      "kubicle.dev/control-plane", r->name, "app.kubernetes.io/managed-by",
			      "kubicle", "type", "Opaque", "data", "kubeconfig", b);
	free(b);
	return o;
}

/* ---- host objects ----------------------------------------------------------------------- */

static int apply_manifest(hostapi_t *h, struct rec *r)
{
	struct manifest_pki pki = {0};
	bool have_pki = false;
	json_t *items = NULL, *obj;
	size_t i;
	int rc = load_pki(h, r, &pki, &have_pki);
	if (rc == 0 && !(items = manifest_objects(&r->ms, &pki, r->err, sizeof(r->err))))
		rc = -EINVAL;
	json_array_foreach (rc == 0 ? items : NULL, i, obj) {
		const char *kind = sget(obj, "kind");
		if (strcmp(kind, "Secret") == 0) {
			rc = apply(h, r, obj, have_pki ? NULL : "data");
		} else if (strcmp(kind, "Service") == 0 || strcmp(kind, "ConfigMap") == 0) {
			rc = apply(h, r, obj, strcmp(kind, "Service") == 0 ? "spec" : "data");
		} else if (strcmp(kind, "StatefulSet") == 0) {
			json_object_set_new(json_object_get(obj, "spec"), "replicas",
					    json_integer(r->t.stopped ? 0 : 1));
			json_t *kc = kubeconfig_secret(r, &pki);
			rc = kc ? apply(h, r, kc, NULL) : -ENOMEM;
			json_decref(kc);
			if (rc == 0)
				rc = apply(h, r, obj, "spec");
		}
		/* the namespace, RBAC and quota: host_setup's (create's) */
		if (rc < 0)
			break;
	}
	json_decref(items);
	manifest_pki_free(&pki);
	return rc;
}

/* The StatefulSet's state into the phase and the Ready condition. */
static void server_state(hostapi_t *h, struct rec *r)
{
	char path[512];
	json_t *sts = NULL;
	snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/statefulsets/%s",
		 r->t.host_namespace, r->name);
	long st = get(h, path, &sts);
	const json_t *s = json_object_get(sts, "status");
	json_int_t ready = json_integer_value(json_object_get(s, "readyReplicas"));
	json_int_t gen = json_integer_value(json_object_get(meta_of(sts), "generation"));
	json_int_t seen = json_integer_value(json_object_get(s, "observedGeneration"));
	const char *cur = sget(s, "currentRevision"), *upd = sget(s, "updateRevision");
	bool rolled = !cur || !upd || strcmp(cur, upd) == 0 ||
		      json_integer_value(json_object_get(s, "updatedReplicas")) >= 1;
	if (r->t.stopped) {
		r->phase = "Paused";
		r->ready_reason = "Paused";
		snprintf(r->ready_msg, sizeof(r->ready_msg),
			 "spec.paused: 0 replicas, its host pods removed, its store kept");
	} else if (st == 200 && ready >= 1 && seen >= gen && rolled) {
		r->phase = "Running";
		r->ready_reason = NULL;
		snprintf(r->ready_msg, sizeof(r->ready_msg), "1 of 1 replicas ready");
	} else {
		r->phase = "Pending";
		r->ready_reason = seen < gen || !rolled ? "RollingUpdate" : "ServerNotReady";
		snprintf(r->ready_msg, sizeof(r->ready_msg), "%lld of 1 replicas ready",
			 (long long)ready);
	}
	json_decref(sts);
}

/* Whether the namespace (or KAI Queue) at path carries the tenant's label:
 * it was made for it, and goes with it. */
static bool made_for(hostapi_t *h, const char *path, const char *tenant)
{
	json_t *o = NULL;
	bool ours = get(h, path, &o) == 200 && labelled_ours(o, tenant);
	json_decref(o);
	return ours;
}

/* ---- status --------------------------------------------------------------------------- */

static const json_t *find_condition(const json_t *conds, const char *type)
{
	size_t i;
	json_t *c;
	json_array_foreach (conds, i, c)
		if (sget(c, "type") && strcmp(sget(c, "type"), type) == 0)
			return c;
	return NULL;
}

/* A condition as apimachinery's meta.SetStatusCondition keeps it
 * (k8s.io/apimachinery/pkg/api/meta/conditions.go): lastTransitionTime
 * moves only when status does. *changed: status differs from the old. */
static json_t *condition(const json_t *old_conds, const char *type, bool ok, const char *reason,
			 const char *msg, json_int_t gen, bool *changed)
{
	const json_t *old = find_condition(old_conds, type);
	const char *status = ok ? "True" : "False";
	char now[64];
	kb_time_rfc3339(time(NULL), now, sizeof(now));
	*changed = !old || !sget(old, "status") || strcmp(sget(old, "status"), status) != 0 ||
		   !sget(old, "reason") || strcmp(sget(old, "reason"), reason) != 0;
	const char *ltt = old && sget(old, "status") && strcmp(sget(old, "status"), status) == 0 &&
				  sget(old, "lastTransitionTime")
			      ? sget(old, "lastTransitionTime")
			      : now;
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:I}", "type", type, "status", status, "reason",
			 reason, "message", msg, "lastTransitionTime", ltt, "observedGeneration",
			 gen);
}

static int write_status(hostapi_t *h, const struct op_config *c, struct rec *r)
{
	const json_t *old = json_object_get(r->tenant, "status");
	const json_t *oc = json_object_get(old, "conditions");
	json_int_t gen = json_integer_value(json_object_get(meta_of(r->tenant), "generation"));
	char endpoint[300], kcs[200], exp[64] = "";
	bool host_changed, ready_changed;
	bool host_ok = !r->host_reason;
	snprintf(endpoint, sizeof(endpoint), "https://%s.%s.svc:443", r->name, r->t.host_namespace);
	snprintf(kcs, sizeof(kcs), "%s/%s-kubeconfig", r->t.host_namespace, r->name);
	json_t *hc = condition(
	    oc, "HostReady", host_ok, host_ok ? "HostObjectsReady" : r->host_reason,
	    host_ok ? "every host object of the tenant is in place" : r->err, gen, &host_changed);
	json_t *rc_ = condition(
	    oc, "Ready", !r->ready_reason, r->ready_reason ? r->ready_reason : "ServerReady",
	    r->ready_reason && !host_ok ? r->err : r->ready_msg, gen, &ready_changed);
	json_t *st =
	    json_pack("{s:s,s:s,s:s,s:s,s:I,s:s,s:[o,o]}", "phase", r->phase, "endpoint", endpoint,
		      "hostNamespace", r->t.host_namespace, "kubeconfigSecret", kcs,
		      "observedGeneration", gen, "image", r->image, "conditions", rc_, hc);
	if (!st)
		return -ENOMEM;
	if (r->expires) {
		kb_time_rfc3339(r->expires, exp, sizeof(exp));
		json_object_set_new(st, "expiresAt", json_string(exp));
	}
	int rc = 0;
	if (!json_equal(st, old)) {
		char path[512];
		long code = 0;
		json_t *resp = NULL;
		json_t *patch = json_pack("{s:O}", "status", st);
		snprintf(path, sizeof(path), OP_TENANTS "/%s/status", r->name);
		rc = hostapi_call(h, "PATCH", path, patch, &code, &resp);
		json_decref(patch);
		if (rc == 0 && code != 200 && code != 404)
			kb_warn("operator", "tenant %s: status: %ld %s", r->name, code,
				hostapi_message(resp, code));
		json_decref(resp);
	}
	if (host_changed)
		event(h, c, r->tenant, host_ok ? "Normal" : "Warning",
		      host_ok ? "HostObjectsReady" : r->host_reason,
		      host_ok ? "every host object of the tenant is in place" : r->err);
	if (ready_changed)
		event(h, c, r->tenant,
		      r->ready_reason && strcmp(r->ready_reason, "Paused") != 0 && !host_ok
			  ? "Warning"
			  : "Normal",
		      r->ready_reason ? r->ready_reason : "Ready", r->ready_msg);
	json_decref(st);
	return rc;
}

/* ---- finalizer -------------------------------------------------------------------------- */

static bool has_finalizer(const json_t *tenant)
{
	size_t i;
	json_t *f;
	json_array_foreach (json_object_get(meta_of(tenant), "finalizers"), i, f)
		if (json_string_value(f) && strcmp(json_string_value(f), OP_FINALIZER) == 0)
			return true;
	return false;
}

/* Adds (add) or removes our finalizer, guarded by the Tenant's
 * resourceVersion (409: someone else wrote it first; the next reconcile
 * sees the new one). */
static int set_finalizer(hostapi_t *h, struct rec *r, bool add)
{
	json_t *list = json_array(), *f, *resp = NULL;
	size_t i;
	long st = 0;
	char path[512];
	json_array_foreach (json_object_get(meta_of(r->tenant), "finalizers"), i, f)
		if (!json_string_value(f) || strcmp(json_string_value(f), OP_FINALIZER) != 0)
			json_array_append(list, f);
	if (add)
		json_array_append_new(list, json_string(OP_FINALIZER));
	json_t *patch = json_pack("{s:{s:o,s:s}}", "metadata", "finalizers", list,
				  "resourceVersion", sget(meta_of(r->tenant), "resourceVersion"));
	snprintf(path, sizeof(path), OP_TENANTS "/%s", r->name);
	int rc = patch ? hostapi_call(h, "PATCH", path, patch, &st, &resp) : -ENOMEM;
	json_decref(patch);
	if (rc == 0 && st != 200 && st != 404)
		rc = kb_errf(r->err, sizeof(r->err), st == 409 ? -EAGAIN : -EIO,
			     "finalizer: %ld %s", st, hostapi_message(resp, st));
	json_decref(resp);
	return rc;
}

/* What `kubicle delete` does on the host, plus the server's StatefulSet
 * and pods (kubicle.dev/control-plane=NAME: not the tenant's label, see
 * cmd/manifest.c). 0 when nothing is left, -EAGAIN while objects go. */
/* Items of a label-selected list (0 when it cannot be read). */
static size_t count_items(hostapi_t *h, const char *path)
{
	json_t *resp = NULL;
	size_t n = get(h, path, &resp) == 200 ? json_array_size(json_object_get(resp, "items")) : 0;
	json_decref(resp);
	return n;
}

/* DELETE of a label-selected collection; 404 is fine. */
static int delete_all(hostapi_t *h, struct rec *r, const char *path)
{
	long st = 0;
	json_t *resp = NULL;
	int rc = hostapi_call(h, "DELETE", path, NULL, &st, &resp);
	if (rc == 0 && st != 200 && st != 404)
		rc = kb_errf(r->err, sizeof(r->err), -EIO, "deleting %s: %ld %s", path, st,
			     hostapi_message(resp, st));
	else if (rc < 0)
		kb_errf(r->err, sizeof(r->err), rc, "deleting %s: %s", path, strerror(-rc));
	json_decref(resp);
	return rc;
}

/* What `kubicle delete` does on the host, plus the server's StatefulSet
 * and pods (kubicle.dev/control-plane=NAME: not the tenant's label, see
 * cmd/manifest.c). The namespace and queue go when they carry the tenant's
 * label (made for it), never one of the host's own namespaces. 0 when
 * nothing is left, -EAGAIN while objects go. */
static int teardown(hostapi_t *h, struct rec *r)
{
	char sts[1024], pods[1024], path[512];
	size_t left = 0;
	const char *ns = r->t.host_namespace;
	snprintf(path, sizeof(path), "/apis/scheduling.run.ai/v2/queues/%s", r->t.queue);
	r->t.made_queue =
	    strcmp(r->t.scheduler, "kai") == 0 && r->t.queue[0] && made_for(h, path, r->name);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", ns);
	r->t.made_namespace = !reserved_namespace(ns, NULL) && made_for(h, path, r->name);
	snprintf(sts, sizeof(sts),
		 "/apis/apps/v1/namespaces/%s/statefulsets?labelSelector=" LABEL "%%3D%s", ns,
		 r->name);
	snprintf(pods, sizeof(pods),
		 "/api/v1/namespaces/%s/pods?labelSelector=kubicle.dev%%2Fcontrol-plane%%3D%s", ns,
		 r->name);
	int rc = delete_all(h, r, sts);
	if (rc == 0)
		rc = delete_all(h, r, pods);
	if (rc == 0)
		rc = host_teardown(h, &r->t, false, 0, r->err, sizeof(r->err));
	if (rc == 0)
		rc = host_count_left(h, &r->t, &left, r->err, sizeof(r->err));
	if (rc < 0)
		return rc;
	/* what host_count_left does not see */
	left += count_items(h, sts) + count_items(h, pods);
	if (left)
		snprintf(r->err, sizeof(r->err), "%zu host object(s) of the tenant still there",
			 left);
	return left ? -EAGAIN : 0;
}

static int finalize(hostapi_t *h, const struct op_config *c, struct rec *r, int *requeue_s)
{
	if (!has_finalizer(r->tenant))
		return 0;
	if (sget(json_object_get(r->tenant, "status"), "phase") == NULL ||
	    strcmp(sget(json_object_get(r->tenant, "status"), "phase"), "Terminating") != 0) {
		char path[512];
		long st = 0;
		json_t *patch = json_pack("{s:{s:s}}", "status", "phase", "Terminating");
		snprintf(path, sizeof(path), OP_TENANTS "/%s/status", r->name);
		hostapi_call(h, "PATCH", path, patch, &st, NULL);
		json_decref(patch);
		event(h, c, r->tenant, "Normal", "Deleting",
		      "deleting every host object labelled " LABEL "=<name>");
	}
	int rc = teardown(h, r);
	if (rc == -EAGAIN) {
		*requeue_s = 1;
		return 0;
	}
	if (rc < 0) {
		kb_warn("operator", "tenant %s: teardown: %s", r->name, r->err);
		event(h, c, r->tenant, "Warning", "TeardownFailed", r->err);
		return rc;
	}
	rc = set_finalizer(h, r, false);
	if (rc == 0)
		kb_info("operator", "tenant %s: host objects deleted, finalizer removed", r->name);
	return rc;
}

/* ---- reconcile -------------------------------------------------------------------------- */

/* Whether the tenant's server pod is gone (a paused tenant's StatefulSet
 * at 0 replicas): `kubicle stop` stops the server before it removes what
 * its syncer made, or the syncer would make it again meanwhile. Until then
 * the StatefulSet's events bring the paused Tenant back (operator.c). */
static bool server_gone(hostapi_t *h, struct rec *r)
{
	char path[512];
	snprintf(path, sizeof(path),
		 "/api/v1/namespaces/%s/pods?labelSelector=kubicle.dev%%2Fcontrol-plane%%3D%s",
		 r->t.host_namespace, r->name);
	json_t *resp = NULL;
	bool gone =
	    get(h, path, &resp) == 200 && json_array_size(json_object_get(resp, "items")) == 0;
	json_decref(resp);
	return gone;
}

static int expire(hostapi_t *h, const struct op_config *c, struct rec *r)
{
	char path[512], msg[128];
	long st = 0;
	snprintf(msg, sizeof(msg), "spec.ttl %s is up: deleting the tenant",
		 sget(json_object_get(r->tenant, "spec"), "ttl"));
	event(h, c, r->tenant, "Normal", "Expired", msg);
	snprintf(path, sizeof(path), OP_TENANTS "/%s", r->name);
	int rc = hostapi_call(h, "DELETE", path, NULL, &st, NULL);
	kb_info("operator", "tenant %s: ttl expired, deleted (%ld)", r->name, st);
	return rc;
}

static int reconcile_live(hostapi_t *h, const struct op_config *c, struct rec *r, int *requeue_s)
{
	char other[128] = "";
	int rc;
	if (!has_finalizer(r->tenant) && (rc = set_finalizer(h, r, true)) < 0)
		return rc == -EAGAIN ? (*requeue_s = 1, 0) : rc;
	if (r->expires && time(NULL) >= r->expires)
		return expire(h, c, r);
	r->phase = "Pending";
	rc = host_namespace_user(h, &r->t, other, sizeof(other), r->err, sizeof(r->err));
	if (rc == 0 && other[0]) {
		r->host_reason = "NamespaceInUse";
		kb_errf(r->err, sizeof(r->err), 0, "host namespace %s belongs to tenant %s",
			r->t.host_namespace, other);
		rc = -EEXIST;
	}
	if (rc == 0 && (rc = host_setup(h, &r->t, r->err, sizeof(r->err))) < 0)
		r->host_reason = "HostError";
	if (rc == 0 && (rc = update_limits(h, r)) < 0 && !r->host_reason)
		r->host_reason = "HostError";
	if (rc == 0 && (rc = apply_manifest(h, r)) < 0 && !r->host_reason)
		r->host_reason = "HostError";
	if (rc == 0 && r->t.stopped && server_gone(h, r) &&
	    (rc = host_remove_pods(h, &r->t, r->err, sizeof(r->err))) < 0)
		r->host_reason = "HostError";
	if (rc < 0) {
		r->phase = "Failed";
		r->ready_reason = "HostNotReady";
		snprintf(r->ready_msg, sizeof(r->ready_msg), "%.200s", r->err);
		*requeue_s = 10;
	} else {
		server_state(h, r); /* changes of it come as StatefulSet events (operator.c) */
	}
	if (r->expires && (*requeue_s == 0 || r->expires - time(NULL) < *requeue_s))
		*requeue_s = (int)(r->expires - time(NULL)) + 1;
	int src = write_status(h, c, r);
	return rc < 0 ? rc : src;
}

/* Whether the operator already brought the host to this generation of the
 * spec (its own status says so): a poll then only reads the server's state. */
static bool settled(const struct rec *r)
{
	const json_t *st = json_object_get(r->tenant, "status");
	const json_t *host = find_condition(json_object_get(st, "conditions"), "HostReady");
	return has_finalizer(r->tenant) &&
	       json_integer_value(json_object_get(meta_of(r->tenant), "generation")) ==
		   json_integer_value(json_object_get(st, "observedGeneration")) &&
	       host && strcmp(sget(host, "status") ? sget(host, "status") : "", "True") == 0;
}

/* A poll of a settled Tenant: its TTL and its server's state, no host
 * object touched (the next full reconcile, at the latest the resync,
 * checks those). */
static int poll_status(hostapi_t *h, const struct op_config *c, struct rec *r, int *requeue_s)
{
	if (r->expires && time(NULL) >= r->expires)
		return expire(h, c, r);
	server_state(h, r);
	if (r->expires && (*requeue_s == 0 || r->expires - time(NULL) < *requeue_s))
		*requeue_s = (int)(r->expires - time(NULL)) + 1;
	return write_status(h, c, r);
}

int op_reconcile(hostapi_t *h, const struct op_config *c, const char *name, bool full,
		 int *requeue_s)
{
	struct rec r = {.name = name};
	char path[512];
	*requeue_s = 0;
	snprintf(path, sizeof(path), OP_TENANTS "/%s", name);
	long st = get(h, path, &r.tenant);
	if (st == 404) {
		json_decref(r.tenant);
		return 0; /* gone: its finalizer ran */
	}
	if (st != 200) {
		kb_warn("operator", "tenant %s: reading it: %ld", name, st);
		json_decref(r.tenant);
		return st < 0 ? (int)st : -EIO;
	}
	int rc = read_spec(&r, c);
	bool deleting = json_object_get(meta_of(r.tenant), "deletionTimestamp") != NULL;
	if (deleting && rc < 0 && r.t.host_namespace[0] == 0) {
		/* no usable spec: the defaults name what it could have made */
		snprintf(r.t.name, sizeof(r.t.name), "%s", name);
		snprintf(r.t.host_namespace, sizeof(r.t.host_namespace), "kubicle-%s", name);
	}
	if (deleting) {
		rc = finalize(h, c, &r, requeue_s);
	} else if (rc < 0) {
		r.phase = "Failed";
		r.host_reason = "InvalidSpec";
		r.ready_reason = "InvalidSpec";
		snprintf(r.ready_msg, sizeof(r.ready_msg), "%.200s", r.err);
		if (!r.t.host_namespace[0])
			snprintf(r.t.host_namespace, sizeof(r.t.host_namespace), "kubicle-%s",
				 name);
		kb_warn("operator", "tenant %s: invalid spec: %s", name, r.err);
		rc = write_status(h, c, &r);
	} else if (!full && settled(&r) && !r.t.stopped) {
		rc = poll_status(h, c, &r, requeue_s);
	} else {
		rc = reconcile_live(h, c, &r, requeue_s);
		if (rc < 0)
			kb_warn("operator", "tenant %s: %s", name, r.err);
	}
	json_decref(r.tenant);
	return rc;
}
