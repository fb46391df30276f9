# SPDX-License-Identifier: Apache-2.0
# Tenant policies end to end (policies/, proxy/admission/admission.c): servers started
# with --policy untrusted / trusted / a policy file, driven by real kubectl.
# Refusals are 403 Forbidden naming the policy, the rule and the limit;
# quotas count across the tenant; the policy quota is a read-only
# ResourceQuota kube-system/kubicle-policy. Sourced by run.sh.

# pol_pod NAME [ANNOTATION-LINE] [RESOURCES-LINE]: a pod meeting "restricted"
pol_pod() {
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {${2:-}}
spec:
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: busybox
    resources: {limits: {${3:-}}}
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
YAML
}

pol_deploy() { # NAME REPLICAS ANNOTATIONS
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata:
      labels: {app: $1}
      annotations: {${3:-}}
    spec:
      containers:
      - name: c
        image: busybox
YAML
}

policies_untrusted() {
  local K="kubectl --kubeconfig $KCFG"
  echo "== policies: untrusted"
  expect_fail "untrusted: fractional GPU pod refused with the policy message" \
    'pods "train" is forbidden: policy untrusted: gpu-fraction is not allowed; request whole nvidia.com/gpu' \
    $K apply -f <(pol_pod train '"gpu-fraction": "0.5"')
  expect_fail "untrusted: HAMi pod refused" 'nvidia.com/gpumem is not allowed' \
    $K apply -f <(pol_pod hami '' '"nvidia.com/gpu": "1", "nvidia.com/gpumem": "3000"')
  expect_fail "untrusted: MIG pod refused" 'nvidia.com/mig-1g.10gb is not allowed' \
    $K apply -f <(pol_pod mig '' '"nvidia.com/mig-1g.10gb": "1"')
  expect "untrusted: whole-GPU pod accepted" 'pod/whole created' \
    $K apply -f <(pol_pod whole '' '"nvidia.com/gpu": "1"')
  expect_eq "untrusted: forced toleration merged into the pod" 'nvidia.com/gpu:Exists:NoSchedule' \
    $K get pod whole -o jsonpath='{range .spec.tolerations[?(@.key=="nvidia.com/gpu")]}{.key}:{.operator}:{.effect}{end}'
  expect_fail "untrusted: Deployment whose template violates refused" \
    'deployments.apps "frac" is forbidden: policy untrusted: gpu-fraction is not allowed' \
    $K apply -f <(pol_deploy frac 1 '"gpu-fraction": "0.5"')
  expect_fail "untrusted: not stored after refusal" 'NotFound' $K get deployment frac
  expect_fail "untrusted: privileged pod refused under restricted" \
    'pods "priv" is forbidden: policy untrusted: violates PodSecurity "restricted:latest": privileged \(container "priv" must not set securityContext.privileged=true\)' \
    $K run priv --image=busybox --privileged
  expect_fail "untrusted: plain pod refused (runAsNonRoot)" 'runAsNonRoot != true' \
    $K run plain --image=busybox
  expect_fail "untrusted: unknown scheduler refused" 'schedulerName "mine" is not allowed' \
    $K apply -f <(pol_pod sched | sed 's/^  containers:/  schedulerName: mine\n  containers:/')
  expect "untrusted: second GPU pod within quota" 'pod/two created' \
    $K apply -f <(pol_pod two '' '"nvidia.com/gpu": "2"')
  expect_fail "untrusted: quota exhaustion names the quota" \
    'pods "three" is forbidden: policy untrusted: exceeded quota: gpu, requested: 2, used: 3, limited: 4' \
    $K apply -f <(pol_pod three '' '"nvidia.com/gpu": "2"')
  expect "untrusted: get resourcequota -A shows the policy quota" 'kube-system +kubicle-policy' \
    $K get resourcequota -A
  expect_until "untrusted: policy quota shows GPUs used/hard" '3/4' \
    $K get resourcequota -n kube-system kubicle-policy \
    -o jsonpath='{.status.used.requests\.nvidia\.com/gpu}/{.status.hard.requests\.nvidia\.com/gpu}'
  expect_fail "untrusted: policy quota is read-only" \
    'resourcequotas "kubicle-policy" is forbidden: policy untrusted: the policy quota is read-only' \
    $K label resourcequota -n kube-system kubicle-policy a=b
  $K delete pod two --wait=false >/dev/null 2>&1
  expect_until "untrusted: usage drops when a pod goes" '1' \
    $K get resourcequota -n kube-system kubicle-policy -o jsonpath='{.status.used.requests\.nvidia\.com/gpu}'
}

