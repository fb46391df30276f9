#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Port-forward as client libraries other than client-go do it: the kubelet's
WebSocket channel protocol (a data and an error channel per port, each
starting with the port as two little-endian bytes).

  pyportforward.py client KUBECONFIG NS POD PORT DEADPORT
      the official Python client (Debian's python3-kubernetes): 200 kB
      through PORT's socket and back; the error of DEADPORT
  pyportforward.py b64 DATADIR HOSTPORT PATH PORT
      v4.base64.channel.k8s.io by hand: the first messages, then an echo
  pyportforward.py exec KUBECONFIG NS POD
      exec with the Python client (WebSocket, v4.channel.k8s.io): output,
      then stdin written to the command and read back
"""
import base64
import os
import ssl
import sys
import time


def client(kcfg, ns, pod, port, dead):
    from kubernetes import client as kc, config
    from kubernetes.stream import portforward
    api = config.new_client_from_config(config_file=kcfg)
    core = kc.CoreV1Api(api)
    pf = portforward(core.connect_get_namespaced_pod_portforward, pod, ns,
                     ports="%d,%d" % (port, dead))
    s = pf.socket(port)
    s.setblocking(True)
    data = os.urandom(200000)
    s.sendall(data)
    got = b""
    while len(got) < len(data):
        d = s.recv(65536)
        if not d:
            break
        got += d
    print("echo", "ok" if got == data else "bad %d of %d" % (len(got), len(data)))
    pf.socket(dead)
    for _ in range(50):
        if pf.error(dead):
            break
        time.sleep(0.1)
    print("error", pf.error(dead))
    s.close()
    pf.close()


def b64(datadir, hostport, path, port):
    import websocket
    ws = websocket.create_connection(
        "wss://127.0.0.1:%s%s?ports=%s" % (hostport, path, port),
        subprotocols=["v4.base64.channel.k8s.io"],
        sslopt={"ca_certs": datadir + "/ca.crt", "certfile": datadir + "/admin.crt",
                "keyfile": datadir + "/admin.key", "cert_reqs": ssl.CERT_REQUIRED})
    first = [ws.recv(), ws.recv()]
    le = base64.b64encode(int(port).to_bytes(2, "little")).decode()
    print("first", sorted(first) == sorted(["0" + le, "1" + le]), ws.subprotocol)
    ws.send("0" + base64.b64encode(b"base64 ping").decode())
    got = b""
    while len(got) < len(b"base64 ping"):
        m = ws.recv()
        if m[0] == "0":
            got += base64.b64decode(m[1:])
    print("echo", got.decode())
    ws.close()


def pyexec(kcfg, ns, pod):
    from kubernetes import client as kc, config
    from kubernetes.stream import stream
    api = config.new_client_from_config(config_file=kcfg)
    core = kc.CoreV1Api(api)
    out = stream(core.connect_get_namespaced_pod_exec, pod, ns,
                 command=["sh", "-c", "echo from-python"], stdout=True, stderr=True,
                 stdin=False, tty=False)
    print("exec", out.strip())
    r = stream(core.connect_get_namespaced_pod_exec, pod, ns, command=["cat"],
               stdout=True, stderr=True, stdin=True, tty=False, _preload_content=False)
    r.write_stdin("through stdin\n")
    got = ""
    for _ in range(50):
        r.update(timeout=100)  # poll(2) milliseconds, in this client
        got += r.read_stdout() if r.peek_stdout() else ""
        if got.endswith("\n"):
            break
    r.close()
    print("stdin", got.strip())


if __name__ == "__main__":
    if sys.argv[1] == "exec":
        pyexec(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "client":
        client(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]))
    else:
        b64(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
