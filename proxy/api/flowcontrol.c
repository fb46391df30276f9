/* SPDX-License-Identifier: Apache-2.0 */
/*
 * API Priority and Fairness objects (flowcontrol.apiserver.k8s.io/v1
 * FlowSchema and PriorityLevelConfiguration), stored as kube-apiserver
 * stores them so that manifests carrying them (Kueue's visibility server,
 * Karpenter, ...) apply and `kubectl get flowschemas` answers: kube's
 * defaults (SetDefaults_*), validation with its field paths and messages
 * (pkg/apis/flowcontrol/validation), and the two mandatory pairs kube's
 * configuration ensurer keeps, `exempt` and `catch-all`, whose specs are
 * fixed. A tenant's server has one client population and no request
 * queueing, so nothing here throttles requests; the objects are kept for
 * the tools that read and write them, and a controller
 * (proxy/controllers/flowschema.c) sets a FlowSchema's Dangling condition.
 *
 * The objects' defaults and fixed specs are proxy/model/flowcontrol.c, their
 * validation proxy/validation/validate_flowcontrol.c; here, the mandatory
 * pairs made at start.
 *
 * Threading: flowcontrol_bootstrap
 * (loop thread).
 */
#include <errno.h>

#include "lib/util.h"
#include "proxy/model/flowcontrol.h"
#include "proxy/api/api.h"

int flowcontrol_bootstrap(struct proxy *px)
{
	static const char *const names[] = {"exempt", "catch-all"};
	const struct proxy_resource *rs[] = {
	    resource_find("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"),
	    resource_find("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"),
	};
	for (size_t k = 0; k < KB_ARRAY_SIZE(rs); k++) {
		for (size_t i = 0; rs[k] && i < KB_ARRAY_SIZE(names); i++) {
			if (ns_bootstrap_stored(px, rs[k], NULL, names[i]))
				continue; /* made once: created when missing */
			json_t *spec = flowcontrol_is_fs(rs[k]) ? flowcontrol_fixed_fs(names[i])
								: flowcontrol_fixed_pl(names[i]);
			json_t *o =
			    json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:o}", "apiVersion", FC_API, "kind",
				      rs[k]->kind, "metadata", "name", names[i], "annotations",
				      "apf.kubernetes.io/autoupdate-spec", "true", "spec", spec);
			int rc = handle_bootstrap_create(px, rs[k], o, NULL);
			json_decref(o);
			if (rc < 0 && rc != -EEXIST)
				return rc;
		}
	}
	return 0;
}
