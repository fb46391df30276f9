/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of built-in objects with kube-apiserver's causes (see
 * validate.h). The name checks mirror k8s.io/apimachinery/pkg/util/
 * validation (same messages, same regular expressions written out by hand);
 * the per-kind checks mirror pkg/apis/<group>/validation for the fields the
 * tenants' kubectl/Helm users actually hit. Each kind is a small function in
 * the table at the bottom, dispatched by (group, kind).
 */
#include "proxy/validation/validate.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/json.h"
#include "lib/util.h"
#include "proxy/model/object.h"
#include "proxy/model/quantity.h"
#include "proxy/model/selector.h"

/* ---- causes ------------------------------------------------------------------ */

static const struct {
	const char *reason, *text;
} reason_text[] = {
    {"FieldValueInvalid", "Invalid value"},
    {"FieldValueRequired", "Required value"},
    {"FieldValueNotSupported", "Unsupported value"},
    {"FieldValueForbidden", "Forbidden"},
    {"FieldValueTooLong", "Too long"},
    {"FieldValueTooMany", "Too many"},
    {"FieldValueDuplicate", "Duplicate value"},
    {"FieldValueNotFound", "Not found"},
    {"InternalError", "Internal error"},
};

static const char *type_text(const char *reason)
{
	for (size_t i = 0; i < KB_ARRAY_SIZE(reason_text); i++)
		if (strcmp(reason_text[i].reason, reason) == 0)
			return reason_text[i].text;
	return reason;
}

void val_addv(json_t *causes, const char *reason, const char *field, const char *fmt, va_list ap)
{
	struct kb_buf b = {0};
	json_t *c = NULL;
	if (kb_buf_puts(&b, type_text(reason)) < 0)
		goto out;
	if (fmt && *fmt) { /* whole: a Go list of many items can be long */
		char tmp[1024], *big = NULL;
		va_list again;
		va_copy(again, ap);
		int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
		if (n >= (int)sizeof(tmp) && (big = malloc((size_t)n + 1)) != NULL)
			vsnprintf(big, (size_t)n + 1, fmt, again);
		va_end(again);
		int rc = n < 0 ? -1 : kb_buf_puts(&b, ": ");
		if (rc == 0)
			rc = kb_buf_puts(&b, big ? big : tmp);
		free(big);
		if (rc < 0)
			goto out;
	}
	c = json_pack("{s:s, s:s}", "reason", reason, "message", b.data);
	if (c && field && *field)
		json_object_set_new(c, "field", json_string(field));
	if (c)
		json_array_append_new(causes, c);
out:
	kb_buf_free(&b);
}

void val_add(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	val_addv(causes, reason, field, fmt, ap);
	va_end(ap);
}

static int cause_line(struct kb_buf *b, const json_t *c)
{
	const char *f = json_string_value(json_object_get(c, "field"));
	const char *m = json_string_value(json_object_get(c, "message"));
	return kb_buf_printf(b, "%s: %s", f ? f : "", m ? m : "");
}

char *val_status_message(const struct proxy_resource *r, const char *name, const json_t *causes)
{
	struct kb_buf b = {0};
	size_t n = json_array_size(causes), i;
	int rc;
	const char *g = r && r->group ? r->group : "";
	rc = kb_buf_printf(&b, "%s%s%s \"%s\" is invalid: ", r ? r->kind : "Object", *g ? "." : "",
			   g, name ? name : "");
	if (n != 1)
		rc |= kb_buf_puts(&b, "[");
	for (i = 0; i < n; i++) {
		if (i)
			rc |= kb_buf_puts(&b, ", ");
		rc |= cause_line(&b, json_array_get(causes, i));
	}
	if (n != 1)
		rc |= kb_buf_puts(&b, "]");
	if (rc) {
		kb_buf_free(&b);
		return NULL;
	}
	return b.data;
}

/* ---- small helpers ------------------------------------------------------------ */

/* Appends n bytes of s at o, stopping at end. */
static char *path_put(char *o, char *end, const char *s, size_t n)
{
	if (n > (size_t)(end - o))
		n = (size_t)(end - o);
	memcpy(o, s, n);
	return o + n;
}

/* Paths are made for every field checked, so the two conversions they use
 * (%s, %zu) are written here rather than through vsnprintf; anything else
 * goes to vsnprintf. */
char *val_path(char *buf, const char *fmt, ...)
{
	char *o = buf, *end = buf + VAL_PATHLEN - 1;
	va_list ap;

	va_start(ap, fmt);
	for (const char *p = fmt; *p;) {
		const char *pct = strchr(p, '%');
		if (!pct) {
			o = path_put(o, end, p, strlen(p));
			break;
		}
		o = path_put(o, end, p, (size_t)(pct - p));
		if (pct[1] == 's') {
			const char *v = va_arg(ap, const char *);
			if (!v)
				v = "(null)";
			o = path_put(o, end, v, strlen(v));
			p = pct + 2;
		} else if (pct[1] == 'z' && pct[2] == 'u') {
			char num[24], *d = num + sizeof(num);
			size_t v = va_arg(ap, size_t);
			do
				*--d = (char)('0' + v % 10);
			while (v /= 10);
			o = path_put(o, end, d, (size_t)(num + sizeof(num) - d));
			p = pct + 3;
		} else {
			va_end(ap);
			va_start(ap, fmt);
			vsnprintf(buf, VAL_PATHLEN, fmt, ap);
			o = buf + strlen(buf);
			break;
		}
	}
	va_end(ap);
	*o = '\0';
	if (buf[0] == '.') /* an empty base: "template.spec", not ".template.spec" */
		memmove(buf, buf + 1, (size_t)(o - buf));
	return buf;
}

/* Go's %q, close enough: JSON string quoting. Writes into buf. */
const char *val_quote(const char *s, char *buf, size_t len)
{
	json_t *j = json_string(s ? s : "");
	char *d = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	snprintf(buf, len, "%s", d ? d : "\"\"");
	free(d);
	json_decref(j);
	return buf;
}

static void add_invalid_str(json_t *c, const char *field, const char *v, const char *msg)
{
	char q[600];
	val_add(c, "FieldValueInvalid", field, "%s: %s", val_quote(v, q, sizeof(q)), msg);
}

static void add_required(json_t *c, const char *field)
{
	val_add(c, "FieldValueRequired", field, NULL);
}

/* NotSupported with kube's list text: supported values: "a", "b". */
void val_not_supported(json_t *c, const char *field, const char *v, const char *const *vals)
{
	char q[600];
	struct kb_buf b = {0};
	for (size_t i = 0; vals[i]; i++)
		kb_buf_printf(&b, "%s\"%s\"", i ? ", " : "", vals[i]);
	val_add(c, "FieldValueNotSupported", field, "%s: supported values: %s",
		val_quote(v, q, sizeof(q)), b.data ? b.data : "");
	kb_buf_free(&b);
}

bool val_in_list(const char *v, const char *const *vals)
{
	for (size_t i = 0; v && vals[i]; i++)
		if (strcmp(v, vals[i]) == 0)
			return true;
	return false;
}

/* Runs a msgs function and adds one Invalid cause per message. */
static void check_name(json_t *c, names_msgs_fn fn, const char *field, const char *v)
{
	const char *m[NAMES_MAXMSG];
	size_t n = fn(v, m);
	for (size_t i = 0; i < n; i++)
		add_invalid_str(c, field, v, m[i]);
}

static void check_nonneg(json_t *c, const json_t *o, const char *key, const char *field)
{
	json_t *v = json_object_get(o, key);
	if (json_is_integer(v) && json_integer_value(v) < 0)
		val_add(c, "FieldValueInvalid", field, "%lld: must be greater than or equal to 0",
			(long long)json_integer_value(v));
}

/* Whether a field differs between two versions of an object. */
static bool changed(const json_t *nv, const json_t *ov)
{
	return !kb_json_same(nv, ov);
}

static void immutable(json_t *c, const json_t *nv, const json_t *ov, const char *field)
{
	if (!changed(nv, ov))
		return;
	char *d = nv ? json_dumps(nv, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	val_add(c, "FieldValueInvalid", field, "%s: field is immutable", d ? d : "null");
	free(d);
}

/* Go's %#v of map[string]string, keys sorted: map[string]string{"a":"b"} */
static char *go_map(const json_t *m)
{
	struct kb_buf b = {0};
	size_t n = 0;
	const char **keys = kb_json_sorted_keys(m, &n);
	if (!keys)
		return NULL;
	kb_buf_puts(&b, n ? "map[string]string{" : "map[string]string(nil)");
	for (size_t i = 0; i < n; i++) {
		const char *v = json_string_value(json_object_get(m, keys[i]));
		kb_buf_printf(&b, "%s\"%s\":\"%s\"", i ? ", " : "", keys[i], v ? v : "");
	}
	if (n)
		kb_buf_puts(&b, "}");
	free(keys);
	return b.data;
}

/* ---- metadata ------------------------------------------------------------------ */

static bool kind_is(const struct proxy_resource *r, const char *group, const char *kind)
{
	return r && strcmp(r->group ? r->group : "", group) == 0 && r->kind &&
	       strcmp(r->kind, kind) == 0;
}

static names_msgs_fn name_fn(const struct proxy_resource *r)
{
	if (kind_is(r, "", "Namespace"))
		return names_msgs_label;
	if (kind_is(r, "", "Service"))
		return names_msgs_1035;
	if (r && r->group &&
	    (strcmp(r->group, "rbac.authorization.k8s.io") == 0 ||
	     strcmp(r->group, "certificates.k8s.io") == 0 ||   /* CSRs: any path segment */
	     strcmp(r->group, "apiregistration.k8s.io") == 0)) /* then <version>.<group> */
		return names_msgs_path_segment;
	return names_msgs_subdomain;
}

static void meta_labels(json_t *c, const json_t *labels, const char *field)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)labels, k, v) {
		check_name(c, names_msgs_qname, field, k);
		check_name(c, names_msgs_label_value, field,
			   json_is_string(v) ? json_string_value(v) : "");
	}
}

static void meta_annotations(json_t *c, const json_t *ann, const char *field)
{
	const char *k;
	json_t *v;
	size_t total = 0;
	json_object_foreach ((json_t *)ann, k, v) {
		char lower[512];
		size_t i;
		for (i = 0; k[i] && i + 1 < sizeof(lower); i++)
			lower[i] = (char)tolower((unsigned char)k[i]);
		lower[i] = '\0';
		const char *m[NAMES_MAXMSG];
		size_t n = names_msgs_qname(lower, m);
		for (i = 0; i < n; i++)
			add_invalid_str(c, field, k, m[i]);
		total += strlen(k) + (json_is_string(v) ? strlen(json_string_value(v)) : 0);
	}
	if (total > 256 * 1024)
		val_add(c, "FieldValueTooLong", field, "may not be more than %d bytes", 256 * 1024);
}

static void meta_owner_refs(json_t *c, const json_t *refs)
{
	static const char *const f = "metadata.ownerReferences";
	size_t i, controllers = 0;
	json_t *o;
	json_array_foreach (refs, i, o) {
		const char *av = val_jstr(o, "apiVersion");
		const char *ver = av ? strrchr(av, '/') : NULL;
		ver = ver ? ver + 1 : av;
		if (!ver || !*ver)
			add_invalid_str(c, "metadata.ownerReferences.apiVersion", av,
					"version must not be empty");
		if (!val_jstr(o, "kind") || !*val_jstr(o, "kind"))
			add_invalid_str(c, "metadata.ownerReferences.kind", val_jstr(o, "kind"),
					"kind must not be empty");
		if (!val_jstr(o, "name") || !*val_jstr(o, "name"))
			add_invalid_str(c, "metadata.ownerReferences.name", val_jstr(o, "name"),
					"name must not be empty");
		if (!val_jstr(o, "uid") || !*val_jstr(o, "uid"))
			add_invalid_str(c, "metadata.ownerReferences.uid", val_jstr(o, "uid"),
					"uid must not be empty");
		if (json_is_true(json_object_get(o, "controller")))
			controllers++;
	}
	if (controllers > 1)
		val_add(c, "FieldValueInvalid", f,
			"only one reference can have Controller set to true");
}

static void meta_update(json_t *c, const json_t *m, const json_t *om)
{
	static const char *const keys[] = {"name", "namespace", "uid", "creationTimestamp"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		char field[64];
		const json_t *nv = json_object_get(m, keys[i]), *ov = json_object_get(om, keys[i]);
		if (json_is_string(nv) && json_is_string(ov) && !json_equal(nv, ov)) {
			snprintf(field, sizeof(field), "metadata.%s", keys[i]);
			add_invalid_str(c, field, json_string_value(nv), "field is immutable");
		}
	}
}

static void meta_namespace(const struct proxy_resource *r, json_t *c, const char *ns)
{
	if (r && r->namespaced) {
		if (!ns || !*ns)
			add_required(c, "metadata.namespace");
		else
			check_name(c, names_msgs_label, "metadata.namespace", ns);
	} else if (ns && *ns) {
		val_add(c, "FieldValueForbidden", "metadata.namespace", "not allowed on this type");
	}
}

