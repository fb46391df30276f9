/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for the Service part of syncer/translate.c: the host Service's
 * contract, spec copy, selector, headless and externalIPs; the host's
 * allocations back into the tenant Service; the update patch.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "syncer/syncer_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static json_t *J(const char *text)
{
	json_error_t err;
	json_t *o = json_loads(text, 0, &err);
	ck_assert_msg(o != NULL, "%s", err.text);
	return o;
}

static const char *s_at(const json_t *o, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(o, a), b));
}

static json_t *at(const json_t *o, const char *path)
{
	char buf[256], *save = NULL;
	snprintf(buf, sizeof(buf), "%s", path);
	json_t *v = (json_t *)o;
	for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
		v = json_is_array(v) ? json_array_get(v, strtoul(k, NULL, 10))
				     : json_object_get(v, k);
	return v;
}

static struct syncer_xlate xl(void)
{
	return (struct syncer_xlate){.tenant = "t1",
				     .host_ns = "tenants",
				     .queue = "team-a",
				     .profile = syncer_profile_find("kai")};
}

/* A tenant Service as the tenant API stored it (defaults filled in). */
static json_t *tenant_svc(const char *spec_extra)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"web\","
		 "\"namespace\":\"ml\",\"uid\":\"u-7\",\"resourceVersion\":\"9\","
		 "\"labels\":{\"app\":\"web\",\"kubicle.dev/tenant\":\"evil\"},"
		 "\"annotations\":{\"note\":\"x\"}},"
		 "\"spec\":{\"clusterIP\":\"10.96.5.5\",\"clusterIPs\":[\"10.96.5.5\"],"
		 "\"selector\":{\"app\":\"web\",\"kubicle.dev/tenant\":\"evil\"},"
		 "\"ports\":[{\"name\":\"http\",\"protocol\":\"TCP\",\"port\":80,"
		 "\"targetPort\":8080,\"appProtocol\":\"http\"}],"
		 "\"externalIPs\":[\"203.0.113.7\"],\"sessionAffinity\":\"ClientIP\","
		 "\"sessionAffinityConfig\":{\"clientIP\":{\"timeoutSeconds\":60}},"
		 "\"ipFamilies\":[\"IPv4\"],\"ipFamilyPolicy\":\"SingleStack\","
		 "\"internalTrafficPolicy\":\"Cluster\",\"publishNotReadyAddresses\":true%s},"
		 "\"status\":{\"loadBalancer\":{}}}",
		 spec_extra);
	return J(buf);
}

START_TEST(service_contract_and_spec)
{
	struct syncer_xlate x = xl();
	json_t *t = tenant_svc(",\"type\":\"ClusterIP\"");
	json_t *h = syncer_translate_service(&x, t);
	ck_assert_ptr_nonnull(h);
	json_t *m = json_object_get(h, "metadata"), *spec = json_object_get(h, "spec");
	ck_assert_str_eq(json_string_value(json_object_get(h, "kind")), "Service");
	ck_assert_str_eq(s_at(h, "metadata", "name"), "web-x-ml-x-t1");
	ck_assert_str_eq(s_at(h, "metadata", "namespace"), "tenants");
	ck_assert_str_eq(s_at(m, "labels", "kubicle.dev/tenant"), "t1");
	ck_assert_str_eq(s_at(m, "labels", "kubicle.dev/namespace"), "ml");
	ck_assert_str_eq(s_at(m, "labels", "app"), "web");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/kind"), "Service");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/name"), "web");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/namespace"), "ml");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/uid"), "u-7");
	ck_assert_str_eq(s_at(m, "annotations", "note"), "x");
	ck_assert_ptr_null(json_object_get(m, "uid"));
	ck_assert_ptr_null(json_object_get(m, "resourceVersion"));
	ck_assert_ptr_null(json_object_get(h, "status"));
	/* the host allocates its own address; no external IPs on a shared host */
	ck_assert_ptr_null(json_object_get(spec, "clusterIP"));
	ck_assert_ptr_null(json_object_get(spec, "clusterIPs"));
	ck_assert_ptr_null(json_object_get(spec, "externalIPs"));
	ck_assert_str_eq(json_string_value(at(spec, "type")), "ClusterIP");
	ck_assert_str_eq(json_string_value(at(spec, "ports.0.name")), "http");
	ck_assert_str_eq(json_string_value(at(spec, "ports.0.protocol")), "TCP");
	ck_assert_int_eq(json_integer_value(at(spec, "ports.0.port")), 80);
	ck_assert_int_eq(json_integer_value(at(spec, "ports.0.targetPort")), 8080);
	ck_assert_str_eq(json_string_value(at(spec, "ports.0.appProtocol")), "http");
	ck_assert_ptr_null(at(spec, "ports.0.nodePort"));
	ck_assert_str_eq(json_string_value(at(spec, "sessionAffinity")), "ClientIP");
	ck_assert_int_eq(
	    json_integer_value(at(spec, "sessionAffinityConfig.clientIP.timeoutSeconds")), 60);
	ck_assert_str_eq(json_string_value(at(spec, "ipFamilies.0")), "IPv4");
	ck_assert_str_eq(json_string_value(at(spec, "ipFamilyPolicy")), "SingleStack");
	ck_assert_str_eq(json_string_value(at(spec, "internalTrafficPolicy")), "Cluster");
	ck_assert(json_is_true(at(spec, "publishNotReadyAddresses")));
	/* the selector: the tenant's, with our keys (the tenant's own kubicle.dev/
	 * value replaced), so only this namespace's host pods match */
	json_t *sel = json_object_get(spec, "selector");
	ck_assert_int_eq(json_object_size(sel), 3);
	ck_assert_str_eq(json_string_value(json_object_get(sel, "app")), "web");
	ck_assert_str_eq(json_string_value(json_object_get(sel, "kubicle.dev/tenant")), "t1");
	ck_assert_str_eq(json_string_value(json_object_get(sel, "kubicle.dev/namespace")), "ml");
	/* the tenant Service is left as it was */
	ck_assert_str_eq(s_at(t, "spec", "clusterIP"), "10.96.5.5");
	ck_assert_str_eq(
	    json_string_value(json_object_get(at(t, "spec.selector"), "kubicle.dev/tenant")),
	    "evil");
	json_decref(h);
	json_decref(t);
}
END_TEST

