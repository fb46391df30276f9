# SPDX-License-Identifier: Apache-2.0
# `kubicle manifest NAME`: the host objects that run a tenant inside the host
# cluster. A plain kubicle server is the host stand-in: the manifests pass
# `kubectl apply --dry-run=server`, the pod template passes Pod Security
# "restricted" (the stand-in runs --policy untrusted), and the StatefulSet's
# own arguments start a real `kubicle serve` on the Secret's files mounted
# read-only, with a fake in-cluster service account (a private mount
# namespace puts the host's token at /var/run/secrets/...), whose syncer then
# creates the tenant's pods in the host namespace with the Role's rights.
# Sourced by run.sh.

# mf_field OBJKIND JQ: a field of one object of the YAML stream in $MF_JSON.
mf_field() { jq -r --arg k "$1" ".items[] | select(.kind == \$k) | $2" "$MF_JSON"; }

# The StatefulSet's container args, one per line.
mf_args() { mf_field StatefulSet '.spec.template.spec.containers[0].args[]'; }

# mf_arg FLAG: the values of FLAG in the container args, space separated.
mf_arg() { mf_args | awk -v f="$1" 'p {printf "%s%s", sep, $0; sep=" "} {p = ($0 == f)}'; }

mf_secret_pem() { # KEY: the Secret's KEY, decoded
  mf_field Secret ".data[\"$1\"]" | base64 -d
}

