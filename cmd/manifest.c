/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kubicle manifest NAME`: the host cluster objects that run tenant NAME's
 * control plane inside the host cluster, printed for `kubectl apply -f -`.
 *
 *   kubicle manifest NAME [--namespace NS] [--queue Q] [--scheduler S]
 *                    [--policy P] [--gpus N] [--image IMG] [--storage SIZE]
 *                    [--storage-class C] [--egress-allow CIDR]...
 *                    [--floor privileged|baseline|restricted]
 *                    [-o yaml|json]
 *
 * Defaults come from $KUBICLE_HOME/tenants/NAME/tenant.json (KUBICLE_HOME
 * defaults to $HOME/.kubicle) when it exists; flags override them. The
 * certificates come from the tenant's folder when it holds a CA (its CA and
 * admin credential, plus a new serving certificate for the Service names),
 * else from a fresh PKI made in a temporary folder ($TMPDIR, default /tmp)
 * that is removed again.
 *
 * DESIGN
 * The pod runs `kubicle serve --pki-dir` on the read-only Secret mount (the
 * certificates) and `--data-dir` on the PersistentVolumeClaim (SQLite store,
 * audit log, the written kubeconfig). The serving certificate in the Secret
 * is issued for exactly the SANs the pod passes with --tls-san, so serve
 * finds every file valid and never writes to the Secret mount. Without
 * --host-kubeconfig serve's syncer uses the pod's service account.
 * The pod template deliberately does NOT carry kubicle.dev/tenant=NAME: the
 * syncer deletes host pods with that label that no tenant pod owns, and
 * would delete its own server. It is labelled kubicle.dev/control-plane=NAME.
 * Tenant pods reach the API at NAME.NS.svc:6443 (serve's listen port, which
 * the syncer puts into KUBERNETES_SERVICE_PORT), so the Service exposes 6443
 * as well as 443. The same Service carries the tenant's cluster DNS (port
 * 53, UDP and TCP, to serve's --dns-listen 5353: no privileged port for a
 * non-root server), and serve's --pod-dns names the Service, so that the
 * syncer points tenant pods at its cluster IP.
 *
 * Threading: blocking; CLI only.
 */
#include "cmd/manifest.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <yaml.h>

#include "cmd/operator.h"
#include "cmd/version.h"
#include "lib/addrfilter.h"
#include "lib/log.h"
#include "lib/pki.h"
#include "lib/util.h"
#include "policies/policies.h"
#include "syncer/syncer.h"

#define MAN_IMAGE       "ghcr.io/kubicle/kubicle"
#define MAN_PKI_DIR     "/etc/kubicle/pki"
#define MAN_DATA_MOUNT  "/var/lib/kubicle"
#define MAN_DATA_DIR    MAN_DATA_MOUNT "/data"
#define MAN_POLICY_DIR  "/etc/kubicle/policy"
#define MAN_POLICY_FILE "policy.yaml"
#define MAN_UID         65532 /* the "nonroot" user of distroless images */
#define MAN_PORT        6443
#define MAN_DNS_PORT    5353 /* the cluster DNS, behind the Service's 53 */
#define MAN_DNS_PORT_S  "5353"
#define MAN_NODES_ROLE  "kubicle-syncer-nodes" /* shared by every tenant */
#define MAN_NSANS       8                      /* the Service's names, then kubernetes.default's */
#define MAN_EGRESS      16                     /* --egress-allow prefixes */

struct man_args {
	const char *name, *ns, *queue, *scheduler, *policy, *image, *storage, *storage_class;
	const char *floor; /* --floor (or tenant.json's), NULL: serve's default, baseline */
	const char *output;
	long gpus;      /* -1: none */
	json_t *tenant; /* tenant.json or NULL: strings above may be borrowed from it */
	char dir[4096]; /* the tenant's folder */
	char ns_buf[64], image_buf[256], policy_path[128];
	char sa[64]; /* "kubicle-NAME": ServiceAccount, Role and RoleBinding */
	char sans[MAN_NSANS][256];
	char *policy_text;              /* a policy FILE's content (shipped as a ConfigMap) */
	const char *egress[MAN_EGRESS]; /* --egress-allow, or tenant.json's egressAllow */
	size_t negress;
};

static const char usage[] =
    "usage: kubicle manifest NAME [--namespace NS] [--queue Q] [--scheduler S]\n"
    "                        [--policy P] [--gpus N] [--image IMG] [--storage SIZE]\n"
    "                        [--storage-class C] [--egress-allow CIDR]...\n"
    "                        [--floor privileged|baseline|restricted]\n"
    "                        [-o yaml|json]\n"
    "  Prints the host objects that run tenant NAME inside the host cluster\n"
    "  (docs/in-cluster.md); pipe into `kubectl apply -f -`.\n";

/* ---- arguments and tenant.json --------------------------------------------------------- */

static int parse(int argc, char **argv, struct man_args *a)
{
	static const struct option opts[] = {
	    {"namespace", required_argument, NULL, 'n'},
	    {"queue", required_argument, NULL, 'q'},
	    {"scheduler", required_argument, NULL, 's'},
	    {"policy", required_argument, NULL, 'p'},
	    {"gpus", required_argument, NULL, 'g'},
	    {"image", required_argument, NULL, 'i'},
	    {"storage", required_argument, NULL, 'S'},
	    {"storage-class", required_argument, NULL, 'c'},
	    {"output", required_argument, NULL, 'o'},
	    {"egress-allow", required_argument, NULL, 'e'},
	    {"floor", required_argument, NULL, 'F'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	char *end;
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': a->ns = optarg; break;
		case 'q': a->queue = optarg; break;
		case 's': a->scheduler = optarg; break;
		case 'p': a->policy = optarg; break;
		case 'g':
			a->gpus = strtol(optarg, &end, 10);
			if (*end || end == optarg || a->gpus < 0) {
				fprintf(stderr, "kubicle manifest: bad --gpus %s\n", optarg);
				return -EINVAL;
			}
			break;
		case 'i': a->image = optarg; break;
		case 'S': a->storage = optarg; break;
		case 'c': a->storage_class = optarg; break;
		case 'o': a->output = optarg; break;
		case 'e': {
			struct kb_cidr cidr;
			if (kb_cidr_parse(optarg, &cidr) < 0 || a->negress == MAN_EGRESS) {
				fprintf(stderr, "kubicle manifest: bad --egress-allow %s\n",
					optarg);
				return -EINVAL;
			}
			a->egress[a->negress++] = optarg;
			break;
		}
		case 'F':
			if (policy_pss_parse(optarg) < 0) {
				fprintf(stderr,
					"kubicle manifest: --floor takes privileged, baseline "
					"or restricted\n");
				return -EINVAL;
			}
			a->floor = optarg;
			break;
		case 'h': fputs(usage, stdout); exit(0);
		default: return -EINVAL;
		}
	}
	if (optind != argc - 1)
		return -EINVAL;
	a->name = argv[optind];
	return 0;
}

/* $KUBICLE_HOME/tenants/NAME (KUBICLE_HOME defaults to $HOME/.kubicle). */
static int tenant_dir(const char *name, char *buf, size_t len)
{
	const char *home = getenv("KUBICLE_HOME");
	const char *user = getenv("HOME");
	int n = home && *home
		    ? snprintf(buf, len, "%s/tenants/%s", home, name)
		    : snprintf(buf, len, "%s/.kubicle/tenants/%s", user ? user : ".", name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool file_exists(const char *dir, const char *file)
{
	char path[4400];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Fills what flags left unset from tenant.json (strings borrowed from it). */
static int load_tenant(struct man_args *a)
{
	char path[4400];
	json_error_t jerr;
	int rc = tenant_dir(a->name, a->dir, sizeof(a->dir));
	if (rc < 0)
		return rc;
	if (!file_exists(a->dir, "tenant.json"))
		return 0;
	snprintf(path, sizeof(path), "%s/tenant.json", a->dir);
	a->tenant = json_load_file(path, 0, &jerr);
	if (!json_is_object(a->tenant)) {
		fprintf(stderr, "kubicle manifest: %s: %s\n", path, jerr.text);
		return -EINVAL;
	}
	const json_t *t = a->tenant;
	if (!a->ns)
		a->ns = json_string_value(json_object_get(t, "hostNamespace"));
	if (!a->queue)
		a->queue = json_string_value(json_object_get(t, "queue"));
	if (!a->scheduler)
		a->scheduler = json_string_value(json_object_get(t, "scheduler"));
	if (!a->policy)
		a->policy = json_string_value(json_object_get(t, "policy"));
	if (!a->floor)
		a->floor = json_string_value(json_object_get(t, "floor"));
	if (a->gpus < 0 && json_is_integer(json_object_get(t, "gpus")))
		a->gpus = (long)json_integer_value(json_object_get(t, "gpus"));
	size_t i;
	json_t *e;
	json_array_foreach (a->negress ? NULL : json_object_get(t, "egressAllow"), i, e)
		if (json_string_value(e) && a->negress < MAN_EGRESS)
			a->egress[a->negress++] = json_string_value(e);
	return 0;
}

static bool needs_queue(const char *scheduler)
{
	return strcmp(scheduler, "kai") == 0 || strcmp(scheduler, "kueue") == 0 ||
	       strcmp(scheduler, "volcano") == 0;
}

static bool known_scheduler(const char *s)
{
	return needs_queue(s) || strcmp(s, "hami") == 0 || strcmp(s, "none") == 0;
}

/* A policy given as a file (as policy_load tells them apart) travels in a
 * ConfigMap; shipped names pass through. */
static bool policy_is_file(const char *p)
{
	size_t n = strlen(p);
	return strchr(p, '/') || (n > 5 && strcmp(p + n - 5, ".yaml") == 0) ||
	       (n > 4 && strcmp(p + n - 4, ".yml") == 0);
}

static int finish_args(struct man_args *a, char *err, size_t len)
{
	const char *why = syncer_check_tenant(a->name);
	if (why) {
		return kb_errf(err, len, -EINVAL, "invalid NAME \"%s\": %s", a->name, why);
	}
	if (!a->ns) {
		snprintf(a->ns_buf, sizeof(a->ns_buf), "kubicle-%s", a->name);
		a->ns = a->ns_buf;
	}
	if (!a->scheduler)
		a->scheduler = "kai";
	if (!a->image) {
		snprintf(a->image_buf, sizeof(a->image_buf), "%s:%s", MAN_IMAGE, KUBICLE_VERSION);
		a->image = a->image_buf;
	}
	if (!a->storage)
		a->storage = "1Gi";
	if (!a->output)
		a->output = "yaml";
	if (!kb_dns_label(a->ns, 63)) {
		return kb_errf(err, len, -EINVAL, "bad namespace %s", a->ns);
	}
	if (!known_scheduler(a->scheduler)) {
		return kb_errf(err, len, -EINVAL, "unknown scheduler %s", a->scheduler);
	}
	if (needs_queue(a->scheduler) && (!a->queue || !*a->queue)) {
		return kb_errf(err, len, -EINVAL, "the %s scheduler needs --queue", a->scheduler);
	}
	if (strcmp(a->output, "yaml") != 0 && strcmp(a->output, "json") != 0) {
		return kb_errf(err, len, -EINVAL, "-o yaml or -o json");
	}
	if (a->policy && !*a->policy)
		a->policy = NULL;
	if (a->policy && policy_is_file(a->policy)) {
		int rc = kb_read_file(a->policy, &a->policy_text, NULL);
		if (rc < 0)
			return kb_errf(err, len, rc, "policy %s: %s", a->policy, strerror(-rc));
		snprintf(a->policy_path, sizeof(a->policy_path), "%s/%s", MAN_POLICY_DIR,
			 MAN_POLICY_FILE);
	}
	snprintf(a->sa, sizeof(a->sa), "kubicle-%s", a->name);
	snprintf(a->sans[0], sizeof(a->sans[0]), "%s", a->name);
	snprintf(a->sans[1], sizeof(a->sans[1]), "%s.%s", a->name, a->ns);
	snprintf(a->sans[2], sizeof(a->sans[2]), "%s.%s.svc", a->name, a->ns);
	snprintf(a->sans[3], sizeof(a->sans[3]), "%s.%s.svc.cluster.local", a->name, a->ns);
	/* the tenant's kubernetes Service has this Service's address
	 * (--api-service): pods may name the API as kube-apiserver's
	 * certificate lets them */
	snprintf(a->sans[4], sizeof(a->sans[4]), "kubernetes");
	snprintf(a->sans[5], sizeof(a->sans[5]), "kubernetes.default");
	snprintf(a->sans[6], sizeof(a->sans[6]), "kubernetes.default.svc");
	snprintf(a->sans[7], sizeof(a->sans[7]), "kubernetes.default.svc.cluster.local");
	return 0;
}

/* ---- certificates ------------------------------------------------------------------------ */

static const char *const pki_files[] = {"ca.crt",     "ca.key",    "server.crt",
					"server.key", "admin.crt", "admin.key"};

/* Writes the seed's CA and admin credential into `tmp` (never a serving
 * certificate: the Service names are new SANs). */
static int seed_pki(const struct manifest_pki *seed, const char *tmp)
{
	const char *pem[] = {seed->ca_crt, seed->ca_key,    NULL,
			     NULL,         seed->admin_crt, seed->admin_key};
	char path[4400];
	int rc = 0;
	if (!seed->ca_crt || !seed->ca_key)
		return 0;
	for (size_t i = 0; i < KB_ARRAY_SIZE(pki_files) && rc == 0; i++) {
		if (!pem[i] || (i >= 4 && (!seed->admin_crt || !seed->admin_key)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", tmp, pki_files[i]);
		rc = kb_write_file(path, pem[i], strlen(pem[i]), 0600);
	}
	return rc;
}

static void remove_pki_dir(const char *tmp)
{
	char path[4400];
	for (size_t i = 0; i < KB_ARRAY_SIZE(pki_files); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, pki_files[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/%s", tmp, KB_PKI_STAMP);
	unlink(path);
	if (rmdir(tmp) < 0)
		fprintf(stderr, "kubicle manifest: cannot remove %s: %s\n", tmp, strerror(errno));
}

void manifest_pki_free(struct manifest_pki *p)
{
	free(p->ca_crt);
	free(p->ca_key);
	free(p->server_crt);
	free(p->server_key);
	free(p->admin_crt);
	free(p->admin_key);
	memset(p, 0, sizeof(*p));
}

/* Reads the files of `dir` that exist into p (missing ones stay NULL;
 * `all`: every one must be there). */
static int read_pki(const char *dir, struct manifest_pki *p, bool all)
{
	char **dst[] = {&p->ca_crt,     &p->ca_key,    &p->server_crt,
			&p->server_key, &p->admin_crt, &p->admin_key};
	char path[4400];
	for (size_t i = 0; i < KB_ARRAY_SIZE(pki_files); i++) {
		if (!all && !file_exists(dir, pki_files[i]))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, pki_files[i]);
		int rc = kb_read_file(path, dst[i], NULL);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The tenant's certificates with a serving certificate for the Service
 * names, made in a temporary folder that is removed before returning;
 * `seed` (may be NULL) brings an existing CA and admin credential. */
static int make_pki(const struct man_args *a, const struct manifest_pki *seed,
		    struct manifest_pki *out)
{
	static const char *const groups[] = {"system:masters"};
	const char *sans[MAN_NSANS];
	const char *tmpdir = getenv("TMPDIR");
	char tmp[4096];
	int n = snprintf(tmp, sizeof(tmp), "%s/kubicle-manifest.XXXXXX",
			 tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	if (!mkdtemp(tmp))
		return -errno;
	for (size_t i = 0; i < MAN_NSANS; i++)
		sans[i] = a->sans[i];
	int rc = seed ? seed_pki(seed, tmp) : 0;
	if (rc == 0)
		rc = kb_pki_ensure(tmp, sans, MAN_NSANS, "kubicle-admin", groups, 1);
	if (rc == 0)
		rc = read_pki(tmp, out, true);
	if (rc < 0)
		manifest_pki_free(out);
	remove_pki_dir(tmp);
	return rc;
}

/* ---- objects ----------------------------------------------------------------------------- */

/* Labels of every object but the pod template and the shared ClusterRole.
 * kubicle.dev/control-plane marks them as the server's, not the syncer's:
 * `kubicle stop` (and a paused Tenant) removes what the syncer made and
 * leaves these (cmd/hostsetup.h host_remove_pods); the syncer strips every
 * kubicle.dev/ label of a tenant's objects, so none of those has it.
 * New reference. */
static json_t *labels(const struct man_args *a)
{
	return json_pack(
	    "{s:s,s:s,s:s,s:s,s:s,s:s}", "kubicle.dev/tenant", a->name, "kubicle.dev/control-plane",
	    a->name, "app.kubernetes.io/managed-by", "kubicle", "app.kubernetes.io/name", "kubicle",
	    "app.kubernetes.io/instance", a->name, "app.kubernetes.io/component", "control-plane");
}

/* Labels of the server pod (and the selectors that find it). New reference. */
static json_t *pod_labels(const struct man_args *a)
{
	return json_pack("{s:s,s:s,s:s}", "app.kubernetes.io/name", "kubicle",
			 "app.kubernetes.io/instance", a->name, "kubicle.dev/control-plane",
			 a->name);
}

/* apiVersion, kind and metadata (ns NULL: cluster-scoped). New reference. */
static json_t *object(const struct man_args *a, const char *api, const char *kind, const char *name,
		      const char *ns)
{
	json_t *meta = json_pack("{s:s}", "name", name);
	if (ns)
		json_object_set_new(meta, "namespace", json_string(ns));
	json_object_set_new(meta, "labels", labels(a));
	return json_pack("{s:s,s:s,s:o}", "apiVersion", api, "kind", kind, "metadata", meta);
}

static json_t *obj_namespace(const struct man_args *a)
{
	return object(a, "v1", "Namespace", a->ns, NULL);
}

static json_t *obj_service_account(const struct man_args *a)
{
	json_t *o = object(a, "v1", "ServiceAccount", a->sa, a->ns);
	json_object_set_new(o, "automountServiceAccountToken", json_true());
	return o;
}

static json_t *rule(const char *group, json_t *resources, json_t *verbs)
{
	return json_pack("{s:[s],s:o,s:o}", "apiGroups", group, "resources", resources, "verbs",
			 verbs);
}

/* What the syncer calls in its host namespace. */
static json_t *obj_role(const struct man_args *a)
{
	json_t *o = object(a, "rbac.authorization.k8s.io/v1", "Role", a->sa, a->ns);
	json_t *rw = json_pack("[s,s,s,s,s,s,s]", "get", "list", "watch", "create", "update",
			       "patch", "delete");
	json_t *rules = json_pack(
	    "[o,o,o,o,o,o,o,o,o,o,o,o,o]", rule("", json_pack("[s]", "pods"), json_deep_copy(rw)),
	    rule("", json_pack("[s]", "pods/log"), json_pack("[s]", "get")),
	    rule("", json_pack("[s,s,s]", "pods/exec", "pods/attach", "pods/portforward"),
		 json_pack("[s,s]", "get", "create")),
	    rule("", json_pack("[s,s]", "configmaps", "secrets"), json_deep_copy(rw)),
	    rule("", json_pack("[s]", "events"), json_pack("[s,s,s]", "get", "list", "watch")),
	    rule("", json_pack("[s]", "persistentvolumeclaims"), json_deep_copy(rw)),
	    rule("", json_pack("[s]", "pods/ephemeralcontainers"),
		 json_pack("[s,s]", "get", "patch")),
	    rule("", json_pack("[s]", "services"), json_deep_copy(rw)),
	    rule("networking.k8s.io", json_pack("[s]", "networkpolicies"), json_deep_copy(rw)),
	    rule("metrics.k8s.io", json_pack("[s]", "pods"), json_pack("[s,s]", "get", "list")),
	    /* the gangs' group objects (syncer/gang.c) */
	    json_pack("{s:[s,s],s:[s],s:o}", "apiGroups", "scheduling.run.ai",
		      "scheduling.volcano.sh", "resources", "podgroups", "verbs", json_incref(rw)),
	    /* read only: Kueue's Workloads (why a gang waits) and the namespace's
	     * ResourceQuotas (a gang above its pods is refused): syncer.c */
	    rule("kueue.x-k8s.io", json_pack("[s]", "workloads"),
		 json_pack("[s,s,s]", "get", "list", "watch")),
	    rule("", json_pack("[s]", "resourcequotas"), json_pack("[s,s]", "get", "list")));
	json_decref(rw);
	json_object_set_new(o, "rules", rules);
	return o;
}

/* Binds `role` to the server's ServiceAccount (ns NULL: cluster-wide). */
static json_t *binding(const struct man_args *a, const char *kind, const char *name, const char *ns,
		       const char *role_kind, const char *role)
{
	json_t *o = object(a, "rbac.authorization.k8s.io/v1", kind, name, ns);
	json_object_set_new(o, "roleRef",
			    json_pack("{s:s,s:s,s:s}", "apiGroup", "rbac.authorization.k8s.io",
				      "kind", role_kind, "name", role));
	json_object_set_new(o, "subjects",
			    json_pack("[{s:s,s:s,s:s}]", "kind", "ServiceAccount", "name", a->sa,
				      "namespace", a->ns));
	return o;
}

/* The syncer mirrors the host nodes its pods run on (get) and records the
 * host's GPU capacity (list and watch every node: docs/finops.md), the host's
 * priority classes (list and watch), and reads node metrics (kubectl top
 * node): cluster-scoped reads.
 * One ClusterRole for every tenant, as `kubicle create` makes it (same name
 * and rules, no tenant label: deleting a tenant must not remove it). */
static json_t *obj_cluster_role(void)
{
	return json_pack(
	    "{s:s,s:s,s:{s:s,s:{s:s}},s:[o,o,o]}", "apiVersion", "rbac.authorization.k8s.io/v1",
	    "kind", "ClusterRole", "metadata", "name", MAN_NODES_ROLE, "labels",
	    "app.kubernetes.io/managed-by", "kubicle", "rules",
	    rule("", json_pack("[s]", "nodes"), json_pack("[s,s,s]", "get", "list", "watch")),
	    rule("scheduling.k8s.io", json_pack("[s]", "priorityclasses"),
		 json_pack("[s,s,s]", "get", "list", "watch")),
	    rule("metrics.k8s.io", json_pack("[s]", "nodes"), json_pack("[s,s]", "get", "list")));
}

static json_t *obj_cluster_role_binding(const struct man_args *a)
{
	char name[128];
	snprintf(name, sizeof(name), "kubicle-%s-nodes", a->name);
	return binding(a, "ClusterRoleBinding", name, NULL, "ClusterRole", MAN_NODES_ROLE);
}

/* Hard limit on the GPUs the tenant's pods request in the host namespace. */
static json_t *obj_quota(const struct man_args *a)
{
	char n[32];
	snprintf(n, sizeof(n), "%ld", a->gpus);
	json_t *o = object(a, "v1", "ResourceQuota", "kubicle-gpus", a->ns);
	json_object_set_new(o, "spec",
			    json_pack("{s:{s:s}}", "hard", "requests.nvidia.com/gpu", n));
	return o;
}

static void secret_name(const struct man_args *a, char *buf, size_t len)
{
	snprintf(buf, len, "%s-pki", a->name);
}

static int put_b64(json_t *data, const char *key, const char *pem)
{
	char *b = kb_base64_encode(pem, strlen(pem));
	if (!b)
		return -ENOMEM;
	json_object_set_new(data, key, json_string(b));
	free(b);
	return 0;
}

/* kubernetes.io/tls: tls.crt/tls.key are the serving pair; the CA's key
 * signs client certificates (CSRs, `kubicle kubeconfig`). */
static json_t *obj_secret(const struct man_args *a, const struct manifest_pki *p)
{
	char name[128];
	secret_name(a, name, sizeof(name));
	json_t *o = object(a, "v1", "Secret", name, a->ns);
	json_t *data = json_object();
	int rc = put_b64(data, "tls.crt", p->server_crt);
	rc = rc ? rc : put_b64(data, "tls.key", p->server_key);
	rc = rc ? rc : put_b64(data, "ca.crt", p->ca_crt);
	rc = rc ? rc : put_b64(data, "ca.key", p->ca_key);
	rc = rc ? rc : put_b64(data, "admin.crt", p->admin_crt);
	rc = rc ? rc : put_b64(data, "admin.key", p->admin_key);
	json_object_set_new(o, "type", json_string("kubernetes.io/tls"));
	json_object_set_new(o, "data", data);
	if (rc < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *obj_policy(const struct man_args *a)
{
	char name[128];
	snprintf(name, sizeof(name), "%s-policy", a->name);
	json_t *o = object(a, "v1", "ConfigMap", name, a->ns);
	json_object_set_new(o, "data", json_pack("{s:s}", MAN_POLICY_FILE, a->policy_text));
	return o;
}

static json_t *obj_service(const struct man_args *a)
{
	json_t *o = object(a, "v1", "Service", a->name, a->ns);
	json_t *ports =
	    json_pack("[{s:s,s:i,s:s,s:s},{s:s,s:i,s:s,s:s},{s:s,s:i,s:s,s:s},"
		      "{s:s,s:i,s:s,s:s}]",
		      "name", "https", "port", 443, "targetPort", "https", "protocol", "TCP",
		      "name", "api", "port", MAN_PORT, "targetPort", "https", "protocol", "TCP",
		      "name", "dns", "port", 53, "targetPort", "dns", "protocol", "UDP", "name",
		      "dns-tcp", "port", 53, "targetPort", "dns-tcp", "protocol", "TCP");
	json_object_set_new(o, "spec",
			    json_pack("{s:s,s:o,s:o}", "type", "ClusterIP", "selector",
				      pod_labels(a), "ports", ports));
	return o;
}

static void add_args(json_t *args, const char *flag, const char *value)
{
	json_array_append_new(args, json_string(flag));
	json_array_append_new(args, json_string(value));
}

/* `kubicle serve` in-cluster: no --host-kubeconfig (the pod's account). */
static json_t *serve_args(const struct man_args *a)
{
	char adv[300];
	json_t *args = json_pack("[s]", "serve");
	add_args(args, "--data-dir", MAN_DATA_DIR);
	add_args(args, "--pki-dir", MAN_PKI_DIR);
	add_args(args, "--listen", "0.0.0.0:6443");
	for (size_t i = 0; i < MAN_NSANS; i++)
		add_args(args, "--tls-san", a->sans[i]);
	snprintf(adv, sizeof(adv), "%s.%s.svc", a->name, a->ns);
	add_args(args, "--advertise-address", adv);
	add_args(args, "--host-namespace", a->ns);
	add_args(args, "--tenant", a->name);
	if (a->queue && *a->queue)
		add_args(args, "--queue", a->queue);
	add_args(args, "--scheduler", a->scheduler);
	add_args(args, "--dns-listen", "0.0.0.0:" MAN_DNS_PORT_S);
	add_args(args, "--pod-dns", a->name);
	add_args(args, "--api-service", a->name);
	if (a->policy)
		add_args(args, "--policy", a->policy_text ? a->policy_path : a->policy);
	for (size_t i = 0; i < a->negress; i++)
		add_args(args, "--egress-allow", a->egress[i]);
	if (a->floor && *a->floor)
		add_args(args, "--floor", a->floor);
	return args;
}

static json_t *probe(const char *path, int delay, int period, int failures)
{
	return json_pack("{s:{s:s,s:s,s:s},s:i,s:i,s:i,s:i}", "httpGet", "path", path, "port",
			 "https", "scheme", "HTTPS", "initialDelaySeconds", delay, "periodSeconds",
			 period, "timeoutSeconds", 5, "failureThreshold", failures);
}

/* Pod Security Standards "restricted": non-root, no privilege escalation,
 * every capability dropped, RuntimeDefault seccomp. */
static json_t *container_security(void)
{
	return json_pack("{s:b,s:b,s:b,s:i,s:i,s:{s:[s]},s:{s:s}}", "allowPrivilegeEscalation", 0,
			 "readOnlyRootFilesystem", 1, "runAsNonRoot", 1, "runAsUser", MAN_UID,
			 "runAsGroup", MAN_UID, "capabilities", "drop", "ALL", "seccompProfile",
			 "type", "RuntimeDefault");
}

static json_t *container(const struct man_args *a)
{
	json_t *mounts = json_pack("[{s:s,s:s},{s:s,s:s,s:b},{s:s,s:s}]", "name", "data",
				   "mountPath", MAN_DATA_MOUNT, "name", "pki", "mountPath",
				   MAN_PKI_DIR, "readOnly", 1, "name", "tmp", "mountPath", "/tmp");
	if (a->policy_text)
		json_array_append_new(mounts,
				      json_pack("{s:s,s:s,s:b}", "name", "policy", "mountPath",
						MAN_POLICY_DIR, "readOnly", 1));
	json_t *ports = json_pack("[{s:s,s:i,s:s},{s:s,s:i,s:s},{s:s,s:i,s:s}]", "name", "https",
				  "containerPort", MAN_PORT, "protocol", "TCP", "name", "dns",
				  "containerPort", MAN_DNS_PORT, "protocol", "UDP", "name",
				  "dns-tcp", "containerPort", MAN_DNS_PORT, "protocol", "TCP");
	return json_pack("{s:s,s:s,s:s,s:[s],s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "name", "kubicle",
			 "image", a->image, "imagePullPolicy", "IfNotPresent", "command", "kubicle",
			 "args", serve_args(a), "ports", ports, "readinessProbe",
			 probe("/readyz", 0, 5, 3), "livenessProbe", probe("/livez", 10, 10, 6),
			 "resources",
			 json_pack("{s:{s:s,s:s},s:{s:s}}", "requests", "cpu", "100m", "memory",
				   "128Mi", "limits", "memory", "1Gi"),
			 "securityContext", container_security(), "volumeMounts", mounts);
}

/* The Secret's keys under the file names `kubicle serve --pki-dir` reads;
 * 0440 plus fsGroup: readable by the server's group only. */
static json_t *pki_volume(const struct man_args *a)
{
	char name[128];
	secret_name(a, name, sizeof(name));
	static const char *const map[][2] = {
	    {"tls.crt", "server.crt"}, {"tls.key", "server.key"},  {"ca.crt", "ca.crt"},
	    {"ca.key", "ca.key"},      {"admin.crt", "admin.crt"}, {"admin.key", "admin.key"},
	};
	json_t *items = json_array();
	for (size_t i = 0; i < KB_ARRAY_SIZE(map); i++)
		json_array_append_new(items,
				      json_pack("{s:s,s:s}", "key", map[i][0], "path", map[i][1]));
	return json_pack("{s:s,s:{s:s,s:i,s:o}}", "name", "pki", "secret", "secretName", name,
			 "defaultMode", 0440, "items", items);
}

static json_t *pod_spec(const struct man_args *a)
{
	json_t *vols = json_pack("[o,{s:s,s:{}}]", pki_volume(a), "name", "tmp", "emptyDir");
	if (a->policy_text) {
		char name[128];
		snprintf(name, sizeof(name), "%s-policy", a->name);
		json_array_append_new(
		    vols, json_pack("{s:s,s:{s:s}}", "name", "policy", "configMap", "name", name));
	}
	return json_pack("{s:s,s:b,s:b,s:i,s:{s:b,s:i,s:i,s:i,s:{s:s}},s:[o],s:o}",
			 "serviceAccountName", a->sa, "automountServiceAccountToken", 1,
			 "enableServiceLinks", 0, "terminationGracePeriodSeconds", 30,
			 "securityContext", "runAsNonRoot", 1, "runAsUser", MAN_UID, "runAsGroup",
			 MAN_UID, "fsGroup", MAN_UID, "seccompProfile", "type", "RuntimeDefault",
			 "containers", container(a), "volumes", vols);
}

static json_t *claim_template(const struct man_args *a)
{
	json_t *spec = json_pack("{s:[s],s:{s:{s:s}}}", "accessModes", "ReadWriteOnce", "resources",
				 "requests", "storage", a->storage);
	if (a->storage_class)
		json_object_set_new(spec, "storageClassName", json_string(a->storage_class));
	return json_pack("{s:{s:s,s:o},s:o}", "metadata", "name", "data", "labels", labels(a),
			 "spec", spec);
}

static json_t *obj_statefulset(const struct man_args *a)
{
	json_t *o = object(a, "apps/v1", "StatefulSet", a->name, a->ns);
	json_object_set_new(o, "spec",
			    json_pack("{s:i,s:s,s:{s:o},s:{s:{s:o},s:o},s:[o]}", "replicas", 1,
				      "serviceName", a->name, "selector", "matchLabels",
				      pod_labels(a), "template", "metadata", "labels",
				      pod_labels(a), "spec", pod_spec(a), "volumeClaimTemplates",
				      claim_template(a)));
	return o;
}

/* Every object in apply order (namespace and RBAC first). New reference. */
static json_t *objects(const struct man_args *a, const struct manifest_pki *p)
{
	json_t *items = json_array();
	json_t *secret = obj_secret(a, p);
	if (!items || !secret) {
		json_decref(items);
		json_decref(secret);
		return NULL;
	}
	json_array_append_new(items, obj_namespace(a));
	json_array_append_new(items, obj_service_account(a));
	json_array_append_new(items, obj_role(a));
	json_array_append_new(items, binding(a, "RoleBinding", a->sa, a->ns, "Role", a->sa));
	json_array_append_new(items, obj_cluster_role());
	json_array_append_new(items, obj_cluster_role_binding(a));
	if (a->gpus >= 0)
		json_array_append_new(items, obj_quota(a));
	json_array_append_new(items, secret);
	if (a->policy_text)
		json_array_append_new(items, obj_policy(a));
	json_array_append_new(items, obj_service(a));
	json_array_append_new(items, obj_statefulset(a));
	return items;
}

/* ---- output -------------------------------------------------------------------------------- */

/* Whether a plain scalar would read back as something other than this
 * string (a number, bool, null, or YAML syntax). */
static bool needs_quotes(const char *s)
{
	static const char *const words[] = {"y",    "n",     "yes",  "no", "on", "off",
					    "true", "false", "null", "~",  ""};
	for (size_t i = 0; i < KB_ARRAY_SIZE(words); i++)
		if (strcasecmp(s, words[i]) == 0)
			return true;
	return strchr("0123456789+-.", s[0]) != NULL || strpbrk(s, ":#{}[],&*!|>'\"%@`") ||
	       s[strlen(s) - 1] == ' ';
}

