# SPDX-License-Identifier: Apache-2.0
# Host quotas and isolation (issue 22, items 3 and 4; cmd/hostquota.c,
# syncer/netpol.c): several tenants on one host stand-in, one of them hostile.
# `kubicle create` writes a ResourceQuota, a LimitRange and NetworkPolicies
# into each tenant's host namespace from its flags; the stand-in enforces the
# quota and LimitRange as kube-apiserver does (proxy/admission/quota.c,
# limitrange.c); a tenant object the host quota refuses becomes a Warning
# event with the host's message; nothing one tenant does changes another's
# host objects. Sourced by run.sh.

hq_k() { local t=$1; shift; kubectl --kubeconfig "$KUBICLE_HOME/tenants/$t/kubeconfig" "$@"; }
hq_h() { kubectl --kubeconfig "$HQ_HOST_KCFG" "$@"; }
hq_keep() {
  local d=$KUBICLE_HOME/tenants/$1
  [ -f "$d/supervisor.pid" ] && E2E_PIDS+=("$(cat "$d/supervisor.pid")")
  return 0
}
hq_hard() { hq_h get resourcequota "kubicle-$1" -n "kubicle-$1" -o json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["hard"].get(sys.argv[1], "-"))' "$2"; }
hq_limits() { # TENANT KEY...: hostLimits[KEY] of `kubicle list NAME -o json`, as JSON, on one line
  local t=$1; shift
  "$KUBICLE" list "$t" -o json |
    python3 -c 'import json,sys; l=json.load(sys.stdin)["items"][0]["hostLimits"]; print(*[json.dumps(l[k], sort_keys=True) for k in sys.argv[1:]])' "$@"
}
hq_hards() { # TENANT KEY...: spec.hard[KEY] of its host quota, on one line
  local t=$1 k out=(); shift
  for k; do out+=("$(hq_hard "$t" "$k")"); done
  echo "${out[*]}"
}
hq_pod() { # NAME [RESOURCES]
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app: $1}}
spec:
  containers:
  - name: c
    image: busybox
    command: [sleep, "3600"]
    resources: {${2:-}}
YAML
}
hq_events() { # TENANT OBJECT-NAME: reason and message of its Warning events
  hq_k "$1" get events --field-selector "involvedObject.name=$2,type=Warning" \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}'
}
# The host objects of tenant $1's namespace as name=resourceVersion lines.
# What a tenant could change of another tenant's host objects: every object's
# name, labels, annotations, owners and spec (not its status or
# resourceVersion, which the host's own scheduler and kubelet move on, nor
# the test kubelet's kubicle.dev/log annotation: the pod's output so far).
hq_versions() {
  hq_h get resourcequotas,limitranges,networkpolicies,pods,services,roles,rolebindings \
    -n "kubicle-$1" -o json | python3 -c '
import hashlib, json, sys
for i in json.load(sys.stdin)["items"]:
    m = i["metadata"]
    kept = {k: m.get(k) for k in ("labels", "annotations", "ownerReferences", "deletionTimestamp")}
    if kept["annotations"]:
        kept["annotations"].pop("kubicle.dev/log", None)
    kept["spec"] = i.get("spec")
    kept["rules"] = [i.get("rules"), i.get("subjects"), i.get("roleRef")]
    h = hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]
    print("%s/%s=%s" % (i["kind"], m["name"], h))' | sort
}

hq_synced_nssel() { # TENANT: namespaceSelectors in the host policies synced from it
  hq_h get networkpolicies -n "kubicle-$1" -o json | python3 -c '
import json, sys
print(sum(json.dumps(i["spec"]).count("namespaceSelector")
          for i in json.load(sys.stdin)["items"] if "-x-" in i["metadata"]["name"]))'
}

hostquota_setup() {
  export KUBICLE_HOME=$E2E_TMP/hqhome
  start_server hqhost --standin-exec || return 1
  HQ_HOST_KCFG=$KCFG
  start_scheduler hqhost
}

