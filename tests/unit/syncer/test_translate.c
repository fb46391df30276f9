/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for syncer/translate.c: translated names (short form, hashed long
 * form, no collisions), the host-object contract's labels and annotations,
 * scheduler profiles (queue set, tenant's own keys replaced), reference
 * rewriting, service account handling, PersistentVolumeClaims (translation,
 * status back, updates, claim names in pods) and the kubeconfig reader.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kubeconfig.h"
#include "syncer/syncer_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static const char *s_at(const json_t *o, const char *a, const char *b)
{
	return json_string_value(json_object_get(json_object_get(o, a), b));
}

START_TEST(name_short)
{
	char buf[64];
	ck_assert_int_eq(syncer_host_name("default", "web", "t1", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "web-x-default-x-t1");
	ck_assert_int_eq(syncer_host_name("", "n1", "t1", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "n1-x-t1");
	ck_assert_int_eq(syncer_host_name("default", "", "t1", buf, sizeof(buf)), -EINVAL);
}
END_TEST

START_TEST(name_long_hashed_stable)
{
	char a[64], b[64], c[64];
	const char *longn = "a-very-long-pod-name-that-goes-on-and-on-and-on-for-ever-and-ever";
	ck_assert_int_eq(syncer_host_name("default", longn, "t1", a, sizeof(a)), 0);
	ck_assert_int_eq(strlen(a), 63);
	ck_assert_int_eq(syncer_host_name("default", longn, "t1", b, sizeof(b)), 0);
	ck_assert_str_eq(a, b); /* stable */
	ck_assert_int_eq(syncer_host_name("default", longn, "t2", c, sizeof(c)), 0);
	ck_assert_str_ne(a, c); /* the tenant is part of the hash */
	/* a DNS label: lower-case alphanumerics and '-', alphanumeric at both ends */
	for (const char *p = a; *p; p++)
		ck_assert((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-');
	ck_assert(a[62] != '-' && a[0] != '-');
}
END_TEST

START_TEST(name_ambiguous_parts_hashed)
{
	/* "a-x-b" in ns "c" and "a" in ns "b-x-c" would both read
	 * "a-x-b-x-c-x-t": such names take the hashed form and differ */
	char a[64], b[64];
	ck_assert_int_eq(syncer_host_name("c", "a-x-b", "t", a, sizeof(a)), 0);
	ck_assert_int_eq(syncer_host_name("b-x-c", "a", "t", b, sizeof(b)), 0);
	ck_assert_str_ne(a, b);
	ck_assert_str_ne(a, "a-x-b-x-c-x-t");
	/* a 62-char short name is kept; 63 would be ambiguous with hashed ones */
	char n[64];
	memset(n, 'p', 52);
	n[52] = '\0'; /* 52 + "-x-ns-x-t1" (10) = 62 */
	ck_assert_int_eq(syncer_host_name("ns", n, "t1", a, sizeof(a)), 0);
	ck_assert_int_eq(strlen(a), 62);
	ck_assert(strstr(a, "-x-ns-x-t1") != NULL);
	n[52] = 'p';
	n[53] = '\0';
	ck_assert_int_eq(syncer_host_name("ns", n, "t1", a, sizeof(a)), 0);
	ck_assert_int_eq(strlen(a), 63);
}
END_TEST

/* The issue's collisions: across tenants and inside one. */
START_TEST(name_issue_collisions)
{
	char a[64], b[64];
	ck_assert_int_eq(syncer_host_name("b-x", "a", "tu", a, sizeof(a)), 0);
	ck_assert_int_eq(syncer_host_name("b", "a", "x-tu", b, sizeof(b)), 0);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq(syncer_host_name("b", "a-x", "tu", a, sizeof(a)), 0);
	ck_assert_int_eq(syncer_host_name("x-b", "a", "tu", b, sizeof(b)), 0);
	ck_assert_str_ne(a, b);
	/* both hashed, readable prefix, 63 characters */
	ck_assert_int_eq(strlen(a), 63);
	ck_assert(strncmp(a, "a-x-x-b-x-tu-", 13) == 0);
	/* an unambiguous name keeps today's short form */
	ck_assert_int_eq(syncer_host_name("b", "a", "tu", a, sizeof(a)), 0);
	ck_assert_str_eq(a, "a-x-b-x-tu");
	ck_assert_int_eq(syncer_host_name("b/c", "a", "tu", a, sizeof(a)), -EINVAL);
}
END_TEST

/* Names at the boundaries: separators at either end of a part, inside a
 * part, names of 62/63 characters, the longest names. */
START_TEST(name_boundaries)
{
	static const char *const parts[] = {
	    "a",
	    "x",
	    "a-x",
	    "x-a",
	    "a-x-a",
	    "x-x",
	    "x-x-x",
	    "a-xx-a",
	    "ax-xa",
	    "a--x",
	    "x--a",
	    "a-x--x-a",
	    "b.x",
	    "x.b",
	    "a.x-a",
	    "a-x.b",
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", /* 63 */
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",              /* 50 */
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-x",             /* 51 */
	};
	size_t np = sizeof(parts) / sizeof(*parts), n = 0;
	char(*names)[64] = calloc(np * np * np + np * np, sizeof(*names));
	for (size_t i = 0; i < np; i++)
		for (size_t j = 0; j < np; j++) {
			/* tenants are labels: no dots */
			for (size_t k = 0; k < np; k++) {
				if (strchr(parts[k], '.') || strchr(parts[j], '.'))
					continue;
				ck_assert_int_eq(
				    syncer_host_name(parts[j], parts[i], parts[k], names[n], 64),
				    0);
				size_t l = strlen(names[n]);
				ck_assert(l <= 63 && l > 0);
				ck_assert(names[n][0] != '-' && names[n][l - 1] != '-');
				n++;
			}
			if (!strchr(parts[j], '.'))
				ck_assert_int_eq(
				    syncer_host_name("", parts[i], parts[j], names[n++], 64), 0);
		}
	qsort(names, n, sizeof(*names), (int (*)(const void *, const void *))strcmp);
	for (size_t i = 1; i < n; i++)
		ck_assert_msg(strcmp(names[i - 1], names[i]) != 0, "collision: %s", names[i]);
	free(names);
	char buf[64], n52[64];
	memset(n52, 'p', 52);
	n52[52] = '\0';
	/* 62 with two separators: short; the same length with a third: hashed */
	ck_assert_int_eq(syncer_host_name("ns", n52, "t1", buf, sizeof(buf)), 0);
	ck_assert_int_eq(strlen(buf), 62);
	n52[50] = '-';
	n52[51] = 'x';
	ck_assert_int_eq(syncer_host_name("ns", n52, "t1", buf, sizeof(buf)), 0);
	ck_assert_int_eq(strlen(buf), 63);
	/* the hashed form of a 253-character name */
	char big[254];
	memset(big, 'b', 253);
	big[253] = '\0';
	ck_assert_int_eq(syncer_host_name("ns", big, "t1", buf, sizeof(buf)), 0);
	ck_assert_int_eq(strlen(buf), 63);
	ck_assert_int_eq(buf[46], '-');
}
END_TEST

/* Every valid label of 1 to 4 characters over {a, x, -}: no two distinct
 * (ns, name, tenant) triples, nor cluster-scoped (name, tenant) pairs, share
 * a host name. */
static size_t small_labels(char out[][5])
{
	static const char al[] = "ax-";
	size_t n = 0;
	for (size_t len = 1; len <= 4; len++) {
		size_t total = 1;
		for (size_t i = 0; i < len; i++)
			total *= 3;
		for (size_t v = 0; v < total; v++) {
			char s[5];
			size_t x = v;
			for (size_t i = 0; i < len; i++, x /= 3)
				s[i] = al[x % 3];
			s[len] = '\0';
			if (s[0] == '-' || s[len - 1] == '-')
				continue;
			memcpy(out[n++], s, 5);
		}
	}
	return n;
}

START_TEST(name_exhaustive_small)
{
	char labels[128][5];
	size_t nl = small_labels(labels);
	ck_assert_int_eq(nl, 2 + 4 + 12 + 36);
	size_t max = nl * nl * nl + nl * nl, n = 0;
	char(*names)[64] = calloc(max, sizeof(*names));
	for (size_t i = 0; i < nl; i++)
		for (size_t j = 0; j < nl; j++) {
			for (size_t k = 0; k < nl; k++)
				ck_assert_int_eq(syncer_host_name(labels[j], labels[i], labels[k],
								  names[n++], 64),
						 0);
			ck_assert_int_eq(syncer_host_name("", labels[i], labels[j], names[n++], 64),
					 0);
		}
	ck_assert_int_eq(n, max);
	qsort(names, n, sizeof(*names), (int (*)(const void *, const void *))strcmp);
	for (size_t i = 1; i < n; i++)
		ck_assert_msg(strcmp(names[i - 1], names[i]) != 0, "collision: %s", names[i]);
	free(names);
}
END_TEST

/* Tenant names that would break the translation's promises. */
START_TEST(tenant_names)
{
	ck_assert_ptr_null(syncer_check_tenant("tu"));
	ck_assert_ptr_null(syncer_check_tenant("x-tu"));
	ck_assert_ptr_null(syncer_check_tenant("a-token-0123456789abcde")); /* 15 digits */
	ck_assert_ptr_nonnull(syncer_check_tenant("a-token-0123456789abcdef"));
	ck_assert_ptr_nonnull(syncer_check_tenant("token-0123456789abcdef"));
	ck_assert_ptr_nonnull(syncer_check_tenant("a-x-b"));
	ck_assert_ptr_nonnull(syncer_check_tenant("-a"));
	ck_assert_ptr_nonnull(syncer_check_tenant("A"));
	ck_assert_ptr_nonnull(syncer_check_tenant(""));
	ck_assert_ptr_nonnull(syncer_check_tenant("a23456789012345678901234567890123456789012"));
}
END_TEST

/* Upgrades: the name an older Kubicle gave, and ownership by annotation. */
START_TEST(name_legacy_and_owner)
{
	char l[64], h[64];
	ck_assert_int_eq(syncer_host_name_legacy("b", "a-x", "tu", l, sizeof(l)), 0);
	ck_assert_str_eq(l, "a-x-x-b-x-tu");
	ck_assert_int_eq(syncer_host_name_legacy("x-b", "a", "tu", l, sizeof(l)), 0);
	ck_assert_str_eq(l, "a-x-x-b-x-tu");
	/* long names: both rules agree */
	const char *longn = "a-very-long-pod-name-that-goes-on-and-on-and-on-for-ever-and-ever";
	ck_assert_int_eq(syncer_host_name_legacy("default", longn, "t1", l, sizeof(l)), 0);
	ck_assert_int_eq(syncer_host_name("default", longn, "t1", h, sizeof(h)), 0);
	ck_assert_str_eq(l, h);
	json_t *hp =
	    json_pack("{s:{s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s}}}", "metadata", "name",
		      "a-x-x-b-x-tu", "labels", "kubicle.dev/tenant", "tu", "kubicle.dev/namespace",
		      "b", "annotations", "kubicle.dev/namespace", "b", "kubicle.dev/name", "a-x",
		      "kubicle.dev/uid", "u1", "kubicle.dev/kind", "Pod");
	const char *ns, *name, *uid;
	ck_assert(syncer_host_owner(hp, "tu", &ns, &name, &uid));
	ck_assert(syncer_host_is(hp, "tu", "b", "a-x", "u1"));
	ck_assert(!syncer_host_is(hp, "tu", "b", "a-x", "u2"));
	ck_assert(!syncer_host_is(hp, "tu", "x-b", "a", NULL));
	ck_assert(!syncer_host_owner(hp, "x-tu", &ns, &name, &uid));
	/* annotations naming an object that does not live under this name */
	json_t *ann = json_object_get(json_object_get(hp, "metadata"), "annotations");
	json_object_set_new(ann, "kubicle.dev/name", json_string("other"));
	ck_assert(!syncer_host_owner(hp, "tu", &ns, &name, &uid));
	/* the namespace label disagreeing */
	json_object_set_new(ann, "kubicle.dev/name", json_string("a-x"));
	json_object_set_new(json_object_get(json_object_get(hp, "metadata"), "labels"),
			    "kubicle.dev/namespace", json_string("c"));
	ck_assert(!syncer_host_owner(hp, "tu", &ns, &name, &uid));
	json_decref(hp);
	/* a token Secret is ours under its account's name only */
	char sn[64];
	ck_assert_int_eq(syncer_sa_secret_name("default", "ghost", "t1", sn, sizeof(sn)), 0);
	json_t *sec = json_pack("{s:{s:s,s:{s:s},s:{s:s,s:s,s:s,s:s}}}", "metadata", "name", sn,
				"labels", "kubicle.dev/tenant", "t1", "annotations",
				"kubicle.dev/namespace", "default", "kubicle.dev/name", "ghost",
				"kubicle.dev/uid", "", "kubicle.dev/kind", "ServiceAccount");
	ck_assert(syncer_host_is(sec, "t1", "default", "ghost", NULL));
	json_object_set_new(json_object_get(sec, "metadata"), "name",
			    json_string("ghost-token-0000000000000000"));
	ck_assert(!syncer_host_owner(sec, "t1", &ns, &name, &uid));
	json_decref(sec);
}
END_TEST

static json_t *tenant_pod(void)
{
	return json_loads(
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"train\","
	    "\"namespace\":\"ml\",\"uid\":\"u-1\",\"resourceVersion\":\"7\","
	    "\"labels\":{\"app\":\"x\",\"kai.scheduler/queue\":\"someone-else\","
	    "\"kubicle.dev/tenant\":\"evil\"},"
	    "\"annotations\":{\"gpu-fraction\":\"0.5\",\"scheduling.volcano.sh/queue-name\":\"q\"},"
	    "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"j1\","
	    "\"uid\":\"o-1\",\"controller\":true}]},"
	    "\"spec\":{\"schedulerName\":\"default-scheduler\",\"serviceAccountName\":\"runner\","
	    "\"nodeName\":\"n\",\"imagePullSecrets\":[{\"name\":\"pull\"}],"
	    "\"containers\":[{\"name\":\"c\",\"image\":\"i\","
	    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\",\"nvidia.com/"
	    "mig-1g.10gb\":\"1\"}},"
	    "\"env\":[{\"name\":\"KUBERNETES_SERVICE_HOST\",\"value\":\"evil\"},"
	    "{\"name\":\"A\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"k\"}}}],"
	    "\"envFrom\":[{\"secretRef\":{\"name\":\"sec\"}}]}],"
	    "\"volumes\":[{\"name\":\"v\",\"configMap\":{\"name\":\"cm\"}},"
	    "{\"name\":\"p\",\"projected\":{\"sources\":[{\"secret\":{\"name\":\"sec2\"}}]}}]},"
	    "\"status\":{\"phase\":\"Pending\"}}",
	    0, NULL);
}

static struct syncer_xlate xl(const char *profile)
{
	return (struct syncer_xlate){.tenant = "t1",
				     .host_ns = "tenants",
				     .queue = "team-a",
				     .profile = syncer_profile_find(profile),
				     .api_host = "10.1.2.3",
				     .api_port = 6443};
}

START_TEST(pod_contract)
{
	json_t *p = tenant_pod(), *refs = json_array();
	json_t *ps = json_object_get(p, "spec");
	json_object_set_new(ps, "priorityClassName", json_string("train"));
	json_object_set_new(ps, "priority", json_integer(0));
	json_object_set_new(ps, "preemptionPolicy", json_string("PreemptLowerPriority"));
	struct syncer_xlate x = xl("kai");
	json_t *h = syncer_translate_pod(&x, p, refs);
	/* priority is the host's to compute from the class, which stays */
	ck_assert_str_eq(s_at(h, "spec", "priorityClassName"), "train");
	ck_assert_ptr_null(json_object_get(json_object_get(h, "spec"), "priority"));
	ck_assert_ptr_null(json_object_get(json_object_get(h, "spec"), "preemptionPolicy"));
	json_t *m = json_object_get(h, "metadata");
	ck_assert_str_eq(s_at(h, "metadata", "name"), "train-x-ml-x-t1");
	ck_assert_str_eq(s_at(h, "metadata", "namespace"), "tenants");
	ck_assert_str_eq(s_at(m, "labels", "kubicle.dev/tenant"), "t1"); /* tenant's own replaced */
	ck_assert_str_eq(s_at(m, "labels", "kubicle.dev/namespace"), "ml");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/name"), "train");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/namespace"), "ml");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/uid"), "u-1");
	ck_assert_ptr_null(json_object_get(m, "uid"));
	ck_assert_ptr_null(json_object_get(m, "resourceVersion"));
	ck_assert_ptr_null(json_object_get(h, "status"));
	const char *ns, *name, *uid;
	ck_assert(syncer_host_owner(h, "t1", &ns, &name, &uid));
	ck_assert_str_eq(name, "train");
	ck_assert(!syncer_host_owner(h, "t2", &ns, &name, &uid));
	json_decref(h);
	json_decref(refs);
	json_decref(p);
}
END_TEST

START_TEST(pod_kai_profile)
{
	json_t *p = tenant_pod();
	struct syncer_xlate x = xl("kai");
	json_t *h = syncer_translate_pod(&x, p, NULL);
	json_t *m = json_object_get(h, "metadata"), *spec = json_object_get(h, "spec");
	ck_assert_str_eq(s_at(h, "spec", "schedulerName"), "kai-scheduler");
	ck_assert_str_eq(s_at(m, "labels", "kai.scheduler/queue"), "team-a");
	ck_assert_ptr_null(
	    json_object_get(json_object_get(m, "annotations"), "scheduling.volcano.sh/queue-name"));
	/* GPU sharing requests carried over */
	ck_assert_str_eq(s_at(m, "annotations", "gpu-fraction"), "0.5");
	json_t *c0 = json_array_get(json_object_get(spec, "containers"), 0);
	json_t *limits = json_object_get(json_object_get(c0, "resources"), "limits");
	ck_assert_str_eq(json_string_value(json_object_get(limits, "nvidia.com/mig-1g.10gb")), "1");
	/* owners recorded; no group key from the translation alone: a key
	 * without its PodGroup leaves the pod Pending forever on real KAI
	 * (the syncer adds it with its group, gang.c) */
	ck_assert_ptr_nonnull(s_at(m, "annotations", "kubicle.dev/owner-references"));
	ck_assert_ptr_null(json_object_get(json_object_get(m, "annotations"), "pod-group-name"));
	ck_assert_ptr_null(json_object_get(m, "ownerReferences"));
	json_decref(h);
	json_decref(p);
}
END_TEST

START_TEST(pod_other_profiles)
{
	json_t *p = tenant_pod();
	struct syncer_xlate x = xl("volcano");
	json_t *h = syncer_translate_pod(&x, p, NULL);
	json_t *m = json_object_get(h, "metadata");
	ck_assert_str_eq(s_at(h, "spec", "schedulerName"), "volcano");
	ck_assert_str_eq(s_at(m, "annotations", "scheduling.volcano.sh/queue-name"), "team-a");
	ck_assert_ptr_null(json_object_get(json_object_get(m, "labels"), "kai.scheduler/queue"));
	json_decref(h);
	x = xl("kueue");
	h = syncer_translate_pod(&x, p, NULL);
	ck_assert_ptr_null(json_object_get(json_object_get(h, "spec"), "schedulerName"));
	ck_assert_str_eq(
	    s_at(json_object_get(h, "metadata"), "labels", "kueue.x-k8s.io/queue-name"), "team-a");
	json_decref(h);
	x = xl("hami");
	h = syncer_translate_pod(&x, p, NULL);
	ck_assert_str_eq(s_at(h, "spec", "schedulerName"), "hami-scheduler");
	json_decref(h);
	ck_assert_ptr_null(syncer_profile_find("nope"));
	ck_assert_str_eq(syncer_profile_find(NULL)->name, "kai");
	json_decref(p);
}
END_TEST

START_TEST(pod_refs_and_sa)
{
	json_t *p = tenant_pod(), *refs = json_array();
	struct syncer_xlate x = xl("kai");
	json_t *h = syncer_translate_pod(&x, p, refs);
	json_t *spec = json_object_get(h, "spec");
	json_t *c0 = json_array_get(json_object_get(spec, "containers"), 0);
	ck_assert_uint_eq(json_array_size(refs), 4); /* cm, sec, sec2, pull (cm once) */
	ck_assert_str_eq(
	    s_at(json_object_get(json_array_get(json_object_get(c0, "env"), 0), "valueFrom"),
		 "configMapKeyRef", "name"),
	    "cm-x-ml-x-t1");
	ck_assert_str_eq(
	    s_at(json_array_get(json_object_get(c0, "envFrom"), 0), "secretRef", "name"),
	    "sec-x-ml-x-t1");
	ck_assert_str_eq(
	    s_at(json_array_get(json_object_get(spec, "volumes"), 0), "configMap", "name"),
	    "cm-x-ml-x-t1");
	ck_assert_str_eq(json_string_value(json_object_get(
			     json_array_get(json_object_get(spec, "imagePullSecrets"), 0), "name")),
			 "pull-x-ml-x-t1");
	/* no host token, no host node, the tenant API in the environment */
	ck_assert(json_is_false(json_object_get(spec, "automountServiceAccountToken")));
	/* the host account of no rights, not the tenant's name */
	ck_assert_str_eq(json_string_value(json_object_get(spec, "serviceAccountName")),
			 SYNCER_POD_SA);
	ck_assert_ptr_null(json_object_get(spec, "nodeName"));
	json_t *env = json_object_get(c0, "env");
	int seen = 0;
	size_t i;
	json_t *e;
	json_array_foreach (env, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));
		if (strcmp(n, "KUBERNETES_SERVICE_HOST") == 0) {
			ck_assert_str_eq(json_string_value(json_object_get(e, "value")),
					 "10.1.2.3");
			seen++;
		}
	}
	ck_assert_int_eq(seen, 1);
	json_decref(h);
	json_decref(refs);
	json_decref(p);
}
END_TEST

/* The mount of the tenant token folder in container c, or NULL. */
static json_t *sa_mount(const json_t *c)
{
	size_t i;
	json_t *m;
	json_array_foreach (json_object_get(c, "volumeMounts"), i, m) {
		const char *p = json_string_value(json_object_get(m, "mountPath"));
		if (p && strcmp(p, "/var/run/secrets/kubernetes.io/serviceaccount") == 0)
			return m;
	}
	return NULL;
}

START_TEST(pod_sa_token_mounted)
{
	json_t *p = tenant_pod();
	json_t *spec0 = json_object_get(p, "spec");
	json_object_set_new(spec0, "initContainers",
			    json_pack("[{s:s,s:s}]", "name", "init", "image", "i"));
	json_array_append_new(json_object_get(spec0, "containers"),
			      json_pack("{s:s,s:s}", "name", "side", "image", "i"));
	char sn[SYNCER_NAME_MAX + 1];
	ck_assert_int_eq(syncer_sa_secret_name("ml", "runner", "t1", sn, sizeof(sn)), 0);
	ck_assert_str_eq(syncer_pod_sa(p, NULL), "runner");
	struct syncer_xlate x = xl("kai");
	x.sa_secret = sn;
	json_t *h = syncer_translate_pod(&x, p, NULL);
	json_t *spec = json_object_get(h, "spec");
	/* still no host token: only the tenant's, from our Secret */
	ck_assert(json_is_false(json_object_get(spec, "automountServiceAccountToken")));
	const char *vol = NULL;
	size_t i;
	json_t *v, *c;
	json_array_foreach (json_object_get(spec, "volumes"), i, v) {
		const char *sec = s_at(v, "secret", "secretName");
		if (sec && strcmp(sec, sn) == 0)
			vol = json_string_value(json_object_get(v, "name"));
	}
	ck_assert_ptr_nonnull(vol);
	size_t mounted = 0;
	static const char *const lists[] = {"containers", "initContainers"};
	for (size_t l = 0; l < 2; l++) {
		json_array_foreach (json_object_get(spec, lists[l]), i, c) {
			json_t *m = sa_mount(c);
			ck_assert_msg(m != NULL, "%s[%zu] mounts the token", lists[l], i);
			ck_assert_str_eq(json_string_value(json_object_get(m, "name")), vol);
			ck_assert(json_is_true(json_object_get(m, "readOnly")));
			mounted++;
		}
	}
	ck_assert_uint_eq(mounted, 3);
	json_decref(h);
	json_decref(p);
}
END_TEST

START_TEST(pod_sa_automount_false)
{
	json_t *p = tenant_pod(), *spec = json_object_get(p, "spec");
	json_t *sa = json_pack("{s:b}", "automountServiceAccountToken", 0);
	/* the account opts out: no token, unless the pod opts back in */
	ck_assert_ptr_null(syncer_pod_sa(p, sa));
	json_object_set_new(spec, "automountServiceAccountToken", json_true());
	ck_assert_str_eq(syncer_pod_sa(p, sa), "runner");
	/* the pod opts out: no token whatever the account says */
	json_object_set_new(spec, "automountServiceAccountToken", json_false());
	ck_assert_ptr_null(syncer_pod_sa(p, NULL));
	struct syncer_xlate x = xl("kai");
	x.sa_secret = syncer_pod_sa(p, NULL) ? "some-secret" : NULL;
	json_t *h = syncer_translate_pod(&x, p, NULL);
	json_t *c0 = json_array_get(json_object_get(json_object_get(h, "spec"), "containers"), 0);
	ck_assert_ptr_null(sa_mount(c0));
	ck_assert(json_is_false(
	    json_object_get(json_object_get(h, "spec"), "automountServiceAccountToken")));
	/* no serviceAccountName: the "default" account */
	json_object_del(spec, "automountServiceAccountToken");
	json_object_del(spec, "serviceAccountName");
	ck_assert_str_eq(syncer_pod_sa(p, NULL), "default");
	json_decref(h);
	json_decref(sa);
	json_decref(p);
}
END_TEST

START_TEST(sa_secret_contract)
{
	char a[SYNCER_NAME_MAX + 1], b[SYNCER_NAME_MAX + 1], t[SYNCER_NAME_MAX + 1];
	ck_assert_int_eq(syncer_sa_secret_name("ml", "runner", "t1", a, sizeof(a)), 0);
	ck_assert_int_eq(syncer_sa_secret_name("ml", "runner", "t2", b, sizeof(b)), 0);
	ck_assert_str_ne(a, b); /* two tenants never share one */
	ck_assert_int_eq(syncer_sa_secret_name("ml", "runner", "t1", b, sizeof(b)), 0);
	ck_assert_str_eq(a, b); /* stable */
	/* never a translated tenant Secret name */
	ck_assert_int_eq(syncer_host_name("ml", "runner-token", "t1", t, sizeof(t)), 0);
	ck_assert_str_ne(a, t);
	char longsa[200];
	memset(longsa, 'a', 150);
	longsa[150] = '\0';
	ck_assert_int_eq(syncer_sa_secret_name("ml", longsa, "t1", b, sizeof(b)), 0);
	ck_assert_uint_le(strlen(b), 63);
	struct syncer_xlate x = xl("kai");
	json_t *sec = syncer_sa_secret(&x, "ml", "runner", "sa-uid", "jwt.x.y", "PEM");
	ck_assert_ptr_nonnull(sec);
	ck_assert_str_eq(s_at(sec, "metadata", "name"), a);
	ck_assert_str_eq(s_at(sec, "metadata", "namespace"), "tenants");
	json_t *meta = json_object_get(sec, "metadata");
	ck_assert_str_eq(s_at(meta, "labels", "kubicle.dev/tenant"), "t1");
	ck_assert_str_eq(s_at(meta, "annotations", "kubicle.dev/namespace"), "ml");
	ck_assert_str_eq(s_at(meta, "annotations", "kubicle.dev/name"), "runner");
	ck_assert_str_eq(s_at(meta, "annotations", "kubicle.dev/uid"), "sa-uid");
	ck_assert_str_eq(s_at(sec, "data", "token"), "and0LngueQ=="); /* base64("jwt.x.y") */
	ck_assert_str_eq(s_at(sec, "data", "ca.crt"), "UEVN");
	ck_assert_str_eq(s_at(sec, "data", "namespace"), "bWw=");
	json_decref(sec);
}
END_TEST

START_TEST(status_and_node)
{
	json_t *hp = json_loads("{\"metadata\":{\"name\":\"x\"},\"spec\":{\"nodeName\":\"g1\"},"
				"\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.5\","
				"\"qosClass\":\"BestEffort\"}}",
				0, NULL);
	json_t *st = syncer_status_from_host(hp);
	ck_assert_str_eq(json_string_value(json_object_get(st, "phase")), "Running");
	ck_assert_str_eq(json_string_value(json_object_get(st, "podIP")), "10.0.0.5");
	json_decref(st);
	json_t *node =
	    json_loads("{\"metadata\":{\"name\":\"g1\",\"uid\":\"h\",\"labels\":{\"a\":\"b\"}},"
		       "\"spec\":{\"taints\":[{\"key\":\"k\"}]},\"status\":{\"capacity\":"
		       "{\"nvidia.com/gpu\":\"8\"},\"allocatable\":{\"nvidia.com/gpu\":\"8\"},"
		       "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
		       0, NULL);
	json_t *tn = syncer_translate_node(node, "t1");
	ck_assert_str_eq(s_at(tn, "metadata", "name"), "g1");
	ck_assert_ptr_null(json_object_get(json_object_get(tn, "metadata"), "uid"));
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_object_get(json_object_get(tn, "status"), "capacity"), "nvidia.com/gpu")),
	    "8");
	json_decref(tn);
	json_decref(node);
	json_decref(hp);
}
END_TEST

