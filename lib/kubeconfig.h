/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writing kubeconfig files (YAML) that kubectl and client libraries use
 * as-is, and reading the host cluster's kubeconfig (or in-cluster
 * credentials) for the syncer.
 *
 * Threading: blocking file I/O; not for request paths.
 */
#ifndef KB_KUBECONFIG_H
#define KB_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct kb_kubeconfig {
	const char *name;     /* cluster, user and context name */
	const char *server;   /* "https://127.0.0.1:6443" */
	const char *ca_pem;   /* PEM of the CA (embedded as data) */
	const char *cert_pem; /* client certificate PEM or NULL */
	const char *key_pem;  /* client key PEM or NULL */
	const char *token;    /* bearer token or NULL */
	const char *user;     /* user entry name; NULL: same as name */
};

/* Renders the kubeconfig into a malloc'ed string. */
int kb_kubeconfig_render(const struct kb_kubeconfig *kc, char **out);
/* Renders and writes atomically with mode 0600. */
int kb_kubeconfig_write(const char *path, const struct kb_kubeconfig *kc);

/* ---- reading (kubeconfig_read.c) ----------------------------------------- */
/* What a client needs to reach a cluster. Every string is malloc'ed (or
 * NULL) and owned by the struct; kb_kubeconfig_creds_free releases them. */
struct kb_kubeconfig_creds {
	char *server;   /* "https://host:port" */
	char *ca_pem;   /* certificate-authority-data, decoded */
	char *ca_file;  /* certificate-authority (path, made absolute) */
	char *cert_pem; /* client-certificate(-data), PEM */
	char *key_pem;  /* client-key(-data), PEM */
	char *token;    /* token or the content of tokenFile */
	bool insecure;  /* insecure-skip-tls-verify: true */
	/* The file `token` was read from (tokenFile, made absolute, or the
	 * in-cluster service-account token), or NULL for an inline token. Such
	 * tokens rotate: clients re-read the file (kb_kubeconfig_read_token).
	 * A file that exists but is still empty leaves `token` NULL. */
	char *token_file;
};
/* Reads the kubeconfig at `path` and resolves `context` (NULL: the file's
 * current-context) to its cluster and user. Relative file paths are taken
 * relative to the kubeconfig's folder. 0, -ENOENT (file, context, cluster or
 * user missing), -EINVAL (not a kubeconfig). */
int kb_kubeconfig_load(const char *path, const char *context, struct kb_kubeconfig_creds *out);
/* The same from text already in memory (`dir` resolves relative paths). */
int kb_kubeconfig_parse(const char *text, size_t len, const char *dir, const char *context,
			struct kb_kubeconfig_creds *out);
/* In-cluster credentials: KUBERNETES_SERVICE_HOST/PORT and the service
 * account's token and CA under `sa_dir` (NULL: the standard
 * /var/run/secrets/kubernetes.io/serviceaccount). -ENOENT when not in a pod. */
int kb_kubeconfig_in_cluster(const char *sa_dir, struct kb_kubeconfig_creds *out);
void kb_kubeconfig_creds_free(struct kb_kubeconfig_creds *c);
/* Reads a bearer token file as client-go does (surrounding white space
 * trimmed). *out gets a malloc'ed string the caller frees. 0, a negative
 * errno from reading, or -EINVAL when the file holds no token. */
int kb_kubeconfig_read_token(const char *path, char **out);

#endif
