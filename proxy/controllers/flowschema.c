/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A FlowSchema's Dangling condition, as kube-apiserver's API Priority and
 * Fairness configuration controller keeps it: True (reason NotFound) while
 * the PriorityLevelConfiguration it names does not exist, False (reason
 * Found) when it does, with kube's messages; lastTransitionTime moves only
 * when the status does. Keys: "fsstatus" with the FlowSchema's name (ns "");
 * a priority level that comes or goes queues every FlowSchema.
 *
 * Threading: loop thread.
 */
#include <stdio.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/log.h"
#include "store/store.h"

#define MANAGER "api-priority-and-fairness-config-consumer-v1"
#define FS_RES  "flowcontrol.apiserver.k8s.io/flowschemas"
#define PL_RES  "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations"

/* The status with the Dangling condition wanted (new reference). */
static json_t *status_with(const json_t *fs, bool dangling, const char *pl)
{
	json_t *st = json_deep_copy(json_object_get(fs, "status"));
	if (!json_is_object(st)) {
		json_decref(st);
		st = json_object();
	}
	char msg[600];
	snprintf(msg, sizeof(msg),
		 dangling ? "This FlowSchema references the PriorityLevelConfiguration object "
			    "named \"%s\" but there is no such object"
			  : "This FlowSchema references the PriorityLevelConfiguration object "
			    "named \"%s\" and it exists",
		 pl);
	ctrl_set_condition(st, "Dangling", dangling ? "True" : "False",
			   dangling ? "NotFound" : "Found", msg, false);
	return st;
}

int ctrl_fsstatus_sync(struct ctrl *c, const char *ns, const char *name)
{
	(void)ns;
	json_t *fs = ctrl_get(c, FS_RES, "", name);
	if (!fs)
		return 0;
	const char *pl = json_string_value(ctrl_path(fs, "spec.priorityLevelConfiguration.name"));
	json_t *level = pl ? ctrl_get(c, PL_RES, "", pl) : NULL;
	json_t *st = status_with(fs, !level, pl ? pl : "");
	int rc = ctrl_write_status(c, "flowcontrol.apiserver.k8s.io", "v1", "flowschemas", fs, st,
				   MANAGER);
	if (rc < 0)
		kb_warn("ctrl", "flowschema %s: status not written (%d)", name, rc);
	json_decref(st);
	json_decref(level);
	json_decref(fs);
	return rc;
}

void ctrl_fsstatus_event(struct ctrl *c, const struct store_event *ev)
{
	if (strcmp(ev->res, FS_RES) == 0) {
		if (ev->type != STORE_DELETED)
			ctrl_enqueue(c, "fsstatus", "", ev->name);
	} else if (strcmp(ev->res, PL_RES) == 0 && ev->type != STORE_MODIFIED) {
		json_t *all = ctrl_list(c, FS_RES, NULL);
		size_t i;
		json_t *fs;
		json_array_foreach (all, i, fs)
			ctrl_enqueue(c, "fsstatus", "", ctrl_name(fs));
		json_decref(all);
	}
}
