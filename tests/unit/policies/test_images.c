/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for policies/images.c: kube's AlwaysPullImages under the floor and
 * a policy (every container kind, image volumes, updates only when they
 * bring a new image, imagePullPolicy: any), and imageRegistries (prefixes
 * on whole components, Docker Hub's normalisation, pods and templates).
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "policies/policies.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

#define BASELINE 1

static json_t *J(const char *s)
{
	json_error_t e;
	json_t *j = json_loads(s, 0, &e);
	ck_assert_msg(j != NULL, "bad json: %s: %s", s, e.text);
	return j;
}

static policy_t *parse(const char *yaml)
{
	policy_t *p = NULL;
	char err[256] = "";
	ck_assert_msg(policy_parse(yaml, strlen(yaml), "img", &p, err, sizeof(err)) == 0, "%s",
		      err);
	return p;
}

static const char *pull(const json_t *pod, const char *list, size_t i)
{
	return json_string_value(
	    json_object_get(json_array_get(json_object_get(json_object_get(pod, "spec"), list), i),
			    "imagePullPolicy"));
}

#define POD                                                                             \
	"{\"metadata\":{\"name\":\"p\"},\"spec\":{"                                     \
	"\"initContainers\":[{\"name\":\"i\",\"image\":\"busybox\"}],"                  \
	"\"containers\":[{\"name\":\"c\",\"image\":\"busybox\","                        \
	"\"imagePullPolicy\":\"IfNotPresent\"}],"                                       \
	"\"ephemeralContainers\":[{\"name\":\"e\",\"image\":\"x\",\"imagePullPolicy\":" \
	"\"Never\"}],"                                                                  \
	"\"volumes\":[{\"name\":\"v\",\"image\":{\"reference\":\"other/private:1\"}}]}}"

START_TEST(floor_pulls_always)
{
	json_t *pod = J(POD);
	ck_assert_int_eq(policy_mutate_images(NULL, BASELINE, pod, NULL), 4);
	ck_assert_str_eq(pull(pod, "initContainers", 0), "Always");
	ck_assert_str_eq(pull(pod, "containers", 0), "Always");
	ck_assert_str_eq(pull(pod, "ephemeralContainers", 0), "Always");
	ck_assert_str_eq(
	    json_string_value(json_object_get(
		json_object_get(
		    json_array_get(json_object_get(json_object_get(pod, "spec"), "volumes"), 0),
		    "image"),
		"pullPolicy")),
	    "Always");
	json_decref(pod);
	/* no floor, no policy (a server without a host): as written */
	pod = J(POD);
	ck_assert_int_eq(policy_mutate_images(NULL, POLICY_FLOOR_NONE, pod, NULL), 0);
	ck_assert_str_eq(pull(pod, "containers", 0), "IfNotPresent");
	json_decref(pod);
}
END_TEST

START_TEST(updates_and_any)
{
	json_t *old = J(POD), *pod = J(POD);
	/* an update that brings no new image is left alone (kube's
	 * isUpdateWithNoNewImages) */
	ck_assert_int_eq(policy_mutate_images(NULL, BASELINE, pod, old), 0);
	/* a new image (an ephemeral container, a changed image) is not */
	json_object_set_new(
	    json_array_get(json_object_get(json_object_get(pod, "spec"), "ephemeralContainers"), 0),
	    "image", json_string("other-tenant/secret:1"));
	ck_assert_int_gt(policy_mutate_images(NULL, BASELINE, pod, old), 0);
	ck_assert_str_eq(pull(pod, "ephemeralContainers", 0), "Always");
	json_decref(pod);
	/* a trusted tenant's policy relaxes it */
	policy_t *any = parse("imagePullPolicy: any\n");
	pod = J(POD);
	ck_assert(policy_image_pull_any(any));
	ck_assert_int_eq(policy_mutate_images(any, BASELINE, pod, NULL), 0);
	ck_assert_str_eq(pull(pod, "containers", 0), "IfNotPresent");
	policy_free(any);
	json_decref(pod);
	json_decref(old);
	policy_t *bad = NULL;
	char err[256];
	ck_assert_int_eq(
	    policy_parse("imagePullPolicy: sometimes\n", 26, "b", &bad, err, sizeof(err)), -EINVAL);
}
END_TEST

static int admit(const policy_t *p, const char *kind, const char *obj, char *msg, size_t len)
{
	json_t *o = J(obj);
	msg[0] = '\0';
	int rc = policy_admit(p, BASELINE, kind, o, NULL, msg, len);
	json_decref(o);
	return rc;
}

#define IMG_POD(img)                                                                          \
	"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":" \
	"\"" img "\"}]}}"

START_TEST(registries)
{
	policy_t *p = parse("imageRegistries: [registry.example.com/team-a, docker.io/library/]\n");
	char msg[1024];
	static const struct {
		const char *image;
		bool ok;
	} cases[] = {
	    {"registry.example.com/team-a/app:1", true},
	    {"registry.example.com/team-a", true},
	    {"registry.example.com/team-a@sha256:abc", true},
	    {"registry.example.com/team-ab/app:1", false},
	    {"registry.example.com/team-a.evil.io/x", false},
	    {"registry.example.com/team-b/app", false},
	    {"busybox", true}, /* docker.io/library/busybox */
	    {"busybox:1.36", true},
	    {"docker.io/library/nginx", true},
	    {"someone/busybox", false}, /* docker.io/someone/busybox */
	    {"localhost/team-a/x", false},
	    {"registry.example.com:5000/team-a/x", false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char obj[512];
		snprintf(obj, sizeof(obj), IMG_POD("%s"), cases[i].image);
		int rc = admit(p, "Pod", obj, msg, sizeof(msg));
		ck_assert_msg(cases[i].ok ? rc == 0 : rc == -EACCES, "%s: %d %s", cases[i].image,
			      rc, msg);
		if (!cases[i].ok)
			ck_assert_msg(strstr(msg, "spec.containers[0].image: image \"") &&
					  strstr(msg, "is not from an allowed registry; allowed: "
						      "registry.example.com/team-a, "
						      "docker.io/library/"),
				      "%s", msg);
	}
	/* templates, init and ephemeral containers, image volumes */
	ck_assert_int_eq(
	    admit(p, "Deployment",
		  "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"template\":{\"spec\":{"
		  "\"initContainers\":[{\"name\":\"i\",\"image\":\"evil.io/x\"}],"
		  "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}],"
		  "\"volumes\":[{\"name\":\"v\",\"image\":{\"reference\":\"evil.io/y\"}}]}}}}",
		  msg, sizeof(msg)),
	    -EACCES);
	ck_assert_msg(
	    strstr(msg, "policy img: spec.initContainers[0].image: image \"evil.io/x\"") &&
		strstr(msg, "spec.volumes[0].image.reference: image \"evil.io/y\""),
	    "%s", msg);
	policy_free(p);
	/* entries without a registry are Docker Hub's, as images are; a port
	 * makes another host */
	p = parse("imageRegistries: [myorg/, registry.example.com]\n");
	static const struct {
		const char *image;
		bool ok;
	} hub[] = {
	    {"myorg/app:1", true}, /* docker.io/myorg/app */
	    {"docker.io/myorg/app", true},
	    {"myorg:5000/evil/x", false}, /* the host myorg:5000 */
	    {"myorg", false},             /* docker.io/library/myorg */
	    {"registry.example.com/x:1", true},
	    {"registry.example.com:5000/x", false},
	    {"registry.example.com.evil.io/x", false},
	};
	for (size_t i = 0; i < sizeof(hub) / sizeof(hub[0]); i++) {
		char obj[512];
		snprintf(obj, sizeof(obj), IMG_POD("%s"), hub[i].image);
		int rc = admit(p, "Pod", obj, msg, sizeof(msg));
		ck_assert_msg(hub[i].ok ? rc == 0 : rc == -EACCES, "%s: %d %s", hub[i].image, rc,
			      msg);
	}
	policy_free(p);
	/* no list: any registry */
	ck_assert_int_eq(admit(NULL, "Pod", IMG_POD("evil.io/x"), msg, sizeof(msg)), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("policies_images");
	TCase *tc = tcase_create("images");
	tcase_add_test(tc, floor_pulls_always);
	tcase_add_test(tc, updates_and_any);
	tcase_add_test(tc, registries);
	suite_add_tcase(s, tc);
	return s;
}
