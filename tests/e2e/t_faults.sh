# SPDX-License-Identifier: Apache-2.0
# The fault suite (issue 29): a tenant stays truthful when the process is
# killed under load, when its WAL or database file is removed, and when its
# disk is full, also at start. tests/e2e/faultload.py drives the load and
# keeps the ledger of acknowledged writes; bench/faults.sh runs the same
# driver long.

FAULTS_PY=$E2E_LIB_DIR/faultload.py

# faults_start NAME PORT [ARGS...]: kubicle serve on PORT (0: a free one),
# data dir $E2E_TMP/NAME. Unlike start_server, an existing kubeconfig stays:
# a restart must not need to write one (the full-disk case). Sets
# SERVER_PID, SERVER_URL, DATA_DIR, KCFG; waits for /livez.
faults_start() {
  local name=$1 port=$2 dir=$E2E_TMP/$1 i; shift 2
  "$KUBICLE" serve --data-dir "$dir" --listen "127.0.0.1:$port" "$@" >>"$E2E_TMP/$name.log" 2>&1 &
  SERVER_PID=$!
  E2E_PIDS+=("$SERVER_PID")
  DATA_DIR=$dir KCFG=$dir/kubeconfig
  if [ "$port" = 0 ]; then
    for i in $(seq 600); do
      [ -s "$KCFG" ] && break
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.05
    done
    SERVER_URL=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$KCFG" 2>/dev/null)
  else
    SERVER_URL=https://127.0.0.1:$port
  fi
  [ -n "$SERVER_URL" ] && wait_for "server $name answers /livez" 30 kcurl -f -o /dev/null "$SERVER_URL/livez"
}

faults_port() { local p=${SERVER_URL##*:}; echo "${p%%/*}"; }

# faults_cm NAME: creates a ConfigMap, prints the HTTP status.
faults_cm() {
  kcurl -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    "$SERVER_URL/api/v1/namespaces/default/configmaps" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$1\"}}"
}

# faults_post_i NAME: creates a ConfigMap; prints the answer with its
# headers on one line.
faults_post_i() {
  kcurl -i -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/configmaps" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$1\"}}" | tr -d '\r' | tr '\n' ' '
}

faults_list_rv() {
  kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])'
}

faults_count() { # PREFIX
  kcurl "$SERVER_URL/api/v1/namespaces/default/configmaps" | python3 -c '
import json,sys; print(sum(1 for i in json.load(sys.stdin)["items"] if i["metadata"]["name"].startswith(sys.argv[1])))' "$1"
}

# faults_verify OUT PREFIX: the ledger's checks, one pass or fail each.
faults_verify() {
  local line
  while IFS= read -r line; do
    case $line in
    "ok   "*) pass "${line#ok   }" ;;
    "FAIL "*) fail "${line#FAIL }" ;;
    esac
  done < <(python3 "$FAULTS_PY" verify "$SERVER_URL" "$DATA_DIR" "$1" --prefix "$2" 2>&1)
}

# kill -9 during concurrent creates, KILLS times (E2E_FAULT_KILLS, 3), each
# after STEP more acknowledged writes (E2E_FAULT_STEP, 150); the server comes
# back on the same port; then the ledger is checked.
faults_kill9() {
  local out=$E2E_TMP/kill9 kills=${E2E_FAULT_KILLS:-3} step=${E2E_FAULT_STEP:-150} k port load t0
  faults_start kill9 0 ${FAULTS_SERVE_ARGS[@]+"${FAULTS_SERVE_ARGS[@]}"} || { fail "kill9 server"; return; }
  port=$(faults_port)
  mkdir -p "$out"
  python3 "$FAULTS_PY" run "$SERVER_URL" "$DATA_DIR" "$out" --workers "${E2E_FAULT_WORKERS:-8}" \
    --prefix load >"$out/run.log" 2>&1 &
  load=$!
  E2E_PIDS+=("$load")
  for k in $(seq "$kills"); do
    wait_for "$((k * step)) acknowledged creates" 120 \
      bash -c "[ \"\$(cat '$out/progress' 2>/dev/null || echo 0)\" -ge $((k * step)) ]" || break
    t0=$(date +%s.%N)
    stop_server KILL
    faults_start kill9 "$port" ${FAULTS_SERVE_ARGS[@]+"${FAULTS_SERVE_ARGS[@]}"} || { fail "restart $k after kill -9"; break; }
    echo "$t0 $(date +%s.%N)" >>"$out/restarts" # kill to /livez answering
  done
  wait_for "more creates after the last restart" 120 \
    bash -c "[ \"\$(cat '$out/progress' 2>/dev/null || echo 0)\" -ge $(((kills + 1) * step)) ]"
  touch "$out/stop"
  wait "$load"
  echo "     load: $(cat "$out/stats.json" 2>/dev/null)"
  faults_verify "$out" load
  stop_server TERM
}

