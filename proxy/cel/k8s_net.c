/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kubernetes' CEL URL, IP and CIDR libraries (kube 1.33).
 *
 * url() accepts what Go's url.ParseRequestURI accepts (an absolute URI or
 * an absolute path) and then reads the parts as url.Parse splits them
 * (the fragment cut off), as kube does; the getters give what Go's
 * url.URL gives (Host and Hostname unescaped, EscapedPath keeping the
 * original escaping when it is valid). Messages are Go's ("parse \"x\":
 * invalid URI for request").
 *
 * ip() and cidr() parse as Go's net/netip (ParseAddr, ParsePrefix), with
 * kube's refusals on top: zones, IPv4-mapped IPv6 addresses; netip itself
 * refuses IPv4 octets with leading zeros. Values print in netip's
 * canonical form (RFC 5952 for IPv6).
 */
#include <stdio.h>

#include "proxy/cel/k8s_impl.h"
#include "lib/util.h"

/* ---- Go's net/url ---- */

enum url_mode { M_PATH, M_HOST, M_ZONE, M_USERPASS, M_QUERY, M_FRAGMENT };

static bool is_alnum(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static bool reserved_escape(unsigned char ch, enum url_mode m)
{
	switch (m) {
	case M_PATH: return ch == '?';
	case M_USERPASS: return ch == '@' || ch == '/' || ch == '?' || ch == ':';
	case M_QUERY: return true;
	case M_FRAGMENT: return false;
	default: return true;
	}
}

/* Go's shouldEscape. */
static bool should_escape(unsigned char ch, enum url_mode m)
{
	if (is_alnum(ch))
		return false;
	if ((m == M_HOST || m == M_ZONE) && ch && strchr("!$&'()*+,;=:[]<>\"", ch))
		return false;
	if (ch == '-' || ch == '_' || ch == '.' || ch == '~')
		return false;
	if (ch && strchr("$&+,/:;=?@", ch))
		return reserved_escape(ch, m);
	if (m == M_FRAGMENT && ch && strchr("!()*", ch))
		return false;
	return true;
}

/* Whether the escape at s[i] (a '%') is refused in mode m. */
static bool bad_escape(struct cel_str s, size_t i, enum url_mode m)
{
	if (i + 2 >= s.len || kb_hexval(s.p[i + 1]) < 0 || kb_hexval(s.p[i + 2]) < 0)
		return true;
	bool pct25 = s.p[i + 1] == '2' && s.p[i + 2] == '5';
	if (m == M_HOST && kb_hexval(s.p[i + 1]) < 8 && !pct25)
		return true;
	unsigned char v = (unsigned char)(kb_hexval(s.p[i + 1]) << 4 | kb_hexval(s.p[i + 2]));
	return m == M_ZONE && !pct25 && v != ' ' && should_escape(v, M_HOST);
}

/* Go's url.unescape: NULL and *out (arena), or its error. */
static const char *url_unescape(cel_ctx_t *c, struct cel_str s, enum url_mode m,
				struct cel_str *out)
{
	for (size_t i = 0; i < s.len; i++) {
		unsigned char ch = (unsigned char)s.p[i];
		if (ch == '%' && bad_escape(s, i, m)) {
			size_t n = s.len - i < 3 ? s.len - i : 3;
			return cel_errorf(c, "invalid URL escape %s", k8s_quote(c, s.p + i, n)).s.p;
		}
		if (ch == '%')
			i += 2;
		else if ((m == M_HOST || m == M_ZONE) && ch < 0x80 && should_escape(ch, m))
			return cel_errorf(c, "invalid character %s in host name",
					  k8s_quote(c, s.p + i, 1))
			    .s.p;
	}
	char *r = cel_alloc(c, s.len + 1);
	size_t k = 0;
	for (size_t i = 0; i < s.len; i++) {
		if (s.p[i] == '%') {
			r[k++] = (char)(kb_hexval(s.p[i + 1]) << 4 | kb_hexval(s.p[i + 2]));
			i += 2;
		} else {
			r[k++] = m == M_QUERY && s.p[i] == '+' ? ' ' : s.p[i];
		}
	}
	*out = (struct cel_str){r, k};
	return NULL;
}

/* Go's url.escape for a path. */
static struct cel_str url_escape_path(cel_ctx_t *c, struct cel_str s)
{
	char *r = cel_alloc(c, s.len * 3 + 1), *o = r;
	for (size_t i = 0; i < s.len; i++) {
		unsigned char ch = (unsigned char)s.p[i];
		if (should_escape(ch, M_PATH))
			o += sprintf(o, "%%%02X", ch);
		else
			*o++ = (char)ch;
	}
	return (struct cel_str){r, (size_t)(o - r)};
}

/* Go's validEncoded(s, encodePath). */
static bool valid_encoded_path(struct cel_str s)
{
	for (size_t i = 0; i < s.len; i++) {
		unsigned char ch = (unsigned char)s.p[i];
		if (ch && strchr("!$&'()*+,;=:@[]%", ch))
			continue;
		if (should_escape(ch, M_PATH))
			return false;
	}
	return true;
}

struct kurl {
	struct cel_str scheme; /* lower case */
	struct cel_str host;   /* unescaped, with the port */
	struct cel_str path;   /* unescaped */
	struct cel_str raw_path, raw_query;
	struct cel_str opaque;   /* scheme:opaque */
	struct cel_str user;     /* userinfo as written (has_user) */
	struct cel_str fragment; /* unescaped */
	struct cel_str esc_path; /* EscapedPath() */
	bool has_user, force_query;
};

static bool valid_optional_port(struct cel_str p)
{
	if (p.len == 0)
		return true;
	if (p.p[0] != ':')
		return false;
	for (size_t i = 1; i < p.len; i++)
		if (p.p[i] < '0' || p.p[i] > '9')
			return false;
	return true;
}

static const char *last(struct cel_str s, char ch)
{
	for (size_t i = s.len; i-- > 0;)
		if (s.p[i] == ch)
			return s.p + i;
	return NULL;
}

/* s[from..to) of a string s (both inside it). */
static struct cel_str sub(struct cel_str s, const char *from, const char *to)
{
	(void)s;
	return (struct cel_str){from, (size_t)(to - from)};
}

static const char *bad_port(cel_ctx_t *c, struct cel_str p)
{
	return cel_errorf(c, "invalid port %s after host", k8s_quote(c, p.p, p.len)).s.p;
}

/* The zone form [addr%25zone]:port: each part unescaped in its own mode. */
static const char *url_host_zone(cel_ctx_t *c, struct cel_str h, const char *zone,
				 const char *close, struct cel_str *out)
{
	struct cel_str a, b, d;
	const char *err;
	const char *end = h.p + h.len;
	if ((err = url_unescape(c, sub(h, h.p, zone), M_HOST, &a)) ||
	    (err = url_unescape(c, sub(h, zone, close), M_ZONE, &b)) ||
	    (err = url_unescape(c, sub(h, close, end), M_HOST, &d)))
		return err;
	char *r = cel_alloc(c, a.len + b.len + d.len + 1);
	memcpy(r, a.p, a.len);
	memcpy(r + a.len, b.p, b.len);
	memcpy(r + a.len + b.len, d.p, d.len);
	*out = (struct cel_str){r, a.len + b.len + d.len};
	return NULL;
}

/* Go's parseHost. */
static const char *url_host(cel_ctx_t *c, struct cel_str h, struct cel_str *out)
{
	const char *end = h.p + h.len;
	if (h.len > 0 && h.p[0] == '[') {
		const char *close = last(h, ']');
		if (!close)
			return "missing ']' in host";
		struct cel_str port = sub(h, close + 1, end);
		if (!valid_optional_port(port))
			return bad_port(c, port);
		for (const char *p = h.p; p + 2 < close; p++)
			if (p[0] == '%' && p[1] == '2' && p[2] == '5')
				return url_host_zone(c, h, p, close, out);
	} else {
		const char *colon = last(h, ':');
		if (colon && !valid_optional_port(sub(h, colon, end)))
			return bad_port(c, sub(h, colon, end));
	}
	return url_unescape(c, h, M_HOST, out);
}

static bool valid_userinfo(struct cel_str s)
{
	for (size_t i = 0; i < s.len; i++) {
		unsigned char ch = (unsigned char)s.p[i];
		if (!is_alnum(ch) && !(ch && strchr("-._:~!$&'()*+,;=%@", ch)))
			return false;
	}
	return true;
}

/* Go's parseAuthority: the host into *host. */
static const char *url_authority(cel_ctx_t *c, struct cel_str a, struct kurl *u)
{
	const char *at = last(a, '@'), *end = a.p + a.len;
	const char *err = url_host(c, at ? sub(a, at + 1, end) : a, &u->host);
	if (err || !at)
		return err;
	struct cel_str ui = sub(a, a.p, at), user, pass = {0}, tmp;
	u->user = ui;
	u->has_user = true;
	if (!valid_userinfo(ui))
		return "net/url: invalid userinfo";
	const char *colon = memchr(ui.p, ':', ui.len);
	user = colon ? sub(ui, ui.p, colon) : ui;
	if (colon)
		pass = sub(ui, colon + 1, at);
	if ((err = url_unescape(c, user, M_USERPASS, &tmp)))
		return err;
	return colon ? url_unescape(c, pass, M_USERPASS, &tmp) : NULL;
}

/* Go's getScheme: the scheme (maybe empty) and the rest. */
static const char *url_scheme(struct cel_str s, struct cel_str *scheme, struct cel_str *rest)
{
	*scheme = (struct cel_str){s.p, 0};
	*rest = s;
	for (size_t i = 0; i < s.len; i++) {
		char ch = s.p[i];
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))
			continue;
		if ((ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == '.') {
			if (i == 0)
				return NULL;
			continue;
		}
		if (ch == ':') {
			if (i == 0)
				return "missing protocol scheme";
			*scheme = (struct cel_str){s.p, i};
			*rest = (struct cel_str){s.p + i + 1, s.len - i - 1};
		}
		return NULL;
	}
	return NULL;
}

