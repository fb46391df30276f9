/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubicle binary: argument parsing and subcommands only (`kubicle
 * serve` is cmd/serve.c, the tenants' commands cmd/tenant.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/json.h"

#include "cmd/manifest.h"
#include "cmd/operator.h"
#include "cmd/serve.h"
#include "cmd/supervise.h"
#include "cmd/tenant.h"
#include "cmd/usage.h"
#include "cmd/users.h"
#include "cmd/version.h"

static const char usage_head[] =
    "kubicle: a Kubernetes control plane per tenant, on one shared GPU pool.\n"
    "\n"
    "Usage:\n";
static const char usage_tail[] =
    "  kubicle token create --data-dir DIR --user NAME [--group G]... [--ttl D]\n"
    "      Print a new bearer token for NAME (only its SHA-256 is stored).\n"
    "  kubicle token revoke --data-dir DIR (TOKEN | --user NAME)\n"
    "  kubicle kubeconfig --data-dir DIR --user NAME [--group G]... [--ttl D]\n"
    "                     [--out FILE] [--token]\n"
    "      Write a kubeconfig for NAME (ECDSA client certificate, or a token).\n"
    "  kubicle manifest NAME [--namespace NS] [--queue Q] [--scheduler S] [--policy P]\n"
    "                   [--floor privileged|baseline|restricted]\n"
    "                   [--gpus N] [--image IMG] [--storage SIZE] [--storage-class C]\n"
    "                   [--egress-allow CIDR]... [-o yaml|json]\n"
    "      Print the host objects that run tenant NAME inside the host cluster\n"
    "      (docs/in-cluster.md), for `kubectl apply -f -`.\n"
    "  kubicle manifest --operator [--namespace NS] [--image IMG] [-o yaml|json]\n"
    "      Print the Tenant CRD, the operator's RBAC and Deployment (docs/operator.md).\n"
    "  kubicle operator [--host-kubeconfig F] [--namespace NS] [--id ID]\n"
    "                   [--lease-duration S] [--renew-deadline S] [--retry-period S]\n"
    "                   [--resync S] [--image IMG] [--no-install-crd]\n"
    "      Run every Tenant object of the host cluster (production mode; leader\n"
    "      election on the Lease NS/kubicle-operator; docs/operator.md).\n"
    "\n"
    "Tenants (kept under $KUBICLE_HOME, default ~/.kubicle; all take -o json):\n"
    "  kubicle create NAME [--host-kubeconfig F] [--host-namespace NS] [--queue Q]\n"
    "                 [--gpus N] [--policy untrusted|trusted|mig|FILE]\n"
    "                 [--scheduler kai|kueue|volcano|hami|none] [--ttl D] [--wait]\n"
    "                 [--listen ADDR:PORT] [--advertise-address IP] [--timeout S]\n"
    "                 [--shared-host-namespace] [--egress-allow CIDR]...\n"
    "                 [--floor privileged|baseline|restricted]\n"
    "      Set up the tenant's host objects, start its server (supervised: restarted\n"
    "      when it dies; deleted when --ttl is up, counting only the time it has\n"
    "      been supervised, not the calendar) and print its kubeconfig path.\n"
    "      Its pods are held to the host floor (default baseline) with or without a\n"
    "      policy (policies/README.md); --floor privileged lifts its Pod Security part.\n"
    "      A host namespace of another tenant is refused unless --shared-host-namespace\n"
    "      (not isolated: the tenants can read each other's Secrets).\n"
    "      --egress-allow: passed to its server (kubicle serve; docs/egress.md).\n"
    "      Host limits (docs/isolation.md; -1: unlimited), a ResourceQuota and\n"
    "      LimitRange in the host namespace: [--max-pods N (100)] [--max-cpu Q (64)]\n"
    "      [--max-memory Q (256Gi)] [--max-pvcs N (20)] [--max-storage Q (1Ti)]\n"
    "      [--max-storage-class CLASS=Q[/N]]... [--max-services N (20)]\n"
    "      [--max-load-balancers N (0)] [--max-node-ports N (0)]\n"
    "      [--default-cpu-request Q (100m)] [--default-memory-request Q (128Mi)];\n"
    "      NetworkPolicies: its pods reach each other, the DNS, its server and\n"
    "      [--egress CIDR]... (0.0.0.0/0, ::/0) but [--egress-except CIDR]...\n"
    "      (private, shared, link-local and loopback ranges).\n"
    "  kubicle list [NAME]\n"
    "  kubicle kubeconfig NAME [--user U [--group G]... [--ttl D] [--token]]\n"
    "  kubicle stop NAME            remove its pods from the host, keep its store\n"
    "  kubicle start NAME | --all   start it again (its pods are queued again)\n"
    "  kubicle delete NAME [--ignore-not-found] [--no-wait] [--timeout S]\n"
    "      Stop it, delete every host object of it, remove its data.\n"
    "  kubicle snapshot NAME FILE   consistent copy of its store (online backup)\n"
    "  kubicle restore NAME FILE [create flags]   a new tenant from a snapshot\n"
    "  kubicle usage [NAME...] [--since T] [--until T] [--by tenant|namespace|queue|pod|node]\n"
    "                [--prices FILE] [--share-idle] [--chart FILE.svg] [-o table|json|csv]\n"
    "      GPU-hours, cost, share of capacity and idle from the tenants' GPU\n"
    "      allocation ledgers (docs/finops.md).\n"
    "  create, list, kubeconfig, stop, start and delete with --in-cluster\n"
    "      [--host-kubeconfig F (default $KUBECONFIG, ~/.kube/config)]: the same on\n"
    "      Tenant objects of the host cluster, run by `kubicle operator`\n"
    "      (docs/operator.md); create also takes --image, --storage, --storage-class.\n"
    "\n"
    "  kubicle version\n"
    "      Print the version.\n"
    "  kubicle --help\n";

/* The whole usage, serve's part (cmd/serve.c) in its place. */
static void usage(FILE *f)
{
	fputs(usage_head, f);
	fputs(serve_usage, f);
	fputs(usage_tail, f);
}

/* A tenant command with --in-cluster: on Tenant objects (cmd/operator.h). */
static bool in_cluster(int argc, char **argv)
{
	static const char *const cmds[] = {"create", "list",   "kubeconfig", "stop",
					   "start",  "delete", "snapshot",   "restore"};
	bool cmd = false;
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++)
		cmd = cmd || strcmp(argv[1], cmds[i]) == 0;
	for (int i = 2; cmd && i < argc; i++)
		if (strcmp(argv[i], "--in-cluster") == 0)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0) {
		printf("kubicle %s (Kubernetes API v1.33)\n", KUBICLE_VERSION);
		return 0;
	}
	kb_json_alloc_install();
	if (strcmp(argv[1], "token") == 0)
		return cmd_token(argc - 1, argv + 1);
	if (in_cluster(argc, argv))
		return cmd_incluster(argc - 1, argv + 1);
	if (strcmp(argv[1], "kubeconfig") == 0)
		return argc > 2 && argv[2][0] != '-' ? cmd_tenant_kubeconfig(argc - 1, argv + 1)
						     : cmd_kubeconfig(argc - 1, argv + 1);
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} tenant_cmds[] = {
	    {"create", cmd_create},   {"list", cmd_list},           {"start", cmd_start},
	    {"stop", cmd_stop},       {"delete", cmd_delete},       {"snapshot", cmd_snapshot},
	    {"restore", cmd_restore}, {"supervise", cmd_supervise}, {"usage", cmd_usage},
	};
	for (size_t i = 0; i < sizeof(tenant_cmds) / sizeof(*tenant_cmds); i++)
		if (strcmp(argv[1], tenant_cmds[i].name) == 0)
			return tenant_cmds[i].fn(argc - 1, argv + 1);
	if (strcmp(argv[1], "serve") == 0)
		return cmd_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "manifest") == 0)
		return cmd_manifest(argc - 1, argv + 1);
	if (strcmp(argv[1], "operator") == 0)
		return cmd_operator(argc - 1, argv + 1);
	fprintf(stderr, "kubicle: unknown command \"%s\"\n\n", argv[1]);
	usage(stderr);
	return 2;
}
