#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test: installs dependencies, builds with -Werror, runs the unit
# and end-to-end suites, then builds again with ASan+UBSan and runs them again,
# then replays the fuzzers' corpora (clang/libFuzzer). At the end (also on a
# failure) it prints how long each step and each e2e suite took.
#
# The e2e suites run as three shards side by side (meson tests e2e-1, e2e-2
# and e2e-3, see tests/e2e/run.sh): most suites wait on controllers, leases
# and servers more than they compute, so three of them share 2 cores well;
# the unit suites run as the shards end.
set -euo pipefail
cd "$(dirname "$0")/.."

STEPS=()
step_t0=$SECONDS
step() { # NAME: closes the step that ran since the last call
  STEPS+=("$(printf '%-28s %5d s' "$1" $((SECONDS - step_t0)))")
  step_t0=$SECONDS
}
report() {
  local rc=$? d
  for d in build-test build-asan; do
    compgen -G "$d/meson-logs/e2e-times*.txt" >/dev/null || continue
    echo "== e2e time per suite ($d)"
    tests/e2e/times.sh "$d"/meson-logs/e2e-times*.txt
    echo "== e2e summary ($d, one line per shard)"
    grep -hE '^[0-9]+ passed, [0-9]+ failed$' "$d/meson-logs/testlog.txt" 2>/dev/null || true
  done
  if [ ${#STEPS[@]} -gt 0 ]; then
    echo "== time per step"
    printf '%s\n' "${STEPS[@]}"
    printf '%-28s %5d s\n' total "$SECONDS"
    # CI's budget (2 cores): a warning, not a failure - timings are noisy
    [ "$SECONDS" -le 1800 ] || echo "scripts/test.sh: WARNING: over the 30-minute budget; see the tables above"
  fi
  [ $rc -eq 0 ] || echo "scripts/test.sh: FAILED (exit $rc)"
  exit $rc
}
trap report EXIT

bash scripts/setup.sh
step setup
scripts/check-format.sh
step format
meson setup build-test -Dwerror=true --reconfigure >/dev/null 2>&1 || meson setup build-test -Dwerror=true
ninja -C build-test
step build
rm -f build-test/meson-logs/e2e-times*.txt
meson test -C build-test --print-errorlogs --num-processes 3
step test
if [ "${KUBICLE_SKIP_ASAN:-0}" != 1 ]; then
  meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true \
    --reconfigure >/dev/null 2>&1 || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true
  ninja -C build-asan
  step asan-build
  rm -f build-asan/meson-logs/e2e-times*.txt
  # Under the sanitizers every unit suite and every e2e suite runs but these
  # (E2E_SKIP): they repeat a suite with older kubectl binaries, to check
  # what the clients send and show (client-side work: request shapes, table
  # printing, discovery caches). The server's C paths they reach are the
  # ones the same suite with the current kubectl, which does run here, has
  # already reached:
  #   kubectl_old      kubectl_suite with kubectl 1.33 and 1.30
  #   crd_kubectl_old  crd_suite_kubectl with kubectl 1.33 and 1.30
  #   rbac_old         rbac_old_kubectl with kubectl 1.27 and 1.32
  E2E_SKIP="kubectl_old crd_kubectl_old rbac_old" \
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --num-processes 3
  step asan-test
fi
if command -v clang >/dev/null; then
  tests/fuzz/run.sh --regression
  step fuzz
fi
echo "all tests passed"
