#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A test-only kubelet for the host stand-in: runs Kubicle's server pods
(those labelled kubicle.dev/control-plane, which `kubicle operator` and
`kubicle manifest` make through a StatefulSet) as local `kubicle serve`
processes, so that real kubectl reaches a tenant made by the operator and
its syncer syncs pods with the host ServiceAccount's rights. Python 3
standard library only, as scheduler.py.

  kubelet.py --data-dir HOSTDIR --kubicle BIN --root DIR [--interval 0.2]
             [--selector kubicle.dev/control-plane=NAME]

What a kubelet does and what this one does instead:
  - the container runs its own command and args and env, plus
    KUBERNETES_SERVICE_HOST/PORT (the host's address, as kubelet injects the
    default/kubernetes Service's); three args are replaced, since many pods
    share one machine here: --listen and --dns-listen get 127.0.0.1:0 (a
    free port each) and the paths of --data-dir and --pki-dir are mapped to
    their volumes' folders under --root (the mountPath prefix replaced);
  - volumes: a Secret volume is written as files (its items' key -> path,
    defaultMode), then mounted read-only over itself in a private mount
    namespace (unshare -m), as kubelet's are; a claim's folder is
    ROOT/pvc/NS/CLAIM (it outlives the pod: the store survives a roll);
    an emptyDir is a fresh folder; the ServiceAccount's token (a
    TokenRequest for the pod's serviceAccountName, as kubelet's projected
    volume asks), the host's CA and the namespace are mounted at
    /run/secrets/kubernetes.io/serviceaccount (a tmpfs over /run in that
    namespace: /var/run is /run here);
  - readiness: the readinessProbe's HTTPS GET (path and named port) against
    the process; when it answers 200 the pod's status becomes Running with a
    Ready condition, podIP and hostIP 127.0.0.1 and a containerStatus;
  - a pod deleted, or marked deleting, has its process stopped (SIGTERM) and
    is then removed (grace period 0), as kubelet confirms a deletion;
  - ROOT/NS/POD/endpoint holds "127.0.0.1:PORT" of its API once it serves,
    for the tests (they pass --tls-server-name, the Service's name).
With --fake nothing runs: every pod is reported Ready at once (for the
operator's benchmark without its tenants' servers).
"""
import argparse
import base64
import http.client
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
import urllib.parse

LABEL = "kubicle.dev/control-plane"
SA_DIR = "/run/secrets/kubernetes.io/serviceaccount"


class Api:
    def __init__(self, data_dir):
        kc = open(f"{data_dir}/kubeconfig").read()
        url = urllib.parse.urlparse(re.search(r"server:\s*\"?([^\s\"]+)", kc).group(1))
        self.host, self.port = url.hostname, url.port
        self.ca = f"{data_dir}/ca.crt"
        self.ctx = ssl.create_default_context(cafile=self.ca)
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


class Pod:
    """One running server pod: its folders, process and state."""

    def __init__(self, pod, root):
        m = pod["metadata"]
        self.ns, self.name, self.uid = m["namespace"], m["name"], m["uid"]
        self.dir = os.path.join(root, self.ns, self.name)
        self.proc = None
        self.port = 0
        self.ready = False
        self.scheme_ca = None


class Kubelet:
    def __init__(self, api, kubicle, root, selector, fake=False):
        self.api, self.kubicle, self.root, self.selector = api, kubicle, root, selector
        self.fake = fake
        self.pods = {}  # uid -> Pod

    # ---- volumes ---------------------------------------------------------------
    def secret_volume(self, ns, vol, dst):
        sec = vol["secret"]
        st, obj = self.api.call("GET", f"/api/v1/namespaces/{ns}/secrets/{sec['secretName']}")
        if st != 200:
            raise ValueError(f"secret {sec['secretName']}: {st}")
        data = obj.get("data") or {}
        items = sec.get("items") or [{"key": k, "path": k} for k in data]
        os.makedirs(dst, exist_ok=True)
        for it in items:
            path = os.path.join(dst, it["path"])
            with open(path, "wb") as f:
                f.write(base64.b64decode(data[it["key"]]))
            os.chmod(path, it.get("mode", sec.get("defaultMode", 0o644)))

    def volumes(self, pod, p):
        """mountPath -> local folder; the Secret folders to remount read-only."""
        spec = pod["spec"]
        local, ro = {}, []
        ctr = spec["containers"][0]
        vols = {v["name"]: v for v in spec.get("volumes", [])}
        for m in ctr.get("volumeMounts", []):
            v = vols.get(m["name"])
            if v is None:  # a claim template's volume: ROOT/pvc/NS/NAME-POD
                d = os.path.join(self.root, "pvc", p.ns, f"{m['name']}-{p.name}")
            elif "secret" in v:
                d = os.path.join(p.dir, "volumes", m["name"])
                self.secret_volume(p.ns, v, d)
                ro.append(d)
            elif "persistentVolumeClaim" in v:
                d = os.path.join(self.root, "pvc", p.ns, v["persistentVolumeClaim"]["claimName"])
            else:
                d = os.path.join(p.dir, "volumes", m["name"])
            os.makedirs(d, exist_ok=True)
            local[m["mountPath"]] = d
        return local, ro

    def service_account(self, pod, p):
        sa = pod["spec"].get("serviceAccountName", "default")
        st, obj = self.api.call(
            "POST", f"/api/v1/namespaces/{p.ns}/serviceaccounts/{sa}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": 3600}})
        if st != 201:
            raise ValueError(f"token for {p.ns}/{sa}: {st} {obj.get('message', '')}")
        d = os.path.join(p.dir, "serviceaccount")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "token"), "w") as f:
            f.write(obj["status"]["token"])
        with open(os.path.join(d, "namespace"), "w") as f:
            f.write(p.ns)
        shutil.copy(self.api.ca, os.path.join(d, "ca.crt"))
        return d

    # ---- the container ---------------------------------------------------------
    @staticmethod
    def mapped(path, local):
        for mount in sorted(local, key=len, reverse=True):
            if path == mount or path.startswith(mount.rstrip("/") + "/"):
                return local[mount] + path[len(mount):]
        return path

    def start(self, pod):
        p = Pod(pod, self.root)
        os.makedirs(p.dir, exist_ok=True)
        local, ro = self.volumes(pod, p)
        sa = self.service_account(pod, p)
        ctr = pod["spec"]["containers"][0]
        args, prev = [], None
        for a in (ctr.get("command") or [])[1:] + (ctr.get("args") or []):
            if prev in ("--listen", "--dns-listen"):
                a = "127.0.0.1:0"
            elif prev in ("--data-dir", "--pki-dir"):
                a = self.mapped(a, local)
            args.append(a)
            prev = a
        for i, a in enumerate(args):
            if a == "--data-dir":
                p.data = args[i + 1]
            if a == "--pki-dir":
                p.scheme_ca = os.path.join(args[i + 1], "ca.crt")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
               "KUBERNETES_SERVICE_HOST": self.api.host,
               "KUBERNETES_SERVICE_PORT": str(self.api.port)}
        for e in ctr.get("env", []):
            if "value" in e:
                env[e["name"]] = e["value"]
        # a private mount namespace: the Secret folders read-only, the
        # ServiceAccount's files where in-cluster clients look for them
        script = ("set -e; sa=$1; n=$2; shift 2; i=0; "
                  "while [ $i -lt $n ]; do d=$1; shift; "
                  "mount --bind \"$d\" \"$d\"; mount -o remount,ro,bind \"$d\"; i=$((i+1)); done; "
                  "mount -t tmpfs none /run; mkdir -p " + SA_DIR + "; "
                  "cp \"$sa\"/token \"$sa\"/ca.crt \"$sa\"/namespace " + SA_DIR + "/; "
                  "exec \"$@\"")
        log = open(os.path.join(p.dir, "server.log"), "ab")
        p.proc = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", sa,
             str(len(ro))] + ro + [self.kubicle] + args,
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        print(f"kubelet: started {p.ns}/{p.name} (pid {p.proc.pid}): {' '.join(args)}",
              file=sys.stderr)
        self.pods[p.uid] = p

    def probe(self, pod, p):
        """The readinessProbe's httpGet against the process's port."""
        if not p.port:
            kc = os.path.join(getattr(p, "data", ""), "kubeconfig")
            if not os.path.exists(kc):
                return False
            m = re.search(r"server:\s*\"?https://[^:]+:(\d+)", open(kc).read())
            if not m:
                return False
            p.port = int(m.group(1))
            with open(os.path.join(p.dir, "endpoint"), "w") as f:
                f.write(f"127.0.0.1:{p.port}\n")
        path = (pod["spec"]["containers"][0].get("readinessProbe") or {}) \
            .get("httpGet", {}).get("path", "/readyz")
        try:
            ctx = ssl.create_default_context(cafile=p.scheme_ca)
            ctx.check_hostname = False
            c = http.client.HTTPSConnection("127.0.0.1", p.port, context=ctx, timeout=2)
            c.request("GET", path)
            ok = c.getresponse().status == 200
            c.close()
            return ok
        except (OSError, http.client.HTTPException):
            return False

    def report(self, pod, p):
        ctr = pod["spec"]["containers"][0]
        status = {"phase": "Running", "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
                  "podIPs": [{"ip": "127.0.0.1"}], "startTime": now(),
                  "conditions": [{"type": t, "status": "True", "lastTransitionTime": now()}
                                 for t in ("PodScheduled", "Initialized", "ContainersReady",
                                           "Ready")],
                  "containerStatuses": [{"name": ctr["name"], "image": ctr["image"],
                                         "imageID": "", "ready": True, "restartCount": 0,
                                         "started": True,
                                         "state": {"running": {"startedAt": now()}}}]}
        self.api.call("PATCH", f"/api/v1/namespaces/{p.ns}/pods/{p.name}/status",
                      {"status": status}, "application/merge-patch+json")
        p.ready = True

    def stop(self, p):
        if p.proc and p.proc.poll() is None:
            os.killpg(p.proc.pid, signal.SIGTERM)
            try:
                p.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.proc.pid, signal.SIGKILL)
                p.proc.wait()
        print(f"kubelet: stopped {p.ns}/{p.name}", file=sys.stderr)

    def once(self):
        st, lst = self.api.call("GET", "/api/v1/pods?labelSelector=" +
                                urllib.parse.quote(self.selector))
        if st != 200:
            return
        seen = set()
        for pod in lst.get("items", []):
            m = pod["metadata"]
            uid = m["uid"]
            if m.get("deletionTimestamp"):
                if uid in self.pods:
                    self.stop(self.pods.pop(uid))
                self.api.call("DELETE", f"/api/v1/namespaces/{m['namespace']}/pods/"
                              f"{m['name']}?gracePeriodSeconds=0")
                continue
            seen.add(uid)
            if self.fake:
                if uid not in self.pods:
                    p = Pod(pod, self.root)
                    self.pods[uid] = p
                    self.report(pod, p)
                continue
            if uid not in self.pods:
                try:
                    self.start(pod)
                except (ValueError, KeyError, OSError) as e:
                    print(f"kubelet: {m['namespace']}/{m['name']}: {e}", file=sys.stderr)
                continue
            p = self.pods[uid]
            if not p.ready and self.probe(pod, p):
                self.report(pod, p)
        for uid in list(self.pods):
            if uid not in seen:
                self.stop(self.pods.pop(uid))

    def shutdown(self, *_):
        for p in self.pods.values():
            self.stop(p)
        sys.exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data-dir", required=True, help="the host stand-in's data dir")
    ap.add_argument("--kubicle", required=True, help="the kubicle binary the pods run")
    ap.add_argument("--root", required=True, help="where pods' folders and claims live")
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--selector", default=LABEL,
                    help="the pods it runs (a label selector; default every server pod)")
    ap.add_argument("--fake", action="store_true",
                    help="run nothing: report every pod Ready at once")
    a = ap.parse_args()
    k = Kubelet(Api(a.data_dir), os.path.abspath(a.kubicle), a.root, a.selector, a.fake)
    signal.signal(signal.SIGTERM, k.shutdown)
    signal.signal(signal.SIGINT, k.shutdown)
    while True:
        try:
            k.once()
        except (OSError, http.client.HTTPException, ValueError) as e:
            print(f"kubelet: {e}", file=sys.stderr)
            time.sleep(1)
        time.sleep(a.interval)


if __name__ == "__main__":
    main()
