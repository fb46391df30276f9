/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tenant's cluster DNS: answers (this half) and the UDP/TCP server with
 * its forwarder (dns_net.c). The contract and the names are in dns.h.
 */
#include "proxy/dns/dns.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <ldns/ldns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"

#define MAX_LABELS   8
#define NAME_MAX_LEN 256

/* One query being answered. */
struct ask {
	const struct dns_view *v;
	const struct dns_zone *z;
	ldns_pkt *r;          /* the response */
	const ldns_rdf *qown; /* the question's name, as asked (case kept) */
	ldns_rr_type qtype;
	char name[NAME_MAX_LEN]; /* lower case, no trailing dot */
	char *lab[MAX_LABELS];   /* the labels left of the zone, in name2 */
	size_t nlab;
	char name2[NAME_MAX_LEN]; /* name split at dots */
	bool exists;              /* the name exists (NODATA rather than NXDOMAIN) */
};

static const char *jstr(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static uint32_t ttl_of(const struct ask *a)
{
	return a->z->ttl ? a->z->ttl : 5;
}

/* ---- records ----------------------------------------------------------------- */

static ldns_rr *rr_new(ldns_rdf *owner, ldns_rr_type t, uint32_t ttl)
{
	ldns_rr *rr = ldns_rr_new();
	if (!rr) {
		ldns_rdf_deep_free(owner);
		return NULL;
	}
	ldns_rr_set_owner(rr, owner);
	ldns_rr_set_type(rr, t);
	ldns_rr_set_class(rr, LDNS_RR_CLASS_IN);
	ldns_rr_set_ttl(rr, ttl);
	return rr;
}

/* Pushes the n rdfs onto rr and rr into section; when rr or any rdf is NULL
 * (a failed conversion), nothing is added and all are freed. */
static void add_rr(struct ask *a, ldns_pkt_section sec, ldns_rr *rr, ldns_rdf **rdfs, size_t n)
{
	bool ok = rr != NULL;
	for (size_t i = 0; i < n; i++)
		ok = ok && rdfs[i];
	if (!ok) {
		for (size_t i = 0; i < n; i++)
			ldns_rdf_deep_free(rdfs[i]);
		ldns_rr_free(rr);
		return;
	}
	for (size_t i = 0; i < n; i++)
		ldns_rr_push_rdf(rr, rdfs[i]);
	ldns_pkt_push_rr(a->r, sec, rr);
}

static ldns_rdf *dname(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static ldns_rdf *dname(const char *fmt, ...)
{
	char buf[NAME_MAX_LEN + 2];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return NULL;
	return ldns_dname_new_frm_str(buf);
}

static bool is_v6(const char *ip)
{
	return strchr(ip, ':') != NULL;
}

/* An A or AAAA record of ip for owner (taken), when ip's family is the one
 * asked (or any address for ANY). */
static void add_addr(struct ask *a, ldns_pkt_section sec, ldns_rdf *owner, const char *ip)
{
	ldns_rr_type t = is_v6(ip) ? LDNS_RR_TYPE_AAAA : LDNS_RR_TYPE_A;
	if (sec == LDNS_SECTION_ANSWER && a->qtype != t && a->qtype != LDNS_RR_TYPE_ANY) {
		ldns_rdf_deep_free(owner);
		return;
	}
	ldns_rdf *rd =
	    ldns_rdf_new_frm_str(t == LDNS_RR_TYPE_A ? LDNS_RDF_TYPE_A : LDNS_RDF_TYPE_AAAA, ip);
	add_rr(a, sec, rr_new(owner, t, ttl_of(a)), &rd, 1);
}

static ldns_rdf *qowner(const struct ask *a)
{
	return ldns_rdf_clone(a->qown);
}

/* An SRV of port to <host>.<svc>.<ns>.svc (an endpoint), or to the
 * Service's own name when host is NULL. */
static void add_srv(struct ask *a, ldns_rdf *owner, int port, const char *host, const char *svc,
		    const char *ns)
{
	ldns_rdf *rd[4] = {
	    ldns_native2rdf_int16(LDNS_RDF_TYPE_INT16, 0),
	    ldns_native2rdf_int16(LDNS_RDF_TYPE_INT16, 100),
	    ldns_native2rdf_int16(LDNS_RDF_TYPE_INT16, (uint16_t)port),
	    host ? dname("%s.%s.%s.svc.%s.", host, svc, ns, a->z->domain)
		 : dname("%s.%s.svc.%s.", svc, ns, a->z->domain),
	};
	add_rr(a, LDNS_SECTION_ANSWER, rr_new(owner, LDNS_RR_TYPE_SRV, ttl_of(a)), rd, 4);
}

static void add_soa(struct ask *a)
{
	const char *d = a->z->domain;
	ldns_rdf *rd[7] = {
	    dname("ns.dns.%s.", d),
	    dname("hostmaster.%s.", d),
	    ldns_native2rdf_int32(LDNS_RDF_TYPE_INT32, a->v->serial),
	    ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, 7200),
	    ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, 1800),
	    ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, 86400),
	    ldns_native2rdf_int32(LDNS_RDF_TYPE_PERIOD, ttl_of(a)),
	};
	ldns_pkt_section sec =
	    a->qtype == LDNS_RR_TYPE_SOA && !a->nlab ? LDNS_SECTION_ANSWER : LDNS_SECTION_AUTHORITY;
	ldns_rdf *owner = sec == LDNS_SECTION_ANSWER ? qowner(a) : dname("%s.", d);
	add_rr(a, sec, rr_new(owner, LDNS_RR_TYPE_SOA, ttl_of(a)), rd, 7);
}

