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
}
