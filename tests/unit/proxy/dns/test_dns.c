/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/dns: the answers of the tenant's cluster DNS to queries
 * built and read back with ldns, over a fake store view: Service, headless,
 * SRV, pod, reverse and zone names, NXDOMAIN against NODATA, truncation,
 * EDNS, and the refusals of malformed or unsupported messages.
 */
#include <check.h>
#include <errno.h>
#include <ldns/ldns.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/dns/dns.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

/* kind -> "ns/name" -> object */
static json_t *world;

static json_t *fake_get(void *arg, const char *kind, const char *ns, const char *name)
{
	(void)arg;
	char key[300];
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	return json_incref(json_object_get(json_object_get(world, kind), key));
}

static void fake_each(void *arg, const char *kind, bool (*fn)(const json_t *, void *), void *farg)
{
	(void)arg;
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(world, kind), k, v)
		if (!fn(v, farg))
			return;
}

static const struct dns_view view = {NULL, fake_get, fake_each, 42};
static const struct dns_zone zone = {"cluster.local", 0, NULL};
static const struct dns_zone zone_in_host = {"cluster.local", 0, "kubicle-t1"};
static const struct dns_zone *zp = &zone;

static void setup(void)
{
	json_error_t e;
	world = json_loads(
	    "{\"namespaces\": {\"/ml\": {}, \"/default\": {}},"
	    " \"services\": {"
	    "  \"ml/web\": {\"metadata\": {\"name\": \"web\", \"namespace\": \"ml\"},"
	    "    \"spec\": {\"type\": \"ClusterIP\", \"clusterIP\": \"10.96.3.4\","
	    "      \"clusterIPs\": [\"10.96.3.4\", \"fd00::34\"],"
	    "      \"ports\": [{\"name\": \"http\", \"port\": 80, \"protocol\": \"TCP\"},"
	    "                {\"name\": \"dns\", \"port\": 53, \"protocol\": \"UDP\"},"
	    "                {\"port\": 81, \"protocol\": \"TCP\"}]}},"
	    "  \"ml/train\": {\"metadata\": {\"name\": \"train\", \"namespace\": \"ml\"},"
	    "    \"spec\": {\"clusterIP\": \"None\", \"clusterIPs\": [\"None\"],"
	    "      \"ports\": [{\"name\": \"c10d\", \"port\": 29500}]}},"
	    "  \"ml/ext\": {\"metadata\": {\"name\": \"ext\", \"namespace\": \"ml\"},"
	    "    \"spec\": {\"type\": \"ExternalName\", \"externalName\": \"db.example.com\"}}},"
	    " \"endpoints\": {"
	    "  \"ml/train\": {\"metadata\": {\"name\": \"train\", \"namespace\": \"ml\"},"
	    "    \"subsets\": [{\"addresses\": [{\"ip\": \"10.1.0.5\", \"hostname\": \"train-0\"},"
	    "                                {\"ip\": \"10.1.0.6\"}],"
	    "      \"notReadyAddresses\": [{\"ip\": \"10.1.0.7\", \"hostname\": \"train-2\"}],"
	    "      \"ports\": [{\"name\": \"c10d\", \"port\": 29500, \"protocol\": \"TCP\"}]}]}}}",
	    0, &e);
	ck_assert_msg(world != NULL, "%s", e.text);
}

static void teardown(void)
{
	json_decref(world);
}

/* Asks (name, type) as a resolver would (RD, and EDNS when edns > 0);
 * returns the parsed answer, or NULL when the responder says "forward". */
static ldns_pkt *ask_full(const char *name, ldns_rr_type t, ldns_rr_class cls, uint16_t edns,
			  bool tcp)
{
	ldns_pkt *q = ldns_pkt_query_new(ldns_dname_new_frm_str(name), t, cls, LDNS_RD);
	ck_assert_ptr_nonnull(q);
	ldns_pkt_set_id(q, 4321);
	if (edns)
		ldns_pkt_set_edns_udp_size(q, edns);
	uint8_t *wire = NULL, *resp = NULL;
	size_t wlen = 0, rlen = 0;
	ck_assert_int_eq(ldns_pkt2wire(&wire, q, &wlen), LDNS_STATUS_OK);
	ldns_pkt_free(q);
	int rc = dns_answer(&view, zp, wire, wlen, tcp, &resp, &rlen);
	free(wire);
	ck_assert_int_ge(rc, 0);
	if (rc == 0)
		return NULL;
	ldns_pkt *r = NULL;
	ck_assert_int_eq(ldns_wire2pkt(&r, resp, rlen), LDNS_STATUS_OK);
	free(resp);
	ck_assert_int_eq(ldns_pkt_id(r), 4321);
	ck_assert(ldns_pkt_qr(r));
	return r;
}

