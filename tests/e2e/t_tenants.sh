# SPDX-License-Identifier: Apache-2.0
# Tenant lifecycle end to end (cmd/tenant.c, supervise.c, hostsetup.c):
# kubicle create/list/kubeconfig/stop/start/delete/snapshot/restore against a
# host stand-in (kubicle-standin, tests/host) with the KAI-like test scheduler, and
# the tenants' policies and queues seen from kubectl. Sourced by run.sh.

tn() { "$KUBICLE" "$@"; }
tn_k() { local t=$1; shift; kubectl --kubeconfig "$KUBICLE_HOME/tenants/$t/kubeconfig" "$@"; }
tn_h() { kubectl --kubeconfig "$TN_HOST_KCFG" "$@"; }

# Host objects still labelled with tenant $1 (namespaced and cluster-wide).
tn_host_left() {
  { tn_h get pods,services,persistentvolumeclaims,configmaps,secrets,serviceaccounts,roles,rolebindings -A \
      -l kubicle.dev/tenant="$1" -o name
    tn_h get clusterrolebindings,queues,namespaces -l kubicle.dev/tenant="$1" -o name
  } 2>&1 | grep -v '^No resources found' | sort
}

# Keeps a tenant's server log for the sanitizer check before it is deleted,
# and remembers its supervisor so a failed run does not leave it behind.
tn_keep() {
  local d=$KUBICLE_HOME/tenants/$1
  [ -f "$d/server.log" ] && cp "$d/server.log" "$E2E_TMP/tenant-$1.log"
  [ -f "$d/supervisor.pid" ] && E2E_PIDS+=("$(cat "$d/supervisor.pid")")
  return 0
}

# Host claims of tenant $1.
tn_host_claims() {
  tn_h get pvc -A -l kubicle.dev/tenant="$1" -o name 2>&1 | grep -v '^No resources found'
}

tn_host_line() { local t; for t; do tn_host_left "$t"; done | tr '\n' ' '; }
tn_gone() { [ ! -d "$KUBICLE_HOME/tenants/$1" ]; }
tn_yesno() { "$@" && echo yes || echo no; }
tn_field() { # TENANT FIELD: one field of `kubicle list NAME -o json`
  "$KUBICLE" list "$1" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0][sys.argv[1]])' "$2"
}

tn_until() { # SECONDS CMD... (at least 30 s, as sy_until)
  local end=$((SECONDS + ($1 < 30 ? 30 : $1))); shift
  local t0=$SECONDS
  while [ $SECONDS -lt $end ]; do "$@" >/dev/null 2>&1 && return 0; e2e_nap $t0; done
  "$@" >/dev/null 2>&1
}

tn_pods_is() { [ "$(tn_field "$1" pods)" = "$2" ]; } # TENANT N

tn_pod() { # NAME ANNOTATIONS RESOURCES [PRIVILEGED]
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  annotations: {$2}
spec:
  schedulerName: kai-scheduler
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: busybox
    command: [sleep, "3600"]
    resources: {limits: {$3}}
    securityContext: {allowPrivilegeEscalation: ${4:-false}, privileged: ${4:-false}, capabilities: {drop: [ALL]}}
YAML
}

tn_phase() { tn_k "$1" get pod "$2" -o jsonpath='{.status.phase}'; }
tn_running() { [ "$(tn_phase "$1" "$2")" = Running ]; }

tenants_setup() {
  export KUBICLE_HOME=$E2E_TMP/home
  start_server tnhost --standin-exec || return 1
  TN_HOST_KCFG=$KCFG
  start_scheduler tnhost
  cat >"$E2E_TMP/team-b.yaml" <<'YAML'
name: team-b
gpu: {mode: fractional}
podSecurity: baseline
quota: {gpu: 1, pods: 10}
YAML
}

