/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration
 * and MutatingWebhookConfiguration with kube-apiserver's field paths and
 * messages (pkg/apis/admissionregistration/validation, the webhook URL and
 * service checks of k8s.io/apiserver/pkg/util/webhook, metav1's label
 * selector checks). Both kinds share one walk; the mutating one adds
 * reinvocationPolicy. On update kube relaxes the checks the stored object
 * already failed (side effects, review versions, unique names, selector
 * label values); so does this file.
 *
 * matchConditions are checked as kube's validateMatchConditions (names,
 * at most 64, CEL expressions that compile), shared with the admission
 * policies.
 *
 * Threading: any thread (no global mutable state).
 */
#include "proxy/validation/validate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/pki.h"
#include "lib/util.h"
#include "proxy/model/object.h"

/* What kube's validationOptions relax on update (strict on create). */
struct wh_opts {
	bool mutating;
	bool need_no_side_effects; /* requireNoSideEffects */
	bool need_known_versions;  /* requireRecognizedAdmissionReviewVersion */
	bool need_unique_names;    /* requireUniqueWebhookNames */
	bool lax_label_values;     /* allowInvalidLabelValueInSelector */
};

static const char *const failure_policies[] = {"Fail", "Ignore", NULL};
static const char *const match_policies[] = {"Equivalent", "Exact", NULL};
static const char *const no_side_effects[] = {"None", "NoneOnDryRun", NULL};
static const char *const side_effects[] = {"None", "NoneOnDryRun", "Some", "Unknown", NULL};
static const char *const operations[] = {"*", "CONNECT", "CREATE", "DELETE", "UPDATE", NULL};
static const char *const reinvocation_policies[] = {"IfNeeded", "Never", NULL};
static const char *const scopes[] = {"*", "Cluster", "Namespaced", NULL};
static const char *const review_versions[] = {"v1", "v1beta1", NULL};

/* ---- helpers ------------------------------------------------------------------ */

/* The i-th item of a string list, "" when it is not a string. */
static const char *item(const json_t *arr, size_t i)
{
	const char *s = json_string_value(json_array_get(arr, i));
	return s ? s : "";
}

static bool has_item(const json_t *arr, const char *v)
{
	for (size_t i = 0; i < json_array_size(arr); i++)
		if (strcmp(item(arr, i), v) == 0)
			return true;
	return false;
}

/* A set of strings as a JSON object's keys (client lists can be long: no
 * quadratic scans). Adds s; true when it was already there. */
static bool set_seen(json_t *set, const char *s)
{
	if (json_object_get(set, s))
		return true;
	json_object_set_new(set, s, json_true());
	return false;
}

static void add_invalid(json_t *c, const char *field, const char *v, const char *msg)
{
	char q[600];
	val_add(c, "FieldValueInvalid", field, "%s: %s", val_quote(v, q, sizeof(q)), msg);
}

/* Invalid with Go's %#v of a string slice: []string{"a", "b"}. */
void val_invalid_strings(json_t *c, const char *field, const char *gotype, const json_t *arr,
			 const char *msg)
{
	struct kb_buf b = {0};
	char q[600];
	kb_buf_printf(&b, "%s{", gotype);
	for (size_t i = 0; i < json_array_size(arr); i++)
		kb_buf_printf(&b, "%s%s", i ? ", " : "", val_quote(item(arr, i), q, sizeof(q)));
	kb_buf_puts(&b, "}");
	val_add(c, "FieldValueInvalid", field, "%s: %s", b.data ? b.data : "", msg);
	kb_buf_free(&b);
}

/* One Invalid cause per message kube's syntax check gives. */
static void check_syntax(json_t *c, enum names_syntax syn, const char *field, const char *v)
{
	const char *m[NAMES_MAXMSG];
	size_t n = names_syntax_msgs(syn, v, m);
	for (size_t i = 0; i < n; i++)
		add_invalid(c, field, v, m[i]);
}

/* A string enum field: NotSupported unless absent or one of vals. */
static void check_enum(json_t *c, const json_t *o, const char *key, const char *field,
		       const char *const *vals)
{
	const char *v = val_jstr(o, key);
	if (v && !val_in_list(v, vals))
		val_not_supported(c, field, v, vals);
}

/* ---- names and review versions ------------------------------------------------ */

