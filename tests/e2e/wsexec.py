#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A raw WebSocket exec client (v5.channel.k8s.io) for the end-to-end tests:
speaks the protocol byte by byte where kubectl hides it.

  wsexec.py DATA_DIR URL_PATH_WITH_QUERY SCENARIO

DATA_DIR holds ca.crt, admin.crt, admin.key and kubeconfig (its server).
Scenarios print one line that the test compares:
  ping      sends a ping with a payload: prints "pong <payload>"
  channels  reads to the end: prints "ch<N>=<data>" per channel (data
            escaped), then "close <code>"
  stdin     sends "abc" on channel 0 then the v5 close signal [255, 0],
            then reads as `channels` does
  unmasked  sends an unmasked frame (forbidden from a client): prints
            "close <code>"
"""
import base64
import os
import re
import socket
import ssl
import struct
import sys


def connect(data_dir, path):
    with open(os.path.join(data_dir, "kubeconfig")) as f:
        m = re.search(r"server:\s*\"?https://([^:/\"]+):(\d+)", f.read())
    host, port = m.group(1), int(m.group(2))
    ctx = ssl.create_default_context(cafile=os.path.join(data_dir, "ca.crt"))
    ctx.check_hostname = False
    ctx.load_cert_chain(os.path.join(data_dir, "admin.crt"), os.path.join(data_dir, "admin.key"))
    s = ctx.wrap_socket(socket.create_connection((host, port), timeout=20))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: Upgrade\r\n"
               f"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise SystemExit("closed before the answer's head")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    status = head.split(b"\r\n")[0]
    if b" 101 " not in status:
        raise SystemExit("no upgrade: " + head.decode(errors="replace") + rest.decode(errors="replace"))
    return s, rest


def frame(op, payload, mask=True):
    b0 = 0x80 | op
    n = len(payload)
    if n < 126:
        hdr = struct.pack("!BB", b0, (0x80 if mask else 0) | n)
    elif n < 65536:
        hdr = struct.pack("!BBH", b0, (0x80 if mask else 0) | 126, n)
    else:
        hdr = struct.pack("!BBQ", b0, (0x80 if mask else 0) | 127, n)
    if not mask:
        return hdr + payload
    k = os.urandom(4)
    return hdr + k + bytes(c ^ k[i % 4] for i, c in enumerate(payload))


class Reader:
    def __init__(self, sock, rest):
        self.s, self.buf = sock, rest

    def need(self, n):
        while len(self.buf) < n:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def frame(self):
        b0, b1 = self.need(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.need(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.need(8))[0]
        if b1 & 0x80:
            raise SystemExit("the server masked a frame")
        return b0 & 0x0F, self.need(n)


def read_channels(r):
    chans = {}
    while True:
        try:
            op, data = r.frame()
        except EOFError:
            print("eof without a close frame")
            return
        if op == 8:
            for ch in sorted(chans):
                print(f"ch{ch}={chans[ch]!r}")
            print("close", struct.unpack("!H", data[:2])[0] if len(data) >= 2 else "")
            return
        if op == 2 and data:
            chans.setdefault(data[0], b"")
            chans[data[0]] += data[1:]


def main():
    data_dir, path, scenario = sys.argv[1:4]
    s, rest = connect(data_dir, path)
    r = Reader(s, rest)
    if scenario == "ping":
        s.sendall(frame(9, b"are-you-there"))
        while True:
            op, data = r.frame()
            if op == 10:
                print("pong", data.decode())
                break
        s.sendall(frame(8, struct.pack("!H", 1000)))
    elif scenario == "channels":
        read_channels(r)
    elif scenario == "stdin":
        s.sendall(frame(2, b"\x00abc"))
        s.sendall(frame(2, b"\xff\x00"))
        read_channels(r)
    elif scenario == "unmasked":
        s.sendall(frame(2, b"\x00abc", mask=False))
        while True:
            op, data = r.frame()
            if op == 8:
                print("close", struct.unpack("!H", data[:2])[0])
                break
    s.close()


if __name__ == "__main__":
    main()
