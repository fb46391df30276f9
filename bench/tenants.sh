#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmarks of the tenant lifecycle (issue 5), each figure next to a
# reference measured in the same run. Measurements, not tests.
#
#   bench/tenants.sh             # all three (about 2-4 minutes on 2 cores)
#   bench/tenants.sh 2           # only the memory of idle tenants
#
#   1. `kubicle create NAME --wait` until the tenant's API answers GET /readyz
#      with its admin credential: median and p99 over CREATES (100) tenants,
#      created one after the other (no host: the API only, as CI uses it).
#      Reference: `kubicle serve` started directly on an empty folder until
#      /readyz answers (what create wraps), bench/startup, 30 runs.
#   2. IDLE (500) idle tenants on this machine: PSS of every supervisor and
#      server together (shared libraries counted once), and per tenant.
#      Reference: the servers alone (without their supervisors).
#   3. `kubicle delete NAME` until no host object with the tenant's label is
#      left (delete waits for that; checked again afterwards), DELETES (20)
#      tenants each with a running pod on a host stand-in + test scheduler.
#      Reference: `kubectl delete namespace --wait` of a host namespace holding
#      one running pod (the same host work done by hand).
#
#      Beside it: processes, threads and file descriptors of them all, their
#      wake-ups (context switches of every thread) per second over WAKE_SECS
#      (60) of idleness, and the time of `kubicle list` over them all (next to
#      `kubicle version`, a process that does nothing). IDLE=2000 is issue 27's
#      size (bench/run.sh 7: about 6-8 minutes, most of it 2,000 creates).
#
# Environment: BUILD (default build-bench), CREATES, IDLE, DELETES,
# WAKE_SECS, KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-bench}
CREATES=${CREATES:-100}
IDLE=${IDLE:-500}
DELETES=${DELETES:-20}
WAKE_SECS=${WAKE_SECS:-60}
ONLY=" ${*:-1 2 3} "

bash scripts/setup.sh
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle tests/host/kubicle-standin bench/startup >/dev/null
KUBICLE=$ROOT/$BUILD/cmd/kubicle
STANDIN=$ROOT/$BUILD/tests/host/kubicle-standin # the host (KAI's Queue kind)
STARTUP=$ROOT/$BUILD/bench/startup
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kubicle-tbench.XXXXXX")
export KUBICLE_HOME=$WORK/home
PIDS=()
cleanup() {
	for f in "$KUBICLE_HOME"/tenants/*/supervisor.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
	done
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill "$p" 2>/dev/null || true; done
	sleep 0.5
	[ "${KEEP:-0}" = 1 ] && echo "scratch kept in $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
hr() { printf '%s\n' "------------------------------------------------------------------------"; }
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# times CMD... N times with NAME substituted by t<i>; prints "median p99 max" ms
time_runs() { # N PREFIX CMD... (the word NAME in CMD becomes PREFIX<i>)
	python3 - "$@" <<'PY'
import subprocess, sys, time
n, prefix, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
ts = []
for i in range(n):
    c = [a.replace("NAME", f"{prefix}{i}") for a in cmd]
    t0 = time.perf_counter()
    r = subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ts.append((time.perf_counter() - t0) * 1000)
    if r.returncode:
        sys.exit(f"{' '.join(c)} failed: {r.stderr.decode()}")
ts.sort()
pct = lambda p: ts[min(len(ts) - 1, int(round(p / 100 * (len(ts) - 1))))]
print(f"{pct(50):.1f} {pct(99):.1f} {ts[-1]:.1f}")
PY
}

pss_sum() { # PID... -> total PSS KiB
	for p in "$@"; do cat "/proc/$p/smaps_rollup" 2>/dev/null; done | awk '/^Pss:/{s+=$2} END{print s+0}'
}
threads_sum() { # PID... -> threads of all
	for p in "$@"; do cat "/proc/$p/status" 2>/dev/null; done | awk '/^Threads:/{s+=$2} END{print s+0}'
}
fds_sum() { # PID... -> open file descriptors of all
	for p in "$@"; do ls "/proc/$p/fd" 2>/dev/null; done | wc -l
}
private_sum() { # PID... -> Private_Clean + Private_Dirty KiB (what each adds alone)
	for p in "$@"; do cat "/proc/$p/smaps_rollup" 2>/dev/null; done |
		awk '/^Private_(Clean|Dirty):/{s+=$2} END{print s+0}'
}
cpu_ticks() { # PID... -> user + system clock ticks of all
	for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null; done |
		awk '{sub(/.*\) /, ""); s += $12 + $13} END{print s+0}'
}
switches_sum() { # PID... -> voluntary + involuntary context switches of all their threads
	for p in "$@"; do cat /proc/"$p"/task/*/status 2>/dev/null; done |
		awk '/ctxt_switches:/{s+=$2} END{print s+0}'
}

