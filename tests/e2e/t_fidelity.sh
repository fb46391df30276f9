# SPDX-License-Identifier: Apache-2.0
# API fidelity against kube-apiserver 1.33 where real tools noticed the
# difference (issue 24): kubectl's move from client-side to server-side
# apply, managedFields a client writes, a co-owner's apply, PUT with
# resourceVersion "0", defaults, pretty JSON and kube's error messages.
# Real kubectl 1.33 (and 1.27 where it behaves differently). Sourced by run.sh.

# fid_cm NAME DATA...: a ConfigMap manifest in namespace fid ("k: v" pairs).
fid_cm() {
  local name=$1 kv; shift
  printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: fid}\ndata:\n' "$name"
  for kv in "$@"; do printf '  %s\n' "$kv"; done
}

# fid_migrate KUBECTL NAME: client-side apply, then server-side apply with a
# changed value (kubectl upgrades the managers), then one that drops a key.
fid_migrate() {
  local k=$1 name=$2 d=$E2E_TMP/fid
  local K=("$k" --kubeconfig "$KCFG")
  fid_cm "$name" 'a: "1"' 'b: "2"' >"$d/$name-1.yaml"
  fid_cm "$name" 'a: "10"' 'b: "2"' >"$d/$name-2.yaml"
  fid_cm "$name" 'a: "10"' >"$d/$name-3.yaml"
  expect "$name: client-side apply" "configmap/$name created" "${K[@]}" apply -f "$d/$name-1.yaml"
  expect "$name: then server-side apply with a changed value, no conflict" \
    "configmap/$name serverside-applied" "${K[@]}" apply --server-side -f "$d/$name-2.yaml"
  expect_eq "$name: the value is applied, kubectl's Apply entry owns the data" '10 kubectl:Apply' \
    "${K[@]}" -n fid get cm "$name" -o jsonpath='{.data.a} {range .metadata.managedFields[?(@.fieldsV1.f:data)]}{.manager}:{.operation}{end}'
  expect "$name: the last-applied annotation follows the applied configuration" \
    '"data":\{"a":"10","b":"2"\}' "${K[@]}" -n fid get cm "$name" \
    -o jsonpath='{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}'
  expect "$name: a server-side apply that drops a key" "configmap/$name serverside-applied" \
    "${K[@]}" apply --server-side -f "$d/$name-3.yaml"
  expect_eq "$name: removes it" '{"a":"10"}' "${K[@]}" -n fid get cm "$name" -o jsonpath='{.data}'
}

