# SPDX-License-Identifier: Apache-2.0
# CRDs of real operators' shapes with validation rules (issue 24):
# reduced CRDs of the shapes Argo Workflows 4.x (CronWorkflow),
# external-secrets (ExternalSecret) and Istio (ServiceEntry) ship
# (crdshapes/*.yaml, written from the facts of those schemas) install with
# kubectl apply, client- and server-side, within kube's CEL cost limits,
# become Established, take a valid object and refuse an invalid one with
# kube's words; the schedulers' own Queue CRDs (KAI's, Volcano's); string
# formats; and the rules kube runs on a schema's defaults when the CRD is
# written (defaulting/validation.go ValidateDefaults).
# Sourced by run.sh.

# crdshapes_install K NAME CRD: the CRD file NAME installed client-side,
# deleted, installed server-side, Established
crdshapes_install() {
  local K=$1 f=$E2E_LIB_DIR/crdshapes/$2.yaml crd=$3
  expect "$2 CRD: kubectl apply" "customresourcedefinition.apiextensions.k8s.io/$crd created" \
    $K apply -f "$f"
  expect "... Established" "condition met" $K wait --for=condition=Established "crd/$crd" --timeout=10s
  $K delete -f "$f" --wait=true >/dev/null
  expect "$2 CRD: kubectl apply --server-side" "serverside-applied" $K apply --server-side -f "$f"
  expect "... Established" "condition met" $K wait --for=condition=Established "crd/$crd" --timeout=10s
}

# crdshapes_refused K: what kubectl apply -n shapes says of stdin (it must
# fail), to compare whole (kubectl 1.33 lists several causes line by line)
crdshapes_refused() {
  if $1 apply -n shapes -f - 2>&1; then echo "(accepted)"; fi
}

crdshapes_istio() {
  local K=$1 d=$2
  crdshapes_install "$K" istio-like serviceentries.mesh.kubicle.test
  expect "ServiceEntry: a valid object" "serviceentry.mesh.kubicle.test/ext created" \
    $K apply -n shapes -f - <<'YAML'
apiVersion: mesh.kubicle.test/v1
kind: ServiceEntry
metadata: {name: ext}
spec:
  hosts: [api.example.com]
  addresses: [10.0.0.0/24, 192.0.2.7]
  location: MESH_EXTERNAL
  resolution: STATIC
  ports: [{number: 443, name: https, protocol: TLS}, {number: 80, name: http, protocol: HTTP}]
  endpoints: [{address: 10.0.0.5, ports: {https: 8443}}]
YAML
  expect "... its printer columns" "ext +\[\"api.example.com\"\] +MESH_EXTERNAL +STATIC" $K get se -n shapes
  expect_fail "... a duplicate port number: the list rule's message" \
    'The ServiceEntry "dup" is invalid: spec.ports: Invalid value: "array": port number must be unique' \
    $K apply -n shapes -f - <<'YAML'
apiVersion: mesh.kubicle.test/v1
kind: ServiceEntry
metadata: {name: dup}
spec:
  hosts: [api.example.com]
  ports: [{number: 443, name: https}, {number: 443, name: tls}]
YAML
  expect_eq "... a CIDR with DNS resolution, a wildcard host, an out-of-range port: every rule's cause" \
    'The ServiceEntry "bad" is invalid: 
* spec: Invalid value: "object": CIDR addresses are allowed only for NONE/STATIC resolution types
* spec.hosts[0]: Invalid value: "string": the wildcard host '"'*'"' is not allowed
* spec.ports[0].number: Invalid value: "integer": port number must be between 1-65535' \
    crdshapes_refused "$K" <<'YAML'
apiVersion: mesh.kubicle.test/v1
kind: ServiceEntry
metadata: {name: bad}
spec:
  hosts: ["*"]
  addresses: [10.0.0.0/24]
  resolution: DNS
  ports: [{number: 70000, name: big}]
YAML
}

