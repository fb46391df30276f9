# SPDX-License-Identifier: Apache-2.0
# End-to-end: ValidatingAdmissionPolicies evaluated on writes with real
# kubectl: Deny, Warn and Audit bindings; messages, messageExpression and
# reasons; variables; matchConditions; namespace selectors of bindings;
# params from ConfigMaps (by name, missing with Deny); the authorizer
# library; DELETE; evaluation errors under failurePolicy Fail and Ignore.

vap_policies() {
  cat <<'EOF'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replicas-limit}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [deployments]}
  matchConditions:
  - name: not-exempt
    expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"
  variables:
  - name: replicas
    expression: "object.spec.replicas"
  validations:
  - expression: "variables.replicas <= 5"
    message: at most 5 replicas
  - expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)"
    messageExpression: "'label forbidden on ' + object.metadata.name"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas-deny}
spec:
  policyName: replicas-limit
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {env: strict}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas-warn}
spec:
  policyName: replicas-limit
  validationActions: [Warn, Audit]
  matchResources:
    namespaceSelector: {matchLabels: {env: lax}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: cm-params}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE, DELETE], resources: [configmaps]}
  validations:
  - expression: "request.operation != 'DELETE' || oldObject.metadata.name != params.data.protected"
    messageExpression: "oldObject.metadata.name + ' is protected'"
  - expression: "request.operation == 'DELETE' || size(object.data) <= int(params.data.maxKeys)"
    message: too many keys
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: cm-params}
spec:
  policyName: cm-params
  validationActions: [Deny]
  paramRef: {name: cm-limits, namespace: vap-free, parameterNotFoundAction: Deny}
  matchResources:
    namespaceSelector: {matchLabels: {env: strict}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: sa-may-not}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [secrets]}
  validations:
  - expression: "authorizer.serviceAccount(object.metadata.namespace, 'default').group('').resource('secrets').namespace(object.metadata.namespace).check('get').allowed()"
    message: the default service account must be able to read secrets here
    reason: Forbidden
  - expression: "authorizer.group('').resource('secrets').check('list').allowed()"
    message: you must be able to list secrets
  - expression: "authorizer.serviceAccount(object.metadata.namespace, 'default').requestResource.check('create').allowed()"
    messageExpression: "'the default service account may not create ' + request.resource.resource + ': ' + authorizer.serviceAccount(object.metadata.namespace, 'default').requestResource.check('create').reason()"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: sa-may-not}
spec:
  policyName: sa-may-not
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {env: strict}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: broken}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [services]}
  validations:
  - expression: "object.spec.nope > 1"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: broken}
spec:
  policyName: broken
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {env: strict}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: cond-broken}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [serviceaccounts]}
  matchConditions:
  - {name: bad, expression: "object.secrets[0].name == 'x'"}
  - {name: named, expression: "object.metadata.name.startsWith('sa-')"}
  validations:
  - expression: "false"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: cond-broken}
spec:
  policyName: cond-broken
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {env: strict}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: images}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "object.spec.containers.all(c, c.image.startsWith('registry.k8s.io/'))"
    message: images come from registry.k8s.io
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: images}
spec:
  policyName: images
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {env: strict}}
EOF
}

# A policy on the controllers' other writes: the ReplicaSet controller's
# pod deletes and its status updates.
vap_ctrl_policy() {
  cat <<'EOF'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: ctrl-writes}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [DELETE], resources: [pods]}
    - {apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: [replicasets/status]}
  validations:
  - expression: "request.operation != 'DELETE' || !has(oldObject.metadata.labels) || !('keep' in oldObject.metadata.labels)"
    messageExpression: "'pod ' + oldObject.metadata.name + ' is kept from ' + request.userInfo.username"
  - expression: "request.operation != 'UPDATE' || request.subResource != 'status' || !has(object.status.replicas) || object.status.replicas <= 1"
    message: at most one replica in status
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: ctrl-writes}
spec:
  policyName: ctrl-writes
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {ctrl: vap}}
EOF
}

vap_rs() { # name replicas [keep]
  cat <<EOF
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: $1}
spec:
  replicas: $2
  selector: {matchLabels: {app: $1}}
  template:
    metadata: {labels: {app: $1${3:+, keep: kept}}}
    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.9}]}
EOF
}

