#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Where the wall clock of a start goes (benchmark 1, by time): RUNS first
# starts (an empty data dir each) and RUNS starts on that data again, as
# bench/run.sh starts them, with `bench/startup --trace`: each server logs
# the steps of cmd/serve.c (KUBICLE_TRACE_START) with the time since its
# fork and the main thread's CPU time. Prints, per kind of start, the median
# until /readyz answered and until the port was read from the kubeconfig,
# then each step's median wall clock and CPU time: a step whose wall clock
# grows more than its CPU time waited (an fsync, the PKI thread at "tls
# wait" -> "tls", the run queue on a loaded machine). Counted with
# bench/startup_instr.sh; this is the clock.
#
#   bench/startup_trace.sh                      # build-bench, 20 runs each
#   RUNS=50 BUILD=other-build bench/startup_trace.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-bench}
RUNS=${RUNS:-20}
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle bench/startup >/dev/null
W=$(mktemp -d /tmp/kubicle-starttrace.XXXXXX)
trap 'rm -rf "$W"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for kind in first again; do
  "$BUILD/bench/startup" --trace --runs "$RUNS" --label "$kind" --path /readyz \
    --kubeconfig "$W/k{}/kubeconfig" --log "$W/$kind.log" -- \
    "$BUILD/cmd/kubicle" serve --data-dir "$W/k{}" --listen 127.0.0.1:0 2>"$W/$kind.runs" >/dev/null
  python3 - "$W/$kind.log" "$W/$kind.runs" "$kind" <<'PY'
import re, statistics as st, sys
log, runs, kind = sys.argv[1:]
starts, order = [], []
for line in open(log):
    m = re.match(r"start-trace\s+([\d.]+) ms cpu\s+([\d.]+) ms (.*)", line)
    if not m:
        continue
    wall, cpu, step = float(m[1]), float(m[2]), m[3]
    if step == "serve":
        starts.append({})
    if starts and step not in starts[-1]:
        starts[-1][step] = (wall, cpu)
        if step not in order:
            order.append(step)
total = [float(m[1]) for m in re.finditer(r"run \d+: ([\d.]+) ms", open(runs).read())]
port = [float(m[1]) for m in re.finditer(r"run \d+: port at ([\d.]+) ms", open(runs).read())]
name = "first start" if kind == "first" else "existing data"
print(f"{name}: {len(total)} runs, /readyz answered: median {st.median(total):.2f} ms "
      f"(min {min(total):.2f}); port read: median {st.median(port):.2f} ms")
print(f"  {'step (cmd/serve.c)':24s} {'wall ms':>8s} {'cpu ms':>8s}   (medians since fork)")
for s in order:
    w = [r[s][0] for r in starts if s in r]
    c = [r[s][1] for r in starts if s in r]
    print(f"  {s:24s} {st.median(w):8.3f} {st.median(c):8.3f}")
PY
done
