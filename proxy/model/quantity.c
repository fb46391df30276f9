/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Quantities and resource lists as kube computes with them: a quantity
 * ("500m", "2Gi", "1e3") as an integer of thousandths, printed back in
 * kube's canonical form; resource lists of those; a pod's effective
 * requests or limits (containers and sidecars summed, the largest init
 * step, pod overhead), as kube's resource helpers compute them
 * (k8s.io/component-helpers/resource PodRequests).
 *
 * Threading: any thread (no global mutable state).
 */
#include "proxy/model/quantity.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "policies/policies.h"

int qty_parse(const json_t *v, int64_t *milli)
{
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return -EINVAL;
		*milli = json_integer_value(v) * 1000;
		return 0;
	}
	if (json_is_real(v)) {
		if (json_real_value(v) < 0)
			return -EINVAL;
		*milli = (int64_t)(json_real_value(v) * 1000.0 + 0.5);
		return 0;
	}
	return policy_quantity_milli(json_string_value(v), milli);
}

bool qty_binary(const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	return n >= 2 && s[n - 1] == 'i';
}

void qty_format(int64_t milli, bool binary, char *buf, size_t len)
{
	static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
	static const char *const dec[] = {"", "k", "M", "G", "T", "P", "E"};
	const char *sign = milli < 0 ? "-" : "";
	int64_t v = milli < 0 ? -milli : milli;
	if (v % 1000 != 0) {
		snprintf(buf, len, "%s%lldm", sign, (long long)v);
		return;
	}
	v /= 1000;
	int64_t base = binary ? 1024 : 1000;
	size_t k = 0;
	while (v != 0 && v % base == 0 && k + 1 < KB_ARRAY_SIZE(bin)) {
		v /= base;
		k++;
	}
	snprintf(buf, len, "%s%lld%s", sign, (long long)v, binary ? bin[k] : dec[k]);
}

/* ---- resource lists ---- */

int64_t qty_list_get(const json_t *rl, const char *k)
{
	return json_integer_value(json_object_get(rl, k));
}

void qty_list_add_key(json_t *rl, const char *k, int64_t v)
{
	json_object_set_new(rl, k, json_integer(qty_list_get(rl, k) + v));
}

static void rl_max(json_t *rl, const json_t *b)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)b, k, v)
		if (!json_object_get(rl, k) || json_integer_value(v) > qty_list_get(rl, k))
			json_object_set(rl, k, v);
}

void qty_list_add(json_t *a, const json_t *b, int sign)
{
	const char *k;
	json_t *v;
	json_object_foreach ((json_t *)b, k, v)
		qty_list_add_key(a, k, sign * json_integer_value(v));
}

/* A ResourceList object of quantity strings into a resource list. */
static json_t *rl_parse(const json_t *res)
{
	json_t *rl = json_object();
	const char *k;
	json_t *v;
	int64_t m;
	json_object_foreach ((json_t *)res, k, v)
		if (qty_parse(v, &m) == 0)
			json_object_set_new(rl, k, json_integer(m));
	return rl;
}

/* A container's requests (those it lacks default to its limits, as the API
 * defaults them) or limits. */
json_t *qty_container_list(const json_t *c, bool requests)
{
	const json_t *res = json_object_get(c, "resources");
	json_t *rl = rl_parse(json_object_get(res, requests ? "requests" : "limits"));
	if (!requests)
		return rl;
	json_t *lim = rl_parse(json_object_get(res, "limits"));
	const char *k;
	json_t *v;
	json_object_foreach (lim, k, v)
		if (!json_object_get(rl, k))
			json_object_set(rl, k, v);
	json_decref(lim);
	return rl;
}

static bool is_sidecar(const json_t *c)
{
	const char *p = json_string_value(json_object_get(c, "restartPolicy"));
	return p && strcmp(p, "Always") == 0;
}

json_t *qty_pod_resources(const json_t *spec, bool requests, bool overhead)
{
	json_t *sum = json_object(), *side = json_object(), *init = json_object();
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(spec, "containers"), i, c) {
		json_t *l = qty_container_list(c, requests);
		qty_list_add(sum, l, 1);
		json_decref(l);
	}
	json_array_foreach (json_object_get(spec, "initContainers"), i, c) {
		json_t *l = qty_container_list(c, requests);
		if (is_sidecar(c)) {
			qty_list_add(sum, l, 1);
			qty_list_add(side, l, 1);
			rl_max(init, side);
		} else {
			qty_list_add(l, side, 1);
			rl_max(init, l);
		}
		json_decref(l);
	}
	rl_max(sum, init);
	json_t *over = rl_parse(overhead ? json_object_get(spec, "overhead") : NULL);
	const char *k;
	json_t *v;
	json_object_foreach (over, k, v)
		if (requests || json_object_get(sum, k))
			qty_list_add_key(sum, k, json_integer_value(v));
	json_decref(over);
	json_decref(side);
	json_decref(init);
	return sum;
}

bool qty_extended(const char *name)
{
	return strchr(name, '/') && !strstr(name, "kubernetes.io/") &&
	       strncmp(name, "requests.", 9) != 0;
}

bool qty_overcommit_allowed(const char *name)
{
	return !qty_extended(name) && strncmp(name, "hugepages-", 10) != 0;
}
