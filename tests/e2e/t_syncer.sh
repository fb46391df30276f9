# SPDX-License-Identifier: Apache-2.0
# Tenants whose pods run on a host: a host stand-in (kubicle-standin, tests/host),
# the test scheduler (tests/host/scheduler.py, KAI-like) and two tenants
# syncing to it, driven with real kubectl.

SY_HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")

# sy_start_tenant NAME QUEUE [PORT]: sets T_<NAME>_KCFG, T_<NAME>_PID, T_<NAME>_PORT
sy_start_tenant() { # name queue [port [serve args...]]
  local name=$1 queue=$2 port=${3:-0}
  shift $(($# < 3 ? $# : 3))
  E2E_PORT=$port start_server "$name" --host-kubeconfig "$SY_HOST_KCFG" \
    --host-namespace tenants --tenant "$name" --queue "$queue" "$@" || return 1
  printf -v "T_${name}_KCFG" %s "$KCFG"
  printf -v "T_${name}_PID" %s "$SERVER_PID"
  printf -v "T_${name}_PORT" %s "${SERVER_URL##*:}"
}

sy_start_host() { # [PORT]
  E2E_PORT=${1:-0} start_server syhost --standin-exec || return 1
  SY_HOST_KCFG=$KCFG SY_HOST_PID=$SERVER_PID SY_HOST_PORT=${SERVER_URL##*:}
}

# sy_until SECONDS CMD...: retries CMD (e2e_nap) until it succeeds.
# (at least 30 s: what it waits for comes sooner unless something is wrong,
# and a loaded machine - sanitizers, shards side by side - is slower)
sy_until() {
  local t=$(($1 < 30 ? 30 : $1)); shift
  local end=$((SECONDS + t))
  local t0=$SECONDS
  while [ $SECONDS -lt $end ]; do "$@" >/dev/null 2>&1 && return 0; e2e_nap $t0; done
  "$@" >/dev/null 2>&1
}

sy_host_pods() { # [tenant]: "<host name> <tenant name> <queue> <scheduler>" lines
  kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants get pods ${1:+-l kubicle.dev/tenant=$1} \
    -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.annotations.kubicle\.dev/name} {.metadata.labels.kai\.scheduler/queue} {.spec.schedulerName}{"\n"}{end}'
}

sy_host_has() { kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants get "$@" >/dev/null 2>&1; }
sy_host_lacks() { ! sy_host_has "$@"; }

# Tenant pod names and host pods' kubicle.dev/name of one tenant agree, one each.
sy_one_to_one() { # tenant kubeconfig
  local t h
  t=$(kubectl --kubeconfig "$2" get pods -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
  h=$(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants get pods -l kubicle.dev/tenant="$1" \
    -o jsonpath='{range .items[*]}{.metadata.annotations.kubicle\.dev/name}{"\n"}{end}' | sort)
  [ -n "$t" ] && [ "$t" = "$h" ]
}

syncer_suite_setup() {
  sy_start_host || return 1
  local H=(kubectl --kubeconfig "$SY_HOST_KCFG")
  "${H[@]}" create ns tenants >/dev/null
  "${H[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec: {resources: {gpu: {quota: 2, limit: 2}}}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-b}
spec: {resources: {gpu: {quota: 8, limit: 8}}}
EOF
  start_scheduler syhost
  SY_SCHED_PID=$SCHED_PID
  sy_start_tenant t1 team-a && sy_start_tenant t2 team-b 0 --host-max-streams 2
}

syncer_suite_basic() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  "${T[@]}" run run1 --image=busybox --labels=kai.scheduler/queue=team-b -- sleep 3600 >/dev/null
  sy_until 5 sy_host_has pod run1-x-default-x-t1
  expect "host pod has the translated name, tenant's queue and kai-scheduler" \
    '^run1-x-default-x-t1 run1 team-a kai-scheduler$' sy_host_pods t1
  expect "host pod carries the contract's labels and annotations" \
    'kubicle.dev/namespace:default kubicle.dev/tenant:t1 .*uid:[0-9a-f-]{36}' \
    "${H[@]}" get pod run1-x-default-x-t1 -o \
    'go-template={{range $k,$v := .metadata.labels}}{{$k}}:{{$v}} {{end}} uid:{{index .metadata.annotations "kubicle.dev/uid"}}'
  expect_eq "host pod mounts no host token" "false" \
    "${H[@]}" get pod run1-x-default-x-t1 -o jsonpath='{.spec.automountServiceAccountToken}'
  expect "pod becomes Ready in the tenant" 'condition met' \
    "${T[@]}" wait --for=condition=Ready pod/run1 --timeout=20s
  expect "tenant pod has the host's node and podIP" '^gpu-node-[0-9] 10\.244\.' \
    "${T[@]}" get pod run1 -o jsonpath='{.spec.nodeName} {.status.podIP}'
  expect "tenant Node for the host node, with GPUs" '^8$' \
    "${T[@]}" get node "$("${T[@]}" get pod run1 -o jsonpath='{.spec.nodeName}')" \
    -o jsonpath='{.status.capacity.nvidia\.com/gpu}'
  expect "kubectl logs is served by the host pod" 'training step 3/3' "${T[@]}" logs run1
  expect_eq "kubectl logs --tail 1" "$("${T[@]}" logs run1 | tail -1)" "${T[@]}" logs run1 --tail 1
  expect_fail "hostNetwork is refused in a syncing tenant" 'hostNetwork.*not allowed' \
    "${T[@]}" run hn --image=busybox --overrides='{"spec":{"hostNetwork":true}}'
  expect_fail "hostPath is refused" 'hostPath.*not allowed' "${T[@]}" apply -f - <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: hp}
spec:
  containers: [{name: c, image: busybox}]
  volumes: [{name: h, hostPath: {path: /etc}}]
EOF
}

# The tenant's service-account token, mounted in the host pod from a host
# Secret, authenticates the pod to the tenant API as its service account.
sy_sa_secrets() { # tenant: "<kind>/<tenant name>" of its host secrets
  kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants get secrets -l kubicle.dev/tenant="$1" \
    -o jsonpath='{range .items[*]}{.metadata.annotations.kubicle\.dev/kind}/{.metadata.annotations.kubicle\.dev/name}{"\n"}{end}'
}

sy_sa_has() { sy_sa_secrets t1 | grep -qx "ServiceAccount/$1"; } # SA: t1 has its token secret
sy_sa_lacks() { ! sy_sa_has "$1"; }

syncer_suite_sa() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  local hp=run1-x-default-x-t1 sec tok host port
  local sa_dir=/var/run/secrets/kubernetes.io/serviceaccount
  sec=$("${H[@]}" get pod $hp -o jsonpath='{.spec.volumes[?(@.name=="kubicle-tenant-sa")].secret.secretName}')
  expect "host pod mounts the tenant token secret read-only" "^kubicle-tenant-sa true$" \
    "${H[@]}" get pod $hp -o jsonpath="{.spec.containers[0].volumeMounts[?(@.mountPath==\"$sa_dir\")].name} {.spec.containers[0].volumeMounts[?(@.mountPath==\"$sa_dir\")].readOnly}"
  expect "the token secret carries the contract's labels and annotations" \
    '^t1 default default ServiceAccount$' "${H[@]}" get secret "${sec:-none}" -o \
    jsonpath='{.metadata.labels.kubicle\.dev/tenant} {.metadata.annotations.kubicle\.dev/namespace} {.metadata.annotations.kubicle\.dev/name} {.metadata.annotations.kubicle\.dev/kind}'
  # what a process in the pod does: token, CA and address from the pod
  tok=$("${H[@]}" get secret "${sec:-none}" -o jsonpath='{.data.token}' | base64 -d)
  "${H[@]}" get secret "${sec:-none}" -o jsonpath='{.data.ca\.crt}' | base64 -d >"$E2E_TMP/sa-ca.crt"
  host=$("${H[@]}" get pod $hp -o jsonpath='{.spec.containers[0].env[?(@.name=="KUBERNETES_SERVICE_HOST")].value}')
  port=$("${H[@]}" get pod $hp -o jsonpath='{.spec.containers[0].env[?(@.name=="KUBERNETES_SERVICE_PORT")].value}')
  expect_eq "the token secret's namespace" "default" \
    sh -c "kubectl --kubeconfig $SY_HOST_KCFG -n tenants get secret ${sec:-none} -o jsonpath='{.data.namespace}' | base64 -d"
  expect "the mounted token authenticates to the tenant API as the pod's service account" \
    '"username": ?"system:serviceaccount:default:default"' \
    curl -sS --cacert "$E2E_TMP/sa-ca.crt" -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' -X POST \
    "https://$host:$port/apis/authentication.k8s.io/v1/selfsubjectreviews" \
    -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'
  # a pod that opts out gets no token; one of another account gets that
  # account's, removed from the host with the last pod using it
  "${T[@]}" create serviceaccount robot >/dev/null
  "${T[@]}" run notok --image=busybox --overrides='{"spec":{"automountServiceAccountToken":false}}' -- sleep 3600 >/dev/null
  "${T[@]}" run robo --image=busybox --overrides='{"spec":{"serviceAccountName":"robot"}}' -- sleep 3600 >/dev/null
  sy_until 5 sy_host_has pod notok-x-default-x-t1
  expect_eq "automountServiceAccountToken: false: no token mounted" "" \
    "${H[@]}" get pod notok-x-default-x-t1 -o jsonpath="{.spec.containers[0].volumeMounts[?(@.mountPath==\"$sa_dir\")].name}"
  sy_until 5 sy_sa_has robot
  expect "another service account's token secret" '^ServiceAccount/robot$' sy_sa_secrets t1
  "${T[@]}" delete pod robo notok --wait=false >/dev/null
  sy_until 10 sy_sa_lacks robot
  expect_rc "the token secret goes with the last pod using it" 0 '' sy_sa_lacks robot
  expect "the default account's secret stays while pods use it" '^ServiceAccount/default$' \
    sy_sa_secrets t1
  # as left by a pod deleted while the tenant was down: removed by a resync
  # (checked after the restart in syncer_suite_kill9)
  # (its name is the account's: syncer_sa_secret_name; one under another
  # name is not exactly the syncer's and stays)
  local ghost name
  ghost=ghost-token-$(printf %s default/sa:ghost/t1 | sha256sum | cut -c1-16)
  for name in "$ghost" ghost-token-0000000000000000; do
    expect "an orphaned token secret on the host ($name)" 'created' "${H[@]}" apply -f - <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: $name
  labels: {kubicle.dev/tenant: t1, kubicle.dev/namespace: default}
  annotations: {kubicle.dev/namespace: default, kubicle.dev/name: ghost, kubicle.dev/uid: "", kubicle.dev/kind: ServiceAccount}
data: {token: eA==}
EOF
  done
}

