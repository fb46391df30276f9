/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The address filter (lib/addrfilter.h): two arrays of prefixes searched
 * linearly. They hold tens of entries (special ranges, a machine's
 * interfaces, a platform's allow list) and are checked once per outbound
 * connection, not per request.
 */
#include "lib/addrfilter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct cidr_list {
	struct kb_cidr *v;
	size_t n, cap;
};

struct kb_addrfilter {
	struct cidr_list deny, allow;
};

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* ---- addresses -------------------------------------------------------------------- */

static void addr_from_v4(struct kb_addr *out, const void *in4)
{
	memcpy(out->b, v4_mapped_prefix, 12);
	memcpy(out->b + 12, in4, 4);
}

bool kb_addr_is_v4(const struct kb_addr *a)
{
	return memcmp(a->b, v4_mapped_prefix, 12) == 0;
}

int kb_addr_parse(const char *s, struct kb_addr *out)
{
	struct in_addr a4;
	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, &a4) == 1) {
		addr_from_v4(out, &a4);
		return 0;
	}
	return inet_pton(AF_INET6, s, out->b) == 1 ? 0 : -EINVAL;
}

int kb_addr_from_sockaddr(const struct sockaddr *sa, struct kb_addr *out)
{
	if (sa->sa_family == AF_INET) {
		addr_from_v4(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(out->b, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

const char *kb_addr_format(const struct kb_addr *a, char *buf, size_t len)
{
	if (kb_addr_is_v4(a)) {
		if (!inet_ntop(AF_INET, a->b + 12, buf, (socklen_t)len))
			snprintf(buf, len, "?");
	} else if (!inet_ntop(AF_INET6, a->b, buf, (socklen_t)len)) {
		snprintf(buf, len, "?");
	}
	return buf;
}

/* ---- prefixes --------------------------------------------------------------------- */

/* True when the bits of a past the first `bits` are all zero. */
static bool host_bits_zero(const struct kb_addr *a, unsigned bits)
{
	for (unsigned i = bits; i < 128; i++)
		if (a->b[i / 8] & (0x80 >> (i % 8)))
			return false;
	return true;
}

int kb_cidr_parse(const char *s, struct kb_cidr *out)
{
	char buf[64];
	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", s);
	char *slash = strchr(buf, '/');
	long bits = -1;
	if (slash) {
		char *end;
		*slash = '\0';
		if (!slash[1] || slash[1] == '-' || slash[1] == '+')
			return -EINVAL;
		bits = strtol(slash + 1, &end, 10);
		if (*end)
			return -EINVAL;
	}
	if (kb_addr_parse(buf, &out->addr) < 0)
		return -EINVAL;
	/* an IPv4 prefix written as IPv4 counts IPv4 bits */
	bool v4 = strchr(buf, ':') == NULL;
	long max = v4 ? 32 : 128;
	if (bits < 0)
		bits = max;
	if (bits > max)
		return -EINVAL;
	out->bits = (unsigned)(v4 ? bits + 96 : bits);
	return host_bits_zero(&out->addr, out->bits) ? 0 : -EINVAL;
}

bool kb_cidr_contains(const struct kb_cidr *c, const struct kb_addr *a)
{
	unsigned full = c->bits / 8, rest = c->bits % 8;
	if (memcmp(c->addr.b, a->b, full) != 0)
		return false;
	if (!rest)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (c->addr.b[full] & mask) == (a->b[full] & mask);
}

const char *kb_cidr_format(const struct kb_cidr *c, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	bool v4 = kb_addr_is_v4(&c->addr) && c->bits >= 96;
	kb_addr_format(&c->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a, v4 ? c->bits - 96 : c->bits);
	return buf;
}

/* inner lies wholly inside outer */
static bool cidr_within(const struct kb_cidr *inner, const struct kb_cidr *outer)
{
	return inner->bits >= outer->bits && kb_cidr_contains(outer, &inner->addr);
}

/* ---- the filter ------------------------------------------------------------------- */

kb_addrfilter_t *kb_addrfilter_new(void)
{
	return calloc(1, sizeof(struct kb_addrfilter));
}

void kb_addrfilter_free(kb_addrfilter_t *f)
{
	if (!f)
		return;
	free(f->deny.v);
	free(f->allow.v);
	free(f);
}

static int list_add(struct cidr_list *l, const struct kb_cidr *c)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].bits == c->bits && memcmp(&l->v[i].addr, &c->addr, 16) == 0)
			return 0; /* already there (an address on two interfaces) */
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct kb_cidr *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *c;
	return 0;
}

int kb_addrfilter_deny(kb_addrfilter_t *f, const struct kb_cidr *c)
{
	return list_add(&f->deny, c);
}

int kb_addrfilter_allow(kb_addrfilter_t *f, const struct kb_cidr *c)
{
	return list_add(&f->allow, c);
}

int kb_addrfilter_deny_addr(kb_addrfilter_t *f, const struct kb_addr *a)
{
	struct kb_cidr c = {.addr = *a, .bits = 128};
	return list_add(&f->deny, &c);
}

int kb_addrfilter_deny_special(kb_addrfilter_t *f)
{
	static const char *const special[] = {
	    "0.0.0.0/8",          /* "this network": 0.0.0.0 reaches the machine itself */
	    "127.0.0.0/8",        /* loopback */
	    "169.254.0.0/16",     /* link-local, with the cloud metadata address */
	    "224.0.0.0/4",        /* multicast */
	    "255.255.255.255/32", /* broadcast */
	    "::/96",              /* unspecified, loopback, IPv4-compatible */
	    "fe80::/10",          /* link-local */
	    "ff00::/8",           /* multicast */
	    "64:ff9b::/96",       /* NAT64: an IPv4 address through a translator */
	    "64:ff9b:1::/48",     /* local-use NAT64 */
	    "2002::/16",          /* 6to4: an IPv4 address through a relay */
	};
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
		struct kb_cidr c;
		if (kb_cidr_parse(special[i], &c) < 0)
			return -EINVAL; /* not reached: the table is fixed */
		int rc = list_add(&f->deny, &c);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int kb_addrfilter_deny_local(kb_addrfilter_t *f)
{
	struct ifaddrs *ifs, *i;
	if (getifaddrs(&ifs) < 0)
		return -errno;
	int rc = 0;
	for (i = ifs; i && rc == 0; i = i->ifa_next) {
		struct kb_addr a;
		if (!i->ifa_addr || kb_addr_from_sockaddr(i->ifa_addr, &a) < 0)
			continue;
		rc = kb_addrfilter_deny_addr(f, &a);
	}
	freeifaddrs(ifs);
	return rc;
}

enum kb_addr_verdict kb_addrfilter_check(const kb_addrfilter_t *f, const struct kb_addr *a)
{
	bool allowed = false;
	for (size_t j = 0; j < f->allow.n; j++)
		allowed |= kb_cidr_contains(&f->allow.v[j], a);
	for (size_t i = 0; i < f->deny.n; i++) {
		const struct kb_cidr *d = &f->deny.v[i];
		if (!kb_cidr_contains(d, a))
			continue;
		bool excepted = false;
		for (size_t j = 0; j < f->allow.n && !excepted; j++)
			excepted =
			    kb_cidr_contains(&f->allow.v[j], a) && cidr_within(&f->allow.v[j], d);
		if (!excepted)
			return KB_ADDR_DENY;
	}
	return allowed ? KB_ADDR_ALLOW : KB_ADDR_UNKNOWN;
}

size_t kb_addrfilter_ndeny(const kb_addrfilter_t *f)
{
	return f->deny.n;
}

size_t kb_addrfilter_nallow(const kb_addrfilter_t *f)
{
	return f->allow.n;
}
