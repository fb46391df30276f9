/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `kubicle manifest NAME` subcommand (cmd/manifest.c): prints the host
 * cluster objects that run tenant NAME's control plane inside the host
 * (namespace, RBAC for the syncer, the certificates Secret, a Service and a
 * StatefulSet running `kubicle serve` in-cluster) as a YAML stream or a JSON
 * v1 List for `kubectl apply -f -`. docs/in-cluster.md describes the result.
 * Threading: blocking; CLI only.
 */
#ifndef KB_CMD_MANIFEST_H
#define KB_CMD_MANIFEST_H

/* argv[0] is "manifest"; returns the process exit code (0, 1 error, 2 usage). */
int cmd_manifest(int argc, char **argv);

#endif