int val_object_meta(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		    json_t *causes)
{
	size_t before = json_array_size(causes);
	const json_t *m = json_object_get(obj, "metadata");
	const char *name = val_jstr(m, "name");
	size_t i;
	json_t *f;
	if (!name || !*name)
		val_add(causes, "FieldValueRequired", "metadata.name",
			"name or generateName is required");
	else
		check_name(causes, name_fn(r), "metadata.name", name);
	meta_namespace(r, causes, val_jstr(m, "namespace"));
	check_nonneg(causes, m, "generation", "metadata.generation");
	meta_labels(causes, json_object_get(m, "labels"), "metadata.labels");
	meta_annotations(causes, json_object_get(m, "annotations"), "metadata.annotations");
	meta_owner_refs(causes, json_object_get(m, "ownerReferences"));
	json_array_foreach (json_object_get(m, "finalizers"), i, f)
		check_name(causes, names_msgs_qname, "metadata.finalizers", json_string_value(f));
	if (old)
		meta_update(causes, m, json_object_get(old, "metadata"));
	return (int)(json_array_size(causes) - before);
}

/* ---- quantities ---------------------------------------------------------------- */

int val_quantity_milli(const char *s, int64_t *out)
{
	double v;
	if (kb_quantity_parse(s, &v) < 0)
		return -EINVAL;
	double m = ceil(v * 1000.0 - 1e-6);
	if (m >= 9.2e18)
		*out = INT64_MAX;
	else if (m <= -9.2e18)
		*out = INT64_MIN;
	else
		*out = (int64_t)m;
	return 0;
}

#define QTY_REGEX_MSG                                   \
	"quantities must match the regular expression " \
	"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

/* ---- pod spec -------------------------------------------------------------------- */

static const char *const port_protocols[] = {"SCTP", "TCP", "UDP", NULL};
static const char *const restart_policies[] = {"Always", "OnFailure", "Never", NULL};

/* Whether check_port_num would add no cause. */
static bool port_num_ok(const json_t *v, bool required)
{
	if (!v || (json_is_integer(v) && json_integer_value(v) == 0))
		return !required;
	return json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 65535;
}

static void check_port_num(json_t *c, const json_t *v, const char *field, bool required)
{
	if (!v || (json_is_integer(v) && json_integer_value(v) == 0)) {
		if (required)
			add_required(c, field);
		return;
	}
	long long n = json_integer_value(v);
	if (!json_is_integer(v) || n < 1 || n > 65535)
		val_add(c, "FieldValueInvalid", field,
			"%lld: must be between 1 and 65535, inclusive", n);
}

/* IsValidPortName (IANA service name). */
static size_t msgs_port_name(const char *s, const char **m)
{
	size_t k = 0, n = strlen(s);
	bool letter = false, bad = false;
	if (n > 15)
		m[k++] = "must be no more than 15 characters";
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= 'a' && s[i] <= 'z')
			letter = true;
		else if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
			bad = true;
	}
	if (bad)
		m[k++] = "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)";
	else if (strstr(s, "--"))
		m[k++] = "must not contain consecutive hyphens";
	if (k < NAMES_MAXMSG && !letter)
		m[k++] = "must contain at least one letter (a-z)";
	else if (k < NAMES_MAXMSG && n && (s[0] == '-' || s[n - 1] == '-'))
		m[k++] = "must not begin or end with a hyphen";
	return k;
}

static void check_protocol(json_t *c, const json_t *o, const char *field)
{
	const char *p = val_jstr(o, "protocol");
	if (p && !val_in_list(p, port_protocols))
		val_not_supported(c, field, p, port_protocols);
}

/* A container's place, "<path>.<list>[<i>]", written out (ctr_base) only
 * for a cause: the checks below run for every field of every container. */
struct ctr_at {
	const char *path, *list;
	size_t i;
};

static const char *ctr_base(char *buf, const struct ctr_at *at)
{
	return val_path(buf, "%s.%s[%zu]", at->path, at->list, at->i);
}

/* A port's name: IANA's rules, unique among the container's ports. */
static void port_name(json_t *c, const json_t *ports, size_t i, const char *name,
		      const struct ctr_at *at)
{
	char f[VAL_PATHLEN], b[VAL_PATHLEN], q[300];
	const char *m[NAMES_MAXMSG];
	size_t n = msgs_port_name(name, m), j;
	for (j = 0; j < i; j++) {
		const char *o = val_jstr(json_array_get(ports, j), "name");
		if (o && strcmp(o, name) == 0)
			break;
	}
	if (n == 0 && j == i)
		return;
	val_path(f, "%s.ports[%zu].name", ctr_base(b, at), i);
	for (size_t k = 0; k < n; k++)
		add_invalid_str(c, f, name, m[k]);
	if (j < i)
		val_add(c, "FieldValueDuplicate", f, "%s", val_quote(name, q, sizeof(q)));
}

static void container_ports(json_t *c, const json_t *ports, const struct ctr_at *at)
{
	char f[VAL_PATHLEN], b[VAL_PATHLEN];
	size_t i;
	json_t *p;
	json_array_foreach (ports, i, p) {
		const char *name = val_jstr(p, "name"), *proto = val_jstr(p, "protocol");
		const json_t *cp = json_object_get(p, "containerPort");
		const json_t *hp = json_object_get(p, "hostPort");
		if (name && *name)
			port_name(c, ports, i, name, at);
		if (!port_num_ok(cp, true))
			check_port_num(
			    c, cp, val_path(f, "%s.ports[%zu].containerPort", ctr_base(b, at), i),
			    true);
		if (!port_num_ok(hp, false))
			check_port_num(c, hp,
				       val_path(f, "%s.ports[%zu].hostPort", ctr_base(b, at), i),
				       false);
		if (proto && !val_in_list(proto, port_protocols))
			val_not_supported(c,
					  val_path(f, "%s.ports[%zu].protocol", ctr_base(b, at), i),
					  proto, port_protocols);
	}
}

/* ---- downward API field selectors ------------------------------------------------ */

/* What a pod's fieldRef may name (kube's ConvertDownwardAPIFieldLabel),
 * and of those what an env var and a downward API file may. */
static const char *const field_labels[] = {
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.serviceAccountName",
    "spec.schedulerName",
    "status.phase",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
    NULL,
};
static const char *const env_field_paths[] = {
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
    NULL,
};
static const char *const volume_field_paths[] = {
    "metadata.annotations", "metadata.labels", "metadata.name",
    "metadata.namespace",   "metadata.uid",    NULL,
};

bool val_split_subscript(const char *fp, char *path, size_t plen, char *key, size_t klen)
{
	size_t n = strlen(fp);
	if (n < 2 || strcmp(fp + n - 2, "']") != 0)
		return false;
	const char *open = strstr(fp, "['");
	if (!open || open == fp || open + 2 > fp + n - 2)
		return false;
	snprintf(path, plen, "%.*s", (int)(open - fp), fp);
	snprintf(key, klen, "%.*s", (int)(fp + n - 2 - (open + 2)), open + 2);
	return true;
}

static void field_ref(json_t *c, const json_t *fr, const char *base, const char *const *allowed)
{
	char f[VAL_PATHLEN], path[VAL_PATHLEN], key[VAL_PATHLEN], msg[VAL_PATHLEN + 80];
	const char *av = val_jstr(fr, "apiVersion"), *fp = val_jstr(fr, "fieldPath");
	if (!av || !*av) {
		add_required(c, val_path(f, "%s.apiVersion", base));
		return;
	}
	if (!fp || !*fp) {
		add_required(c, val_path(f, "%s.fieldPath", base));
		return;
	}
	if (strcmp(av, "v1") != 0) {
		snprintf(msg, sizeof(msg),
			 "error converting fieldPath: unsupported pod version: %s", av);
		add_invalid_str(c, val_path(f, "%s.fieldPath", base), fp, msg);
		return;
	}
	if (val_split_subscript(fp, path, sizeof(path), key, sizeof(key))) {
		if (strcmp(path, "metadata.labels") != 0 &&
		    strcmp(path, "metadata.annotations") != 0) {
			snprintf(msg, sizeof(msg),
				 "error converting fieldPath: field label does not support "
				 "subscript: %s",
				 fp);
			add_invalid_str(c, val_path(f, "%s.fieldPath", base), fp, msg);
			return;
		}
		if (strcmp(path, "metadata.annotations") == 0)
			for (char *p = key; *p; p++)
				*p = (char)tolower((unsigned char)*p);
		check_name(c, names_msgs_qname, base, key);
		return;
	}
	const char *internal = strcmp(fp, "spec.host") == 0 ? "spec.nodeName" : fp;
	if (!val_in_list(internal, field_labels)) {
		snprintf(msg, sizeof(msg),
			 "error converting fieldPath: field label not supported: %s", fp);
		add_invalid_str(c, val_path(f, "%s.fieldPath", base), fp, msg);
		return;
	}
	if (!val_in_list(internal, allowed))
		val_not_supported(c, val_path(f, "%s.fieldPath", base), internal, allowed);
}

static void env_value_from(json_t *c, const json_t *e, const char *base)
{
	static const char *const sources[] = {"fieldRef", "resourceFieldRef", "configMapKeyRef",
					      "secretKeyRef"};
	const json_t *vf = json_object_get(e, "valueFrom");
	if (!vf)
		return;
	char f[VAL_PATHLEN];
	int n = 0;
	for (size_t k = 0; k < KB_ARRAY_SIZE(sources); k++)
		n += json_object_get(vf, sources[k]) != NULL;
	const json_t *fr = json_object_get(vf, "fieldRef");
	if (fr)
		field_ref(c, fr, val_path(f, "%s.valueFrom.fieldRef", base), env_field_paths);
	const char *value = val_jstr(e, "value");
	if (n == 0)
		add_invalid_str(c, val_path(f, "%s.valueFrom", base), "",
				"must specify one of: `fieldRef`, `resourceFieldRef`, "
				"`configMapKeyRef` or `secretKeyRef`");
	else if (value && *value)
		add_invalid_str(c, val_path(f, "%s.valueFrom", base), "",
				"may not be specified when `value` is not empty");
	else if (n > 1)
		add_invalid_str(c, val_path(f, "%s.valueFrom", base), "",
				"may not have more than one field specified at a time");
}

/* Whether env var e takes its value from a field env_value_from accepts
 * without a cause: a fieldRef alone, of v1, naming one of the fields an env
 * var may name, with no value beside it (as most such vars are); its paths
 * are then not written. */
static bool env_field_ref_plain(const json_t *e, const json_t *vf)
{
	const json_t *fr = json_object_get(vf, "fieldRef");
	const char *av = val_jstr(fr, "apiVersion"), *fp = val_jstr(fr, "fieldPath");
	const char *value = val_jstr(e, "value");
	return fr && json_object_size(vf) == 1 && (!value || !*value) && av &&
	       strcmp(av, "v1") == 0 && fp && val_in_list(fp, env_field_paths);
}

static void downward_items(json_t *c, const json_t *src, const char *base)
{
	char f[VAL_PATHLEN];
	size_t i;
	json_t *it;
	json_array_foreach (json_object_get(src, "items"), i, it) {
		const json_t *fr = json_object_get(it, "fieldRef");
		if (fr)
			field_ref(c, fr, val_path(f, "%s.items[%zu].fieldRef", base, i),
				  volume_field_paths);
	}
}

/* The downward API items of the volumes of the pod spec at path. */
static void pod_volumes(json_t *c, const json_t *vols, const char *path)
{
	char f[VAL_PATHLEN];
	size_t i, j;
	json_t *v, *src;
	json_array_foreach (vols, i, v) {
		const json_t *da = json_object_get(v, "downwardAPI");
		const json_t *srcs = json_object_get(json_object_get(v, "projected"), "sources");
		if (da)
			downward_items(c, da, val_path(f, "%s.volumes[%zu].downwardAPI", path, i));
		json_array_foreach (srcs, j, src) {
			da = json_object_get(src, "downwardAPI");
			if (da)
				downward_items(
				    c, da,
				    val_path(f,
					     "%s.volumes[%zu].projected.sources[%zu].downwardAPI",
					     path, i, j));
		}
	}
}

static void container_env(json_t *c, const json_t *env, const struct ctr_at *at)
{
	char f[VAL_PATHLEN], b[VAL_PATHLEN];
	size_t i;
	json_t *e;
	json_array_foreach (env, i, e) {
		const char *name = val_jstr(e, "name");
		if (!name || !*name) {
			add_required(c, val_path(f, "%s.env[%zu].name", ctr_base(b, at), i));
			continue;
		}
		for (const char *p = name; *p; p++)
			if (*p < 32 || *p > 126 || *p == '=') {
				add_invalid_str(
				    c, val_path(f, "%s.env[%zu].name", ctr_base(b, at), i), name,
				    "a valid environment variable name must "
				    "consist only of printable ASCII characters other than '='");
				break;
			}
		const json_t *vf = json_object_get(e, "valueFrom");
		if (vf && !env_field_ref_plain(e, vf))
			env_value_from(c, e, val_path(f, "%s.env[%zu]", ctr_base(b, at), i));
	}
}

/* A resource list's quantities: valid, not negative, and whole for the
 * extended resources (kube's ValidateResourceQuantityValue: an extended
 * resource is an integer resource, "must be an integer"). A cause's field is
 * "<base><sub>[<resource>]", base the container's place when at is given (made
 * only for a cause: most lists have none). */
