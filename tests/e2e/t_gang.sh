# SPDX-License-Identifier: Apache-2.0
# End-to-end: gang scheduling across the tenant boundary. A host stand-in
# with the test scheduler in each of its profiles (tests/host/gang.py: KAI,
# Volcano and Kueue as their sources behave) and one tenant per profile; a
# distributed workload reaches Running all together when its queue has room,
# stays Pending all together (the scheduler's reason in the tenant) when it
# has not, and its host group object goes with it. Owner kinds: Indexed Job,
# PyTorchJob, Parallel StatefulSet, JobSet, RayCluster, LeaderWorkerSet (the
# CRDs the tenant's own, their operators' pods made by hand); a Parallel
# StatefulSet scaled 2 -> 3 -> 2, its host group following; under Kueue the
# reason on the Workload shown on the pods. Then, KAI only: tenant-set
# scheduler keys kept off the host, gangs above the policy's GPU quota and
# above the policy's, the namespace's and the host's pods quotas refused,
# kill -9 and restart (groups kept, a memberless one swept), kubicle
# create/delete. The first version of this file failed on the syncer
# before syncer/gang.c (commit 988990c): pods Pending forever on KAI and
# Volcano, refused by Kueue's webhook.

GG_HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
GG_PROFILES=(${E2E_GANG_PROFILES:-kai volcano kueue}) # E2E_GANG_PROFILES: a subset

gg_host() { kubectl --kubeconfig "$GG_HOST_KCFG" "$@"; }
gg_t() { local t=$1; shift; kubectl --kubeconfig "$(eval echo "\$GG_${t}_KCFG")" "$@"; }

# gg_until SECONDS CMD...: retries CMD (e2e_nap) until it succeeds.
gg_until() {
  local end=$((SECONDS + $1)); shift
  local t0=$SECONDS
  while [ $SECONDS -lt $end ]; do "$@" >/dev/null 2>&1 && return 0; e2e_nap $t0; done
  "$@" >/dev/null 2>&1
}

# the group objects of a tenant on the host ("" for kueue: none)
gg_pg_path() { # profile
  case $1 in
  kai) echo podgroups.scheduling.run.ai ;;
  volcano) echo podgroups.scheduling.volcano.sh ;;
  esac
}

gang_suite_setup() {
  E2E_PORT=0 start_server gghost --standin-exec || return 1
  GG_HOST_KCFG=$KCFG
  local p
  for p in kai volcano kueue; do
    gg_host create ns "gg-$p" >/dev/null || return 1
  done
  for p in "${GG_PROFILES[@]}"; do
    start_scheduler gghost --profile "$p"
  done
  # the schedulers install their group and queue APIs at their first pass
  # (every profile installs all of them)
  gg_until 30 gg_host get crd clusterqueues.kueue.x-k8s.io queues.scheduling.volcano.sh \
    podgroups.scheduling.run.ai podgroups.scheduling.volcano.sh localqueues.kueue.x-k8s.io ||
    return 1
  gg_host apply -f - >/dev/null <<'EOF' || return 1
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: gg-kai}
spec: {resources: {gpu: {quota: 8, limit: 8}}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: gg-volcano}
spec: {capability: {nvidia.com/gpu: 8}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: gg-cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: default, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: gg-kueue, namespace: gg-kueue}
spec: {clusterQueue: gg-cq}
EOF
  for p in "${GG_PROFILES[@]}"; do
    start_server "gg$p" --host-kubeconfig "$GG_HOST_KCFG" --host-namespace "gg-$p" \
      --tenant "gg$p" --queue "gg-$p" --scheduler "$p" || return 1
    printf -v "GG_${p}_KCFG" %s "$KCFG"
    printf -v "GG_${p}_PID" %s "$SERVER_PID"
  done
}

# An Indexed Job of N workers with G GPUs each, completions = parallelism.
gg_indexed_job() { # tenant name n gpus
  gg_t "$1" apply -f - <<EOF
apiVersion: batch/v1
kind: Job
metadata: {name: $2}
spec:
  completionMode: Indexed
  completions: $3
  parallelism: $3
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: w
        image: busybox
        command: [sleep, "3600"]
        resources: {limits: {nvidia.com/gpu: "$4"}}
EOF
}

gg_phases() { # tenant job: the phases of its pods, sorted, one line
  gg_t "$1" get pods -l job-name="$2" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' |
    sort | tr '\n' ' '
}
gg_all_running() { [ "$(gg_phases "$1" "$2")" = "$(printf 'Running %.0s' $(seq "$3"))" ]; }
gg_none_running() { ! gg_phases "$1" "$2" | grep -q Running; }
gg_count() { [ "$(gg_t "$1" get pods -l job-name="$2" -o name | wc -l)" -eq "$3" ]; }

