# SPDX-License-Identifier: Apache-2.0
# Admission policies (admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy
# and ValidatingAdmissionPolicyBinding) stored as kube-apiserver stores them,
# with real kubectl (the installed one and kubectl 1.30): discovery (cluster
# scope, category api-extensions, v1 only), apply, kube's defaults, the
# NAME VALIDATIONS PARAMKIND AGE and NAME POLICYNAME PARAMREF AGE columns,
# explain, kube's validation causes, the policy's status subresource and
# generation, the status controller's observedGeneration and typeChecking
# (expressions type-checked against the matched kinds' schemas), server-side
# apply, delete; only cluster-admin may write them
# (not the aggregated admin, edit and view roles). This server does not
# evaluate them here (t_vapeval.sh does); every policy here matches only
# example.com widgets or is never bound, and the suite deletes what it
# made. Sourced by run.sh.

# vap_policy NAME: a policy with a param kind, one validation and an audit
# annotation
vap_policy() {
  cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: $1
spec:
  paramKind:
    apiVersion: example.com/v1
    kind: WidgetLimit
  matchConstraints:
    resourceRules:
    - apiGroups: ["example.com"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["widgets"]
  validations:
  - expression: "object.spec.replicas <= params.maxReplicas"
    message: "too many replicas"
    reason: Invalid
  auditAnnotations:
  - key: replicas
    valueExpression: "string(object.spec.replicas)"
YAML
}

# vap_binding NAME POLICY: a binding with a param reference and match resources
vap_binding() {
  cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: $1
spec:
  policyName: $2
  validationActions: [Deny, Audit]
  paramRef:
    name: limits
    namespace: default
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels: {env: test}
YAML
}

# vap_bad: a policy with most of kube's causes
vap_bad() {
  cat <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: vap-bad
spec:
  failurePolicy: Sometimes
  paramKind:
    apiVersion: example.com/v1/x
  matchConstraints:
    resourceRules:
    - apiGroups: ["example.com"]
      apiVersions: ["v1"]
      operations: ["*", "CREATE"]
      resources: ["widgets"]
      resourceNames: ["a/b"]
  matchConditions:
  - name: "bad name"
    expression: "true"
  variables:
  - name: "in"
    expression: ""
  validations:
  - expression: " "
    message: "line one\nline two"
    reason: Unauthorized
  auditAnnotations:
  - key: "Bad Key"
    valueExpression: "'x'"
YAML
}

# vap_bad_binding: a binding with most of kube's causes
vap_bad_binding() {
  cat <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: vapb-bad
spec:
  paramRef:
    name: limits
    selector: {matchLabels: {a: b}}
  matchResources:
    matchPolicy: Roughly
  validationActions: [Deny, Warn, Block]
YAML
}

vapcfg_suite() {
  # the "main" server, whatever suite started a server last (dynamic scope:
  # kcurl and the helpers read these too)
  local KCFG=$E2E_TMP/main/kubeconfig DATA_DIR=$E2E_TMP/main SERVER_URL
  SERVER_URL=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$KCFG")
  echo "== admission policies"
  local K=(kubectl --kubeconfig "$KCFG") d="$E2E_TMP/vap"
  local K130=("${GSDK:-/usr/lib/google-cloud-sdk/bin}/kubectl.1.30" --kubeconfig "$KCFG")
  mkdir -p "$d"
  expect "api-resources: validatingadmissionpolicies, cluster-scoped, no short name" \
    '^validatingadmissionpolicies +admissionregistration\.k8s\.io/v1 +false +ValidatingAdmissionPolicy$' \
    bash -c "kubectl --kubeconfig $KCFG api-resources | grep '^validatingadmissionpolicies '"
  expect "api-resources: validatingadmissionpolicybindings, cluster-scoped, no short name" \
    '^validatingadmissionpolicybindings +admissionregistration\.k8s\.io/v1 +false +ValidatingAdmissionPolicyBinding$' \
    bash -c "kubectl --kubeconfig $KCFG api-resources | grep '^validatingadmissionpolicybindings '"
  expect "api-resources: both in the api-extensions category" \
    'validatingadmissionpolicies\.admissionregistration\.k8s\.io validatingadmissionpolicybindings\.admissionregistration\.k8s\.io' \
    bash -c "kubectl --kubeconfig $KCFG api-resources --categories=api-extensions -o name | sort | tr '\n' ' '"
  expect_eq "api-versions: admissionregistration.k8s.io/v1 only (kube 1.33 serves no v1beta1 by default)" \
    "admissionregistration.k8s.io/v1" \
    bash -c "kubectl --kubeconfig $KCFG api-versions | grep '^admissionregistration'"
  expect "discovery: the policy's status subresource" '"validatingadmissionpolicies/status"' \
    kcurl "$SERVER_URL/apis/admissionregistration.k8s.io/v1"

  echo "-- RBAC: cluster-admin only, as kube's bootstrap roles"
  "${K[@]}" create clusterrolebinding vap-admin --clusterrole=admin --user=vap-admin >/dev/null
  "${K[@]}" create clusterrolebinding vap-edit --clusterrole=edit --user=vap-edit >/dev/null
  "${K[@]}" create clusterrolebinding vap-view --clusterrole=view --user=vap-view >/dev/null
  local u v
  for u in admin edit view; do
    for v in "create validatingadmissionpolicies" "list validatingadmissionpolicybindings" \
      "patch validatingadmissionpolicies/status"; do
      expect_eq "aggregated $u role: no $v" "no" \
        bash -c "kubectl --kubeconfig $KCFG auth can-i $v --as=vap-$u 2>/dev/null"
    done
  done
  expect_eq "cluster-admin (system:masters) may create them" "yes" \
    bash -c "kubectl --kubeconfig $KCFG auth can-i create validatingadmissionpolicybindings --as=vap-x --as-group=system:masters 2>/dev/null"
  "${K[@]}" delete clusterrolebinding vap-admin vap-edit vap-view >/dev/null

  echo "-- apply, columns, defaults"
  vap_policy vap-replicas >"$d/p.yaml"
  vap_binding vap-replicas-binding vap-replicas >"$d/b.yaml"
  expect "apply a ValidatingAdmissionPolicy" \
    '^validatingadmissionpolicy\.admissionregistration\.k8s\.io/vap-replicas created$' \
    "${K[@]}" apply -f "$d/p.yaml"
  expect "apply a ValidatingAdmissionPolicyBinding" \
    '^validatingadmissionpolicybinding\.admissionregistration\.k8s\.io/vap-replicas-binding created$' \
    "${K[@]}" apply -f "$d/b.yaml"
  expect "get validatingadmissionpolicies: NAME VALIDATIONS PARAMKIND AGE" \
    '^NAME +VALIDATIONS +PARAMKIND +AGE$' \
    bash -c "kubectl --kubeconfig $KCFG get validatingadmissionpolicies | head -1"
  expect "get the policy: one validation, its param kind" \
    '^vap-replicas +1 +example\.com/v1/WidgetLimit +[0-9]+s$' \
    "${K[@]}" get validatingadmissionpolicy vap-replicas --no-headers
  expect "get validatingadmissionpolicybindings: NAME POLICYNAME PARAMREF AGE" \
    'NAME +POLICYNAME +PARAMREF +AGE.*vap-replicas-binding +vap-replicas +default/limits +[0-9]+s' \
    bash -c "kubectl --kubeconfig $KCFG get validatingadmissionpolicybindings | tr '\n' ' '"
  expect "kubectl 1.30: the same columns" \
    'NAME +VALIDATIONS +PARAMKIND +AGE.*vap-replicas +1 +example\.com/v1/WidgetLimit' \
    bash -c "${K130[*]} get validatingadmissionpolicies | tr '\n' ' '"
  "${K[@]}" get validatingadmissionpolicy vap-replicas -o yaml >"$d/p.out.yaml"
  expect "-o yaml: failurePolicy Fail, matchPolicy Equivalent, selectors {}, scope * defaulted" \
    'failurePolicy: Fail.*matchPolicy: Equivalent.*namespaceSelector: \{\}.*objectSelector: \{\}.*scope: .\*' \
    tr '\n' ' ' <"$d/p.out.yaml"
  expect "-o yaml: generation 1" 'generation: 1 ' tr '\n' ' ' <"$d/p.out.yaml"
  expect_until "the status controller: observedGeneration 1, typeChecking without warnings" \
    '1 {}' "${K[@]}" get validatingadmissionpolicy vap-replicas \
    -o jsonpath='{.status.observedGeneration} {.status.typeChecking}'
  expect_eq "binding: match resources defaulted, labels kept, paramRef as given" \
    'Equivalent {} test Deny ["Deny","Audit"] 1' \
    "${K[@]}" get validatingadmissionpolicybinding vap-replicas-binding \
    -o jsonpath='{.spec.matchResources.matchPolicy} {.spec.matchResources.objectSelector} {.spec.matchResources.namespaceSelector.matchLabels.env} {.spec.paramRef.parameterNotFoundAction} {.spec.validationActions} {.metadata.generation}'

  echo "-- explain"
  expect "explain validatingadmissionpolicy.spec: its fields" \
    'auditAnnotations.*failurePolicy.*matchConditions.*matchConstraints.*paramKind.*validations.*variables' \
    bash -c "kubectl --kubeconfig $KCFG explain validatingadmissionpolicy.spec | tr '\n' ' '"
  expect "explain validatingadmissionpolicybinding.spec.paramRef" \
    'name.*namespace.*parameterNotFoundAction.*selector' \
    bash -c "kubectl --kubeconfig $KCFG explain validatingadmissionpolicybinding.spec.paramRef | tr '\n' ' '"

  echo "-- validation"
  vap_bad >"$d/bad.yaml"
  "${K[@]}" apply -f "$d/bad.yaml" >"$d/bad.out" 2>&1
  local m
  for m in \
    'The ValidatingAdmissionPolicy "vap-bad" is invalid' \
    'spec\.failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore"' \
    'spec\.paramKind\.apiVersion: Invalid value: "example\.com/v1/x": unexpected GroupVersion string: example\.com/v1/x' \
    'spec\.paramKind\.kind: Required value' \
    "spec\.matchConstraints\.resourceRules\[0\]\.resourceNames\[0\]: Invalid value: \"a/b\": may not contain '/'" \
    "spec\.matchConstraints\.resourceRules\[0\]\.operations: Invalid value: \[\]admissionregistration\.OperationType\{\"\*\", \"CREATE\"\}: if '\*' is present, must not specify other operations" \
    'spec\.matchConditions\[0\]\.name: Invalid value: "bad name": name part must consist of alphanumeric characters' \
    'spec\.variables\[0\]\.name: Invalid value: "in": name is not a valid CEL identifier' \
    'spec\.variables\[0\]\.expression: Required value: expression is not specified' \
    'spec\.validations\[0\]\.expression: Required value: expression is not specified' \
    'spec\.validations\[0\]\.message: Invalid value: "line one\\nline two": message must not contain line breaks' \
    'spec\.validations\[0\]\.reason: Unsupported value: "Unauthorized": supported values: "Forbidden", "Invalid", "RequestEntityTooLarge"' \
    'spec\.auditAnnotations\[0\]\.key: Invalid value: "vap-bad/Bad Key": name part must consist'; do
    expect "invalid policy: $(sed 's/\\//g' <<<"$m" | cut -c1-90)" "$m" cat "$d/bad.out"
  done
  vap_bad_binding >"$d/badb.yaml"
  "${K[@]}" apply -f "$d/badb.yaml" >"$d/badb.out" 2>&1
  for m in \
    'The ValidatingAdmissionPolicyBinding "vapb-bad" is invalid' \
    'spec\.policyName: Required value' \
    'spec\.paramRef\.name: Forbidden: name and selector are mutually exclusive' \
    'spec\.paramRef\.selector: Forbidden: name and selector are mutually exclusive' \
    'spec\.paramRef\.parameterNotFoundAction: Required value' \
    'spec\.matchResouces\.matchPolicy: Unsupported value: "Roughly": supported values: "Equivalent", "Exact"' \
    'spec\.validationActions\[2\]: Unsupported value: "Block": supported values: "Audit", "Deny", "Warn"' \
    'spec\.validationActions: Invalid value: \[\]admissionregistration\.ValidationAction\{"Deny", "Warn", "Block"\}: must not contain both Deny and Warn'; do
    expect "invalid binding: $(sed 's/\\//g' <<<"$m" | cut -c1-90)" "$m" cat "$d/badb.out"
  done
  expect "no validations and no audit annotations" \
    'spec\.validations: Required value: validations or auditAnnotations must contain at least one item.*spec\.auditAnnotations: Required value' \
    bash -c "kubectl --kubeconfig $KCFG create -f - 2>&1 <<'YAML' | tr '\n' ' '
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap-empty}
spec:
  matchConstraints: {}
YAML"
  expect_rc "the 422 is kube's Invalid status" 0 '"reason":"Invalid".*"code":422' \
    kcurl -X POST -H 'Content-Type: application/json' \
    "$SERVER_URL/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings" \
    -d '{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"vapb-x"},"spec":{"policyName":"p"}}'
  expect_eq "none of the invalid objects was stored" "vap-replicas vap-replicas-binding" \
    bash -c "kubectl --kubeconfig $KCFG get validatingadmissionpolicies,validatingadmissionpolicybindings -o name | sed 's|.*/||' | grep vap | tr '\n' ' ' | sed 's/ \$//'"

  echo "-- status subresource, generation"
  expect_eq "status patch: status changes, the spec in it is ignored, generation stays" \
    "1 Fail 1 TypeChecked" \
    "${K[@]}" patch validatingadmissionpolicy vap-replicas --subresource=status --type=merge \
    -p '{"spec":{"failurePolicy":"Ignore"},"status":{"observedGeneration":1,"typeChecking":{"expressionWarnings":[{"fieldRef":"spec.validations[0].expression","warning":"no such field"}]},"conditions":[{"type":"TypeChecked","status":"True","reason":"Checked","message":"ok","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}' \
    -o jsonpath='{.status.observedGeneration} {.spec.failurePolicy} {.metadata.generation} {.status.conditions[0].type}'
  expect "an invalid status: kube's status causes" \
    'status\.typeChecking\.expressionWarnings\[0\]\.warning: Required value.*status\.conditions\[0\]\.status: Unsupported value: "Maybe": supported values: "False", "True", "Unknown"' \
    bash -c "kubectl --kubeconfig $KCFG patch validatingadmissionpolicy vap-replicas --subresource=status --type=merge -p '{\"status\":{\"typeChecking\":{\"expressionWarnings\":[{\"fieldRef\":\"x\"}]},\"conditions\":[{\"type\":\"TypeChecked\",\"status\":\"Maybe\",\"reason\":\"R\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}' 2>&1 | tr '\n' ' '"
  expect_eq "a spec patch: the spec changes, the status in it is ignored, generation 2" \
    "Ignore 1 2" \
    "${K[@]}" patch validatingadmissionpolicy vap-replicas --type=merge \
    -p '{"spec":{"failurePolicy":"Ignore"},"status":{"observedGeneration":9}}' \
    -o jsonpath='{.spec.failurePolicy} {.status.observedGeneration} {.metadata.generation}'
  "${K[@]}" label validatingadmissionpolicy vap-replicas team=widgets >/dev/null
  expect_eq "a label change leaves the generation" "widgets 2" \
    "${K[@]}" get validatingadmissionpolicy vap-replicas \
    -o jsonpath='{.metadata.labels.team} {.metadata.generation}'
  expect_fail "an update may not break the policy" \
    'spec\.validations\[0\]\.reason: Unsupported value: "Teapot"' \
    "${K[@]}" patch validatingadmissionpolicy vap-replicas --type=json \
    -p '[{"op":"replace","path":"/spec/validations/0/reason","value":"Teapot"}]'
  sed 's/\[Deny, Audit\]/[Warn]/' "$d/b.yaml" >"$d/b2.yaml"
  expect "apply the binding again with a change" \
    '^validatingadmissionpolicybinding\.admissionregistration\.k8s\.io/vap-replicas-binding configured$' \
    "${K[@]}" apply -f "$d/b2.yaml"
  expect_eq "the binding's change is stored and its generation bumped" '["Warn"] 2' \
    "${K[@]}" get validatingadmissionpolicybinding vap-replicas-binding \
    -o jsonpath='{.spec.validationActions} {.metadata.generation}'
  # kubectl replace fills in the live resourceVersion itself: a plain PUT
  expect "PUT without a resourceVersion: kube's Invalid (no unconditional update)" \
    '"message":"validatingadmissionpolicybindings\.admissionregistration\.k8s\.io \\"vap-replicas-binding\\" is invalid: metadata\.resourceVersion: Invalid value: 0x0: must be specified for an update".*"code":422' \
    kcurl -X PUT -H 'Content-Type: application/json' \
    "$SERVER_URL/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/vap-replicas-binding" \
    -d '{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"vap-replicas-binding"},"spec":{"policyName":"vap-replicas","validationActions":["Deny"]}}'
  expect_eq "the binding is unchanged" '["Warn"] 2' \
    "${K[@]}" get validatingadmissionpolicybinding vap-replicas-binding \
    -o jsonpath='{.spec.validationActions} {.metadata.generation}'
  expect "replace with the live resourceVersion" \
    'validatingadmissionpolicybinding\.admissionregistration\.k8s\.io/vap-replicas-binding replaced' \
    bash -c "kubectl --kubeconfig $KCFG get validatingadmissionpolicybinding vap-replicas-binding -o json | sed 's/\"Warn\"/\"Audit\"/' | kubectl --kubeconfig $KCFG replace -f -"
  expect_eq "the replaced binding" '["Audit"] 3' \
    "${K[@]}" get validatingadmissionpolicybinding vap-replicas-binding \
    -o jsonpath='{.spec.validationActions} {.metadata.generation}'
  expect "a policy's status PUT needs a resourceVersion too" \
    '"reason":"Invalid".*"kind":"validatingadmissionpolicies".*"field":"metadata.resourceVersion".*"code":422' \
    kcurl -X PUT -H 'Content-Type: application/json' \
    "$SERVER_URL/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/vap-replicas/status" \
    -d '{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"vap-replicas"},"status":{}}'
  expect "a binding has no status subresource: 404" '"code":404' \
    kcurl "$SERVER_URL/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/vap-replicas-binding/status"

  echo "-- server-side apply, kubectl 1.30, delete"
  vap_policy vap-ssa >"$d/ssa.yaml"
  expect "server-side apply of a policy" \
    'validatingadmissionpolicy\.admissionregistration\.k8s\.io/vap-ssa serverside-applied' \
    "${K[@]}" apply --server-side -f "$d/ssa.yaml"
  expect_until "server-side apply: defaults, and the status the controller fills" \
    'Fail Equivalent 1 {}' \
    "${K[@]}" get validatingadmissionpolicy vap-ssa \
    -o jsonpath='{.spec.failurePolicy} {.spec.matchConstraints.matchPolicy} {.status.observedGeneration} {.status.typeChecking}'
  vap_binding vap-ssa-binding vap-ssa | sed 's/name: limits/selector: {matchLabels: {tier: gold}}/' >"$d/ssab.yaml"
  expect "kubectl 1.30 applies a binding with a param selector" \
    'validatingadmissionpolicybinding\.admissionregistration\.k8s\.io/vap-ssa-binding created' \
    "${K130[@]}" apply -f "$d/ssab.yaml"
  expect "PARAMREF shows the selector as kube prints it" \
    'vap-ssa-binding +vap-ssa +&LabelSelector\{MatchLabels:map\[string\]string\{tier: gold,\},MatchExpressions:\[\]LabelSelectorRequirement\{\},\}' \
    "${K[@]}" get validatingadmissionpolicybinding vap-ssa-binding --no-headers
  echo "-- type checking (the policy status controller)"
  cat >"$d/tc.yaml" <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap-typecheck}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 5"
  - expression: "object.spec.replicas > 'five'"
    messageExpression: "'too many: ' + object.spec.nope"
