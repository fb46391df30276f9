# SPDX-License-Identifier: Apache-2.0
# Controllers end to end with real kubectl: Deployment rollouts (create,
# scale, set image, rollout status/history/undo/restart/pause/resume), Jobs
# that complete and fail, a CronJob firing, deletion with each propagation
# policy and a restart in the middle of a rollout. Pods' readiness and phase
# stand in for the syncer: the test patches pods/status.

# ready_pods NS SELECTOR: marks every active pod Running and Ready.
ready_pods() {
  local p
  for p in $("${K[@]}" -n "$1" get pods -l "$2" -o jsonpath='{range .items[?(@.status.phase=="Pending")]}{.metadata.name} {end}'); do
    "${K[@]}" -n "$1" patch pod "$p" --subresource=status --type=merge \
      -p '{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}' >/dev/null 2>&1
  done
}

# set_phase NS SELECTOR PHASE
set_phase() {
  local p
  for p in $("${K[@]}" -n "$1" get pods -l "$2" -o name); do
    "${K[@]}" -n "$1" patch "$p" --subresource=status --type=merge -p "{\"status\":{\"phase\":\"$3\"}}" >/dev/null 2>&1
  done
}

# roll NS SELECTOR: keeps marking new pods ready until the rollout is done.
roll() {
  local i
  for i in $(seq 30); do
    ready_pods "$1" "$2"
    "${K[@]}" -n "$1" rollout status deploy/web --timeout=1s >/dev/null 2>&1 && return 0
  done
  return 1
}

count_rs() { "${K[@]}" -n "$1" get rs --no-headers 2>/dev/null | wc -l | tr -d ' '; }
# count_named NS KINDS PREFIX: objects of KINDS whose name starts with PREFIX
count_named() { "${K[@]}" -n "$1" get "$2" -o name 2>/dev/null | grep -c "/$3" ; true; }
progress_reason() {
  "${K[@]}" -n "$1" get deploy web -o 'jsonpath={.status.conditions[?(@.type=="Progressing")].reason}'
}

# rs_step_settled NS "OLD NEW": the two ReplicaSets of deploy/web (by
# revision) want OLD and NEW replicas and each has made them.
rs_step_settled() {
  local got
  got=$("${K[@]}" -n "$1" get rs -l app=web --sort-by='.metadata.annotations.deployment\.kubernetes\.io/revision' \
    -o 'jsonpath={range .items[*]}{.spec.replicas}/{.status.replicas} {end}')
  [ "$got" = "$(awk '{print $1 "/" $1 " " $2 "/" $2 " "}' <<<"$2")" ]
}

# sts_roll NS STS WANT JSONPATH: marks the set's pods ready until the set's
# JSONPATH prints WANT (up to 60 s).
sts_roll() {
  local end=$((SECONDS + 60)) out
  while :; do
    ready_pods "$1" "app=$2"
    out=$("${K[@]}" -n "$1" get sts "$2" -o "jsonpath=$4" 2>&1)
    [ "$out" = "$3" ] && return 0
    [ $SECONDS -ge $end ] && break
    sleep 0.2
  done
  fail "[sts] $2: wanted '$3' of $4, got '$out'"
}

count_pods() { "${K[@]}" -n "$1" get pods -l "$2" --no-headers 2>/dev/null | wc -l | tr -d ' '; }

controllers_deployment() {
  local ns=ctrl-d
  "${K[@]}" create ns $ns >/dev/null
  expect "[ctrl] create deployment" 'created' "${K[@]}" -n $ns create deployment web --image=nginx:1.25 --replicas=3
  expect_until "[ctrl] 3 pods exist" "3" count_pods $ns app=web
  expect "[ctrl] pods are controlled by the ReplicaSet" 'ReplicaSet web-[a-z0-9]+ true true' \
    "${K[@]}" -n $ns get pods -l app=web -o 'jsonpath={.items[0].metadata.ownerReferences[0].kind} {.items[0].metadata.ownerReferences[0].name} {.items[0].metadata.ownerReferences[0].controller} {.items[0].metadata.ownerReferences[0].blockOwnerDeletion}'
  expect "[ctrl] ReplicaSet carries pod-template-hash" 'pod-template-hash=' "${K[@]}" -n $ns get rs -o wide
  expect_until "[ctrl] not Available before pods are ready" "False" "${K[@]}" -n $ns get deploy web -o 'jsonpath={.status.conditions[?(@.type=="Available")].status}'
  ready_pods $ns app=web
  expect "[ctrl] rollout status succeeds once pods are ready" 'successfully rolled out' "${K[@]}" -n $ns rollout status deploy/web --timeout=20s
  expect_eq "[ctrl] Available with kube's reason" "True MinimumReplicasAvailable" "${K[@]}" -n $ns get deploy web -o 'jsonpath={.status.conditions[?(@.type=="Available")].status} {.status.conditions[?(@.type=="Available")].reason}'
  expect "[ctrl] set image" 'image updated' "${K[@]}" -n $ns set image deploy/web nginx=nginx:1.26
  expect_until "[ctrl] a second ReplicaSet" "2" count_rs $ns
  # the rollout: half-way, kill the server and start it again; first wait
  # for the step that the new pod's readiness allows (old 2, new 2, each
  # ReplicaSet's pods made), so that the count is settled
  wait_for "[ctrl] the new ReplicaSet's first pod" 30 \
    bash -c "[ \$(${K[*]} -n $ns get pods -l app=web -o name | wc -l) -ge 4 ]"
  ready_pods $ns app=web
  wait_for "[ctrl] the rollout's next step (old 2, new 2)" 30 rs_step_settled $ns "2 2"
  local before; before=$(count_pods $ns app=web)
  stop_server TERM
  start_server ctrl || return 1
  sleep 1.5
  expect_eq "[ctrl] restart mid-rollout: no duplicate pods" "$before" count_pods $ns app=web
  if roll $ns app=web; then pass "[ctrl] rollout to nginx:1.26 completes"; else fail "[ctrl] rollout to nginx:1.26"; fi
  expect_eq "[ctrl] old ReplicaSet scaled to 0" "0 3" "${K[@]}" -n $ns get rs -o 'jsonpath={.items[?(@.spec.template.spec.containers[0].image=="nginx:1.25")].spec.replicas} {.items[?(@.spec.template.spec.containers[0].image=="nginx:1.26")].spec.replicas}'
  expect "[ctrl] rollout history lists revisions 1 and 2" '^2 ' "${K[@]}" -n $ns rollout history deploy/web
  expect "[ctrl] rollout undo" 'rolled back' "${K[@]}" -n $ns rollout undo deploy/web
  roll $ns app=web
  expect_eq "[ctrl] undo brings back nginx:1.25 as revision 3" "nginx:1.25 3" "${K[@]}" -n $ns get deploy web -o 'jsonpath={.spec.template.spec.containers[0].image} {.metadata.annotations.deployment\.kubernetes\.io/revision}'
  expect_eq "[ctrl] undo reuses the first ReplicaSet" "2" count_rs $ns
  expect "[ctrl] scale" 'scaled' "${K[@]}" -n $ns scale deploy/web --replicas=5
  wait_for "[ctrl] 5 pods made" 30 bash -c "[ \$(${K[*]} -n $ns get pods -l app=web --no-headers | wc -l) = 5 ]"
  ready_pods $ns app=web
  expect "[ctrl] scaled deployment rolls out" 'successfully rolled out' "${K[@]}" -n $ns rollout status deploy/web --timeout=20s
  expect_eq "[ctrl] 5 pods" "5" count_pods $ns app=web
  expect "[ctrl] rollout pause" 'paused' "${K[@]}" -n $ns rollout pause deploy/web
  expect_until "[ctrl] paused condition" "DeploymentPaused" progress_reason $ns
  expect "[ctrl] rollout resume" 'resumed' "${K[@]}" -n $ns rollout resume deploy/web
  expect "[ctrl] rollout restart" 'restarted' "${K[@]}" -n $ns rollout restart deploy/web
  if roll $ns app=web; then pass "[ctrl] restart rolls out new pods"; else fail "[ctrl] restart rollout"; fi
  expect "[ctrl] restartedAt annotation in the new ReplicaSet" 'restartedAt' "${K[@]}" -n $ns get rs -o yaml
}

