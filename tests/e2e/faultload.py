#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The fault suite's load and its ledger (tests/e2e/t_faults.sh, bench/faults.sh).

  faultload.py run URL DATA_DIR OUT --workers N --prefix P
      N connections create ConfigMaps P-<worker>-<seq> in namespace default
      as fast as the server takes them, while one watch follows them from
      the revision at the start, resuming from the last revision it saw
      whenever its stream ends (a server killed and started again on the
      same port). Each acknowledged create (201) is appended to OUT/acked
      as "name rv", each watch event to OUT/watched as "type name rv".
      Runs until OUT/stop exists, then lets the watch catch up with the
      last acknowledged revision and exits.
  faultload.py verify URL DATA_DIR OUT --prefix P
      Checks, after the server came back: every acknowledged create is
      there with its resourceVersion; the list's resourceVersion is not
      below any acknowledged one (no revision went backwards); the watch
      saw revisions in increasing order and every acknowledged create with
      its own revision (resumed without gaps); a new watch from the first
      revision replays them all. Prints one line per check, "ok ..." or
      "FAIL ...", then a summary line; exits 1 on a failure.

Connection failures while the server is down are retried (polling, no
fixed sleeps in what is checked).
"""
import argparse
import http.client
import json
import os
import ssl
import sys
import threading
import time
import urllib.parse


def context(data_dir):
    ctx = ssl.create_default_context(cafile=os.path.join(data_dir, "ca.crt"))
    ctx.load_cert_chain(os.path.join(data_dir, "admin.crt"), os.path.join(data_dir, "admin.key"))
    return ctx


class Client:
    """One keep-alive HTTPS connection, reopened after a failure."""

    def __init__(self, url, ctx, timeout=30):
        u = urllib.parse.urlparse(url)
        self.host, self.port, self.ctx, self.timeout = u.hostname, u.port, ctx, timeout
        self.conn = None

    def request(self, method, path, body=None):
        if self.conn is None:
            self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                                    timeout=self.timeout)
        try:
            hdrs = {"Content-Type": "application/json"} if body is not None else {}
            self.conn.request(method, path, body=body, headers=hdrs)
            r = self.conn.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self):
        if self.conn:
            self.conn.close()
        self.conn = None


CM = "/api/v1/namespaces/default/configmaps"


def current_rv(client):
    while True:
        try:
            st, body = client.request("GET", CM + "?limit=1")
            if st == 200:
                return int(json.loads(body)["metadata"]["resourceVersion"])
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.05)


def worker(url, ctx, prefix, wid, out, lock, stop, stats):
    c = Client(url, ctx)
    seq = 0
    while not stop.is_set():
        seq += 1
        name = "%s-%d-%d" % (prefix, wid, seq)
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name}, "data": {"w": str(wid)}})
        try:
            st, resp = c.request("POST", CM, body)
        except (OSError, http.client.HTTPException):
            stats["errors"] += 1
            time.sleep(0.02)  # the server is down: poll for it
            continue
        if st == 201:
            rv = json.loads(resp)["metadata"]["resourceVersion"]
            with lock:
                out.write("%s %s\n" % (name, rv))
                out.flush()
                stats["acked"] += 1
        else:
            stats["refused"] += 1


def watcher(url, ctx, since, out, done, stats):
    """Follows the ConfigMaps from `since`, resuming after each stream ends."""
    u = urllib.parse.urlparse(url)
    last = since
    while not done.is_set():
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=5)
        try:
            conn.request("GET", "%s?watch=true&resourceVersion=%d&timeoutSeconds=30" % (CM, last))
            r = conn.getresponse()
            if r.status != 200:
                stats["watch_errors"].append("status %d" % r.status)
                time.sleep(0.05)
                continue
            while not done.is_set():
                line = r.readline()
                if not line:
                    break
                ev = json.loads(line)
                if ev["type"] == "ERROR":
                    stats["watch_errors"].append(json.dumps(ev["object"]))
                    break
                md = ev["object"]["metadata"]
                rv = int(md["resourceVersion"])
                out.write("%s %s %d\n" % (ev["type"], md["name"], rv))
                out.flush()
                last = rv
                stats["last_seen"] = rv
        except (OSError, http.client.HTTPException, ValueError):
            time.sleep(0.05)  # down, or cut by a kill: resume
        finally:
            conn.close()


def run(a):
    ctx = context(a.data_dir)
    os.makedirs(a.out, exist_ok=True)
    since = current_rv(Client(a.url, ctx))
    with open(os.path.join(a.out, "since"), "w") as f:
        f.write("%d\n" % since)
    acked = open(os.path.join(a.out, "acked"), "a")
    watched = open(os.path.join(a.out, "watched"), "a")
    lock, stop, done = threading.Lock(), threading.Event(), threading.Event()
    stats = {"acked": 0, "refused": 0, "errors": 0, "last_seen": since, "watch_errors": []}
    wt = threading.Thread(target=watcher, args=(a.url, ctx, since, watched, done, stats),
                          daemon=True)
    wt.start()
    ws = [threading.Thread(target=worker, args=(a.url, ctx, a.prefix, i, acked, lock, stop, stats),
                           daemon=True) for i in range(a.workers)]
    t0 = time.monotonic()
    for t in ws:
        t.start()
    stopfile = os.path.join(a.out, "stop")
    while not os.path.exists(stopfile):
        time.sleep(0.05)
        with open(os.path.join(a.out, "progress.tmp"), "w") as f:
            f.write("%d\n" % stats["acked"])
        os.replace(os.path.join(a.out, "progress.tmp"), os.path.join(a.out, "progress"))
    stop.set()
    for t in ws:
        t.join()
    secs = time.monotonic() - t0
    acked.close()
    top = 0
    with open(os.path.join(a.out, "acked")) as f:
        for line in f:
            top = max(top, int(line.split()[1]))
    end = time.monotonic() + a.catch_up
    while stats["last_seen"] < top and time.monotonic() < end:
        time.sleep(0.05)
    done.set()
    wt.join(10)
    watched.close()
    with open(os.path.join(a.out, "stats.json"), "w") as f:
        json.dump({"acked": stats["acked"], "refused": stats["refused"],
                   "conn_errors": stats["errors"], "seconds": round(secs, 2),
                   "watch_errors": stats["watch_errors"]}, f)
    return 0


def list_all(client):
    items, cont = {}, ""
    while True:
        path = CM + "?limit=500" + ("&continue=" + urllib.parse.quote(cont) if cont else "")
        st, body = client.request("GET", path)
        if st != 200:
            raise RuntimeError("list: %d %s" % (st, body[:200]))
        d = json.loads(body)
        for o in d["items"]:
            items[o["metadata"]["name"]] = int(o["metadata"]["resourceVersion"])
        rv = int(d["metadata"]["resourceVersion"]) if not cont else rv
        cont = d["metadata"].get("continue", "")
        if not cont:
            return items, rv


def verify(a):
    ctx = context(a.data_dir)
    c = Client(a.url, ctx)
    fails = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            fails.append(what)

    acked = {}
    with open(os.path.join(a.out, "acked")) as f:
        for line in f:
            n, rv = line.split()
            acked[n] = int(rv)
    with open(os.path.join(a.out, "since")) as f:
        since = int(f.read())
    items, list_rv = list_all(c)
    missing = [n for n in acked if items.get(n) != acked[n]]
    check(not missing, "every acknowledged create is there (%d acknowledged, %d missing%s)"
          % (len(acked), len(missing), ": " + " ".join(missing[:5]) if missing else ""))
    top = max(acked.values(), default=0)
    check(list_rv >= top, "no revision went backwards (list at %d, last acknowledged %d)"
          % (list_rv, top))
    seen, order_ok, prev = {}, True, since
    with open(os.path.join(a.out, "watched")) as f:
        for line in f:
            typ, n, rv = line.split()
            rv = int(rv)
            if rv <= prev:
                order_ok = False
            prev = rv
            if typ == "ADDED":
                seen[n] = rv
    check(order_ok, "the watch saw increasing revisions across the restarts")
    gaps = [n for n in acked if seen.get(n) != acked[n]]
    check(not gaps, "the resumed watch saw every acknowledged create (%d not seen%s)"
          % (len(gaps), ": " + " ".join(gaps[:5]) if gaps else ""))
    # a new watch from before the first write replays every one of them
    u = urllib.parse.urlparse(a.url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=60)
    conn.request("GET", "%s?watch=true&resourceVersion=%d&timeoutSeconds=%d"
                 % (CM, since, a.replay_timeout))
    r = conn.getresponse()
    replay = {}
    while len(replay) < len(acked):
        line = r.readline()
        if not line:
            break
        ev = json.loads(line)
        if ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] in acked:
            md = ev["object"]["metadata"]
            replay[md["name"]] = int(md["resourceVersion"])
    conn.close()
    check(replay == acked, "a watch from revision %d replays every acknowledged create (%d of %d)"
          % (since, sum(1 for n in acked if replay.get(n) == acked[n]), len(acked)))
    print("summary: %d acknowledged, %d failed checks" % (len(acked), len(fails)))
    return 1 if fails else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "verify"])
    p.add_argument("url")
    p.add_argument("data_dir")
    p.add_argument("out")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--prefix", default="f")
    p.add_argument("--catch-up", type=float, default=60)
    p.add_argument("--replay-timeout", type=int, default=30)
    a = p.parse_args()
    sys.exit(run(a) if a.mode == "run" else verify(a))


if __name__ == "__main__":
    main()
