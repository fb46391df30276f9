# SPDX-License-Identifier: Apache-2.0
# Tenant NetworkPolicies on the host (issue 22, item 4; syncer/netpol.c,
# cmd/hostquota.c): two tenants on one host stand-in. One applies the
# examples of the Kubernetes NetworkPolicy documentation, one namespace
# each; the host policies the syncer writes are read back and a model of
# NetworkPolicy semantics (netpol_eval.py; the stand-in stores policies but
# no CNI enforces them) says which traffic they allow: each translated
# example alone allows what the documentation says it does, within what the
# platform allows; with the platform's policies in force too, nothing
# crosses between tenants. Updates and deletes follow the tenant's policy.
# Sourced by run.sh.

np_k() { local t=$1; shift; kubectl --kubeconfig "$KUBICLE_HOME/tenants/$t/kubeconfig" "$@"; }
np_h() { kubectl --kubeconfig "$NP_HOST_KCFG" "$@"; }
np_keep() {
  local d=$KUBICLE_HOME/tenants/$1
  [ -f "$d/supervisor.pid" ] && E2E_PIDS+=("$(cat "$d/supervisor.pid")")
  return 0
}
np_pod() { # NS NAME LABELS
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $2, namespace: $1, labels: {id: $1-$2, $3}}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"]}]
---
YAML
}
np_marks() { # ex1's db (isolated both ways), ex6's client (both), ex1's client (neither)
  echo "$(np_h get pods -n kubicle-na -l id=ex1-db -o jsonpath='{.items[0].metadata.labels.kubicle\.dev/egress-isolated}')" \
    "$(np_h get pods -n kubicle-na -l id=ex6-client -o jsonpath='{.items[0].metadata.labels.kubicle\.dev/ingress-isolated}')" \
    "$(np_h get pods -n kubicle-na -l id=ex1-client -o jsonpath='{.items[0].metadata.labels.kubicle\.dev/ingress-isolated}')"
}
np_synced() { # TENANT: how many host policies were synced from it
  np_h get networkpolicies -n "kubicle-$1" -o name | grep -c -- '-x-'
}

# The documentation's examples (concepts/services-networking/network-policies),
# each in a namespace of its own.
np_examples() {
  cat <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: test-network-policy, namespace: ex1}
spec:
  podSelector: {matchLabels: {role: db}}
  policyTypes: [Ingress, Egress]
  ingress:
  - from:
    - ipBlock: {cidr: 172.17.0.0/16, except: [172.17.1.0/24]}
    - namespaceSelector: {matchLabels: {project: myproject}}
    - podSelector: {matchLabels: {role: frontend}}
    ports: [{protocol: TCP, port: 6379}]
  egress:
  - to: [{ipBlock: {cidr: 10.0.0.0/24}}]
    ports: [{protocol: TCP, port: 5978}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny-ingress, namespace: ex2}
spec: {podSelector: {}, policyTypes: [Ingress]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all-ingress, namespace: ex3}
spec: {podSelector: {}, ingress: [{}], policyTypes: [Ingress]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny-egress, namespace: ex4}
spec: {podSelector: {}, policyTypes: [Egress]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all-egress, namespace: ex5}
spec: {podSelector: {}, egress: [{}], policyTypes: [Egress]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: default-deny-all, namespace: ex6}
spec: {podSelector: {}, policyTypes: [Ingress, Egress]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: multi-port-egress, namespace: ex7}
spec:
  podSelector: {matchLabels: {role: db}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: 10.0.0.0/24}}]
    ports: [{protocol: TCP, port: 32000, endPort: 32768}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: by-name, namespace: ex8}
spec:
  podSelector: {matchLabels: {role: db}}
  policyTypes: [Ingress]
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ml}}
      podSelector: {matchLabels: {role: frontend}}
YAML
}