controllers_jobs() {
  local ns=ctrl-j
  "${K[@]}" create ns $ns >/dev/null
  expect "[ctrl] create job" 'created' "${K[@]}" -n $ns create job ok --image=busybox -- true
  expect_until "[ctrl] job pod exists" "1" count_pods $ns job-name=ok
  set_phase $ns job-name=ok Succeeded
  expect "[ctrl] job completes" 'condition met' "${K[@]}" -n $ns wait --for=condition=complete job/ok --timeout=15s
  expect_eq "[ctrl] job status" "1 CompletionsReached" "${K[@]}" -n $ns get job ok -o 'jsonpath={.status.succeeded} {.status.conditions[?(@.type=="Complete")].reason}'
  "${K[@]}" -n $ns apply -f - >/dev/null <<'Y'
apiVersion: batch/v1
kind: Job
metadata: {name: bad}
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
Y
  wait_for "[ctrl] job bad's pod" 30 bash -c "[ \$(${K[*]} -n $ns get pods -l job-name=bad --no-headers | wc -l) = 1 ]"
  set_phase $ns job-name=bad Failed
  local i
  for i in $(seq 40); do
    [ "$(count_pods $ns job-name=bad)" -ge 2 ] && break
    sleep 0.5
  done
  expect_eq "[ctrl] a failed pod is replaced after backoff" "2" count_pods $ns job-name=bad
  set_phase $ns job-name=bad Failed
  expect "[ctrl] job fails past backoffLimit" 'condition met' "${K[@]}" -n $ns wait --for=condition=failed job/bad --timeout=15s
  expect_eq "[ctrl] failure reason" "BackoffLimitExceeded" "${K[@]}" -n $ns get job bad -o 'jsonpath={.status.conditions[?(@.type=="Failed")].reason}'
  "${K[@]}" -n $ns apply -f - >/dev/null <<'Y'
apiVersion: batch/v1
kind: Job
metadata: {name: idx}
spec:
  completions: 3
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
Y
  expect_until_match "[ctrl] indexed pods named <job>-<index>-" 30 'idx-0-[a-z0-9]{5} idx-1-[a-z0-9]{5}' \
    "${K[@]}" -n $ns get pods -l job-name=idx --sort-by=.metadata.name -o 'jsonpath={.items[*].metadata.name}'
}

# A CronJob every minute: made early (controllers_cronjob_create), checked
# at the end of the suite (controllers_cronjob), so that the wait for the
# next minute overlaps the other checks.
controllers_cronjob_create() {
  local ns=ctrl-cj
  "${K[@]}" create ns $ns >/dev/null
  expect "[ctrl] create cronjob" 'created' "${K[@]}" -n $ns create cronjob tick --image=busybox --schedule='* * * * *' -- true
}

controllers_cronjob() {
  local ns=ctrl-cj i fired=""
  for i in $(seq 70); do
    # the first of them: by now the schedule may have fired more than once
    fired=$("${K[@]}" -n $ns get jobs -o name 2>/dev/null | grep -m1 'job.batch/tick-')
    [ -n "$fired" ] && break
    sleep 1
  done
  if [[ "$fired" =~ ^job.batch/tick-[0-9]+$ ]]; then pass "[ctrl] cronjob fired ($fired)"
  else fail "[ctrl] cronjob did not fire within 70 s"; fi
  expect_until_match "[ctrl] cronjob lastScheduleTime" 30 '^20[0-9-]+T' "${K[@]}" -n $ns get cronjob tick -o 'jsonpath={.status.lastScheduleTime}'
}

