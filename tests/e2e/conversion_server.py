#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A CRD conversion webhook server for the end-to-end tests (t_crdconv.sh).

HTTPS on 127.0.0.1 with the given certificate; writes its port to PORTFILE
and every ConversionReview it receives, one JSON line each with the path it
came to, to LOG. Objects of conv.kubicle.test: v1's spec.size is v2's
spec.capacity (and back); the converted objects get the label
converted-to=<version> and spec.junk (in no schema: the server prunes it). What it answers depends on the path:

  /convert    the converted objects, as a webhook should
  /fail       result Failure with message "no conversion today"
  /bad-uid    a response with another uid
  /short      one object fewer than asked
  /rename     an object whose metadata.name changed
"""
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

cert, key, portfile, logfile = sys.argv[1:5]
lock = threading.Lock()


def convert(obj, desired):
    obj = json.loads(json.dumps(obj))
    spec = obj.setdefault("spec", {})
    version = desired.split("/")[-1]
    if version == "v2" and "size" in spec:
        spec["capacity"] = spec.pop("size")
    elif version == "v1" and "capacity" in spec:
        spec["size"] = spec.pop("capacity")
    spec["junk"] = "not in any schema"
    obj["apiVersion"] = desired
    obj.setdefault("metadata", {}).setdefault("labels", {})["converted-to"] = version
    return obj


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        review = json.loads(self.rfile.read(n))
        path = self.path.split("?")[0]
        with lock, open(logfile, "a") as f:
            f.write(json.dumps({"path": self.path, "review": review}) + "\n")
        req = review.get("request") or {}
        objs = [convert(o, req.get("desiredAPIVersion", "")) for o in req.get("objects") or []]
        resp = {"uid": req.get("uid", ""), "result": {"status": "Success"}, "convertedObjects": objs}
        if path == "/fail":
            resp = {"uid": req.get("uid", ""), "result": {"status": "Failure", "message": "no conversion today"}}
        elif path == "/bad-uid":
            resp["uid"] = "not-the-one"
        elif path == "/short":
            resp["convertedObjects"] = objs[:-1]
        elif path == "/rename":
            for o in objs:
                o["metadata"]["name"] = "someone-else"
        body = json.dumps({"apiVersion": review.get("apiVersion"), "kind": "ConversionReview",
                           "response": resp}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