policies_trusted() {
  local K="kubectl --kubeconfig $KCFG"
  echo "== policies: trusted"
  expect "trusted: fractional GPU pod accepted" 'pod/train created' \
    $K apply -f <(pol_pod train '"gpu-fraction": "0.5"')
  expect "trusted: plain pod accepted under baseline" 'pod/plain created' $K run plain --image=busybox
  expect_fail "trusted: privileged pod refused under baseline" \
    'policy trusted: violates PodSecurity "baseline:latest": privileged' \
    $K run priv --image=busybox --privileged
  expect_fail "trusted: hostNetwork refused" 'host namespaces \(hostNetwork=true\)' \
    $K run hn --image=busybox --overrides='{"spec":{"hostNetwork":true}}'
  expect_until "trusted: policy quota counts the fraction" '500m' \
    $K get resourcequota -n kube-system kubicle-policy -o jsonpath='{.status.used.requests\.nvidia\.com/gpu}'
}

# A policy file: pods quota 2; the Deployment controller's third pod is refused.
policies_file() {
  local K="kubectl --kubeconfig $KCFG"
  echo "== policies: file"
  expect "file: deployment with a fractional template accepted" 'deployment.apps/d created' \
    $K apply -f <(pol_deploy d 3 '"gpu-fraction": "0.25"')
  expect_until "file: controller-created pods stop at the pods quota" '2' \
    bash -c "$K get pods -l app=d -o name | wc -l"
  expect_eq "file: forced node selector on controller pods" 'pool-a' \
    $K get pods -l app=d -o jsonpath='{.items[0].spec.nodeSelector.kubicle\.dev/pool}'
  local i
  for i in $(seq 50); do
    grep -q 'refused: policy team: exceeded quota: pods' "$E2E_TMP/pol-file.log" && break
    sleep 0.1
  done
  if grep -q 'refused: policy team: exceeded quota: pods, requested: 1, used: 2, limited: 2' "$E2E_TMP/pol-file.log"
  then pass "file: controller's refused pod logged with the quota"
  else fail "file: no refusal logged: $(grep admission "$E2E_TMP/pol-file.log" | head -3)"; fi
}

policies_suite() {
  start_server pol-untrusted --policy untrusted || { fail "server --policy untrusted"; return; }
  policies_untrusted
  start_server pol-trusted --policy trusted || { fail "server --policy trusted"; return; }
  policies_trusted
  cat >"$E2E_TMP/team.yaml" <<'YAML'
name: team
gpu: {mode: fractional}
podSecurity: baseline
hostFields: deny
quota: {pods: 2}
nodeSelector: {kubicle.dev/pool: pool-a}
YAML
  start_server pol-file --policy "$E2E_TMP/team.yaml" || { fail "server --policy FILE"; return; }
  policies_file
  expect_fail "a bad policy file stops the server" 'podSecurity: must be' \
    "$KUBICLE" serve --data-dir "$E2E_TMP/pol-bad" --listen 127.0.0.1:0 \
    --policy <(printf 'podSecurity: lax\n')
  policies_hostile
}

# ---- a hostile tenant against its GPU policy (issue 21), on a host stand-in

# ph_pod NAME ANNOTATIONS INIT-CONTAINERS CONTAINER-RESOURCES: a pod meeting
# "restricted", on KAI; INIT-CONTAINERS is a YAML flow list.
ph_pod() {
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {$2}
spec:
  schedulerName: kai-scheduler
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  initContainers: ${3:-[]}
  containers:
  - name: c
    image: busybox
    command: [sleep, "3600"]
    resources: {$4}
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
YAML
}
# a sidecar asking N GPUs
ph_sidecar() {
  printf '{name: %s, image: busybox, restartPolicy: Always, resources: {limits: {nvidia.com/gpu: %s}}, securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}}' "$1" "$2"
}
ph_k() { local t=$1; shift; kubectl --kubeconfig "$KUBICLE_HOME/tenants/$t/kubeconfig" "$@"; }
ph_h() { kubectl --kubeconfig "$PH_HOST_KCFG" "$@"; }
# the tenant's pods on the host, by tenant name
ph_host_pods() { ph_h -n "kubicle-$1" get pods -l kubicle.dev/tenant="$1" -o name 2>&1 | sort | tr '\n' ' '; }
ph_until() { # SECONDS CMD...
  local end=$((SECONDS + $1)); shift
  local t0=$SECONDS
  while [ $SECONDS -lt $end ]; do "$@" >/dev/null 2>&1 && return 0; e2e_nap $t0; done
}

