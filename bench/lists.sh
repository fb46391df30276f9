#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Large lists (issue 29, items 1 and 5): N ConfigMaps of ~1 KiB are created
# in `default` through the API (bench/loadgen, 8 connections), then:
#   - the first page (?limit=500), cluster-wide and in the namespace:
#     loadgen, 1 connection, 4 s after 1 s of warm-up (p50 / p99);
#   - an unpaginated cluster-wide list, three times: its time (curl) and the
#     server's peak RSS above its RSS before (VmHWM after clear_refs 5), then
#     its RSS 3 s later.
#
#   bench/lists.sh BUILD_DIR [N]     (default N 50000)
# A data dir made once is reused from $LISTS_DATA (default /tmp/kubicle-lists-N);
# $LOADGEN names another loadgen (a build of an older tree without one).
set -eu
BUILD=$(readlink -f "${1:?usage: lists.sh BUILD_DIR [N]}")
N=${2:-50000}
BIN=$BUILD/cmd/kubicle LG=${LOADGEN:-$BUILD/bench/loadgen}
DATA=${LISTS_DATA:-/tmp/kubicle-lists-$N}
start() {
  rm -f "$DATA/kubeconfig"
  "$BIN" serve --data-dir "$DATA" --listen 127.0.0.1:0 >>"$DATA.log" 2>&1 &
  PID=$!
  for _ in $(seq 200); do [ -s "$DATA/kubeconfig" ] && break; sleep 0.1; done
  URL=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$DATA/kubeconfig")
  PORT=${URL##*:}
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; }
if [ ! -e "$DATA/kubicle.db" ]; then
  body=$(mktemp)
  python3 -c "import json; print(json.dumps({'apiVersion':'v1','kind':'ConfigMap','metadata':{'name':'@NAME@'},'data':{'v':'x'*1000}}))" >"$body"
  start
  # loadgen runs for a time: enough of it to pass N creates (~2,000/s here)
  while :; do
    have=$(curl -sS --cacert "$DATA/ca.crt" --cert "$DATA/admin.crt" --key "$DATA/admin.key" \
      "$URL/api/v1/namespaces/default/configmaps?limit=1" |
      python3 -c 'import json,sys; m=json.load(sys.stdin)["metadata"]; print(m.get("remainingItemCount", 0) + 1)' 2>/dev/null || echo 0)
    [ "$have" -ge "$N" ] && break
    round=$((${round:-0} + 1)) # names of each run apart (loadgen names P-<conn>-<seq>)
    "$LG" -p "$PORT" --cert "$DATA/admin.crt" --key "$DATA/admin.key" -c 8 -d 5 -w 0 -m POST \
      -u /api/v1/namespaces/default/configmaps --body "$body" --expect 201 --name-prefix "lg$round" | tail -1
  done
  stop
  rm -f "$body"
fi
start
sleep 2
for p in "/api/v1/configmaps?limit=500" "/api/v1/namespaces/default/configmaps?limit=500"; do
  echo "first page $p: $("$LG" -p "$PORT" --cert "$DATA/admin.crt" --key "$DATA/admin.key" -c 1 -d 4 -w 1 -u "$p" 2>&1 | tail -1)"
done
for i in 1 2 3; do
  echo 5 >"/proc/$PID/clear_refs"
  r0=$(awk '/VmRSS/ {print $2}' "/proc/$PID/status")
  t=$(curl -A bench -sS --cacert "$DATA/ca.crt" --cert "$DATA/admin.crt" --key "$DATA/admin.key" \
    -o /dev/null -w '%{time_total} s, %{size_download} bytes' "$URL/api/v1/configmaps")
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
  sleep 3
  r1=$(awk '/VmRSS/ {print $2}' "/proc/$PID/status")
  echo "unpaginated list $i: $t; RSS before $((r0 / 1024)) MB, peak +$(((hwm - r0) / 1024)) MB, 3 s after $((r1 / 1024)) MB"
done
stop