tenants_create() {
  echo "== tenants: create, list, kubeconfig"
  local out
  out=$(tn create ta --host-kubeconfig "$TN_HOST_KCFG" --queue qa --gpus 2 --policy untrusted \
    --wait -o json 2>&1)
  tn_keep ta
  if python3 -c 'import json,sys; o=json.loads(sys.argv[1]); assert o["name"]=="ta" and o["endpoint"].startswith("https://127.0.0.1:") and o["kubeconfig"].endswith("/tenants/ta/kubeconfig") and o["queue"]=="qa" and o["policy"]=="untrusted"' "$out"; then
    pass "create -o json gives name, endpoint, kubeconfig, queue and policy"
  else fail "create -o json: $out"; fi
  expect "create: the tenant answers kubectl at once" 'default' tn_k ta get ns
  expect "create: text output names the kubeconfig" "kubeconfig: $KUBICLE_HOME/tenants/tb/kubeconfig" \
    tn create tb --host-kubeconfig "$TN_HOST_KCFG" --queue qb --policy "$E2E_TMP/team-b.yaml" --wait
  tn_keep tb
  expect "create of a running tenant is idempotent" 'tenant ta is running' tn create ta --wait
  expect_rc "create with a bad name fails clearly" 2 'invalid name "Bad_Name"' tn create Bad_Name
  expect_rc "create with an unknown policy fails clearly" 1 'policy' tn create tc --policy nosuch
  [ -d "$KUBICLE_HOME/tenants/tc" ] && fail "a failed create left its folder" ||
    pass "a failed create leaves nothing behind"
  expect "host: namespace, ServiceAccount, Role, RoleBinding, ClusterRoleBinding, Queue of ta" \
    'clusterrolebinding.*/kubicle-ta-nodes.*namespace/kubicle-ta.*queue.*/qa.*role.*/kubicle-ta.*rolebinding.*/kubicle-ta.*serviceaccount/kubicle-ta' \
    tn_host_line ta
  expect_eq "host: the Queue carries the GPU quota and limit" "2 2" \
    tn_h get queue qa -o jsonpath='{.spec.resources.gpu.quota} {.spec.resources.gpu.limit}'
  expect_eq "host: the syncer's kubeconfig names the ServiceAccount's token file" \
    "kubicle-ta host-token" python3 -c 'import json,sys; u=json.load(open(sys.argv[1]))["users"][0]; print(u["name"], u["user"]["tokenFile"])' \
    "$KUBICLE_HOME/tenants/ta/host.kubeconfig"
  expect_eq "host: that token is the ServiceAccount's" "system:serviceaccount:kubicle-ta:kubicle-ta" \
    kubectl --kubeconfig "$KUBICLE_HOME/tenants/ta/host.kubeconfig" auth whoami \
    -o jsonpath='{.status.userInfo.username}'
  expect_eq "host: the syncer's account may create pods in its namespace" "yes" \
    tn_h auth can-i create pods -n kubicle-ta --as system:serviceaccount:kubicle-ta:kubicle-ta
  expect_eq "host: ... and manage Services there" "yes yes" \
    sh -c "echo \$(kubectl --kubeconfig $TN_HOST_KCFG auth can-i create services -n kubicle-ta --as system:serviceaccount:kubicle-ta:kubicle-ta) \$(kubectl --kubeconfig $TN_HOST_KCFG auth can-i patch services -n kubicle-ta --as system:serviceaccount:kubicle-ta:kubicle-ta)"
  expect_eq "host: ... and not in another namespace" "no" \
    tn_h auth can-i create pods -n default --as system:serviceaccount:kubicle-ta:kubicle-ta
  expect "list shows both tenants with state, endpoint, queue and policy" \
    'ta +Running +https://127.0.0.1:[0-9]+ +qa +untrusted' tn list
  expect "list: tb with its policy file" 'tb +Running .* qb ' tn list
  expect_rc "list of a missing tenant fails" 1 'no tenant nosuch' tn list nosuch
  expect "list -o json is a TenantList" '"kind": "TenantList"' tn list -o json
  expect "kubeconfig NAME prints the admin kubeconfig" 'client-certificate-data' tn kubeconfig ta
  tn kubeconfig ta -o json >"$E2E_TMP/ta.json"
  expect_eq "kubeconfig NAME -o json is a kubeconfig kubectl reads" "namespace/default" \
    kubectl --kubeconfig "$E2E_TMP/ta.json" get ns default -o name
  tn kubeconfig ta --user alice --group dev >"$E2E_TMP/alice.kcfg"
  expect_eq "kubeconfig NAME --user: a named user, RBAC applies" "alice" \
    kubectl --kubeconfig "$E2E_TMP/alice.kcfg" auth whoami -o jsonpath='{.status.userInfo.username}'
  expect_fail "kubeconfig NAME --user: no rights until granted" 'forbidden' \
    kubectl --kubeconfig "$E2E_TMP/alice.kcfg" get pods
}