syncer_suite_config() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  "${T[@]}" create configmap c1 --from-literal=a=one >/dev/null
  "${T[@]}" create secret generic s1 --from-literal=x=y >/dev/null
  "${T[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: withcfg}
spec:
  containers:
  - name: c
    image: busybox
    envFrom: [{configMapRef: {name: c1}}]
    env: [{name: X, valueFrom: {secretKeyRef: {name: s1, key: x}}}]
EOF
  sy_until 5 sy_host_has secret s1-x-default-x-t1
  expect_eq "referenced ConfigMap synced under its translated name" "one" \
    "${H[@]}" get cm c1-x-default-x-t1 -o jsonpath='{.data.a}'
  expect "pod references rewritten" 'c1-x-default-x-t1 s1-x-default-x-t1' \
    "${H[@]}" get pod withcfg-x-default-x-t1 -o \
    jsonpath='{.spec.containers[0].envFrom[0].configMapRef.name} {.spec.containers[0].env[0].valueFrom.secretKeyRef.name}'
  "${T[@]}" patch cm c1 -p '{"data":{"a":"two"}}' >/dev/null
  sy_until 5 out_is two "${H[@]}" get cm c1-x-default-x-t1 -o jsonpath='{.data.a}'
  expect_eq "ConfigMap change reaches the host" "two" \
    "${H[@]}" get cm c1-x-default-x-t1 -o jsonpath='{.data.a}'
  "${T[@]}" delete pod withcfg --wait=false >/dev/null
  sy_until 10 sy_host_lacks cm c1-x-default-x-t1
  expect_fail "unused ConfigMap removed from the host" 'NotFound|not found' \
    "${H[@]}" get cm c1-x-default-x-t1
}

# PersistentVolumeClaims: every tenant claim gets a host claim of its
# translated name; pods name it; the host's binding (no PV controller on the
# stand-in: a status patch plays it) comes back; deletions go both ways; a
# restart converges (orphans deleted, missing claims made again).
sy_pvc_phase() { kubectl --kubeconfig "$T_t1_KCFG" get pvc "$1" -o jsonpath='{.status.phase}'; }

syncer_suite_pvc() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  local hc=data-x-default-x-t1
  "${T[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, labels: {app: db}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  storageClassName: fast
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: clone}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
  volumeName: a-host-volume
  dataSource: {kind: PersistentVolumeClaim, name: data}
EOF
  sy_until 5 sy_host_has pvc clone-x-default-x-t1
  expect_eq "a tenant claim reaches the host with the contract's labels and annotations" \
    "t1 default PersistentVolumeClaim data db" "${H[@]}" get pvc $hc -o \
    jsonpath='{.metadata.labels.kubicle\.dev/tenant} {.metadata.annotations.kubicle\.dev/namespace} {.metadata.annotations.kubicle\.dev/kind} {.metadata.annotations.kubicle\.dev/name} {.metadata.labels.app}'
  expect_eq "host claim: the tenant's spec" "ReadWriteOnce 1Gi fast Filesystem" \
    "${H[@]}" get pvc $hc -o \
    jsonpath='{.spec.accessModes[0]} {.spec.resources.requests.storage} {.spec.storageClassName} {.spec.volumeMode}'
  expect_eq "host claim: a claim data source renamed, the tenant's volumeName not passed" \
    "data-x-default-x-t1|" "${H[@]}" get pvc clone-x-default-x-t1 -o \
    jsonpath='{.spec.dataSource.name}|{.spec.volumeName}'
  expect "an unbound claim is Pending in the tenant" '^data +Pending' \
    "${T[@]}" get pvc data --no-headers
  "${T[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: usepvc}
spec:
  containers: [{name: c, image: busybox, command: [sleep, "3600"], volumeMounts: [{name: d, mountPath: /data}]}]
  volumes:
  - {name: d, persistentVolumeClaim: {claimName: data}}
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 2Gi}}}
EOF
  sy_until 5 sy_host_has pod usepvc-x-default-x-t1
  expect_eq "host pod mounts the host claim by its translated name; an ephemeral volume the synced claim of the tenant's" \
    "data-x-default-x-t1 usepvc-scratch-x-default-x-t1" "${H[@]}" get pod usepvc-x-default-x-t1 -o \
    jsonpath='{.spec.volumes[?(@.name=="d")].persistentVolumeClaim.claimName} {.spec.volumes[?(@.name=="scratch")].persistentVolumeClaim.claimName}'
  sy_until 10 sy_host_has pvc usepvc-scratch-x-default-x-t1
  expect_eq "... made from the template by the tenant's ephemeral-volume controller, owned by the pod" \
    "Pod usepvc 2Gi" "${T[@]}" get pvc usepvc-scratch -o \
    jsonpath='{.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name} {.spec.resources.requests.storage}'
  # what the host's PV controller does when it binds the claim
  "${H[@]}" patch pvc $hc --type=merge -p '{"spec":{"volumeName":"pvc-0a1b2c"}}' >/dev/null
  "${H[@]}" patch pvc $hc --subresource=status --type=merge \
    -p '{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"}}}' >/dev/null
  sy_until 5 out_is Bound sy_pvc_phase data
  expect "bound on the host: kubectl get pvc shows Bound, the host volume, capacity, modes" \
    '^data +Bound +pvc-0a1b2c +1Gi +RWO +fast' "${T[@]}" get pvc data --no-headers
  sy_until 5 "${T[@]}" get pv pvc-0a1b2c
  expect "... and kubectl get pv the volume, bound to the claim, as on a cluster of its own" \
    '^pvc-0a1b2c +1Gi +RWO +Delete +Bound +default/data +fast +<unset> +[0-9]+s$' \
    "${T[@]}" get pv --no-headers
  expect_eq "... its claimRef is the tenant claim's uid, its source names the host" \
    "$("${T[@]}" get pvc data -o jsonpath='{.metadata.uid}') host.kubicle.dev pvc-0a1b2c" \
    "${T[@]}" get pv pvc-0a1b2c -o jsonpath='{.spec.claimRef.uid} {.spec.csi.driver} {.spec.csi.volumeHandle}'
  "${T[@]}" create -f - >/dev/null <<'EOF'
apiVersion: v1
kind: PersistentVolume
metadata: {name: own-volume}
spec:
  capacity: {storage: 3Gi}
  accessModes: [ReadWriteMany]
  nfs: {server: nfs.example, path: /exports/a}
EOF
  expect "a tenant's own volume is stored with kube's defaults" '^own-volume +3Gi +RWX +Retain +Pending' \
    "${T[@]}" get pv own-volume --no-headers
  # what the host's provisioner reports about the claim
  "${H[@]}" create -f - >/dev/null <<EOF
