#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs Kubicle's benchmarks (issue 2) and prints each figure next to a
# reference measured in the same run and next to its target. These are
# measurements, not tests: nothing passes or fails.
#
#   bench/run.sh            # everything (about 2-3 minutes on 2 cores)
#   bench/run.sh 3 4        # only benchmarks 3 and 4
#   bench/run.sh 7 8        # issue 27's scale benchmarks (7 is not in the
#                           # default list: 4-10 min; 8 is, about 1-2 min)
#
# Environment: BUILD (build folder, default build-bench), GET_SECS,
# CREATE_SECS, CONNS_GET, CONNS_CREATE, WATCHERS, WATCH_CREATES, IDLE_TENANTS
# (7), SYNC_PODS and SYNC_CLIENTS (8), KEEP=1 (keep
# the scratch folder). Servers are pinned to core 0 and clients to core 1
# when the machine has 2+ cores.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-build-bench}
GET_SECS=${GET_SECS:-10}
CREATE_SECS=${CREATE_SECS:-10}
CONNS_GET=${CONNS_GET:-32}
CONNS_CREATE=${CONNS_CREATE:-16}
WATCHERS=${WATCHERS:-1000}
WATCH_CREATES=${WATCH_CREATES:-50}
STARTUP_RUNS=${STARTUP_RUNS:-30}
MEM_SERVERS=${MEM_SERVERS:-50}
IDLE_TENANTS=${IDLE_TENANTS:-2000}
SYNC_PODS=${SYNC_PODS:-2000}
SYNC_CLIENTS=${SYNC_CLIENTS:-8}
ONLY=" ${*:-1 2 3 4 5 8} "

# ---- set-up ---------------------------------------------------------------

bash scripts/setup.sh
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle bench/loadgen bench/startup bench/watchers bench/sqlite_ref >/dev/null
KUBICLE=$ROOT/$BUILD/cmd/kubicle
LOADGEN=$ROOT/$BUILD/bench/loadgen
STARTUP=$ROOT/$BUILD/bench/startup
WATCHERS_BIN=$ROOT/$BUILD/bench/watchers
SQLITE_REF=$ROOT/$BUILD/bench/sqlite_ref
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
POD=$ROOT/bench/pod-2k.json

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(nproc)" -ge 2 ]; then SRV="taskset -c 0"; CLI="taskset -c 1"; else SRV=""; CLI=""; fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/kubicle-bench.XXXXXX")
PIDS=()
cleanup() {
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do wait "$p" 2>/dev/null || true; done
	[ "${KEEP:-0}" = 1 ] && echo "scratch kept in $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Starts `kubicle serve` on DIR (port 0) in the background with optional
# command prefix (e.g. taskset); sets KPID and KPORT.
start_kubicle() {
	local dir=$1; shift
	mkdir -p "$(dirname "$dir")"
	"$@" "$KUBICLE" serve --data-dir "$dir" --listen 127.0.0.1:0 >>"$dir.log" 2>&1 &
	KPID=$!
	PIDS+=("$KPID")
	KPORT=""
	for _ in $(seq 1 500); do
		if [ -s "$dir/kubeconfig" ]; then
			KPORT=$(sed -n 's/.*server: *"\{0,1\}https:\/\/[^:]*:\([0-9]*\).*/\1/p' "$dir/kubeconfig")
			[ -n "$KPORT" ] && return 0
		fi
		kill -0 "$KPID" 2>/dev/null || break
		sleep 0.01
	done
	echo "kubicle did not start in $dir; log:" >&2
	cat "$dir.log" >&2
	exit 1
}

stop_pid() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	local keep=() p
	for p in "${PIDS[@]+"${PIDS[@]}"}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	PIDS=("${keep[@]+"${keep[@]}"}")
}

# kcurl DIR PORT ARGS...: curl with the tenant's admin credential.
kcurl() {
	local dir=$1 port=$2; shift 2
	curl -sS --cacert "$dir/ca.crt" --cert "$dir/admin.crt" --key "$dir/admin.key" \
		--resolve "kubicle:$port:127.0.0.1" "$@"
}

