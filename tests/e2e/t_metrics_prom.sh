# SPDX-License-Identifier: Apache-2.0
# GET /metrics (proxy/core/prom.c) with the real kubectl: the text parses
# (tests/e2e/promtext.py), counters move by exactly what known requests add,
# a watch shows in the long-running gauge only while open, stored objects
# follow creates and deletes, and RBAC lets system:masters and the group
# system:monitoring read it while a plain user gets 403.

PROMTEXT=$E2E_LIB_DIR/promtext.py

# prom_scrape: the admin's `kubectl get --raw /metrics` into $E2E_TMP/metrics.txt
prom_scrape() {
  kubectl --kubeconfig "$KCFG" get --raw /metrics >"$E2E_TMP/metrics.txt" 2>&1
}

# prom_get 'name{label="v",...}': the sum of the matching samples of a new scrape
prom_get() {
  prom_scrape && python3 "$PROMTEXT" get "$1" <"$E2E_TMP/metrics.txt"
}

# prom_delta DESC WANT SERIES CMD...: SERIES grows by exactly WANT across CMD
prom_delta() {
  local desc=$1 want=$2 series=$3 before after; shift 3
  before=$(prom_get "$series")
  "$@" >/dev/null 2>&1
  after=$(prom_get "$series")
  if [ "$((after - before))" = "$want" ] 2>/dev/null; then pass "$desc"
  else fail "$desc: $series went from '$before' to '$after', wanted +$want"; fi
}

