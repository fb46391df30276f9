#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark: a Deployment scaled from 0 to N (default 1000) replicas in one
# tenant. Prints the time until N pod objects exist and the server's added
# resident memory (VmRSS before the scale and once the pods exist).
# Usage: bench/deploy.sh PATH/TO/kubicle [N]
set -eu
KUBICLE=$(readlink -f "${1:?usage: deploy.sh PATH/TO/kubicle [N]}")
N=${2:-1000}
dir=$(mktemp -d /tmp/kubicle-bench-deploy.XXXXXX)
"$KUBICLE" serve --data-dir "$dir" --listen 127.0.0.1:0 >"$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 200); do [ -s "$dir/kubeconfig" ] && break; sleep 0.05; done
K=(kubectl --kubeconfig "$dir/kubeconfig")
rss() { awk '/VmRSS/ {print $2}' /proc/$pid/status; }
"${K[@]}" create deployment big --image=nginx:1.25 --replicas=0 >/dev/null
sleep 1
before=$(rss)
t0=$(date +%s.%N)
"${K[@]}" scale deployment big --replicas="$N" >/dev/null
while :; do
  n=$("${K[@]}" get pods -l app=big --no-headers 2>/dev/null | wc -l)
  [ "$n" -ge "$N" ] && break
  sleep 0.1
done
t1=$(date +%s.%N)
after=$(rss)
printf 'pods: %d\ntime to %d pod objects: %.2f s\nRSS before: %d KiB, after: %d KiB, added: %d KiB\n' \
  "$n" "$N" "$(echo "$t1 - $t0" | bc)" "$before" "$after" "$((after - before))"
