/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress policy (proxy/core/egress.h): one lib/addrfilter built at
 * startup, and the syncer's word on the tenant's own host addresses.
 *
 * Threading: loop thread only.
 */
#include "proxy/core/core.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lib/addrfilter.h"
#include "lib/log.h"

struct egress {
	kb_addrfilter_t *filter;
	proxy_egress_owner_fn owner; /* proxy_set_egress_owner, or NULL */
	void *owner_arg;
};

/* The host part of a URL ("https://[::1]:6443/x" -> "::1"), into buf. */
static bool url_host(const char *url, char *buf, size_t len)
{
	const char *h = strstr(url, "://");
	h = h ? h + 3 : url;
	const char *at = strpbrk(h, "@/");
	if (at && *at == '@')
		h = at + 1;
	size_t n;
	if (*h == '[') {
		const char *end = strchr(h, ']');
		if (!end)
			return false;
		h++;
		n = (size_t)(end - h);
	} else {
		n = strcspn(h, ":/?");
	}
	if (!n || n >= len)
		return false;
	memcpy(buf, h, n);
	buf[n] = '\0';
	return true;
}

/* Refuses every address the host API server's name resolves to now. */
static void deny_host_server(struct egress *e, const char *url)
{
	char host[256];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
	if (!url_host(url, host, sizeof(host))) {
		kb_warn("proxy", "egress: cannot read the host of %s", url);
		return;
	}
	int rc = getaddrinfo(host, NULL, &hints, &res);
	if (rc != 0) {
		kb_warn("proxy", "egress: resolving the host API server %s: %s", host,
			gai_strerror(rc));
		return;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		struct kb_addr a;
		if (kb_addr_from_sockaddr(ai->ai_addr, &a) == 0)
			kb_addrfilter_deny_addr(e->filter, &a);
	}
	freeaddrinfo(res);
}

static int add_allowed(struct egress *e, const char *const *allow)
{
	for (size_t i = 0; allow && allow[i]; i++) {
		struct kb_cidr c;
		if (kb_cidr_parse(allow[i], &c) < 0) {
			kb_err("proxy", "--egress-allow %s: not an IP prefix (CIDR)", allow[i]);
			return -EINVAL;
		}
		int rc = kb_addrfilter_allow(e->filter, &c);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int egress_start(struct proxy *px, const struct proxy_opts *opts)
{
	struct egress *e = calloc(1, sizeof(*e));
	if (!e || !(e->filter = kb_addrfilter_new())) {
		free(e);
		return -ENOMEM;
	}
	int rc = kb_addrfilter_deny_special(e->filter);
	if (rc == 0 && (rc = kb_addrfilter_deny_local(e->filter)) < 0)
		kb_warn("proxy", "egress: listing this machine's addresses: %s", strerror(-rc));
	if (rc != -ENOMEM)
		rc = add_allowed(e, opts->egress_allow);
	if (rc < 0) {
		kb_addrfilter_free(e->filter);
		free(e);
		return rc;
	}
	if (opts->host_server)
		deny_host_server(e, opts->host_server);
	kb_info("proxy", "egress: %zu refused and %zu allowed prefixes",
		kb_addrfilter_ndeny(e->filter), kb_addrfilter_nallow(e->filter));
	px->egress = e;
	return 0;
}

void egress_stop(struct proxy *px)
{
	if (!px->egress)
		return;
	kb_addrfilter_free(px->egress->filter);
	free(px->egress);
	px->egress = NULL;
}

bool egress_allow(const struct sockaddr *addr, void *arg)
{
	struct proxy *px = arg;
	struct egress *e = px->egress;
	struct kb_addr a;
	if (!e || kb_addr_from_sockaddr(addr, &a) < 0)
		return false;
	switch (kb_addrfilter_check(e->filter, &a)) {
	case KB_ADDR_DENY: return false;
	case KB_ADDR_ALLOW: return true;
	default: return e->owner && e->owner(e->owner_arg, &a);
	}
}

void proxy_set_egress_owner(proxy_t *px, proxy_egress_owner_fn fn, void *arg)
{
	if (!px->egress)
		return;
	px->egress->owner = fn;
	px->egress->owner_arg = arg;
}
