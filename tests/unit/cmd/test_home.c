/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for cmd/home.c's home_port: the tenant's port read from the server
 * line of the kubeconfig its server writes (kubicle list and the supervisor),
 * the YAML parser asked only when the text is not shaped as ours.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/home.h"
#include "lib/pki.h" /* kb_write_file */

static Suite *suite(void);
#include "tests/unit/check_main.h"

static struct tenant t;

static int port_of(const char *kubeconfig)
{
	char path[sizeof(t.dir) + 16];
	snprintf(path, sizeof(path), "%s/kubeconfig", t.dir);
	ck_assert_int_eq(kb_write_file(path, kubeconfig, strlen(kubeconfig), 0600), 0);
	return home_port(&t);
}

static void setup(void)
{
	memset(&t, 0, sizeof(t));
	snprintf(t.dir, sizeof(t.dir), "/tmp/kubicle-test-home.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(t.dir));
}

static void teardown(void)
{
	home_rmtree(t.dir);
}

#define CLUSTER(server)                                                                     \
	"apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n"                             \
	"    certificate-authority-data: TFMwdExTMUNSVWRKVGlCRFJWSlU=\n    server: " server \
	"\n  name: \"kubicle\"\ncontexts:\n- context:\n    cluster: \"kubicle\"\n"          \
	"    user: \"kubicle-admin\"\n  name: \"kubicle\"\ncurrent-context: \"kubicle\"\n"  \
	"users:\n- name: \"kubicle-admin\"\n  user:\n    token: x\n"

START_TEST(test_ours)
{
	ck_assert_int_eq(port_of(CLUSTER("\"https://127.0.0.1:36887\"")), 36887);
	ck_assert_int_eq(port_of(CLUSTER("https://[::1]:443")), 443);
	ck_assert_int_eq(port_of(CLUSTER("\"https://10.0.0.1:6443\"  ")), 6443);
}
END_TEST

START_TEST(test_not_a_port)
{
	ck_assert_int_eq(port_of(CLUSTER("\"https://127.0.0.1\"")), 0);
	ck_assert_int_eq(port_of(CLUSTER("\"https://127.0.0.1:99999\"")), 0);
	ck_assert_int_eq(port_of(CLUSTER("\"https://127.0.0.1:0\"")), 0);
	ck_assert_int_eq(port_of("server: :\n"), 0);
	ck_assert_int_eq(port_of(""), 0);
	ck_assert_int_eq(home_port(&(struct tenant){.dir = "/nonexistent"}), 0);
}
END_TEST

/* two server lines: not our file; the parser takes the current context's */
START_TEST(test_two_clusters)
{
	const char *kc = "apiVersion: v1\nkind: Config\nclusters:\n"
			 "- cluster:\n    server: https://127.0.0.1:1111\n  name: a\n"
			 "- cluster:\n    server: https://127.0.0.1:2222\n  name: b\n"
			 "contexts:\n- context:\n    cluster: b\n    user: u\n  name: b\n"
			 "current-context: b\nusers:\n- name: u\n  user:\n    token: x\n";
	ck_assert_int_eq(port_of(kc), 2222);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("home");
	TCase *tc = tcase_create("port");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_ours);
	tcase_add_test(tc, test_not_a_port);
	tcase_add_test(tc, test_two_clusters);
	suite_add_tcase(s, tc);
	return s;
}