static int emit(yaml_emitter_t *e, yaml_event_t *ev)
{
	return yaml_emitter_emit(e, ev) ? 0 : -EIO;
}

static int emit_scalar(yaml_emitter_t *e, const char *s, yaml_scalar_style_t style)
{
	yaml_event_t ev;
	bool plain = style == YAML_PLAIN_SCALAR_STYLE;
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), plain,
					  !plain, style))
		return -ENOMEM;
	return emit(e, &ev);
}

static int emit_string(yaml_emitter_t *e, const char *s)
{
	if (strchr(s, '\n'))
		return emit_scalar(e, s, YAML_LITERAL_SCALAR_STYLE);
	return emit_scalar(
	    e, s, needs_quotes(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE);
}

static int emit_node(yaml_emitter_t *e, const json_t *v);

static int emit_mapping(yaml_emitter_t *e, const json_t *v)
{
	yaml_event_t ev;
	const char *k;
	json_t *x;
	if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE))
		return -ENOMEM;
	int rc = emit(e, &ev);
	json_object_foreach ((json_t *)v, k, x) {
		if (rc == 0)
			rc = emit_string(e, k);
		if (rc == 0)
			rc = emit_node(e, x);
	}
	if (rc == 0 && !yaml_mapping_end_event_initialize(&ev))
		return -ENOMEM;
	return rc ? rc : emit(e, &ev);
}

