#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# 100 CRDs installed in one tenant: time from the first create until every
# resource is served (its list answers 200), and the memory they add (PSS of
# the server before and after, from /proc/PID/smaps_rollup).
# Usage: bench/crd.sh [PATH/TO/kubicle]   (env: N=100 CRDs)
set -eu
here=$(dirname "$(readlink -f "$0")")
root=$(dirname "$here")
KUBICLE=${1:-$root/build-bench/cmd/kubicle}
N=${N:-100}
[ -x "$KUBICLE" ] || { (cd "$root" && (test -d build-bench || meson setup build-bench -Dbuildtype=release >/dev/null) && ninja -C build-bench >/dev/null); KUBICLE=$root/build-bench/cmd/kubicle; }
tmp=$(mktemp -d /tmp/kubicle-crd-bench.XXXXXX)
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

"$KUBICLE" serve --data-dir "$tmp/d" --listen 127.0.0.1:0 >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -s "$tmp/d/kubeconfig" ] && break; sleep 0.05; done
url=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$tmp/d/kubeconfig")
C=(curl -sS --cacert "$tmp/d/ca.crt" --cert "$tmp/d/admin.crt" --key "$tmp/d/admin.key")
pss() { awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup"; }

# one CRD per group, with a small structural schema and printer columns
for i in $(seq "$N"); do
  cat >"$tmp/crd-$i.json" <<JSON
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"things$i.g$i.bench.io"},
 "spec":{"group":"g$i.bench.io","scope":"Namespaced",
  "names":{"plural":"things$i","kind":"Thing$i","shortNames":["t$i"]},
  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "additionalPrinterColumns":[{"name":"Size","type":"integer","jsonPath":".spec.size"}],
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"size":{"type":"integer","minimum":0,"default":1},
     "name":{"type":"string","maxLength":63},"tags":{"type":"array","items":{"type":"string"}}}},
    "status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}}}]}}
JSON
done
"${C[@]}" -o /dev/null "$url/api/v1/namespaces/default/pods"
sleep 0.5
before=$(pss)
# all creates on one kept-alive TLS connection (a curl config with `next`;
# options reset at each `next`, so every block repeats the client cert)
tls=$(printf 'cacert = "%s/d/ca.crt"\ncert = "%s/d/admin.crt"\nkey = "%s/d/admin.key"' "$tmp" "$tmp" "$tmp")
for i in $(seq "$N"); do
  printf '%s\nurl = "%s/apis/apiextensions.k8s.io/v1/customresourcedefinitions"\nrequest = "POST"\nheader = "Content-Type: application/json"\ndata-binary = "@%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\nnext\n' \
    "$tls" "$url" "$tmp/crd-$i.json"
done | sed '$d' >"$tmp/create.cfg"
for i in $(seq "$N"); do
  printf '%s\nurl = "%s/apis/g%d.bench.io/v1/namespaces/default/things%d"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\nnext\n' "$tls" "$url" "$i" "$i"
done | sed '$d' >"$tmp/list.cfg"
t0=$(date +%s.%N)
created=$(curl -sS -K "$tmp/create.cfg" | grep -c '^201$' || true)
t1=$(date +%s.%N)
until [ "$(curl -sS -K "$tmp/list.cfg" | grep -c '^200$')" = "$N" ]; do sleep 0.01; done
t2=$(date +%s.%N)
sleep 0.5
after=$(pss)
est=$("${C[@]}" "$url/apis/apiextensions.k8s.io/v1/customresourcedefinitions" |
  grep -o '"type":"Established","status":"True"\|"status":"True","type":"Established"\|"type": "Established"' | wc -l)
"${C[@]}" -o "$tmp/disc.json" -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' "$url/apis"
groups=$(grep -o '"name":"g[0-9]*\.bench\.io"' "$tmp/disc.json" | sort -u | wc -l)
t3=$(date +%s.%N)
"${C[@]}" -o /dev/null "$url/openapi/v3"
t4=$(date +%s.%N)
awk -v n="$N" -v t0="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v t4="$t4" -v b="$before" -v a="$after" \
    -v est="$est" -v c="$created" -v g="$groups" 'BEGIN {
  printf "CRDs created:                 %d of %d (one kept-alive TLS connection, sequential)\n", c, n
  printf "create, all %d:              %.0f ms (%.2f ms per CRD)\n", n, (t1-t0)*1000, (t1-t0)*1000/n
  printf "first create -> all %d lists answer 200: %.0f ms\n", n, (t2-t0)*1000
  printf "Established in status:        %d / %d;  groups in aggregated discovery: %d\n", est, n, g
  printf "PSS before / after:           %d KiB / %d KiB  (+%d KiB, %.1f KiB per CRD)\n", b, a, a-b, (a-b)/n
  printf "GET /openapi/v3 (root, %d CRD groups): %.0f ms\n", n, (t4-t3)*1000
}'