/* The values resource_list_at read (by their strings, which the object
 * keeps), for a request's comparison with its limit. */
struct qty_seen {
	const char *s[16];
	double v[16];
	size_t n;
};

/* The value of s: read again unless seen holds it. 0 or -EINVAL. */
static int qty_value(const struct qty_seen *seen, const char *s, double *v)
{
	for (size_t i = 0; i < seen->n; i++)
		if (seen->s[i] == s) {
			*v = seen->v[i];
			return 0;
		}
	return s ? kb_quantity_parse(s, v) : -EINVAL;
}

static void resource_list_at(json_t *c, const json_t *list, const struct ctr_at *at,
			     const char *base, const char *sub, struct qty_seen *seen)
{
	char f[VAL_PATHLEN], b[VAL_PATHLEN];
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)list, k, v) {
		double q;
		const char *s = json_is_string(v) ? json_string_value(v) : NULL, *why = NULL;
		int64_t m;
		bool parsed = s && kb_quantity_parse(s, &q) == 0;
		if (!parsed)
			why = QTY_REGEX_MSG;
		else if (q < 0)
			why = "must be greater than or equal to 0";
		else if (qty_extended(k) && (qty_parse(v, &m) < 0 || m % 1000 != 0))
			why = "must be an integer";
		if (parsed && seen && seen->n < KB_ARRAY_SIZE(seen->s)) {
			seen->s[seen->n] = s;
			seen->v[seen->n++] = q;
		}
		if (why) {
			if (at && !base)
				base = ctr_base(b, at);
			add_invalid_str(c, val_path(f, "%s%s[%s]", base, sub, k), s, why);
		}
	}
}

static void resource_list(json_t *c, const json_t *list, const char *base, const char *sub)
{
	resource_list_at(c, list, NULL, base, sub, NULL);
}

/* A quantity in kube's canonical form ("4", "500m", "1Gi"), for messages. */
static const char *canonical(const char *s, char *buf, size_t len)
{
	json_t *j = json_string(s);
	int64_t m;
	if (j && qty_parse(j, &m) == 0)
		qty_format(m, qty_binary(j), buf, len);
	else
		snprintf(buf, len, "%s", s);
	json_decref(j);
	return buf;
}

/*
 * kube's validateResourceRequirements (pkg/apis/core/validation/
 * validation.go): a request may not exceed its limit; a resource that may
 * not be overcommitted (every extended resource, GPUs included, and
 * hugepages: helper.IsOvercommitAllowed) must have a limit, and its request
 * must equal it. The causes name the requests or limits map, as kube's do.
 */
static const char *resources_path(char *f, const struct ctr_at *at, const char *which)
{
	char b[VAL_PATHLEN];
	return val_path(f, "%s.resources.%s", ctr_base(b, at), which);
}

static void container_resources(json_t *c, const json_t *res, const struct ctr_at *at)
{
	char f[VAL_PATHLEN];
	const json_t *lim = json_object_get(res, "limits"), *req = json_object_get(res, "requests");
	const char *k;
	json_t *v;
	struct qty_seen seen = {.n = 0};
	resource_list_at(c, lim, at, NULL, ".resources.limits", &seen);
	resource_list_at(c, req, at, NULL, ".resources.requests", &seen);
	json_object_foreach ((json_t *)req, k, v) {
		const char *l = val_jstr(lim, k), *q = json_string_value(v);
		bool over = qty_overcommit_allowed(k);
		char msg[256], a[64], b[64];
		double qv, lv;
		int cmp;
		if (!l && !over) {
			val_add(c, "FieldValueRequired", resources_path(f, at, "limits"), "%s",
				"Limit must be set for non overcommitable resources");
			continue;
		}
		if (!l || !q || qty_value(&seen, q, &qv) < 0 || qty_value(&seen, l, &lv) < 0)
			continue;
		cmp = kb_quantity_cmp_values(qv, lv);
		if (cmp == 0 || (over && cmp < 0))
			continue;
		snprintf(msg, sizeof(msg), "must be %s %s limit of %s",
			 over ? "less than or equal to" : "equal to", k,
			 canonical(l, b, sizeof(b)));
		add_invalid_str(c, resources_path(f, at, "requests"), canonical(q, a, sizeof(a)),
				msg);
	}
}

/* kube's validatePodResourceName: a pod's spec.resources (PodLevelResources)
 * takes only cpu, memory and hugepages-*, never GPUs or other extended
 * resources. */
static void pod_level_resources(json_t *c, const json_t *spec, const char *path)
{
	static const char *const supported[] = {"cpu", "hugepages-", "memory", NULL};
	static const char *const sect[] = {"limits", "requests"};
	const json_t *res = json_object_get(spec, "resources");
	char f[VAL_PATHLEN];
	for (size_t s = 0; s < KB_ARRAY_SIZE(sect); s++) {
		const char *k;
		json_t *v;
		json_object_foreach (json_object_get(res, sect[s]), k, v) {
			if (strcmp(k, "cpu") == 0 || strcmp(k, "memory") == 0 ||
			    strncmp(k, "hugepages-", 10) == 0)
				continue;
			val_not_supported(c, val_path(f, "%s.resources.%s[%s]", path, sect[s], k),
					  k, supported);
		}
	}
}

struct names {
	const char *v[128];
	size_t n;
};

static bool names_seen(struct names *ns, const char *name)
{
	for (size_t i = 0; i < ns->n; i++)
		if (strcmp(ns->v[i], name) == 0)
			return true;
	if (ns->n < KB_ARRAY_SIZE(ns->v))
		ns->v[ns->n++] = name;
	return false;
}

/* Any container's name (unique among all the pod's), image and env. */
static void container_common(json_t *c, const json_t *ctr, const struct ctr_at *at,
			     struct names *ns)
{
	char f[VAL_PATHLEN], b[VAL_PATHLEN], q[300];
	const char *name = val_jstr(ctr, "name"), *image = val_jstr(ctr, "image");
	if (!name || !*name)
		add_required(c, val_path(f, "%s.name", ctr_base(b, at)));
	else if (names_dns1123_label(name))
		check_name(c, names_msgs_label, val_path(f, "%s.name", ctr_base(b, at)), name);
	else if (names_seen(ns, name))
		val_add(c, "FieldValueDuplicate", val_path(f, "%s.name", ctr_base(b, at)), "%s",
			val_quote(name, q, sizeof(q)));
	if (!image || !*image)
		add_required(c, val_path(f, "%s.image", ctr_base(b, at)));
	else if (isspace((unsigned char)image[0]) ||
		 isspace((unsigned char)image[strlen(image) - 1]))
		add_invalid_str(c, val_path(f, "%s.image", ctr_base(b, at)), image,
				"must not have leading or trailing whitespace");
	container_env(c, json_object_get(ctr, "env"), at);
}

/* The containers (or init containers: list) of the pod spec at path. */
static void containers(json_t *c, const json_t *arr, const char *path, const char *list,
		       struct names *ns)
{
	size_t i;
	json_t *ctr;
	json_array_foreach (arr, i, ctr) {
		const struct ctr_at at = {path, list, i};
		container_common(c, ctr, &at, ns);
		container_ports(c, json_object_get(ctr, "ports"), &at);
		container_resources(c, json_object_get(ctr, "resources"), &at);
	}
}

/* A Go zero value: absent, null, false, 0, "", or an empty array, or an
 * object of zero values (kube's "field is set" for the allow-lists). */
static bool zero_value(const json_t *v)
{
	if (!v || json_is_null(v) || json_is_false(v))
		return true;
	if (json_is_string(v))
		return json_string_length(v) == 0;
	if (json_is_integer(v))
		return json_integer_value(v) == 0;
	if (json_is_array(v))
		return json_array_size(v) == 0;
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach ((json_t *)v, k, x)
			if (!zero_value(x))
				return false;
		return true;
	}
	return false;
}

static bool has_container(const json_t *spec, const char *name)
{
	static const char *const lists[] = {"containers", "initContainers"};
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, lists[l]), i, c)
			if (val_jstr(c, "name") && strcmp(val_jstr(c, "name"), name) == 0)
				return true;
	}
	return false;
}

/* kube's validateEphemeralContainers: names unique among all containers, a
 * target that is one of the pod's others, none of what a pod relies on. */
static void ephemeral_containers(json_t *c, const json_t *spec, const char *path, struct names *ns)
{
	static const char *const forbidden[] = {"ports",         "resources",     "resizePolicy",
						"restartPolicy", "livenessProbe", "readinessProbe",
						"startupProbe",  "lifecycle"};
	static const char *const sub[] = {"subPath", "subPathExpr"};
	char f[VAL_PATHLEN], q[300];
	size_t i, j;
	json_t *ec, *vm;
	json_array_foreach (json_object_get(spec, "ephemeralContainers"), i, ec) {
		const char *target = val_jstr(ec, "targetContainerName");
		const struct ctr_at at = {path, "ephemeralContainers", i};
		container_common(c, ec, &at, ns);
		if (target && *target && !has_container(spec, target))
			val_add(
			    c, "FieldValueNotFound",
			    val_path(f, "%s.ephemeralContainers[%zu].targetContainerName", path, i),
			    "%s", val_quote(target, q, sizeof(q)));
		for (size_t k = 0; k < KB_ARRAY_SIZE(forbidden); k++)
			if (!zero_value(json_object_get(ec, forbidden[k])))
				val_add(c, "FieldValueForbidden",
					val_path(f, "%s.ephemeralContainers[%zu].%s", path, i,
						 forbidden[k]),
					"cannot be set for an Ephemeral Container");
		json_array_foreach (json_object_get(ec, "volumeMounts"), j, vm)
			for (size_t k = 0; k < KB_ARRAY_SIZE(sub); k++)
				if (!zero_value(json_object_get(vm, sub[k])))
					val_add(
					    c, "FieldValueForbidden",
					    val_path(
						f,
						"%s.ephemeralContainers[%zu].volumeMounts[%zu].%s",
						path, i, j, sub[k]),
					    "cannot be set for an Ephemeral Container");
	}
}

/* Existing ephemeral containers may be neither removed nor changed. */
static void ephemeral_update(json_t *c, const json_t *obj, const json_t *old)
{
	const json_t *na = json_object_get(json_object_get(obj, "spec"), "ephemeralContainers");
	size_t i, j;
	json_t *o, *n;
	json_array_foreach (json_object_get(json_object_get(old, "spec"), "ephemeralContainers"), i,
			    o) {
		const json_t *found = NULL;
		json_array_foreach (na, j, n)
			if (val_jstr(n, "name") && val_jstr(o, "name") &&
			    strcmp(val_jstr(n, "name"), val_jstr(o, "name")) == 0)
				found = n;
		if (!found)
			val_add(c, "FieldValueForbidden", "spec.ephemeralContainers",
				"existing ephemeral containers \"%s\" may not be removed\n",
				val_jstr(o, "name"));
		else if (!json_equal((json_t *)found, o))
			val_add(c, "FieldValueForbidden", "spec.ephemeralContainers",
				"existing ephemeral containers \"%s\" may not be changed\n",
				val_jstr(o, "name"));
	}
}

int val_pod_spec(const json_t *spec, const char *path, json_t *causes)
{
	size_t before = json_array_size(causes);
	char f[VAL_PATHLEN];
	struct names ns = {.n = 0};
	const json_t *ctrs = json_object_get(spec, "containers");
	containers(causes, json_object_get(spec, "initContainers"), path, "initContainers", &ns);
	if (json_array_size(ctrs) == 0)
		add_required(causes, val_path(f, "%s.containers", path));
	containers(causes, ctrs, path, "containers", &ns);
	ephemeral_containers(causes, spec, path, &ns);
	pod_level_resources(causes, spec, path);
	resource_list(causes, json_object_get(spec, "overhead"), path, ".overhead");
	pod_volumes(causes, json_object_get(spec, "volumes"), path);
	const char *rp = val_jstr(spec, "restartPolicy");
	if (rp && !val_in_list(rp, restart_policies))
		val_not_supported(causes, val_path(f, "%s.restartPolicy", path), rp,
				  restart_policies);
	json_t *ads = json_object_get(spec, "activeDeadlineSeconds");
	if (json_is_integer(ads) && json_integer_value(ads) <= 0)
		val_add(causes, "FieldValueInvalid", val_path(f, "%s.activeDeadlineSeconds", path),
			"%lld: must be greater than 0", (long long)json_integer_value(ads));
	return (int)(json_array_size(causes) - before);
}

/* ---- pod update ------------------------------------------------------------------ */

#define POD_UPDATE_MSG                                                                    \
	"pod updates may not change fields other than `spec.containers[*].image`,"        \
	"`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` " \
	"(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "  \
	"(allow it to be set to 1 if it was previously negative)"

static void copy_field(json_t *dst, const json_t *src, const char *key)
{
	json_t *v = json_object_get(src, key);
	if (v)
		json_object_set(dst, key, v);
	else
		json_object_del(dst, key);
}

static void munge_images(json_t *n, const json_t *o, const char *key)
{
	json_t *na = json_object_get(n, key), *oa = json_object_get(o, key);
	if (json_array_size(na) != json_array_size(oa))
		return;
	for (size_t i = 0; i < json_array_size(na); i++)
		copy_field(json_array_get(na, i), json_array_get(oa, i), "image");
}