# MODE SRC DST PORT/PROTO allow|deny (netpol_eval.py's CASES). A = na's host
# namespace, B = nb's. The model's pod addresses are in 192.168.0.0/16.
np_cases() {
  local A=pod:kubicle-na B=pod:kubicle-nb
  cat <<EOF
test-network-policy-x-ex1-x-na $A/id=ex1-frontend $A/id=ex1-db 6379/TCP allow
test-network-policy-x-ex1-x-na $A/id=ex1-frontend $A/id=ex1-db 6380/TCP deny
test-network-policy-x-ex1-x-na $A/id=ex1-frontend $A/id=ex1-db 6379/UDP deny
test-network-policy-x-ex1-x-na $A/id=ex1-client $A/id=ex1-db 6379/TCP deny
test-network-policy-x-ex1-x-na $A/id=ml-frontend $A/id=ex1-db 6379/TCP allow # namespace project=myproject
test-network-policy-x-ex1-x-na $A/id=ml-client $A/id=ex1-db 6379/TCP allow
test-network-policy-x-ex1-x-na $A/id=web-frontend $A/id=ex1-db 6379/TCP deny # role=frontend of another namespace
test-network-policy-x-ex1-x-na ip:172.17.0.5 $A/id=ex1-db 6379/TCP allow
test-network-policy-x-ex1-x-na ip:172.17.1.5 $A/id=ex1-db 6379/TCP deny
test-network-policy-x-ex1-x-na $B/id=default-frontend $A/id=ex1-db 6379/TCP deny # the other tenant
test-network-policy-x-ex1-x-na $A/id=ex1-db ip:10.0.0.5 5978/TCP allow
test-network-policy-x-ex1-x-na $A/id=ex1-db ip:10.0.0.5 5979/TCP deny
test-network-policy-x-ex1-x-na $A/id=ex1-db ip:10.0.1.5 5978/TCP deny
test-network-policy-x-ex1-x-na $A/id=ex1-db $A/id=ex1-frontend 5978/TCP deny
test-network-policy-x-ex1-x-na $A/id=ex1-frontend ip:8.8.8.8 53/UDP allow # not selected
default-deny-ingress-x-ex2-x-na $A/id=ex2-client $A/id=ex2-db 80/TCP deny
default-deny-ingress-x-ex2-x-na ip:8.8.8.8 $A/id=ex2-db 80/TCP deny
default-deny-ingress-x-ex2-x-na $A/id=ex2-db ip:8.8.8.8 443/TCP allow
default-deny-ingress-x-ex2-x-na $A/id=ex1-client $A/id=ex1-db 80/TCP allow # other namespaces untouched
allow-all-ingress-x-ex3-x-na $A/id=web-frontend $A/id=ex3-db 80/TCP allow
allow-all-ingress-x-ex3-x-na ip:8.8.8.8 $A/id=ex3-db 80/TCP allow
allow-all-ingress-x-ex3-x-na $B/id=default-frontend $A/id=ex3-db 80/TCP deny # all sources: never another tenant
allow-all-ingress-x-ex3-x-na ip:192.168.200.9 $A/id=ex3-db 80/TCP deny # the pod network: not allowed to na
default-deny-egress-x-ex4-x-na $A/id=ex4-db ip:8.8.8.8 53/UDP deny
default-deny-egress-x-ex4-x-na $A/id=ex4-db $A/id=ex4-client 80/TCP deny
default-deny-egress-x-ex4-x-na $A/id=ex1-frontend $A/id=ex4-db 80/TCP allow
allow-all-egress-x-ex5-x-na $A/id=ex5-db ip:8.8.8.8 443/TCP allow
allow-all-egress-x-ex5-x-na $A/id=ex5-db $A/id=ex1-frontend 80/TCP allow
allow-all-egress-x-ex5-x-na $A/id=ex5-db $B/id=default-frontend 80/TCP deny
default-deny-all-x-ex6-x-na $A/id=ex6-db ip:8.8.8.8 443/TCP deny
default-deny-all-x-ex6-x-na $A/id=ex1-frontend $A/id=ex6-db 80/TCP deny
multi-port-egress-x-ex7-x-na $A/id=ex7-db ip:10.0.0.5 32000/TCP allow
multi-port-egress-x-ex7-x-na $A/id=ex7-db ip:10.0.0.5 32768/TCP allow
multi-port-egress-x-ex7-x-na $A/id=ex7-db ip:10.0.0.5 32769/TCP deny
multi-port-egress-x-ex7-x-na $A/id=ex7-db ip:10.0.0.5 31999/TCP deny
multi-port-egress-x-ex7-x-na $A/id=ex7-db ip:10.0.0.5 32000/UDP deny
by-name-x-ex8-x-na $A/id=ml-frontend $A/id=ex8-db 80/TCP allow
by-name-x-ex8-x-na $A/id=ml-client $A/id=ex8-db 80/TCP deny
by-name-x-ex8-x-na $A/id=ex8-frontend $A/id=ex8-db 80/TCP deny
all $B/id=default-frontend $A/id=ex3-db 80/TCP deny
all $B/id=default-frontend $A/id=ex1-db 6379/TCP deny
all $A/id=ex5-db $B/id=default-frontend 80/TCP deny
all $A/id=ex3-db $B/id=default-frontend 80/TCP deny
all ip:8.8.8.8 $B/id=default-frontend 80/TCP allow # nb's own policy opens ingress, within what the platform allows
all ip:8.8.8.8 $A/id=ex1-client 80/TCP deny # the platform's: ingress from the tenant's own pods only
all $A/id=ex2-client $A/id=ex2-db 80/TCP deny # the tenant's deny policies hold on the host too
all $A/id=ex1-client $A/id=ml-client 80/TCP allow # pods no policy isolates reach each other
all $A/id=ex1-frontend $A/id=ex1-db 6379/TCP allow
all $A/id=ex1-client $A/id=ex1-db 6379/TCP deny
all $A/id=ml-client $A/id=ex1-db 6379/TCP allow
all $A/id=ex1-db $A/id=ex1-frontend 80/TCP deny # db's egress: 10.0.0.0/24:5978 only
all $A/id=ex1-db ip:8.8.8.8 443/TCP deny
all $A/id=ex1-db pod:kube-system/k8s-app=kube-dns 53/UDP allow # what every pod needs
all $A/id=ex4-db ip:8.8.8.8 443/TCP deny
all $A/id=ex4-db $A/id=ex4-client 80/TCP deny
all $A/id=ex4-db pod:kube-system/k8s-app=kube-dns 53/UDP allow
all $A/id=ex6-db pod:kube-system/k8s-app=kube-dns 53/TCP allow
all $A/id=ex6-db $A/id=ex6-client 80/TCP deny
all $A/id=ex1-frontend $A/id=ex6-db 80/TCP deny
all $A/id=ex5-db ip:8.8.8.8 443/TCP allow
all $A/id=web-frontend $A/id=ex3-db 80/TCP allow
all ip:8.8.8.8 $A/id=ex3-db 80/TCP allow # allow-all-ingress: the world the platform allows na
all $B/id=default-frontend $B/id=default-client 80/TCP allow
all $B/id=default-frontend pod:kube-system/k8s-app=kube-dns 53/UDP allow
all $B/id=default-frontend pod:kube-system/k8s-app=kube-dns 53/TCP allow
all $B/id=default-frontend pod:kube-system/k8s-app=kube-dns 80/TCP deny
all $B/id=default-frontend pod:kube-system/app=other 53/UDP deny
all $B/id=default-frontend ip:8.8.8.8 443/TCP allow
all $B/id=default-frontend ip:10.0.0.5 443/TCP deny # private networks: not by default
all $B/id=default-frontend ip:169.254.169.254 80/TCP deny # cloud metadata
all $B/id=default-frontend ip:192.168.1.1 80/TCP deny
all $A/id=ex1-db ip:10.0.0.5 5978/TCP allow
EOF
}

