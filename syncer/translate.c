/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Translation between tenant objects and host objects: translated names,
 * the host-object contract's labels and annotations, scheduler profiles,
 * rewriting of ConfigMap/Secret references, status and nodes back. Pure
 * functions on JSON (no I/O), so they are unit-tested on their own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "lib/json.h"
#include "lib/util.h"
#include "policies/policies.h"
#include "syncer/syncer_impl.h"

/* ---- profiles ---------------------------------------------------------------- */

static const struct syncer_profile profiles[] = {
    {"kai", "kai-scheduler", "kai.scheduler/queue", NULL},
    {"kueue", NULL, "kueue.x-k8s.io/queue-name", NULL},
    {"volcano", "volcano", NULL, "scheduling.volcano.sh/queue-name"},
    {"hami", "hami-scheduler", NULL, NULL},
    {"none", NULL, NULL, NULL},
};

/* Keys of every profile: a tenant may set none of them. Queues, groups
 * and their shape are the platform's (the syncer writes them, gang.c), and
 * so are node pools and GPU groups. Sources: KAI pkg/common/constants and
 * podgrouper/.../plugins/constants; Kueue pkg/controller/jobs/pod/
 * constants and pkg/constants; Volcano's scheduling/v1beta1 and
 * batch/v1alpha1 labels.go. */
static const char *const sched_labels[] = {
    "kai.scheduler/queue",
    "kueue.x-k8s.io/queue-name",
    "runai/queue",
    "kai.scheduler/subgroup-name",
    "kai.scheduler/node-pool",
    "runai-gpu-group",
    "kueue.x-k8s.io/pod-group-name",
    "kueue.x-k8s.io/managed",
    "kueue.x-k8s.io/prebuilt-workload-name",
    "volcano.sh/task-spec",
    "volcano.sh/job-name",
    NULL,
};
static const char *const sched_annotations[] = {
    "scheduling.volcano.sh/queue-name",
    "scheduling.k8s.io/group-name",
    "scheduling.volcano.sh/group-name",
    "pod-group-name",
    "kueue.x-k8s.io/pod-group-name",
    "kueue.x-k8s.io/queue-name",
    "kueue.x-k8s.io/pod-group-total-count",
    "kueue.x-k8s.io/pod-group-fast-admission",
    "kueue.x-k8s.io/pod-group-serving",
    "kueue.x-k8s.io/retriable-in-group",
    "kueue.x-k8s.io/prebuilt-workload-name",
    "kai.scheduler/skip-podgrouper",
    "kai.scheduler/batch-min-member",
    "kai.scheduler/top-owner-metadata",
    "runai-gpu-group",
    "volcano.sh/task-spec",
    "volcano.sh/job-name",
    NULL,
};
/* Prefixes of keys of the same kind (a multi-GPU group is
 * runai-gpu-group/<n>). */
static const char *const sched_prefixes[] = {"runai-gpu-group/", NULL};
/* Topology hints: they pass only where the tenant's policy allows them
 * (syncer_xlate.topology_hints); KAI reads its own from the PodGroup's
 * topologyConstraint (gang.c). */
static const char *const topology_prefixes[] = {
    "kai.scheduler/topology",
    "kai.scheduler/segment-",
    "kueue.x-k8s.io/podset-",
    "volcano.sh/network-topology-",
    NULL,
};

