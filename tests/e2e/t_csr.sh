# SPDX-License-Identifier: Apache-2.0
# CertificateSigningRequests end to end, as the Kubernetes documentation's
# "normal user" walkthrough: openssl genrsa/req, `kubectl apply` a CSR of
# signerName kubernetes.io/kube-apiserver-client, `kubectl certificate
# approve`, the issued certificate from .status.certificate in a kubeconfig
# that authenticates as CN/O and meets RBAC. Also: the columns, deny, the
# approve and sign permissions on signers, kube's validation causes, the
# subject restriction, the signer's usage check, other signers left alone,
# the spec.signerName field selector, discovery and explain. Sourced by
# run.sh.

# csr_yaml NAME CSRFILE SIGNER [EXPIRATION] [USAGE...]: a CSR manifest on stdout.
csr_yaml() {
  local name=$1 file=$2 signer=$3 exp=${4:-} u
  shift 4 2>/dev/null || shift $#
  printf 'apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\n'
  printf 'metadata:\n  name: %s\nspec:\n  request: %s\n  signerName: %s\n' \
    "$name" "$(base64 -w0 "$file")" "$signer"
  [ -n "$exp" ] && printf '  expirationSeconds: %s\n' "$exp"
  printf '  username: hacker\n  groups: ["system:masters"]\n  usages:\n'
  [ $# -gt 0 ] || set -- "client auth"
  for u in "$@"; do printf '  - %s\n' "$u"; done
}

# csr_key NAME SUBJECT [rsa]: NAME.key (P-256, or RSA 2048 as the documentation's
# walkthrough) and NAME.csr in $E2E_TMP/csr
csr_key() {
  if [ "${3:-}" = rsa ]; then openssl genrsa -out "$E2E_TMP/csr/$1.key" 2048 2>/dev/null
  else openssl ecparam -name prime256v1 -genkey -noout -out "$E2E_TMP/csr/$1.key"; fi
  openssl req -new -key "$E2E_TMP/csr/$1.key" -out "$E2E_TMP/csr/$1.csr" -subj "$2" 2>/dev/null
}

# csr_role NAME USER VERBS GROUP RESOURCES [RESOURCENAME]: a ClusterRole and its binding
csr_role() {
  local names=""
  [ -n "${6:-}" ] && names="  resourceNames: [\"$6\"]"
  printf 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: %s}\nrules:\n- apiGroups: ["%s"]\n  resources: [%s]\n  verbs: [%s]\n%s\n' \
    "$1" "$4" "$5" "$3" "$names" | kubectl --kubeconfig "$KCFG" apply -f - >/dev/null
  kubectl --kubeconfig "$KCFG" create clusterrolebinding "$1" --clusterrole="$1" --user="$2" >/dev/null
}

# csr_cond NAME: the CONDITION column
csr_cond() { kubectl --kubeconfig "$KCFG" get csr "$1" --no-headers | awk '{print $NF}'; }

