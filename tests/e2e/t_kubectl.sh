# SPDX-License-Identifier: Apache-2.0
# kubectl against a tenant: every command of issue 2's list, for one kubectl
# binary ($1) in its own namespace ($2).

kubectl_suite() {
  local bin=$1 ns=$2 tag=$3
  local K=("$bin" --kubeconfig "$KCFG" --cache-dir "$E2E_TMP/cache-$tag")
  local M=$E2E_TMP/manifest-$tag.yaml
  cat >"$M" <<YAML
apiVersion: v1
kind: Namespace
metadata:
  name: $ns
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: $ns
data:
  key: "1"
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: $ns
  labels: {app: web, tier: fe}
spec:
  containers:
  - name: main
    image: nginx:1.27
    ports: [{containerPort: 80}]
    env: [{name: A, value: "1"}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: $ns
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: c, image: busybox:1.36}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: $ns
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
YAML
  expect "[$tag] version reports server v1.33" 'Server Version: v1\.33' "${K[@]}" version
  expect "[$tag] api-resources lists pods and deployments" 'deployments +deploy +apps/v1 +true +Deployment' "${K[@]}" api-resources
  expect "[$tag] create ns (protobuf on 1.32+)" "namespace/$ns-extra created" "${K[@]}" create ns "$ns-extra"
  expect_fail "[$tag] create ns again is AlreadyExists" "AlreadyExists.*already exists" "${K[@]}" create ns "$ns-extra"
  expect "[$tag] apply multi-document manifest" "pod/web created" "${K[@]}" apply -f "$M"
  expect "[$tag] apply again is unchanged" "pod/web unchanged" "${K[@]}" apply -f "$M"
  sed -i 's/nginx:1.27/nginx:1.28/' "$M"
  expect "[$tag] apply with a change configures" "pod/web configured" "${K[@]}" apply -f "$M"
  expect_eq "[$tag] the change landed" "nginx:1.28" "${K[@]}" -n "$ns" get pod web -o 'jsonpath={.spec.containers[0].image}'
  expect "[$tag] get table" '^web +0/1 +Pending +0 +[0-9]+s' "${K[@]}" -n "$ns" get pods
  expect "[$tag] get -o wide" 'IP +NODE +NOMINATED NODE +READINESS GATES' "${K[@]}" -n "$ns" get pods -o wide
  expect "[$tag] get -o json" '"kind": "Pod"' "${K[@]}" -n "$ns" get pod web -o json
  expect "[$tag] get -o yaml" 'kind: ConfigMap' "${K[@]}" -n "$ns" get cm cfg -o yaml
  expect "[$tag] get -A shows namespace column" "^$ns +web " "${K[@]}" get pods -A
  expect "[$tag] get --show-labels" 'app=web,tier=fe' "${K[@]}" -n "$ns" get pods --show-labels
  expect "[$tag] get -l selects" '^web ' "${K[@]}" -n "$ns" get pods -l 'app in (web,x),tier!=be'
  expect "[$tag] get -l excludes" 'No resources found' "${K[@]}" -n "$ns" get pods -l app=nope
  expect "[$tag] field selector" '^web ' "${K[@]}" -n "$ns" get pods --field-selector status.phase=Pending,metadata.name=web
  expect_fail "[$tag] unsupported field selector" 'field label not supported' "${K[@]}" -n "$ns" get pods --field-selector spec.foo=x
  expect "[$tag] get deploy table" '^api +0/2 +[0-2] +0 ' "${K[@]}" -n "$ns" get deploy
  expect "[$tag] get svc table" '^web +ClusterIP +10\.[0-9.]+ +<none> +80/TCP' "${K[@]}" -n "$ns" get svc
  expect "[$tag] label" 'pod/web labeled' "${K[@]}" -n "$ns" label pod web extra=yes
  expect "[$tag] annotate" 'pod/web annotated' "${K[@]}" -n "$ns" annotate pod web note=hello
  expect_eq "[$tag] label and annotation stored" "yes hello" "${K[@]}" -n "$ns" get pod web -o 'jsonpath={.metadata.labels.extra} {.metadata.annotations.note}'
  expect "[$tag] label removal" 'pod/web unlabeled' "${K[@]}" -n "$ns" label pod web extra-
  expect "[$tag] patch merge" 'patched' "${K[@]}" -n "$ns" patch cm cfg --type merge -p '{"data":{"m":"2"}}'
  expect "[$tag] patch json" 'patched' "${K[@]}" -n "$ns" patch cm cfg --type json -p '[{"op":"add","path":"/data/j","value":"3"}]'
  expect "[$tag] patch strategic keeps other containers fields" 'patched' "${K[@]}" -n "$ns" patch pod web -p '{"spec":{"containers":[{"name":"main","image":"nginx:1.29"}]}}'
  expect_eq "[$tag] strategic result" "nginx:1.29 A 80" "${K[@]}" -n "$ns" get pod web -o 'jsonpath={.spec.containers[0].image} {.spec.containers[0].env[0].name} {.spec.containers[0].ports[0].containerPort}'
  expect_eq "[$tag] merge+json patches landed" "1 2 3" "${K[@]}" -n "$ns" get cm cfg -o 'jsonpath={.data.key} {.data.m} {.data.j}'
  expect_fail "[$tag] immutable pod field refused" 'Forbidden: pod updates may not change fields' "${K[@]}" -n "$ns" patch pod web -p '{"spec":{"restartPolicy":"Never"}}'
  # the manifest still says nginx:1.28; the forced apply takes the image back
  expect "[$tag] server-side apply" 'pod/web serverside-applied' "${K[@]}" apply --server-side --force-conflicts -f "$M"
  expect "[$tag] managedFields record the apply" 'manager: kubectl' "${K[@]}" -n "$ns" get cm cfg -o yaml --show-managed-fields
  sed -i 's/nginx:1.28/nginx:1.30/' "$M"
  expect_rc "[$tag] diff shows a change (exit 1)" 1 '^\+ +(- )?image: nginx:1\.30' "${K[@]}" diff -f "$M"
  expect_eq "[$tag] diff did not persist" "nginx:1.28" "${K[@]}" -n "$ns" get pod web -o 'jsonpath={.spec.containers[0].image}'
  expect "[$tag] describe pod" 'Tolerations: +node.kubernetes.io/not-ready' "${K[@]}" -n "$ns" describe pod web
  expect "[$tag] describe deployment" 'Replicas: +2 desired' "${K[@]}" -n "$ns" describe deploy api
  expect "[$tag] explain" 'containers.*<\[\]Container>' "${K[@]}" explain pod.spec
  expect "[$tag] explain nested" 'image.*<string>' "${K[@]}" explain pod.spec.containers
  expect "[$tag] scale" 'scaled' "${K[@]}" -n "$ns" scale deploy api --replicas=3
  expect_eq "[$tag] scale landed" "3" "${K[@]}" -n "$ns" get deploy api -o 'jsonpath={.spec.replicas}'
  expect_eq "[$tag] kubectl scale's fields are kept under the scale subresource" '{"f:spec":{"f:replicas":{}}}' \
    "${K[@]}" -n "$ns" get deploy api --show-managed-fields -o 'jsonpath={.metadata.managedFields[?(@.subresource=="scale")].fieldsV1}'
  expect "[$tag] ... and the deployment controller's status under status" 'deployment-controller' \
    "${K[@]}" -n "$ns" get deploy api --show-managed-fields -o 'jsonpath={.metadata.managedFields[?(@.subresource=="status")].manager}'
  expect "[$tag] get --subresource=scale: kube's Scale columns" '^NAME +DESIRED +AVAILABLE +AGE$' \
    "${K[@]}" -n "$ns" get deploy api --subresource=scale
  expect "[$tag] get --subresource=scale: its row" '^api +3 +[0-9]+ +[0-9][0-9a-z]*$' \
    "${K[@]}" -n "$ns" get deploy api --subresource=scale --no-headers
  expect "[$tag] create deployment (typed client)" 'created' "${K[@]}" -n "$ns" create deployment typed --image=nginx
  expect "[$tag] create secret" 'created' "${K[@]}" -n "$ns" create secret generic sec --from-literal=pw=s3cr3t
  expect_eq "[$tag] secret data is base64" "czNjcjN0" "${K[@]}" -n "$ns" get secret sec -o 'jsonpath={.data.pw}'
  expect "[$tag] create job" 'created' "${K[@]}" -n "$ns" create job j1 --image=busybox -- echo hi
  expect "[$tag] create cronjob" 'created' "${K[@]}" -n "$ns" create cronjob cj1 --image=busybox --schedule='*/5 * * * *' -- echo hi
  expect "[$tag] create serviceaccount" 'created' "${K[@]}" -n "$ns" create serviceaccount robot
  expect "[$tag] default serviceaccount exists" '^default ' "${K[@]}" -n "$ns" get sa
  expect_fail "[$tag] invalid name refused" 'Invalid value: "Bad_Name"' "${K[@]}" -n "$ns" create configmap Bad_Name
  expect_fail "[$tag] a namespace name with dots, in kube's words" \
    'The Namespace "a.b" is invalid: metadata.name: Invalid value: "a.b": must not contain dots' "${K[@]}" create namespace a.b
  expect_fail "[$tag] strict validation refuses unknown field" 'unknown field "spec.bogus"' \
    "${K[@]}" -n "$ns" apply -f <(printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  bogus: 1\n  containers: [{name: c, image: x}]\n')
  expect "[$tag] validate=warn warns about unknown field" 'unknown field "spec.bogus"' \
    "${K[@]}" -n "$ns" apply --validate=warn -f <(printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: warned}\nspec:\n  bogus: 1\n  containers: [{name: c, image: x}]\n')
  expect_fail "[$tag] missing image is Invalid" 'spec.containers\[0\].image: Required value' \
    "${K[@]}" -n "$ns" apply -f <(printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: noimg}\nspec:\n  containers: [{name: c}]\n')
  # watch: a background get -w must see the create and the delete
  "${K[@]}" -n "$ns" get pods -w --request-timeout=0 >"$E2E_TMP/watch-$tag.out" 2>&1 &
  local wpid=$!
  # the initial list shows pod web: from then on the watch sees every change
  wait_for "[$tag] get -w lists the pods" 20 grep -q '^web ' "$E2E_TMP/watch-$tag.out"
  "${K[@]}" -n "$ns" run watched --image=busybox >/dev/null 2>&1
  "${K[@]}" -n "$ns" delete pod watched --wait=false >/dev/null 2>&1
  wait_for "[$tag] get -w: the create and the delete" 20 \
    bash -c "[ \$(grep -c '^watched ' '$E2E_TMP/watch-$tag.out') -ge 2 ]"
  kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
  if [ "$(grep -c '^watched ' "$E2E_TMP/watch-$tag.out")" -ge 2 ]; then pass "[$tag] get -w sees create and delete"
  else fail "[$tag] get -w: $(cat "$E2E_TMP/watch-$tag.out")"; fi
  expect "[$tag] delete pod" 'pod "web" deleted' "${K[@]}" -n "$ns" delete pod web
  expect "[$tag] wait --for=delete" '' "${K[@]}" -n "$ns" wait --for=delete pod/web --timeout=10s
  expect_fail "[$tag] deleted pod is NotFound" 'NotFound.*pods "web" not found' "${K[@]}" -n "$ns" get pod web
  expect "[$tag] delete ns with contents" "namespace \"$ns\" deleted" "${K[@]}" delete ns "$ns" --timeout=30s
  expect_fail "[$tag] namespace gone" 'NotFound' "${K[@]}" get ns "$ns"
  expect "[$tag] its contents gone" 'No resources found' "${K[@]}" -n "$ns" get cm
  "${K[@]}" delete ns "$ns-extra" --wait=false >/dev/null 2>&1
}