/* utilvalidation.IsFullyQualifiedName */
static void fully_qualified(json_t *c, const char *field, const char *name)
{
	const char *m[NAMES_MAXMSG];
	if (!name || !*name) {
		val_add(c, "FieldValueRequired", field, NULL);
		return;
	}
	size_t n = names_syntax_msgs(NAMES_DNS1123_SUBDOMAIN, name, m);
	if (n) {
		struct kb_buf b = {0};
		for (size_t i = 0; i < n; i++)
			kb_buf_printf(&b, "%s%s", i ? "," : "", m[i]);
		add_invalid(c, field, name, b.data ? b.data : "");
		kb_buf_free(&b);
		return;
	}
	size_t dots = 0;
	for (const char *p = name; *p; p++)
		dots += *p == '.';
	if (dots < 2)
		add_invalid(c, field, name,
			    "should be a domain with at least three segments separated by dots");
}

/* validateAdmissionReviewVersions */
/* The review versions of an admission webhook (validateAdmissionReviewVersions)
 * or a CRD's conversion webhook (apiextensions validateConversionReviewVersions):
 * the same checks; only the Required message differs (empty_msg NULL: none). */
static void review_versions_check(json_t *c, const json_t *vs, const char *base, bool need_known,
				  const char *empty_msg)
{
	char f[VAL_PATHLEN];
	size_t n = json_array_size(vs);
	if (n == 0) {
		if (empty_msg)
			val_add(c, "FieldValueRequired", base, "%s", empty_msg);
		else
			val_add(c, "FieldValueRequired", base, NULL);
		return;
	}
	bool known = false;
	json_t *seen = json_object();
	for (size_t i = 0; i < n; i++) {
		const char *v = item(vs, i);
		val_path(f, "%s[%zu]", base, i);
		if (set_seen(seen, v)) {
			add_invalid(c, f, v, "duplicate version");
			continue;
		}
		check_syntax(c, NAMES_DNS1035_LABEL, f, v);
		known |= val_in_list(v, review_versions);
	}
	json_decref(seen);
	if (need_known && !known)
		val_invalid_strings(c, base, "[]string", vs,
				    "must include at least one of v1, v1beta1");
}

static void admission_review_versions(json_t *c, const json_t *vs, const char *base,
				      bool need_known)
{
	review_versions_check(c, vs, base, need_known, "must specify one of v1, v1beta1");
}

/* ---- rules -------------------------------------------------------------------- */

/* What validateResources remembers while it walks the list. */
struct res_walk {
	json_t *wild_sub; /* resources met as "x/<star>" */
	json_t *wild_res; /* subresources met as "<star>/y" */
	bool double_wild, single_wild, plain;
};

/* One "res/sub" item at f: refused when an earlier item covers it. */
static void resource_with_sub(json_t *c, struct res_walk *w, const char *s, const char *f)
{
	char res[256], msg[600];
	const char *slash = strchr(s, '/'), *sub = slash + 1;
	snprintf(res, sizeof(res), "%.*s", (int)(slash - s), s);
	if (json_object_get(w->wild_sub, res)) {
		snprintf(msg, sizeof(msg), "if '%s/*' is present, must not specify %s", res, s);
		add_invalid(c, f, s, msg);
	}
	if (json_object_get(w->wild_res, sub)) {
		snprintf(msg, sizeof(msg), "if '*/%s' is present, must not specify %s", sub, s);
		add_invalid(c, f, s, msg);
	}
	if (strcmp(sub, "*") == 0)
		set_seen(w->wild_sub, res);
	if (strcmp(res, "*") == 0)
		set_seen(w->wild_res, sub);
}

/* validateResources (subresources allowed) */
static void rule_resources(json_t *c, const json_t *rs, const char *base)
{
	char f[VAL_PATHLEN];
	size_t n = json_array_size(rs);
	struct res_walk w = {.wild_sub = json_object(), .wild_res = json_object()};
	if (n == 0)
		val_add(c, "FieldValueRequired", base, NULL);
	for (size_t i = 0; i < n; i++) {
		const char *s = item(rs, i);
		val_path(f, "%s[%zu]", base, i);
		if (!*s) {
			val_add(c, "FieldValueRequired", f, NULL);
			continue;
		}
		w.double_wild |= strcmp(s, "*/*") == 0;
		w.single_wild |= strcmp(s, "*") == 0;
		if (strchr(s, '/'))
			resource_with_sub(c, &w, s, f);
		else
			w.plain = strcmp(s, "*") != 0; /* kube keeps the last item's answer */
	}
	json_decref(w.wild_sub);
	json_decref(w.wild_res);
	if (n > 1 && w.double_wild)
		val_invalid_strings(c, base, "[]string", rs,
				    "if '*/*' is present, must not specify other resources");
	if (w.single_wild && w.plain)
		val_invalid_strings(c, base, "[]string", rs,
				    "if '*' is present, must not specify other resources without "
				    "subresources");
}

