# SPDX-License-Identifier: Apache-2.0
# Kubernetes' own admission that a tenant configures in its namespaces
# (proxy/admission/quota.c, proxy/admission/limitrange.c, proxy/admission/admission.c), driven by real
# kubectl: ResourceQuota (refusals naming the quota, status.used kept by
# admission and recomputed after deletes), LimitRange (defaults in created
# pods, max refusals, PVC storage) and the pod-security.kubernetes.io
# namespace labels (enforce, warn, invalid values; never weaker than the
# server's --policy). Sourced by run.sh.

# adm_pod NAME [RESOURCES-JSON]: a plain pod (baseline, not restricted)
adm_pod() {
  local r=${2:-"{}"}
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  containers:
  - name: c
    image: busybox
    resources: $r
YAML
}

admission_quota() {
  local K="kubectl --kubeconfig $KCFG" res='{limits: {cpu: 300m, memory: 128Mi}}'
  echo "== admission: ResourceQuota"
  $K create ns quota >/dev/null
  $K apply -n quota -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ResourceQuota
metadata: {name: q1}
spec:
  hard: {pods: "2", requests.cpu: "1", limits.memory: 1Gi}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: objects}
spec:
  hard: {count/configmaps: "2", secrets: "5"}
YAML
  expect "get quota shows used/hard at once" 'pods: 0/2' $K get quota q1 -n quota
  expect_fail "a pod without the quota's resources is refused (must specify)" \
    'pods "bare" is forbidden: failed quota: q1: must specify limits.memory for: c; requests.cpu for: c' \
    $K apply -n quota -f <(adm_pod bare)
  expect "first pod admitted" 'pod/p1 created' $K create -n quota -f <(adm_pod p1 "$res")
  expect "second pod admitted" 'pod/p2 created' $K create -n quota -f <(adm_pod p2 "$res")
  expect_eq "status.used counts both pods" '2 600m 256Mi' \
    $K get quota q1 -n quota -o jsonpath='{.status.used.pods} {.status.used.requests\.cpu} {.status.used.limits\.memory}'
  expect_fail "quota exhaustion refuses the next pod naming the quota" \
    'pods "p3" is forbidden: exceeded quota: q1, requested: pods=1, used: pods=2, limited: pods=2' \
    $K create -n quota -f <(adm_pod p3 "$res")
  expect "describe quota shows used and hard" 'requests\.cpu +600m +1' $K describe quota q1 -n quota
  $K delete pod p2 -n quota --wait=false >/dev/null 2>&1
  expect_until "a deleted pod no longer counts" '1' \
    $K get quota q1 -n quota -o jsonpath='{.status.used.pods}'
  expect "the freed slot admits a pod" 'pod/p3 created' $K create -n quota -f <(adm_pod p3 "$res")
  # object counts: the namespace already holds kube-root-ca.crt
  expect "count/configmaps admits up to hard" 'configmap/a created' $K create cm a -n quota
  expect_fail "count/configmaps refuses beyond hard" \
    'configmaps "b" is forbidden: exceeded quota: objects, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2' \
    $K create cm b -n quota
  expect "a dry-run that fits is admitted" 'created \(server dry run\)' \
    $K create secret generic s1 -n quota --dry-run=server
  expect_eq "a dry run does not count" '0' \
    $K get quota objects -n quota -o jsonpath='{.status.used.secrets}'
  expect "quotas of another namespace do not apply" 'pod/free created' \
    $K run free --image=busybox -n default
  $K patch quota q1 -n quota --type=merge -p '{"spec":{"hard":{"pods":"5"}}}' >/dev/null
  expect_eq "status.hard follows a spec change at once" '5 2' \
    $K get quota q1 -n quota -o jsonpath='{.status.hard.pods} {.status.used.pods}'
}