policies_hostile_counting() {
  echo "== policies: a hostile tenant counts its GPUs (untrusted, 4 GPUs)"
  local s3
  s3="[$(ph_sidecar s1 4), $(ph_sidecar s2 4), $(ph_sidecar s3 4)]"
  expect_fail "hostile: three 4-GPU sidecars and a 4-GPU container ask 16, not 4" \
    'pods "side" is forbidden: policy untrusted: exceeded quota: gpu, requested: 16, used: 0, limited: 4' \
    ph_k pa apply -f <(ph_pod side '' "$s3" 'limits: {nvidia.com/gpu: 4}')
  expect_fail "hostile: a GPU request below its limit is refused as kube-apiserver refuses it" \
    'spec.containers\[0\].resources.requests: Invalid value: "2": must be equal to nvidia.com/gpu limit of 4' \
    ph_k pa apply -f <(ph_pod under '' '' 'requests: {nvidia.com/gpu: 2}, limits: {nvidia.com/gpu: 4}')
  expect_fail "hostile: a GPU request without a limit is refused" \
    'spec.containers\[0\].resources.limits: Required value: Limit must be set for non overcommitable resources' \
    ph_k pa apply -f <(ph_pod nolimit '' '' 'requests: {nvidia.com/gpu: 2}')
  expect_fail "hostile: a pod-level GPU request is refused" \
    'spec.resources.requests\[nvidia.com/gpu\]: Unsupported value: "nvidia.com/gpu"' \
    ph_k pa apply -f <(ph_pod podlevel '' '' 'limits: {cpu: 100m}' |
      sed 's/^  schedulerName:/  resources: {requests: {nvidia.com\/gpu: "8"}, limits: {nvidia.com\/gpu: "8"}}\n  schedulerName:/')
  expect_fail "hostile: another accelerator is refused, naming it and the rule" \
    "pods \"amd\" is forbidden: policy untrusted: amd.com/gpu is not allowed; an extended resource must be listed in the policy's extendedResources" \
    ph_k pa apply -f <(ph_pod amd '' '' 'limits: {amd.com/gpu: 8}')
  expect_fail "hostile: a time-sliced GPU resource is refused too" \
    'nvidia.com/gpu.shared is not allowed' \
    ph_k pa apply -f <(ph_pod shared '' '' 'limits: {nvidia.com/gpu.shared: 8}')
  expect_fail "hostile: GPUs in spec.overhead are refused" \
    'overhead\[nvidia.com/gpu\]: Invalid value: "500m": must be an integer' \
    ph_k pa apply -f <(ph_pod over '' '' 'limits: {cpu: 100m}' |
      sed 's/^  schedulerName:/  overhead: {nvidia.com\/gpu: 500m}\n  schedulerName:/')
  expect_fail "hostile: a GPU claimed through dynamic resource allocation is refused" \
    'pods "dra" is forbidden: policy untrusted: spec.resourceClaims\[0\]: dynamic resource allocation is not allowed: the shared host cluster has no copy of this cluster.s ResourceClaims and ResourceClaimTemplates, and devices claimed through them are not counted by the policy' \
    ph_k pa apply -f <(ph_pod dra '' '' 'limits: {cpu: 100m}, claims: [{name: gpu}]' |
      sed 's/^  schedulerName:/  resourceClaims: [{name: gpu, resourceClaimTemplateName: gpus}]\n  schedulerName:/')
  expect "hostile: a 1-GPU sidecar beside a 1-GPU container is admitted" 'pod/pair created' \
    ph_k pa apply -f <(ph_pod pair '' "[$(ph_sidecar s 1)]" 'limits: {nvidia.com/gpu: 1}')
  expect_until "the policy quota counts the sidecar: 2 GPUs" '2' \
    ph_k pa get resourcequota -n kube-system kubicle-policy -o jsonpath='{.status.used.requests\.nvidia\.com/gpu}'
  expect_fail "hostile: a second such pod and a 1-GPU one exceed the 4" \
    'pods "pair3" is forbidden: policy untrusted: exceeded quota: gpu, requested: 3, used: 2, limited: 4' \
    ph_k pa apply -f <(ph_pod pair3 '' "[$(ph_sidecar s 2)]" 'limits: {nvidia.com/gpu: 1}')
  ph_until 20 sh -c "kubectl --kubeconfig $PH_HOST_KCFG -n kubicle-pa get pod pair-x-default-x-pa -o jsonpath='{.metadata.annotations.kubicle\.dev/log}' | grep -q CUDA"
  expect "host: the test scheduler gives the pod its sidecar's GPU too" 'CUDA devices: 2' \
    ph_h -n kubicle-pa get pod pair-x-default-x-pa -o jsonpath='{.metadata.annotations.kubicle\.dev/log}'
  expect_eq "host: only the admitted pod exists" "pod/pair-x-default-x-pa " ph_host_pods pa
}