fidelity_suite() {
  echo "== fidelity: what real tools still hit (issue 24)"
  start_server fidelity || { fail "fidelity: server did not start"; return; }
  local K=(kubectl --kubeconfig "$KCFG") d=$E2E_TMP/fid
  local u="$SERVER_URL/api/v1/namespaces/fid/configmaps"
  mkdir -p "$d"
  "${K[@]}" create namespace fid >/dev/null

  echo "-- server-side apply after client-side apply"
  fid_migrate kubectl mig
  expect_eq "mig: kubectl's migration left no client-side apply manager" 'kubectl kubectl-last-applied' \
    bash -c "kubectl --kubeconfig $KCFG -n fid get cm mig -o jsonpath='{.metadata.managedFields[*].manager}' | tr ' ' '\n' | sort | xargs"
  [ -x "$GSDK/kubectl.1.27" ] && fid_migrate "$GSDK/kubectl.1.27" mig127
  fid_cm other 'a: "1"' >"$d/other-1.yaml"
  fid_cm other 'a: "2"' >"$d/other-2.yaml"
  "${K[@]}" apply -f "$d/other-1.yaml" >/dev/null
  expect_fail "another field manager still conflicts with the client-side apply" \
    'conflict with "kubectl-client-side-apply"' \
    "${K[@]}" apply --server-side --field-manager helm -f "$d/other-2.yaml"

  echo "-- managedFields written by the client"
  expect "a merge patch of managedFields [{}] clears them" 'configmap/mig patched' \
    "${K[@]}" -n fid patch cm mig --type=merge -p '{"metadata":{"managedFields":[{}]}}'
  expect_eq "no managedFields left" '' "${K[@]}" -n fid get cm mig -o jsonpath='{.metadata.managedFields}'
  "${K[@]}" -n fid get cm other -o json >"$d/other.json"
  python3 - "$d/other.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
o["metadata"]["managedFields"] = [{"manager": "tool", "operation": "Update", "apiVersion": "v1",
                                   "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]
json.dump(o, open(sys.argv[1], "w"))
PY
  expect "a PUT with managedFields" 'configmap/other replaced' "${K[@]}" replace -f "$d/other.json"
  expect_eq "stores them (kubectl replace wrote the last-applied annotation)" \
    'tool:Update kubectl-replace:Update ' "${K[@]}" -n fid get cm other \
    -o jsonpath='{range .metadata.managedFields[*]}{.manager}:{.operation} {end}'

  expect "an apply that carries managedFields is refused" '"message":"metadata.managedFields must be nil".*"code":400' \
    kcurl -X PATCH -H 'Content-Type: application/apply-patch+yaml' "$u/other?fieldManager=x" \
    -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other","managedFields":[]}}'
  expect "so is one of another version" \
    '"message":"Incorrect version specified in apply patch. Specified patch version: v2, expected: v1"' \
    kcurl -X PATCH -H 'Content-Type: application/apply-patch+yaml' "$u/other?fieldManager=x" \
    -d '{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"other"}}'

  echo "-- a create's managedFields, wherever the new object is read"
  # the server keeps a create's fieldsV1 as its text (lib/json.h kb_json_raw):
  # every answer and event must carry the same object, never its stand-in
  local tbl='application/json;as=Table;v=v1;g=meta.k8s.io' w="$u?watch=1&timeoutSeconds=3"
  kcurl -N "$w" >"$d/mf-watch" &
  local wj=$!
  kcurl -N -H "Accept: $tbl" "$w&includeObject=Object" >"$d/mf-table" &
  local wt=$!
  sleep 1
  local cm='{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME","labels":{"a":"b"}},"data":{"k.q":"v"}}'
  kcurl -H 'Content-Type: application/json' "$u" -d "${cm/NAME/mf}" >"$d/mf-create"
  kcurl -H 'Content-Type: application/json' "$u?dryRun=All" -d "${cm/NAME/mf-dry}" >"$d/mf-dry"
  kcurl -H 'Content-Type: application/json' -H "Accept: $tbl" "$u?includeObject=Object" \
    -d "${cm/NAME/mf-tbl}" >"$d/mf-tblcreate"
  kcurl "$u/mf" >"$d/mf-get"
  wait "$wj" "$wt"
  expect_eq "its fieldsV1 is the same in the answer, GET, watch, Table watch, dry run, Table create" \
    '{"f:data":{".":{},"f:k.q":{}},"f:metadata":{"f:labels":{".":{},"f:a":{}}}} x6' \
    python3 - "$d" <<'PY'
import json, sys
d = sys.argv[1]
def v1(o):
    return json.dumps(o["metadata"]["managedFields"][0]["fieldsV1"], separators=(",", ":"))
def obj(f, name):
    for line in open(f"{d}/{f}"):
        o = json.loads(line)
        o = o.get("object", o)
        for r in o.get("rows", [o]):
            r = r.get("object", r)
            if r.get("metadata", {}).get("name") == name:
                return r
seen = {v1(obj(f, n)) for f, n in [("mf-create", "mf"), ("mf-get", "mf"), ("mf-watch", "mf"),
                                   ("mf-table", "mf"), ("mf-dry", "mf-dry"),
                                   ("mf-tblcreate", "mf-tbl")]}
print(" ".join(seen), "x6" if len(seen) == 1 else "differ")
PY

  echo "-- a server-side apply that changes no value"
  "${K[@]}" -n fid create cm same --from-literal=x=1 >/dev/null
  local rv; rv=$("${K[@]}" -n fid get cm same -o jsonpath='{.metadata.resourceVersion}')
  fid_cm same 'x: "1"' >"$d/same.yaml"
  "${K[@]}" apply --server-side -f "$d/same.yaml" >/dev/null
  expect_eq "makes the applier a co-owner" 'kubectl:Apply kubectl-create:Update ' \
    "${K[@]}" -n fid get cm same -o jsonpath='{range .metadata.managedFields[*]}{.manager}:{.operation} {end}'
  expect "and bumps the resourceVersion" '^ok$' bash -c \
    "[ \"\$(kubectl --kubeconfig $KCFG -n fid get cm same -o jsonpath='{.metadata.resourceVersion}')\" != $rv ] && echo ok"
  rv=$("${K[@]}" -n fid get cm same -o jsonpath='{.metadata.resourceVersion}')
  "${K[@]}" apply --server-side -f "$d/same.yaml" >/dev/null
  expect_eq "applying it again writes nothing" "$rv" \
    "${K[@]}" -n fid get cm same -o jsonpath='{.metadata.resourceVersion}'

  echo "-- PUT with resourceVersion \"0\""
  expect "is an unconditional update" '"y":"2"' kcurl -X PUT -H 'Content-Type: application/json' \
    "$u/same" -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"same","resourceVersion":"0"},"data":{"y":"2"}}'
  expect "a stale resourceVersion still conflicts" '"code":409' kcurl -X PUT \
    -H 'Content-Type: application/json' "$u/same" \
    -d '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"same","resourceVersion":"1"},"data":{"y":"3"}}'

  echo "-- pretty JSON"
  expect "curl's User-Agent gets indented JSON" '^  "kind": "ConfigMap",$' \
    kcurl -A curl/8.5.0 "$u/same"
  expect "so does Wget's" '^    "y": "2"$' kcurl -A Wget/1.21 "$u/same"
  expect "?pretty=false wins over the User-Agent" '^\{"apiVersion":"v1",' \
    kcurl -A curl/8.5.0 "$u/same?pretty=false"
  expect "?pretty=true for any client, errors too" '^  "reason": "NotFound",$' \
    kcurl "$u/missing?pretty=true"
  expect "so does an Accept of application/json;pretty=1" '^  "kind": "ConfigMap",$' \
    kcurl -H 'Accept: application/json;pretty=1' "$u/same"
  expect "kubectl's requests stay compact" '^\{"apiVersion":"v1",' \
    kcurl -A 'kubectl/v1.33.0 (linux/amd64) kubernetes/abc' "$u/same"

  fidelity_messages
  fidelity_defaults
  fidelity_controllers
  fidelity_discovery
}

