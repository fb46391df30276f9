# SPDX-License-Identifier: Apache-2.0
# No server-side request forgery from the tenant server (docs/egress.md):
# hostile tenants point admission webhooks, a CRD's conversion webhook and
# an APIService at this machine's loopback and own addresses (by IP, by
# name, through a Service's cluster IP or ExternalName, in IPv6 and
# IPv4-mapped spellings) and at the cloud metadata address. A listener on
# every local address (recorder.py) records each connection it gets:
# nothing may connect, and each tenant gets kube's Status for an
# unreachable webhook saying the address is not allowed. Servers with
# --egress-allow show the listener does record what reaches it, and that a
# wide prefix does not open loopback. Sourced by run.sh.

# ssrf_hits: connections the recorder accepted so far
ssrf_hits() { wc -l <"$E2E_TMP/ssrf/connections.log" | tr -d ' '; }

# ssrf_vwh NAME CLIENTCONFIG FAILUREPOLICY: a ValidatingWebhookConfiguration
# on configmap creates in namespaces labelled ssrf=on (CLIENTCONFIG: flow YAML)
ssrf_vwh() {
  printf 'apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: %s}\nwebhooks:\n- name: %s.ssrf.test\n  admissionReviewVersions: ["v1"]\n  sideEffects: None\n  failurePolicy: %s\n  timeoutSeconds: 5\n  clientConfig: %s\n  rules:\n  - operations: [CREATE]\n    apiGroups: [""]\n    apiVersions: ["v1"]\n    resources: ["configmaps"]\n  namespaceSelector: {matchLabels: {ssrf: "on"}}\n' \
    "$1" "$1" "$3" "$2"
}

# ssrf_refused DESC NAME CLIENTCONFIG WANT: a Fail webhook at CLIENTCONFIG
# makes a configmap create fail with WANT (a fixed string: kube's message up
# to the address, then this server's reason), and nothing connects
ssrf_refused() {
  local desc=$1 name=$2 cc=$3 want=$4 out before
  before=$(ssrf_hits)
  ssrf_vwh "$name" "$cc" Fail | $SK apply -f - >/dev/null
  out=$($SK -n ssrf create configmap "cm-$name" 2>&1)
  if grep -qF -- "$want" <<<"$out" && grep -qF "connect: address not allowed by this server's egress policy" <<<"$out"; then
    pass "$desc"
  else
    fail "$desc: wanted '$want ... address not allowed', got: $(head -c 600 <<<"$out")"
  fi
  expect_eq "... and nothing connected" "$before" ssrf_hits
  $SK delete validatingwebhookconfiguration "$name" >/dev/null
}

