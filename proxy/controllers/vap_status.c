/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ValidatingAdmissionPolicy status controller, as kube-controller-
 * manager's validatingadmissionpolicy-status-controller: on every change of
 * a policy, its status gets observedGeneration and typeChecking (the
 * expressions type-checked against the kinds the policy matches:
 * proxy/validation/vap_typecheck.c), written through the status subresource by its
 * field manager. Keys: "vapstatus" with the policy's name (ns "").
 *
 * Threading: loop thread.
 */
#include <jansson.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"
#include "proxy/validation/vap_typecheck.h"

#define MANAGER "validatingadmissionpolicy-status-controller"

int ctrl_vap_status_sync(struct ctrl *c, const char *ns, const char *name)
{
	(void)ns;
	json_t *policy = ctrl_get(c, VAP_RES, "", name);
	if (!policy)
		return 0; /* deleted */
	json_t *status = vap_type_check(policy);
	int rc = ctrl_write_status(c, "admissionregistration.k8s.io", "v1",
				   "validatingadmissionpolicies", policy, status, MANAGER);
	if (rc < 0)
		kb_warn("ctrl", "validatingadmissionpolicy %s: status not written (%d)", name, rc);
	json_decref(status);
	json_decref(policy);
	return rc;
}