crdshapes_eso() {
  local K=$1 d=$2
  crdshapes_install "$K" eso-like externalsecrets.secrets.kubicle.test
  expect "ExternalSecret: a valid object" "externalsecret.secrets.kubicle.test/db created" \
    $K apply -n shapes -f - <<'YAML'
apiVersion: secrets.kubicle.test/v1
kind: ExternalSecret
metadata: {name: db}
spec:
  secretStoreRef: {name: vault}
  data: [{secretKey: password, remoteRef: {key: db/pass}}]
YAML
  expect_eq "... defaults filled in: interval, store kind, target policies, conversion strategy" \
    "1h SecretStore Owner Retain Default" \
    $K get es db -n shapes -o 'jsonpath={.spec.refreshInterval} {.spec.secretStoreRef.kind} {.spec.target.creationPolicy} {.spec.target.deletionPolicy} {.spec.data[0].remoteRef.conversionStrategy}'
  expect_fail "... an orphaned target that is deleted: the rule's message" \
    'The ExternalSecret "orphan" is invalid: spec.target: Invalid value: "object": deletionPolicy must be Retain when creationPolicy is Orphan' \
    $K apply -n shapes -f - <<'YAML'
apiVersion: secrets.kubicle.test/v1
kind: ExternalSecret
metadata: {name: orphan}
spec:
  target: {creationPolicy: Orphan, deletionPolicy: Delete}
  data: [{secretKey: password, remoteRef: {key: db/pass}}]
YAML
  expect_eq "... two sources in one dataFrom item, an empty source reference: both causes" \
    'The ExternalSecret "two" is invalid: 
* spec.dataFrom[0]: Invalid value: "object": exactly one of extract, find or sourceRef must be set
* spec.dataFrom[0].sourceRef: Invalid value: "object": exactly one of storeRef or generatorRef' \
    crdshapes_refused "$K" <<'YAML'
apiVersion: secrets.kubicle.test/v1
kind: ExternalSecret
metadata: {name: two}
spec:
  dataFrom: [{extract: {key: a}, sourceRef: {}}]
YAML
  expect_fail "... neither data nor dataFrom" \
    'The ExternalSecret "none" is invalid: spec: Invalid value: "object": either data or dataFrom should be specified' \
    $K apply -n shapes -f - <<<'{"apiVersion":"secrets.kubicle.test/v1","kind":"ExternalSecret","metadata":{"name":"none"},"spec":{"secretStoreRef":{"name":"vault"}}}'
}

crdshapes_argo() {
  local K=$1 d=$2
  crdshapes_install "$K" argo-like cronflows.flows.kubicle.test
  expect "CronFlow: a valid object" "cronflow.flows.kubicle.test/nightly created" \
    $K apply -n shapes -f - <<'YAML'
apiVersion: flows.kubicle.test/v1alpha1
kind: CronFlow
metadata: {name: nightly}
spec:
  schedules: ["0 2 * * *", "@hourly"]
  workflowSpec:
    entrypoint: main
    templates:
    - name: main
      steps: [[{name: train, template: train}]]
    - name: train
      container: {image: busybox, command: [sh, -c, "echo ok"]}
      retryStrategy: {limit: 2}
YAML
  expect_eq "... the defaulted policy, the unknown template fields kept" "Allow 2" \
    $K get cwf nightly -n shapes -o 'jsonpath={.spec.concurrencyPolicy} {.spec.workflowSpec.templates[1].retryStrategy.limit}'
  expect_eq "... a template with two bodies, an entrypoint no template has, a bad schedule: every cause" \
    'The CronFlow "bad" is invalid: 
* spec.schedules: Invalid value: "array": a schedule is five cron fields or an @ macro
* spec.workflowSpec: Invalid value: "object": entrypoint must name one of the templates
* spec.workflowSpec.templates[0]: Invalid value: "object": a template has at most one of steps, dag, container, script and suspend' \
    crdshapes_refused "$K" <<'YAML'
apiVersion: flows.kubicle.test/v1alpha1
kind: CronFlow
metadata: {name: bad}
spec:
  schedules: ["0 2 * *"]
  workflowSpec:
    entrypoint: nowhere
    templates:
    - name: main
      container: {image: busybox}
      script: {image: busybox, source: "echo"}
YAML
  expect_fail "... both schedule and schedules" \
    'spec: Invalid value: "object": exactly one of schedule or schedules must be set' \
    $K apply -n shapes -f - <<<'{"apiVersion":"flows.kubicle.test/v1alpha1","kind":"CronFlow","metadata":{"name":"two"},"spec":{"schedule":"@daily","schedules":["@hourly"],"workflowSpec":{}}}'
}

