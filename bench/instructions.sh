#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per request, counted by valgrind's callgrind: repeatable where
# wall-clock figures swing with the host (bench/README.md, fourteenth
# session). The server runs under callgrind; after a warm-up its counters
# are zeroed, 4 connections load it for 10 s, the counters are dumped, and
# the instructions are divided by the responses.
#
#   bench/instructions.sh              # GET one pod, then POST a 2 KiB pod
#   bench/instructions.sh get          # one of them
#   BUILD=other-build bench/instructions.sh   # another build (default build-bench)
#   CONNS=1 bench/instructions.sh post        # one connection: one create per commit, the
#                                             # count the same from run to run (default 4;
#                                             # SECS: seconds of load, default 10)
#
# To compare two commits, build each in its own checkout and run this in each.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-bench}
WHAT=${*:-get post}
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind" >&2; exit 1; }
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle bench/loadgen >/dev/null
LOADGEN=$ROOT/$BUILD/bench/loadgen

# measure KIND: prints "KIND: N instructions per response (R responses)"
measure() {
  local kind=$1 d pid port i
  d=$(mktemp -d /tmp/kubicle-instr.XXXXXX)
  valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$ROOT/$BUILD/cmd/kubicle" serve \
    --data-dir "$d/k" --listen 127.0.0.1:0 >"$d/log" 2>&1 &
  pid=$!
  for i in $(seq 600); do [ -s "$d/k/kubeconfig" ] && break; sleep 0.1; done
  port=$(awk '/server:/ {print $2; exit}' "$d/k/kubeconfig" | sed 's/.*://; s/"//')
  sed 's/@NAME@/bench-get/g' bench/pod-2k.json >"$d/pod.json"
  local tls=(-p "$port" --cert "$d/k/admin.crt" --key "$d/k/admin.key" -c "${CONNS:-4}")
  local load=(-u /api/v1/namespaces/default/pods/bench-get)
  [ "$kind" = post ] && load=(-m POST -u /api/v1/namespaces/default/pods --body "${POD:-bench/pod-train.json}"
    --expect 201 --name-prefix c)
  curl -sS -o /dev/null --cacert "$d/k/ca.crt" --cert "$d/k/admin.crt" --key "$d/k/admin.key" \
    -H 'Content-Type: application/json' --data-binary @"$d/pod.json" \
    "https://127.0.0.1:$port/api/v1/namespaces/default/pods"
  "$LOADGEN" "${tls[@]}" -d 3 "${load[@]}" --name-prefix w >/dev/null 2>&1 || true
  callgrind_control -z "$pid" >/dev/null 2>&1
  local out
  out=$("$LOADGEN" "${tls[@]}" -d "${SECS:-10}" "${load[@]}")
  callgrind_control -d "$pid" >/dev/null 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  local ir n
  ir=$(awk '/^summary:/ {print $2}' "$d/cg.out.1")
  n=$(tr ' ' '\n' <<<"$out" | awk -F= '$1 == "responses" {print $2}')
  awk -v k="$kind" -v ir="$ir" -v n="$n" \
    'BEGIN {printf "%s: %.1fk instructions per response (%d responses)\n", k, ir / n / 1000, n}'
  if [ "${KEEP:-0}" = 1 ]; then echo "profile kept: $d/cg.out.1 (callgrind_annotate)"; else rm -rf "$d"; fi
}
for w in $WHAT; do measure "$w"; done