/* validateRuleWithOperations: the operations */
static void rule_operations(json_t *c, const json_t *ops, const char *base)
{
	char f[VAL_PATHLEN];
	if (json_array_size(ops) == 0)
		val_add(c, "FieldValueRequired", val_path(f, "%s.operations", base), NULL);
	if (json_array_size(ops) > 1 && has_item(ops, "*"))
		val_invalid_strings(c, val_path(f, "%s.operations", base),
				    "[]admissionregistration.OperationType", ops,
				    "if '*' is present, must not specify other operations");
	for (size_t i = 0; i < json_array_size(ops); i++)
		if (!val_in_list(item(ops, i), operations))
			val_not_supported(c, val_path(f, "%s.operations[%zu]", base, i),
					  item(ops, i), operations);
}

/* validateRuleWithOperations and validateRule */
void val_rule_with_operations(json_t *c, const json_t *r, const char *base)
{
	char f[VAL_PATHLEN];
	const json_t *groups = json_object_get(r, "apiGroups");
	const json_t *versions = json_object_get(r, "apiVersions");
	rule_operations(c, json_object_get(r, "operations"), base);
	if (json_array_size(groups) == 0)
		val_add(c, "FieldValueRequired", val_path(f, "%s.apiGroups", base), NULL);
	if (json_array_size(groups) > 1 && has_item(groups, "*"))
		val_invalid_strings(c, val_path(f, "%s.apiGroups", base), "[]string", groups,
				    "if '*' is present, must not specify other API groups");
	if (json_array_size(versions) == 0)
		val_add(c, "FieldValueRequired", val_path(f, "%s.apiVersions", base), NULL);
	if (json_array_size(versions) > 1 && has_item(versions, "*"))
		val_invalid_strings(c, val_path(f, "%s.apiVersions", base), "[]string", versions,
				    "if '*' is present, must not specify other API versions");
	for (size_t i = 0; i < json_array_size(versions); i++)
		if (!*item(versions, i))
			val_add(c, "FieldValueRequired",
				val_path(f, "%s.apiVersions[%zu]", base, i), NULL);
	rule_resources(c, json_object_get(r, "resources"), val_path(f, "%s.resources", base));
	check_enum(c, r, "scope", val_path(f, "%s.scope", base), scopes);
}

/* ---- label selectors ------------------------------------------------------------ */

/* metav1validation.ValidateLabelSelectorRequirement */
static void selector_requirement(json_t *c, const json_t *e, const char *base, bool lax)
{
	char f[VAL_PATHLEN];
	const char *op = val_jstr(e, "operator");
	const json_t *vals = json_object_get(e, "values");
	op = op ? op : "";
	if (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0) {
		if (json_array_size(vals) == 0)
			val_add(c, "FieldValueRequired", val_path(f, "%s.values", base),
				"must be specified when `operator` is 'In' or 'NotIn'");
	} else if (strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0) {
		if (json_array_size(vals) > 0)
			val_add(c, "FieldValueForbidden", val_path(f, "%s.values", base),
				"may not be specified when `operator` is 'Exists' or "
				"'DoesNotExist'");
	} else {
		add_invalid(c, val_path(f, "%s.operator", base), op,
			    "not a valid selector operator");
	}
	const char *key = val_jstr(e, "key");
	check_syntax(c, NAMES_QUALIFIED_NAME, val_path(f, "%s.key", base), key ? key : "");
	for (size_t i = 0; !lax && i < json_array_size(vals); i++)
		check_syntax(c, NAMES_LABEL_VALUE, val_path(f, "%s.values[%zu]", base, i),
			     item(vals, i));
}

/* metav1validation.ValidateLabelSelector (matchLabels keys in sorted order) */
void val_label_selector(json_t *c, const json_t *sel, const char *base, bool lax)
{
	char f[VAL_PATHLEN];
	size_t n = 0;
	const json_t *ml = json_object_get(sel, "matchLabels");
	const char **keys = kb_json_sorted_keys(ml, &n);
	val_path(f, "%s.matchLabels", base);
	for (size_t i = 0; keys && i < n; i++) {
		const char *v = json_string_value(json_object_get(ml, keys[i]));
		check_syntax(c, NAMES_QUALIFIED_NAME, f, keys[i]);
		check_syntax(c, NAMES_LABEL_VALUE, f, v ? v : "");
	}
	free(keys);
	const json_t *exprs = json_object_get(sel, "matchExpressions");
	for (size_t i = 0; i < json_array_size(exprs); i++)
		selector_requirement(c, json_array_get(exprs, i),
				     val_path(f, "%s.matchExpressions[%zu]", base, i), lax);
}

