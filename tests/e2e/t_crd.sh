# SPDX-License-Identifier: Apache-2.0
# CustomResourceDefinitions with real kubectl: a CRD and custom objects
# applied with default validation, `kubectl get` columns, explain, schema
# violations refused with field paths, defaults, pruning and Strict, the
# scale and status subresources, patches, deletion of the CRD; and two
# tenants installing conflicting versions of one CRD.

# crd_manifest GROUP: a namespaced Widget CRD of GROUP on stdout.
crd_manifest() {
  cat <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.$1
spec:
  group: $1
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wdg]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: Desired state of the widget.
            required: [color]
            properties:
              replicas: {type: integer, minimum: 0, maximum: 10, default: 1}
              color: {type: string, enum: [red, blue]}
              size: {type: string, pattern: '^[0-9]+(Mi|Gi)$', default: 1Gi}
          status:
            type: object
            properties:
              replicas: {type: integer}
YAML
}

crd_suite_kubectl() {
  local bin=$1 tag=$2
  local K=("$bin" --kubeconfig "$KCFG" --cache-dir "$E2E_TMP/cache-crd-$tag")
  local g="$tag.crd.test" d=$E2E_TMP/crd-$tag
  mkdir -p "$d"
  crd_manifest "$g" >"$d/crd.yaml"
  cat >"$d/w1.yaml" <<YAML
apiVersion: $g/v1
kind: Widget
metadata: {name: w1, namespace: default}
spec: {color: red}
YAML
  cat >"$d/bad.yaml" <<YAML
apiVersion: $g/v1
kind: Widget
metadata: {name: bad, namespace: default}
spec: {color: red, replicas: "three"}
YAML
  cat >"$d/unknown.yaml" <<YAML
apiVersion: $g/v1
kind: Widget
metadata: {name: w2, namespace: default}
spec: {color: blue, bogus: 1}
YAML
  expect "[$tag] apply CRD" "widgets.$g created" "${K[@]}" apply -f "$d/crd.yaml"
  expect "[$tag] CRD becomes Established" "condition met" \
    "${K[@]}" wait --for=condition=Established "crd/widgets.$g" --timeout=10s
  expect "[$tag] apply custom object (default validation)" "widget.$g/w1 created" \
    "${K[@]}" apply -f "$d/w1.yaml"
  expect "[$tag] get columns from additionalPrinterColumns" 'NAME +REPLICAS +COLOR +AGE' \
    "${K[@]}" get "widgets.$g"
  expect "[$tag] get cells (date column as an age)" '^w1 +1 +red +[0-9]+s$' "${K[@]}" get "widgets.$g"
  expect_eq "[$tag] defaults filled in" "1 1Gi" \
    "${K[@]}" get "widgets.$g" w1 -o 'jsonpath={.spec.replicas} {.spec.size}'
  expect "[$tag] explain custom kind" 'Desired state of the widget' \
    "${K[@]}" explain "widgets.$g.spec"
  expect "[$tag] explain nested field" 'replicas.*integer' "${K[@]}" explain "widgets.$g.spec.replicas"
  expect_fail "[$tag] schema violation refused with field path" \
    'spec\.replicas: Invalid value: "string": spec\.replicas in body must be of type integer: "string"' \
    "${K[@]}" apply -f "$d/bad.yaml"
  expect_fail "[$tag] enum violation" 'spec\.color: Unsupported value: "pink"' \
    "${K[@]}" patch "widgets.$g" w1 --type=merge -p '{"spec":{"color":"pink"}}'
  expect_fail "[$tag] required field" 'spec\.color: Required value' \
    "${K[@]}" patch "widgets.$g" w1 --type=json -p '[{"op":"remove","path":"/spec/color"}]'
  expect_fail "[$tag] unknown field refused (Strict)" 'strict decoding error: unknown field "spec\.bogus"' \
    "${K[@]}" create --validate=strict -f "$d/unknown.yaml"
  expect "[$tag] unknown field pruned (Ignore)" "widget.$g/w2 created" \
    "${K[@]}" create --validate=false -f "$d/unknown.yaml"
  expect_eq "[$tag] pruned field is gone" '{"color":"blue","replicas":1,"size":"1Gi"}' \
    "${K[@]}" get "widgets.$g" w2 -o 'jsonpath={.spec}'
  expect "[$tag] scale subresource" "scaled" "${K[@]}" scale "widgets.$g" w1 --replicas=3
  expect_eq "[$tag] scale wrote spec.replicas" "3" \
    "${K[@]}" get "widgets.$g" w1 -o 'jsonpath={.spec.replicas}'
  expect "[$tag] scale is recorded in managedFields under the scale subresource" '^kubectl' \
    "${K[@]}" get "widgets.$g" w1 --show-managed-fields -o 'jsonpath={.metadata.managedFields[?(@.subresource=="scale")].manager}'
  expect "[$tag] get --subresource=scale answers a Table" '^w1 +' \
    "${K[@]}" get "widgets.$g" w1 --subresource=scale --no-headers
  expect "[$tag] status subresource" "patched" \
    "${K[@]}" patch "widgets.$g" w1 --subresource=status --type=merge -p '{"status":{"replicas":3}}'
  expect "[$tag] JSON patch" "patched" \
    "${K[@]}" patch "widgets.$g" w1 --type=json -p '[{"op":"replace","path":"/spec/color","value":"blue"}]'
  expect_fail "[$tag] strategic merge refused (415)" 'application/json-patch\+json, application/merge-patch\+json, application/apply-patch\+yaml' \
    "${K[@]}" patch "widgets.$g" w1 -p '{"spec":{"color":"red"}}'
  expect_fail "[$tag] server-side apply conflict" 'conflict with "kubectl-patch".*\.spec\.color' \
    "${K[@]}" apply --server-side -f "$d/w1.yaml"
  expect "[$tag] server-side apply (force)" "serverside-applied" \
    "${K[@]}" apply --server-side --force-conflicts -f "$d/w1.yaml"
  expect "[$tag] short name" 'w1 +3 +red' "${K[@]}" get wdg w1
  expect "[$tag] discovery lists the resource" "widgets +wdg +$g/v1 +true +Widget" \
    "${K[@]}" api-resources --api-group="$g"
  expect "[$tag] delete CRD" "deleted" "${K[@]}" delete crd "widgets.$g"
  expect "[$tag] objects gone with the CRD" '"reason": ?"NotFound"' \
    kcurl "$SERVER_URL/apis/$g/v1/namespaces/default/widgets/w1"
  expect_fail "[$tag] kubectl get widgets fails after delete" \
    "NotFound|doesn't have a resource type" "${K[@]}" get "widgets.$g"
  expect "[$tag] recreate CRD" "created" "${K[@]}" apply -f "$d/crd.yaml"
  expect "[$tag] no objects survive a CRD's deletion" "No resources found" \
    "${K[@]}" get "widgets.$g" -A
  expect "[$tag] delete CRD again" "deleted" "${K[@]}" delete crd "widgets.$g"
}