csr_suite() {
  echo "== csr"
  local K="kubectl --kubeconfig $KCFG" K127="$GSDK/kubectl.1.27" d="$E2E_TMP/csr"
  [ -x "$K127" ] || K127=kubectl
  mkdir -p "$d"
  csr_key myuser "/CN=myuser/O=dev" rsa
  csr_yaml myuser "$d/myuser.csr" kubernetes.io/kube-apiserver-client 86400 >"$d/myuser.yaml"
  expect "apply a CSR" "certificatesigningrequest.certificates.k8s.io/myuser created" \
    $K apply -f "$d/myuser.yaml"
  expect "get csr: kube's columns" '^NAME +AGE +SIGNERNAME +REQUESTOR +REQUESTEDDURATION +CONDITION$' \
    bash -c "$K get csr myuser | head -1"
  expect "get csr: the requester, 24h, Pending" \
    '^myuser +[0-9]+s +kubernetes.io/kube-apiserver-client +kubicle-admin +24h +Pending$' \
    $K get csr myuser --no-headers
  expect_eq "spec.username and groups are the requester's, not the client's" \
    "kubicle-admin [\"system:masters\",\"system:authenticated\"]" \
    $K get csr myuser -o jsonpath='{.spec.username} {.spec.groups}'
  expect_eq "a pending CSR has no certificate" "" $K get csr myuser -o jsonpath='{.status.certificate}'

  # approving needs `approve` on signers, besides update on the approval subresource
  rbac_kc csr-approver
  csr_role csr-approval csr-approver "get, list, update" certificates.k8s.io \
    "certificatesigningrequests, certificatesigningrequests/approval"
  expect_fail "approving without approve on signers is forbidden" \
    'certificatesigningrequests.certificates.k8s.io "myuser" is forbidden: user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"' \
    "$K127" --kubeconfig "$E2E_TMP/csr-approver.kc" certificate approve myuser
  expect_eq "still pending" "Pending" csr_cond myuser
  $K create clusterrolebinding csr-approver --clusterrole=system:certificates.k8s.io:kube-apiserver-client-approver --user=csr-approver >/dev/null
  expect "with the kube-apiserver-client approver role, kubectl 1.27 approves" \
    "certificatesigningrequest.certificates.k8s.io/myuser approved" \
    "$K127" --kubeconfig "$E2E_TMP/csr-approver.kc" certificate approve myuser
  expect_until "the tenant's signer issues the certificate" "Approved,Issued" csr_cond myuser
  expect "the Approved condition is kubectl's, lastTransitionTime defaulted" \
    '^KubectlApprove True 20[0-9-]+T[0-9:]+Z$' \
    $K get csr myuser -o jsonpath='{.status.conditions[0].reason} {.status.conditions[0].status} {.status.conditions[0].lastTransitionTime}'
  $K get csr myuser -o jsonpath='{.status.certificate}' | base64 -d >"$d/myuser.crt"
  expect "the certificate's subject is CN=myuser, O=dev (Go's order)" "^subject=O ?= ?dev, CN ?= ?myuser$" \
    openssl x509 -in "$d/myuser.crt" -noout -subject
  expect "issued by the tenant's CA" "^issuer=CN ?= ?kubicle-ca$" openssl x509 -in "$d/myuser.crt" -noout -issuer
  expect "verifies against the tenant's CA" "OK" openssl verify -CAfile "$DATA_DIR/ca.crt" "$d/myuser.crt"
  expect "extended key usage: client authentication only" "^ +TLS Web Client Authentication$" \
    bash -c "openssl x509 -in '$d/myuser.crt' -noout -text | grep -A1 'Extended Key Usage' | tail -1"
  expect_eq "no key usage extension for 'client auth' alone (as Go's signer)" 0 \
    bash -c "openssl x509 -in '$d/myuser.crt' -noout -text | grep -c 'X509v3 Key Usage'"
  expect "not a CA" "CA:FALSE" openssl x509 -in "$d/myuser.crt" -noout -text
  local nb na now
  nb=$(date -d "$(openssl x509 -in "$d/myuser.crt" -noout -startdate | cut -d= -f2)" +%s)
  na=$(date -d "$(openssl x509 -in "$d/myuser.crt" -noout -enddate | cut -d= -f2)" +%s)
  now=$(date +%s)
  expect_eq "valid for the requested 24h (backdated 5 minutes at both ends)" 86400 echo $((na - nb))
  expect_eq "backdated 5 minutes" 1 bash -c "echo \$(( $now - $nb >= 295 && $now - $nb <= 330 ))"

  # the documented kubeconfig: the new user is authenticated, RBAC applies
  cp "$KCFG" "$d/myuser.kc"
  $K --kubeconfig "$d/myuser.kc" config set-credentials myuser --client-key="$d/myuser.key" \
    --client-certificate="$d/myuser.crt" --embed-certs=true >/dev/null
  $K --kubeconfig "$d/myuser.kc" config set-context --current --user=myuser >/dev/null
  expect "whoami: myuser in dev" "Username +myuser" kubectl --kubeconfig "$d/myuser.kc" auth whoami
  expect "whoami: groups from O" '\[dev system:authenticated\]' kubectl --kubeconfig "$d/myuser.kc" auth whoami
  expect_fail "the new user is forbidden before a binding" \
    'pods is forbidden: User "myuser" cannot list resource "pods" in API group "" in the namespace "default"' \
    kubectl --kubeconfig "$d/myuser.kc" get pods -n default
  $K create rolebinding myuser-view --clusterrole=view --group=dev -n default >/dev/null
  expect "a RoleBinding to its group lets it list pods" "No resources found|NAME" \
    kubectl --kubeconfig "$d/myuser.kc" get pods -n default
  expect_fail "... only there" "forbidden" kubectl --kubeconfig "$d/myuser.kc" get pods -n kube-system

  # updates of the main resource keep spec and status
  expect "a patch of spec and status is accepted (as kube does) ..." 'certificatesigningrequest.certificates.k8s.io/myuser (patched|unchanged)' \
    $K patch csr myuser --type=merge -p '{"spec":{"signerName":"example.com/x"},"status":{"conditions":null}}'
  expect_eq "... and the main resource cannot change spec" "kubernetes.io/kube-apiserver-client" \
    $K get csr myuser -o jsonpath='{.spec.signerName}'
  expect_eq "... nor status" "Approved,Issued" csr_cond myuser

  # deny
  csr_key denied "/CN=denied"
  csr_yaml denied "$d/denied.csr" kubernetes.io/kube-apiserver-client >"$d/denied.yaml"
  $K apply -f "$d/denied.yaml" >/dev/null
  expect "kubectl certificate deny" "denied" $K certificate deny denied
  expect_eq "Denied, no certificate" "Denied" csr_cond denied
  $K get csr denied -o json | jq '.status.conditions += [{"type":"Approved","status":"True"}]' >"$d/both.json"
  expect "approving a denied request through /approval: Invalid" \
    'status.conditions\[1\].type: Invalid value: \\"Approved\\": Approved and Denied conditions are mutually exclusive' \
    kcurl -X PUT -H 'Content-Type: application/json' --data-binary @"$d/both.json" "$SERVER_URL/apis/certificates.k8s.io/v1/certificatesigningrequests/denied/approval"

  # the signer's usage check: a Failed condition with kube's message
  csr_key server "/CN=server"
  csr_yaml server "$d/server.csr" kubernetes.io/kube-apiserver-client "" "client auth" "server auth" >"$d/server.yaml"
  $K apply -f "$d/server.yaml" >/dev/null
  $K certificate approve server >/dev/null
  expect_until "server auth is refused by the signer: Approved,Failed" "Approved,Failed" csr_cond server
  expect_eq "... with kube's reason and message" \
    "SignerValidationFailure invalid usage for client certificate: server auth" \
    bash -c "$K get csr server -o jsonpath='{.status.conditions[?(@.type==\"Failed\")].reason} {.status.conditions[?(@.type==\"Failed\")].message}'"

  # other signers: approved, left for their signer; signing needs `sign`
  csr_key other "/CN=other"
  csr_yaml other "$d/other.csr" example.com/my-signer >"$d/other.yaml"
  $K apply -f "$d/other.yaml" >/dev/null
  $K certificate approve other >/dev/null
  # a request of the tenant's signer approved after it: once that one is
  # issued, the signer's queue has provably passed `other`
  csr_key after "/CN=after"
  csr_yaml after "$d/after.csr" kubernetes.io/kube-apiserver-client >"$d/after.yaml"
  $K apply -f "$d/after.yaml" >/dev/null
  $K certificate approve after >/dev/null
  expect_until "a later request of the tenant's signer is issued" "Approved,Issued" csr_cond after
  expect_eq "another signer's request stays Approved, without certificate" "Approved" csr_cond other
  expect_eq "field selector spec.signerName" "other" \
    $K get csr --field-selector spec.signerName=example.com/my-signer -o 'jsonpath={.items[*].metadata.name}'
  csr_role csr-status csr-approver "get, update, patch" certificates.k8s.io \
    "certificatesigningrequests, certificatesigningrequests/status"
  local certb64; certb64=$(base64 -w0 "$d/myuser.crt")
  expect_fail "setting a certificate without sign on the signer is forbidden" \
    'user not permitted to sign requests with signerName "example.com/my-signer"' \
    kubectl --kubeconfig "$E2E_TMP/csr-approver.kc" patch csr other --subresource=status --type=merge -p "{\"status\":{\"certificate\":\"$certb64\"}}"
  csr_role signer-example csr-approver sign certificates.k8s.io signers 'example.com/*'
  expect "with sign on example.com/* an outside signer sets it" "patched" \
    kubectl --kubeconfig "$E2E_TMP/csr-approver.kc" patch csr other --subresource=status --type=merge -p "{\"status\":{\"certificate\":\"$certb64\"}}"
  expect_eq "Approved,Issued" "Approved,Issued" csr_cond other

  # validation: kube's causes
  printf 'not a pem\n' >"$d/bad.csr"
  csr_yaml bad "$d/bad.csr" kubernetes.io/kube-apiserver-client >"$d/bad.yaml"
  expect_fail "bad PEM: Invalid, spec.request" \
    'The CertificateSigningRequest "bad" is invalid: spec.request: Invalid value: \[\]byte\{0x6e, 0x6f, 0x74.*\}: PEM block type must be CERTIFICATE REQUEST' \
    $K apply -f "$d/bad.yaml"
  csr_yaml badsigner "$d/other.csr" foo >"$d/badsigner.yaml"
  expect_fail "bad signerName: Invalid, spec.signerName" \
    "spec.signerName: Invalid value: \"foo\": must be a fully qualified domain and path of the form 'example.com/signer-name'" \
    $K apply -f "$d/badsigner.yaml"
  csr_yaml short "$d/other.csr" example.com/x 300 >"$d/short.yaml"
  expect_fail "expirationSeconds 300: Invalid" \
    'spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 600 seconds \(10 minutes\)' \
    $K apply -f "$d/short.yaml"
  $K create -f "$d/short.yaml" --dry-run=client -o json >"$d/short.json"
  expect "the causes name their fields" '"field": ?"spec.expirationSeconds"' \
    kcurl -X POST -H 'Content-Type: application/json' --data-binary @"$d/short.json" "$SERVER_URL/apis/certificates.k8s.io/v1/certificatesigningrequests"
  csr_yaml dupe "$d/other.csr" example.com/x "" "client auth" "client auth" "flying" >"$d/dupe.yaml"
  expect_fail "usages: unknown" 'spec.usages\[2\]: Unsupported value: "flying": supported values: "any", ' \
    $K apply -f "$d/dupe.yaml"
  expect_fail "usages: duplicate" 'spec.usages\[1\]: Duplicate value: "client auth"' \
    $K apply -f "$d/dupe.yaml"

  # CertificateSubjectRestriction
  csr_key masters "/CN=evil/O=system:masters"
  csr_yaml masters "$d/masters.csr" kubernetes.io/kube-apiserver-client >"$d/masters.yaml"
  expect_fail "system:masters from kube-apiserver-client is refused" \
    'certificatesigningrequests.certificates.k8s.io "masters" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed' \
    $K apply -f "$d/masters.yaml"
  # behind sixteen other O values (the check once read only the first sixteen,
  # while the signer copies and login reads them all)
  csr_key masters17 "/CN=evil$(printf '/O=g%d' $(seq 16))/O=system:masters"
  csr_yaml masters17 "$d/masters17.csr" kubernetes.io/kube-apiserver-client >"$d/masters17.yaml"
  expect_fail "system:masters as the 17th O value is refused too" \
    'certificatesigningrequests.certificates.k8s.io "masters17" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed' \
    $K apply -f "$d/masters17.yaml"

  # discovery, explain, RBAC defaults
  expect "api-resources: certificatesigningrequests, csr, cluster-scoped" \
    '^certificatesigningrequests +csr +certificates.k8s.io/v1 +false +CertificateSigningRequest$' \
    bash -c "$K api-resources | grep -E '^certificatesigningrequests'"
  expect "explain csr.spec" "signerName" $K explain csr.spec
  expect "the approver roles of kube's bootstrap policy" \
    'system:certificates.k8s.io:kube-apiserver-client-approver' $K get clusterroles
  expect "delete" "deleted" $K delete csr myuser denied server other
}