fidelity_messages() {
  echo "-- kube's messages"
  local K=(kubectl --kubeconfig "$KCFG") d=$E2E_TMP/fid
  "${K[@]}" -n fid create service clusterip web --tcp=80:80 >/dev/null
  expect_fail "a Service's changed cluster IP: spec.clusterIPs[0] may not change once set" \
    'The Service "web" is invalid: spec\.clusterIPs\[0\]: Invalid value: \[\]string\{"10\.96\.0\.99"\}: may not change once set$' \
    "${K[@]}" -n fid patch svc web -p '{"spec":{"clusterIP":"10.96.0.99"}}'
  local ip; ip=$("${K[@]}" -n fid get svc web -o jsonpath='{.spec.clusterIP}')
  printf '%s\n' 'apiVersion: v1' 'kind: Service' 'metadata: {name: web, namespace: fid}' \
    'spec: {selector: {app: web}, ports: [{port: 80}]}' >"$d/svc.yaml"
  expect "a replace without the cluster IP" 'service/web replaced' "${K[@]}" replace -f "$d/svc.yaml"
  expect_eq "keeps the allocated one (patchAllocatedValues)" "$ip [\"$ip\"]" \
    "${K[@]}" -n fid get svc web -o jsonpath='{.spec.clusterIP} {.spec.clusterIPs}'
  expect "an undecodable body: unrecognized, with Go's JSON syntax error and the body in hex" \
    '"message":"the object provided is unrecognized \(must be of type Namespace\): couldn.t get version/kind; json parse error: invalid character .x. looking for beginning of value \(78797a\)".*"code":400' \
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces" -d xyz
  expect "one that starts as an object is quoted as text" \
    'json parse error: invalid character .\}. looking for beginning of object key string \(\{\\"a\\":1,\}\)' \
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/api/v1/namespaces" -d '{"a":1,}'
  "${K[@]}" -n fid create deployment web --image=nginx --replicas=0 >/dev/null
  expect_fail "a strategic merge patch of the wrong type: cannot restore map from string" \
    'The request is invalid: patch: Invalid value: "map\[metadata:map\[labels:x\]\]": cannot restore map from string' \
    "${K[@]}" -n fid patch deploy web -p '{"metadata":{"labels":"x"}}'
  expect "the Status: 422 Invalid on the field patch" \
    '"message":" \\"\\" is invalid: patch: Invalid value: \\"map\[spec:map\[template:3\]\]\\": cannot restore struct from: float64".*"field":"patch".*"code":422' \
    kcurl -X PATCH -H 'Content-Type: application/strategic-merge-patch+json' \
    "$SERVER_URL/apis/apps/v1/namespaces/fid/deployments/web" -d '{"spec":{"template":3}}'
  expect "an invalid object is named with its group: Deployment.apps" \
    '"message":"Deployment\.apps \\"bad\\" is invalid: \[spec\.selector: Required value' \
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/apis/apps/v1/namespaces/fid/deployments" \
    -d '{"metadata":{"name":"bad"},"spec":{}}'
  cat >"$d/crd.yaml" <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: foos, singular: foo, kind: Foo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              nodes:
                type: object
                additionalProperties: {type: string}
YAML
  "${K[@]}" apply -f "$d/crd.yaml" >/dev/null
  wait_for "the CRD is established" 30 "${K[@]}" wait --for=condition=Established crd/foos.example.com --timeout=2s
  expect "a custom resource too (Foo.example.com), map keys as .Master" \
    '"message":"Foo\.example\.com \\"x\\" is invalid: spec\.nodes\.Master: Invalid value: \\"integer\\": spec\.nodes\.Master in body must be of type string' \
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/apis/example.com/v1/namespaces/fid/foos" \
    -d '{"apiVersion":"example.com/v1","kind":"Foo","metadata":{"name":"x"},"spec":{"nodes":{"Master":1}}}'
}

