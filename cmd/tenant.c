/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tenant lifecycle for platform teams and CI (tenant.h). A tenant is a
 * folder under $KUBICLE_HOME/tenants (home.h), a supervisor process that
 * keeps its `kubicle serve` running (supervise.c), and its objects on the
 * host cluster (hostsetup.c). The commands are idempotent where that makes
 * sense: create of a running tenant with the same name reports it, start of
 * a running one and stop of a stopped one do nothing, delete
 * --ignore-not-found of a missing one succeeds.
 */
#include "cmd/tenant.h"
#include "cmd/usage.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>
#include <uv.h>

#include "cmd/home.h"
#include "cmd/hostapi.h"
#include "cmd/hostquota.h"
#include "cmd/hostsetup.h"
#include "cmd/supervise.h"
#include "cmd/users.h"
#include "lib/addrfilter.h"
#include "lib/json.h"
#include "lib/pki.h"
#include "lib/util.h"
#include "policies/policies.h"
#include "store/store.h"
#include "syncer/syncer.h"

#define SNAPSHOT_KEY "kubicle.tenant"

static bool json_out;

static int die(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int die(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "kubicle %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static bool set_output(const char *v)
{
	if (strcmp(v, "json") == 0)
		json_out = true;
	else if (strcmp(v, "text") == 0 || strcmp(v, "wide") == 0)
		json_out = false;
	else
		return false;
	return true;
}

static void print_json(json_t *o)
{
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (s)
		puts(s);
	free(s);
	json_decref(o);
}

static void endpoint(const struct tenant *t, char *buf, size_t len)
{
	int port = home_port(t);
	const char *colon = strrchr(t->listen, ':');
	char host[128];
	snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - t->listen) : 0, t->listen);
	if (!host[0] || strcmp(host, "0.0.0.0") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	if (port)
		snprintf(buf, len, "https://%s:%d", host, port);
	else
		snprintf(buf, len, "-");
}

static void rfc3339_or_empty(time_t t, char *buf, size_t len)
{
	if (t)
		kb_time_rfc3339(t, buf, len);
	else
		buf[0] = '\0';
}

/* ---- processes ---------------------------------------------------------------------- */

static void wait_gone(int pid, int ms)
{
	for (int i = 0; i < ms / 10 && home_pid_alive(pid); i++)
		usleep(10000);
}

/* Stops the supervisor (which stops the server) and any server left over. */
static void stop_processes(const struct tenant *t)
{
	int sup = 0;
	if (home_supervisor_alive(t, &sup) && sup > 0) {
		kill(sup, SIGTERM);
		/* its lock goes when it exits, zombie or not */
		for (int i = 0; i < 1500 && home_supervisor_alive(t, NULL); i++)
			usleep(10000);
		if (home_supervisor_alive(t, NULL))
			kill(sup, SIGKILL);
	}
	int srv = home_pid(t, "server.pid");
	if (srv > 0 && home_pid_alive(srv)) {
		kill(srv, SIGTERM);
		wait_gone(srv, 10000);
		if (home_pid_alive(srv))
			kill(srv, SIGKILL);
	}
}

static void tail_log(const struct tenant *t)
{
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	home_path(t, "server.log", path, sizeof(path));
	if (kb_read_file(path, &text, &len) < 0)
		return;
	const char *p = text + len;
	for (int lines = 0; p > text && lines < 8; p--)
		if (p[-1] == '\n' && p != text + len)
			lines++;
	fprintf(stderr, "--- last lines of %s ---\n%s", path, p);
	free(text);
}

/* Waits until the server listens (its kubeconfig is there) and, with
 * `readyz`, answers GET /readyz with the admin credential. */
static int wait_ready(const char *cmd, const struct tenant *t, bool readyz, unsigned timeout_s)
{
	char kc[PATH_MAX], failed[PATH_MAX], *why = NULL;
	hostapi_t *h = NULL; /* opened once the kubeconfig is there; kept */
	int rc = 0;
	home_path(t, "kubeconfig", kc, sizeof(kc));
	home_path(t, "failed", failed, sizeof(failed));
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0;; i++) {
		if (kb_read_file(failed, &why, NULL) == 0) {
			die(cmd, "tenant %s: %s", t->name, why);
			free(why);
			rc = -EIO;
			break;
		}
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		double el = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
		if (el > 1.0 && i % 50 == 0 && !home_supervisor_alive(t, NULL)) {
			die(cmd, "tenant %s: its supervisor is not running", t->name);
			rc = -ESRCH;
			break;
		}
		if (el > timeout_s) {
			die(cmd, "tenant %s did not answer within %u s", t->name, timeout_s);
			rc = -ETIMEDOUT;
			break;
		}
		if (access(kc, F_OK) == 0 && home_pid(t, "server.pid") > 0) {
			if (!readyz)
				return 0;
			long st = 0;
			if ((h || hostapi_open(kc, 2000, &h) == 0) &&
			    hostapi_call(h, "GET", "/readyz", NULL, &st, NULL) == 0 && st == 200) {
				hostapi_close(h);
				return 0;
			}
		}
		usleep(2000);
	}
	hostapi_close(h);
	tail_log(t);
	return rc;
}

/* ---- create / restore ---------------------------------------------------------------- */

struct create_args {
	const char *name;
	const char *snapshot; /* restore: the snapshot file */
	const char *host_kubeconfig, *host_namespace, *queue, *policy, *scheduler;
	const char *floor; /* --floor, or NULL: baseline (never from a snapshot) */
	const char *listen, *advertise;
	long gpus;
	long ttl;
	bool wait;
	unsigned timeout_s;
	bool set_gpus, set_policy, set_scheduler;
	bool shared_ns;    /* --shared-host-namespace: tenants that trust each other */
	char limits[4096]; /* hostquota.h's settings given (--max-pods ...), JSON */
	const char *egress[TENANT_EGRESS_MAX]; /* --egress-allow */
	size_t negress;
};

/* One of hostquota_options into a->limits. 0, or 2 after the error. */
static int limit_flag(const char *cmd, struct create_args *a, const char *flag, const char *v)
{
	char err[512] = "out of memory";
	json_t *o = a->limits[0] ? json_loads(a->limits, 0, NULL) : json_object();
	int rc = o ? hostquota_flag(o, flag, v, err, sizeof(err)) : -ENOMEM;
	char *text = rc == 0 ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (rc == 0 && (!text || strlen(text) >= sizeof(a->limits)))
		rc = kb_errf(err, sizeof(err), -E2BIG, "too many host limits");
	if (rc == 0)
		snprintf(a->limits, sizeof(a->limits), "%s", text);
	free(text);
	return rc < 0 ? die(cmd, "%s", err) + 1 : 0;
}

