# SPDX-License-Identifier: Apache-2.0
# HorizontalPodAutoscalers in a tenant: the controller reads the targets'
# scale, their pods' PodMetrics from the tenant's metrics API (the host's,
# through the syncer), and scales them as kube-controller-manager does. The
# host stand-in's test scheduler stands in for metrics-server (--metrics),
# with usage figures the test drives through its --usage file. The tenant
# reconciles every 1 s (--horizontal-pod-autoscaler-sync-period) to keep the
# test short; the rules are kube's. Driven with real kubectl. Sourced by
# run.sh.

# hpa_setup: the host (hpahost) with metrics, tenant h1 on it.
hpa_setup() {
  E2E_PORT=0 start_server hpahost --standin-exec || return 1
  HPA_HOST=$KCFG
  local H=(kubectl --kubeconfig "$HPA_HOST")
  "${H[@]}" create ns tenants >/dev/null
  "${H[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: hq}
spec: {resources: {gpu: {quota: -1, limit: -1}}}
EOF
  HPA_USAGE=$E2E_TMP/hpa-usage.json
  echo '{}' >"$HPA_USAGE"
  start_scheduler hpahost --metrics --usage "$HPA_USAGE"
  sy_until 10 "${H[@]}" get --raw /apis/metrics.k8s.io/v1beta1/nodes/gpu-node-1
  start_server h1 --host-kubeconfig "$HPA_HOST" --host-namespace tenants --tenant h1 \
    --queue hq --horizontal-pod-autoscaler-sync-period 1s || return 1
  HPA_T=$KCFG HPA_T_PID=$SERVER_PID
}

# hpa_usage CPU [MEMORY]: what each container of an app=web pod uses (a
# quantity or a percentage of its request), written atomically.
hpa_usage() {
  printf '{"app=web": {"cpu": "%s"%s}}\n' "$1" "${2:+, \"memory\": \"$2\"}" >"$HPA_USAGE.tmp"
  mv "$HPA_USAGE.tmp" "$HPA_USAGE"
}

# hpa_until SECONDS DESC WANT CMD...: passes once CMD prints WANT (a
# generous wait: the controller, the host scheduler and the metrics refresh
# each take their turn).
hpa_until() {
  local t=$1 desc=$2 want=$3 out; shift 3
  local end=$((SECONDS + t))
  while :; do
    out=$("$@" 2>&1)
    [ "$out" = "$want" ] && { pass "$desc"; return 0; }
    [ $SECONDS -ge $end ] && break
    sleep 0.5
  done
  fail "$desc: wanted '$want', got '$(head -c 400 <<<"$out")'"
  return 1
}

hpa_k() { kubectl --kubeconfig "$HPA_T" "$@"; }

# hpa_cond NAME TYPE: "status reason" of the autoscaler's condition
hpa_cond() {
  hpa_k get hpa "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status} {.status.conditions[?(@.type==\"$2\")].reason}"
}

hpa_cond_msg() { # NAME TYPE: "status reason: message", read at once
  hpa_k get hpa "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status} {.status.conditions[?(@.type==\"$2\")].reason}: {.status.conditions[?(@.type==\"$2\")].message}"
}

hpa_msg() {
  hpa_k get hpa "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].message}"
}

# hpa_events NAME REASON: the messages of the autoscaler's events of reason
hpa_events() {
  hpa_k get events --field-selector "involvedObject.name=$1,reason=$2" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}'
}

hpa_has_event() { # NAME REASON MESSAGE
  hpa_events "$1" "$2" | grep -qxF "$3" && echo yes || echo no
}

hpa_replicas() { hpa_k get "$1" -o jsonpath='{.spec.replicas}'; }

hpa_suite() {
  echo "== horizontal pod autoscaler"
  local saved=("$KCFG" "$SERVER_PID" "$SERVER_URL" "$DATA_DIR")
  hpa_checks
  KCFG=${saved[0]} SERVER_PID=${saved[1]} SERVER_URL=${saved[2]} DATA_DIR=${saved[3]}
  hpa_no_metrics
  hpa_scale_webhooks
}