# The scheduler's reason for a pending pod, as kubectl describe shows it in
# the tenant (its event or its PodScheduled condition).
gg_reason_shown() { # tenant job pattern
  local pod
  pod=$(gg_t "$1" get pods -l job-name="$2" -o jsonpath='{.items[0].metadata.name}')
  [ -n "$pod" ] && gg_t "$1" describe pod "$pod" | grep -Eq "$3"
}

gang_suite_profile() { # profile
  local p=$1 pg
  pg=$(gg_pg_path "$p")
  gg_indexed_job "$p" train 4 1 >/dev/null
  if gg_until 60 gg_all_running "$p" train 4; then
    pass "$p: an Indexed Job of 4 GPU workers runs, all 4 together"
  else
    fail "$p: Indexed Job of 4: pods are: $(gg_phases "$p" train)"
  fi
  if [ -n "$pg" ]; then
    expect "$p: its host group object has minMember 4 and the tenant's label" '^4 gg'"$p"'$' \
      gg_host -n "gg-$p" get "$pg" -o jsonpath='{range .items[*]}{.spec.minMember} {.metadata.labels.kubicle\.dev/tenant}{"\n"}{end}'
  else
    expect "$p: every member names its group and the group's size" '^(4 gg-kueue ){4}$' \
      sh -c "kubectl --kubeconfig $GG_HOST_KCFG -n gg-$p get pods -o jsonpath='{range .items[*]}{.metadata.annotations.kueue\.x-k8s\.io/pod-group-total-count} {.metadata.labels.kueue\.x-k8s\.io/queue-name} {end}'"
  fi
  # 4 more GPU-hungry workers: 12 GPUs, 4 left in the queue
  gg_indexed_job "$p" big 4 3 >/dev/null
  gg_until 30 gg_count "$p" big 4
  # Kueue's reason is on its Workload (QuotaReserved False): the tenant sees
  # it as an event of that reason on the pod
  local why='Unschedulable .*queue over quota'
  [ "$p" != kueue ] ||
    why="ExceedsMaxQuota .*couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor default"
  if gg_until 60 gg_reason_shown "$p" big "$why"; then
    pass "$p: a gang over its queue's room shows the scheduler's reason in the tenant"
  else
    fail "$p: no reason shown: $(gg_t "$p" describe pods -l job-name=big 2>&1 | tail -5)"
  fi
  if [ "$p" = kueue ]; then
    expect "kueue: and in its PodScheduled condition" \
      "^SchedulingGated waiting for Kueue's admission: ExceedsMaxQuota: couldn't assign flavors" \
      gg_t kueue get pods -l job-name=big \
      -o jsonpath='{.items[0].status.conditions[?(@.type=="PodScheduled")].reason} {.items[0].status.conditions[?(@.type=="PodScheduled")].message}'
  fi
  sleep 1 # a pass of the scheduler after the reason: still none of them runs
  if gg_none_running "$p" big; then
    pass "$p: no member of the gang that does not fit runs alone"
  else
    fail "$p: gang over quota partly runs: $(gg_phases "$p" big)"
  fi
  gg_t "$p" delete job train big --wait=false >/dev/null
  if [ -n "$pg" ]; then
    if gg_until 60 sh -c "[ -z \"\$(kubectl --kubeconfig $GG_HOST_KCFG -n gg-$p get $pg -l kubicle.dev/tenant=gg$p -o name)\" ]"; then
      pass "$p: the group objects go with their workloads"
    else
      fail "$p: group objects left: $(gg_host -n "gg-$p" get "$pg" -o name)"
    fi
  fi
}

gg_label_phases() { # tenant selector
  gg_t "$1" get pods -l "$2" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' |
    sort | tr '\n' ' '
}
gg_label_running() { [ "$(gg_label_phases "$1" "$2")" = "$(printf 'Running %.0s' $(seq "$3"))" ]; }
gg_no_groups() { # profile: none of the tenant's group objects left on the host
  [ -z "$(gg_host -n "gg-$1" get "$(gg_pg_path "$1")" -l kubicle.dev/tenant="gg$1" -o name)" ]
}