manifest_suite_setup() {
  MF_HOME=$E2E_TMP/mf-home
  mkdir -p "$MF_HOME" "$E2E_TMP/mf-tmp"
  export TMPDIR=$E2E_TMP/mf-tmp # where manifest makes (and removes) its PKI folder
  E2E_PORT=0 start_server mfhost --policy untrusted || return 1
  MF_HOST_KCFG=$KCFG MF_HOST_DIR=$DATA_DIR MF_HOST_PORT=${SERVER_URL##*:}
  MF_JSON=$E2E_TMP/mf.json
  KUBICLE_HOME=$MF_HOME "$KUBICLE" manifest t1 --queue team-a --gpus 2 -o json >"$MF_JSON"
}

manifest_suite_objects() {
  local H=(kubectl --kubeconfig "$MF_HOST_KCFG")
  expect_eq "manifest -o json is a v1 List of the expected kinds" \
    "List Namespace ServiceAccount Role RoleBinding ClusterRole ClusterRoleBinding ResourceQuota Secret Service StatefulSet" \
    jq -r '[.kind, (.items[].kind)] | join(" ")' "$MF_JSON"
  expect_fail "manifest refuses a NAME that is not a DNS label" "DNS label" \
    env KUBICLE_HOME="$MF_HOME" "$KUBICLE" manifest Bad_Name --queue q
  expect_fail "manifest needs --queue for the kai scheduler" "needs --queue" \
    env KUBICLE_HOME="$MF_HOME" "$KUBICLE" manifest t1
  # a namespaced dry run needs its namespace (as kube-apiserver does)
  expect_fail "dry run before the namespace exists: NotFound" 'namespaces "kubicle-t1" not found' \
    sh -c "KUBICLE_HOME='$MF_HOME' '$KUBICLE' manifest t1 --queue team-a | kubectl --kubeconfig '$MF_HOST_KCFG' apply --dry-run=server -f -"
  "${H[@]}" create ns kubicle-t1 >/dev/null
  local out n
  out=$(KUBICLE_HOME=$MF_HOME "$KUBICLE" manifest t1 --queue team-a --gpus 2 |
    "${H[@]}" apply --dry-run=server -f - 2>&1)
  n=$(grep -c '(server dry run)$' <<<"$out")
  if [ "$n" -eq 10 ] && ! grep -q Error <<<"$out"; then pass "manifest (YAML): all 10 objects pass apply --dry-run=server"
  else fail "manifest dry run: $n of 10 objects: $(head -c 800 <<<"$out")"; fi
  expect "manifest -o json items pass apply --dry-run=server" 'statefulset.apps/t1 created \(server dry run\)' \
    sh -c "jq -c '.items[]' '$MF_JSON' | kubectl --kubeconfig '$MF_HOST_KCFG' apply --dry-run=server -f -"
  expect_eq "dry run created nothing" "" "${H[@]}" -n kubicle-t1 get statefulsets,secrets -o name
}

manifest_suite_args() {
  expect_eq "container runs kubicle serve" "kubicle serve" \
    sh -c "jq -r '.items[] | select(.kind==\"StatefulSet\") | .spec.template.spec.containers[0] | (.command + .args[0:1]) | join(\" \")' '$MF_JSON'"
  expect_eq "--tls-san carries the Service DNS names and kubernetes.default's" \
    "t1 t1.kubicle-t1 t1.kubicle-t1.svc t1.kubicle-t1.svc.cluster.local kubernetes kubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local" \
    mf_arg --tls-san
  expect_eq "--host-namespace" "kubicle-t1" mf_arg --host-namespace
  expect_eq "--tenant" "t1" mf_arg --tenant
  expect_eq "--queue" "team-a" mf_arg --queue
  expect_eq "--scheduler defaults to kai" "kai" mf_arg --scheduler
  expect_eq "--advertise-address is the Service" "t1.kubicle-t1.svc" mf_arg --advertise-address
  expect_eq "--listen on all addresses, port 6443" "0.0.0.0:6443" mf_arg --listen
  expect_eq "in-cluster: no --host-kubeconfig" "" mf_arg --host-kubeconfig
  local data pki
  data=$(mf_arg --data-dir) pki=$(mf_arg --pki-dir)
  expect_eq "--data-dir is on the claim template's volume" "data /var/lib/kubicle" \
    mf_field StatefulSet ".spec.volumeClaimTemplates[0].metadata.name as \$v | .spec.template.spec.containers[0].volumeMounts[] | select(.name == \$v) | .mountPath as \$m | select(\"$data\" | startswith(\$m)) | \"\(.name) \(\$m)\""
  expect_eq "--pki-dir is the Secret, mounted read-only" "t1-pki true" \
    mf_field StatefulSet "(.spec.template.spec.volumes[] | select(.name == \"pki\") | .secret.secretName) + \" \" + (.spec.template.spec.containers[0].volumeMounts[] | select(.mountPath == \"$pki\") | .readOnly | tostring)"
  expect_eq "pod runs as the ServiceAccount bound to the syncer Role" "kubicle-t1 kubicle-t1 kubicle-t1" \
    sh -c "jq -r '[(.items[] | select(.kind==\"StatefulSet\") | .spec.template.spec.serviceAccountName), (.items[] | select(.kind==\"RoleBinding\") | .subjects[0].name, .roleRef.name)] | join(\" \")' '$MF_JSON'"
  expect_eq "the syncer Role manages the tenant's Services" "get list watch create update patch delete" \
    jq -r '.items[] | select(.kind=="Role") | .rules[] | select(.resources == ["services"]) | .verbs | join(" ")' "$MF_JSON"
  expect_eq "the syncer Role reads Kueue's Workloads and the ResourceQuotas (gangs)" "get list watch | get list" \
    jq -r '[(.items[] | select(.kind=="Role") | .rules[] | select(.resources == ["workloads"] or .resources == ["resourcequotas"]) | .verbs | join(" "))] | join(" | ")' "$MF_JSON"
  # the names `kubicle create` uses on the host: applying both never changes a roleRef
  expect_eq "nodes: shared ClusterRole (no tenant label), per-tenant binding" \
    "kubicle-syncer-nodes null get nodes | kubicle-t1-nodes kubicle-syncer-nodes kubicle-t1" \
    jq -r '[(.items[] | select(.kind=="ClusterRole") | "\(.metadata.name) \(.metadata.labels["kubicle.dev/tenant"]) \(.rules[0].verbs[0]) \(.rules[0].resources[0])"),
      (.items[] | select(.kind=="ClusterRoleBinding") | "\(.metadata.name) \(.roleRef.name) \(.subjects[0].name)")] | join(" | ")' "$MF_JSON"
  expect_eq "probes: /readyz and /livez over HTTPS" "/readyz HTTPS /livez HTTPS" \
    mf_field StatefulSet '.spec.template.spec.containers[0] | "\(.readinessProbe.httpGet.path) \(.readinessProbe.httpGet.scheme) \(.livenessProbe.httpGet.path) \(.livenessProbe.httpGet.scheme)"'
  # the syncer deletes host pods labelled with its tenant that no tenant pod owns
  expect_eq "server pod does not carry kubicle.dev/tenant" "null t1" \
    mf_field StatefulSet '.spec.template.metadata.labels | "\(.["kubicle.dev/tenant"]) \(.["kubicle.dev/control-plane"])"'
  expect_eq "Service: 443 and 6443 to the server's port, 53 (UDP, TCP) to its DNS" \
    "443:https/TCP 6443:https/TCP 53:dns/UDP 53:dns-tcp/TCP" \
    mf_field Service '[.spec.ports[] | "\(.port):\(.targetPort)/\(.protocol)"] | join(" ")'
  expect_eq "the server's DNS on 5353 (UDP and TCP), pods pointed at the Service" \
    "0.0.0.0:5353 t1 dns:5353/UDP dns-tcp:5353/TCP" \
    mf_field StatefulSet '.spec.template.spec.containers[0] | (.args | index("--dns-listen")) as $d | (.args | index("--pod-dns")) as $p | "\(.args[$d+1]) \(.args[$p+1]) " + ([.ports[] | select(.name | startswith("dns")) | "\(.name):\(.containerPort)/\(.protocol)"] | join(" "))'
  expect_eq "GPU quota from --gpus" "2" mf_field ResourceQuota '.spec.hard["requests.nvidia.com/gpu"]'
  # a policy FILE travels in a ConfigMap (a multi-line YAML string: the
  # host's own parse of the stream must give the file back byte for byte)
  printf 'name: mf-custom\npodSecurity: baseline\nhostFields: deny  # comment: "quoted"\n' >"$E2E_TMP/mf-policy.yaml"
  local out
  out=$(KUBICLE_HOME=$MF_HOME "$KUBICLE" manifest t1 --queue team-a --policy "$E2E_TMP/mf-policy.yaml" |
    kubectl --kubeconfig "$MF_HOST_KCFG" apply --dry-run=server -o json -f - 2>/dev/null)
  expect_eq "policy FILE: ConfigMap holds the file as the host parsed the YAML" \
    "$(cat "$E2E_TMP/mf-policy.yaml")" \
    jq -r '.items[] | select(.kind=="ConfigMap") | .data["policy.yaml"]' <<<"$out"
  expect_eq "policy FILE: --policy names the mounted ConfigMap's file" \
    "/etc/kubicle/policy/policy.yaml t1-policy /etc/kubicle/policy" \
    jq -r '.items[] | select(.kind=="StatefulSet") | .spec.template.spec as $p | $p.containers[0].args as $a |
      "\($a[($a | index("--policy")) + 1]) \($p.volumes[] | select(.name=="policy") | .configMap.name) \($p.containers[0].volumeMounts[] | select(.name=="policy") | .mountPath)"' <<<"$out"
  # the host floor is the server's default (baseline) unless the platform says
  expect_eq "no --floor: the server's default" "null" \
    jq -r '.items[] | select(.kind=="StatefulSet") | .spec.template.spec.containers[0].args | index("--floor")' <<<"$out"
  expect_eq "--floor privileged reaches the server" "privileged" \
    sh -c "KUBICLE_HOME=$MF_HOME $KUBICLE manifest t1 --queue team-a --floor privileged -o json |
      jq -r '.items[] | select(.kind==\"StatefulSet\") | .spec.template.spec.containers[0].args as \$a | \$a[(\$a | index(\"--floor\")) + 1]'"
}