# A tenant without a host serves no metrics API: kube's words for a cluster
# without metrics-server (its default 15 s sync; a new autoscaler syncs at once).
hpa_no_metrics() {
  local K=(kubectl --kubeconfig "$KCFG" -n hpanm)
  kubectl --kubeconfig "$KCFG" create ns hpanm >/dev/null
  "${K[@]}" create deployment web --image=nginx >/dev/null
  "${K[@]}" set resources deployment web --requests=cpu=100m >/dev/null
  "${K[@]}" autoscale deployment web --max=3 --cpu-percent=50 >/dev/null
  hpa_until 30 "no metrics API: ScalingActive False FailedGetResourceMetric, kube's message" \
    "False FailedGetResourceMetric: the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)" \
    "${K[@]}" get hpa web -o jsonpath='{.status.conditions[?(@.type=="ScalingActive")].status} {.status.conditions[?(@.type=="ScalingActive")].reason}: {.status.conditions[?(@.type=="ScalingActive")].message}'
  expect_until_match "kubectl describe hpa: <unknown> current, the warning events" 30 \
    'Warning +FailedComputeMetricsReplicas .*invalid metrics \(1 invalid out of 1\), first error is: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource \(get pods.metrics.k8s.io\)' \
    "${K[@]}" describe hpa web
  expect "kubectl describe hpa: the metric line" \
    'resource cpu on pods +\(as a percentage of request\): +<unknown> / 50%' "${K[@]}" describe hpa web
  # Object and External metrics: no custom or external metrics API either
  "${K[@]}" create deployment queue --image=busybox >/dev/null
  "${K[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: ext}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: queue}
  maxReplicas: 3
  metrics:
  - type: External
    external:
      metric:
        name: queue_messages_ready
        selector: {matchLabels: {queue: worker_tasks}}
      target: {type: AverageValue, averageValue: "30"}
  - type: Object
    object:
      metric: {name: requests-per-second}
      describedObject: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: main-route}
      target: {type: Value, value: 2k}
EOF
  hpa_until 30 "External metric: ScalingActive False FailedGetExternalMetric (the first failure)" \
    "False FailedGetExternalMetric: the HPA was unable to compute the replica count: unable to get external metric hpanm/queue_messages_ready/&LabelSelector{MatchLabels:map[string]string{queue: worker_tasks,},MatchExpressions:[]LabelSelectorRequirement{},}: unable to fetch metrics from external metrics API: the server could not find the requested resource (get queue_messages_ready.external.metrics.k8s.io)" \
    "${K[@]}" get hpa ext -o jsonpath='{.status.conditions[?(@.type=="ScalingActive")].status} {.status.conditions[?(@.type=="ScalingActive")].reason}: {.status.conditions[?(@.type=="ScalingActive")].message}'
  hpa_until 10 "FailedGetObjectMetric event" \
    "unable to get metric requests-per-second: Ingress on hpanm main-route/unable to fetch metrics from custom metrics API: no known available metric versions found" \
    "${K[@]}" get events --field-selector involvedObject.name=ext,reason=FailedGetObjectMetric -o jsonpath='{.items[0].message}'
  hpa_until 10 "FailedComputeMetricsReplicas: 2 invalid out of 2, the first one's error" \
    "invalid metrics (2 invalid out of 2), first error is: failed to get queue_messages_ready external metric value: failed to get queue_messages_ready external metric: unable to get external metric hpanm/queue_messages_ready/&LabelSelector{MatchLabels:map[string]string{queue: worker_tasks,},MatchExpressions:[]LabelSelectorRequirement{},}: unable to fetch metrics from external metrics API: the server could not find the requested resource (get queue_messages_ready.external.metrics.k8s.io)" \
    "${K[@]}" get events --field-selector involvedObject.name=ext,reason=FailedComputeMetricsReplicas -o jsonpath='{.items[0].message}'
  expect_until_match "kubectl get hpa: both <unknown>" 30 '^ext +Deployment/queue +<unknown>/30 \(avg\), <unknown>/2k +1 +3 ' \
    "${K[@]}" get hpa ext --no-headers
}

