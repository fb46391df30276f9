# SPDX-License-Identifier: Apache-2.0
# PodDisruptionBudgets and the Eviction API end to end with real kubectl:
# the disruption controller's status (kubectl get pdb, minAvailable and
# maxUnavailable, percentages over the controllers' scale, events,
# SyncFailed), pods/eviction directly (429 with kube's Status, 500 for two
# budgets, dryRun, the DisruptionTarget condition, unhealthy pods, terminal
# pods, RBAC) and through kubectl drain. Pods' readiness stands in for the
# syncer: the test patches pods/status.

# pdb_ready NS SELECTOR: marks every pod of SELECTOR Running and Ready.
pdb_ready() {
  local p
  for p in $("${K[@]}" -n "$1" get pods -l "$2" -o name); do
    "${K[@]}" -n "$1" patch "$p" --subresource=status --type=merge \
      -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null 2>&1
  done
}

# pdb_status NS NAME: "allowed current desired expected"
pdb_status() {
  "${K[@]}" -n "$1" get pdb "$2" -o \
    'jsonpath={.status.disruptionsAllowed} {.status.currentHealthy} {.status.desiredHealthy} {.status.expectedPods}'
}

# pdb_evict NS POD [EXTRA_JSON_FIELDS] [QUERY] [BODY_NAME]: POSTs an
# Eviction; prints the body, then " HTTP<code>" on the same line.
pdb_evict() {
  local body="{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"${5:-$2}\",\"namespace\":\"$1\"}${3:-}}"
  kcurl -s -w ' HTTP%{http_code}' -X POST -H 'Content-Type: application/json' -d "$body" \
    "$SERVER_URL/api/v1/namespaces/$1/pods/$2/eviction${4:-}"
}

# pdb_ready_status NS SELECTOR PDB: marks new pods ready, then pdb_status.
pdb_ready_status() { pdb_ready "$1" "$2"; pdb_status "$1" "$3"; }

pdb_first_pod() { "${K[@]}" -n "$1" get pods -l "$2" -o 'jsonpath={.items[0].metadata.name}'; }

pdb_deployment() { # NS NAME REPLICAS [NODE]
  local node=""
  [ -n "${4:-}" ] && node="nodeName: $4"
  "${K[@]}" -n "$1" apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $2}
spec:
  replicas: $3
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      $node
      terminationGracePeriodSeconds: 0
      containers: [{name: c, image: nginx}]
YAML
}

