/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host's PriorityClasses, read-only copies in the tenant (as vCluster's
 * fromHost priorityClasses). The tenant's Priority admission gives a pod
 * its class's value and refuses a class it does not know; a pod that names
 * the host scheduler's classes (KAI's train and inference) must therefore
 * find them in the tenant. The copies carry kubicle.dev/host-class="true";
 * the system- classes are the tenant's own (same names and values), and a
 * tenant class of the same name as a host one is replaced by the host's:
 * the host computes the priority of the host pod from its own class.
 *
 * A class only the tenant has cannot be named on the host (the host's
 * admission would refuse the pod): syncer_class_on_host() says which names
 * the host pod keeps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/json.h"
#include "lib/log.h"
#include "lib/util.h"
#include "syncer/syncer_impl.h"

#define CLASSES_KEY   "scheduling.k8s.io/priorityclasses"
#define LBL_HOSTCLASS "kubicle.dev/host-class"

struct host_classes {
	store_t *store;
	struct host_informer *inf;
};

static bool from_host(const json_t *pc)
{
	const char *v = json_string_value(json_object_get(
	    json_object_get(json_object_get(pc, "metadata"), "labels"), LBL_HOSTCLASS));
	return v && strcmp(v, "true") == 0;
}

bool syncer_class_on_host(store_t *st, const char *name)
{
	if (!name || !*name || kb_str_has_prefix(name, "system-"))
		return true;
	json_t *pc = NULL;
	bool host = store_get(st, CLASSES_KEY, "", name, &pc) == 0 && from_host(pc);
	json_decref(pc);
	return host;
}

/* What a tenant copy keeps of a host class. */
static const char *const class_fields[] = {"value", "globalDefault", "preemptionPolicy",
					   "description"};

json_t *syncer_tenant_class(const json_t *host)
{
	const char *name =
	    json_string_value(json_object_get(json_object_get(host, "metadata"), "name"));
	if (!name || kb_str_has_prefix(name, "system-"))
		return NULL;
	json_t *pc =
	    json_pack("{s:s,s:s,s:{s:s,s:{s:s}}}", "apiVersion", "scheduling.k8s.io/v1", "kind",
		      "PriorityClass", "metadata", "name", name, "labels", LBL_HOSTCLASS, "true");
	for (size_t i = 0; pc && i < KB_ARRAY_SIZE(class_fields); i++) {
		json_t *v = json_object_get(host, class_fields[i]);
		if (v)
			json_object_set(pc, class_fields[i], v);
	}
	return pc;
}

/* Writes the tenant copy of host class `host`, unless it is the same. */
static void put_class(struct host_classes *hc, const json_t *host)
{
	json_t *want = syncer_tenant_class(host), *old = NULL;
	if (!want)
		return;
	const char *name =
	    json_string_value(json_object_get(json_object_get(want, "metadata"), "name"));
	bool same = store_get(hc->store, CLASSES_KEY, "", name, &old) == 0 && from_host(old);
	for (size_t i = 0; same && i < KB_ARRAY_SIZE(class_fields); i++)
		same = kb_json_same(json_object_get(old, class_fields[i]),
				    json_object_get(want, class_fields[i]));
	int rc = same ? 0 : syncer_store_put(hc->store, CLASSES_KEY, "", name, want, old);
	if (rc < 0)
		kb_warn("syncer", "priority class %s from the host: %s", name, strerror(-rc));
	json_decref(old);
	json_decref(want);
}

static void drop_class(struct host_classes *hc, const char *name)
{
	json_t *old = NULL;
	if (name && store_get(hc->store, CLASSES_KEY, "", name, &old) == 0 && from_host(old))
		store_delete(hc->store, CLASSES_KEY, "", name, 0, NULL, NULL);
	json_decref(old);
}

static void on_class(const char *type, json_t *obj, void *arg)
{
	struct host_classes *hc = arg;
	if (strcmp(type, "DELETED") == 0)
		drop_class(hc, json_string_value(
				   json_object_get(json_object_get(obj, "metadata"), "name")));
	else
		put_class(hc, obj);
}

/* After a (re)list: the listed classes are copied (a list brings no
 * events: classes the host had before the tenant started, KAI's among
 * them, came only here), and copies gone from the host go. */
static void on_classes_synced(json_t *items, void *arg)
{
	struct host_classes *hc = arg;
	json_t *names = json_object();
	size_t i;
	json_t *it;
	json_array_foreach (items, i, it) {
		const char *n =
		    json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
		if (n)
			json_object_set_new(names, n, json_true());
		put_class(hc, it);
	}
	struct store_list_req req = {.res = CLASSES_KEY};
	struct store_list_result out = {0};
	if (store_list(hc->store, &req, &out) == 0) {
		json_array_foreach (out.items, i, it) {
			const char *n = json_string_value(
			    json_object_get(json_object_get(it, "metadata"), "name"));
			if (n && from_host(it) && !json_object_get(names, n))
				store_delete(hc->store, CLASSES_KEY, "", n, 0, NULL, NULL);
		}
		json_decref(out.items);
		free(out.next);
	}
	json_decref(names);
}

int syncer_classes_start(uv_loop_t *loop, kb_httpc_t *http, store_t *store,
			 struct host_classes **out)
{
	struct host_classes *hc = calloc(1, sizeof(*hc));
	if (!hc)
		return -ENOMEM;
	hc->store = store;
	struct host_informer_opts o = {.path = "/apis/scheduling.k8s.io/v1/priorityclasses",
				       .no_cache = true,
				       .on_event = on_class,
				       .on_synced = on_classes_synced,
				       .arg = hc};
	int rc = host_informer_start(loop, http, &o, &hc->inf);
	if (rc < 0) {
		free(hc);
		return rc;
	}
	*out = hc;
	return 0;
}

void syncer_classes_stop(struct host_classes *hc)
{
	if (!hc)
		return;
	host_informer_stop(hc->inf);
	free(hc);
}