admission_limitrange() {
  local K="kubectl --kubeconfig $KCFG"
  echo "== admission: LimitRange"
  $K create ns limits >/dev/null
  $K apply -n limits -f - >/dev/null <<'YAML'
apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits:
  - type: Container
    max: {cpu: "1"}
    default: {memory: 128Mi}
    defaultRequest: {cpu: 100m, memory: 64Mi}
  - type: PersistentVolumeClaim
    max: {storage: 2Gi}
YAML
  expect_eq "the LimitRange gets kube's defaults (default from max)" '1' \
    $K get limitrange lr -n limits -o jsonpath='{.spec.limits[0].default.cpu}'
  $K create -n limits -f <(adm_pod d) >/dev/null 2>&1
  expect_eq "a LimitRange default shows up in the created pod" '1 128Mi 100m 64Mi' \
    $K get pod d -n limits -o jsonpath='{.spec.containers[0].resources.limits.cpu} {.spec.containers[0].resources.limits.memory} {.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.requests.memory}'
  expect "the pod is annotated with what LimitRanger set" \
    'LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c' \
    $K get pod d -n limits -o jsonpath='{.metadata.annotations.kubernetes\.io/limit-ranger}'
  expect_fail "a LimitRange max refuses" \
    'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2' \
    $K create -n limits -f <(adm_pod big '{limits: {cpu: "2"}}')
  expect_fail "a LimitRange max refuses a PVC asking for more storage" \
    'persistentvolumeclaims "data" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi' \
    $K apply -n limits -f - <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
YAML
  # the LimitRanges are read once and again after a change (cfg_cache):
  # a change and a delete count at the next create
  $K patch limitrange lr -n limits --type=json \
    -p '[{"op":"replace","path":"/spec/limits/0/max/cpu","value":"3"}]' >/dev/null
  expect "a LimitRange's raised max counts at the next create" 'pod/big created' \
    $K create -n limits -f <(adm_pod big '{limits: {cpu: "2"}}')
  $K delete limitrange lr -n limits >/dev/null
  $K create -n limits -f <(adm_pod nolr) >/dev/null 2>&1
  expect_eq "a deleted LimitRange no longer sets defaults" '' \
    $K get pod nolr -n limits -o jsonpath='{.spec.containers[0].resources.limits.memory}'
  $K create -n limits -f - >/dev/null <<'YAML'
apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits:
  - type: PersistentVolumeClaim
    max: {storage: 2Gi}
YAML
  expect_fail "a LimitRange whose min is above its max (and defaults) is invalid" \
    'spec.limits\[0\].min\[cpu\]: Invalid value: "2": min value 2 is greater than max value 1.*spec.limits\[0\].default\[cpu\]: Invalid value: "1": min value 2 is greater than default value 1' \
    bash -c "$K apply -n limits -f - 2>&1 <<'YAML' | tr '\n' ' '; exit \${PIPESTATUS[0]}
apiVersion: v1
kind: LimitRange
metadata: {name: bad}
spec:
  limits:
  - type: Container
    max: {cpu: '1'}
    min: {cpu: '2'}
YAML"
  expect_fail "a Pod LimitRange item may not set default; GPU default and request must match" \
    "spec.limits\[0\].default: Forbidden: may not be specified when .type. is 'Pod'.*default value 1 must equal to defaultRequest value 2 in nvidia.com/gpu" \
    bash -c "$K apply -n limits -f - 2>&1 <<'YAML' | tr '\n' ' '; exit \${PIPESTATUS[0]}
apiVersion: v1
kind: LimitRange
metadata: {name: bad2}
spec:
  limits:
  - type: Pod
    default: {cpu: '1'}
  - type: Container
    default: {nvidia.com/gpu: '1'}
    defaultRequest: {nvidia.com/gpu: '2'}
YAML"
}

