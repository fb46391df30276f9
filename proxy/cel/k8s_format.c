/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes' CEL format library (kube 1.33): format.named(name) and
 * format.<name>() give a kubernetes.NamedFormat; <format>.validate(s) is
 * optional.none() when s is valid, else optional.of(kube's messages).
 *
 * The name checks give apimachinery's messages word for word
 * (IsDNS1123Label, IsDNS1123Subdomain, IsDNS1035Label, IsQualifiedName,
 * IsValidLabelValue; the *Prefix forms mask a trailing '-' as
 * NameIsDNSLabel(s, true) does); uri is Go's url.ParseRequestURI; uuid,
 * byte, date and datetime are kube-openapi's strfmt checks.
 */
#include "proxy/cel/k8s_impl.h"
#include "lib/util.h"

#define RX_LABEL     "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define RX_SUBDOMAIN RX_LABEL "(\\." RX_LABEL ")*"
#define RX_QNAME     "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define MSG_LABEL                                                                                \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', " \
	"and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', " \
	"regex used for validation is '" RX_LABEL "')"
#define MSG_SUBDOMAIN                                                                             \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' " \
	"or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "     \
	"regex used for validation is '" RX_SUBDOMAIN "')"
#define MSG_1035                                                                                  \
	"a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with " \
	"an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "   \
	"'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
#define MSG_QNAME                                                                                 \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "  \
	"an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for " \
	"validation is '" RX_QNAME "')"
#define MSG_LABEL_VALUE                                                                          \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' " \
	"or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "    \
	"'my_value',  or '12345', regex used for validation is '(" RX_QNAME ")?')"

/* Up to this many messages per check (kube's checks give at most 3). */
#define MAXMSG 4

typedef size_t (*check_fn)(cel_ctx_t *c, struct cel_str s, const char **m);

struct kformat {
	const char *name; /* kube's Format.Name (equality) */
	check_fn check;
};

/* ---- name syntax ---- */

static bool lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

static bool alnum(char ch)
{
	return lower_alnum(ch) || (ch >= 'A' && ch <= 'Z');
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

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool rx_qname(const char *s, size_t n)
{
	if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

static size_t is_label(cel_ctx_t *c, struct cel_str s, const char **m)
{
	size_t k = 0;
	(void)c;
	if (s.len > 63)
		m[k++] = "must be no more than 63 characters";
	if (!kb_dns_label_n(s.p, s.len))
		m[k++] = rx_subdomain(s.p, s.len) ? "must not contain dots" : MSG_LABEL;
	return k;
}

static size_t is_subdomain(cel_ctx_t *c, struct cel_str s, const char **m)
{
	size_t k = 0;
	(void)c;
	if (s.len > 253)
		m[k++] = "must be no more than 253 characters";
	if (!rx_subdomain(s.p, s.len))
		m[k++] = MSG_SUBDOMAIN;
	return k;
}

static size_t is_1035(cel_ctx_t *c, struct cel_str s, const char **m)
{
	size_t k = 0;
	(void)c;
	if (s.len > 63)
		m[k++] = "must be no more than 63 characters";
	if (!kb_dns_label_n(s.p, s.len) || !(s.p[0] >= 'a' && s.p[0] <= 'z'))
		m[k++] = MSG_1035;
	return k;
}

static size_t is_qualified_name(cel_ctx_t *c, struct cel_str s, const char **m)
{
	const char *slash = memchr(s.p, '/', s.len);
	struct cel_str name = s;
	size_t k = 0;
	if (slash && memchr(slash + 1, '/', s.len - (size_t)(slash - s.p) - 1)) {
		m[k++] =
		    "a qualified name " MSG_QNAME " with an optional DNS subdomain prefix and '/' "
		    "(e.g. 'example.com/MyName')";
		return k;
	}
	if (slash) {
		struct cel_str prefix = {s.p, (size_t)(slash - s.p)};
		const char *pm[MAXMSG];
		size_t np = prefix.len ? is_subdomain(c, prefix, pm) : 0;
		if (prefix.len == 0)
			m[k++] = "prefix part must be non-empty";
		for (size_t i = 0; i < np; i++)
			m[k++] = cel_errorf(c, "prefix part %s", pm[i]).s.p;
		name = (struct cel_str){slash + 1, s.len - prefix.len - 1};
	}
	if (name.len == 0)
		m[k++] = "name part must be non-empty";
	else if (name.len > 63)
		m[k++] = "name part must be no more than 63 characters";
	if (!rx_qname(name.p, name.len))
		m[k++] = "name part " MSG_QNAME;
	return k;
}

static size_t is_label_value(cel_ctx_t *c, struct cel_str s, const char **m)
{
	size_t k = 0;
	(void)c;
	if (s.len > 63)
		m[k++] = "must be no more than 63 characters";
	if (s.len > 0 && !rx_qname(s.p, s.len))
		m[k++] = MSG_LABEL_VALUE;
	return k;
}

/* apimachinery's maskTrailingDash: "abc-" is checked as "aba". */
static struct cel_str mask_trailing_dash(cel_ctx_t *c, struct cel_str s)
{
	if (s.len < 2 || s.p[s.len - 1] != '-')
		return s;
	char *r = cel_strndup(c, s.p, s.len - 1);
	r[s.len - 2] = 'a';
	return (struct cel_str){r, s.len - 1};
}

static size_t is_label_prefix(cel_ctx_t *c, struct cel_str s, const char **m)
{
	return is_label(c, mask_trailing_dash(c, s), m);
}

static size_t is_subdomain_prefix(cel_ctx_t *c, struct cel_str s, const char **m)
{
	return is_subdomain(c, mask_trailing_dash(c, s), m);
}

static size_t is_1035_prefix(cel_ctx_t *c, struct cel_str s, const char **m)
{
	return is_1035(c, mask_trailing_dash(c, s), m);
}

/* ---- strfmt ---- */

static size_t is_uri(cel_ctx_t *c, struct cel_str s, const char **m)
{
	const char *err = k8s_request_uri_error(c, s.p, s.len);
	if (!err)
		return 0;
	m[0] = err;
	return 1;
}

static bool hex(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* (?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$ */
static bool rx_uuid(struct cel_str s)
{
	static const int groups[] = {8, 4, 4, 4, 12};
	size_t i = 0;
	for (int g = 0; g < 5; g++) {
		if (g > 0 && i < s.len && s.p[i] == '-')
			i++;
		for (int k = 0; k < groups[g]; k++, i++)
			if (i >= s.len || !hex(s.p[i]))
				return false;
	}
	return i == s.len;
}

static size_t is_uuid(cel_ctx_t *c, struct cel_str s, const char **m)
{
	(void)c;
	if (rx_uuid(s))
		return 0;
	m[0] = "does not match the UUID format";
	return 1;
}

static bool b64(char ch)
{
	return alnum(ch) || ch == '+' || ch == '/';
}

/* govalidator's Base64 pattern: groups of 4, the last maybe "xx==" or "xxx=". */
static bool rx_base64(struct cel_str s)
{
	if (s.len == 0 || s.len % 4)
		return false;
	for (size_t i = 0; i < s.len - 4; i++)
		if (!b64(s.p[i]))
			return false;
	const char *t = s.p + s.len - 4;
	if (!b64(t[0]) || !b64(t[1]))
		return false;
	if (t[2] == '=' && t[3] == '=')
		return true;
	return b64(t[2]) && (t[3] == '=' || b64(t[3]));
}

static size_t is_byte(cel_ctx_t *c, struct cel_str s, const char **m)
{
	(void)c;
	if (rx_base64(s))
		return 0;
	m[0] = "invalid base64";
	return 1;
}

static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + s[i] - '0';
	}
	return v;
}

/* Go's time.Parse("2006-01-02", s) succeeding. */
static bool is_full_date(struct cel_str s)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (s.len != 10 || s.p[4] != '-' || s.p[7] != '-')
		return false;
	int y = digits(s.p, 4), mo = digits(s.p + 5, 2), d = digits(s.p + 8, 2);
	if (y < 0 || mo < 1 || mo > 12 || d < 1)
		return false;
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return d <= mdays[mo - 1] + (mo == 2 && leap);
}

static size_t is_date(cel_ctx_t *c, struct cel_str s, const char **m)
{
	(void)c;
	if (is_full_date(s))
		return 0;
	m[0] = "invalid date";
	return 1;
}

/* z|([+-]\d\d:\d\d) */
static bool rx_zone(const char *t, size_t n)
{
	if (n == 1)
		return t[0] == 'z';
	return n == 6 && (t[0] == '+' || t[0] == '-') && digits(t + 1, 2) >= 0 && t[3] == ':' &&
	       digits(t + 4, 2) >= 0;
}

/* ^(\d\d):(\d\d):(\d\d)(.[0-9]+)?(z|([+-]\d\d:\d\d))$ on lower-cased t,
 * with hours <= 23, minutes and seconds <= 59. */
static bool rx_time(const char *t, size_t n)
{
	if (n < 9 || t[2] != ':' || t[5] != ':')
		return false;
	int h = digits(t, 2), mi = digits(t + 3, 2), se = digits(t + 6, 2);
	if (h < 0 || mi < 0 || se < 0 || h > 23 || mi > 59 || se > 59)
		return false;
	if (rx_zone(t + 8, n - 8))
		return true;
	if (t[8] == '\n')
		return false;
	size_t j = 9; /* '.' is one character: a whole UTF-8 sequence */
	while ((unsigned char)t[8] >= 0xc0 && j < n && ((unsigned char)t[j] & 0xc0) == 0x80)
		j++;
	size_t f = j;
	while (j < n && t[j] >= '0' && t[j] <= '9')
		j++;
	return j > f && rx_zone(t + j, n - j);
}

/* strfmt's IsDateTime: date 't' time, case-insensitive. */
static bool is_date_time(cel_ctx_t *c, struct cel_str s)
{
	if (s.len < 4)
		return false;
	char *l = cel_strndup(c, s.p, s.len);
	for (size_t i = 0; i < s.len; i++)
		if (l[i] >= 'A' && l[i] <= 'Z')
			l[i] = (char)(l[i] - 'A' + 'a');
	char *t1 = memchr(l, 't', s.len);
	if (!t1 || !is_full_date((struct cel_str){l, (size_t)(t1 - l)}))
		return false;
	size_t rest = s.len - (size_t)(t1 - l) - 1;
	char *t2 = memchr(t1 + 1, 't', rest);
	return rx_time(t1 + 1, t2 ? (size_t)(t2 - t1 - 1) : rest);
}

static size_t is_datetime(cel_ctx_t *c, struct cel_str s, const char **m)
{
	if (is_date_time(c, s))
		return 0;
	m[0] = "invalid datetime";
	return 1;
}

/* ---- the values ---- */

static bool format_equal(const void *a, const void *b)
{
	return strcmp(((const struct kformat *)a)->name, ((const struct kformat *)b)->name) == 0;
}

const struct cel_opaque_type k8s_format_type = {"kubernetes.NamedFormat", format_equal};

static const struct {
	const char *key; /* format.named's name */
	struct kformat f;
} formats[] = {
    {"dns1123Label", {"DNS1123Label", is_label}},
    {"dns1123Subdomain", {"DNS1123Subdomain", is_subdomain}},
    {"dns1035Label", {"DNS1035Label", is_1035}},
    {"qualifiedName", {"QualifiedName", is_qualified_name}},
    {"dns1123LabelPrefix", {"DNS1123LabelPrefix", is_label_prefix}},
    {"dns1123SubdomainPrefix", {"DNS1123SubdomainPrefix", is_subdomain_prefix}},
    {"dns1035LabelPrefix", {"DNS1035LabelPrefix", is_1035_prefix}},
    {"labelValue", {"LabelValue", is_label_value}},
    {"uri", {"URI", is_uri}},
    {"uuid", {"uuid", is_uuid}},
    {"byte", {"byte", is_byte}},
    {"date", {"date", is_date}},
    {"datetime", {"datetime", is_datetime}},
};

static cel_value_t format_value(size_t i)
{
	return cel_opaque(&k8s_format_type, &formats[i].f);
}

K8S_FN(k8s_format_named)
{
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "format.named");
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strlen(formats[i].key) == args[0].s.len &&
		    memcmp(formats[i].key, args[0].s.p, args[0].s.len) == 0) {
			cel_value_t v = format_value(i);
			return cel_optional(c, &v);
		}
	}
	return cel_optional(c, NULL);
}

