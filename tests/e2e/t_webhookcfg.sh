# SPDX-License-Identifier: Apache-2.0
# Admission webhook configurations (admissionregistration.k8s.io/v1
# ValidatingWebhookConfiguration and MutatingWebhookConfiguration) stored as
# kube-apiserver stores them, with real kubectl: discovery (cluster scope,
# category api-extensions), apply with a url and with a service client
# config, kube's defaults, the NAME WEBHOOKS AGE columns, explain, kube's
# validation causes, matchConditions checked and compiled, apply of a
# change (generation), server-side apply, delete; only cluster-admin may
# write them (not the aggregated admin, edit and view roles). Every webhook here only
# matches example.com widgets, which no suite writes, and the suite deletes
# its configurations at the end. Sourced by run.sh.

# whcfg_validating NAME OPERATIONS: a ValidatingWebhookConfiguration with a url
whcfg_validating() {
  cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: $1
webhooks:
- name: check.widgets.example.com
  admissionReviewVersions: ["v1"]
  sideEffects: None
  clientConfig:
    url: https://widgets.example.com:8443/validate
  rules:
  - apiGroups: ["example.com"]
    apiVersions: ["v1"]
    operations: $2
    resources: ["widgets"]
YAML
}

# whcfg_mutating NAME: a MutatingWebhookConfiguration with a service
whcfg_mutating() {
  cat <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: $1
webhooks:
- name: mutate.widgets.example.com
  admissionReviewVersions: ["v1", "v1beta1"]
  sideEffects: NoneOnDryRun
  clientConfig:
    service: {namespace: default, name: widget-hook, path: /mutate}
    caBundle: $(printf 'not a real CA' | base64 -w0)
  rules:
  - apiGroups: ["example.com"]
    apiVersions: ["v1"]
    operations: ["CREATE", "UPDATE"]
    resources: ["widgets", "widgets/status"]
    scope: Namespaced
- name: audit.widgets.example.com
  admissionReviewVersions: ["v1"]
  sideEffects: None
  failurePolicy: Ignore
  timeoutSeconds: 5
  clientConfig:
    url: https://audit.example.com/mutate
  rules:
  - apiGroups: ["example.com"]
    apiVersions: ["*"]
    operations: ["DELETE"]
    resources: ["widgets"]
YAML
}

# whcfg_bad: one webhook with most of kube's causes
whcfg_bad() {
  cat <<'YAML'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: whcfg-bad
webhooks:
- name: widgets
  admissionReviewVersions: ["v2"]
  failurePolicy: Sometimes
  timeoutSeconds: 60
  clientConfig:
    url: http://widgets.example.com/x?debug=1
  rules:
  - apiGroups: ["example.com"]
    apiVersions: ["v1"]
    operations: ["*", "CREATE"]
    resources: ["widgets/*", "widgets/status"]
    scope: Everywhere
YAML
}