static int abs_path(const char *p, char *buf, size_t len)
{
	char *r = realpath(p, NULL);
	if (!r)
		return -errno;
	int n = snprintf(buf, len, "%s", r);
	free(r);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int parse_create(const char *cmd, int argc, char **argv, struct create_args *a)
{
	static const struct option base[] = {
	    {"host-kubeconfig", required_argument, NULL, 'K'},
	    {"host-namespace", required_argument, NULL, 'N'},
	    {"queue", required_argument, NULL, 'Q'},
	    {"gpus", required_argument, NULL, 'g'},
	    {"policy", required_argument, NULL, 'p'},
	    {"floor", required_argument, NULL, 'F'},
	    {"scheduler", required_argument, NULL, 'S'},
	    {"ttl", required_argument, NULL, 't'},
	    {"wait", no_argument, NULL, 'w'},
	    {"timeout", required_argument, NULL, 'T'},
	    {"listen", required_argument, NULL, 'l'},
	    {"advertise-address", required_argument, NULL, 'a'},
	    {"output", required_argument, NULL, 'o'},
	    {"shared-host-namespace", no_argument, NULL, 'H'},
	    {"egress-allow", required_argument, NULL, 'e'},
	};
	struct option opts[KB_ARRAY_SIZE(base) + 24];
	size_t no = 0;
	for (size_t i = 0; i < KB_ARRAY_SIZE(base); i++)
		opts[no++] = base[i];
	for (size_t i = 0; hostquota_options[i].name && no + 1 < KB_ARRAY_SIZE(opts); i++)
		opts[no++] = hostquota_options[i];
	opts[no] = (struct option){NULL, 0, NULL, 0};
	memset(a, 0, sizeof(*a));
	a->gpus = -1;
	a->timeout_s = 30;
	a->host_kubeconfig = getenv("KUBICLE_HOST_KUBECONFIG");
	int c, li = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, &li)) != -1) {
		char *end;
		switch (c) {
		case HOSTQUOTA_OPT:
			if (limit_flag(cmd, a, opts[li].name, optarg))
				return 2;
			break;
		case 'K': a->host_kubeconfig = optarg; break;
		case 'N': a->host_namespace = optarg; break;
		case 'Q': a->queue = optarg; break;
		case 'g':
			a->gpus = strtol(optarg, &end, 10);
			if (*end || a->gpus < -1)
				return die(cmd, "--gpus wants a whole number (-1: unlimited)") + 1;
			a->set_gpus = true;
			break;
		case 'p':
			a->policy = optarg;
			a->set_policy = true;
			break;
		case 'F':
			if (policy_pss_parse(optarg) < 0)
				return die(cmd,
					   "--floor takes privileged, baseline or restricted") +
				       1;
			a->floor = optarg;
			break;
		case 'S':
			a->scheduler = optarg;
			a->set_scheduler = true;
			break;
		case 't':
			if ((a->ttl = users_parse_duration(optarg)) <= 0)
				return die(cmd, "bad --ttl %s (e.g. 30m, 2h, 1d)", optarg) + 1;
			break;
		case 'w': a->wait = true; break;
		case 'H': a->shared_ns = true; break;
		case 'T': a->timeout_s = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'l': a->listen = optarg; break;
		case 'a': a->advertise = optarg; break;
		case 'e': {
			struct kb_cidr cidr;
			if (kb_cidr_parse(optarg, &cidr) < 0)
				return die(cmd,
					   "bad --egress-allow %s (want an IP prefix, e.g. "
					   "10.0.0.0/8)",
					   optarg) +
				       1;
			if (a->negress == TENANT_EGRESS_MAX)
				return die(cmd, "at most %d --egress-allow", TENANT_EGRESS_MAX) + 1;
			a->egress[a->negress++] = optarg;
			break;
		}
		case 'o':
			if (!set_output(optarg))
				return die(cmd, "-o takes json or text") + 1;
			break;
		default: return 2;
		}
	}
	int need = strcmp(cmd, "restore") == 0 ? 2 : 1;
	if (argc - optind != need)
		return die(cmd, strcmp(cmd, "restore") == 0 ? "usage: kubicle restore NAME FILE ..."
							    : "usage: kubicle create NAME ...") +
		       1;
	a->name = argv[optind];
	if (need == 2)
		a->snapshot = argv[optind + 1];
	const char *bad = home_check_name(a->name);
	if (bad)
		return die(cmd, "invalid name \"%s\": %s", a->name, bad) + 1;
	return 0;
}

/* Settings recorded in a snapshot fill what the command line leaves out. */
static void snapshot_defaults(struct create_args *a, json_t *rec, struct tenant *t)
{
	const char *s;
	if (!rec)
		return;
	if (!a->set_policy && (s = json_string_value(json_object_get(rec, "policy"))) && *s)
		snprintf(t->policy, sizeof(t->policy), "%s", s);
	if (!a->set_scheduler && (s = json_string_value(json_object_get(rec, "scheduler"))) && *s)
		snprintf(t->scheduler, sizeof(t->scheduler), "%s", s);
	if (!a->set_gpus && json_is_integer(json_object_get(rec, "gpus")))
		t->gpus = (long)json_integer_value(json_object_get(rec, "gpus"));
	char *lim = !a->limits[0] && json_is_object(json_object_get(rec, "hostLimits"))
			? json_dumps(json_object_get(rec, "hostLimits"), JSON_COMPACT)
			: NULL;
	if (lim && strlen(lim) < sizeof(t->host_limits))
		snprintf(t->host_limits, sizeof(t->host_limits), "%s", lim);
	free(lim);
}

