# SPDX-License-Identifier: Apache-2.0
# The tenant's cluster DNS (proxy/dns/dns.h), asked with dig (bind9-dnsutils)
# over UDP and TCP while kubectl changes the tenant's Services; forwarding
# to an upstream (a second server with another zone) and to a dead one;
# bad packets; and the host pods' DNS settings written by the syncer.

dns_port() { # LOG: the port a server's DNS reported
  local i p
  for i in $(seq 100); do
    p=$(awk '/dns: serving/ {print $NF; exit}' "$1" 2>/dev/null)
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.05
  done
  return 1
}

# dq PORT DIG-ARGS...: dig against 127.0.0.1:PORT, one try
dq() { local p=$1; shift; dig +tries=1 +timeout=3 @127.0.0.1 -p "$p" "$@"; }
dq_status() { dq "$@" | awk '/->>HEADER<<-/ {gsub(",", "", $6); print $6}'; }

dns_suite() {
  command -v dig >/dev/null || { fail "dns: dig is not installed (bind9-dnsutils)"; return; }
  start_server dnsup --dns-listen 127.0.0.1:0 --cluster-domain example.test \
    --dns-upstream none || { fail "dns: upstream server"; return; }
  local UP; UP=$(dns_port "$E2E_TMP/dnsup.log") || { fail "dns: upstream port"; return; }
  start_server dns --dns-listen 127.0.0.1:0 --dns-upstream "127.0.0.1:$UP" ||
    { fail "dns: server"; return; }
  local P; P=$(dns_port "$E2E_TMP/dns.log") || { fail "dns: port"; return; }
  local K=(kubectl --kubeconfig "$KCFG") pid=$SERVER_PID
  expect_eq "the kubernetes Endpoints name the port the server listens on" \
    "${SERVER_URL##*:} ${SERVER_URL##*:}" "${K[@]}" get endpoints,endpointslices kubernetes \
    -o jsonpath='{.items[0].subsets[0].ports[0].port} {.items[1].ports[0].port}'
  "${K[@]}" create ns ml >/dev/null
  "${K[@]}" -n ml create service clusterip web --tcp=80:8080 >/dev/null
  "${K[@]}" -n ml apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: train}
spec:
  clusterIP: None
  ports: [{name: c10d, port: 29500}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: train}
