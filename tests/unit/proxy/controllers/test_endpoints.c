/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the Endpoints and EndpointSlice controllers' pure pieces: named
 * port resolution, the hostname rule, ready and not-ready addresses,
 * publishNotReadyAddresses, terminating pods, subset repacking and slice
 * endpoint conditions and ports. */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "proxy/controllers/controllers.h"

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	ck_assert_msg(v != NULL, "bad JSON: %s", e.text);
	return v;
}

/* A pod named `name` with IP ip (NULL: none), Ready or not, a container
 * port "http" 8080/TCP and optional extra spec and metadata. */
static json_t *pod(const char *name, const char *ip, bool ready)
{
	json_t *p = json_pack("{s:{s:s,s:s,s:s,s:{s:s}},s:{s:[{s:s,s:[{s:s,s:i}]}]},s:{s:s}}",
			      "metadata", "name", name, "namespace", "ns", "uid", name, "labels",
			      "app", "web", "spec", "containers", "name", "c", "ports", "name",
			      "http", "containerPort", 8080, "status", "phase", "Running");
	json_t *st = json_object_get(p, "status");
	if (ip) {
		json_object_set_new(st, "podIP", json_string(ip));
		json_object_set_new(st, "podIPs", json_pack("[{s:s}]", "ip", ip));
	}
	json_object_set_new(
	    st, "conditions",
	    json_pack("[{s:s,s:s}]", "type", "Ready", "status", ready ? "True" : "False"));
	return p;
}

static json_t *svc(const char *extra_spec)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"web\",\"namespace\":\"ns\",\"uid\":\"s1\"},"
		 "\"spec\":{\"selector\":{\"app\":\"web\"},\"clusterIP\":\"10.96.0.9\","
		 "\"ipFamilies\":[\"IPv4\"],"
		 "\"ports\":[{\"name\":\"web\",\"port\":80,\"targetPort\":\"http\","
		 "\"protocol\":\"TCP\"},{\"name\":\"m\",\"port\":9000,\"targetPort\":9100,"
		 "\"protocol\":\"TCP\",\"appProtocol\":\"http\"}]%s}}",
		 extra_spec ? extra_spec : "");
	return J(buf);
}

static json_t *containers(const json_t *p)
{
	return json_object_get(json_object_get(p, "spec"), "containers");
}

static json_t *cond(const json_t *ep, const char *name)
{
	return json_object_get(json_object_get(ep, "conditions"), name);
}

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT);
}

START_TEST(find_port)
{
	json_t *p = pod("a", "10.0.0.1", true);
	int n = 0;
	json_t *sp = J("{\"port\":80,\"targetPort\":\"http\",\"protocol\":\"TCP\"}");
	ck_assert_int_eq(ctrl_ep_find_port(p, sp, &n), 0);
	ck_assert_int_eq(n, 8080);
	json_decref(sp);
	/* the protocol must match too */
	sp = J("{\"port\":80,\"targetPort\":\"http\",\"protocol\":\"UDP\"}");
	ck_assert_int_eq(ctrl_ep_find_port(p, sp, &n), -ENOENT);
	json_decref(sp);
	sp = J("{\"port\":80,\"targetPort\":\"nope\",\"protocol\":\"TCP\"}");
	ck_assert_int_eq(ctrl_ep_find_port(p, sp, &n), -ENOENT);
	json_decref(sp);
	/* a number is taken as is */
	sp = J("{\"port\":80,\"targetPort\":9999}");
	ck_assert_int_eq(ctrl_ep_find_port(p, sp, &n), 0);
	ck_assert_int_eq(n, 9999);
	json_decref(sp);
	/* a sidecar (init container with restartPolicy Always) counts, others do not */
	json_object_set_new(json_object_get(p, "spec"), "initContainers",
			    J("[{\"name\":\"i\",\"ports\":[{\"name\":\"s\",\"containerPort\":7}]},"
			      "{\"name\":\"j\",\"restartPolicy\":\"Always\","
			      "\"ports\":[{\"name\":\"t\",\"containerPort\":8}]}]"));
	sp = J("{\"port\":80,\"targetPort\":\"s\"}");
	ck_assert_int_eq(ctrl_ep_find_port(p, sp, &n), -ENOENT);
	json_decref(sp);
	sp = J("{\"port\":80,\"targetPort\":\"t\"}");
	ck_assert_int_eq(ctrl_ep_find_port(p, sp, &n), 0);
	ck_assert_int_eq(n, 8);
	json_decref(sp);
	json_decref(p);
}
END_TEST

START_TEST(hostname_rule)
{
	json_t *s = svc(NULL), *p = pod("a", "10.0.0.1", true);
	ck_assert_ptr_null(ctrl_ep_hostname(p, s));
	json_object_set_new(json_object_get(p, "spec"), "hostname", json_string("h"));
	ck_assert_ptr_null(ctrl_ep_hostname(p, s)); /* no subdomain */
	json_object_set_new(json_object_get(p, "spec"), "subdomain", json_string("other"));
	ck_assert_ptr_null(ctrl_ep_hostname(p, s));
	json_object_set_new(json_object_get(p, "spec"), "subdomain", json_string("web"));
	ck_assert_str_eq(ctrl_ep_hostname(p, s), "h");
	json_object_set_new(json_object_get(p, "metadata"), "namespace", json_string("x"));
	ck_assert_ptr_null(ctrl_ep_hostname(p, s)); /* another namespace */
	json_decref(s);
	json_decref(p);
}
END_TEST