static int fill_tenant(const char *cmd, struct create_args *a, json_t *rec, struct tenant *t)
{
	int rc;
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s", a->name);
	if ((rc = home_tenant_dir(a->name, t->dir, sizeof(t->dir))) < 0)
		return die(cmd, "tenant folder: %s", strerror(-rc));
	snprintf(t->queue, sizeof(t->queue), "%s", a->queue ? a->queue : a->name);
	snprintf(t->scheduler, sizeof(t->scheduler), "%s", a->scheduler ? a->scheduler : "kai");
	snprintf(t->policy, sizeof(t->policy), "%s", a->policy ? a->policy : "");
	snprintf(t->floor, sizeof(t->floor), "%s", a->floor ? a->floor : "");
	t->gpus = a->gpus;
	snprintf(t->host_limits, sizeof(t->host_limits), "%s", a->limits);
	snapshot_defaults(a, rec, t);
	snprintf(t->listen, sizeof(t->listen), "%s", a->listen ? a->listen : "127.0.0.1:0");
	snprintf(t->advertise, sizeof(t->advertise), "%s", a->advertise ? a->advertise : "");
	for (size_t i = 0; i < a->negress; i++) {
		size_t used = strlen(t->egress_allow);
		snprintf(t->egress_allow + used, sizeof(t->egress_allow) - used, "%s%s",
			 used ? "," : "", a->egress[i]);
	}
	if (a->host_kubeconfig && *a->host_kubeconfig &&
	    (rc = abs_path(a->host_kubeconfig, t->host_kubeconfig, sizeof(t->host_kubeconfig))) < 0)
		return die(cmd, "--host-kubeconfig %s: %s", a->host_kubeconfig, strerror(-rc));
	if (a->host_namespace)
		snprintf(t->host_namespace, sizeof(t->host_namespace), "%s", a->host_namespace);
	else
		snprintf(t->host_namespace, sizeof(t->host_namespace), "kubicle-%s", a->name);
	if (t->policy[0] && policy_ref_is_file(t->policy)) {
		char p[sizeof(t->policy)];
		if ((rc = abs_path(t->policy, p, sizeof(p))) < 0)
			return die(cmd, "--policy %s: %s", t->policy, strerror(-rc));
		snprintf(t->policy, sizeof(t->policy), "%s", p);
	}
	if (!syncer_scheduler_known(t->scheduler))
		return die(cmd, "--scheduler takes kai, kueue, volcano, hami or none");
	if (t->policy[0]) {
		policy_t *p = NULL;
		char err[512];
		if (policy_load(t->policy, &p, err, sizeof(err)) < 0)
			return die(cmd, "%s", err);
		policy_free(p);
	}
	time_t now = time(NULL);
	t->created = now;
	t->expires = a->ttl > 0 ? now + a->ttl : 0;
	return 0;
}

/* The host floor the tenant's pods are held to: "none" when it has no host
 * (nothing reaches one), else --floor or the default baseline. */
static const char *floor_of(const struct tenant *t)
{
	if (!t->host_kubeconfig[0])
		return "none";
	return t->floor[0] ? t->floor : "baseline";
}

static json_t *tenant_json(const struct tenant *t, const char *state)
{
	char ep[200], kc[PATH_MAX], exp[40], created[40];
	endpoint(t, ep, sizeof(ep));
	home_path(t, "kubeconfig", kc, sizeof(kc));
	rfc3339_or_empty(t->expires, exp, sizeof(exp));
	rfc3339_or_empty(t->created, created, sizeof(created));
	json_t *o = json_pack(
	    "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I}", "name", t->name, "state", state, "endpoint",
	    ep, "kubeconfig", kc, "queue", t->queue, "scheduler", t->scheduler, "policy",
	    t->policy[0] ? t->policy : "none", "created", created, "gpus", (json_int_t)t->gpus);
	json_object_set_new(o, "expires", t->expires ? json_string(exp) : json_null());
	json_object_set_new(o, "floor", json_string(floor_of(t)));
	json_object_set_new(o, "hostNamespace",
			    t->host_kubeconfig[0] ? json_string(t->host_namespace) : json_null());
	json_object_set_new(o, "hostLimits",
			    t->host_kubeconfig[0] ? hostquota_settings(t) : json_null());
	return o;
}

static void print_created(const struct tenant *t, const char *state)
{
	if (json_out) {
		print_json(tenant_json(t, state));
		return;
	}
	char ep[200], kc[PATH_MAX];
	endpoint(t, ep, sizeof(ep));
	home_path(t, "kubeconfig", kc, sizeof(kc));
	printf("tenant %s is %s at %s\nkubeconfig: %s\n", t->name, state, ep, kc);
	if (t->host_kubeconfig[0])
		printf("policy: %s; host floor: %s (policies/README.md)\n",
		       t->policy[0] ? t->policy : "none (the host floor alone)", floor_of(t));
}

/* SQLite online backup from one file to another: a consistent copy even
 * while a server writes the source. */