const struct syncer_profile *syncer_profile_find(const char *name)
{
	if (!name || !*name)
		name = "kai";
	for (size_t i = 0; i < KB_ARRAY_SIZE(profiles); i++)
		if (strcmp(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}

bool syncer_scheduler_known(const char *name)
{
	return name && *name && syncer_profile_find(name);
}

/* ---- names -------------------------------------------------------------------- */

static void hash_hex(const char *s, char *out, size_t nhex)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_Digest(s, strlen(s), md, &mdlen, EVP_sha256(), NULL);
	for (size_t i = 0; i < nhex / 2 && i < mdlen; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/*
 * Translated names: why two tenant objects never share a host name.
 *
 * Input: a triple (ns, name, tenant); ns is "" for a cluster-scoped object.
 * S is "<name>-x-<ns>-x-<tenant>" ("<name>-x-<tenant>" when ns is ""), and
 * occ(S) the number of positions where "-x-" starts in S, overlapping ones
 * counted ("a-x-x-b" has two).
 *
 * Short form: S itself, when |S| <= 62 and occ(S) is 2 (1 when ns is "").
 *   The separators we inserted are occurrences, so they are then the only
 *   ones: from S alone one finds them (the first and the last occurrence)
 *   and reads name, ns and tenant back. Two triples with the same short
 *   form therefore have separators at the same positions, hence equal
 *   parts: the short form is injective. No assumption on the parts is
 *   needed (this is where the old rule, "no part contains -x-", failed:
 *   "a"/"b-x"/"tu" and "a"/"b"/"x-tu" both give "a-x-b-x-x-tu", whose
 *   occurrences overlap at the part boundaries; occ is 3 there, so both
 *   now take the hashed form).
 * Hashed form, every other S: P + "-" + the first 62 - |P| hex digits of
 *   sha256(K), K = "<ns>/<name>/<tenant>", P = S's first min(|S|, 46)
 *   characters with '.' made '-' and a final '-' made 'x' (a readable
 *   prefix that starts like the name, so a Service's stays a DNS-1035
 *   label). It is always 63 characters, a short form at most 62: the two
 *   forms never meet. K is injective (no part of a valid name holds '/',
 *   refused here), so two distinct triples share a hashed form only when
 *   the digests of two distinct strings agree on their first 4 * (62 - |P|)
 *   >= 64 bits: for n objects in one host namespace, probability at most
 *   n^2 / 2^65 (5e-8 for a million objects), sha256 being taken as a random
 *   function (no collision of even its first 64 bits is known).
 * Together: injective on every (ns, name, tenant) up to that bound, and the
 * result is a DNS-1123 label of at most 63 characters when the parts are
 * valid names (a DNS subdomain when the name has dots; the short form keeps
 * them, as a pod or a ConfigMap may). Service account token Secrets
 * ("<sa>-token-<16 hex>", syncer_sa_secret_name) share the Secrets' host
 * namespace: a short form equal to one would need a tenant name ending in
 * "token-" and 16 hex digits, which kubicle create refuses; a hashed one, a
 * 64-bit digest collision.
 */
static bool name_parts_ok(const char *ns, const char *name, const char *tenant)
{
	return name && *name && tenant && *tenant && !strchr(name, '/') && !strchr(ns, '/') &&
	       !strchr(tenant, '/');
}

static size_t separators(const char *s)
{
	size_t n = 0;
	for (const char *p = strstr(s, "-x-"); p; p = strstr(p + 1, "-x-"))
		n++;
	return n;
}

/* The hashed form of S = full (n characters) with `nhex` hex digits, the
 * prefix as long as fits: 63 characters when nhex is 0 (the current rule),
 * else the prefix and nhex digits (the rule before it, for adoption). */
static void hashed_name(const char *ns, const char *name, const char *tenant, const char *full,
			size_t n, size_t nhex, char *buf, size_t len)
{
	char key[1024], hex[2 * EVP_MAX_MD_SIZE + 1] = "";
	snprintf(key, sizeof(key), "%s/%s/%s", ns, name, tenant);
	hash_hex(key, hex, 64);
	size_t plen = SYNCER_NAME_MAX - 1 - SYNCER_HASH_HEX;
	if (n < plen)
		plen = n;
	if (!nhex)
		nhex = SYNCER_NAME_MAX - 1 - plen;
	memcpy(buf, full, plen);
	/* the prefix must end in an alphanumeric character */
	for (size_t i = 0; i < plen; i++)
		if (buf[i] == '.')
			buf[i] = '-';
	if (buf[plen - 1] == '-')
		buf[plen - 1] = 'x';
	snprintf(buf + plen, len - plen, "-%.*s", (int)nhex, hex);
}

/* S of (ns, name, tenant) into full; its length, or -1 when too long. */
static int full_name(const char *ns, const char *name, const char *tenant, char *full, size_t len)
{
	int n = *ns ? snprintf(full, len, "%s-x-%s-x-%s", name, ns, tenant)
		    : snprintf(full, len, "%s-x-%s", name, tenant);
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int syncer_host_name(const char *ns, const char *name, const char *tenant, char *buf, size_t len)
{
	char full[1024];
	if (!ns)
		ns = "";
	if (!name_parts_ok(ns, name, tenant) || len < SYNCER_NAME_MAX + 1)
		return -EINVAL;
	int n = full_name(ns, name, tenant, full, sizeof(full));
	if (n < 0)
		return -EINVAL;
	if (n <= SYNCER_NAME_MAX - 1 && separators(full) == (*ns ? 2u : 1u)) {
		snprintf(buf, len, "%s", full);
		return 0;
	}
	hashed_name(ns, name, tenant, full, (size_t)n, 0, buf, len);
	return 0;
}

const char *syncer_check_tenant(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (!kb_dns_label(name, 40))
		return "a tenant name is a DNS label of 1 to 40 characters (lower case letters, "
		       "digits and '-', a letter or digit at both ends)";
	if (strstr(name, "-x-"))
		return "a tenant name may not contain \"-x-\" (it separates parts of host names)";
	const char *tok = n >= 22 ? name + n - 22 : NULL;
	if (tok && strncmp(tok, "token-", 6) == 0 && strspn(tok + 6, "0123456789abcdef") == 16)
		return "a tenant name may not end in \"token-\" and 16 hex digits (the host names "
		       "of service-account token Secrets end so)";
	return NULL;
}

int syncer_host_name_legacy(const char *ns, const char *name, const char *tenant, char *buf,
			    size_t len)
{
	char full[1024];
	if (!ns)
		ns = "";
	if (!name_parts_ok(ns, name, tenant) || len < SYNCER_NAME_MAX + 1)
		return -EINVAL;
	int n = full_name(ns, name, tenant, full, sizeof(full));
	if (n < 0)
		return -EINVAL;
	bool ambiguous = strstr(name, "-x-") || strstr(ns, "-x-");
	if (n <= SYNCER_NAME_MAX - 1 && !ambiguous) {
		snprintf(buf, len, "%s", full);
		return 0;
	}
	hashed_name(ns, name, tenant, full, (size_t)n, SYNCER_HASH_HEX, buf, len);
	return 0;
}

/* ---- helpers ------------------------------------------------------------------ */

static json_t *obj_at(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_object(v)) {
		v = json_object();
		json_object_set_new(o, key, v);
	}
	return v;
}

static void add_ref(json_t *refs, const char *kind, const char *name)
{
	size_t i;
	json_t *e;
	if (!refs || !kind || !name)
		return;
	json_array_foreach (refs, i, e) {
		if (strcmp(jstr(e, "kind"), kind) == 0 && strcmp(jstr(e, "name"), name) == 0)
			return;
	}
	json_array_append_new(refs, json_pack("{s:s,s:s}", "kind", kind, "name", name));
}

/* Rewrites o[key] (a tenant object name; o may be NULL) to its translated
 * name, and counts it in `refs` as `kind` (both may be NULL: not counted). */
static void rename_ref(const struct syncer_xlate *x, json_t *o, const char *key, const char *kind,
		       const char *ns, json_t *refs)
{
	const char *name = jstr(o, key);
	char hn[SYNCER_NAME_MAX + 1];
	if (!name || syncer_host_name(ns, name, x->tenant, hn, sizeof(hn)) < 0)
		return;
	add_ref(refs, kind, name);
	json_object_set_new(o, key, json_string(hn));
}

void syncer_rename_ref(const struct syncer_xlate *x, json_t *o, const char *key, const char *kind,
		       const char *ns, json_t *refs)
{
	rename_ref(x, o, key, kind, ns, refs);
}

/* ---- metadata ----------------------------------------------------------------- */

static void strip_keys(json_t *map, const char *const *keys)
{
	for (size_t i = 0; keys[i]; i++)
		json_object_del(map, keys[i]);
}

static void strip_prefix(json_t *map, const char *prefix)
{
	const char *k;
	json_t *v;
	void *tmp;
	json_object_foreach_safe (map, tmp, k, v) {
		if (kb_str_has_prefix(k, prefix))
			json_object_del(map, k);
	}
}

static json_t *host_meta(const struct syncer_xlate *x, const json_t *tmeta, const char *kind)
{
	const char *ns = jstr(tmeta, "namespace"), *name = jstr(tmeta, "name");
	char hn[SYNCER_NAME_MAX + 1];
	if (syncer_host_name(ns, name, x->tenant, hn, sizeof(hn)) < 0)
		return NULL;
	json_t *m = json_object();
	json_t *labels = kb_json_copy(json_object_get(tmeta, "labels"));
	json_t *ann = kb_json_copy(json_object_get(tmeta, "annotations"));
	labels = labels ? labels : json_object();
	ann = ann ? ann : json_object();
	strip_prefix(labels, "kubicle.dev/");
	strip_prefix(ann, "kubicle.dev/");
	json_object_del(ann, "kubectl.kubernetes.io/last-applied-configuration");
	json_object_set_new(labels, LBL_TENANT, json_string(x->tenant));
	if (ns)
		json_object_set_new(labels, LBL_NAMESPACE, json_string(ns));
	json_object_set_new(ann, ANN_NAMESPACE, json_string(ns ? ns : ""));
	json_object_set_new(ann, ANN_NAME, json_string(name));
	json_object_set_new(ann, ANN_UID,
			    json_string(jstr(tmeta, "uid") ? jstr(tmeta, "uid") : ""));
	json_object_set_new(ann, ANN_KIND, json_string(kind));
	json_object_set_new(m, "name", json_string(hn));
	json_object_set_new(m, "namespace", json_string(x->host_ns));
	json_object_set_new(m, "labels", labels);
	json_object_set_new(m, "annotations", ann);
	return m;
}

json_t *syncer_host_meta(const struct syncer_xlate *x, const json_t *tmeta, const char *kind)
{
	return host_meta(x, tmeta, kind);
}

/* ---- scheduler keys ------------------------------------------------------------ */

/* The tenant owners, for the downward API and for people (the group keys are
 * gang.c's: only with their group object). */
static void owner_refs(const json_t *tmeta, json_t *ann)
{
	json_t *owners = json_object_get(tmeta, "ownerReferences");
	if (json_array_size(owners) == 0)
		return;
	char *txt = json_dumps(owners, JSON_COMPACT);
	if (txt)
		json_object_set_new(ann, ANN_OWNERS, json_string(txt));
	free(txt);
}

static void set_scheduler(const struct syncer_xlate *x, json_t *hp, const json_t *tmeta)
{
	json_t *meta = obj_at(hp, "metadata");
	json_t *labels = obj_at(meta, "labels"), *ann = obj_at(meta, "annotations");
	json_t *spec = obj_at(hp, "spec");
	/* a pod's node pool is the policy's to allow (policies/floor: the
	 * tenant API refuses pools the policy does not list): it stays */
	json_t *pool = json_incref(json_object_get(labels, "kai.scheduler/node-pool"));
	strip_keys(labels, sched_labels);
	if (pool)
		json_object_set_new(labels, "kai.scheduler/node-pool", pool);
	strip_keys(ann, sched_annotations);
	for (size_t i = 0; sched_prefixes[i]; i++) {
		strip_prefix(labels, sched_prefixes[i]);
		strip_prefix(ann, sched_prefixes[i]);
	}
	for (size_t i = 0; !x->topology_hints && topology_prefixes[i]; i++) {
		strip_prefix(labels, topology_prefixes[i]);
		strip_prefix(ann, topology_prefixes[i]);
	}
	if (x->profile->scheduler_name)
		json_object_set_new(spec, "schedulerName", json_string(x->profile->scheduler_name));
	else
		json_object_del(spec, "schedulerName");
	if (x->profile->queue_label && x->queue)
		json_object_set_new(labels, x->profile->queue_label, json_string(x->queue));
	if (x->profile->queue_annotation && x->queue)
		json_object_set_new(ann, x->profile->queue_annotation, json_string(x->queue));
	owner_refs(tmeta, ann);
}

/* ---- the downward API ------------------------------------------------------------ */

/*
 * A container reads its pod's fields through fieldRefs; on the host those
 * would give the host pod's name, namespace, uid, service account (the host
 * namespace's default), labels and annotations. The host pod carries the
 * tenant's values as annotations, and its fieldRefs name those instead
 * (vCluster does the same). The whole label and annotation maps, which
 * only downward API files may read, get an annotation each, in the
 * kubelet's file format, when the pod asks for them.
 */
struct downward {
	const json_t *tmeta, *tspec; /* the tenant pod's */
	json_t *ann;                 /* the host pod's annotations */
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Go's %q of s, for the ASCII range (other bytes are UTF-8 text kept as
 * it is, which is what Go does with printable characters). */
static void go_quote(struct kb_buf *b, const char *s)
{
	kb_buf_puts(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			kb_buf_printf(b, "\\%c", *p);
		else if (*p >= '\a' && *p <= '\r')
			kb_buf_printf(b, "\\%c", "abtnvfr"[*p - '\a']);
		else if (*p < 0x20 || *p == 0x7f)
			kb_buf_printf(b, "\\x%02x", *p);
		else
			kb_buf_printf(b, "%c", *p);
	}
	kb_buf_puts(b, "\"");
}

/* The kubelet's file for a whole map: key="value" lines, keys sorted. */
static char *format_map(const json_t *map)
{
	size_t n = json_object_size(map), i = 0;
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	struct kb_buf b = {0};
	const char *k;
	json_t *v;
	if (!keys)
		return NULL;
	json_object_foreach ((json_t *)map, k, v)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), cmp_str);
	kb_buf_puts(&b, "");
	for (i = 0; i < n; i++) {
		const char *val = json_string_value(json_object_get(map, keys[i]));
		kb_buf_printf(&b, "%s%s=", i ? "\n" : "", keys[i]);
		go_quote(&b, val ? val : "");
	}
	free(keys);
	return b.data;
}

/* The annotation that holds what fieldPath `path` reads, set on the host
 * pod when it is one made for it; NULL when the host's value is right. */
static const char *downward_annotation(struct downward *d, const char *path)
{
	if (strcmp(path, "metadata.name") == 0)
		return ANN_NAME;
	if (strcmp(path, "metadata.namespace") == 0)
		return ANN_NAMESPACE;
	if (strcmp(path, "metadata.uid") == 0)
		return ANN_UID;
	if (strcmp(path, "spec.serviceAccountName") == 0) {
		const char *sa = jstr(d->tspec, "serviceAccountName");
		json_object_set_new(d->ann, ANN_SERVICE_ACCOUNT, json_string(sa ? sa : "default"));
		return ANN_SERVICE_ACCOUNT;
	}
	bool labels = strcmp(path, "metadata.labels") == 0;
	if (!labels && strcmp(path, "metadata.annotations") != 0)
		return NULL;
	const char *ann = labels ? ANN_LABELS : ANN_ANNOTATIONS;
	char *text = format_map(json_object_get(d->tmeta, labels ? "labels" : "annotations"));
	if (text)
		json_object_set_new(d->ann, ann, json_string(text));
	free(text);
	return ann;
}

static void rewrite_field_ref(struct downward *d, json_t *holder)
{
	json_t *fr = json_object_get(holder, "fieldRef");
	const char *fp = jstr(fr, "fieldPath");
	const char *ann = fp ? downward_annotation(d, fp) : NULL;
	if (!ann)
		return;
	char path[128];
	snprintf(path, sizeof(path), "metadata.annotations['%s']", ann);
	json_object_set_new(fr, "fieldPath", json_string(path));
}

static void rewrite_downward_items(struct downward *d, json_t *src)
{
	size_t i;
	json_t *it;
	json_array_foreach (json_object_get(src, "items"), i, it)
		rewrite_field_ref(d, it);
}

/* The container's hostname is its pod's name, cut to 63 characters as the
 * kubelet does, unless the pod names one. A name with dots cannot be a
 * host pod's spec.hostname; such a pod keeps the host's. */
static void set_hostname(json_t *spec, const json_t *tmeta)
{
	const char *name = jstr(tmeta, "name");
	if (!name || jstr(spec, "hostname") || strchr(name, '.'))
		return;
	char h[64];
	snprintf(h, sizeof(h), "%s", name);
	for (size_t n = strlen(h); n > 0 && h[n - 1] == '-'; n--)
		h[n - 1] = '\0';
	if (*h)
		json_object_set_new(spec, "hostname", json_string(h));
}

/* ---- ConfigMap / Secret references -------------------------------------------- */

static void rewrite_env(const struct syncer_xlate *x, struct downward *d, json_t *c, const char *ns,
			json_t *refs)
{
	size_t i;
	json_t *e;
	json_array_foreach (json_object_get(c, "env"), i, e) {
		json_t *vf = json_object_get(e, "valueFrom");
		rewrite_field_ref(d, vf);
		json_t *cm = json_object_get(vf, "configMapKeyRef");
		json_t *sk = json_object_get(vf, "secretKeyRef");
		if (cm)
			rename_ref(x, cm, "name", "ConfigMap", ns, refs);
		if (sk)
			rename_ref(x, sk, "name", "Secret", ns, refs);
	}
	json_array_foreach (json_object_get(c, "envFrom"), i, e) {
		json_t *cm = json_object_get(e, "configMapRef");
		json_t *sr = json_object_get(e, "secretRef");
		if (cm)
			rename_ref(x, cm, "name", "ConfigMap", ns, refs);
		if (sr)
			rename_ref(x, sr, "name", "Secret", ns, refs);
	}
}

/* ---- Service environment variables ---------------------------------------------------- */

/* kubelet's makeEnvVariableName: upper case, dashes to underscores. */
static void env_name(char *buf, size_t len, const char *svc, const char *suffix)
{
	int n = snprintf(buf, len, "%s%s", svc, suffix);
	for (int i = 0; i < n && (size_t)i < len; i++) {
		char ch = buf[i];
		buf[i] = ch == '-' ? '_' : ch >= 'a' && ch <= 'z' ? (char)(ch - 'a' + 'A') : ch;
	}
}

/* {name, value} appended to env; built directly (json_pack's format
 * parsing was most of set_api_env's cost: seven per container). */
static void put_env(json_t *env, const char *name, const char *value)
{
	json_t *n = json_string(name), *v = json_string(value), *e = json_object();
	if (!n || !v || !e) { /* as json_pack: nothing for a NULL string */
		json_decref(n);
		json_decref(v);
		json_decref(e);
		return;
	}
	json_object_set_new_nocheck(e, "name", n);
	json_object_set_new_nocheck(e, "value", v);
	json_array_append_new(env, e);
}

/* A Service port's protocol in lower case ("tcp" when unset) and its URL
 * ("tcp://10.0.0.7:5432", an IPv6 address in brackets), as the kubelet
 * writes them. */
static void port_url(const char *ip, const json_t *port, char *proto, size_t plen, char *url,
		     size_t ulen)
{
	const char *p = jstr(port, "protocol") ? jstr(port, "protocol") : "TCP";
	size_t i = 0;
	for (; p[i] && i + 1 < plen; i++)
		proto[i] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] - 'A' + 'a' : p[i]);
	proto[i] = '\0';
	snprintf(url, ulen, strchr(ip, ':') ? "%s://[%s]:%ld" : "%s://%s:%ld", proto, ip,
		 (long)json_integer_value(json_object_get(port, "port")));
}