# Creates pod NAME from the 2 KiB template; prints the HTTP status.
create_pod() {
	local dir=$1 port=$2 name=$3
	sed "s/@NAME@/$name/" "$POD" | kcurl "$dir" "$port" -o /dev/null -w '%{http_code}' \
		-H 'Content-Type: application/json' --data-binary @- \
		"https://127.0.0.1:$port/api/v1/namespaces/default/pods"
}

# nginx_conf DIR PORT MASTER(on|off): a TLS server of DIR/www with the same
# certificates as Kubicle (ECDSA P-256) and the same client-certificate check.
nginx_conf() {
	local dir=$1 port=$2 master=$3
	mkdir -p "$dir/tmp"
	local user=""
	[ "$(id -u)" = 0 ] && user="user root root;"
	cat >"$dir/nginx.conf" <<-EOF
	$user
	master_process $master;
	worker_processes 1;
	pid $dir/nginx.pid;
	error_log $dir/error.log warn;
	events { worker_connections 4096; }
	http {
	  access_log off;
	  client_body_temp_path $dir/tmp/body;
	  proxy_temp_path $dir/tmp/proxy;
	  fastcgi_temp_path $dir/tmp/fastcgi;
	  uwsgi_temp_path $dir/tmp/uwsgi;
	  scgi_temp_path $dir/tmp/scgi;
	  keepalive_requests 100000000;
	  keepalive_timeout 60s;
	  server {
	    listen 127.0.0.1:$port ssl;
	    ssl_certificate $CERTS/server.crt;
	    ssl_certificate_key $CERTS/server.key;
	    ssl_client_certificate $CERTS/ca.crt;
	    ssl_verify_client on;
	    root $WWW;
	    default_type application/json;
	  }
	}
	EOF
}

start_nginx() { # DIR [prefix...]; sets NPID
	local dir=$1; shift
	"$@" "$NGINX" -c "$dir/nginx.conf" -g 'daemon off;' >>"$dir/stderr.log" 2>&1 &
	NPID=$!
	PIDS+=("$NPID")
	for _ in $(seq 1 200); do
		[ -s "$dir/nginx.pid" ] && return 0
		sleep 0.01
	done
	echo "nginx did not start:" >&2
	cat "$dir/stderr.log" "$dir/error.log" >&2
	exit 1
}

kv() { # kv KEY LINE: the value of KEY=... in a tool's output line
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"
}

mem_of() { # mem_of PID...: "avg_pss_kib avg_private_dirty_kib" over the processes
	for p in "$@"; do cat "/proc/$p/smaps_rollup"; done |
		awk -v n=$# '/^Pss:/{p+=$2} /^Private_Dirty:/{d+=$2} END{printf "%.0f %.0f", p/n, d/n}'
}

hr() { printf '%s\n' "------------------------------------------------------------------------"; }

# Certificates for nginx and the clients: a Kubicle data directory.
CERTS=$WORK/certs
start_kubicle "$CERTS"
stop_pid "$KPID"
WWW=$WORK/www
mkdir -p "$WWW"
echo ok >"$WWW/readyz"

echo "Kubicle benchmarks — $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)," \
	"$(awk '/MemTotal/{printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
echo "kubicle $("$KUBICLE" version | head -1); $("$NGINX" -v 2>&1); $(openssl version);" \
	"SQLite $(sqlite3 --version | cut -d' ' -f1)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "scratch: $WORK ($(df -T "$WORK" | awk 'NR==2{print $2}')); pinning: ${SRV:-none} server, ${CLI:-none} client"

# ---- 1. start-up ----------------------------------------------------------

