#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stops what scripts/up.sh started (their data stays in .kubicle/).
cd "$(dirname "$0")/.."
home=${KUBICLE_HOME:-$PWD/.kubicle}
for p in "$home"/*/pid; do
  [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null && rm -f "$p"
done
exit 0