static int emit_sequence(yaml_emitter_t *e, const json_t *v)
{
	yaml_event_t ev;
	size_t i;
	json_t *x;
	if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE))
		return -ENOMEM;
	int rc = emit(e, &ev);
	json_array_foreach (v, i, x) {
		if (rc == 0)
			rc = emit_node(e, x);
	}
	if (rc == 0 && !yaml_sequence_end_event_initialize(&ev))
		return -ENOMEM;
	return rc ? rc : emit(e, &ev);
}

static int emit_node(yaml_emitter_t *e, const json_t *v)
{
	char num[64];
	switch (json_typeof(v)) {
	case JSON_OBJECT: return emit_mapping(e, v);
	case JSON_ARRAY: return emit_sequence(e, v);
	case JSON_STRING: return emit_string(e, json_string_value(v));
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		return emit_scalar(e, num, YAML_PLAIN_SCALAR_STYLE);
	case JSON_REAL:
		snprintf(num, sizeof(num), "%.17g", json_real_value(v));
		return emit_scalar(e, num, YAML_PLAIN_SCALAR_STYLE);
	case JSON_TRUE: return emit_scalar(e, "true", YAML_PLAIN_SCALAR_STYLE);
	case JSON_FALSE: return emit_scalar(e, "false", YAML_PLAIN_SCALAR_STYLE);
	default: return emit_scalar(e, "null", YAML_PLAIN_SCALAR_STYLE);
	}
}