# The controller: status figures as pods become ready, columns, events.
pdb_status_suite() {
  local ns=pdb-s
  "${K[@]}" create ns $ns >/dev/null
  expect "[pdb] kubectl create pdb" 'poddisruptionbudget.policy/none created' \
    "${K[@]}" -n $ns create pdb none --selector=app=none --min-available=1
  expect_until "[pdb] no pods: status observed, nothing allowed" "0 0 1 0" pdb_status $ns none
  expect_until "[pdb] no pods: kube's NoPods event" "NoPods No matching pods found" \
    "${K[@]}" -n $ns get events --field-selector involvedObject.name=none -o 'jsonpath={.items[0].reason} {.items[0].message}'
  expect_eq "[pdb] no pods: InsufficientPods" "False InsufficientPods 1" \
    "${K[@]}" -n $ns get pdb none -o 'jsonpath={.status.conditions[?(@.type=="DisruptionAllowed")].status} {.status.conditions[?(@.type=="DisruptionAllowed")].reason} {.status.observedGeneration}'

  pdb_deployment $ns web 3
  expect_until "[pdb] 3 pods" "3" sh -c "${K[*]} -n $ns get pods -l app=web -o name | wc -l"
  "${K[@]}" -n $ns create pdb web --selector=app=web --min-available=2 >/dev/null
  expect_until "[pdb] min 2 of 3 pending pods: none allowed" "0 0 2 3" pdb_status $ns web
  pdb_ready $ns app=web
  expect_until "[pdb] min 2 of 3 ready pods: 1 allowed" "1 3 2 3" pdb_status $ns web
  expect "[pdb] get pdb columns" 'NAME +MIN AVAILABLE +MAX UNAVAILABLE +ALLOWED DISRUPTIONS +AGE' \
    "${K[@]}" -n $ns get pdb
  expect "[pdb] get pdb row" 'web +2 +N/A +1 ' "${K[@]}" -n $ns get pdb web
  expect_eq "[pdb] SufficientPods with observedGeneration" "True SufficientPods 1" \
    "${K[@]}" -n $ns get pdb web -o 'jsonpath={.status.conditions[?(@.type=="DisruptionAllowed")].status} {.status.conditions[?(@.type=="DisruptionAllowed")].reason} {.status.conditions[0].observedGeneration}'
  # a pod that stops being ready counts no more
  local p; p=$(pdb_first_pod $ns app=web)
  "${K[@]}" -n $ns patch pod "$p" --subresource=status --type=merge \
    -p '{"status":{"conditions":[{"type":"Ready","status":"False"}]}}' >/dev/null
  expect_until "[pdb] an unready pod: 0 allowed" "0 2 2 3" pdb_status $ns web
  pdb_ready $ns app=web

  # maxUnavailable and percentages over the Deployment's scale
  "${K[@]}" -n $ns create pdb web-pct --selector=app=web --max-unavailable=50% >/dev/null
  expect_until "[pdb] maxUnavailable 50% of 3 rounds up: desired 1, 2 allowed" "2 3 1 3" pdb_status $ns web-pct
  expect "[pdb] get pdb percentage row" 'web-pct +N/A +50% +2 ' "${K[@]}" -n $ns get pdb web-pct
  "${K[@]}" -n $ns scale deploy web --replicas=4 >/dev/null
  expect_until "[pdb] the scale counts: maxUnavailable 50% of the Deployment's 4" "2 4 2 4" \
    pdb_ready_status $ns app=web web-pct
  "${K[@]}" -n $ns patch pdb web-pct --type=merge -p '{"spec":{"maxUnavailable":null,"minAvailable":"75%"}}' >/dev/null
  expect_until "[pdb] minAvailable 75% of 4: desired 3, generation observed" "1 4 3 4 2" \
    "${K[@]}" -n $ns get pdb web-pct -o 'jsonpath={.status.disruptionsAllowed} {.status.currentHealthy} {.status.desiredHealthy} {.status.expectedPods} {.status.observedGeneration}'

  # a percentage over a pod without a controller: kube's UnmanagedPods
  "${K[@]}" -n $ns run lone --image=nginx --labels=app=lone >/dev/null
  "${K[@]}" -n $ns create pdb lone --selector=app=lone --max-unavailable=1 >/dev/null
  expect_until "[pdb] unmanaged pod: kube's UnmanagedPods warning" "UnmanagedPods" \
    "${K[@]}" -n $ns get events --field-selector involvedObject.name=lone,involvedObject.kind=PodDisruptionBudget -o 'jsonpath={.items[*].reason}'
  # a controller without a scale: CalculateExpectedPodCountFailed and SyncFailed
  "${K[@]}" -n $ns create cm owner >/dev/null
  local uid; uid=$("${K[@]}" -n $ns get cm owner -o jsonpath='{.metadata.uid}')
  "${K[@]}" -n $ns apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: owned
  labels: {app: owned}
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: "$uid", controller: true}]
spec: {containers: [{name: c, image: nginx}]}
YAML
  "${K[@]}" -n $ns create pdb owned --selector=app=owned --max-unavailable=1 >/dev/null
  expect_until "[pdb] controller without scale: SyncFailed" \
    'False SyncFailed configmaps does not implement the scale subresource 0' \
    "${K[@]}" -n $ns get pdb owned -o 'jsonpath={.status.conditions[0].status} {.status.conditions[0].reason} {.status.conditions[0].message} {.status.disruptionsAllowed}'
  expect "[pdb] CalculateExpectedPodCountFailed event" \
    'Failed to calculate the number of expected pods: configmaps does not implement the scale subresource' \
    "${K[@]}" -n $ns get events --field-selector involvedObject.name=owned,involvedObject.kind=PodDisruptionBudget -o 'jsonpath={.items[*].message}'
  # a StatefulSet's scale
  "${K[@]}" -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: st}
spec:
  replicas: 2
  serviceName: st
  selector: {matchLabels: {app: st}}
  template:
    metadata: {labels: {app: st}}
    spec: {containers: [{name: c, image: nginx}]}
YAML
  "${K[@]}" -n $ns create pdb st --selector=app=st --max-unavailable=1 >/dev/null
  expect_until "[pdb] StatefulSet: expectedPods is its scale" "2" \
    "${K[@]}" -n $ns get pdb st -o 'jsonpath={.status.expectedPods}'
}

