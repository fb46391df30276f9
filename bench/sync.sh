#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Syncer benchmark: a host stand-in and a tenant syncing to it with the host
# rate limit off (--host-qps -1); 1,000 pods created in the tenant.
# Reports create -> host pod exists p50/p99, sustained pods/s, and the
# syncer's added memory per synced pod (tenant RSS with the syncer minus a
# plain tenant holding the same pods, divided by the pod count). References
# with the same client: the host stand-in alone and a tenant without a host.
# With PROFILE=callgrind the tenant and the plain tenant run under valgrind's
# callgrind (counters zeroed before the creates): it prints instructions per
# pod of each and their difference, the syncer's instructions per synced pod
# (rates and latencies are then meaningless; use few pods, e.g. 300 1).
# With SYNC_RATE=R (SYNC_SECS=S, default 5) the load is open instead: R*S
# creates paced at R per second by bench/loadgen -r over CLIENTS connections
# (PODS is ignored), each timed from when it was due (bench/sync.py).
#   bench/sync.sh [BUILD_DIR] [PODS] [CLIENTS]
#   SYNC_RATE=2000 bench/sync.sh [BUILD_DIR] - [CONNECTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}; N=${2:-1000}; C=${3:-8}
case $B in /*) K=$B/cmd/kubicle ;; *) K=$PWD/$B/cmd/kubicle ;; esac
export SYNC_LOADGEN=${K%/cmd/kubicle}/bench/loadgen
# the open load's client and the host watcher (bench/watchstamp, sync.py)
[ -x "$SYNC_LOADGEN" ] && [ -x "${SYNC_LOADGEN%/*}/watchstamp" ] ||
  ninja -C "${K%/cmd/kubicle}" bench/loadgen bench/watchstamp >/dev/null
if [ -n "${SYNC_RATE:-}" ]; then
  N=$(awk -v r="$SYNC_RATE" -v s="${SYNC_SECS:-5}" 'BEGIN {printf "%d", r * s}')
fi
tmp=$(mktemp -d /tmp/kubicle-sync-bench.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
serve() { # dir args...
  local d=$1 vg=(); shift
  [ "${PROFILE:-}" = callgrind ] && [ "$d" != host ] &&
    vg=(valgrind --tool=callgrind --callgrind-out-file="$tmp/$d.cg")
  "${vg[@]}" "$K" serve --data-dir "$tmp/$d" --listen 127.0.0.1:0 --log-level warn "$@" >"$tmp/$d.log" 2>&1 &
  pids+=($!); eval "${d}_pid=$!"
  for _ in $(seq 1200); do [ -s "$tmp/$d/kubeconfig" ] && break; sleep 0.05; done
}
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
serve host
kubectl --kubeconfig "$tmp/host/kubeconfig" create ns tenants >/dev/null
serve tenant --host-kubeconfig "$tmp/host/kubeconfig" --host-namespace tenants --tenant bench \
  --queue q --host-qps -1
serve plain
# the syncer's start-up (a list and a watch per informer, each on a new TLS
# connection to the host) is not per pod: wait until its host pod informer
# watches, and under callgrind (slow) a little longer for the informers that
# start after it, before counting
for _ in $(seq 600); do
  kubectl --kubeconfig "$tmp/tenant/kubeconfig" get --raw /metrics 2>/dev/null |
    grep -q '^kubicle_syncer_host_up 1' && break
  sleep 0.1
done
[ "${PROFILE:-}" = callgrind ] && sleep 3
# the plain tenant gets the same N pods (the tenant-alone reference run), for
# the memory comparison
[ "${PROFILE:-}" = callgrind ] && callgrind_control -z "$tenant_pid" >/dev/null 2>&1 &&
  callgrind_control -z "$plain_pid" >/dev/null 2>&1
SYNC_CALLGRIND=$([ "${PROFILE:-}" = callgrind ] && echo 1 || echo 0) \
  python3 bench/sync.py "$tmp/tenant" "$tmp/host" "$N" "$C" "$tenant_pid" "$host_pid" \
  "$tmp/plain" "$plain_pid"
sleep 1
if [ "${PROFILE:-}" = callgrind ]; then
  ir() { # pid -> instructions since the zeroing, dumped by sync.py after its phase
    awk '/^summary:/ {print $2}' "$tmp/$2.cg.1"
  }
  incl() { # FILE FUNCTION-REGEX -> inclusive instructions of the first match
    callgrind_annotate --inclusive=yes "$tmp/$1.cg.1" 2>/dev/null |
      awk -v f="$2" '$0 ~ f && !r {gsub(",", "", $1); r = $1} END {print r + 0}'
  }
  a=$(ir "$tenant_pid" tenant); b=$(ir "$plain_pid" plain)
  # the syncer's timed resync (every 30 s whatever the load): not per pod
  r=$(incl tenant 'syncer.c:on_resync_timer ')
  # new TLS connections to the host: curl's TLS context, the handshake, and
  # the PEM it decodes per connection when given blobs (key, certificate,
  # CA bundle); libcurl's shared OpenSSL only (our static one has the same
  # names, on the tenant's server side); how many varies from run to run
  t=0
  for f in SSL_connect SSL_CTX_new PEM_read_bio_PrivateKey PEM_read_bio_X509_AUX \
    PEM_X509_INFO_read_bio; do
    t=$((t + $(incl tenant "[?]:$f .*/lib[a-z]*[.]so")))
  done
  a=$((a - r))
  # how many: the calls of SSL_CTX_new (curl makes one per new connection)
  nc=$(callgrind_annotate --tree=caller --threshold=100 --auto=no "$tmp/tenant.cg.1" 2>/dev/null |
    awk '/^ *[0-9,]+ .*< / {sub(/.*\(/, ""); sub(/x\).*/, ""); gsub(",", ""); n += $0; next}
      /\* +[?]+:SSL_CTX_new \[/ {t += n} {n = 0} END {print t + 0}')
  echo "instructions per pod: syncing tenant $((a / N)) (its timed resyncs, $((r / N))" \
    "per pod, left out), plain tenant $((b / N)): the syncer's $(((a - b) / N)) per synced pod," \
    "of which $((t / N)) setting up TLS connections to the host: $(((a - b - t) / N)) without"
  echo "new TLS connections to the host during the $N pods: $nc ($((t / (nc ? nc : 1)))" \
    "instructions each)"
  [ "${KEEP:-0}" = 1 ] && trap - EXIT && echo "kept $tmp (servers still run: ${pids[*]})"
  exit 0
fi
a=$(rss_kib "$tenant_pid"); b=$(rss_kib "$plain_pid")
echo "tenant RSS with syncer ${a} KiB, plain tenant ${b} KiB: syncer adds $(( (a - b) * 1024 / N )) bytes per synced pod"