tenants_policies() {
  echo "== tenants: policies and queues"
  expect_fail "untrusted: a fractional GPU pod is refused with the policy message" \
    'pods "frac" is forbidden: policy untrusted: gpu-fraction is not allowed; request whole nvidia.com/gpu' \
    tn_k ta apply -f <(tn_pod frac 'gpu-fraction: "0.5"' '')
  expect "untrusted: a whole-GPU pod is admitted" 'pod/whole created' \
    tn_k ta apply -f <(tn_pod whole '' 'nvidia.com/gpu: 1')
  tn_until 15 tn_running ta whole
  expect_eq "untrusted: the whole-GPU pod runs" "Running" tn_phase ta whole
  expect_eq "kubectl exec reaches the host pod with the tenant's own host RBAC" "in whole" \
    tn_k ta exec whole -- echo in whole
  expect_eq "untrusted: its host pod carries the tenant's queue" "qa kai-scheduler" \
    tn_h -n kubicle-ta get pod whole-x-default-x-ta \
    -o jsonpath='{.metadata.labels.kai\.scheduler/queue} {.spec.schedulerName}'
  expect_fail "restricted: a privileged pod is refused" \
    'forbidden: policy untrusted: violates PodSecurity "restricted:latest": privileged' \
    tn_k ta apply -f <(tn_pod priv '' '' true)
  expect "trusted tenant: a fractional GPU pod is admitted" 'pod/f1 created' \
    tn_k tb apply -f <(tn_pod f1 'gpu-fraction: "0.5"' '')
  tn_until 15 tn_running tb f1
  expect_eq "trusted tenant: the fractional pod runs" "Running" tn_phase tb f1
  expect_eq "trusted tenant: its host pod carries its own queue" "qb" \
    tn_h -n kubicle-tb get pod f1-x-default-x-tb -o jsonpath='{.metadata.labels.kai\.scheduler/queue}'
  tn_k tb apply -f <(tn_pod f2 'gpu-fraction: "0.5"' '') >/dev/null
  expect_fail "quota exhausted: the next pod is refused, naming the quota" \
    'pods "f3" is forbidden: policy team-b: exceeded quota: gpu, requested: 0.5, used: 1, limited: 1' \
    tn_k tb apply -f <(tn_pod f3 'gpu-fraction: "0.5"' '')
  tn_until 10 tn_pods_is tb 2 # (it polled a value read once before)
  expect_until_match "list counts the tenant's pods and GPUs in use" 30 'tb +Running .* +2 +1 ' tn list
}

tenants_lifecycle() {
  echo "== tenants: stop, start, kill -9, snapshot, restore"
  tn_k ta apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: store}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
