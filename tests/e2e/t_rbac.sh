# SPDX-License-Identifier: Apache-2.0
# RBAC, authentication and audit end to end: a matrix of users x verbs x
# resources checked with `kubectl auth can-i --as` and by issuing the
# requests with each user's own credentials; escalation refused; expired
# certificates and revoked tokens refused; the audit log. Sourced by run.sh.

# rbac_kc USER [GROUP...]: writes $E2E_TMP/USER.kc (client certificate)
rbac_kc() {
  local u=$1; shift
  local g=() x
  for x in "$@"; do g+=(--group "$x"); done
  "$KUBICLE" kubeconfig --data-dir "$DATA_DIR" --user "$u" "${g[@]}" --out "$E2E_TMP/$u.kc"
}

# rbac_cell KUBECTL USER WANT VERB RESOURCE NS: can-i --as and the real request agree
rbac_cell() {
  local kc=$1 u=$2 want=$3 verb=$4 res=$5 ns=$6
  local got
  local as=(--as "$u")
  [ "$u" = root ] && as+=(--as-group system:masters)
  got=$($kc --kubeconfig "$KCFG" auth can-i "$verb" "$res" -n "$ns" "${as[@]}" 2>/dev/null)
  [ "$got" = "$want" ] && pass "can-i $u $verb $res -n $ns = $want" \
    || fail "can-i $u $verb $res -n $ns: wanted $want, got '$got'"
  local out rc
  case $verb in
    list) out=$($kc --kubeconfig "$E2E_TMP/$u.kc" get "$res" -n "$ns" 2>&1); rc=$? ;;
    create) out=$($kc --kubeconfig "$E2E_TMP/$u.kc" create configmap "m-$RANDOM" -n "$ns" 2>&1); rc=$? ;;
    delete) out=$($kc --kubeconfig "$E2E_TMP/$u.kc" delete "$res" --all -n "$ns" 2>&1); rc=$? ;;
  esac
  if [ "$want" = yes ] && [ $rc -eq 0 ]; then pass "$u $verb $res -n $ns allowed"
  elif [ "$want" = no ] && grep -q "is forbidden: User \"$u\" cannot $verb resource \"$res\"" <<<"$out"; then
    pass "$u $verb $res -n $ns forbidden"
  else fail "$u $verb $res -n $ns (want $want, rc=$rc): $(head -c 300 <<<"$out")"; fi
}

# Impersonation as kube's filter does it (impersonation.go): a name that only
# looks like a service account's is a user; groups given replace the
# account's own; uid and extras need their own rights; the audit event keeps
# the real caller as its user.
rbac_impersonation() {
  local kc=$1 K=$2 base
  rbac_kc imp
  $K create role imp-sa --verb=impersonate --resource=serviceaccounts -n team-a >/dev/null
  $K create rolebinding imp-sa --role=imp-sa --user=imp -n team-a >/dev/null
  expect "may impersonate a service account of team-a" '"username": "system:serviceaccount:team-a:anyone"' \
    $kc --kubeconfig "$E2E_TMP/imp.kc" auth whoami --as system:serviceaccount:team-a:anyone -o json
  expect_fail "a name that only looks like a service account's is a user" \
    'users "system:serviceaccount:team-a:default:x" is forbidden: User "imp" cannot impersonate resource "users" in API group "" at the cluster scope' \
    $kc --kubeconfig "$E2E_TMP/imp.kc" get cm -n team-a --as system:serviceaccount:team-a:default:x
  expect_fail "an invalid namespace makes it a user too" 'users "system:serviceaccount:Team-A:robot" is forbidden' \
    $kc --kubeconfig "$E2E_TMP/imp.kc" get cm -n team-a --as system:serviceaccount:Team-A:robot
  expect_fail "groups need their own right" 'groups "system:masters" is forbidden: User "imp" cannot impersonate resource "groups"' \
    $kc --kubeconfig "$E2E_TMP/imp.kc" get cm -n team-a --as system:serviceaccount:team-a:anyone --as-group system:masters
  expect_fail "a uid needs its own right" 'uids.authentication.k8s.io "u-1" is forbidden: User "imp" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope' \
    $kc --kubeconfig "$E2E_TMP/imp.kc" get cm -n team-a --as system:serviceaccount:team-a:anyone --as-uid u-1
  local out
  out=$($K auth whoami --as system:serviceaccount:team-a:robot --as-group devs -o json 2>&1)
  if grep -q '"devs"' <<<"$out" && grep -q '"system:authenticated"' <<<"$out" && ! grep -q 'system:serviceaccounts' <<<"$out"; then
    pass "groups given replace a service account's own groups"
  else fail "groups given with a service account: $out"; fi
  expect "a uid is taken" '"uid": "u-42"' $K auth whoami --as carol --as-uid u-42 -o json
  base="$SERVER_URL/apis/authentication.k8s.io/v1/selfsubjectreviews"
  local ssr='{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'
  expect "extras are taken, keys unescaped" '"extra":\{"example.com/scopes":\["a","b"\]\}' \
    kcurl -X POST -H 'Content-Type: application/json' -H 'Impersonate-User: carol' \
      -H 'Impersonate-Extra-example.com%2fscopes: a' -H 'Impersonate-Extra-example.com%2fscopes: b' \
      -d "$ssr" "$base"
  expect "groups without a user: 400" 'requested \[\{Group  devs    \}\] without impersonating a user' \
    kcurl -X POST -H 'Content-Type: application/json' -H 'Impersonate-Group: devs' -d "$ssr" "$base"
  expect_until_match "audit: the real caller is the user, the identity taken impersonatedUser" 10 \
    '"user":\{"username":"imp".*"impersonatedUser":\{"username":"system:serviceaccount:team-a:anyone"' \
    grep '"impersonatedUser"' "$DATA_DIR/audit.log"
}

