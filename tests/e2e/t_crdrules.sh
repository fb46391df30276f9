# SPDX-License-Identifier: Apache-2.0
# End-to-end: CRD validation rules (x-kubernetes-validations, CEL) with real
# kubectl: rules at the root, on objects, on fields and on map-list items;
# message, messageExpression, reason and fieldPath; transition rules
# (oldSelf, optionalOldSelf, map-list correlation); ratcheting of unchanged
# values; evaluation errors; compile errors, type errors, results that are
# not bools and rules estimated too expensive refused when the CRD is written.

crdrules_crd() { # extra rule on spec.queue (for the ratcheting step)
  cat <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gpujobs.rules.test}
spec:
  group: rules.test
  scope: Namespaced
  names: {plural: gpujobs, singular: gpujob, kind: GpuJob}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-validations:
        - rule: "self.metadata.name.startsWith('job-')"
          message: name must start with job-
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.minReplicas <= self.replicas"
              message: replicas must be at least minReplicas
              fieldPath: .replicas
            - rule: "!has(self.gpuFraction) || self.gpus == 1"
              messageExpression: "'gpuFraction needs exactly one GPU, not ' + string(self.gpus)"
              reason: FieldValueForbidden
            - rule: "self.queue == oldSelf.queue"
              message: queue is immutable
            - rule: "oldSelf.hasValue() || self.replicas < 100"
              optionalOldSelf: true
              message: at most 99 replicas on create
            - rule: "self.replicas / self.gpus >= 0"
            properties:
              replicas: {type: integer}
              minReplicas: {type: integer}
              gpus: {type: integer}
              gpuFraction: {type: string}
              queue:
                type: string
$1
              image:
                type: string
                x-kubernetes-validations:
                - rule: "self.matches('^[a-z0-9./:-]+\$')"
              memory:
                x-kubernetes-int-or-string: true
                x-kubernetes-validations:
                - rule: "quantity(string(self)).isLessThan(quantity('64Gi'))"
                  message: memory must be under 64Gi
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
                  x-kubernetes-validations:
                  - rule: "self.port > 1024 || self.name == 'http'"
                    message: only http may use a privileged port
                  - rule: "self.port == oldSelf.port"
                    message: a named port keeps its number
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
}

crdrules_cost_crd() { # lines that bound the list and its items
  cat <<EOF
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: tagsets.rules.test}
spec:
  group: rules.test
  scope: Namespaced
  names: {plural: tagsets, singular: tagset, kind: TagSet}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          tags:
            type: array
$1
            x-kubernetes-validations:
            - rule: "self.all(t, t.matches('^[a-z]+\$'))"
EOF
}

# crdrules_fail_exact DESC WANT CMD...: CMD fails and prints exactly WANT.
crdrules_fail_exact() {
  local desc=$1 want=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -ne 0 ] && [ "$out" = "$want" ]; then pass "$desc"
  else fail "$desc (rc=$rc): wanted '$want', got '$(head -c 900 <<<"$out")'"; fi
}

crdrules_job() { # name replicas minReplicas gpus queue [extra spec lines]
  cat <<EOF
apiVersion: rules.test/v1
kind: GpuJob
metadata: {name: $1, namespace: default}
spec:
  replicas: $2
  minReplicas: $3
  gpus: $4
  queue: $5
  image: registry.k8s.io/pause:3.9
  memory: 8Gi
  ports: [{name: http, port: 80}, {name: metrics, port: 9090}]
${6:-}
EOF
}

