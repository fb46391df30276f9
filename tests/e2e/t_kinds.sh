# SPDX-License-Identifier: Apache-2.0
# The kinds a chart brings besides workloads, stored as objects as
# kube-apiserver stores them: HorizontalPodAutoscaler (autoscaling/v2, and
# v1 for kubectl up to 1.30), PodDisruptionBudget, Ingress, IngressClass,
# NetworkPolicy, PriorityClass, StorageClass, RuntimeClass. Their columns,
# defaults, validation and the v1 <-> v2 autoscaler conversion, with real
# kubectl. Sourced by run.sh.

kinds_manifest() {
  cat <<'YAML'
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: kinds}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec:
  controller: k8s.io/ingress-nginx
  parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external-lb}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: kinds}
spec:
  ingressClassName: nginx
  tls: [{hosts: [a.example.com], secretName: tls}]
  rules:
  - host: a.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
  - host: b.example.com
    http:
      paths:
      - {path: /api, pathType: Exact, backend: {service: {name: api, port: {name: http}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: dns-only, namespace: kinds}
spec:
  podSelector: {matchLabels: {app: web}}
  egress: [{ports: [{port: 53}]}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: multi, namespace: kinds}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 7
  metrics:
  - type: Resource
    resource: {name: memory, target: {type: AverageValue, averageValue: 500Mi}}
  - type: Pods
    pods: {metric: {name: qps}, target: {type: AverageValue, averageValue: "10"}}
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 60}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: training}
value: 1000
description: long training jobs
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: nvidia}
handler: nvidia
YAML
}

# kube's Priority admission: a pod's priority comes from its class.
kinds_priority() {
  local K=("$@")
  "${K[@]}" run pr1 --image=busybox --overrides='{"spec":{"priorityClassName":"training"}}' >/dev/null
  expect_eq "priority: a pod gets its class's value and preemption policy" "1000 PreemptLowerPriority" \
    "${K[@]}" get pod pr1 -o jsonpath='{.spec.priority} {.spec.preemptionPolicy}'
  "${K[@]}" run pr0 --image=busybox >/dev/null
  expect_eq "priority: without a class and no global default, 0" "0 PreemptLowerPriority " \
    "${K[@]}" get pod pr0 -o jsonpath='{.spec.priority} {.spec.preemptionPolicy} {.spec.priorityClassName}'
  expect_fail "priority: an unknown class is refused" \
    'pods "pr2" is forbidden: no PriorityClass with name nosuch was found' \
    "${K[@]}" run pr2 --image=busybox --overrides='{"spec":{"priorityClassName":"nosuch"}}'
  expect_fail "priority: a value of its own that differs from the class's is refused" \
    'pods "pr3" is forbidden: the integer value of priority \(5\) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name' \
    "${K[@]}" run pr3 --image=busybox --overrides='{"spec":{"priorityClassName":"training","priority":5}}'
  expect_fail "priority: a preemption policy that differs from the class's is refused" \
    'the string value of PreemptionPolicy \(Never\) must not be provided in pod spec; priority admission controller computed PreemptLowerPriority' \
    "${K[@]}" run pr4 --image=busybox --overrides='{"spec":{"priorityClassName":"training","preemptionPolicy":"Never"}}'
  "${K[@]}" create priorityclass dflt --value=7 --global-default --preemption-policy=Never >/dev/null
  "${K[@]}" run pr5 --image=busybox >/dev/null
  expect_eq "priority: a pod without a class gets the global default one" "dflt 7 Never" \
    "${K[@]}" get pod pr5 -o jsonpath='{.spec.priorityClassName} {.spec.priority} {.spec.preemptionPolicy}'
  expect_fail "priority: only one global default" \
    'priorityclasses.scheduling.k8s.io "dflt2" is forbidden: PriorityClass dflt is already marked as default. Only one default can exist' \
    "${K[@]}" create priorityclass dflt2 --value=8 --global-default
  "${K[@]}" get pod pr1 -o json | python3 -c 'import json,sys; p=json.load(sys.stdin); [p["spec"].pop(k) for k in ("priority","preemptionPolicy")]; p["metadata"]["labels"]={"x":"y"}; print(json.dumps(p))' >"$E2E_TMP/pr1.json"
  expect "priority: an update that leaves them out keeps them" 'pod/pr1 replaced' \
    "${K[@]}" replace -f "$E2E_TMP/pr1.json"
  expect_eq "priority: ... and the pod still has them" "1000 PreemptLowerPriority y" \
    "${K[@]}" get pod pr1 -o jsonpath='{.spec.priority} {.spec.preemptionPolicy} {.metadata.labels.x}'
  "${K[@]}" delete pc dflt >/dev/null
  "${K[@]}" delete pod pr0 pr1 pr5 --wait=false >/dev/null
}