START_TEST(kubeconfig_read)
{
	static const char kc[] =
	    "apiVersion: v1\nkind: Config\ncurrent-context: b\n"
	    "clusters:\n- name: ca\n  cluster:\n    server: https://a:1\n"
	    "- name: cb\n  cluster:\n    server: \"https://b:2\"\n"
	    "    certificate-authority-data: aGVsbG8=\n    insecure-skip-tls-verify: true\n"
	    "users:\n- name: ub\n  user:\n    token: tok\n"
	    "contexts:\n- name: a\n  context: {cluster: ca, user: ub}\n"
	    "- name: b\n  context: {cluster: cb, user: ub}\n";
	struct kb_kubeconfig_creds c;
	ck_assert_int_eq(kb_kubeconfig_parse(kc, strlen(kc), "/tmp", NULL, &c), 0);
	ck_assert_str_eq(c.server, "https://b:2");
	ck_assert_str_eq(c.ca_pem, "hello");
	ck_assert_str_eq(c.token, "tok");
	ck_assert(c.insecure);
	kb_kubeconfig_creds_free(&c);
	ck_assert_int_eq(kb_kubeconfig_parse(kc, strlen(kc), "/tmp", "a", &c), 0);
	ck_assert_str_eq(c.server, "https://a:1");
	ck_assert(!c.insecure);
	kb_kubeconfig_creds_free(&c);
	ck_assert_int_eq(kb_kubeconfig_parse(kc, strlen(kc), "/tmp", "zz", &c), -ENOENT);
	ck_assert_int_eq(kb_kubeconfig_parse("[1, 2]", 6, "/tmp", NULL, &c), -EINVAL);
}
END_TEST

