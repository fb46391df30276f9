#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An admission webhook server for the end-to-end tests (t_webhook.sh).

HTTPS on 127.0.0.1 with the given certificate; writes its port to PORTFILE
and every AdmissionReview it receives, one JSON line each with the path it
came to, to LOG; those of the job and cronjob controllers to LOG.jobs
instead (t_webhook.sh's CronJob fires at the next minute, whenever that
falls: its Jobs and their pods must not be "the last review" of another
check). What it answers depends on the path:

  /allow          allowed
  /label[/NAME]   allowed, with a JSONPatch adding the label
                  mutated-by=<NAME, default "webhook">, a warning and an
                  audit annotation (a name in the path, not the query: kube
                  refuses webhook URLs with a query)
  /annotate       allowed, with a JSONPatch setting annotation
                  seen-labels=<the object's labels as JSON> (for ordering and
                  reinvocation checks)
  /deny           denied with code 403, reason Forbidden, message "no thanks"
                  when the object (or old object) has label deny=true; else
                  allowed
  /deny-bare      denied without a status
  /slow           sleeps 3 s, then allowed
  /slow/N         sleeps N s (at most 30), then allowed
  /bad-uid        a response with another uid
  /bad-patch      a patch that does not apply
  /status500      answers HTTP 500
  /huge           an answer of 9 MiB
  /replicas/N     allowed, with a JSONPatch setting spec.replicas to N
"""
import base64
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

cert, key, portfile, logfile = sys.argv[1:5]
lock = threading.Lock()


def patch_of(ops):
    return base64.b64encode(json.dumps(ops).encode()).decode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        review = json.loads(self.rfile.read(n))
        url = urlparse(self.path)
        p, _, name = url.path.partition("/label/")
        p, name = ("/label", name) if name else (url.path, "webhook")
        user = ((review.get("request") or {}).get("userInfo") or {}).get("username", "")
        log = logfile
        if user.split(":")[-1] in ("job-controller", "cronjob-controller"):
            log = logfile + ".jobs"
        with lock, open(log, "a") as f:
            f.write(json.dumps({"path": p, "query": url.query,
                                "ua": self.headers.get("User-Agent", ""),
                                "review": review}) + "\n")
        req = review.get("request", {})
        resp = {"uid": req.get("uid"), "allowed": True}
        obj = req.get("object") or {}
        old = req.get("oldObject") or {}
        labels = (obj.get("metadata") or {}).get("labels") or {}
        old_labels = (old.get("metadata") or {}).get("labels") or {}
        if p == "/label":
            ops = []
            if "labels" not in obj.get("metadata", {}):
                ops.append({"op": "add", "path": "/metadata/labels", "value": {}})
            ops.append({"op": "add", "path": "/metadata/labels/mutated-by", "value": name})
            resp.update(patchType="JSONPatch", patch=patch_of(ops),
                        warnings=["mutated by " + name],
                        auditAnnotations={"mutated": name})
        elif p == "/annotate":
            ops = []
            if "annotations" not in obj.get("metadata", {}):
                ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
            ops.append({"op": "add", "path": "/metadata/annotations/seen-labels",
                        "value": json.dumps(labels, sort_keys=True)})
            resp.update(patchType="JSONPatch", patch=patch_of(ops))
        elif p == "/deny":
            if labels.get("deny") == "true" or old_labels.get("deny") == "true":
                resp.update(allowed=False, status={"code": 403, "reason": "Forbidden",
                                                   "message": "no thanks"},
                            warnings=["denied by the test webhook"])
        elif p == "/deny-bare":
            resp["allowed"] = False
        elif p == "/slow":
            time.sleep(3)
        elif p.startswith("/slow/"):
            time.sleep(min(30.0, float(p[len("/slow/"):] or "0")))
        elif p == "/bad-uid":
            resp["uid"] = "not-the-uid"
        elif p == "/bad-patch":
            resp.update(patchType="JSONPatch",
                        patch=patch_of([{"op": "remove", "path": "/no/such/field"}]))
        elif p.startswith("/replicas/"):
            n = int(p.split("/")[2])
            p = "/replicas"
            resp.update(patchType="JSONPatch",
                        patch=patch_of([{"op": "replace", "path": "/spec/replicas", "value": n}]))
        elif p == "/huge":
            resp["warnings"] = ["x" * 1024] * 9000
        elif p == "/status500":
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"apiVersion": review.get("apiVersion"), "kind": "AdmissionReview",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os  # noqa: E402

os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