# API Priority and Fairness objects: the mandatory pairs, kube's columns,
# defaults, validation and the Dangling condition.
kinds_flowcontrol() {
  local K=("$@") d=$E2E_TMP/apf
  mkdir -p "$d"
  expect "apf: the mandatory FlowSchemas exist, with kube's columns" \
    '^catch-all +catch-all +10000 +ByUser +[0-9a-z]+ +False$' "${K[@]}" get flowschemas --no-headers
  expect "apf: ... exempt has no distinguisher" '^exempt +exempt +1 +<none> +[0-9a-z]+ +False$' \
    "${K[@]}" get flowschemas --no-headers
  expect "apf: the mandatory priority levels" '^catch-all +Limited +5 +<none> +<none> +<none> ' \
    "${K[@]}" get prioritylevelconfigurations --no-headers
  expect "apf: the group is a Local APIService" '^v1.flowcontrol.apiserver.k8s.io +Local +True' \
    "${K[@]}" get apiservices --no-headers
  cat >"$d/apf.yaml" <<'YAML'
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: kueue-visibility}
spec:
  type: Limited
  limited:
    limitResponse:
      type: Queue
      queuing: {}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: visibility}
spec:
  priorityLevelConfiguration: {name: kueue-visibility}
  matchingPrecedence: 9000
  rules:
  - resourceRules:
    - {apiGroups: ["visibility.kueue.x-k8s.io"], clusterScope: true, namespaces: ["*"], resources: ["*"], verbs: ["list", "get", "watch"]}
    subjects:
    - {kind: Group, group: {name: "system:authenticated"}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: dangling}
spec:
  priorityLevelConfiguration: {name: later}
  distinguisherMethod: {type: ByNamespace}
  rules:
  - nonResourceRules: [{verbs: ["get"], nonResourceURLs: ["/healthz", "/metrics/*"]}]
    subjects: [{kind: ServiceAccount, serviceAccount: {name: "*", namespace: kinds}}]