hostquota_create() {
  echo "== hostquota: create flags, defaults, list"
  expect_rc "a bad count is refused" 2 '--max-pods wants a whole number' \
    "$KUBICLE" create hx --max-pods lots
  expect_rc "a bad quantity is refused" 2 '--max-cpu wants a quantity' \
    "$KUBICLE" create hx --max-cpu 1x
  expect_rc "a CIDR with host bits is refused" 2 '--egress 10.0.0.1/8: not a CIDR' \
    "$KUBICLE" create hx --egress 10.0.0.1/8
  expect_rc "a storage class limit wants CLASS=SIZE" 2 '--max-storage-class wants CLASS=SIZE' \
    "$KUBICLE" create hx --max-storage-class fast
  [ -d "$KUBICLE_HOME/tenants/hx" ] && fail "a refused create left a folder" ||
    pass "a refused create leaves nothing"
  # a host set up by an older Kubicle: the shared ClusterRole with fewer rules
  hq_h create clusterrole kubicle-syncer-nodes --verb=get --resource=nodes >/dev/null
  hq_h label clusterrole kubicle-syncer-nodes app.kubernetes.io/managed-by=kubicle >/dev/null
  "$KUBICLE" create qa --host-kubeconfig "$HQ_HOST_KCFG" --gpus 1 --max-pods 2 --max-cpu 1 \
    --max-memory 1Gi --max-pvcs 1 --max-storage 2Gi --max-storage-class fast=1Gi/1 \
    --max-services 2 --max-load-balancers 0 --max-node-ports 1 --default-cpu-request 200m \
    --default-memory-request 64Mi --wait >/dev/null
  hq_keep qa
  expect_eq "set-up brings an older Kubicle's shared ClusterRole up to date" \
    'get,list,watch nodes|get,list,watch priorityclasses|get,list nodes' \
    hq_h get clusterrole kubicle-syncer-nodes -o \
    'go-template={{range $i, $r := .rules}}{{if $i}}|{{end}}{{range $j, $v := $r.verbs}}{{if $j}},{{end}}{{$v}}{{end}} {{index $r.resources 0}}{{end}}'
  "$KUBICLE" create qb --host-kubeconfig "$HQ_HOST_KCFG" --gpus 2 --wait >/dev/null
  hq_keep qb
  expect_eq "list -o json: the tenant's host limits" '2 "1" "1Gi" 1 "2Gi" 2 0 1 1 "200m" "64Mi"' \
    hq_limits qa pods cpu memory persistentVolumeClaims storage services loadBalancers nodePorts gpus \
    defaultCpuRequest defaultMemoryRequest
  expect_eq "list -o json: a storage class's limit" '{"fast": {"claims": 1, "storage": "1Gi"}}' \
    hq_limits qa storageClasses
  expect_eq "defaults: 100 pods, 64 cpu, 256Gi, 20 claims, 1Ti, 20 Services, no LoadBalancer, no NodePort, 100m, 128Mi" \
    '100 "64" "256Gi" 20 "1Ti" 20 0 0 "100m" "128Mi"' \
    hq_limits qb pods cpu memory persistentVolumeClaims storage services loadBalancers nodePorts \
    defaultCpuRequest defaultMemoryRequest
  expect_eq "defaults: egress to the internet, not to private, link-local or loopback networks" \
    '["0.0.0.0/0", "::/0"] ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "127.0.0.0/8", "fc00::/7", "fe80::/10"]' \
    hq_limits qb egress egressExcept
}