# pods/eviction directly: kube's answers.
pdb_evict_suite() {
  local ns=pdb-e out p
  "${K[@]}" create ns $ns >/dev/null
  pdb_deployment $ns web 2
  expect_until "[evict] 2 pods" "2" sh -c "${K[*]} -n $ns get pods -l app=web -o name | wc -l"
  p=$(pdb_first_pod $ns app=web)
  "${K[@]}" -n $ns create pdb web --selector=app=web --min-available=2 >/dev/null
  expect_until "[evict] budget synced" "0 0 2 2" pdb_status $ns web
  # Pending pods: preconditions, names and unknown pods
  expect "[evict] a precondition that does not hold: 409" 'Precondition failed: UID in precondition: nope.*HTTP409$' \
    pdb_evict $ns "$p" ',"deleteOptions":{"preconditions":{"uid":"nope"}}'
  expect "[evict] name mismatch: 400" 'name in URL does not match name in Eviction object.*HTTP400$' \
    pdb_evict $ns "$p" "" "" other
  expect "[evict] unknown pod: 404" 'pods \\"nothere\\" not found.*HTTP404$' pdb_evict $ns nothere
  expect "[evict] GET is not allowed: 405" 'MethodNotAllowed' \
    kcurl -s "$SERVER_URL/api/v1/namespaces/$ns/pods/$p/eviction"
  # a Pending pod goes without looking at budgets
  expect "[evict] a Pending pod is evicted whatever the budget" '"status":"Success".*"code":201.*HTTP201$' pdb_evict $ns "$p"
  expect_until "[evict] the Pending pod is gone" "NotFound" \
    sh -c "${K[*]} -n $ns get pod $p 2>&1 | grep -o NotFound"
  expect_until "[evict] replaced" "2" sh -c "${K[*]} -n $ns get pods -l app=web -o name | wc -l"
  pdb_ready $ns app=web
  expect_until "[evict] min 2 of 2 ready: 0 allowed" "0 2 2 2" pdb_status $ns web
  p=$(pdb_first_pod $ns app=web)
  out=$(pdb_evict $ns "$p")
  expect "[evict] budget exhausted: 429" 'HTTP429$' echo "$out"
  expect "[evict] kube's TooManyRequests Status" \
    "\"message\":\"Cannot evict pod as it would violate the pod's disruption budget.\",\"reason\":\"TooManyRequests\",\"details\":\\{\"causes\":\\[\\{\"reason\":\"DisruptionBudget\",\"message\":\"The disruption budget web needs 2 healthy pods and has 2 currently\"\\}\\]\\}" \
    echo "$out"
  expect_fail "[evict] kubectl create --raw shows kube's message" "Cannot evict pod as it would violate the pod's disruption budget" \
    "${K[@]}" create --raw "/api/v1/namespaces/$ns/pods/$p/eviction" -f - <<<"{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$p\"}}"
  expect_eq "[evict] the pod is still there" "$p" "${K[@]}" -n $ns get pod "$p" -o 'jsonpath={.metadata.name}'

  # a second budget over the same pods: kube's 500
  "${K[@]}" -n $ns create pdb web2 --selector=app=web --min-available=0 >/dev/null
  expect "[evict] two budgets: 500 with kube's message" \
    '"message":"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.","code":500\} HTTP500$' \
    pdb_evict $ns "$p"
  "${K[@]}" -n $ns label pod "$p" touched=yes >/dev/null
  expect_until "[pdb] a pod under two budgets: kube's MultiplePodDisruptionBudgets warning" \
    "Warning Pod \"$ns\"/\"$p\" matches multiple PodDisruptionBudgets.  Chose \"web\" arbitrarily." \
    "${K[@]}" -n $ns get events --field-selector "involvedObject.name=$p,reason=MultiplePodDisruptionBudgets" \
    -o 'jsonpath={.items[0].type} {.items[0].message}'
  "${K[@]}" -n $ns delete pdb web2 >/dev/null

  # allowed: dry runs first (nothing changes), then for real
  "${K[@]}" -n $ns patch pdb web --type=merge -p '{"spec":{"minAvailable":1}}' >/dev/null
  expect_until "[evict] min 1 of 2: 1 allowed" "1 2 1 2" pdb_status $ns web
  local rv; rv=$("${K[@]}" -n $ns get pdb web -o jsonpath='{.metadata.resourceVersion}')
  expect "[evict] dryRun=All in the query: 201" '"status":"Success".*HTTP201$' pdb_evict $ns "$p" "" "?dryRun=All"
  expect "[evict] dryRun in deleteOptions: 201" '"status":"Success".*HTTP201$' pdb_evict $ns "$p" ',"deleteOptions":{"dryRun":["All"]}'
  expect "[evict] policy/v1beta1 Eviction accepted (dry run)" '"status":"Success".*HTTP201$' \
    kcurl -s -w ' HTTP%{http_code}' -X POST -H 'Content-Type: application/json' \
    -d "{\"apiVersion\":\"policy/v1beta1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$p\"}}" \
    "$SERVER_URL/api/v1/namespaces/$ns/pods/$p/eviction?dryRun=All"
  expect_eq "[evict] dry runs left the pod and the budget alone" "$p $rv" \
    sh -c "echo \$(${K[*]} -n $ns get pod $p -o jsonpath='{.metadata.name}') \$(${K[*]} -n $ns get pdb web -o jsonpath='{.metadata.resourceVersion}')"
  expect "[evict] allowed: 201" '"status":"Success".*HTTP201$' pdb_evict $ns "$p"
  # kube's checkAndDecrement updates the budget through its loopback client:
  # a managedFields entry of kube-apiserver on the status subresource
  expect_eq "[evict] the budget's write is kube-apiserver's, through status" \
    "kube-apiserver Update status" \
    "${K[@]}" -n $ns get pdb web -o 'jsonpath={range .metadata.managedFields[?(@.manager=="kube-apiserver")]}{.manager} {.operation} {.subresource}{end}'
  expect_until "[evict] the evicted pod is gone" "NotFound" \
    sh -c "${K[*]} -n $ns get pod $p 2>&1 | grep -o NotFound"
  expect "[evict] budget decremented: 0 allowed, InsufficientPods" "^0 (False InsufficientPods|)" \
    "${K[@]}" -n $ns get pdb web -o 'jsonpath={.status.disruptionsAllowed} {.status.conditions[0].status} {.status.conditions[0].reason}'

  # unhealthy pods: IfHealthyBudget evicts them only while the budget is met
  expect_until "[evict] replaced again" "2" sh -c "${K[*]} -n $ns get pods -l app=web -o name | wc -l"
  pdb_ready $ns app=web
  expect_until "[evict] back to 1 allowed" "1 2 1 2" pdb_status $ns web
  p=$(pdb_first_pod $ns app=web)
  "${K[@]}" -n $ns patch pdb web --type=merge -p '{"spec":{"minAvailable":2}}' >/dev/null
  "${K[@]}" -n $ns patch pod "$p" --subresource=status --type=merge \
    -p '{"status":{"conditions":[{"type":"Ready","status":"False"}]}}' >/dev/null
  expect_until "[evict] one unready: 0 allowed, budget not met" "0 1 2 2" pdb_status $ns web
  expect "[evict] IfHealthyBudget: an unready pod of an unmet budget: 429" 'needs 2 healthy pods and has 1 currently.*HTTP429$' \
    pdb_evict $ns "$p"
  "${K[@]}" -n $ns patch pdb web --type=merge -p '{"spec":{"unhealthyPodEvictionPolicy":"AlwaysAllow"}}' >/dev/null
  expect_until "[evict] policy observed" "yes" \
    sh -c "[ \$(${K[*]} -n $ns get pdb web -o 'jsonpath={.status.observedGeneration}') = \$(${K[*]} -n $ns get pdb web -o 'jsonpath={.metadata.generation}') ] && echo yes"
  expect "[evict] AlwaysAllow: the unready pod goes" '"status":"Success".*HTTP201$' pdb_evict $ns "$p"
  expect_until "[evict] the unready pod is gone" "NotFound" \
    sh -c "${K[*]} -n $ns get pod $p 2>&1 | grep -o NotFound"

  # a Succeeded pod: no budget check
  expect_until "[evict] replaced once more" "2" sh -c "${K[*]} -n $ns get pods -l app=web -o name | wc -l"
  pdb_ready $ns app=web
  p=$(pdb_first_pod $ns app=web)
  "${K[@]}" -n $ns patch pdb web --type=merge -p '{"spec":{"minAvailable":5}}' >/dev/null
  "${K[@]}" -n $ns patch pod "$p" --subresource=status --type=merge -p '{"status":{"phase":"Succeeded"}}' >/dev/null
  expect "[evict] a Succeeded pod goes without a budget check" '"status":"Success".*HTTP201$' pdb_evict $ns "$p"

  # a pod on a node: graceful, with kube's DisruptionTarget condition
  "${K[@]}" -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: bound, labels: {app: bound}}