YAML
  expect "apf: a manifest with a priority level and flow schemas applies (default validation)" \
    'flowschema.flowcontrol.apiserver.k8s.io/dangling created' "${K[@]}" apply -f "$d/apf.yaml"
  expect "apf: kube's queuing defaults" '^kueue-visibility +Limited +30 +64 +8 +50 ' \
    "${K[@]}" get prioritylevelconfigurations --no-headers
  expect_eq "apf: ... and lendablePercent" "0" \
    "${K[@]}" get prioritylevelconfiguration kueue-visibility -o 'jsonpath={.spec.limited.lendablePercent}'
  expect_until "apf: a FlowSchema naming a missing level is Dangling, in kube's words" \
    'True NotFound This FlowSchema references the PriorityLevelConfiguration object named "later" but there is no such object' \
    "${K[@]}" get flowschema dangling -o 'jsonpath={.status.conditions[0].status} {.status.conditions[0].reason} {.status.conditions[0].message}'
  expect "apf: ... MISSINGPL says so, and matchingPrecedence defaults to 1000" '^dangling +later +1000 +ByNamespace +[0-9a-z]+ +True$' \
    "${K[@]}" get flowschemas --no-headers
  "${K[@]}" create -f - >/dev/null <<'YAML'
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: later}
spec: {type: Limited, limited: {limitResponse: {type: Reject}}}
YAML
  expect_until "apf: ... and no longer once the level exists" "False Found" \
    "${K[@]}" get flowschema dangling -o 'jsonpath={.status.conditions[0].status} {.status.conditions[0].reason}'
  expect_fail "apf: a FlowSchema's rules, in kube's words" \
    'spec.matchingPrecedence: Invalid value: 1: only the schema named .exempt. may have matchingPrecedence 1' \
    "${K[@]}" patch flowschema visibility --type=merge -p '{"spec":{"matchingPrecedence":1}}'
  expect_fail "apf: ... subjects" \
    '^\* spec.rules\[0\].subjects: Required value: subjects must contain at least one value$' \
    "${K[@]}" patch flowschema visibility --type=merge -p '{"spec":{"rules":[{"subjects":[]}]}}'
  expect_fail "apf: ... rules" \
    '^\* spec.rules\[0\]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty$' \
    "${K[@]}" patch flowschema visibility --type=merge -p '{"spec":{"rules":[{"subjects":[]}]}}'
  local bad='{"spec":{"rules":[{"subjects":[{"kind":"User","user":{"name":"u"}}],"resourceRules":[{"verbs":["fly"],"apiGroups":["*"],"resources":["*"]}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/a*"]}]}]}}'
  expect_fail "apf: ... verbs" \
    '^\* spec.rules\[0\].resourceRules\[0\].verbs: Unsupported value: \["fly"\]: supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"$' \
    "${K[@]}" patch flowschema visibility --type=merge -p "$bad"
  expect_fail "apf: ... namespaces" \
    '^\* spec.rules\[0\].resourceRules\[0\].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace$' \
    "${K[@]}" patch flowschema visibility --type=merge -p "$bad"
  expect_fail "apf: ... non-resource URLs" \
    '^\* spec.rules\[0\].nonResourceRules\[0\].nonResourceURLs\[0\]: Invalid value: "/a\*": wildcard can only do suffix matching$' \
    "${K[@]}" patch flowschema visibility --type=merge -p "$bad"
  expect_fail "apf: the mandatory FlowSchemas' specs are fixed" \
    "spec: Invalid value: flowcontrol.FlowSchemaSpec\\{...\\}: spec of 'catch-all' must equal the fixed value" \
    "${K[@]}" patch flowschema catch-all --type=merge -p '{"spec":{"matchingPrecedence":9999}}'
  expect_fail "apf: a priority level's type and queuing" \
    "spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'" \
    "${K[@]}" patch prioritylevelconfiguration later --type=merge -p '{"spec":{"type":"Exempt","limited":null}}'
  expect_fail "apf: ... handSize within queues" \
    'spec.limited.limitResponse.queuing.handSize: Invalid value: 9: should not be greater than queues \(4\)' \
    "${K[@]}" patch prioritylevelconfiguration kueue-visibility --type=merge -p '{"spec":{"limited":{"limitResponse":{"queuing":{"queues":4,"handSize":9}}}}}'
  expect "apf: the exempt level's shares may be tuned" 'patched' \
    "${K[@]}" patch prioritylevelconfiguration exempt --type=merge -p '{"spec":{"exempt":{"nominalConcurrencyShares":3}}}'
  "${K[@]}" delete -f "$d/apf.yaml" >/dev/null
  "${K[@]}" delete prioritylevelconfiguration later >/dev/null
}

