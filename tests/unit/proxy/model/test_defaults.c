/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for proxy/model/defaults.c: a pod's defaults written out whole, so
 * that a change in how they are reached (each volume's keys read once, the
 * string defaults made only where missing) cannot move a byte: the pod's
 * containers and every volume source with a default (kube's SetDefaults_Pod,
 * _Container, _Volume and the sources' own), a source that is not an
 * object, a volume with none (an emptyDir), a PersistentVolume's shared
 * sources, a pod template's spec, and a pod's tolerations and probes.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "proxy/model/object.h"
#include "proxy/model/resource.h"

static Suite *suite(void);
#include "tests/unit/check_main.h"

static const struct proxy_resource pod_res = {
    .group = "",
    .version = "v1",
    .kind = "Pod",
    .plural = "pods",
};
static const struct proxy_resource pv_res = {
    .group = "",
    .version = "v1",
    .kind = "PersistentVolume",
    .plural = "persistentvolumes",
};

/* obj's compact text after the defaults of res (a new string). */
static char *defaulted(const struct proxy_resource *res, const char *obj)
{
	json_error_t e;
	json_t *o = json_loads(obj, 0, &e);
	ck_assert_msg(o != NULL, "bad test json: %s", e.text);
	obj_defaults(res, o);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static void expect(const struct proxy_resource *res, const char *obj, const char *want)
{
	char *got = defaulted(res, obj);
	ck_assert_str_eq(got, want);
	free(got);
}

/* What each was defaulted to before the volumes were read once (main, eba2c65). */
#define POD_WANT                                                                                \
	"{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"" \
	"x:1\",\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}],\"env\":[{\"name\":\"E"  \
	"\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\",\"apiVersion\":\"v1\"" \
	"}}}],\"livenessProbe\":{\"httpGet\":{\"port\":8080,\"path\":\"/\",\"scheme\":\"HTTP\"" \
	"},\"timeoutSeconds\":1,\"periodSeconds\":10,\"successThreshold\":1,\"failureThreshol"  \
	"d\":3},\"imagePullPolicy\":\"IfNotPresent\",\"terminationMessagePath\":\"/dev/termin"  \
	"ation-log\",\"terminationMessagePolicy\":\"File\",\"resources\":{}}],\"initContainer"  \
	"s\":[{\"name\":\"i\",\"image\":\"x\",\"terminationMessagePolicy\":\"FallbackToLogsOn"  \
	"Error\",\"imagePullPolicy\":\"Always\",\"terminationMessagePath\":\"/dev/termination"  \
	"-log\",\"resources\":{}}],\"volumes\":[{\"name\":\"a\",\"secret\":{\"secretName\":\""  \
	"s\",\"defaultMode\":420}},{\"name\":\"b\",\"configMap\":{\"name\":\"c\",\"defaultMod"  \
	"e\":420}},{\"name\":\"c\",\"downwardAPI\":{\"items\":[{\"path\":\"p\",\"fieldRef\":{"  \
	"\"fieldPath\":\"metadata.name\",\"apiVersion\":\"v1\"}}],\"defaultMode\":420}},{\"na"  \
	"me\":\"d\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"path\":\"t\",\"ex"  \
	"pirationSeconds\":3600}},{\"downwardAPI\":{\"items\":[{\"path\":\"q\",\"fieldRef\":{"  \
	"\"fieldPath\":\"metadata.uid\",\"apiVersion\":\"v1\"}}]}}],\"defaultMode\":420}},{\""  \
	"name\":\"e\",\"hostPath\":{\"path\":\"/x\",\"type\":\"\"}},{\"name\":\"f\",\"image\""  \
	":{\"reference\":\"r:1\",\"pullPolicy\":\"IfNotPresent\"}},{\"name\":\"g\",\"image\":"  \
	"{\"reference\":\"r\",\"pullPolicy\":\"Always\"}},{\"name\":\"h\",\"ephemeral\":{\"vo"  \
	"lumeClaimTemplate\":{\"spec\":{\"volumeMode\":\"Filesystem\"}}}},{\"name\":\"i\",\"i"  \
	"scsi\":{\"targetPortal\":\"t\",\"iqn\":\"q\",\"lun\":0,\"iscsiInterface\":\"default\"" \
	"}},{\"name\":\"j\",\"rbd\":{\"monitors\":[\"m\"],\"image\":\"i\",\"pool\":\"rbd\",\""  \
	"user\":\"admin\",\"keyring\":\"/etc/ceph/keyring\"}},{\"name\":\"k\",\"azureDisk\":{"  \
	"\"diskName\":\"d\",\"diskURI\":\"u\",\"cachingMode\":\"ReadWrite\",\"fsType\":\"ext4"  \
	"\",\"readOnly\":false,\"kind\":\"Shared\"}},{\"name\":\"l\",\"scaleIO\":{\"gateway\""  \
	":\"g\",\"system\":\"s\",\"secretRef\":{},\"storageMode\":\"ThinProvisioned\",\"fsTyp"  \
	"e\":\"xfs\"}},{\"name\":\"m\",\"emptyDir\":{}},{\"name\":\"n\",\"secret\":null,\"emp"  \
	"tyDir\":{}},{\"name\":\"o\",\"hostPath\":\"x\"},{\"name\":\"p\",\"emptyDir\":{}},\"q"  \
	"\"],\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"  \
	"\"ClusterFirst\",\"securityContext\":{},\"schedulerName\":\"default-scheduler\",\"en"  \
	"ableServiceLinks\":true,\"serviceAccountName\":\"default\",\"serviceAccount\":\"defa"  \
	"ult\",\"tolerations\":[{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":\"Exis"  \
	"ts\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300},{\"key\":\"node.kubernetes."  \
	"io/unreachable\",\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSecond"  \
	"s\":300}]},\"status\":{\"phase\":\"Pending\",\"qosClass\":\"BestEffort\"}}"
#define TEMPLATE_WANT                                                                           \
	"{\"metadata\":{\"name\":\"t\"},\"template\":{\"spec\":{\"containers\":[{\"name\":\"c"  \
	"\",\"image\":\"x\",\"imagePullPolicy\":\"Always\",\"terminationMessagePath\":\"/dev/"  \
	"termination-log\",\"terminationMessagePolicy\":\"File\",\"resources\":{}}],\"volumes"  \
	"\":[{\"name\":\"a\",\"secret\":{\"secretName\":\"s\",\"defaultMode\":420}},{\"name\""  \
	":\"b\",\"configMap\":{\"name\":\"c\",\"defaultMode\":420}},{\"name\":\"c\",\"downwar"  \
	"dAPI\":{\"items\":[{\"path\":\"p\",\"fieldRef\":{\"fieldPath\":\"metadata.name\",\"a"  \
	"piVersion\":\"v1\"}}],\"defaultMode\":420}},{\"name\":\"d\",\"projected\":{\"sources"  \
	"\":[{\"serviceAccountToken\":{\"path\":\"t\",\"expirationSeconds\":3600}},{\"downwar"  \
	"dAPI\":{\"items\":[{\"path\":\"q\",\"fieldRef\":{\"fieldPath\":\"metadata.uid\",\"ap"  \
	"iVersion\":\"v1\"}}]}}],\"defaultMode\":420}},{\"name\":\"e\",\"hostPath\":{\"path\""  \
	":\"/x\",\"type\":\"\"}},{\"name\":\"f\",\"image\":{\"reference\":\"r:1\",\"pullPolic"  \
	"y\":\"IfNotPresent\"}},{\"name\":\"g\",\"image\":{\"reference\":\"r\",\"pullPolicy\""  \
	":\"Always\"}},{\"name\":\"h\",\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{\"vo"  \
	"lumeMode\":\"Filesystem\"}}}},{\"name\":\"i\",\"iscsi\":{\"targetPortal\":\"t\",\"iq"  \
	"n\":\"q\",\"lun\":0,\"iscsiInterface\":\"default\"}},{\"name\":\"j\",\"rbd\":{\"moni"  \
	"tors\":[\"m\"],\"image\":\"i\",\"pool\":\"rbd\",\"user\":\"admin\",\"keyring\":\"/et"  \
	"c/ceph/keyring\"}},{\"name\":\"k\",\"azureDisk\":{\"diskName\":\"d\",\"diskURI\":\"u"  \
	"\",\"cachingMode\":\"ReadWrite\",\"fsType\":\"ext4\",\"readOnly\":false,\"kind\":\"S"  \
	"hared\"}},{\"name\":\"l\",\"scaleIO\":{\"gateway\":\"g\",\"system\":\"s\",\"secretRe"  \
	"f\":{},\"storageMode\":\"ThinProvisioned\",\"fsType\":\"xfs\"}},{\"name\":\"m\",\"em"  \
	"ptyDir\":{}},{\"name\":\"n\",\"secret\":null,\"emptyDir\":{}},{\"name\":\"o\",\"host"  \
	"Path\":\"x\"},{\"name\":\"p\",\"emptyDir\":{}},\"q\"],\"restartPolicy\":\"Always\",\"" \
	"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterFirst\",\"securityContext\"" \
	":{},\"schedulerName\":\"default-scheduler\",\"enableServiceLinks\":true,\"serviceAcc"  \
	"ountName\":\"default\",\"serviceAccount\":\"default\"}}}"
#define PV_WANT                                                                                \
	"{\"metadata\":{\"name\":\"v\"},\"spec\":{\"azureDisk\":{\"diskName\":\"d\",\"caching" \
	"Mode\":\"ReadWrite\",\"fsType\":\"ext4\",\"readOnly\":false,\"kind\":\"Shared\"},\"r" \
	"bd\":{\"image\":\"i\",\"pool\":\"rbd\",\"user\":\"admin\",\"keyring\":\"/etc/ceph/ke" \
	"yring\"},\"iscsi\":{\"iqn\":\"q\",\"iscsiInterface\":\"default\"},\"scaleIO\":{\"sys" \
	"tem\":\"s\",\"storageMode\":\"ThinProvisioned\",\"fsType\":\"xfs\"},\"persistentVolu" \
	"meReclaimPolicy\":\"Retain\",\"volumeMode\":\"Filesystem\"},\"status\":{\"phase\":\"" \
	"Pending\"}}"

#define TOL_POD                                                                                    \
	"{\"metadata\":{\"name\":\"t\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"      \
	"\"x\","                                                                                   \
	"\"readinessProbe\":{\"exec\":{\"command\":[\"true\"]},\"periodSeconds\":5},"              \
	"\"startupProbe\":{\"tcpSocket\":{\"port\":1},\"failureThreshold\":30}}],\"tolerations\":" \
	"[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\"},\"x\",{\"key\":5}," \
	"{\"operator\":\"Exists\"}]}}"
#define TOL_WANT                                                                                \
	"{\"metadata\":{\"name\":\"t\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"" \
	"x\",\"readinessProbe\":{\"exec\":{\"command\":[\"true\"]},\"periodSeconds\":5,\"time"  \
	"outSeconds\":1,\"successThreshold\":1,\"failureThreshold\":3},\"startupProbe\":{\"tc"  \
	"pSocket\":{\"port\":1},\"failureThreshold\":30,\"timeoutSeconds\":1,\"periodSeconds\"" \
	":10,\"successThreshold\":1},\"imagePullPolicy\":\"Always\",\"terminationMessagePath\"" \
	":\"/dev/termination-log\",\"terminationMessagePolicy\":\"File\",\"resources\":{}}],\"" \
	"tolerations\":[{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\"},"  \
	"\"x\",{\"key\":5},{\"operator\":\"Exists\"},{\"key\":\"node.kubernetes.io/not-ready\"" \
	",\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":300}],\"rest"  \
	"artPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":\"ClusterF"  \
	"irst\",\"securityContext\":{},\"schedulerName\":\"default-scheduler\",\"enableServic"  \
	"eLinks\":true,\"serviceAccountName\":\"default\",\"serviceAccount\":\"default\"},\"s"  \
	"tatus\":{\"phase\":\"Pending\",\"qosClass\":\"BestEffort\"}}"