subsets:
- addresses: [{ip: 10.1.0.5, hostname: train-0}, {ip: 10.1.0.6}]
  notReadyAddresses: [{ip: 10.1.0.7, hostname: train-2}]
  ports: [{name: c10d, port: 29500, protocol: TCP}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {type: ExternalName, externalName: db.example.com}
EOF
  local ip; ip=$("${K[@]}" -n ml get svc web -o jsonpath='{.spec.clusterIP}')
  expect_eq "dns: a Service's A record is its cluster IP (UDP)" "$ip" \
    dq "$P" +short web.ml.svc.cluster.local
  expect_eq "dns: the same over TCP, the name in any case" "$ip" \
    dq "$P" +short +tcp WEB.Ml.svc.cluster.local
  expect_eq "dns: kubernetes.default is the API's Service" "10.96.0.1" \
    dq "$P" +short kubernetes.default.svc.cluster.local
  expect "dns: answers are authoritative" "flags: qr aa rd ra;" dq "$P" web.ml.svc.cluster.local
  expect "dns: ... with a TTL of 5 s" "^web\.ml\.svc\.cluster\.local\.[[:space:]]+5[[:space:]]+IN[[:space:]]+A" \
    dq "$P" web.ml.svc.cluster.local
  expect_eq "dns: an unknown Service is NXDOMAIN" "NXDOMAIN" \
    dq_status "$P" nope.ml.svc.cluster.local
  expect "dns: ... with the zone's SOA" "^cluster\.local\.[[:space:]]+5[[:space:]]+IN[[:space:]]+SOA[[:space:]]+ns\.dns\.cluster\.local\. hostmaster" \
    dq "$P" nope.ml.svc.cluster.local
  expect_eq "dns: a namespace is a name without records (NOERROR)" "NOERROR" \
    dq_status "$P" ml.svc.cluster.local
  expect_eq "dns: a headless Service gives its ready endpoints" "10.1.0.5 10.1.0.6" \
    bash -c "dig +short +tries=1 @127.0.0.1 -p $P train.ml.svc.cluster.local | sort | xargs"
  expect_eq "dns: an endpoint by its hostname" "10.1.0.5" \
    dq "$P" +short train-0.train.ml.svc.cluster.local
  expect_eq "dns: ... not one that is not ready" "NXDOMAIN" \
    dq_status "$P" train-2.train.ml.svc.cluster.local
  expect_eq "dns: SRV of a named port, one per endpoint" \
    "0 100 29500 10-1-0-6.train.ml.svc.cluster.local. 0 100 29500 train-0.train.ml.svc.cluster.local." \
    bash -c "dig +short +tries=1 @127.0.0.1 -p $P SRV _c10d._tcp.train.ml.svc.cluster.local | sort | xargs"
  expect_eq "dns: ExternalName is a CNAME" "db.example.com." \
    dq "$P" +short CNAME db.ml.svc.cluster.local
  expect_eq "dns: a pod's dashed address" "10.1.0.9" dq "$P" +short 10-1-0-9.ml.pod.cluster.local
  expect_eq "dns: PTR of a cluster IP" "web.ml.svc.cluster.local." dq "$P" +short -x "$ip"
  "${K[@]}" -n ml delete svc web >/dev/null
  expect_eq "dns: a deleted Service is gone at once" "NXDOMAIN" \
    dq_status "$P" web.ml.svc.cluster.local
  expect_eq "dns: other names go upstream (UDP)" "10.96.0.1" \
    dq "$P" +short kubernetes.default.svc.example.test
  expect_eq "dns: ... and over TCP" "10.96.0.1" \
    dq "$P" +short +tcp kubernetes.default.svc.example.test
  expect_eq "dns: the upstream's NXDOMAIN is passed on" "NXDOMAIN" \
    dq_status "$P" nope.example.test

  # a big answer: truncated over UDP without EDNS, whole over TCP
  local addrs="" i
  for i in $(seq 1 80); do addrs+="{ip: 10.3.0.$i},"; done
  "${K[@]}" -n ml apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: big}
spec: {clusterIP: None, ports: [{port: 1}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: big}
subsets: [{addresses: [${addrs%,}], ports: [{port: 1}]}]
EOF
  expect "dns: an answer over 512 bytes is truncated for a plain UDP client" "flags: qr aa tc rd ra" \
    dq "$P" +noedns +ignore big.ml.svc.cluster.local
  expect_eq "dns: ... and whole when dig retries over TCP" "80" \
    bash -c "dig +noedns +tries=1 @127.0.0.1 -p $P +short big.ml.svc.cluster.local | wc -l"
  # the same from the upstream: a TCP client's query goes upstream over TCP
  kubectl --kubeconfig "$E2E_TMP/dnsup/kubeconfig" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: big, namespace: default}