policies_hostile_updates() {
  echo "== policies: updates are admitted like creates"
  expect_fail "hostile: raising a running pod's GPUs by an update is refused (422)" \
    'The Pod "pair" is invalid: .*spec: Forbidden: pod updates may not change fields other than' \
    ph_k pa patch pod pair --type strategic \
    -p '{"spec":{"containers":[{"name":"c","resources":{"requests":{"nvidia.com/gpu":"4"},"limits":{"nvidia.com/gpu":"4"}}}]}}'
  expect_fail "hostile: there is no in-place resize to raise them either" \
    'NotFound|not found|the server could not find' \
    ph_k pa patch pod pair --subresource resize --type merge \
    -p '{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":"4"}}}]}}'
  expect_eq "host: the pod still asks 1 GPU" "1" \
    ph_h -n kubicle-pa get pod pair-x-default-x-pa -o jsonpath='{.spec.containers[0].resources.limits.nvidia\.com/gpu}'

  echo "== policies: usage follows the host, not a status the tenant wrote"
  ph_until 15 sh -c "kubectl --kubeconfig $KUBICLE_HOME/tenants/pa/kubeconfig get pod pair -o jsonpath='{.status.phase}' | grep -q Running"
  expect "hostile: marking a running pod Succeeded through pods/status is answered" 'pod/pair patched' \
    ph_k pa patch pod pair --subresource status --type merge \
    -p '{"status":{"phase":"Succeeded","conditions":[{"type":"example.com/gate","status":"True"}]}}'
  expect_eq "... but the phase stays the host's; other status fields are taken" "Running True" \
    ph_k pa get pod pair -o jsonpath='{.status.phase} {.status.conditions[?(@.type=="example.com/gate")].status}'
  sleep 1.5
  expect_eq "... and the pod still counts its 2 GPUs" "2" \
    ph_k pa get resourcequota -n kube-system kubicle-policy -o jsonpath='{.status.used.requests\.nvidia\.com/gpu}'
  expect_fail "hostile: so the freed quota cannot be spent" \
    'pods "more" is forbidden: policy untrusted: exceeded quota: gpu, requested: 3, used: 2, limited: 4' \
    ph_k pa apply -f <(ph_pod more '' '' 'limits: {nvidia.com/gpu: 3}')
  expect_fail "hostile: a pod created as Succeeded is counted as the new pod it is" \
    'pods "born" is forbidden: policy untrusted: exceeded quota: gpu, requested: 3, used: 2, limited: 4' \
    ph_k pa create -f <(ph_pod born '' '' 'limits: {nvidia.com/gpu: 3}'; echo 'status: {phase: Succeeded}')
  expect_eq "host: the pod runs on" "Running" \
    ph_h -n kubicle-pa get pod pair-x-default-x-pa -o jsonpath='{.status.phase}'
  expect_eq "host: nothing else of pa's is there" "pod/pair-x-default-x-pa " ph_host_pods pa

  echo "== policies: KAI annotations (fractional, quota 1 GPU)"
  expect_fail "hostile: gpu-fraction 1 is refused (KAI: strictly below 1)" \
    'pods "one" is forbidden: policy team-f: gpu-fraction must be a number strictly between 0 and 1, not "1"' \
    ph_k pb apply -f <(ph_pod one 'gpu-fraction: "1"' '' '')
  expect_fail "hostile: gpu-fraction with nvidia.com/gpu is refused" \
    'policy team-f: gpu-fraction cannot be combined with nvidia.com/gpu' \
    ph_k pb apply -f <(ph_pod both 'gpu-fraction: "0.5"' '' 'limits: {nvidia.com/gpu: 1}')
  expect_fail "hostile: gpu-memory with gpu-fraction is refused" \
    'gpu-memory cannot be combined with gpu-fraction' \
    ph_k pb apply -f <(ph_pod mem 'gpu-fraction: "0.5", gpu-memory: "1000"' '' '')
  expect_fail "hostile: gpu-fraction-num-devices 0 is refused" \
    'gpu-fraction-num-devices must be a positive integer, not "0"' \
    ph_k pb apply -f <(ph_pod nd 'gpu-fraction: "0.5", gpu-fraction-num-devices: "0"' '' '')
  expect_fail "hostile: a fraction on 4 devices counts 2 GPUs" \
    'pods "four" is forbidden: policy team-f: exceeded quota: gpu, requested: 2, used: 0, limited: 1' \
    ph_k pb apply -f <(ph_pod four 'gpu-fraction: "0.5", gpu-fraction-num-devices: "4"' '' '')
  expect "a half-GPU pod is admitted" 'pod/half created' \
    ph_k pb apply -f <(ph_pod half 'gpu-fraction: "0.5"' '' '')
  ph_until 15 ph_h -n kubicle-pb get pod half-x-default-x-pb
  expect_fail "hostile: raising gpu-fraction after creation is refused (422, immutable)" \
    'The Pod "half" is invalid: metadata.annotations.gpu-fraction: Invalid value: "0.9": field is immutable' \
    ph_k pb annotate pod half gpu-fraction=0.9 --overwrite
  expect_fail "hostile: removing gpu-fraction is refused" \
    'metadata.annotations.gpu-fraction: Invalid value: "": field is immutable' \
    ph_k pb annotate pod half gpu-fraction-
  expect_fail "hostile: adding gpu-fraction-num-devices later is refused" \
    'metadata.annotations.gpu-fraction-num-devices: Invalid value: "8": field is immutable' \
    ph_k pb annotate pod half gpu-fraction-num-devices=8
  expect "other annotations still change" 'pod/half annotated' ph_k pb annotate pod half note=x
  ph_until 10 sh -c "kubectl --kubeconfig $PH_HOST_KCFG -n kubicle-pb get pod half-x-default-x-pb -o jsonpath='{.metadata.annotations.note}' | grep -q x"
  expect_eq "host: the host pod keeps gpu-fraction 0.5 and no device count" "0.5 x" \
    ph_h -n kubicle-pb get pod half-x-default-x-pb \
    -o jsonpath='{.metadata.annotations.gpu-fraction}{.metadata.annotations.gpu-fraction-num-devices} {.metadata.annotations.note}'
  expect_eq "host: only the admitted pod exists" "pod/half-x-default-x-pb " ph_host_pods pb
}