# The payload of a JWT (base64url, unpadded), as JSON.
rbac_jwt() {
  python3 -c 'import sys,json,base64
p=sys.argv[1].split(".")[1]; p+="="*(-len(p)%4)
print(json.dumps(json.loads(base64.urlsafe_b64decode(p)), sort_keys=True))' "$1"
}

# rbac_tokenkc NAME TOKEN: a kubeconfig using TOKEN.
rbac_tokenkc() {
  "$KUBICLE" kubeconfig --data-dir "$DATA_DIR" --user "$1-tmp" --out "$E2E_TMP/$1.kc"
  sed -i '/client-certificate-data\|client-key-data/d' "$E2E_TMP/$1.kc"
  printf '    token: %s\n' "$2" >>"$E2E_TMP/$1.kc"
}

# TokenRequest's bound objects (issue 29 item 8), as kube's TokenREST.Create
# and its token validator answer: the object must exist (404), run as the
# account (a pod), have the reference's uid (409); the token names it in its
# claims and stops working (401) once it is gone or replaced.
rbac_bound_tokens() {
  local kc=$1 K=$2 tok uid
  echo "== rbac: TokenRequest bound objects ($kc)"
  $K -n team-a run bound --image=busybox --restart=Never \
    --overrides='{"apiVersion":"v1","spec":{"serviceAccountName":"robot"}}' >/dev/null
  $K -n team-a run other --image=busybox --restart=Never >/dev/null
  expect_fail "a token bound to a pod that does not exist is refused (404)" \
    'pods "nope" not found' \
    $K -n team-a create token robot --bound-object-kind Pod --bound-object-name nope
  expect_fail "a token bound to a pod of another service account is refused" \
    'cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.' \
    $K -n team-a create token robot --bound-object-kind Pod --bound-object-name other
  expect_fail "a token bound to a pod of another uid is refused (409)" \
    'Operation cannot be fulfilled on Pod "bound": the UID in the bound object reference \(0000\) does not match the UID in record. The object might have been deleted and then recreated' \
    $K -n team-a create token robot --bound-object-kind Pod --bound-object-name bound --bound-object-uid 0000
  expect_fail "a token bound to a node that does not exist is refused (404)" \
    'nodes "no-such-node" not found' \
    $K -n team-a create token robot --bound-object-kind Node --bound-object-name no-such-node
  expect_fail "a token bound to a ConfigMap is refused, in kube's words" \
    'cannot bind token to object of type /v1, Kind=ConfigMap' \
    $K create --raw /api/v1/namespaces/team-a/serviceaccounts/robot/token \
    -f <(printf '{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"apiVersion":"v1","kind":"ConfigMap","name":"kube-root-ca.crt"}}}')
  uid=$($K -n team-a get pod bound -o jsonpath='{.metadata.uid}')
  tok=$($K -n team-a create token robot --bound-object-kind Pod --bound-object-name bound --bound-object-uid "$uid")
  expect_eq "the token names the pod in its claims (kubernetes.io.pod)" "bound $uid" \
    sh -c "echo '$(rbac_jwt "$tok")' | jq -r '.\"kubernetes.io\".pod | \"\\(.name) \\(.uid)\"'"
  rbac_tokenkc bound "$tok"
  expect "the pod-bound token authenticates while the pod lives" "system:serviceaccount:team-a:robot" \
    $kc --kubeconfig "$E2E_TMP/bound.kc" auth whoami
  $K -n team-a delete pod bound --grace-period=0 --force >/dev/null 2>&1
  expect_until_match "the token is rejected (401) once its pod is gone" 30 \
    'Unauthorized|must be logged in' sh -c "$kc --kubeconfig $E2E_TMP/bound.kc auth whoami 2>&1; true"
  $K -n team-a run bound --image=busybox --restart=Never \
    --overrides='{"apiVersion":"v1","spec":{"serviceAccountName":"robot"}}' >/dev/null
  expect_fail "... and stays rejected for a new pod of the same name (another uid)" \
    'Unauthorized|must be logged in' $kc --kubeconfig "$E2E_TMP/bound.kc" auth whoami
  $K -n team-a create secret generic bound --from-literal=a=b >/dev/null
  tok=$($K -n team-a create token robot --bound-object-kind Secret --bound-object-name bound)
  expect_eq "a Secret-bound token names the Secret" "bound" \
    sh -c "echo '$(rbac_jwt "$tok")' | jq -r '.\"kubernetes.io\".secret.name'"
  rbac_tokenkc bsec "$tok"
  expect "the Secret-bound token authenticates" "system:serviceaccount:team-a:robot" \
    $kc --kubeconfig "$E2E_TMP/bsec.kc" auth whoami
  $K -n team-a delete secret bound >/dev/null
  expect_fail "... and is rejected once the Secret is deleted" \
    'Unauthorized|must be logged in' $kc --kubeconfig "$E2E_TMP/bsec.kc" auth whoami
  $K -n team-a delete pod bound other --grace-period=0 --force >/dev/null 2>&1
}