#define VOLUMES                                                                                   \
	"[{\"name\":\"a\",\"secret\":{\"secretName\":\"s\"}},"                                    \
	"{\"name\":\"b\",\"configMap\":{\"name\":\"c\",\"defaultMode\":420}},"                    \
	"{\"name\":\"c\",\"downwardAPI\":{\"items\":[{\"path\":\"p\",\"fieldRef\":"               \
	"{\"fieldPath\":\"metadata.name\"}}]}},"                                                  \
	"{\"name\":\"d\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"path\":\"t\"}}," \
	"{\"downwardAPI\":{\"items\":[{\"path\":\"q\",\"fieldRef\":{\"fieldPath\":\"metadata."    \
	"uid\"}}]}}]}},"                                                                          \
	"{\"name\":\"e\",\"hostPath\":{\"path\":\"/x\"}},"                                        \
	"{\"name\":\"f\",\"image\":{\"reference\":\"r:1\"}},"                                     \
	"{\"name\":\"g\",\"image\":{\"reference\":\"r\"}},"                                       \
	"{\"name\":\"h\",\"ephemeral\":{\"volumeClaimTemplate\":{\"spec\":{}}}},"                 \
	"{\"name\":\"i\",\"iscsi\":{\"targetPortal\":\"t\",\"iqn\":\"q\",\"lun\":0}},"            \
	"{\"name\":\"j\",\"rbd\":{\"monitors\":[\"m\"],\"image\":\"i\"}},"                        \
	"{\"name\":\"k\",\"azureDisk\":{\"diskName\":\"d\",\"diskURI\":\"u\"}},"                  \
	"{\"name\":\"l\",\"scaleIO\":{\"gateway\":\"g\",\"system\":\"s\",\"secretRef\":{}}},"     \
	"{\"name\":\"m\"},{\"name\":\"n\",\"secret\":null},{\"name\":\"o\",\"hostPath\":\"x\"},"  \
	"{\"name\":\"p\",\"emptyDir\":{}},\"q\"]"