controllers_gc() {
  local ns=ctrl-g p
  "${K[@]}" create ns $ns >/dev/null
  for p in bg fg or; do "${K[@]}" -n $ns create deployment $p --image=busybox --replicas=2 >/dev/null; done
  for p in bg fg or; do # their ReplicaSets and pods exist
    wait_for "[ctrl] deployment $p's ReplicaSet and 2 pods" 30 bash -c "[ \$(${K[*]} -n $ns get rs,pods -o name | grep -c '/$p-') = 3 ]"
  done
  expect "[ctrl] delete (Background)" 'deleted' "${K[@]}" -n $ns delete deploy bg
  expect_until "[ctrl] Background removes ReplicaSet and pods" "0" count_named $ns rs,pods bg-
  expect "[ctrl] delete --cascade=foreground" 'deleted' "${K[@]}" -n $ns delete deploy fg --cascade=foreground --timeout=20s
  expect_eq "[ctrl] Foreground removed dependents first" "0" count_named $ns deploy,rs,pods fg
  expect "[ctrl] delete --cascade=orphan" 'deleted' "${K[@]}" -n $ns delete deploy or --cascade=orphan
  # the garbage collector has processed the deletion once the owner
  # reference is gone: then nothing may have been deleted
  expect_until "[ctrl] orphaned ReplicaSet has no owner" "" "${K[@]}" -n $ns get rs -o 'jsonpath={.items[0].metadata.ownerReferences}'
  expect_eq "[ctrl] Orphan keeps the ReplicaSet" "1" count_named $ns rs or-
  expect_eq "[ctrl] Orphan keeps the pods" "2" count_named $ns pods or-
}

# StatefulSet: ordinal names, OrderedReady waits for Ready, scale down from
# the highest ordinal, Parallel creates all at once.
controllers_statefulset() {
  local ns=ctrl-s
  "${K[@]}" create ns $ns >/dev/null
  "${K[@]}" -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: par}
spec:
  replicas: 3
  podManagementPolicy: Parallel
  serviceName: par
  selector: {matchLabels: {app: par}}
  template:
    metadata: {labels: {app: par}}
    spec: {containers: [{name: c, image: busybox}]}
YAML
  # both sets processed (db-0 and par's three pods made): db-1 must not be
  wait_for "[ctrl] db-0 and par-0..2" 30 bash -c "[ \$(${K[*]} -n $ns get pods -o name | grep -cE '/(db-0|par-[0-2])\$') = 4 ]"
  expect_eq "[ctrl] OrderedReady starts with db-0 only" "pod/db-0" "${K[@]}" -n $ns get pods -l app=db -o name
  expect_eq "[ctrl] Parallel creates par-0..2 at once" "pod/par-0 pod/par-1 pod/par-2" \
    bash -c "${K[*]} -n $ns get pods -l app=par -o name | sort | tr '\n' ' ' | sed 's/ $//'"
  local i
  for i in $(seq 20); do
    ready_pods $ns app=db
    [ "$(count_pods $ns app=db)" = 3 ] && break
    sleep 0.5
  done
  ready_pods $ns app=db
  expect_eq "[ctrl] each Ready pod lets the next ordinal start" "pod/db-0 pod/db-1 pod/db-2" \
    bash -c "${K[*]} -n $ns get pods -l app=db -o name | sort | tr '\n' ' ' | sed 's/ $//'"
  "${K[@]}" -n $ns scale sts db --replicas=1 >/dev/null
  expect_until "[ctrl] scale down removes the highest ordinals" "pod/db-0" "${K[@]}" -n $ns get pods -l app=db -o name
}

# Events the controllers record (kubectl describe's Events), and the event
# TTL, on a server of their own with --event-ttl 6s.
controllers_events() {
  echo "== controllers: events and the event TTL"
  local K=(kubectl --kubeconfig "$E2E_TMP/ctrlev/kubeconfig") d rs
  start_server ctrlev --event-ttl 6s || { fail "[ctrl] events server did not start"; return; }
  "${K[@]}" create deployment web --image=nginx --replicas=2 >/dev/null
  wait_for "[ctrl] the deployment's ReplicaSet" 30 "${K[@]}" get rs -o jsonpath='{.items[0].metadata.name}'
  rs=$("${K[@]}" get rs -o jsonpath='{.items[0].metadata.name}')
  expect_until_match "describe deployment: ScalingReplicaSet from the deployment controller" \
    30 "Normal +ScalingReplicaSet +[0-9]+s +deployment-controller +Scaled up replica set $rs from 0 to 2" \
    "${K[@]}" describe deployment web
  expect_until_match "describe rs: SuccessfulCreate for each pod" \
    30 "Normal +SuccessfulCreate +[0-9]+s +replicaset-controller +Created pod: $rs-" \
    "${K[@]}" describe rs "$rs"
  expect_until "... two of them" "2" bash -c "kubectl --kubeconfig $E2E_TMP/ctrlev/kubeconfig get events \
    --field-selector involvedObject.kind=ReplicaSet,reason=SuccessfulCreate -o name | wc -l | tr -d ' '"
  "${K[@]}" scale deployment web --replicas=1 >/dev/null
  expect_until_match "scale down: the deployment's event says from 2 to 1" 30 \
    "Scaled down replica set $rs from 2 to 1" "${K[@]}" events --for deployment/web
  expect_until_match "... and the replica set's says which pod it deleted" 30 \
    "SuccessfulDelete +ReplicaSet/$rs +Deleted pod: $rs-" "${K[@]}" events --for "replicaset/$rs"
  expect_eq "events carry kube's involvedObject, source and reporting component" \
    "Deployment apps/v1 web deployment-controller deployment-controller 1" \
    "${K[@]}" get events --field-selector involvedObject.kind=Deployment \
    -o jsonpath='{.items[0].involvedObject.kind} {.items[0].involvedObject.apiVersion} {.items[0].involvedObject.name} {.items[0].source.component} {.items[0].reportingComponent} {.items[0].count}'
  "${K[@]}" create job once --image=busybox >/dev/null
  "${K[@]}" create -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: busybox}]}
YAML
  expect_until_match "job: SuccessfulCreate from the job controller" 30 \
    "SuccessfulCreate +Job/once +Created pod: once-" "${K[@]}" events --for job/once
  expect_until_match "statefulset: kube's own wording" 30 \
    "SuccessfulCreate +StatefulSet/db +create Pod db-0 in StatefulSet db successful" \
    "${K[@]}" events --for statefulset/db
  d=$((SECONDS + 25))
  while [ $SECONDS -lt $d ] && [ -n "$("${K[@]}" get events -o name 2>/dev/null)" ]; do sleep 1; done
  expect_eq "the event TTL: every event is gone 6 s after its last write" "" \
    "${K[@]}" get events -A -o name
  expect "... and the server said so" 'event\(s\) older than the event TTL \(6s\) deleted' \
    cat "$E2E_TMP/ctrlev.log"
  stop_server TERM
}

