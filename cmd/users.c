/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials for a tenant's users, made without a running server (they
 * work on DIR's files and store directly; a running server sees them at
 * once because it reads tokens from the store per request):
 *   kubicle token create --data-dir DIR --user NAME [--group G]... [--ttl D]
 *   kubicle token revoke --data-dir DIR (TOKEN | --user NAME)
 *   kubicle kubeconfig --data-dir DIR --user NAME [--group G]... [--ttl D]
 *                      [--out FILE] [--token]
 */
#include "cmd/users.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <uv.h>

#include "lib/kubeconfig.h"
#include "lib/pki.h"
#include "proxy/proxy.h"
#include "store/store.h"

#define MAX_GROUPS 16

struct user_args {
	const char *data_dir, *user, *out;
	const char *groups[MAX_GROUPS];
	size_t ngroups;
	long ttl;
	bool token;
	const char *positional;
};

/* Go-style durations: "90s", "30m", "24h", "1h30m", plus "d" for days. */
long users_parse_duration(const char *s)
{
	long total = 0;
	if (!s || !*s)
		return -1;
	while (*s) {
		char *end;
		long n = strtol(s, &end, 10);
		if (end == s || n < 0 || n > 100000000L) /* no overflow below */
			return -1;
		switch (*end) {
		case 's': total += n; break;
		case 'm': total += n * 60; break;
		case 'h': total += n * 3600; break;
		case 'd': total += n * 86400; break;
		case '\0': return total + n;
		default: return -1;
		}
		if (total > 100000000L * 86400L)
			return -1;
		s = end + 1;
	}
	return total;
}

void users_format_duration(long s, char *buf, size_t len)
{
	if (s < 0)
		s = 0;
	if (s < 120)
		snprintf(buf, len, "%lds", s);
	else if (s < 3 * 3600)
		snprintf(buf, len, "%ldm", s / 60);
	else if (s < 2 * 86400)
		snprintf(buf, len, "%ldh", s / 3600);
	else
		snprintf(buf, len, "%ldd", s / 86400);
}

static int parse(int argc, char **argv, struct user_args *a)
{
	static const struct option opts[] = {
	    {"data-dir", required_argument, NULL, 'd'},
	    {"user", required_argument, NULL, 'u'},
	    {"group", required_argument, NULL, 'g'},
	    {"ttl", required_argument, NULL, 't'},
	    {"out", required_argument, NULL, 'o'},
	    {"token", no_argument, NULL, 'k'},
	    {NULL, 0, NULL, 0},
	};
	memset(a, 0, sizeof(*a));
	int c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': a->data_dir = optarg; break;
		case 'u': a->user = optarg; break;
		case 'o': a->out = optarg; break;
		case 'k': a->token = true; break;
		case 'g':
			if (a->ngroups == MAX_GROUPS)
				return -EINVAL;
			a->groups[a->ngroups++] = optarg;
			break;
		case 't':
			a->ttl = users_parse_duration(optarg);
			if (a->ttl <= 0) {
				fprintf(stderr, "kubicle: bad --ttl %s\n", optarg);
				return -EINVAL;
			}
			break;
		default: return -EINVAL;
		}
	}
	if (optind < argc)
		a->positional = argv[optind];
	if (!a->data_dir) {
		fprintf(stderr, "kubicle: --data-dir is required\n");
		return -EINVAL;
	}
	return 0;
}

static int with_store(const char *dir, store_t **st, uv_loop_t *loop)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/kubicle.db", dir);
	if (access(path, R_OK | W_OK) != 0)
		return -ENOENT;
	struct store_opts so = {0};
	return store_open(loop, path, &so, st);
}

static void close_store(store_t *st, uv_loop_t *loop)
{
	store_close(st);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_loop_close(loop);
}

static char *new_token(void)
{
	unsigned char raw[24];
	static const char hex[] = "0123456789abcdef";
	char *t = malloc(2 * sizeof(raw) + 1);
	if (!t || RAND_bytes(raw, sizeof(raw)) != 1) {
		free(t);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		t[2 * i] = hex[raw[i] >> 4];
		t[2 * i + 1] = hex[raw[i] & 15];
	}
	t[2 * sizeof(raw)] = '\0';
	return t;
}