admission_psa() {
  local K="kubectl --kubeconfig $KCFG"
  echo "== admission: Pod Security namespace labels"
  $K create ns strict >/dev/null
  expect_fail "an invalid enforce level is refused on the namespace" \
    'metadata.labels\[pod-security.kubernetes.io/enforce\]: Invalid value: "strict": must be one of privileged, baseline, restricted' \
    $K label ns strict pod-security.kubernetes.io/enforce=strict
  expect "enforce=restricted is accepted" 'labeled' \
    $K label ns strict pod-security.kubernetes.io/enforce=restricted
  expect_fail "enforce=restricted refuses a pod that baseline would accept" \
    'pods "plain" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false' \
    $K create -n strict -f <(adm_pod plain)
  expect "a restricted pod is admitted" 'pod/ok created' $K create -n strict -f - <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: ok}
spec:
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: busybox
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
YAML
  expect "a workload with a violating template is admitted with a warning" \
    'Warning: would violate PodSecurity "restricted:latest"' \
    $K create deployment web -n strict --image=nginx
  $K create ns warned >/dev/null
  $K label ns warned pod-security.kubernetes.io/enforce=baseline \
    pod-security.kubernetes.io/warn=restricted >/dev/null
  expect "warn=restricted admits a baseline pod with a warning" \
    'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation' \
    $K create -n warned -f <(adm_pod w)
  $K create ns tight >/dev/null
  $K create -n tight -f <(adm_pod old) >/dev/null
  expect "tightening enforce warns about existing pods" \
    'Warning: existing pods in namespace "tight" violate the new PodSecurity enforce level "restricted:latest"' \
    $K label ns tight pod-security.kubernetes.io/enforce=restricted
  expect "the warning names the pod and its checks" \
    'Warning: old: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile' \
    $K label ns tight pod-security.kubernetes.io/enforce-version=v1.33
  expect_fail "enforce=baseline refuses a privileged pod with kube's message" \
    'pods "priv" is forbidden: violates PodSecurity "baseline:latest": privileged \(container "priv" must not set securityContext.privileged=true\)' \
    $K run priv -n warned --image=busybox --privileged
  # audit: admitted, the verdict goes to the audit event
  $K create ns audited >/dev/null
  $K label ns audited pod-security.kubernetes.io/audit=restricted >/dev/null
  expect "audit=restricted admits a baseline pod without a warning" '^pod/a created$' \
    $K create -n audited -f <(adm_pod a)
  expect_until_match "the audit event has the audit level's verdict and the enforce policy" 10 \
    '"pod-security.kubernetes.io/enforce-policy":"privileged:latest","pod-security.kubernetes.io/audit-violations":"would violate PodSecurity \\"restricted:latest\\": allowPrivilegeEscalation != false' \
    grep '"resource":"pods","namespace":"audited"' "$DATA_DIR/audit.log"
  expect "a pod checked against enforce=restricted names it" \
    '"pod-security.kubernetes.io/enforce-policy":"restricted:latest"' \
    grep '"resource":"pods","namespace":"strict","name":"ok"' "$DATA_DIR/audit.log"
  $K create deployment web -n audited --image=nginx >/dev/null
  expect_until_match "a workload's template is audited, without an enforce policy" 10 \
    '"authorization.k8s.io/reason":"","pod-security.kubernetes.io/audit-violations":"would violate PodSecurity \\"restricted:latest\\"' \
    grep '"resource":"deployments","namespace":"audited"' "$DATA_DIR/audit.log"
}

admission_policy_floor() {
  local K="kubectl --kubeconfig $KCFG"
  echo "== admission: a namespace label never weakens the policy"
  $K create ns open >/dev/null
  $K label ns open pod-security.kubernetes.io/enforce=privileged >/dev/null
  expect_fail "--policy untrusted: enforce=privileged still refuses a privileged pod" \
    'pods "priv" is forbidden: policy untrusted: violates PodSecurity "restricted:latest": privileged' \
    $K run priv -n open --image=busybox --privileged
}

admission_suite() {
  start_server adm || { fail "server for admission"; return; }
  admission_quota
  admission_limitrange
  admission_psa
  stop_server
  start_server adm-untrusted --policy untrusted || { fail "server --policy untrusted"; return; }
  admission_policy_floor
  stop_server
}
