#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tenant's cluster DNS (proxy/dns/dns.h): queries per second and latency
# with dnsperf, next to dnsmasq answering the same names from its own
# records in the same run; and what the responder costs an idle server
# (PSS with and without --dns-listen). A measurement, not a test.
#
#   bench/dns.sh [BUILD]     (default build-bench; SECS=10, CLIENTS=4)
#
# The server runs on core 0, dnsperf on core 1. The query mix: a Service's
# A record (60 %), a headless Service's endpoints (20 %), an SRV (10 %) and
# a name that does not exist (10 %), all in the zone.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${1:-build-bench}
SECS=${SECS:-10}
CLIENTS=${CLIENTS:-4}
bash scripts/setup.sh >/dev/null
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle >/dev/null
KUBICLE=$ROOT/$BUILD/cmd/kubicle
if [ "$(nproc)" -ge 2 ]; then SRV="taskset -c 0"; CLI="taskset -c 1"; else SRV=""; CLI=""; fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kubicle-dns.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT
free_port() {
	python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
pss() { awk '/^Pss:/ {p=$2} /^Private_Dirty:/ {d=$2} END {print p " KiB (Private_Dirty " d " KiB)"}' "/proc/$1/smaps_rollup"; }

start() { # NAME [serve args...]: sets PID, KCFG
	local name=$1; shift
	$SRV "$KUBICLE" serve --data-dir "$WORK/$name" --listen 127.0.0.1:0 --log-level warn "$@" \
		>"$WORK/$name.log" 2>&1 &
	PID=$!
	PIDS+=("$PID")
	KCFG=$WORK/$name/kubeconfig
	for _ in $(seq 200); do [ -s "$KCFG" ] && break; sleep 0.05; done
	for _ in $(seq 100); do kubectl --kubeconfig "$KCFG" get ns default >/dev/null 2>&1 && break; sleep 0.05; done
}

# ---- idle cost ------------------------------------------------------------
# both running, measured at the same moment: PSS splits shared pages
# between the processes that map them
start plain
PLAIN=$PID
DNSPORT=$(free_port)
start dns --dns-listen "127.0.0.1:$DNSPORT" --dns-upstream none
sleep 1
P0=$(pss "$PLAIN")
P1=$(pss "$PID")

# ---- the names ------------------------------------------------------------
K=(kubectl --kubeconfig "$KCFG")
"${K[@]}" create ns ml >/dev/null
"${K[@]}" -n ml create service clusterip web --tcp=80:8080 >/dev/null
addrs=""
for i in $(seq 1 4); do addrs+="{ip: 10.1.0.$i, hostname: train-$((i - 1))},"; done
"${K[@]}" -n ml apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: train}
spec: {clusterIP: None, ports: [{name: c10d, port: 29500}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: train}
subsets: [{addresses: [${addrs%,}], ports: [{name: c10d, port: 29500, protocol: TCP}]}]
YAML
WEBIP=$("${K[@]}" -n ml get svc web -o jsonpath='{.spec.clusterIP}')
Q=$WORK/queries
{
	for _ in 1 2 3 4 5 6; do echo "web.ml.svc.cluster.local A"; done
	echo "train.ml.svc.cluster.local A"
	echo "train.ml.svc.cluster.local A"
	echo "_c10d._tcp.train.ml.svc.cluster.local SRV"
	echo "nope.ml.svc.cluster.local A"
} >"$Q"

# ---- reference: dnsmasq with the same records ------------------------------
MPORT=$(free_port)
MCONF=$WORK/dnsmasq.conf
{
	echo "port=$MPORT"; echo "listen-address=127.0.0.1"; echo "bind-interfaces"
	echo "no-resolv"; echo "no-hosts"; echo "local=/cluster.local/"; echo "cache-size=0"
	echo "host-record=web.ml.svc.cluster.local,$WEBIP"
	for i in $(seq 1 4); do
		echo "host-record=train.ml.svc.cluster.local,10.1.0.$i"
		echo "srv-host=_c10d._tcp.train.ml.svc.cluster.local,train-$((i - 1)).train.ml.svc.cluster.local,29500,0,100"
	done
} >"$MCONF"
$SRV dnsmasq --keep-in-foreground --conf-file="$MCONF" --pid-file="$WORK/dnsmasq.pid" \
	--user="$(id -un)" 2>"$WORK/dnsmasq.log" &
PIDS+=("$!")
sleep 0.5

run() { # PORT: "qps p50_ms"
	$CLI dnsperf -s 127.0.0.1 -p "$1" -d "$Q" -l "$SECS" -c "$CLIENTS" -q 64 2>&1 |
		awk '/Queries per second/ {q=$4} /Average Latency/ {l=$4*1000} END {printf "%.0f %.3f\n", q, l}'
}
check() { dig +short +tries=1 @127.0.0.1 -p "$1" "$2" | sort | xargs; }
echo "answers: kubicle '$(check "$DNSPORT" train.ml.svc.cluster.local)', dnsmasq '$(check "$MPORT" train.ml.svc.cluster.local)'"
read -r KQ KL < <(run "$DNSPORT")
read -r MQ ML < <(run "$MPORT")
echo
echo "== cluster DNS, ${SECS} s, $CLIENTS dnsperf clients, server on one core"
printf "   %-38s %10s qps   mean latency %s ms\n" "kubicle (store lookups per query)" "$KQ" "$KL"
printf "   %-38s %10s qps   mean latency %s ms\n" "dnsmasq (same records, no cache)" "$MQ" "$ML"
echo "   idle server PSS: $P0 without DNS, $P1 with --dns-listen"