fidelity_defaults() {
  echo "-- defaults (kube's SetDefaults_*)"
  local K=(kubectl --kubeconfig "$KCFG" -n fid) d=$E2E_TMP/fid
  cat >"$d/defaults.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: dflt}
spec:
  hostNetwork: true
  containers:
  - name: c
    image: nginx:1.27
    ports: [{containerPort: 8080}]
    livenessProbe: {httpGet: {port: 8080}}
    lifecycle: {preStop: {httpGet: {port: 8080}}}
  volumes:
  - name: scratch
  - name: img
    image: {reference: "registry.example/data:latest"}
---
apiVersion: v1
kind: Service
metadata: {name: lb}
spec:
  type: LoadBalancer
  sessionAffinity: ClientIP
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: part}
spec:
  replicas: 0
  strategy: {rollingUpdate: {maxSurge: 1}}
  selector: {matchLabels: {app: part}}
  template:
    metadata: {labels: {app: part}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 0
  serviceName: db
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: nginx}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: queue}
spec:
  suspend: true
  parallelism: 3
  template:
    metadata: {labels: {team: a}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: busybox}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox}]
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: fid-class}
spec:
  controller: example.com/ingress
  parameters: {apiGroup: example.com, kind: Params, name: p}
YAML
  expect "a manifest of kinds with defaults" 'cronjob.batch/nightly created' \
    "${K[@]}" apply -f "$d/defaults.yaml"
  expect_eq "a pod volume without a source is an emptyDir (SetDefaults_Volume)" '{}' \
    "${K[@]}" get pod dflt -o jsonpath='{.spec.volumes[0].emptyDir}'
  expect_eq "an image volume's pull policy follows its tag" 'Always' \
    "${K[@]}" get pod dflt -o jsonpath='{.spec.volumes[1].image.pullPolicy}'
  expect_eq "probes: timeout, period, thresholds, httpGet path and scheme" '1 10 1 3 / HTTP' \
    "${K[@]}" get pod dflt -o jsonpath='{.spec.containers[0].livenessProbe.timeoutSeconds} {.spec.containers[0].livenessProbe.periodSeconds} {.spec.containers[0].livenessProbe.successThreshold} {.spec.containers[0].livenessProbe.failureThreshold} {.spec.containers[0].livenessProbe.httpGet.path} {.spec.containers[0].livenessProbe.httpGet.scheme}'
  expect_eq "a lifecycle hook's httpGet too" '/ HTTP' \
    "${K[@]}" get pod dflt -o jsonpath='{.spec.containers[0].lifecycle.preStop.httpGet.path} {.spec.containers[0].lifecycle.preStop.httpGet.scheme}'
  expect_eq "a host-network pod's ports are its host ports" '8080' \
    "${K[@]}" get pod dflt -o jsonpath='{.spec.containers[0].ports[0].hostPort}'
  expect_eq "Service: ClientIP affinity's timeout, external traffic policy, load balancer node ports" \
    '10800 Cluster true' "${K[@]}" get svc lb \
    -o jsonpath='{.spec.sessionAffinityConfig.clientIP.timeoutSeconds} {.spec.externalTrafficPolicy} {.spec.allocateLoadBalancerNodePorts}'
  expect_eq "Deployment: a partial strategy is completed" 'RollingUpdate 1 25%' \
    "${K[@]}" get deploy part -o jsonpath='{.spec.strategy.type} {.spec.strategy.rollingUpdate.maxSurge} {.spec.strategy.rollingUpdate.maxUnavailable}'
  expect_eq "StatefulSet: a partial retention policy is completed, claim templates defaulted" \
    'Delete Retain Filesystem Pending' "${K[@]}" get sts db \
    -o jsonpath='{.spec.persistentVolumeClaimRetentionPolicy.whenDeleted} {.spec.persistentVolumeClaimRetentionPolicy.whenScaled} {.spec.volumeClaimTemplates[0].spec.volumeMode} {.spec.volumeClaimTemplates[0].status.phase}'
  expect_eq "Job: a work queue (parallelism only) gets no completions; labels from its template" \
    '3  a' "${K[@]}" get job queue -o jsonpath='{.spec.parallelism} {.spec.completions} {.metadata.labels.team}'
  expect_eq "CronJob: the job template is no Job (no backoffLimit, no completionMode)" ' ' \
    "${K[@]}" get cronjob nightly -o jsonpath='{.spec.jobTemplate.spec.backoffLimit} {.spec.jobTemplate.spec.completionMode}'
  printf '%s\n' 'apiVersion: rbac.authorization.k8s.io/v1' 'kind: RoleBinding' \
    'metadata: {name: rb, namespace: fid}' 'roleRef: {kind: ClusterRole, name: view}' \
    'subjects: [{kind: User, name: alice}, {kind: ServiceAccount, name: default, namespace: fid}]' \
    >"$d/rb.yaml"
  expect "a RoleBinding without the groups" 'rolebinding.rbac.authorization.k8s.io/rb created' \
    "${K[@]}" apply -f "$d/rb.yaml"
  expect_eq "gets them: roleRef's and a User's rbac.authorization.k8s.io, none for a ServiceAccount" \
    'rbac.authorization.k8s.io rbac.authorization.k8s.io ' "${K[@]}" get rolebinding rb \
    -o jsonpath='{.roleRef.apiGroup} {.subjects[0].apiGroup} {.subjects[1].apiGroup}'
  expect_eq "IngressClass: parameters' scope Cluster" 'Cluster' \
    kubectl --kubeconfig "$KCFG" get ingressclass fid-class -o jsonpath='{.spec.parameters.scope}'
}

