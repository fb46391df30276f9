/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One CLI for both modes (operator.h): `kubicle create|list|kubeconfig|
 * stop|start|delete --in-cluster` create, read and change Tenant objects
 * on the host cluster (the platform's kubeconfig: --host-kubeconfig FILE,
 * else $KUBECONFIG, else ~/.kube/config) and wait on their status, with the
 * local mode's output (cmd/tenant.c) and -o json shapes. `kubicle operator`
 * does the work; these only write the Tenant's spec.
 *
 * Threading: blocking; CLI only.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/hostapi.h"
#include "cmd/hostquota.h"
#include "cmd/users.h"
#include "cmd/operator.h"
#include "cmd/operator_impl.h"
#include "lib/json.h"
#include "lib/kubeconfig.h"
#include "lib/pki.h"
#include "lib/util.h"

struct cli {
	const char *cmd; /* "create", ... */
	const char *kubeconfig;
	bool json, wait, all, ignore_missing, no_wait;
	unsigned timeout_s;
	const char *name;
	json_t *spec;     /* create: the Tenant's spec */
	const char *user; /* kubeconfig --user */
	const char *groups[16];
	size_t ngroups;
	long ttl;
	hostapi_t *h;
};

static int die(const struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int die(const struct cli *c, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "kubicle %s: ", c->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static void print_json(json_t *o)
{
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (s)
		puts(s);
	free(s);
	json_decref(o);
}

static const char *sget(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

/* ---- arguments ----------------------------------------------------------------------- */

static int spec_flag(struct cli *c, const char *flag, const char *v)
{
	static const struct {
		const char *flag, *key;
	} strs[] = {
	    {"host-namespace", "hostNamespace"},
	    {"queue", "queue"},
	    {"policy", "policy"},
	    {"floor", "floor"},
	    {"scheduler", "scheduler"},
	    {"ttl", "ttl"},
	    {"image", "image"},
	    {"storage", "storage"},
	    {"storage-class", "storageClass"},
	};
	for (size_t i = 0; i < KB_ARRAY_SIZE(strs); i++)
		if (strcmp(flag, strs[i].flag) == 0) {
			json_object_set_new(c->spec, strs[i].key, json_string(v));
			return 0;
		}
	if (strcmp(flag, "gpus") == 0) {
		char *end;
		long n = strtol(v, &end, 10);
		if (*end || end == v || n < -1)
			return die(c, "bad --gpus %s", v) - 2;
		json_object_set_new(c->spec, "gpus", json_integer(n));
		return 0;
	}
	if (strcmp(flag, "egress-allow") == 0) {
		json_t *a = json_object_get(c->spec, "egressAllow");
		if (!a)
			json_object_set_new(c->spec, "egressAllow", a = json_array());
		json_array_append_new(a, json_string(v));
		return 0;
	}
	return -EINVAL;
}

static int host_limit(struct cli *c, const char *flag, const char *v)
{
	char err[256];
	json_t *lim = json_object_get(c->spec, "hostLimits");
	if (!lim)
		json_object_set_new(c->spec, "hostLimits", lim = json_object());
	if (hostquota_flag(lim, flag, v, err, sizeof(err)) < 0)
		return die(c, "%s", err) - 2;
	return 0;
}

static int parse(struct cli *c, int argc, char **argv)
{
	static const char *const spec_flags[] = {
	    "host-namespace", "queue",         "gpus",        "policy",
	    "floor",          "scheduler",     "ttl",         "image",
	    "storage",        "storage-class", "egress-allow"};
	struct option opts[64];
	size_t n = 0;
	opts[n++] = (struct option){"in-cluster", no_argument, NULL, 'I'};
	opts[n++] = (struct option){"host-kubeconfig", required_argument, NULL, 'K'};
	opts[n++] = (struct option){"output", required_argument, NULL, 'o'};
	opts[n++] = (struct option){"wait", no_argument, NULL, 'w'};
	opts[n++] = (struct option){"no-wait", no_argument, NULL, 'W'};
	opts[n++] = (struct option){"timeout", required_argument, NULL, 'T'};
	opts[n++] = (struct option){"all", no_argument, NULL, 'A'};
	opts[n++] = (struct option){"ignore-not-found", no_argument, NULL, 'i'};
	if (strcmp(c->cmd, "kubeconfig") == 0) {
		opts[n++] = (struct option){"user", required_argument, NULL, 'u'};
		opts[n++] = (struct option){"group", required_argument, NULL, 'G'};
		opts[n++] = (struct option){"ttl", required_argument, NULL, 't'};
	}
	for (size_t i = 0; strcmp(c->cmd, "create") == 0 && i < KB_ARRAY_SIZE(spec_flags); i++)
		opts[n++] = (struct option){spec_flags[i], required_argument, NULL, 'S'};
	for (size_t i = 0; strcmp(c->cmd, "create") == 0 && hostquota_options[i].name; i++)
		opts[n++] = hostquota_options[i];
	opts[n] = (struct option){NULL, 0, NULL, 0};
	int ch, idx = 0, rc = 0;
	optind = 1;
	while (rc == 0 && (ch = getopt_long(argc, argv, "o:", opts, &idx)) != -1) {
		switch (ch) {
		case 'I': break;
		case 'K': c->kubeconfig = optarg; break;
		case 'o':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0)
				return die(c, "-o takes json or text") + 1;
			c->json = strcmp(optarg, "json") == 0;
			break;
		case 'w': c->wait = true; break;
		case 'W': c->no_wait = true; break;
		case 'T': c->timeout_s = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'A': c->all = true; break;
		case 'i': c->ignore_missing = true; break;
		case 'u': c->user = optarg; break;
		case 'G':
			if (c->ngroups == KB_ARRAY_SIZE(c->groups))
				return die(c, "at most %zu --group", KB_ARRAY_SIZE(c->groups)) + 1;
			c->groups[c->ngroups++] = optarg;
			break;
		case 't':
			if ((c->ttl = users_parse_duration(optarg)) <= 0)
				return die(c, "bad --ttl %s", optarg) + 1;
			break;
		case 'S': rc = spec_flag(c, opts[idx].name, optarg); break;
		case HOSTQUOTA_OPT: rc = host_limit(c, opts[idx].name, optarg); break;
		default: return 2;
		}
	}
	if (rc < 0)
		return 2;
	c->name = optind < argc ? argv[optind] : NULL;
	if (optind + 1 < argc)
		return die(c, "unexpected argument %s", argv[optind + 1]) + 1;
	return 0;
}

static int open_host(struct cli *c)
{
	char path[4096];
	const char *kc = c->kubeconfig ? c->kubeconfig : getenv("KUBECONFIG");
	if (!kc || !*kc) {
		snprintf(path, sizeof(path), "%s/.kube/config",
			 getenv("HOME") ? getenv("HOME") : ".");
		kc = path;
	}
	int rc = hostapi_open(kc, 0, &c->h);
	if (rc < 0)
		return die(c, "host kubeconfig %s: %s", kc, strerror(-rc));
	return 0;
}

/* ---- reading Tenants -------------------------------------------------------------------- */

/* GET of one Tenant: 200 with *out, 404, or an error printed (-1). */
static long get_tenant(struct cli *c, const char *name, json_t **out)
{
	char path[512];
	long st = 0;
	*out = NULL;
	snprintf(path, sizeof(path), OP_TENANTS "/%s", name);
	int rc = hostapi_call(c->h, "GET", path, NULL, &st, out);
	if (rc < 0) {
		die(c, "host: %s", strerror(-rc));
		return -1;
	}
	if (st != 200 && st != 404) {
		die(c, "host: %s", hostapi_message(*out, st));
		json_decref(*out);
		*out = NULL;
		return -1;
	}
	return st;
}

static const char *ready_status(const json_t *t)
{
	size_t i;
	json_t *cnd;
	json_array_foreach (json_object_get(json_object_get(t, "status"), "conditions"), i, cnd)
		if (strcmp(sget(cnd, "type"), "Ready") == 0)
			return sget(cnd, "status");
	return "";
}

/* The local mode's STATE of a Tenant's phase (cmd/tenant.c state_of). */
static const char *state_of(const json_t *t)
{
	const char *phase = sget(json_object_get(t, "status"), "phase");
	if (json_is_true(json_object_get(json_object_get(t, "spec"), "paused")))
		return "Stopped";
	return *phase ? phase : "Pending";
}

/* cmd/tenant.c tenant_json's shape, from the Tenant. New reference. */
static json_t *tenant_json(const json_t *t, const char *state)
{
	const json_t *spec = json_object_get(t, "spec"), *st = json_object_get(t, "status");
	const json_t *m = json_object_get(t, "metadata");
	json_t *gpus = json_object_get(spec, "gpus");
	json_t *o = json_pack(
	    "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:s,s:s}", "name", sget(m, "name"), "state",
	    state, "endpoint", sget(st, "endpoint"), "kubeconfig", sget(st, "kubeconfigSecret"),
	    "queue", sget(spec, "queue"), "scheduler",
	    *sget(spec, "scheduler") ? sget(spec, "scheduler") : "kai", "policy",
	    *sget(spec, "policy") ? sget(spec, "policy") : "none", "created",
	    sget(m, "creationTimestamp"), "gpus", gpus ? json_integer_value(gpus) : (json_int_t)-1,
	    "floor", *sget(spec, "floor") ? sget(spec, "floor") : "baseline", "hostNamespace",
	    *sget(st, "hostNamespace") ? sget(st, "hostNamespace") : sget(spec, "hostNamespace"));
	json_object_set_new(o, "expires",
			    *sget(st, "expiresAt") ? json_string(sget(st, "expiresAt"))
						   : json_null());
	json_t *lim = json_object_get(spec, "hostLimits");
	json_object_set_new(o, "hostLimits", lim ? json_incref(lim) : json_null());
	return o;
}

static void print_created(const struct cli *c, const json_t *t, const char *state)
{
	if (c->json) {
		print_json(tenant_json(t, state));
		return;
	}
	const json_t *spec = json_object_get(t, "spec"), *st = json_object_get(t, "status");
	printf(
	    "tenant %s is %s at %s\nkubeconfig: secret %s (kubicle kubeconfig %s --in-cluster)\n",
	    sget(json_object_get(t, "metadata"), "name"), state, sget(st, "endpoint"),
	    sget(st, "kubeconfigSecret"), sget(json_object_get(t, "metadata"), "name"));
	printf("policy: %s; host floor: %s (policies/README.md)\n",
	       *sget(spec, "policy") ? sget(spec, "policy") : "none (the host floor alone)",
	       *sget(spec, "floor") ? sget(spec, "floor") : "baseline");
}

/* Polls until done(t) (or the Tenant is gone: gone_ok), at most timeout_s. */
static int wait_for(struct cli *c, const char *name, bool (*done)(const json_t *t), bool gone_ok,
		    json_t **last)
{
	unsigned timeout = c->timeout_s ? c->timeout_s : 120;
	time_t end = time(NULL) + timeout;
	for (;;) {
		json_t *t = NULL;
		long st = get_tenant(c, name, &t);
		if (st < 0)
			return -EIO;
		if (st == 404 && gone_ok) {
			json_decref(t);
			return 0;
		}
		if (st == 200 && done && done(t)) {
			if (last)
				*last = t;
			else
				json_decref(t);
			return 0;
		}
		json_decref(t);
		if (time(NULL) >= end)
			return -ETIMEDOUT;
		usleep(200000);
	}
}

static bool is_ready(const json_t *t)
{
	return strcmp(ready_status(t), "True") == 0 ||
	       strcmp(sget(json_object_get(t, "status"), "phase"), "Failed") == 0;
}

static bool is_paused(const json_t *t)
{
	return strcmp(sget(json_object_get(t, "status"), "phase"), "Paused") == 0;
}

static bool seen_by_operator(const json_t *t)
{
	const json_t *st = json_object_get(t, "status");
	return json_integer_value(json_object_get(st, "observedGeneration")) >=
		   json_integer_value(
		       json_object_get(json_object_get(t, "metadata"), "generation")) &&
	       *sget(st, "phase");
}

/* ---- the commands ------------------------------------------------------------------------ */

static int do_create(struct cli *c)
{
	long st = 0;
	json_t *resp = NULL, *t = NULL;
	if (!c->name)
		return die(c, "usage: kubicle create NAME --in-cluster [flags]") + 1;
	json_t *body = json_pack("{s:s,s:s,s:{s:s},s:O}", "apiVersion", "kubicle.dev/v1", "kind",
				 "Tenant", "metadata", "name", c->name, "spec", c->spec);
	int rc = hostapi_call(c->h, "POST", OP_TENANTS, body, &st, &resp);
	json_decref(body);
	if (rc < 0)
		return die(c, "host: %s", strerror(-rc));
	if (st == 409)
		rc = die(c, "tenant %s already exists", c->name);
	else if (st != 201)
		rc = die(c, "%s", hostapi_message(resp, st));
	json_decref(resp);
	if (rc)
		return rc;
	rc = wait_for(c, c->name, c->wait ? is_ready : seen_by_operator, false, &t);
	if (rc == -ETIMEDOUT)
		return die(c, "tenant %s: no %s within %u s (is kubicle operator running?)",
			   c->name, c->wait ? "Ready" : "status",
			   c->timeout_s ? c->timeout_s : 120);
	if (rc < 0)
		return 1;
	if (strcmp(sget(json_object_get(t, "status"), "phase"), "Failed") == 0) {
		json_decref(t);
		return die(c, "tenant %s failed (kubectl describe tenant %s)", c->name, c->name);
	}
	char state[32];
	snprintf(state, sizeof(state), "%s", state_of(t));
	for (char *p = state; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
	print_created(c, t, state);
	json_decref(t);
	return 0;
}

/* Pods and GPU requests of the tenant on the host (kubicle.dev/tenant). */
static void usage_of(struct cli *c, const json_t *t, long *pods, long *gpus)
{
	char path[512];
	long st = 0;
	json_t *resp = NULL, *pod, *ctr;
	size_t i, j;
	const char *ns = sget(json_object_get(t, "status"), "hostNamespace");
	*pods = *gpus = 0;
	if (!*ns)
		return;
	snprintf(path, sizeof(path),
		 "/api/v1/namespaces/%s/pods?labelSelector=kubicle.dev%%2Ftenant%%3D%s", ns,
		 sget(json_object_get(t, "metadata"), "name"));
	if (hostapi_call(c->h, "GET", path, NULL, &st, &resp) < 0 || st != 200) {
		json_decref(resp);
		return;
	}
	json_array_foreach (json_object_get(resp, "items"), i, pod) {
		(*pods)++;
		json_array_foreach (json_object_get(json_object_get(pod, "spec"), "containers"), j,
				    ctr) {
			const json_t *r = json_object_get(ctr, "resources");
			const char *g = sget(json_object_get(r, "limits"), "nvidia.com/gpu");
			if (!*g)
				g = sget(json_object_get(r, "requests"), "nvidia.com/gpu");
			*gpus += strtol(g, NULL, 10);
		}
	}
	json_decref(resp);
}

static int do_list(struct cli *c)
{
	long st = 0;
	json_t *resp = NULL, *t, *items = json_array();
	size_t i, shown = 0;
	int rc = hostapi_call(c->h, "GET", OP_TENANTS, NULL, &st, &resp);
	if (rc < 0 || st != 200) {
		json_decref(items);
		rc = rc < 0 ? die(c, "host: %s", strerror(-rc))
			    : die(c, "%s", hostapi_message(resp, st));
		json_decref(resp);
		return rc;
	}
	if (!c->json)
		printf("%-20s %-10s %-24s %-14s %-10s %-10s %5s %5s %6s %8s\n", "NAME", "STATE",
		       "ENDPOINT", "QUEUE", "POLICY", "FLOOR", "PODS", "GPUS", "AGE", "TTL");
	time_t now = time(NULL);
	json_array_foreach (json_object_get(resp, "items"), i, t) {
		const json_t *m = json_object_get(t, "metadata");
		if (c->name && strcmp(c->name, sget(m, "name")) != 0)
			continue;
		shown++;
		time_t created = now, expires = 0;
		kb_time_parse(sget(m, "creationTimestamp"), &created);
		kb_time_parse(sget(json_object_get(t, "status"), "expiresAt"), &expires);
		long pods, gpus;
		usage_of(c, t, &pods, &gpus);
		json_t *o = tenant_json(t, state_of(t));
		if (c->json) {
			json_object_set_new(o, "pods", json_integer(pods));
			json_object_set_new(o, "gpusInUse", json_real((double)gpus));
			json_object_set_new(o, "ageSeconds", json_integer(now - created));
			json_object_set_new(o, "secondsLeft",
					    expires ? json_integer(expires - now) : json_null());
			json_array_append_new(items, o);
			continue;
		}
		char age[32], left[32] = "-", g[32];
		users_format_duration((long)(now - created), age, sizeof(age));
		if (expires)
			users_format_duration((long)(expires - now), left, sizeof(left));
		snprintf(g, sizeof(g), "%ld", gpus);
		printf("%-20s %-10s %-24s %-14s %-10s %-10s %5ld %5s %6s %8s\n", sget(o, "name"),
		       sget(o, "state"), sget(o, "endpoint"),
		       *sget(o, "queue") ? sget(o, "queue") : "-", sget(o, "policy"),
		       sget(o, "floor"), pods, g, age, left);
		json_decref(o);
	}
	json_decref(resp);
	if (c->json)
		print_json(json_pack("{s:s,s:s,s:o}", "apiVersion", "kubicle.dev/v1", "kind",
				     "TenantList", "items", items));
	else
		json_decref(items);
	if (c->name && !shown)
		return die(c, "no tenant %s", c->name);
	return 0;
}

/* The named user's kubeconfig: a client certificate of the tenant's CA
 * (its PKI Secret's ca.crt and ca.key, in a private temporary folder that
 * is removed again), as `kubicle kubeconfig NAME --user U` issues locally. */
static int user_kubeconfig(struct cli *c, const json_t *t, char *admin, size_t len)
{
	const char *ns = sget(json_object_get(t, "status"), "hostNamespace");
	char path[512], dir[256], file[300];
	long st = 0;
	json_t *sec = NULL, *kc = json_loadb(admin, len, 0, NULL);
	char *crt = NULL, *key = NULL, *ca = NULL, *cakey = NULL, *text = NULL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s-pki", ns, c->name);
	int rc = hostapi_call(c->h, "GET", path, NULL, &st, &sec);
	if (rc < 0 || st != 200 || !kc) {
		rc = die(c, "secret %s: %s", path,
			 rc < 0 ? strerror(-rc) : hostapi_message(sec, st));
		goto out;
	}
	const json_t *d = json_object_get(sec, "data");
	const char *keys[2] = {"ca.crt", "ca.key"};
	char **dst[2] = {&ca, &cakey};
	for (int i = 0; i < 2; i++) {
		unsigned char *raw = NULL;
		size_t n = 0;
		const char *v = sget(d, keys[i]);
		if (kb_base64_decode(v, strlen(v), &raw, &n) < 0 ||
		    !(*dst[i] = strndup((char *)raw, n))) {
			free(raw);
			rc = die(c, "secret %s: no %s", path, keys[i]);
			goto out;
		}
		free(raw);
	}
	snprintf(dir, sizeof(dir), "%s/kubicle-kubeconfig.XXXXXX",
		 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		rc = die(c, "%s", strerror(errno));
		goto out;
	}
	snprintf(file, sizeof(file), "%s/ca.crt", dir);
	rc = kb_write_file(file, ca, strlen(ca), 0600);
	snprintf(file, sizeof(file), "%s/ca.key", dir);
	if (rc == 0)
		rc = kb_write_file(file, cakey, strlen(cakey), 0600);
	if (rc == 0)
		rc = kb_pki_issue_client(dir, c->user, c->groups, c->ngroups, c->ttl, &crt, &key);
	unlink(file);
	snprintf(file, sizeof(file), "%s/ca.crt", dir);
	unlink(file);
	rmdir(dir);
	if (rc < 0) {
		rc = die(c, "issuing a certificate for %s: %s", c->user, strerror(-rc));
		goto out;
	}
	/* the admin kubeconfig's cluster, with the new user */
	const char *server =
	    sget(json_object_get(json_array_get(json_object_get(kc, "clusters"), 0), "cluster"),
		 "server");
	struct kb_kubeconfig k = {.name = c->name,
				  .server = server,
				  .ca_pem = ca,
				  .cert_pem = crt,
				  .key_pem = key,
				  .user = c->user};
	if ((rc = kb_kubeconfig_render(&k, &text)) < 0) {
		rc = die(c, "%s", strerror(-rc));
		goto out;
	}
	if (c->json) {
		json_t *o = kb_yaml_load(text, strlen(text), NULL, 0);
		if (o)
			print_json(o);
	} else {
		fputs(text, stdout);
	}
out:
	json_decref(sec);
	json_decref(kc);
	free(ca);
	if (cakey)
		memset(cakey, 0, strlen(cakey));
	free(cakey);
	free(crt);
	free(key);
	free(text);
	return rc;
}

static int do_kubeconfig(struct cli *c)
{
	json_t *t = NULL, *sec = NULL;
	char path[512], ns[128];
	long st;
	if (!c->name)
		return die(c, "usage: kubicle kubeconfig NAME --in-cluster") + 1;
	if ((st = get_tenant(c, c->name, &t)) != 200)
		return st < 0 ? 1 : die(c, "no tenant %s", c->name);
	const char *ref = sget(json_object_get(t, "status"), "kubeconfigSecret");
	const char *slash = strchr(ref, '/');
	if (!slash || (size_t)(slash - ref) >= sizeof(ns)) {
		json_decref(t);
		return die(c, "tenant %s has no kubeconfig yet (is kubicle operator running?)",
			   c->name);
	}
	snprintf(ns, sizeof(ns), "%.*s", (int)(slash - ref), ref);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", ns, slash + 1);
	json_decref(t);
	int rc = hostapi_call(c->h, "GET", path, NULL, &st, &sec);
	const char *b64 = sget(json_object_get(sec, "data"), "kubeconfig");
	unsigned char *raw = NULL;
	size_t n = 0;
	if (rc < 0 || st != 200 || kb_base64_decode(b64, strlen(b64), &raw, &n) < 0) {
		rc = die(c, "secret %s: %s", path,
			 rc < 0 ? strerror(-rc) : hostapi_message(sec, st));
		json_decref(sec);
		return rc;
	}
	json_decref(sec);
	if (c->user) {
		json_t *t2 = NULL;
		int r2 =
		    get_tenant(c, c->name, &t2) == 200 ? user_kubeconfig(c, t2, (char *)raw, n) : 1;
		json_decref(t2);
		free(raw);
		return r2;
	}
	if (c->json) {
		json_t *o = json_loadb((const char *)raw, n, 0, NULL);
		if (o)
			print_json(o);
	} else {
		fwrite(raw, 1, n, stdout);
	}
	free(raw);
	return 0;
}

static int set_paused(struct cli *c, const char *name, bool paused)
{
	char path[512];
	long st = 0;
	json_t *resp = NULL;
	json_t *patch = json_pack("{s:{s:b}}", "spec", "paused", paused);
	snprintf(path, sizeof(path), OP_TENANTS "/%s", name);
	int rc = hostapi_call(c->h, "PATCH", path, patch, &st, &resp);
	json_decref(patch);
	if (rc < 0)
		rc = die(c, "host: %s", strerror(-rc));
	else if (st == 404)
		rc = die(c, "no tenant %s", name);
	else if (st != 200)
		rc = die(c, "%s", hostapi_message(resp, st));
	json_decref(resp);
	return rc;
}

static int do_stop(struct cli *c)
{
	json_t *t = NULL;
	long pods = 0, gpus = 0, st;
	if (!c->name)
		return die(c, "usage: kubicle stop NAME --in-cluster") + 1;
	if ((st = get_tenant(c, c->name, &t)) != 200)
		return st < 0 ? 1 : die(c, "no tenant %s", c->name);
	usage_of(c, t, &pods, &gpus);
	json_decref(t);
	int rc = set_paused(c, c->name, true);
	if (rc)
		return rc;
	if ((rc = wait_for(c, c->name, is_paused, false, NULL)) < 0)
		return die(c, "tenant %s: not Paused in time: %s", c->name, strerror(-rc));
	if (c->json)
		print_json(json_pack("{s:s,s:s,s:I}", "name", c->name, "state", "stopped",
				     "podsRequeued", (json_int_t)pods));
	else
		printf("tenant %s stopped (%ld pod(s) will be queued again at start)\n", c->name,
		       pods);
	return 0;
}

static bool running_again(const json_t *t)
{
	return seen_by_operator(t) && !is_paused(t);
}

static int start_one(struct cli *c, const char *name, bool quiet)
{
	json_t *t = NULL;
	int rc = set_paused(c, name, false);
	if (rc)
		return rc;
	rc = wait_for(c, name, c->wait ? is_ready : running_again, false, &t);
	if (rc < 0)
		return die(c, "tenant %s: %s", name, strerror(-rc));
	if (!quiet)
		print_created(c, t, "running");
	json_decref(t);
	return 0;
}

static int do_start(struct cli *c)
{
	long st = 0;
	json_t *resp = NULL, *t;
	size_t i;
	int started = 0, status = 0;
	if (!c->all)
		return c->name ? start_one(c, c->name, false)
			       : die(c, "usage: kubicle start NAME | --all") + 1;
	int rc = hostapi_call(c->h, "GET", OP_TENANTS, NULL, &st, &resp);
	if (rc < 0 || st != 200) {
		json_decref(resp);
		return die(c, "listing tenants: %ld", st);
	}
	json_array_foreach (json_object_get(resp, "items"), i, t) {
		if (!json_is_true(json_object_get(json_object_get(t, "spec"), "paused")))
			continue;
		if (start_one(c, sget(json_object_get(t, "metadata"), "name"), true) != 0)
			status = 1;
		else
			started++;
	}
	json_decref(resp);
	if (c->json)
		print_json(json_pack("{s:i}", "started", started));
	else
		printf("%d tenant(s) started\n", started);
	return status;
}

static int do_delete(struct cli *c)
{
	char path[512];
	long st = 0;
	json_t *resp = NULL;
	if (!c->name)
		return die(c, "usage: kubicle delete NAME --in-cluster [--ignore-not-found]") + 1;
	snprintf(path, sizeof(path), OP_TENANTS "/%s", c->name);
	int rc = hostapi_call(c->h, "DELETE", path, NULL, &st, &resp);
	json_decref(resp);
	if (rc < 0)
		return die(c, "host: %s", strerror(-rc));
	if (st == 404) {
		if (!c->ignore_missing)
			return die(c, "tenant %s not found", c->name);
		if (c->json)
			print_json(json_pack("{s:s,s:b}", "name", c->name, "deleted", false));
		return 0;
	}
	if (st != 200 && st != 202)
		return die(c, "deleting %s: %ld", c->name, st);
	if (!c->no_wait && (rc = wait_for(c, c->name, NULL, true, NULL)) < 0)
		return die(c, "tenant %s: its host objects are not gone yet: %s", c->name,
			   strerror(-rc));
	if (c->json)
		print_json(json_pack("{s:s,s:b}", "name", c->name, "deleted", true));
	else
		printf("tenant %s deleted\n", c->name);
	return 0;
}

/* snapshot and restore have no in-cluster form: the store is a SQLite
 * file on the server pod's claim, and the host API reaches a pod's files
 * only through pods/exec, with a program in the image to copy them (it
 * holds `kubicle` alone, no shell, no tar) and an exec stream client here
 * (cmd/hostapi.h is request and answer only). What a user does instead is
 * the Kubernetes way for a volume's data (docs/operator.md). */
static int no_snapshot(const char *cmd)
{
	fprintf(stderr,
		"kubicle %s: no --in-cluster form: a Tenant's store is on its claim "
		"data-NAME-0 in its host namespace.\n"
		"  snapshot: kubicle stop NAME --in-cluster, then a VolumeSnapshot "
		"(snapshot.storage.k8s.io/v1) of that claim, then kubicle start NAME "
		"--in-cluster;\n"
		"  restore: kubicle stop NAME --in-cluster, the claim replaced by one of "
		"the same name with dataSource the VolumeSnapshot, kubicle start NAME "
		"--in-cluster (docs/operator.md)\n",
		cmd);
	return 2;
}

int cmd_incluster(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(struct cli *c);
	} cmds[] = {{"create", do_create}, {"list", do_list},   {"kubeconfig", do_kubeconfig},
		    {"stop", do_stop},     {"start", do_start}, {"delete", do_delete}};
	if (strcmp(argv[0], "snapshot") == 0 || strcmp(argv[0], "restore") == 0)
		return no_snapshot(argv[0]);
	struct cli c = {.cmd = argv[0], .spec = json_object()};
	int rc = parse(&c, argc, argv);
	for (size_t i = 0; rc == 0 && i < KB_ARRAY_SIZE(cmds); i++)
		if (strcmp(argv[0], cmds[i].name) == 0) {
			if ((rc = open_host(&c)) == 0)
				rc = cmds[i].fn(&c);
			break;
		}
	hostapi_close(c.h);
	json_decref(c.spec);
	return rc;
}