EOF
  expect "a policy whose expressions are wrong for its kind is created" \
    'validatingadmissionpolicy\.admissionregistration\.k8s\.io/vap-typecheck created' \
    "${K[@]}" apply -f "$d/tc.yaml"
  expect_until "the status controller type-checks it against Deployment's schema" \
    "1 spec.validations[1].expression spec.validations[1].messageExpression apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'" \
    bash -c "kubectl --kubeconfig $KCFG get validatingadmissionpolicy vap-typecheck -o jsonpath='{.status.observedGeneration} {.status.typeChecking.expressionWarnings[*].fieldRef} {.status.typeChecking.expressionWarnings[0].warning}' | head -1"
  expect "the messageExpression's warning names the undefined field" \
    "apps/v1, Kind=Deployment: ERROR: <input>:1:27: undefined field 'nope'" \
    "${K[@]}" get validatingadmissionpolicy vap-typecheck -o jsonpath='{.status.typeChecking.expressionWarnings[1].warning}'
  "${K[@]}" delete validatingadmissionpolicy vap-typecheck >/dev/null 2>&1
  expect "delete the policies" 'validatingadmissionpolicy\.admissionregistration\.k8s\.io "vap-ssa" deleted' \
    "${K[@]}" delete validatingadmissionpolicy vap-replicas vap-ssa
  expect "delete the bindings" 'validatingadmissionpolicybinding\.admissionregistration\.k8s\.io "vap-ssa-binding" deleted' \
    "${K[@]}" delete validatingadmissionpolicybinding vap-replicas-binding vap-ssa-binding
  expect_eq "none left" "" \
    bash -c "kubectl --kubeconfig $KCFG get validatingadmissionpolicies,validatingadmissionpolicybindings -o name 2>&1 | grep vap"
}