static bool has_prefix(struct cel_str s, const char *p)
{
	size_t n = strlen(p);
	return s.len >= n && memcmp(s.p, p, n) == 0;
}

/* Splits off the query: Go's ForceQuery rule, else the first '?'. */
static void url_query(struct cel_str *rest, struct kurl *u)
{
	size_t q = 0;
	const char *first = NULL;
	for (size_t i = 0; i < rest->len; i++)
		if (rest->p[i] == '?') {
			q++;
			first = first ? first : rest->p + i;
		}
	if (q == 1 && rest->p[rest->len - 1] == '?') {
		rest->len--;
		u->force_query = true;
	} else if (first) {
		u->raw_query =
		    (struct cel_str){first + 1, (size_t)(rest->p + rest->len - first - 1)};
		rest->len = (size_t)(first - rest->p);
	}
}

/* Go's url.parse: NULL and *u, or the error (without "parse ..."). */
static const char *url_parse(cel_ctx_t *c, struct cel_str s, bool via_request, struct kurl *u)
{
	struct cel_str rest;
	const char *err;
	*u = (struct kurl){0};
	for (size_t i = 0; i < s.len; i++)
		if ((unsigned char)s.p[i] < 0x20 || s.p[i] == 0x7f)
			return "net/url: invalid control character in URL";
	if (s.len == 0 && via_request)
		return "empty url";
	if (s.len == 1 && s.p[0] == '*') {
		u->path = u->raw_path = s;
		return NULL;
	}
	if ((err = url_scheme(s, &u->scheme, &rest)))
		return err;
	char *lower = cel_strndup(c, u->scheme.p, u->scheme.len);
	for (size_t i = 0; i < u->scheme.len; i++)
		if (lower[i] >= 'A' && lower[i] <= 'Z')
			lower[i] = (char)(lower[i] - 'A' + 'a');
	u->scheme.p = lower;
	url_query(&rest, u);
	if (!has_prefix(rest, "/")) {
		if (u->scheme.len) {
			u->opaque = rest;
			return NULL;
		}
		if (via_request)
			return "invalid URI for request";
		const char *slash = memchr(rest.p, '/', rest.len);
		if (memchr(rest.p, ':', slash ? (size_t)(slash - rest.p) : rest.len))
			return "first path segment in URL cannot contain colon";
	}
	if ((u->scheme.len || (!via_request && !has_prefix(rest, "///"))) &&
	    has_prefix(rest, "//")) {
		struct cel_str auth = {rest.p + 2, rest.len - 2};
		const char *slash = memchr(auth.p, '/', auth.len);
		rest = slash ? sub(auth, slash, auth.p + auth.len) : (struct cel_str){"", 0};
		if (slash)
			auth.len = (size_t)(slash - auth.p);
		if ((err = url_authority(c, auth, u)))
			return err;
	}
	u->raw_path = rest;
	return url_unescape(c, rest, M_PATH, &u->path);
}