hostquota_objects() {
  echo "== hostquota: the host objects"
  expect_eq "host ResourceQuota: pods, cpu, memory, claims, storage, Services" "2 1 1Gi 1 2Gi 2 0 1" \
    hq_hards qa pods requests.cpu requests.memory persistentvolumeclaims requests.storage services \
    services.loadbalancers services.nodeports
  expect_eq "host ResourceQuota: per storage class" "1Gi 1" \
    hq_hards qa fast.storageclass.storage.k8s.io/requests.storage \
    fast.storageclass.storage.k8s.io/persistentvolumeclaims
  expect_eq "host ResourceQuota: every GPU form (whole, AMD, Volcano vGPU, HAMi cores, MIG slices)" \
    "1 1 1 100 7 3 1" \
    hq_hards qa requests.nvidia.com/gpu requests.amd.com/gpu requests.volcano.sh/vgpu-number \
    requests.nvidia.com/gpucores requests.nvidia.com/mig-1g.10gb requests.nvidia.com/mig-2g.20gb \
    requests.nvidia.com/mig-7g.80gb
  expect_eq "host ResourceQuota of the other tenant: its own GPUs" "2 14" \
    hq_hards qb requests.nvidia.com/gpu requests.nvidia.com/mig-1g.10gb
  expect_eq "host LimitRange: the default requests" "200m 64Mi" \
    hq_h get limitrange kubicle-qa -n kubicle-qa \
    -o jsonpath='{.spec.limits[0].defaultRequest.cpu} {.spec.limits[0].defaultRequest.memory}'
  expect_eq "host objects carry the tenant's label" "kubicle-qa kubicle-qa kubicle-qa-egress kubicle-qa-ingress kubicle-qa-isolation" \
    sh -c "echo \$(kubectl --kubeconfig $HQ_HOST_KCFG get resourcequotas,limitranges,networkpolicies -n kubicle-qa -l kubicle.dev/tenant=qa -o jsonpath='{range .items[*]}{.metadata.name}{\"\\n\"}{end}' | sort)"
  local sa=system:serviceaccount:kubicle-qa:kubicle-qa
  expect_eq "the syncer cannot raise its quota or change its LimitRange" "no no no" \
    sh -c "echo \$(kubectl --kubeconfig $HQ_HOST_KCFG auth can-i update resourcequotas -n kubicle-qa --as $sa) \$(kubectl --kubeconfig $HQ_HOST_KCFG auth can-i delete resourcequotas -n kubicle-qa --as $sa) \$(kubectl --kubeconfig $HQ_HOST_KCFG auth can-i patch limitranges -n kubicle-qa --as $sa)"
  expect_eq "the syncer manages NetworkPolicies in its namespace only" "yes no" \
    sh -c "echo \$(kubectl --kubeconfig $HQ_HOST_KCFG auth can-i create networkpolicies -n kubicle-qa --as $sa) \$(kubectl --kubeconfig $HQ_HOST_KCFG auth can-i create networkpolicies -n kubicle-qb --as $sa)"
}

hostquota_enforced() {
  echo "== hostquota: enforced by the host, refusals as Warning events"
  hq_k qa apply -f <(hq_pod p1) >/dev/null
  hq_k qa apply -f <(hq_pod p2) >/dev/null
  wait_for "two pods reach the host" 60 out_is 2 \
    sh -c "kubectl --kubeconfig $HQ_HOST_KCFG get pods -n kubicle-qa -o name | wc -l"
  expect_eq "host pods got the LimitRange's default requests" "200m 64Mi" \
    hq_h get pods -n kubicle-qa -l app=p1 \
    -o jsonpath='{.items[0].spec.containers[0].resources.requests.cpu} {.items[0].spec.containers[0].resources.requests.memory}'
  hq_k qa apply -f <(hq_pod p3) >/dev/null
  E2E_UNTIL=60 expect_until "a third pod: FailedCreate with the host's quota message" \
    "FailedCreate: pods \"p3-x-default-x-qa\" is forbidden: exceeded quota: kubicle-qa, requested: pods=1, used: pods=2, limited: pods=2" \
    hq_events qa p3
  expect_eq "... and it is not on the host" "" \
    hq_h get pods -n kubicle-qa -l app=p3 -o name
  hq_k qa create service loadbalancer lb --tcp 80:80 >/dev/null
  expect_until_match "a LoadBalancer Service: FailedCreate, services.loadbalancers" 60 \
    'FailedCreate: .*exceeded quota: kubicle-qa, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0' \
    hq_events qa lb
  hq_k qa apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: big}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  resources: {requests: {storage: 5Gi}}
