# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Start-up (issue 27 item 3): what a client sees when /readyz first answers,
# and a start on existing data that writes nothing.

# The revision a list of clusterroles reports (the store's current one).
start_list_rv() {
  kcurl "$SERVER_URL/apis/rbac.authorization.k8s.io/v1/clusterroles" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])'
}

# "yes" when clusterrole admin holds edit's and view's rules (admin
# aggregates edit, which aggregates view), else what it holds.
start_admin_aggregated() {
  kcurl "$SERVER_URL/apis/rbac.authorization.k8s.io/v1/clusterroles/admin" | python3 -c '
import json, sys
rules = json.load(sys.stdin).get("rules") or []
def has(res, verb):
    return any(res in r.get("resources", []) and verb in r.get("verbs", []) for r in rules)
ok = has("pods/exec", "create") and has("configmaps", "watch") and has("rolebindings", "create")
print("yes" if ok else json.dumps(rules)[:300])'
}

start_suite() {
  local saved_pid=$SERVER_PID saved_kcfg=$KCFG saved_url=$SERVER_URL saved_dir=$DATA_DIR
  start_server start || { fail "first start"; return; }
  expect_eq "readyz answers on the first start" "ok" kcurl "$SERVER_URL/readyz"
  # asked as system:masters, which aggregates nothing on its own
  expect_eq "clusterrole admin holds edit's and view's rules once the server answers" "yes" \
    start_admin_aggregated
  local rv1 ca1 srv1
  rv1=$(start_list_rv)
  ca1=$(sha256sum <"$DATA_DIR/ca.crt" | cut -c1-64)
  srv1=$(sha256sum <"$DATA_DIR/server.crt" | cut -c1-64)
  # on the same port: the kubernetes Endpoints name the port, and a new one
  # is a write
  local port=${SERVER_URL##*:}
  stop_server TERM
  E2E_PORT=$port start_server start || { fail "start on existing data"; return; }
  expect_eq "a start on existing data writes nothing (same revision)" "$rv1" start_list_rv
  expect_eq "a start on existing data keeps the CA and serving certificate" "$ca1 $srv1" \
    bash -c "echo \$(sha256sum <'$DATA_DIR/ca.crt' | cut -c1-64) \$(sha256sum <'$DATA_DIR/server.crt' | cut -c1-64)"
  expect_eq "the admin credential still authenticates" "ok" kcurl "$SERVER_URL/readyz"
  expect_eq "clusterrole admin is still aggregated" "yes" start_admin_aggregated
  # what a start reconciles is made again at the next start when deleted, as
  # kube-apiserver's RBAC bootstrap (pkg/registry/rbac/rest/storage_rbac.go)
  # and its autoregister controller do: a start that finds everything in
  # place builds and compares less, not a start that finds a default gone
  local p
  for p in apis/rbac.authorization.k8s.io/v1/clusterroles/view \
    apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:discovery \
    apis/apiregistration.k8s.io/v1/apiservices/v1.apps; do
    kcurl -o /dev/null -X DELETE "$SERVER_URL/$p"
  done
  kcurl -o /dev/null -X PATCH -H 'Content-Type: application/merge-patch+json' \
    -d '{"spec":{"versionPriority":99}}' \
    "$SERVER_URL/apis/apiregistration.k8s.io/v1/apiservices/v1.batch"
  stop_server TERM
  E2E_PORT=$port start_server start || { fail "start after deleting defaults"; return; }
  for p in apis/rbac.authorization.k8s.io/v1/clusterroles/view \
    apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:discovery \
    apis/apiregistration.k8s.io/v1/apiservices/v1.apps; do
    expect_eq "a deleted ${p%/*} ${p##*/} is back after a restart" "200" \
      kcurl -o /dev/null -w '%{http_code}' "$SERVER_URL/$p"
  done
  expect_eq "an edited local APIService has its spec put back after a restart" "15" \
    bash -c "kcurl_vp() { curl -sS --cacert '$DATA_DIR/ca.crt' --cert '$DATA_DIR/admin.crt' \
      --key '$DATA_DIR/admin.key' '$SERVER_URL/apis/apiregistration.k8s.io/v1/apiservices/v1.batch'; }; \
      kcurl_vp | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"spec\"][\"versionPriority\"])'"
  local rv2
  rv2=$(start_list_rv)
  stop_server TERM
  E2E_PORT=$port start_server start || { fail "start after the repair"; return; }
  expect_eq "the start after the repair writes nothing (same revision)" "$rv2" start_list_rv
  expect_eq "clusterrole admin is aggregated again" "yes" start_admin_aggregated
  stop_server TERM
  SERVER_PID=$saved_pid KCFG=$saved_kcfg SERVER_URL=$saved_url DATA_DIR=$saved_dir
}