spec: {clusterIP: None, ports: [{port: 1}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: big, namespace: default}
subsets: [{addresses: [${addrs%,}], ports: [{port: 1}]}]
EOF
  expect "dns: a forwarded answer over 512 bytes is truncated over UDP" "flags: qr aa tc rd ra" \
    dq "$P" +noedns +ignore big.default.svc.example.test
  expect_eq "dns: ... and whole over TCP, upstream over TCP too" "80" \
    bash -c "dig +tcp +noedns +tries=1 @127.0.0.1 -p $P +short big.default.svc.example.test | wc -l"

  # bad input: junk datagrams, a junk TCP frame, a stalled TCP client
  python3 - "$P" >"$E2E_TMP/dns-junk.out" 2>&1 <<'EOF' &
import os, socket, sys, time
p = int(sys.argv[1])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for n in (0, 1, 11, 12, 13, 100, 512, 4000):
    u.sendto(os.urandom(n), ("127.0.0.1", p))
u.sendto(b"\x12\x34\x81\x80" + bytes(8), ("127.0.0.1", p))  # a response
t = socket.create_connection(("127.0.0.1", p)); t.sendall(b"\x00\x05abcde")
s = socket.create_connection(("127.0.0.1", p)); s.sendall(b"\x00\x40ab")  # stalls mid-frame
print("sent", flush=True)
time.sleep(4)
EOF
  local junk=$!
  wait_for "dns: the junk sent" 10 grep -q sent "$E2E_TMP/dns-junk.out"
  expect_eq "dns: still answering after junk packets and a stalled TCP client" "10.96.0.1" \
    dq "$P" +short +tcp kubernetes.default.svc.cluster.local
  expect "dns: the server is alive" "^$pid$" pgrep -f "data-dir $E2E_TMP/dns "
  kill "$junk" 2>/dev/null; wait "$junk"
  # a TCP client that asks and never reads: its answers pile up, and it is dropped
  expect "dns: a TCP client that does not read its answers is dropped" "^closed$" \
    python3 - "$P" "$E2E_TMP/dns.log" <<'EOF'
import socket, struct, sys, time
p, log = int(sys.argv[1]), sys.argv[2]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", p))
name = b"".join(bytes([len(l)]) + l for l in b"big.ml.svc.cluster.local".split(b".")) + b"\0"
q = struct.pack(">HHHHHH", 1, 0x100, 1, 0, 0, 0) + name + struct.pack(">HH", 1, 1)
try:
    s.sendall((struct.pack(">H", len(q)) + q) * 8000)  # about 10 MB of answers
    # read nothing until the server says it gave up on us (however slow it is)
    for _ in range(600):
        if "does not read its answers" in open(log).read():
            break
        time.sleep(0.1)
    else:
        print("never given up")  # (an idle close would not count)
        sys.exit(0)
    s.settimeout(10)
    while s.recv(65536):
        pass
    print("closed")
except (ConnectionResetError, BrokenPipeError):
    print("closed")
except socket.timeout:
    print("still open")
EOF
  expect "dns: ... and logged" "a TCP client does not read its answers" cat "$E2E_TMP/dns.log"

  start_server dnsdead --dns-listen 127.0.0.1:0 --dns-upstream 127.0.0.1:9 ||
    { fail "dns: server with a dead upstream"; return; }
  local PD; PD=$(dns_port "$E2E_TMP/dnsdead.log")
  expect_eq "dns: an upstream that never answers gives SERVFAIL" "SERVFAIL" \
    dq_status "$PD" www.example.com
  expect_eq "dns: ... over TCP too" "SERVFAIL" dq_status "$PD" +tcp www.example.com
  expect_fail "dns: a bad --dns-listen is refused at start" "dns on nope" \
    "$KUBICLE" serve --data-dir "$E2E_TMP/dnsbad" --listen 127.0.0.1:0 --dns-listen nope
  dns_suite_pods
  dns_suite_training
}

# The syncer gives ClusterFirst host pods the tenant's DNS (--pod-dns).
dns_suite_pods() {
  # the host stand-in's own cluster DNS plays the host's
  start_server dnshost --dns-listen 127.0.0.1:0 --cluster-domain corp.local \
    --dns-upstream none || { fail "dns: host"; return; }
  local HK=$KCFG HP; HP=$(dns_port "$E2E_TMP/dnshost.log")
  # in-cluster the advertise address is the Service's name: an FQDN slice, no Endpoints address
  start_server dnsadv --advertise-address t1.kubicle-t1.svc || { fail "dns: advertise"; return; }
  expect_eq "the kubernetes EndpointSlice of a named API is FQDN; Endpoints list no address" \
    "FQDN t1.kubicle-t1.svc ${SERVER_URL##*:} 0" \
    bash -c "kubectl --kubeconfig '$KCFG' get endpointslices kubernetes -o jsonpath='{.addressType} {.endpoints[0].addresses[0]} {.ports[0].port} '; kubectl --kubeconfig '$KCFG' get endpoints kubernetes -o json | jq '.subsets | length'"
  kubectl --kubeconfig "$HK" create ns tenants >/dev/null
  start_server dnsten --host-kubeconfig "$HK" --host-namespace tenants --tenant dn \
    --scheduler none --pod-dns 10.0.0.10 --cluster-domain corp.local \
    --dns-listen 127.0.0.1:0 --dns-upstream "127.0.0.1:$HP" || { fail "dns: tenant"; return; }
  local TP; TP=$(dns_port "$E2E_TMP/dnsten.log")
  local K=(kubectl --kubeconfig "$KCFG") H=(kubectl --kubeconfig "$HK" -n tenants)
  "${K[@]}" create ns ml >/dev/null
  "${K[@]}" -n ml apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: a}
spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec:
  containers: [{name: c, image: busybox}]
  dnsConfig:
    nameservers: [10.0.0.53]
    searches: [corp.example]
    options: [{name: ndots, value: "2"}, {name: edns0}]
---
apiVersion: v1
kind: Pod
metadata: {name: c}
spec: {dnsPolicy: Default, containers: [{name: c, image: busybox}]}
EOF
  local pa=a-x-ml-x-dn pb=b-x-ml-x-dn pc=c-x-ml-x-dn
  sy_until 10 "${H[@]}" get pod "$pc"
  expect_eq "dns: a ClusterFirst host pod resolves through the tenant's DNS" \
    "None [\"10.0.0.10\"] [\"ml.svc.corp.local\",\"svc.corp.local\",\"corp.local\"] [{\"name\":\"ndots\",\"value\":\"5\"}]" \
    "${H[@]}" get pod "$pa" -o jsonpath='{.spec.dnsPolicy} {.spec.dnsConfig.nameservers} {.spec.dnsConfig.searches} {.spec.dnsConfig.options}'
  expect_eq "dns: the pod's own dnsConfig is merged as the kubelet does" \
    "[\"10.0.0.10\",\"10.0.0.53\"] [\"ml.svc.corp.local\",\"svc.corp.local\",\"corp.local\",\"corp.example\"] [{\"name\":\"ndots\",\"value\":\"2\"},{\"name\":\"edns0\"}]" \
    "${H[@]}" get pod "$pb" -o jsonpath='{.spec.dnsConfig.nameservers} {.spec.dnsConfig.searches} {.spec.dnsConfig.options}'
  expect_eq "dns: a Default pod keeps the node's DNS" "Default " \
    "${H[@]}" get pod "$pc" -o jsonpath='{.spec.dnsPolicy} {.spec.dnsConfig}'
  expect_eq "dns: the tenant still sees its own pod's settings" "ClusterFirst" \
    "${K[@]}" -n ml get pod a -o jsonpath='{.spec.dnsPolicy}'
  expect_fail "dns: --pod-dns must be an address or a Service name" "--pod-dns wants an IP address or a host Service" \
    "$KUBICLE" serve --data-dir "$E2E_TMP/dnsbad2" --listen 127.0.0.1:0 --host-kubeconfig "$HK" \
    --host-namespace tenants --tenant dx --scheduler none --pod-dns dns.example
  # the kubelet's Service variables: the tenant's Services, with the host's addresses
  "${K[@]}" -n ml create service clusterip web --tcp=80:8080 >/dev/null
  sy_until 10 "${H[@]}" get svc web-x-ml-x-dn
  local hip; hip=$("${H[@]}" get svc web-x-ml-x-dn -o jsonpath='{.spec.clusterIP}')
  sy_until 10 out_is "$hip" "${K[@]}" -n ml get svc web -o jsonpath='{.spec.clusterIP}'
  "${K[@]}" -n ml apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: e1}
