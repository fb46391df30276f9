#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Syncer benchmark: a host stand-in and a tenant syncing to it with the host
# rate limit off (--host-qps -1); 1,000 pods created in the tenant.
# Reports create -> host pod exists p50/p99, sustained pods/s, and the
# syncer's added memory per synced pod (tenant RSS with the syncer minus a
# plain tenant holding the same pods, divided by the pod count).
#   bench/sync.sh [BUILD_DIR] [PODS] [CLIENTS]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}; N=${2:-1000}; C=${3:-8}
K=$PWD/$B/cmd/kubicle
tmp=$(mktemp -d /tmp/kubicle-sync-bench.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
serve() { # dir args...
  local d=$1; shift
  "$K" serve --data-dir "$tmp/$d" --listen 127.0.0.1:0 --log-level warn "$@" >"$tmp/$d.log" 2>&1 &
  pids+=($!); eval "${d}_pid=$!"
  for _ in $(seq 200); do [ -s "$tmp/$d/kubeconfig" ] && break; sleep 0.05; done
}
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
serve host
kubectl --kubeconfig "$tmp/host/kubeconfig" create ns tenants >/dev/null
serve tenant --host-kubeconfig "$tmp/host/kubeconfig" --host-namespace tenants --tenant bench \
  --queue q --host-qps -1
serve plain
python3 bench/sync.py "$tmp/tenant" "$tmp/host" "$N" "$C" "$tenant_pid" "$host_pid"
# the same pods in a tenant without a host, for the memory comparison
python3 - "$tmp/plain" "$N" <<'PY'
import http.client, json, re, ssl, sys, urllib.parse
d, n = sys.argv[1], int(sys.argv[2])
kc = open(f"{d}/kubeconfig").read()
u = urllib.parse.urlparse(re.search(r'server:\s*"?([^\s"]+)', kc).group(1))
ctx = ssl.create_default_context(cafile=f"{d}/ca.crt"); ctx.load_cert_chain(f"{d}/admin.crt", f"{d}/admin.key")
k = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
for i in range(n):
    k.request("POST", "/api/v1/namespaces/default/pods", json.dumps({"apiVersion": "v1", "kind": "Pod",
              "metadata": {"name": f"b-{i}"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
              {"Content-Type": "application/json"}); k.getresponse().read()
PY
sleep 1
a=$(rss_kib "$tenant_pid"); b=$(rss_kib "$plain_pid")
echo "tenant RSS with syncer ${a} KiB, plain tenant ${b} KiB: syncer adds $(( (a - b) * 1024 / N )) bytes per synced pod"