static int emit_document(yaml_emitter_t *e, const json_t *obj)
{
	yaml_event_t ev;
	if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0))
		return -ENOMEM;
	int rc = emit(e, &ev);
	if (rc == 0)
		rc = emit_node(e, obj);
	if (rc == 0 && !yaml_document_end_event_initialize(&ev, 1))
		return -ENOMEM;
	return rc ? rc : emit(e, &ev);
}

/* One YAML document per object ("---" between them). */
static int print_yaml(const json_t *items, FILE *out)
{
	yaml_emitter_t e;
	yaml_event_t ev;
	size_t i;
	json_t *obj;
	if (!yaml_emitter_initialize(&e))
		return -ENOMEM;
	yaml_emitter_set_output_file(&e, out);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1);
	int rc =
	    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ? emit(&e, &ev) : -ENOMEM;
	json_array_foreach (items, i, obj) {
		if (rc == 0)
			rc = emit_document(&e, obj);
	}
	if (rc == 0)
		rc = yaml_stream_end_event_initialize(&ev) ? emit(&e, &ev) : -ENOMEM;
	if (rc == 0 && !yaml_emitter_flush(&e))
		rc = -EIO;
	yaml_emitter_delete(&e);
	return rc;
}

/* A v1 List, which kubectl apply takes apart into its items. */
static int print_json(json_t *items, FILE *out)
{
	json_t *list = json_pack("{s:s,s:s,s:{s:s},s:O}", "apiVersion", "v1", "kind", "List",
				 "metadata", "resourceVersion", "", "items", items);
	if (!list)
		return -ENOMEM;
	int rc = json_dumpf(list, out, JSON_INDENT(2)) == 0 ? 0 : -EIO;
	if (rc == 0)
		fputc('\n', out);
	json_decref(list);
	return rc;
}