/* The Docker-link variables of one port: <P>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]. */
static void link_env(json_t *env, const char *svc, const char *ip, const json_t *port)
{
	char proto[16], url[128], name[400], suffix[64], num[16];
	port_url(ip, port, proto, sizeof(proto), url, sizeof(url));
	long pn = (long)json_integer_value(json_object_get(port, "port"));
	snprintf(num, sizeof(num), "%ld", pn);
	snprintf(suffix, sizeof(suffix), "_PORT_%ld_%s", pn, proto);
	env_name(name, sizeof(name), svc, suffix);
	put_env(env, name, url);
	size_t base = strlen(name);
	snprintf(name + base, sizeof(name) - base, "_PROTO");
	put_env(env, name, proto);
	snprintf(name + base, sizeof(name) - base, "_PORT");
	put_env(env, name, num);
	snprintf(name + base, sizeof(name) - base, "_ADDR");
	put_env(env, name, ip);
}

/* The variables the kubelet gives a pod for one Service of its namespace
 * (only those with a cluster IP). */
static void one_service_env(json_t *env, const json_t *svc)
{
	const json_t *spec = json_object_get(svc, "spec");
	const char *name = jstr(json_object_get(svc, "metadata"), "name");
	const char *ip = jstr(spec, "clusterIP");
	json_t *ports = json_object_get(spec, "ports");
	const char *ns = jstr(json_object_get(svc, "metadata"), "namespace");
	if (!name || !ip || !*ip || strcmp(ip, "None") == 0 || json_array_size(ports) == 0)
		return;
	if (ns && strcmp(ns, "default") == 0 && strcmp(name, "kubernetes") == 0)
		return; /* the API's: set_api_env */
	char n[400], num[16], proto[16], url[128];
	env_name(n, sizeof(n), name, "_SERVICE_HOST");
	put_env(env, n, ip);
	json_t *first = json_array_get(ports, 0);
	snprintf(num, sizeof(num), "%ld", (long)json_integer_value(json_object_get(first, "port")));
	env_name(n, sizeof(n), name, "_SERVICE_PORT");
	put_env(env, n, num);
	size_t i;
	json_t *p;
	json_array_foreach (ports, i, p) {
		const char *pname = jstr(p, "name");
		if (!pname || !*pname)
			continue;
		char suffix[80];
		snprintf(suffix, sizeof(suffix), "_SERVICE_PORT_%s", pname);
		env_name(n, sizeof(n), name, suffix);
		snprintf(num, sizeof(num), "%ld",
			 (long)json_integer_value(json_object_get(p, "port")));
		put_env(env, n, num);
	}
	port_url(ip, first, proto, sizeof(proto), url, sizeof(url)); /* <P>_PORT: the first's */
	env_name(n, sizeof(n), name, "_PORT");
	put_env(env, n, url);
	json_array_foreach (ports, i, p)
		link_env(env, name, ip, p);
}