/* True when every element of `sub` appears in `sup`. */
static bool subset(const json_t *sub, const json_t *sup)
{
	size_t i, j;
	json_t *a, *b;
	json_array_foreach (sub, i, a) {
		bool found = false;
		json_array_foreach (sup, j, b)
			found = found || json_equal(a, b);
		if (!found)
			return false;
	}
	return true;
}

static void pod_update(json_t *c, const json_t *obj, const json_t *old)
{
	const json_t *os = json_object_get(old, "spec");
	json_t *n = json_deep_copy(json_object_get(obj, "spec"));
	json_t *empty = json_object();
	if (!n || !empty)
		goto out;
	os = os ? os : empty;
	munge_images(n, os, "containers");
	munge_images(n, os, "initContainers");
	copy_field(n, os, "activeDeadlineSeconds");
	copy_field(n, os, "ephemeralContainers"); /* their own subresource's */
	if (subset(json_object_get(os, "tolerations"), json_object_get(n, "tolerations")))
		copy_field(n, os, "tolerations");
	if (subset(json_object_get(n, "schedulingGates"), json_object_get(os, "schedulingGates")))
		copy_field(n, os, "schedulingGates");
	json_t *ot = json_object_get(os, "terminationGracePeriodSeconds");
	json_t *nt = json_object_get(n, "terminationGracePeriodSeconds");
	if (json_integer_value(ot) < 0 && json_integer_value(nt) == 1)
		copy_field(n, os, "terminationGracePeriodSeconds");
	if (!json_equal(n, (json_t *)os))
		val_add(c, "FieldValueForbidden", "spec", "%s", POD_UPDATE_MSG);
out:
	json_decref(n);
	json_decref(empty);
}

static void v_pod(const struct proxy_resource *r, const json_t *obj, const json_t *old, json_t *c)
{
	(void)r;
	val_pod_spec(json_object_get(obj, "spec"), "spec", c);
	if (old) {
		pod_update(c, obj, old);
		ephemeral_update(c, obj, old);
	} else if (json_array_size(
		       json_object_get(json_object_get(obj, "spec"), "ephemeralContainers"))) {
		val_add(c, "FieldValueForbidden", "spec.ephemeralContainers",
			"cannot be set on create");
	}
}

/* ---- service ---------------------------------------------------------------------- */

static const char *const service_types[] = {
    "ClusterIP", "ExternalName", "LoadBalancer", "NodePort", NULL,
};

static void service_target_port(json_t *c, const json_t *tp, const char *field)
{
	if (json_is_string(tp))
		check_name(c, msgs_port_name, field, json_string_value(tp));
	else if (json_is_integer(tp) && json_integer_value(tp) != 0)
		check_port_num(c, tp, field, false);
}

static void service_port(json_t *c, const json_t *ports, size_t i, bool need_name)
{
	char f[VAL_PATHLEN], q[300];
	const json_t *p = json_array_get(ports, i);
	const char *name = val_jstr(p, "name");
	val_path(f, "spec.ports[%zu].name", i);
	if (need_name && (!name || !*name)) {
		add_required(c, f);
	} else if (name && *name) {
		check_name(c, names_msgs_label, f, name);
		for (size_t j = 0; j < i; j++) {
			const char *o = val_jstr(json_array_get(ports, j), "name");
			if (o && strcmp(o, name) == 0) {
				val_add(c, "FieldValueDuplicate", f, "%s",
					val_quote(name, q, sizeof(q)));
				break;
			}
		}
	}
	val_path(f, "spec.ports[%zu].port", i);
	const json_t *port = json_object_get(p, "port");
	long long pn = json_integer_value(port);
	if (!json_is_integer(port) || pn < 1 || pn > 65535)
		val_add(c, "FieldValueInvalid", f, "%lld: must be between 1 and 65535, inclusive",
			pn);
	val_path(f, "spec.ports[%zu].protocol", i);
	check_protocol(c, p, f);
	val_path(f, "spec.ports[%zu].targetPort", i);
	service_target_port(c, json_object_get(p, "targetPort"), f);
	val_path(f, "spec.ports[%zu].nodePort", i);
	check_port_num(c, json_object_get(p, "nodePort"), f, false);
}

static bool service_headless(const json_t *spec)
{
	const char *cip = val_jstr(spec, "clusterIP");
	return cip && strcmp(cip, "None") == 0;
}

/*
 * An update's cluster IPs, after kube's validateUpgradeDowngradeClusterIPs
 * (pkg/apis/core/validation/validation.go): no change of type from or to
 * ExternalName, or between headless Services, may change a cluster IP set
 * before (each reported as spec.clusterIPs[i] with the new list). The list
 * is the one kube's NormalizeClusterIPs (pkg/registry/core/service) makes:
 * a changed spec.clusterIP alone changes the primary cluster IP.
 */
static void service_cluster_ips_update(json_t *c, const json_t *spec, const json_t *ospec)
{
	const char *type = val_jstr(spec, "type"), *otype = val_jstr(ospec, "type");
	const char *cip = val_jstr(spec, "clusterIP"), *ocip = val_jstr(ospec, "clusterIP");
	const json_t *ips = json_object_get(spec, "clusterIPs");
	const json_t *oips = json_object_get(ospec, "clusterIPs");
	json_t *eff = json_deep_copy(ips);
	char f[VAL_PATHLEN];

	if ((type && strcmp(type, "ExternalName") == 0) ||
	    (otype && strcmp(otype, "ExternalName") == 0) ||
	    (service_headless(spec) && service_headless(ospec)))
		goto out;
	if (cip && ocip && strcmp(cip, ocip) != 0 && json_equal(ips, oips) &&
	    json_array_size(oips) == 1) {
		json_decref(eff);
		eff = json_pack("[s]", cip);
	}
	if (!eff || json_array_size(eff) == 0)
		goto out;
	for (size_t i = 0; i < json_array_size(oips) && i < json_array_size(eff); i++) {
		const char *a = json_string_value(json_array_get(oips, i));
		const char *b = json_string_value(json_array_get(eff, i));
		if (a && b && strcmp(a, b) != 0 &&
		    (i == 0 || json_array_size(oips) == json_array_size(eff)))
			val_invalid_strings(c, val_path(f, "spec.clusterIPs[%zu]", i), "[]string",
					    eff, "may not change once set");
	}
out:
	json_decref(eff);
}

static void v_service(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		      json_t *c)
{
	(void)r;
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *ports = json_object_get(spec, "ports");
	const char *type = val_jstr(spec, "type"), *cip = val_jstr(spec, "clusterIP");
	if (type && !val_in_list(type, service_types))
		val_not_supported(c, "spec.type", type, service_types);
	bool external = type && strcmp(type, "ExternalName") == 0;
	if (!external && json_array_size(ports) == 0 && !(cip && strcmp(cip, "None") == 0))
		add_required(c, "spec.ports");
	for (size_t i = 0; i < json_array_size(ports); i++)
		service_port(c, ports, i, json_array_size(ports) > 1);
	if (external && (!val_jstr(spec, "externalName") || !*val_jstr(spec, "externalName")))
		add_required(c, "spec.externalName");
	meta_labels(c, json_object_get(spec, "selector"), "spec.selector");
	if (old)
		service_cluster_ips_update(c, spec, json_object_get(old, "spec"));
}

/* ---- configmap / secret ------------------------------------------------------------ */

#define MAX_DATA_SIZE (1024 * 1024)

static size_t data_keys(json_t *c, const json_t *data, const char *base)
{
	char f[VAL_PATHLEN];
	const char *k;
	json_t *v;
	size_t total = 0;
	json_object_foreach ((json_t *)data, k, v) {
		val_path(f, "%s[%s]", base, k);
		check_name(c, names_msgs_config_key, f, k);
		total += json_is_string(v) ? strlen(json_string_value(v)) : 0;
	}
	return total;
}

static void immutable_data(json_t *c, const json_t *obj, const json_t *old)
{
	static const char *const keys[] = {"data", "binaryData", "stringData"};
	if (!old || !json_is_true(json_object_get(old, "immutable")))
		return;
	if (!json_is_true(json_object_get(obj, "immutable")))
		val_add(c, "FieldValueForbidden", "immutable",
			"field is immutable when `immutable` is set");
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		json_t *a = json_object_get(obj, keys[i]), *b = json_object_get(old, keys[i]);
		bool same =
		    (json_object_size(a) == 0 && json_object_size(b) == 0) || json_equal(a, b);
		if (!same && i < 2)
			val_add(c, "FieldValueForbidden", keys[i],
				"field is immutable when `immutable` is set");
	}
}

static void v_configmap(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			json_t *c)
{
	(void)r;
	const json_t *data = json_object_get(obj, "data"),
		     *bin = json_object_get(obj, "binaryData");
	size_t total = data_keys(c, data, "data") + data_keys(c, bin, "binaryData");
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)bin, k, v) {
		if (json_object_get(data, k)) {
			char f[VAL_PATHLEN];
			val_path(f, "binaryData[%s]", k);
			add_invalid_str(c, f, k, "duplicate of key present in data");
		}
	}
	if (total > MAX_DATA_SIZE)
		val_add(c, "FieldValueTooLong", "", "may not be more than %d bytes", MAX_DATA_SIZE);
	immutable_data(c, obj, old);
}

/* Required data keys per secret type. */
static const struct {
	const char *type, *key;
} secret_keys[] = {
    {"kubernetes.io/dockercfg", ".dockercfg"},
    {"kubernetes.io/dockerconfigjson", ".dockerconfigjson"},
    {"kubernetes.io/tls", "tls.crt"},
    {"kubernetes.io/tls", "tls.key"},
    {"kubernetes.io/ssh-auth", "ssh-privatekey"},
};

static size_t secret_values(json_t *c, const json_t *data)
{
	const char *k;
	json_t *v;
	size_t total = 0;
	json_object_foreach ((json_t *)data, k, v) {
		const char *s = json_string_value(v);
		unsigned char *dec = NULL;
		size_t dlen = 0;
		if (!s || kb_base64_decode(s, strlen(s), &dec, &dlen) < 0) {
			char f[VAL_PATHLEN];
			val_path(f, "data[%s]", k);
			add_invalid_str(c, f, s, "illegal base64 data");
			continue;
		}
		total += dlen;
		free(dec);
	}
	return total;
}

static void secret_type(json_t *c, const json_t *obj)
{
	const char *type = val_jstr(obj, "type");
	const json_t *data = json_object_get(obj, "data");
	char f[VAL_PATHLEN];
	if (!type)
		return;
	for (size_t i = 0; i < KB_ARRAY_SIZE(secret_keys); i++) {
		if (strcmp(type, secret_keys[i].type) != 0 ||
		    json_object_get(data, secret_keys[i].key))
			continue;
		val_path(f, "data[%s]", secret_keys[i].key);
		add_required(c, f);
	}
	if (strcmp(type, "kubernetes.io/service-account-token") == 0 &&
	    !val_jstr(json_object_get(json_object_get(obj, "metadata"), "annotations"),
		      "kubernetes.io/service-account.name"))
		add_required(c, "metadata.annotations[kubernetes.io/service-account.name]");
}

static void v_secret(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		     json_t *c)
{
	(void)r;
	const json_t *data = json_object_get(obj, "data");
	data_keys(c, data, "data");
	data_keys(c, json_object_get(obj, "stringData"), "stringData");
	size_t total = secret_values(c, data);
	if (total > MAX_DATA_SIZE)
		val_add(c, "FieldValueTooLong", "data", "may not be more than %d bytes",
			MAX_DATA_SIZE);
	secret_type(c, obj);
	if (old) {
		const char *nt = val_jstr(obj, "type"), *ot = val_jstr(old, "type");
		if (nt && ot && strcmp(nt, ot) != 0)
			add_invalid_str(c, "type", nt, "field is immutable");
	}
	immutable_data(c, obj, old);
}

/* ---- workloads ---------------------------------------------------------------------- */

/* The gogo-protobuf String() kube prints for a LabelSelector value. */
static char *selector_text(const json_t *sel)
{
	struct kb_buf b = {0};
	const char *k;
	json_t *v;
	kb_buf_puts(&b, "&LabelSelector{MatchLabels:map[string]string{");
	json_object_foreach (json_object_get(sel, "matchLabels"), k, v)
		kb_buf_printf(&b, "%s: %s,", k, json_is_string(v) ? json_string_value(v) : "");
	kb_buf_puts(&b, "},MatchExpressions:[]LabelSelectorRequirement{},}");
	return b.data;
}

/* Parses a LabelSelector into *out (sel_label_free it); false, with an
 * Invalid cause at `field`, when it does not parse. */
static bool parse_selector(json_t *c, const json_t *sel, const char *field, struct sel_label **out)
{
	char err[512] = "";
	*out = NULL;
	if (sel_label_from_object(sel, out, err, sizeof(err)) == 0)
		return true;
	char *t = selector_text(sel);
	val_add(c, "FieldValueInvalid", field, "%s: %s", t ? t : "", err);
	free(t);
	sel_label_free(*out);
	*out = NULL;
	return false;
}

