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
#   PARTS=1 bench/instructions.sh post        # also the main parts of a create, each
#                                             # per request (inclusive instructions)
#
# The count is divided by the requests the server handled while callgrind
# counted (calls of on_request in the profile): under load, zeroing and
# dumping the counters take effect late, so that window is not the client's
# (its responses are printed beside). To compare two commits, build each in
# its own checkout and run this in each.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-bench}
WHAT=${*:-get post}
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind" >&2; exit 1; }
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle bench/loadgen >/dev/null
LOADGEN=$ROOT/$BUILD/bench/loadgen

# parts TREE REQUESTS: the inclusive count of the main parts of a request
parts() {
  local f
  for f in handle_create kb_json_loadb check_fields write_defaults write_validate \
    val_object admission_check patch_track_create fs_to_v1 rstore_create \
    serialize.constprop.0 store__txn_publish store__evnode_free commit_timed reply_text; do
    awk -v f="$f" -v n="$2" 'index($0, "*  ") && $0 ~ ("[:/]" f " ") {
      gsub(",", "", $1); printf "   %-28s %8.1fk\n", f, $1 / n / 1000; exit }' "$1"
  done
}

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
  local ir n reqs tree=$d/tree.txt
  ir=$(awk '/^summary:/ {print $2}' "$d/cg.out.1")
  n=$(tr ' ' '\n' <<<"$out" | awk -F= '$1 == "responses" {print $2}')
  callgrind_annotate --inclusive=yes --tree=calling --threshold=100 "$d/cg.out.1" \
    >"$tree" 2>/dev/null || true
  reqs=$(awk '/> .*proxy\/server.c:on_request \([0-9,]+x\)/ {
    s = substr($0, index($0, "on_request (") + 12); s = substr(s, 1, index(s, "x") - 1)
    gsub(",", "", s); print s + 0; exit }' "$tree")
  awk -v k="$kind" -v ir="$ir" -v n="$n" -v r="${reqs:-0}" 'BEGIN {
    if (r > 0)
      printf "%s: %.1fk instructions per request (%d requests counted; client: %d responses)\n", k, ir / r / 1000, r, n
    else
      printf "%s: %.1fk instructions per response (%d responses)\n", k, ir / n / 1000, n }'
  if [ "${PARTS:-0}" = 1 ] && [ "${reqs:-0}" -gt 0 ]; then parts "$tree" "$reqs"; fi
  if [ "${KEEP:-0}" = 1 ]; then echo "profile kept: $d/cg.out.1 (callgrind_annotate)"; else rm -rf "$d"; fi
}
for w in $WHAT; do measure "$w"; done
