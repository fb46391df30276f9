#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs Kubicle's benchmarks (issue 2) and prints each figure next to a
# reference measured in the same run and next to its target. These are
# measurements, not tests: nothing passes or fails.
#
#   bench/run.sh            # everything (about 4-5 minutes on 2 cores)
#   bench/run.sh 3 4        # only benchmarks 3 and 4
#   bench/run.sh 7 8        # issue 27's scale benchmarks (7 is not in the
#                           # default list: 4-10 min; 8 is, about 1-2 min)
#
# Environment: BUILD (build folder, default build-bench), GET_SECS,
# CREATE_SECS, CONNS_GET, CONNS_CREATE, WATCHERS, WATCH_CREATES, STARTUP_RUNS,
# LIST_PODS (6), IDLE_TENANTS (7), SYNC_PODS, SYNC_CLIENTS, SYNC_RATE, SYNC_SECS and SYNC_CONNS (8), KEEP=1 (keep
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
LIST_PODS=${LIST_PODS:-10000}
MEM_SERVERS=${MEM_SERVERS:-50}
IDLE_TENANTS=${IDLE_TENANTS:-2000}
SYNC_PODS=${SYNC_PODS:-2000}
SYNC_CLIENTS=${SYNC_CLIENTS:-8}
SYNC_RATE=${SYNC_RATE:-2000}
SYNC_SECS=${SYNC_SECS:-5}
SYNC_CONNS=${SYNC_CONNS:-32}
ONLY=" ${*:-1 2 3 4 5 6 8} "

# ---- set-up ---------------------------------------------------------------

bash scripts/setup.sh
(test -d "$BUILD" || meson setup "$BUILD" >/dev/null)
ninja -C "$BUILD" cmd/kubicle bench/loadgen bench/startup bench/watchers bench/sqlite_ref \
	bench/bulk bench/sendfloor >/dev/null
KUBICLE=$ROOT/$BUILD/cmd/kubicle
LOADGEN=$ROOT/$BUILD/bench/loadgen
STARTUP=$ROOT/$BUILD/bench/startup
WATCHERS_BIN=$ROOT/$BUILD/bench/watchers
SENDFLOOR=$ROOT/$BUILD/bench/sendfloor
SQLITE_REF=$ROOT/$BUILD/bench/sqlite_ref
BULK=$ROOT/$BUILD/bench/bulk
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
POD=$ROOT/bench/pod-2k.json
# benchmark 4's body: a training pod as kubectl sends it (two containers,
# env, ports, resources, volumes, tolerations)
CREATE_POD=${CREATE_POD:-$ROOT/bench/pod-train.json}

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

