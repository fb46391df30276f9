/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: the tenant cluster DNS's answer to one message
 * (proxy/dns/dns.h), over UDP and TCP, against a small fixed world (a
 * ClusterIP Service, a headless one with endpoints, an ExternalName).
 * Every answer must keep the header's promises: the query's ID, the QR
 * bit, at least a header, no more than the client takes over UDP, and it
 * must parse back as a DNS message whenever the query parsed.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <ldns/ldns.h>

#include "proxy/dns/dns.h"

static json_t *world;

static json_t *get(void *arg, const char *kind, const char *ns, const char *name)
{
	(void)arg;
	char key[300];
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	return json_incref(json_object_get(json_object_get(world, kind), key));
}

static void each(void *arg, const char *kind, bool (*fn)(const json_t *, void *), void *farg)
{
	(void)arg;
	const char *k;
	json_t *v;
	json_object_foreach (json_object_get(world, kind), k, v)
		if (!fn(v, farg))
			return;
}

static void load_world(void)
{
	if (world)
		return;
	world = json_loads(
	    "{\"namespaces\": {\"/ml\": {}},"
	    " \"services\": {"
	    "  \"ml/web\": {\"metadata\": {\"name\": \"web\", \"namespace\": \"ml\"},"
	    "    \"spec\": {\"clusterIP\": \"10.96.3.4\", \"clusterIPs\": [\"10.96.3.4\", "
	    "\"fd00::1\"],"
	    "      \"ports\": [{\"name\": \"http\", \"port\": 80}]}},"
	    "  \"ml/t\": {\"metadata\": {\"name\": \"t\", \"namespace\": \"ml\"},"
	    "    \"spec\": {\"clusterIP\": \"None\", \"ports\": [{\"name\": \"p\", \"port\": 1}]}},"
	    "  \"ml/x\": {\"metadata\": {\"name\": \"x\", \"namespace\": \"ml\"},"
	    "    \"spec\": {\"type\": \"ExternalName\", \"externalName\": \"a.b\"}}},"
	    " \"endpoints\": {\"ml/t\": {\"metadata\": {\"name\": \"t\", \"namespace\": \"ml\"},"
	    "  \"subsets\": [{\"addresses\": [{\"ip\": \"10.1.0.5\", \"hostname\": \"h\"},"
	    "   {\"ip\": \"fd00::5\"}], \"ports\": [{\"name\": \"p\", \"port\": 1}]}]}}}",
	    0, NULL);
	KB_REQUIRE(world != NULL);
}

static void check(const uint8_t *data, size_t size, bool tcp)
{
	static const struct dns_zone zone = {"cluster.local", 0, NULL};
	const struct dns_view view = {NULL, get, each, 7};
	uint8_t *resp = NULL;
	size_t rlen = 0;
	int rc = dns_answer(&view, &zone, data, size, tcp, &resp, &rlen);
	KB_REQUIRE(rc == 1 || rc == 0 || rc == -EINVAL);
	if (rc != 1) {
		KB_REQUIRE(resp == NULL);
		return;
	}
	KB_REQUIRE(rlen >= 12 && resp[0] == data[0] && resp[1] == data[1] && (resp[2] & 0x80));
	ldns_pkt *q = NULL, *r = NULL;
	if (ldns_wire2pkt(&q, data, size) == LDNS_STATUS_OK) {
		size_t max = tcp ? 65535 : ldns_pkt_edns(q) ? ldns_pkt_edns_udp_size(q) : 512;
		KB_REQUIRE(rlen <= (max < 512 ? 512 : max));
		KB_REQUIRE(ldns_wire2pkt(&r, resp, rlen) == LDNS_STATUS_OK);
	}
	ldns_pkt_free(q);
	ldns_pkt_free(r);
	free(resp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	load_world();
	check(data, size, false);
	check(data, size, true);
	uint8_t *resp = NULL;
	size_t rlen = 0;
	if (dns_fail(data, size, LDNS_RCODE_SERVFAIL, &resp, &rlen) == 1)
		KB_REQUIRE(rlen >= 12 && resp[0] == data[0] && resp[1] == data[1]);
	free(resp);
	return 0;
}
