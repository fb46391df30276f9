#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Stops what scripts/up.sh started (their data stays in .kubicle/).
cd "$(dirname "$0")/.."
home=${KUBICLE_HOME:-$PWD/.kubicle}
# the tenant's supervisor stops its server; `kubicle stop demo` would also
# take its pods off the host, pointless when the host stops too
for p in "$home"/tenants/*/supervisor.pid; do
  [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
done
for p in "$home"/*/pid; do
  [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null && rm -f "$p"
done
exit 0