static const char *url_error(cel_ctx_t *c, struct cel_str s, const char *err)
{
	return cel_errorf(c, "parse %s: %s", k8s_quote(c, s.p, s.len), err).s.p;
}

const char *k8s_request_uri_error(cel_ctx_t *c, const char *s, size_t n)
{
	struct kurl u;
	struct cel_str str = {s, n};
	const char *err = url_parse(c, str, true, &u);
	return err ? url_error(c, str, err) : NULL;
}

/* Go's url.Parse: the fragment cut off first. */
static const char *url_parse_full(cel_ctx_t *c, struct cel_str s, struct kurl *u)
{
	const char *hash = memchr(s.p, '#', s.len);
	struct cel_str head = hash ? sub(s, s.p, hash) : s, frag;
	const char *err = url_parse(c, head, false, u);
	if (err)
		return url_error(c, head, err);
	if (hash && (err = url_unescape(c, sub(s, hash + 1, s.p + s.len), M_FRAGMENT, &frag)))
		return url_error(c, s, err);
	if (hash)
		u->fragment = frag;
	u->esc_path = valid_encoded_path(u->raw_path) ? u->raw_path : url_escape_path(c, u->path);
	return NULL;
}

static bool str_eq(struct cel_str a, struct cel_str b)
{
	return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

/* kube compares URL.String(): the same parts, written the same way. */
static bool url_equal(const void *a, const void *b)
{
	const struct kurl *x = a, *y = b;
	return str_eq(x->scheme, y->scheme) && str_eq(x->opaque, y->opaque) &&
	       x->has_user == y->has_user && str_eq(x->user, y->user) && str_eq(x->host, y->host) &&
	       str_eq(x->esc_path, y->esc_path) && x->force_query == y->force_query &&
	       str_eq(x->raw_query, y->raw_query) && str_eq(x->fragment, y->fragment);
}

const struct cel_opaque_type k8s_url_type = {"kubernetes.URL", url_equal};

K8S_FN(k8s_url)
{
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "url");
	k8s_cost_len(c, args[0].s.len);
	const char *err = k8s_request_uri_error(c, args[0].s.p, args[0].s.len);
	struct kurl *u = cel_alloc(c, sizeof(*u));
	if (!err)
		err = url_parse_full(c, args[0].s, u);
	if (err)
		return cel_errorf(c, "URL parse error during conversion from string: %s", err);
	return cel_opaque(&k8s_url_type, u);
}

K8S_FN(k8s_is_url)
{
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "isURL");
	k8s_cost_len(c, args[0].s.len);
	return cel_bool(k8s_request_uri_error(c, args[0].s.p, args[0].s.len) == NULL);
}

