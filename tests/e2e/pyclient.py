#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Drives a tenant with the official Python client (Debian's python3-kubernetes)
and prints one line per step, for tests/e2e/t_clients.sh to check.

  pyclient.py KUBECONFIG NAMESPACE
"""
import json
import sys
import threading
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
from kubernetes.dynamic import DynamicClient


def out(*a):
    print(*a, flush=True)


def reason(e):
    try:
        return json.loads(e.body).get("reason", "")
    except (ValueError, TypeError):
        return "?"


kcfg, ns = sys.argv[1], sys.argv[2]
api = config.new_client_from_config(config_file=kcfg)
core = client.CoreV1Api(api)
apps = client.AppsV1Api(api)
out("version", client.VersionApi(api).get_code().git_version)
core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
meta = client.V1ObjectMeta(name="a", labels={"app": "x"})
cm = core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=meta, data={"k": "v"}))
out("created", cm.metadata.name, cm.metadata.uid is not None)
try:
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="a")))
except ApiException as e:
    out("duplicate", e.status, reason(e))
for n in ("c1", "c2", "c3"):
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name=n)))
lst = core.list_namespaced_config_map(ns, label_selector="app=x")
out("labelSelector", [i.metadata.name for i in lst.items])
out("fieldSelector", [i.metadata.name for i in
                      core.list_namespaced_config_map(ns, field_selector="metadata.name=c2").items])
names, cont = [], None
while True:
    page = core.list_namespaced_config_map(ns, limit=2, _continue=cont)
    names.append(len(page.items))
    cont = page.metadata._continue
    if not cont:
        break
out("pages", names)
p = core.patch_namespaced_config_map("a", ns, {"data": {"k2": "v2"}})
out("patch", json.dumps(p.data, sort_keys=True))
rv = core.read_namespaced_config_map("a", ns).metadata.resource_version
events = []


def watcher():
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv, timeout_seconds=10):
        events.append(ev["type"] + ":" + ev["object"].metadata.name)
        if len(events) >= 3:
            w.stop()


t = threading.Thread(target=watcher)
t.start()
time.sleep(0.5)
core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="b")))
core.patch_namespaced_config_map("b", ns, {"metadata": {"labels": {"seen": "yes"}}})
core.delete_namespaced_config_map("b", ns)
t.join()
out("watch", events)
dyn = DynamicClient(api)
res = dyn.resources.get(api_version="v1", kind="ConfigMap")
out("dynamic", res.name, res.namespaced, sorted(i.metadata.name for i in res.get(namespace=ns).items))
dep = dyn.resources.get(api_version="apps/v1", kind="Deployment")
out("dynamic-deployments", dep.name, dep.namespaced, "scale" in dep.subresources)
apps.create_namespaced_deployment(ns, {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
out("scale", apps.read_namespaced_deployment_scale("web", ns).spec.replicas)
apps.patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}})
out("scaled", apps.read_namespaced_deployment("web", ns).spec.replicas)
try:
    core.read_namespaced_config_map("nope", ns)
except ApiException as e:
    out("missing", e.status, reason(e))
try:
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Bad_Name")))
except ApiException as e:
    out("invalid", e.status, reason(e))
stale = core.read_namespaced_config_map("a", ns)
core.patch_namespaced_config_map("a", ns, {"data": {"k3": "v3"}})
stale.data["k"] = "changed"
try:
    core.replace_namespaced_config_map("a", ns, stale)
except ApiException as e:
    out("stale", e.status, reason(e))
apps.delete_namespaced_deployment("web", ns, body=client.V1DeleteOptions(propagation_policy="Foreground"))
gone = False
for _ in range(100):
    try:
        apps.read_namespaced_deployment("web", ns)
    except ApiException as e:
        gone = e.status == 404
        break
    time.sleep(0.1)
out("foreground-delete", gone)