spec: {nodeName: pdb-node, containers: [{name: c, image: nginx}]}
YAML
  "${K[@]}" -n $ns patch pod bound --subresource=status --type=merge \
    -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
  "${K[@]}" -n $ns create pdb bound --selector=app=bound --min-available=0 >/dev/null
  expect_until "[evict] bound pod's budget (minAvailable 0 through protobuf): 1 allowed" "1 1 0 1" pdb_status $ns bound
  expect "[evict] bound pod: 201" '"status":"Success".*HTTP201$' pdb_evict $ns bound
  expect "[evict] DisruptionTarget condition as kube's" 'True EvictionByEvictionAPI Eviction API: evicting' \
    "${K[@]}" -n $ns get pod bound -o 'jsonpath={.status.conditions[?(@.type=="DisruptionTarget")].status} {.status.conditions[?(@.type=="DisruptionTarget")].reason} {.status.conditions[?(@.type=="DisruptionTarget")].message}'
  expect "[evict] the bound pod terminates gracefully" '[0-9]+T' \
    "${K[@]}" -n $ns get pod bound -o 'jsonpath={.metadata.deletionTimestamp}'
  expect_until "[evict] a terminating pod is not healthy" "0 0 0 1" pdb_status $ns bound
  expect_until "[evict] the controller dropped the disruptedPods entry of a pod being deleted" "" \
    "${K[@]}" -n $ns get pdb bound -o 'jsonpath={.status.disruptedPods}'
  expect "[evict] a pod being deleted is evicted again without a budget check" '"status":"Success".*HTTP201$' \
    pdb_evict $ns bound
  "${K[@]}" -n $ns delete pod bound --grace-period=0 --force >/dev/null 2>&1

  # admission: a ValidatingAdmissionPolicy on CREATE of pods/eviction
  "${K[@]}" apply -f - >/dev/null <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: pdb-no-evict}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods/eviction"]
  validations:
  - expression: "object.metadata.name != 'keep-me' || request.kind.group != 'policy' || request.kind.kind != 'Eviction' || request.subResource != 'eviction'"
    message: "keep-me stays"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: pdb-no-evict}
