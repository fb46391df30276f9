/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The syntax of Kubernetes names, keys and label values
 * (proxy/model/names.c), as k8s.io/apimachinery/pkg/util/validation checks
 * them and words their problems. Pure: any thread.
 */
#ifndef KB_PROXY_MODEL_NAMES_H
#define KB_PROXY_MODEL_NAMES_H

#include <stddef.h>

/*
 * Each returns NULL when `s` is valid, else a static string with kube's
 * message (the first problem found; e.g. "must be no more than 63 characters"
 * or the RFC 1123 regex text).
 */
const char *names_dns1123_subdomain(const char *s); /* ≤253, [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.…)* */
const char *names_dns1123_label(const char *s);     /* ≤63 */
const char *names_dns1035_label(const char *s);  /* ≤63, starts with a letter (Service names) */
const char *names_qualified_name(const char *s); /* [prefix/]name, label and annotation keys */
const char *names_label_value(const char *s);    /* ≤63, may be empty */
const char *names_path_segment(const char *s);   /* not "." or "..", no '/' or '%' (RBAC) */
const char *names_config_key(const char *s);     /* ConfigMap/Secret data keys */

/* Every message (up to NAMES_MAXMSG, in kube's order) for s as one of the
 * syntaxes above, into m[]; returns how many (0: valid). */
#define NAMES_MAXMSG 3
enum names_syntax {
	NAMES_DNS1123_SUBDOMAIN,
	NAMES_DNS1123_LABEL,
	NAMES_DNS1035_LABEL,
	NAMES_QUALIFIED_NAME,
	NAMES_LABEL_VALUE,
	NAMES_PATH_SEGMENT, /* path.ValidatePathSegmentName */
};
size_t names_syntax_msgs(enum names_syntax syn, const char *s, const char *m[NAMES_MAXMSG]);

/* The same, one function a syntax (for callers that pick one): every
 * message for s into m[NAMES_MAXMSG], returns how many (0: valid). */
typedef size_t (*names_msgs_fn)(const char *s, const char **m);
size_t names_msgs_subdomain(const char *s, const char **m);
size_t names_msgs_label(const char *s, const char **m);
size_t names_msgs_1035(const char *s, const char **m);
size_t names_msgs_qname(const char *s, const char **m);
size_t names_msgs_label_value(const char *s, const char **m);
size_t names_msgs_path_segment(const char *s, const char **m);
size_t names_msgs_config_key(const char *s, const char **m);

#endif