/*
 * The API's Service variables name the tenant API, not the host's (the host
 * kubelet gives every container the host API's KUBERNETES_*, which the
 * container's own env overrides): KUBERNETES_SERVICE_HOST/PORT and the
 * Docker-link KUBERNETES_PORT[_443_TCP[_PROTO|_PORT|_ADDR]].
 */
static void set_api_env(const struct syncer_xlate *x, json_t *c)
{
	if (!x->api_host)
		return;
	json_t *env = json_object_get(c, "env");
	if (!json_is_array(env)) {
		env = json_array();
		json_object_set_new(c, "env", env);
	}
	for (size_t i = json_array_size(env); i-- > 0;) {
		const char *n = jstr(json_array_get(env, i), "name");
		if (n && (strcmp(n, "KUBERNETES_SERVICE_HOST") == 0 ||
			  strcmp(n, "KUBERNETES_SERVICE_PORT") == 0 ||
			  kb_str_has_prefix(n, "KUBERNETES_PORT")))
			json_array_remove(env, i);
	}
	char port[16], url[300];
	snprintf(port, sizeof(port), "%d", x->api_port);
	snprintf(url, sizeof(url), "tcp://%s:%d", x->api_host, x->api_port);
	put_env(env, "KUBERNETES_SERVICE_HOST", x->api_host);
	put_env(env, "KUBERNETES_SERVICE_PORT", port);
	put_env(env, "KUBERNETES_PORT", url);
	put_env(env, "KUBERNETES_PORT_443_TCP", url);
	put_env(env, "KUBERNETES_PORT_443_TCP_PROTO", "tcp");
	put_env(env, "KUBERNETES_PORT_443_TCP_PORT", port);
	put_env(env, "KUBERNETES_PORT_443_TCP_ADDR", x->api_host);
}

json_t *syncer_service_env(const json_t *services)
{
	json_t *env = json_array();
	size_t i;
	json_t *svc;
	json_array_foreach (services, i, svc)
		one_service_env(env, svc);
	return env;
}

/*
 * On the host the kubelet would give the container the variables of the
 * host namespace's Services (translated names, the server's own Service
 * among them): the host pod turns that off, and the container gets the
 * tenant's, for the Services of its namespace as the syncer read them
 * (with the host's cluster IPs), ahead of its own env so that its own
 * definitions win and $(VAR) references to them expand, as the kubelet
 * orders them.
 */
static void set_service_env(const struct syncer_xlate *x, const json_t *tspec, json_t *c)
{
	if (!x->service_env || json_array_size(x->service_env) == 0 ||
	    json_is_false(json_object_get(tspec, "enableServiceLinks")))
		return;
	json_t *env = kb_json_copy(x->service_env);
	json_array_extend(env, json_object_get(c, "env"));
	json_object_set_new(c, "env", env);
}

static void rewrite_containers(const struct syncer_xlate *x, struct downward *d, json_t *spec,
			       const char *ns, json_t *refs)
{
	static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, lists[l]), i, c) {
			rewrite_env(x, d, c, ns, refs);
			set_service_env(x, d->tspec, c);
			set_api_env(x, c);
			json_t *sc = json_object_get(c, "securityContext");
			json_object_del(sc, "privileged");
			size_t j;
			json_t *p;
			json_array_foreach (json_object_get(c, "ports"), j, p)
				json_object_del(p, "hostPort");
		}
	}
}

static void rewrite_volumes(const struct syncer_xlate *x, struct downward *d, json_t *spec,
			    const char *ns, json_t *refs)
{
	size_t i, j;
	json_t *v, *src;
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		rewrite_downward_items(d, json_object_get(v, "downwardAPI"));
		json_t *cm = json_object_get(v, "configMap");
		json_t *sec = json_object_get(v, "secret");
		if (cm)
			rename_ref(x, cm, "name", "ConfigMap", ns, refs);
		if (sec)
			rename_ref(x, sec, "secretName", "Secret", ns, refs);
		/* the claim is synced on its own (every claim, not only those
		 * pods use): no reference to count */
		rename_ref(x, json_object_get(v, "persistentVolumeClaim"), "claimName", NULL, ns,
			   NULL);
		json_array_foreach (json_object_get(json_object_get(v, "projected"), "sources"), j,
				    src) {
			json_t *pc = json_object_get(src, "configMap");
			json_t *ps = json_object_get(src, "secret");
			rewrite_downward_items(d, json_object_get(src, "downwardAPI"));
			if (pc)
				rename_ref(x, pc, "name", "ConfigMap", ns, refs);
			if (ps)
				rename_ref(x, ps, "name", "Secret", ns, refs);
		}
		/* every other reference of the volume (a generic ephemeral
		 * volume's claim template, volume plugins' Secrets, projected
		 * service-account tokens, sources naming host objects):
		 * hostrefs.c; after the projected Secrets above, as it adds
		 * the pod's token Secret, a host name already */
		syncer_volume_refs(x, v, jstr(d->tmeta, "name"), ns, refs);
	}
	syncer_drop_host_refs(spec);
	/* the pull Secrets are the tenant's host copies; an entry whose name
	 * has no translation goes (never a name the host resolves itself) */
	json_t *pulls = json_object_get(spec, "imagePullSecrets");
	for (i = json_array_size(pulls); i-- > 0;) {
		char hn[SYNCER_NAME_MAX + 1];
		v = json_array_get(pulls, i);
		if (syncer_host_name(ns, jstr(v, "name"), x->tenant, hn, sizeof(hn)) < 0)
			json_array_remove(pulls, i);
		else
			rename_ref(x, v, "name", "Secret", ns, refs);
	}
}

#define SA_MOUNT  "/var/run/secrets/kubernetes.io/serviceaccount"
#define SA_VOLUME "kubicle-tenant-sa"

/* True when container c already mounts something at `path` (kube's
 * service-account admission then leaves it alone). */
static bool mounts_path(const json_t *c, const char *path)
{
	size_t i;
	json_t *m;
	json_array_foreach (json_object_get(c, "volumeMounts"), i, m) {
		const char *p = jstr(m, "mountPath");
		if (p && strcmp(p, path) == 0)
			return true;
	}
	return false;
}

/* The host pod runs as SYNCER_POD_SA, a host service account of no rights
 * (cmd/hostsetup.c), with no host token mounted (any projected token was
 * made a tenant one by syncer_volume_refs); the tenant's service-account
 * folder comes from x->sa_secret, mounted read-only in every container
 * (init ones too, as kube does). */
static void set_service_account(const struct syncer_xlate *x, json_t *spec)
{
	json_object_set_new(spec, "serviceAccountName", json_string(SYNCER_POD_SA));
	json_object_del(spec, "serviceAccount");
	json_object_set_new(spec, "automountServiceAccountToken", json_false());
	if (!x->sa_secret)
		return;
	json_t *vols = json_object_get(spec, "volumes");
	if (!json_is_array(vols)) {
		vols = json_array();
		json_object_set_new(spec, "volumes", vols);
	}
	/* built directly, as put_env: json_pack's format parsing cost more
	 * than the objects (~4 k instructions each, one per container too) */
	json_t *sec = json_object(), *vol = json_object();
	json_object_set_new_nocheck(sec, "secretName", json_string(x->sa_secret));
	json_object_set_new_nocheck(vol, "name", json_string(SA_VOLUME));
	json_object_set_new_nocheck(vol, "secret", sec);
	json_array_append_new(vols, vol);
	static const char *const lists[] = {"initContainers", "containers"};
	for (size_t l = 0; l < KB_ARRAY_SIZE(lists); l++) {
		size_t i;
		json_t *c;
		json_array_foreach (json_object_get(spec, lists[l]), i, c) {
			if (!json_is_object(c) || mounts_path(c, SA_MOUNT))
				continue;
			json_t *vm = json_object_get(c, "volumeMounts");
			if (!json_is_array(vm)) {
				vm = json_array();
				json_object_set_new(c, "volumeMounts", vm);
			}
			json_t *m = json_object();
			json_object_set_new_nocheck(m, "name", json_string(SA_VOLUME));
			json_object_set_new_nocheck(m, "mountPath", json_string(SA_MOUNT));
			json_object_set_new_nocheck(m, "readOnly", json_true());
			json_array_append_new(vm, m);
		}
	}
}

const char *syncer_pod_sa(const json_t *pod, const json_t *sa)
{
	const json_t *spec = json_object_get(pod, "spec");
	json_t *pod_auto = json_object_get(spec, "automountServiceAccountToken");
	/* the pod's setting wins over the service account's */
	if (json_is_false(pod_auto))
		return NULL;
	if (!json_is_true(pod_auto) &&
	    json_is_false(json_object_get(sa, "automountServiceAccountToken")))
		return NULL;
	const char *name = jstr(spec, "serviceAccountName");
	if (!name || !*name)
		name = jstr(spec, "serviceAccount");
	return name && *name ? name : "default";
}