metrics_prom_suite() {
  # the "main" server, whatever suite started a server last (dynamic scope:
  # the prom_* helpers read these too)
  local KCFG=$E2E_TMP/main/kubeconfig DATA_DIR=$E2E_TMP/main SERVER_URL
  SERVER_URL=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$KCFG")
  local K="kubectl --kubeconfig $KCFG" ns=prom-e2e
  echo "== metrics (GET /metrics)"
  $K create ns $ns >/dev/null
  $K -n $ns run web --image=nginx --restart=Never >/dev/null
  expect "admin reads /metrics with kubectl get --raw" '^# HELP apiserver_request_total \[STABLE\]' \
    $K get --raw /metrics
  expect "the exposition parses (HELP/TYPE, escapes, histograms)" '^ok: ' \
    sh -c "$K get --raw /metrics | python3 '$PROMTEXT' check"
  expect "Content-Type is the text format 0.0.4" \
    '^content-type: text/plain; version=0.0.4; charset=utf-8' \
    sh -c "curl -sS -D - -o /dev/null --cacert '$DATA_DIR/ca.crt' --cert '$DATA_DIR/admin.crt' \
      --key '$DATA_DIR/admin.key' '$SERVER_URL/metrics' | tr -d '\r' | tr 'A-Z' 'a-z'"
  expect "/ lists /metrics" '"/metrics"' $K get --raw /
  prom_scrape
  local fam
  for fam in apiserver_request_total apiserver_request_duration_seconds \
    apiserver_request_sli_duration_seconds apiserver_response_sizes \
    apiserver_current_inflight_requests apiserver_longrunning_requests \
    apiserver_storage_objects apiserver_watch_events_total process_cpu_seconds_total \
    process_resident_memory_bytes process_virtual_memory_bytes process_open_fds \
    process_max_fds process_start_time_seconds process_virtual_memory_max_bytes \
    kubicle_store_commit_duration_seconds kubicle_store_watches kubicle_store_wal_frames \
    kubicle_store_wal_restarts_total; do
    if grep -q "^# TYPE $fam " "$E2E_TMP/metrics.txt"; then pass "family $fam"
    else fail "family $fam missing"; fi
  done
  expect_eq "duration histogram has kube's buckets, in order" \
    "0.005 0.025 0.05 0.1 0.2 0.4 0.6 0.8 1 1.25 1.5 2 3 4 5 6 8 10 15 20 30 45 60 +Inf" \
    sh -c "$K get ns >/dev/null; $K get --raw /metrics | grep '^apiserver_request_duration_seconds_bucket{verb=\"LIST\",dry_run=\"\",group=\"\",version=\"v1\",resource=\"namespaces\",subresource=\"\",scope=\"cluster\",component=\"apiserver\",le=' | sed 's/.*le=\"\([^\"]*\)\".*/\1/' | tr '\n' ' ' | sed 's/ \$//'"

  local pod='apiserver_request_total{verb="GET",group="",version="v1",resource="pods",subresource="",scope="resource",component="apiserver"'
  prom_delta "3 GETs of a pod: GET pods code 200 +3" 3 "$pod,code=\"200\"}" \
    sh -c "for i in 1 2 3; do $K -n $ns get pod web; done"
  prom_delta "a missing pod: GET pods code 404 +1" 1 "$pod,code=\"404\"}" $K -n $ns get pod nosuch
  prom_delta "a namespaced list: LIST pods scope namespace +1" 1 \
    "apiserver_request_total{verb=\"LIST\",resource=\"pods\",scope=\"namespace\",code=\"200\"}" \
    $K -n $ns get pods
  prom_delta "a create: POST configmaps scope resource code 201 +1" 1 \
    "apiserver_request_total{verb=\"POST\",dry_run=\"\",resource=\"configmaps\",scope=\"resource\",code=\"201\"}" \
    $K -n $ns create configmap c0
  prom_delta "a merge patch: PATCH configmaps +1" 1 \
    "apiserver_request_total{verb=\"PATCH\",resource=\"configmaps\",scope=\"resource\",code=\"200\"}" \
    $K -n $ns patch configmap c0 --type=merge -p '{"data":{"a":"1"}}'
  prom_delta "a server-side apply: APPLY configmaps +1" 1 \
    "apiserver_request_total{verb=\"APPLY\",resource=\"configmaps\",scope=\"resource\",code=\"201\"}" \
    sh -c "printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c5, namespace: $ns}\n' | $K apply --server-side -f -"
  prom_delta "a replace: PUT configmaps +1" 1 \
    "apiserver_request_total{verb=\"PUT\",resource=\"configmaps\",scope=\"resource\",code=\"200\"}" \
    sh -c "$K -n $ns get configmap c0 -o json | $K replace -f -"
  prom_delta "a delete: DELETE configmaps +1" 1 \
    "apiserver_request_total{verb=\"DELETE\",resource=\"configmaps\",scope=\"resource\",code=\"200\"}" \
    $K -n $ns delete configmap c5
  prom_delta "response sizes: a LIST is observed" 1 \
    "apiserver_response_sizes_count{verb=\"LIST\",resource=\"configmaps\",scope=\"namespace\"}" \
    $K -n $ns get configmaps
  expect_eq "response sizes: never a write (no POST series)" "" \
    sh -c "$K get --raw /metrics | grep '^apiserver_response_sizes_count{verb=\"POST\"'"
  expect_eq "in-flight requests by kind: mutating and readOnly" \
    'request_kind="mutating" request_kind="readOnly"' \
    sh -c "$K get --raw /metrics | grep -o '^apiserver_current_inflight_requests{request_kind=\"[a-zA-Z]*\"' | cut -d{ -f2 | sort | tr '\n' ' ' | sed 's/ \$//'"
  prom_delta "a server dry run: dry_run=All +1" 1 \
    "apiserver_request_total{verb=\"POST\",dry_run=\"All\",resource=\"configmaps\",code=\"201\"}" \
    $K -n $ns create configmap c9 --dry-run=server
  prom_delta "an unknown path counts under empty labels, code 404" 1 \
    'apiserver_request_total{verb="GET",group="",version="",resource="",subresource="",scope="",code="404"}' \
    $K get --raw /no-such-path
  prom_delta "GETs count in the duration histogram too" 2 \
    "apiserver_request_duration_seconds_count{verb=\"GET\",resource=\"pods\",scope=\"resource\"}" \
    sh -c "$K -n $ns get pod web; $K -n $ns get pod web"

  local lr='apiserver_longrunning_requests{verb="WATCH",group="",version="v1",resource="pods",scope="namespace"}'
  local wt='apiserver_request_total{verb="WATCH",resource="pods",scope="namespace",code="200"}'
  local ev='apiserver_watch_events_total{group="",version="v1",kind="Pod"}'
  local lr0 wt0 ev0
  lr0=$(prom_get "$lr"); wt0=$(prom_get "$wt"); ev0=$(prom_get "$ev")
  $K -n $ns get pods -w >/dev/null 2>&1 &
  local wpid=$!
  expect_until "an open watch is in apiserver_longrunning_requests" "$((lr0 + 1))" prom_get "$lr"
  expect_eq "an open watch is not counted in apiserver_request_total yet" "$wt0" prom_get "$wt"
  $K -n $ns run web2 --image=nginx --restart=Never >/dev/null
  expect_until "the watch's ADDED event: apiserver_watch_events_total +1" "$((ev0 + 1))" \
    prom_get "$ev"
  kill "$wpid"; wait "$wpid" 2>/dev/null
  expect_until "a closed watch leaves the long-running gauge" "$lr0" prom_get "$lr"
  expect_eq "a closed watch counts once as WATCH 200" "$((wt0 + 1))" prom_get "$wt"

  local cm='apiserver_storage_objects{resource="configmaps"}' n0
  n0=$(prom_get "$cm")
  $K -n $ns create configmap c1 >/dev/null; $K -n $ns create configmap c2 >/dev/null
  expect_eq "storage objects follow creates (+2)" "$((n0 + 2))" prom_get "$cm"
  $K -n $ns delete configmap c1 >/dev/null
  expect_eq "storage objects follow deletes (-1)" "$((n0 + 1))" prom_get "$cm"
  expect "stored objects are named as kube names them (resource.group)" \
    'apiserver_storage_objects\{resource="clusterroles.rbac.authorization.k8s.io"\} [1-9]' \
    $K get --raw /metrics

  prom_scrape
  local start now
  start=$(python3 "$PROMTEXT" get process_start_time_seconds <"$E2E_TMP/metrics.txt")
  now=$(date +%s)
  if [ "${start%.*}" -gt $((now - 86400)) ] && [ "${start%.*}" -le "$now" ]; then pass "process_start_time_seconds is a recent epoch time"
  else fail "process_start_time_seconds $start (now $now)"; fi
  if [ "$(python3 "$PROMTEXT" get process_open_fds <"$E2E_TMP/metrics.txt")" -gt 3 ] &&
    [ "$(python3 "$PROMTEXT" get process_resident_memory_bytes <"$E2E_TMP/metrics.txt")" -gt 1000000 ]; then
    pass "process_open_fds and process_resident_memory_bytes are plausible"
  else fail "process metrics: $(grep '^process_' "$E2E_TMP/metrics.txt" | head -c 400)"; fi

  expect "ClusterRole system:monitoring has kube's bootstrap rule" \
    '^\["get"\] \["/metrics","/metrics/slis","/livez","/readyz","/healthz","/livez/\*","/readyz/\*","/healthz/\*"\]$' \
    $K get clusterrole system:monitoring -o 'jsonpath={.rules[0].verbs} {.rules[0].nonResourceURLs}'
  expect "ClusterRoleBinding system:monitoring binds the group" 'Group system:monitoring' \
    $K get clusterrolebinding system:monitoring -o 'jsonpath={.subjects[0].kind} {.subjects[0].name}'
  "$KUBICLE" kubeconfig --data-dir "$DATA_DIR" --user prom --group system:monitoring \
    --out "$E2E_TMP/prom.kc"
  "$KUBICLE" kubeconfig --data-dir "$DATA_DIR" --user plain --out "$E2E_TMP/plain.kc"
  expect "a user of group system:monitoring reads /metrics" '^# HELP apiserver_request_total' \
    kubectl --kubeconfig "$E2E_TMP/prom.kc" get --raw /metrics
  expect_fail "a plain user gets 403 Forbidden on /metrics" \
    'Forbidden.*User "plain" cannot get path "/metrics"' \
    kubectl --kubeconfig "$E2E_TMP/plain.kc" get --raw /metrics
  expect_fail "system:monitoring gives nothing more (no pods)" 'forbidden' \
    kubectl --kubeconfig "$E2E_TMP/prom.kc" -n $ns get pods
  prom_delta "kubectl logs counts as CONNECT pods/log" 1 \
    'apiserver_request_total{verb="CONNECT",resource="pods",subresource="log",scope="resource",code="200"}' \
    $K -n $ns logs web
  $K delete ns $ns --wait=false >/dev/null 2>&1
  metrics_prom_exec
}

