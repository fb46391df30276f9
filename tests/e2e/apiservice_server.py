#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A tiny aggregated API server for the end-to-end tests (t_apiservice.sh).

HTTPS on 127.0.0.1 with the given certificate; client certificates are
required and verified against CLIENT_CA (the tenant's request-header CA).
Writes its port to PORTFILE and one JSON line per request to LOG: method,
path, query, the front-proxy headers (X-Remote-User, X-Remote-Group lines)
and the client certificate's CN. Serves wardle.example.com/v1alpha1 (or the
group/version given after LOG):

  GET /apis/wardle.example.com/v1alpha1        APIResourceList (flunders, fl)
  GET .../flunders, .../namespaces/NS/flunders FlunderList of two objects
  GET .../namespaces/NS/flunders/NAME          one, or a NotFound Status
  GET ...?pad=N                                an empty list with N MiB of padding
  GET ...?watch=true                           ADDED events, then stays open
                                               for 20 s (streaming check)
  POST .../namespaces/NS/flunders              201 with the object
  POST .../flunders/NAME/exec with Connection: Upgrade
                                               101 (Upgrade as asked, X-Echo: yes),
                                               then echoes every byte back; NAME
                                               "refuse": a 403 Status instead
  GET /openapi/v3, /openapi/v3/apis/GROUP/VERSION  its OpenAPI v3 (a PATCH
                                               operation and the Flunder schema)
  GET /openapi/v2                              its Swagger 2.0: a flunders path (and a
                                              ListMeta definition unlike the tenant's)
                                               (and one outside its group, which
                                               the aggregator leaves out) and a
                                               Flunder definition
"""
import json
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

cert, key, client_ca, portfile, logfile = sys.argv[1:6]
GROUP_VERSION = sys.argv[6] if len(sys.argv) > 6 else "wardle.example.com/v1alpha1"
lock = threading.Lock()
GV = "/apis/" + GROUP_VERSION
ITEMS = [("default", "flounder-a"), ("default", "flounder-b")]


def flunder(ns, name):
    return {"apiVersion": GROUP_VERSION, "kind": "Flunder",
            "metadata": {"name": name, "namespace": ns, "resourceVersion": "7",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"reference": "x"}}


DISCOVERY = {"kind": "APIResourceList", "apiVersion": "v1",
             "groupVersion": GROUP_VERSION,
             "resources": [{"name": "flunders", "singularName": "flunder",
                            "namespaced": True, "kind": "Flunder",
                            "verbs": ["get", "list", "watch"],
                            "shortNames": ["fl"], "categories": ["all"]},
                           {"name": "flunders/status", "singularName": "",
                            "namespaced": True, "kind": "Flunder",
                            "verbs": ["get"]}]}


GROUP, VERSION = GROUP_VERSION.split("/")
GVK = {"group": GROUP, "version": VERSION, "kind": "Flunder"}
OPENAPI = {
    "openapi": "3.0.0", "info": {"title": "wardle", "version": "v0"},
    "paths": {
        GV + "/namespaces/{namespace}/flunders/{name}": {"patch": {
            "x-kubernetes-group-version-kind": GVK,
            "parameters": [{"name": "fieldValidation", "in": "query",
                            "schema": {"type": "string"}}],
            "responses": {}}},
        GV + "/namespaces/{namespace}/flunders": {"post": {
            "x-kubernetes-group-version-kind": GVK,
            "parameters": [{"name": "fieldValidation", "in": "query",
                            "schema": {"type": "string"}}],
            "responses": {}}}},
    "components": {"schemas": {"com.example.wardle.Flunder": {
        "type": "object", "description": "A flunder, served by an extension API server.",
        "x-kubernetes-group-version-kind": [GVK],
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion of the object."},
            "kind": {"type": "string", "description": "Kind of the object."},
            "metadata": {"type": "object", "description": "Standard object metadata."},
            "spec": {"type": "object", "description": "What the flunder wants.",
                     "properties": {"reference": {"type": "string",
                                                  "description": "The reference."}}}}}}}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, u):
        peer = self.connection.getpeercert() or {}
        cn = ""
        for rdn in peer.get("subject", ()):
            for k, v in rdn:
                if k == "commonName":
                    cn = v
        row = {"method": self.command, "path": u.path, "query": u.query,
               "user": self.headers.get("X-Remote-User"),
               "groups": self.headers.get_all("X-Remote-Group") or [],
               "accept": self.headers.get("Accept"), "cn": cn,
               "authorization": self.headers.get("Authorization")}
        with lock, open(logfile, "a") as f:
            f.write(json.dumps(row) + "\n")

    def send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def watch(self, items):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for ns, name in items:
            ev = {"type": "ADDED", "object": flunder(ns, name)}
            self.chunk(json.dumps(ev).encode() + b"\n")
        time.sleep(20)
        self.chunk(b"")

    def do_GET(self):
        u = urlparse(self.path)
        self.record(u)
        q = parse_qs(u.query)
        p = u.path.rstrip("/")
        if p == GV:
            return self.send(200, DISCOVERY)
        if p == "/openapi/v3":
            return self.send(200, {"paths": {GV[1:]: {
                "serverRelativeURL": "/openapi/v3" + GV + "?hash=0123ABCD"}}})
        if p == "/openapi/v3" + GV:
            return self.send(200, OPENAPI)
        if p == "/openapi/v2":
            return self.send(200, {
                "swagger": "2.0", "info": {"title": "wardle", "version": "v0"},
                "paths": {GV + "/namespaces/{namespace}/flunders": {"get": {
                              "description": "list flunders", "operationId": "listFlunders",
                              "responses": {"200": {"description": "OK"},
                                            "401": {"description": "Unauthorized", "schema": {
                                                "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}}}}},
                          "/api/v1/namespaces": {"get": {
                              "description": "not the backend's to serve",
                              "responses": {"200": {"description": "OK"}}}}},
                "definitions": {"example.wardle.v1alpha1.Flunder": {
                    "description": "A flunder, in Swagger 2.0", "type": "object"},
                    # a definition of the tenant's name with other content:
                    # kube-aggregator renames it _v2
                    "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta": {
                        "description": "The backend's own ListMeta", "type": "object"}}})
        if not p.startswith(GV + "/"):
            return self.send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                   "reason": "NotFound", "code": 404})
        parts = p[len(GV) + 1:].split("/")
        ns = None
        if len(parts) >= 3 and parts[0] == "namespaces":
            ns, parts = parts[1], parts[2:]
        if parts[0] != "flunders" or len(parts) > 2:
            return self.send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                   "reason": "NotFound", "code": 404})
        items = [(n, m) for n, m in ITEMS if ns is None or n == ns]
        if len(parts) == 2:
            hit = [(n, m) for n, m in items if m == parts[1]]
            if not hit:
                return self.send(404, {
                    "kind": "Status", "apiVersion": "v1", "metadata": {},
                    "status": "Failure", "reason": "NotFound", "code": 404,
                    "message": 'flunders.wardle.example.com "%s" not found' % parts[1],
                    "details": {"name": parts[1], "group": "wardle.example.com",
                                "kind": "flunders"}})
            return self.send(200, flunder(*hit[0]))
        if q.get("watch", ["false"])[0] in ("true", "1"):
            return self.watch(items)
        if "pad" in q:  # a list of PAD MiB more, for flow control
            return self.send(200, {"apiVersion": GROUP_VERSION, "kind": "FlunderList",
                                   "metadata": {"resourceVersion": "7"}, "items": [],
                                   "pad": "x" * (int(q["pad"][0]) << 20)})
        return self.send(200, {"apiVersion": GROUP_VERSION,
                               "kind": "FlunderList",
                               "metadata": {"resourceVersion": "7"},
                               "items": [flunder(n, m) for n, m in items]})


def upgrade(self, u):
    if u.path.endswith("/refuse/exec"):
        return self.send(403, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Failure", "reason": "Forbidden", "code": 403,
                               "message": "no exec here"})
    self.send_response(101)
    self.send_header("Upgrade", self.headers.get("Upgrade"))
    self.send_header("Connection", "Upgrade")
    self.send_header("X-Echo", "yes")
    self.end_headers()
    self.wfile.flush()
    self.close_connection = True
    while True:
        data = self.connection.recv(65536)
        if not data:
            return
        self.connection.sendall(data)


def do_POST(self):
    u = urlparse(self.path)
    self.record(u)
    if self.headers.get("Upgrade"):
        return upgrade(self, u)
    obj = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
    obj.setdefault("metadata", {})["resourceVersion"] = "8"
    self.send(201, obj)


Handler.do_POST = do_POST
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ctx.load_verify_locations(client_ca)
ctx.verify_mode = ssl.CERT_REQUIRED
srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os  # noqa: E402
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
