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
#include <string.h>

#include "controllers/controllers_impl.h"
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
	json_t *conds = json_object_get(st, "conditions"), *cond = NULL, *c;
	size_t i;
	if (!json_is_array(conds)) {
		conds = json_array();
		json_object_set_new(st, "conditions", conds);
	}
	json_array_foreach (conds, i, c)
		if (json_is_string(json_object_get(c, "type")) &&
		    strcmp(json_string_value(json_object_get(c, "type")), "Dangling") == 0)
			cond = c;
	if (!cond) {
		cond = json_pack("{s:s}", "type", "Dangling");
		json_array_append_new(conds, cond);
	}
	const char *want = dangling ? "True" : "False";
	const char *have = json_string_value(json_object_get(cond, "status"));
	char msg[600], now[40];
	snprintf(msg, sizeof(msg),
		 dangling ? "This FlowSchema references the PriorityLevelConfiguration object "
			    "named \"%s\" but there is no such object"
			  : "This FlowSchema references the PriorityLevelConfiguration object "
			    "named \"%s\" and it exists",
		 pl);
	if (!have || strcmp(have, want) != 0) {
		ctrl_now_str(now, sizeof(now));
		json_object_set_new(cond, "lastTransitionTime", json_string(now));
	}
	json_object_set_new(cond, "status", json_string(want));
	json_object_set_new(cond, "reason", json_string(dangling ? "NotFound" : "Found"));
	json_object_set_new(cond, "message", json_string(msg));
	return st;
}

int fsstatus_sync(struct ctrl *c, const char *ns, const char *name)
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

void fsstatus_event(struct ctrl *c, const struct store_event *ev)
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