/* Copies a spec into the builders' arguments and checks it. */
static int from_spec(const struct manifest_spec *s, struct man_args *a, char *err, size_t len)
{
	memset(a, 0, sizeof(*a));
	a->name = s->name;
	a->ns = s->ns && *s->ns ? s->ns : NULL;
	a->queue = s->queue;
	a->scheduler = s->scheduler && *s->scheduler ? s->scheduler : NULL;
	a->policy = s->policy;
	a->image = s->image && *s->image ? s->image : NULL;
	a->storage = s->storage && *s->storage ? s->storage : NULL;
	a->storage_class = s->storage_class && *s->storage_class ? s->storage_class : NULL;
	a->floor = s->floor;
	a->gpus = s->gpus;
	a->output = "json";
	if (a->policy && policy_is_file(a->policy))
		return kb_errf(err, len, -EINVAL, "policy %s: a shipped policy name, not a file",
			       a->policy);
	for (size_t i = 0; i < s->negress; i++) {
		struct kb_cidr cidr;
		if (kb_cidr_parse(s->egress[i], &cidr) < 0 || a->negress == MAN_EGRESS)
			return kb_errf(err, len, -EINVAL, "bad egressAllow %s", s->egress[i]);
		a->egress[a->negress++] = s->egress[i];
	}
	if (a->floor && *a->floor && policy_pss_parse(a->floor) < 0)
		return kb_errf(err, len, -EINVAL, "floor takes privileged, baseline or restricted");
	return finish_args(a, err, len);
}