echo "Kubicle tenant benchmarks, $(date -u +%FT%TZ), $(nproc) cores, $("$KUBICLE" version)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

bench_create() {
	hr
	echo "1. kubicle create --wait until the tenant answers /readyz ($CREATES tenants, one after the other)"
	local r s
	r=$(time_runs "$CREATES" c "$KUBICLE" create NAME --wait)
	mkdir -p "$WORK/start"
	s=$("$STARTUP" --runs 30 --label kubicle --path /readyz \
		--kubeconfig "$WORK/start/k{}/kubeconfig" --log "$WORK/start.log" -- \
		"$KUBICLE" serve --data-dir "$WORK/start/k{}" --listen 127.0.0.1:0)
	read -r med p99 max <<<"$r"
	printf '   %-36s median %7s ms   p99 %7s ms   max %7s ms   (aim: median < 100 ms)\n' \
		"kubicle create --wait:" "$med" "$p99" "$max"
	printf '   %-36s median %7s ms   p90 %7s ms   (reference)\n' \
		"kubicle serve alone (empty folder):" "$(kv median_ms "$s")" "$(kv p90_ms "$s")"
	time_runs "$CREATES" c "$KUBICLE" delete NAME --no-wait >/dev/null
}

bench_idle() {
	hr
	echo "2. $IDLE idle tenants side by side (created with kubicle create, then left alone 3 s)"
	local i sup=() srv=() t0 t1
	t0=$(date +%s.%N)
	for i in $(seq 1 "$IDLE"); do
		"$KUBICLE" create "i$i" >/dev/null
	done
	t1=$(date +%s.%N)
	sleep 3
	for i in $(seq 1 "$IDLE"); do
		sup+=("$(cat "$KUBICLE_HOME/tenants/i$i/supervisor.pid")")
		srv+=("$(cat "$KUBICLE_HOME/tenants/i$i/server.pid")")
	done
	local all s_only
	all=$(pss_sum "${sup[@]}" "${srv[@]}")
	s_only=$(pss_sum "${srv[@]}")
	printf '   %-36s %8s MiB total   %6s KiB per tenant   (created in %.1f s)\n' \
		"supervisors + servers (PSS):" "$((all / 1024))" "$((all / IDLE))" \
		"$(echo "$t1 - $t0" | bc)"
	printf '   %-36s %8s MiB total   %6s KiB per server   (reference)\n' \
		"servers alone (PSS):" "$((s_only / 1024))" "$((s_only / IDLE))"
	local priv
	priv=$(private_sum "${sup[@]}")
	printf '   %-36s %8s MiB total   %6s KiB per supervisor   (its pages shared with its server are in the PSS of both)\n' \
		"supervisors' private pages:" "$((priv / 1024))" "$((priv / IDLE))"
	echo "   (vCluster for comparison, not measured here: one kube-apiserver + controller-manager + kine per tenant)"
	local th fds
	th=$(threads_sum "${sup[@]}" "${srv[@]}")
	fds=$(fds_sum "${sup[@]}" "${srv[@]}")
	printf '   %-36s %8s processes (%s threads)   %6s fds, %s per tenant   (ulimit -n %s, pid_max %s)\n' \
		"processes and file descriptors:" "$(( ${#sup[@]} + ${#srv[@]} ))" "$th" "$fds" \
		"$((fds / IDLE))" "$(ulimit -n)" "$(cat /proc/sys/kernel/pid_max)"
	local w0 w1 c0 c1
	w0=$(switches_sum "${sup[@]}" "${srv[@]}")
	c0=$(cpu_ticks "${sup[@]}" "${srv[@]}")
	sleep "$WAKE_SECS"
	w1=$(switches_sum "${sup[@]}" "${srv[@]}")
	c1=$(cpu_ticks "${sup[@]}" "${srv[@]}")
	printf '   %-36s %8s per second in all   %6s per tenant per second   (over %s s; aim: ~0)\n' \
		"wake-ups (context switches):" "$(echo "($w1 - $w0) / $WAKE_SECS" | bc)" \
		"$(echo "scale=2; ($w1 - $w0) / $WAKE_SECS / $IDLE" | bc)" "$WAKE_SECS"
	printf '   %-36s %8s ms per second in all (%s %% of a core)\n' \
		"CPU of the idle tenants:" \
		"$(echo "($c1 - $c0) * 1000 / $(getconf CLK_TCK) / $WAKE_SECS" | bc)" \
		"$(echo "($c1 - $c0) * 100 / $(getconf CLK_TCK) / $WAKE_SECS" | bc)"
	local l
	l=$(time_runs 3 x "$KUBICLE" list)
	read -r med p99 max <<<"$l"
	printf '   %-36s median %7s ms   max %7s ms   (3 runs; %s ms per tenant)\n' \
		"kubicle list, $IDLE tenants:" "$med" "$max" "$(echo "scale=2; $med / $IDLE" | bc)"
	l=$(time_runs 3 x "$KUBICLE" version)
	read -r med p99 max <<<"$l"
	printf '   %-36s median %7s ms   (reference: a kubicle process that does nothing)\n' \
		"kubicle version:" "$med"
	"$KUBICLE" list | awk 'NR>1{print $2}' | sort | uniq -c | sed 's/^/   states: /'
	local jobs=()
	for i in $(seq 1 "$IDLE"); do
		"$KUBICLE" delete "i$i" --no-wait >/dev/null &
		jobs+=("$!")
		if [ ${#jobs[@]} -ge 16 ]; then wait "${jobs[@]}"; jobs=(); fi
	done
	[ ${#jobs[@]} -eq 0 ] || wait "${jobs[@]}"
}

bench_delete() {
	hr
	echo "3. kubicle delete until nothing of the tenant is left on the host ($DELETES tenants, one running pod each)"
	local host=$WORK/host i
	"$STANDIN" --data-dir "$host" --listen 127.0.0.1:0 >"$WORK/host.log" 2>&1 &
	PIDS+=("$!")
	for i in $(seq 100); do [ -s "$host/kubeconfig" ] && break; sleep 0.05; done
	python3 tests/host/scheduler.py --data-dir "$host" --interval 0.1 >"$WORK/sched.log" 2>&1 &
	PIDS+=("$!")
	local H=(kubectl --kubeconfig "$host/kubeconfig")
	for i in $(seq 0 $((DELETES - 1))); do
		"$KUBICLE" create "d$i" --host-kubeconfig "$host/kubeconfig" --wait >/dev/null
		kubectl --kubeconfig "$KUBICLE_HOME/tenants/d$i/kubeconfig" run p --image=busybox \
			--overrides='{"spec":{"schedulerName":"kai-scheduler"}}' >/dev/null
		"${H[@]}" create namespace "ref$i" >/dev/null
		"${H[@]}" -n "ref$i" run p --image=busybox \
			--overrides='{"spec":{"schedulerName":"kai-scheduler"}}' >/dev/null
	done
	for i in $(seq 0 $((DELETES - 1))); do
		until [ "$("${H[@]}" -n "kubicle-d$i" get pod p-x-default-x-d$i -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ]; do sleep 0.1; done
	done
	local d r left
	d=$(time_runs "$DELETES" d "$KUBICLE" delete NAME)
	r=$(time_runs "$DELETES" ref "${H[@]}" delete namespace NAME --wait)
	left=$( { "${H[@]}" get pods,configmaps,secrets,serviceaccounts,roles,rolebindings -A -o name \
		-l 'kubicle.dev/tenant'; "${H[@]}" get clusterrolebindings,queues,namespaces -o name \
		-l 'kubicle.dev/tenant'; } 2>/dev/null | wc -l)
	read -r med p99 max <<<"$d"
	printf '   %-36s median %7s ms   p99 %7s ms   max %7s ms   (host objects left: %s)\n' \
		"kubicle delete:" "$med" "$p99" "$max" "$left"
	read -r med p99 max <<<"$r"
	printf '   %-36s median %7s ms   p99 %7s ms   max %7s ms   (reference)\n' \
		"kubectl delete namespace --wait:" "$med" "$p99" "$max"
}

case $ONLY in *" 1 "*) bench_create ;; esac
case $ONLY in *" 2 "*) bench_idle ;; esac
case $ONLY in *" 3 "*) bench_delete ;; esac
hr
