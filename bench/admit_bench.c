/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cost of the policy decision for one pod (policy_admit), with and
 * without the host floor: a realistic pod (restricted security context,
 * labels, annotations, env, a GPU, an os/arch node selector, kube's default
 * tolerations, three
 * containers) admitted ITERATIONS times under:
 *   - no policy, no floor (a server without a host: nothing is checked);
 *   - no policy, the baseline floor (a syncing tenant without --policy);
 *   - untrusted, no floor; untrusted with the baseline floor.
 * Prints nanoseconds per pod. The floor's extra cost is the difference.
 * Usage: admit_bench [ITERATIONS]   (KUBICLE_POLICY_DIR=policies from the
 * source tree if the build's folder is not found)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policies/policies.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define SC                                                                                    \
	"\"securityContext\":{\"allowPrivilegeEscalation\":false,\"capabilities\":{\"drop\":" \
	"[\"ALL\"]}}"
#define CTR(n)                                                                                  \
	"{\"name\":\"" n "\",\"image\":\"busybox\",\"command\":[\"sleep\",\"3600\"],"           \
	"\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"2\"},{\"name\":" \
	"\"C\",\"value\":\"3\"}],\"envFrom\":[{\"configMapRef\":{\"name\":\"cfg\"}}],"          \
	"\"resources\":{\"limits\":{\"nvidia.com/"                                              \
	"gpu\":\"1\",\"cpu\":\"1\",\"memory\":\"1Gi\"}}," SC "}"

static const char pod_json[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"bench\","
    "\"namespace\":\"default\",\"labels\":{\"app\":\"bench\",\"tier\":\"backend\","
    "\"team\":\"kubicle\"},\"annotations\":{\"owner\":\"alice\",\"note\":\"x\"}},"
    "\"spec\":{\"schedulerName\":\"kai-scheduler\",\"securityContext\":{\"runAsNonRoot\":true,"
    "\"seccompProfile\":{\"type\":\"RuntimeDefault\"}},"
    "\"nodeSelector\":{\"kubernetes.io/arch\":\"amd64\"},"
    "\"tolerations\":[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":"
    "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":\"node.kubernetes.io/"
    "not-ready\",\"operator\":\"Exists\","
    "\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],"
    "\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}}],"
    "\"containers\":[" CTR("a") "," CTR("b") "," CTR("c") "]}}";

static double run(const policy_t *p, int floor, const json_t *pod, long n)
{
	char msg[4096];
	double t0 = now_ns();
	for (long i = 0; i < n; i++) {
		msg[0] = '\0';
		if (policy_admit(p, floor, "Pod", pod, NULL, msg, sizeof(msg)) < 0) {
			fprintf(stderr, "refused: %s\n", msg);
			exit(1);
		}
	}
	return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	json_t *pod = json_loads(pod_json, 0, NULL);
	policy_t *p = NULL;
	char err[256];
	int baseline = policy_pss_parse("baseline");
	if (!pod || policy_load("untrusted", &p, err, sizeof(err)) < 0) {
		fprintf(stderr, "setup: %s\n", pod ? err : "bad pod");
		return 1;
	}
	run(p, baseline, pod, n / 10); /* warm-up */
	printf("%-34s %8.0f ns/pod\n", "no policy, no floor", run(NULL, POLICY_FLOOR_NONE, pod, n));
	printf("%-34s %8.0f ns/pod\n", "no policy, floor baseline", run(NULL, baseline, pod, n));
	printf("%-34s %8.0f ns/pod\n", "untrusted, no floor", run(p, POLICY_FLOOR_NONE, pod, n));
	printf("%-34s %8.0f ns/pod\n", "untrusted, floor baseline", run(p, baseline, pod, n));
	policy_free(p);
	json_decref(pod);
	return 0;
}