bench_startup() {
	hr
	echo "1. Start-up: first start on an empty data dir until GET /readyz answers 200 ($STARTUP_RUNS runs)"
	local k n port
	mkdir -p "$WORK/start"
	k=$("$STARTUP" --runs "$STARTUP_RUNS" --label kubicle --path /readyz \
		--kubeconfig "$WORK/start/k{}/kubeconfig" --log "$WORK/start.log" -- \
		"$KUBICLE" serve --data-dir "$WORK/start/k{}" --listen 127.0.0.1:0)
	port=$(free_port)
	mkdir -p "$WORK/start/nginx"
	nginx_conf "$WORK/start/nginx" "$port" on
	n=$("$STARTUP" --runs "$STARTUP_RUNS" --label nginx --path /readyz --port "$port" \
		--cert "$CERTS/admin.crt" --key "$CERTS/admin.key" --log "$WORK/start.log" -- \
		"$NGINX" -c "$WORK/start/nginx/nginx.conf" -g 'daemon off;')
	printf '   %-28s median %7s ms   p90 %7s ms   (target: < 50 ms, keys generated)\n' \
		"kubicle serve:" "$(kv median_ms "$k")" "$(kv p90_ms "$k")"
	printf '   %-28s median %7s ms   p90 %7s ms   (reference: nginx, TLS, keys on disk)\n' \
		"nginx (master + 1 worker):" "$(kv median_ms "$n")" "$(kv p90_ms "$n")"
}

# ---- 2. memory ------------------------------------------------------------

bench_memory() {
	hr
	echo "2. Memory: $MEM_SERVERS idle servers side by side, after a few requests each"
	local pids=() i dir port km nm
	for i in $(seq 1 "$MEM_SERVERS"); do
		start_kubicle "$WORK/mem/k$i"
		pids+=("$KPID")
		dir=$WORK/mem/k$i
		kcurl "$dir" "$KPORT" -o /dev/null "https://127.0.0.1:$KPORT/readyz" \
			-o /dev/null "https://127.0.0.1:$KPORT/api/v1/namespaces/default/pods" \
			-o /dev/null "https://127.0.0.1:$KPORT/api/v1/namespaces"
		[ "$(create_pod "$dir" "$KPORT" mem-pod)" = 201 ] || echo "   warning: create on server $i failed" >&2
		kcurl "$dir" "$KPORT" -o /dev/null "https://127.0.0.1:$KPORT/api/v1/namespaces/default/pods/mem-pod"
	done
	sleep 1
	km=$(mem_of "${pids[@]}")
	for p in "${pids[@]}"; do stop_pid "$p"; done
	pids=()
	for i in $(seq 1 "$MEM_SERVERS"); do
		port=$(free_port)
		mkdir -p "$WORK/mem/n$i"
		nginx_conf "$WORK/mem/n$i" "$port" off
		start_nginx "$WORK/mem/n$i"
		pids+=("$NPID")
		curl -sS -k --cert "$CERTS/admin.crt" --key "$CERTS/admin.key" -o /dev/null \
			"https://127.0.0.1:$port/readyz" -o /dev/null "https://127.0.0.1:$port/readyz"
	done
	sleep 1
	nm=$(mem_of "${pids[@]}")
	for p in "${pids[@]}"; do stop_pid "$p"; done
	printf '   %-28s PSS %6s KiB   Private_Dirty %6s KiB   (target: PSS < 5120 KiB)\n' \
		"kubicle serve, avg:" ${km}
	printf '   %-28s PSS %6s KiB   Private_Dirty %6s KiB   (reference)\n' \
		"nginx single-process, avg:" ${nm}
}

# ---- 3. GET one pod -------------------------------------------------------

bench_get() {
	hr
	echo "3. GET one pod over kept-alive TLS, server on one core ($CONNS_GET connections, ${GET_SECS} s)"
	local dir=$WORK/get k n port
	start_kubicle "$dir" $SRV
	local kpid=$KPID kport=$KPORT
	[ "$(create_pod "$dir" "$kport" bench-get)" = 201 ] || { echo "create failed" >&2; exit 1; }
	kcurl "$dir" "$kport" -o "$WWW/pod.json" \
		"https://127.0.0.1:$kport/api/v1/namespaces/default/pods/bench-get"
	k=$($CLI "$LOADGEN" -p "$kport" --cert "$dir/admin.crt" --key "$dir/admin.key" \
		-c "$CONNS_GET" -d "$GET_SECS" -u /api/v1/namespaces/default/pods/bench-get \
		--label kubicle-get)
	stop_pid "$kpid"
	port=$(free_port)
	mkdir -p "$WORK/get-nginx"
	nginx_conf "$WORK/get-nginx" "$port" on
	start_nginx "$WORK/get-nginx" $SRV
	n=$($CLI "$LOADGEN" -p "$port" --cert "$CERTS/admin.crt" --key "$CERTS/admin.key" \
		-c "$CONNS_GET" -d "$GET_SECS" -u /pod.json --label nginx-get)
	stop_pid "$NPID"
	echo "   response body: $(wc -c <"$WWW/pod.json") bytes (nginx serves the same bytes as a file)"
	printf '   %-28s %8s req/s   p50 %s ms   p99 %s ms   bad %s\n' "kubicle GET pod:" \
		"$(kv rps "$k")" "$(kv p50_ms "$k")" "$(kv p99_ms "$k")" "$(kv bad_status "$k")"
	printf '   %-28s %8s req/s   p50 %s ms   p99 %s ms   bad %s\n' "nginx static file:" \
		"$(kv rps "$n")" "$(kv p50_ms "$n")" "$(kv p99_ms "$n")" "$(kv bad_status "$n")"
	awk -v a="$(kv rps "$k")" -v b="$(kv rps "$n")" \
		'BEGIN{printf "   ratio kubicle/nginx: %.0f%%   (target: >= 30%%)\n", 100*a/b}'
}