K8S_FN(k8s_format_validate)
{
	if (nargs != 2 || !k8s_is(args[0], &k8s_format_type) || args[1].kind != CEL_STRING)
		return cel_no_overload(c, "validate");
	const struct kformat *f = args[0].o.data;
	const char *m[MAXMSG];
	k8s_cost_len(c, args[1].s.len);
	size_t n = f->check(c, args[1].s, m);
	if (n == 0)
		return cel_optional(c, NULL);
	cel_value_t items[MAXMSG];
	for (size_t i = 0; i < n; i++)
		items[i] = cel_string(m[i]);
	cel_value_t list = cel_list_new(c, items, n);
	return cel_optional(c, &list);
}

#define FORMAT_FN(fn, i)                \
	K8S_FN(fn)                      \
	{                               \
		(void)c;                \
		(void)args;             \
		(void)nargs;            \
		return format_value(i); \
	}

FORMAT_FN(k8s_format_dns1123_label, 0)
FORMAT_FN(k8s_format_dns1123_subdomain, 1)
FORMAT_FN(k8s_format_dns1035_label, 2)
FORMAT_FN(k8s_format_qualified_name, 3)
FORMAT_FN(k8s_format_dns1123_label_prefix, 4)
FORMAT_FN(k8s_format_dns1123_subdomain_prefix, 5)
FORMAT_FN(k8s_format_dns1035_label_prefix, 6)
FORMAT_FN(k8s_format_label_value, 7)
FORMAT_FN(k8s_format_uri, 8)
FORMAT_FN(k8s_format_uuid, 9)
FORMAT_FN(k8s_format_byte, 10)
FORMAT_FN(k8s_format_date, 11)
FORMAT_FN(k8s_format_datetime, 12)
