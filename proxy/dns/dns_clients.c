/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who may ask the tenant's DNS (dns_impl.h): the tenant's own pods. Its
 * names (Services, headless endpoints, pod hostnames) are the tenant's; a
 * responder reachable from the host cluster would otherwise list them to
 * any pod of any tenant that guesses names (docs/dns.md). A query from
 * another address is answered REFUSED, as CoreDNS's acl plugin answers a
 * blocked client (plugin/acl/acl.go, ServeDNS: dns.RcodeRefused).
 *
 * DESIGN
 * Two maps kept from a watch on the store's pods, so that a query costs
 * one lookup: `ips` address -> "ns/name" of the pod that has it, `pods`
 * "ns/name" -> its addresses, to take a pod's old addresses away when it
 * changes or goes. An address two pods claim (a pod deleted and one made
 * with its address) stays while one of them has it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy/dns/dns_impl.h"

struct dns_clients {
	store_watch_t *w;
	json_t *ips;  /* address -> "ns/name" */
	json_t *pods; /* "ns/name" -> [address] */
};

static void forget(struct dns_clients *c, const char *key)
{
	size_t i;
	json_t *a;
	json_array_foreach (json_object_get(c->pods, key), i, a) {
		const char *ip = json_string_value(a);
		const char *owner = json_string_value(json_object_get(c->ips, ip));
		if (owner && strcmp(owner, key) == 0)
			json_object_del(c->ips, ip);
	}
	json_object_del(c->pods, key);
}

static void add_ip(json_t *list, const char *ip)
{
	if (ip && *ip)
		json_array_append_new(list, json_string(ip));
}

static void learn(struct dns_clients *c, const char *key, const json_t *pod)
{
	const json_t *st = json_object_get(pod, "status");
	json_t *list = json_array(), *e;
	size_t i;
	add_ip(list, json_string_value(json_object_get(st, "podIP")));
	json_array_foreach (json_object_get(st, "podIPs"), i, e)
		add_ip(list, json_string_value(json_object_get(e, "ip")));
	json_array_foreach (list, i, e)
		json_object_set_new(c->ips, json_string_value(e), json_string(key));
	json_object_set_new(c->pods, key, list);
}

static void pod_key(const json_t *pod, char *key, size_t len)
{
	const json_t *m = json_object_get(pod, "metadata");
	const char *ns = json_string_value(json_object_get(m, "namespace"));
	const char *name = json_string_value(json_object_get(m, "name"));
	snprintf(key, len, "%s/%s", ns ? ns : "", name ? name : "");
}

static void on_pod(const struct store_event *ev, void *arg)
{
	struct dns_clients *c = arg;
	char key[600];
	snprintf(key, sizeof(key), "%s/%s", ev->ns ? ev->ns : "", ev->name ? ev->name : "");
	forget(c, key);
	if (ev->type != STORE_DELETED)
		learn(c, key, ev->obj);
}

int dns_clients_start(store_t *st, struct dns_clients **out)
{
	struct dns_clients *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ips = json_object();
	c->pods = json_object();
	struct store_list_req req = {.res = "/pods"};
	struct store_list_result res = {0};
	int rc = store_list(st, &req, &res);
	if (rc == 0) {
		size_t i;
		json_t *p;
		char key[600];
		json_array_foreach (res.items, i, p) {
			pod_key(p, key, sizeof(key));
			learn(c, key, p);
		}
		json_decref(res.items);
		free(res.next);
		rc = store_watch(st, "/pods", NULL, res.rev, on_pod, c, &c->w);
	}
	if (rc < 0) {
		dns_clients_stop(c);
		return rc;
	}
	*out = c;
	return 0;
}

bool dns_clients_allowed(const struct dns_clients *c, const struct sockaddr *peer)
{
	char ip[INET6_ADDRSTRLEN];
	if (!c)
		return true;
	if (peer->sa_family == AF_INET) {
		const struct in_addr *a = &((const struct sockaddr_in *)peer)->sin_addr;
		if (ntohl(a->s_addr) == INADDR_LOOPBACK)
			return true;
		inet_ntop(AF_INET, a, ip, sizeof(ip));
	} else if (peer->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)peer)->sin6_addr;
		if (IN6_IS_ADDR_LOOPBACK(a))
			return true;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			struct in_addr v4;
			memcpy(&v4, &a->s6_addr[12], 4);
			if (ntohl(v4.s_addr) == INADDR_LOOPBACK)
				return true;
			inet_ntop(AF_INET, &v4, ip, sizeof(ip));
		} else {
			inet_ntop(AF_INET6, a, ip, sizeof(ip));
		}
	} else {
		return false;
	}
	return json_object_get(c->ips, ip) != NULL;
}

void dns_clients_stop(struct dns_clients *c)
{
	if (!c)
		return;
	if (c->w)
		store_unwatch(c->w);
	json_decref(c->ips);
	json_decref(c->pods);
	free(c);
}
