#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Syncer benchmark driver (python3 stdlib): creates N pods in a tenant with
C concurrent keep-alive clients while watching the host namespace, and prints
create -> host-pod-exists latency (p50, p99) and the sustained rate.
  sync.py TENANT_DIR HOST_DIR N C"""
import http.client, json, re, ssl, sys, threading, time, urllib.parse


def conn(d):
    kc = open(f"{d}/kubeconfig").read()
    u = urllib.parse.urlparse(re.search(r'server:\s*"?([^\s"]+)', kc).group(1))
    ctx = ssl.create_default_context(cafile=f"{d}/ca.crt")
    ctx.load_cert_chain(f"{d}/admin.crt", f"{d}/admin.key")
    return lambda: http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=60)


def main():
    tdir, hdir, n, c = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    tconn, hconn = conn(tdir), conn(hdir)
    created, seen = {}, {}
    done = threading.Event()
    h = hconn()
    h.request("GET", "/api/v1/namespaces/tenants/pods?limit=1")
    rv = json.loads(h.getresponse().read())["metadata"]["resourceVersion"]

    def watch():
        w = hconn()
        w.request("GET", f"/api/v1/namespaces/tenants/pods?watch=1&resourceVersion={rv}")
        r = w.getresponse()
        while len(seen) < n:
            line = r.readline()
            if not line:
                break
            ev = json.loads(line)
            if ev["type"] == "ADDED":
                name = ev["object"]["metadata"]["annotations"].get("kubicle.dev/name", "")
                seen.setdefault(name, time.monotonic())
        done.set()

    def create(ids):
        k = tconn()
        for i in ids:
            body = json.dumps({"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": f"b-{i}"},
                               "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
            k.request("POST", "/api/v1/namespaces/default/pods", body,
                      {"Content-Type": "application/json"})
            r = k.getresponse()
            r.read()
            created[f"b-{i}"] = time.monotonic()

    wt = threading.Thread(target=watch, daemon=True)
    wt.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    ts = [threading.Thread(target=create, args=(range(j, n, c),)) for j in range(c)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    done.wait(120)
    t1 = max(seen.values()) if seen else time.monotonic()
    lat = sorted((seen[k] - created[k]) * 1000 for k in created if k in seen)
    if not lat:
        print("no host pods seen")
        return 1
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"pods {n} synced {len(lat)} clients {c}")
    print(f"create->host pod exists: p50 {p(0.5):.2f} ms  p99 {p(0.99):.2f} ms  max {lat[-1]:.2f} ms")
    print(f"sustained: {len(lat) / (t1 - t0):.0f} pods/s (first create to last host pod)")
    return 0


sys.exit(main())