int syncer_sa_secret_name(const char *ns, const char *sa, const char *tenant, char *buf, size_t len)
{
	if (!ns || !sa || !*sa || !tenant || len < SYNCER_NAME_MAX + 1)
		return -EINVAL;
	char key[1024], hex[SYNCER_HASH_HEX + 1] = "";
	snprintf(key, sizeof(key), "%s/sa:%s/%s", ns, sa, tenant);
	hash_hex(key, hex, SYNCER_HASH_HEX);
	/* "<sa>-token-<hex>": the prefix keeps it readable on the host */
	int plen = SYNCER_NAME_MAX - (int)strlen("-token-") - SYNCER_HASH_HEX;
	snprintf(buf, len, "%.*s-token-%s", plen, sa, hex);
	return 0;
}

/* data[key] = base64(value) */
static void put_b64(json_t *data, const char *key, const char *value)
{
	char *b = kb_base64_encode(value, strlen(value));
	if (b)
		json_object_set_new(data, key, json_string(b));
	free(b);
}

json_t *syncer_sa_secret(const struct syncer_xlate *x, const char *ns, const char *sa,
			 const char *uid, const char *token, const char *ca)
{
	char hn[SYNCER_NAME_MAX + 1];
	if (!token || syncer_sa_secret_name(ns, sa, x->tenant, hn, sizeof(hn)) < 0)
		return NULL;
	json_t *tmeta =
	    json_pack("{s:s,s:s,s:s}", "namespace", ns, "name", sa, "uid", uid ? uid : "");
	json_t *meta = host_meta(x, tmeta, "ServiceAccount");
	json_decref(tmeta);
	if (!meta)
		return NULL;
	json_object_set_new(meta, "name", json_string(hn));
	json_t *data = json_object();
	put_b64(data, "token", token);
	put_b64(data, "namespace", ns);
	if (ca)
		put_b64(data, "ca.crt", ca);
	return json_pack("{s:s,s:s,s:o,s:s,s:o}", "apiVersion", "v1", "kind", "Secret", "metadata",
			 meta, "type", "Opaque", "data", data);
}

/* ---- DNS ---------------------------------------------------------------------------- */

/* Appends the strings of `from` not yet in `to` (both arrays), up to max. */
static void append_unique(json_t *to, const json_t *from, size_t max)
{
	size_t i, j;
	json_t *v, *w;
	json_array_foreach (from, i, v) {
		bool dup = false;
		json_array_foreach (to, j, w)
			dup = dup || json_equal(v, w);
		if (!dup && json_array_size(to) < max)
			json_array_append(to, v);
	}
}

/*
 * A pod of dnsPolicy ClusterFirst resolves through the tenant's cluster DNS
 * (proxy/dns/dns.h), with the search path the kubelet would give it in the
 * tenant: the host pod gets dnsPolicy None and the dnsConfig the kubelet
 * would have written, the pod's own dnsConfig appended (nameservers and
 * searches after the cluster's, its options overriding ndots), as the
 * kubelet merges them. Default and None pods are left as they are.
 */
static void set_dns(const struct syncer_xlate *x, json_t *spec, const char *ns)
{
	const char *policy = jstr(spec, "dnsPolicy");
	if (!x->pod_dns || (policy && strcmp(policy, "ClusterFirst") != 0 &&
			    strcmp(policy, "ClusterFirstWithHostNet") != 0))
		return;
	const char *d = x->cluster_domain ? x->cluster_domain : "cluster.local";
	const json_t *own = json_object_get(spec, "dnsConfig");
	char svc[320], all[300];
	snprintf(svc, sizeof(svc), "%s.svc.%s", ns ? ns : "default", d);
	snprintf(all, sizeof(all), "svc.%s", d);
	json_t *servers = json_pack("[s]", x->pod_dns);
	json_t *search = json_pack("[s,s,s]", svc, all, d);
	json_t *opts = json_pack("[{s:s,s:s}]", "name", "ndots", "value", "5");
	append_unique(servers, json_object_get(own, "nameservers"), 3); /* the resolver's limit */
	append_unique(search, json_object_get(own, "searches"), 32);
	size_t i;
	json_t *o;
	bool ndots = true; /* ours is still opts[0] */
	json_array_foreach (json_object_get(own, "options"), i, o) {
		if (ndots && jstr(o, "name") && strcmp(jstr(o, "name"), "ndots") == 0) {
			json_array_remove(opts, 0);
			ndots = false;
		}
		json_array_append(opts, o);
	}
	json_object_set_new(spec, "dnsPolicy", json_string("None"));
	json_object_set_new(spec, "dnsConfig",
			    json_pack("{s:o,s:o,s:o}", "nameservers", servers, "searches", search,
				      "options", opts));
}

/* Fields that would reach into the host: refused by the tenant API already,
 * removed here as a second line of defence. */
static void strip_host_fields(json_t *spec)
{
	static const char *const keys[] = {"nodeName", "hostNetwork", "hostPID", "hostIPC", NULL};
	strip_keys(spec, keys);
	json_t *vols = json_object_get(spec, "volumes");
	for (size_t i = json_array_size(vols); i-- > 0;)
		if (json_object_get(json_array_get(vols, i), "hostPath"))
			json_array_remove(vols, i);
}

json_t *syncer_translate_pod(const struct syncer_xlate *x, const json_t *pod, json_t *refs)
{
	const json_t *tmeta = json_object_get(pod, "metadata");
	const char *ns = jstr(tmeta, "namespace");
	json_t *meta = host_meta(x, tmeta, "Pod");
	if (!meta)
		return NULL;
	json_t *spec = kb_json_copy(json_object_get(pod, "spec"));
	spec = spec ? spec : json_object();
	json_t *hp = json_object();
	json_object_set_new_nocheck(hp, "apiVersion", json_string("v1"));
	json_object_set_new_nocheck(hp, "kind", json_string("Pod"));
	json_object_set_new_nocheck(hp, "metadata", meta);
	json_object_set_new_nocheck(hp, "spec", spec);
	strip_host_fields(spec);
	/* the host's Priority admission computes these from priorityClassName
	 * (which stays: the host's classes, KAI's train or inference among
	 * them) and refuses a pod that brings another value, as the tenant's
	 * default of priority 0 is for any class but a zero one */
	json_object_del(spec, "priority");
	json_object_del(spec, "preemptionPolicy");
	struct downward d = {tmeta, json_object_get(pod, "spec"),
			     json_object_get(meta, "annotations")};
	rewrite_containers(x, &d, spec, ns, refs);
	rewrite_volumes(x, &d, spec, ns, refs);
	/* a cached image runs only with the registry's word (kube's
	 * AlwaysPullImages; the tenant's admission set it already:
	 * policies/images.c) */
	if (!x->image_pull_any)
		policy_pull_always(spec);
	set_hostname(spec, tmeta);
	set_dns(x, spec, ns);
	json_object_set_new(spec, "enableServiceLinks", json_false());
	set_service_account(x, spec);
	set_scheduler(x, hp, tmeta);
	return hp;
}

json_t *syncer_translate_config(const struct syncer_xlate *x, const json_t *obj, const char *kind)
{
	json_t *meta = host_meta(x, json_object_get(obj, "metadata"), kind);
	if (!meta)
		return NULL;
	json_t *out =
	    json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", kind, "metadata", meta);
	static const char *const keys[] = {"data", "binaryData", "stringData", "type", "immutable"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(obj, keys[i]);
		if (v)
			json_object_set_new(out, keys[i], kb_json_copy(v));
	}
	return out;
}

/* ---- PersistentVolumeClaims ----------------------------------------------------------- */

/* Annotations the host's volume controllers and scheduler write on a claim:
 * a tenant's copy must not steer them (a claim marked bound, a provisioner
 * or a node chosen for it). */
static const char *const pvc_host_annotations[] = {
    "pv.kubernetes.io/bind-completed",
    "pv.kubernetes.io/bound-by-controller",
    "volume.beta.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/storage-provisioner",
    "volume.kubernetes.io/selected-node",
    NULL,
};

/*
 * A claim's dataSource or dataSourceRef (src, a copy, modified): another
 * claim of the tenant (kind PersistentVolumeClaim of the core group, in the
 * claim's own namespace) gets its translated name. Anything else is dropped
 * (false): a VolumeSnapshot or a populator's object names a tenant object
 * the host does not have, or worse another host object of that name, so the
 * host claim starts empty instead; a claim in another namespace needs a
 * ReferenceGrant, which the host cannot check for a tenant's namespaces.
 */