START_TEST(pod_volumes_and_containers)
{
	expect(&pod_res,
	       "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
	       "\"x:1\","
	       "\"ports\":[{\"containerPort\":80}],\"env\":[{\"name\":\"E\",\"valueFrom\":{"
	       "\"fieldRef\":"
	       "{\"fieldPath\":\"metadata.name\"}}}],\"livenessProbe\":{\"httpGet\":{\"port\":8080}"
	       "}}],"
	       "\"initContainers\":[{\"name\":\"i\",\"image\":\"x\",\"terminationMessagePolicy\":"
	       "\"FallbackToLogsOnError\"}],\"volumes\":" VOLUMES "}}",
	       POD_WANT);
}
END_TEST

START_TEST(pod_template_volumes)
{
	expect(
	    &(struct proxy_resource){
		.group = "", .version = "v1", .kind = "PodTemplate", .plural = "podtemplates"},
	    "{\"metadata\":{\"name\":\"t\"},\"template\":{\"spec\":{\"containers\":[{\"name\":"
	    "\"c\","
	    "\"image\":\"x\"}],\"volumes\":" VOLUMES "}}}",
	    TEMPLATE_WANT);
}
END_TEST

START_TEST(persistent_volume_sources)
{
	expect(
	    &pv_res,
	    "{\"metadata\":{\"name\":\"v\"},\"spec\":{\"azureDisk\":{\"diskName\":\"d\"},"
	    "\"rbd\":{\"image\":\"i\"},\"iscsi\":{\"iqn\":\"q\"},\"scaleIO\":{\"system\":\"s\"}}}",
	    PV_WANT);
}
END_TEST