ssrf_suite() {
  echo "== ssrf: the egress policy"
  local d=$E2E_TMP/ssrf P i own six=""
  mkdir -p "$d"
  python3 "$E2E_LIB_DIR/recorder.py" "$d/port" "$d/connections.log" >>"$d/recorder.log" 2>&1 &
  E2E_PIDS+=("$!")
  for i in $(seq 100); do [ -s "$d/port" ] && break; sleep 0.05; done
  P=$(cat "$d/port")
  [ -n "$P" ] || { fail "ssrf: the recorder did not start"; return; }
  # this machine's first address that is not loopback (the recorder listens there too)
  own=$(ip -o addr show scope global 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | grep -v : | head -1)
  python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null && six=1

  E2E_EGRESS_ALLOW="" start_server ssrf || { fail "ssrf: server did not start"; return; }
  local SK="kubectl --kubeconfig $KCFG"
  $SK create ns ssrf >/dev/null
  $SK label ns ssrf ssrf=on >/dev/null

  echo "-- admission webhooks by URL"
  ssrf_refused "a webhook at 127.0.0.1: refused with kube's words for a failed call" lo \
    "{url: \"https://127.0.0.1:$P/x\"}" \
    "failed calling webhook \"lo.ssrf.test\": failed to call webhook: Post \"https://127.0.0.1:$P/x?timeout=5s\": dial tcp 127.0.0.1:$P: connect: address not allowed"
  ssrf_refused "... elsewhere in 127/8" lo2 "{url: \"https://127.1.2.3:$P/x\"}" \
    "dial tcp 127.1.2.3:$P: connect:"
  ssrf_refused "... by name (localhost: the resolved address is checked)" name \
    "{url: \"https://localhost:$P/x\"}" \
    "Post \"https://localhost:$P/x?timeout=5s\": dial tcp "
  ssrf_refused "... as IPv4-mapped IPv6" mapped "{url: \"https://[::ffff:127.0.0.1]:$P/x\"}" \
    "Post \"https://[::ffff:127.0.0.1]:$P/x?timeout=5s\": dial tcp "
  ssrf_refused "... 0.0.0.0 (this host)" zero "{url: \"https://0.0.0.0:$P/x\"}" \
    "dial tcp 0.0.0.0:$P: connect:"
  if [ -n "$six" ]; then
    ssrf_refused "... ::1" six "{url: \"https://[::1]:$P/x\"}" "dial tcp [::1]:$P: connect:"
  fi
  if [ -n "$own" ]; then
    ssrf_refused "... this machine's own address ($own)" own "{url: \"https://$own:$P/x\"}" \
      "dial tcp $own:$P: connect:"
  else
    fail "ssrf: this machine has no global IPv4 address to aim at"
  fi
  ssrf_refused "... the cloud metadata address" meta "{url: \"https://169.254.169.254/latest\"}" \
    "Post \"https://169.254.169.254/latest?timeout=5s\": dial tcp 169.254.169.254:443: connect:"

  echo "-- admission webhooks through Services"
  printf 'apiVersion: v1\nkind: Service\nmetadata: {name: cip, namespace: ssrf}\nspec: {clusterIP: 127.0.0.1, ports: [{name: https, port: %s}]}\n' "$P" |
    $SK apply -f - >/dev/null
  ssrf_refused "a Service whose cluster IP the tenant wrote as 127.0.0.1" cip \
    "{service: {namespace: ssrf, name: cip, port: $P}}" \
    "Post \"https://cip.ssrf.svc:$P/?timeout=5s\": dial tcp 127.0.0.1:$P: connect:"
  printf 'apiVersion: v1\nkind: Service\nmetadata: {name: ext, namespace: ssrf}\nspec: {type: ExternalName, externalName: localhost}\n' |
    $SK apply -f - >/dev/null
  ssrf_refused "an ExternalName Service naming localhost" ext \
    "{service: {namespace: ssrf, name: ext, port: $P}}" \
    "Post \"https://ext.ssrf.svc:$P/?timeout=5s\": dial tcp "

  echo "-- failurePolicy"
  local before
  before=$(ssrf_hits)
  ssrf_vwh ign "{url: \"https://127.0.0.1:$P/x\"}" Ignore | $SK apply -f - >/dev/null
  expect "failurePolicy Ignore: the write goes on without the webhook" "configmap/cm-ign created" \
    $SK -n ssrf create configmap cm-ign
  expect_eq "... and nothing connected" "$before" ssrf_hits
  $SK delete validatingwebhookconfiguration ign >/dev/null

  echo "-- a CRD's conversion webhook"
  $SK apply -f - >/dev/null <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: probes.ssrf.kubicle.test}
spec:
  group: ssrf.kubicle.test
  names: {kind: Probe, plural: probes}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      clientConfig: {url: "https://127.0.0.1:$P/convert"}
      conversionReviewVersions: [v1]
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
  - {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}