# pod_status NS POD IP READY: gives a pod the IP and Ready condition the
# syncer would copy from the host.
pod_status() {
  "${K[@]}" -n "$1" patch pod "$2" --subresource=status --type=merge \
    -p "{\"status\":{\"phase\":\"Running\",\"podIP\":\"$3\",\"podIPs\":[{\"ip\":\"$3\"}],\"conditions\":[{\"type\":\"Ready\",\"status\":\"$4\"}]}}" >/dev/null
}

# Endpoints and EndpointSlices made from Services and pods as
# kube-controller-manager makes them, and what kubectl shows of them.
controllers_suite_endpoints() {
  local ns=ctrl-ep
  "${K[@]}" create ns $ns >/dev/null
  "${K[@]}" -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: a, labels: {app: web}}
spec: {containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, labels: {app: web}}
spec: {containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, labels: {tier: fe}}
spec:
  selector: {app: web}
  ports: [{name: web, port: 80, targetPort: http, appProtocol: http}]
---
apiVersion: v1
kind: Pod
metadata: {name: h, labels: {app: db}}
spec: {hostname: h0, subdomain: db, containers: [{name: c, image: postgres}]}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
YAML
  expect_until "[ep] a service without ready pods: Endpoints without subsets" "web " \
    "${K[@]}" -n $ns get endpoints web -o 'jsonpath={.metadata.name} {.subsets}'
  expect_until "[eps] ... and one placeholder EndpointSlice" "IPv4 [] 1" \
    bash -c "${K[*]} -n $ns get endpointslices -l kubernetes.io/service-name=web -o 'jsonpath={.items[0].addressType} {.items[0].endpoints} ' && ${K[*]} -n $ns get endpointslices -l kubernetes.io/service-name=web --no-headers | wc -l"
  pod_status $ns a 10.1.0.5 True
  pod_status $ns b 10.1.0.6 False
  expect_until "[ep] the ready pod's IP with the named port resolved" "10.1.0.5 8080 web TCP http" \
    "${K[@]}" -n $ns get endpoints web -o 'jsonpath={.subsets[0].addresses[*].ip} {.subsets[0].ports[0].port} {.subsets[0].ports[0].name} {.subsets[0].ports[0].protocol} {.subsets[0].ports[0].appProtocol}'
  expect_until "[ep] the not-ready pod in notReadyAddresses, with its targetRef" "10.1.0.6 Pod b" \
    "${K[@]}" -n $ns get endpoints web -o 'jsonpath={.subsets[0].notReadyAddresses[*].ip} {.subsets[0].notReadyAddresses[0].targetRef.kind} {.subsets[0].notReadyAddresses[0].targetRef.name}'
  expect_until "[ep] Endpoints carry the service's labels and the trigger-time annotation" "fe true" \
    bash -c "${K[*]} -n $ns get endpoints web -o 'jsonpath={.metadata.labels.tier} {.metadata.annotations}' | sed -E 's/\{.*last-change-trigger-time\":\"[0-9TZ:-]+\"\}/true/'"
  expect "[ep] kubectl get endpoints shows ready addresses" 'web +10\.1\.0\.5:8080 ' \
    "${K[@]}" -n $ns get endpoints
  local sel=kubernetes.io/service-name=web
  expect_until "[eps] one slice, both pods, kube's conditions" "10.1.0.5:true/true/false 10.1.0.6:false/false/false " \
    "${K[@]}" -n $ns get endpointslices -l $sel -o 'jsonpath={range .items[*].endpoints[*]}{.addresses[0]}:{.conditions.ready}/{.conditions.serving}/{.conditions.terminating} {end}'
  expect_eq "[eps] ports, address type, labels" "web 8080 TCP http IPv4 endpointslice-controller.k8s.io fe" \
    "${K[@]}" -n $ns get endpointslices -l $sel -o 'jsonpath={.items[0].ports[0].name} {.items[0].ports[0].port} {.items[0].ports[0].protocol} {.items[0].ports[0].appProtocol} {.items[0].addressType} {.items[0].metadata.labels.endpointslice\.kubernetes\.io/managed-by} {.items[0].metadata.labels.tier}'
  expect "[eps] generateName <svc>- and a controller ownerReference to the Service" \
    '^web-[a-z0-9]{5} Service web true true$' \
    "${K[@]}" -n $ns get endpointslices -l $sel -o 'jsonpath={.items[0].metadata.name} {.items[0].metadata.ownerReferences[0].kind} {.items[0].metadata.ownerReferences[0].name} {.items[0].metadata.ownerReferences[0].controller} {.items[0].metadata.ownerReferences[0].blockOwnerDeletion}'
  expect "[eps] kubectl get endpointslices: kube's columns" \
    'NAME +ADDRESSTYPE +PORTS +ENDPOINTS +AGE.*web-[a-z0-9]{5} +IPv4 +8080 +10\.1\.0\.5,10\.1\.0\.6 ' \
    bash -c "${K[*]} -n $ns get endpointslices | tr '\n' ' '"
  expect_until_match "[ep] kubectl describe service shows the Endpoints line" 30 'Endpoints: +10\.1\.0\.5:8080' \
    "${K[@]}" -n $ns describe service web
  pod_status $ns b 10.1.0.6 True
  expect_until "[ep] a pod turning ready moves to addresses" "10.1.0.5 10.1.0.6|" \
    "${K[@]}" -n $ns get endpoints web -o 'jsonpath={.subsets[0].addresses[*].ip}|{.subsets[0].notReadyAddresses}'
  local slice
  slice=$("${K[@]}" -n $ns get endpointslices -l $sel -o 'jsonpath={.items[0].metadata.name}')
  "${K[@]}" -n $ns label pod a app=gone --overwrite >/dev/null
  expect_until "[ep] a pod leaving the selector drops out" "10.1.0.6" \
    "${K[@]}" -n $ns get endpoints web -o 'jsonpath={.subsets[*].addresses[*].ip}{.subsets[*].notReadyAddresses[*].ip}'
  expect_until "[eps] ... of the slice too, updated in place" "$slice 10.1.0.6" \
    "${K[@]}" -n $ns get endpointslices -l $sel -o 'jsonpath={.items[*].metadata.name} {.items[*].endpoints[*].addresses[0]}'
  expect_until "[ep] headless service whose pod has no IP yet: no subsets" "" \
    "${K[@]}" -n $ns get endpoints db -o 'jsonpath={.subsets}'
  pod_status $ns h 10.1.0.9 False
  expect_until "[ep] headless service: hostname from hostname+subdomain, headless label" "h0 10.1.0.9 5432 " \
    "${K[@]}" -n $ns get endpoints db -o 'jsonpath={.subsets[0].notReadyAddresses[0].hostname} {.subsets[0].notReadyAddresses[0].ip} {.subsets[0].ports[0].port} {.metadata.labels.service\.kubernetes\.io/headless}'
  expect_until "[eps] headless slice: hostname, headless label" "h0 true" \
    bash -c "${K[*]} -n $ns get endpointslices -l kubernetes.io/service-name=db -o 'jsonpath={.items[0].endpoints[0].hostname} {.items[0].metadata.labels}' | sed 's/ {.*\"service.kubernetes.io\/headless\":\"\".*}/ true/'"
  "${K[@]}" -n $ns patch svc db --type=merge -p '{"spec":{"publishNotReadyAddresses":true}}' >/dev/null
  expect_until "[ep] publishNotReadyAddresses: the not-ready pod in addresses" "10.1.0.9|" \
    "${K[@]}" -n $ns get endpoints db -o 'jsonpath={.subsets[0].addresses[*].ip}|{.subsets[0].notReadyAddresses}'
  expect_until "[eps] publishNotReadyAddresses: ready, not serving" "true/false" \
    "${K[@]}" -n $ns get endpointslices -l kubernetes.io/service-name=db -o 'jsonpath={.items[0].endpoints[0].conditions.ready}/{.items[0].endpoints[0].conditions.serving}'
  # a selectorless service's Endpoints are the user's
  "${K[@]}" -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: Service