/* A string value of s, never with a NULL pointer. */
static cel_value_t str_value(struct cel_str s)
{
	return cel_string_n(s.p ? s.p : "", s.len);
}

static const struct kurl *url_arg(const cel_value_t *args, size_t nargs)
{
	return nargs == 1 && k8s_is(args[0], &k8s_url_type) ? args[0].o.data : NULL;
}

/* Go's splitHostPort: host without brackets, and the port. */
static void url_split_host(struct cel_str h, struct cel_str *host, struct cel_str *port)
{
	*host = h;
	*port = (struct cel_str){"", 0};
	if (!h.p)
		return; /* no host at all */
	const char *colon = last(h, ':'), *end = h.p + h.len;
	if (colon && valid_optional_port(sub(h, colon, end))) {
		*host = sub(h, h.p, colon);
		*port = sub(h, colon + 1, end);
	}
	if (host->len >= 2 && host->p[0] == '[' && host->p[host->len - 1] == ']')
		*host = (struct cel_str){host->p + 1, host->len - 2};
}

K8S_FN(k8s_url_scheme)
{
	const struct kurl *u = url_arg(args, nargs);
	return u ? str_value(u->scheme) : cel_no_overload(c, "getScheme");
}

K8S_FN(k8s_url_host)
{
	const struct kurl *u = url_arg(args, nargs);
	return u ? str_value(u->host) : cel_no_overload(c, "getHost");
}

K8S_FN(k8s_url_hostname)
{
	const struct kurl *u = url_arg(args, nargs);
	struct cel_str h, p;
	if (!u)
		return cel_no_overload(c, "getHostname");
	url_split_host(u->host, &h, &p);
	return str_value(h);
}

K8S_FN(k8s_url_port)
{
	const struct kurl *u = url_arg(args, nargs);
	struct cel_str h, p;
	if (!u)
		return cel_no_overload(c, "getPort");
	url_split_host(u->host, &h, &p);
	return str_value(p);
}

K8S_FN(k8s_url_escaped_path)
{
	const struct kurl *u = url_arg(args, nargs);
	if (!u)
		return cel_no_overload(c, "getEscapedPath");
	return str_value(u->esc_path);
}

/* The map of key -> list of values from n (key, value) pairs, keys in
 * their first order. Quadratic in distinct keys: charged to the cost. */
static cel_value_t query_map(cel_ctx_t *c, const struct cel_str *ks, const struct cel_str *vs,
			     size_t n)
{
	cel_value_t *keys = cel_alloc(c, (n + 1) * sizeof(*keys));
	cel_value_t *vals = cel_alloc(c, (n + 1) * sizeof(*vals));
	cel_value_t *items = cel_alloc(c, (n + 1) * sizeof(*items));
	size_t nk = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0, m = 0;
		while (j < nk && !str_eq(ks[i], keys[j].s))
			j++;
		cel_cost(c, 1 + j);
		if (j < nk)
			continue;
		keys[nk] = cel_string_n(ks[i].p, ks[i].len);
		for (size_t k = i; k < n; k++)
			if (str_eq(ks[k], ks[i]))
				items[m++] = cel_string_n(vs[k].p, vs[k].len);
		vals[nk++] = cel_list_new(c, items, m);
	}
	return cel_map_new(c, keys, vals, nk);
}

/* Go's url.ParseQuery, errors skipped as URL.Query() does. */
K8S_FN(k8s_url_query)
{
	const struct kurl *u = url_arg(args, nargs);
	if (!u)
		return cel_no_overload(c, "getQuery");
	struct cel_str q = u->raw_query;
	size_t max = 1, n = 0;
	for (size_t i = 0; i < q.len; i++)
		max += q.p[i] == '&';
	k8s_cost_len(c, q.len);
	struct cel_str *ks = cel_alloc(c, max * sizeof(*ks)), *vs = cel_alloc(c, max * sizeof(*vs));
	for (size_t i = 0; i < q.len;) {
		const char *amp = memchr(q.p + i, '&', q.len - i);
		size_t j = amp ? (size_t)(amp - q.p) : q.len;
		struct cel_str part = {q.p + i, j - i};
		i = j + 1;
		if (part.len == 0 || memchr(part.p, ';', part.len))
			continue;
		const char *eq = memchr(part.p, '=', part.len);
		struct cel_str k = eq ? sub(part, part.p, eq) : part, v = {"", 0};
		if (eq)
			v = sub(part, eq + 1, part.p + part.len);
		if (url_unescape(c, k, M_QUERY, &ks[n]) || url_unescape(c, v, M_QUERY, &vs[n]))
			continue;
		n++;
	}
	return query_map(c, ks, vs, n);
}

/* ---- Go's net/netip ---- */

struct kip {
	bool v6;
	unsigned char b[16]; /* IPv4 in b[0..3] */
};

struct kcidr {
	struct kip ip;
	int bits;
};