crdrules_suite() {
  local d=$E2E_TMP/crdrules
  local K=(kubectl --kubeconfig "$KCFG" --cache-dir "$d/c")
  mkdir -p "$d"
  crdrules_crd "" >"$d/crd.yaml"
  expect "CRD with validation rules is created" created "${K[@]}" apply -f "$d/crd.yaml"
  "${K[@]}" wait --for=condition=Established crd/gpujobs.rules.test --timeout=10s >/dev/null

  crdrules_job job-a 2 1 1 team-a >"$d/a.yaml"
  expect "an object passing every rule is created" "gpujob.rules.test/job-a created" \
    "${K[@]}" apply -f "$d/a.yaml"
  crdrules_job job-b 1 3 1 team-a >"$d/b.yaml"
  expect_fail "fieldPath names the field, message is the rule's" \
    'The GpuJob "job-b" is invalid: spec.replicas: Invalid value: "object": replicas must be at least minReplicas' \
    "${K[@]}" apply -f "$d/b.yaml"
  crdrules_job job-c 2 1 2 team-a "  gpuFraction: '0.5'" >"$d/c.yaml"
  expect_fail "messageExpression and reason FieldValueForbidden" \
    'spec: Forbidden: gpuFraction needs exactly one GPU, not 2' \
    "${K[@]}" apply -f "$d/c.yaml"
  crdrules_job bad-name 2 1 1 team-a >"$d/n.yaml"
  expect_fail "a rule at the root sees metadata.name" \
    '<nil>: Invalid value: "object": name must start with job-' \
    "${K[@]}" apply -f "$d/n.yaml"
  crdrules_job job-d 2 1 1 team-a | sed 's/pause:3.9/Pause:3.9/' >"$d/d.yaml"
  expect_fail "a rule without message: failed rule: <rule>" \
    "spec.image: Invalid value: \"string\": failed rule: self.matches\\('\\^\\[a-z0-9./:-\\]\\+\\\$'\\)" \
    "${K[@]}" apply -f "$d/d.yaml"
  crdrules_job job-e 2 1 1 team-a | sed 's/memory: 8Gi/memory: 128Gi/' >"$d/e.yaml"
  expect_fail "int-or-string with the quantity library" \
    'spec.memory: Invalid value: "": memory must be under 64Gi' \
    "${K[@]}" apply -f "$d/e.yaml"
  crdrules_job job-f 2 1 1 team-a | sed 's/port: 9090/port: 90/' >"$d/f.yaml"
  expect_fail "a rule on map-list items names the item" \
    'spec.ports\[1\]: Invalid value: "object": only http may use a privileged port' \
    "${K[@]}" apply -f "$d/f.yaml"
  crdrules_job job-g 2 1 0 team-a >"$d/g.yaml"
  expect_fail "an evaluation error is reported with the rule" \
    'spec: Invalid value: "object": division by zero evaluating rule: self.replicas / self.gpus >= 0' \
    "${K[@]}" apply -f "$d/g.yaml"
  crdrules_job job-h 150 1 1 team-a >"$d/h.yaml"
  expect_fail "optionalOldSelf: the rule runs on create with oldSelf none" \
    'spec: Invalid value: "object": at most 99 replicas on create' \
    "${K[@]}" apply -f "$d/h.yaml"
  sed 's/pause:3.9/Pause:3.9/; s/minReplicas: 1/minReplicas: 5/' "$d/a.yaml" >"$d/two.yaml"
  expect_fail "several failing rules are all reported (one)" \
    '^\* spec.replicas: Invalid value: "object": replicas must be at least minReplicas$' \
    "${K[@]}" apply -f "$d/two.yaml"
  expect_fail "several failing rules are all reported (two)" \
    '^\* spec.image: Invalid value: "string": failed rule: ' "${K[@]}" apply -f "$d/two.yaml"

  # transition rules
  crdrules_job job-a 150 1 1 team-a >"$d/a2.yaml"
  expect "optionalOldSelf: an update may go over 99" "configured" "${K[@]}" apply -f "$d/a2.yaml"
  crdrules_job job-a 150 1 1 team-b >"$d/a3.yaml"
  expect_fail "a transition rule refuses a change of queue" \
    'spec: Invalid value: "object": queue is immutable' "${K[@]}" apply -f "$d/a3.yaml"
  crdrules_job job-a 150 1 1 team-a | sed 's/port: 9090/port: 9191/' >"$d/a4.yaml"
  expect_fail "map-list items are correlated by key for oldSelf" \
    'spec.ports\[1\]: Invalid value: "object": a named port keeps its number' \
    "${K[@]}" apply -f "$d/a4.yaml"
  crdrules_job job-a 150 1 1 team-a | sed 's/{name: metrics, port: 9090}/{name: admin, port: 9191}/' >"$d/a5.yaml"
  expect "a new map-list item has no oldSelf: its transition rule is skipped" "configured" \
    "${K[@]}" apply -f "$d/a5.yaml"
  expect "a status write passes the rules of an unchanged spec" "patched" \
    "${K[@]}" patch gpujob job-a --subresource=status --type=merge -p '{"status":{"x":1}}'

  # ratcheting: a new rule the stored object breaks; unchanged values pass with a warning
  crdrules_crd "                x-kubernetes-validations: [{rule: 'self.size() <= 5', message: queue names are short}]" \
    >"$d/crd2.yaml"
  expect "the CRD gains a rule on spec.queue" configured "${K[@]}" apply -f "$d/crd2.yaml"
  crdrules_job job-q 2 1 1 team-long >"$d/q.yaml"
  expect_fail "the new rule holds for new objects" \
    'spec.queue: Invalid value: "string": queue names are short' "${K[@]}" apply -f "$d/q.yaml"
  expect "an unchanged value that breaks it is ratcheted: a warning" \
    'Warning: spec.queue: Invalid value: "string": queue names are short' \
    "${K[@]}" label gpujob job-a team=gpu
  expect_eq "... and the write went through" gpu \
    "${K[@]}" get gpujob job-a -o 'jsonpath={.metadata.labels.team}'

  # rules checked when the CRD is written
  crdrules_crd "" | sed "s/self.minReplicas <= self.replicas/self.minReplicas <=/" >"$d/bad1.yaml"
  expect_fail "a rule that does not parse is refused with cel-go's error" \
    'x-kubernetes-validations\[0\].rule: Invalid value: apiextensions.ValidationRule\{Rule:"self.minReplicas <=".*compilation failed: ERROR: <input>:1:' \
    "${K[@]}" apply -f "$d/bad1.yaml"
  crdrules_crd "" | sed "s/self.minReplicas <= self.replicas/self.minReplicas <= nope/" >"$d/bad2.yaml"
  expect_fail "an undeclared reference is refused" \
    "undeclared reference to 'nope'" "${K[@]}" apply -f "$d/bad2.yaml"
  crdrules_crd "" | sed "s/self.minReplicas <= self.replicas/self.minReplica <= self.replicas/" >"$d/bad3.yaml"
  expect_fail "a field the schema does not declare is refused" \
    "undefined field 'minReplica'" "${K[@]}" apply -f "$d/bad3.yaml"
  crdrules_crd "" | sed "s/reason: FieldValueForbidden/reason: Nope/" >"$d/bad4.yaml"
  expect_fail "an unknown reason is refused" \
    'reason: Unsupported value: "Nope": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"' \
    "${K[@]}" apply -f "$d/bad4.yaml"
  crdrules_crd "" | sed "s/fieldPath: .replicas/fieldPath: .nope/" >"$d/bad5.yaml"
  expect_fail "a fieldPath to no field is refused" \
    'fieldPath: Invalid value: ".nope": fieldPath must be a valid path' "${K[@]}" apply -f "$d/bad5.yaml"
  crdrules_crd "" | sed 's/message: a named port keeps its number/message: "two\\nlines"/' >"$d/bad6.yaml"
  expect_fail "a message with a line break is refused" \
    'message must not contain line breaks' "${K[@]}" apply -f "$d/bad6.yaml"
  crdrules_crd "" | sed 's/x-kubernetes-list-type: map/x-kubernetes-list-type: atomic/; /x-kubernetes-list-map-keys/d' >"$d/bad7.yaml"
  expect_fail "oldSelf on an uncorrelatable list item is refused" \
    'oldSelf cannot be used on the uncorrelatable portion of the schema' "${K[@]}" apply -f "$d/bad7.yaml"
  crdrules_crd "" | sed "s|self.replicas / self.gpus >= 0|self.replicas / self.gpus|" >"$d/bad8.yaml"
  crdrules_fail_exact "a rule that is not a bool is refused with kube's message" \
    'The CustomResourceDefinition "gpujobs.rules.test" is invalid: spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[4].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.replicas / self.gpus", Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: cel expression must evaluate to a bool' \
    "${K[@]}" apply -f "$d/bad8.yaml"
  crdrules_crd "" | sed "s|string(self.gpus)\"|string(self.gpus) == ''\"|" >"$d/bad9.yaml"
  expect_fail "a messageExpression that is not a string is refused" \
    'x-kubernetes-validations\[1\].messageExpression: Invalid value: apiextensions.ValidationRule\{Rule:"!has\(self.gpuFraction\) \|\| self.gpus == 1".*: messageExpression must evaluate to a string' \
    "${K[@]}" apply -f "$d/bad9.yaml"
  crdrules_crd "" | sed "s|self.replicas / self.gpus >= 0|self.replicas + self.queue == 1|" >"$d/bad10.yaml"
  expect_fail "a type error is refused with cel-go's message" \
    "compilation failed: ERROR: <input>:1:15: found no matching overload for '_\\+_' applied to '\\(int, string\\)'" \
    "${K[@]}" apply -f "$d/bad10.yaml"
  crdrules_cost_crd "            items: {type: string}" >"$d/cost1.yaml"
  crdrules_fail_exact "a rule too expensive on an unbounded list is refused" \
    'The CustomResourceDefinition "tagsets.rules.test" is invalid: 
* spec.versions[0].schema.openAPIV3Schema.properties[tags].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)
* spec.versions[0].schema.openAPIV3Schema.properties[tags].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema
* spec.versions[0].schema.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)' \
    "${K[@]}" apply -f "$d/cost1.yaml"
  crdrules_cost_crd "            maxItems: 16
            items: {type: string, maxLength: 63}" >"$d/cost2.yaml"
  expect "the same rule with maxItems and maxLength is accepted" "tagsets.rules.test created" \
    "${K[@]}" apply -f "$d/cost2.yaml"
  "${K[@]}" delete crd tagsets.rules.test --wait=false >/dev/null 2>&1
  # has() costs nothing beyond its operand in kube's environment
  # (PresenceTestHasCost(false)): 5 an item, 8,000,002 in all, under the
  # 10,000,000 of a rule (7 an item, over it, were it charged)
  cat >"$d/presence.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: presences.rules.test}
spec:
  group: rules.test
  scope: Namespaced
  names: {plural: presences, kind: Presence}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          endpoints:
            type: array
            maxItems: 1600000
            items:
              type: object
              properties: {address: {type: string}, port: {type: integer}}
            x-kubernetes-validations:
            - rule: "self.all(e, has(e.address) && has(e.port))"
              message: every endpoint names its address and port
EOF
  expect "a rule of presence tests over a long list is within kube's cost limit" \
    "presences.rules.test created" "${K[@]}" apply -f "$d/presence.yaml"
  "${K[@]}" delete crd presences.rules.test --wait=false >/dev/null 2>&1
  expect "the CRD still has its rules" "queue names are short" \
    "${K[@]}" get crd gpujobs.rules.test -o yaml
  "${K[@]}" delete crd gpujobs.rules.test --wait=false >/dev/null 2>&1
}