/* Empties the answer and additional sections (the name exists, the type
 * asked does not). */
static void drop_answers(struct ask *a)
{
	ldns_rr_list_deep_free(ldns_pkt_answer(a->r));
	ldns_pkt_set_answer(a->r, ldns_rr_list_new());
	ldns_pkt_set_ancount(a->r, 0);
	ldns_rr_list_deep_free(ldns_pkt_additional(a->r));
	ldns_pkt_set_additional(a->r, ldns_rr_list_new());
	ldns_pkt_set_arcount(a->r, 0);
}

/* ---- the zone's names ----------------------------------------------------------- */

static json_t *get(const struct ask *a, const char *kind, const char *ns, const char *name)
{
	if (!kb_dns_label(name, 63) || (ns[0] && !kb_dns_label(ns, 63)))
		return NULL;
	return a->v->get(a->v->arg, kind, ns, name);
}

static bool ns_exists(const struct ask *a, const char *ns)
{
	json_t *o = get(a, "namespaces", "", ns);
	json_decref(o);
	return o != NULL;
}

static bool headless(const json_t *svc)
{
	const char *cip = jstr(json_object_get(svc, "spec"), "clusterIP");
	return cip && strcmp(cip, "None") == 0;
}

static const char *svc_type(const json_t *svc)
{
	const char *t = jstr(json_object_get(svc, "spec"), "type");
	return t ? t : "ClusterIP";
}

/* The cluster IPs of a Service that has them (not headless, not
 * ExternalName), borrowed; NULL (which iterates as empty) otherwise. */
static json_t *cluster_ips(const json_t *svc)
{
	if (headless(svc) || strcmp(svc_type(svc), "ExternalName") == 0)
		return NULL;
	return json_object_get(json_object_get(svc, "spec"), "clusterIPs");
}

/* The endpoint's name within its Service: its hostname, or its address
 * with dashes (CoreDNS's rule). */
static void endpoint_name(const json_t *addr, char *buf, size_t len)
{
	const char *h = jstr(addr, "hostname"), *ip = jstr(addr, "ip");
	snprintf(buf, len, "%s", h && *h ? h : ip ? ip : "");
	if (!(h && *h))
		for (char *p = buf; *p; p++)
			if (*p == '.' || *p == ':')
				*p = '-';
}

typedef void (*endpoint_fn)(struct ask *a, const json_t *addr, const json_t *port, void *arg);

/* Calls fn for every ready address of ns/svc's Endpoints, with each port of
 * its subset (port NULL and one call per address when want_ports is
 * false). */