spec: {containers: [{name: c, image: busybox, env: [{name: URL, value: "http://$(WEB_SERVICE_HOST)"}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: e2}
spec: {enableServiceLinks: false, containers: [{name: c, image: busybox}]}
EOF
  sy_until 10 "${H[@]}" get pod e2-x-ml-x-dn && sy_until 10 "${H[@]}" get pod e1-x-ml-x-dn
  expect_eq "dns: a host pod gets the tenant's Service variables, with the host's address" \
    "$hip 80 tcp://$hip:80 false" \
    "${H[@]}" get pod e1-x-ml-x-dn -o jsonpath='{.spec.containers[0].env[?(@.name=="WEB_SERVICE_HOST")].value} {.spec.containers[0].env[?(@.name=="WEB_SERVICE_PORT")].value} {.spec.containers[0].env[?(@.name=="WEB_PORT_80_TCP")].value} {.spec.enableServiceLinks}'
  expect_eq "dns: ... ahead of the pod's own, which may refer to them" "WEB_SERVICE_HOST URL" \
    bash -c "$(printf '%q ' "${H[@]}") get pod e1-x-ml-x-dn -o json | jq -r '[.spec.containers[0].env[].name | select(. == \"WEB_SERVICE_HOST\" or . == \"URL\")] | join(\" \")'"
  expect_eq "dns: the tenant's Service name gives the host's address" "$hip" \
    dq "$TP" +short web.ml.svc.corp.local
  expect_eq "dns: names of the host namespace are the host's (the API's Service)" "$hip" \
    dq "$TP" +short web-x-ml-x-dn.tenants.svc.corp.local
  expect_eq "dns: ... over TCP too" "$hip" dq "$TP" +short +tcp web-x-ml-x-dn.tenants.svc.corp.local
  kubectl --kubeconfig "$HK" create ns other >/dev/null
  kubectl --kubeconfig "$HK" -n other create service clusterip secret --tcp=80 >/dev/null
  expect_eq "dns: ... but no other host namespace's" "NXDOMAIN" \
    dq_status "$TP" secret.other.svc.corp.local
  expect "dns: (which the host's DNS has)" "^[0-9.]+$" dq "$HP" +short secret.other.svc.corp.local
  expect_eq "dns: ... and none with enableServiceLinks: false (nor the host's)" " false" \
    "${H[@]}" get pod e2-x-ml-x-dn -o jsonpath='{.spec.containers[0].env[?(@.name=="WEB_SERVICE_HOST")].value} {.spec.enableServiceLinks}'
  # the syncer keeps each namespace's variables until a Service changes
  "${K[@]}" -n ml delete service web >/dev/null
  sy_until 10 sh -c "! $(printf '%q ' "${H[@]}") get svc web-x-ml-x-dn 2>/dev/null"
  "${K[@]}" -n ml run e3 --image=busybox >/dev/null
  sy_until 10 "${H[@]}" get pod e3-x-ml-x-dn
  expect_eq "dns: a Service deleted: later pods lose its variables" "none" \
    bash -c "$(printf '%q ' "${H[@]}") get pod e3-x-ml-x-dn -o json | jq -r '[.spec.containers[0].env[]?.name | select(startswith(\"WEB_\"))] | if length == 0 then \"none\" else join(\" \") end'"
  # --pod-dns SERVICE: the host Service's cluster IP, read before any pod is written
  start_server dnsten2 --host-kubeconfig "$HK" --host-namespace tenants --tenant dm \
    --scheduler none --pod-dns tdns || { fail "dns: tenant with a DNS Service"; return; }
  local K2=(kubectl --kubeconfig "$KCFG")
  "${K2[@]}" run p1 --image=busybox >/dev/null
  sleep 2
  expect_fail "dns: no host pod before the DNS Service's address is known" "NotFound" \
    "${H[@]}" get pod p1-x-default-x-dm
  "${H[@]}" create service clusterip tdns --tcp=53:5353 >/dev/null
  local dip; dip=$("${H[@]}" get svc tdns -o jsonpath='{.spec.clusterIP}')
  "${K2[@]}" run p2 --image=busybox >/dev/null
  sy_until 10 "${H[@]}" get pod p1-x-default-x-dm && sy_until 10 "${H[@]}" get pod p2-x-default-x-dm
  expect_eq "dns: then the pods resolve through that Service's cluster IP" "[\"$dip\"] [\"$dip\"]" \
    bash -c "$(printf '%q ' "${H[@]}") get pod p1-x-default-x-dm -o jsonpath='{.spec.dnsConfig.nameservers}'; echo -n ' '; $(printf '%q ' "${H[@]}") get pod p2-x-default-x-dm -o jsonpath='{.spec.dnsConfig.nameservers}'"
}

# The whole chain a distributed training job relies on: a StatefulSet's pods
# run on the host (the test scheduler binds them and gives them addresses),
# their status comes back, the tenant's endpoints controller publishes their
# hostnames, and the tenant's DNS answers train-0.train.ml.svc.cluster.local
# with the host pod's address.
dns_suite_training() {
  start_server dnstrhost --standin-exec || { fail "dns: training host"; return; }
  local HK=$KCFG
  local H=(kubectl --kubeconfig "$HK")
  "${H[@]}" create ns tenants >/dev/null
  "${H[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec: {resources: {gpu: {quota: 4, limit: 4}}}
EOF
  start_scheduler dnstrhost
  start_server dnstr --host-kubeconfig "$HK" --host-namespace tenants --tenant tr \
    --queue team-a --dns-listen 127.0.0.1:0 --pod-dns 10.0.0.10 ||
    { fail "dns: training tenant"; return; }
  local P; P=$(dns_port "$E2E_TMP/dnstr.log")
  local K=(kubectl --kubeconfig "$KCFG" -n ml)
  kubectl --kubeconfig "$KCFG" create ns ml >/dev/null
  "${K[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: train}
spec:
  clusterIP: None
  selector: {app: train}
  ports: [{name: c10d, port: 29500}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: train}
spec:
  serviceName: train
  replicas: 2
  selector: {matchLabels: {app: train}}
  template:
    metadata: {labels: {app: train}}
    spec:
      containers:
      - name: c
        image: busybox
        command: [sleep, "3600"]
        resources: {limits: {nvidia.com/gpu: 1}}
EOF
  local ip0="" i
  for i in $(seq 150); do
    ip0=$("${K[@]}" get pod train-0 -o jsonpath='{.status.podIP}' 2>/dev/null)
    [ -n "$ip0" ] && break
    sleep 0.1
  done
  local hip0; hip0=$("${H[@]}" -n tenants get pod train-0-x-ml-x-tr -o jsonpath='{.status.podIP}')
  expect "dns: train-0 runs on the host and its address comes back" "^[0-9.]+ = [0-9.]+$" \
    echo "$ip0 = $hip0"
  expect_eq "dns: ... the host pod's" "$hip0" echo "$ip0"
  expect_until "dns: train-0.train.ml.svc.cluster.local is the host pod's address" "$ip0" \
    dq "$P" +short train-0.train.ml.svc.cluster.local
  expect_until "dns: SRV _c10d._tcp.train names both ranks" \
    "0 100 29500 train-0.train.ml.svc.cluster.local. 0 100 29500 train-1.train.ml.svc.cluster.local." \
    bash -c "dig +short +tries=1 @127.0.0.1 -p $P SRV _c10d._tcp.train.ml.svc.cluster.local | sort | xargs"
  expect_eq "dns: the host pods of the StatefulSet resolve through the tenant's DNS" \
    "None 10.0.0.10 ml.svc.cluster.local" \
    "${H[@]}" -n tenants get pod train-1-x-ml-x-tr -o jsonpath='{.spec.dnsPolicy} {.spec.dnsConfig.nameservers[0]} {.spec.dnsConfig.searches[0]}'
  "${K[@]}" scale statefulset train --replicas=1 >/dev/null
  expect_until "dns: a rank scaled away leaves DNS" "NXDOMAIN" \
    dq_status "$P" train-1.train.ml.svc.cluster.local
}
