/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the files of Kubernetes' CEL libraries: k8s.c (the
 * table, quantities, semver, Go-style quoting), k8s_net.c (URLs, IP
 * addresses and CIDRs) and k8s_format.c (format.*). Every function here
 * has cel_func's signature: args are never error values, and a kind or
 * opaque type it does not take gives cel_no_overload.
 */
#ifndef KUBICLE_CEL_K8S_IMPL_H
#define KUBICLE_CEL_K8S_IMPL_H

#include "proxy/cel/cel_impl.h"

#define K8S_FN(f) cel_value_t f(cel_ctx_t *c, const cel_value_t *args, size_t nargs)

/* s[0..n) as Go's strconv.Quote writes it (arena), for kube's messages. */
const char *k8s_quote(cel_ctx_t *c, const char *s, size_t n);
/* Charges the cost of reading n bytes; false once the limit is passed. */
bool k8s_cost_len(cel_ctx_t *c, size_t n);
/* Whether v is an opaque value of type t. */
static inline bool k8s_is(cel_value_t v, const struct cel_opaque_type *t)
{
	return v.kind == CEL_OPAQUE && v.o.type == t;
}

/* Go's url.ParseRequestURI(s) error, or NULL when s parses (format.uri). */
const char *k8s_request_uri_error(cel_ctx_t *c, const char *s, size_t n);

extern const struct cel_opaque_type k8s_quantity_type, k8s_semver_type, k8s_url_type, k8s_ip_type,
    k8s_cidr_type, k8s_format_type;

/* k8s.c: quantities */
K8S_FN(k8s_quantity);
K8S_FN(k8s_is_quantity);
K8S_FN(k8s_q_sign);
K8S_FN(k8s_q_is_integer);
K8S_FN(k8s_q_as_integer);
K8S_FN(k8s_q_as_float);
K8S_FN(k8s_q_add);
K8S_FN(k8s_q_sub);
/* k8s.c: semver */
K8S_FN(k8s_semver);
K8S_FN(k8s_is_semver);
K8S_FN(k8s_sv_major);
K8S_FN(k8s_sv_minor);
K8S_FN(k8s_sv_patch);
/* k8s.c: comparisons of quantities and versions */
K8S_FN(k8s_is_greater_than);
K8S_FN(k8s_is_less_than);
K8S_FN(k8s_compare_to);

/* k8s_net.c */
K8S_FN(k8s_url);
K8S_FN(k8s_is_url);
K8S_FN(k8s_url_scheme);
K8S_FN(k8s_url_host);
K8S_FN(k8s_url_hostname);
K8S_FN(k8s_url_port);
K8S_FN(k8s_url_escaped_path);
K8S_FN(k8s_url_query);
K8S_FN(k8s_ip);
K8S_FN(k8s_is_ip);
K8S_FN(k8s_ip_is_canonical);
K8S_FN(k8s_ip_family);
K8S_FN(k8s_ip_is_unspecified);
K8S_FN(k8s_ip_is_loopback);
K8S_FN(k8s_ip_is_ll_multicast);
K8S_FN(k8s_ip_is_ll_unicast);
K8S_FN(k8s_ip_is_global_unicast);
K8S_FN(k8s_net_string);
K8S_FN(k8s_cidr);
K8S_FN(k8s_is_cidr);
K8S_FN(k8s_cidr_contains_ip);
K8S_FN(k8s_cidr_contains_cidr);
K8S_FN(k8s_cidr_ip);
K8S_FN(k8s_cidr_masked);
K8S_FN(k8s_cidr_prefix_length);

/* k8s_format.c */
K8S_FN(k8s_format_named);
K8S_FN(k8s_format_validate);
K8S_FN(k8s_format_dns1123_label);
K8S_FN(k8s_format_dns1123_subdomain);
K8S_FN(k8s_format_dns1035_label);
K8S_FN(k8s_format_qualified_name);
K8S_FN(k8s_format_dns1123_label_prefix);
K8S_FN(k8s_format_dns1123_subdomain_prefix);
K8S_FN(k8s_format_dns1035_label_prefix);
K8S_FN(k8s_format_label_value);
K8S_FN(k8s_format_uri);
K8S_FN(k8s_format_uuid);
K8S_FN(k8s_format_byte);
K8S_FN(k8s_format_date);
K8S_FN(k8s_format_datetime);

#endif
