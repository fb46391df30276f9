/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kubicle serve` (cmd/serve.h): flags, then the start of one tenant's
 * server in order (PKI on a thread of its own, store, API, controllers,
 * TLS and listening, a caller's hooks, policy, kubeconfig, cluster DNS,
 * syncer) and its stop on a signal (controllers, DNS, syncer, hooks, API).
 */
#include "cmd/serve.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "cmd/usage.h"
#include "cmd/users.h"
#include "proxy/controllers/controllers.h"
#include "lib/addrfilter.h"
#include "lib/kubeconfig.h"
#include "lib/log.h"
#include "lib/pki.h"
#include "policies/policies.h"
#include "proxy/dns/dns.h"
#include "syncer/syncer.h"

#define MAX_SANS   32
#define MAX_EGRESS 64

#define SERVE_USAGE                                                                         \
	"  kubicle serve --data-dir DIR [--listen ADDR:PORT] [--tls-san NAME]...\n"         \
	"                [--advertise-address IP] [--log-level error|warn|info|debug]\n"    \
	"                [--sync full|normal] [--watch-history REVS]\n"                     \
	"                [--compact-interval-ms MS] [--event-ttl D]\n"                      \
	"                [--horizontal-pod-autoscaler-sync-period D]\n"                     \
	"                [--host-kubeconfig FILE] --host-namespace NS --tenant NAME\n"      \
	"                --queue QUEUE [--scheduler kai|kueue|volcano|hami|none]\n"         \
	"                [--host-qps N] [--host-burst N] [--host-max-streams N]\n"          \
	"                [--policy untrusted|trusted|mig|FILE]\n"                           \
	"                [--floor privileged|baseline|restricted]\n"                        \
	"                [--pki-dir DIR]\n"                                                 \
	"                [--dns-listen ADDR:PORT] [--cluster-domain D] [--dns-upstream "    \
	"IP[:PORT]]\n"                                                                      \
	"                [--pod-dns IP|SERVICE] [--api-service SERVICE]\n"                  \
	"                [--egress-allow CIDR]...\n"                                        \
	"                [--dns-clients pods|any]\n"                                        \
	"                [--gpu-ledger-retention D] [--gpu-prices FILE]\n"                  \
	"      Serve the Kubernetes API for one tenant from DIR (created on first start:\n" \
	"      SQLite store, CA, serving certificate, admin credential, DIR/kubeconfig).\n" \
	"      --listen defaults to 127.0.0.1:6443; port 0 picks a free port.\n"            \
	"      With --host-namespace, the tenant's pods run on the host cluster\n"          \
	"      (--host-kubeconfig, or the in-cluster service account) in namespace NS,\n"   \
	"      tagged with QUEUE for the host's GPU scheduler. --host-qps -1: no limit.\n"  \
	"      --event-ttl: events are deleted this long after their last write\n"          \
	"      (default 1h, as kube-apiserver's).\n"                                        \
	"      --horizontal-pod-autoscaler-sync-period: how often each autoscaler is\n"     \
	"      reconciled (default 15s, as kube-controller-manager's).\n"                   \
	"      --host-max-streams: exec, attach and port-forward sessions piped to the\n"   \
	"      host at once (default 256; more are answered 429).\n"                        \
	"      --policy: admission of pods by a shipped policy or a YAML file\n"            \
	"      (policies/README.md); without it the host floor alone applies.\n"            \
	"      --floor: what every pod reaching the host is held to, whatever the\n"        \
	"      policy (default baseline with --host-namespace, else none): a Pod\n"         \
	"      Security level plus no host priority class, node, runtime or device\n"       \
	"      the policy does not give. privileged lifts only the Pod Security part.\n"    \
	"      --pki-dir: the certificates in DIR instead of the data dir (read-only is\n"  \
	"      fine when it holds them all, e.g. a mounted Secret: docs/in-cluster.md).\n"  \
	"      --dns-listen: serve the tenant's cluster DNS (Services, headless\n"          \
	"      endpoints, pods of --cluster-domain, default cluster.local) on UDP and\n"    \
	"      TCP; other names go to --dns-upstream (default: /etc/resolv.conf's\n"        \
	"      first nameserver; \"none\": refused). --pod-dns IP: host pods of\n"          \
	"      dnsPolicy ClusterFirst resolve through IP (this server's DNS as the\n"       \
	"      host pods reach it, or a host Service's address: docs/dns.md).\n"            \
	"      --dns-clients: who may ask the DNS: the tenant's pods and loopback\n"        \
	"      (pods, the default; others are REFUSED) or anyone (any).\n"                  \
	"      --api-service: the host Service that serves this API on 443; the\n"          \
	"      tenant's kubernetes Service gets its address.\n"                             \
	"      --egress-allow: addresses (CIDR) the tenant may make this server call\n"     \
	"      (admission and conversion webhooks, APIService backends) besides its\n"      \
	"      own host pods and Services; loopback, link-local, this machine's and\n"      \
	"      the host API server's addresses only when a prefix inside them names\n"      \
	"      them (e.g. 127.0.0.1/32). Repeatable. docs/egress.md.\n"                     \
	"      --gpu-ledger-retention: how long the GPU allocation ledger keeps an\n"       \
	"      interval after it ended (default 400d; docs/finops.md).\n"                   \
	"      --gpu-prices: the platform's GPU price file (default\n"                      \
	"      $KUBICLE_HOME/prices.yaml when there): the tenant's GPUUsage objects\n"      \
	"      show costs at its prices, read again when it changes.\n"

const char serve_usage[] = SERVE_USAGE;
/* `kubicle serve --help` */
static const char kubicle_serve_usage[] = "Usage:\n" SERVE_USAGE;

struct serve_args {
	const char *data_dir;
	const char *listen;
	const char *advertise;
	const char *sans[MAX_SANS];
	size_t nsans;
	bool sync_full;
	long history_keep;       /* revisions of watch history; 0: default */
	unsigned compact_ms;     /* compaction period; 0: default */
	long event_ttl;          /* seconds an event lives after its last write; 0: 1 h */
	long hpa_sync;           /* seconds between autoscaler syncs; 0: 15 s */
	struct syncer_opts host; /* host_namespace NULL: no syncer */
	const char *policy;      /* --policy NAME|FILE, or NULL */
	int floor;               /* --floor level; POLICY_FLOOR_NONE: not given */
	const char *pki_dir;     /* certificates; default data_dir (may be read-only) */
	struct dns_opts dns;     /* listen NULL: no cluster DNS */
	const char *egress[MAX_EGRESS + 1]; /* --egress-allow, NULL-terminated */
	size_t negress;
};

struct server {
	uv_loop_t *loop;
	store_t *store;
	proxy_t *proxy;
	ctrl_t *ctrl;
	syncer_t *syncer;
	dns_t *dns;
	SSL_CTX *tls;
	kb_pki_t *pki; /* until the controllers have their signer */
	policy_t *policy;
	uv_signal_t sigterm, sigint;
	const struct serve_hooks *hooks; /* the caller's, or NULL */
	bool hooks_started;              /* hooks->start succeeded */
};

/*
 * KUBICLE_TRACE_START: each step of the start on stderr, the wall clock
 * since the variable's value (CLOCK_REALTIME in nanoseconds, as
 * `bench/startup --trace` sets it in the child before exec, so exec and
 * loading count) or, for any other value, since serve_run began, with the
 * main thread's CPU time beside it (a step whose wall outgrows its CPU
 * waited: fsync, the PKI thread, the run queue). Off unless set; the
 * starting thread only. bench/README.md reads it.
 */
static int64_t trace_base = -1; /* -1: not read yet; 0: off */

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void trace_step(const char *step)
{
	if (trace_base < 0) {
		const char *v = getenv("KUBICLE_TRACE_START");
		long long base = v ? strtoll(v, NULL, 10) : 0;
		trace_base = !v ? 0 : base > 0 ? base : realtime_ns();
	}
	if (trace_base == 0)
		return;
	struct timespec cpu;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	fprintf(stderr, "start-trace %8.3f ms cpu %7.3f ms %s\n",
		(double)(realtime_ns() - trace_base) / 1e6,
		(double)cpu.tv_sec * 1e3 + (double)cpu.tv_nsec / 1e6, step);
}

static int path_join(char *buf, size_t len, const char *dir, const char *file)
{
	int n = snprintf(buf, len, "%s/%s", dir, file);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* One --egress-allow: an IP prefix (a bare address is one host). */
static int add_egress(struct serve_args *a, const char *cidr)
{
	struct kb_cidr c;
	if (kb_cidr_parse(cidr, &c) < 0) {
		fprintf(stderr,
			"kubicle: bad --egress-allow %s (want an IP prefix, e.g. 10.0.0.0/8)\n",
			cidr);
		return -EINVAL;
	}
	if (a->negress == MAX_EGRESS) {
		fprintf(stderr, "kubicle: too many --egress-allow\n");
		return -EINVAL;
	}
	a->egress[a->negress++] = cidr;
	return 0;
}

/* usage: printed by --help (then exit 0) and after a bad flag. */
static int parse_serve(int argc, char **argv, const char *usage, struct serve_args *a)
{
	static const struct option opts[] = {
	    {"data-dir", required_argument, NULL, 'd'},
	    {"listen", required_argument, NULL, 'l'},
	    {"tls-san", required_argument, NULL, 's'},
	    {"advertise-address", required_argument, NULL, 'a'},
	    {"log-level", required_argument, NULL, 'v'},
	    {"sync", required_argument, NULL, 'y'},
	    {"watch-history", required_argument, NULL, 'W'},
	    {"compact-interval-ms", required_argument, NULL, 'C'},
	    {"event-ttl", required_argument, NULL, 'E'},
	    {"horizontal-pod-autoscaler-sync-period", required_argument, NULL, 'H'},
	    {"host-kubeconfig", required_argument, NULL, 'K'},
	    {"host-namespace", required_argument, NULL, 'N'},
	    {"tenant", required_argument, NULL, 'T'},
	    {"queue", required_argument, NULL, 'Q'},
	    {"scheduler", required_argument, NULL, 'S'},
	    {"host-qps", required_argument, NULL, 'P'},
	    {"host-burst", required_argument, NULL, 'B'},
	    {"host-max-streams", required_argument, NULL, 'M'},
	    {"policy", required_argument, NULL, 'p'},
	    {"floor", required_argument, NULL, 'F'},
	    {"pki-dir", required_argument, NULL, 'k'},
	    {"dns-listen", required_argument, NULL, 'D'},
	    {"cluster-domain", required_argument, NULL, 'Z'},
	    {"dns-upstream", required_argument, NULL, 'U'},
	    {"pod-dns", required_argument, NULL, 'O'},
	    {"api-service", required_argument, NULL, 'I'},
	    {"egress-allow", required_argument, NULL, 'e'},
	    {"dns-clients", required_argument, NULL, 'G'},
	    {"gpu-ledger-retention", required_argument, NULL, 'R'},
	    {"gpu-prices", required_argument, NULL, 'g'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	memset(a, 0, sizeof(*a));
	a->listen = "127.0.0.1:6443";
	a->floor = POLICY_FLOOR_NONE;
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': a->data_dir = optarg; break;
		case 'l': a->listen = optarg; break;
		case 'a': a->advertise = optarg; break;
		case 's':
			if (a->nsans == MAX_SANS) {
				fprintf(stderr, "kubicle: too many --tls-san\n");
				return -EINVAL;
			}
			a->sans[a->nsans++] = optarg;
			break;
		case 'v':
			if (kb_log_set_level(optarg) < 0) {
				fprintf(stderr, "kubicle: bad --log-level %s\n", optarg);
				return -EINVAL;
			}
			break;
		case 'y': a->sync_full = strcmp(optarg, "full") == 0; break;
		case 'W': a->history_keep = strtol(optarg, NULL, 10); break;
		case 'C': a->compact_ms = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'E':
			if ((a->event_ttl = users_parse_duration(optarg)) <= 0) {
				fprintf(stderr, "kubicle: bad --event-ttl %s\n", optarg);
				return -EINVAL;
			}
			break;
		case 'H':
			if ((a->hpa_sync = users_parse_duration(optarg)) <= 0) {
				fprintf(stderr,
					"kubicle: bad --horizontal-pod-autoscaler-sync-period %s\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'R':
			if ((a->host.gpu_ledger_retention_s = users_parse_duration(optarg)) <= 0) {
				fprintf(stderr, "kubicle: bad --gpu-ledger-retention %s\n", optarg);
				return -EINVAL;
			}
			break;
		case 'g': a->host.gpu_prices_file = optarg; break;
		case 'K': a->host.host_kubeconfig = optarg; break;
		case 'N': a->host.host_namespace = optarg; break;
		case 'T': a->host.tenant = optarg; break;
		case 'Q': a->host.queue = optarg; break;
		case 'S': a->host.scheduler = optarg; break;
		case 'P': a->host.qps = strtod(optarg, NULL); break;
		case 'B': a->host.burst = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'M': a->host.max_streams = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'p': a->policy = optarg; break;
		case 'F':
			if ((a->floor = policy_pss_parse(optarg)) < 0) {
				fprintf(
				    stderr,
				    "kubicle: --floor takes privileged, baseline or restricted\n");
				return -EINVAL;
			}
			break;
		case 'k': a->pki_dir = optarg; break;
		case 'D': a->dns.listen = optarg; break;
		case 'Z': a->dns.domain = a->host.cluster_domain = optarg; break;
		case 'U': a->dns.upstream = optarg; break;
		case 'O': a->host.pod_dns = optarg; break;
		case 'I': a->host.api_service = optarg; break;
		case 'e':
			if (add_egress(a, optarg) < 0)
				return -EINVAL;
			break;
		case 'G':
			if (strcmp(optarg, "pods") != 0 && strcmp(optarg, "any") != 0) {
				fprintf(stderr, "kubicle: --dns-clients takes pods or any\n");
				return -EINVAL;
			}
			a->dns.any_client = strcmp(optarg, "any") == 0;
			break;
		case 'h': fputs(usage, stdout); exit(0);
		default: fputs(usage, stderr); return -EINVAL;
		}
	}
	if (!a->data_dir) {
		fprintf(stderr, "kubicle serve: --data-dir is required\n");
		return -EINVAL;
	}
	if (!a->pki_dir)
		a->pki_dir = a->data_dir;
	static char prices[4096];
	if (!a->host.gpu_prices_file)
		a->host.gpu_prices_file = usage_default_prices(prices, sizeof(prices), false);
	return 0;
}

/* The host cluster's credentials as the syncer will read them (only the
 * server is used: the egress policy refuses its addresses); none when they
 * cannot be read (the syncer reports why). */
static void host_creds(const struct serve_args *a, struct kb_kubeconfig_creds *out)
{
	int rc = a->host.host_kubeconfig ? kb_kubeconfig_load(a->host.host_kubeconfig, NULL, out)
					 : kb_kubeconfig_in_cluster(NULL, out);
	if (rc < 0)
		memset(out, 0, sizeof(*out));
}

/* The host part of the listen address, as a client should dial it. */
static void client_host(const char *listen, char *buf, size_t len)
{
	const char *colon = strrchr(listen, ':');
	size_t n = colon ? (size_t)(colon - listen) : strlen(listen);
	if (n >= len)
		n = len - 1;
	memcpy(buf, listen, n);
	buf[n] = '\0';
	if (strcmp(buf, "0.0.0.0") == 0 || buf[0] == '\0')
		snprintf(buf, len, "127.0.0.1");
	else if (strcmp(buf, "[::]") == 0)
		snprintf(buf, len, "[::1]");
}

/*
 * Writes the kubeconfig unless it already says the same (a restart on the
 * same port: the supervisor keeps it). It is made from the PKI and the
 * port at every start, so it is replaced atomically but not synced (two
 * fsyncs of every first start, and of every start on a new port): a crash
 * may leave the old one, or none, until the next start writes it again,
 * which it does before it serves. A full disk does not stop the
 * server: a tenant that crashed on one must still come up, serve reads
 * and refuse writes (store.h, Health) until there is room again; the
 * kubeconfig already there stays (logged).
 */
static int put_kubeconfig(const char *path, const struct kb_kubeconfig *kc)
{
	char *text = NULL, *have = NULL;
	int rc = kb_kubeconfig_render(kc, &text);
	if (rc < 0)
		return rc;
	if (kb_read_file(path, &have, NULL) == 0 && strcmp(have, text) == 0)
		goto out;
	rc = kb_write_file_unsynced(path, text, strlen(text), 0600);
	if (rc == -ENOSPC || rc == -EDQUOT) {
		kb_warn("main", "cannot write %s: %s; serving anyway", path, strerror(-rc));
		rc = 0;
	}
out:
	free(text);
	free(have);
	return rc;
}

/* Writes dir/kubeconfig with the CA and admin credential from `pki`. */
static int write_kubeconfig(const char *dir, const char *pki, const char *listen, int port)
{
	char path[4096], host[256], server[300];
	char *ca = NULL, *cert = NULL, *key = NULL;
	int rc;
	client_host(listen, host, sizeof(host));
	snprintf(server, sizeof(server), "https://%s:%d", host, port);
	if ((rc = path_join(path, sizeof(path), pki, "ca.crt")) < 0 ||
	    (rc = kb_read_file(path, &ca, NULL)) < 0)
		goto out;
	if ((rc = path_join(path, sizeof(path), pki, "admin.crt")) < 0 ||
	    (rc = kb_read_file(path, &cert, NULL)) < 0)
		goto out;
	if ((rc = path_join(path, sizeof(path), pki, "admin.key")) < 0 ||
	    (rc = kb_read_file(path, &key, NULL)) < 0)
		goto out;
	struct kb_kubeconfig kc = {.name = "kubicle",
				   .server = server,
				   .ca_pem = ca,
				   .cert_pem = cert,
				   .key_pem = key,
				   .user = "kubicle-admin"};
	if ((rc = path_join(path, sizeof(path), dir, "kubeconfig")) == 0)
		rc = put_kubeconfig(path, &kc);
out:
	free(ca);
	free(cert);
	free(key);
	return rc;
}

/* The caller's start hook, once the API listens. */
static int start_hooks(struct server *s, const struct serve_args *a)
{
	if (!s->hooks || !s->hooks->start)
		return 0;
	struct serve_env env = {.loop = s->loop,
				.store = s->store,
				.proxy = s->proxy,
				.data_dir = a->data_dir,
				.host_namespace = a->host.host_namespace};
	int rc = s->hooks->start(s->hooks->arg, &env);
	s->hooks_started = rc == 0;
	return rc;
}

static void stop_hooks(struct server *s)
{
	if (s->hooks_started && s->hooks->stop)
		s->hooks->stop(s->hooks->arg);
	s->hooks_started = false;
}

static void on_signal(uv_signal_t *sig, int signum)
{
	struct server *s = sig->data;
	kb_info("main", "signal %d: shutting down", signum);
	ctrl_stop(s->ctrl);
	s->ctrl = NULL;
	dns_stop(s->dns);
	s->dns = NULL;
	if (s->syncer) {
		if (s->proxy) {
			proxy_set_prom(s->proxy, NULL, NULL);
			proxy_set_egress_owner(s->proxy, NULL, NULL);
			proxy_set_metrics(s->proxy, NULL, NULL, NULL);
		}
		syncer_stop(s->syncer);
		s->syncer = NULL;
	}
	stop_hooks(s);
	if (s->proxy) {
		proxy_set_policy(s->proxy, NULL);
		proxy_stop(s->proxy);
		s->proxy = NULL;
	}
	uv_close((uv_handle_t *)&s->sigterm, NULL);
	uv_close((uv_handle_t *)&s->sigint, NULL);
}

static int open_store(struct server *s, const struct serve_args *a)
{
	char path[4096];
	int rc = path_join(path, sizeof(path), a->data_dir, "kubicle.db");
	if (rc < 0)
		return rc;
	struct store_opts so = {.sync_full = a->sync_full,
				.group_commit = true,
				.history_keep = a->history_keep,
				.compact_interval_ms = a->compact_ms};
	return store_open(s->loop, path, &so, &s->store);
}

/* The store's copy of ca.crt (the namespaces' kube-root-ca.crt), `ca` the
 * text the file holds. */
static int store_ca(struct server *s, const char *ca)
{
	char *have = NULL;
	int rc = 0;
	if (store_kv_get(s->store, "ca.crt", &have) < 0 || strcmp(have, ca) != 0)
		rc = store_kv_set(s->store, "ca.crt", ca);
	free(have);
	return rc;
}

/* What the proxy's start waits for from the PKI job (proxy_opts). */
struct pki_wait {
	struct server *s;
	kb_pki_job_t *job;
	bool store_failed; /* the CA came but the store refused it */
};

/* proxy_opts.ca_wait: the CA's text into the store. */
static int ca_wait(void *arg)
{
	struct pki_wait *w = arg;
	const char *ca = NULL;
	trace_step("ca wait");
	int rc = kb_pki_job_ca(w->job, &ca);
	trace_step("ca");
	if (rc == 0 && (rc = store_ca(w->s, ca)) < 0)
		w->store_failed = true;
	return rc;
}

/* proxy_opts.tls_wait: the serving context the PKI job made. The start's
 * writes (the built-in objects) are committed first, while the job may be
 * at work still: on a first start this is the store's first commit, which
 * syncs the new WAL and the data dir (store.c, create_fresh) and which the
 * loop's first iteration would otherwise make before it accepts anyone. */
static int tls_wait(void *arg, SSL_CTX **tls)
{
	struct pki_wait *w = arg;
	store_flush(w->s->store);
	trace_step("tls wait");
	int rc = kb_pki_job_tls(w->job, tls);
	trace_step("tls");
	w->s->tls = *tls;
	return rc;
}

/* Joins the PKI job into s->pki; its failure reported. A CA that ended
 * other than the one the store was given (see kb_pki_job_join) is given
 * again. */
static int join_pki(struct server *s, const struct serve_args *a, kb_pki_job_t *job)
{
	bool pki_failed = false;
	char *later = NULL;
	int rc = kb_pki_job_join(job, &s->pki, &pki_failed, s->store ? &later : NULL);
	if (rc < 0 && pki_failed)
		fprintf(stderr, "kubicle: certificates in %s: %s\n", a->pki_dir, strerror(-rc));
	else if (rc < 0)
		fprintf(stderr, "kubicle: tls: %s\n", strerror(-rc));
	if (later) {
		kb_warn("main", "the CA changed while starting; ca.crt stored again");
		rc = store_ca(s, later);
		free(later);
	}
	return rc;
}

/* The syncer's token issuer: tenant service-account tokens signed by the
 * proxy (the syncer does not depend on proxy/). */
static int issue_sa_token(void *px, const char *ns, const char *sa, long ttl, char **jwt)
{
	return proxy_issue_sa_token(px, ns, sa, ttl, jwt);
}

static int issue_pod_token(void *px, const struct syncer_token_req *rq, char **jwt, long *ttl)
{
	return proxy_issue_pod_token(px, rq->ns, rq->sa, rq->audience, rq->ttl_seconds, rq->pod,
				     rq->pod_uid, jwt, ttl);
}

/* The host's metrics API came or went: the tenant serves it or not. */
static void metrics_changed(void *px, bool available)
{
	proxy_metrics_available(px, available);
}

/* Starts the syncer to the host cluster; pods reach the tenant API at the
 * advertised address (else the listen address) and `port`, with their
 * tenant service-account token mounted. */
static int start_syncer(struct server *s, struct serve_args *a, int port)
{
	char host[256];
	client_host(a->listen, host, sizeof(host));
	a->host.advertise = a->advertise ? a->advertise : host;
	a->host.api_port = port;
	a->host.issue_token = issue_sa_token;
	a->host.issue_pod_token = issue_pod_token;
	a->host.token_arg = s->proxy;
	a->host.metrics_changed = metrics_changed;
	a->host.metrics_arg = s->proxy;
	a->host.topology_hints = policy_topology_hints(s->policy);
	a->host.image_pull_any = policy_image_pull_any(s->policy);
	a->host.gpu_quota_milli = policy_gpu_quota_milli(s->policy);
	int rc = syncer_start(s->loop, s->store, &a->host, &s->syncer);
	if (rc == 0) {
		proxy_set_host(s->proxy, syncer_pod_log, syncer_pod_connect, s->syncer);
		proxy_set_prom(s->proxy, syncer_prom, s->syncer);
		proxy_set_egress_owner(s->proxy, syncer_owns_address, s->syncer);
		proxy_set_metrics(s->proxy, syncer_metrics_get, syncer_metrics_cancel, s->syncer);
	}
	return rc;
}

int serve_run(int argc, char **argv, const struct serve_hooks *hooks)
{
	struct serve_args a;
	struct server s = {.hooks = hooks};
	int rc =
	    parse_serve(argc, argv, hooks && hooks->usage ? hooks->usage : kubicle_serve_usage, &a);
	if (rc < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	trace_step("serve");
	if (mkdir(a.data_dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "kubicle: cannot create %s: %s\n", a.data_dir, strerror(errno));
		return 1;
	}
	/* the certificates and the TLS context on a thread of their own
	 * while the store opens and the proxy loads the built-in objects */
	static const char *const groups[] = {"system:masters"};
	kb_pki_job_t *job = NULL;
	rc = kb_pki_job_start(a.pki_dir, a.sans, a.nsans, "kubicle-admin", groups, 1, &job);
	if (rc < 0) {
		fprintf(stderr, "kubicle: certificates in %s: %s\n", a.pki_dir, strerror(-rc));
		return 1;
	}
	s.loop = uv_default_loop();
	if ((rc = open_store(&s, &a)) < 0) {
		fprintf(stderr, "kubicle: store: %s\n", strerror(-rc));
		join_pki(&s, &a, job);
		goto fail_tls;
	}
	trace_step("store open");
	int port = 0;
	struct kb_kubeconfig_creds host = {0};
	if (a.host.host_namespace)
		host_creds(&a, &host);
	struct pki_wait pw = {.s = &s, .job = job};
	struct proxy_opts po = {.listen = a.listen,
				.tls_wait = tls_wait,
				.ca_wait = ca_wait,
				.wait_arg = &pw,
				.store = s.store,
				.advertise_host = a.advertise,
				.data_dir = a.data_dir,
				.egress_allow = a.egress,
				.host_server = host.server};
	rc = proxy_start(s.loop, &po, &s.proxy);
	/* the controllers before listening: their first lists and queues are
	 * made while the PKI job may still be at work (on a loaded machine or
	 * a first start it is the later of the two), and /readyz still answers
	 * only once they are, as kube's waits for the controllers' informers */
	bool ctrl_failed = false;
	if (rc == 0 && (rc = ctrl_start(s.loop, s.store, s.proxy, &s.ctrl)) < 0)
		ctrl_failed = true;
	trace_step("controllers");
	if (rc == 0)
		rc = proxy_listen(s.proxy, &po, &port);
	trace_step("listening");
	kb_kubeconfig_creds_free(&host);
	int jrc = join_pki(&s, &a, job);
	if (ctrl_failed)
		fprintf(stderr, "kubicle: controllers: %s\n", strerror(-rc));
	else if (rc < 0 && jrc == 0)
		fprintf(stderr, "kubicle: %s %s: %s\n", pw.store_failed ? "store:" : "listen on",
			pw.store_failed ? "ca.crt" : a.listen, strerror(-rc));
	if (rc < 0 && !s.proxy)
		goto fail_proxy; /* proxy_start failed: nothing of it is left */
	if (rc < 0 || jrc < 0)
		goto fail_kubeconfig;
	if (a.event_ttl > 0)
		ctrl_set_event_ttl(s.ctrl, a.event_ttl);
	if (a.hpa_sync > 0)
		ctrl_set_hpa_sync_period(s.ctrl, a.hpa_sync);
	if ((rc = start_hooks(&s, &a)) < 0) {
		fprintf(stderr, "kubicle: start: %s\n", strerror(-rc));
		goto fail_kubeconfig;
	}
	if (a.policy) {
		char err[512];
		if ((rc = policy_load(a.policy, &s.policy, err, sizeof(err))) < 0) {
			fprintf(stderr, "kubicle: %s\n", err);
			goto fail_kubeconfig;
		}
		proxy_set_policy(s.proxy, s.policy);
		kb_info("main", "policy %s", policy_name(s.policy));
	}
	/* a server whose pods reach a host gets the floor unless the platform
	 * chose another level */
	if (a.floor == POLICY_FLOOR_NONE && a.host.host_namespace)
		a.floor = policy_pss_parse("baseline");
	proxy_set_floor(s.proxy, a.floor);
	if (a.floor != POLICY_FLOOR_NONE)
		kb_info("main", "host floor %s", policy_pss_name(a.floor));
	if ((rc = write_kubeconfig(a.data_dir, a.pki_dir, a.listen, port)) < 0) {
		fprintf(stderr, "kubicle: kubeconfig: %s\n", strerror(-rc));
		goto fail_kubeconfig;
	}
	trace_step("kubeconfig");
	a.dns.host_ns = a.host.host_namespace;
	if (a.dns.listen && (rc = dns_start(s.loop, s.store, &a.dns, &s.dns, NULL)) < 0) {
		fprintf(stderr, "kubicle: dns on %s: %s\n", a.dns.listen, strerror(-rc));
		goto fail_kubeconfig;
	}
	if (a.host.host_namespace && (rc = start_syncer(&s, &a, port)) < 0) {
		fprintf(stderr, "kubicle: syncer: %s\n", strerror(-rc));
		goto fail_kubeconfig;
	}
	kb_pki_ca_t *signer = NULL;
	if (kb_pki_signer(s.pki, &signer) == 0)
		ctrl_set_signer(s.ctrl, signer); /* without a CA, CSRs are left unsigned */
	kb_pki_free(s.pki);                      /* what stays in use holds its own references */
	s.pki = NULL;
	uv_signal_init(s.loop, &s.sigterm);
	uv_signal_init(s.loop, &s.sigint);
	s.sigterm.data = s.sigint.data = &s;
	uv_signal_start(&s.sigterm, on_signal, SIGTERM);
	uv_signal_start(&s.sigint, on_signal, SIGINT);
	kb_info("main", "serving the Kubernetes API on port %d; kubeconfig: %s/kubeconfig", port,
		a.data_dir);
	trace_step("loop");
	uv_run(s.loop, UV_RUN_DEFAULT);
	store_close(s.store);
	uv_run(s.loop, UV_RUN_DEFAULT);
	SSL_CTX_free(s.tls);
	policy_free(s.policy);
	uv_loop_close(s.loop);
	kb_info("main", "stopped");
	return 0;
fail_kubeconfig:
	ctrl_stop(s.ctrl);
	dns_stop(s.dns);
	stop_hooks(&s);
	proxy_set_policy(s.proxy, NULL);
	proxy_stop(s.proxy);
	uv_run(s.loop, UV_RUN_DEFAULT);
	policy_free(s.policy);
fail_proxy:
	SSL_CTX_free(s.tls);
fail_tls:
	store_close(s.store);
	kb_pki_free(s.pki);
	return 1;
}

int cmd_serve(int argc, char **argv)
{
	return serve_run(argc, argv, NULL);
}