YAML
  expect_until_match "a claim over its class's storage: FailedCreate" 60 \
    'FailedCreate: .*exceeded quota: kubicle-qa, requested: .*fast.storageclass.storage.k8s.io/requests.storage=5Gi' \
    hq_events qa big
  hq_k qa delete pod p1 --wait=false >/dev/null
  E2E_UNTIL=90 expect_until "a pod deleted frees room: the refused pod reaches the host at a resync" \
    "1" sh -c "kubectl --kubeconfig $HQ_HOST_KCFG get pods -n kubicle-qa -l app=p3 -o name | wc -l"
  wait_for "the deleted pod is gone from the host" 60 out_is 0 \
    sh -c "kubectl --kubeconfig $HQ_HOST_KCFG get pods -n kubicle-qa -l app=p1 -o name | wc -l"
}

# A hostile tenant: cluster-admin in its own cluster, it writes what it can
# to reach the other tenant; nothing of the other tenant changes on the host.
hostquota_hostile() {
  echo "== hostquota: a hostile tenant"
  local before after
  # the other tenant's pods placed first: the host's scheduler binding one
  # (spec.nodeName) during the check is not the hostile tenant's doing
  wait_for "the other tenant's host pods are bound" 60 out_is "" \
    hq_h get pods -n kubicle-qa --field-selector spec.nodeName= -o name
  before=$(hq_versions qa)
  hq_k qb apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: kubicle-qa, labels: {kubicle.dev/tenant: qa}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: kubicle-qa-isolation, namespace: kubicle-qa, labels: {kubicle.dev/tenant: qa}}
spec:
  podSelector: {matchLabels: {kubicle.dev/tenant: qa}}
  ingress: [{}]
  egress: [{}]
  policyTypes: [Ingress, Egress]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: everywhere, namespace: default}
spec:
  podSelector: {}
  ingress:
  - from:
    - namespaceSelector: {}
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kubicle-qa}}
    - ipBlock: {cidr: 0.0.0.0/0}
  egress:
  - to:
    - ipBlock: {cidr: 0.0.0.0/0}
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}
YAML
  expect "the tenant takes a pod over its host GPUs (its own policy would decide)" 'pod/grab created' \
    hq_k qb apply -f <(hq_pod grab 'limits: {nvidia.com/gpu: 3}')
  expect "the tenant's own ResourceQuota of the host quota's name stays in the tenant" \
    'resourcequota/kubicle-qb created' hq_k qb create resourcequota kubicle-qb --hard=pods=1000 -n default
  expect_eq "... and the host quota is the platform's" "100" hq_hard qb pods
  E2E_UNTIL=60 expect_until "its NetworkPolicies reach its own host namespace" "2" \
    sh -c "kubectl --kubeconfig $HQ_HOST_KCFG get networkpolicies -n kubicle-qb -o name | grep -c -- '-x-'"
  expect_until_match "a pod over its GPUs: FailedCreate with the host's message" 60 \
    'FailedCreate: .*exceeded quota: kubicle-qb, requested: requests.nvidia.com/gpu=3, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=2' \
    hq_events qb grab
  expect_eq "no host NetworkPolicy synced from it has a namespaceSelector" "0" hq_synced_nssel qb
  expect_eq "its 'all namespaces' and 'kube-system' peers select its own pods only" \
    "qb qb" \
    hq_h get networkpolicy everywhere-x-default-x-qb -n kubicle-qb \
    -o jsonpath='{.spec.ingress[0].from[0].podSelector.matchLabels.kubicle\.dev/tenant} {.spec.egress[0].to[1].podSelector.matchLabels.kubicle\.dev/tenant}'
  expect_eq "its ipBlock 0.0.0.0/0 is clipped to the platform's egress, private networks excepted" \
    '0.0.0.0/0 ["10.0.0.0/8","172.16.0.0/12","192.168.0.0/16","100.64.0.0/10","169.254.0.0/16","127.0.0.0/8"]' \
    hq_h get networkpolicy everywhere-x-default-x-qb -n kubicle-qb \
    -o jsonpath='{.spec.egress[0].to[0].ipBlock.cidr} {.spec.egress[0].to[0].ipBlock.except}'
  expect_eq "the policy's podSelector is its namespace's pods" "qb default" \
    hq_h get networkpolicy everywhere-x-default-x-qb -n kubicle-qb \
    -o jsonpath='{.spec.podSelector.matchLabels.kubicle\.dev/tenant} {.spec.podSelector.matchLabels.kubicle\.dev/namespace}'
  after=$(hq_versions qa)
  if [ -n "$before" ] && [ "$before" = "$after" ]; then pass "nothing of the other tenant changed on the host"
  else fail "the other tenant's host objects changed: $(diff <(echo "$before") <(echo "$after") | head -c 600)"; fi
  expect_eq "the other tenant's quota is as it was" "2" hq_hard qa pods
}