hpa_checks() {
  hpa_setup || { fail "hpa: setup"; return; }
  hpa_k create deployment web --image=nginx >/dev/null
  hpa_k set resources deployment web --requests=cpu=100m,memory=32Mi >/dev/null
  hpa_usage 100%

  # kubectl autoscale: below minReplicas, scaled at once
  # every version of the autoscaler's AbleToScale condition, as a watch sees
  # them (the next sync, 1 s later, moves it on)
  hpa_k get hpa -w --field-selector metadata.name=web \
    -o jsonpath='{.status.conditions[?(@.type=="AbleToScale")].reason}: {.status.conditions[?(@.type=="AbleToScale")].message}{"\n"}' \
    >"$E2E_TMP/hpa-watch.txt" 2>&1 &
  local watch=$!
  sleep 1
  hpa_k autoscale deployment web --min=2 --max=4 --cpu-percent=50 >/dev/null
  hpa_until 20 "autoscale --min=2: the deployment is scaled to 2" 2 hpa_replicas deploy/web
  hpa_until 10 "SuccessfulRescale event: below Spec.MinReplicas" yes \
    hpa_has_event web SuccessfulRescale "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
  hpa_until 10 "AbleToScale SucceededRescale, the message names the new size" yes \
    bash -c "grep -qxF 'SucceededRescale: the HPA controller was able to update the target scale to 2' '$E2E_TMP/hpa-watch.txt' && echo yes"
  kill "$watch" 2>/dev/null
  wait "$watch" 2>/dev/null

  # 100% of the request against a 50% target: twice the pods, up to max
  hpa_until 90 "cpu at 100% of 50%: scaled up to maxReplicas 4" 4 hpa_replicas deploy/web
  hpa_until 10 "SuccessfulRescale event: cpu above target" yes \
    hpa_has_event web SuccessfulRescale "New size: 4; reason: cpu resource utilization (percentage of request) above target"
  hpa_until 90 "ScalingActive True ValidMetricFound" "True ValidMetricFound" \
    hpa_cond web ScalingActive
  hpa_until 30 "ScalingActive's message" \
    "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)" \
    hpa_msg web ScalingActive
  hpa_until 90 "every pod measured: ScalingLimited True TooManyReplicas" "True TooManyReplicas" \
    hpa_cond web ScalingLimited
  hpa_until 30 "TooManyReplicas' message" \
    "the desired replica count is more than the maximum replica count" hpa_msg web ScalingLimited
  hpa_until 30 "status: current and desired replicas, the metric's utilization and average" \
    "4 4 Resource cpu 100 100m" \
    hpa_k get hpa web -o jsonpath='{.status.currentReplicas} {.status.desiredReplicas} {.status.currentMetrics[0].type} {.status.currentMetrics[0].resource.name} {.status.currentMetrics[0].resource.current.averageUtilization} {.status.currentMetrics[0].resource.current.averageValue}'
  expect "status.lastScaleTime is set" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' \
    hpa_k get hpa web -o jsonpath='{.status.lastScaleTime}'
  expect_eq "status.observedGeneration is not set, as kube's controller never sets it" "" \
    hpa_k get hpa web -o jsonpath='{.status.observedGeneration}'
  expect_until_match "kubectl get hpa: TARGETS, MINPODS, MAXPODS, REPLICAS" 30 \
    '^web +Deployment/web +cpu: 100%/50% +2 +4 +4 ' hpa_k get hpa web --no-headers
  hpa_until 30 "autoscaling/v1: currentCPUUtilizationPercentage and replicas" "100 4 4" \
    bash -c "kubectl --kubeconfig '$HPA_T' get --raw /apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web |
      jq -r '\"\\(.status.currentCPUUtilizationPercentage) \\(.status.currentReplicas) \\(.status.desiredReplicas)\"'"
  expect_until_match "describe: the metric, current and target" 30 \
    'resource cpu on pods +\(as a percentage of request\): +100% \(100m\) / 50%' hpa_k describe hpa web
  expect_until_match "describe: pods current and desired" 30 'Deployment pods: +4 current / 4 desired' hpa_k describe hpa web
  expect_until_match "describe: the conditions" 30 \
    'ScalingLimited +True +TooManyReplicas +the desired replica count is more than the maximum replica count' \
    hpa_k describe hpa web
  expect_until_match "describe: the events from horizontal-pod-autoscaler" 30 \
    'Normal +SuccessfulRescale .* horizontal-pod-autoscaler +New size: 4; reason: cpu resource utilization \(percentage of request\) above target' \
    hpa_k describe hpa web

  # scale down: held by a long stabilization window, then allowed
  hpa_k patch hpa web --type=merge \
    -p '{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":600}}}}' >/dev/null
  hpa_usage 10%
  hpa_until 60 "usage down, window 600 s: AbleToScale ScaleDownStabilized" \
    "True ScaleDownStabilized" hpa_cond web AbleToScale
  hpa_until 30 "ScaleDownStabilized's message" \
    "recent recommendations were higher than current one, applying the highest recent recommendation" \
    hpa_msg web AbleToScale
  expect_eq "still 4 replicas while stabilized" 4 hpa_replicas deploy/web
  expect_eq "the defaulted behavior: scaleUp policies, scaleDown's own window" \
    "Max 0 Pods 4 15 Percent 100 15 600 Percent 100" \
    hpa_k get hpa web -o jsonpath='{.spec.behavior.scaleUp.selectPolicy} {.spec.behavior.scaleUp.stabilizationWindowSeconds} {.spec.behavior.scaleUp.policies[0].type} {.spec.behavior.scaleUp.policies[0].value} {.spec.behavior.scaleUp.policies[0].periodSeconds} {.spec.behavior.scaleUp.policies[1].type} {.spec.behavior.scaleUp.policies[1].value} {.spec.behavior.scaleUp.policies[1].periodSeconds} {.spec.behavior.scaleDown.stabilizationWindowSeconds} {.spec.behavior.scaleDown.policies[0].type} {.spec.behavior.scaleDown.policies[0].value}'
  hpa_k patch hpa web --type=merge \
    -p '{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":3}}}}' >/dev/null
  hpa_until 60 "window 3 s: scaled down to minReplicas 2" 2 hpa_replicas deploy/web
  hpa_until 10 "SuccessfulRescale event: all metrics below target" yes \
    hpa_has_event web SuccessfulRescale "New size: 2; reason: All metrics below target"
  hpa_until 30 "10% wants 1 pod: ScalingLimited True TooFewReplicas" "True TooFewReplicas" \
    hpa_cond web ScalingLimited
  # REPLICAS is status.currentReplicas: the scale's count at the last sync,
  # so the 2 shows from the sync after the one that scaled down
  hpa_until 15 "kubectl get hpa: cpu 10%" "web Deployment/web cpu: 10%/50% 2 4 2" \
    sh -c "kubectl --kubeconfig '$HPA_T' get hpa web --no-headers | awk '{print \$1, \$2, \$3, \$4, \$5, \$6, \$7}'"

  # at the target: within tolerance, nothing moves
  hpa_usage 52%
  hpa_until 60 "usage at target: ScalingLimited False DesiredWithinRange" \
    "False DesiredWithinRange" hpa_cond web ScalingLimited
  hpa_until 30 "AbleToScale True ReadyForNewScale" "True ReadyForNewScale" \
    hpa_cond web AbleToScale
  expect_eq "still 2 replicas" 2 hpa_replicas deploy/web

  # a target scaled to 0 disables autoscaling
  hpa_k scale deployment web --replicas=0 >/dev/null
  hpa_until 30 "target at 0: ScalingActive False ScalingDisabled" "False ScalingDisabled" \
    hpa_cond web ScalingActive
  hpa_until 30 "ScalingDisabled's message" \
    "scaling is disabled since the replica count of the target is zero" hpa_msg web ScalingActive
  expect_eq "the target stays at 0" 0 hpa_replicas deploy/web

  hpa_failures
  hpa_statefulset
  hpa_custom_resource

  # autoscalers deleted, metrics reads perhaps in flight: the others go on
  hpa_k delete hpa web db w >/dev/null
  hpa_until 10 "deleted autoscalers are gone" "custom noreq nosuch" \
    bash -c "kubectl --kubeconfig '$HPA_T' get hpa -o name | sed 's|.*/||' | sort | tr '\n' ' ' | sed 's/ $//'"
  hpa_until 10 "the others are still reconciled" "False FailedGetResourceMetric" \
    hpa_cond noreq ScalingActive
}

