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
The watcher is bench/watchstamp (a C process): each event is timed by the
kernel's receive stamp, so neither this driver's scheduling nor its parsing
is in the figures; a burst's create is timed from when it was sent.
Clients are processes (not threads); time.monotonic is CLOCK_MONOTONIC,
shared by processes. They are spawned, not forked (a fork can copy a lock
another thread holds, and the child then hangs).
With the servers' pids, also the CPU time (user+system) each spent per pod:
on a busy machine latency and rate depend on the neighbours, CPU per pod
does not.
With SYNC_TIMELINE=PREFIX the open loop also writes each pod's due time and
latency to PREFIX.<namespace> (where in the run the slow ones were).
With SYNC_RATE=R (and SYNC_SECS=S, SYNC_LOADGEN=path of bench/loadgen), the
load is open instead: R*S creates paced by the clock at R per second
(bench/loadgen -r, C connections), each timed from when it was due, not from
when it went out (a stalled server cannot slow the offered load down and so
hide its stall: coordinated omission); the same three rows at the same
offered rate, a pod the watch never showed counting as infinitely late. The
client's CPU (in cores) and how late it sent (send lag) say whether it was
the limit. Each open-loop row follows one second at the same rate that is
not counted (the syncer's connections to the host are opened then: the
rows are a steady state) and whose figures are printed apart. N is then
ignored.
  sync.py TENANT_DIR HOST_DIR N C [TENANT_PID HOST_PID [PLAIN_DIR PLAIN_PID]]"""
import http.client, json, multiprocessing as mp, os, re, ssl, subprocess, sys, time
import urllib.parse


def server(d):
    """The server of d's kubeconfig, parsed (hostname, port)."""
    kc = open(f"{d}/kubeconfig").read()
    return urllib.parse.urlparse(re.search(r'server:\s*"?([^\s"]+)', kc).group(1))


def conn(d):
    u = server(d)
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
        created[f"b-{i}"] = time.monotonic()  # sent: the watcher's stamp is the kernel's
        k.request("POST", f"/api/v1/namespaces/{ns}/pods", body,
                  {"Content-Type": "application/json"})
        r = k.getresponse()
        r.read()
        if r.status != 201:
            print(f"create b-{i}: HTTP {r.status}", file=sys.stderr)
    out.put(created)


def cpu_ms(pid):
    """User + system CPU time of process pid, in ms (0 without a pid)."""
    if not pid:
        return 0.0
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


class HostWatch:
    """The watcher (bench/watchstamp, beside bench/loadgen): records, for the
    first n pods whose ADDED the watch of hdir/hns shows, when the bytes of
    that event reached the socket (the kernel's receive time, as
    CLOCK_MONOTONIC), by name or by annotation key. A C process, not a thread
    of this driver: a Python reader would stamp each line when the
    interpreter got round to it, adding its own scheduling delay (and its
    parsing CPU, on the servers' two cores) to every figure."""

    def __init__(self, hdir, hns, key, n, seen, prefix=None):
        port = server(hdir).port
        tool = os.path.join(os.path.dirname(os.environ["SYNC_LOADGEN"]), "watchstamp")
        args = [tool, "-p", str(port), "--cert", f"{hdir}/admin.crt", "--key",
                f"{hdir}/admin.key", "--ns", hns, "-n", str(n), "--idle-s", "60"]
        args += ["--prefix", prefix] if prefix else []
        self.p = subprocess.Popen(args + (["--annotation", key] if key else []),
                                  stdout=subprocess.PIPE, text=True)
        self.seen, self.cpu_ms = seen, 0.0
        if self.p.stdout.readline().strip() != "ready":
            raise RuntimeError("watchstamp did not start its watch")

    def wait(self, timeout):
        """Waits for the watcher to end (n seen, or idle) and fills seen."""
        try:
            out, _ = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.terminate()
            out, _ = self.p.communicate()
        for line in out.splitlines():
            k, v = line.rsplit(" ", 1) if " " in line else (line, "")
            if k.startswith("cpu_ms="):
                self.cpu_ms = float(k.split("=")[1])
            elif v:
                self.seen.setdefault(k, int(v) / 1e9)


def run(cdir, cns, hdir, hns, key, n, c, pids):
    """Creates n pods in cdir/cns; returns (latencies ms sorted, pods/s,
    CPU ms per pod of each pid)."""
    seen = {}
    done = HostWatch(hdir, hns, key, n, seen)
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


def loadgen(cdir, cns, rate, secs, c, prefix):
    """bench/loadgen offering rate creates/s for secs seconds to cdir/cns
    over c connections, pods named PREFIX-k; returns its report as a dict."""
    port = server(cdir).port
    body = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"sync-open-{os.getpid()}.json")
    with open(body, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "@NAME@"},
                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, f)
    out = subprocess.run([os.environ["SYNC_LOADGEN"], "-p", str(port), "--cert",
                          f"{cdir}/admin.crt", "--key", f"{cdir}/admin.key", "-c", str(c),
                          "-w", "0.5", "-d", str(secs), "-r", str(rate), "-m", "POST",
                          "-u", f"/api/v1/namespaces/{cns}/pods", "--body", body,
                          "--expect", "201", "--name-prefix", prefix, "--label", "open"],
                         capture_output=True, text=True, check=True).stdout
    os.unlink(body)
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


