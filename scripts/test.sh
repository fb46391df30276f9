#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test: installs dependencies, builds with -Werror, runs the unit
# and end-to-end suites, then builds again with ASan+UBSan and runs them again,
# then replays the fuzzers' corpora (clang/libFuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
scripts/check-format.sh
meson setup build-test -Dwerror=true --reconfigure >/dev/null 2>&1 || meson setup build-test -Dwerror=true
ninja -C build-test
meson test -C build-test --print-errorlogs --num-processes 2
if [ "${KUBICLE_SKIP_ASAN:-0}" != 1 ]; then
  meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true \
    --reconfigure >/dev/null 2>&1 || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dwerror=true
  ninja -C build-asan
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    meson test -C build-asan --print-errorlogs --num-processes 2
fi
if command -v clang >/dev/null; then
  tests/fuzz/run.sh --regression
fi
echo "all tests passed"
