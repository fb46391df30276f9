#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Syncer benchmark driver (python3 stdlib): creates N pods in a tenant with
C concurrent keep-alive clients while watching the host namespace, and prints
create -> host-pod-exists latency (p50, p99) and the sustained rate. Then the
reference, side by side: the same N creates made directly on the host stand-in
(namespace "direct"), create -> ADDED on the host's own watch: what the host
alone costs, the floor under the syncer's figure; and, with PLAIN_DIR, the
same N creates on a tenant without a host (namespace "default"), create ->
ADDED on its own watch: what the tenant's API alone does with this very
client, i.e. whether the client (not the syncer) is the limit.
Clients are processes (not threads) so that the watcher's timestamps do not
wait for the GIL; time.monotonic is CLOCK_MONOTONIC, shared by processes.
They are spawned, not forked: a fork while the watcher thread runs can copy
a lock it holds, and the child then hangs forever (seen once in ~20 runs).
With the servers' pids, also the CPU time (user+system) each spent per pod:
on a busy machine latency and rate depend on the neighbours, CPU per pod
does not.
  sync.py TENANT_DIR HOST_DIR N C [TENANT_PID HOST_PID [PLAIN_DIR PLAIN_PID]]"""
import http.client, json, multiprocessing as mp, os, re, ssl, subprocess, sys, threading, time
import urllib.parse


def conn(d):
    kc = open(f"{d}/kubeconfig").read()
    u = urllib.parse.urlparse(re.search(r'server:\s*"?([^\s"]+)', kc).group(1))
    ctx = ssl.create_default_context(cafile=f"{d}/ca.crt")
    ctx.load_cert_chain(f"{d}/admin.crt", f"{d}/admin.key")
    return http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=60)


def create(d, ns, ids, ready, start, out):
    k = conn(d)
    k.connect()
    created = {}
    ready.put(1)
    start.wait()
    for i in ids:
        body = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"b-{i}"},
                           "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        k.request("POST", f"/api/v1/namespaces/{ns}/pods", body,
                  {"Content-Type": "application/json"})
        r = k.getresponse()
        r.read()
        if r.status != 201:
            print(f"create b-{i}: HTTP {r.status}", file=sys.stderr)
        created[f"b-{i}"] = time.monotonic()
    out.put(created)


def cpu_ms(pid):
    """User + system CPU time of process pid, in ms (0 without a pid)."""
    if not pid:
        return 0.0
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def run(cdir, cns, hdir, hns, key, n, c, pids):
    """Creates n pods in cdir/cns; returns (latencies ms sorted, pods/s,
    CPU ms per pod of each pid)."""
    seen = {}
    h = conn(hdir)
    h.request("GET", f"/api/v1/namespaces/{hns}/pods?limit=1")
    rv = json.loads(h.getresponse().read())["metadata"]["resourceVersion"]
    done = threading.Event()

    def watch():
        w = conn(hdir)
        w.request("GET", f"/api/v1/namespaces/{hns}/pods?watch=1&resourceVersion={rv}")
        r = w.getresponse()
        while len(seen) < n:
            line = r.readline()
            if not line:
                break
            t = time.monotonic()
            if b'"ADDED"' not in line[:40]:
                continue
            md = json.loads(line)["object"]["metadata"]
            name = md.get("annotations", {}).get(key, "") if key else md["name"]
            seen.setdefault(name, t)
        done.set()

    wt = threading.Thread(target=watch, daemon=True)
    wt.start()
    ctx = mp.get_context("spawn")
    ready, start, out = ctx.Queue(), ctx.Event(), ctx.Queue()
    ps = [ctx.Process(target=create, args=(cdir, cns, range(j, n, c), ready, start, out))
          for j in range(c)]
    for p in ps:
        p.start()
    for _ in ps:
        ready.get(timeout=120)  # every client connected
    time.sleep(0.2)
    cpu0 = [cpu_ms(p) for p in pids]
    t0 = time.monotonic()
    start.set()
    created = {}
    for _ in ps:
        created.update(out.get(timeout=600))
    for p in ps:
        p.join()
    done.wait(120)
    time.sleep(0.3)  # the tenant's status write-back of the last pods
    cpu = [(cpu_ms(p) - c0) / n for p, c0 in zip(pids, cpu0)]
    t1 = max(seen.values()) if seen else time.monotonic()
    lat = sorted((seen[k] - created[k]) * 1000 for k in created if k in seen)
    return lat, (len(lat) / (t1 - t0) if lat else 0), cpu


def callgrind_dump(pid):
    """With SYNC_CALLGRIND=1 (bench/sync.sh PROFILE=callgrind), the server
    under callgrind dumps its counters right after its own phase, so that
    the other phases' idle time (and its timed resyncs) are not counted."""
    if os.environ.get("SYNC_CALLGRIND") == "1" and pid:
        subprocess.run(["callgrind_control", "-d", str(pid)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)


def main():
    tdir, hdir, n, c = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    pids = [int(x) for x in sys.argv[5:7]] or [0, 0]
    plain = sys.argv[7] if len(sys.argv) > 8 else None
    h = conn(hdir)
    h.request("POST", "/api/v1/namespaces", json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "direct"}}),
        {"Content-Type": "application/json"})
    h.getresponse().read()
    synced, rate, cpu = run(tdir, "default", hdir, "tenants", "kubicle.dev/name", n, c, pids)
    callgrind_dump(pids[0])
    ref, ref_rate, ref_cpu = run(hdir, "direct", hdir, "direct", None, n, c, pids)
    if plain:
        alone, alone_rate, alone_cpu = run(plain, "default", plain, "default", None, n, c,
                                           [int(sys.argv[8]), 0])
        callgrind_dump(int(sys.argv[8]))
    if not synced or not ref:
        print("no host pods seen")
        return 1
    p = lambda lat, q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"pods {n} synced {len(synced)} clients {c}")
    print(f"{'':34}{'p50':>10}{'p99':>10}{'max':>10}{'pods/s':>9}"
          f"{'tenant CPU':>12}{'host CPU':>10}")
    print(f"{'tenant create -> host pod exists':34}{p(synced, .5):8.2f}ms{p(synced, .99):8.2f}ms"
          f"{synced[-1]:8.2f}ms{rate:9.0f}{cpu[0]:7.3f}ms/pod{cpu[1]:6.3f}ms/pod")
    print(f"{'reference: host create -> ADDED':34}{p(ref, .5):8.2f}ms{p(ref, .99):8.2f}ms"
          f"{ref[-1]:8.2f}ms{ref_rate:9.0f}{'-':>12}{ref_cpu[1]:6.3f}ms/pod")
    if plain and alone:
        print(f"{'reference: tenant alone, -> ADDED':34}{p(alone, .5):8.2f}ms"
              f"{p(alone, .99):8.2f}ms{alone[-1]:8.2f}ms{alone_rate:9.0f}"
              f"{alone_cpu[0]:7.3f}ms/pod{'-':>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
