# SPDX-License-Identifier: Apache-2.0
"""A TCP listener that records every connection it accepts, for the ssrf
suite (t_ssrf.sh): the targets a hostile tenant aims its server at. Listens
on all IPv4 addresses (loopback and this machine's own) and, when the
machine has IPv6, on all IPv6 ones, at one port; writes the port to
PORTFILE, then one line per accepted connection ("<peer address>") to LOG,
and closes it at once (no TLS: nothing should ever get here).

usage: recorder.py PORTFILE LOG
"""
import selectors
import socket
import sys


def listeners():
    v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    v4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    v4.bind(("0.0.0.0", 0))
    v4.listen(64)
    port = v4.getsockname()[1]
    out = [v4]
    try:
        v6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        v6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        v6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        v6.bind(("::", port))
        v6.listen(64)
        out.append(v6)
    except OSError:
        pass
    return port, out


def main():
    portfile, log = sys.argv[1], sys.argv[2]
    port, socks = listeners()
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_READ)
    open(log, "a").close()
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % port)
    import os
    os.rename(portfile + ".tmp", portfile)
    while True:
        for key, _ in sel.select():
            conn, peer = key.fileobj.accept()
            with open(log, "a") as f:
                f.write("%s\n" % peer[0])
            conn.close()


if __name__ == "__main__":
    main()