/* Creates a token in DIR's store; *out is malloc'ed. */
static int token_create(const struct user_args *a, char **out)
{
	uv_loop_t loop;
	store_t *st = NULL;
	uv_loop_init(&loop);
	int rc = with_store(a->data_dir, &st, &loop);
	if (rc < 0) {
		uv_loop_close(&loop);
		return rc;
	}
	char *t = new_token();
	rc = t ? proxy_token_add(st, t, a->user, a->groups, a->ngroups, a->ttl) : -ENOMEM;
	close_store(st, &loop);
	if (rc < 0)
		free(t);
	else
		*out = t;
	return rc;
}

static int token_revoke(const struct user_args *a)
{
	uv_loop_t loop;
	store_t *st = NULL;
	uv_loop_init(&loop);
	int rc = with_store(a->data_dir, &st, &loop);
	if (rc < 0) {
		uv_loop_close(&loop);
		return rc;
	}
	rc = proxy_token_revoke(st, a->user ? NULL : a->positional, a->user);
	close_store(st, &loop);
	return rc;
}

int cmd_token(int argc, char **argv)
{
	struct user_args a;
	if (argc < 2 || parse(argc - 1, argv + 1, &a) < 0) {
		fprintf(stderr, "usage: kubicle token create|revoke --data-dir DIR ...\n");
		return 2;
	}
	if (strcmp(argv[1], "create") == 0) {
		char *t = NULL;
		if (!a.user) {
			fprintf(stderr, "kubicle token create: --user is required\n");
			return 2;
		}
		int rc = token_create(&a, &t);
		if (rc < 0) {
			fprintf(stderr, "kubicle token create: %s\n", strerror(-rc));
			return 1;
		}
		printf("%s\n", t);
		free(t);
		return 0;
	}
	if (strcmp(argv[1], "revoke") == 0) {
		if (!a.user && !a.positional) {
			fprintf(stderr, "kubicle token revoke: give a TOKEN or --user NAME\n");
			return 2;
		}
		int rc = token_revoke(&a);
		if (rc < 0) {
			fprintf(stderr, "kubicle token revoke: %s\n",
				rc == -ENOENT ? "no such token" : strerror(-rc));
			return 1;
		}
		printf("revoked %d token(s)\n", rc);
		return 0;
	}
	fprintf(stderr, "kubicle token: unknown subcommand \"%s\"\n", argv[1]);
	return 2;
}

/* The server URL from DIR/kubeconfig (written by `serve`). */
static int server_url(const char *dir, char *buf, size_t len)
{
	char path[4096], *kc = NULL;
	snprintf(path, sizeof(path), "%s/kubeconfig", dir);
	int rc = kb_read_file(path, &kc, NULL);
	if (rc < 0)
		return rc;
	const char *p = strstr(kc, "server:");
	rc = -ENOENT;
	if (p) {
		p += 7;
		while (*p == ' ' || *p == '"')
			p++;
		size_t n = strcspn(p, "\"\r\n ");
		snprintf(buf, len, "%.*s", (int)n, p);
		rc = 0;
	}
	free(kc);
	return rc;
}

int cmd_kubeconfig(int argc, char **argv)
{
	struct user_args a;
	char url[512], path[4096];
	char *ca = NULL, *cert = NULL, *key = NULL, *tok = NULL, *text = NULL;
	int rc;
	if (parse(argc, argv, &a) < 0 || !a.user) {
		fprintf(stderr,
			"usage: kubicle kubeconfig --data-dir DIR --user NAME [--group G]... "
			"[--ttl D] [--out FILE] [--token]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/ca.crt", a.data_dir);
	if ((rc = server_url(a.data_dir, url, sizeof(url))) < 0 ||
	    (rc = kb_read_file(path, &ca, NULL)) < 0)
		goto out;
	if (a.token)
		rc = token_create(&a, &tok);
	else
		rc = kb_pki_issue_client(a.data_dir, a.user, a.groups, a.ngroups, a.ttl, &cert,
					 &key);
	if (rc < 0)
		goto out;
	struct kb_kubeconfig kc = {.name = "kubicle",
				   .server = url,
				   .ca_pem = ca,
				   .cert_pem = cert,
				   .key_pem = key,
				   .token = tok,
				   .user = a.user};
	rc = a.out ? kb_kubeconfig_write(a.out, &kc) : kb_kubeconfig_render(&kc, &text);
	if (rc == 0 && text)
		fputs(text, stdout);
out:
	if (rc < 0)
		fprintf(stderr, "kubicle kubeconfig: %s\n", strerror(-rc));
	free(ca);
	free(cert);
	free(key);
	free(tok);
	free(text);
	return rc < 0 ? 1 : 0;
}