static ldns_pkt *ask(const char *name, ldns_rr_type t)
{
	return ask_full(name, t, LDNS_RR_CLASS_IN, 0, false);
}

/* The section's records as "owner ttl class type rdata" lines. */
static char *section(const ldns_pkt *p, ldns_pkt_section s)
{
	ldns_rr_list *l = ldns_pkt_get_section_clone(p, s);
	char *txt = ldns_rr_list2str(l);
	ldns_rr_list_deep_free(l);
	return txt;
}

static void expect(ldns_pkt *p, ldns_pkt_rcode rcode, const char *answer)
{
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(ldns_pkt_get_rcode(p), rcode);
	char *a = section(p, LDNS_SECTION_ANSWER);
	ck_assert_str_eq(a, answer);
	free(a);
}

static bool has_soa(const ldns_pkt *p)
{
	ldns_rr_list *l = ldns_pkt_authority(p);
	return ldns_rr_list_rr_count(l) == 1 &&
	       ldns_rr_get_type(ldns_rr_list_rr(l, 0)) == LDNS_RR_TYPE_SOA;
}

START_TEST(service_addresses)
{
	ldns_pkt *p = ask("Web.ML.svc.cluster.local.", LDNS_RR_TYPE_A);
	/* the name as asked, TTL 5, authoritative */
	expect(p, LDNS_RCODE_NOERROR, "Web.ML.svc.cluster.local.\t5\tIN\tA\t10.96.3.4\n");
	ck_assert(ldns_pkt_aa(p));
	ck_assert(ldns_pkt_ra(p));
	ldns_pkt_free(p);
	p = ask("web.ml.svc.cluster.local.", LDNS_RR_TYPE_AAAA);
	expect(p, LDNS_RCODE_NOERROR, "web.ml.svc.cluster.local.\t5\tIN\tAAAA\tfd00::34\n");
	ldns_pkt_free(p);
}
END_TEST