/* Pod updates (kube's ValidatePodUpdate allows images, activeDeadlineSeconds,
 * added tolerations, labels, annotations) become one strategic merge patch. */
START_TEST(update_patch)
{
	json_t *have =
	    json_loads("{\"metadata\":{\"labels\":{\"app\":\"web\",\"tier\":\"b\",\"host\":\"x\"},"
		       "\"annotations\":{\"kubicle.dev/log\":\"l\",\"owner\":\"al\"}},"
		       "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"i:1\"},{\"name\":"
		       "\"b\",\"image\":\"j:1\"}],"
		       "\"initContainers\":[{\"name\":\"in\",\"image\":\"k:1\"}],"
		       "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\"}]}}",
		       0, NULL);
	json_t *prev = json_loads("{\"metadata\":{\"labels\":{\"app\":\"web\",\"tier\":\"b\"},"
				  "\"annotations\":{\"owner\":\"al\"}},"
				  "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"i:1\"},{"
				  "\"name\":\"b\",\"image\":\"j:1\"}],"
				  "\"initContainers\":[{\"name\":\"in\",\"image\":\"k:1\"}]}}",
				  0, NULL);
	ck_assert_ptr_null(syncer_pod_update_patch(prev, have, prev)); /* nothing changed */
	json_t *want = json_loads(
	    "{\"metadata\":{\"labels\":{\"tier\":\"g\"},\"annotations\":{\"note\":\"n\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"i:1\"},{\"name\":\"b\","
	    "\"image\":\"j:2\"}],"
	    "\"initContainers\":[{\"name\":\"in\",\"image\":\"k:2\"}],\"activeDeadlineSeconds\":60,"
	    "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\"}]}}",
	    0, NULL);
	json_t *p = syncer_pod_update_patch(want, have, prev);
	ck_assert_ptr_nonnull(p);
	json_t *want_p = json_loads(
	    "{\"metadata\":{\"labels\":{\"tier\":\"g\",\"app\":null},"
	    "\"annotations\":{\"note\":\"n\",\"owner\":null}},"
	    "\"spec\":{\"containers\":[{\"name\":\"b\",\"image\":\"j:2\"}],"
	    "\"initContainers\":[{\"name\":\"in\",\"image\":\"k:2\"}],\"activeDeadlineSeconds\":60,"
	    "\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\"},"
	    "{\"key\":\"gpu\",\"operator\":\"Exists\"}]}}",
	    0, NULL);
	char *got = json_dumps(p, JSON_SORT_KEYS);
	ck_assert_msg(json_equal(p, want_p), "patch %s", got);
	free(got);
	json_decref(p);
	/* without prev (a resync): nothing is removed, the host's keys stay */
	p = syncer_pod_update_patch(want, have, NULL);
	ck_assert_ptr_null(
	    json_object_get(json_object_get(json_object_get(p, "metadata"), "labels"), "app"));
	ck_assert_ptr_null(json_object_get(
	    json_object_get(json_object_get(p, "metadata"), "annotations"), "owner"));
	ck_assert_str_eq(json_string_value(json_object_get(
			     json_object_get(json_object_get(p, "metadata"), "labels"), "tier")),
			 "g");
	json_decref(p);
	json_decref(want_p);
	json_decref(want);
	json_decref(prev);
	json_decref(have);
}
END_TEST