fidelity_controllers() {
  echo "-- controllers"
  local K=(kubectl --kubeconfig "$KCFG" -n fid) d=$E2E_TMP/fid
  "${K[@]}" create cronjob feb --image=busybox --schedule='59 23 31 2 *' >/dev/null
  expect_until_match "a CronJob whose schedule never fires gets an InvalidSchedule Warning" 30 \
    'Warning +InvalidSchedule +invalid schedule: 59 23 31 2 \* : time difference between two schedules is less than 1 second' \
    "${K[@]}" get events --field-selector involvedObject.name=feb \
    -o custom-columns=T:.type,R:.reason,M:.message --no-headers
  cat >"$d/sts.yaml" <<'YAML'
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: hist
  annotations: {kubernetes.io/change-cause: "first version"}
spec:
  replicas: 0
  serviceName: hist
  selector: {matchLabels: {app: hist}}
  template:
    metadata: {labels: {app: hist}}
    spec: {containers: [{name: c, image: "nginx:1.26"}]}
YAML
  "${K[@]}" apply -f "$d/sts.yaml" >/dev/null
  wait_for "the first ControllerRevision" 30 "${K[@]}" get controllerrevision -l app=hist -o name
  "${K[@]}" annotate sts hist kubernetes.io/change-cause="image 1.27" --overwrite >/dev/null
  "${K[@]}" set image sts/hist c=nginx:1.27 >/dev/null
  expect_until_match "StatefulSet annotations are copied to its ControllerRevisions (rollout history)" 30 \
    '1 +first version.*2 +image 1\.27' bash -c "kubectl --kubeconfig $KCFG -n fid rollout history sts/hist | tr '\n' ' '"
  [ -x "$GSDK/kubectl.1.27" ] && expect "kubectl 1.27's rollout history too" '2 +image 1\.27' \
    "$GSDK/kubectl.1.27" --kubeconfig "$KCFG" -n fid rollout history sts/hist
}