# The WAL removed under a running server: rebuilt before the next ack, so a
# kill -9 afterwards loses nothing; the database file removed: writes are
# refused in kube's words, /readyz fails its etcd check, reads go on.
faults_wal() {
  local i ok=0 rv0 port
  faults_start wal 0 || { fail "wal server"; return; }
  port=$(faults_port)
  for i in $(seq 20); do [ "$(faults_cm before-$i)" = 201 ] && ok=$((ok + 1)); done
  rm "$DATA_DIR/kubicle.db-wal"
  for i in $(seq 30); do [ "$(faults_cm after-$i)" = 201 ] && ok=$((ok + 1)); done
  expect_eq "writes after the WAL was removed are acknowledged" 50 echo "$ok"
  expect_eq "a new WAL is in place" yes bash -c "[ -f '$DATA_DIR/kubicle.db-wal' ] && echo yes"
  expect_eq "/readyz stays ok" ok kcurl "$SERVER_URL/readyz"
  expect "metrics: the rebuilt WAL is counted" '^kubicle_storage_wal_rebuilds_total [1-9]' \
    kcurl "$SERVER_URL/metrics"
  rv0=$(faults_list_rv)
  stop_server KILL
  faults_start wal "$port" || { fail "wal restart"; return; }
  expect_eq "after kill -9 every acknowledged write is there" "20 30" \
    echo "$(faults_count before-) $(faults_count after-)"
  expect_eq "and the resourceVersion did not go backwards" yes \
    bash -c "[ $(faults_list_rv) -ge $rv0 ] && echo yes"
  expect "/readyz?verbose lists its checks, etcd among them" '\[\+\]etcd ok' kcurl "$SERVER_URL/readyz?verbose"
  rm "$DATA_DIR/kubicle.db"
  expect "the write that finds the database file removed is not acknowledged" \
    'Retry-After: 2.*"reason":"ServerTimeout".*"code":500' faults_post_i lost-1
  expect "with the database file removed, writes are refused as kube refuses them when its storage fails" \
    '"reason":"ServerTimeout".*"code":500' kcurl -X POST -H 'Content-Type: application/json' \
    "$SERVER_URL/api/v1/namespaces/default/configmaps" -d '{"metadata":{"name":"lost-2"}}'
  expect "with kube's message and Retry-After" \
    'Retry-After: 2.*The create operation against configmaps could not be completed at this time, please try again' \
    bash -c "curl -sS -i --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key -X POST -H 'Content-Type: application/json' $SERVER_URL/api/v1/namespaces/default/configmaps -d '{\"metadata\":{\"name\":\"lost-3\"}}' | tr -d '\r' | tr '\n' ' '"
  expect_eq "/readyz fails its etcd check in kube's format" \
    "500 [+]ping ok [+]log ok [-]etcd failed: reason withheld readyz check failed" \
    bash -c "curl -sS -w '%{http_code} ' -o /tmp/kb-faults-rz.$$ --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key $SERVER_URL/readyz; tr '\n' ' ' </tmp/kb-faults-rz.$$ | sed 's/ \$//'; rm -f /tmp/kb-faults-rz.$$"
  expect "/readyz/etcd says why" 'internal server error: kubicle.db was removed or replaced' \
    kcurl "$SERVER_URL/readyz/etcd"
  expect "metrics: the refused writes are counted by fault" \
    '^kubicle_storage_writes_refused_total\{reason="database_removed"\} ([3-9]|[1-9][0-9])' \
    kcurl "$SERVER_URL/metrics"
  expect "metrics: the fault standing" '^kubicle_storage_fault\{reason="database_removed"\} 1' \
    kcurl "$SERVER_URL/metrics"
  expect_eq "/livez stays ok (a restart would lose what the process still holds)" ok kcurl "$SERVER_URL/livez"
  expect_eq "reads go on" 200 kcurl -o /dev/null -w '%{http_code}' "$SERVER_URL/api/v1/namespaces/default/configmaps/after-30"
  stop_server KILL
}