/* The informer keeps a view of each host pod: everything the syncer reads
 * (ownership, status, node, deletion, what the update patch compares), not
 * managedFields nor the rest of the spec. */
START_TEST(host_pod_view)
{
	struct syncer_xlate x = xl("kai");
	json_t *tp = tenant_pod();
	json_t *hp = syncer_translate_pod(&x, tp, NULL);
	json_t *m = json_object_get(hp, "metadata");
	json_object_set_new(m, "uid", json_string("h-1"));
	json_object_set_new(m, "resourceVersion", json_string("42"));
	json_object_set_new(m, "deletionTimestamp", json_string("2026-01-01T00:00:00Z"));
	json_object_set_new(m, "managedFields", json_pack("[{s:s}]", "manager", "kubicle"));
	json_object_set_new(json_object_get(hp, "spec"), "nodeName", json_string("g1"));
	json_object_set_new(hp, "status", json_pack("{s:s,s:s}", "phase", "Running", "podIP", "1"));
	json_t *v = syncer_host_pod_view(hp);
	ck_assert_ptr_nonnull(v);
	json_t *vm = json_object_get(v, "metadata"), *vs = json_object_get(v, "spec");
	ck_assert_str_eq(s_at(v, "metadata", "uid"), "h-1");
	ck_assert_str_eq(s_at(v, "metadata", "resourceVersion"), "42");
	ck_assert_str_eq(s_at(v, "metadata", "name"), s_at(hp, "metadata", "name"));
	ck_assert_str_eq(s_at(v, "metadata", "deletionTimestamp"), "2026-01-01T00:00:00Z");
	ck_assert_ptr_null(json_object_get(vm, "managedFields"));
	ck_assert(json_equal(json_object_get(vm, "labels"), json_object_get(m, "labels")));
	ck_assert_str_eq(s_at(v, "spec", "nodeName"), "g1");
	ck_assert(json_equal(json_object_get(v, "status"), json_object_get(hp, "status")));
	/* containers: name and image only */
	json_t *c = json_array_get(json_object_get(vs, "containers"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c, "name")), "c");
	ck_assert_str_eq(json_string_value(json_object_get(c, "image")), "i");
	ck_assert_ptr_null(json_object_get(c, "env"));
	ck_assert_ptr_null(json_object_get(vs, "volumes"));
	/* ownership reads the same from the view */
	const char *ns, *name, *uid;
	ck_assert(syncer_host_owner(v, "t1", &ns, &name, &uid));
	ck_assert_str_eq(ns, "ml");
	ck_assert_str_eq(name, "train");
	ck_assert_str_eq(uid, "u-1");
	/* the update patch against the view equals the one against the pod */
	json_t *tp2 = json_deep_copy(tp);
	json_t *c0 = json_array_get(json_object_get(json_object_get(tp2, "spec"), "containers"), 0);
	json_object_set_new(c0, "image", json_string("i:2"));
	json_object_set_new(json_object_get(json_object_get(tp2, "metadata"), "labels"), "new",
			    json_string("l"));
	json_t *want = syncer_translate_pod(&x, tp2, NULL);
	json_t *p1 = syncer_pod_update_patch(want, hp, hp),
	       *p2 = syncer_pod_update_patch(want, v, hp);
	ck_assert_ptr_nonnull(p1);
	ck_assert(json_equal(p1, p2));
	json_decref(p1);
	json_decref(p2);
	json_decref(want);
	json_decref(tp2);
	json_decref(v);
	json_decref(hp);
	json_decref(tp);
}
END_TEST