static bool pvc_source(const struct syncer_xlate *x, json_t *src, const char *ns)
{
	const char *group = jstr(src, "apiGroup"), *kind = jstr(src, "kind");
	const char *sns = jstr(src, "namespace"), *name = jstr(src, "name");
	char hn[SYNCER_NAME_MAX + 1];
	if (!json_is_object(src) || (group && *group) || !kind ||
	    strcmp(kind, "PersistentVolumeClaim") != 0 || (sns && *sns && strcmp(sns, ns) != 0) ||
	    syncer_host_name(ns, name, x->tenant, hn, sizeof(hn)) < 0)
		return false;
	json_object_set_new(src, "name", json_string(hn));
	json_object_del(src, "namespace");
	return true;
}

/*
 * A claim that can only bind an existing host volume (a label selector, which
 * dynamic provisioning refuses; or storageClassName "", which asks for no
 * provisioning) would otherwise take any Available host PersistentVolume its
 * labels or its lack of class match: another tenant's or the platform's.
 * Its host copy also requires the label kubicle.dev/tenant=<tenant>, so
 * that it binds only volumes the platform made for this tenant (as
 * vCluster scopes a synced claim's selector). A claim of a class (named,
 * or the host's default) is left as it is, since a selector would stop its
 * dynamic provisioning: like any namespace's claim in kube, it can still
 * bind an Available pre-made host volume of that class (docs/hostrefs.md).
 * spec: the host claim's (modified).
 */
static void pvc_scope_selector(const struct syncer_xlate *x, json_t *spec)
{
	const char *cls = jstr(spec, "storageClassName");
	json_t *sel = json_object_get(spec, "selector");
	if (!json_is_object(sel) && !(cls && !*cls))
		return;
	if (!json_is_object(sel)) {
		sel = json_object();
		json_object_set_new(spec, "selector", sel);
	}
	json_t *ml = json_object_get(sel, "matchLabels");
	if (!json_is_object(ml)) {
		ml = json_object();
		json_object_set_new(sel, "matchLabels", ml);
	}
	json_object_set_new(ml, LBL_TENANT, json_string(x->tenant));
}

json_t *syncer_translate_pvc(const struct syncer_xlate *x, const json_t *pvc)
{
	static const char *const keys[] = {"accessModes",
					   "resources",
					   "storageClassName",
					   "volumeMode",
					   "volumeAttributesClassName",
					   "selector"};
	static const char *const sources[] = {"dataSource", "dataSourceRef"};
	const json_t *tmeta = json_object_get(pvc, "metadata");
	const json_t *ts = json_object_get(pvc, "spec");
	const char *ns = jstr(tmeta, "namespace");
	json_t *meta = host_meta(x, tmeta, "PersistentVolumeClaim");
	if (!meta)
		return NULL;
	strip_keys(json_object_get(meta, "annotations"), pvc_host_annotations);
	json_t *spec = json_object();
	/* spec.volumeName is not passed down: it names a host PersistentVolume,
	 * and a tenant may not bind to a host volume by name */
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(ts, keys[i]);
		if (v)
			json_object_set_new(spec, keys[i], kb_json_copy(v));
	}
	for (size_t i = 0; i < KB_ARRAY_SIZE(sources); i++) {
		json_t *src = kb_json_copy(json_object_get(ts, sources[i]));
		if (src && pvc_source(x, src, ns ? ns : ""))
			json_object_set_new(spec, sources[i], src);
		else
			json_decref(src);
	}
	pvc_scope_selector(x, spec);
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "PersistentVolumeClaim",
			 "metadata", meta, "spec", spec);
}

json_t *syncer_pvc_status_from_host(const json_t *host)
{
	static const char *const keys[] = {"phase",
					   "accessModes",
					   "capacity",
					   "conditions",
					   "allocatedResources",
					   "allocatedResourceStatuses",
					   "currentVolumeAttributesClassName",
					   "modifyVolumeStatus"};
	const json_t *hs = json_object_get(host, "status");
	json_t *st = json_object();
	for (size_t i = 0; st && i < KB_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(hs, keys[i]);
		if (v)
			json_object_set_new(st, keys[i], kb_json_copy(v));
	}
	return st;
}

json_t *syncer_status_from_host(const json_t *host)
{
	json_t *st = kb_json_copy(json_object_get(host, "status"));
	return st ? st : json_object();
}

/* Copies the members `keys` (NULL-terminated) of `from` into `to`, sharing
 * the values (no deep copy). */
static void keep_keys(json_t *to, const json_t *from, const char *const *keys)
{
	for (; *keys; keys++) {
		json_t *v = json_object_get(from, *keys);
		if (v)
			json_object_set(to, *keys, v);
	}
}

/* [{name, image}] of container list `list`, or NULL when absent. */
static json_t *name_image_list(const json_t *list)
{
	if (!json_is_array(list))
		return NULL;
	static const char *const keys[] = {"name", "image", NULL};
	json_t *out = json_array();
	size_t i;
	json_t *c;
	json_array_foreach (list, i, c) {
		json_t *e = json_object();
		keep_keys(e, c, keys);
		json_array_append_new(out, e);
	}
	return out;
}

json_t *syncer_host_pod_view(const json_t *hp)
{
	static const char *const meta_keys[] = {"name",
						"namespace",
						"uid",
						"resourceVersion",
						"labels",
						"annotations",
						"deletionTimestamp",
						"deletionGracePeriodSeconds",
						NULL};
	static const char *const spec_keys[] = {"nodeName", "activeDeadlineSeconds", "tolerations",
						NULL};
	const json_t *hs = json_object_get(hp, "spec");
	json_t *meta = json_object(), *spec = json_object();
	keep_keys(meta, json_object_get(hp, "metadata"), meta_keys);
	keep_keys(spec, hs, spec_keys);
	json_t *cl = name_image_list(json_object_get(hs, "containers"));
	if (cl)
		json_object_set_new(spec, "containers", cl);
	cl = name_image_list(json_object_get(hs, "initContainers"));
	if (cl)
		json_object_set_new(spec, "initContainers", cl);
	cl = name_image_list(json_object_get(hs, "ephemeralContainers"));
	if (cl)
		json_object_set_new(spec, "ephemeralContainers", cl);
	json_t *v = json_pack("{s:o,s:o}", "metadata", meta, "spec", spec);
	json_t *st = json_object_get(hp, "status");
	if (v && st)
		json_object_set(v, "status", st);
	return v;
}

json_t *syncer_ephemeral_patch(const json_t *want, const json_t *have)
{
	const json_t *hl = json_object_get(json_object_get(have, "spec"), "ephemeralContainers");
	json_t *add = json_array();
	size_t i, j;
	json_t *w, *h;
	json_array_foreach (json_object_get(json_object_get(want, "spec"), "ephemeralContainers"),
			    i, w) {
		bool there = false;
		json_array_foreach (hl, j, h)
			there = there || (jstr(w, "name") && jstr(h, "name") &&
					  strcmp(jstr(w, "name"), jstr(h, "name")) == 0);
		if (!there)
			json_array_append(add, w);
	}
	if (!json_array_size(add)) {
		json_decref(add);
		return NULL;
	}
	return json_pack("{s:{s:o}}", "spec", "ephemeralContainers", add);
}

/* Whether hn is where tenant object ns/name of `kind` lives on the host:
 * its translated name, the name an older Kubicle gave it (adopted, see
 * syncer_host_name_legacy), or for a service account's token Secret its
 * syncer_sa_secret_name, for a pod's projected tokens' Secret its
 * syncer_pod_token_name. */
static bool name_is_of(const char *hn, const char *kind, const char *ns, const char *name,
		       const char *uid, const char *tenant)
{
	char want[SYNCER_NAME_MAX + 1];
	if (kind && strcmp(kind, "ServiceAccount") == 0)
		return syncer_sa_secret_name(ns, name, tenant, want, sizeof(want)) == 0 &&
		       strcmp(want, hn) == 0;
	if (kind && strcmp(kind, SYNCER_POD_TOKEN_KIND) == 0)
		return syncer_pod_token_name(ns, name, uid, tenant, want, sizeof(want)) == 0 &&
		       strcmp(want, hn) == 0;
	if (syncer_host_name(ns, name, tenant, want, sizeof(want)) == 0 && strcmp(want, hn) == 0)
		return true;
	return syncer_host_name_legacy(ns, name, tenant, want, sizeof(want)) == 0 &&
	       strcmp(want, hn) == 0;
}