# Owner kinds beyond the Job: a PyTorchJob (the tenant's CRD, its pods made
# as the training-operator would: examples/training) and a StatefulSet
# starting its pods in Parallel; a group deleted on the host comes back.
gang_suite_kinds() { # profile
  local p=$1 pg ex=$GG_HERE/../../examples/training kc
  pg=$(gg_pg_path "$p")
  kc=$(eval echo "\$GG_${p}_KCFG")
  gg_t "$p" apply -f "$ex/pytorchjob-crd.yaml" >/dev/null
  gg_until 30 gg_t "$p" get pytorchjobs
  gg_t "$p" apply -f "$ex/pytorchjob.yaml" >/dev/null
  bash "$ex/pytorchjob-pods.sh" bert --kubeconfig "$kc"
  if gg_until 60 gg_label_running "$p" training.kubeflow.org/job-name=bert 4; then
    pass "$p: a PyTorchJob of a master and 3 workers runs, all 4 together"
  else
    fail "$p: PyTorchJob: $(gg_label_phases "$p" training.kubeflow.org/job-name=bert)"
  fi
  if [ "$p" = kai ]; then
    expect "kai: its PodGroup has minMember 4 and a subgroup per replica type" \
      '^4 master:1 worker:3 $' gg_host -n gg-kai get "$pg" pg.pytorchjob.bert-x-default-x-ggkai \
      -o jsonpath='{.spec.minMember} {range .spec.subGroups[*]}{.name}:{.minMember} {end}'
    expect "kai: each pod names its subgroup" '^master worker worker worker $' sh -c \
      "kubectl --kubeconfig $GG_HOST_KCFG -n gg-kai get pods -l training.kubeflow.org/job-name=bert -o jsonpath='{range .items[*]}{.metadata.labels.kai\.scheduler/subgroup-name} {end}'"
    gg_host -n gg-kai delete "$pg" pg.pytorchjob.bert-x-default-x-ggkai --wait=false >/dev/null
    sleep 0.5
    if gg_until 30 gg_host -n gg-kai get "$pg" pg.pytorchjob.bert-x-default-x-ggkai; then
      pass "kai: a group deleted on the host while its pods run is made again"
    else
      fail "kai: the deleted group is not made again"
    fi
  fi
  gg_t "$p" apply -f - >/dev/null <<'EOF'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: shards}
spec:
  replicas: 2
  podManagementPolicy: Parallel
  serviceName: shards
  selector: {matchLabels: {app: shards}}
  template:
    metadata: {labels: {app: shards}}
    spec:
      containers:
      - {name: s, image: busybox, command: [sleep, "3600"], resources: {limits: {nvidia.com/gpu: "1"}}}
EOF
  if gg_until 60 gg_label_running "$p" app=shards 2; then
    pass "$p: a Parallel StatefulSet of 2 runs, both together"
  else
    fail "$p: StatefulSet: $(gg_label_phases "$p" app=shards)"
  fi
  gang_suite_scale "$p"
  gg_t "$p" delete statefulset shards --wait=false >/dev/null
  gg_t "$p" delete pytorchjob bert --wait=false >/dev/null
  gg_t "$p" delete pods -l training.kubeflow.org/job-name=bert --wait=false >/dev/null
  if [ -n "$pg" ]; then
    if gg_until 60 gg_no_groups "$p"; then
      pass "$p: the PyTorchJob's and StatefulSet's groups go with them"
    else
      fail "$p: group objects left: $(gg_host -n "gg-$p" get "$pg" -o name)"
    fi
  fi
}

# the group's size on the host: minMember, or under Kueue every member's
# total-count, sorted, one line
gg_group_size() { # profile group selector
  case $1 in
  kueue) gg_host -n gg-kueue get pods -l "$3" \
    -o jsonpath='{range .items[*]}{.metadata.annotations.kueue\.x-k8s\.io/pod-group-total-count}{"\n"}{end}' |
    sort | tr '\n' ' ' ;;
  *) gg_host -n "gg-$1" get "$(gg_pg_path "$1")" "$2" -o jsonpath='{.spec.minMember}' ;;
  esac
}
gg_size_is() { [ "$(gg_group_size "$1" "$2" "$3")" = "$4" ]; }

# Scaling: the StatefulSet "shards" (2, running) to 3 then back to 2; its
# group follows (KAI's grouper and Volcano's job controller update the
# PodGroup; Kueue's members must agree on their count, and a group grown
# past its admitted Workload is stopped and admitted again whole).
gang_suite_scale() { # profile
  local p=$1 grp=pg.statefulset.shards-x-default-x-gg$1 big small
  big=3 small=2
  [ "$p" != kueue ] || big='3 3 3 ' small='2 2 '
  gg_t "$p" scale statefulset shards --replicas 3 >/dev/null
  if gg_until 60 gg_size_is "$p" "$grp" app=shards "$big"; then
    pass "$p: a gang scaled up: its host group follows ($big)"
  else
    fail "$p: scaled to 3, the group says: '$(gg_group_size "$p" "$grp" app=shards)'"
  fi
  if gg_until 90 gg_label_running "$p" app=shards 3; then
    pass "$p: and the 3 members run"
  else
    fail "$p: scaled to 3: $(gg_label_phases "$p" app=shards)"
  fi
  gg_t "$p" scale statefulset shards --replicas 2 >/dev/null
  if gg_until 60 gg_size_is "$p" "$grp" app=shards "$small"; then
    pass "$p: a gang scaled down: its host group follows ($small)"
  else
    fail "$p: scaled to 2, the group says: '$(gg_group_size "$p" "$grp" app=shards)'"
  fi
  if gg_until 60 gg_label_running "$p" app=shards 2; then
    pass "$p: and the 2 left run on"
  else
    fail "$p: scaled to 2: $(gg_label_phases "$p" app=shards)"
  fi
}

