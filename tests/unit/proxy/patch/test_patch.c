/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests of proxy/patch: JSON merge patch (RFC 7386 appendix A), JSON patch
 * (RFC 6902 appendix A and error cases) and Kubernetes strategic merge patch
 * with the real type tables (bodies as kubectl sends them).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/patch/patch.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *v = json_loads(s, JSON_DECODE_ANY, &e);

	ck_assert_msg(v != NULL, "bad JSON in test: %s (%s)", s, e.text);
	return v;
}

static void assert_json(json_t *got, const char *want)
{
	json_t *w = J(want);
	char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);

	ck_assert_msg(json_equal(got, w), "got %s, want %s", g, want);
	free(g);
	json_decref(w);
}

/* --- RFC 7386 ------------------------------------------------------- */

static void merge_case(const char *doc, const char *patch, const char *want)
{
	json_t *d = J(doc), *p = J(patch), *out = NULL;

	ck_assert_int_eq(patch_merge(d, p, &out), 0);
	assert_json(out, want);
	json_decref(d);
	json_decref(p);
	json_decref(out);
}

START_TEST(merge_rfc7386_appendix_a)
{
	merge_case("{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
	merge_case("{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}");
	merge_case("{\"a\":\"b\"}", "{\"a\":null}", "{}");
	merge_case("{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}");
	merge_case("{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}");
	merge_case("{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}");
	merge_case("{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}",
		   "{\"a\":{\"b\":\"d\"}}");
	merge_case("{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}");
	merge_case("[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]");
	merge_case("{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]");
	merge_case("{\"a\":\"foo\"}", "null", "null");
	merge_case("{\"a\":\"foo\"}", "\"bar\"", "\"bar\"");
	merge_case("{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}");
	merge_case("[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}");
	merge_case("{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}");
}
END_TEST

START_TEST(merge_kubectl_label_and_input_untouched)
{
	json_t *d = J("{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}");
	json_t *p = J("{\"metadata\":{\"labels\":{\"a\":null,\"c\":\"3\"}}}"), *out;

	ck_assert_int_eq(patch_merge(d, p, &out), 0);
	assert_json(out, "{\"metadata\":{\"name\":\"p\",\"labels\":{\"b\":\"2\",\"c\":\"3\"}}}");
	/* the input is borrowed: unchanged */
	assert_json(d, "{\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"1\",\"b\":\"2\"}}}");
	json_decref(d);
	json_decref(p);
	json_decref(out);
}
END_TEST

/* --- RFC 6902 ------------------------------------------------------- */

static void json_case(const char *doc, const char *ops, const char *want)
{
	json_t *d = J(doc), *p = J(ops), *out = NULL;
	char err[256] = "";

	ck_assert_msg(patch_json(d, p, &out, err, sizeof(err)) == 0, "%s: %s", ops, err);
	assert_json(out, want);
	json_decref(d);
	json_decref(p);
	json_decref(out);
}

static void json_fail(const char *doc, const char *ops, int want, const char *msg_part)
{
	json_t *d = J(doc), *p = J(ops), *out = NULL;
	json_t *before = json_deep_copy(d);
	char err[256] = "";

	ck_assert_int_eq(patch_json(d, p, &out, err, sizeof(err)), want);
	ck_assert_ptr_null(out);
	ck_assert_msg(strstr(err, msg_part) != NULL, "error '%s' lacks '%s'", err, msg_part);
	ck_assert(json_equal(d, before));
	json_decref(before);
	json_decref(d);
	json_decref(p);
}

START_TEST(json_rfc6902_appendix_a)
{
	/* A.1 */
	json_case("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]",
		  "{\"baz\":\"qux\",\"foo\":\"bar\"}");
	/* A.2 */
	json_case("{\"foo\":[\"bar\",\"baz\"]}",
		  "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
		  "{\"foo\":[\"bar\",\"qux\",\"baz\"]}");
	/* A.3 */
	json_case("{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]",
		  "{\"foo\":\"bar\"}");
	/* A.4 */
	json_case("{\"foo\":[\"bar\",\"qux\",\"baz\"]}",
		  "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]", "{\"foo\":[\"bar\",\"baz\"]}");
	/* A.5 */
	json_case("{\"baz\":\"qux\",\"foo\":\"bar\"}",
		  "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]",
		  "{\"baz\":\"boo\",\"foo\":\"bar\"}");
	/* A.6 */
	json_case("{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}",
		  "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]",
		  "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}");
	/* A.7 */
	json_case("{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}",
		  "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]",
		  "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}");
	/* A.8 */
	json_case("{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}",
		  "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},"
		  "{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]",
		  "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}");
	/* A.10 */
	json_case("{\"foo\":\"bar\"}",
		  "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]",
		  "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}");
	/* A.11: unknown members are ignored */
	json_case("{\"foo\":\"bar\"}",
		  "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"xyz\":123}]",
		  "{\"foo\":\"bar\",\"baz\":\"qux\"}");
	/* A.14: ~ escaping */
	json_case("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]",
		  "{\"/\":9,\"~1\":10}");
	/* A.16: add an array value */
	json_case("{\"foo\":[\"bar\"]}",
		  "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]",
		  "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}");
}
END_TEST

START_TEST(json_rfc6902_errors)
{
	/* A.9: failed test; the document stays unchanged */
	json_fail("{\"baz\":\"qux\"}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]",
		  -EDOM, "test failed");
	/* A.12: adding to a nonexistent target */
	json_fail("{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]",
		  -EDOM, "doc is missing path");
	/* A.15: comparing strings and numbers */
	json_fail("{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]",
		  -EDOM, "test failed");
	/* no partial application: the first op succeeded, the second fails */
	json_fail(
	    "{\"a\":1}",
	    "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},{\"op\":\"remove\",\"path\":\"/zz\"}]",
	    -EDOM, "remove operation does not apply");
	json_fail("{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/5\",\"value\":2}]", -EDOM, "add");
	json_fail("{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/01\",\"value\":2}]", -EDOM, "add");
	json_fail("{\"a\":1}", "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":2}]", -EDOM,
		  "replace operation does not apply");
	json_fail("{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/b/c\"}]",
		  -EDOM, "move");
	json_fail("{\"a\":1}", "[{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/y\"}]", -EDOM,
		  "missing from path");
	/* malformed patches */
	json_fail("{}", "{\"op\":\"add\"}", -EINVAL, "array");
	json_fail("{}", "[{\"op\":\"frob\",\"path\":\"/a\"}]", -EINVAL, "Unexpected kind: frob");
	json_fail("{}", "[{\"op\":\"add\",\"path\":\"/a\"}]", -EINVAL, "value");
	json_fail("{}", "[{\"op\":\"add\",\"value\":1}]", -EINVAL, "path");
	json_fail("{}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", -EINVAL, "pointer");
	json_fail("{}", "[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]", -EINVAL, "pointer");
}
END_TEST