bool syncer_host_owner(const json_t *host, const char *tenant, const char **ns, const char **name,
		       const char **uid)
{
	const json_t *meta = json_object_get(host, "metadata");
	const json_t *labels = json_object_get(meta, "labels");
	const char *t = jstr(labels, LBL_TENANT), *lns = jstr(labels, LBL_NAMESPACE);
	const char *hn = jstr(meta, "name");
	const json_t *ann = json_object_get(meta, "annotations");
	if (!t || strcmp(t, tenant) != 0 || !hn)
		return false;
	*ns = jstr(ann, ANN_NAMESPACE);
	*name = jstr(ann, ANN_NAME);
	*uid = jstr(ann, ANN_UID);
	if (!*ns || !*name || !*uid)
		return false;
	/* the namespace label, when there is one (objects of older versions
	 * may lack it), says the same */
	if (lns && strcmp(lns, *ns) != 0)
		return false;
	return name_is_of(hn, jstr(ann, ANN_KIND), *ns, *name, *uid, tenant);
}

bool syncer_host_is(const json_t *host, const char *tenant, const char *ns, const char *name,
		    const char *uid)
{
	const char *hns, *hname, *huid;
	return syncer_host_owner(host, tenant, &hns, &hname, &huid) &&
	       strcmp(hns, ns ? ns : "") == 0 && name && strcmp(hname, name) == 0 &&
	       (!uid || strcmp(huid, uid) == 0);
}

json_t *syncer_translate_node(const json_t *node, const char *tenant)
{
	const json_t *meta = json_object_get(node, "metadata");
	const char *name = jstr(meta, "name");
	if (!name)
		return NULL;
	json_t *labels = kb_json_copy(json_object_get(meta, "labels"));
	labels = labels ? labels : json_object();
	json_t *out = json_pack("{s:s,s:s,s:{s:s,s:o,s:{s:s}},s:{},s:{}}", "apiVersion", "v1",
				"kind", "Node", "metadata", "name", name, "labels", labels,
				"annotations", "kubicle.dev/host-node", "true", "spec", "status");
	const json_t *hst = json_object_get(node, "status");
	json_t *st = json_object_get(out, "status");
	static const char *const keys[] = {"capacity", "allocatable", "conditions", "nodeInfo",
					   "addresses"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(keys); i++) {
		json_t *v = json_object_get(hst, keys[i]);
		if (v)
			json_object_set_new(st, keys[i], kb_json_copy(v));
	}
	(void)tenant;
	return out;
}

/* ---- pod updates ------------------------------------------------------------------- */

/* Label or annotation changes: keys of `want` the host lacks or has with
 * another value; keys of `prev` gone from `want` are deleted (null). */
static void map_diff(json_t *pmeta, const char *key, const json_t *want, const json_t *have,
		     const json_t *prev)
{
	json_t *w = json_object_get(json_object_get(want, "metadata"), key);
	json_t *h = json_object_get(json_object_get(have, "metadata"), key);
	json_t *p = json_object_get(json_object_get(prev, "metadata"), key);
	json_t *d = json_object();
	const char *k;
	json_t *v;
	json_object_foreach (w, k, v) {
		if (!json_equal(v, json_object_get(h, k)))
			json_object_set(d, k, v);
	}
	json_object_foreach (p, k, v) {
		if (!json_object_get(w, k) && json_object_get(h, k))
			json_object_set_new(d, k, json_null());
	}
	if (json_object_size(d))
		json_object_set(pmeta, key, d);
	json_decref(d);
}

static json_t *by_name(const json_t *list, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach (list, i, e) {
		const char *n = jstr(e, "name");
		if (n && name && strcmp(n, name) == 0)
			return e;
	}
	return NULL;
}

/* Image changes of list `key`, as strategic-merge entries keyed by name. */
static void image_diff(json_t *pspec, const char *key, const json_t *want, const json_t *have)
{
	json_t *hl = json_object_get(have, key), *out = json_array();
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(want, key), i, c) {
		json_t *h = by_name(hl, jstr(c, "name"));
		json_t *img = json_object_get(c, "image");
		if (h && img && !json_equal(img, json_object_get(h, "image")))
			json_array_append_new(
			    out, json_pack("{s:s,s:O}", "name", jstr(c, "name"), "image", img));
	}
	if (json_array_size(out))
		json_object_set(pspec, key, out);
	json_decref(out);
}

/* Tolerations may only be added: the host's list plus those it lacks (the
 * host may have added its own defaults, which must stay). Tolerations are an
 * atomic list, so the whole list is sent. */
static void toleration_diff(json_t *pspec, const json_t *want, const json_t *have)
{
	json_t *hl = json_object_get(have, "tolerations");
	json_t *out = json_is_array(hl) ? json_copy(hl) : json_array();
	bool added = false;
	size_t i, j;
	json_t *t, *e;
	json_array_foreach (json_object_get(want, "tolerations"), i, t) {
		bool found = false;
		json_array_foreach (hl, j, e)
			found = found || json_equal(t, e);
		if (!found) {
			json_array_append(out, t);
			added = true;
		}
	}
	if (added)
		json_object_set(pspec, "tolerations", out);
	json_decref(out);
}

/* The metadata part of an update patch: labels and annotations (NULL on
 * ENOMEM). */
static json_t *meta_patch(const json_t *want, const json_t *have, const json_t *prev)
{
	json_t *pmeta = json_object();
	if (pmeta) {
		map_diff(pmeta, "labels", want, have, prev);
		map_diff(pmeta, "annotations", want, have, prev);
	}
	return pmeta;
}

json_t *syncer_meta_patch(const json_t *want, const json_t *have, const json_t *prev)
{
	return meta_patch(want, have, prev);
}

/* {"metadata": pmeta, "spec": pspec} without the empty parts (either may be
 * NULL), or NULL when both are empty; takes both references. */
static json_t *patch_of(json_t *pmeta, json_t *pspec)
{
	json_t *patch = json_object();
	if (patch && json_object_size(pmeta))
		json_object_set(patch, "metadata", pmeta);
	if (patch && json_object_size(pspec))
		json_object_set(patch, "spec", pspec);
	json_decref(pmeta);
	json_decref(pspec);
	if (!json_object_size(patch)) {
		json_decref(patch);
		return NULL;
	}
	return patch;
}

json_t *syncer_pod_update_patch(const json_t *want, const json_t *have, const json_t *prev)
{
	json_t *pspec = json_object();
	const json_t *ws = json_object_get(want, "spec"), *hs = json_object_get(have, "spec");
	if (!pspec)
		return NULL;
	image_diff(pspec, "containers", ws, hs);
	image_diff(pspec, "initContainers", ws, hs);
	json_t *ads = json_object_get(ws, "activeDeadlineSeconds");
	if (json_is_integer(ads) && !json_equal(ads, json_object_get(hs, "activeDeadlineSeconds")))
		json_object_set(pspec, "activeDeadlineSeconds", ads);
	toleration_diff(pspec, ws, hs);
	return patch_of(meta_patch(want, have, prev), pspec);
}

/* ---- claim updates ---------------------------------------------------------------------- */

/* Resource maps `a` and `b` ask for the same amounts: a host writes its
 * quantities in canonical form ("2048Mi" comes back as "2Gi"). */
static bool requests_equal(const json_t *a, const json_t *b)
{
	const char *k;
	json_t *v;
	if (!json_is_object(a) || !json_is_object(b) || json_object_size(a) != json_object_size(b))
		return false;
	json_object_foreach ((json_t *)a, k, v) {
		const char *x = json_string_value(v);
		const char *y = json_string_value(json_object_get(b, k));
		int cmp;
		if (!x || !y)
			return false;
		if (strcmp(x, y) != 0 && (kb_quantity_cmp(x, y, &cmp) < 0 || cmp != 0))
			return false;
	}
	return true;
}

json_t *syncer_pvc_update_patch(const json_t *want, const json_t *have, const json_t *prev)
{
	json_t *pspec = json_object();
	const json_t *ws = json_object_get(want, "spec"), *hs = json_object_get(have, "spec");
	if (!pspec)
		return NULL;
	/* a larger request is a volume expansion (the host refuses what its
	 * class does not allow, and any change to a claim not bound yet) */
	json_t *wr = json_object_get(json_object_get(ws, "resources"), "requests");
	if (json_is_object(wr) &&
	    !requests_equal(wr, json_object_get(json_object_get(hs, "resources"), "requests")))
		json_object_set_new(pspec, "resources", json_pack("{s:O}", "requests", wr));
	json_t *wv = json_object_get(ws, "volumeAttributesClassName");
	json_t *hv = json_object_get(hs, "volumeAttributesClassName");
	if (wv && !json_is_null(wv) ? !json_equal(wv, hv) : hv && !json_is_null(hv))
		json_object_set_new(pspec, "volumeAttributesClassName",
				    wv ? json_incref(wv) : json_null());
	return patch_of(meta_patch(want, have, prev), pspec);
}

/* ---- Services ----------------------------------------------------------------------------- */

/* Spec fields copied as they are. externalIPs is not among them: an
 * external IP makes every host node take traffic for that address, which a
 * tenant may not claim on a shared cluster (kube's DenyServiceExternalIPs
 * admission refuses it for the same reason). clusterIP is the host's to
 * allocate (only "None", headless, is passed). */