# A JobSet (the tenant's CRD): its child Jobs made as the JobSet controller
# makes them, their pods by the tenant's Job controller; the walk goes pod ->
# Job -> JobSet, and the gang is every replicated job's pods.
gang_suite_jobset() { # profile
  local p=$1 pg
  pg=$(gg_pg_path "$p")
  gg_t "$p" apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: jobsets.jobset.x-k8s.io}
spec:
  group: jobset.x-k8s.io
  scope: Namespaced
  names: {plural: jobsets, singular: jobset, kind: JobSet, listKind: JobSetList}
  versions:
  - name: v1alpha2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
  gg_until 30 gg_t "$p" get jobsets
  gg_t "$p" apply -f - >/dev/null <<'EOF'
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
  - {name: leader, replicas: 1, template: {spec: {parallelism: 1, completions: 1}}}
  - {name: workers, replicas: 1, template: {spec: {parallelism: 3, completions: 3}}}
EOF
  local uid rj n
  uid=$(gg_t "$p" get jobset js -o jsonpath='{.metadata.uid}')
  for rj in leader:1 workers:3; do
    n=${rj#*:} rj=${rj%:*}
    gg_t "$p" apply -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: js-$rj-0
  labels: {jobset.sigs.k8s.io/jobset-name: js, jobset.sigs.k8s.io/replicatedjob-name: $rj}
  ownerReferences:
  - {apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: js, uid: "$uid", controller: true}
spec:
  parallelism: $n
  completions: $n
  template:
    metadata:
      labels: {jobset.sigs.k8s.io/jobset-name: js, jobset.sigs.k8s.io/replicatedjob-name: $rj}
    spec:
      restartPolicy: Never
      containers:
      - {name: c, image: busybox, command: [sleep, "3600"], resources: {limits: {nvidia.com/gpu: "1"}}}
EOF
  done
  if gg_until 60 gg_label_running "$p" jobset.sigs.k8s.io/jobset-name=js 4; then
    pass "$p: a JobSet of a leader and 3 workers (pod -> Job -> JobSet) runs, all 4 together"
  else
    fail "$p: JobSet: $(gg_label_phases "$p" jobset.sigs.k8s.io/jobset-name=js)"
  fi
  if [ -n "$pg" ]; then
    expect "$p: one group for the JobSet, of its 4 pods" '^4$' \
      gg_host -n "gg-$p" get "$pg" pg.jobset.0.js-x-default-x-gg$p -o jsonpath='{.spec.minMember}'
  fi
  gg_t "$p" delete jobs js-leader-0 js-workers-0 --wait=false >/dev/null
  gg_t "$p" delete jobset js --wait=false >/dev/null
  if [ -n "$pg" ] && ! gg_until 60 gg_no_groups "$p"; then
    fail "$p: the JobSet's group stays: $(gg_host -n "gg-$p" get "$pg" -o name)"
  fi
}

gg_crd() { # profile plural group kind version
  gg_t "$1" apply -f - >/dev/null <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $2.$3}
spec:
  group: $3
  scope: Namespaced
  names: {plural: $2, singular: ${4,,}, kind: $4, listKind: ${4}List}
  versions:
  - name: $5
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
  gg_until 30 gg_t "$1" get "$2"
}

# A pod of `owner` (kind/name/uid, apiVersion av) with labels, 1 GPU.
gg_owned_pod() { # profile name av kind owner uid labels-json
  gg_t "$1" apply -f - >/dev/null <<EOF
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "$2", "labels": $7,
   "ownerReferences": [{"apiVersion": "$3", "kind": "$4", "name": "$5", "uid": "$6", "controller": true}]},
 "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
   "command": ["sleep", "3600"], "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
EOF
}

