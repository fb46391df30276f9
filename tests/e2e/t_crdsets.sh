# SPDX-License-Identifier: Apache-2.0
# End-to-end: what operators' CRDs (Kueue, the Gateway API, JobSet) lean on,
# in small CRDs written for these tests that reproduce each shape: a
# quantity's pattern on an int-or-string, string formats and value
# validations in oneOf/anyOf (an address that is an IP or a host name), a
# CEL rule reading a property named by a keyword (`metadata.namespace`), and
# a CRD larger than the 262144 bytes kubectl's last-applied annotation holds;
# and kube's order around them: schema errors of a kind that stops the rules
# (with kube's note), others beside the rules' causes, ratcheting of values
# an update keeps.

crdsets_crd() {
  cat <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pools.sets.test}
spec:
  group: sets.test
  scope: Namespaced
  names: {plural: pools, singular: pool, kind: Pool}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              quota:
                anyOf: [{type: integer}, {type: string}]
                x-kubernetes-int-or-string: true
                pattern: '^[0-9]+(m|[KMG]i?)?$'
              endpoints:
                type: array
                maxItems: 8
                items:
                  type: object
                  properties:
                    type: {type: string, maxLength: 16}
                    value: {type: string, maxLength: 253}
                  oneOf:
                  - properties:
                      type: {enum: [IPAddress]}
                      value:
                        anyOf: [{format: ipv4}, {format: ipv6}]
                  - properties:
                      type:
                        not: {enum: [IPAddress]}
              claims:
                type: array
                maxItems: 8
                items:
                  type: object
                  properties:
                    metadata:
                      type: object
                      properties:
                        name: {type: string, maxLength: 63}
                        namespace: {type: string, maxLength: 63}
                x-kubernetes-validations:
                - rule: "self.all(c, !has(c.metadata.namespace) || size(c.metadata.namespace) == 0)"
                  message: claims take the pool's namespace
          status:
            type: object
            properties:
              since: {type: string, format: date-time}
EOF
}

crdsets_pool() { # name quota endpoint-type endpoint-value [claim namespace]
  cat <<EOF
apiVersion: sets.test/v1
kind: Pool
metadata: {name: $1}
spec:
  quota: "$2"
  endpoints: [{type: $3, value: "$4"}]
  claims: [{metadata: {name: scratch${5:+, namespace: $5}}}]
EOF
}

crdsets_suite() {
  local d=$E2E_TMP/crdsets
  local K=(kubectl --kubeconfig "$KCFG" --cache-dir "$d/c")
  mkdir -p "$d"
  crdsets_crd >"$d/crd.yaml"
  expect "a CRD with formats, oneOf/anyOf and a keyword-field rule is created" created \
    "${K[@]}" apply -f "$d/crd.yaml"
  "${K[@]}" wait --for=condition=Established crd/pools.sets.test --timeout=10s >/dev/null

  crdsets_pool p1 36Gi IPAddress fe80::1 >"$d/p1.yaml"
  expect "a pool with a quantity and an IPv6 address is created" "pool.sets.test/p1 created" \
    "${K[@]}" apply -f "$d/p1.yaml"
  crdsets_pool p2 8 Hostname gpu.example.com >"$d/p2.yaml"
  expect "a host name passes the oneOf's other branch" "pool.sets.test/p2 created" \
    "${K[@]}" apply -f "$d/p2.yaml"
  crdsets_pool p3 1x Hostname a.b >"$d/p3.yaml"
  expect_fail "an int-or-string is held to its pattern (Kueue's quantities)" \
    "spec.quota: Invalid value: \"1x\": spec.quota in body should match '\\^\\[0-9\\]\\+" \
    "${K[@]}" apply -f "$d/p3.yaml"
  crdsets_pool p4 1 IPAddress 10.0.0.300 >"$d/p4.yaml"
  expect_fail "an IPAddress that is no IP fails the oneOf" \
    '^\* <nil>: Invalid value: "": "spec.endpoints\[0\]" must validate one and only one schema \(oneOf\). Found none valid$' \
    "${K[@]}" apply -f "$d/p4.yaml"
  expect_fail "... the anyOf of its branch" \
    '^\* <nil>: Invalid value: "": "spec.endpoints\[0\].value" must validate at least one schema \(anyOf\)$' \
    "${K[@]}" apply -f "$d/p4.yaml"
  expect_fail "... and the format of the anyOf's first branch" \
    '^\* spec.endpoints\[0\].value: Invalid value: "10.0.0.300": spec.endpoints\[0\].value in body must be of type ipv4: "10.0.0.300"$' \
    "${K[@]}" apply -f "$d/p4.yaml"
  crdsets_pool p5 1 Hostname a.b kube-system >"$d/p5.yaml"
  expect_fail "a rule reads metadata.namespace as written (JobSet's claim templates)" \
    'spec.claims: Invalid value: "array": claims take the pool.s namespace' \
    "${K[@]}" apply -f "$d/p5.yaml"
  expect_fail "a date-time status field is checked" \
    'status.since: Invalid value: "yesterday": status.since in body must be of type date-time' \
    "${K[@]}" patch pool p1 --subresource=status --type=merge -p '{"status":{"since":"yesterday"}}'
  expect "... and a date-time passes" patched \
    "${K[@]}" patch pool p1 --subresource=status --type=merge \
    -p '{"status":{"since":"2026-01-02T03:04:05Z"}}'

  expect_fail "a type error keeps the rules from running, with kube's note" \
    '^\* <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation$' \
    "${K[@]}" patch pool p1 --type=merge -p '{"spec":{"quota":true}}'
  crdsets_pool p6 1x Hostname a.b kube-system >"$d/p6.yaml"
  expect_fail "a pattern error does not: the rules run too" \
    'claims take the pool.s namespace' "${K[@]}" apply -f "$d/p6.yaml"

  # ratcheting: a tightened schema holds new values, not unchanged ones
  sed 's/value: {type: string, maxLength: 253}/value: {type: string, maxLength: 8}/' "$d/crd.yaml" \
    >"$d/crd2.yaml"
  expect "the CRD's schema is tightened" configured "${K[@]}" apply -f "$d/crd2.yaml"
  expect "an object that breaks it can still change other fields" patched \
    "${K[@]}" patch pool p2 --type=merge -p '{"spec":{"quota":"9"}}'
  expect_fail "... but not the value it breaks" \
    'spec.endpoints\[0\].value: Too long: may not be more than 8 bytes' \
    "${K[@]}" patch pool p2 --type=merge -p '{"spec":{"endpoints":[{"type":"Hostname","value":"gpu2.example.com"}]}}'

  # a CRD over 256 KiB: client-side apply cannot store its last-applied
  # annotation (as with kube), server-side apply and create can
  sed 's/pools/bigpools/g; s/singular: pool/singular: bigpool/; s/kind: Pool/kind: BigPool/' "$d/crd.yaml" >"$d/big.yaml"
  {
    echo "              notes:"
    echo "                type: object"
    echo "                properties:"
    for i in $(seq 300); do
      echo "                  n$i: {type: string, description: \"$(printf 'x%.0s' $(seq 900))\"}"
    done
  } >"$d/big-notes.yaml"
  sed -i "/^              claims:/e cat $d/big-notes.yaml" "$d/big.yaml"
  expect_fail "client-side apply of a CRD over 256 KiB fails on the annotation's size" \
    'metadata.annotations: Too long: may not be more than 262144 bytes' \
    "${K[@]}" apply -f "$d/big.yaml"
  expect "server-side apply installs it" serverside-applied \
    "${K[@]}" apply --server-side -f "$d/big.yaml"
  expect "it becomes Established" "condition met" \
    "${K[@]}" wait --for=condition=Established crd/bigpools.sets.test --timeout=10s
  "${K[@]}" delete crd bigpools.sets.test pools.sets.test --wait=false >/dev/null 2>&1
  crdsets_structural
}

