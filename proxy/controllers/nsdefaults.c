/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every active namespace holds, kept as kube-controller-manager's
 * serviceaccount-controller and root-ca-cert-publisher keep it: the
 * `default` ServiceAccount, and the `kube-root-ca.crt` ConfigMap with the
 * tenant's CA under "ca.crt" and kube's description annotation. The server
 * makes both when it creates a namespace (proxy/api/namespace.c, so that they
 * exist when `kubectl create ns` returns); this controller makes them again
 * when they are deleted, and puts the ConfigMap's data back when it is
 * changed (its whole data is replaced, as kube's publisher does).
 * Keys: "nsdefaults" with the namespace in ns (name unused). A namespace
 * that is not Active (Terminating) is left alone: its content is going.
 *
 * Threading: loop thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/controllers/controllers_impl.h"
#include "lib/json.h"
#include "lib/log.h"
#include "proxy/client.h"
#include "store/store.h"

#define SA_MANAGER "service-account-controller"
#define CA_MANAGER "root-ca-cert-publisher"
#define CA_CM      "kube-root-ca.crt"

static bool ns_active(struct ctrl *c, const char *ns)
{
	json_t *o = ctrl_get(c, "/namespaces", "", ns);
	const char *phase = json_string_value(ctrl_path(o, "status.phase"));
	bool active = o && !ctrl_path(o, "metadata.deletionTimestamp") &&
		      (!phase || strcmp(phase, "Active") == 0);
	json_decref(o);
	return active;
}

static int ensure_sa(struct ctrl *c, const char *ns)
{
	json_t *have = ctrl_get(c, "/serviceaccounts", ns, "default");
	if (have) {
		json_decref(have);
		return 0;
	}
	json_t *sa = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind",
			       "ServiceAccount", "metadata", "name", "default", "namespace", ns);
	int rc = proxy_object_create(c->px, "", "v1", "serviceaccounts", sa, SA_MANAGER, NULL);
	json_decref(sa);
	return rc == -EEXIST || rc == -EINPROGRESS ? 0 : rc;
}

/* kube's publisher: nothing to do when the data is exactly {ca.crt} and the
 * description is there. */
static bool cm_current(const json_t *cm, const char *ca)
{
	const json_t *data = json_object_get(cm, "data");
	const char *have = json_string_value(json_object_get(data, "ca.crt"));
	const char *desc = json_string_value(
	    json_object_get(ctrl_path(cm, "metadata.annotations"), "kubernetes.io/description"));
	return json_object_size(data) == 1 && have && strcmp(have, ca) == 0 && desc && *desc &&
	       !json_object_get(cm, "binaryData");
}

static int ensure_ca(struct ctrl *c, const char *ns)
{
	char *ca = NULL;
	if (store_kv_get(c->st, "ca.crt", &ca) < 0)
		return 0; /* no CA (never in a served tenant) */
	json_t *cm = ctrl_get(c, "/configmaps", ns, CA_CM), *want = proxy_root_ca_configmap(ns, ca);
	int rc = 0;
	if (!cm) {
		rc = proxy_object_create(c->px, "", "v1", "configmaps", want, CA_MANAGER, NULL);
		if (rc == -EEXIST)
			rc = 0;
	} else if (!cm_current(cm, ca)) { /* kube's publisher: the whole data replaced */
		json_t *upd = json_deep_copy(cm);
		json_t *ann = kb_json_object_at(json_object_get(upd, "metadata"), "annotations");
		json_object_update(
		    ann, json_object_get(json_object_get(want, "metadata"), "annotations"));
		json_object_set(upd, "data", json_object_get(want, "data"));
		json_object_del(upd, "binaryData");
		rc = proxy_object_update(c->px, "", "v1", "configmaps", upd, CA_MANAGER, NULL);
		json_decref(upd);
	}
	json_decref(want);
	json_decref(cm);
	free(ca);
	return rc == -EINPROGRESS ? 0 : rc;
}

int ctrl_nsdefaults_sync(struct ctrl *c, const char *ns, const char *name)
{
	(void)name;
	if (!ns || !*ns || !ns_active(c, ns))
		return 0;
	int rc = ensure_sa(c, ns);
	if (rc < 0)
		kb_warn("ctrl", "namespace %s: default ServiceAccount not made (%d)", ns, rc);
	int rc2 = ensure_ca(c, ns);
	if (rc2 < 0)
		kb_warn("ctrl", "namespace %s: %s not published (%d)", ns, CA_CM, rc2);
	return rc < 0 ? rc : rc2;
}

void ctrl_nsdefaults_event(struct ctrl *c, const struct store_event *ev)
{
	if (strcmp(ev->res, "/namespaces") == 0) {
		if (ev->type != STORE_DELETED)
			ctrl_enqueue(c, "nsdefaults", ev->name, "");
	} else if (strcmp(ev->res, "/configmaps") == 0) {
		if (ev->type != STORE_ADDED && strcmp(ev->name, CA_CM) == 0)
			ctrl_enqueue(c, "nsdefaults", ev->ns, "");
	} else if (strcmp(ev->res, "/serviceaccounts") == 0) {
		if (ev->type == STORE_DELETED && strcmp(ev->name, "default") == 0)
			ctrl_enqueue(c, "nsdefaults", ev->ns, "");
	}
}