# A RayCluster (head and 2 workers, pods made as KubeRay would) and a
# LeaderWorkerSet of size 3 (leader StatefulSet -> leader pod -> worker
# StatefulSet -> workers, the StatefulSets run by the tenant's controller).
gang_suite_ray_lws() { # profile
  local p=$1 pg uid lead
  pg=$(gg_pg_path "$p")
  gg_crd "$p" rayclusters ray.io RayCluster v1
  gg_t "$p" apply -f - >/dev/null <<'EOF'
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec: {workerGroupSpecs: [{groupName: gpu, replicas: 2}]}
EOF
  uid=$(gg_t "$p" get raycluster rc -o jsonpath='{.metadata.uid}')
  gg_owned_pod "$p" rc-head ray.io/v1 RayCluster rc "$uid" '{"ray.io/cluster": "rc", "ray.io/node-type": "head"}'
  gg_owned_pod "$p" rc-gpu-0 ray.io/v1 RayCluster rc "$uid" '{"ray.io/cluster": "rc", "ray.io/group": "gpu"}'
  gg_owned_pod "$p" rc-gpu-1 ray.io/v1 RayCluster rc "$uid" '{"ray.io/cluster": "rc", "ray.io/group": "gpu"}'
  if gg_until 60 gg_label_running "$p" ray.io/cluster=rc 3; then
    pass "$p: a RayCluster of a head and 2 workers runs, all 3 together"
  else
    fail "$p: RayCluster: $(gg_label_phases "$p" ray.io/cluster=rc)"
  fi
  if [ -n "$pg" ]; then
    # a worker more, as KubeRay makes it when the replicas grow: the group follows
    gg_t "$p" patch raycluster rc --type merge \
      -p '{"spec":{"workerGroupSpecs":[{"groupName":"gpu","replicas":3}]}}' >/dev/null
    gg_owned_pod "$p" rc-gpu-2 ray.io/v1 RayCluster rc "$uid" '{"ray.io/cluster": "rc", "ray.io/group": "gpu"}'
    if gg_until 60 gg_size_is "$p" "pg.raycluster.rc-x-default-x-gg$p" "" 4; then
      pass "$p: a RayCluster's workers scaled to 3: its group's minMember follows (4)"
    else
      fail "$p: RayCluster scaled: minMember $(gg_group_size "$p" "pg.raycluster.rc-x-default-x-gg$p")"
    fi
    if gg_until 60 gg_label_running "$p" ray.io/cluster=rc 4; then
      pass "$p: and its 4 pods run"
    else
      fail "$p: RayCluster scaled: $(gg_label_phases "$p" ray.io/cluster=rc)"
    fi
  fi
  gg_t "$p" delete raycluster rc --wait=false >/dev/null
  gg_t "$p" delete pods -l ray.io/cluster=rc --wait=false >/dev/null
  gg_crd "$p" leaderworkersets leaderworkerset.x-k8s.io LeaderWorkerSet v1
  gg_t "$p" apply -f - >/dev/null <<'EOF'
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: llm}
spec: {leaderWorkerTemplate: {size: 3}}
EOF
  uid=$(gg_t "$p" get leaderworkerset llm -o jsonpath='{.metadata.uid}')
  gg_lws_sts "$p" llm 1 leaderworkerset.x-k8s.io/v1 LeaderWorkerSet llm "$uid"
  gg_until 30 gg_t "$p" get pod llm-0
  lead=$(gg_t "$p" get pod llm-0 -o jsonpath='{.metadata.uid}')
  gg_lws_sts "$p" llm-0 2 v1 Pod llm-0 "$lead"
  if gg_until 60 gg_label_running "$p" leaderworkerset.sigs.k8s.io/name=llm 3; then
    pass "$p: a LeaderWorkerSet group of 3 (pod -> StatefulSet -> leader pod -> StatefulSet -> LeaderWorkerSet) runs, all 3 together"
  else
    fail "$p: LeaderWorkerSet: $(gg_label_phases "$p" leaderworkerset.sigs.k8s.io/name=llm)"
  fi
  if [ -n "$pg" ]; then
    expect "$p: one group for the LeaderWorkerSet's group 0, of size 3" '^3$' \
      gg_host -n "gg-$p" get "$pg" pg.leaderworkerset.0.llm-x-default-x-gg$p -o jsonpath='{.spec.minMember}'
  fi
  gg_t "$p" delete statefulset llm-0 llm --wait=false >/dev/null
  gg_t "$p" delete leaderworkerset llm --wait=false >/dev/null
  if [ -n "$pg" ] && ! gg_until 60 gg_no_groups "$p"; then
    fail "$p: the RayCluster's or LeaderWorkerSet's group stays: $(gg_host -n "gg-$p" get "$pg" -o name)"
  fi
}