static void each_endpoint(struct ask *a, const char *ns, const char *svc, bool want_ports,
			  endpoint_fn fn, void *arg)
{
	json_t *ep = get(a, "endpoints", ns, svc);
	size_t i, j, k;
	json_t *sub, *addr, *port;
	json_array_foreach (json_object_get(ep, "subsets"), i, sub) {
		json_array_foreach (json_object_get(sub, "addresses"), j, addr) {
			if (!jstr(addr, "ip"))
				continue;
			if (!want_ports) {
				fn(a, addr, NULL, arg);
				continue;
			}
			json_array_foreach (json_object_get(sub, "ports"), k, port)
				fn(a, addr, port, arg);
		}
	}
	json_decref(ep);
}

struct srv_want {
	const char *svc, *ns;
	const char *port, *proto; /* NULL: every named port */
};

static bool port_matches(const json_t *port, const struct srv_want *w)
{
	const char *name = jstr(port, "name"), *proto = jstr(port, "protocol");
	if (!name || !*name)
		return false;
	if (!w->port)
		return true;
	if (strcasecmp(name, w->port) != 0)
		return false;
	return strcasecmp(proto ? proto : "TCP", w->proto) == 0;
}

static void endpoint_addr(struct ask *a, const json_t *addr, const json_t *port, void *arg)
{
	(void)port;
	(void)arg;
	add_addr(a, LDNS_SECTION_ANSWER, qowner(a), jstr(addr, "ip"));
}

static void endpoint_srv(struct ask *a, const json_t *addr, const json_t *port, void *arg)
{
	const struct srv_want *w = arg;
	if (!port_matches(port, w))
		return;
	char host[NAME_MAX_LEN];
	endpoint_name(addr, host, sizeof(host));
	if (!kb_dns_label(host, 63))
		return;
	json_int_t p = json_integer_value(json_object_get(port, "port"));
	add_srv(a, qowner(a), (int)p, host, w->svc, w->ns);
	ldns_rdf *owner = dname("%s.%s.%s.svc.%s.", host, w->svc, w->ns, a->z->domain);
	if (owner)
		add_addr(a, LDNS_SECTION_ADDITIONAL, owner, jstr(addr, "ip"));
}

static void svc_srv(struct ask *a, const json_t *svc, const struct srv_want *w)
{
	if (headless(svc)) {
		each_endpoint(a, w->ns, w->svc, true, endpoint_srv, (void *)w);
		return;
	}
	size_t i;
	json_t *port, *ip;
	json_array_foreach (json_object_get(json_object_get(svc, "spec"), "ports"), i, port) {
		if (port_matches(port, w))
			add_srv(a, qowner(a),
				(int)json_integer_value(json_object_get(port, "port")), NULL,
				w->svc, w->ns);
	}
	if (ldns_pkt_ancount(a->r) == 0)
		return;
	json_array_foreach (cluster_ips(svc), i, ip) {
		ldns_rdf *owner = dname("%s.%s.svc.%s.", w->svc, w->ns, a->z->domain);
		if (owner)
			add_addr(a, LDNS_SECTION_ADDITIONAL, owner, json_string_value(ip));
	}
}

/* <svc>.<ns>.svc.<zone> */
static void answer_service(struct ask *a, const json_t *svc, const char *name, const char *ns)
{
	a->exists = true;
	if (strcmp(svc_type(svc), "ExternalName") == 0) {
		const char *ext = jstr(json_object_get(svc, "spec"), "externalName");
		ldns_rdf *rd = ext ? dname("%s.", ext) : NULL;
		if (rd)
			add_rr(a, LDNS_SECTION_ANSWER,
			       rr_new(qowner(a), LDNS_RR_TYPE_CNAME, ttl_of(a)), &rd, 1);
		return;
	}
	if (a->qtype == LDNS_RR_TYPE_SRV) {
		struct srv_want w = {name, ns, NULL, NULL};
		svc_srv(a, svc, &w);
		return;
	}
	if (headless(svc)) {
		each_endpoint(a, ns, name, false, endpoint_addr, NULL);
		return;
	}
	size_t i;
	json_t *ip;
	json_array_foreach (cluster_ips(svc), i, ip)
		add_addr(a, LDNS_SECTION_ANSWER, qowner(a), json_string_value(ip));
}

struct host_want {
	const char *host;
	bool found;
};

static void endpoint_host(struct ask *a, const json_t *addr, const json_t *port, void *arg)
{
	(void)port;
	struct host_want *h = arg;
	char name[NAME_MAX_LEN];
	endpoint_name(addr, name, sizeof(name));
	if (strcmp(name, h->host) != 0)
		return;
	h->found = true;
	add_addr(a, LDNS_SECTION_ANSWER, qowner(a), jstr(addr, "ip"));
}