START_TEST(nxdomain_and_nodata)
{
	ldns_pkt *p = ask("nope.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ck_assert(has_soa(p));
	char *auth = section(p, LDNS_SECTION_AUTHORITY);
	ck_assert_str_eq(auth, "cluster.local.\t5\tIN\tSOA\tns.dns.cluster.local. "
			       "hostmaster.cluster.local. 42 7200 1800 86400 5\n");
	free(auth);
	ldns_pkt_free(p);
	/* the Service exists, not its MX */
	p = ask("web.ml.svc.cluster.local.", LDNS_RR_TYPE_MX);
	expect(p, LDNS_RCODE_NOERROR, "");
	ck_assert(has_soa(p));
	ldns_pkt_free(p);
	/* a namespace is a name; an unknown one is not */
	p = ask("ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NOERROR, "");
	ldns_pkt_free(p);
	p = ask("other.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
	/* the search path's first try for an absolute name */
	p = ask("web.ml.svc.cluster.local.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
	p = ask("web.ml.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
}
END_TEST

START_TEST(headless)
{
	ldns_pkt *p = ask("train.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NOERROR,
	       "train.ml.svc.cluster.local.\t5\tIN\tA\t10.1.0.5\n"
	       "train.ml.svc.cluster.local.\t5\tIN\tA\t10.1.0.6\n");
	ldns_pkt_free(p);
	p = ask("train-0.train.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NOERROR, "train-0.train.ml.svc.cluster.local.\t5\tIN\tA\t10.1.0.5\n");
	ldns_pkt_free(p);
	/* an endpoint without hostname is named by its address */
	p = ask("10-1-0-6.train.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NOERROR, "10-1-0-6.train.ml.svc.cluster.local.\t5\tIN\tA\t10.1.0.6\n");
	ldns_pkt_free(p);
	/* not ready: not published */
	p = ask("train-2.train.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
	/* a ClusterIP Service has no per-endpoint names */
	p = ask("x.web.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
}
END_TEST

START_TEST(srv)
{
	ldns_pkt *p = ask("_http._tcp.web.ml.svc.cluster.local.", LDNS_RR_TYPE_SRV);
	expect(p, LDNS_RCODE_NOERROR,
	       "_http._tcp.web.ml.svc.cluster.local.\t5\tIN\tSRV\t0 100 80 "
	       "web.ml.svc.cluster.local.\n");
	char *add = section(p, LDNS_SECTION_ADDITIONAL);
	ck_assert_str_eq(add, "web.ml.svc.cluster.local.\t5\tIN\tA\t10.96.3.4\n"
			      "web.ml.svc.cluster.local.\t5\tIN\tAAAA\tfd00::34\n");
	free(add);
	ldns_pkt_free(p);
	/* the protocol must match; the unnamed port has none */
	p = ask("_dns._tcp.web.ml.svc.cluster.local.", LDNS_RR_TYPE_SRV);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
	p = ask("_dns._udp.web.ml.svc.cluster.local.", LDNS_RR_TYPE_SRV);
	ck_assert_int_eq(ldns_pkt_ancount(p), 1);
	ldns_pkt_free(p);
	/* the port's name exists, as an SRV only */
	p = ask("_http._tcp.web.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NOERROR, "");
	ck_assert_int_eq(ldns_pkt_arcount(p), 0);
	ldns_pkt_free(p);
	/* headless: one per endpoint, its address added */
	p = ask("_c10d._tcp.train.ml.svc.cluster.local.", LDNS_RR_TYPE_SRV);
	expect(p, LDNS_RCODE_NOERROR,
	       "_c10d._tcp.train.ml.svc.cluster.local.\t5\tIN\tSRV\t0 100 29500 "
	       "train-0.train.ml.svc.cluster.local.\n"
	       "_c10d._tcp.train.ml.svc.cluster.local.\t5\tIN\tSRV\t0 100 29500 "
	       "10-1-0-6.train.ml.svc.cluster.local.\n");
	ck_assert_int_eq(ldns_pkt_arcount(p), 2);
	ldns_pkt_free(p);
	/* SRV of the Service's own name: every named port */
	p = ask("web.ml.svc.cluster.local.", LDNS_RR_TYPE_SRV);
	ck_assert_int_eq(ldns_pkt_ancount(p), 2);
	ldns_pkt_free(p);
}
END_TEST

START_TEST(external_name)
{
	ldns_pkt *p = ask("ext.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NOERROR, "ext.ml.svc.cluster.local.\t5\tIN\tCNAME\tdb.example.com.\n");
	ldns_pkt_free(p);
}
END_TEST

START_TEST(pods)
{
	ldns_pkt *p = ask("10-1-0-9.ml.pod.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NOERROR, "10-1-0-9.ml.pod.cluster.local.\t5\tIN\tA\t10.1.0.9\n");
	ldns_pkt_free(p);
	p = ask("fd00--9.ml.pod.cluster.local.", LDNS_RR_TYPE_AAAA);
	expect(p, LDNS_RCODE_NOERROR, "fd00--9.ml.pod.cluster.local.\t5\tIN\tAAAA\tfd00::9\n");
	ldns_pkt_free(p);
	p = ask("10-1-0-999.ml.pod.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
	p = ask("10-1-0-9.other.pod.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
}
END_TEST

START_TEST(zone_apex_and_version)
{
	ldns_pkt *p = ask("cluster.local.", LDNS_RR_TYPE_SOA);
	ck_assert_int_eq(ldns_pkt_ancount(p), 1);
	ck_assert_int_eq(ldns_pkt_nscount(p), 0);
	ldns_pkt_free(p);
	p = ask("cluster.local.", LDNS_RR_TYPE_NS);
	expect(p, LDNS_RCODE_NOERROR, "cluster.local.\t5\tIN\tNS\tns.dns.cluster.local.\n");
	ldns_pkt_free(p);
	p = ask("dns-version.cluster.local.", LDNS_RR_TYPE_TXT);
	expect(p, LDNS_RCODE_NOERROR, "dns-version.cluster.local.\t5\tIN\tTXT\t\"1.1.0\"\n");
	ldns_pkt_free(p);
}
END_TEST

START_TEST(forwarded_and_reverse)
{
	ck_assert_ptr_null(ask("www.example.com.", LDNS_RR_TYPE_A));
	ck_assert_ptr_null(ask("local.", LDNS_RR_TYPE_A));
	ck_assert_ptr_null(ask("notcluster.local.", LDNS_RR_TYPE_A));
	/* a Service's cluster IP and a headless endpoint with a hostname */
	ldns_pkt *p = ask("4.3.96.10.in-addr.arpa.", LDNS_RR_TYPE_PTR);
	expect(p, LDNS_RCODE_NOERROR,
	       "4.3.96.10.in-addr.arpa.\t5\tIN\tPTR\tweb.ml.svc.cluster.local.\n");
	ldns_pkt_free(p);
	p = ask("5.0.1.10.in-addr.arpa.", LDNS_RR_TYPE_PTR);
	expect(p, LDNS_RCODE_NOERROR,
	       "5.0.1.10.in-addr.arpa.\t5\tIN\tPTR\ttrain-0.train.ml.svc.cluster.local.\n");
	ldns_pkt_free(p);
	p = ask("4.3.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.",
		LDNS_RR_TYPE_PTR);
	ck_assert_int_eq(ldns_pkt_ancount(p), 1);
	ldns_pkt_free(p);
	/* anything else is the upstream's */
	ck_assert_ptr_null(ask("6.0.1.10.in-addr.arpa.", LDNS_RR_TYPE_PTR));
	ck_assert_ptr_null(ask("1.1.168.192.in-addr.arpa.", LDNS_RR_TYPE_PTR));
	/* the host namespace's names (the tenant API's Service) are the host's */
	p = ask("t1.kubicle-t1.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
	zp = &zone_in_host;
	ck_assert_ptr_null(ask("t1.kubicle-t1.svc.cluster.local.", LDNS_RR_TYPE_A));
	ck_assert_ptr_null(ask("T1.Kubicle-T1.svc.cluster.local.", LDNS_RR_TYPE_A));
	p = ask("web.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	ck_assert_int_eq(ldns_pkt_ancount(p), 1);
	ldns_pkt_free(p);
	zp = &zone;
}
END_TEST

START_TEST(truncation_and_edns)
{
	/* 60 endpoints do not fit in 512 bytes */
	json_t *subs = json_object_get(
	    json_object_get(json_object_get(world, "endpoints"), "ml/train"), "subsets");
	json_t *addrs = json_object_get(json_array_get(subs, 0), "addresses");
	for (int i = 0; i < 60; i++) {
		char ip[32];
		snprintf(ip, sizeof(ip), "10.2.0.%d", i);
		json_array_append_new(addrs, json_pack("{s:s}", "ip", ip));
	}
	ldns_pkt *p = ask("train.ml.svc.cluster.local.", LDNS_RR_TYPE_A);
	ck_assert(ldns_pkt_tc(p));
	ck_assert_int_eq(ldns_pkt_ancount(p), 0);
	ck_assert_int_eq(ldns_pkt_qdcount(p), 1);
	ldns_pkt_free(p);
	/* EDNS with room: whole, and the answer carries OPT */
	p = ask_full("train.ml.svc.cluster.local.", LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, 4096, false);
	ck_assert(!ldns_pkt_tc(p));
	ck_assert_int_eq(ldns_pkt_ancount(p), 62);
	ck_assert(ldns_pkt_edns(p));
	ldns_pkt_free(p);
	/* TCP: whole */
	p = ask_full("train.ml.svc.cluster.local.", LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, 0, true);
	ck_assert(!ldns_pkt_tc(p));
	ck_assert_int_eq(ldns_pkt_ancount(p), 62);
	ck_assert(!ldns_pkt_edns(p));
	ldns_pkt_free(p);
}
END_TEST

static int raw(const uint8_t *m, size_t len, uint8_t *rcode)
{
	uint8_t *resp = NULL;
	size_t rlen = 0;
	int rc = dns_answer(&view, &zone, m, len, false, &resp, &rlen);
	if (rc == 1) {
		ck_assert_int_ge(rlen, 12);
		ck_assert_int_eq(resp[0], m[0]);
		ck_assert_int_eq(resp[1], m[1]);
		ck_assert(resp[2] & 0x80);
		*rcode = resp[3] & 0x0f;
	}
	free(resp);
	return rc;
}

START_TEST(malformed)
{
	uint8_t rcode = 0;
	static const uint8_t short_msg[] = {1, 2, 0, 0, 0, 1};
	ck_assert_int_eq(raw(short_msg, sizeof(short_msg), &rcode), -EINVAL);
	/* a header that promises a question which is not there */
	static const uint8_t no_question[] = {1, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
	ck_assert_int_eq(raw(no_question, sizeof(no_question), &rcode), 1);
	ck_assert_int_eq(rcode, LDNS_RCODE_FORMERR);
	/* a response is never answered (no loops between two responders) */
	static const uint8_t response[] = {1, 2, 0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	ck_assert_int_eq(raw(response, sizeof(response), &rcode), -EINVAL);
	/* a name running past the message */
	static const uint8_t past[] = {1, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 60, 'a', 'b'};
	ck_assert_int_eq(raw(past, sizeof(past), &rcode), 1);
	ck_assert_int_eq(rcode, LDNS_RCODE_FORMERR);
	/* no questions: FORMERR; an UPDATE: NOTIMP */
	static const uint8_t none[] = {1, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	ck_assert_int_eq(raw(none, sizeof(none), &rcode), 1);
	ck_assert_int_eq(rcode, LDNS_RCODE_FORMERR);
	static const uint8_t update[] = {1, 2, 0x28, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	ck_assert_int_eq(raw(update, sizeof(update), &rcode), 1);
	ck_assert_int_eq(rcode, LDNS_RCODE_NOTIMPL);
	/* another class under the zone */
	ldns_pkt *p =
	    ask_full("web.ml.svc.cluster.local.", LDNS_RR_TYPE_A, LDNS_RR_CLASS_CH, 0, false);
	expect(p, LDNS_RCODE_REFUSED, "");
	ldns_pkt_free(p);
	/* more labels than any name of the zone */
	p = ask("a.b.c.d.e.f.g.h.i.svc.cluster.local.", LDNS_RR_TYPE_A);
	expect(p, LDNS_RCODE_NXDOMAIN, "");
	ldns_pkt_free(p);
}
END_TEST

START_TEST(fail_keeps_question)
{
	ldns_pkt *q = ldns_pkt_query_new(ldns_dname_new_frm_str("www.example.com."), LDNS_RR_TYPE_A,
					 LDNS_RR_CLASS_IN, LDNS_RD);
	uint8_t *wire = NULL, *resp = NULL;
	size_t wlen = 0, rlen = 0;
	ck_assert_int_eq(ldns_pkt2wire(&wire, q, &wlen), LDNS_STATUS_OK);
	ldns_pkt_free(q);
	ck_assert_int_eq(dns_fail(wire, wlen, LDNS_RCODE_SERVFAIL, &resp, &rlen), 1);
	ldns_pkt *r = NULL;
	ck_assert_int_eq(ldns_wire2pkt(&r, resp, rlen), LDNS_STATUS_OK);
	ck_assert_int_eq(ldns_pkt_get_rcode(r), LDNS_RCODE_SERVFAIL);
	ck_assert_int_eq(ldns_pkt_qdcount(r), 1);
	ck_assert(ldns_pkt_qr(r));
	ldns_pkt_free(r);
	free(resp);
	free(wire);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("proxy/dns");
	TCase *tc = tcase_create("names");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, service_addresses);
	tcase_add_test(tc, nxdomain_and_nodata);
	tcase_add_test(tc, headless);
	tcase_add_test(tc, srv);
	tcase_add_test(tc, external_name);
	tcase_add_test(tc, pods);
	tcase_add_test(tc, zone_apex_and_version);
	tcase_add_test(tc, forwarded_and_reverse);
	suite_add_tcase(s, tc);
	tc = tcase_create("wire");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, truncation_and_edns);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, fail_keeps_question);
	suite_add_tcase(s, tc);
	return s;
}
