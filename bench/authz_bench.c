/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cost of one RBAC decision with many roles and bindings: builds an
 * index of N Roles and N RoleBindings (spread over 100 namespaces, each
 * binding naming 3 users and a group), plus the default ClusterRoles, then
 * times rbac_allowed() for an allowed request, a denied one (the worst case:
 * every binding of the user's groups is walked) and, as the baseline "RBAC
 * off", the system:masters shortcut the server takes for its admin.
 * Usage: authz_bench [N] [ITERATIONS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/auth/rbac.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void put(rbac_index_t *ix, enum rbac_kind k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static void put(rbac_index_t *ix, enum rbac_kind k, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_t *o = json_loads(buf, 0, NULL);
	if (!o || rbac_index_put(ix, k, o) < 0) {
		fprintf(stderr, "bad object %s\n", buf);
		exit(1);
	}
	json_decref(o);
}

static bool masters(const struct rbac_attrs *a)
{
	for (size_t i = 0; i < a->ngroups; i++)
		if (strcmp(a->groups[i], "system:masters") == 0)
			return true;
	return false;
}

static double time_it(rbac_index_t *ix, const struct rbac_attrs *a, long iters, bool off,
		      bool *result)
{
	volatile bool r = false;
	double t0 = now_ns();
	for (long i = 0; i < iters; i++)
		r = off ? masters(a) : rbac_allowed(ix, a, NULL, 0);
	*result = r;
	return (now_ns() - t0) / (double)iters;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	long iters = argc > 2 ? atol(argv[2]) : 2000000;
	rbac_index_t *ix = rbac_index_new();
	json_t *d = rbac_defaults();
	size_t i;
	json_t *o;
	json_array_foreach (d, i, o) {
		const char *kind = json_string_value(json_object_get(o, "kind"));
		rbac_index_put(ix,
			       strcmp(kind, "ClusterRole") == 0 ? RBAC_CLUSTERROLE
								: RBAC_CLUSTERROLEBINDING,
			       o);
	}
	json_decref(d);
	for (int k = 0; k < n; k++) {
		char ref[64];
		if (k % 10)
			snprintf(ref, sizeof(ref), "role-%d", k);
		else
			snprintf(ref, sizeof(ref), "view");
		put(ix, RBAC_ROLE,
		    "{\"metadata\":{\"name\":\"role-%d\",\"namespace\":\"ns-%d\"},\"rules\":["
		    "{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"secrets\"],\"verbs\":["
		    "\"get\",\"list\"]},"
		    "{\"apiGroups\":[\"apps\"],\"resources\":[\"deployments\",\"deployments/"
		    "scale\"],\"verbs\":[\"get\",\"update\"]},"
		    "{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"resourceNames\":[\"p-%d\"],"
		    "\"verbs\":[\"delete\"]}]}",
		    k, k % 100, k);
		put(ix, RBAC_ROLEBINDING,
		    "{\"metadata\":{\"name\":\"rb-%d\",\"namespace\":\"ns-%d\"},\"subjects\":["
		    "{\"kind\":\"User\",\"name\":\"user-%d\"},{\"kind\":\"User\",\"name\":\"user-%"
		    "d\"},"
		    "{\"kind\":\"ServiceAccount\",\"name\":\"sa-%d\"},{\"kind\":\"Group\",\"name\":"
		    "\"team-%d\"}],"
		    "\"roleRef\":{\"kind\":\"%s\",\"name\":\"%s\"}}",
		    k, k % 100, k, (k + 1) % n, k, k % 50, k % 10 ? "Role" : "ClusterRole", ref);
	}
	const char *groups[] = {"team-7", "system:authenticated"};
	const char *mgroups[] = {"system:masters", "system:authenticated"};
	struct rbac_attrs allow = {.user = "user-507",
				   .groups = groups,
				   .ngroups = 2,
				   .verb = "get",
				   .resource_request = true,
				   .api_group = "",
				   .resource = "secrets",
				   .ns = "ns-7",
				   .name = "s"};
	struct rbac_attrs deny = allow;
	deny.verb = "delete";
	deny.resource = "nodes";
	struct rbac_attrs off = allow;
	off.groups = mgroups;
	bool r1, r2, r3;
	rbac_allowed(ix, &allow, NULL, 0); /* builds the subject index */
	double ta = time_it(ix, &allow, iters, false, &r1);
	double td = time_it(ix, &deny, iters, false, &r2);
	double to = time_it(ix, &off, iters, true, &r3);
	printf("roles=%zu bindings=%zu clusterroles=%zu clusterrolebindings=%zu\n",
	       rbac_index_count(ix, RBAC_ROLE), rbac_index_count(ix, RBAC_ROLEBINDING),
	       rbac_index_count(ix, RBAC_CLUSTERROLE),
	       rbac_index_count(ix, RBAC_CLUSTERROLEBINDING));
	printf("rbac off (masters shortcut): %8.1f ns/decision (%s)\n", to, r3 ? "allow" : "deny");
	printf("rbac allowed:                %8.1f ns/decision (%s)\n", ta, r1 ? "allow" : "deny");
	printf("rbac denied (worst case):    %8.1f ns/decision (%s)\n", td, r2 ? "allow" : "deny");
	printf("added by rbac: allowed %.2f us, denied %.2f us (budget 5 us)\n", (ta - to) / 1000,
	       (td - to) / 1000);
	rbac_index_free(ix);
	return r1 && !r2 && r3 ? 0 : 1;
}
