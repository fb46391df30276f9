#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up, builds and starts Kubicle locally: a host stand-in (a plain
# kubicle API server, as the host cluster would be) and one tenant control
# plane, each with a kubeconfig ready. Stop them with scripts/down.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
home=${KUBICLE_HOME:-$PWD/.kubicle}
mkdir -p "$home"
start() { # name port
  local dir="$home/$1"
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "$1 already running (pid $(cat "$dir/pid"))"; return
  fi
  mkdir -p "$dir"
  rm -f "$dir/kubeconfig"
  nohup ./build/cmd/kubicle serve --data-dir "$dir" --listen "127.0.0.1:$2" \
    >"$dir/server.log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 100); do [ -f "$dir/kubeconfig" ] && break; sleep 0.05; done
  [ -f "$dir/kubeconfig" ] || { echo "$1 failed to start; see $dir/server.log"; exit 1; }
}
start host "${KUBICLE_HOST_PORT:-7443}"
start tenant "${KUBICLE_TENANT_PORT:-6443}"
echo "host stand-in: KUBECONFIG=$home/host/kubeconfig"
echo "tenant:        KUBECONFIG=$home/tenant/kubeconfig"
echo
echo "try:  kubectl --kubeconfig $home/tenant/kubeconfig get ns"