START_TEST(service_headless_external_no_selector)
{
	struct syncer_xlate x = xl();
	json_t *t = J("{\"metadata\":{\"name\":\"db\",\"namespace\":\"ml\",\"uid\":\"u\"},"
		      "\"spec\":{\"type\":\"ClusterIP\",\"clusterIP\":\"None\","
		      "\"clusterIPs\":[\"None\"],\"ports\":[{\"port\":5432}]}}");
	json_t *h = syncer_translate_service(&x, t);
	ck_assert_str_eq(s_at(h, "spec", "clusterIP"), "None");
	/* no selector: a host Service without one (its Endpoints are not synced) */
	ck_assert_ptr_null(at(h, "spec.selector"));
	json_decref(h);
	json_decref(t);
	/* an empty selector selects nothing in kube either */
	t = J("{\"metadata\":{\"name\":\"e\",\"namespace\":\"ml\",\"uid\":\"u\"},"
	      "\"spec\":{\"type\":\"ExternalName\",\"externalName\":\"example.org\","
	      "\"selector\":{}}}");
	h = syncer_translate_service(&x, t);
	ck_assert_str_eq(s_at(h, "spec", "externalName"), "example.org");
	ck_assert_str_eq(s_at(h, "spec", "type"), "ExternalName");
	ck_assert_ptr_null(at(h, "spec.selector"));
	ck_assert_ptr_null(at(h, "spec.clusterIP"));
	json_decref(h);
	json_decref(t);
}
END_TEST

