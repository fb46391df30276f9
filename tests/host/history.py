#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A synthetic host history for the GPU ledger's tests (tests/e2e/t_finops.sh):
plays the host's scheduler and kubelet on the host stand-in, one step per
call, with the timestamps the test chooses, writing only what a real host
writes and where it writes it:

  - the scheduler binds a pod (pods/binding, as kube-scheduler's
    DefaultBinder does; kube-apiserver's binding storage sets PodScheduled
    True) - here the condition's lastTransitionTime is then set to the
    chosen time through pods/status;
  - the kubelet reports it Running (containerStatuses running, startedAt),
    then terminal (phase Succeeded or Failed, every container terminated
    with finishedAt: the kubelet makes a pod terminal before it is removed,
    pkg/kubelet/status/status_manager.go);
  - a scheduler that cannot place it sets PodScheduled False, Unschedulable;
  - GPU nodes carry GPU feature discovery's labels (nvidia.com/gpu.product,
    .memory, .count, .replicas) and the device plugin's allocatable.

Usage (each prints what the test needs, as JSON):
  history.py --data-dir HOSTDIR setup
  history.py --data-dir HOSTDIR node NAME --product P --count N [--memory MIB]
             [--replicas R] [--alloc RES=N]...            -> {uid, created}
  history.py --data-dir HOSTDIR node-delete NAME          -> {deleted}
  history.py --data-dir HOSTDIR bind NS POD NODE --at T
  history.py --data-dir HOSTDIR finish NS POD --at T [--failed]
  history.py --data-dir HOSTDIR unschedulable NS POD
  history.py --data-dir HOSTDIR delete NS POD [--grace N]
  history.py --data-dir HOSTDIR wait NS POD               (until the pod exists)
  history.py --data-dir HOSTDIR bulk PLAN.json
      PLAN: [{"ns", "pod", "node", "at", "finish" (or null), "failed"}...]: each
      pod bound at "at" and, with "finish", terminal then (one process).
T is Unix seconds.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import scheduler  # noqa: E402  (its Api client and group CRDs; not modified)


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(t)))


def parse_time(s):
    import calendar
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


def die(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def get_pod(api, ns, pod):
    st, p = api.call("GET", f"/api/v1/namespaces/{ns}/pods/{pod}")
    if st != 200:
        die(f"no pod {ns}/{pod}: {st} {p}")
    return p


def put_status(api, p):
    md = p["metadata"]
    st, body = api.call("PUT", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}/status",
                        p)
    if st != 200:
        die(f"status of {md['name']}: {st} {body}")


def set_cond(status, typ, value, t, reason=None, msg=None):
    conds = [c for c in status.get("conditions", []) if c["type"] != typ]
    c = {"type": typ, "status": value, "lastProbeTime": None, "lastTransitionTime": rfc3339(t)}
    if reason:
        c["reason"] = reason
    if msg:
        c["message"] = msg
    conds.append(c)
    status["conditions"] = conds


def cmd_node(api, a):
    labels = {"kubernetes.io/hostname": a.name, "nvidia.com/gpu.product": a.product,
              "nvidia.com/gpu.count": str(a.count)}
    if a.memory:
        labels["nvidia.com/gpu.memory"] = str(a.memory)
    if a.replicas:
        labels["nvidia.com/gpu.replicas"] = str(a.replicas)
    alloc = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    for kv in a.alloc or []:
        k, v = kv.split("=", 1)
        alloc[k] = v
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": a.name, "labels": labels},
            "status": {"capacity": dict(alloc), "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True",
                                       "reason": "KubeletReady",
                                       "lastHeartbeatTime": rfc3339(time.time()),
                                       "lastTransitionTime": rfc3339(time.time())}]}}
    st, made = api.call("POST", "/api/v1/nodes", node)
    if st != 201:
        die(f"node {a.name}: {st} {made}")
    node["metadata"] = made["metadata"]
    st, body = api.call("PUT", f"/api/v1/nodes/{a.name}/status", node)
    if st != 200:
        die(f"node status {a.name}: {st} {body}")
    print(json.dumps({"uid": made["metadata"]["uid"],
                      "created": parse_time(made["metadata"]["creationTimestamp"])}))