int manifest_check(const struct manifest_spec *s, char *err, size_t len)
{
	struct man_args a;
	return from_spec(s, &a, err, len);
}

int manifest_pki_make(const struct manifest_spec *s, const struct manifest_pki *seed,
		      struct manifest_pki *out, char *err, size_t len)
{
	struct man_args a;
	int rc = from_spec(s, &a, err, len);
	if (rc == 0 && (rc = make_pki(&a, seed, out)) < 0)
		kb_errf(err, len, rc, "certificates: %s", strerror(-rc));
	return rc;
}

json_t *manifest_objects(const struct manifest_spec *s, const struct manifest_pki *p, char *err,
			 size_t len)
{
	struct man_args a;
	if (from_spec(s, &a, err, len) < 0)
		return NULL;
	json_t *items = objects(&a, p);
	if (!items)
		kb_errf(err, len, -ENOMEM, "out of memory");
	return items;
}

int manifest_print(json_t *items, bool json, FILE *out)
{
	int rc = json ? print_json(items, out) : print_yaml(items, out);
	if (rc == 0 && fflush(out) != 0)
		rc = -errno;
	return rc;
}

int cmd_manifest(int argc, char **argv)
{
	struct man_args a = {.gpus = -1};
	struct manifest_pki pki = {0}, seed = {0};
	json_t *items = NULL;
	char err[1024];
	int rc;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--operator") == 0)
			return cmd_manifest_operator(argc, argv);
	if (parse(argc, argv, &a) < 0) {
		fputs(usage, stderr);
		return 2;
	}
	kb_log_set_level("warn");
	if ((rc = load_tenant(&a)) < 0)
		goto out;
	if ((rc = finish_args(&a, err, sizeof(err))) < 0) {
		fprintf(stderr, "kubicle manifest: %s\n", err);
		goto out;
	}
	if ((rc = read_pki(a.dir, &seed, false)) < 0 || (rc = make_pki(&a, &seed, &pki)) < 0) {
		fprintf(stderr, "kubicle manifest: certificates: %s\n", strerror(-rc));
		goto out;
	}
	items = objects(&a, &pki);
	if (!items) {
		rc = -ENOMEM;
		goto out;
	}
	rc = manifest_print(items, strcmp(a.output, "json") == 0, stdout);
	if (rc < 0)
		fprintf(stderr, "kubicle manifest: output: %s\n", strerror(-rc));
out:
	json_decref(items);
	manifest_pki_free(&pki);
	manifest_pki_free(&seed);
	free(a.policy_text);
	json_decref(a.tenant);
	return rc < 0 ? 1 : 0;
}