# crdshapes_defcrd NAME SPEC-PROPERTIES [KIND]: a CRD NAMEs.defaults.kubicle.test
# (kind KIND, default NAME) with spec's properties (YAML, indented for
# spec.properties)
crdshapes_defcrd() {
  cat <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $1s.defaults.kubicle.test}
spec:
  group: defaults.kubicle.test
  names: {kind: ${3:-$1}, plural: $1s}
  scope: Namespaced
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
$2
YAML
}

# kube runs a default through its schema node's rules when the CRD is
# written (ValidateDefaults: cel.NewValidator on the node, oldSelf the
# default, then, with CRDValidationRatcheting, once without an old value)
crdshapes_defaults() {
  local K=$1 d=$2
  crdshapes_defcrd one '              replicas:
                type: integer
                default: 200
                x-kubernetes-validations: [{rule: "self <= 100", message: at most 100}]' >"$d/one.yaml"
  expect_fail "a default its own rule refuses: kube's error at the default" \
    'The CustomResourceDefinition "ones.defaults.kubicle.test" is invalid: spec.versions\[0\].schema.openAPIV3Schema.properties\[spec\].properties\[replicas\].default: Invalid value: "integer": at most 100$' \
    $K apply -f "$d/one.yaml"
  crdshapes_defcrd two '              policy:
                type: object
                default: {mode: Fast}
                properties:
                  mode:
                    type: string
                    x-kubernetes-validations: [{rule: "self in [\"Auto\", \"Manual\"]"}]' >"$d/two.yaml"
  expect_fail "an object default a rule below it refuses: the field inside the default" \
    'spec.versions\[0\].schema.openAPIV3Schema.properties\[spec\].properties\[policy\].default.mode: Invalid value: "string": failed rule: self in \["Auto", "Manual"\]' \
    $K apply -f "$d/two.yaml"
  crdshapes_defcrd three '              policy:
                type: object
                default: {mode: Fast, level: 1}
                x-kubernetes-validations: [{rule: "self.mode == \"Auto\" || self.level > 1", fieldPath: .level, message: Fast needs a level above 1}]
                properties:
                  mode: {type: string}
                  level: {type: integer}' >"$d/three.yaml"
  expect_fail "a rule with fieldPath: the path inside the default" \
    'properties\[policy\].default.level: Invalid value: "object": Fast needs a level above 1' \
    $K apply -f "$d/three.yaml"
  crdshapes_defcrd four '              size:
                type: integer
                default: 10
                x-kubernetes-validations: [{rule: "oldSelf.hasValue() || self < 5", optionalOldSelf: true, message: below 5 on create}]' >"$d/four.yaml"
  expect_fail "an optionalOldSelf rule: the default is also checked as a create (no old value)" \
    'properties\[size\].default: Invalid value: "integer": below 5 on create' \
    $K apply -f "$d/four.yaml"
  crdshapes_defcrd five '              size:
                type: integer
                default: 3
                x-kubernetes-validations:
                - {rule: "self == oldSelf", message: immutable}
                - {rule: "self < 5", message: below 5}
                - {rule: "oldSelf.hasValue() || self < 5", optionalOldSelf: true, message: below 5 on create}
              policy:
                type: object
                default: {mode: Auto}
                properties:
                  mode:
                    type: string
                    x-kubernetes-validations: [{rule: "self in [\"Auto\", \"Manual\"]"}]' >"$d/five.yaml"
  expect "defaults that pass their rules (a transition rule sees the default as oldSelf): accepted" \
    "fives.defaults.kubicle.test created" $K apply -f "$d/five.yaml"
  expect_fail "a schema error in a default is reported, its rules not run" \
    'properties\[replicas\].default: Invalid value: "string": +in body must be of type integer: "string"$' \
    $K apply -f - <<<"$(crdshapes_defcrd six '              replicas:
                type: integer
                default: many
                x-kubernetes-validations: [{rule: "self <= 100", message: at most 100}]')"
  $K delete crd fives.defaults.kubicle.test >/dev/null
}

