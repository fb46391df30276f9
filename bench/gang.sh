#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Gang benchmark: a host stand-in (plain kubicle serve, with the PodGroup
# CRDs of tests/host/gang.py; no scheduler: what is timed is the syncer) and
# a KAI-profile tenant syncing to it with the host rate limit off; N Jobs of
# 8 pods made in the tenant, first ungrouped, then as gangs (Indexed,
# completions = parallelism). Reports Job create -> all host objects
# present (8 pods, and the PodGroup for a gang) p50/p99 (bench/gang.py).
#   bench/gang.sh [BUILD_DIR] [JOBS] [CLIENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}; N=${2:-100}; C=${3:-4}
K=$PWD/$B/cmd/kubicle
tmp=$(mktemp -d /tmp/kubicle-gang-bench.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
serve() { # dir args...
  local d=$1; shift
  "$K" serve --data-dir "$tmp/$d" --listen 127.0.0.1:0 --log-level warn "$@" >"$tmp/$d.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do [ -s "$tmp/$d/kubeconfig" ] && break; sleep 0.05; done
}
serve host
kubectl --kubeconfig "$tmp/host/kubeconfig" create ns tenants >/dev/null
python3 -c 'import json, sys; sys.path.insert(0, "tests/host"); import gang
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": gang.CRDS}))' |
  kubectl --kubeconfig "$tmp/host/kubeconfig" apply -f - >/dev/null
serve tenant --host-kubeconfig "$tmp/host/kubeconfig" --host-namespace tenants --tenant bench \
  --queue q --scheduler "${GANG_BENCH_PROFILE:-kai}" --host-qps -1
python3 bench/gang.py "$tmp/tenant" "$tmp/host" "$N" "$C"