/* Names under <ns>.svc.<zone>: lab[0..n-3] are left of <ns>, lab[n-2]. */
static void answer_svc_zone(struct ask *a)
{
	size_t n = a->nlab; /* lab[n-1] == "svc" */
	if (n == 1) {
		a->exists = true;
		return;
	}
	const char *ns = a->lab[n - 2];
	if (n == 2) {
		a->exists = ns_exists(a, ns);
		return;
	}
	const char *name = a->lab[n - 3];
	json_t *svc = get(a, "services", ns, name);
	if (!svc)
		return;
	if (n == 3) {
		answer_service(a, svc, name, ns);
	} else if (n == 4 && headless(svc)) {
		struct host_want h = {a->lab[0], false};
		each_endpoint(a, ns, name, false, endpoint_host, &h);
		a->exists = h.found;
	} else if (n == 5 && a->lab[0][0] == '_' && a->lab[1][0] == '_') {
		/* _<port>._<proto>: exists when the port does, whatever was asked */
		struct srv_want w = {name, ns, a->lab[0] + 1, a->lab[1] + 1};
		svc_srv(a, svc, &w);
		a->exists = ldns_pkt_ancount(a->r) > 0;
		if (a->qtype != LDNS_RR_TYPE_SRV && a->qtype != LDNS_RR_TYPE_ANY)
			drop_answers(a);
	}
	json_decref(svc);
}

/* <a-b-c-d>.<ns>.pod.<zone> (CoreDNS's "pods insecure": the address is the
 * name's, whatever pod has it). */
static void answer_pod_zone(struct ask *a)
{
	size_t n = a->nlab;
	if (n == 1) {
		a->exists = true;
		return;
	}
	if (n == 2) {
		a->exists = ns_exists(a, a->lab[0]);
		return;
	}
	if (n != 3 || !ns_exists(a, a->lab[1]))
		return;
	char ip[64];
	snprintf(ip, sizeof(ip), "%s", a->lab[0]);
	size_t dashes = 0;
	for (char *p = ip; *p; p++)
		dashes += *p == '-';
	bool v6 = dashes != 3; /* 1-2-3-4, or 2001-db8--1 */
	for (char *p = ip; *p; p++)
		if (*p == '-')
			*p = v6 ? ':' : '.';
	ldns_rdf *rd = ldns_rdf_new_frm_str(v6 ? LDNS_RDF_TYPE_AAAA : LDNS_RDF_TYPE_A, ip);
	if (!rd)
		return;
	ldns_rdf_deep_free(rd);
	a->exists = true;
	add_addr(a, LDNS_SECTION_ANSWER, qowner(a), ip);
}

static void answer_zone(struct ask *a)
{
	size_t n = a->nlab;
	if (n == 0) {
		a->exists = true;
		if (a->qtype == LDNS_RR_TYPE_NS || a->qtype == LDNS_RR_TYPE_ANY) {
			ldns_rdf *rd = dname("ns.dns.%s.", a->z->domain);
			add_rr(a, LDNS_SECTION_ANSWER,
			       rr_new(qowner(a), LDNS_RR_TYPE_NS, ttl_of(a)), &rd, 1);
		}
		if (a->qtype == LDNS_RR_TYPE_SOA)
			add_soa(a);
		return;
	}
	if (n == 1 && strcmp(a->lab[0], "dns-version") == 0) {
		a->exists = true;
		if (a->qtype == LDNS_RR_TYPE_TXT || a->qtype == LDNS_RR_TYPE_ANY) {
			ldns_rdf *rd = ldns_rdf_new_frm_str(LDNS_RDF_TYPE_STR, "1.1.0");
			add_rr(a, LDNS_SECTION_ANSWER,
			       rr_new(qowner(a), LDNS_RR_TYPE_TXT, ttl_of(a)), &rd, 1);
		}
		return;
	}
	if (strcmp(a->lab[n - 1], "svc") == 0)
		answer_svc_zone(a);
	else if (strcmp(a->lab[n - 1], "pod") == 0)
		answer_pod_zone(a);
}

