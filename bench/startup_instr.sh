#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Instructions of one start until GET /readyz answers (benchmark 1 counted
# by valgrind's callgrind, which the machine's load does not move): a first
# start (empty data dir) and a start on that data dir again, each from exec
# until the first /readyz answers 200 over TLS with the admin client
# certificate (its handshake included), then SIGTERM; the shutdown is not
# counted. Prints the instructions of all threads, and those of the main
# thread alone: the certificates and the TLS context are made on a second
# thread beside the store's start (lib/pki_job.c), so on two
# cores the main thread's count is the better guide to the wall clock (it
# waits for the other at two points, which callgrind does not count).
# Then, per start, each thread of more than 0.1 M instructions with the
# function it started in (callgrind_annotate's inclusive count), to read
# the threads side by side: the main thread against the PKI thread
# (job_main, its ensure and its TLS context) and the front proxy's
# (client_ca_main). Instructions, not time: the PKI thread's 16 M take
# about 2.5 ms alone, while execve to listen takes 9-15 ms on existing
# data (bench/README.md, start-up, fifth round).
#
#   bench/startup_instr.sh                    # build-bench
#   BUILD=other-build bench/startup_instr.sh  # another build
#   REF=/path/to/other/checkout/build-bench bench/startup_instr.sh
#                                             # ... and that build beside it
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-bench}
command -v valgrind >/dev/null || { echo "startup_instr.sh: needs valgrind" >&2; exit 1; }
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle >/dev/null
W=$(mktemp -d /tmp/kubicle-startinstr.XXXXXX)
trap 'rm -rf "$W"' EXIT

# one KUBICLE DIR OUT: one start under callgrind, dumped when /readyz answers
one() {
  local bin=$1 d=$2 out=$3 pid port i code
  rm -f "$d/kubeconfig"
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" "$bin" serve --data-dir "$d" \
    --listen 127.0.0.1:0 >>"$W/log" 2>&1 &
  pid=$!
  for i in $(seq 1200); do
    grep -q client-key-data "$d/kubeconfig" 2>/dev/null && break
    sleep 0.05
  done
  port=$(awk '/server:/ {print $2; exit}' "$d/kubeconfig" | sed 's/.*://; s/"//')
  for i in $(seq 600); do
    # -k, not --cacert: as bench/startup (benchmark 1) and a Kubernetes
    # client, send the admin certificate alone (OpenSSL's client adds the CA
    # from its trust store to the chain it sends: one more certificate
    # parse on the server, 1.5 M instructions)
    code=$(curl -s -k -o /dev/null -w '%{http_code}' --cert "$d/admin.crt" \
      --key "$d/admin.key" "https://127.0.0.1:$port/readyz" || true)
    [ "$code" = 200 ] && break
    sleep 0.05
  done
  callgrind_control -d "$pid" >/dev/null 2>&1 || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

# total OUT: the instructions of every thread up to the dump at readyz
# (OUT.1-NN, one file a thread); main OUT: the main thread's (OUT.1-01)
total() { cat "$1".1-* | awk '/^summary:/ {n += $2} END {print n}'; }
main() { awk '/^summary:/ {print $2}' "$1.1-01"; }
# threads OUT: one line a thread of more than 0.1 M instructions
threads() {
  local f n fn
  for f in "$1".1-*; do
    n=$(awk '/^summary:/ {print $2}' "$f")
    [ "${n:-0}" -gt 100000 ] || continue
    # the first of the project's functions (a path with ../), libc's
    # clone, start_thread and the like set aside
    fn=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
      awk '/^ *[0-9,]+ \(.*\/\.\.\/[^ ]*:[a-z_0-9]+ \[\/[^]]*\/cmd\/kubicle\]/ && !done {
        sub(/ \[.*/, ""); sub(/.*:/, ""); print; done = 1 }')
    printf '    thread %s %7s M  %s' "${f##*.1-}" "$(mi "$n")" "${fn:-?}"
    if [ "$fn" = job_main ]; then # its two steps: the ensure, then the context
      callgrind_annotate --inclusive=yes "$f" 2>/dev/null | awk '
        /:pki_ensure_keep_tell \[/ && !e { gsub(",", "", $1); e = $1 }
        /:kb_pki_server_ctx(_fill)? \[/ && !c { gsub(",", "", $1); c = $1 }
        END { printf " (ensure %.1f M, context %.1f M)", e / 1e6, c / 1e6 }'
    fi
    echo
  done
}
mi() { awk -v n="$1" 'BEGIN {printf "%.1f", n / 1e6}'; }

measure() {
  local label=$1 bin=$2 d=$W/$1
  one "$bin" "$d" "$W/$label.first"
  one "$bin" "$d" "$W/$label.again"
  printf '%-8s first start %6s M instructions (main thread %6s M)   existing data %6s M (main thread %6s M)\n' \
    "$label" "$(mi "$(total "$W/$label.first")")" "$(mi "$(main "$W/$label.first")")" \
    "$(mi "$(total "$W/$label.again")")" "$(mi "$(main "$W/$label.again")")"
  echo "  first start:"; threads "$W/$label.first"
  echo "  existing data:"; threads "$W/$label.again"
}

measure this "$ROOT/$BUILD/cmd/kubicle"
[ -n "${REF:-}" ] && measure ref "$REF/cmd/kubicle"
if [ "${KEEP:-0}" = 1 ]; then
  mkdir -p /tmp/kubicle-startinstr-kept && cp "$W"/*.first* "$W"/*.again* /tmp/kubicle-startinstr-kept/
  echo "profiles kept in /tmp/kubicle-startinstr-kept (callgrind_annotate --inclusive=yes)"
fi