/* Watch event lines lose object.metadata.managedFields before decoding, and
 * nothing else: the result is the same JSON as the event without it. */
static void strip_case(const char *in, const char *want)
{
	char buf[1024];
	size_t n = strlen(in);
	memcpy(buf, in, n);
	size_t m = syncer_strip_managed_fields(buf, n);
	json_t *got = json_loadb(buf, m, 0, NULL), *exp = json_loads(want, 0, NULL);
	ck_assert_msg(got && json_equal(got, exp), "%s -> %.*s", in, (int)m, buf);
	json_decref(got);
	json_decref(exp);
}

START_TEST(strip_managed_fields)
{
	/* in the middle, with brackets and quotes inside its strings */
	strip_case("{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
		   "\"managedFields\":[{\"manager\":\"x]}\\\"{\",\"fieldsV1\":{\"f:metadata\":"
		   "{\"f:labels\":{\".\":{}}}}}],\"uid\":\"u\"},\"spec\":{\"x\":[1,2]}}}",
		   "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
		   "\"uid\":\"u\"},\"spec\":{\"x\":[1,2]}}}");
	/* the last member, after other members that are objects */
	strip_case("{\"type\":\"MODIFIED\",\"object\":{\"spec\":{\"a\":{\"b\":[{}]}},\"metadata\":"
		   "{\"labels\":{\"l\":\"v\"},\"managedFields\":[{\"a\":1}]}}}",
		   "{\"type\":\"MODIFIED\",\"object\":{\"spec\":{\"a\":{\"b\":[{}]}},\"metadata\":"
		   "{\"labels\":{\"l\":\"v\"}}}}");
	/* the only member; whitespace between tokens */
	strip_case("{ \"object\" : { \"metadata\" : { \"managedFields\" : [ 1 ] } } , \"type\" : "
		   "\"DELETED\" }",
		   "{\"object\":{\"metadata\":{}},\"type\":\"DELETED\"}");
	strip_case("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"managedFields\":[], \"name\":"
		   "\"b\"}}}",
		   "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}");
	/* escaped backslashes and quotes inside its strings */
	strip_case("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"managedFields\":[{\"m\":"
		   "\"a\\\\\"},{\"n\":\"q\\\"]\\\\\\\"\"}],\"name\":\"c\"}}}",
		   "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"c\"}}}");
	/* a managedFields key anywhere else stays */
	static const char keep[] =
	    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"annotations\":{\"managedFields\":"
	    "\"x\"}},\"managedFields\":[1]},\"managedFields\":2}";
	strip_case(keep, keep);
	/* not what it expects: untouched */
	char bad[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"managedFields\":[1,";
	ck_assert_uint_eq(syncer_strip_managed_fields(bad, strlen(bad)), strlen(bad));
	char arr[] = "[{\"object\":{\"metadata\":{\"managedFields\":[]}}}]";
	ck_assert_uint_eq(syncer_strip_managed_fields(arr, strlen(arr)), strlen(arr));
	/* every cut of a line, in a buffer of exactly that size: the scanner
	 * stays inside it (ASan; the fuzzer found a read past `"object":`) */
	static const char line[] =
	    "{\"type\":\"ADDED\",\"object\": {\"metadata\": {\"managedFields\": [{}],\"a\":1}}}";
	for (size_t k = 0; k < sizeof(line) - 1; k++) {
		char *cut = malloc(k ? k : 1);
		memcpy(cut, line, k);
		ck_assert_uint_le(syncer_strip_managed_fields(cut, k), k);
		free(cut);
	}
}
END_TEST

/* The host pod's fieldPath for a tenant pod whose env var E reads `path`. */
static json_t *downward_pod(const char *name, const char *path)
{
	json_t *p = tenant_pod();
	json_object_set_new(json_object_get(p, "metadata"), "name", json_string(name));
	json_t *c = json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0);
	json_array_append_new(json_object_get(c, "env"),
			      json_pack("{s:s,s:{s:{s:s,s:s}}}", "name", "E", "valueFrom",
					"fieldRef", "apiVersion", "v1", "fieldPath", path));
	return p;
}