START_TEST(subsets_ready_not_ready)
{
	json_t *s = svc(NULL);
	json_t *pods = json_pack("[o,o,o]", pod("b", "10.0.0.2", false), pod("a", "10.0.0.1", true),
				 pod("c", NULL, true));
	json_t *ss = ctrl_ep_subsets(s, pods);
	char *d = dump(ss);
	/* one subset (both addresses offer both ports); no pod without an IP */
	ck_assert_str_eq(
	    d, "[{\"addresses\":[{\"ip\":\"10.0.0.1\",\"targetRef\":{\"kind\":\"Pod\",\"name\":"
	       "\"a\",\"namespace\":\"ns\",\"uid\":\"a\"}}],\"notReadyAddresses\":[{\"ip\":"
	       "\"10.0.0.2\",\"targetRef\":{\"kind\":\"Pod\",\"name\":\"b\",\"namespace\":\"ns\","
	       "\"uid\":\"b\"}}],\"ports\":[{\"appProtocol\":\"http\",\"name\":\"m\",\"port\":9100,"
	       "\"protocol\":\"TCP\"},{\"name\":\"web\",\"port\":8080,\"protocol\":\"TCP\"}]}]");
	free(d);
	json_decref(ss);
	json_decref(pods);
	json_decref(s);
}
END_TEST

START_TEST(subsets_publish_and_terminating)
{
	json_t *s = svc(NULL);
	json_t *term = pod("t", "10.0.0.3", true);
	json_object_set_new(json_object_get(term, "metadata"), "deletionTimestamp",
			    json_string("2024-01-01T00:00:00Z"));
	json_t *done = pod("d", "10.0.0.4", false);
	json_object_set_new(json_object_get(done, "status"), "phase", json_string("Succeeded"));
	json_t *pods = json_pack("[o,o,o]", pod("b", "10.0.0.2", false), term, done);
	json_t *ss = ctrl_ep_subsets(s, pods);
	/* the terminating pod is left out, the not-ready one is not ready */
	ck_assert_int_eq(json_array_size(ss), 1);
	ck_assert_ptr_null(json_object_get(json_array_get(ss, 0), "addresses"));
	ck_assert_int_eq(
	    json_array_size(json_object_get(json_array_get(ss, 0), "notReadyAddresses")), 1);
	json_decref(ss);
	json_decref(s);
	/* publishNotReadyAddresses: everyone ready, terminating included, not terminal */
	s = svc(",\"publishNotReadyAddresses\":true");
	ss = ctrl_ep_subsets(s, pods);
	ck_assert_int_eq(json_array_size(ss), 1);
	ck_assert_ptr_null(json_object_get(json_array_get(ss, 0), "notReadyAddresses"));
	ck_assert_int_eq(json_array_size(json_object_get(json_array_get(ss, 0), "addresses")), 2);
	json_decref(ss);
	json_decref(s);
	json_decref(pods);
}
END_TEST

START_TEST(subsets_named_port_missing)
{
	/* a pod without the named port only offers the numeric one */
	json_t *s = svc(NULL);
	json_t *b = pod("b", "10.0.0.2", true);
	json_object_set_new(json_array_get(containers(b), 0), "ports", json_array());
	json_t *pods = json_pack("[o,o]", pod("a", "10.0.0.1", true), b);
	json_t *ss = ctrl_ep_subsets(s, pods);
	/* port 8080 (named "http") only on a, port 9100 on both: two subsets */
	char *d = dump(ss);
	ck_assert_str_eq(
	    d, "[{\"addresses\":[{\"ip\":\"10.0.0.1\",\"targetRef\":{\"kind\":\"Pod\",\"name\":"
	       "\"a\",\"namespace\":\"ns\",\"uid\":\"a\"}},{\"ip\":\"10.0.0.2\",\"targetRef\":"
	       "{\"kind\":\"Pod\",\"name\":\"b\",\"namespace\":\"ns\",\"uid\":\"b\"}}],"
	       "\"ports\":[{\"appProtocol\":\"http\",\"name\":\"m\",\"port\":9100,\"protocol\":"
	       "\"TCP\"}]},{\"addresses\":[{\"ip\":\"10.0.0.1\",\"targetRef\":{\"kind\":\"Pod\","
	       "\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"a\"}}],\"ports\":[{\"name\":"
	       "\"web\",\"port\":8080,\"protocol\":\"TCP\"}]}]");
	free(d);
	json_decref(ss);
	json_decref(pods);
	json_decref(s);
}
END_TEST