# crdsets_bad NAME SCHEMA-LINES: a CRD of group bad.test whose spec property
# has the given schema (YAML lines indented 12 under `spec:`).
crdsets_bad() {
  printf 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n'
  printf 'metadata: {name: %ss.bad.test}\nspec:\n  group: bad.test\n  scope: Namespaced\n' "$1"
  printf '  names: {plural: %ss, kind: %s}\n  versions:\n  - name: v1\n' "$1" "${1^}"
  printf '    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n'
  printf '        type: object\n        properties:\n          spec:\n%s\n' "$2"
}

# What kube refuses at CRD write and Kubicle let through before (issue 24
# item 12), in kube's words: a list-map key neither required nor defaulted
# (validation.go validateMapListKeysMapSet), a default its own schema
# refuses (defaulting/validation.go ValidateDefaults), a root oneOf naming
# a field the schema lacks (schema/complete.go).
crdsets_structural() {
  echo "-- structural checks at CRD write"
  local d=$E2E_TMP/crdsets P='spec.versions\[0\].schema.openAPIV3Schema'
  local K=(kubectl --kubeconfig "$KCFG" --cache-dir "$d/c")
  crdsets_bad ports '            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  properties: {name: {type: string}, port: {type: integer}}' >"$d/bad1.yaml"
  expect_fail "a list-map key neither required nor defaulted is refused" \
    "The CustomResourceDefinition \"portss.bad.test\" is invalid: $P.properties\\[spec\\].properties\\[ports\\].items.properties\\[name\\].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property" \
    "${K[@]}" apply -f "$d/bad1.yaml"
  sed -i 's/properties: {name: {type: string}, port/required: [name]\n                  properties: {name: {type: string}, port/' "$d/bad1.yaml"
  expect "... and taken once the key is required" created "${K[@]}" apply -f "$d/bad1.yaml"
  crdsets_bad defs '            type: object
            properties:
              replicas: {type: integer, maximum: 5, default: 8}' >"$d/bad2.yaml"
  expect_fail "a default above the maximum is refused" \
    "$P.properties\\[spec\\].properties\\[replicas\\].default: Invalid value: 8:  in body should be less than or equal to 5" \
    "${K[@]}" apply -f "$d/bad2.yaml"
  crdsets_bad extras '            type: object
            default: {mode: fast, extra: 1}
            properties:
              mode: {type: string}' >"$d/bad3.yaml"
  expect_fail "a default with fields its schema lacks is refused" \
    "$P.properties\\[spec\\].default: Invalid value: map\\[string\\]interface \\{\\}\\{\"extra\":1, \"mode\":\"fast\"\\}: must not have unknown fields" \
    "${K[@]}" apply -f "$d/bad3.yaml"
  crdsets_bad ones '            type: object
            properties:
              a: {type: string}
        oneOf:
        - properties: {spec: {required: [a]}}
        - properties: {spec: {properties: {b: {minLength: 1}}}}' >"$d/bad4.yaml"
  expect_fail "a root oneOf naming a field the schema lacks is refused" \
    "$P.properties\\[spec\\].properties\\[b\\]: Required value: because it is defined in $P.oneOf\\[1\\].properties\\[spec\\].properties\\[b\\]" \
    "${K[@]}" apply -f "$d/bad4.yaml"
  expect_eq "none of the refused ones was stored" "customresourcedefinition.apiextensions.k8s.io/portss.bad.test" \
    bash -c "kubectl --kubeconfig $KCFG get crd -o name | grep bad.test"
  "${K[@]}" delete crd portss.bad.test --wait=false >/dev/null 2>&1
}