hq_restored() {
  echo "$(hq_hard qb pods) $(hq_h get networkpolicy kubicle-qb-isolation -n kubicle-qb -o jsonpath='{.metadata.name}')"
}

hostquota_restart() {
  echo "== hostquota: start brings the host objects back"
  hq_h delete resourcequota kubicle-qb -n kubicle-qb >/dev/null
  hq_h delete networkpolicy kubicle-qb-isolation -n kubicle-qb >/dev/null
  "$KUBICLE" stop qb >/dev/null
  "$KUBICLE" start qb >/dev/null
  hq_keep qb
  expect_eq "start: the ResourceQuota and isolation policy are made again" "100 kubicle-qb-isolation" \
    hq_restored
  hq_h patch resourcequota kubicle-qb -n kubicle-qb --type merge -p '{"spec":{"hard":{"pods":"5000"}}}' >/dev/null
  "$KUBICLE" stop qb >/dev/null
  "$KUBICLE" start qb >/dev/null
  hq_keep qb
  expect_eq "start: a quota changed on the host is brought back to the tenant's limits" "100" \
    hq_hard qb pods
}

hostquota_delete() {
  echo "== hostquota: snapshot, restore, delete"
  "$KUBICLE" snapshot qa "$E2E_TMP/qa.db" >/dev/null
  "$KUBICLE" restore qc "$E2E_TMP/qa.db" --host-kubeconfig "$HQ_HOST_KCFG" --wait >/dev/null
  hq_keep qc
  expect_eq "restore: the snapshot's host limits" '2 "1Gi"' hq_limits qc pods memory
  expect_eq "restore: ... on the host" "2 1Gi" hq_hards qc pods requests.memory
  "$KUBICLE" delete qc >/dev/null
  "$KUBICLE" delete qa >/dev/null
  expect_eq "delete: no quota, LimitRange or NetworkPolicy of the tenant is left" "" \
    hq_h get resourcequotas,limitranges,networkpolicies -A -l kubicle.dev/tenant=qa -o name
  expect_eq "the other tenant's stay" "kubicle-qb" \
    hq_h get resourcequota -n kubicle-qb -l kubicle.dev/tenant=qb -o jsonpath='{.items[*].metadata.name}'
  "$KUBICLE" delete qb >/dev/null
}

hostquota_suite() {
  hostquota_setup || { fail "hostquota: host stand-in did not start"; return; }
  hostquota_create
  hostquota_objects
  hostquota_enforced
  hostquota_hostile
  hostquota_restart
  hostquota_delete
}