def due_latencies(seen, prefix, t0, rate, n):
    """Each pod PREFIX-k's latency in ms from its due time t0 + k/rate, in k
    order (inf for a pod the watch never showed)."""
    return [(seen[f"{prefix}-{k}"] - t0 - k / rate) * 1000 if f"{prefix}-{k}" in seen
            else float("inf") for k in range(n)]


def run_open(cdir, cns, hdir, hns, key, rate, secs, c, pids):
    """Offers rate creates/s for secs seconds to cdir/cns (bench/loadgen -r,
    c connections), after one second at the same rate not counted (the
    syncer's HTTP/1.1 connections to the host and the servers' caches are
    made then: a steady state is measured; the cold second is printed
    apart by main_open); returns (latencies ms sorted from each pod's due
    time, inf for pods never seen; pods/s seen; CPU ms per pod of each pid;
    loadgen's report as a dict, with the watcher's CPU in cores)."""
    n = int(rate * secs)
    warm = {}
    wdone = HostWatch(hdir, hns, key, int(rate), warm, "w-")
    wrep = loadgen(cdir, cns, rate, 1, c, "w")
    wdone.wait(60)
    cold = sorted(due_latencies(warm, "w", int(wrep["t0_ns"]) / 1e9, rate, int(rate)))
    seen = {}
    done = HostWatch(hdir, hns, key, n, seen, "o-")
    time.sleep(0.2)
    cpu0 = [cpu_ms(p) for p in pids]
    rep = loadgen(cdir, cns, rate, secs, c, "o")
    done.wait(60)
    time.sleep(0.3)  # the tenant's status write-back of the last pods
    cpu = [(cpu_ms(p) - c0) / n for p, c0 in zip(pids, cpu0)]
    rep["watch_cpu"] = done.cpu_ms / 1000 / secs
    rep["cold"] = cold
    t0 = int(rep["t0_ns"]) / 1e9
    lat = due_latencies(seen, "o", t0, rate, n)
    t1 = max(seen.values()) if seen else t0 + secs
    if os.environ.get("SYNC_TIMELINE"):
        with open(os.environ["SYNC_TIMELINE"] + f".{hns}", "w") as f:
            for k, v in enumerate(lat):
                f.write(f"{k / rate:.4f} {v if v != float('inf') else -1:.3f}\n")
    lat.sort()
    return lat, len(seen) / (t1 - t0), cpu, rep


def main_open(tdir, hdir, c, pids, plain, plain_pid):
    """The open-loop rows (SYNC_RATE): synced, host direct, tenant alone."""
    rate, secs = float(os.environ["SYNC_RATE"]), float(os.environ.get("SYNC_SECS", "5"))
    rows = [("tenant create -> host pod exists",
             run_open(tdir, "default", hdir, "tenants", "kubicle.dev/name", rate, secs, c,
                      pids))]
    callgrind_dump(pids[0])
    rows.append(("reference: host create -> ADDED",
                 run_open(hdir, "direct", hdir, "direct", None, rate, secs, c, [0, pids[1]])))
    if plain:
        rows.append(("reference: tenant alone, -> ADDED",
                     run_open(plain, "default", plain, "default", None, rate, secs, c,
                              [plain_pid, 0])))
    p = lambda lat, q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"open loop: {rate:.0f} creates/s offered for {secs:g} s ({int(rate * secs)} pods), "
          f"{c} connections; latency from each create's due time")
    print(f"{'':34}{'p50':>10}{'p99':>10}{'max':>10}{'pods/s':>9}"
          f"{'tenant CPU':>12}{'host CPU':>10}{'client':>8}{'send lag p99':>14}{'watcher':>9}")
    for name, (lat, r, cpu, lg) in rows:
        cells = "".join(f"{p(lat, q):8.2f}ms" for q in (.5, .99, 1))
        cpus = "".join(f"{x:7.3f}ms/pod" if x else f"{'-':>13}" for x in cpu)
        print(f"{name:34}{cells}{r:9.0f}{cpus}{float(lg['client_cpu']):6.2f}c"
              f"{float(lg['send_lag_p99_ms']):11.2f}ms{lg['watch_cpu']:8.2f}c")
    print("each after one second at the same rate, not counted above (new connections, caches):"
          " that second's p50 / p99 / max")
    for name, (lat, r, cpu, lg) in rows:
        print(f"{'  ' + name:34}" + "".join(f"{p(lg['cold'], q):8.2f}ms" for q in (.5, .99, 1)))
    return 0


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
    if os.environ.get("SYNC_RATE"):
        return main_open(tdir, hdir, c, pids, plain, int(sys.argv[8]) if plain else 0)
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