def cmd_node_delete(api, a):
    """A node removed: with a finalizer held while the deletion is marked,
    so that its deletionTimestamp (the host's evidence) can be read."""
    path = f"/api/v1/nodes/{a.name}"
    api.call("PATCH", path, {"metadata": {"finalizers": ["kubicle.dev/test-hold"]}},
             "application/merge-patch+json")
    st, body = api.call("DELETE", path)
    if st not in (200, 202):
        die(f"delete node {a.name}: {st} {body}")
    st, n = api.call("GET", path)
    dt = n.get("metadata", {}).get("deletionTimestamp")
    if not dt:
        die(f"node {a.name} has no deletionTimestamp: {n}")
    api.call("PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    print(json.dumps({"deleted": parse_time(dt)}))


def cmd_bind(api, a):
    p = get_pod(api, a.ns, a.pod)
    md = p["metadata"]
    if not p["spec"].get("nodeName"):
        b = {"apiVersion": "v1", "kind": "Binding",
             "metadata": {"name": md["name"], "namespace": md["namespace"]},
             "target": {"apiVersion": "v1", "kind": "Node", "name": a.node}}
        st, body = api.call("POST", f"/api/v1/namespaces/{a.ns}/pods/{a.pod}/binding", b)
        if st != 201:
            die(f"bind {a.pod}: {st} {body}")
        p = get_pod(api, a.ns, a.pod)
    status = p.setdefault("status", {})
    set_cond(status, "PodScheduled", "True", a.at)
    set_cond(status, "Ready", "True", a.at)
    status["phase"] = "Running"
    status["startTime"] = rfc3339(a.at)
    status["containerStatuses"] = [
        {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": True,
         "started": True, "restartCount": 0, "state": {"running": {"startedAt": rfc3339(a.at)}}}
        for c in p["spec"].get("containers", [])]
    put_status(api, p)


def cmd_finish(api, a):
    p = get_pod(api, a.ns, a.pod)
    status = p.setdefault("status", {})
    code = 1 if a.failed else 0
    status["phase"] = "Failed" if a.failed else "Succeeded"
    set_cond(status, "Ready", "False", a.at, "PodCompleted")
    status["containerStatuses"] = [
        {"name": c["name"], "image": c.get("image", ""), "imageID": "", "ready": False,
         "started": False, "restartCount": 0,
         "state": {"terminated": {"exitCode": code, "reason": "Error" if code else "Completed",
                                  "startedAt": cs.get("state", {}).get("running", {}).get(
                                      "startedAt", rfc3339(a.at)),
                                  "finishedAt": rfc3339(a.at)}}}
        for c, cs in zip(p["spec"].get("containers", []),
                         status.get("containerStatuses", [{}] * 64))]
    put_status(api, p)


def cmd_unschedulable(api, a):
    p = get_pod(api, a.ns, a.pod)
    status = p.setdefault("status", {})
    set_cond(status, "PodScheduled", "False", time.time(), "Unschedulable",
             "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    put_status(api, p)


def cmd_delete(api, a):
    st, body = api.call("DELETE", f"/api/v1/namespaces/{a.ns}/pods/{a.pod}",
                        {"kind": "DeleteOptions", "apiVersion": "v1",
                         "gracePeriodSeconds": a.grace})
    if st not in (200, 202):
        die(f"delete {a.pod}: {st} {body}")
    dt = body.get("metadata", {}).get("deletionTimestamp")
    print(json.dumps({"deletionTimestamp": parse_time(dt) if dt else None}))


def cmd_wait(api, a):
    end = time.time() + 60
    while time.time() < end:
        st, _ = api.call("GET", f"/api/v1/namespaces/{a.ns}/pods/{a.pod}")
        if st == 200:
            return
        time.sleep(0.1)
    die(f"no host pod {a.ns}/{a.pod} after 60 s")


def cmd_bulk(api, a):
    plan = json.load(open(a.plan))
    for step in plan:
        ns, pod = step["ns"], step["pod"]
        cmd_wait(api, argparse.Namespace(ns=ns, pod=pod))
        cmd_bind(api, argparse.Namespace(ns=ns, pod=pod, node=step["node"], at=step["at"]))
        if step.get("finish"):
            cmd_finish(api, argparse.Namespace(ns=ns, pod=pod, at=step["finish"],
                                               failed=step.get("failed", False)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("setup")
    n = sub.add_parser("node")
    n.add_argument("name")
    n.add_argument("--product", required=True)
    n.add_argument("--count", type=int, required=True)
    n.add_argument("--memory", type=int)
    n.add_argument("--replicas", type=int)
    n.add_argument("--alloc", action="append")
    n = sub.add_parser("bulk")
    n.add_argument("plan")
    n = sub.add_parser("node-delete")
    n.add_argument("name")
    for name in ("bind", "finish", "unschedulable", "delete", "wait"):
        p = sub.add_parser(name)
        p.add_argument("ns")
        p.add_argument("pod")
        if name == "bind":
            p.add_argument("node")
        if name in ("bind", "finish"):
            p.add_argument("--at", type=int, required=True)
        if name == "finish":
            p.add_argument("--failed", action="store_true")
        if name == "delete":
            p.add_argument("--grace", type=int, default=0)
    a = ap.parse_args()
    api = scheduler.Api(a.data_dir)
    if a.cmd == "setup":
        scheduler.Scheduler(api, 0, 0).ensure_group_apis()
        return
    {"node": cmd_node, "node-delete": cmd_node_delete, "bind": cmd_bind, "finish": cmd_finish,
     "unschedulable": cmd_unschedulable, "delete": cmd_delete, "wait": cmd_wait,
     "bulk": cmd_bulk}[a.cmd](api, a)


if __name__ == "__main__":
    main()