YAML
  tn_until 10 tn_h -n kubicle-ta get pvc store-x-default-x-ta
  tn_until 10 tn_h -n kubicle-ta get svc web-x-default-x-ta
  expect_eq "the syncer's host Role lets it make the tenant's Services" "service/web-x-default-x-ta" \
    tn_h -n kubicle-ta get svc web-x-default-x-ta -o name
  expect "stop removes the tenant's pods from the host" 'tenant ta stopped \(1 pod' tn stop ta
  expect_eq "stop: the tenant's host Services are removed too (they hold no data)" "" \
    tn_h -n kubicle-ta get svc -l kubicle.dev/tenant=ta -o name
  expect_eq "stop: the tenant's claims stay on the host (their volumes hold its data)" \
    "persistentvolumeclaim/store-x-default-x-ta" tn_host_claims ta
  expect_eq "stop: no pod of ta left on the host" "" \
    tn_h -n kubicle-ta get pods -l kubicle.dev/tenant=ta -o name
  expect "stop: list says Stopped" 'ta +Stopped' tn list ta
  expect "stop of a stopped tenant is fine" 'stopped' tn stop ta
  # as if ta had been made by a Kubicle without exec: its host Role lacks the rule
  tn_h -n kubicle-ta patch role kubicle-ta --type json \
    -p '[{"op":"test","path":"/rules/2/resources/0","value":"pods/exec"},{"op":"remove","path":"/rules/2"}]' >/dev/null
  tn_h -n kubicle-ta delete rolebinding kubicle-ta >/dev/null
  expect_eq "(an old tenant's host Role: no pods/exec)" "no" \
    tn_h auth can-i create pods/exec -n kubicle-ta --as system:serviceaccount:kubicle-ta:kubicle-ta
  local tok
  tok=$(cat "$KUBICLE_HOME/tenants/ta/host-token")
  touch -d '2 days ago' "$KUBICLE_HOME/tenants/ta/host-token"
  expect "start brings it back" 'tenant ta is running' tn start ta --wait
  if [ "$(cat "$KUBICLE_HOME/tenants/ta/host-token")" != "$tok" ] &&
    grep -q 'host token renewed' "$KUBICLE_HOME/tenants/ta/server.log"; then
    pass "start: a host token past 80 % of its life is renewed by the supervisor"
  else fail "start: the old host token was not renewed"; fi
  tn_keep ta
  tn_until 15 tn_h -n kubicle-ta get pod whole-x-default-x-ta
  expect "start: the pod is queued again on the host" 'whole-x-default-x-ta' \
    tn_h -n kubicle-ta get pods -o name
  tn_until 15 tn_running ta whole
  expect_eq "start: the tenant's pod runs again" "Running" tn_phase ta whole
  expect_eq "start: the tenant's claim and its host claim are still there" \
    "persistentvolumeclaim/store persistentvolumeclaim/store-x-default-x-ta" \
    bash -c "echo \$(kubectl --kubeconfig $KUBICLE_HOME/tenants/ta/kubeconfig get pvc store -o name) \$(kubectl --kubeconfig $TN_HOST_KCFG -n kubicle-ta get pvc -o name)"
  expect_eq "start: the host Role has this version's rules again (pods/exec)" "yes" \
    tn_h auth can-i create pods/exec -n kubicle-ta --as system:serviceaccount:kubicle-ta:kubicle-ta
  tn_until 15 tn_h -n kubicle-ta get svc web-x-default-x-ta
  expect_eq "start: the tenant's Service is on the host again" "service/web-x-default-x-ta" \
    tn_h -n kubicle-ta get svc web-x-default-x-ta -o name
  expect_eq "start: a deleted host RoleBinding is made again" "rolebinding.rbac.authorization.k8s.io/kubicle-ta" \
    tn_h -n kubicle-ta get rolebinding kubicle-ta -o name
  expect_eq "start: kubectl exec through the refreshed tenant" "again" tn_k ta exec whole -- echo again
  tn_h -n kubicle-tb patch role kubicle-tb --type json -p '[{"op":"remove","path":"/rules/2"}]' >/dev/null
  expect "create of an existing tenant also refreshes its host objects" 'tenant tb is running' \
    tn create tb --wait
  expect_eq "... its Role has pods/exec again" "yes" \
    tn_h auth can-i create pods/exec -n kubicle-tb --as system:serviceaccount:kubicle-tb:kubicle-tb
  local rec=$KUBICLE_HOME/tenants/tb/tenant.json
  cp "$rec" "$E2E_TMP/tb-tenant.json"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["hostKubeconfig"]="/nonexistent/kubeconfig"; json.dump(r,open(sys.argv[1],"w"))' "$rec"
  expect "a host that cannot be reached: a warning, and the tenant still runs" \
    'tb: host objects not refreshed: host kubeconfig /nonexistent/kubeconfig' \
    tn create tb --wait
  cp "$E2E_TMP/tb-tenant.json" "$rec"

  local old new
  old=$(cat "$KUBICLE_HOME/tenants/ta/server.pid")
  kill -9 "$old"
  tn_until 10 bash -c "p=\$(cat $KUBICLE_HOME/tenants/ta/server.pid); [ \"\$p\" != $old ] && kubectl --kubeconfig $KUBICLE_HOME/tenants/ta/kubeconfig get ns default"
  new=$(cat "$KUBICLE_HOME/tenants/ta/server.pid")
  if [ "$new" != "$old" ] && tn_k ta get pod whole >/dev/null 2>&1; then
    pass "kill -9 of the server: the supervisor restarts it on the same port, data intact"
  else fail "kill -9: server $old -> $new, not back"; fi
  expect "kill -9: the restart is in the log" 'killed by signal 9.*restarting' \
    cat "$KUBICLE_HOME/tenants/ta/server.log"

  local sup
  sup=$(cat "$KUBICLE_HOME/tenants/ta/supervisor.pid")
  kill -9 "$sup"
  tn_until 10 bash -c "! kill -0 $new 2>/dev/null"
  expect "kill -9 of the supervisor takes its server down; list says Dead" 'ta +Dead' tn list ta
  expect "start --all brings back every tenant that should run" '1 tenant\(s\) started' \
    tn start --all --wait
  tn_keep ta
  expect "start --all: the tenant answers again" 'pod/whole' tn_k ta get pod whole -o name

  tn_k ta create configmap snap1 --from-literal=k=v >/dev/null
  tn_k ta create namespace team >/dev/null
  tn_k ta -n team create secret generic s1 --from-literal=a=b >/dev/null
  expect "snapshot of a running tenant" 'written to' tn snapshot ta "$E2E_TMP/ta.snap"
  tn_k ta delete configmap snap1 >/dev/null
  expect "restore makes a new tenant from the snapshot" 'tenant tr is running' \
    tn restore tr "$E2E_TMP/ta.snap" --host-kubeconfig "$TN_HOST_KCFG" --queue qa --wait
  tn_keep tr
  local want got
  want=$(sort <<<"$(kubectl --kubeconfig "$E2E_TMP/home/tenants/ta/kubeconfig" get cm,secret,pods,ns -A -o name)
configmap/snap1")
  got=$(tn_k tr get cm,secret,pods,ns -A -o name | sort)
  if [ "$want" = "$got" ]; then pass "restore brings back every object of the snapshot"
  else fail "restore: wanted [$want] got [$got]"; fi
  expect_eq "restore: the policy comes with the snapshot" "untrusted" \
    tn_field tr policy
  tn_until 15 tn_running tr whole
  expect_eq "restore: the restored pod runs on the host under the new tenant" "Running" tn_phase tr whole
  expect_rc "restore onto an existing tenant fails" 1 'already exists' tn restore tr "$E2E_TMP/ta.snap"
  expect_rc "restore of a file that is not a snapshot fails" 1 'not a Kubicle snapshot' \
    tn restore tx "$E2E_TMP/team-b.yaml"
}