static void template_labels(json_t *c, const json_t *sel, const json_t *tmpl, const char *base)
{
	char f[VAL_PATHLEN];
	struct sel_label *s = NULL;
	const json_t *labels = json_object_get(json_object_get(tmpl, "metadata"), "labels");
	val_path(f, "%s.selector", base);
	if (!parse_selector(c, sel, f, &s))
		return;
	if (!sel_label_empty(s) && !sel_label_match(s, labels)) {
		char *m = go_map(labels);
		val_path(f, "%s.template.metadata.labels", base);
		val_add(c, "FieldValueInvalid", f,
			"%s: `selector` does not match template `labels`", m ? m : "");
		free(m);
	}
	sel_label_free(s);
}

static void workload_template(json_t *c, const json_t *tmpl, const char *base,
			      const char *const *policies)
{
	char f[VAL_PATHLEN];
	const json_t *m = json_object_get(tmpl, "metadata"), *spec = json_object_get(tmpl, "spec");
	val_path(f, "%s.template.metadata.labels", base);
	meta_labels(c, json_object_get(m, "labels"), f);
	val_path(f, "%s.template.metadata.annotations", base);
	meta_annotations(c, json_object_get(m, "annotations"), f);
	val_path(f, "%s.template.spec", base);
	val_pod_spec(spec, f, c);
	const char *rp = val_jstr(spec, "restartPolicy");
	val_path(f, "%s.template.spec.restartPolicy", base);
	if (!policies[1] && rp && val_in_list(rp, restart_policies) && !val_in_list(rp, policies))
		val_not_supported(c, f, rp, policies);
}

/* Deployment, ReplicaSet, StatefulSet, DaemonSet. */
static void v_workload(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		       json_t *c)
{
	static const char *const always[] = {"Always", NULL};
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *sel = json_object_get(spec, "selector");
	char what[64];
	check_nonneg(c, spec, "replicas", "spec.replicas");
	check_nonneg(c, spec, "minReadySeconds", "spec.minReadySeconds");
	check_nonneg(c, spec, "revisionHistoryLimit", "spec.revisionHistoryLimit");
	if (!json_is_object(sel)) {
		add_required(c, "spec.selector");
	} else if (json_object_size(json_object_get(sel, "matchLabels")) +
		       json_array_size(json_object_get(sel, "matchExpressions")) ==
		   0) {
		char *t = selector_text(sel);
		snprintf(what, sizeof(what), "%s", r->kind);
		for (char *p = what; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		if (strcmp(what, "replicaset") == 0)
			snprintf(what, sizeof(what), "deployment");
		val_add(c, "FieldValueInvalid", "spec.selector",
			"%s: empty selector is invalid for %s", t ? t : "", what);
		free(t);
	} else {
		template_labels(c, sel, json_object_get(spec, "template"), "spec");
	}
	workload_template(c, json_object_get(spec, "template"), "spec", always);
	if (old) {
		const json_t *os = json_object_get(json_object_get(old, "spec"), "selector");
		if (sel && os && !json_equal(sel, os)) {
			char *t = selector_text(sel);
			val_add(c, "FieldValueInvalid", "spec.selector", "%s: field is immutable",
				t ? t : "");
			free(t);
		}
	}
}

/* kube's ValidateReplicationController: a selector (a map) that the
 * template's labels match, a template whose pods always restart. */
static void v_replication_controller(const struct proxy_resource *r, const json_t *obj,
				     const json_t *old, json_t *c)
{
	static const char *const always[] = {"Always", NULL};
	(void)r;
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *sel = json_object_get(spec, "selector");
	const json_t *tmpl = json_object_get(spec, "template");
	check_nonneg(c, spec, "replicas", "spec.replicas");
	check_nonneg(c, spec, "minReadySeconds", "spec.minReadySeconds");
	if (!json_object_size(sel)) {
		add_required(c, "spec.selector");
	} else {
		json_t *ls = json_pack("{s:O}", "matchLabels", sel);
		if (ls && json_is_object(tmpl))
			template_labels(c, ls, tmpl, "spec");
		json_decref(ls);
	}
	if (!json_is_object(tmpl))
		add_required(c, "spec.template");
	else
		workload_template(c, tmpl, "spec", always);
	(void)old;
}

static void v_pod_template(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			   json_t *c)
{
	static const char *const any[] = {"Always", "OnFailure", "Never", NULL};
	(void)r;
	(void)old;
	json_t *wrap = json_pack("{s:O}", "template", json_object_get(obj, "template"));
	if (wrap && json_is_object(json_object_get(obj, "template")))
		workload_template(c, json_object_get(wrap, "template"), "", any);
	json_decref(wrap);
}

/* ---- job / cronjob -------------------------------------------------------------------- */

static void job_spec(json_t *c, const json_t *spec, const char *base)
{
	static const char *const policies[] = {"OnFailure", "Never", NULL};
	static const char *const nonneg[] = {"parallelism", "completions", "backoffLimit"};
	char f[VAL_PATHLEN];
	for (size_t i = 0; i < KB_ARRAY_SIZE(nonneg); i++) {
		val_path(f, "%s.%s", base, nonneg[i]);
		check_nonneg(c, spec, nonneg[i], f);
	}
	const json_t *tmpl = json_object_get(spec, "template");
	const json_t *sel = json_object_get(spec, "selector");
	if (json_is_object(sel))
		template_labels(c, sel, tmpl, base);
	workload_template(c, tmpl, base, policies);
	const char *rp = val_jstr(json_object_get(tmpl, "spec"), "restartPolicy");
	val_path(f, "%s.template.spec.restartPolicy", base);
	if (!rp || !*rp)
		val_add(c, "FieldValueRequired", f, "valid values: \"OnFailure\", \"Never\"");
	else if (!val_in_list(rp, policies))
		val_not_supported(c, f, rp, policies);
}

static void v_job(const struct proxy_resource *r, const json_t *obj, const json_t *old, json_t *c)
{
	(void)r;
	const json_t *spec = json_object_get(obj, "spec");
	job_spec(c, spec, "spec");
	if (old) {
		const json_t *ns = json_object_get(spec, "selector");
		const json_t *os = json_object_get(json_object_get(old, "spec"), "selector");
		if (ns && os)
			immutable(c, ns, os, "spec.selector");
	}
}

/* One cron field: lists of "*", "?", "a", "a-b", each with an optional
 * "/step"; names allowed for months and weekdays. */
struct cron_bounds {
	int min, max;
	const char *const *names;
};

static int cron_num(const char *s, size_t n, const struct cron_bounds *b, int *out, char *buf,
		    size_t len)
{
	for (int i = 0; b->names && b->names[i]; i++)
		if (n == 3 && strncasecmp(s, b->names[i], 3) == 0) {
			*out = i + b->min;
			return 0;
		}
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%.*s", (int)n, s);
	char *end;
	long v = strtol(tmp, &end, 10);
	if (!n || *end || !isdigit((unsigned char)tmp[n - 1])) {
		snprintf(buf, len,
			 "failed to parse int from %s: strconv.Atoi: parsing \"%s\": "
			 "invalid syntax",
			 tmp, tmp);
		return -EINVAL;
	}
	if (v < 0) {
		snprintf(buf, len, "negative number (%ld) not allowed: %s", v, tmp);
		return -EINVAL;
	}
	*out = (int)v;
	return 0;
}

static int cron_range(const char *s, size_t n, const struct cron_bounds *b, char *buf, size_t len)
{
	char expr[128];
	snprintf(expr, sizeof(expr), "%.*s", (int)n, s);
	char *slash = strchr(expr, '/');
	int lo = b->min, hi = b->max, step = 1;
	if (slash && strchr(slash + 1, '/')) {
		snprintf(buf, len, "too many slashes: %s", expr);
		return -EINVAL;
	}
	size_t rl = slash ? (size_t)(slash - expr) : strlen(expr);
	char *dash = memchr(expr, '-', rl);
	if (!(rl == 1 && (expr[0] == '*' || expr[0] == '?'))) {
		if (dash && memchr(dash + 1, '-', rl - (size_t)(dash + 1 - expr))) {
			snprintf(buf, len, "too many hyphens: %s", expr);
			return -EINVAL;
		}
		if (cron_num(expr, dash ? (size_t)(dash - expr) : rl, b, &lo, buf, len) < 0)
			return -EINVAL;
		hi = lo;
		if (dash &&
		    cron_num(dash + 1, rl - (size_t)(dash + 1 - expr), b, &hi, buf, len) < 0)
			return -EINVAL;
		if (slash && !dash)
			hi = b->max;
	}
	if (slash &&
	    (cron_num(slash + 1, strlen(slash + 1), b, &step, buf, len) < 0 || step <= 0)) {
		snprintf(buf, len, "step of range should be a positive number: %s", expr);
		return -EINVAL;
	}
	if (lo < b->min) {
		snprintf(buf, len, "beginning of range (%d) below minimum (%d): %s", lo, b->min,
			 expr);
		return -EINVAL;
	}
	if (hi > b->max) {
		snprintf(buf, len, "end of range (%d) above maximum (%d): %s", hi, b->max, expr);
		return -EINVAL;
	}
	if (lo > hi) {
		snprintf(buf, len, "beginning of range (%d) beyond end of range (%d): %s", lo, hi,
			 expr);
		return -EINVAL;
	}
	return 0;
}

static int cron_field(const char *s, size_t n, const struct cron_bounds *b, char *buf, size_t len)
{
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != ',')
			continue;
		if (cron_range(s + start, i - start, b, buf, len) < 0)
			return -EINVAL;
		start = i + 1;
	}
	return 0;
}

static const char *cron_descriptor(const char *s, char *buf, size_t len)
{
	static const char *const ok[] = {"@yearly", "@annually", "@monthly", "@weekly",
					 "@daily",  "@midnight", "@hourly",  NULL};
	if (val_in_list(s, ok))
		return NULL;
	if (strncmp(s, "@every ", 7) == 0) {
		const char *d = s + 7;
		char *end;
		double v = strtod(d, &end);
		if (end != d && v >= 0 && *end && strspn(end, "nsuµmh0123456789.") == strlen(end))
			return NULL;
		snprintf(buf, len, "failed to parse duration %s: time: invalid duration \"%s\"", s,
			 d);
		return buf;
	}
	snprintf(buf, len, "unrecognized descriptor: %s", s);
	return buf;
}

const char *val_cron_schedule(const char *s, char *buf, size_t len)
{
	static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
					     "aug", "sep", "oct", "nov", "dec", NULL};
	static const char *const days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};
	static const struct cron_bounds bounds[5] = {
	    {0, 59, NULL}, {0, 23, NULL}, {1, 31, NULL}, {1, 12, months}, {0, 6, days},
	};
	const char *f[8];
	size_t fl[8], n = 0;
	if (!s)
		s = "";
	if (strncmp(s, "TZ=", 3) == 0 || strncmp(s, "CRON_TZ=", 8) == 0) {
		const char *sp = strchr(s, ' ');
		s = sp ? sp + 1 : "";
	}
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '@')
		return cron_descriptor(s, buf, len);
	for (const char *p = s; *p && n < 8;) {
		size_t l = strcspn(p, " \t");
		f[n] = p;
		fl[n++] = l;
		p += l;
		p += strspn(p, " \t");
	}
	if (n != 5) {
		struct kb_buf b = {0};
		for (size_t i = 0; i < n; i++)
			kb_buf_printf(&b, "%s%.*s", i ? " " : "", (int)fl[i], f[i]);
		snprintf(buf, len, "expected exactly 5 fields, found %zu: [%s]", n,
			 b.data ? b.data : "");
		kb_buf_free(&b);
		return buf;
	}
	for (size_t i = 0; i < 5; i++)
		if (cron_field(f[i], fl[i], &bounds[i], buf, len) < 0)
			return buf;
	return NULL;
}