np_eval() { # CASES-FILE
  np_h get networkpolicies -A -o json >"$E2E_TMP/np-pols.json"
  np_h get pods -A -o json >"$E2E_TMP/np-pods.json"
  np_h get namespaces -o json >"$E2E_TMP/np-ns.json"
  python3 "$E2E_LIB_DIR/netpol_eval.py" "$E2E_TMP/np-pols.json" "$E2E_TMP/np-pods.json" \
    "$E2E_TMP/np-ns.json" "$1"
}

netpol_setup() {
  export KUBICLE_HOME=$E2E_TMP/nphome
  start_server nphost --standin-exec || return 1
  NP_HOST_KCFG=$KCFG
  # the platform lets tenant na reach 10.0.0.0/8 and 172.16.0.0/12 (the
  # examples' ipBlocks), not the pod network 192.168.0.0/16; nb has the defaults
  "$KUBICLE" create na --host-kubeconfig "$NP_HOST_KCFG" --egress 0.0.0.0/0 \
    --egress-except 192.168.0.0/16 --wait >/dev/null || return 1
  np_keep na
  "$KUBICLE" create nb --host-kubeconfig "$NP_HOST_KCFG" --wait >/dev/null || return 1
  np_keep nb
  np_h apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec: {containers: [{name: c, image: coredns}]}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: kube-system, labels: {app: other}}