START_TEST(json_kubectl_ops)
{
	/* kubectl patch --type json, as documented in kubectl-wire.md */
	json_case("{\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":\"x\"}}}",
		  "[{\"op\":\"add\",\"path\":\"/metadata/labels/j\",\"value\":\"2\"}]",
		  "{\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":\"x\",\"j\":\"2\"}}}");
	/* annotation keys with "/" use ~1 */
	json_case("{\"metadata\":{\"annotations\":{\"example.com/a\":\"1\"}}}",
		  "[{\"op\":\"remove\",\"path\":\"/metadata/annotations/example.com~1a\"}]",
		  "{\"metadata\":{\"annotations\":{}}}");
	json_case(
	    "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}",
	    "[{\"op\":\"replace\",\"path\":\"/spec/containers/0/image\",\"value\":\"y\"},"
	    "{\"op\":\"copy\",\"from\":\"/spec/containers/0\",\"path\":\"/spec/containers/-\"},"
	    "{\"op\":\"test\",\"path\":\"/spec/containers/1/image\",\"value\":\"y\"}]",
	    "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"y\"},{\"name\":\"a\",\"image\":"
	    "\"y\"}]}}");
	/* numbers compare by value; whole-document replace */
	json_case("{\"n\":1}", "[{\"op\":\"test\",\"path\":\"/n\",\"value\":1.0}]", "{\"n\":1}");
	json_case("{\"n\":1}", "[{\"op\":\"replace\",\"path\":\"\",\"value\":{\"m\":2}}]",
		  "{\"m\":2}");
	json_case("{\"a\":[1,2,3]}",
		  "[{\"op\":\"remove\",\"path\":\"/a/0\"},"
		  "{\"op\":\"add\",\"path\":\"/a/2\",\"value\":9}]",
		  "{\"a\":[2,3,9]}");
}
END_TEST

/* --- strategic merge patch ----------------------------------------- */