START_TEST(service_node_ports)
{
	struct syncer_xlate x = xl();
	/* NodePort: an explicit nodePort passes, a missing one is the host's */
	json_t *t = J("{\"metadata\":{\"name\":\"np\",\"namespace\":\"ml\",\"uid\":\"u\"},"
		      "\"spec\":{\"type\":\"NodePort\",\"externalTrafficPolicy\":\"Local\","
		      "\"ports\":[{\"name\":\"a\",\"port\":80,\"nodePort\":30080},"
		      "{\"name\":\"b\",\"port\":81}]}}");
	json_t *h = syncer_translate_service(&x, t);
	ck_assert_int_eq(json_integer_value(at(h, "spec.ports.0.nodePort")), 30080);
	ck_assert_ptr_null(at(h, "spec.ports.1.nodePort"));
	ck_assert_str_eq(s_at(h, "spec", "externalTrafficPolicy"), "Local");
	json_decref(h);
	json_decref(t);
	/* ClusterIP: a stale nodePort is no node port */
	t = J("{\"metadata\":{\"name\":\"c\",\"namespace\":\"ml\",\"uid\":\"u\"},"
	      "\"spec\":{\"type\":\"ClusterIP\",\"ports\":[{\"port\":80,\"nodePort\":30080}]}}");
	h = syncer_translate_service(&x, t);
	ck_assert_ptr_null(at(h, "spec.ports.0.nodePort"));
	json_decref(h);
	json_decref(t);
	/* LoadBalancer: its fields and health check port */
	t = J("{\"metadata\":{\"name\":\"lb\",\"namespace\":\"ml\",\"uid\":\"u\"},"
	      "\"spec\":{\"type\":\"LoadBalancer\",\"loadBalancerClass\":\"x/lb\","
	      "\"loadBalancerSourceRanges\":[\"10.0.0.0/8\"],"
	      "\"allocateLoadBalancerNodePorts\":false,\"externalTrafficPolicy\":\"Local\","
	      "\"healthCheckNodePort\":31000,\"ports\":[{\"port\":443}]}}");
	h = syncer_translate_service(&x, t);
	ck_assert_str_eq(s_at(h, "spec", "loadBalancerClass"), "x/lb");
	ck_assert_str_eq(json_string_value(at(h, "spec.loadBalancerSourceRanges.0")), "10.0.0.0/8");
	ck_assert(json_is_false(at(h, "spec.allocateLoadBalancerNodePorts")));
	ck_assert_int_eq(json_integer_value(at(h, "spec.healthCheckNodePort")), 31000);
	json_decref(h);
	json_decref(t);
}
END_TEST

START_TEST(service_back)
{
	json_t *t = J("{\"metadata\":{\"name\":\"np\",\"namespace\":\"ml\",\"uid\":\"u\"},"
		      "\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"10.96.5.5\","
		      "\"clusterIPs\":[\"10.96.5.5\"],"
		      "\"ports\":[{\"name\":\"a\",\"port\":80,\"protocol\":\"TCP\"},"
		      "{\"name\":\"u\",\"port\":80,\"protocol\":\"UDP\"},"
		      "{\"name\":\"new\",\"port\":82,\"protocol\":\"TCP\"}]},"
		      "\"status\":{\"loadBalancer\":{}}}");
	json_t *h =
	    J("{\"metadata\":{\"name\":\"np-x-ml-x-t1\"},"
	      "\"spec\":{\"type\":\"LoadBalancer\",\"clusterIP\":\"10.200.0.9\","
	      "\"clusterIPs\":[\"10.200.0.9\"],\"healthCheckNodePort\":31999,"
	      "\"ports\":[{\"name\":\"u\",\"port\":80,\"protocol\":\"UDP\",\"nodePort\":30081},"
	      "{\"name\":\"a\",\"port\":80,\"protocol\":\"TCP\",\"nodePort\":30080}]},"
	      "\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"198.51.100.4\"}]}}}");
	json_t *b = syncer_service_back(t, h);
	ck_assert_ptr_nonnull(b);
	ck_assert_str_eq(s_at(b, "spec", "clusterIP"), "10.200.0.9");
	ck_assert_str_eq(json_string_value(at(b, "spec.clusterIPs.0")), "10.200.0.9");
	/* node ports by port and protocol; a port the host lacks yet gets none */
	ck_assert_int_eq(json_integer_value(at(b, "spec.ports.0.nodePort")), 30080);
	ck_assert_int_eq(json_integer_value(at(b, "spec.ports.1.nodePort")), 30081);
	ck_assert_ptr_null(at(b, "spec.ports.2.nodePort"));
	ck_assert_int_eq(json_integer_value(at(b, "spec.healthCheckNodePort")), 31999);
	ck_assert_str_eq(json_string_value(at(b, "status.loadBalancer.ingress.0.ip")),
			 "198.51.100.4");
	/* written back, nothing differs any more: no write (no loop) */
	ck_assert_ptr_null(syncer_service_back(b, h));
	/* and the translation of the written-back Service asks the host for
	 * nothing new */
	struct syncer_xlate x = xl();
	json_t *want = syncer_translate_service(&x, b);
	json_t *have = syncer_translate_service(&x, b);
	json_object_set(json_object_get(have, "spec"), "clusterIP", at(h, "spec.clusterIP"));
	ck_assert_ptr_null(syncer_service_update_patch(want, have, NULL));
	json_decref(want);
	json_decref(have);
	json_decref(b);
	/* headless: None stays None */
	json_t *th = J("{\"spec\":{\"clusterIP\":\"None\",\"clusterIPs\":[\"None\"]},"
		       "\"status\":{\"loadBalancer\":{}}}");
	json_t *hh = J("{\"spec\":{\"clusterIP\":\"None\",\"clusterIPs\":[\"None\"]}}");
	ck_assert_ptr_null(syncer_service_back(th, hh));
	json_decref(th);
	json_decref(hh);
	json_decref(h);
	json_decref(t);
}
END_TEST