static int backup_db(const char *from, const char *to, char *err, size_t len)
{
	sqlite3 *src = NULL, *dst = NULL;
	int rc = sqlite3_open_v2(from, &src, SQLITE_OPEN_READONLY, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_open_v2(to, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_busy_timeout(src, 5000);
		sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
		if (!b) {
			rc = sqlite3_errcode(dst);
		} else {
			do {
				rc = sqlite3_backup_step(b, -1);
				if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
					sqlite3_sleep(5);
			} while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
			rc = sqlite3_backup_finish(b);
		}
	}
	if (rc != SQLITE_OK)
		snprintf(err, len, "%s", sqlite3_errstr(rc));
	sqlite3_close(src);
	sqlite3_close(dst);
	return rc == SQLITE_OK ? 0 : -EIO;
}

/* The tenant record a snapshot carries (meta table), or NULL; -EINVAL when
 * the file is not a Kubicle store. */
static int snapshot_record(const char *file, json_t **rec)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	*rec = NULL;
	int rc = sqlite3_open_v2(file, &db, SQLITE_OPEN_READONLY, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db,
					"SELECT (SELECT count(*) FROM objects),"
					" (SELECT value FROM meta WHERE key = '" SNAPSHOT_KEY "')",
					-1, &st, NULL);
	if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 1);
		if (v)
			*rec = json_loads((const char *)v, 0, NULL);
		rc = 0;
	} else {
		rc = -EINVAL;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

static int park_pods(const struct tenant *t, size_t *parked);

/* Undoes a create that failed half-way: host objects made, the folder. */
static void undo_create(const struct tenant *t)
{
	stop_processes(t);
	if (t->host_kubeconfig[0]) {
		hostapi_t *h = NULL;
		char err[512];
		if (hostapi_open(t->host_kubeconfig, 0, &h) == 0)
			host_teardown(h, t, false, 0, err, sizeof(err));
		hostapi_close(h);
	}
	home_rmtree(t->dir);
}

/* host_setup (and, with `token`, host_issue_token) with the platform's
 * kubeconfig; 0 or a negative errno with err set. timeout_ms 0: 10 s. */
static int host_objects(struct tenant *t, unsigned timeout_ms, bool token, char *err, size_t len)
{
	hostapi_t *h = NULL;
	int rc = hostapi_open(t->host_kubeconfig, timeout_ms, &h);
	if (rc < 0) {
		snprintf(err, len, "host kubeconfig %s: %s", t->host_kubeconfig, strerror(-rc));
		return rc;
	}
	rc = host_setup(h, t, err, len);
	if (rc == 0 && token)
		rc = host_issue_token(h, t, err, len);
	hostapi_close(h);
	return rc;
}

/*
 * One tenant per host namespace: a syncer's host Role covers its whole
 * namespace (Kubernetes RBAC cannot scope it by label), so two tenants in
 * one namespace could read each other's Secrets. A new tenant's namespace
 * must not be another tenant's of this home, nor hold another tenant's
 * objects on the host, unless the platform says the tenants trust each
 * other (--shared-host-namespace). 0, or 1 after the error.
 */
static int check_host_namespace(const char *cmd, const struct tenant *t)
{
	static const char hint[] = "(--shared-host-namespace shares it: the tenants are then not "
				   "isolated, each can read the other's Secrets)";
	char **names = NULL, other[TENANT_NAME_MAX + 64] = "", err[3072];
	size_t n = 0;
	if (home_list(&names, &n) == 0) {
		for (size_t i = 0; i < n && !other[0]; i++) {
			struct tenant o;
			if (strcmp(names[i], t->name) != 0 && home_load(names[i], &o) == 0 &&
			    o.host_kubeconfig[0] &&
			    strcmp(o.host_namespace, t->host_namespace) == 0)
				snprintf(other, sizeof(other), "%s", o.name);
		}
		home_free_names(names, n);
	}
	if (other[0])
		return die(cmd, "host namespace %s is tenant %s's host namespace %s",
			   t->host_namespace, other, hint);
	hostapi_t *h = NULL;
	int rc = hostapi_open(t->host_kubeconfig, 0, &h);
	if (rc < 0)
		return die(cmd, "host kubeconfig %s: %s", t->host_kubeconfig, strerror(-rc));
	rc = host_namespace_user(h, t, other, sizeof(other), err, sizeof(err));
	hostapi_close(h);
	if (rc < 0)
		return die(cmd, "%s", err);
	if (other[0])
		return die(cmd, "host namespace %s holds objects of tenant %s %s",
			   t->host_namespace, other, hint);
	return 0;
}

static int setup_host(const char *cmd, struct tenant *t)
{
	char err[3072];
	return host_objects(t, 0, true, err, sizeof(err)) < 0 ? die(cmd, "%s", err) : 0;
}

/* Brings an existing tenant's host objects up to this version (a Role made
 * by an older Kubicle lacks newer rules, e.g. pods/exec) and re-creates any
 * deleted. A host that does not answer only warns: the server starts anyway
 * and its syncer retries the host. */
static void refresh_host(const char *cmd, struct tenant *t)
{
	if (!t->host_kubeconfig[0])
		return;
	char err[3072];
	bool ns = t->made_namespace, queue = t->made_queue;
	int rc = host_objects(t, 5000, false, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "kubicle %s: %s: host objects not refreshed: %s\n", cmd, t->name,
			err);
	else if ((ns != t->made_namespace || queue != t->made_queue) && home_save(t) < 0)
		fprintf(stderr, "kubicle %s: %s: cannot write tenant.json\n", cmd, t->name);
}

/* An existing tenant asked for again: fine when it runs (idempotent). */
static int create_existing(const char *cmd, const char *name, bool wait, unsigned timeout_s)
{
	struct tenant t;
	if (home_load(name, &t) < 0)
		return die(cmd, "tenant %s is being created by another command", name);
	if (t.stopped)
		return die(cmd, "tenant %s exists and is stopped: kubicle start %s", name, name);
	refresh_host(cmd, &t);
	if (!home_supervisor_alive(&t, NULL) && supervise_spawn(&t) < 0)
		return die(cmd, "tenant %s: cannot start its supervisor", name);
	if (wait_ready(cmd, &t, wait, timeout_s) < 0)
		return 1;
	print_created(&t, "running");
	return 0;
}

static int do_create(const char *cmd, int argc, char **argv)
{
	struct create_args a;
	struct tenant t;
	json_t *rec = NULL;
	char home[PATH_MAX], path[PATH_MAX + 16], err[512];
	int rc = parse_create(cmd, argc, argv, &a);
	if (rc)
		return rc;
	if (a.snapshot && snapshot_record(a.snapshot, &rec) < 0)
		return die(cmd, "%s is not a Kubicle snapshot", a.snapshot);
	rc = fill_tenant(cmd, &a, rec, &t);
	json_decref(rec);
	if (rc)
		return rc;
	if ((rc = home_dir(home, sizeof(home))) < 0)
		return die(cmd, "home folder: %s", strerror(-rc));
	snprintf(path, sizeof(path), "%s/tenants", home);
	if ((mkdir(home, 0700) < 0 && errno != EEXIST) ||
	    (mkdir(path, 0700) < 0 && errno != EEXIST))
		return die(cmd, "cannot create %s: %s", path, strerror(errno));
	if (mkdir(t.dir, 0700) < 0) {
		if (errno != EEXIST)
			return die(cmd, "cannot create %s: %s", t.dir, strerror(errno));
		if (a.snapshot)
			return die(cmd, "tenant %s already exists", a.name);
		return create_existing(cmd, a.name, a.wait, a.timeout_s);
	}
	if (a.snapshot) {
		home_path(&t, "kubicle.db", path, sizeof(path));
		if (backup_db(a.snapshot, path, err, sizeof(err)) < 0) {
			home_rmtree(t.dir);
			return die(cmd, "restoring %s: %s", a.snapshot, err);
		}
		size_t parked;
		if ((rc = park_pods(&t, &parked)) < 0) {
			home_rmtree(t.dir);
			return die(cmd, "restoring %s: %s", a.snapshot, strerror(-rc));
		}
	}
	if (t.host_kubeconfig[0] && !a.shared_ns && check_host_namespace(cmd, &t)) {
		home_rmtree(t.dir);
		return 1;
	}
	if (t.host_kubeconfig[0] && setup_host(cmd, &t)) {
		undo_create(&t);
		return 1;
	}
	if ((rc = home_save(&t)) < 0 || (rc = supervise_spawn(&t)) < 0) {
		undo_create(&t);
		return die(cmd, "starting tenant %s: %s", t.name, strerror(-rc));
	}
	if (wait_ready(cmd, &t, a.wait, a.timeout_s) < 0) {
		undo_create(&t);
		return 1;
	}
	print_created(&t, "running");
	return 0;
}

int cmd_create(int argc, char **argv)
{
	return do_create("create", argc, argv);
}

int cmd_restore(int argc, char **argv)
{
	return do_create("restore", argc, argv);
}

/* ---- snapshot ------------------------------------------------------------------------ */

static int record_settings(const char *file, const struct tenant *t, char *err, size_t len)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I}", "name", t->name, "queue", t->queue,
			      "scheduler", t->scheduler, "policy", t->policy, "gpus",
			      (json_int_t)t->gpus, "snapshotAt", (json_int_t)time(NULL));
	if (o && t->host_limits[0])
		json_object_set_new(o, "hostLimits", json_loads(t->host_limits, 0, NULL));
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	int rc = sqlite3_open_v2(file, &db, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(
		    db, "INSERT OR REPLACE INTO meta(key, value) VALUES('" SNAPSHOT_KEY "', ?1)",
		    -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
	}
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		snprintf(err, len, "%s", sqlite3_errstr(rc));
	sqlite3_finalize(st);
	sqlite3_close(db);
	free(text);
	return rc == SQLITE_OK ? 0 : -EIO;
}

