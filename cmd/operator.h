/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `kubicle operator` (cmd/operator.c): production mode (issue 28, docs/operator.md).
 * Tenants live in the host cluster as Tenant objects (tenants.kubicle.dev/v1,
 * deploy/tenant-crd.yaml) and this controller turns each into the host
 * objects `kubicle manifest` describes (cmd/manifest.h) plus those of
 * `kubicle create` (cmd/hostsetup.h: queue, syncer identity, host limits),
 * a Secret with the tenant's admin kubeconfig, and the Tenant's status.
 *
 *   kubicle operator [--host-kubeconfig FILE] [--namespace NS] [--id ID]
 *                    [--lease-duration S] [--renew-deadline S] [--retry-period S]
 *                    [--resync S] [--image IMG] [--no-install-crd]
 *   kubicle manifest --operator [--namespace NS] [--image IMG] [-o yaml|json]
 *
 * Threading: one thread; host calls block it (cmd/hostapi.h), the watch and
 * the timers run on its libuv loop between them.
 */
#ifndef KB_CMD_OPERATOR_H
#define KB_CMD_OPERATOR_H

/* argv[0] is "operator"; runs until SIGTERM/SIGINT (0) or a fatal error (1);
 * 2 on usage errors. */
int cmd_operator(int argc, char **argv);

/* argv[0] is "manifest", --operator among the arguments: prints the CRD,
 * the operator's RBAC and Deployment. Exit code as cmd_manifest's. */
int cmd_manifest_operator(int argc, char **argv);

/* `kubicle create|list|kubeconfig|stop|start|delete ... --in-cluster`
 * (cmd/operator_cli.c): argv[0] is the command; the same output and -o json
 * as the local mode, on Tenant objects. Exit code as cmd/tenant.h's. */
int cmd_incluster(int argc, char **argv);

/* The Tenant CRD, deploy/tenant-crd.yaml's text (cmd/operator_crd_gen.c). */
extern const char operator_crd_yaml[];

#endif
