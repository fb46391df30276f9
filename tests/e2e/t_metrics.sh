# SPDX-License-Identifier: Apache-2.0
# kubectl top in a tenant: metrics.k8s.io/v1beta1 answered from the host's
# metrics API. The host stand-in's test scheduler stands in for
# metrics-server (--metrics: PodMetrics and NodeMetrics objects of two
# metrics.k8s.io CRDs, usage equal to the containers' requests). Two tenants
# share the host namespace; a third syncs to a host without a metrics API.
# Driven with real kubectl (1.33 and 1.27 for kubectl top; the one on PATH
# for the rest). Sourced by run.sh.

# mt_setup: the host with metrics (mthost), tenants m1, m2 on it, m3 on a
# host without (mtbare).
mt_setup() {
  E2E_PORT=0 start_server mthost --standin-exec || return 1
  MT_HOST=$KCFG MT_HOST_PID=$SERVER_PID
  local H=(kubectl --kubeconfig "$MT_HOST")
  "${H[@]}" create ns tenants >/dev/null
  "${H[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: mq}
spec: {resources: {gpu: {quota: 4, limit: 4}}}
EOF
  start_scheduler mthost --metrics
  # the scheduler installs the metrics API's CRDs at its first pass
  sy_until 10 "${H[@]}" get --raw /apis/metrics.k8s.io/v1beta1/nodes/gpu-node-2
  local t
  for t in m1 m2; do
    start_server "$t" --host-kubeconfig "$MT_HOST" --host-namespace tenants --tenant "$t" \
      --queue mq || return 1
    printf -v "MT_${t}" %s "$KCFG"
    printf -v "MT_${t}_PID" %s "$SERVER_PID"
  done
  start_server mtbare || return 1
  MT_BARE=$KCFG
  start_server m3 --host-kubeconfig "$MT_BARE" --host-namespace tenants --tenant m3 \
    --queue mq || return 1
  MT_m3=$KCFG
}

# mt_pods KUBECONFIG CPU_A: pods a (two containers), b (app=web) in default,
# c in other, and p (more GPUs than any node: stays Pending, no metrics)
mt_pods() {
  kubectl --kubeconfig "$1" create ns other >/dev/null
  kubectl --kubeconfig "$1" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: default, labels: {app: train}}
