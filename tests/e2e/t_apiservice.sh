# SPDX-License-Identifier: Apache-2.0
# The aggregation layer end to end (apiregistration.k8s.io/v1 APIService):
# the local APIServices kube's autoregister and crdregistration controllers
# keep, kube-aggregator's validation and columns; then an APIService backed
# by a tenant Service whose cluster IP is a Python HTTPS server on
# 127.0.0.1 (apiservice_server.py) serving a tiny aggregated API: discovery,
# proxying with the front-proxy identity headers, RBAC in the tenant first,
# availability and its loss. Sourced by run.sh.

apiservice_suite() {
  echo "== apiservice: the aggregation layer"
  start_server apisvc || { fail "apiservice: server did not start"; return; }
  local K=(kubectl --kubeconfig "$KCFG") d=$E2E_TMP/apisvc-backend i out
  local old=$GSDK/kubectl.1.30

  echo "-- local APIServices"
  expect "get apiservices: the built-in group/versions are Local and available" \
    'v1\.apps +Local +True ' "${K[@]}" get apiservices
  expect "... the core group's v1. and autoscaling's v2" \
    '^v1\. +Local +True ' "${K[@]}" get apiservices v1. v2.autoscaling
  expect_eq "... one per served group/version (kube's priority table)" "21" \
    bash -c "kubectl --kubeconfig $KCFG get apiservices -o name | wc -l"
  expect_eq "v1.apps as kube's autoregister makes it" \
    "onstart apps v1 17800 15 None Available=True Local: Local APIServices are always available" \
    "${K[@]}" get apiservice v1.apps -o go-template='{{index .metadata.labels "kube-aggregator.kubernetes.io/automanaged"}} {{.spec.group}} {{.spec.version}} {{.spec.groupPriorityMinimum}} {{.spec.versionPriority}} {{or .spec.service "None"}} {{range .status.conditions}}{{.type}}={{.status}} {{.reason}}: {{.message}}{{end}}'
  expect_eq "v1. has no group and priority 18000/1" "<no value> 18000 1" \
    "${K[@]}" get apiservice v1. -o go-template='{{.spec.group}} {{.spec.groupPriorityMinimum}} {{.spec.versionPriority}}'
  expect "api-resources lists apiservices (api-extensions category)" \
    'apiservices +apiregistration\.k8s\.io/v1 +false +APIService' "${K[@]}" api-resources
  expect "kubectl 1.30 reads them too" 'v1\.batch +Local +True' "$old" --kubeconfig "$KCFG" get apiservices
  expect "explain apiservice.spec (OpenAPI from the type tables)" \
    'groupPriorityMinimum' "${K[@]}" explain apiservice.spec

  echo "-- CRD group/versions (crdregistration)"
  "${K[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.agg.example.com}
spec:
  group: agg.example.com
  names: {kind: Gizmo, plural: gizmos}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1beta1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
EOF
  expect_until "a CRD's served versions get Local APIServices" "v1.agg.example.com v1beta1.agg.example.com" \
    bash -c "kubectl --kubeconfig $KCFG get apiservices -o name | grep agg.example | sed 's#.*/##' | tr '\n' ' ' | sed 's/ \$//'"
  expect_eq "... labelled automanaged=true, priorities 1000/100" "true 1000 100" \
    "${K[@]}" get apiservice v1.agg.example.com -o go-template='{{index .metadata.labels "kube-aggregator.kubernetes.io/automanaged"}} {{.spec.groupPriorityMinimum}} {{.spec.versionPriority}}'
  "${K[@]}" delete apiservice v1beta1.agg.example.com >/dev/null 2>&1
  expect_until "... and put back when deleted while the CRD serves it" "v1beta1.agg.example.com" \
    "${K[@]}" get apiservice v1beta1.agg.example.com -o name --ignore-not-found -o 'jsonpath={.metadata.name}'
  "${K[@]}" delete crd gizmos.agg.example.com >/dev/null
  expect_until "... and gone with the CRD" "" \
    bash -c "kubectl --kubeconfig $KCFG get apiservices -o name | grep agg.example"

  echo "-- validation"
  apisvc_yaml() { # NAME SPEC (flow YAML)
    printf 'apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: %s}\nspec: %s\n' "$1" "$2"
  }
  expect_fail "a name other than <version>.<group>: kube's cause" \
    'metadata.name: Invalid value: "v1.bad": must be `spec.version\+"\."\+spec.group`: "v1alpha1.wardle"' \
    "${K[@]}" apply -f <(apisvc_yaml v1.bad '{group: wardle, version: v1alpha1, groupPriorityMinimum: 10, versionPriority: 10}')
  expect_fail "... priorities out of range" \
    'spec.versionPriority: Invalid value: 1001: must be positive and less than 1000' \
    "${K[@]}" apply -f <(apisvc_yaml v1alpha1.wardle '{group: wardle, version: v1alpha1, groupPriorityMinimum: 0, versionPriority: 1001}')
  expect_fail "a local APIService with insecureSkipTLSVerify" \
    'spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify' \
    "${K[@]}" apply -f <(apisvc_yaml v1.local.example.com '{group: local.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true}')
  expect_fail "a service without namespace" 'spec.service.namespace: Required value' \
    "${K[@]}" apply -f <(apisvc_yaml v1.svc.example.com '{group: svc.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true, caBundle: aGVsbG8=, service: {name: x}}')
  expect_fail "... insecureSkipTLSVerify with a caBundle" \
    'spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present' \
    "${K[@]}" apply -f <(apisvc_yaml v1.svc.example.com '{group: svc.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 10, insecureSkipTLSVerify: true, caBundle: aGVsbG8=, service: {name: x}}')
  expect "a PUT without resourceVersion: Invalid (AllowUnconditionalUpdate false)" \
    'is invalid: metadata\.resourceVersion: Invalid value: 0x0: must be specified for an update".*"code":422' \
    kcurl -X PUT -H 'Content-Type: application/json' "$SERVER_URL/apis/apiregistration.k8s.io/v1/apiservices/v1.apps" \
    -d '{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.apps"},"spec":{"group":"apps","version":"v1","groupPriorityMinimum":1,"versionPriority":1}}'
  expect_fail "a condition status other than True, False, Unknown on /status" \
    'status.conditions\[0\].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown"' \
    "${K[@]}" patch apiservice v1.apps --subresource=status --type=merge \
    -p '{"status":{"conditions":[{"type":"Available","status":"Maybe"}]}}'
  expect_eq "an update through /status keeps the spec; the main resource keeps the status" \
    "17800 True" bash -c "kubectl --kubeconfig $KCFG patch apiservice v1.apps --subresource=status --type=merge -p '{\"spec\":{\"groupPriorityMinimum\":5}}' >/dev/null && kubectl --kubeconfig $KCFG patch apiservice v1.apps --type=merge -p '{\"status\":{\"conditions\":[]}}' >/dev/null && kubectl --kubeconfig $KCFG get apiservice v1.apps -o jsonpath='{.spec.groupPriorityMinimum} {.status.conditions[0].status}'"

  "${K[@]}" patch apiservice v1.batch --subresource=status --type=merge \
    -p '{"status":{"conditions":[{"type":"Available","status":"False","reason":"Nope","message":"no"}]}}' >/dev/null
  expect_until "a local APIService's Available is put back to Local (kube's available controller)" \
    "True Local Local APIServices are always available" \
    "${K[@]}" get apiservice v1.batch -o 'jsonpath={.status.conditions[0].status} {.status.conditions[0].reason} {.status.conditions[0].message}'

  echo "-- the front proxy's identity"
  expect_eq "kube-system/extension-apiserver-authentication has kube's keys" \
    "client-ca-file requestheader-allowed-names requestheader-client-ca-file requestheader-extra-headers-prefix requestheader-group-headers requestheader-username-headers" \
    bash -c "kubectl --kubeconfig $KCFG -n kube-system get cm extension-apiserver-authentication -o json | python3 -c 'import json,sys; print(*sorted(json.load(sys.stdin)[\"data\"]))'"
  expect_eq "... header names and the proxy's name as JSON lists" \
    '["X-Remote-User"] ["X-Remote-Group"] ["X-Remote-Extra-"] ["front-proxy-client"]' \
    "${K[@]}" -n kube-system get cm extension-apiserver-authentication \
    -o go-template='{{index .data "requestheader-username-headers"}} {{index .data "requestheader-group-headers"}} {{index .data "requestheader-extra-headers-prefix"}} {{index .data "requestheader-allowed-names"}}'
  expect_eq "... the request-header CA is the one in DIR/front-proxy" "$(cat "$DATA_DIR/front-proxy/ca.crt")" \
    "${K[@]}" -n kube-system get cm extension-apiserver-authentication -o go-template='{{index .data "requestheader-client-ca-file"}}'
  expect "the Role extension-apiserver-authentication-reader" 'extension-apiserver-authentication-reader' \
    "${K[@]}" -n kube-system get role

  echo "-- a service-backed APIService"
  mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=api" -addext "subjectAltName=DNS:api.wardle.svc" \
    -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
  : >"$d/req.log"
  python3 "$E2E_LIB_DIR/apiservice_server.py" "$d/cert.pem" "$d/key.pem" \
    "$DATA_DIR/front-proxy/ca.crt" "$d/port" "$d/req.log" >>"$d/server.log" 2>&1 &
  local backend=$!
  E2E_PIDS+=("$backend")
  for i in $(seq 100); do [ -s "$d/port" ] && break; sleep 0.05; done
  local port; port=$(cat "$d/port")
  "${K[@]}" create ns wardle >/dev/null
  "${K[@]}" apply -f - >/dev/null <<EOF
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.wardle.example.com}
spec:
  group: wardle.example.com
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  caBundle: $(base64 -w0 "$d/cert.pem")
  service: {namespace: wardle, name: api, port: $port}