# ---- 4. durable creates ---------------------------------------------------

bench_create() {
	hr
	echo "4. Durable pod creates, $(wc -c <"$POD")-byte pods ($CONNS_CREATE connections, ${CREATE_SECS} s)"
	local dir=$WORK/create k s1 s2
	start_kubicle "$dir" $SRV
	local kpid=$KPID
	k=$($CLI "$LOADGEN" -p "$KPORT" --cert "$dir/admin.crt" --key "$dir/admin.key" \
		-c "$CONNS_CREATE" -d "$CREATE_SECS" -m POST -u /api/v1/namespaces/default/pods \
		--body "$POD" --expect 201 --name-prefix c --label kubicle-create)
	stop_pid "$kpid"
	mkdir -p "$WORK/sqlite"
	s1=$($SRV "$SQLITE_REF" --db "$WORK/sqlite/ref1.db" --secs 5 --size "$(wc -c <"$POD")" \
		--label sqlite-1row)
	s2=$($SRV "$SQLITE_REF" --db "$WORK/sqlite/ref2.db" --secs 5 --size "$(wc -c <"$POD")" \
		--with-event --label sqlite-2rows)
	printf '   %-36s %8s /s   p50 %s ms   p99 %s ms   bad %s   (target: >= 3000/s)\n' \
		"kubicle POST pod (201):" "$(kv rps "$k")" "$(kv p50_ms "$k")" "$(kv p99_ms "$k")" \
		"$(kv bad_status "$k")"
	printf '   %-36s %8s /s   (reference: WAL, synchronous=NORMAL, 1 txn/insert)\n' \
		"SQLite, 1 row per txn:" "$(kv per_s "$s1")"
	printf '   %-36s %8s /s   (object + event row per txn, as Kubicle writes)\n' \
		"SQLite, 2 rows per txn:" "$(kv per_s "$s2")"
}

# ---- 5. concurrent watches ------------------------------------------------