START_TEST(pod_tolerations_and_probes)
{
	expect(&pod_res, TOL_POD, TOL_WANT);
}
END_TEST

/* A pod that sets every key the defaults read in one pass over a spec or a
 * container (restartPolicy ... enableServiceLinks, a pull policy and a
 * termination message, null resources and tolerations, a host network with
 * init containers' ports, serviceAccount alone, every probe and hook) and
 * keys that only start like theirs; then serviceAccountName
 * beside serviceAccount and one toleration already there. Wanted: what
 * main (fad25b5) wrote, key by key looked up. */
#define SET_WANT                                                                            \
	"{\"metadata\":{\"name\":\"s\"},\"spec\":{\"restartPolicy\":\"OnFailure\",\"termi"  \
	"nationGracePeriodSeconds\":5,\"dnsPolicy\":\"Default\",\"securityContext\":{\"ru"  \
	"nAsUser\":1},\"schedulerName\":\"x\",\"enableServiceLinks\":false,\"serviceAccou"  \
	"nt\":\"sa1\",\"hostNetwork\":true,\"tolerations\":[{\"key\":\"node.kubernetes.io"  \
	"/not-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSecond"  \
	"s\":300},{\"key\":\"node.kubernetes.io/unreachable\",\"operator\":\"Exists\",\"e"  \
	"ffect\":\"NoExecute\",\"tolerationSeconds\":300}],\"containers\":[{\"name\":\"c\"" \
	",\"image\":\"x@sha256:1\",\"imagePullPolicy\":\"Never\",\"imageX\":\"a\",\"termi"  \
	"nationMessagePat\":1,\"terminationMessagePath\":\"/t\",\"terminationMessagePolic"  \
	"y\":\"File\",\"resources\":null,\"ports\":[{\"containerPort\":81,\"hostPort\":81"  \
	",\"protocol\":\"TCP\"},{\"containerPort\":82,\"protocol\":\"UDP\",\"hostPort\":8"  \
	"2}],\"startupProbe\":{\"httpGet\":{\"port\":1,\"path\":\"/s\",\"scheme\":\"HTTP\"" \
	"},\"periodSeconds\":2,\"timeoutSeconds\":1,\"successThreshold\":1,\"failureThres"  \
	"hold\":3},\"readinessProbe\":{\"exec\":{},\"timeoutSeconds\":1,\"periodSeconds\""  \
	":10,\"successThreshold\":1,\"failureThreshold\":3},\"lifecycle\":{\"postStart\":"  \
	"{\"httpGet\":{\"port\":2,\"path\":\"/\",\"scheme\":\"HTTP\"}},\"preStop\":{\"exe"  \
	"c\":{}}},\"env\":[{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"x"  \
	"\",\"apiVersion\":\"v2\"}}},{\"name\":\"B\"}]}],\"initContainers\":[{\"name\":\""  \
	"i\",\"image\":\"y\",\"ports\":[{\"containerPort\":9,\"protocol\":\"TCP\",\"hostP"  \
	"ort\":9}],\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"1500m\"},\"reque"  \
	"sts\":{\"cpu\":\"2\",\"memory\":\"1500m\"}},\"imagePullPolicy\":\"Always\",\"ter"  \
	"minationMessagePath\":\"/dev/termination-log\",\"terminationMessagePolicy\":\"Fi"  \
	"le\"}],\"ephemeralContainers\":[{\"name\":\"e\",\"image\":\"z:latest\",\"resourc"  \
	"es\":{},\"imagePullPolicy\":\"Always\",\"terminationMessagePath\":\"/dev/termina"  \
	"tion-log\",\"terminationMessagePolicy\":\"File\"}],\"containersX\":[{\"name\":\""  \
	"q\"}],\"serviceAccountName\":\"sa1\"},\"status\":{\"phase\":\"Pending\",\"qosCla"  \
	"ss\":\"BestEffort\"}}"
