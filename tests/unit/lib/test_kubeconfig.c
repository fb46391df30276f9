/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of lib/kubeconfig_read: bearer tokens as client-go reads them. An
 * inline `token` wins over `tokenFile`; a tokenFile path is relative to the
 * kubeconfig's folder, its content is trimmed, and the creds remember the
 * file so a rotated token can be re-read; in-cluster credentials come from
 * KUBERNETES_SERVICE_HOST/PORT and the service-account folder, whose token
 * file rotates too.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/kubeconfig.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static char dir[64];

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/kb-kubeconfig-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void write_file(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static const char kc_file[] = "apiVersion: v1\nkind: Config\ncurrent-context: host\n"
			      "clusters:\n- name: h\n  cluster: {server: \"https://h:6443\"}\n"
			      "users:\n- name: syncer\n  user: {tokenFile: host-token}\n"
			      "contexts:\n- name: host\n  context: {cluster: h, user: syncer}\n";

START_TEST(token_file_relative_and_trimmed)
{
	mkdir_tmp();
	write_file("kubeconfig", kc_file);
	write_file("host-token", "  tok-1\n\n");
	char path[256], want[256];
	snprintf(path, sizeof(path), "%s/kubeconfig", dir);
	snprintf(want, sizeof(want), "%s/host-token", dir);
	struct kb_kubeconfig_creds c;
	ck_assert_int_eq(kb_kubeconfig_load(path, NULL, &c), 0);
	ck_assert_str_eq(c.server, "https://h:6443");
	ck_assert_str_eq(c.token, "tok-1");
	ck_assert_str_eq(c.token_file, want); /* made absolute: re-read from anywhere */
	/* the supervisor rewrites the file: re-reading gives the new token */
	write_file("host-token", "tok-2\n");
	char *t = NULL;
	ck_assert_int_eq(kb_kubeconfig_read_token(c.token_file, &t), 0);
	ck_assert_str_eq(t, "tok-2");
	free(t);
	kb_kubeconfig_creds_free(&c);
	ck_assert_ptr_null(c.token_file);
}
END_TEST

START_TEST(token_file_absolute)
{
	mkdir_tmp();
	char text[1024];
	snprintf(text, sizeof(text),
		 "current-context: x\nclusters:\n- name: c\n  cluster: {server: https://c:1}\n"
		 "users:\n- name: u\n  user: {tokenFile: %s/tok}\n"
		 "contexts:\n- name: x\n  context: {cluster: c, user: u}\n",
		 dir);
	write_file("tok", "abc");
	struct kb_kubeconfig_creds c;
	ck_assert_int_eq(kb_kubeconfig_parse(text, strlen(text), "/elsewhere", NULL, &c), 0);
	ck_assert_str_eq(c.token, "abc");
	ck_assert(strncmp(c.token_file, dir, strlen(dir)) == 0);
	kb_kubeconfig_creds_free(&c);
}
END_TEST

START_TEST(inline_token_wins)
{
	static const char kc[] =
	    "current-context: x\n"
	    "clusters:\n- name: c\n  cluster: {server: https://c:1}\n"
	    "users:\n- name: u\n  user: {token: inline, tokenFile: /nonexistent}\n"
	    "contexts:\n- name: x\n  context: {cluster: c, user: u}\n";
	struct kb_kubeconfig_creds c;
	ck_assert_int_eq(kb_kubeconfig_parse(kc, strlen(kc), "/tmp", NULL, &c), 0);
	ck_assert_str_eq(c.token, "inline");
	ck_assert_ptr_null(c.token_file); /* nothing to re-read */
	kb_kubeconfig_creds_free(&c);
}
END_TEST

START_TEST(token_file_missing_or_empty)
{
	mkdir_tmp();
	write_file("kubeconfig", kc_file);
	char path[256], tok[256];
	snprintf(path, sizeof(path), "%s/kubeconfig", dir);
	struct kb_kubeconfig_creds c;
	ck_assert_int_eq(kb_kubeconfig_load(path, NULL, &c), -ENOENT);
	/* not written yet: no token for now, the file is re-read later */
	write_file("host-token", " \n");
	ck_assert_int_eq(kb_kubeconfig_load(path, NULL, &c), 0);
	ck_assert_ptr_null(c.token);
	ck_assert_ptr_nonnull(c.token_file);
	kb_kubeconfig_creds_free(&c);
	snprintf(tok, sizeof(tok), "%s/host-token", dir);
	char *t = NULL;
	ck_assert_int_eq(kb_kubeconfig_read_token(tok, &t), -EINVAL);
	ck_assert_ptr_null(t);
}
END_TEST

START_TEST(in_cluster_token_file)
{
	mkdir_tmp();
	write_file("token", "sa-jwt\n");
	write_file("ca.crt", "PEM");
	struct kb_kubeconfig_creds c;
	unsetenv("KUBERNETES_SERVICE_HOST");
	ck_assert_int_eq(kb_kubeconfig_in_cluster(dir, &c), -ENOENT);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	ck_assert_int_eq(kb_kubeconfig_in_cluster(dir, &c), 0);
	ck_assert_str_eq(c.server, "https://[fd00::1]:443");
	ck_assert_str_eq(c.token, "sa-jwt");
	char want[256];
	snprintf(want, sizeof(want), "%s/token", dir);
	ck_assert_str_eq(c.token_file, want); /* the projected token rotates */
	snprintf(want, sizeof(want), "%s/ca.crt", dir);
	ck_assert_str_eq(c.ca_file, want);
	kb_kubeconfig_creds_free(&c);
}
END_TEST

static void cleanup(void)
{
	char p[256];
	const char *names[] = {"kubeconfig", "host-token", "tok", "token", "ca.crt"};
	if (!dir[0])
		return;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static Suite *suite(void)
{
	Suite *s = suite_create("lib_kubeconfig");
	TCase *tc = tcase_create("tokens");
	tcase_add_checked_fixture(tc, NULL, cleanup);
	tcase_add_test(tc, token_file_relative_and_trimmed);
	tcase_add_test(tc, token_file_absolute);
	tcase_add_test(tc, inline_token_wins);
	tcase_add_test(tc, token_file_missing_or_empty);
	tcase_add_test(tc, in_cluster_token_file);
	suite_add_tcase(s, tc);
	return s;
}