policies_hostile() {
  export KUBICLE_HOME=$E2E_TMP/ph-home
  start_server phhost --standin-exec || { fail "policies: host stand-in did not start"; return; }
  PH_HOST_KCFG=$KCFG
  start_scheduler phhost
  cat >"$E2E_TMP/team-f.yaml" <<'YAML'
name: team-f
gpu: {mode: fractional, gpuMemoryMiB: 81920}
podSecurity: restricted
quota: {gpu: 1}
YAML
  "$KUBICLE" create pa --host-kubeconfig "$PH_HOST_KCFG" --queue qpa --gpus 4 --policy untrusted \
    --wait >/dev/null 2>&1 || { fail "policies: tenant pa"; return; }
  "$KUBICLE" create pb --host-kubeconfig "$PH_HOST_KCFG" --queue qpb --gpus 1 \
    --policy "$E2E_TMP/team-f.yaml" --wait >/dev/null 2>&1 || { fail "policies: tenant pb"; return; }
  local t
  for t in pa pb; do
    [ -f "$KUBICLE_HOME/tenants/$t/supervisor.pid" ] &&
      E2E_PIDS+=("$(cat "$KUBICLE_HOME/tenants/$t/supervisor.pid")")
  done
  policies_hostile_counting
  policies_hostile_updates
  for t in pa pb; do
    cp "$KUBICLE_HOME/tenants/$t/server.log" "$E2E_TMP/tenant-$t.log" 2>/dev/null
    "$KUBICLE" delete "$t" >/dev/null 2>&1
  done
}