/* A snapshot of t's store (with its settings) at `file`, written beside it
 * and renamed into place. */
static int snapshot_to(const struct tenant *t, const char *file, char *err, size_t len)
{
	char db[PATH_MAX], tmp[PATH_MAX + 32];
	home_path(t, "kubicle.db", db, sizeof(db));
	snprintf(tmp, sizeof(tmp), "%s.tmp-%d", file, (int)getpid());
	unlink(tmp);
	if (backup_db(db, tmp, err, len) < 0 || record_settings(tmp, t, err, len) < 0) {
		unlink(tmp);
		return -EIO;
	}
	if (rename(tmp, file) < 0) {
		int e = errno;
		snprintf(err, len, "%s: %s", file, strerror(e));
		unlink(tmp);
		return -e;
	}
	return 0;
}

/* expired/: the newest EXPIRED_KEEP files stay (by mtime), older ones go. */
static void prune_expired(const char *dir)
{
	struct dirent **list;
	struct stat sb;
	char path[PATH_MAX];
	int n = scandir(dir, &list, NULL, NULL);
	time_t *mtimes = n > 0 ? calloc((size_t)n, sizeof(*mtimes)) : NULL;
	for (int i = 0; i < n && mtimes; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
		if (list[i]->d_name[0] != '.' && stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
			mtimes[i] = sb.st_mtime;
	}
	/* the EXPIRED_KEEP newest by mtime: count those newer than each */
	for (int i = 0; i < n && mtimes; i++) {
		if (!mtimes[i])
			continue;
		int newer = 0;
		for (int j = 0; j < n; j++)
			newer += mtimes[j] > mtimes[i] || (mtimes[j] == mtimes[i] && j < i);
		if (newer >= EXPIRED_KEEP) {
			snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
			unlink(path);
		}
	}
	for (int i = 0; i < n; i++)
		free(list[i]);
	if (n > 0)
		free(list);
	free(mtimes);
}

int tenant_keep_expired(const struct tenant *t, char *file, size_t len)
{
	char dir[PATH_MAX], stamp[32], err[512];
	time_t now = time(NULL);
	struct tm tm;
	int rc = home_dir(dir, sizeof(dir));
	if (rc < 0)
		return rc;
	size_t n = strlen(dir);
	snprintf(dir + n, sizeof(dir) - n, "/expired");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(file, len, "%s/%s-%s.db", dir, t->name, stamp);
	rc = snapshot_to(t, file, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "kubicle: keeping %s's store: %s\n", t->name, err);
		return rc;
	}
	prune_expired(dir);
	return 0;
}

int cmd_snapshot(int argc, char **argv)
{
	struct tenant t;
	char err[512];
	int ai = 1;
	for (int i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) &&
		    i + 1 < argc && set_output(argv[i + 1])) {
			i++;
			continue;
		}
		argv[ai++] = argv[i];
	}
	if (ai != 3) {
		fprintf(stderr, "usage: kubicle snapshot NAME FILE [-o json]\n");
		return 2;
	}
	if (home_load(argv[1], &t) < 0)
		return die("snapshot", "no tenant %s", argv[1]);
	if (snapshot_to(&t, argv[2], err, sizeof(err)) < 0)
		return die("snapshot", "%s: %s", argv[1], err);
	struct stat sb;
	stat(argv[2], &sb);
	if (json_out)
		print_json(json_pack("{s:s,s:s,s:I}", "name", t.name, "file", argv[2], "bytes",
				     (json_int_t)sb.st_size));
	else
		printf("snapshot of tenant %s written to %s (%lld bytes)\n", t.name, argv[2],
		       (long long)sb.st_size);
	return 0;
}

/* ---- start / stop ------------------------------------------------------------------- */

static int parse_name(const char *cmd, int argc, char **argv, const struct option *extra,
		      int (*on_opt)(int c, void *arg), void *arg, const char **name)
{
	struct option opts[8];
	size_t n = 0;
	for (; extra && extra[n].name && n < 6; n++)
		opts[n] = extra[n];
	opts[n++] = (struct option){"output", required_argument, NULL, 'o'};
	opts[n] = (struct option){NULL, 0, NULL, 0};
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		if (c == 'o') {
			if (!set_output(optarg))
				return die(cmd, "-o takes json or text") + 1;
		} else if (!on_opt || on_opt(c, arg) < 0) {
			return 2;
		}
	}
	*name = optind < argc ? argv[optind] : NULL;
	if (optind + 1 < argc)
		return die(cmd, "unexpected argument %s", argv[optind + 1]) + 1;
	return 0;
}

/*
 * The store side of a stop: the tenant's pods no longer run anywhere, so
 * those that were placed go back to Pending (no node; PodScheduled False,
 * reason TenantStopped) and the syncer queues them again at the next start;
 * pods being deleted are gone; mirrored host nodes are removed.
 */