START_TEST(repack)
{
	/* per-address, per-port input as the controller builds it; address 1 is
	 * ready on port a but not on b: not-ready wins only for b */
	json_t *in =
	    J("["
	      "{\"addresses\":[{\"ip\":\"10.0.0.2\"}],\"ports\":[{\"name\":\"a\",\"port\":1}]},"
	      "{\"addresses\":[{\"ip\":\"10.0.0.1\"}],\"ports\":[{\"name\":\"a\",\"port\":1}]},"
	      "{\"addresses\":[{\"ip\":\"10.0.0.2\"}],\"ports\":[{\"name\":\"b\",\"port\":2}]},"
	      "{\"notReadyAddresses\":[{\"ip\":\"10.0.0.1\"}],"
	      "\"ports\":[{\"name\":\"b\",\"port\":2}]},"
	      "{\"addresses\":[{\"ip\":\"10.0.0.1\"}],\"ports\":[{\"name\":\"b\",\"port\":2}]}"
	      "]");
	json_t *out = ctrl_ep_repack(in);
	char *d = dump(out);
	ck_assert_str_eq(
	    d, "[{\"addresses\":[{\"ip\":\"10.0.0.1\"},{\"ip\":\"10.0.0.2\"}],\"ports\":[{\"name\":"
	       "\"a\",\"port\":1}]},{\"addresses\":[{\"ip\":\"10.0.0.2\"}],\"notReadyAddresses\":"
	       "[{\"ip\":\"10.0.0.1\"}],\"ports\":[{\"name\":\"b\",\"port\":2}]}]");
	free(d);
	json_decref(out);
	json_decref(in);
	/* no ports (headless): addresses kept, no ports key */
	in = J("[{\"addresses\":[{\"ip\":\"10.0.0.9\"}]},{\"addresses\":[{\"ip\":\"10.0.0.8\"}]}]");
	out = ctrl_ep_repack(in);
	d = dump(out);
	ck_assert_str_eq(d, "[{\"addresses\":[{\"ip\":\"10.0.0.8\"},{\"ip\":\"10.0.0.9\"}]}]");
	free(d);
	json_decref(out);
	json_decref(in);
}
END_TEST

START_TEST(slice_conditions)
{
	json_t *s = svc(NULL), *p = pod("a", "10.0.0.1", true);
	json_object_set_new(json_object_get(p, "spec"), "nodeName", json_string("n1"));
	json_t *ep = ctrl_eps_endpoint(p, s, false);
	char *d = dump(ep);
	ck_assert_str_eq(d, "{\"addresses\":[\"10.0.0.1\"],\"conditions\":{\"ready\":true,"
			    "\"serving\":true,\"terminating\":false},\"nodeName\":\"n1\","
			    "\"targetRef\":{\"kind\":\"Pod\",\"name\":\"a\",\"namespace\":\"ns\","
			    "\"uid\":\"a\"}}");
	free(d);
	json_decref(ep);
	ck_assert_ptr_null(ctrl_eps_endpoint(p, s, true)); /* no IPv6 address */
	/* terminating: serving stays, ready goes */
	json_object_set_new(json_object_get(p, "metadata"), "deletionTimestamp",
			    json_string("2024-01-01T00:00:00Z"));
	ep = ctrl_eps_endpoint(p, s, false);
	ck_assert(json_is_false(cond(ep, "ready")));
	ck_assert(json_is_true(cond(ep, "serving")));
	ck_assert(json_is_true(cond(ep, "terminating")));
	json_decref(ep);
	json_decref(s);
	/* publishNotReadyAddresses: ready even when not serving */
	s = svc(",\"publishNotReadyAddresses\":true");
	json_decref(p);
	p = pod("b", "10.0.0.2", false);
	ep = ctrl_eps_endpoint(p, s, false);
	ck_assert(json_is_true(cond(ep, "ready")));
	ck_assert(json_is_false(cond(ep, "serving")));
	json_decref(ep);
	json_decref(p);
	json_decref(s);
}
END_TEST

START_TEST(slice_ports)
{
	json_t *s = svc(NULL), *p = pod("a", "10.0.0.1", true);
	json_t *ports = ctrl_eps_ports(s, p);
	char *d = dump(ports);
	ck_assert_str_eq(d, "[{\"name\":\"web\",\"port\":8080,\"protocol\":\"TCP\"},"
			    "{\"appProtocol\":\"http\",\"name\":\"m\",\"port\":9100,"
			    "\"protocol\":\"TCP\"}]");
	free(d);
	json_decref(ports);
	json_decref(p);
	json_decref(s);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("endpoints");
	TCase *tc = tcase_create("pure");
	tcase_add_test(tc, find_port);
	tcase_add_test(tc, hostname_rule);
	tcase_add_test(tc, subsets_ready_not_ready);
	tcase_add_test(tc, subsets_publish_and_terminating);
	tcase_add_test(tc, subsets_named_port_missing);
	tcase_add_test(tc, repack);
	tcase_add_test(tc, slice_conditions);
	tcase_add_test(tc, slice_ports);
	suite_add_tcase(s, tc);
	return s;
}

#include "tests/unit/check_main.h"