tenants_delete() {
  echo "== tenants: delete, TTL, CI"
  tn_keep ta; tn_keep tb; tn_keep tr
  expect "delete removes the tenant" 'tenant tr deleted' tn delete tr
  expect_eq "delete: no host object with the tenant's label is left" "" tn_host_left tr
  expect_eq "delete: its folder is gone" "yes" tn_yesno tn_gone tr
  expect "delete: the shared Queue it did not make stays" 'qa' tn_h get queue qa -o name
  expect_rc "delete of a missing tenant fails" 1 'tenant nosuch not found' tn delete nosuch
  expect_eq "delete --ignore-not-found of a missing tenant succeeds quietly" "" \
    tn delete nosuch --ignore-not-found
  expect_eq "(ta's claim is on the host before its delete)" \
    "persistentvolumeclaim/store-x-default-x-ta" tn_host_claims ta
  tn delete ta >/dev/null && tn delete tb >/dev/null
  expect_eq "delete: the tenant's host claims are removed" "" tn_host_claims ta
  expect_eq "delete: nothing of ta or tb stays on the host" "" \
    tn_host_line ta tb

  tn create tt --host-kubeconfig "$TN_HOST_KCFG" --ttl 3s --wait >/dev/null
  tn_keep tt
  tn_k tt run p --image=busybox >/dev/null
  tn_until 5 tn_h -n kubicle-tt get pod p-x-default-x-tt
  tn_until 20 tn_gone tt
  expect_eq "TTL: the tenant deleted itself" "yes" tn_yesno tn_gone tt
  expect_eq "TTL: its host objects are gone" "" tn_host_left tt

  local i ok=0 jobs=()
  for i in $(seq 20); do
    # 20 servers start at once (under ASan on 2 cores too): allow them time;
    # how fast a create is, bench/tenants.sh measures
    (tn create "ci-$i" --ttl 30m --wait --timeout 120 -o json >"$E2E_TMP/ci-$i.json" 2>&1) &
    jobs+=("$!")
  done
  wait "${jobs[@]}"
  for i in $(seq 20); do
    tn_keep "ci-$i"
    if python3 -c 'import json,sys; json.load(open(sys.argv[1]))["endpoint"]' "$E2E_TMP/ci-$i.json" 2>/dev/null &&
      tn_k "ci-$i" get ns default >/dev/null 2>&1; then ok=$((ok + 1))
    else echo "ci-$i: $(head -c 400 "$E2E_TMP/ci-$i.json")"; fi
  done
  expect_eq "CI: 20 tenants created in parallel all answer" "20" echo "$ok"
  local rows
  rows=$("$KUBICLE" list)
  if [ "$(grep -cE '^ci-[0-9]+ +Running .* [0-9]+m$' <<<"$rows")" = 20 ]; then
    pass "CI: list shows 20 running with their time left"
  else fail "CI: list: $rows"; fi
  jobs=()
  for i in $(seq 20); do tn delete "ci-$i" >/dev/null & jobs+=("$!"); done
  wait "${jobs[@]}"
  expect_eq "CI: all 20 deleted" "0" bash -c "ls $KUBICLE_HOME/tenants | wc -l"
}