spec:
  policyName: pdb-no-evict
  validationActions: [Deny]
YAML
  "${K[@]}" -n $ns run keep-me --image=nginx >/dev/null
  expect_until "[evict] a policy on pods/eviction (request.kind policy/v1 Eviction) refuses it" "yes" \
    sh -c "curl -sS --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key -X POST -H 'Content-Type: application/json' -d '{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"keep-me\"}}' $SERVER_URL/api/v1/namespaces/$ns/pods/keep-me/eviction | grep -q 'keep-me stays' && echo yes"
  expect_eq "[evict] the refused pod is still there" "keep-me" \
    "${K[@]}" -n $ns get pod keep-me -o 'jsonpath={.metadata.name}'
  "${K[@]}" delete validatingadmissionpolicybinding pdb-no-evict >/dev/null
  expect_until "[evict] without the binding it goes" "yes" \
    sh -c "curl -sS --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key -X POST -H 'Content-Type: application/json' -d '{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"keep-me\"}}' $SERVER_URL/api/v1/namespaces/$ns/pods/keep-me/eviction | grep -q Success && echo yes"

  # RBAC: create on pods/eviction
  "$KUBICLE" kubeconfig --data-dir "$DATA_DIR" --user pdb-viewer --out "$E2E_TMP/pdb-viewer.kc" >/dev/null
  "${K[@]}" -n $ns create rolebinding pdbv --clusterrole=view --user=pdb-viewer >/dev/null
  p=$(pdb_first_pod $ns app=web)
  expect_fail "[evict] a user without pods/eviction is forbidden" \
    "cannot create resource \"pods/eviction\" in API group \"\" in the namespace \"$ns\"" \
    kubectl --kubeconfig "$E2E_TMP/pdb-viewer.kc" create --raw "/api/v1/namespaces/$ns/pods/$p/eviction" \
    -f - <<<"{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"$p\"}}"
  expect_eq "[evict] can-i create pods/eviction: no for a viewer" "no" \
    kubectl --kubeconfig "$E2E_TMP/pdb-viewer.kc" -n $ns auth can-i create pods --subresource=eviction
  "${K[@]}" -n $ns create rolebinding pdbe --clusterrole=edit --user=pdb-viewer >/dev/null
  expect_eq "[evict] can-i create pods/eviction: yes for an editor" "yes" \
    kubectl --kubeconfig "$E2E_TMP/pdb-viewer.kc" -n $ns auth can-i create pods --subresource=eviction
  expect "[evict] discovery lists pods/eviction as policy/v1 Eviction" '"name":"pods/eviction","singularName":"","namespaced":true,"kind":"Eviction","verbs":\["create"\],"group":"policy","version":"v1"' \
    "${K[@]}" get --raw /api/v1
  expect "[evict] kubectl api-resources knows eviction via drain's discovery" 'poddisruptionbudgets +pdb +policy/v1 +true +PodDisruptionBudget' \
    "${K[@]}" api-resources --api-group=policy
}