START_TEST(service_update_patch)
{
	struct syncer_xlate x = xl();
	json_t *prev = tenant_svc(",\"type\":\"NodePort\"");
	json_t *t = tenant_svc(",\"type\":\"NodePort\"");
	json_t *have = syncer_translate_service(&x, prev);
	/* the host allocated a node port, added its defaults */
	json_object_set_new(json_array_get(at(have, "spec.ports"), 0), "nodePort",
			    json_integer(30080));
	json_object_set_new(json_object_get(have, "spec"), "externalTrafficPolicy",
			    json_string("Cluster"));
	json_object_set_new(json_object_get(have, "spec"), "loadBalancerSourceRanges",
			    json_pack("[s]", "10.0.0.0/8"));
	/* the tenant: a new selector, another port, a label gone */
	json_t *ts = json_object_get(t, "spec");
	json_object_set_new(ts, "selector", json_pack("{s:s}", "app", "web2"));
	json_object_set_new(json_array_get(json_object_get(ts, "ports"), 0), "port",
			    json_integer(8081));
	json_object_del(json_object_get(json_object_get(t, "metadata"), "labels"), "app");
	json_t *want = syncer_translate_service(&x, t);
	json_t *was = syncer_translate_service(&x, prev);
	json_t *p = syncer_service_update_patch(want, have, was);
	ck_assert_ptr_nonnull(p);
	/* selector: replaced keys, ours kept */
	ck_assert_str_eq(json_string_value(at(p, "spec.selector.app")), "web2");
	json_t *sel = at(p, "spec.selector");
	ck_assert_str_eq(json_string_value(json_object_get(sel, "kubicle.dev/tenant")), "t1");
	/* ports: the whole list, the host's node port kept for the same port;
	 * the changed port (8081) has none of its own, so the host allocates */
	ck_assert_int_eq(json_integer_value(at(p, "spec.ports.0.port")), 8081);
	ck_assert_ptr_null(at(p, "spec.ports.0.nodePort"));
	/* an unset field keeps the host's default; a cleared source range goes */
	ck_assert_ptr_null(at(p, "spec.externalTrafficPolicy"));
	ck_assert(json_is_null(at(p, "spec.loadBalancerSourceRanges")));
	ck_assert_ptr_null(at(p, "spec.type"));
	/* the removed label is removed on the host */
	ck_assert(json_is_null(json_object_get(at(p, "metadata.labels"), "app")));
	json_decref(p);
	/* the same port as before: its node port is kept */
	json_object_set_new(json_array_get(json_object_get(ts, "ports"), 0), "port",
			    json_integer(80));
	json_decref(want);
	want = syncer_translate_service(&x, t);
	p = syncer_service_update_patch(want, have, was);
	ck_assert_ptr_null(at(p, "spec.ports"));
	json_decref(p);
	json_decref(want);
	json_decref(was);
	json_decref(have);
	json_decref(t);
	json_decref(prev);
}
END_TEST

/* "NAME=value" lines of a syncer_service_env array. */
static char *env_text(const json_t *env)
{
	char *out = NULL;
	size_t len = 0, i;
	json_t *e;
	FILE *f = open_memstream(&out, &len);
	json_array_foreach (env, i, e)
		fprintf(f, "%s=%s\n", json_string_value(json_object_get(e, "name")),
			json_string_value(json_object_get(e, "value")));
	fclose(f);
	return out;
}

