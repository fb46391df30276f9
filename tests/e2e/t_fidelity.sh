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
  expect "kubectl's requests stay compact" '^\{"apiVersion":"v1",' \
    kcurl -A 'kubectl/v1.33.0 (linux/amd64) kubernetes/abc' "$u/same"

  fidelity_messages
  fidelity_defaults
}

fidelity_messages() {
  echo "-- kube's messages"
  local K=(kubectl --kubeconfig "$KCFG") d=$E2E_TMP/fid
  "${K[@]}" -n fid create service clusterip web --tcp=80:80 >/dev/null
  expect_fail "a Service's changed cluster IP: spec.clusterIPs[0] may not change once set" \
    'The Service "web" is invalid: spec\.clusterIPs\[0\]: Invalid value: \[\]string\{"10\.96\.0\.99"\}: may not change once set$' \
    "${K[@]}" -n fid patch svc web -p '{"spec":{"clusterIP":"10.96.0.99"}}'
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
  echo "-- defaults"
}