EOF
  local cond='{range .status.conditions[?(@.type=="Available")]}{.status} {.reason}: {.message}{end}'
  expect_until "no Service yet: Available=False ServiceNotFound" \
    'False ServiceNotFound: service/api in "wardle" is not present' \
    "${K[@]}" get apiservice v1alpha1.wardle.example.com -o "jsonpath=$cond"
  expect "... AVAILABLE False (ServiceNotFound)" 'wardle/api +False \(ServiceNotFound\)' \
    "${K[@]}" get apiservice v1alpha1.wardle.example.com
  expect_fail "... and a request gets kube's 503" \
    'Error from server \(ServiceUnavailable\): the server is currently unable to handle the request' \
    "${K[@]}" get --raw /apis/wardle.example.com/v1alpha1/flunders
  printf 'apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: wardle}\nspec: {clusterIP: 127.0.0.1, ports: [{name: https, port: %s}]}\n' "$port" |
    "${K[@]}" apply -f - >/dev/null
  expect_until "a Service without Endpoints: EndpointsNotFound" \
    'False EndpointsNotFound: cannot find endpoints for service/api in "wardle"' \
    "${K[@]}" get apiservice v1alpha1.wardle.example.com -o "jsonpath=$cond"
  printf 'apiVersion: v1\nkind: Endpoints\nmetadata: {name: api, namespace: wardle}\nsubsets: [{addresses: [{ip: 127.0.0.1}], ports: [{name: other, port: %s}]}]\n' "$port" |
    "${K[@]}" apply -f - >/dev/null
  expect_until "Endpoints without the port's name: MissingEndpoints" \
    'False MissingEndpoints: endpoints for service/api in "wardle" have no addresses with port name "https"' \
    "${K[@]}" get apiservice v1alpha1.wardle.example.com -o "jsonpath=$cond"
  printf 'apiVersion: v1\nkind: Endpoints\nmetadata: {name: api, namespace: wardle}\nsubsets: [{addresses: [{ip: 127.0.0.1}], ports: [{name: https, port: %s}]}]\n' "$port" |
    "${K[@]}" apply -f - >/dev/null
  expect_until "the backend answers its discovery: Available=True Passed" 'True Passed: all checks passed' \
    "${K[@]}" get apiservice v1alpha1.wardle.example.com -o "jsonpath=$cond"
  expect "get apiservices: SERVICE wardle/api, AVAILABLE True" 'v1alpha1\.wardle\.example\.com +wardle/api +True ' \
    "${K[@]}" get apiservices
  expect_eq "the check came as system:kube-aggregator in system:masters, with the proxy certificate" \
    "system:kube-aggregator ['system:masters'] front-proxy-client" \
    python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][0]; print(r["user"], r["groups"], r["cn"])' "$d/req.log"

  echo "-- discovery"
  expect "api-resources lists the backend's resources" \
    'flunders +fl +wardle\.example\.com/v1alpha1 +true +Flunder' "${K[@]}" api-resources
  expect "... in aggregated discovery v2 (with the subresource)" \
    '"metadata":\{"name":"wardle.example.com"\},"versions":\[\{"version":"v1alpha1","resources":\[\{"resource":"flunders"' \
    kcurl -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' "$SERVER_URL/apis"
  expect "... and v2beta1" \
    '"apiVersion":"apidiscovery.k8s.io/v2beta1".*"metadata":\{"name":"wardle.example.com"\},"versions":\[\{"version":"v1alpha1","resources":\[\{"resource":"flunders"' \
    kcurl -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList' "$SERVER_URL/apis"
  [ -x "$GSDK/kubectl.1.27" ] && expect "kubectl 1.27 (v2beta1) lists them" \
    'flunders +fl +wardle\.example\.com/v1alpha1' "$GSDK/kubectl.1.27" --kubeconfig "$KCFG" api-resources
  expect "... and legacy /apis" '"name":"wardle.example.com","versions":\[\{"groupVersion":"wardle.example.com/v1alpha1"' \
    "${K[@]}" get --raw /apis
  expect "/apis/<group> is served here" '"preferredVersion":\{"groupVersion":"wardle.example.com/v1alpha1".*"kind":"APIGroup"' \
    "${K[@]}" get --raw /apis/wardle.example.com
  expect "/apis/<group>/<version> is the backend's" '"groupVersion": "wardle.example.com/v1alpha1"' \
    "${K[@]}" get --raw /apis/wardle.example.com/v1alpha1
  expect "kubectl 1.30 finds them too" 'flunders +fl +wardle\.example\.com/v1alpha1' "$old" --kubeconfig "$KCFG" api-resources

  echo "-- OpenAPI v3 from the backend"
  expect "the /openapi/v3 root lists the backend's group/version with its hash" \
    '"apis/wardle.example.com/v1alpha1":\{"serverRelativeURL":"/openapi/v3/apis/wardle.example.com/v1alpha1\?hash=0123ABCD"\}' \
    "${K[@]}" get --raw /openapi/v3
  expect "kubectl explain reads the backend's schema" 'A flunder, served by an extension API server' \
    "${K[@]}" explain flunders
  expect "kubectl create -f with default validation goes to the backend" 'flunder.wardle.example.com/made created' \
    "${K[@]}" create -f - <<'EOF'
apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata: {name: made, namespace: default}
spec: {reference: r}
EOF
  expect_eq "... a POST with fieldValidation=Strict" "POST fieldManager=kubectl-create&fieldValidation=Strict" \
    python3 -c 'import json,sys; r=[x for x in map(json.loads, open(sys.argv[1])) if x["method"] == "POST"][-1]; print(r["method"], r["query"])' "$d/req.log"

  echo "-- OpenAPI v2 merged"
  # kube-aggregator's v2 aggregation: one document, the backend's paths of
  # its group/version and its definitions added to the tenant's own
  expect_until "/openapi/v2 has the backend's flunders path and definition" "list flunders|A flunder, in Swagger 2.0|not the backend's: absent|the tenant's own paths stay" \
    bash -c "kubectl --kubeconfig $KCFG get --raw /openapi/v2 | python3 -c '
import json, sys
d = json.load(sys.stdin)
p = d[\"paths\"].get(\"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders\", {})
print(p.get(\"get\", {}).get(\"description\"), d[\"definitions\"].get(\"example.wardle.v1alpha1.Flunder\", {}).get(\"description\"),
      \"not the backend\x27s: absent\" if d[\"paths\"][\"/api/v1/namespaces\"][\"get\"].get(\"description\") != \"not the backend\x27s to serve\" else \"taken\",
      \"the tenant\x27s own paths stay\" if \"/apis/apps/v1/namespaces/{namespace}/deployments\" in d[\"paths\"] else \"lost\", sep=\"|\")'"
  expect_eq "... the backend's ListMeta, unlike the tenant's, renamed _v2 with its reference; the tenant's kept" \
    "The backend's own ListMeta|#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta_v2|True" \
    bash -c "kubectl --kubeconfig $KCFG get --raw /openapi/v2 | python3 -c '
import json, sys
d = json.load(sys.stdin)
p = d[\"paths\"][\"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders\"][\"get\"]
print(d[\"definitions\"][\"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta_v2\"][\"description\"], p[\"responses\"][\"401\"][\"schema\"][\"\$ref\"],
      \"properties\" in d[\"definitions\"][\"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta\"], sep=\"|\")'"
  expect "... in protobuf too" 'wardle.example.com/v1alpha1/namespaces/\{namespace\}/flunders' \
    bash -c "kcurl_pb() { curl -sS --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key -H 'Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf' $SERVER_URL/openapi/v2; }; kcurl_pb | tr -c '[:print:]' '\n' | grep -a flunders"

  echo "-- proxying"
  expect "kubectl get flunders goes through the tenant to the backend" 'flounder-a' "${K[@]}" get flunders
  expect_eq "... one by its short name" "Flunder flounder-a" "${K[@]}" get fl flounder-a -o 'jsonpath={.kind} {.metadata.name}'
  expect_eq "the backend saw X-Remote-User=kubicle-admin, its groups, the proxy's certificate, no credentials" \
    "kubicle-admin ['system:masters', 'system:authenticated'] front-proxy-client None" \
    python3 -c 'import json,sys; r=[x for x in map(json.loads, open(sys.argv[1])) if x["user"] != "system:kube-aggregator"][-1]; print(r["user"], r["groups"], r["cn"], r["authorization"])' "$d/req.log"
  expect_fail "a backend's NotFound comes back as it is" \
    'Error from server \(NotFound\): flunders.wardle.example.com "nope" not found' "${K[@]}" get fl nope
  expect "a watch streams (events before the backend ends it)" '"type": "ADDED".*flounder-a' \
    bash -c "timeout 3 curl -sSN --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key '$SERVER_URL/apis/wardle.example.com/v1alpha1/namespaces/default/flunders?watch=true'; true"
  # the backend's requests but the availability checks
  apisvc_proxied() { grep -vc '"user": "system:kube-aggregator"' "$d/req.log"; }
  expect_eq "a large answer to a slow client arrives whole (the backend paused meanwhile)" \
    "$(( (24 << 20) + 130 ))" \
    bash -c "curl -sS --limit-rate 6M --cacert $DATA_DIR/ca.crt --cert $DATA_DIR/admin.crt --key $DATA_DIR/admin.key '$SERVER_URL/apis/wardle.example.com/v1alpha1/namespaces/default/flunders?pad=24' | wc -c"
  local before; before=$(apisvc_proxied)
  expect_fail "a user without RBAC is refused by the tenant" \
    'Error from server \(Forbidden\): flunders.wardle.example.com is forbidden: User "alice" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "default"' \
    "${K[@]}" get fl --as alice
  expect_eq "... without reaching the backend" "$before" apisvc_proxied
  "${K[@]}" create clusterrole flunder-reader --verb=get,list --resource=flunders.wardle.example.com >/dev/null
  "${K[@]}" create clusterrolebinding alice-flunders --clusterrole=flunder-reader --user=alice >/dev/null
  expect "with a ClusterRole for flunders she reads them" 'flounder-b' "${K[@]}" get fl --as alice --as-group devs
  expect_eq "... as alice in her groups" "alice ['devs', 'system:authenticated']" \
    python3 -c 'import json,sys; r=[x for x in map(json.loads, open(sys.argv[1])) if x["user"] != "system:kube-aggregator"][-1]; print(r["user"], r["groups"])' "$d/req.log"

  echo "-- upgraded connections (exec-like)"
  # kube-aggregator's proxy (handler_proxy.go, the upgrade-aware handler):
  # the 101 and the bytes both ways, with the front-proxy identity
  apisvc_upgrade() { # NAME [USER]: the answer's status line, X-Echo, and what came back
    python3 - "$SERVER_URL" "$DATA_DIR" "$1" "${2:-}" <<'PY'
import socket, ssl, sys
from urllib.parse import urlparse
u, d, name, who = urlparse(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
ctx.load_cert_chain(d + "/admin.crt", d + "/admin.key")
s = ctx.wrap_socket(socket.create_connection((u.hostname, u.port)), server_hostname=u.hostname)
s.sendall(("POST /apis/wardle.example.com/v1alpha1/namespaces/default/flunders/%s/exec HTTP/1.1\r\n"
           "Host: %s\r\nConnection: Upgrade\r\nUpgrade: kubicle-echo\r\n%sContent-Length: 0\r\n\r\n"
           % (name, u.netloc, "Impersonate-User: %s\r\n" % who if who else "")).encode())
head = b""
while b"\r\n\r\n" not in head:
    b = s.recv(4096)
    if not b:
        break
    head += b
head, _, rest = head.partition(b"\r\n\r\n")
lines = head.decode().split("\r\n")
echo = [l.split(":", 1)[1].strip() for l in lines if l.lower().startswith("x-echo:")]
out = [lines[0], echo[0] if echo else "-"]
if " 101 " in lines[0]:
    s.sendall(b"ping " * 20000)
    got = rest
    while len(got) < 100000:
        b = s.recv(65536)
        if not b:
            break
        got += b
    out.append("%d %s" % (len(got), got == b"ping " * 20000))
else:
    out.append(rest.decode(errors="replace").strip())
print(" | ".join(out))
PY
  }
  expect_eq "an upgrade request is passed through: 101, the backend's headers, 100000 bytes echoed" \
    "HTTP/1.1 101 Switching Protocols | yes | 100000 True" apisvc_upgrade flounder-a
  expect_eq "... the backend saw it as POST .../exec from kubicle-admin, with the proxy's certificate" \
    "POST /apis/wardle.example.com/v1alpha1/namespaces/default/flunders/flounder-a/exec kubicle-admin front-proxy-client" \
    python3 -c 'import json,sys; r=[x for x in map(json.loads, open(sys.argv[1])) if x["path"].endswith("/exec")][-1]; print(r["method"], r["path"], r["user"], r["cn"])' "$d/req.log"
  expect "a backend's refusal comes back as it is" \
    '^HTTP/1.1 403 Forbidden \| - \| .*"message": "no exec here"' apisvc_upgrade refuse
  local n_exec; n_exec=$(grep -c '/exec"' "$d/req.log")
  expect "a user without RBAC is refused by the tenant" \
    '^HTTP/1.1 403 Forbidden \| - \| .*flunders.wardle.example.com \\"flounder-a\\" is forbidden: User \\"alice\\" cannot create resource \\"flunders/exec\\" in API group \\"wardle.example.com\\" in the namespace \\"default\\"' \
    apisvc_upgrade flounder-a alice
  expect_eq "... without reaching the backend" "$n_exec" grep -c '/exec"' "$d/req.log"

  echo "-- the backend goes away"
  kill "$backend" 2>/dev/null; wait "$backend" 2>/dev/null
  expect_fail "a request gets 503 ServiceUnavailable" \
    'Error from server \(ServiceUnavailable\): the server is currently unable to handle the request' \
    "${K[@]}" get fl
  expect_until "Available=False FailedDiscoveryCheck" \
    "False FailedDiscoveryCheck: failing or missing response from https://127.0.0.1:$port/apis/wardle.example.com/v1alpha1: Get \"https://127.0.0.1:$port/apis/wardle.example.com/v1alpha1\": dial tcp 127.0.0.1:$port: connect: connection refused" \
    "${K[@]}" get apiservice v1alpha1.wardle.example.com -o "jsonpath=$cond"
  expect "... AVAILABLE False (FailedDiscoveryCheck)" 'wardle/api +False \(FailedDiscoveryCheck\)' \
    "${K[@]}" get apiservices
  expect_eq "its resources leave kubectl's discovery" "" \
    bash -c "kubectl --kubeconfig $KCFG api-resources 2>/dev/null | grep flunders"
  # kube-aggregator handler_discovery.go syncAPIService: the version stays,
  # Stale, with the resources it last fetched
  expect "aggregated discovery v2 keeps the group/version, freshness Stale" \
    '"metadata":\{"name":"wardle.example.com"\},"versions":\[\{"version":"v1alpha1","resources":\[\{"resource":"flunders".*"freshness":"Stale"\}' \
    kcurl -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' "$SERVER_URL/apis"
  expect "... and v2beta1" '"name":"wardle.example.com"\},"versions":\[\{"version":"v1alpha1",.*"freshness":"Stale"\}' \
    kcurl -H 'Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList' "$SERVER_URL/apis"
  # client-go aggregated_discovery.go convertAPIGroup leaves a Stale
  # version out of the group and reports it as failed ("stale GroupVersion
  # discovery": client-go's memory-cached discovery, which Helm and
  # controllers use, returns it as ErrGroupDiscoveryFailed); kubectl's
  # disk-cached client lists the rest without a word, against kube too
  expect_eq "kubectl api-resources lists the others and says nothing of it (as against kube)" "1 0" \
    bash -c "echo \$(kubectl --kubeconfig $KCFG api-resources 2>$d/ar.err | grep -c ' APIService\$') \$(grep -c . $d/ar.err)"
  [ -x "$GSDK/kubectl.1.27" ] && expect_eq "... kubectl 1.27 (v2beta1) too" "1 0" \
    bash -c "echo \$($GSDK/kubectl.1.27 --kubeconfig $KCFG api-resources 2>$d/ar.err | grep -c ' APIService\$') \$(grep -c . $d/ar.err)"
  expect "legacy /apis still lists the group (kube-aggregator's apisHandler lists every APIService)" \
    '"name":"wardle.example.com","versions":\[\{"groupVersion":"wardle.example.com/v1alpha1"' \
    "${K[@]}" get --raw /apis
  expect_fail "... and /apis/<group>/<version> answers 503 service unavailable" \
    'ServiceUnavailable|service unavailable|unable to handle the request' "${K[@]}" get --raw /apis/wardle.example.com/v1alpha1
  expect "kubectl delete apiservice" 'deleted' "${K[@]}" delete apiservice v1alpha1.wardle.example.com
  expect_eq "... the group leaves /apis" "0" bash -c "kubectl --kubeconfig $KCFG get --raw /apis | grep -c wardle"
  expect_fail "... and kubectl no longer knows flunders" "the server doesn't have a resource type \"fl\"" \
    "${K[@]}" get fl
}