/* ---- reverse names ------------------------------------------------------------------- */

struct ptr_want {
	struct ask *a;
	const char *ip;
	bool found;
};

static bool has_ip(const json_t *ips, const char *ip)
{
	size_t i;
	json_t *v;
	json_array_foreach (ips, i, v)
		if (json_string_value(v) && strcmp(json_string_value(v), ip) == 0)
			return true;
	return false;
}

static bool ptr_service(const json_t *svc, void *arg)
{
	struct ptr_want *w = arg;
	if (!has_ip(cluster_ips(svc), w->ip))
		return true;
	const json_t *m = json_object_get(svc, "metadata");
	ldns_rdf *rd =
	    dname("%s.%s.svc.%s.", jstr(m, "name"), jstr(m, "namespace"), w->a->z->domain);
	add_rr(w->a, LDNS_SECTION_ANSWER, rr_new(qowner(w->a), LDNS_RR_TYPE_PTR, ttl_of(w->a)), &rd,
	       1);
	w->found = true;
	return false;
}

static bool ptr_endpoints(const json_t *ep, void *arg)
{
	struct ptr_want *w = arg;
	const json_t *m = json_object_get(ep, "metadata");
	size_t i, j;
	json_t *sub, *addr;
	json_array_foreach (json_object_get(ep, "subsets"), i, sub) {
		json_array_foreach (json_object_get(sub, "addresses"), j, addr) {
			const char *ip = jstr(addr, "ip"), *h = jstr(addr, "hostname");
			if (!ip || strcmp(ip, w->ip) != 0 || !h || !*h)
				continue;
			ldns_rdf *rd = dname("%s.%s.%s.svc.%s.", h, jstr(m, "name"),
					     jstr(m, "namespace"), w->a->z->domain);
			add_rr(w->a, LDNS_SECTION_ANSWER,
			       rr_new(qowner(w->a), LDNS_RR_TYPE_PTR, ttl_of(w->a)), &rd, 1);
			w->found = true;
			return false;
		}
	}
	return true;
}

static bool v4_reverse(const char *name, char *ip, size_t len)
{
	unsigned o[4];
	char tail[32];
	if (sscanf(name, "%u.%u.%u.%u.%31s", &o[3], &o[2], &o[1], &o[0], tail) != 5 ||
	    strcmp(tail, "in-addr.arpa") != 0)
		return false;
	for (int i = 0; i < 4; i++)
		if (o[i] > 255)
			return false;
	snprintf(ip, len, "%u.%u.%u.%u", o[0], o[1], o[2], o[3]);
	return true;
}

/* 32 nibble labels then ip6.arpa; written as the canonical text form, which
 * is how cluster IPs are stored. */
static bool v6_reverse(const char *name, char *ip, size_t len)
{
	uint8_t bytes[16];
	const char *p = name;
	for (int i = 31; i >= 0; i--) {
		int v = kb_hexval(p[0]);
		if (v < 0 || p[1] != '.')
			return false;
		if (i % 2)
			bytes[i / 2] = (uint8_t)v;
		else
			bytes[i / 2] = (uint8_t)(bytes[i / 2] | v << 4);
		p += 2;
	}
	if (strcmp(p, "ip6.arpa") != 0)
		return false;
	ldns_rdf *rd = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_AAAA, 16, bytes);
	char *s = rd ? ldns_rdf2str(rd) : NULL;
	ldns_rdf_deep_free(rd);
	if (!s)
		return false;
	snprintf(ip, len, "%s", s);
	free(s);
	return true;
}

/* 1: answered (a Service's or an endpoint's address), 0: forward. */
static int answer_reverse(struct ask *a)
{
	char ip[64];
	if (!v4_reverse(a->name, ip, sizeof(ip)) && !v6_reverse(a->name, ip, sizeof(ip)))
		return 0;
	struct ptr_want w = {a, ip, false};
	a->v->each(a->v->arg, "services", ptr_service, &w);
	if (!w.found)
		a->v->each(a->v->arg, "endpoints", ptr_endpoints, &w);
	if (!w.found)
		return 0;
	a->exists = true;
	if (a->qtype != LDNS_RR_TYPE_PTR && a->qtype != LDNS_RR_TYPE_ANY)
		drop_answers(a); /* the name exists; only its PTR does */
	return 1;
}

