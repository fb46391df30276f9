/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `kubicle manifest NAME` subcommand (cmd/manifest.c): prints the host
 * cluster objects that run tenant NAME's control plane inside the host
 * (namespace, RBAC for the syncer, the certificates Secret, a Service and a
 * StatefulSet running `kubicle serve` in-cluster) as a YAML stream or a JSON
 * v1 List for `kubectl apply -f -`. docs/in-cluster.md describes the result.
 * The same builders serve the operator (cmd/operator.h), which applies them
 * for every Tenant object.
 * Threading: blocking; CLI and the operator's reconcile only.
 */
#ifndef KB_CMD_MANIFEST_H
#define KB_CMD_MANIFEST_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

/* argv[0] is "manifest"; returns the process exit code (0, 1 error, 2 usage).
 * With --operator among the arguments: cmd_manifest_operator. */
int cmd_manifest(int argc, char **argv);

/* What the builders need of a tenant: `kubicle manifest`'s flags. Every
 * pointer is borrowed for the call; NULL or "" takes the default (ns
 * kubicle-NAME, scheduler kai, image ghcr.io/kubicle/kubicle:VERSION,
 * storage 1Gi). `policy` must be a shipped policy's name (a file is
 * refused: it would be read from this machine). */
struct manifest_spec {
	const char *name, *ns, *queue, *scheduler, *policy, *image, *storage, *storage_class;
	const char *floor;         /* privileged | baseline | restricted, NULL: serve's default */
	long gpus;                 /* -1: no GPU ResourceQuota */
	const char *const *egress; /* --egress-allow CIDRs */
	size_t negress;
};

/* PEM texts of the tenant's certificates, each malloc'ed (or NULL). */
struct manifest_pki {
	char *ca_crt, *ca_key, *server_crt, *server_key, *admin_crt, *admin_key;
};

/* 0 when s is valid, else -EINVAL with err set to why (in the words of
 * kubicle manifest's messages). */
int manifest_check(const struct manifest_spec *s, char *err, size_t len);

/* Makes the tenant's certificates: a serving certificate for the Service's
 * names, signed by seed's CA when seed (may be NULL) has one (its admin
 * credential kept when it has one), else by a new CA. Uses a temporary
 * folder under $TMPDIR (default /tmp), removed again. 0 or a negative
 * errno with err set; *out is freed with manifest_pki_free. */
int manifest_pki_make(const struct manifest_spec *s, const struct manifest_pki *seed,
		      struct manifest_pki *out, char *err, size_t len);
void manifest_pki_free(struct manifest_pki *p);

/* Every host object of `kubicle manifest` for s, in apply order, as a new
 * JSON array (NULL with err set when s is invalid). p: borrowed. */
json_t *manifest_objects(const struct manifest_spec *s, const struct manifest_pki *p, char *err,
			 size_t len);

/* Prints items (borrowed) as a YAML stream, or a JSON v1 List. */
int manifest_print(json_t *items, bool json, FILE *out);

#endif