metadata: {name: ext}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: ext}
subsets: [{addresses: [{ip: 192.0.2.10}], ports: [{port: 80}]}]
YAML
  sleep 0.5
  expect_eq "[ep] Endpoints of a service without selector are left alone" "192.0.2.10" \
    "${K[@]}" -n $ns get endpoints ext -o 'jsonpath={.subsets[0].addresses[*].ip}'
  expect_eq "[ep] the kubernetes Service's Endpoints: the API's address on https" "https TCP" \
    "${K[@]}" get endpoints kubernetes -o 'jsonpath={.subsets[0].ports[0].name} {.subsets[0].ports[0].protocol}'
  expect_eq "[eps] ... and its EndpointSlice" "kubernetes IPv4 https true" \
    "${K[@]}" get endpointslices kubernetes -o 'jsonpath={.metadata.labels.kubernetes\.io/service-name} {.addressType} {.ports[0].name} {.endpoints[0].conditions.ready}'
  expect "[eps] api-resources lists endpointslices" '^endpointslices +discovery\.k8s\.io/v1 +true +EndpointSlice' \
    bash -c "kubectl --kubeconfig $KCFG api-resources | grep -E '^endpointslices'"
  expect_fail "[eps] validation: addressType is required" 'addressType: Required value' \
    bash -c "echo '{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"bad\"},\"endpoints\":[]}' | ${K[*]} -n $ns create -f -"
  expect_fail "[eps] validation: addresses match the addressType" \
    'endpoints\[0\]\.addresses\[0\]: Invalid value: "300\.1\.1\.1": must be a valid IPv4 address' \
    bash -c "echo '{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"bad\"},\"addressType\":\"IPv4\",\"endpoints\":[{\"addresses\":[\"300.1.1.1\"]}]}' | ${K[*]} -n $ns create -f -"
  expect_fail "[eps] validation: addressType is immutable" 'addressType: Invalid value: "IPv6": field is immutable' \
    "${K[@]}" -n $ns patch endpointslice "$slice" --type=merge -p '{"addressType":"IPv6"}'
  # restart: the controllers pick up what changed while they were down
  stop_server TERM
  start_server ctrl || { fail "[ep] server did not restart"; return; }
  expect_until "[ep] after a restart the Endpoints are rebuilt" "10.1.0.6" \
    "${K[@]}" -n $ns get endpoints web -o 'jsonpath={.subsets[*].addresses[*].ip}'
  "${K[@]}" -n $ns delete svc web >/dev/null
  expect_until "[ep] deleting the service deletes its Endpoints" "" \
    "${K[@]}" -n $ns get endpoints web -o name --ignore-not-found
  expect_until "[eps] ... and its EndpointSlices" "" \
    "${K[@]}" -n $ns get endpointslices -l $sel -o name
}

# ReplicationControllers (core/v1): kube's defaults (selector and labels
# from the template), pods kept by the same controller as ReplicaSets,
# scale, columns, `kubectl get all`, the cascade; PodTemplates stored.
controllers_rc() {
  local ns=ctrl-rc
  "${K[@]}" create ns $ns >/dev/null
  "${K[@]}" -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: ReplicationController
metadata: {name: web}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.9}]}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: tpl}
template:
  metadata: {labels: {app: tpl}}
  spec: {containers: [{name: c, image: registry.k8s.io/pause:3.9}]}