kinds_suite() {
  echo "== kinds: autoscalers, disruption budgets, ingresses, network policies, classes"
  start_server kinds || { fail "kinds: server did not start"; return; }
  local K=(kubectl --kubeconfig "$KCFG") old=$GSDK/kubectl.1.27
  expect "api-resources: the new kinds with their short names and versions" \
    'horizontalpodautoscalers +hpa +autoscaling/v2 +true +HorizontalPodAutoscaler' \
    "${K[@]}" api-resources
  expect_eq "api-resources: pdb, ing, netpol, pc, sc, runtimeclasses, ingressclasses" \
    "ingressclasses ingresses networkpolicies poddisruptionbudgets priorityclasses runtimeclasses storageclasses" \
    bash -c "kubectl --kubeconfig $KCFG api-resources -o name | grep -E '^(poddisruptionbudgets|ingress|networkpolicies|priorityclasses|storageclasses|runtimeclasses)' | sed 's/\\..*//' | sort | tr '\n' ' ' | sed 's/ \$//'"
  "${K[@]}" get --raw /apis/autoscaling >"$E2E_TMP/autoscaling.json"
  expect_eq "discovery: autoscaling serves v2 (preferred) and v1" "v2: v2 v1" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["preferredVersion"]["version"] + ":", *[v["version"] for v in d["versions"]])' \
    "$E2E_TMP/autoscaling.json"
  expect "the system PriorityClasses exist from the start" \
    'system-node-critical +2000001000 +false' "${K[@]}" get priorityclasses
  "${K[@]}" create namespace kinds >/dev/null
  expect "apply of a manifest with all of them (default validation)" \
    'horizontalpodautoscaler.autoscaling/multi created' "${K[@]}" apply -f <(kinds_manifest)

  echo "-- columns"
  expect "get pdb: MIN AVAILABLE, MAX UNAVAILABLE, ALLOWED DISRUPTIONS" \
    'web +1 +N/A +0 ' "${K[@]}" -n kinds get pdb
  expect "get ingress: CLASS, HOSTS, PORTS with TLS" \
    'web +nginx +a\.example\.com,b\.example\.com +80, 443 ' "${K[@]}" -n kinds get ingress
  expect "get ingressclass: CONTROLLER, PARAMETERS as Kind.group/name" \
    'nginx +k8s\.io/ingress-nginx +IngressParameters\.k8s\.example\.com/external-lb ' \
    "${K[@]}" get ingressclass
  expect "get netpol: POD-SELECTOR" 'dns-only +app=web ' "${K[@]}" -n kinds get netpol
  expect "get hpa: REFERENCE, TARGETS (two shown, + 1 more), MINPODS defaulted" \
    'multi +Deployment/web +memory: <unknown>/500Mi, <unknown>/10 \+ 1 more\.\.\. +1 +7 +0 ' \
    "${K[@]}" -n kinds get hpa
  expect "get sc: (default), reclaim policy defaulted to Delete" \
    'fast \(default\) +ebs\.csi\.aws\.com +Delete +WaitForFirstConsumer +true ' "${K[@]}" get sc
  expect "get pc: VALUE, GLOBAL-DEFAULT, PREEMPTIONPOLICY defaulted" \
    'training +1000 +false .* PreemptLowerPriority' "${K[@]}" get pc training
  expect "get runtimeclass: HANDLER" 'nvidia +nvidia ' "${K[@]}" get runtimeclass

  echo "-- defaults"
  expect_eq "netpol: policyTypes from the rules, ports' protocol TCP" \
    '["Ingress","Egress"] TCP' "${K[@]}" -n kinds get netpol dns-only \
    -o jsonpath='{.spec.policyTypes} {.spec.egress[0].ports[0].protocol}'
  expect_eq "hpa: behavior's unset rules filled in as kube does" \
    '60 Max 4 0' "${K[@]}" -n kinds get hpa multi \
    -o jsonpath='{.spec.behavior.scaleDown.stabilizationWindowSeconds} {.spec.behavior.scaleDown.selectPolicy} {.spec.behavior.scaleUp.policies[0].value} {.spec.behavior.scaleUp.stabilizationWindowSeconds}'
  expect_eq "sc: volumeBindingMode defaults to Immediate" "Immediate Delete" \
    bash -c "kubectl --kubeconfig $KCFG create -o jsonpath='{.volumeBindingMode} {.reclaimPolicy}' -f - <<'EOF'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: plain}