# fid_svh GROUPVERSION RESOURCE...: each resource's storageVersionHash in
# legacy discovery ("-" when it has none), on one line.
fid_svh() {
  local out=() p h
  while [ $# -ge 2 ]; do
    p=/apis/$1
    [ "${1#*/}" = "$1" ] && p=/api/$1
    h=$(kubectl --kubeconfig "$KCFG" get --raw "$p" 2>/dev/null | python3 -c \
      'import json,sys; print(*[r.get("storageVersionHash", "-") for r in json.load(sys.stdin)["resources"] if r["name"] == sys.argv[1]])' "$2" 2>/dev/null)
    out+=("${h:-?}")
    shift 2
  done
  echo "${out[*]}"
}

# kube's discovery.StorageVersionHash: base64 of the first 8 bytes of the
# SHA-256 of "<group>/<version>/<kind>" of the storage version (apiserver
# pkg/endpoints/discovery/storageversionhash.go); the built-in hashes below
# are the values kube-apiserver 1.33 serves.
fidelity_discovery() {
  echo "-- discovery: storageVersionHash"
  expect_eq "pods (/v1/Pod)" 'xPOwRZ+Yhw8=' fid_svh v1 pods
  expect_eq "... none for a subresource" '-' fid_svh v1 pods/status
  expect_eq "deployments (apps/v1/Deployment)" '8aSe+NMegvE=' fid_svh apps/v1 deployments
  expect_eq "HPA autoscaling/v2 and v1: both the storage version v2's" 'qwQve8ut294= qwQve8ut294=' \
    fid_svh autoscaling/v2 horizontalpodautoscalers autoscaling/v1 horizontalpodautoscalers
  expect_eq "events.k8s.io events: the core events' storage (/v1/Event)" 'r2yiGXH7wu8= r2yiGXH7wu8=' \
    fid_svh events.k8s.io/v1 events v1 events
  expect_eq "none for what is stored nowhere (selfsubjectaccessreviews, tokenreviews)" '- -' \
    fid_svh authorization.k8s.io/v1 selfsubjectaccessreviews authentication.k8s.io/v1 tokenreviews
  kubectl --kubeconfig "$KCFG" apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: hashes.fid.example.com}
spec:
  group: fid.example.com
  names: {kind: Hash, plural: hashes}
  scope: Namespaced
  versions:
  - {name: v1beta1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
EOF
  local want
  want=$(python3 -c 'import base64,hashlib; print(base64.b64encode(hashlib.sha256(b"fid.example.com/v1/Hash").digest()[:8]).decode())')
  expect_until "a CRD's versions all carry its storage version's (fid.example.com/v1/Hash)" "$want $want" \
    fid_svh fid.example.com/v1 hashes fid.example.com/v1beta1 hashes
}