YAML
  expect_eq "[ctrl] an rc's selector and labels default to its template's labels" '{"app":"web"} {"app":"web"}' \
    "${K[@]}" -n $ns get rc web -o jsonpath='{.spec.selector} {.metadata.labels}'
  expect_until "[ctrl] an rc keeps its replicas" "2" \
    sh -c "${K[*]} -n $ns get pods -l app=web -o name | wc -l"
  expect_eq "[ctrl] ... owned by it" "ReplicationController/web" \
    sh -c "${K[*]} -n $ns get pods -l app=web -o jsonpath='{.items[0].metadata.ownerReferences[0].kind}/{.items[0].metadata.ownerReferences[0].name}'"
  "${K[@]}" -n $ns scale rc web --replicas=3 >/dev/null
  expect_until "[ctrl] kubectl scale rc" "3" \
    sh -c "${K[*]} -n $ns get pods -l app=web -o name | wc -l"
  expect_until_match "[ctrl] rc columns under -o wide" 30 '^web +3 +3 +0 +[0-9]+s +c +registry.k8s.io/pause:3.9 +app=web$' \
    "${K[@]}" -n $ns get rc -o wide --no-headers
  expect_until_match "[ctrl] kubectl get all lists it" 30 'replicationcontroller/web +3 +3 +0' \
    "${K[@]}" -n $ns get all
  expect_until_match "[ctrl] describe shows the replication controller's events" 30 'SuccessfulCreate +[0-9a-z]+ +replication-controller +Created pod: web-' \
    "${K[@]}" -n $ns describe rc web
  expect "[ctrl] a PodTemplate is stored, with kube's columns" '^tpl +c +registry.k8s.io/pause:3.9 +app=tpl$' \
    "${K[@]}" -n $ns get podtemplates --no-headers
  expect_fail "[ctrl] an rc whose selector does not match its template, in kube's words" \
    'spec.template.metadata.labels: Invalid value: map\[string\]string\{"app":"web"\}: `selector` does not match template `labels`' \
    sh -c "printf 'apiVersion: v1\nkind: ReplicationController\nmetadata: {name: bad}\nspec:\n  selector: {app: other}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x}]}\n' | ${K[*]} -n $ns create -f -"
  "${K[@]}" -n $ns delete rc web >/dev/null
  expect_until "[ctrl] deleting an rc deletes its pods" "0" \
    sh -c "${K[*]} -n $ns get pods -l app=web -o name | wc -l"
}

# What every namespace holds, kept as kube's serviceaccount-controller and
# root-ca-cert-publisher keep it.
controllers_nsdefaults() {
  local ns=ctrl-nsd ca
  "${K[@]}" create ns $ns >/dev/null
  ca=$(tr -d '\r' <"$DATA_DIR/ca.crt")
  "${K[@]}" -n $ns delete cm kube-root-ca.crt >/dev/null
  "${K[@]}" -n $ns delete sa default >/dev/null
  expect_until "[ctrl] a deleted kube-root-ca.crt is published again" "1" \
    sh -c "${K[*]} -n $ns get cm kube-root-ca.crt -o name | wc -l"
  expect_until "[ctrl] a deleted default ServiceAccount is made again" "serviceaccount/default" \
    "${K[@]}" -n $ns get sa default -o name
  "${K[@]}" -n $ns patch cm kube-root-ca.crt --type=merge \
    -p '{"data":{"ca.crt":"not a CA","extra":"x"},"metadata":{"annotations":{"kubernetes.io/description":null}}}' >/dev/null
  expect_until "[ctrl] a changed kube-root-ca.crt gets its data back, and only it" "ca.crt" \
    "${K[@]}" -n $ns get cm kube-root-ca.crt -o 'go-template={{range $k, $v := .data}}{{$k}}{{end}}'
  expect_until "[ctrl] ... the tenant's CA" "$ca" \
    "${K[@]}" -n $ns get cm kube-root-ca.crt -o 'jsonpath={.data.ca\.crt}'
  expect_until_match "[ctrl] ... and kube's description" 30 'Contains a CA bundle' \
    "${K[@]}" -n $ns get cm kube-root-ca.crt -o 'jsonpath={.metadata.annotations}'
  "${K[@]}" delete ns $ns --wait=true >/dev/null
  expect_fail "[ctrl] nothing is made again in a deleted namespace" 'NotFound' \
    "${K[@]}" -n $ns get sa default
}

controllers_suite() {
  K=(kubectl --kubeconfig "$E2E_TMP/ctrl/kubeconfig")
  start_server ctrl || { fail "[ctrl] server did not start"; return; }
  controllers_nsdefaults
  controllers_deployment
  controllers_suite_endpoints # the last restart of the server
  [ "${CTRL_SKIP_JOBS:-0}" = 1 ] || controllers_cronjob_create
  controllers_rc
  controllers_gc
  controllers_statefulset
  controllers_sts_history
  controllers_proportional
  controllers_job_tracking
  [ "${CTRL_SKIP_JOBS:-0}" = 1 ] || { controllers_jobs; controllers_cronjob; }
  stop_server TERM
  controllers_events
}

# StatefulSet history and storage: ControllerRevisions per template,
# controller-revision-hash labels, RollingUpdate from the highest ordinal
# down to the partition, rollout undo, volumeClaimTemplates with the
# retention policy.
controllers_sts_history() {
  local ns=ctrl-sh i
  "${K[@]}" create ns $ns >/dev/null
  "${K[@]}" -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: st}
spec:
  replicas: 3
  podManagementPolicy: Parallel
  serviceName: st
  selector: {matchLabels: {app: st}}
  persistentVolumeClaimRetentionPolicy: {whenScaled: Delete}
  template:
    metadata: {labels: {app: st}}
    spec: {containers: [{name: c, image: busybox, volumeMounts: [{name: data, mountPath: /d}]}]}
  volumeClaimTemplates:
  - metadata: {name: data, labels: {tier: disk}}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: keep}
spec:
  replicas: 2
  podManagementPolicy: Parallel
  serviceName: keep
  selector: {matchLabels: {app: keep}}
  template:
    metadata: {labels: {app: keep}}
    spec: {containers: [{name: c, image: busybox}]}
  volumeClaimTemplates:
  - metadata: {name: www}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