#define SET_WANT2                                                                           \
	"{\"metadata\":{\"name\":\"t\"},\"spec\":{\"serviceAccountName\":\"n1\",\"service"  \
	"Account\":\"n1\",\"hostNetwork\":false,\"containers\":[{\"name\":\"c\",\"image\""  \
	":\"x\",\"ports\":[{\"containerPort\":81,\"protocol\":\"TCP\"}],\"imagePullPolicy"  \
	"\":\"Always\",\"terminationMessagePath\":\"/dev/termination-log\",\"terminationM"  \
	"essagePolicy\":\"File\",\"resources\":{}}],\"tolerations\":[{\"key\":\"node.kube"  \
	"rnetes.io/unreachable\",\"operator\":\"Exists\"},{\"key\":\"node.kubernetes.io/n"  \
	"ot-ready\",\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\"" \
	":300}],\"restartPolicy\":\"Always\",\"terminationGracePeriodSeconds\":30,\"dnsPo"  \
	"licy\":\"ClusterFirst\",\"securityContext\":{},\"schedulerName\":\"default-sched"  \
	"uler\",\"enableServiceLinks\":true},\"status\":{\"phase\":\"Pending\",\"qosClass"  \
	"\":\"BestEffort\"}}"
static const char *const SET_POD =
    "{\"metadata\":{\"name\":\"s\"},\"spec\":{\"restartPolicy\":\"OnFailure\",\"termi"
    "nationGracePeriodSeconds\":5,\"dnsPolicy\":\"Default\",\"securityContext\":{\"ru"
    "nAsUser\":1},\"schedulerName\":\"x\",\"enableServiceLinks\":false,\"serviceAccou"
    "nt\":\"sa1\",\"hostNetwork\":true,\"tolerations\":null,\"containers\":[{\"name\""
    ":\"c\",\"image\":\"x@sha256:1\",\"imagePullPolicy\":\"Never\",\"imageX\":\"a\","
    "\"terminationMessagePat\":1,\"terminationMessa"
    "gePath\":\"/t\",\"terminationMessagePolicy\":\"File\",\"resources\":null,\"ports"
    "\":[{\"containerPort\":81,\"hostPort\":0},{\"containerPort\":82,\"protocol\":\"U"
    "DP\"}],\"startupProbe\":{\"httpGet\":{\"port\":1,\"path\":\"/s\"},\"periodSecond"
    "s\":2},\"readinessProbe\":{\"exec\":{}},\"lifecycle\":{\"postStart\":{\"httpGet\""
    ":{\"port\":2}},\"preStop\":{\"exec\":{}}},\"env\":[{\"name\":\"A\",\"valueFrom\""
    ":{\"fieldRef\":{\"fieldPath\":\"x\",\"apiVersion\":\"v2\"}}},{\"name\":\"B\"}]}]"
    ",\"initContainers\":[{\"name\":\"i\",\"image\":\"y\",\"ports\":[{\"containerPort"
    "\":9}],\"resources\":{\"limits\":{\"cpu\":2,\"memory\":1.5}}}],\"ephemeralContai"
    "ners\":[{\"name\":\"e\",\"image\":\"z:latest\",\"resources\":{}}],\"containersX\""
    ":[{\"name\":\"q\"}]}}";
static const char *const SET_POD2 =
    "{\"metadata\":{\"name\":\"t\"},\"spec\":{\"serviceAccountName\":\"n1\",\"service"
    "Account\":\"n2\",\"hostNetwork\":false,\"containers\":[{\"name\":\"c\",\"image\""
    ":\"x\",\"ports\":[{\"containerPort\":81}]}],\"tolerations\":[{\"key\":\"node.kub"
    "ernetes.io/unreachable\",\"operator\":\"Exists\"}]}}";

START_TEST(pod_keys_already_set)
{
	expect(&pod_res, SET_POD, SET_WANT);
	expect(&pod_res, SET_POD2, SET_WANT2);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("defaults");
	TCase *tc = tcase_create("pod");
	tcase_add_test(tc, pod_volumes_and_containers);
	tcase_add_test(tc, pod_template_volumes);
	tcase_add_test(tc, persistent_volume_sources);
	tcase_add_test(tc, pod_tolerations_and_probes);
	tcase_add_test(tc, pod_keys_already_set);
	suite_add_tcase(s, tc);
	return s;
}