static int park_pods(const struct tenant *t, size_t *parked)
{
	uv_loop_t loop;
	store_t *st = NULL;
	char path[PATH_MAX], now[40];
	struct store_opts so = {0};
	*parked = 0;
	home_path(t, "kubicle.db", path, sizeof(path));
	if (access(path, F_OK) < 0)
		return 0;
	uv_loop_init(&loop);
	int rc = store_open(&loop, path, &so, &st);
	if (rc < 0)
		goto out;
	kb_time_rfc3339(time(NULL), now, sizeof(now));
	struct store_list_req lr = {.res = "/pods"};
	struct store_list_result res;
	if ((rc = store_list(st, &lr, &res)) == 0) {
		size_t i;
		json_t *p;
		json_array_foreach (res.items, i, p) {
			json_t *md = json_object_get(p, "metadata");
			json_t *spec = json_object_get(p, "spec");
			const char *ns = json_string_value(json_object_get(md, "namespace"));
			const char *name = json_string_value(json_object_get(md, "name"));
			const char *phase = json_string_value(
			    json_object_get(json_object_get(p, "status"), "phase"));
			if (!ns || !name)
				continue;
			if (json_object_get(md, "deletionTimestamp")) {
				store_delete(st, "/pods", ns, name, 0, NULL, NULL);
				continue;
			}
			if (!json_string_length(json_object_get(spec, "nodeName")) ||
			    (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))))
				continue;
			json_object_del(spec, "nodeName");
			json_object_set_new(
			    p, "status",
			    json_pack(
				"{s:s,s:[{s:s,s:s,s:s,s:s,s:s}]}", "phase", "Pending", "conditions",
				"type", "PodScheduled", "status", "False", "reason",
				"TenantStopped", "message",
				"the tenant is stopped; the pod is queued again when it starts",
				"lastTransitionTime", now));
			if (store_update(st, "/pods", ns, name, p, 0, NULL) == 0)
				(*parked)++;
		}
		json_decref(res.items);
		free(res.next);
	}
	struct store_list_req nr = {.res = "/nodes"};
	if (store_list(st, &nr, &res) == 0) {
		size_t i;
		json_t *n;
		json_array_foreach (res.items, i, n) {
			json_t *md = json_object_get(n, "metadata");
			if (json_object_get(json_object_get(md, "annotations"),
					    "kubicle.dev/host-node"))
				store_delete(st, "/nodes", "",
					     json_string_value(json_object_get(md, "name")), 0,
					     NULL, NULL);
		}
		json_decref(res.items);
		free(res.next);
	}
	store_close(st);
	uv_run(&loop, UV_RUN_DEFAULT);
out:
	uv_loop_close(&loop);
	return rc;
}

int cmd_stop(int argc, char **argv)
{
	const char *name;
	struct tenant t;
	int rc = parse_name("stop", argc, argv, NULL, NULL, NULL, &name);
	if (rc)
		return rc;
	if (!name)
		return die("stop", "usage: kubicle stop NAME") + 1;
	if (home_load(name, &t) < 0)
		return die("stop", "no tenant %s", name);
	t.stopped = true;
	if ((rc = home_save(&t)) < 0)
		return die("stop", "%s: %s", name, strerror(-rc));
	stop_processes(&t);
	if (t.host_kubeconfig[0]) {
		hostapi_t *h = NULL;
		char err[1024];
		rc = hostapi_open(t.host_kubeconfig, 0, &h);
		if (rc == 0)
			rc = host_remove_pods(h, &t, err, sizeof(err));
		else
			snprintf(err, sizeof(err), "host kubeconfig: %s", strerror(-rc));
		hostapi_close(h);
		if (rc < 0)
			return die("stop", "tenant %s stopped, but its host pods remain: %s", name,
				   err);
	}
	size_t parked = 0;
	if ((rc = park_pods(&t, &parked)) < 0)
		return die("stop", "%s: store: %s", name, strerror(-rc));
	if (json_out)
		print_json(json_pack("{s:s,s:s,s:I}", "name", name, "state", "stopped",
				     "podsRequeued", (json_int_t)parked));
	else
		printf("tenant %s stopped (%zu pod(s) will be queued again at start)\n", name,
		       parked);
	return 0;
}

struct start_opts {
	bool all, wait;
	unsigned timeout_s;
};

static int start_opt(int c, void *arg)
{
	struct start_opts *o = arg;
	switch (c) {
	case 'A': o->all = true; return 0;
	case 'w': o->wait = true; return 0;
	case 'T': o->timeout_s = (unsigned)strtoul(optarg, NULL, 10); return 0;
	default: return -1;
	}
}

static bool expired(const struct tenant *t)
{
	/* counted while supervised, not by the calendar (supervise.h) */
	return t->expires && supervise_ttl_left(t) <= 0;
}

static int start_one(struct tenant *t, const struct start_opts *o, bool quiet)
{
	if (expired(t)) {
		char kept[PATH_MAX];
		if (tenant_keep_expired(t, kept, sizeof(kept)) < 0)
			return die("start",
				   "tenant %s expired; not deleted: its store could not be kept",
				   t->name);
		if (!quiet)
			fprintf(
			    stderr,
			    "kubicle start: tenant %s expired: deleting it (its store is kept in "
			    "%s: kubicle restore NAME FILE)\n",
			    t->name, kept);
		return tenant_destroy(t, true, true, 120) < 0 ? 1 : 0;
	}
	refresh_host("start", t);
	if (t->stopped) {
		t->stopped = false;
		if (home_save(t) < 0)
			return die("start", "%s: cannot write tenant.json", t->name);
	}
	if (!home_supervisor_alive(t, NULL)) {
		char failed[PATH_MAX];
		home_path(t, "failed", failed, sizeof(failed));
		unlink(failed);
		if (supervise_spawn(t) < 0)
			return die("start", "%s: cannot start its supervisor", t->name);
	}
	if (wait_ready("start", t, o->wait, o->timeout_s) < 0)
		return 1;
	if (!quiet)
		print_created(t, "running");
	return 0;
}