webhookcfg_suite() {
  # the "main" server, whatever suite started a server last (dynamic scope:
  # kcurl and the helpers read these too)
  local KCFG=$E2E_TMP/main/kubeconfig DATA_DIR=$E2E_TMP/main SERVER_URL
  SERVER_URL=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$KCFG")
  echo "== webhook configurations"
  local K=(kubectl --kubeconfig "$KCFG") d="$E2E_TMP/whcfg"
  mkdir -p "$d"
  expect "api-resources: validatingwebhookconfigurations, cluster-scoped, no short name" \
    '^validatingwebhookconfigurations +admissionregistration\.k8s\.io/v1 +false +ValidatingWebhookConfiguration$' \
    bash -c "kubectl --kubeconfig $KCFG api-resources | grep '^validatingwebhookconfigurations '"
  expect "api-resources: mutatingwebhookconfigurations, cluster-scoped, no short name" \
    '^mutatingwebhookconfigurations +admissionregistration\.k8s\.io/v1 +false +MutatingWebhookConfiguration$' \
    bash -c "kubectl --kubeconfig $KCFG api-resources | grep '^mutatingwebhookconfigurations '"
  expect_eq "api-resources: both in the api-extensions category, with APIServices, the CRDs and the admission policies" \
    "apiservices.apiregistration.k8s.io customresourcedefinitions.apiextensions.k8s.io mutatingwebhookconfigurations.admissionregistration.k8s.io validatingadmissionpolicies.admissionregistration.k8s.io validatingadmissionpolicybindings.admissionregistration.k8s.io validatingwebhookconfigurations.admissionregistration.k8s.io" \
    bash -c "kubectl --kubeconfig $KCFG api-resources --categories=api-extensions -o name | sort | tr '\n' ' ' | sed 's/ \$//'"

  echo "-- RBAC: cluster-admin only, as kube's bootstrap roles"
  "${K[@]}" create clusterrolebinding whcfg-admin --clusterrole=admin --user=whcfg-admin >/dev/null
  "${K[@]}" create clusterrolebinding whcfg-edit --clusterrole=edit --user=whcfg-edit >/dev/null
  "${K[@]}" create clusterrolebinding whcfg-view --clusterrole=view --user=whcfg-view >/dev/null
  local u v
  for u in admin edit view; do
    for v in "create validatingwebhookconfigurations" "list mutatingwebhookconfigurations"; do
      expect_eq "aggregated $u role: no $v" "no" \
        bash -c "kubectl --kubeconfig $KCFG auth can-i $v --as=whcfg-$u 2>/dev/null"
    done
  done
  expect_eq "cluster-admin (system:masters) may create them" "yes" \
    bash -c "kubectl --kubeconfig $KCFG auth can-i create mutatingwebhookconfigurations --as=whcfg-x --as-group=system:masters 2>/dev/null"
  "${K[@]}" delete clusterrolebinding whcfg-admin whcfg-edit whcfg-view >/dev/null

  echo "-- apply, columns, defaults"
  whcfg_validating whcfg-check '["CREATE"]' >"$d/v.yaml"
  whcfg_mutating whcfg-mutate >"$d/m.yaml"
  expect "apply a ValidatingWebhookConfiguration (url)" \
    '^validatingwebhookconfiguration\.admissionregistration\.k8s\.io/whcfg-check created$' \
    "${K[@]}" apply -f "$d/v.yaml"
  expect "apply a MutatingWebhookConfiguration (service)" \
    '^mutatingwebhookconfiguration\.admissionregistration\.k8s\.io/whcfg-mutate created$' \
    "${K[@]}" apply -f "$d/m.yaml"
  expect "get validatingwebhookconfigurations: NAME WEBHOOKS AGE" \
    '^NAME +WEBHOOKS +AGE$' bash -c "kubectl --kubeconfig $KCFG get validatingwebhookconfigurations | head -1"
  expect "get validatingwebhookconfigurations: one webhook" '^whcfg-check +1 +[0-9]+s$' \
    "${K[@]}" get validatingwebhookconfigurations whcfg-check --no-headers
  expect "get mutatingwebhookconfigurations: NAME WEBHOOKS AGE, two webhooks" \
    'NAME +WEBHOOKS +AGE.*whcfg-mutate +2 +[0-9]+s' \
    bash -c "kubectl --kubeconfig $KCFG get mutatingwebhookconfigurations | tr '\n' ' '"
  "${K[@]}" get validatingwebhookconfiguration whcfg-check -o yaml >"$d/v.out.yaml"
  expect "-o yaml: failurePolicy Fail, matchPolicy Equivalent, timeoutSeconds 10 defaulted" \
    'failurePolicy: Fail.*matchPolicy: Equivalent.*namespaceSelector: \{\}.*objectSelector: \{\}.*scope: .\*.*timeoutSeconds: 10' \
    tr '\n' ' ' <"$d/v.out.yaml"
  expect_eq "validating: no reinvocationPolicy; generation 1" " 1" \
    "${K[@]}" get validatingwebhookconfiguration whcfg-check \
    -o jsonpath='{.webhooks[0].reinvocationPolicy} {.metadata.generation}'
  expect_eq "mutating: reinvocationPolicy Never, service port 443, scope kept, caBundle kept" \
    "Never 443 Namespaced $(printf 'not a real CA' | base64 -w0)" \
    "${K[@]}" get mutatingwebhookconfiguration whcfg-mutate \
    -o jsonpath='{.webhooks[0].reinvocationPolicy} {.webhooks[0].clientConfig.service.port} {.webhooks[0].rules[0].scope} {.webhooks[0].clientConfig.caBundle}'
  expect_eq "mutating: given values kept (Ignore, 5), defaults on the second webhook" \
    "Ignore 5 Equivalent * Never" \
    "${K[@]}" get mutatingwebhookconfiguration whcfg-mutate \
    -o jsonpath='{.webhooks[1].failurePolicy} {.webhooks[1].timeoutSeconds} {.webhooks[1].matchPolicy} {.webhooks[1].rules[0].scope} {.webhooks[1].reinvocationPolicy}'

  echo "-- explain"
  expect "explain validatingwebhookconfiguration.webhooks.rules: the rule's fields" \
    'apiGroups.*apiVersions.*operations.*resources.*scope' \
    bash -c "kubectl --kubeconfig $KCFG explain validatingwebhookconfiguration.webhooks.rules | tr '\n' ' '"
  expect "explain mutatingwebhookconfiguration.webhooks: reinvocationPolicy, clientConfig" \
    'clientConfig.*reinvocationPolicy' \
    bash -c "kubectl --kubeconfig $KCFG explain mutatingwebhookconfiguration.webhooks | tr '\n' ' '"

  echo "-- validation"
  whcfg_bad >"$d/bad.yaml"
  "${K[@]}" apply -f "$d/bad.yaml" >"$d/bad.out" 2>&1
  local m
  for m in \
    'The ValidatingWebhookConfiguration "whcfg-bad" is invalid' \
    'webhooks\[0\]\.name: Invalid value: "widgets": should be a domain with at least three segments separated by dots' \
    "webhooks\[0\]\.rules\[0\]\.operations: Invalid value: \[\]admissionregistration\.OperationType\{\"\*\", \"CREATE\"\}: if '\*' is present, must not specify other operations" \
    "webhooks\[0\]\.rules\[0\]\.resources\[1\]: Invalid value: \"widgets/status\": if 'widgets/\*' is present, must not specify widgets/status" \
    'webhooks\[0\]\.rules\[0\]\.scope: Unsupported value: "Everywhere": supported values: "\*", "Cluster", "Namespaced"' \
    'webhooks\[0\]\.failurePolicy: Unsupported value: "Sometimes": supported values: "Fail", "Ignore"' \
    'webhooks\[0\]\.sideEffects: Required value: must specify one of None, NoneOnDryRun' \
    'webhooks\[0\]\.timeoutSeconds: Invalid value: 60: the timeout value must be between 1 and 30 seconds' \
    "webhooks\[0\]\.clientConfig\.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host\[/path\]" \
    'webhooks\[0\]\.clientConfig\.url: Invalid value: "debug=1": query parameters are not permitted in the URL' \
    'webhooks\[0\]\.admissionReviewVersions: Invalid value: \[\]string\{"v2"\}: must include at least one of v1, v1beta1'; do
    expect "invalid: $(sed 's/\\//g' <<<"$m" | cut -c1-90)" "$m" cat "$d/bad.out"
  done
  expect_fail "the invalid configuration is not stored" 'NotFound|not found' \
    "${K[@]}" get validatingwebhookconfiguration whcfg-bad
  sed 's/namespace: default, //; s|path: /mutate|path: /mutate, port: 0|; s/name: whcfg-mutate/name: whcfg-bad2/' \
    "$d/m.yaml" >"$d/bad2.yaml"
  "${K[@]}" apply -f "$d/bad2.yaml" >"$d/bad2.out" 2>&1
  expect "service without a namespace" \
    'webhooks\[0\]\.clientConfig\.service\.namespace: Required value: service namespace is required' \
    cat "$d/bad2.out"
  expect "service port out of range" \
    'webhooks\[0\]\.clientConfig\.service\.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive' \
    cat "$d/bad2.out"
  expect_fail "a duplicate webhook name" \
    'webhooks\[1\]\.name: Duplicate value: "mutate\.widgets\.example\.com"' \
    bash -c "sed 's/audit.widgets/mutate.widgets/; s/name: whcfg-mutate/name: whcfg-bad3/' $d/m.yaml | kubectl --kubeconfig $KCFG apply -f -"
  expect_fail "url and service together" \
    'webhooks\[0\]\.clientConfig: Required value: exactly one of url or service is required' \
    bash -c "sed 's|^    url: https://widgets.example.com:8443/validate|&\n    service: {namespace: default, name: x}|; s/name: whcfg-check/name: whcfg-bad4/' $d/v.yaml | kubectl --kubeconfig $KCFG apply -f -"
  expect_fail "matchConditions that do not compile are refused" \
    "webhooks\\[0\\]\\.matchConditions\\[0\\]\\.expression: Invalid value: \"nope\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope'" \
    bash -c "(cat $d/v.yaml; printf '  matchConditions:\n  - name: not-kube-system\n    expression: \"nope\"\n') | sed 's/name: whcfg-check/name: whcfg-bad5/' | kubectl --kubeconfig $KCFG apply -f -"
  expect_fail "matchConditions are checked on update too" 'matchConditions\[0\]\.name: Required value' \
    "${K[@]}" patch validatingwebhookconfiguration whcfg-check --type json \
    -p '[{"op":"add","path":"/webhooks/0/matchConditions","value":[{"expression":"true"}]}]'
  expect_eq "none of the invalid configurations was stored" "whcfg-check" \
    bash -c "kubectl --kubeconfig $KCFG get validatingwebhookconfigurations -o name | sed 's|.*/||' | grep whcfg | tr '\n' ' ' | sed 's/ \$//'"

  echo "-- change, server-side apply, delete"
  whcfg_validating whcfg-check '["CREATE", "UPDATE"]' >"$d/v2.yaml"
  expect "apply again with a change" \
    '^validatingwebhookconfiguration\.admissionregistration\.k8s\.io/whcfg-check configured$' \
    "${K[@]}" apply -f "$d/v2.yaml"
  expect_eq "the change is stored and the generation bumped" '["CREATE","UPDATE"] 2' \
    "${K[@]}" get validatingwebhookconfiguration whcfg-check \
    -o jsonpath='{.webhooks[0].rules[0].operations} {.metadata.generation}'
  # kubectl replace fills in the live resourceVersion itself: a plain PUT
  expect "PUT without a resourceVersion: kube's Invalid (no unconditional update)" \
    '"message":"validatingwebhookconfigurations\.admissionregistration\.k8s\.io \\"whcfg-check\\" is invalid: metadata\.resourceVersion: Invalid value: 0x0: must be specified for an update".*"code":422' \
    kcurl -X PUT -H 'Content-Type: application/json' \
    "$SERVER_URL/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/whcfg-check" \
    -d '{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"whcfg-check"},"webhooks":[]}'
  "${K[@]}" label validatingwebhookconfiguration whcfg-check team=widgets >/dev/null
  expect_eq "a label change leaves the generation" "widgets 2" \
    "${K[@]}" get validatingwebhookconfiguration whcfg-check \
    -o jsonpath='{.metadata.labels.team} {.metadata.generation}'
  # kubectl sends the atomic rules list again (its items lack the defaulted
  # scope), as against kube-apiserver; the server writes nothing
  local rv
  rv=$("${K[@]}" get validatingwebhookconfiguration whcfg-check -o jsonpath='{.metadata.resourceVersion}')
  "${K[@]}" apply -f "$d/v2.yaml" >/dev/null
  expect_eq "apply of the same file again writes nothing (same resourceVersion)" "$rv" \
    "${K[@]}" get validatingwebhookconfiguration whcfg-check -o jsonpath='{.metadata.resourceVersion}'
  expect "server-side apply of the mutating configuration" \
    'mutatingwebhookconfiguration\.admissionregistration\.k8s\.io/whcfg-mutate serverside-applied' \
    "${K[@]}" apply --server-side --force-conflicts -f "$d/m.yaml"
  expect "delete both" 'mutatingwebhookconfiguration\.admissionregistration\.k8s\.io "whcfg-mutate" deleted' \
    "${K[@]}" delete validatingwebhookconfiguration/whcfg-check mutatingwebhookconfiguration/whcfg-mutate
  expect_eq "none left" "" \
    bash -c "kubectl --kubeconfig $KCFG get validatingwebhookconfigurations,mutatingwebhookconfigurations -o name 2>&1 | grep whcfg"
}
