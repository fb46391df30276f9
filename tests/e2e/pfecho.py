#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Helpers for the port-forward checks.

  pfecho.py serve PORTFILE     an echo server on a free loopback port (written
                               to PORTFILE); each connection gets its bytes back
  pfecho.py roundtrip PORT N C C connections each send N random bytes through
                               PORT, half-close, and read the echo; prints how
                               many came back byte for byte
"""
import os
import socket
import sys
import threading


def serve(portfile):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)

    def echo(c):
        while True:
            d = c.recv(1 << 16)
            if not d:
                break
            c.sendall(d)
        c.close()

    while True:
        c, _ = s.accept()
        threading.Thread(target=echo, args=(c,), daemon=True).start()


def roundtrip(port, n, conns):
    ok = [False] * conns

    def one(i):
        data = os.urandom(n)
        s = socket.create_connection(("127.0.0.1", port), timeout=30)

        def w():
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)

        t = threading.Thread(target=w)
        t.start()
        got = bytearray()
        while True:
            d = s.recv(1 << 16)
            if not d:
                break
            got += d
        t.join()
        ok[i] = bytes(got) == data

    ts = [threading.Thread(target=one, args=(i,)) for i in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(f"{ok.count(True)} of {conns}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "serve":
        serve(sys.argv[2])
    elif cmd == "roundtrip":
        roundtrip(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