# kubectl drain: blocked by a budget that allows nothing, through once it allows.
pdb_drain_suite() {
  local ns=pdb-d
  "${K[@]}" create ns $ns >/dev/null
  "${K[@]}" apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Node
metadata: {name: pdb-n1}
YAML
  pdb_deployment $ns db 2 pdb-n1
  expect_until "[drain] 2 pods on the node" "2" \
    sh -c "${K[*]} -n $ns get pods --field-selector spec.nodeName=pdb-n1 -o name | wc -l"
  "${K[@]}" -n $ns create pdb db --selector=app=db --min-available=2 >/dev/null
  pdb_ready $ns app=db
  expect_until "[drain] budget allows none" "0 2 2 2" pdb_status $ns db
  expect_fail "[drain] kubectl drain fails on the budget" \
    "Cannot evict pod as it would violate the pod's disruption budget|global timeout reached" \
    "${K[@]}" drain pdb-n1 --ignore-daemonsets --delete-emptydir-data --timeout=6s
  expect_eq "[drain] the node was cordoned" "true" "${K[@]}" get node pdb-n1 -o 'jsonpath={.spec.unschedulable}'
  expect_eq "[drain] its pods are still there" "2" \
    sh -c "${K[*]} -n $ns get pods -l app=db -o name | wc -l"
  "${K[@]}" -n $ns patch pdb db --type=merge -p '{"spec":{"minAvailable":0}}' >/dev/null
  expect_until "[drain] budget allows 2" "2 2 0 2" pdb_status $ns db
  local old; old=$("${K[@]}" -n $ns get pods -l app=db -o 'jsonpath={.items[*].metadata.name}')
  expect "[drain] kubectl drain evicts and succeeds" 'node/pdb-n1 drained' \
    "${K[@]}" drain pdb-n1 --ignore-daemonsets --delete-emptydir-data --timeout=20s
  local p
  for p in $old; do
    expect_eq "[drain] $p evicted" "NotFound" sh -c "${K[*]} -n $ns get pod $p 2>&1 | grep -o NotFound"
  done
}