static const char *env_path(const json_t *h)
{
	json_t *c = json_array_get(json_object_get(json_object_get(h, "spec"), "containers"), 0);
	size_t i;
	json_t *e;
	json_array_foreach (json_object_get(c, "env"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")), "E") == 0)
			return json_string_value(json_object_get(
			    json_object_get(json_object_get(e, "valueFrom"), "fieldRef"),
			    "fieldPath"));
	return NULL;
}

START_TEST(pod_downward_env)
{
	static const struct {
		const char *path, *want;
	} cases[] = {
	    {"metadata.name", "metadata.annotations['kubicle.dev/name']"},
	    {"metadata.namespace", "metadata.annotations['kubicle.dev/namespace']"},
	    {"metadata.uid", "metadata.annotations['kubicle.dev/uid']"},
	    {"spec.serviceAccountName", "metadata.annotations['kubicle.dev/service-account']"},
	    /* the host's own values are the right ones */
	    {"spec.nodeName", "spec.nodeName"},
	    {"status.podIP", "status.podIP"},
	    {"metadata.labels['app']", "metadata.labels['app']"},
	};
	struct syncer_xlate x = xl("kai");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *p = downward_pod("train", cases[i].path);
		json_t *h = syncer_translate_pod(&x, p, NULL);
		ck_assert_str_eq(env_path(h), cases[i].want);
		json_t *ann = json_object_get(json_object_get(h, "metadata"), "annotations");
		const char *sa =
		    json_string_value(json_object_get(ann, "kubicle.dev/service-account"));
		if (strcmp(cases[i].path, "spec.serviceAccountName") == 0)
			ck_assert_str_eq(sa, "runner");
		else
			ck_assert_ptr_null(sa); /* only when asked for */
		/* the tenant pod is left as it was */
		ck_assert_str_eq(env_path(p), cases[i].path);
		json_decref(h);
		json_decref(p);
	}
}
END_TEST

START_TEST(pod_downward_files)
{
	json_t *p = tenant_pod();
	json_t *m = json_object_get(p, "metadata");
	json_object_set_new(json_object_get(m, "labels"), "b", json_string("say \"hi\"\n\\"));
	json_t *items = json_pack("[{s:s,s:{s:s}},{s:s,s:{s:s}},{s:s,s:{s:s}}]", "path", "labels",
				  "fieldRef", "fieldPath", "metadata.labels", "path", "ann",
				  "fieldRef", "fieldPath", "metadata.annotations", "path", "name",
				  "fieldRef", "fieldPath", "metadata.name");
	json_t *vols = json_object_get(json_object_get(p, "spec"), "volumes");
	json_array_append_new(
	    vols, json_pack("{s:s,s:{s:O}}", "name", "d", "downwardAPI", "items", items));
	json_array_append_new(vols, json_pack("{s:s,s:{s:[{s:{s:o}}]}}", "name", "pd", "projected",
					      "sources", "downwardAPI", "items", items));
	struct syncer_xlate x = xl("kai");
	json_t *h = syncer_translate_pod(&x, p, NULL);
	json_t *hv = json_object_get(json_object_get(h, "spec"), "volumes");
	json_t *d = json_object_get(json_array_get(hv, 2), "downwardAPI");
	json_t *pd = json_object_get(
	    json_array_get(
		json_object_get(json_object_get(json_array_get(hv, 3), "projected"), "sources"), 0),
	    "downwardAPI");
	const json_t *both[] = {d, pd};
	for (int k = 0; k < 2; k++) {
		json_t *hi = json_object_get(both[k], "items");
		ck_assert_str_eq(s_at(json_array_get(hi, 0), "fieldRef", "fieldPath"),
				 "metadata.annotations['kubicle.dev/labels']");
		ck_assert_str_eq(s_at(json_array_get(hi, 1), "fieldRef", "fieldPath"),
				 "metadata.annotations['kubicle.dev/annotations']");
		ck_assert_str_eq(s_at(json_array_get(hi, 2), "fieldRef", "fieldPath"),
				 "metadata.annotations['kubicle.dev/name']");
	}
	/* the kubelet's format: sorted key="value" lines, Go quoting, no
	 * final newline; the tenant's own labels, not the host's */
	json_t *hm = json_object_get(h, "metadata");
	ck_assert_str_eq(s_at(hm, "annotations", "kubicle.dev/labels"),
			 "app=\"x\"\nb=\"say \\\"hi\\\"\\n\\\\\"\n"
			 "kai.scheduler/queue=\"someone-else\"\nkubicle.dev/tenant=\"evil\"");
	ck_assert_str_eq(s_at(hm, "annotations", "kubicle.dev/annotations"),
			 "gpu-fraction=\"0.5\"\nscheduling.volcano.sh/queue-name=\"q\"");
	json_decref(h);
	json_decref(p);
}
END_TEST

START_TEST(pod_hostname)
{
	struct syncer_xlate x = xl("kai");
	static const struct {
		const char *name, *want; /* want NULL: no hostname set */
	} cases[] = {
	    {"train", "train"},
	    {"web.v1", NULL}, /* not a DNS label */
	    /* cut to 63, then no trailing '-' */
	    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-tail",
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *p = tenant_pod();
		json_object_set_new(json_object_get(p, "metadata"), "name",
				    json_string(cases[i].name));
		json_t *h = syncer_translate_pod(&x, p, NULL);
		const char *got = s_at(h, "spec", "hostname");
		if (cases[i].want)
			ck_assert_str_eq(got, cases[i].want);
		else
			ck_assert_ptr_null(got);
		json_decref(h);
		/* the pod's own hostname wins */
		json_object_set_new(json_object_get(p, "spec"), "hostname", json_string("mine"));
		h = syncer_translate_pod(&x, p, NULL);
		ck_assert_str_eq(s_at(h, "spec", "hostname"), "mine");
		json_decref(h);
		json_decref(p);
	}
}
END_TEST

START_TEST(tenant_class)
{
	json_t *h =
	    json_loads("{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\","
		       "\"metadata\":{\"name\":\"train\",\"uid\":\"h-1\",\"resourceVersion\":\"9\","
		       "\"labels\":{\"x\":\"y\"}},\"value\":50,\"preemptionPolicy\":\"Never\","
		       "\"description\":\"KAI train\"}",
		       0, NULL);
	json_t *t = syncer_tenant_class(h);
	ck_assert_str_eq(s_at(t, "metadata", "name"), "train");
	ck_assert_str_eq(s_at(json_object_get(t, "metadata"), "labels", "kubicle.dev/host-class"),
			 "true");
	ck_assert_ptr_null(
	    json_object_get(json_object_get(json_object_get(t, "metadata"), "labels"), "x"));
	ck_assert_ptr_null(json_object_get(json_object_get(t, "metadata"), "uid"));
	ck_assert_int_eq(json_integer_value(json_object_get(t, "value")), 50);
	ck_assert_str_eq(json_string_value(json_object_get(t, "preemptionPolicy")), "Never");
	ck_assert_str_eq(json_string_value(json_object_get(t, "description")), "KAI train");
	ck_assert_ptr_null(json_object_get(t, "globalDefault"));
	json_decref(t);
	/* the system- classes are the tenant's own */
	json_object_set_new(json_object_get(h, "metadata"), "name",
			    json_string("system-node-critical"));
	ck_assert_ptr_null(syncer_tenant_class(h));
	json_decref(h);
}
END_TEST

/* ---- PersistentVolumeClaims -------------------------------------------------------------- */

static json_t *J(const char *text)
{
	json_t *o = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(o);
	return o;
}

static json_t *tenant_pvc(void)
{
	return J("{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{"
		 "\"name\":\"data\",\"namespace\":\"ml\",\"uid\":\"u-9\",\"resourceVersion\":\"4\","
		 "\"labels\":{\"app\":\"db\",\"kubicle.dev/tenant\":\"evil\"},"
		 "\"annotations\":{\"note\":\"x\",\"pv.kubernetes.io/bind-completed\":\"yes\","
		 "\"volume.kubernetes.io/selected-node\":\"gpu-node-1\"},"
		 "\"finalizers\":[\"kubernetes.io/pvc-protection\"],"
		 "\"ownerReferences\":[{\"kind\":\"StatefulSet\",\"name\":\"s\",\"uid\":\"o\"}]},"
		 "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
		 "\"resources\":{\"requests\":{\"storage\":\"1Gi\"}},"
		 "\"storageClassName\":\"fast\",\"volumeMode\":\"Filesystem\","
		 "\"volumeAttributesClassName\":\"gold\","
		 "\"selector\":{\"matchLabels\":{\"tier\":\"a\"}},"
		 "\"volumeName\":\"pv-of-another-tenant\","
		 "\"dataSource\":{\"kind\":\"PersistentVolumeClaim\",\"name\":\"seed\"},"
		 "\"dataSourceRef\":{\"kind\":\"PersistentVolumeClaim\",\"name\":\"seed\"}},"
		 "\"status\":{\"phase\":\"Pending\"}}");
}

/* A claim that can only bind an existing host volume (storageClassName "",
 * or a selector naming another tenant) is scoped to this tenant's volumes;
 * one that a class provisions is left alone. */
START_TEST(pvc_static_binding_scoped)
{
	struct syncer_xlate x = xl("kai");
	json_t *t =
	    J("{\"metadata\":{\"name\":\"d\",\"namespace\":\"ml\"},\"spec\":{"
	      "\"storageClassName\":\"\",\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}");
	json_t *h = syncer_translate_pvc(&x, t);
	ck_assert_str_eq(s_at(json_object_get(json_object_get(h, "spec"), "selector"),
			      "matchLabels", "kubicle.dev/tenant"),
			 "t1");
	json_decref(h);
	json_object_set_new(json_object_get(t, "spec"), "selector",
			    J("{\"matchLabels\":{\"kubicle.dev/tenant\":\"victim\"}}"));
	json_object_set_new(json_object_get(t, "spec"), "storageClassName", json_string("fast"));
	h = syncer_translate_pvc(&x, t);
	ck_assert_str_eq(s_at(json_object_get(json_object_get(h, "spec"), "selector"),
			      "matchLabels", "kubicle.dev/tenant"),
			 "t1");
	json_decref(h);
	json_object_del(json_object_get(t, "spec"), "selector");
	h = syncer_translate_pvc(&x, t);
	ck_assert_ptr_null(json_object_get(json_object_get(h, "spec"), "selector"));
	json_decref(h);
	json_decref(t);
}
END_TEST

START_TEST(pvc_contract)
{
	json_t *t = tenant_pvc();
	struct syncer_xlate x = xl("kai");
	json_t *h = syncer_translate_pvc(&x, t);
	ck_assert_ptr_nonnull(h);
	json_t *m = json_object_get(h, "metadata"), *spec = json_object_get(h, "spec");
	ck_assert_str_eq(json_string_value(json_object_get(h, "kind")), "PersistentVolumeClaim");
	ck_assert_str_eq(s_at(h, "metadata", "name"), "data-x-ml-x-t1");
	ck_assert_str_eq(s_at(h, "metadata", "namespace"), "tenants");
	ck_assert_str_eq(s_at(m, "labels", "kubicle.dev/tenant"), "t1");
	ck_assert_str_eq(s_at(m, "labels", "kubicle.dev/namespace"), "ml");
	ck_assert_str_eq(s_at(m, "labels", "app"), "db");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/namespace"), "ml");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/name"), "data");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/uid"), "u-9");
	ck_assert_str_eq(s_at(m, "annotations", "kubicle.dev/kind"), "PersistentVolumeClaim");
	ck_assert_str_eq(s_at(m, "annotations", "note"), "x");
	/* what the host's volume controllers own is not the tenant's to say */
	ck_assert_ptr_null(
	    json_object_get(json_object_get(m, "annotations"), "pv.kubernetes.io/bind-completed"));
	ck_assert_ptr_null(json_object_get(json_object_get(m, "annotations"),
					   "volume.kubernetes.io/selected-node"));
	ck_assert_ptr_null(json_object_get(m, "uid"));
	ck_assert_ptr_null(json_object_get(m, "resourceVersion"));
	ck_assert_ptr_null(json_object_get(m, "finalizers"));
	ck_assert_ptr_null(json_object_get(m, "ownerReferences"));
	ck_assert_ptr_null(json_object_get(h, "status"));
	/* the spec, without a host volume named by the tenant */
	ck_assert_ptr_null(json_object_get(spec, "volumeName"));
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(spec, "accessModes"), 0)),
			 "ReadWriteOnce");
	ck_assert_str_eq(s_at(json_object_get(spec, "resources"), "requests", "storage"), "1Gi");
	ck_assert_str_eq(s_at(h, "spec", "storageClassName"), "fast");
	ck_assert_str_eq(s_at(h, "spec", "volumeMode"), "Filesystem");
	ck_assert_str_eq(s_at(h, "spec", "volumeAttributesClassName"), "gold");
	ck_assert_str_eq(s_at(json_object_get(spec, "selector"), "matchLabels", "tier"), "a");
	/* a selector binds only host volumes made for this tenant */
	ck_assert_str_eq(
	    s_at(json_object_get(spec, "selector"), "matchLabels", "kubicle.dev/tenant"), "t1");
	/* a clone of another claim: that claim's host name */
	ck_assert_str_eq(s_at(spec, "dataSource", "name"), "seed-x-ml-x-t1");
	ck_assert_str_eq(s_at(spec, "dataSource", "kind"), "PersistentVolumeClaim");
	ck_assert_str_eq(s_at(spec, "dataSourceRef", "name"), "seed-x-ml-x-t1");
	const char *ns, *name, *uid;
	ck_assert(syncer_host_owner(h, "t1", &ns, &name, &uid));
	ck_assert_str_eq(ns, "ml");
	ck_assert_str_eq(name, "data");
	ck_assert_str_eq(uid, "u-9");
	/* the tenant claim is left as it was */
	ck_assert_str_eq(s_at(t, "spec", "volumeName"), "pv-of-another-tenant");
	ck_assert_str_eq(s_at(json_object_get(t, "spec"), "dataSource", "name"), "seed");
	json_decref(h);
	json_decref(t);
}
END_TEST

