/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading kubeconfig files with libyaml: the document is loaded, turned into
 * a jansson tree (every scalar a string), and the current context is
 * resolved to its cluster and user entries. Also the in-cluster service
 * account credentials a pod has, and the token file reader used both at load
 * time and when a rotating token is re-read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/json.h"
#include "lib/kubeconfig.h"
#include "lib/pki.h"
#include "lib/util.h"

/* The `field` object of the entry named `name` in the list `list`. */
static json_t *named(json_t *root, const char *list, const char *name, const char *field)
{
	size_t i;
	json_t *e;
	json_array_foreach (json_object_get(root, list), i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));
		if (n && name && strcmp(n, name) == 0)
			return json_object_get(e, field);
	}
	return NULL;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s && *s ? s : NULL;
}

static char *abs_path(const char *dir, const char *p)
{
	if (p[0] == '/' || !dir)
		return strdup(p);
	size_t n = strlen(dir) + strlen(p) + 2;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s/%s", dir, p);
	return s;
}

static int decode_b64(const char *s, char **out)
{
	unsigned char *bin;
	size_t n;
	int rc = kb_base64_decode(s, strlen(s), &bin, &n);
	if (rc < 0)
		return rc;
	*out = malloc(n + 1);
	if (!*out) {
		free(bin);
		return -ENOMEM;
	}
	memcpy(*out, bin, n);
	(*out)[n] = '\0';
	free(bin);
	return 0;
}

/* data (base64) wins over a file path, as in client-go. */
static int data_or_file(json_t *o, const char *data_key, const char *file_key, const char *dir,
			char **out)
{
	const char *d = str(o, data_key), *f = str(o, file_key);
	if (d)
		return decode_b64(d, out);
	if (!f)
		return 0;
	char *p = abs_path(dir, f);
	if (!p)
		return -ENOMEM;
	int rc = kb_read_file(p, out, NULL);
	free(p);
	return rc;
}

static int read_cluster(json_t *cl, const char *dir, struct kb_kubeconfig_creds *c)
{
	if (!str(cl, "server"))
		return -EINVAL;
	c->server = strdup(str(cl, "server"));
	const char *ins = str(cl, "insecure-skip-tls-verify");
	c->insecure = ins && strcmp(ins, "true") == 0;
	if (str(cl, "certificate-authority-data"))
		return decode_b64(str(cl, "certificate-authority-data"), &c->ca_pem);
	if (str(cl, "certificate-authority"))
		c->ca_file = abs_path(dir, str(cl, "certificate-authority"));
	return 0;
}

/* The token file's first read. An empty file is not an error: the writer
 * (a supervisor, the kubelet) may not have filled it yet; the client starts
 * without a token and re-reads the file later. */
static int first_token(struct kb_kubeconfig_creds *c)
{
	int rc = kb_kubeconfig_read_token(c->token_file, &c->token);
	return rc == -EINVAL ? 0 : rc;
}

static int read_user(json_t *u, const char *dir, struct kb_kubeconfig_creds *c)
{
	int rc =
	    data_or_file(u, "client-certificate-data", "client-certificate", dir, &c->cert_pem);
	if (rc == 0)
		rc = data_or_file(u, "client-key-data", "client-key", dir, &c->key_pem);
	if (rc < 0)
		return rc;
	/* client-go: an inline token wins over tokenFile */
	if (str(u, "token")) {
		c->token = strdup(str(u, "token"));
		return c->token ? 0 : -ENOMEM;
	}
	if (!str(u, "tokenFile"))
		return 0;
	c->token_file = abs_path(dir, str(u, "tokenFile"));
	return c->token_file ? first_token(c) : -ENOMEM;
}

int kb_kubeconfig_parse(const char *text, size_t len, const char *dir, const char *context,
			struct kb_kubeconfig_creds *out)
{
	memset(out, 0, sizeof(*out));
	json_t *root = kb_yaml_load(text, len, NULL, 0);
	if (!json_is_object(root)) {
		json_decref(root);
		return -EINVAL;
	}
	int rc = -ENOENT;
	const char *ctx_name = context ? context : str(root, "current-context");
	json_t *ctx = named(root, "contexts", ctx_name, "context");
	json_t *cl = named(root, "clusters", str(ctx, "cluster"), "cluster");
	json_t *u = named(root, "users", str(ctx, "user"), "user");
	if (!ctx || !cl)
		goto out;
	rc = read_cluster(cl, dir, out);
	if (rc == 0 && u)
		rc = read_user(u, dir, out);
out:
	json_decref(root);
	if (rc < 0)
		kb_kubeconfig_creds_free(out);
	return rc;
}

int kb_kubeconfig_load(const char *path, const char *context, struct kb_kubeconfig_creds *out)
{
	char *text = NULL;
	size_t len = 0;
	int rc = kb_read_file(path, &text, &len);
	if (rc < 0)
		return rc;
	char *dir = strdup(path);
	char *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash)
		*slash = '\0';
	rc = kb_kubeconfig_parse(text, len, slash ? dir : ".", context, out);
	free(dir);
	free(text);
	return rc;
}

int kb_kubeconfig_in_cluster(const char *sa_dir, struct kb_kubeconfig_creds *out)
{
	memset(out, 0, sizeof(*out));
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	if (!sa_dir)
		sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
	if (!host || !port || !*host || !*port)
		return -ENOENT;
	char buf[4096];
	bool v6 = strchr(host, ':') != NULL;
	snprintf(buf, sizeof(buf), v6 ? "https://[%s]:%s" : "https://%s:%s", host, port);
	out->server = strdup(buf);
	snprintf(buf, sizeof(buf), "%s/token", sa_dir);
	out->token_file = strdup(buf);
	int rc = out->token_file ? first_token(out) : -ENOMEM;
	if (rc < 0) {
		kb_kubeconfig_creds_free(out);
		return rc;
	}
	snprintf(buf, sizeof(buf), "%s/ca.crt", sa_dir);
	out->ca_file = strdup(buf);
	return 0;
}

void kb_kubeconfig_creds_free(struct kb_kubeconfig_creds *c)
{
	free(c->server);
	free(c->ca_pem);
	free(c->ca_file);
	free(c->cert_pem);
	free(c->key_pem);
	free(c->token);
	free(c->token_file);
	memset(c, 0, sizeof(*c));
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' || ch == '\f';
}

int kb_kubeconfig_read_token(const char *path, char **out)
{
	char *text = NULL;
	size_t len = 0;
	int rc = kb_read_file(path, &text, &len);
	if (rc < 0)
		return rc;
	size_t start = 0;
	while (start < len && is_space(text[start]))
		start++;
	while (len > start && is_space(text[len - 1]))
		len--;
	if (len == start || memchr(text + start, '\0', len - start)) {
		free(text);
		return -EINVAL;
	}
	memmove(text, text + start, len - start);
	text[len - start] = '\0';
	*out = text;
	return 0;
}