manifest_suite_certs() {
  local d=$E2E_TMP/mf-pem
  mkdir -p "$d"
  local k
  for k in ca.crt tls.crt tls.key admin.crt admin.key ca.key; do mf_secret_pem "$k" >"$d/$k"; done
  expect_eq "Secret type kubernetes.io/tls" "kubernetes.io/tls" mf_field Secret .type
  expect "serving cert has the Service SANs" \
    'DNS:t1, DNS:t1.kubicle-t1, DNS:t1.kubicle-t1.svc, DNS:t1.kubicle-t1.svc.cluster.local' \
    openssl x509 -in "$d/tls.crt" -noout -ext subjectAltName
  expect "serving cert is signed by the Secret's CA" ': OK' \
    openssl verify -CAfile "$d/ca.crt" "$d/tls.crt"
  expect "admin cert is signed by the CA, O=system:masters" 'O ?= ?system:masters' \
    sh -c "openssl verify -CAfile '$d/ca.crt' '$d/admin.crt' && openssl x509 -in '$d/admin.crt' -noout -subject"
  expect_eq "ca.key is the CA certificate's key" \
    "$(openssl x509 -in "$d/ca.crt" -noout -pubkey)" openssl pkey -in "$d/ca.key" -pubout
  expect_eq "the temporary PKI folder is gone" "" \
    sh -c "ls -d '$E2E_TMP'/mf-tmp/kubicle-manifest.* 2>/dev/null"
  # an existing tenant: its CA and admin credential, a new serving cert
  local td=$MF_HOME/tenants/t2
  mkdir -p "$MF_HOME/tenants"
  "$KUBICLE" serve --data-dir "$td" --listen 127.0.0.1:0 --log-level error >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 100); do [ -s "$td/kubeconfig" ] && break; sleep 0.05; done
  kill "$pid"; wait "$pid" 2>/dev/null
  printf '{"name":"t2","hostNamespace":"gpu-t2","queue":"team-b","scheduler":"volcano","policy":"trusted","gpus":-1}\n' >"$td/tenant.json"
  local j=$E2E_TMP/mf-t2.json
  KUBICLE_HOME=$MF_HOME "$KUBICLE" manifest t2 -o json >"$j"
  expect_eq "tenant.json: namespace, queue, scheduler and policy" \
    "gpu-t2 team-b volcano trusted" \
    jq -r '.items[] | select(.kind=="StatefulSet") | .spec.template.spec.containers[0].args as $a |
      [range(0; $a|length) | select($a[.] | IN("--host-namespace","--queue","--scheduler","--policy")) | $a[.+1]] | join(" ")' "$j"
  expect_eq "gpus -1 in tenant.json: no quota" "" jq -r '.items[] | select(.kind=="ResourceQuota") | .kind' "$j"
  expect_eq "flags override tenant.json" "other" \
    sh -c "KUBICLE_HOME='$MF_HOME' '$KUBICLE' manifest t2 --queue other -o json | jq -r '.items[] | select(.kind==\"StatefulSet\") | .spec.template.spec.containers[0].args as \$a | \$a[(\$a | index(\"--queue\")) + 1]'"
  expect_eq "existing tenant: its CA is in the Secret" "$(base64 -w0 <"$td/ca.crt")" \
    jq -r '.items[] | select(.kind=="Secret") | .data["ca.crt"]' "$j"
  expect_eq "existing tenant: its admin certificate is in the Secret" "$(base64 -w0 <"$td/admin.crt")" \
    jq -r '.items[] | select(.kind=="Secret") | .data["admin.crt"]' "$j"
  expect "existing tenant: new serving cert for the Service, from its CA" 'DNS:t2.gpu-t2.svc.cluster.local' \
    sh -c "jq -r '.items[] | select(.kind==\"Secret\") | .data[\"tls.crt\"]' '$j' | base64 -d | openssl x509 -noout -ext subjectAltName"
  expect "existing tenant: its own serving cert untouched (no Service SANs)" '^subject' \
    sh -c "! openssl x509 -in '$td/server.crt' -noout -ext subjectAltName | grep -q svc && openssl x509 -in '$td/server.crt' -noout -subject"
}