# kcurl DIR PORT ARGS...: curl with the tenant's admin credential (and a
# user agent of its own: kube indents JSON for curl's).
kcurl() {
	local dir=$1 port=$2; shift 2
	curl -sS -A kubicle-bench --cacert "$dir/ca.crt" --cert "$dir/admin.crt" \
		--key "$dir/admin.key" --resolve "kubicle:$port:127.0.0.1" "$@"
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
	echo "1. Start-up until GET /readyz answers 200 over TLS ($STARTUP_RUNS runs each)"
	local k r n port
	mkdir -p "$WORK/start"
	# first start: an empty data dir per run (keys, certificates, SQLite file,
	# built-in objects); then the same dirs again: a start on existing data
	k=$("$STARTUP" --runs "$STARTUP_RUNS" --label kubicle --path /readyz \
		--kubeconfig "$WORK/start/k{}/kubeconfig" --log "$WORK/start.log" -- \
		"$KUBICLE" serve --data-dir "$WORK/start/k{}" --listen 127.0.0.1:0)
	r=$("$STARTUP" --runs "$STARTUP_RUNS" --label kubicle-again --path /readyz \
		--kubeconfig "$WORK/start/k{}/kubeconfig" --log "$WORK/start.log" -- \
		"$KUBICLE" serve --data-dir "$WORK/start/k{}" --listen 127.0.0.1:0)
	port=$(free_port)
	mkdir -p "$WORK/start/nginx"
	nginx_conf "$WORK/start/nginx" "$port" on
	n=$("$STARTUP" --runs "$STARTUP_RUNS" --label nginx --path /readyz --port "$port" \
		--cert "$CERTS/admin.crt" --key "$CERTS/admin.key" --log "$WORK/start.log" -- \
		"$NGINX" -c "$WORK/start/nginx/nginx.conf" -g 'daemon off;')
	printf '   %-30s median %7s ms   p90 %7s ms   (target: median < 15 ms, keys generated)\n' \
		"kubicle serve, first start:" "$(kv median_ms "$k")" "$(kv p90_ms "$k")"
	printf '   %-30s median %7s ms   p90 %7s ms   (target: median < 10 ms)\n' \
		"kubicle serve, existing data:" "$(kv median_ms "$r")" "$(kv p90_ms "$r")"
	printf '   %-30s median %7s ms   p90 %7s ms   (reference: nginx, TLS, keys on disk)\n' \
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
	# idle: a server gives back what its last requests left cached within
	# two seconds (lib/http.c aflush_cb)
	sleep 3
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
	local dir=$WORK/get k t k2 n n2 port tok
	start_kubicle "$dir" $SRV
	local kpid=$KPID kport=$KPORT
	[ "$(create_pod "$dir" "$kport" bench-get)" = 201 ] || { echo "create failed" >&2; exit 1; }
	kcurl "$dir" "$kport" -o "$WWW/pod.json" \
		"https://127.0.0.1:$kport/api/v1/namespaces/default/pods/bench-get"
	# a service account's token (kubectl create token), bound to cluster-admin
	kcurl "$dir" "$kport" -o /dev/null -H 'Content-Type: application/json' \
		-d '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"bench"}}' \
		"https://127.0.0.1:$kport/api/v1/namespaces/default/serviceaccounts"
	kcurl "$dir" "$kport" -o /dev/null -H 'Content-Type: application/json' \
		-d '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"bench"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"ServiceAccount","name":"bench","namespace":"default"}]}' \
		"https://127.0.0.1:$kport/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
	tok=$(kcurl "$dir" "$kport" -H 'Content-Type: application/json' \
		-d '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":86400}}' \
		"https://127.0.0.1:$kport/api/v1/namespaces/default/serviceaccounts/bench/token" |
		sed -n 's/.*"token": *"\([^"]*\)".*/\1/p')
	[ -n "$tok" ] || { echo "no token" >&2; exit 1; }
	local get=(-c "$CONNS_GET" -d "$GET_SECS" -u /api/v1/namespaces/default/pods/bench-get)
	k=$($CLI "$LOADGEN" -p "$kport" --cert "$dir/admin.crt" --key "$dir/admin.key" "${get[@]}" \
		--label kubicle-get)
	t=$($CLI "$LOADGEN" -p "$kport" --token "$tok" "${get[@]}" --label kubicle-get-token)
	k2=$($CLI "$LOADGEN" -p "$kport" --cert "$dir/admin.crt" --key "$dir/admin.key" "${get[@]}" \
		-t 2 --label kubicle-get-2threads)
	stop_pid "$kpid"
	port=$(free_port)
	mkdir -p "$WORK/get-nginx"
	nginx_conf "$WORK/get-nginx" "$port" on
	start_nginx "$WORK/get-nginx" $SRV
	n=$($CLI "$LOADGEN" -p "$port" --cert "$CERTS/admin.crt" --key "$CERTS/admin.key" \
		-c "$CONNS_GET" -d "$GET_SECS" -u /pod.json --label nginx-get)
	n2=$($CLI "$LOADGEN" -p "$port" --cert "$CERTS/admin.crt" --key "$CERTS/admin.key" \
		-c "$CONNS_GET" -d "$GET_SECS" -u /pod.json -t 2 --label nginx-get-2threads)
	stop_pid "$NPID"
	echo "   response body: $(wc -c <"$WWW/pod.json") bytes (nginx serves the same bytes as a file)"
	local line
	for line in "kubicle, client certificate:|$k" "kubicle, bearer token (SA):|$t" \
		"kubicle, cert, 2 client threads:|$k2" "nginx static file:|$n" \
		"nginx, 2 client threads:|$n2"; do
		printf '   %-34s %8s req/s   p50 %s ms   p99 %s ms   bad %s   client %s cores\n' \
			"${line%%|*}" "$(kv rps "${line#*|}")" "$(kv p50_ms "${line#*|}")" \
			"$(kv p99_ms "${line#*|}")" "$(kv bad_status "${line#*|}")" \
			"$(kv client_cpu "${line#*|}")"
	done
	awk -v a="$(kv rps "$k")" -v t="$(kv rps "$t")" -v b="$(kv rps "$n")" \
		'BEGIN{printf "   ratio to nginx: certificate %.0f%%, token %.0f%%   (target: >= 60%%)\n", 100*a/b, 100*t/b}'
	echo "   (the client is not the limit while its CPU stays under 1 core and a second"
	echo "    client thread on the same core does not raise the rate)"
}

# ---- 4. durable creates ---------------------------------------------------

# commits DIR PORT: the server's store commits so far (its metrics)
commits() {
	kcurl "$1" "$2" "https://127.0.0.1:$2/metrics" |
		awk '/^kubicle_store_commit_duration_seconds_count/ {print $2}'
}

bench_create() {
	hr
	echo "4. Durable pod creates, $(wc -c <"$CREATE_POD")-byte pods as kubectl sends them" \
		"($CONNS_CREATE connections, ${CREATE_SECS} s)"
	local dir=$WORK/create k s1 s2 s3 c0 c1 n stored per
	start_kubicle "$dir" $SRV
	local kpid=$KPID
	stored=$(sed 's/@NAME@/sizer/' "$CREATE_POD" | kcurl "$dir" "$KPORT" -H 'Content-Type: application/json' \
		--data-binary @- "https://127.0.0.1:$KPORT/api/v1/namespaces/default/pods" | wc -c)
	c0=$(commits "$dir" "$KPORT")
	k=$($CLI "$LOADGEN" -p "$KPORT" --cert "$dir/admin.crt" --key "$dir/admin.key" \
		-c "$CONNS_CREATE" -d "$CREATE_SECS" -w 0 -m POST -u /api/v1/namespaces/default/pods \
		--body "$CREATE_POD" --expect 201 --name-prefix c --label kubicle-create)
	c1=$(commits "$dir" "$KPORT")
	n=$(kcurl "$dir" "$KPORT" "https://127.0.0.1:$KPORT/api/v1/namespaces/default/pods?limit=1" |
		sed -n 's/.*"remainingItemCount": *\([0-9]*\).*/\1/p')
	stop_pid "$kpid"
	# creates per commit: the objects made over the commits of the run
	per=$(awk -v n="${n:-0}" -v a="$c0" -v b="$c1" 'BEGIN{d=b-a; if (d<1) d=1; v=(n+1)/d; printf "%d", (v<1?1:v+0.5)}')
	mkdir -p "$WORK/sqlite"
	s1=$($SRV "$SQLITE_REF" --db "$WORK/sqlite/ref1.db" --secs 5 --size "$stored" \
		--label sqlite-1row)
	s2=$($SRV "$SQLITE_REF" --db "$WORK/sqlite/ref2.db" --secs 5 --size "$stored" \
		--with-event --label sqlite-2rows)
	s3=$($SRV "$SQLITE_REF" --db "$WORK/sqlite/ref3.db" --secs 5 --size "$stored" \
		--with-event --batch "$per" --label sqlite-batch)
	printf '   %-40s %8s /s   p50 %s ms   p99 %s ms   bad %s   client %s cores   (target: >= 10000/s, p99 < 10 ms)\n' \
		"kubicle POST pod (201):" "$(kv rps "$k")" "$(kv p50_ms "$k")" "$(kv p99_ms "$k")" \
		"$(kv bad_status "$k")" "$(kv client_cpu "$k")"
	echo "   stored object: $stored bytes; creates per group commit in the run: $per"
	printf '   %-40s %8s /s   (reference: WAL, synchronous=NORMAL, 1 txn/insert)\n' \
		"SQLite, 1 row per txn:" "$(kv per_s "$s1")"
	printf '   %-40s %8s /s   (key row + event row with the data per txn, as Kubicle writes)\n' \
		"SQLite, 2 rows per txn:" "$(kv per_s "$s2")"
	printf '   %-40s %8s /s   (%s creates per txn, as the group commit achieved)\n' \
		"SQLite, key + event, batched:" "$(kv per_s "$s3")" "$per"
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
	# The floor: the same records sealed and sent in the same io_uring
	# batches to as many loopback connections, nothing above them.
	local fl cpus=(--send-cpu 0 --read-cpu 1)
	[ -n "$SRV" ] || cpus=(--send-cpu 0 --read-cpu 0)
	fl=$("$SENDFLOOR" -n "$WATCHERS" --size "$(kv event_bytes "$w")" --seal --rounds "$WATCH_CREATES" \
		"${cpus[@]}")
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
	printf '   %-34s server %s ms (%s us per watcher)   client %s ms   (CPU time per event)\n' \
		"one event to all, CPU:" "$(kv server_cpu_per_create_ms "$w")" \
		"$(awk -v c="$(kv server_cpu_per_create_ms "$w")" -v n="$WATCHERS" 'BEGIN{printf "%.2f", c*1000/n}')" \
		"$(kv client_cpu_per_create_ms "$w")"
	printf '   %-34s %s ms CPU (%s us per send), median %s ms   (reference: %s-byte records sealed and sent in the same batches, nothing above)\n' \
		"floor, same sends without a server:" "$(kv cpu_per_round_ms "$fl")" "$(kv cpu_per_send_us "$fl")" \
		"$(kv round_p50_ms "$fl")" "$(kv size "$fl")"
}

# ---- 6. large lists ------------------------------------------------------

# kubectl get's Accept for a human-readable list (a Table, falling back to JSON)
TABLE_ACCEPT='application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json'

# list_mem LABEL PID BULK-ARGS...: one bulk run with the server's peak RSS
# (VmHWM after clear_refs 5) above its RSS before, and its PSS after.
list_mem() {
	local label=$1 pid=$2 out r0 hwm pss
	shift 2
	echo 5 >"/proc/$pid/clear_refs"
	r0=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
	out=$($CLI "$BULK" "$@" --label "$label")
	hwm=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
	pss=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup")
	printf '   %-40s %8s ms  %3s page(s)  %6.1f MB   peak RSS +%5.1f MB  PSS after %5.1f MB\n' \
		"$label:" "$(kv total_ms "$out")" "$(kv pages "$out")" \
		"$(awk -v b="$(kv bytes "$out")" 'BEGIN{print b/1e6}')" \
		"$(awk -v a="$hwm" -v b="$r0" 'BEGIN{print (a-b)/1024}')" \
		"$(awk -v a="$pss" 'BEGIN{print a/1024}')"
}

bench_lists() {
	hr
	local pod=$ROOT/bench/pod-train.json
	[ -f "$pod" ] || pod=$ROOT/bench/pod-2k.json
	echo "6. $LIST_PODS pods ($(wc -c <"$pod")-byte $(basename "$pod")) in one namespace: lists, GETs, a watch"
	local dir=$WORK/lists i per=$((LIST_PODS / 4)) out g w
	start_kubicle "$dir" $SRV
	local kpid=$KPID auth=(-p "$KPORT" --cert "$dir/admin.crt" --key "$dir/admin.key")
	local pods=/api/v1/namespaces/default/pods
	# created by 4 clients at once, names l-0 .. l-(LIST_PODS-1)
	local creators=()
	for i in 0 1 2 3; do
		$CLI "$BULK" create "${auth[@]}" --body "$pod" --prefix l --start $((i * per)) \
			-n $((i == 3 ? LIST_PODS - 3 * per : per)) >"$dir.create$i" &
		creators+=($!)
	done
	wait "${creators[@]}"
	cat "$dir".create* | awk '{for(i=1;i<=NF;i++) if ($i ~ /^bad=/) b+=substr($i,5)} END{if (b) print "   warning: " b " creates failed"}'
	list_mem "JSON list (kubectl get -o json)" "$kpid" list "${auth[@]}" -u "$pods"
	list_mem "JSON list, limit=500 pages" "$kpid" list "${auth[@]}" -u "$pods" --limit 500
	list_mem "Table list (kubectl get)" "$kpid" list "${auth[@]}" -u "$pods" --accept "$TABLE_ACCEPT"
	list_mem "Table list, limit=500 pages (kubectl)" "$kpid" list "${auth[@]}" -u "$pods" \
		--limit 500 --accept "$TABLE_ACCEPT"
	g=$($CLI "$BULK" get "${auth[@]}" -u "$pods" --prefix l -n "$LIST_PODS")
	printf '   %-40s %8.0f ms  (%s GET/s, p50 %s ms, p99 %s ms, bad %s)   (reference)\n' \
		"GET each pod by name, one connection:" "$(awk -v s="$(kv total_s "$g")" 'BEGIN{print s*1000}')" \
		"$(kv per_s "$g")" "$(kv p50_ms "$g")" "$(kv p99_ms "$g")" "$(kv bad "$g")"
	w=$($CLI "$BULK" watch "${auth[@]}" -u "$pods?watch=1&resourceVersion=0" -n "$LIST_PODS")
	printf '   %-40s %8s ms  (%s ADDED)\n' "watch from resourceVersion=0, last ADDED:" \
		"$(kv total_ms "$w")" "$(kv added "$w")"
	stop_pid "$kpid"
}

# ---- 7. idle tenants, 8. the syncer (issue 27 item 5) ----------------------
# 7 is not in the default list: 4-10 minutes (2,000 kubicle create, 60 s of
# idleness counted); 8 is, about 2 minutes (the syncer's burst with its two
# references, the same three at a fixed offered rate, then one under
# callgrind). Each calls the script that owns it; their figures and
# references are explained in bench/README.md ("Scale with the work").

bench_idle_tenants() {
	hr
	echo "7. ${IDLE_TENANTS} idle tenants: memory, processes, fds, wake-ups, kubicle list (bench/tenants.sh 2)"
	BUILD=$BUILD IDLE=$IDLE_TENANTS bash bench/tenants.sh 2 | sed -n '/^2\./,$p' | grep -v '^---'
}

bench_syncer() {
	hr
	echo "8. the syncer: ${SYNC_PODS} tenant pods to the host, ${SYNC_CLIENTS} clients (bench/sync.sh; aim >= 2,000 pods/s, p99 < 10 ms)"
	echo "   the most it carries (a burst, closed loop: each client sends when answered):"
	bash bench/sync.sh "$BUILD" "$SYNC_PODS" "$SYNC_CLIENTS" | sed 's/^/   /'
	echo "   at a fixed offered rate (open loop, bench/loadgen -r: latency from each create's due time):"
	SYNC_RATE=$SYNC_RATE SYNC_SECS=$SYNC_SECS bash bench/sync.sh "$BUILD" - "$SYNC_CONNS" |
		sed 's/^/   /'
	echo "   the syncer's instructions per synced pod (callgrind, 300 pods, 1 client):"
	PROFILE=callgrind bash bench/sync.sh "$BUILD" 300 1 | tail -2 | sed 's/^/   /'
}

case $ONLY in *" 1 "*) bench_startup ;; esac
case $ONLY in *" 2 "*) bench_memory ;; esac
case $ONLY in *" 3 "*) bench_get ;; esac
case $ONLY in *" 4 "*) bench_create ;; esac
case $ONLY in *" 5 "*) bench_watch ;; esac
case $ONLY in *" 6 "*) bench_lists ;; esac
case $ONLY in *" 7 "*) bench_idle_tenants ;; esac
case $ONLY in *" 8 "*) bench_syncer ;; esac
hr