/* An error of ParseAddr(in): its message, with " (at ...)" when at. */
static const char *addr_err(cel_ctx_t *c, struct cel_str in, const char *msg, const char *at,
			    size_t atn)
{
	const char *q = k8s_quote(c, in.p, in.len);
	if (!at || atn == 0) /* Go omits an empty "at" */
		return cel_errorf(c, "ParseAddr(%s): %s", q, msg).s.p;
	return cel_errorf(c, "ParseAddr(%s): %s (at %s)", q, msg, k8s_quote(c, at, atn)).s.p;
}

/* netip's parseIPv4Fields over in[off..end) into f[4]. */
static const char *ipv4_fields(cel_ctx_t *c, struct cel_str in, size_t off, size_t end,
			       unsigned char *f)
{
	int val = 0, pos = 0, dig = 0;
	const char *s = in.p + off;
	size_t n = end - off;
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9') {
			if (dig == 1 && val == 0)
				return addr_err(c, in, "IPv4 field has octet with leading zero",
						NULL, 0);
			val = val * 10 + s[i] - '0';
			dig++;
			if (val > 255)
				return addr_err(c, in, "IPv4 field has value >255", NULL, 0);
		} else if (s[i] == '.') {
			if (i == 0 || i == n - 1 || s[i - 1] == '.')
				return addr_err(c, in, "IPv4 field must have at least one digit",
						s + i, n - i);
			if (pos == 3)
				return addr_err(c, in, "IPv4 address too long", NULL, 0);
			f[pos++] = (unsigned char)val;
			val = dig = 0;
		} else {
			return addr_err(c, in, "unexpected character", s + i, n - i);
		}
	}
	if (pos < 3)
		return addr_err(c, in, "IPv4 address too short", NULL, 0);
	f[3] = (unsigned char)val;
	return NULL;
}

/* One hex group at s (n bytes): its value, and *used how many digits. */
static const char *ipv6_group(cel_ctx_t *c, struct cel_str in, const char *s, size_t n,
			      unsigned *acc, size_t *used)
{
	size_t off = 0;
	*acc = 0;
	for (; off < n; off++) {
		int h = kb_hexval(s[off]);
		if (h < 0)
			break;
		*acc = (*acc << 4) + (unsigned)h;
		if (off > 3)
			return addr_err(c, in, "each group must have 4 or less digits", s, n);
		if (*acc > 0xffff)
			return addr_err(c, in, "IPv6 field has value >=2^16", s, n);
	}
	if (off == 0)
		return addr_err(c, in, "each colon-separated field must have at least one digit", s,
				n);
	*used = off;
	return NULL;
}

struct v6scan {
	struct cel_str in;
	const char *s; /* what is left */
	size_t n;
	size_t zone; /* bytes of "%zone" at the end of in */
	int i, ellipsis;
	unsigned char *ip;
};

/* The embedded IPv4 at the end of an IPv6 address. */
static const char *ipv6_tail_v4(cel_ctx_t *c, struct v6scan *v)
{
	if (v->ellipsis < 0 && v->i != 12)
		return addr_err(
		    c, v->in,
		    "embedded IPv4 address must replace the final 2 fields of the address", v->s,
		    v->n);
	if (v->i + 4 > 16)
		return addr_err(
		    c, v->in,
		    "too many hex fields to fit an embedded IPv4 at the end of the address", v->s,
		    v->n);
	size_t end = v->in.len - v->zone;
	const char *err = ipv4_fields(c, v->in, end - v->n, end, v->ip + v->i);
	v->n = 0;
	v->i += 4;
	return err;
}

/* The loop of netip's parseIPv6 over the groups. */
static const char *ipv6_groups(cel_ctx_t *c, struct v6scan *v)
{
	while (v->i < 16) {
		unsigned acc = 0;
		size_t off = 0;
		const char *err = ipv6_group(c, v->in, v->s, v->n, &acc, &off);
		if (err)
			return err;
		if (off < v->n && v->s[off] == '.')
			return ipv6_tail_v4(c, v);
		v->ip[v->i] = (unsigned char)(acc >> 8);
		v->ip[v->i + 1] = (unsigned char)acc;
		v->i += 2;
		v->s += off;
		v->n -= off;
		if (v->n == 0)
			break;
		if (v->s[0] != ':')
			return addr_err(c, v->in, "unexpected character, want colon", v->s, v->n);
		if (v->n == 1)
			return addr_err(c, v->in, "colon must be followed by more characters", v->s,
					v->n);
		v->s++;
		v->n--;
		if (v->s[0] == ':') {
			if (v->ellipsis >= 0)
				return addr_err(c, v->in, "multiple :: in address", v->s, v->n);
			v->ellipsis = v->i;
			v->s++;
			if (--v->n == 0)
				break;
		}
	}
	return NULL;
}

