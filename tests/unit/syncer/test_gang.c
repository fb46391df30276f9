/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of syncer/gang.c: the gang of a pod per top-owner kind, the
 * owner walk through the tenant store (LeaderWorkerSet's pod -> StatefulSet
 * -> leader pod -> StatefulSet -> LeaderWorkerSet), the host PodGroups of
 * KAI and Volcano, and the keys each profile's pods get.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"
#include "tests/unit/store/tmpdb.h"

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, 0, &e);
	ck_assert_msg(v != NULL, "bad JSON in test: %s: %s", e.text, text);
	return v;
}

static json_int_t I(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* shape of (kind, top) for pod (NULL: a pod with no labels) */
static json_t *shape(const char *kind, const char *top, const char *pod)
{
	json_t *t = J(top), *p = J(pod ? pod : "{}");
	json_t *g = syncer_gang_shape(kind, t, p);
	json_decref(t);
	json_decref(p);
	return g;
}

START_TEST(job_shapes)
{
	/* a plain Job: one by one, as KAI's job grouper (no gang) */
	ck_assert_ptr_null(shape("Job", "{\"spec\":{\"parallelism\":4}}", NULL));
	/* Indexed, completions = parallelism: all ranks together, a fixed count */
	json_t *g = shape("Job",
			  "{\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":4,"
			  "\"completions\":4}}",
			  NULL);
	ck_assert_int_eq(I(g, "min"), 4);
	ck_assert_int_eq(I(g, "total"), 4);
	json_decref(g);
	/* Indexed with more completions than parallelism: pods come and go */
	ck_assert_ptr_null(
	    shape("Job",
		  "{\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":4,\"completions\":8}}",
		  NULL));
	/* the tenant asks, never above parallelism */
	g = shape("Job",
		  "{\"metadata\":{\"annotations\":{\"kai.scheduler/batch-min-member\":\"9\"}},"
		  "\"spec\":{\"parallelism\":3,\"completions\":6}}",
		  NULL);
	ck_assert_int_eq(I(g, "min"), 3);
	ck_assert_int_eq(I(g, "total"), 0);
	json_decref(g);
	ck_assert_ptr_null(
	    shape("Job",
		  "{\"metadata\":{\"annotations\":{\"kai.scheduler/batch-min-member\":"
		  "\"x\"}},\"spec\":{\"parallelism\":3}}",
		  NULL));
	/* an absurd size is capped */
	g = shape("Job",
		  "{\"spec\":{\"completionMode\":\"Indexed\",\"parallelism\":99999999,"
		  "\"completions\":99999999}}",
		  NULL);
	ck_assert_int_eq(I(g, "min"), 10000);
	json_decref(g);
}
END_TEST

START_TEST(jobset_shapes)
{
	const char *js = "{\"spec\":{\"replicatedJobs\":["
			 "{\"name\":\"leader\",\"replicas\":1,\"template\":{\"spec\":{}}},"
			 "{\"name\":\"workers\",\"replicas\":2,\"template\":{\"spec\":"
			 "{\"parallelism\":4,\"completions\":4}}}]}}";
	json_t *g = shape("JobSet", js, NULL);
	ck_assert_int_eq(I(g, "min"), 9);
	ck_assert_str_eq(json_string_value(json_object_get(g, "suffix")), "0");
	json_decref(g);
	/* InOrder: one group per replicated job, named by the pod's label */
	char *inorder = strdup(js);
	json_t *t = J(inorder);
	json_object_set_new(json_object_get(t, "spec"), "startupPolicy",
			    J("{\"startupPolicyOrder\":\"InOrder\"}"));
	char *txt = json_dumps(t, 0);
	g = shape("JobSet", txt,
		  "{\"metadata\":{\"labels\":{\"jobset.sigs.k8s.io/replicatedjob-name\":"
		  "\"workers\"}}}");
	ck_assert_int_eq(I(g, "min"), 8);
	ck_assert_str_eq(json_string_value(json_object_get(g, "suffix")), "workers");
	json_decref(g);
	/* the leader alone is no gang */
	ck_assert_ptr_null(shape("JobSet", txt,
				 "{\"metadata\":{\"labels\":{\"jobset.sigs.k8s.io/"
				 "replicatedjob-name\":\"leader\"}}}"));
	free(txt);
	free(inorder);
	json_decref(t);
}
END_TEST

/* A gang of 4 against pods quotas: the lowest that holds every pod and fewer
 * than 4 is the one that refuses it; scoped quotas are left aside (they
 * may not count the gang's pods). */
START_TEST(pods_quota)
{
	json_t *gang = J("{\"min\":4,\"kind\":\"Job\",\"owner\":\"train\"}");
	json_t *qs = J("["
		       "{\"metadata\":{\"name\":\"roomy\"},\"spec\":{\"hard\":{\"pods\":\"10\"}}},"
		       "{\"metadata\":{\"name\":\"scoped\"},\"spec\":{\"hard\":{\"pods\":\"1\"},"
		       "\"scopes\":[\"BestEffort\"]}},"
		       "{\"metadata\":{\"name\":\"sel\"},\"spec\":{\"hard\":{\"pods\":\"1\"},"
		       "\"scopeSelector\":{}}},"
		       "{\"metadata\":{\"name\":\"odd\"},\"spec\":{\"hard\":{\"pods\":\"1k\"}}},"
		       "{\"metadata\":{\"name\":\"three\"},\"spec\":{\"hard\":{\"pods\":\"3\"}}},"
		       "{\"metadata\":{\"name\":\"two\"},\"spec\":{\"hard\":{\"pods\":\"2\"}}},"
		       "{\"metadata\":{\"name\":\"gpu\"},\"spec\":{\"hard\":{\"requests.nvidia.com/"
		       "gpu\":\"1\"}}}"
		       "]");
	const json_t *q = syncer_gang_pods_quota(gang, qs);
	ck_assert_ptr_nonnull(q);
	ck_assert_str_eq(json_string_value(kb_json_path(q, "metadata.name")), "two");
	char msg[512];
	ck_assert_int_eq(
	    syncer_gang_pods_message(gang, q, "the ResourceQuota ml/two", msg, sizeof(msg)), 0);
	ck_assert_str_eq(msg, "Job train needs 4 pods together, more than the ResourceQuota ml/two "
			      "allows: exceeded quota: two, requested: pods=4, limited: pods=2: it "
			      "could never be scheduled, and its pods are not sent to the host");
	/* exactly the minimum fits */
	json_t *four =
	    J("[{\"metadata\":{\"name\":\"four\"},\"spec\":{\"hard\":{\"pods\":\"4\"}}}]");
	ck_assert_ptr_null(syncer_gang_pods_quota(gang, four));
	ck_assert_ptr_null(syncer_gang_pods_quota(gang, NULL));
	/* kube's object count key counts pods too, and counts are quantities */
	json_t *other = J("[{\"metadata\":{\"name\":\"c\"},\"spec\":{\"hard\":{\"pods\":\"10\","
			  "\"count/pods\":\"3\"}}}]");
	ck_assert_ptr_nonnull(syncer_gang_pods_quota(gang, other));
	json_decref(other);
	other = J("[{\"metadata\":{\"name\":\"q\"},\"spec\":{\"hard\":{\"pods\":\"3000m\"}}}]");
	ck_assert_ptr_nonnull(syncer_gang_pods_quota(gang, other));
	json_decref(other);
	json_decref(four);
	json_decref(qs);
	json_decref(gang);
}
END_TEST

START_TEST(kubeflow_shapes)
{
	const char *pt = "{\"spec\":{\"pytorchReplicaSpecs\":{\"Master\":{\"replicas\":1},"
			 "\"Worker\":{\"replicas\":3}}}}";
	json_t *g = shape("PyTorchJob", pt,
			  "{\"metadata\":{\"labels\":{\"training.kubeflow.org/replica-type\":"
			  "\"worker\"}}}");
	ck_assert_int_eq(I(g, "min"), 4);
	ck_assert_int_eq(I(g, "total"), 4);
	ck_assert_str_eq(json_string_value(json_object_get(g, "subgroup")), "worker");
	ck_assert_int_eq(json_array_size(json_object_get(g, "subGroups")), 2);
	json_decref(g);
	/* minAvailable wins, no subgroups */
	g = shape("PyTorchJob",
		  "{\"spec\":{\"runPolicy\":{\"schedulingPolicy\":{\"minAvailable\":2}},"
		  "\"pytorchReplicaSpecs\":{\"Worker\":{\"replicas\":5}}}}",
		  NULL);
	ck_assert_int_eq(I(g, "min"), 2);
	ck_assert_ptr_null(json_object_get(g, "subGroups"));
	json_decref(g);
	/* elastic: minReplicas beside the master, a count that moves */
	g = shape("PyTorchJob",
		  "{\"spec\":{\"elasticPolicy\":{\"minReplicas\":2,\"maxReplicas\":8},"
		  "\"pytorchReplicaSpecs\":{\"Master\":{\"replicas\":1},\"Worker\":{\"replicas\":"
		  "4}}}}",
		  NULL);
	ck_assert_int_eq(I(g, "min"), 3);
	ck_assert_int_eq(I(g, "total"), 0);
	json_decref(g);
	/* MPIJob: launcher and workers; a delayed launcher is not waited for */
#define MPI(extra)                                                                \
	"{\"spec\":{" extra "\"mpiReplicaSpecs\":{\"Launcher\":{\"replicas\":1}," \
	"\"Worker\":{\"replicas\":4}}}}"
	g = shape("MPIJob", MPI(""), NULL);
	ck_assert_int_eq(I(g, "min"), 5);
	json_decref(g);
	g = shape("MPIJob", MPI("\"launcherCreationPolicy\":\"WaitForWorkersReady\","), NULL);
	ck_assert_int_eq(I(g, "min"), 4);
	ck_assert_int_eq(I(g, "total"), 0);
	json_decref(g);
}
END_TEST

START_TEST(other_shapes)
{
	json_t *g = shape("RayCluster",
			  "{\"spec\":{\"workerGroupSpecs\":[{\"replicas\":2,\"numOfHosts\":2},"
			  "{\"replicas\":1}]}}",
			  NULL);
	ck_assert_int_eq(I(g, "min"), 6);
	ck_assert_int_eq(I(g, "total"), 6);
	json_decref(g);
	g = shape("RayCluster",
		  "{\"spec\":{\"enableInTreeAutoscaling\":true,\"workerGroupSpecs\":[{\"replicas\":"
		  "4,\"minReplicas\":1}]}}",
		  NULL);
	ck_assert_int_eq(I(g, "min"), 2);
	ck_assert_int_eq(I(g, "total"), 0);
	json_decref(g);
	g = shape(
	    "LeaderWorkerSet", "{\"spec\":{\"leaderWorkerTemplate\":{\"size\":4}}}",
	    "{\"metadata\":{\"labels\":{\"leaderworkerset.sigs.k8s.io/group-index\":\"2\"}}}");
	ck_assert_int_eq(I(g, "min"), 4);
	ck_assert_str_eq(json_string_value(json_object_get(g, "suffix")), "2");
	json_decref(g);
	ck_assert_ptr_null(shape("StatefulSet", "{\"spec\":{\"replicas\":3}}", NULL));
	g = shape("StatefulSet", "{\"spec\":{\"replicas\":3,\"podManagementPolicy\":\"Parallel\"}}",
		  NULL);
	ck_assert_int_eq(I(g, "min"), 3);
	json_decref(g);
	ck_assert_ptr_null(shape("Deployment", "{\"spec\":{\"replicas\":3}}", NULL));
	ck_assert_ptr_null(shape("Unknown", "{}", NULL));
}
END_TEST

/* ---- the owner walk ---- */

static struct tmpdb db;
static uv_loop_t loop;
static store_t *st;

static void put(const char *res, const char *text)
{
	json_t *o = J(text);
	const char *name =
	    json_string_value(json_object_get(json_object_get(o, "metadata"), "name"));
	ck_assert_int_eq(store_create(st, res, "ml", name, o, NULL), 0);
	json_decref(o);
}

static void walk_setup(void)
{
	tmpdb_make(&db, "kb-gang");
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_eq(store_open(&loop, db.path, NULL, &st), 0);
}

static void walk_teardown(void)
{
	store_close(st);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
	tmpdb_remove(&db);
}

#define REF(av, kind, name, uid)                                                                \
	"{\"apiVersion\":\"" av "\",\"kind\":\"" kind "\",\"name\":\"" name "\",\"uid\":\"" uid \
	"\",\"controller\":true}"

START_TEST(walk_lws)
{
	put("leaderworkerset.x-k8s.io/leaderworkersets",
	    "{\"metadata\":{\"name\":\"llm\",\"namespace\":\"ml\",\"uid\":\"u-lws\","
	    "\"labels\":{\"app\":\"llm\",\"kai.scheduler/node-pool\":\"mine\"}},"
	    "\"spec\":{\"leaderWorkerTemplate\":{\"size\":3}}}");
	put("apps/statefulsets",
	    "{\"metadata\":{\"name\":\"llm\",\"namespace\":\"ml\",\"uid\":"
	    "\"u-sts\",\"ownerReferences\":[" REF("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet",
						  "llm", "u-lws") "]}}");
	put("/pods", "{\"metadata\":{\"name\":\"llm-0\",\"namespace\":\"ml\",\"uid\":\"u-lead\","
		     "\"ownerReferences\":[" REF("apps/v1", "StatefulSet", "llm", "u-sts") "]}}");
	put("apps/statefulsets",
	    "{\"metadata\":{\"name\":\"llm-0\",\"namespace\":\"ml\",\"uid\":\"u-wsts\","
	    "\"ownerReferences\":[" REF("v1", "Pod", "llm-0", "u-lead") "]}}");
	json_t *worker =
	    J("{\"metadata\":{\"name\":\"llm-0-1\",\"namespace\":\"ml\",\"labels\":"
	      "{\"leaderworkerset.sigs.k8s.io/group-index\":\"0\"},"
	      "\"ownerReferences\":[" REF("apps/v1", "StatefulSet", "llm-0", "u-wsts") "]}}");
	json_t *g = syncer_gang_of(st, worker, "t1");
	ck_assert_ptr_nonnull(g);
	ck_assert_str_eq(json_string_value(json_object_get(g, "kind")), "LeaderWorkerSet");
	ck_assert_str_eq(json_string_value(json_object_get(g, "name")), "pg.leaderworkerset.0.llm");
	ck_assert_str_eq(json_string_value(json_object_get(g, "group")),
			 "pg.leaderworkerset.0.llm-x-ml-x-t1");
	ck_assert_str_eq(json_string_value(json_object_get(g, "uid")), "u-lws");
	ck_assert_int_eq(I(g, "min"), 3);

	/* the KAI group: contract, queue, minMember; the tenant's scheduler
	 * labels stay off it */
	struct syncer_xlate x = {.tenant = "t1",
				 .host_ns = "tenants",
				 .queue = "team-a",
				 .profile = syncer_profile_find("kai")};
	json_t *hp = J("{\"spec\":{\"priorityClassName\":\"train\",\"containers\":[{\"resources\":"
		       "{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]}}");
	json_t *pg = syncer_group_object(&x, g, hp);
	ck_assert_str_eq(json_string_value(json_object_get(pg, "apiVersion")),
			 "scheduling.run.ai/v2alpha2");
	ck_assert_int_eq(json_integer_value(kb_json_path(pg, "spec.minMember")), 3);
	ck_assert_str_eq(json_string_value(kb_json_path(pg, "spec.queue")), "team-a");
	ck_assert_str_eq(json_string_value(kb_json_path(pg, "spec.priorityClassName")), "train");
	json_t *labels = kb_json_path(pg, "metadata.labels");
	ck_assert_str_eq(json_string_value(json_object_get(labels, "kubicle.dev/tenant")), "t1");
	ck_assert_str_eq(json_string_value(json_object_get(labels, "app")), "llm");
	ck_assert_ptr_null(json_object_get(labels, "kai.scheduler/node-pool"));
	ck_assert(syncer_host_is(pg, "t1", "ml", "pg.leaderworkerset.0.llm", NULL));
	json_decref(pg);

	/* Volcano: its PodGroup, no subgroups */
	x.profile = syncer_profile_find("volcano");
	pg = syncer_group_object(&x, g, hp);
	ck_assert_str_eq(json_string_value(json_object_get(pg, "apiVersion")),
			 "scheduling.volcano.sh/v1beta1");
	ck_assert_ptr_null(kb_json_path(pg, "spec.subGroups"));
	json_decref(pg);
	/* Kueue and HAMi: no group object */
	x.profile = syncer_profile_find("kueue");
	ck_assert_ptr_null(syncer_group_object(&x, g, hp));
	x.profile = syncer_profile_find("hami");
	ck_assert_ptr_null(syncer_group_object(&x, g, hp));
	json_decref(hp);
	json_decref(g);

	/* an owner of another uid (deleted and made again): no gang */
	json_t *stale =
	    J("{\"metadata\":{\"name\":\"llm-0-1\",\"namespace\":\"ml\",\"labels\":"
	      "{\"leaderworkerset.sigs.k8s.io/group-index\":\"0\"},"
	      "\"ownerReferences\":[" REF("apps/v1", "StatefulSet", "llm-0", "u-old") "]}}");
	ck_assert_ptr_null(syncer_gang_of(st, stale, "t1"));
	json_decref(stale);
	json_decref(worker);
}
END_TEST

START_TEST(walk_unknown_owner)
{
	json_t *p =
	    J("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"ownerReferences\":[" REF(
		"example.com/v1", "Trainer", "t", "u") "]}}");
	ck_assert_ptr_null(syncer_gang_of(st, p, "t1"));
	json_decref(p);
	p = J("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"}}");
	ck_assert_ptr_null(syncer_gang_of(st, p, "t1"));
	json_decref(p);
}
END_TEST