# The pod template, as a Pod, under the stand-in's --policy untrusted (PSS restricted).
manifest_suite_pss() {
  local H=(kubectl --kubeconfig "$MF_HOST_KCFG")
  local pod=$E2E_TMP/mf-pod.json
  mf_field StatefulSet '{apiVersion: "v1", kind: "Pod", metadata: {name: "pss-check", namespace: "kubicle-t1"}, spec: .spec.template.spec}' >"$pod"
  expect "pod template passes Pod Security restricted" 'pod/pss-check created \(server dry run\)' \
    "${H[@]}" apply --dry-run=server -f "$pod"
  jq 'del(.spec.containers[0].securityContext.allowPrivilegeEscalation)' "$pod" >"$pod.bad"
  expect_fail "control: without allowPrivilegeEscalation=false it is refused" 'allowPrivilegeEscalation|forbidden|restricted' \
    "${H[@]}" apply --dry-run=server -f "$pod.bad"
}

# Runs the StatefulSet's args for real: the Secret's files under the
# volume's item paths, mounted read-only, and the host ServiceAccount's
# token where the in-cluster client looks for it.
manifest_suite_run() {
  if ! unshare -m --propagation private true 2>/dev/null; then
    pass "in-cluster run skipped: no mount namespaces here"
    return
  fi
  local H=(kubectl --kubeconfig "$MF_HOST_KCFG")
  expect "manifest applies for real on the host" 'statefulset.apps/t1 created' \
    sh -c "jq -c '.items[]' '$MF_JSON' | kubectl --kubeconfig '$MF_HOST_KCFG' apply -f -"
  local pki=$E2E_TMP/mf-pki sa=$E2E_TMP/mf-sa data=$E2E_TMP/mf-data
  mkdir -p "$pki" "$sa"
  local key path
  while read -r key path; do
    "${H[@]}" -n kubicle-t1 get secret t1-pki -o json | jq -r --arg k "$key" '.data[$k]' | base64 -d >"$pki/$path"
  done < <(mf_field StatefulSet '.spec.template.spec.volumes[] | select(.name=="pki") | .secret.items[] | "\(.key) \(.path)"')
  chmod 0440 "$pki"/*
  "${H[@]}" -n kubicle-t1 create token kubicle-t1 --duration 1h >"$sa/token"
  cp "$MF_HOST_DIR/ca.crt" "$sa/ca.crt"
  local sums; sums=$(cd "$pki" && sha256sum ./*)
  # the pod's own args, with our folders and a free port
  local args=() a prev=
  while IFS= read -r a; do
    case $prev in
      --data-dir) a=$data ;;
      --pki-dir) a=$pki ;;
      --listen|--dns-listen) a=127.0.0.1:0 ;;
    esac
    args+=("$a"); prev=$a
  done < <(mf_args)
  # shellcheck disable=SC2016
  KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$MF_HOST_PORT \
    unshare -m --propagation private sh -c '
      set -e
      pki=$1 sa=$2; shift 2
      mount -t tmpfs none /run
      mkdir -p /run/secrets/kubernetes.io/serviceaccount
      cp "$sa/token" "$sa/ca.crt" /run/secrets/kubernetes.io/serviceaccount/
      mount --bind "$pki" "$pki"
      mount -o remount,ro,bind "$pki"
      exec "$@"' sh "$pki" "$sa" "$KUBICLE" "${args[@]}" >>"$E2E_TMP/mftenant.log" 2>&1 &
  local pid=$!
  E2E_PIDS+=("$pid")
  for _ in $(seq 600); do [ -s "$data/kubeconfig" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if [ ! -s "$data/kubeconfig" ]; then
    fail "kubicle serve with the manifest's args did not start: $(tail -5 "$E2E_TMP/mftenant.log")"
    return
  fi
  pass "kubicle serve starts with the manifest's args on a read-only --pki-dir"
  local port; port=$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$data/kubeconfig")
  port=${port##*:}
  expect_eq "served with the Secret's certificate for t1.kubicle-t1.svc; probes need no client cert" "ok" \
    curl -sS --cacert "$pki/ca.crt" --resolve "t1.kubicle-t1.svc:$port:127.0.0.1" \
    "https://t1.kubicle-t1.svc:$port/readyz"
  expect_eq "the read-only pki folder is unchanged" "$sums" sh -c "cd '$pki' && sha256sum ./*"
  local T=(kubectl --kubeconfig "$data/kubeconfig")
  expect "admin kubeconfig written to --data-dir works" 'default' "${T[@]}" get ns
  # restricted, as the stand-in's --policy untrusted demands of host pods
  "${T[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: mfpod}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: busybox
    command: [sleep, "3600"]
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 100m, memory: 64Mi}}
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
EOF
  local i ok=
  for i in $(seq 100); do
    "${H[@]}" -n kubicle-t1 get pod mfpod-x-default-x-t1 >/dev/null 2>&1 && { ok=1; break; }
    sleep 0.1
  done
  if [ -n "$ok" ]; then pass "in-cluster syncer (the ServiceAccount's Role) creates the tenant's pod on the host"
  else fail "no host pod for the tenant: $(grep -E 'syncer|host' "$E2E_TMP/mftenant.log" | tail -5)"; fi
  expect_eq "host pod labelled with its tenant, env points at the Service" \
    "t1 t1.kubicle-t1.svc" \
    "${H[@]}" -n kubicle-t1 get pod mfpod-x-default-x-t1 -o \
    'jsonpath={.metadata.labels.kubicle\.dev/tenant} {.spec.containers[0].env[?(@.name=="KUBERNETES_SERVICE_HOST")].value}'
  expect_until "the tenant's kubernetes Service has the server's host Service's address (--api-service)" \
    "$("${H[@]}" -n kubicle-t1 get svc t1 -o jsonpath='{.spec.clusterIP}')" \
    "${T[@]}" get svc kubernetes -o jsonpath='{.spec.clusterIP}'
  expect_eq "the serving certificate names kubernetes.default.svc, as kube-apiserver's" "ok" \
    curl -sS --cacert "$pki/ca.crt" --resolve "kubernetes.default.svc:$port:127.0.0.1" \
    "https://kubernetes.default.svc:$port/readyz"
  expect_eq "host pod resolves through the server's Service (the tenant's DNS)" \
    "$("${H[@]}" -n kubicle-t1 get svc t1 -o jsonpath='{.spec.clusterIP}') None" \
    "${H[@]}" -n kubicle-t1 get pod mfpod-x-default-x-t1 -o 'jsonpath={.spec.dnsConfig.nameservers[0]} {.spec.dnsPolicy}'
  if "${H[@]}" -n kubicle-t1 get pod t1-0 >/dev/null 2>&1; then
    expect "the host's server pod t1-0 survives the syncer's resync" 't1-0' \
      sh -c "sleep 1; kubectl --kubeconfig '$MF_HOST_KCFG' -n kubicle-t1 get pod t1-0 -o name"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}

manifest_suite() {
  local saved_tmpdir=${TMPDIR-}
  if manifest_suite_setup; then
    manifest_suite_objects
    manifest_suite_args
    manifest_suite_certs
    manifest_suite_pss
    manifest_suite_run
  else
    fail "manifest: setup"
  fi
  if [ -n "$saved_tmpdir" ]; then export TMPDIR=$saved_tmpdir; else unset TMPDIR; fi
}