# A StatefulSet of a LeaderWorkerSet (its pods labelled with the group index;
# Parallel, as the LeaderWorkerSet controller makes them: one by one, a gang
# of them would wait forever).
gg_lws_sts() { # profile name replicas owner-av owner-kind owner-name owner-uid
  gg_t "$1" apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: $2
  ownerReferences:
  - {apiVersion: $4, kind: $5, name: $6, uid: "$7", controller: true}
spec:
  replicas: $3
  podManagementPolicy: Parallel
  serviceName: llm
  selector: {matchLabels: {leaderworkerset.sigs.k8s.io/name: llm, set: $2}}
  template:
    metadata:
      labels: {leaderworkerset.sigs.k8s.io/name: llm, set: $2, leaderworkerset.sigs.k8s.io/group-index: "0"}
    spec:
      containers:
      - {name: c, image: busybox, command: [sleep, "3600"], resources: {limits: {nvidia.com/gpu: "1"}}}
EOF
}

gg_tenant_groups() { # tenant: its group objects anywhere on the host
  gg_host get podgroups.scheduling.run.ai -A -l kubicle.dev/tenant="$1" -o name
}

# kubicle create / delete: the syncer's host Role lets it write PodGroups,
# and a deleted tenant leaves none behind.
gang_suite_delete() {
  local home=$E2E_TMP/gghome
  KUBICLE_HOME=$home "$KUBICLE" create ggdel --host-kubeconfig "$GG_HOST_KCFG" --queue gg-del \
    --scheduler kai --wait >/dev/null 2>&1 || { fail "gang: kubicle create"; return; }
  local kc=$home/tenants/ggdel/kubeconfig
  [ -f "$home/tenants/ggdel/supervisor.pid" ] && E2E_PIDS+=("$(cat "$home/tenants/ggdel/supervisor.pid")")
  kubectl --kubeconfig "$kc" apply -f - >/dev/null <<'EOF'
apiVersion: batch/v1
kind: Job
metadata: {name: pair}
spec:
  completionMode: Indexed
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers: [{name: w, image: busybox, command: [sleep, "3600"]}]
EOF
  if gg_until 60 sh -c "[ -n \"\$(kubectl --kubeconfig $GG_HOST_KCFG get podgroups.scheduling.run.ai -A -l kubicle.dev/tenant=ggdel -o name)\" ]"; then
    pass "kubicle create: the syncer's host Role lets it make the PodGroup"
  else
    fail "kubicle create: no PodGroup: $(tail -3 "$home/tenants/ggdel/server.log" 2>/dev/null)"
  fi
  local sa=system:serviceaccount:kubicle-ggdel:kubicle-ggdel
  expect_eq "kubicle create: the syncer reads Kueue's Workloads and the ResourceQuotas, and writes neither" \
    "yes yes yes no no" sh -c "echo \$(for v in 'watch workloads.kueue.x-k8s.io' 'list resourcequotas' 'get resourcequotas' 'update resourcequotas' 'create workloads.kueue.x-k8s.io'; do kubectl --kubeconfig $GG_HOST_KCFG auth can-i \$v -n kubicle-ggdel --as $sa; done)"
  KUBICLE_HOME=$home "$KUBICLE" delete ggdel >/dev/null 2>&1
  expect_eq "kubicle delete: no group object of the tenant is left on the host" "" \
    gg_tenant_groups ggdel
}

gg_quota_event() { # kubeconfig
  kubectl --kubeconfig "$1" get events \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' |
    grep -q "GangExceedsQuota: Job huge needs 8 GPUs together for its 4 pods, more than the tenant's quota of 4"
}