int cmd_start(int argc, char **argv)
{
	static const struct option extra[] = {{"all", no_argument, NULL, 'A'},
					      {"wait", no_argument, NULL, 'w'},
					      {"timeout", required_argument, NULL, 'T'},
					      {NULL, 0, NULL, 0}};
	struct start_opts o = {.timeout_s = 30};
	const char *name;
	struct tenant t;
	int rc = parse_name("start", argc, argv, extra, start_opt, &o, &name);
	if (rc)
		return rc;
	if (!o.all) {
		if (!name)
			return die("start", "usage: kubicle start NAME | --all") + 1;
		if (home_load(name, &t) < 0)
			return die("start", "no tenant %s", name);
		return start_one(&t, &o, false);
	}
	/* --all: every tenant that should run and does not (after a reboot) */
	char **names;
	size_t n;
	if ((rc = home_list(&names, &n)) < 0)
		return die("start", "%s", strerror(-rc));
	int status = 0, started = 0;
	for (size_t i = 0; i < n; i++) {
		if (home_load(names[i], &t) < 0 || (t.stopped && !expired(&t)) ||
		    home_supervisor_alive(&t, NULL))
			continue;
		if (start_one(&t, &o, true) != 0)
			status = 1;
		else
			started++;
	}
	home_free_names(names, n);
	if (!json_out)
		printf("%d tenant(s) started\n", started);
	else
		print_json(json_pack("{s:i}", "started", started));
	return status;
}

/* ---- delete ------------------------------------------------------------------------- */

int tenant_destroy(const struct tenant *t, bool kill_processes, bool wait, unsigned timeout_s)
{
	int rc = 0;
	if (kill_processes)
		stop_processes(t);
	if (t->host_kubeconfig[0]) {
		hostapi_t *h = NULL;
		char err[3072];
		rc = hostapi_open(t->host_kubeconfig, 0, &h);
		if (rc == 0)
			rc = host_teardown(h, t, wait, timeout_s, err, sizeof(err));
		else
			snprintf(err, sizeof(err), "host kubeconfig %s: %s", t->host_kubeconfig,
				 strerror(-rc));
		hostapi_close(h);
		if (rc < 0) {
			fprintf(stderr, "kubicle delete: tenant %s: %s\n", t->name, err);
			return rc;
		}
	}
	rc = home_rmtree(t->dir);
	if (rc < 0)
		fprintf(stderr, "kubicle delete: removing %s: %s\n", t->dir, strerror(-rc));
	return rc;
}

struct delete_opts {
	bool ignore_missing, no_wait;
	unsigned timeout_s;
};

static int delete_opt(int c, void *arg)
{
	struct delete_opts *o = arg;
	switch (c) {
	case 'i': o->ignore_missing = true; return 0;
	case 'W': o->no_wait = true; return 0;
	case 'T': o->timeout_s = (unsigned)strtoul(optarg, NULL, 10); return 0;
	default: return -1;
	}
}

int cmd_delete(int argc, char **argv)
{
	static const struct option extra[] = {{"ignore-not-found", no_argument, NULL, 'i'},
					      {"no-wait", no_argument, NULL, 'W'},
					      {"timeout", required_argument, NULL, 'T'},
					      {NULL, 0, NULL, 0}};
	struct delete_opts o = {.timeout_s = 60};
	const char *name = NULL;
	struct tenant t;
	int rc = parse_name("delete", argc, argv, extra, delete_opt, &o, &name);
	if (rc)
		return rc;
	if (!name)
		return die("delete", "usage: kubicle delete NAME [--ignore-not-found]") + 1;
	if ((rc = home_load(name, &t)) == -ENOENT || rc == -EINVAL) {
		char dir[PATH_MAX];
		if (rc == -EINVAL ||
		    (home_tenant_dir(name, dir, sizeof(dir)) == 0 && access(dir, F_OK) == 0)) {
			/* a folder without a readable tenant.json: a create that died */
			if (home_tenant_dir(name, dir, sizeof(dir)) == 0)
				home_rmtree(dir);
		} else if (!o.ignore_missing) {
			return die("delete", "tenant %s not found", name);
		}
		if (json_out)
			print_json(json_pack("{s:s,s:b}", "name", name, "deleted", false));
		return 0;
	}
	if (rc < 0)
		return die("delete", "%s: %s", name, strerror(-rc));
	if (tenant_destroy(&t, true, !o.no_wait, o.timeout_s) < 0)
		return 1;
	if (json_out)
		print_json(json_pack("{s:s,s:b}", "name", name, "deleted", true));
	else
		printf("tenant %s deleted\n", name);
	return 0;
}

/* ---- list --------------------------------------------------------------------------- */

struct usage {
	long pods;
	int64_t gpu_milli;
};

/* The stored pods' texts: a store of schema 2 keeps an object's data in
 * the event row its key points at (store/store.c); one not opened since
 * (schema 1) in the key's row. */
static const char *pods_sql(sqlite3 *db)
{
	sqlite3_stmt *v = NULL;
	int version = 0;
	sqlite3_busy_timeout(db, 1000);
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &v, NULL) == SQLITE_OK &&
	    sqlite3_step(v) == SQLITE_ROW)
		version = sqlite3_column_int(v, 0);
	sqlite3_finalize(v);
	if (version == 1)
		return "SELECT data FROM objects WHERE res = '/pods'";
	return "SELECT e.data FROM objects o CROSS JOIN events e ON e.rev = o.rev"
	       " WHERE o.res = '/pods'";
}

/* Pods and GPUs in use, read from the store directly (read-only; works
 * whether or not the server runs). */
static void store_usage(const struct tenant *t, const policy_t *pol, struct usage *u)
{
	char path[PATH_MAX];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	memset(u, 0, sizeof(*u));
	home_path(t, "kubicle.db", path, sizeof(path));
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, pods_sql(db), -1, &st, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		u->pods = -1;
		return;
	}
	sqlite3_busy_timeout(db, 1000);
	struct policy_usage pu = {0};
	while (sqlite3_step(st) == SQLITE_ROW) {
		json_t *pod = kb_json_loadb((const char *)sqlite3_column_blob(st, 0),
					    (size_t)sqlite3_column_bytes(st, 0), 0, NULL);
		const char *phase =
		    json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
		if (pod && !(phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))) {
			u->pods++;
			if (pol)
				policy_pod_usage(pol, pod, &pu);
		}
		json_decref(pod);
	}
	u->gpu_milli = pu.gpu_milli;
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static const char *state_of(const struct tenant *t)
{
	char failed[PATH_MAX];
	home_path(t, "failed", failed, sizeof(failed));
	if (access(failed, F_OK) == 0)
		return "Failed";
	if (t->stopped)
		return "Stopped";
	if (!home_supervisor_alive(t, NULL))
		return "Dead";
	return home_pid(t, "server.pid") > 0 ? "Running" : "Restarting";
}

