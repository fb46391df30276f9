#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The operator at scale (issue 28): N (200) Tenants created at once (one
# `kubectl apply` of a List) on a host stand-in, `kubicle operator` running
# as a local process with the host's kubeconfig and the test kubelet
# (tests/host/kubelet.py) running each tenant's server pod as a local
# `kubicle serve`. Prints the time from the apply until every Tenant is
# Ready (its server answered /readyz and the operator saw it), the time to
# delete them all (finalizers: every host object gone), and the operator's
# CPU time and peak RSS over the run. Measurements, not tests.
#
#   bench/operator.sh                 # 200 tenants, real servers
#   N=50 bench/operator.sh            # fewer
#   FAKE=1 bench/operator.sh          # pods reported Ready, no servers: the
#                                     # operator and the host alone
#
# Environment: BUILD (default build-bench), N, FAKE=1, KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-bench}
N=${N:-200}
FAKE=${FAKE:-0}

(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle tests/host/kubicle-standin >/dev/null
KUBICLE=$ROOT/$BUILD/cmd/kubicle
STANDIN=$ROOT/$BUILD/tests/host/kubicle-standin
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kubicle-opbench.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

"$STANDIN" --data-dir "$WORK/host" --listen 127.0.0.1:0 >"$WORK/host.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 600); do [ -s "$WORK/host/kubeconfig" ] && break; sleep 0.05; done
H=(kubectl --kubeconfig "$WORK/host/kubeconfig")
TMPDIR=$WORK "$KUBICLE" operator --host-kubeconfig "$WORK/host/kubeconfig" --namespace default \
  --log-level warn >"$WORK/operator.log" 2>&1 &
OP=$!
PIDS+=("$OP")
for _ in $(seq 300); do "${H[@]}" get --raw /apis/kubicle.dev/v1/tenants >/dev/null 2>&1 && break; sleep 0.1; done
python3 tests/host/kubelet.py --data-dir "$WORK/host" --kubicle "$KUBICLE" --root "$WORK/kubelet" \
  --interval 0.2 $([ "$FAKE" = 1 ] && echo --fake) >"$WORK/kubelet.log" 2>&1 &
PIDS+=($!)

cpu() { # utime + stime of the operator, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$OP/stat"
}
ready_count() {
  "${H[@]}" get tenants -o json |
    jq '[.items[] | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length'
}

{
  echo '{"apiVersion":"v1","kind":"List","items":['
  for i in $(seq "$N"); do
    [ "$i" -gt 1 ] && echo ,
    printf '{"apiVersion":"kubicle.dev/v1","kind":"Tenant","metadata":{"name":"b%d"},"spec":{"scheduler":"none"}}' "$i"
  done
  echo ']}'
} >"$WORK/tenants.json"

cpu0=$(cpu)
t0=$(date +%s.%N)
"${H[@]}" apply -f "$WORK/tenants.json" >/dev/null
while [ "$(ready_count)" -lt "$N" ]; do sleep 0.5; done
t1=$(date +%s.%N)
cpu1=$(cpu)
"${H[@]}" delete tenants --all --wait=true --timeout=1200s >/dev/null
t2=$(date +%s.%N)
cpu2=$(cpu)
hwm=$(awk '/VmHWM/ {print $2 / 1024}' "/proc/$OP/status")
rss=$(awk '/VmRSS/ {print $2 / 1024}' "/proc/$OP/status")
mode=$([ "$FAKE" = 1 ] && echo "pods reported Ready, no servers" || echo "each a kubicle serve")
printf 'tenants: %d (%s), %d cores\n' "$N" "$mode" "$(nproc)"
printf 'create -> all Ready:    %6.1f s   operator CPU %6.2f s\n' "$(echo "$t1 - $t0" | bc)" "$(echo "$cpu1 - $cpu0" | bc)"
printf 'delete -> all gone:     %6.1f s   operator CPU %6.2f s\n' "$(echo "$t2 - $t1" | bc)" "$(echo "$cpu2 - $cpu1" | bc)"
printf 'operator RSS: peak %.1f MiB, now %.1f MiB\n' "$hwm" "$rss"
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
# the reference: the run before the StatefulSet watch and the Lease thread
# (2 s status polls), 2 cores shared, load 17-27
echo 'reference (N=200, polls, load 17-27): all Ready 233 s (FAKE=1: 58.6 s), operator CPU 17 ms a tenant, peak RSS 14.4 MiB'