# Scheduler keys a tenant sets stay off the host; a gang that could never
# fit the tenant's GPU quota is refused with an event.
gang_suite_keys() {
  local hp=evil-x-default-x-ggkai
  gg_t kai run evil --image=busybox --annotations=pod-group-name=someone-elses \
    --labels=kai.scheduler/subgroup-name=x -- sleep 3600 >/dev/null
  gg_until 30 gg_host -n gg-kai get pod $hp
  expect "kai: a tenant's subgroup and skip-podgrouper never reach the host" '^ $' \
    gg_host -n gg-kai get pod $hp \
    -o jsonpath='{.metadata.labels.kai\.scheduler/subgroup-name} {.metadata.annotations.kai\.scheduler/skip-podgrouper}'
  if gg_until 30 sh -c "kubectl --kubeconfig $GG_HOST_KCFG -n gg-kai get pod $hp -o jsonpath='{.metadata.annotations.pod-group-name}' | grep -q '^pg-$hp-'"; then
    pass "kai: a tenant's pod-group-name does not pass: KAI's grouper puts the pod in a group of its own"
  else
    fail "kai: pod-group-name: $(gg_host -n gg-kai get pod $hp -o jsonpath='{.metadata.annotations.pod-group-name}')"
  fi
  gg_t kai delete pod evil --wait=false >/dev/null
  # a tenant whose policy allows 4 GPUs: 4 ranks of 2 could never run
  cat >"$E2E_TMP/gg-policy.yaml" <<'EOF'
name: four-gpus
gpu: {mode: whole}
podSecurity: baseline
quota: {gpu: 4, pods: 7}
EOF
  gg_host create ns gg-small >/dev/null
  start_server ggsmall --host-kubeconfig "$GG_HOST_KCFG" --host-namespace gg-small \
    --tenant ggsmall --queue gg-kai --scheduler kai --policy "$E2E_TMP/gg-policy.yaml" ||
    { fail "gang: tenant with a policy"; return; }
  GG_small_KCFG=$KCFG
  gg_indexed_job small huge 4 2 >/dev/null
  if gg_until 60 gg_quota_event "$GG_small_KCFG"; then
    pass "a gang above the tenant's GPU quota is refused with a clear event"
  else
    fail "no GangExceedsQuota event: $(kubectl --kubeconfig "$GG_small_KCFG" get events 2>&1 | tail -3)"
  fi
  expect_eq "none of its pods reaches the host" "" gg_host -n gg-small get pods -o name
  gang_suite_pods
}

gg_event_seen() { # kubeconfig namespace pattern
  kubectl --kubeconfig "$1" -n "$2" get events \
    -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' | grep -q "$3"
}

# Gangs of more pods than a quota holds: they could never run whole (the
# API server refuses the pods past it) and are refused with an event: the
# policy's pods quota, the tenant's own ResourceQuota, the host namespace's
# (kubicle create's from --max-pods). None of their pods reaches the host.
gang_suite_pods() {
  # the policy's 7 pods: "huge" holds 4 of them, "wide" needs 8 together
  gg_indexed_job small wide 8 0 >/dev/null
  if gg_until 60 gg_event_seen "$GG_small_KCFG" default \
    "GangExceedsQuota: Job wide needs 8 pods together, more than the tenant's policy allows: exceeded quota: kubicle-policy, requested: pods=8, limited: pods=7"; then
    pass "pods: a gang above the policy's pods quota is refused with a clear event"
  else
    fail "pods: no event for the policy's quota: $(kubectl --kubeconfig "$GG_small_KCFG" get events 2>&1 | tail -3)"
  fi
  expect_eq "pods: none of its pods reaches the host" "" gg_host -n gg-small get pods -o name
  # the tenant's ResourceQuota in its namespace
  gg_t kai create ns team >/dev/null
  gg_t kai -n team create quota small --hard=pods=2 >/dev/null
  gg_t kai -n team apply -f - >/dev/null <<'EOF'
apiVersion: batch/v1
kind: Job
metadata: {name: trio}
spec:
  completionMode: Indexed
  completions: 3
  parallelism: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{name: w, image: busybox, command: [sleep, "3600"]}]
EOF
  if gg_until 60 gg_event_seen "$GG_kai_KCFG" team \
    "GangExceedsQuota: Job trio needs 3 pods together, more than the ResourceQuota team/small allows: exceeded quota: small, requested: pods=3, limited: pods=2"; then
    pass "pods: a gang above its namespace's ResourceQuota is refused with a clear event"
  else
    fail "pods: no event for the tenant's quota: $(gg_t kai -n team get events 2>&1 | tail -3)"
  fi
  expect "pods: its pods say why in their PodScheduled condition, as kube's scheduler would" \
    '^False Unschedulable Job trio needs 3 pods together' \
    gg_t kai -n team get pods -l job-name=trio \
    -o jsonpath='{.items[0].status.conditions[?(@.type=="PodScheduled")].status} {.items[0].status.conditions[?(@.type=="PodScheduled")].reason} {.items[0].status.conditions[?(@.type=="PodScheduled")].message}'
  expect_eq "pods: none of its pods reaches the host" "" \
    gg_host -n gg-kai get pods -l kubicle.dev/namespace=team -o name
  gg_t kai delete ns team --wait=false >/dev/null
  # the host namespace's quota (kubicle create writes it from --max-pods)
  gg_host create ns gg-pods >/dev/null
  gg_host -n gg-pods create quota kubicle-ggpods --hard=pods=2 >/dev/null
  start_server ggpods --host-kubeconfig "$GG_HOST_KCFG" --host-namespace gg-pods \
    --tenant ggpods --queue gg-kai --scheduler kai || { fail "gang: tenant ggpods"; return; }
  GG_pods_KCFG=$KCFG
  gg_indexed_job pods trio 3 0 >/dev/null
  if gg_until 60 gg_event_seen "$GG_pods_KCFG" default \
    "GangExceedsQuota: Job trio needs 3 pods together, more than the host namespace's ResourceQuota kubicle-ggpods allows"; then
    pass "pods: a gang above the host namespace's pods quota is refused with a clear event"
  else
    fail "pods: no event for the host's quota: $(kubectl --kubeconfig "$GG_pods_KCFG" get events 2>&1 | tail -3)"
  fi
  expect_eq "pods: none of its pods reaches the host" "" gg_host -n gg-pods get pods -o name
  gg_indexed_job pods duo 2 0 >/dev/null
  if gg_until 60 gg_all_running pods duo 2; then
    pass "pods: a gang the host's quota holds runs"
  else
    fail "pods: a gang of 2 under a host quota of 2: $(gg_phases pods duo)"
  fi
  # the host's quotas are watched (read once per change, not at each resync)
  gg_host -n gg-pods patch quota kubicle-ggpods --type merge -p '{"spec":{"hard":{"pods":"5"}}}' >/dev/null
  if gg_until 90 gg_all_running pods trio 3; then
    pass "pods: once the host's quota is raised, the gang it refused runs"
  else
    fail "pods: trio after the host quota went to 5: $(gg_phases pods trio)"
  fi
}