apiVersion: v1
kind: Event
metadata: {name: $hc.17a0b1c2d3e4f5a6}
involvedObject: {apiVersion: v1, kind: PersistentVolumeClaim, namespace: tenants, name: $hc}
type: Normal
reason: ProvisioningSucceeded
message: Successfully provisioned volume pvc-0a1b2c
source: {component: csi-provisioner}
count: 1
EOF
  sy_until 5 sh -c "kubectl --kubeconfig $T_t1_KCFG describe pvc data | grep -q ProvisioningSucceeded"
  expect "kubectl describe pvc shows the host's events about the claim" \
    'ProvisioningSucceeded +[0-9a-z]+ +csi-provisioner +Successfully provisioned volume pvc-0a1b2c' \
    "${T[@]}" describe pvc data
  "${T[@]}" patch pvc data -p '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}' >/dev/null
  "${T[@]}" label pvc data tier=gold >/dev/null
  sy_until 5 out_is 2Gi "${H[@]}" get pvc $hc -o jsonpath='{.spec.resources.requests.storage}'
  expect_eq "an expansion and a new label reach the host claim, its volume stays" \
    "2Gi gold pvc-0a1b2c" "${H[@]}" get pvc $hc -o \
    jsonpath='{.spec.resources.requests.storage} {.metadata.labels.tier} {.spec.volumeName}'
  expect_eq "the tenant claim keeps what it asked and what the host says" "2Gi Bound 1Gi" \
    "${T[@]}" get pvc data -o jsonpath='{.spec.resources.requests.storage} {.status.phase} {.status.capacity.storage}'
  "${H[@]}" delete pvc clone-x-default-x-t1 --wait=false >/dev/null
  sy_until 5 sh -c "! kubectl --kubeconfig $T_t1_KCFG get pvc clone"
  expect_fail "a claim deleted on the host is deleted in the tenant" 'NotFound|not found' \
    "${T[@]}" get pvc clone
  "${T[@]}" delete pod usepvc --wait=false >/dev/null
  "${T[@]}" delete pvc data --wait=false >/dev/null
  sy_until 10 sy_host_lacks pvc $hc
  expect_fail "deleting the tenant claim deletes the host claim" 'NotFound|not found' \
    "${H[@]}" get pvc $hc
  expect_eq "... and its volume in the tenant; the tenant's own volume stays" "own-volume" \
    "${T[@]}" get pv -o name --no-headers -o jsonpath='{.items[*].metadata.name}'
  sy_until 30 sy_host_lacks pvc usepvc-scratch-x-default-x-t1
  expect_fail "the ephemeral volume's claim goes with its pod, in the tenant and on the host" \
    'NotFound|not found' "${H[@]}" get pvc usepvc-scratch-x-default-x-t1
  "${T[@]}" delete pv own-volume >/dev/null
  # while the tenant is down: a claim of it appears on the host (as left by
  # a tenant claim deleted meanwhile), its claim `keep` loses its host claim;
  # a claim with the tenant's label but no tenant claim's annotations (the
  # in-cluster server's own store) is not the syncer's
  "${T[@]}" create -f - >/dev/null <<'EOF'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: keep}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
EOF
  sy_until 5 sy_host_has pvc keep-x-default-x-t1
  kill "$T_t1_PID"; wait "$T_t1_PID" 2>/dev/null
  "${H[@]}" delete pvc keep-x-default-x-t1 >/dev/null
  "${H[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: ghost-x-default-x-t1
  labels: {kubicle.dev/tenant: t1, kubicle.dev/namespace: default}
  annotations: {kubicle.dev/namespace: default, kubicle.dev/name: ghost, kubicle.dev/uid: 0f0e, kubicle.dev/kind: PersistentVolumeClaim}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-t1-0
  labels: {kubicle.dev/tenant: t1}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
EOF
  sy_start_tenant t1 team-a "$T_t1_PORT"
  sy_until 15 sy_host_lacks pvc ghost-x-default-x-t1
  expect_fail "restart: a host claim whose tenant claim is gone is deleted" 'NotFound|not found' \
    "${H[@]}" get pvc ghost-x-default-x-t1
  sy_until 10 sy_host_has pvc keep-x-default-x-t1
  expect_eq "restart: a tenant claim missing on the host is made again" "keep" \
    "${H[@]}" get pvc keep-x-default-x-t1 -o jsonpath='{.metadata.annotations.kubicle\.dev/name}'
  expect_eq "restart: a claim with the tenant's label alone is left alone" "data-t1-0" \
    "${H[@]}" get pvc data-t1-0 -o jsonpath='{.metadata.name}'
  "${H[@]}" delete pvc data-t1-0 >/dev/null
  "${T[@]}" delete pvc keep --wait=false >/dev/null
}

syncer_suite_quota() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG")
  "${T[@]}" run big --image=busybox \
    --overrides='{"spec":{"containers":[{"name":"big","image":"busybox","resources":{"limits":{"nvidia.com/gpu":"4"}}}]}}' >/dev/null
  sy_until 5 sh -c "kubectl --kubeconfig $T_t1_KCFG describe pod big | grep -q 'queue over quota'"
  expect "over-quota pod stays Pending" '^Status:[[:space:]]+Pending' "${T[@]}" describe pod big
  expect "describe shows the scheduler's event" 'Unschedulable[[:space:]].*kai-scheduler.*queue over quota' \
    "${T[@]}" describe pod big
}

syncer_suite_delete() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  expect "deleting a running tenant pod waits for its host pod" 'deleted' \
    timeout 20 "${T[@]}" delete pod run1
  expect_fail "host pod is gone" 'NotFound|not found' "${H[@]}" get pod run1-x-default-x-t1
  "${T[@]}" run run2 --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" wait --for=condition=Ready pod/run2 --timeout=20s >/dev/null
  "${H[@]}" delete pod run2-x-default-x-t1 --wait=false >/dev/null
  sy_until 10 sh -c "! kubectl --kubeconfig $T_t1_KCFG get pod run2"
  expect_fail "a pod deleted on the host is deleted in the tenant" 'NotFound|not found' \
    "${T[@]}" get pod run2
}

syncer_suite_two_tenants() {
  local T1=(kubectl --kubeconfig "$T_t1_KCFG") T2=(kubectl --kubeconfig "$T_t2_KCFG")
  "${T1[@]}" run same --image=busybox -- sleep 3600 >/dev/null
  "${T2[@]}" run same --image=busybox -- sleep 3600 >/dev/null
  sy_until 5 sy_host_has pod same-x-default-x-t2
  expect "same pod name in two tenants: t1's host pod with its queue" \
    '^same-x-default-x-t1 same team-a kai-scheduler$' sy_host_pods
  expect "same pod name in two tenants: t2's host pod with its queue" \
    '^same-x-default-x-t2 same team-b kai-scheduler$' sy_host_pods
  expect "both become Ready" 'condition met' "${T2[@]}" wait --for=condition=Ready pod/same --timeout=20s
  "${T2[@]}" delete pod same --wait=true --timeout=20s >/dev/null
  # t2's host pod gone: the syncer has handled the delete
  sy_until 10 sy_host_lacks pod same-x-default-x-t2
  expect "t2 deleting its pod leaves t1's host pod alone" 'same-x-default-x-t1' sy_host_pods t1
  expect_eq "t2 does not see t1's pods" "" "${T2[@]}" get pods -o name
}

sy_host_of() { # tenant ns name: the host pod's name
  kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants get pods -l kubicle.dev/tenant="$1" \
    -o jsonpath='{range .items[*]}{.metadata.annotations.kubicle\.dev/namespace}/{.metadata.annotations.kubicle\.dev/name} {.metadata.name}{"\n"}{end}' |
    awk -v k="$2/$3" '$1 == k { print $2 }'
}

# Issue 22 inside one tenant: b/a-x and x-b/a had one host name; a host
# pod with t1's label but another object's annotations is never touched;
# a pod under the name an older Kubicle gave it is adopted, not recreated.
syncer_suite_names() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  local h1 h2 legacy old_uid
  "${T[@]}" create ns b >/dev/null; "${T[@]}" create ns x-b >/dev/null
  "${T[@]}" -n b run a-x --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" -n x-b run a --image=busybox -- sleep 3600 >/dev/null
  sy_until 10 sh -c "[ -n \"\$($(declare -f sy_host_of); SY_HOST_KCFG=$SY_HOST_KCFG sy_host_of t1 x-b a)\" ]"
  h1=$(sy_host_of t1 b a-x) h2=$(sy_host_of t1 x-b a)
  if [ -n "$h1" ] && [ -n "$h2" ] && [ "$h1" != "$h2" ]; then
    pass "b/a-x and x-b/a get two host pods ($h1, $h2)"
  else fail "b/a-x and x-b/a: host pods '$h1' '$h2'"; fi
  "${T[@]}" -n x-b delete pod a --wait=true --timeout=20s >/dev/null
  sy_until 10 sy_host_lacks pod "$h2"
  expect_eq "deleting x-b/a leaves b/a-x's host pod" "$h1" sy_host_of t1 b a-x
  # planted: t1's label, another object's annotations, under own's host name
  "${H[@]}" apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: own-x-default-x-t1
  labels: {kubicle.dev/tenant: t1, kubicle.dev/namespace: default}
  annotations: {kubicle.dev/namespace: default, kubicle.dev/name: other, kubicle.dev/uid: planted,
                kubicle.dev/kind: Pod}
spec: {containers: [{name: c, image: busybox}]}
YAML
  "${T[@]}" run own --image=busybox --labels=x=1 -- sleep 3600 >/dev/null
  expect_until_match "our label on another object's host pod: Warning HostNameConflict" 40 \
    'Warning +HostNameConflict +pod/own .*another object' "${T[@]}" get events
  "${T[@]}" label pod own x=2 --overwrite >/dev/null
  "${T[@]}" delete pod own --wait=true --timeout=20s >/dev/null
  sleep 1
  expect_eq "that host pod is neither updated nor deleted" "other planted " \
    "${H[@]}" get pod own-x-default-x-t1 \
    -o jsonpath='{.metadata.annotations.kubicle\.dev/name} {.metadata.annotations.kubicle\.dev/uid} {.metadata.labels.x}'
  "${H[@]}" delete pod own-x-default-x-t1 --wait=false >/dev/null
  # a host ConfigMap of t2 under the name t1's copy of ConfigMap pc takes
  "${H[@]}" create configmap pc-x-default-x-t1 --from-literal=k=t2s >/dev/null
  "${H[@]}" label configmap pc-x-default-x-t1 kubicle.dev/tenant=t2 >/dev/null
  "${T[@]}" create configmap pc --from-literal=k=t1s >/dev/null
  "${T[@]}" run usepc --image=busybox \
    --overrides='{"spec":{"containers":[{"name":"usepc","image":"busybox","envFrom":[{"configMapRef":{"name":"pc"}}]}]}}' >/dev/null
  expect_until_match "another tenant's ConfigMap under our copy's name: Warning HostNameConflict" 30 \
    'Warning +HostNameConflict +configmap/pc .*tenant t2' "${T[@]}" get events
  "${T[@]}" delete pod usepc --wait=true --timeout=20s >/dev/null
  sleep 1
  expect_eq "that ConfigMap is neither replaced nor deleted" "t2s t2" \
    "${H[@]}" get configmap pc-x-default-x-t1 -o jsonpath='{.data.k} {.metadata.labels.kubicle\.dev/tenant}'
  "${H[@]}" delete configmap pc-x-default-x-t1 >/dev/null
  "${T[@]}" delete configmap pc >/dev/null
  # an upgrade: b/up-x's host pod under its old name "up-x-x-b-x-t1"
  "${T[@]}" -n b run up-x --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" -n b wait --for=condition=Ready pod/up-x --timeout=20s >/dev/null
  h1=$(sy_host_of t1 b up-x) legacy=up-x-x-b-x-t1
  kill "$T_t1_PID"; wait "$T_t1_PID" 2>/dev/null
  "${H[@]}" get pod "$h1" -o json | python3 -c '
