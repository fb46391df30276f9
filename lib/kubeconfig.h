/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writing kubeconfig files (YAML) that kubectl and client libraries use
 * as-is. Reading host kubeconfigs comes with the syncer.
 *
 * Threading: blocking file I/O; not for request paths.
 */
#ifndef KB_KUBECONFIG_H
#define KB_KUBECONFIG_H

struct kb_kubeconfig {
	const char *name;        /* cluster, user and context name */
	const char *server;      /* "https://127.0.0.1:6443" */
	const char *ca_pem;      /* PEM of the CA (embedded as data) */
	const char *cert_pem;    /* client certificate PEM or NULL */
	const char *key_pem;     /* client key PEM or NULL */
	const char *token;       /* bearer token or NULL */
	const char *user;        /* user entry name; NULL: same as name */
};

/* Renders the kubeconfig into a malloc'ed string. */
int kb_kubeconfig_render(const struct kb_kubeconfig *kc, char **out);
/* Renders and writes atomically with mode 0600. */
int kb_kubeconfig_write(const char *path, const struct kb_kubeconfig *kc);

#endif
