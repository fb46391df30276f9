#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up, builds and starts Kubicle locally: a host stand-in
# (build/tests/host/kubicle-standin: a kubicle API server as the host cluster
# would be, with KAI's Queue kind, whose pods/exec runs commands as local
# processes and whose port-forward reaches this machine) with the test
# scheduler in its KAI profile (tests/host/scheduler.py: PodGroups and gangs as
# KAI has them, 2 fake nodes with 8 GPUs each, made-up
# PodMetrics/NodeMetrics standing in for metrics-server (kubectl top), Queue
# "team-a" with 4 GPUs), and one tenant "demo" (`kubicle create`, tenants kept
# in .kubicle/tenants) whose pods run on it in host namespace "tenants".
# Stop them with scripts/down.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
home=${KUBICLE_HOME:-$PWD/.kubicle}
mkdir -p "$home"
start() { # name port [serve args...]: the host stand-in (tests/host)
  local dir="$home/$1"
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "$1 already running (pid $(cat "$dir/pid"))"; return
  fi
  mkdir -p "$dir"
  rm -f "$dir/kubeconfig"
  local port=$2; shift 2
  nohup ./build/tests/host/kubicle-standin --data-dir "$dir" --listen "127.0.0.1:$port" "$@" \
    >"$dir/server.log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 100); do [ -f "$dir/kubeconfig" ] && break; sleep 0.05; done
  [ -f "$dir/kubeconfig" ] || { echo "$1 failed to start; see $dir/server.log"; exit 1; }
}
start host "${KUBICLE_HOST_PORT:-7443}"
H=(kubectl --kubeconfig "$home/host/kubeconfig")
"${H[@]}" get ns tenants >/dev/null 2>&1 || "${H[@]}" create ns tenants >/dev/null
"${H[@]}" apply -f - >/dev/null <<'YAML'
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec: {resources: {gpu: {quota: 4, limit: 4}}}
YAML
sched="$home/scheduler"
mkdir -p "$sched"
if ! { [ -f "$sched/pid" ] && kill -0 "$(cat "$sched/pid")" 2>/dev/null; }; then
  nohup python3 tests/host/scheduler.py --data-dir "$home/host" --metrics >"$sched/scheduler.log" 2>&1 &
  echo $! >"$sched/pid"
fi
# its first pass installs the stand-in's metrics API (kubectl top): the tenant
# reads the host's discovery at start (then every 30 s)
for _ in $(seq 50); do
  "${H[@]}" get --raw /apis/metrics.k8s.io/v1beta1 >/dev/null 2>&1 && break
  sleep 0.1
done
# the tenant: `kubicle create` (its supervisor restarts it if it dies); it
# adopts the namespace and Queue made above and keeps port 6443 across restarts.
# No --egress-allow: the demo runs no webhook of its own; a webhook or
# APIService server started on this machine for the tenant needs
# `kubicle create ... --egress-allow 127.0.0.1/32` (docs/egress.md)
export KUBICLE_HOME=$home
K=./build/cmd/kubicle
if [ -f "$home/tenants/demo/tenant.json" ]; then
  $K start demo --wait >/dev/null
else
  $K create demo --host-kubeconfig "$home/host/kubeconfig" --host-namespace tenants \
    --queue team-a --listen "127.0.0.1:${KUBICLE_TENANT_PORT:-6443}" --wait >/dev/null
fi
echo "host stand-in: KUBECONFIG=$home/host/kubeconfig"
echo "tenant:        KUBECONFIG=$home/tenants/demo/kubeconfig   (kubicle list, with KUBICLE_HOME=$home)"
echo
echo "try:  kubectl --kubeconfig $home/tenants/demo/kubeconfig get ns"
echo "      kubectl --kubeconfig $home/tenants/demo/kubeconfig apply -f examples/gpu-job.yaml"
echo "      kubectl --kubeconfig $home/tenants/demo/kubeconfig get pods -w   # Pending -> Running"
echo "      kubectl --kubeconfig $home/tenants/demo/kubeconfig exec POD -- sh -c 'echo hi'"
echo "      kubectl --kubeconfig $home/tenants/demo/kubeconfig top pod   # the stand-in's made-up usage"
echo "gang-scheduled training (docs/gang.md): 4 ranks start together, or none"
echo "      kubectl --kubeconfig $home/tenants/demo/kubeconfig apply -f examples/training/indexed-job.yaml"
echo "      kubectl --kubeconfig $home/host/kubeconfig -n tenants get podgroups.scheduling.run.ai"
echo "      kubectl --kubeconfig $home/tenants/demo/kubeconfig apply -f examples/training/pytorchjob-crd.yaml -f examples/training/pytorchjob.yaml"
echo "      bash examples/training/pytorchjob-pods.sh bert --kubeconfig $home/tenants/demo/kubeconfig"
echo "      kubectl --kubeconfig $home/host/kubeconfig -n tenants get pods --show-labels"