import json, sys
p = json.load(sys.stdin); m = p["metadata"]
for k in ("uid", "resourceVersion", "creationTimestamp", "managedFields"): m.pop(k, None)
# the pod-grouper named the group it made for that pod, owned by it and
# collected with it: an old Kubicle pod had a group of its own
(m.get("annotations") or {}).pop("pod-group-name", None)
m["name"] = sys.argv[1]; p.pop("status", None); p["spec"].pop("nodeName", None)
json.dump(p, sys.stdout)' "$legacy" | "${H[@]}" create -f - >/dev/null
  "${H[@]}" delete pod "$h1" --wait=true --timeout=20s >/dev/null
  old_uid=$("${H[@]}" get pod "$legacy" -o jsonpath='{.metadata.uid}')
  sy_start_tenant t1 team-a "$T_t1_PORT"
  sy_until 10 sh -c "kubectl --kubeconfig $SY_HOST_KCFG -n tenants get pod $legacy -o jsonpath='{.status.phase}' | grep -q Running"
  sleep 2
  expect_eq "upgrade: the pod under its old name is adopted (same host pod, no new one)" \
    "$old_uid $legacy" sh -c "echo \$(kubectl --kubeconfig $SY_HOST_KCFG -n tenants get pod $legacy -o jsonpath='{.metadata.uid}') \$($(declare -f sy_host_of); SY_HOST_KCFG=$SY_HOST_KCFG sy_host_of t1 b up-x)"
  # the copy made under the old name started Pending on the host, and its
  # status is copied up as the host reports it: Running once the host's
  # MODIFIED reaches the restarted syncer (waited for: a fixed sleep here
  # failed under load). The copy once kept the pod-group-name of the group
  # the pod-grouper had made for the pod it copied, which the host's garbage
  # collector removed with that pod: a KAI pod whose group is gone is never
  # scheduled (isOrphanPodWithPodGroup), so it stayed Pending when the
  # collector came first.
  expect_until "upgrade: the tenant pod stays, Running as its adopted host pod" "Running" \
    "${T[@]}" -n b get pod up-x -o jsonpath='{.status.phase}'
  "${T[@]}" -n b delete pod up-x --wait=true --timeout=20s >/dev/null
  expect_eq "upgrade: deleting it deletes the adopted host pod" "" sy_host_of t1 b up-x
  "${T[@]}" delete ns b x-b --wait=false >/dev/null
}

syncer_suite_kill9() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") i
  local dir=$E2E_TMP/t1 port=$T_t1_PORT
  local c=(curl -sS --cacert "$dir/ca.crt" --cert "$dir/admin.crt" --key "$dir/admin.key"
           -H 'Content-Type: application/json')
  for i in $(seq 1 200); do
    "${c[@]}" -X POST "https://127.0.0.1:$port/api/v1/namespaces/default/pods" \
      -d "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"burst-$i\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}" \
      >/dev/null 2>&1 &
    [ "$i" = 120 ] && kill -9 "$T_t1_PID"
  done
  wait "$T_t1_PID" 2>/dev/null
  sleep 0.5
  sy_start_tenant t1 team-a "$port"
  sy_until 40 sy_one_to_one t1 "$T_t1_KCFG"
  expect "kill -9 mid-burst + restart: exactly one host pod per tenant pod" '^ok$' \
    sh -c "$(declare -f sy_one_to_one); SY_HOST_KCFG=$SY_HOST_KCFG; sy_one_to_one t1 $T_t1_KCFG && echo ok"
  expect "burst pods were created" 'pod/burst-[0-9]+' "${T[@]}" get pods -o name
  local ghost
  ghost=ghost-token-$(printf %s default/sa:ghost/t1 | sha256sum | cut -c1-16)
  sy_until 10 sy_host_lacks secret "$ghost"
  expect_rc "an orphaned token secret is removed by the resync" 0 '' sy_host_lacks secret "$ghost"
  expect_rc "a token secret under another name than its account's is not ours: kept" 0 '' \
    sy_host_has secret ghost-token-0000000000000000
  kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants delete secret ghost-token-0000000000000000 >/dev/null
}

syncer_suite_host_outage() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG")
  "${T[@]}" run outage-ex --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" wait --for=condition=Ready pod/outage-ex --timeout=20s >/dev/null
  kill -9 "$SY_SCHED_PID" 2>/dev/null
  kill "$SY_HOST_PID"; wait "$SY_HOST_PID" 2>/dev/null
  expect_fail "exec while the host is down: a clear 503" 'the host cluster is not reachable' \
    timeout 30 "${T[@]}" exec outage-ex -- true
  "${T[@]}" run during-outage --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" delete pod same --wait=false >/dev/null
  sleep 10
  sy_start_host "$SY_HOST_PORT"
  start_scheduler syhost
  SY_SCHED_PID=$SCHED_PID
  sy_until 40 sy_host_has pod during-outage-x-default-x-t1
  expect "host back after 10 s: pod created meanwhile reaches the host" 'during-outage' sy_host_pods t1
  sy_until 30 sy_one_to_one t1 "$T_t1_KCFG"
  expect "host back: both sides converge (deleted pod gone, one each)" '^ok$' \
    sh -c "$(declare -f sy_one_to_one); SY_HOST_KCFG=$SY_HOST_KCFG; sy_one_to_one t1 $T_t1_KCFG && echo ok"
  expect "pod created during the outage becomes Ready" 'condition met' \
    "${T[@]}" wait --for=condition=Ready pod/during-outage --timeout=30s
}

# Pod updates kube allows (images, activeDeadlineSeconds, added tolerations
# (of a taint the host floor lets a tenant tolerate),
# labels and annotations) reach the host pod; the host's own keys stay.
syncer_suite_update() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  local hp=upd-x-default-x-t1
  "${T[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: upd, labels: {app: web, tier: bronze}, annotations: {owner: alice}}
spec:
  initContainers: [{name: init, image: "busybox:1.35", command: ["true"]}]
  containers: [{name: main, image: "busybox:1.36", command: [sleep, "3600"]}]
EOF
  "${T[@]}" wait --for=condition=Ready pod/upd --timeout=20s >/dev/null
  sy_until 5 sh -c "kubectl --kubeconfig $SY_HOST_KCFG -n tenants get pod $hp -o yaml | grep -q kubicle.dev/log"
  "${T[@]}" set image pod/upd main=busybox:1.37 init=busybox:1.36 >/dev/null
  "${T[@]}" label --overwrite pod upd tier=gold app- >/dev/null
  "${T[@]}" annotate pod upd note=hello owner- >/dev/null
  "${T[@]}" patch pod upd --type=json -p '[{"op":"add","path":"/spec/activeDeadlineSeconds","value":600},
    {"op":"add","path":"/spec/tolerations/-","value":{"key":"node.kubernetes.io/memory-pressure","operator":"Exists","effect":"NoSchedule"}}]' >/dev/null
  sy_until 5 sh -c "kubectl --kubeconfig $SY_HOST_KCFG -n tenants get pod $hp -o jsonpath='{.spec.tolerations[*].key}' | grep -q memory-pressure"
  expect_eq "container and init container images reach the host pod" "busybox:1.37 busybox:1.36" \
    "${H[@]}" get pod $hp -o jsonpath='{.spec.containers[0].image} {.spec.initContainers[0].image}'
  expect_eq "activeDeadlineSeconds reaches the host pod" "600" \
    "${H[@]}" get pod $hp -o jsonpath='{.spec.activeDeadlineSeconds}'
  expect "added toleration reaches the host pod, the host's defaults stay" \
    'node.kubernetes.io/not-ready.*memory-pressure|memory-pressure.*node.kubernetes.io/not-ready' \
    "${H[@]}" get pod $hp -o jsonpath='{.spec.tolerations[*].key}'
  expect_eq "labels: changed, removed, contract kept" "gold  t1 team-a" \
    "${H[@]}" get pod $hp -o jsonpath='{.metadata.labels.tier} {.metadata.labels.app} {.metadata.labels.kubicle\.dev/tenant} {.metadata.labels.kai\.scheduler/queue}'
  expect_eq "annotations: added, removed, the host's own (kubicle.dev/log) kept" "hello  upd yes" \
    sh -c "kubectl --kubeconfig $SY_HOST_KCFG -n tenants get pod $hp -o jsonpath='{.metadata.annotations.note} {.metadata.annotations.owner} {.metadata.annotations.kubicle\.dev/name} ' && \
      kubectl --kubeconfig $SY_HOST_KCFG -n tenants get pod $hp -o yaml | grep -q 'kubicle.dev/log' && echo yes"
  expect_eq "the tenant pod keeps its new image" "busybox:1.37" \
    "${T[@]}" get pod upd -o jsonpath='{.spec.containers[0].image}'
  "${T[@]}" delete pod upd --wait=false >/dev/null
}

