# SPDX-License-Identifier: Apache-2.0
# /openapi/v2 (Swagger 2.0, JSON and gnostic protobuf) with real kubectl:
# kubectl 1.27/1.28 `apply` with the default (strict) validation, which they
# do only through v2; client-side validation of a `kind: List` (kubectl skips
# the server's fieldValidation for List and validates every item against the
# v2 definitions); `explain` through v2 for built-in kinds and a CRD's kind;
# content negotiation, ETag/If-None-Match and invalidation when CRDs change.

oa2_deployment() { # NAME [extra spec line]
  cat <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
  namespace: default
spec:
  replicas: 1
  ${2:-}
  selector:
    matchLabels: {app: $1}
  template:
    metadata:
      labels: {app: $1}
    spec:
      containers:
      - name: main
        image: nginx:1.27
        ports: [{containerPort: 80}]
YAML
}

oa2_crd() {
  cat <<'YAML'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.oa2.example.com
spec:
  group: oa2.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: Gadget is a test gadget.
        properties:
          spec:
            type: object
            description: What the gadget should be.
            properties:
              size: {type: integer, description: How big the gadget is.}
              color: {type: string, nullable: true}
              port: {x-kubernetes-int-or-string: true, anyOf: [{type: integer}, {type: string}]}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
YAML
}

# oa2_list NAME BOGUS: a v1 List (JSON) of a ConfigMap and a Deployment; with
# BOGUS=1 the ConfigMap carries an unknown field.
oa2_list() {
  local extra=""
  [ "$2" = 1 ] && extra=',"bogus":1'
  cat <<JSON
{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"$1-cm","namespace":"default"},"data":{"a":"b"}$extra},
 {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$1-dep","namespace":"default"},
  "spec":{"replicas":1,"selector":{"matchLabels":{"app":"$1"}},"template":{"metadata":{"labels":{"app":"$1"}},
  "spec":{"containers":[{"name":"c","image":"nginx","resources":{"limits":{"cpu":1,"memory":"64Mi"}},
  "ports":[{"containerPort":8080,"protocol":"TCP"}]}]}}}}]}
JSON
}

openapi2_old_kubectl() { # KUBECTL VERSION
  local k=$1 v=$2 d=$E2E_TMP/oa2
  local K=("$k" --kubeconfig "$KCFG" --cache-dir "$d/cache-$v")
  oa2_deployment "web-${v/./-}" >"$d/dep-$v.yaml"
  oa2_deployment "web-${v/./-}" "bogusField: 3" >"$d/bad-$v.yaml"
  expect "openapi2 $v: apply of a Deployment with default validation" "created" \
    "${K[@]}" apply -f "$d/dep-$v.yaml"
  expect "openapi2 $v: second apply computes a patch from v2 (unchanged)" "unchanged" \
    "${K[@]}" apply -f "$d/dep-$v.yaml"
  sed -i 's/nginx:1.27/nginx:1.28/' "$d/dep-$v.yaml"
  expect "openapi2 $v: apply of a changed Deployment patches it" "configured" \
    "${K[@]}" apply -f "$d/dep-$v.yaml"
  expect_eq "openapi2 $v: the strategic patch kept the container list merged by name" \
    "main=nginx:1.28" "${K[@]}" get deploy "web-${v/./-}" \
    -o 'jsonpath={range .spec.template.spec.containers[*]}{.name}={.image}{end}'
  expect_fail "openapi2 $v: an unknown field is refused (strict)" 'unknown field "spec.bogusField"' \
    "${K[@]}" apply -f "$d/bad-$v.yaml"
  oa2_list "l${v/./-}" 1 >"$d/list-bad-$v.json"
  expect_fail "openapi2 $v: unknown field in a List refused client-side from the v2 definitions" \
    'ValidationError\(ConfigMap\): unknown field "bogus" in io.k8s.api.core.v1.ConfigMap' \
    "${K[@]}" apply -f "$d/list-bad-$v.json"
  expect "openapi2 $v: explain pods.spec.containers lists the fields" \
    "image[[:space:]]+<string>" "${K[@]}" explain pods.spec.containers
  expect "openapi2 $v: explain --output=plaintext-openapiv2 of a Deployment field" \
    "FIELD: +replicas <integer>" \
    "${K[@]}" explain deployments.spec.replicas --output=plaintext-openapiv2
}