# Admission webhooks on CREATE of pods/eviction: the review names kind
# policy/v1 Eviction, resource pods, subresource eviction; a refusal stands.
# Webhooks on poddisruptionbudgets/status see the eviction's budget write
# (system:apiserver's UPDATE), which waits for them and fails with them.
pdb_webhook_suite() {
  local ns=pdb-w d=$E2E_TMP/pdbwh i out
  start_webhook_server "$d"
  "${K[@]}" create ns $ns >/dev/null
  "${K[@]}" label ns $ns webhook-test=true >/dev/null
  "${K[@]}" -n $ns run w1 --image=nginx >/dev/null
  "${K[@]}" -n $ns run w2 --image=nginx >/dev/null
  wh_config ValidatingWebhookConfiguration pdb-evict "evict.kubicle.test|/allow|CREATE|Fail|5|" |
    sed 's#resources: \["configmaps"\]#resources: ["pods/eviction"]#' | "${K[@]}" apply -f - >/dev/null
  # (no wait: the configuration is reloaded by the next write, t_webhook.sh)
  expect "[evict-wh] an allowing webhook: evicted" '"status":"Success".*HTTP201$' pdb_evict $ns w1
  expect_eq "[evict-wh] the review: CREATE of pods/eviction, kind policy/v1 Eviction" \
    "CREATE pods eviction policy v1 Eviction Eviction w1" \
    python3 -c "import json; r=json.loads(open('$d/reviews.log').readlines()[-1])['review']['request']; print(r['operation'], r['resource']['resource'], r['subResource'], r['kind']['group'], r['kind']['version'], r['kind']['kind'], r['object']['kind'], r['name'])"
  wh_config ValidatingWebhookConfiguration pdb-evict "evict.kubicle.test|/deny-bare|CREATE|Fail|5|" |
    sed 's#resources: \["configmaps"\]#resources: ["pods/eviction"]#' | "${K[@]}" apply -f - >/dev/null
  expect "[evict-wh] a refusing webhook: the eviction is denied" \
    'admission webhook \\"evict.kubicle.test\\" denied the request.*HTTP(400|403)$' pdb_evict $ns w2
  expect_eq "[evict-wh] the pod stays" "w2" "${K[@]}" -n $ns get pod w2 -o 'jsonpath={.metadata.name}'
  "${K[@]}" delete validatingwebhookconfiguration pdb-evict >/dev/null

  # a budget whose status lags its spec (a webhook refuses the controller's
  # status writes): kube's "still being processed" 429 with Retry-After
  "${K[@]}" -n $ns run wp1 --image=nginx --labels=app=wp >/dev/null
  "${K[@]}" -n $ns patch pod wp1 --subresource=status --type=merge \
    -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
  "${K[@]}" -n $ns create pdb wp --selector=app=wp --min-available=0 >/dev/null
  expect_until "[evict-wh] budget observed" "1 1 0 1" pdb_status $ns wp
  wh_config ValidatingWebhookConfiguration pdb-freeze "freeze.kubicle.test|/deny-bare|UPDATE|Fail|5|" |
    sed 's#apiGroups: \[""\]#apiGroups: ["policy"]#; s#resources: \["configmaps"\]#resources: ["poddisruptionbudgets/status"]#' |
    "${K[@]}" apply -f - >/dev/null
  "${K[@]}" -n $ns patch pdb wp --type=merge -p '{"spec":{"minAvailable":1}}' >/dev/null
  # the controller has tried to write the new generation's status (and the
  # webhook refused it)
  wait_for "[evict-wh] the controller's status write of generation 2 reaches the webhook" 30 \
    python3 -c "import json,sys; sys.exit(not any(x['path'] == '/deny-bare' and x['review']['request'].get('subResource') == 'status' and x['review']['request']['object']['status'].get('observedGeneration') == 2 for x in map(json.loads, open('$d/reviews.log'))))"
  expect_eq "[evict-wh] the status stays behind the spec" "1 2" \
    "${K[@]}" -n $ns get pdb wp -o 'jsonpath={.status.observedGeneration} {.metadata.generation}'
  out=$(kcurl -si -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"wp1"}}' \
    "$SERVER_URL/api/v1/namespaces/$ns/pods/wp1/eviction")
  expect "[evict-wh] a lagging budget: 429 still being processed, retry in 10 s" \
    '"causes":\[\{"reason":"DisruptionBudget","message":"The disruption budget wp is still being processed by the server."\}\],"retryAfterSeconds":10\},"code":429' \
    echo "$out"
  expect "[evict-wh] with a Retry-After header" '^[Rr]etry-[Aa]fter: 10' echo "$out"
  "${K[@]}" delete validatingwebhookconfiguration pdb-freeze >/dev/null
  expect_until "[evict-wh] the status catches up once allowed" "2" \
    "${K[@]}" -n $ns get pdb wp -o 'jsonpath={.status.observedGeneration}'

  # the eviction's budget write goes through the webhooks on
  # poddisruptionbudgets/status, as kube's loopback UpdateStatus does
  # (eviction.go checkAndDecrement), and the eviction waits for it
  "${K[@]}" -n $ns patch pdb wp --type=merge -p '{"spec":{"minAvailable":0}}' >/dev/null
  expect_until "[evict-wh] the budget allows 1" "1 1 0 1" pdb_status $ns wp
  wh_config ValidatingWebhookConfiguration pdb-see "see.kubicle.test|/deny-bare|UPDATE|Fail|5|" |
    sed 's#apiGroups: \[""\]#apiGroups: ["policy"]#; s#resources: \["configmaps"\]#resources: ["poddisruptionbudgets/status"]#' |
    "${K[@]}" apply -f - >/dev/null
  expect "[evict-wh] a webhook refusing budget writes refuses the eviction, in its words" \
    'admission webhook \\"see.kubicle.test\\" denied the request without explanation.*HTTP400$' pdb_evict $ns wp1
  expect_eq "[evict-wh] ... the webhook saw the budget's write: UPDATE of status by system:apiserver, 1 to 0 allowed, the pod in disruptedPods" \
    "UPDATE status system:apiserver 1 0 ['wp1']" \
    python3 -c "import json; r=[x['review']['request'] for x in map(json.loads, open('$d/reviews.log')) if x['review']['request']['userInfo']['username'] == 'system:apiserver'][-1]; print(r['operation'], r['subResource'], r['userInfo']['username'], r['oldObject']['status']['disruptionsAllowed'], r['object']['status']['disruptionsAllowed'], list(r['object']['status']['disruptedPods']))"
  expect_eq "[evict-wh] ... the pod stays, the budget unspent" "wp1 1" \
    sh -c "echo \$(${K[*]} -n $ns get pod wp1 -o jsonpath='{.metadata.name}') \$(${K[*]} -n $ns get pdb wp -o jsonpath='{.status.disruptionsAllowed}')"
  wh_config ValidatingWebhookConfiguration pdb-see "see.kubicle.test|/allow|UPDATE|Fail|5|" |
    sed 's#apiGroups: \[""\]#apiGroups: ["policy"]#; s#resources: \["configmaps"\]#resources: ["poddisruptionbudgets/status"]#' |
    "${K[@]}" apply -f - >/dev/null
  expect "[evict-wh] once the webhook allows the budget's write: evicted" '"status":"Success".*HTTP201$' \
    pdb_evict $ns wp1
  expect_eq "[evict-wh] ... the budget written as kube-apiserver's status update" "kube-apiserver Update status" \
    "${K[@]}" -n $ns get pdb wp -o 'jsonpath={range .metadata.managedFields[?(@.manager=="kube-apiserver")]}{.manager} {.operation} {.subresource}{end}'
  expect_until "[evict-wh] ... the pod is gone" "NotFound" \
    sh -c "${K[*]} -n $ns get pod wp1 2>&1 | grep -o NotFound"
  # a client gone while its eviction's budget write is in a slow webhook:
  # the write goes on without it, and the server with it
  "${K[@]}" -n $ns run wp2 --image=nginx --labels=app=wp >/dev/null
  "${K[@]}" -n $ns patch pod wp2 --subresource=status --type=merge \
    -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
  expect_until "[evict-wh] the budget allows 1 again" "1 1 0 1" pdb_status $ns wp
  wh_config ValidatingWebhookConfiguration pdb-see "see.kubicle.test|/slow|UPDATE|Fail|10|" |
    sed 's#apiGroups: \[""\]#apiGroups: ["policy"]#; s#resources: \["configmaps"\]#resources: ["poddisruptionbudgets/status"]#' |
    "${K[@]}" apply -f - >/dev/null
  kcurl -s --max-time 1 -X POST -H 'Content-Type: application/json' \
    -d '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"wp2"}}' \
    "$SERVER_URL/api/v1/namespaces/$ns/pods/wp2/eviction" >/dev/null 2>&1
  expect_until "[evict-wh] ... the budget is written once the webhook answers, the pod kept (no one asked for its delete)" \
    "0 wp2" sh -c "echo \$(${K[*]} -n $ns get pdb wp -o jsonpath='{.status.disruptionsAllowed}') \$(${K[*]} -n $ns get pod wp2 -o jsonpath='{.metadata.name}')"
  "${K[@]}" delete validatingwebhookconfiguration pdb-see >/dev/null
}

pdb_suite() {
  K=(kubectl --kubeconfig "$E2E_TMP/pdb/kubeconfig")
  start_server pdb || { fail "[pdb] server did not start"; return; }
  pdb_status_suite
  pdb_evict_suite
  pdb_drain_suite
  pdb_webhook_suite
  stop_server TERM
}