static void v_cronjob(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		      json_t *c)
{
	static const char *const conc[] = {"Allow", "Forbid", "Replace", NULL};
	(void)r;
	const json_t *spec = json_object_get(obj, "spec");
	const char *name = val_jstr(json_object_get(obj, "metadata"), "name");
	const char *sched = val_jstr(spec, "schedule"), *cp = val_jstr(spec, "concurrencyPolicy");
	char buf[512];
	if (name && strlen(name) > 52)
		add_invalid_str(c, "metadata.name", name, "must be no more than 52 characters");
	if (!sched || !*sched) {
		add_required(c, "spec.schedule");
	} else {
		if (val_cron_schedule(sched, buf, sizeof(buf)))
			add_invalid_str(c, "spec.schedule", sched, buf);
		const char *osched =
		    old ? val_jstr(json_object_get(old, "spec"), "schedule") : NULL;
		bool allow_tz = osched && strstr(osched, "TZ");
		if (strstr(sched, "TZ") && allow_tz && json_object_get(spec, "timeZone"))
			add_invalid_str(
			    c, "spec.schedule", sched,
			    "cannot use both timeZone field and TZ or CRON_TZ in schedule");
		else if (strstr(sched, "TZ") && !allow_tz)
			add_invalid_str(
			    c, "spec.schedule", sched,
			    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead");
	}
	const char *tz = val_jstr(spec, "timeZone");
	if (tz && (!*tz || strpbrk(tz, " \t") || tz[0] == '/' || strstr(tz, "..")))
		add_invalid_str(c, "spec.timeZone", tz, "unknown time zone");
	if (cp && !val_in_list(cp, conc))
		val_not_supported(c, "spec.concurrencyPolicy", cp, conc);
	check_nonneg(c, spec, "startingDeadlineSeconds", "spec.startingDeadlineSeconds");
	check_nonneg(c, spec, "successfulJobsHistoryLimit", "spec.successfulJobsHistoryLimit");
	check_nonneg(c, spec, "failedJobsHistoryLimit", "spec.failedJobsHistoryLimit");
	const json_t *jt = json_object_get(spec, "jobTemplate");
	if (!json_is_object(jt))
		add_required(c, "spec.jobTemplate");
	else
		job_spec(c, json_object_get(jt, "spec"), "spec.jobTemplate.spec");
}

/* ---- the rest of core ------------------------------------------------------------------ */

static void v_event(const struct proxy_resource *r, const json_t *obj, const json_t *old, json_t *c)
{
	(void)r;
	(void)old;
	const json_t *io = json_object_get(obj, "involvedObject");
	const char *ns = val_jstr(json_object_get(obj, "metadata"), "namespace");
	const char *ions = val_jstr(io, "namespace");
	if (!json_is_object(io)) {
		add_required(c, "involvedObject");
		return;
	}
	if ((!ions || !*ions) ? (ns && *ns && strcmp(ns, "default") != 0)
			      : (!ns || strcmp(ns, ions) != 0))
		add_invalid_str(c, "involvedObject.namespace", ions ? ions : "",
				"does not match event.namespace");
}

static void v_pvc(const struct proxy_resource *r, const json_t *obj, const json_t *old, json_t *c)
{
	static const char *const modes[] = {"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce",
					    "ReadWriteOncePod", NULL};
	(void)r;
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *am = json_object_get(spec, "accessModes");
	size_t i;
	json_t *m;
	if (json_array_size(am) == 0)
		val_add(c, "FieldValueRequired", "spec.accessModes",
			"at least 1 access mode is required");
	json_array_foreach (am, i, m)
		if (!val_in_list(json_string_value(m), modes))
			val_not_supported(c, "spec.accessModes", json_string_value(m), modes);
	const char *st =
	    val_jstr(json_object_get(json_object_get(spec, "resources"), "requests"), "storage");
	double q;
	if (!st)
		add_required(c, "spec.resources[storage]");
	else if (kb_quantity_parse(st, &q) < 0)
		add_invalid_str(c, "spec.resources[storage]", st, QTY_REGEX_MSG);
	else if (q <= 0)
		add_invalid_str(c, "spec.resources[storage]", st, "must be greater than zero");
	if (old) {
		json_t *a = json_deep_copy(spec), *b = json_deep_copy(json_object_get(old, "spec"));
		if (a && b) {
			json_object_del(a, "resources");
			json_object_del(b, "resources");
			json_object_del(a, "volumeAttributesClassName");
			json_object_del(b, "volumeAttributesClassName");
			/* volumeName may be filled in once by binding */
			if (!val_jstr(b, "volumeName"))
				json_object_del(a, "volumeName");
			if (!json_equal(a, b))
				val_add(c, "FieldValueForbidden", "spec",
					"spec is immutable after "
					"creation except resources.requests and "
					"volumeAttributesClassName for bound claims");
		}
		json_decref(a);
		json_decref(b);
	}
}

/* A PersistentVolume's volume source, in the order kube's validation reads
 * them (a second one is the Forbidden one), with its required fields. */
static const struct {
	const char *key, *required[3];
} pv_sources[] = {
    {"hostPath", {"path"}},
    {"gcePersistentDisk", {"pdName"}},
    {"awsElasticBlockStore", {"volumeID"}},
    {"glusterfs", {"endpoints", "path"}},
    {"flocker", {NULL}},
    {"nfs", {"server", "path"}},
    {"rbd", {"monitors", "image"}},
    {"quobyte", {"registry", "volume"}},
    {"cephfs", {"monitors"}},
    {"iscsi", {"targetPortal", "iqn"}},
    {"cinder", {"volumeID"}},
    {"fc", {NULL}},
    {"flexVolume", {"driver"}},
    {"azureFile", {"secretName", "shareName"}},
    {"vsphereVolume", {"volumePath"}},
    {"photonPersistentDisk", {"pdID"}},
    {"portworxVolume", {"volumeID"}},
    {"azureDisk", {"diskName", "diskURI"}},
    {"scaleIO", {"gateway", "system", "secretRef"}},
    {"local", {"path"}},
    {"storageos", {NULL}},
    {"csi", {"driver", "volumeHandle"}},
};

/* kube's ValidatePersistentVolume and ValidatePersistentVolumeUpdate, the
 * parts a tenant meets: access modes, capacity, class, volume mode, reclaim
 * policy, exactly one volume source with its required fields, and what is
 * immutable. */
static void v_pv(const struct proxy_resource *r, const json_t *obj, const json_t *old, json_t *c)
{
	static const char *const modes[] = {"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce",
					    "ReadWriteOncePod", NULL};
	static const char *const vmodes[] = {"Block", "Filesystem", NULL};
	static const char *const policies[] = {"Delete", "Recycle", "Retain", NULL};
	static const char *const storage[] = {"storage", NULL};
	(void)r;
	char f[VAL_PATHLEN];
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *am = json_object_get(spec, "accessModes");
	size_t i, rwop = 0;
	json_t *m;
	if (json_array_size(am) == 0)
		add_required(c, "spec.accessModes");
	json_array_foreach (am, i, m) {
		if (!val_in_list(json_string_value(m), modes))
			val_not_supported(c, "spec.accessModes", json_string_value(m), modes);
		rwop +=
		    json_string_value(m) && strcmp(json_string_value(m), "ReadWriteOncePod") == 0;
	}
	if (rwop && rwop < json_array_size(am))
		val_add(c, "FieldValueForbidden", "spec.accessModes",
			"may not use ReadWriteOncePod with other access modes");
	const json_t *cap = json_object_get(spec, "capacity");
	const char *k;
	json_t *q;
	if (json_object_size(cap) == 0)
		add_required(c, "spec.capacity");
	else if (!json_object_get(cap, "storage") || json_object_size(cap) > 1)
		json_object_foreach ((json_t *)cap, k, q)
			if (strcmp(k, "storage") != 0)
				val_not_supported(c, "spec.capacity", k, storage);
	json_object_foreach ((json_t *)cap, k, q) {
		double v = json_number_value(q);
		char num[64];
		const char *qs = json_string_value(q);
		if (json_is_number(q)) { /* a YAML number is a quantity too */
			snprintf(num, sizeof(num), "%g", v);
			qs = num;
		}
		val_path(f, "spec.capacity[%s]", k);
		if (!qs || (json_is_string(q) && kb_quantity_parse(qs, &v) < 0))
			add_invalid_str(c, f, qs ? qs : "", QTY_REGEX_MSG);
		else if (v <= 0)
			add_invalid_str(c, f, qs, "must be greater than zero");
	}
	const char *cls = val_jstr(spec, "storageClassName");
	if (cls && *cls)
		check_name(c, names_msgs_subdomain, "spec.storageClassName", cls);
	const char *vm = val_jstr(spec, "volumeMode");
	if (vm && !val_in_list(vm, vmodes))
		val_not_supported(c, "spec.volumeMode", vm, vmodes);
	const char *pol = val_jstr(spec, "persistentVolumeReclaimPolicy");
	if (pol && *pol && !val_in_list(pol, policies))
		val_not_supported(c, "spec.persistentVolumeReclaimPolicy", pol, policies);
	size_t nsrc = 0;
	for (i = 0; i < KB_ARRAY_SIZE(pv_sources); i++) {
		const json_t *src = json_object_get(spec, pv_sources[i].key);
		if (!src || json_is_null(src))
			continue;
		if (nsrc++) {
			val_path(f, "spec.%s", pv_sources[i].key);
			val_add(c, "FieldValueForbidden", f,
				"may not specify more than 1 volume type");
			continue;
		}
		for (size_t j = 0; j < KB_ARRAY_SIZE(pv_sources[i].required); j++) {
			const char *want = pv_sources[i].required[j];
			const json_t *v = want ? json_object_get(src, want) : NULL;
			if (!want)
				break;
			if (!v || (json_is_string(v) && !*json_string_value(v)) ||
			    (json_is_array(v) && !json_array_size(v))) {
				val_path(f, "spec.%s.%s", pv_sources[i].key, want);
				add_required(c, f);
			}
		}
		if (strcmp(pv_sources[i].key, "nfs") == 0 && val_jstr(src, "path") &&
		    *val_jstr(src, "path") && val_jstr(src, "path")[0] != '/')
			add_invalid_str(c, "spec.nfs.path", val_jstr(src, "path"),
					"must be an absolute path");
		if (strcmp(pv_sources[i].key, "local") == 0 &&
		    !json_object_get(spec, "nodeAffinity"))
			val_add(c, "FieldValueRequired", "spec.nodeAffinity",
				"Local volume requires node affinity");
	}
	if (!nsrc)
		val_add(c, "FieldValueRequired", "spec", "must specify a volume type");
	if (!old)
		return;
	const json_t *ospec = json_object_get(old, "spec");
	for (i = 0; i < KB_ARRAY_SIZE(pv_sources); i++) {
		const json_t *a = json_object_get(spec, pv_sources[i].key);
		const json_t *b = json_object_get(ospec, pv_sources[i].key);
		if (!kb_json_same(a, b)) {
			val_add(c, "FieldValueForbidden", "spec.persistentvolumesource",
				"spec.persistentvolumesource is immutable after creation");
			break;
		}
	}
	/* kube names these two without "spec." */
	if (!kb_json_same(json_object_get(spec, "volumeMode"),
			  json_object_get(ospec, "volumeMode")))
		immutable(c, json_object_get(spec, "volumeMode"),
			  json_object_get(ospec, "volumeMode"), "volumeMode");
	if (json_object_get(ospec, "nodeAffinity") &&
	    !kb_json_same(json_object_get(spec, "nodeAffinity"),
			  json_object_get(ospec, "nodeAffinity")))
		immutable(c, json_object_get(spec, "nodeAffinity"),
			  json_object_get(ospec, "nodeAffinity"), "nodeAffinity");
}

static void v_endpoints(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			json_t *c)
{
	(void)r;
	(void)old;
	char f[VAL_PATHLEN];
	size_t i, j;
	json_t *s, *x;
	json_array_foreach (json_object_get(obj, "subsets"), i, s) {
		json_array_foreach (json_object_get(s, "addresses"), j, x) {
			val_path(f, "subsets[%zu].addresses[%zu].ip", i, j);
			if (!val_jstr(x, "ip") || !*val_jstr(x, "ip"))
				add_required(c, f);
		}
		json_array_foreach (json_object_get(s, "ports"), j, x) {
			val_path(f, "subsets[%zu].ports[%zu].port", i, j);
			check_port_num(c, json_object_get(x, "port"), f, true);
			val_path(f, "subsets[%zu].ports[%zu].protocol", i, j);
			check_protocol(c, x, f);
		}
	}
}

/* ---- discovery/v1 EndpointSlice --------------------------------------------------- */

static const char *const address_types[] = {"FQDN", "IPv4", "IPv6", NULL};

/* ValidateNonSpecialIP on a parsed address (4 or 16 bytes). */
static void non_special_ip(json_t *c, const char *f, const char *a, const unsigned char *b, bool v6)
{
	static const unsigned char zero[16];
	char m[64];
	if (memcmp(b, zero, v6 ? 16 : 4) == 0) {
		snprintf(m, sizeof(m), "may not be unspecified (%s)", a);
		add_invalid_str(c, f, a, m);
	}
	if (v6 ? (memcmp(b, zero, 15) == 0 && b[15] == 1) : b[0] == 127)
		add_invalid_str(c, f, a, "may not be in the loopback range (127.0.0.0/8, ::1/128)");
	if (v6 ? (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) : (b[0] == 169 && b[1] == 254))
		add_invalid_str(c, f, a,
				"may not be in the link-local range (169.254.0.0/16, fe80::/10)");
	if (v6 ? (b[0] == 0xff && (b[1] & 0x0f) == 2) : (b[0] == 224 && b[1] == 0 && b[2] == 0))
		add_invalid_str(c, f, a,
				"may not be in the link-local multicast range (224.0.0.0/24, "
				"ff02::/10)");
}

/* One address of an endpoint, checked against the slice's addressType. */
static void slice_address(json_t *c, const char *f, const char *type, const char *a)
{
	unsigned char b[16];
	if (strcmp(type, "IPv4") == 0 || strcmp(type, "IPv6") == 0) {
		bool v6 = type[3] == '6';
		if (inet_pton(v6 ? AF_INET6 : AF_INET, a, b) != 1)
			add_invalid_str(c, f, a,
					v6 ? "must be a valid IPv6 address"
					   : "must be a valid IPv4 address");
		else
			non_special_ip(c, f, a, b, v6);
	} else if (strcmp(type, "FQDN") == 0) {
		char name[300];
		snprintf(name, sizeof(name), "%s", a);
		size_t n = strlen(name);
		if (n && name[n - 1] == '.')
			name[n - 1] = '\0';
		if (!*a)
			add_required(c, f);
		else if (names_dns1123_subdomain(name))
			check_name(c, names_msgs_subdomain, f, name);
		else if (!strchr(name, '.'))
			add_invalid_str(
			    c, f, name,
			    "should be a domain with at least two segments separated by dots");
	}
}

static void slice_endpoints(json_t *c, const json_t *eps, const char *type)
{
	char f[VAL_PATHLEN];
	size_t i, j;
	json_t *ep, *a;
	if (json_array_size(eps) > 1000) {
		val_add(c, "FieldValueTooMany", "endpoints", "%zu: must have at most 1000 items",
			json_array_size(eps));
		return;
	}
	json_array_foreach (eps, i, ep) {
		const json_t *addrs = json_object_get(ep, "addresses");
		val_path(f, "endpoints[%zu].addresses", i);
		if (json_array_size(addrs) == 0)
			val_add(c, "FieldValueRequired", f, "must contain at least 1 address");
		else if (json_array_size(addrs) > 100)
			val_add(c, "FieldValueTooMany", f, "%zu: must have at most 100 items",
				json_array_size(addrs));
		json_array_foreach (addrs, j, a) {
			val_path(f, "endpoints[%zu].addresses[%zu]", i, j);
			slice_address(c, f, type ? type : "",
				      json_string_value(a) ? json_string_value(a) : "");
		}
		const char *h = val_jstr(ep, "hostname");
		if (h) {
			val_path(f, "endpoints[%zu].hostname", i);
			check_name(c, names_msgs_label, f, h);
		}
	}
}

static void slice_ports(json_t *c, const json_t *ports)
{
	char f[VAL_PATHLEN], q[300];
	size_t i, j;
	json_t *p;
	if (json_array_size(ports) > 100) {
		val_add(c, "FieldValueTooMany", "ports", "%zu: must have at most 100 items",
			json_array_size(ports));
		return;
	}
	json_array_foreach (ports, i, p) {
		const char *name = val_jstr(p, "name") ? val_jstr(p, "name") : "";
		val_path(f, "ports[%zu].name", i);
		if (*name)
			check_name(c, names_msgs_label, f, name);
		for (j = 0; j < i; j++) {
			const char *other = val_jstr(json_array_get(ports, j), "name");
			if (strcmp(other ? other : "", name) == 0) {
				val_add(c, "FieldValueDuplicate", f, "%s",
					val_quote(name, q, sizeof(q)));
				break;
			}
		}
		val_path(f, "ports[%zu].protocol", i);
		if (!val_jstr(p, "protocol"))
			add_required(c, f);
		else
			check_protocol(c, p, f);
		const char *ap = val_jstr(p, "appProtocol");
		if (ap) {
			val_path(f, "ports[%zu].appProtocol", i);
			check_name(c, names_msgs_qname, f, ap);
		}
	}
}

static void v_endpointslice(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			    json_t *c)
{
	(void)r;
	const char *type = val_jstr(obj, "addressType");
	if (!type || !*type)
		add_required(c, "addressType");
	else if (!val_in_list(type, address_types))
		val_not_supported(c, "addressType", type, address_types);
	slice_endpoints(c, json_object_get(obj, "endpoints"), type);
	slice_ports(c, json_object_get(obj, "ports"));
	if (old)
		immutable(c, json_object_get(obj, "addressType"),
			  json_object_get(old, "addressType"), "addressType");
}

static void v_quota(const struct proxy_resource *r, const json_t *obj, const json_t *old, json_t *c)
{
	(void)r;
	(void)old;
	resource_list(c, json_object_get(json_object_get(obj, "spec"), "hard"), "spec.hard", "");
}

/* One resource of a LimitRange item: the quantities found in each of its
 * lists (NULL when absent). */
struct lr_values {
	const char *s[5]; /* max, min, default, defaultRequest, maxLimitRequestRatio */
	double q[5];
};

enum { LR_MAX, LR_MIN, LR_DEFAULT, LR_DEFREQ, LR_RATIO };
static const char *const lr_lists[5] = {"max", "min", "default", "defaultRequest",
					"maxLimitRequestRatio"};

/* "a value X is greater than b value Y" on the field of list `at`. */
static void lr_order(json_t *c, const char *item, const char *k, const struct lr_values *v, int lo,
		     int hi, int at, const char *lo_name, const char *hi_name)
{
	if (!v->s[lo] || !v->s[hi] || v->q[lo] <= v->q[hi])
		return;
	char f[VAL_PATHLEN], msg[256];
	val_path(f, "%s.%s[%s]", item, lr_lists[at], k);
	snprintf(msg, sizeof(msg), "%s value %s is greater than %s value %s", lo_name, v->s[lo],
		 hi_name, v->s[hi]);
	add_invalid_str(c, f, v->s[at], msg);
}

/* kube's consistency rules between the lists of one resource. */
static void lr_resource(json_t *c, const char *item, const char *k, const struct lr_values *v)
{
	char f[VAL_PATHLEN], msg[256];
	lr_order(c, item, k, v, LR_MIN, LR_MAX, LR_MIN, "min", "max");
	lr_order(c, item, k, v, LR_MIN, LR_DEFREQ, LR_DEFREQ, "min", "default request");
	lr_order(c, item, k, v, LR_DEFREQ, LR_MAX, LR_DEFREQ, "default request", "max");
	lr_order(c, item, k, v, LR_DEFREQ, LR_DEFAULT, LR_DEFREQ, "default request",
		 "default limit");
	lr_order(c, item, k, v, LR_MIN, LR_DEFAULT, LR_DEFAULT, "min", "default");
	lr_order(c, item, k, v, LR_DEFAULT, LR_MAX, LR_DEFAULT, "default", "max");
	if (v->s[LR_RATIO] && v->q[LR_RATIO] < 1) {
		val_path(f, "%s.maxLimitRequestRatio[%s]", item, k);
		snprintf(msg, sizeof(msg), "ratio %s is less than 1", v->s[LR_RATIO]);
		add_invalid_str(c, f, v->s[LR_RATIO], msg);
	}
	if (v->s[LR_RATIO] && v->s[LR_MIN] && v->s[LR_MAX] && v->q[LR_MIN] > 0 &&
	    v->q[LR_RATIO] > v->q[LR_MAX] / v->q[LR_MIN]) {
		val_path(f, "%s.maxLimitRequestRatio[%s]", item, k);
		snprintf(msg, sizeof(msg), "ratio %s is greater than max/min = %f", v->s[LR_RATIO],
			 v->q[LR_MAX] / v->q[LR_MIN]);
		add_invalid_str(c, f, v->s[LR_RATIO], msg);
	}
	/* resources that cannot be overcommitted (GPUs, hugepages...): the
	 * default limit and request must be equal */
	if (!qty_overcommit_allowed(k) && v->s[LR_DEFAULT] && v->s[LR_DEFREQ] &&
	    v->q[LR_DEFAULT] != v->q[LR_DEFREQ]) {
		val_path(f, "%s.defaultRequest[%s]", item, k);
		snprintf(msg, sizeof(msg),
			 "default value %s must equal to defaultRequest value %s in %s",
			 v->s[LR_DEFAULT], v->s[LR_DEFREQ], k);
		add_invalid_str(c, f, v->s[LR_DEFREQ], msg);
	}
}

/* One item of spec.limits (kube's ValidateLimitRange). */
static void lr_item(json_t *c, const json_t *l, size_t i)
{
	static const char *const types[] = {"Pod", "Container", "PersistentVolumeClaim", NULL};
	char item[VAL_PATHLEN], f[VAL_PATHLEN];
	val_path(item, "spec.limits[%zu]", i);
	const char *type = val_jstr(l, "type");
	val_path(f, "%s.type", item);
	if (!type || !*type) {
		add_required(c, f);
	} else if (!strchr(type, '/')) {
		bool known = false;
		for (size_t t = 0; types[t]; t++)
			known = known || strcmp(type, types[t]) == 0;
		if (!known)
			add_invalid_str(c, f, type,
					"must be a standard limit type or fully qualified");
	}
	bool pod = type && strcmp(type, "Pod") == 0;
	for (int li = LR_DEFAULT; pod && li <= LR_DEFREQ; li++) {
		const json_t *list = json_object_get(l, lr_lists[li]);
		if (json_object_size(list) > 0) {
			val_path(f, "%s.%s", item, lr_lists[li]);
			val_add(c, "FieldValueForbidden", f,
				"may not be specified when `type` is 'Pod'");
		}
	}
	/* every resource named in any list, checked once */
	const char *k;
	const json_t *v;
	for (int li = 0; li < 5; li++) {
		json_object_foreach ((json_t *)json_object_get(l, lr_lists[li]), k, v) {
			bool seen = false;
			for (int lj = 0; lj < li && !seen; lj++)
				seen = json_object_get(json_object_get(l, lr_lists[lj]), k) != NULL;
			if (seen)
				continue;
			struct lr_values vals = {0};
			bool ok = true;
			for (int lk = 0; lk < 5; lk++) {
				const json_t *q =
				    json_object_get(json_object_get(l, lr_lists[lk]), k);
				if (!q || (pod && (lk == LR_DEFAULT || lk == LR_DEFREQ)))
					continue;
				vals.s[lk] = json_string_value(q);
				val_path(f, "%s.%s[%s]", item, lr_lists[lk], k);
				if (!vals.s[lk] || kb_quantity_parse(vals.s[lk], &vals.q[lk]) < 0) {
					add_invalid_str(c, f, vals.s[lk], QTY_REGEX_MSG);
					ok = false;
				} else if (vals.q[lk] < 0) {
					add_invalid_str(c, f, vals.s[lk],
							"must be greater than or equal to 0");
					ok = false;
				}
			}
			if (ok)
				lr_resource(c, item, k, &vals);
		}
	}
}

static void v_limitrange(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			 json_t *c)
{
	(void)r;
	(void)old;
	/* kube validates the defaulted object (default from max, requests
	 * from defaults and min) */
	json_t *d = json_deep_copy(obj);
	if (!d)
		return;
	obj_limitrange_defaults(d);
	size_t i;
	json_t *l;
	json_array_foreach (json_object_get(json_object_get(d, "spec"), "limits"), i, l)
		lr_item(c, l, i);
	json_decref(d);
}

static void v_serviceaccount(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			     json_t *c)
{
	(void)r;
	(void)old;
	char f[VAL_PATHLEN];
	size_t i;
	json_t *s;
	json_array_foreach (json_object_get(obj, "imagePullSecrets"), i, s) {
		val_path(f, "imagePullSecrets[%zu].name", i);
		if (!val_jstr(s, "name") || !*val_jstr(s, "name"))
			add_required(c, f);
	}
}

/* ---- autoscaling, policy, networking, scheduling, storage, node -------------------- */

/* A label selector that must parse (PodDisruptionBudget, NetworkPolicy). */
static void label_selector(json_t *c, const json_t *sel, const char *field)
{
	struct sel_label *s = NULL;
	if (sel && parse_selector(c, sel, field, &s))
		sel_label_free(s);
}

/* ValidateNonnegativeIntOrPercent and IsNotMoreThan100Percent. */
static void int_or_percent(json_t *c, const json_t *v, const char *field)
{
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			val_add(c, "FieldValueInvalid", field,
				"%lld: must be greater than or equal to 0",
				(long long)json_integer_value(v));
		return;
	}
	const char *s = json_string_value(v);
	if (!s)
		return;
	size_t digits = strspn(s, "0123456789"); /* kube's [0-9]+% */
	if (digits == 0 || strcmp(s + digits, "%") != 0)
		add_invalid_str(c, field, s,
				"a valid percent string must be a numeric string followed by an "
				"ending '%' (e.g. '1%',  or '93%', regex used for validation is "
				"'[0-9]+%')");
	else if (strtol(s, NULL, 10) > 100)
		add_invalid_str(c, field, s, "must not be greater than 100%");
}