/* ---- client config -------------------------------------------------------------- */

#define URL_FORM "; desired format: https://host[/path]"

/* The parts of a URL kube looks at, as Go's net/url.Parse splits them. */
struct wh_url {
	char scheme[64];
	char host[512];
	char user[512];
	bool has_user;
	char query[1024];
	char fragment[1024];
	char err[1024]; /* Go's error text, `parse "<url>": <why>`, when it does not parse */
};

static bool is_letter(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool is_hex(char ch)
{
	return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* Go's getScheme over s (fragment already cut): the length of "scheme:"
 * (0 when there is no scheme), or -1 for "missing protocol scheme". */
static int url_scheme(const char *s, struct wh_url *u)
{
	for (size_t i = 0; s[i]; i++) {
		char ch = s[i];
		if (is_letter(ch))
			continue;
		if (is_digit(ch) || ch == '+' || ch == '-' || ch == '.') {
			if (i == 0)
				return 0;
			continue;
		}
		if (ch != ':')
			return 0;
		if (i == 0)
			return -1;
		snprintf(u->scheme, sizeof(u->scheme), "%.*s", (int)i, s);
		for (char *p = u->scheme; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		return (int)i + 1;
	}
	return 0;
}

/* Go's validOptionalPort: "" or ':' and digits. */
static bool valid_optional_port(const char *p)
{
	if (!*p)
		return true;
	if (*p != ':')
		return false;
	for (p++; *p; p++)
		if (!is_digit(*p))
			return false;
	return true;
}

/* Go's shouldEscape for an ASCII host byte, negated: what may stand in a host. */
static bool host_byte_ok(char ch)
{
	return is_letter(ch) || is_digit(ch) || (ch && strchr("-_.~!$&'()*+,;=:[]<>\"", ch));
}

/* Go's unescape of s[0..n) (host: with its host checks): NULL when it is
 * fine, else why, written into why. */
static const char *url_unescape(const char *s, size_t n, bool host, char *why, size_t len)
{
	char q[16];
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			if (i + 2 >= n || !is_hex(s[i + 1]) || !is_hex(s[i + 2]) ||
			    (host && s[i + 1] < '8' && strncmp(s + i, "%25", 3) != 0)) {
				char esc[4];
				snprintf(esc, sizeof(esc), "%.*s", (int)(n - i < 3 ? n - i : 3),
					 s + i);
				snprintf(why, len, "invalid URL escape %s",
					 val_quote(esc, q, sizeof(q)));
				return why;
			}
			i += 2;
		} else if (host && (unsigned char)s[i] < 0x80 && !host_byte_ok(s[i])) {
			char bad[2] = {s[i], 0};
			snprintf(why, len, "invalid character %s in host name",
				 val_quote(bad, q, sizeof(q)));
			return why;
		}
	}
	return NULL;
}

/* Go's parseHost: the port after the host (or after "]"), then unescaping. */
static const char *url_host(struct wh_url *u, char *why, size_t len)
{
	const char *h = u->host, *port = NULL;
	char q[600];
	if (h[0] == '[') {
		port = strrchr(h, ']');
		if (!port)
			return "missing ']' in host";
		port++;
	} else {
		port = strrchr(h, ':');
	}
	if (port && !valid_optional_port(port)) {
		snprintf(why, len, "invalid port %s after host", val_quote(port, q, sizeof(q)));
		return why;
	}
	return url_unescape(h, strlen(h), true, why, len);
}

/* Go's validUserinfo */
static bool valid_userinfo(const char *s)
{
	for (; *s; s++)
		if (!is_letter(*s) && !is_digit(*s) && !strchr("-._:~!$&'()*+,;=%@", *s))
			return false;
	return true;
}

/* Go's parseAuthority over auth[0..n): userinfo before the last '@'. */
static const char *url_authority(struct wh_url *u, const char *auth, size_t n, char *why,
				 size_t len)
{
	size_t at = n;
	for (size_t i = n; i-- > 0;)
		if (auth[i] == '@') {
			at = i;
			break;
		}
	size_t h = at < n ? at + 1 : 0;
	snprintf(u->host, sizeof(u->host), "%.*s", (int)(n - h), auth + h);
	const char *err = url_host(u, why, len);
	if (err || at == n)
		return err;
	u->has_user = true;
	snprintf(u->user, sizeof(u->user), "%.*s", (int)at, auth);
	if (!valid_userinfo(u->user))
		return "net/url: invalid userinfo";
	return strchr(u->user, ':') ? NULL
				    : url_unescape(u->user, strlen(u->user), false, why, len);
}

/* Go's parse of the part before '#': NULL or why it fails. `rest` is
 * modified (the query is cut off). */
static const char *url_parse_main(struct wh_url *u, char *rest, char *why, size_t len)
{
	for (const char *p = rest; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return "net/url: invalid control character in URL";
	int sl = url_scheme(rest, u);
	if (sl < 0)
		return "missing protocol scheme";
	rest += sl;
	char *qm = strchr(rest, '?');
	if (qm) {
		snprintf(u->query, sizeof(u->query), "%s", qm + 1);
		*qm = '\0';
	}
	if (rest[0] != '/') {
		if (u->scheme[0])
			return NULL; /* opaque: no host */
		if (memchr(rest, ':', strcspn(rest, "/")))
			return "first path segment in URL cannot contain colon";
	}
	if (strncmp(rest, "//", 2) == 0 && (u->scheme[0] || strncmp(rest, "///", 3) != 0)) {
		size_t an = strcspn(rest + 2, "/");
		const char *err = url_authority(u, rest + 2, an, why, len);
		if (err)
			return err;
		rest += 2 + an;
	}
	return url_unescape(rest, strlen(rest), false, why, len); /* setPath */
}

/* net/url.Parse, as far as kube's checks go; false with u->err set. */
static bool url_parse(const char *s, struct wh_url *u)
{
	char why[600], q[600];
	memset(u, 0, sizeof(*u));
	size_t n = strcspn(s, "#");
	char *head = strndup(s, n);
	if (!head) {
		snprintf(u->err, sizeof(u->err), "out of memory");
		return false;
	}
	const char *err = url_parse_main(u, head, why, sizeof(why));
	if (err) /* Go names the URL without its fragment here */
		snprintf(u->err, sizeof(u->err), "parse %s: %s", val_quote(head, q, sizeof(q)),
			 err);
	free(head);
	if (err)
		return false;
	if (s[n] != '#')
		return true;
	snprintf(u->fragment, sizeof(u->fragment), "%s", s + n + 1);
	err = url_unescape(s + n + 1, strlen(s + n + 1), false, why, sizeof(why));
	if (err)
		snprintf(u->err, sizeof(u->err), "parse %s: %s", val_quote(s, q, sizeof(q)), err);
	return err == NULL;
}

/* webhook.ValidateWebhookURL with forceHttps */
static void client_url(json_t *c, const char *url, const char *f)
{
	struct wh_url u;
	if (!url_parse(url, &u)) {
		val_add(c, "FieldValueRequired", f, "url must be a valid URL: %s" URL_FORM, u.err);
		return;
	}
	if (strcmp(u.scheme, "https") != 0)
		add_invalid(c, f, u.scheme, "'https' is the only allowed URL scheme" URL_FORM);
	if (!u.host[0])
		add_invalid(c, f, u.host, "host must be provided" URL_FORM);
	if (u.has_user)
		add_invalid(c, f, u.user, "user information is not permitted in the URL");
	if (u.fragment[0])
		add_invalid(c, f, u.fragment, "fragments are not permitted in the URL");
	if (u.query[0])
		add_invalid(c, f, u.query, "query parameters are not permitted in the URL");
}

/* The path part of webhook.ValidateWebhookService */
static void service_path(json_t *c, const char *path, const char *f)
{
	char msg[700], seg[256];
	if (!*path || strcmp(path, "/") == 0)
		return;
	if (strcmp(path, "//") == 0) {
		add_invalid(c, f, path, "segment[0] may not be empty");
		return;
	}
	if (path[0] != '/')
		add_invalid(c, f, path, "must start with a '/'");
	size_t n = strlen(path) - 1; /* kube drops the first byte, '/' or not */
	const char *p = path + 1;
	if (n && p[n - 1] == '/')
		n--;
	for (size_t i = 0, start = 0; start <= n; i++) {
		size_t len = strcspn(p + start, "/");
		if (start + len > n)
			len = n - start;
		if (len == 0) {
			snprintf(msg, sizeof(msg), "segment[%zu] may not be empty", i);
			add_invalid(c, f, path, msg);
		} else {
			const char *m[NAMES_MAXMSG];
			snprintf(seg, sizeof(seg), "%.*s", (int)len, p + start);
			size_t k = names_syntax_msgs(NAMES_DNS1123_SUBDOMAIN, seg, m);
			for (size_t j = 0; j < k; j++) {
				snprintf(msg, sizeof(msg), "segment[%zu]: %s", i, m[j]);
				add_invalid(c, f, path, msg);
			}
		}
		start += len + 1;
	}
}

/* webhook.ValidateWebhookService */
static void client_service(json_t *c, const json_t *svc, const char *base)
{
	char f[VAL_PATHLEN];
	const char *name = val_jstr(svc, "name"), *ns = val_jstr(svc, "namespace");
	const json_t *port = json_object_get(svc, "port");
	if (!name || !*name)
		val_add(c, "FieldValueRequired", val_path(f, "%s.name", base),
			"service name is required");
	if (!ns || !*ns)
		val_add(c, "FieldValueRequired", val_path(f, "%s.namespace", base),
			"service namespace is required");
	json_int_t p = json_is_integer(port) ? json_integer_value(port) : 443;
	if (p < 1 || p > 65535)
		val_add(c, "FieldValueInvalid", val_path(f, "%s.port", base),
			"%lld: port is not valid: must be between 1 and 65535, inclusive",
			(long long)p);
	const char *path = val_jstr(svc, "path");
	if (path)
		service_path(c, path, val_path(f, "%s.path", base));
}

static void client_config(json_t *c, const json_t *cc, const char *base)
{
	char f[VAL_PATHLEN];
	const json_t *url = json_object_get(cc, "url"), *svc = json_object_get(cc, "service");
	if (json_is_null(url))
		url = NULL;
	if (json_is_null(svc))
		svc = NULL;
	if (!url == !svc)
		val_add(c, "FieldValueRequired", base, "exactly one of url or service is required");
	else if (url)
		client_url(c, json_string_value(url) ? json_string_value(url) : "",
			   val_path(f, "%s.url", base));
	else
		client_service(c, svc, val_path(f, "%s.service", base));
}

/* ---- a CRD's conversion webhook ------------------------------------------------ */

/* k8s.io/apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go,
 * validateCustomResourceConversion and the strategy check of
 * validateCustomResourceDefinitionSpec. Paths are kube's internal ones
 * (spec.conversion.webhookClientConfig for v1's webhook.clientConfig), as
 * kube reports them. need_known: the old CRD had no conversionReviewVersions
 * or a recognized one (ValidateCustomResourceDefinitionUpdate).
 * allow_invalid_ca: kube's allowInvalidCABundle (a create, an update of a CRD
 * not Established, or of one whose caBundle is already invalid): else a
 * caBundle that is not PEM certificates is refused. */
/* Go's %#v of a []byte: []byte{0x68, 0x69}. New string in b. */
static void go_bytes(struct kb_buf *b, const unsigned char *p, size_t n)
{
	kb_buf_puts(b, "[]byte{");
	for (size_t i = 0; i < n; i++)
		kb_buf_printf(b, "%s0x%x", i ? ", " : "", p[i]);
	kb_buf_puts(b, "}");
}

/* k8s.io/apiserver pkg/util/webhook ValidateCABundle: the caBundle (base64
 * in JSON) must load as client-go's root certificates (transport
 * TLSConfigFor: "unable to load root certificates: ..."). */
static void ca_bundle_check(json_t *c, const json_t *cc, const char *field)
{
	const char *ca64 = val_jstr(cc, "caBundle");
	unsigned char *raw = NULL;
	size_t rl = 0;
	char why[200];
	if (!ca64 || !*ca64 || kb_base64_decode(ca64, strlen(ca64), &raw, &rl) < 0 || !rl) {
		free(raw);
		return; /* empty, or refused by decoding (kube's JSON decoder) */
	}
	if (kb_pki_ca_bundle_check(raw, rl, why, sizeof(why)) < 0) {
		struct kb_buf b = {0};
		go_bytes(&b, raw, rl);
		val_add(c, "FieldValueInvalid", field, "%s: unable to load root certificates: %s",
			b.data ? b.data : "[]byte{}", why);
		kb_buf_free(&b);
	}
	free(raw);
}

bool val_crd_ca_bundle_ok(const json_t *crd)
{
	const json_t *cc = obj_get(crd, "spec.conversion.webhook.clientConfig");
	json_t *c = json_array();
	ca_bundle_check(c, cc, "caBundle");
	bool ok = json_array_size(c) == 0;
	json_decref(c);
	return ok;
}

void val_crd_conversion(json_t *c, const json_t *crd, bool need_known, bool allow_invalid_ca)
{
	const json_t *conv = json_object_get(json_object_get(crd, "spec"), "conversion");
	const json_t *wh = json_object_get(conv, "webhook");
	const json_t *cc = json_object_get(wh, "clientConfig");
	const json_t *versions = json_object_get(wh, "conversionReviewVersions");
	const char *strategy = val_jstr(conv, "strategy");
	char q[300];
	if (!json_is_object(conv))
		return;
	if (json_is_null(cc))
		cc = NULL;
	if (!strategy)
		strategy = "";
	if (strcmp(strategy, "None") != 0 &&
	    json_is_true(obj_get(crd, "spec.preserveUnknownFields")))
		add_invalid(c, "spec.conversion.strategy", strategy,
			    "must be None if spec.preserveUnknownFields is true");
	if (!*strategy)
		val_add(c, "FieldValueRequired", "spec.conversion.strategy", NULL);
	else if (strcmp(strategy, "None") != 0 && strcmp(strategy, "Webhook") != 0)
		val_add(c, "FieldValueNotSupported", "spec.conversion.strategy",
			"%s: supported values: \"None\", \"Webhook\"",
			val_quote(strategy, q, sizeof(q)));
	if (strcmp(strategy, "Webhook") == 0) {
		if (!cc)
			val_add(c, "FieldValueRequired", "spec.conversion.webhookClientConfig",
				"required when strategy is set to Webhook");
		else
			client_config(c, cc, "spec.conversion.webhookClientConfig");
		if (cc && !allow_invalid_ca)
			ca_bundle_check(c, cc, "spec.conversion.webhookClientConfig.caBundle");
		review_versions_check(c, versions, "spec.conversion.conversionReviewVersions",
				      need_known, NULL);
		return;
	}
	if (cc)
		val_add(c, "FieldValueForbidden", "spec.conversion.webhookClientConfig",
			"should not be set when strategy is not set to Webhook");
	if (json_array_size(versions))
		val_add(c, "FieldValueForbidden", "spec.conversion.conversionReviewVersions",
			"should not be set when strategy is not set to Webhook");
}

/* v1 SetDefaults_ServiceReference (pkg/apis/apiextensions/v1/defaults.go):
 * a conversion webhook's service port is 443 when unset. */
void val_crd_conversion_defaults(json_t *crd)
{
	json_t *svc = obj_get(crd, "spec.conversion.webhook.clientConfig.service");
	if (json_is_object(svc) && !json_object_get(svc, "port"))
		json_object_set_new(svc, "port", json_integer(443));
}

/* ---- webhooks ------------------------------------------------------------------- */

static void side_effect_class(json_t *c, const json_t *hook, const char *f, const struct wh_opts *o)
{
	const char *const *allowed = o->need_no_side_effects ? no_side_effects : side_effects;
	const char *se = val_jstr(hook, "sideEffects");
	if (!se)
		val_add(c, "FieldValueRequired", f, "must specify one of %s",
			o->need_no_side_effects ? "None, NoneOnDryRun"
						: "None, NoneOnDryRun, Some, Unknown");
	else if (!val_in_list(se, allowed))
		val_not_supported(c, f, se, allowed);
}

static void selectors_and_timeout(json_t *c, const json_t *hook, const char *base,
				  const struct wh_opts *o)
{
	char f[VAL_PATHLEN];
	const json_t *t = json_object_get(hook, "timeoutSeconds");
	if (json_is_integer(t) && (json_integer_value(t) < 1 || json_integer_value(t) > 30))
		val_add(c, "FieldValueInvalid", val_path(f, "%s.timeoutSeconds", base),
			"%lld: the timeout value must be between 1 and 30 seconds",
			(long long)json_integer_value(t));
	const char *sels[] = {"namespaceSelector", "objectSelector"};
	for (size_t i = 0; i < 2; i++) {
		const json_t *sel = json_object_get(hook, sels[i]);
		if (json_is_object(sel))
			val_label_selector(c, sel, val_path(f, "%s.%s", base, sels[i]),
					   o->lax_label_values);
	}
}

/* validateValidatingWebhook / validateMutatingWebhook */
static void webhook(json_t *c, const json_t *hook, const char *base, const struct wh_opts *o)
{
	char f[VAL_PATHLEN];
	fully_qualified(c, val_path(f, "%s.name", base), val_jstr(hook, "name"));
	const json_t *rules = json_object_get(hook, "rules");
	for (size_t i = 0; i < json_array_size(rules); i++)
		val_rule_with_operations(c, json_array_get(rules, i),
					 val_path(f, "%s.rules[%zu]", base, i));
	check_enum(c, hook, "failurePolicy", val_path(f, "%s.failurePolicy", base),
		   failure_policies);
	check_enum(c, hook, "matchPolicy", val_path(f, "%s.matchPolicy", base), match_policies);
	side_effect_class(c, hook, val_path(f, "%s.sideEffects", base), o);
	selectors_and_timeout(c, hook, base, o);
	if (o->mutating)
		check_enum(c, hook, "reinvocationPolicy",
			   val_path(f, "%s.reinvocationPolicy", base), reinvocation_policies);
	client_config(c, json_object_get(hook, "clientConfig"),
		      val_path(f, "%s.clientConfig", base));
	val_match_conditions(c, json_object_get(hook, "matchConditions"),
			     val_path(f, "%s.matchConditions", base));
}

/* ---- update relaxations ------------------------------------------------------- */

static bool old_all_no_side_effects(const json_t *hooks)
{
	for (size_t i = 0; i < json_array_size(hooks); i++)
		if (!val_in_list(val_jstr(json_array_get(hooks, i), "sideEffects"),
				 no_side_effects))
			return false;
	return true;
}

static bool old_all_known_versions(const json_t *hooks)
{
	for (size_t i = 0; i < json_array_size(hooks); i++) {
		const json_t *vs =
		    json_object_get(json_array_get(hooks, i), "admissionReviewVersions");
		bool known = json_array_size(vs) == 0;
		for (size_t j = 0; j < json_array_size(vs) && !known; j++)
			known = val_in_list(item(vs, j), review_versions);
		if (!known)
			return false;
	}
	return true;
}

static bool old_unique_names(const json_t *hooks)
{
	json_t *names = json_object();
	bool unique = true;
	for (size_t i = 0; unique && i < json_array_size(hooks); i++) {
		const char *n = val_jstr(json_array_get(hooks, i), "name");
		unique = !set_seen(names, n ? n : "");
	}
	json_decref(names);
	return unique;
}

static bool old_bad_label_values(const json_t *hooks)
{
	json_t *scratch = json_array();
	const char *sels[] = {"namespaceSelector", "objectSelector"};
	for (size_t i = 0; scratch && i < json_array_size(hooks); i++)
		for (size_t s = 0; s < 2; s++) {
			const json_t *sel = json_object_get(json_array_get(hooks, i), sels[s]);
			if (json_is_object(sel))
				val_label_selector(scratch, sel, "", false);
		}
	bool bad = json_array_size(scratch) > 0;
	json_decref(scratch);
	return bad;
}

static void options(struct wh_opts *o, const struct proxy_resource *r, const json_t *old)
{
	const json_t *hooks = json_object_get(old, "webhooks");
	o->mutating = r && r->kind && strcmp(r->kind, "MutatingWebhookConfiguration") == 0;
	o->need_no_side_effects = !old || old_all_no_side_effects(hooks);
	o->need_known_versions = !old || old_all_known_versions(hooks);
	o->need_unique_names = !old || old_unique_names(hooks);
	o->lax_label_values = old && old_bad_label_values(hooks);
}

void val_webhook_configuration(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			       json_t *c)
{
	char f[VAL_PATHLEN], q[600];
	struct wh_opts o;
	options(&o, r, old);
	json_t *names = json_object();
	const json_t *hooks = json_object_get(obj, "webhooks");
	for (size_t i = 0; i < json_array_size(hooks); i++) {
		const json_t *hook = json_array_get(hooks, i);
		webhook(c, hook, val_path(f, "webhooks[%zu]", i), &o);
		admission_review_versions(c, json_object_get(hook, "admissionReviewVersions"),
					  val_path(f, "webhooks[%zu].admissionReviewVersions", i),
					  o.need_known_versions);
		const char *name = val_jstr(hook, "name");
		if (o.need_unique_names && name && *name && set_seen(names, name))
			val_add(c, "FieldValueDuplicate", val_path(f, "webhooks[%zu].name", i),
				"%s", val_quote(name, q, sizeof(q)));
	}
	json_decref(names);
}