START_TEST(pod_keys)
{
	json_t *g = J("{\"group\":\"pg.job.train-x-ml-x-t1\",\"min\":4,\"total\":4,"
		      "\"subgroup\":\"worker\"}");
	struct syncer_xlate x = {.tenant = "t1", .host_ns = "tenants"};
	const char *profiles[] = {"kai", "volcano", "kueue", "hami"};
	for (size_t i = 0; i < 4; i++) {
		x.profile = syncer_profile_find(profiles[i]);
		json_t *hp = json_object();
		syncer_gang_keys(&x, g, hp);
		json_t *ann = kb_json_path(hp, "metadata.annotations");
		json_t *lab = kb_json_path(hp, "metadata.labels");
		const char *grp =
		    i == 0 ? json_string_value(json_object_get(ann, "pod-group-name"))
		    : i == 1
			? json_string_value(json_object_get(ann, "scheduling.k8s.io/group-name"))
		    : i == 2
			? json_string_value(json_object_get(lab, "kueue.x-k8s.io/pod-group-name"))
			: NULL;
		if (i < 3)
			ck_assert_str_eq(grp, "pg.job.train-x-ml-x-t1");
		else
			ck_assert_int_eq(json_object_size(ann) + json_object_size(lab), 0);
		if (i == 0) {
			ck_assert_str_eq(json_string_value(
					     json_object_get(ann, "kai.scheduler/skip-podgrouper")),
					 "true");
			ck_assert_str_eq(
			    json_string_value(json_object_get(lab, "kai.scheduler/subgroup-name")),
			    "worker");
		}
		if (i == 2)
			ck_assert_str_eq(json_string_value(json_object_get(
					     ann, "kueue.x-k8s.io/pod-group-total-count")),
					 "4");
		json_decref(hp);
	}
	/* Kueue: a count that moves gets no group at all (its webhook would
	 * refuse a name without a count) */
	json_object_set_new(g, "total", json_integer(0));
	x.profile = syncer_profile_find("kueue");
	json_t *hp = json_object();
	syncer_gang_keys(&x, g, hp);
	ck_assert_int_eq(json_object_size(kb_json_path(hp, "metadata.labels")), 0);
	ck_assert_int_eq(json_object_size(kb_json_path(hp, "metadata.annotations")), 0);
	json_decref(hp);
	json_decref(g);
}
END_TEST