spec: {containers: [{name: c, image: busybox}]}
YAML
}

netpol_examples() {
  echo "== netpol: the documentation's examples on the host"
  local n ns
  {
    for n in 1 2 3 4 5 6 7 8; do echo "{apiVersion: v1, kind: Namespace, metadata: {name: ex$n}}"; echo ---; done
    echo "{apiVersion: v1, kind: Namespace, metadata: {name: ml, labels: {project: myproject}}}"; echo ---
    echo "{apiVersion: v1, kind: Namespace, metadata: {name: web, labels: {project: other}}}"; echo ---
    for ns in ex1 ex2 ex3 ex4 ex5 ex6 ex7 ex8 ml web; do
      np_pod $ns db 'role: db'; np_pod $ns frontend 'role: frontend'; np_pod $ns client 'app: client'
    done
  } | np_k na apply -f - >/dev/null
  np_k na apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: forger, namespace: ex2, labels: {kubicle.dev/ingress-isolated: "false", kubicle.dev/tenant: nb}}
spec: {containers: [{name: c, image: busybox}]}
YAML
  { np_pod default frontend 'role: frontend'; np_pod default client 'app: client'; } |
    np_k nb apply -f - >/dev/null
  np_examples | np_k na apply -f - >/dev/null
  # the other tenant's own policy: all ingress, all egress
  np_k nb apply -f - >/dev/null <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: open, namespace: default}
spec: {podSelector: {}, ingress: [{}], egress: [{}], policyTypes: [Ingress, Egress]}
YAML
  wait_for "the examples reach the host" 60 out_is 8 np_synced na
  wait_for "the tenants' pods reach the host" 90 out_is 33 \
    sh -c "kubectl --kubeconfig $NP_HOST_KCFG get pods -A -l kubicle.dev/tenant -o name | wc -l"
  wait_for "nb's policy reaches the host" 60 out_is 1 np_synced nb
  wait_for "the syncer marks the pods the examples isolate" 90 out_is "true true false" \
    np_marks
  expect_eq "a tenant cannot set its pods' isolation or tenant labels on the host" "true na" \
    np_h get pod forger-x-ex2-x-na -n kubicle-na -o jsonpath='{.metadata.labels.kubicle\.dev/ingress-isolated} {.metadata.labels.kubicle\.dev/tenant}'
  np_cases >"$E2E_TMP/np-cases"
  local out
  out=$(np_eval "$E2E_TMP/np-cases" 2>&1)
  local good bad
  good=$(grep -c '^ok' <<<"$out"); bad=$(grep -c '^FAIL' <<<"$out")
  if [ "$bad" = 0 ] && [ "$good" -ge 50 ]; then
    pass "each documentation example allows on the host what the documentation says, within the platform's limits; no traffic between tenants ($good cases)"
  else fail "host policies against the model: $(grep -v '^ok' <<<"$out" | head -c 1500)"; fi
}

netpol_lifecycle() {
  echo "== netpol: updates and deletes follow the tenant"
  np_k na -n ex1 patch networkpolicy test-network-policy --type merge \
    -p '{"spec":{"ingress":[{"from":[{"podSelector":{"matchLabels":{"role":"client"}}}]}]}}' >/dev/null
  expect_until "an update of the tenant policy reaches the host policy" "client" \
    np_h get networkpolicy test-network-policy-x-ex1-x-na -n kubicle-na \
    -o jsonpath='{.spec.ingress[0].from[0].podSelector.matchLabels.role}'
  expect_eq "... with the ports it no longer has removed" "" \
    np_h get networkpolicy test-network-policy-x-ex1-x-na -n kubicle-na -o jsonpath='{.spec.ingress[0].ports}'
  np_k na label namespace web project=myproject --overwrite >/dev/null
  np_k na -n ex1 apply -f - >/dev/null <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: projects, namespace: ex1}
spec:
  podSelector: {}
  ingress: [{from: [{namespaceSelector: {matchLabels: {project: myproject}}}]}]