YAML
  wait_for "[sts] st-0..2" 30 bash -c "[ \$(${K[*]} -n $ns get pods -l app=st --no-headers | wc -l) = 3 ]"
  ready_pods $ns app=st
  wait_for "[sts] the update revision" 30 "${K[@]}" -n $ns get sts st -o 'jsonpath={.status.updateRevision}'
  local rev1
  rev1=$("${K[@]}" -n $ns get sts st -o 'jsonpath={.status.updateRevision}')
  expect_eq "[sts] one ControllerRevision named after the update revision, revision 1" "$rev1 1" \
    "${K[@]}" -n $ns get controllerrevisions -l app=st -o 'jsonpath={.items[*].metadata.name} {.items[*].revision}'
  expect_eq "[sts] the revision is owned by the set" "StatefulSet st true" \
    "${K[@]}" -n $ns get controllerrevision "$rev1" -o 'jsonpath={.metadata.ownerReferences[0].kind} {.metadata.ownerReferences[0].name} {.metadata.ownerReferences[0].controller}'
  expect_eq "[sts] pods labelled controller-revision-hash" "$rev1 $rev1 $rev1" \
    "${K[@]}" -n $ns get pods -l app=st -o 'jsonpath={.items[*].metadata.labels.controller-revision-hash}'
  expect_eq "[sts] claims <claim>-<sts>-<ordinal> with template and selector labels" \
    "data-st-0 data-st-1 data-st-2 disk st" \
    "${K[@]}" -n $ns get pvc -l tier=disk -o 'jsonpath={.items[*].metadata.name} {.items[0].metadata.labels.tier} {.items[0].metadata.labels.app}'
  expect_eq "[sts] pods mount their own claim" "data data-st-1" \
    "${K[@]}" -n $ns get pod st-1 -o 'jsonpath={.spec.volumes[0].name} {.spec.volumes[0].persistentVolumeClaim.claimName}'
  "${K[@]}" -n $ns patch sts st --type=merge -p '{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":1}}}}' >/dev/null
  "${K[@]}" -n $ns set image sts/st c=busybox:2 >/dev/null
  sts_roll $ns st "1 2 3" '{.status.currentReplicas} {.status.updatedReplicas} {.status.readyReplicas}'
  local rev2
  rev2=$("${K[@]}" -n $ns get sts st -o 'jsonpath={.status.updateRevision}')
  expect_eq "[sts] a template change makes revision 2" "2" \
    "${K[@]}" -n $ns get controllerrevision "$rev2" -o 'jsonpath={.revision}'
  expect_eq "[sts] partition 1: ordinals 1 and 2 updated, 0 kept" "$rev1 $rev2 $rev2" \
    bash -c "for p in 0 1 2; do ${K[*]} -n $ns get pod st-\$p -o 'jsonpath={.metadata.labels.controller-revision-hash} '; done | sed 's/ \$//'"
  local t1 t2
  t1=$("${K[@]}" -n $ns get pod st-1 -o 'jsonpath={.metadata.creationTimestamp}')
  t2=$("${K[@]}" -n $ns get pod st-2 -o 'jsonpath={.metadata.creationTimestamp}')
  expect_eq "[sts] reverse ordinal order: st-2 was replaced no later than st-1" "yes" \
    bash -c "[[ '$t2' < '$t1' || '$t2' == '$t1' ]] && echo yes || echo 'no: st-2 $t2, st-1 $t1'"
  expect_eq "[sts] status: currentRevision stays, updateRevision moves" "$rev1 $rev2 1 2" \
    "${K[@]}" -n $ns get sts st -o 'jsonpath={.status.currentRevision} {.status.updateRevision} {.status.currentReplicas} {.status.updatedReplicas}'
  "${K[@]}" -n $ns patch sts st --type=merge -p '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}' >/dev/null
  sts_roll $ns st "$rev2 $rev2 3 3" '{.status.currentRevision} {.status.updateRevision} {.status.updatedReplicas} {.status.readyReplicas}'
  expect_eq "[sts] partition 0: rollout completes, currentRevision moves" "$rev2 $rev2 3" \
    "${K[@]}" -n $ns get sts st -o 'jsonpath={.status.currentRevision} {.status.updateRevision} {.status.updatedReplicas}'
  expect "[sts] rollout history lists both revisions" '^2 ' "${K[@]}" -n $ns rollout history sts/st
  expect "[sts] rollout undo" 'rolled back' "${K[@]}" -n $ns rollout undo sts/st
  sts_roll $ns st "$rev1 3 3" '{.status.updateRevision} {.status.updatedReplicas} {.status.readyReplicas}'
  expect_eq "[sts] undo reuses the old revision with number 3" "$rev1 3 busybox" \
    bash -c "${K[*]} -n $ns get sts st -o 'jsonpath={.status.updateRevision} ' && ${K[*]} -n $ns get controllerrevision $rev1 -o 'jsonpath={.revision} ' && ${K[*]} -n $ns get sts st -o 'jsonpath={.spec.template.spec.containers[0].image}'"
  "${K[@]}" -n $ns scale sts st --replicas=1 >/dev/null
  "${K[@]}" -n $ns scale sts keep --replicas=1 >/dev/null
  expect_until "[sts] whenScaled Delete: claims of removed ordinals go" "data-st-0" \
    "${K[@]}" -n $ns get pvc -l tier=disk -o 'jsonpath={.items[*].metadata.name}'
  # keep's scale-down done (keep-1 gone): its claims must still be there
  wait_for "[sts] keep scaled to 1" 30 bash -c "[ \$(${K[*]} -n $ns get pods -l app=keep -o name) = pod/keep-0 ]"
  expect_eq "[sts] default Retain: claims stay after scale-down" "www-keep-0 www-keep-1" \
    "${K[@]}" -n $ns get pvc -l app=keep -o 'jsonpath={.items[*].metadata.name}'
  "${K[@]}" -n $ns scale sts keep --replicas=2 >/dev/null
  expect_until "[sts] a returning ordinal gets its old claim back" "www-keep-1" \
    "${K[@]}" -n $ns get pod keep-1 -o 'jsonpath={.spec.volumes[0].persistentVolumeClaim.claimName}'
}

# Proportional scaling (the kube documentation's example): 10 replicas,
# maxSurge 3, maxUnavailable 2, a rollout stuck on pods that never become
# ready (old RS 8, new RS 5); scaling to 15 spreads the 5 extra replicas by
# size: old 11, new 7.
controllers_proportional() {
  local ns=ctrl-p i
  "${K[@]}" create ns $ns >/dev/null
  "${K[@]}" -n $ns apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 10
  selector: {matchLabels: {app: prop}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 3, maxUnavailable: 2}}
  template:
    metadata: {labels: {app: prop}}
    spec: {containers: [{name: c, image: nginx:1}]}