crd_suite_tenants() {
  local saved=("$SERVER_PID" "$KCFG" "$DATA_DIR" "$SERVER_URL")
  local d=$E2E_TMP/crd-tenants k1 k2
  mkdir -p "$d"
  crd_manifest team.crd.test >"$d/a.yaml"
  # tenant B: same group and kind, a different schema (color is a number)
  crd_manifest team.crd.test | sed 's/color: {type: string, enum: \[red, blue\]}/color: {type: integer}/' \
    >"$d/b.yaml"
  start_server tenant-a || return; k1=("kubectl" --kubeconfig "$KCFG" --cache-dir "$d/c1")
  start_server tenant-b || return; k2=("kubectl" --kubeconfig "$KCFG" --cache-dir "$d/c2")
  expect "tenant A installs its CRD" created "${k1[@]}" apply -f "$d/a.yaml"
  expect "tenant B installs a conflicting version" created "${k2[@]}" apply -f "$d/b.yaml"
  expect "tenant A: string color accepted" created "${k1[@]}" create -f - <<<'{"apiVersion":"team.crd.test/v1","kind":"Widget","metadata":{"name":"a","namespace":"default"},"spec":{"color":"red"}}'
  expect_fail "tenant A: numeric color refused" 'must be of type string' "${k1[@]}" create -f - <<<'{"apiVersion":"team.crd.test/v1","kind":"Widget","metadata":{"name":"a2","namespace":"default"},"spec":{"color":7}}'
  expect "tenant B: numeric color accepted" created "${k2[@]}" create -f - <<<'{"apiVersion":"team.crd.test/v1","kind":"Widget","metadata":{"name":"b","namespace":"default"},"spec":{"color":7}}'
  expect_fail "tenant B: string color refused" 'must be of type integer' "${k2[@]}" create -f - <<<'{"apiVersion":"team.crd.test/v1","kind":"Widget","metadata":{"name":"b2","namespace":"default"},"spec":{"color":"red"}}'
  expect_eq "tenant A sees only its objects" "a" "${k1[@]}" get widgets -o 'jsonpath={.items[*].metadata.name}'
  expect_eq "tenant B sees only its objects" "b" "${k2[@]}" get widgets -o 'jsonpath={.items[*].metadata.name}'
  expect "tenant B's explain shows its schema" 'color.*integer' "${k2[@]}" explain widgets.spec.color
  stop_server
  start_server tenant-b || return
  expect_eq "CRD and objects survive a restart" "b" \
    "${k2[@]}" --kubeconfig "$KCFG" get widgets -o 'jsonpath={.items[*].metadata.name}'
  stop_server
  SERVER_PID=${saved[0]}; KCFG=${saved[1]}; DATA_DIR=${saved[2]}; SERVER_URL=${saved[3]}
}