vap_suite() {
  local d=$E2E_TMP/vap
  local K=(kubectl --kubeconfig "$KCFG" --cache-dir "$d/c")
  mkdir -p "$d"
  "${K[@]}" create ns vap-strict >/dev/null && "${K[@]}" label ns vap-strict env=strict >/dev/null
  "${K[@]}" create ns vap-lax >/dev/null && "${K[@]}" label ns vap-lax env=lax >/dev/null
  "${K[@]}" create ns vap-free >/dev/null
  vap_policies >"$d/p.yaml"
  expect "policies and bindings are created" "validatingadmissionpolicybinding.admissionregistration.k8s.io/broken created" \
    "${K[@]}" apply -f "$d/p.yaml"

  expect_fail "a Deny binding refuses in kube's words" \
    "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replicas-limit' with binding 'replicas-deny' denied request: at most 5 replicas" \
    "${K[@]}" -n vap-strict create deployment web --image=registry.k8s.io/pause:3.9 --replicas=10
  expect_eq "... with reason Invalid and code 422" "422 Invalid" \
    sh -c "$(declare -f kcurl); DATA_DIR='$DATA_DIR' kcurl -X POST -H 'Content-Type: application/json' '$SERVER_URL/apis/apps/v1/namespaces/vap-strict/deployments' -d '{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":9,\"selector\":{\"matchLabels\":{\"a\":\"b\"}},\"template\":{\"metadata\":{\"labels\":{\"a\":\"b\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}' | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s[\"code\"], s[\"reason\"])'"
  expect "within the limit it is created" "deployment.apps/web created" \
    "${K[@]}" -n vap-strict create deployment web --image=registry.k8s.io/pause:3.9 --replicas=3
  expect_fail "an update is checked too (variables), Invalid as kubectl shows it" \
    "The deployments \"web\" is invalid: : ValidatingAdmissionPolicy 'replicas-limit' with binding 'replicas-deny' denied request: at most 5 replicas" \
    "${K[@]}" -n vap-strict patch deployment web -p '{"spec":{"replicas":8}}'
  expect "the scale subresource is not a rule's deployments" "scaled" \
    "${K[@]}" -n vap-strict scale deployment web --replicas=4
  expect_fail "messageExpression and reason Forbidden" \
    "Error from server \\(Forbidden\\): deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replicas-limit' with binding 'replicas-deny' denied request: label forbidden on web" \
    "${K[@]}" -n vap-strict label deployment web forbidden=yes
  expect_eq "... with code 403" "403 Forbidden" \
    sh -c "$(declare -f kcurl); DATA_DIR='$DATA_DIR' kcurl -X PATCH -H 'Content-Type: application/merge-patch+json' '$SERVER_URL/apis/apps/v1/namespaces/vap-strict/deployments/web' -d '{\"metadata\":{\"labels\":{\"forbidden\":\"y\"}}}' | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s[\"code\"], s[\"reason\"])'"
  expect "matchConditions: an exempt object is not validated" "deployment.apps/big created" \
    sh -c "${K[*]} -n vap-strict create deployment big --image=x --replicas=10 --dry-run=client -o yaml | sed 's/^  labels:/  labels:\\n    exempt: \"yes\"/' | ${K[*]} apply -f -"
  expect "a namespace no binding selects is not validated" "deployment.apps/web created" \
    "${K[@]}" -n vap-free create deployment web --image=registry.k8s.io/pause:3.9 --replicas=10
  expect "a Warn binding warns and lets the write through" \
    "Warning: Validation failed for ValidatingAdmissionPolicy 'replicas-limit' with binding 'replicas-warn': at most 5 replicas" \
    "${K[@]}" -n vap-lax create deployment web --image=registry.k8s.io/pause:3.9 --replicas=10
  expect "... and an Audit one records kube's annotation" \
    'validation.policy.admission.k8s.io/validation_failure' \
    grep -h 'replicas-warn' "$DATA_DIR"/audit*.log

  expect_fail "params not found with parameterNotFoundAction Deny" \
    "ValidatingAdmissionPolicy 'cm-params' with binding 'cm-params' denied request: failed to configure binding: no params found for policy binding with \`Deny\` parameterNotFoundAction" \
    "${K[@]}" -n vap-strict create configmap one --from-literal=a=1
  expect "params from a ConfigMap the binding names" "configmap/cm-limits created" \
    "${K[@]}" -n vap-free create configmap cm-limits --from-literal=maxKeys=2 --from-literal=protected=keep
  expect "... allow what they allow" "configmap/keep created" \
    "${K[@]}" -n vap-strict create configmap keep --from-literal=a=1
  expect_fail "... and refuse what they refuse" "too many keys" \
    "${K[@]}" -n vap-strict create configmap many --from-literal=a=1 --from-literal=b=2 --from-literal=c=3
  expect_fail "DELETE is validated with oldObject" \
    "ValidatingAdmissionPolicy 'cm-params' with binding 'cm-params' denied request: keep is protected" \
    "${K[@]}" -n vap-strict delete configmap keep

  expect_fail "the authorizer library asks RBAC (a service account without rights)" \
    "denied request: the default service account must be able to read secrets here" \
    "${K[@]}" -n vap-strict create secret generic s1 --from-literal=a=1
  "${K[@]}" -n vap-strict create role read-secrets --verb=get --resource=secrets >/dev/null
  "${K[@]}" -n vap-strict create rolebinding read-secrets --role=read-secrets --serviceaccount=vap-strict:default >/dev/null
  expect_fail "authorizer.requestResource: the request's own resource and verb" \
    "denied request: the default service account may not create secrets:$" \
    "${K[@]}" -n vap-strict create secret generic s1 --from-literal=a=1
  "${K[@]}" -n vap-strict create role make-secrets --verb=create --resource=secrets >/dev/null
  "${K[@]}" -n vap-strict create rolebinding make-secrets --role=make-secrets --serviceaccount=vap-strict:default >/dev/null
  expect "... once RBAC grants it, the write goes through" "secret/s1 created" \
    "${K[@]}" -n vap-strict create secret generic s1 --from-literal=a=1

  expect_fail "an evaluation error under failurePolicy Fail refuses" \
    "ValidatingAdmissionPolicy 'broken' with binding 'broken' denied request: expression 'object.spec.nope > 1' resulted in error: no such key: nope" \
    "${K[@]}" -n vap-strict create service clusterip s1 --tcp=80:80
  "${K[@]}" patch validatingadmissionpolicy broken --type=merge -p '{"spec":{"failurePolicy":"Ignore"}}' >/dev/null
  expect "... and under Ignore lets it through" "service/s1 created" \
    "${K[@]}" -n vap-strict create service clusterip s1 --tcp=80:80
  expect_fail "a matchCondition that fails (none false) follows failurePolicy Fail" \
    "ValidatingAdmissionPolicy 'cond-broken' with binding 'cond-broken' denied request: expression 'object.secrets\\[0\\].name == 'x'' resulted in error: no such key: secrets" \
    "${K[@]}" -n vap-strict create serviceaccount sa-one
  expect "... and one false condition makes the policy not apply, errors or not" \
    "serviceaccount/other created" "${K[@]}" -n vap-strict create serviceaccount other
  # the controllers' creates meet the policies too: a ReplicaSet's pods
  "${K[@]}" -n vap-strict create deployment ext --image=docker.io/nginx >/dev/null
  expect_until "a controller's refused pod is the ReplicaSet's event, in kube's words" yes \
    sh -c "${K[*]} -n vap-strict get events --field-selector reason=FailedCreate -o jsonpath='{.items[*].message}' | grep -q \"Error creating: pods \\\"ext-[a-z0-9]*-[a-z0-9]*\\\" is forbidden: ValidatingAdmissionPolicy 'images' with binding 'images' denied request: images come from registry.k8s.io\" && echo yes"
  expect_eq "... and no pod was made" "" \
    "${K[@]}" -n vap-strict get pods -l app=ext -o name
  "${K[@]}" -n vap-strict create deployment inhouse --image=registry.k8s.io/pause:3.9 >/dev/null
  expect_until "an allowed image's pod is made" "1" \
    sh -c "${K[*]} -n vap-strict get pods -l app=inhouse -o name | wc -l"
  # ... and so do their deletes and status updates
  "${K[@]}" create ns vap-ctrl >/dev/null && "${K[@]}" label ns vap-ctrl ctrl=vap >/dev/null
  vap_ctrl_policy | "${K[@]}" apply -f - >/dev/null
  vap_rs kept 1 keep | "${K[@]}" -n vap-ctrl apply -f - >/dev/null
  expect_until "a ReplicaSet's pod is made under a policy on deletes" "1" \
    sh -c "${K[*]} -n vap-ctrl get pods -l app=kept -o name | wc -l"
  "${K[@]}" -n vap-ctrl scale rs kept --replicas=0 >/dev/null
  expect_until "the controller's delete of a kept pod is refused, in kube's words" yes \
    sh -c "grep -q 'DELETE of pods vap-ctrl/kept-[a-z0-9]* by replicaset-controller refused: pods \"kept-[a-z0-9]*\" is forbidden: ValidatingAdmissionPolicy .ctrl-writes. with binding .ctrl-writes. denied request: pod kept-[a-z0-9]* is kept from system:serviceaccount:kube-system:replicaset-controller' '$DATA_DIR.log' && echo yes"
  expect_eq "... so the pod stays" "1" \
    sh -c "${K[*]} -n vap-ctrl get pods -l app=kept -o name | wc -l"
  vap_rs many 3 | "${K[@]}" -n vap-ctrl apply -f - >/dev/null
  expect_until "a controller's status update (replicasets/status) is refused" yes \
    sh -c "grep -q 'UPDATE of replicasets vap-ctrl/many by replicaset-controller refused: .*at most one replica in status' '$DATA_DIR.log' && echo yes"
  expect_until "... while its pods are made" "3" \
    sh -c "${K[*]} -n vap-ctrl get pods -l app=many -o name | wc -l"
  expect_eq "... and the status never says 3" "no" \
    sh -c "test \"\$(${K[*]} -n vap-ctrl get rs many -o jsonpath='{.status.replicas}')\" = 3 && echo yes || echo no"
  "${K[@]}" delete validatingadmissionpolicybinding ctrl-writes >/dev/null
  expect_until "without the binding the controller's delete goes through" "0" \
    sh -c "${K[*]} -n vap-ctrl get pods -l app=kept -o name | wc -l"
  "${K[@]}" delete validatingadmissionpolicy ctrl-writes >/dev/null
  "${K[@]}" delete validatingadmissionpolicybinding replicas-deny >/dev/null
  expect "without its binding the policy does nothing" "patched" \
    "${K[@]}" -n vap-strict patch deployment web -p '{"spec":{"replicas":8}}'
  "${K[@]}" delete -f "$d/p.yaml" --ignore-not-found >/dev/null 2>&1
  "${K[@]}" delete ns vap-strict vap-lax vap-free vap-ctrl --wait=false >/dev/null 2>&1
}