# kubectl logs -f through the tenant: the syncer streams the host pod's log
# (chunked) to kubectl. The stand-in has no kubelet: it answers a follow with
# the log the test scheduler wrote and ends the stream, so kubectl returns.
syncer_suite_logs_follow() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") out
  "${T[@]}" run flw --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" wait --for=condition=Ready pod/flw --timeout=20s >/dev/null
  sy_until 5 sh -c "kubectl --kubeconfig $T_t1_KCFG logs flw | grep -q 'step 3/3'"
  out=$(timeout 20 "${T[@]}" logs -f flw 2>&1)
  expect_eq "kubectl logs -f follows the running host pod's log to its end" 0 \
    sh -c "printf '%s\n' \"\$1\" | grep -q 'starting flw-x-default-x-t1 on gpu-node' && printf '%s\n' \"\$1\" | grep -q 'training step 3/3' && echo 0" _ "$out"
  expect_eq "kubectl logs -f: the lines in order, as without -f" "$("${T[@]}" logs flw)" \
    printf '%s' "$out"
  expect_eq "kubectl logs -f --tail 2: the last two lines" \
    "$("${T[@]}" logs flw | tail -2)" timeout 20 "${T[@]}" logs -f --tail 2 flw
  expect "kubectl logs -f -c names the container" 'training step 3/3' \
    timeout 20 "${T[@]}" logs -f -c flw flw
  expect_fail "kubectl logs -f of a missing pod" 'NotFound|not found' \
    timeout 20 "${T[@]}" logs -f nosuchpod
  "${T[@]}" delete pod flw --wait=false >/dev/null
}

# kubectl exec through the tenant: the tenant checks the pod and RBAC, the
# syncer opens the same WebSocket upgrade to the host pod and pipes bytes;
# the host stand-in (--standin-exec) runs the command as a local process
# and speaks v5.channel.k8s.io, as a kubelet would.
syncer_suite_exec() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  local k out f=$E2E_TMP/exec.out
  "${T[@]}" apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: ex}
spec:
  containers:
  - {name: main, image: busybox, command: [sleep, "3600"], env: [{name: GREETING, value: bonjour}]}
  - {name: side, image: busybox, command: [sleep, "3600"]}
YAML
  "${T[@]}" wait --for=condition=Ready pod/ex --timeout=20s >/dev/null
  for k in kubectl "$GSDK/kubectl.1.33" "$GSDK/kubectl.1.30"; do
    [ -x "$k" ] || command -v "$k" >/dev/null || continue
    expect_eq "exec ($(basename "$k")): stdout of the command" "hello world" \
      "$k" --kubeconfig "$T_t1_KCFG" exec ex -c main -- echo hello world
  done
  expect_rc "exec: the command's exit code is kubectl's" 3 'command terminated with exit code 3' \
    "${T[@]}" exec ex -c main -- sh -c 'exit 3'
  expect_eq "exec -i: stdin reaches the command, its end too" "hello-stdin" \
    sh -c "printf 'hello-stdin\n' | kubectl --kubeconfig $T_t1_KCFG exec -i ex -c main -- cat"
  "${T[@]}" exec ex -c main -- sh -c 'echo to-out; echo to-err >&2' >"$f" 2>"$f.err"
  expect_eq "exec: stdout and stderr on their own channels" "to-out|to-err" \
    sh -c "printf '%s|%s' \"\$(cat $f)\" \"\$(cat $f.err)\""
  expect_eq "exec: the container's env" "bonjour" \
    "${T[@]}" exec ex -c main -- sh -c 'echo $GREETING'
  expect_eq "exec: 3 MB of output, whole" "3000000" \
    sh -c "kubectl --kubeconfig $T_t1_KCFG exec ex -c main -- head -c 3000000 /dev/zero | wc -c"
  head -c 2000000 /dev/urandom >"$f.in"
  expect_eq "exec -i: 2 MB of stdin, byte for byte" "$(sha256sum <"$f.in" | cut -c1-64)" \
    sh -c "kubectl --kubeconfig $T_t1_KCFG exec -i ex -c main -- sha256sum <$f.in | cut -c1-64"
  expect_fail "exec: a container the pod lacks" 'container nosuch is not valid for pod ex' \
    "${T[@]}" exec ex -c nosuch -- true
  expect_fail "exec: a command not found" 'executable file not found' \
    "${T[@]}" exec ex -c main -- /no/such/cmd
  expect_rc "exec: the stand-in answers kubectl on the host itself" 0 '^direct$' \
    "${H[@]}" exec ex-x-default-x-t1 -c main -- echo direct
  # without a container, the server asks for one (kubectl picks the first
  # itself, so ask with curl as a client library would)
  expect "exec: no container named in a pod of two" \
    'a container name must be specified for pod ex, choose one of: \[main side\]' \
    curl -sS --cacert "$E2E_TMP/t1/ca.crt" --cert "$E2E_TMP/t1/admin.crt" --key "$E2E_TMP/t1/admin.key" \
      -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
      -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H 'Sec-WebSocket-Protocol: v5.channel.k8s.io' \
      "https://127.0.0.1:$T_t1_PORT/api/v1/namespaces/default/pods/ex/exec?command=true&stdout=true"
  expect "exec: a plain GET, without an upgrade, is refused" 'Upgrade request required' \
    curl -sS --cacert "$E2E_TMP/t1/ca.crt" --cert "$E2E_TMP/t1/admin.crt" --key "$E2E_TMP/t1/admin.key" \
      "https://127.0.0.1:$T_t1_PORT/api/v1/namespaces/default/pods/ex/exec?command=true&stdout=true&container=main"
  # RBAC: get on pods/exec is not enough for a WebSocket exec; create is
  "$KUBICLE" kubeconfig --data-dir "$E2E_TMP/t1" --user viewer --out "$E2E_TMP/viewer.kcfg" >/dev/null
  "${T[@]}" create role exec-get --verb=get,list --resource=pods,pods/exec >/dev/null
  "${T[@]}" create rolebinding viewer-exec-get --role=exec-get --user=viewer >/dev/null
  expect_fail "exec: get on pods/exec alone is refused" \
    'cannot create resource "pods/exec" in API group "" in the namespace "default"' \
    kubectl --kubeconfig "$E2E_TMP/viewer.kcfg" exec ex -c main -- true
  "${T[@]}" create role exec-create --verb=create --resource=pods/exec >/dev/null
  "${T[@]}" create rolebinding viewer-exec-create --role=exec-create --user=viewer >/dev/null
  expect_until "exec: with create on pods/exec it runs" "ok" \
    kubectl --kubeconfig "$E2E_TMP/viewer.kcfg" exec ex -c main -- echo ok
  syncer_suite_exec_protocol
  expect "the stand-in's server stays up" '^ok$' "${H[@]}" get --raw /readyz
  "${T[@]}" delete pod ex --wait=false >/dev/null
}

# A container reads its own pod through the downward API as the tenant has
# it, not as the host does: name, namespace, uid, service account, labels,
# and its hostname (the stand-in resolves fieldRefs as a kubelet would).
syncer_suite_downward() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  local uid out
  "${T[@]}" create ns dw >/dev/null
  "${T[@]}" -n dw create sa runner >/dev/null
  "${T[@]}" -n dw apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: me, labels: {app: dw}}
spec:
  serviceAccountName: runner
  containers:
  - name: main
    image: busybox
    command: [sleep, "3600"]
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}
    - {name: POD_SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
    - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
  volumes:
  - name: info
    downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}
