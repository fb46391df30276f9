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

# start_again_unchanged NAME PORT WHAT: stops the server, starts it again on
# the same port and checks that the start wrote nothing (the revision).
start_again_unchanged() {
  local rv
  rv=$(start_list_rv)
  stop_server TERM
  E2E_PORT=$2 start_server "$1" || { fail "start after $3"; return 1; }
  expect_eq "the start after $3 writes nothing (same revision)" "$rv" start_list_rv
}

# start_first_order: a first start traced (KUBICLE_TRACE_START) and, with
# strace there, its syncs (the PKI in a folder of its own, so that every
# sync of the data dir is the store's): prints the trace's steps in order,
# then "synced" when the data dir was synced after kubicle.db was linked
# into it and before the server listened (the store's first commit, before
# any client can be told of the server), else what strace saw.
start_first_order() {
  local dir=$E2E_TMP/start-order st=$E2E_TMP/start-order.strace pid kid _
  rm -rf "$dir" "$dir-pki" "$st"
  local cmd=("$KUBICLE" serve --data-dir "$dir" --pki-dir "$dir-pki" --listen 127.0.0.1:0)
  if command -v strace >/dev/null; then
    KUBICLE_TRACE_START=1 strace -f -y -o "$st" -e trace=link,fsync,fdatasync,listen \
      "${cmd[@]}" >"$dir.log" 2>&1 &
  else
    KUBICLE_TRACE_START=1 "${cmd[@]}" >"$dir.log" 2>&1 &
  fi
  pid=$!
  for _ in $(seq 600); do
    [ -s "$dir/kubeconfig" ] && break
    sleep 0.05
  done
  kid=$(pgrep -P "$pid" || echo "$pid")
  kill -TERM "$kid" 2>/dev/null
  wait "$pid" 2>/dev/null
  sed -n 's/^start-trace .* ms cpu .* ms //p' "$dir.log" | tr '\n' ' '
  [ -s "$st" ] || { echo "synced"; return; }
  python3 - "$st" "$dir" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
d = sys.argv[2]
link = next((i for i, l in enumerate(lines)
             if " link(" in l and l.count('"') >= 4 and l.split('"')[3] == d + "/kubicle.db"), None)
lis = next((i for i, l in enumerate(lines) if " listen(" in l), None)
syn = [i for i, l in enumerate(lines) if re.search(r"f(data)?sync\(\d+<" + re.escape(d) + r">", l)]
ok = link is not None and lis is not None and any(link < i < lis for i in syn)
print("synced" if ok else "link %s syncs %s listen %s" % (link, syn, lis))
PY
}

start_suite() {
  expect_eq "a first start: the controllers before listening, the store's folder synced before it" \
    "serve store open ca wait ca controllers tls wait tls listening kubeconfig loop synced" \
    start_first_order
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
  start_again_unchanged start "$port" "the repair" || return
  expect_eq "clusterrole admin is aggregated again" "yes" start_admin_aggregated
  stop_server TERM
  SERVER_PID=$saved_pid KCFG=$saved_kcfg SERVER_URL=$saved_url DATA_DIR=$saved_dir
}

# A field of a stored object: start_field PATH EXPR (python over `o`).
start_field() {
  kcurl "$SERVER_URL/apis/rbac.authorization.k8s.io/v1/$1" |
    python3 -c "import json,sys; o=json.load(sys.stdin); print($2)"
}

# The RBAC defaults are reconciled at every start as kube-apiserver's
# rbac/bootstrap-roles hook does (pkg/registry/rbac/rest/storage_rbac.go,
# component-helpers/auth/rbac/reconciliation): what a default lacks is put
# back, what it has beyond stays, autoupdate=false protects it, a binding
# with another roleRef is made again.
start_reconcile_suite() {
  local saved_pid=$SERVER_PID saved_kcfg=$KCFG saved_url=$SERVER_URL saved_dir=$DATA_DIR
  start_server reconcile || { fail "first start"; return; }
  local port=${SERVER_URL##*:} K="kubectl --kubeconfig $KCFG"
  local uid0
  uid0=$(start_field clusterrolebindings/system:monitoring 'o["metadata"]["uid"]')
  # a rule gone from an aggregated-to role, one added to it
  $K get clusterrole system:aggregate-to-view -o json | python3 -c '
import json, sys
o = json.load(sys.stdin)
o["rules"] = [r for r in o["rules"] if "pods" not in r.get("resources", [])]
o["rules"].append({"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]})
print(json.dumps(o))' | $K replace -f - >/dev/null
  expect_eq "a rule was taken from system:aggregate-to-view" "False" \
    start_field clusterroles/system:aggregate-to-view \
    '"pods" in sum((r.get("resources", []) for r in o["rules"]), [])'
  # a protected default stays as the user left it
  $K annotate --overwrite clusterrole system:discovery rbac.authorization.kubernetes.io/autoupdate=false >/dev/null
  $K patch clusterrole system:discovery --type=json -p '[{"op":"replace","path":"/rules","value":[]}]' >/dev/null
  $K label clusterrole system:basic-user kubernetes.io/bootstrapping- >/dev/null
  $K annotate clusterrole system:basic-user example.com/note=kept >/dev/null
  $K patch clusterrolebinding system:public-info-viewer --type=json \
    -p '[{"op":"replace","path":"/subjects","value":[{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"system:authenticated"}]}]' >/dev/null
  $K delete clusterrolebinding system:monitoring >/dev/null
  $K create clusterrolebinding system:monitoring --clusterrole=view --group=system:monitoring >/dev/null
  stop_server TERM
  E2E_PORT=$port start_server reconcile || { fail "start after editing defaults"; return; }
  expect_eq "a default's missing rules are put back at the next start" "True True" \
    start_field clusterroles/system:aggregate-to-view \
    '" ".join(str(x) for x in ("pods" in sum((r.get("resources", []) for r in o["rules"]), []), "widgets" in sum((r.get("resources", []) for r in o["rules"]), [])))'
  expect_eq "the aggregated view holds them again" "True" \
    start_field clusterroles/view \
    'any("pods" in r.get("resources", []) and "list" in r.get("verbs", []) for r in o["rules"])'
  expect_eq "a default with autoupdate=false is left as it is" "[]" \
    start_field clusterroles/system:discovery 'json.dumps(o.get("rules"))'
  expect_eq "a default's missing label is put back, the user's annotation kept" "rbac-defaults kept" \
    start_field clusterroles/system:basic-user \
    'o["metadata"]["labels"]["kubernetes.io/bootstrapping"] + " " + o["metadata"]["annotations"]["example.com/note"]'
  expect_eq "a binding's missing subject is appended" "system:authenticated,system:unauthenticated" \
    start_field clusterrolebindings/system:public-info-viewer '",".join(s["name"] for s in o["subjects"])'
  expect_eq "a binding to another role is made again, with the default's roleRef" "system:monitoring new" \
    start_field clusterrolebindings/system:monitoring \
    "o['roleRef']['name'] + (' new' if o['metadata']['uid'] != '$uid0' else ' same')"
  start_again_unchanged reconcile "$port" "a reconcile" || return
  expect_eq "clusterrole admin is aggregated" "yes" start_admin_aggregated
  stop_server TERM
  SERVER_PID=$saved_pid KCFG=$saved_kcfg SERVER_URL=$saved_url DATA_DIR=$saved_dir
}