/* ---- one query ------------------------------------------------------------------------ */

/* A header-only answer with rcode to a query that could not be parsed. */
static int bare_answer(const uint8_t *q, uint8_t rcode, uint8_t **resp, size_t *rlen)
{
	uint8_t *m = calloc(1, 12);
	if (!m)
		return -ENOMEM;
	m[0] = q[0];
	m[1] = q[1];
	m[2] = (uint8_t)(0x80 | (q[2] & 0x79)); /* QR, the opcode and RD */
	m[3] = rcode;
	*resp = m;
	*rlen = 12;
	return 1;
}

static ldns_pkt *response_to(const ldns_pkt *q)
{
	ldns_pkt *r = ldns_pkt_new();
	if (!r)
		return NULL;
	ldns_pkt_set_id(r, ldns_pkt_id(q));
	ldns_pkt_set_qr(r, true);
	ldns_pkt_set_opcode(r, ldns_pkt_get_opcode(q));
	ldns_pkt_set_rd(r, ldns_pkt_rd(q));
	ldns_pkt_set_cd(r, ldns_pkt_cd(q));
	ldns_pkt_set_ra(r, true);
	ldns_rr_list *qs = ldns_pkt_question(q);
	for (size_t i = 0; i < ldns_rr_list_rr_count(qs); i++)
		ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, ldns_rr_clone(ldns_rr_list_rr(qs, i)));
	if (ldns_pkt_edns(q))
		ldns_pkt_set_edns_udp_size(r, 1232);
	return r;
}

/* The largest answer the client takes. */
static size_t answer_max(const ldns_pkt *q, bool tcp)
{
	if (tcp)
		return 65535;
	size_t m = ldns_pkt_edns(q) ? ldns_pkt_edns_udp_size(q) : 512;
	return m < 512 ? 512 : m;
}

/* p as a DNS message (malloc'ed into *out). ldns_pkt2wire takes a buffer
 * of the largest message (64 KiB) for every answer; one that grows from
 * 512 bytes holds almost all of them. 1 or -ENOMEM. */
static int pkt_wire(const ldns_pkt *p, uint8_t **out, size_t *len)
{
	ldns_buffer *b = ldns_buffer_new(512);
	if (!b)
		return -ENOMEM;
	int rc = -ENOMEM;
	if (ldns_pkt2buffer_wire(b, p) == LDNS_STATUS_OK) {
		*len = ldns_buffer_position(b);
		*out = ldns_buffer_export(b);
		rc = 1;
	}
	ldns_buffer_free(b);
	return rc;
}

static int to_wire(ldns_pkt *r, const ldns_pkt *q, bool tcp, uint8_t **resp, size_t *rlen)
{
	if (pkt_wire(r, resp, rlen) < 0)
		return -ENOMEM;
	if (*rlen <= answer_max(q, tcp))
		return 1;
	free(*resp);
	/* too long for this client: the question alone, truncated */
	ldns_pkt *t = response_to(q);
	if (!t)
		return -ENOMEM;
	ldns_pkt_set_aa(t, ldns_pkt_aa(r));
	ldns_pkt_set_tc(t, true);
	int rc = pkt_wire(t, resp, rlen);
	ldns_pkt_free(t);
	return rc;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n > m && s[n - m - 1] == '.' && strcmp(s + n - m, suffix) == 0;
}

/* Fills a->name (lower case, no trailing dot) and, under the zone, the
 * labels. Returns 1 for a name of the zone, 2 for a reverse name, 0 for
 * another one (the host namespace's included), -1 for one this zone cannot
 * hold (too many labels). */
