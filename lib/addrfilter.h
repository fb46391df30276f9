/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An address filter: which IP addresses an outbound connection may go to.
 * A list of denied prefixes and a list of allowed ones (CIDRs); every
 * address is handled as IPv6, an IPv4 address as its IPv4-mapped form
 * (::ffff:a.b.c.d), so "127.0.0.0/8" also covers ::ffff:127.0.0.1 and a
 * caller cannot slip past a rule by writing an address the other way.
 *
 * A decision (kb_addrfilter_check):
 *   - an address inside a denied prefix is refused, unless an allowed prefix
 *     that holds it lies wholly inside that denied prefix (it names the
 *     exception on purpose: "127.0.0.1/32" opens one loopback address, while
 *     "0.0.0.0/0" does not open loopback);
 *   - else an address inside an allowed prefix is allowed;
 *   - else the filter has no opinion (KB_ADDR_UNKNOWN): the caller decides.
 *
 * kb_addrfilter_deny_special() adds the addresses no outbound call of a
 * service should reach by accident: unspecified (0.0.0.0/8, ::), loopback
 * (127/8, ::1), link-local (169.254/16 with the cloud metadata address,
 * fe80::/10), multicast (224/4, ff00::/8), broadcast, and the IPv6 forms
 * that carry an IPv4 address to another place (IPv4-compatible ::/96,
 * NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16).
 * kb_addrfilter_deny_local() adds the machine's own interface addresses.
 *
 * The filter is meant to be called where a socket is about to connect to
 * an already resolved address (lib/httpc's allow hook), so a name that
 * resolves to another address on each lookup gains nothing.
 *
 * Threading: building is not thread-safe; a built filter may be checked
 * from any thread.
 */
#ifndef KB_ADDRFILTER_H
#define KB_ADDRFILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr;

/* An address as 16 bytes of IPv6 (IPv4 mapped into ::ffff:0:0/96). */
struct kb_addr {
	uint8_t b[16];
};

struct kb_cidr {
	struct kb_addr addr; /* the host bits are zero */
	unsigned bits;       /* 0..128, in the IPv6 form (an IPv4 /8 is 104) */
};

/* Parses "10.0.0.1", "fd00::1", "::ffff:10.0.0.1". 0 or -EINVAL. */
int kb_addr_parse(const char *s, struct kb_addr *out);
/* The address of an AF_INET or AF_INET6 sockaddr (its port ignored).
 * 0 or -EAFNOSUPPORT. */
int kb_addr_from_sockaddr(const struct sockaddr *sa, struct kb_addr *out);
/* Writes a as people write it (IPv4-mapped addresses as dotted IPv4) into
 * buf (at least 46 bytes). Returns buf. */
const char *kb_addr_format(const struct kb_addr *a, char *buf, size_t len);
/* True for an IPv4-mapped address (::ffff:0:0/96). */
bool kb_addr_is_v4(const struct kb_addr *a);

/* Parses "10.0.0.0/8", "fd00::/8", or a bare address (a /32 or /128). An
 * IPv4 prefix length counts IPv4 bits. Host bits set below the prefix
 * ("10.0.0.1/8") are refused as a likely typo. 0 or -EINVAL. */
int kb_cidr_parse(const char *s, struct kb_cidr *out);
bool kb_cidr_contains(const struct kb_cidr *c, const struct kb_addr *a);
/* Writes c as "a.b.c.d/n" or "x::/n" into buf (at least 50 bytes). */
const char *kb_cidr_format(const struct kb_cidr *c, char *buf, size_t len);

typedef struct kb_addrfilter kb_addrfilter_t;

enum kb_addr_verdict {
	KB_ADDR_DENY = -1,   /* inside a denied prefix, no exception names it */
	KB_ADDR_UNKNOWN = 0, /* in no list */
	KB_ADDR_ALLOW = 1,   /* inside an allowed prefix */
};

/* An empty filter, or NULL (ENOMEM). */
kb_addrfilter_t *kb_addrfilter_new(void);
void kb_addrfilter_free(kb_addrfilter_t *f);
/* Adds a prefix to the denied or the allowed list. 0 or -ENOMEM. */
int kb_addrfilter_deny(kb_addrfilter_t *f, const struct kb_cidr *c);
int kb_addrfilter_allow(kb_addrfilter_t *f, const struct kb_cidr *c);
/* Adds one address as a /128 to the denied list. 0 or -ENOMEM. */
int kb_addrfilter_deny_addr(kb_addrfilter_t *f, const struct kb_addr *a);
/* Adds the special ranges listed above. 0 or -ENOMEM. */
int kb_addrfilter_deny_special(kb_addrfilter_t *f);
/* Adds every address of the machine's interfaces (getifaddrs). 0 or a
 * negative errno. Blocks briefly (a netlink dump): call at startup. */
int kb_addrfilter_deny_local(kb_addrfilter_t *f);
/* The decision for a (see above). */
enum kb_addr_verdict kb_addrfilter_check(const kb_addrfilter_t *f, const struct kb_addr *a);
/* Number of denied and allowed prefixes. */
size_t kb_addrfilter_ndeny(const kb_addrfilter_t *f);
size_t kb_addrfilter_nallow(const kb_addrfilter_t *f);

#endif