# A CRD with two served versions (conversion None): one stored object, seen
# through either version with that version's apiVersion.
crd_suite_versions() {
  local d=$E2E_TMP/crd-versions
  mkdir -p "$d"
  crd_manifest ver.crd.test | sed 's/^  - name: v1$/  - name: v1/' >"$d/crd.yaml"
  python3 - "$d/crd.yaml" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index("  versions:\n") + len("  versions:\n")
beta = """  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"""
open(p, "w").write(s[:i] + beta + s[i:])
PY
  kubectl --kubeconfig "$KCFG" --cache-dir "$d/c" apply -f "$d/crd.yaml" >/dev/null
  kubectl --kubeconfig "$KCFG" --cache-dir "$d/c" wait --for=condition=Established crd/widgets.ver.crd.test --timeout=10s >/dev/null
  kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/apis/ver.crd.test/v1beta1/namespaces/default/widgets" \
    -d '{"apiVersion":"ver.crd.test/v1beta1","kind":"Widget","metadata":{"name":"vw"},"spec":{"color":"red"}}' >/dev/null
  expect "multi-version CRD: read through v1 says v1" '"apiVersion":"ver.crd.test/v1"' \
    kcurl "$SERVER_URL/apis/ver.crd.test/v1/namespaces/default/widgets/vw"
  expect "reading applies the version's schema defaults (written through v1beta1)" '"replicas":1.*"size":"1Gi"|"size":"1Gi".*"replicas":1' \
    kcurl "$SERVER_URL/apis/ver.crd.test/v1/namespaces/default/widgets/vw"
  expect "multi-version CRD: read through v1beta1 says v1beta1" '"apiVersion":"ver.crd.test/v1beta1"' \
    kcurl "$SERVER_URL/apis/ver.crd.test/v1beta1/namespaces/default/widgets/vw"
  expect "multi-version CRD: list through v1 says v1 for its items" '"items":\[\{"apiVersion":"ver.crd.test/v1"' \
    kcurl "$SERVER_URL/apis/ver.crd.test/v1/namespaces/default/widgets"
}

# Deleting a CRD as kube-apiserver does: the customresourcecleanup finalizer
# holds it (Terminating) while its objects go; creates are refused with 405
# meanwhile; an object held by its own finalizer holds the CRD; kubectl
# delete returns once the CRD is gone, and so is its discovery.
crd_suite_finalize() {
  local d=$E2E_TMP/crd-fin g=fin.crd.test
  local K=(kubectl --kubeconfig "$KCFG" --cache-dir "$d/c")
  mkdir -p "$d"
  crd_manifest "$g" >"$d/crd.yaml"
  "${K[@]}" apply -f "$d/crd.yaml" >/dev/null
  "${K[@]}" wait --for=condition=Established "crd/widgets.$g" --timeout=10s >/dev/null
  expect_eq "a live CRD carries no finalizer" "" \
    "${K[@]}" get crd "widgets.$g" -o 'jsonpath={.metadata.finalizers}'
  local i
  for i in 1 2 3; do
    "${K[@]}" create -f - >/dev/null <<<"{\"apiVersion\":\"$g/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w$i\",\"namespace\":\"default\"},\"spec\":{\"color\":\"red\"}}"
  done
  "${K[@]}" create -f - >/dev/null <<<"{\"apiVersion\":\"$g/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"held\",\"namespace\":\"kube-public\",\"finalizers\":[\"e2e.test/hold\"]},\"spec\":{\"color\":\"blue\"}}"
  expect "delete CRD without waiting" "deleted" "${K[@]}" delete crd "widgets.$g" --wait=false
  expect_eq "a deleted CRD carries the customresourcecleanup finalizer" \
    '["customresourcecleanup.apiextensions.k8s.io"]' \
    "${K[@]}" get crd "widgets.$g" -o 'jsonpath={.metadata.finalizers}'
  expect_eq "CRD is Terminating while an object is held" \
    'True InstanceDeletionInProgress CustomResource deletion is in progress' \
    "${K[@]}" get crd "widgets.$g" -o 'jsonpath={.status.conditions[?(@.type=="Terminating")].status} {.status.conditions[?(@.type=="Terminating")].reason} {.status.conditions[?(@.type=="Terminating")].message}'
  expect_eq "objects without finalizers are gone, the held one is terminating" "held true" \
    "${K[@]}" get "widgets.$g" -A \
    -o go-template='{{range .items}}{{.metadata.name}} {{if .metadata.deletionTimestamp}}true{{end}}{{end}}'
  expect "terminating CRD still serves reads" '"name": ?"held"' \
    kcurl "$SERVER_URL/apis/$g/v1/namespaces/kube-public/widgets/held"
  expect_fail "create refused while terminating" \
    'MethodNotAllowed.*create not allowed while custom resource definition is terminating' \
    "${K[@]}" create -f - <<<"{\"apiVersion\":\"$g/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"late\",\"namespace\":\"default\"},\"spec\":{\"color\":\"red\"}}"
  expect '405 for a create while terminating' '"code": ?405' \
    kcurl -X POST -H 'Content-Type: application/json' "$SERVER_URL/apis/$g/v1/namespaces/default/widgets" \
    -d "{\"apiVersion\":\"$g/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"late\"},\"spec\":{\"color\":\"red\"}}"
  expect "updates still allowed while terminating" "patched" \
    "${K[@]}" patch "widgets.$g" held -n kube-public --type=merge -p '{"metadata":{"finalizers":null}}'
  expect_fail "CRD gone once its last object is" 'NotFound' "${K[@]}" get crd "widgets.$g"
  expect_fail "resource left discovery" "doesn't have a resource type" "${K[@]}" get "widgets.$g"
  # the common case: kubectl delete blocks until the CRD is gone
  "${K[@]}" apply -f "$d/crd.yaml" >/dev/null
  "${K[@]}" create -f - >/dev/null <<<"{\"apiVersion\":\"$g/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w9\",\"namespace\":\"default\"},\"spec\":{\"color\":\"red\"}}"
  expect "kubectl delete crd waits and succeeds" "deleted" "${K[@]}" delete crd "widgets.$g" --timeout=20s
  expect '... and the CRD is gone when it returns' '"reason": ?"NotFound"' \
    kcurl "$SERVER_URL/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.$g"
}