START_TEST(pvc_data_sources_dropped)
{
	struct syncer_xlate x = xl("kai");
	static const char *const dropped[] = {
	    /* a snapshot of the tenant's: the host has no such object */
	    "{\"apiGroup\":\"snapshot.storage.k8s.io\",\"kind\":\"VolumeSnapshot\",\"name\":\"s\"}",
	    /* a populator's object */
	    "{\"apiGroup\":\"example.com\",\"kind\":\"Seed\",\"name\":\"s\"}",
	    /* a claim of another namespace (needs a ReferenceGrant) */
	    "{\"kind\":\"PersistentVolumeClaim\",\"name\":\"s\",\"namespace\":\"other\"}",
	    /* a claim, but not of the core group */
	    "{\"apiGroup\":\"example.com\",\"kind\":\"PersistentVolumeClaim\",\"name\":\"s\"}",
	};
	for (size_t i = 0; i < sizeof(dropped) / sizeof(*dropped); i++) {
		json_t *t = tenant_pvc(), *ts = json_object_get(t, "spec");
		json_object_set_new(ts, "dataSource", J(dropped[i]));
		json_object_set_new(ts, "dataSourceRef", J(dropped[i]));
		json_t *h = syncer_translate_pvc(&x, t);
		ck_assert_ptr_nonnull(h);
		ck_assert_ptr_null(json_object_get(json_object_get(h, "spec"), "dataSource"));
		ck_assert_ptr_null(json_object_get(json_object_get(h, "spec"), "dataSourceRef"));
		json_decref(h);
		json_decref(t);
	}
	/* the claim's own namespace named explicitly: translated, namespace gone */
	json_t *t = tenant_pvc();
	json_object_set_new(json_object_get(t, "spec"), "dataSourceRef",
			    J("{\"kind\":\"PersistentVolumeClaim\",\"name\":\"s\",\"namespace\":"
			      "\"ml\"}"));
	json_t *h = syncer_translate_pvc(&x, t);
	json_t *ref = json_object_get(json_object_get(h, "spec"), "dataSourceRef");
	ck_assert_str_eq(json_string_value(json_object_get(ref, "name")), "s-x-ml-x-t1");
	ck_assert_ptr_null(json_object_get(ref, "namespace"));
	json_decref(h);
	json_decref(t);
	/* a bare claim: no spec field invented */
	t = J("{\"metadata\":{\"name\":\"b\",\"namespace\":\"default\",\"uid\":\"u\"},"
	      "\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
	      "\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}");
	h = syncer_translate_pvc(&x, t);
	ck_assert_uint_eq(json_object_size(json_object_get(h, "spec")), 2);
	json_decref(h);
	json_decref(t);
}
END_TEST

START_TEST(pvc_status_back)
{
	json_t *h = J("{\"spec\":{\"volumeName\":\"pvc-123\"},\"status\":{\"phase\":\"Bound\","
		      "\"accessModes\":[\"ReadWriteOnce\"],\"capacity\":{\"storage\":\"2Gi\"},"
		      "\"conditions\":[{\"type\":\"Resizing\",\"status\":\"True\"}],"
		      "\"allocatedResources\":{\"storage\":\"2Gi\"},"
		      "\"allocatedResourceStatuses\":{\"storage\":"
		      "\"ControllerResizeInProgress\"},"
		      "\"currentVolumeAttributesClassName\":\"gold\","
		      "\"modifyVolumeStatus\":{\"status\":\"InProgress\"},\"hostOnly\":1}}");
	json_t *st = syncer_pvc_status_from_host(h);
	ck_assert_uint_eq(json_object_size(st), 8);
	ck_assert_str_eq(json_string_value(json_object_get(st, "phase")), "Bound");
	ck_assert_str_eq(s_at(st, "capacity", "storage"), "2Gi");
	ck_assert_str_eq(json_string_value(json_object_get(st, "currentVolumeAttributesClassName")),
			 "gold");
	ck_assert_ptr_null(json_object_get(st, "hostOnly"));
	json_decref(st);
	json_decref(h);
	/* a host claim without status: an empty one */
	h = J("{\"spec\":{}}");
	st = syncer_pvc_status_from_host(h);
	ck_assert(json_is_object(st) && json_object_size(st) == 0);
	json_decref(st);
	json_decref(h);
}
END_TEST