gg_group_uid() { gg_host -n gg-kai get podgroups.scheduling.run.ai "$1" -o jsonpath='{.metadata.uid}'; }

# After a crash: the syncer finds its groups again (members held, nothing
# made twice) and sweeps one of its groups that has no member left; a
# group with another tenant's label is never touched.
gang_suite_restart() {
  local pg=podgroups.scheduling.run.ai uid
  gg_indexed_job kai keep 2 1 >/dev/null
  gg_until 60 gg_all_running kai keep 2
  uid=$(gg_group_uid pg.job.keep-x-default-x-ggkai)
  gg_host apply -f - >/dev/null <<'EOF'
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata:
  name: pg.job.gone-x-default-x-ggkai
  namespace: gg-kai
  labels: {kubicle.dev/tenant: ggkai, kubicle.dev/namespace: default}
  annotations: {kubicle.dev/namespace: default, kubicle.dev/name: pg.job.gone,
    kubicle.dev/uid: u-gone, kubicle.dev/kind: PodGroup}
spec: {minMember: 2, queue: gg-kai}
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata:
  name: pg.job.other-x-default-x-ggkai
  namespace: gg-kai
  labels: {kubicle.dev/tenant: someone-else}
spec: {minMember: 2, queue: gg-kai}
EOF
  kill -9 "$GG_kai_PID"
  wait "$GG_kai_PID" 2>/dev/null
  start_server ggkai --host-kubeconfig "$GG_HOST_KCFG" --host-namespace gg-kai \
    --tenant ggkai --queue gg-kai --scheduler kai || { fail "gang: restart"; return; }
  GG_kai_KCFG=$KCFG GG_kai_PID=$SERVER_PID
  # the resync runs at start and every 30 s
  if gg_until 75 sh -c "! kubectl --kubeconfig $GG_HOST_KCFG -n gg-kai get $pg pg.job.gone-x-default-x-ggkai"; then
    pass "kai: a group of ours left without members (a crash) is swept"
  else
    fail "kai: the memberless group is still there"
  fi
  expect "kai: another tenant's group is left alone" 'pg.job.other' \
    gg_host -n gg-kai get $pg pg.job.other-x-default-x-ggkai -o name
  expect_eq "kai: after kill -9 and restart, a running gang keeps its group" "$uid" \
    gg_group_uid pg.job.keep-x-default-x-ggkai
  expect "kai: and its pods run on" '^Running Running $' gg_phases kai keep
  gg_t kai delete job keep --wait=false >/dev/null
  if gg_until 60 sh -c "! kubectl --kubeconfig $GG_HOST_KCFG -n gg-kai get $pg pg.job.keep-x-default-x-ggkai"; then
    pass "kai: that group still goes with its workload"
  else
    fail "kai: the group of the deleted Job stays"
  fi
  gg_host -n gg-kai delete $pg pg.job.other-x-default-x-ggkai >/dev/null
}

gang_suite() {
  gang_suite_setup || { fail "gang: setup"; return; }
  local p
  for p in "${GG_PROFILES[@]}"; do
    gang_suite_profile "$p"
    gang_suite_kinds "$p"
    gang_suite_jobset "$p"
    gang_suite_ray_lws "$p"
  done
  [[ " ${GG_PROFILES[*]} " != *" kai "* ]] || { gang_suite_keys; gang_suite_restart; gang_suite_delete; }
}

