#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# RBAC decision cost: bench/authz_bench with 1,000 Roles and 1,000
# RoleBindings (plus the default cluster roles), compared in the same run
# with RBAC off (the system:masters shortcut). Usage: bench/authz.sh [BUILD_DIR]
set -eu
build=${1:-build}
ninja -C "$build" bench/authz_bench >/dev/null
for n in 100 1000 10000; do
  echo "== $n roles, $n bindings"
  "$build/bench/authz_bench" "$n" 1000000
done