START_TEST(pvc_update_patch)
{
	struct syncer_xlate x = xl("kai");
	json_t *t = tenant_pvc();
	json_t *have = syncer_translate_pvc(&x, t);
	/* the host's own: a bound volume, its annotations */
	json_object_set_new(json_object_get(have, "spec"), "volumeName", json_string("pvc-1"));
	json_object_set_new(json_object_get(json_object_get(have, "metadata"), "annotations"),
			    "pv.kubernetes.io/bind-completed", json_string("yes"));
	json_t *prev = syncer_translate_pvc(&x, t);
	ck_assert_ptr_null(syncer_pvc_update_patch(prev, have, prev)); /* nothing differs */
	/* the host's canonical form of the same amount is no change */
	json_t *hreq = json_object_get(json_object_get(json_object_get(have, "spec"), "resources"),
				       "requests");
	json_object_set_new(hreq, "storage", json_string("1024Mi"));
	ck_assert_ptr_null(syncer_pvc_update_patch(prev, have, prev));
	json_object_set_new(hreq, "storage", json_string("1073741824"));
	ck_assert_ptr_null(syncer_pvc_update_patch(prev, have, prev));
	json_object_set_new(hreq, "storage", json_string("1G")); /* 10^9: less */
	json_t *p0 = syncer_pvc_update_patch(prev, have, prev);
	ck_assert_str_eq(
	    s_at(json_object_get(json_object_get(p0, "spec"), "resources"), "requests", "storage"),
	    "1Gi");
	json_decref(p0);
	json_object_set_new(hreq, "storage", json_string("1Gi"));
	/* expansion, another attributes class, a label changed, the note removed */
	json_t *ts = json_object_get(t, "spec");
	json_object_set_new(json_object_get(json_object_get(ts, "resources"), "requests"),
			    "storage", json_string("5Gi"));
	json_object_del(ts, "volumeAttributesClassName");
	json_object_set_new(json_object_get(json_object_get(t, "metadata"), "labels"), "app",
			    json_string("db2"));
	json_object_del(json_object_get(json_object_get(t, "metadata"), "annotations"), "note");
	json_t *want = syncer_translate_pvc(&x, t);
	json_t *p = syncer_pvc_update_patch(want, have, prev);
	ck_assert_ptr_nonnull(p);
	json_t *ps = json_object_get(p, "spec"), *pm = json_object_get(p, "metadata");
	ck_assert_str_eq(s_at(json_object_get(ps, "resources"), "requests", "storage"), "5Gi");
	ck_assert(json_is_null(json_object_get(ps, "volumeAttributesClassName")));
	ck_assert_uint_eq(json_object_size(ps), 2); /* nothing else of the spec */
	ck_assert_str_eq(s_at(pm, "labels", "app"), "db2");
	ck_assert(json_is_null(json_object_get(json_object_get(pm, "annotations"), "note")));
	/* the host's annotation stays */
	ck_assert_ptr_null(
	    json_object_get(json_object_get(pm, "annotations"), "pv.kubernetes.io/bind-completed"));
	json_decref(p);
	/* at a resync (no prev): nothing is removed */
	p = syncer_pvc_update_patch(want, have, NULL);
	ck_assert_ptr_null(json_object_get(
	    json_object_get(json_object_get(p, "metadata"), "annotations"), "note"));
	json_decref(p);
	json_decref(want);
	json_decref(prev);
	json_decref(have);
	json_decref(t);
}
END_TEST

START_TEST(pod_claim_names)
{
	json_t *p = tenant_pod(), *refs = json_array();
	json_t *more =
	    J("[{\"name\":\"d\",\"persistentVolumeClaim\":{\"claimName\":\"data\",\"readOnly\":"
	      "true}},"
	      "{\"name\":\"e\",\"ephemeral\":{\"volumeClaimTemplate\":{\"metadata\":{\"labels\":{"
	      "\"app\":\"x\",\"kubicle.dev/tenant\":\"t2\"},\"annotations\":{\"kubicle.dev/kind\":"
	      "\"PersistentVolumeClaim\"}},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
	      "\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}}}]");
	json_array_extend(json_object_get(json_object_get(p, "spec"), "volumes"), more);
	json_decref(more);
	struct syncer_xlate x = xl("kai");
	json_t *h = syncer_translate_pod(&x, p, refs);
	json_t *vols = json_object_get(json_object_get(h, "spec"), "volumes");
	json_t *d = NULL, *e = NULL, *v;
	size_t i;
	json_array_foreach (vols, i, v) {
		const char *n = json_string_value(json_object_get(v, "name"));
		if (strcmp(n, "d") == 0)
			d = v;
		if (strcmp(n, "e") == 0)
			e = v;
	}
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(s_at(d, "persistentVolumeClaim", "claimName"), "data-x-ml-x-t1");
	ck_assert(
	    json_is_true(json_object_get(json_object_get(d, "persistentVolumeClaim"), "readOnly")));
	/* claims are not counted as ConfigMap/Secret references */
	ck_assert_uint_eq(json_array_size(refs), 4);
	/* an ephemeral volume is the claim "<pod>-<volume>" the tenant's
	 * controller makes, synced as every claim is */
	ck_assert_ptr_nonnull(e);
	ck_assert_ptr_null(json_object_get(e, "ephemeral"));
	ck_assert_str_eq(s_at(e, "persistentVolumeClaim", "claimName"), "train-e-x-ml-x-t1");
	json_decref(h);
	json_decref(refs);
	json_decref(p);
}
END_TEST

START_TEST(ephemeral_patch)
{
	json_t *want =
	    json_loads("{\"spec\":{\"ephemeralContainers\":[{\"name\":\"d1\",\"image\":\"a\"},"
		       "{\"name\":\"d2\",\"image\":\"b\",\"stdin\":true}]}}",
		       0, NULL);
	json_t *have = json_loads(
	    "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"d1\",\"image\":\"a\"}]}}", 0, NULL);
	json_t *p = syncer_ephemeral_patch(want, have);
	/* only the one the host lacks, whole */
	json_t *l = json_object_get(json_object_get(p, "spec"), "ephemeralContainers");
	ck_assert_int_eq(json_array_size(l), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(l, 0), "name")), "d2");
	ck_assert(json_is_true(json_object_get(json_array_get(l, 0), "stdin")));
	json_decref(p);
	/* nothing missing: no patch */
	ck_assert_ptr_null(syncer_ephemeral_patch(have, want));
	/* the host pod view keeps their names, to compare */
	json_t *view = syncer_host_pod_view(want);
	ck_assert_ptr_null(syncer_ephemeral_patch(want, view));
	json_decref(view);
	json_decref(want);
	json_decref(have);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("syncer_translate");
	TCase *tc = tcase_create("translate");
	tcase_add_test(tc, name_short);
	tcase_add_test(tc, name_long_hashed_stable);
	tcase_add_test(tc, name_ambiguous_parts_hashed);
	tcase_add_test(tc, name_issue_collisions);
	tcase_add_test(tc, name_boundaries);
	tcase_add_test(tc, name_exhaustive_small);
	tcase_add_test(tc, name_legacy_and_owner);
	tcase_add_test(tc, tenant_names);
	tcase_add_test(tc, pod_contract);
	tcase_add_test(tc, pod_kai_profile);
	tcase_add_test(tc, pod_other_profiles);
	tcase_add_test(tc, pod_refs_and_sa);
	tcase_add_test(tc, pod_sa_token_mounted);
	tcase_add_test(tc, pod_sa_automount_false);
	tcase_add_test(tc, sa_secret_contract);
	tcase_add_test(tc, status_and_node);
	tcase_add_test(tc, kubeconfig_read);
	tcase_add_test(tc, update_patch);
	tcase_add_test(tc, host_pod_view);
	tcase_add_test(tc, strip_managed_fields);
	tcase_add_test(tc, pod_downward_env);
	tcase_add_test(tc, pod_downward_files);
	tcase_add_test(tc, pod_hostname);
	tcase_add_test(tc, tenant_class);
	tcase_add_test(tc, ephemeral_patch);
	tcase_add_test(tc, pvc_contract);
	tcase_add_test(tc, pvc_static_binding_scoped);
	tcase_add_test(tc, pvc_data_sources_dropped);
	tcase_add_test(tc, pvc_status_back);
	tcase_add_test(tc, pvc_update_patch);
	tcase_add_test(tc, pod_claim_names);
	suite_add_tcase(s, tc);
	return s;
}