static const char *parse_ipv6(cel_ctx_t *c, struct cel_str in, struct kip *ip, bool *zone)
{
	struct v6scan v = {.in = in, .s = in.p, .n = in.len, .ellipsis = -1, .ip = ip->b};
	const char *pct = memchr(in.p, '%', in.len);
	*ip = (struct kip){.v6 = true};
	if (pct) {
		v.n = (size_t)(pct - in.p);
		v.zone = in.len - v.n;
		if (v.zone == 1)
			return addr_err(c, in, "zone must be a non-empty string", NULL, 0);
		*zone = true;
	}
	if (v.n >= 2 && v.s[0] == ':' && v.s[1] == ':') {
		v.ellipsis = 0;
		v.s += 2;
		v.n -= 2;
		if (v.n == 0)
			return NULL;
	}
	const char *err = ipv6_groups(c, &v);
	if (err)
		return err;
	if (v.n != 0)
		return addr_err(c, in, "trailing garbage after address", v.s, v.n);
	if (v.i < 16) {
		if (v.ellipsis < 0)
			return addr_err(c, in, "address string too short", NULL, 0);
		int gap = 16 - v.i;
		memmove(ip->b + v.ellipsis + gap, ip->b + v.ellipsis, (size_t)(v.i - v.ellipsis));
		memset(ip->b + v.ellipsis, 0, (size_t)gap);
	} else if (v.ellipsis >= 0) {
		return addr_err(c, in, "the :: must expand to at least one field of zeros", v.s,
				v.n);
	}
	return NULL;
}

/* netip.ParseAddr: NULL and *ip (*zone when it had one), or its error. */
static const char *parse_addr(cel_ctx_t *c, struct cel_str s, struct kip *ip, bool *zone)
{
	*zone = false;
	for (size_t i = 0; i < s.len; i++) {
		if (s.p[i] == '.') {
			*ip = (struct kip){0};
			return ipv4_fields(c, s, 0, s.len, ip->b);
		}
		if (s.p[i] == ':')
			return parse_ipv6(c, s, ip, zone);
		if (s.p[i] == '%')
			return addr_err(c, s, "missing IPv6 address", NULL, 0);
	}
	return addr_err(c, s, "unable to parse IP", NULL, 0);
}

static bool is_4in6(const struct kip *ip)
{
	static const unsigned char pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	return ip->v6 && memcmp(ip->b, pfx, 12) == 0;
}

/* kube's parseIPAddr. */
static const char *kube_ip(cel_ctx_t *c, struct cel_str s, struct kip *ip)
{
	bool zone;
	const char *q = k8s_quote(c, s.p, s.len), *err = parse_addr(c, s, ip, &zone);
	if (err)
		return cel_errorf(c, "IP Address %s parse error during conversion from string: %s",
				  q, err)
		    .s.p;
	if (zone)
		return cel_errorf(c, "IP address %s with zone value is not allowed", q).s.p;
	if (is_4in6(ip))
		return cel_errorf(c, "IPv4-mapped IPv6 address %s is not allowed", q).s.p;
	return NULL;
}

/* netip's Addr.String, into buf (64 bytes). */
static size_t ip_string(const struct kip *ip, char *buf)
{
	if (!ip->v6)
		return (size_t)sprintf(buf, "%u.%u.%u.%u", ip->b[0], ip->b[1], ip->b[2], ip->b[3]);
	unsigned g[8];
	int zs = -1, ze = -1;
	for (int i = 0; i < 8; i++)
		g[i] = (unsigned)ip->b[2 * i] << 8 | ip->b[2 * i + 1];
	for (int i = 0; i < 8; i++) {
		int j = i;
		while (j < 8 && g[j] == 0)
			j++;
		if (j - i >= 2 && j - i > ze - zs) {
			zs = i;
			ze = j;
		}
	}
	char *o = buf;
	for (int i = 0; i < 8; i++) {
		if (i == zs) {
			o += sprintf(o, "::");
			i = ze - 1;
			continue;
		}
		if (i > 0 && i != ze)
			*o++ = ':';
		o += sprintf(o, "%x", g[i]);
	}
	*o = '\0';
	return (size_t)(o - buf);
}

static bool ip_eq(const struct kip *a, const struct kip *b)
{
	return a->v6 == b->v6 && memcmp(a->b, b->b, a->v6 ? 16 : 4) == 0;
}

static bool ip_equal(const void *a, const void *b)
{
	return ip_eq(a, b);
}

const struct cel_opaque_type k8s_ip_type = {"net.IP", ip_equal};

static cel_value_t ip_value(cel_ctx_t *c, const struct kip *ip)
{
	struct kip *p = cel_alloc(c, sizeof(*p));
	*p = *ip;
	return cel_opaque(&k8s_ip_type, p);
}

K8S_FN(k8s_ip)
{
	struct kip ip;
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "ip");
	k8s_cost_len(c, args[0].s.len);
	const char *err = kube_ip(c, args[0].s, &ip);
	return err ? cel_errorf(c, "%s", err) : ip_value(c, &ip);
}

K8S_FN(k8s_is_ip)
{
	struct kip ip;
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "isIP");
	k8s_cost_len(c, args[0].s.len);
	return cel_bool(kube_ip(c, args[0].s, &ip) == NULL);
}

K8S_FN(k8s_ip_is_canonical)
{
	struct kip ip;
	char buf[64];
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "ip.isCanonical");
	k8s_cost_len(c, args[0].s.len);
	const char *err = kube_ip(c, args[0].s, &ip);
	if (err)
		return cel_errorf(c, "%s", err);
	size_t n = ip_string(&ip, buf);
	return cel_bool(n == args[0].s.len && memcmp(buf, args[0].s.p, n) == 0);
}

static const struct kip *ip_arg(const cel_value_t *args, size_t nargs)
{
	return nargs == 1 && k8s_is(args[0], &k8s_ip_type) ? args[0].o.data : NULL;
}