YAML
  wait_for "ssrf: the CRD is established" 20 $SK wait --for=condition=Established crd/probes.ssrf.kubicle.test --timeout=1s
  $SK -n ssrf create -f - >/dev/null <<<'{"apiVersion":"ssrf.kubicle.test/v1","kind":"Probe","metadata":{"name":"p"}}'
  before=$(ssrf_hits)
  expect_fail "a read through the other version: the conversion webhook's address is refused" \
    "conversion webhook for ssrf.kubicle.test/v1, Kind=Probe failed: Post \"https://127.0.0.1:$P/convert\?timeout=30s\": dial tcp 127.0.0.1:$P: connect: address not allowed" \
    $SK -n ssrf get probes.v2.ssrf.kubicle.test p
  expect_eq "... and nothing connected" "$before" ssrf_hits

  echo "-- an APIService"
  $SK create ns ssrf-agg >/dev/null
  printf 'apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: ssrf-agg}\nspec: {type: ExternalName, externalName: localhost}\n' |
    $SK apply -f - >/dev/null
  printf 'apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.agg.ssrf.test}\nspec: {group: agg.ssrf.test, version: v1, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true, service: {namespace: ssrf-agg, name: api, port: %s}}\n' "$P" |
    $SK apply -f - >/dev/null
  expect_until_match "an APIService behind an ExternalName localhost: unavailable, the address not allowed" 20 \
    "False FailedDiscoveryCheck failing or missing response from https://localhost:$P/apis/agg.ssrf.test/v1: Get .*: dial tcp .*: connect: address not allowed" \
    $SK get apiservice v1.agg.ssrf.test -o 'jsonpath={.status.conditions[0].status} {.status.conditions[0].reason} {.status.conditions[0].message}'
  expect_fail "... requests to it: 503" "the server is currently unable to handle the request" \
    $SK get --raw /apis/agg.ssrf.test/v1
  $SK delete apiservice v1.agg.ssrf.test >/dev/null
  expect_eq "nothing ever connected to the listener" "0" ssrf_hits

  echo "-- the tenant's own host pods and Services (as the host reports them)"
  E2E_EGRESS_ALLOW="" start_server ssrf-host --standin-exec || { fail "ssrf: host stand-in"; return; }
  local HK=$KCFG H="kubectl --kubeconfig $KCFG"
  $H create ns tenants >/dev/null
  printf 'apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: team-s}\nspec: {resources: {gpu: {quota: 2, limit: 2}}}\n' | $H apply -f - >/dev/null
  start_scheduler ssrf-host
  E2E_EGRESS_ALLOW="" start_server ssrf-t --host-kubeconfig "$HK" --host-namespace tenants \
    --tenant ssrft --queue team-s || { fail "ssrf: tenant with a host"; return; }
  SK="kubectl --kubeconfig $KCFG"
  $SK create ns ssrf >/dev/null
  $SK label ns ssrf ssrf=on >/dev/null
  $SK -n ssrf run web --image=busybox -- sleep 3600 >/dev/null
  local ip="" svcip="" hostsvc=""
  wait_for "ssrf: the tenant pod gets its host pod's IP" 60 \
    sh -c "$SK -n ssrf get pod web -o jsonpath='{.status.podIP}' | grep -q '^10\.244\.'"
  ip=$($SK -n ssrf get pod web -o jsonpath='{.status.podIP}')
  $SK -n ssrf create service clusterip websvc --tcp=9:9 >/dev/null
  wait_for "ssrf: the tenant Service gets its host Service's cluster IP" 60 \
    sh -c "h=\$($H -n tenants get svc -l kubicle.dev/tenant=ssrft -o jsonpath='{.items[0].spec.clusterIP}'); [ -n \"\$h\" ] && [ \"\$h\" = \"\$($SK -n ssrf get svc websvc -o jsonpath='{.spec.clusterIP}')\" ]"
  svcip=$($SK -n ssrf get svc websvc -o jsonpath='{.spec.clusterIP}')
  # allowed: the call goes out (and fails here: these addresses lead nowhere
  # on this machine), so the answer is a failed call, not a refusal
  local out
  ssrf_vwh own-pod "{url: \"https://$ip:9/x\"}" Fail | sed 's/timeoutSeconds: 5/timeoutSeconds: 1/' | $SK apply -f - >/dev/null
  out=$($SK -n ssrf create configmap cm-own-pod 2>&1)
  if grep -qF "failed calling webhook \"own-pod.ssrf.test\": failed to call webhook: Post \"https://$ip:9/x?timeout=1s\"" <<<"$out" &&
    ! grep -q "not allowed" <<<"$out"; then pass "a webhook at the tenant's own host pod IP ($ip): allowed (the call is made)"
  else fail "a webhook at the tenant's own host pod IP ($ip): got $(head -c 400 <<<"$out")"; fi
  $SK delete validatingwebhookconfiguration own-pod >/dev/null
  ssrf_vwh own-svc "{service: {namespace: ssrf, name: websvc, port: 9}}" Fail | sed 's/timeoutSeconds: 5/timeoutSeconds: 1/' | $SK apply -f - >/dev/null
  out=$($SK -n ssrf create configmap cm-own-svc 2>&1)
  if grep -qF "failed calling webhook \"own-svc.ssrf.test\": failed to call webhook: Post \"https://websvc.ssrf.svc:9/?timeout=1s\"" <<<"$out" &&
    ! grep -q "not allowed" <<<"$out"; then pass "a webhook at the tenant's own Service (host cluster IP $svcip): allowed"
  else fail "a webhook at the tenant's own Service ($svcip): got $(head -c 400 <<<"$out")"; fi
  $SK delete validatingwebhookconfiguration own-svc >/dev/null
  ssrf_refused "a pod IP of the same range that is not the tenant's: refused" other-pod \
    "{url: \"https://10.244.250.7:9/x\"}" "dial tcp 10.244.250.7:9: connect:"
  ssrf_refused "the host API server (the stand-in on loopback): refused" host-api \
    "{url: \"$(awk '/server:/ {gsub(/"/, "", $2); print $2; exit}' "$HK")/api\"}" "connect: address not allowed"

  echo "-- the platform's allow list"
  E2E_EGRESS_ALLOW=0.0.0.0/0 start_server ssrf-wide || { fail "ssrf: server --egress-allow 0.0.0.0/0"; return; }
  local SK="kubectl --kubeconfig $KCFG"
  $SK create ns ssrf >/dev/null
  $SK label ns ssrf ssrf=on >/dev/null
  ssrf_refused "--egress-allow 0.0.0.0/0 does not open loopback (no prefix inside 127/8 names it)" wide \
    "{url: \"https://127.0.0.1:$P/x\"}" "dial tcp 127.0.0.1:$P: connect:"
  E2E_EGRESS_ALLOW=127.0.0.1/32 start_server ssrf-lo || { fail "ssrf: server --egress-allow 127.0.0.1/32"; return; }
  SK="kubectl --kubeconfig $KCFG"
  $SK create ns ssrf >/dev/null
  $SK label ns ssrf ssrf=on >/dev/null
  ssrf_vwh allowed "{url: \"https://127.0.0.1:$P/x\"}" Fail | $SK apply -f - >/dev/null
  expect_fail "--egress-allow 127.0.0.1/32: the call goes out (the listener is no TLS server)" \
    'failed calling webhook "allowed.ssrf.test": failed to call webhook: Post' \
    $SK -n ssrf create configmap cm-allowed
  expect_until "... and the listener recorded it: the recorder sees what gets through" "1" ssrf_hits

  echo "-- kubicle create --egress-allow: stored with the tenant, passed to its server"
  local home=$d/home hits
  expect "kubicle create with --egress-allow" "tenant egt is running" \
    env KUBICLE_HOME="$home" "$KUBICLE" create egt --egress-allow 127.0.0.1/32 --wait
  expect_eq "... kept in tenant.json" "['127.0.0.1/32']" \
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["egressAllow"])' "$home/tenants/egt/tenant.json"
  SK="kubectl --kubeconfig $home/tenants/egt/kubeconfig"
  $SK create ns ssrf >/dev/null
  $SK label ns ssrf ssrf=on >/dev/null
  hits=$(ssrf_hits)
  ssrf_vwh egt "{url: \"https://127.0.0.1:$P/x\"}" Fail | $SK apply -f - >/dev/null
  $SK -n ssrf create configmap cm-egt >/dev/null 2>&1
  expect_until "... its server may call 127.0.0.1 (the listener recorded it)" "$((hits + 1))" ssrf_hits
  env KUBICLE_HOME="$home" "$KUBICLE" delete egt >/dev/null 2>&1
  expect_rc "kubicle create --egress-allow with host bits set: a bad flag" 2 \
    'bad --egress-allow 10\.0\.0\.1/8' env KUBICLE_HOME="$home" "$KUBICLE" create egb --egress-allow 10.0.0.1/8

  echo "-- flags"
  expect_rc "kubicle serve --egress-allow with host bits set: a bad flag" 2 \
    'bad --egress-allow 10\.0\.0\.1/8' "$KUBICLE" serve --data-dir "$d/bad" --egress-allow 10.0.0.1/8
  expect_rc "... not a prefix at all" 2 'bad --egress-allow example\.com' \
    "$KUBICLE" serve --data-dir "$d/bad" --egress-allow example.com
  expect "kubicle serve --help names the flag" '--egress-allow CIDR' "$KUBICLE" serve --help
  expect_eq "kubicle manifest --egress-allow: the in-cluster server gets it" "10.1.0.0/16" \
    sh -c "KUBICLE_HOME='$d/home' '$KUBICLE' manifest mt --namespace mt --queue q --egress-allow 10.1.0.0/16 -o json | python3 -c 'import json,sys
for o in json.load(sys.stdin)[\"items\"]:
    if o[\"kind\"] == \"StatefulSet\":
        a = o[\"spec\"][\"template\"][\"spec\"][\"containers\"][0][\"args\"]
        print(a[a.index(\"--egress-allow\") + 1])'"
}