# The host objects of tenant $1 in host namespace $2: "ns/name" of each
# (their annotations), sorted, on one line.
tn_host_pods_of() {
  tn_h -n "$2" get pods -l kubicle.dev/tenant="$1" \
    -o jsonpath='{range .items[*]}{.metadata.annotations.kubicle\.dev/namespace}/{.metadata.annotations.kubicle\.dev/name}{"\n"}{end}' |
    sort | tr '\n' ' ' | sed 's/ $//'
}

# Issue 22: names that never collide, syncers that touch only their own
# objects, one tenant per host namespace.
tenants_isolation() {
  echo "== tenants: isolation on one host namespace"
  local hns=kubicle-shared out
  expect_rc "create into another tenant's host namespace fails, naming it" 1 \
    'host namespace kubicle-ta is tenant ta.s .*--shared-host-namespace' \
    tn create tz --host-kubeconfig "$TN_HOST_KCFG" --host-namespace kubicle-ta
  expect_eq "(that failed create left no folder)" "yes" tn_yesno tn_gone tz
  # a namespace holding another tenant's objects, not made by this home
  tn_h create ns planted >/dev/null
  tn_h -n planted create configmap left -o name >/dev/null
  tn_h -n planted label configmap left kubicle.dev/tenant=zz >/dev/null
  expect_rc "create into a namespace with another tenant's objects fails, naming it" 1 \
    'host namespace planted holds objects of tenant zz' \
    tn create tz --host-kubeconfig "$TN_HOST_KCFG" --host-namespace planted
  expect_rc "a tenant name ending like a host token Secret is refused" 2 'token-' \
    tn create a-token-0123456789abcdef
  tn create tu --host-kubeconfig "$TN_HOST_KCFG" --host-namespace "$hns" --queue qa --wait >/dev/null
  tn_keep tu
  expect_rc "a second tenant in tu's host namespace is refused" 1 'tenant tu' \
    tn create x-tu --host-kubeconfig "$TN_HOST_KCFG" --host-namespace "$hns"
  expect "... and made with --shared-host-namespace" 'tenant x-tu is running' \
    tn create x-tu --host-kubeconfig "$TN_HOST_KCFG" --host-namespace "$hns" --queue qa \
    --shared-host-namespace --wait
  tn_keep x-tu
  # a/b-x/tu and a/b/x-tu read "a-x-b-x-x-tu" with the old rule; so did
  # b/a-x and x-b/a inside tu
  tn_k tu create ns b-x >/dev/null; tn_k tu create ns b >/dev/null; tn_k tu create ns x-b >/dev/null
  tn_k x-tu create ns b >/dev/null
  tn_k tu -n b-x run a --image=busybox >/dev/null
  tn_k tu -n b run a-x --image=busybox >/dev/null
  tn_k tu -n x-b run a --image=busybox >/dev/null
  tn_k x-tu -n b run a --image=busybox >/dev/null
  expect_until "host: tu's three pods, each its own host pod" "b-x/a b/a-x x-b/a" \
    tn_host_pods_of tu "$hns"
  expect_until "host: x-tu's pod b/a has its own host pod" "b/a" tn_host_pods_of x-tu "$hns"
  expect_eq "host: four host pods under four names" "4" \
    sh -c "kubectl --kubeconfig $TN_HOST_KCFG -n $hns get pods -o name | grep -c ."
  tn_k tu -n b-x delete pod a --wait=false >/dev/null
  expect_until "deleting tu's b-x/a removes its host pod only" "b/a-x x-b/a" tn_host_pods_of tu "$hns"
  expect_eq "... x-tu's b/a is still on the host" "b/a" tn_host_pods_of x-tu "$hns"
  tn_k tu -n x-b delete pod a --wait=false >/dev/null
  expect_until "deleting tu's x-b/a leaves b/a-x" "b/a-x" tn_host_pods_of tu "$hns"
  expect_eq "... and x-tu's b/a" "b/a" tn_host_pods_of x-tu "$hns"
  # planted host objects under tu's names, with another tenant's labels
  tn_h -n "$hns" create service clusterip web-x-default-x-tu --tcp=80:80 >/dev/null
  tn_h -n "$hns" label service web-x-default-x-tu kubicle.dev/tenant=x-tu >/dev/null
  tn_h -n "$hns" annotate service web-x-default-x-tu kubicle.dev/namespace=default \
    kubicle.dev/name=web kubicle.dev/uid=other kubicle.dev/kind=Service >/dev/null
  tn_h -n "$hns" run p-x-default-x-tu --image=busybox -l kubicle.dev/tenant=x-tu,keep=me >/dev/null
  tn_k tu create service clusterip web --tcp=8080:8080 >/dev/null
  tn_k tu run p --image=busybox >/dev/null
  expect_until_match "a planted Service of another tenant: Warning HostNameConflict on the tenant Service" 30 \
    'Warning +HostNameConflict +service/web .*tenant x-tu' tn_k tu get events -n default
  expect_until_match "a planted pod of another tenant: Warning HostNameConflict on the tenant pod" 30 \
    'Warning +HostNameConflict +pod/p .*tenant x-tu' tn_k tu get events -n default
  expect_eq "the planted Service is not updated" "80 x-tu other" \
    tn_h -n "$hns" get service web-x-default-x-tu \
    -o jsonpath='{.spec.ports[0].port} {.metadata.labels.kubicle\.dev/tenant} {.metadata.annotations.kubicle\.dev/uid}'
  expect_eq "the planted pod is not updated" "x-tu me" \
    tn_h -n "$hns" get pod p-x-default-x-tu -o jsonpath='{.metadata.labels.kubicle\.dev/tenant} {.metadata.labels.keep}'
  tn_k tu delete service web >/dev/null
  tn_k tu delete pod p --wait=false >/dev/null
  sleep 2 # a delete would have been sent at once
  expect_eq "the planted Service and pod are not deleted with tu's" \
    "pod/p-x-default-x-tu service/web-x-default-x-tu" \
    sh -c "kubectl --kubeconfig $TN_HOST_KCFG -n $hns get pod/p-x-default-x-tu service/web-x-default-x-tu -o name | tr '\n' ' ' | sed 's/ \$//'"
  tn_h -n "$hns" delete pod p-x-default-x-tu service web-x-default-x-tu --wait=false >/dev/null 2>&1
  tn_h delete ns planted --wait=false >/dev/null 2>&1
  tn delete x-tu >/dev/null
  expect_eq "delete of x-tu leaves tu's host pod" "b/a-x" tn_host_pods_of tu "$hns"
  tn delete tu >/dev/null
  tn_h delete ns "$hns" --wait=false >/dev/null 2>&1
}

tenants_suite() {
  tenants_setup || { fail "tenants: host stand-in did not start"; return; }
  tenants_create
  tenants_policies
  tenants_isolation
  tenants_lifecycle
  tenants_delete
}