# hpa_custom NAME DEPLOYMENT: an autoscaler of a Pods metric
hpa_custom() {
  hpa_k apply -f - >/dev/null <<EOF
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: $1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $2}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Pods
    pods:
      metric: {name: packets-per-second}
      target: {type: AverageValue, averageValue: "1k"}
EOF
}

# Metric sources that cannot be read: kube's conditions and events.
hpa_failures() {
  # a target without requests
  hpa_k create deployment noreq --image=nginx >/dev/null
  hpa_k autoscale deployment noreq --min=1 --max=3 --cpu-percent=50 >/dev/null
  hpa_until 60 "no cpu request: ScalingActive False FailedGetResourceMetric" \
    "False FailedGetResourceMetric" hpa_cond noreq ScalingActive
  # The same reason comes first as "no metrics returned from resource metrics
  # API" while the host's scheduler has not yet written the new pod's
  # metrics: wait for the pod, then for the message about its request.
  local pod
  wait_for "noreq: its pod" 30 \
    hpa_k get pods -l app=noreq -o jsonpath='{.items[0].metadata.name}'
  pod=$(hpa_k get pods -l app=noreq -o jsonpath='{.items[0].metadata.name}')
  hpa_until 60 "its message" \
    "the HPA was unable to compute the replica count: failed to get cpu utilization: missing request for cpu in container nginx of Pod $pod" \
    hpa_msg noreq ScalingActive
  hpa_until 10 "FailedComputeMetricsReplicas event" yes hpa_has_event noreq \
    FailedComputeMetricsReplicas \
    "invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: missing request for cpu in container nginx of Pod $pod"
  hpa_until 10 "FailedGetResourceMetric event" yes hpa_has_event noreq FailedGetResourceMetric \
    "failed to get cpu utilization: missing request for cpu in container nginx of Pod $pod"
  expect_until_match "kubectl get hpa: <unknown> current" 30 '^noreq +Deployment/noreq +cpu: <unknown>/50% +1 +3 +1 ' \
    hpa_k get hpa noreq --no-headers

  # a Pods metric: no custom metrics API here
  hpa_k create deployment api --image=nginx >/dev/null
  hpa_custom custom api
  hpa_until 60 "Pods metric: ScalingActive False FailedGetPodsMetric" \
    "False FailedGetPodsMetric" hpa_cond custom ScalingActive
  hpa_until 30 "its message" \
    "the HPA was unable to compute the replica count: unable to get metric packets-per-second: unable to fetch metrics from custom metrics API: no known available metric versions found" \
    hpa_msg custom ScalingActive
  hpa_until 10 "FailedComputeMetricsReplicas event" yes hpa_has_event custom \
    FailedComputeMetricsReplicas \
    "invalid metrics (1 invalid out of 1), first error is: failed to get pods metric value: unable to get metric packets-per-second: unable to fetch metrics from custom metrics API: no known available metric versions found"

  # two autoscalers of the same pods
  hpa_custom second api
  hpa_until 60 "a second autoscaler of the same pods: ScalingActive False AmbiguousSelector" \
    "False AmbiguousSelector" hpa_cond second ScalingActive
  hpa_until 30 "its message" \
    "pods by selector app=api are controlled by multiple HPAs: [default/custom default/second]" \
    hpa_msg second ScalingActive
  hpa_until 60 "the first one too" "False AmbiguousSelector" hpa_cond custom ScalingActive
  hpa_k delete hpa second >/dev/null
  hpa_until 60 "one left: FailedGetPodsMetric again" "False FailedGetPodsMetric" \
    hpa_cond custom ScalingActive

  # a target that does not exist
  hpa_k apply -f - >/dev/null <<'EOF2'
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: nosuch}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: nosuch}
  maxReplicas: 2