K8S_FN(k8s_ip_family)
{
	const struct kip *ip = ip_arg(args, nargs);
	return ip ? cel_int(ip->v6 ? 6 : 4) : cel_no_overload(c, "family");
}

static bool all_zero(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static bool ip_unspecified(const struct kip *ip)
{
	return all_zero(ip->b, ip->v6 ? 16 : 4);
}

static bool ip_loopback(const struct kip *ip)
{
	return ip->v6 ? all_zero(ip->b, 15) && ip->b[15] == 1 : ip->b[0] == 127;
}

static bool ip_multicast(const struct kip *ip)
{
	return ip->v6 ? ip->b[0] == 0xff : (ip->b[0] & 0xf0) == 0xe0;
}

static bool ip_ll_unicast(const struct kip *ip)
{
	if (ip->v6)
		return ip->b[0] == 0xfe && (ip->b[1] & 0xc0) == 0x80;
	return ip->b[0] == 169 && ip->b[1] == 254;
}

static bool ip_ll_multicast(const struct kip *ip)
{
	if (ip->v6)
		return ip->b[0] == 0xff && (ip->b[1] & 0x0f) == 0x02;
	return ip->b[0] == 224 && ip->b[1] == 0 && ip->b[2] == 0;
}

static bool ip_global_unicast(const struct kip *ip)
{
	static const unsigned char bcast[4] = {255, 255, 255, 255};
	if (!ip->v6 && memcmp(ip->b, bcast, 4) == 0)
		return false;
	return !ip_unspecified(ip) && !ip_loopback(ip) && !ip_multicast(ip) && !ip_ll_unicast(ip);
}

static cel_value_t ip_pred(cel_ctx_t *c, const cel_value_t *args, size_t nargs,
			   bool (*pred)(const struct kip *), const char *name)
{
	const struct kip *ip = ip_arg(args, nargs);
	return ip ? cel_bool(pred(ip)) : cel_no_overload(c, name);
}

K8S_FN(k8s_ip_is_unspecified)
{
	return ip_pred(c, args, nargs, ip_unspecified, "isUnspecified");
}

K8S_FN(k8s_ip_is_loopback)
{
	return ip_pred(c, args, nargs, ip_loopback, "isLoopback");
}

K8S_FN(k8s_ip_is_ll_multicast)
{
	return ip_pred(c, args, nargs, ip_ll_multicast, "isLinkLocalMulticast");
}

K8S_FN(k8s_ip_is_ll_unicast)
{
	return ip_pred(c, args, nargs, ip_ll_unicast, "isLinkLocalUnicast");
}

K8S_FN(k8s_ip_is_global_unicast)
{
	return ip_pred(c, args, nargs, ip_global_unicast, "isGlobalUnicast");
}

/* ---- CIDRs ---- */

static bool cidr_eq(const struct kcidr *a, const struct kcidr *b)
{
	return a->bits == b->bits && ip_eq(&a->ip, &b->ip);
}

static bool cidr_equal(const void *a, const void *b)
{
	return cidr_eq(a, b);
}

const struct cel_opaque_type k8s_cidr_type = {"net.CIDR", cidr_equal};

static struct kip ip_masked(const struct kip *ip, int bits)
{
	struct kip m = *ip;
	for (int i = 0; i < 16; i++) {
		int keep = bits - 8 * i;
		m.b[i] &= keep >= 8 ? 0xff : keep <= 0 ? 0 : (unsigned char)(0xff << (8 - keep));
	}
	return m;
}

static const char *prefix_err(cel_ctx_t *c, struct cel_str s, const char *msg)
{
	return cel_errorf(c, "netip.ParsePrefix(%s): %s", k8s_quote(c, s.p, s.len), msg).s.p;
}

/* The bits after the slash as netip.ParsePrefix reads them. */
static const char *prefix_bits(cel_ctx_t *c, struct cel_str s, struct cel_str b, int max, int *bits)
{
	long long v = 0;
	bool ok = b.len > 0 && b.len < 19 && (b.len == 1 || (b.p[0] >= '1' && b.p[0] <= '9'));
	for (size_t i = 0; ok && i < b.len; i++) {
		ok = b.p[i] >= '0' && b.p[i] <= '9';
		v = v * 10 + (b.p[i] - '0');
	}
	if (!ok) {
		const char *m =
		    cel_errorf(c, "bad bits after slash: %s", k8s_quote(c, b.p, b.len)).s.p;
		return prefix_err(c, s, m);
	}
	if (v > max)
		return prefix_err(c, s, "prefix length out of range");
	*bits = (int)v;
	return NULL;
}

/* netip.ParsePrefix. */
static const char *parse_prefix(cel_ctx_t *c, struct cel_str s, struct kcidr *p)
{
	const char *slash = last(s, '/'), *err;
	bool zone;
	if (!slash)
		return prefix_err(c, s, "no '/'");
	if ((err = parse_addr(c, sub(s, s.p, slash), &p->ip, &zone)))
		return prefix_err(c, s, err);
	if (zone)
		return prefix_err(c, s, "IPv6 zones cannot be present in a prefix");
	return prefix_bits(c, s, sub(s, slash + 1, s.p + s.len), p->ip.v6 ? 128 : 32, &p->bits);
}

/* kube's parseCIDR, and the message stringToCIDR wraps it in. */
static const char *kube_cidr(cel_ctx_t *c, struct cel_str s, struct kcidr *p)
{
	static const char ctx[] = "network address parse error during conversion from string: ";
	const char *err = parse_prefix(c, s, p);
	if (err)
		return cel_errorf(c, "%s%s%s", ctx, ctx, err).s.p;
	if (is_4in6(&p->ip))
		return cel_errorf(c, "%sIPv4-mapped IPv6 address %s is not allowed", ctx,
				  k8s_quote(c, s.p, s.len))
		    .s.p;
	return NULL;
}

static cel_value_t cidr_value(cel_ctx_t *c, const struct kcidr *p)
{
	struct kcidr *r = cel_alloc(c, sizeof(*r));
	*r = *p;
	return cel_opaque(&k8s_cidr_type, r);
}

K8S_FN(k8s_cidr)
{
	struct kcidr p;
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "cidr");
	k8s_cost_len(c, args[0].s.len);
	const char *err = kube_cidr(c, args[0].s, &p);
	return err ? cel_errorf(c, "%s", err) : cidr_value(c, &p);
}