static void v_pdb(const struct proxy_resource *r, const json_t *obj, const json_t *old, json_t *c)
{
	(void)r;
	(void)old;
	static const char *const policies[] = {"AlwaysAllow", "IfHealthyBudget", NULL};
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *min = json_object_get(spec, "minAvailable");
	const json_t *max = json_object_get(spec, "maxUnavailable");
	if (min && max && !json_is_null(min) && !json_is_null(max)) {
		char *d = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
		val_add(c, "FieldValueInvalid", "spec",
			"%s: minAvailable and maxUnavailable "
			"cannot be both set",
			d ? d : "");
		free(d);
	}
	int_or_percent(c, min, "spec.minAvailable");
	int_or_percent(c, max, "spec.maxUnavailable");
	label_selector(c, json_object_get(spec, "selector"), "spec.selector");
	const char *up = val_jstr(spec, "unhealthyPodEvictionPolicy");
	if (up && !val_in_list(up, policies))
		val_not_supported(c, "spec.unhealthyPodEvictionPolicy", up, policies);
}

static void ingress_backend(json_t *c, const json_t *b, const char *base)
{
	char f[VAL_PATHLEN];
	const json_t *svc = json_object_get(b, "service"), *res = json_object_get(b, "resource");
	if (svc && res) {
		val_add(c, "FieldValueInvalid", base,
			"cannot set both resource and service backends");
		return;
	}
	if (!svc && !res) {
		val_add(c, "FieldValueInvalid", base, "resource or service backend is required");
		return;
	}
	if (res)
		return;
	val_path(f, "%s.service.name", base);
	if (!val_jstr(svc, "name") || !*val_jstr(svc, "name"))
		add_required(c, f);
	else
		check_name(c, names_msgs_1035, f, val_jstr(svc, "name"));
	const json_t *port = json_object_get(svc, "port");
	bool named = val_jstr(port, "name") && *val_jstr(port, "name");
	bool num = json_is_integer(json_object_get(port, "number"));
	val_path(f, "%s.service.port", base);
	if (named && num)
		val_add(c, "FieldValueInvalid", f, "cannot set both port name & port number");
	else if (!named && !num)
		val_add(c, "FieldValueInvalid", f, "port name or number is required");
	else if (num) {
		val_path(f, "%s.service.port.number", base);
		check_port_num(c, json_object_get(port, "number"), f, true);
	}
}