rbac_suite() {
  local kc=${1:-kubectl} K="${1:-kubectl} --kubeconfig $KCFG"
  echo "== rbac ($kc)"
  $K create ns team-a >/dev/null 2>&1; $K create ns team-b >/dev/null 2>&1
  rbac_kc root system:masters; rbac_kc nsadmin; rbac_kc viewer; rbac_kc nobody
  $K create rolebinding nsadmin --clusterrole=admin --user=nsadmin -n team-a >/dev/null
  $K create clusterrolebinding viewer --clusterrole=view --user=viewer >/dev/null
  $K create sa robot -n team-a >/dev/null
  $K create rolebinding robot --clusterrole=edit --serviceaccount=team-a:robot -n team-a >/dev/null
  local tok; tok=$($K create token robot -n team-a --duration 1h)
  "$KUBICLE" kubeconfig --data-dir "$DATA_DIR" --user robot-tmp --out "$E2E_TMP/sa.kc"
  sed -i '/client-certificate-data\|client-key-data/d' "$E2E_TMP/sa.kc"
  printf '    token: %s\n' "$tok" >>"$E2E_TMP/sa.kc"
  expect "service account token: whoami" "system:serviceaccount:team-a:robot" \
    $kc --kubeconfig "$E2E_TMP/sa.kc" auth whoami
  local u
  for u in root nsadmin viewer nobody; do :; done
  rbac_cell "$kc" root yes list pods team-b
  rbac_cell "$kc" root yes create configmaps team-b
  rbac_cell "$kc" nsadmin yes list secrets team-a
  rbac_cell "$kc" nsadmin yes create configmaps team-a
  rbac_cell "$kc" nsadmin no list pods team-b
  rbac_cell "$kc" nsadmin no create configmaps team-b
  rbac_cell "$kc" viewer yes list pods team-b
  rbac_cell "$kc" viewer no list secrets team-b
  rbac_cell "$kc" viewer no create configmaps team-a
  rbac_cell "$kc" viewer no delete configmaps team-a
  rbac_cell "$kc" nobody no list pods default
  rbac_cell "$kc" nobody no create configmaps default
  expect_eq "can-i sa create deployments" yes $K auth can-i create deployments -n team-a --as system:serviceaccount:team-a:robot
  expect_eq "can-i sa list secrets in team-b" no $K auth can-i list secrets -n team-b --as system:serviceaccount:team-a:robot
  expect "sa lists configmaps with its token" "kube-root-ca.crt" $kc --kubeconfig "$E2E_TMP/sa.kc" get cm -n team-a
  expect_fail "sa cannot list nodes" 'nodes is forbidden: User "system:serviceaccount:team-a:robot" cannot list resource "nodes" in API group "" at the cluster scope' \
    $kc --kubeconfig "$E2E_TMP/sa.kc" get nodes
  expect "can-i --list as nsadmin" "configmaps" $K auth can-i --list -n team-a --as nsadmin
  expect "whoami with --as-group" "devs" $K auth whoami --as carol --as-group devs
  # escalation
  expect_fail "nsadmin cannot bind cluster-admin" "forbidden" \
    $kc --kubeconfig "$E2E_TMP/nsadmin.kc" create rolebinding esc --clusterrole=cluster-admin --user=nsadmin -n team-a
  expect_fail "nsadmin cannot create a role with nodes" "attempting to grant RBAC permissions not currently held" \
    $kc --kubeconfig "$E2E_TMP/nsadmin.kc" create role esc --verb=get --resource=nodes -n team-a
  expect "nsadmin may create a role within its rights" "created" \
    $kc --kubeconfig "$E2E_TMP/nsadmin.kc" create role ok --verb=get --resource=pods -n team-a
  # a binding to a role that does not exist yet (kube: policybased/storage.go
  # Create, GetRoleReferenceRules): NotFound without `bind`, allowed with it
  expect_fail "nsadmin cannot bind a Role that does not exist" \
    'failed to create rolebinding: roles.rbac.authorization.k8s.io "later" not found' \
    $kc --kubeconfig "$E2E_TMP/nsadmin.kc" create rolebinding later --role=later --user=nsadmin -n team-a
  expect_fail "... nor a ClusterRole that does not exist" \
    'failed to create rolebinding: clusterroles.rbac.authorization.k8s.io "later-c" not found' \
    $kc --kubeconfig "$E2E_TMP/nsadmin.kc" create rolebinding later --clusterrole=later-c --user=nsadmin -n team-a
  expect_eq "... and no binding was written" "" \
    $K get rolebinding later -n team-a --ignore-not-found -o name
  expect "cluster-admin may bind a role that does not exist yet" "created" \
    $K create rolebinding later --role=later --user=nsadmin -n team-a
  # an update of a binding the caller could not create: only what the
  # garbage collector writes passes (kube: IsOnlyMutatingGCFields)
  $K create rolebinding held --clusterrole=cluster-admin --user=someone -n team-a >/dev/null
  expect "nsadmin may add a finalizer to a binding it could not create" "patched" \
    $kc --kubeconfig "$E2E_TMP/nsadmin.kc" patch rolebinding held -n team-a --type=merge \
    -p '{"metadata":{"finalizers":["example.com/keep"]}}'
  expect_fail "... but not a label" "forbidden" \
    $kc --kubeconfig "$E2E_TMP/nsadmin.kc" patch rolebinding held -n team-a --type=merge \
    -p '{"metadata":{"labels":{"x":"y"}}}'
  $K patch rolebinding held -n team-a --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  $K delete rolebinding held later -n team-a >/dev/null
  expect_fail "viewer cannot impersonate" 'cannot impersonate resource "users"' \
    $kc --kubeconfig "$E2E_TMP/viewer.kc" get pods --as root
  rbac_impersonation "$kc" "$K"
  # aggregation: a new role labelled aggregate-to-view extends view at once
  $K create clusterrole widgets --verb=get,list --resource=configmaps >/dev/null
  $K label clusterrole widgets rbac.authorization.k8s.io/aggregate-to-view=true >/dev/null
  expect "aggregated into view" "aggregate-to-view" $K get clusterrole widgets -o yaml
  rbac_bound_tokens "$kc" "$K"
  # deleting the service account invalidates its token
  $K delete sa robot -n team-a >/dev/null
  expect_fail "token of a deleted service account" "Unauthorized|must be logged in" \
    $kc --kubeconfig "$E2E_TMP/sa.kc" get cm -n team-a
  # bearer tokens: created, used, revoked
  local t; t=$("$KUBICLE" token create --data-dir "$DATA_DIR" --user tok-user --group system:masters)
  "$KUBICLE" kubeconfig --data-dir "$DATA_DIR" --user x --out "$E2E_TMP/tok.kc"
  sed -i '/client-certificate-data\|client-key-data/d' "$E2E_TMP/tok.kc"
  printf '    token: %s\n' "$t" >>"$E2E_TMP/tok.kc"
  expect "bearer token works" "tok-user" $kc --kubeconfig "$E2E_TMP/tok.kc" auth whoami
  "$KUBICLE" token revoke --data-dir "$DATA_DIR" "$t" >/dev/null
  expect_fail "revoked token refused" "Unauthorized|must be logged in" $kc --kubeconfig "$E2E_TMP/tok.kc" get ns
  # expired certificate
  "$KUBICLE" kubeconfig --data-dir "$DATA_DIR" --user shortlived --group system:masters --ttl 1s --out "$E2E_TMP/short.kc"
  sleep 2
  expect_fail "expired certificate refused" "Unauthorized|must be logged in" $kc --kubeconfig "$E2E_TMP/short.kc" get ns
  expect "no credential: 401" '"code":401' curl -sS --cacert "$DATA_DIR/ca.crt" "$SERVER_URL/api/v1/namespaces"
  # watch by an unauthorized user
  expect_fail "watch refused" "is forbidden" timeout 5 $kc --kubeconfig "$E2E_TMP/nobody.kc" get pods -w -n default
  expect_fail "raw watch refused" "Forbidden|forbidden" timeout 5 $kc --kubeconfig "$E2E_TMP/nobody.kc" get --raw "/api/v1/namespaces/default/pods?watch=true"
  expect_until_match "audit log has the forbidden watch" 10 '"user":\{"username":"nobody".*"code":403' grep '"verb":"watch"' "$DATA_DIR/audit.log"
  expect "audit log has the role creation" '"verb":"create".*"objectRef":\{"resource":"roles","namespace":"team-a"' \
    grep '"username":"nsadmin"' "$DATA_DIR/audit.log"
  expect "audit event: the binding that allowed it (kube's reason)" \
    '"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by RoleBinding \\"nsadmin/team-a\\" of ClusterRole \\"admin\\" to User \\"nsadmin\\""' \
    grep '"username":"nsadmin".*"resource":"roles"' "$DATA_DIR/audit.log"
  expect "audit event: a service account's binding" \
    'RBAC: allowed by RoleBinding \\"robot/team-a\\" of ClusterRole \\"edit\\" to ServiceAccount \\"robot/team-a\\"' \
    grep '"username":"system:serviceaccount:team-a:robot"' "$DATA_DIR/audit.log"
  expect "audit event: a forbidden request" '"authorization.k8s.io/decision":"forbid","authorization.k8s.io/reason":""' \
    grep '"username":"nobody"' "$DATA_DIR/audit.log"
  local sar='{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"viewer","resourceAttributes":{"verb":"list","resource":"pods","namespace":"team-a"}}}'
  expect "access review: kube's reason" \
    '"reason": "RBAC: allowed by ClusterRoleBinding \\"viewer\\" of ClusterRole \\"view\\" to User \\"viewer\\""' \
    $K create -f <(printf '%s' "$sar") -o json
  $K delete ns team-a team-b --wait=false >/dev/null 2>&1
  $K delete clusterrolebinding viewer >/dev/null 2>&1
  $K delete clusterrole widgets >/dev/null 2>&1
}

# rbac_old_kubectl KUBECTL: the review APIs from an older kubectl (JSON bodies)
rbac_old_kubectl() {
  local kc=$1
  expect "whoami ($kc)" "kubicle-admin" $kc --kubeconfig "$KCFG" auth whoami
  expect_eq "can-i ($kc)" yes $kc --kubeconfig "$KCFG" auth can-i create pods
  expect_eq "can-i --as ($kc)" no $kc --kubeconfig "$KCFG" auth can-i create pods --as nobody
  expect "can-i --list ($kc)" "selfsubjectreviews" $kc --kubeconfig "$KCFG" auth can-i --list --as nobody
  expect_eq "can-i subresource ($kc)" no $kc --kubeconfig "$KCFG" auth can-i get pods --subresource=log --as nobody
}