K8S_FN(k8s_is_cidr)
{
	struct kcidr p;
	if (nargs != 1 || args[0].kind != CEL_STRING)
		return cel_no_overload(c, "isCIDR");
	k8s_cost_len(c, args[0].s.len);
	return cel_bool(kube_cidr(c, args[0].s, &p) == NULL);
}

static const struct kcidr *cidr_arg(const cel_value_t *args, size_t nargs, size_t want)
{
	return nargs == want && k8s_is(args[0], &k8s_cidr_type) ? args[0].o.data : NULL;
}

/* Prefix.Contains. */
static bool cidr_contains(const struct kcidr *p, const struct kip *ip)
{
	if (p->ip.v6 != ip->v6)
		return false;
	struct kip a = ip_masked(&p->ip, p->bits), b = ip_masked(ip, p->bits);
	return ip_eq(&a, &b);
}

K8S_FN(k8s_cidr_contains_ip)
{
	const struct kcidr *p = cidr_arg(args, nargs, 2);
	struct kip ip;
	if (!p)
		return cel_no_overload(c, "containsIP");
	if (k8s_is(args[1], &k8s_ip_type))
		return cel_bool(cidr_contains(p, args[1].o.data));
	if (args[1].kind != CEL_STRING)
		return cel_no_overload(c, "containsIP");
	k8s_cost_len(c, args[1].s.len);
	/* kube: a bad string gives types.NoSuchOverloadErr, not the parse error */
	if (kube_ip(c, args[1].s, &ip))
		return cel_errorf(c, "no such overload");
	return cel_bool(cidr_contains(p, &ip));
}

/* kube 1.33's containsCIDR (the fix of kubernetes#130450): other's address
 * masked to p's length is p's network, and other is no shorter. */
static bool cidr_contains_cidr(const struct kcidr *p, const struct kcidr *o)
{
	return o->bits >= p->bits && cidr_contains(p, &o->ip);
}

K8S_FN(k8s_cidr_contains_cidr)
{
	const struct kcidr *p = cidr_arg(args, nargs, 2);
	struct kcidr o;
	if (!p)
		return cel_no_overload(c, "containsCIDR");
	if (k8s_is(args[1], &k8s_cidr_type))
		return cel_bool(cidr_contains_cidr(p, args[1].o.data));
	if (args[1].kind != CEL_STRING)
		return cel_no_overload(c, "containsCIDR");
	k8s_cost_len(c, args[1].s.len);
	const char *err = kube_cidr(c, args[1].s, &o);
	return err ? cel_errorf(c, "%s", err) : cel_bool(cidr_contains_cidr(p, &o));
}

K8S_FN(k8s_cidr_ip)
{
	const struct kcidr *p = cidr_arg(args, nargs, 1);
	return p ? ip_value(c, &p->ip) : cel_no_overload(c, "ip");
}

K8S_FN(k8s_cidr_masked)
{
	const struct kcidr *p = cidr_arg(args, nargs, 1);
	if (!p)
		return cel_no_overload(c, "masked");
	struct kcidr m = {ip_masked(&p->ip, p->bits), p->bits};
	return cidr_value(c, &m);
}

K8S_FN(k8s_cidr_prefix_length)
{
	const struct kcidr *p = cidr_arg(args, nargs, 1);
	return p ? cel_int(p->bits) : cel_no_overload(c, "prefixLength");
}

/* string(ip), string(cidr). */
K8S_FN(k8s_net_string)
{
	char buf[80];
	size_t n;
	if (nargs == 1 && k8s_is(args[0], &k8s_ip_type)) {
		n = ip_string(args[0].o.data, buf);
	} else if (nargs == 1 && k8s_is(args[0], &k8s_cidr_type)) {
		const struct kcidr *p = args[0].o.data;
		n = ip_string(&p->ip, buf);
		n += (size_t)sprintf(buf + n, "/%d", p->bits);
	} else {
		return cel_no_overload(c, "string");
	}
	return cel_string_copy(c, buf, n);
}
