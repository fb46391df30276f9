/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubeconfig writer (see kubeconfig.h): one cluster, one user and one
 * context, with the CA and client credentials embedded as base64 data, in
 * the layout `kubectl config view --raw` prints. Every string scalar is
 * emitted as a YAML double-quoted scalar with escapes, so names and servers
 * can hold any character without changing the document's structure.
 */
#include "lib/kubeconfig.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/pki.h"
#include "lib/util.h"

/* Appends `s` as a YAML double-quoted scalar. */
static int put_quoted(struct kb_buf *b, const char *s)
{
	int rc = kb_buf_puts(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; rc == 0 && *p; p++) {
		if (*p == '"' || *p == '\\') {
			char esc[2] = {'\\', (char)*p};
			rc = kb_buf_append(b, esc, 2);
		} else if (*p < 0x20 || *p == 0x7f) {
			rc = kb_buf_printf(b, "\\x%02x", *p);
		} else {
			rc = kb_buf_append(b, (const char *)p, 1);
		}
	}
	return rc ? rc : kb_buf_puts(b, "\"");
}

/* "<indent><key>: <quoted value>\n" */
static int put_kv(struct kb_buf *b, const char *indent_key, const char *value)
{
	int rc = kb_buf_puts(b, indent_key);
	if (rc == 0)
		rc = kb_buf_puts(b, ": ");
	if (rc == 0)
		rc = put_quoted(b, value);
	return rc ? rc : kb_buf_puts(b, "\n");
}

/* "<indent><key>: <base64 of data>\n" */
static int put_b64(struct kb_buf *b, const char *indent_key, const char *data)
{
	char *enc = kb_base64_encode(data, strlen(data));
	if (!enc)
		return -ENOMEM;
	int rc = kb_buf_printf(b, "%s: %s\n", indent_key, enc);
	free(enc);
	return rc;
}

static int render_cluster(struct kb_buf *b, const struct kb_kubeconfig *kc)
{
	int rc = kb_buf_puts(b, "clusters:\n- cluster:\n");
	if (rc == 0 && kc->ca_pem)
		rc = put_b64(b, "    certificate-authority-data", kc->ca_pem);
	if (rc == 0)
		rc = put_kv(b, "    server", kc->server);
	if (rc == 0)
		rc = put_kv(b, "  name", kc->name);
	return rc;
}

static int render_context(struct kb_buf *b, const struct kb_kubeconfig *kc, const char *user)
{
	int rc = kb_buf_puts(b, "contexts:\n- context:\n");
	if (rc == 0)
		rc = put_kv(b, "    cluster", kc->name);
	if (rc == 0)
		rc = put_kv(b, "    user", user);
	if (rc == 0)
		rc = put_kv(b, "  name", kc->name);
	if (rc == 0)
		rc = put_kv(b, "current-context", kc->name);
	return rc;
}

static int render_user(struct kb_buf *b, const struct kb_kubeconfig *kc, const char *user)
{
	int rc = kb_buf_puts(b, "users:\n");
	if (rc == 0)
		rc = put_kv(b, "- name", user);
	if (rc == 0)
		rc = kb_buf_puts(b, "  user:\n");
	if (rc == 0 && kc->cert_pem)
		rc = put_b64(b, "    client-certificate-data", kc->cert_pem);
	if (rc == 0 && kc->key_pem)
		rc = put_b64(b, "    client-key-data", kc->key_pem);
	if (rc == 0 && kc->token)
		rc = put_kv(b, "    token", kc->token);
	if (rc == 0 && !kc->cert_pem && !kc->key_pem && !kc->token)
		rc = kb_buf_puts(b, "    {}\n");
	return rc;
}

int kb_kubeconfig_render(const struct kb_kubeconfig *kc, char **out)
{
	KB_CHECK(kc && kc->name && kc->server && out, -EINVAL);
	KB_CHECK(!kc->cert_pem == !kc->key_pem, -EINVAL);
	const char *user = kc->user ? kc->user : kc->name;
	struct kb_buf b = {0};
	int rc = kb_buf_puts(&b, "apiVersion: v1\nkind: Config\n");
	if (rc == 0)
		rc = render_cluster(&b, kc);
	if (rc == 0)
		rc = render_context(&b, kc, user);
	if (rc == 0)
		rc = kb_buf_puts(&b, "preferences: {}\n");
	if (rc == 0)
		rc = render_user(&b, kc, user);
	if (rc < 0) {
		kb_buf_free(&b);
		return rc;
	}
	*out = b.data;
	return 0;
}

int kb_kubeconfig_write(const char *path, const struct kb_kubeconfig *kc)
{
	char *text = NULL;
	int rc = kb_kubeconfig_render(kc, &text);
	if (rc < 0)
		return rc;
	rc = kb_write_file(path, text, strlen(text), 0600);
	free(text);
	return rc;
}