spec:
  containers:
  - {name: main, image: busybox, resources: {requests: {cpu: $2, memory: 64Mi}}}
  - {name: side, image: busybox, resources: {requests: {cpu: 200m, memory: 32Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: default, labels: {app: web}}
spec:
  containers:
  - {name: web, image: nginx, resources: {requests: {cpu: 50m, memory: 16Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: c, namespace: other}
spec:
  containers:
  - {name: c, image: busybox, resources: {requests: {cpu: 20m, memory: 8Mi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers:
  - {name: p, image: busybox, resources: {limits: {nvidia.com/gpu: 100}}}
EOF
}

# mt_host_has_metrics: every running pod of m1 and m2 has its PodMetrics
mt_host_has_metrics() {
  local n
  n=$(kubectl --kubeconfig "$MT_HOST" -n tenants get pods.metrics.k8s.io -o name 2>/dev/null | wc -l)
  [ "$n" -eq 6 ]
}

# mt_host_top: the host's own `kubectl top pod --containers` of tenant m1's
# host pods, as "NAMESPACE POD CONTAINER CPU MEMORY" lines with tenant names
mt_host_top() {
  kubectl --kubeconfig "$MT_HOST" -n tenants top pod -l kubicle.dev/tenant=m1 --containers \
    --no-headers | tr -s ' ' | sed -E 's/^([a-z0-9-]+)-x-([a-z0-9-]+)-x-m1 /\2 \1 /' | sort
}

mt_squeeze() { "$@" 2>&1 | tr -s ' '; }

metrics_suite() {
  echo "== metrics (kubectl top)"
  local saved=("$KCFG" "$SERVER_PID" "$SERVER_URL" "$DATA_DIR")
  metrics_checks
  KCFG=${saved[0]} SERVER_PID=${saved[1]} SERVER_URL=${saved[2]} DATA_DIR=${saved[3]}
}

metrics_checks() {
  mt_setup || { fail "metrics: setup"; return; }
  local kc k133=$GSDK/kubectl.1.33 k127=$GSDK/kubectl.1.27
  local T=(kubectl --kubeconfig "$MT_m1")
  mt_pods "$MT_m1" 100m
  mt_pods "$MT_m2" 700m
  sy_until 15 mt_host_has_metrics || fail "host metrics for 6 running pods (have: $(kubectl --kubeconfig "$MT_HOST" -n tenants get pods.metrics.k8s.io -o name 2>&1 | tr '\n' ' '))"

  # discovery: legacy, aggregated v2 and v2beta1
  expect "discovery lists metrics.k8s.io/v1beta1 pods and nodes" \
    'NodeMetrics.*PodMetrics|nodes .*metrics.k8s.io/v1beta1 +false +NodeMetrics' \
    "${T[@]}" api-resources --api-group=metrics.k8s.io
  expect_eq "legacy discovery: pods and nodes, get and list" \
    'nodes:NodeMetrics:false:get,list pods:PodMetrics:true:get,list' \
    bash -c "kubectl --kubeconfig '$MT_m1' get --raw /apis/metrics.k8s.io/v1beta1 |
      jq -r '[.resources[] | \"\(.name):\(.kind):\(.namespaced):\(.verbs | join(\",\"))\"] | sort | join(\" \")'"
  expect "legacy /apis group list names metrics.k8s.io/v1beta1" '^metrics.k8s.io/v1beta1$' \
    bash -c "kubectl --kubeconfig '$MT_m1' get --raw /apis | jq -r '.groups[] | .preferredVersion.groupVersion'"
  local v
  for v in v2 v2beta1; do
    expect_eq "aggregated discovery $v has metrics.k8s.io" 'nodes,pods' \
      bash -c "curl -sS --cacert '$E2E_TMP/m1/ca.crt' --cert '$E2E_TMP/m1/admin.crt' \
        --key '$E2E_TMP/m1/admin.key' -H 'Accept: application/json;g=apidiscovery.k8s.io;v=$v;as=APIGroupDiscoveryList' \
        \"\$(awk '/server:/ {gsub(/\"/, \"\", \$2); print \$2; exit}' '$MT_m1')/apis\" |
        jq -r '[.items[] | select(.metadata.name == \"metrics.k8s.io\") | .versions[].resources[].resource] | sort | join(\",\")'"
  done

  # kubectl top pod, with both kubectl versions: the host's numbers under
  # tenant names, only m1's pods of the namespace asked
  for kc in "$k133" "$k127"; do
    [ -x "$(command -v "$kc")" ] || { fail "$kc missing"; continue; }
    local K=("$kc" --kubeconfig "$MT_m1")
    expect_eq "$kc top pod: m1's pods of default, the host's values" \
      "$(printf 'NAME CPU(cores) MEMORY(bytes) \na 300m 96Mi \nb 50m 16Mi ')" \
      mt_squeeze "${K[@]}" top pod
    expect_eq "$kc top pod -l app=web" "$(printf 'NAME CPU(cores) MEMORY(bytes) \nb 50m 16Mi ')" \
      mt_squeeze "${K[@]}" top pod -l app=web
    expect_eq "$kc top pod a --containers" \
      "$(printf 'POD NAME CPU(cores) MEMORY(bytes) \na main 100m 64Mi \na side 200m 32Mi ')" \
      mt_squeeze "${K[@]}" top pod a --containers
    expect_eq "$kc top pod -A: both namespaces, m1's only" \
      "$(printf 'NAMESPACE NAME CPU(cores) MEMORY(bytes) \ndefault a 300m 96Mi \ndefault b 50m 16Mi \nother c 20m 8Mi ')" \
      mt_squeeze "${K[@]}" top pod -A
    expect_fail "$kc top pod p (Pending, no metrics): metrics-server's NotFound" \
      'NotFound.*podmetrics.metrics.k8s.io "default/p" not found' "${K[@]}" top pod p
  done
  expect_eq "m2 sees its own a (700m) under the same name" \
    "$(printf 'NAME CPU(cores) MEMORY(bytes) \na 900m 96Mi \nb 50m 16Mi ')" \
    mt_squeeze kubectl --kubeconfig "$MT_m2" top pod
  expect_eq "top pod -A --containers matches the host's own top pod of m1's pods" \
    "$(mt_host_top)" \
    bash -c "kubectl --kubeconfig '$MT_m1' top pod -A --containers --no-headers | tr -s ' ' | sort"
  expect_fail "top pod of a pod the tenant lacks: pods NotFound" 'pods "nosuch" not found' \
    "${T[@]}" top pod nosuch
  expect_eq "GET one PodMetrics: kind, tenant name, namespace, labels, containers" \
    'PodMetrics a default train main,side' \
    bash -c "kubectl --kubeconfig '$MT_m1' get --raw /apis/metrics.k8s.io/v1beta1/namespaces/default/pods/a |
      jq -r '\"\(.kind) \(.metadata.name) \(.metadata.namespace) \(.metadata.labels.app) \([.containers[].name] | join(\",\"))\"'"
  expect_eq "fieldSelector metadata.name" 'b' \
    bash -c "kubectl --kubeconfig '$MT_m1' get --raw '/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?fieldSelector=metadata.name%3Db' |
      jq -r '[.items[].metadata.name] | join(\",\")'"
  expect_eq "kubectl get podmetrics (JSON list, default columns)" \
    "$(printf 'podmetrics.metrics.k8s.io/a\npodmetrics.metrics.k8s.io/b')" \
    "${T[@]}" get podmetrics.metrics.k8s.io -o name
  expect "OpenAPI v3 names the group while it is served" '"apis/metrics.k8s.io/v1beta1"' \
    "${T[@]}" get --raw /openapi/v3
  expect_fail "watch is not served" 'MethodNotAllowed|not allow' \
    "${T[@]}" get --raw '/apis/metrics.k8s.io/v1beta1/pods?watch=true'

  # kubectl top node: the tenant's node (its pods run there), the host's values
  for kc in "$k133" "$k127"; do
    expect_eq "$kc top node: the tenant's node only, as the host reports it" \
      "$("$kc" --kubeconfig "$MT_HOST" top node gpu-node-1 2>&1 | tr -s ' ')" \
      mt_squeeze "$kc" --kubeconfig "$MT_m1" top node
  done
  expect_fail "top node of a host node the tenant does not see" \
    'nodes "gpu-node-2" not found' "${T[@]}" top node gpu-node-2

  # RBAC: view in default may top there, not in other; no rights: Forbidden
  "${T[@]}" create rolebinding mview --clusterrole=view --user=mia -n default >/dev/null
  "$KUBICLE" kubeconfig --data-dir "$E2E_TMP/m1" --user mia --out "$E2E_TMP/mia.kc"
  "$KUBICLE" kubeconfig --data-dir "$E2E_TMP/m1" --user noel --out "$E2E_TMP/noel.kc"
  expect "view in default: top pod allowed" '^b +50m' \
    kubectl --kubeconfig "$E2E_TMP/mia.kc" top pod b
  expect_fail "view in default: top pod in other forbidden" \
    'pods.metrics.k8s.io is forbidden: User "mia" cannot list resource "pods" in API group "metrics.k8s.io" in the namespace "other"' \
    kubectl --kubeconfig "$E2E_TMP/mia.kc" top pod -n other
  expect_fail "no rights: top pod forbidden" \
    'forbidden: User "noel" cannot list resource "pods" in API group "metrics.k8s.io"' \
    kubectl --kubeconfig "$E2E_TMP/noel.kc" top pod
  expect_fail "no rights: top node forbidden" \
    'forbidden: User "noel" cannot list resource "nodes" in API group "metrics.k8s.io"' \
    kubectl --kubeconfig "$E2E_TMP/noel.kc" top node

  # a host without a metrics API: as a cluster without metrics-server
  kubectl --kubeconfig "$MT_m3" run x --image=busybox >/dev/null
  for kc in "$k133" "$k127"; do
    expect_fail "$kc: host without metrics API: Metrics API not available" \
      'Metrics API not available' "$kc" --kubeconfig "$MT_m3" top pod
  done
  expect_fail "host without metrics API: the group is not served" 'NotFound|not found' \
    kubectl --kubeconfig "$MT_m3" get --raw /apis/metrics.k8s.io/v1beta1

  mt_own_metrics_server

  # a client that gives up while the host is slow: the host read is dropped
  local url rc
  url=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$MT_m1")
  kill -STOP "$MT_HOST_PID"
  curl -sS -o /dev/null --max-time 1 --cacert "$E2E_TMP/m1/ca.crt" --cert "$E2E_TMP/m1/admin.crt" \
    --key "$E2E_TMP/m1/admin.key" "$url/apis/metrics.k8s.io/v1beta1/namespaces/default/pods" 2>/dev/null
  rc=$?
  kill -CONT "$MT_HOST_PID"
  [ $rc -eq 28 ] && pass "a slow host keeps the request waiting (client timed out)" \
    || fail "a slow host: curl rc=$rc, wanted a timeout (28)"
  expect "after a client gave up: top pod answers" '^b +50m' "${T[@]}" top pod b

  # the host goes away: 503 with a clear Status, the tenant stays up. Its
  # metrics API is removed first: the tenant learns it when the host is back.
  kubectl --kubeconfig "$MT_HOST" delete crd pods.metrics.k8s.io nodes.metrics.k8s.io >/dev/null
  sy_until 10 bash -c "! kubectl --kubeconfig '$MT_HOST' get --raw /apis/metrics.k8s.io/v1beta1"
  local port
  port=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$MT_HOST"); port=${port##*:}
  kill -TERM "$MT_HOST_PID"; wait "$MT_HOST_PID" 2>/dev/null
  expect_fail "host down: top pod is ServiceUnavailable" \
    'ServiceUnavailable.*host cluster.s metrics API is not reachable' "${T[@]}" top pod
  expect_fail "host down: top node is ServiceUnavailable" \
    'ServiceUnavailable.*metrics API' "${T[@]}" top node
  expect "host down: the tenant still answers" '^default ' "${T[@]}" get ns default --no-headers
  kill -0 "$MT_m1_PID" 2>/dev/null && pass "host down: the tenant server is running" \
    || fail "host down: the tenant server died"

  # the host is back without its metrics API: the tenant stops serving it
  E2E_PORT=$port start_server mthost --standin-exec || { fail "metrics: host restart"; return; }
  # read again when the syncer relists the host's pods (it came back), else
  # at the next resync (30 s)
  sy_until 32 bash -c "! kubectl --kubeconfig '$MT_m1' get --raw /apis/metrics.k8s.io/v1beta1"
  expect_fail "host back without metrics API: the group is gone" 'NotFound|not found' \
    "${T[@]}" get --raw /apis/metrics.k8s.io/v1beta1
  expect_fail "host back without metrics API: Metrics API not available" \
    'Metrics API not available' "${T[@]}" --cache-dir "$E2E_TMP/mt-cache" top pod
}

# A tenant's own metrics-server (an APIService with a service for
# v1beta1.metrics.k8s.io) takes precedence over the host's metrics while it
# exists (docs/aggregation.md); the backend is apiservice_server.py serving
# metrics.k8s.io/v1beta1, reached through an ExternalName Service (a
# cluster IP would be the host's).
mt_own_metrics_server() {
  local T=(kubectl --kubeconfig "$MT_m1") md=$E2E_TMP/mt-own i mport mb
  mkdir -p "$md"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=msrv" -addext "subjectAltName=DNS:msrv.default.svc" \
    -keyout "$md/key.pem" -out "$md/cert.pem" 2>/dev/null
  : >"$md/req.log"
  python3 "$E2E_LIB_DIR/apiservice_server.py" "$md/cert.pem" "$md/key.pem" \
    "$E2E_TMP/m1/front-proxy/ca.crt" "$md/port" "$md/req.log" metrics.k8s.io/v1beta1 \
    >>"$md/server.log" 2>&1 &
  mb=$!
  E2E_PIDS+=("$mb")
  for i in $(seq 100); do [ -s "$md/port" ] && break; sleep 0.05; done
  mport=$(cat "$md/port")
  "${T[@]}" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata: {name: msrv, namespace: default}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  caBundle: $(base64 -w0 "$md/cert.pem")
  service: {namespace: default, name: msrv, port: $mport}
EOF
  expect_until "a tenant's own v1beta1.metrics.k8s.io becomes available" "True Passed" \
    "${T[@]}" get apiservice v1beta1.metrics.k8s.io -o 'jsonpath={.status.conditions[0].status} {.status.conditions[0].reason}'
  expect_eq "... its resources replace the host's in discovery" "flunders" \
    bash -c "kubectl --kubeconfig '$MT_m1' api-resources --api-group=metrics.k8s.io -o name | sed 's/\\..*//' | tr '\\n' ' ' | sed 's/ \$//'"
  expect "... and metrics reads go to it" 'flounder-a' \
    "${T[@]}" get --raw /apis/metrics.k8s.io/v1beta1/namespaces/default/flunders
  expect_eq "... as the caller, through the front proxy" "kubicle-admin front-proxy-client" \
    python3 -c 'import json,sys; r=[x for x in map(json.loads, open(sys.argv[1])) if x["path"].endswith("/flunders")][-1]; print(r["user"], r["cn"])' "$md/req.log"
  "${T[@]}" delete apiservice v1beta1.metrics.k8s.io >/dev/null
  kill "$mb" 2>/dev/null
  expect_until "deleted: the host's metrics API is back in discovery" "nodes pods" \
    bash -c "kubectl --kubeconfig '$MT_m1' api-resources --api-group=metrics.k8s.io -o name | sed 's/\\..*//' | sort | tr '\\n' ' ' | sed 's/ \$//'"
  expect "... and kubectl top reads the host's figures" '^b +50m' \
    "${T[@]}" --cache-dir "$md/cache" top pod b
  "${T[@]}" delete service msrv >/dev/null
}