YAML
  expect_until "a namespaceSelector lists the tenant's namespaces it matches" "ml web" \
    np_h get networkpolicy projects-x-ex1-x-na -n kubicle-na \
    -o jsonpath='{.spec.ingress[0].from[0].podSelector.matchExpressions[0].values[*]}'
  np_k na label namespace web project- >/dev/null
  expect_until "a namespace relabelled: the host policy follows" "ml" \
    np_h get networkpolicy projects-x-ex1-x-na -n kubicle-na \
    -o jsonpath='{.spec.ingress[0].from[0].podSelector.matchExpressions[0].values[*]}'
  np_h delete networkpolicy default-deny-all-x-ex6-x-na -n kubicle-na >/dev/null
  expect_until "a host policy deleted on the host is made again" "default-deny-all-x-ex6-x-na" \
    np_h get networkpolicy default-deny-all-x-ex6-x-na -n kubicle-na -o jsonpath='{.metadata.name}'
  np_k na -n ex6 delete networkpolicy default-deny-all >/dev/null
  expect_until "a tenant policy deleted: its host policy goes" "" \
    sh -c "kubectl --kubeconfig $NP_HOST_KCFG get networkpolicy -n kubicle-na -o name | grep default-deny-all"
  E2E_UNTIL=60 expect_until "a pod no policy isolates any more is marked so" "false" \
    np_h get pods -n kubicle-na -l id=ex6-client -o jsonpath='{.items[0].metadata.labels.kubicle\.dev/ingress-isolated}'
  expect_eq "the platform's policies stay" "kubicle-na-egress kubicle-na-ingress kubicle-na-isolation" \
    sh -c "echo \$(kubectl --kubeconfig $NP_HOST_KCFG get networkpolicy -n kubicle-na -o name | grep -v -- -x- | sed 's|.*/||')"
  "$KUBICLE" delete na >/dev/null
  "$KUBICLE" delete nb >/dev/null
  expect_eq "delete: no NetworkPolicy of either tenant is left" "" \
    np_h get networkpolicies -A -l kubicle.dev/tenant -o name
}

# The tenant DNS answers its own pods only (proxy/dns/dns_clients.c): a
# pod's address as the store has it may ask, another address is REFUSED,
# over UDP and TCP; loopback (the machine's own tools) may.
np_dig() { # SOURCE-ADDRESS PORT [DIG-ARGS...]: the status of one query
  local src=$1 p=$2; shift 2
  dig +tries=1 +timeout=3 -b "$src" @127.0.0.1 -p "$p" "$@" kubernetes.default.svc.cluster.local |
    awk '/->>HEADER<<-/ {gsub(",", "", $6); print $6}'
}

netpol_dns() {
  echo "== netpol: the tenant DNS answers its own pods"
  command -v dig >/dev/null || { fail "netpol: dig is not installed (bind9-dnsutils)"; return; }
  start_server npdns --dns-listen 127.0.0.1:0 --dns-upstream none || { fail "netpol: dns server"; return; }
  local P; P=$(dns_port "$E2E_TMP/npdns.log") || { fail "netpol: dns port"; return; }
  local K=(kubectl --kubeconfig "$KCFG")
  "${K[@]}" apply -f <(np_pod default mine 'app: x') >/dev/null
  "${K[@]}" patch pod mine --subresource status --type merge \
    -p '{"status":{"podIP":"127.0.0.6","podIPs":[{"ip":"127.0.0.6"}]}}' >/dev/null
  expect_until "a pod of the tenant's address asks: answered" "NOERROR" np_dig 127.0.0.6 "$P"
  expect_eq "... over TCP too" "NOERROR" np_dig 127.0.0.6 "$P" +tcp
  expect_eq "another address (another tenant's pod): REFUSED" "REFUSED" np_dig 127.0.0.7 "$P"
  expect_eq "... over TCP too" "REFUSED" np_dig 127.0.0.7 "$P" +tcp
  expect_eq "loopback: answered" "NOERROR" np_dig 127.0.0.1 "$P"
  "${K[@]}" delete pod mine --grace-period 0 >/dev/null 2>&1
  expect_until "the pod gone, its address is refused" "REFUSED" np_dig 127.0.0.6 "$P"
  start_server npdnsany --dns-listen 127.0.0.1:0 --dns-upstream none --dns-clients any ||
    { fail "netpol: dns server (any)"; return; }
  P=$(dns_port "$E2E_TMP/npdnsany.log") || { fail "netpol: dns port (any)"; return; }
  expect_eq "--dns-clients any: anyone is answered" "NOERROR" np_dig 127.0.0.7 "$P"
}

netpol_suite() {
  netpol_setup || { fail "netpol: host stand-in or tenants did not start"; return; }
  netpol_examples
  netpol_lifecycle
  netpol_dns
}
