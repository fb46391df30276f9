#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A test scheduler for the host stand-in: behaves like KAI Scheduler,
Volcano or Kueue (one --profile each) and kubelet for what Kubicle's syncer
relies on, as their sources show (gang.py: the rules and where each comes
from). Python 3 standard library only: it is test tooling, polls a small API
server, and reads best as a script.

  scheduler.py --data-dir HOSTDIR [--profile kai|volcano|kueue] [--nodes 2]
               [--gpus 8] [--interval 0.2] [--metrics]

Each pass:
  - fake GPU nodes gpu-node-<i> exist (nvidia.com/gpu capacity, Ready);
  - the group and queue APIs of the three schedulers exist (reduced CRDs,
    gang.py), as their charts install them on a real host;
  - the profile's scheduler places pods: only through groups (KAI and Volcano
    PodGroups, Kueue pod groups), all of a group's minimum or none, within
    its queue's GPU quota (KAI Queue spec.resources.gpu.limit when >= 0,
    else .quota; Volcano Queue spec.capability; Kueue ClusterQueue
    nominalQuota), counting nvidia.com/gpu as kube counts a pod's effective
    request (sidecars, init steps, overhead); a placed pod is bound
    (pods/binding) and marked Running (Ready condition, podIP, hostIP,
    containerStatuses); the others stay Pending, with the scheduler's
    Unschedulable event and PodScheduled condition where the real one
    writes them (gang.py);
  - a running pod whose command or args contain "sleep N" finishes after N
    seconds: Succeeded, or Failed when they also contain "exit M" (M != 0);
  - logs: each running pod gets a few lines in its annotation kubicle.dev/log,
    which the stand-in serves as pods/log;
  - pods being deleted (deletionTimestamp) are removed, as a kubelet would
    after stopping the containers;
  - with --metrics, a stand-in for metrics-server: the two CustomResource-
    Definitions of group metrics.k8s.io/v1beta1 (PodMetrics `pods`,
    NodeMetrics `nodes`) are installed, so the stand-in serves that API's
    paths, and each running pod gets a PodMetrics of its name (its labels;
    per container cpu and memory usage equal to the container's requests, or
    1m and 8Mi without), each node a NodeMetrics (the sum of its pods' usage
    plus 250m and 1Gi); they go when the pod stops. A real host runs
    metrics-server, which measures. As metrics-server scrapes, the figures
    are written again (a new timestamp) every 15 s, the window they cover.
    --usage FILE (read at each pass) drives the usage up and down: a JSON
    object of "label=value" -> {"cpu": ..., "memory": ...}; each container
    of a pod with that label uses that much: a quantity ("300m", "64Mi"),
    or a percentage of its request ("150%").
"""
import argparse
import http.client
import json
import re
import ssl
import sys
import time
import urllib.parse

import gang

GPU = "nvidia.com/gpu"


class Api:
    def __init__(self, data_dir):
        kc = open(f"{data_dir}/kubeconfig").read()
        url = urllib.parse.urlparse(re.search(r"server:\s*\"?([^\s\"]+)", kc).group(1))
        self.host, self.port = url.hostname, url.port
        self.ctx = ssl.create_default_context(cafile=f"{data_dir}/ca.crt")
        self.ctx.load_cert_chain(f"{data_dir}/admin.crt", f"{data_dir}/admin.key")
        self.conn = None

    def call(self, method, path, body=None, ctype="application/json"):
        for attempt in range(2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPSConnection(self.host, self.port,
                                                            context=self.ctx, timeout=10)
                data = json.dumps(body) if body is not None else None
                hdrs = {"Content-Type": ctype, "Accept": "application/json"}
                self.conn.request(method, path, body=data, headers=hdrs)
                r = self.conn.getresponse()
                raw = r.read()
                return r.status, (json.loads(raw) if raw else {})
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt:
                    raise
        return 0, {}


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def ctr_gpus(c):
    res = c.get("resources", {})
    return int(res.get("requests", {}).get(GPU, res.get("limits", {}).get(GPU, 0)))


def gpus_of(pod):
    """A pod's nvidia.com/gpu as kube computes its effective request
    (k8s.io/component-helpers resource/helpers.go PodRequests), which the
    kubelet's device manager allocates: app containers and sidecars (init
    containers with restartPolicy Always) summed, each init step (an init
    container beside the sidecars started before it) if larger, plus the
    pod's overhead. Real KAI (pod_info.go getPodResourceRequest) leaves the
    sidecars out; the tenant's policy counts them, and so does this
    stand-in, so that it shows what the host's devices really give."""
    spec = pod["spec"]
    total = sum(ctr_gpus(c) for c in spec.get("containers", []))
    sidecars, init = 0, 0
    for c in spec.get("initContainers", []):
        n = ctr_gpus(c)
        if c.get("restartPolicy") == "Always":
            total += n
            sidecars += n
            init = max(init, sidecars)
        else:
            init = max(init, n + sidecars)
    return max(total, init) + int(spec.get("overhead", {}).get(GPU, 0))