START_TEST(service_env_as_kubelet)
{
	json_t *svcs =
	    J("[{\"metadata\": {\"name\": \"my-db\", \"namespace\": \"ml\"},"
	      "  \"spec\": {\"clusterIP\": \"10.0.0.7\", \"ports\": ["
	      "    {\"name\": \"sql\", \"port\": 5432, \"protocol\": \"TCP\"},"
	      "    {\"port\": 53, \"protocol\": \"UDP\"}]}},"
	      " {\"metadata\": {\"name\": \"v6\", \"namespace\": \"ml\"},"
	      "  \"spec\": {\"clusterIP\": \"fd00::7\", \"ports\": [{\"port\": 80}]}},"
	      " {\"metadata\": {\"name\": \"headless\", \"namespace\": \"ml\"},"
	      "  \"spec\": {\"clusterIP\": \"None\", \"ports\": [{\"port\": 80}]}},"
	      " {\"metadata\": {\"name\": \"ext\", \"namespace\": \"ml\"},"
	      "  \"spec\": {\"type\": \"ExternalName\", \"externalName\": \"a.b\"}},"
	      " {\"metadata\": {\"name\": \"kubernetes\", \"namespace\": \"default\"},"
	      "  \"spec\": {\"clusterIP\": \"10.96.0.1\", \"ports\": [{\"port\": 443}]}}]");
	json_t *env = syncer_service_env(svcs);
	char *txt = env_text(env);
	ck_assert_str_eq(txt, "MY_DB_SERVICE_HOST=10.0.0.7\n"
			      "MY_DB_SERVICE_PORT=5432\n"
			      "MY_DB_SERVICE_PORT_SQL=5432\n"
			      "MY_DB_PORT=tcp://10.0.0.7:5432\n"
			      "MY_DB_PORT_5432_TCP=tcp://10.0.0.7:5432\n"
			      "MY_DB_PORT_5432_TCP_PROTO=tcp\n"
			      "MY_DB_PORT_5432_TCP_PORT=5432\n"
			      "MY_DB_PORT_5432_TCP_ADDR=10.0.0.7\n"
			      "MY_DB_PORT_53_UDP=udp://10.0.0.7:53\n"
			      "MY_DB_PORT_53_UDP_PROTO=udp\n"
			      "MY_DB_PORT_53_UDP_PORT=53\n"
			      "MY_DB_PORT_53_UDP_ADDR=10.0.0.7\n"
			      "V6_SERVICE_HOST=fd00::7\n"
			      "V6_SERVICE_PORT=80\n"
			      "V6_PORT=tcp://[fd00::7]:80\n"
			      "V6_PORT_80_TCP=tcp://[fd00::7]:80\n"
			      "V6_PORT_80_TCP_PROTO=tcp\n"
			      "V6_PORT_80_TCP_PORT=80\n"
			      "V6_PORT_80_TCP_ADDR=fd00::7\n");
	free(txt);
	json_decref(env);
	json_decref(svcs);
}
END_TEST

START_TEST(pod_service_env)
{
	struct syncer_xlate x = xl();
	json_t *senv = J("[{\"name\": \"WEB_SERVICE_HOST\", \"value\": \"10.0.0.9\"}]");
	x.service_env = senv;
	x.api_host = "t1.kubicle-t1.svc";
	x.api_port = 6443;
	json_t *pod = J("{\"metadata\": {\"name\": \"p\", \"namespace\": \"ml\", \"uid\": \"u\"},"
			"\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\","
			"  \"env\": [{\"name\": \"URL\", \"value\": \"$(WEB_SERVICE_HOST)\"}]}]}}");
	json_t *hp = syncer_translate_pod(&x, pod, NULL);
	ck_assert(json_is_false(at(hp, "spec.enableServiceLinks")));
	/* the Service's first (its own may refer to it), then the pod's, then the API's */
	json_t *env = at(hp, "spec.containers.0.env");
	ck_assert_str_eq(json_string_value(at(env, "0.name")), "WEB_SERVICE_HOST");
	ck_assert_str_eq(json_string_value(at(env, "1.name")), "URL");
	char *txt = env_text(env);
	ck_assert_ptr_nonnull(strstr(txt,
				     "KUBERNETES_SERVICE_HOST=t1.kubicle-t1.svc\n"
				     "KUBERNETES_SERVICE_PORT=6443\n"
				     "KUBERNETES_PORT=tcp://t1.kubicle-t1.svc:6443\n"
				     "KUBERNETES_PORT_443_TCP=tcp://t1.kubicle-t1.svc:6443\n"));
	free(txt);
	json_decref(hp);
	/* enableServiceLinks: false: none of them */
	json_object_set_new(json_object_get(pod, "spec"), "enableServiceLinks", json_false());
	hp = syncer_translate_pod(&x, pod, NULL);
	ck_assert_str_eq(json_string_value(at(hp, "spec.containers.0.env.0.name")), "URL");
	json_decref(hp);
	json_decref(pod);
	json_decref(senv);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("syncer_translate_service");
	TCase *tc = tcase_create("service");
	tcase_add_test(tc, service_contract_and_spec);
	tcase_add_test(tc, service_headless_external_no_selector);
	tcase_add_test(tc, service_node_ports);
	tcase_add_test(tc, service_back);
	tcase_add_test(tc, service_update_patch);
	tcase_add_test(tc, service_env_as_kubelet);
	tcase_add_test(tc, pod_service_env);
	suite_add_tcase(s, tc);
	return s;
}