# An exec handed to the stand-in's session (a connection of its own): in the
# long-running gauge while it runs, then CONNECT 101 once. On a server of
# its own (--standin-exec), which then hosts a tenant whose kubicle_syncer_
# metrics follow its pod; the main server's variables are put back.
metrics_prom_exec() {
  local saved=("$KCFG" "$SERVER_URL" "$DATA_DIR" "$SERVER_PID")
  start_server promexec --standin-exec || { fail "promexec server did not start"; return; }
  local K="kubectl --kubeconfig $KCFG"
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: default}\nspec:\n  nodeName: node-1\n  containers: [{name: c, image: busybox}]\n' |
    $K apply -f - >/dev/null
  local lr='apiserver_longrunning_requests{verb="CONNECT",resource="pods",subresource="exec"}'
  local total='apiserver_request_total{verb="CONNECT",resource="pods",subresource="exec",code="101"}'
  $K exec x -- sh -c 'echo started; sleep 20' >"$E2E_TMP/promexec.out" 2>&1 &
  local epid=$!
  expect_until "a running exec is in apiserver_longrunning_requests" 1 prom_get "$lr"
  expect_eq "a running exec is not counted yet" 0 prom_get "$total"
  expect_until "the exec's output came back" started cat "$E2E_TMP/promexec.out"
  kill "$epid"; wait "$epid" 2>/dev/null
  expect_until "an exec whose client left leaves the gauge" 0 prom_get "$lr"
  expect_eq "an exec counts once as CONNECT 101" 1 prom_get "$total"
  # a tenant syncing to this server as its host: the kubicle_syncer_ metrics
  local host_kc=$KCFG host_pid=$SERVER_PID
  $K create ns tenants >/dev/null
  start_server promtenant --host-kubeconfig "$host_kc" --host-namespace tenants \
    --tenant pt --scheduler none || { fail "promtenant did not start"; return; }
  K="kubectl --kubeconfig $KCFG"
  expect_until "tenant: kubicle_syncer_host_up is 1" 1 prom_get kubicle_syncer_host_up
  $K run p1 --image=busybox --restart=Never >/dev/null
  expect_until "tenant: kubicle_syncer_host_pods follows its pod (1)" 1 \
    prom_get kubicle_syncer_host_pods
  expect_eq "tenant: one host create sent" 1 \
    prom_get 'kubicle_syncer_host_writes_total{operation="create"}'
  $K delete pod p1 --wait=false >/dev/null
  expect_until "tenant: a deleted pod leaves kubicle_syncer_host_pods" 0 \
    prom_get kubicle_syncer_host_pods
  expect "tenant: the exposition with the syncer's metrics parses" '^ok: ' \
    sh -c "$K get --raw /metrics | python3 '$PROMTEXT' check"
  # the host goes away: its informers restart, its requests fail, both counted
  local errs='kubicle_syncer_host_request_errors_total' rest='kubicle_syncer_host_watch_restarts_total'
  local e0 r0
  e0=$(prom_get "$errs"); r0=$(prom_get "$rest")
  prom_above() { [ "$(prom_get "$1")" -gt "$2" ] && echo above; }
  kill -TERM "$host_pid"; wait "$host_pid" 2>/dev/null
  expect_until "tenant: a host gone: kubicle_syncer_host_up is 0" 0 prom_get kubicle_syncer_host_up
  expect_until "tenant: a host gone: its failed requests are counted (from $e0)" above \
    prom_above "$errs" "$e0"
  expect_until "tenant: a host gone: its watch restarts are counted (from $r0)" above \
    prom_above "$rest" "$r0"
  unset -f prom_above
  stop_server
  SERVER_PID=$host_pid
  stop_server
  KCFG=${saved[0]} SERVER_URL=${saved[1]} DATA_DIR=${saved[2]} SERVER_PID=${saved[3]}
}