# An older copy of kubicle.db put back (what a WAL removed just before a
# crash leaves too): the revision still does not go backwards, and watchers
# from the lost range are told to relist (410), as after etcd's restore with
# --bump-revision --mark-compacted.
faults_older_copy() {
  local port rv i
  faults_start older 0 || { fail "older server"; return; }
  port=$(faults_port)
  for i in 1 2 3; do faults_cm kept-$i >/dev/null; done
  python3 -c 'import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d); d.close()' \
    "$DATA_DIR/kubicle.db" "$E2E_TMP/older-copy.db"
  for i in 1 2 3; do faults_cm lost-$i >/dev/null; done
  rv=$(faults_list_rv)
  wait_for "the revision mark reaches $rv" 30 bash -c "[ \"\$(cat '$DATA_DIR/kubicle.db-rev' 2>/dev/null || echo 0)\" -ge $rv ]"
  stop_server KILL
  cp "$E2E_TMP/older-copy.db" "$DATA_DIR/kubicle.db"
  rm -f "$DATA_DIR/kubicle.db-wal" "$DATA_DIR/kubicle.db-shm"
  faults_start older "$port" || { fail "older restart"; return; }
  expect_eq "with an older copy of the store, the list's resourceVersion is still past every one served" yes \
    bash -c "[ $(faults_list_rv) -gt $rv ] && echo yes"
  expect "a watch from a revision of the lost range is told to relist (410 Expired)" \
    '"type":"ERROR".*"reason":"Expired".*"code":410' \
    kcurl -m 10 "$SERVER_URL/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=$((rv - 1))"
  expect_eq "what the copy holds is served, what it lost is not" "200 404" \
    echo "$(kcurl -o /dev/null -w '%{http_code}' "$SERVER_URL/api/v1/namespaces/default/configmaps/kept-3") $(kcurl -o /dev/null -w '%{http_code}' "$SERVER_URL/api/v1/namespaces/default/configmaps/lost-1")"
  expect "the server log says commits were lost" 'commits were lost' cat "$E2E_TMP/older.log"
  stop_server TERM
}

# faults_mount DIR SIZE: a small tmpfs at DIR (as root, or with sudo -n);
# false when this machine does not allow it.
faults_mount() {
  local dir=$1 size=$2 sudo=()
  mkdir -p "$dir"
  [ "$(id -u)" = 0 ] || { sudo -n true 2>/dev/null && sudo=(sudo -n); } || return 1
  "${sudo[@]}" mount -t tmpfs -o "size=$size,uid=$(id -u),gid=$(id -g),mode=0700" tmpfs "$dir" 2>/dev/null
}

faults_umount() {
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo -n)
  "${sudo[@]}" umount -l "$1" 2>/dev/null
}

# faults_fill DIR: fills DIR's file system (DIR/fill).
faults_fill() { dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null; sync; }

# A full disk at run time and at start: the server comes up anyway, serves
# reads, refuses writes in kube's words, and takes writes again by itself
# once there is room.
faults_disk() {
  local dir=$E2E_TMP/disk port code
  if ! faults_mount "$dir" 8m; then
    echo "skip full-disk checks: cannot mount a tmpfs here (needs root or sudo -n)"
    return
  fi
  trap "faults_umount '$dir'; e2e_cleanup" EXIT # an interrupted run leaves no mount
  faults_start disk 0 || { fail "disk server"; faults_umount "$dir"; return; }
  port=$(faults_port)
  expect_eq "a write before the disk fills" 201 faults_cm full-0
  faults_fill "$dir"
  expect "the write that finds the disk full is refused in kube's words" \
    'Retry-After: 2.*"reason":"ServerTimeout".*"code":500' faults_post_i full-1
  expect "and so are the next ones, before they reach the disk" '"reason":"ServerTimeout".*"code":500' \
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/configmaps" \
    -d '{"metadata":{"name":"full-2"}}'
  stop_server KILL
  faults_fill "$dir" # whatever the kill freed
  faults_start disk "$port" || { fail "no start on a full disk: $(tail -3 "$E2E_TMP/disk.log")"; faults_umount "$dir"; return; }
  pass "the server starts on a full disk"
  expect_eq "it serves reads" 200 kcurl -o /dev/null -w '%{http_code}' "$SERVER_URL/api/v1/namespaces/default/configmaps/full-0"
  faults_cm full-3 >/dev/null
  expect "it refuses writes in kube's words" '"reason":"ServerTimeout".*"code":500' \
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces/default/configmaps" \
    -d '{"metadata":{"name":"full-4"}}'
  expect_rc "/readyz fails" 22 '500' kcurl -f "$SERVER_URL/readyz"
  expect "metrics: writes refused for want of space" \
    '^kubicle_storage_writes_refused_total\{reason="no_space"\} [1-9]' kcurl "$SERVER_URL/metrics"
  rm -f "$dir/fill"
  expect_until "/readyz is ok again once there is room" ok kcurl "$SERVER_URL/readyz"
  expect_eq "and writes are taken again" 201 faults_cm full-5
  # a clean stop removes SQLite's -wal and -shm: the next start on a full
  # disk has no room for the WAL index
  stop_server TERM
  faults_fill "$dir"
  faults_start disk "$port" || { fail "no start on a full disk after a clean stop: $(tail -3 "$E2E_TMP/disk.log")"; faults_umount "$dir"; return; }
  pass "the server starts on a full disk after a clean stop too (no room for the WAL index)"
  expect_eq "it serves reads" 200 kcurl -o /dev/null -w '%{http_code}' "$SERVER_URL/api/v1/namespaces/default/configmaps/full-5"
  expect "it refuses writes in kube's words" '"reason":"ServerTimeout".*"code":500' faults_post_i full-6
  rm -f "$dir/fill"
  expect_until "/readyz is ok again once there is room" ok kcurl "$SERVER_URL/readyz"
  expect_eq "writes are taken again" 201 faults_cm full-7
  expect_eq "and the WAL index is a file again (other processes may read the store)" yes \
    bash -c "[ -s '$dir/kubicle.db-shm' ] && echo yes"
  stop_server TERM
  faults_umount "$dir"
  trap e2e_cleanup EXIT
}