static void v_ingress(const struct proxy_resource *r, const json_t *obj, const json_t *old,
		      json_t *c)
{
	(void)r;
	(void)old;
	static const char *const types[] = {"Exact", "ImplementationSpecific", "Prefix", NULL};
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *rules = json_object_get(spec, "rules"),
		     *def = json_object_get(spec, "defaultBackend");
	char f[VAL_PATHLEN];
	if (json_array_size(rules) == 0 && !def)
		val_add(c, "FieldValueInvalid", "spec.rules",
			"[]networking.IngressRule(nil): either `defaultBackend` or `rules` must be "
			"specified");
	if (def)
		ingress_backend(c, def, "spec.defaultBackend");
	const char *cls = val_jstr(spec, "ingressClassName");
	if (cls)
		check_name(c, names_msgs_subdomain, "spec.ingressClassName", cls);
	size_t i, j;
	json_t *rule, *path;
	json_array_foreach (rules, i, rule) {
		const char *host = val_jstr(rule, "host");
		val_path(f, "spec.rules[%zu].host", i);
		if (host && *host)
			check_name(c, names_msgs_subdomain, f,
				   kb_str_has_prefix(host, "*.") ? host + 2 : host);
		const json_t *paths = json_object_get(json_object_get(rule, "http"), "paths");
		val_path(f, "spec.rules[%zu].http.paths", i);
		if (json_object_get(rule, "http") && json_array_size(paths) == 0)
			add_required(c, f);
		json_array_foreach (paths, j, path) {
			const char *pt = val_jstr(path, "pathType"), *ps = val_jstr(path, "path");
			val_path(f, "spec.rules[%zu].http.paths[%zu].pathType", i, j);
			if (!pt)
				val_add(c, "FieldValueRequired", f, "pathType must be specified");
			else if (!val_in_list(pt, types))
				val_not_supported(c, f, pt, types);
			val_path(f, "spec.rules[%zu].http.paths[%zu].path", i, j);
			if (pt && strcmp(pt, "ImplementationSpecific") != 0 &&
			    (!ps || ps[0] != '/'))
				add_invalid_str(c, f, ps, "must be an absolute path");
			val_path(f, "spec.rules[%zu].http.paths[%zu].backend", i, j);
			ingress_backend(c, json_object_get(path, "backend"), f);
		}
	}
}

static void v_ingressclass(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			   json_t *c)
{
	(void)r;
	const char *ctl = val_jstr(json_object_get(obj, "spec"), "controller");
	if (!ctl || !*ctl)
		add_required(c, "spec.controller");
	else if (strlen(ctl) > 250)
		val_add(c, "FieldValueTooLong", "spec.controller",
			"may not be more than 250 bytes");
	if (old)
		immutable(c, json_object_get(json_object_get(obj, "spec"), "controller"),
			  json_object_get(json_object_get(old, "spec"), "controller"),
			  "spec.controller");
}

static void v_networkpolicy(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			    json_t *c)
{
	(void)r;
	(void)old;
	static const char *const types[] = {"Egress", "Ingress", NULL};
	const json_t *spec = json_object_get(obj, "spec");
	char f[VAL_PATHLEN];
	label_selector(c, json_object_get(spec, "podSelector"), "spec.podSelector");
	size_t i, j;
	json_t *v, *rule;
	json_array_foreach (json_object_get(spec, "policyTypes"), i, v) {
		val_path(f, "spec.policyTypes[%zu]", i);
		if (!json_string_value(v) || !val_in_list(json_string_value(v), types))
			val_not_supported(c, f, json_string_value(v), types);
	}
	const char *dirs[] = {"ingress", "egress"};
	for (size_t d = 0; d < 2; d++)
		json_array_foreach (json_object_get(spec, dirs[d]), i, rule)
			json_array_foreach (json_object_get(rule, "ports"), j, v) {
				val_path(f, "spec.%s[%zu].ports[%zu].protocol", dirs[d], i, j);
				check_protocol(c, v, f);
			}
}

static void v_hpa(const struct proxy_resource *r, const json_t *obj, const json_t *old, json_t *c)
{
	(void)r;
	(void)old;
	const json_t *spec = json_object_get(obj, "spec");
	const json_t *ref = json_object_get(spec, "scaleTargetRef");
	if (!val_jstr(ref, "kind") || !*val_jstr(ref, "kind"))
		add_required(c, "spec.scaleTargetRef.kind");
	if (!val_jstr(ref, "name") || !*val_jstr(ref, "name"))
		add_required(c, "spec.scaleTargetRef.name");
	else
		check_name(c, names_msgs_path_segment, "spec.scaleTargetRef.name",
			   val_jstr(ref, "name"));
	json_int_t min = json_integer_value(json_object_get(spec, "minReplicas"));
	json_int_t max = json_integer_value(json_object_get(spec, "maxReplicas"));
	if (json_is_integer(json_object_get(spec, "minReplicas")) && min < 1)
		val_add(c, "FieldValueInvalid", "spec.minReplicas",
			"%lld: must be greater than or equal to 1", (long long)min);
	if (max < 1)
		val_add(c, "FieldValueInvalid", "spec.maxReplicas", "%lld: must be greater than 0",
			(long long)max);
	else if (max < min)
		val_add(c, "FieldValueInvalid", "spec.maxReplicas",
			"%lld: must be greater than or equal to `minReplicas`", (long long)max);
}

/* kube's system classes: the only names with the reserved prefix. */
static bool system_priority_class(const char *name, const json_t *obj)
{
	json_int_t v = json_integer_value(json_object_get(obj, "value"));
	return (strcmp(name, "system-node-critical") == 0 && v == 2000001000) ||
	       (strcmp(name, "system-cluster-critical") == 0 && v == 2000000000);
}

static void v_priorityclass(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			    json_t *c)
{
	(void)r;
	static const char *const policies[] = {"Never", "PreemptLowerPriority", NULL};
	const char *name = val_jstr(json_object_get(obj, "metadata"), "name");
	json_int_t v = json_integer_value(json_object_get(obj, "value"));
	if (name && kb_str_has_prefix(name, "system-")) {
		if (!system_priority_class(name, obj))
			val_add(c, "FieldValueForbidden", "metadata.name",
				"priority class names with 'system-' prefix are reserved for "
				"system use only. error: %s is not a known system priority class",
				name);
	} else if (v > 1000000000) {
		val_add(c, "FieldValueForbidden", "value",
			"maximum allowed value of a user defined priority is 1000000000");
	}
	const char *pp = val_jstr(obj, "preemptionPolicy");
	if (pp && !val_in_list(pp, policies))
		val_not_supported(c, "preemptionPolicy", pp, policies);
	if (old) {
		if (changed(json_object_get(obj, "value"), json_object_get(old, "value")))
			val_add(c, "FieldValueForbidden", "value",
				"may not be changed in an update.");
		immutable(c, json_object_get(obj, "preemptionPolicy"),
			  json_object_get(old, "preemptionPolicy"), "preemptionPolicy");
	}
}

static void v_storageclass(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			   json_t *c)
{
	(void)r;
	static const char *const reclaim[] = {"Delete", "Retain", NULL};
	static const char *const binding[] = {"Immediate", "WaitForFirstConsumer", NULL};
	const char *prov = val_jstr(obj, "provisioner");
	if (!prov || !*prov)
		add_required(c, "provisioner");
	else
		check_name(c, names_msgs_qname, "provisioner", prov);
	const char *rp = val_jstr(obj, "reclaimPolicy"), *bm = val_jstr(obj, "volumeBindingMode");
	if (rp && !val_in_list(rp, reclaim))
		val_not_supported(c, "reclaimPolicy", rp, reclaim);
	if (bm && !val_in_list(bm, binding))
		val_not_supported(c, "volumeBindingMode", bm, binding);
	if (!old)
		return;
	/* kube compares parameters as maps: none and {} are the same */
	const json_t *np = json_object_get(obj, "parameters"),
		     *op = json_object_get(old, "parameters");
	if (changed(json_object_size(np) ? np : NULL, json_object_size(op) ? op : NULL))
		val_add(c, "FieldValueForbidden", "parameters",
			"updates to parameters are forbidden.");
	if (changed(json_object_get(obj, "provisioner"), json_object_get(old, "provisioner")))
		val_add(c, "FieldValueForbidden", "provisioner",
			"updates to provisioner are forbidden.");
	if (changed(json_object_get(obj, "reclaimPolicy"), json_object_get(old, "reclaimPolicy")))
		val_add(c, "FieldValueForbidden", "reclaimPolicy",
			"updates to reclaimPolicy are forbidden.");
	immutable(c, json_object_get(obj, "volumeBindingMode"),
		  json_object_get(old, "volumeBindingMode"), "volumeBindingMode");
}

static void v_runtimeclass(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			   json_t *c)
{
	(void)r;
	const char *h = val_jstr(obj, "handler");
	if (!h || !*h)
		add_required(c, "handler");
	else
		check_name(c, names_msgs_label, "handler", h);
	if (old)
		immutable(c, json_object_get(obj, "handler"), json_object_get(old, "handler"),
			  "handler");
}

/* ---- dispatch ------------------------------------------------------------------------- */

typedef void (*kind_fn)(const struct proxy_resource *r, const json_t *obj, const json_t *old,
			json_t *causes);

static const struct {
	const char *group, *kind;
	kind_fn fn;
} kinds[] = {
    {"", "Pod", v_pod},
    {"", "Service", v_service},
    {"", "ConfigMap", v_configmap},
    {"", "Secret", v_secret},
    {"", "Event", v_event},
    {"", "PersistentVolumeClaim", v_pvc},
    {"", "PersistentVolume", v_pv},
    {"", "ReplicationController", v_replication_controller},
    {"", "PodTemplate", v_pod_template},
    {"", "Endpoints", v_endpoints},
    {"", "ResourceQuota", v_quota},
    {"", "LimitRange", v_limitrange},
    {"", "ServiceAccount", v_serviceaccount},
    {"apps", "Deployment", v_workload},
    {"apps", "ReplicaSet", v_workload},
    {"apps", "StatefulSet", v_workload},
    {"apps", "DaemonSet", v_workload},
    {"batch", "Job", v_job},
    {"batch", "CronJob", v_cronjob},
    {"autoscaling", "HorizontalPodAutoscaler", v_hpa},
    {"policy", "PodDisruptionBudget", v_pdb},
    {"networking.k8s.io", "Ingress", v_ingress},
    {"networking.k8s.io", "IngressClass", v_ingressclass},
    {"networking.k8s.io", "NetworkPolicy", v_networkpolicy},
    {"discovery.k8s.io", "EndpointSlice", v_endpointslice},
    {"scheduling.k8s.io", "PriorityClass", v_priorityclass},
    {"storage.k8s.io", "StorageClass", v_storageclass},
    {"node.k8s.io", "RuntimeClass", v_runtimeclass},
    {"flowcontrol.apiserver.k8s.io", "FlowSchema", val_flowcontrol},
    {"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", val_flowcontrol},
    {"apiregistration.k8s.io", "APIService", val_apiservice},
    {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", val_webhook_configuration},
    {"admissionregistration.k8s.io", "MutatingWebhookConfiguration", val_webhook_configuration},
    {"admissionregistration.k8s.io", "ValidatingAdmissionPolicy", val_admission_policy},
    {"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding",
     val_admission_policy_binding},
};

int val_object(const struct proxy_resource *r, const json_t *obj, const json_t *old, json_t *causes)
{
	if (!obj || !json_is_array(causes))
		return -EINVAL;
	size_t before = json_array_size(causes);
	for (size_t i = 0; r && i < KB_ARRAY_SIZE(kinds); i++)
		if (kind_is(r, kinds[i].group, kinds[i].kind)) {
			kinds[i].fn(r, obj, old, causes);
			break;
		}
	return (int)(json_array_size(causes) - before);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

bool val_expression_message(const char *s, size_t n, const char **out, size_t *outn)
{
	while (n && is_space(*s))
		s++, n--;
	while (n && is_space(s[n - 1]))
		n--;
	*out = s;
	*outn = n;
	return n && n <= 5120 && !memchr(s, '\n', n);
}