/* Scheduler keys are the platform's: a tenant's are stripped; topology
 * hints pass only where the policy allows, and reach KAI's PodGroup. */
START_TEST(tenant_keys_stripped)
{
	json_t *p = J("{\"metadata\":{\"name\":\"w\",\"namespace\":\"ml\",\"uid\":\"u\","
		      "\"labels\":{\"kai.scheduler/subgroup-name\":\"x\",\"runai-gpu-group/2\":"
		      "\"g\",\"kueue.x-k8s.io/pod-group-name\":\"other\",\"app\":\"a\"},"
		      "\"annotations\":{\"pod-group-name\":\"someone-elses\","
		      "\"kai.scheduler/skip-podgrouper\":\"true\","
		      "\"kueue.x-k8s.io/pod-group-total-count\":\"1\","
		      "\"volcano.sh/task-spec\":\"t\","
		      "\"kai.scheduler/topology\":\"net\","
		      "\"kai.scheduler/topology-required-placement\":\"rack\","
		      "\"kueue.x-k8s.io/podset-required-topology\":\"zone\","
		      "\"volcano.sh/network-topology-mode\":\"hard\"}},"
		      "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}");
	struct syncer_xlate x = {.tenant = "t1",
				 .host_ns = "tenants",
				 .queue = "team-a",
				 .profile = syncer_profile_find("kai")};
	json_t *h = syncer_translate_pod(&x, p, NULL);
	json_t *lab = kb_json_path(h, "metadata.labels"),
	       *ann = kb_json_path(h, "metadata.annotations");
	const char *gone[] = {"kai.scheduler/subgroup-name", "runai-gpu-group/2",
			      "kueue.x-k8s.io/pod-group-name"};
	for (size_t i = 0; i < 3; i++)
		ck_assert_msg(!json_object_get(lab, gone[i]), "label %s passed", gone[i]);
	const char *agone[] = {"pod-group-name",
			       "kai.scheduler/skip-podgrouper",
			       "kueue.x-k8s.io/pod-group-total-count",
			       "volcano.sh/task-spec",
			       "kai.scheduler/topology",
			       "kai.scheduler/topology-required-placement",
			       "kueue.x-k8s.io/podset-required-topology",
			       "volcano.sh/network-topology-mode"};
	for (size_t i = 0; i < KB_ARRAY_SIZE(agone); i++)
		ck_assert_msg(!json_object_get(ann, agone[i]), "annotation %s passed", agone[i]);
	ck_assert_str_eq(json_string_value(json_object_get(lab, "app")), "a");
	json_decref(h);
	/* the policy allows topology hints: they pass, and KAI's group has them */
	x.topology_hints = true;
	h = syncer_translate_pod(&x, p, NULL);
	ann = kb_json_path(h, "metadata.annotations");
	ck_assert_str_eq(json_string_value(json_object_get(ann, "kai.scheduler/topology")), "net");
	ck_assert_ptr_null(json_object_get(ann, "pod-group-name"));
	json_t *g = J("{\"group\":\"pg.job.w-x-ml-x-t1\",\"name\":\"pg.job.w\",\"ns\":\"ml\","
		      "\"kind\":\"Job\",\"owner\":\"w\",\"uid\":\"u\",\"min\":2,\"total\":2}");
	json_t *pg = syncer_group_object(&x, g, h);
	ck_assert_str_eq(json_string_value(kb_json_path(pg, "spec.topologyConstraint.topology")),
			 "net");
	ck_assert_str_eq(
	    json_string_value(kb_json_path(pg, "spec.topologyConstraint.requiredTopologyLevel")),
	    "rack");
	json_decref(pg);
	/* Volcano's: the PodGroup's networkTopology */
	x.profile = syncer_profile_find("volcano");
	json_object_set_new(kb_json_path(h, "metadata.annotations"),
			    "volcano.sh/network-topology-highest-tier", json_string("2"));
	pg = syncer_group_object(&x, g, h);
	ck_assert_str_eq(json_string_value(kb_json_path(pg, "spec.networkTopology.mode")), "hard");
	ck_assert_int_eq(
	    json_integer_value(kb_json_path(pg, "spec.networkTopology.highestTierAllowed")), 2);
	json_decref(pg);
	json_decref(g);
	json_decref(h);
	json_decref(p);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("syncer/gang");
	TCase *tc = tcase_create("shapes");
	tcase_add_test(tc, job_shapes);
	tcase_add_test(tc, jobset_shapes);
	tcase_add_test(tc, kubeflow_shapes);
	tcase_add_test(tc, other_shapes);
	tcase_add_test(tc, pods_quota);
	tcase_add_test(tc, pod_keys);
	tcase_add_test(tc, tenant_keys_stripped);
	suite_add_tcase(s, tc);
	tc = tcase_create("walk");
	tcase_add_checked_fixture(tc, walk_setup, walk_teardown);
	tcase_add_test(tc, walk_lws);
	tcase_add_test(tc, walk_unknown_owner);
	suite_add_tcase(s, tc);
	return s;
}