# Names: a CRD whose names clash with another CRD of its group is not
# accepted (NamesAccepted=False, kube's reason and message) and not served
# until the clash is gone.
crd_suite_names() {
  local d=$E2E_TMP/crd-names g=names.crd.test
  local K=(kubectl --kubeconfig "$KCFG" --cache-dir "$d/c")
  mkdir -p "$d"
  crd_manifest "$g" >"$d/widgets.yaml"
  sed 's/widgets\./gadgets./; s/names: {.*}/names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: [widgets]}/' \
    "$d/widgets.yaml" >"$d/gadgets.yaml"
  sed 's/widgets\./things./; s/names: {.*}/names: {plural: things, kind: Widget}/' \
    "$d/widgets.yaml" >"$d/things.yaml"
  "${K[@]}" apply -f "$d/widgets.yaml" >/dev/null
  expect "CRD with a short name taken by another CRD is created" created "${K[@]}" apply -f "$d/gadgets.yaml"
  expect_eq "NamesAccepted=False ShortNamesConflict" \
    'False ShortNamesConflict "widgets" is already in use' \
    "${K[@]}" get crd "gadgets.$g" -o 'jsonpath={.status.conditions[?(@.type=="NamesAccepted")].status} {.status.conditions[?(@.type=="NamesAccepted")].reason} {.status.conditions[?(@.type=="NamesAccepted")].message}'
  expect_eq "Established stays False" 'False NotAccepted' \
    "${K[@]}" get crd "gadgets.$g" -o 'jsonpath={.status.conditions[?(@.type=="Established")].status} {.status.conditions[?(@.type=="Established")].reason}'
  expect_fail "conflicting CRD is not served" "doesn't have a resource type|NotFound" \
    "${K[@]}" get "gadgets.$g"
  expect "kind clash: listKind is refused last" created "${K[@]}" apply -f "$d/things.yaml"
  expect_eq "NamesAccepted=False ListKindConflict" \
    'False ListKindConflict "WidgetList" is already in use' \
    "${K[@]}" get crd "things.$g" -o 'jsonpath={.status.conditions[?(@.type=="NamesAccepted")].status} {.status.conditions[?(@.type=="NamesAccepted")].reason} {.status.conditions[?(@.type=="NamesAccepted")].message}'
  expect "the first CRD is still served" "widgets +wdg +$g/v1 +true +Widget" \
    "${K[@]}" api-resources --api-group="$g"
  "${K[@]}" delete crd "widgets.$g" >/dev/null
  expect "clash gone: the other CRD becomes Established" "condition met" \
    "${K[@]}" wait --for=condition=Established "crd/gadgets.$g" --timeout=10s
  expect "... and is served" "No resources found" "${K[@]}" get "gadgets.$g"
  "${K[@]}" delete crd "gadgets.$g" "things.$g" >/dev/null
}
