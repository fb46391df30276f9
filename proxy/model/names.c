/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The syntax of Kubernetes names, keys and label values, with
 * k8s.io/apimachinery/pkg/util/validation's messages (the same regular
 * expressions, written out by hand). Used by validation and by the
 * selectors' parsers, below both.
 *
 * Threading: any thread (constant tables only).
 */
#include "proxy/model/names.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "lib/util.h"

/* ---- name syntax ------------------------------------------------------------ */

#define RX_LABEL "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define RX_QNAME "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"

#define MSG_SUBDOMAIN                                                                    \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "        \
	"characters, '-' or '.', and must start and end with an alphanumeric character " \
	"(e.g. 'example.com', regex used for validation is '" RX_LABEL "(\\." RX_LABEL ")*')"
#define MSG_LABEL                                                                          \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters "   \
	"or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  " \
	"or '123-abc', regex used for validation is '" RX_LABEL "')"
#define MSG_1035                                                                       \
	"a DNS-1035 label must consist of lower case alphanumeric characters or '-', " \
	"start with an alphabetic character, and end with an alphanumeric character "  \
	"(e.g. 'my-name',  or 'abc-123', regex used for validation is "                \
	"'[a-z]([-a-z0-9]*[a-z0-9])?')"
#define MSG_QNAME_BODY                                                                      \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and "     \
	"end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', " \
	"regex used for validation is '" RX_QNAME "')"
#define MSG_LABEL_VALUE                                                                 \
	"a valid label must be an empty string or consist of alphanumeric characters, " \
	"'-', '_' or '.', and must start and end with an alphanumeric character (e.g. " \
	"'MyValue',  or 'my_value',  or '12345', regex used for validation is "         \
	"'(" RX_QNAME ")?')"
#define MSG_CONFIG_KEY                                                                    \
	"a valid config key must consist of alphanumeric characters, '-', '_' or '.' "    \
	"(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is " \
	"'[-._a-zA-Z0-9]+')"

static bool is_alnum(char c)
{
	return isalnum((unsigned char)c) != 0;
}

static bool rx_subdomain(const char *s, size_t n)
{
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (!kb_dns_label_n(s + start, i - start))
			return false;
		start = i + 1;
	}
	return true;
}