EOF2
  hpa_until 30 "missing target: AbleToScale False FailedGetScale" "False FailedGetScale" \
    hpa_cond nosuch AbleToScale
  hpa_until 30 "its message" \
    "the HPA controller was unable to get the target's current scale: deployments.apps \"nosuch\" not found" \
    hpa_msg nosuch AbleToScale
  hpa_until 10 "FailedGetScale event" yes hpa_has_event nosuch FailedGetScale \
    'deployments.apps "nosuch" not found'
}

# A StatefulSet by memory average value and its container's cpu
# (autoscaling/v2), one pod a minute at most (a behavior's rate policy).
hpa_statefulset() {
  hpa_k apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - {name: db, image: postgres, resources: {requests: {cpu: 100m, memory: 64Mi}}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: db}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: db}
  maxReplicas: 3
  metrics:
  - type: Resource
    resource:
      name: memory
      target: {type: AverageValue, averageValue: 40Mi}
  - type: ContainerResource
    containerResource:
      name: cpu
      container: db
      target: {type: Utilization, averageUtilization: 200}
  behavior:
    scaleUp:
      policies: [{type: Pods, value: 1, periodSeconds: 60}]
EOF
  hpa_until 90 "memory 64Mi against 40Mi average: the StatefulSet scaled to 2" 2 \
    hpa_replicas statefulset/db
  hpa_until 10 "SuccessfulRescale event: memory resource above target" yes \
    hpa_has_event db SuccessfulRescale "New size: 2; reason: memory resource above target"
  hpa_until 60 "scaleUp policy 1 pod / 60 s: ScalingLimited True ScaleUpLimit" \
    "True ScaleUpLimit" hpa_cond db ScalingLimited
  hpa_until 30 "ScaleUpLimit's message" \
    "the desired replica count is increasing faster than the maximum scale rate" \
    hpa_msg db ScalingLimited
  expect_eq "and no more within the period" 2 hpa_replicas statefulset/db
  hpa_until 30 "status: the average value" "67108864" \
    hpa_k get hpa db -o jsonpath='{.status.currentMetrics[0].resource.current.averageValue}'
  hpa_until 60 "status: the container's cpu utilization, once measured" "ContainerResource db cpu 100 100m" \
    hpa_k get hpa db -o jsonpath='{.status.currentMetrics[1].type} {.status.currentMetrics[1].containerResource.container} {.status.currentMetrics[1].containerResource.name} {.status.currentMetrics[1].containerResource.current.averageUtilization} {.status.currentMetrics[1].containerResource.current.averageValue}'
  hpa_until 30 "kubectl get hpa: memory average and container cpu, 2 replicas" \
    "db StatefulSet/db memory: 67108864/40Mi, cpu: 100%/200% 1 3 2" \
    bash -c "kubectl --kubeconfig '$HPA_T' get hpa db --no-headers | tr -s ' ' | cut -d' ' -f1-9"
}