YAML
  for i in $(seq 20); do
    ready_pods $ns app=prop
    [ "$("${K[@]}" -n $ns get deploy web -o 'jsonpath={.status.availableReplicas}')" = 10 ] && break
    sleep 0.3
  done
  "${K[@]}" -n $ns set image deploy/web c=nginx:sometag >/dev/null
  rs_sizes() {
    "${K[@]}" -n $ns get rs -l app=prop -o go-template='{{range .items}}{{index .spec.template.spec.containers 0 "image"}}={{.spec.replicas}} {{end}}' |
      tr ' ' '\n' | sort | tr '\n' ' ' | sed 's/ $//'
  }
  expect_until "[deploy] stuck rollout: old RS 8, new RS 5" "nginx:1=8 nginx:sometag=5" rs_sizes
  "${K[@]}" -n $ns scale deploy web --replicas=15 >/dev/null
  expect_until "[deploy] scaled to 15 in mid-rollout: 3 more to the old RS, 2 to the new" \
    "nginx:1=11 nginx:sometag=7" rs_sizes
  expect_until "[deploy] ReplicaSets record the new desired and max replicas" "15 18 15 18" \
    bash -c "${K[*]} -n $ns get rs -l app=prop -o go-template='{{range .items}}{{index .metadata.annotations \"deployment.kubernetes.io/desired-replicas\"}} {{index .metadata.annotations \"deployment.kubernetes.io/max-replicas\"}} {{end}}' | sed 's/ \$//'"
  "${K[@]}" -n $ns scale deploy web --replicas=5 >/dev/null
  # 18 -> 8: old 11 -> 5, new 7 -> 3 by size; the rollout then goes on
  # within maxUnavailable 2 (old pods available: 5, at least 3 kept): 3 / 5
  expect_until "[deploy] scaled down to 5 in mid-rollout, then the rollout goes on" \
    "nginx:1=3 nginx:sometag=5" rs_sizes
}

# Job pod tracking (kube >= 1.26): pods carry batch.kubernetes.io/job-tracking,
# finished pods are counted through status.uncountedTerminatedPods and lose
# the finalizer; counts survive the pods' deletion; a pod deleted while
# running counts as a failure; deleting the Job releases its pods.
controllers_job_tracking() {
  local ns=ctrl-jt i
  "${K[@]}" create ns $ns >/dev/null
  "${K[@]}" -n $ns apply -f - >/dev/null <<'Y'
apiVersion: batch/v1
kind: Job
metadata: {name: tr}
spec:
  completions: 3
  parallelism: 1
  backoffLimit: 5
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
Y
  expect_until "[job] pods carry the job-tracking finalizer" '["batch.kubernetes.io/job-tracking"]' \
    "${K[@]}" -n $ns get pods -l job-name=tr -o 'jsonpath={.items[0].metadata.finalizers}'
  set_phase $ns job-name=tr Succeeded
  expect_until "[job] a finished pod is counted, nothing left uncounted" "1 {}" \
    "${K[@]}" -n $ns get job tr -o 'jsonpath={.status.succeeded} {.status.uncountedTerminatedPods}'
  expect_until "[job] ... and the finished pod lost the finalizer" "" \
    "${K[@]}" -n $ns get pods -l job-name=tr -o 'jsonpath={.items[?(@.status.phase=="Succeeded")].metadata.finalizers}' 
  "${K[@]}" -n $ns delete pods -l job-name=tr --field-selector=status.phase=Succeeded --wait=false >/dev/null
  sleep 1
  expect_eq "[job] the count survives the pod's deletion" "1" \
    "${K[@]}" -n $ns get job tr -o 'jsonpath={.status.succeeded}'
  local running
  running=$("${K[@]}" -n $ns get pods -l job-name=tr -o 'jsonpath={.items[?(@.status.phase!="Succeeded")].metadata.name}')
  "${K[@]}" -n $ns delete pod "$running" --wait=false >/dev/null
  for i in $(seq 20); do
    [ "$("${K[@]}" -n $ns get job tr -o 'jsonpath={.status.failed}')" = 1 ] && break
    sleep 0.3
  done
  expect_eq "[job] a pod deleted before it finished counts as failed" "1 1" \
    "${K[@]}" -n $ns get job tr -o 'jsonpath={.status.succeeded} {.status.failed}'
  expect_fail "[job] ... and is gone (finalizer removed)" "" \
    "${K[@]}" -n $ns get pod "$running" -o name
  for i in $(seq 60); do
    set_phase $ns job-name=tr Succeeded
    [ "$("${K[@]}" -n $ns get job tr -o 'jsonpath={.status.succeeded}')" = 3 ] && break
    sleep 0.5
  done
  expect "[job] completes with 3 successes although pods were deleted" 'condition met' \
    "${K[@]}" -n $ns wait --for=condition=complete job/tr --timeout=15s
  expect_eq "[job] final counts" "3 1" "${K[@]}" -n $ns get job tr -o 'jsonpath={.status.succeeded} {.status.failed}'
  "${K[@]}" -n $ns create job gone --image=busybox -- sleep 100 >/dev/null
  wait_for "[job] job gone's pod" 30 bash -c "[ \$(${K[*]} -n $ns get pods -l job-name=gone --no-headers | wc -l) = 1 ]"
  expect "[job] deleting a Job with a running pod returns" 'deleted' \
    "${K[@]}" -n $ns delete job gone --timeout=20s
  for i in $(seq 20); do
    [ "$(count_pods $ns job-name=gone)" = 0 ] && break
    sleep 0.3
  done
  expect_eq "[job] its pods are released and removed" "0" count_pods $ns job-name=gone
  "${K[@]}" -n $ns create job orph --image=busybox -- sleep 100 >/dev/null
  wait_for "[job] job orph's pod, with its finalizer" 30 bash -c "${K[*]} -n $ns get pods -l job-name=orph -o 'jsonpath={.items[*].metadata.finalizers}' | grep -q job-tracking"
  "${K[@]}" -n $ns delete job orph --cascade=orphan >/dev/null
  expect_until "[job] orphaned pods lose the finalizer" "" \
    "${K[@]}" -n $ns get pods -l job-name=orph -o 'jsonpath={.items[*].metadata.finalizers}'
}