static bool rx_qname(const char *s, size_t n)
{
	if (n == 0 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* Every check below fills up to 3 messages, like kube's []string results. */

size_t names_msgs_subdomain(const char *s, const char **m)
{
	size_t k = 0, n = strlen(s);
	if (n > 253)
		m[k++] = "must be no more than 253 characters";
	if (!rx_subdomain(s, n))
		m[k++] = MSG_SUBDOMAIN;
	return k;
}

size_t names_msgs_label(const char *s, const char **m)
{
	size_t k = 0, n = strlen(s);
	if (n > 63)
		m[k++] = "must be no more than 63 characters";
	if (!kb_dns_label_n(s, n)) /* a subdomain of the right length: the dots are wrong */
		m[k++] = rx_subdomain(s, n) ? "must not contain dots" : MSG_LABEL;
	return k;
}

size_t names_msgs_1035(const char *s, const char **m)
{
	size_t k = 0, n = strlen(s);
	if (n > 63)
		m[k++] = "must be no more than 63 characters";
	if (!kb_dns_label_n(s, n) || !(s[0] >= 'a' && s[0] <= 'z'))
		m[k++] = MSG_1035;
	return k;
}

static size_t msgs_prefix(const char *p, size_t n, const char **m)
{
	size_t k = 0;
	if (n == 0) {
		m[k++] = "prefix part must be non-empty";
		return k;
	}
	if (n > 253)
		m[k++] = "prefix part must be no more than 253 characters";
	if (!rx_subdomain(p, n))
		m[k++] = "prefix part " MSG_SUBDOMAIN;
	return k;
}

size_t names_msgs_qname(const char *s, const char **m)
{
	const char *slash = strchr(s, '/'), *name = s;
	size_t k = 0;
	if (slash && strchr(slash + 1, '/')) {
		m[k++] = "a qualified name " MSG_QNAME_BODY " with an optional DNS subdomain "
			 "prefix and '/' (e.g. 'example.com/MyName')";
		return k;
	}
	if (slash) {
		k = msgs_prefix(s, (size_t)(slash - s), m);
		name = slash + 1;
	}
	size_t n = strlen(name);
	if (n == 0 && k < NAMES_MAXMSG)
		m[k++] = "name part must be non-empty";
	else if (n > 63 && k < NAMES_MAXMSG)
		m[k++] = "name part must be no more than 63 characters";
	if (!rx_qname(name, n) && k < NAMES_MAXMSG)
		m[k++] = "name part " MSG_QNAME_BODY;
	return k;
}

size_t names_msgs_label_value(const char *s, const char **m)
{
	size_t k = 0, n = strlen(s);
	if (n > 63)
		m[k++] = "must be no more than 63 characters";
	if (n > 0 && !rx_qname(s, n))
		m[k++] = MSG_LABEL_VALUE;
	return k;
}

size_t names_msgs_path_segment(const char *s, const char **m)
{
	size_t k = 0;
	if (strcmp(s, ".") == 0)
		m[k++] = "may not be '.'";
	else if (strcmp(s, "..") == 0)
		m[k++] = "may not be '..'";
	if (strchr(s, '/'))
		m[k++] = "may not contain '/'";
	if (strchr(s, '%'))
		m[k++] = "may not contain '%'";
	return k;
}

size_t names_msgs_config_key(const char *s, const char **m)
{
	size_t k = 0, n = strlen(s);
	if (n > 253)
		m[k++] = "must be no more than 253 characters";
	bool ok = n > 0;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			ok = false;
	if (!ok)
		m[k++] = MSG_CONFIG_KEY;
	if (strcmp(s, ".") == 0)
		m[k++] = "must not be '.'";
	else if (strcmp(s, "..") == 0)
		m[k++] = "must not be '..'";
	else if (strncmp(s, "..", 2) == 0)
		m[k++] = "must not start with '..'";
	return k;
}

static const char *first(names_msgs_fn fn, const char *s)
{
	const char *m[NAMES_MAXMSG];
	return fn(s ? s : "", m) ? m[0] : NULL;
}

size_t names_syntax_msgs(enum names_syntax syn, const char *s, const char *m[NAMES_MAXMSG])
{
	static const names_msgs_fn fns[] = {
	    [NAMES_DNS1123_SUBDOMAIN] = names_msgs_subdomain,
	    [NAMES_DNS1123_LABEL] = names_msgs_label,
	    [NAMES_DNS1035_LABEL] = names_msgs_1035,
	    [NAMES_QUALIFIED_NAME] = names_msgs_qname,
	    [NAMES_LABEL_VALUE] = names_msgs_label_value,
	    [NAMES_PATH_SEGMENT] = names_msgs_path_segment,
	};
	if ((size_t)syn >= KB_ARRAY_SIZE(fns))
		return 0;
	return fns[syn](s ? s : "", m);
}

const char *names_dns1123_subdomain(const char *s)
{
	return first(names_msgs_subdomain, s);
}
const char *names_dns1123_label(const char *s)
{
	return first(names_msgs_label, s);
}
const char *names_dns1035_label(const char *s)
{
	return first(names_msgs_1035, s);
}
const char *names_qualified_name(const char *s)
{
	return first(names_msgs_qname, s);
}
const char *names_label_value(const char *s)
{
	return first(names_msgs_label_value, s);
}
const char *names_path_segment(const char *s)
{
	return first(names_msgs_path_segment, s);
}
const char *names_config_key(const char *s)
{
	return first(names_msgs_config_key, s);
}
