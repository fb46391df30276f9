# SPDX-License-Identifier: Apache-2.0
# Production mode (issue 28; cmd/operator*.c, docs/operator.md): Tenant
# objects on the host stand-in, run by `kubicle operator` as a local process
# with the host's kubeconfig. The operator installs the CRD, turns a Tenant
# into its host objects and status, pauses, resumes, upgrades, expires and
# deletes it leaving nothing; it recovers after kill -9; of two operators
# only the Lease's holder writes. The server pod's readiness is what a
# kubelet would report (op_kubelet_ready: the stand-in runs no containers).
# Sourced by run.sh.

op_h() { kubectl --kubeconfig "$OP_HOST_KCFG" "$@"; }

# op_start ID [ARGS...]: an operator named ID (its Lease identity), logging
# to $E2E_TMP/operator-ID.log; sets OP_PID.
op_start() {
  local id=$1; shift
  "$KUBICLE" operator --host-kubeconfig "$OP_HOST_KCFG" --namespace default --id "$id" \
    --lease-duration 8 --renew-deadline 6 --retry-period 1 --resync 30 --log-level debug "$@" \
    >>"$E2E_TMP/operator-$id.log" 2>&1 &
  OP_PID=$!
  E2E_PIDS+=("$OP_PID")
}

op_tenant() { # NAME [SPEC-JSON]: create or replace a Tenant
  printf '{"apiVersion":"kubicle.dev/v1","kind":"Tenant","metadata":{"name":"%s"},"spec":%s}' \
    "$1" "${2:-{\}}" | op_h apply -f - >/dev/null
}
op_field() { op_h get tenant "$1" -o jsonpath="$2" 2>&1; }
op_phase() { op_field "$1" '{.status.phase}'; }
op_cond() { # NAME TYPE: "status reason" of a condition
  op_field "$1" "{.status.conditions[?(@.type==\"$2\")].status} {.status.conditions[?(@.type==\"$2\")].reason}"
}
# What a kubelet reports for the tenant's server pod once it answers /readyz.
op_kubelet_ready() { # NAME [NS]
  local ns=${2:-kubicle-$1}
  op_h -n "$ns" get pod "$1-0" >/dev/null 2>&1 || return 1
  op_h -n "$ns" patch pod "$1-0" --subresource=status --type=merge \
    -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null
}
# Every host object labelled with the tenant, as KIND/NAME lines.
op_left() {
  local t=$1 ns=${2:-kubicle-$1}
  {
    op_h get pods,services,pvc,configmaps,secrets,serviceaccounts,roles,rolebindings,resourcequotas,limitranges,networkpolicies,statefulsets \
      -n "$ns" -l "kubicle.dev/tenant=$t" -o name 2>/dev/null
    op_h get pods -n "$ns" -l "kubicle.dev/control-plane=$t" -o name 2>/dev/null
    op_h get clusterrolebindings,queues,namespaces -l "kubicle.dev/tenant=$t" -o name 2>/dev/null
  } | sort
}
# name=resourceVersion of the Tenant and every object of its host namespace
op_rvs() {
  { op_h get tenant "$1" -o jsonpath='{.metadata.name}={.metadata.resourceVersion}{"\n"}'
    op_h -n "kubicle-$1" get statefulsets,services,secrets,serviceaccounts,roles,rolebindings,resourcequotas,limitranges,networkpolicies \
      -o jsonpath='{range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}'
  } | sort
}
op_ca() { op_h -n "kubicle-$1" get secret "$1-pki" -o jsonpath='{.data.ca\.crt}'; }

operator_setup() {
  E2E_PORT=0 start_server ophost --standin-exec || return 1
  OP_HOST_KCFG=$KCFG
  export TMPDIR=$E2E_TMP/op-tmp
  mkdir -p "$TMPDIR"
  op_start opA
  OP_A=$OP_PID
  wait_for "operator installs the Tenant CRD" 30 op_h get --raw /apis/kubicle.dev/v1/tenants
}

operator_crd() {
  expect_eq "CRD: cluster-scoped, served and stored as v1, status subresource" "Cluster v1 true true {}" \
    op_h get crd tenants.kubicle.dev -o jsonpath='{.spec.scope} {.spec.versions[0].name} {.spec.versions[0].served} {.spec.versions[0].storage} {.spec.versions[0].subresources.status}'
  expect_eq "the CRD the operator installs is the one manifest --operator prints" \
    "$("$KUBICLE" manifest --operator -o json | jq -cS '.items[0].spec.versions[0].schema')" \
    sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get crd tenants.kubicle.dev -o json | jq -cS '.spec.versions[0].schema'"
  op_tenant t1 '{"queue":"team-a","gpus":2,"policy":"untrusted"}'
  expect "kubectl get tenants: the printer columns" \
    '^NAME +PHASE +QUEUE +GPUS +POLICY +ENDPOINT +AGE' op_h get tenants
  expect_fail "the structural schema refuses an unknown scheduler" 'Unsupported value: "slurm"' \
    op_tenant bad '{"scheduler":"slurm"}'
  expect_fail "... and a ttl that is no duration" 'spec.ttl' op_tenant bad '{"ttl":"soon"}'
}