openapi2_suite() {
  local saved_kcfg=${KCFG:-} saved_dir=${DATA_DIR:-} saved_pid=${SERVER_PID:-} saved_url=${SERVER_URL:-}
  local d=$E2E_TMP/oa2 gsdk=/usr/lib/google-cloud-sdk/bin
  mkdir -p "$d"
  start_server oa2 || { fail "openapi2: server did not start"; return 1; }
  local K=(kubectl --kubeconfig "$KCFG" --cache-dir "$d/cache")
  local pb='application/com.github.proto-openapi.spec.v2@v1.0+protobuf'

  expect "openapi2: JSON document with kube's definition names and GVKs" \
    '^\[\{"group":"","version":"v1","kind":"Pod"\}\]$' \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq -c '.definitions[\"io.k8s.api.core.v1.Pod\"][\"x-kubernetes-group-version-kind\"]'"
  expect "openapi2: the PATCH op of a Deployment declares fieldValidation" \
    '"name":"fieldValidation","in":"query"' \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq -c '.paths[\"/apis/apps/v1/namespaces/{namespace}/deployments/{name}\"].patch'"
  expect_eq "openapi2: a list operation has kube's list and watch query parameters, in its order, and description" \
    'list or watch objects of kind Pod|allowWatchBookmarks:boolean continue:string fieldSelector:string labelSelector:string limit:integer resourceVersion:string resourceVersionMatch:string sendInitialEvents:boolean timeoutSeconds:integer watch:boolean' \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq -r '.paths[\"/api/v1/namespaces/{namespace}/pods\"].get | .description + \"|\" + ([.parameters[] | select(.in == \"query\") | .name + \":\" + .type] | join(\" \"))'"
  expect_eq "openapi2: kube's operationIds and tags (group, version, Namespaced, kind, subresource)" \
    'listCoreV1NamespacedPod:core_v1 patchCoreV1NamespacedPodStatus:core_v1 deleteAppsV1CollectionNamespacedDeployment:apps_v1 readRbacAuthorizationV1ClusterRole:rbacAuthorization_v1 listFlowcontrolApiserverV1FlowSchema:flowcontrolApiserver_v1' \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq -r '[.paths[\"/api/v1/namespaces/{namespace}/pods\"].get, .paths[\"/api/v1/namespaces/{namespace}/pods/{name}/status\"].patch, .paths[\"/apis/apps/v1/namespaces/{namespace}/deployments\"].delete, .paths[\"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}\"].get, .paths[\"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas\"].get] | map(.operationId + \":\" + (.tags | join(\",\"))) | join(\" \")'"
  expect_eq "openapi2: a list answers its list kind; every namespace's list has its path (ForAllNamespaces)" \
    '#/definitions/io.k8s.api.core.v1.PodList listCoreV1PodForAllNamespaces #/definitions/io.k8s.api.apps.v1.DeploymentList' \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq -r '[.paths[\"/api/v1/namespaces/{namespace}/pods\"].get.responses[\"200\"].schema[\"\$ref\"], .paths[\"/api/v1/pods\"].get.operationId, .paths[\"/apis/apps/v1/deployments\"].get.responses[\"200\"].schema[\"\$ref\"]] | join(\" \")'"
  expect_eq "openapi2: pretty on every path; a delete's options and a deletecollection's list ones, in kube's order" \
    'namespace,pretty|dryRun,gracePeriodSeconds,ignoreStoreReadErrorWithClusterBreakingPotential,orphanDependents,propagationPolicy|continue,dryRun,fieldSelector,gracePeriodSeconds,ignoreStoreReadErrorWithClusterBreakingPotential,labelSelector,limit,orphanDependents,propagationPolicy,resourceVersion,resourceVersionMatch,sendInitialEvents,timeoutSeconds' \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq -r '.paths[\"/api/v1/namespaces/{namespace}/pods\"] as \$c | .paths[\"/api/v1/namespaces/{namespace}/pods/{name}\"] as \$i | [(\$c.parameters | map(.name) | join(\",\")), (\$i.delete.parameters | map(.name) | join(\",\")), (\$c.delete.parameters | map(.name) | join(\",\"))] | join(\"|\")'"
  expect_eq "openapi2: every query and path parameter of the pods paths says what it does" "0" \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq '[.paths[\"/api/v1/namespaces/{namespace}/pods\"], .paths[\"/api/v1/namespaces/{namespace}/pods/{name}\"] | (.parameters // [])[], (.[] | objects | .parameters // [] | .[]) | select(.in != \"body\" and ((.description // \"\") | length) == 0)] | length'"
  expect "openapi2: limit's description names the continue token" 'metadata.continue' \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq -r '.paths[\"/api/v1/namespaces/{namespace}/pods\"].get.parameters[] | select(.name == \"limit\") | .description'"
  expect_eq "openapi2: every operationId is unique" "0" \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq '[.paths[][] | objects | .operationId] | group_by(.) | map(select(length > 1)) | length'"
  expect "openapi2: containers carry the strategic merge key" \
    '"x-kubernetes-patch-merge-key":"name".*"x-kubernetes-patch-strategy":"merge"' \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq -cS '.definitions[\"io.k8s.api.core.v1.PodSpec\"].properties.containers'"
  expect "openapi2: protobuf when asked, with kube's Content-Type" \
    '[Cc]ontent-[Tt]ype: application/com.github.proto-openapi.spec.v2.v1.0\+protobuf' \
    kcurl -s -o /dev/null -D - -H "Accept: $pb" "$SERVER_URL/openapi/v2"
  local etag
  etag=$(kcurl -s -o /dev/null -D - -H "Accept: $pb" "$SERVER_URL/openapi/v2" |
    awk -F': ' 'tolower($1)=="etag" {gsub("\r", "", $2); print $2}')
  expect_eq "openapi2: If-None-Match with the ETag gives 304" "304" \
    kcurl -s -o /dev/null -w '%{http_code}' -H "Accept: $pb" -H "If-None-Match: $etag" \
    "$SERVER_URL/openapi/v2"

  local v
  for v in 1.27 1.28; do
    if [ -x "$gsdk/kubectl.$v" ]; then openapi2_old_kubectl "$gsdk/kubectl.$v" "$v"
    else fail "openapi2: kubectl.$v is not installed in $gsdk"; fi
  done

  expect "openapi2: explain --output=plaintext-openapiv2 pods (current kubectl)" \
    "Pod is a collection of containers" "${K[@]}" explain --output=plaintext-openapiv2 pods
  oa2_list l 0 >"$d/list.json"
  oa2_list l 1 >"$d/list-bad.json"
  expect "openapi2: apply of a kind: List with validation on" \
    "configmap/l-cm created" "${K[@]}" apply -f "$d/list.json"
  expect_fail "openapi2: an unknown field inside a List is refused client-side" \
    'unknown field "bogus" in io.k8s.api.core.v1.ConfigMap' "${K[@]}" apply -f "$d/list-bad.json"

  oa2_crd >"$d/crd.yaml"
  expect "openapi2: CRD created" "created" "${K[@]}" apply -f "$d/crd.yaml"
  local new_etag
  new_etag=$(kcurl -s -o /dev/null -D - -H "Accept: $pb" "$SERVER_URL/openapi/v2" |
    awk -F': ' 'tolower($1)=="etag" {gsub("\r", "", $2); print $2}')
  if [ -n "$new_etag" ] && [ "$new_etag" != "$etag" ]; then pass "openapi2: a CRD changes the ETag"
  else fail "openapi2: ETag unchanged after a CRD ($etag / $new_etag)"; fi
  expect_eq "openapi2: a CRD's list kind, as kube's CRD builder makes it, answers its lists" \
    'GadgetList is a list of Gadget|items|#/definitions/com.example.oa2.v1.Gadget|oa2.example.com/v1/GadgetList|#/definitions/com.example.oa2.v1.GadgetList' \
    sh -c "kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq -r '.definitions[\"com.example.oa2.v1.GadgetList\"] as \$l | [\$l.description, (\$l.required | join(\",\")), \$l.properties.items.items[\"\$ref\"], (\$l[\"x-kubernetes-group-version-kind\"][0] | .group + \"/\" + .version + \"/\" + .kind), .paths[\"/apis/oa2.example.com/v1/namespaces/{namespace}/gadgets\"].get.responses[\"200\"].schema[\"\$ref\"]] | join(\"|\")'"
  expect "openapi2: a CRD's kind is explainable through v2 (current kubectl)" \
    "How big the gadget is" \
    "${K[@]}" explain gadgets.spec.size --output=plaintext-openapiv2
  if [ -x "$gsdk/kubectl.1.27" ]; then
    expect "openapi2 1.27: a CRD's kind is explainable through v2" \
      "What the gadget should be" \
      "$gsdk/kubectl.1.27" --kubeconfig "$KCFG" --cache-dir "$d/cache-crd" \
      explain gadgets.spec --output=plaintext-openapiv2
    printf '%s\n' 'apiVersion: oa2.example.com/v1' 'kind: Gadget' 'metadata: {name: g1, namespace: default}' \
      'spec: {size: 3, port: 80, extra: {any: thing}}' >"$d/g1.yaml"
    expect "openapi2 1.27: apply of a custom object with default validation" "created" \
      "$gsdk/kubectl.1.27" --kubeconfig "$KCFG" --cache-dir "$d/cache-crd" apply -f "$d/g1.yaml"
    sed -i 's/size: 3/size: 4/' "$d/g1.yaml"
    expect "openapi2 1.27: second apply of the custom object (merge patch)" "configured" \
      "$gsdk/kubectl.1.27" --kubeconfig "$KCFG" --cache-dir "$d/cache-crd" apply -f "$d/g1.yaml"
  fi
  expect "openapi2: deleting the CRD removes its definition" "^0$" \
    sh -c "kubectl --kubeconfig '$KCFG' delete crd gadgets.oa2.example.com >/dev/null &&
      kubectl --kubeconfig '$KCFG' get --raw /openapi/v2 | jq '[.definitions | keys[] | select(startswith(\"com.example.oa2\"))] | length'"

  stop_server
  KCFG=$saved_kcfg DATA_DIR=$saved_dir SERVER_PID=$saved_pid SERVER_URL=$saved_url
}