# A custom resource with a scale subresource: kept within min and max
# through its CRD's replica paths (no metrics needed).
hpa_custom_resource() {
  hpa_k apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size, labelSelectorPath: .status.selector}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
          status: {type: object, properties: {size: {type: integer}, selector: {type: string}}}
EOF
  sy_until 10 hpa_k get widgets
  hpa_k apply -f - >/dev/null <<'EOF'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {size: 7}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: w}
spec:
  scaleTargetRef: {apiVersion: example.com/v1, kind: Widget, name: w}
  minReplicas: 2
  maxReplicas: 5
EOF
  hpa_until 30 "a Widget of size 7, max 5: its specReplicasPath set to 5" 5 \
    hpa_k get widget w -o jsonpath='{.spec.size}'
  hpa_until 10 "SuccessfulRescale event: above Spec.MaxReplicas" yes \
    hpa_has_event w SuccessfulRescale "New size: 5; reason: Current number of replicas above Spec.MaxReplicas"
  hpa_until 30 "its scale has no selector: ScalingActive False InvalidSelector" \
    "False InvalidSelector" hpa_cond w ScalingActive
  hpa_until 30 "its message" "the HPA target's scale is missing a selector" hpa_msg w ScalingActive
  hpa_until 10 "SelectorRequired event" yes hpa_has_event w SelectorRequired "selector is required"
  hpa_until 30 "kubectl get hpa: the Widget reference, the default 80% cpu" \
    "w Widget/w cpu: <unknown>/80% 2 5 5" \
    bash -c "kubectl --kubeconfig '$HPA_T' get hpa w --no-headers | tr -s ' ' | cut -d' ' -f1-7"
}

