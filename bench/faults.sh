#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fault suite's kill -9 driver run long (issue 29): WORKERS connections
# create ConfigMaps as fast as the server takes them while one watch follows
# them; the server is killed with SIGKILL KILLS times, each after STEP more
# acknowledged creates, and started again on the same port. Then the ledger
# is checked (tests/e2e/faultload.py verify: every acknowledged create
# there, no resourceVersion backwards, the resumed watch without gaps, a
# replay from the first revision complete), and the figures printed:
# creates acknowledged and their rate, connection errors while down, and
# the time from each kill to the restarted server answering /livez.
# Measurements and checks, not a benchmark with a target.
#
#   bench/faults.sh              # KILLS=30 STEP=3000 WORKERS=16 (a few minutes)
#
# Environment: BUILD (default build-bench), KILLS, STEP, WORKERS, KEEP=1.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-bench}
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle >/dev/null || exit 1
KUBICLE=$ROOT/$BUILD/cmd/kubicle
E2E_KEEP=${KEEP:-0}
. tests/e2e/lib.sh
. tests/e2e/t_faults.sh
export E2E_FAULT_KILLS=${KILLS:-30} E2E_FAULT_STEP=${STEP:-3000} E2E_FAULT_WORKERS=${WORKERS:-16}
# the replay from the first revision needs every event kept
FAULTS_SERVE_ARGS=(--watch-history 100000000)
faults_kill9
python3 - "$E2E_TMP/kill9" <<'PY'
import json, statistics, sys
d = sys.argv[1]
st = json.load(open(d + "/stats.json"))
downs = [float(b) - float(a) for a, b in (l.split() for l in open(d + "/restarts"))]
print("acknowledged creates: %d in %.1f s (%.0f/s, restarts included), %d connection errors"
      " while down, %d refused" % (st["acked"], st["seconds"], st["acked"] / st["seconds"],
                                   st["conn_errors"], st["refused"]))
print("kill -9 to /livez answering: median %.0f ms, max %.0f ms over %d kills"
      % (statistics.median(downs) * 1000, max(downs) * 1000, len(downs)))
PY
e2e_summary
