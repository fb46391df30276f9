#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where a request's CPU goes: `perf record` of a server under load (server
# on core 0, bench/loadgen on core 1, 16 connections), then the share of
# each library and of the kernel, and the hottest functions. Pairs with
# bench/instructions.sh (instructions per request, repeatable on a busy
# machine); this one sees the kernel too.
#
#   bench/profile.sh get      # GET one pod with the admin's client certificate
#   bench/profile.sh token    # the same GET with a service account's token
#   bench/profile.sh post     # creates of bench/pod-train.json (POD=... for another)
#
# Environment: BUILD (default build-bench), SECS (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-bench}
KIND=${1:-get}
SECS=${SECS:-5}
command -v perf >/dev/null || { echo "profile.sh: needs perf" >&2; exit 1; }
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle bench/loadgen >/dev/null
if [ "$(nproc)" -ge 2 ]; then SRV="taskset -c 0"; CLI="taskset -c 1"; else SRV=""; CLI=""; fi
d=$(mktemp -d /tmp/kubicle-profile.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$d"; }
trap cleanup EXIT
$SRV "$BUILD/cmd/kubicle" serve --data-dir "$d/k" --listen 127.0.0.1:0 >"$d/log" 2>&1 &
pid=$!
for _ in $(seq 300); do [ -s "$d/k/kubeconfig" ] && break; sleep 0.05; done
port=$(sed -n 's/.*server: *"\{0,1\}https:\/\/[^:]*:\([0-9]*\).*/\1/p' "$d/k/kubeconfig")
c=(curl -sS -A kubicle-bench --cacert "$d/k/ca.crt" --cert "$d/k/admin.crt" --key "$d/k/admin.key"
  -H 'Content-Type: application/json')
url=https://127.0.0.1:$port
sed 's/@NAME@/bench-get/' bench/pod-train.json | "${c[@]}" -o /dev/null --data-binary @- \
  "$url/api/v1/namespaces/default/pods"
auth=(--cert "$d/k/admin.crt" --key "$d/k/admin.key")
load=(-u /api/v1/namespaces/default/pods/bench-get)
case $KIND in
get) ;;
token)
  "${c[@]}" -o /dev/null -d '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"bench"}}' \
    "$url/api/v1/namespaces/default/serviceaccounts"
  "${c[@]}" -o /dev/null -d '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"bench"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"ServiceAccount","name":"bench","namespace":"default"}]}' \
    "$url/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
  tok=$("${c[@]}" -d '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":86400}}' \
    "$url/api/v1/namespaces/default/serviceaccounts/bench/token" | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')
  auth=(--token "$tok")
  ;;
post) load=(-m POST -u /api/v1/namespaces/default/pods --body "${POD:-bench/pod-train.json}"
  --expect 201 --name-prefix c) ;;
*) echo "profile.sh: get, token or post" >&2; exit 2 ;;
esac
$CLI "$BUILD/bench/loadgen" -p "$port" "${auth[@]}" -c 16 -w 1 -d $((SECS + 2)) "${load[@]}" \
  >"$d/lg.out" &
lg=$!
sleep 1.5
perf record -F 2000 -g -p "$pid" -o "$d/perf.data" -- sleep "$SECS" >/dev/null 2>&1
wait "$lg"
echo "load: $(cat "$d/lg.out")"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "-- share of the server's CPU by library (kernel: system calls, TCP, the page cache)"
perf report -i "$d/perf.data" --no-children --stdio --sort dso -g none 2>/dev/null |
  grep -E '^ +[0-9.]+%' | head -10
echo "-- hottest functions"
perf report -i "$d/perf.data" --no-children --stdio --sort dso,sym -g none 2>/dev/null |
  grep -E '^ +[0-9.]+%' | head -25