bench_watch() {
	hr
	echo "5. $WATCHERS concurrent watches on pods in one namespace, then $WATCH_CREATES creates one at a time"
	echo "   (after one create not counted: the first event also sets up the server's send batch)"
	local dir=$WORK/watch w ki ni port
	start_kubicle "$dir" $SRV
	w=$($CLI "$WATCHERS_BIN" -p "$KPORT" --cert "$dir/admin.crt" --key "$dir/admin.key" \
		--body "$POD" --pid "$KPID" -n "$WATCHERS" --creates "$WATCH_CREATES" --label watch)
	stop_pid "$KPID"
	# References: the same number of idle kept-alive TLS connections (one GET
	# each) held by a fresh kubicle and by single-process nginx.
	start_kubicle "$WORK/watch-idle" $SRV
	ki=$($CLI "$WATCHERS_BIN" -p "$KPORT" --cert "$dir/admin.crt" --key "$dir/admin.key" \
		--pid "$KPID" -n "$WATCHERS" --idle /readyz --label kubicle-idle)
	stop_pid "$KPID"
	port=$(free_port)
	mkdir -p "$WORK/watch-nginx"
	nginx_conf "$WORK/watch-nginx" "$port" off
	start_nginx "$WORK/watch-nginx" $SRV
	ni=$($CLI "$WATCHERS_BIN" -p "$port" --cert "$CERTS/admin.crt" --key "$CERTS/admin.key" \
		--pid "$NPID" -n "$WATCHERS" --idle /readyz --label nginx-idle)
	stop_pid "$NPID"
	printf '   %-34s %s -> %s KiB (%s watches streaming)\n' "kubicle PSS:" \
		"$(kv pss_before_kib "$w")" "$(kv pss_after_kib "$w")" "$(kv streaming "$w")"
	printf '   %-34s %6s KiB   (target: < 8 KiB)\n' "memory per watch:" "$(kv per_watch_kib "$w")"
	printf '   %-34s %6s KiB   (reference, %s established)\n' "kubicle, per idle TLS connection:" \
		"$(kv per_conn_kib "$ki")" "$(kv established "$ki")"
	printf '   %-34s %6s KiB   (reference, %s established)\n' "nginx, per idle TLS connection:" \
		"$(kv per_conn_kib "$ni")" "$(kv established "$ni")"
	printf '   %-34s p50 %s ms   p99 %s ms   max %s ms   (target: p99 < 10 ms)\n' \
		"create response -> ADDED:" "$(kv p50_ms "$w")" "$(kv p99_ms "$w")" "$(kv max_ms "$w")"
	echo "      (negative: the watcher had the event before the creator had its response)"
	printf '   %-34s p50 %s ms   p99 %s ms   max %s ms\n' "create request sent -> ADDED:" \
		"$(kv sent_p50_ms "$w")" "$(kv sent_p99_ms "$w")" "$(kv sent_max_ms "$w")"
	printf '   %-34s p50 %s ms   p99 %s ms\n' "create round trip (reference):" \
		"$(kv create_rtt_p50_ms "$w")" "$(kv create_rtt_p99_ms "$w")"
	printf '   %-34s median %s ms   worst %s ms   (over the creates)\n' \
		"one event to all $WATCHERS watchers:" "$(kv fanout_p50_ms "$w")" "$(kv fanout_max_ms "$w")"
	printf '   %-34s %s received, %s missing\n' "events:" "$(kv events "$w")" "$(kv missing "$w")"
}

# ---- 7. idle tenants, 8. the syncer (issue 27 item 5) ----------------------
# 7 is not in the default list: 4-10 minutes (2,000 kubicle create, 60 s of
# idleness counted); 8 is, about 1-2 minutes (the syncer's run with its two
# references, then one under callgrind). Each calls the script that owns it; their figures and
# references are explained in bench/README.md ("Scale with the work").

bench_idle_tenants() {
	hr
	echo "7. ${IDLE_TENANTS} idle tenants: memory, processes, fds, wake-ups, kubicle list (bench/tenants.sh 2)"
	BUILD=$BUILD IDLE=$IDLE_TENANTS bash bench/tenants.sh 2 | sed -n '/^2\./,$p' | grep -v '^---'
}

bench_syncer() {
	hr
	echo "8. the syncer: ${SYNC_PODS} tenant pods to the host, ${SYNC_CLIENTS} clients (bench/sync.sh; aim >= 2,000 pods/s, p99 < 10 ms)"
	bash bench/sync.sh "$BUILD" "$SYNC_PODS" "$SYNC_CLIENTS" | sed 's/^/   /'
	echo "   the syncer's instructions per synced pod (callgrind, 300 pods, 1 client):"
	PROFILE=callgrind bash bench/sync.sh "$BUILD" 300 1 | tail -1 | sed 's/^/   /'
}

case $ONLY in *" 1 "*) bench_startup ;; esac
case $ONLY in *" 2 "*) bench_memory ;; esac
case $ONLY in *" 3 "*) bench_get ;; esac
case $ONLY in *" 4 "*) bench_create ;; esac
case $ONLY in *" 5 "*) bench_watch ;; esac
case $ONLY in *" 7 "*) bench_idle_tenants ;; esac
case $ONLY in *" 8 "*) bench_syncer ;; esac
hr