static void gpu_text(int64_t milli, char *buf, size_t len)
{
	if (milli % 1000 == 0)
		snprintf(buf, len, "%lld", (long long)(milli / 1000));
	else
		snprintf(buf, len, "%.2f", (double)milli / 1000.0);
}

int cmd_list(int argc, char **argv)
{
	const char *name;
	int rc = parse_name("list", argc, argv, NULL, NULL, NULL, &name);
	if (rc)
		return rc;
	size_t shown = 0;
	char **names;
	size_t n;
	if ((rc = home_list(&names, &n)) < 0)
		return die("list", "%s", strerror(-rc));
	policy_t *neutral = NULL;
	char err[256];
	policy_parse("name: none\n", 11, "none", &neutral, err, sizeof(err));
	json_t *items = json_array();
	if (!json_out)
		printf("%-20s %-10s %-24s %-14s %-10s %-10s %5s %5s %10s %6s %8s\n", "NAME",
		       "STATE", "ENDPOINT", "QUEUE", "POLICY", "FLOOR", "PODS", "GPUS", "GPU-HOURS",
		       "AGE", "TTL");
	time_t now = time(NULL);
	for (size_t i = 0; i < n; i++) {
		struct tenant t;
		if ((name && strcmp(name, names[i]) != 0) || home_load(names[i], &t) < 0)
			continue;
		shown++;
		policy_t *pol = NULL;
		if (t.policy[0] && policy_load(t.policy, &pol, err, sizeof(err)) < 0)
			pol = NULL;
		struct usage u;
		store_usage(&t, pol ? pol : neutral, &u);
		policy_free(pol);
		const char *state = state_of(&t);
		char ep[200], age[32], left[32] = "-", gpus[32];
		endpoint(&t, ep, sizeof(ep));
		users_format_duration((long)(now - t.created), age, sizeof(age));
		long ttl_left = supervise_ttl_left(&t);
		if (t.expires)
			users_format_duration(ttl_left, left, sizeof(left));
		gpu_text(u.gpu_milli, gpus, sizeof(gpus));
		/* GPU-hours this month, from its ledger (docs/finops.md) */
		char db[2100];
		double hours = 0;
		home_path(&t, "kubicle.db", db, sizeof(db));
		usage_gpu_hours(db, usage_month_start((int64_t)now), (int64_t)now, &hours);
		if (json_out) {
			json_t *o = tenant_json(&t, state);
			json_object_set_new(o, "pods", json_integer(u.pods));
			json_object_set_new(o, "gpusInUse",
					    json_real((double)u.gpu_milli / 1000.0));
			json_object_set_new(o, "gpuHoursThisMonth", json_real(hours));
			json_object_set_new(o, "ageSeconds",
					    json_integer((json_int_t)(now - t.created)));
			json_object_set_new(o, "secondsLeft",
					    t.expires ? json_integer((json_int_t)ttl_left)
						      : json_null());
			json_array_append_new(items, o);
		} else {
			printf("%-20s %-10s %-24s %-14s %-10s %-10s %5ld %5s %10.2f %6s %8s\n",
			       t.name, state, ep, t.queue[0] ? t.queue : "-",
			       t.policy[0] ? t.policy : "none", floor_of(&t), u.pods, gpus, hours,
			       age, left);
		}
	}
	policy_free(neutral);
	home_free_names(names, n);
	if (json_out)
		print_json(json_pack("{s:s,s:s,s:o}", "apiVersion", "kubicle.dev/v1", "kind",
				     "TenantList", "items", items));
	else
		json_decref(items);
	if (name && !shown)
		return die("list", "no tenant %s", name);
	return 0;
}

/* ---- kubeconfig NAME ------------------------------------------------------------------- */

/* A kubeconfig as it is (YAML), or with -o json as JSON (kubectl reads
 * both). */
static void print_kubeconfig(const char *text)
{
	if (!json_out) {
		fputs(text, stdout);
		return;
	}
	json_t *o = kb_yaml_load(text, strlen(text), NULL, 0);
	if (o)
		print_json(o);
}

int cmd_tenant_kubeconfig(int argc, char **argv)
{
	struct tenant t;
	const char *name = argv[1];
	if (home_load(name, &t) < 0)
		return die("kubeconfig", "no tenant %s", name);
	bool user = false;
	int n = 0;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--user") == 0 || strncmp(argv[i], "--user=", 7) == 0)
			user = true;
		if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) &&
		    i + 1 < argc) {
			if (!set_output(argv[i + 1]))
				return die("kubeconfig", "-o takes json or text") + 1;
			i++;
			continue;
		}
		argv[2 + n++] = argv[i];
	}
	argc = 2 + n;
	if (!user) {
		char path[PATH_MAX], *text = NULL;
		home_path(&t, "kubeconfig", path, sizeof(path));
		if (kb_read_file(path, &text, NULL) < 0)
			return die("kubeconfig", "tenant %s has not started yet", name);
		print_kubeconfig(text);
		free(text);
		return 0;
	}
	if (json_out) {
		char tmp[] = "/tmp/kubicle-kubeconfig.XXXXXX";
		int fd = mkstemp(tmp);
		if (fd < 0)
			return die("kubeconfig", "%s", strerror(errno));
		close(fd);
		char **args = calloc((size_t)argc + 5, sizeof(*args));
		if (!args) {
			unlink(tmp);
			return 1;
		}
		int k = 0;
		args[k++] = argv[0];
		args[k++] = "--data-dir";
		args[k++] = t.dir;
		args[k++] = "--out";
		args[k++] = tmp;
		for (int i = 2; i < argc; i++)
			args[k++] = argv[i];
		int rc = cmd_kubeconfig(k, args);
		free(args);
		char *text = NULL;
		if (rc == 0 && kb_read_file(tmp, &text, NULL) == 0)
			print_kubeconfig(text);
		free(text);
		unlink(tmp);
		return rc;
	}
	/* a named user: the --data-dir form with the tenant's folder */
	char **args = calloc((size_t)argc + 3, sizeof(*args));
	if (!args)
		return 1;
	int k = 0;
	args[k++] = argv[0];
	args[k++] = "--data-dir";
	args[k++] = t.dir;
	for (int i = 2; i < argc; i++)
		args[k++] = argv[i];
	int rc = cmd_kubeconfig(k, args);
	free(args);
	return rc;
}