# A clock step must not delete a tenant with a TTL (issue 29, item 10): the
# TTL counts the time its supervisor has run (cmd/supervise.h). The step is
# made by moving tenant.json's created/expires 2 h back while the tenant is
# stopped, which is how the calendar reads them after a 2 h forward jump.
faults_ttl() {
  local home=$E2E_TMP/ttlhome
  ft() { KUBICLE_HOME=$home "$KUBICLE" "$@"; }
  ft create tj --ttl 1h --wait >/dev/null 2>&1 || { fail "create --ttl 1h: $(ft create tj --ttl 1h 2>&1)"; return; }
  ft stop tj >/dev/null
  python3 - "$home/tenants/tj/tenant.json" <<'PY'
import json, sys
p = sys.argv[1]
o = json.load(open(p))
o["created"] -= 7200
o["expires"] -= 7200
json.dump(o, open(p, "w"))
PY
  expect "after a 2 h clock step, start runs the tenant instead of deleting it" 'tenant tj is running' \
    ft start tj --wait
  wait_for "the supervisor counted the TTL" 30 grep -q 'time to live: .*the calendar says expired' \
    "$home/tenants/tj/server.log"
  expect "the supervisor keeps it: it answers" default \
    kubectl --kubeconfig "$home/tenants/tj/kubeconfig" get ns default -o name
  expect "list shows the TTL left as time run, not as the calendar" '^tj .* (59m|60m)$' ft list
  ft delete tj >/dev/null
  ft create tk --ttl 2s --wait >/dev/null 2>&1
  expect_until "a TTL that runs out still deletes the tenant" gone \
    bash -c "[ -d '$home/tenants/tk' ] && echo here || echo gone"
  expect "its store is kept for a restore" "tk-[0-9TZ]+\.db" ls "$home/expired"
  # a TTL used up while stopped (ttl-used says so): start deletes it, and
  # what it held comes back with kubicle restore
  local kept
  ft create tm --ttl 1h --wait >/dev/null 2>&1
  kubectl --kubeconfig "$home/tenants/tm/kubeconfig" create configmap keep-me --from-literal=a=b >/dev/null
  ft stop tm >/dev/null
  echo 3600 >"$home/tenants/tm/ttl-used"
  expect "start of a tenant whose TTL ran out deletes it and says where its store is kept" \
    "tenant tm expired: deleting it \(its store is kept in $home/expired/tm-" ft start tm --wait
  expect_eq "the tenant is gone" gone bash -c "[ -d '$home/tenants/tm' ] && echo here || echo gone"
  kept=$(ls "$home"/expired/tm-*.db 2>/dev/null | head -1)
  ft restore tm2 "$kept" --wait >/dev/null 2>&1
  expect_eq "kubicle restore brings its objects back" b \
    kubectl --kubeconfig "$home/tenants/tm2/kubeconfig" get configmap keep-me -o 'jsonpath={.data.a}'
  local t
  for t in tj tk tm tm2; do ft delete "$t" --ignore-not-found >/dev/null 2>&1; done
}

faults_suite() {
  local saved=("$SERVER_PID" "$KCFG" "$SERVER_URL" "$DATA_DIR")
  faults_wal
  faults_older_copy
  faults_disk
  faults_kill9
  faults_ttl
  SERVER_PID=${saved[0]} KCFG=${saved[1]} SERVER_URL=${saved[2]} DATA_DIR=${saved[3]}
}