# The controller writes its target through the scale subresource, as kube's
# HPA controller does with its scale client (podautoscaler/horizontal.go
# reconcileAutoscaler, scaleNamespacer.Update): admission webhooks see an
# UPDATE of deployments/scale with autoscaling/v1 Scale objects, and a
# mutating one shapes the size written. A target below minReplicas is scaled
# up without metrics (kube's "Current number of replicas below
# Spec.MinReplicas").
hpa_scale_webhooks() {
  echo "-- the target's scale subresource, through admission webhooks"
  local d=$E2E_TMP/hpawh i K=(kubectl --kubeconfig "$KCFG" -n hpawh)
  start_webhook_server "$d"
  local url=$WH_URL ca=$WH_CA
  kubectl --kubeconfig "$KCFG" create ns hpawh >/dev/null
  kubectl --kubeconfig "$KCFG" apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: hpa-scale}
webhooks:
- name: replicas.hpa.test
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Fail
  clientConfig: {url: "$url/replicas/3", caBundle: $ca}
  rules:
  - {operations: [UPDATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments/scale]}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: hpawh}}
EOF
  "${K[@]}" create deployment web --image=nginx --replicas=1 >/dev/null
  "${K[@]}" autoscale deployment web --min=2 --max=5 --cpu-percent=50 >/dev/null
  hpa_until 30 "the HPA scales web up to minReplicas, the webhook makes it 3" "3" \
    "${K[@]}" get deployment web -o jsonpath='{.spec.replicas}'
  expect_eq "the webhook saw an UPDATE of apps/v1 deployments/scale, an autoscaling/v1 Scale from 1 to 2" \
    "UPDATE apps/v1/deployments scale autoscaling/v1/Scale Scale 1 2 system:serviceaccount:kube-system:horizontal-pod-autoscaler" \
    python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][0]["review"]["request"]
res, k = r["resource"], r["kind"]
print(r["operation"], res["group"] + "/" + res["version"] + "/" + res["resource"], r.get("subResource"),
      k["group"] + "/" + k["version"] + "/" + k["kind"], r["object"]["kind"],
      r["oldObject"]["spec"]["replicas"], r["object"]["spec"]["replicas"], r["userInfo"]["username"])' "$d/reviews.log"
  expect_eq "managedFields: the controller's update of spec.replicas through the scale subresource" \
    "horizontal-pod-autoscaler Update scale" \
    "${K[@]}" get deployment web -o jsonpath='{range .metadata.managedFields[?(@.subresource=="scale")]}{.manager} {.operation} {.subresource}{end}'
  kubectl --kubeconfig "$KCFG" delete mutatingwebhookconfiguration hpa-scale >/dev/null
}
