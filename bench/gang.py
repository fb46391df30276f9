#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Gang benchmark driver (python3 stdlib): creates N Jobs of 8 pods in a
tenant, one after another from C clients, while watching the host namespace,
and prints Job create -> all its host objects present (8 host pods, and the
KAI PodGroup for a gang) p50 and p99. Twice: N Indexed Jobs with completions
= parallelism = 8 (gangs: the syncer reads the owner, makes the PodGroup,
then the pods) and N NonIndexed Jobs of the same counts (ungrouped:
the same controller path, no group).
  gang.py TENANT_DIR HOST_DIR N C"""
import json, os, sys, threading, time
from multiprocessing.pool import ThreadPool

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "host"))
import scheduler  # the test scheduler's API client

tenant_dir, host_dir, n, c = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
seen = {}  # job name -> {"pods": set, "group": bool, "t": time when complete}
lock = threading.Lock()


def note(job, pod=None, group=False):
    with lock:
        e = seen.setdefault(job, {"pods": set(), "group": False, "t": None})
        if pod:
            e["pods"].add(pod)
        e["group"] = e["group"] or group
        gang = job.startswith("g-") and os.environ.get("GANG_BENCH_PROFILE", "kai") == "kai"
        if e["t"] is None and len(e["pods"]) == 8 and (e["group"] or not gang):
            e["t"] = time.monotonic()


def watch(path, is_group):
    api = scheduler.Api(host_dir)
    api.conn = None
    import http.client
    conn = http.client.HTTPSConnection(api.host, api.port, context=api.ctx, timeout=600)
    conn.request("GET", path + "?watch=1")
    r = conn.getresponse()
    for line in r:
        ev = json.loads(line)
        o = ev.get("object", {})
        md = o.get("metadata", {})
        if is_group:
            owner = md.get("annotations", {}).get("kubicle.dev/owner", "")
            note(owner.split("/", 1)[-1], group=True)
        else:
            job = md.get("labels", {}).get("job-name")
            if job:
                note(job, md["name"])


def job(name, indexed):
    spec = {"parallelism": 8, "completions": 8, "template": {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "w", "image": "busybox", "command": ["sleep", "3600"]}]}}}
    if indexed:
        spec["completionMode"] = "Indexed"
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def run(prefix, indexed):
    local = threading.local()
    created = {}

    def one(i):
        name = f"{prefix}-{i}"
        t = time.monotonic()
        if not hasattr(local, "api"):
            local.api = scheduler.Api(tenant_dir)
        st, _ = local.api.call("POST", "/apis/batch/v1/namespaces/default/jobs",
                                job(name, indexed))
        if st != 201:
            print(f"create {name}: HTTP {st}", file=sys.stderr)
        created[name] = t
    t0 = time.monotonic()
    with ThreadPool(c) as pool:
        pool.map(one, range(n))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        with lock:
            if all(seen.get(k, {}).get("t") for k in created):
                break
        time.sleep(0.1)
    lat = sorted((seen.get(k, {}).get("t") or float("inf")) - t for k, t in created.items())
    end = max(seen.get(k, {}).get("t") or float("inf") for k in created)
    ms = [x * 1000 for x in lat]
    print(f"{'gangs' if indexed else 'ungrouped'}: {n} Jobs x 8 pods: create -> all host objects "
          f"p50 {ms[len(ms) // 2]:.0f} ms, p99 {ms[min(len(ms) - 1, len(ms) * 99 // 100)]:.0f} ms; "
          f"all {n * 8} pods in {end - t0:.1f} s")


threading.Thread(target=watch, args=("/api/v1/namespaces/tenants/pods", False), daemon=True).start()
threading.Thread(target=watch, args=("/apis/scheduling.run.ai/v2alpha2/namespaces/tenants/podgroups",
                                     True), daemon=True).start()
time.sleep(0.5)
run("u", False)
run("g", True)