YAML
  "${T[@]}" -n dw wait --for=condition=Ready pod/me --timeout=20s >/dev/null
  uid=$("${T[@]}" -n dw get pod me -o jsonpath='{.metadata.uid}')
  expect_eq "downward API: fieldRef apiVersion defaults to v1, a file mode to 0644" "v1 420" \
    "${T[@]}" -n dw get pod me -o jsonpath='{.spec.containers[0].env[0].valueFrom.fieldRef.apiVersion} {.spec.volumes[0].downwardAPI.defaultMode}'
  out=$("${T[@]}" -n dw exec me -- sh -c 'echo "$POD_NAME $POD_NS $POD_UID $POD_SA $APP $HOSTNAME"')
  expect_eq "downward API: the pod's name, namespace, uid, service account, labels and hostname are the tenant's" \
    "me dw $uid runner dw me" echo "$out"
  expect_eq "downward API: the node is the host's, as the tenant sees it" \
    "$("${T[@]}" -n dw get pod me -o jsonpath='{.spec.nodeName}')" \
    "${T[@]}" -n dw exec me -- sh -c 'echo $NODE'
  expect_eq "downward API: the host pod reads them from the contract's annotations" \
    "metadata.annotations['kubicle.dev/name'] runner me" \
    "${H[@]}" get pod me-x-dw-x-t1 -o jsonpath="{.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath} {.metadata.annotations.kubicle\.dev/service-account} {.spec.hostname}"
  expect_eq "downward API: a labels file has the tenant's labels in the kubelet's format" 'app="dw"' \
    "${H[@]}" get pod me-x-dw-x-t1 -o jsonpath="{.metadata.annotations.kubicle\.dev/labels}"
  "${T[@]}" -n dw label pod me tier=web >/dev/null
  expect_until "downward API: a new label reaches the labels file" $'app="dw"\ntier="web"' \
    "${H[@]}" get pod me-x-dw-x-t1 -o jsonpath="{.metadata.annotations.kubicle\.dev/labels}"
  expect_fail "downward API: an env var may not read status.phase" \
    'spec.containers\[0\].env\[0\].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"' \
    "${T[@]}" -n dw run bad1 --image=busybox --overrides='{"spec":{"containers":[{"name":"bad1","image":"busybox","env":[{"name":"P","valueFrom":{"fieldRef":{"fieldPath":"status.phase"}}}]}]}}'
  expect_fail "downward API: an unknown field path" \
    'fieldPath: Invalid value: "metadata.nope": error converting fieldPath: field label not supported: metadata.nope' \
    "${T[@]}" -n dw run bad2 --image=busybox --overrides='{"spec":{"containers":[{"name":"bad2","image":"busybox","env":[{"name":"P","valueFrom":{"fieldRef":{"fieldPath":"metadata.nope"}}}]}]}}'
  expect_fail "downward API: value and valueFrom together" \
    'spec.containers\[0\].env\[0\].valueFrom: Invalid value: "": may not be specified when `value` is not empty' \
    "${T[@]}" -n dw run bad3 --image=busybox --overrides='{"spec":{"containers":[{"name":"bad3","image":"busybox","env":[{"name":"P","value":"x","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]}]}}'
  expect_fail "downward API: a label key that is not a qualified name" \
    "Invalid value: \"a b\": name part must consist of alphanumeric characters" \
    "${T[@]}" -n dw run bad4 --image=busybox --overrides="{\"spec\":{\"containers\":[{\"name\":\"bad4\",\"image\":\"busybox\",\"env\":[{\"name\":\"P\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.labels['a b']\"}}}]}]}}"
  "${T[@]}" delete ns dw --wait=false >/dev/null
}

# kubectl debug: a tenant pod's new ephemeral container reaches its host pod
# through the host's pods/ephemeralcontainers.
syncer_suite_debug() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  "${T[@]}" run dbgme --image=busybox --env=TOKEN=x -- sleep 3600 >/dev/null
  "${T[@]}" wait --for=condition=Ready pod/dbgme --timeout=20s >/dev/null
  expect "debug: kubectl debug adds an ephemeral container in the tenant" \
    'Defaulting debug container name to debugger-' \
    "${T[@]}" debug dbgme --image=busybox --target=dbgme
  local ec
  ec=$("${T[@]}" get pod dbgme -o jsonpath='{.spec.ephemeralContainers[0].name}')
  expect_until "debug: ... and on the host pod, by the same name and target" "$ec busybox dbgme" \
    "${H[@]}" get pod dbgme-x-default-x-t1 -o jsonpath='{.spec.ephemeralContainers[0].name} {.spec.ephemeralContainers[0].image} {.spec.ephemeralContainers[0].targetContainerName}'
  expect_eq "debug: the host's ephemeral container gets the tenant API's address too" "1" \
    sh -c "kubectl --kubeconfig $SY_HOST_KCFG -n tenants get pod dbgme-x-default-x-t1 -o jsonpath='{.spec.ephemeralContainers[0].env[*].name}' | tr ' ' '\n' | grep -c '^KUBERNETES_SERVICE_HOST\$'"
  "${T[@]}" debug dbgme --image=busybox:1.36 >/dev/null 2>&1
  expect_until "debug: a second one is added, the first kept" "2" \
    sh -c "kubectl --kubeconfig $SY_HOST_KCFG -n tenants get pod dbgme-x-default-x-t1 -o jsonpath='{.spec.ephemeralContainers[*].name}' | wc -w | tr -d ' '"
  "${T[@]}" create configmap dbgcm --from-literal=MODE=debug >/dev/null
  "${T[@]}" patch pod dbgme --subresource=ephemeralcontainers --type=strategic \
    -p '{"spec":{"ephemeralContainers":[{"name":"withcfg","image":"busybox","envFrom":[{"configMapRef":{"name":"dbgcm"}}]}]}}' >/dev/null
  expect_until "debug: a ConfigMap only an ephemeral container uses is synced, and named so" \
    "dbgcm-x-default-x-t1 debug" \
    sh -c "kubectl --kubeconfig $SY_HOST_KCFG -n tenants get pod dbgme-x-default-x-t1 -o jsonpath='{.spec.ephemeralContainers[?(@.name==\"withcfg\")].envFrom[0].configMapRef.name}' && printf ' ' && kubectl --kubeconfig $SY_HOST_KCFG -n tenants get cm dbgcm-x-default-x-t1 -o jsonpath='{.data.MODE}'"
  "${T[@]}" delete pod dbgme --wait=false >/dev/null
  expect_until "debug: ... and removed from the host with the pod" "gone" \
    sh -c "kubectl --kubeconfig $SY_HOST_KCFG -n tenants get cm dbgcm-x-default-x-t1 >/dev/null 2>&1 || echo gone"
  "${T[@]}" delete cm dbgcm >/dev/null
}

# A claim the host refuses (its quota) is a Warning event on the tenant claim.
syncer_suite_pvc_refused() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  "${H[@]}" create quota storage-cap --hard=requests.storage=1Gi >/dev/null
  "${T[@]}" apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: toobig}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}
YAML
  expect_until "claims: the host's refusal is an event on the tenant claim" "FailedCreate Warning" \
    sh -c "kubectl --kubeconfig $T_t1_KCFG get events --field-selector involvedObject.name=toobig,involvedObject.kind=PersistentVolumeClaim -o jsonpath='{.items[0].reason} {.items[0].type}'"
  expect "claims: ... with the host's words" 'exceeded quota: storage-cap' \
    "${T[@]}" describe pvc toobig
  "${T[@]}" delete pvc toobig --wait=false >/dev/null
  "${H[@]}" delete quota storage-cap >/dev/null
}

# Services: a host Service per tenant Service selecting that namespace's
# host pods, the host's cluster IP back in the tenant, updates, deletions
# both ways, orphans and refusals.
sy_svc_sel() { # host Service: its selector as sorted k=v,...
  kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants get svc "$1" -o json |
    jq -r '.spec.selector // {} | to_entries | map("\(.key)=\(.value)") | sort | join(",")'
}
sy_svc_ip() { # kubeconfig svc [ns]
  kubectl --kubeconfig "$1" ${3:+-n $3} get svc "$2" -o jsonpath='{.spec.clusterIP}'
}
sy_svc_ip_same() { # tenant svc, host svc: the same clusterIP
  local t h
  t=$(sy_svc_ip "$T_t1_KCFG" "$1") h=$(sy_svc_ip "$SY_HOST_KCFG" "$2" tenants)
  [ -n "$h" ] && [ "$t" = "$h" ]
}
sy_svc_uid() { kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants get svc "$1" -o jsonpath='{.metadata.uid}'; }
sy_svc_renewed() { local u; u=$(sy_svc_uid "$1") && [ -n "$u" ] && [ "$u" != "$2" ]; }