static const char *const svc_spec_keys[] = {"type",
					    "sessionAffinity",
					    "sessionAffinityConfig",
					    "publishNotReadyAddresses",
					    "ipFamilyPolicy",
					    "ipFamilies",
					    "internalTrafficPolicy",
					    "externalTrafficPolicy",
					    "loadBalancerClass",
					    "loadBalancerSourceRanges",
					    "allocateLoadBalancerNodePorts",
					    "externalName",
					    "trafficDistribution",
					    NULL};
/* Of those, the ones whose absence means "none" rather than "the host's
 * default": an update that removes them removes them on the host. */
static const char *const svc_clearable_keys[] = {"loadBalancerSourceRanges", "externalName", NULL};

static bool svc_type_is(const json_t *spec, const char *type)
{
	const char *t = jstr(spec, "type");
	return t && strcmp(t, type) == 0;
}

/* Whether the ports of a Service of this spec carry node ports. */
static bool svc_node_ports(const json_t *spec)
{
	return svc_type_is(spec, "NodePort") || svc_type_is(spec, "LoadBalancer");
}

/* The host's ports for tenant spec ts: name, protocol, port, targetPort,
 * appProtocol, and nodePort when the type has node ports and the tenant
 * Service has one (set by the tenant, or written back from the host). */
static json_t *svc_ports(const json_t *ts)
{
	static const char *const keys[] = {"name", "protocol", "port", "targetPort", "appProtocol"};
	json_t *out = json_array();
	bool node = svc_node_ports(ts);
	size_t i;
	json_t *p;
	json_array_foreach (json_object_get(ts, "ports"), i, p) {
		json_t *hp = json_object();
		for (size_t k = 0; k < KB_ARRAY_SIZE(keys); k++)
			if (json_object_get(p, keys[k]))
				json_object_set(hp, keys[k], json_object_get(p, keys[k]));
		if (node && json_integer_value(json_object_get(p, "nodePort")) > 0)
			json_object_set(hp, "nodePort", json_object_get(p, "nodePort"));
		json_array_append_new(out, hp);
	}
	return out;
}

/* The host selector: the tenant's plus the tenant and namespace labels every
 * host pod of that namespace carries, so that it selects those host pods
 * only. NULL when the tenant Service selects nothing (none or empty: kube
 * manages no endpoints for it). */
static json_t *svc_selector(const struct syncer_xlate *x, const json_t *ts, const char *ns)
{
	const json_t *sel = json_object_get(ts, "selector");
	if (!json_is_object(sel) || json_object_size(sel) == 0)
		return NULL;
	json_t *out = kb_json_copy(sel);
	json_object_set_new(out, LBL_TENANT, json_string(x->tenant));
	json_object_set_new(out, LBL_NAMESPACE, json_string(ns ? ns : ""));
	return out;
}

json_t *syncer_translate_service(const struct syncer_xlate *x, const json_t *svc)
{
	const json_t *tmeta = json_object_get(svc, "metadata");
	const json_t *ts = json_object_get(svc, "spec");
	json_t *meta = host_meta(x, tmeta, "Service");
	if (!meta)
		return NULL;
	json_t *spec = json_object();
	for (size_t i = 0; svc_spec_keys[i]; i++) {
		json_t *v = json_object_get(ts, svc_spec_keys[i]);
		if (v)
			json_object_set_new(spec, svc_spec_keys[i], kb_json_copy(v));
	}
	const char *cip = jstr(ts, "clusterIP");
	if (cip && strcmp(cip, "None") == 0)
		json_object_set_new(spec, "clusterIP", json_string("None"));
	json_t *hc = json_object_get(ts, "healthCheckNodePort");
	if (svc_type_is(ts, "LoadBalancer") && json_integer_value(hc) > 0)
		json_object_set(spec, "healthCheckNodePort", hc);
	if (json_object_get(ts, "ports"))
		json_object_set_new(spec, "ports", svc_ports(ts));
	json_t *sel = svc_selector(x, ts, jstr(tmeta, "namespace"));
	if (sel)
		json_object_set_new(spec, "selector", sel);
	return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "Service", "metadata",
			 meta, "spec", spec);
}

/* The port of `list` with this port number and protocol (TCP when unset). */
static json_t *svc_port_match(const json_t *list, const json_t *p)
{
	const char *proto = jstr(p, "protocol") ? jstr(p, "protocol") : "TCP";
	size_t i;
	json_t *e;
	json_array_foreach (list, i, e) {
		const char *ep = jstr(e, "protocol") ? jstr(e, "protocol") : "TCP";
		if (json_equal(json_object_get(e, "port"), json_object_get(p, "port")) &&
		    strcmp(ep, proto) == 0)
			return e;
	}
	return NULL;
}

json_t *syncer_service_back(const json_t *tsvc, const json_t *hsvc)
{
	const json_t *hs = json_object_get(hsvc, "spec");
	json_t *out = kb_json_copy(tsvc);
	if (!out)
		return NULL;
	json_t *ts = obj_at(out, "spec");
	static const char *const ips[] = {"clusterIP", "clusterIPs"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(ips); i++) {
		json_t *v = json_object_get(hs, ips[i]);
		if (v && !json_is_null(v))
			json_object_set_new(ts, ips[i], kb_json_copy(v));
	}
	size_t i;
	json_t *p;
	json_array_foreach (json_object_get(ts, "ports"), i, p) {
		json_t *np =
		    json_object_get(svc_port_match(json_object_get(hs, "ports"), p), "nodePort");
		if (json_is_object(p) && json_integer_value(np) > 0)
			json_object_set(p, "nodePort", np);
	}
	json_t *hc = json_object_get(hs, "healthCheckNodePort");
	if (json_integer_value(hc) > 0)
		json_object_set(ts, "healthCheckNodePort", hc);
	json_t *lb = json_object_get(json_object_get(hsvc, "status"), "loadBalancer");
	json_object_set_new(obj_at(out, "status"), "loadBalancer",
			    lb ? kb_json_copy(lb) : json_object());
	if (kb_json_same(out, tsvc)) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* The ports of want's spec, a port without a node port taking the host's
 * (have's) for the same port and protocol: an update never gives up a node
 * port the host allocated. New reference. */
static json_t *svc_ports_keep(const json_t *ws, const json_t *hs)
{
	json_t *out = kb_json_copy(json_object_get(ws, "ports"));
	size_t i;
	json_t *p;
	if (!svc_node_ports(ws))
		return out;
	json_array_foreach (out, i, p) {
		json_t *np =
		    json_object_get(svc_port_match(json_object_get(hs, "ports"), p), "nodePort");
		if (!json_object_get(p, "nodePort") && json_integer_value(np) > 0)
			json_object_set(p, "nodePort", np);
	}
	return out;
}

/* Selector changes as a merge patch: want's keys the host lacks or has with
 * another value, null for the host's keys want lacks; NULL when equal. */
static json_t *svc_selector_diff(const json_t *w, const json_t *h)
{
	if (kb_json_same(w, h))
		return NULL;
	if (!json_is_object(w))
		return json_null();
	json_t *d = kb_json_copy(w);
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)h, k, v) {
		if (!json_object_get(w, k))
			json_object_set_new(d, k, json_null());
	}
	return d;
}

static bool svc_clearable(const char *key)
{
	for (size_t i = 0; svc_clearable_keys[i]; i++)
		if (strcmp(svc_clearable_keys[i], key) == 0)
			return true;
	return false;
}

json_t *syncer_service_update_patch(const json_t *want, const json_t *have, const json_t *prev)
{
	json_t *pspec = json_object();
	const json_t *ws = json_object_get(want, "spec"), *hs = json_object_get(have, "spec");
	if (!pspec)
		return NULL;
	for (size_t i = 0; svc_spec_keys[i]; i++) {
		const char *k = svc_spec_keys[i];
		json_t *w = json_object_get(ws, k), *h = json_object_get(hs, k);
		if (kb_json_same(w, h) || (!w && !svc_clearable(k)))
			continue; /* unset: the host's default stays */
		json_object_set_new(pspec, k, w ? json_incref(w) : json_null());
	}
	json_t *hc = json_object_get(ws, "healthCheckNodePort");
	if (hc && !kb_json_same(hc, json_object_get(hs, "healthCheckNodePort")))
		json_object_set(pspec, "healthCheckNodePort", hc);
	json_t *ports = svc_ports_keep(ws, hs);
	if (ports && !kb_json_same(ports, json_object_get(hs, "ports")))
		json_object_set(pspec, "ports", ports);
	json_decref(ports);
	json_t *sel =
	    svc_selector_diff(json_object_get(ws, "selector"), json_object_get(hs, "selector"));
	if (sel)
		json_object_set_new(pspec, "selector", sel);
	return patch_of(meta_patch(want, have, prev), pspec);
}