static int classify(struct ask *a)
{
	char *s = ldns_rdf2str(a->qown);
	if (!s)
		return 0;
	snprintf(a->name, sizeof(a->name), "%s", s);
	free(s);
	size_t n = strlen(a->name);
	if (n && a->name[n - 1] == '.')
		a->name[--n] = 0;
	for (char *p = a->name; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	const char *zone = a->z->domain;
	if (strcmp(a->name, zone) != 0 && !ends_with(a->name, zone))
		return ends_with(a->name, "in-addr.arpa") || ends_with(a->name, "ip6.arpa") ? 2 : 0;
	size_t keep = strlen(a->name) - strlen(zone);
	snprintf(a->name2, sizeof(a->name2), "%.*s", (int)(keep ? keep - 1 : 0), a->name);
	a->nlab = 0;
	if (!keep)
		return 1;
	for (char *tok = a->name2, *save = NULL; (tok = strtok_r(tok, ".", &save)); tok = NULL) {
		if (a->nlab == MAX_LABELS)
			return -1;
		a->lab[a->nlab++] = tok;
	}
	size_t nl = a->nlab;
	if (a->z->host_ns && nl >= 2 && strcmp(a->lab[nl - 1], "svc") == 0 &&
	    strcmp(a->lab[nl - 2], a->z->host_ns) == 0)
		return 0; /* the host namespace's: the host answers */
	return 1;
}

static int answer_parsed(struct ask *a, const ldns_pkt *q, bool tcp, uint8_t **resp, size_t *rlen)
{
	ldns_rr *qrr = ldns_rr_list_rr(ldns_pkt_question(q), 0);
	a->qown = ldns_rr_owner(qrr);
	a->qtype = ldns_rr_get_type(qrr);
	int kind = classify(a);
	if (kind == 0)
		return 0;
	if (ldns_rr_get_class(qrr) != LDNS_RR_CLASS_IN && kind == 2)
		return 0;
	a->r = response_to(q);
	if (!a->r)
		return -ENOMEM;
	if (ldns_rr_get_class(qrr) != LDNS_RR_CLASS_IN) {
		ldns_pkt_set_rcode(a->r, LDNS_RCODE_REFUSED);
	} else if (kind == 2) {
		if (answer_reverse(a) == 0) {
			ldns_pkt_free(a->r);
			return 0;
		}
		ldns_pkt_set_aa(a->r, true);
	} else {
		if (kind == 1)
			answer_zone(a);
		ldns_pkt_set_aa(a->r, true);
		if (!ldns_pkt_ancount(a->r)) {
			ldns_pkt_set_rcode(a->r,
					   a->exists ? LDNS_RCODE_NOERROR : LDNS_RCODE_NXDOMAIN);
			if (!(a->qtype == LDNS_RR_TYPE_SOA && a->nlab == 0))
				add_soa(a);
		}
	}
	int rc = to_wire(a->r, q, tcp, resp, rlen);
	ldns_pkt_free(a->r);
	return rc;
}

int dns_answer(const struct dns_view *v, const struct dns_zone *z, const uint8_t *q, size_t qlen,
	       bool tcp, uint8_t **resp, size_t *rlen)
{
	if (qlen < 12 || (q[2] & 0x80))
		return -EINVAL;
	ldns_pkt *qp = NULL;
	if (ldns_wire2pkt(&qp, q, qlen) != LDNS_STATUS_OK)
		return bare_answer(q, LDNS_RCODE_FORMERR, resp, rlen);
	int rc;
	if (ldns_pkt_get_opcode(qp) != LDNS_PACKET_QUERY)
		rc = bare_answer(q, LDNS_RCODE_NOTIMPL, resp, rlen);
	else if (ldns_pkt_qdcount(qp) != 1)
		rc = bare_answer(q, LDNS_RCODE_FORMERR, resp, rlen);
	else {
		struct ask *a = calloc(1, sizeof(*a));
		if (!a) {
			ldns_pkt_free(qp);
			return -ENOMEM;
		}
		a->v = v;
		a->z = z;
		rc = answer_parsed(a, qp, tcp, resp, rlen);
		free(a);
	}
	ldns_pkt_free(qp);
	return rc;
}

int dns_fail(const uint8_t *q, size_t qlen, int rcode, uint8_t **resp, size_t *rlen)
{
	if (qlen < 12 || (q[2] & 0x80))
		return -EINVAL;
	ldns_pkt *qp = NULL;
	if (ldns_wire2pkt(&qp, q, qlen) != LDNS_STATUS_OK)
		return bare_answer(q, (uint8_t)rcode, resp, rlen);
	ldns_pkt *r = response_to(qp);
	int rc = -ENOMEM;
	if (r) {
		ldns_pkt_set_rcode(r, (uint8_t)rcode);
		rc = pkt_wire(r, resp, rlen);
		ldns_pkt_free(r);
	}
	ldns_pkt_free(qp);
	return rc;
}