operator_create() {
  expect_until "a Tenant gets HostReady True (HostObjectsReady)" "True HostObjectsReady" op_cond t1 HostReady
  expect_eq "phase Pending until its server is ready; endpoint the Service" \
    "Pending https://t1.kubicle-t1.svc:443 kubicle-t1/t1-kubeconfig" \
    op_field t1 '{.status.phase} {.status.endpoint} {.status.kubeconfigSecret}'
  expect_eq "observedGeneration is the Tenant's generation" \
    "$(op_field t1 '{.metadata.generation}')" op_field t1 '{.status.observedGeneration}'
  expect_eq "the finalizer is on before any host object" "kubicle.dev/host-objects" \
    op_field t1 '{.metadata.finalizers[*]}'
  local want
  want=$(printf '%s\n' clusterrolebinding.rbac.authorization.k8s.io/kubicle-t1-nodes \
    limitrange/kubicle-t1 namespace/kubicle-t1 \
    networkpolicy.networking.k8s.io/kubicle-t1-egress networkpolicy.networking.k8s.io/kubicle-t1-ingress \
    networkpolicy.networking.k8s.io/kubicle-t1-isolation persistentvolumeclaim/data-t1-0 pod/t1-0 \
    queue.scheduling.run.ai/team-a resourcequota/kubicle-t1 \
    role.rbac.authorization.k8s.io/kubicle-t1 rolebinding.rbac.authorization.k8s.io/kubicle-t1 \
    secret/t1-kubeconfig secret/t1-pki service/t1 serviceaccount/kubicle-t1 serviceaccount/kubicle.pods \
    statefulset.apps/t1 | sort)
  expect_until "the host objects of create and manifest, each labelled with the tenant" "$want" op_left t1
  OP_T1_N=$(op_left t1 | wc -l)
  expect_eq "the KAI queue carries --gpus" "2 2" \
    op_h get queue team-a -o jsonpath='{.spec.resources.gpu.quota} {.spec.resources.gpu.limit}'
  op_h patch tenant t1 --type=merge -p '{"spec":{"gpus":3,"hostLimits":{"pods":42}}}' >/dev/null
  expect_until "a changed spec.gpus reaches the KAI queue and the host quota; hostLimits too" "3 3 3 42" \
    sh -c "echo \$(kubectl --kubeconfig '$OP_HOST_KCFG' get queue team-a -o jsonpath='{.spec.resources.gpu.quota} {.spec.resources.gpu.limit}') \$(kubectl --kubeconfig '$OP_HOST_KCFG' -n kubicle-t1 get resourcequota kubicle-t1 -o jsonpath='{.spec.hard.requests\.nvidia\.com/gpu} {.spec.hard.pods}')"
  expect_eq "the server runs kubicle serve --tenant t1 --queue team-a" "serve t1 team-a" \
    sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' -n kubicle-t1 get statefulset t1 -o json | jq -r '.spec.template.spec.containers[0].args | [.[0], .[index(\"--tenant\")+1], .[index(\"--queue\")+1]] | join(\" \")'"
  # the admin kubeconfig: its client certificate is signed by the PKI Secret's CA
  op_h -n kubicle-t1 get secret t1-kubeconfig -o jsonpath='{.data.kubeconfig}' | base64 -d >"$E2E_TMP/op-t1.kcfg"
  op_ca t1 | base64 -d >"$E2E_TMP/op-t1-ca.crt"
  python3 -c 'import json,sys,base64; print(base64.b64decode(json.load(open(sys.argv[1]))["users"][0]["user"]["client-certificate-data"]).decode())' \
    "$E2E_TMP/op-t1.kcfg" >"$E2E_TMP/op-t1-admin.crt"
  expect "the admin kubeconfig Secret: server the Service, a client certificate of the tenant's CA" \
    "op-t1-admin.crt: OK" sh -c "cd '$E2E_TMP' && openssl verify -CAfile op-t1-ca.crt op-t1-admin.crt && grep -q 'https://t1.kubicle-t1.svc:443' op-t1.kcfg"
  expect_eq "... and it is in the admin group" "system:masters" \
    sh -c "openssl x509 -in '$E2E_TMP/op-t1-admin.crt' -noout -subject | sed 's/.*O *= *\([^,]*\).*/\1/'"
  wait_for "the server pod exists" 20 op_kubelet_ready t1
  expect_until "Ready True (ServerReady) once the pod is ready; phase Running" "Running True ServerReady" \
    sh -c "echo \$(kubectl --kubeconfig '$OP_HOST_KCFG' get tenant t1 -o jsonpath='{.status.phase}') \$(kubectl --kubeconfig '$OP_HOST_KCFG' get tenant t1 -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status} {.status.conditions[?(@.type==\"Ready\")].reason}')"
  expect_until_match "Events in kube's style about the Tenant (default namespace)" 10 \
    'Normal +HostObjectsReady +tenant/t1.*Normal +Ready +tenant/t1|Normal +Ready +tenant/t1.*Normal +HostObjectsReady' \
    sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get events -n default --sort-by=.lastTimestamp | tr '\n' ' '"
  expect_eq "events name their source and instance" "kubicle-operator opA" \
    sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get events -n default -o json | jq -r '[.items[] | select(.involvedObject.kind==\"Tenant\")][0] | \"\(.source.component) \(.reportingInstance)\"'"
}

# The tenants' StatefulSets are watched (client-go's informer pattern): a
# Pending tenant is not polled, its status follows its StatefulSet's events.
op_status_reconciles() { grep -c "reconcile $1 (status)" "$E2E_TMP/operator-opA.log"; }
operator_watch() {
  op_tenant w1 '{"scheduler":"none"}'
  expect_until "w1 is Pending, its host objects in place" "Pending True HostObjectsReady" \
    sh -c "echo \$(kubectl --kubeconfig '$OP_HOST_KCFG' get tenant w1 -o jsonpath='{.status.phase} {.status.conditions[?(@.type==\"HostReady\")].status} {.status.conditions[?(@.type==\"HostReady\")].reason}')"
  local n
  n=$(op_status_reconciles w1)
  sleep 5
  expect_eq "a Pending tenant whose StatefulSet does not change is not polled" "$n" op_status_reconciles w1
  wait_for "w1's server pod" 20 op_kubelet_ready w1
  expect_until "its StatefulSet's status change makes it Running" "Running" op_phase w1
  expect "... through a status reconcile of that event" '^[1-9]' sh -c "echo \$(( \$(grep -c 'reconcile w1 (status)' '$E2E_TMP/operator-opA.log') - $n ))"
  op_h delete tenant w1 --timeout=60s >/dev/null
}

operator_invalid() {
  op_tenant t2 '{"scheduler":"kai"}'
  expect_until "a spec the builders refuse: Failed, Ready False InvalidSpec" "Failed False InvalidSpec" \
    sh -c "echo \$(kubectl --kubeconfig '$OP_HOST_KCFG' get tenant t2 -o jsonpath='{.status.phase} {.status.conditions[?(@.type==\"Ready\")].status} {.status.conditions[?(@.type==\"Ready\")].reason}')"
  expect "... its message says why" 'needs --queue' op_field t2 '{.status.conditions[?(@.type=="Ready")].message}'
  expect_eq "... and nothing was made on the host" "" op_left t2
  op_tenant t2 '{"scheduler":"kai","queue":"team-b","hostNamespace":"kubicle-t1"}'
  expect_until "another tenant's host namespace: HostReady False NamespaceInUse" "False NamespaceInUse" op_cond t2 HostReady
  expect "... naming the tenant that has it" 'belongs to tenant t1' \
    op_field t2 '{.status.conditions[?(@.type=="HostReady")].message}'
  op_tenant t6 '{"scheduler":"none","hostNamespace":"kube-system"}'
  expect_until "the host's own namespaces are no tenant's: InvalidSpec" "False InvalidSpec" op_cond t6 HostReady
  expect_eq "... nothing of it in kube-system" "" op_left t6 kube-system
  op_h delete tenant t2 t6 --timeout=30s >/dev/null 2>&1
  expect_eq "deleting it leaves t1's objects alone" "$OP_T1_N" sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get tenant t2 >/dev/null 2>&1; $(declare -f op_left op_h); OP_HOST_KCFG='$OP_HOST_KCFG' op_left t1 | wc -l"
}

operator_pause() {
  local ca
  ca=$(op_ca t1)
  # a pod of the tenant and what else its syncer makes (kubicle stop removes them)
  op_h -n kubicle-t1 run tenant-pod --image=busybox --labels=kubicle.dev/tenant=t1 >/dev/null
  op_h -n kubicle-t1 create configmap cm-x-default-x-t1 >/dev/null
  op_h -n kubicle-t1 create secret generic s-x-default-x-t1 >/dev/null
  op_h -n kubicle-t1 create service clusterip svc-x-default-x-t1 --tcp=80 >/dev/null
  op_h -n kubicle-t1 label configmap/cm-x-default-x-t1 secret/s-x-default-x-t1 \
    service/svc-x-default-x-t1 kubicle.dev/tenant=t1 >/dev/null
  local before
  before=$(op_left t1 | grep -v -e '^pod/' -e '-x-default-x-t1$')
  op_h patch tenant t1 --type=merge -p '{"spec":{"paused":true}}' >/dev/null
  expect_until "paused: phase Paused, Ready False (Paused)" "Paused False Paused" \
    sh -c "echo \$(kubectl --kubeconfig '$OP_HOST_KCFG' get tenant t1 -o jsonpath='{.status.phase} {.status.conditions[?(@.type==\"Ready\")].status} {.status.conditions[?(@.type==\"Ready\")].reason}')"
  expect_eq "... the StatefulSet at 0 replicas" "0" op_h -n kubicle-t1 get statefulset t1 -o jsonpath='{.spec.replicas}'
  expect_until "... the tenant's pods removed from the host" "" op_h -n kubicle-t1 get pods -l kubicle.dev/tenant=t1 -o name
  expect_until "... what kubicle stop removes is gone (the syncer's ConfigMaps, Secrets, Services)" "" \
    op_h -n kubicle-t1 get configmaps,secrets,services -l kubicle.dev/tenant=t1,'!kubicle.dev/control-plane' -o name
  expect_eq "... and exactly that: the server's Secrets and Service, the claim, RBAC and limits stay" \
    "$before" op_left t1
  expect_eq "... its store's claim and its certificates kept" "persistentvolumeclaim/data-t1-0 $ca" \
    sh -c "echo \$(kubectl --kubeconfig '$OP_HOST_KCFG' -n kubicle-t1 get pvc -o name) \$(kubectl --kubeconfig '$OP_HOST_KCFG' -n kubicle-t1 get secret t1-pki -o jsonpath='{.data.ca\.crt}')"
  op_h patch tenant t1 --type=merge -p '{"spec":{"paused":false,"image":"registry.example/kubicle:next"}}' >/dev/null
  expect_until "resumed with a new image: one replica, the new image in the template" "1 registry.example/kubicle:next" \
    op_h -n kubicle-t1 get statefulset t1 -o jsonpath='{.spec.replicas} {.spec.template.spec.containers[0].image}'
  expect_until "... the pod is rolled to the new image" "registry.example/kubicle:next" \
    op_h -n kubicle-t1 get pod t1-0 -o jsonpath='{.spec.containers[0].image}'
  wait_for "the new pod" 20 op_kubelet_ready t1
  expect_until "... Running again, status.image the new one" "Running registry.example/kubicle:next" \
    op_field t1 '{.status.phase} {.status.image}'
  expect_eq "... with the same CA (the PKI Secret is made once)" "$ca" op_ca t1
}

operator_ttl() {
  op_tenant t3 '{"scheduler":"none","ttl":"3s"}'
  expect_until "a Tenant with spec.ttl shows expiresAt" "true" \
    sh -c "test -n \"\$(kubectl --kubeconfig '$OP_HOST_KCFG' get tenant t3 -o jsonpath='{.status.expiresAt}')\" && echo true"
  E2E_UNTIL=40 expect_until "... and is deleted when it is up, with its host objects" "" \
    sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get tenant t3 -o name 2>/dev/null; $(declare -f op_left op_h); OP_HOST_KCFG='$OP_HOST_KCFG' op_left t3"
  expect "... an Expired event says so" 'Expired +tenant/t3' op_h get events -n default
}

operator_kill9() {
  local i
  for i in 1 2 3 4; do op_tenant "k$i" '{"scheduler":"none"}'; done
  # kill -9 as soon as the first of them has a host object: mid-reconcile
  wait_for "an operator at work" 30 sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get ns kubicle-k1 >/dev/null 2>&1"
  kill -9 "$OP_A"
  wait "$OP_A" 2>/dev/null
  op_start opA2
  OP_A=$OP_PID
  for i in 1 2 3 4; do
    E2E_UNTIL=60 expect_until "after kill -9 and a restart, k$i gets its host objects" "True HostObjectsReady" op_cond "k$i" HostReady
  done
  expect_eq "... one StatefulSet each, nothing twice" "4" \
    sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get statefulsets -A -o name | grep -c '/k[1-4]$'"
  op_h delete tenant k1 k2 k3 k4 --wait=false >/dev/null
  wait_for "deletion under way" 30 sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get tenant k1 -o jsonpath='{.status.phase}' 2>/dev/null | grep -q Terminating || ! kubectl --kubeconfig '$OP_HOST_KCFG' get tenant k1 >/dev/null 2>&1"
  kill -9 "$OP_A"
  wait "$OP_A" 2>/dev/null
  op_start opA3
  OP_A=$OP_PID
  E2E_UNTIL=60 expect_until "deleting across a kill -9: every Tenant gone" "" \
    op_h get tenants k1 k2 k3 k4 -o name --ignore-not-found
  expect_eq "... and every host object of theirs" "" \
    sh -c "$(declare -f op_left op_h); export OP_HOST_KCFG='$OP_HOST_KCFG'; for t in k1 k2 k3 k4; do op_left \$t; done"
}

operator_leader() {
  expect_until "the Lease names the leader" "opA3" \
    op_h -n default get lease kubicle-operator -o jsonpath='{.spec.holderIdentity}'
  expect_eq "leaseDurationSeconds is the leader's" "8" \
    op_h -n default get lease kubicle-operator -o jsonpath='{.spec.leaseDurationSeconds}'
  local transitions
  transitions=$(op_h -n default get lease kubicle-operator -o jsonpath='{.spec.leaseTransitions}')
  op_start opB
  local OP_B=$OP_PID
  wait_for "the second operator is standing by" 20 grep -q 'standing by: opA3 leads' "$E2E_TMP/operator-opB.log"
  op_tenant t4 '{"scheduler":"none"}'
  expect_until "with two operators the Tenant is reconciled" "True HostObjectsReady" op_cond t4 HostReady
  expect_eq "... by the leader only (its Events, none of the standby's)" "opA3" \
    sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get events -n default -o json | jq -r '[.items[] | select(.involvedObject.name==\"t4\") | .reportingInstance] | unique | join(\" \")'"
  expect_eq "... the standby wrote nothing (no tenant in its log)" "0" \
    sh -c "grep -c 'tenant\\|listed' '$E2E_TMP/operator-opB.log'"
  kill -TERM "$OP_A"
  wait "$OP_A" 2>/dev/null
  expect_until "the leader's SIGTERM releases the Lease: the standby takes it" "opB" \
    op_h -n default get lease kubicle-operator -o jsonpath='{.spec.holderIdentity}'
  expect_eq "... leaseTransitions counts the change" "$((transitions + 1))" \
    op_h -n default get lease kubicle-operator -o jsonpath='{.spec.leaseTransitions}'
  op_h patch tenant t4 --type=merge -p '{"spec":{"paused":true}}' >/dev/null
  expect_until "the new leader reconciles" "Paused" op_phase t4
  op_h delete tenant t4 --timeout=30s >/dev/null
  OP_A=$OP_B
}

operator_delete() {
  expect_eq "before delete, t1 has its host objects" "$OP_T1_N" sh -c "$(declare -f op_left op_h); OP_HOST_KCFG='$OP_HOST_KCFG' op_left t1 | wc -l"
  expect "kubectl delete tenant returns once the finalizer ran" 'deleted' op_h delete tenant t1 --timeout=60s
  expect_eq "nothing labelled with the tenant is left on the host" "" op_left t1
  expect_eq "... its namespace and queue are gone" "" \
    sh -c "kubectl --kubeconfig '$OP_HOST_KCFG' get ns kubicle-t1 queue team-a -o name --ignore-not-found 2>&1"
  expect_eq "... the shared ClusterRole stays" "clusterrole.rbac.authorization.k8s.io/kubicle-syncer-nodes" \
    op_h get clusterrole kubicle-syncer-nodes -o name
}

# The test kubelet (tests/host/kubelet.py) runs t5's server pod as a local
# `kubicle serve` with the pod's own arguments, environment and Secret
# files: real kubectl reaches the tenant with the kubeconfig the operator
# wrote, and its syncer makes the tenant's pod on the host.
operator_kubelet() {
  if ! unshare -m --propagation private true 2>/dev/null; then
    pass "kubelet run skipped: no mount namespaces here"
    return
  fi
  python3 "$E2E_LIB_DIR/../host/kubelet.py" --data-dir "$E2E_TMP/ophost" --kubicle "$KUBICLE" \
    --root "$E2E_TMP/op-kubelet" --selector kubicle.dev/control-plane=t5 --interval 0.2 \
    >>"$E2E_TMP/op-kubelet.log" 2>&1 &
  local kpid=$!
  E2E_PIDS+=("$kpid")
  op_tenant t5 '{"scheduler":"none"}'
  E2E_UNTIL=60 expect_until "with a kubelet, the operator's tenant becomes Ready: its real server answers" \
    "Running True ServerReady" \
    sh -c "echo \$(kubectl --kubeconfig '$OP_HOST_KCFG' get tenant t5 -o jsonpath='{.status.phase} {.status.conditions[?(@.type==\"Ready\")].status} {.status.conditions[?(@.type==\"Ready\")].reason}')"
  local ep kc=$E2E_TMP/op-t5.kcfg
  ep=$(cat "$E2E_TMP/op-kubelet/kubicle-t5/t5-0/endpoint" 2>/dev/null)
  op_h -n kubicle-t5 get secret t5-kubeconfig -o jsonpath='{.data.kubeconfig}' | base64 -d >"$kc"
  local T=(kubectl --kubeconfig "$kc" --server "https://$ep" --tls-server-name t5.kubicle-t5.svc)
  expect "kubectl reaches the tenant with the kubeconfig Secret (the Service's name on the certificate)" \
    '^default +Active' "${T[@]}" get ns
  "${T[@]}" apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: c
    image: busybox
    command: [sleep, "3600"]
YAML
  expect_until "its syncer (the pod's ServiceAccount token, the Role the operator wrote) makes the host pod" \
    "t5" op_h -n kubicle-t5 get pod web-x-default-x-t5 -o 'jsonpath={.metadata.labels.kubicle\.dev/tenant}'
  op_h delete tenant t5 --timeout=60s >/dev/null
  expect_until_match "deleting the Tenant stops its server (the kubelet saw its pod go)" 30 \
    'stopped kubicle-t5/t5-0' cat "$E2E_TMP/op-kubelet.log"
  expect_eq "... and leaves nothing of it on the host" "" op_left t5
  kill "$kpid" 2>/dev/null
  wait "$kpid" 2>/dev/null
}

# One CLI for both modes: kubicle create|list|kubeconfig|stop|start|delete
# --in-cluster on Tenant objects, the local mode's output and -o json.
op_k() { "$KUBICLE" "$@" --in-cluster --host-kubeconfig "$OP_HOST_KCFG"; }
operator_cli() {
  expect "create --in-cluster prints the local mode's lines, once the operator saw it" \
    'tenant c1 is pending at https://c1.kubicle-c1.svc:443' \
    op_k create c1 --queue team-c --gpus 1 --policy trusted --max-pods 50 --ttl 2h
  expect_eq "... the Tenant has the flags as its spec (hostLimits from the host-quota flags)" \
    "team-c 1 trusted 2h 50" op_field c1 '{.spec.queue} {.spec.gpus} {.spec.policy} {.spec.ttl} {.spec.hostLimits.pods}'
  expect_fail "create of an existing tenant fails" 'tenant c1 already exists' op_k create c1 --queue team-c
  expect_fail "a spec the API refuses: kube's message" 'Unsupported value' op_k create c2 --scheduler slurm
  wait_for "c1's server pod" 20 op_kubelet_ready c1
  # Running once the stand-in's StatefulSet counts the pod ready and the operator hears of it
  # (a generous deadline: two loaded shards once took more than 20 s)
  expect_eq "list --in-cluster -o json: the local mode's keys" \
    "c1 Running team-c trusted 1 kubicle-c1 50 true" \
    sh -c "$(declare -f op_k); KUBICLE='$KUBICLE' OP_HOST_KCFG='$OP_HOST_KCFG'; for i in \$(seq 600); do out=\$(op_k list c1 -o json); echo \"\$out\" | grep -q Running && break; sleep 0.2; done; echo \"\$out\" | jq -r '.items[0] | \"\\(.name) \\(.state) \\(.queue) \\(.policy) \\(.gpus) \\(.hostNamespace) \\(.hostLimits.pods) \\(.secondsLeft > 7000)\"'"
  expect "list --in-cluster: the local mode's table" \
    '^NAME +STATE +ENDPOINT +QUEUE +POLICY +FLOOR +PODS +GPUS +AGE +TTL' op_k list
  expect "kubeconfig --in-cluster prints the admin kubeconfig" '"server": "https://c1.kubicle-c1.svc:443"' \
    op_k kubeconfig c1
  op_k kubeconfig c1 --user alice --group dev -o json >"$E2E_TMP/op-alice.json"
  jq -r '.users[0].user["client-certificate-data"]' "$E2E_TMP/op-alice.json" | base64 -d >"$E2E_TMP/op-alice.crt"
  op_ca c1 | base64 -d >"$E2E_TMP/op-c1-ca.crt"
  expect "kubeconfig --in-cluster --user: a certificate of the tenant's CA" 'op-alice.crt: OK' \
    sh -c "cd '$E2E_TMP' && openssl verify -CAfile op-c1-ca.crt op-alice.crt"
  expect "... for that user and group, server the tenant's" 'O *= *dev.*CN *= *alice https://c1.kubicle-c1.svc:443' \
    sh -c "echo \$(openssl x509 -in '$E2E_TMP/op-alice.crt' -noout -subject) \$(jq -r '.clusters[0].cluster.server' '$E2E_TMP/op-alice.json')"
  expect "stop --in-cluster waits for Paused" 'tenant c1 stopped' op_k stop c1
  expect_eq "... list says Stopped" "Stopped" sh -c "$(declare -f op_k); KUBICLE='$KUBICLE' OP_HOST_KCFG='$OP_HOST_KCFG' op_k list c1 -o json | jq -r '.items[0].state'"
  expect "start --in-cluster" 'tenant c1 is running at https://c1.kubicle-c1.svc:443' op_k start c1
  expect_eq "... spec.paused false" "false" op_field c1 '{.spec.paused}'
  expect_eq "delete --in-cluster -o json waits for the finalizer" '{"deleted":true,"name":"c1"}' \
    sh -c "$(declare -f op_k); KUBICLE='$KUBICLE' OP_HOST_KCFG='$OP_HOST_KCFG' op_k delete c1 -o json | jq -c ."
  expect_eq "... nothing of it is left on the host" "" op_left c1
  op_k create c5 --scheduler none --wait --timeout 60 >"$E2E_TMP/op-c5.out" 2>&1 &
  local cpid=$!
  wait_for "c5's server pod" 30 op_kubelet_ready c5
  wait "$cpid"
  expect "create --in-cluster --wait returns once the tenant is Ready" 'tenant c5 is running at' cat "$E2E_TMP/op-c5.out"
  op_k delete c5 >/dev/null
  expect_fail "delete of a missing tenant" 'tenant c1 not found' op_k delete c1
  expect_eq "... unless --ignore-not-found" '{"deleted":false,"name":"c1"}' \
    sh -c "$(declare -f op_k); KUBICLE='$KUBICLE' OP_HOST_KCFG='$OP_HOST_KCFG' op_k delete c1 --ignore-not-found -o json | jq -c ."
}

# Slow host calls (an admission webhook that takes 3 s on each of a
# tenant's Secrets, Services and StatefulSets: one reconcile blocks for
# longer than the Lease lasts) do not cost the leader its Lease: the
# elector renews on its own thread. A standby takes over when the leader
# is killed; a leader whose renewals cannot succeed within the renew
# deadline (its Lease updates held by a webhook) exits, writing nothing more.
op_webhook() { # NAME PATH RESOURCE NAMESPACE-LABEL
  op_h apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: $1}
webhooks:
- name: $1.kubicle.test
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Ignore
  timeoutSeconds: 15
  clientConfig: {url: "$OP_WH_URL$2", caBundle: $OP_WH_CA}
  rules: [{apiGroups: ["", apps, coordination.k8s.io], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [$3]}]
  namespaceSelector: {matchLabels: {$4}}
YAML
}
operator_slow() {
  local d=$E2E_TMP/op-wh WH_URL WH_CA
  start_webhook_server "$d"
  OP_WH_URL=$WH_URL OP_WH_CA=$WH_CA
  op_webhook op-slow /slow/3 'secrets, services, statefulsets' 'kubicle.dev/tenant: s1'
  op_start opC
  local OP_C=$OP_PID
  wait_for "a standby" 20 grep -q 'standing by: opB leads' "$E2E_TMP/operator-opC.log"
  op_tenant s1 '{"scheduler":"none"}'
  E2E_UNTIL=90 expect_until "a reconcile of slow host calls (3 s each) ends: HostReady" "True HostObjectsReady" op_cond s1 HostReady
  expect "... it made at least 4 calls the webhook held for 3 s each (longer than the 8 s Lease)" '^[4-9]$|^[1-9][0-9]' \
    sh -c "grep -c '\"/slow/3\"' '$d/reviews.log'"
  expect_eq "... and the leader kept its Lease meanwhile: still running, never lost it" "running 0" \
    sh -c "kill -0 $OP_A 2>/dev/null && printf 'running ' ; grep -c 'leader election lost' '$E2E_TMP/operator-opB.log'"
  expect_eq "... the standby never led" "0" grep -c 'opC: leading' "$E2E_TMP/operator-opC.log"
  expect_eq "... the Lease's holder is the same" "opB" \
    op_h -n default get lease kubicle-operator -o jsonpath='{.spec.holderIdentity}'
  op_h delete validatingwebhookconfiguration op-slow >/dev/null
  kill -9 "$OP_A"
  wait "$OP_A" 2>/dev/null
  expect_until "the leader killed (no release): the standby takes the Lease once it lapses" "opC" \
    op_h -n default get lease kubicle-operator -o jsonpath='{.spec.holderIdentity}'
  op_h patch tenant s1 --type=merge -p '{"spec":{"paused":true}}' >/dev/null
  expect_until "... and reconciles" "Paused" op_phase s1
  # the leader's renewals held for 10 s by a webhook, past its 6 s renew deadline
  op_h label ns default kubicle-test-lease=slow >/dev/null
  op_webhook op-lease /slow/10 leases 'kubicle-test-lease: slow'
  local rc=0
  E2E_UNTIL=60 expect_until "a leader that cannot renew within its renew deadline stops" "stopped" \
    sh -c "kill -0 $OP_C 2>/dev/null && echo running || echo stopped"
  wait "$OP_C" 2>/dev/null || rc=$?
  expect_eq "... with exit code 1, saying so (as kube-controller-manager's OnStoppedLeading)" "1 1" \
    sh -c "echo $rc \$(grep -c 'opC: leader election lost' '$E2E_TMP/operator-opC.log')"
  op_h delete validatingwebhookconfiguration op-lease >/dev/null
  op_h label ns default kubicle-test-lease- >/dev/null
  op_start opD
  OP_A=$OP_PID
  op_h delete tenant s1 --timeout=60s >/dev/null
  expect_eq "a new leader deletes s1, leaving nothing" "" op_left s1
}

# `kubicle manifest --operator` applied for real; then the operator runs
# with its ServiceAccount's token alone: the least-privilege ClusterRole
# suffices (the stand-in checks RBAC, escalation included, as kube does).
operator_rbac() {
  kill "$OP_A" 2>/dev/null
  wait "$OP_A" 2>/dev/null
  expect "manifest --operator applies on the host" 'deployment.apps/kubicle-operator created' \
    sh -c "'$KUBICLE' manifest --operator | kubectl --kubeconfig '$OP_HOST_KCFG' apply -f -"
  op_h -n kubicle-system scale deployment kubicle-operator --replicas=0 >/dev/null
  local tok srv kc=$E2E_TMP/op-sa.kcfg
  tok=$(op_h -n kubicle-system create token kubicle-operator --duration 1h)
  srv=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$OP_HOST_KCFG")
  cat >"$kc" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: host, cluster: {server: "$srv", certificate-authority: "$E2E_TMP/ophost/ca.crt"}}]
users: [{name: operator, user: {token: "$tok"}}]
contexts: [{name: host, context: {cluster: host, user: operator}}]
current-context: host
YAML
  expect_eq "its ServiceAccount may not exec into pods, nor write CRDs" "no no" \
    sh -c "echo \$(kubectl --kubeconfig '$kc' auth can-i create pods --subresource=exec -n kube-system) \$(kubectl --kubeconfig '$kc' auth can-i create customresourcedefinitions 2>/dev/null)"
  local opargs=(operator --namespace kubicle-system --id opSA --no-install-crd
    --lease-duration 8 --renew-deadline 6 --retry-period 1 --resync 1)
  if unshare -m --propagation private true 2>/dev/null; then
    # in-cluster, as its Deployment runs it: the token and CA where a pod
    # has them (a private mount namespace), KUBERNETES_SERVICE_HOST/PORT
    local sa=$E2E_TMP/op-sa
    mkdir -p "$sa"
    printf '%s' "$tok" >"$sa/token"
    cp "$E2E_TMP/ophost/ca.crt" "$sa/ca.crt"
    printf kubicle-system >"$sa/namespace"
    # shellcheck disable=SC2016
    KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=${srv##*:} \
      unshare -m --propagation private sh -c '
        set -e; sa=$1; shift
        mount -t tmpfs none /run
        mkdir -p /run/secrets/kubernetes.io/serviceaccount
        cp "$sa"/token "$sa"/ca.crt "$sa"/namespace /run/secrets/kubernetes.io/serviceaccount/
        exec "$@"' sh "$sa" "$KUBICLE" "${opargs[@]}" >>"$E2E_TMP/operator-opSA.log" 2>&1 &
    OP_A=$!
    wait_for "the operator runs on its pod's service account (no kubeconfig)" 20 \
      grep -q 'opSA: leading' "$E2E_TMP/operator-opSA.log"
  else
    "$KUBICLE" "${opargs[@]}" --host-kubeconfig "$kc" >>"$E2E_TMP/operator-opSA.log" 2>&1 &
    OP_A=$!
  fi
  E2E_PIDS+=("$OP_A")
  op_tenant r1 '{"queue":"team-r","gpus":1,"policy":"untrusted"}'
  expect_until "with the ServiceAccount's rights only, a Tenant gets its host objects" "True HostObjectsReady" op_cond r1 HostReady
  expect "... no request was refused" '^0$' sh -c "grep -ciE 'forbidden|answered 40' '$E2E_TMP/operator-opSA.log' || true"
  local before listed
  before=$(op_rvs r1)
  listed=$(grep -c 'listed' "$E2E_TMP/operator-opSA.log")
  wait_for "three more resyncs" 30 sh -c "[ \$(grep -c listed '$E2E_TMP/operator-opSA.log') -ge $((listed + 3)) ]"
  expect_eq "full resyncs of a settled tenant write nothing (every resourceVersion the same)" "$before" op_rvs r1
  expect_until_match "... its Events written with the operator's own rights" 10 'HostObjectsReady +tenant/r1' \
    op_h get events -n default
  op_h patch tenant r1 --type=merge -p '{"spec":{"paused":true}}' >/dev/null
  expect_until "... and paused (its pods removed with those rights)" "Paused" op_phase r1
  expect "... no request was refused" '^0$' sh -c "grep -ciE 'forbidden|answered 40' '$E2E_TMP/operator-opSA.log' || true"
  expect "... and is deleted, leaving nothing" 'deleted' op_h delete tenant r1 --timeout=60s
  expect_eq "... nothing of r1 on the host" "" op_left r1
}

operator_suite() {
  local saved_tmpdir=${TMPDIR-}
  if operator_setup; then
    operator_crd
    operator_create
    operator_watch
    operator_invalid
    operator_pause
    operator_ttl
    operator_kubelet
    operator_cli
    operator_kill9
    operator_leader
    operator_delete
    operator_slow
    operator_rbac
  else
    fail "operator: setup"
  fi
  kill "$OP_A" 2>/dev/null
  if [ -n "$saved_tmpdir" ]; then export TMPDIR=$saved_tmpdir; else unset TMPDIR; fi
}