def quota_of(q):
    gpu = q.get("spec", {}).get("resources", {}).get("gpu", {})
    lim = gpu.get("limit", -1)
    quota = gpu.get("quota", -1)
    v = lim if lim is not None and lim >= 0 else quota
    return None if v is None or v < 0 else v


def cpu_milli(q):
    q = str(q)
    return int(float(q[:-1])) if q.endswith("m") else int(float(q) * 1000)


MEM_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def mem_bytes(q):
    q = str(q)
    for u, f in MEM_UNITS.items():
        if q.endswith(u):
            return int(float(q[:-len(u)]) * f)
    return int(float(q))


def metrics_crd(plural, kind, scope, body):
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.metrics.k8s.io", "annotations": {
                # kube wants this for a *.k8s.io group
                "api-approved.kubernetes.io": "unapproved, the host stand-in's metrics-server"}},
            "spec": {"group": "metrics.k8s.io", "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": kind + "List"},
                     "versions": [{"name": "v1beta1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object", "properties": dict(
                                           timestamp={"type": "string"},
                                           window={"type": "string"}, **body)}}}]}}


USAGE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
METRICS_CRDS = [
    metrics_crd("pods", "PodMetrics", "Namespaced", {"containers": {
        "type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "usage": USAGE}}}}),
    metrics_crd("nodes", "NodeMetrics", "Cluster", {"usage": USAGE}),
]
METRICS = "/apis/metrics.k8s.io/v1beta1"


class Scheduler:
    def __init__(self, api, nodes, gpus, metrics=False, usage=None, profile="kai"):
        self.api = api
        self.profile = gang.PROFILES[profile](self)
        self.profile_name = profile
        self.usage_file = usage
        self.usage = {}     # "label=value" -> {"cpu": ..., "memory": ...}
        self.nodes = [f"gpu-node-{i + 1}" for i in range(nodes)]
        self.gpus = gpus
        self.started = {}   # pod uid -> monotonic start
        self.warned = {}    # pod uid -> last message
        self.metrics = metrics
        self.written = {}   # metrics path -> the object written there
        self.written_at = {}  # metrics path -> monotonic time of the write

    def ensure_metrics_api(self):
        for crd in METRICS_CRDS:
            self.api.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)

    def read_usage(self):
        if not self.usage_file:
            return
        try:
            with open(self.usage_file) as f:
                self.usage = json.load(f)
        except (OSError, ValueError):
            self.usage = {}

    def usage_of(self, labels, resource, request):
        """The --usage file's figure for a container of a pod with labels,
        else its request."""
        for sel, figures in self.usage.items():
            k, _, v = sel.partition("=")
            if labels.get(k) == v and resource in figures:
                want = str(figures[resource])
                if want.endswith("%"):
                    return "%d%s" % (int(float(want[:-1]) * (cpu_milli(request) if
                                     resource == "cpu" else mem_bytes(request)) / 100),
                                     "m" if resource == "cpu" else "")
                return want
        return request

    def pod_metrics(self, p):
        md = p["metadata"]
        labels = md.get("labels", {})
        cs = []
        for c in p["spec"].get("containers", []):
            req = c.get("resources", {}).get("requests", {})
            cpu = self.usage_of(labels, "cpu", req.get("cpu", "1m"))
            mem = self.usage_of(labels, "memory", req.get("memory", "8Mi"))
            cs.append({"name": c["name"], "usage": {
                "cpu": "%dm" % cpu_milli(cpu),
                "memory": "%dKi" % (mem_bytes(mem) // 1024)}})
        return {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
                "metadata": {"name": md["name"], "namespace": md["namespace"],
                             "labels": md.get("labels", {})},
                "timestamp": now(), "window": "15s", "containers": cs}

    def node_metrics(self, name, pods):
        cpu, mem = 250, 2**30
        for pm in pods:
            for c in pm["containers"]:
                cpu += cpu_milli(c["usage"]["cpu"])
                mem += mem_bytes(c["usage"]["memory"])
        return {"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics",
                "metadata": {"name": name}, "timestamp": now(), "window": "15s",
                "usage": {"cpu": "%dm" % cpu, "memory": "%dKi" % (mem // 1024)}}

    def write_metrics(self, pods):
        self.read_usage()
        want, per_node = {}, {n: [] for n in self.nodes}
        for p in pods:
            md = p["metadata"]
            if p.get("status", {}).get("phase") != "Running" or md.get("deletionTimestamp"):
                continue
            pm = self.pod_metrics(p)
            want[f"{METRICS}/namespaces/{md['namespace']}/pods/{md['name']}"] = pm
            per_node.setdefault(p["spec"].get("nodeName"), []).append(pm)
        for n in self.nodes:
            want[f"{METRICS}/nodes/{n}"] = self.node_metrics(n, per_node[n])
        for path in [k for k in self.written if k not in want]:
            self.api.call("DELETE", path)
            del self.written[path]
            self.written_at.pop(path, None)
        for path, obj in want.items():
            old = self.written.get(path)
            if old is not None and old.get("containers") == obj.get("containers") and \
                    old.get("usage") == obj.get("usage") and \
                    old["metadata"].get("labels") == obj["metadata"].get("labels") and \
                    time.monotonic() - self.written_at.get(path, 0) < 15:
                continue
            coll = path.rsplit("/", 1)[0]
            st, _ = self.api.call("POST", coll, obj)
            if st == 409:
                self.api.call("DELETE", path)
                st, _ = self.api.call("POST", coll, obj)
            if st == 201:
                self.written[path] = obj
                self.written_at[path] = time.monotonic()

    def ensure_nodes(self):
        for i, name in enumerate(self.nodes):
            node = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": {
                        "kubernetes.io/hostname": name,
                        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                        "nvidia.com/gpu.count": str(self.gpus)}},
                    "status": {"capacity": {GPU: str(self.gpus), "cpu": "64",
                                            "memory": "512Gi", "pods": "110"},
                               "allocatable": {GPU: str(self.gpus), "cpu": "63",
                                               "memory": "500Gi", "pods": "110"},
                               "conditions": [{"type": "Ready", "status": "True",
                                               "reason": "KubeletReady",
                                               "message": "kubelet is posting ready status",
                                               "lastHeartbeatTime": now(),
                                               "lastTransitionTime": now()}],
                               "addresses": [{"type": "InternalIP",
                                              "address": f"10.0.0.{i + 10}"}],
                               "nodeInfo": {"kubeletVersion": "v1.33.0",
                                            "architecture": "amd64",
                                            "operatingSystem": "linux"}}}
            st, _ = self.api.call("POST", "/api/v1/nodes", node)
            if st == 201:
                self.api.call("PUT", f"/api/v1/nodes/{name}/status", node)

    def event(self, pod, reason, msg, typ="Warning"):
        md = pod["metadata"]
        ev = {"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": f"{md['name']}.{int(time.time() * 1e6):x}",
                           "namespace": md["namespace"]},
              "involvedObject": {"kind": "Pod", "apiVersion": "v1", "name": md["name"],
                                 "namespace": md["namespace"], "uid": md["uid"]},
              "reason": reason, "message": msg, "type": typ, "count": 1,
              "firstTimestamp": now(), "lastTimestamp": now(),
              "source": {"component": "kai-scheduler"},
              "reportingComponent": "kai-scheduler"}
        self.api.call("POST", f"/api/v1/namespaces/{md['namespace']}/events", ev)

    def set_status(self, pod, phase, ready, node_ip, exit_code=None):
        md = pod["metadata"]
        t = now()
        cs = []
        for c in pod["spec"].get("containers", []):
            if exit_code is None:
                state = {"running": {"startedAt": t}}
            else:
                state = {"terminated": {"exitCode": exit_code, "startedAt": t, "finishedAt": t,
                                        "reason": "Completed" if exit_code == 0 else "Error"}}
            cs.append({"name": c["name"], "image": c.get("image", ""),
                       "imageID": "docker.io/" + c.get("image", ""),
                       "containerID": "containerd://" + md["uid"].replace("-", ""),
                       "ready": ready, "started": exit_code is None, "restartCount": 0,
                       "state": state})
        status = dict(pod.get("status", {}))
        conds = [c for c in status.get("conditions", []) if c["type"] == "PodScheduled"]
        for typ in ("Initialized", "ContainersReady", "Ready"):
            ok = "True" if (ready or typ == "Initialized") else "False"
            conds.append({"type": typ, "status": ok, "lastProbeTime": None,
                          "lastTransitionTime": t})
        ip = "10.244.%d.%d" % (abs(hash(md["uid"])) % 200, abs(hash(md["name"])) % 250 + 2)
        status.update({"phase": phase, "conditions": conds, "hostIP": node_ip,
                       "hostIPs": [{"ip": node_ip}], "podIP": ip, "podIPs": [{"ip": ip}],
                       "startTime": status.get("startTime", t), "containerStatuses": cs})
        pod["status"] = status
        self.api.call("PUT", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}/status",
                      pod)

    def log(self, pod, lines):
        md = pod["metadata"]
        patch = {"metadata": {"annotations": {"kubicle.dev/log": "".join(
            f"{l}\n" for l in lines)}}}
        self.api.call("PATCH", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}",
                      patch, "application/merge-patch+json")

    def bind(self, pod, node):
        md = pod["metadata"]
        b = {"apiVersion": "v1", "kind": "Binding",
             "metadata": {"name": md["name"], "namespace": md["namespace"]},
             "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        st, _ = self.api.call("POST",
                              f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}/binding", b)
        return st == 201

    def run_pod(self, pod, node):
        pod["spec"]["nodeName"] = node
        node_ip = "10.0.0.%d" % (self.nodes.index(node) + 10)
        self.set_status(pod, "Running", True, node_ip)
        name = pod["metadata"]["name"]
        self.log(pod, [f"{now()} starting {name} on {node}",
                       f"{now()} CUDA devices: {gpus_of(pod)}",
                       f"{now()} training step 1/3", f"{now()} training step 2/3",
                       f"{now()} training step 3/3"])
        self.started[pod["metadata"]["uid"]] = time.monotonic()

    def maybe_finish(self, pod):
        words = " ".join(sum([c.get("command", []) + c.get("args", [])
                              for c in pod["spec"].get("containers", [])], []))
        m = re.search(r"sleep (\d+)", words)
        start = self.started.get(pod["metadata"]["uid"])
        if not m or start is None or time.monotonic() - start < int(m.group(1)):
            return
        e = re.search(r"exit (\d+)", words)
        code = int(e.group(1)) if e else 0
        node = pod["spec"]["nodeName"]
        self.set_status(pod, "Succeeded" if code == 0 else "Failed", False,
                        "10.0.0.%d" % (self.nodes.index(node) + 10)
                        if node in self.nodes else "10.0.0.1", code)

    quota_of = staticmethod(quota_of)

    def ensure_group_apis(self):
        for crd in gang.CRDS:
            self.api.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        if self.profile_name == "kueue":
            self.api.call("POST", "/apis/admissionregistration.k8s.io/v1/"
                          "validatingadmissionpolicies", gang.KUEUE_WEBHOOK[0])
            self.api.call("POST", "/apis/admissionregistration.k8s.io/v1/"
                          "validatingadmissionpolicybindings", gang.KUEUE_WEBHOOK[1])

    def event_on(self, obj, reason, msg, typ, component):
        ev = {"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": f"{obj['name']}.{int(time.time() * 1e6):x}",
                           "namespace": obj["namespace"]},
              "involvedObject": obj, "reason": reason, "message": msg, "type": typ,
              "count": 1, "firstTimestamp": now(), "lastTimestamp": now(),
              "source": {"component": component}, "reportingComponent": component}
        self.api.call("POST", f"/api/v1/namespaces/{obj['namespace']}/events", ev)

    def unschedulable(self, p, msg, component, cond_reason="Unschedulable",
                      ev_reason="Unschedulable", condition=True):
        """A pending pod's reason: a Warning event (ev_reason None: none) and
        PodScheduled False (condition False: none), written once per
        message."""
        md = p["metadata"]
        if self.warned.get(md["uid"]) == msg:
            return
        self.warned[md["uid"]] = msg
        if ev_reason:
            self.event_on({"kind": "Pod", "apiVersion": "v1", "name": md["name"],
                           "namespace": md["namespace"], "uid": md["uid"]},
                          ev_reason, msg, "Warning", component)
        if not condition:
            return
        status = dict(p.get("status", {}))
        status["phase"] = status.get("phase", "Pending")
        status["conditions"] = [c for c in status.get("conditions", [])
                                if c["type"] != "PodScheduled"] + [
            {"type": "PodScheduled", "status": "False", "reason": cond_reason,
             "message": msg, "lastProbeTime": None, "lastTransitionTime": now()}]
        p["status"] = status
        self.api.call("PUT", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}/status",
                      p)

    def once(self):
        if not getattr(self, "_nodes_done", False):
            self.ensure_nodes()
            self.ensure_group_apis()
            if self.metrics:
                self.ensure_metrics_api()
        self._nodes_done = True
        queues = self.profile.queues()
        st, pl = self.api.call("GET", "/api/v1/pods")
        if st != 200:
            return
        pods = pl.get("items", [])
        used, node_used = {}, {n: 0 for n in self.nodes}
        for p in pods:
            node = p["spec"].get("nodeName")
            if node and p.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                q = self.profile.queue_of_pod(p)
                used[q] = used.get(q, 0) + gpus_of(p)
                if node in node_used:
                    node_used[node] += gpus_of(p)
        live = []
        for p in pods:
            md, spec = p["metadata"], p["spec"]
            if md.get("deletionTimestamp"):
                self.api.call("DELETE", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}",
                              {"kind": "DeleteOptions", "apiVersion": "v1",
                               "gracePeriodSeconds": 0})
                continue
            live.append(p)
            if spec.get("nodeName"):
                if p.get("status", {}).get("phase") == "Running":
                    if md["uid"] not in self.started:
                        self.started[md["uid"]] = time.monotonic()
                    self.maybe_finish(p)
                elif p.get("status", {}).get("phase") in (None, "Pending"):
                    self.run_pod(p, spec["nodeName"])
        self.profile.group_pods(live)
        for g in self.profile.groups(live):
            self.schedule_group(g, queues, used, node_used)
        if self.metrics:
            st, pl = self.api.call("GET", "/api/v1/pods")
            if st == 200:
                self.write_metrics(pl.get("items", []))

    def schedule_group(self, g, queues, used, node_used):
        """All of g's missing minimum at once, or none (gang.py); then the
        members beyond it one by one."""
        chosen, pending, running = gang.must_place(g, self.profile.subgroup_of)
        if not pending:
            return
        if len(running) + len(pending) < g.min or \
                any(sum(1 for p in running + pending if self.profile.subgroup_of(p) == n) < m
                    for n, m in g.subgroups):
            self.profile.not_ready(g, len(running) + len(pending))
            return
        if chosen:
            why = self.fit(g, chosen, queues, used, node_used)
            if why:
                self.profile.pending(g, pending, *why)
                return
            self.profile.admitted(g)
        for p in [p for p in pending if p not in chosen]:
            if self.fit(g, [p], queues, used, node_used):
                break

    def fit(self, g, pods, queues, used, node_used):
        """Binds every pod of `pods` (queue quota and nodes), or none and
        returns why: (reason, message)."""
        q = g.queue
        need = sum(gpus_of(p) for p in pods)
        if q not in queues:
            return "Unschedulable", f"Queue '{q}' does not exist"
        if queues[q] is not None and used.get(q, 0) + need > queues[q]:
            return self.profile.over_quota(g, q, used.get(q, 0), need, queues[q], len(pods))
        nodes = gang.place(self.nodes, self.gpus, node_used, pods, gpus_of)
        if nodes is None:
            return "Unschedulable", (
                f"0/{len(self.nodes)} nodes are available for the pod group {g.key}: "
                f"insufficient {GPU} for {len(pods)} pods together")
        for p, node in zip(pods, nodes):
            if self.bind(p, node):
                used[q] = used.get(q, 0) + gpus_of(p)
                node_used[node] += gpus_of(p)
                self.warned.pop(p["metadata"]["uid"], None)
                self.event(p, "Scheduled", f"Successfully assigned "
                           f"{p['metadata']['namespace']}/{p['metadata']['name']} to {node}",
                           "Normal")
                self.run_pod(p, node)
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", required=True, help="the host stand-in's data dir")
    ap.add_argument("--profile", choices=sorted(gang.PROFILES), default="kai",
                    help="which scheduler to behave as (gang.py)")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--metrics", action="store_true",
                    help="stand in for metrics-server (PodMetrics, NodeMetrics)")
    ap.add_argument("--usage", help="a JSON file of usage figures by pod label (--metrics)")
    a = ap.parse_args()
    s = Scheduler(Api(a.data_dir), a.nodes, a.gpus, a.metrics, a.usage, a.profile)
    while True:
        try:
            s.once()
        except (OSError, http.client.HTTPException, ValueError) as e:
            print(f"scheduler: {e}", file=sys.stderr)
            time.sleep(1)
        time.sleep(a.interval)


if __name__ == "__main__":
    main()