# CRD string formats as kube's format registry reads them (kube-openapi
# strfmt: hostname, email, duration), which real CRDs use (an ESO-shaped
# store's server host, an issuer's email, Argo's durations)
crdshapes_formats() {
  local K=$1 d=$2
  crdshapes_defcrd contact '              host: {type: string, format: hostname}
              mail: {type: string, format: email}
              wait: {type: string, format: duration}' Contact >"$d/formats.yaml"
  expect "a CRD with the hostname, email and duration formats" "contacts.defaults.kubicle.test created" \
    $K apply -f "$d/formats.yaml"
  $K wait --for=condition=Established crd/contacts.defaults.kubicle.test --timeout=10s >/dev/null
  expect "... valid values of each: accepted" "contact.defaults.kubicle.test/ok created" \
    $K apply -n shapes -f - <<<'{"apiVersion":"defaults.kubicle.test/v1","kind":"Contact","metadata":{"name":"ok"},"spec":{"host":"web-1.svc.cluster.local","mail":"Alice <alice@example.com>","wait":"1h30m"}}'
  expect_eq "... invalid ones: kube's format errors, each" \
    'The Contact "bad" is invalid: 
* spec.host: Invalid value: "-bad.com": spec.host in body must be of type hostname: "-bad.com"
* spec.mail: Invalid value: "not-an-email": spec.mail in body must be of type email: "not-an-email"
* spec.wait: Invalid value: "forever": spec.wait in body must be of type duration: "forever"' \
    crdshapes_refused "$K" <<<'{"apiVersion":"defaults.kubicle.test/v1","kind":"Contact","metadata":{"name":"bad"},"spec":{"host":"-bad.com","mail":"not-an-email","wait":"forever"}}'
  $K delete crd contacts.defaults.kubicle.test >/dev/null
}

# the schedulers' own Queue CRDs (issue 24: a built-in Queue kind kept
# KAI's from being Established and took Volcano's short name)
crdshapes_queues() {
  local K=$1 d=$2 f=$E2E_LIB_DIR/crdshapes/queues-like.yaml
  sed '/^---$/,$d' "$f" >"$d/volcano.yaml"
  expect "Volcano's Queue CRD alone: created" "queues.scheduling.volcano.sh created" $K apply -f "$d/volcano.yaml"
  expect "... Established" "condition met" \
    $K wait --for=condition=Established crd/queues.scheduling.volcano.sh --timeout=10s
  expect "... a queue through its short name q" "queue.scheduling.volcano.sh/research created" \
    $K apply -f - <<<'{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue","metadata":{"name":"research"},"spec":{"capability":{"nvidia.com/gpu":8}}}'
  expect_eq "... \`kubectl get queue\` and \`q\` name Volcano's kind (the weight defaulted)" \
    "research 1 scheduling.volcano.sh/v1beta1|research" \
    sh -c "echo \$($K get queue research -o 'jsonpath={.metadata.name} {.spec.weight} {.apiVersion}')'|'\$($K get q -o 'jsonpath={.items[*].metadata.name}')"
  expect "KAI's Queue CRD beside it: applied" "queues.scheduling.run.ai created" $K apply -f "$f"
  expect "... Established too" "condition met" \
    $K wait --for=condition=Established crd/queues.scheduling.run.ai --timeout=10s
  expect "... a KAI queue" "queue.scheduling.run.ai/team-a created" \
    $K apply -f - <<<'{"apiVersion":"scheduling.run.ai/v2","kind":"Queue","metadata":{"name":"team-a"},"spec":{"resources":{"gpu":{"quota":4,"limit":8,"overQuotaWeight":1}}}}'
  expect_eq "... each kind through its group" "team-a|research" \
    sh -c "echo \$($K get queues.scheduling.run.ai -o 'jsonpath={.items[*].metadata.name}')'|'\$($K get queues.scheduling.volcano.sh -o 'jsonpath={.items[*].metadata.name}')"
  $K delete -f "$f" >/dev/null
}

crdshapes_suite() {
  local KCFG=$E2E_TMP/main/kubeconfig
  local d=$E2E_TMP/crdshapes
  local K="kubectl --kubeconfig $KCFG --cache-dir $d/cache"
  mkdir -p "$d"
  $K create namespace shapes >/dev/null
  crdshapes_defaults "$K" "$d"
  crdshapes_formats "$K" "$d"
  crdshapes_istio "$K" "$d"
  crdshapes_eso "$K" "$d"
  crdshapes_argo "$K" "$d"
  crdshapes_queues "$K" "$d"
  $K delete namespace shapes --wait=false >/dev/null
}