syncer_suite_services() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG" -n tenants)
  local hs=web-x-default-x-t1 tip uid
  # the clusterIP the tenant allocated, as its create answered
  tip=$("${T[@]}" create -o jsonpath='{.spec.clusterIP}' -f - <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: web, labels: {app: web}, annotations: {team: a}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
  externalIPs: [203.0.113.7]
  sessionAffinity: ClientIP
EOF
)
  "${T[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  clusterIP: None
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: v1
kind: Service
metadata: {name: ext}
spec: {type: ExternalName, externalName: example.org}
EOF
  sy_until 5 sy_host_has svc $hs
  expect_eq "services: a tenant Service reaches the host with the contract's labels and annotations" \
    "t1 default default Service web $("${T[@]}" get svc web -o jsonpath='{.metadata.uid}') web a" \
    "${H[@]}" get svc $hs -o jsonpath='{.metadata.labels.kubicle\.dev/tenant} {.metadata.labels.kubicle\.dev/namespace} {.metadata.annotations.kubicle\.dev/namespace} {.metadata.annotations.kubicle\.dev/kind} {.metadata.annotations.kubicle\.dev/name} {.metadata.annotations.kubicle\.dev/uid} {.metadata.labels.app} {.metadata.annotations.team}'
  expect_eq "services: the selector is the tenant's plus its tenant and namespace labels" \
    "app=web,kubicle.dev/namespace=default,kubicle.dev/tenant=t1" sy_svc_sel $hs
  expect_eq "services: ports and session affinity copied, externalIPs dropped" \
    "http 80 8080 TCP ClientIP |" "${H[@]}" get svc $hs -o \
    jsonpath='{.spec.ports[0].name} {.spec.ports[0].port} {.spec.ports[0].targetPort} {.spec.ports[0].protocol} {.spec.sessionAffinity} |{.spec.externalIPs}'
  sy_until 5 sy_svc_ip_same web $hs
  expect_eq "services: the tenant Service's clusterIP and clusterIPs are the host's" \
    "$(sy_svc_ip "$SY_HOST_KCFG" $hs tenants) $(sy_svc_ip "$SY_HOST_KCFG" $hs tenants)" \
    "${T[@]}" get svc web -o jsonpath='{.spec.clusterIP} {.spec.clusterIPs[0]}'
  if [ -n "$tip" ] && [ "$tip" != "$(sy_svc_ip "$T_t1_KCFG" web)" ]; then
    pass "services: (the tenant's own allocation $tip was replaced)"
  else fail "services: the tenant Service kept its own clusterIP $tip"; fi
  sy_until 5 sy_host_has svc db-x-default-x-t1
  expect_eq "services: a headless Service stays headless on the host and in the tenant" "None None" \
    sh -c "echo \$(kubectl --kubeconfig $SY_HOST_KCFG -n tenants get svc db-x-default-x-t1 -o jsonpath='{.spec.clusterIP}') \$(kubectl --kubeconfig $T_t1_KCFG get svc db -o jsonpath='{.spec.clusterIP}')"
  sy_until 5 sy_host_has svc ext-x-default-x-t1
  expect_eq "services: an ExternalName Service keeps its name, gets no selector" \
    "ExternalName example.org|" sh -c "echo \"\$(kubectl --kubeconfig $SY_HOST_KCFG -n tenants get svc ext-x-default-x-t1 -o jsonpath='{.spec.type} {.spec.externalName}|{.spec.selector}')\""
  expect_fail "services: default/kubernetes stays in the tenant" 'NotFound|not found' \
    "${H[@]}" get svc kubernetes-x-default-x-t1
  "${T[@]}" patch svc web --type=json -p '[{"op":"replace","path":"/spec/ports/0/port","value":81},{"op":"add","path":"/spec/ports/-","value":{"name":"metrics","port":9090,"protocol":"TCP"}},{"op":"replace","path":"/spec/selector","value":{"app":"web2","tier":"front"}}]' >/dev/null
  "${T[@]}" label svc web app- stage=beta >/dev/null
  sy_until 5 out_is "app=web2,kubicle.dev/namespace=default,kubicle.dev/tenant=t1,tier=front" sy_svc_sel $hs
  expect_eq "services: a selector update reaches the host (the tenant's keys replaced, ours kept)" \
    "app=web2,kubicle.dev/namespace=default,kubicle.dev/tenant=t1,tier=front" sy_svc_sel $hs
  expect_eq "services: a ports update and label changes reach the host" "http:81 metrics:9090 | beta" \
    "${H[@]}" get svc $hs -o jsonpath='{range .spec.ports[*]}{.name}:{.port} {end}|{.metadata.labels.app} {.metadata.labels.stage}'
  uid=$(sy_svc_uid $hs)
  "${H[@]}" delete svc $hs >/dev/null
  sy_until 5 sy_svc_renewed $hs "$uid"
  if sy_svc_renewed $hs "$uid"; then
    pass "services: a host Service deleted by someone else is made again (the tenant owns it)"
  else fail "services: the deleted host Service was not made again"; fi
  expect_eq "services: ... with the tenant's spec" "http:81 metrics:9090 " \
    "${H[@]}" get svc $hs -o jsonpath='{range .spec.ports[*]}{.name}:{.port} {end}'
  sy_until 5 sy_svc_ip_same web $hs
  expect_eq "services: ... and its new clusterIP is written back" \
    "$(sy_svc_ip "$SY_HOST_KCFG" $hs tenants)" sy_svc_ip "$T_t1_KCFG" web
  "${T[@]}" delete svc db >/dev/null
  sy_until 5 sy_host_lacks svc db-x-default-x-t1
  expect_fail "services: deleting the tenant Service deletes the host Service" 'NotFound|not found' \
    "${H[@]}" get svc db-x-default-x-t1
  # while the tenant is down: a host Service of it whose tenant Service is
  # gone (an orphan), and one with the tenant's label alone (the in-cluster
  # server's own Service) that is not the syncer's
  kill "$T_t1_PID"; wait "$T_t1_PID" 2>/dev/null
  "${H[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata:
  name: ghost-x-default-x-t1
  labels: {kubicle.dev/tenant: t1, kubicle.dev/namespace: default}
  annotations: {kubicle.dev/namespace: default, kubicle.dev/name: ghost, kubicle.dev/uid: 0f0e, kubicle.dev/kind: Service}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata:
  name: t1-server
  labels: {kubicle.dev/tenant: t1}
spec: {ports: [{port: 443}]}
EOF
  sy_start_tenant t1 team-a "$T_t1_PORT"
  T=(kubectl --kubeconfig "$T_t1_KCFG")
  sy_until 15 sy_host_lacks svc ghost-x-default-x-t1
  expect_fail "services: restart: a host Service whose tenant Service is gone is deleted" \
    'NotFound|not found' "${H[@]}" get svc ghost-x-default-x-t1
  expect_eq "services: restart: a Service with the tenant's label alone is left alone" "t1-server" \
    "${H[@]}" get svc t1-server -o jsonpath='{.metadata.name}'
  "${H[@]}" delete svc t1-server >/dev/null
  # a host refusal: its quota allows no load balancer
  "${H[@]}" create quota no-lb --hard=services.loadbalancers=0 >/dev/null
  "${T[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata: {name: lb}
spec: {type: LoadBalancer, selector: {app: web}, ports: [{port: 443}]}
EOF
  expect_until "services: the host's refusal is an event on the tenant Service" "FailedCreate Warning" \
    sh -c "kubectl --kubeconfig $T_t1_KCFG get events --field-selector involvedObject.name=lb,involvedObject.kind=Service -o jsonpath='{.items[0].reason} {.items[0].type}'"
  expect "services: ... with the host's words" 'exceeded quota: no-lb' "${T[@]}" describe svc lb
  "${T[@]}" delete svc lb web ext >/dev/null
  "${H[@]}" delete quota no-lb >/dev/null
  sy_until 5 sy_host_lacks svc $hs
}

# The host's PriorityClasses (KAI's train and inference) are in the tenant,
# read-only copies its pods name; a class only the tenant has stays off the
# host pod.
syncer_suite_classes() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") H=(kubectl --kubeconfig "$SY_HOST_KCFG")
  "${H[@]}" create priorityclass train --value=50 --preemption-policy=Never \
    --description="KAI train" >/dev/null
  expect_until "classes: a host class reaches the tenant" "50 Never true" \
    "${T[@]}" get pc train -o jsonpath='{.value} {.preemptionPolicy} {.metadata.labels.kubicle\.dev/host-class}'
  "${T[@]}" create priorityclass mine --value=3 >/dev/null
  "${T[@]}" apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: trainer}
spec:
  priorityClassName: train
  containers: [{name: main, image: busybox, command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: own-class}
spec:
  priorityClassName: mine
  containers: [{name: main, image: busybox, command: [sleep, "3600"]}]
YAML
  expect_eq "classes: the tenant pod has the host class's priority" "50 Never" \
    "${T[@]}" get pod trainer -o jsonpath='{.spec.priority} {.spec.preemptionPolicy}'
  expect_until "classes: the host pod names the host class" "train" \
    "${H[@]}" -n tenants get pod trainer-x-default-x-t1 -o jsonpath='{.spec.priorityClassName}'
  expect_until "classes: a tenant-only class stays off the host pod" "exists:" \
    "${H[@]}" -n tenants get pod own-class-x-default-x-t1 -o jsonpath='exists:{.spec.priorityClassName}'
  "${H[@]}" delete priorityclass train >/dev/null
  expect_until "classes: a host class deleted on the host leaves the tenant" "gone" \
    sh -c "kubectl --kubeconfig $T_t1_KCFG get pc train >/dev/null 2>&1 || echo gone"
  expect_eq "classes: the tenant's own class stays" "mine" "${T[@]}" get pc mine -o jsonpath='{.metadata.name}'
  "${T[@]}" delete pod trainer own-class --wait=false >/dev/null
  "${T[@]}" delete pc mine >/dev/null
}

# A tenant's exec sessions to the host are capped (--host-max-streams 2 for
# t2): one more is answered 429, and a session that ends frees its place.
syncer_suite_exec_cap() {
  local T=(kubectl --kubeconfig "$T_t2_KCFG") p1 p2
  "${T[@]}" run capx --image=busybox -- sleep 3600 >/dev/null
  "${T[@]}" wait --for=condition=Ready pod/capx --timeout=20s >/dev/null
  "${T[@]}" exec capx -- sleep "$(sy_nap 3)" >/dev/null 2>&1 & p1=$!
  "${T[@]}" exec capx -- sleep "$(sy_nap 3)" >/dev/null 2>&1 & p2=$!
  expect_until "exec cap: two sessions run" "2" sy_sleeps "$(sy_nap 3)"
  expect_fail "exec cap: a third is refused with 429" 'too many exec, attach and port-forward sessions at once \(2\)' \
    timeout 20 "${T[@]}" exec capx -- true
  kill -9 "$p1" "$p2"; wait "$p1" "$p2" 2>/dev/null
  expect_until "exec cap: sessions that end free their places" "free" \
    sh -c "kubectl --kubeconfig $T_t2_KCFG exec capx -- echo free 2>/dev/null"
  "${T[@]}" delete pod capx --wait=false >/dev/null
}

# sy_nap K: a number of seconds for a `sleep` the tests look for on this
# machine, its own to this run (another e2e run beside it, on the same
# machine, sleeps for others).
sy_nap() {
  echo $((4200000000 + $$ * 10 + $1))
}

# sy_sleeps N: how many processes `sleep N` run on this machine (no procps
# needed; a process may exit between the glob and the read: quiet).
sy_sleeps() {
  local f
  for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' 2>/dev/null <"$f"; echo; done |
    grep -cx "sleep $1 "
}

