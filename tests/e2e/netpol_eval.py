# SPDX-License-Identifier: Apache-2.0
"""Which traffic a set of NetworkPolicies allows (tests/e2e/t_netpol.sh).

The host stand-in stores NetworkPolicies but enforces none (no CNI), so the
netpol suite asks this model, written from the NetworkPolicy API's comments
(k8s.io/api/networking/v1/types.go) and the concept page's rules:
- a pod is isolated for ingress (egress) when some policy of its namespace
  selects it (spec.podSelector) and lists Ingress (Egress) in policyTypes;
  an isolated pod takes only what the union of those policies' rules allows;
- a connection needs both: the source's egress allows it and the
  destination's ingress allows it (an address outside the cluster has no
  policies of its own);
- a rule with no peers (from/to absent or empty) matches every peer, a rule
  with no ports every port;
- a peer: ipBlock (an address in cidr and in no except), or podSelector
  and/or namespaceSelector: namespaceSelector absent means the policy's own
  namespace, podSelector absent every pod of the namespaces selected;
- a port: protocol (default TCP) and port (a number, a range up to endPort,
  or absent: every port of that protocol).
Pod addresses are given by the model (ipBlocks are matched against pod
addresses too, as most CNIs do).

Usage: netpol_eval.py POLICIES.json PODS.json NAMESPACES.json CASES
POLICIES, PODS, NAMESPACES: `kubectl get -o json` lists of the host.
CASES lines: `MODE SRC DST PORT/PROTO allow|deny [# note]`, MODE a policy
name (only that policy is in force) or `all`; SRC/DST `pod:HOSTNS/LABEL=VALUE`
(the one host pod of that namespace with the label) or `ip:ADDRESS`.
Prints each case and exits 1 when one does not hold.
"""
import ipaddress
import json
import sys


def sel_match(sel, labels):
    if sel is None:
        return True
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def ip_in_block(ip, block):
    addr = ipaddress.ip_address(ip)
    net = ipaddress.ip_network(block["cidr"], strict=False)
    if addr.version != net.version or addr not in net:
        return False
    return not any(addr in ipaddress.ip_network(e, strict=False)
                   for e in block.get("except") or [])


def peer_match(peer, ep, pol_ns, ns_labels):
    if "ipBlock" in peer:
        return ip_in_block(ep["ip"], peer["ipBlock"])
    if ep["pod"] is None:
        return False
    if "namespaceSelector" in peer:
        if not sel_match(peer["namespaceSelector"], ns_labels.get(ep["ns"], {})):
            return False
    elif ep["ns"] != pol_ns:
        return False
    return sel_match(peer.get("podSelector"), ep["labels"])


def port_match(ports, port, proto):
    if not ports:
        return True
    for p in ports:
        if (p.get("protocol") or "TCP") != proto:
            continue
        if "port" not in p:
            return True
        lo = p["port"]
        hi = p.get("endPort", lo)
        if isinstance(lo, int) and lo <= port <= hi:
            return True
    return False


def allowed_dir(pols, ep, other, port, proto, direction, ns_labels):
    """Whether endpoint ep (a pod, or an address) lets the traffic through in
    `direction` (Ingress: from other; Egress: to other)."""
    if ep["pod"] is None:
        return True
    key = "from" if direction == "Ingress" else "to"
    rules_key = direction.lower()
    selecting = [p for p in pols
                 if p["metadata"]["namespace"] == ep["ns"]
                 and direction in (p["spec"].get("policyTypes") or ["Ingress"])
                 and sel_match(p["spec"].get("podSelector") or {}, ep["labels"])]
    if not selecting:
        return True
    for p in selecting:
        for r in p["spec"].get(rules_key) or []:
            peers = r.get(key) or []
            if (not peers or any(peer_match(x, other, p["metadata"]["namespace"], ns_labels)
                                 for x in peers)) and port_match(r.get("ports"), port, proto):
                return True
    return False


def endpoint(spec, pods):
    kind, _, rest = spec.partition(":")
    if kind == "ip":
        return {"pod": None, "ip": rest, "ns": None, "labels": {}}
    ns, _, lv = rest.partition("/")
    k, _, v = lv.partition("=")
    found = [p for p in pods if p["ns"] == ns and p["labels"].get(k) == v]
    if len(found) != 1:
        raise SystemExit("%s: %d pods" % (spec, len(found)))
    return found[0]


def main():
    pols = json.load(open(sys.argv[1]))["items"]
    pods = []
    for i, p in enumerate(json.load(open(sys.argv[2]))["items"]):
        m = p["metadata"]
        pods.append({"pod": m["name"], "ns": m["namespace"], "labels": m.get("labels") or {},
                     "ip": "192.168.%d.%d" % (1 + i // 200, 1 + i % 200)})
    ns_labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {}
                 for n in json.load(open(sys.argv[3]))["items"]}
    bad = 0
    for line in open(sys.argv[4]):
        line = line.split("#")[0].strip()
        if not line:
            continue
        mode, src, dst, pp, want = line.split()
        port, _, proto = pp.partition("/")
        inforce = pols if mode == "all" else [p for p in pols if p["metadata"]["name"] == mode]
        if mode != "all" and not inforce:
            print("FAIL %s: no such host policy" % mode)
            bad += 1
            continue
        s, d = endpoint(src, pods), endpoint(dst, pods)
        ok = (allowed_dir(inforce, s, d, int(port), proto or "TCP", "Egress", ns_labels) and
              allowed_dir(inforce, d, s, int(port), proto or "TCP", "Ingress", ns_labels))
        got = "allow" if ok else "deny"
        print("%s %s: %s -> %s %s: %s" % ("ok  " if got == want else "FAIL", mode, src, dst, pp, got))
        bad += got != want
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