#define POD    "k8s.io.api.core.v1.Pod"
#define DEPLOY "k8s.io.api.apps.v1.Deployment"

static void smp_case(const char *type, const char *doc, const char *patch, const char *want)
{
	json_t *d = J(doc), *p = J(patch), *out = NULL;
	char err[512] = "";

	ck_assert_msg(patch_strategic(d, p, type, &out, err, sizeof(err)) == 0, "%s: %s", patch,
		      err);
	assert_json(out, want);
	json_decref(d);
	json_decref(p);
	json_decref(out);
}

static void smp_fail(const char *type, const char *doc, const char *patch, const char *part)
{
	json_t *d = J(doc), *p = J(patch), *out = NULL;
	char err[512] = "";

	ck_assert_int_eq(patch_strategic(d, p, type, &out, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(out);
	ck_assert_msg(strstr(err, part) != NULL, "error '%s' lacks '%s'", err, part);
	json_decref(d);
	json_decref(p);
}

static const char *pod_one =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":"
    "\"web\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"nginx:1.25\","
    "\"ports\":[{\"containerPort\":80}],\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
    "{\"name\":\"B\",\"value\":\"2\"}]}]}}";

START_TEST(smp_kubectl_apply_body)
{
	smp_case(POD, pod_one,
		 "{\"metadata\":{\"annotations\":{\"kubectl.kubernetes.io/"
		 "last-applied-configuration\":\"{}\"},"
		 "\"labels\":{\"tier\":\"web\"}},\"spec\":{\"$setElementOrder/"
		 "containers\":[{\"name\":\"main\"}],"
		 "\"containers\":[{\"image\":\"nginx:1.27\",\"name\":\"main\"}]}}",
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
		 "\"labels\":{\"app\":\"web\",\"tier\":\"web\"},"
		 "\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\"}},"
		 "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"nginx:1.27\","
		 "\"ports\":[{\"containerPort\":80}],\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
		 "{\"name\":\"B\",\"value\":\"2\"}]}]}}");
}
END_TEST

START_TEST(smp_env_merge_by_name)
{
	smp_case(POD, pod_one,
		 "{\"spec\":{\"containers\":[{\"name\":\"main\",\"env\":[{\"name\":\"B\",\"value\":"
		 "\"3\"},"
		 "{\"name\":\"C\",\"value\":\"4\"}]}]}}",
		 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{"
		 "\"app\":\"web\"}},"
		 "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"nginx:1.25\","
		 "\"ports\":[{\"containerPort\":80}],\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
		 "{\"name\":\"B\",\"value\":\"3\"},{\"name\":\"C\",\"value\":\"4\"}]}]}}");
	/* env entry deleted with $patch: delete, another value cleared with null */
	smp_case(
	    POD, pod_one,
	    "{\"spec\":{\"containers\":[{\"name\":\"main\",\"env\":[{\"name\":\"A\",\"$patch\":"
	    "\"delete\"},"
	    "{\"name\":\"B\",\"value\":null,\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata."
	    "name\"}}}]}]}}",
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{"
	    "\"app\":\"web\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"nginx:1.25\","
	    "\"ports\":[{\"containerPort\":80}],\"env\":["
	    "{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}}]}]}}");
}
END_TEST

static const char *pod_two =
    "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\"},{\"name\":\"b\",\"image\":\"b:"
    "1\"}],"
    "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],\"nodeSelector\":{\"x\":\"1\"},"
    "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}}";

START_TEST(smp_containers_delete_add_order)
{
	/* delete a container */
	smp_case(POD, pod_two,
		 "{\"spec\":{\"containers\":[{\"name\":\"a\",\"$patch\":\"delete\"}]}}",
		 "{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"b:1\"}],"
		 "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],\"nodeSelector\":{\"x\":\"1\"},"
		 "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}}");
	/* add a container: like apimachinery's mergeSortedSlice, a patch item
	 * the live list does not know goes before the server-only items */
	smp_case(POD, pod_two, "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"c:1\"}]}}",
		 "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"c:1\"},"
		 "{\"name\":\"a\",\"image\":\"a:1\"},{\"name\":\"b\",\"image\":\"b:1\"}],"
		 "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],"
		 "\"nodeSelector\":{\"x\":\"1\"},\"tolerations\":[{\"key\":\"k\",\"operator\":"
		 "\"Exists\"}]}}");
	/* $setElementOrder reorders: b first, then a */
	smp_case(POD, pod_two,
		 "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":\"a\"}]}}",
		 "{\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"b:1\"},{\"name\":\"a\","
		 "\"image\":\"a:1\"}],"
		 "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],\"nodeSelector\":{\"x\":\"1\"},"
		 "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}}");
	/* $patch: replace in the list replaces it whole */
	smp_case(POD, pod_two,
		 "{\"spec\":{\"containers\":[{\"name\":\"z\",\"image\":\"z:1\"},{\"$patch\":"
		 "\"replace\"}]}}",
		 "{\"spec\":{\"containers\":[{\"name\":\"z\",\"image\":\"z:1\"}],"
		 "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],\"nodeSelector\":{\"x\":\"1\"},"
		 "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}}");
	/* tolerations have no merge strategy: replaced; nodeSelector $patch: replace */
	smp_case(POD, pod_two,
		 "{\"spec\":{\"tolerations\":[{\"key\":\"q\",\"operator\":\"Exists\"}],"
		 "\"nodeSelector\":{\"$patch\":\"replace\",\"y\":\"2\"}}}",
		 "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\"},{\"name\":\"b\","
		 "\"image\":\"b:1\"}],"
		 "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],\"nodeSelector\":{\"y\":\"2\"},"
		 "\"tolerations\":[{\"key\":\"q\",\"operator\":\"Exists\"}]}}");
}
END_TEST

START_TEST(smp_retain_keys_volume)
{
	/* volumes have strategy merge,retainKeys: switching the source type */
	smp_case(POD, pod_two,
		 "{\"spec\":{\"volumes\":[{\"$retainKeys\":[\"configMap\",\"name\"],\"name\":\"v\","
		 "\"configMap\":{\"name\":\"cm\"}}]}}",
		 "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\"},{\"name\":\"b\","
		 "\"image\":\"b:1\"}],"
		 "\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"cm\"}}],\"nodeSelector\":{"
		 "\"x\":\"1\"},"
		 "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}}");
	/* a patched key missing from $retainKeys is a bad patch */
	smp_fail(POD, pod_two,
		 "{\"spec\":{\"volumes\":[{\"$retainKeys\":[\"name\"],\"name\":\"v\","
		 "\"configMap\":{\"name\":\"cm\"}}]}}",
		 "retainKeys");
}
END_TEST

START_TEST(smp_rollout_restart_and_set_image)
{
	const char *dep =
	    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
	    "\"spec\":{\"replicas\":2,\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1\"}]}}}}";

	smp_case(
	    DEPLOY, dep,
	    "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{"
	    "\"kubectl.kubernetes.io/restartedAt\":\"2025-01-01T00:00:00Z\"}}}}}",
	    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
	    "\"spec\":{\"replicas\":2,\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"},"
	    "\"annotations\":{\"kubectl.kubernetes.io/restartedAt\":\"2025-01-01T00:00:00Z\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx:1\"}]}}}}");
	/* kubectl set image */
	smp_case(
	    DEPLOY, dep,
	    "{\"spec\":{\"template\":{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"c\"}],"
	    "\"containers\":[{\"image\":\"nginx:2\",\"name\":\"c\"}]}}}}",
	    "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"d\"},"
	    "\"spec\":{\"replicas\":2,\"template\":{\"metadata\":{\"labels\":{\"app\":\"d\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx:2\"}]}}}}");
}
END_TEST

START_TEST(smp_primitive_lists_and_directives)
{
	/* finalizers: merge strategy on a list of strings = set union */
	smp_case(POD, "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}",
		 "{\"metadata\":{\"finalizers\":[\"c\",\"a\"]}}",
		 "{\"metadata\":{\"finalizers\":[\"c\",\"a\",\"b\"]}}");
	smp_case(POD, "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}",
		 "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"b\"]}}",
		 "{\"metadata\":{\"finalizers\":[\"a\",\"c\"]}}");
	/* args: no strategy, replaced */
	smp_case(POD, "{\"spec\":{\"containers\":[{\"name\":\"m\",\"args\":[\"1\",\"2\"]}]}}",
		 "{\"spec\":{\"containers\":[{\"name\":\"m\",\"args\":[\"3\"]}]}}",
		 "{\"spec\":{\"containers\":[{\"name\":\"m\",\"args\":[\"3\"]}]}}");
	/* $patch: delete on a map empties it; unknown $ keys are dropped */
	smp_case(
	    POD,
	    "{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"spec\":{\"nodeSelector\":{\"x\":\"1\"}}}",
	    "{\"$foo\":1,\"spec\":{\"nodeSelector\":{\"$patch\":\"delete\"}}}",
	    "{\"metadata\":{\"labels\":{\"a\":\"1\"}},\"spec\":{\"nodeSelector\":{}}}");
	/* a new list with directives: directives do not leak into the object */
	smp_case(POD, "{\"spec\":{}}",
		 "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"x\"}],"
		 "\"containers\":[{\"name\":\"x\",\"env\":[{\"name\":\"E\",\"$patch\":\"delete\"},"
		 "{\"name\":\"F\",\"value\":\"1\"}]}]}}",
		 "{\"spec\":{\"containers\":[{\"name\":\"x\",\"env\":[{\"name\":\"F\",\"value\":"
		 "\"1\"}]}]}}");
	/* ports merge by containerPort (new item first, as above) */
	smp_case(
	    POD,
	    "{\"spec\":{\"containers\":[{\"name\":\"m\",\"ports\":[{\"containerPort\":80,\"name\":"
	    "\"h\"}]}]}}",
	    "{\"spec\":{\"containers\":[{\"name\":\"m\",\"ports\":[{\"containerPort\":443}]}]}}",
	    "{\"spec\":{\"containers\":[{\"name\":\"m\",\"ports\":[{\"containerPort\":443},"
	    "{\"containerPort\":80,\"name\":\"h\"}]}]}}");
	/* with $setElementOrder the new item goes where the order says */
	smp_case(
	    POD, pod_two,
	    "{\"spec\":{\"$setElementOrder/"
	    "containers\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\"}],"
	    "\"containers\":[{\"name\":\"c\",\"image\":\"c:1\"}]}}",
	    "{\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"a:1\"},{\"name\":\"b\","
	    "\"image\":\"b:1\"},"
	    "{\"name\":\"c\",\"image\":\"c:1\"}],\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}],"
	    "\"nodeSelector\":{\"x\":\"1\"},\"tolerations\":[{\"key\":\"k\",\"operator\":"
	    "\"Exists\"}]}}");
}
END_TEST

START_TEST(smp_unknown_and_errors)
{
	/* an unknown type merges like a JSON merge patch (lists replaced) */
	smp_case("example.com.v1.Widget", "{\"spec\":{\"items\":[1,2],\"a\":{\"b\":1}}}",
		 "{\"spec\":{\"items\":[3],\"a\":{\"c\":2}}}",
		 "{\"spec\":{\"items\":[3],\"a\":{\"b\":1,\"c\":2}}}");
	/* unknown fields of a known type too */
	smp_case(POD, "{\"spec\":{\"x-unknown\":[1]}}", "{\"spec\":{\"x-unknown\":[2]}}",
		 "{\"spec\":{\"x-unknown\":[2]}}");
	smp_fail(POD, pod_two, "{\"spec\":{\"containers\":[{\"image\":\"x\"}]}}",
		 "does not contain declared merge key: name");
	smp_fail(POD, pod_two, "{\"spec\":{\"nodeSelector\":{\"$patch\":\"frob\"}}}",
		 "unknown patch type: frob");
	smp_fail(POD, pod_two, "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":\"a\"}}",
		 "primitive list");
	smp_fail(POD, pod_two, "[]", "object");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/patch");
	TCase *tc = tcase_create("merge");

	tcase_add_test(tc, merge_rfc7386_appendix_a);
	tcase_add_test(tc, merge_kubectl_label_and_input_untouched);
	suite_add_tcase(s, tc);
	tc = tcase_create("json");
	tcase_add_test(tc, json_rfc6902_appendix_a);
	tcase_add_test(tc, json_rfc6902_errors);
	tcase_add_test(tc, json_kubectl_ops);
	suite_add_tcase(s, tc);
	tc = tcase_create("strategic");
	tcase_add_test(tc, smp_kubectl_apply_body);
	tcase_add_test(tc, smp_env_merge_by_name);
	tcase_add_test(tc, smp_containers_delete_add_order);
	tcase_add_test(tc, smp_retain_keys_volume);
	tcase_add_test(tc, smp_rollout_restart_and_set_image);
	tcase_add_test(tc, smp_primitive_lists_and_directives);
	tcase_add_test(tc, smp_unknown_and_errors);
	suite_add_tcase(s, tc);
	return s;
}
