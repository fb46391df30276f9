/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/selector: label selector parsing (equality and set-based,
 * errors with kube's texts), matching, LabelSelector objects, and field
 * selectors (escaping, aliases, unsupported labels).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/model/selector.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *labels(const char *json)
{
	json_error_t e;
	json_t *j = json_loads(json, 0, &e);
	ck_assert_msg(j != NULL, "bad test json: %s", e.text);
	return j;
}

static bool lmatch(const char *sel, const char *lbl)
{
	struct sel_label *s = NULL;
	char err[256] = "";
	int rc = sel_label_parse(sel, &s, err, sizeof(err));
	ck_assert_msg(rc == 0, "parse '%s': %s", sel, err);
	json_t *l = lbl ? labels(lbl) : NULL;
	bool m = sel_label_match(s, l);
	json_decref(l);
	sel_label_free(s);
	return m;
}

START_TEST(label_match_table)
{
	static const struct {
		const char *sel, *labels;
		bool want;
	} t[] = {
	    {"", "{\"a\":\"b\"}", true},
	    {"   ", NULL, true},
	    {"a=b", "{\"a\":\"b\"}", true},
	    {"a==b", "{\"a\":\"b\"}", true},
	    {"a=b", "{\"a\":\"c\"}", false},
	    {"a=b", NULL, false},
	    {"a!=b", "{\"a\":\"c\"}", true},
	    {"a!=b", "{}", true},
	    {"a!=b", "{\"a\":\"b\"}", false},
	    {"a in (x,y)", "{\"a\":\"y\"}", true},
	    {"a in (x,y)", "{\"a\":\"z\"}", false},
	    {"a in (x,y)", "{}", false},
	    {"a notin (x)", "{}", true},
	    {"a notin (x)", "{\"a\":\"x\"}", false},
	    {"a", "{\"a\":\"\"}", true},
	    {"a", "{\"b\":\"\"}", false},
	    {"!a", "{\"b\":\"\"}", true},
	    {"!a", "{\"a\":\"x\"}", false},
	    {"a=", "{\"a\":\"\"}", true},
	    {"a=", "{\"a\":\"x\"}", false},
	    {" app = web , tier in ( fe , be ) ,!canary", "{\"app\":\"web\",\"tier\":\"be\"}",
	     true},
	    {"app=web,tier in (fe)", "{\"app\":\"web\",\"tier\":\"be\"}", false},
	    {"example.com/role=db", "{\"example.com/role\":\"db\"}", true},
	    {"x in (foo,,baz)", "{\"x\":\"\"}", true},
	    {"n>5", "{\"n\":\"7\"}", true},
	    {"n>5", "{\"n\":\"3\"}", false},
	    {"n<5", "{\"n\":\"x\"}", false},
	    /* "in" as a value is an identifier */
	    {"a=in", "{\"a\":\"in\"}", true},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_msg(lmatch(t[i].sel, t[i].labels) == t[i].want, "case %zu '%s'", i,
			      t[i].sel);
}
END_TEST

static void lerr(const char *sel, const char *want)
{
	struct sel_label *s = (struct sel_label *)1;
	char err[512] = "";
	ck_assert_int_eq(sel_label_parse(sel, &s, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err, want) != NULL, "'%s': got '%s', want '%s'", sel, err, want);
}

START_TEST(label_errors)
{
	lerr("a=b,", "found '', expected: identifier after ','");
	lerr("a=b c", "found 'c', expected: ',' or 'end of string'");
	lerr(",a", "found ',', expected: !, identifier, or 'end of string'");
	lerr("a in x", "unable to parse requirement: found 'x' expected: '('");
	lerr("a in (x", "unable to parse requirement: found '', expected: ',' or ')'");
	lerr("a (",
	     "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt");
	lerr("a=b=c", "found '=', expected: ',' or 'end of string'");
	lerr("!", "unable to parse requirement: found '', expected: identifier");
	lerr("a=b!", "found '!', expected: ',' or 'end of string'");
	lerr("Foo Bar", "unable to parse requirement: found 'Bar', expected: in, notin");
	lerr("-bad=x", "unable to parse requirement: <nil>: Invalid value: \"-bad\": name part "
		       "must consist of alphanumeric characters");
	lerr("a=-x", "values[0]: Invalid value: \"-x\": a valid label must be an empty string");
	lerr("a>x", "for 'Gt', 'Lt' operators, the value must be an integer");
}
END_TEST

START_TEST(label_string_roundtrip)
{
	struct sel_label *s = NULL;
	ck_assert_int_eq(sel_label_parse("z=1, a in (y,x), !m, k", &s, NULL, 0), 0);
	char *t = sel_label_string(s);
	ck_assert_str_eq(t, "a in (x,y),k,!m,z=1");
	free(t);
	sel_label_free(s);
}
END_TEST

START_TEST(label_from_object)
{
	struct sel_label *s = NULL;
	char err[256];
	json_t *ls = labels("{\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":["
			    "{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"fe\",\"be\"]},"
			    "{\"key\":\"canary\",\"operator\":\"DoesNotExist\"}]}");
	ck_assert_int_eq(sel_label_from_object(ls, &s, err, sizeof(err)), 0);
	json_t *l1 = labels("{\"app\":\"web\",\"tier\":\"fe\"}");
	json_t *l2 = labels("{\"app\":\"web\",\"tier\":\"fe\",\"canary\":\"1\"}");
	ck_assert(sel_label_match(s, l1));
	ck_assert(!sel_label_match(s, l2));
	sel_label_free(s);
	json_decref(ls);

	/* empty selects everything, null selects nothing */
	ls = labels("{}");
	ck_assert_int_eq(sel_label_from_object(ls, &s, err, sizeof(err)), 0);
	ck_assert(sel_label_match(s, l1));
	ck_assert(sel_label_empty(s));
	sel_label_free(s);
	json_decref(ls);
	ck_assert_int_eq(sel_label_from_object(NULL, &s, err, sizeof(err)), 0);
	ck_assert(!sel_label_match(s, l1));
	ck_assert(!sel_label_match(s, NULL));
	ck_assert(!sel_label_empty(s));
	sel_label_free(s);

	ls = labels("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Foo\"}]}");
	ck_assert_int_eq(sel_label_from_object(ls, &s, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "\"Foo\" is not a valid label selector operator");
	json_decref(ls);
	ls = labels("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[]}]}");
	ck_assert_int_eq(sel_label_from_object(ls, &s, err, sizeof(err)), -EINVAL);
	ck_assert(strstr(err, "values set can't be empty") != NULL);
	json_decref(ls);
	json_decref(l1);
	json_decref(l2);
}
END_TEST

/* ---- field selectors ---- */

static const char *const pod_fields[] = {"spec.nodeName", "status.phase", NULL};
static const struct proxy_resource pod_res = {
    .group = "",
    .version = "v1",
    .kind = "Pod",
    .plural = "pods",
    .namespaced = true,
    .field_selectors = pod_fields,
};
static const char *const ev_fields[] = {"source", "reason", "involvedObject.uid", NULL};
static const struct proxy_resource ev_res = {
    .group = "",
    .version = "v1",
    .kind = "Event",
    .plural = "events",
    .namespaced = true,
    .field_selectors = ev_fields,
};
static const char *const node_fields[] = {"spec.unschedulable", NULL};
static const struct proxy_resource node_res = {
    .group = "",
    .version = "v1",
    .kind = "Node",
    .plural = "nodes",
    .field_selectors = node_fields,
};

static bool fmatch(const struct proxy_resource *r, const char *sel, const char *obj)
{
	struct sel_field *f = NULL;
	char err[256] = "";
	int rc = sel_field_parse(sel, r, &f, err, sizeof(err));
	ck_assert_msg(rc == 0, "parse '%s': %s", sel, err);
	json_t *o = labels(obj);
	bool m = sel_field_match(f, o);
	json_decref(o);
	sel_field_free(f);
	return m;
}

START_TEST(field_match)
{
	const char *pod = "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns\"},"
			  "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\"}}";
	ck_assert(fmatch(&pod_res, "", pod));
	ck_assert(fmatch(&pod_res, "metadata.name=p1", pod));
	ck_assert(fmatch(&pod_res, "metadata.name==p1,metadata.namespace=ns", pod));
	ck_assert(!fmatch(&pod_res, "metadata.name!=p1", pod));
	ck_assert(fmatch(&pod_res, "status.phase!=Pending,spec.nodeName=n1", pod));
	ck_assert(!fmatch(&pod_res, "status.phase=Pending", pod));
	/* missing field reads as "" */
	const char *pending = "{\"metadata\":{\"name\":\"p\"}}";
	ck_assert(fmatch(&pod_res, "spec.nodeName=", pending));
	ck_assert(!fmatch(&pod_res, "spec.nodeName!=", pending));
	/* escaping: value "a,b=c\d" */
	const char *esc = "{\"metadata\":{\"name\":\"a,b=c\\\\d\"}}";
	ck_assert(fmatch(&pod_res, "metadata.name=a\\,b\\=c\\\\d", esc));
	/* aliases: event source → source.component; node bool default */
	const char *ev = "{\"metadata\":{\"name\":\"e\"},\"source\":{\"component\":\"kubelet\"}}";
	ck_assert(fmatch(&ev_res, "source=kubelet", ev));
	ck_assert(fmatch(&node_res, "spec.unschedulable=false", "{\"spec\":{}}"));
	ck_assert(
	    fmatch(&node_res, "spec.unschedulable=true", "{\"spec\":{\"unschedulable\":true}}"));
}
END_TEST

static void ferr(const struct proxy_resource *r, const char *sel, const char *want)
{
	struct sel_field *f = (struct sel_field *)1;
	char err[512] = "";
	ck_assert_int_eq(sel_field_parse(sel, r, &f, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(f);
	ck_assert_msg(strcmp(err, want) == 0, "'%s': got '%s', want '%s'", sel, err, want);
}

START_TEST(field_errors)
{
	ferr(&pod_res, "spec.foo=bar", "field label not supported: spec.foo");
	ferr(&node_res, "status.phase=Running", "field label not supported: status.phase");
	ferr(NULL, "spec.nodeName=x", "field label not supported: spec.nodeName");
	ferr(&pod_res, "metadata.name",
	     "invalid selector: 'metadata.name'; can't understand "
	     "'metadata.name'");
	ferr(&pod_res, "metadata.name=a=b",
	     "invalid field selector: unescaped character in value: =");
	ferr(&pod_res, "metadata.name=a\\x",
	     "invalid field selector: invalid escape sequence: \\x");
}
END_TEST

START_TEST(field_exact)
{
	struct sel_field *f = NULL;
	ck_assert_int_eq(
	    sel_field_parse("metadata.name=foo,status.phase!=x", &pod_res, &f, NULL, 0), 0);
	ck_assert_str_eq(sel_field_exact(f, "metadata.name"), "foo");
	ck_assert_ptr_null(sel_field_exact(f, "status.phase"));
	ck_assert_ptr_null(sel_field_exact(f, "metadata.namespace"));
	sel_field_free(f);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/selector");
	TCase *tc = tcase_create("label");
	tcase_add_test(tc, label_match_table);
	tcase_add_test(tc, label_errors);
	tcase_add_test(tc, label_string_roundtrip);
	tcase_add_test(tc, label_from_object);
	suite_add_tcase(s, tc);
	tc = tcase_create("field");
	tcase_add_test(tc, field_match);
	tcase_add_test(tc, field_errors);
	tcase_add_test(tc, field_exact);
	suite_add_tcase(s, tc);
	return s;
}