provisioner: example.com/nfs
EOF"

  echo "-- kubectl's generators"
  expect "kubectl create pdb" 'poddisruptionbudget.policy/p2 created' \
    "${K[@]}" -n kinds create pdb p2 --selector=app=x --max-unavailable=30%
  expect "kubectl create priorityclass" 'priorityclass.scheduling.k8s.io/batch created' \
    "${K[@]}" create priorityclass batch --value=10 --preemption-policy=Never
  expect "kubectl create ingress" 'ingress.networking.k8s.io/i2 created' \
    "${K[@]}" -n kinds create ingress i2 --class=nginx --rule="c.example.com/*=svc:8080"
  "${K[@]}" -n kinds create deployment web --image=nginx >/dev/null
  expect "kubectl autoscale (autoscaling/v2)" 'horizontalpodautoscaler.autoscaling/web autoscaled' \
    "${K[@]}" -n kinds autoscale deployment web --min=2 --max=5 --cpu-percent=60
  expect "get hpa: the CPU target" 'web +Deployment/web +cpu: <unknown>/60% +2 +5 ' \
    "${K[@]}" -n kinds get hpa web
  if [ -x "$old" ]; then
    expect "kubectl 1.27 autoscale goes through autoscaling/v1" \
      'horizontalpodautoscaler.autoscaling/old autoscaled' \
      "$old" --kubeconfig "$KCFG" -n kinds autoscale deployment web --max=3 --cpu-percent=45 --name=old
    expect_eq "... stored as v2: the CPU metric from targetCPUUtilizationPercentage" \
      'autoscaling/v2 cpu Utilization 45 1' "${K[@]}" -n kinds get hpa old \
      -o jsonpath='{.apiVersion} {.spec.metrics[0].resource.name} {.spec.metrics[0].resource.target.type} {.spec.metrics[0].resource.target.averageUtilization} {.spec.minReplicas}'
  else fail "kubectl.1.27 is not installed in $GSDK"; fi

  echo "-- autoscaling/v1 <-> v2"
  local v1=/apis/autoscaling/v1/namespaces/kinds/horizontalpodautoscalers/multi
  "${K[@]}" get --raw "$v1" >"$E2E_TMP/hpa-v1.json"
  expect_eq "v1 read: the CPU target in its own field, the rest in kube's annotations" \
    'autoscaling/v1 70 [{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}},{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}] 60' \
    python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); a=o["metadata"]["annotations"]; print(o["apiVersion"], o["spec"]["targetCPUUtilizationPercentage"], a["autoscaling.alpha.kubernetes.io/metrics"], json.loads(a["autoscaling.alpha.kubernetes.io/behavior"])["ScaleDown"]["StabilizationWindowSeconds"])' "$E2E_TMP/hpa-v1.json"
  python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); o["spec"]["maxReplicas"]=11; o["spec"]["targetCPUUtilizationPercentage"]=55; json.dump(o,open(sys.argv[1],"w"))' "$E2E_TMP/hpa-v1.json"
  expect "v1 update (PUT)" '"maxReplicas":11' \
    curl -sS --cacert "$DATA_DIR/ca.crt" --cert "$DATA_DIR/admin.crt" --key "$DATA_DIR/admin.key" \
    -X PUT -H 'Content-Type: application/json' --data-binary @"$E2E_TMP/hpa-v1.json" "$SERVER_URL$v1"
  expect_eq "... v2 keeps the other metrics and the behavior, with the new CPU target last" \
    '11 memory qps 55 60 none' python3 -c 'import json,sys; o=json.loads(sys.stdin.read()); m=o["spec"]["metrics"]; a=[k for k in o["metadata"].get("annotations",{}) if k.startswith("autoscaling.alpha")]; print(o["spec"]["maxReplicas"], m[0]["resource"]["name"], m[1]["pods"]["metric"]["name"], m[2]["resource"]["target"]["averageUtilization"], o["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"], a and a or "none")' \
    < <("${K[@]}" -n kinds get hpa multi -o json)

  echo "-- validation"
  expect_fail "pdb: minAvailable and maxUnavailable both set" \
    'spec: Invalid value: .*minAvailable and maxUnavailable cannot be both set' \
    "${K[@]}" -n kinds patch pdb web --type merge -p '{"spec":{"maxUnavailable":1}}'
  expect_fail "pdb: more than 100%" 'spec.minAvailable: Invalid value: "150%": must not be greater than 100%' \
    "${K[@]}" -n kinds create pdb p3 --selector=app=x --min-available=150%
  expect_fail "pc: the system- prefix is reserved" \
    "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only" \
    "${K[@]}" create priorityclass system-mine --value=5
  expect_fail "pc: a user value above one billion" \
    'value: Forbidden: maximum allowed value of a user defined priority is 1000000000' \
    "${K[@]}" create priorityclass huge --value=2000000000
  expect_fail "pc: value cannot change" 'value: Forbidden: may not be changed in an update' \
    "${K[@]}" patch pc training --type merge -p '{"value":5}'
  "${K[@]}" create --validate=false -f - >/dev/null <<'YAML'
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: zero}
YAML
  expect "pc: a class without a value (0) can still be updated (its value did not change)" \
    'priorityclass.scheduling.k8s.io/zero labeled' "${K[@]}" label pc zero team=a
  kinds_priority "${K[@]}"
  kinds_flowcontrol "${K[@]}"
  expect_fail "pdb: a percent is digits and %, no sign" \
    'spec.maxUnavailable: Invalid value: "\+5%": a valid percent string must be' \
    "${K[@]}" -n kinds patch pdb p2 --type merge -p '{"spec":{"maxUnavailable":"+5%"}}'
  expect_fail "ingress: pathType is required" \
    'spec.rules\[0\].http.paths\[0\].pathType: Required value: pathType must be specified' \
    "${K[@]}" -n kinds patch ingress web --type json \
    -p '[{"op":"remove","path":"/spec/rules/0/http/paths/0/pathType"}]'
  expect_fail "ingress: a backend port by name or number, not both" \
    'spec.rules\[1\].http.paths\[0\].backend.service.port: Invalid value: .*cannot set both port name & port number' \
    "${K[@]}" -n kinds patch ingress web --type json \
    -p '[{"op":"add","path":"/spec/rules/1/http/paths/0/backend/service/port/number","value":80}]'
  expect_fail "sc: the provisioner cannot change" 'provisioner: Forbidden: updates to provisioner are forbidden' \
    "${K[@]}" patch sc fast --type merge -p '{"provisioner":"other.io/x"}'
  expect_fail "runtimeclass: handler must be a DNS label" 'handler: Invalid value: "Bad_Handler"' \
    "${K[@]}" patch runtimeclass nvidia --type merge -p '{"handler":"Bad_Handler"}'
  expect_fail "hpa: maxReplicas below minReplicas" \
    'spec.maxReplicas: Invalid value: 1: must be greater than or equal to `minReplicas`' \
    "${K[@]}" -n kinds patch hpa web --type merge -p '{"spec":{"maxReplicas":1}}'
  expect_fail "netpol: an unknown policy type" 'spec.policyTypes\[0\]: Unsupported value: "Sideways"' \
    "${K[@]}" -n kinds patch netpol dns-only --type merge -p '{"spec":{"policyTypes":["Sideways"]}}'

  echo "-- kubectl debug: ephemeral containers"
  "${K[@]}" -n kinds run dbg --image=busybox >/dev/null
  expect "kubectl debug adds an ephemeral container (pods/ephemeralcontainers)" \
    'Defaulting debug container name to debugger-' \
    "${K[@]}" -n kinds debug dbg --image=busybox --target=dbg
  expect_eq "... kept with kube's defaults, its target named" "busybox dbg File" \
    "${K[@]}" -n kinds get pod dbg -o jsonpath='{.spec.ephemeralContainers[0].image} {.spec.ephemeralContainers[0].targetContainerName} {.spec.ephemeralContainers[0].terminationMessagePolicy}'
  for k in "$GSDK/kubectl.1.27" "$GSDK/kubectl.1.30"; do
    [ -x "$k" ] || continue
    expect "kubectl debug ($(basename "$k"))" 'Defaulting debug container name' \
      "$k" --kubeconfig "$KCFG" -n kinds debug dbg --image=busybox
  done
  expect_eq "... each debug adds one" "3" \
    sh -c "kubectl --kubeconfig $KCFG -n kinds get pod dbg -o jsonpath='{range .spec.ephemeralContainers[*]}{.name}{\"\\n\"}{end}' | sort -u | wc -l"
  expect_fail "ephemeral containers cannot be removed" \
    'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger-[a-z0-9]+" may not be removed' \
    "${K[@]}" -n kinds patch pod dbg --subresource=ephemeralcontainers --type=json -p '[{"op":"remove","path":"/spec/ephemeralContainers/0"}]'
  # (a strategic merge puts a new item ahead of the live ones, as kube's does)
  "${K[@]}" -n kinds patch pod dbg --subresource=ephemeralcontainers --type=strategic -p '{"spec":{"ephemeralContainers":[{"name":"bad","image":"busybox","targetContainerName":"nosuch","ports":[{"containerPort":80}]}]}}' >"$E2E_TMP/ec.out" 2>&1
  expect_eq "an ephemeral container may not have ports, and its target must exist" \
    '* spec.ephemeralContainers[0].targetContainerName: Not found: "nosuch"|* spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container' \
    sh -c "grep '^\* ' $E2E_TMP/ec.out | paste -sd'|'"
  expect_fail "a pod may not be created with ephemeral containers" \
    'spec.ephemeralContainers: Forbidden: cannot be set on create' \
    "${K[@]}" -n kinds run dbg2 --image=busybox --overrides='{"spec":{"ephemeralContainers":[{"name":"e","image":"busybox"}]}}'
  "${K[@]}" -n kinds get pod dbg -o json | python3 -c 'import json,sys; p=json.load(sys.stdin); p["spec"].pop("ephemeralContainers"); p["metadata"]["labels"]["edited"]="yes"; print(json.dumps(p))' >"$E2E_TMP/dbg.json"
  "${K[@]}" replace -f "$E2E_TMP/dbg.json" >/dev/null
  expect_eq "an update of the pod itself keeps its ephemeral containers" "3 yes" \
    sh -c "kubectl --kubeconfig $KCFG -n kinds get pod dbg -o jsonpath='{.spec.ephemeralContainers[*].name} {.metadata.labels.edited}' | awk '{print NF-1, \$NF}'"

  echo "-- explain, namespaces"
  expect "explain ingress.spec.rules.http.paths shows pathType" 'pathType' \
    "${K[@]}" explain ingress.spec.rules.http.paths
  expect "delete ns takes its budgets, ingresses and autoscalers" 'namespace "kinds" deleted' \
    "${K[@]}" delete ns kinds --timeout=30s
  expect_eq "... none left" "" "${K[@]}" get pdb,ing,hpa,netpol -n kinds -o name
  stop_server
}