# sy_sleep_running N: whether a process `sleep N` runs on this machine.
sy_sleep_running() {
  [ "$(sy_sleeps "$1")" != 0 ] && echo running || echo gone
}

# The channel protocol byte by byte (tests/e2e/wsexec.py), through the
# tenant's pipe and on the stand-in itself; the end of a session.
syncer_suite_exec_protocol() {
  local T=(kubectl --kubeconfig "$T_t1_KCFG") ws=(python3 "$SY_HERE/wsexec.py")
  local tp=/api/v1/namespaces/default/pods/ex/exec hp=/api/v1/namespaces/tenants/pods/ex-x-default-x-t1/exec
  expect_eq "exec: a ping through the tenant's pipe is answered (kubectl needs it after 61 s)" \
    "pong are-you-there" "${ws[@]}" "$E2E_TMP/t1" "$tp?command=sleep&command=5&container=main&stdout=true" ping
  expect_eq "exec: stdout on channel 1, stderr on 2, the Status on 3, then close 1000" \
    "$(printf '%s\n' "ch1=b'out\\n'" "ch2=b'err\\n'" "ch3=b'{\"metadata\":{},\"status\":\"Success\"}'" 'close 1000')" \
    "${ws[@]}" "$E2E_TMP/t1" "$tp?command=sh&command=-c&command=echo+out%3Becho+err+%3E%262&container=main&stdout=true&stderr=true" channels
  expect "exec: a non-zero exit is NonZeroExitCode with the code as its cause" \
    'ch3=.*"reason":"NonZeroExitCode".*"causes":\[\{"reason":"ExitCode","message":"7"\}\]' \
    "${ws[@]}" "$E2E_TMP/syhost" "$hp?command=sh&command=-c&command=exit+7&container=main&stdout=true" channels
  expect_eq "exec with a terminal: stdout and stderr on the terminal (channel 1)" "ch1=b'out\\r\\nerr\\r\\n'" \
    sh -c "python3 $SY_HERE/wsexec.py $E2E_TMP/syhost '$hp?command=sh&command=-c&command=echo+out%3Bsleep+0.2%3Becho+err+%3E%262&container=main&stdout=true&tty=true' channels | sed -n 1p"
  # kubectl exec -it in a terminal (script(1)): an interactive shell, its
  # size, its exit code; ^C reaches the command as SIGINT
  expect "exec -it: an interactive shell in a terminal of the client's size" \
    '/dev/pts/[0-9]+.*30 100.*42.*command terminated with exit code 4' \
    sh -c "(sleep 2; printf 'tty; stty size; echo \$((6*7))\n'; sleep 2; printf 'exit 4\n') |
      timeout 30 script -qc 'stty cols 100 rows 30; kubectl --kubeconfig $T_t1_KCFG exec -it ex -c main -- sh' /dev/null | tr -d '\r' | tr '\n' ' '"
  # (the ^C once the command runs on the host: sent before kubectl has put
  # the terminal in raw mode, it would interrupt kubectl itself)
  expect "exec -it: ^C interrupts the command" 'command terminated with exit code 130' \
    bash -c "$(declare -f sy_sleeps sy_sleep_running)
      (for i in \$(seq 300); do [ \$(sy_sleep_running $(sy_nap 4)) = running ] && break; sleep 0.1; done; printf '\003') |
      timeout 30 script -qc 'kubectl --kubeconfig $T_t1_KCFG exec -it ex -c main -- sleep $(sy_nap 4)' /dev/null"
  expect_eq "exec: stdin, then the v5 close signal ends it" "ch1=b'abc'" \
    sh -c "python3 $SY_HERE/wsexec.py $E2E_TMP/t1 '$tp?command=cat&container=main&stdin=true&stdout=true' stdin | sed -n 1p"
  expect_eq "exec: an unmasked client frame is a protocol error (1002)" "close 1002" \
    "${ws[@]}" "$E2E_TMP/syhost" "$hp?command=cat&container=main&stdin=true&stdout=true" unmasked
  # a client that goes away: the command is killed on the host, with what
  # it started (its process group)
  "${T[@]}" exec ex -c main -- sh -c "sleep $(sy_nap 2); true" >/dev/null 2>&1 &
  local kpid=$!
  expect_until "exec: the command runs on the host" "running" sy_sleep_running "$(sy_nap 2)"
  kill -9 "$kpid"; wait "$kpid" 2>/dev/null
  expect_until "exec: the command and its children die with their client" "gone" \
    sy_sleep_running "$(sy_nap 2)"
  printf 'copied %s\n' "$RANDOM" >"$E2E_TMP/cp.src"
  "${T[@]}" cp -c main "ex:$E2E_TMP/cp.src" "$E2E_TMP/cp.dst" >/dev/null 2>&1
  expect_eq "kubectl cp (tar over exec) from the pod" "$(cat "$E2E_TMP/cp.src")" cat "$E2E_TMP/cp.dst"
  expect_fail "kubectl attach: the host's refusal is passed on" 'pods/attach is not served here' \
    timeout 20 "${T[@]}" attach ex -c main
  expect "port-forward: the host's refusal is passed on" 'port-forward over WebSocket needs the subprotocol SPDY/3.1\+portforward.k8s.io' \
    curl -sS --cacert "$E2E_TMP/t1/ca.crt" --cert "$E2E_TMP/t1/admin.crt" --key "$E2E_TMP/t1/admin.key" \
      -H 'Connection: Upgrade' -H 'Upgrade: websocket' -H 'Sec-WebSocket-Version: 13' \
      -H 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==' -H 'Sec-WebSocket-Protocol: v5.channel.k8s.io' \
      "https://127.0.0.1:$T_t1_PORT/api/v1/namespaces/default/pods/ex/portforward?ports=80"
}

# Host credentials that rotate: the tenant's host kubeconfig names a
# tokenFile (relative to the kubeconfig) that a supervisor rewrites; the old
# token is then revoked. The syncer re-reads the file on the 401 and retries.
syncer_suite_token_rotation() {
  local d=$E2E_TMP/t3host tok1 tok2 url
  mkdir -p "$d"
  url=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$SY_HOST_KCFG")
  cp "$E2E_TMP/syhost/ca.crt" "$d/ca.crt"
  printf '%s\n' 'apiVersion: v1' 'kind: Config' 'current-context: host' \
    'clusters:' '- name: host' "  cluster: {server: \"$url\", certificate-authority: ca.crt}" \
    'users:' '- name: syncer' '  user: {tokenFile: host-token}' \
    'contexts:' '- name: host' '  context: {cluster: host, user: syncer}' >"$d/kubeconfig"
  tok1=$("$KUBICLE" token create --data-dir "$E2E_TMP/syhost" --user t3-syncer --group system:masters)
  printf '%s\n' "$tok1" >"$d/host-token"
  E2E_PORT=0 start_server t3 --host-kubeconfig "$d/kubeconfig" \
    --host-namespace tenants --tenant t3 --queue team-b || { fail "t3: start"; return; }
  local T=(kubectl --kubeconfig "$KCFG") t3_pid=$SERVER_PID
  "${T[@]}" run rot1 --image=busybox -- sleep 3600 >/dev/null
  sy_until 5 sy_host_has pod rot1-x-default-x-t3
  expect "tokenFile kubeconfig: host pod created with the first token" \
    '^rot1-x-default-x-t3 rot1 team-b' sy_host_pods t3
  # the supervisor writes a new token (atomically), then the old one is revoked
  tok2=$("$KUBICLE" token create --data-dir "$E2E_TMP/syhost" --user t3-syncer --group system:masters)
  printf '%s\n' "$tok2" >"$d/host-token.new" && mv "$d/host-token.new" "$d/host-token"
  "$KUBICLE" token revoke --data-dir "$E2E_TMP/syhost" "$tok1" >/dev/null
  expect "the old host token is refused by the host" '"code": ?401' \
    curl -sS --cacert "$d/ca.crt" -H "Authorization: Bearer $tok1" "$url/api/v1/namespaces/tenants/pods"
  "${T[@]}" run rot2 --image=busybox -- sleep 3600 >/dev/null
  sy_until 10 sy_host_has pod rot2-x-default-x-t3
  expect "rotated token: the syncer re-reads the token file on 401 and still creates host pods" \
    '^rot2-x-default-x-t3 rot2 team-b' sy_host_pods t3
  expect "rotated token: status still flows back" 'condition met' \
    "${T[@]}" wait --for=condition=Ready pod/rot2 --timeout=20s
  expect "the syncer logged the token change" 'new token' cat "$E2E_TMP/t3.log"
  "${T[@]}" delete pod rot1 rot2 --timeout=20s >/dev/null
  expect_eq "rotated token: deletions reach the host" "" sy_host_pods t3
  kill "$t3_pid"; wait "$t3_pid" 2>/dev/null
}

syncer_suite() {
  syncer_suite_setup || { fail "syncer: setup"; return; }
  syncer_suite_basic
  syncer_suite_update
  syncer_suite_logs_follow
  syncer_suite_exec
  syncer_suite_portforward
  syncer_suite_exec_spdy
  syncer_suite_stop_with_sessions
  syncer_suite_downward
  syncer_suite_classes
  syncer_suite_debug
  syncer_suite_exec_cap
  syncer_suite_sa
  syncer_suite_config
  syncer_suite_pvc
  syncer_suite_pvc_refused
  syncer_suite_services
  syncer_suite_quota
  syncer_suite_delete
  syncer_suite_two_tenants
  syncer_suite_names
  syncer_suite_token_rotation
  syncer_suite_kill9
  syncer_suite_host_outage
}
