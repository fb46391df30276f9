# SPDX-License-Identifier: Apache-2.0
# The aggregation layer end to end (apiregistration.k8s.io/v1 APIService):
# the local APIServices kube's autoregister and crdregistration controllers
# keep, kube-aggregator's validation and columns; then an APIService backed
# by a tenant Service whose cluster IP is a Python HTTPS server on
# 127.0.0.1 (apiservice_server.py) serving a tiny aggregated API: discovery,
# proxying with the front-proxy identity headers, RBAC in the tenant first,
# availability and its loss. Sourced by run.sh.

apiservice_suite() {
  echo "== apiservice: the aggregation layer"
  start_server apisvc || { fail "apiservice: server did not start"; return; }
  local K=(kubectl --kubeconfig "$KCFG") d=$E2E_TMP/apisvc-backend i out
  local old=$GSDK/kubectl.1.30

  echo "-- local APIServices"
  expect "get apiservices: the built-in group/versions are Local and available" \
    'v1\.apps +Local +True ' "${K[@]}" get apiservices
  expect "... the core group's v1. and autoscaling's v2" \
    '^v1\. +Local +True ' "${K[@]}" get apiservices v1. v2.autoscaling
  expect_eq "... one per served group/version (kube's priority table)" "20" \
    bash -c "kubectl --kubeconfig $KCFG get apiservices -o name | wc -l"
  expect_eq "v1.apps as kube's autoregister makes it" \
    "onstart apps v1 17800 15 None Available=True Local: Local APIServices are always available" \
    "${K[@]}" get apiservice v1.apps -o go-template='{{index .metadata.labels "kube-aggregator.kubernetes.io/automanaged"}} {{.spec.group}} {{.spec.version}} {{.spec.groupPriorityMinimum}} {{.spec.versionPriority}} {{or .spec.service "None"}} {{range .status.conditions}}{{.type}}={{.status}} {{.reason}}: {{.message}}{{end}}'
  expect_eq "v1. has no group and priority 18000/1" "<no value> 18000 1" \
    "${K[@]}" get apiservice v1. -o go-template='{{.spec.group}} {{.spec.groupPriorityMinimum}} {{.spec.versionPriority}}'
  expect "api-resources lists apiservices (api-extensions category)" \
    'apiservices +apiregistration\.k8s\.io/v1 +false +APIService' "${K[@]}" api-resources
  expect "kubectl 1.30 reads them too" 'v1\.batch +Local +True' "$old" --kubeconfig "$KCFG" get apiservices
  expect "explain apiservice.spec (OpenAPI from the type tables)" \
    'groupPriorityMinimum' "${K[@]}" explain apiservice.spec

  echo "-- CRD group/versions (crdregistration)"
  "${K[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.agg.example.com}
spec:
  group: agg.example.com
  names: {kind: Gizmo, plural: gizmos}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1beta1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
EOF
  expect_until "a CRD's served versions get Local APIServices" "v1.agg.example.com v1beta1.agg.example.com" \
    bash -c "kubectl --kubeconfig $KCFG get apiservices -o name | grep agg.example | sed 's#.*/##' | tr '\n' ' ' | sed 's/ \$//'"
  expect_eq "... labelled automanaged=true, priorities 1000/100" "true 1000 100" \
    "${K[@]}" get apiservice v1.agg.example.com -o go-template='{{index .metadata.labels "kube-aggregator.kubernetes.io/automanaged"}} {{.spec.groupPriorityMinimum}} {{.spec.versionPriority}}'
  "${K[@]}" delete apiservice v1beta1.agg.example.com >/dev/null 2>&1
  expect_until "... and put back when deleted while the CRD serves it" "v1beta1.agg.example.com" \
    "${K[@]}" get apiservice v1beta1.agg.example.com -o name --ignore-not-found -o 'jsonpath={.metadata.name}'
  "${K[@]}" delete crd gizmos.agg.example.com >/dev/null
  expect_until "... and gone with the CRD" "" \
    bash -c "kubectl --kubeconfig $KCFG get apiservices -o name | grep agg.example"

  echo "-- validation"
  apisvc_yaml() { # NAME SPEC (flow YAML)
    printf 'apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: %s}\nspec: %s\n' "$1" "$2"
  }
  expect_fail "a name other than <version>.<group>: kube's cause" \
    'metadata.name: Invalid value: "v1.bad": must be `spec.version\+"\."\+spec.group`: "v1alpha1.wardle"' \
    "${K[@]}" apply -f <(apisvc_yaml v1.bad '{group: wardle, version: v1alpha1, groupPriorityMinimum: 10, versionPriority: 10}')
  expect_fail "... priorities out of range" \
    'spec.versionPriority: Invalid value: 1001: must be positive and less than 1000' \
    "${K[@]}" apply -f <(apisvc_yaml v1alpha1.wardle '{group: wardle, version: v1alpha1, groupPriorityMinimum: 0, versionPriority: 1001}')
  expect_fail "a local APIService with insecureSkipTLSVerify" \
    'spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify' \
    "${K[@]}" apply -f <(apisvc_yaml v1.local.example.com '{group: local.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true}')
  expect_fail "a service without namespace" 'spec.service.namespace: Required value' \
    "${K[@]}" apply -f <(apisvc_yaml v1.svc.example.com '{group: svc.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true, caBundle: aGVsbG8=, service: {name: x}}')
  expect_fail "... insecureSkipTLSVerify with a caBundle" \
    'spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present' \
    "${K[@]}" apply -f <(apisvc_yaml v1.svc.example.com '{group: svc.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true, caBundle: aGVsbG8=, service: {name: x}}')
  expect "a PUT without resourceVersion: Invalid (AllowUnconditionalUpdate false)" \
    'is invalid: metadata\.resourceVersion: Invalid value: 0x0: must be specified for an update".*"code":422' \
    kcurl -X PUT -H 'Content-Type: application/json' "$SERVER_URL/apis/apiregistration.k8s.io/v1/apiservices/v1.apps" \
    -d '{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.apps"},"spec":{"group":"apps","version":"v1","groupPriorityMinimum":1,"versionPriority":1}}'
  expect_fail "a condition status other than True, False, Unknown on /status" \
    'status.conditions\[0\].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown"' \
    "${K[@]}" patch apiservice v1.apps --subresource=status --type=merge \
    -p '{"status":{"conditions":[{"type":"Available","status":"Maybe"}]}}'
  expect_eq "an update through /status keeps the spec; the main resource keeps the status" \
    "17800 True" bash -c "kubectl --kubeconfig $KCFG patch apiservice v1.apps --subresource=status --type=merge -p '{\"spec\":{\"groupPriorityMinimum\":5}}' >/dev/null && kubectl --kubeconfig $KCFG patch apiservice v1.apps --type=merge -p '{\"status\":{\"conditions\":[]}}' >/dev/null && kubectl --kubeconfig $KCFG get apiservice v1.apps -o jsonpath='{.spec.groupPriorityMinimum} {.status.conditions[0].status}'"
}
